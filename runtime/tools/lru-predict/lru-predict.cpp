//===- lru-predict.cpp - A checkpoint's predictions for inputs in a file --===//
//
//   lru-predict model.so CHECKPOINT INPUTS.safetensors -o OUT.safetensors
//               [--stream [--carry-in FILE] [--carry-out FILE]]
//               [--batch N] [--threads N]
//               [--device cpu|gpu|auto] [--matmul fp32|tf32|bf16]
//
// Runs the checkpoint in eval mode (running statistics, no dropout) on the
// examples of INPUTS, a safetensors file holding one tensor per model input
// under the input's name (lruc/host/ModelInputs.h: what may be left out);
// without the loss's input, the file written has no loss.
//
// Writes OUT (atomically): `predictions` [n, ...] (per step: NaN past each
// sequence's end) and, with the loss's
// input, `loss` (the mean over the examples, or for per-step predictions
// over their real, scored steps, or over the targets not NaN, as a batch's
// loss is); its metadata names the
// model, the checkpoint and its step. Prints what it did; with `labels`, the
// accuracy too.
//
// --stream runs step mode instead, each batch from a fresh carry:
// `predictions` [n, L, ...] after every step, NaN past each sequence's
// end, no loss. --carry-out writes where each stream stands after its last
// step (a carry file, lruc/host/StreamCarries.h), from which --carry-in
// continues it: a stream fed in pieces, one inputs file each, gives the
// predictions of the whole.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"

#include "lruc/host/Checkpoint.h"
#include "lruc/host/Evaluate.h"
#include "lruc/host/GpuModel.h"
#include "lruc/host/Memory.h"
#include "lruc/host/ModelInputs.h"
#include "lruc/host/ModelLibrary.h"
#include "lruc/host/Progress.h"
#include "lruc/host/Safetensors.h"
#include "lruc/host/StreamCarries.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>

namespace fs = std::filesystem;
using namespace lruc;
using namespace lruc::host;
using tools::UsageError;

namespace {

constexpr const char *kTool = "lru-predict";

/// Where the calls run: the checkpoint on the CPU library (a carry per
/// worker thread) or on a GPU (one batch at a time).
struct Runner {
  const ModelLibrary &library;
  const Checkpoint &checkpoint;
  GpuModel *gpu;
  /// Per worker: the CPU's carry blocks; on a GPU, worker 0's copy of
  /// the device's when it goes in or out.
  std::vector<std::vector<float>> carries;

  void forward(int64_t count, const void *const *inputs,
               float *const *outputs) {
    if (gpu)
      return gpu->forward(count, inputs, outputs);
    library.forward(count, checkpoint.params.data(), checkpoint.state.data(),
                    inputs, outputs);
  }
  /// Starts `count` streams: fresh, or (with `from`) where rows [begin,
  /// begin + count) of `from` stand.
  void stepStart(int64_t count, int worker, const StreamCarries *from,
                 int64_t begin) {
    std::vector<float> &carry = carries[size_t(worker)];
    if (from) {
      carry.assign(size_t(count) * library.manifest().step->carryFloats, 0);
      from->toBlock(begin, count, carry.data());
      if (gpu)
        gpu->stepSetCarry(count, carry.data());
      return;
    }
    if (gpu)
      return gpu->stepReset(count);
    carry.resize(size_t(count) * library.manifest().step->carryFloats);
    library.stepReset(count, carry.data());
  }
  /// The carry block of the worker's `count` streams, in host memory.
  const float *carryNow(int64_t count, int worker) {
    std::vector<float> &carry = carries[size_t(worker)];
    if (gpu) {
      carry.resize(size_t(count) * library.manifest().step->carryFloats);
      gpu->stepCarry(carry.data());
    }
    return carry.data();
  }
  void step(int64_t count, int worker, const void *const *inputs,
            float *const *outputs) {
    if (gpu)
      return gpu->step(count, inputs, outputs);
    library.step(count, checkpoint.params.data(), checkpoint.state.data(),
                 carries[size_t(worker)].data(), inputs, outputs);
  }
};

/// On a terminal, "lru-predict: 1234/50000 examples, 0:42 left", redrawn
/// at most twice a second as batches finish; nothing in a log.
class ExampleProgress {
public:
  explicit ExampleProgress(int64_t total)
      : total_(total), terminal_(isatty(STDERR_FILENO)) {}
  ExampleProgress(const ExampleProgress &) = delete;
  ExampleProgress &operator=(const ExampleProgress &) = delete;
  ~ExampleProgress() {
    if (shown_)
      std::fprintf(stderr, "\r\033[K");
  }

  void batchDone(int64_t examples) {
    if (!terminal_)
      return;
    std::lock_guard<std::mutex> lock(mutex_);
    done_ += examples;
    const auto now = Clock::now();
    if (now - shownAt_ < std::chrono::milliseconds(500))
      return;
    shownAt_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    std::fprintf(
        stderr, "\r%s: %lld/%lld examples, %s left\033[K", kTool,
        (long long)done_, (long long)total_,
        formatDuration(elapsed * double(total_ - done_) / double(done_))
            .c_str());
    shown_ = true;
  }

private:
  using Clock = std::chrono::steady_clock;
  const int64_t total_;
  const bool terminal_;
  std::mutex mutex_;
  int64_t done_ = 0;
  bool shown_ = false;
  Clock::time_point start_ = Clock::now(), shownAt_ = start_;
};

struct Predictions {
  std::vector<int64_t> shape;
  std::vector<float> values;
  double loss = 0; ///< meaningful when the loss's input was given
};

/// forward on every batch: the predictions of each go straight into their
/// rows of the output.
Predictions predictWhole(Runner &runner, const ModelInputs &ex, int64_t batch,
                         int workers, ExampleProgress &progress) {
  const Manifest &m = runner.library.manifest();
  const TensorInfo &info = m.outputs.at(1);
  const size_t row = outputElements(info, 1);
  Predictions out{info.shape, std::vector<float>(size_t(ex.rows) * row)};
  out.shape[0] = ex.rows;
  // Each batch's loss weighs what it is a mean over (lossWeight).
  const int32_t *stepCounts = info.shape.size() == 3 ? ex.lengths : nullptr;
  const int64_t L = info.shape.size() == 3 ? info.shape[1] : 0;
  const size_t batches = size_t((ex.rows + batch - 1) / batch);
  std::vector<double> lossSums(batches), weights(batches);
  forEachBatch(
      size_t(ex.rows), batch, workers, [&](size_t begin, size_t end, int) {
        const auto count = int64_t(end - begin);
        std::vector<const void *> inputs;
        for (const InputColumn &column : ex.columns)
          inputs.push_back(column.bytes.data() + begin * column.rowBytes);
        float loss = 0;
        float *outputs[] = {&loss, out.values.data() + begin * row};
        runner.forward(count, inputs.data(), outputs);
        const double weight =
            ex.hasLoss ? lossWeight(m, count, inputs.data()) : double(count);
        lossSums[begin / size_t(batch)] = double(loss) * weight;
        weights[begin / size_t(batch)] = weight;
        // Per step: what the model computes past a sequence's end means
        // nothing; NaN there, as --stream writes.
        for (size_t k = begin; stepCounts && k < end; ++k)
          std::fill(out.values.begin() +
                        ptrdiff_t((k * size_t(L) + size_t(stepCounts[k])) *
                                  (row / size_t(L))),
                    out.values.begin() + ptrdiff_t((k + 1) * row),
                    std::numeric_limits<float>::quiet_NaN());
        progress.batchDone(count);
      });
  out.loss = meanOverBatches(lossSums, weights);
  return out;
}

/// Step mode on every batch from a fresh carry, or from where `carryIn`'s
/// streams stand: the predictions after each step, [rows, L, ...]; NaN
/// past each sequence's end. With `carryOut`, each stream's carry after
/// its last step goes there.
Predictions predictStreamed(Runner &runner, const ModelInputs &ex,
                            int64_t batch, int workers,
                            const StreamCarries *carryIn,
                            StreamCarries *carryOut,
                            ExampleProgress &progress) {
  const Manifest &m = runner.library.manifest();
  const StepInfo &stepInfo = *m.step;
  // Each step input is the same-named sequence input at step t.
  std::vector<const InputColumn *> sources;
  for (const TensorInfo &in : stepInfo.inputs) {
    const TensorInfo *whole = m.findInput(in.name);
    if (!whole || whole->shape.size() < 2)
      throw HostError(fmt::format("{}: step input '{}' has no sequence input",
                                  runner.library.path().string(), in.name));
    sources.push_back(&ex.columns[size_t(whole - m.inputs.data())]);
  }
  const int64_t L = sources.at(0)->info->shape[1];
  const TensorInfo &info = stepInfo.outputs.at(0);
  const size_t row = outputElements(info, 1);
  Predictions out{{ex.rows, L},
                  std::vector<float>(size_t(ex.rows) * size_t(L) * row,
                                     std::numeric_limits<float>::quiet_NaN())};
  for (size_t d = 1; d < info.shape.size(); ++d)
    if (!(d == 1 && info.shape.size() == 3)) // [B, 1, K]: one step's
      out.shape.push_back(info.shape[d]);
  forEachBatch(
      size_t(ex.rows), batch, workers,
      [&](size_t begin, size_t end, int worker) {
        const auto count = int64_t(end - begin);
        std::vector<std::vector<char>> stepInputs(sources.size());
        std::vector<const void *> pointers(sources.size());
        std::vector<float> stepOutputs(size_t(count) * row);
        float *outputs[] = {stepOutputs.data()};
        // Each stream's steps in this file (checked: 0 to L each).
        auto stepsOf = [&](int64_t b) {
          return ex.lengths ? int64_t(ex.lengths[begin + size_t(b)]) : L;
        };
        int64_t steps = 0;
        for (int64_t b = 0; b < count; ++b)
          steps = std::max(steps, stepsOf(b));
        // After `taken` steps, the streams whose last step that was stand
        // where they will continue from (the others step on, over
        // padding); the carry is read once however many end there.
        auto keepEnded = [&](int64_t taken) {
          const float *carry = nullptr;
          for (int64_t b = 0; carryOut && b < count; ++b) {
            if (stepsOf(b) != taken)
              continue;
            if (!carry)
              carry = runner.carryNow(count, worker);
            const int64_t stream = int64_t(begin) + b;
            carryOut->fromBlock(carry, count, b, stream,
                                (carryIn ? carryIn->steps(stream) : 0) + taken);
          }
        };
        runner.stepStart(count, worker, carryIn, int64_t(begin));
        keepEnded(0); // streams with nothing new here
        for (int64_t t = 0; t < steps; ++t) {
          for (size_t i = 0; i < sources.size(); ++i) {
            const size_t width = sources[i]->rowBytes / size_t(L);
            stepInputs[i].resize(size_t(count) * width);
            for (int64_t b = 0; b < count; ++b)
              std::memcpy(stepInputs[i].data() + size_t(b) * width,
                          sources[i]->bytes.data() +
                              (begin + size_t(b)) * sources[i]->rowBytes +
                              size_t(t) * width,
                          width);
            pointers[i] = stepInputs[i].data();
          }
          runner.step(count, worker, pointers.data(), outputs);
          for (int64_t b = 0; b < count; ++b)
            if (!ex.lengths || t < ex.lengths[begin + size_t(b)])
              std::copy_n(stepOutputs.data() + size_t(b) * row, row,
                          out.values.data() +
                              ((begin + size_t(b)) * size_t(L) + size_t(t)) *
                                  row);
          keepEnded(t + 1);
        }
        progress.batchDone(count);
      });
  return out;
}

int predictMain(int argc, char **argv) {
  std::optional<std::string> outPath;
  std::optional<int64_t> batchFlag, threadsFlag;
  bool stream = false;
  std::optional<std::string> carryInPath, carryOutPath;
  tools::DeviceFlags devices;
  tools::CommandLine cl(kTool, "model.so CHECKPOINT INPUTS.safetensors -o "
                               "OUT.safetensors [options]");
  cl.flag("o", &outPath, "FILE",
          "where to write the predictions (safetensors)");
  cl.flag("batch", &batchFlag, "N", "examples per call (default 32)");
  cl.flag("threads", &threadsFlag, "N",
          "CPU threads: batches side by side, or one batch at a time on all "
          "of them (default: all cores)");
  cl.flag("stream", &stream,
          "run step mode, one step at a time from a fresh carry: the "
          "predictions after every step");
  cl.flag("carry-in", &carryInPath, "FILE",
          "with --stream: continue each stream from where a carry file of "
          "--carry-out left it, instead of a fresh carry");
  cl.flag("carry-out", &carryOutPath, "FILE",
          "with --stream: write where each stream stands after its last "
          "step (a carry file, safetensors) for --carry-in to continue");
  devices.declare(cl);
  std::vector<std::string> positional = cl.parse(argc, argv);
  if (positional.size() != 3)
    throw UsageError("expected a model library, a checkpoint and an inputs "
                     "file (lru-predict model.so CHECKPOINT "
                     "INPUTS.safetensors -o OUT.safetensors)");
  if (!outPath)
    throw UsageError("where should the predictions go? pass -o "
                     "OUT.safetensors");
  for (auto [value, name] :
       {std::pair{&batchFlag, "batch"}, {&threadsFlag, "threads"}})
    if (*value && **value <= 0)
      throw UsageError(fmt::format("--{} must be positive", name));
  for (auto [value, name] :
       {std::pair{&carryInPath, "carry-in"}, {&carryOutPath, "carry-out"}})
    if (*value && !stream)
      throw UsageError(
          fmt::format("--{} is step mode's: pass --stream too", name));
  devices.check();
  const int64_t batch = batchFlag.value_or(32);

  keepFreedMemoryForReuse();
  ModelLibrary library = ModelLibrary::open(positional[0]);
  const Manifest &m = library.manifest();
  if (stream && !m.step)
    throw HostError(fmt::format("{}: no step mode: {}", library.path().string(),
                                m.stepUnavailable));
  Checkpoint checkpoint =
      loadCheckpoint(positional[1], m, OptimizerState::Optional);
  // A stream may have nothing new in a piece (length 0): it stands where
  // it stood.
  const ModelInputs examples = readModelInputs(
      SafetensorsFile::read(positional[2]), m,
      stream ? EmptySequences::Allowed : EmptySequences::Rejected);
  std::optional<StreamCarries> carryIn, carryOut;
  if (carryInPath)
    carryIn = StreamCarries::parse(SafetensorsFile::read(*carryInPath), m,
                                   examples.rows);
  if (carryOutPath)
    carryOut.emplace(*m.step, examples.rows);

  std::unique_ptr<GpuModel> gpu =
      GpuModel::openForDevice(library, devices.deviceOrAuto(), kTool,
                              matmulNamed(devices.matmulOrFp32()));
  if (gpu) {
    gpu->reserve(std::min(batch, examples.rows));
    gpu->evaluateCheckpoint(checkpoint);
  }
  // One device: one batch at a time; on the CPU no more threads than
  // batches, nor than their workspaces fit in memory (one batch at a time
  // on the threads).
  int workers = 1, threadsUsed = 1;
  if (!gpu) {
    std::string why;
    const EvaluationThreads plan = evaluationThreads(
        examples.rows, library.manifest(), stream ? "step" : "forward", batch,
        tools::threadsOrAllCores(threadsFlag), memoryBudget(), why);
    if (!why.empty())
      std::fprintf(stderr,
                   "%s: warning: %s (a smaller --batch runs more at once)\n",
                   kTool, why.c_str());
    workers = plan.calls;
    const int kernelThreads = useKernelThreads(library, plan.kernelThreads);
    threadsUsed = workers > 1 ? workers : kernelThreads;
  }
  Runner runner{library, checkpoint, gpu.get(), {}};
  runner.carries.resize(size_t(workers));

  const auto start = std::chrono::steady_clock::now();
  Predictions predictions;
  {
    ExampleProgress progress(examples.rows);
    predictions =
        stream ? predictStreamed(runner, examples, batch, workers,
                                 carryIn ? &*carryIn : nullptr,
                                 carryOut ? &*carryOut : nullptr, progress)
               : predictWhole(runner, examples, batch, workers, progress);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  std::vector<TensorToWrite> tensors{{"predictions", DType::F32,
                                      predictions.shape,
                                      predictions.values.data()}};
  const bool withLoss = examples.hasLoss && !stream;
  const auto loss = float(predictions.loss);
  if (withLoss)
    tensors.push_back({"loss", DType::F32, {}, &loss});
  Metadata metadata = {{"model", m.model},
                       {"checkpoint", positional[1]},
                       {"step", std::to_string(checkpoint.step)},
                       {"inputs", positional[2]},
                       {"mode", stream ? "step mode" : "forward"}};
  writeFileAtomically(*outPath, encodeSafetensors(tensors, metadata));
  if (carryOut) {
    metadata.erase("mode");
    writeFileAtomically(*carryOutPath, carryOut->encode(metadata));
  }

  const std::string device = gpu ? "gpu: " + gpu->deviceDescription()
                                 : fmt::format("cpu ({} thread{})", threadsUsed,
                                               threadsUsed == 1 ? "" : "s");
  std::printf("%s: %lld examples of %s (step %lld)%s in %.2f s on %s: wrote "
              "predictions %s to %s\n",
              kTool, (long long)examples.rows, m.model.c_str(),
              (long long)checkpoint.step, stream ? ", streamed" : "", seconds,
              device.c_str(), shapeString(predictions.shape).c_str(),
              outPath->c_str());
  if (carryOut) {
    int64_t least = carryOut->steps(0), most = least;
    for (int64_t r = 1; r < carryOut->rows(); ++r) {
      least = std::min(least, carryOut->steps(r));
      most = std::max(most, carryOut->steps(r));
    }
    std::printf("%s: wrote where the %lld streams stand (%s steps taken) to "
                "%s\n",
                kTool, (long long)carryOut->rows(),
                least == most ? std::to_string(least).c_str()
                              : fmt::format("{}-{}", least, most).c_str(),
                carryOutPath->c_str());
  }
  if (withLoss && examples.labels && predictions.shape.size() == 2) {
    const int64_t hits =
        countCorrect(predictions.values.data(), predictions.shape[1],
                     examples.labels, examples.rows);
    std::printf("%s: loss %.4f, accuracy %.2f%% against \"labels\"\n", kTool,
                predictions.loss, 100.0 * double(hits) / double(examples.rows));
  } else if (withLoss && examples.stepLabels && examples.lengths) {
    // A class a step: of the real steps whose label is not negative.
    const int64_t L = predictions.shape[1], classes = predictions.shape[2];
    int64_t hits = 0, scored = 0;
    for (int64_t k = 0; k < examples.rows; ++k)
      for (int64_t t = 0; t < examples.lengths[k]; ++t)
        if (const int32_t label = examples.stepLabels[k * L + t]; label >= 0) {
          ++scored;
          hits += argmax(predictions.values.data() + (k * L + t) * classes,
                         classes) == label;
        }
    if (scored == 0)
      std::printf("%s: loss %.4f, no step scored (every label of \"labels\" "
                  "at a real step is negative)\n",
                  kTool, predictions.loss);
    else
      std::printf("%s: loss %.4f, accuracy %.2f%% of %lld scored steps "
                  "against \"labels\"\n",
                  kTool, predictions.loss,
                  100.0 * double(hits) / double(scored), (long long)scored);
  } else if (withLoss && examples.targets) {
    // Regression: over the targets that are not NaN, at real steps.
    const bool perStep = predictions.shape.size() == 3;
    const auto values = int64_t(predictions.values.size()) / examples.rows;
    TargetErrorSums errors;
    const int64_t scored = scoredTargets(
        examples.targets, examples.rows, values,
        perStep ? examples.lengths : nullptr,
        perStep ? predictions.shape[1] : 0, predictions.values.data(), &errors);
    const double n = double(std::max<int64_t>(scored, 1));
    std::printf(
        "%s: loss %.4f%s against \"targets\"\n", kTool, predictions.loss,
        targetErrors(errors.squared / n, errors.absolute / n, scored).c_str());
  } else if (withLoss) {
    std::printf("%s: loss %.4f\n", kTool, predictions.loss);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return tools::runTool(kTool, predictMain, argc, argv);
}
