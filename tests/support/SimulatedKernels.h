//===- SimulatedKernels.h - A library's CUDA kernels run on the CPU -*- C++ -*-===//
//
// The kernels of a model library's CUDA source (lruc_cuda_source())
// compiled as C++ with LRUC_GPU_SIMULATE into a shared library (the
// prelude, runtime/cuda/device/lruc_device.cuh, maps __global__,
// threadIdx, __shared__ and atomics to host code; the emitter adds
// lruc_sim_run, lruc_sim_synchronises and lruc_sim_kernel_names), and a
// launch that runs them: a kernel whose threads do not synchronise a thread
// at a time; one whose threads do (block sums, the tiled scan) each block's
// threads as coroutines (Boost.Context fibers, SimulatedKernels.cpp) that
// switch at every barrier
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

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace lruc::testing {

class SimulatedKernels {
public:
  SimulatedKernels();
  SimulatedKernels(const SimulatedKernels &) = delete;
  SimulatedKernels &operator=(const SimulatedKernels &) = delete;
  ~SimulatedKernels();

  /// Loads the kernels compiled into the shared library `path`.
  bool open(const std::string &path, std::string &error);

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
              std::string &error);

private:
  using RunFn = void (*)(int32_t, void **);
  struct Dims { // the prelude's lruc_sim_dims
    unsigned thread, block, blockDim, gridDim;
  };
  struct Block; // the threads of a block run as coroutines

  bool runBlock(int32_t kernel, int32_t count, void **args,
                std::string &error);
  static void wait(int warp);

  void *handle_ = nullptr;
  RunFn run_ = nullptr;
  const int8_t *synchronises_ = nullptr;
  const char *const *names_ = nullptr;
  int32_t count_ = 0;
  Dims *now_ = nullptr;
  int64_t cooperativeBlocks_ = 0;
  std::unique_ptr<Block> block_;
};

} // namespace lruc::testing

#endif // LRUC_TESTS_SIMULATEDKERNELS_H
