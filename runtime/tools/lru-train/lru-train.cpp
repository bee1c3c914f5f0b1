//===- lru-train.cpp - Train a compiled model library ---------------------===//
//
//   lru-train model.so [--data DIR] [--batch N] [--steps N | --epochs N]
//             [--lr X] [--seed N] [--eval-every N] [--out DIR] [--resume]
//             [--init-from CHECKPOINT]
//             [--device cpu|gpu|auto] [--matmul fp32|tf32|bf16] [--threads N]
//             [--max-train N]
//             [--max-eval N] ...
//
// Defaults come from the model file's train section (the manifest). The
// loop: init(seed), then per step a batch in a seeded order, the scheduled
// learning rate and train_step; evaluation on the validation set every
// eval_every steps and at the end; OUT/last.safetensors and
// OUT/best.safetensors; metrics in OUT/metrics.jsonl; the test accuracy of
// the best checkpoint at the end. docs/trainer.md has the details.
//
// Exit status: 0 done; 1 an error (the message names the file); 2 bad
// flags; 3 the loss stopped being finite; 130 interrupted (SIGINT/SIGTERM)
// after saving OUT/last.safetensors.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"

#include "lruc/core/Bytes.h"
#include "lruc/data/Dataset.h"
#include "lruc/host/Checkpoint.h"
#include "lruc/host/DataOrder.h"
#include "lruc/host/Evaluate.h"
#include "lruc/host/GpuModel.h"
#include "lruc/host/Memory.h"
#include "lruc/host/Metrics.h"
#include "lruc/host/ModelLibrary.h"
#include "lruc/host/Progress.h"
#include "lruc/host/Schedule.h"
#include "lruc/host/TaskData.h"
#include "lruc/host/TensorData.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>

namespace fs = std::filesystem;
using namespace lruc;
using namespace lruc::host;
using nlohmann::json;
using tools::UsageError;

namespace {

constexpr const char *kTool = "lru-train";
constexpr int kExitNonFinite = 3;
constexpr int kExitInterrupted = 130;

//===-- Signals -----------------------------------------------------------===//

volatile std::sig_atomic_t gStopRequested = 0;

void onStopSignal(int) {
  gStopRequested = 1;
  const char message[] = "\nlru-train: stopping after this step and saving "
                         "last.safetensors (signal again to stop at once)\n";
  // write() is async-signal-safe; fprintf is not.
  ssize_t ignored = ::write(STDERR_FILENO, message, sizeof message - 1);
  (void)ignored;
}

void installStopHandlers() {
  struct sigaction action = {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  // A second signal gets the default action: the user can always stop.
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

//===-- Flags -------------------------------------------------------------===//

struct Flags {
  std::string model;
  std::optional<std::string> data, out, task, schedule, initFrom;
  tools::DeviceFlags devices;
  std::optional<int64_t> batch, steps, epochs, seed, dropoutSeed, evalEvery,
      evalBatch, threads, maxTrain, maxEval, logEvery, stopAfter, patience,
      accumulate;
  std::optional<double> lr, warmup, floor, valFraction;
  bool resume = false;
};

Flags parseFlags(int argc, char **argv) {
  Flags f;
  tools::CommandLine cl(kTool, "model.so [options]");
  cl.flag("data", &f.data, "DIR",
          "where the task's data is (default: the model file's, or the task's "
          "default place)");
  cl.flag("task", &f.task, "NAME",
          "the task (default: the model file's `data`)");
  cl.flag("batch", &f.batch, "N", "examples per step");
  cl.flag("accumulate", &f.accumulate, "N",
          "split each step's batch into N micro-batches and sum their "
          "gradients before the update (the memory of a batch N times "
          "smaller; BatchNorm's statistics are each micro-batch's)");
  cl.flag("steps", &f.steps, "N", "optimizer steps in all");
  cl.flag("epochs", &f.epochs, "N",
          "passes over the training set (instead of --steps)");
  cl.flag("lr", &f.lr, "X", "peak learning rate");
  cl.flag("schedule", &f.schedule, "KIND", "warmup_cosine or constant");
  cl.flag("warmup", &f.warmup, "F", "fraction of the steps spent warming up");
  cl.flag("floor", &f.floor, "X", "learning rate at the start and the end");
  cl.flag("seed", &f.seed, "N",
          "parameter init, data order and validation hold-out");
  cl.flag("dropout-seed", &f.dropoutSeed, "N",
          "dropout masks (default: the model file's)");
  cl.flag("eval-every", &f.evalEvery, "N",
          "evaluate (and save) every N steps (default: once per epoch)");
  cl.flag("eval-batch", &f.evalBatch, "N",
          "examples per evaluation batch (default: --batch)");
  cl.flag("val-fraction", &f.valFraction, "F",
          "share of train held out for validation when the task has no val "
          "split (0.1)");
  cl.flag("out", &f.out, "DIR", "output folder (default: runs/MODEL)");
  cl.flag("resume", &f.resume,
          "continue the run in --out from its last.safetensors");
  cl.flag("init-from", &f.initFrom, "FILE",
          "start from a checkpoint's parameters and running statistics "
          "(fine-tuning; a new run: step 0, fresh optimizer state)");
  cl.flag("patience", &f.patience, "N",
          "stop early when N evaluations in a row bring no better "
          "validation accuracy (regression: loss), then test the best "
          "checkpoint as at the end");
  cl.flag("stop-after", &f.stopAfter, "N",
          "stop after step N, saving last.safetensors (continue later with "
          "--resume)");
  f.devices.declare(cl);
  cl.flag("threads", &f.threads, "N",
          "CPU threads: a training step's kernels, or evaluation batches in "
          "parallel (default: all cores)");
  cl.flag("max-train", &f.maxTrain, "N",
          "use only the first N training examples");
  cl.flag("max-eval", &f.maxEval, "N",
          "evaluate on at most N examples per split");
  cl.flag("log-every", &f.logEvery, "N",
          "without a terminal, print progress every N steps");
  std::vector<std::string> positional = cl.parse(argc, argv);
  if (positional.size() != 1)
    throw UsageError(positional.empty()
                         ? "no model library given (lru-train model.so)"
                         : fmt::format("one model library expected, got {} "
                                       "arguments",
                                       positional.size()));
  f.model = positional[0];

  if (f.steps && f.epochs)
    throw UsageError("--steps and --epochs exclude each other");
  if (f.resume && f.initFrom)
    throw UsageError("--resume and --init-from exclude each other (--resume "
                     "continues a run; --init-from starts a new one)");
  for (auto [value, name] : {std::pair{&f.batch, "batch"},
                             {&f.steps, "steps"},
                             {&f.epochs, "epochs"},
                             {&f.evalEvery, "eval-every"},
                             {&f.evalBatch, "eval-batch"},
                             {&f.threads, "threads"},
                             {&f.maxTrain, "max-train"},
                             {&f.maxEval, "max-eval"},
                             {&f.logEvery, "log-every"},
                             {&f.stopAfter, "stop-after"},
                             {&f.patience, "patience"},
                             {&f.accumulate, "accumulate"}})
    if (*value && **value <= 0)
      throw UsageError(
          fmt::format("--{} must be positive, not {}", name, **value));
  if (f.seed && *f.seed < 0)
    throw UsageError("--seed must not be negative");
  if (f.dropoutSeed && *f.dropoutSeed < 0)
    throw UsageError("--dropout-seed must not be negative");
  if (f.lr && *f.lr <= 0)
    throw UsageError(fmt::format("--lr must be positive, not {}", *f.lr));
  if (f.warmup && (*f.warmup < 0 || *f.warmup > 1))
    throw UsageError("--warmup is a fraction of the steps, in [0, 1]");
  if (f.valFraction && (*f.valFraction <= 0 || *f.valFraction >= 1))
    throw UsageError("--val-fraction must lie in (0, 1)");
  if (f.floor && *f.floor < 0)
    throw UsageError("--floor must not be negative");
  if (f.schedule && *f.schedule != "constant" && *f.schedule != "warmup_cosine")
    throw UsageError(
        fmt::format("--schedule {}: unknown (known: warmup_cosine, constant)",
                    *f.schedule));
  f.devices.check();
  return f;
}

//===-- Settings ----------------------------------------------------------===//

std::string_view scheduleName(ScheduleKind kind) {
  return kind == ScheduleKind::Constant ? "constant" : "warmup_cosine";
}

/// The settings a run uses, after the manifest, the flags and (on resume)
/// the checkpoint. Those in `fixed()` decide the numbers a run computes and
/// must not change when it resumes.
struct RunSettings {
  std::string task;
  std::string dataRoot;
  int64_t batch = 0;
  int64_t totalSteps = 0;
  int64_t stepsPerEpoch = 0;
  int64_t trainExamples = 0;
  int64_t evalEvery = 0;
  int64_t evalBatch = 0;
  Schedule schedule;
  uint64_t seed = 0, dropoutSeed = 0;
  double valFraction = 0.1;
  std::optional<int64_t> maxTrain, maxEval;
  std::optional<int64_t> patience; ///< evaluations without a better one
  /// Micro-batches a step (--accumulate): their gradients summed, then one
  /// update. Not fixed: a resumed run may split its steps otherwise.
  int64_t accumulate = 1;
  int64_t microBatch() const { return batch / accumulate; }

  json fixed() const {
    return {{"task", task},
            {"batch", batch},
            {"total_steps", totalSteps},
            {"train_examples", trainExamples},
            {"lr", schedule.peak},
            {"schedule", scheduleName(schedule.kind)},
            {"warmup", schedule.warmup},
            {"floor", schedule.floor},
            {"seed", seed},
            {"dropout_seed", dropoutSeed},
            {"val_fraction", valFraction},
            {"max_train", maxTrain ? json(*maxTrain) : json(nullptr)}};
  }
  json all() const {
    json j = fixed();
    j["data"] = dataRoot;
    j["steps_per_epoch"] = stepsPerEpoch;
    j["eval_every"] = evalEvery;
    j["eval_batch"] = evalBatch;
    j["max_eval"] = maxEval ? json(*maxEval) : json(nullptr);
    j["patience"] = patience ? json(*patience) : json(nullptr);
    j["accumulate"] = accumulate;
    return j;
  }
};

/// The model file's settings with the flags' overrides (the step counts
/// wait for the data: see planSteps). The task may still be empty: a
/// resumed run takes it from its checkpoint.
RunSettings settingsFrom(const TrainSettings &base, const Flags &f) {
  RunSettings s;
  s.task = f.task.value_or(base.task);
  s.dataRoot = f.data.value_or(base.dataPath);
  s.batch = f.batch.value_or(base.batch);
  s.schedule = Schedule::fromSettings(base);
  if (f.lr)
    s.schedule.peak = *f.lr;
  if (f.schedule)
    s.schedule.kind = *f.schedule == "constant" ? ScheduleKind::Constant
                                                : ScheduleKind::WarmupCosine;
  if (f.warmup)
    s.schedule.warmup = *f.warmup;
  if (f.floor)
    s.schedule.floor = *f.floor;
  s.seed = f.seed ? uint64_t(*f.seed) : base.seed;
  s.dropoutSeed = f.dropoutSeed ? uint64_t(*f.dropoutSeed) : base.dropoutSeed;
  s.valFraction = f.valFraction.value_or(0.1);
  s.maxTrain = f.maxTrain;
  s.maxEval = f.maxEval;
  return s;
}

/// A resumed run keeps the settings it started with: each comes from the
/// checkpoint's "train" metadata, and a flag that says otherwise is an error.
class StoredSettings {
public:
  StoredSettings(const Checkpoint &checkpoint, std::string file)
      : file_(std::move(file)) {
    auto train = checkpoint.metadata.find("train");
    stored_ = json::parse(
        train == checkpoint.metadata.end() ? "{}" : train->second, nullptr,
        /*allow_exceptions=*/false);
    if (!stored_.is_object())
      throw HostError(
          fmt::format("{}: metadata \"train\" is not a JSON object", file_));
  }

  /// Sets `field` from the checkpoint's `key` (if it has one); `given`:
  /// whether `flag` set it on this command line.
  template <typename T>
  void adopt(const char *key, T &field, bool given, const char *flag) const {
    auto it = stored_.find(key);
    if (it == stored_.end() || it->is_null())
      return;
    if (given && *it != json(field))
      throw UsageError(fmt::format(
          "--{} {} differs from the checkpoint's {} ({}): a resumed run keeps "
          "the settings it started with",
          flag, json(field).dump(), key, it->dump()));
    try {
      field = it->get<T>();
    } catch (const json::exception &) {
      throw HostError(fmt::format(
          "{}: metadata \"train\": {} is {}, not a {}", file_, key, it->dump(),
          std::is_arithmetic_v<T> ? "number" : "string"));
    }
  }
  template <typename T>
  void adopt(const char *key, std::optional<T> &field, bool given,
             const char *flag) const {
    auto it = stored_.find(key);
    if (it == stored_.end())
      return;
    json now = field ? json(*field) : json(nullptr);
    if (given && *it != now)
      throw UsageError(fmt::format(
          "--{} {} differs from the checkpoint's {} ({}): a resumed run keeps "
          "the settings it started with",
          flag, now.dump(), key, it->dump()));
    if (it->is_null()) {
      field.reset();
      return;
    }
    T value{};
    adopt(key, value, false, flag);
    field = value;
  }
  bool has(const char *key) const { return stored_.contains(key); }

private:
  std::string file_;
  json stored_;
};

void adoptCheckpointSettings(RunSettings &s, const Flags &f,
                             const StoredSettings &stored) {
  stored.adopt("task", s.task, f.task.has_value(), "task");
  stored.adopt("batch", s.batch, f.batch.has_value(), "batch");
  stored.adopt("lr", s.schedule.peak, f.lr.has_value(), "lr");
  std::string schedule(scheduleName(s.schedule.kind));
  stored.adopt("schedule", schedule, f.schedule.has_value(), "schedule");
  s.schedule.kind = schedule == "constant" ? ScheduleKind::Constant
                                           : ScheduleKind::WarmupCosine;
  stored.adopt("warmup", s.schedule.warmup, f.warmup.has_value(), "warmup");
  stored.adopt("floor", s.schedule.floor, f.floor.has_value(), "floor");
  stored.adopt("seed", s.seed, f.seed.has_value(), "seed");
  stored.adopt("dropout_seed", s.dropoutSeed, f.dropoutSeed.has_value(),
               "dropout-seed");
  stored.adopt("val_fraction", s.valFraction, f.valFraction.has_value(),
               "val-fraction");
  stored.adopt("max_train", s.maxTrain, f.maxTrain.has_value(), "max-train");
  // Not part of the numbers: the flag wins over the checkpoint.
  if (!f.maxEval)
    stored.adopt("max_eval", s.maxEval, false, "max-eval");
  if (!f.data)
    stored.adopt("data", s.dataRoot, false, "data");
}

/// Steps per epoch and in all, and the evaluation interval, once the size
/// of the training set is known.
void planSteps(RunSettings &s, const Flags &f, const TrainSettings &base,
               size_t trainExamples, const StoredSettings *stored,
               const std::string &checkpoint) {
  s.trainExamples = int64_t(trainExamples);
  if (s.batch > s.trainExamples) {
    std::fprintf(stderr,
                 "%s: warning: a batch of %lld is more than the %lld training "
                 "examples: batches of %lld (the whole training set)\n",
                 kTool, (long long)s.batch, (long long)s.trainExamples,
                 (long long)s.trainExamples);
    s.batch = s.trainExamples;
  }
  // The last partial batch of an epoch is dropped.
  s.stepsPerEpoch = s.trainExamples / s.batch;
  if (f.steps)
    s.totalSteps = *f.steps;
  else if (f.epochs)
    s.totalSteps = *f.epochs * s.stepsPerEpoch;
  else if (base.steps)
    s.totalSteps = *base.steps;
  else
    s.totalSteps = base.epochs.value_or(1) * s.stepsPerEpoch;
  s.evalEvery = f.evalEvery.value_or(base.evalEvery > 0 ? base.evalEvery
                                                        : s.stepsPerEpoch);
  s.accumulate = f.accumulate.value_or(base.accumulate);
  s.patience = f.patience;
  if (stored) {
    int64_t examples = s.trainExamples;
    stored->adopt("train_examples", examples, false, "data");
    if (examples != s.trainExamples)
      throw HostError(fmt::format(
          "{}: the run trained on {} examples; the data now gives {} (another "
          "--data?)",
          checkpoint, examples, s.trainExamples));
    stored->adopt("total_steps", s.totalSteps, f.steps || f.epochs,
                  f.steps ? "steps" : "epochs");
    if (!f.evalEvery)
      stored->adopt("eval_every", s.evalEvery, false, "eval-every");
    if (!f.patience)
      stored->adopt("patience", s.patience, false, "patience");
    if (!f.accumulate)
      stored->adopt("accumulate", s.accumulate, false, "accumulate");
  }
  if (s.batch % s.accumulate != 0)
    throw UsageError(fmt::format(
        "--accumulate {}: a batch of {} examples{} does not split into {} "
        "equal micro-batches",
        s.accumulate, s.batch,
        s.batch == s.trainExamples ? " (the whole training set)" : "",
        s.accumulate));
  // Evaluation needs no more memory than a micro-batch's training.
  s.evalBatch = f.evalBatch.value_or(s.microBatch());
  if (stored && !f.evalBatch)
    stored->adopt("eval_batch", s.evalBatch, false, "eval-batch");
}

//===-- The run -----------------------------------------------------------===//

/// Stale temporary files of a save that was killed (writeFileAtomically's
/// PATH.tmp-XXXXXX); never a complete file, so they can go.
void removeStaleTemporaries(const fs::path &out) {
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(out, ec)) {
    std::string name = entry.path().filename().string();
    if (name.find(".safetensors.tmp-") != std::string::npos ||
        name.find(".jsonl.tmp-") != std::string::npos ||
        name.find(".json.tmp-") != std::string::npos)
      fs::remove(entry.path(), ec);
  }
}

/// This process's hold on --out: an exclusive flock on the directory
/// itself, so that a second lru-train on the same --out (a run started
/// twice, a --resume while the run still goes) is refused instead of
/// interleaving its checkpoints and metrics with this one's. No lock file:
/// the kernel drops the lock when the process ends, however it ends.
class RunDirectoryLock {
public:
  /// Creates `out` where it is missing; throws HostError if another
  /// process holds it.
  explicit RunDirectoryLock(const fs::path &out) : out_(out) {
    // A directory removed between its creation and the lock (by a run that
    // failed, see the destructor) is created and locked again.
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::error_code ec;
      created_ = fs::create_directories(out_, ec);
      if (ec)
        throw HostError(
            fmt::format("{}: cannot create: {}", out_.string(), ec.message()));
      fd_ = ::open(out_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd_ < 0)
        throw HostError(fmt::format("{}: cannot open: {}", out_.string(),
                                    std::strerror(errno)));
      if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        if (error == EWOULDBLOCK) {
          ::close(fd_);
          fd_ = -1;
          throw HostError(fmt::format(
              "{}: in use by another run (an lru-train process holds it until "
              "it ends): wait for that run, or choose another --out",
              out_.string()));
        }
        // A file system without flock on directories (some network ones):
        // the run goes on, unguarded, rather than not at all.
        std::fprintf(stderr,
                     "%s: warning: %s: cannot lock (%s): a second lru-train "
                     "on it would not be refused\n",
                     kTool, out_.c_str(), std::strerror(error));
        return;
      }
      struct stat st;
      if (::fstat(fd_, &st) == 0 && st.st_nlink > 0)
        return;
      ::close(fd_);
      fd_ = -1;
    }
    throw HostError(fmt::format(
        "{}: removed each time it was created: cannot hold it", out_.string()));
  }
  RunDirectoryLock(const RunDirectoryLock &) = delete;
  RunDirectoryLock &operator=(const RunDirectoryLock &) = delete;

  /// A directory this run created and never wrote to (it failed before
  /// starting) is removed again, so a failed run leaves nothing behind.
  ~RunDirectoryLock() {
    if (created_)
      ::rmdir(out_.c_str()); // fails, as it should, once anything is in it
    if (fd_ >= 0)
      ::close(fd_);
  }

private:
  fs::path out_;
  int fd_ = -1;
  bool created_ = false;
};

class Trainer {
public:
  /// On the CPU, or on `gpu` when given (its kernels loaded, its memory
  /// reserved for the larger of the batch and the evaluation batch).
  /// On the CPU a step's kernels take `threads` threads, an evaluation
  /// `evalCalls` batches side by side.
  Trainer(const ModelLibrary &library, RunSettings settings, TaskData &data,
          fs::path out, int threads, int evalCalls, GpuModel *gpu)
      : library_(library), manifest_(library.manifest()),
        settings_(std::move(settings)), data_(data),
        train_(data.split(data::Split::Train)), out_(std::move(out)),
        lastPath_(out_ / "last.safetensors"),
        bestPath_(out_ / "best.safetensors"), threads_(threads),
        evalCalls_(evalCalls), gpu_(gpu),
        current_(Checkpoint::zeros(manifest_)) {
    // The kernels' thread pool (lruc_cpu_set_threads, runtime/cpu) has
    // `threads` for a step.
    if (const int started = useKernelThreads(library_, threads_);
        started < threads_) {
      std::fprintf(stderr,
                   "%s: warning: %d of the %d threads asked for started (the "
                   "system would not start more: a limit on processes or "
                   "memory); training goes on with %d\n",
                   kTool, started, threads_, started);
      threads_ = started;
    }
  }

  /// The threads a step's kernels run on.
  int threads() const { return threads_; }

  /// A new run: the library's initial parameters under the seed.
  void initialise() {
    library_.init(settings_.seed, current_.params.data(),
                  current_.state.data());
  }

  /// Starts from `checkpoint`'s parameters and running statistics (its
  /// step and optimizer state are not taken).
  void initialiseFrom(const Checkpoint &checkpoint) {
    current_.params = checkpoint.params;
    current_.state = checkpoint.state;
  }

  /// Continues from `checkpoint` (last.safetensors).
  void restore(Checkpoint checkpoint) {
    current_ = std::move(checkpoint);
    auto number = [&](const char *key, double fallback) {
      auto it = current_.metadata.find(key);
      if (it == current_.metadata.end() || it->second.empty())
        return fallback;
      char *end = nullptr;
      double value = std::strtod(it->second.c_str(), &end);
      if (*end != '\0')
        throw HostError(
            fmt::format("{}: metadata \"{}\" is \"{}\", not a number",
                        lastPath_.string(), key, it->second));
      return value;
    };
    bestAccuracy_ = number("best_val_accuracy", -1);
    bestLoss_ = number("best_val_loss", INFINITY);
    bestStep_ = int64_t(number("best_step", 0));
    evalsSinceBest_ = int64_t(number("evals_since_best", 0));
    elapsedBefore_ = number("elapsed_seconds", 0);
  }

  int64_t step() const { return current_.step; }

  /// The starting point to the GPU (after initialise, initialiseFrom or
  /// restore); from here on the device holds the training blocks and
  /// current_ is brought up to date before it is saved.
  void uploadToGpu() {
    if (gpu_) // current_ holds moments on every path (zeros, or restored)
      gpu_->upload(current_);
  }

  /// One step of `settings_.accumulate` micro-batches of the batch
  /// `inputs` (bindInputs): each one's gradients (of its mean loss) summed
  /// with weight W_k / W, W_k what its mean is over (lossWeight: examples,
  /// scored steps or targets, class weights) and W the batch's, so that
  /// the sum is the gradient of the whole batch's mean; each one's running
  /// statistics updated in turn, then one update. `outputs` (the whole
  /// batch's) get the batch's mean loss, so weighed, and each one's
  /// predictions in its rows. Micro-batch k of step t draws its dropout
  /// masks under the key (t - 1) * accumulate + k + 1: one micro-batch a
  /// step is train_step's t.
  void accumulatedStep(int64_t step, double lr,
                       const std::vector<const void *> &inputs,
                       float *const *outputs) {
    const int64_t count = settings_.accumulate;
    const int64_t micro = settings_.microBatch();
    // Micro-batch k: rows [k * micro, (k + 1) * micro) of each array.
    const auto n = static_cast<size_t>(count);
    std::vector<std::vector<const void *>> parts(n);
    std::vector<double> weights(n), weightedLosses(n);
    for (int64_t k = 0; k < count; ++k) {
      for (size_t i = 0; i < inputs.size(); ++i)
        parts[size_t(k)].push_back(
            static_cast<const char *>(inputs[i]) +
            size_t(k * micro) * inputBytes(manifest_.inputs[i], 1));
      weights[size_t(k)] = lossWeight(manifest_, micro, parts[size_t(k)].data());
    }
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    if (!gpu_)
      gradSums_.assign(manifest_.paramFloats, 0.0f);
    for (int64_t k = 0; k < count; ++k) {
      const int64_t dropoutKey[2] = {int64_t(settings_.dropoutSeed),
                                     (step - 1) * count + k + 1};
      // Nothing scored in the whole batch: every loss and gradient is 0.
      const auto scale = float(total > 0 ? weights[size_t(k)] / total
                                         : 1.0 / double(count));
      float loss = NAN;
      std::vector<float *> partOutputs = {&loss};
      for (size_t o = 1; o < manifest_.outputs.size(); ++o)
        partOutputs.push_back(outputs[o] +
                              size_t(k * micro) *
                                  outputElements(manifest_.outputs[o], 1));
      const void *const *part = parts[size_t(k)].data();
      if (gpu_)
        gpu_->accumulateGradients(micro, scale, k == 0, part, dropoutKey,
                                  partOutputs.data());
      else
        library_.accumulateGradients(micro, current_.params.data(),
                                     current_.state.data(), gradSums_.data(),
                                     scale, part, dropoutKey,
                                     partOutputs.data());
      weightedLosses[size_t(k)] = double(loss) * weights[size_t(k)];
    }
    if (gpu_)
      gpu_->applyGradients(float(lr), step);
    else
      library_.applyGradients(current_.params.data(), current_.adamM.data(),
                              current_.adamV.data(), gradSums_.data(),
                              float(lr), step);
    outputs[0][0] = float(meanOverBatches(weightedLosses, weights));
  }

  /// Trains to the end, or to --stop-after, a signal or a non-finite loss;
  /// returns the exit status.
  int run(std::optional<int64_t> stopAfter, int64_t logEvery) {
    const RunSettings &s = settings_;
    const bool resumed = current_.step > 0;
    MetricsLog metrics(out_ / "metrics.jsonl", resumed ? current_.step : -1);
    metrics_ = &metrics;
    installStopHandlers();
    Progress progress(stderr, isatty(STDERR_FILENO), s.totalSteps,
                      current_.step, logEvery);
    progress_ = &progress;
    if (bestAccuracy_ >= 0)
      progress.setAccuracy(bestAccuracy_);

    std::vector<size_t> order;
    int64_t orderEpoch = -1;
    const int64_t classes =
        regression() ? 0 : manifest_.outputs[1].shape.back();
    // Steps started whose results have not been read. On a GPU the next
    // step is queued before this one's results are read, so the device
    // works on it while the host logs this one and gathers the next batch;
    // not after a step that evaluates or saves, which must see the
    // parameters that step left.
    struct Started {
      int64_t step, epoch;
      double lr;
      data::Batch batch; // its inputs; its accuracy is scored against it
      OutputBuffers outputs;
    };
    std::deque<Started> started;
    auto start = [&](int64_t step) {
      const int64_t epoch = epochOf(step);
      if (epoch != orderEpoch) {
        order =
            permutation(train_.size(), s.seed, kShuffleTag, uint32_t(epoch));
        orderEpoch = epoch;
      }
      const size_t first =
          size_t((step - 1) % s.stepsPerEpoch) * size_t(s.batch);
      const double lr = s.schedule.lr(step, s.totalSteps);
      const int64_t dropoutKey[2] = {int64_t(s.dropoutSeed), step};
      Started &next = started.emplace_back(
          Started{step, epoch, lr, data::Batch{}, OutputBuffers(manifest_)});
      data::gather(train_, order.data() + first, size_t(s.batch), next.batch);
      std::vector<const void *> inputs = bindInputs(manifest_, next.batch);
      if (s.accumulate > 1)
        accumulatedStep(step, lr, inputs, next.outputs.resize(s.batch));
      else if (gpu_)
        gpu_->queueTrainStep(s.batch, float(lr), step, inputs.data(),
                             dropoutKey);
      else
        library_.trainStep(s.batch, current_.params.data(),
                           current_.adamM.data(), current_.adamV.data(),
                           current_.state.data(), float(lr), step,
                           inputs.data(), dropoutKey,
                           next.outputs.resize(s.batch));
    };
    // Steps queued on the GPU, their results read later; an accumulated
    // step is done when it returns.
    const bool queues = gpu_ && s.accumulate == 1;
    auto evaluatesOrStops = [&](int64_t step) {
      return step % s.evalEvery == 0 || step == s.totalSteps ||
             (stopAfter && step == *stopAfter);
    };
    auto stepClock = std::chrono::steady_clock::now();
    while (current_.step < s.totalSteps) {
      if (started.empty())
        start(current_.step + 1);
      const int64_t step = started.front().step;
      if (queues && started.size() == 1 && !evaluatesOrStops(step) &&
          !gStopRequested)
        start(step + 1);
      Started done = std::move(started.front());
      started.pop_front();
      float *const *outputPointers = done.outputs.resize(s.batch);
      if (queues)
        gpu_->finishTrainStep(outputPointers);
      const auto now = std::chrono::steady_clock::now();
      const double seconds =
          std::chrono::duration<double>(now - stepClock).count();
      stepClock = now;
      const int64_t epoch = done.epoch;
      const double lr = done.lr;
      const float loss = done.outputs.loss();
      const Hits hits =
          countHits(done.outputs.predictions(), classes, done.batch);
      const double accuracy =
          hits.total > 0 ? double(hits.hits) / double(hits.total) : NAN;
      metrics.train(step, epoch, lr, loss, accuracy, elapsed());
      if (!std::isfinite(loss)) {
        // The parameters are already updated with the bad gradient: nothing
        // is saved, last.safetensors stays the last good state.
        progress.finish();
        std::error_code ec;
        std::string kept =
            fs::exists(lastPath_, ec)
                ? fmt::format("The last good checkpoint, {}, is kept.",
                              lastPath_.string())
                : "No checkpoint had been saved yet.";
        std::fprintf(stderr,
                     "%s: error: step %lld: the loss is %s; stopping. %s "
                     "(a lower --lr, or clip in the model file, may help)\n",
                     kTool, (long long)step,
                     std::isnan(loss) ? "NaN" : "infinite", kept.c_str());
        return kExitNonFinite;
      }
      current_.step = step;
      progress.step(step, loss, accuracy, lr, seconds);

      bool saved = false;
      if (step % s.evalEvery == 0 || step == s.totalSteps) {
        evaluateAndSave();
        saved = true;
        stepClock = std::chrono::steady_clock::now();
        if (s.patience && evalsSinceBest_ >= *s.patience &&
            step != s.totalSteps) {
          progress.finish();
          std::fprintf(stderr,
                       "%s: stopping early after step %lld of %lld: %lld "
                       "evaluations without a better validation %s "
                       "(--patience)\n",
                       kTool, (long long)step, (long long)s.totalSteps,
                       (long long)evalsSinceBest_,
                       regression() ? "loss" : "accuracy");
          break;
        }
      }
      if (stopAfter && step == *stopAfter && step != s.totalSteps) {
        if (!saved)
          save(lastPath_);
        progress.finish();
        std::fprintf(stderr,
                     "%s: stopped after step %lld of %lld (--stop-after); "
                     "saved %s. Continue with --resume\n",
                     kTool, (long long)step, (long long)s.totalSteps,
                     lastPath_.string().c_str());
        return 0;
      }
      if (gStopRequested && started.empty()) { // a queued step ends first
        if (!saved)
          save(lastPath_);
        progress.finish();
        std::fprintf(stderr,
                     "%s: interrupted after step %lld of %lld; saved %s. "
                     "Continue with: lru-train %s --out %s --resume\n",
                     kTool, (long long)step, (long long)s.totalSteps,
                     lastPath_.string().c_str(),
                     library_.path().string().c_str(), out_.string().c_str());
        return kExitInterrupted;
      }
    }
    progress.finish();
    EvalResult test = testBest();
    const int64_t steps = current_.step;
    std::printf("%s: %lld step%s in %s (%.2f steps/s training)\n", kTool,
                (long long)steps, steps == 1 ? "" : "s",
                formatDuration(elapsed()).c_str(), progress.stepsPerSecond());
    if (regression()) {
      std::printf("%s: best val loss %.4f at step %lld (%s)\n", kTool,
                  bestLoss_, (long long)bestStep_, bestPath_.string().c_str());
      std::printf(
          "%s: test loss %.4f%s (%lld examples)\n", kTool, test.loss,
          targetErrors(test.squaredError, test.absoluteError, test.scored)
              .c_str(),
          (long long)test.examples);
    } else {
      std::printf("%s: best val accuracy %.2f%% at step %lld (%s)\n", kTool,
                  100 * bestAccuracy_, (long long)bestStep_,
                  bestPath_.string().c_str());
      const std::string steps =
          test.perStep ? fmt::format(" of {} steps", test.scored) : "";
      std::printf("%s: test accuracy %.2f%%%s (loss %.4f, %lld examples)\n",
                  kTool, 100 * test.accuracy, steps.c_str(), test.loss,
                  (long long)test.examples);
    }
    return 0;
  }

private:
  /// Real targets (loss mse): no accuracy; the best checkpoint has the
  /// lowest validation loss.
  bool regression() const {
    return train_.supervision == data::Supervision::Targets;
  }
  double elapsed() const {
    return elapsedBefore_ + std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - started_)
                                .count();
  }
  int64_t epochOf(int64_t step) const {
    return (std::max<int64_t>(step, 1) - 1) / settings_.stepsPerEpoch;
  }

  void save(const fs::path &path) {
    if (gpu_)
      gpu_->download(current_);
    Metadata &meta = current_.metadata;
    meta["epoch"] = std::to_string(epochOf(current_.step));
    meta["best_val_accuracy"] =
        bestAccuracy_ < 0 ? "" : fmt::format("{:.17g}", bestAccuracy_);
    meta["best_val_loss"] =
        std::isinf(bestLoss_) ? "" : fmt::format("{:.17g}", bestLoss_);
    meta["best_step"] = std::to_string(bestStep_);
    meta["evals_since_best"] = std::to_string(evalsSinceBest_);
    meta["elapsed_seconds"] = fmt::format("{:.3f}", elapsed());
    meta["train"] = settings_.all().dump();
    meta["written_by"] = lruc::tools::versionLine();
    meta["data_order"] =
        "philox-shuffle-v1: epoch e visits permutation(train_examples, seed, "
        "SHUF, e) in batches of `batch`; the last partial batch is dropped";
    saveCheckpoint(path, manifest_, current_);
  }

  EvalResult evaluateSplit(const Checkpoint &checkpoint, data::Split split) {
    if (gpu_) {
      // current_ may lag the device; the device's own blocks are current.
      if (&checkpoint == &current_)
        gpu_->evaluateTrainingBlocks();
      else
        gpu_->evaluateCheckpoint(checkpoint);
      return evaluate(
          manifest_,
          [&](int64_t count, const void *const *inputs,
              float *const *outputs) {
            gpu_->forward(count, inputs, outputs);
          },
          data_.split(split), settings_.evalBatch);
    }
    // Batches in parallel, as many as planCpuMemory fitted beside the step,
    // each on one thread (the pool at one meanwhile); a split of one batch
    // on the step's threads.
    const data::Dataset &dataset = data_.split(split);
    const auto batches =
        int64_t((dataset.size() + size_t(settings_.evalBatch) - 1) /
                size_t(settings_.evalBatch));
    const int calls = int(std::min<int64_t>(evalCalls_, batches));
    if (calls > 1)
      useKernelThreads(library_, 1);
    EvalResult r =
        evaluate(library_, checkpoint.params.data(), checkpoint.state.data(),
                 dataset, settings_.evalBatch, calls);
    if (calls > 1)
      useKernelThreads(library_, threads_);
    return r;
  }

  void evaluateAndSave() {
    EvalResult r = evaluateSplit(current_, data::Split::Val);
    const int64_t step = current_.step;
    metrics_->eval(step, epochOf(step), "val", r.loss, r.accuracy, r.examples,
                   elapsed(), r.absoluteError);
    // Classifiers keep the best accuracy; regression the lowest loss.
    bool best = false;
    if (regression()) {
      best = r.loss < bestLoss_;
      if (best)
        bestLoss_ = r.loss;
    } else {
      progress_->setAccuracy(r.accuracy);
      best = r.accuracy > bestAccuracy_;
      if (best)
        bestAccuracy_ = r.accuracy;
    }
    if (best)
      bestStep_ = step;
    evalsSinceBest_ = best ? 0 : evalsSinceBest_ + 1;
    progress_->print(fmt::format(
        "step {}: val loss {:.4f}{}{}", step, r.loss,
        regression() ? fmt::format(", MAE {:.4f}", r.absoluteError)
                     : fmt::format(", accuracy {:.2f}%", 100 * r.accuracy),
        best ? " (best so far)" : ""));
    // best first, so that last.safetensors never names a best that is not
    // there yet.
    if (best)
      save(bestPath_);
    save(lastPath_);
  }

  /// The test split, on the checkpoint that did best on validation.
  EvalResult testBest() {
    std::error_code ec;
    Checkpoint best =
        fs::exists(bestPath_, ec)
            ? loadCheckpoint(bestPath_, manifest_, OptimizerState::Optional)
            : current_;
    EvalResult test = evaluateSplit(best, data::Split::Test);
    metrics_->eval(bestStep_, epochOf(bestStep_), "test", test.loss,
                   test.accuracy, test.examples, elapsed(), test.absoluteError);
    return test;
  }

  const ModelLibrary &library_;
  const Manifest &manifest_;
  const RunSettings settings_;
  TaskData &data_;
  const data::Dataset &train_;
  const fs::path out_, lastPath_, bestPath_;
  int threads_; ///< the step's kernel threads: those that started
  const int evalCalls_;
  GpuModel *gpu_; ///< null: the CPU
  std::vector<float> gradSums_; ///< accumulated steps on the CPU

  Checkpoint current_; ///< on a GPU, as of the last save
  double bestAccuracy_ = -1;
  int64_t evalsSinceBest_ = 0; ///< evaluations since the best one
  double bestLoss_ = INFINITY; ///< regression: the lowest val loss
  int64_t bestStep_ = 0;
  double elapsedBefore_ = 0; // wall seconds of earlier segments of this run
  std::chrono::steady_clock::time_point started_ =
      std::chrono::steady_clock::now();
  MetricsLog *metrics_ = nullptr;
  Progress *progress_ = nullptr;
};

/// What a split scores: its scored steps (a class a step: a negative label
/// is not scored) or targets (NaN is not scored), of how many real ones.
struct ScoredValues {
  int64_t scored = 0, total = 0;
};

ScoredValues scoredValues(const data::Dataset &d) {
  const bool perStep = d.supervision == data::Supervision::StepLabels ||
                       d.targetShape.size() == 2;
  const auto L = int64_t(d.length);
  const int64_t values = d.supervision == data::Supervision::Targets
                             ? int64_t(numElements(d.targetShape))
                             : L;
  ScoredValues v;
  for (size_t i = 0; i < d.size(); ++i) {
    const auto steps =
        int32_t(d.kind == data::InputKind::Features
                    ? (d.featureLengths.empty() ? L : d.featureLengths[i])
                    : int64_t(d.sequence(i).size));
    if (d.supervision == data::Supervision::StepLabels) {
      v.scored +=
          scoredSteps(&steps, d.stepLabels.data() + i * size_t(L), 1, L);
      v.total += steps;
    } else {
      v.scored += scoredTargets(d.targets.data() + i * size_t(values), 1,
                                values, perStep ? &steps : nullptr, L);
      v.total += perStep ? steps * (values / L) : values;
    }
  }
  return v;
}

/// A class a step or real targets: training needs a value to learn from,
/// and choosing the best checkpoint one to score. Returns what `d` scores.
ScoredValues requireScored(const data::Dataset &d, const std::string &what) {
  if (d.supervision == data::Supervision::Labels)
    return {};
  const ScoredValues v = scoredValues(d);
  if (v.scored > 0)
    return v;
  if (d.supervision == data::Supervision::StepLabels)
    throw HostError(fmt::format("{}: no step is scored (every label of a "
                                "real step is negative)",
                                what));
  throw HostError(
      fmt::format("{}: no target is scored (every value of "
                  "\"targets\"{} is NaN)",
                  what, d.targetShape.size() == 2 ? " at a real step" : ""));
}

/// The CPU's memory for a run: a warning where the training blocks, a
/// step's workspace (the manifest's) and, under an address-space cap,
/// OpenBLAS's buffers for the step's `threads` pass the memory available;
/// returns how many of `threads` evaluation batches run side by side in
/// what is left beside them (with a warning where that holds back the
/// validation split's `valExamples`).
int planCpuMemory(const Manifest &m, const RunSettings &s, int threads,
                  size_t valExamples) {
  const MemoryBudget budget = memoryBudget();
  const std::optional<uint64_t> &available = budget.available;
  const bool accumulating = s.accumulate > 1;
  const std::optional<uint64_t> step = m.workspaceBytes(
      accumulating ? "accumulate_gradients" : "train_step", s.microBatch());
  const uint64_t blocks = m.trainingStateBytes(accumulating);
  // A thread and a BLAS buffer for each of the step's threads; evaluation,
  // on no more threads at once, reuses them.
  const uint64_t threadsAndBlas = uint64_t(threads) * budget.besideEachCall;
  const uint64_t held = blocks + threadsAndBlas + step.value_or(0);
  const bool stepFits = !available || !step || held <= *available;
  if (available && blocks > *available)
    // The model alone: a smaller batch would not help.
    std::fprintf(stderr,
                 "%s: warning: model '%s' takes %s of parameters and "
                 "optimizer state, and %s of memory is available: the run "
                 "may fail, or the system may stop it (a model with fewer "
                 "parameters takes less)\n",
                 kTool, m.model.c_str(),
                 core::formatBytes(double(blocks)).c_str(),
                 core::formatBytes(double(*available)).c_str());
  else if (!stepFits)
    std::fprintf(
        stderr,
        "%s: warning: a training step at batch %lld takes %s of workspace "
        "beside %s of parameters and optimizer state%s, and %s of memory is "
        "available: the step may fail, or the system may stop the run (a "
        "smaller --batch, --accumulate N or a library compiled with `lruc "
        "--recompute=states` takes less)\n",
        kTool, (long long)s.microBatch(),
        core::formatBytes(double(*step)).c_str(),
        core::formatBytes(double(blocks)).c_str(),
        threadsAndBlas
            ? fmt::format(" and {} for its threads and OpenBLAS's buffers "
                          "under the address-space limit",
                          core::formatBytes(double(threadsAndBlas)))
                  .c_str()
            : "",
        core::formatBytes(double(*available)).c_str());
  MemoryBudget left;
  if (available)
    left.available = *available > held ? *available - held : 0;
  // The test split, read at the end, may be larger than validation's: its
  // batches are the evaluation batch whole.
  const int64_t evalBatch = std::max<int64_t>(s.evalBatch, 1);
  std::string why;
  const int calls =
      batchesSideBySide(m, "forward", evalBatch, threads, left, why);
  const int64_t valBatches = (int64_t(valExamples) + evalBatch - 1) / evalBatch;
  // Not when validation has no more batches than run at once anyway, nor
  // when the step's warning has said it all.
  if (!why.empty() && calls < valBatches && stepFits)
    std::fprintf(stderr,
                 "%s: warning: evaluation runs %s beside the training step (a "
                 "smaller --eval-batch runs more at once)\n",
                 kTool, why.c_str());
  return calls;
}

int trainMain(int argc, char **argv) {
  const Flags f = parseFlags(argc, argv);
  const int threads = tools::threadsOrAllCores(f.threads);
  // The library's kernels split GEMMs across their own threads, each part
  // one single-threaded OpenBLAS call; OpenBLAS's own idle threads would
  // spin on sched_yield against them. OpenBLAS reads this when the model
  // library pulls it in.
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  keepFreedMemoryForReuse();

  ModelLibrary library = ModelLibrary::open(f.model);
  const Manifest &manifest = library.manifest();
  const std::string libraryName = library.path().string();
  // auto: the GPU when the library has kernels for one and the machine
  // has one, else the CPU.
  std::unique_ptr<GpuModel> gpu =
      GpuModel::openForDevice(library, f.devices.deviceOrAuto(), kTool,
                              matmulNamed(f.devices.matmulOrFp32()));

  const TrainSettings base = manifest.train.value_or(TrainSettings{});
  RunSettings s = settingsFrom(base, f);
  const fs::path out = f.out.value_or("runs/" + manifest.model);
  const fs::path lastPath = out / "last.safetensors";
  // Held before --out is read, for as long as the process runs.
  const RunDirectoryLock outLock(out);
  std::error_code ec;
  std::optional<Checkpoint> resumed;
  std::optional<StoredSettings> stored;
  if (f.resume) {
    if (!fs::exists(lastPath, ec))
      throw HostError(fmt::format("{}: no such file: nothing to resume (run "
                                  "without --resume to start)",
                                  lastPath.string()));
    resumed = loadCheckpoint(lastPath, manifest, OptimizerState::Required);
    stored.emplace(*resumed, lastPath.string());
    adoptCheckpointSettings(s, f, *stored);
  } else if (fs::exists(lastPath, ec)) {
    throw UsageError(fmt::format(
        "{} already holds a run ({}): pass --resume to continue it, or choose "
        "another --out",
        out.string(), lastPath.filename().string()));
  }
  if (s.task.empty())
    throw UsageError(fmt::format(
        "{} names no task (compiled without a train section?): pass --task "
        "NAME and --data DIR",
        libraryName));

  // A fine-tuning run's starting point, read before anything is written.
  std::optional<Checkpoint> initial;
  if (f.initFrom)
    initial = loadCheckpoint(*f.initFrom, manifest, OptimizerState::Optional);

  DataOptions dataOptions;
  dataOptions.task = s.task;
  dataOptions.root = s.dataRoot;
  dataOptions.length = modelSequenceLength(manifest);
  dataOptions.seed = s.seed;
  dataOptions.valFraction = s.valFraction;
  dataOptions.maxTrain = s.maxTrain;
  dataOptions.maxEval = s.maxEval;
  dataOptions.warn = [](const std::string &message) {
    std::fprintf(stderr, "%s: warning: %s\n", kTool, message.c_str());
  };
  TaskData data(dataOptions);
  const data::Dataset &train = data.split(data::Split::Train);
  const data::Dataset &val = data.split(data::Split::Val);
  if (train.size() == 0 || val.size() == 0)
    throw HostError(fmt::format("{}: the {} set is empty", s.task,
                                train.size() == 0 ? "training" : "validation"));
  checkModelFitsData(manifest, libraryName, train,
                     fmt::format("{} (train)", s.task));
  checkModelFitsData(manifest, libraryName, val,
                     fmt::format("{} (val)", s.task));
  const ScoredValues trainScored =
      requireScored(train, fmt::format("{} (train)", s.task));
  requireScored(val, fmt::format("{} (val)", s.task));
  // A user's own files may differ split by split: test.safetensors is read
  // and checked now, not after training.
  if (s.task == kTensorsTask)
    checkModelFitsData(manifest, libraryName, data.split(data::Split::Test),
                       fmt::format("{} (test)", s.task));
  planSteps(s, f, base, train.size(), stored ? &*stored : nullptr,
            lastPath.string());

  // Device memory before anything is written: too little is an error. On
  // the CPU, what a step and an evaluation's batches will take, weighed
  // against what the machine has left.
  int evalCalls = threads;
  if (gpu)
    gpu->reserve(std::max(s.microBatch(), s.evalBatch));
  else
    evalCalls = planCpuMemory(manifest, s, threads, val.size());

  removeStaleTemporaries(out);

  Trainer trainer(library, s, data, out, threads, evalCalls, gpu.get());
  std::string device = fmt::format(
      "cpu ({} thread{}{})", trainer.threads(),
      trainer.threads() == 1 ? "" : "s",
      f.devices.matmulOrFp32() == "bf16" ? ", bfloat16 products" : "");
  if (gpu)
    device = "gpu: " + gpu->deviceDescription();
  if (resumed)
    trainer.restore(std::move(*resumed));
  else if (initial)
    trainer.initialiseFrom(*initial);
  else
    trainer.initialise();
  trainer.uploadToGpu();

  // What this run is, in a file of its own (the checkpoints carry it too).
  json config = s.all();
  config["model"] = manifest.model;
  config["library"] = fs::absolute(library.path()).string();
  if (f.initFrom)
    config["init_from"] = fs::absolute(*f.initFrom).string();
  config["validation"] = data.validationSource();
  config["threads"] = trainer.threads();
  config["device"] = device;
  if (gpu || f.devices.matmulOrFp32() == "bf16")
    config["matmul"] = f.devices.matmulOrFp32();
  writeFileAtomically(out / "config.json", config.dump(2) + "\n");

  std::fprintf(
      stderr,
      "%s: %s on %s: %s, train %zu, val %zu (%s)\n"
      "%s: %lld steps (%lld per epoch) of batch %lld%s, lr %g (%s), "
      "eval every %lld steps, output in %s\n",
      kTool, manifest.model.c_str(), device.c_str(), s.task.c_str(),
      train.size(), val.size(), data.validationSource().c_str(), kTool,
      (long long)s.totalSteps, (long long)s.stepsPerEpoch, (long long)s.batch,
      s.accumulate > 1 ? fmt::format(" ({} micro-batches of {})", s.accumulate,
                                     s.microBatch())
                             .c_str()
                       : "",
      s.schedule.peak, std::string(scheduleName(s.schedule.kind)).c_str(),
      (long long)s.evalEvery, out.string().c_str());
  if (train.supervision == data::Supervision::Targets &&
      trainScored.scored < trainScored.total)
    std::fprintf(stderr,
                 "%s: %lld of %lld training targets are NaN (not scored)\n",
                 kTool, (long long)(trainScored.total - trainScored.scored),
                 (long long)trainScored.total);
  if (resumed)
    std::fprintf(stderr, "%s: resuming at step %lld from %s\n", kTool,
                 (long long)trainer.step(), lastPath.string().c_str());

  const int64_t logEvery =
      f.logEvery.value_or(std::clamp<int64_t>(s.totalSteps / 20, 1, 100));
  return trainer.run(f.stopAfter, logEvery);
}

} // namespace

int main(int argc, char **argv) {
  return tools::runTool(kTool, trainMain, argc, argv);
}
