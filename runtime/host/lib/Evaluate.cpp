//===- Evaluate.cpp - Feed data batches to a model library ----------------===//

#include "lruc/host/Evaluate.h"

#include "lruc/core/Bytes.h"
#include "lruc/host/Memory.h"
#include "lruc/host/Safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>

namespace lruc::host {

namespace {

using data::InputKind;

/// The batch vector behind model input `name` (nullptr: none) and its
/// expected shape past the batch dim.
struct Source {
  bool found = false;
  const void *data = nullptr;
  DType dtype = DType::I32;
  std::vector<int64_t> dims;
};

Source sourceOf(const std::string &name, const data::Batch &batch) {
  const int64_t L = batch.length, C = batch.channels;
  auto ints = [](const std::vector<int32_t> &v, std::vector<int64_t> dims) {
    return Source{true, v.data(), DType::I32, std::move(dims)};
  };
  switch (batch.supervision) {
  case data::Supervision::Labels:
    if (name == "labels")
      return ints(batch.labels, {});
    break;
  case data::Supervision::StepLabels:
    if (name == "labels")
      return ints(batch.stepLabels, {L});
    break;
  case data::Supervision::Targets:
    if (name == "targets")
      return {true, batch.targets.data(), DType::F32, batch.targetShape};
    break;
  }
  switch (batch.kind) {
  case InputKind::Features:
    if (name == "features")
      return {true, batch.features.data(), DType::F32, {L, C}};
    if (name == "lengths")
      return ints(batch.lengths, {});
    break;
  case InputKind::Tokens:
    if (name == "tokens")
      return ints(batch.tokens, {L});
    if (name == "lengths")
      return ints(batch.lengths, {});
    break;
  case InputKind::TokenPairs:
    if (name == "tokens_a")
      return ints(batch.tokens, {L});
    if (name == "lengths_a")
      return ints(batch.lengths, {});
    if (name == "tokens_b")
      return ints(batch.tokensB, {L});
    if (name == "lengths_b")
      return ints(batch.lengthsB, {});
    break;
  }
  return {};
}

std::string_view kindName(InputKind kind) {
  switch (kind) {
  case InputKind::Features:
    return "features";
  case InputKind::Tokens:
    return "tokens";
  case InputKind::TokenPairs:
    return "token pairs";
  }
  return "?";
}

} // namespace

void checkModelFitsData(const Manifest &m, const std::string &lib,
                        const data::Dataset &dataset, const std::string &what) {
  data::Batch shape;
  shape.kind = dataset.kind;
  shape.length = dataset.length;
  shape.channels = dataset.channels;
  shape.supervision = dataset.supervision;
  shape.targetShape = dataset.targetShape;
  for (const TensorInfo &input : m.inputs) {
    Source source = sourceOf(input.name, shape);
    if (input.shape.empty() || input.shape[0] != -1)
      throw HostError(fmt::format(
          "{}: input {} has no batch dimension", lib, input.name));
    if (!source.found)
      throw HostError(fmt::format(
          "{}: the model reads input \"{}\", which {} ({} data) does not "
          "provide",
          lib, input.name, what, kindName(dataset.kind)));
    std::vector<int64_t> dims(input.shape.begin() + 1, input.shape.end());
    if (dims != source.dims || input.dtype != source.dtype)
      throw HostError(fmt::format(
          "{}: input \"{}\" is {} [B{}{}]; {} gives {} [B{}{}]", lib,
          input.name, dtypeName(input.dtype), dims.empty() ? "" : ", ",
          fmt::join(dims, ", "), what, dtypeName(source.dtype),
          source.dims.empty() ? "" : ", ", fmt::join(source.dims, ", ")));
  }
  const char *supervision =
      dataset.supervision == data::Supervision::Targets ? "targets" : "labels";
  if (!m.findInput(supervision))
    throw HostError(
        fmt::format("{}: the model's loss reads no \"{}\"; {} gives {}", lib,
                    supervision, what,
                    dataset.supervision == data::Supervision::Targets
                        ? "real targets (loss mse)"
                        : "class labels (loss cross_entropy)"));
  const TensorInfo &predictions = m.outputs[1];
  if (dataset.supervision != data::Supervision::Targets &&
      predictions.shape.back() < dataset.classes)
    throw HostError(fmt::format(
        "{}: predictions are {}; {} has {} classes", lib,
        shapeString(predictions.shape), what, dataset.classes));
}

std::vector<const void *> bindInputs(const Manifest &manifest,
                                     const data::Batch &batch) {
  std::vector<const void *> pointers;
  for (const TensorInfo &input : manifest.inputs)
    pointers.push_back(sourceOf(input.name, batch).data);
  return pointers;
}

size_t inputBytes(const TensorInfo &input, int64_t batch) {
  return outputElements(input, batch) * dtypeSize(input.dtype);
}

size_t outputElements(const TensorInfo &output, int64_t batch) {
  size_t n = 1;
  for (int64_t d : output.shape)
    n *= size_t(d < 0 ? batch : d);
  return n;
}

int64_t argmax(const float *values, int64_t count) {
  int64_t best = -1;
  for (int64_t k = 0; k < count; ++k)
    if (!std::isnan(values[k]) && (best < 0 || values[k] > values[best]))
      best = k;
  return best;
}

int64_t countCorrect(const float *predictions, int64_t classes,
                     const int32_t *labels, int64_t count) {
  int64_t hits = 0;
  for (int64_t k = 0; k < count; ++k)
    hits += argmax(predictions + k * classes, classes) == labels[k];
  return hits;
}

int64_t scoredSteps(const int32_t *lengths, const int32_t *stepLabels,
                    int64_t count, int64_t steps) {
  int64_t scored = 0;
  for (int64_t k = 0; k < count; ++k)
    for (int64_t t = 0; t < lengths[k]; ++t)
      scored += !stepLabels || stepLabels[k * steps + t] >= 0;
  return scored;
}

double classWeightSum(const std::vector<float> &classWeights,
                      const int32_t *labels, int64_t count,
                      const int32_t *lengths, int64_t steps) {
  double sum = 0;
  auto add = [&](int32_t label) {
    if (label >= 0 && size_t(label) < classWeights.size())
      sum += double(classWeights[size_t(label)]);
  };
  for (int64_t k = 0; k < count; ++k) {
    if (!lengths)
      add(labels[k]);
    for (int64_t t = 0; lengths && t < lengths[k]; ++t)
      add(labels[k * steps + t]);
  }
  return sum;
}

int64_t scoredTargets(const float *targets, int64_t count, int64_t values,
                      const int32_t *lengths, int64_t steps,
                      const float *predictions, TargetErrorSums *sums) {
  const int64_t width = lengths ? values / steps : 0;
  int64_t scored = 0;
  TargetErrorSums errors;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t row = k * values;
    const int64_t real = lengths ? lengths[k] * width : values;
    for (int64_t v = row; v < row + real; ++v) {
      if (std::isnan(targets[v]))
        continue;
      ++scored;
      if (predictions) {
        const double d = double(predictions[v]) - double(targets[v]);
        errors.absolute += std::abs(d);
        errors.squared += d * d;
      }
    }
  }
  if (sums) {
    sums->absolute += errors.absolute;
    sums->squared += errors.squared;
  }
  return scored;
}

std::string targetErrors(double meanSquared, double meanAbsolute,
                         int64_t scored) {
  if (scored == 0)
    return ", no value scored";
  return fmt::format(", RMSE {:.4f}, MAE {:.4f} of {} values",
                     std::sqrt(meanSquared), meanAbsolute, scored);
}

Hits countHits(const float *predictions, int64_t classes,
               const data::Batch &batch, int64_t *confusion) {
  Hits h;
  auto score = [&](const float *row, int64_t label) {
    const int64_t predicted = argmax(row, classes);
    ++h.total;
    h.hits += predicted == label;
    if (confusion && predicted >= 0 && label >= 0 && label < classes)
      ++confusion[label * classes + predicted];
  };
  const int64_t L = batch.length;
  switch (batch.supervision) {
  case data::Supervision::Labels:
    for (int64_t k = 0; k < batch.size; ++k)
      score(predictions + k * classes, batch.labels[size_t(k)]);
    break;
  case data::Supervision::StepLabels:
    for (int64_t k = 0; k < batch.size; ++k)
      for (int64_t t = 0; t < batch.lengths[size_t(k)]; ++t)
        if (const int32_t label = batch.stepLabels[size_t(k * L + t)];
            label >= 0)
          score(predictions + (k * L + t) * classes, label);
    break;
  case data::Supervision::Targets:
    break;
  }
  return h;
}

float *const *OutputBuffers::resize(int64_t batch) {
  for (size_t o = 0; o < values_.size(); ++o) {
    values_[o].resize(outputElements(manifest_->outputs[o], batch));
    pointers_[o] = values_[o].data();
  }
  return pointers_.data();
}

EvalResult evaluate(const ModelLibrary &library, const float *params,
                    const float *state, const data::Dataset &dataset,
                    int64_t batch, int threads) {
  return evaluate(
      library.manifest(),
      [&](int64_t count, const void *const *inputs, float *const *outputs) {
        library.forward(count, params, state, inputs, outputs);
      },
      dataset, batch, threads);
}

int batchesSideBySide(const Manifest &manifest, std::string_view function,
                      int64_t batch, int threads, const MemoryBudget &budget,
                      std::string &why) {
  std::optional<uint64_t> each = manifest.workspaceBytes(function, batch);
  const int calls = callsThatFit(
      threads, each ? *each + budget.besideEachCall : each, budget.available);
  why.clear();
  if (calls < threads)
    why = fmt::format(
        "{} batch{} at a time, not {}: a batch of {} takes {} of workspace{} "
        "and {} of memory is available",
        calls, calls == 1 ? "" : "es", threads, batch,
        core::formatBytes(double(*each)),
        budget.besideEachCall
            ? fmt::format(" (and {} for its thread and OpenBLAS's buffer "
                          "under the address-space limit)",
                          core::formatBytes(double(budget.besideEachCall)))
            : std::string(),
        core::formatBytes(double(*budget.available)));
  return calls;
}

EvaluationThreads evaluationThreads(int64_t examples, const Manifest &manifest,
                                    std::string_view function, int64_t batch,
                                    int threads, const MemoryBudget &budget,
                                    std::string &why) {
  examples = std::max<int64_t>(examples, 1);
  const int64_t callBatch = std::clamp<int64_t>(batch, 1, examples);
  const int64_t batches = (examples + callBatch - 1) / callBatch;
  EvaluationThreads plan;
  plan.calls =
      batchesSideBySide(manifest, function, callBatch,
                        int(std::min<int64_t>(threads, batches)), budget, why);
  if (plan.calls > 1)
    return plan;
  const std::optional<uint64_t> workspace =
      manifest.workspaceBytes(function, callBatch);
  plan.kernelThreads = std::max(threads, 1);
  if (budget.besideEachCall && budget.available && workspace)
    plan.kernelThreads = callsThatFit(
        plan.kernelThreads, budget.besideEachCall,
        *budget.available > *workspace ? *budget.available - *workspace : 0);
  return plan;
}

void forEachBatch(
    size_t examples, int64_t batch, int threads,
    const std::function<void(size_t begin, size_t end, int worker)> &work) {
  batch = std::max<int64_t>(batch, 1);
  const size_t numBatches = (examples + size_t(batch) - 1) / size_t(batch);
  if (numBatches == 0)
    return;
  std::mutex mutex;
  std::exception_ptr failure; // the first, under mutex
  size_t next = 0;            // the next batch to take, under mutex
  auto worker = [&](int id) {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (failure || next == numBatches)
          return;
        i = next++;
      }
      try {
        const size_t begin = i * size_t(batch);
        work(begin, std::min(examples, begin + size_t(batch)), id);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure)
          failure = std::current_exception();
        return;
      }
    }
  };
  threads = std::clamp<int>(threads, 1, int(numBatches));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back(worker, t);
  worker(0);
  for (std::thread &t : pool)
    t.join();
  if (failure)
    std::rethrow_exception(failure);
}

double lossWeight(const Manifest &manifest, int64_t count,
                  const void *const *inputs) {
  auto input = [&](std::string_view name) -> const void * {
    const TensorInfo *info = manifest.findInput(name);
    return info ? inputs[info - manifest.inputs.data()] : nullptr;
  };
  const TensorInfo &predictions = manifest.outputs.at(1);
  const bool perStep = predictions.shape.size() == 3;
  const int64_t steps = perStep ? predictions.shape[1] : 0;
  // A per-step model's sequence lengths: its only `lengths` input.
  const auto *lengths =
      perStep ? static_cast<const int32_t *>(input("lengths")) : nullptr;
  if (perStep && !lengths)
    throw HostError("a model with per-step predictions has no \"lengths\" "
                    "input");
  if (const TensorInfo *targets = manifest.findInput("targets"))
    return double(scoredTargets(
        static_cast<const float *>(input("targets")), count,
        int64_t(outputElements(*targets, 1)), lengths, steps));
  const auto *labels = static_cast<const int32_t *>(input("labels"));
  if (!labels)
    return double(count);
  if (!manifest.classWeights.empty())
    return classWeightSum(manifest.classWeights, labels, count, lengths,
                          steps);
  return perStep ? double(scoredSteps(lengths, labels, count, steps))
                 : double(count);
}

double meanOverBatches(const std::vector<double> &weightedLosses,
                       const std::vector<double> &weights) {
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  return total > 0 ? std::accumulate(weightedLosses.begin(),
                                     weightedLosses.end(), 0.0) /
                         total
                   : 0.0;
}

int useKernelThreads(const ModelLibrary &library, int threads) {
  threads = std::max(threads, 1);
  if (auto set = reinterpret_cast<void (*)(int)>(
          library.findSymbol("lruc_cpu_set_threads")))
    set(threads);
  // The kernels split their products themselves (and at one thread,
  // OpenBLAS's threads would contend with the other calls').
  if (auto set = reinterpret_cast<void (*)(int)>(
          library.findSymbol("openblas_set_num_threads")))
    set(1);
  auto get =
      reinterpret_cast<int (*)()>(library.findSymbol("lruc_cpu_threads"));
  return get ? get() : threads;
}

EvalResult evaluate(const Manifest &manifest, const ForwardFn &forward,
                    const data::Dataset &dataset, int64_t batch, int threads) {
  EvalResult result;
  const size_t n = dataset.size();
  if (n == 0)
    return result;
  batch = std::max<int64_t>(batch, 1);
  const size_t numBatches = (n + size_t(batch) - 1) / size_t(batch);
  const TensorInfo &predictions = manifest.outputs[1];
  const bool perStep = predictions.shape.size() == 3;
  const int64_t classes = dataset.supervision == data::Supervision::Targets
                              ? 0
                              : predictions.shape.back();
  // A batch's loss is a mean over its examples or, per step, over its real
  // (scored) steps, or over its scored targets: each is weighed by how many
  // it averaged (with class weights, by the sum of its labels' weights).
  std::vector<double> lossSums(numBatches, 0.0), weights(numBatches, 0.0);
  std::vector<TargetErrorSums> errors(numBatches);

  threads = std::clamp<int>(threads, 1, int(numBatches));
  const auto workers = size_t(threads);
  // Counts add up in any order: one set a worker.
  std::vector<std::vector<int64_t>> confusion(
      workers, std::vector<int64_t>(size_t(classes * classes), 0));
  std::vector<Hits> hits(workers);
  std::vector<data::Batch> batches(workers);
  std::vector<OutputBuffers> outputs(workers, OutputBuffers{manifest});
  std::vector<std::vector<size_t>> indices(workers);
  forEachBatch(n, batch, threads, [&](size_t begin, size_t end, int worker) {
    data::Batch &b = batches[size_t(worker)];
    std::vector<size_t> &rows = indices[size_t(worker)];
    rows.resize(end - begin);
    std::iota(rows.begin(), rows.end(), begin);
    data::gather(dataset, rows.data(), rows.size(), b);
    const auto count = int64_t(rows.size());
    auto inputs = bindInputs(manifest, b);
    OutputBuffers &out = outputs[size_t(worker)];
    forward(count, inputs.data(), out.resize(count));
    const size_t i = begin / size_t(batch);
    weights[i] = lossWeight(manifest, count, inputs.data());
    if (dataset.supervision == data::Supervision::Targets)
      scoredTargets(b.targets.data(), count,
                    int64_t(b.targets.size()) / count,
                    perStep ? b.lengths.data() : nullptr, b.length,
                    out.predictions(), &errors[i]);
    lossSums[i] = double(out.loss()) * weights[i];
    if (classes > 0) {
      Hits h = countHits(out.predictions(), classes, b,
                         confusion[size_t(worker)].data());
      hits[size_t(worker)].hits += h.hits;
      hits[size_t(worker)].total += h.total;
    }
  });

  result.examples = int64_t(n);
  result.loss = meanOverBatches(lossSums, weights);
  result.classes = classes;
  result.perStep = dataset.supervision == data::Supervision::StepLabels;
  result.accuracy = std::numeric_limits<double>::quiet_NaN();
  result.absoluteError = result.squaredError =
      std::numeric_limits<double>::quiet_NaN();
  if (dataset.supervision == data::Supervision::Targets) {
    const double scored = std::accumulate(weights.begin(), weights.end(), 0.0);
    result.scored = int64_t(scored);
    TargetErrorSums all; // in batch order, whatever the threads
    for (const TargetErrorSums &e : errors) {
      all.absolute += e.absolute;
      all.squared += e.squared;
    }
    if (scored > 0) {
      result.absoluteError = all.absolute / scored;
      result.squaredError = all.squared / scored;
    }
  }
  if (classes == 0)
    return result;
  result.confusion = std::move(confusion[0]);
  for (size_t w = 1; w < workers; ++w)
    for (size_t k = 0; k < result.confusion.size(); ++k)
      result.confusion[k] += confusion[w][k];
  Hits all;
  for (const Hits &h : hits) {
    all.hits += h.hits;
    all.total += h.total;
  }
  result.scored = all.total;
  if (all.total > 0) // else none scored (every step label negative): NaN
    result.accuracy = double(all.hits) / double(all.total);
  return result;
}

} // namespace lruc::host
