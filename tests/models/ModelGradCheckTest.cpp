//===- ModelGradCheckTest.cpp - Whole models against finite differences ---===//
//
// Every model of models/ and examples/, shrunk with constant overrides, goes
// through lru-decompose and -lru-derive-backward; the fp64 reference
// interpreter runs @backward on a padded batch in train mode (batch
// statistics, dropout masks), and each gradient, of the parameters and of
// the real inputs, is compared with a central finite difference of
// @forward_train's loss.
//
//===----------------------------------------------------------------------===//

#include "FiniteDifferences.h"
#include "ModelFixture.h"
#include "RandomModel.h"

#include "lruc/Autodiff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace {

using lruc::Tensor;
using lruc::testing::ModelCase;

class ModelGradCheck : public ::testing::TestWithParam<ModelCase> {};

double lossOf(mlir::func::FuncOp forward, const std::vector<Tensor> &args,
              const lruc::ParameterStore &params) {
  auto results = lruc::interpret(forward, args, params);
  EXPECT_TRUE(mlir::succeeded(results));
  return mlir::succeeded(results) ? (*results)[0].re[0] : NAN;
}

TEST_P(ModelGradCheck, MatchesFiniteDifferences) {
  const ModelCase &c = GetParam();
  SCOPED_TRACE(c.source); // a random model's text, to reproduce it
  mlir::MLIRContext context;
  std::string errors;
  auto module = lruc::testing::compileModel(context, c, errors);
  ASSERT_TRUE(module) << errors;
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward_train");
  auto backward = module->lookupSymbol<mlir::func::FuncOp>("backward");
  ASSERT_TRUE(forward && backward);

  auto store = lruc::initParameters(forward, /*seed=*/5);
  ASSERT_TRUE(mlir::succeeded(store)) << errors;
  std::vector<Tensor> args = lruc::testing::makeBatch(forward, /*batch=*/3,
                                                      /*seed=*/1);
  auto grads = lruc::interpret(backward, args, *store);
  ASSERT_TRUE(mlir::succeeded(grads)) << errors;
  double loss = lossOf(forward, args, *store);
  ASSERT_TRUE(std::isfinite(loss));
  EXPECT_NEAR((*grads)[0].re[0], loss, 1e-12 * std::abs(loss))
      << "@backward's loss differs from @forward_train's";

  auto currentLoss = [&] { return lossOf(forward, args, *store); };
  // A random model stacks kinks (ReLU, the L1 and Huber losses) that a
  // perturbation may cross, a few parts in 1e6 of a gradient, and its
  // long sequences curve the loss in a phase (t · exp(theta_log) over 200+
  // steps) enough to move a central difference of 1e-5 by 1e-3; a wrong
  // rule is off by far more.
  bool random = !c.source.empty();
  double h = random ? 1e-6 : 1e-5, tolerance = random ? 1e-4 : 1e-6;
  auto names = backward->getAttrOfType<mlir::ArrayAttr>("lru.gradients");
  ASSERT_EQ(names.size() + 1, grads->size());
  for (auto [i, nameAttr] : llvm::enumerate(names)) {
    std::string name = mlir::cast<mlir::StringAttr>(nameAttr).str();
    const Tensor &grad = (*grads)[i + 1];
    // A parameter the loss does not reach is a bug in the model's lowering.
    // Not so in a random model, which may have a unit that no input reaches
    // (a ReLU of one hidden unit, dead for the batch): there the finite
    // differences below check that its gradient is zero.
    double largest = 0;
    for (double g : grad.re)
      largest = std::max(largest, std::abs(g));
    if (c.source.empty()) {
      EXPECT_GT(largest, 0) << c.name << ": the gradient of " << name
                            << " is zero everywhere";
    }
    lruc::testing::expectMatchesFiniteDifferences(
        currentLoss, (*store)[name].re, grad.re, /*samples=*/12,
        c.name + ": " + name, h, tolerance);
  }

  // The gradients of the real inputs (features, targets), where there are.
  auto withInputs = lruc::deriveBackward(forward, "backward_inputs",
                                         /*inputGradients=*/true);
  ASSERT_TRUE(mlir::succeeded(withInputs)) << errors;
  auto inputNames =
      (*withInputs)->getAttrOfType<mlir::ArrayAttr>("lru.input_gradients");
  auto all = lruc::interpret(*withInputs, args, *store);
  ASSERT_TRUE(mlir::succeeded(all)) << errors;
  ASSERT_EQ(all->size(), 1 + names.size() + inputNames.size());
  for (auto [i, nameAttr] : llvm::enumerate(inputNames)) {
    std::string tag = mlir::cast<mlir::StringAttr>(nameAttr).str();
    for (unsigned a = 0; a < forward.getNumArguments(); ++a)
      if (lruc::testing::inputTag(forward, a) == tag)
        lruc::testing::expectMatchesFiniteDifferences(
            currentLoss, args[a].re, (*all)[1 + names.size() + i].re,
            /*samples=*/6, c.name + ": input " + tag, h, tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ModelGradCheck, ::testing::ValuesIn(lruc::testing::smallModelCases()),
                         [](const auto &info) { return info.param.name; });

// Combinations of the language's constructs that no file of the tree has.
INSTANTIATE_TEST_SUITE_P(
    RandomModels, ModelGradCheck,
    ::testing::ValuesIn(lruc::testing::searchedRandomModelCases(/*count=*/24)),
    [](const auto &info) { return info.param.name; });

} // namespace
