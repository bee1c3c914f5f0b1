//===- AddressSpace.h - Room under an address-space cap ---------*- C++ -*-===//
//
// What /proc says about a process's memory, as the host's planning and a
// model library's workspace read it. Plain C++17, Linux's /proc.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CORE_ADDRESSSPACE_H
#define LRUC_CORE_ADDRESSSPACE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lruc::core {

/// The address space OpenBLAS maps for each of its calls running at once
/// (BUFFER_SIZE, 128 MiB on x86-64, and its allocator's rounding, with a
/// margin): where a cap leaves less, OpenBLAS 0.3.21 waits forever for it
/// (runtime/cpu/lib/BlasBuffers.h).
constexpr uint64_t kBlasBufferBytes =
    (uint64_t(128) << 20) + (uint64_t(1) << 20);

/// The address space glibc reserves for a thread's malloc arena at the
/// thread's first allocation (64 MiB on 64-bit): a pool thread's first
/// OpenBLAS call may take it before its buffer.
constexpr uint64_t kMallocArenaBytes = uint64_t(64) << 20;

/// The whole of a small file (a /proc or /sys one), or "" when unreadable.
std::string readSmallFile(const char *path);

/// The whole number at the start of `text` (after blanks), as /proc and
/// /sys files give values; nullopt when there is none.
std::optional<uint64_t> leadingNumber(std::string_view text);

/// The value of `key` ("MemAvailable:", "VmSize:") in the text of a /proc
/// file of "Key: N kB" lines, in bytes; nullopt when absent.
std::optional<uint64_t> procBytesAt(std::string_view text,
                                    std::string_view key);

/// The room left under this process's address-space cap (RLIMIT_AS,
/// `ulimit -v`): the cap less what it has mapped; nullopt where it has no
/// cap. Such a cap fails any mapping past it, however much memory the
/// machine has free.
std::optional<uint64_t> addressSpaceLeft();

/// addressSpaceLeft from the text of /proc/self/status and the cap
/// (nullopt: none): the cap less VmSize, or the whole cap where VmSize is
/// unknown.
std::optional<uint64_t>
addressSpaceLeftFrom(std::string_view processStatus,
                     std::optional<uint64_t> addressSpaceCap);

} // namespace lruc::core

#endif // LRUC_CORE_ADDRESSSPACE_H
