//===- LRUDerivatives.td - Derivative rules of lru ops -----*- tablegen -*-===//
//
// Reverse-mode rules for elementwise and simple ops, one dag per operand
// giving that operand's adjoint (see compiler/tblgen/lruc-tblgen.cpp for the
// notation). `lruc-tblgen -gen-lru-derivatives` turns them into
// AutodiffOpInterface models. Complex adjoints follow dL/dRe + i dL/dIm, so
// products take the conjugate of the other factor; Conj is the identity on
// real tensors, so each rule serves both. Structural rules (matmul,
// broadcast, reductions, concat/slice, shift, scan) are in Autodiff.cpp.
// Every rule is checked against finite differences in the unit tests.
//
//===----------------------------------------------------------------------===//

include "lru/LRUOps.td"

/// A builder helper: `(Name args...)` calls `AdjointBuilder::method(args...)`.
class AdjointFn<string name> {
  string method = name;
}
def NoAdjoint : AdjointFn<"">;
def Id : AdjointFn<"identity">;
def Add : AdjointFn<"add">;
def Sub : AdjointFn<"sub">;
def Mul : AdjointFn<"mul">;
def Div : AdjointFn<"div">;
def Neg : AdjointFn<"neg">;
def Conj : AdjointFn<"conj">;
def Sigmoid : AdjointFn<"sigmoid">;
def Step : AdjointFn<"step">;
def NotNan : AdjointFn<"notNan">;
def Masked : AdjointFn<"masked">;
def GeluGrad : AdjointFn<"geluGrad">;
def Re : AdjointFn<"re">;
def Im : AdjointFn<"im">;
def Complex : AdjointFn<"complex">;
def Scale : AdjointFn<"scale">;
def OnesLike : AdjointFn<"onesLike">;
def ZerosLike : AdjointFn<"zerosLike">;
def Dropout : AdjointFn<"dropoutMask">;
def Gather : AdjointFn<"gather">;
def ScatterAdd : AdjointFn<"scatterAdd">;
def CrossEntropyGrad : AdjointFn<"softmaxCrossEntropyGrad">;

class Derivative<Op o, list<dag> operandAdjoints> {
  Op op = o;
  list<dag> adjoints = operandAdjoints;
}

// d(-x) = -dy
def : Derivative<LRU_NegOp, [(Neg $dy)]>;
// d exp(x) = conj(exp x) dy
def : Derivative<LRU_ExpOp, [(Mul $dy, (Conj $result))]>;
// d log(x) = dy / x
def : Derivative<LRU_LogOp, [(Div $dy, $x)]>;
// d sigmoid(x) = dy s (1 - s)
def : Derivative<LRU_SigmoidOp,
                 [(Mul $dy, (Mul $result, (Sub (OnesLike $result), $result)))]>;
// d softplus(x) = dy sigmoid(x)
def : Derivative<LRU_SoftplusOp, [(Mul $dy, (Sigmoid $x))]>;
// d x^(-1/2) = -1/2 x^(-3/2) dy
def : Derivative<LRU_RsqrtOp,
                 [(Mul $dy, (Scale (Mul $result, (Mul $result, $result)),
                                   "-0.5"))]>;
// d sqrt(x) = dy / (2 sqrt x)
def : Derivative<LRU_SqrtOp, [(Div (Scale $dy, "0.5"), $result)]>;
def : Derivative<LRU_ConjOp, [(Conj $dy)]>;
// step is piecewise constant: no adjoint.
def : Derivative<LRU_StepOp, [(NoAdjoint)]>;
// not_nan is piecewise constant; nan_to_zero passes dy where x is a number
// (and is the constant 0 where it is not).
def : Derivative<LRU_NotNanOp, [(NoAdjoint)]>;
def : Derivative<LRU_NanToZeroOp, [(Mul $dy, (NotNan $x))]>;
// masked passes dy where the mask keeps x; the mask is piecewise constant.
def : Derivative<LRU_MaskedOp, [(Masked $dy, $mask), (NoAdjoint)]>;
// y = max(a, b): dy goes to a where a > b, else to b.
def : Derivative<LRU_MaxOp, [(Mul $dy, (Step (Sub $lhs, $rhs))),
                             (Sub $dy, (Mul $dy, (Step (Sub $lhs, $rhs))))]>;
def : Derivative<LRU_StopGradientOp, [(NoAdjoint)]>;
def : Derivative<LRU_GeluOp, [(Mul $dy, (GeluGrad $x, $approximate))]>;
def : Derivative<LRU_ReluOp, [(Mul $dy, (Step $x))]>;
// d tanh(x) = dy (1 - t^2)
def : Derivative<LRU_TanhOp,
                 [(Mul $dy, (Sub (OnesLike $result), (Mul $result, $result)))]>;
def : Derivative<LRU_AddOp, [(Id $dy), (Id $dy)]>;
def : Derivative<LRU_SubOp, [(Id $dy), (Neg $dy)]>;
def : Derivative<LRU_MulOp, [(Mul $dy, (Conj $rhs)), (Mul $dy, (Conj $lhs))]>;
// y = a / b: da = dy / conj(b), db = -dy conj(y / b)
def : Derivative<LRU_DivOp, [(Div $dy, (Conj $rhs)),
                             (Neg (Mul $dy, (Conj (Div $result, $rhs))))]>;
def : Derivative<LRU_ComplexOp, [(Re $dy), (Im $dy)]>;
def : Derivative<LRU_RealOp, [(Complex $dy, (ZerosLike $dy))]>;
def : Derivative<LRU_ImagOp, [(Complex (ZerosLike $dy), $dy)]>;
// The same mask, regenerated from (key, site, position) instead of stored.
def : Derivative<LRU_DropoutMaskOp,
                 [(Dropout $dy, $key, $rate, $site), (NoAdjoint)]>;
def : Derivative<LRU_GatherOp, [(ScatterAdd $dy, $indices, $table),
                                (NoAdjoint)]>;
def : Derivative<LRU_ScatterAddOp, [(Gather $dy, $indices), (NoAdjoint)]>;
def : Derivative<LRU_SoftmaxCrossEntropyOp,
                 [(CrossEntropyGrad $logits, $labels, $dy, $ignore_negative,
                                   $label_smoothing, $class_weights),
                  (NoAdjoint)]>;
