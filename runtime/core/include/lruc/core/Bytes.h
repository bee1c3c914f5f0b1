//===- Bytes.h - Sizes of memory as people read them ------------*- C++ -*-===//
//
// One way to write a size in every message and table of the compiler and
// the runtime ("12.3 MiB"). Plain C++17.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CORE_BYTES_H
#define LRUC_CORE_BYTES_H

#include <string>

namespace lruc::core {

/// `bytes` in the largest binary unit up to TiB that keeps it at least 1,
/// one decimal: "512.0 B", "12.3 MiB", "1.5 TiB".
std::string formatBytes(double bytes);

} // namespace lruc::core

#endif // LRUC_CORE_BYTES_H
