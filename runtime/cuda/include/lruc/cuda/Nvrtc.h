//===- Nvrtc.h - NVRTC, opened at run time ----------------------*- C++ -*-===//
//
// The CUDA backend compiles its kernels with NVRTC when a library loads.
// NVRTC is opened with dlopen, never linked, so that lruc and every model
// library build and run on machines without CUDA. Plain C++17.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CUDA_NVRTC_H
#define LRUC_CUDA_NVRTC_H

#include <string>
#include <vector>

namespace lruc::cuda {

/// NVRTC's version as "MAJOR.MINOR", or "" with a message in `error` when
/// it cannot be opened (LRUC_NVRTC names the library to try first; then
/// libnvrtc.so, libnvrtc.so.13 and libnvrtc.so.12 on the loader's path and
/// under /usr/local/cuda/lib64).
std::string nvrtcVersion(std::string &error);

/// The architectures this NVRTC compiles for (75 for sm_75 / compute_75,
/// ...), as it lists them; empty with a message in `error` when it cannot
/// be opened or does not list them (before NVRTC 11.2).
std::vector<int> nvrtcSupportedArchs(std::string &error);

/// Compiles the CUDA C++ `source` to PTX for `arch` (e.g. "compute_80"),
/// with `extraOptions` after lruc's own (C++17, fused multiply-adds).
/// On failure returns false with NVRTC's log in `error`, its lines naming
/// `sourceName`.
bool compileToPtx(const std::string &source, const std::string &sourceName,
                  const std::string &arch,
                  const std::vector<std::string> &extraOptions,
                  std::string &ptx, std::string &error);

} // namespace lruc::cuda

#endif // LRUC_CUDA_NVRTC_H
