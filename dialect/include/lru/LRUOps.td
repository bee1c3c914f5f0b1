//===- LRUOps.td - The lru dialect's ops -------------------*- tablegen -*-===//
//
// One op per model layer. Shapes: sequence activations [B, L, H], pooled ones
// [B, H]; the LRU has N complex states. Every op but `lru.param` infers its
// result type; the shape checks live in `inferReturnTypes`, so they run (as
// the InferTypeOpInterface verifier) whether the op was parsed or built.
// docs/dialect.md gives the semantics of each op.
//
//===----------------------------------------------------------------------===//

#ifndef LRU_OPS_TD
#define LRU_OPS_TD

include "lru/LRUDialect.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// Runs the shape checks of `inferReturnTypes` as a verifier ahead of
/// InferTypeOpInterface's, so that a malformed op gets the one clear error
/// rather than that and "failed to infer returned types" (see LRUOps.h).
def LRU_ShapesCheckedFirst : NativeOpTrait<"ShapesCheckedFirst"> {
  let cppNamespace = "::lru";
}

/// A pure op whose result type is inferred from its operands.
class LRU_InferOp<string mnemonic, list<Trait> traits = []>
    : LRU_Op<mnemonic, !listconcat([Pure, LRU_ShapesCheckedFirst,
                                    InferTypeOpAdaptor], traits)>;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def LRU_ParamOp : LRU_Op<"param", [Pure]> {
  let summary = "a named, trainable (or state) tensor";
  let description = [{
    A parameter of the model, named by its place in it
    (`blocks.0.lru.nu_log`). `init` says how it is initialised, with its
    arguments in `args`; `group` says how the optimizer treats it.

    ```mlir
    %nu = lru.param "blocks.0.lru.nu_log" init(lru_nu)
          {r_max = 9.990000e-01 : f64, r_min = 9.000000e-01 : f64}
          group(recurrent) : tensor<8xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, LRU_InitKind:$init,
                       OptionalAttr<DictionaryAttr>:$args,
                       LRU_ParamGroup:$group);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $name `init` `(` $init `)` ($args^)? `group` `(` $group `)` attr-dict
    `:` type($result)
  }];
  let extraClassDeclaration = [{
    /// A number in `args` (a float, or an integer for convenience).
    std::optional<double> getArgNumber(llvm::StringRef key);
    /// A string in `args` (the params an lru_gamma derives from), or "".
    llvm::StringRef getArgString(llvm::StringRef key);
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Encoders and dense layers
//===----------------------------------------------------------------------===//

def LRU_EmbedOp : LRU_InferOp<"embed"> {
  let summary = "token embedding: [B, L] i32 x [V, H] -> [B, L, H]";
  let arguments = (ins LRU_I32Tensor:$tokens, LRU_F32Tensor:$table);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $tokens `,` $table attr-dict `:` functional-type(operands, results)
  }];
}

def LRU_LinearOp : LRU_InferOp<"linear"> {
  let summary = "affine map of the last dim: [..., In] -> [..., Out]";
  let arguments = (ins LRU_F32Tensor:$x, LRU_F32Tensor:$weight,
                       Optional<LRU_F32Tensor>:$bias);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $x `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise activations
//===----------------------------------------------------------------------===//

def LRU_GeluOp : LRU_InferOp<"gelu", [Elementwise]> {
  let summary = "GELU, exact (erf) or with the tanh approximation";
  let arguments = (ins LRU_F32Tensor:$x, UnitAttr:$approximate);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = "$x (`approximate` $approximate^)? attr-dict `:` type($x)";
}

def LRU_ReluOp : LRU_InferOp<"relu", [Elementwise]> {
  let summary = "max(x, 0)";
  let arguments = (ins LRU_F32Tensor:$x);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def LRU_TanhOp : LRU_InferOp<"tanh", [Elementwise]> {
  let summary = "tanh(x)";
  let arguments = (ins LRU_F32Tensor:$x);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

//===----------------------------------------------------------------------===//
// Recurrences
//===----------------------------------------------------------------------===//

def LRU_RecurrenceOp : LRU_InferOp<"recurrence", [AttrSizedOperandSegments]> {
  let summary = "the linear recurrent unit (forward or bidirectional)";
  let description = [{
    `lambda = exp(-exp(nu_log) + i exp(theta_log))`,
    `x_k = lambda * x_{k-1} + gamma * (B u_k)` with `gamma = exp(gamma_log)`
    (1 without it), `y_k = Re(C x_k [+ C_rev x_rev_k]) + D * u_k`. With
    `C_rev` (both parts or neither) a second, reverse scan with the same
    lambda and B runs from each sequence's true end. Steps at or beyond a
    sequence's length are padding and yield 0.

    ```mlir
    %y = lru.recurrence %u, %nu, %theta gamma %g B(%bre, %bim) C(%cre, %cim)
         D %d lengths %len : (...) -> tensor<?x16x4xf32>
    ```
  }];
  let arguments = (ins LRU_F32Tensor:$u, LRU_F32Tensor:$nu_log,
                       LRU_F32Tensor:$theta_log,
                       Optional<LRU_F32Tensor>:$gamma_log,
                       LRU_F32Tensor:$B_re, LRU_F32Tensor:$B_im,
                       LRU_F32Tensor:$C_re, LRU_F32Tensor:$C_im,
                       Optional<LRU_F32Tensor>:$C_rev_re,
                       Optional<LRU_F32Tensor>:$C_rev_im,
                       LRU_F32Tensor:$D,
                       Optional<LRU_I32Tensor>:$lengths);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $u `,` $nu_log `,` $theta_log (`gamma` $gamma_log^)?
    `B` `(` $B_re `,` $B_im `)` `C` `(` $C_re `,` $C_im `)`
    (`C_rev` `(` $C_rev_re^ `,` $C_rev_im `)`)? `D` $D
    (`lengths` $lengths^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// True when the op also scans in reverse (C_rev is present).
    bool isBidirectional() { return static_cast<bool>(getCRevRe()); }
  }];
}

def LRU_GeneralizedRecurrenceOp : LRU_InferOp<"generalized_recurrence"> {
  let summary = "the LRU with an input-dependent decay";
  let description = [{
    `a_t = U u_t - exp(nu_log)` (plain) or `-softplus(exp(nu_log) - U u_t)`
    (stable, and normalized); `h_t = exp(a_t + i exp(theta_log)) * h_{t-1} +
    B u_t`; normalized divides `h_t` by the same recurrence driven by ones
    with the real decay `exp(a_t)`; `y_t = Re(C h_t) + D * u_t`. `U` is the
    operand `gate`.

    ```mlir
    %y = lru.generalized_recurrence stable %u, %nu, %theta gate(%U)
         B(%bre, %bim) C(%cre, %cim) D %d : (...) -> tensor<?x16x4xf32>
    ```
  }];
  let arguments = (ins LRU_F32Tensor:$u, LRU_F32Tensor:$gate,
                       LRU_F32Tensor:$nu_log, LRU_F32Tensor:$theta_log,
                       LRU_F32Tensor:$B_re, LRU_F32Tensor:$B_im,
                       LRU_F32Tensor:$C_re, LRU_F32Tensor:$C_im,
                       LRU_F32Tensor:$D,
                       Optional<LRU_I32Tensor>:$lengths,
                       LRU_GLRUForm:$form);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $form $u `,` $nu_log `,` $theta_log `gate` `(` $gate `)`
    `B` `(` $B_re `,` $B_im `)` `C` `(` $C_re `,` $C_im `)` `D` $D
    (`lengths` $lengths^)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Block pieces
//===----------------------------------------------------------------------===//

def LRU_GluOp : LRU_InferOp<"glu", [AttrSizedOperandSegments]> {
  let summary = "gated linear unit, full or half";
  let description = [{
    Full: `(W_v x + b_v) * sigmoid(W_g x + b_g)`; half (no `value`):
    `x * sigmoid(W_g x + b_g)`. The maps act on the last dim.
  }];
  let arguments = (ins LRU_F32Tensor:$x, LRU_F32Tensor:$w_gate,
                       LRU_F32Tensor:$b_gate,
                       Optional<LRU_F32Tensor>:$w_value,
                       Optional<LRU_F32Tensor>:$b_value);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $x `gate` `(` $w_gate `,` $b_gate `)`
    (`value` `(` $w_value^ `,` $b_value `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def LRU_DropoutOp : LRU_InferOp<"dropout"> {
  let summary = "inverted dropout (identity at inference)";
  let description = [{
    In training, zeroes each element with probability `rate` and scales the
    rest by `1 / (1 - rate)`; the mask is a function of the training seed,
    the step and `site` (one per dropout in the model), so the op is
    deterministic and Pure.
  }];
  let arguments = (ins LRU_F32Tensor:$x, F64Attr:$rate, I64Attr:$site);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = "$x `rate` $rate `site` $site attr-dict `:` type($x)";
  let builders = [
    OpBuilder<(ins "::mlir::Value":$x, "double":$rate, "int64_t":$site), [{
      build($_builder, $_state, x, $_builder.getF64FloatAttr(rate),
            $_builder.getI64IntegerAttr(site));
    }]>
  ];
  let hasVerifier = 1;
}

def LRU_BatchNormOp : LRU_InferOp<"batch_norm"> {
  let summary = "batch normalisation over real (unpadded) steps";
  let arguments = (ins LRU_F32Tensor:$x, LRU_F32Tensor:$scale,
                       LRU_F32Tensor:$bias, LRU_F32Tensor:$running_mean,
                       LRU_F32Tensor:$running_var,
                       Optional<LRU_I32Tensor>:$lengths,
                       DefaultValuedAttr<F64Attr, "0.1">:$momentum,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $x `,` $scale `,` $bias `running` `(` $running_mean `,` $running_var `)`
    (`lengths` $lengths^)? attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$scale,
                   "::mlir::Value":$bias, "::mlir::Value":$runningMean,
                   "::mlir::Value":$runningVar, "::mlir::Value":$lengths), [{
      build($_builder, $_state, x, scale, bias, runningMean, runningVar,
            lengths, $_builder.getF64FloatAttr(0.1),
            $_builder.getF64FloatAttr(1e-5));
    }]>
  ];  let hasVerifier = 1;
}

def LRU_LayerNormOp : LRU_InferOp<"layer_norm"> {
  let summary = "layer normalisation over the last dim";
  let arguments = (ins LRU_F32Tensor:$x, LRU_F32Tensor:$scale,
                       LRU_F32Tensor:$bias,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $x `,` $scale `,` $bias attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$scale,
                   "::mlir::Value":$bias), [{
      build($_builder, $_state, x, scale, bias,
            $_builder.getF64FloatAttr(1e-5));
    }]>
  ];  let hasVerifier = 1;
}

def LRU_AddOp
    : LRU_InferOp<"add", [Elementwise, AllTypesMatch<["lhs", "rhs"]>]> {
  let summary = "elementwise sum of two tensors of one type (also complex)";
  let arguments = (ins LRU_AnyTensor:$lhs, LRU_AnyTensor:$rhs);
  let results = (outs LRU_AnyTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs)";
}

//===----------------------------------------------------------------------===//
// Pooling, heads and losses
//===----------------------------------------------------------------------===//

def LRU_PoolOp : LRU_InferOp<"pool"> {
  let summary = "pools [B, L, H] over real steps to [B, H]";
  let arguments = (ins LRU_F32Tensor:$x, LRU_I32Tensor:$lengths,
                       LRU_PoolKind:$kind);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $kind $x `,` $lengths attr-dict `:` functional-type(operands, results)
  }];
}

def LRU_RetrievalCombineOp : LRU_InferOp<"retrieval_combine"> {
  let summary = "two-tower features: [B, H] x [B, H] -> [B, 4H]";
  let description = [{ `concat(a, b, a * b, a - b)` on the last dim. }];
  let arguments = (ins LRU_F32Tensor:$lhs, LRU_F32Tensor:$rhs);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def LRU_CrossEntropyOp : LRU_InferOp<"cross_entropy"> {
  let summary = "mean softmax cross entropy over real examples or steps";
  let description = [{
    With `label_smoothing` s, against (1 - s) onehot(label) + s / K. With
    `class_weights` (one a class), the mean is weighted by each label's
    weight: sum w[label] loss / sum w[label].
  }];
  let arguments = (ins LRU_F32Tensor:$logits, LRU_I32Tensor:$labels,
                       Optional<LRU_I32Tensor>:$lengths,
                       DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing,
                       OptionalAttr<DenseF32ArrayAttr>:$class_weights);
  let results = (outs LRU_Scalar:$result);
  let assemblyFormat = [{
    $logits `,` $labels (`lengths` $lengths^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

/// A regression loss: the mean of an error of (pred - targets) over the
/// targets of real examples or steps that are not NaN (a NaN target is a
/// value not scored).
class LRU_RegressionLossOp<string mnemonic, string summaryText,
                           dag attributes = (ins)>
    : LRU_InferOp<mnemonic> {
  let summary = summaryText;
  let arguments = !con((ins LRU_F32Tensor:$pred, LRU_F32Tensor:$targets,
                            Optional<LRU_I32Tensor>:$lengths), attributes);
  let results = (outs LRU_Scalar:$result);
  let assemblyFormat = [{
    $pred `,` $targets (`lengths` $lengths^)? attr-dict `:`
    functional-type(operands, results)
  }];
  // One shape rule for the three (LRUOps.cpp).
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferRegressionLoss(context, loc, getOperationName(), adaptor,
                                 types);
    }
  }];
}

def LRU_MseOp : LRU_RegressionLossOp<"mse", "mean squared error">;
def LRU_L1LossOp : LRU_RegressionLossOp<"l1_loss", "mean absolute error">;
def LRU_HuberLossOp
    : LRU_RegressionLossOp<"huber_loss",
                           "Huber loss: (d^2) / 2 where |d| < delta, else "
                           "delta (|d| - delta / 2) (PyTorch's HuberLoss)",
                           (ins F32Attr:$delta)> {
  let hasVerifier = 1;
}

include "lru/LRUPrimitiveOps.td"

#endif // LRU_OPS_TD
