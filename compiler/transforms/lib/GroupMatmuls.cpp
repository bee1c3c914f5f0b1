//===- GroupMatmuls.cpp - Independent matmuls side by side run together ---===//
//
// Step mode multiplies a few rows by each weight: products small enough
// that handing one to the threads costs about as much as computing it. The
// LRU's B_re and B_im products (and any other matmuls next to one another
// that do not read each other's results) are marked to run together, so
// that a backend computes them in one go (docs/backend-cpu.md).
//
//===----------------------------------------------------------------------===//

#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace lruc {
#define GEN_PASS_DEF_GROUPMATMULSPASS
#include "lruc/Transforms/Passes.h.inc"
} // namespace lruc

using namespace mlir;

namespace {

void groupMatmuls(Block &block) {
  // An epilogue's matmuls already run with their group.
  llvm::SmallPtrSet<Operation *, 16> epilogue;
  for (lru::FusedOp group : block.getOps<lru::FusedOp>())
    for (lru::MatmulOp matmul : group.getEpilogueMatmuls())
      epilogue.insert(matmul);
  StringAttr mark = StringAttr::get(block.getParentOp()->getContext(),
                                    lru::MatmulOp::kTogetherAttr);
  SmallVector<lru::MatmulOp> run;
  for (Operation &op : block) {
    if (isa<lru::ParamOp, arith::ConstantOp>(op))
      continue;
    op.removeAttr(mark);
    auto matmul = dyn_cast<lru::MatmulOp>(op);
    if (!matmul || matmul.getKind() == lru::MatmulKind::tn ||
        epilogue.contains(matmul)) {
      run.clear();
      continue;
    }
    bool readsRun = llvm::any_of(run, [&](lru::MatmulOp earlier) {
      return llvm::is_contained(matmul->getOperands(), earlier.getResult());
    });
    if (readsRun)
      run.clear();
    if (!run.empty())
      matmul->setAttr(mark, UnitAttr::get(op.getContext()));
    run.push_back(matmul);
  }
}

struct GroupMatmulsPass
    : public lruc::impl::GroupMatmulsPassBase<GroupMatmulsPass> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody())
      groupMatmuls(block);
  }
};

} // namespace
