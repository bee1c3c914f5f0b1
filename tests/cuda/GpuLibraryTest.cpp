//===- GpuLibraryTest.cpp - Prebuilt model libraries on a CUDA device -----===//
//
//   lruc-gpu-library-tests [gtest flags] [--batch=N] MODEL.so ...
//
// For each model library given (built by `lruc -o`, anywhere): its GPU
// schedule through lruc::cuda::Device (the CUDA driver, NVRTC, cuBLAS)
// against its own CPU entry points on one batch, the checks of
// GpuScheduleCheck.h: forward, forward_train, backward, one train_step,
// three steps of step mode, a bad token's report. Needs neither lruc nor
// MLIR, so that a GPU machine that cannot build lruc runs it on libraries
// built elsewhere (bench/gpu/kit.sh). Without a GPU, ctest runs it on the
// simulated CUDA driver (cuda-gpu-library-simulated); a library's
// simulated kernels are taken from MODEL.kernels.so beside it when that
// exists (lruc-simulated-kernels).
//
// The batch: tokens in the vocabulary (the rows of encoder.weight), labels
// among the classes, lengths from the full sequence down (padding), other
// inputs in [-1, 1); the parameters from the library's own init.
//
//===----------------------------------------------------------------------===//

#include "GpuScheduleCheck.h"

#include "lruc/cuda/Device.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using lruc::testing::Buffers;
using lruc::testing::GpuArrays;
using lruc::testing::elementsOf;

/// A batch for `m`'s inputs (see the file comment).
Buffers makeInputs(const lruc_model &m, int64_t batch) {
  std::mt19937 rng(11);
  int64_t steps = 1, vocab = 2, classes = 2;
  for (int32_t i = 0; i < m.num_inputs; ++i)
    if (m.inputs[i].rank >= 2) {
      steps = m.inputs[i].shape[1];
      break;
    }
  for (int32_t p = 0; p < m.num_params; ++p)
    if (std::strcmp(m.params[p].name, "encoder.weight") == 0 &&
        m.params[p].rank == 2)
      vocab = m.params[p].shape[0];
  if (m.num_outputs > 1 && m.outputs[1].rank >= 1)
    classes = m.outputs[1].shape[m.outputs[1].rank - 1];
  Buffers b;
  b.floats.reserve(size_t(m.num_inputs));
  b.int32s.reserve(size_t(m.num_inputs));
  for (int32_t i = 0; i < m.num_inputs; ++i) {
    const lruc_tensor_info &info = m.inputs[i];
    const size_t n = elementsOf(info, batch);
    const std::string name = info.name;
    if (info.dtype == LRUC_F32) {
      std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
      b.floats.emplace_back(n);
      for (float &v : b.floats.back())
        v = uniform(rng);
      b.pointers.push_back(b.floats.back().data());
    } else {
      b.int32s.emplace_back(n);
      std::vector<int32_t> &v = b.int32s.back();
      for (size_t k = 0; k < n; ++k) {
        if (name.rfind("lengths", 0) == 0) // the first full, then shorter
          v[k] = int32_t(k == 0 ? steps : 1 + int64_t(rng() % uint32_t(steps)));
        else if (name.rfind("tokens", 0) == 0)
          v[k] = int32_t(rng() % uint32_t(vocab));
        else
          v[k] = int32_t(rng() % uint32_t(classes));
      }
      b.pointers.push_back(v.data());
    }
    b.bytes.push_back(n * 4);
  }
  return b;
}

class GpuLibrary : public ::testing::Test {
public:
  GpuLibrary(std::string path, int64_t batch)
      : path_(std::move(path)), batch_(batch) {}

  void TestBody() override {
    std::string error;
    std::unique_ptr<lruc::cuda::Device> device =
        lruc::cuda::Device::open(0, error);
    if (!device)
      GTEST_SKIP() << "no GPU here: " << error;
    void *handle = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    std::unique_ptr<void, int (*)(void *)> closer(handle, &dlclose);
    auto get = reinterpret_cast<const lruc_model *(*)(uint32_t)>(
        dlsym(handle, "lruc_model_get"));
    ASSERT_NE(get, nullptr) << path_ << " is not an lruc model library";
    const lruc_model *model = get(LRUC_ABI_VERSION);
    ASSERT_NE(model, nullptr) << path_ << " speaks another ABI version";
    const lruc_model &m = *model;
    const lruc_gpu_model *g = nullptr;
    const char *source = nullptr;
    lruc::testing::gpuHalfOf(handle, g, source);
    if (HasFatalFailure())
      return;

    std::filesystem::path kernels(path_);
    kernels.replace_extension(".kernels.so");
    if (std::filesystem::exists(kernels))
      setenv("LRUC_SIMULATED_KERNELS", kernels.c_str(), 1);
    ASSERT_TRUE(device->loadKernels(source, g->kernels, g->num_kernels, error))
        << error;

    std::vector<float> params(m.param_floats), state(m.state_floats);
    char message[512] = "";
    ASSERT_EQ(m.init(7, params.data(), state.data(), message, sizeof message),
              0)
        << message;
    Buffers inputs = makeInputs(m, batch_);
    const int64_t key[2] = {1234, 7};
    lruc::cuda::Device &gpu = *device;
    GpuArrays memory = lruc::testing::deviceArrays(gpu);
    lruc::testing::expectGpuScheduleMatchesCpu(
        *g, *gpu.ops(), memory, m, inputs, key, params, state,
        lruc::testing::outputSizes(m, batch_), batch_,
        std::filesystem::path(path_).stem().string());
    EXPECT_TRUE(gpu.synchronize(error)) << error;
  }

private:
  std::string path_;
  int64_t batch_;
};

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int64_t batch = 3;
  std::vector<std::string> libraries;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--batch=", 0) == 0)
      batch = std::atoll(arg.c_str() + 8);
    else
      libraries.push_back(std::filesystem::absolute(arg).string());
  }
  if (libraries.empty() || batch <= 0) {
    std::fprintf(stderr, "usage: lruc-gpu-library-tests [gtest flags] "
                         "[--batch=N] MODEL.so ...\n");
    return 2;
  }
  for (const std::string &library : libraries) {
    std::string name = std::filesystem::path(library).stem().string();
    ::testing::RegisterTest(
        "GpuLibrary", name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
        [=]() -> ::testing::Test * { return new GpuLibrary(library, batch); });
  }
  return RUN_ALL_TESTS();
}
