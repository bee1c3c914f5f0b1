//===- FuseMultiTensor.cpp - Independent groups as one kernel -------------===//
//
// The groups whose results only the function returns (AdamW's update of
// every parameter) are independent of each other and of everything after
// them, so one kernel can run all of them: they move into one
// lru.multi_tensor at the place of the last of them, a group per parameter
// (elementwise fusion made one group of all the updates of a shape; apart,
// the updates of parameters alike are the same loop, which a backend
// writes and compiles once).
// So do @step's groups that read parameters alone (its step constants), at
// the place of the first of them.
//
//===----------------------------------------------------------------------===//

#include "GroupRules.h"
#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace lruc {
#define GEN_PASS_DEF_FUSEMULTITENSORPASS
#define GEN_PASS_DEF_FUSESTEPCONSTANTSPASS
#include "lruc/Transforms/Passes.h.inc"
} // namespace lruc

using namespace mlir;

namespace {

/// A group without a scan or a sum (each needs its own loop structure), of
/// static shape, whose results only a return reads.
bool isReturnedGroup(lru::FusedOp group) {
  if (group.getScan() || group.hasReductions())
    return false;
  return llvm::all_of(group.getResults(), [](Value result) {
    return cast<RankedTensorType>(result.getType()).hasStaticShape() &&
           !result.use_empty() &&
           llvm::all_of(result.getUsers(), [](Operation *user) {
             return isa<func::ReturnOp>(user);
           });
  });
}

/// `groups` (independent of each other, every input defined before `at`)
/// as one lru.multi_tensor placed before `at`.
lru::MultiTensorOp fuseGroups(ArrayRef<lru::FusedOp> groups, Operation *at) {
  llvm::SetVector<Value> inputs;
  SmallVector<Type> resultTypes;
  for (lru::FusedOp group : groups) {
    inputs.insert(group.getInputs().begin(), group.getInputs().end());
    llvm::append_range(resultTypes, group.getResultTypes());
  }
  OpBuilder builder(at);
  auto multi = builder.create<lru::MultiTensorOp>(at->getLoc(), resultTypes,
                                                  inputs.getArrayRef());
  SmallVector<Location> argLocs(inputs.size(), at->getLoc());
  Block *body = builder.createBlock(&multi.getBody(), {},
                                    TypeRange(inputs.getArrayRef()), argLocs);
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body->getArguments());
  SmallVector<Value> yielded;
  for (lru::FusedOp group : groups) {
    Operation *copy = builder.clone(*group, mapping);
    copy->removeAttr(lruc::kStepConstantAttr); // the multi_tensor is marked
    llvm::append_range(yielded, copy->getResults());
  }
  builder.create<lru::YieldOp>(at->getLoc(), yielded);

  unsigned next = 0;
  for (lru::FusedOp group : groups) {
    for (Value result : group.getResults())
      result.replaceAllUsesWith(multi.getResult(next++));
    group->erase();
  }
  return multi;
}

/// What a part of a group copies rather than shares with the other parts:
/// a splat constant, a broadcast of an input (AdamW's step size).
bool isCopied(Operation *op) {
  if (isa<lru::BroadcastOp>(op))
    return isa<BlockArgument>(op->getOperand(0));
  return op->getNumResults() == 1 &&
         lruc::group::isSplatConstant(op->getResult(0));
}

/// `group` as a group per independent part (no value computed in the group
/// or input read in full links it to another part), in the order of their
/// first results; `group` alone when it is one part. Each part is built
/// from its own ops (and the copied ones it reads), so splitting a group of
/// every parameter's update costs its size once, not once a part.
SmallVector<lru::FusedOp> splitIndependentParts(lru::FusedOp group) {
  Block &body = group.getBody().front();
  llvm::EquivalenceClasses<Operation *> parts;
  llvm::DenseMap<Value, Operation *> firstReader;
  for (Operation &op : body.without_terminator()) {
    if (isCopied(&op))
      continue;
    parts.insert(&op);
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && !isCopied(def))
        parts.unionSets(&op, def);
      else if (!def)
        parts.unionSets(&op,
                        firstReader.try_emplace(operand, &op).first->second);
    }
  }
  // Each part's result numbers; a result that is an input or a copy
  // belongs to no part, so the group stays whole.
  llvm::MapVector<Operation *, SmallVector<unsigned>> resultsOf;
  for (OpOperand &yielded : body.getTerminator()->getOpOperands()) {
    Operation *def = yielded.get().getDefiningOp();
    if (!def || isCopied(def))
      return {group};
    resultsOf[parts.getLeaderValue(def)].push_back(yielded.getOperandNumber());
  }
  if (resultsOf.size() < 2)
    return {group};
  // Each part's ops in body order, a copied op in every part that reads it.
  llvm::DenseMap<Operation *, SmallVector<Operation *>> opsOf;
  for (Operation &op : body.without_terminator()) {
    if (isCopied(&op)) {
      llvm::SmallSetVector<Operation *, 4> readers;
      for (Operation *user : op.getUsers())
        readers.insert(parts.getLeaderValue(user));
      for (Operation *leader : readers)
        opsOf[leader].push_back(&op);
      continue;
    }
    opsOf[parts.getLeaderValue(&op)].push_back(&op);
  }
  // Each part: a group of the inputs its ops read (in the group's order),
  // its ops and its results alone.
  SmallVector<lru::FusedOp> split;
  OpBuilder builder(group);
  Operation *yield = body.getTerminator();
  for (auto &[leader, results] : resultsOf) {
    ArrayRef<Operation *> ops = opsOf[leader];
    llvm::SmallSetVector<unsigned, 8> read;
    for (Operation *op : ops)
      for (Value operand : op->getOperands())
        if (auto argument = dyn_cast<BlockArgument>(operand))
          read.insert(argument.getArgNumber());
    SmallVector<unsigned> arguments(read.begin(), read.end());
    llvm::sort(arguments);
    SmallVector<Value> operands;
    SmallVector<Type> argumentTypes, resultTypes;
    SmallVector<Location> argumentLocs;
    for (unsigned index : arguments) {
      operands.push_back(group->getOperand(index));
      argumentTypes.push_back(body.getArgument(index).getType());
      argumentLocs.push_back(body.getArgument(index).getLoc());
    }
    for (unsigned index : results)
      resultTypes.push_back(group->getResult(index).getType());
    auto part =
        builder.create<lru::FusedOp>(group.getLoc(), resultTypes, operands);
    part->setAttrs(group->getAttrs());
    OpBuilder inside = OpBuilder::atBlockBegin(
        builder.createBlock(&part.getBody(), {}, argumentTypes, argumentLocs));
    builder.setInsertionPoint(group);
    IRMapping mapping;
    for (auto [newIndex, index] : llvm::enumerate(arguments))
      mapping.map(body.getArgument(index),
                  part.getBody().front().getArgument(newIndex));
    for (Operation *op : ops)
      inside.clone(*op, mapping);
    SmallVector<Value> yielded;
    for (unsigned index : results)
      yielded.push_back(mapping.lookup(yield->getOperand(index)));
    inside.clone(*yield, mapping)->setOperands(yielded);
    for (auto [newIndex, index] : llvm::enumerate(results))
      group->getResult(index).replaceAllUsesWith(part->getResult(newIndex));
    lruc::group::takeShapesFromLoadedInputs(part);
    split.push_back(part);
  }
  group->erase();
  return split;
}

void fuseReturnedGroups(Block &block) {
  SmallVector<lru::FusedOp> returned, groups;
  for (auto group : block.getOps<lru::FusedOp>())
    if (isReturnedGroup(group))
      returned.push_back(group);
  for (lru::FusedOp group : returned)
    llvm::append_range(groups, splitIndependentParts(group));
  // Each group reads only values defined before it, hence before the last.
  if (groups.size() >= 2)
    fuseGroups(groups, groups.back());
}

struct FuseMultiTensorPass
    : public lruc::impl::FuseMultiTensorPassBase<FuseMultiTensorPass> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody())
      fuseReturnedGroups(block);
  }
};

/// A step constant (lru.step_constant) of one loop over static shapes that
/// reads parameters and constants only, none of them through another op.
bool isParameterGroup(lru::FusedOp group) {
  return group->hasAttr(lruc::kStepConstantAttr) && !group.getScan() &&
         !group.hasReductions() &&
         llvm::all_of(group.getInputs(), [](Value input) {
           Operation *def = input.getDefiningOp();
           return def && isa<lru::ParamOp, arith::ConstantOp>(def);
         });
}

struct FuseStepConstantsPass
    : public lruc::impl::FuseStepConstantsPassBase<FuseStepConstantsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getSymName() != "step")
      return;
    Block &block = func.getBody().front();
    SmallVector<lru::FusedOp> groups;
    for (auto group : block.getOps<lru::FusedOp>())
      if (isParameterGroup(group))
        groups.push_back(group);
    if (groups.size() < 2)
      return;
    // What they read (operand-free ops) moves ahead of the first of them.
    Operation *first = groups.front();
    for (lru::FusedOp group : groups)
      for (Value input : group.getInputs())
        if (Operation *def = input.getDefiningOp(); first->isBeforeInBlock(def))
          def->moveBefore(first);
    fuseGroups(groups, first)
        ->setAttr(lruc::kStepConstantAttr, UnitAttr::get(&getContext()));
  }
};

} // namespace
