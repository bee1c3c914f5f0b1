//===- EvaluateTest.cpp - Which batch vector feeds which model input ------===//

#include "lruc/host/Error.h"
#include "lruc/host/Evaluate.h"

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

TEST(Inputs, RegressionModelsAreNotTrainedYet) {
  Manifest m = manifestWith({{"features", DType::F32, {-1, 8, 1}},
                             {"lengths", DType::I32, {-1}},
                             {"targets", DType::F32, {-1, 1}}},
                            1);
  EXPECT_EQ(fitError(m, dataset(InputKind::Features, 8, 1, 1)),
            "m.so: the model reads input \"targets\", which task (train) "
            "(features data) does not provide");
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
