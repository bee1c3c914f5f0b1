//===- Rematerialize.cpp - Cheap group results computed where read ------===//
//
// A batch-sized result of an lru.fused group costs a pass over memory to
// store and one for each group that reads it back. When the result is a
// short elementwise function of values the reading group loads anyway
// (its own full-size inputs) and of smaller ones (a bias, a per-row mask, a
// scalar), the reading group computes it again from those instead: a
// broadcast of a parameter or of the length mask, the sigmoid's s(1 - s),
// a masked copy. When a group is a result's only reader, it may also load
// one other full-size value of the result's type instead (x for x * mask,
// where x is stored anyway or is the producer's input): a load for a load,
// and the result is not stored. Two results that only one group reads may
// both be computed there from one full-size value of their bytes (the
// GLU's value and sigmoid(gate) from its product's complex pairs). A result
// that no group reads any more leaves its group.
// Likewise a lone lru.shift read by scan groups over the same sequences
// becomes a read of the shifted input a step away inside them. Last, a
// broadcast takes its result's shape from an input its group loads
// rather than from one the group would read for nothing else.
//
//===----------------------------------------------------------------------===//

#include "GroupRules.h"
#include "lruc/MemoryPlan.h"
#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SetVector.h"

namespace lruc {
#define GEN_PASS_DEF_REMATERIALIZEPASS
#include "lruc/Transforms/Passes.h.inc"
} // namespace lruc

using namespace mlir;

namespace {

/// The most ops a reading group computes again for one value, splat
/// constants aside (they cost nothing): the chains above are 1-6 ops (the
/// sigmoid's s(1 - s) from its pre-activation and bias: broadcast, add,
/// sigmoid, broadcast of 1, sub, mul); a longer one is rather a
/// computation worth storing.
constexpr size_t kMaxSliceOps = 6;

/// An op a group may compute again anywhere its inputs are: what a loop
/// computes per element, or a splat constant (never a scan or a sum).
bool isRecomputable(Operation *op) {
  return lruc::group::isPerElement(op) ||
         lruc::group::isSplatConstant(op->getResult(0));
}

/// How a reading group computes a producer's result again: the ops of the
/// producer's body that compute it (in body order), and where they start:
/// the producer's block arguments (its inputs) and body values that the
/// producer yields as other results the reader reads anyway (each with
/// that result).
struct Slice {
  llvm::SetVector<Operation *> ops;
  llvm::SetVector<BlockArgument> arguments;
  llvm::DenseMap<Value, Value> readResults; ///< body value -> its result
};

/// The slice computing `v` in `producer` for `reader`, or nothing when one
/// of its ops may not be computed again or there are too many. It starts
/// at the producer's results that the reader reads, or with
/// `fromStoredResults` at any of its results that something reads (stored
/// anyway).
std::optional<Slice> sliceOf(lru::FusedOp producer, Value v,
                             lru::FusedOp reader, bool fromStoredResults) {
  Operation *yield = producer.getBody().front().getTerminator();
  // The producer's result that yields `body` where the slice starts.
  auto resultRead = [&](Value body) -> Value {
    for (OpOperand &operand : yield->getOpOperands()) {
      Value result = producer->getResult(operand.getOperandNumber());
      if (operand.get() == body &&
          (llvm::is_contained(reader->getOperands(), result) ||
           (fromStoredResults && !result.use_empty())))
        return result;
    }
    return {};
  };
  Slice slice;
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Operation *, 8> seen;
  size_t computed = 0; // ops in `seen` that are not splat constants
  while (!work.empty()) {
    Value next = work.pop_back_val();
    if (auto argument = dyn_cast<BlockArgument>(next)) {
      slice.arguments.insert(argument);
      continue;
    }
    if (Value result = next != v ? resultRead(next) : Value()) {
      slice.readResults[next] = result;
      continue;
    }
    Operation *op = next.getDefiningOp();
    if (!seen.insert(op).second)
      continue;
    if (!lruc::group::isSplatConstant(op->getResult(0)))
      ++computed;
    if (!isRecomputable(op) || computed > kMaxSliceOps)
      return std::nullopt;
    if (auto broadcast = dyn_cast<lru::BroadcastOp>(op))
      work.push_back(broadcast.getX()); // `like` only gives the shape
    else
      llvm::append_range(work, op->getOperands());
  }
  SmallVector<Operation *> ordered(seen.begin(), seen.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  slice.ops.insert(ordered.begin(), ordered.end());
  return slice;
}

/// Whether `use` reads only its value's shape: a broadcast's `like`.
bool isShapeUse(OpOperand &use) {
  auto broadcast = dyn_cast<lru::BroadcastOp>(use.getOwner());
  return broadcast && use.get() == broadcast.getLike() &&
         use.get() != broadcast.getX();
}

/// Whether `group` reads its input `argument` only for a broadcast's
/// result shape (its `like`), never a value of it.
bool readsShapeOnly(BlockArgument argument) {
  return !argument.use_empty() && llvm::all_of(argument.getUses(), isShapeUse);
}

/// Whether a group reads its block argument `argument` only at the element
/// its loop is at: elementwise ops, sums and the yield use it, and
/// broadcasts for their result's shape (`like`), not a broadcast of it
/// (which would mean a loop of another shape).
bool readsPerElement(BlockArgument argument) {
  return llvm::all_of(argument.getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    if (isa<lru::BroadcastOp>(user))
      return isShapeUse(use);
    return isa<lru::YieldOp, lru::ReduceSumOp>(user) ||
           user->hasTrait<OpTrait::Elementwise>();
  });
}

/// The operand index of `v` among `group`'s inputs, if it reads it.
std::optional<unsigned> inputIndex(lru::FusedOp group, Value v) {
  for (OpOperand &operand : group->getOpOperands())
    if (operand.get() == v)
      return operand.getOperandNumber();
  return std::nullopt;
}

/// The block argument through which `group` reads `v`, a new input if it
/// did not read it.
BlockArgument argumentOf(lru::FusedOp group, Value v) {
  Block &body = group.getBody().front();
  if (std::optional<unsigned> index = inputIndex(group, v))
    return body.getArgument(*index);
  group->insertOperands(group->getNumOperands(), v);
  return body.addArgument(v.getType(), v.getLoc());
}

/// The groups that read `v`.
llvm::SetVector<lru::FusedOp> readersOf(Value v) {
  llvm::SetVector<lru::FusedOp> readers;
  for (Operation *user : v.getUsers())
    if (auto reader = dyn_cast<lru::FusedOp>(user))
      readers.insert(reader);
  return readers;
}

/// Makes `group` use `value` (computed in its body) where it read its input
/// `index`, which it then no longer reads.
void replaceInput(lru::FusedOp group, unsigned index, Value value) {
  Block &body = group.getBody().front();
  body.getArgument(index).replaceAllUsesWith(value);
  body.eraseArgument(index);
  group->eraseOperand(index);
}

bool cloneInReader(lru::FusedOp producer, const Slice &slice, Value yielded,
                   lru::FusedOp reader, unsigned readIndex);

/// Computes `result` (of `producer`) inside `reader` instead of reading it,
/// if `reader` loads every full-size value that computation reads; or, when
/// `reader` is the result's only reader, if the computation reads one
/// full-size value of the result's type that `reader` does not load and
/// the producer stores anyway (a masked copy x * mask read as x): a load for
/// a load, and the result is not stored. Returns whether it did.
bool computeInReader(lru::FusedOp producer, OpResult result,
                     lru::FusedOp reader, bool swapLoad) {
  auto loopType = cast<RankedTensorType>(result.getType());
  std::optional<unsigned> readIndex = inputIndex(reader, result);
  Block &readerBody = reader.getBody().front();
  // An input read only for its shape is rather replaced by a loaded one
  // (takeShapesFromLoadedInputs) than computed.
  if (!readIndex || !readsPerElement(readerBody.getArgument(*readIndex)) ||
      readsShapeOnly(readerBody.getArgument(*readIndex)))
    return false;
  if (swapLoad && !result.hasOneUse())
    return false;
  Operation *yield = producer.getBody().front().getTerminator();
  Value yielded = yield->getOperand(result.getResultNumber());
  std::optional<Slice> slice = sliceOf(producer, yielded, reader, swapLoad);
  if (!slice)
    return false;
  // Each block argument of the slice is an input of the producer. The
  // full-size values the slice starts at (of the loop's shape, real or
  // complex) that the reader does not load: none, or with `swapLoad` one
  // of the result's type.
  SmallVector<Value> newLoads;
  for (BlockArgument argument : slice->arguments) {
    Value outside = producer->getOperand(argument.getArgNumber());
    if (cast<ShapedType>(outside.getType()).getShape() ==
            loopType.getShape() &&
        !inputIndex(reader, outside))
      newLoads.push_back(outside);
  }
  for (auto [body, stored] : slice->readResults)
    if (!inputIndex(reader, stored))
      newLoads.push_back(stored);
  if (newLoads.size() > (swapLoad ? 1u : 0u) ||
      llvm::any_of(newLoads,
                   [&](Value v) { return v.getType() != result.getType(); }))
    return false;

  return cloneInReader(producer, *slice, yielded, reader, *readIndex);
}

/// Clones `slice` (computing the producer's body value `yielded`) into
/// `reader`, which then reads it there instead of its input `readIndex`.
/// Fails, changing nothing, when a broadcast in the slice has no input of
/// its shape in the reader to take that shape from.
bool cloneInReader(lru::FusedOp producer, const Slice &slice, Value yielded,
                   lru::FusedOp reader, unsigned readIndex) {
  Block &readerBody = reader.getBody().front();
  // A broadcast's `like` (only its shape is read): a reader's input of
  // that shape other than the value replaced.
  BlockArgument replaced = readerBody.getArgument(readIndex);
  IRMapping mapping;
  for (Operation *op : slice.ops) {
    auto broadcast = dyn_cast<lru::BroadcastOp>(op);
    if (!broadcast)
      continue;
    auto shape = cast<ShapedType>(broadcast.getLike().getType()).getShape();
    auto sameShape = llvm::find_if(
        readerBody.getArguments(), [&](BlockArgument argument) {
          auto type = dyn_cast<ShapedType>(argument.getType());
          return argument != replaced && type && type.getShape() == shape;
        });
    if (sameShape == readerBody.args_end())
      return false;
    mapping.map(broadcast.getLike(), *sameShape);
  }
  for (auto [body, read] : slice.readResults)
    mapping.map(body, argumentOf(reader, read));
  for (BlockArgument argument : slice.arguments)
    mapping.map(argument,
                argumentOf(reader, producer->getOperand(argument.getArgNumber())));
  OpBuilder builder = OpBuilder::atBlockBegin(&readerBody);
  for (Operation *op : slice.ops)
    builder.clone(*op, mapping);
  replaceInput(reader, readIndex, mapping.lookup(yielded));
  return true;
}

/// Computes together, inside `reader`, the producer's results that only
/// `reader` reads, when the full-size values they are computed from cost
/// no more to load than they do: the GLU's value and sigmoid(gate), two
/// real values of one complex product (interleaved, as one GEMM writes
/// them), read as that product. Neither is stored then. For pairs of
/// results that one value computes (computeInReader takes one at a time).
bool computeResultsInReader(lru::FusedOp producer, lru::FusedOp reader) {
  Block &readerBody = reader.getBody().front();
  Operation *yield = producer.getBody().front().getTerminator();
  struct Candidate {
    OpResult result;
    Slice slice;
  };
  SmallVector<Candidate> candidates;
  for (OpResult result : producer->getResults()) {
    if (!lruc::group::isBatchSized(result) || !result.hasOneUse() ||
        result.getUses().begin()->getOwner() != reader.getOperation())
      continue;
    std::optional<unsigned> readIndex = inputIndex(reader, result);
    if (!readsPerElement(readerBody.getArgument(*readIndex)) ||
        readsShapeOnly(readerBody.getArgument(*readIndex)))
      continue;
    std::optional<Slice> slice =
        sliceOf(producer, yield->getOperand(result.getResultNumber()), reader,
                /*fromStoredResults=*/false);
    if (slice)
      candidates.push_back({result, std::move(*slice)});
  }
  if (candidates.size() < 2)
    return false;
  auto loopShape = cast<ShapedType>(candidates.front().result.getType())
                       .getShape();
  int64_t storedBytes = 0;
  llvm::SetVector<Value> newLoads;
  for (const Candidate &candidate : candidates) {
    if (cast<ShapedType>(candidate.result.getType()).getShape() != loopShape)
      return false;
    storedBytes += lruc::elementBytes(candidate.result.getType());
    // Starting at another candidate would keep that one stored.
    for (auto [body, read] : candidate.slice.readResults)
      if (llvm::any_of(candidates, [&, read = read](const Candidate &c) {
            return c.result == read;
          }))
        return false;
    for (BlockArgument argument : candidate.slice.arguments) {
      Value outside = producer->getOperand(argument.getArgNumber());
      if (cast<ShapedType>(outside.getType()).getShape() == loopShape &&
          !inputIndex(reader, outside))
        newLoads.insert(outside);
    }
  }
  int64_t loadedBytes = 0;
  for (Value load : newLoads)
    loadedBytes += lruc::elementBytes(load.getType());
  if (newLoads.empty() || loadedBytes > storedBytes)
    return false;
  bool changed = false;
  for (const Candidate &candidate : candidates)
    changed |= cloneInReader(
        producer, candidate.slice,
        yield->getOperand(candidate.result.getResultNumber()), reader,
        *inputIndex(reader, candidate.result));
  return changed;
}

/// Moves a lone lru.shift into the scan groups that read it per element
/// over the same sequences (the backward pass's previous states, for the
/// gradient of λ): their loop walks time, so the previous step is a read
/// of the shifted input. The shift goes when nothing else reads it.
void shiftInReaders(lru::ShiftOp shift) {
  for (lru::FusedOp reader : readersOf(shift.getResult())) {
    lru::ScanOp scan = reader.getScan();
    std::optional<unsigned> readIndex = inputIndex(reader, shift.getResult());
    Block &body = reader.getBody().front();
    if (!scan || scan.getType() != shift.getType() ||
        !readsPerElement(body.getArgument(*readIndex)))
      continue;
    // The scan's lengths: one of the reader's inputs, or none.
    Value scanLengths = scan.getLengths();
    Value lengths = scanLengths ? reader->getOperand(
                                      cast<BlockArgument>(scanLengths)
                                          .getArgNumber())
                                : Value();
    if (lengths != shift.getLengths())
      continue;
    IRMapping mapping;
    for (Value operand : shift->getOperands())
      mapping.map(operand, argumentOf(reader, operand));
    OpBuilder builder = OpBuilder::atBlockBegin(&body);
    replaceInput(reader, *readIndex,
                 builder.clone(*shift, mapping)->getResult(0));
  }
  if (shift->use_empty())
    shift->erase();
}

struct RematerializePass
    : public lruc::impl::RematerializePassBase<RematerializePass> {
  void runOnOperation() override {
    SmallVector<lru::FusedOp> groups;
    getOperation().walk([&](lru::FusedOp group) {
      if (isa<func::FuncOp>(group->getParentOp()))
        groups.push_back(group);
    });
    // In op order: a group reading an earlier group's recomputed value
    // may pass it on, through its own inputs, to a later one.
    for (lru::FusedOp group : groups) {
      for (OpResult result : group->getResults()) {
        if (!lruc::group::isBatchSized(result))
          continue;
        for (lru::FusedOp reader : readersOf(result))
          if (!computeInReader(group, result, reader, /*swapLoad=*/false))
            computeInReader(group, result, reader, /*swapLoad=*/true);
      }
      llvm::SetVector<lru::FusedOp> readers;
      for (OpResult result : group->getResults()) {
        llvm::SetVector<lru::FusedOp> of = readersOf(result);
        readers.insert(of.begin(), of.end());
      }
      for (lru::FusedOp reader : readers)
        computeResultsInReader(group, reader);
      lruc::group::dropUnreadResults(group);
    }
    groups.clear();
    getOperation().walk([&](lru::FusedOp group) {
      if (isa<func::FuncOp>(group->getParentOp()))
        groups.push_back(group);
    });
    for (lru::FusedOp group : groups)
      lruc::group::takeShapesFromLoadedInputs(group);
    // A later group computing a value again may have left an earlier
    // group's result unread after that group was visited: last first, so
    // that a group dropping an input before its producer is visited.
    for (lru::FusedOp group : llvm::reverse(groups))
      lruc::group::dropUnreadResults(group);
    SmallVector<lru::ShiftOp> shifts;
    getOperation().walk([&](lru::ShiftOp shift) {
      if (isa<func::FuncOp>(shift->getParentOp()))
        shifts.push_back(shift);
    });
    for (lru::ShiftOp shift : shifts)
      shiftInReaders(shift);
  }
};

} // namespace

// Declared in GroupRules.h: the fusion passes share it.
lru::FusedOp lruc::group::dropUnreadResults(lru::FusedOp group) {
  SmallVector<unsigned> kept;
  for (OpResult result : group->getResults())
    if (!result.use_empty())
      kept.push_back(result.getResultNumber());
  if (kept.size() == group->getNumResults())
    return group;
  Block &body = group.getBody().front();
  Operation *yield = body.getTerminator();
  SmallVector<Value> yielded;
  SmallVector<Type> types;
  for (unsigned index : kept) {
    yielded.push_back(yield->getOperand(index));
    types.push_back(group->getResult(index).getType());
  }
  OpBuilder builder(group);
  auto rebuilt =
      builder.create<lru::FusedOp>(group.getLoc(), types, group->getOperands());
  rebuilt->setAttrs(group->getAttrs());
  rebuilt.getBody().takeBody(group.getBody());
  yield->setOperands(yielded);
  for (auto [index, newResult] : llvm::zip(kept, rebuilt->getResults()))
    group->getResult(index).replaceAllUsesWith(newResult);
  group->erase();
  Block &newBody = rebuilt.getBody().front();
  SmallVector<Operation *> bodyOps;
  for (Operation &op : newBody.without_terminator())
    bodyOps.push_back(&op);
  for (Operation *op : llvm::reverse(bodyOps))
    if (op->use_empty())
      op->erase();
  for (unsigned index = newBody.getNumArguments(); index-- > 0;)
    if (newBody.getArgument(index).use_empty()) {
      newBody.eraseArgument(index);
      rebuilt->eraseOperand(index);
    }
  if (kept.empty()) {
    rebuilt->erase();
    return nullptr;
  }
  return rebuilt;
}

// Declared in GroupRules.h.
void lruc::group::takeShapesFromLoadedInputs(lru::FusedOp group) {
  Block &body = group.getBody().front();
  for (unsigned index = body.getNumArguments(); index-- > 0;) {
    BlockArgument argument = body.getArgument(index);
    if (!readsShapeOnly(argument))
      continue;
    auto shape = cast<ShapedType>(argument.getType()).getShape();
    auto loaded = llvm::find_if(body.getArguments(), [&](BlockArgument other) {
      return other != argument && !other.use_empty() &&
             !readsShapeOnly(other) &&
             cast<ShapedType>(other.getType()).getShape() == shape;
    });
    if (loaded == body.args_end())
      continue;
    argument.replaceAllUsesWith(*loaded);
    body.eraseArgument(index);
    group->eraseOperand(index);
  }
}
