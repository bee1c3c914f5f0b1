//===- LRUPrimitiveOps.td - The primitive level of lru -----*- tablegen -*-===//
//
// The small set of ops that model-level ops decompose into, and that autodiff,
// the fp64 reference interpreter, fusion and the emitters work on: matmuls,
// elementwise ops on real and complex tensors, broadcasts and reductions,
// masks from sequence lengths, gather/scatter, softmax cross entropy,
// counter-based dropout and the diagonal complex scan `lru.scan`.
// Model-level `lru.add`, `lru.relu`, `lru.tanh` and `lru.gelu` are also
// primitives. docs/primitives.md gives the semantics of each op and its
// derivative.
//
//===----------------------------------------------------------------------===//

#ifndef LRU_PRIMITIVE_OPS_TD
#define LRU_PRIMITIVE_OPS_TD

include "lru/LRUDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def LRU_MatmulKind : I32EnumAttr<"MatmulKind", "which operand is transposed", [
    I32EnumAttrCase<"nt", 0>, // [..., K] x [N, K] -> [..., N]   (x W^T)
    I32EnumAttrCase<"nn", 1>, // [..., N] x [N, K] -> [..., K]   (x W)
    I32EnumAttrCase<"tn", 2>  // [..., N] x [..., K] -> [N, K]   (sum dY^T X)
  ]> {
  let cppNamespace = "::lru";
}

def LRU_MaskKind : I32EnumAttr<"MaskKind", "which steps a length mask keeps", [
    I32EnumAttrCase<"prefix", 0>, // t < length
    I32EnumAttrCase<"last", 1>    // t == length - 1
  ]> {
  let cppNamespace = "::lru";
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class LRU_UnaryOp<string mnemonic, Type type, string summaryText>
    : LRU_Op<mnemonic, [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = summaryText;
  let arguments = (ins type:$x);
  let results = (outs type:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def LRU_NegOp : LRU_UnaryOp<"neg", LRU_AnyTensor, "-x">;
def LRU_ExpOp : LRU_UnaryOp<"exp", LRU_AnyTensor, "exp(x), real or complex">;
def LRU_LogOp : LRU_UnaryOp<"log", LRU_F32Tensor, "natural logarithm">;
def LRU_SigmoidOp : LRU_UnaryOp<"sigmoid", LRU_F32Tensor, "1 / (1 + exp(-x))">;
def LRU_SoftplusOp : LRU_UnaryOp<"softplus", LRU_F32Tensor, "log(1 + exp(x))">;
def LRU_RsqrtOp : LRU_UnaryOp<"rsqrt", LRU_F32Tensor, "1 / sqrt(x)">;
def LRU_SqrtOp : LRU_UnaryOp<"sqrt", LRU_F32Tensor, "sqrt(x)">;
def LRU_ConjOp : LRU_UnaryOp<"conj", LRU_ComplexTensor, "complex conjugate">;
def LRU_StepOp : LRU_UnaryOp<"step", LRU_F32Tensor,
                             "1 where x > 0, else 0 (the derivative of relu)">;
// A NaN target marks a value not scored (loss mse): the mask of the values
// that are numbers, and the values with NaN replaced by 0 (which a product
// with the mask cannot do: NaN * 0 is NaN).
def LRU_NotNanOp : LRU_UnaryOp<"not_nan", LRU_F32Tensor,
                               "1 where x is a number, 0 where it is NaN">;
def LRU_NanToZeroOp : LRU_UnaryOp<"nan_to_zero", LRU_F32Tensor,
                                  "x, or 0 where x is NaN">;

def LRU_GeluGradOp
    : LRU_Op<"gelu_grad", [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "the derivative of GELU at x (exact or tanh approximation)";
  let arguments = (ins LRU_F32Tensor:$x, UnitAttr:$approximate);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = "$x (`approximate` $approximate^)? attr-dict `:` type($x)";
}

class LRU_BinaryOp<string mnemonic, string summaryText>
    : LRU_Op<mnemonic, [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = summaryText;
  let arguments = (ins LRU_AnyTensor:$lhs, LRU_AnyTensor:$rhs);
  let results = (outs LRU_AnyTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def LRU_SubOp : LRU_BinaryOp<"sub", "lhs - rhs, elementwise">;
def LRU_MulOp : LRU_BinaryOp<"mul", "lhs * rhs, elementwise (complex product)">;
def LRU_DivOp : LRU_BinaryOp<"div", "lhs / rhs, elementwise">;

// Padding zeroed whatever it holds: a product with a length mask keeps a
// NaN or an infinity there (NaN * 0 and inf * 0 are NaN).
def LRU_MaskedOp
    : LRU_Op<"masked", [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "x where mask is not 0, else 0 (also where x is NaN or "
                "infinite)";
  let arguments = (ins LRU_F32Tensor:$x, LRU_F32Tensor:$mask);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = "$x `,` $mask attr-dict `:` type($result)";
}

def LRU_MaxOp
    : LRU_Op<"max", [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "max(lhs, rhs), elementwise (real: the optimizer's "
                "max(n - 1, 1), a loss's divisor of at least 1)";
  let arguments = (ins LRU_F32Tensor:$lhs, LRU_F32Tensor:$rhs);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def LRU_ComplexOp
    : LRU_Op<"complex", [Pure, Elementwise, AllTypesMatch<["re", "im"]>]> {
  let summary = "re + i im";
  let arguments = (ins LRU_F32Tensor:$re, LRU_F32Tensor:$im);
  let results = (outs LRU_ComplexTensor:$result);
  let assemblyFormat = "$re `,` $im attr-dict `:` type($re) `->` type($result)";
  let hasVerifier = 1;
}

class LRU_ComplexPartOp<string mnemonic, string summaryText>
    : LRU_Op<mnemonic, [Pure, Elementwise]> {
  let summary = summaryText;
  let arguments = (ins LRU_ComplexTensor:$x);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def LRU_RealOp : LRU_ComplexPartOp<"re", "the real part">;
def LRU_ImagOp : LRU_ComplexPartOp<"im", "the imaginary part">;

def LRU_StopGradientOp
    : LRU_Op<"stop_gradient", [Pure, SameOperandsAndResultType]> {
  let summary = "x, a constant to the derivative passes (no adjoint)";
  let description = [{
    The value of `x`, through which reverse-mode differentiation passes no
    adjoint. For a term whose derivative is zero in exact arithmetic, so
    that the backward pass skips computing it: BatchNorm's and LayerNorm's
    variance depends on the mean only through sum(x - mean) = 0.
    Removed after the derivative passes (-lru-strip-stop-gradients, the
    first pass of the fusion pipeline): the emitters never see it.
  }];
  let arguments = (ins LRU_AnyTensor:$x);
  let results = (outs LRU_AnyTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

//===----------------------------------------------------------------------===//
// Shapes: broadcast, reduce, concat, slice, shift
//===----------------------------------------------------------------------===//

def LRU_BroadcastOp : LRU_Op<"broadcast", [Pure]> {
  let summary = "repeats x along new dims; `dims` maps x's dims to the result's";
  let description = [{
    `result[i_0, ..., i_(r-1)] = x[i_dims[0], ..., i_dims[k-1] ]`. The
    result's shape is that of `like` (only its shape is read), with x's
    element type; this is how a dynamic batch size reaches a broadcast.
    Its adjoint is `lru.reduce_sum` over the dims not in `dims`.
  }];
  let arguments = (ins LRU_AnyTensor:$x, AnyRankedTensor:$like,
                       DenseI64ArrayAttr:$dims);
  let results = (outs LRU_AnyTensor:$result);
  let assemblyFormat = [{
    $x `like` $like `dims` $dims attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether x's dims map, in order, to consecutive dims of the result,
    /// so that x's element for the result's flat index i is
    /// x[(i / getInnerCount()) % numElements(x)]: a bias over [.., H], a
    /// per-row value over [B, L, ..], a scalar anywhere.
    bool isContiguous();
    /// The number of result elements per step of x's last mapped dim: the
    /// product of the result dims after the mapped ones.
    int64_t getInnerCount();
  }];
}

def LRU_ReduceSumOp : LRU_Op<"reduce_sum", [Pure]> {
  let summary = "sums over `dims`, which disappear from the shape";
  let arguments = (ins LRU_AnyTensor:$x, DenseI64ArrayAttr:$dims);
  let results = (outs LRU_AnyTensor:$result);
  let assemblyFormat = [{
    $x `dims` $dims attr-dict `:` type($x) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The sum of `x` over `dims`: an lru.reduce_sum, or, when every dim
    /// in `dims` has one element (step mode's sequence of one step), an
    /// lru.view of `x` in the smaller shape (the same values: no kernel,
    /// no copy).
    static ::mlir::Value createSum(::mlir::OpBuilder &builder,
                                   ::mlir::Location loc, ::mlir::Value x,
                                   ::llvm::ArrayRef<int64_t> dims);
  }];
  let hasVerifier = 1;
}

def LRU_ConcatOp : LRU_Op<"concat", [Pure]> {
  let summary = "joins tensors along `dim`";
  let arguments = (ins Variadic<LRU_AnyTensor>:$inputs, I64Attr:$dim);
  let results = (outs LRU_AnyTensor:$result);
  let assemblyFormat = [{
    $inputs `dim` $dim attr-dict `:` functional-type($inputs, results)
  }];
  let hasVerifier = 1;
}

def LRU_SliceOp : LRU_Op<"slice", [Pure]> {
  let summary = "the `size` entries of `dim` starting at `offset`";
  let arguments = (ins LRU_AnyTensor:$x, I64Attr:$dim, I64Attr:$offset,
                       I64Attr:$size);
  let results = (outs LRU_AnyTensor:$result);
  let assemblyFormat = [{
    $x `dim` $dim `offset` $offset `size` $size attr-dict `:` type($x) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def LRU_ViewOp : LRU_Op<"view", [Pure]> {
  let summary = "x's floats under another type, without a copy";
  let description = [{
    The same floats, row-major, read with the result's shape and element
    type; a complex element is its real part then its imaginary part. So a
    complex `[..., N]` is the f32 `[..., 2N]` of interleaved parts, and an
    f32 `[N, 2H]` whose rows are `(B_re[n], B_im[n])` is the `[2N, H]`
    whose rows alternate between them. The dynamic dims (the batch) lead
    both types alike; the static dims hold the same number of floats.
    Backends read x's buffer (the memory plan keeps it alive while a view
    of it is read). This is how one real matmul computes a complex product
    (docs/primitives.md).
  }];
  let arguments = (ins LRU_AnyTensor:$x);
  let results = (outs LRU_AnyTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def LRU_ShiftOp : LRU_Op<"shift", [Pure, AttrSizedOperandSegments]> {
  let summary = "each sequence moved one step in time: x_{t-1} (or x_{t+1})";
  let description = [{
    For `x : [B, L, N]`: `y_t = x_{t-1}`, with `y_0 = init` (zero without
    it). With `reverse`, `y_t = x_{t+1}` and the step at each sequence's
    last real position (`lengths - 1`, or `L - 1`) reads `init`. Steps at or
    beyond a sequence's length are 0. This is the "previous state" that the
    scan's derivative with respect to lambda needs.
  }];
  let arguments = (ins LRU_AnyTensor:$x, Optional<LRU_AnyTensor>:$init,
                       Optional<LRU_I32Tensor>:$lengths, UnitAttr:$reverse);
  let results = (outs LRU_AnyTensor:$result);
  let assemblyFormat = [{
    $x (`init` $init^)? (`lengths` $lengths^)? (`reverse` $reverse^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Dense algebra and lookups
//===----------------------------------------------------------------------===//

def LRU_MatmulOp : LRU_Op<"matmul", [Pure]> {
  let summary = "real matrix products over the last dim (nt, nn) or all leading dims (tn)";
  let description = [{
    - `nt`: `lhs [..., K] x rhs [N, K] -> [..., N]`, `y = x W^T`;
    - `nn`: `lhs [..., N] x rhs [N, K] -> [..., K]`, `y = x W`;
    - `tn`: `lhs [..., N] x rhs [..., K] -> [N, K]`, the sum over every
      leading index of `lhs^T rhs` (a weight gradient).
  }];
  let arguments = (ins LRU_MatmulKind:$kind, LRU_F32Tensor:$lhs,
                       LRU_F32Tensor:$rhs);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $kind $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Marks an `nt` or `nn` matmul that runs together with the one just
    /// before it (-lru-group-matmuls): only lru.param ops and constants
    /// between, and it does not read that one's result. A backend may
    /// compute such a run at once (the CPU library: one parallel region
    /// for all of its products); the memory plan keeps every operand of a
    /// run alive until its last matmul.
    static constexpr ::llvm::StringLiteral kTogetherAttr = "lru.together";
    /// The run this matmul starts, in order: itself and the kTogetherAttr
    /// matmuls after it. Empty for a matmul that is itself marked.
    ::llvm::SmallVector<MatmulOp, 2> getTogetherRun();
  }];
}

def LRU_GatherOp : LRU_Op<"gather", [Pure]> {
  let summary = "rows of `table [V, H]` picked by `indices [...]`: [..., H]";
  let description = [{
    An index outside `[0, V)` is a run-time error in the interpreter and the
    backends (never a silent read).
  }];
  let arguments = (ins LRU_F32Tensor:$table, LRU_I32Tensor:$indices);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $table `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LRU_ScatterAddOp : LRU_Op<"scatter_add", [Pure]> {
  let summary = "the adjoint of gather: sums `updates [..., H]` into rows [V, H]";
  let arguments = (ins LRU_F32Tensor:$updates, LRU_I32Tensor:$indices);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $updates `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Sequences
//===----------------------------------------------------------------------===//

def LRU_LengthMaskOp : LRU_Op<"length_mask", [Pure]> {
  let summary = "an f32 [B, L] mask from lengths [B]: real steps, or the last one";
  let description = [{
    With `scored labels [B, L]`, a real step whose label is negative (not
    scored: a per-step loss's ignored step) is 0 too.
  }];
  let arguments = (ins LRU_MaskKind:$kind, LRU_I32Tensor:$lengths,
                       Optional<LRU_I32Tensor>:$labels);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $kind $lengths (`scored` $labels^)? attr-dict `:` type($lengths)
    (`,` type($labels)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

// An integer sequence input (tokens, per-step labels) past its lengths:
// whatever a caller left there (-1, a token past the vocabulary) would be
// range-checked by the gather or the cross entropy that reads it. 0 is a
// valid token and a label that the length mask leaves unscored.
def LRU_ZeroPaddingOp
    : LRU_Op<"zero_padding", [Pure, AllTypesMatch<["x", "result"]>]> {
  let summary = "x [B, L, ...] with 0 at the steps at or past each "
                "sequence's length";
  let arguments = (ins LRU_I32Tensor:$x, LRU_I32Tensor:$lengths);
  let results = (outs LRU_I32Tensor:$result);
  let assemblyFormat = [{
    $x `,` $lengths attr-dict `:` type($x) `,` type($lengths)
  }];
  let hasVerifier = 1;
}

def LRU_ScanOp : LRU_Op<"scan", [Pure, AttrSizedOperandSegments]> {
  let summary = "the diagonal linear recurrence x_t = lambda_t * x_{t-1} + b_t";
  let description = [{
    `b : [B, L, N]`; `lambda : [N]` (constant in time, the LRU) or
    `[B, L, N]` (varying, the generalised LRU), of b's element type (real or
    complex). `x_{-1} = init [B, N]` (zero without it). With `lengths`,
    steps at or beyond a sequence's length are padding: they never enter the
    state and their output is 0. With `reverse` the recurrence runs from each
    sequence's last real step down to step 0:
    `x_t = lambda_t * x_{t+1} + b_t`.

    Derivative (g = dL/dRe + i dL/dIm): `gb = scan(conj(lambda'), gx)` in the
    other direction, where `lambda'_t = lambda_{t+1}` (the multiplier that
    carried x_t forward); `glambda_t = conj(x_{t-1}) * gb_t`, summed over B
    and L when lambda is constant; `ginit = conj(lambda_0) * gb_0`.
  }];
  let arguments = (ins LRU_AnyTensor:$lambda, LRU_AnyTensor:$b,
                       Optional<LRU_AnyTensor>:$init,
                       Optional<LRU_I32Tensor>:$lengths, UnitAttr:$reverse);
  let results = (outs LRU_AnyTensor:$result);
  let assemblyFormat = [{
    $lambda `,` $b (`init` $init^)? (`lengths` $lengths^)?
    (`reverse` $reverse^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses and randomness
//===----------------------------------------------------------------------===//

def LRU_LabelWeightOp : LRU_Op<"label_weight", [Pure]> {
  let summary = "each label's class weight: weights[label], 0 outside [0, K)";
  let description = [{
    The weights of a weighted cross entropy's mean. A label outside [0, K)
    (a step not scored, or one the cross entropy that reads the same labels
    reports) weighs 0.
  }];
  let arguments = (ins LRU_I32Tensor:$labels, DenseF32ArrayAttr:$weights);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $labels `weights` $weights attr-dict `:` type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

def LRU_SoftmaxCrossEntropyOp : LRU_Op<"softmax_cross_entropy", [Pure]> {
  let summary = "per-row -log softmax(logits)[label]: [..., K] x [...] -> [...]";
  let description = [{
    A label outside [0, K) is an error at run time; with `ignore_negative`,
    a negative label marks a row not scored instead: its loss (and gradient)
    is 0. With `label_smoothing` s in [0, 1), the cross entropy against
    (1 - s) onehot(label) + s / K: -log softmax(z)[label] (1 - s) - s / K
    sum_k log softmax(z)[k]. With `class_weights` w (one a class), PyTorch's
    weighted row: -(1 - s) w[label] log softmax(z)[label] - s / K sum_k
    w[k] log softmax(z)[k].
  }];
  let arguments = (ins LRU_F32Tensor:$logits, LRU_I32Tensor:$labels,
                       UnitAttr:$ignore_negative,
                       DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing,
                       OptionalAttr<DenseF32ArrayAttr>:$class_weights);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LRU_SoftmaxCrossEntropyGradOp : LRU_Op<"softmax_cross_entropy_grad", [Pure]> {
  let summary = "(softmax(logits) - onehot(labels)) * g: the loss's adjoint";
  let description = [{
    With `ignore_negative`, a row of a negative label is 0. With
    `label_smoothing` s: (softmax(logits) - (1 - s) onehot(labels) - s / K) * g.
    With `class_weights` w: ((1 - s) w[label] (softmax - onehot) + s / K
    (sum(w) softmax - w)) * g.
  }];
  let arguments = (ins LRU_F32Tensor:$logits, LRU_I32Tensor:$labels,
                       LRU_F32Tensor:$g, UnitAttr:$ignore_negative,
                       DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing,
                       OptionalAttr<DenseF32ArrayAttr>:$class_weights);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $g attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LRU_DropoutMaskOp : LRU_Op<"dropout_mask",
                                [Pure, AllTypesMatch<["x", "result"]>]> {
  let summary = "x * keep / (1 - rate), keep drawn by Philox from (key, site, index)";
  let description = [{
    `key : tensor<2xi64>` holds the dropout seed and the training step. Each
    element keeps (`u >= rate`, u uniform in [0, 1) from Philox-4x32-10 on
    the counter (site, flat index) with the key) or drops. The mask is a
    pure function of key, site and position, so the backward pass applies
    the same op to the gradient instead of storing the mask.
  }];
  let arguments = (ins LRU_F32Tensor:$x, LRU_I64Tensor:$key, F64Attr:$rate,
                       I64Attr:$site);
  let results = (outs LRU_F32Tensor:$result);
  let assemblyFormat = [{
    $x `,` $key `rate` $rate `site` $site attr-dict `:` type($x) `,`
    type($key)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def LRU_FusedOp : LRU_Op<"fused", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">, RecursiveMemoryEffects]> {
  let summary = "elementwise ops of one shape, run as one loop";
  let description = [{
    A group formed by `-lru-fuse-elementwise`: the body's block arguments
    are the inputs, its ops are elementwise ops (and splat constants) on
    tensors of the inputs' shape, and `lru.yield` names the values used
    outside the group. It means what the body means inlined; a backend runs
    it as a single loop over the elements, with the intermediate values in
    registers instead of memory. A group may hold one `lru.scan` (its
    lambda, init and lengths are inputs of the group): then the loop runs
    along the scan's time dim, the scan's producers and consumers computed
    at each step, and `lru.shift` of an input (over the scan's lengths)
    reads that input's previous or next step. A broadcast of an input reads
    it at the element's coordinates in the dims it maps; an `lru.slice` of
    an input along its last dim (of the loop's shape, but a narrower last
    dim) reads it at the element's row and column plus the offset.

    A group may also sum values of its shape over every dim but the last
    (`lru.reduce_sum ... dims [0, ..., rank-2]`, yielded and read by nothing
    else in the group): BatchNorm's statistics, a bias's or a gate's
    gradient, summed as the loop computes them instead of stored and read
    back. A backend cuts the loop's rows into chunks that never cross an
    example (`kReductionChunkRows` rows; a scan group's chunk is
    `kScanChunkSteps` steps of one sequence, what a CUDA block of its
    chunked scan takes), sums each chunk into one row of partial sums, then the rows
    in chunk order: the sum does not depend on how the chunks are spread
    over threads. Such a result's buffer holds every chunk's row
    (`getReductionChunksPerExample`), the total in the first.

    A batch-sized group without a scan may be the epilogue of the matmuls
    that compute its inputs (`lru.epilogue`, set by
    `-lru-fuse-gemm-epilogue`): those `lru.matmul` ops (`nt` or `nn`, of the
    group's loop shape) stand just before it, and a backend may run each
    part of the group's rows right after computing those rows of the
    matmuls, while they are in cache. So may a group whose scan is one step
    of each sequence (`[?, 1, N]`, step mode) and that sums nothing: the
    products' columns are the scan's channels, and a backend may scan a
    range of channels right after computing those columns. It means the
    same either way.

    A group without a scan may hold `lru.dropout_mask` of a value of its
    shape (a static last dim): its key is an input, and a backend draws the
    decisions of a row (or a warp's neighbours) together, a Philox block
    per four elements, so the dropped value is never stored on its own.

    ```mlir
    %y = lru.fused (%a, %b) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%x: tensor<?x8xf32>, %z: tensor<?x8xf32>):
      %s = lru.mul %x, %z : tensor<?x8xf32>
      %t = lru.exp %s : tensor<?x8xf32>
      lru.yield %t : tensor<?x8xf32>
    }
    ```
  }];
  // i32 inputs: a scan's lengths; i64: a dropout's key.
  let arguments = (ins Variadic<AnyTypeOf<[LRU_AnyTensor, LRU_I32Tensor,
                                           LRU_I64Tensor]>>:$inputs);
  let results = (outs Variadic<LRU_AnyTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let extraClassDeclaration = [{
    /// The group's scan (at most one), or null.
    ScanOp getScan();
    /// The shape the group loops over: that of its values but the sums.
    ::mlir::RankedTensorType getLoopType();
    /// The lru.reduce_sum yielded as result `index`, or null.
    ReduceSumOp getReduction(unsigned index);
    bool hasReductions();
    /// Rows a chunk of a reduction sums, but in a scan group.
    static constexpr int64_t kReductionChunkRows = 64;
    /// Steps of a sequence a scan group's chunk takes: the CUDA backend
    /// runs a block per chunk, each handing its end state to the next
    /// chunk's block, so that short batches of long sequences still fill a
    /// GPU; its sums are per chunk on every backend.
    static constexpr int64_t kScanChunkSteps = 256;
    /// A chunk's rows: kScanChunkSteps steps of a sequence (at most L) in a
    /// scan group, else kReductionChunkRows.
    int64_t getReductionChunkRows();
    /// Rows of one example (the leading dynamic dim's), or of the whole
    /// loop when its shape is static.
    int64_t getRowsPerExample();
    /// Chunks, each a row of partial sums, per example (per loop when the
    /// shape is static).
    int64_t getReductionChunksPerExample();
    /// Marks a group that runs as the epilogue of the matmuls just before
    /// it (-lru-fuse-gemm-epilogue).
    static constexpr ::llvm::StringLiteral kEpilogueAttr = "lru.epilogue";
    /// An epilogue's matmuls, in order: the run of lru.matmul ops (nt or
    /// nn, of the loop's shape) just before it whose results it reads (none
    /// without kEpilogueAttr).
    ::llvm::SmallVector<MatmulOp, 2> getEpilogueMatmuls();
    /// Whether the group may be an epilogue: batch-sized with a static last
    /// dim, and either without a scan or a scan of one step that sums
    /// nothing (its channels are the products' columns).
    bool canBeEpilogue();
  }];
  let hasVerifier = 1;
}

def LRU_MultiTensorOp : LRU_Op<"multi_tensor", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">, RecursiveMemoryEffects]> {
  let summary = "independent lru.fused groups of static shapes, run as one kernel";
  let description = [{
    Formed by `-lru-fuse-multi-tensor` from the groups whose results only
    the function returns (the optimizer's update of every parameter, one
    group per shape): a backend runs all of them as one kernel, a single
    parallel loop (or launch) over the elements of every group, instead of
    one per group. The body's block arguments are the inputs; it holds
    only `lru.fused` groups without a scan, of static shapes, none reading
    another's results, and `lru.yield` lists every result of every group
    once, in order: the op's results are the groups' results.

    ```mlir
    %r:2 = lru.multi_tensor (%a, %b) : (tensor<4xf32>, tensor<3x2xf32>) -> (tensor<4xf32>, tensor<3x2xf32>) {
    ^bb0(%x: tensor<4xf32>, %y: tensor<3x2xf32>):
      %0 = lru.fused (%x) : (tensor<4xf32>) -> tensor<4xf32> { ... }
      %1 = lru.fused (%y) : (tensor<3x2xf32>) -> tensor<3x2xf32> { ... }
      lru.yield %0, %1 : tensor<4xf32>, tensor<3x2xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyTypeOf<[LRU_AnyTensor, LRU_I32Tensor]>>:$inputs);
  let results = (outs Variadic<LRU_AnyTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let extraClassDeclaration = [{
    /// The groups, in order.
    auto getGroups() { return getBody().front().getOps<FusedOp>(); }
  }];
  let hasVerifier = 1;
}

def LRU_YieldOp : LRU_Op<"yield", [Pure, Terminator,
                                   ParentOneOf<["FusedOp", "MultiTensorOp"]>]> {
  let summary = "the results of an lru.fused group or an lru.multi_tensor";
  let arguments = (ins Variadic<LRU_AnyTensor>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // LRU_PRIMITIVE_OPS_TD
