//===- LRUOps.cpp - The lru dialect's ops ---------------------------------===//
//
// Result-type inference and verification. The shape checks live in each op's
// `inferReturnTypes`: the InferTypeOpInterface verifier calls it on every op,
// parsed or built, before the op's own `verify()`, so one function both infers
// and diagnoses. `verify()` checks attributes only. A `?` (dynamic) dimension
// is compatible with any size; results keep the batch dimension of the main
// input.
//
//===----------------------------------------------------------------------===//

#include "lru/LRUOps.h"
#include <cmath>

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lru;

#include "lru/LRUEnums.cpp.inc"

namespace {

constexpr int64_t kDynamic = ShapedType::kDynamic;

bool compatible(int64_t a, int64_t b) {
  return a == kDynamic || b == kDynamic || a == b;
}

/// Emits `'lru.<op>' op ...` diagnostics, as `emitOpError` would, at a
/// location that may be absent (then nothing is emitted, only failure).
class ShapeChecker {
public:
  ShapeChecker(std::optional<Location> loc, StringRef opName)
      : loc_(loc), opName_(opName) {}

  InFlightDiagnostic error() {
    if (!loc_)
      return InFlightDiagnostic();
    InFlightDiagnostic diag = mlir::emitError(*loc_);
    diag << "'" << opName_ << "' op ";
    return diag;
  }

  /// The ranked type of `value`, or null (ODS's type constraints report a
  /// non-ranked operand; inference just gives up).
  static RankedTensorType ranked(Value value) {
    return value ? dyn_cast<RankedTensorType>(value.getType())
                 : RankedTensorType();
  }

  /// Checks that `value` has the shape `expected` (`kDynamic` matches any
  /// size); `dims` names the expected dims in the message, e.g. "[N, H]".
  LogicalResult shape(StringRef what, Value value, ArrayRef<int64_t> expected,
                      StringRef dims) {
    RankedTensorType type = ranked(value);
    if (!type)
      return failure();
    bool ok = type.getRank() == int64_t(expected.size()) &&
              llvm::all_of(llvm::zip(type.getShape(), expected), [](auto p) {
                return compatible(std::get<0>(p), std::get<1>(p));
              });
    if (ok)
      return success();
    InFlightDiagnostic diag = error();
    diag << "expects " << what << " of shape " << dims << " = [";
    llvm::interleaveComma(expected, diag, [&](int64_t d) {
      if (d == kDynamic)
        diag << "?";
      else
        diag << d;
    });
    diag << "], got " << type;
    return diag;
  }

  /// Checks that `value` has one of `ranks`; `dims` names the accepted shapes.
  LogicalResult rank(StringRef what, Value value, ArrayRef<int64_t> ranks,
                     StringRef dims) {
    RankedTensorType type = ranked(value);
    if (!type)
      return failure();
    if (llvm::is_contained(ranks, type.getRank()))
      return success();
    return error() << "expects " << what << " of shape " << dims << ", got "
                   << type;
  }

  /// Checks that optional operands come together (both present or neither).
  LogicalResult together(Value a, StringRef aName, Value b, StringRef bName,
                         StringRef why) {
    if (bool(a) == bool(b))
      return success();
    return error() << "expects " << aName << " and " << bName
                   << " together (" << why << ")";
  }

  /// Checks the per-sequence lengths: i32 [B].
  LogicalResult lengths(Value lengths, int64_t batch) {
    if (!lengths)
      return success();
    return shape("lengths", lengths, {batch}, "[B]");
  }

private:
  std::optional<Location> loc_;
  StringRef opName_;
};

RankedTensorType withShape(RankedTensorType type, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, type.getElementType());
}

/// The checks shared by the LRU and the generalised LRU: nu_log, theta_log
/// [N]; B_re, B_im [N, H]; C_re, C_im [H, N]; D [H]; lengths [B]. Sets `n`.
template <typename Adaptor>
LogicalResult checkRecurrence(ShapeChecker &check, Adaptor adaptor,
                              int64_t &n) {
  if (failed(check.rank("u", adaptor.getU(), {3}, "[B, L, H]")))
    return failure();
  ArrayRef<int64_t> u = check.ranked(adaptor.getU()).getShape();
  int64_t b = u[0], h = u[2];
  if (failed(check.rank("nu_log", adaptor.getNuLog(), {1}, "[N]")))
    return failure();
  n = check.ranked(adaptor.getNuLog()).getDimSize(0);
  return success(
      succeeded(check.shape("theta_log", adaptor.getThetaLog(), {n}, "[N]")) &&
      succeeded(check.shape("B_re", adaptor.getBRe(), {n, h}, "[N, H]")) &&
      succeeded(check.shape("B_im", adaptor.getBIm(), {n, h}, "[N, H]")) &&
      succeeded(check.shape("C_re", adaptor.getCRe(), {h, n}, "[H, N]")) &&
      succeeded(check.shape("C_im", adaptor.getCIm(), {h, n}, "[H, N]")) &&
      succeeded(check.shape("D", adaptor.getD(), {h}, "[H]")) &&
      succeeded(check.lengths(adaptor.getLengths(), b)));
}

} // namespace

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

std::optional<double> ParamOp::getArgNumber(StringRef key) {
  DictionaryAttr args = getArgsAttr();
  Attribute attr = args ? args.get(key) : Attribute();
  if (auto f = dyn_cast_or_null<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto i = dyn_cast_or_null<IntegerAttr>(attr))
    return double(i.getValue().getSExtValue());
  return std::nullopt;
}

StringRef ParamOp::getArgString(StringRef key) {
  DictionaryAttr args = getArgsAttr();
  auto s = args ? dyn_cast_or_null<StringAttr>(args.get(key)) : nullptr;
  return s ? s.getValue() : StringRef();
}

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("expects a non-empty name");
  auto type = cast<RankedTensorType>(getResult().getType());
  if (!type.hasStaticShape())
    return emitOpError("expects a static result shape, got ") << type;

  StringRef init = stringifyInitKind(getInit());
  auto number = [&](StringRef key) { return getArgNumber(key); };
  switch (getInit()) {
  case InitKind::zeros:
  case InitKind::ones:
    return success();
  case InitKind::normal: {
    std::optional<double> std = number("std");
    if (!std || !(*std > 0))
      return emitOpError("init ") << init << " expects a positive 'std' in args";
    return success();
  }
  case InitKind::uniform: {
    std::optional<double> low = number("low"), high = number("high");
    if (!low || !high || !(*low < *high))
      return emitOpError("init ")
             << init << " expects numbers 'low' < 'high' in args";
    return success();
  }
  case InitKind::lru_nu:
  case InitKind::lru_theta:
  case InitKind::lru_gamma:
    break;
  }

  // The LRU's own inits act on one vector of N states.
  if (type.getRank() != 1)
    return emitOpError("init ")
           << init << " expects a rank-1 result [N], got " << type;
  if (getInit() == InitKind::lru_nu) {
    std::optional<double> rMin = number("r_min"), rMax = number("r_max");
    if (!rMin || !rMax || !(0 <= *rMin && *rMin <= *rMax && *rMax <= 1))
      return emitOpError("init ")
             << init << " expects 0 <= 'r_min' <= 'r_max' <= 1 in args";
    return success();
  }
  if (getInit() == InitKind::lru_theta) {
    std::optional<double> maxPhase = number("max_phase");
    if (!maxPhase || !(*maxPhase > 0))
      return emitOpError("init ")
             << init << " expects a positive 'max_phase' in args";
    return success();
  }
  // lru_gamma: gamma_log = log(sqrt(1 - |lambda|^2)) of the named params.
  if (getArgString("nu").empty() || getArgString("theta").empty())
    return emitOpError("init ")
           << init
           << " expects string 'nu' and 'theta' in args (the names of the "
              "params it is derived from)";
  return success();
}

//===----------------------------------------------------------------------===//
// EmbedOp, LinearOp
//===----------------------------------------------------------------------===//

LogicalResult EmbedOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  ShapeChecker check(loc, getOperationName());
  if (failed(check.rank("tokens", adaptor.getTokens(), {2}, "[B, L]")) ||
      failed(check.rank("table", adaptor.getTable(), {2}, "[V, H]")))
    return failure();
  ArrayRef<int64_t> tokens = check.ranked(adaptor.getTokens()).getShape();
  RankedTensorType table = check.ranked(adaptor.getTable());
  types.push_back(
      withShape(table, {tokens[0], tokens[1], table.getDimSize(1)}));
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ShapeChecker check(loc, getOperationName());
  if (failed(check.rank("x", adaptor.getX(), {2, 3}, "[B, In] or [B, L, In]")) ||
      failed(check.rank("weight", adaptor.getWeight(), {2}, "[Out, In]")))
    return failure();
  RankedTensorType x = check.ranked(adaptor.getX());
  int64_t in = x.getShape().back();
  int64_t out = check.ranked(adaptor.getWeight()).getDimSize(0);
  if (failed(check.shape("weight", adaptor.getWeight(), {out, in},
                         "[Out, In]")) ||
      (adaptor.getBias() &&
       failed(check.shape("bias", adaptor.getBias(), {out}, "[Out]"))))
    return failure();
  SmallVector<int64_t> shape(x.getShape());
  shape.back() = out;
  types.push_back(withShape(x, shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise activations: the result is the input's type.
//===----------------------------------------------------------------------===//

template <typename Adaptor>
static LogicalResult inferSameAsX(Adaptor adaptor,
                                  SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getX().getType());
  return success();
}

LogicalResult GeluOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  return inferSameAsX(adaptor, types);
}

LogicalResult ReluOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  return inferSameAsX(adaptor, types);
}

LogicalResult TanhOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  return inferSameAsX(adaptor, types);
}

//===----------------------------------------------------------------------===//
// RecurrenceOp, GeneralizedRecurrenceOp
//===----------------------------------------------------------------------===//

LogicalResult RecurrenceOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  ShapeChecker check(loc, getOperationName());
  int64_t n = kDynamic;
  if (failed(checkRecurrence(check, adaptor, n)))
    return failure();
  int64_t h = check.ranked(adaptor.getU()).getDimSize(2);
  if (adaptor.getGammaLog() &&
      failed(check.shape("gamma_log", adaptor.getGammaLog(), {n}, "[N]")))
    return failure();
  if (failed(check.together(adaptor.getCRevRe(), "C_rev_re",
                            adaptor.getCRevIm(), "C_rev_im",
                            "both for a bidirectional LRU, or neither")))
    return failure();
  if (adaptor.getCRevRe() &&
      (failed(check.shape("C_rev_re", adaptor.getCRevRe(), {h, n}, "[H, N]")) ||
       failed(check.shape("C_rev_im", adaptor.getCRevIm(), {h, n}, "[H, N]"))))
    return failure();
  types.push_back(adaptor.getU().getType());
  return success();
}

LogicalResult GeneralizedRecurrenceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  ShapeChecker check(loc, getOperationName());
  int64_t n = kDynamic;
  if (failed(checkRecurrence(check, adaptor, n)))
    return failure();
  int64_t h = check.ranked(adaptor.getU()).getDimSize(2);
  if (failed(check.shape("gate U", adaptor.getGate(), {n, h}, "[N, H]")))
    return failure();
  types.push_back(adaptor.getU().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// GluOp, DropoutOp
//===----------------------------------------------------------------------===//

LogicalResult GluOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  ShapeChecker check(loc, getOperationName());
  if (failed(check.rank("x", adaptor.getX(), {2, 3}, "[B, H] or [B, L, H]")))
    return failure();
  int64_t h = check.ranked(adaptor.getX()).getShape().back();
  if (failed(check.shape("w_gate", adaptor.getWGate(), {h, h}, "[H, H]")) ||
      failed(check.shape("b_gate", adaptor.getBGate(), {h}, "[H]")) ||
      failed(check.together(adaptor.getWValue(), "w_value",
                            adaptor.getBValue(), "b_value",
                            "both for a full GLU, or neither for a half GLU")))
    return failure();
  if (adaptor.getWValue() &&
      (failed(check.shape("w_value", adaptor.getWValue(), {h, h}, "[H, H]")) ||
       failed(check.shape("b_value", adaptor.getBValue(), {h}, "[H]"))))
    return failure();
  types.push_back(adaptor.getX().getType());
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferSameAsX(adaptor, types);
}

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0 && rate < 1))
    return emitOpError("expects a rate in [0, 1), got ") << rate;
  if (int64_t(getSite()) < 0)
    return emitOpError("expects a non-negative site, got ")
           << int64_t(getSite());
  return success();
}

//===----------------------------------------------------------------------===//
// BatchNormOp, LayerNormOp
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  ShapeChecker check(loc, getOperationName());
  if (failed(check.rank("x", adaptor.getX(), {2, 3}, "[B, H] or [B, L, H]")))
    return failure();
  RankedTensorType x = check.ranked(adaptor.getX());
  int64_t h = x.getShape().back();
  if (failed(check.shape("scale", adaptor.getScale(), {h}, "[H]")) ||
      failed(check.shape("bias", adaptor.getBias(), {h}, "[H]")) ||
      failed(check.shape("running_mean", adaptor.getRunningMean(), {h},
                         "[H]")) ||
      failed(check.shape("running_var", adaptor.getRunningVar(), {h}, "[H]")))
    return failure();
  if (adaptor.getLengths() && x.getRank() != 3)
    return check.error() << "expects lengths only with a sequence input "
                            "[B, L, H], got "
                         << x;
  if (failed(check.lengths(adaptor.getLengths(), x.getDimSize(0))))
    return failure();
  types.push_back(x);
  return success();
}

LogicalResult BatchNormOp::verify() {
  double momentum = getMomentum().convertToDouble();
  if (!(momentum >= 0 && momentum <= 1))
    return emitOpError("expects a momentum in [0, 1], got ") << momentum;
  if (!(getEpsilon().convertToDouble() > 0))
    return emitOpError("expects a positive epsilon");
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  ShapeChecker check(loc, getOperationName());
  if (failed(check.rank("x", adaptor.getX(), {2, 3}, "[B, H] or [B, L, H]")))
    return failure();
  int64_t h = check.ranked(adaptor.getX()).getShape().back();
  if (failed(check.shape("scale", adaptor.getScale(), {h}, "[H]")) ||
      failed(check.shape("bias", adaptor.getBias(), {h}, "[H]")))
    return failure();
  types.push_back(adaptor.getX().getType());
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (!(getEpsilon().convertToDouble() > 0))
    return emitOpError("expects a positive epsilon");
  return success();
}

//===----------------------------------------------------------------------===//
// AddOp
//===----------------------------------------------------------------------===//

LogicalResult AddOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  // AllTypesMatch<["lhs", "rhs"]> checks that the operands agree.
  types.push_back(adaptor.getLhs().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// PoolOp, RetrievalCombineOp
//===----------------------------------------------------------------------===//

LogicalResult PoolOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  ShapeChecker check(loc, getOperationName());
  if (failed(check.rank("x", adaptor.getX(), {3}, "[B, L, H]")))
    return failure();
  RankedTensorType x = check.ranked(adaptor.getX());
  if (failed(check.shape("lengths", adaptor.getLengths(), {x.getDimSize(0)},
                         "[B]")))
    return failure();
  types.push_back(withShape(x, {x.getDimSize(0), x.getDimSize(2)}));
  return success();
}

LogicalResult RetrievalCombineOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  ShapeChecker check(loc, getOperationName());
  if (failed(check.rank("lhs", adaptor.getLhs(), {2}, "[B, H]")))
    return failure();
  RankedTensorType lhs = check.ranked(adaptor.getLhs());
  if (failed(check.shape("rhs", adaptor.getRhs(), lhs.getShape(), "[B, H]")))
    return failure();
  int64_t h = lhs.getDimSize(1);
  types.push_back(
      withShape(lhs, {lhs.getDimSize(0), h == kDynamic ? kDynamic : 4 * h}));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses: a scalar, the mean over real examples (or steps).
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *context,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  ShapeChecker check(loc, getOperationName());
  if (failed(check.rank("logits", adaptor.getLogits(), {2, 3},
                        "[B, K] or [B, L, K]")))
    return failure();
  RankedTensorType logits = check.ranked(adaptor.getLogits());
  bool perStep = logits.getRank() == 3;
  if (failed(check.shape("labels", adaptor.getLabels(),
                         logits.getShape().drop_back(),
                         perStep ? "[B, L]" : "[B]")))
    return failure();
  if (adaptor.getLengths() && !perStep)
    return check.error() << "expects lengths only with per-step logits "
                            "[B, L, K], got "
                         << logits;
  if (failed(check.lengths(adaptor.getLengths(), logits.getDimSize(0))))
    return failure();
  types.push_back(RankedTensorType::get({}, Float32Type::get(context)));
  return success();
}

/// The regression losses' shapes: pred [B, K] or [B, L, K], targets the
/// same, lengths only per step.
template <typename Adaptor>
static LogicalResult inferRegressionLoss(MLIRContext *context,
                                         std::optional<Location> loc,
                                         StringRef name, Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ShapeChecker check(loc, name);
  if (failed(check.rank("pred", adaptor.getPred(), {2, 3},
                        "[B, K] or [B, L, K]")))
    return failure();
  RankedTensorType pred = check.ranked(adaptor.getPred());
  bool perStep = pred.getRank() == 3;
  if (failed(check.shape("targets", adaptor.getTargets(), pred.getShape(),
                         perStep ? "[B, L, K]" : "[B, K]")))
    return failure();
  if (adaptor.getLengths() && !perStep)
    return check.error() << "expects lengths only with per-step predictions "
                            "[B, L, K], got "
                         << pred;
  if (failed(check.lengths(adaptor.getLengths(), pred.getDimSize(0))))
    return failure();
  types.push_back(RankedTensorType::get({}, Float32Type::get(context)));
  return success();
}

LogicalResult HuberLossOp::verify() {
  float delta = getDelta().convertToFloat();
  if (!(delta > 0) || !std::isfinite(delta))
    return emitOpError("expects a delta above 0, got ") << delta;
  return success();
}

#define GET_OP_CLASSES
#include "lru/LRUOps.cpp.inc"
