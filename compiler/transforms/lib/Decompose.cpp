//===- Decompose.cpp - Model-level lru ops to primitives ------------------===//
//
// One pattern per model-level op. Each rewrites its op into the primitive ops
// of LRUPrimitiveOps.td (plus lru.add/relu/tanh/gelu, lru.param and
// arith.constant), all at the model op's location. docs/primitives.md gives
// the equations. C++ leaves the order in which call arguments are evaluated
// unspecified, so each op is built in its own statement: the IR comes out in
// the same order with every compiler.
//
//===----------------------------------------------------------------------===//

#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace lru;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The dims [0, n).
SmallVector<int64_t> iota(int64_t n) {
  return llvm::to_vector(llvm::seq<int64_t>(0, n));
}

/// Builds primitive ops at one location: constants, broadcasts, elementwise
/// arithmetic, matmuls, masks and the masked reductions that several
/// decompositions share. Result types follow from the operands.
class PrimitiveBuilder {
public:
  PrimitiveBuilder(PatternRewriter &rewriter, Location loc)
      : rewriter(rewriter), loc(loc) {}

  Location getLoc() const { return loc; }
  Type f32() { return rewriter.getF32Type(); }

  /// `arith.constant dense<v> : tensor<f32>`.
  Value scalar(double v) {
    auto type = RankedTensorType::get({}, f32());
    return rewriter.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(type, rewriter.getF32FloatAttr(v)));
  }

  /// `v` in the shape of `like` (f32): a dense constant when the shape is
  /// static, else a scalar constant broadcast like `like` with dims [].
  Value splat(double v, Value like) {
    auto likeType = tensorType(like);
    if (likeType.getRank() == 0)
      return scalar(v);
    if (likeType.hasStaticShape()) {
      auto type = RankedTensorType::get(likeType.getShape(), f32());
      return rewriter.create<arith::ConstantOp>(
          loc, DenseElementsAttr::get(type, rewriter.getF32FloatAttr(v)));
    }
    return broadcast(scalar(v), like, {});
  }

  /// `lru.broadcast x like like dims dims`: like's shape, x's element type.
  Value broadcast(Value x, Value like, ArrayRef<int64_t> dims) {
    auto type = RankedTensorType::get(tensorType(like).getShape(),
                                      tensorType(x).getElementType());
    return rewriter.create<BroadcastOp>(loc, type, x, like, dims);
  }

  /// A vector over the last dim (`[H]`) broadcast like `like` ([..., H]).
  Value broadcastLast(Value x, Value like) {
    return broadcast(x, like, {tensorType(like).getRank() - 1});
  }

  /// `[B, L]` (or `[B]`) broadcast over the leading dims of `like`.
  Value broadcastLeading(Value x, Value like) {
    return broadcast(x, like, iota(tensorType(x).getRank()));
  }

  template <typename OpT>
  Value unary(Value x) {
    return rewriter.create<OpT>(loc, x.getType(), x);
  }
  Value neg(Value x) { return unary<NegOp>(x); }
  Value exp(Value x) { return unary<ExpOp>(x); }
  Value sigmoid(Value x) { return unary<SigmoidOp>(x); }
  Value softplus(Value x) { return unary<SoftplusOp>(x); }
  Value rsqrt(Value x) { return unary<RsqrtOp>(x); }
  Value stopGradient(Value x) { return unary<StopGradientOp>(x); }

  Value add(Value a, Value b) { return rewriter.create<AddOp>(loc, a, b); }
  Value sub(Value a, Value b) {
    return rewriter.create<SubOp>(loc, a.getType(), a, b);
  }
  Value mul(Value a, Value b) {
    return rewriter.create<MulOp>(loc, a.getType(), a, b);
  }
  Value div(Value a, Value b) {
    return rewriter.create<DivOp>(loc, a.getType(), a, b);
  }
  Value max(Value a, Value b) {
    return rewriter.create<MaxOp>(loc, a.getType(), a, b);
  }

  Value notNan(Value x) { return unary<NotNanOp>(x); }
  Value nanToZero(Value x) { return unary<NanToZeroOp>(x); }
  Value relu(Value x) { return unary<ReluOp>(x); }

  Value complex(Value re, Value im) {
    auto type = RankedTensorType::get(tensorType(re).getShape(),
                                      ComplexType::get(f32()));
    return rewriter.create<ComplexOp>(loc, type, re, im);
  }
  Value re(Value x) {
    return rewriter.create<RealOp>(loc, realTypeOf(x), x);
  }
  Value im(Value x) {
    return rewriter.create<ImagOp>(loc, realTypeOf(x), x);
  }

  /// x's floats as `type` (lru.view): no copy.
  Value view(Value x, RankedTensorType type) {
    return rewriter.create<ViewOp>(loc, type, x);
  }

  /// Joins `parts` along `dim`.
  Value concat(ValueRange parts, int64_t dim) {
    SmallVector<int64_t> shape(tensorType(parts.front()).getShape());
    shape[dim] = 0;
    for (Value part : parts)
      shape[dim] += tensorType(part).getDimSize(dim);
    return rewriter.create<ConcatOp>(
        loc, tensorType(parts.front()).clone(shape), parts, dim);
  }

  /// `x W^T`: [..., K] x [N, K] -> [..., N].
  Value matmulNT(Value x, Value w) {
    SmallVector<int64_t> shape(tensorType(x).getShape().drop_back());
    shape.push_back(tensorType(w).getDimSize(0));
    return rewriter.create<MatmulOp>(loc, RankedTensorType::get(shape, f32()),
                                     MatmulKind::nt, x, w);
  }

  /// `x W^T + b` (b broadcast over the leading dims), or `x W^T`.
  Value affine(Value x, Value w, Value b) {
    Value y = matmulNT(x, w);
    return b ? add(y, broadcastLast(b, y)) : y;
  }

  /// Sums over `dims`, which disappear (a view over dims of one element).
  Value reduceSum(Value x, ArrayRef<int64_t> dims) {
    return ReduceSumOp::createSum(rewriter, loc, x, dims);
  }

  /// The f32 [B, L] mask of `lengths`, with B and L of `seq` ([B, L, ...]);
  /// with `scoredLabels` [B, L], 0 also where a label is negative.
  Value lengthMask(MaskKind kind, Value lengths, Value seq,
                   Value scoredLabels = {}) {
    auto shape = tensorType(seq).getShape();
    auto type = RankedTensorType::get({shape[0], shape[1]}, f32());
    return rewriter.create<LengthMaskOp>(loc, type, kind, lengths,
                                         scoredLabels);
  }

  /// The number of elements of `like` (a scalar tensor<f32>): a constant
  /// when its shape is static, else the sum of ones like it.
  Value count(Value like) {
    auto type = tensorType(like);
    if (type.hasStaticShape())
      return scalar(double(type.getNumElements()));
    return reduceSum(splat(1.0, like), iota(type.getRank()));
  }

  /// The mean of `values` over all elements, or, with `weights` (a 0/1
  /// mask of the same shape), over the elements whose weight is 1 (0 when
  /// none is, rather than 0 / 0).
  Value maskedMean(Value values, Value weights) {
    SmallVector<int64_t> all = iota(tensorType(values).getRank());
    if (!weights) {
      Value sum = reduceSum(values, all);
      return div(sum, count(values));
    }
    Value sum = reduceSum(mul(values, weights), all);
    Value count = reduceSum(weights, all);
    return div(sum, max(count, scalar(1.0)));
  }

  Value scan(Value lambda, Value b, Value lengths, bool reverse) {
    return rewriter.create<ScanOp>(loc, b.getType(), lambda, b, Value(),
                                   lengths,
                                   reverse ? rewriter.getUnitAttr() : nullptr);
  }

private:
  Type realTypeOf(Value complexTensor) {
    return RankedTensorType::get(tensorType(complexTensor).getShape(), f32());
  }

  PatternRewriter &rewriter;
  Location loc;
};

/// Replaces `op` by `value`, or fails (with an error at the op) when the
/// types disagree: a decomposition must keep the op's result type.
LogicalResult replace(PatternRewriter &rewriter, Operation *op, Value value) {
  if (value.getType() != op->getResult(0).getType())
    return op->emitOpError("decomposes to ")
           << value.getType() << ", not its result type "
           << op->getResult(0).getType();
  rewriter.replaceOp(op, value);
  return success();
}

/// Fails with an error unless the sequence dims [B, L, ...] of `seq` have a
/// static L (length masks need it).
LogicalResult requireStaticLength(Operation *op, Value seq) {
  if (tensorType(seq).isDynamicDim(1))
    return op->emitOpError("cannot be decomposed with a dynamic sequence "
                           "length (dim 1 of ")
           << seq.getType() << ")";
  return success();
}

/// Fails with an error unless `a` and `b` have the very same type (primitive
/// elementwise ops take operands of one type).
LogicalResult requireSameType(Operation *op, Value a, Value b,
                              StringRef what) {
  if (a.getType() != b.getType())
    return op->emitOpError("cannot be decomposed: ")
           << what << " have different types " << a.getType() << " and "
           << b.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Encoders and dense layers
//===----------------------------------------------------------------------===//

/// embed(tokens, table) -> gather table, tokens.
struct EmbedPattern : OpRewritePattern<EmbedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbedOp op,
                                PatternRewriter &rewriter) const override {
    return replace(rewriter, op,
                   rewriter.create<GatherOp>(op.getLoc(), op.getType(),
                                             op.getTable(), op.getTokens()));
  }
};

/// linear(x, W, b) -> matmul nt x, W (+ broadcast b).
struct LinearPattern : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    PrimitiveBuilder b(rewriter, op.getLoc());
    return replace(rewriter, op, b.affine(op.getX(), op.getWeight(),
                                          op.getBias()));
  }
};

//===----------------------------------------------------------------------===//
// Recurrences
//===----------------------------------------------------------------------===//

/// `type` with its last dim `last` and element type `element`.
RankedTensorType withLast(RankedTensorType type, int64_t last, Type element) {
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = last;
  return RankedTensorType::get(shape, element);
}

// The LRU's complex products, B u and Re(C x), as real matmuls. Over
// sequences each is one product of the complex values' interleaved floats
// (lru.view) with a weight built from B or C once per call, for all B x L
// rows. In step mode a call has one row per sequence: building those
// weights would move as many bytes as the products, so each is two products
// with B_re, B_im, C_re and C_im as they are.

/// Re(C x) = Re(x) C_re^T - Im(x) C_im^T for a complex state x [B, L, N].
/// Over sequences: x's floats [B, L, 2N] times conj(C)'s [H, 2N], whose rows
/// interleave C_re and -C_im.
Value readOut(PrimitiveBuilder &b, Value x, Value cRe, Value cIm,
              bool stepping) {
  if (stepping) {
    Value re = b.matmulNT(b.re(x), cRe);
    Value im = b.matmulNT(b.im(x), cIm);
    return b.sub(re, im);
  }
  auto xType = tensorType(x);
  int64_t n = xType.getShape().back();
  Value weight = b.complex(cRe, b.neg(cIm));
  weight = b.view(weight, withLast(tensorType(weight), 2 * n, b.f32()));
  return b.matmulNT(b.view(x, withLast(xType, 2 * n, b.f32())), weight);
}

/// complex(u B_re^T, u B_im^T) [..., N], the input of a scan, with B's rows
/// scaled by `gamma` when there is one. Over sequences: one product whose
/// [2N, H] weight alternates rows of B_re and B_im (the [N, 2H] rows
/// (B_re[n], B_im[n]) viewed as [2N, H]), so that its result [..., 2N] is
/// the complex values' interleaved floats. In step mode gamma scales the
/// products (a row a sequence) instead of B.
Value projectInput(PrimitiveBuilder &b, Value u, Value bRe, Value bIm,
                   Value gamma, bool stepping) {
  if (stepping) {
    Value re = b.matmulNT(u, bRe);
    Value im = b.matmulNT(u, bIm);
    if (gamma) {
      Value columns = b.broadcastLast(gamma, re);
      re = b.mul(re, columns);
      im = b.mul(im, columns);
    }
    return b.complex(re, im);
  }
  if (gamma) {
    Value rows = b.broadcast(gamma, bRe, {0});
    bRe = b.mul(bRe, rows);
    bIm = b.mul(bIm, rows);
  }
  auto bType = tensorType(bRe);
  int64_t n = bType.getDimSize(0), h = bType.getDimSize(1);
  Value weight = b.view(b.concat({bRe, bIm}, 1),
                        RankedTensorType::get({2 * n, h}, b.f32()));
  Value product = b.matmulNT(u, weight);
  return b.view(product, withLast(tensorType(product), n,
                                  ComplexType::get(b.f32())));
}

/// y + D * u, then zero at padded steps when there are lengths.
Value finishRecurrence(PrimitiveBuilder &b, Value y, Value u, Value d,
                       Value lengths) {
  y = b.add(y, b.mul(u, b.broadcastLast(d, u)));
  if (lengths)
    y = b.mul(y, b.broadcastLeading(
                     b.lengthMask(MaskKind::prefix, lengths, y), y));
  return y;
}

/// A pattern whose rewrite depends on the function's mode.
template <typename OpT>
struct ModePattern : OpRewritePattern<OpT> {
  ModePattern(MLIRContext *context, lruc::DecomposeMode mode)
      : OpRewritePattern<OpT>(context), mode(mode) {}
  /// @step: every step is real (lengths are not read) and state is carried.
  bool stepping() const { return mode == lruc::DecomposeMode::Step; }
  lruc::DecomposeMode mode;
};

/// Full: (W_v x + b_v) * sigmoid(W_g x + b_g); half: x * sigmoid(...).
/// Over sequences the full GLU's two products are one, as the LRU's B u is
/// (projectInput below): its [2H, H] weight alternates rows of W_g and W_v,
/// so that the product [..., 2H] is complex(gate, value) interleaved. The
/// backward pass then reads x once and writes one [..., H] input gradient
/// (a product with K = 2H) instead of two that a later loop adds; on a GPU,
/// where these products are bound by memory, that is a third of their
/// bytes. In step mode (a row per sequence) building the weight would move
/// as many bytes as the products, so they stay two.
struct GluPattern : ModePattern<GluOp> {
  using ModePattern::ModePattern;
  LogicalResult matchAndRewrite(GluOp op,
                                PatternRewriter &rewriter) const override {
    PrimitiveBuilder b(rewriter, op.getLoc());
    if (!op.getWValue() || stepping()) {
      Value gate =
          b.sigmoid(b.affine(op.getX(), op.getWGate(), op.getBGate()));
      Value value = op.getWValue()
                        ? b.affine(op.getX(), op.getWValue(), op.getBValue())
                        : op.getX();
      return replace(rewriter, op, b.mul(value, gate));
    }
    auto wType = tensorType(op.getWGate());
    int64_t out = wType.getDimSize(0), in = wType.getDimSize(1);
    Value weight = b.view(b.concat({op.getWGate(), op.getWValue()}, 1),
                          RankedTensorType::get({2 * out, in}, b.f32()));
    Value product = b.matmulNT(op.getX(), weight);
    Value pairs = b.view(product, withLast(tensorType(product), out,
                                           ComplexType::get(b.f32())));
    Value gate = b.re(pairs), value = b.im(pairs);
    if (Value bias = op.getBGate())
      gate = b.add(gate, b.broadcastLast(bias, gate));
    if (Value bias = op.getBValue())
      value = b.add(value, b.broadcastLast(bias, value));
    return replace(rewriter, op, b.mul(value, b.sigmoid(gate)));
  }
};

/// The carry name of a recurrence's state: its parameters' common prefix
/// ("blocks.0.lru" of "blocks.0.lru.nu_log") and `what`.
std::string carryName(Value nuLog, StringRef what) {
  StringRef name = "recurrence";
  if (auto param = nuLog.getDefiningOp<ParamOp>())
    name = param.getName().rsplit('.').first;
  return (name + "." + what).str();
}

/// In step mode, tags `scan` to start from the state the previous step left
/// (see lruc::kCarryScanAttr).
void carryScan(Value scan, StringRef name) {
  scan.getDefiningOp()->setAttr(
      lruc::kCarryScanAttr, StringAttr::get(scan.getContext(), name));
}

/// The LRU: lambda = exp(-exp(nu) + i exp(theta)), x = scan(lambda, gamma *
/// B u), y = Re(C x [+ C_rev x_rev]) + D u, masked.
struct RecurrencePattern : ModePattern<RecurrenceOp> {
  using ModePattern::ModePattern;
  LogicalResult matchAndRewrite(RecurrenceOp op,
                                PatternRewriter &rewriter) const override {
    Value lengths = stepping() ? Value() : op.getLengths();
    if (lengths && failed(requireStaticLength(op, op.getU())))
      return failure();
    PrimitiveBuilder b(rewriter, op.getLoc());
    Value u = op.getU();
    Value magnitude = b.neg(b.exp(op.getNuLog()));
    Value phase = b.exp(op.getThetaLog());
    Value lambda = b.exp(b.complex(magnitude, phase));
    Value gamma = op.getGammaLog() ? b.exp(op.getGammaLog()) : Value();
    Value input =
        projectInput(b, u, op.getBRe(), op.getBIm(), gamma, stepping());
    Value x = b.scan(lambda, input, lengths, /*reverse=*/false);
    if (stepping())
      carryScan(x, carryName(op.getNuLog(), "state"));
    Value y = readOut(b, x, op.getCRe(), op.getCIm(), stepping());
    if (op.isBidirectional()) {
      Value xRev = b.scan(lambda, input, lengths, /*reverse=*/true);
      y = b.add(y, readOut(b, xRev, op.getCRevRe(), op.getCRevIm(),
                           stepping()));
    }
    return replace(rewriter, op, finishRecurrence(b, y, u, op.getD(), lengths));
  }
};

/// The generalised LRU: a time-varying lambda_t = exp(a_t + i exp(theta))
/// from the gate g = U u; normalized divides by the scan of exp(a) over ones.
struct GeneralizedRecurrencePattern
    : ModePattern<GeneralizedRecurrenceOp> {
  using ModePattern::ModePattern;
  LogicalResult matchAndRewrite(GeneralizedRecurrenceOp op,
                                PatternRewriter &rewriter) const override {
    Value lengths = stepping() ? Value() : op.getLengths();
    if (lengths && failed(requireStaticLength(op, op.getU())))
      return failure();
    PrimitiveBuilder b(rewriter, op.getLoc());
    Value u = op.getU();
    Value g = b.matmulNT(u, op.getGate());
    Value decay = b.broadcastLast(b.exp(op.getNuLog()), g);
    Value a = op.getForm() == GLRUForm::plain
                  ? b.sub(g, decay)
                  : b.neg(b.softplus(b.sub(decay, g)));
    Value phase = b.broadcastLast(b.exp(op.getThetaLog()), g);
    Value lambda = b.exp(b.complex(a, phase));
    Value input = projectInput(b, u, op.getBRe(), op.getBIm(), Value(),
                               stepping());
    Value h = b.scan(lambda, input, lengths, /*reverse=*/false);
    if (stepping())
      carryScan(h, carryName(op.getNuLog(), "state"));
    if (op.getForm() == GLRUForm::normalized) {
      Value ones = b.splat(1.0, g);
      Value n = b.scan(b.exp(a), ones, lengths, /*reverse=*/false);
      if (stepping())
        carryScan(n, carryName(op.getNuLog(), "norm"));
      // Padded steps of n are 0: divide them by 1 instead.
      if (lengths)
        n = b.add(n, b.sub(ones, b.broadcastLeading(
                                     b.lengthMask(MaskKind::prefix, lengths, g),
                                     g)));
      h = b.div(h, b.complex(n, b.splat(0.0, g)));
    }
    Value y = readOut(b, h, op.getCRe(), op.getCIm(), stepping());
    return replace(rewriter, op, finishRecurrence(b, y, u, op.getD(), lengths));
  }
};

//===----------------------------------------------------------------------===//
// Dropout and norms (mode-dependent)
//===----------------------------------------------------------------------===//

/// Eval: the identity. Train: `lru.dropout_mask` keyed by the function's
/// `dropout_key` argument (rate 0: the identity).
struct DropoutPattern : OpRewritePattern<DropoutOp> {
  DropoutPattern(MLIRContext *context, lruc::DecomposeMode mode)
      : OpRewritePattern(context), mode(mode) {}

  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    if (mode != lruc::DecomposeMode::Train ||
        op.getRate().convertToDouble() == 0) {
      rewriter.replaceOp(op, op.getX());
      return success();
    }
    Value key = findKey(op);
    if (!key)
      return op.emitOpError("needs a function argument tagged {lru.input = "
                            "\"dropout_key\"} in train mode");
    return replace(rewriter, op,
                   rewriter.create<DropoutMaskOp>(
                       op.getLoc(), op.getType(), op.getX(), key,
                       op.getRateAttr(), op.getSiteAttr()));
  }

  static Value findKey(Operation *op) {
    auto func = op->getParentOfType<func::FuncOp>();
    if (!func)
      return {};
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      if (auto tag = func.getArgAttrOfType<StringAttr>(i, "lru.input"))
        if (tag.getValue() == "dropout_key")
          return func.getArgument(i);
    return {};
  }

  lruc::DecomposeMode mode;
};

/// BatchNorm over all dims but the last, real steps only. Eval normalises
/// with the running statistics; train with the batch statistics, and
/// computes the new running statistics, tagged for the pass to return.
struct BatchNormPattern : OpRewritePattern<BatchNormOp> {
  BatchNormPattern(MLIRContext *context, lruc::DecomposeMode mode)
      : OpRewritePattern(context), mode(mode) {}

  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    Value x = op.getX();
    Value lengths =
        mode == lruc::DecomposeMode::Step ? Value() : op.getLengths();
    if (lengths && failed(requireStaticLength(op, x)))
      return failure();
    PrimitiveBuilder b(rewriter, op.getLoc());
    Value mean = op.getRunningMean(), var = op.getRunningVar();
    Value mask, weights; // [B, L] and [B, L, H] masks of real steps
    if (lengths) {
      mask = b.lengthMask(MaskKind::prefix, lengths, x);
      weights = b.broadcastLeading(mask, x);
    }

    Value centered;
    if (mode == lruc::DecomposeMode::Train) {
      StringAttr meanName = paramName(op.getRunningMean());
      StringAttr varName = paramName(op.getRunningVar());
      if (!meanName || !varName)
        return op.emitOpError("needs running statistics from lru.param ops "
                              "to decompose in train mode");
      SmallVector<int64_t> dims = iota(tensorType(x).getRank() - 1);
      Value sum = b.reduceSum(weights ? b.mul(x, weights) : x, dims);
      // count: the number of real positions, as an [H] vector.
      Value count;
      if (mask)
        count = b.broadcast(b.reduceSum(mask, {0, 1}), sum, {});
      else if (llvm::none_of(dims, [&](int64_t d) {
                 return tensorType(x).isDynamicDim(d);
               }))
        count = b.splat(double(ShapedType::getNumElements(
                            tensorType(x).getShape().drop_back())),
                        sum);
      else
        count = b.reduceSum(b.splat(1.0, x), dims);
      Value batchMean = b.div(sum, count);
      centered = b.sub(x, b.broadcastLast(batchMean, x));
      // The variance's derivative in the mean, -2 sum(w (x - mean)) / n, is
      // 0: without that path the backward pass takes both of its sums (of
      // dy and dy * xhat) in one pass, with no sum of the gradient through
      // the variance between them and dx.
      Value varCentered =
          b.sub(x, b.broadcastLast(b.stopGradient(batchMean), x));
      Value dev = weights ? b.mul(varCentered, weights) : varCentered;
      Value batchVar = b.div(b.reduceSum(b.mul(dev, dev), dims), count);

      // running <- (1 - momentum) running + momentum stat; the variance
      // with the unbiased estimate var * n / max(n - 1, 1).
      double momentum = op.getMomentum().convertToDouble();
      Value keep = b.splat(1.0 - momentum, mean);
      Value take = b.splat(momentum, mean);
      Value one = b.splat(1.0, mean);
      Value scaled = b.mul(batchVar, count);
      Value unbiased = b.div(scaled, b.max(b.sub(count, one), one));
      Value oldMean = b.mul(keep, mean);
      oldMean.getDefiningOp()->setAttr(lruc::kStateReadAttr, meanName);
      Value newMean = b.add(oldMean, b.mul(take, batchMean));
      newMean.getDefiningOp()->setAttr(lruc::kStateUpdateAttr, meanName);
      Value oldVar = b.mul(keep, var);
      oldVar.getDefiningOp()->setAttr(lruc::kStateReadAttr, varName);
      Value newVar = b.add(oldVar, b.mul(take, unbiased));
      newVar.getDefiningOp()->setAttr(lruc::kStateUpdateAttr, varName);
      mean = batchMean;
      var = batchVar;
    } else {
      centered = b.sub(x, b.broadcastLast(mean, x));
    }

    Value eps = b.splat(op.getEpsilon().convertToDouble(), var);
    Value factor = b.mul(op.getScale(), b.rsqrt(b.add(var, eps)));
    Value normed = b.mul(centered, b.broadcastLast(factor, x));
    Value y = b.add(normed, b.broadcastLast(op.getBias(), x));
    if (weights)
      y = b.mul(y, weights);
    return replace(rewriter, op, y);
  }

  static StringAttr paramName(Value v) {
    if (auto param = v.getDefiningOp<ParamOp>())
      return param.getNameAttr();
    return {};
  }

  lruc::DecomposeMode mode;
};

/// LayerNorm over the last dim (biased variance).
struct LayerNormPattern : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Value x = op.getX();
    auto type = tensorType(x);
    int64_t last = type.getRank() - 1;
    if (type.isDynamicDim(last))
      return op.emitOpError("cannot be decomposed with a dynamic feature "
                            "size (the last dim of ")
             << type << ")";
    PrimitiveBuilder b(rewriter, op.getLoc());
    double inv = 1.0 / double(type.getDimSize(last));
    SmallVector<int64_t> lead = iota(last);
    Value sum = b.reduceSum(x, {last});
    Value invH = b.splat(inv, sum);
    Value mean = b.mul(sum, invH);
    Value centered = b.sub(x, b.broadcast(mean, x, lead));
    // As BatchNorm's: the variance's derivative in the mean is 0.
    Value varCentered = b.sub(x, b.broadcast(b.stopGradient(mean), x, lead));
    Value var =
        b.mul(b.reduceSum(b.mul(varCentered, varCentered), {last}), invH);
    Value eps = b.splat(op.getEpsilon().convertToDouble(), var);
    Value normed =
        b.mul(centered, b.broadcast(b.rsqrt(b.add(var, eps)), x, lead));
    Value scaled = b.mul(normed, b.broadcastLast(op.getScale(), x));
    Value y = b.add(scaled, b.broadcastLast(op.getBias(), x));
    return replace(rewriter, op, y);
  }
};

//===----------------------------------------------------------------------===//
// Pooling, heads and losses
//===----------------------------------------------------------------------===//

/// mean: sum of real steps / their number; last: the step at length - 1.
/// In step mode (one step, every step real): last is that step; mean
/// carries the running sum and count (per feature, so that the division
/// stays elementwise) from step to step.
struct PoolPattern : ModePattern<PoolOp> {
  using ModePattern::ModePattern;
  LogicalResult matchAndRewrite(PoolOp op,
                                PatternRewriter &rewriter) const override {
    Value x = op.getX();
    if (failed(requireStaticLength(op, x)))
      return failure();
    PrimitiveBuilder b(rewriter, op.getLoc());
    bool mean = op.getKind() == PoolKind::mean;
    if (stepping()) {
      Value sum = b.reduceSum(x, {1});
      if (!mean)
        return replace(rewriter, op, sum);
      Value count = b.splat(1.0, sum);
      MLIRContext *context = op.getContext();
      sum.getDefiningOp()->setAttr(lruc::kCarrySumAttr,
                                   StringAttr::get(context, "pool.sum"));
      count.getDefiningOp()->setAttr(lruc::kCarrySumAttr,
                                     StringAttr::get(context, "pool.count"));
      return replace(rewriter, op, b.div(sum, count));
    }
    Value mask = b.lengthMask(mean ? MaskKind::prefix : MaskKind::last,
                              op.getLengths(), x);
    Value sum = b.reduceSum(b.mul(x, b.broadcastLeading(mask, x)), {1});
    if (mean)
      sum = b.div(sum, b.broadcast(b.reduceSum(mask, {1}), sum, {0}));
    return replace(rewriter, op, sum);
  }
};

/// concat(a, b, a * b, a - b) on dim 1.
struct RetrievalCombinePattern : OpRewritePattern<RetrievalCombineOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RetrievalCombineOp op,
                                PatternRewriter &rewriter) const override {
    Value lhs = op.getLhs(), rhs = op.getRhs();
    if (failed(requireSameType(op, lhs, rhs, "the two towers")))
      return failure();
    PrimitiveBuilder b(rewriter, op.getLoc());
    SmallVector<Value> parts = {lhs, rhs, b.mul(lhs, rhs), b.sub(lhs, rhs)};
    return replace(rewriter, op,
                   rewriter.create<ConcatOp>(op.getLoc(), op.getType(), parts,
                                             rewriter.getI64IntegerAttr(1)));
  }
};

/// The mean of per-row softmax cross entropy over examples, or, per step
/// (with lengths), over the real steps whose label is not negative: a
/// negative step label marks a step not scored (0 when a batch has none);
/// with class weights, weighted by each label's weight.
struct CrossEntropyPattern : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    Value logits = op.getLogits(), lengths = op.getLengths(),
          labels = op.getLabels();
    if (lengths && failed(requireStaticLength(op, logits)))
      return failure();
    PrimitiveBuilder b(rewriter, op.getLoc());
    auto logitsType = tensorType(logits);
    auto rowType = RankedTensorType::get(logitsType.getShape().drop_back(),
                                         b.f32());
    // With class weights the rows are weighted already (PyTorch's rows: the
    // smoothing term weighs every class), and the divisor sums each row's
    // label weight instead of counting rows.
    DenseF32ArrayAttr weights = op.getClassWeightsAttr();
    Value rows = rewriter.create<SoftmaxCrossEntropyOp>(
        op.getLoc(), rowType, logits, labels,
        /*ignore_negative=*/lengths ? rewriter.getUnitAttr() : UnitAttr(),
        op.getLabelSmoothingAttr(), weights);
    if (!lengths && !weights)
      return replace(rewriter, op, b.maskedMean(rows, Value()));
    Value weight;
    if (weights)
      weight =
          rewriter.create<LabelWeightOp>(op.getLoc(), rowType, labels, weights);
    SmallVector<int64_t> all = iota(rowType.getRank());
    Value sum, counted = weight;
    if (lengths) {
      Value mask = b.lengthMask(MaskKind::prefix, lengths, logits, labels);
      sum = b.reduceSum(b.mul(rows, mask), all);
      counted = weight ? b.mul(mask, weight) : mask;
    } else {
      sum = b.reduceSum(rows, all);
    }
    // No row scored (or all of weight 0): loss 0 rather than 0 / 0. A
    // count of rows is at least 1 otherwise; a sum of weights may be less.
    Value count = b.reduceSum(counted, all);
    Value scored = b.max(count, b.scalar(weight ? 1e-30 : 1.0));
    Value loss = b.div(sum, scored);
    return replace(rewriter, op, loss);
  }
};

/// An error of d = pred - targets for each of the regression losses: d^2;
/// |d| = relu(d) + relu(-d); Huber's m^2 / 2 + delta relu(|d| - delta) with
/// m = |d| - relu(|d| - delta) = min(|d|, delta).
Value regressionError(PrimitiveBuilder &b, MseOp, Value d) {
  return b.mul(d, d);
}
Value absolute(PrimitiveBuilder &b, Value d) {
  Value positive = b.relu(d);
  Value negative = b.relu(b.neg(d));
  return b.add(positive, negative);
}
Value regressionError(PrimitiveBuilder &b, L1LossOp, Value d) {
  return absolute(b, d);
}
Value regressionError(PrimitiveBuilder &b, HuberLossOp op, Value d) {
  // Constants shaped like the targets, which nothing differentiates.
  Value delta = b.splat(op.getDelta().convertToDouble(), op.getTargets());
  Value half = b.splat(0.5, op.getTargets());
  Value a = absolute(b, d);
  Value over = b.relu(b.sub(a, delta));
  Value m = b.sub(a, over);
  Value quadratic = b.mul(half, b.mul(m, m));
  Value linear = b.mul(delta, over);
  return b.add(quadratic, linear);
}

/// The mean of a regression loss's error over the targets given: a NaN
/// target is a value not scored (0 when a batch has none), and so is every
/// value of a padded step.
template <typename LossOp>
struct RegressionLossPattern : OpRewritePattern<LossOp> {
  using OpRewritePattern<LossOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(LossOp op,
                                PatternRewriter &rewriter) const override {
    Value pred = op.getPred(), targets = op.getTargets(),
          lengths = op.getLengths();
    if (failed(requireSameType(op, pred, targets, "pred and targets")) ||
        (lengths && failed(requireStaticLength(op, pred))))
      return failure();
    PrimitiveBuilder b(rewriter, op.getLoc());
    // The mask is shaped like the targets, not the predictions: nothing in
    // it depends on the parameters, so nothing differentiates it.
    Value scored = b.notNan(targets);
    if (lengths)
      scored = b.mul(
          scored, b.broadcastLeading(
                      b.lengthMask(MaskKind::prefix, lengths, pred), targets));
    Value diff = b.sub(pred, b.nanToZero(targets));
    Value loss = b.maskedMean(regressionError(b, op, diff), scored);
    return replace(rewriter, op, loss);
  }
};

} // namespace

void lruc::maskPaddedInputs(func::FuncOp func) {
  if (func.isExternal())
    return;
  llvm::StringMap<BlockArgument> byName;
  for (BlockArgument arg : func.getArguments())
    if (auto tag =
            func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lru.input"))
      byName[tag.getValue()] = arg;
  OpBuilder builder = OpBuilder::atBlockBegin(&func.getBody().front());
  // One mask per lengths argument and sequence length.
  llvm::DenseMap<std::pair<Value, Type>, Value> masks;
  for (BlockArgument arg : func.getArguments()) {
    auto tag =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lru.input");
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!tag || !type)
      continue;
    // Real sequences [B, L, C] (features, per-step targets) and integer
    // ones [B, L] (tokens, per-step labels).
    bool integer = type.getElementType().isInteger(32);
    if (!(integer || type.getElementType().isF32()) ||
        type.getRank() < (integer ? 2 : 3))
      continue;
    StringRef name = tag.getValue(), stem = integer ? "tokens" : "features";
    StringRef suffix;
    if (name.starts_with(stem))
      suffix = name.drop_front(stem.size());
    else if (name != (integer ? "labels" : "targets"))
      continue;
    BlockArgument lengths = byName.lookup(("lengths" + suffix).str());
    if (!lengths || arg.use_empty())
      continue;
    Location loc = arg.getLoc();
    if (integer) {
      auto kept = builder.create<ZeroPaddingOp>(loc, type, arg, lengths);
      arg.replaceAllUsesExcept(kept.getResult(), kept.getOperation());
      continue;
    }
    auto maskType = RankedTensorType::get(
        {type.getDimSize(0), type.getDimSize(1)}, builder.getF32Type());
    Value &mask = masks[{lengths, maskType}];
    if (!mask)
      mask = builder.create<LengthMaskOp>(loc, maskType, MaskKind::prefix,
                                          lengths, /*labels=*/Value());
    Value wide = builder.create<BroadcastOp>(loc, type, mask, arg,
                                             ArrayRef<int64_t>{0, 1});
    auto kept = builder.create<MaskedOp>(loc, type, arg, wide);
    arg.replaceAllUsesExcept(
        kept.getResult(),
        SmallPtrSet<Operation *, 2>{wide.getDefiningOp(), kept.getOperation()});
  }
}

void lruc::populateDecomposePatterns(RewritePatternSet &patterns,
                                     DecomposeMode mode) {
  MLIRContext *context = patterns.getContext();
  patterns.add<EmbedPattern, LinearPattern, LayerNormPattern,
               RetrievalCombinePattern, CrossEntropyPattern,
               RegressionLossPattern<MseOp>, RegressionLossPattern<L1LossOp>,
               RegressionLossPattern<HuberLossOp>>(context);
  patterns.add<DropoutPattern, BatchNormPattern, GluPattern, RecurrencePattern,
               GeneralizedRecurrencePattern, PoolPattern>(context, mode);
}
