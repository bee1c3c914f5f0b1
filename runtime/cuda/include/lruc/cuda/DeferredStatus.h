//===- DeferredStatus.h - Schedule calls that do not wait -------*- C++ -*-===//
//
// lruc_gpu_ops that forward launches, GEMMs and copies to another
// lruc_gpu_ops (a Device's) and take the status block each call hands over
// (lruc_gpu_ops.defer_status, lruc_gpu.h) instead of letting the call read
// it back, which would wait for the device. The caller copies the block to
// the host when the call's work is done and asks the library's
// status_error what it says.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CUDA_DEFERREDSTATUS_H
#define LRUC_CUDA_DEFERREDSTATUS_H

#include "lruc_gpu.h"

#include <cstddef>

namespace lruc::cuda {

class DeferredStatusOps {
public:
  /// The largest status block taken; a larger one fails the call.
  static constexpr size_t kMaxStatusBytes = 256;

  explicit DeferredStatusOps(const lruc_gpu_ops &inner) : inner_(inner) {
    ops_ = {this, &launch, &gemm, &copy, &defer};
  }
  DeferredStatusOps(const DeferredStatusOps &) = delete; // ops_ points here
  DeferredStatusOps &operator=(const DeferredStatusOps &) = delete;

  const lruc_gpu_ops *ops() const { return &ops_; }
  /// The status block (device memory) of the last call; null before one.
  const void *status() const { return status_; }
  size_t statusBytes() const { return statusBytes_; }

private:
  static const lruc_gpu_ops &inner(void *self) {
    return static_cast<DeferredStatusOps *>(self)->inner_;
  }
  static int launch(void *self, int32_t kernel, int64_t blocks,
                    int32_t threads, int32_t blockPerOutput, void **args) {
    const lruc_gpu_ops &to = inner(self);
    return to.launch(to.context, kernel, blocks, threads, blockPerOutput,
                     args);
  }
  static int gemm(void *self, int32_t transA, int32_t transB, int64_t m,
                  int64_t n, int64_t k, int32_t abType, const void *a,
                  int64_t lda, int64_t strideA, const void *b, int64_t ldb,
                  int64_t strideB, int32_t cType, void *c, int64_t ldc,
                  int64_t strideC, int64_t count) {
    const lruc_gpu_ops &to = inner(self);
    return to.gemm(to.context, transA, transB, m, n, k, abType, a, lda, strideA,
                   b, ldb, strideB, cType, c, ldc, strideC, count);
  }
  static int copy(void *self, void *dst, const void *src, size_t bytes,
                  int32_t kind) {
    const lruc_gpu_ops &to = inner(self);
    return to.copy(to.context, dst, src, bytes, kind);
  }
  static int defer(void *self, const void *status, size_t bytes) {
    auto *me = static_cast<DeferredStatusOps *>(self);
    me->status_ = status;
    me->statusBytes_ = bytes;
    return bytes <= kMaxStatusBytes ? 0 : 1;
  }

  const lruc_gpu_ops &inner_;
  lruc_gpu_ops ops_{};
  const void *status_ = nullptr;
  size_t statusBytes_ = 0;
};

} // namespace lruc::cuda

#endif // LRUC_CUDA_DEFERREDSTATUS_H
