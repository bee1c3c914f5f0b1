//===- Schedule.cpp - The host schedule of a model's CUDA kernels --------===//

#include "lruc/cuda/Schedule.h"

#include <cstring>
#include <vector>

namespace lruc::cuda::schedule {
namespace {

/// The device prelude's lruc::gpu::Status.
struct Status {
  int32_t op, pad;
  int64_t index, value;
};
static_assert(sizeof(Status) <= kStatusBytes);

bool called(int rc, const char *what, const char *name, std::string &error) {
  if (rc == 0)
    return true;
  error = std::string("GPU ") + what + " failed (" + std::to_string(rc) + ")" +
          (name ? std::string(": ") + name : std::string());
  return false;
}

/// Elements of `elementBytes` from `from` to `to` (device memory, aligned
/// to them), which may be in different allocations of one address space.
int64_t stride(const void *from, const void *to, int64_t elementBytes) {
  return (int64_t(reinterpret_cast<intptr_t>(to)) -
          int64_t(reinterpret_cast<intptr_t>(from))) /
         elementBytes;
}

/// Where a call's operands lie.
struct Frame {
  int64_t batch;
  char *workspace, *scalars;
  const char *params, *state;
  const void *const *args;
  void *const *results;

  void *at(const Address &a) const {
    const char *base = nullptr;
    switch (a.region) {
    case Workspace:
      base = workspace;
      break;
    case Scalars:
      base = scalars;
      break;
    case Params:
      base = params;
      break;
    case State:
      base = state;
      break;
    case Argument:
      base = static_cast<const char *>(args[a.index]);
      break;
    case Result:
      base = static_cast<const char *>(results[a.index]);
      break;
    }
    return const_cast<char *>(base) + a.perExample * batch + a.offset;
  }
};

const Report *reportOf(const Function &function, int32_t op) {
  for (int32_t i = 0; i < function.reportCount; ++i)
    if (function.reports[i].op == op)
      return &function.reports[i];
  return nullptr;
}

bool says(const Function &function, const Status &seen, std::string &error) {
  if (seen.op < 0)
    return true;
  const Report *report = reportOf(function, seen.op);
  std::string entry = "entry " + std::to_string(seen.index);
  if (report && report->input)
    entry =
        std::string(report->input) + "[" +
        (report->steps > 0 ? std::to_string(seen.index / report->steps) + ", " +
                                 std::to_string(seen.index % report->steps)
                           : std::to_string(seen.index)) +
        "]";
  error = std::string("bad input in @") + function.name + ", " +
          (report ? report->description : "an op") + ": " + entry + " is " +
          std::to_string(seen.value) + ", out of range";
  return false;
}

} // namespace

int64_t scanChainBytes(int64_t items, int64_t batch) {
  if (items == 0)
    return 0;
  const int64_t count = batch * items;
  return 64 + (4 * count + 255) / 256 * 256 + 256 * count;
}

int64_t workspaceBytes(const Function &function, int64_t batch) {
  return function.workspace.at(batch) + kStatusBytes +
         scanChainBytes(function.scanChainItems, batch) + function.scalarBytes;
}

bool copy(const lruc_gpu_ops *ops, void *dst, const void *src, uint64_t bytes,
          int32_t kind, std::string &error) {
  return bytes == 0 || called(ops->copy(ops->context, dst, src, bytes, kind),
                              "copy", nullptr, error);
}

bool run(const Function &function, const char *const *kernels,
         const lruc_gpu_ops *ops, void *workspace, int64_t batch,
         const float *params, const float *state, const void *const *args,
         void *const *results, std::string &error) {
  char *const base = static_cast<char *>(workspace);
  Status *status =
      reinterpret_cast<Status *>(base + function.workspace.at(batch));
  char *const scalars = reinterpret_cast<char *>(status) + kStatusBytes +
                        scanChainBytes(function.scanChainItems, batch);
  const Frame frame{batch,
                    base,
                    scalars,
                    reinterpret_cast<const char *>(params),
                    reinterpret_cast<const char *>(state),
                    args,
                    results};

  const Status none = {-1, 0, 0, 0};
  if (!copy(ops, status, &none, sizeof none, LRUC_COPY_HOST_TO_DEVICE, error))
    return false;
  for (int32_t i = 0; i < function.copyCount; ++i) {
    const HostCopy &c = function.copies[i];
    if (!copy(ops, scalars + c.offset, args[c.argument], uint64_t(c.bytes),
              LRUC_COPY_HOST_TO_DEVICE, error))
      return false;
  }

  // A kernel's arguments as cuLaunchKernel takes them: pointers to B, to
  // the status pointer, to its op and sites, then to each operand's
  // pointer.
  int64_t B = batch;
  int32_t op = -1;
  std::vector<uint32_t> sites;
  std::vector<void *> pointers, kernelArgs;
  for (int32_t s = 0; s < function.stepCount; ++s) {
    const Step &step = function.steps[s];
    if (step.kind == GemmStep) {
      const Gemm &g = function.gemms[step.index];
      const Sizes size = function.sizes;
      const int64_t m = size(g.m, batch), n = size(g.n, batch),
                    k = size(g.k, batch);
      if (m == 0 || n == 0)
        continue;
      const Address *operand = function.operands + g.firstOperand;
      void *a = frame.at(operand[0]), *b = frame.at(operand[1]),
           *c = frame.at(operand[2]);
      int64_t strideA = 0, strideB = 0, strideC = 0;
      if (g.count == 2) {
        const int64_t abBytes = g.abType == LRUC_GPU_BF16 ? 2 : 4;
        strideA = stride(a, frame.at(operand[3]), abBytes);
        strideB = stride(b, frame.at(operand[4]), abBytes);
        strideC =
            stride(c, frame.at(operand[5]), g.cType == LRUC_GPU_BF16 ? 2 : 4);
      }
      if (!called(ops->gemm(ops->context, g.transA, g.transB, m, n, k, g.abType,
                            a, size(g.lda, batch), strideA, b,
                            size(g.ldb, batch), strideB, g.cType, c,
                            size(g.ldc, batch), strideC, g.count),
                  "GEMM", nullptr, error))
        return false;
      continue;
    }
    const Launch &l = function.launches[step.index];
    const int64_t n = function.sizes(l.threads, batch);
    if (n <= 0)
      continue;
    op = l.op;
    sites.assign(function.sites + l.firstSite,
                 function.sites + l.firstSite + l.siteCount);
    pointers.resize(size_t(l.operandCount));
    kernelArgs.assign({&B, &status, &op});
    for (uint32_t &site : sites)
      kernelArgs.push_back(&site);
    for (int32_t i = 0; i < l.operandCount; ++i) {
      pointers[size_t(i)] = frame.at(function.operands[l.firstOperand + i]);
      kernelArgs.push_back(&pointers[size_t(i)]);
    }
    int64_t blocks =
        l.blockPerOutput ? n : (n + l.blockThreads - 1) / l.blockThreads;
    if (l.maxBlocks > 0 && blocks > l.maxBlocks)
      blocks = l.maxBlocks;
    if (!called(ops->launch(ops->context, l.kernel, blocks, l.blockThreads,
                            l.blockPerOutput, kernelArgs.data()),
                "launch", kernels[l.kernel], error))
      return false;
  }

  if (ops->defer_status)
    return called(ops->defer_status(ops->context, status, sizeof *status),
                  "status deferral", nullptr, error);
  Status seen;
  if (!copy(ops, &seen, status, sizeof seen, LRUC_COPY_DEVICE_TO_HOST, error))
    return false;
  return says(function, seen, error);
}

bool statusSays(const Function &function, const void *status,
                std::string &error) {
  Status seen;
  std::memcpy(&seen, status, sizeof seen);
  return says(function, seen, error);
}

} // namespace lruc::cuda::schedule
