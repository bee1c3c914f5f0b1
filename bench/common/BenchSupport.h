//===- BenchSupport.h - What the benchmarks share ---------------*- C++ -*-===//
//
// Timers and random inputs for a model library's entry points, shared by
// the CPU and GPU benchmarks.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_BENCH_BENCHSUPPORT_H
#define LRUC_BENCH_BENCHSUPPORT_H

#include "lruc_model.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace lruc::bench {

/// A model library a benchmark loaded (and never closes).
struct OpenedModel {
  void *handle = nullptr;            ///< for dlsym of its other symbols
  const lruc_model *model = nullptr; ///< null where it could not be had
};

/// Loads the library at `path` (dlopen; a name without a slash is a file
/// here, not one on the library path); its model null, with the reason in
/// `error` (dlerror's text, or not an lruc library of this ABI), where it
/// cannot be had.
inline OpenedModel openModelLibrary(const std::string &path,
                                    std::string &error) {
  const std::string file =
      path.find('/') == std::string::npos ? "./" + path : path;
  OpenedModel opened;
  opened.handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!opened.handle) {
    const char *why = dlerror();
    error = why ? why : "dlopen failed";
    return opened;
  }
  auto get = reinterpret_cast<const lruc_model *(*)(uint32_t)>(
      dlsym(opened.handle, "lruc_model_get"));
  opened.model = get ? get(LRUC_ABI_VERSION) : nullptr;
  if (!opened.model)
    error =
        "not an lruc model library of ABI v" + std::to_string(LRUC_ABI_VERSION);
  return opened;
}

inline double seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The median of `runs` timings of `body`.
template <class F> double median(int runs, F &&body) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    double start = seconds();
    body();
    times.push_back(seconds() - start);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// The round trip of a cache line between this thread and another, both
/// polling (median of `rounds`): the least any hand-off between two threads
/// can cost. It moves with where the machine places the threads (on the
/// 2-core virtual machines here ~120 ns in some minutes, ~600 in others).
inline double roundTrip(int rounds) {
  alignas(64) std::atomic<long> ping{0};
  alignas(64) std::atomic<long> pong{0};
  const long trips = 20000;
  std::thread other([&] {
    for (long i = 1; i <= long(rounds) * trips; ++i) {
      while (ping.load(std::memory_order_acquire) != i) {
      }
      pong.store(i, std::memory_order_release);
    }
  });
  long i = 0;
  double time = median(rounds, [&] {
    for (long end = i + trips; i < end;) {
      ++i;
      ping.store(i, std::memory_order_release);
      while (pong.load(std::memory_order_acquire) != i) {
      }
    }
  });
  other.join();
  return time / double(trips);
}

/// The elements of a tensor at `batch` (its -1 dims are the batch).
inline size_t elementsOf(const lruc_tensor_info &info, int64_t batch) {
  size_t n = 1;
  for (int32_t d = 0; d < info.rank; ++d)
    n *= size_t(info.shape[d] < 0 ? batch : info.shape[d]);
  return n;
}

/// Random buffers in range for `infos`: tokens and labels 1 (every
/// vocabulary and class count is at least 2), lengths `steps`, features in
/// [0, 1); the batch dim is `batch`.
struct RandomInputs {
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<int32_t>> ints;
  std::vector<const void *> pointers;
  std::vector<size_t> bytes; ///< of each pointer's array

  RandomInputs(const lruc_tensor_info *infos, int count, int64_t batch,
               int64_t steps) {
    std::mt19937 rng(1);
    floats.reserve(count);
    ints.reserve(count);
    for (int i = 0; i < count; ++i) {
      const lruc_tensor_info &info = infos[i];
      int64_t elements = batch;
      for (int d = 1; d < info.rank; ++d)
        elements *= info.shape[d];
      if (info.dtype == LRUC_F32) {
        floats.emplace_back(elements);
        for (float &v : floats.back())
          v = float(rng() % 1000) / 1000.0f;
        pointers.push_back(floats.back().data());
      } else {
        bool lengths = std::strncmp(info.name, "lengths", 7) == 0;
        ints.emplace_back(elements, lengths ? int32_t(steps) : 1);
        pointers.push_back(ints.back().data());
      }
      bytes.push_back(size_t(elements) * 4);
    }
  }
};

} // namespace lruc::bench

#endif // LRUC_BENCH_BENCHSUPPORT_H
