//===- SimulatedKernels.cpp - A library's CUDA kernels run on the CPU -----===//
//
// A cooperative block's threads are Boost.Context fibers: a switch at a
// barrier saves a few registers, where ucontext's swapcontext also makes a
// system call (the signal mask) and took most of a simulated train step.
// Under AddressSanitizer each switch is announced to it
// (__sanitizer_start_switch_fiber), so that it knows which stack runs.
//
//===----------------------------------------------------------------------===//

#include "SimulatedKernels.h"

#include <boost/context/fiber.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace lruc::testing {

namespace context = boost::context;

namespace {

/// AddressSanitizer is told of each switch between stacks, so that it
/// knows which one runs (nothing in other builds). Before a switch to the
/// stack [bottom, bottom + size): `save` keeps the leaving side's fake stack
/// (null when the leaving fiber ends).
void startSwitch(void **save, const void *bottom, size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(save, bottom, size);
#else
  (void)save, (void)bottom, (void)size;
#endif
}

/// After a switch, on the stack switched to: `saved` is what startSwitch
/// kept when this side left; `bottom` and `size`, if not null, learn the
/// stack that was left.
void finishSwitch(void *saved, const void **bottom, size_t *size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(saved, bottom, size);
#else
  (void)saved, (void)bottom, (void)size;
#endif
}

/// Thrown at a barrier to end a thread of a block that cannot go on.
struct Abandoned {};

} // namespace

struct SimulatedKernels::Block {
  enum class Waiting { No, Block, Warp, Done };
  struct Thread {
    context::fiber fiber;
    Waiting waiting = Waiting::No;
    const void *stackBottom = nullptr;
    size_t stackSize = 0;
    void *fakeStack = nullptr; // while it waits (AddressSanitizer)
  };
  // Kernel frames at -O0 (and under the sanitizers) hold every temporary.
  static constexpr size_t kStackBytes = 256 * 1024;

  /// Boost.Context's stack allocator: stacks from `pool`, each one's
  /// extent kept in `thread` for the switches to it.
  struct ThreadStack {
    context::pooled_fixedsize_stack *pool;
    Thread *thread;
    context::stack_context allocate() {
      context::stack_context stack = pool->allocate();
      thread->stackBottom = static_cast<char *>(stack.sp) - stack.size;
      thread->stackSize = stack.size;
      return stack;
    }
    void deallocate(context::stack_context &stack) noexcept {
      pool->deallocate(stack);
    }
  };

  std::vector<Thread> threads;
  // Where the running thread returns to at a barrier or its end.
  context::fiber scheduler;
  const void *schedulerBottom = nullptr;
  size_t schedulerSize = 0;
  void *schedulerFakeStack = nullptr;
  // Stacks go back to the pool when a thread ends, for the next block's.
  context::pooled_fixedsize_stack stacks{kStackBytes};
  int32_t kernel = 0, current = 0;
  void **args = nullptr;
  // Set when the block cannot go on: its waiting threads end (Abandoned).
  bool abandoning = false;

  void resume(int32_t t) {
    Thread &thread = threads[size_t(t)];
    current = t;
    startSwitch(&schedulerFakeStack, thread.stackBottom, thread.stackSize);
    thread.fiber = std::move(thread.fiber).resume();
    finishSwitch(schedulerFakeStack, nullptr, nullptr);
  }
};

/// The kernels whose cooperative block is running (one at a time).
static SimulatedKernels *&activeKernels() {
  static SimulatedKernels *kernels = nullptr;
  return kernels;
}

SimulatedKernels::SimulatedKernels() = default;

SimulatedKernels::~SimulatedKernels() {
  if (handle_)
    dlclose(handle_);
}

bool SimulatedKernels::open(const std::string &path, std::string &error) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    error = dlerror();
    return false;
  }
  run_ = reinterpret_cast<RunFn>(dlsym(handle_, "lruc_sim_run"));
  synchronises_ =
      static_cast<const int8_t *>(dlsym(handle_, "lruc_sim_synchronises"));
  names_ =
      static_cast<const char *const *>(dlsym(handle_, "lruc_sim_kernel_names"));
  auto *count =
      static_cast<const int32_t *>(dlsym(handle_, "lruc_sim_kernel_count"));
  now_ = static_cast<Dims *>(dlsym(handle_, "lruc_sim_now"));
  auto *wait = reinterpret_cast<void (**)(int)>(dlsym(handle_, "lruc_sim_wait"));
  if (!run_ || !synchronises_ || !names_ || !count || !now_ || !wait) {
    error = path + " lacks lruc_sim_run, lruc_sim_synchronises, "
                   "lruc_sim_kernel_names, lruc_sim_kernel_count, "
                   "lruc_sim_now or lruc_sim_wait: not a library's CUDA "
                   "source compiled with LRUC_GPU_SIMULATE";
    return false;
  }
  count_ = *count;
  *wait = &SimulatedKernels::wait;
  return true;
}

bool SimulatedKernels::launch(int32_t kernel, int64_t blocks, int32_t threads,
                              void **args, std::string &error) {
  if (kernel < 0 || kernel >= count_) {
    error = "no kernel " + std::to_string(kernel);
    return false;
  }
  if (blocks <= 0 || threads <= 0 || threads % 32 != 0 || threads > 1024) {
    // What cuLaunchKernel refuses, or a warp cut short.
    error = "a launch of " + std::to_string(blocks) + " blocks of " +
            std::to_string(threads) + " threads";
    return false;
  }
  Dims &now = *now_;
  now.gridDim = unsigned(blocks);
  now.blockDim = unsigned(threads);
  // A device runs blocks in any order: LRUC_SIMULATED_BLOCK_ORDER=reverse
  // runs them last first, which a kernel that counts on the order fails.
  const char *order = std::getenv("LRUC_SIMULATED_BLOCK_ORDER");
  const bool reverse = order && std::strcmp(order, "reverse") == 0;
  for (int64_t n = 0; n < blocks; ++n) {
    const int64_t b = reverse ? blocks - 1 - n : n;
    now.block = unsigned(b);
    if (synchronises_[kernel]) {
      if (!runBlock(kernel, threads, args, error))
        return false;
      continue;
    }
    for (int32_t t = 0; t < threads; ++t) {
      now.thread = unsigned(t);
      run_(kernel, args);
    }
  }
  return true;
}

/// Runs block `now.block` of `kernel` as `count` coroutines, resumed in
/// turn; a barrier opens when every thread of its block (or warp) waits
/// there. False, with the reason, when the threads cannot all finish (a
/// barrier some thread never reaches).
bool SimulatedKernels::runBlock(int32_t kernel, int32_t count, void **args,
                                std::string &error) {
  using Waiting = Block::Waiting;
  ++cooperativeBlocks_;
  if (!block_)
    block_ = std::make_unique<Block>();
  Block &block = *block_;
  block.kernel = kernel;
  block.args = args;
  block.abandoning = false;
  block.threads.clear();
  block.threads.resize(size_t(count));
  for (Block::Thread &thread : block.threads)
    thread.fiber = context::fiber(
        std::allocator_arg, Block::ThreadStack{&block.stacks, &thread},
        [this](context::fiber &&scheduler) {
          Block &block = *block_;
          finishSwitch(nullptr, &block.schedulerBottom, &block.schedulerSize);
          block.scheduler = std::move(scheduler);
          try {
            run_(block.kernel, block.args);
          } catch (const Abandoned &) {
          }
          block.threads[size_t(block.current)].waiting = Waiting::Done;
          startSwitch(nullptr, block.schedulerBottom, block.schedulerSize);
          return std::move(block.scheduler);
        });
  activeKernels() = this;
  for (;;) {
    bool ran = false;
    for (int32_t t = 0; t < count; ++t) {
      if (block.threads[size_t(t)].waiting != Waiting::No)
        continue;
      now_->thread = unsigned(t);
      block.resume(t);
      ran = true;
    }
    if (ran)
      continue;
    // Everyone waits or is done: open the barriers that are complete.
    int32_t done = 0, atBlock = 0;
    for (const Block::Thread &thread : block.threads) {
      done += thread.waiting == Waiting::Done;
      atBlock += thread.waiting == Waiting::Block;
    }
    if (done == count)
      break;
    bool opened = false;
    if (atBlock == count) {
      for (Block::Thread &thread : block.threads)
        thread.waiting = Waiting::No;
      opened = true;
    }
    for (int32_t w = 0; w < count / 32; ++w) {
      bool whole = true;
      for (int32_t l = 0; l < 32; ++l)
        whole &= block.threads[size_t(w * 32 + l)].waiting == Waiting::Warp;
      if (!whole)
        continue;
      for (int32_t l = 0; l < 32; ++l)
        block.threads[size_t(w * 32 + l)].waiting = Waiting::No;
      opened = true;
    }
    if (!opened) {
      error = "block " + std::to_string(now_->block) + " of kernel " +
              names_[kernel] + " cannot go on: " + std::to_string(done) +
              " of " + std::to_string(count) + " threads finished, " +
              std::to_string(atBlock) +
              " wait at __syncthreads, the rest at a warp shuffle";
      // The waiting threads end at their barriers, their stacks unwound.
      block.abandoning = true;
      for (int32_t t = 0; t < count; ++t)
        if (block.threads[size_t(t)].waiting != Waiting::Done)
          block.resume(t);
      activeKernels() = nullptr;
      return false;
    }
  }
  activeKernels() = nullptr;
  return true;
}

/// The prelude's lruc_sim_wait: the running thread waits at its block's
/// barrier (-1) or its warp's, and the scheduler runs the others.
void SimulatedKernels::wait(int warp) {
  SimulatedKernels *self = activeKernels();
  if (!self) {
    std::fprintf(stderr, "simulated kernels: a kernel not marked as "
                         "synchronising (lruc_sim_synchronises) waited at "
                         "a barrier\n");
    std::abort();
  }
  Block &block = *self->block_;
  Block::Thread &thread = block.threads[size_t(block.current)];
  thread.waiting = warp < 0 ? Block::Waiting::Block : Block::Waiting::Warp;
  startSwitch(&thread.fakeStack, block.schedulerBottom, block.schedulerSize);
  block.scheduler = std::move(block.scheduler).resume();
  finishSwitch(thread.fakeStack, nullptr, nullptr);
  if (block.abandoning)
    throw Abandoned{};
}

} // namespace lruc::testing
