//===- AutodiffPasses.cpp - Pass wrappers of the autodiff entry points ----===//

#include "lruc/Autodiff.h"
#include "lruc/AutodiffPasses.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace lruc {
#define GEN_PASS_DEF_DERIVEBACKWARD
#define GEN_PASS_DEF_DERIVETRAINSTEP
#define GEN_PASS_DEF_DERIVEACCUMULATION
#define GEN_PASS_DEF_STRIPSTOPGRADIENTS
#include "lruc/AutodiffPasses.h.inc"
} // namespace lruc

using namespace mlir;

namespace {

/// The function to differentiate, or an error on the module.
func::FuncOp lookupForward(ModuleOp module, StringRef name) {
  auto forward = module.lookupSymbol<func::FuncOp>(name);
  if (!forward)
    module.emitError("no function @") << name
                                      << " to differentiate; run "
                                         "-lru-decompose first";
  return forward;
}

struct DeriveBackwardPass
    : public lruc::impl::DeriveBackwardBase<DeriveBackwardPass> {
  using DeriveBackwardBase::DeriveBackwardBase;
  void runOnOperation() override {
    func::FuncOp forwardFunc = lookupForward(getOperation(), forward);
    if (!forwardFunc || failed(lruc::deriveBackward(forwardFunc, name, inputs)))
      signalPassFailure();
  }
};

struct DeriveTrainStepPass
    : public lruc::impl::DeriveTrainStepBase<DeriveTrainStepPass> {
  using DeriveTrainStepBase::DeriveTrainStepBase;
  void runOnOperation() override {
    func::FuncOp forwardFunc = lookupForward(getOperation(), forward);
    if (!forwardFunc ||
        failed(lruc::deriveTrainStep(
            forwardFunc, lruc::AdamWConfig::fromModule(getOperation()), name)))
      signalPassFailure();
  }
};

struct DeriveAccumulationPass
    : public lruc::impl::DeriveAccumulationBase<DeriveAccumulationPass> {
  using DeriveAccumulationBase::DeriveAccumulationBase;
  void runOnOperation() override {
    func::FuncOp forwardFunc = lookupForward(getOperation(), forward);
    // Each lands right after the forward function: the update first, so
    // that the module reads accumulate, then apply.
    if (!forwardFunc ||
        failed(lruc::deriveApplyGradients(
            forwardFunc, lruc::AdamWConfig::fromModule(getOperation()))) ||
        failed(lruc::deriveAccumulateGradients(forwardFunc)))
      signalPassFailure();
  }
};

struct StripStopGradientsPass
    : public lruc::impl::StripStopGradientsBase<StripStopGradientsPass> {
  void runOnOperation() override {
    getOperation().walk([](lru::StopGradientOp op) {
      op.getResult().replaceAllUsesWith(op.getX());
      op.erase();
    });
  }
};

} // namespace
