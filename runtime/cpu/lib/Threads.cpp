//===- Threads.cpp - The one thread pool of lruc's CPU kernels ------------===//
//
// A region is published through one atomic word, its ticket: generation,
// part count and the next part to take. Workers and the calling thread
// take parts with a fetch_add on it and count the parts they ran into one
// atomic `done`, which the caller polls. A worker that finds itself on the
// caller's CPU sleeps rather than polls. No mutex on the way: on the
// 2-core virtual machines here a cache line takes ~300 ns from one core to
// the other, and each lock handed between the threads cost such a trip (a
// region of two 500 ns parts took 1.1-1.5 us through a mutex, 0.75 us
// through the ticket; step mode runs tens of regions per token).
// Between regions a worker first polls for a while (LRUC_SPIN_US, else
// kSpin), then sleeps on a condition variable; a caller waiting for a
// worker's last part does the same. Nobody polls when the pool has more
// threads than the machine has cores. One region runs at a time; a caller
// that finds the pool busy (another thread's region, e.g. concurrent
// evaluation batches) runs its region alone, so threads never pile up.
// A part that starts a region of its own (step mode's streams split
// across the threads, forStreamParts) runs it alone too, and sees one
// thread in threadCount(): its kernels choose the one-thread forms.
//
//===----------------------------------------------------------------------===//

#include "lruc/core/CpuFeatures.h"
#include "lruc/cpu/Kernels.h"
#include "lruc/cpu/ModelForThisCpu.h"

#include "BlasBuffers.h"

#include <cblas.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace lruc::cpu {
namespace {

/// How long a thread polls before it sleeps, unless LRUC_SPIN_US says:
/// longer than the gaps between a step's regions and between the tokens of
/// a stream, short enough that an idle pool gives its cores back at once to
/// a person's eye.
constexpr std::chrono::microseconds kSpin(100);

/// LRUC_SPIN_US (0: sleep at once, for a machine shared with other work),
/// else kSpin; none when the pool has more threads than the machine cores.
std::chrono::microseconds spinFor(int threads) {
  if (unsigned(threads) > std::thread::hardware_concurrency())
    return std::chrono::microseconds(0);
  if (const char *env = std::getenv("LRUC_SPIN_US")) {
    char *end = nullptr;
    long us = std::strtol(env, &end, 10);
    if (end != env && *end == 0 && us >= 0)
      return std::chrono::microseconds(us);
  }
  return kSpin;
}

/// The CPU the calling thread runs on (-1 where unknown).
int currentCpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

/// Polls `ready` until it holds (true) or `limit` has passed or
/// `pointless()` holds (false); `pointless` is asked now and then.
template <class Ready, class Pointless>
bool spinUntil(Ready ready, std::chrono::microseconds limit,
               Pointless pointless) {
  if (ready())
    return true;
  if (limit.count() == 0)
    return false;
  auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready())
        return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= end || pointless())
      return ready();
  }
}

template <class Ready>
bool spinUntil(Ready ready, std::chrono::microseconds limit) {
  return spinUntil(ready, limit, [] { return false; });
}

/// Whether this thread is running a part of a region (a trivial
/// thread_local: nothing for a dlclose'd library to leave behind).
thread_local bool inPart = false;

class ThreadPool {
public:
  explicit ThreadPool(int threads) : spin_(spinFor(threads)) {
    for (int i = 1; i < std::min(threads, kMaxThreads); ++i) {
      try {
        workers_.emplace_back([this] { work(); });
      } catch (const std::system_error &) {
        break; // no memory for a stack, or too many threads: fewer workers
      }
    }
  }

  ~ThreadPool() {
    stop_.store(true);
    {
      std::lock_guard<std::mutex> lock(mutex_);
    }
    wake_.notify_all();
    for (std::thread &worker : workers_)
      worker.join();
  }

  int size() const { return int(workers_.size()) + 1; }

  /// Runs body(context, part) for every part in [0, parts), parts at most
  /// the pool's size; false (having run nothing) when another region holds
  /// the pool.
  bool run(int64_t parts, void (*body)(void *, int64_t), void *context) {
    if (busy_.exchange(true, std::memory_order_acquire))
      return false;
    struct Release {
      std::atomic<bool> &busy;
      ~Release() { busy.store(false, std::memory_order_release); }
    } release{busy_};
    // No worker touches these until it takes a part of the new ticket,
    // and every part of the previous region is done.
    body_ = body;
    context_ = context;
    done_.store(0, std::memory_order_relaxed);
    generation_ = (generation_ + 1) & kGenerationMask;
    callerCpu_.store(currentCpu(), std::memory_order_relaxed);
    ticket_.store(generation_ << kGenerationShift |
                  uint64_t(parts) << kNextBits);
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      wake_.notify_all();
    }
    finish(take());
    auto allDone = [&] {
      return done_.load(std::memory_order_acquire) == parts;
    };
    if (!spinUntil(allDone, spin_)) {
      std::unique_lock<std::mutex> lock(mutex_);
      callerSleeping_.store(true);
      finished_.wait(lock, [&] { return done_.load() == parts; });
      callerSleeping_.store(false, std::memory_order_relaxed);
    }
    return true;
  }

  /// The most threads a pool has: the ticket's fields hold their parts.
  static constexpr int kMaxThreads = 4096;

private:
  // The ticket: generation (24 bits) | parts (20) | next part (20). The
  // next-part field counts every fetch_add, taken or not: at most the
  // parts (no more than the threads) and one more per thread, below 2^20.
  static constexpr int kNextBits = 20, kGenerationShift = 40;
  static constexpr uint64_t kFieldMask = (uint64_t(1) << kNextBits) - 1;
  static constexpr uint64_t kGenerationMask = (uint64_t(1) << 24) - 1;
  static uint64_t generationOf(uint64_t t) { return t >> kGenerationShift; }
  static int64_t partsOf(uint64_t t) {
    return int64_t(t >> kNextBits & kFieldMask);
  }
  static int64_t nextOf(uint64_t t) { return int64_t(t & kFieldMask); }

  /// Runs parts of the current region until none is left; returns how
  /// many it ran and how many the region has.
  std::pair<int64_t, int64_t> take() {
    int64_t count = 0;
    for (;;) {
      uint64_t ticket = ticket_.fetch_add(1, std::memory_order_acquire);
      if (nextOf(ticket) >= partsOf(ticket))
        return {count, partsOf(ticket)};
      // A part not done keeps the region (and body_, context_) alive.
      struct Part {
        Part() { inPart = true; }
        ~Part() { inPart = false; }
      } part;
      body_(context_, nextOf(ticket));
      ++count;
    }
  }

  /// Counts parts run into `done`, waking the caller when they were the
  /// last and it sleeps.
  void finish(std::pair<int64_t, int64_t> ran) {
    auto [count, parts] = ran;
    if (count == 0)
      return;
    if (done_.fetch_add(count) + count == parts && callerSleeping_.load()) {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_.notify_all();
    }
  }

  void work() {
    uint64_t seen = 0; // the generation last taken from
    auto news = [&] {
      return generationOf(ticket_.load(std::memory_order_relaxed)) != seen ||
             stop_.load(std::memory_order_relaxed);
    };
    // Polling on the caller's CPU only takes its time: sleep instead, so
    // that the next region's wake-up places this thread on an idle CPU. A
    // new worker sometimes started on its caller's CPU and stayed there
    // for 30-130 ms, its regions 3-4 times slower (11 of 48 process starts
    // on a 2-core virtual machine; 1 of 48 with this check).
    auto sharing = [&] {
      int cpu = currentCpu();
      return cpu >= 0 && cpu == callerCpu_.load(std::memory_order_relaxed);
    };
    for (;;) {
      if (!spinUntil(news, spin_, sharing)) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1);
        // The caller reads sleepers_ after publishing its ticket, this
        // thread the ticket after counting itself (both sequentially
        // consistent): one of the two sees the other.
        wake_.wait(lock, [&] {
          return generationOf(ticket_.load()) != seen || stop_.load();
        });
        sleepers_.fetch_sub(1);
      }
      if (stop_.load())
        return;
      seen = generationOf(ticket_.load(std::memory_order_relaxed));
      finish(take());
    }
  }

  std::vector<std::thread> workers_;
  const std::chrono::microseconds spin_;
  std::atomic<bool> busy_{false}; // one region at a time
  uint64_t generation_ = 0;        // the region's caller's
  void (*body_)(void *, int64_t) = nullptr;
  void *context_ = nullptr;
  alignas(64) std::atomic<uint64_t> ticket_{0};
  alignas(64) std::atomic<int64_t> done_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> callerSleeping_{false};
  std::atomic<int> callerCpu_{-1}; // where the last region's caller ran
  std::atomic<bool> stop_{false};
  // For sleeping only.
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
};

/// LRUC_NUM_THREADS, else every core.
int defaultThreads() {
  if (const char *env = std::getenv("LRUC_NUM_THREADS"))
    if (int n = std::atoi(env); n > 0)
      return n;
  return std::max(1u, std::thread::hardware_concurrency());
}

std::mutex poolMutex; // creating and replacing the pool
std::unique_ptr<ThreadPool> pool;
/// pool.get(), read without the mutex on every parallel loop.
std::atomic<ThreadPool *> current{nullptr};

/// Makes `created` the pool, with OpenBLAS at one thread when the pool
/// has several.
void adopt(std::unique_ptr<ThreadPool> created) {
  pool = std::move(created);
  // The kernels split GEMMs themselves; OpenBLAS's own threads would
  // spin against the pool's.
  if (pool->size() > 1)
    openblas_set_num_threads(1);
  current.store(pool.get(), std::memory_order_release);
}

ThreadPool &thePool() {
  if (ThreadPool *p = current.load(std::memory_order_acquire))
    return *p;
  std::lock_guard<std::mutex> lock(poolMutex);
  if (!pool)
    adopt(std::make_unique<ThreadPool>(defaultThreads()));
  return *pool;
}

} // namespace

int threadCount() { return inPart ? 1 : thePool().size(); }

int detail::blasCallsAtOnce() {
  if (inPart)
    return 1;
  const int threads = thePool().size();
  return threads > 1 ? threads : std::max(1, openblas_get_num_threads());
}

void setThreadCount(int threads) {
  std::lock_guard<std::mutex> lock(poolMutex);
  current.store(nullptr);
  pool.reset(); // its workers gone before the new pool's start
  adopt(std::make_unique<ThreadPool>(std::max(1, threads)));
}

void parallelForRaw(int64_t n, int64_t grain,
                    void (*body)(void *, int64_t, int64_t), void *context) {
  if (n <= 0)
    return;
  if (inPart) { // a region within a part: this thread alone
    body(context, 0, n);
    return;
  }
  ThreadPool &threads = thePool();
  int64_t parts = std::min<int64_t>(threads.size(),
                                    (n + std::max<int64_t>(grain, 1) - 1) /
                                        std::max<int64_t>(grain, 1));
  if (parts <= 1) {
    body(context, 0, n);
    return;
  }
  struct Split {
    int64_t n, parts;
    void (*body)(void *, int64_t, int64_t);
    void *context;
  } split{n, parts, body, context};
  auto part = [](void *c, int64_t p) {
    auto &s = *static_cast<Split *>(c);
    s.body(s.context, p * s.n / s.parts, (p + 1) * s.n / s.parts);
  };
  if (!threads.run(parts, part, &split))
    body(context, 0, n);
}

bool forStreamPartsRaw(int64_t batch, int64_t weightBytes, StreamPartBody body,
                       void *context, std::string &error) {
  const int64_t parts = threadCount();
  if (parts <= 1 || batch < kLeastStreamsPerThread * parts ||
      weightBytes > kMostStreamPartWeightBytes)
    return body(context, 0, batch, error);
  struct Outcome {
    bool ok = true;
    std::string error;
    std::exception_ptr thrown;
  };
  std::vector<Outcome> outcomes(parts);
  parallelFor(parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t first = p * batch / parts;
      Outcome &outcome = outcomes[p];
      try {
        outcome.ok = body(context, first, (p + 1) * batch / parts - first,
                          outcome.error);
      } catch (...) {
        outcome.thrown = std::current_exception();
      }
    }
  });
  for (Outcome &outcome : outcomes) {
    if (outcome.thrown)
      std::rethrow_exception(outcome.thrown);
    if (!outcome.ok) {
      error = std::move(outcome.error);
      return false;
    }
  }
  return true;
}

} // namespace lruc::cpu

// The x86 extensions the kernels were compiled for (-march=native, or
// x86-64-v3 for `lruc --portable`), checked before a library is loaded and
// by the library itself (ModelForThisCpu.cpp); in this file, which every
// library links (lruc_cpu_set_threads).
LRUC_CPU_FEATURES_SECTION(kKernelCpuFeatures);

const char *lruc::cpu::detail::kernelCpuFeatures() {
  return kKernelCpuFeatures;
}

extern "C" __attribute__((visibility("default"))) void
lruc_cpu_set_threads(int threads) {
  lruc::cpu::setThreadCount(threads);
}

extern "C" __attribute__((visibility("default"))) int lruc_cpu_threads() {
  return lruc::cpu::threadCount();
}
