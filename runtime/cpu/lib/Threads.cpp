//===- Threads.cpp - The one thread pool of lruc's CPU kernels ------------===//
//
// Workers take parts of a region from an atomic counter, and the calling
// thread takes parts too. Between regions a worker first spins for a while
// (LRUC_SPIN_US, else kSpin) on the region count, then sleeps on a
// condition variable; a caller waiting for a worker's last part does the
// same. Step mode runs tens of small regions per token: a sleeping thread
// takes tens of microseconds to wake on a virtual machine, more than a
// region's work.
// Nobody spins when the pool has more threads than the machine has cores.
// One region runs at a time; a caller that finds the pool busy (another
// thread's region, e.g. concurrent evaluation batches) runs its region
// alone, so threads never pile up.
//
//===----------------------------------------------------------------------===//

#include "lruc/cpu/Kernels.h"

#include <cblas.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
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

/// Polls `ready` until it holds (true) or `limit` has passed (false).
template <class Ready>
bool spinUntil(Ready ready, std::chrono::microseconds limit) {
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
    if (std::chrono::steady_clock::now() >= end)
      return ready();
  }
}

class ThreadPool {
public:
  explicit ThreadPool(int threads) : spin_(spinFor(threads)) {
    for (int i = 1; i < threads; ++i)
      workers_.emplace_back([this] { work(); });
  }

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &worker : workers_)
      worker.join();
  }

  int size() const { return int(workers_.size()) + 1; }

  /// Runs body(context, part) for every part in [0, parts); false (having
  /// run nothing) when another region holds the pool.
  bool run(int64_t parts, void (*body)(void *, int64_t), void *context) {
    std::unique_lock<std::mutex> owner(regionMutex_, std::try_to_lock);
    if (!owner.owns_lock())
      return false;
    Region region{body, context, parts};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      region.generation = ++generation_;
      current_ = &region;
      published_.store(region.generation, std::memory_order_release);
    }
    wake_.notify_all();
    int64_t count = region.take();
    std::unique_lock<std::mutex> lock(mutex_);
    region.done += count;
    region.noteIfComplete();
    lock.unlock();
    spinUntil([&] { return region.complete.load(std::memory_order_acquire); },
              spin_);
    lock.lock();
    // Every part done, and no worker still holds the region (it lives on
    // this stack frame).
    finished_.wait(lock, [&] { return region.complete.load(); });
    current_ = nullptr;
    return true;
  }

private:
  /// One parallel region; workers join it under the mutex and count
  /// themselves in `users` until they leave.
  struct Region {
    void (*body)(void *, int64_t);
    void *context;
    int64_t parts;
    uint64_t generation = 0;
    int64_t done = 0, users = 0; // under mutex_
    std::atomic<int64_t> next{0};
    /// Every part done and no worker inside: set under mutex_, polled
    /// without it by the caller.
    std::atomic<bool> complete{false};

    /// Sets `complete` when it holds; call under mutex_. True if it does.
    bool noteIfComplete() {
      if (done != parts || users != 0)
        return false;
      complete.store(true, std::memory_order_release);
      return true;
    }

    /// Runs parts until none is left; returns how many it ran.
    int64_t take() {
      int64_t count = 0;
      for (int64_t part; (part = next.fetch_add(1)) < parts; ++count)
        body(context, part);
      return count;
    }
  };

  void work() {
    uint64_t seen = 0;
    for (;;) {
      bool news = spinUntil(
          [&] {
            return published_.load(std::memory_order_acquire) != seen ||
                   stop_.load(std::memory_order_relaxed);
          },
          spin_);
      Region *region;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (news && !stop_ && !current_) {
          // The region came and went while this worker spun (the others
          // took every part): spin on for the next instead of sleeping.
          seen = generation_;
          continue;
        }
        wake_.wait(lock, [&] {
          return stop_ || (current_ && current_->generation != seen);
        });
        if (stop_)
          return;
        region = current_;
        seen = region->generation;
        // The caller may have seen every part done already; it waits again
        // until this worker leaves.
        ++region->users;
        region->complete.store(false, std::memory_order_relaxed);
      }
      int64_t count = region->take();
      std::lock_guard<std::mutex> lock(mutex_);
      region->done += count;
      --region->users;
      if (region->noteIfComplete())
        finished_.notify_all();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex regionMutex_; // one region at a time
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  const std::chrono::microseconds spin_;
  std::atomic<bool> stop_{false}; // written under mutex_
  uint64_t generation_ = 0;       // under mutex_
  /// generation_, for workers to poll without the mutex.
  std::atomic<uint64_t> published_{0};
  Region *current_ = nullptr; // under mutex_
};

/// LRUC_NUM_THREADS, else every core.
int defaultThreads() {
  if (const char *env = std::getenv("LRUC_NUM_THREADS"))
    if (int n = std::atoi(env); n > 0)
      return n;
  return std::max(1u, std::thread::hardware_concurrency());
}

std::mutex poolMutex;
std::unique_ptr<ThreadPool> pool;

ThreadPool &thePool() {
  std::lock_guard<std::mutex> lock(poolMutex);
  if (!pool) {
    pool = std::make_unique<ThreadPool>(defaultThreads());
    // The kernels split GEMMs themselves; OpenBLAS's own threads would
    // spin against the pool's.
    if (pool->size() > 1)
      openblas_set_num_threads(1);
  }
  return *pool;
}

} // namespace

int threadCount() { return thePool().size(); }

void setThreadCount(int threads) {
  std::lock_guard<std::mutex> lock(poolMutex);
  pool = std::make_unique<ThreadPool>(std::max(1, threads));
  if (pool->size() > 1)
    openblas_set_num_threads(1);
}

void parallelForRaw(int64_t n, int64_t grain,
                    void (*body)(void *, int64_t, int64_t), void *context) {
  if (n <= 0)
    return;
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

} // namespace lruc::cpu

extern "C" __attribute__((visibility("default"))) void
lruc_cpu_set_threads(int threads) {
  lruc::cpu::setThreadCount(threads);
}
