//===- BenchSmallGemm.cpp - Few-row products against OpenBLAS alone -------===//
//
//   lruc-bench-small-gemm [ITERS]
//
// Step mode multiplies a row per sequence by each weight (PyTorch's [out,
// in] layout, lruc::cpu::matmulNT). Times lruc's product on one thread, as
// it chooses ("lruc"), as its dot products of 8-float vectors (AVX2 and
// FMA: "avx2") and as small sgemm calls whatever OpenBLAS runs ("calls"),
// against the two plain OpenBLAS forms in the same run: one sgemm call for
// all the rows, and one sgemv per row. The weights of several layers are
// cycled (8 MiB together, as a model's are read from L3 token after token),
// and sit 16 bytes past a cache line, as malloc and numpy place them.
// Prints each form's GFLOP/s and lruc's speed-up over the faster plain one;
// medians of ITERS runs (default 5).
//
//===----------------------------------------------------------------------===//

#include "../common/BenchSupport.h"
#include "lruc/cpu/Kernels.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

/// `count` floats starting 16 bytes past a 64-byte line.
struct Misaligned {
  std::vector<float> block;
  float *data;
  explicit Misaligned(size_t count) : block(count + 32) {
    auto address = reinterpret_cast<uintptr_t>(block.data());
    data = block.data() + (64 - address % 64) % 64 / sizeof(float) + 4;
    for (size_t i = 0; i < count; ++i)
      data[i] = float(i % 13) * 0.01f - 0.06f;
  }
};

} // namespace

int main(int argc, char **argv) {
  const int iters = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  lruc::cpu::setThreadCount(1);
  openblas_set_num_threads(1);
  // [out, in] of the Table 9 models' step projections: B (N x H), C (H x
  // N), the GLU halves (H x H), at H = 128/256/512 and N = 256/384.
  const int64_t shapes[][2] = {{256, 128}, {128, 256}, {128, 128},
                               {384, 256}, {256, 384}, {512, 512}};
  std::printf("few-row products on one thread, OpenBLAS %s kernels; "
              "GFLOP/s (median of %d)\n",
              openblas_get_corename(), iters);
  std::printf("%10s %5s %8s %8s %8s %8s %8s %9s\n", "weight", "rows", "lruc",
              "avx2", "calls", "sgemm", "sgemv", "speed-up");
  for (const auto &shape : shapes) {
    const int64_t n = shape[0], k = shape[1];
    const int64_t layers = std::max<int64_t>(1, (8 << 20) / (4 * n * k));
    Misaligned weights(size_t(layers * n * k));
    for (int64_t rows : {1, 2, 4, 8, 16, 32}) {
      Misaligned x(size_t(rows * k));
      std::vector<float> y(size_t(rows * n));
      auto time = [&](auto product) {
        return lruc::bench::median(iters,
                             [&] {
                               for (int64_t l = 0; l < layers; ++l)
                                 product(weights.data + l * n * k);
                             }) /
               double(layers);
      };
      auto matmulNT = [&](lruc::cpu::FewRowProducts how) {
        lruc::cpu::setFewRowProducts(how);
        double seconds = time([&](const float *w) {
          lruc::cpu::matmulNT(x.data, w, rows, n, k, y.data());
        });
        lruc::cpu::setFewRowProducts(lruc::cpu::FewRowProducts::Automatic);
        return seconds;
      };
      double lruc = matmulNT(lruc::cpu::FewRowProducts::Automatic);
      double avx2 = matmulNT(lruc::cpu::FewRowProducts::DotProductsAvx2);
      double calls = matmulNT(lruc::cpu::FewRowProducts::SmallCalls);
      double sgemm = time([&](const float *w) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rows), int(n),
                    int(k), 1.0f, x.data, int(k), w, int(k), 0.0f, y.data(),
                    int(n));
      });
      double sgemv = time([&](const float *w) {
        for (int64_t r = 0; r < rows; ++r)
          cblas_sgemv(CblasRowMajor, CblasNoTrans, int(n), int(k), 1.0f, w,
                      int(k), x.data + r * k, 1, 0.0f, y.data() + r * n, 1);
      });
      double flop = 2.0 * double(rows * n * k);
      std::printf("%5ldx%-4ld %5ld %8.1f %8.1f %8.1f %8.1f %8.1f %8.2fx\n",
                  long(n), long(k), long(rows), flop / lruc / 1e9,
                  flop / avx2 / 1e9, flop / calls / 1e9, flop / sgemm / 1e9,
                  flop / sgemv / 1e9, std::min(sgemm, sgemv) / lruc);
    }
  }
  return 0;
}
