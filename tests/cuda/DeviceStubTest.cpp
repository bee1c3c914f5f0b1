//===- DeviceStubTest.cpp - Device against the toolkit's stub driver ------===//
//
// The CUDA toolkit ships a stub libcuda.so with every entry point of the
// driver (each returns CUDA_ERROR_STUB_LIBRARY). Opened as the driver,
// with the toolkit's real cuBLAS, it shows that lruc::cuda::Device binds
// every symbol it uses by a name (and version suffix) that the real
// libraries export: the open gets as far as cuInit. The driver is opened
// once per process, hence a binary of its own.
//
//===----------------------------------------------------------------------===//

#include "lruc/cuda/Device.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace {

TEST(DeviceStub, BindsEveryEntryPointAndStopsAtCuInit) {
  const std::string stub = LRUC_CUDA_STUB_DRIVER;
  if (stub.empty() || !std::filesystem::exists(stub))
    GTEST_SKIP() << "no CUDA toolkit stub driver (lib64/stubs/libcuda.so) "
                    "was found when this was built";
  setenv("LRUC_CUDA_DRIVER", stub.c_str(), 1);
  std::string error;
  std::unique_ptr<lruc::cuda::Device> device =
      lruc::cuda::Device::open(0, error);
  if (error.find("cannot open cuBLAS") != std::string::npos)
    GTEST_SKIP() << error;
  EXPECT_EQ(device, nullptr);
  // Not "the CUDA driver lacks cuX" nor "cuBLAS lacks ...": every symbol
  // bound, and the stub's cuInit refused.
  EXPECT_EQ(error.rfind("cuInit failed: ", 0), 0u) << error;
  EXPECT_NE(error.find("(34)"), std::string::npos) << error; // STUB_LIBRARY
}

} // namespace
