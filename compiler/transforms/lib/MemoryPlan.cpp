//===- MemoryPlan.cpp - Buffers of a function, reused by lifetime ---------===//

#include "lruc/MemoryPlan.h"
#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/STLExtras.h"


using namespace mlir;

namespace lruc {

#define GEN_PASS_DEF_PLANMEMORYPASS
#include "lruc/Transforms/Passes.h.inc"

namespace {

constexpr int64_t kAlignment = 64;

int64_t alignUp(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

} // namespace

int64_t elementBytes(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (auto complex = dyn_cast<ComplexType>(element))
    return 2 * elementBytes(complex.getElementType());
  return int64_t(element.getIntOrFloatBitWidth() / 8);
}

ByteSize bufferSize(Value v, int64_t bytesPerElement) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t bytes = bytesPerElement > 0 ? bytesPerElement
                                      : elementBytes(type.getElementType());
  if (auto group = v.getDefiningOp<lru::FusedOp>())
    if (group.getReduction(cast<OpResult>(v).getResultNumber())) {
      int64_t row = bytes * type.getNumElements();
      int64_t rows = group.getReductionChunksPerExample();
      // A batch-sized loop has `rows` chunks an example, and the row of
      // totals even when B is 0.
      if (group.getLoopType().isDynamicDim(0))
        return ByteSize{alignUp(rows * row), alignUp(row)};
      return ByteSize{0, alignUp(rows * row)};
    }
  bool perExample = false;
  for (int64_t d : type.getShape()) {
    if (ShapedType::isDynamic(d))
      perExample = true;
    else
      bytes *= d;
  }
  bytes = alignUp(bytes);
  return perExample ? ByteSize{bytes, 0} : ByteSize{0, bytes};
}

int64_t MemoryPlan::mostAlive(int64_t batch) const {
  int64_t most = 0;
  for (ByteSize bytes : alive)
    most = std::max(most, bytes.at(batch));
  return most;
}

bool isStored(Value v) {
  return isa<RankedTensorType>(v.getType()) &&
         !v.getDefiningOp<lru::ParamOp>() && !v.getDefiningOp<lru::ViewOp>() &&
         !isa<BlockArgument>(v) && !inPlaceResult(v);
}

std::optional<unsigned> inPlaceResult(Value v) {
  auto result = dyn_cast<OpResult>(v);
  if (!result)
    return std::nullopt;
  auto mark = result.getOwner()->getAttrOfType<DenseI64ArrayAttr>(kInPlaceAttr);
  if (!mark || mark.size() != int64_t(result.getOwner()->getNumResults()) ||
      mark[result.getResultNumber()] < 0)
    return std::nullopt;
  return unsigned(mark[result.getResultNumber()]);
}

llvm::DenseMap<Value, unsigned> inputsWrittenOver(Operation *op,
                                                  func::FuncOp func) {
  llvm::DenseMap<Value, unsigned> written;
  auto multi = cast<lru::MultiTensorOp>(op);
  Block &body = multi.getBody().front();
  llvm::DenseMap<Value, Value> innerOf; // an input -> its body argument
  for (auto [inner, input] : llvm::zip(body.getArguments(), multi.getInputs()))
    innerOf[input] = inner;
  for (auto [n, result] : llvm::enumerate(multi.getResults()))
    if (std::optional<unsigned> r = inPlaceResult(result))
      if (Value inner = innerOf.lookup(updatedArgument(func, *r)))
        written[inner] = unsigned(n);
  return written;
}

BlockArgument updatedArgument(func::FuncOp func, unsigned result) {
  for (NamedAttribute tag : func.getResultAttrs(result))
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), tag.getName()) == tag.getValue())
        return arg;
  return nullptr;
}

Value storageOf(Value v) {
  while (auto view = v.getDefiningOp<lru::ViewOp>())
    v = view.getX();
  return v;
}

MemoryPlan planMemory(func::FuncOp func,
                      llvm::function_ref<ByteSize(Value)> sizeOf) {
  MemoryPlan plan;
  Block &body = func.getBody().front();

  // The position of each top-level op, and each value's last use there.
  llvm::DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = unsigned(i);
  // A view's readers read the buffer of the value it views.
  llvm::DenseMap<Value, unsigned> lastUse;
  for (Operation &op : body)
    for (Value result : op.getResults())
      if (Value stored = storageOf(result); isStored(stored)) {
        unsigned &last =
            lastUse.try_emplace(stored, position[&op]).first->second;
        for (Operation *user : result.getUsers())
          last = std::max(last, position[body.findAncestorOpInBlock(*user)]);
      }

  // A group run as the epilogue of its matmuls (lru.epilogue) may compute
  // one part of its rows while another part's products are still being
  // computed: the matmuls' operands stay alive until the group, so that
  // nothing the group writes lands on them. So may a run of matmuls
  // computed together (lru.together): their operands stay alive until the
  // run's last matmul.
  auto holdOperands = [&](ArrayRef<lru::MatmulOp> matmuls, Operation *until) {
    for (lru::MatmulOp matmul : matmuls)
      for (Value operand : matmul->getOperands())
        if (auto it = lastUse.find(storageOf(operand)); it != lastUse.end())
          it->second = std::max(it->second, position[until]);
  };
  for (auto group : body.getOps<lru::FusedOp>())
    holdOperands(group.getEpilogueMatmuls(), group);
  for (auto matmul : body.getOps<lru::MatmulOp>())
    if (SmallVector<lru::MatmulOp, 2> run = matmul.getTogetherRun();
        run.size() > 1)
      holdOperands(run, run.back());

  // Each stored value's lifetime, from its op to its last use, both
  // included: an op's results never share a slot with its operands.
  struct Lifetime {
    Value value;
    ByteSize size;
    unsigned first, last;
  };
  std::vector<Lifetime> lifetimes;
  for (Operation &op : body)
    for (Value result : op.getResults())
      if (isStored(result)) {
        ByteSize size = sizeOf ? sizeOf(result) : bufferSize(result);
        plan.unplanned.perExample += size.perExample;
        plan.unplanned.fixed += size.fixed;
        lifetimes.push_back(
            {result, size, position[&op], lastUse.lookup(result)});
      }
  plan.alive.assign(position.size(), ByteSize{});
  for (const Lifetime &value : lifetimes)
    for (unsigned at = value.first; at <= value.last; ++at) {
      plan.alive[at].perExample += value.size.perExample;
      plan.alive[at].fixed += value.size.fixed;
    }
  // The largest first, each into the first slot of its kind (batch-sized
  // or fixed) that holds no value alive at the same time, else a new one:
  // a slot's first value is about its largest, so slots rarely grow, and
  // the big values, placed first, share slots among themselves.
  llvm::stable_sort(lifetimes, [](const Lifetime &a, const Lifetime &b) {
    return std::make_pair(a.size.perExample, a.size.fixed) >
           std::make_pair(b.size.perExample, b.size.fixed);
  });
  std::vector<SmallVector<std::pair<unsigned, unsigned>>> taken;
  for (const Lifetime &value : lifetimes) {
    bool batchSized = value.size.perExample > 0;
    auto free = [&](unsigned slot) {
      return (plan.slots[slot].perExample > 0) == batchSized &&
             llvm::none_of(taken[slot], [&](std::pair<unsigned, unsigned> t) {
               return t.first <= value.last && value.first <= t.second;
             });
    };
    unsigned slot = 0;
    while (slot < plan.slots.size() && !free(slot))
      ++slot;
    if (slot == plan.slots.size()) {
      plan.slots.push_back(value.size);
      taken.emplace_back();
    }
    ByteSize &have = plan.slots[slot];
    have.perExample = std::max(have.perExample, value.size.perExample);
    have.fixed = std::max(have.fixed, value.size.fixed);
    taken[slot].push_back({value.first, value.last});
    plan.slotOf[value.value] = slot;
  }

  for (ByteSize slot : plan.slots) {
    plan.offsets.push_back(plan.total);
    plan.total.perExample += slot.perExample;
    plan.total.fixed += slot.fixed;
  }
  return plan;
}

namespace {

constexpr llvm::StringLiteral kBuffersAttr = "lru.buffers";
constexpr llvm::StringLiteral kSlotOffsetsAttr = "lru.slot_offsets";
constexpr llvm::StringLiteral kWorkspaceAttr = "lru.workspace";

struct PlanMemoryPass : impl::PlanMemoryPassBase<PlanMemoryPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MemoryPlan plan = planMemory(func);
    Builder builder(func.getContext());
    for (Operation &op : func.getBody().front()) {
      SmallVector<int64_t> slots;
      bool stored = false;
      for (Value result : op.getResults()) {
        auto it = plan.slotOf.find(result);
        stored |= it != plan.slotOf.end();
        slots.push_back(it != plan.slotOf.end() ? int64_t(it->second) : -1);
      }
      if (stored)
        op.setAttr(kBuffersAttr, builder.getDenseI64ArrayAttr(slots));
    }
    SmallVector<int64_t> offsets;
    for (ByteSize offset : plan.offsets)
      offsets.append({offset.perExample, offset.fixed});
    func->setAttr(kSlotOffsetsAttr, builder.getDenseI64ArrayAttr(offsets));
    func->setAttr(kWorkspaceAttr,
                  builder.getDenseI64ArrayAttr(
                      {plan.total.perExample, plan.total.fixed}));
  }
};

} // namespace

FailureOr<MemoryPlan> readMemoryPlan(func::FuncOp func) {
  auto offsets = func->getAttrOfType<DenseI64ArrayAttr>(kSlotOffsetsAttr);
  auto workspace = func->getAttrOfType<DenseI64ArrayAttr>(kWorkspaceAttr);
  if (!offsets || !workspace || offsets.size() % 2 != 0 ||
      workspace.size() != 2)
    return func.emitError("has no memory plan (run -lru-plan-memory)");
  MemoryPlan plan;
  for (int64_t i = 0; i < offsets.size(); i += 2)
    plan.offsets.push_back({offsets[i], offsets[i + 1]});
  plan.total = {workspace[0], workspace[1]};
  for (Operation &op : func.getBody().front()) {
    auto slots = op.getAttrOfType<DenseI64ArrayAttr>(kBuffersAttr);
    for (OpResult result : op.getResults()) {
      if (!isStored(result))
        continue;
      int64_t slot = slots && slots.size() == int64_t(op.getNumResults())
                         ? slots[result.getResultNumber()]
                         : -1;
      if (slot < 0 || slot >= int64_t(plan.offsets.size()))
        return op.emitError("has a stored result without a planned buffer");
      plan.slotOf[result] = unsigned(slot);
    }
  }
  return plan;
}

} // namespace lruc
