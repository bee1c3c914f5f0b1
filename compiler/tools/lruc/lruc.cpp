//===- lruc.cpp - The lruc compiler driver --------------------------------===//
//
//   lruc model.lru -o model.so [-D NAME=VALUE ...]
//   lruc model.lru --emit=ast|lru|primitive|grad|fused|kernel|cpp|cuda|ptx [-o
//   FILE]
//
// Reads a model file, checks it, and prints the requested stage. Output files
// are written to a temporary file and renamed into place, so an interrupted
// run never leaves a half-written file behind.
//
//===----------------------------------------------------------------------===//

#include "lru/LRUDialect.h"
#include "lru/LRUOps.h"
#include "lruc/AutodiffPasses.h"
#include "lruc/Codegen.h"
#include "lruc/MLIRGen.h"
#include "lruc/MemoryPlan.h"
#include "lruc/Transforms/Passes.h"
#include "lruc/Version.h"
#include "lruc/core/Bytes.h"
#include "lruc/core/Files.h"
#include "lruc/frontend/Frontend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <csignal>
#include <iostream>
#include <sstream>

namespace cl = llvm::cl;
using lruc::core::formatBytes;

namespace {

enum class Stage {
  Check,
  AST,
  LRU,
  Primitive,
  Grad,
  Fused,
  Kernel,
  Cpp,
  Cuda,
  Ptx
};

cl::OptionCategory lrucCategory("lruc options");

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.lru>"),
                               cl::Required, cl::cat(lrucCategory));

cl::opt<std::string> outputPath("o",
                                cl::desc("Write the output to <file>: with "
                                         "no --emit, the model library "
                                         "(model.so)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(lrucCategory));

cl::opt<Stage> emitStage(
    "emit", cl::desc("The stage to print"), cl::init(Stage::Check),
    cl::values(clEnumValN(Stage::Check, "check",
                          "only check the model (the default)"),
               clEnumValN(Stage::AST, "ast", "the checked model AST"),
               clEnumValN(Stage::LRU, "lru", "the model-level lru dialect IR"),
               clEnumValN(Stage::Primitive, "primitive",
                          "the IR after lru-decompose: @forward and "
                          "@forward_train in primitive ops"),
               clEnumValN(Stage::Grad, "grad",
                          "the primitive IR plus the derived @backward "
                          "and @train_step"),
               clEnumValN(Stage::Fused, "fused",
                          "the grad IR with elementwise ops grouped into "
                          "lru.fused loops"),
               clEnumValN(Stage::Kernel, "kernel",
                          "the IR the CPU backend emits, a kernel per op: "
                          "the fused IR with each stored value's workspace "
                          "slot (lru.buffers) and the workspace layout"),
               clEnumValN(Stage::Cpp, "cpp",
                          "the C++ source of the CPU model library"),
               clEnumValN(Stage::Cuda, "cuda",
                          "the CUDA C++ of the model's kernels (the device "
                          "prelude, a kernel per op, the launch plan)"),
               clEnumValN(Stage::Ptx, "ptx",
                          "the kernels compiled by NVRTC to PTX for "
                          "--gpu-arch")),
    cl::cat(lrucCategory));

cl::opt<std::string>
    gpuArch("gpu-arch",
            cl::desc("The GPU architecture of --emit=ptx (sm_80, sm_90)"),
            cl::value_desc("sm_NN"), cl::init("sm_80"), cl::cat(lrucCategory));

cl::list<std::string> nvrtcOptions(
    "nvrtc-option",
    cl::desc("Pass an option to NVRTC in --emit=ptx (e.g. "
             "--nvrtc-option=--Ofast-compile=max for a quick check)"),
    cl::value_desc("option"), cl::cat(lrucCategory));

cl::opt<lruc::Recompute> recompute(
    "recompute", cl::ValueOptional,
    cl::desc("What the backward pass computes again instead of keeping it "
             "from the forward pass (-lru-recompute): a smaller workspace "
             "for more work"),
    cl::init(lruc::Recompute::None),
    cl::values(clEnumValN(lruc::Recompute::Elementwise, "",
                          "elementwise values (as =elementwise)"),
               clEnumValN(lruc::Recompute::None, "none",
                          "nothing (the default)"),
               clEnumValN(lruc::Recompute::Elementwise, "elementwise",
                          "elementwise values: a little more work"),
               clEnumValN(lruc::Recompute::States, "states",
                          "elementwise values and the LRU's states: one more "
                          "matmul and scan per LRU")),
    cl::cat(lrucCategory));

cl::opt<bool> profile(
    "profile",
    cl::desc("Build a library that times every op it runs and exports "
             "lruc_profile (runtime/include/lruc_profile.h); for bench/"));

cl::opt<bool> portable(
    "portable",
    cl::desc("Build the library for any x86-64 CPU with AVX2 and FMA "
             "(x86-64-v3) instead of this machine's (-march=native): for a "
             "library that runs on another machine"),
    cl::cat(lrucCategory));

cl::opt<int> cudaScanWarps(
    "cuda-scan-warps",
    cl::desc("Warps of a CUDA scan kernel's block, 1-32 (default 16): more "
             "keep more of a sequence's loads in flight, for models with few "
             "channels a sequence; for tuning with bench/gpu"),
    cl::value_desc("N"), cl::init(lruc::CudaOptions().scanWarps),
    cl::cat(lrucCategory));

cl::opt<lruc::CudaStorage> gpuStorage(
    "gpu-storage",
    cl::desc("How the CUDA kernels store activations (the CPU library is "
             "fp32 either way)"),
    cl::init(lruc::CudaStorage::F32),
    cl::values(clEnumValN(lruc::CudaStorage::F32, "f32",
                          "every array in fp32 (the default)"),
               clEnumValN(lruc::CudaStorage::Bf16, "bf16",
                          "sequence-sized activations in bfloat16, computed "
                          "in fp32: about half the bytes a train step moves")),
    cl::cat(lrucCategory));

cl::opt<bool> cudaColumnLoops(
    "cuda-column-loops",
    cl::desc("Run elementwise CUDA kernels over rows of a multiple of 32 "
             "columns by columns (default true; false: a thread an element "
             "of a flat loop), for tuning with bench/gpu"),
    cl::init(lruc::CudaOptions().columnLoops), cl::cat(lrucCategory));

cl::opt<bool> ignoreTrain(
    "no-train",
    cl::desc("Ignore the model file's train section (e.g. for a model shrunk "
             "with -D that no longer fits its task)"),
    cl::cat(lrucCategory));

/// `--stats`: LLVM owns an option of that name (its pass statistics), so
/// main takes ours out of argv before LLVM parses it.
bool printStats = false;

cl::list<std::string>
    defines("D", cl::desc("Override the model file's constant NAME with VALUE"),
            cl::value_desc("NAME=VALUE"), cl::Prefix, cl::cat(lrucCategory));

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "lruc") << message << "\n";
  return 1;
}

/// Parses `-D NAME=VALUE` flags; reports the first malformed one.
bool parseDefines(lruc::ConstantOverrides &overrides) {
  for (const std::string &define : defines) {
    llvm::StringRef name, value;
    std::tie(name, value) = llvm::StringRef(define).split('=');
    double number;
    if (name.empty() || value.empty() || value.getAsDouble(number)) {
      fail("-D expects NAME=NUMBER, got '" + define + "'");
      return false;
    }
    // "inf", "nan" and 1e400 parse, but no size or setting can be one; an
    // error here names the flag, not the first `let` that uses it.
    if (!std::isfinite(number)) {
      fail("-D " + name + ": '" + value + "' is not a finite number");
      return false;
    }
    overrides[name.str()] = number;
  }
  return true;
}

/// Writes `text` to standard output ("-") or to the output path
/// atomically (temporary file + rename; core::writeFileAtomically).
int writeOutput(llvm::StringRef text) {
  if (outputPath == "-") {
    llvm::raw_fd_ostream &out = llvm::outs();
    out << text;
    out.flush();
    if (std::error_code ec = out.error()) {
      // A stream left in error aborts at exit.
      out.clear_error();
      return fail("cannot write the output: " + ec.message());
    }
    return 0;
  }
  std::string error;
  if (!lruc::core::writeFileAtomically(outputPath, text, error))
    return fail(error);
  return 0;
}

/// Model files are a few KiB; reading stops past this size, so that a
/// device or a large file named by mistake (/dev/zero, a dataset) is
/// refused at once instead of read until memory runs out.
constexpr size_t kMaxModelFileBytes = size_t(16) << 20;

/// The text of the model file at `path` ("-": standard input), or a message
/// that names the path.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readModelFile(llvm::StringRef path) {
  auto failure = [&](const llvm::Twine &why) {
    return llvm::createStringError("cannot read '" + path + "': " + why);
  };
  llvm::sys::fs::file_t file = llvm::sys::fs::getStdinHandle();
  if (path != "-") {
    llvm::Expected<llvm::sys::fs::file_t> opened =
        llvm::sys::fs::openNativeFileForRead(path);
    if (!opened)
      return failure(llvm::toString(opened.takeError()));
    file = *opened;
  }
  auto closeFile = llvm::make_scope_exit([&] {
    if (path != "-")
      llvm::sys::fs::closeFile(file);
  });
  llvm::SmallString<0> text;
  while (true) {
    size_t size = text.size();
    text.resize_for_overwrite(size + (size_t(64) << 10));
    llvm::Expected<size_t> read = llvm::sys::fs::readNativeFile(
        file, llvm::MutableArrayRef(text.data() + size, text.size() - size));
    if (!read)
      return failure(llvm::toString(read.takeError()));
    text.truncate(size + *read);
    if (*read == 0)
      break;
    if (text.size() > kMaxModelFileBytes)
      return failure(llvm::formatv("larger than {0}; a model file is a few "
                                   "KiB of text",
                                   formatBytes(kMaxModelFileBytes))
                         .str());
  }
  // A UTF-8 byte-order mark, as some editors begin a file with, is no
  // part of the model (and the columns on its line count from after it).
  llvm::StringRef model = text;
  model.consume_front("\xEF\xBB\xBF");
  return llvm::MemoryBuffer::getMemBufferCopy(model,
                                              path == "-" ? "<stdin>" : path);
}

/// `lruc --stats -o`: what each compiler process took, the longest first
/// (with as many CPUs as units, the longest unit bounds the build).
void printBuildStats(const lruc::LibraryBuild &build, llvm::raw_ostream &os) {
  std::vector<lruc::LibraryBuild::Step> steps = build.steps;
  llvm::stable_sort(steps, [](const auto &a, const auto &b) {
    return a.seconds > b.seconds;
  });
  double total = 0;
  for (const lruc::LibraryBuild::Step &step : steps)
    total += step.seconds;
  os << llvm::formatv("library build: {0:F2} s, {1} compiler processes, {2} "
                      "at once (LRUC_JOBS), {3:F2} s of them in all\n",
                      build.seconds, steps.size(), build.jobs, total);
  for (const lruc::LibraryBuild::Step &step : steps) {
    os << llvm::formatv("  {0,-32} {1,6:F2} s", step.name, step.seconds);
    if (step.name != "link")
      os << llvm::formatv("  {0,8:F1} KB of code", step.codeBytes / 1000.0);
    os << "\n";
  }
}

/// `lruc --stats`: what each function of the library runs and stores.
void printMemoryStats(mlir::ModuleOp module, llvm::raw_ostream &os) {
  int64_t batch = 0;
  if (auto train = module->getAttrOfType<mlir::DictionaryAttr>("lru.train"))
    if (auto b = train.getAs<mlir::IntegerAttr>("batch"))
      batch = b.getInt();
  os << "function              ops  fused  buffers  slots  matmul MFLOP (B = "
        "batch)  workspace (B = batch)";
  if (batch)
    os << "  at B = " << batch
       << ": GFLOP, workspace (most alive at once; without planning)";
  os << "\n";
  for (auto func : module.getOps<mlir::func::FuncOp>()) {
    unsigned ops = 0, groups = 0;
    // Matmul FLOPs, 2 * |lhs| * (result's last dim), per example and fixed.
    double flopsPerExample = 0, flopsFixed = 0;
    for (mlir::Operation &op : func.getBody().front()) {
      ++ops;
      groups += mlir::isa<lru::FusedOp>(op);
      if (auto multi = mlir::dyn_cast<lru::MultiTensorOp>(op))
        groups += unsigned(llvm::range_size(multi.getGroups()));
      if (auto matmul = mlir::dyn_cast<lru::MatmulOp>(op)) {
        auto lhs =
            mlir::cast<mlir::RankedTensorType>(matmul.getLhs().getType());
        auto result = mlir::cast<mlir::RankedTensorType>(matmul.getType());
        double flops = 2.0 * double(result.getShape().back());
        bool perExample = false;
        for (int64_t d : lhs.getShape()) {
          if (mlir::ShapedType::isDynamic(d))
            perExample = true;
          else
            flops *= double(d);
        }
        (perExample ? flopsPerExample : flopsFixed) += flops;
      }
    }
    lruc::MemoryPlan plan = lruc::planMemory(func);
    // Bytes per example times B ("0" where none: not "0.0 B B").
    const std::string perExample =
        plan.total.perExample ? formatBytes(double(plan.total.perExample))
                              : std::string("0");
    os << llvm::formatv(
        "@{0,-20} {1,4} {2,6} {3,8} {4,6}  {5,8:F1} B + {6,-8:F1}  "
        "{7} B + {8}",
        func.getSymName(), ops, groups, plan.slotOf.size(), plan.slots.size(),
        flopsPerExample / 1e6, flopsFixed / 1e6, perExample,
        formatBytes(double(plan.total.fixed)));
    if (batch)
      os << llvm::formatv("  {0:F2}, ",
                          (flopsPerExample * double(batch) + flopsFixed) / 1e9)
         << formatBytes(double(plan.total.at(batch))) << " ("
         << formatBytes(double(plan.mostAlive(batch))) << "; "
         << formatBytes(double(plan.unplanned.at(batch))) << ")";
    os << "\n";
  }
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // A write past the file-size limit (`ulimit -f`) fails with EFBIG and is
  // reported, instead of killing lruc (LLVM would print a crash's stack).
  std::signal(SIGXFSZ, SIG_IGN);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  cl::HideUnrelatedOptions({&lrucCategory});
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << LRUC_VERSION_LINE << "\n  LLVM/MLIR " << LLVM_VERSION_STRING
       << "\n  runtime: " << lruc::runtimeFilePath() << "\n";
  });
  std::vector<char *> args;
  for (int i = 0; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (i > 0 && (arg == "--stats" || arg == "-stats"))
      printStats = true;
    else
      args.push_back(argv[i]);
  }
  argc = int(args.size());
  argv = args.data();
  cl::ParseCommandLineOptions(argc, argv,
                              "lruc: the Linear Recurrent Unit compiler\n\n"
                              "  --stats  print each library function's ops, "
                              "fused groups and memory plan to stderr,\n"
                              "           and with -o what each compiler "
                              "process of the library build took\n");

  if (cudaScanWarps < 1 || cudaScanWarps > 32)
    return fail("--cuda-scan-warps must lie in 1-32 (a block has at most "
                "1024 threads), not " +
                llvm::Twine(int(cudaScanWarps)));
  lruc::CudaOptions cudaOptions;
  cudaOptions.scanWarps = cudaScanWarps;
  cudaOptions.storage = gpuStorage;
  cudaOptions.columnLoops = cudaColumnLoops;

  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readModelFile(inputPath);
  if (!buffer)
    return fail(llvm::toString(buffer.takeError()));

  lruc::ConstantOverrides overrides;
  if (!parseDefines(overrides))
    return 1;

  bool library = emitStage == Stage::Check && outputPath != "-";
  // Before any work: the output would fail at the end.
  if (outputPath != "-" && llvm::sys::fs::is_directory(outputPath))
    return fail("-o " + outputPath + ": is a directory, not a file");

  lruc::SourceFile source{inputPath, (*buffer)->getBuffer().str()};
  lruc::DiagnosticEngine diags(source, std::cerr);
  std::optional<lruc::ast::Model> model =
      lruc::parseModel(source, {overrides, ignoreTrain}, diags);
  if (!model)
    return 1;

  if (emitStage == Stage::AST) {
    std::ostringstream os;
    lruc::printModel(*model, os);
    return writeOutput(os.str());
  }

  // From here on diagnostics come from MLIR; the source manager lets them
  // quote the model file with a caret, like the front end's.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  mlir::MLIRContext context;
  mlir::SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module = lruc::mlirGen(context, *model);
  if (!module)
    return fail("internal error: the generated IR does not verify; please "
                "report this with the model file");

  if (emitStage == Stage::Check && !library && !printStats)
    return 0;

  bool lowered = library || emitStage == Stage::Cpp;
  bool planned = lowered || emitStage == Stage::Kernel ||
                 emitStage == Stage::Cuda || emitStage == Stage::Ptx;
  bool fused = planned || printStats || emitStage == Stage::Fused;
  if (fused || emitStage == Stage::Primitive || emitStage == Stage::Grad) {
    mlir::PassManager pm(&context);
    pm.addPass(lruc::createDeriveStepPass());
    pm.addPass(lruc::createDecomposePass());
    if (fused || emitStage == Stage::Grad) {
      pm.addPass(lruc::createDeriveBackward());
      pm.addPass(lruc::createDeriveTrainStep());
      pm.addPass(lruc::createDeriveAccumulation());
    }
    // --stats plans what the library runs: the whole CPU pipeline.
    if (planned || printStats)
      lruc::buildCpuPipeline(pm, recompute);
    else if (fused)
      lruc::buildFusionPipeline(pm, recompute);
    if (mlir::failed(pm.run(*module)))
      return 1;
  }
  if (printStats)
    printMemoryStats(*module, llvm::errs());
  if (emitStage == Stage::Check && !library)
    return 0;

  std::string text;
  llvm::raw_string_ostream os(text);
  lruc::LibrarySource librarySource;
  if (lowered) {
    lruc::CppOptions cppOptions;
    cppOptions.profile = profile;
    cppOptions.embedCuda = true;
    cppOptions.cuda = cudaOptions;
    if (mlir::failed(lruc::emitCpp(*module, librarySource, cppOptions)))
      return 1;
    librarySource.print(os);
  } else if (emitStage == Stage::Cuda || emitStage == Stage::Ptx) {
    if (mlir::failed(lruc::emitCuda(*module, os, cudaOptions)))
      return 1;
    if (emitStage == Stage::Ptx) {
      std::string ptx, error;
      if (!lruc::compileKernelsToPtx(os.str(), gpuArch, nvrtcOptions, ptx,
                                     error))
        return fail(error);
      return writeOutput(ptx);
    }
  } else {
    module->print(os);
  }
  os.flush();
  if (!library)
    return writeOutput(text);
  std::string error;
  lruc::HostCompiler compiler;
  if (!lruc::defaultHostCompiler(portable ? lruc::CpuTarget::Portable
                                          : lruc::CpuTarget::Native,
                                 compiler, error))
    return fail(error);
  lruc::LibraryBuild build;
  // On a terminal, a line that says how far the build is (a deep model's
  // library takes minutes on a few cores), gone when it ends.
  const bool terminal = llvm::sys::Process::StandardErrIsDisplayed();
  auto showProgress = [&](size_t done, size_t total) {
    if (done >= total)
      return;
    llvm::errs() << "\r\033[Klruc: building " << outputPath << ": ";
    if (done + 1 < total)
      llvm::errs() << done << "/" << total - 1 << " units compiled";
    else
      llvm::errs() << "linking";
    llvm::errs().flush();
  };
  const bool built = lruc::compileLibrary(
      librarySource, outputPath, compiler, error, &build,
      terminal ? std::function<void(size_t, size_t)>(showProgress) : nullptr);
  if (terminal)
    llvm::errs() << "\r\033[K";
  if (!built)
    return fail(error);
  if (printStats)
    printBuildStats(build, llvm::errs());
  return 0;
}
