//===- BenchScan.cpp - The CPU scan kernel against memcpy -----------------===//
//
//   lruc-bench-scan [ITERS]
//
// Times lruc::cpu::scan (complex, constant lambda, forward and reverse) on
// the shapes of the Table 9 models and of the Fashion-MNIST example, and a
// memcpy of the same bytes (the scan reads b and writes x: 16 bytes per
// complex element) in the same run; prints each as GB/s and the scan's
// fraction of memcpy's rate. Medians of ITERS runs (default 5).
//
//===----------------------------------------------------------------------===//

#include "../common/BenchSupport.h"
#include "lruc/cpu/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using lruc::cpu::cfloat;

struct Shape {
  const char *name;
  int64_t batch, steps, width;
};

} // namespace

int main(int argc, char **argv) {
  const int iters = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const Shape shapes[] = {{"ListOps B8 L2048 N256", 8, 2048, 256},
                          {"Path-X B1 L16384 N256", 1, 16384, 256},
                          {"sCIFAR B4 L1024 N384", 4, 1024, 384},
                          {"Fashion-MNIST B64 L784 N64", 64, 784, 64}};
  std::printf("%d lruc threads\n", lruc::cpu::threadCount());
  std::printf("%-28s %10s %10s %10s %8s %8s\n", "shape", "memcpy", "scan",
              "reverse", "scan %", "rev %");
  for (const Shape &s : shapes) {
    const int64_t count = s.batch * s.steps * s.width;
    std::vector<cfloat> lambda(static_cast<size_t>(s.width));
    std::vector<cfloat> b(static_cast<size_t>(count));
    std::vector<cfloat> x(static_cast<size_t>(count));
    for (int64_t n = 0; n < s.width; ++n)
      lambda[size_t(n)] = std::polar(0.99f, 0.01f * float(n));
    for (int64_t i = 0; i < count; ++i)
      b[size_t(i)] = cfloat(float(i % 7) - 3.0f, float(i % 5) - 2.0f);
    std::string error;
    auto scan = [&](bool reverse) {
      if (!lruc::cpu::scan<cfloat>(lambda.data(), false, b.data(), nullptr,
                                   nullptr, reverse, s.batch, s.steps,
                                   s.width, x.data(), error)) {
        std::fprintf(stderr, "lruc-bench-scan: %s\n", error.c_str());
        std::exit(1);
      }
    };
    const double bytes = double(count) * 2 * sizeof(cfloat);
    scan(false); // first touch
    double copy = lruc::bench::median(iters, [&] {
      std::memcpy(x.data(), b.data(), size_t(count) * sizeof(cfloat));
    });
    double forward = lruc::bench::median(iters, [&] { scan(false); });
    double reverse = lruc::bench::median(iters, [&] { scan(true); });
    std::printf("%-28s %7.1f GB/s %5.1f GB/s %5.1f GB/s %7.0f%% %7.0f%%\n",
                s.name, bytes / copy * 1e-9, bytes / forward * 1e-9,
                bytes / reverse * 1e-9, 100 * copy / forward,
                100 * copy / reverse);
  }
  return 0;
}
