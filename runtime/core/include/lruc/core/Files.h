//===- Files.h - Files that readers never see half of ----------*- C++ -*-===//
//
// The one atomic file write of the runtime: checkpoints and metrics
// (runtime/host) and the CUDA backend's compiled-kernel cache
// (runtime/cuda) go through it. Plain C++17 and POSIX.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CORE_FILES_H
#define LRUC_CORE_FILES_H

#include <string>
#include <string_view>

namespace lruc::core {

/// Writes `bytes` to `path` atomically: to `PATH.tmp-XXXXXX` in the same
/// directory, fsync'ed, then renamed over `path` (and the directory
/// fsync'ed), so that `path` always holds either the old file or the whole
/// new one, even if the process is killed mid-write or the machine loses
/// power. False with "PATH: cannot WHAT: REASON" in `error` otherwise.
bool writeFileAtomically(const std::string &path, std::string_view bytes,
                         std::string &error);

} // namespace lruc::core

#endif // LRUC_CORE_FILES_H
