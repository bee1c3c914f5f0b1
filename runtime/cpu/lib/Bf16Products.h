//===- Bf16Products.h - Matrix products on bfloat16 inputs (oneDNN) -------===//
//
// Private to runtime/cpu: the GEMMs of Kernels.cpp call this for a part of
// a product when the precision is MatmulPrecision::Bf16 (Kernels.h).
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_CPU_BF16PRODUCTS_H
#define LRUC_CPU_BF16PRODUCTS_H

#include <cstdint>

namespace lruc::cpu::detail {

/// C[rows, cols] (row stride ldc) = op(A) op(B) with op(A)'s and op(B)'s
/// elements rounded to bfloat16 (to nearest, ties to even) and the sums in
/// fp32, on the calling thread. `a` is op(A)'s first row: [rows, k] at row
/// stride lda, or with transA [k, rows] at row stride lda; `b` is op(B)'s
/// first column: [k, cols] at row stride ldb, or with transB [cols, k].
/// False (C untouched) when oneDNN refuses the product; the caller then
/// computes it in fp32.
bool bf16Product(bool transA, bool transB, int64_t rows, int64_t cols,
                 int64_t k, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float *c, int64_t ldc);

} // namespace lruc::cpu::detail

#endif // LRUC_CPU_BF16PRODUCTS_H
