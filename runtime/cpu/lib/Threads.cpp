//===- Threads.cpp - The one thread pool of lruc's CPU kernels ------------===//
//
// Workers sleep on a condition variable between parallel regions (no
// spinning: a 2-core machine has no core to spare for it), take parts of a
// region from an atomic counter, and the calling thread takes parts too.
// One region runs at a time; a caller that finds the pool busy (another
// thread's region, e.g. concurrent evaluation batches) runs its region
// alone, so threads never pile up.
//
//===----------------------------------------------------------------------===//

#include "lruc/cpu/Kernels.h"

#include <cblas.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace lruc::cpu {
namespace {

class ThreadPool {
public:
  explicit ThreadPool(int threads) {
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
    }
    wake_.notify_all();
    int64_t count = region.take();
    std::unique_lock<std::mutex> lock(mutex_);
    region.done += count;
    // Every part done, and no worker still holds the region (it lives on
    // this stack frame).
    finished_.wait(lock, [&] {
      return region.done == region.parts && region.users == 0;
    });
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
      Region *region;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] {
          return stop_ || (current_ && current_->generation != seen);
        });
        if (stop_)
          return;
        region = current_;
        seen = region->generation;
        ++region->users;
      }
      int64_t count = region->take();
      std::lock_guard<std::mutex> lock(mutex_);
      region->done += count;
      --region->users;
      if (region->done == region->parts && region->users == 0)
        finished_.notify_all();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex regionMutex_; // one region at a time
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  bool stop_ = false;
  uint64_t generation_ = 0;
  Region *current_ = nullptr;
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
