//===- MemoryPlan.h - Buffers of a function, reused by lifetime -*- C++ -*-===//
//
// Every value a backend stores (the results of a function's top-level ops,
// other than parameters, which point into the caller's blocks) gets a slot
// of one workspace. Values whose lifetimes do not overlap share a slot. The
// only dynamic dim is the leading batch dim, so each size is
// `perExample * B + fixed` bytes; slots are 64-byte aligned. A view
// (lru.view) reads the buffer of the value it views, which stays alive until
// the view's last reader. The
// -lru-plan-memory pass writes the plan into the IR (the kernel-level IR
// that backends emit); readMemoryPlan reads it back.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_MEMORYPLAN_H
#define LRUC_MEMORYPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace lruc {

/// A size in bytes, `perExample * B + fixed`.
struct ByteSize {
  int64_t perExample = 0;
  int64_t fixed = 0;
  int64_t at(int64_t batch) const { return perExample * batch + fixed; }
};

struct MemoryPlan {
  /// Each slot's capacity and its offset in the workspace.
  std::vector<ByteSize> slots, offsets;
  /// The slot of every stored value.
  llvm::DenseMap<mlir::Value, unsigned> slotOf;
  /// The whole workspace, and what one buffer per value would take.
  ByteSize total, unplanned;
  /// The bytes of the values alive at each top-level op: the workspace can
  /// be no smaller than the most of them at a batch (mostAlive).
  std::vector<ByteSize> alive;

  int64_t mostAlive(int64_t batch) const;
};

/// Plans `func`'s buffers: each stored result lives from its op to its last
/// use (both included, so no op writes a buffer it reads; a GEMM
/// epilogue's matmuls' operands count as read by the epilogue); the
/// largest first, each takes the first slot of its kind (batch-sized or
/// fixed) that holds no value alive at the same time, else a new one (a
/// slot is as large as its largest value). A group's sum gets a row of
/// partial sums per chunk (lru::FusedOp).
/// `sizeOf`: a value's buffer (bufferSize by default; the CUDA backend's
/// plan gives a bfloat16 value half, GpuStorage.h).
MemoryPlan
planMemory(mlir::func::FuncOp func,
           llvm::function_ref<ByteSize(mlir::Value)> sizeOf = nullptr);

/// The plan that -lru-plan-memory wrote into `func` (slotOf, offsets and
/// total; not the slots' capacities or `unplanned`); an error on `func` or
/// the op when the IR has none or an incomplete one.
mlir::FailureOr<MemoryPlan> readMemoryPlan(mlir::func::FuncOp func);

/// Bytes of one element of `type` (a tensor's element type, or `type`
/// itself): a complex value counts both parts.
int64_t elementBytes(mlir::Type type);

/// The 64-byte aligned size of `v`'s buffer: its tensor's, or for a group's
/// sum every chunk's row of partial sums (lru::FusedOp); with
/// `bytesPerElement`, of elements of that size instead of its type's.
ByteSize bufferSize(mlir::Value v, int64_t bytesPerElement = 0);

/// Whether `v` needs a buffer of its own (parameters, arguments, views and
/// results written in place do not).
bool isStored(mlir::Value v);

/// Marks an op whose results may be written straight into the caller's
/// results (-lru-update-in-place): per result, the index of the function
/// result it is, or -1. The function result it is written into is where
/// the caller passed the argument it updates (updatedArgument), which the
/// op reads only at the index it writes.
constexpr llvm::StringLiteral kInPlaceAttr = "lru.in_place";

/// The function result `v` is written into, when its op is marked so.
std::optional<unsigned> inPlaceResult(mlir::Value v);

/// The argument that `func`'s result `result` is the new value of (tagged
/// alike: `{lru.param = "blocks.0.lru.B_re"}`), or null.
mlir::BlockArgument updatedArgument(mlir::func::FuncOp func, unsigned result);

/// Of an lru.multi_tensor `op` of `func` marked kInPlaceAttr: each body
/// argument whose input a result written in place updates, and the index
/// of that result. A backend reads such an input through the result's
/// array, the one array both are.
llvm::DenseMap<mlir::Value, unsigned>
inputsWrittenOver(mlir::Operation *op, mlir::func::FuncOp func);

/// The value whose buffer holds `v`: `v`, or for an lru.view (of a view...)
/// the value it views.
mlir::Value storageOf(mlir::Value v);

} // namespace lruc

#endif // LRUC_MEMORYPLAN_H
