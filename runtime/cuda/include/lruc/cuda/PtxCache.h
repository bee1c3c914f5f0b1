//===- PtxCache.h - NVRTC results kept on disk ------------------*- C++ -*-===//
//
// A model's CUDA kernels are compiled by NVRTC when its library loads; the
// PTX is kept on disk so that this happens once per source, options,
// architecture and NVRTC version. Entries are written atomically and carry
// their key and a checksum: a corrupt or foreign entry is compiled again
// and replaced. Plain C++17.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CUDA_PTXCACHE_H
#define LRUC_CUDA_PTXCACHE_H

#include <string>
#include <vector>

namespace lruc::cuda {

/// $LRUC_CACHE_DIR/ptx, else $XDG_CACHE_HOME/lruc/ptx, else
/// $HOME/.cache/lruc/ptx; "" when none of them is set.
std::string defaultPtxCacheDirectory();

/// What compileToPtxCached did.
enum class PtxCacheOutcome {
  Hit,      ///< read a valid entry
  Compiled, ///< no entry: compiled and stored
  Rebuilt,  ///< an entry that failed its checks: compiled and replaced
};

/// compileToPtx (Nvrtc.h) through the cache in `directory` (created when
/// missing). A cache that cannot be written is no error: the PTX is still
/// returned, with the reason in `warning`. On a compile failure returns
/// false with NVRTC's log in `error` and stores nothing.
bool compileToPtxCached(const std::string &directory, const std::string &source,
                        const std::string &sourceName, const std::string &arch,
                        const std::vector<std::string> &extraOptions,
                        std::string &ptx, PtxCacheOutcome &outcome,
                        std::string &warning, std::string &error);

/// NVRTC options a user adds to every model's compile: LRUC_NVRTC_OPTIONS,
/// split at spaces (e.g. "-lineinfo" for source lines in a profiler,
/// "--Ofast-compile=max" for a quick load where speed does not matter).
/// Empty when unset.
std::vector<std::string> modelNvrtcOptions();

/// The virtual architecture NVRTC compiles PTX for on a device of
/// `deviceArch` ("sm_90"): the device's own ("compute_90"), or, for a
/// device newer than this NVRTC knows, the newest one it knows below it
/// (PTX runs on later devices: the driver compiles it), with why in
/// `note`. "" with the reason in `error` for a malformed name or a device
/// older than every architecture NVRTC knows.
std::string ptxArchitecture(const std::string &deviceArch, std::string &note,
                            std::string &error);

/// The PTX a Device loads for a model library's CUDA source on a device of
/// architecture `deviceArch` ("sm_90"): for ptxArchitecture's virtual
/// architecture (the driver compiles it for the device when the module
/// loads; its note, when it has one, leads `warning`), with
/// modelNvrtcOptions(), through the cache in defaultPtxCacheDirectory().
/// What compileToPtxCached returns. Also what bench/gpu/kit.sh fills a
/// kit's cache with ahead of time (lruc-kit-ptx).
bool compileModelPtx(const std::string &source, const std::string &deviceArch,
                     std::string &ptx, PtxCacheOutcome &outcome,
                     std::string &warning, std::string &error);

/// Machine code for `deviceArch` ("sm_90") compiled from `ptx` ahead of
/// time (ptxas, by a GPU kit's lruc-kit-ptx) and kept in the cache in
/// `directory`: a device that loads it skips the driver's compile of the
/// PTX (seconds a model, on every fresh machine). `find` is false when
/// there is none or it fails its checks; `store` writes it atomically,
/// false with the reason in `error`.
bool findMachineCode(const std::string &directory, const std::string &ptx,
                     const std::string &deviceArch, std::string &code);
bool storeMachineCode(const std::string &directory, const std::string &ptx,
                      const std::string &deviceArch, const std::string &code,
                      std::string &error);

} // namespace lruc::cuda

#endif // LRUC_CUDA_PTXCACHE_H
