//===- FuseElementwise.cpp - Elementwise ops into lru.fused groups --------===//
//
// Scans each function's ops in order, keeping one open group per shape. An
// elementwise op (or a broadcast) joins the group of
// its result's shape; any other op that reads a group's value, and any
// member that reads a group of another shape, closes that group. A closed group
// is built at the place of its last member: its inputs are defined before its
// members, and nothing between its first and last member reads its values, so
// that place dominates every outside use. A later op of the group's shape that
// reads it may still join when everything it reads is ready at that place. A
// scan joins like an elementwise op, one scan a group. A sum over every dim
// but the last joins the group of the value it sums (BatchNorm's
// statistics, a bias's gradient), and nothing joins the group a value reads
// one of its sums from. A dropout (with a static last dim) joins like an
// elementwise op, but never a group with a scan.
//
// Before grouping, a negation that a matmul reads moves to the matmul's
// product (where elementwise ops read it), so that no negated copy of an
// operand is stored; a sum of every element of a [..., W] value becomes a
// sum over the leading dims (which may join a group) and a sum of W; and
// scans that read one lru.complex get a copy each: joining two floats costs
// nothing in a loop, while sharing it would store the complex value in one
// group and read it back in the other.
//
//===----------------------------------------------------------------------===//

#include "GroupRules.h"
#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SetVector.h"

namespace lruc {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "lruc/Transforms/Passes.h.inc"
} // namespace lruc

using namespace mlir;
using lruc::group::isSplatConstant;

namespace {

/// A scan over [B, L, N] with static L and N: a group with it runs along
/// time, its producers and consumers computed at each step.
bool isFusibleScan(Operation *op) {
  auto scan = dyn_cast<lru::ScanOp>(op);
  if (!scan)
    return false;
  auto type = cast<RankedTensorType>(scan.getType());
  return type.getRank() == 3 && !type.isDynamicDim(1) && !type.isDynamicDim(2);
}

/// A slice of a static last dim to a narrower one: a loop over its result
/// reads its input at the element's row and column + offset (never a
/// value of the same group: that has the loop's shape).
bool isFusibleSlice(Operation *op) {
  auto slice = dyn_cast<lru::SliceOp>(op);
  if (!slice)
    return false;
  auto x = cast<RankedTensorType>(slice.getX().getType());
  int64_t last = x.getRank() - 1;
  return slice.getDimAttr().getInt() == last && !x.isDynamicDim(last) &&
         slice.getSizeAttr().getInt() < x.getDimSize(last);
}

/// Dropout of a value with a static last dim: a loop computes its keep
/// decisions a row at a time (a Philox block decides four neighbours), so
/// the dropped value is never stored apart from what it is computed from.
/// Never in a group with a scan, whose loop runs along time.
bool isFusibleDropout(Operation *op) {
  auto dropout = dyn_cast<lru::DropoutMaskOp>(op);
  if (!dropout)
    return false;
  auto x = cast<RankedTensorType>(dropout.getX().getType());
  return x.getRank() >= 2 && !x.isDynamicDim(x.getRank() - 1);
}

/// What a loop computes at each element (lruc::group::isPerElement), a
/// fusible scan, a slice of its last dim or a dropout.
bool isFusible(Operation *op) {
  return lruc::group::isPerElement(op) || isFusibleScan(op) ||
         isFusibleSlice(op) || isFusibleDropout(op);
}

/// A sum over every dim but a static last one (lru::FusedOp): it joins the
/// group of the value it sums, as one of that group's results.
bool isFusibleReduction(Operation *op) {
  auto reduce = dyn_cast<lru::ReduceSumOp>(op);
  if (!reduce)
    return false;
  auto x = cast<RankedTensorType>(reduce.getX().getType());
  return x.getRank() >= 2 && !x.isDynamicDim(x.getRank() - 1) &&
         llvm::equal(reduce.getDims(), llvm::seq<int64_t>(0, x.getRank() - 1));
}

/// The shape of the loop `op` is part of: its result's, or for a sum the
/// summed value's.
ArrayRef<int64_t> shapeOf(Operation *op) {
  Value loopValue = isa<lru::ReduceSumOp>(op) ? op->getOperand(0)
                                              : op->getResult(0);
  return cast<RankedTensorType>(loopValue.getType()).getShape();
}

/// Replaces the ops of `group` (in op order, at least two) by one lru.fused
/// placed at `anchor`, a member that every member's outside operands
/// dominate.
void buildGroup(ArrayRef<Operation *> group, Operation *anchor) {
  llvm::SmallPtrSet<Operation *, 16> members(group.begin(), group.end());
  llvm::SetVector<Value> inputs;
  llvm::SetVector<Operation *> constants;
  SmallVector<Value> outputs;
  for (Operation *op : group) {
    for (Value operand : op->getOperands()) {
      if (members.contains(operand.getDefiningOp()))
        continue;
      if (isSplatConstant(operand))
        constants.insert(operand.getDefiningOp());
      else
        inputs.insert(operand);
    }
    Value result = op->getResult(0);
    if (llvm::any_of(result.getUsers(), [&](Operation *user) {
          return !members.contains(user);
        }))
      outputs.push_back(result);
  }

  OpBuilder builder(anchor);
  SmallVector<Type> outputTypes;
  for (Value v : outputs)
    outputTypes.push_back(v.getType());
  auto fused = builder.create<lru::FusedOp>(anchor->getLoc(), outputTypes,
                                            inputs.getArrayRef());
  SmallVector<Location> argLocs(inputs.size(), anchor->getLoc());
  Block *body = builder.createBlock(&fused.getBody(), {},
                                    TypeRange(inputs.getArrayRef()), argLocs);
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body->getArguments());
  for (Operation *constant : constants)
    builder.clone(*constant, mapping);
  for (Operation *op : group)
    builder.clone(*op, mapping);
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(mapping.lookup(v));
  builder.create<lru::YieldOp>(anchor->getLoc(), yielded);

  for (auto [v, replacement] : llvm::zip(outputs, fused.getResults()))
    v.replaceUsesWithIf(replacement, [&](OpOperand &use) {
      return !members.contains(use.getOwner());
    });
  for (Operation *op : llvm::reverse(group))
    op->erase();
  for (Operation *constant : constants)
    if (constant->use_empty())
      constant->erase();
}

/// Whether `members` holds an op of type T.
template <typename T> bool holdsOp(ArrayRef<Operation *> members) {
  return llvm::any_of(members, [](Operation *m) { return isa<T>(m); });
}

struct Group {
  SmallVector<Operation *> members; ///< in op order
  Operation *anchor;                ///< where the group is built
};

/// The groups of `block`.
std::vector<Group> formGroups(Block &block) {
  std::vector<Group> closed;
  // Open groups by shape, and which open group defines each value.
  llvm::MapVector<ArrayRef<int64_t>, SmallVector<Operation *>> open;
  DenseMap<Value, ArrayRef<int64_t>> openValues;
  // Which closed group defines each value: a later op of its shape that
  // reads it may still join it (built at its anchor, so every operand of
  // the op must be available there), e.g. lru.im of a scan after a matmul
  // read the group's lru.re.
  DenseMap<Value, size_t> closedValues;
  // The sums a group computes, by the shape of its open group or the index
  // of its closed one: nothing may join the group that computes a sum it
  // reads (the sum is only ready once the whole loop has run).
  DenseMap<Value, ArrayRef<int64_t>> openSums;
  DenseMap<Value, size_t> closedSums;
  auto close = [&](ArrayRef<int64_t> shape) {
    auto it = open.find(shape);
    for (Operation *op : it->second) {
      Value v = op->getResult(0);
      if (openSums.erase(v)) {
        closedSums[v] = closed.size();
        continue;
      }
      openValues.erase(v);
      closedValues[v] = closed.size();
    }
    Operation *anchor = it->second.back();
    closed.push_back({std::move(it->second), anchor});
    open.erase(it);
  };
  auto availableAt = [&](Value v, size_t group) {
    Operation *anchor = closed[group].anchor;
    if (isa<BlockArgument>(v) || isSplatConstant(v))
      return true;
    if (auto it = closedSums.find(v); it != closedSums.end())
      return it->second != group &&
             closed[it->second].anchor->isBeforeInBlock(anchor);
    if (openSums.count(v))
      return false;
    if (auto it = closedValues.find(v); it != closedValues.end())
      return it->second == group ||
             closed[it->second].anchor->isBeforeInBlock(anchor);
    if (openValues.count(v))
      return false; // built later, at a place not known yet
    return v.getDefiningOp()->isBeforeInBlock(anchor);
  };
  // The closed group of op's shape that op reads and can join, if any.
  auto joinable = [&](Operation &op) -> std::optional<size_t> {
    if (isa<lru::ScanOp>(op))
      return std::nullopt;
    for (Value operand : op.getOperands())
      if (auto it = openValues.find(operand);
          it != openValues.end() && it->second == shapeOf(&op))
        return std::nullopt; // its open group is the better home
    for (Value operand : op.getOperands()) {
      auto it = closedValues.find(operand);
      if (it == closedValues.end() ||
          shapeOf(closed[it->second].members.front()) != shapeOf(&op))
        continue;
      size_t group = it->second;
      if (isa<lru::DropoutMaskOp>(op) &&
          holdsOp<lru::ScanOp>(closed[group].members))
        continue;
      if (llvm::all_of(op.getOperands(),
                       [&](Value v) { return availableAt(v, group); }))
        return group;
    }
    return std::nullopt;
  };
  for (Operation &op : block) {
    // A sum joins the group of what it sums, open or closed (built at its
    // anchor, before the sum's readers).
    if (isFusibleReduction(&op)) {
      Value x = op.getOperand(0);
      if (auto it = openValues.find(x); it != openValues.end()) {
        open[it->second].push_back(&op);
        openSums[op.getResult(0)] = it->second;
        continue;
      }
      if (auto it = closedValues.find(x); it != closedValues.end()) {
        closed[it->second].members.push_back(&op);
        closedSums[op.getResult(0)] = it->second;
        continue;
      }
    }
    bool fusible = isFusible(&op);
    // Close the groups this op reads (for a member, those of other shapes:
    // a broadcast reads a smaller group, which must be built first).
    SmallVector<ArrayRef<int64_t>> readShapes;
    op.walk([&](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        if (auto it = openValues.find(operand); it != openValues.end())
          if (!fusible || it->second != shapeOf(&op))
            readShapes.push_back(it->second);
        if (auto it = openSums.find(operand); it != openSums.end())
          readShapes.push_back(it->second);
      }
    });
    for (ArrayRef<int64_t> shape : readShapes)
      if (open.count(shape))
        close(shape);
    if (fusible)
      if (std::optional<size_t> group = joinable(op)) {
        closed[*group].members.push_back(&op);
        closedValues[op.getResult(0)] = *group;
        continue;
      }
    // One scan a group: a second one starts a group of its own, and so
    // does an input copied for it (copySharedComplexInputs). Its init and
    // lengths (and a constant lambda) come from outside the group.
    // A scan and a dropout are never in one group either.
    auto openMembers = [&](ArrayRef<int64_t> shape) -> ArrayRef<Operation *> {
      auto it = open.find(shape);
      return it == open.end() ? ArrayRef<Operation *>() : it->second;
    };
    auto holdsScan = [&](ArrayRef<int64_t> shape) {
      return holdsOp<lru::ScanOp>(openMembers(shape));
    };
    auto holdsDropout = [&](ArrayRef<int64_t> shape) {
      return holdsOp<lru::DropoutMaskOp>(openMembers(shape));
    };
    if (auto scan = dyn_cast<lru::ScanOp>(&op); scan && fusible) {
      if (holdsScan(shapeOf(&op)) ||
          holdsDropout(shapeOf(&op)) ||
          openValues.count(scan.getInit()) ||
          openValues.count(scan.getLengths()))
        close(shapeOf(&op));
    } else if (isa<lru::DropoutMaskOp>(op) && fusible) {
      if (holdsScan(shapeOf(&op)))
        close(shapeOf(&op));
    } else if (isa<lru::ComplexOp>(op) && op.hasOneUse() &&
               isa<lru::ScanOp>(*op.getUsers().begin()) &&
               isFusible(*op.getUsers().begin()) &&
               (holdsScan(shapeOf(&op)) || holdsDropout(shapeOf(&op)))) {
      close(shapeOf(&op));
    }
    if (fusible) {
      open[shapeOf(&op)].push_back(&op);
      openValues[op.getResult(0)] = shapeOf(&op);
    }
  }
  while (!open.empty())
    close(open.front().first);
  return closed;
}

/// Gives each of the fusible scans reading one lru.complex its own copy, just
/// before the scan (both of the copy's operands are defined before the
/// original, hence before the scan); an original left unread goes.
void copySharedComplexInputs(Block &block) {
  SmallVector<lru::ComplexOp> shared;
  for (Operation &op : block)
    if (auto complex = dyn_cast<lru::ComplexOp>(&op))
      if (!complex->hasOneUse())
        shared.push_back(complex);
  for (lru::ComplexOp complex : shared) {
    SmallVector<lru::ScanOp> scans;
    for (Operation *user : complex->getUsers())
      if (auto scan = dyn_cast<lru::ScanOp>(user);
          scan && isFusibleScan(scan) && scan.getB() == complex.getResult() &&
          scan->getBlock() == &block)
        scans.push_back(scan);
    if (scans.size() < 2)
      continue; // one group holds the value and the scan; no copy needed
    for (lru::ScanOp scan : scans) {
      OpBuilder builder(scan);
      scan.getBMutable().assign(builder.clone(*complex)->getResult(0));
    }
    if (complex->use_empty())
      complex->erase();
  }
}

/// Moves each lru.neg that a matmul reads (the gradient of Re(C x) with
/// respect to Im x is -C_im^T g) to the matmul's result, when only
/// elementwise ops read that or it is a weight's small gradient: the
/// negation then joins their group instead of storing a negated copy of
/// the matmul's operand.
void pushNegationsThroughMatmuls(Block &block) {
  SmallVector<lru::MatmulOp> matmuls;
  for (Operation &op : block)
    if (auto matmul = dyn_cast<lru::MatmulOp>(&op))
      matmuls.push_back(matmul);
  for (lru::MatmulOp matmul : matmuls) {
    // A lone negation of a weight's gradient costs nothing; of a
    // batch-sized product, a pass.
    if (!cast<RankedTensorType>(matmul.getType()).hasStaticShape() &&
        !llvm::all_of(matmul->getUsers(),
                      [](Operation *user) { return isFusible(user); }))
      continue;
    SmallVector<Value> operands(matmul->getOperands());
    int negations = 0;
    for (Value &operand : operands)
      if (auto neg = operand.getDefiningOp<lru::NegOp>()) {
        operand = neg.getX();
        ++negations;
      }
    if (negations == 0)
      continue;
    OpBuilder builder(matmul);
    Operation *product = builder.clone(*matmul);
    product->setOperands(operands);
    Value result = product->getResult(0);
    if (negations == 1) // (-a)(-b) = ab
      result = builder.create<lru::NegOp>(matmul.getLoc(), result);
    matmul.getResult().replaceAllUsesWith(result);
    llvm::SetVector<Operation *> negs;
    for (Value operand : matmul->getOperands())
      if (auto neg = operand.getDefiningOp<lru::NegOp>())
        negs.insert(neg);
    matmul->erase();
    for (Operation *neg : negs)
      if (neg->use_empty())
        neg->erase();
  }
}

/// Splits each sum of every element of a [..., W] value (W static) into a
/// sum over the leading dims, keeping W, then a sum of those W: the first is
/// a sum that joins the group of what it sums (or a backend's sum of many
/// rows at once), where one sum of everything is a single long loop (on a
/// GPU one block: a length mask's count at Path-X, 2 MB, took 0.77 ms).
void splitFullSums(Block &block) {
  SmallVector<lru::ReduceSumOp> full;
  for (Operation &op : block)
    if (auto sum = dyn_cast<lru::ReduceSumOp>(&op)) {
      auto x = cast<RankedTensorType>(sum.getX().getType());
      int64_t rank = x.getRank();
      if (rank >= 2 && !x.isDynamicDim(rank - 1) &&
          llvm::equal(sum.getDims(), llvm::seq<int64_t>(0, rank)))
        full.push_back(sum);
    }
  for (lru::ReduceSumOp sum : full) {
    auto x = cast<RankedTensorType>(sum.getX().getType());
    OpBuilder builder(sum);
    auto leading = llvm::to_vector(llvm::seq<int64_t>(0, x.getRank() - 1));
    Value rows = builder.create<lru::ReduceSumOp>(
        sum.getLoc(), x.clone(x.getShape().take_back()), sum.getX(),
        builder.getDenseI64ArrayAttr(leading));
    Value total = builder.create<lru::ReduceSumOp>(
        sum.getLoc(), sum.getType(), rows, builder.getDenseI64ArrayAttr({0}));
    sum.getResult().replaceAllUsesWith(total);
    sum->erase();
  }
}

struct FuseElementwisePass
    : public lruc::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody()) {
      pushNegationsThroughMatmuls(block);
      splitFullSums(block);
      copySharedComplexInputs(block);
      // A lone scan is a group too: the backends' scan groups are their
      // chunked parallel scans (a scan whose input is a matmul's product,
      // read through lru.view, has no elementwise neighbour).
      for (const Group &group : formGroups(block))
        if (group.members.size() > 1 || isFusibleScan(group.members.front()))
          buildGroup(group.members, group.anchor);
    }
  }
};

} // namespace
