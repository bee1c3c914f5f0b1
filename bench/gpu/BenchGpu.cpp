//===- BenchGpu.cpp - A model library's speed on a GPU --------------------===//
//
//   lruc-bench-gpu model.so BATCH ITERS [--kernels FILE.csv]
//
// Runs a model library's GPU schedule (lruc_gpu.h) through
// lruc::cuda::Device on random inputs: train steps per second (ITERS steps
// queued back to back, as lru-train queues them), with fp32 GEMMs, TF32
// ones (--matmul tf32) and bfloat16 ones (--matmul bf16), the forward's and
// forward+backward's times at BATCH, the device memory a step uses, and, in the
// same run, the device's copy bandwidth (a device-to-device copy), the limit
// its elementwise kernels are measured against, and each kernel's achieved
// bandwidth (its arrays' bytes, lruc_gpu_model::kernel_bytes, over its time;
// the scan kernels summed) in one timed forward and one timed backward; and
// step mode's time per token at batch 1 and BATCH, each step's inputs uploaded
// and predictions read back (what streaming costs an application). Exits 1
// with the reason on a machine without a GPU. With --kernels, every kernel
// of the timed forward, backward and step (and step-cublas: its GEMMs in
// cuBLAS rather than the few-row kernel) as a CSV row (call, kernel, launches,
// ms, bytes, GB/s, fraction of the copy's bandwidth), so that two
// libraries' runs compare kernel by kernel. Figures: docs/performance.md.
//
//===----------------------------------------------------------------------===//

#include "../common/BenchSupport.h"
#include "lruc/core/Files.h"
#include "lruc/cuda/DeferredStatus.h"
#include "lruc/cuda/Device.h"
#include "lruc/host/GpuModel.h"
#include "lruc_gpu.h"
#include "lruc_model.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using lruc::bench::elementsOf;
using lruc::bench::RandomInputs;
using lruc::bench::seconds;

int fail(const std::string &message) {
  std::fprintf(stderr, "lruc-bench-gpu: %s\n", message.c_str());
  return 1;
}

/// Device arrays of one run, released at its end.
struct Arrays {
  lruc::cuda::Device &device;
  std::vector<void *> owned;
  size_t total = 0;
  ~Arrays() {
    for (void *p : owned)
      device.release(p);
  }
  void *get(size_t bytes, const void *host = nullptr) {
    std::string error;
    void *p = device.allocate(bytes, error);
    if (!p)
      throw std::runtime_error(error);
    owned.push_back(p);
    total += bytes;
    if (host && device.ops()->copy(device.ops()->context, p, host, bytes,
                                   LRUC_COPY_HOST_TO_DEVICE))
      throw std::runtime_error("copy to the device failed");
    return p;
  }
  /// Device copies of `inputs`, in their order.
  std::vector<const void *> copiesOf(const RandomInputs &inputs) {
    std::vector<const void *> copies;
    for (size_t i = 0; i < inputs.pointers.size(); ++i)
      copies.push_back(get(inputs.bytes[i], inputs.pointers[i]));
    return copies;
  }
  /// Device arrays for `count` float outputs described by `infos`.
  std::vector<float *> outputsFor(const lruc_tensor_info *infos, int count,
                                  int64_t batch) {
    std::vector<float *> outputs;
    for (int r = 0; r < count; ++r)
      outputs.push_back(static_cast<float *>(
          get(elementsOf(infos[r], batch) * sizeof(float))));
    return outputs;
  }
};

} // namespace

int main(int argc, char **argv) try {
  const char *usage = "usage: lruc-bench-gpu model.so BATCH ITERS "
                      "[--kernels FILE.csv]";
  std::string kernelsCsv;
  if (argc == 6 && std::string(argv[4]) == "--kernels")
    kernelsCsv = argv[5];
  else if (argc != 4)
    return fail(usage);
  const int64_t batch = std::atoll(argv[2]);
  const int iters = std::atoi(argv[3]);
  if (batch <= 0 || iters <= 0)
    return fail("BATCH and ITERS must be positive");
  // Throws HostError naming the file when it is no model library.
  lruc::host::ModelLibrary library = lruc::host::ModelLibrary::open(argv[1]);
  const lruc_model *m = &library.raw();
  auto getGpu = reinterpret_cast<const lruc_gpu_model *(*)(uint32_t)>(
      library.findSymbol("lruc_gpu_model_get"));
  auto source = reinterpret_cast<const char *(*)()>(
      library.findSymbol("lruc_cuda_source"));
  const lruc_gpu_model *g = getGpu ? getGpu(LRUC_GPU_ABI_VERSION) : nullptr;
  if (!g || !source)
    return fail(std::string(argv[1]) + " has no GPU schedule of this "
                                       "version");

  std::string error;
  std::unique_ptr<lruc::cuda::Device> device =
      lruc::cuda::Device::open(0, error);
  if (!device)
    return fail(error);
  double start = seconds();
  if (!device->loadKernels(source(), g->kernels, g->num_kernels, error))
    return fail(error);
  std::printf("device: %s (%s); kernels ready in %.1f s (%s)\n",
              device->name().c_str(), device->arch().c_str(), seconds() - start,
              device->kernelsFrom().c_str());

  std::vector<float> params(m->param_floats), state(m->state_floats + 1);
  char message[512] = "";
  if (m->init(1, params.data(), state.data(), message, sizeof message))
    return fail(message);
  int64_t steps = 1;
  for (int i = 0; i < m->num_inputs; ++i)
    if (m->inputs[i].rank >= 2)
      steps = m->inputs[i].shape[1];
  RandomInputs random(m->inputs, m->num_inputs, batch, steps);

  Arrays arrays{*device};
  const size_t paramBytes = params.size() * 4;
  auto *dParams = static_cast<float *>(arrays.get(paramBytes, params.data()));
  auto *dState =
      static_cast<float *>(arrays.get(state.size() * 4, state.data()));
  std::vector<float> zeros(params.size(), 0.0f);
  auto *dM = static_cast<float *>(arrays.get(paramBytes, zeros.data()));
  auto *dV = static_cast<float *>(arrays.get(paramBytes, zeros.data()));
  std::vector<const void *> dInputs = arrays.copiesOf(random);
  std::vector<float *> dOutputs =
      arrays.outputsFor(m->outputs, m->num_outputs, batch);
  void *workspace = arrays.get(g->workspace_bytes(batch));
  const size_t used = arrays.total; // what a train step needs

  const lruc_gpu_ops *ops = device->ops();
  const int64_t key[2] = {1, 0};
  int step = 0;
  // Train steps as lru-train runs them: queued one after another, none
  // waiting for the device (the status block deferred, read at the end).
  lruc::cuda::DeferredStatusOps deferred(*ops);
  auto trainStep = [&] {
    ++step;
    if (g->train_step(deferred.ops(), workspace, batch, dParams, dM, dV, dState,
                      1e-4f, float(step), dInputs.data(), key, dOutputs.data(),
                      message, sizeof message))
      throw std::runtime_error(message);
  };
  auto sync = [&] {
    if (!device->synchronize(error))
      throw std::runtime_error(error);
  };
  // The device's copy bandwidth: 256 MiB device to device, read + written,
  // the best of three rounds of ten, before the model runs and again after.
  // (On an H100 it has measured 2.55 TB/s after some models' runs and 2.97
  // after others', the same before and after their arrays:
  // docs/performance.md.)
  const size_t copyBytes = size_t(256) << 20;
  void *copyFrom = arrays.get(copyBytes), *copyTo = arrays.get(copyBytes);
  auto copyBandwidth = [&] {
    ops->copy(ops->context, copyTo, copyFrom, copyBytes,
              LRUC_COPY_DEVICE_TO_DEVICE);
    sync();
    double best = 0;
    for (int round = 0; round < 3; ++round) {
      const double roundStart = seconds();
      for (int i = 0; i < 10; ++i)
        ops->copy(ops->context, copyTo, copyFrom, copyBytes,
                  LRUC_COPY_DEVICE_TO_DEVICE);
      sync();
      best = std::max(best, 2.0 * copyBytes * 10 / (seconds() - roundStart));
    }
    return best;
  };
  const double copyBefore = copyBandwidth();
  // Seconds a step, `iters` queued after `warmUp` (the first calls set up
  // cuBLAS's and the module's lazy state).
  auto timeTrainSteps = [&](int warmUp) {
    for (int i = 0; i < warmUp; ++i)
      trainStep();
    sync();
    const double from = seconds();
    for (int i = 0; i < iters; ++i)
      trainStep();
    sync();
    return (seconds() - from) / iters;
  };
  const double stepTime = timeTrainSteps(2);
  // The same with the GEMMs on tensor cores (lru-train --matmul tf32).
  if (!device->setMatmul(lruc::cuda::Matmul::tf32, error))
    return fail(error);
  const double tf32StepTime = timeTrainSteps(1);
  // And with bfloat16 products (lru-train --matmul bf16).
  if (!device->setMatmul(lruc::cuda::Matmul::bf16, error))
    return fail(error);
  const double bf16StepTime = timeTrainSteps(1);
  if (!device->setMatmul(lruc::cuda::Matmul::fp32, error))
    return fail(error);
  {
    std::vector<char> status(deferred.statusBytes());
    if (ops->copy(ops->context, status.data(), deferred.status(), status.size(),
                  LRUC_COPY_DEVICE_TO_HOST) ||
        g->status_error("train_step", status.data(), message, sizeof message))
      return fail(std::string("train_step: ") + message);
  }
  start = seconds();
  for (int i = 0; i < iters; ++i)
    if (g->forward(deferred.ops(), workspace, batch, dParams, dState,
                   dInputs.data(), dOutputs.data(), message, sizeof message))
      return fail(message);
  sync();
  const double forwardTime = (seconds() - start) / iters;
  // Forward and backward in train mode (the `backward` entry point): a
  // train step without the optimizer.
  float *dLoss = static_cast<float *>(arrays.get(4));
  float *dGrads = static_cast<float *>(arrays.get(paramBytes));
  auto backward = [&](const lruc_gpu_ops *on) {
    if (g->backward(on, workspace, batch, dParams, dState, dInputs.data(), key,
                    dLoss, dGrads, message, sizeof message))
      throw std::runtime_error(message);
  };
  start = seconds();
  for (int i = 0; i < iters; ++i)
    backward(deferred.ops());
  sync();
  const double backwardTime = (seconds() - start) / iters;

  // Step mode as lru-eval --stream runs it (GpuModel): a token of each
  // sequence per call, uploaded, stepped and read back; as one CUDA graph,
  // and with each kernel launched on its own.
  struct StepTime {
    int64_t batch;
    bool graph;
    double seconds;
  };
  std::vector<StepTime> stepTimes;
  if (g->step && m->step) {
    std::unique_ptr<lruc::host::GpuModel> model =
        lruc::host::GpuModel::open(library, 0, error);
    if (!model)
      return fail(error);
    model->loadKernels();
    lruc::host::Checkpoint blocks =
        lruc::host::Checkpoint::zeros(library.manifest());
    blocks.params = params;
    blocks.state.assign(state.begin(), state.begin() + m->state_floats);
    for (int64_t b : {int64_t(1), batch}) {
      if (!stepTimes.empty() && b == stepTimes.back().batch)
        continue;
      model->reserve(b);
      model->evaluateCheckpoint(blocks);
      RandomInputs in(m->step_inputs, m->num_step_inputs, b, 1);
      std::vector<std::vector<float>> out;
      std::vector<float *> outPointers;
      for (int r = 0; r < m->num_step_outputs; ++r) {
        out.emplace_back(elementsOf(m->step_outputs[r], b));
        outPointers.push_back(out.back().data());
      }
      for (bool graph : {true, false}) {
        model->useStepGraphs(graph);
        model->stepReset(b);
        for (int warm = 0; warm < 2; ++warm) // set-up, then the capture
          model->step(b, in.pointers.data(), outPointers.data());
        const int tokens = std::max(iters, 100);
        start = seconds();
        for (int i = 0; i < tokens; ++i)
          model->step(b, in.pointers.data(), outPointers.data());
        stepTimes.push_back({b, graph, (seconds() - start) / tokens});
      }
    }
  }

  // Again after the model's runs; the better of the two is the limit.
  const double copyAfter = copyBandwidth();
  const double bandwidth = std::max(copyBefore, copyAfter);
  // The device's fp32 GEMM rate (cuBLAS, no tensor cores, as the timed
  // calls below run): a square product, from 128 up to 4096 on a side
  // until one takes a millisecond, the copy's buffers reused.
  int64_t side = 128;
  auto squareGemm = [&] {
    if (ops->gemm(ops->context, 0, 0, side, side, side, LRUC_GPU_F32, copyFrom,
                  side, 0, static_cast<const float *>(copyFrom) + side * side,
                  side, 0, LRUC_GPU_F32, copyTo, side, 0, 1))
      throw std::runtime_error("cuBLAS failed on a square product");
  };
  for (;; side *= 2) {
    squareGemm();
    sync();
    start = seconds();
    squareGemm();
    sync();
    if (seconds() - start >= 1e-3 || side == 4096)
      break;
  }
  start = seconds();
  for (int i = 0; i < 10; ++i)
    squareGemm();
  sync();
  const double gemmRate = 2.0 * side * side * side * 10 / (seconds() - start);

  std::printf("train_step  %9.2f ms  %8.2f steps/s  (batch %lld)\n",
              stepTime * 1e3, 1 / stepTime, (long long)batch);
  std::printf("train_step tf32 %5.2f ms  %8.2f steps/s  (batch %lld; "
              "--matmul tf32)\n",
              tf32StepTime * 1e3, 1 / tf32StepTime, (long long)batch);
  std::printf("train_step bf16 %5.2f ms  %8.2f steps/s  (batch %lld; "
              "--matmul bf16)\n",
              bf16StepTime * 1e3, 1 / bf16StepTime, (long long)batch);
  std::printf("forward     %9.2f ms\n", forwardTime * 1e3);
  std::printf("forward+backward %4.2f ms  (train mode, no optimizer)\n",
              backwardTime * 1e3);
  for (const StepTime &t : stepTimes)
    std::printf("step mode   %9.1f us per token  (batch %lld: %.0f tokens/s; "
                "%s)\n",
                t.seconds * 1e6, (long long)t.batch,
                double(t.batch) / t.seconds,
                t.graph ? "a CUDA graph" : "kernels launched one by one");
  if (!g->step || !m->step)
    std::printf("step mode   none (%s)\n",
                m->step_unavailable ? m->step_unavailable : "no GPU half");
  std::printf("device memory %.0f MiB (workspace %.0f MiB, parameters and "
              "moments %.0f MiB)\n",
              used / 1048576.0, g->workspace_bytes(batch) / 1048576.0,
              3.0 * paramBytes / 1048576.0);
  std::printf("copy bandwidth %.0f GB/s (device to device; %.0f before the "
              "model's runs, %.0f after)\n",
              bandwidth / 1e9, copyBefore / 1e9, copyAfter / 1e9);
  std::printf("gemm rate %.1f TFLOP/s (fp32, %lld on a side)\n",
              gemmRate / 1e12, (long long)side);

  // Each kernel's achieved bandwidth: the bytes of its arrays
  // (lruc_gpu_model::kernel_bytes) over its time, one timed call each of
  // forward and backward, against the copy bandwidth.
  std::string csv = "call,kernel,launches,ms,bytes,gb_per_s,of_copy\n";
  auto bytesOf = [&](int k) {
    return double(g->kernel_bytes[2 * k] * batch + g->kernel_bytes[2 * k + 1]);
  };
  auto timedCall = [&](const char *what, auto &&call) {
    sync();
    device->timeKernels(true);
    const double callStart = seconds();
    call();
    sync();
    const double callMs = (seconds() - callStart) * 1e3;
    device->timeKernels(false);
    std::vector<double> ms;
    std::vector<int64_t> launches;
    lruc::cuda::Device::GemmTimes gemms;
    if (!device->kernelTimes(ms, launches, gemms, error))
      throw std::runtime_error(error);
    // A kernel's bytes in the call: each of its launches' (the layers that
    // run one kernel move arrays of the same shapes).
    auto moved = [&](int k) {
      return bytesOf(k) * double(launches[size_t(k)]);
    };
    double scanMs = 0, scanBytes = 0, allMs = 0, otherBytes = 0;
    std::vector<int> scans, others;
    for (int k = 0; k < g->num_kernels; ++k) {
      if (!launches[size_t(k)])
        continue;
      allMs += ms[size_t(k)];
      const double rate = moved(k) / (ms[size_t(k)] * 1e-3);
      char row[256];
      std::snprintf(row, sizeof row, "%s,%s,%lld,%.6f,%.0f,%.1f,%.4f\n", what,
                    g->kernels[k], (long long)launches[size_t(k)],
                    ms[size_t(k)], moved(k), rate / 1e9, rate / bandwidth);
      csv += row;
      // A scan group's kernel is FUNCTION_OP_scan (not the chain's reset,
      // FUNCTION_scan_chain_reset, which moves no arrays).
      const std::string name = g->kernels[k];
      if (name.size() > 5 && name.compare(name.size() - 5, 5, "_scan") == 0) {
        scans.push_back(k);
        scanMs += ms[size_t(k)];
        scanBytes += moved(k);
      } else {
        others.push_back(k);
        otherBytes += moved(k);
      }
    }
    // Where the time goes: lruc's kernels and cuBLAS's GEMMs (each timed
    // by an event pair), and the rest of the call's time, the gaps between
    // launches (which the event pairs widen a little).
    std::printf("%s: %zu kernels, %.2f ms on the device; the call %.2f ms "
                "(GEMMs %.2f ms, gaps %.2f ms)\n",
                what, scans.size() + others.size(), allMs, callMs,
                gemms.milliseconds, callMs - allMs - gemms.milliseconds);
    if (gemms.calls)
      std::printf("  GEMMs: %lld, %.3f ms, %.1f TFLOP/s, %.1f%% of the "
                  "square product's rate\n",
                  (long long)gemms.calls, gemms.milliseconds,
                  gemms.flops / (gemms.milliseconds * 1e-3) / 1e12,
                  100 * gemms.flops / (gemms.milliseconds * 1e-3) / gemmRate);
    // A kind's total, then its eight slowest kernels.
    auto summary = [&](const char *kind, std::vector<int> &kernels,
                       double kindMs, double kindBytes) {
      if (kindMs <= 0)
        return;
      std::printf("  %s kernels: %zu, %.3f ms, %.0f GB/s, %.1f%% of copy "
                  "bandwidth\n",
                  kind, kernels.size(), kindMs,
                  kindBytes / (kindMs * 1e-3) / 1e9,
                  100 * kindBytes / (kindMs * 1e-3) / bandwidth);
      std::sort(kernels.begin(), kernels.end(),
                [&](int a, int b) { return ms[size_t(a)] > ms[size_t(b)]; });
      for (size_t n = 0; n < kernels.size() && n < 8; ++n) {
        int k = kernels[n];
        double rate = moved(k) / (ms[size_t(k)] * 1e-3);
        std::printf("    %-28s %8.3f ms  %7.0f GB/s  %5.1f%% of copy\n",
                    g->kernels[k], ms[size_t(k)], rate / 1e9,
                    100 * rate / bandwidth);
      }
    };
    summary("scan", scans, scanMs, scanBytes);
    summary("other", others, allMs - scanMs, otherBytes);
  };
  timedCall("forward", [&] {
    if (g->forward(ops, workspace, batch, dParams, dState, dInputs.data(),
                   dOutputs.data(), message, sizeof message))
      throw std::runtime_error(message);
  });
  timedCall("backward", [&] { backward(ops); });
  if (g->step && m->step) {
    // One token of step mode at BATCH, kernel by kernel from the device's
    // arrays (no upload or read-back): lruc's kernels against the GEMMs of
    // a row a stream, what the time a token grows by with the batch goes
    // to; those GEMMs in the device prelude's few-row kernel ("step"), then
    // in cuBLAS ("step-cublas").
    RandomInputs stepIn(m->step_inputs, m->num_step_inputs, batch, 1);
    std::vector<const void *> dStepInputs = arrays.copiesOf(stepIn);
    std::vector<float *> dStepOutputs =
        arrays.outputsFor(m->step_outputs, m->num_step_outputs, batch);
    float *carry = static_cast<float *>(
        arrays.get(size_t(batch) * m->carry_floats * sizeof(float)));
    auto stepToken = [&] {
      if (g->step(ops, workspace, batch, dParams, dState, carry,
                  dStepInputs.data(), dStepOutputs.data(), message,
                  sizeof message))
        throw std::runtime_error(message);
    };
    if (g->step_reset(ops, batch, carry, message, sizeof message))
      throw std::runtime_error(message);
    stepToken(); // set-up (step constants) outside the timed token
    timedCall("step", stepToken);
    if (device->fewRowKernel()) {
      device->useFewRowKernel(false);
      timedCall("step-cublas", stepToken);
      device->useFewRowKernel(true);
    }
  }
  if (!kernelsCsv.empty() &&
      !lruc::core::writeFileAtomically(kernelsCsv, csv, error))
    return fail(error);
  return 0;
} catch (const std::exception &e) {
  return fail(e.what());
}
