//===- BenchTrainStep.cpp - A model library's speed on this CPU -----------===//
//
//   lruc-bench-cpu model.so BATCH ITERS [fp32|bf16]
//
// Times forward (eval), train_step, the same batch as two accumulated
// micro-batches and (when the model has one) step mode of a model library
// on random inputs, and, in the same run, the two limits
// they are measured against: the sgemm rate of the GEMM kernel the library
// uses (OpenBLAS through lruc::cpu::matmulNT) and memcpy bandwidth. A
// library built with `lruc --profile` also reports where a train step's
// time goes: per kind of op, its time, its share, and its rate as a
// fraction of the limit that bounds it (sgemm for matmuls, memcpy
// bandwidth for the rest, counting each operand read and result written
// once), then the slowest ops with their places in the model file. With
// bf16, the library's large products and the sgemm limit's take bfloat16
// inputs (lruc::cpu::MatmulPrecision).
//
//===----------------------------------------------------------------------===//

#include "../common/BenchSupport.h"
#include "lruc/cpu/Kernels.h"
#include "lruc_model.h"
#include "lruc_profile.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using lruc::bench::median;
using lruc::bench::RandomInputs;
using lruc::bench::seconds;

int usage() {
  std::fprintf(stderr,
               "usage: lruc-bench-cpu model.so BATCH ITERS [fp32|bf16]\n");
  return 2;
}

/// The kind of work an op does, for the breakdown.
std::string kindOf(const std::string &op) {
  static const std::map<std::string, std::string> kinds = {
      {"lru.matmul", "matmul (GEMM)"},
      {"lru.scan", "scan"},
      {"lru.fused", "fused elementwise"},
      {"lru.fused+scan", "scan (fused with its neighbours)"},
      {"lru.dropout_mask", "dropout masks"},
      {"lru.reduce_sum", "reductions"},
      {"lru.broadcast", "broadcasts"},
      {"func.return", "result copies"},
  };
  auto it = kinds.find(op);
  return it != kinds.end() ? it->second : "other (" + op + ")";
}

struct KindTotal {
  double seconds = 0, bytes = 0, flops = 0;
  uint64_t ops = 0;
};

} // namespace

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5)
    return usage();
  int64_t batch = std::atoll(argv[2]);
  int iters = std::atoi(argv[3]);
  const std::string precision = argc == 5 ? argv[4] : "fp32";
  if (batch <= 0 || iters <= 0 || (precision != "fp32" && precision != "bf16"))
    return usage();
  std::string openError;
  const lruc::bench::OpenedModel opened =
      lruc::bench::openModelLibrary(argv[1], openError);
  void *handle = opened.handle;
  const lruc_model *m = opened.model;
  if (!m) {
    std::fprintf(stderr, "lruc-bench-cpu: %s: %s\n", argv[1],
                 openError.c_str());
    return 1;
  }

  if (precision == "bf16") {
    auto setMatmul = reinterpret_cast<int (*)(int, char *, size_t)>(
        dlsym(handle, "lruc_cpu_set_matmul"));
    char why[512] = "";
    std::string own;
    if (!setMatmul || setMatmul(1, why, sizeof why) ||
        !lruc::cpu::setMatmulPrecision(lruc::cpu::MatmulPrecision::Bf16, own)) {
      std::fprintf(stderr, "lruc-bench-cpu: bf16: %s\n",
                   !setMatmul ? "the library has no lruc_cpu_set_matmul"
                   : *why     ? why
                              : own.c_str());
      return 1;
    }
  }

  int64_t steps = 1;
  for (int i = 0; i < m->num_inputs; ++i)
    if (m->inputs[i].rank >= 2)
      steps = m->inputs[i].shape[1];
  RandomInputs random(m->inputs, m->num_inputs, batch, steps);
  const std::vector<const void *> &inputs = random.pointers;
  std::vector<float> params(m->param_floats), state(m->state_floats),
      adamM(m->param_floats), adamV(m->param_floats);
  char error[512] = "";
  if (m->init(1, params.data(), state.data(), error, sizeof error)) {
    std::fprintf(stderr, "lruc-bench-cpu: init: %s\n", error);
    return 1;
  }
  std::vector<std::vector<float>> outputs;
  std::vector<float *> outputPtrs;
  for (int i = 0; i < m->num_outputs; ++i) {
    int64_t count = 1;
    for (int d = 0; d < m->outputs[i].rank; ++d)
      count *= m->outputs[i].shape[d] < 0 ? batch : m->outputs[i].shape[d];
    outputs.emplace_back(count);
    outputPtrs.push_back(outputs.back().data());
  }
  int failures = 0;
  int64_t key[2] = {1, 1};
  auto forward = [&] {
    failures += m->forward(batch, params.data(), state.data(), inputs.data(),
                           outputPtrs.data(), error, sizeof error) != 0;
  };
  auto trainStep = [&] {
    ++key[1];
    failures += m->train_step(batch, params.data(), adamM.data(), adamV.data(),
                              state.data(), 1e-4f, float(key[1]),
                              inputs.data(), key, outputPtrs.data(), error,
                              sizeof error) != 0;
  };
  forward(); // warm-up: the workspace's first allocation
  trainStep();
  double forwardTime = median(iters, forward);
  double stepTime = median(iters, trainStep);
  if (failures) {
    std::fprintf(stderr, "lruc-bench-cpu: %s\n", error);
    return 1;
  }

  // The limits, measured now: sgemm on a [4096, 256] x [256, 256] product
  // and a 256 MiB memcpy.
  const int64_t rows = 4096, width = 256;
  std::vector<float> x(rows * width, 0.5f), w(width * width, 0.25f),
      y(rows * width);
  lruc::cpu::matmulNT(x.data(), w.data(), rows, width, width, y.data());
  double gemmTime = median(7, [&] {
    lruc::cpu::matmulNT(x.data(), w.data(), rows, width, width, y.data());
  });
  double sgemmGflops = 2.0 * rows * width * width / gemmTime / 1e9;
  std::vector<char> from(size_t(256) << 20, 1), to(from.size());
  std::memcpy(to.data(), from.data(), from.size());
  double copyTime = median(5, [&] {
    std::memcpy(to.data(), from.data(), from.size());
  });
  double copyGBs = 2.0 * double(from.size()) / copyTime / 1e9;

  std::printf("model %s, batch %lld, %lld steps per sequence\n", m->name,
              (long long)batch, (long long)steps);
  std::printf(
      "limits (this run): sgemm %.1f GFLOP/s (%s), "
      "memcpy %.1f GB/s (read + write)\n",
      sgemmGflops,
      precision == "bf16"
          ? "bfloat16 inputs, oneDNN"
          : ("OpenBLAS " + std::string(openblas_get_corename()) + " kernels")
                .c_str(),
      copyGBs);
  std::printf("forward     %9.1f ms  %10.0f tokens/s\n", forwardTime * 1e3,
              double(batch * steps) / forwardTime);
  std::printf("train_step  %9.1f ms  %10.0f tokens/s  %.2f steps/s\n",
              stepTime * 1e3, double(batch * steps) / stepTime,
              1.0 / stepTime);

  // The same batch as two micro-batches (lru-train --accumulate 2): two
  // accumulate_gradients calls on half the rows each, then
  // apply_gradients; against train_step, what accumulation costs.
  if (batch % 2 == 0) {
    const int64_t half = batch / 2;
    std::vector<float> grads(m->param_floats);
    std::vector<const void *> parts[2];
    for (int k = 0; k < 2; ++k)
      for (size_t i = 0; i < inputs.size(); ++i)
        parts[k].push_back(static_cast<const char *>(inputs[i]) +
                           random.bytes[i] / 2 * size_t(k));
    auto accumulatedStep = [&] {
      ++key[1];
      std::fill(grads.begin(), grads.end(), 0.0f);
      for (int k = 0; k < 2; ++k)
        failures += m->accumulate_gradients(half, params.data(), state.data(),
                                            grads.data(), 0.5f, parts[k].data(),
                                            key, outputPtrs.data(), error,
                                            sizeof error) != 0;
      failures += m->apply_gradients(params.data(), adamM.data(), adamV.data(),
                                     grads.data(), 1e-4f, float(key[1]), error,
                                     sizeof error) != 0;
    };
    accumulatedStep();
    double accumulatedTime = median(iters, accumulatedStep);
    std::printf("accumulated %9.1f ms  2 micro-batches of %lld: %.2f x "
                "train_step\n",
                accumulatedTime * 1e3, (long long)half,
                accumulatedTime / stepTime);
  }

  // Step mode: one token of each of `batch` sequences per call.
  if (m->step) {
    std::vector<float> carry(size_t(batch) * m->carry_floats);
    m->step_reset(batch, carry.data(), error, sizeof error);
    RandomInputs stepInputs(m->step_inputs, m->num_step_inputs, batch, 1);
    int64_t outCount = batch;
    for (int d = 1; d < m->step_outputs[0].rank; ++d)
      outCount *= m->step_outputs[0].shape[d];
    std::vector<float> stepOut(outCount);
    float *stepOutputs[] = {stepOut.data()};
    const int tokens = 64;
    auto run = [&] {
      for (int t = 0; t < tokens; ++t)
        failures += m->step(batch, params.data(), state.data(), carry.data(),
                            stepInputs.pointers.data(), stepOutputs, error,
                            sizeof error) != 0;
    };
    run();
    double perToken = median(iters, run) / tokens;
    std::printf("step mode   %9.1f us per token (batch %lld)  %10.0f "
                "tokens/s\n", perToken * 1e6, (long long)batch,
                double(batch) / perToken);
  } else {
    std::printf("step mode   none: %s\n", m->step_unavailable);
  }
  if (failures) {
    std::fprintf(stderr, "lruc-bench-cpu: %s\n", error);
    return 1;
  }

  // Where a train step's time goes (a library built with --profile).
  auto profile = reinterpret_cast<lruc_profile_fn>(dlsym(handle, "lruc_profile"));
  auto reset =
      reinterpret_cast<lruc_profile_reset_fn>(dlsym(handle, "lruc_profile_reset"));
  if (!profile || !reset) {
    std::printf("(build the library with `lruc --profile` for a per-op "
                "breakdown)\n");
    return 0;
  }
  reset();
  for (int i = 0; i < iters; ++i)
    trainStep();
  int32_t count = 0;
  const lruc_profile_entry *ops = profile(&count);
  std::map<std::string, KindTotal> kinds;
  std::vector<const lruc_profile_entry *> trainOps;
  double total = 0;
  for (int32_t k = 0; k < count; ++k) {
    if (std::strcmp(ops[k].function, "train_step") != 0)
      continue;
    KindTotal &t = kinds[kindOf(ops[k].op)];
    double sec = double(ops[k].nanoseconds) * 1e-9 / iters;
    t.seconds += sec;
    t.bytes += ops[k].bytes / iters;
    t.flops += ops[k].flops / iters;
    ++t.ops;
    total += sec;
    trainOps.push_back(&ops[k]);
  }
  std::printf("\ntrain_step by kind of op (per step; profiled total %.1f ms):\n",
              total * 1e3);
  std::printf("  %-28s %5s %10s %6s  %s\n", "kind", "ops", "ms", "share",
              "rate (fraction of its limit)");
  std::vector<std::pair<std::string, KindTotal>> sorted(kinds.begin(),
                                                        kinds.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) {
    return a.second.seconds > b.second.seconds;
  });
  double gemm = 0;
  for (const auto &[kind, t] : sorted) {
    bool isGemm = t.flops > 0;
    if (isGemm)
      gemm += t.seconds;
    double rate = isGemm ? t.flops / t.seconds / 1e9 : t.bytes / t.seconds / 1e9;
    double limit = isGemm ? sgemmGflops : copyGBs;
    std::printf("  %-28s %5llu %10.1f %5.1f%%  %.1f %s (%.0f%%)\n",
                kind.c_str(), (unsigned long long)t.ops, t.seconds * 1e3,
                100 * t.seconds / total, rate, isGemm ? "GFLOP/s" : "GB/s",
                100 * rate / limit);
  }
  if (gemm > 0)
    std::printf("  non-GEMM / GEMM time: %.2f (target < 0.5)\n",
                (total - gemm) / gemm);
  // GEMMs by the model-file place they came from: which layer's products
  // run below the sgemm rate (small K or N) is what a tile choice changes.
  std::map<std::string, KindTotal> gemmPlaces;
  for (const lruc_profile_entry *e : trainOps) {
    if (e->flops <= 0)
      continue;
    KindTotal &t = gemmPlaces[*e->location ? e->location : "-"];
    t.seconds += double(e->nanoseconds) * 1e-9 / iters;
    t.flops += e->flops / iters;
    ++t.ops;
  }
  if (!gemmPlaces.empty()) {
    std::printf("\ntrain_step GEMMs by place in the model file:\n");
    for (const auto &[place, t] : gemmPlaces)
      std::printf("  %-36s %5llu %10.1f ms  %.1f GFLOP/s (%.0f%% of sgemm)\n",
                  place.c_str(), (unsigned long long)t.ops, t.seconds * 1e3,
                  t.flops / t.seconds / 1e9,
                  100 * t.flops / t.seconds / 1e9 / sgemmGflops);
  }
  std::sort(trainOps.begin(), trainOps.end(), [](auto *a, auto *b) {
    return a->nanoseconds > b->nanoseconds;
  });
  std::printf("\nslowest train_step ops (per step; #k is profileAdd(k, ...) in "
              "`lruc --profile --emit=cpp`):\n");
  auto printOp = [&](const lruc_profile_entry &e) {
    double sec = double(e.nanoseconds) * 1e-9 / iters;
    double rate = e.flops > 0 ? e.flops / iters / sec / 1e9
                              : e.bytes / iters / sec / 1e9;
    std::printf("  %8.1f ms  %-18s %-6s %7.1f %-7s %s\n", sec * 1e3, e.op,
                ("#" + std::to_string(&e - ops)).c_str(), rate,
                e.flops > 0 ? "GFLOP/s" : "GB/s",
                *e.location ? e.location : "-");
  };
  for (size_t k = 0; k < std::min<size_t>(10, trainOps.size()); ++k)
    printOp(*trainOps[k]);
  // GEMMs lead the list on most models; the slowest of the rest are what
  // fusion and the kernels' own speed change.
  std::printf("\nslowest train_step ops other than GEMMs:\n");
  size_t shown = 0;
  for (const lruc_profile_entry *e : trainOps)
    if (e->flops <= 0 && shown++ < 10)
      printOp(*e);
  return 0;
}
