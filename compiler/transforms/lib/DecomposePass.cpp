//===- DecomposePass.cpp - The lru-decompose pass -------------------------===//
//
// Makes @forward_train (a clone of @forward with a dropout key argument),
// then runs the decomposition patterns as a partial conversion over each
// function, eval mode on @forward, train mode on @forward_train and step mode
// on @step (when -lru-derive-step made one), and finally returns the running
// statistics that train-mode BatchNorm tagged and threads what step mode
// carries through @step's arguments and results.
//
//===----------------------------------------------------------------------===//

#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

namespace lruc {
#define GEN_PASS_DEF_DECOMPOSEPASS
#include "lruc/Transforms/Passes.h.inc"
} // namespace lruc

using namespace mlir;

namespace {

constexpr StringLiteral kForward = "forward";
constexpr StringLiteral kForwardTrain = "forward_train";
constexpr StringLiteral kStep = "step";

/// Clones @forward as @forward_train, right after it, with a trailing
/// `tensor<2xi64> {lru.input = "dropout_key"}` argument.
func::FuncOp createTrainFunction(func::FuncOp forward) {
  OpBuilder builder(forward);
  builder.setInsertionPointAfter(forward);
  auto train = cast<func::FuncOp>(builder.clone(*forward));
  train.setSymName(kForwardTrain);
  auto keyType = RankedTensorType::get({2}, builder.getI64Type());
  auto keyAttrs = builder.getDictionaryAttr(builder.getNamedAttr(
      "lru.input", builder.getStringAttr("dropout_key")));
  train.insertArgument(train.getNumArguments(), keyType, keyAttrs,
                       forward.getLoc());
  return train;
}

/// Appends the new running statistics that train-mode BatchNorm tagged with
/// `lru.state_update` to the results of `train`, and names them in its
/// `lru.state_updates` attribute, once per statistic in order of first
/// update. A BatchNorm applied more than once updates its statistics in op
/// order, each update reading the previous one (as running the module twice
/// would); the last is returned.
void returnStateUpdates(func::FuncOp train) {
  llvm::MapVector<StringAttr, Value> latest;
  train.walk([&](Operation *op) {
    if (auto name = op->getAttrOfType<StringAttr>(lruc::kStateReadAttr)) {
      op->removeAttr(lruc::kStateReadAttr);
      if (Value previous = latest.lookup(name))
        op->setOperand(1, previous);
    }
    if (auto name = op->getAttrOfType<StringAttr>(lruc::kStateUpdateAttr)) {
      op->removeAttr(lruc::kStateUpdateAttr);
      latest[name] = op->getResult(0);
    }
  });
  auto ret = cast<func::ReturnOp>(train.getBody().back().getTerminator());
  SmallVector<Attribute> names;
  for (auto [name, value] : latest) {
    train.insertResult(train.getNumResults(), value.getType(),
                       DictionaryAttr());
    ret.getOperandsMutable().append(value);
    names.push_back(name);
  }
  train->setAttr("lru.state_updates",
                 ArrayAttr::get(train.getContext(), names));
}

/// Turns the carry tags of step mode into arguments and results of `step`:
/// for each tagged op, in op order, an argument `{lru.carry = NAME}` (the
/// carry before this step) and a trailing result (after it), named in the
/// function attribute `lru.carries`. A tagged scan takes the argument as
/// its initial state and its one step is the new state; a tagged running
/// sum adds the argument, and its users read the total.
LogicalResult threadCarries(func::FuncOp step) {
  MLIRContext *context = step.getContext();
  auto ret = cast<func::ReturnOp>(step.getBody().back().getTerminator());
  SmallVector<Operation *> tagged;
  step.walk([&](Operation *op) {
    if (op->hasAttr(lruc::kCarryScanAttr) || op->hasAttr(lruc::kCarrySumAttr))
      tagged.push_back(op);
  });
  SmallVector<Attribute> names;
  llvm::StringSet<> seen;
  for (Operation *op : tagged) {
    bool isScan = op->hasAttr(lruc::kCarryScanAttr);
    auto name = op->getAttrOfType<StringAttr>(isScan ? lruc::kCarryScanAttr
                                                     : lruc::kCarrySumAttr);
    op->removeAttr(lruc::kCarryScanAttr);
    op->removeAttr(lruc::kCarrySumAttr);
    if (!seen.insert(name.getValue()).second)
      return op->emitError("step mode carries '")
             << name.getValue() << "' twice";
    names.push_back(name);

    Value value = op->getResult(0);
    auto type = cast<RankedTensorType>(value.getType());
    OpBuilder builder(op->getContext());
    builder.setInsertionPointAfter(op);
    Value carried;
    Type carryType = type;
    if (isScan) {
      // [B, 1, N] -> the state [B, N].
      carryType = RankedTensorType::get({type.getDimSize(0), type.getDimSize(2)},
                                        type.getElementType());
    }
    auto attrs = DictionaryAttr::get(
        context, {NamedAttribute(StringAttr::get(context, "lru.carry"), name)});
    step.insertArgument(step.getNumArguments(), carryType, attrs, op->getLoc());
    Value before = step.getArgument(step.getNumArguments() - 1);
    if (isScan) {
      cast<lru::ScanOp>(op).getInitMutable().assign(before);
      // The one step's states: the new carry (a view, no copy).
      carried = lru::ReduceSumOp::createSum(builder, op->getLoc(), value, {1});
    } else {
      carried = builder.create<lru::AddOp>(op->getLoc(), before, value);
      value.replaceAllUsesExcept(carried, carried.getDefiningOp());
    }
    step.insertResult(step.getNumResults(), carried.getType(),
                      DictionaryAttr());
    ret.getOperandsMutable().append(carried);
  }
  step->setAttr("lru.carries", ArrayAttr::get(context, names));
  return success();
}

/// Erases @step's `lengths` arguments, which step mode does not read (every
/// step is real).
LogicalResult eraseLengths(func::FuncOp step) {
  llvm::BitVector erase(step.getNumArguments());
  for (BlockArgument arg : step.getArguments()) {
    auto tag = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                 "lru.input");
    if (!tag || !tag.getValue().starts_with("lengths"))
      continue;
    if (!arg.use_empty())
      return step.emitError("step mode still reads '")
             << tag.getValue() << "'";
    erase.set(arg.getArgNumber());
  }
  step.eraseArguments(erase);
  return success();
}

/// Runs the decomposition patterns of `mode` over `func`: every model op
/// must go.
LogicalResult decompose(func::FuncOp func, lruc::DecomposeMode mode) {
  MLIRContext *context = func.getContext();
  ConversionTarget target(*context);
  target.addLegalDialect<lru::LRUDialect, arith::ArithDialect,
                         func::FuncDialect>();
  target.addIllegalOp<lru::EmbedOp, lru::LinearOp, lru::RecurrenceOp,
                      lru::GeneralizedRecurrenceOp, lru::GluOp,
                      lru::DropoutOp, lru::BatchNormOp, lru::LayerNormOp,
                      lru::PoolOp, lru::RetrievalCombineOp,
                      lru::CrossEntropyOp, lru::MseOp, lru::L1LossOp,
                      lru::HuberLossOp>();
  RewritePatternSet patterns(context);
  lruc::populateDecomposePatterns(patterns, mode);
  return applyPartialConversion(func, target, std::move(patterns));
}

struct DecomposePass : public lruc::impl::DecomposePassBase<DecomposePass> {
  using DecomposePassBase::DecomposePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(kForward);
    if (!forward || forward.isExternal()) {
      module.emitError("expects a func.func @") << kForward << " with a body";
      return signalPassFailure();
    }
    if (Operation *existing = module.lookupSymbol(kForwardTrain)) {
      existing->emitError("@")
          << kForwardTrain << " already exists; lru-decompose makes it";
      return signalPassFailure();
    }
    func::FuncOp train = createTrainFunction(forward);
    lruc::maskPaddedInputs(forward);
    lruc::maskPaddedInputs(train);
    if (failed(decompose(forward, lruc::DecomposeMode::Eval)) ||
        failed(decompose(train, lruc::DecomposeMode::Train)))
      return signalPassFailure();
    returnStateUpdates(train);
    if (auto step = module.lookupSymbol<func::FuncOp>(kStep))
      if (failed(decompose(step, lruc::DecomposeMode::Step)) ||
          failed(threadCarries(step)) || failed(eraseLengths(step)))
        return signalPassFailure();
  }
};

} // namespace
