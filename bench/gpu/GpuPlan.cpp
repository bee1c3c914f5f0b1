//===- GpuPlan.cpp - What a model's GPU schedule moves, without a GPU -----===//
//
//   lruc-gpu-plan model.so BATCH [--bandwidth GB/s] [--gemm-rate TFLOP/s]
//                 [--top N]
//
// Runs a model library's GPU schedule (lruc_gpu.h) at BATCH on a table of
// operations that only records: each kernel launch's counted bytes
// (lruc_gpu_model::kernel_bytes, the bytes of its arrays), each GEMM's
// FLOPs and the bytes of its operands and result (each read or written
// once: (m k + k n + m n) 4 bytes a product), each device-to-device copy's.
// No device is touched; every pointer the schedule is given is a dummy.
// Prints, for each entry point, the launches, GEMMs and copies with their
// bytes, and the time those bytes take at the given bandwidth (default: the
// H100's device-to-device copy, 2980 GB/s, docs/performance.md) with the
// GEMMs' FLOPs at the given rate (default: none counted): a floor under
// the entry point's time for a schedule that moves those bytes, against
// which a change that removes passes is measured on a machine with no GPU.
// With --top, each entry point's N kernels that move the most bytes. Last,
// the device memory a train step at BATCH takes, as lruc-bench-gpu
// allocates it (workspace, parameters and both moments, statistics, the
// batch's inputs and outputs): what tells whether a batch fits a GPU.
//
//===----------------------------------------------------------------------===//

#include "../common/BenchSupport.h"
#include "lruc_gpu.h"
#include "lruc_model.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "lruc-gpu-plan: %s\n", message.c_str());
  return 1;
}

/// What one call of an entry point queued.
struct Tally {
  const lruc_gpu_model *gpu = nullptr;
  int64_t batch = 0;
  int64_t launches = 0, gemms = 0, copies = 0;
  double kernelBytes = 0, gemmBytes = 0, gemmFlops = 0, copyBytes = 0;
  std::vector<double> bytesOf; ///< by kernel index, all its launches

  static Tally &of(void *context) { return *static_cast<Tally *>(context); }

  static int launch(void *context, int32_t kernel, int64_t, int32_t, int32_t,
                    void **) {
    Tally &t = of(context);
    if (kernel < 0 || kernel >= t.gpu->num_kernels)
      return -1;
    ++t.launches;
    const double bytes = double(t.gpu->kernel_bytes[2 * kernel]) * t.batch +
                         double(t.gpu->kernel_bytes[2 * kernel + 1]);
    t.kernelBytes += bytes;
    t.bytesOf.resize(size_t(t.gpu->num_kernels));
    t.bytesOf[size_t(kernel)] += bytes;
    return 0;
  }

  static int gemm(void *context, int32_t, int32_t, int64_t m, int64_t n,
                  int64_t k, int32_t abType, const void *, int64_t, int64_t,
                  const void *, int64_t, int64_t, int32_t cType, void *,
                  int64_t, int64_t, int64_t count) {
    Tally &t = of(context);
    ++t.gemms;
    auto bytes = [](int32_t type) { return type == LRUC_GPU_BF16 ? 2.0 : 4.0; };
    t.gemmFlops += 2.0 * double(m) * double(n) * double(k) * double(count);
    t.gemmBytes += (bytes(abType) * (double(m) * k + double(k) * n) +
                    bytes(cType) * double(m) * n) *
                   double(count);
    return 0;
  }

  static int copy(void *context, void *dst, const void *, size_t bytes,
                  int32_t kind) {
    Tally &t = of(context);
    if (kind == LRUC_COPY_DEVICE_TO_DEVICE) {
      ++t.copies;
      t.copyBytes += 2.0 * double(bytes); // read and written
    } else if (kind == LRUC_COPY_DEVICE_TO_HOST) {
      std::memset(dst, 0xff, bytes); // a status block: no report
    }
    return 0;
  }

  static int deferStatus(void *, const void *, size_t) { return 0; }
};

/// A device address the schedule may offset but never reads: the host
/// side computes pointers and hands them to the recording table only.
struct Dummies {
  std::vector<std::vector<char>> blocks;
  void *get(size_t bytes) {
    blocks.emplace_back(std::max<size_t>(bytes, 16));
    return blocks.back().data();
  }
};

} // namespace

int main(int argc, char **argv) {
  const char *usage = "usage: lruc-gpu-plan model.so BATCH [--bandwidth GB/s] "
                      "[--gemm-rate TFLOP/s] [--top N]";
  if (argc < 3)
    return fail(usage);
  const int64_t batch = std::atoll(argv[2]);
  double bandwidth = 2980e9, gemmRate = 0;
  int top = 0;
  for (int a = 3; a < argc; a += 2) {
    if (a + 1 >= argc)
      return fail(usage);
    const double value = std::atof(argv[a + 1]);
    if (value <= 0)
      return fail(std::string(argv[a]) + " must be positive");
    if (std::strcmp(argv[a], "--bandwidth") == 0)
      bandwidth = value * 1e9;
    else if (std::strcmp(argv[a], "--gemm-rate") == 0)
      gemmRate = value * 1e12;
    else if (std::strcmp(argv[a], "--top") == 0)
      top = int(value);
    else
      return fail(usage);
  }
  if (batch <= 0)
    return fail("BATCH must be positive");
  // A bare file name is a file here, not a library on the loader's path.
  std::string path = argv[1];
  if (path.find('/') == std::string::npos)
    path = "./" + path;
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return fail(dlerror());
  auto getModel = reinterpret_cast<const lruc_model *(*)(uint32_t)>(
      dlsym(handle, "lruc_model_get"));
  auto getGpu = reinterpret_cast<const lruc_gpu_model *(*)(uint32_t)>(
      dlsym(handle, "lruc_gpu_model_get"));
  const lruc_model *m = getModel ? getModel(LRUC_ABI_VERSION) : nullptr;
  const lruc_gpu_model *g = getGpu ? getGpu(LRUC_GPU_ABI_VERSION) : nullptr;
  if (!m || !g)
    return fail(std::string(argv[1]) +
                " is no model library with a GPU schedule of this version");

  Dummies dummy;
  void *workspace = dummy.get(16);
  auto *params = static_cast<float *>(dummy.get(16));
  auto *moments = static_cast<float *>(dummy.get(16));
  auto *state = static_cast<float *>(dummy.get(16));
  std::vector<const void *> inputs(size_t(std::max(m->num_inputs, 1)));
  std::vector<float *> outputs(size_t(std::max(m->num_outputs, 1)));
  std::vector<const void *> stepInputs(size_t(std::max(m->num_step_inputs, 1)));
  std::vector<float *> stepOutputs(size_t(std::max(m->num_step_outputs, 1)));
  for (auto *list : {&inputs, &stepInputs})
    for (const void *&p : *list)
      p = dummy.get(16);
  for (auto *list : {&outputs, &stepOutputs})
    for (float *&p : *list)
      p = static_cast<float *>(dummy.get(16));
  const int64_t key[2] = {1, 1};
  char message[512] = "";

  std::printf("%s at batch %lld: what each entry point's schedule moves "
              "(counted bytes), and that at %.0f GB/s%s\n",
              argv[1], (long long)batch, bandwidth / 1e9,
              gemmRate > 0 ? " with GEMMs at the given FLOP rate" : "");
  std::printf("%-14s %8s %10s %6s %10s %9s %7s %10s %10s %9s\n", "entry",
              "kernels", "kernel GB", "GEMMs", "GEMM GB", "TFLOP", "copies",
              "copy GB", "total GB", "floor ms");
  auto run = [&](const char *entry, auto &&call) {
    Tally tally;
    tally.gpu = g;
    tally.batch = batch;
    lruc_gpu_ops ops{&tally, &Tally::launch, &Tally::gemm, &Tally::copy,
                     &Tally::deferStatus};
    if (call(ops) != 0) {
      std::printf("%-14s failed: %s\n", entry, message);
      return false;
    }
    const double bytes = tally.kernelBytes + tally.gemmBytes + tally.copyBytes;
    // GEMMs take the longer of their bytes and their FLOPs.
    double seconds = (tally.kernelBytes + tally.copyBytes) / bandwidth;
    seconds += gemmRate > 0 ? std::max(tally.gemmBytes / bandwidth,
                                       tally.gemmFlops / gemmRate)
                            : tally.gemmBytes / bandwidth;
    std::printf("%-14s %8lld %10.2f %6lld %10.2f %9.3f %7lld %10.3f %10.2f "
                "%9.2f\n",
                entry, (long long)tally.launches, tally.kernelBytes / 1e9,
                (long long)tally.gemms, tally.gemmBytes / 1e9,
                tally.gemmFlops / 1e12, (long long)tally.copies,
                tally.copyBytes / 1e9, bytes / 1e9, seconds * 1e3);
    std::vector<int> order;
    for (int k = 0; k < int(tally.bytesOf.size()); ++k)
      if (tally.bytesOf[size_t(k)] > 0)
        order.push_back(k);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return tally.bytesOf[size_t(a)] > tally.bytesOf[size_t(b)];
    });
    for (size_t n = 0; n < order.size() && n < size_t(top); ++n)
      std::printf("  %-28s %9.3f GB  %5.1f%% of the kernels'\n",
                  g->kernels[order[n]], tally.bytesOf[size_t(order[n])] / 1e9,
                  100 * tally.bytesOf[size_t(order[n])] / tally.kernelBytes);
    return true;
  };
  bool ok = run("forward", [&](const lruc_gpu_ops &ops) {
    return g->forward(&ops, workspace, batch, params, state, inputs.data(),
                      outputs.data(), message, sizeof message);
  });
  ok &= run("backward", [&](const lruc_gpu_ops &ops) {
    float loss = 0;
    return g->backward(&ops, workspace, batch, params, state, inputs.data(),
                       key, &loss, moments, message, sizeof message);
  });
  ok &= run("train_step", [&](const lruc_gpu_ops &ops) {
    return g->train_step(&ops, workspace, batch, params, moments, moments,
                         state, 1e-3f, 1.0f, inputs.data(), key,
                         outputs.data(), message, sizeof message);
  });
  if (g->step && m->step)
    ok &= run("step (a token)", [&](const lruc_gpu_ops &ops) {
      return g->step(&ops, workspace, batch, params, state, moments,
                     stepInputs.data(), stepOutputs.data(), message,
                     sizeof message);
    });
  // Device memory of a train step (lruc-bench-gpu's arrays).
  double io = 0;
  for (int32_t i = 0; i < m->num_inputs; ++i)
    io += 4.0 * double(lruc::bench::elementsOf(m->inputs[i], batch));
  for (int32_t i = 0; i < m->num_outputs; ++i)
    io += 4.0 * double(lruc::bench::elementsOf(m->outputs[i], batch));
  const double workspaceBytes = double(g->workspace_bytes(batch));
  const double blocks = 4.0 * (3.0 * double(m->param_floats) +
                               double(m->state_floats));
  std::printf("device memory of a train step: %.2f GiB (workspace %.2f GiB, "
              "parameters, moments and statistics %.1f MiB, inputs and "
              "outputs %.1f MiB)\n",
              (workspaceBytes + blocks + io) / 1073741824.0,
              workspaceBytes / 1073741824.0, blocks / 1048576.0,
              io / 1048576.0);
  return ok ? 0 : 1;
}
