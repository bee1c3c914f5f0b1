//===- AutodiffPasses.td - Passes that derive gradients ----*- tablegen -*-===//

#ifndef LRUC_AUTODIFF_PASSES_TD
#define LRUC_AUTODIFF_PASSES_TD

include "mlir/Pass/PassBase.td"

def DeriveBackward : Pass<"lru-derive-backward", "mlir::ModuleOp"> {
  let summary = "Derive @backward (loss and parameter gradients) from a "
                "primitive-level forward function";
  let description = [{
    Reverse-mode differentiation at compile time: clones the forward
    function and appends, op by op in reverse, the adjoints given by each
    op's AutodiffOpInterface. The result returns the loss and the gradient of
    every trainable `lru.param`, named by its `lru.gradients` attribute.
  }];
  let options = [
    Option<"forward", "forward", "std::string", "\"forward_train\"",
           "the function to differentiate">,
    Option<"name", "name", "std::string", "\"backward\"",
           "the name of the derived function">,
    Option<"inputs", "inputs", "bool", "false",
           "also return the gradients of the real-valued inputs">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def DeriveTrainStep : Pass<"lru-derive-train-step", "mlir::ModuleOp"> {
  let summary = "Derive @train_step: forward, backward and one AdamW update";
  let description = [{
    Parameters, AdamW moments and running statistics become arguments; the
    function returns the loss and their updated values. Optimizer settings
    come from the module's `lru.train` attribute.
  }];
  let options = [
    Option<"forward", "forward", "std::string", "\"forward_train\"",
           "the function to differentiate">,
    Option<"name", "name", "std::string", "\"train_step\"",
           "the name of the derived function">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def DeriveAccumulation : Pass<"lru-derive-accumulation", "mlir::ModuleOp"> {
  let summary = "Derive @accumulate_gradients and @apply_gradients: a train "
                "step in two halves, for gradient accumulation";
  let description = [{
    `@accumulate_gradients` (params, state, gradient sums, grad_scale,
    inputs...) runs the forward function and its backward pass and returns
    the forward's outputs, each sum plus grad_scale times its gradient, and
    the updated running statistics. `@apply_gradients` (params, m, v,
    gradients, lr, step) returns the parameters and moments after the
    AdamW update `@train_step` makes, gradient clipping included. Optimizer
    settings come from the module's `lru.train` attribute.
  }];
  let options = [
    Option<"forward", "forward", "std::string", "\"forward_train\"",
           "the function to differentiate">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def StripStopGradients : Pass<"lru-strip-stop-gradients", "mlir::ModuleOp"> {
  let summary = "Replace each lru.stop_gradient by its operand";
  let description = [{
    After the derivative passes, `lru.stop_gradient` has done its work; what
    follows (CSE, fusion, the emitters) sees the plain value, so that a value
    computed both with and without it becomes one.
  }];
}

#endif // LRUC_AUTODIFF_PASSES_TD
