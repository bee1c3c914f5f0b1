//===- Evaluate.h - Feed data batches to a model library --------*- C++ -*-===//
//
// The bridge between the data layer (lruc::data::Batch, in the model's input
// layout) and a model library's entry points: which batch vector is which
// model input, and evaluation of a whole split in eval mode (forward:
// running statistics, no dropout), in batches.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_HOST_EVALUATE_H
#define LRUC_HOST_EVALUATE_H

#include "lruc/data/Dataset.h"
#include "lruc/host/Memory.h"
#include "lruc/host/ModelLibrary.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lruc::host {

/// Throws HostError unless every model input is one that `dataset`'s
/// batches provide (features, tokens, lengths, labels, tokens_a, ...) with
/// the dataset's length and channels, and the predictions have at least
/// the dataset's number of classes. `what` names the data in messages
/// ("fashion_mnist (train)"), `library` the model library.
void checkModelFitsData(const Manifest &manifest, const std::string &library,
                        const data::Dataset &dataset, const std::string &what);

/// The model's inputs in call order, pointing into `batch`.
std::vector<const void *> bindInputs(const Manifest &manifest,
                                     const data::Batch &batch);

/// Floats of output `output` for a batch of `batch` (-1 dims are the batch).
size_t outputElements(const TensorInfo &output, int64_t batch);
/// Bytes of input `input` for a batch of `batch` (a batch of 1: a row's).
size_t inputBytes(const TensorInfo &input, int64_t batch);

/// How many of `threads` CPU calls of the library's `function` ("forward",
/// "step") at `batch` run side by side, as evaluation and lru-predict run
/// batches: as many as the budget's bytes hold of the workspace each call
/// leases and what it needs beside it (callsThatFit, lruc/host/Memory.h).
/// Where that is fewer than `threads`, `why` says so ("3 batches at a time,
/// not 16: ...", for a warning); else it is cleared.
int batchesSideBySide(const Manifest &manifest, std::string_view function,
                      int64_t batch, int threads, const MemoryBudget &budget,
                      std::string &why);

/// How evaluation runs its calls of `function` on `threads` CPU threads.
struct EvaluationThreads {
  int calls = 1;         ///< batches side by side, each on a thread
  int kernelThreads = 1; ///< the kernel pool's threads (useKernelThreads)
};

/// For `examples` in batches of `batch` on `threads` threads, as lru-eval
/// and lru-predict run them (a call's batch is the smaller of the two): the
/// calls batchesSideBySide runs side by side, never more than there are
/// batches (`why` as it says), each call's kernels on one thread (the
/// pool's threads would contend with the calls'); or, where that is one
/// call at a time (a single batch, or memory for one workspace), its
/// kernels on as many of the threads as the budget holds beside its
/// workspace (each thread with what besideEachCall counts under an
/// address-space cap).
EvaluationThreads evaluationThreads(int64_t examples, const Manifest &manifest,
                                    std::string_view function, int64_t batch,
                                    int threads, const MemoryBudget &budget,
                                    std::string &why);

/// Index of the largest of `count` values (the first on a tie); a NaN never
/// wins, and all-NaN gives -1 (counted as wrong).
int64_t argmax(const float *values, int64_t count);

/// How many of `count` rows of `predictions` (`classes` values each) have
/// their argmax at the row's label.
int64_t countCorrect(const float *predictions, int64_t classes,
                     const int32_t *labels, int64_t count);

/// How many steps a per-step loss averages over, for `count` sequences of
/// `steps` padded steps: the real ones (t < lengths[k]) and, with
/// `stepLabels` [count, steps], only those whose label is not negative
/// (a negative label marks a step not scored).
int64_t scoredSteps(const int32_t *lengths, const int32_t *stepLabels,
                    int64_t count, int64_t steps);

/// Σ classWeights[label] over the labels a class-weighted cross entropy
/// scores: `count` examples' labels or, with `lengths`, the real steps
/// (t < lengths[k]) of [count, steps] step labels, a negative label left out.
/// It is such a loss's denominator (Σ w[label] loss / Σ w[label]), so batch
/// means combine weighed by it: weighed by examples, a split's loss would
/// depend on how it was cut into batches.
double classWeightSum(const std::vector<float> &classWeights,
                      const int32_t *labels, int64_t count,
                      const int32_t *lengths = nullptr, int64_t steps = 0);

/// The weight of a batch's mean loss among other batches': what the mean
/// is over, from the batch's model inputs (`inputs`, in the manifest's
/// order, `count` examples): its examples; for per-step predictions, its
/// real steps whose label is not negative; for real targets, those that
/// are not NaN (at real steps); with class weights, the sum of the scored
/// labels' weights. Batch means weighed by it add up to the mean over all
/// their examples, however they were cut into batches (evaluations,
/// lru-predict, accumulated micro-batches).
double lossWeight(const Manifest &manifest, int64_t count,
                  const void *const *inputs);

/// The mean over several batches of their losses, given each batch's loss
/// times its lossWeight and those weights (in batch order, so the sum does
/// not depend on threads): Σ sums / Σ weights, 0 when nothing was scored
/// (each batch's loss is 0 then). Class weights may sum below 1.
double meanOverBatches(const std::vector<double> &weightedLosses,
                       const std::vector<double> &weights);

/// Sums of a regression's errors, |prediction - target| and its square.
struct TargetErrorSums {
  double absolute = 0, squared = 0;
};

/// How many of `count` examples' real targets (`values` floats each) a
/// regression loss scores: those that are not NaN (NaN marks a value not
/// scored) and, with `lengths`, within each example's real steps (targets
/// [count, steps, values / steps]). With `predictions` (of the targets'
/// shape), also adds their errors over them to `sums`.
int64_t scoredTargets(const float *targets, int64_t count, int64_t values,
                      const int32_t *lengths = nullptr, int64_t steps = 0,
                      const float *predictions = nullptr,
                      TargetErrorSums *sums = nullptr);

/// What the tools print after a regression's loss, from the mean squared
/// and absolute errors of `scored` values: ", RMSE 0.0283, MAE 0.0221 of
/// 8542 values", or ", no value scored". (The loss may be another one's:
/// `l1`, `huber`.)
std::string targetErrors(double meanSquared, double meanAbsolute,
                         int64_t scored);

/// Argmax hits of a batch's predictions (`classes` values each) against its
/// labels: a class an example (Supervision::Labels) or a class a real,
/// scored step (StepLabels), each also counted in `confusion`
/// ([label][predicted], classes × classes) when given. Targets: none, out of
/// none.
struct Hits {
  int64_t hits = 0, total = 0;
};
Hits countHits(const float *predictions, int64_t classes,
               const data::Batch &batch, int64_t *confusion = nullptr);

/// Buffers for a model's outputs (the loss, then the predictions) at one
/// batch size, as forward and train_step write them.
class OutputBuffers {
public:
  explicit OutputBuffers(const Manifest &manifest)
      : manifest_(&manifest), values_(manifest.outputs.size()),
        pointers_(values_.size()) {}

  /// Sizes the buffers for `batch` examples; the pointers to pass.
  float *const *resize(int64_t batch);
  float loss() const { return values_[0][0]; }
  const float *predictions() const { return values_[1].data(); }

private:
  const Manifest *manifest_;
  std::vector<std::vector<float>> values_;
  std::vector<float *> pointers_;
};

struct EvalResult {
  /// The mean over examples (per-step losses: over their real steps).
  double loss = 0;
  /// The fraction of examples (per-step labels: of real, scored steps)
  /// whose argmax prediction is the label; NaN for real targets (classes 0)
  /// or when no step is scored.
  double accuracy = 0;
  int64_t examples = 0;
  /// What the accuracy counts: the examples, or (perStep) the scored steps;
  /// for real targets, the values scored (not NaN, at real steps).
  int64_t scored = 0;
  /// Real targets: the mean absolute and squared errors over the scored
  /// values; NaN otherwise or when none is.
  double absoluteError = 0, squaredError = 0;
  /// [label][predicted class], `classes` × `classes` (the predictions'
  /// width; 0 for real targets): how many examples (steps) of each label
  /// got each argmax (an all-NaN prediction counts in no column).
  int64_t classes = 0;
  std::vector<int64_t> confusion;
  bool perStep = false; ///< a class a step: accuracy and counts are of steps
};

/// Evaluates `dataset` (eval mode) in batches of at most `batch` examples,
/// batches spread over `threads` threads (the entry points are reentrant).
/// The result does not depend on `threads`: per-batch sums are added in
/// batch order.
EvalResult evaluate(const ModelLibrary &library, const float *params,
                    const float *state, const data::Dataset &dataset,
                    int64_t batch, int threads = 1);

/// One eval-mode forward of `count` examples: `inputs` as bindInputs gives
/// them, `outputs` as OutputBuffers sizes them.
using ForwardFn = std::function<void(int64_t count, const void *const *inputs,
                                     float *const *outputs)>;

/// Calls `work(begin, end, worker)` for each batch [begin, end) of at
/// most `batch` of `examples` examples, the batches shared out over
/// `threads` threads (`worker` in [0, threads): whose scratch to use). The
/// first exception stops the batches not yet begun and is rethrown.
void forEachBatch(
    size_t examples, int64_t batch, int threads,
    const std::function<void(size_t begin, size_t end, int worker)> &work);

/// Gives `library`'s kernel pool `threads` threads (lruc_cpu_set_threads;
/// OpenBLAS at one, as the kernels split their products themselves).
/// Returns how many it has: fewer where the system would not start more.
int useKernelThreads(const ModelLibrary &library, int threads);

/// The same with any forward (a GPU's): called from `threads` threads at
/// once, so it must be reentrant when `threads` > 1.
EvalResult evaluate(const Manifest &manifest, const ForwardFn &forward,
                    const data::Dataset &dataset, int64_t batch,
                    int threads = 1);

} // namespace lruc::host

#endif // LRUC_HOST_EVALUATE_H
