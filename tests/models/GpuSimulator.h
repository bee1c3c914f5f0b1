//===- GpuSimulator.h - lruc_gpu_ops on the CPU, for tests -------*- C++ -*-===//
//
// Runs a model library's GPU schedule (lruc_gpu.h) without a GPU: the
// library's CUDA source (lruc_cuda_source()) compiled as C++ with
// LRUC_GPU_SIMULATE and its kernels run one simulated thread at a time, a
// block reduction with one thread a block (the device prelude's blockSum is
// then the identity); GEMMs as a plain triple loop in double; device memory
// is host memory. What it checks: what every kernel computes and what the
// schedule launches, on which arrays, in which order. What it cannot:
// threads that cooperate (block sums, atomics), timing, device memory.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_TESTS_GPUSIMULATOR_H
#define LRUC_TESTS_GPUSIMULATOR_H

#include "lruc/Codegen.h"
#include "lruc_gpu.h"

#include <dlfcn.h>

#include <cstring>
#include <string>

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
    launch_ = reinterpret_cast<LaunchFn>(dlsym(handle_, "lruc_sim_launch"));
    if (!launch_)
      error = "no lruc_sim_launch in " + path;
    return launch_ != nullptr;
  }

  const lruc_gpu_ops *ops() const { return &ops_; }
  int64_t launches() const { return launches_; }
  int64_t gemms() const { return gemms_; }

private:
  using LaunchFn = void (*)(int32_t, int64_t, int32_t, int32_t, void **);

  static int launch(void *context, int32_t kernel, int64_t blocks,
                    int32_t threads, int32_t blockPerOutput, void **args) {
    auto *self = static_cast<GpuSimulator *>(context);
    if (blocks <= 0 || threads <= 0 || threads % 32 != 0)
      return 1; // what cuLaunchKernel would refuse, or a warp cut short
    ++self->launches_;
    self->launch_(kernel, blocks, threads, blockPerOutput, args);
    return 0;
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
  LaunchFn launch_ = nullptr;
  int64_t launches_ = 0, gemms_ = 0;
};

} // namespace lruc::testing

#endif // LRUC_TESTS_GPUSIMULATOR_H
