//===- CppEmitter.cpp - Primitive-level IR to a C++ model library ---------===//
//
// One C++ function per IR function (@forward, @forward_train, @backward,
// @train_step) that runs its ops in order: elementwise ops as plain loops,
// the structural ones as calls into runtime/cpu (lruc/cpu/Kernels.h). Then
// the C ABI of runtime/include/lruc_model.h: tables describing the
// parameters, inputs and outputs, and entry points that lay the caller's
// blocks out as the functions' arguments and results. Each IR function is
// a translation unit of its own, the tables and the C ABI another, the GPU
// launch schedule a third (LibrarySource): the host compiler builds them
// side by side.
//
// Every value gets its own buffer, sized when the call knows its batch; the
// only dynamic dim is the leading batch dim `B`. Results are copied out at
// the end, so an output may alias an input (train_step updates in place).
//
//===----------------------------------------------------------------------===//

#include "CudaEmitter.h"
#include "EmitSupport.h"
#include "lruc/Autodiff.h"
#include "lruc/AutodiffPasses.h"
#include "lruc/Codegen.h"
#include "lruc/MemoryPlan.h"
#include "lruc_model.h" // LRUC_ABI_VERSION, written into the manifest

#include "lru/LRUOps.h"
#include "lruc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

using namespace mlir;
using namespace lruc::emit;

namespace lruc {
namespace {

//===----------------------------------------------------------------------===//
// The parameter layout
//===----------------------------------------------------------------------===//

/// A parameter (or running statistic) and its place in its block.
struct ParamSlot {
  mutable lru::ParamOp op; ///< its first declaration (ops are handles)
  uint64_t offset = 0;
  uint64_t size = 0;
};

/// Trainable parameters in one block, running statistics in another, each
/// in the order of first declaration in @forward_train.
struct Layout {
  std::vector<ParamSlot> params, state;
  llvm::StringMap<std::pair<bool, size_t>> byName; ///< (is state, index)
  uint64_t paramFloats = 0, stateFloats = 0;

  const ParamSlot *lookup(StringRef name) const {
    auto it = byName.find(name);
    if (it == byName.end())
      return nullptr;
    auto [isState, index] = it->second;
    return isState ? &state[index] : &params[index];
  }
  bool isState(StringRef name) const { return byName.lookup(name).first; }
};

Layout layoutOf(func::FuncOp forwardTrain) {
  Layout layout;
  forwardTrain.walk([&](lru::ParamOp op) {
    if (layout.byName.count(op.getName()))
      return;
    bool state = op.getGroup() == lru::ParamGroup::state;
    auto &slots = state ? layout.state : layout.params;
    uint64_t &floats = state ? layout.stateFloats : layout.paramFloats;
    ParamSlot slot{
        op, floats,
        uint64_t(cast<RankedTensorType>(op.getType()).getNumElements())};
    floats += slot.size;
    layout.byName[op.getName()] = {state, slots.size()};
    slots.push_back(slot);
  });
  return layout;
}

//===----------------------------------------------------------------------===//
// Types and sizes
//===----------------------------------------------------------------------===//

std::string shapeExpr(RankedTensorType type) {
  std::string s = "Shape{" + std::to_string(type.getRank()) + ", {";
  for (int64_t i = 0; i < type.getRank(); ++i)
    s += (i ? ", " : "") + dimExpr(type.getDimSize(i));
  return s + "}}";
}

/// A param's init as JSON: {"kind": ..., and its args}.
llvm::json::Object initObject(lru::ParamOp op) {
  llvm::json::Object init{{"kind", lru::stringifyInitKind(op.getInit())}};
  if (DictionaryAttr args = op.getArgsAttr())
    for (NamedAttribute arg : args) {
      if (auto s = dyn_cast<StringAttr>(arg.getValue()))
        init[arg.getName().str()] = s.str();
      else if (auto n = op.getArgNumber(arg.getName()))
        init[arg.getName().str()] = *n;
    }
  return init;
}

std::string initJson(lru::ParamOp op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(initObject(op));
  return os.str();
}

//===----------------------------------------------------------------------===//
// Functions
//===----------------------------------------------------------------------===//

/// How a gather's or scatter_add's index outside the table is reported:
/// its `lruc::cpu::IndexSource`.
std::string indexSource(Value indices) {
  IndexOrigin origin = indexOrigin(indices);
  return "lruc::cpu::IndexSource{" +
         quoted(origin.input.empty() ? "indices" : origin.input) + ", " +
         std::to_string(origin.steps) + "}";
}

/// Emits one IR function as
///   bool lruc_library::run_NAME(int64_t B, const float *params,
///       const float *state, const void *const *args,
///       void *const *results, std::string &error)
class FunctionEmitter {
public:
  /// An op's row in the profile table (lruc_profile.h).
  struct ProfiledOp {
    std::string function, op, location;
  };

  FunctionEmitter(const Layout &layout, bool profile)
      : layout(layout), profile(profile) {}

  const std::vector<ProfiledOp> &profiledOps() const { return profiled; }

  /// Writes `func`'s unit of the library to `out`: the declarations of the
  /// fused loops it calls, then `lruc_library::run_<name>`, which the model
  /// unit calls; and to `loops` the loops no function before it called
  /// (every loop function is defined once a library: the loops' units are
  /// compiled for speed, the functions' for a quick build).
  LogicalResult emit(func::FuncOp func, llvm::raw_ostream &out,
                     llvm::raw_ostream &loops) {
    os << "// @" << func.getSymName() << "\n";
    os << "bool run_" << func.getSymName()
       << "(int64_t B, const float *params, const float *state,\n"
          "    const void *const *args, void *const *results, std::string "
          "&error) {\n";
    os << "  (void)params; (void)state;\n";
    FailureOr<MemoryPlan> planned = readMemoryPlan(func);
    if (failed(planned))
      return failure();
    plan = std::move(*planned);
    function = func;
    os << "  // " << plan.slotOf.size() << " buffers in " << plan.offsets.size()
       << " slots of one workspace.\n";
    os << "  lruc::cpu::WorkspaceLease lease;\n  if (!lease.take("
       << plan.total.perExample << ", " << plan.total.fixed
       << ", B, error))\n    return false;\n";
    os << "  char *workspace = lease.data();\n";
    os << "  (void)workspace;\n";
    for (BlockArgument arg : func.getArguments()) {
      if (failed(checkType(func, arg)))
        return failure();
      std::string name = "a" + std::to_string(arg.getArgNumber());
      std::string type = elementType(arg.getType());
      os << "  auto *" << name << " = static_cast<const " << type << " *>(args["
         << arg.getArgNumber() << "]);\n";
      names[arg] = name;
    }
    // The matmuls of an epilogue group run in its loop (emitEpilogue) but in
    // a --profile build, which times each op alone.
    epilogueMatmuls.clear();
    emittedTogether.clear();
    if (!profile)
      for (auto group : func.getBody().front().getOps<lru::FusedOp>())
        for (lru::MatmulOp matmul : group.getEpilogueMatmuls())
          epilogueMatmuls.insert(matmul);
    bool stepConstants = emitStepConstantsLease(func);
    for (Operation &op : func.getBody().front()) {
      for (Value result : op.getResults())
        if (failed(checkType(&op, result)))
          return failure();
      if (epilogueMatmuls.contains(&op) || emittedTogether.contains(&op))
        continue;
      // A run of matmuls marked lru.together as one call, but in a
      // --profile build (each op timed alone) and where a step constant
      // (emitted in its own block) is one of them.
      if (auto matmul = dyn_cast<lru::MatmulOp>(op); matmul && !profile) {
        SmallVector<lru::MatmulOp, 2> run = matmul.getTogetherRun();
        if (run.size() > 1 && llvm::none_of(run, [](lru::MatmulOp m) {
              return m->hasAttr(kStepConstantAttr);
            })) {
          for (lru::MatmulOp member : run)
            define(member.getResult());
          os << "  " << matmulsTogetherCall(run) << "\n";
          for (lru::MatmulOp member : run)
            emittedTogether.insert(member);
          continue;
        }
      }
      bool timed =
          profile && !isa<lru::ParamOp, lru::ViewOp, arith::ConstantOp>(op);
      std::string start = "p" + std::to_string(counter++);
      if (timed)
        os << "  const auto " << start << " = profileNow();\n";
      bool constant = op.hasAttr(kStepConstantAttr);
      if (constant) {
        // Named before the block, read after it.
        for (Value result : op.getResults())
          define(result);
        os << "  if (!constants.current()) {\n";
      }
      if (failed(emitOp(&op)))
        return failure();
      if (constant)
        os << "  }\n";
      if (timed) {
        os << "  profileAdd(" << profiled.size() << ", " << start << ", "
           << bytesMoved(&op) << ", " << flopsOf(&op) << ");\n";
        // A group that holds a scan is timed as a scan: its own kind.
        std::string name = op.getName().getStringRef().str();
        if (auto fused = dyn_cast<lru::FusedOp>(op); fused && fused.getScan())
          name += "+scan";
        profiled.push_back(
            {func.getSymName().str(), name, describeLocation(op.getLoc())});
      }
    }
    if (stepConstants)
      os << "  if (!constants.current())\n    constants.computed();\n";
    os << "  return true;\n}\n\n";
    out << "namespace lruc_library {\n\n";
    for (StringRef declaration : loopDeclarations)
      out << declaration << ";\n";
    out << (loopDeclarations.empty() ? "" : "\n") << bodyText
        << "} // namespace lruc_library\n";
    if (!kernelText.empty())
      loops << "namespace lruc_library {\n\n"
            << kernelText << "} // namespace lruc_library\n";
    kernelText.clear();
    bodyText.clear();
    loopDeclarations.clear();
    return success();
  }

private:
  LogicalResult checkType(Operation *where, Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || elementType(type).empty())
      return where->emitError("the CPU backend has no storage for ")
             << v.getType();
    for (int64_t i = 1; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        return where->emitError("the CPU backend supports a dynamic size "
                                "only in the leading (batch) dim, not in ")
               << type;
    return success();
  }

  /// The values of the function's lru.step_constant ops live in a
  /// StepConstantsLease (lruc/cpu/Kernels.h) instead of the workspace: the
  /// ops run only when the parameters they read changed since the last
  /// call. Declares the lease `constants`; whether the function has any.
  bool emitStepConstantsLease(func::FuncOp func) {
    constantOffsets.clear();
    int64_t bytes = 0;
    std::vector<std::string> ranges;
    llvm::DenseSet<Operation *> read;
    for (Operation &op : func.getBody().front()) {
      if (!op.hasAttr(kStepConstantAttr))
        continue;
      for (Value result : op.getResults()) {
        constantOffsets[result] = bytes;
        bytes += bufferSize(result).fixed;
      }
      for (Value operand : op.getOperands()) {
        auto param = operand.getDefiningOp<lru::ParamOp>();
        if (!param || !read.insert(param).second)
          continue;
        const ParamSlot *slot = layout.lookup(param.getName());
        if (!slot) // emitParam reports it
          continue;
        ranges.push_back("{" +
                         std::string(layout.isState(param.getName())
                                         ? "true"
                                         : "false") +
                         ", " + std::to_string(slot->offset) + ", " +
                         std::to_string(slot->size) + "}");
      }
    }
    if (constantOffsets.empty())
      return false;
    os << "  // What " << constantOffsets.size()
       << " values computed from parameters alone were computed from.\n"
          "  static const lruc::cpu::StepConstantsLease::Range kConstantReads[] "
          "= {\n";
    for (const std::string &range : ranges)
      os << "    " << range << ",\n";
    os << "  };\n  lruc::cpu::StepConstantsLease constants(" << bytes
       << ", params, state, kConstantReads, " << ranges.size() << ");\n";
    return true;
  }

  /// A cross entropy's class weights as a static array named after its
  /// result `y` (written before the call), or "nullptr" without them.
  std::string classWeights(const std::string &y,
                           std::optional<ArrayRef<float>> weights) {
    if (!weights)
      return "nullptr";
    std::string name = y + "_class_weights";
    os << "  static const float " << name << "[] = {";
    for (auto [i, w] : llvm::enumerate(*weights))
      os << (i ? ", " : "") << floatLiteral(w);
    os << "};\n";
    return name;
  }

  /// Names `v`'s buffer: its slot of the workspace (lruc/MemoryPlan.h), or
  /// for a step constant its place in the lease (named once, before its op).
  std::string define(Value v) {
    auto constant = constantOffsets.find(v);
    if (constant != constantOffsets.end()) {
      if (names.count(v))
        return names.lookup(v);
      std::string name = "v" + std::to_string(counter++);
      os << "  auto *" << name << " = reinterpret_cast<"
         << elementType(v.getType()) << " *>(constants.data() + "
         << constant->second << ");\n";
      names[v] = name;
      return name;
    }
    std::string name = "v" + std::to_string(counter++);
    if (std::optional<unsigned> result = inPlaceResult(v)) {
      // Over the argument it updates, in the caller's block.
      os << "  auto *" << name << " = static_cast<" << elementType(v.getType())
         << " *>(results[" << *result << "]);\n";
      names[v] = name;
      return name;
    }
    ByteSize offset = plan.offsets[plan.slotOf.lookup(v)];
    os << "  auto *" << name << " = reinterpret_cast<"
       << elementType(v.getType()) << " *>(workspace + " << offset.perExample
       << " * B + " << offset.fixed << ");\n";
    names[v] = name;
    return name;
  }

  std::string count(Value v) { return productExpr(tensorType(v).getShape()); }

  /// The bytes an op reads and writes at least once: its operands and
  /// results, as a C++ expression of B.
  std::string bytesMoved(Operation *op) {
    std::string sum = "0";
    auto add = [&](Value v) {
      sum += " + uint64_t(" + count(v) + ") * sizeof(" +
             elementType(v.getType()) + ")";
    };
    for (Value v : op->getOperands())
      if (!isa<func::ReturnOp>(op) || !inPlaceResult(v)) // copied at the end
        add(v);
    llvm::for_each(op->getResults(), add);
    return sum;
  }

  /// 2 x the multiply-adds of a matmul (0 for other ops), in C++.
  std::string flopsOf(Operation *op) {
    auto matmul = dyn_cast<lru::MatmulOp>(op);
    if (!matmul)
      return "0";
    auto lhs = tensorType(matmul.getLhs());
    std::string contracted = matmul.getKind() == lru::MatmulKind::tn
                                 ? productExpr(lhs.getShape().drop_back())
                                 : dimExpr(lhs.getShape().back());
    return "2 * uint64_t(" + count(matmul.getResult()) + ") * uint64_t(" +
           contracted + ")";
  }
  std::string dim(Value v, int64_t i) {
    return dimExpr(tensorType(v).getDimSize(i));
  }

  /// An elementwise op alone: `y[i] = expr` for every element.
  LogicalResult emitElementwise(Operation *op, StringRef expr) {
    SmallVector<std::string> args;
    for (Value operand : op->getOperands())
      args.push_back(get(operand) + "[i]");
    std::string y = define(op->getResult(0));
    os << "  for (int64_t i = 0; i < " << count(op->getResult(0))
       << "; ++i)\n    " << y << "[i] = " << substitute(expr, args) << ";\n";
    return success();
  }

  /// A fused group's loop, written as a function of its own, and how to
  /// call it: `kernel(B, [block,] begin, end<args>)` over [0, units), split
  /// into parts of at least `grain` units.
  struct FusedCall {
    std::string kernel, args, units, grain;
    /// A scan's channels a part (a local of the calling function).
    std::string block;
    bool scan = false;
    /// What completes the group's sums after the loop (their rows of
    /// partial sums added into the first).
    std::string finish;
  };

  /// An lru.fused group as one loop: splat constants as scalars before it,
  /// each op as a scalar temporary, each yielded value stored.
  LogicalResult emitFused(lru::FusedOp op) {
    if (!op.getEpilogueMatmuls().empty() && !profile)
      return emitEpilogue(op);
    FailureOr<FusedCall> call =
        writeFusedKernel(op, [&](Value result) { return define(result); });
    if (failed(call))
      return failure();
    writeParallelLoop(*call, "");
    os << call->finish;
    return success();
  }

  /// `parallelFor` over the call's units, each part running `before` (C++
  /// of `begin` and `end`), then the group's loop function on the part.
  void writeParallelLoop(const FusedCall &call, StringRef before) {
    os << "  lruc::cpu::parallelFor(" << call.units << ", " << call.grain
       << ", [&](int64_t begin, int64_t end) {\n"
       << before << "    " << call.kernel << "(B, "
       << (call.scan ? call.block + ", " : "") << "begin, end" << call.args
       << ");\n  });\n";
  }

  /// A group run as the epilogue of its matmuls (lru.epilogue): each part
  /// of its loop first computes its rows of the products (OpenBLAS on the
  /// part's thread), then runs the group on them while they are in cache.
  LogicalResult emitEpilogue(lru::FusedOp op) {
    SmallVector<lru::MatmulOp, 2> matmuls = op.getEpilogueMatmuls();
    for (lru::MatmulOp matmul : matmuls)
      define(matmul.getResult());
    FailureOr<FusedCall> call =
        writeFusedKernel(op, [&](Value result) { return define(result); });
    if (failed(call))
      return failure();
    if (call->scan)
      return emitScanEpilogue(matmuls, *call);
    // With fewer parts than threads (step mode's few rows), each product
    // is better split across the threads on its own, as without epilogue.
    writePartsForEveryThread(*call);
    // A part is a range of rows, or of chunks of rows for a group with sums.
    const emit::FusedLayout layout = emit::FusedLayout::of(op);
    std::string r0 = layout.sums ? layout.firstRowOf("begin") : "begin";
    std::string r1 = layout.sums ? layout.stopRowOf("end - 1") : "end";
    std::string products =
        "    const int64_t r0 = " + r0 + ", r1 = " + r1 + ";\n";
    for (lru::MatmulOp matmul : matmuls)
      products += "    " + matmulCall(matmul, "r0, r1") + "\n";
    writeParallelLoop(*call, products);
    os << "  } else {\n";
    if (canSplitColumns(op)) {
      // As a one-step scan's (emitScanEpilogue): each thread its columns
      // of the products and of the group, all rows.
      FailureOr<FusedCall> byColumns = writeFusedKernel(
          op, [&](Value result) { return get(result); }, nullptr, true);
      if (failed(byColumns))
        return failure();
      writeColumnParts(matmuls, [&](StringRef block) {
        return byColumns->kernel + "(B, 0, " + byColumns->units + ", c0, c1" +
               byColumns->args + ");";
      });
    } else {
      os << "  "
         << (matmuls.size() > 1 ? matmulsTogetherCall(matmuls)
                                : matmulCall(matmuls.front(), ""))
         << "\n";
      writeParallelLoop(*call, "");
    }
    os << "  }\n" << call->finish;
    return success();
  }

  /// `if (...) {`: whether the call has a part for every thread (else an
  /// epilogue splits its products' columns).
  void writePartsForEveryThread(const FusedCall &call) {
    os << "  if ((" << call.units << " + " << call.grain << " - 1) / "
       << call.grain << " >= lruc::cpu::threadCount()) {\n";
  }

  /// Whether an epilogue group's loop can run over a range of columns: a
  /// row loop (a static last dim), without sums or dropout (whose
  /// decisions are drawn a row at a time).
  bool canSplitColumns(lru::FusedOp op) {
    const emit::FusedLayout layout = emit::FusedLayout::of(op);
    return layout.nested && !layout.sums && !layout.scan &&
           op.getBody().front().getOps<lru::DropoutMaskOp>().empty();
  }

  /// One parallel region over ranges of the products' columns (the last
  /// dim of the matmuls' results, the epilogue's): each part computes its
  /// columns c0..c1 of every product, then runs `partCall(block)` (C++ of
  /// c0, c1 and the block size's name).
  void writeColumnParts(ArrayRef<lru::MatmulOp> matmuls,
                        llvm::function_ref<std::string(StringRef)> partCall) {
    lru::MatmulOp first = matmuls.front();
    const std::string width =
        std::to_string(tensorType(first.getResult()).getShape().back());
    // The multiply-adds of a column: each product's rows times its k.
    std::string work;
    for (lru::MatmulOp matmul : matmuls) {
      auto lhs = tensorType(matmul.getLhs());
      work += std::string(work.empty() ? "" : " + ") +
              productExpr(lhs.getShape().drop_back()) + " * " +
              dimExpr(lhs.getShape().back());
    }
    const std::string block = "columns" + std::to_string(counter++);
    os << "  const int64_t " << block << " = lruc::cpu::productColumnBlock("
       << width << ", " << work << ");\n"
       << "  const int64_t parts = (" << width << " + " << block << " - 1) / "
       << block << ";\n"
       << "  lruc::cpu::parallelFor(parts, 1, [&](int64_t p0, int64_t p1) {\n"
       << "    for (int64_t p = p0; p < p1; ++p) {\n"
       << "      const int64_t c0 = p * " << block
       << ", c1 = std::min<int64_t>(" << width << ", c0 + " << block << ");\n";
    for (lru::MatmulOp matmul : matmuls)
      os << "      " << matmulColumnsCall(matmul, "c0, c1") << "\n";
    os << "      " << partCall(block) << "\n"
       << "    }\n  });\n";
  }

  /// A scan of one step (step mode) as the epilogue of its `B u` products.
  /// With a part for every thread, as without epilogue: the products, then
  /// the scan. Otherwise (a few sequences) the threads split the channels,
  /// which are the products' columns: each computes its columns of the
  /// products and scans those channels of every sequence, so that no thread
  /// waits for or reads what another wrote (on the 2-core machines here a
  /// cache line takes ~300 ns from one core to the other).
  LogicalResult emitScanEpilogue(ArrayRef<lru::MatmulOp> matmuls,
                                 const FusedCall &call) {
    writePartsForEveryThread(call);
    os << "  "
       << (matmuls.size() > 1 ? matmulsTogetherCall(matmuls)
                              : matmulCall(matmuls.front(), ""))
       << "\n";
    writeParallelLoop(call, "");
    os << "  } else {\n";
    // The scan's parts are (sequence, block of channels): with the column
    // block as its channel block, part p's channels of sequence s are unit
    // s * parts + p.
    writeColumnParts(matmuls, [&](StringRef block) {
      return "for (int64_t s = 0; s < B; ++s)\n        " + call.kernel +
             "(B, " + block.str() + ", s * parts + p, s * parts + p + 1" +
             call.args + ");";
    });
    os << "  }\n" << call.finish;
    return success();
  }

  /// The call of an `nt` or `nn` matmul's kernel for columns `columnRange`
  /// ("c0, c1") of its result, all rows, on the calling thread.
  std::string matmulColumnsCall(lru::MatmulOp o, StringRef columnRange) {
    std::string kind = o.getKind() == lru::MatmulKind::nt ? "NT" : "NN";
    return "lruc::cpu::matmul" + kind + "Columns(" +
           matmulArgs(
               o, productExpr(tensorType(o.getLhs()).getShape().drop_back())) +
           ", " + columnRange.str() + ");";
  }

  /// The call of an `nt` or `nn` matmul's kernel, of all its rows (the
  /// threads split them), or of `rowRange` ("r0, r1") on the calling thread.
  std::string matmulCall(lru::MatmulOp o, StringRef rowRange) {
    auto lhs = tensorType(o.getLhs());
    std::string kind = o.getKind() == lru::MatmulKind::nt ? "NT" : "NN";
    std::string rows = rowRange.empty()
                           ? productExpr(lhs.getShape().drop_back())
                           : rowRange.str();
    return "lruc::cpu::matmul" + kind + (rowRange.empty() ? "(" : "Rows(") +
           matmulArgs(o, rows) + ");";
  }

  /// The call that computes `nt` and `nn` matmuls that do not read one
  /// another's results at once, all their rows (results defined already).
  std::string matmulsTogetherCall(ArrayRef<lru::MatmulOp> matmuls) {
    std::string call = "lruc::cpu::matmulsTogether({";
    for (auto [i, member] : llvm::enumerate(matmuls)) {
      lru::MatmulOp o = member;
      std::string rows =
          productExpr(tensorType(o.getLhs()).getShape().drop_back());
      call += std::string(i ? ", " : "") + "{" + matmulArgs(o, rows) + ", " +
              (o.getKind() == lru::MatmulKind::nn ? "true" : "false") + "}";
    }
    return call + "});";
  }

  /// x, w, rows, n, k, y of an `nt` or `nn` matmul's kernel.
  std::string matmulArgs(lru::MatmulOp o, StringRef rows) {
    auto rhs = tensorType(o.getRhs());
    return get(o.getLhs()) + ", " + get(o.getRhs()) + ", " + rows.str() +
           ", " + dimExpr(rhs.getDimSize(0)) + ", " +
           dimExpr(rhs.getDimSize(1)) + ", " + get(o.getResult());
  }

  /// An lru.multi_tensor: its groups' loops as one parallel loop over the
  /// parts of all of them (a part is one group's range of units), instead
  /// of a parallel loop per group.
  LogicalResult emitMultiTensor(lru::MultiTensorOp op) {
    Block &body = op.getBody().front();
    for (auto [arg, input] : llvm::zip(body.getArguments(), op.getInputs()))
      names[arg] = get(input);
    llvm::DenseMap<Value, Value> outer;
    for (auto [inner, result] :
         llvm::zip(body.getTerminator()->getOperands(), op.getResults()))
      outer[inner] = result;
    SmallVector<FusedCall> calls;
    const llvm::DenseMap<Value, unsigned> writtenOver =
        inputsWrittenOver(op, function);
    for (lru::FusedOp group : op.getGroups()) {
      // A result written in place (lru.in_place) is read as the argument
      // it updates, through its output's pointer.
      llvm::DenseMap<Value, unsigned> overwritten;
      for (auto [k, result] : llvm::enumerate(group.getResults()))
        for (Value input : group.getInputs())
          if (auto it = writtenOver.find(input);
              it != writtenOver.end() &&
              op.getResult(it->second) == outer.lookup(result))
            overwritten[input] = unsigned(k);
      FailureOr<FusedCall> call = writeFusedKernel(
          group, [&](Value result) { return define(outer.lookup(result)); },
          &overwritten);
      if (failed(call))
        return failure();
      calls.push_back(std::move(*call));
    }
    // ends[k]: the parts of groups 0..k.
    std::string ends = "mt" + std::to_string(counter++);
    os << "  int64_t " << ends << "[" << calls.size() << "];\n";
    for (auto [k, call] : llvm::enumerate(calls))
      os << "  " << ends << "[" << k << "] = "
         << (k ? ends + "[" + std::to_string(k - 1) + "] + " : "") << "(("
         << call.units << ") + " << call.grain << " - 1) / " << call.grain
         << ";\n";
    os << "  lruc::cpu::parallelFor(" << ends << "[" << calls.size() - 1
       << "], 1, [&](int64_t begin, int64_t end) {\n"
       << "    for (int64_t part = begin; part < end; ++part) {\n";
    for (auto [k, call] : llvm::enumerate(calls)) {
      std::string start =
          k ? ends + "[" + std::to_string(k - 1) + "]" : std::string("0");
      os << "      " << (k ? "else if" : "if") << " (part < " << ends << "["
         << k << "]) {\n"
         << "        const int64_t first = (part - " << start << ") * "
         << call.grain << ";\n"
         << "        " << call.kernel
         << "(B, first, std::min<int64_t>(" << call.units << ", first + "
         << call.grain << ")" << call.args << ");\n      }\n";
    }
    os << "    }\n  });\n";
    return success();
  }

  /// Writes `op`'s loop function to the kernel text; `output` names the
  /// buffer of each result. For a scan, also the call's block size (the
  /// channels of a part).
  FailureOr<FusedCall>
  writeFusedKernel(lru::FusedOp op,
                   llvm::function_ref<std::string(Value)> output,
                   const llvm::DenseMap<Value, unsigned> *overwritten = nullptr,
                   bool columns = false) {
    // The loop is a function of its own, called with the group's arrays as
    // restrict-qualified parameters: the memory plan never places a result
    // over a value it reads, and without that promise GCC gives up on loops
    // over many arrays (too many run-time alias checks), which keeps the
    // exp, GELU and sigmoid of whole layers scalar.
    Block &body = op.getBody().front();
    FusedCall call;
    // The loop function's names are its own (numbered from zero here), so
    // that groups that compute the same thing (each layer's, in each IR
    // function) are the same text, written and compiled once
    // (loopFunctions).
    unsigned numbering = 0;
    emit::FusedBody element(op, "lruc::cpu", numbering,
                            emit::FusedBody::ComplexStores::Parts);
    SmallVector<std::string> params;
    llvm::DenseMap<Value, std::string> restricted;
    for (auto [arg, input] : llvm::zip(body.getArguments(), op.getInputs())) {
      if (overwritten && overwritten->count(input)) {
        element.bindInput(arg,
                          "out" + std::to_string(overwritten->lookup(input)));
        continue;
      }
      std::string &local = restricted[input];
      if (local.empty()) {
        local = "in" + std::to_string(params.size());
        params.push_back("const " + elementType(input.getType()) +
                         " *__restrict " + local);
        call.args += ", " + get(input);
      }
      element.bindInput(arg, local);
    }
    SmallVector<std::string> outputs, buffers;
    for (Value result : op.getResults()) {
      std::string local = "out" + std::to_string(outputs.size());
      params.push_back(elementType(result.getType()) + " *__restrict " + local);
      buffers.push_back(output(result));
      call.args += ", " + buffers.back();
      outputs.push_back(local);
    }
    // Dropout sites are arguments too: layers that differ in them alone
    // share the function.
    for (lru::DropoutMaskOp dropout : element.dropouts()) {
      params.push_back("uint32_t " + element.siteName(dropout));
      call.args += ", " + std::to_string(dropout.getSite()) + "u";
    }
    const emit::FusedLayout &layout = element.getLayout();
    auto shape = op.getLoopType().getShape();
    // Each sum's accumulators of a chunk, an array over the last dim (a
    // complex sum as two float arrays, which GCC vectorises), and the
    // stores of a chunk's row of partial sums.
    auto sumOf = [](unsigned n, StringRef part) {
      return "sum" + std::to_string(n) + part.str() + "[j]";
    };
    // A scan's chunks are runs of steps: each chunk's sums start again
    // from zero (sumResets).
    std::string sumDeclarations, sumStores, sumResets;
    for (auto [n, result] : llvm::enumerate(op.getResults())) {
      if (!op.getReduction(unsigned(n)))
        continue;
      std::string sum = "sum" + std::to_string(n), out = outputs[n];
      std::string width = layout.last;
      if (isComplex(result.getType())) {
        sumDeclarations += "   float " + sum + "re[" + width + "] = {}, " +
                           sum + "im[" + width + "] = {};\n";
        sumStores += "    reinterpret_cast<float *>(" + out +
                     " + row + j)[0] = " + sum + "re[j];\n" +
                     "    reinterpret_cast<float *>(" + out +
                     " + row + j)[1] = " + sum + "im[j];\n";
        sumResets += "    " + sum + "re[j] = " + sum + "im[j] = 0.0f;\n";
        width = "2 * " + width;
      } else {
        sumDeclarations +=
            "   float " + sum + "[" + width + "] = {};\n";
        sumStores += "    " + out + "[row + j] = " + sum + "[j];\n";
        sumResets += "    " + sum + "[j] = 0.0f;\n";
      }
      call.finish += "  lruc::cpu::sumPartials(reinterpret_cast<float *>(" +
                     buffers[n] + "), " + layout.chunks + ", " + width +
                     ");\n";
    }
    // Nested loops, rows then the last dim, when the last dim is static
    // (emit::FusedLayout). The rows (or the elements) are split across
    // lruc's threads, at least 16K elements a part; a group with a scan
    // runs along the scan's time dim, one sequence a part.
    lru::ScanOp scan = layout.scan;
    call.scan = bool(scan);
    const bool oneStep = scan && shape[1] == 1;
    std::string lengths;
    if (scan) {
      if (Value l = scan.getLengths()) {
        lengths = element.arrayOf(l);
        Value outside = op.getInputs()[cast<BlockArgument>(l).getArgNumber()];
        checked("lruc::cpu::checkLengths(" + get(outside) + ", B, " +
                layout.steps + ", error)");
      }
      // Parts are (sequence, block of channels): whole rows unless there
      // are fewer sequences than threads (lruc::cpu::scanChannelBlock).
      call.block = "block" + std::to_string(counter++);
      os << "  const int64_t " << call.block
         << " = lruc::cpu::scanChannelBlock(B, " << shape[2] << ");\n";
      call.units = "B * ((" + std::to_string(shape[2]) + " + " + call.block +
                   " - 1) / " + call.block + ")";
      call.grain = "std::max<int64_t>(1, 16384 / (" + std::to_string(shape[1]) +
                   " * " + call.block + "))";
    } else if (layout.sums) {
      // Parts are chunks of rows, each summed into its row of partial sums.
      call.units = layout.chunks;
      call.grain = std::to_string(std::max<int64_t>(
          1, 16384 / (op.getReductionChunkRows() * shape.back())));
    } else {
      call.units = layout.nested ? layout.rows : count(op.getResult(0));
      call.grain =
          layout.nested
              ? std::to_string(std::max<int64_t>(1, 16384 / shape.back()))
              : "16384";
    }

    // The function's text after its name.
    std::string text;
    llvm::raw_string_ostream k(text);
    // A row loop over a range of columns (columns: a step-mode epilogue
    // split by columns, canSplitColumns) takes the range after its rows.
    k << "(int64_t B, " << (scan ? "int64_t block, " : "")
      << "int64_t begin, int64_t end"
      << (columns ? ", int64_t j0, int64_t j1" : "");
    for (const std::string &p : params)
      k << ", " << p;
    k << ") {\n";
    element.writeConstants(k);
    std::string state;
    const std::string &last = layout.last;
    if (scan) {
      // The state of each channel stays in a local array across the time
      // loop; padded steps (t >= length) leave it alone and output 0, and a
      // reverse scan takes the real steps from the last one down.
      // A complex state is kept as two float arrays: GCC vectorises
      // neither a loop that stores std::complex elements nor one over an
      // array of them.
      state = "state" + std::to_string(numbering++);
      Value init = scan.getInit();
      std::string initValue =
          init ? element.arrayOf(init) + "[s * " + last + " + j]" : "0.0f";
      // One step (step mode): the state is a scalar of the element, not an
      // array kept across the time loop (whose copy-in and stores, dead
      // after one step, took most of the loop's time).
      std::string stateDeclaration;
      if (oneStep)
        stateDeclaration =
            isComplex(scan.getType())
                ? "    float " + state + "re = std::real(" + initValue + "), " +
                      state + "im = std::imag(" + initValue + ");\n"
                : "    float " + state + " = " + initValue + ";\n";
      k << "  const int64_t parts = (" << last << " + block - 1) / block;\n"
        << "  for (int64_t u = begin; u < end; ++u) {\n"
        << "   const int64_t s = u / parts, j0 = u % parts * block;\n"
        << "   const int64_t j1 = std::min<int64_t>(" << last
        << ", j0 + block);\n"
        << "   const int64_t length = "
        << (lengths.empty() ? layout.steps : lengths + "[s]") << ";\n";
      if (!oneStep) {
        if (isComplex(scan.getType()))
          k << "   float " << state << "re[" << last << "], " << state << "im["
            << last << "];\n"
            << "   for (int64_t j = j0; j < j1; ++j) {\n"
            << "    " << state << "re[j] = std::real(" << initValue << ");\n"
            << "    " << state << "im[j] = std::imag(" << initValue << ");\n"
            << "   }\n";
        else
          k << "   float " << state << "[" << last << "];\n"
            << "   for (int64_t j = j0; j < j1; ++j)\n"
            << "    " << state << "[j] = " << initValue << ";\n";
      }
      k << sumDeclarations << "   for (int64_t k = 0; k < " << layout.steps
        << "; ++k) {\n"
        << "    const int64_t t = "
        << (scan.getReverse() ? "k < length ? length - 1 - k : k" : "k")
        << ";\n"
        << "    const bool real = t < length;\n"
        << "    const int64_t o = s * " << layout.steps << " + t;\n"
        << "    for (int64_t j = j0; j < j1; ++j) {\n"
        << "    const int64_t i = o * " << last << " + j;\n"
        << stateDeclaration;
    } else if (layout.sums) {
      k << "  for (int64_t c = begin; c < end; ++c) {\n";
      layout.writeChunkRows(k, "c", "   ");
      k << sumDeclarations
        << "  for (int64_t o = first; o < stop; ++o) {\n";
      writeRowKeeps(k, element);
      k << "   for (int64_t j = 0; j < " << last << "; ++j) {\n"
        << "    const int64_t i = o * " << last << " + j;\n";
    } else if (layout.nested) {
      k << "  for (int64_t o = begin; o < end; ++o) {\n";
      writeRowKeeps(k, element);
      k << "   for (int64_t j = " << (columns ? "j0" : "0") << "; j < "
        << (columns ? "j1" : last) << "; ++j) {\n"
        << "    const int64_t i = o * " << last << " + j;\n";
    } else {
      k << "  for (int64_t i = begin; i < end; ++i) {\n";
    }
    if (failed(element.writeElement(
            k,
            [&](StringRef part) {
              return state + part.str() + (oneStep ? "" : "[j]");
            },
            sumOf, outputs, nullptr, nullptr,
            [&](lru::DropoutMaskOp d) {
              return element.keepName(d) + "[j] != 0u";
            })))
      return failure();
    // A chunk's partial sums go to its row: a scan's chunk is a run of
    // steps of sequence s (channels j0..j1 of it), another group's is c.
    if (scan && layout.sums) {
      std::string chunkSteps = std::to_string(op.getReductionChunkRows());
      k << "    }\n"
        << "    if ((k + 1) % " << chunkSteps << " == 0 || k + 1 == "
        << layout.steps << ") {\n"
        << "    const int64_t row = (s * "
        << op.getReductionChunksPerExample() << " + k / " << chunkSteps
        << ") * " << last << ";\n"
        << "    for (int64_t j = j0; j < j1; ++j) {\n"
        << sumStores << sumResets << "    }\n    }\n"
        << "   }\n  }\n}\n\n";
    } else if (layout.sums) {
      k << "   }\n  }\n"
        << "   for (int64_t j = 0; j < " << last << "; ++j) {\n"
        << "    const int64_t row = c * " << last << ";\n"
        << sumStores << "   }\n  }\n}\n\n";
    } else {
      k << (scan            ? "    }\n   }\n  }\n}\n\n"
            : layout.nested ? "   }\n  }\n}\n\n"
                            : "  }\n}\n\n");
    }
    auto [function, added] = loopFunctions.try_emplace(text);
    LoopFunction &loop = function->second;
    if (added) {
      loop.name = "fused" + std::to_string(counter++);
      loop.declaration =
          "void " + loop.name + text.substr(0, text.find(" {\n"));
      kernelStream << "void " << loop.name << text;
    }
    call.kernel = loop.name;
    loopDeclarations.insert(loop.declaration);
    return call;
  }

  /// Each dropout's decisions for row `o` of a group (FuseElementwise fuses
  /// a dropout only where the loop has rows), drawn a row at a time: a
  /// Philox block decides four neighbours, and drawn together they are
  /// vectors (lruc::cpu::dropoutKeeps).
  void writeRowKeeps(llvm::raw_ostream &k, const emit::FusedBody &element) {
    const emit::FusedLayout &layout = element.getLayout();
    for (lru::DropoutMaskOp dropout : element.dropouts()) {
      std::string keep = element.keepName(dropout);
      k << "   uint32_t " << keep << "[" << layout.last << "];\n"
        << "   lruc::cpu::dropoutKeeps(" << element.keyAndSiteOf(dropout)
        << ", " << emit::FusedBody::thresholdOf(dropout) << ", o * "
        << layout.last << ", " << layout.last << ", " << keep << ");\n";
    }
  }

  /// `if (!call) return false;` for kernels that can fail.
  void checked(const std::string &call) {
    os << "  if (!" << call << ")\n    return false;\n";
  }

  std::string get(Value v) { return names.lookup(v); }
  /// An optional operand: a typed null pointer when absent, so that the
  /// kernel templates still deduce their element type.
  std::string getOrNull(Value v, StringRef element) {
    return v ? get(v) : "static_cast<const " + element.str() + " *>(nullptr)";
  }

  LogicalResult emitConstant(arith::ConstantOp op) {
    auto attr = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!attr)
      return op.emitError("the CPU backend needs a dense constant");
    std::string type = elementType(op.getType());
    std::vector<std::string> values = elementLiterals(attr);
    std::string y = define(op.getResult());
    if (attr.isSplat()) {
      os << "  std::fill(" << y << ", " << y << " + " << count(op.getResult())
         << ", " << type << "(" << values[0] << "));\n";
      return success();
    }
    os << "  {\n    static const " << type << " values[] = {";
    for (size_t i = 0; i < values.size(); ++i)
      os << (i ? ", " : "") << values[i];
    os << "};\n    std::copy(values, values + " << values.size() << ", " << y
       << ");\n  }\n";
    return success();
  }

  LogicalResult emitParam(lru::ParamOp op) {
    const ParamSlot *slot = layout.lookup(op.getName());
    if (!slot)
      return op.emitError("parameter '")
             << op.getName() << "' is not declared in @forward_train";
    std::string name = "v" + std::to_string(counter++);
    os << "  const float *" << name << " = "
       << (layout.isState(op.getName()) ? "state" : "params") << " + "
       << slot->offset << "; // " << op.getName() << "\n";
    names[op.getResult()] = name;
    return success();
  }

  LogicalResult emitReturn(func::ReturnOp op) {
    // A result written in place (lru.in_place) is there already.
    SmallVector<std::pair<unsigned, Value>> copied;
    for (auto [i, v] : llvm::enumerate(op.getOperands()))
      if (!inPlaceResult(v))
        copied.push_back({unsigned(i), v});
    if (copied.empty())
      return success();
    os << "  {\n    void *const to[] = {";
    for (auto [k, copy] : llvm::enumerate(copied))
      os << (k ? ", " : "") << "results[" << copy.first << "]";
    os << "};\n    const void *from[] = {";
    for (auto [k, copy] : llvm::enumerate(copied))
      os << (k ? ", " : "") << get(copy.second);
    os << "};\n    const int64_t bytes[] = {";
    for (auto [k, copy] : llvm::enumerate(copied))
      os << (k ? ", " : "") << "int64_t(sizeof("
         << elementType(copy.second.getType()) << ") * (" << count(copy.second)
         << "))";
    os << "};\n    lruc::cpu::copyResults(to, from, bytes, " << copied.size()
       << ");\n  }\n";
    return success();
  }

  LogicalResult emitOp(Operation *op) {
    using namespace lru;
    if (std::optional<std::string> expr = scalarTemplate(op, "lruc::cpu"))
      return emitElementwise(op, *expr);
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](ParamOp o) { return emitParam(o); })
        .Case([&](arith::ConstantOp o) { return emitConstant(o); })
        .Case([&](func::ReturnOp o) { return emitReturn(o); })
        .Case([&](ViewOp o) {
          // The viewed value's buffer (the memory plan keeps it alive).
          std::string name = "v" + std::to_string(counter++);
          os << "  auto *" << name << " = lruc::cpu::viewAs<"
             << elementType(o.getType()) << ">(" << get(o.getX()) << ");\n";
          names[o.getResult()] = name;
          return success();
        })
        .Case([&](FusedOp o) { return emitFused(o); })
        .Case([&](MultiTensorOp o) { return emitMultiTensor(o); })
        // Structural.
        .Case([&](BroadcastOp o) {
          std::string y = define(o.getResult());
          os << "  {\n    static const int64_t dims[] = {0";
          for (int64_t d : o.getDims())
            os << ", " << d;
          os << "};\n    lruc::cpu::broadcast(" << get(o.getX()) << ", "
             << shapeExpr(tensorType(o.getX())) << ", dims + 1, " << y << ", "
             << shapeExpr(tensorType(o.getResult())) << ");\n  }\n";
          return success();
        })
        .Case([&](ReduceSumOp o) {
          uint32_t mask = 0;
          for (int64_t d : o.getDims())
            mask |= 1u << d;
          std::string y = define(o.getResult());
          os << "  lruc::cpu::reduceSum(" << get(o.getX()) << ", "
             << shapeExpr(tensorType(o.getX())) << ", " << mask << "u, " << y
             << ");\n";
          return success();
        })
        .Case([&](ConcatOp o) {
          std::string type = elementType(o.getType());
          std::string y = define(o.getResult());
          os << "  {\n    const " << type << " *parts[] = {";
          for (auto [i, v] : llvm::enumerate(o.getInputs()))
            os << (i ? ", " : "") << get(v);
          os << "};\n    const Shape shapes[] = {";
          for (auto [i, v] : llvm::enumerate(o.getInputs()))
            os << (i ? ", " : "") << shapeExpr(tensorType(v));
          os << "};\n    lruc::cpu::concat(parts, shapes, "
             << o.getInputs().size() << ", " << o.getDim() << ", " << y
             << ");\n  }\n";
          return success();
        })
        .Case([&](SliceOp o) {
          std::string y = define(o.getResult());
          os << "  lruc::cpu::slice(" << get(o.getX()) << ", "
             << shapeExpr(tensorType(o.getX())) << ", " << o.getDim() << ", "
             << o.getOffset() << ", " << o.getSize() << ", " << y << ");\n";
          return success();
        })
        .Case([&](ShiftOp o) {
          Value x = o.getX();
          std::string y = define(o.getResult());
          checked(
              "lruc::cpu::shift(" + get(x) + ", " +
              getOrNull(o.getInit(), elementType(tensorType(o.getResult()))) +
              ", " + getOrNull(o.getLengths(), "int32_t") + ", " +
              (o.getReverse() ? "true" : "false") + ", " + dim(x, 0) + ", " +
              dim(x, 1) + ", " + dim(x, 2) + ", " + y + ", error)");
          return success();
        })
        .Case([&](ScanOp o) {
          Value b = o.getB();
          bool perStep = tensorType(o.getLambda()).getRank() == 3;
          std::string y = define(o.getResult());
          checked(
              "lruc::cpu::scan(" + get(o.getLambda()) + ", " +
              (perStep ? "true" : "false") + ", " + get(b) + ", " +
              getOrNull(o.getInit(), elementType(tensorType(o.getResult()))) +
              ", " + getOrNull(o.getLengths(), "int32_t") + ", " +
              (o.getReverse() ? "true" : "false") + ", " + dim(b, 0) + ", " +
              dim(b, 1) + ", " + dim(b, 2) + ", " + y + ", error)");
          return success();
        })
        .Case([&](MatmulOp o) {
          std::string y = define(o.getResult());
          if (o.getKind() != MatmulKind::tn) {
            os << "  " << matmulCall(o, "") << "\n";
            return success();
          }
          auto lhs = tensorType(o.getLhs()), rhs = tensorType(o.getRhs());
          os << "  lruc::cpu::matmulTN(" << get(o.getLhs()) << ", "
             << get(o.getRhs()) << ", "
             << productExpr(lhs.getShape().drop_back()) << ", "
             << dimExpr(lhs.getShape().back()) << ", "
             << dimExpr(rhs.getShape().back()) << ", " << y << ");\n";
          return success();
        })
        .Case([&](GatherOp o) {
          auto table = tensorType(o.getTable());
          std::string y = define(o.getResult());
          checked("lruc::cpu::gather(" + get(o.getTable()) + ", " +
                  dimExpr(table.getDimSize(0)) + ", " +
                  dimExpr(table.getDimSize(1)) + ", " + get(o.getIndices()) +
                  ", " + count(o.getIndices()) + ", " +
                  indexSource(o.getIndices()) + ", " + y + ", error)");
          return success();
        })
        .Case([&](ScatterAddOp o) {
          auto table = tensorType(o.getResult());
          std::string y = define(o.getResult());
          checked("lruc::cpu::scatterAdd(" + get(o.getUpdates()) + ", " +
                  get(o.getIndices()) + ", " + count(o.getIndices()) + ", " +
                  indexSource(o.getIndices()) + ", " +
                  dimExpr(table.getDimSize(0)) + ", " +
                  dimExpr(table.getDimSize(1)) + ", " + y + ", error)");
          return success();
        })
        .Case([&](LengthMaskOp o) {
          std::string y = define(o.getResult());
          checked("lruc::cpu::lengthMask(" + get(o.getLengths()) + ", " +
                  (o.getLabels() ? get(o.getLabels()) : "nullptr") + ", " +
                  dim(o.getResult(), 0) + ", " + dim(o.getResult(), 1) + ", " +
                  (o.getKind() == MaskKind::last ? "true" : "false") + ", " +
                  y + ", error)");
          return success();
        })
        .Case([&](ZeroPaddingOp o) {
          std::string y = define(o.getResult());
          auto x = tensorType(o.getX());
          checked("lruc::cpu::zeroPadding(" + get(o.getX()) + ", " +
                  get(o.getLengths()) + ", " + dim(o.getX(), 0) + ", " +
                  dim(o.getX(), 1) + ", " +
                  productExpr(x.getShape().drop_front(2)) + ", " + y +
                  ", error)");
          return success();
        })
        .Case([&](LabelWeightOp o) {
          std::string y = define(o.getResult());
          std::string weights = classWeights(y, o.getWeights());
          os << "  lruc::cpu::labelWeight(" << get(o.getLabels()) << ", "
             << count(o.getLabels()) << ", " << weights << ", "
             << o.getWeights().size() << ", " << y << ");\n";
          return success();
        })
        .Case([&](SoftmaxCrossEntropyOp o) {
          auto logits = tensorType(o.getLogits());
          std::string y = define(o.getResult());
          std::string weights = classWeights(y, o.getClassWeights());
          checked("lruc::cpu::softmaxCrossEntropy(" + get(o.getLogits()) +
                  ", " + get(o.getLabels()) + ", " + count(o.getLabels()) +
                  ", " + dimExpr(logits.getShape().back()) + ", " +
                  (o.getIgnoreNegative() ? "true" : "false") + ", " +
                  floatLiteral(o.getLabelSmoothing().convertToDouble()) + ", " +
                  weights + ", " + y + ", error)");
          return success();
        })
        .Case([&](SoftmaxCrossEntropyGradOp o) {
          auto logits = tensorType(o.getLogits());
          std::string y = define(o.getResult());
          std::string weights = classWeights(y, o.getClassWeights());
          checked("lruc::cpu::softmaxCrossEntropyGrad(" + get(o.getLogits()) +
                  ", " + get(o.getLabels()) + ", " + get(o.getG()) + ", " +
                  count(o.getLabels()) + ", " +
                  dimExpr(logits.getShape().back()) + ", " +
                  (o.getIgnoreNegative() ? "true" : "false") + ", " +
                  floatLiteral(o.getLabelSmoothing().convertToDouble()) + ", " +
                  weights + ", " + y + ", error)");
          return success();
        })
        .Case([&](DropoutMaskOp o) {
          std::string y = define(o.getResult());
          os << "  lruc::cpu::dropoutMask(" << get(o.getX()) << ", "
             << count(o.getX()) << ", " << get(o.getKey()) << ", "
             << llvm::format("%.17g", o.getRate().convertToDouble()) << ", "
             << o.getSite() << "u, " << y << ");\n";
          return success();
        })
        .Default([&](Operation *other) {
          return other->emitOpError("has no CPU code generation");
        });
  }

  // A function is written here, and the fused loops (functions of their
  // own) that it is the first to call to kernelText.
  std::string bodyText, kernelText;
  struct LoopFunction {
    std::string name, declaration;
  };
  /// The library's fused loop functions by their text after the name.
  llvm::StringMap<LoopFunction> loopFunctions;
  /// The declarations of those the function calls.
  llvm::SetVector<StringRef> loopDeclarations;
  llvm::raw_string_ostream bodyStream{bodyText}, kernelStream{kernelText};
  llvm::raw_ostream &os = bodyStream;
  const Layout &layout;
  llvm::DenseMap<Value, std::string> names;
  /// Each step constant's byte offset in the lease's values.
  llvm::DenseMap<Value, int64_t> constantOffsets;
  MemoryPlan plan;
  func::FuncOp function; ///< the one being emitted
  unsigned counter = 0;
  bool profile;
  std::vector<ProfiledOp> profiled;
  /// The function's matmuls that run in an epilogue group's loop.
  llvm::DenseSet<Operation *> epilogueMatmuls;
  /// The function's matmuls emitted so far as part of a run (lru.together).
  llvm::DenseSet<Operation *> emittedTogether;
};

//===----------------------------------------------------------------------===//
// The library: tables and the C ABI
//===----------------------------------------------------------------------===//

constexpr StringLiteral kFunctions[] = {
    "forward",    "forward_train",        "backward",
    "train_step", "accumulate_gradients", "apply_gradients"};

std::string dtypeOf(Type type) {
  std::string e = elementType(type);
  return e == "float" ? "LRUC_F32" : e == "int32_t" ? "LRUC_I32" : "LRUC_I64";
}

/// `static const int64_t NAME[] = {dims};` with -1 for the batch.
void emitShapeArray(llvm::raw_ostream &os, const std::string &name,
                    RankedTensorType type) {
  os << "const int64_t " << name << "[] = {";
  for (int64_t i = 0; i < type.getRank(); ++i)
    os << (i ? ", " : "")
       << (type.isDynamicDim(i) ? int64_t(-1) : type.getDimSize(i));
  if (type.getRank() == 0)
    os << "0"; // C++ has no empty arrays; rank 0 reads none
  os << "};\n";
}

void emitParamTable(llvm::raw_ostream &os, StringRef table,
                    ArrayRef<ParamSlot> slots) {
  for (auto [i, slot] : llvm::enumerate(slots))
    emitShapeArray(os, (table + "_shape" + std::to_string(i)).str(),
                   cast<RankedTensorType>(slot.op.getType()));
  os << "const lruc_param_info " << table << "[] = {\n";
  for (auto [i, slot] : llvm::enumerate(slots))
    os << "  {" << quoted(slot.op.getName()) << ", " << int(slot.op.getGroup())
       << ", " << cast<RankedTensorType>(slot.op.getType()).getRank() << ", "
       << table << "_shape" << i << ", " << slot.offset << ", " << slot.size
       << ", " << quoted(initJson(slot.op)) << "},\n";
  if (slots.empty())
    os << "  {nullptr, 0, 0, nullptr, 0, 0, nullptr},\n";
  os << "};\n\n";
}

/// The inputs (the model's, without the dropout key) or outputs table.
void emitTensorTable(llvm::raw_ostream &os, StringRef table,
                     ArrayRef<std::pair<std::string, RankedTensorType>> items) {
  for (auto [i, item] : llvm::enumerate(items))
    emitShapeArray(os, (table + "_shape" + std::to_string(i)).str(),
                   item.second);
  os << "const lruc_tensor_info " << table << "[] = {\n";
  for (auto [i, item] : llvm::enumerate(items))
    os << "  {" << quoted(item.first) << ", " << dtypeOf(item.second) << ", "
       << item.second.getRank() << ", " << table << "_shape" << i << "},\n";
  os << "};\n\n";
}

std::string inputTag(func::FuncOp func, unsigned i) {
  if (auto tag = func.getArgAttrOfType<StringAttr>(i, "lru.input"))
    return tag.str();
  return "";
}

/// What @step carries from one step to the next: its arguments tagged
/// `lru.carry`, each a [B, ...] array at `offset` floats per example in the
/// carry block (lruc_model.h), and the step's own inputs and outputs.
struct StepLayout {
  struct Carry {
    std::string name;
    RankedTensorType type;
    uint64_t offset = 0, floats = 0; ///< per example
  };
  std::vector<Carry> carries;
  uint64_t floats = 0; ///< per example
  std::vector<std::pair<std::string, RankedTensorType>> inputs, outputs;
};

FailureOr<StepLayout> stepLayoutOf(func::FuncOp step) {
  StepLayout layout;
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    auto type = cast<RankedTensorType>(step.getArgumentTypes()[i]);
    auto carry = step.getArgAttrOfType<StringAttr>(i, "lru.carry");
    if (!carry) {
      layout.inputs.push_back({inputTag(step, i), type});
      continue;
    }
    if (!type.isDynamicDim(0) || elementType(type).empty())
      return step.emitError("carry '")
             << carry.getValue() << "' must be a [B, ...] array, not " << type;
    bool complex = isa<ComplexType>(type.getElementType());
    uint64_t floats =
        ShapedType::getNumElements(type.getShape().drop_front()) *
        (complex ? 2 : 1);
    // A complex carry starts at an even float (8 bytes at any batch): the
    // CUDA kernels load a complex value as one 64-bit access.
    if (complex && layout.floats % 2)
      ++layout.floats;
    layout.carries.push_back({carry.str(), type, layout.floats, floats});
    layout.floats += floats;
  }
  if (step.getNumResults() < layout.carries.size())
    return step.emitError("expects a result per carry");
  for (unsigned i = 0; i < step.getNumResults() - layout.carries.size(); ++i)
    layout.outputs.push_back(
        {"predictions", cast<RankedTensorType>(step.getResultTypes()[i])});
  return layout;
}

/// A tensor's name, dtype and shape (-1 for the batch) as JSON.
llvm::json::Object tensorJson(StringRef name, Type type) {
  llvm::json::Array shape;
  for (int64_t d : cast<RankedTensorType>(type).getShape())
    shape.push_back(ShapedType::isDynamic(d) ? int64_t(-1) : d);
  std::string dtype = elementType(type);
  // json::Value borrows a StringRef: copy, the caller's name may be a
  // temporary.
  return llvm::json::Object{
      {"name", name.str()},
      {"dtype", dtype == "cfloat" ? std::string("complex64") : dtype},
      {"shape", std::move(shape)}};
}

/// The manifest: name, parameters, inputs, outputs, step mode, train
/// settings and the workspace each of `emitted` leases a call (its memory
/// plan's bytes: per_example * batch + fixed), which a caller weighs before
/// it runs calls side by side.
std::string manifestJson(ModuleOp module, const Layout &layout,
                         func::FuncOp forward, const StepLayout *step,
                         ArrayRef<func::FuncOp> emitted) {
  auto params = [&](ArrayRef<ParamSlot> slots) {
    llvm::json::Array out;
    for (const ParamSlot &slot : slots) {
      llvm::json::Array shape;
      for (int64_t d : cast<RankedTensorType>(slot.op.getType()).getShape())
        shape.push_back(d);
      out.push_back(llvm::json::Object{
          {"name", slot.op.getName()},
          {"shape", std::move(shape)},
          {"group", lru::stringifyParamGroup(slot.op.getGroup())},
          {"offset", int64_t(slot.offset)},
          {"init", initObject(slot.op)}});
    }
    return out;
  };
  auto tensors = [&](TypeRange types, auto nameOf) {
    llvm::json::Array out;
    for (auto [i, type] : llvm::enumerate(types))
      out.push_back(tensorJson(nameOf(i), type));
    return out;
  };
  llvm::json::Value stepJson = nullptr;
  if (step) {
    llvm::json::Array inputs, outputs, carries;
    for (const auto &[name, type] : step->inputs)
      inputs.push_back(tensorJson(name, type));
    for (const auto &[name, type] : step->outputs)
      outputs.push_back(tensorJson(name, type));
    for (const StepLayout::Carry &carry : step->carries) {
      llvm::json::Object object = tensorJson(carry.name, carry.type);
      object["offset"] = int64_t(carry.offset);
      carries.push_back(std::move(object));
    }
    stepJson = llvm::json::Object{{"carry_floats", int64_t(step->floats)},
                                  {"inputs", std::move(inputs)},
                                  {"outputs", std::move(outputs)},
                                  {"carries", std::move(carries)}};
  }
  std::string unavailable;
  if (auto why = module->getAttrOfType<StringAttr>("lru.step_unavailable"))
    unavailable = why.str();
  llvm::json::Object train;
  if (auto attr = module->getAttrOfType<DictionaryAttr>("lru.train"))
    for (NamedAttribute a : attr) {
      if (auto f = dyn_cast<FloatAttr>(a.getValue()))
        train[a.getName().str()] = f.getValueAsDouble();
      else if (auto n = dyn_cast<IntegerAttr>(a.getValue()))
        train[a.getName().str()] = n.getInt();
      else if (auto s = dyn_cast<StringAttr>(a.getValue()))
        train[a.getName().str()] = s.str();
    }
  // What train_step compiled in: the train section's settings or, without
  // one, the defaults.
  AdamWConfig adam = AdamWConfig::fromModule(module);
  llvm::json::Object optimizer{
      {"beta1", adam.beta1},
      {"beta2", adam.beta2},
      {"eps", adam.eps},
      {"weight_decay", adam.weightDecay},
      {"recurrent_lr_factor", adam.recurrentLrFactor},
      {"clip", adam.clip ? llvm::json::Value(*adam.clip) : nullptr}};
  // A class-weighted cross entropy is a mean weighed by each label's class
  // weight: a tool that adds up batch losses over a split weighs each batch
  // by the sum of its labels' weights, so it needs them.
  llvm::json::Array classWeights;
  forward.walk([&](lru::SoftmaxCrossEntropyOp op) {
    if (auto weights = op.getClassWeightsAttr())
      for (float w : weights.asArrayRef())
        classWeights.push_back(double(w));
  });
  llvm::json::Object workspace;
  for (func::FuncOp func : emitted)
    if (FailureOr<MemoryPlan> plan = readMemoryPlan(func); succeeded(plan))
      workspace[func.getSymName()] =
          llvm::json::Object{{"per_example", plan->total.perExample},
                             {"fixed", plan->total.fixed}};
  llvm::json::Object manifest{
      {"abi_version", int64_t(LRUC_ABI_VERSION)},
      {"model", module->getAttrOfType<StringAttr>("lru.model")
                    ? module->getAttrOfType<StringAttr>("lru.model").str()
                    : std::string("model")},
      {"params", params(layout.params)},
      {"state", params(layout.state)},
      {"inputs", tensors(forward.getArgumentTypes(),
                         [&](size_t i) { return inputTag(forward, i); })},
      {"outputs", tensors(forward.getResultTypes(),
                          [](size_t i) {
                            return std::string(i == 0 ? "loss" : "predictions");
                          })},
      {"optimizer", std::move(optimizer)},
      {"step", std::move(stepJson)},
      {"step_unavailable", unavailable},
      {"train", std::move(train)},
      {"workspace", std::move(workspace)}};
  if (!classWeights.empty())
    manifest["class_weights"] = std::move(classWeights);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::json::Value(std::move(manifest));
  return os.str();
}

/// Where each argument of a function comes from in an ABI call, and where
/// each result goes, as C++ pointer expressions.
struct Binding {
  std::vector<std::string> args, results;
};

/// Binds a training function's tagged arguments (lru.param, lru.adam_m,
/// lru.adam_v, lru.state, lru.gradient: offsets into the ABI's blocks; the
/// scalars lr, step and grad_scale; then the model inputs) and its results:
/// the model's `numOutputs` outputs as forward_train writes them, the loss
/// first, then the new values of arguments (a result tagged as its
/// argument, lruc::updatedArgument), each written where its argument was
/// read, in one of the `updated` blocks (the others are the entry point's
/// read-only ones).
FailureOr<Binding> bindTraining(func::FuncOp func, const Layout &layout,
                                unsigned numOutputs,
                                ArrayRef<StringRef> updated) {
  Binding binding;
  unsigned input = 0;
  llvm::DenseSet<unsigned> updatable; // arguments in the `updated` blocks
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    std::string block, name;
    for (auto [tag, where] : {std::pair{"lru.param", "params"},
                              {"lru.adam_m", "adam_m"},
                              {"lru.adam_v", "adam_v"},
                              {"lru.state", "state"},
                              {"lru.gradient", "grads"}})
      if (auto attr = func.getArgAttrOfType<StringAttr>(i, tag)) {
        block = where;
        name = attr.str();
      }
    if (!block.empty()) {
      const ParamSlot *slot = layout.lookup(name);
      if (!slot)
        return func.emitError("argument for unknown parameter '")
               << name << "'";
      binding.args.push_back(block + " + " + std::to_string(slot->offset));
      if (llvm::is_contained(updated, block))
        updatable.insert(i);
      continue;
    }
    std::string tag = inputTag(func, i);
    if (tag == "lr" || tag == "step")
      binding.args.push_back("&" + tag);
    else if (tag == "grad_scale")
      binding.args.push_back("&scale");
    else if (tag == "dropout_key")
      binding.args.push_back("dropout_key");
    else
      binding.args.push_back("inputs[" + std::to_string(input++) + "]");
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    if (i < numOutputs) {
      binding.results.push_back("outputs[" + std::to_string(i) + "]");
      continue;
    }
    BlockArgument arg = updatedArgument(func, i);
    if (!arg || !updatable.contains(arg.getArgNumber()))
      return func.emitError("result ")
             << i << " is neither an output nor the new value of an argument "
             << "in a block the entry point updates";
    binding.results.push_back(binding.args[arg.getArgNumber()]);
  }
  return binding;
}

/// Step mode's binding for the streams [first, first + count) of the
/// call's batch: each input, output and carry section ([batch, ...] at
/// `batch * offset` in the carry block) from its row `first` on.
Binding streamsOf(func::FuncOp step, const StepLayout &layout) {
  auto perStream = [](Type type) {
    return std::to_string(ShapedType::getNumElements(
        cast<RankedTensorType>(type).getShape().drop_front()));
  };
  auto carrySection = [](const StepLayout::Carry &c) {
    return "carry + batch * " + std::to_string(c.offset) + " + first * " +
           std::to_string(c.floats);
  };
  Binding binding;
  unsigned input = 0, carry = 0;
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    Type type = step.getArgumentTypes()[i];
    binding.args.push_back(step.getArgAttr(i, "lru.carry")
                               ? carrySection(layout.carries[carry++])
                               : "static_cast<const " + elementType(type) +
                                     " *>(inputs[" + std::to_string(input++) +
                                     "]) + first * " + perStream(type));
  }
  for (auto [i, output] : llvm::enumerate(layout.outputs))
    binding.results.push_back("outputs[" + std::to_string(i) + "] + first * " +
                              perStream(output.second));
  for (const StepLayout::Carry &c : layout.carries)
    binding.results.push_back(carrySection(c));
  return binding;
}

/// The bytes of parameters a step reads whole: every parameter of @step
/// (each once, however many ops declare it) but a table only gathered
/// from (a token reads one row of an embedding).
int64_t stepWeightBytes(func::FuncOp step) {
  llvm::StringMap<std::pair<int64_t, bool>> params; // bytes, read whole
  step.walk([&](lru::ParamOp param) {
    bool gatheredOnly = llvm::all_of(param->getUses(), [](OpOperand &use) {
      auto gather = dyn_cast<lru::GatherOp>(use.getOwner());
      return gather && gather.getTable() == use.get();
    });
    auto &[bytes, whole] = params[param.getName()];
    bytes = tensorType(param.getResult()).getNumElements() *
            int64_t(sizeof(float));
    whole = whole || !gatheredOnly;
  });
  int64_t total = 0;
  for (const auto &param : params)
    if (param.second.second)
      total += param.second.first;
  return total;
}

/// Checks every index that step mode's gathers read from an input, for
/// the whole batch, before any stream moves on: a bad token fails the call
/// with the carries untouched, naming the token's row in the batch, even
/// when the streams run in parts (forStreamParts).
void emitStepIndexChecks(llvm::raw_ostream &os, func::FuncOp step) {
  unsigned inputs = 0;
  llvm::DenseMap<unsigned, unsigned> inputOf; // argument -> inputs[i]
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (!step.getArgAttr(i, "lru.carry"))
      inputOf[i] = inputs++;
  step.walk([&](lru::GatherOp gather) {
    BlockArgument arg = indexOrigin(gather.getIndices()).argument;
    if (!arg || arg.getOwner()->getParentOp() != step.getOperation() ||
        !inputOf.count(arg.getArgNumber()))
      return;
    auto type = tensorType(arg);
    os << "    if (!lruc::cpu::indicesWithin(static_cast<const int32_t "
          "*>(inputs["
       << inputOf.lookup(arg.getArgNumber()) << "]), batch * "
       << ShapedType::getNumElements(type.getShape().drop_front()) << ", "
       << tensorType(gather.getTable()).getDimSize(0) << ", "
       << indexSource(gather.getIndices()) << ", message))\n"
       << "      return false;\n";
  });
}

void emitArrays(llvm::raw_ostream &os, const Binding &binding,
                StringRef indent = "  ") {
  os << indent << "const void *args[] = {";
  for (auto [i, a] : llvm::enumerate(binding.args))
    os << (i ? ", " : "") << a;
  os << "};\n" << indent << "void *results[] = {";
  for (auto [i, r] : llvm::enumerate(binding.results))
    os << (i ? ", " : "") << r;
  os << "};\n";
}

/// The GPU half of the library (runtime/include/lruc_gpu.h): the schedule
/// of each function's CUDA launches, the entry points (the CPU ones'
/// bindings, on device pointers) and the kGpuModel table.
/// The CPU entry points' bindings, which the GPU ones share.
struct GpuBindings {
  const Binding &forwardTrain, &backward, &trainStep, &accumulate, &apply;
  const Binding *step;   ///< null without step mode
  uint64_t carryFloats; ///< per example
  CudaStorage storage;  ///< lruc_gpu_model.activations
};

LogicalResult writeGpuEntryPoints(const std::vector<CudaFunctionPlan> &plans,
                                  const Layout &layout,
                                  const GpuBindings &bindings,
                                  llvm::raw_ostream &os) {
  if (failed(writeGpuSchedule(
          plans,
          [&](lru::ParamOp param) {
            return ParamPlace{layout.isState(param.getName()),
                              layout.lookup(param.getName())->offset};
          },
          os)))
    return failure();
  // A kernel's bytes are those of each of its launches (one text: the
  // same arrays' shapes).
  const std::vector<const CudaLaunch *> kernels = firstLaunches(plans);
  os << "const char *const kGpuKernels[] = {";
  for (auto [k, launch] : llvm::enumerate(kernels))
    os << (k ? ", " : "") << quoted(launch->kernel);
  os << "};\n\nconst int64_t kGpuKernelBytes[] = {";
  for (auto [k, launch] : llvm::enumerate(kernels)) {
    KernelBytes bytes = kernelBytes(*launch);
    os << (k ? ", " : "") << bytes.perExample << ", " << bytes.fixed;
  }
  os << "};\n\n";
  os << R"cpp(int gpu_forward(const lruc_gpu_ops *ops, void *workspace, int64_t batch,
    const float *params, const float *state, const void *const *inputs,
    float *const *outputs, char *error, size_t error_size) {
  return guarded(error, error_size, [&](std::string &message) {
    return run(forward_schedule, kGpuKernels, ops, workspace, batch, params,
               state, inputs, reinterpret_cast<void *const *>(outputs),
               message);
  });
}

int gpu_forward_train(const lruc_gpu_ops *ops, void *workspace,
    int64_t batch, const float *params, const float *state,
    const void *const *inputs, const int64_t dropout_key[2],
    float *const *outputs, float *new_state, char *error, size_t error_size) {
)cpp";
  emitArrays(os, bindings.forwardTrain);
  os << R"cpp(  return guarded(error, error_size, [&](std::string &message) {
    return copy(ops, new_state, state, sizeof(float) * )cpp"
     << layout.stateFloats << R"cpp(,
                LRUC_COPY_DEVICE_TO_DEVICE, message) &&
           run(forward_train_schedule, kGpuKernels, ops, workspace, batch,
               params, state, args, results, message);
  });
}

int gpu_backward(const lruc_gpu_ops *ops, void *workspace, int64_t batch,
    const float *params, const float *state, const void *const *inputs,
    const int64_t dropout_key[2], float *loss, float *grads, char *error,
    size_t error_size) {
)cpp";
  emitArrays(os, bindings.backward);
  os << R"cpp(  return guarded(error, error_size, [&](std::string &message) {
    return run(backward_schedule, kGpuKernels, ops, workspace, batch, params,
               state, args, results, message);
  });
}

int gpu_train_step(const lruc_gpu_ops *ops, void *workspace, int64_t batch,
    float *params, float *adam_m, float *adam_v, float *state, float lr,
    float step, const void *const *inputs, const int64_t dropout_key[2],
    float *const *outputs, char *error, size_t error_size) {
)cpp";
  emitArrays(os, bindings.trainStep);
  os << R"cpp(  return guarded(error, error_size, [&](std::string &message) {
    return run(train_step_schedule, kGpuKernels, ops, workspace, batch,
               params, state, args, results, message);
  });
}

int gpu_accumulate_gradients(const lruc_gpu_ops *ops, void *workspace,
    int64_t batch, const float *params, float *state, float *grads,
    float scale, const void *const *inputs, const int64_t dropout_key[2],
    float *const *outputs, char *error, size_t error_size) {
)cpp";
  emitArrays(os, bindings.accumulate);
  os << R"cpp(  return guarded(error, error_size, [&](std::string &message) {
    return run(accumulate_gradients_schedule, kGpuKernels, ops, workspace,
               batch, params, state, args, results, message);
  });
}

int gpu_apply_gradients(const lruc_gpu_ops *ops, void *workspace,
    float *params, float *adam_m, float *adam_v, const float *grads,
    float lr, float step, char *error, size_t error_size) {
)cpp";
  emitArrays(os, bindings.apply);
  os << R"cpp(  return guarded(error, error_size, [&](std::string &message) {
    return run(apply_gradients_schedule, kGpuKernels, ops, workspace, 1,
               params, nullptr, args, results, message);
  });
}

)cpp";
  if (bindings.step) {
    os << R"cpp(int gpu_step_reset(const lruc_gpu_ops *ops, int64_t batch, float *carry,
    char *error, size_t error_size) {
  return guarded(error, error_size, [&](std::string &message) {
    const std::vector<float> zeros(size_t(batch) * )cpp"
       << bindings.carryFloats << R"cpp(, 0.0f);
    return copy(ops, carry, zeros.data(), sizeof(float) * zeros.size(),
                LRUC_COPY_HOST_TO_DEVICE, message);
  });
}

int gpu_step(const lruc_gpu_ops *ops, void *workspace, int64_t batch,
    const float *params, const float *state, float *carry,
    const void *const *inputs, float *const *outputs, char *error,
    size_t error_size) {
)cpp";
    emitArrays(os, *bindings.step);
    os << R"cpp(  return guarded(error, error_size, [&](std::string &message) {
    return run(step_schedule, kGpuKernels, ops, workspace, batch, params,
               state, args, results, message);
  });
}

)cpp";
  }
  os << R"cpp(int gpu_status_error(const char *entry, const void *status, char *error,
                     size_t error_size) {
  return guarded(error, error_size, [&](std::string &message) {
    return gpuDeferredStatus(entry, status, message);
  });
}

)cpp";
  os << "const lruc_gpu_model kGpuModel = {\n"
        "  LRUC_GPU_ABI_VERSION, sizeof(lruc_gpu_model), "
     << kernels.size()
     << ", kGpuKernels,\n"
        "  gpuWorkspaceBytes, gpu_forward, gpu_forward_train, gpu_backward,\n"
        "  gpu_train_step, "
     << (bindings.step ? "gpu_step_reset, gpu_step" : "nullptr, nullptr")
     << ",\n  kGpuKernelBytes, gpu_status_error, "
     << (bindings.storage == CudaStorage::Bf16 ? "LRUC_GPU_BF16"
                                               : "LRUC_GPU_F32")
     << ",\n  gpu_accumulate_gradients, gpu_apply_gradients,\n};\n\n";
  return success();
}

/// The code of the prelude that turns an error into the C ABI's return
/// code: used by the model unit's and the GPU unit's entry points.
constexpr StringLiteral kGuarded =
    R"cpp(/// Copies `message` into the caller's error buffer.
int fail(const std::string &message, char *error, size_t error_size) {
  if (error && error_size > 0)
    std::snprintf(error, error_size, "%s", message.c_str());
  return 1;
}

/// Runs `body`; its failure or exception as the C ABI's error.
template <class F>
int guarded(char *error, size_t error_size, F &&body) {
  try {
    std::string message;
    if (body(message))
      return 0;
    return fail(message, error, error_size);
  } catch (const std::bad_alloc &) {
    // The workspace says how much it asked for; this is any other block.
    return fail("not enough memory", error, error_size);
  } catch (const std::exception &e) {
    return fail(std::string("internal error: ") + e.what(), error, error_size);
  }
}
)cpp";

} // namespace

void LibrarySource::print(llvm::raw_ostream &os) const {
  os << prelude;
  for (const Unit &unit : units)
    os << "\n// ===== unit '" << unit.name
       << "': compiled on its own, after the prelude above =====\n\n"
       << unit.text;
}

LibrarySource LibrarySource::single(std::string text) {
  LibrarySource source;
  source.units.push_back(
      {"source", std::move(text), LibrarySource::Unit::Speed::Hot});
  return source;
}

LogicalResult emitCpp(ModuleOp module, LibrarySource &source,
                      const CppOptions &options) {
  llvm::StringMap<func::FuncOp> funcs;
  for (StringRef name : kFunctions) {
    auto func = module.lookupSymbol<func::FuncOp>(name);
    if (!func)
      return module.emitError("the CPU backend needs @")
             << name
             << " (run -lru-decompose, -lru-derive-backward and "
                "-lru-derive-train-step first)";
    funcs[name] = func;
  }
  func::FuncOp forward = funcs["forward"], train = funcs["forward_train"],
               backward = funcs["backward"], step = funcs["train_step"];
  Layout layout = layoutOf(train);
  auto stepMode = module.lookupSymbol<func::FuncOp>("step");
  std::optional<StepLayout> stepLayout;
  if (stepMode) {
    FailureOr<StepLayout> l = stepLayoutOf(stepMode);
    if (failed(l))
      return failure();
    stepLayout = std::move(*l);
  }
  SmallVector<func::FuncOp> emitted;
  for (StringRef name : kFunctions)
    emitted.push_back(funcs[name]);
  if (stepMode)
    emitted.push_back(stepMode);

  // The prelude: what every unit starts with.
  source = LibrarySource();
  // The C ABI (lruc_model.h, lruc_gpu.h, lruc_profile.h) and the runtime's
  // lruc_cpu_set_threads, lruc_cpu_threads and lruc_cpu_set_matmul.
  source.exports = {"lruc_*"};
  {
    llvm::raw_string_ostream os(source.prelude);
    os << "// Generated by lruc: the CPU library of model '"
       << (module->getAttrOfType<StringAttr>("lru.model")
               ? module->getAttrOfType<StringAttr>("lru.model").getValue()
               : StringRef("model"))
       << "'. Do not edit.\n"
          "// This prelude, then units that the host compiler builds "
          "separately (and\n// together: the whole is one valid source as "
          "well).\n"
          "#include \"lruc_model.h\"\n"
          "#include \"lruc/cpu/Kernels.h\"\n\n"
          "#include <algorithm>\n#include <cmath>\n#include <complex>\n"
          "#include <cstdio>\n#include <cstring>\n#include <exception>\n"
          "#include <new>\n"
          "#include <string>\n#include <vector>\n\n"
       << (options.profile ? "#include \"lruc_profile.h\"\n#include <atomic>\n"
                             "#include <chrono>\n\n"
                           : "")
       << "// What units share: hidden, so that nothing outside model.so "
          "sees it.\n"
          "namespace __attribute__((visibility(\"hidden\"))) lruc_library "
          "{\n\n";
    // The functions of the IR functions' units, which the model unit calls.
    os << "using RunFunction = bool(int64_t B, const float *params, const "
          "float *state,\n    const void *const *args, void *const *results, "
          "std::string &error);\nRunFunction ";
    for (auto [i, func] : llvm::enumerate(emitted))
      os << (i ? ", " : "") << "run_" << func.getSymName();
    os << ";\n";
    if (options.profile)
      os << R"cpp(
// Profiling (lruc --profile): every op adds its time to its counter.
struct ProfileCounter {
  std::atomic<uint64_t> calls{0}, nanoseconds{0}, bytes{0}, flops{0};
};
ProfileCounter &profileCounter(int op);
)cpp";
    os << "\n} // namespace lruc_library\n\n"
          "namespace {\n\n"
          "using lruc::cpu::cfloat;\n"
          "using lruc::cpu::Shape;\n\n";
    if (options.profile)
      os << R"cpp(std::chrono::steady_clock::time_point profileNow() {
  return std::chrono::steady_clock::now();
}
void profileAdd(int op, std::chrono::steady_clock::time_point start,
                uint64_t bytes, uint64_t flops) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                profileNow() - start).count();
  lruc_library::ProfileCounter &c = lruc_library::profileCounter(op);
  c.calls.fetch_add(1, std::memory_order_relaxed);
  c.nanoseconds.fetch_add(uint64_t(ns), std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
  c.flops.fetch_add(flops, std::memory_order_relaxed);
}

)cpp";
    os << kGuarded << "\n} // namespace\n";
  }

  // A unit per IR function, and one of the loops it is the first to call.
  FunctionEmitter functions(layout, options.profile);
  for (func::FuncOp func : emitted) {
    LibrarySource::Unit body, loops;
    body.name = func.getSymName().str();
    body.speed = body.name == "step" ? LibrarySource::Unit::Speed::Latency
                                     : LibrarySource::Unit::Speed::Cold;
    loops.name = body.name + "_loops";
    llvm::raw_string_ostream out(body.text), loopsOut(loops.text);
    if (failed(functions.emit(func, out, loopsOut)))
      return failure();
    source.units.push_back(std::move(body));
    if (!loops.text.empty())
      source.units.push_back(std::move(loops));
  }

  // The model unit: the tables and the C ABI.
  std::string modelText;
  llvm::raw_string_ostream os(modelText);
  // Parameter initialisation, which the model unit alone needs (its header
  // is a quarter of what every unit parses).
  os << "#include \"lruc/core/Init.h\"\n"
        "#include \"lruc/core/CpuFeatures.h\"\n"
        "#include \"lruc/cpu/ModelForThisCpu.h\"\n\nnamespace {\n\n"
        "// The x86 extensions this code was compiled for, which the tools "
        "check\n// before they load the library (lruc/core/CpuFeatures.h), "
        "and lruc_model_get\n// when it is asked.\n"
        "LRUC_CPU_FEATURES_SECTION(kCpuFeatures);\n\n";
  // Tables.
  emitParamTable(os, "kParams", layout.params);
  emitParamTable(os, "kState", layout.state);
  std::vector<std::pair<std::string, RankedTensorType>> inputs, outputs;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    inputs.push_back({inputTag(forward, i),
                      cast<RankedTensorType>(forward.getArgumentTypes()[i])});
  for (unsigned i = 0; i < forward.getNumResults(); ++i)
    outputs.push_back({i == 0 ? "loss" : "predictions",
                       cast<RankedTensorType>(forward.getResultTypes()[i])});
  emitTensorTable(os, "kInputs", inputs);
  emitTensorTable(os, "kOutputs", outputs);
  if (stepLayout) {
    emitTensorTable(os, "kStepInputs", stepLayout->inputs);
    emitTensorTable(os, "kStepOutputs", stepLayout->outputs);
  }
  os << "const char kManifest[] = R\"lruc_manifest("
     << manifestJson(module, layout, forward,
                     stepLayout ? &*stepLayout : nullptr, emitted)
     << ")lruc_manifest\";\n\n";

  // Entry points: each runs through `guarded` (the prelude), so no
  // exception reaches C.
  os << R"cpp(int init(uint64_t seed, float *params, float *state, char *error,
         size_t error_size) {
  return guarded(error, error_size, [&](std::string &message) {
    std::vector<lruc::core::ParameterDecl> decls;
    auto declare = [&](const lruc_param_info &info, lruc::core::InitSpec spec) {
      decls.push_back({info.name, std::move(spec), size_t(info.size)});
    };
)cpp";
  for (auto [table, slots] :
       {std::pair{"kParams", &layout.params}, {"kState", &layout.state}})
    for (auto [i, slot] : llvm::enumerate(*slots)) {
      lru::ParamOp p = slot.op;
      auto num = [&](StringRef key) {
        std::string text;
        llvm::raw_string_ostream(text)
            << llvm::format("%.17g", p.getArgNumber(key).value_or(0));
        return text;
      };
      os << "    {\n      lruc::core::InitSpec s;\n      s.kind = "
            "lruc::core::InitKind::";
      switch (p.getInit()) {
      case lru::InitKind::zeros:
        os << "Zeros;\n";
        break;
      case lru::InitKind::ones:
        os << "Ones;\n";
        break;
      case lru::InitKind::normal:
        os << "Normal;\n      s.std = " << num("std") << ";\n";
        break;
      case lru::InitKind::uniform:
        os << "Uniform;\n      s.low = " << num("low")
           << ";\n      s.high = " << num("high") << ";\n";
        break;
      case lru::InitKind::lru_nu:
        os << "LruNu;\n      s.rMin = " << num("r_min")
           << ";\n      s.rMax = " << num("r_max") << ";\n";
        break;
      case lru::InitKind::lru_theta:
        os << "LruTheta;\n      s.maxPhase = " << num("max_phase") << ";\n";
        break;
      case lru::InitKind::lru_gamma:
        os << "LruGamma;\n      s.nu = " << quoted(p.getArgString("nu"))
           << ";\n      s.theta = " << quoted(p.getArgString("theta")) << ";\n";
        break;
      }
      os << "      declare(" << table << "[" << i << "], s);\n    }\n";
    }
  os << R"cpp(    lruc::core::ParameterValues values;
    if (auto failure = lruc::core::initParameters(decls, seed, values)) {
      message = "cannot initialise " + failure->param + ": " + failure->message;
      return false;
    }
    for (const lruc_param_info &info : kParams)
      if (info.name)
        std::copy(values[info.name].begin(), values[info.name].end(),
                  params + info.offset);
    for (const lruc_param_info &info : kState)
      if (info.name)
        std::copy(values[info.name].begin(), values[info.name].end(),
                  state + info.offset);
    return true;
  });
}

int forward(int64_t batch, const float *params, const float *state,
            const void *const *inputs, float *const *outputs, char *error,
            size_t error_size) {
  return guarded(error, error_size, [&](std::string &message) {
    return lruc_library::run_forward(batch, params, state, inputs,
                       reinterpret_cast<void *const *>(outputs), message);
  });
}

)cpp";

  // forward_train: the model's outputs, then the new running statistics.
  Binding trainBinding;
  {
    Binding &binding = trainBinding;
    for (unsigned i = 0; i + 1 < train.getNumArguments(); ++i)
      binding.args.push_back("inputs[" + std::to_string(i) + "]");
    binding.args.push_back("dropout_key");
    for (unsigned i = 0; i < forward.getNumResults(); ++i)
      binding.results.push_back("outputs[" + std::to_string(i) + "]");
    if (auto names = train->getAttrOfType<ArrayAttr>("lru.state_updates"))
      for (Attribute name : names)
        binding.results.push_back(
            "new_state + " +
            std::to_string(
                layout.lookup(cast<StringAttr>(name).getValue())->offset));
    os << "int forward_train(int64_t batch, const float *params, const float "
          "*state,\n    const void *const *inputs, const int64_t "
          "dropout_key[2], float *const *outputs,\n    float *new_state, char "
          "*error, size_t error_size) {\n";
    os << "  std::memmove(new_state, state, sizeof(float) * "
       << layout.stateFloats << ");\n";
    emitArrays(os, binding);
    os << "  return guarded(error, error_size, [&](std::string &message) {\n"
          "    return lruc_library::run_forward_train(batch, params, state, "
          "args, results, "
          "message);\n  });\n}\n\n";
  }
  // backward: the loss, then each gradient at its parameter's offset.
  Binding backwardBinding;
  {
    Binding &binding = backwardBinding;
    for (unsigned i = 0; i + 1 < backward.getNumArguments(); ++i)
      binding.args.push_back("inputs[" + std::to_string(i) + "]");
    binding.args.push_back("dropout_key");
    binding.results.push_back("loss");
    for (Attribute name : backward->getAttrOfType<ArrayAttr>("lru.gradients"))
      binding.results.push_back(
          "grads + " +
          std::to_string(
              layout.lookup(cast<StringAttr>(name).getValue())->offset));
    os << "int backward(int64_t batch, const float *params, const float "
          "*state,\n    const void *const *inputs, const int64_t "
          "dropout_key[2], float *loss, float *grads,\n    char *error, "
          "size_t error_size) {\n";
    emitArrays(os, binding);
    os << "  return guarded(error, error_size, [&](std::string &message) {\n"
          "    return lruc_library::run_backward(batch, params, state, args, "
          "results, "
          "message);\n  });\n}\n\n";
  }
  // train_step: in place.
  FailureOr<Binding> binding =
      bindTraining(step, layout, forward.getNumResults(),
                   {"params", "adam_m", "adam_v", "state"});
  if (failed(binding))
    return failure();
  {
    os << "int train_step(int64_t batch, float *params, float *adam_m, float "
          "*adam_v,\n    float *state, float lr, float step, const void "
          "*const *inputs,\n    const int64_t dropout_key[2], float *const "
          "*outputs, char *error,\n    size_t error_size) {\n";
    emitArrays(os, *binding);
    os << "  return guarded(error, error_size, [&](std::string &message) {\n"
          "    return lruc_library::run_train_step(batch, params, state, args, "
          "results, "
          "message);\n  });\n}\n\n";
  }
  // Gradient accumulation, the train step in two halves: the sums and the
  // running statistics in place, then the update in place.
  FailureOr<Binding> accumulateBinding =
      bindTraining(funcs["accumulate_gradients"], layout,
                   forward.getNumResults(), {"grads", "state"});
  FailureOr<Binding> applyBinding = bindTraining(
      funcs["apply_gradients"], layout, 0, {"params", "adam_m", "adam_v"});
  if (failed(accumulateBinding) || failed(applyBinding))
    return failure();
  os << "int accumulate_gradients(int64_t batch, const float *params, float "
        "*state,\n    float *grads, float scale, const void *const *inputs,\n"
        "    const int64_t dropout_key[2], float *const *outputs, char "
        "*error,\n    size_t error_size) {\n";
  emitArrays(os, *accumulateBinding);
  os << "  return guarded(error, error_size, [&](std::string &message) {\n"
        "    return lruc_library::run_accumulate_gradients(batch, params, "
        "state, args,\n        results, message);\n  });\n}\n\n";
  os << "int apply_gradients(float *params, float *adam_m, float *adam_v,\n"
        "    const float *grads, float lr, float step, char *error, size_t "
        "error_size) {\n";
  emitArrays(os, *applyBinding);
  // No batch: every operand is parameter-sized.
  os << "  return guarded(error, error_size, [&](std::string &message) {\n"
        "    return lruc_library::run_apply_gradients(1, params, nullptr, "
        "args, results,\n        message);\n  });\n}\n\n";

  // Step mode: the carries at their offsets, updated in place.
  std::optional<Binding> stepBinding;
  if (stepLayout) {
    Binding &binding = stepBinding.emplace();
    unsigned input = 0, carry = 0, output = 0;
    for (unsigned i = 0; i < stepMode.getNumArguments(); ++i)
      binding.args.push_back(
          stepMode.getArgAttr(i, "lru.carry")
              ? "carry + batch * " +
                    std::to_string(stepLayout->carries[carry++].offset)
              : "inputs[" + std::to_string(input++) + "]");
    for (; output < stepLayout->outputs.size(); ++output)
      binding.results.push_back("outputs[" + std::to_string(output) + "]");
    for (const StepLayout::Carry &c : stepLayout->carries)
      binding.results.push_back("carry + batch * " + std::to_string(c.offset));
    os << "int step_reset(int64_t batch, float *carry, char *error, size_t "
          "error_size) {\n"
          "  if (batch < 0)\n"
          "    return fail(\"step_reset: batch \" + std::to_string(batch) + "
          "\" is negative\", error, error_size);\n"
          "  std::fill(carry, carry + batch * "
       << stepLayout->floats
       << ", 0.0f);\n  return 0;\n}\n\n"
          "int step(int64_t batch, const float *params, const float *state, "
          "float *carry,\n    const void *const *inputs, float *const "
          "*outputs, char *error,\n    size_t error_size) {\n"
          "  return guarded(error, error_size, [&](std::string &message) {\n";
    emitStepIndexChecks(os, stepMode);
    os << "    return lruc::cpu::forStreamParts(batch, "
       << stepWeightBytes(stepMode)
       << ", message,\n"
          "        [&](int64_t first, int64_t count, std::string &message) {\n";
    emitArrays(os, streamsOf(stepMode, *stepLayout), "          ");
    os << "          return lruc_library::run_step(count, params, state, "
          "args, results,\n              message);\n        });\n  });\n}\n\n";
  }
  std::string unavailable;
  if (auto why = module->getAttrOfType<StringAttr>("lru.step_unavailable"))
    unavailable = why.str();

  os << "const lruc_model kModel = {\n"
        "  LRUC_ABI_VERSION, sizeof(lruc_model),\n  "
     << quoted(module->getAttrOfType<StringAttr>("lru.model")
                   ? module->getAttrOfType<StringAttr>("lru.model").getValue()
                   : StringRef("model"))
     << ", kManifest,\n  " << layout.paramFloats << ", " << layout.stateFloats
     << ",\n  " << layout.params.size() << ", kParams, " << layout.state.size()
     << ", kState,\n  " << inputs.size() << ", kInputs, " << outputs.size()
     << ", kOutputs,\n  init, forward, forward_train, backward, "
        "train_step,\n  ";
  if (stepLayout)
    os << "nullptr, " << stepLayout->floats << ", " << stepLayout->inputs.size()
       << ", kStepInputs, " << stepLayout->outputs.size()
       << ", kStepOutputs, step_reset, step,\n";
  else
    os << quoted(unavailable.empty() ? "the model has no step mode"
                                     : unavailable)
       << ", 0, 0, nullptr, 0, nullptr, nullptr, nullptr,\n";
  os << "  accumulate_gradients, apply_gradients,\n};\n\n";
  const auto &profiled = functions.profiledOps();
  if (options.profile) {
    os << "constexpr int kProfiledOps = " << profiled.size() << ";\n"
       << "const char *const kProfiledOpNames[kProfiledOps][3] = {\n";
    for (const auto &op : profiled)
      os << "  {" << quoted(op.function) << ", " << quoted(op.op) << ", "
         << quoted(op.location) << "},\n";
    os << R"cpp(};
lruc_library::ProfileCounter gProfileCounters[kProfiledOps];
lruc_profile_entry gProfileSnapshot[kProfiledOps];

)cpp";
  }
  os << "} // namespace\n\n";
  if (options.profile)
    os << "lruc_library::ProfileCounter &lruc_library::profileCounter(int "
          "op) {\n  return gProfileCounters[op];\n}\n\n";
  // On a CPU without the extensions the library was compiled for, a model
  // whose entry points say so (lruc/cpu/ModelForThisCpu.h).
  os << "extern \"C\" __attribute__((visibility(\"default\"))) const "
        "lruc_model *\nlruc_model_get(uint32_t abi_version) {\n"
        "  if (abi_version != LRUC_ABI_VERSION)\n    return nullptr;\n"
        "  static const lruc_model *const model =\n"
        "      lruc::cpu::modelForThisCpu(&kModel, kCpuFeatures);\n"
        "  return model;\n}\n";
  if (options.profile)
    os << R"cpp(
extern "C" __attribute__((visibility("default"))) const lruc_profile_entry *
lruc_profile(int32_t *count) {
  for (int k = 0; k < kProfiledOps; ++k) {
    const lruc_library::ProfileCounter &c = gProfileCounters[k];
    gProfileSnapshot[k] = {kProfiledOpNames[k][0], kProfiledOpNames[k][1],
                           kProfiledOpNames[k][2], c.calls.load(),
                           c.nanoseconds.load(), double(c.bytes.load()),
                           double(c.flops.load())};
  }
  *count = kProfiledOps;
  return gProfileSnapshot;
}

extern "C" __attribute__((visibility("default"))) void lruc_profile_reset() {
  for (lruc_library::ProfileCounter &c : gProfileCounters)
    c.calls = c.nanoseconds = c.bytes = c.flops = 0;
}
)cpp";
  os.flush();
  source.units.push_back(
      {"model", std::move(modelText), LibrarySource::Unit::Speed::Cold});
  if (!options.embedCuda)
    return success();

  // The GPU unit: the launch schedule (host code that waits on the driver:
  // Speed::Cold) and the CUDA source.
  std::string cuda;
  llvm::raw_string_ostream cudaStream(cuda);
  FailureOr<std::vector<CudaFunctionPlan>> plans =
      writeCudaSource(module, cudaStream, options.cuda);
  if (failed(plans))
    return failure();
  cudaStream.flush();
  // One raw string; its delimiter cannot occur in the generated CUDA.
  constexpr llvm::StringLiteral kEnd = ")lruc_cuda\"";
  if (StringRef(cuda).contains(kEnd))
    return module.emitError("the CUDA source contains ") << kEnd;
  GpuBindings bindings{trainBinding,
                       backwardBinding,
                       *binding,
                       *accumulateBinding,
                       *applyBinding,
                       stepBinding ? &*stepBinding : nullptr,
                       stepLayout ? stepLayout->floats : 0,
                       options.cuda.storage};
  std::string gpuText;
  llvm::raw_string_ostream gpu(gpuText);
  gpu << "#include \"lruc/cuda/Schedule.h\"\n\nnamespace {\n\n";
  if (failed(writeGpuEntryPoints(*plans, layout, bindings, gpu)))
    return failure();
  gpu << "} // namespace\n\n"
         "extern \"C\" __attribute__((visibility(\"default\"))) const "
         "lruc_gpu_model *\nlruc_gpu_model_get(uint32_t abi_version) {\n"
         "  return abi_version == LRUC_GPU_ABI_VERSION ? &kGpuModel : "
         "nullptr;\n}\n"
         "\n// The CUDA kernels of this model (lruc --emit=cuda), for the "
         "runtime's NVRTC.\n"
         "extern \"C\" __attribute__((visibility(\"default\"))) const char "
         "*\nlruc_cuda_source() {\n  return R\"lruc_cuda("
      << cuda << kEnd << ";\n}\n";
  gpu.flush();
  source.units.push_back({"gpu", std::move(gpuText),
                          LibrarySource::Unit::Speed::Cold,
                          /*dataBytes=*/cuda.size()});
  return success();
}

void buildFusionPipeline(OpPassManager &pm, Recompute recompute) {
  pm.addPass(createStripStopGradients());
  // One copy of what the derivation computed twice: a block's backward
  // pass rebuilds the length mask (and its sum, a full reduction) that
  // every BatchNorm and pooling of the forward pass had.
  pm.addNestedPass<func::FuncOp>(mlir::createCSEPass());
  pm.addNestedPass<func::FuncOp>(createFuseElementwisePass());
  pm.addNestedPass<func::FuncOp>(createRematerializePass());
  if (recompute != Recompute::None) {
    RecomputePassOptions options;
    options.states =
        recompute == Recompute::States || recompute == Recompute::AllStates;
    options.statesWhereSmaller = recompute == Recompute::States;
    pm.addNestedPass<func::FuncOp>(createRecomputePass(options));
  }
  pm.addNestedPass<func::FuncOp>(createFuseMultiTensorPass());
  pm.addNestedPass<func::FuncOp>(createFuseGemmEpiloguePass());
}

void buildCpuPipeline(OpPassManager &pm, Recompute recompute) {
  buildFusionPipeline(pm, recompute);
  pm.addNestedPass<func::FuncOp>(createGroupMatmulsPass());
  pm.addNestedPass<func::FuncOp>(createMarkStepConstantsPass());
  pm.addNestedPass<func::FuncOp>(createFuseStepConstantsPass());
  pm.addNestedPass<func::FuncOp>(createUpdateInPlacePass());
  pm.addNestedPass<func::FuncOp>(createPlanMemoryPass());
}

} // namespace lruc
