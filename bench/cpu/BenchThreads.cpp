//===- BenchThreads.cpp - What handing work to the thread pool costs ------===//
//
//   lruc-bench-threads [ROUNDS]
//
// Step mode runs tens of parallel regions per token, each a fraction of a
// microsecond of work a thread: what a region costs beyond its work is a
// large share of a token. This measures, in the same run, the physical
// limit (a cache line's round trip between two threads polling it) and a
// region of the pool's size whose every part busy-waits a fixed time: its
// time, and the overhead beyond the part's time in round trips. The
// figures move with where the machine places its threads (on the 2-core
// virtual machines here the round trip was ~140 ns in some minutes, ~600
// ns in others); compare figures of one run.
//
//===----------------------------------------------------------------------===//

#include "../common/BenchSupport.h"
#include "lruc/cpu/Kernels.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

using lruc::bench::median;
using lruc::bench::roundTrip;

/// Busy-waits `ns` nanoseconds (a part's work, without touching memory).
void busy(double ns) {
  auto end = std::chrono::steady_clock::now() +
             std::chrono::nanoseconds(static_cast<long>(ns));
  while (std::chrono::steady_clock::now() < end) {
  }
}

} // namespace

int main(int argc, char **argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  if (rounds <= 0 || argc > 2) {
    std::fprintf(stderr, "usage: lruc-bench-threads [ROUNDS]\n");
    return 2;
  }
  int threads = lruc::cpu::threadCount();
  double trip = roundTrip(rounds);
  std::printf("%d threads; a cache line's round trip between two threads: "
              "%.0f ns\n", threads, trip * 1e9);
  if (threads < 2) {
    std::printf("one thread: no hand-off to measure (LRUC_NUM_THREADS)\n");
    return 0;
  }
  std::printf("%12s %12s %14s %12s\n", "part (ns)", "region (ns)",
              "overhead (ns)", "round trips");
  const int regions = 20000;
  for (double part : {0.0, 250.0, 500.0, 1000.0, 2000.0}) {
    double time = median(rounds, [&] {
      for (int r = 0; r < regions; ++r)
        lruc::cpu::parallelFor(threads, 1, [&](int64_t begin, int64_t end) {
          busy(part * double(end - begin));
        });
    }) / regions;
    double overhead = time - part * 1e-9;
    std::printf("%12.0f %12.0f %14.0f %12.1f\n", part, time * 1e9,
                overhead * 1e9, overhead / trip);
  }
  return 0;
}
