//===- Autodiff.cpp - Adjoints of lru primitive ops -----------------------===//
//
// AdjointBuilder's helpers, the structural derivative rules that TableGen's
// dags cannot express (they depend on attributes, optional operands or
// shapes), and the registration of every AutodiffOpInterface model. The
// notation and conventions are in LRUInterfaces.td; docs/primitives.md has
// each rule as an equation.
//
//===----------------------------------------------------------------------===//

#include "lru/Autodiff.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/STLExtras.h"

#include <complex>

using namespace mlir;

#include "lru/LRUInterfaces.cpp.inc"

namespace lru {

// --- AdjointBuilder -------------------------------------------------------------

Value AdjointBuilder::identity(Value x) { return x; }

Value AdjointBuilder::add(Value a, Value b) {
  return b_.create<AddOp>(loc_, a.getType(), a, b);
}
Value AdjointBuilder::sub(Value a, Value b) {
  return b_.create<SubOp>(loc_, a.getType(), a, b);
}
Value AdjointBuilder::mul(Value a, Value b) {
  return b_.create<MulOp>(loc_, a.getType(), a, b);
}
Value AdjointBuilder::div(Value a, Value b) {
  return b_.create<DivOp>(loc_, a.getType(), a, b);
}
Value AdjointBuilder::neg(Value x) {
  return b_.create<NegOp>(loc_, x.getType(), x);
}

static bool isComplex(Value x) {
  return isa<ComplexType>(cast<ShapedType>(x.getType()).getElementType());
}

Value AdjointBuilder::conj(Value x) {
  if (!isComplex(x))
    return x;
  return b_.create<ConjOp>(loc_, x.getType(), x);
}
Value AdjointBuilder::sigmoid(Value x) {
  return b_.create<SigmoidOp>(loc_, x.getType(), x);
}
Value AdjointBuilder::step(Value x) {
  return b_.create<StepOp>(loc_, x.getType(), x);
}
Value AdjointBuilder::notNan(Value x) {
  return b_.create<NotNanOp>(loc_, x.getType(), x);
}
Value AdjointBuilder::masked(Value x, Value mask) {
  return b_.create<MaskedOp>(loc_, x.getType(), x, mask);
}
Value AdjointBuilder::geluGrad(Value x, bool approximate) {
  return b_.create<GeluGradOp>(loc_, x.getType(), x, approximate);
}

/// The real tensor type of the same shape as complex `x`.
static RankedTensorType realTypeOf(Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  return type.clone(cast<ComplexType>(type.getElementType()).getElementType());
}

Value AdjointBuilder::re(Value x) {
  return b_.create<RealOp>(loc_, realTypeOf(x), x);
}
Value AdjointBuilder::im(Value x) {
  return b_.create<ImagOp>(loc_, realTypeOf(x), x);
}
Value AdjointBuilder::complex(Value re, Value im) {
  auto type = cast<RankedTensorType>(re.getType());
  return b_.create<ComplexOp>(
      loc_, type.clone(ComplexType::get(type.getElementType())), re, im);
}

Value AdjointBuilder::fillLike(Value x, double c) {
  auto type = cast<RankedTensorType>(x.getType());
  Type element = type.getElementType();
  auto scalarType = RankedTensorType::get({}, element);
  Attribute value;
  if (auto complexType = dyn_cast<ComplexType>(element))
    value = DenseElementsAttr::get(
        scalarType, std::complex<APFloat>(APFloat(float(c)), APFloat(0.0f)));
  else
    value = DenseElementsAttr::get(scalarType, APFloat(float(c)));
  Value scalar =
      b_.create<arith::ConstantOp>(loc_, cast<TypedAttr>(value)).getResult();
  return broadcast(scalar, x, {});
}

Value AdjointBuilder::scale(Value x, double c) {
  auto type = cast<RankedTensorType>(x.getType());
  auto scalarType = RankedTensorType::get({}, type.getElementType());
  Value scalar = b_.create<arith::ConstantOp>(
      loc_, DenseElementsAttr::get(scalarType, APFloat(float(c))));
  return mul(x, broadcast(scalar, x, {}));
}

Value AdjointBuilder::broadcast(Value x, Value like,
                                ArrayRef<int64_t> dims) {
  auto likeType = cast<RankedTensorType>(like.getType());
  auto xType = cast<RankedTensorType>(x.getType());
  return b_.create<BroadcastOp>(loc_, likeType.clone(xType.getElementType()), x,
                                like, b_.getDenseI64ArrayAttr(dims));
}

Value AdjointBuilder::reduceSum(Value x, ArrayRef<int64_t> dims) {
  return ReduceSumOp::createSum(b_, loc_, x, dims);
}

Value AdjointBuilder::dropoutMask(Value x, Value key, APFloat rate,
                                  uint64_t site) {
  return b_.create<DropoutMaskOp>(loc_, x.getType(), x, key,
                                  b_.getF64FloatAttr(rate.convertToDouble()),
                                  b_.getI64IntegerAttr(int64_t(site)));
}

Value AdjointBuilder::gather(Value table, Value indices) {
  auto tableType = cast<RankedTensorType>(table.getType());
  SmallVector<int64_t> shape(
      cast<RankedTensorType>(indices.getType()).getShape());
  shape.push_back(tableType.getDimSize(1));
  return b_.create<GatherOp>(loc_, tableType.clone(shape), table, indices);
}

Value AdjointBuilder::scatterAdd(Value updates, Value indices, Value table) {
  return b_.create<ScatterAddOp>(loc_, table.getType(), updates, indices);
}

Value AdjointBuilder::softmaxCrossEntropyGrad(
    Value logits, Value labels, Value g, bool ignoreNegative,
    const llvm::APFloat &labelSmoothing,
    std::optional<llvm::ArrayRef<float>> classWeights) {
  return b_.create<SoftmaxCrossEntropyGradOp>(
      loc_, logits.getType(), logits, labels, g,
      ignoreNegative ? b_.getUnitAttr() : UnitAttr(),
      b_.getF32FloatAttr(labelSmoothing.convertToFloat()),
      classWeights ? b_.getDenseF32ArrayAttr(*classWeights)
                   : DenseF32ArrayAttr());
}

Value AdjointBuilder::matmul(MatmulKind kind, Value lhs, Value rhs) {
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  SmallVector<int64_t> shape;
  switch (kind) {
  case MatmulKind::nt:
    shape.assign(l.getShape().begin(), l.getShape().end() - 1);
    shape.push_back(r.getDimSize(0));
    break;
  case MatmulKind::nn:
    shape.assign(l.getShape().begin(), l.getShape().end() - 1);
    shape.push_back(r.getDimSize(1));
    break;
  case MatmulKind::tn:
    shape = {l.getShape().back(), r.getShape().back()};
    break;
  }
  return b_.create<MatmulOp>(loc_, l.clone(shape), kind, lhs, rhs);
}

Value AdjointBuilder::slice(Value x, int64_t dim, int64_t offset,
                            int64_t size) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  return b_.create<SliceOp>(loc_, type.clone(shape), x, dim, offset, size);
}

Value AdjointBuilder::shift(Value x, Value init, Value lengths, bool reverse) {
  return b_.create<ShiftOp>(loc_, x.getType(), x, init, lengths, reverse);
}

Value AdjointBuilder::scan(Value lambda, Value b, Value init, Value lengths,
                           bool reverse) {
  return b_.create<ScanOp>(loc_, b.getType(), lambda, b, init, lengths,
                           reverse);
}

/// x [B, L, N] times the length mask of `kind`, broadcast over N.
static Value timesLengthMask(AdjointBuilder &ab, Value x, Value lengths,
                             MaskKind kind) {
  auto type = cast<RankedTensorType>(x.getType());
  auto maskType = RankedTensorType::get(
      {type.getDimSize(0), type.getDimSize(1)}, ab.builder().getF32Type());
  Value mask =
      ab.builder().create<LengthMaskOp>(ab.loc(), maskType, kind, lengths,
                                        /*labels=*/Value());
  if (isComplex(x))
    mask = ab.complex(mask, ab.zerosLike(mask));
  return ab.mul(x, ab.broadcast(mask, x, {0, 1}));
}

Value AdjointBuilder::lastStep(Value x, Value lengths) {
  auto type = cast<RankedTensorType>(x.getType());
  if (!lengths)
    return reduceSum(slice(x, 1, type.getDimSize(1) - 1, 1), {1});
  return reduceSum(timesLengthMask(*this, x, lengths, MaskKind::last), {1});
}

Value AdjointBuilder::firstStep(Value x, Value lengths) {
  if (lengths)
    x = timesLengthMask(*this, x, lengths, MaskKind::prefix);
  return reduceSum(slice(x, 1, 0, 1), {1});
}

// --- Structural rules -----------------------------------------------------------

namespace {

/// Helper for rules written in C++: a model whose `rule` fills operand
/// adjoints given the (non-null) adjoint of result 0.
template <typename ConcreteModel, typename OpT>
struct CppDerivative
    : public AutodiffOpInterface::ExternalModel<ConcreteModel, OpT> {
  LogicalResult buildAdjoints(Operation *operation, AdjointBuilder &ab,
                              ValueRange resultAdjoints,
                              SmallVectorImpl<Value> &operandAdjoints) const {
    operandAdjoints.assign(operation->getNumOperands(), Value());
    Value dy = resultAdjoints[0];
    if (!dy)
      return success();
    return ConcreteModel::rule(cast<OpT>(operation), ab, dy, operandAdjoints);
  }
};

struct MatmulDerivative : CppDerivative<MatmulDerivative, MatmulOp> {
  static LogicalResult rule(MatmulOp op, AdjointBuilder &ab, Value dy,
                            SmallVectorImpl<Value> &adj) {
    Value x = op.getLhs(), w = op.getRhs();
    switch (op.getKind()) {
    case MatmulKind::nt: // y = x W^T
      adj[0] = ab.matmul(MatmulKind::nn, dy, w);
      adj[1] = ab.matmul(MatmulKind::tn, dy, x);
      break;
    case MatmulKind::nn: // y = x W
      adj[0] = ab.matmul(MatmulKind::nt, dy, w);
      adj[1] = ab.matmul(MatmulKind::tn, x, dy);
      break;
    case MatmulKind::tn: // y = sum a^T b
      adj[0] = ab.matmul(MatmulKind::nt, w, dy);
      adj[1] = ab.matmul(MatmulKind::nn, x, dy);
      break;
    }
    return success();
  }
};

/// The dims of a rank-`rank` tensor that are not in `dims`.
SmallVector<int64_t> complement(ArrayRef<int64_t> dims, int64_t rank) {
  SmallVector<int64_t> rest;
  for (int64_t i = 0; i < rank; ++i)
    if (!llvm::is_contained(dims, i))
      rest.push_back(i);
  return rest;
}

struct BroadcastDerivative : CppDerivative<BroadcastDerivative, BroadcastOp> {
  static LogicalResult rule(BroadcastOp op, AdjointBuilder &ab, Value dy,
                            SmallVectorImpl<Value> &adj) {
    int64_t rank = cast<RankedTensorType>(dy.getType()).getRank();
    adj[0] = ab.reduceSum(dy, complement(op.getDims(), rank));
    return success(); // `like` only lends its shape
  }
};

struct ReduceSumDerivative : CppDerivative<ReduceSumDerivative, ReduceSumOp> {
  static LogicalResult rule(ReduceSumOp op, AdjointBuilder &ab, Value dy,
                            SmallVectorImpl<Value> &adj) {
    int64_t rank = op.getX().getType().getRank();
    adj[0] = ab.broadcast(dy, op.getX(), complement(op.getDims(), rank));
    return success();
  }
};

struct ConcatDerivative : CppDerivative<ConcatDerivative, ConcatOp> {
  static LogicalResult rule(ConcatOp op, AdjointBuilder &ab, Value dy,
                            SmallVectorImpl<Value> &adj) {
    int64_t dim = op.getDimAttr().getInt();
    int64_t offset = 0;
    for (auto [i, input] : llvm::enumerate(op.getInputs())) {
      int64_t size = cast<RankedTensorType>(input.getType()).getDimSize(dim);
      if (ShapedType::isDynamic(size))
        return op.emitOpError("cannot differentiate a concatenation along a "
                              "dynamic dim");
      adj[i] = ab.slice(dy, dim, offset, size);
      offset += size;
    }
    return success();
  }
};

struct SliceDerivative : CppDerivative<SliceDerivative, SliceOp> {
  static LogicalResult rule(SliceOp op, AdjointBuilder &ab, Value dy,
                            SmallVectorImpl<Value> &adj) {
    // Zeros around dy, built by slicing a zero tensor of x's shape.
    int64_t dim = op.getDimAttr().getInt();
    int64_t offset = op.getOffsetAttr().getInt();
    int64_t size = op.getSizeAttr().getInt();
    int64_t total = op.getX().getType().getDimSize(dim);
    Value zeros = ab.zerosLike(op.getX());
    SmallVector<Value> parts;
    if (offset > 0)
      parts.push_back(ab.slice(zeros, dim, 0, offset));
    parts.push_back(dy);
    if (offset + size < total)
      parts.push_back(ab.slice(zeros, dim, offset + size,
                               total - offset - size));
    adj[0] = parts.size() == 1
                 ? dy
                 : ab.builder()
                       .create<ConcatOp>(ab.loc(), op.getX().getType(), parts,
                                         dim)
                       .getResult();
    return success();
  }
};

struct ViewDerivative : CppDerivative<ViewDerivative, ViewOp> {
  static LogicalResult rule(ViewOp op, AdjointBuilder &ab, Value dy,
                            SmallVectorImpl<Value> &adj) {
    // A view moves no value: each float's adjoint goes back to its place
    // (a complex adjoint is dL/dRe + i dL/dIm, the floats in order).
    adj[0] = ab.builder().create<ViewOp>(ab.loc(), op.getX().getType(), dy);
    return success();
  }
};

struct ShiftDerivative : CppDerivative<ShiftDerivative, ShiftOp> {
  static LogicalResult rule(ShiftOp op, AdjointBuilder &ab, Value dy,
                            SmallVectorImpl<Value> &adj) {
    // Forward: y_t = x_{t-1}, y_0 = init. Its transpose moves dy back one
    // step (x_t feeds y_{t+1}) and hands dy_0 to init (nothing from an
    // empty sequence, whose y_0 is padding); reverse mirrors it.
    Value lengths = op.getLengths();
    adj[0] = ab.shift(dy, Value(), lengths, !op.getReverse());
    if (op.getInit())
      adj[1] = op.getReverse() ? ab.lastStep(dy, lengths)
                               : ab.firstStep(dy, lengths);
    return success();
  }
};

struct ScanDerivative : CppDerivative<ScanDerivative, ScanOp> {
  static LogicalResult rule(ScanOp op, AdjointBuilder &ab, Value dx,
                            SmallVectorImpl<Value> &adj) {
    Value lambda = op.getLambda(), init = op.getInit();
    Value lengths = op.getLengths();
    bool reverse = op.getReverse();
    bool constant = op.getLambda().getType().getRank() == 1;
    // x_t = l_t x_{t-1} + b_t, so g_t = dx_t + conj(l_{t+1}) g_{t+1}: a scan
    // the other way whose multiplier at t is the one that carried x_t on.
    Value carried =
        constant ? lambda : ab.shift(lambda, Value(), lengths, !reverse);
    Value g = ab.scan(ab.conj(carried), dx, Value(), lengths, !reverse);
    adj[1] = g; // b
    // dl_t = conj(x_{t-1}) g_t, summed over time and batch if l is constant.
    Value previous = ab.shift(op.getResult(), init, lengths, reverse);
    Value dlambda = ab.mul(ab.conj(previous), g);
    adj[0] = constant ? ab.reduceSum(dlambda, {0, 1}) : dlambda;
    if (init) {
      // init feeds the first step (the last real one in reverse).
      Value first = reverse ? ab.lastStep(g, lengths)
                            : ab.reduceSum(ab.slice(g, 1, 0, 1), {1});
      Value lambdaFirst =
          constant ? ab.broadcast(lambda, first, {1})
          : reverse ? ab.lastStep(lambda, lengths)
                    : ab.reduceSum(ab.slice(lambda, 1, 0, 1), {1});
      adj[2] = ab.mul(ab.conj(lambdaFirst), first);
    }
    return success();
  }
};

/// Ops whose derivative lruc does not take (second derivatives).
template <typename OpT>
struct NotDifferentiable
    : public AutodiffOpInterface::ExternalModel<NotDifferentiable<OpT>, OpT> {
  LogicalResult buildAdjoints(Operation *operation, AdjointBuilder &,
                              ValueRange, SmallVectorImpl<Value> &) const {
    return operation->emitOpError("has no derivative (lruc takes first "
                                  "derivatives only)");
  }
};

} // namespace

#include "lru/LRUDerivatives.cpp.inc"

void registerAutodiffInterfaces(MLIRContext &context) {
  registerGeneratedDerivatives(context);
  MatmulOp::attachInterface<MatmulDerivative>(context);
  BroadcastOp::attachInterface<BroadcastDerivative>(context);
  ReduceSumOp::attachInterface<ReduceSumDerivative>(context);
  ConcatOp::attachInterface<ConcatDerivative>(context);
  SliceOp::attachInterface<SliceDerivative>(context);
  ViewOp::attachInterface<ViewDerivative>(context);
  ShiftOp::attachInterface<ShiftDerivative>(context);
  ScanOp::attachInterface<ScanDerivative>(context);
  GeluGradOp::attachInterface<NotDifferentiable<GeluGradOp>>(context);
  SoftmaxCrossEntropyGradOp::attachInterface<
      NotDifferentiable<SoftmaxCrossEntropyGradOp>>(context);
}

} // namespace lru
