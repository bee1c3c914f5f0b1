//===- LRUPrimitiveOps.cpp - Verifiers of the primitive ops --------------===//
//
// Primitive ops carry their result types explicitly (the decomposition and
// autodiff passes know them); these verifiers check that operands and result
// agree. A `?` (dynamic) dimension is compatible with any size.
//
//===----------------------------------------------------------------------===//

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace lru;

namespace {

bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

bool compatible(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return a.size() == b.size() &&
         llvm::all_of(llvm::zip(a, b), [](auto p) {
           return compatible(std::get<0>(p), std::get<1>(p));
         });
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Checks `result` against the expected shape and element type.
LogicalResult expectResult(Operation *op, ArrayRef<int64_t> shape,
                           Type element) {
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  if (result.getElementType() != element)
    return op->emitOpError("expects a result of element type ")
           << element << ", got " << result;
  if (!compatible(result.getShape(), shape)) {
    InFlightDiagnostic diag = op->emitOpError("expects a result of shape [");
    llvm::interleaveComma(shape, diag, [&](int64_t d) {
      if (ShapedType::isDynamic(d))
        diag << "?";
      else
        diag << d;
    });
    return diag << "], got " << result;
  }
  return success();
}

/// `dims` must be strictly increasing and within [0, rank).
LogicalResult checkDims(Operation *op, ArrayRef<int64_t> dims, int64_t rank) {
  for (auto [i, d] : llvm::enumerate(dims))
    if (d < 0 || d >= rank || (i > 0 && dims[i - 1] >= d))
      return op->emitOpError("expects dims increasing within [0, ")
             << rank << "), got [" << dims << "]";
  return success();
}

} // namespace

LogicalResult ComplexOp::verify() {
  return expectResult(*this, tensorType(getRe()).getShape(),
                      ComplexType::get(tensorType(getRe()).getElementType()));
}

template <typename PartOp>
static LogicalResult verifyPart(PartOp op) {
  auto x = tensorType(op.getX());
  return expectResult(op, x.getShape(),
                      cast<ComplexType>(x.getElementType()).getElementType());
}
LogicalResult RealOp::verify() { return verifyPart(*this); }
LogicalResult ImagOp::verify() { return verifyPart(*this); }

LogicalResult BroadcastOp::verify() {
  auto x = tensorType(getX());
  auto like = tensorType(getLike());
  ArrayRef<int64_t> dims = getDims();
  if (int64_t(dims.size()) != x.getRank())
    return emitOpError("expects one entry in dims per dim of x, got ")
           << dims.size() << " for rank " << x.getRank();
  if (failed(checkDims(*this, dims, like.getRank())))
    return failure();
  for (auto [i, d] : llvm::enumerate(dims))
    if (!compatible(x.getDimSize(i), like.getDimSize(d)))
      return emitOpError("dim ") << i << " of x (" << x.getDimSize(i)
                                 << ") does not match dim " << d
                                 << " of the result (" << like.getDimSize(d)
                                 << ")";
  return expectResult(*this, like.getShape(), x.getElementType());
}

Value ReduceSumOp::createSum(OpBuilder &builder, Location loc, Value x,
                             ArrayRef<int64_t> dims) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (!llvm::is_contained(dims, i))
      shape.push_back(type.getDimSize(i));
  auto result = type.clone(shape);
  if (llvm::all_of(dims, [&](int64_t d) { return type.getDimSize(d) == 1; }))
    return builder.create<ViewOp>(loc, result, x);
  return builder.create<ReduceSumOp>(loc, result, x,
                                     builder.getDenseI64ArrayAttr(dims));
}

LogicalResult ReduceSumOp::verify() {
  auto x = tensorType(getX());
  if (failed(checkDims(*this, getDims(), x.getRank())))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < x.getRank(); ++i)
    if (!llvm::is_contained(getDims(), i))
      shape.push_back(x.getDimSize(i));
  return expectResult(*this, shape, x.getElementType());
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("expects at least one input");
  auto first = tensorType(getInputs().front());
  int64_t dim = getDimAttr().getInt();
  if (dim < 0 || dim >= first.getRank())
    return emitOpError("expects dim within [0, ") << first.getRank() << ")";
  SmallVector<int64_t> shape(first.getShape());
  shape[dim] = 0;
  for (Value input : getInputs()) {
    auto type = tensorType(input);
    if (type.getElementType() != first.getElementType() ||
        type.getRank() != first.getRank())
      return emitOpError("expects inputs of one element type and rank");
    for (int64_t i = 0; i < type.getRank(); ++i) {
      if (i == dim)
        continue;
      if (!compatible(type.getDimSize(i), first.getDimSize(i)))
        return emitOpError("expects inputs that agree except in dim ") << dim;
    }
    if (type.isDynamicDim(dim) || ShapedType::isDynamic(shape[dim]))
      shape[dim] = ShapedType::kDynamic;
    else
      shape[dim] += type.getDimSize(dim);
  }
  return expectResult(*this, shape, first.getElementType());
}

LogicalResult SliceOp::verify() {
  auto x = tensorType(getX());
  int64_t dim = getDimAttr().getInt();
  if (dim < 0 || dim >= x.getRank() || x.isDynamicDim(dim))
    return emitOpError("expects a static dim within [0, ") << x.getRank()
                                                            << ")";
  int64_t offset = getOffsetAttr().getInt(), size = getSizeAttr().getInt();
  if (offset < 0 || size < 1 || offset + size > x.getDimSize(dim))
    return emitOpError("slice [") << offset << ", " << offset + size
                                  << ") is outside dim " << dim << " of size "
                                  << x.getDimSize(dim);
  SmallVector<int64_t> shape(x.getShape());
  shape[dim] = size;
  return expectResult(*this, shape, x.getElementType());
}

/// The floats of one element of `type` (2 for a complex one).
static int64_t floatsPerElement(RankedTensorType type) {
  return isa<ComplexType>(type.getElementType()) ? 2 : 1;
}

LogicalResult ViewOp::verify() {
  auto x = tensorType(getX()), y = tensorType(getResult());
  auto leadingDynamic = [](RankedTensorType type) {
    int64_t count = 0;
    while (count < type.getRank() && type.isDynamicDim(count))
      ++count;
    return count;
  };
  int64_t dynamic = leadingDynamic(x);
  if (leadingDynamic(y) != dynamic)
    return emitOpError("expects the same leading dynamic dims in ")
           << x << " and " << y;
  auto staticFloats = [&](RankedTensorType type) -> std::optional<int64_t> {
    int64_t floats = floatsPerElement(type);
    for (int64_t d : type.getShape().drop_front(dynamic)) {
      if (ShapedType::isDynamic(d))
        return std::nullopt;
      floats *= d;
    }
    return floats;
  };
  std::optional<int64_t> from = staticFloats(x), to = staticFloats(y);
  if (!from || !to)
    return emitOpError("expects dynamic dims only before the static ones, got ")
           << x << " -> " << y;
  if (*from != *to)
    return emitOpError("views ")
           << *from << " floats per leading index as " << *to << " (" << x
           << " -> " << y << ")";
  return success();
}

OpFoldResult ViewOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
  if (auto inner = getX().getDefiningOp<ViewOp>()) {
    getXMutable().assign(inner.getX());
    return getX().getType() == getType() ? getX() : Value(getResult());
  }
  return {};
}

/// Sequences [B, L, N] with optional init [B, N] and lengths [B].
static LogicalResult verifySequence(Operation *op, RankedTensorType seq,
                                    Value init, Value lengths) {
  if (seq.getRank() != 3)
    return op->emitOpError("expects a sequence [B, L, N], got ") << seq;
  if (init) {
    auto type = tensorType(init);
    if (type.getElementType() != seq.getElementType() ||
        !compatible(type.getShape(), {seq.getDimSize(0), seq.getDimSize(2)}))
      return op->emitOpError("expects init of shape [B, N] and the "
                             "sequence's element type, got ")
             << type;
  }
  if (lengths && !compatible(tensorType(lengths).getShape(),
                             {seq.getDimSize(0)}))
    return op->emitOpError("expects lengths of shape [B], got ")
           << lengths.getType();
  return success();
}

LogicalResult ShiftOp::verify() {
  auto x = tensorType(getX());
  if (failed(verifySequence(*this, x, getInit(), getLengths())))
    return failure();
  return expectResult(*this, x.getShape(), x.getElementType());
}

LogicalResult ScanOp::verify() {
  auto b = tensorType(getB());
  if (failed(verifySequence(*this, b, getInit(), getLengths())))
    return failure();
  auto lambda = tensorType(getLambda());
  if (lambda.getElementType() != b.getElementType())
    return emitOpError("expects lambda of b's element type, got ") << lambda;
  bool constant = compatible(lambda.getShape(), {b.getDimSize(2)});
  if (!constant && !compatible(lambda.getShape(), b.getShape()))
    return emitOpError("expects lambda of shape [N] or [B, L, N], got ")
           << lambda;
  return expectResult(*this, b.getShape(), b.getElementType());
}

/// The op before `op`, past lru.param ops and constants (which a run of
/// matmuls run together may have between them); null at the block's start.
static Operation *previousWorkingOp(Operation *op) {
  Operation *prev = op->getPrevNode();
  while (prev && isa<ParamOp, arith::ConstantOp>(prev))
    prev = prev->getPrevNode();
  return prev;
}

/// The op after `op`, past lru.param ops and constants.
static Operation *nextWorkingOp(Operation *op) {
  Operation *next = op->getNextNode();
  while (next && isa<ParamOp, arith::ConstantOp>(next))
    next = next->getNextNode();
  return next;
}

SmallVector<MatmulOp, 2> MatmulOp::getTogetherRun() {
  SmallVector<MatmulOp, 2> run;
  if ((*this)->hasAttr(kTogetherAttr))
    return run;
  run.push_back(*this);
  for (Operation *op = nextWorkingOp(*this); op; op = nextWorkingOp(op)) {
    auto next = dyn_cast<MatmulOp>(op);
    if (!next || !next->hasAttr(kTogetherAttr))
      break;
    run.push_back(next);
  }
  return run;
}

LogicalResult MatmulOp::verify() {
  if ((*this)->hasAttr(kTogetherAttr)) {
    auto prev = dyn_cast_or_null<MatmulOp>(previousWorkingOp(*this));
    if (getKind() == MatmulKind::tn || !prev ||
        prev.getKind() == MatmulKind::tn)
      return emitOpError("marked ")
             << kTogetherAttr
             << " expects an nt or nn matmul just before it (only lru.param "
                "ops and constants between), and to be one";
    // No member of the run may read an earlier member's result.
    for (MatmulOp earlier = prev; earlier;
         earlier = earlier->hasAttr(kTogetherAttr)
                       ? dyn_cast_or_null<MatmulOp>(previousWorkingOp(earlier))
                       : MatmulOp()) {
      if (llvm::is_contained(getOperands(), earlier.getResult()))
        return emitOpError("marked ")
               << kTogetherAttr << " reads the result of a matmul of its run";
    }
  }
  auto lhs = tensorType(getLhs());
  auto rhs = tensorType(getRhs());
  SmallVector<int64_t> shape;
  switch (getKind()) {
  case MatmulKind::nt:
  case MatmulKind::nn: {
    if (rhs.getRank() != 2 || lhs.getRank() < 1)
      return emitOpError("expects lhs [..., K] and rhs a matrix");
    bool nt = getKind() == MatmulKind::nt;
    int64_t contracted = nt ? rhs.getDimSize(1) : rhs.getDimSize(0);
    if (!compatible(lhs.getShape().back(), contracted))
      return emitOpError("contracts lhs's last dim (")
             << lhs.getShape().back() << ") with rhs dim " << (nt ? 1 : 0)
             << " (" << contracted << ")";
    shape.assign(lhs.getShape().begin(), lhs.getShape().end() - 1);
    shape.push_back(nt ? rhs.getDimSize(0) : rhs.getDimSize(1));
    break;
  }
  case MatmulKind::tn:
    if (lhs.getRank() < 2 || lhs.getRank() != rhs.getRank() ||
        !compatible(lhs.getShape().drop_back(), rhs.getShape().drop_back()))
      return emitOpError("expects lhs [..., N] and rhs [..., K] with the same "
                         "leading dims");
    shape = {lhs.getShape().back(), rhs.getShape().back()};
    break;
  }
  return expectResult(*this, shape, lhs.getElementType());
}

LogicalResult GatherOp::verify() {
  auto table = tensorType(getTable());
  if (table.getRank() != 2)
    return emitOpError("expects a table [V, H], got ") << table;
  SmallVector<int64_t> shape(tensorType(getIndices()).getShape());
  shape.push_back(table.getDimSize(1));
  return expectResult(*this, shape, table.getElementType());
}

LogicalResult ScatterAddOp::verify() {
  auto updates = tensorType(getUpdates());
  auto indices = tensorType(getIndices());
  auto result = tensorType(getResult());
  if (result.getRank() != 2 || result.isDynamicDim(0))
    return emitOpError("expects a static result [V, H], got ") << result;
  if (!compatible(updates.getShape().drop_back(), indices.getShape()))
    return emitOpError("expects updates [..., H] over indices [...]");
  return expectResult(*this, {result.getDimSize(0), updates.getShape().back()},
                      updates.getElementType());
}

LogicalResult LengthMaskOp::verify() {
  auto result = tensorType(getResult());
  if (result.getRank() != 2 || result.isDynamicDim(1))
    return emitOpError("expects a result [B, L] with a static L, got ")
           << result;
  if (getLabels() &&
      !compatible(tensorType(getLabels()).getShape(), result.getShape()))
    return emitOpError("expects scored labels [B, L] like the result, got ")
           << getLabels().getType();
  return expectResult(*this,
                      {tensorType(getLengths()).getDimSize(0),
                       result.getDimSize(1)},
                      Float32Type::get(getContext()));
}

LogicalResult ZeroPaddingOp::verify() {
  auto x = tensorType(getX());
  auto lengths = tensorType(getLengths());
  if (x.getRank() < 2 || x.isDynamicDim(1))
    return emitOpError("expects x [B, L, ...] with a static L, got ") << x;
  if (lengths.getRank() != 1 ||
      !compatible(lengths.getShape(), x.getShape().take_front()))
    return emitOpError("expects lengths [B] of x's batch, got ") << lengths;
  return success();
}

LogicalResult LabelWeightOp::verify() {
  if (getWeights().empty())
    return emitOpError("expects at least one weight");
  for (float w : getWeights())
    if (!(w >= 0 && std::isfinite(w)))
      return emitOpError("expects finite weights >= 0, got ") << w;
  return expectResult(*this, tensorType(getLabels()).getShape(),
                      Float32Type::get(getContext()));
}

/// A label smoothing s in [0, 1): 1 would leave no label in the target.
static LogicalResult verifyLabelSmoothing(Operation *op, llvm::APFloat s) {
  double v = s.convertToDouble();
  if (!(v >= 0 && v < 1))
    return op->emitOpError("expects a label_smoothing in [0, 1), got ") << v;
  return success();
}

/// Class weights, when given: one a class (K, the logits' last dim).
static LogicalResult verifyClassWeights(Operation *op, RankedTensorType logits,
                                        std::optional<ArrayRef<float>> w) {
  if (!w)
    return success();
  int64_t classes = logits.getRank() ? logits.getShape().back() : 0;
  if (!ShapedType::isDynamic(classes) && int64_t(w->size()) != classes)
    return op->emitOpError("expects ")
           << classes << " class_weights, one a class, got " << w->size();
  for (float v : *w)
    if (!(v >= 0 && std::isfinite(v)))
      return op->emitOpError("expects finite class_weights >= 0, got ") << v;
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  if (failed(verifyLabelSmoothing(*this, getLabelSmoothing())) ||
      failed(verifyClassWeights(*this, tensorType(getLogits()),
                                getClassWeights())))
    return failure();
  auto logits = tensorType(getLogits());
  if (logits.getRank() < 1 ||
      !compatible(tensorType(getLabels()).getShape(),
                  logits.getShape().drop_back()))
    return emitOpError("expects labels [...] for logits [..., K]");
  return expectResult(*this, logits.getShape().drop_back(),
                      logits.getElementType());
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  if (failed(verifyLabelSmoothing(*this, getLabelSmoothing())) ||
      failed(verifyClassWeights(*this, tensorType(getLogits()),
                                getClassWeights())))
    return failure();
  auto logits = tensorType(getLogits());
  if (logits.getRank() < 1 ||
      !compatible(tensorType(getLabels()).getShape(),
                  logits.getShape().drop_back()) ||
      !compatible(tensorType(getG()).getShape(), logits.getShape().drop_back()))
    return emitOpError("expects labels and g [...] for logits [..., K]");
  return expectResult(*this, logits.getShape(), logits.getElementType());
}

LogicalResult DropoutMaskOp::verify() {
  if (!(getRate().convertToDouble() >= 0 && getRate().convertToDouble() < 1))
    return emitOpError("expects a rate in [0, 1), got ")
           << getRate().convertToDouble();
  if (getSiteAttr().getInt() < 0)
    return emitOpError("expects a site >= 0, got ") << getSiteAttr().getInt();
  if (!compatible(tensorType(getKey()).getShape(), {2}))
    return emitOpError("expects key : tensor<2xi64> (seed, step)");
  return success();
}

bool BroadcastOp::isContiguous() {
  ArrayRef<int64_t> dims = getDims();
  for (size_t i = 1; i < dims.size(); ++i)
    if (dims[i] != dims[i - 1] + 1)
      return false;
  return true;
}

int64_t BroadcastOp::getInnerCount() {
  ArrayRef<int64_t> dims = getDims();
  if (dims.empty())
    return 1; // a scalar: every element reads x[0]
  auto result = tensorType(getResult());
  int64_t inner = 1;
  for (int64_t d = dims.back() + 1; d < result.getRank(); ++d)
    inner *= result.getDimSize(d);
  return inner;
}

ScanOp FusedOp::getScan() {
  auto scans = getBody().front().getOps<ScanOp>();
  return scans.empty() ? ScanOp() : *scans.begin();
}

ReduceSumOp FusedOp::getReduction(unsigned index) {
  auto yield = cast<YieldOp>(getBody().front().getTerminator());
  return yield.getValues()[index].getDefiningOp<ReduceSumOp>();
}

bool FusedOp::hasReductions() {
  return !getBody().front().getOps<ReduceSumOp>().empty();
}

RankedTensorType FusedOp::getLoopType() {
  for (unsigned i = 0; i < getNumResults(); ++i)
    if (!getReduction(i))
      return tensorType(getResult(i));
  return tensorType(getReduction(0).getX());
}

int64_t FusedOp::getRowsPerExample() {
  ArrayRef<int64_t> rows = getLoopType().getShape().drop_back();
  if (!rows.empty() && ShapedType::isDynamic(rows.front()))
    rows = rows.drop_front();
  int64_t count = 1;
  for (int64_t d : rows)
    count *= d;
  return count;
}

int64_t FusedOp::getReductionChunkRows() {
  // A scan group's loop is [B, L, N]: a chunk is a run of one sequence's
  // steps.
  return getScan() ? std::min(getLoopType().getDimSize(1), kScanChunkSteps)
                   : kReductionChunkRows;
}

int64_t FusedOp::getReductionChunksPerExample() {
  int64_t rows = getReductionChunkRows();
  return std::max<int64_t>(1, (getRowsPerExample() + rows - 1) / rows);
}

bool FusedOp::canBeEpilogue() {
  RankedTensorType loop = getLoopType();
  if (loop.getRank() < 2 || !loop.isDynamicDim(0) ||
      loop.isDynamicDim(loop.getRank() - 1))
    return false;
  // A scan runs along time, not by rows; one step of it (step mode) runs by
  // channels, which are its products' columns.
  return !getScan() ||
         (loop.getRank() == 3 && loop.getDimSize(1) == 1 && !hasReductions());
}

SmallVector<MatmulOp, 2> FusedOp::getEpilogueMatmuls() {
  SmallVector<MatmulOp, 2> matmuls;
  if (!(*this)->hasAttr(kEpilogueAttr))
    return matmuls;
  RankedTensorType loop = getLoopType();
  for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode()) {
    auto matmul = dyn_cast<MatmulOp>(op);
    if (!matmul || matmul.getKind() == MatmulKind::tn ||
        matmul.getType().getShape() != loop.getShape() ||
        !llvm::is_contained(getInputs(), matmul.getResult()))
      break;
    matmuls.insert(matmuls.begin(), matmul);
  }
  return matmuls;
}

/// The body of a region op (lru.fused, lru.multi_tensor) takes one block
/// argument per input, of its type.
static LogicalResult verifyBlockArguments(Operation *op, Block &body,
                                          ValueRange inputs) {
  if (body.getNumArguments() != inputs.size())
    return op->emitOpError("expects one block argument per input");
  for (auto [arg, input] : llvm::zip(body.getArguments(), inputs))
    if (arg.getType() != input.getType())
      return op->emitOpError("expects block arguments of the inputs' types");
  return success();
}

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  if (failed(verifyBlockArguments(*this, body, getInputs())))
    return failure();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("expects lru.yield of the results' types");
  // One shape for everything: the group is a single loop over its elements.
  std::optional<ArrayRef<int64_t>> shape;
  auto sameShape = [&](Type type) {
    auto tensor = cast<RankedTensorType>(type);
    if (!shape)
      shape = tensor.getShape();
    return tensor.getShape() == *shape;
  };
  // Inputs that only broadcasts or slices read, or a scan as its lambda,
  // init or lengths, may have any shape.
  for (auto [arg, input] : llvm::zip(body.getArguments(), getInputs())) {
    bool broadcastOnly = !arg.use_empty() &&
        llvm::all_of(arg.getUses(), [](OpOperand &use) {
          if (auto scan = dyn_cast<ScanOp>(use.getOwner()))
            return use.get() != scan.getB();
          if (auto shift = dyn_cast<ShiftOp>(use.getOwner()))
            return use.get() != shift.getX();
          if (isa<SliceOp>(use.getOwner()))
            return true;
          if (auto dropout = dyn_cast<DropoutMaskOp>(use.getOwner()))
            return use.get() == dropout.getKey();
          auto broadcast = dyn_cast<BroadcastOp>(use.getOwner());
          return broadcast && use.getOperandNumber() == 0;
        });
    if (!broadcastOnly && !sameShape(input.getType()))
      return emitOpError("expects inputs and results of one shape (but for "
                         "inputs that only lru.broadcast or lru.slice "
                         "reads, or dropout keys)");
  }
  // At most one scan: the loop runs along its time dim; what it reads
  // besides b comes from outside the group.
  unsigned scans = 0;
  for (auto scan : body.getOps<ScanOp>()) {
    if (++scans > 1)
      return scan.emitOpError("is the second scan of an lru.fused group");
    // lambda may be computed in the group when it varies per step (the
    // group's shape); init, lengths and a constant lambda come from outside.
    for (Value operand : scan->getOperands())
      if (operand != scan.getB() && !isa<BlockArgument>(operand) &&
          !(operand == scan.getLambda() && sameShape(operand.getType())))
        return scan.emitOpError("in an lru.fused group reads its init, "
                                "lengths and constant lambda from the "
                                "group's inputs");
  }
  for (auto [index, type] : llvm::enumerate(getResultTypes()))
    if (!getReduction(unsigned(index)) && !sameShape(type))
      return emitOpError("expects inputs and results of one shape (but for "
                         "inputs that only lru.broadcast reads)");
  if ((*this)->hasAttr(kEpilogueAttr)) {
    if (!canBeEpilogue())
      return emitOpError("as an epilogue loops over a batch-sized shape with "
                         "a static last dim, without a scan or with a scan "
                         "of one step and no sums");
    if (getEpilogueMatmuls().empty())
      return emitOpError("as an epilogue follows lru.matmul ops (nt or nn, "
                         "of its loop's shape) whose results it reads");
  }
  for (Operation &op : body.without_terminator()) {
    if (auto reduce = dyn_cast<ReduceSumOp>(op)) {
      // A sum over every dim but the last, of a value of the loop's shape
      // whose last dim is static, that only the yield reads.
      auto x = tensorType(reduce.getX());
      if (!sameShape(x) || x.getRank() < 2 || x.isDynamicDim(x.getRank() - 1))
        return op.emitOpError("in an lru.fused group sums a value of the "
                              "group's shape, of rank >= 2 with a static "
                              "last dim");
      if (!llvm::equal(reduce.getDims(), llvm::seq<int64_t>(0, x.getRank() - 1)))
        return op.emitOpError("in an lru.fused group sums over every dim but "
                              "the last");
      if (!llvm::all_of(reduce->getUsers(),
                        [](Operation *user) { return isa<YieldOp>(user); }))
        return op.emitOpError("in an lru.fused group is read only by the "
                              "group's lru.yield");
      continue;
    }
    if (auto shift = dyn_cast<ShiftOp>(op)) {
      // A scan group's loop walks time: the previous (or next) step of an
      // input is a read of it, over the scan's sequences.
      ScanOp scan = getScan();
      if (!scan || !sameShape(shift.getType()) ||
          !llvm::all_of(shift->getOperands(),
                        [](Value v) { return isa<BlockArgument>(v); }) ||
          shift.getLengths() != scan.getLengths())
        return op.emitOpError("in an lru.fused group needs the group's scan, "
                              "of its shape, and its x, init and lengths "
                              "(the scan's) from the group's inputs");
      continue;
    }
    if (auto slice = dyn_cast<SliceOp>(op)) {
      // A read of an input at the element's row and column + offset.
      int64_t last = slice.getType().getRank() - 1;
      if (!isa<BlockArgument>(slice.getX()) ||
          slice.getDimAttr().getInt() != last || !sameShape(slice.getType()))
        return op.emitOpError("in an lru.fused group slices one of the "
                              "group's inputs along its last dim, to the "
                              "group's shape");
      continue;
    }
    if (auto dropout = dyn_cast<DropoutMaskOp>(op)) {
      // Decided by the element's flat index in the loop (a backend draws a
      // row's decisions together): of the loop's shape with a static last
      // dim, never along a scan's time loop.
      auto x = tensorType(dropout.getX());
      if (scans || !isa<BlockArgument>(dropout.getKey()) || !sameShape(x) ||
          x.getRank() < 2 || x.isDynamicDim(x.getRank() - 1))
        return op.emitOpError("in an lru.fused group needs the group's "
                              "shape, of rank >= 2 with a static last dim, "
                              "its key from the group's inputs, and no scan "
                              "in the group");
      continue;
    }
    auto constant = dyn_cast<arith::ConstantOp>(op);
    bool splat = constant && isa<SplatElementsAttr>(constant.getValue());
    auto broadcast = dyn_cast<BroadcastOp>(op);
    if (!splat && !broadcast && !isa<ScanOp>(op) &&
        !op.hasTrait<OpTrait::Elementwise>())
      return op.emitOpError("is not elementwise: it cannot be in an lru.fused "
                            "group");
    if (splat)
      continue; // any shape: every element is the same
    for (Type type : op.getResultTypes())
      if (!sameShape(type))
        return op.emitOpError("has another shape than its lru.fused group");
  }
  return success();
}

LogicalResult MultiTensorOp::verify() {
  Block &body = getBody().front();
  if (failed(verifyBlockArguments(*this, body, getInputs())))
    return failure();
  SmallVector<Value> groupResults;
  for (Operation &op : body.without_terminator()) {
    auto group = dyn_cast<FusedOp>(op);
    if (!group)
      return op.emitOpError("in an lru.multi_tensor: only lru.fused groups "
                            "may be there");
    if (group.getScan())
      return op.emitOpError("in an lru.multi_tensor holds a scan");
    if (group.hasReductions())
      return op.emitOpError("in an lru.multi_tensor holds a reduction");
    for (Type type : group.getResultTypes())
      if (!cast<RankedTensorType>(type).hasStaticShape())
        return op.emitOpError("in an lru.multi_tensor has a result of "
                              "dynamic shape ")
               << type;
    for (Value input : group.getInputs())
      if (!isa<BlockArgument>(input))
        return op.emitOpError("in an lru.multi_tensor reads another group's "
                              "result");
    llvm::append_range(groupResults, group.getResults());
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  if (!llvm::equal(yield.getValues(), groupResults))
    return emitOpError("expects lru.yield of every result of its groups, in "
                       "order");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("expects lru.yield of the results' types");
  return success();
}
