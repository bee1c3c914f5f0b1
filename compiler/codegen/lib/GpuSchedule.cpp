//===- GpuSchedule.cpp - The host schedule of the CUDA kernels ------------===//
//
// Host C++ for the model library: per function, `gpu_run_<function>` runs
// the launch plan of the CUDA source in order through lruc_gpu_ops
// (runtime/include/lruc_gpu.h): each kernel with (B, status, its arrays),
// each matmul as a row-major GEMM, the last kernel copying the results
// out, then the status block read back. Arrays are where the device's
// memory plan put them (the CPU library's, or with bfloat16 activations one
// of its own: GpuStorage::plan), in one device workspace, followed by the
// status block and the device copies of the host scalars (lr, step,
// dropout_key).
//
//===----------------------------------------------------------------------===//

#include "CudaEmitter.h"
#include "EmitSupport.h"
#include "lruc/MemoryPlan.h"
#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "llvm/ADT/SmallPtrSet.h"

#include <array>

using namespace mlir;
using namespace lruc::emit;

namespace lruc {
namespace {

/// Bytes after the plan's workspace: the status block, the scan chain
/// (scanChainBytes), then a slot per host scalar.
constexpr int64_t kExtraSlot = 64;

/// Function arguments the caller passes in host memory.
bool isHostArgument(func::FuncOp func, unsigned i) {
  auto name = func.getArgAttrOfType<StringAttr>(i, "lru.input");
  return name && (name.getValue() == "lr" || name.getValue() == "step" ||
                  name.getValue() == "dropout_key");
}

} // namespace

std::string scanChainBytes(int64_t items, StringRef batch) {
  if (!items)
    return "0";
  // The ticket counter's 64 bytes, the flags (ints) rounded up to 256
  // bytes, then a carry (two floats) per item and lane.
  std::string count = batch.str() + " * " + std::to_string(items);
  return "(64 + (4 * " + count + " + 255) / 256 * 256 + 256 * " + count +
         ")";
}

KernelBytes kernelBytes(const CudaLaunch &launch) {
  KernelBytes bytes;
  for (auto [k, v] : llvm::enumerate(launch.operands)) {
    auto type = cast<RankedTensorType>(v.getType());
    int64_t perElement = elementBytes(type);
    if (k < launch.bf16Operands.size() && launch.bf16Operands[k])
      perElement /= 2;
    // The batch is the only run-time size, and always the first dim.
    bool batched = type.getRank() > 0 && type.isDynamicDim(0);
    int64_t count = 1;
    for (int64_t d = batched ? 1 : 0; d < type.getRank(); ++d)
      count *= type.getDimSize(d);
    // A results copy reads each value and writes it again; the shadows
    // kernel writes a bfloat16 copy of each parameter it reads.
    (batched ? bytes.perExample : bytes.fixed) +=
        launch.copiesShadows
            ? count * (perElement + perElement / 2)
            : count * perElement * (launch.copiesResults ? 2 : 1);
  }
  return bytes;
}

namespace {

class ScheduleWriter {
public:
  ScheduleWriter(const CudaFunctionPlan &plan,
                 llvm::function_ref<std::string(lru::ParamOp)> paramPointer,
                 llvm::raw_ostream &os)
      : plan(plan), func(plan.func), memory(plan.memory),
        paramPointer(paramPointer), os(os) {}

  LogicalResult write() {
    StringRef name = func.getSymName();
    // Which op a status report names.
    os << "const char *gpu_describe_" << name
       << "(int32_t op) {\n  switch (op) {\n";
    llvm::DenseMap<Operation *, size_t> indexOf;
    for (auto [index, op] : llvm::enumerate(func.getBody().front()))
      indexOf[&op] = index;
    llvm::SmallPtrSet<Operation *, 16> named;
    for (const CudaLaunch &launch : plan.launches)
      if (launch.reports && named.insert(launch.op).second)
        os << "  case " << indexOf.lookup(launch.op) << ": return \""
           << launch.op->getName().getStringRef() << " at "
           << describeLocation(launch.op->getLoc()) << "\";\n";
    os << "  default: return \"an op\";\n  }\n}\n\n";

    os << "bool gpu_run_" << name
       << "(const lruc_gpu_ops *ops, char *workspace, int64_t B,\n"
          "    const float *params, const float *state, const void *const "
          "*args,\n    void *const *results, std::string &error) {\n"
          "  (void)params; (void)state; (void)args;\n"
       << "  char *const extra = workspace + " << memory.total.perExample
       << " * B + " << memory.total.fixed << ";\n"
       << "  GpuStatus *status = reinterpret_cast<GpuStatus *>(extra);\n"
       << "  if (!gpuResetStatus(ops, status, error))\n    return false;\n";
    int64_t hostSlots = 0;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (!isHostArgument(func, i))
        continue;
      std::string copy = "host" + std::to_string(i);
      int64_t bytes = cast<RankedTensorType>(arg.getType()).getNumElements() *
                      elementBytes(arg.getType());
      os << "  void *const " << copy << " = "
         << extraAt(kExtraSlot * (1 + hostSlots++)) << ";\n"
         << "  if (!gpuCopy(ops, " << copy << ", args[" << i << "], " << bytes
         << ", LRUC_COPY_HOST_TO_DEVICE, error))\n    return false;\n";
      pointers[arg] = copy;
    }
    // The parameters' bfloat16 shadows, after the host scalars.
    int64_t shadowAt = 0;
    for (auto [k, v] : llvm::enumerate(plan.shadows)) {
      std::string shadow = "shadow" + std::to_string(k);
      os << "  void *const " << shadow << " = "
         << extraAt(kExtraSlot * (1 + hostSlots) + shadowAt) << ";\n";
      shadows[v] = shadow;
      shadowAt += shadowBytes(v);
    }
    for (const CudaLaunch &launch : plan.launches) {
      if (launch.isGemm()) {
        if (failed(writeGemm(launch)))
          return failure();
        continue;
      }
      os << "  {\n    const int64_t n = " << launch.threads << ";\n";
      for (auto [k, v] : llvm::enumerate(launch.operands)) {
        FailureOr<std::string> p = pointer(v);
        if (failed(p))
          return failure();
        os << "    const void *p" << k << " = " << *p << ";\n";
      }
      // The results kernel writes the caller's results, the shadows
      // kernel the shadows.
      const size_t results = launch.copiesResults || launch.copiesShadows
                                 ? launch.operands.size()
                                 : 0;
      for (size_t k = 0; k < results; ++k)
        os << "    void *r" << k << " = "
           << (launch.copiesShadows ? shadows.lookup(launch.operands[k])
                                    : "results[" + std::to_string(k) + "]")
           << ";\n";
      os << "    void *a[] = {&B, &status";
      for (size_t k = 0; k < launch.operands.size(); ++k)
        os << ", &p" << k;
      for (size_t k = 0; k < results; ++k)
        os << ", &r" << k;
      os << "};\n    if (n > 0 && !gpuLaunch(ops, " << launch.index << ", n, "
         << (launch.blockPerOutput ? 1 : 0) << ", " << launch.blockThreads
         << ", " << (launch.gridStride ? kGridStrideBlocks : 0) << ", a, \""
         << launch.kernel << "\", error))\n      return false;\n  }\n";
    }
    os << "  return gpuCheckStatus(ops, status, \"" << name
       << "\", gpu_describe_" << name << ", error);\n}\n\n";
    return success();
  }

  /// The device workspace bytes of the function as C++ of `batch`.
  std::string workspaceBytes() {
    int64_t hostSlots = 0;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      hostSlots += isHostArgument(func, i);
    int64_t shadowTotal = 0;
    for (Value v : plan.shadows)
      shadowTotal += shadowBytes(v);
    return std::to_string(memory.total.perExample) + " * batch + " +
           std::to_string(memory.total.fixed + kExtraSlot * (1 + hostSlots) +
                          shadowTotal) +
           (plan.scanChainItems
                ? " + " + scanChainBytes(plan.scanChainItems, "batch")
                : "");
  }

private:
  /// Byte `offset` of the bytes after the workspace (the status block, the
  /// host scalars, the shadows) not counting the scan chain, which lies
  /// between the status block and the rest; as C++.
  std::string extraAt(int64_t offset) const {
    return "extra + " + std::to_string(offset) +
           (plan.scanChainItems
                ? " + " + scanChainBytes(plan.scanChainItems, "B")
                : "");
  }

  /// A parameter's bfloat16 shadow, aligned to 256 bytes.
  static int64_t shadowBytes(Value v) {
    return (tensorType(v).getNumElements() * 2 + 255) / 256 * 256;
  }

  /// Where a GEMM reads operand `v`: its bfloat16 shadow when the GEMM is
  /// bfloat16 and `v` a parameter, else where it lives.
  FailureOr<std::string> gemmPointer(Value v, bool bf16) {
    if (bf16)
      if (auto it = shadows.find(storageOf(v)); it != shadows.end())
        return it->second;
    return pointer(v);
  }

  /// Where `v` lives on the device, as C++.
  FailureOr<std::string> pointer(Value v) {
    if (auto it = pointers.find(v); it != pointers.end())
      return it->second;
    if (auto arg = dyn_cast<BlockArgument>(v))
      return "args[" + std::to_string(arg.getArgNumber()) + "]";
    if (auto param = v.getDefiningOp<lru::ParamOp>())
      return paramPointer(param);
    if (auto view = v.getDefiningOp<lru::ViewOp>())
      return pointer(view.getX());
    auto slot = memory.slotOf.find(v);
    if (slot == memory.slotOf.end())
      return v.getDefiningOp()->emitError(
          "has a result the GPU schedule cannot place");
    ByteSize offset = memory.offsets[slot->second];
    return "workspace + " + std::to_string(offset.perExample) + " * B + " +
           std::to_string(offset.fixed);
  }

  /// A GEMM launch's matmul, or its two (CudaLaunch::batchedOp), as
  /// row-major GEMMs (the kinds of runtime/cpu's matmuls) in one call.
  LogicalResult writeGemm(const CudaLaunch &launch) {
    auto op = cast<lru::MatmulOp>(launch.op);
    auto lhs = tensorType(op.getLhs()), rhs = tensorType(op.getRhs());
    std::string rows = productExpr(lhs.getShape().drop_back());
    std::string m, n, k, lda, ldb;
    bool transA = false, transB = false;
    switch (op.getKind()) {
    case lru::MatmulKind::nt: // [rows, K] . [N, K]^T
      m = rows, n = dimExpr(rhs.getDimSize(0)), k = dimExpr(rhs.getDimSize(1));
      lda = k, ldb = k, transB = true;
      break;
    case lru::MatmulKind::nn: // [rows, K] . [K, N]
      m = rows, n = dimExpr(rhs.getDimSize(1)), k = dimExpr(rhs.getDimSize(0));
      lda = k, ldb = n;
      break;
    case lru::MatmulKind::tn: // [rows, M]^T . [rows, N]
      m = dimExpr(lhs.getShape().back()), n = dimExpr(rhs.getShape().back());
      k = rows, lda = m, ldb = n, transA = true;
      break;
    }
    // The element type of operand `i` (lhs, rhs, product); both operands
    // have one (GpuStorage).
    auto typeOf = [&](size_t i) -> std::string {
      return launch.bf16Operands[i] ? "LRUC_GPU_BF16" : "LRUC_GPU_F32";
    };
    // The second product's operands as strides from the first's.
    std::array<Value, 3> first = {op.getLhs(), op.getRhs(), op.getResult()};
    std::array<std::string, 3> at, strides = {"0", "0", "0"};
    for (auto [i, v] : llvm::enumerate(first)) {
      FailureOr<std::string> p = gemmPointer(v, launch.bf16Operands[i]);
      if (failed(p))
        return failure();
      at[i] = *p;
    }
    if (auto second = cast_or_null<lru::MatmulOp>(launch.batchedOp)) {
      std::array<Value, 3> operands = {second.getLhs(), second.getRhs(),
                                       second.getResult()};
      for (auto [i, v] : llvm::enumerate(operands)) {
        FailureOr<std::string> p = gemmPointer(v, launch.bf16Operands[i]);
        if (failed(p))
          return failure();
        strides[i] = "gpuStride(" + at[i] + ", " + *p + ", " +
                     (launch.bf16Operands[i] ? "2" : "4") + ")";
      }
    }
    os << "  if (!gpuGemm(ops, " << transA << ", " << transB << ", " << m
       << ", " << n << ", " << k << ", " << typeOf(0) << ", " << at[0] << ", "
       << lda << ", " << strides[0] << ", " << at[1] << ", " << ldb << ", "
       << strides[1] << ", " << typeOf(2) << ", " << at[2] << ", " << n << ", "
       << strides[2] << ", " << (launch.batchedOp ? 2 : 1) << ", error))\n"
       << "    return false;\n";
    return success();
  }

  const CudaFunctionPlan &plan;
  func::FuncOp func;
  const MemoryPlan &memory;
  llvm::function_ref<std::string(lru::ParamOp)> paramPointer;
  llvm::raw_ostream &os;
  llvm::DenseMap<Value, std::string> pointers; ///< host scalars' copies
  llvm::DenseMap<Value, std::string> shadows;  ///< parameters' shadows
};

} // namespace

FailureOr<std::vector<std::string>>
writeGpuSchedule(const std::vector<CudaFunctionPlan> &plans,
                 llvm::function_ref<std::string(lru::ParamOp)> paramPointer,
                 llvm::raw_ostream &os) {
  os << R"cpp(// --- The GPU schedule (runtime/include/lruc_gpu.h) ----------------------

struct GpuStatus { // lruc::gpu::Status of the device prelude
  int32_t op, pad;
  int64_t index, value;
};

bool gpuCalled(int rc, const char *what, const char *name, std::string &error) {
  if (rc == 0)
    return true;
  error = std::string("GPU ") + what + " failed (" + std::to_string(rc) + ")" +
          (name ? std::string(": ") + name : std::string());
  return false;
}
bool gpuCopy(const lruc_gpu_ops *ops, void *dst, const void *src,
             uint64_t bytes, int32_t kind, std::string &error) {
  return bytes == 0 ||
         gpuCalled(ops->copy(ops->context, dst, src, bytes, kind), "copy",
                   nullptr, error);
}
bool gpuLaunch(const lruc_gpu_ops *ops, int32_t kernel, int64_t n,
               int32_t blockPerOutput, int32_t threads, int64_t maxBlocks,
               void **args, const char *name, std::string &error) {
  // A grid-stride kernel (maxBlocks > 0) takes any grid.
  int64_t blocks = blockPerOutput ? n : (n + threads - 1) / threads;
  if (maxBlocks > 0 && blocks > maxBlocks)
    blocks = maxBlocks;
  return gpuCalled(ops->launch(ops->context, kernel, blocks, int32_t(threads),
                               blockPerOutput, args),
                   "launch", name, error);
}
/// Elements of `elementBytes` from `from` to `to` (device memory, aligned
/// to them), which may be in different allocations of one address space.
int64_t gpuStride(const void *from, const void *to, int64_t elementBytes) {
  return (int64_t(reinterpret_cast<intptr_t>(to)) -
          int64_t(reinterpret_cast<intptr_t>(from))) /
         elementBytes;
}
bool gpuGemm(const lruc_gpu_ops *ops, int32_t transA, int32_t transB,
             int64_t m, int64_t n, int64_t k, int32_t abType, const void *a,
             int64_t lda, int64_t strideA, const void *b, int64_t ldb,
             int64_t strideB, int32_t cType, void *c, int64_t ldc,
             int64_t strideC, int64_t count, std::string &error) {
  if (m == 0 || n == 0)
    return true;
  return gpuCalled(ops->gemm(ops->context, transA, transB, m, n, k, abType, a,
                             lda, strideA, b, ldb, strideB, cType, c, ldc,
                             strideC, count),
                   "GEMM", nullptr, error);
}
bool gpuResetStatus(const lruc_gpu_ops *ops, GpuStatus *status,
                    std::string &error) {
  const GpuStatus none = {-1, 0, 0, 0};
  return gpuCopy(ops, status, &none, sizeof none, LRUC_COPY_HOST_TO_DEVICE,
                 error);
}
/// What a status block read back says: true when no kernel reported.
bool gpuStatusSays(const GpuStatus &seen, const char *function,
                   const char *(*describe)(int32_t), std::string &error) {
  if (seen.op < 0)
    return true;
  error = std::string("bad input in @") + function + ", " +
          describe(seen.op) + ": entry " + std::to_string(seen.index) +
          " is " + std::to_string(seen.value) + ", out of range";
  return false;
}
/// The first report of the call's kernels, if any, as the error; or the
/// block handed to the caller, who reads it later (defer_status).
bool gpuCheckStatus(const lruc_gpu_ops *ops, const GpuStatus *status,
                    const char *function, const char *(*describe)(int32_t),
                    std::string &error) {
  if (ops->defer_status)
    return gpuCalled(ops->defer_status(ops->context, status, sizeof *status),
                     "status deferral", nullptr, error);
  GpuStatus seen;
  if (!gpuCopy(ops, &seen, status, sizeof seen, LRUC_COPY_DEVICE_TO_HOST,
               error))
    return false;
  return gpuStatusSays(seen, function, describe, error);
}

)cpp";
  std::vector<std::string> workspaces;
  for (const CudaFunctionPlan &plan : plans) {
    ScheduleWriter writer(plan, paramPointer, os);
    if (failed(writer.write()))
      return failure();
    workspaces.push_back(writer.workspaceBytes());
  }
  // A deferred call's status block, read back by the caller.
  os << "bool gpuDeferredStatus(const char *entry, const void *status,\n"
        "                       std::string &error) {\n"
        "  GpuStatus seen;\n  std::memcpy(&seen, status, sizeof seen);\n";
  for (const CudaFunctionPlan &plan : plans) {
    StringRef name = func::FuncOp(plan.func).getSymName();
    os << "  if (std::strcmp(entry, \"" << name
       << "\") == 0)\n    return gpuStatusSays(seen, entry, gpu_describe_"
       << name << ", error);\n";
  }
  os << "  error = std::string(\"no entry point '\") + entry + \"'\";\n"
        "  return false;\n}\n\n";
  return workspaces;
}

} // namespace lruc
