//===- GpuLibraryTest.cpp - Prebuilt model libraries on a CUDA device -----===//
//
//   lruc-gpu-library-tests [gtest flags] [--batch=N] MODEL.so ...
//
// For each model library given (built by `lruc -o`, anywhere): its GPU
// schedule through lruc::cuda::Device (the CUDA driver, NVRTC, cuBLAS)
// against its own CPU entry points on one batch, the checks of
// GpuScheduleCheck.h: forward, forward_train, backward, one train_step,
// three steps of step mode, a bad token's report; and step mode as
// lru-eval --stream runs it (lruc::host::GpuModel), one CUDA graph a token
// and kernel by kernel, against the CPU library; and, for the device
// itself, the bfloat16 products of --matmul bf16 (GpuProducts) against
// double sums. Needs neither lruc nor MLIR, so that a GPU machine that cannot
// build lruc runs it on libraries built elsewhere (bench/gpu/kit.sh). Without a
// GPU, ctest runs it on the simulated CUDA driver (cuda-gpu-library-simulated);
// a library's simulated kernels are taken from MODEL.kernels.so beside it when
// that exists (lruc-simulated-kernels).
//
// The batch: tokens in the vocabulary (the rows of encoder.weight), labels
// among the classes, lengths from the full sequence down (padding), other
// inputs in [-1, 1); the parameters from the library's own init.
//
//===----------------------------------------------------------------------===//

#include "GemmBatch.h"
#include "GpuScheduleCheck.h"

#include "lruc/cuda/Device.h"
#include "lruc/host/GpuModel.h"
#include "lruc/host/ModelLibrary.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
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

/// Random values for tensors `infos` of `m` at `batch` (see the file
/// comment): tokens in the vocabulary (the rows of encoder.weight), labels
/// among the classes, lengths from the full sequence down, other inputs
/// in [-1, 1).
Buffers randomBuffers(const lruc_model &m, const lruc_tensor_info *infos,
                      int32_t count, int64_t batch, std::mt19937 &rng) {
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
  b.floats.reserve(size_t(count));
  b.int32s.reserve(size_t(count));
  for (int32_t i = 0; i < count; ++i) {
    const lruc_tensor_info &info = infos[i];
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

/// A batch for `m`'s inputs.
Buffers makeInputs(const lruc_model &m, int64_t batch) {
  std::mt19937 rng(11);
  return randomBuffers(m, m.inputs, m.num_inputs, batch, rng);
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
        std::filesystem::path(path_).stem().string(),
        g->activations == LRUC_GPU_BF16 ? lruc::testing::kBf16Looser : 1.0);
    EXPECT_TRUE(gpu.synchronize(error)) << error;
  }

private:
  std::string path_;
  int64_t batch_;
};

/// Step mode through lruc::host::GpuModel, as lru-eval --stream runs it:
/// two sequences of four tokens from a reset carry, each token one CUDA
/// graph, then the same kernel by kernel, against the CPU library's step.
class GpuModelStep : public ::testing::Test {
public:
  GpuModelStep(std::string path, int64_t batch)
      : path_(std::move(path)), batch_(batch) {}
  void TestBody() override {
    using namespace lruc::host;
    std::string error;
    if (!lruc::cuda::Device::open(0, error))
      GTEST_SKIP() << "no GPU here: " << error;
    ModelLibrary library = ModelLibrary::open(path_);
    const Manifest &manifest = library.manifest();
    if (!manifest.step)
      GTEST_SKIP() << "no step mode: " << manifest.stepUnavailable;
    std::filesystem::path kernels(path_);
    kernels.replace_extension(".kernels.so");
    if (std::filesystem::exists(kernels))
      setenv("LRUC_SIMULATED_KERNELS", kernels.c_str(), 1);
    std::unique_ptr<GpuModel> gpu = GpuModel::open(library, 0, error);
    ASSERT_NE(gpu, nullptr) << error;
    gpu->loadKernels();
    Checkpoint blocks = Checkpoint::zeros(manifest);
    library.init(7, blocks.params.data(), blocks.state.data());
    gpu->reserve(batch_);
    gpu->evaluateCheckpoint(blocks);

    // Eight tokens of `batch_` sequences: the step inputs, random in range.
    const lruc_model &m = library.raw();
    std::mt19937 rng(5);
    std::vector<Buffers> tokens;
    for (int t = 0; t < 8; ++t)
      tokens.push_back(
          randomBuffers(m, m.step_inputs, m.num_step_inputs, batch_, rng));
    // The CPU's predictions after each token; a fresh carry at token 4.
    const size_t outputs = elementsOf(m.step_outputs[0], batch_);
    std::vector<std::vector<float>> expected;
    std::vector<float> carry(size_t(batch_) * manifest.step->carryFloats);
    for (size_t t = 0; t < tokens.size(); ++t) {
      if (t % 4 == 0)
        library.stepReset(batch_, carry.data());
      expected.emplace_back(outputs);
      float *out = expected.back().data();
      library.step(batch_, blocks.params.data(), blocks.state.data(),
                   carry.data(), tokens[t].pointers.data(), &out);
    }
    const std::string name = std::filesystem::path(path_).stem().string();
    for (bool graph : {true, false}) {
      gpu->useStepGraphs(graph);
      for (size_t t = 0; t < tokens.size(); ++t) {
        if (t % 4 == 0)
          gpu->stepReset(batch_);
        std::vector<float> got(outputs);
        float *out = got.data();
        gpu->step(batch_, tokens[t].pointers.data(), &out);
        lruc::testing::expectSame(
            got.data(), expected[t].data(), outputs, 1e-4,
            name + (graph ? " graph" : " launches") + " token " +
                std::to_string(t));
      }
    }
  }

private:
  std::string path_;
  int64_t batch_;
};

/// Matmul::bf16 (`--matmul bf16` on a GPU): cuBLAS rounds fp32 operands to
/// bfloat16 (to nearest even, as the device's cvt.rn.bf16.f32) and sums the
/// exact products in fp32. So the results are the double sums of the
/// rounded inputs within fp32's error, and far from the fp32 products
/// (operands with bits below bfloat16's 8); a batch at a negative stride
/// (product by product) too; and fp32 again once asked. On a GPU (the
/// kit's check) and on the simulated cuBLAS, which rounds so.
TEST(GpuProducts, Bf16ProductsRoundTheirInputs) {
  std::string error;
  std::unique_ptr<lruc::cuda::Device> device =
      lruc::cuda::Device::open(0, error);
  if (!device)
    GTEST_SKIP() << "no GPU here: " << error;
  constexpr int64_t m = 96, n = 40, k = 70, count = 2;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> a(count * m * k), w(count * n * k);
  for (float &v : a)
    v = uniform(rng);
  for (float &v : w)
    v = uniform(rng);
  auto bf16 = [](float x) {
    return lruc::testing::fromBf16(lruc::testing::toBf16(x));
  };
  GpuArrays memory = lruc::testing::deviceArrays(*device);
  const lruc_gpu_ops &ops = *device->ops();
  const float *dA = memory.upload(a), *dW = memory.upload(w);
  auto *dC = static_cast<float *>(
      memory.upload(nullptr, size_t(count * m * n) * sizeof(float)));
  // C_p = A_p W_p^T, the batch's second product first in memory.
  auto run = [&](lruc::cuda::Matmul precision) {
    EXPECT_TRUE(device->setMatmul(precision, error)) << error;
    EXPECT_EQ(ops.gemm(ops.context, 0, 1, m, n, k, LRUC_GPU_F32, dA + m * k, k,
                       -m * k, dW + n * k, k, -n * k, LRUC_GPU_F32, dC + m * n,
                       n, -m * n, count),
              0);
    return memory.download(dC, size_t(count * m * n));
  };
  const std::vector<float> rounded = run(lruc::cuda::Matmul::bf16);
  const std::vector<float> exact = run(lruc::cuda::Matmul::fp32);
  double largestGap = 0;
  for (int64_t p = 0; p < count; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double wantRounded = 0, wantExact = 0, scale = 0;
        for (int64_t q = 0; q < k; ++q) {
          const float x = a[(p * m + i) * k + q], y = w[(p * n + j) * k + q];
          wantRounded += double(bf16(x)) * bf16(y);
          wantExact += double(x) * y;
          scale += std::abs(double(x) * y);
        }
        const size_t at = size_t((p * m + i) * n + j);
        EXPECT_NEAR(rounded[at], wantRounded, 1e-5 * scale + 1e-7)
            << "bf16, product " << p << ", C[" << i << "][" << j << "]";
        EXPECT_NEAR(exact[at], wantExact, 1e-5 * scale + 1e-7)
            << "fp32, product " << p << ", C[" << i << "][" << j << "]";
        largestGap = std::max(largestGap, std::abs(wantRounded - wantExact) /
                                              (scale + 1e-30));
      }
  // Rounding each input moves it by up to 2^-9 of itself: the sums of the
  // rounded inputs leave the exact ones by far more than fp32's error.
  EXPECT_GT(largestGap, 1e-4);
}

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
    ::testing::RegisterTest(
        "GpuModelStep", name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
        [=]() -> ::testing::Test * { return new GpuModelStep(library, batch); });
  }
  return RUN_ALL_TESTS();
}
