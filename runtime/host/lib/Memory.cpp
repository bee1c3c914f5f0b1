//===- Memory.cpp - The machine's memory and the allocator -------------===//

#include "lruc/host/Memory.h"

#include "lruc/core/AddressSpace.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib> // defines __GLIBC__ where glibc is the C library
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace lruc::host {

bool keepFreedMemoryForReuse() {
#if defined(__GLIBC__)
  // 1 GiB: above any one tensor of the models lruc trains on a CPU. glibc
  // caps the mmap threshold on some versions; 32 MiB is its usual maximum.
  constexpr int kLarge = 1 << 30, kCap = 32 << 20;
  bool mmapOk = mallopt(M_MMAP_THRESHOLD, kLarge) || mallopt(M_MMAP_THRESHOLD, kCap);
  bool trimOk = mallopt(M_TRIM_THRESHOLD, kLarge) != 0;
  return mmapOk && trimOk;
#else
  return false;
#endif
}

std::optional<uint64_t> parseByteSize(std::string_view text) {
  std::optional<uint64_t> number = core::leadingNumber(text);
  if (!number)
    return std::nullopt;
  text.remove_prefix(
      std::min(text.find_first_not_of(" \t0123456789"), text.size()));
  uint64_t scale = 1;
  if (!text.empty()) {
    const std::string_view units = "KMGT";
    const size_t unit = units.find(
        char(std::toupper(static_cast<unsigned char>(text.front()))));
    if (unit == std::string_view::npos)
      return std::nullopt;
    scale = uint64_t(1) << (10 * (unit + 1));
    text.remove_prefix(1);
    auto upper = [](std::string_view t) {
      std::string u(t);
      for (char &c : u)
        c = char(std::toupper(static_cast<unsigned char>(c)));
      return u;
    };
    if (const std::string suffix = upper(text); suffix == "IB" || suffix == "B")
      text = {};
  }
  if (!text.empty() || *number > UINT64_MAX / scale)
    return std::nullopt;
  return *number * scale;
}

std::optional<uint64_t> availableMemoryFrom(std::string_view meminfo,
                                            std::string_view cgroupMax,
                                            std::string_view cgroupCurrent,
                                            std::optional<uint64_t> limit) {
  std::optional<uint64_t> available =
      core::procBytesAt(meminfo, "MemAvailable:");
  auto lower = [&](uint64_t bound) {
    available = available ? std::min(*available, bound) : bound;
  };
  // A cgroup's cap ("max" when it has none) less what the group holds.
  auto cap = core::leadingNumber(cgroupMax),
       used = core::leadingNumber(cgroupCurrent);
  if (cap && used)
    lower(*cap > *used ? *cap - *used : 0);
  if (limit)
    lower(*limit);
  return available;
}

std::optional<uint64_t> availableMemoryBytes() {
  std::optional<uint64_t> limit;
  if (const char *text = std::getenv("LRUC_MEMORY_LIMIT"); text && *text)
    limit = parseByteSize(text);
  if (std::optional<uint64_t> left = core::addressSpaceLeft())
    limit = limit ? std::min(*limit, *left) : *left;
  return availableMemoryFrom(
      core::readSmallFile("/proc/meminfo"),
      core::readSmallFile("/sys/fs/cgroup/memory.max"),
      core::readSmallFile("/sys/fs/cgroup/memory.current"), limit);
}

MemoryBudget memoryBudget() {
  // A thread's address space: its stack (8 MiB, the usual RLIMIT_STACK)
  // and the malloc arena glibc reserves for it.
  constexpr uint64_t kThreadBytes =
      (uint64_t(8) << 20) + core::kMallocArenaBytes;
  MemoryBudget budget;
  budget.available = availableMemoryBytes();
  if (core::addressSpaceLeft())
    budget.besideEachCall = kThreadBytes + core::kBlasBufferBytes;
  return budget;
}

int callsThatFit(int wanted, std::optional<uint64_t> bytesEach,
                 std::optional<uint64_t> available) {
  wanted = std::max(wanted, 1);
  if (!bytesEach || !available || *bytesEach == 0)
    return wanted;
  return int(
      std::clamp<uint64_t>(*available / *bytesEach, 1, uint64_t(wanted)));
}

} // namespace lruc::host
