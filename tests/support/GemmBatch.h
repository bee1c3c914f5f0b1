//===- GemmBatch.h - The products of a GEMM batch kept apart -----*- C++
//-*-===//
//
// lruc_gpu_ops.gemm's contract (runtime/include/lruc_gpu.h): no product of
// a batch writes what another product reads or writes. A device runs them
// at once, so a schedule that broke it would race there; the simulators run
// them in order and would not notice, so they check it.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_TESTS_GEMMBATCH_H
#define LRUC_TESTS_GEMMBATCH_H

#include <cstdint>
#include <string>

namespace lruc::testing {

/// `count` products whose A, B and C span `aFloats`, `bFloats` and
/// `cFloats` floats from a + i * strideA, and so on: the first product whose
/// C overlaps another's A, B or C, described in `what`; false when none.
inline bool batchOverlaps(const float *a, int64_t aFloats, int64_t strideA,
                          const float *b, int64_t bFloats, int64_t strideB,
                          const float *c, int64_t cFloats, int64_t strideC,
                          int64_t count, std::string &what) {
  auto overlap = [](const float *p, int64_t pFloats, const float *q,
                    int64_t qFloats) {
    auto start = [](const float *x) { return reinterpret_cast<uintptr_t>(x); };
    return start(p) < start(q + qFloats) && start(q) < start(p + pFloats);
  };
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < count; ++j) {
      if (i == j)
        continue;
      const float *ci = c + i * strideC;
      const char *operand =
          overlap(ci, cFloats, a + j * strideA, aFloats)   ? "A"
          : overlap(ci, cFloats, b + j * strideB, bFloats) ? "B"
          : overlap(ci, cFloats, c + j * strideC, cFloats) ? "C"
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
