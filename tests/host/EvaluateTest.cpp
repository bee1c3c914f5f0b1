//===- EvaluateTest.cpp - Which batch vector feeds which model input ------===//

#include "lruc/host/Evaluate.h"
#include "lruc/host/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace {

using namespace lruc::host;
using lruc::data::InputKind;

Manifest manifestWith(std::vector<TensorInfo> inputs, int64_t classes) {
  Manifest m;
  m.model = "m";
  m.inputs = std::move(inputs);
  m.outputs = {{"loss", DType::F32, {}},
               {"predictions", DType::F32, {-1, classes}}};
  return m;
}

lruc::data::Dataset dataset(InputKind kind, int64_t length, int64_t channels,
                            int64_t classes) {
  lruc::data::Dataset d;
  d.kind = kind;
  d.length = length;
  d.channels = channels;
  d.classes = classes;
  return d;
}

std::string fitError(const Manifest &m, const lruc::data::Dataset &d) {
  try {
    checkModelFitsData(m, "m.so", d, "task (train)");
  } catch (const HostError &e) {
    return e.what();
  }
  return "";
}

TEST(Inputs, Features) {
  Manifest m = manifestWith({{"features", DType::F32, {-1, 784, 1}},
                             {"lengths", DType::I32, {-1}},
                             {"labels", DType::I32, {-1}}},
                            10);
  EXPECT_EQ(fitError(m, dataset(InputKind::Features, 784, 1, 10)), "");
  EXPECT_EQ(fitError(m, dataset(InputKind::Features, 1024, 3, 10)),
            "m.so: input \"features\" is F32 [B, 784, 1]; task (train) gives "
            "F32 [B, 1024, 3]");
  EXPECT_EQ(fitError(m, dataset(InputKind::Features, 784, 1, 12)),
            "m.so: predictions are [-1, 10]; task (train) has 12 classes");
  EXPECT_EQ(fitError(m, dataset(InputKind::Tokens, 784, 0, 10)),
            "m.so: the model reads input \"features\", which task (train) "
            "(tokens data) does not provide");

  lruc::data::Batch b;
  b.kind = InputKind::Features;
  b.features.resize(4);
  b.lengths.resize(1);
  b.labels.resize(1);
  std::vector<const void *> p = bindInputs(m, b);
  EXPECT_EQ(p, (std::vector<const void *>{b.features.data(), b.lengths.data(),
                                          b.labels.data()}));
}

TEST(Inputs, TokensAndPairs) {
  Manifest tokens = manifestWith({{"tokens", DType::I32, {-1, 2048}},
                                  {"lengths", DType::I32, {-1}},
                                  {"labels", DType::I32, {-1}}},
                                 10);
  EXPECT_EQ(fitError(tokens, dataset(InputKind::Tokens, 2048, 0, 10)), "");
  Manifest pairs = manifestWith({{"tokens_a", DType::I32, {-1, 4000}},
                                 {"lengths_a", DType::I32, {-1}},
                                 {"tokens_b", DType::I32, {-1, 4000}},
                                 {"lengths_b", DType::I32, {-1}},
                                 {"labels", DType::I32, {-1}}},
                                2);
  EXPECT_EQ(fitError(pairs, dataset(InputKind::TokenPairs, 4000, 0, 2)), "");
  // A pair model has no plain "lengths": a tokens task cannot feed it.
  EXPECT_NE(fitError(pairs, dataset(InputKind::Tokens, 4000, 0, 2)), "");

  lruc::data::Batch b;
  b.kind = InputKind::TokenPairs;
  b.tokens.resize(2);
  b.lengths.resize(1);
  b.tokensB.resize(2);
  b.lengthsB.resize(1);
  b.labels.resize(1);
  EXPECT_EQ(bindInputs(pairs, b),
            (std::vector<const void *>{b.tokens.data(), b.lengths.data(),
                                       b.tokensB.data(), b.lengthsB.data(),
                                       b.labels.data()}));
}

TEST(Inputs, TheLossInputMatchesTheSupervision) {
  Manifest m = manifestWith({{"features", DType::F32, {-1, 8, 1}},
                             {"lengths", DType::I32, {-1}},
                             {"targets", DType::F32, {-1, 8, 1}}},
                            1);
  m.outputs[1].shape = {-1, 8, 1};
  EXPECT_EQ(fitError(m, dataset(InputKind::Features, 8, 1, 1)),
            "m.so: the model reads input \"targets\", which task (train) "
            "(features data) does not provide");
  lruc::data::Dataset real = dataset(InputKind::Features, 8, 1, 0);
  real.supervision = lruc::data::Supervision::Targets;
  real.targetShape = {8, 1};
  EXPECT_EQ(fitError(m, real), "");
  real.targetShape = {1};
  EXPECT_EQ(fitError(m, real),
            "m.so: input \"targets\" is F32 [B, 8, 1]; task (train) gives "
            "F32 [B, 1]");

  // A class a step: labels [B, L].
  Manifest tagger = manifestWith({{"features", DType::F32, {-1, 8, 1}},
                                  {"lengths", DType::I32, {-1}},
                                  {"labels", DType::I32, {-1, 8}}},
                                 3);
  tagger.outputs[1].shape = {-1, 8, 3};
  lruc::data::Dataset steps = dataset(InputKind::Features, 8, 1, 3);
  steps.supervision = lruc::data::Supervision::StepLabels;
  EXPECT_EQ(fitError(tagger, steps), "");
  EXPECT_EQ(fitError(tagger, dataset(InputKind::Features, 8, 1, 3)),
            "m.so: input \"labels\" is I32 [B, 8]; task (train) gives I32 [B]");
  steps.classes = 4;
  EXPECT_EQ(fitError(tagger, steps),
            "m.so: predictions are [-1, 8, 3]; task (train) has 4 classes");
}

} // namespace

namespace {

TEST(Evaluate, ConfusionCountsEachLabelsPredictions) {
  // Three classes; the "model" predicts the features of the single step.
  Manifest m = manifestWith({{"features", DType::F32, {-1, 1, 3}},
                             {"lengths", DType::I32, {-1}},
                             {"labels", DType::I32, {-1}}},
                            3);
  lruc::data::Dataset d = dataset(InputKind::Features, 1, 3, 3);
  const float nan = std::nanf("");
  // predicted class:  0        1        2        2        0    (none: NaN)
  d.values = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0, nan, nan, nan};
  d.labels = {0, 1, 1, 2, 2, 0};
  ForwardFn forward = [](int64_t count, const void *const *inputs,
                         float *const *outputs) {
    const auto *features = static_cast<const float *>(inputs[0]);
    std::copy_n(features, count * 3, outputs[1]);
    *outputs[0] = 0.5f;
  };
  for (int threads : {1, 3}) {
    EvalResult r = evaluate(m, forward, d, /*batch=*/2, threads);
    EXPECT_EQ(r.examples, 6);
    EXPECT_EQ(r.classes, 3);
    EXPECT_DOUBLE_EQ(r.loss, 0.5);
    EXPECT_DOUBLE_EQ(r.accuracy, 3.0 / 6.0); // examples 0, 1 and 3
    EXPECT_EQ(r.confusion,
              (std::vector<int64_t>{1, 0, 0,    // label 0: the NaN in no column
                                    0, 1, 1,    // label 1
                                    1, 0, 1})); // label 2
  }
}

} // namespace

namespace {

TEST(Evaluate, StepLabelsScoreRealStepsAndTargetsHaveNoAccuracy) {
  // Two steps, two classes; the "model" predicts the features of each step.
  Manifest m = manifestWith({{"features", DType::F32, {-1, 2, 2}},
                             {"lengths", DType::I32, {-1}},
                             {"labels", DType::I32, {-1, 2}}},
                            2);
  m.outputs[1].shape = {-1, 2, 2};
  lruc::data::Dataset d = dataset(InputKind::Features, 2, 2, 2);
  d.supervision = lruc::data::Supervision::StepLabels;
  // predicted:   step 0: 0, step 1: 1 | step 0: 1, step 1: 1
  d.values = {1, 0, 0, 1, 0, 1, 0, 1};
  d.labels = {0, 0};
  d.stepLabels = {0, 0, 1, 1};
  ForwardFn forward = [](int64_t count, const void *const *inputs,
                         float *const *outputs) {
    std::copy_n(static_cast<const float *>(inputs[0]), count * 4, outputs[1]);
    *outputs[0] = 0.25f;
  };
  EvalResult r = evaluate(m, forward, d, /*batch=*/1, /*threads=*/2);
  EXPECT_TRUE(r.perStep);
  EXPECT_DOUBLE_EQ(r.accuracy, 3.0 / 4.0);
  EXPECT_DOUBLE_EQ(r.loss, 0.25);
  EXPECT_EQ(r.confusion, (std::vector<int64_t>{1, 1, 0, 2}));

  // A step labelled -1 is not scored: neither in the accuracy nor in the
  // weight of its batch's loss (here 1 + the first feature: 2 and 1).
  d.stepLabels = {0, -1, 1, 1};
  ForwardFn byFirst = [&](int64_t count, const void *const *inputs,
                          float *const *outputs) {
    forward(count, inputs, outputs);
    *outputs[0] = 1.0f + *static_cast<const float *>(inputs[0]);
  };
  r = evaluate(m, byFirst, d, /*batch=*/1, /*threads=*/1);
  EXPECT_DOUBLE_EQ(r.accuracy, 1.0); // the one wrong step is not scored
  EXPECT_DOUBLE_EQ(r.loss, (2.0 * 1 + 1.0 * 2) / 3);
  EXPECT_EQ(r.confusion, (std::vector<int64_t>{1, 0, 0, 2}));
  const int32_t lengths[] = {2, 1};
  EXPECT_EQ(scoredSteps(lengths, d.stepLabels.data(), 2, 2), 2);
  EXPECT_EQ(scoredSteps(lengths, nullptr, 2, 2), 3);

  Manifest regression = m;
  regression.inputs[2] = {"targets", DType::F32, {-1, 2, 2}};
  d.supervision = lruc::data::Supervision::Targets;
  d.stepLabels.clear();
  d.classes = 0;
  d.targetShape = {2, 2};
  d.targets.assign(8, 0.5f);
  r = evaluate(regression, forward, d, 1, 1);
  EXPECT_EQ(r.classes, 0);
  EXPECT_TRUE(std::isnan(r.accuracy));
  EXPECT_TRUE(r.confusion.empty());
  EXPECT_DOUBLE_EQ(r.loss, 0.25);

  // A NaN target is not scored: each batch's loss (here 1 + the first
  // feature: 2 and 1) weighs as many as it scores (3 and 1).
  const float nan = std::nanf("");
  d.targets = {0.5f, nan, 0.5f, 0.5f, nan, nan, nan, 0.5f};
  r = evaluate(regression, byFirst, d, 1, 1);
  EXPECT_DOUBLE_EQ(r.loss, (2.0 * 3 + 1.0 * 1) / 4);
  // The predictions are the features: |1 - 0.5|, |0 - 0.5|, |1 - 0.5| and
  // |1 - 0.5| over the scored values.
  EXPECT_EQ(r.scored, 4);
  EXPECT_DOUBLE_EQ(r.absoluteError, 0.5);
  EXPECT_DOUBLE_EQ(r.squaredError, 0.25);
  EXPECT_EQ(targetErrors(r.squaredError, r.absoluteError, r.scored),
            ", RMSE 0.5000, MAE 0.5000 of 4 values");
  EXPECT_EQ(targetErrors(0, NAN, 0), ", no value scored");
  EXPECT_EQ(scoredTargets(d.targets.data(), 2, 4), 4);
  // Per step, only within each example's real steps (2 and 1).
  EXPECT_EQ(scoredTargets(d.targets.data(), 2, 4, lengths, 2), 3);
}

} // namespace

namespace {

TEST(Evaluate, ClassWeightedBatchesWeighTheirLabelsWeights) {
  // A class-weighted mean's denominator is Σ w[label]: a split's loss is
  // Σ_b loss_b W_b / Σ_b W_b, the same however it is cut into batches.
  Manifest m = manifestWith({{"features", DType::F32, {-1, 1, 2}},
                             {"lengths", DType::I32, {-1}},
                             {"labels", DType::I32, {-1}}},
                            2);
  m.classWeights = {3.0f, 0.5f};
  lruc::data::Dataset d = dataset(InputKind::Features, 1, 2, 3);
  d.values = {1, 0, 0, 1, 0, 1};
  d.labels = {0, 1, 1};
  // The "model": each example's loss is 1 + its first feature
  // (2, 1, 1), the batch's the weighted mean of its examples'.
  std::vector<float> weights = m.classWeights;
  ForwardFn forward = [&](int64_t count, const void *const *inputs,
                          float *const *outputs) {
    const auto *features = static_cast<const float *>(inputs[0]);
    const auto *labels = static_cast<const int32_t *>(inputs[2]);
    double sum = 0, total = 0;
    for (int64_t k = 0; k < count; ++k) {
      sum += weights[size_t(labels[k])] * (1.0 + features[k * 2]);
      total += weights[size_t(labels[k])];
    }
    std::copy_n(features, count * 2, outputs[1]);
    *outputs[0] = float(sum / total);
  };
  const double whole = (3.0 * 2 + 0.5 * 1 + 0.5 * 1) / (3.0 + 0.5 + 0.5);
  for (int64_t batch : {1, 2, 3})
    EXPECT_NEAR(evaluate(m, forward, d, batch, 1).loss, whole, 1e-6)
        << "batches of " << batch;
  // Weights that sum below 1 in every batch.
  m.classWeights = weights = {0.2f, 0.1f};
  for (int64_t batch : {1, 2, 3})
    EXPECT_NEAR(evaluate(m, forward, d, batch, 1).loss,
                (0.2 * 2 + 0.1 * 1 + 0.1 * 1) / 0.4, 1e-6)
        << "batches of " << batch;
  // Unweighted by the manifest, batches of 2 weigh by examples: a
  // different number, the one the weights put right.
  m.classWeights.clear();
  EXPECT_GT(std::abs(evaluate(m, forward, d, 2, 1).loss - 1.5), 0.05);
  weights = {3.0f, 0.5f};

  const int32_t labels[] = {0, 1, 1};
  EXPECT_DOUBLE_EQ(classWeightSum(weights, labels, 3), 4.0);
  // Per step: real steps only (lengths 2 and 1), a negative label left out.
  const int32_t stepLabels[] = {0, -1, 1, 0};
  const int32_t lengths[] = {2, 1};
  EXPECT_DOUBLE_EQ(classWeightSum(weights, stepLabels, 2, lengths, 2), 3.5);

  // lossWeight reads the same from a batch's model inputs, for any loss.
  const float features[4] = {};
  const void *pooled[] = {features, lengths, labels};
  EXPECT_DOUBLE_EQ(lossWeight(m, 2, pooled), 2.0); // unweighted: examples
  m.classWeights = weights;
  EXPECT_DOUBLE_EQ(lossWeight(m, 3, pooled), 4.0);
  Manifest tagger = m;
  tagger.inputs[2].shape = {-1, 2};
  tagger.outputs[1].shape = {-1, 2, 2};
  const void *tagged[] = {features, lengths, stepLabels};
  EXPECT_DOUBLE_EQ(lossWeight(tagger, 2, tagged), 3.5);
  tagger.classWeights.clear();
  EXPECT_DOUBLE_EQ(lossWeight(tagger, 2, tagged), 2.0); // steps 0 and 2
  tagger.inputs[2] = {"targets", DType::F32, {-1, 2, 1}};
  const float nan = std::nanf("");
  const float targets[] = {0.5f, nan, 1.0f, 2.0f}; // example 1: 1 real step
  const void *regression[] = {features, lengths, targets};
  EXPECT_DOUBLE_EQ(lossWeight(tagger, 2, regression), 2.0);
  EXPECT_DOUBLE_EQ(meanOverBatches({0.6, 0.4}, {0.3, 0.2}), 2.0);
  EXPECT_DOUBLE_EQ(meanOverBatches({0.0, 0.0}, {0.0, 0.0}), 0.0);
}

TEST(Evaluate, BatchesSideBySideSayWhy) {
  Manifest m = manifestWith({}, 10);
  m.workspace["forward"] = {1 << 20, 0}; // 1 MiB an example
  std::string why;
  EXPECT_EQ(batchesSideBySide(m, "forward", 10, 16, {uint64_t(35) << 20}, why),
            3);
  EXPECT_EQ(why, "3 batches at a time, not 16: a batch of 10 takes 10.0 MiB "
                 "of workspace and 35.0 MiB of memory is available");
  EXPECT_EQ(batchesSideBySide(m, "forward", 10, 3, {uint64_t(35) << 20}, why),
            3);
  EXPECT_EQ(why, "");
  EXPECT_EQ(batchesSideBySide(m, "forward", 10, 4, {uint64_t(1) << 20}, why),
            1);
  EXPECT_EQ(why.substr(0, 23), "1 batch at a time, not ");
  // A function the manifest does not size: all threads.
  EXPECT_EQ(batchesSideBySide(m, "step", 10, 16, {uint64_t(0)}, why), 16);
  EXPECT_EQ(why, "");
}

TEST(Evaluate, BatchesSideBySideOverTheExamples) {
  Manifest m = manifestWith({}, 10);
  m.workspace["forward"] = {1 << 20, 0}; // 1 MiB an example
  std::string why;
  // 25 examples in batches of 10: three batches, never more calls.
  EXPECT_EQ(evaluationThreads(25, m, "forward", 10, 16, {}, why).calls, 3);
  EXPECT_EQ(why, "");
  // Fewer examples than a batch: the call's batch is the examples'.
  EXPECT_EQ(evaluationThreads(4, m, "forward", 10, 16, {uint64_t(8) << 20}, why)
                .calls,
            1);
  EXPECT_EQ(why, "");
  EXPECT_EQ(evaluationThreads(40, m, "forward", 4, 16, {uint64_t(8) << 20}, why)
                .calls,
            2);
  EXPECT_EQ(why, "2 batches at a time, not 10: a batch of 4 takes 4.0 MiB "
                 "of workspace and 8.0 MiB of memory is available");
  // Under an address-space cap each call needs OpenBLAS's buffer too.
  EXPECT_EQ(batchesSideBySide(m, "forward", 10, 16,
                              {uint64_t(300) << 20, uint64_t(90) << 20}, why),
            3);
  EXPECT_EQ(why, "3 batches at a time, not 16: a batch of 10 takes 10.0 MiB "
                 "of workspace (and 90.0 MiB for its thread and OpenBLAS's "
                 "buffer under the address-space limit) and 300.0 MiB of "
                 "memory is available");
  // No examples: one call at most, of a batch of 1.
  EXPECT_EQ(evaluationThreads(0, m, "forward", 10, 16, {}, why).calls, 1);
}

TEST(Evaluate, OneBatchAtATimeHasTheThreads) {
  Manifest m = manifestWith({}, 10);
  m.workspace["forward"] = {1 << 20, 0}; // 1 MiB an example
  std::string why;
  // Three batches side by side, each call on one kernel thread.
  EvaluationThreads plan = evaluationThreads(25, m, "forward", 10, 16, {}, why);
  EXPECT_EQ(plan.calls, 3);
  EXPECT_EQ(plan.kernelThreads, 1);
  // One batch: its kernels on every thread.
  plan = evaluationThreads(4, m, "forward", 10, 16, {}, why);
  EXPECT_EQ(plan.calls, 1);
  EXPECT_EQ(plan.kernelThreads, 16);
  // Under an address-space cap, as many as fit beside its workspace (4
  // MiB): 296 MiB hold three threads of 90.
  plan = evaluationThreads(4, m, "forward", 10, 16,
                           {uint64_t(300) << 20, uint64_t(90) << 20}, why);
  EXPECT_EQ(plan.calls, 1);
  EXPECT_EQ(plan.kernelThreads, 3);
  // Memory for one workspace alone: one thread, and the warning's why.
  plan = evaluationThreads(40, m, "forward", 10, 16,
                           {uint64_t(50) << 20, uint64_t(90) << 20}, why);
  EXPECT_EQ(plan.calls, 1);
  EXPECT_EQ(plan.kernelThreads, 1);
  EXPECT_EQ(why.substr(0, 23), "1 batch at a time, not ");
}

} // namespace
