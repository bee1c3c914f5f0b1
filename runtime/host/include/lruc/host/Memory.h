//===- Memory.h - The machine's memory and the allocator ------*- C++ -*-===//
//
// How much memory the process may still take, and how many calls of a
// model library fit in it side by side (each call leases a workspace of the
// size its manifest gives). And the allocator's settings: a model library
// allocates its intermediate tensors on every call and frees them at the end.
// With glibc's defaults, blocks of more than 128 KiB are mmap'ed and munmap'ed
// each time and the top of the heap is trimmed, so every step pays page faults
// for memory it used a moment ago: on a small Fashion-MNIST model that halves
// the steps per second. Keeping freed memory in the heap makes the next step
// reuse it.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_HOST_MEMORY_H
#define LRUC_HOST_MEMORY_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace lruc::host {

/// Tells malloc to serve large blocks from the heap and never give freed
/// memory back to the system (the process's peak stays its footprint).
/// Call once, before the first step. Returns false where the allocator
/// refused (the loop then runs, only slower).
bool keepFreedMemoryForReuse();

/// Bytes this process may plan to take: /proc/meminfo's MemAvailable, or
/// less where its cgroup (v2) caps it (memory.max less memory.current), its
/// address space is capped (`ulimit -v`: core::addressSpaceLeft) or
/// the user caps it (LRUC_MEMORY_LIMIT: "8G", "512M", "1073741824"; an
/// unreadable value is ignored); nullopt where none of them is known.
std::optional<uint64_t> availableMemoryBytes();

/// What the tools weigh CPU calls against: the bytes available
/// (availableMemoryBytes) and what each call needs beside its workspace.
struct MemoryBudget {
  std::optional<uint64_t> available;
  /// Under an address-space cap, the thread a call runs on (its stack and
  /// malloc's arena for it) and OpenBLAS's buffer (core::kBlasBufferBytes):
  /// without a cap they are virtual memory barely touched, not counted.
  uint64_t besideEachCall = 0;
};

/// This process's MemoryBudget.
MemoryBudget memoryBudget();

/// availableMemoryBytes from the texts of /proc/meminfo and of the cgroup's
/// memory.max and memory.current (empty when absent; "max": no cap), and
/// the lower of the user's limit and the address space left.
std::optional<uint64_t> availableMemoryFrom(std::string_view meminfo,
                                            std::string_view cgroupMax,
                                            std::string_view cgroupCurrent,
                                            std::optional<uint64_t> limit);

/// A size as LRUC_MEMORY_LIMIT takes it: a whole number of bytes, or with
/// K, M, G or T (binary units; "G", "GB" and "GiB" alike); nullopt when it
/// is not one.
std::optional<uint64_t> parseByteSize(std::string_view text);

/// Of `wanted` calls each holding `bytesEach` at once, how many fit in
/// `available` bytes: at least 1 (a call that cannot have its memory says
/// so itself), all `wanted` when either size is unknown.
int callsThatFit(int wanted, std::optional<uint64_t> bytesEach,
                 std::optional<uint64_t> available);

} // namespace lruc::host

#endif // LRUC_HOST_MEMORY_H
