//===- GpuScheduleCheck.h - A library's GPU schedule against its CPU -*- C++ -*-===//
//
// googletest checks that a model library's GPU schedule (lruc_gpu.h), run
// through some lruc_gpu_ops (a device, the simulated driver, the GPU
// simulator), computes what the same library's CPU entry points
// (lruc_model.h) compute on the same batch. Plain C++ (no MLIR), so that
// the check also runs where lruc cannot (a GPU machine given prebuilt
// libraries: lruc-gpu-library-tests).
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_TESTS_GPUSCHEDULECHECK_H
#define LRUC_TESTS_GPUSCHEDULECHECK_H

#include "lruc/cuda/DeferredStatus.h"
#include "lruc/cuda/Device.h"
#include "lruc_gpu.h"
#include "lruc_model.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lruc::testing {

/// Raw buffers for one call.
struct Buffers {
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<int32_t>> int32s;
  std::vector<const void *> pointers;
  std::vector<size_t> bytes; ///< of each pointer's array
};

/// Expects `actual` to match `expected` (both fp32) within
/// tolerance * (1 + max |expected|) elementwise.
inline void expectSame(const float *actual, const float *expected, size_t n,
                double tolerance, const std::string &what) {
  double scale = 1;
  for (size_t k = 0; k < n; ++k)
    scale = std::max(scale, 1 + std::abs(double(expected[k])));
  for (size_t k = 0; k < n; ++k)
    ASSERT_NEAR(actual[k], expected[k], tolerance * scale)
        << what << "[" << k << "]";
}

/// Arrays in the memory a lruc_gpu_ops works on (device memory; host
/// memory for the simulator), released at the end.
class GpuArrays {
public:
  GpuArrays(const lruc_gpu_ops &ops, std::function<void *(size_t)> allocate,
            std::function<void(void *)> release)
      : ops(ops), allocate(std::move(allocate)), release(std::move(release)) {}
  GpuArrays(const GpuArrays &) = delete; // owns its arrays
  GpuArrays &operator=(const GpuArrays &) = delete;
  ~GpuArrays() {
    for (void *p : arrays)
      release(p);
  }
  /// A copy of `bytes` bytes of `host`; filled with NaNs for null, so that
  /// reading what nothing wrote shows.
  void *upload(const void *host, size_t bytes) {
    void *p = allocate(std::max<size_t>(bytes, 4));
    EXPECT_NE(p, nullptr);
    if (!p)
      return nullptr;
    arrays.push_back(p);
    std::vector<unsigned char> nans;
    if (!host) {
      nans.assign(bytes, 0xff);
      host = nans.data();
    }
    EXPECT_EQ(ops.copy(ops.context, p, host, bytes, LRUC_COPY_HOST_TO_DEVICE),
              0);
    return p;
  }
  float *upload(const std::vector<float> &v) {
    return static_cast<float *>(upload(v.data(), v.size() * sizeof(float)));
  }
  std::vector<float> download(const void *p, size_t n) {
    std::vector<float> host(n);
    EXPECT_EQ(ops.copy(ops.context, host.data(), p, n * sizeof(float),
                       LRUC_COPY_DEVICE_TO_HOST),
              0);
    return host;
  }

private:
  const lruc_gpu_ops &ops;
  std::function<void *(size_t)> allocate;
  std::function<void(void *)> release;
  std::vector<void *> arrays;
};

/// GpuArrays in a device's memory.
inline GpuArrays deviceArrays(lruc::cuda::Device &device) {
  return GpuArrays(
      *device.ops(),
      [&device](size_t bytes) {
        std::string why;
        void *p = device.allocate(bytes, why);
        EXPECT_NE(p, nullptr) << why;
        return p;
      },
      [&device](void *p) { device.release(p); });
}

/// The elements of a tensor at `batch` (-1 dims are the batch).
inline size_t elementsOf(const lruc_tensor_info &info, int64_t batch) {
  size_t n = 1;
  for (int32_t d = 0; d < info.rank; ++d)
    n *= size_t(info.shape[d] < 0 ? batch : info.shape[d]);
  return n;
}

/// The elements of each of `m`'s outputs at `batch`.
inline std::vector<size_t> outputSizes(const lruc_model &m, int64_t batch) {
  std::vector<size_t> sizes;
  for (int32_t r = 0; r < m.num_outputs; ++r)
    sizes.push_back(elementsOf(m.outputs[r], batch));
  return sizes;
}

/// Blocks laid out like a model's parameters for checking gradient
/// accumulation: sums to add to, and gradients (away from 0, where AdamW's
/// first update, about sign(g), would not be comparable) and moments for
/// an update at step 3.
struct AccumulationBlocks {
  std::vector<float> sums, grads, moment1, moment2;
  explicit AccumulationBlocks(size_t floats)
      : sums(floats), grads(floats), moment1(floats), moment2(floats) {
    for (size_t k = 0; k < floats; ++k) {
      sums[k] = 0.01f * std::sin(float(k));
      grads[k] = (0.5f + 0.25f * std::sin(float(k))) * (k % 2 ? 1.0f : -1.0f);
      moment1[k] = 0.05f * std::cos(float(k));
      moment2[k] = 0.01f + 0.001f * std::cos(float(k));
    }
  }
};

/// How much looser expectGpuScheduleMatchesCpu's whole-sequence tolerances
/// are for a library whose kernels store activations in bfloat16
/// (lruc_gpu_model.activations): a bfloat16 store rounds by up to 2^-9 of
/// the value and a model stores several in a row; 50 times the fp32
/// tolerances (5e-3 of the largest value for outputs, 5e-2 for gradients)
/// is about 1.3 times what the small models of the tests need (39 times,
/// weighted_tags' per-step predictions).
constexpr double kBf16Looser = 50.0;

/// The library's GPU schedule `g` on `ops` against the library's CPU entry
/// points on the same batch: forward, forward_train, backward, one
/// train_step from zero moments, and three steps of step mode. Then a token out of range is reported as the CPU library
/// reports it: an error naming the op, not a crash.
inline void expectGpuScheduleMatchesCpu(
    const lruc_gpu_model &g, const lruc_gpu_ops &ops, GpuArrays &memory,
    const lruc_model &m, const Buffers &inputs, const int64_t key[2],
    const std::vector<float> &params, const std::vector<float> &state,
    const std::vector<size_t> &outputSizes, int64_t batch,
    const std::string &name, double looser = 1.0) {
  ASSERT_EQ(g.struct_size, sizeof(lruc_gpu_model));
  ASSERT_EQ(looser > 1.0, g.activations == LRUC_GPU_BF16)
      << name << ": tolerances for the library's activations";
  // Whole-sequence results are sums over the steps (scans, pooling, batch
  // statistics) that the two sides add in different orders: their
  // rounding grows with the length, so past 4096 steps (Path-X's 16384)
  // the tolerances do too.
  int64_t steps = 1;
  for (int i = 0; i < m.num_inputs; ++i)
    if (m.inputs[i].rank >= 2)
      steps = std::max(steps, m.inputs[i].shape[1]);
  // `looser`: the whole-sequence entry points' tolerances times it, for a
  // schedule that stores activations in bfloat16 (step mode is fp32).
  const double longer = std::max(1.0, double(steps) / 4096) * looser;
  float *dParams = memory.upload(params), *dState = memory.upload(state);
  std::vector<const void *> dInputs;
  for (size_t i = 0; i < inputs.pointers.size(); ++i)
    dInputs.push_back(memory.upload(inputs.pointers[i], inputs.bytes[i]));
  auto outputsLike = [&](std::vector<std::vector<float>> &cpu,
                         std::vector<float *> &gpu) {
    cpu.clear();
    gpu.clear();
    for (size_t n : outputSizes) {
      cpu.emplace_back(n, NAN);
      gpu.push_back(static_cast<float *>(memory.upload(nullptr, n * 4)));
    }
    std::vector<float *> pointers;
    for (auto &o : cpu)
      pointers.push_back(o.data());
    return pointers;
  };
  size_t bytes = g.workspace_bytes(batch);
  ASSERT_GT(bytes, 0u);
  void *workspace = memory.upload(nullptr, bytes);
  ASSERT_FALSE(::testing::Test::HasFailure());
  char message[512] = "";

  std::vector<std::vector<float>> cpu;
  std::vector<float *> gpu;
  std::vector<float *> cpuPtrs = outputsLike(cpu, gpu);
  ASSERT_EQ(m.forward(batch, params.data(), state.data(),
                      inputs.pointers.data(), cpuPtrs.data(), message,
                      sizeof message),
            0)
      << message;
  ASSERT_EQ(g.forward(&ops, workspace, batch, dParams, dState, dInputs.data(),
                      gpu.data(), message, sizeof message),
            0)
      << message;
  for (size_t r = 0; r < cpu.size(); ++r)
    expectSame(memory.download(gpu[r], cpu[r].size()).data(), cpu[r].data(),
               cpu[r].size(), 1e-4 * longer,
               name + " GPU forward result " + std::to_string(r));

  // forward_train: the outputs and the new running statistics.
  std::vector<float> cpuNewState(state.size(), NAN);
  float *dNewState = memory.upload(cpuNewState);
  cpuPtrs = outputsLike(cpu, gpu);
  ASSERT_EQ(m.forward_train(batch, params.data(), state.data(),
                            inputs.pointers.data(), key, cpuPtrs.data(),
                            cpuNewState.data(), message, sizeof message),
            0)
      << message;
  ASSERT_EQ(g.forward_train(&ops, workspace, batch, dParams, dState,
                            dInputs.data(), key, gpu.data(), dNewState,
                            message, sizeof message),
            0)
      << message;
  for (size_t r = 0; r < cpu.size(); ++r)
    expectSame(memory.download(gpu[r], cpu[r].size()).data(), cpu[r].data(),
               cpu[r].size(), 1e-4 * longer,
               name + " GPU forward_train result " + std::to_string(r));
  expectSame(memory.download(dNewState, state.size()).data(),
             cpuNewState.data(), state.size(), 1e-4 * longer,
             name + " GPU new running statistics");

  float cpuLoss = NAN;
  std::vector<float> cpuGrads(m.param_floats, NAN);
  ASSERT_EQ(m.backward(batch, params.data(), state.data(),
                       inputs.pointers.data(), key, &cpuLoss, cpuGrads.data(),
                       message, sizeof message),
            0)
      << message;
  float *dLoss = memory.upload(std::vector<float>{NAN});
  float *dGrads = memory.upload(cpuGrads);
  ASSERT_EQ(g.backward(&ops, workspace, batch, dParams, dState,
                       dInputs.data(), key, dLoss, dGrads, message,
                       sizeof message),
            0)
      << message;
  expectSame(memory.download(dLoss, 1).data(), &cpuLoss, 1, 1e-4 * longer,
             name + " GPU loss");
  expectSame(memory.download(dGrads, cpuGrads.size()).data(), cpuGrads.data(),
             cpuGrads.size(), 1e-3 * longer, name + " GPU gradients");

  // One AdamW step from the same blocks, in place on each side.
  std::vector<float> zeros(m.param_floats, 0.0f);
  std::vector<float> cpuParams = params, cpuM = zeros, cpuV = zeros,
                     cpuState = state;
  float *dM = memory.upload(zeros), *dV = memory.upload(zeros);
  cpuPtrs = outputsLike(cpu, gpu);
  ASSERT_EQ(m.train_step(batch, cpuParams.data(), cpuM.data(), cpuV.data(),
                         cpuState.data(), 1e-3f, 1.0f, inputs.pointers.data(),
                         key, cpuPtrs.data(), message, sizeof message),
            0)
      << message;
  ASSERT_EQ(g.train_step(&ops, workspace, batch, dParams, dM, dV, dState,
                         1e-3f, 1.0f, dInputs.data(), key, gpu.data(), message,
                         sizeof message),
            0)
      << message;
  for (size_t r = 0; r < cpu.size(); ++r)
    expectSame(memory.download(gpu[r], cpu[r].size()).data(), cpu[r].data(),
               cpu[r].size(), 1e-4 * longer,
               name + " GPU train_step result " + std::to_string(r));
  // The first step moves a parameter by about lr * sign(g): compared
  // within 2.5 lr, as against the interpreter (a gradient near 0 may take
  // either sign); the moments as tightly as the gradients.
  std::vector<float> stepped = memory.download(dParams, params.size());
  for (size_t k = 0; k < stepped.size(); ++k)
    ASSERT_NEAR(stepped[k], cpuParams[k], 2.5e-3)
        << name << " GPU updated parameter [" << k << "]";
  expectSame(memory.download(dM, zeros.size()).data(), cpuM.data(),
             zeros.size(), 1e-3 * longer, name + " GPU adam_m");
  expectSame(memory.download(dV, zeros.size()).data(), cpuV.data(),
             zeros.size(), 1e-3 * longer, name + " GPU adam_v");
  expectSame(memory.download(dState, state.size()).data(), cpuState.data(),
             state.size(), 1e-4 * longer, name + " GPU running statistics");

  // Gradient accumulation from fresh blocks: half the gradients added to
  // given sums (the running statistics updated), then AdamW at step 3 on
  // given gradients and moments, the gradients away from 0.
  {
    AccumulationBlocks blocks(m.param_floats);
    auto &[sums, grads, moment1, moment2] = blocks;
    float *dSums = memory.upload(sums), *dAccParams = memory.upload(params),
          *dAccState = memory.upload(state);
    std::vector<float> accState = state;
    cpuPtrs = outputsLike(cpu, gpu);
    ASSERT_EQ(m.accumulate_gradients(batch, params.data(), accState.data(),
                                     sums.data(), 0.5f, inputs.pointers.data(),
                                     key, cpuPtrs.data(), message,
                                     sizeof message),
              0)
        << message;
    ASSERT_EQ(g.accumulate_gradients(&ops, workspace, batch, dAccParams,
                                     dAccState, dSums, 0.5f, dInputs.data(),
                                     key, gpu.data(), message, sizeof message),
              0)
        << message;
    for (size_t r = 0; r < cpu.size(); ++r)
      expectSame(memory.download(gpu[r], cpu[r].size()).data(), cpu[r].data(),
                 cpu[r].size(), 1e-4 * longer,
                 name + " GPU accumulate_gradients result " +
                     std::to_string(r));
    expectSame(memory.download(dSums, sums.size()).data(), sums.data(),
               sums.size(), 1e-3 * longer, name + " GPU accumulated gradients");
    expectSame(memory.download(dAccState, state.size()).data(), accState.data(),
               state.size(), 1e-4 * longer,
               name + " GPU accumulate_gradients running statistics");

    float *dGiven = memory.upload(grads), *dM1 = memory.upload(moment1),
          *dM2 = memory.upload(moment2);
    std::vector<float> applied = params;
    ASSERT_EQ(m.apply_gradients(applied.data(), moment1.data(), moment2.data(),
                                grads.data(), 1e-3f, 3.0f, message,
                                sizeof message),
              0)
        << message;
    ASSERT_EQ(g.apply_gradients(&ops, workspace, dAccParams, dM1, dM2, dGiven,
                                1e-3f, 3.0f, message, sizeof message),
              0)
        << message;
    expectSame(memory.download(dAccParams, params.size()).data(),
               applied.data(), params.size(), 1e-6,
               name + " GPU apply_gradients parameters");
    expectSame(memory.download(dM1, moment1.size()).data(), moment1.data(),
               moment1.size(), 1e-6, name + " GPU apply_gradients adam_m");
    expectSame(memory.download(dM2, moment2.size()).data(), moment2.data(),
               moment2.size(), 1e-6, name + " GPU apply_gradients adam_v");
  }

  // Step mode: three steps of the same inputs (tokens 1, features 0.5)
  // from a reset carry, the predictions after each and the last carry.
  ASSERT_EQ(g.step == nullptr, m.step == nullptr);
  ASSERT_EQ(g.step_reset == nullptr, m.step_reset == nullptr);
  if (m.step) {
    Buffers stepInputs;
    stepInputs.floats.reserve(m.num_step_inputs);
    stepInputs.int32s.reserve(m.num_step_inputs);
    std::vector<const void *> dStepInputs;
    for (int i = 0; i < m.num_step_inputs; ++i) {
      const lruc_tensor_info &info = m.step_inputs[i];
      size_t n = size_t(batch);
      for (int32_t d = 1; d < info.rank; ++d)
        n *= size_t(info.shape[d]);
      if (info.dtype == LRUC_F32) {
        stepInputs.floats.emplace_back(n, 0.5f);
        stepInputs.pointers.push_back(stepInputs.floats.back().data());
      } else {
        stepInputs.int32s.emplace_back(n, 1);
        stepInputs.pointers.push_back(stepInputs.int32s.back().data());
      }
      dStepInputs.push_back(memory.upload(stepInputs.pointers.back(), n * 4));
    }
    size_t outputs = size_t(batch);
    for (int32_t d = 1; d < m.step_outputs[0].rank; ++d)
      outputs *= size_t(m.step_outputs[0].shape[d]);
    std::vector<float> cpuCarry(size_t(batch) * m.carry_floats, NAN),
        cpuOut(outputs, NAN);
    float *dCarry = memory.upload(cpuCarry);
    float *dOut = memory.upload(cpuOut);
    // train_step updated dParams and dState: step mode reads the originals.
    float *dStepParams = memory.upload(params);
    float *dStepState = memory.upload(state);
    float *cpuOutPtr = cpuOut.data();
    ASSERT_EQ(m.step_reset(batch, cpuCarry.data(), message, sizeof message), 0)
        << message;
    ASSERT_EQ(g.step_reset(&ops, batch, dCarry, message, sizeof message), 0)
        << message;
    for (int t = 0; t < 3; ++t) {
      ASSERT_EQ(m.step(batch, params.data(), state.data(), cpuCarry.data(),
                       stepInputs.pointers.data(), &cpuOutPtr, message,
                       sizeof message),
                0)
          << message;
      ASSERT_EQ(g.step(&ops, workspace, batch, dStepParams, dStepState, dCarry,
                       dStepInputs.data(), &dOut, message, sizeof message),
                0)
          << message;
      expectSame(memory.download(dOut, outputs).data(), cpuOut.data(),
                 outputs, 1e-4, name + " GPU step " + std::to_string(t));
    }
    expectSame(memory.download(dCarry, cpuCarry.size()).data(),
               cpuCarry.data(), cpuCarry.size(), 1e-4, name + " GPU carry");
  }

  // A token out of range: reported with the op that met it.
  if (m.num_inputs > 0 && std::string(m.inputs[0].name) == "tokens") {
    std::vector<int32_t> bad(
        static_cast<const int32_t *>(inputs.pointers[0]),
        static_cast<const int32_t *>(inputs.pointers[0]) +
            inputs.bytes[0] / sizeof(int32_t));
    bad[0] = 1 << 20;
    std::vector<const void *> badInputs = dInputs;
    badInputs[0] = memory.upload(bad.data(), inputs.bytes[0]);
    EXPECT_NE(g.forward(&ops, workspace, batch, dParams, dState,
                        badInputs.data(), gpu.data(), message, sizeof message),
              0);
    EXPECT_NE(std::string(message).find("lru.gather at"), std::string::npos)
        << message;
    EXPECT_NE(std::string(message).find("tokens[0, 0] is 1048576"),
              std::string::npos)
        << message;

    // A train step that meets it fails as a whole: the blocks stay as they
    // were (the update and the results copy write nothing once a kernel
    // has reported), as on the CPU.
    auto blocksNow = [&] {
      return std::vector<std::vector<float>>{
          memory.download(dParams, params.size()),
          memory.download(dM, zeros.size()), memory.download(dV, zeros.size()),
          memory.download(dState, state.size())};
    };
    const std::vector<std::vector<float>> before = blocksNow();
    char failed[512] = "";
    EXPECT_NE(g.train_step(&ops, workspace, batch, dParams, dM, dV, dState,
                           1e-3f, 2.0f, badInputs.data(), key, gpu.data(),
                           failed, sizeof failed),
              0);
    EXPECT_NE(std::string(failed).find("tokens[0, 0] is 1048576"),
              std::string::npos)
        << failed;
    EXPECT_TRUE(blocksNow() == before)
        << name << ": a failed GPU train_step changed the blocks";

    // The same call with its status deferred (lruc_gpu_ops.defer_status):
    // it returns without reading the block, and the block, read back
    // afterwards, says what the call said.
    lruc::cuda::DeferredStatusOps deferring(ops);
    char deferred[512] = "";
    EXPECT_EQ(g.forward(deferring.ops(), workspace, batch, dParams, dState,
                        badInputs.data(), gpu.data(), deferred,
                        sizeof deferred),
              0)
        << deferred;
    ASSERT_NE(deferring.status(), nullptr);
    std::vector<char> block(deferring.statusBytes());
    ASSERT_EQ(ops.copy(ops.context, block.data(), deferring.status(),
                       block.size(), LRUC_COPY_DEVICE_TO_HOST),
              0);
    EXPECT_NE(g.status_error("forward", block.data(), deferred,
                             sizeof deferred),
              0);
    EXPECT_STREQ(deferred, message);
    // A good batch's block says nothing.
    EXPECT_EQ(g.forward(deferring.ops(), workspace, batch, dParams, dState,
                        dInputs.data(), gpu.data(), deferred, sizeof deferred),
              0);
    ASSERT_EQ(ops.copy(ops.context, block.data(), deferring.status(),
                       block.size(), LRUC_COPY_DEVICE_TO_HOST),
              0);
    EXPECT_EQ(g.status_error("forward", block.data(), deferred,
                             sizeof deferred),
              0)
        << deferred;
    EXPECT_NE(g.status_error("nonesuch", block.data(), deferred,
                             sizeof deferred),
              0);
  }
}

/// The GPU schedule of the library at `handle` and the CUDA source whose
/// kernels it launches.
inline void gpuHalfOf(void *handle, const lruc_gpu_model *&g,
                      const char *&source) {
  auto get = reinterpret_cast<const lruc_gpu_model *(*)(uint32_t)>(
      dlsym(handle, "lruc_gpu_model_get"));
  ASSERT_NE(get, nullptr);
  EXPECT_EQ(get(LRUC_GPU_ABI_VERSION + 1), nullptr);
  g = get(LRUC_GPU_ABI_VERSION);
  ASSERT_NE(g, nullptr);
  auto sourceOf = reinterpret_cast<const char *(*)()>(
      dlsym(handle, "lruc_cuda_source"));
  ASSERT_NE(sourceOf, nullptr);
  source = sourceOf();
}

} // namespace lruc::testing

#endif // LRUC_TESTS_GPUSCHEDULECHECK_H
