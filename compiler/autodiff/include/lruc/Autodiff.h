//===- Autodiff.h - Reverse-mode differentiation at compile time -*- C++ -*-===//
//
// Derives `@backward` from `@forward_train` (primitive level, as the
// decomposition makes it): the same arguments; results the loss and the
// gradient of every trainable parameter (every `lru.param` not in the
// `state` group), in the order the parameters appear, named by the
// function's `lru.gradients` attribute. Each op's adjoint comes from its
// AutodiffOpInterface (dialect/include/lru/LRUInterfaces.td).
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_AUTODIFF_H
#define LRUC_AUTODIFF_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <optional>

namespace lruc {

/// Adds `@backward` (named `name`) next to `forward`, whose first result
/// must be the scalar loss. With `inputGradients`, the gradients of the
/// real-valued inputs (features, targets) follow the parameters', named by
/// the `lru.input_gradients` attribute. Emits an error at the offending op
/// and fails if an active op has no derivative.
mlir::FailureOr<mlir::func::FuncOp>
deriveBackward(mlir::func::FuncOp forward, llvm::StringRef name = "backward",
               bool inputGradients = false);

/// The optimizer settings of a model (its `lru.train` attribute, with the
/// language's defaults where absent).
struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.05;
  double recurrentLrFactor = 1.0;
  std::optional<double> clip;
  static AdamWConfig fromModule(mlir::ModuleOp module);
};

/// Adds `@train_step` (named `name`) next to `forward` (`@forward_train`):
/// arguments (params..., adam_m..., adam_v..., state..., lr, step,
/// forward's arguments...), each tagged `lru.param`/`lru.adam_m`/
/// `lru.adam_v`/`lru.state` with the parameter's name, `lr` and `step`
/// (1-based, f32) tagged `lru.input`; results (forward's outputs before the
/// update: the loss, then the predictions...; then params'..., m'...,
/// v'..., state'...). One AdamW step with optional global-norm clipping;
/// the recurrent group at lr * factor without weight decay.
mlir::FailureOr<mlir::func::FuncOp>
deriveTrainStep(mlir::func::FuncOp forward, const AdamWConfig &config,
                llvm::StringRef name = "train_step");

/// Gradient accumulation, a train step in two halves (docs/autodiff.md):
/// `@accumulate_gradients` runs forward and backward in train mode and
/// adds `grad_scale` times each gradient to a sum (`lru.gradient`
/// arguments), returning the forward's outputs, the sums and the updated
/// running statistics; `@apply_gradients` is the train step's AdamW update
/// (clipping included) on given gradients.
mlir::FailureOr<mlir::func::FuncOp>
deriveAccumulateGradients(mlir::func::FuncOp forward,
                          llvm::StringRef name = "accumulate_gradients");
mlir::FailureOr<mlir::func::FuncOp>
deriveApplyGradients(mlir::func::FuncOp forward, const AdamWConfig &config,
                     llvm::StringRef name = "apply_gradients");

} // namespace lruc

#endif // LRUC_AUTODIFF_H
