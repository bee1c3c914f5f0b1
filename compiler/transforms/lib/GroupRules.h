//===- GroupRules.h - What the fusion passes agree on -----------*- C++ -*-===//
//
// The rules that forming groups (FuseElementwise), computing their results
// again where read (Rematerialize) and recomputing for the backward pass
// (Recompute) share: which ops a group's loop computes at each element,
// which constants it copies, which values are worth not storing.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_TRANSFORMS_GROUPRULES_H
#define LRUC_TRANSFORMS_GROUPRULES_H

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace lruc::group {

/// A single-result elementwise op on a ranked tensor, or a broadcast (a
/// loop over its result reads its input at the element's coordinates):
/// what a group's loop computes at each of its elements.
inline bool isPerElement(mlir::Operation *op) {
  if (mlir::isa<lru::BroadcastOp>(op))
    return true;
  return op->hasTrait<mlir::OpTrait::Elementwise>() &&
         op->getNumResults() == 1 &&
         mlir::isa<mlir::RankedTensorType>(op->getResult(0).getType());
}

/// A splat constant, which a group copies instead of reading from memory.
inline bool isSplatConstant(mlir::Value v) {
  auto constant = v.getDefiningOp<mlir::arith::ConstantOp>();
  return constant && mlir::isa<mlir::SplatElementsAttr>(constant.getValue());
}

/// A value whose size grows with the batch (only dim 0 is dynamic):
/// fixed-size values are small, not worth a pass to avoid storing.
inline bool isBatchSized(mlir::Value v) {
  auto type = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
  return type && !type.hasStaticShape();
}

/// Rebuilds `group` without its results that nothing reads (and the body
/// ops and inputs only they needed) and returns it; a group left with no
/// result goes (null). (Rematerialize.cpp)
lru::FusedOp dropUnreadResults(lru::FusedOp group);

/// Makes the broadcasts of `group` that take their shape from an input it
/// reads for nothing else take it from an input of that shape it loads,
/// and drops the first: an input read for its shape alone is still an
/// operand, kept alive by the memory plan and counted in a kernel's bytes.
/// (Rematerialize.cpp)
void takeShapesFromLoadedInputs(lru::FusedOp group);

} // namespace lruc::group

#endif // LRUC_TRANSFORMS_GROUPRULES_H
