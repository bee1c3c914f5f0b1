//===- Recompute.cpp - Recompute values instead of keeping them ---------===//
//
// For each batch-sized result of an elementwise op or lru.fused group that
// is read early and again after a long gap, finds how to compute it again
// at the late reads from values that are alive there anyway: in a group,
// the slice of its body that leads to the result, stopping at inputs that
// are still alive and at other results of the group that are kept (a
// scan's states, kept for the backward pass, give back their Re and Im).
// With `states`, a scan's states too: the slice runs the scan again, and
// an input product of the scan that is gone by then (b = B u) is computed
// again from its operands first, only where that shrinks the workspace
// (the memory plan of copies of the function with and without each: a
// scan's states are the largest value a layer keeps, and recomputing them
// adds the product's buffer). Reads through an `lru.view` count where
// the view is read. Decides with the function's original liveness, then
// builds each copy just before its first late reader; a copy reads the
// copy of an input that was itself recomputed before that point.
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
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <functional>
#include <optional>

namespace lruc {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "lruc/Transforms/Passes.h.inc"
} // namespace lruc

using namespace mlir;

namespace {

/// Always available: nothing to keep alive for it.
bool isFree(Value v) {
  return isa<BlockArgument>(v) ||
         isa_and_nonnull<lru::ParamOp, arith::ConstantOp>(v.getDefiningOp());
}

/// How to compute a value again: ops (a group's body ops, in order, or a
/// lone op) over outside values (`inputs`), and the value among their
/// results. `producers`: top-level ops (a matmul and its view) computing
/// inputs that are gone by then, computed again first.
struct Slice {
  llvm::SetVector<Operation *> producers;
  llvm::SetVector<Operation *> ops;
  llvm::SetVector<Value> inputs;
  DenseMap<Value, Value> outside; ///< body value -> the outside value it is
  Value result;
  bool throughScan = false; ///< computes a scan again (`states`)
};

/// A read of a value, directly or through a view of it (`via`).
struct Read {
  OpOperand *use;
  lru::ViewOp via;
};

struct Plan {
  Slice slice;
  Value original;               ///< the value computed again
  Operation *firstLate;         ///< the copy goes before it
  llvm::SmallVector<Read> late; ///< the reads to redirect
};

/// The plans for one function: which values to compute again, and the
/// copies that do.
class Recomputation {
public:
  Recomputation(func::FuncOp func, bool states, unsigned minGap)
      : body(func.getBody().front()), states(states), minGap(minGap) {}

  /// Every value worth computing again, in the order of the originals.
  std::vector<Plan> collect();
  /// Builds the copies of `plans` (collect's, or some of them, in order)
  /// and redirects the late reads to them.
  void apply(std::vector<Plan> &plans);

private:
  Block &body;
  bool states;
  unsigned minGap;
};

std::vector<Plan> Recomputation::collect() {
  llvm::DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = unsigned(i);
  auto topPosition = [&](Operation *user) {
    return position.lookup(body.findAncestorOpInBlock(*user));
  };
  // A view reads the viewed value's buffer: it is alive while the view is.
  std::function<bool(Value, unsigned)> aliveAt = [&](Value v, unsigned at) {
    if (isFree(v))
      return true;
    return llvm::any_of(v.getUsers(), [&](Operation *user) {
      if (auto view = dyn_cast<lru::ViewOp>(user);
          view && view->getBlock() == &body)
        return aliveAt(view.getResult(), at);
      return topPosition(user) >= at;
    });
  };

  // What a copy at `at` may read: a value alive there anyway, or one
  // without a batch dim (λ from the parameters), small enough to keep.
  auto readableAt = [&](Value v, unsigned at) {
    return !lruc::group::isBatchSized(v) || aliveAt(v, at);
  };

  // How to compute a scan's input product again at `at`: a matmul (and
  // the view of its result the scan reads) whose operands are alive.
  auto producersOf =
      [&](Value input,
          unsigned at) -> std::optional<SmallVector<Operation *, 2>> {
    SmallVector<Operation *, 2> chain;
    Operation *def = input.getDefiningOp();
    if (auto view = dyn_cast_or_null<lru::ViewOp>(def)) {
      chain.push_back(view);
      def = view.getX().getDefiningOp();
    }
    auto product = dyn_cast_or_null<lru::MatmulOp>(def);
    if (!product || !llvm::all_of(product->getOperands(),
                                  [&](Value v) { return readableAt(v, at); }))
      return std::nullopt;
    chain.insert(chain.begin(), product);
    return chain;
  };

  // The slice that computes result `index` of `op` at position `at` from
  // values alive there, if there is one (through a scan only with
  // `states`).
  auto sliceOf = [&](Operation &op, unsigned index,
                     unsigned at) -> std::optional<Slice> {
    Slice slice;
    auto group = dyn_cast<lru::FusedOp>(op);
    if (!group) {
      if (!op.hasTrait<OpTrait::Elementwise>() || op.getNumResults() != 1)
        return std::nullopt;
      for (Value input : op.getOperands()) {
        if (!readableAt(input, at))
          return std::nullopt;
        slice.inputs.insert(input);
        slice.outside[input] = input;
      }
      slice.ops.insert(&op);
      slice.result = op.getResult(0);
      return slice;
    }
    Block &groupBody = group.getBody().front();
    auto yield = cast<lru::YieldOp>(groupBody.getTerminator());
    // Another kept result of the group stands in for its body value.
    DenseMap<Value, Value> keptResult;
    for (auto [j, v] : llvm::enumerate(yield.getValues()))
      if (j != index && aliveAt(group.getResult(j), at))
        keptResult.try_emplace(v, group.getResult(j));
    llvm::SmallPtrSet<Operation *, 16> needed;
    // A product is computed again only for a scan's states, where the
    // buffer saved is the size of the product.
    bool throughScan = false;
    SmallVector<Value> work = {yield.getValues()[index]};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (slice.outside.count(v))
        continue;
      // Inputs in the order the walk meets them: the copy's operands
      // do not depend on where values happen to live.
      if (Value kept = keptResult.lookup(v)) {
        slice.outside[v] = kept;
        slice.inputs.insert(kept);
        continue;
      }
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        Value input = group.getInputs()[arg.getArgNumber()];
        if (!readableAt(input, at)) {
          if (!states)
            return std::nullopt;
          auto chain = producersOf(input, at);
          if (!chain)
            return std::nullopt;
          slice.producers.insert(chain->begin(), chain->end());
        }
        slice.outside[v] = input;
        slice.inputs.insert(input);
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (isa<lru::ScanOp>(def)) {
        if (!states)
          return std::nullopt;
        throughScan = true;
      }
      if (needed.insert(def).second)
        for (Value operand : def->getOperands())
          work.push_back(operand);
    }
    if (!slice.producers.empty() && !throughScan)
      return std::nullopt;
    slice.throughScan = throughScan;
    for (Operation &inner : groupBody.without_terminator())
      if (needed.contains(&inner))
        slice.ops.insert(&inner);
    slice.result = yield.getValues()[index];
    return slice;
  };

  std::vector<Plan> plans;
  for (Operation &op : body) {
    if (!isa<lru::FusedOp>(op) && !op.hasTrait<OpTrait::Elementwise>())
      continue;
    for (OpResult result : op.getResults()) {
      if (!lruc::group::isBatchSized(result))
        continue;
      // A view's readers read the value: each is early or late itself.
      llvm::SmallVector<Read> reads;
      for (OpOperand &use : result.getUses()) {
        auto view = dyn_cast<lru::ViewOp>(use.getOwner());
        if (!view || view->getBlock() != &body) {
          reads.push_back({&use, nullptr});
          continue;
        }
        for (OpOperand &viewUse : view.getResult().getUses())
          reads.push_back({&viewUse, view});
      }
      if (reads.size() < 2)
        continue;
      llvm::stable_sort(reads, [&](const Read &a, const Read &b) {
        return topPosition(a.use->getOwner()) < topPosition(b.use->getOwner());
      });
      // The widest gap between consecutive reads splits early from late.
      unsigned gap = 0, split = 0, previous = position[&op];
      for (auto [i, read] : llvm::enumerate(reads)) {
        unsigned at = topPosition(read.use->getOwner());
        if (i > 0 && at - previous > gap) {
          gap = at - previous;
          split = unsigned(i);
        }
        previous = at;
      }
      if (split == 0 || gap < minGap)
        continue;
      Operation *firstLate =
          body.findAncestorOpInBlock(*reads[split].use->getOwner());
      std::optional<Slice> slice =
          sliceOf(op, result.getResultNumber(), position[firstLate]);
      if (!slice || slice->ops.empty())
        continue;
      plans.push_back({std::move(*slice),
                       result,
                       firstLate,
                       {reads.begin() + split, reads.end()}});
    }
  }
  return plans;
}

void Recomputation::apply(std::vector<Plan> &plans) {

  // Copies in order of the originals, so a copy can read an earlier one.
  llvm::DenseMap<Value, std::pair<Value, Operation *>> copyOf;
  auto copyBefore = [&](Value v, Operation *point) {
    auto it = copyOf.find(v);
    return it != copyOf.end() && it->second.second->isBeforeInBlock(point)
               ? it->second.first
               : v;
  };
  // A product computed again serves every copy that reads it (a
  // bidirectional LRU's two scans of one B u): it goes before the first.
  llvm::DenseMap<Operation *, Operation *> productPoint, productCopy;
  for (Plan &plan : plans)
    for (Operation *producer : plan.slice.producers) {
      Operation *&point = productPoint[producer];
      if (!point || plan.firstLate->isBeforeInBlock(point))
        point = plan.firstLate;
    }
  for (Plan &plan : plans) {
    OpBuilder builder(plan.firstLate);
    auto outsideValue = [&](Value v) { return copyBefore(v, plan.firstLate); };
    Slice &slice = plan.slice;
    IRMapping produced;
    for (Operation *producer : slice.producers) {
      Operation *&copied = productCopy[producer];
      if (!copied) {
        Operation *point = productPoint.lookup(producer);
        IRMapping mapping;
        for (Value operand : producer->getOperands())
          mapping.map(operand,
                      produced.lookupOrDefault(copyBefore(operand, point)));
        OpBuilder atPoint(point);
        copied = atPoint.clone(*producer, mapping);
      }
      produced.map(producer->getResult(0), copied->getResult(0));
    }
    Value copy;
    Operation *first = slice.ops.front();
    if (!isa<lru::FusedOp>(first->getParentOp())) {
      // A lone elementwise op.
      IRMapping mapping;
      for (Value input : first->getOperands())
        mapping.map(input, outsideValue(input));
      copy = builder.clone(*first, mapping)->getResult(0);
    } else {
      SmallVector<Value> inputs;
      for (Value input : slice.inputs)
        inputs.push_back(produced.lookupOrDefault(outsideValue(input)));
      auto group = builder.create<lru::FusedOp>(
          first->getLoc(), TypeRange{slice.result.getType()}, inputs);
      SmallVector<Location> locs(inputs.size(), first->getLoc());
      Block *groupBody =
          builder.createBlock(&group.getBody(), {}, TypeRange(inputs), locs);
      IRMapping mapping;
      ArrayRef<Value> order = slice.inputs.getArrayRef();
      for (auto [v, input] : slice.outside)
        mapping.map(v, groupBody->getArgument(
                           unsigned(llvm::find(order, input) - order.begin())));
      for (Operation *inner : slice.ops)
        builder.clone(*inner, mapping);
      builder.create<lru::YieldOp>(first->getLoc(),
                                   mapping.lookup(slice.result));
      copy = group.getResult(0);
      builder.setInsertionPoint(plan.firstLate);
    }
    // A read through a view reads a view of the copy, one per view.
    llvm::DenseMap<Operation *, Value> viewOfCopy;
    for (Read &read : plan.late) {
      if (!read.via) {
        read.use->set(copy);
        continue;
      }
      Value &view = viewOfCopy[read.via];
      if (!view)
        view = builder
                   .create<lru::ViewOp>(read.via.getLoc(), read.via.getType(),
                                        copy)
                   .getResult();
      read.use->set(view);
    }
    copyOf[plan.original] = {copy, copy.getDefiningOp()};
  }
}

/// The workspace of `func` (the memory plan's, at a batch where the values
/// of a batch outweigh the rest) after the plans of `Recomputation::collect`
/// on a copy of it, a scan's states only where `keepStates(i)` for the
/// i-th such plan.
int64_t workspaceWith(func::FuncOp func, unsigned minGap,
                      llvm::function_ref<bool(unsigned)> keepStates) {
  constexpr int64_t kBatch = 256;
  OwningOpRef<func::FuncOp> copy = func.clone();
  Recomputation recomputation(*copy, /*states=*/true, minGap);
  std::vector<Plan> plans = recomputation.collect();
  unsigned i = 0;
  llvm::erase_if(plans, [&](const Plan &plan) {
    return plan.slice.throughScan && !keepStates(i++);
  });
  recomputation.apply(plans);
  return lruc::planMemory(*copy).total.at(kBatch);
}

struct RecomputePass : lruc::impl::RecomputePassBase<RecomputePass> {
  using RecomputePassBase::RecomputePassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Recomputation recomputation(func, states, minGap);
    std::vector<Plan> plans = recomputation.collect();
    if (states && statesWhereSmaller)
      chooseStates(func, plans);
    recomputation.apply(plans);
  }

  /// Keeps the plans that recompute a scan's states only where they shrink
  /// the workspace: none when all of them do not (a model of one LRU layer,
  /// whose states are alive at the backward pass's peak anyway), else
  /// those without which it would grow (each dropped in turn, in order).
  void chooseStates(func::FuncOp func, std::vector<Plan> &plans) {
    unsigned count = unsigned(llvm::count_if(
        plans, [](const Plan &plan) { return plan.slice.throughScan; }));
    if (count == 0)
      return;
    std::vector<bool> keep(count, true);
    auto kept = [&](unsigned i) -> bool { return keep[i]; };
    const int64_t all = workspaceWith(func, minGap, kept);
    const int64_t none =
        workspaceWith(func, minGap, [](unsigned) { return false; });
    if (all >= none) {
      keep.assign(count, false);
    } else {
      for (unsigned i = 0; i < count; ++i) {
        keep[i] = false;
        if (workspaceWith(func, minGap, kept) > all)
          keep[i] = true;
      }
    }
    unsigned i = 0;
    llvm::erase_if(plans, [&](const Plan &plan) {
      return plan.slice.throughScan && !keep[i++];
    });
  }
};

} // namespace
