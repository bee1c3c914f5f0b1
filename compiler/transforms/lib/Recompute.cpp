//===- Recompute.cpp - Recompute values instead of keeping them ---------===//
//
// For each batch-sized result of an elementwise op or lru.fused group that
// is read early and again after a long gap, finds how to compute it again
// at the late reads from values that are alive there anyway: in a group,
// the slice of its body that leads to the result, stopping at inputs that
// are still alive and at other results of the group that are kept (a
// scan's states, kept for the backward pass, give back their Re and Im).
// Decides with the function's original liveness, then builds each copy
// just before its first late reader; a copy reads the copy of an input
// that was itself recomputed before that point.
//
//===----------------------------------------------------------------------===//

#include "GroupRules.h"
#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <optional>

namespace lruc {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "lruc/Transforms/Passes.h.inc"
} // namespace lruc

using namespace mlir;

namespace {

/// Always available: nothing to keep alive for it.
bool isFree(Value v) {
  return isa<BlockArgument>(v) ||
         isa_and_nonnull<lru::ParamOp, arith::ConstantOp>(v.getDefiningOp());
}

/// How to compute a value again: ops (a group's body ops, in order, or a
/// lone op) over outside values (`inputs`), and the value among their
/// results.
struct Slice {
  llvm::SetVector<Operation *> ops;
  llvm::SetVector<Value> inputs;
  DenseMap<Value, Value> outside; ///< body value -> the outside value it is
  Value result;
};

struct Plan {
  Slice slice;
  Operation *firstLate;                ///< the copy goes before it
  llvm::SmallVector<OpOperand *> late; ///< the reads to redirect
};

struct RecomputePass : lruc::impl::RecomputePassBase<RecomputePass> {
  using RecomputePassBase::RecomputePassBase;

  void runOnOperation() override {
    Block &body = getOperation().getBody().front();
    llvm::DenseMap<Operation *, unsigned> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = unsigned(i);
    auto topPosition = [&](Operation *user) {
      return position.lookup(body.findAncestorOpInBlock(*user));
    };
    auto aliveAt = [&](Value v, unsigned at) {
      if (isFree(v))
        return true;
      return llvm::any_of(v.getUsers(), [&](Operation *user) {
        return topPosition(user) >= at;
      });
    };

    // The slice that computes result `index` of `op` at position `at` from
    // values alive there, if there is one (no scan in it).
    auto sliceOf = [&](Operation &op, unsigned index,
                       unsigned at) -> std::optional<Slice> {
      Slice slice;
      auto group = dyn_cast<lru::FusedOp>(op);
      if (!group) {
        if (!op.hasTrait<OpTrait::Elementwise>() || op.getNumResults() != 1)
          return std::nullopt;
        for (Value input : op.getOperands()) {
          if (!aliveAt(input, at))
            return std::nullopt;
          slice.inputs.insert(input);
          slice.outside[input] = input;
        }
        slice.ops.insert(&op);
        slice.result = op.getResult(0);
        return slice;
      }
      Block &groupBody = group.getBody().front();
      auto yield = cast<lru::YieldOp>(groupBody.getTerminator());
      // Another kept result of the group stands in for its body value.
      DenseMap<Value, Value> keptResult;
      for (auto [j, v] : llvm::enumerate(yield.getValues()))
        if (j != index && aliveAt(group.getResult(j), at))
          keptResult.try_emplace(v, group.getResult(j));
      llvm::SmallPtrSet<Operation *, 16> needed;
      SmallVector<Value> work = {yield.getValues()[index]};
      while (!work.empty()) {
        Value v = work.pop_back_val();
        if (slice.outside.count(v))
          continue;
        // Inputs in the order the walk meets them: the copy's operands
        // do not depend on where values happen to live.
        if (Value kept = keptResult.lookup(v)) {
          slice.outside[v] = kept;
          slice.inputs.insert(kept);
          continue;
        }
        if (auto arg = dyn_cast<BlockArgument>(v)) {
          Value input = group.getInputs()[arg.getArgNumber()];
          if (!aliveAt(input, at))
            return std::nullopt;
          slice.outside[v] = input;
          slice.inputs.insert(input);
          continue;
        }
        Operation *def = v.getDefiningOp();
        if (isa<lru::ScanOp>(def))
          return std::nullopt;
        if (needed.insert(def).second)
          for (Value operand : def->getOperands())
            work.push_back(operand);
      }
      for (Operation &inner : groupBody.without_terminator())
        if (needed.contains(&inner))
          slice.ops.insert(&inner);
      slice.result = yield.getValues()[index];
      return slice;
    };

    std::vector<Plan> plans;
    for (Operation &op : body) {
      if (!isa<lru::FusedOp>(op) && !op.hasTrait<OpTrait::Elementwise>())
        continue;
      for (OpResult result : op.getResults()) {
        if (!lruc::group::isBatchSized(result))
          continue;
        llvm::SmallVector<OpOperand *> uses;
        for (OpOperand &use : result.getUses())
          uses.push_back(&use);
        if (uses.size() < 2)
          continue;
        llvm::sort(uses, [&](OpOperand *a, OpOperand *b) {
          return topPosition(a->getOwner()) < topPosition(b->getOwner());
        });
        // The widest gap between consecutive reads splits early from late.
        unsigned gap = 0, split = 0, previous = position[&op];
        for (auto [i, use] : llvm::enumerate(uses)) {
          unsigned at = topPosition(use->getOwner());
          if (i > 0 && at - previous > gap) {
            gap = at - previous;
            split = unsigned(i);
          }
          previous = at;
        }
        if (split == 0 || gap < minGap)
          continue;
        Operation *firstLate =
            body.findAncestorOpInBlock(*uses[split]->getOwner());
        std::optional<Slice> slice =
            sliceOf(op, result.getResultNumber(), position[firstLate]);
        if (!slice || slice->ops.empty())
          continue;
        plans.push_back(
            {std::move(*slice), firstLate, {uses.begin() + split, uses.end()}});
      }
    }

    // Copies in order of the originals, so a copy can read an earlier one.
    llvm::DenseMap<Value, std::pair<Value, Operation *>> copyOf;
    for (Plan &plan : plans) {
      OpBuilder builder(plan.firstLate);
      auto outsideValue = [&](Value v) {
        auto it = copyOf.find(v);
        return it != copyOf.end() &&
                       it->second.second->isBeforeInBlock(plan.firstLate)
                   ? it->second.first
                   : v;
      };
      Slice &slice = plan.slice;
      Value copy;
      Operation *first = slice.ops.front();
      if (!isa<lru::FusedOp>(first->getParentOp())) {
        // A lone elementwise op.
        IRMapping mapping;
        for (Value input : first->getOperands())
          mapping.map(input, outsideValue(input));
        copy = builder.clone(*first, mapping)->getResult(0);
      } else {
        SmallVector<Value> inputs;
        for (Value input : slice.inputs)
          inputs.push_back(outsideValue(input));
        auto group = builder.create<lru::FusedOp>(
            first->getLoc(), TypeRange{slice.result.getType()}, inputs);
        SmallVector<Location> locs(inputs.size(), first->getLoc());
        Block *groupBody =
            builder.createBlock(&group.getBody(), {}, TypeRange(inputs), locs);
        IRMapping mapping;
        ArrayRef<Value> order = slice.inputs.getArrayRef();
        for (auto [v, input] : slice.outside)
          mapping.map(v, groupBody->getArgument(unsigned(
                             llvm::find(order, input) - order.begin())));
        for (Operation *inner : slice.ops)
          builder.clone(*inner, mapping);
        builder.create<lru::YieldOp>(first->getLoc(),
                                     mapping.lookup(slice.result));
        copy = group.getResult(0);
      }
      Value original = plan.late.front()->get();
      for (OpOperand *use : plan.late)
        use->set(copy);
      copyOf[original] = {copy, copy.getDefiningOp()};
    }
  }
};

} // namespace
