//===- Passes.h - lruc transformation passes --------------------*- C++ -*-===//
#ifndef LRUC_TRANSFORMS_PASSES_H
#define LRUC_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

#include <string>

namespace mlir {
class RewritePatternSet;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace lruc {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "lruc/Transforms/Passes.h.inc"

/// Which function a decomposition is for: `@forward` (inference),
/// `@forward_train` or `@step`.
enum class DecomposeMode {
  /// BatchNorm normalises with its running statistics; dropout is the
  /// identity.
  Eval,
  /// BatchNorm normalises with batch statistics over real steps and its new
  /// running statistics are tagged `lru.state_update`; dropout draws its
  /// mask from the function's `dropout_key` argument.
  Train,
  /// As Eval, for one step of every sequence (lengths are not read): the
  /// ops that carry something to the next step are tagged kCarryScanAttr or
  /// kCarrySumAttr; the pass turns the tags into arguments and results of
  /// @step.
  Step,
};

/// The discardable attribute (a StrAttr: the running statistic's param name)
/// that train-mode BatchNorm puts on the op computing a new running
/// statistic; the pass turns tagged values into results of @forward_train.
inline constexpr llvm::StringLiteral kStateUpdateAttr = "lru.state_update";
/// Marks the op of a train-mode BatchNorm lowering that reads a running
/// statistic (operand 1) to update it: when one BatchNorm is applied twice
/// (a shared encoder), the second update reads the first's result.
inline constexpr llvm::StringLiteral kStateReadAttr = "lru.state_read";

/// A scan tagged with this attribute (a StrAttr: the carry's name) starts
/// from the state that the previous step left: the pass gives @step an
/// argument for that state (the scan's `init`) and returns the scan's new
/// state as a result.
inline constexpr llvm::StringLiteral kCarryScanAttr = "lru.carry_scan";
/// A value tagged with this attribute (a StrAttr: the carry's name) is one
/// step's share of a running sum: the pass gives @step an argument for the
/// sum so far, adds it, and returns the new sum, which every user then reads.
inline constexpr llvm::StringLiteral kCarrySumAttr = "lru.carry_sum";

/// The unit attribute -lru-mark-step-constants puts on an op of @step that
/// reads only parameters and constants (directly or through other marked
/// ops): its results are the same at every step until the parameters change.
inline constexpr llvm::StringLiteral kStepConstantAttr = "lru.step_constant";

/// `file:line:col` of the first file location inside `loc` (the place in
/// the model file an op came from), or "" when it has none.
std::string describeLocation(mlir::Location loc);

/// One pattern per model-level op, rewriting it into primitive ops.
void populateDecomposePatterns(mlir::RewritePatternSet &patterns,
                               DecomposeMode mode);

/// Reads each sequence argument of `func` that has lengths (`lengths` with
/// the same suffix) as 0 at every padded step, whatever the caller left
/// there: a real one (`features`, `features_a`, per-step `targets`) through
/// `lru.masked` by its length mask (a product with the mask keeps NaN and
/// infinities, which would reach every example through BatchNorm's
/// statistics and the weight gradients); an integer one (`tokens`,
/// `tokens_a`, per-step `labels`) through `lru.zero_padding` (a -1 or a
/// token past the vocabulary there would fail the gather's range check).
void maskPaddedInputs(mlir::func::FuncOp func);

} // namespace lruc

#endif // LRUC_TRANSFORMS_PASSES_H
