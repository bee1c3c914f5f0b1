//===- GpuStorage.cpp - Which values the CUDA kernels keep in bfloat16 ---===//

#include "GpuStorage.h"

#include "lru/LRUOps.h"

#include "mlir/IR/BuiltinTypes.h"

#include <functional>

using namespace mlir;

namespace lruc {
namespace {

/// f32 or complex<f32> elements.
bool isFloat(RankedTensorType type) {
  Type element = type.getElementType();
  if (auto complex = dyn_cast<ComplexType>(element))
    element = complex.getElementType();
  return element.isF32();
}

/// A stored activation that grows with the batch and the sequence.
bool isSequenceSized(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getRank() >= 3 && type.isDynamicDim(0) && isFloat(type) &&
         isStored(v);
}

/// A stored weight that only matmuls read (through views): the LRU's
/// B and C and the GLU's weights as one matrix each, which a kernel
/// assembles from the parameters every call.
bool isMatmulWeight(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getNumDynamicDims() != 0 || !isFloat(type) ||
      !isStored(v) || v.use_empty())
    return false;
  std::function<bool(Value)> onlyMatmuls = [&](Value x) {
    return llvm::all_of(x.getUsers(), [&](Operation *user) {
      if (auto view = dyn_cast<lru::ViewOp>(user))
        return onlyMatmuls(view.getResult());
      return isa<lru::MatmulOp>(user);
    });
  };
  return onlyMatmuls(v);
}

/// A parameter, as a function reads it: an argument the caller's parameter
/// block holds (@train_step's), or an lru.param value (the other
/// functions'). A bfloat16 GEMM reads its bfloat16 copy (a shadow).
bool isParameter(func::FuncOp func, Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getNumDynamicDims() != 0 || !type.getElementType().isF32())
    return false;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner()->getParentOp() == func.getOperation() &&
           func.getArgAttr(arg.getArgNumber(), "lru.param");
  return bool(v.getDefiningOp<lru::ParamOp>());
}

/// A caller's input zeroed past each length (lru.masked of an argument,
/// alone or as a fused group's result): kept as precise as the caller gave
/// it.
bool isMaskedInput(func::FuncOp func, Value v) {
  auto isArgumentOf = [](Value x, Operation *parent) {
    auto arg = dyn_cast<BlockArgument>(x);
    return arg && arg.getOwner()->getParentOp() == parent;
  };
  if (auto masked = v.getDefiningOp<lru::MaskedOp>())
    return isArgumentOf(masked.getX(), func);
  auto group = v.getDefiningOp<lru::FusedOp>();
  if (!group)
    return false;
  Operation *yield = group.getBody().front().getTerminator();
  auto masked = yield->getOperand(cast<OpResult>(v).getResultNumber())
                    .getDefiningOp<lru::MaskedOp>();
  if (!masked || !isArgumentOf(masked.getX(), group))
    return false;
  Value input =
      group.getInputs()[cast<BlockArgument>(masked.getX()).getArgNumber()];
  return isArgumentOf(input, func);
}

} // namespace

GpuStorage::GpuStorage(func::FuncOp func, const CudaOptions &options) {
  if (options.storage != CudaStorage::Bf16 || func.getSymName() == "step")
    return;
  Block &body = func.getBody().front();
  llvm::DenseSet<Value> results;
  for (Value v : body.getTerminator()->getOperands())
    results.insert(storageOf(v));
  for (Operation &op : body)
    for (Value result : op.getResults())
      if ((isSequenceSized(result) || isMatmulWeight(result)) &&
          !results.contains(result) && !isMaskedInput(func, result))
        bf16.insert(result);
  // cuBLAS multiplies two bfloat16 operands (into either type) or two
  // fp32 ones (into fp32). A matmul of a bfloat16 value and a parameter
  // reads the parameter's bfloat16 shadow; one with another fp32 operand (a
  // caller's array, a value kept fp32) takes both in fp32 and gives fp32,
  // which may in turn decide another matmul's operands.
  SmallVector<lru::MatmulOp> matmuls;
  func.walk([&](lru::MatmulOp matmul) { matmuls.push_back(matmul); });
  auto isBf16Product = [&](lru::MatmulOp matmul) {
    Value a = storageOf(matmul.getLhs()), b = storageOf(matmul.getRhs());
    auto can = [&](Value v) {
      return bf16.contains(v) || isParameter(func, v);
    };
    return can(a) && can(b) && (bf16.contains(a) || bf16.contains(b));
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (lru::MatmulOp matmul : matmuls) {
      if (isBf16Product(matmul))
        continue;
      for (Value v : {storageOf(matmul.getLhs()), storageOf(matmul.getRhs()),
                      Value(matmul.getResult())})
        changed |= bf16.erase(v);
    }
  }
  for (lru::MatmulOp matmul : matmuls) {
    if (!isBf16Product(matmul))
      continue;
    bf16Matmuls.insert(matmul);
    for (Value v : {matmul.getLhs(), matmul.getRhs()})
      if (isParameter(func, storageOf(v)))
        shadows.insert(storageOf(v));
  }
}

bool GpuStorage::isBf16(Value v) const { return bf16.contains(storageOf(v)); }

bool GpuStorage::isBf16(lru::MatmulOp matmul) const {
  return bf16Matmuls.contains(matmul);
}

FailureOr<MemoryPlan> GpuStorage::plan(func::FuncOp func) const {
  if (bf16.empty())
    return readMemoryPlan(func);
  return planMemory(func, [&](Value v) {
    return bf16.contains(v) ? bufferSize(v, elementBytes(v.getType()) / 2)
                            : bufferSize(v);
  });
}

} // namespace lruc
