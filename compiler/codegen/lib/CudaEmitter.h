//===- CudaEmitter.h - The CUDA source and its launch plan -------*- C++ -*-===//
//
// Between the CUDA emitter and the CPU emitter, which writes the host
// schedule (the launches of the plan, in order) into the model library.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_CODEGEN_CUDAEMITTER_H
#define LRUC_CODEGEN_CUDAEMITTER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "lru/LRUOps.h"
#include "lruc/Codegen.h"
#include "lruc/MemoryPlan.h"

#include <string>
#include <vector>

namespace lruc {

/// Threads a block of every launch but the scans (CudaLaunch::blockThreads).
constexpr int kCudaBlockThreads = 256;
/// Threads a block of a column sum (a fused group's partial sums,
/// `<kernel>_sums`, and a reduction that keeps the last dim): its grid has
/// a block per 32 columns (and per output row), few blocks, so each takes
/// all the threads it can.
constexpr int kCudaSumsBlockThreads = 1024;
/// Threads an SM keeps resident at least for a kernel of larger blocks
/// (the scans): ptxas is told the blocks an SM must hold
/// (`__launch_bounds__`'s second argument), so that it keeps a thread's
/// registers within 64 (of an sm_80/sm_90 SM's 65 536 for 2 048 threads)
/// instead of letting a scan drop to one block of 16 warps an SM.
constexpr int kCudaMinResidentThreads = 1024;
/// Blocks of a grid-stride kernel at most: about two waves of eight
/// blocks an SM on a 132-SM device. A thread then takes many elements, so
/// its set-up (parameters, indices, the loop's trip count) is paid once
/// for all of them; with a thread per element, elementwise kernels were
/// bound by issuing those instructions, not by memory (on an H100: 80% of
/// issue slots busy, DRAM 52-75%).
constexpr int64_t kGridStrideBlocks = 2048;
/// Steps each thread of a scan kernel takes per tile (the block's warps
/// take consecutive runs of this many steps; see writeTiledScan), or fewer
/// where more warps than 256 / 16 share a chained scan's chunk or the
/// tile's inputs would pass kScanInputCacheBytes.
constexpr int kScanStepsPerThread = 16;
/// Shared memory a scan kernel's block keeps its tile's inputs in between
/// its two passes over the tile (fewer steps a thread where a block's
/// threads would need more), within the static limit of a block.
constexpr int64_t kScanInputCacheBytes = 32 * 1024;
constexpr int64_t kStaticSharedBytes = 48 * 1024;
/// What else a scan kernel declares in shared memory, at most (the warps'
/// sums 4 KB, the chunk's carry 256 bytes, the ticket).
constexpr int64_t kScanOtherSharedBytes = 5 * 1024;

/// The functions with CUDA kernels, in the order of the source.
constexpr const char *kCudaFunctions[] = {
    "forward",    "forward_train",        "backward",
    "train_step", "accumulate_gradients", "apply_gradients",
    "step"};

/// One launch of a function's schedule: a kernel, or a GEMM (cuBLAS).
struct CudaLaunch {
  std::string kernel; ///< "cublas" for a GEMM
  /// Threads wanted as C++ of B (grid-stride kernels take fewer), or, for
  /// a block reduction, blocks.
  std::string threads;
  bool blockPerOutput = false;
  mlir::Operation *op = nullptr; ///< the op (the matmul of a GEMM)
  /// The kernel's arrays: inputs, then outputs.
  llvm::SmallVector<mlir::Value> operands;
  /// The sites of the dropouts it draws (lru.dropout_mask's), its
  /// `uint32_t siteN` parameters.
  std::vector<uint32_t> sites;
  /// The C++ types of its parameters after (B, status, op): a uint32_t a
  /// site, then its arrays'.
  std::vector<std::string> parameterTypes;
  /// Which of them the kernel stores in bfloat16 (GpuStorage.h), or for a
  /// GEMM which of its lhs, rhs and product; empty for the results kernel
  /// (fp32 throughout).
  llvm::SmallVector<bool> bf16Operands;
  /// Its kernel's number among the source's kernels (what
  /// lruc_gpu_ops::launch gets, and the simulator's table; launches of one
  /// kernel share it), -1 for a GEMM.
  int32_t index = -1;
  /// It records bad data in the status block (lruc::gpu::report), naming
  /// the op it gets as its `op` parameter.
  bool reports = false;
  /// The threads of a block synchronise (__syncthreads, warp shuffles).
  bool synchronises = false;
  /// Threads a block (a scan kernel's: 32 * CudaOptions::scanWarps).
  int blockThreads = kCudaBlockThreads;
  /// Its threads walk the elements in a grid-stride loop: any grid does,
  /// and the host schedule launches at most kGridStrideBlocks blocks.
  bool gridStride = false;
  /// A GEMM's second matmul, run with `op`'s in one call (a strided batch
  /// of two; batchGemmPairs), or null.
  mlir::Operation *batchedOp = nullptr;
  /// The function's results kernel (op: its return): `operands` are the
  /// returned values not written in place, `resultIndices` the results
  /// they are; the caller's results follow them as its outputs.
  bool copiesResults = false;
  llvm::SmallVector<int64_t> resultIndices;
  /// The function's shadows kernel (CudaEmitter's emitShadows): `operands`
  /// are the parameters; their shadows follow them as its outputs.
  bool copiesShadows = false;

  bool isGemm() const { return kernel == "cublas"; }
};

/// The bytes of a kernel's arrays (each read or written at least once):
/// those that grow with the batch, per example, and the rest.
struct KernelBytes {
  int64_t perExample = 0, fixed = 0;
};
KernelBytes kernelBytes(const CudaLaunch &launch);

struct CudaFunctionPlan {
  mlir::func::FuncOp func;
  std::vector<CudaLaunch> launches;
  /// Where its arrays lie in the device workspace (GpuStorage::plan).
  MemoryPlan memory;
  /// The parameters its bfloat16 GEMMs read through bfloat16 copies
  /// (GpuStorage::shadowed), which the schedule lays after the workspace.
  std::vector<mlir::Value> shadows;
  /// Items per example of its scan chain (lruc::gpu::ScanChain, after the
  /// status block), 0 without chunked scans.
  int64_t scanChainItems = 0;
};

/// The first launch of each of the source's kernels, in kernel index order.
std::vector<const CudaLaunch *>
firstLaunches(const std::vector<CudaFunctionPlan> &plans);

/// Writes emitCuda's source to `os` and returns each function's launches.
mlir::FailureOr<std::vector<CudaFunctionPlan>>
writeCudaSource(mlir::ModuleOp module, llvm::raw_ostream &os,
                const CudaOptions &options);

/// Where a parameter lies: `floats` into the state block or the
/// parameters block.
struct ParamPlace {
  bool state;
  uint64_t floats;
};

/// Writes the host schedule of `plans` as lruc/cuda/Schedule.h's tables:
/// `const Function <function>_schedule` for each (its launches by kernel
/// index), `kGpuSchedules` (all of them), `gpuWorkspaceBytes(batch)` and
/// `gpuDeferredStatus(entry, status, error)`. `paramPlace` says where a
/// parameter lies.
mlir::LogicalResult
writeGpuSchedule(const std::vector<CudaFunctionPlan> &plans,
                 llvm::function_ref<ParamPlace(::lru::ParamOp)> paramPlace,
                 llvm::raw_ostream &os);

} // namespace lruc

#endif // LRUC_CODEGEN_CUDAEMITTER_H
