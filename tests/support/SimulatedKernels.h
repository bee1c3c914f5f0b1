//===- SimulatedKernels.h - A library's CUDA kernels run on the CPU -*- C++ -*-===//
//
// The kernels of a model library's CUDA source (lruc_cuda_source())
// compiled as C++ with LRUC_GPU_SIMULATE into a shared library (the
// prelude, runtime/cuda/device/lruc_device.cuh, maps __global__,
// threadIdx, __shared__ and atomics to host code; the emitter adds
// lruc_sim_run, lruc_sim_synchronises and lruc_sim_kernel_names), and a
// launch that runs them: a kernel whose threads do not synchronise a thread
// at a time; one whose threads do (block sums, the tiled scan) each block's
// threads as coroutines (ucontext) that switch at every barrier
// (__syncthreads, a warp's shuffle), so what the threads of a block exchange
// is checked, and a barrier that not every thread reaches is an error
// rather than a hang. Used by the GPU simulator (tests/models) and the
// simulated CUDA driver (tests/cuda). What it cannot check: races between
// blocks (atomics are plain updates: threads switch only at barriers).
// Blocks run one after another, first to last, or last to first with
// LRUC_SIMULATED_BLOCK_ORDER=reverse.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_TESTS_SIMULATEDKERNELS_H
#define LRUC_TESTS_SIMULATEDKERNELS_H

#include <dlfcn.h>
#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace lruc::testing {

class SimulatedKernels {
public:
  SimulatedKernels() = default;
  SimulatedKernels(const SimulatedKernels &) = delete;
  SimulatedKernels &operator=(const SimulatedKernels &) = delete;
  ~SimulatedKernels() {
    if (handle_)
      dlclose(handle_);
  }

  /// Loads the kernels compiled into the shared library `path`.
  bool open(const std::string &path, std::string &error) {
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      error = dlerror();
      return false;
    }
    run_ = reinterpret_cast<RunFn>(dlsym(handle_, "lruc_sim_run"));
    synchronises_ = static_cast<const int8_t *>(
        dlsym(handle_, "lruc_sim_synchronises"));
    names_ = static_cast<const char *const *>(
        dlsym(handle_, "lruc_sim_kernel_names"));
    auto *count = static_cast<const int32_t *>(
        dlsym(handle_, "lruc_sim_kernel_count"));
    now_ = static_cast<Dims *>(dlsym(handle_, "lruc_sim_now"));
    auto *wait = reinterpret_cast<void (**)(int)>(
        dlsym(handle_, "lruc_sim_wait"));
    if (!run_ || !synchronises_ || !names_ || !count || !now_ || !wait) {
      error = path + " lacks lruc_sim_run, lruc_sim_synchronises, "
                     "lruc_sim_kernel_names, lruc_sim_kernel_count, "
                     "lruc_sim_now or lruc_sim_wait: not a library's CUDA "
                     "source compiled with LRUC_GPU_SIMULATE";
      return false;
    }
    count_ = *count;
    *wait = &SimulatedKernels::wait;
    return true;
  }

  int32_t count() const { return count_; }
  /// The index of the kernel called `name`, or -1.
  int32_t find(const char *name) const {
    for (int32_t k = 0; k < count_; ++k)
      if (std::strcmp(names_[k], name) == 0)
        return k;
    return -1;
  }
  /// Blocks run as coroutines so far.
  int64_t cooperativeBlocks() const { return cooperativeBlocks_; }

  /// Runs kernel `kernel` on `blocks` blocks of `threads` threads with
  /// cuLaunchKernel's `args`. False with the reason in `error` for a launch
  /// that a device refuses or whose threads cannot all finish.
  bool launch(int32_t kernel, int64_t blocks, int32_t threads, void **args,
              std::string &error) {
    if (kernel < 0 || kernel >= count_) {
      error = "no kernel " + std::to_string(kernel);
      return false;
    }
    if (blocks <= 0 || threads <= 0 || threads % 32 != 0 || threads > 1024) {
      // What cuLaunchKernel refuses, or a warp cut short.
      error = "a launch of " + std::to_string(blocks) + " blocks of " +
              std::to_string(threads) + " threads";
      return false;
    }
    Dims &now = *now_;
    now.gridDim = unsigned(blocks);
    now.blockDim = unsigned(threads);
    // A device runs blocks in any order: LRUC_SIMULATED_BLOCK_ORDER=reverse
    // runs them last first, which a kernel that counts on the order fails.
    const char *order = std::getenv("LRUC_SIMULATED_BLOCK_ORDER");
    const bool reverse = order && std::strcmp(order, "reverse") == 0;
    for (int64_t n = 0; n < blocks; ++n) {
      const int64_t b = reverse ? blocks - 1 - n : n;
      now.block = unsigned(b);
      if (synchronises_[kernel]) {
        if (!runBlock(kernel, threads, args, error))
          return false;
        continue;
      }
      for (int32_t t = 0; t < threads; ++t) {
        now.thread = unsigned(t);
        run_(kernel, args);
      }
    }
    return true;
  }

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

  /// The kernels whose cooperative block is running (one at a time).
  static SimulatedKernels *&active() {
    static SimulatedKernels *kernels = nullptr;
    return kernels;
  }

  /// Runs block `now.block` of `kernel` as `count` coroutines, resumed in
  /// turn; a barrier opens when every thread of its block (or warp) waits
  /// there. False, with the reason, when the threads cannot all finish (a
  /// barrier some thread never reaches).
  bool runBlock(int32_t kernel, int32_t count, void **args,
                std::string &error) {
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
      makecontext(&thread.context, &SimulatedKernels::threadMain, 0);
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
        error = "block " + std::to_string(now_->block) + " of kernel " +
                names_[kernel] + " cannot go on: " + std::to_string(done) +
                " of " + std::to_string(count) + " threads finished, " +
                std::to_string(atBlock) +
                " wait at __syncthreads, the rest at a warp shuffle";
        active() = nullptr;
        return false;
      }
    }
    active() = nullptr;
    return true;
  }

  static void threadMain() {
    SimulatedKernels *self = active();
    self->run_(self->kernel_, self->args_);
    self->threads_[size_t(self->current_)].waiting = Waiting::Done;
  } // uc_link: back to the scheduler

  /// The prelude's lruc_sim_wait: the running thread waits at its block's
  /// barrier (-1) or its warp's, and the scheduler runs the others.
  static void wait(int warp) {
    SimulatedKernels *self = active();
    if (!self) {
      std::fprintf(stderr, "simulated kernels: a kernel not marked as "
                           "synchronising (lruc_sim_synchronises) waited at "
                           "a barrier\n");
      std::abort();
    }
    Thread &thread = self->threads_[size_t(self->current_)];
    thread.waiting = warp < 0 ? Waiting::Block : Waiting::Warp;
    swapcontext(&thread.context, &self->scheduler_);
  }

  void *handle_ = nullptr;
  RunFn run_ = nullptr;
  const int8_t *synchronises_ = nullptr;
  const char *const *names_ = nullptr;
  int32_t count_ = 0;
  Dims *now_ = nullptr;
  int64_t cooperativeBlocks_ = 0;
  // The block being run as coroutines.
  ucontext_t scheduler_;
  std::vector<Thread> threads_;
  std::vector<std::unique_ptr<char[]>> stacks_;
  int32_t kernel_ = 0, current_ = 0;
  void **args_ = nullptr;
};

} // namespace lruc::testing

#endif // LRUC_TESTS_SIMULATEDKERNELS_H
