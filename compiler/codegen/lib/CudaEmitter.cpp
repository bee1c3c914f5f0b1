//===- CudaEmitter.cpp - Kernel-level IR to CUDA C++ ----------------------===//
//
// The device half of the CUDA backend: one `extern "C" __global__` kernel
// per op of each function of the kernel-level IR (the IR the CPU emitter
// reads), with every static size a constant and the batch `B` an argument.
// lru.fused groups become one kernel each through the element code the CPU
// emitter uses (EmitSupport.h), a grid-stride loop over the elements, or
// for a group with a scan a block per (chunk of a sequence's steps, 32 channels) walking time
// in tiles, the chunks of a sequence chained (see writeTiledScan); the
// structural ops get kernels of their own. Matmuls
// have none: they are cuBLAS calls of the host schedule. The source starts
// with the device prelude (runtime/cuda/device/lruc_device.cuh) and ends
// with the launch plan of each function: its kernels in order with their
// thread counts.
//
//===----------------------------------------------------------------------===//

#include "CudaEmitter.h"
#include "EmitSupport.h"
#include "GpuStorage.h"
#include "lruc/Codegen.h"
#include "lruc/MemoryPlan.h"

#include "lru/LRUOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace mlir;
using namespace lruc::emit;

namespace lruc {
namespace {

/// The device prelude, embedded at build time (cmake/EmbedText.cmake).
constexpr const char kPrelude[] =
#include "DevicePrelude.inc"
    ;

class CudaFunctionEmitter {
public:
  /// `kernels`: the module's kernels so far by their text (the name as
  /// `@`), which a kernel of the same text runs instead of a copy.
  CudaFunctionEmitter(llvm::raw_ostream &out,
                      llvm::StringMap<std::string> &kernels,
                      const CudaOptions &options)
      : out(out), kernels(kernels), options(options) {}

  LogicalResult emit(func::FuncOp func, CudaFunctionPlan &plan) {
    prefix = func.getSymName().str();
    function = func;
    storage = GpuStorage(func, options);
    FailureOr<MemoryPlan> memory = storage.plan(func);
    if (failed(memory))
      return failure();
    plan.memory = std::move(*memory);
    std::vector<CudaLaunch> &launches = plan.launches;
    current = &launches;
    chainItems = plan.scanChainItems = scanChainItems(func);
    if (chainItems)
      emitScanChainReset();
    plan.shadows.assign(storage.shadowed().begin(), storage.shadowed().end());
    if (!plan.shadows.empty())
      emitShadows(plan.shadows);
    writeOpKernels(0);
    int index = 0;
    for (Operation &op : func.getBody().front()) {
      opIndex = index++;
      current = &launches;
      const size_t first = launches.size();
      if (failed(emitOp(&op)))
        return failure();
      writeOpKernels(first);
    }
    emitResultsCopy(cast<func::ReturnOp>(func.getBody().front().getTerminator()));
    out << pending;
    pending.clear();
    return success();
  }

private:
  /// Writes the kernels the launches from `first` on run, each but one
  /// of the same text as a kernel written before (another layer's, another
  /// function's), whose name the launch takes instead. What differs between
  /// layers' kernels otherwise, the op a report names and the dropouts'
  /// sites, they take as arguments.
  void writeOpKernels(size_t first) {
    constexpr StringLiteral kStart = "extern \"C\" __global__ void ";
    StringRef text = pending;
    SmallVector<CudaLaunch *> launches;
    for (size_t i = first; i < current->size(); ++i)
      if (!(*current)[i].isGemm())
        launches.push_back(&(*current)[i]);
    SmallVector<StringRef> pieces;
    for (size_t at = text.find(kStart); at != StringRef::npos;) {
      size_t next = text.find(kStart, at + kStart.size());
      pieces.push_back(text.slice(at, next));
      at = next;
    }
    // Each launch's kernel, whole: otherwise the op's text as it is.
    if (pieces.size() != launches.size() ||
        (!pieces.empty() && pieces.front().data() != text.data())) {
      out << text;
      pending.clear();
      return;
    }
    for (auto [piece, launch] : llvm::zip(pieces, launches)) {
      std::string key = piece.str();
      size_t name = key.find(launch->kernel);
      key.replace(name, launch->kernel.size(), "@");
      auto [known, added] = kernels.try_emplace(key, launch->kernel);
      if (added)
        out << piece;
      else
        launch->kernel = known->second;
    }
    pending.clear();
  }

  /// Items (a chunk of a sequence's steps and 32 of its channels: a block)
  /// per example of the function's largest chunked scan, 0 without one:
  /// what its scan chain holds (lruc::gpu::ScanChain).
  static int64_t scanChainItems(func::FuncOp func) {
    int64_t items = 0;
    func.walk([&](lru::FusedOp group) {
      if (!group.getScan())
        return;
      int64_t chunks = group.getReductionChunksPerExample();
      if (chunks > 1)
        items = std::max(items,
                         chunks * columnBlocks(FusedLayout::of(group)));
    });
    return items;
  }

  /// The first kernel of a function with chunked scans: zeroes its scan
  /// chain's ticket counter and flags (device memory the call may find
  /// holding anything).
  void emitScanChainReset() {
    std::string name = prefix + "_scan_chain_reset";
    std::string items = "B * " + std::to_string(chainItems);
    CudaLaunch launch{name, items, false, nullptr, {}, {}};
    current->push_back(std::move(launch));
    os << signature(name) << kBodyStart
       << "  const lruc::gpu::ScanChain chain = lruc::gpu::scanChain(status, "
       << items << ");\n";
    gridLoop(items);
    os << "    lruc::gpu::clearScanChain(chain, " << items
       << ", i);\n  }\n}\n\n";
  }

  /// The first kernel of a function whose bfloat16 GEMMs read parameters
  /// (GpuStorage::shadowed): each such parameter rounded to bfloat16 into
  /// its shadow, which the schedule lays after the workspace.
  void emitShadows(ArrayRef<Value> parameters) {
    std::string name = prefix + "_shadows";
    int64_t most = 0;
    for (Value v : parameters)
      most = std::max(most, tensorType(v).getNumElements());
    CudaLaunch launch{name, std::to_string(most), false, nullptr, {}, {}};
    llvm::append_range(launch.operands, parameters);
    launch.copiesShadows = true;
    os << signature(name);
    for (size_t n = 0; n < parameters.size(); ++n) {
      launch.parameterTypes.push_back("const float *");
      os << ", const float *__restrict in" << n;
    }
    for (size_t n = 0; n < parameters.size(); ++n) {
      launch.parameterTypes.push_back("lruc::gpu::bf16 *");
      os << ", lruc::gpu::bf16 *__restrict out" << n;
    }
    current->push_back(std::move(launch));
    os << kBodyStart;
    for (auto [n, v] : llvm::enumerate(parameters)) {
      gridLoop(std::to_string(tensorType(v).getNumElements()));
      os << "    out" << n << "[i] = in" << n << "[i];\n  }\n";
    }
    os << "}\n\n";
  }

  /// The last kernel of a function: copies its returned values into the
  /// caller's results (runtime/include/lruc_gpu.h), all in one launch
  /// instead of a device-to-device copy each (a train step returns every
  /// parameter and both moments: ~275 copies of ~1-2 us each on a GPU's
  /// stream, most of them a few hundred floats). A value's floats are
  /// split into parts of kPartFloats, a block each, the parts laid end to
  /// end; a block finds its value by binary search over the first parts. A
  /// value that grows with the batch has as many parts as kTypicalBatch
  /// examples would need (at most kMostBatchedParts), its blocks striding
  /// through whatever the batch is: step mode's carries are a few hundred
  /// floats an example, and a launch of many idle blocks is latency a
  /// token. Not __restrict: a result may be the very array returned (a
  /// parameter handed back unchanged), which a copy leaves as it is.
  void emitResultsCopy(func::ReturnOp ret) {
    constexpr int64_t kPartFloats = 8 * kCudaBlockThreads;
    constexpr int64_t kTypicalBatch = 32, kMostBatchedParts = 256;
    std::string name = prefix + "_results";
    // A result written in place (lru.in_place) is there already.
    SmallVector<Value> copied;
    SmallVector<int64_t> into;
    for (auto [r, v] : llvm::enumerate(ret.getOperands()))
      if (!inPlaceResult(v)) {
        copied.push_back(v);
        into.push_back(int64_t(r));
      }
    if (copied.empty())
      return;
    std::vector<int64_t> firstPart{0};
    std::string cases;
    for (auto [n, v] : llvm::enumerate(copied)) {
      auto type = cast<RankedTensorType>(v.getType());
      const int64_t floatsPerElement = elementBytes(type) / 4;
      const bool batched = type.getRank() > 0 && type.isDynamicDim(0);
      int64_t floats = floatsPerElement;
      for (int64_t d = batched ? 1 : 0; d < type.getRank(); ++d)
        floats *= type.getDimSize(d);
      if (batched)
        floats *= kTypicalBatch;
      const int64_t parts = std::clamp<int64_t>(
          (floats + kPartFloats - 1) / kPartFloats, 1,
          batched ? kMostBatchedParts : std::numeric_limits<int64_t>::max());
      firstPart.push_back(firstPart.back() + parts);
      cases += "  case " + std::to_string(n) + ": from = in" +
               std::to_string(n) + "; to = out" + std::to_string(n) +
               "; floats = int64_t(" + countExpr(v) + ") * " +
               std::to_string(floatsPerElement) + "; break;\n";
    }
    const size_t count = copied.size();
    CudaLaunch launch{name, std::to_string(firstPart.back()), true, ret, {}, {}};
    launch.operands = copied;
    launch.resultIndices = into;
    launch.copiesResults = true;
    os << "__device__ const int32_t " << name << "_first[] = {";
    for (auto [k, first] : llvm::enumerate(firstPart))
      os << (k ? ", " : "") << first;
    os << "};\n\n" << signature(name);
    for (size_t n = 0; n < count; ++n) {
      launch.parameterTypes.push_back("const float *");
      os << ", const float *in" << n;
    }
    for (size_t n = 0; n < count; ++n) {
      launch.parameterTypes.push_back("float *");
      os << ", float *out" << n;
    }
    current->push_back(std::move(launch));
    os << kBodyStart << kUnlessFailed
       << "  const int32_t block = int32_t(blockIdx.x);\n"
       << "  int lo = 0, hi = " << count << ";\n"
       << "  while (hi - lo > 1) {\n"
       << "    const int mid = (lo + hi) / 2;\n"
       << "    (" << name << "_first[mid] <= block ? lo : hi) = mid;\n"
       << "  }\n"
       << "  const float *from = nullptr;\n  float *to = nullptr;\n"
       << "  int64_t floats = 0;\n  switch (lo) {\n"
       << cases << "  }\n"
       << "  const int64_t parts = " << name << "_first[lo + 1] - " << name
       << "_first[lo];\n"
       << "  for (int64_t i = int64_t(block - " << name
       << "_first[lo]) * blockDim.x + threadIdx.x; i < floats;\n"
       << "       i += parts * blockDim.x)\n"
       << "    to[i] = from[i];\n}\n\n";
  }

  /// What closes a kernel's parameters and opens its body: those every
  /// kernel takes (signature) marked used, as some kernels do not read them.
  static constexpr StringLiteral kBodyStart =
      ") {\n  (void)B; (void)status; (void)op;\n";
  /// The first statement of a kernel that writes the caller's arrays (the
  /// results copy, an update in place): nothing once an earlier kernel of
  /// the call has reported bad input, so that a failed call leaves them as
  /// they were, as on the CPU.
  static constexpr StringLiteral kUnlessFailed =
      "  if (status->op != -1)\n    return;\n";

  /// `extern "C" __global__ void <name>(` and the parameters every kernel
  /// takes first: the batch `B`, the status block and `op`, the number of
  /// the op it runs for in its function (what a report names).
  static std::string signature(StringRef name, StringRef bounds = "") {
    return ("extern \"C\" __global__ void " + bounds + name +
            "(int64_t B, lruc::gpu::Status *status, int32_t op")
        .str();
  }

  /// Starts the op's kernel (its name: the function, the op's index and
  /// `suffix`) with `B`, the status block, `op`, a site for each of
  /// `dropouts`, `inputs` (const) and `outputs`.
  /// A kernel of `blockThreads` threads a block other than the usual
  /// kCudaBlockThreads says so to ptxas (__launch_bounds__), with the
  /// blocks an SM must hold (kCudaMinResidentThreads), which then keeps its
  /// registers within what that many blocks may have.
  void begin(Operation *op, StringRef suffix, std::string threads,
             ArrayRef<Value> inputs, ArrayRef<Value> outputs,
             bool blockPerOutput = false, int blockThreads = kCudaBlockThreads,
             ArrayRef<lru::DropoutMaskOp> dropouts = {}) {
    std::string name = prefix + "_" + std::to_string(opIndex) + suffix.str();
    CudaLaunch launch{name, std::move(threads), blockPerOutput, op, {}, {}};
    // A block reduction's threads meet in lruc::gpu::blockSum.
    launch.synchronises = blockPerOutput;
    launch.blockThreads = blockThreads;
    llvm::append_range(launch.operands, inputs);
    llvm::append_range(launch.operands, outputs);
    std::string bounds;
    if (blockThreads != kCudaBlockThreads)
      bounds =
          "__launch_bounds__(" + std::to_string(blockThreads) + ", " +
          std::to_string(std::max(1, kCudaMinResidentThreads / blockThreads)) +
          ") ";
    os << signature(name, bounds);
    for (auto [n, dropout] : llvm::enumerate(dropouts)) {
      launch.sites.push_back(uint32_t(lru::DropoutMaskOp(dropout).getSite()));
      launch.parameterTypes.push_back("uint32_t");
      os << ", uint32_t site" << n;
    }
    auto param = [&](Value v, bool input, size_t n) {
      const bool bf16 = storage.isBf16(v);
      launch.bf16Operands.push_back(bf16);
      std::string element = elementType(v.getType());
      if (bf16)
        element =
            isComplex(v.getType()) ? "lruc::gpu::cbf16" : "lruc::gpu::bf16";
      std::string type = (input ? "const " : "") + element + " *";
      launch.parameterTypes.push_back(type);
      os << ", " << type << "__restrict " << (input ? "in" : "out") << n;
    };
    for (auto [n, v] : llvm::enumerate(inputs))
      param(v, true, n);
    for (auto [n, v] : llvm::enumerate(outputs))
      param(v, false, n);
    current->push_back(std::move(launch));
    os << kBodyStart;
    // Names of the kernel's own: the same code in another layer is the
    // same text (writeOpKernels).
    counter = 0;
  }

  /// `lruc::gpu::report(status, <op>, <index>, <value>);` in the current
  /// kernel, which the schedule then names in its messages.
  std::string report(StringRef index, StringRef value) {
    current->back().reports = true;
    return "lruc::gpu::report(status, op, " + index.str() + ", " + value.str() +
           ");\n";
  }

  /// The current kernel's grid-stride loop over `count` elements.
  void gridLoop(StringRef count, StringRef index = "i") {
    current->back().gridStride = true;
    // NVVM unrolls a small loop by 4 by itself, but not one that stores
    // bfloat16 (its rounding is inline PTX, whose cost it cannot weigh).
    if (llvm::is_contained(current->back().bf16Operands, true))
      os << "  LRUC_UNROLL_4\n";
    os << "  for (int64_t " << index << " = lruc::gpu::firstIndex(); "
       << index << " < " << count << "; " << index
       << " += lruc::gpu::gridStride()) {\n";
  }

  /// A length read from `lengths` (or L when null) at sequence `s`, checked
  /// against [0, steps]: a bad one is reported and treated as 0.
  void readLength(StringRef lengths, StringRef s, StringRef steps,
                  StringRef indent = "    ") {
    if (lengths.empty()) {
      os << indent << "const int64_t length = " << steps << ";\n";
      return;
    }
    os << indent << "int64_t length = " << lengths << "[" << s << "];\n"
       << indent << "if (length < 0 || length > " << steps << ") {\n"
       << indent << "  " << report(s, "length")
       << indent << "  length = 0;\n"
       << indent << "}\n";
  }

  LogicalResult emitFused(lru::FusedOp op) {
    Block &body = op.getBody().front();
    FusedBody element(op, "lruc::gpu", counter);
    SmallVector<Value> inputs;
    llvm::DenseMap<Value, std::string> arrays;
    for (auto [arg, input] : llvm::zip(body.getArguments(), op.getInputs())) {
      std::string &array = arrays[input];
      if (array.empty()) {
        array = "in" + std::to_string(inputs.size());
        inputs.push_back(input);
      }
      element.bindInput(arg, array);
    }
    SmallVector<std::string> outputs;
    for (size_t n = 0; n < op.getNumResults(); ++n)
      outputs.push_back("out" + std::to_string(n));
    const FusedLayout &layout = element.getLayout();
    lru::ScanOp scan = layout.scan;
    // A thread per element, or per (chunk, column) for a group with sums;
    // a scan group: a block per (chunk of steps, sequence, 32 channels).
    const int blockThreads = scan ? 32 * options.scanWarps : kCudaBlockThreads;
    int64_t scanChunks = scan ? op.getReductionChunksPerExample() : 1;
    std::string threads =
        scan ? "B * " + std::to_string(columnBlocks(layout)) + " * " +
                   (scanChunks > 1 ? std::to_string(scanChunks) + " * " : "") +
                   std::to_string(blockThreads)
        : layout.sums ? "(" + layout.chunks + ") * " + layout.last
                      : productExpr(op.getLoopType().getShape());
    SmallVector<Value> results(op.getResults()), sums;
    // Each sum's accumulator of the thread's column, and its store into the
    // thread's chunk's row of partial sums.
    std::string sumDeclarations, sumStores;
    for (auto [n, result] : llvm::enumerate(op.getResults())) {
      if (!op.getReduction(unsigned(n)))
        continue;
      sums.push_back(result);
      std::string sum = "sum" + std::to_string(n), out = outputs[n];
      if (isComplex(result.getType())) {
        sumDeclarations +=
            "  float " + sum + "re = 0.0f, " + sum + "im = 0.0f;\n";
        sumStores += "  " + out + "[row + j] = cfloat(" + sum + "re, " + sum +
                     "im);\n";
      } else {
        sumDeclarations += "  float " + sum + " = 0.0f;\n";
        sumStores += "  " + out + "[row + j] = " + sum + ";\n";
      }
    }
    auto sumOf = [](unsigned n, StringRef part) {
      return "sum" + std::to_string(n) + part.str();
    };
    // A group with dropouts draws each dropout's decisions a Philox block
    // (four neighbours) a lane: over a warp's tile of 4 x 32 elements, then
    // hands each lane its own (lruc::gpu::dropoutKeepAt); the tile is 128
    // neighbours, or without sums 4 rows of the warp's 32 columns
    // (whole warps of a row: its width a multiple of 32). Otherwise each
    // element draws its own block.
    SmallVector<lru::DropoutMaskOp> dropouts = element.dropouts();
    const bool dropoutTiles =
        !dropouts.empty() &&
        (!layout.sums || op.getLoopType().getShape().back() % 32 == 0);
    auto writeKeeps = [&](StringRef block) {
      for (lru::DropoutMaskOp dropout : dropouts)
        os << "    const uint32_t " << element.keepName(dropout)
           << "bits = lruc::gpu::dropoutBits(" << element.keyAndSiteOf(dropout)
           << ", " << block << ", " << FusedBody::thresholdOf(dropout)
           << ");\n";
    };
    // The tile's 4 rows' decisions, every lane shuffling before any leaves
    // the tile (and before the rows' code, so that no shuffle stands
    // between one row's loads and the next's).
    auto writeTileKeeps = [&] {
      for (lru::DropoutMaskOp dropout : dropouts) {
        std::string keep = element.keepName(dropout);
        os << "    bool " << keep << "rows[4];\n"
           << "    LRUC_UNROLL\n    for (int r = 0; r < 4; ++r)\n"
           << "      " << keep << "rows[r] = lruc::gpu::dropoutKeepAt(" << keep
           << "bits, r);\n";
      }
    };
    auto keepOf = [&](lru::DropoutMaskOp dropout) {
      if (dropoutTiles)
        return element.keepName(dropout);
      return "lruc::gpu::dropoutKeep(" + element.keyAndSiteOf(dropout) +
             ", uint64_t(i), " + FusedBody::thresholdOf(dropout) + ")";
    };
    // A tile's 4 rows: unrolled with no bounds test where the tile is whole
    // (`whole`), so that the compiler can issue all their loads before the
    // first use (a test a row keeps a row's loads behind the rows before
    // it); with one otherwise.
    auto writeTileRows = [&](const std::string &whole,
                             llvm::function_ref<void()> writeRow,
                             llvm::function_ref<void()> writeBoundsTest,
                             llvm::function_ref<void()> writeIndices) {
      writeTileKeeps();
      for (bool all : {true, false}) {
        os << (all ? "    if (" + whole + ") {\n" : "    } else {\n")
           << "    LRUC_UNROLL\n    for (int r = 0; r < 4; ++r) {\n";
        for (lru::DropoutMaskOp dropout : dropouts)
          os << "    const bool " << element.keepName(dropout) << " = "
             << element.keepName(dropout) << "rows[r];\n";
        writeRow();
        if (!all)
          writeBoundsTest();
        writeIndices();
        if (failed(element.writeElement(os, stateNamed, sumOf, outputs, nullptr,
                                        nullptr, keepOf)))
          return failure();
        os << "    }\n";
      }
      os << "    }\n";
      return success();
    };
    // A nested group without sums whose rows are whole warps runs by
    // columns: a thread keeps its column j and walks rows a grid's worth
    // of rows apart, so it reads the group's per-column values (biases,
    // scales) once instead of an element, and its indices take an add
    // instead of a division (an element of Text's elementwise kernels took
    // 44-80 SASS instructions, bench/gpu/sass_loops.py, most of them those).
    int64_t columns = 0;
    const bool byColumns =
        options.columnLoops && !scan && !layout.sums && layout.nested &&
        !StringRef(layout.last).getAsInteger(10, columns) && columns % 32 == 0;
    // Tiles of rows [o4, o4 + 4) of the warp's 32 neighbouring columns
    // (the thread's column j; rows of a multiple of 32 columns), o4 from
    // `first` below `stop` by `step`: lane l draws the Philox block l % 8
    // of row o4 + l / 8's 32 columns.
    auto writeRowTiles = [&](StringRef first, StringRef stop, StringRef step) {
      os << "  const int lane = threadIdx.x % 32;\n"
         << "  for (int64_t o4 = " << first << "; o4 < " << stop
         << "; o4 += " << step << ") {\n";
      writeKeeps("uint64_t(((o4 + lane / 8) * " + layout.last +
                 " + j - lane) / 4 + lane % 8)");
      return writeTileRows(
          "o4 + 4 <= " + stop.str(),
          [&] { os << "    const int64_t o = o4 + r;\n"; },
          [&] { os << "    if (o >= " << stop << ")\n      break;\n"; },
          [&] {
            os << "    const int64_t i = o * " << layout.last << " + j;\n";
          });
    };
    // Without sums a thread takes 4 elements' turn of the grid-stride loop.
    const std::string count = threads;
    if (dropoutTiles && !layout.sums)
      threads = "(" + count + " + 3) / 4";
    begin(op, scan ? "_scan" : "", threads, inputs, results,
          /*blockPerOutput=*/false, blockThreads, dropouts);
    if (dropoutTiles)
      current->back().synchronises = true; // the lanes' shuffles
    element.writeConstants(os);
    if (scan) {
      current->back().synchronises = true;
      if (failed(writeTiledScan(op, element, outputs, sumDeclarations,
                                sumOf)))
        return failure();
      if (layout.sums)
        os << "  const int64_t row = "
           << (scanChunks > 1
                   ? "(s * " + std::to_string(scanChunks) + " + c) * "
                   : "s * ")
           << layout.last << ";\n"
           << "  if (warp == 0 && active) {\n"
           << sumStores << "  }\n";
      os << "}\n\n";
    } else if (layout.sums) {
      os << "  const int64_t u = lruc::gpu::firstIndex();\n"
         << "  if (u >= " << threads << ")\n    return;\n"
         << "  const int64_t c = u / " << layout.last << ", j = u % "
         << layout.last << ";\n";
      layout.writeChunkRows(os, "c", "  ");
      os << sumDeclarations;
      if (dropoutTiles) {
        if (failed(writeRowTiles("first", "stop", "4")))
          return failure();
      } else {
        os << "  for (int64_t o = first; o < stop; ++o) {\n"
           << "    const int64_t i = o * " << layout.last << " + j;\n";
      }
    } else if (byColumns) {
      writeColumnLoops(layout, "(" + count + ") / " + layout.last,
                       dropoutTiles);
      if (dropoutTiles) {
        if (failed(writeRowTiles("4 * g", "rows", "4 * groups")))
          return failure();
      } else {
        os << "  for (int64_t o = g; o < rows; o += groups) {\n"
           << "    const int64_t i = o * " << layout.last << " + j;\n";
      }
    } else if (dropoutTiles) {
      current->back().gridStride = true;
      os << "  const int lane = threadIdx.x % 32;\n"
         << "  for (int64_t w = (lruc::gpu::firstIndex() - lane) * 4; w < "
         << count << "; w += lruc::gpu::gridStride() * 4) {\n";
      writeKeeps("uint64_t(w / 4 + lane)");
      if (failed(writeTileRows(
              "w + 128 <= " + count,
              [&] { os << "    const int64_t i = w + 32 * r + lane;\n"; },
              [&] { os << "    if (i >= " << count << ")\n      continue;\n"; },
              [&] {
                os << "    const int64_t o = i / " << layout.last
                   << ", j = i % " << layout.last
                   << ";\n    (void)o; (void)j;\n";
              })))
        return failure();
    } else {
      gridLoop(threads);
      if (layout.nested)
        os << "    const int64_t o = i / " << layout.last << ", j = i % "
           << layout.last << ";\n    (void)o; (void)j;\n";
    }
    if (!scan) {
      if (!dropoutTiles &&
          failed(element.writeElement(os, stateNamed, sumOf, outputs, nullptr,
                                      nullptr, keepOf)))
        return failure();
      os << (byColumns ? "  }\n  }\n" : "  }\n");
      if (!layout.sums) {
        os << "}\n\n";
        return success();
      }
      os << "  const int64_t row = c * " << layout.last << ";\n"
         << sumStores << "}\n\n";
    } else if (!layout.sums) {
      return success();
    }
    // Then a block per 32 columns adds the rows of partial sums into the
    // first: warp w the rows w, w + 32, ... in double, then warp 0 the
    // warps' totals in order (a fixed order: sums repeat exactly). The
    // largest block: a model has a few such blocks (its channels / 32) for
    // thousands of rows.
    begin(op, "_sums",
          std::to_string(columnBlocks(layout)) + " * " +
              std::to_string(kCudaSumsBlockThreads),
          {}, sums, /*blockPerOutput=*/false, kCudaSumsBlockThreads);
    current->back().synchronises = true;
    os << "  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;\n"
       << "  const int64_t j = int64_t(blockIdx.x) * 32 + lane;\n"
       << "  const int64_t rows = j < " << layout.last << " ? "
       << layout.chunks << " : 0;\n";
    for (auto [n, sum] : llvm::enumerate(sums)) {
      std::string out = "out" + std::to_string(n);
      bool complex = isComplex(sum.getType());
      os << "  {\n    double re, im;\n"
         << "    lruc::gpu::sumRows(" << out << " + j, " << layout.last
         << ", rows, re, im);\n"
         << "    re = lruc::gpu::sumOverWarps(re);\n"
         << (complex ? "    im = lruc::gpu::sumOverWarps(im);\n" : "")
         << "    if (warp == 0 && rows > 0)\n"
         << "      " << out << "[j] = "
         << (complex ? "cfloat(float(re), float(im))" : "float(re)")
         << ";\n  }\n";
    }
    os << "}\n\n";
    return success();
  }

  /// The loops of a kernel that runs by columns (emitFused), up to the
  /// row loop's: the grid's threads in `groups` groups of a thread a
  /// column (of `rows` rows of layout.last columns), group g taking rows
  /// g, g + groups, ...; a grid of fewer threads than columns is one group
  /// whose threads take every `width`-th column. Whole warps leave at the
  /// grid's end (the columns are a multiple of 32), so that the rest may
  /// shuffle (`tiles`: its rows then go four at a time).
  void writeColumnLoops(const FusedLayout &layout, const std::string &rows,
                        bool tiles) {
    current->back().gridStride = true;
    const std::string &columns = layout.last;
    os << "  const int64_t rows = " << rows << ";\n"
       << "  const int64_t thread = lruc::gpu::firstIndex(), all = "
          "lruc::gpu::gridStride();\n"
       << "  const int64_t width = all < " << columns << " ? all : " << columns
       << ", groups = all / width;\n"
       << "  if (thread >= groups * width)\n    return;\n"
       << "  const int64_t g = thread / width;\n"
       << "  for (int64_t j = thread % width; j < " << columns
       << "; j += width) {\n";
    // Two rows a turn: NVVM's own choice (4) took a thread's registers from
    // the flat loop's 32 to 56-72, a third of the threads an SM may hold.
    if (!tiles)
      os << "  LRUC_UNROLL_2\n";
  }

  static std::string stateNamed(StringRef part) {
    return "state" + part.str();
  }

  /// Blocks of 32 columns of a nested group's last dim (a scan group's
  /// channels): the lanes of a warp take neighbouring columns.
  static int64_t columnBlocks(const FusedLayout &layout) {
    int64_t columns = 0;
    llvm::StringRef(layout.last).getAsInteger(10, columns);
    return (columns + 31) / 32;
  }

  /// The body of a scan group's kernel, a block per (chunk c of
  /// kScanChunkSteps steps, sequence s, 32 channels j; a sequence of one
  /// chunk: per (s, j)), in tiles of kWarps * kStepsPerThread steps: warp w
  /// of the block takes steps [w, w + 1) * kStepsPerThread of each. The
  /// chunks of a sequence are chained (lruc::gpu::ScanChain): a chunk's
  /// block starts from the end state the block of the chunk before hands
  /// on, and hands on its own. First each
  /// thread runs its steps from a zero state, keeping only the end state
  /// and the product of λ (FusedBody's first pass: the compiler drops
  /// whatever feeds only the stores); the block then chains the warps'
  /// (product, end) pairs in order from the tile's carried state, which
  /// gives each thread its start state; then each thread runs its steps
  /// again from there, storing and summing, its scan inputs from where the
  /// first pass kept them (shared memory, tileInput). Sums
  /// are added across the warps in order at the end, into warp 0.
  /// Lanes past the last channel compute nothing but meet every barrier.
  LogicalResult
  writeTiledScan(lru::FusedOp op, FusedBody &element,
                 ArrayRef<std::string> outputs,
                 StringRef sumDeclarations,
                 llvm::function_ref<std::string(unsigned, StringRef)> sumOf) {
    const FusedLayout &layout = element.getLayout();
    lru::ScanOp scan = layout.scan;
    bool complex = isComplex(scan.getType());
    SmallVector<std::string> parts =
        complex ? SmallVector<std::string>{"re", "im"}
                : SmallVector<std::string>{""};
    int64_t groups = columnBlocks(layout);
    const int warps = options.scanWarps;
    // A sequence longer than a chunk runs as a block per chunk, in ticket
    // order (lruc::gpu::ScanChain): item = (chunk c, sequence s, block of
    // channels g), chunk-major.
    const int64_t chunks = op.getReductionChunksPerExample();
    const bool chained = chunks > 1;
    const int64_t chunkSteps = op.getReductionChunkRows();
    // Pass 1 keeps each step's scan input in shared memory for pass 2
    // (tileInput, a step's row the block's threads' floats): at most
    // kScanInputCacheBytes, beside tileEnd (two such rows) and the rest
    // within a block's static shared memory.
    const int64_t rowBytes =
        int64_t(warps) * 32 * int64_t(parts.size()) * int64_t(sizeof(float));
    const int64_t cacheBytes = std::min<int64_t>(
        kScanInputCacheBytes,
        kStaticSharedBytes - 2 * rowBytes - kScanOtherSharedBytes);
    const int64_t cachedSteps = std::max<int64_t>(1, cacheBytes / rowBytes);
    const int64_t stepsPerThread = std::min(
        cachedSteps, chained ? std::clamp<int64_t>(
                                   (chunkSteps + warps - 1) / warps, 1,
                                   kScanStepsPerThread)
                             : kScanStepsPerThread);
    os << "  constexpr int kWarps = " << warps
       << ", kStepsPerThread = " << stepsPerThread << ";\n";
    if (chained) {
      std::string sequences = "B * " + std::to_string(groups);
      os << "  constexpr int64_t kChunks = " << chunks
         << ", kChunkSteps = " << chunkSteps << ";\n"
         << "  const lruc::gpu::ScanChain chain = lruc::gpu::scanChain(status, "
            "B * "
         << chainItems << ");\n"
         << "  __shared__ int64_t ticket;\n"
         << "  if (threadIdx.x == 0)\n"
         << "    ticket = lruc::gpu::takeTicket(chain, " << sequences
         << " * kChunks);\n"
         << "  __syncthreads();\n"
         << "  const int64_t item = ticket;\n"
         << "  const int64_t c = item / (" << sequences << "), s = item % ("
         << sequences << ") / " << groups << ", g = item % " << groups
         << ";\n"
         << "  const int64_t chunkStart = c * kChunkSteps;\n"
         << "  const int64_t chunkEnd = chunkStart + kChunkSteps < "
         << layout.steps << " ? chunkStart + kChunkSteps : " << layout.steps
         << ";\n";
    } else {
      os << "  const int64_t s = blockIdx.x / " << groups << ";\n"
         << "  if (s >= B)\n    return; // the whole block\n"
         << "  const int64_t g = blockIdx.x % " << groups << ";\n"
         << "  const int64_t chunkStart = 0, chunkEnd = " << layout.steps
         << ";\n";
    }
    os << "  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;\n"
       << "  const int64_t j = g * 32 + lane;\n"
       << "  const bool active = j < " << layout.last << ";\n";
    std::string lengths =
        scan.getLengths() ? element.arrayOf(scan.getLengths()) : "";
    readLength(lengths, "s", layout.steps, "  ");
    Value init = scan.getInit();
    std::string initValue =
        init ? "(active ? " + element.arrayOf(init) + "[s * " + layout.last +
                   " + j] : " + elementType(init.getType()) + "(0.0f))"
             : "0.0f";
    if (complex)
      os << "  float carryre = lruc::gpu::real(" << initValue
         << "), carryim = lruc::gpu::imag(" << initValue << ");\n";
    else
      os << "  float carry = " << initValue << ";\n";
    // A warp's (end, product) pairs as one 16-byte (complex) or 8-byte
    // access: every thread reads all the warps' in the chaining loop.
    const std::string endType =
        complex ? "lruc::gpu::Float4" : "lruc::gpu::Float2";
    os << "  __shared__ " << endType << " tileEnd[kWarps][32];\n";
    // A complex input's parts side by side: one 8-byte store and load a
    // step (Nsight Compute found the shared-memory queue a sixth of a
    // scan's stalls).
    os << "  __shared__ " << (complex ? "lruc::gpu::Float2" : "float")
       << " tileInput[kStepsPerThread][kWarps * 32];\n";
    os << sumDeclarations
       << "  for (int64_t k0 = chunkStart; k0 < chunkEnd"
       << "; k0 += kWarps * kStepsPerThread) {\n"
       << "    const int64_t k1 = k0 + warp * kStepsPerThread;\n"
       << "    const int64_t k2 = k1 + kStepsPerThread < chunkEnd"
       << " ? k1 + kStepsPerThread : chunkEnd;\n";
    // `name` = `value` (real), or its parts `value` + 0i (complex).
    auto declare = [&](StringRef name, StringRef value) {
      if (complex)
        os << "    float " << name << "re = " << value << ", " << name
           << "im = 0.0f;\n";
      else
        os << "    float " << name << " = " << value << ";\n";
    };
    // A thread's steps: a whole run unrolled, so that the loads of all of
    // them (independent of the state) are in flight at once, a scan being
    // otherwise bound by one memory latency a step; a partial run (the
    // sequence's last tile, lanes past the last channel) step by step.
    auto writeSteps = [&](llvm::function_ref<LogicalResult(bool whole)> body) {
      for (bool whole : {true, false}) {
        if (whole)
          os << "    if (active && k2 - k1 == kStepsPerThread) {\n"
             << "    LRUC_UNROLL\n"
             << "    for (int64_t k = k1; k < k1 + kStepsPerThread; ++k) {\n";
        else
          os << "    } else {\n"
             << "    for (int64_t k = k1; active && k < k2; ++k) {\n";
        os << "    const int64_t t = "
           << (scan.getReverse() ? "k < length ? length - 1 - k : k" : "k")
           << ";\n"
           << "    const bool real = t < length;\n"
           << "    const int64_t o = s * " << layout.steps << " + t;\n"
           << "    const int64_t i = o * " << layout.last << " + j;\n";
        if (failed(body(whole)))
          return failure();
        os << "    }\n";
      }
      os << "    }\n";
      return success();
    };
    // Pass 1a: each step's scan input into tileInput, and in a whole run
    // into registers too (tileB). The steps are independent here, so all
    // their loads are in flight before the recurrence waits on the first
    // (with the recurrence in the same loop ptxas kept 4-5 of a run's 8
    // loads in flight).
    const std::string cached = "tileInput[k - k1][threadIdx.x]";
    os << "    " << elementType(scan.getType()) << " tileB[kStepsPerThread];\n";
    if (failed(writeSteps([&](bool whole) {
          return element.writeElement(
              os, nullptr, sumOf, {}, nullptr,
              [&](llvm::raw_ostream &k, StringRef b) {
                if (complex)
                  k << "    " << cached << " = lruc::gpu::Float2{{" << b
                    << ".real(), " << b << ".imag()}};\n";
                else
                  k << "    " << cached << " = " << b << ";\n";
                if (whole)
                  k << "    tileB[k - k1] = " << b << ";\n";
                return b.str();
              });
        })))
      return failure();
    // Pass 1b: from zero, the end state and the product of λ.
    auto cachedInput = [&](bool whole) {
      if (whole)
        return std::string("tileB[k - k1]");
      return complex ? "cfloat(" + cached + ".v[0], " + cached + ".v[1])"
                     : cached;
    };
    declare("state", "0.0f");
    declare("product", "1.0f");
    if (failed(writeSteps([&](bool whole) {
          return element.writeElement(
              os, stateNamed, sumOf, {},
              [](StringRef part) { return "product" + part.str(); },
              [&](llvm::raw_ostream &, StringRef) {
                return cachedInput(whole);
              });
        })))
      return failure();
    os << "    tileEnd[warp][lane] = " << endType << "{{";
    for (auto [n, part] : llvm::enumerate(parts))
      os << (n ? ", " : "") << "state" << part << ", product" << part;
    os << "}};\n";
    os << "    __syncthreads();\n";
    // A chunk after the first starts from the end state of the chunk
    // before, which another block hands on.
    auto carryPart = [&](StringRef part) {
      return complex ? "carry" + part.str() : std::string("carry");
    };
    if (chained) {
      os << "    if (c > 0 && k0 == chunkStart) {\n"
         << "      __shared__ float chunkCarry[32][2];\n"
         << "      if (warp == 0)\n"
         << "        lruc::gpu::takeCarry(chain, item - B * " << groups
         << ", lane, chunkCarry[lane][0], chunkCarry[lane][1]);\n"
         << "      __syncthreads();\n";
      for (auto [n, part] : llvm::enumerate(parts))
        os << "      " << carryPart(part) << " = chunkCarry[lane][" << n
           << "];\n";
      os << "    }\n";
    }
    // Chaining: each warp's start state, and the next tile's carry.
    os << "    for (int w = 0; w < kWarps; ++w) {\n";
    for (StringRef part : parts)
      os << "      if (w == warp)\n        state" << part << " = carry"
         << part << ";\n";
    if (complex)
      os << "      const lruc::gpu::Float4 end = tileEnd[w][lane];\n"
         << "      const float endre = end.v[0], pre = end.v[1];\n"
         << "      const float endim = end.v[2], pim = end.v[3];\n"
         << "      const float nextre = pre * carryre - pim * carryim + "
            "endre;\n"
         << "      carryim = pre * carryim + pim * carryre + endim;\n"
         << "      carryre = nextre;\n";
    else
      os << "      const lruc::gpu::Float2 end = tileEnd[w][lane];\n"
         << "      carry = end.v[1] * carry + end.v[0];\n";
    os << "    }\n";
    // The chunk's end state, handed on as soon as it is known.
    if (chained)
      os << "    if (warp == 0 && c + 1 < kChunks && k0 + kWarps * "
            "kStepsPerThread >= chunkEnd)\n"
         << "      lruc::gpu::giveCarry(chain, item, lane, "
         << carryPart(parts[0]) << ", "
         << (complex ? carryPart(parts[1]) : std::string("0.0f")) << ");\n";
    os << "    __syncthreads(); // tileEnd is the next tile's\n";
    // Pass 2: from the start state, storing and summing; the scan's input
    // from tileInput, so that what only computed it is not read again
    // (with a block per chunk of steps, about 40% of those re-reads
    // missed L2 on an H100).
    if (failed(writeSteps([&](bool) {
          return element.writeElement(os, stateNamed, sumOf, outputs, nullptr,
                                      [&](llvm::raw_ostream &, StringRef) {
                                        return cachedInput(false);
                                      });
        })))
      return failure();
    os << "  }\n";
    // Sums: each column's partials added across the warps in order.
    if (layout.sums)
      for (unsigned n = 0; n < outputs.size(); ++n) {
        if (!op.getReduction(n))
          continue;
        bool complexSum = isComplex(op.getResult(n).getType());
        for (StringRef part : complexSum ? SmallVector<std::string>{"re", "im"}
                                         : SmallVector<std::string>{""}) {
          std::string sum = sumOf(n, part);
          os << "  " << sum << " = lruc::gpu::sumOverWarps(" << sum
             << ");\n";
        }
      }
    return success();
  }

  /// An lru.multi_tensor as one kernel: a grid-stride loop over the
  /// elements of all its groups, each group's elements a range of the flat
  /// index, found by a binary search over the ranges (a group per
  /// parameter: dozens of them).
  LogicalResult emitMultiTensor(lru::MultiTensorOp op) {
    Block &body = op.getBody().front();
    llvm::DenseMap<Value, std::string> outputOf;
    for (auto [n, inner] : llvm::enumerate(body.getTerminator()->getOperands()))
      outputOf[inner] = "out" + std::to_string(n);
    // The array of each input: an argument that a result written in place
    // (lru.in_place) updates is read through that result's output.
    llvm::DenseMap<Value, std::string> arrayOf;
    for (auto [inner, n] : inputsWrittenOver(op, function))
      arrayOf[inner] = "out" + std::to_string(n);
    SmallVector<Value> inputs;
    for (auto [inner, input] : llvm::zip(body.getArguments(), op.getInputs()))
      if (!arrayOf.count(inner)) {
        arrayOf[inner] = "in" + std::to_string(inputs.size());
        inputs.push_back(input);
      }
    std::vector<std::unique_ptr<FusedBody>> elements;
    // Static shapes (the verifier): each group's range is constant.
    SmallVector<int64_t> ends;
    for (lru::FusedOp group : op.getGroups()) {
      elements.push_back(std::make_unique<FusedBody>(group, "lruc::gpu", counter));
      for (auto [arg, input] :
           llvm::zip(group.getBody().front().getArguments(), group.getInputs()))
        elements.back()->bindInput(arg, arrayOf.lookup(input));
      ends.push_back((ends.empty() ? 0 : ends.back()) +
                     tensorType(group.getResult(0)).getNumElements());
    }
    std::string total = std::to_string(ends.back());
    SmallVector<Value> results(op.getResults());
    begin(op, "", total, inputs, results);
    if (op->hasAttr(kInPlaceAttr))
      os << kUnlessFailed;
    for (auto &element : elements)
      element->writeConstants(os);
    gridLoop(total, "g");
    SmallVector<lru::FusedOp> groups(op.getGroups());
    // Groups [first, last): g is in their ranges.
    std::function<LogicalResult(size_t, size_t)> writeGroups =
        [&](size_t first, size_t last) -> LogicalResult {
      if (last - first > 1) {
        size_t middle = (first + last) / 2;
        os << "    if (g < " << ends[middle - 1] << ") {\n";
        if (failed(writeGroups(first, middle)))
          return failure();
        os << "    } else {\n";
        if (failed(writeGroups(middle, last)))
          return failure();
        os << "    }\n";
        return success();
      }
      os << "    {\n    const int64_t i = g - " << (first ? ends[first - 1] : 0)
         << ";\n";
      const FusedLayout &layout = elements[first]->getLayout();
      if (layout.nested)
        os << "    const int64_t o = i / " << layout.last << ", j = i % "
           << layout.last << ";\n    (void)o; (void)j;\n";
      SmallVector<std::string> outputs;
      for (Value result : groups[first].getResults())
        outputs.push_back(outputOf.lookup(result));
      // No sums here (the verifier): nothing names an accumulator.
      if (failed(elements[first]->writeElement(
              os, [](StringRef part) { return "state" + part.str(); },
              [](unsigned, StringRef) { return std::string(); }, outputs)))
        return failure();
      os << "    }\n";
      return success();
    };
    if (failed(writeGroups(0, groups.size())))
      return failure();
    os << "  }\n}\n\n";
    return success();
  }

  /// y[i] = f(x[i], ...) for a lone elementwise op.
  LogicalResult emitElementwise(Operation *op, StringRef expr) {
    SmallVector<Value> inputs(op->getOperands());
    SmallVector<std::string> args;
    for (size_t n = 0; n < inputs.size(); ++n)
      args.push_back("in" + std::to_string(n) + "[i]");
    std::string count = countExpr(op->getResult(0));
    begin(op, "", count, inputs, {op->getResult(0)});
    gridLoop(count);
    os << "    out0[i] = " << substitute(expr, args) << ";\n  }\n}\n\n";
    return success();
  }

  LogicalResult emitConstant(arith::ConstantOp op) {
    auto attr = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!attr)
      return op.emitError("the CUDA backend needs a dense constant");
    std::string type = elementType(op.getType());
    std::vector<std::string> values = elementLiterals(attr);
    std::string count = countExpr(op.getResult());
    begin(op, "", count, {}, {op.getResult()});
    if (attr.isSplat()) {
      gridLoop(count);
      os << "    out0[i] = " << type << "(" << values[0] << ");\n  }\n}\n\n";
      return success();
    }
    os << "  const " << type << " values[] = {";
    for (size_t i = 0; i < values.size(); ++i)
      os << (i ? ", " : "") << values[i];
    os << "};\n";
    gridLoop(count);
    os << "    out0[i] = values[i];\n  }\n}\n\n";
    return success();
  }

  LogicalResult emitBroadcast(lru::BroadcastOp op) {
    std::string index = broadcastSourceIndex(op, "i");
    std::string count = countExpr(op.getResult());
    begin(op, "", count, {op.getX()}, {op.getResult()});
    gridLoop(count);
    os << "    out0[i] = in0[" << index << "];\n  }\n}\n\n";
    return success();
  }

  /// A block per output element: its threads stride over the reduced
  /// elements, then a tree sum (the same order every run).
  LogicalResult emitReduceSum(lru::ReduceSumOp op) {
    auto x = tensorType(op.getX());
    Coordinates from(x), to(tensorType(op.getResult()));
    SmallVector<int64_t> reduced(op.getDims()), kept;
    SmallVector<int64_t> reducedSizes;
    for (int64_t d = 0; d < x.getRank(); ++d) {
      if (llvm::is_contained(reduced, d))
        reducedSizes.push_back(x.getDimSize(d));
      else
        kept.push_back(d);
    }
    // x's flat index: the output's coordinates at the kept dims, the
    // reduced index r's at the others.
    std::string base = "0", offset = "0";
    for (auto [k, d] : llvm::enumerate(kept))
      base += " + " + to.coordinate(k, "o") + " * " + from.stride(d);
    auto reducedType = RankedTensorType::get(reducedSizes, x.getElementType());
    Coordinates within(reducedType);
    for (auto [k, d] : llvm::enumerate(reduced))
      offset += " + " + within.coordinate(k, "r") + " * " + from.stride(d);
    std::string outputs = countExpr(op.getResult());
    std::string total = productExpr(reducedSizes);
    int64_t last = x.getRank() - 1;
    // The reduced dims one run of rows a stride apart: neighbours (the
    // strides are row-major).
    llvm::sort(reduced);
    bool oneRun = true;
    for (size_t k = 1; k < reduced.size(); ++k)
      oneRun &= reduced[k] == reduced[k - 1] + 1;
    if (last > 0 && !llvm::is_contained(reduced, last) &&
        !x.isDynamicDim(last) && oneRun) {
      // The last dim is kept (mean pooling over time, [B, L, H] -> [B, H]):
      // a block per 32 of its columns, the lanes of a warp reading
      // neighbouring columns of a row, warp w the rows w, w + 32, ..., then
      // warp 0 the warps' sums in order.
      int64_t columns = x.getDimSize(last);
      int64_t groups = (columns + 31) / 32;
      std::string outer = "(" + outputs + ") / " + std::to_string(columns);
      begin(op, "",
            outer + " * " + std::to_string(groups) + " * " +
                std::to_string(kCudaSumsBlockThreads),
            {op.getX()}, {op.getResult()}, /*blockPerOutput=*/false,
            kCudaSumsBlockThreads);
      current->back().synchronises = true;
      os << "  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;\n"
         << "  const int64_t column = int64_t(blockIdx.x % " << groups
         << ") * 32 + lane;\n"
         << "  const int64_t o = int64_t(blockIdx.x / " << groups << ") * "
         << columns << " + column;\n"
         << "  const bool active = column < " << columns << " && o < "
         << outputs << ";\n"
         << "  const int64_t base = " << base << ";\n"
         << "  double re, im;\n"
         << "  lruc::gpu::sumRows(in0 + base, " << from.stride(reduced.back())
         << ", active ? " << total << " : 0, re, im);\n"
         << "  re = lruc::gpu::sumOverWarps(re);\n"
         << (isComplex(op.getResult().getType())
                 ? "  im = lruc::gpu::sumOverWarps(im);\n"
                 : "")
         << "  if (warp == 0 && active)\n    out0[o] = "
         << (isComplex(op.getResult().getType())
                 ? "cfloat(float(re), float(im))"
                 : "float(re)")
         << ";\n}\n\n";
      return success();
    }
    begin(op, "", outputs, {op.getX()}, {op.getResult()}, true);
    os << "  for (int64_t o = blockIdx.x; o < " << outputs
       << "; o += gridDim.x) {\n"
       << "    const int64_t base = " << base << ";\n"
       << "    " << elementType(x) << " sum = 0.0f;\n"
       << "    for (int64_t r = threadIdx.x; r < " << total
       << "; r += blockDim.x)\n"
       << "      sum += in0[base + " << offset << "];\n"
       << "    sum = lruc::gpu::blockSum(sum);\n"
       << "    if (threadIdx.x == 0)\n      out0[o] = sum;\n  }\n}\n\n";
    return success();
  }

  LogicalResult emitConcat(lru::ConcatOp op) {
    auto y = tensorType(op.getResult());
    Coordinates to(y);
    int64_t dim = op.getDim();
    SmallVector<Value> inputs(op.getInputs());
    std::string count = countExpr(op.getResult());
    begin(op, "", count, inputs, {op.getResult()});
    gridLoop(count);
    os << "    const int64_t c = " << to.coordinate(dim, "i") << ";\n";
    int64_t start = 0;
    for (auto [n, v] : llvm::enumerate(inputs)) {
      auto part = tensorType(v);
      Coordinates from(part);
      std::string index = "0";
      for (int64_t d = 0; d < y.getRank(); ++d)
        index += " + " +
                 (d == dim ? "(c - " + std::to_string(start) + ")"
                           : to.coordinate(d, "i")) +
                 " * " + from.stride(d);
      int64_t size = part.getDimSize(dim);
      os << "    " << (n ? "else " : "") << "if (c < " << start + size
         << ")\n      out0[i] = in" << n << "[" << index << "];\n";
      start += size;
    }
    os << "  }\n}\n\n";
    return success();
  }

  LogicalResult emitSlice(lru::SliceOp op) {
    auto y = tensorType(op.getResult());
    Coordinates from(tensorType(op.getX())), to(y);
    std::string index = "0";
    for (int64_t d = 0; d < y.getRank(); ++d)
      index +=
          " + " +
          (d == int64_t(op.getDim()) ? "(" + to.coordinate(d, "i") + " + " +
                                           std::to_string(op.getOffset()) + ")"
                                     : to.coordinate(d, "i")) +
          " * " + from.stride(d);
    std::string count = countExpr(op.getResult());
    begin(op, "", count, {op.getX()}, {op.getResult()});
    gridLoop(count);
    os << "    out0[i] = in0[" << index << "];\n  }\n}\n\n";
    return success();
  }

  /// The operands of a sequence op in kernel order, with their C++ names:
  /// the present ones of `optional` get consecutive `in` numbers.
  std::string optionalInput(Value v, SmallVector<Value> &inputs) {
    if (!v)
      return "";
    inputs.push_back(v);
    return "in" + std::to_string(inputs.size() - 1);
  }

  LogicalResult emitShift(lru::ShiftOp op) {
    auto x = tensorType(op.getX());
    std::string steps = dimExpr(x.getDimSize(1)),
                width = dimExpr(x.getDimSize(2));
    SmallVector<Value> inputs{op.getX()};
    std::string init = optionalInput(op.getInit(), inputs);
    std::string lengths = optionalInput(op.getLengths(), inputs);
    std::string count = countExpr(op.getResult());
    begin(op, "", count, inputs, {op.getResult()});
    gridLoop(count);
    os << "    const int64_t s = i / (" << steps << " * " << width
       << "), t = i / " << width << " % " << steps << ", j = i % " << width
       << ";\n    (void)j;\n";
    readLength(lengths, "s", steps);
    bool reverse = op.getReverse();
    os << "    const bool first = " << (reverse ? "t == length - 1" : "t == 0")
       << ";\n"
       << "    " << elementType(op.getType()) << " value = 0.0f;\n"
       << "    if (t < length && !first)\n      value = in0[i "
       << (reverse ? "+" : "-") << " " << width << "];\n";
    if (!init.empty())
      os << "    else if (t < length)\n      value = " << init << "[s * "
         << width << " + j];\n";
    os << "    out0[i] = value;\n  }\n}\n\n";
    return success();
  }

  LogicalResult emitScan(lru::ScanOp op) {
    auto b = tensorType(op.getB());
    std::string steps = dimExpr(b.getDimSize(1)),
                width = dimExpr(b.getDimSize(2));
    bool perStep = tensorType(op.getLambda()).getRank() == 3;
    SmallVector<Value> inputs{op.getLambda(), op.getB()};
    std::string init = optionalInput(op.getInit(), inputs);
    std::string lengths = optionalInput(op.getLengths(), inputs);
    std::string type = elementType(op.getType());
    std::string threads = "B * " + width;
    begin(op, "", threads, inputs, {op.getResult()});
    os << "  const int64_t u = lruc::gpu::firstIndex();\n"
       << "  if (u >= " << threads << ")\n    return;\n"
       << "  const int64_t s = u / " << width << ", j = u % " << width << ";\n";
    readLength(lengths, "s", steps, "  ");
    os << "  " << type << " state = "
       << (init.empty() ? type + "(0.0f)" : init + "[s * " + width + " + j]")
       << ";\n"
       << "  for (int64_t k = 0; k < " << steps << "; ++k) {\n"
       << "    const int64_t t = "
       << (op.getReverse() ? "k < length ? length - 1 - k : k" : "k") << ";\n"
       << "    const int64_t i = (s * " << steps << " + t) * " << width
       << " + j;\n"
       << "    if (t >= length) {\n      out0[i] = " << type
       << "(0.0f);\n      continue;\n    }\n"
       << "    state = in0[" << (perStep ? "i" : "j") << "] * state + in1[i];\n"
       << "    out0[i] = state;\n  }\n}\n\n";
    return success();
  }

  /// `index`, the table row of element i's entry `e` of `in1` (a table of
  /// `width` columns); one outside [0, vocab) is reported and `onBad` runs.
  void readIndex(StringRef vocab, StringRef width, StringRef onBad) {
    os << "    const int64_t e = i / " << width << ";\n"
       << "    const int64_t index = in1[e];\n"
       << "    if (index < 0 || index >= " << vocab << ") {\n"
       << "      " << report("e", "index")
       << onBad << "      continue;\n    }\n";
  }

  LogicalResult emitGather(lru::GatherOp op) {
    auto table = tensorType(op.getTable());
    std::string vocab = dimExpr(table.getDimSize(0)),
                width = dimExpr(table.getDimSize(1));
    std::string count = countExpr(op.getResult());
    begin(op, "", count, {op.getTable(), op.getIndices()}, {op.getResult()});
    gridLoop(count);
    readIndex(vocab, width, "      out0[i] = 0.0f;\n");
    os << "    out0[i] = in0[index * " << width << " + i % " << width
       << "];\n  }\n}\n\n";
    return success();
  }

  /// Two kernels: the table zeroed, then every update added atomically
  /// (the order of the sums varies run to run, within float rounding).
  /// A table of few rows (an embedding's gradient over a small
  /// vocabulary) draws every update onto the same few addresses: there a
  /// block adds its rows into its own copy of a 32-column slice of the
  /// table in shared memory, and only that copy goes to the table.
  LogicalResult emitScatterAdd(lru::ScatterAddOp op) {
    auto table = tensorType(op.getResult());
    int64_t rows = table.getDimSize(0), columns = table.getDimSize(1);
    std::string vocab = dimExpr(rows), width = dimExpr(columns);
    std::string tableCount = countExpr(op.getResult());
    begin(op, "_zero", tableCount, {}, {op.getResult()});
    gridLoop(tableCount);
    os << "    out0[i] = 0.0f;\n  }\n}\n\n";
    std::string count = countExpr(op.getUpdates());
    // 48 KiB: the static shared memory a block may have without opting in.
    constexpr int64_t kSharedFloats = 12 * 1024;
    if (rows * 32 > kSharedFloats) {
      begin(op, "", count, {op.getUpdates(), op.getIndices()},
            {op.getResult()});
      gridLoop(count);
      readIndex(vocab, width, "");
      os << "    atomicAdd(&out0[index * " << width << " + i % " << width
         << "], in0[i]);\n  }\n}\n\n";
      return success();
    }
    // Blocks: (32-column slice, group of update rows); a warp per update
    // row, its lanes the slice's columns. Fewer groups for more rows: each
    // group's copy costs a table's worth of atomics at the end.
    int64_t slices = (columns + 31) / 32, rowGroups = rows <= 64 ? 128 : 32;
    begin(op, "", std::to_string(slices * rowGroups),
          {op.getUpdates(), op.getIndices()}, {op.getResult()},
          /*blockPerOutput=*/true);
    os << "  __shared__ float slice[" << rows << " * 32];\n"
       << "  const int64_t column = int64_t(blockIdx.x % " << slices
       << ") * 32 + threadIdx.x % 32;\n"
       << "  const int64_t group = blockIdx.x / " << slices << ";\n"
       << "  const int64_t warps = blockDim.x / 32;\n"
       << "  for (int r = threadIdx.x; r < " << rows
       << " * 32; r += blockDim.x)\n    slice[r] = 0.0f;\n"
       << "  __syncthreads();\n";
    // Eight rows' loads first, then their atomic adds (each a compare-
    // and-swap loop on an H100, which the compiler does not move loads
    // across): with one row at a time a warp had one row's loads in
    // flight, 12% of the copy's bandwidth for Text's embedding. No branch
    // on a bad index either: it adds 0 to row 0 and is reported after.
    auto valueAt = [&](const std::string &row) {
      std::string load = "in0[(" + row + ") * " + width + " + column]";
      return columns % 32 == 0 ? load
                               : "column < " + width + " ? " + load + " : 0.0f";
    };
    auto add = [&](StringRef v, StringRef index, StringRef row) {
      os << "    {\n      const bool known = " << index << " >= 0 && "
         << index << " < " << vocab << ";\n"
         << "      bad = known ? bad : " << row << ";\n"
         << "      badIndex = known ? badIndex : " << index << ";\n"
         << "      atomicAdd(&slice[(known ? " << index
         << " : 0) * 32 + threadIdx.x % 32], known ? " << v
         << " : 0.0f);\n    }\n";
    };
    os << "  const int64_t stride = " << rowGroups << " * warps, updates = ("
       << count << ") / " << width << ";\n"
       << "  int64_t bad = -1, badIndex = 0;\n"
       << "  int64_t e = group * warps + threadIdx.x / 32;\n"
       << "  for (; e + 7 * stride < updates; e += 8 * stride) {\n"
       << "    float values[8];\n    int64_t indices[8];\n"
       << "    LRUC_UNROLL\n    for (int u = 0; u < 8; ++u) {\n"
       << "      values[u] = " << valueAt("e + u * stride") << ";\n"
       << "      indices[u] = in1[e + u * stride];\n    }\n"
       << "    LRUC_UNROLL\n    for (int u = 0; u < 8; ++u)\n";
    add("values[u]", "indices[u]", "e + u * stride");
    os << "  }\n"
       << "  for (; e < updates; e += stride) {\n"
       << "    const int64_t index = in1[e];\n";
    add(valueAt("e"), "index", "e");
    os << "  }\n"
       << "  if (bad >= 0 && threadIdx.x % 32 == 0)\n    "
       << report("bad", "badIndex") << "  __syncthreads();\n"
       << "  for (int r = threadIdx.x; r < " << rows
       << " * 32; r += blockDim.x) {\n"
       << "    const int64_t c = column - threadIdx.x % 32 + r % 32;\n"
       << "    if (c < " << width << " && slice[r] != 0.0f)\n"
       << "      atomicAdd(&out0[(r / 32) * " << width
       << " + c], slice[r]);\n  }\n}\n\n";
    return success();
  }

  LogicalResult emitLengthMask(lru::LengthMaskOp op) {
    std::string steps = dimExpr(tensorType(op.getResult()).getDimSize(1));
    std::string count = countExpr(op.getResult());
    SmallVector<Value> inputs = {op.getLengths()};
    if (op.getLabels())
      inputs.push_back(op.getLabels());
    begin(op, "", count, inputs, {op.getResult()});
    gridLoop(count);
    os << "    const int64_t s = i / " << steps << ", t = i % " << steps
       << ";\n";
    readLength("in0", "s", steps);
    os << "    out0[i] = "
       << (op.getKind() == lru::MaskKind::last ? "t == length - 1"
                                               : "t < length")
       << (op.getLabels() ? " && in1[i] >= 0" : "")
       << " ? 1.0f : 0.0f;\n  }\n}\n\n";
    return success();
  }

  LogicalResult emitZeroPadding(lru::ZeroPaddingOp op) {
    auto x = tensorType(op.getX());
    std::string steps = dimExpr(x.getDimSize(1)),
                width = productExpr(x.getShape().drop_front(2));
    std::string count = countExpr(op.getResult());
    begin(op, "", count, {op.getX(), op.getLengths()}, {op.getResult()});
    gridLoop(count);
    os << "    const int64_t step = i / (" << width << ");\n"
       << "    const int64_t s = step / " << steps << ", t = step % " << steps
       << ";\n";
    readLength("in1", "s", steps);
    os << "    out0[i] = t < length ? in0[i] : 0;\n  }\n}\n\n";
    return success();
  }

  LogicalResult emitLabelWeight(lru::LabelWeightOp op) {
    std::string count = countExpr(op.getResult());
    ArrayRef<float> weights = op.getWeights();
    begin(op, "", count, {op.getLabels()}, {op.getResult()});
    gridLoop(count);
    classWeightArray(weights);
    os << "    const int label = in0[i];\n"
       << "    out0[i] = label >= 0 && label < " << weights.size()
       << " ? w[label] : 0.0f;\n  }\n}\n\n";
    return success();
  }

  /// The row's largest logit and the sum of e^(z - top) over the others
  /// (runtime/cpu's softmaxStats); a bad label is reported. A row not
  /// scored (`ignoreNegative`, a negative label) runs `notScored` instead.
  void softmaxRow(StringRef classes, bool ignoreNegative, StringRef notScored) {
    // `auto`: the logits may be stored in bfloat16 (per-step logits are
    // sequence-sized); each read widens to float.
    os << "    const auto *z = in0 + i * " << classes << ";\n"
       << "    const int64_t label = in1[i];\n";
    if (ignoreNegative)
      os << "    if (label < 0) {\n      " << notScored
         << "      continue;\n    }\n";
    os << "    if (label < 0 || label >= " << classes << ") {\n"
       << "      " << report("i", "label") << "      continue;\n    }\n"
       << "    int64_t best = 0;\n"
       << "    for (int64_t c = 1; c < " << classes << "; ++c)\n"
       << "      best = z[c] > z[best] ? c : best;\n"
       << "    const float top = z[best];\n"
       << "    float rest = 0.0f;\n"
       << "    for (int64_t c = 0; c < " << classes << "; ++c)\n"
       << "      rest += c == best ? 0.0f : expf(z[c] - top);\n";
  }

  /// The class weights as the kernel's constant array `w`, and their sum,
  /// `total` (summed in order in float, as runtime/cpu's kernel).
  void classWeightArray(ArrayRef<float> weights) {
    os << "    const float w[] = {";
    float total = 0.0f;
    for (auto [k, v] : llvm::enumerate(weights)) {
      os << (k ? ", " : "") << floatLiteral(v);
      total += v;
    }
    os << "};\n    const float total = " << floatLiteral(total)
       << ";\n    (void)total;\n";
  }

  LogicalResult emitSoftmaxCrossEntropy(lru::SoftmaxCrossEntropyOp op) {
    std::string classes = dimExpr(tensorType(op.getLogits()).getShape().back());
    std::string rows = countExpr(op.getLabels());
    begin(op, "", rows, {op.getLogits(), op.getLabels()}, {op.getResult()});
    gridLoop(rows);
    softmaxRow(classes, op.getIgnoreNegative(), "out0[i] = 0.0f;\n");
    double smoothing = op.getLabelSmoothing().convertToDouble();
    if (auto weights = op.getClassWeights()) {
      // (1 - s) w[label] nll + s / K (W log1p(rest) + sum_k w[k] (top -
      // z[k])), as runtime/cpu's kernel.
      classWeightArray(*weights);
      os << "    float spread = 0.0f;\n"
         << "    for (int64_t c = 0; c < " << classes << "; ++c)\n"
         << "      spread += w[c] * (top - z[c]);\n"
         << "    out0[i] = " << floatLiteral(1 - smoothing)
         << " * w[label] * (log1pf(rest) + (top - z[label])) + "
         << floatLiteral(smoothing) << " / float(" << classes
         << ") * (total * log1pf(rest) + spread);\n  }\n}\n\n";
      return success();
    }
    if (smoothing == 0) {
      os << "    out0[i] = log1pf(rest) + (top - z[label]);\n  }\n}\n\n";
      return success();
    }
    // Against (1 - s) onehot + s / K: s (z[label] - mean z) more.
    os << "    float sum = 0.0f;\n"
       << "    for (int64_t c = 0; c < " << classes << "; ++c)\n"
       << "      sum += z[c];\n"
       << "    out0[i] = log1pf(rest) + (top - z[label]) + "
       << floatLiteral(smoothing) << " * (z[label] - sum / float(" << classes
       << "));\n  }\n}\n\n";
    return success();
  }

  LogicalResult emitSoftmaxCrossEntropyGrad(lru::SoftmaxCrossEntropyGradOp op) {
    std::string classes = dimExpr(tensorType(op.getLogits()).getShape().back());
    std::string rows = countExpr(op.getLabels());
    begin(op, "", rows, {op.getLogits(), op.getLabels(), op.getG()},
          {op.getResult()});
    gridLoop(rows);
    softmaxRow(classes, op.getIgnoreNegative(),
               "for (int64_t c = 0; c < " + classes + "; ++c)\n" +
                   "        out0[i * " + classes + " + c] = 0.0f;\n");
    os << "    const float scale = in2[i] / (1.0f + rest);\n";
    double smoothing = op.getLabelSmoothing().convertToDouble();
    if (auto weights = op.getClassWeights()) {
      // ((1 - s) w[label] (p - onehot) + s / K (W p - w)) g.
      classWeightArray(*weights);
      os << "    const float share = " << floatLiteral(smoothing) << " / float("
         << classes << ");\n"
         << "    const float labelWeight = " << floatLiteral(1 - smoothing)
         << " * w[label];\n"
         << "    const float pScale = scale * (labelWeight + share * total);\n"
         << "    for (int64_t c = 0; c < " << classes << "; ++c)\n"
         << "      out0[i * " << classes
         << " + c] = expf(z[c] - top) * pScale - share * w[c] * in2[i] - "
            "(c == label ? labelWeight * in2[i] : 0.0f);\n"
         << "  }\n}\n\n";
      return success();
    }
    if (smoothing == 0) {
      os << "    for (int64_t c = 0; c < " << classes << "; ++c)\n"
         << "      out0[i * " << classes
         << " + c] = expf(z[c] - top) * scale - (c == label ? in2[i] : "
            "0.0f);\n"
         << "  }\n}\n\n";
      return success();
    }
    // softmax - (1 - s) onehot - s / K.
    os << "    const float spread = " << floatLiteral(smoothing) << " / float("
       << classes << ") * in2[i];\n"
       << "    for (int64_t c = 0; c < " << classes << "; ++c)\n"
       << "      out0[i * " << classes
       << " + c] = expf(z[c] - top) * scale - spread - (c == label ? "
       << floatLiteral(1 - smoothing) << " * in2[i] : 0.0f);\n"
       << "  }\n}\n\n";
    return success();
  }

  /// A thread per Philox block of four elements (runtime/core's layout),
  /// read and written as one 16-byte access where the arrays allow: a
  /// thread's elements are neighbours, so four scalar accesses a thread
  /// would make a warp's loads and stores touch four times the sectors
  /// they use (on an H100, L2 busy 97% of the time and DRAM 40%).
  LogicalResult emitDropoutMask(lru::DropoutMaskOp op) {
    std::string count = countExpr(op.getX());
    std::string blocks = "(" + count + " + 3) / 4";
    begin(op, "", blocks, {op.getX(), op.getKey()}, {op.getResult()},
          /*blockPerOutput=*/false, kCudaBlockThreads, {op});
    std::string keep = "(words[w] >> 8) >= " + FusedBody::thresholdOf(op);
    std::string scale = FusedBody::scaleOf(op);
    os << "  const bool whole = lruc::gpu::aligned16(in0, out0);\n";
    gridLoop(blocks);
    os << "    uint32_t words[4];\n"
       << "    lruc::gpu::dropoutWords(uint64_t(in1[0]), uint32_t(in1[1]), "
          "site0, uint64_t(i), words);\n"
       << "    if (whole && i * 4 + 4 <= " << count << ") {\n"
       << "      const lruc::gpu::Float4 x = "
          "reinterpret_cast<const lruc::gpu::Float4 *>(in0)[i];\n"
       << "      lruc::gpu::Float4 y;\n"
       << "      LRUC_UNROLL\n"
       << "      for (int w = 0; w < 4; ++w)\n"
       << "        y.v[w] = " << keep << " ? x.v[w] * " << scale << " : 0.0f;\n"
       << "      reinterpret_cast<lruc::gpu::Float4 *>(out0)[i] = y;\n"
       << "      continue;\n    }\n"
       << "    for (int64_t w = 0; w < 4 && i * 4 + w < " << count
       << "; ++w) {\n"
       << "      const int64_t e = i * 4 + w;\n"
       << "      out0[e] = " << keep << " ? in0[e] * " << scale
       << " : 0.0f;\n    }\n  }\n}\n\n";
    return success();
  }

  LogicalResult emitOp(Operation *op) {
    using namespace lru;
    if (std::optional<std::string> expr = scalarTemplate(op, "lruc::gpu"))
      return emitElementwise(op, *expr);
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        // Parameters, views and results are the host's pointers; matmuls
        // are cuBLAS calls of the host schedule.
        .Case<ParamOp, ViewOp, func::ReturnOp>(
            [](Operation *) { return success(); })
        .Case([&](MatmulOp o) {
          CudaLaunch gemm{"cublas", "", false, o, {}, {}};
          const bool bf16 = storage.isBf16(o);
          gemm.bf16Operands = {bf16, bf16, storage.isBf16(o.getResult())};
          current->push_back(std::move(gemm));
          return success();
        })
        .Case([&](arith::ConstantOp o) { return emitConstant(o); })
        .Case([&](FusedOp o) { return emitFused(o); })
        .Case([&](MultiTensorOp o) { return emitMultiTensor(o); })
        .Case([&](BroadcastOp o) { return emitBroadcast(o); })
        .Case([&](ReduceSumOp o) { return emitReduceSum(o); })
        .Case([&](ConcatOp o) { return emitConcat(o); })
        .Case([&](SliceOp o) { return emitSlice(o); })
        .Case([&](ShiftOp o) { return emitShift(o); })
        .Case([&](ScanOp o) { return emitScan(o); })
        .Case([&](GatherOp o) { return emitGather(o); })
        .Case([&](ScatterAddOp o) { return emitScatterAdd(o); })
        .Case([&](LengthMaskOp o) { return emitLengthMask(o); })
        .Case([&](ZeroPaddingOp o) { return emitZeroPadding(o); })
        .Case([&](LabelWeightOp o) { return emitLabelWeight(o); })
        .Case(
            [&](SoftmaxCrossEntropyOp o) { return emitSoftmaxCrossEntropy(o); })
        .Case([&](SoftmaxCrossEntropyGradOp o) {
          return emitSoftmaxCrossEntropyGrad(o);
        })
        .Case([&](DropoutMaskOp o) { return emitDropoutMask(o); })
        .Default([&](Operation *other) {
          return other->emitOpError("has no CUDA code generation");
        });
  }

  /// The module's source; each op's kernels are written to `os` first
  /// (`pending`), then to `out` unless the module has them (writeOpKernels).
  llvm::raw_ostream &out;
  std::string pending;
  llvm::raw_string_ostream os{pending};
  /// Numbers the current kernel's temporaries (from zero in each).
  unsigned counter = 0;
  llvm::StringMap<std::string> &kernels;
  /// Items per example of the function's scan chain (scanChainItems).
  int64_t chainItems = 0;
  const CudaOptions &options;
  /// Which of the function's values its kernels keep in bfloat16.
  GpuStorage storage;
  std::string prefix;
  func::FuncOp function; ///< the one being emitted
  int opIndex = 0;
  std::vector<CudaLaunch> *current = nullptr;
};

/// The kernels' host-side entry for the GPU simulator (compiled as C++
/// with LRUC_GPU_SIMULATE, which NVRTC never defines): one thread of each
/// kernel, called with an argument array like cuLaunchKernel's, and which
/// kernels' threads synchronise (the simulator runs their blocks as
/// coroutines; the others a thread at a time), and the kernels' names: the
/// plan's, then the device prelude's `lruc_few_rows_nt`.
void writeSimulation(const std::vector<CudaFunctionPlan> &plans,
                     llvm::raw_ostream &os) {
  os << "\n#ifdef LRUC_GPU_SIMULATE\nnamespace {\n";
  std::vector<const CudaLaunch *> kernels = firstLaunches(plans);
  for (const CudaLaunch *l : kernels) {
    os << "void sim" << l->index << "(void **a) {\n  " << l->kernel
       << "(*static_cast<int64_t *>(a[0]), "
          "*static_cast<lruc::gpu::Status **>(a[1]), "
          "*static_cast<int32_t *>(a[2])";
    for (auto [n, type] : llvm::enumerate(l->parameterTypes))
      os << ", *static_cast<" << type << " *>(a[" << n + 3 << "])";
    os << ");\n}\n";
  }
  // The device prelude's own kernel (lruc::cuda::Device's products of a
  // few rows), after the model's.
  os << "void simFewRows(void **a) {\n  lruc_few_rows_nt("
     << "*static_cast<int64_t *>(a[0]), *static_cast<int64_t *>(a[1]), "
        "*static_cast<int64_t *>(a[2]), *static_cast<const float **>(a[3]), "
        "*static_cast<int64_t *>(a[4]), *static_cast<int64_t *>(a[5]), "
        "*static_cast<const float **>(a[6]), *static_cast<int64_t *>(a[7]), "
        "*static_cast<int64_t *>(a[8]), *static_cast<float **>(a[9]), "
        "*static_cast<int64_t *>(a[10]), *static_cast<int64_t *>(a[11]));\n}\n";
  os << "void (*const kSimKernels[])(void **) = {";
  for (const CudaLaunch *l : kernels)
    os << "sim" << l->index << ", ";
  os << "simFewRows};\n} // namespace\n\n"
     << "// The running thread (lruc_sim_now) of kernel `kernel` (its index "
        "among the\n// source's kernels, which launches share), or past its "
        "end the prelude's.\n"
     << "extern \"C\" __attribute__((visibility(\"default\"))) void\n"
        "lruc_sim_run(int32_t kernel, void **args) {\n"
     << "  kSimKernels[kernel](args);\n}\n\n"
     << "// 1 where the kernel's threads synchronise (__syncthreads, "
        "shuffles).\n"
     << "extern \"C\" __attribute__((visibility(\"default\"))) const "
        "int8_t\n    lruc_sim_synchronises[] = {";
  for (const CudaLaunch *l : kernels)
    os << (l->synchronises ? 1 : 0) << ", ";
  os << "1};\n\n// The kernels' names, as in the PTX (a simulated driver's "
        "cuModuleGetFunction).\n"
     << "extern \"C\" __attribute__((visibility(\"default\"))) const "
        "char *const\n    lruc_sim_kernel_names[] = {";
  for (const CudaLaunch *l : kernels)
    os << '"' << l->kernel << "\", ";
  os << "\"lruc_few_rows_nt\"};\nextern \"C\" "
        "__attribute__((visibility(\"default\"))) const int32_t\n"
        "    lruc_sim_kernel_count = "
     << kernels.size() + 1 << ";\n#endif // LRUC_GPU_SIMULATE\n";
}

/// Whether matmul `second`, right after `first` in the plan, can run in the
/// same cuBLAS call: the same kind and shapes (so one m, n, k and the same
/// leading dimensions), and neither writes a buffer the other reads or
/// writes (the memory plan may give `second`'s result the slot of an operand
/// of `first` that dies there; in one call they would run at once).
bool batchable(lru::MatmulOp first, lru::MatmulOp second,
               const MemoryPlan &memory) {
  if (first.getKind() != second.getKind() ||
      first.getLhs().getType() != second.getLhs().getType() ||
      first.getRhs().getType() != second.getRhs().getType())
    return false;
  // A buffer's slot, or -1 for the caller's memory (parameters, arguments),
  // which no GEMM writes.
  auto slot = [&](Value v) -> int64_t {
    auto it = memory.slotOf.find(storageOf(v));
    return it == memory.slotOf.end() ? -1 : int64_t(it->second);
  };
  auto touches = [&](lru::MatmulOp op, int64_t written) {
    return written >= 0 &&
           (slot(op.getLhs()) == written || slot(op.getRhs()) == written ||
            slot(op.getResult()) == written);
  };
  return !touches(first, slot(second.getResult())) &&
         !touches(second, slot(first.getResult()));
}

/// Runs each two adjacent GEMMs that batchable allows as one cuBLAS call (a
/// strided batch of two). In step mode, where a token's products take less
/// time than their launches, each complex product is two (B_re u and B_im u,
/// C_re Re(x) and C_im Im(x)) and so is the GLU (Decompose.cpp).
void batchGemmPairs(CudaFunctionPlan &plan) {
  std::vector<CudaLaunch> launches;
  for (CudaLaunch &launch : plan.launches) {
    if (!launches.empty() && launch.isGemm() && launches.back().isGemm() &&
        !launches.back().batchedOp &&
        launches.back().bf16Operands == launch.bf16Operands &&
        batchable(cast<lru::MatmulOp>(launches.back().op),
                  cast<lru::MatmulOp>(launch.op), plan.memory)) {
      launches.back().batchedOp = launch.op;
      continue;
    }
    launches.push_back(std::move(launch));
  }
  plan.launches = std::move(launches);
}

} // namespace

std::vector<const CudaLaunch *>
firstLaunches(const std::vector<CudaFunctionPlan> &plans) {
  std::vector<const CudaLaunch *> kernels;
  for (const CudaFunctionPlan &plan : plans)
    for (const CudaLaunch &l : plan.launches)
      if (!l.isGemm() && l.index == int32_t(kernels.size()))
        kernels.push_back(&l);
  return kernels;
}

FailureOr<std::vector<CudaFunctionPlan>>
writeCudaSource(ModuleOp module, llvm::raw_ostream &os,
                const CudaOptions &options) {
  os << "// Generated by lruc: the CUDA kernels of model '"
     << (module->getAttrOfType<StringAttr>("lru.model")
             ? module->getAttrOfType<StringAttr>("lru.model").getValue()
             : StringRef("model"))
     << "'. Do not edit.\n"
     << kPrelude << "\nusing lruc::gpu::cfloat;\n\n";
  llvm::StringMap<std::string> kernelsByText;
  std::vector<CudaFunctionPlan> plans;
  for (StringRef name : kCudaFunctions) {
    auto func = module.lookupSymbol<func::FuncOp>(name);
    if (!func)
      continue;
    os << "// @" << name << "\n\n";
    plans.emplace_back();
    plans.back().func = func;
    CudaFunctionEmitter emitter(os, kernelsByText, options);
    if (failed(emitter.emit(func, plans.back())))
      return failure();
    batchGemmPairs(plans.back());
  }
  // A kernel's index: its place among the module's kernels, which several
  // launches may share (writeOpKernels).
  llvm::StringMap<int32_t> indexOf;
  for (CudaFunctionPlan &plan : plans)
    for (CudaLaunch &launch : plan.launches)
      if (!launch.isGemm())
        launch.index =
            indexOf.try_emplace(launch.kernel, int32_t(indexOf.size()))
                .first->second;
  // The launch plan: what the host schedule runs, in order (a kernel per
  // line: its name, then threads wanted, or blocks for a block reduction,
  // as C++ of B, at kCudaBlockThreads threads a block unless it says).
  os << "// Launch plan (" << kCudaBlockThreads << " threads a block)\n";
  for (const CudaFunctionPlan &plan : plans) {
    os << "// @" << mlir::func::FuncOp(plan.func).getSymName() << ": "
       << plan.launches.size()
       << " launches\n";
    for (const CudaLaunch &l : plan.launches)
      os << "//   " << l.kernel << " "
         << (l.op              ? l.op->getName().getStringRef()
             : l.copiesShadows ? StringRef("parameters' bfloat16 shadows")
                               : StringRef("scan chain"))
         << (l.batchedOp ? " x2 (one call)" : "")
         << (l.threads.empty()
                 ? ""
                 : (l.blockPerOutput ? " blocks " : " threads ") + l.threads)
         << (l.blockThreads == kCudaBlockThreads
                 ? ""
                 : ", " + std::to_string(l.blockThreads) + " a block")
         << "\n";
  }
  writeSimulation(plans, os);
  return plans;
}

LogicalResult emitCuda(ModuleOp module, llvm::raw_ostream &os,
                       const CudaOptions &options) {
  return success(succeeded(writeCudaSource(module, os, options)));
}

} // namespace lruc
