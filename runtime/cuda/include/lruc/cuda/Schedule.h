//===- Schedule.h - The host schedule of a model's CUDA kernels -*- C++ -*-===//
//
// What a model library's GPU entry points (runtime/include/lruc_gpu.h) run:
// for each IR function, its kernels and GEMMs in order, as tables lruc
// writes into the library (compiler/codegen/lib/GpuSchedule.cpp) and
// runSchedule reads. Every launch, GEMM and copy goes through the caller's
// lruc_gpu_ops; nothing here calls CUDA.
//
// A function's device workspace, at batch B:
//
//   [the memory plan's arrays: workspace.at(B)]
//   [the status block: kStatusBytes]
//   [the scan chain: scanChainBytes(scanChainItems, B)]
//   [the scalars: a kScalarSlot per host scalar, then the bfloat16 shadows]
//
// Plain C++17, no MLIR and no CUDA: linked into every model library.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_CUDA_SCHEDULE_H
#define LRUC_CUDA_SCHEDULE_H

#include "lruc_gpu.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace lruc::cuda::schedule {

/// The status block's bytes (the device prelude's lruc::gpu::Status,
/// padded), and a host scalar's slot.
constexpr int64_t kStatusBytes = 64;
constexpr int64_t kScalarSlot = 64;

/// A size that grows with the batch: perExample * B + fixed.
struct BatchSize {
  int64_t perExample, fixed;
  int64_t at(int64_t batch) const { return perExample * batch + fixed; }
};

/// The bytes of a scan chain of `items` items per example at `batch` (the
/// device prelude's lruc::gpu::scanChain lays it out): the ticket counter's
/// 64 bytes, the flags (ints) rounded up to 256 bytes, a carry (32 lanes of
/// two floats) per item.
int64_t scanChainBytes(int64_t items, int64_t batch);

/// Which memory an operand lies in.
enum Region : int32_t {
  Workspace, ///< the memory plan's arrays
  Scalars,   ///< the host scalars' copies and the shadows
  Params,    ///< the `params` block
  State,     ///< the `state` block
  Argument,  ///< `args[index]`
  Result,    ///< `results[index]`
};

/// An operand's device address: the region's start (args[index] or
/// results[index] for those two) + perExample * B + offset bytes.
struct Address {
  Region region;
  int32_t index;
  int64_t perExample, offset;
};

/// The sizes of launches and GEMMs: `sizes(i, B)` is size i at batch B
/// (the library's own code, as sizes may round a count of B up).
using Sizes = int64_t (*)(int32_t size, int64_t batch);

/// Kernel `kernel` on size `threads` work items: threads of `blockThreads`
/// a block, or blocks if `blockPerOutput`; a grid-stride kernel takes at
/// most `maxBlocks` blocks (0: no limit). Its arguments: B, the status
/// block, `op` (the op it runs for: what a report names; -1 for none),
/// sites[firstSite, firstSite + siteCount) (its dropouts'), then
/// operands[firstOperand, firstOperand + operandCount). Layers that run
/// the same code launch the same kernel with their own op and sites.
struct Launch {
  int32_t kernel;
  int32_t threads;
  int32_t blockPerOutput, blockThreads;
  int64_t maxBlocks;
  int32_t op;
  int32_t firstSite, siteCount;
  int32_t firstOperand, operandCount;
};

/// `count` (1 or 2) row-major products C = op(A) op(B) of the kinds of
/// lruc_gpu_ops.gemm, m, n, k and the row strides as sizes;
/// operands[firstOperand, firstOperand + 3 * count): A, B, C of each. The
/// second product's operands become strides from the first's.
struct Gemm {
  int32_t transA, transB;
  int32_t m, n, k, lda, ldb, ldc;
  int32_t abType, cType; ///< LRUC_GPU_F32 or LRUC_GPU_BF16
  int32_t count;
  int32_t firstOperand;
};

enum StepKind : int32_t { LaunchStep, GemmStep };

/// A step of the schedule: launches[index] or gemms[index].
struct Step {
  StepKind kind;
  int32_t index;
};

/// A host scalar (lr, step, dropout_key) copied into the scalars at the
/// start of a call: `bytes` from args[argument] to the scalars + offset.
struct HostCopy {
  int32_t argument;
  int64_t offset, bytes;
};

/// An op that may report bad input: its number in the function (the
/// status block's `op`) and what a message calls it; for a gather's or
/// scatter_add's indices that are a model input, its name and steps a
/// sequence (0: not [B, L]), so that an entry is named `tokens[b, t]`.
struct Report {
  int32_t op;
  const char *description;
  const char *input = nullptr;
  int64_t steps = 0;
};

/// One IR function's schedule.
struct Function {
  const char *name;
  Sizes sizes;
  BatchSize workspace;    ///< the memory plan's arrays
  int64_t scanChainItems; ///< per example; 0: no chain
  int64_t scalarBytes;    ///< the scalars' bytes
  const HostCopy *copies;
  int32_t copyCount;
  const Step *steps;
  int32_t stepCount;
  const Launch *launches;
  const Gemm *gemms;
  const Address *operands;
  const uint32_t *sites;
  const Report *reports;
  int32_t reportCount;
};

/// The device workspace `function` needs at `batch`.
int64_t workspaceBytes(const Function &function, int64_t batch);

/// Runs `function` through `ops` on `workspace` at batch `batch`: the
/// status block reset, the host scalars copied, each step in order, then
/// the status block read back (or handed to ops->defer_status). `kernels`
/// names the kernels, for messages. False with `error` on failure.
bool run(const Function &function, const char *const *kernels,
         const lruc_gpu_ops *ops, void *workspace, int64_t batch,
         const float *params, const float *state, const void *const *args,
         void *const *results, std::string &error);

/// What a deferred call's status block, read back from the device, says
/// of `function`: true when no kernel reported, else false with `error`.
bool statusSays(const Function &function, const void *status,
                std::string &error);

/// `bytes` from `src` to `dst` through ops->copy in the direction `kind`
/// (LRUC_COPY_*); false with `error` on failure.
bool copy(const lruc_gpu_ops *ops, void *dst, const void *src, uint64_t bytes,
          int32_t kind, std::string &error);

} // namespace lruc::cuda::schedule

#endif // LRUC_CUDA_SCHEDULE_H
