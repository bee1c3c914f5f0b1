//===- Bytes.cpp - Sizes of memory as people read them --------------------===//

#include "lruc/core/Bytes.h"

#include <cstdio>

namespace lruc::core {

std::string formatBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  for (; bytes >= 1024 && unit < 4; ++unit)
    bytes /= 1024;
  char text[64];
  std::snprintf(text, sizeof text, "%.1f %s", bytes, units[unit]);
  return text;
}

} // namespace lruc::core
