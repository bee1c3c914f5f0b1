//===- PaddingTest.cpp - Padding never changes what a model computes ------===//
//
// For every model with per-sequence lengths: rewrite the inputs at padded
// steps (tokens and features past each sequence's length) and run
// @forward_train and @forward on the interpreter. The loss, the outputs (at
// real steps, for per-step outputs) and the new BatchNorm running
// statistics must not move: padding never enters a scan's state, a norm's
// statistics or a pooled mean.
//
//===----------------------------------------------------------------------===//

#include "ModelFixture.h"
#include "RandomModel.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

using lruc::Tensor;
using lruc::testing::ModelCase;

std::vector<ModelCase> cases() {
  std::map<std::string, double> small = {
      {"L", 6}, {"H", 4}, {"N", 3}, {"DEPTH", 1}, {"DROPOUT", 0.2}};
  return {
      {"listops", "models/listops.lru", small},
      {"scifar", "models/scifar.lru", small},
      {"pathx_bidirectional", "models/pathx.lru", small},
      {"retrieval_two_towers", "models/retrieval.lru", small},
      {"generalized", "examples/generalized.lru",
       {{"L", 6}, {"H", 4}, {"N", 3}}},
      {"tagging", "examples/tagging.lru",
       {{"L", 6}, {"H", 4}, {"N", 3}, {"DEPTH", 1}}},
  };
}

/// `args` with every padded step of the sequence inputs overwritten: tokens
/// by another valid token, features by large values. The lengths input
/// right after a sequence input gives its lengths.
std::vector<Tensor> scramblePadding(mlir::func::FuncOp func,
                                    std::vector<Tensor> args) {
  for (unsigned i = 0; i + 1 < args.size(); ++i) {
    std::string tag = lruc::testing::inputTag(func, i);
    bool tokens = tag.rfind("tokens", 0) == 0;
    if (!tokens && tag != "features")
      continue;
    EXPECT_EQ(lruc::testing::inputTag(func, i + 1).rfind("lengths", 0), 0u);
    Tensor &seq = args[i];
    const Tensor &lengths = args[i + 1];
    int64_t batch = seq.shape[0], steps = seq.shape[1];
    int64_t width = seq.numElements() / (batch * steps);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = lengths.ints[b]; t < steps; ++t)
        for (int64_t c = 0; c < width; ++c) {
          int64_t k = (b * steps + t) * width + c;
          if (tokens)
            seq.ints[k] = seq.ints[k] == 0 ? 1 : 0;
          else
            seq.re[k] = 50.0 + double(k);
        }
  }
  return args;
}

/// Whether element `k` of `result` is a per-step output ([B, L, ...], as
/// with `pool none`) at a padded step of the first sequence input: those
/// are computed from the padding (the residual path carries it) and only
/// real steps are defined, as the loss reads them.
bool atPaddedStep(const Tensor &result, const std::vector<Tensor> &args,
                  int64_t k) {
  const Tensor &seq = args[0], &lengths = args[1];
  if (result.shape.size() < 2 || result.shape[0] != seq.shape[0] ||
      result.shape[1] != seq.shape[1])
    return false;
  int64_t perStep = result.numElements() / (seq.shape[0] * seq.shape[1]);
  int64_t b = k / (perStep * seq.shape[1]);
  int64_t t = (k / perStep) % seq.shape[1];
  return t >= lengths.ints[b];
}

class Padding : public ::testing::TestWithParam<ModelCase> {};

TEST_P(Padding, DoesNotChangeAnyResult) {
  const ModelCase &c = GetParam();
  SCOPED_TRACE(c.source); // a random model's text, to reproduce it
  mlir::MLIRContext context;
  std::string errors;
  auto module = lruc::testing::compileModel(context, c, errors);
  ASSERT_TRUE(module) << errors;
  auto store = lruc::initParameters(
      module->lookupSymbol<mlir::func::FuncOp>("forward_train"), 9);
  ASSERT_TRUE(mlir::succeeded(store));

  for (const char *name : {"forward", "forward_train"}) {
    auto func = module->lookupSymbol<mlir::func::FuncOp>(name);
    std::vector<Tensor> args = lruc::testing::makeBatch(func, 3, 2);
    std::vector<Tensor> scrambled = scramblePadding(func, args);
    bool changed = scrambled[0].ints != args[0].ints ||
                   scrambled[0].re != args[0].re;
    ASSERT_TRUE(changed) << "the batch has no padding to scramble";
    auto expected = lruc::interpret(func, args, *store);
    auto actual = lruc::interpret(func, scrambled, *store);
    ASSERT_TRUE(mlir::succeeded(expected) && mlir::succeeded(actual));
    ASSERT_EQ(expected->size(), actual->size());
    for (size_t r = 0; r < expected->size(); ++r) {
      const Tensor &e = (*expected)[r], &a = (*actual)[r];
      ASSERT_EQ(e.re.size(), a.re.size());
      for (size_t k = 0; k < e.re.size(); ++k) {
        if (atPaddedStep(e, args, k))
          continue;
        EXPECT_NEAR(a.re[k], e.re[k], 1e-12 * (1 + std::abs(e.re[k])))
            << c.name << " @" << name << " result " << r << "[" << k << "]";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Padding, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

// Combinations of the language's constructs that no file of the tree has,
// every sequence at least 2 steps long (so that the batch has padding).
INSTANTIATE_TEST_SUITE_P(
    RandomModels, Padding,
    ::testing::ValuesIn(lruc::testing::searchedRandomModelCases(
        /*count=*/24, /*minLength=*/2)),
    [](const auto &info) { return info.param.name; });

} // namespace
