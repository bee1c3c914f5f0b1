//===- GpuStorage.h - Which values the CUDA kernels keep in bfloat16 -*- C++
//-*-===//
//
// With CudaOptions::storage = Bf16 (`lruc --gpu-storage=bf16`), the CUDA
// kernels store a function's sequence-sized activations in bfloat16 and
// compute in fp32 as before: each load widens exactly, each store rounds to
// nearest even (lruc::gpu::bf16 in the device prelude). A train step is
// bound by the bytes it moves (docs/performance.md), and those values are
// almost all of them. The CPU library and the memory plan are unchanged:
// a bfloat16 value fills half of its fp32 slot.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_CODEGEN_GPUSTORAGE_H
#define LRUC_CODEGEN_GPUSTORAGE_H

#include "lruc/Codegen.h"
#include "lruc/MemoryPlan.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace lruc {

/// The values of one function that its kernels and GEMMs store in
/// bfloat16: stored values (MemoryPlan.h's isStored) of f32 or
/// complex<f32> elements that have at least three dims, the first the
/// batch ([B, L, ...]: what grows with the sequence), or that only matmuls
/// read (weights assembled for them); not the function's results (the
/// caller's arrays are fp32), nor the operands and product of a matmul
/// that reads an fp32 array other than a parameter (cuBLAS multiplies two
/// operands of one type; a parameter is read through a bfloat16 copy).
/// None in step mode (`@step`, a token at a time) or with
/// CudaOptions::storage = F32.
class GpuStorage {
public:
  GpuStorage() = default; ///< everything fp32
  GpuStorage(mlir::func::FuncOp func, const CudaOptions &options);

  /// Whether `v`'s buffer (through views: MemoryPlan.h's storageOf) holds
  /// bfloat16.
  bool isBf16(mlir::Value v) const;
  /// Whether `matmul` multiplies bfloat16 operands (its parameter operand,
  /// if any, through its shadow).
  bool isBf16(lru::MatmulOp matmul) const;
  /// The parameters a bfloat16 matmul reads, in the order of first use:
  /// each gets a bfloat16 copy (its shadow) at the start of the call.
  llvm::ArrayRef<mlir::Value> shadowed() const { return shadows.getArrayRef(); }
  /// How many values are bfloat16.
  size_t size() const { return bf16.size(); }
  /// The device workspace's plan: the CPU library's (read from the IR)
  /// where no value is bfloat16, else planned again with each bfloat16
  /// value's buffer half its fp32 size.
  mlir::FailureOr<MemoryPlan> plan(mlir::func::FuncOp func) const;

private:
  llvm::DenseSet<mlir::Value> bf16;
  llvm::DenseSet<mlir::Operation *> bf16Matmuls;
  llvm::SetVector<mlir::Value> shadows;
};

} // namespace lruc

#endif // LRUC_CODEGEN_GPUSTORAGE_H
