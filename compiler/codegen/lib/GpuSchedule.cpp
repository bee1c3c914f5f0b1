//===- GpuSchedule.cpp - The host schedule of the CUDA kernels ------------===//
//
// The GPU schedule of the model library, as the tables of
// runtime/cuda/include/lruc/cuda/Schedule.h that lruc::cuda::schedule::run
// walks through lruc_gpu_ops (runtime/include/lruc_gpu.h): per function,
// the launch plan of the CUDA source in order (each kernel with (B, status,
// its arrays), each matmul as a row-major GEMM, the last kernel copying the
// results out), each operand's address, the host scalars (lr, step,
// dropout_key) to copy in and the ops that may report bad input; the sizes
// that depend on the batch as the cases of one `gpuSize(i, B)`. Arrays are
// where the device's memory plan put them (the CPU library's, or with
// bfloat16 activations one of its own: GpuStorage::plan), in one device
// workspace, followed by the status block, the scan chain and the scalars.
//
//===----------------------------------------------------------------------===//

#include "CudaEmitter.h"
#include "EmitSupport.h"
#include "lruc/MemoryPlan.h"
#include "lruc/Transforms/Passes.h"

#include "lru/LRUOps.h"

#include "lruc/cuda/Schedule.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <array>
#include <map>

using namespace mlir;
using namespace lruc::emit;

namespace lruc {
namespace {

/// Function arguments the caller passes in host memory.
bool isHostArgument(func::FuncOp func, unsigned i) {
  auto name = func.getArgAttrOfType<StringAttr>(i, "lru.input");
  return name && llvm::is_contained({"lr", "step", "grad_scale", "dropout_key"},
                                    name.getValue());
}

} // namespace

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
    // A results copy reads each value and writes it again, and so does an
    // update in place each result (the argument it replaces, read through
    // it); the shadows kernel writes a bfloat16 copy of each parameter it
    // reads.
    const bool readAndWritten =
        launch.copiesResults ||
        (inPlaceResult(v) && v.getDefiningOp() == launch.op);
    (batched ? bytes.perExample : bytes.fixed) +=
        launch.copiesShadows ? count * (perElement + perElement / 2)
                             : count * perElement * (readAndWritten ? 2 : 1);
  }
  return bytes;
}

namespace {

/// The sizes of a library's launches and GEMMs, as C++ of the batch B, each
/// written once: what lruc::cuda::schedule::Sizes computes.
class SizeTable {
public:
  int32_t indexOf(const std::string &expr) {
    return indices.insert({expr, int32_t(indices.size())}).first->second;
  }

  void write(llvm::raw_ostream &os) const {
    os << "/// Size i of the launches and GEMMs at batch B.\n"
          "int64_t gpuSize(int32_t i, int64_t B) {\n  switch (i) {\n";
    for (const auto &[expr, i] : indices)
      os << "  case " << i << ": return " << expr << ";\n";
    os << "  }\n  (void)B;\n  return 0;\n}\n\n";
  }

private:
  /// In the order first seen.
  llvm::MapVector<std::string, int32_t, std::map<std::string, unsigned>>
      indices;
};

/// An operand's lruc::cuda::schedule::Address.
struct Address {
  StringRef region;
  int64_t index = 0, perExample = 0, offset = 0;
};

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const Address &a) {
  return os << "{" << a.region << ", " << a.index << ", " << a.perExample
            << ", " << a.offset << "}";
}

/// Writes one function's tables (lruc/cuda/Schedule.h), named after it.
class ScheduleWriter {
public:
  ScheduleWriter(const CudaFunctionPlan &plan,
                 llvm::function_ref<ParamPlace(lru::ParamOp)> paramPlace,
                 SizeTable &sizes, llvm::raw_ostream &os)
      : plan(plan), func(plan.func), memory(plan.memory),
        paramPlace(paramPlace), sizes(sizes), os(os) {}

  LogicalResult write() {
    const std::string name = func.getSymName().str();
    os << "// @" << name << ": its kernels and GEMMs in order.\n";

    // Which op a status report names.
    llvm::DenseMap<Operation *, size_t> indexOf;
    for (auto [index, op] : llvm::enumerate(func.getBody().front()))
      indexOf[&op] = index;
    llvm::SmallPtrSet<Operation *, 16> named;
    size_t reports = 0;
    for (const CudaLaunch &launch : plan.launches) {
      if (!launch.reports || !named.insert(launch.op).second)
        continue;
      os << (reports++ ? "" : "const Report " + name + "_reports[] = {\n")
         << "  {" << indexOf.lookup(launch.op) << ", "
         << quoted(launch.op->getName().getStringRef().str() + " at " +
                   describeLocation(launch.op->getLoc()));
      Value indices;
      if (auto gather = dyn_cast<lru::GatherOp>(launch.op))
        indices = gather.getIndices();
      if (auto scatter = dyn_cast<lru::ScatterAddOp>(launch.op))
        indices = scatter.getIndices();
      if (IndexOrigin origin = indices ? indexOrigin(indices) : IndexOrigin();
          !origin.input.empty())
        os << ", " << quoted(origin.input) << ", " << origin.steps;
      os << "},\n";
    }
    if (reports)
      os << "};\n";

    // The host scalars, each copied into a slot of the scalars; the
    // parameters' bfloat16 shadows after them.
    int64_t scalarBytes = 0;
    size_t copies = 0;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (!isHostArgument(func, i))
        continue;
      int64_t bytes = cast<RankedTensorType>(arg.getType()).getNumElements() *
                      elementBytes(arg.getType());
      os << (copies++ ? "" : "const HostCopy " + name + "_copies[] = {\n")
         << "  {" << i << ", " << scalarBytes << ", " << bytes << "},\n";
      addresses[arg] = {"Scalars", 0, 0, scalarBytes};
      scalarBytes += cuda::schedule::kScalarSlot;
    }
    if (copies)
      os << "};\n";
    for (Value v : plan.shadows) {
      shadows[v] = {"Scalars", 0, 0, scalarBytes};
      scalarBytes += shadowBytes(v);
    }

    // The steps, and each one's operands on a line.
    std::string launches, gemms, steps, sites;
    llvm::raw_string_ostream launchOs(launches), gemmOs(gemms), stepOs(steps),
        siteOs(sites);
    int32_t operandCount = 0, launchCount = 0, gemmCount = 0, siteCount = 0;
    os << "const Address " << name << "_operands[] = {\n";
    for (const CudaLaunch &launch : plan.launches) {
      FailureOr<SmallVector<Address>> operands =
          launch.isGemm() ? gemmOperands(launch) : launchOperands(launch);
      if (failed(operands))
        return failure();
      os << "  /* "
         << (launch.isGemm() ? "GEMM " + gemmShape(launch) : launch.kernel)
         << " */";
      for (const Address &a : *operands)
        os << " " << a << ",";
      os << "\n";
      if (launch.isGemm()) {
        writeGemm(launch, operandCount, gemmOs);
        stepOs << "  {GemmStep, " << gemmCount++ << "},\n";
      } else {
        auto number = indexOf.find(launch.op);
        const int64_t op =
            number == indexOf.end() ? int64_t(-1) : int64_t(number->second);
        launchOs << "  {" << launch.index << ", "
                 << sizes.indexOf(launch.threads) << ", "
                 << (launch.blockPerOutput ? 1 : 0) << ", "
                 << launch.blockThreads << ", "
                 << (launch.gridStride ? kGridStrideBlocks : 0) << ", " << op
                 << ", " << siteCount << ", " << launch.sites.size() << ", "
                 << operandCount << ", " << operands->size() << "}, // "
                 << launch.kernel << ": " << launch.threads << "\n";
        for (uint32_t site : launch.sites)
          siteOs << (siteCount++ % 8 ? " " : "\n  ") << site << "u,";
        stepOs << "  {LaunchStep, " << launchCount++ << "},\n";
      }
      operandCount += int32_t(operands->size());
    }
    os << "};\n";
    if (launchCount)
      os << "const Launch " << name << "_launches[] = {\n"
         << launches << "};\n";
    if (gemmCount)
      os << "const Gemm " << name << "_gemms[] = {\n" << gemms << "};\n";
    if (siteCount)
      os << "const uint32_t " << name << "_sites[] = {" << sites << "\n};\n";
    os << "const Step " << name << "_steps[] = {\n" << steps << "};\n";

    auto table = [&](size_t count, StringRef suffix) {
      return count ? name + "_" + suffix.str() : std::string("nullptr");
    };
    os << "const Function " << name << "_schedule = {\n  " << quoted(name)
       << ", gpuSize, {" << memory.total.perExample << ", "
       << memory.total.fixed << "}, " << plan.scanChainItems << ", "
       << scalarBytes << ",\n  " << table(copies, "copies") << ", " << copies
       << ", " << name << "_steps, " << plan.launches.size() << ", "
       << table(launchCount, "launches") << ", " << table(gemmCount, "gemms")
       << ",\n  " << name << "_operands, " << table(siteCount, "sites") << ", "
       << table(reports, "reports") << ", " << reports << ",\n};\n\n";
    return success();
  }

private:
  /// A parameter's bfloat16 shadow, aligned to 256 bytes.
  static int64_t shadowBytes(Value v) {
    return (tensorType(v).getNumElements() * 2 + 255) / 256 * 256;
  }

  /// Where `v` lives on the device.
  FailureOr<Address> address(Value v) {
    if (auto it = addresses.find(v); it != addresses.end())
      return it->second;
    if (auto arg = dyn_cast<BlockArgument>(v))
      return Address{"Argument", arg.getArgNumber()};
    if (auto param = v.getDefiningOp<lru::ParamOp>()) {
      ParamPlace place = paramPlace(param);
      return Address{place.state ? "State" : "Params", 0, 0,
                     int64_t(place.floats * sizeof(float))};
    }
    if (auto view = v.getDefiningOp<lru::ViewOp>())
      return address(view.getX());
    if (std::optional<unsigned> r = inPlaceResult(v))
      return Address{"Result", int64_t(*r)};
    auto slot = memory.slotOf.find(v);
    if (slot == memory.slotOf.end())
      return v.getDefiningOp()->emitError(
          "has a result the GPU schedule cannot place");
    ByteSize offset = memory.offsets[slot->second];
    return Address{"Workspace", 0, offset.perExample, offset.fixed};
  }

  /// A kernel's arrays after (B, status): its operands, then for the
  /// results kernel the caller's results, for the shadows kernel the
  /// shadows.
  FailureOr<SmallVector<Address>> launchOperands(const CudaLaunch &launch) {
    SmallVector<Address> operands;
    for (Value v : launch.operands) {
      FailureOr<Address> a = address(v);
      if (failed(a))
        return failure();
      operands.push_back(*a);
    }
    if (launch.copiesResults)
      for (int64_t r : launch.resultIndices)
        operands.push_back({"Result", r});
    if (launch.copiesShadows)
      for (Value v : launch.operands)
        operands.push_back(shadows.lookup(v));
    return operands;
  }

  /// A GEMM launch's matmul, or its two (CudaLaunch::batchedOp): the lhs,
  /// rhs and product of each. A bfloat16 GEMM reads a parameter through
  /// its shadow.
  FailureOr<SmallVector<Address>> gemmOperands(const CudaLaunch &launch) {
    SmallVector<Address> operands;
    for (Operation *op : {launch.op, launch.batchedOp}) {
      auto matmul = cast_or_null<lru::MatmulOp>(op);
      if (!matmul)
        continue;
      std::array<Value, 3> values = {matmul.getLhs(), matmul.getRhs(),
                                     matmul.getResult()};
      for (auto [i, v] : llvm::enumerate(values)) {
        if (launch.bf16Operands[i])
          if (auto it = shadows.find(storageOf(v)); it != shadows.end()) {
            operands.push_back(it->second);
            continue;
          }
        FailureOr<Address> a = address(v);
        if (failed(a))
          return failure();
        operands.push_back(*a);
      }
    }
    return operands;
  }

  /// A GEMM's sizes and row strides as C++ of B, and which operands it
  /// transposes.
  struct GemmSizes {
    std::string m, n, k, lda, ldb;
    bool transA = false, transB = false;
  };
  static GemmSizes gemmSizes(const CudaLaunch &launch) {
    auto op = cast<lru::MatmulOp>(launch.op);
    auto lhs = tensorType(op.getLhs()), rhs = tensorType(op.getRhs());
    std::string rows = productExpr(lhs.getShape().drop_back());
    GemmSizes s;
    switch (op.getKind()) {
    case lru::MatmulKind::nt: // [rows, K] . [N, K]^T
      s.m = rows, s.n = dimExpr(rhs.getDimSize(0));
      s.k = dimExpr(rhs.getDimSize(1));
      s.lda = s.k, s.ldb = s.k, s.transB = true;
      break;
    case lru::MatmulKind::nn: // [rows, K] . [K, N]
      s.m = rows, s.n = dimExpr(rhs.getDimSize(1));
      s.k = dimExpr(rhs.getDimSize(0));
      s.lda = s.k, s.ldb = s.n;
      break;
    case lru::MatmulKind::tn: // [rows, M]^T . [rows, N]
      s.m = dimExpr(lhs.getShape().back());
      s.n = dimExpr(rhs.getShape().back());
      s.k = rows, s.lda = s.m, s.ldb = s.n, s.transA = true;
      break;
    }
    return s;
  }

  /// "m x n x k" of a GEMM, for the tables' comments.
  static std::string gemmShape(const CudaLaunch &launch) {
    GemmSizes s = gemmSizes(launch);
    return s.m + " x " + s.n + " x " + s.k;
  }

  /// A GEMM launch's matmul, or its two, as row-major GEMMs (the kinds of
  /// runtime/cpu's matmuls) in one call.
  void writeGemm(const CudaLaunch &launch, int32_t firstOperand,
                 llvm::raw_ostream &out) {
    GemmSizes s = gemmSizes(launch);
    // Both operands have the lhs's element type (GpuStorage).
    auto typeOf = [&](size_t i) -> StringRef {
      return launch.bf16Operands[i] ? "LRUC_GPU_BF16" : "LRUC_GPU_F32";
    };
    out << "  {" << s.transA << ", " << s.transB << ", " << sizes.indexOf(s.m)
        << ", " << sizes.indexOf(s.n) << ", " << sizes.indexOf(s.k) << ", "
        << sizes.indexOf(s.lda) << ", " << sizes.indexOf(s.ldb) << ", "
        << sizes.indexOf(s.n) << ", " << typeOf(0) << ", " << typeOf(2) << ", "
        << (launch.batchedOp ? 2 : 1) << ", " << firstOperand << "}, // "
        << gemmShape(launch) << "\n";
  }

  const CudaFunctionPlan &plan;
  func::FuncOp func;
  const MemoryPlan &memory;
  llvm::function_ref<ParamPlace(lru::ParamOp)> paramPlace;
  SizeTable &sizes;
  llvm::raw_ostream &os;
  llvm::DenseMap<Value, Address> addresses; ///< host scalars' copies
  llvm::DenseMap<Value, Address> shadows;   ///< parameters' shadows
};

} // namespace

LogicalResult
writeGpuSchedule(const std::vector<CudaFunctionPlan> &plans,
                 llvm::function_ref<ParamPlace(lru::ParamOp)> paramPlace,
                 llvm::raw_ostream &os) {
  SizeTable sizes;
  std::string tables;
  llvm::raw_string_ostream tableOs(tables);
  for (const CudaFunctionPlan &plan : plans)
    if (failed(ScheduleWriter(plan, paramPlace, sizes, tableOs).write()))
      return failure();
  os << "// --- The GPU schedule (lruc/cuda/Schedule.h) "
        "----------------------------\n\n"
        "using namespace lruc::cuda::schedule;\n\n";
  sizes.write(os);
  os << tables << "const Function *const kGpuSchedules[] = {";
  for (auto [i, plan] : llvm::enumerate(plans))
    os << (i ? ", " : "") << "&" << func::FuncOp(plan.func).getSymName()
       << "_schedule";
  os << "};\n\n";
  os << R"cpp(size_t gpuWorkspaceBytes(int64_t batch) {
  int64_t bytes = 0;
  for (const Function *f : kGpuSchedules)
    bytes = std::max(bytes, workspaceBytes(*f, batch));
  return size_t(bytes);
}

/// What a deferred call's status block, read back, says of entry point
/// `entry`.
bool gpuDeferredStatus(const char *entry, const void *status,
                       std::string &error) {
  for (const Function *f : kGpuSchedules)
    if (std::strcmp(entry, f->name) == 0)
      return statusSays(*f, status, error);
  error = std::string("no entry point '") + entry + "'";
  return false;
}

)cpp";
  return success();
}

} // namespace lruc
