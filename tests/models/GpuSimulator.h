//===- GpuSimulator.h - lruc_gpu_ops on the CPU, for tests -------*- C++ -*-===//
//
// Runs a model library's GPU schedule (lruc_gpu.h) without a GPU: the
// library's CUDA source compiled as C++ and run by SimulatedKernels
// (tests/support: a block's threads as coroutines where they synchronise);
// GEMMs as a plain triple loop in double; device memory is host memory.
// What it checks: what every kernel computes, how a block's threads
// cooperate, what the schedule launches, on which arrays, in which order.
// What it cannot: races between blocks, timing, device memory limits, and
// the CUDA runtime (lruc::cuda::Device: the simulated driver of tests/cuda
// runs that).
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_TESTS_GPUSIMULATOR_H
#define LRUC_TESTS_GPUSIMULATOR_H

#include "GemmBatch.h"
#include "SimulatedKernels.h"
#include "lruc/Codegen.h"
#include "lruc_gpu.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace lruc::testing {

/// Compiles a library's CUDA source (lruc_cuda_source()) as C++ for
/// SimulatedKernels into the shared library `path`.
inline bool compileSimulatedKernels(const std::string &cudaSource,
                                    const std::string &path,
                                    std::string &error) {
  HostCompiler compiler;
  if (!defaultHostCompiler(CpuTarget::Native, compiler, error))
    return false;
  // -O0: the kernels run on a few elements; compiling is what costs.
  // A misaligned access stops the run: a device would fault on one (a
  // complex value is one 8-byte access there).
  compiler.flags += " -O0 -DLRUC_GPU_SIMULATE -fsanitize=alignment "
                    "-fno-sanitize-recover=alignment";
  return compileLibrary(LibrarySource::single(cudaSource), path, compiler,
                        error);
}

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

  /// Compiles `cudaSource` into the shared library `path` and loads it.
  bool load(const std::string &cudaSource, const std::string &path,
            std::string &error) {
    return compileSimulatedKernels(cudaSource, path, error) &&
           kernels_.open(path, error);
  }

  const lruc_gpu_ops *ops() const { return &ops_; }
  int64_t launches() const { return launches_; }
  int64_t gemms() const { return gemms_; }
  /// Blocks run as coroutines so far.
  int64_t cooperativeBlocks() const { return kernels_.cooperativeBlocks(); }

private:
  static int launch(void *context, int32_t kernel, int64_t blocks,
                    int32_t threads, int32_t blockPerOutput, void **args) {
    (void)blockPerOutput; // the grid is what the schedule asked for
    auto *self = static_cast<GpuSimulator *>(context);
    ++self->launches_;
    std::string error;
    if (self->kernels_.launch(kernel, blocks, threads, args, error))
      return 0;
    std::fprintf(stderr, "GPU simulator: %s\n", error.c_str());
    return 1;
  }

  static int gemm(void *context, int32_t transA, int32_t transB, int64_t m,
                  int64_t n, int64_t k, int32_t abType, const void *a,
                  int64_t lda, int64_t strideA, const void *b, int64_t ldb,
                  int64_t strideB, int32_t cType, void *c, int64_t ldc,
                  int64_t strideC, int64_t count) {
    ++static_cast<GpuSimulator *>(context)->gemms_;
    const bool bf16 = abType == LRUC_GPU_BF16;
    if ((!bf16 && abType != LRUC_GPU_F32) ||
        (cType != LRUC_GPU_F32 && (!bf16 || cType != LRUC_GPU_BF16))) {
      std::fprintf(stderr, "GPU simulator: GEMM of types %d, %d\n", abType,
                   cType);
      return 1;
    }
    GemmArray A{const_cast<void *>(a), bf16}, B{const_cast<void *>(b), bf16},
        C{c, cType == LRUC_GPU_BF16};
    std::string overlap;
    if (count > 1 && m > 0 && n > 0 && k > 0 &&
        batchOverlaps(
            a,
            (transA ? (k - 1) * lda + m : (m - 1) * lda + k) * A.elementBytes(),
            strideA * A.elementBytes(), b,
            (transB ? (n - 1) * ldb + k : (k - 1) * ldb + n) * B.elementBytes(),
            strideB * B.elementBytes(), c,
            ((m - 1) * ldc + n) * C.elementBytes(), strideC * C.elementBytes(),
            count, overlap)) {
      std::fprintf(stderr, "GPU simulator: GEMM: %s\n", overlap.c_str());
      return 1;
    }
    for (int64_t product = 0; product < count; ++product, A = A.plus(strideA),
                 B = B.plus(strideB), C = C.plus(strideC))
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < k; ++p)
            sum += A.at(transA ? p * lda + i : i * lda + p) *
                   B.at(transB ? j * ldb + p : p * ldb + j);
          C.store(i * ldc + j, sum);
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

  lruc_gpu_ops ops_{}; // defer_status null: each call reads its status
  SimulatedKernels kernels_;
  int64_t launches_ = 0, gemms_ = 0;
};

} // namespace lruc::testing

#endif // LRUC_TESTS_GPUSIMULATOR_H
