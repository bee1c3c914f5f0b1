//===- SimulatedKernelsTool.cpp - A model library's kernels for the CPU ---===//
//
//   lruc-simulated-kernels MODEL.so -o KERNELS.so
//
// Compiles the CUDA source a model library carries (lruc_cuda_source()) as
// C++ for the simulated CUDA driver (SimulatedCuda.cpp), which runs the
// kernels of $LRUC_SIMULATED_KERNELS when the runtime loads the library's
// PTX. For tests: the trainer and the device runtime end to end without a
// GPU.
//
//===----------------------------------------------------------------------===//

#include "GpuSimulator.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

int main(int argc, char **argv) {
  if (argc != 4 || std::strcmp(argv[2], "-o") != 0) {
    std::fprintf(stderr, "usage: lruc-simulated-kernels MODEL.so -o KERNELS.so\n");
    return 2;
  }
  // A path, so that dlopen does not search the loader's path for a bare name.
  const std::string model = std::filesystem::absolute(argv[1]).string();
  void *library = dlopen(model.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    std::fprintf(stderr, "lruc-simulated-kernels: %s\n", dlerror());
    return 1;
  }
  auto source = reinterpret_cast<const char *(*)()>(
      dlsym(library, "lruc_cuda_source"));
  if (!source) {
    std::fprintf(stderr,
                 "lruc-simulated-kernels: %s carries no CUDA source "
                 "(lruc_cuda_source)\n",
                 argv[1]);
    return 1;
  }
  std::string error;
  if (!lruc::testing::compileSimulatedKernels(source(), argv[3], error)) {
    std::fprintf(stderr, "lruc-simulated-kernels: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
