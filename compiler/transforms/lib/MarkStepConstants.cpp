//===- MarkStepConstants.cpp - The ops of @step that read only parameters -===//
//
// Step mode runs @step once per token. Some of its ops read nothing but
// parameters (BatchNorm's scale from its running variance, the LRU's λ and
// γ from their logarithms: transcendental functions of every channel), so
// their results are the same at every token until the parameters change.
// This pass marks them; what to do with the mark is a backend's choice.
//
//===----------------------------------------------------------------------===//

#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace lruc {
#define GEN_PASS_DEF_MARKSTEPCONSTANTSPASS
#include "lruc/Transforms/Passes.h.inc"
} // namespace lruc

using namespace mlir;

namespace {

/// A value that is the same at every step: a parameter, a constant, a
/// result of a marked op, or a view of one.
bool isStepConstant(Value v) {
  while (auto view = v.getDefiningOp<lru::ViewOp>())
    v = view.getX();
  Operation *def = v.getDefiningOp();
  return def && (isa<lru::ParamOp, arith::ConstantOp>(def) ||
                 def->hasAttr(lruc::kStepConstantAttr));
}

bool hasStaticResults(Operation *op) {
  return op->getNumResults() > 0 &&
         llvm::all_of(op->getResultTypes(), [](Type type) {
           auto tensor = dyn_cast<RankedTensorType>(type);
           return tensor && tensor.hasStaticShape();
         });
}

struct MarkStepConstantsPass
    : lruc::impl::MarkStepConstantsPassBase<MarkStepConstantsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getSymName() != "step")
      return;
    // In op order, so an op's operands are decided before it.
    for (Operation &op : func.getBody().front()) {
      // A view computes nothing: what it views is marked or not.
      if (isa<lru::ParamOp, lru::ViewOp, arith::ConstantOp>(op) ||
          op.hasTrait<OpTrait::IsTerminator>())
        continue;
      if (hasStaticResults(&op) && isMemoryEffectFree(&op) &&
          llvm::all_of(op.getOperands(), isStepConstant))
        op.setAttr(lruc::kStepConstantAttr, UnitAttr::get(op.getContext()));
    }
  }
};

} // namespace
