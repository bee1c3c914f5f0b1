//===- TrainStepTest.cpp - @train_step learns on the reference interpreter ===//
//
// examples/tiny.lru on a tiny synthetic task: is the majority of a
// sequence's tokens in the upper half of the vocabulary? Repeated
// @train_step calls on the interpreter must take the mean loss over the
// training batches from above a bound (chance) to well below it, and the
// loss on batches it never saw below chance.
//
//===----------------------------------------------------------------------===//

#include "ModelFixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

namespace {

using lruc::Tensor;

constexpr int64_t kBatch = 16, kBatches = 8, kSteps = 16, kVocab = 8;

Tensor scalar(double v) {
  Tensor t;
  t.re = {v};
  return t;
}

Tensor zerosLike(const Tensor &t) {
  Tensor z;
  z.shape = t.shape;
  z.re.assign(t.re.size(), 0.0);
  return z;
}

/// Batch `index` of the task, in @forward's argument order (tokens,
/// lengths, labels): tokens from a fixed pseudo-random stream, every
/// sequence full length, label 1 iff most tokens are >= kVocab / 2.
std::vector<Tensor> taskBatch(int64_t index) {
  Tensor tokens, lengths, labels;
  tokens.kind = lengths.kind = labels.kind = Tensor::Kind::Int;
  tokens.shape = {kBatch, kSteps};
  lengths.shape = labels.shape = {kBatch};
  uint32_t state = 12345u + uint32_t(index) * 7919u;
  for (int64_t b = 0; b < kBatch; ++b) {
    int64_t high = 0;
    for (int64_t t = 0; t < kSteps; ++t) {
      state = state * 1664525u + 1013904223u; // an LCG: plain and fixed
      int64_t token = (state >> 16) % kVocab;
      tokens.ints.push_back(token);
      high += token >= kVocab / 2;
    }
    lengths.ints.push_back(kSteps);
    labels.ints.push_back(2 * high > kSteps ? 1 : 0);
  }
  return {tokens, lengths, labels};
}

/// The mean loss of @forward over batches [first, first + kBatches).
double meanLoss(mlir::func::FuncOp forward, const lruc::ParameterStore &params,
                int64_t first = 0) {
  double sum = 0;
  for (int64_t i = first; i < first + kBatches; ++i) {
    auto results = lruc::interpret(forward, taskBatch(i), params);
    EXPECT_TRUE(mlir::succeeded(results));
    if (mlir::failed(results))
      return NAN;
    sum += (*results)[0].re[0];
  }
  return sum / kBatches;
}

TEST(TrainStep, LowersTheLossOfATinyModel) {
  mlir::MLIRContext context;
  std::string errors;
  auto module = lruc::testing::compileModel(
      context, {"tiny", "examples/tiny.lru", {}}, errors);
  ASSERT_TRUE(module) << errors;
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  auto step = module->lookupSymbol<mlir::func::FuncOp>("train_step");
  ASSERT_TRUE(forward && step);

  auto store = lruc::initParameters(forward, /*seed=*/3);
  ASSERT_TRUE(mlir::succeeded(store));
  // The optimizer state, by argument position of @train_step.
  std::map<unsigned, Tensor> moments;
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
    for (const char *tag : {"lru.adam_m", "lru.adam_v"})
      if (auto name = step.getArgAttrOfType<mlir::StringAttr>(i, tag))
        moments[i] = zerosLike((*store)[name.str()]);

  double before = meanLoss(forward, *store);
  ASSERT_GT(before, 0.6) << "the untrained model should be near chance "
                            "(log 2 = 0.693)";

  const int kIterations = 300;
  for (int it = 0; it < kIterations; ++it) {
    std::vector<Tensor> batch = taskBatch(it % kBatches);
    Tensor key; // dropout seed and step (tiny has no dropout)
    key.kind = Tensor::Kind::Int;
    key.shape = {2};
    key.ints = {1, it + 1};
    batch.push_back(key);
    std::vector<Tensor> args;
    size_t next = 0; // the next model input
    for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
      std::string tag = lruc::testing::inputTag(step, i);
      if (auto name = step.getArgAttrOfType<mlir::StringAttr>(i, "lru.param"))
        args.push_back((*store)[name.str()]);
      else if (auto name =
                   step.getArgAttrOfType<mlir::StringAttr>(i, "lru.state"))
        args.push_back((*store)[name.str()]);
      else if (moments.count(i))
        args.push_back(moments[i]);
      else if (tag == "lr")
        args.push_back(scalar(1e-2));
      else if (tag == "step")
        args.push_back(scalar(it + 1));
      else
        args.push_back(batch.at(next++));
    }
    auto results = lruc::interpret(step, args, *store);
    ASSERT_TRUE(mlir::succeeded(results));
    // Results after the model's outputs (loss, predictions) are the new
    // values of the leading arguments.
    const unsigned first = forward.getNumResults();
    for (unsigned j = 0; j + first < results->size(); ++j) {
      if (auto name = step.getArgAttrOfType<mlir::StringAttr>(j, "lru.param"))
        (*store)[name.str()] = (*results)[j + first];
      else if (auto name =
                   step.getArgAttrOfType<mlir::StringAttr>(j, "lru.state"))
        (*store)[name.str()] = (*results)[j + first];
      else
        moments[j] = (*results)[j + first];
    }
  }

  double after = meanLoss(forward, *store);
  double heldOut = meanLoss(forward, *store, /*first=*/kBatches);
  std::printf("tiny: mean loss %.4f -> %.4f after %d steps (held out: %.4f)\n",
              before, after, kIterations, heldOut);
  EXPECT_LT(heldOut, 0.2) << "the model should generalise to unseen batches";
  EXPECT_LT(after, 0.1) << "loss " << before << " -> " << after << " after "
                         << kIterations << " AdamW steps";
}

} // namespace
