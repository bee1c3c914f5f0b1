//===- MLIRGen.h - The checked AST to the lru dialect ----------*- C++ -*-===//
//
// The only bridge between the front end and MLIR: turns an ast::Model into a
// module holding `func.func @forward` at the level of the `lru` dialect, with
// every parameter an `lru.param` named by its place in the model and every op
// located in the model file.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_MLIRGEN_H
#define LRUC_MLIRGEN_H

#include "lruc/frontend/AST.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace lruc {

/// Builds the model-level module. Returns null (after emitting a diagnostic)
/// if the module fails to verify, which would be a bug in lruc.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &context,
                                          const ast::Model &model);

} // namespace lruc

#endif // LRUC_MLIRGEN_H
