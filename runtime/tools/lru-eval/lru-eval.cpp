//===- lru-eval.cpp - Evaluate a checkpoint; dump one batch ---------------===//
//
//   lru-eval model.so CHECKPOINT [--split test|val|train] [--data DIR]
//            [--batch N] [--max-eval N] [--threads N] [--device cpu|gpu|auto]
//            [--matmul fp32|tf32|bf16] [--confusion]
//            [--dump-batch FILE.safetensors --batch-index I [--grads]]
//            [--stream I [--stream-every N]]
//
// Prints the loss and accuracy of the checkpoint on a split (eval mode);
// --confusion adds each label's accuracy and the confusion matrix.
// The splits are the run's (lruc/host/TaskData.h): the checkpoint's
// metadata says which task, seed and hold-out it trained with. On a GPU
// (--device, as lru-train's) the batches run one after another on the
// device, and so do --stream's steps (the carry stays on the device);
// --dump-batch runs on the CPU.
//
// --dump-batch writes batch I of the split (examples I·B .. I·B+B-1 in the
// split's order) to a safetensors file: the model inputs by their names,
// the outputs of forward ("loss", "predictions"), and with --grads the
// train-mode loss ("train_loss") and the gradient of every parameter
// ("grad.NAME") from backward, under the dropout key the run's next step
// would use.
//
// --stream feeds example I of the split through the library's step mode,
// one step at a time from a fresh carry, printing the prediction every N
// steps; at the end it compares the streamed predictions with forward on
// the whole example (on the same device) and reports the time per step,
// which on a GPU includes each step's upload and read-back: what a token
// costs an application that streams.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"

#include "lruc/host/Checkpoint.h"
#include "lruc/host/Evaluate.h"
#include "lruc/host/GpuModel.h"
#include "lruc/host/Memory.h"
#include "lruc/host/ModelLibrary.h"
#include "lruc/host/TaskData.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>

namespace fs = std::filesystem;
using namespace lruc;
using namespace lruc::host;
using nlohmann::json;
using tools::UsageError;

namespace {

constexpr const char *kTool = "lru-eval";

data::Split parseSplit(const std::string &name) {
  if (name == "test")
    return data::Split::Test;
  if (name == "val")
    return data::Split::Val;
  if (name == "train")
    return data::Split::Train;
  throw UsageError(
      fmt::format("--split {}: unknown (known: test, val, train)", name));
}

/// "the split has 12 batches of 64: 0 to 11", for an index out of range.
std::string whatTheSplitHas(size_t count, const std::string &things) {
  if (count == 0)
    return "the split is empty";
  return fmt::format("the split has {} {}: 0 to {}", count, things, count - 1);
}

/// Writes inputs, outputs and (optionally) gradients of one batch.
void dumpBatch(const ModelLibrary &library, const Checkpoint &checkpoint,
               const data::Dataset &dataset, int64_t batchSize,
               int64_t batchIndex, bool grads, uint64_t dropoutSeed,
               const fs::path &path, Metadata metadata) {
  const Manifest &m = library.manifest();
  const size_t begin = size_t(batchIndex) * size_t(batchSize);
  if (batchIndex < 0 || begin >= dataset.size())
    throw UsageError(
        fmt::format("--batch-index {}: no such batch ({})", batchIndex,
                    whatTheSplitHas((dataset.size() + size_t(batchSize) - 1) /
                                        size_t(batchSize),
                                    fmt::format("batches of {}", batchSize))));
  const size_t end = std::min(dataset.size(), begin + size_t(batchSize));
  std::vector<size_t> indices(end - begin);
  std::iota(indices.begin(), indices.end(), begin);
  data::Batch batch = data::gather(dataset, indices);
  const auto count = int64_t(indices.size());
  std::vector<const void *> inputs = bindInputs(m, batch);

  std::vector<std::vector<float>> outputs(m.outputs.size());
  std::vector<float *> outputPointers;
  for (size_t o = 0; o < outputs.size(); ++o) {
    outputs[o].resize(outputElements(m.outputs[o], count));
    outputPointers.push_back(outputs[o].data());
  }
  library.forward(count, checkpoint.params.data(), checkpoint.state.data(),
                  inputs.data(), outputPointers.data());

  auto withBatch = [&](std::vector<int64_t> shape) {
    for (int64_t &d : shape)
      if (d < 0)
        d = count;
    return shape;
  };
  std::vector<TensorToWrite> tensors;
  for (size_t i = 0; i < m.inputs.size(); ++i)
    tensors.push_back({m.inputs[i].name, m.inputs[i].dtype,
                       withBatch(m.inputs[i].shape), inputs[i]});
  for (size_t o = 0; o < m.outputs.size(); ++o)
    tensors.push_back({m.outputs[o].name, DType::F32,
                       withBatch(m.outputs[o].shape), outputs[o].data()});

  float trainLoss = 0;
  std::vector<float> gradients;
  if (grads) {
    const int64_t key[2] = {int64_t(dropoutSeed), checkpoint.step + 1};
    gradients.resize(m.paramFloats);
    library.backward(count, checkpoint.params.data(), checkpoint.state.data(),
                     inputs.data(), key, &trainLoss, gradients.data());
    tensors.push_back({"train_loss", DType::F32, {}, &trainLoss});
    for (const ParamInfo &p : m.params)
      tensors.push_back(
          {"grad." + p.name, DType::F32, p.shape, gradients.data() + p.offset});
    metadata["dropout_key"] = fmt::format("[{}, {}]", key[0], key[1]);
  }
  metadata["batch_index"] = std::to_string(batchIndex);
  metadata["examples"] = fmt::format("[{}, {})", begin, end);
  writeFileAtomically(path, encodeSafetensors(tensors, metadata));
}

/// Where --stream runs: forward on one whole example, and step mode on one
/// sequence (host inputs and outputs).
struct StreamRunner {
  std::function<void(const void *const *, float *const *)> forward;
  std::function<void()> reset;
  std::function<void(const void *const *, float *const *)> step;
};

StreamRunner cpuStreamRunner(const ModelLibrary &library,
                             const Checkpoint &checkpoint,
                             std::vector<float> &carry) {
  carry.assign(library.manifest().step->carryFloats, 0.0f);
  return {[&](const void *const *in, float *const *out) {
            library.forward(1, checkpoint.params.data(),
                            checkpoint.state.data(), in, out);
          },
          [&] { library.stepReset(1, carry.data()); },
          [&](const void *const *in, float *const *out) {
            library.step(1, checkpoint.params.data(), checkpoint.state.data(),
                         carry.data(), in, out);
          }};
}

/// `gpu` evaluates the checkpoint's blocks (evaluateCheckpoint).
StreamRunner gpuStreamRunner(GpuModel &gpu) {
  return {[&](const void *const *in, float *const *out) {
            gpu.forward(1, in, out);
          },
          [&] { gpu.stepReset(1); },
          [&](const void *const *in, float *const *out) {
            gpu.step(1, in, out);
          }};
}

/// Streams example `index` of `dataset` through step mode (see the header).
void streamExample(const ModelLibrary &library, const StreamRunner &runner,
                   const data::Dataset &dataset, int64_t index,
                   std::optional<int64_t> every) {
  const Manifest &m = library.manifest();
  if (index < 0 || size_t(index) >= dataset.size())
    throw UsageError(fmt::format("--stream {}: no such example ({})", index,
                                 whatTheSplitHas(dataset.size(), "examples")));
  data::Batch batch = data::gather(dataset, {size_t(index)});
  std::vector<const void *> inputs = bindInputs(m, batch);
  const int64_t steps = batch.lengths.empty() ? batch.length
                                              : batch.lengths[0];

  // Each step input is the same-named sequence input at step t.
  struct Source {
    const char *base;
    size_t stepBytes;
  };
  std::vector<Source> sources;
  for (const TensorInfo &in : m.step->inputs) {
    const TensorInfo *whole = m.findInput(in.name);
    if (!whole || whole->shape.size() < 2)
      throw HostError(fmt::format("{}: step input '{}' has no sequence input",
                                  library.path().string(), in.name));
    size_t width = dtypeSize(whole->dtype);
    for (size_t d = 2; d < whole->shape.size(); ++d)
      width *= size_t(whole->shape[d]);
    sources.push_back(
        {static_cast<const char *>(inputs[size_t(whole - m.inputs.data())]),
         width});
  }
  const TensorInfo &out = m.step->outputs.at(0);
  const size_t outSize = outputElements(out, 1);
  const bool perStep = out.shape.size() == 3;
  std::vector<float> predictions(outSize);
  std::vector<float> streamed; // per step (perStep) or the last step's
  runner.reset();

  // Forward on the whole example, the reference for the streamed outputs.
  std::vector<std::vector<float>> whole(m.outputs.size());
  std::vector<float *> wholePointers;
  for (size_t o = 0; o < whole.size(); ++o) {
    whole[o].resize(outputElements(m.outputs[o], 1));
    wholePointers.push_back(whole[o].data());
  }
  auto t0 = std::chrono::steady_clock::now();
  runner.forward(inputs.data(), wholePointers.data());
  const double forwardMs = std::chrono::duration<double, std::milli>(
                               std::chrono::steady_clock::now() - t0)
                               .count();

  const int64_t printEvery = std::max<int64_t>(1, every.value_or((steps + 7) / 8));
  const int64_t classes = int64_t(outSize);
  // A classifier's answer is its class (a class a step: this step's, with
  // its label); a regression's its values.
  const bool classPerExample =
      !perStep && dataset.supervision == data::Supervision::Labels;
  const bool classPerStep =
      perStep && dataset.supervision == data::Supervision::StepLabels;
  auto values = [](const std::vector<float> &v) {
    return fmt::format("{:.4f}", fmt::join(v, " "));
  };
  double stepSeconds = 0;
  std::vector<const void *> stepInputs(sources.size());
  float *outputs[] = {predictions.data()};
  for (int64_t t = 0; t < steps; ++t) {
    for (size_t i = 0; i < sources.size(); ++i)
      stepInputs[i] = sources[i].base + size_t(t) * sources[i].stepBytes;
    auto s0 = std::chrono::steady_clock::now();
    runner.step(stepInputs.data(), outputs);
    stepSeconds += std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - s0)
                       .count();
    if (perStep)
      streamed.insert(streamed.end(), predictions.begin(), predictions.end());
    if ((t + 1) % printEvery == 0 || t + 1 == steps) {
      if (classPerExample)
        std::printf("%s: step %lld: class %lld\n", kTool, (long long)(t + 1),
                    (long long)argmax(predictions.data(), classes));
      else if (classPerStep)
        std::printf("%s: step %lld: class %lld, label %d\n", kTool,
                    (long long)(t + 1),
                    (long long)argmax(predictions.data(), classes),
                    batch.stepLabels[size_t(t)]);
      else
        std::printf("%s: step %lld: predictions %s\n", kTool,
                    (long long)(t + 1), values(predictions).c_str());
    }
  }
  if (!perStep)
    streamed = predictions;

  // The streamed predictions against forward's on the whole example.
  const std::vector<float> &reference = whole[1];
  const size_t width = perStep ? outSize : reference.size();
  double maxDiff = 0, scale = 1;
  for (size_t k = 0; k < streamed.size(); ++k) {
    size_t t = k / width, j = k % width;
    size_t at = perStep ? t * width + j : k;
    maxDiff = std::max(maxDiff, double(std::abs(streamed[k] - reference[at])));
    scale = std::max(scale, double(std::abs(reference[at])));
  }
  if (classPerExample && !batch.labels.empty())
    std::printf("%s: label %d, streamed prediction %lld, forward's %lld\n",
                kTool, batch.labels[0],
                (long long)argmax(streamed.data(), classes),
                (long long)argmax(reference.data(), classes));
  else if (!perStep && dataset.supervision == data::Supervision::Targets)
    std::printf("%s: targets %s, streamed predictions %s, forward's %s\n",
                kTool, values(batch.targets).c_str(), values(streamed).c_str(),
                values(reference).c_str());
  std::printf("%s: streamed %lld steps in %.2f ms (%.1f us per step); "
              "forward on the whole example %.2f ms; largest difference "
              "from forward's predictions %.2g\n",
              kTool, (long long)steps, 1e3 * stepSeconds,
              1e6 * stepSeconds / double(std::max<int64_t>(steps, 1)),
              forwardMs, maxDiff);
  if (!(maxDiff <= 1e-3 * scale))
    throw HostError(fmt::format(
        "the streamed predictions differ from forward's by {:.3g}: a "
        "compiler bug; please report it with the model file",
        maxDiff));
}

/// Classes past this many get their accuracy but no matrix columns.
constexpr int64_t kConfusionColumns = 20;

void printResult(const std::string &what, int64_t step, const EvalResult &r,
                 bool confusion) {
  std::string accuracy =
      targetErrors(r.squaredError, r.absoluteError, r.scored);
  if (r.classes > 0)
    accuracy =
        std::isnan(r.accuracy)
            ? ", no step scored"
            : fmt::format(", accuracy {:.2f}%{}", 100 * r.accuracy,
                          r.perStep ? fmt::format(" of {} steps", r.scored)
                                    : "");
  std::printf("%s: %s, step %lld: loss %.4f%s (%lld examples)\n", kTool,
              what.c_str(), (long long)step, r.loss, accuracy.c_str(),
              (long long)r.examples);
  if (!confusion || r.classes == 0)
    return;
  const int64_t k = r.classes;
  const bool matrix = k <= kConfusionColumns;
  std::string header =
      r.perStep ? "  label     steps  accuracy" : "  label  examples  accuracy";
  if (matrix) {
    header += "  | predicted:";
    for (int64_t c = 0; c < k; ++c)
      header += fmt::format(" {:>6}", c);
  }
  std::printf("%s\n", header.c_str());
  for (int64_t label = 0; label < k; ++label) {
    const int64_t *row = r.confusion.data() + label * k;
    int64_t examples = 0;
    for (int64_t c = 0; c < k; ++c)
      examples += row[c];
    std::string line = fmt::format(
        "  {:>5}  {:>8}  {:>8}", label, examples,
        examples ? fmt::format("{:.2f}%",
                               100.0 * double(row[label]) / double(examples))
                 : "-");
    if (matrix) {
      line += "  |           ";
      for (int64_t c = 0; c < k; ++c)
        line += fmt::format(" {:>6}", row[c]);
    }
    std::printf("%s\n", line.c_str());
  }
}

int evalMain(int argc, char **argv) {
  std::optional<std::string> splitName, dataRoot, task, dump;
  tools::DeviceFlags devices;
  std::optional<int64_t> batchFlag, maxEval, threadsFlag, batchIndex,
      streamIndex, streamEvery;
  bool grads = false, confusion = false;
  tools::CommandLine cl(kTool, "model.so CHECKPOINT [options]");
  cl.flag("split", &splitName, "NAME", "test (default), val or train");
  cl.flag("data", &dataRoot, "DIR", "where the task's data is (default: the run's)");
  cl.flag("task", &task, "NAME", "the task (default: the run's)");
  cl.flag("batch", &batchFlag, "N", "examples per forward call (default: the run's batch)");
  cl.flag("max-eval", &maxEval, "N", "evaluate only the first N examples");
  cl.flag("threads", &threadsFlag, "N", "CPU threads (default: all cores)");
  devices.declare(cl, "; --dump-batch runs on the CPU");
  cl.flag("dump-batch", &dump, "FILE", "write one batch's inputs and outputs to FILE (safetensors)");
  cl.flag("batch-index", &batchIndex, "I", "the batch --dump-batch writes (default 0)");
  cl.flag("grads", &grads, "with --dump-batch: also the parameter gradients (backward, train mode)");
  cl.flag("confusion", &confusion,
          "also each label's accuracy and, up to 20 classes, which class "
          "its examples were predicted as");
  cl.flag("stream", &streamIndex, "I", "feed example I of the split through the step mode, one step at a time");
  cl.flag("stream-every", &streamEvery, "N", "with --stream: print the prediction every N steps (default: 8 times in all)");
  std::vector<std::string> positional = cl.parse(argc, argv);
  if (positional.size() != 2)
    throw UsageError("expected a model library and a checkpoint (lru-eval "
                     "model.so CHECKPOINT)");
  for (auto [value, name] : {std::pair{&batchFlag, "batch"},
                             {&maxEval, "max-eval"},
                             {&threadsFlag, "threads"}})
    if (*value && **value <= 0)
      throw UsageError(fmt::format("--{} must be positive", name));
  if ((batchIndex || grads) && !dump)
    throw UsageError("--batch-index and --grads go with --dump-batch FILE");
  devices.check();
  if (streamEvery && !streamIndex)
    throw UsageError("--stream-every goes with --stream I");
  if (streamEvery && *streamEvery <= 0)
    throw UsageError("--stream-every must be positive");
  if (confusion && (dump || streamIndex))
    throw UsageError("--confusion goes with an evaluation, not --dump-batch "
                     "or --stream");
  if (streamIndex && dump)
    throw UsageError("--stream and --dump-batch are separate commands; "
                     "give one");
  const data::Split split = parseSplit(splitName.value_or("test"));
  const int threads = tools::threadsOrAllCores(threadsFlag);

  keepFreedMemoryForReuse();
  ModelLibrary library = ModelLibrary::open(positional[0]);
  const Manifest &m = library.manifest();
  Checkpoint checkpoint =
      loadCheckpoint(positional[1], m, OptimizerState::Optional);

  // The run's settings (lru-train writes them into every checkpoint), then
  // the manifest's, then the flags.
  json run = json::object();
  if (auto it = checkpoint.metadata.find("train"); it != checkpoint.metadata.end())
    run = json::parse(it->second, nullptr, false);
  if (!run.is_object())
    run = json::object();
  TrainSettings base = m.train.value_or(TrainSettings{});
  DataOptions options;
  int64_t batch = 0;
  uint64_t dropoutSeed = 0;
  try {
    options.task = task.value_or(run.value("task", base.task));
    options.root = dataRoot.value_or(run.value("data", base.dataPath));
    options.seed = run.value("seed", base.seed);
    options.valFraction = run.value("val_fraction", 0.1);
    if (run.contains("max_train") && run["max_train"].is_number_integer())
      options.maxTrain = run["max_train"].get<int64_t>();
    batch = batchFlag.value_or(run.value("batch", base.batch));
    dropoutSeed = run.value("dropout_seed", base.dropoutSeed);
  } catch (const json::exception &e) {
    throw HostError(fmt::format("{}: metadata \"train\": {}", positional[1],
                                e.what()));
  }
  if (options.task.empty())
    throw UsageError(fmt::format(
        "{} names no task: pass --task NAME and --data DIR", positional[0]));
  if (batch <= 0)
    throw HostError(fmt::format("{}: the run's batch ({}) is not positive; "
                                "pass --batch N",
                                positional[1], batch));
  options.length = modelSequenceLength(m);
  options.maxEval = maxEval;
  options.warn = [](const std::string &message) {
    std::fprintf(stderr, "%s: warning: %s\n", kTool, message.c_str());
  };

  TaskData data(options);
  const data::Dataset &dataset = data.split(split);
  const std::string what =
      fmt::format("{} ({})", options.task, data::splitName(split));
  checkModelFitsData(library.manifest(), library.path().string(), dataset, what);

  if (dump) {
    Metadata metadata = {{"model", m.model},
                         {"checkpoint", positional[1]},
                         {"step", std::to_string(checkpoint.step)},
                         {"split", std::string(data::splitName(split))}};
    dumpBatch(library, checkpoint, dataset, batch, batchIndex.value_or(0),
              grads, dropoutSeed, *dump, metadata);
    std::printf("%s: wrote batch %lld of %s to %s\n", kTool,
                (long long)batchIndex.value_or(0), what.c_str(), dump->c_str());
    return 0;
  }
  if (streamIndex && !m.step)
    throw HostError(fmt::format("{}: no step mode: {}",
                                library.path().string(), m.stepUnavailable));
  std::unique_ptr<GpuModel> gpu =
      GpuModel::openForDevice(library, devices.deviceOrAuto(), kTool,
                              matmulNamed(devices.matmulOrFp32()));
  if (gpu) {
    gpu->reserve(streamIndex ? 1 : batch);
    gpu->evaluateCheckpoint(checkpoint);
  }
  if (streamIndex) {
    std::vector<float> carry;
    streamExample(library,
                  gpu ? gpuStreamRunner(*gpu)
                      : cpuStreamRunner(library, checkpoint, carry),
                  dataset, *streamIndex, streamEvery);
    return 0;
  }
  if (gpu) {
    EvalResult r = evaluate(
        m,
        [&](int64_t count, const void *const *inputs, float *const *outputs) {
          gpu->forward(count, inputs, outputs);
        },
        dataset, batch);
    printResult(what, checkpoint.step, r, confusion);
    return 0;
  }
  // Batches in parallel, each on one thread, as many as their workspaces
  // fit in memory; one batch at a time on the threads.
  std::string why;
  const EvaluationThreads plan =
      evaluationThreads(int64_t(dataset.size()), m, "forward", batch, threads,
                        memoryBudget(), why);
  if (!why.empty())
    std::fprintf(stderr,
                 "%s: warning: %s (a smaller --batch runs more at once)\n",
                 kTool, why.c_str());
  useKernelThreads(library, plan.kernelThreads);
  EvalResult r = evaluate(library, checkpoint.params.data(),
                          checkpoint.state.data(), dataset, batch, plan.calls);
  printResult(what, checkpoint.step, r, confusion);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return tools::runTool(kTool, evalMain, argc, argv);
}
