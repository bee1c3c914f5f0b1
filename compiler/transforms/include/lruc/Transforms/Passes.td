//===- Passes.td - lruc transformation passes --------------*- tablegen -*-===//

#ifndef LRUC_TRANSFORMS_PASSES_TD
#define LRUC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DecomposePass : Pass<"lru-decompose", "mlir::ModuleOp"> {
  let summary = "Decompose model-level lru ops into primitive ops";
  let description = [{
    Rewrites `@forward` in eval mode (BatchNorm with its running statistics,
    dropout as the identity) and adds `@forward_train`, a train-mode clone
    with a trailing `%key : tensor<2xi64> {lru.input = "dropout_key"}`
    argument (dropout becomes `lru.dropout_mask`) and, as extra trailing
    results, the new running statistics of every `lru.batch_norm` (mean then
    variance, in op order), named by the function attribute
    `lru.state_updates`. Both functions then hold only primitive ops
    (docs/primitives.md gives each decomposition). An op that cannot be
    decomposed is an error at its location.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

#endif // LRUC_TRANSFORMS_PASSES_TD
