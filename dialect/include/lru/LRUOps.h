//===- LRUOps.h - The lru dialect's ops -------------------------*- C++ -*-===//
//
// Ops and enums of the lru dialect (see docs/dialect.md).
//
//===----------------------------------------------------------------------===//
#ifndef LRU_LRUOPS_H
#define LRU_LRUOPS_H

#include "lru/LRUDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "lru/LRUEnums.h.inc"

namespace lru {
/// Verifies an op by running its `inferReturnTypes` with the op's location,
/// which emits `'lru.<op>' op expects ...` for a malformed op. Listed before
/// InferTypeOpInterface so that its verifier (which would add "failed to infer
/// returned types") only runs on ops whose shapes are already known good.
template <typename ConcreteType>
class ShapesCheckedFirst
    : public mlir::OpTrait::TraitBase<ConcreteType, ShapesCheckedFirst> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    llvm::SmallVector<mlir::Type, 1> types;
    return ConcreteType::inferReturnTypes(
        op->getContext(), op->getLoc(), op->getOperands(),
        op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
        op->getRegions(), types);
  }
};
} // namespace lru

#define GET_OP_CLASSES
#include "lru/LRUOps.h.inc"

#endif // LRU_LRUOPS_H
