//===- AddressSpace.cpp - Room under an address-space cap -----------------===//

#include "lruc/core/AddressSpace.h"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace lruc::core {

std::string readSmallFile(const char *path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

std::optional<uint64_t> leadingNumber(std::string_view text) {
  text.remove_prefix(std::min(text.find_first_not_of(" \t"), text.size()));
  uint64_t value = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data())
    return std::nullopt;
  return value;
}

std::optional<uint64_t> procBytesAt(std::string_view text,
                                    std::string_view key) {
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, end - at);
    if (line.substr(0, key.size()) == key)
      if (std::optional<uint64_t> kib = leadingNumber(line.substr(key.size())))
        return *kib * 1024; // the kernel's "kB" are KiB
    at = end + 1;
  }
  return std::nullopt;
}

std::optional<uint64_t>
addressSpaceLeftFrom(std::string_view processStatus,
                     std::optional<uint64_t> addressSpaceCap) {
  if (!addressSpaceCap)
    return std::nullopt;
  std::optional<uint64_t> mapped = procBytesAt(processStatus, "VmSize:");
  if (!mapped)
    return addressSpaceCap;
  return *addressSpaceCap > *mapped ? *addressSpaceCap - *mapped : 0;
}

std::optional<uint64_t> addressSpaceLeft() {
  rlimit cap{};
  if (getrlimit(RLIMIT_AS, &cap) != 0 || cap.rlim_cur == RLIM_INFINITY)
    return std::nullopt;
  return addressSpaceLeftFrom(readSmallFile("/proc/self/status"),
                              uint64_t(cap.rlim_cur));
}

} // namespace lruc::core
