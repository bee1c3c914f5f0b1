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

std::optional<uint64_t> procBytesAt(std::string_view text,
                                    std::string_view key) {
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, end - at);
    if (line.substr(0, key.size()) == key) {
      line.remove_prefix(key.size());
      line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
      uint64_t kib = 0;
      auto [stop, ec] =
          std::from_chars(line.data(), line.data() + line.size(), kib);
      if (ec == std::errc() && stop != line.data())
        return kib * 1024; // the kernel's "kB" are KiB
    }
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
