//===- FuseGemmEpilogue.cpp - Groups as the epilogues of their matmuls ----===//
//
// A batch-sized group without a scan that reads the results of matmuls
// (`nt` or `nn`, of its loop's type: the C projection before `+ D u`, the
// GLU's input gradient before the GELU's) can run each part of its rows
// right after those rows of the matmuls are computed, reading them from
// cache instead of memory. So can a group holding a scan of one step of
// each sequence (step mode), by channels: the products' columns are its
// channels (`B u` before the scan).
// The pass moves such matmuls to just before the group (when nothing in
// between reads them) and marks the group `lru.epilogue`; the memory plan
// then keeps the matmuls' operands alive until the group, since one part's
// epilogue may run while another part's products are still being computed.
//
//===----------------------------------------------------------------------===//

#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace lruc {
#define GEN_PASS_DEF_FUSEGEMMEPILOGUEPASS
#include "lruc/Transforms/Passes.h.inc"
} // namespace lruc

using namespace mlir;

namespace {

void fuseEpilogues(Block &block) {
  llvm::SmallPtrSet<Operation *, 16> claimed; // by an earlier epilogue
  for (lru::FusedOp group : block.getOps<lru::FusedOp>()) {
    if (!group.canBeEpilogue())
      continue;
    RankedTensorType loop = group.getLoopType();
    SmallVector<lru::MatmulOp> matmuls;
    for (Value input : group.getInputs()) {
      auto matmul = input.getDefiningOp<lru::MatmulOp>();
      if (!matmul || matmul->getBlock() != &block ||
          matmul.getKind() == lru::MatmulKind::tn ||
          matmul.getType().getShape() != loop.getShape() ||
          claimed.contains(matmul) || llvm::is_contained(matmuls, matmul))
        continue;
      // Moving it down to the group must not pass one of its readers.
      if (llvm::any_of(matmul->getUsers(), [&](Operation *user) {
            Operation *top = block.findAncestorOpInBlock(*user);
            return top != group && top->isBeforeInBlock(group);
          }))
        continue;
      matmuls.push_back(matmul);
    }
    if (matmuls.empty())
      continue;
    llvm::sort(matmuls, [](lru::MatmulOp a, lru::MatmulOp b) {
      return a->isBeforeInBlock(b);
    });
    for (lru::MatmulOp matmul : matmuls) {
      matmul->moveBefore(group);
      claimed.insert(matmul);
    }
    group->setAttr(lru::FusedOp::kEpilogueAttr,
                   UnitAttr::get(group.getContext()));
  }
}

struct FuseGemmEpiloguePass
    : public lruc::impl::FuseGemmEpiloguePassBase<FuseGemmEpiloguePass> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody())
      fuseEpilogues(block);
  }
};

} // namespace
