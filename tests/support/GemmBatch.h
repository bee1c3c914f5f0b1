//===- GemmBatch.h - What the simulators' GEMMs share -----------*- C++ -*-===//
//
// lruc_gpu_ops.gemm's contract (runtime/include/lruc_gpu.h): no product of
// a batch writes what another product reads or writes. A device runs them
// at once, so a schedule that broke it would race there; the simulators run
// them in order and would not notice, so they check it. Their operands are
// fp32 or bfloat16 (`lruc --gpu-storage=bf16`), read and written here as
// cuBLAS and the device prelude's lruc::gpu::bf16 do.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_TESTS_GEMMBATCH_H
#define LRUC_TESTS_GEMMBATCH_H

#include <cstdint>
#include <cstring>
#include <string>

namespace lruc::testing {

/// A bfloat16's value: exact.
inline float fromBf16(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

/// `x` rounded to bfloat16, to nearest even (a NaN stays a NaN).
inline uint16_t toBf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/// A GEMM operand's elements, fp32 or bfloat16.
struct GemmArray {
  void *data;
  bool bf16;

  int64_t elementBytes() const { return bf16 ? 2 : 4; }
  double at(int64_t i) const {
    return bf16 ? fromBf16(static_cast<const uint16_t *>(data)[i])
                : static_cast<const float *>(data)[i];
  }
  void store(int64_t i, double v) const {
    if (bf16)
      static_cast<uint16_t *>(data)[i] = toBf16(float(v));
    else
      static_cast<float *>(data)[i] = float(v);
  }
  /// The array `elements` elements on (negative too).
  GemmArray plus(int64_t elements) const {
    return {static_cast<char *>(data) + elements * elementBytes(), bf16};
  }
};

/// `count` products whose A, B and C span `aBytes`, `bBytes` and `cBytes`
/// bytes from a + i * strideA bytes, and so on: the first product whose C
/// overlaps another's A, B or C, described in `what`; false when none.
inline bool batchOverlaps(const void *a, int64_t aBytes, int64_t strideA,
                          const void *b, int64_t bBytes, int64_t strideB,
                          const void *c, int64_t cBytes, int64_t strideC,
                          int64_t count, std::string &what) {
  auto at = [](const void *p, int64_t bytes) {
    return reinterpret_cast<uintptr_t>(p) + uintptr_t(bytes);
  };
  auto overlap = [&](const void *p, int64_t pBytes, const void *q,
                     int64_t qBytes) {
    return at(p, 0) < at(q, qBytes) && at(q, 0) < at(p, pBytes);
  };
  auto nth = [](const void *p, int64_t i, int64_t stride) {
    return static_cast<const void *>(static_cast<const char *>(p) + i * stride);
  };
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < count; ++j) {
      if (i == j)
        continue;
      const void *ci = nth(c, i, strideC);
      const char *operand =
          overlap(ci, cBytes, nth(a, j, strideA), aBytes)   ? "A"
          : overlap(ci, cBytes, nth(b, j, strideB), bBytes) ? "B"
          : overlap(ci, cBytes, nth(c, j, strideC), cBytes) ? "C"
                                                            : nullptr;
      if (operand) {
        what = "product " + std::to_string(i) + " of a batch writes " +
               operand + " of product " + std::to_string(j);
        return true;
      }
    }
  return false;
}

} // namespace lruc::testing

#endif // LRUC_TESTS_GEMMBATCH_H
