//===- FuseMultiTensor.cpp - The returned groups as one kernel ------------===//
//
// The groups whose results only the function returns (AdamW's update of
// every parameter, a group per parameter shape) are independent of each
// other and of everything after them, so one kernel can run all of them:
// they move into one lru.multi_tensor at the place of the last of them.
//
//===----------------------------------------------------------------------===//

#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SetVector.h"

namespace lruc {
#define GEN_PASS_DEF_FUSEMULTITENSORPASS
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

void fuseReturnedGroups(Block &block) {
  SmallVector<lru::FusedOp> groups;
  for (auto group : block.getOps<lru::FusedOp>())
    if (isReturnedGroup(group))
      groups.push_back(group);
  if (groups.size() < 2)
    return;

  // Each group reads only values defined before it, hence before the last.
  llvm::SetVector<Value> inputs;
  SmallVector<Type> resultTypes;
  for (lru::FusedOp group : groups) {
    inputs.insert(group.getInputs().begin(), group.getInputs().end());
    llvm::append_range(resultTypes, group.getResultTypes());
  }
  Operation *last = groups.back();
  OpBuilder builder(last);
  auto multi = builder.create<lru::MultiTensorOp>(last->getLoc(), resultTypes,
                                                  inputs.getArrayRef());
  SmallVector<Location> argLocs(inputs.size(), last->getLoc());
  Block *body = builder.createBlock(&multi.getBody(), {},
                                    TypeRange(inputs.getArrayRef()), argLocs);
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body->getArguments());
  SmallVector<Value> yielded;
  for (lru::FusedOp group : groups)
    llvm::append_range(yielded, builder.clone(*group, mapping)->getResults());
  builder.create<lru::YieldOp>(last->getLoc(), yielded);

  unsigned next = 0;
  for (lru::FusedOp group : groups) {
    for (Value result : group.getResults())
      result.replaceAllUsesWith(multi.getResult(next++));
    group->erase();
  }
}

struct FuseMultiTensorPass
    : public lruc::impl::FuseMultiTensorPassBase<FuseMultiTensorPass> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody())
      fuseReturnedGroups(block);
  }
};

} // namespace
