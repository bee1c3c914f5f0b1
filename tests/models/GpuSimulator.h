//===- GpuSimulator.h - lruc_gpu_ops on the CPU, for tests -------*- C++ -*-===//
//
// Runs a model library's GPU schedule (lruc_gpu.h) without a GPU: the
// library's CUDA source (lruc_cuda_source()) compiled as C++ with
// LRUC_GPU_SIMULATE; GEMMs as a plain triple loop in double; device memory
// is host memory. A kernel whose threads do not synchronise runs a thread
// at a time; one whose threads do (block sums, the chunked scan) runs each
// block's threads as coroutines (ucontext) that switch at every barrier
// (__syncthreads, a warp's shuffle), so what the threads of a block
// exchange is checked, and a barrier that not every thread reaches is an
// error rather than a hang. What it checks: what every kernel computes,
// how a block's threads cooperate, what the schedule launches, on which
// arrays, in which order. What it cannot: races between blocks (atomics
// are plain updates), timing, device memory limits.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_TESTS_GPUSIMULATOR_H
#define LRUC_TESTS_GPUSIMULATOR_H

#include "lruc/Codegen.h"
#include "lruc_gpu.h"

#include <dlfcn.h>
#include <ucontext.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace lruc::testing {

class GpuSimulator {
public:
  GpuSimulator() {
    ops_.context = this;
    ops_.launch = &GpuSimulator::launch;
    ops_.gemm = &GpuSimulator::gemm;
    ops_.copy = &GpuSimulator::copy;
  }
  GpuSimulator(const GpuSimulator &) = delete;
  GpuSimulator &operator=(const GpuSimulator &) = delete;
  ~GpuSimulator() {
    if (handle_)
      dlclose(handle_);
  }

  /// Compiles `cudaSource` into the shared library `path` and loads it.
  bool load(const std::string &cudaSource, const std::string &path,
            std::string &error) {
    HostCompiler compiler = defaultHostCompiler();
    // -O0: the kernels run on a few elements; compiling is what costs.
    compiler.flags += " -O0 -DLRUC_GPU_SIMULATE";
    if (!compileLibrary(cudaSource, path, compiler, error))
      return false;
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      error = dlerror();
      return false;
    }
    run_ = reinterpret_cast<RunFn>(dlsym(handle_, "lruc_sim_run"));
    synchronises_ = static_cast<const int8_t *>(
        dlsym(handle_, "lruc_sim_synchronises"));
    now_ = static_cast<Dims *>(dlsym(handle_, "lruc_sim_now"));
    auto *wait = reinterpret_cast<void (**)(int)>(
        dlsym(handle_, "lruc_sim_wait"));
    if (!run_ || !synchronises_ || !now_ || !wait) {
      error = "no lruc_sim_run, lruc_sim_synchronises, lruc_sim_now or "
              "lruc_sim_wait in " + path;
      return false;
    }
    *wait = &GpuSimulator::wait;
    return true;
  }

  const lruc_gpu_ops *ops() const { return &ops_; }
  int64_t launches() const { return launches_; }
  int64_t gemms() const { return gemms_; }
  /// Blocks run as coroutines so far.
  int64_t cooperativeBlocks() const { return cooperativeBlocks_; }

private:
  using RunFn = void (*)(int32_t, void **);
  struct Dims { // the prelude's lruc_sim_dims
    unsigned thread, block, blockDim, gridDim;
  };
  enum class Waiting { No, Block, Warp, Done };
  struct Thread {
    ucontext_t context;
    Waiting waiting = Waiting::No;
  };
  // Kernel frames at -O0 (and under the sanitizers) hold every temporary.
  static constexpr size_t kStackBytes = 256 * 1024;

  /// The simulator whose cooperative block is running (one at a time).
  static GpuSimulator *&active() {
    static GpuSimulator *simulator = nullptr;
    return simulator;
  }

  static int launch(void *context, int32_t kernel, int64_t blocks,
                    int32_t threads, int32_t blockPerOutput, void **args) {
    (void)blockPerOutput; // the grid is what the schedule asked for
    auto *self = static_cast<GpuSimulator *>(context);
    if (blocks <= 0 || threads <= 0 || threads % 32 != 0 || threads > 1024)
      return 1; // what cuLaunchKernel would refuse, or a warp cut short
    ++self->launches_;
    Dims &now = *self->now_;
    now.gridDim = unsigned(blocks);
    now.blockDim = unsigned(threads);
    for (int64_t b = 0; b < blocks; ++b) {
      now.block = unsigned(b);
      if (self->synchronises_[kernel]) {
        if (!self->runBlock(kernel, threads, args))
          return 1;
        continue;
      }
      for (int32_t t = 0; t < threads; ++t) {
        now.thread = unsigned(t);
        self->run_(kernel, args);
      }
    }
    return 0;
  }

  /// Runs block `now.block` of `kernel` as `count` coroutines, resumed in
  /// turn; a barrier opens when every thread of its block (or warp) waits
  /// there. False, with the reason on stderr, when the threads cannot all
  /// finish (a barrier some thread never reaches).
  bool runBlock(int32_t kernel, int32_t count, void **args) {
    ++cooperativeBlocks_;
    if (threads_.size() < size_t(count)) {
      threads_.resize(size_t(count));
      stacks_.resize(size_t(count));
      for (auto &stack : stacks_)
        if (!stack)
          stack.reset(new char[kStackBytes]);
    }
    kernel_ = kernel;
    args_ = args;
    for (int32_t t = 0; t < count; ++t) {
      Thread &thread = threads_[size_t(t)];
      thread.waiting = Waiting::No;
      getcontext(&thread.context);
      thread.context.uc_stack.ss_sp = stacks_[size_t(t)].get();
      thread.context.uc_stack.ss_size = kStackBytes;
      thread.context.uc_link = &scheduler_;
      makecontext(&thread.context, &GpuSimulator::threadMain, 0);
    }
    active() = this;
    for (;;) {
      bool ran = false;
      for (int32_t t = 0; t < count; ++t) {
        if (threads_[size_t(t)].waiting != Waiting::No)
          continue;
        current_ = t;
        now_->thread = unsigned(t);
        swapcontext(&scheduler_, &threads_[size_t(t)].context);
        ran = true;
      }
      if (ran)
        continue;
      // Everyone waits or is done: open the barriers that are complete.
      int32_t done = 0, atBlock = 0;
      for (int32_t t = 0; t < count; ++t) {
        done += threads_[size_t(t)].waiting == Waiting::Done;
        atBlock += threads_[size_t(t)].waiting == Waiting::Block;
      }
      if (done == count)
        break;
      bool opened = false;
      if (atBlock == count) {
        for (int32_t t = 0; t < count; ++t)
          threads_[size_t(t)].waiting = Waiting::No;
        opened = true;
      }
      for (int32_t w = 0; w < count / 32; ++w) {
        bool whole = true;
        for (int32_t l = 0; l < 32; ++l)
          whole &= threads_[size_t(w * 32 + l)].waiting == Waiting::Warp;
        if (!whole)
          continue;
        for (int32_t l = 0; l < 32; ++l)
          threads_[size_t(w * 32 + l)].waiting = Waiting::No;
        opened = true;
      }
      if (!opened) {
        std::fprintf(stderr,
                     "GPU simulator: block %u of kernel %d cannot go on: "
                     "%d of %d threads finished, %d wait at __syncthreads, "
                     "the rest at a warp shuffle\n",
                     now_->block, kernel, done, count, atBlock);
        active() = nullptr;
        return false;
      }
    }
    active() = nullptr;
    return true;
  }

  static void threadMain() {
    GpuSimulator *self = active();
    self->run_(self->kernel_, self->args_);
    self->threads_[size_t(self->current_)].waiting = Waiting::Done;
  } // uc_link: back to the scheduler

  /// The prelude's lruc_sim_wait: the running thread waits at its block's
  /// barrier (-1) or its warp's, and the scheduler runs the others.
  static void wait(int warp) {
    GpuSimulator *self = active();
    if (!self) {
      std::fprintf(stderr, "GPU simulator: a kernel not marked as "
                           "synchronising (lruc_sim_synchronises) waited at "
                           "a barrier\n");
      std::abort();
    }
    Thread &thread = self->threads_[size_t(self->current_)];
    thread.waiting = warp < 0 ? Waiting::Block : Waiting::Warp;
    swapcontext(&thread.context, &self->scheduler_);
  }

  static int gemm(void *context, int32_t transA, int32_t transB, int64_t m,
                  int64_t n, int64_t k, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float *c, int64_t ldc) {
    ++static_cast<GpuSimulator *>(context)->gemms_;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += double(transA ? a[p * lda + i] : a[i * lda + p]) *
                 double(transB ? b[j * ldb + p] : b[p * ldb + j]);
        c[i * ldc + j] = float(sum);
      }
    return 0;
  }

  static int copy(void *, void *dst, const void *src, size_t bytes,
                  int32_t kind) {
    if (kind < LRUC_COPY_DEVICE_TO_DEVICE || kind > LRUC_COPY_DEVICE_TO_HOST)
      return 1;
    if (bytes > 0) // memmove's pointers must be valid even for 0 bytes
      std::memmove(dst, src, bytes);
    return 0;
  }

  lruc_gpu_ops ops_;
  void *handle_ = nullptr;
  RunFn run_ = nullptr;
  const int8_t *synchronises_ = nullptr;
  Dims *now_ = nullptr;
  int64_t launches_ = 0, gemms_ = 0, cooperativeBlocks_ = 0;
  // The block being run as coroutines.
  ucontext_t scheduler_;
  std::vector<Thread> threads_;
  std::vector<std::unique_ptr<char[]>> stacks_;
  int32_t kernel_ = 0, current_ = 0;
  void **args_ = nullptr;
};

} // namespace lruc::testing

#endif // LRUC_TESTS_GPUSIMULATOR_H
