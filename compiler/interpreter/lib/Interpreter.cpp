//===- Interpreter.cpp - The fp64 reference interpreter -------------------===//
//
// One function, one block, ops in order: each op's operands are looked up,
// its result computed with plain loops over row-major tensors, checked
// against the op's result type and stored. docs/primitives.md and each op's
// description in LRUPrimitiveOps.td give the semantics implemented here.
//
// Types are verified, but `?` dims are not: every size that comes from an
// argument is checked where an op relies on it, and every result against its
// type, so inconsistent inputs are an error at the op, never a bad read.
//
//===----------------------------------------------------------------------===//

#include "lruc/Interpreter.h"

#include "lruc/core/Init.h"
#include "lruc/core/Random.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <complex>
#include <limits>
#include <string_view>

using namespace mlir;

namespace lruc {

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

bool Tensor::isConsistent() const {
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return false;
  size_t n = size_t(numElements());
  switch (kind) {
  case Kind::Real:
    return re.size() == n;
  case Kind::Complex:
    return re.size() == n && im.size() == n;
  case Kind::Int:
    return ints.size() == n;
  }
  return false;
}

Tensor Tensor::zeros(std::vector<int64_t> shape, Kind kind) {
  Tensor t;
  t.shape = std::move(shape);
  t.kind = kind;
  size_t n = size_t(t.numElements());
  if (kind == Kind::Int)
    t.ints.assign(n, 0);
  else
    t.re.assign(n, 0.0);
  if (kind == Kind::Complex)
    t.im.assign(n, 0.0);
  return t;
}

Tensor Tensor::real(std::vector<int64_t> shape, std::vector<double> values) {
  Tensor t;
  t.shape = std::move(shape);
  t.re = std::move(values);
  return t;
}

Tensor Tensor::complex(std::vector<int64_t> shape, std::vector<double> re,
                       std::vector<double> im) {
  Tensor t;
  t.shape = std::move(shape);
  t.kind = Kind::Complex;
  t.re = std::move(re);
  t.im = std::move(im);
  return t;
}

Tensor Tensor::integers(std::vector<int64_t> shape,
                        std::vector<int64_t> values) {
  Tensor t;
  t.shape = std::move(shape);
  t.kind = Kind::Int;
  t.ints = std::move(values);
  return t;
}

namespace {

using Kind = Tensor::Kind;
using Complex = std::complex<double>;
using Shape = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Helpers on shapes and elements
//===----------------------------------------------------------------------===//

int64_t product(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// Row-major strides of `shape`.
Shape stridesOf(const Shape &shape) {
  Shape strides(shape.size(), 1);
  for (size_t i = shape.size(); i > 1; --i)
    strides[i - 2] = strides[i - 1] * shape[i - 1];
  return strides;
}

std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    text += (i ? ", " : "") + std::to_string(d);
  return text + "]";
}

/// The multi-index of flat position `flat` in `shape`, as "[b, t]".
std::string positionString(const Shape &shape, int64_t flat) {
  Shape index(shape.size());
  for (size_t i = shape.size(); i > 0; --i) {
    index[i - 1] = flat % shape[i - 1];
    flat /= shape[i - 1];
  }
  return shapeString(index);
}

const char *kindName(Kind kind) {
  switch (kind) {
  case Kind::Real:
    return "real";
  case Kind::Complex:
    return "complex";
  case Kind::Int:
    return "integer";
  }
  return "?";
}

/// The tensor kind that holds elements of `element`, if any.
std::optional<Kind> kindOf(Type element) {
  if (isa<Float32Type, Float64Type>(element))
    return Kind::Real;
  if (auto complex = dyn_cast<ComplexType>(element))
    if (isa<Float32Type, Float64Type>(complex.getElementType()))
      return Kind::Complex;
  if (isa<IntegerType>(element))
    return Kind::Int;
  return std::nullopt;
}

/// Whether `t` has `type`'s element kind, rank and static dims.
bool fits(const Tensor &t, RankedTensorType type) {
  if (kindOf(type.getElementType()) != t.kind ||
      int64_t(t.shape.size()) != type.getRank())
    return false;
  for (auto [size, dim] : llvm::zip(t.shape, type.getShape()))
    if (!ShapedType::isDynamic(dim) && size != dim)
      return false;
  return true;
}

std::string describe(const Tensor &t) {
  return std::string(t.kind == Kind::Int ? "an " : "a ") + kindName(t.kind) +
         " tensor of shape " + shapeString(t.shape);
}

/// dst[di] = src[si], for tensors of one kind.
void copyElement(const Tensor &src, int64_t si, Tensor &dst, int64_t di) {
  if (src.kind == Kind::Int) {
    dst.ints[di] = src.ints[si];
    return;
  }
  dst.re[di] = src.re[si];
  if (src.kind == Kind::Complex)
    dst.im[di] = src.im[si];
}

/// Element i of a real or complex tensor; a real one reads as x + 0i, with
/// which complex products and sums are exactly the real ones.
Complex complexAt(const Tensor &t, int64_t i) {
  return {t.re[i], t.kind == Kind::Complex ? t.im[i] : 0.0};
}

void setComplex(Tensor &t, int64_t i, Complex v) {
  t.re[i] = v.real();
  if (t.kind == Kind::Complex)
    t.im[i] = v.imag();
}

/// A real tensor's elements mapped by `f`.
template <typename Fn> Tensor mapReal(const Tensor &x, Fn f) {
  Tensor y = x;
  for (double &v : y.re)
    v = f(v);
  return y;
}

/// A real or complex tensor's elements mapped by `realFn` or `complexFn`.
template <typename RealFn, typename ComplexFn>
Tensor mapEither(const Tensor &x, RealFn realFn, ComplexFn complexFn) {
  if (x.kind != Kind::Complex)
    return mapReal(x, realFn);
  Tensor y = x;
  for (int64_t i = 0, n = x.numElements(); i < n; ++i)
    setComplex(y, i, complexFn(complexAt(x, i)));
  return y;
}

constexpr double kPi = 3.14159265358979323846;
constexpr double kSqrt2OverPi = 0.79788456080286535588; // sqrt(2/pi)
constexpr double kTanhCoefficient = 0.044715;

double gelu(double x, bool approximate) {
  if (approximate)
    return 0.5 * x *
           (1 + std::tanh(kSqrt2OverPi * (x + kTanhCoefficient * x * x * x)));
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

double geluGrad(double x, bool approximate) {
  if (approximate) {
    double t = std::tanh(kSqrt2OverPi * (x + kTanhCoefficient * x * x * x));
    double du = kSqrt2OverPi * (1 + 3 * kTanhCoefficient * x * x);
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du;
  }
  // Φ(x) + x φ(x)
  double density = std::exp(-0.5 * x * x) / std::sqrt(2 * kPi);
  return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * density;
}

/// log(1 + e^x) without overflow for large x.
double softplus(double x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

core::InitSpec initSpecOf(lru::ParamOp op) {
  auto number = [&](StringRef key, double fallback) {
    return op.getArgNumber(key).value_or(fallback);
  };
  core::InitSpec spec;
  switch (op.getInit()) {
  case lru::InitKind::zeros:
    spec.kind = core::InitKind::Zeros;
    break;
  case lru::InitKind::ones:
    spec.kind = core::InitKind::Ones;
    break;
  case lru::InitKind::normal:
    spec.kind = core::InitKind::Normal;
    spec.std = number("std", spec.std);
    break;
  case lru::InitKind::uniform:
    spec.kind = core::InitKind::Uniform;
    spec.low = number("low", spec.low);
    spec.high = number("high", spec.high);
    break;
  case lru::InitKind::lru_nu:
    spec.kind = core::InitKind::LruNu;
    spec.rMin = number("r_min", spec.rMin);
    spec.rMax = number("r_max", spec.rMax);
    break;
  case lru::InitKind::lru_theta:
    spec.kind = core::InitKind::LruTheta;
    spec.maxPhase = number("max_phase", spec.maxPhase);
    break;
  case lru::InitKind::lru_gamma:
    spec.kind = core::InitKind::LruGamma;
    spec.nu = op.getArgString("nu").str();
    spec.theta = op.getArgString("theta").str();
    break;
  }
  return spec;
}

//===----------------------------------------------------------------------===//
// The interpreter
//===----------------------------------------------------------------------===//

class Interpreter {
public:
  explicit Interpreter(const ParameterStore &params) : params_(params) {}

  FailureOr<std::vector<Tensor>> run(func::FuncOp func,
                                     llvm::ArrayRef<Tensor> args);

private:
  const Tensor &value(Value v) const { return values_.find(v)->second; }

  /// Computes `op`'s single result.
  FailureOr<Tensor> evaluate(Operation *op);

  // Elementwise.
  FailureOr<Tensor> binary(Operation *op, double (*realFn)(double, double),
                           Complex (*complexFn)(Complex, Complex));
  FailureOr<Tensor> evaluate(lru::ComplexOp op);

  // Shapes.
  FailureOr<Tensor> evaluate(lru::BroadcastOp op);
  FailureOr<Tensor> evaluate(lru::ReduceSumOp op);
  FailureOr<Tensor> evaluate(lru::ConcatOp op);
  FailureOr<Tensor> evaluate(lru::SliceOp op);
  FailureOr<Tensor> evaluate(lru::ViewOp op);

  // Sequences.
  FailureOr<std::vector<int64_t>> sequenceLengths(Operation *op, Value lengths,
                                                  int64_t batch, int64_t steps);
  LogicalResult checkInit(Operation *op, Value init, const Tensor &sequence);
  FailureOr<Tensor> evaluate(lru::ShiftOp op);
  FailureOr<Tensor> evaluate(lru::ScanOp op);
  FailureOr<Tensor> evaluate(lru::LengthMaskOp op);
  FailureOr<Tensor> evaluate(lru::ZeroPaddingOp op);
  FailureOr<Tensor> evaluate(lru::LabelWeightOp op);

  // Dense algebra and lookups.
  FailureOr<Tensor> evaluate(lru::MatmulOp op);
  FailureOr<Tensor> evaluate(lru::GatherOp op);
  FailureOr<Tensor> evaluate(lru::ScatterAddOp op);

  // Losses, randomness, values.
  FailureOr<Tensor> evaluate(lru::SoftmaxCrossEntropyOp op);
  FailureOr<Tensor> evaluate(lru::SoftmaxCrossEntropyGradOp op);
  FailureOr<Tensor> evaluate(lru::DropoutMaskOp op);
  FailureOr<Tensor> evaluate(lru::ParamOp op);
  FailureOr<Tensor> evaluate(arith::ConstantOp op);

  const ParameterStore &params_;
  llvm::DenseMap<Value, Tensor> values_;
};

FailureOr<std::vector<Tensor>> Interpreter::run(func::FuncOp func,
                                                llvm::ArrayRef<Tensor> args) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return func.emitOpError("must have a body of one block to be interpreted");
  if (args.size() != func.getNumArguments())
    return func.emitOpError("takes ")
           << func.getNumArguments() << " arguments, got " << args.size();
  Block &body = func.getBody().front();
  for (auto [i, arg, t] : llvm::enumerate(body.getArguments(), args)) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !kindOf(type.getElementType()))
      return func.emitOpError("argument #")
             << i << " has a type the interpreter does not support: "
             << arg.getType();
    if (!fits(t, type) || !t.isConsistent()) {
      InFlightDiagnostic diag = func.emitOpError("argument #") << i;
      if (auto tag = func.getArgAttrOfType<StringAttr>(i, "lru.input"))
        diag << " ('" << tag.getValue() << "')";
      diag << " expects " << type << ", got " << describe(t);
      if (!t.isConsistent())
        diag << " whose values do not match its shape";
      return diag;
    }
    values_[arg] = t;
  }

  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Tensor> results;
      for (Value v : ret.getOperands())
        results.push_back(value(v));
      return results;
    }
    if (op.getNumResults() != 1)
      return op.emitOpError("is not supported by the reference interpreter");
    FailureOr<Tensor> result = evaluate(&op);
    if (failed(result))
      return failure();
    auto type = dyn_cast<RankedTensorType>(op.getResult(0).getType());
    if (!type || !fits(*result, type))
      return op.emitOpError("computed ")
             << describe(*result) << ", which does not fit its type "
             << op.getResult(0).getType();
    values_[op.getResult(0)] = std::move(*result);
  }
  return func.emitOpError("has no func.return");
}

FailureOr<Tensor> Interpreter::evaluate(Operation *op) {
  auto unary = [&](auto f) -> FailureOr<Tensor> {
    return mapReal(value(op->getOperand(0)), f);
  };
  return llvm::TypeSwitch<Operation *, FailureOr<Tensor>>(op)
      // Elementwise, real or complex.
      .Case([&](lru::NegOp o) {
        return mapEither(
            value(o.getX()), [](double x) { return -x; },
            [](Complex x) { return -x; });
      })
      .Case([&](lru::ExpOp o) {
        return mapEither(
            value(o.getX()), [](double x) { return std::exp(x); },
            [](Complex x) { return std::exp(x); });
      })
      .Case([&](lru::StopGradientOp o) -> FailureOr<Tensor> {
        return value(o.getX()); // the derivative passes read it, not this
      })
      .Case([&](lru::ConjOp o) {
        return mapEither(
            value(o.getX()), [](double x) { return x; },
            [](Complex x) { return std::conj(x); });
      })
      // Elementwise, real.
      .Case([&](lru::LogOp) {
        return unary([](double x) { return std::log(x); });
      })
      .Case([&](lru::SigmoidOp) {
        return unary([](double x) { return 1 / (1 + std::exp(-x)); });
      })
      .Case([&](lru::SoftplusOp) { return unary(softplus); })
      .Case([&](lru::RsqrtOp) {
        return unary([](double x) { return 1 / std::sqrt(x); });
      })
      .Case([&](lru::SqrtOp) {
        return unary([](double x) { return std::sqrt(x); });
      })
      .Case([&](lru::StepOp) {
        return unary([](double x) { return x > 0 ? 1.0 : 0.0; });
      })
      .Case([&](lru::NotNanOp) {
        return unary([](double x) { return std::isnan(x) ? 0.0 : 1.0; });
      })
      .Case([&](lru::NanToZeroOp) {
        return unary([](double x) { return std::isnan(x) ? 0.0 : x; });
      })
      .Case([&](lru::ReluOp) {
        return unary([](double x) { return x > 0 ? x : 0.0; });
      })
      .Case([&](lru::TanhOp) {
        return unary([](double x) { return std::tanh(x); });
      })
      .Case([&](lru::GeluOp o) {
        bool approximate = o.getApproximate();
        return unary([=](double x) { return gelu(x, approximate); });
      })
      .Case([&](lru::GeluGradOp o) {
        bool approximate = o.getApproximate();
        return unary([=](double x) { return geluGrad(x, approximate); });
      })
      .Case([&](lru::RealOp o) {
        const Tensor &x = value(o.getX());
        return Tensor::real(x.shape, x.re);
      })
      .Case([&](lru::ImagOp o) {
        const Tensor &x = value(o.getX());
        return Tensor::real(x.shape, x.im);
      })
      // Binary.
      .Case([&](lru::AddOp) {
        return binary(
            op, [](double a, double b) { return a + b; },
            [](Complex a, Complex b) { return a + b; });
      })
      .Case([&](lru::SubOp) {
        return binary(
            op, [](double a, double b) { return a - b; },
            [](Complex a, Complex b) { return a - b; });
      })
      .Case([&](lru::MulOp) {
        return binary(
            op, [](double a, double b) { return a * b; },
            [](Complex a, Complex b) { return a * b; });
      })
      .Case([&](lru::DivOp) {
        return binary(
            op, [](double a, double b) { return a / b; },
            [](Complex a, Complex b) { return a / b; });
      })
      .Case([&](lru::MaskedOp) {
        return binary(
            op, [](double x, double mask) { return mask != 0 ? x : 0.0; },
            nullptr);
      })
      .Case([&](lru::MaxOp) {
        return binary(
            op, [](double a, double b) { return std::max(a, b); }, nullptr);
      })
      .Case<lru::ComplexOp, lru::BroadcastOp, lru::ReduceSumOp, lru::ConcatOp,
            lru::SliceOp, lru::ViewOp, lru::ShiftOp, lru::ScanOp,
            lru::LengthMaskOp, lru::ZeroPaddingOp, lru::LabelWeightOp,
            lru::MatmulOp, lru::GatherOp, lru::ScatterAddOp,
            lru::SoftmaxCrossEntropyOp, lru::SoftmaxCrossEntropyGradOp,
            lru::DropoutMaskOp, lru::ParamOp, arith::ConstantOp>(
          [&](auto o) { return evaluate(o); })
      .Default([](Operation *o) {
        return o->emitOpError("is not supported by the reference interpreter");
      });
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

FailureOr<Tensor> Interpreter::binary(Operation *op,
                                      double (*realFn)(double, double),
                                      Complex (*complexFn)(Complex, Complex)) {
  const Tensor &lhs = value(op->getOperand(0));
  const Tensor &rhs = value(op->getOperand(1));
  if (lhs.shape != rhs.shape)
    return op->emitOpError("operands have shapes ")
           << shapeString(lhs.shape) << " and " << shapeString(rhs.shape);
  Tensor y = lhs;
  for (int64_t i = 0, n = lhs.numElements(); i < n; ++i) {
    if (lhs.kind == Kind::Complex)
      setComplex(y, i, complexFn(complexAt(lhs, i), complexAt(rhs, i)));
    else
      y.re[i] = realFn(lhs.re[i], rhs.re[i]);
  }
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::ComplexOp op) {
  const Tensor &re = value(op.getRe()), &im = value(op.getIm());
  if (re.shape != im.shape)
    return op.emitOpError("operands have shapes ")
           << shapeString(re.shape) << " and " << shapeString(im.shape);
  return Tensor::complex(re.shape, re.re, im.re);
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

FailureOr<Tensor> Interpreter::evaluate(lru::BroadcastOp op) {
  const Tensor &x = value(op.getX());
  const Shape &shape = value(op.getLike()).shape;
  llvm::ArrayRef<int64_t> dims = op.getDims();
  for (auto [i, d] : llvm::enumerate(dims))
    if (x.shape[i] != shape[d])
      return op.emitOpError("dim ")
             << i << " of x has size " << x.shape[i] << " but dim " << d
             << " of the result has size " << shape[d];
  Tensor y = Tensor::zeros(shape, x.kind);
  Shape outStrides = stridesOf(shape), xStrides = stridesOf(x.shape);
  for (int64_t i = 0, n = y.numElements(); i < n; ++i) {
    int64_t xi = 0;
    for (auto [k, d] : llvm::enumerate(dims))
      xi += (i / outStrides[d]) % shape[d] * xStrides[k];
    copyElement(x, xi, y, i);
  }
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::ReduceSumOp op) {
  const Tensor &x = value(op.getX());
  llvm::ArrayRef<int64_t> dims = op.getDims();
  Shape kept, shape;
  for (int64_t d = 0; d < int64_t(x.shape.size()); ++d)
    if (!llvm::is_contained(dims, d)) {
      kept.push_back(d);
      shape.push_back(x.shape[d]);
    }
  Tensor y = Tensor::zeros(shape, x.kind);
  Shape outStrides = stridesOf(shape), xStrides = stridesOf(x.shape);
  for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
    int64_t yi = 0;
    for (auto [k, d] : llvm::enumerate(kept))
      yi += (i / xStrides[d]) % x.shape[d] * outStrides[k];
    setComplex(y, yi, complexAt(y, yi) + complexAt(x, i));
  }
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::ConcatOp op) {
  int64_t dim = op.getDimAttr().getInt();
  const Tensor &first = value(op.getInputs().front());
  Shape shape = first.shape;
  shape[dim] = 0;
  for (Value input : op.getInputs()) {
    const Tensor &t = value(input);
    for (size_t d = 0; d < shape.size(); ++d)
      if (int64_t(d) != dim && t.shape[d] != first.shape[d])
        return op.emitOpError("inputs of shapes ")
               << shapeString(first.shape) << " and " << shapeString(t.shape)
               << " differ outside dim " << dim;
    shape[dim] += t.shape[dim];
  }
  Tensor y = Tensor::zeros(shape, first.kind);
  int64_t outer = product(llvm::ArrayRef(shape).take_front(dim));
  int64_t inner = product(llvm::ArrayRef(shape).drop_front(dim + 1));
  for (int64_t o = 0; o < outer; ++o) {
    int64_t offset = 0; // along dim
    for (Value input : op.getInputs()) {
      const Tensor &t = value(input);
      int64_t chunk = t.shape[dim] * inner;
      for (int64_t j = 0; j < chunk; ++j)
        copyElement(t, o * chunk + j, y, (o * shape[dim] + offset) * inner + j);
      offset += t.shape[dim];
    }
  }
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::SliceOp op) {
  const Tensor &x = value(op.getX());
  int64_t dim = op.getDimAttr().getInt();
  int64_t offset = op.getOffsetAttr().getInt();
  int64_t size = op.getSizeAttr().getInt();
  Shape shape = x.shape;
  shape[dim] = size;
  Tensor y = Tensor::zeros(shape, x.kind);
  int64_t outer = product(llvm::ArrayRef(shape).take_front(dim));
  int64_t inner = product(llvm::ArrayRef(shape).drop_front(dim + 1));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < size * inner; ++j)
      copyElement(x, (o * x.shape[dim] + offset) * inner + j, y,
                  o * size * inner + j);
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::ViewOp op) {
  const Tensor &x = value(op.getX());
  auto type = op.getType();
  // The leading dynamic dims are x's; the rest are the result type's.
  Shape shape(type.getShape());
  for (int64_t i = 0; i < type.getRank() && type.isDynamicDim(i); ++i)
    shape[i] = x.shape[i];
  std::vector<double> floats;
  floats.reserve(size_t(x.numElements()) *
                 (x.kind == Tensor::Kind::Complex ? 2 : 1));
  for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
    floats.push_back(x.re[i]);
    if (x.kind == Tensor::Kind::Complex)
      floats.push_back(x.im[i]);
  }
  bool complex = isa<ComplexType>(type.getElementType());
  Tensor y = Tensor::zeros(shape, complex ? Tensor::Kind::Complex
                                          : Tensor::Kind::Real);
  if (int64_t(floats.size()) != y.numElements() * (complex ? 2 : 1))
    return op.emitOpError("views ")
           << floats.size() << " floats as " << shapeString(shape);
  for (int64_t i = 0, n = y.numElements(); i < n; ++i) {
    y.re[i] = floats[complex ? 2 * i : i];
    if (complex)
      y.im[i] = floats[2 * i + 1];
  }
  return y;
}

//===----------------------------------------------------------------------===//
// Sequences
//===----------------------------------------------------------------------===//

/// Each sequence's real length: `lengths`, checked to be [batch] and within
/// [0, steps], or `steps` for every sequence without it.
FailureOr<std::vector<int64_t>> Interpreter::sequenceLengths(Operation *op,
                                                             Value lengths,
                                                             int64_t batch,
                                                             int64_t steps) {
  if (!lengths)
    return std::vector<int64_t>(batch, steps);
  const Tensor &t = value(lengths);
  if (t.shape != Shape{batch})
    return op->emitOpError("expects lengths of shape [")
           << batch << "], got " << shapeString(t.shape);
  for (auto [b, length] : llvm::enumerate(t.ints))
    if (length < 0 || length > steps)
      return op->emitOpError("length ") << length << " of sequence " << b
                                        << " is outside [0, " << steps << "]";
  return t.ints;
}

/// `init`, when present, is [B, N] of `sequence` [B, L, N].
LogicalResult Interpreter::checkInit(Operation *op, Value init,
                                     const Tensor &sequence) {
  if (!init)
    return success();
  Shape expected = {sequence.shape[0], sequence.shape[2]};
  if (value(init).shape != expected)
    return op->emitOpError("expects init of shape ")
           << shapeString(expected) << ", got "
           << shapeString(value(init).shape);
  return success();
}

FailureOr<Tensor> Interpreter::evaluate(lru::ShiftOp op) {
  const Tensor &x = value(op.getX());
  int64_t batch = x.shape[0], steps = x.shape[1], width = x.shape[2];
  auto lengths = sequenceLengths(op, op.getLengths(), batch, steps);
  if (failed(lengths) || failed(checkInit(op, op.getInit(), x)))
    return failure();
  Tensor init = op.getInit() ? value(op.getInit())
                             : Tensor::zeros({batch, width}, x.kind);
  Tensor y = Tensor::zeros(x.shape, x.kind);
  bool reverse = op.getReverse();
  for (int64_t b = 0; b < batch; ++b) {
    int64_t length = (*lengths)[b];
    for (int64_t t = 0; t < length; ++t) {
      // y_t = x_{t-1} (x_{t+1} reversed); the first step reads init.
      bool first = reverse ? t == length - 1 : t == 0;
      int64_t source = reverse ? t + 1 : t - 1;
      for (int64_t n = 0; n < width; ++n) {
        int64_t yi = (b * steps + t) * width + n;
        if (first)
          copyElement(init, b * width + n, y, yi);
        else
          copyElement(x, (b * steps + source) * width + n, y, yi);
      }
    }
  }
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::ScanOp op) {
  const Tensor &b = value(op.getB());
  const Tensor &lambda = value(op.getLambda());
  int64_t batch = b.shape[0], steps = b.shape[1], width = b.shape[2];
  bool constant = lambda.shape == Shape{width};
  if (!constant && lambda.shape != b.shape)
    return op.emitOpError("expects lambda of shape [")
           << width << "] or " << shapeString(b.shape) << ", got "
           << shapeString(lambda.shape);
  auto lengths = sequenceLengths(op, op.getLengths(), batch, steps);
  if (failed(lengths) || failed(checkInit(op, op.getInit(), b)))
    return failure();
  Tensor y = Tensor::zeros(b.shape, b.kind);
  bool reverse = op.getReverse();
  for (int64_t s = 0; s < batch; ++s) {
    int64_t length = (*lengths)[s];
    for (int64_t n = 0; n < width; ++n) {
      Complex state =
          op.getInit() ? complexAt(value(op.getInit()), s * width + n) : 0.0;
      // Real steps only: from 0 up, or from the sequence's real end down.
      for (int64_t k = 0; k < length; ++k) {
        int64_t t = reverse ? length - 1 - k : k;
        int64_t i = (s * steps + t) * width + n;
        Complex multiplier = complexAt(lambda, constant ? n : i);
        state = multiplier * state + complexAt(b, i);
        setComplex(y, i, state);
      }
    }
  }
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::LengthMaskOp op) {
  const Tensor &lengthsTensor = value(op.getLengths());
  int64_t batch = lengthsTensor.numElements();
  int64_t steps = cast<RankedTensorType>(op.getType()).getDimSize(1);
  auto lengths = sequenceLengths(op, op.getLengths(), batch, steps);
  if (failed(lengths))
    return failure();
  Tensor y = Tensor::zeros({batch, steps}, Kind::Real);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < steps; ++t) {
      int64_t length = (*lengths)[b];
      bool on =
          op.getKind() == lru::MaskKind::prefix ? t < length : t == length - 1;
      if (op.getLabels())
        on = on && value(op.getLabels()).ints[b * steps + t] >= 0;
      y.re[b * steps + t] = on ? 1.0 : 0.0;
    }
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::ZeroPaddingOp op) {
  const Tensor &x = value(op.getX());
  int64_t batch = x.shape[0], steps = x.shape[1];
  auto lengths = sequenceLengths(op, op.getLengths(), batch, steps);
  if (failed(lengths))
    return failure();
  Tensor y = x;
  int64_t width = batch * steps == 0 ? 0 : x.numElements() / (batch * steps);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = (*lengths)[b]; t < steps; ++t)
      std::fill_n(y.ints.begin() + (b * steps + t) * width, width, 0);
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::LabelWeightOp op) {
  const Tensor &labels = value(op.getLabels());
  ArrayRef<float> weights = op.getWeights();
  Tensor y = Tensor::zeros(labels.shape, Kind::Real);
  for (int64_t i = 0, n = labels.numElements(); i < n; ++i) {
    int64_t label = labels.ints[i];
    y.re[i] = label >= 0 && label < int64_t(weights.size())
                  ? double(weights[size_t(label)])
                  : 0.0;
  }
  return y;
}

//===----------------------------------------------------------------------===//
// Dense algebra and lookups
//===----------------------------------------------------------------------===//

FailureOr<Tensor> Interpreter::evaluate(lru::MatmulOp op) {
  const Tensor &lhs = value(op.getLhs()), &rhs = value(op.getRhs());
  auto mismatch = [&]() {
    return op.emitOpError("cannot multiply shapes ")
           << shapeString(lhs.shape) << " and " << shapeString(rhs.shape);
  };
  int64_t last = lhs.shape.back();
  Shape leading(lhs.shape.begin(), lhs.shape.end() - 1);
  int64_t rows = product(leading);
  switch (op.getKind()) {
  case lru::MatmulKind::nt: { // [M, K] x [N, K] -> [M, N]
    int64_t n = rhs.shape[0], k = rhs.shape[1];
    if (last != k)
      return mismatch();
    Shape shape = leading;
    shape.push_back(n);
    Tensor y = Tensor::zeros(shape, Kind::Real);
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t c = 0; c < k; ++c)
          sum += lhs.re[m * k + c] * rhs.re[j * k + c];
        y.re[m * n + j] = sum;
      }
    return y;
  }
  case lru::MatmulKind::nn: { // [M, N] x [N, K] -> [M, K]
    int64_t n = rhs.shape[0], k = rhs.shape[1];
    if (last != n)
      return mismatch();
    Shape shape = leading;
    shape.push_back(k);
    Tensor y = Tensor::zeros(shape, Kind::Real);
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t j = 0; j < k; ++j) {
        double sum = 0;
        for (int64_t c = 0; c < n; ++c)
          sum += lhs.re[m * n + c] * rhs.re[c * k + j];
        y.re[m * k + j] = sum;
      }
    return y;
  }
  case lru::MatmulKind::tn: { // sum over M of [M, N]^T [M, K] -> [N, K]
    if (!llvm::equal(leading, llvm::ArrayRef(rhs.shape).drop_back()))
      return mismatch();
    int64_t n = last, k = rhs.shape.back();
    Tensor y = Tensor::zeros({n, k}, Kind::Real);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) {
        double sum = 0;
        for (int64_t m = 0; m < rows; ++m)
          sum += lhs.re[m * n + i] * rhs.re[m * k + j];
        y.re[i * k + j] = sum;
      }
    return y;
  }
  }
  return op.emitOpError("has an unknown kind");
}

FailureOr<Tensor> Interpreter::evaluate(lru::GatherOp op) {
  const Tensor &table = value(op.getTable());
  const Tensor &indices = value(op.getIndices());
  int64_t rows = table.shape[0], width = table.shape[1];
  Shape shape = indices.shape;
  shape.push_back(width);
  Tensor y = Tensor::zeros(shape, Kind::Real);
  for (int64_t p = 0, n = indices.numElements(); p < n; ++p) {
    int64_t row = indices.ints[p];
    if (row < 0 || row >= rows)
      return op.emitOpError("index ")
             << row << " at " << positionString(indices.shape, p)
             << " is outside the table's rows [0, " << rows << ")";
    for (int64_t h = 0; h < width; ++h)
      y.re[p * width + h] = table.re[row * width + h];
  }
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::ScatterAddOp op) {
  const Tensor &updates = value(op.getUpdates());
  const Tensor &indices = value(op.getIndices());
  int64_t rows = cast<RankedTensorType>(op.getType()).getDimSize(0);
  int64_t width = updates.shape.back();
  if (!llvm::equal(indices.shape, llvm::ArrayRef(updates.shape).drop_back()))
    return op.emitOpError("updates of shape ")
           << shapeString(updates.shape) << " do not match indices of shape "
           << shapeString(indices.shape);
  Tensor y = Tensor::zeros({rows, width}, Kind::Real);
  for (int64_t p = 0, n = indices.numElements(); p < n; ++p) {
    int64_t row = indices.ints[p];
    if (row < 0 || row >= rows)
      return op.emitOpError("index ")
             << row << " at " << positionString(indices.shape, p)
             << " is outside the result's rows [0, " << rows << ")";
    for (int64_t h = 0; h < width; ++h)
      y.re[row * width + h] += updates.re[p * width + h];
  }
  return y;
}

//===----------------------------------------------------------------------===//
// Losses, randomness, values
//===----------------------------------------------------------------------===//

/// The labels of `logits` [..., K]: of shape [...], each within [0, K).
/// Labels in [0, classes), or negative (a row not scored) where
/// `ignoreNegative`.
LogicalResult checkLabels(Operation *op, const Tensor &logits,
                          const Tensor &labels, bool ignoreNegative) {
  int64_t classes = logits.shape.back();
  if (!llvm::equal(labels.shape, llvm::ArrayRef(logits.shape).drop_back()))
    return op->emitOpError("labels of shape ")
           << shapeString(labels.shape) << " do not match logits of shape "
           << shapeString(logits.shape);
  for (int64_t p = 0, n = labels.numElements(); p < n; ++p)
    if ((labels.ints[p] < 0 && !ignoreNegative) || labels.ints[p] >= classes)
      return op->emitOpError("label ")
             << labels.ints[p] << " at " << positionString(labels.shape, p)
             << " is outside the classes [0, " << classes << ")";
  return success();
}

/// log Σ exp(row), shifted by the row's max so that nothing overflows.
double logSumExp(const double *row, int64_t n) {
  double top = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < n; ++k)
    top = std::max(top, row[k]);
  double sum = 0;
  for (int64_t k = 0; k < n; ++k)
    sum += std::exp(row[k] - top);
  return top + std::log(sum);
}

FailureOr<Tensor> Interpreter::evaluate(lru::SoftmaxCrossEntropyOp op) {
  const Tensor &logits = value(op.getLogits());
  const Tensor &labels = value(op.getLabels());
  if (failed(checkLabels(op, logits, labels, op.getIgnoreNegative())))
    return failure();
  int64_t classes = logits.shape.back();
  double smoothing = op.getLabelSmoothing().convertToDouble();
  Tensor y = Tensor::zeros(labels.shape, Kind::Real);
  for (int64_t r = 0, n = labels.numElements(); r < n; ++r) {
    if (labels.ints[r] < 0)
      continue; // not scored: 0
    const double *row = &logits.re[r * classes];
    double lse = logSumExp(row, classes);
    if (auto weights = op.getClassWeights()) {
      // PyTorch's weighted row: (1 - s) w[label] nll + s / K sum_k w[k]
      // (lse - z[k]).
      double smooth = 0;
      for (int64_t k = 0; k < classes; ++k)
        smooth += double((*weights)[k]) * (lse - row[k]);
      int64_t label = labels.ints[r];
      y.re[r] =
          (1 - smoothing) * double((*weights)[label]) * (lse - row[label]) +
          smoothing / double(classes) * smooth;
      continue;
    }
    // The cross entropy against (1 - s) onehot + s / K.
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k)
      sum += row[k];
    y.re[r] = lse - (1 - smoothing) * row[labels.ints[r]] -
              smoothing / double(classes) * sum;
  }
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::SoftmaxCrossEntropyGradOp op) {
  const Tensor &logits = value(op.getLogits());
  const Tensor &labels = value(op.getLabels());
  const Tensor &g = value(op.getG());
  if (failed(checkLabels(op, logits, labels, op.getIgnoreNegative())))
    return failure();
  if (g.shape != labels.shape)
    return op.emitOpError("expects g of shape ")
           << shapeString(labels.shape) << ", got " << shapeString(g.shape);
  int64_t classes = logits.shape.back();
  double smoothing = op.getLabelSmoothing().convertToDouble();
  Tensor y = Tensor::zeros(logits.shape, Kind::Real);
  for (int64_t r = 0, n = labels.numElements(); r < n; ++r) {
    if (labels.ints[r] < 0)
      continue; // not scored: 0
    const double *row = &logits.re[r * classes];
    double lse = logSumExp(row, classes);
    auto weights = op.getClassWeights();
    // d/dz of (1 - s) w[label] nll + s / K sum_k w[k] (lse - z[k]).
    double total = 0;
    for (int64_t k = 0; weights && k < classes; ++k)
      total += double((*weights)[k]);
    for (int64_t k = 0; k < classes; ++k) {
      double softmax = std::exp(row[k] - lse);
      if (weights) {
        double wLabel = double((*weights)[labels.ints[r]]);
        double onehot = k == labels.ints[r] ? 1.0 : 0.0;
        y.re[r * classes + k] =
            ((1 - smoothing) * wLabel * (softmax - onehot) +
             smoothing / double(classes) *
                 (total * softmax - double((*weights)[k]))) *
            g.re[r];
        continue;
      }
      double target = (k == labels.ints[r] ? 1 - smoothing : 0.0) +
                      smoothing / double(classes);
      y.re[r * classes + k] = (softmax - target) * g.re[r];
    }
  }
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::DropoutMaskOp op) {
  const Tensor &x = value(op.getX());
  const Tensor &key = value(op.getKey());
  if (key.numElements() != 2)
    return op.emitOpError("expects a key of 2 elements (seed, step), got ")
           << shapeString(key.shape);
  // Philox's counter has 32 bits each for the step and the site.
  constexpr int64_t kLimit = int64_t(1) << 32;
  int64_t step = key.ints[1], site = op.getSiteAttr().getInt();
  if (step < 0 || step >= kLimit)
    return op.emitOpError("step ")
           << step << " of the key is outside [0, 2^32)";
  if (site < 0 || site >= kLimit)
    return op.emitOpError("site ") << site << " is outside [0, 2^32)";
  uint64_t seed = uint64_t(key.ints[0]);
  double rate = op.getRate().convertToDouble();
  Tensor y = Tensor::zeros(x.shape, Kind::Real);
  for (int64_t i = 0, n = x.numElements(); i < n; ++i)
    if (core::dropoutKeep(seed, uint32_t(step), uint32_t(site), uint64_t(i),
                          rate))
      y.re[i] = x.re[i] * double(core::dropoutScale(rate));
  return y;
}

FailureOr<Tensor> Interpreter::evaluate(lru::ParamOp op) {
  StringRef name = op.getName();
  auto it = params_.find(std::string_view(name.data(), name.size()));
  if (it == params_.end())
    return op.emitOpError("parameter '") << name << "' is not in the store";
  auto type = op.getResult().getType();
  if (!fits(it->second, type) || !it->second.isConsistent())
    return op.emitOpError("parameter '")
           << name << "' expects " << type << ", the store holds "
           << describe(it->second);
  return it->second;
}

FailureOr<Tensor> Interpreter::evaluate(arith::ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  auto type = dyn_cast<RankedTensorType>(op.getType());
  std::optional<Kind> kind =
      type ? kindOf(type.getElementType()) : std::nullopt;
  if (!dense || !kind)
    return op.emitOpError("is not supported by the reference interpreter "
                          "(only dense tensors of floats, complex floats or "
                          "integers are)");
  Tensor t;
  t.shape.assign(type.getShape().begin(), type.getShape().end());
  t.kind = *kind;
  switch (*kind) {
  case Kind::Real:
    for (const APFloat &v : dense.getValues<APFloat>())
      t.re.push_back(v.convertToDouble());
    break;
  case Kind::Complex:
    for (const std::complex<APFloat> &v :
         dense.getValues<std::complex<APFloat>>()) {
      t.re.push_back(v.real().convertToDouble());
      t.im.push_back(v.imag().convertToDouble());
    }
    break;
  case Kind::Int:
    for (const APInt &v : dense.getValues<APInt>())
      t.ints.push_back(v.getSExtValue());
    break;
  }
  return t;
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

FailureOr<std::vector<Tensor>> interpret(func::FuncOp func,
                                         llvm::ArrayRef<Tensor> args,
                                         const ParameterStore &params) {
  return Interpreter(params).run(func, args);
}

FailureOr<ParameterStore> initParameters(func::FuncOp func, uint64_t seed) {
  // One declaration per name; a name may recur (shared parameters) with the
  // same type and init.
  std::vector<lru::ParamOp> params;
  std::vector<core::ParameterDecl> decls;
  llvm::StringMap<lru::ParamOp> byName;
  WalkResult walk = func.walk([&](lru::ParamOp op) {
    auto [it, inserted] = byName.try_emplace(op.getName(), op);
    if (inserted) {
      params.push_back(op);
      decls.push_back({op.getName().str(), initSpecOf(op),
                       size_t(op.getType().getNumElements())});
      return WalkResult::advance();
    }
    lru::ParamOp first = it->second;
    if (first.getType() == op.getType() && first.getInit() == op.getInit() &&
        first.getArgsAttr() == op.getArgsAttr())
      return WalkResult::advance();
    InFlightDiagnostic diag = op.emitOpError("declares parameter '")
                              << op.getName()
                              << "' again with another type or init";
    diag.attachNote(first.getLoc()) << "first declared here";
    return WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    return failure();

  core::ParameterValues values;
  if (std::optional<core::InitError> error =
          core::initParameters(decls, seed, values))
    return byName.lookup(error->param).emitOpError("parameter '")
           << error->param << "' " << error->message;

  ParameterStore store;
  for (lru::ParamOp op : params) {
    std::string name = op.getName().str();
    auto shape = op.getType().getShape();
    store[name] = Tensor::real(Shape(shape.begin(), shape.end()),
                               std::move(values[name]));
  }
  return store;
}

} // namespace lruc
