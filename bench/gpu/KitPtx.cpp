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
// differ the entries are not used and the device compiles as before. Then,
// where ptxas is at hand ($PTXAS, else $CUDA_HOME/bin/ptxas,
// /usr/local/cuda/bin/ptxas), each PTX's machine code for ARCH
// (storeMachineCode): the driver would otherwise compile the PTX when the
// module loads, 2-12 s a model on every fresh machine (an H200, 2026-11-26).
// bench/gpu/kit.sh runs it. Exits 1 naming the first library that fails.
//
//===----------------------------------------------------------------------===//

#include "lruc/cuda/PtxCache.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

/// ptxas, or "" when none is at hand.
std::string findPtxas() {
  std::vector<std::string> candidates;
  if (const char *path = std::getenv("PTXAS"); path && *path)
    candidates.push_back(path);
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    candidates.push_back(std::string(home) + "/bin/ptxas");
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  for (const std::string &path : candidates)
    if (access(path.c_str(), X_OK) == 0)
      return path;
  return "";
}

/// `ptx` compiled by `ptxas` for `arch` into `code`; false with the reason.
bool assemble(const std::string &ptxas, const std::string &ptx,
              const std::string &arch, std::string &code, std::string &error) {
  char folder[] = "/tmp/lruc-kit-ptx.XXXXXX";
  if (!mkdtemp(folder)) {
    error = "cannot make a temporary folder";
    return false;
  }
  const std::string in = std::string(folder) + "/model.ptx",
                    out = std::string(folder) + "/model.cubin";
  std::ofstream(in, std::ios::binary) << ptx;
  const std::string command = "'" + ptxas + "' -arch=" + arch + " -o '" +
                              out + "' '" + in + "'";
  const int status = std::system(command.c_str());
  std::ifstream result(out, std::ios::binary);
  std::stringstream bytes;
  bytes << result.rdbuf();
  code = bytes.str();
  std::error_code ignored;
  std::filesystem::remove_all(folder, ignored);
  if (status != 0 || code.empty()) {
    error = command + " failed (status " + std::to_string(status) + ")";
    return false;
  }
  return true;
}

} // namespace

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
  const std::string ptxas = findPtxas();
  if (ptxas.empty())
    std::fprintf(stderr, "lruc-kit-ptx: no ptxas ($PTXAS, $CUDA_HOME/bin, "
                         "/usr/local/cuda/bin): PTX only, the device's driver "
                         "will compile it\n");
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
    std::string code;
    if (!ptxas.empty()) {
      if (!assemble(ptxas, ptx, arch, code, error) ||
          !lruc::cuda::storeMachineCode(lruc::cuda::defaultPtxCacheDirectory(),
                                        ptx, arch, code, error)) {
        std::fprintf(stderr, "lruc-kit-ptx: %s: %s\n", argv[i], error.c_str());
        return 1;
      }
    }
    std::printf("lruc-kit-ptx: %s: %s (%zu KiB of PTX, %zu KiB of machine "
                "code)\n",
                argv[i],
                outcome == lruc::cuda::PtxCacheOutcome::Hit ? "cached already"
                                                            : "compiled",
                ptx.size() / 1024, code.size() / 1024);
  }
  return 0;
}
