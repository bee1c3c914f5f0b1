//===- DeriveStep.cpp - The lru-derive-step pass --------------------------===//
//
// Clones the model-level @forward as @step with sequence length 1: the
// sequence inputs shrink to one step, every op infers its result type again
// (model-level ops all implement InferTypeOpInterface), and @step returns
// the predictions alone. What a step carries to the next is added when
// -lru-decompose lowers @step in step mode.
//
//===----------------------------------------------------------------------===//

#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace lruc {
#define GEN_PASS_DEF_DERIVESTEPPASS
#include "lruc/Transforms/Passes.h.inc"
} // namespace lruc

using namespace mlir;

namespace {

/// Why `forward` cannot run one step at a time, or "" when it can.
std::string whyNotCausal(func::FuncOp forward) {
  std::string reason;
  forward.walk([&](Operation *op) {
    StringRef what;
    if (auto recurrence = dyn_cast<lru::RecurrenceOp>(op);
        recurrence && recurrence.isBidirectional())
      what = "a bidirectional recurrence reads steps that have not come yet";
    else if (isa<lru::RetrievalCombineOp>(op))
      what = "a two-tower model reads two sequences at once";
    if (what.empty())
      return WalkResult::advance();
    std::string where = lruc::describeLocation(op->getLoc());
    reason = "step mode needs a causal model with one input sequence: " +
             what.str() + (where.empty() ? "" : " (" + where + ")");
    return WalkResult::interrupt();
  });
  return reason;
}

bool isSequenceInput(func::FuncOp func, unsigned i) {
  auto tag = func.getArgAttrOfType<StringAttr>(i, "lru.input");
  return tag && (tag.getValue() == "tokens" || tag.getValue() == "features");
}

/// Gives every op of `func` the result types it infers from its operands,
/// in op order, so that a change of argument types flows through.
LogicalResult inferTypesAgain(func::FuncOp func) {
  for (Operation &op : func.getBody().front()) {
    auto infer = dyn_cast<InferTypeOpInterface>(&op);
    if (!infer)
      continue;
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op.getContext(), op.getLoc(), op.getOperands(),
            op.getAttrDictionary(), op.getPropertiesStorage(),
            op.getRegions(), types)))
      return op.emitOpError("has no result type at sequence length 1");
    for (auto [result, type] : llvm::zip(op.getResults(), types))
      result.setType(type);
  }
  return success();
}

struct DeriveStepPass : public lruc::impl::DeriveStepPassBase<DeriveStepPass> {
  using DeriveStepPassBase::DeriveStepPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal()) {
      module.emitError("expects a func.func @forward with a body");
      return signalPassFailure();
    }
    if (Operation *existing = module.lookupSymbol("step")) {
      existing->emitError("@step already exists; lru-derive-step makes it");
      return signalPassFailure();
    }
    if (std::string reason = whyNotCausal(forward); !reason.empty()) {
      module->setAttr("lru.step_unavailable",
                      StringAttr::get(module.getContext(), reason));
      return;
    }

    OpBuilder builder(forward);
    builder.setInsertionPointAfter(forward);
    auto step = cast<func::FuncOp>(builder.clone(*forward));
    step.setSymName("step");
    Block &body = step.getBody().front();

    // One step of each sequence input.
    for (unsigned i = 0; i < step.getNumArguments(); ++i) {
      if (!isSequenceInput(step, i))
        continue;
      auto type = cast<RankedTensorType>(body.getArgument(i).getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[1] = 1;
      body.getArgument(i).setType(type.clone(shape));
    }
    // The predictions only: the loss (result 0) and what only it reads go.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    ret->eraseOperand(0);
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (isOpTriviallyDead(&op))
        op.erase();
    if (failed(inferTypesAgain(step)))
      return signalPassFailure();

    // Labels or targets: no longer read.
    llvm::BitVector unused(step.getNumArguments());
    for (BlockArgument arg : body.getArguments())
      if (arg.use_empty() && !isSequenceInput(step, arg.getArgNumber()))
        unused.set(arg.getArgNumber());
    step.eraseArguments(unused);
    step.setType(FunctionType::get(module.getContext(), body.getArgumentTypes(),
                                   ret.getOperandTypes()));
  }
};

} // namespace

std::string lruc::describeLocation(Location loc) {
  std::string where;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      where = (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
               ":" + std::to_string(file.getColumn()));
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return where;
}
