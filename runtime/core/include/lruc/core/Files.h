//===- Files.h - Files that readers never see half of ----------*- C++ -*-===//
//
// The one atomic file write of the project: checkpoints, metrics and every
// tool's outputs (runtime/host, runtime/tools), the CUDA backend's
// compiled-kernel cache (runtime/cuda) and lruc's outputs go through it.
// Plain C++17 and POSIX.
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
/// power. A symbolic link's target is what is replaced (the link stays);
/// what is neither a regular file nor a directory (/dev/null, a pipe) is
/// written in place. False with "PATH: cannot WHAT: REASON" in `error`
/// otherwise.
bool writeFileAtomically(const std::string &path, std::string_view bytes,
                         std::string &error);

/// `path` with its symbolic links followed, a level at a time (so that a
/// link to a file not yet written leads to where it will be): what a write
/// to `path` replaces. The path itself where it is no link.
std::string followLinks(std::string path);

/// Whether `path` names something that is neither a regular file nor a
/// directory: a device (/dev/null), a pipe, /dev/stdout. Such an output is
/// written in place: nothing may be renamed over it (as root, that would
/// put a file where the device was).
bool isWrittenInPlace(const std::string &path);

} // namespace lruc::core

#endif // LRUC_CORE_FILES_H
