//===- KitPtx.cpp - A GPU kit's PTX, compiled ahead of time ---------------===//
//
//   lruc-kit-ptx ARCH MODEL.so...
//
// Compiles each model library's CUDA source (lruc_cuda_source) for a device
// of architecture ARCH (sm_90: the H100 and H200) into the PTX cache
// ($LRUC_CACHE_DIR/ptx), exactly as lruc::cuda::Device will ask for it
// there (compileModelPtx), so that a GPU machine whose NVRTC has the same
// version finds every kernel compiled: NVRTC takes ~25 s a Table 9 model at
// full optimisation, time a lent GPU is better spent on. Where the versions
// differ the entries are not used and the device compiles as before.
// bench/gpu/kit.sh runs it. Exits 1 naming the first library that fails.
//
//===----------------------------------------------------------------------===//

#include "lruc/cuda/PtxCache.h"

#include <dlfcn.h>

#include <cstdio>
#include <memory>
#include <string>

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: lruc-kit-ptx ARCH MODEL.so...\n");
    return 2;
  }
  const std::string arch = argv[1];
  if (lruc::cuda::defaultPtxCacheDirectory().empty()) {
    std::fprintf(stderr, "lruc-kit-ptx: no cache directory (set "
                         "LRUC_CACHE_DIR)\n");
    return 2;
  }
  for (int i = 2; i < argc; ++i) {
    std::unique_ptr<void, int (*)(void *)> library(
        dlopen(argv[i], RTLD_NOW | RTLD_LOCAL), &dlclose);
    auto source = library ? reinterpret_cast<const char *(*)()>(
                                dlsym(library.get(), "lruc_cuda_source"))
                          : nullptr;
    if (!source) {
      std::fprintf(stderr, "lruc-kit-ptx: %s: %s\n", argv[i],
                   library ? "carries no CUDA source" : dlerror());
      return 1;
    }
    std::string ptx, warning, error;
    lruc::cuda::PtxCacheOutcome outcome;
    if (!lruc::cuda::compileModelPtx(source(), arch, ptx, outcome, warning,
                                     error)) {
      std::fprintf(stderr, "lruc-kit-ptx: %s: %s\n", argv[i], error.c_str());
      return 1;
    }
    if (!warning.empty()) {
      std::fprintf(stderr, "lruc-kit-ptx: %s: %s\n", argv[i], warning.c_str());
      return 1;
    }
    std::printf("lruc-kit-ptx: %s: %s (%zu KiB of PTX)\n", argv[i],
                outcome == lruc::cuda::PtxCacheOutcome::Hit ? "cached already"
                                                            : "compiled",
                ptx.size() / 1024);
  }
  return 0;
}
