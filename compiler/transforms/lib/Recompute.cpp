//===- Recompute.cpp - Recompute elementwise values instead of keeping them ===//
//
// Decides with the function's original liveness, then copies: for each
// candidate the copy goes just before its first late reader, and the late
// readers read the copy. An input that was itself recomputed before that
// point is read from its copy, so chains of elementwise values (a
// normalised input, its GELU) are recomputed together.
//
//===----------------------------------------------------------------------===//

#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

namespace lruc {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "lruc/Transforms/Passes.h.inc"
} // namespace lruc

using namespace mlir;

namespace {

/// A one-result elementwise computation over a batch-sized tensor.
bool isCandidate(Operation &op) {
  if (op.getNumResults() != 1)
    return false;
  auto type = dyn_cast<RankedTensorType>(op.getResult(0).getType());
  if (!type || type.hasStaticShape())
    return false; // fixed-size values are small
  return isa<lru::FusedOp>(op) || op.hasTrait<OpTrait::Elementwise>();
}

/// Always available: nothing to keep alive for it.
bool isFree(Value v) {
  return isa<BlockArgument>(v) ||
         isa_and_nonnull<lru::ParamOp, arith::ConstantOp>(v.getDefiningOp());
}

struct Plan {
  Operation *op;
  Operation *firstLate;             // the copy goes before it
  llvm::SmallVector<OpOperand *> late; // the reads to redirect
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
    auto lastUse = [&](Value v) {
      unsigned last = 0;
      for (Operation *user : v.getUsers())
        last = std::max(last, topPosition(user));
      return last;
    };

    std::vector<Plan> plans;
    for (Operation &op : body) {
      if (!isCandidate(op))
        continue;
      unsigned here = position[&op];
      llvm::SmallVector<OpOperand *> uses;
      for (OpOperand &use : op.getResult(0).getUses())
        uses.push_back(&use);
      if (uses.size() < 2)
        continue;
      llvm::sort(uses, [&](OpOperand *a, OpOperand *b) {
        return topPosition(a->getOwner()) < topPosition(b->getOwner());
      });
      // The widest gap between consecutive reads splits early from late.
      unsigned gap = 0, split = 0, previous = here;
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
      Operation *firstLate = body.findAncestorOpInBlock(*uses[split]->getOwner());
      unsigned lateAt = position[firstLate];
      bool inputsAlive = llvm::all_of(op.getOperands(), [&](Value input) {
        return isFree(input) || lastUse(input) >= lateAt;
      });
      if (!inputsAlive)
        continue;
      plans.push_back({&op, firstLate, {uses.begin() + split, uses.end()}});
    }

    // Copies in order of the originals, so a copy can read an earlier one.
    llvm::DenseMap<Value, std::pair<Value, Operation *>> copyOf;
    for (Plan &plan : plans) {
      OpBuilder builder(plan.firstLate);
      IRMapping mapping;
      for (Value input : plan.op->getOperands()) {
        auto it = copyOf.find(input);
        if (it != copyOf.end() &&
            it->second.second->isBeforeInBlock(plan.firstLate))
          mapping.map(input, it->second.first);
      }
      Operation *copy = builder.clone(*plan.op, mapping);
      for (OpOperand *use : plan.late)
        use->set(copy->getResult(0));
      copyOf[plan.op->getResult(0)] = {copy->getResult(0), copy};
    }
  }
};

} // namespace
