//===- UpdateInPlace.cpp - Updated blocks written where they are read -----===//
//
// A training function returns new values of its arguments (the
// parameters, the moments, the gradient sums: a result tagged as an
// argument is, docs/autodiff.md), and the ABI hands both in one caller
// block. The lru.multi_tensor that computes them (AdamW's update, the
// sums' additions) reads each argument only at the index it writes, so it
// can write the new value over the old one instead of into the workspace:
// the results need no buffer of their own and no copy at the end. Each
// result so written is marked (lruc/MemoryPlan.h, kInPlaceAttr) with the
// function result it is; an argument that the return reads as well, or
// that another of its groups reads, keeps its copy, and so does every
// result of a multi_tensor that is not the function's last op (an op
// after it could still fail, and a failed call leaves the caller's blocks
// as they were).
//
//===----------------------------------------------------------------------===//

#include "lruc/MemoryPlan.h"
#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseMap.h"

namespace lruc {
#define GEN_PASS_DEF_UPDATEINPLACEPASS
#include "lruc/Transforms/Passes.h.inc"
} // namespace lruc

using namespace mlir;

namespace {

/// Whether anything but `group`, inside `multi` or after it, reads `arg`
/// (directly or through views).
bool readElsewhere(BlockArgument arg, lru::MultiTensorOp multi,
                   lru::FusedOp group) {
  Block &body = *multi->getBlock();
  SmallVector<Value> values = {arg};
  while (!values.empty()) {
    Value v = values.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = body.findAncestorOpInBlock(*use.getOwner());
      if (auto view = dyn_cast<lru::ViewOp>(use.getOwner())) {
        values.push_back(view.getResult());
        continue;
      }
      if (user == multi.getOperation()) {
        // Inside: only `group` may read it.
        Value inner = multi.getBody().getArgument(use.getOperandNumber());
        for (Operation *reader : inner.getUsers())
          if (reader != group.getOperation())
            return true;
        continue;
      }
      if (multi->isBeforeInBlock(user))
        return true;
    }
  }
  return false;
}

/// Whether `group` (of `multi`) reads `arg`, and only with elementwise ops
/// of its shape: at the index each result is written.
bool readsAtItsIndex(lru::FusedOp group, lru::MultiTensorOp multi,
                     BlockArgument arg) {
  bool reads = false;
  for (auto [inside, input] :
       llvm::zip(group.getBody().front().getArguments(), group.getInputs()))
    if (multi.getInputs()[cast<BlockArgument>(input).getArgNumber()] == arg) {
      reads = true;
      for (OpOperand &use : inside.getUses()) {
        Operation *user = use.getOwner();
        auto broadcast = dyn_cast<lru::BroadcastOp>(user);
        if (broadcast && use.get() == broadcast.getLike() &&
            broadcast.getX() != use.get())
          continue; // only its shape is read
        if (!user->hasTrait<OpTrait::Elementwise>() ||
            llvm::any_of(user->getResultTypes(),
                         [&](Type t) { return t != arg.getType(); }))
          return false;
      }
    }
  return reads;
}

struct UpdateInPlacePass
    : lruc::impl::UpdateInPlacePassBase<UpdateInPlacePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    llvm::DenseMap<Operation *, SmallVector<int64_t>> marks;
    for (auto [r, value] : llvm::enumerate(ret.getOperands())) {
      BlockArgument arg = lruc::updatedArgument(func, unsigned(r));
      auto multi = value.getDefiningOp<lru::MultiTensorOp>();
      // Only as the function's last op: every op that may fail on bad
      // input has run, so a failed call leaves the caller's blocks as
      // they were.
      if (!arg || !multi || arg.getType() != value.getType() ||
          multi->getNextNode() != ret.getOperation())
        continue;
      // The group that computes the result, and the result inside it.
      Value inner = multi.getBody().front().getTerminator()->getOperand(
          cast<OpResult>(value).getResultNumber());
      auto group = inner.getDefiningOp<lru::FusedOp>();
      if (!group || !readsAtItsIndex(group, multi, arg) ||
          readElsewhere(arg, multi, group) ||
          llvm::count(ret.getOperands(), value) != 1)
        continue;
      SmallVector<int64_t> &mark = marks[multi];
      if (mark.empty())
        mark.assign(multi->getNumResults(), -1);
      mark[cast<OpResult>(value).getResultNumber()] = int64_t(r);
    }
    Builder builder(func.getContext());
    for (auto &[op, mark] : marks)
      op->setAttr(lruc::kInPlaceAttr, builder.getDenseI64ArrayAttr(mark));
  }
};

} // namespace
