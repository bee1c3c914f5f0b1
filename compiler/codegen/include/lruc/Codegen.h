//===- Codegen.h - C++ for the CPU model library ----------------*- C++ -*-===//
//
// Emits the C++ source of a model library (runtime/include/lruc_model.h)
// from a module holding @forward, @forward_train, @backward and
// @train_step at the primitive level; `compileLibrary` turns it into
// `model.so` with the host compiler.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_CODEGEN_H
#define LRUC_CODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LogicalResult.h"

#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>
#include <vector>

namespace lruc {

/// What the backward pass computes again instead of keeping it from the
/// forward pass (-lru-recompute, `lruc --recompute`).
enum class Recompute {
  None,        ///< keep every value the backward pass reads
  Elementwise, ///< elementwise values: a smaller workspace for a little work
  States,      ///< also scans' states where that shrinks the workspace: one
               ///< more matmul and scan per LRU
  /// Every scan's states, even where the workspace grows (a model of one
  /// layer): what the tests use to check every copy.
  AllStates,
};

/// Adds the fusion passes for primitive IR (with @backward and
/// @train_step): elementwise fusion (with the sums it feeds), optionally
/// recomputation for the backward pass (`recompute`), the returned groups
/// (the optimizer update) as one kernel, and groups as the epilogues of
/// their matmuls (`lruc --emit=fused`).
void buildFusionPipeline(mlir::OpPassManager &pm,
                         Recompute recompute = Recompute::None);

/// buildFusionPipeline, then the memory plan: what emitCpp and emitCuda
/// take (the kernel-level IR, `lruc --emit=kernel`).
void buildCpuPipeline(mlir::OpPassManager &pm,
                      Recompute recompute = Recompute::None);

/// How the CUDA kernels store activations (`lruc --gpu-storage`).
enum class CudaStorage {
  F32,  ///< every array fp32, as the CPU library
  Bf16, ///< sequence-sized activations in bfloat16 (GpuStorage.h)
};

/// Choices of the CUDA code (`lruc --cuda-scan-warps`, `--gpu-storage`,
/// `--cuda-column-loops`).
struct CudaOptions {
  /// Warps of a scan kernel's block (1-32): each takes a run of steps of
  /// every tile, so more warps keep more of a sequence's loads in flight
  /// (a block per sequence and 32 channels is all the parallelism a scan
  /// over few channels has). 16: on an H200 the backward scans of Table 9's
  /// ListOps, Text and Path-X reach 66-71% of a copy's bandwidth against
  /// 51-60% at 8 (docs/performance.md).
  int scanWarps = 16;
  /// bfloat16 activations halve the bytes a train step moves, at
  /// bfloat16's precision (8 significant bits) in what is stored between
  /// kernels; sums, scan states and parameters stay fp32.
  CudaStorage storage = CudaStorage::F32;
  /// Elementwise groups over rows of a multiple of 32 columns run by
  /// columns (a thread keeps its column and reads its biases and scales
  /// once); false: a thread an element of a flat grid-stride loop, as
  /// before (for comparing the two on a GPU with bench/gpu).
  bool columnLoops = true;
};

/// What the emitted library does besides the C ABI.
struct CppOptions {
  /// Time every op and export lruc_profile / lruc_profile_reset
  /// (runtime/include/lruc_profile.h).
  bool profile = false;
  /// Embed the model's CUDA source (emitCuda's output), exported from the
  /// library as `const char *lruc_cuda_source(void)` for the runtime to
  /// compile with NVRTC (what `lruc -o` builds).
  bool embedCuda = false;
  CudaOptions cuda;
};

/// A model library's C++: a prelude, then units that the host compiler
/// builds separately, all at once (`compileLibrary`), and links into one
/// model.so. The prelude followed by every unit in order is one valid
/// source as well (what `print` writes).
struct LibrarySource {
  struct Unit {
    /// What it holds ("backward": the IR function; "backward_loops": the
    /// fused loops that it calls first; "model", "gpu").
    std::string name;
    std::string text; ///< what follows the prelude in its source file
    /// How much the speed of its code matters, which sets the flags it is
    /// built with (HostCompiler::flagsFor).
    enum class Speed {
      /// The fused loops, where the time goes: HostCompiler::flags.
      Hot,
      /// Step mode's calls of its loops and kernels: a few microseconds a
      /// token, in which an unoptimised body's calls cost 2-5% (ListOps):
      /// HostCompiler::lightFlags.
      Latency,
      /// What orders whole-sequence work (an IR function's calls of its
      /// loops and of the runtime's kernels, each of them milliseconds),
      /// the tables and the C ABI of the model unit, the GPU unit (its
      /// schedule's tables and the entry points that hand them to the
      /// runtime): HostCompiler::coldFlags, which build fastest.
      Cold,
    };
    Speed speed = Speed::Hot;
    /// Bytes of `text` that are data the compiler only copies (the CUDA
    /// source as one string literal): not part of its compile time, which
    /// follows the size of the rest.
    size_t dataBytes = 0;

    size_t codeBytes() const { return text.size() - dataBytes; }
  };
  std::string prelude;
  std::vector<Unit> units;
  /// The symbols the library exports (patterns of a linker version
  /// script), all others local, those of the runtime archives and the C++
  /// library's templates included; empty: whatever its code makes visible.
  std::vector<std::string> exports;

  /// A source of one unit and no prelude.
  static LibrarySource single(std::string text);
  /// The prelude, then every unit under a line naming it (`lruc --emit=cpp`).
  void print(llvm::raw_ostream &os) const;
};

/// Writes the library's C++ to `source`: a unit per IR function (its fused
/// loops and the function), the model unit (tables, manifest, the C ABI)
/// and with `options.embedCuda` the GPU unit (the launch schedule and the
/// CUDA source). Emits an error at the op and fails on anything it cannot
/// generate (an op of no backend, a dynamic dim other than the leading
/// batch dim).
mlir::LogicalResult emitCpp(mlir::ModuleOp module, LibrarySource &source,
                            const CppOptions &options = {});

/// Writes the CUDA C++ of the model's kernels to `os` (the device half of
/// the CUDA backend): the device prelude, a kernel per op of each function
/// of the kernel-level IR (buildCpuPipeline's output), and the launch plan
/// as a closing comment. Fails with an error at an op it cannot generate.
mlir::LogicalResult emitCuda(mlir::ModuleOp module, llvm::raw_ostream &os,
                             const CudaOptions &options = {});

/// Compiles the CUDA source from emitCuda to PTX for `gpuArch` ("sm_80",
/// "sm_90", ...) with NVRTC (opened at run time), `nvrtcOptions` appended
/// to lruc's. A compile failure keeps the source in a temporary file and
/// names it in `error`.
bool compileKernelsToPtx(const std::string &source, const std::string &gpuArch,
                         const std::vector<std::string> &nvrtcOptions,
                         std::string &ptx, std::string &error);

/// How `compileLibrary` invokes the host compiler.
struct HostCompiler {
  std::string command; ///< the C++ compiler (found at build time)
  /// A program each compile goes through, given the compiler's command
  /// line (`LRUC_CXX_LAUNCHER`, e.g. ccache), or empty.
  std::string launcher;
  std::string flags;   ///< optimisation and code-generation flags
  /// `flags` at lower optimisation levels: -O1 (LibrarySource::Unit's
  /// Speed::Latency) and -O0 (Speed::Cold).
  std::string lightFlags, coldFlags;

  const std::string &flagsFor(LibrarySource::Unit::Speed speed) const {
    switch (speed) {
    case LibrarySource::Unit::Speed::Hot:
      return flags;
    case LibrarySource::Unit::Speed::Latency:
      return lightFlags;
    case LibrarySource::Unit::Speed::Cold:
      return coldFlags;
    }
    return flags;
  }
  /// The runtime's header folders, and the archives and OpenBLAS a
  /// library links (readRuntimeFile).
  std::vector<std::string> includeDirs, libraries;
};

/// Which CPUs a model library runs on.
enum class CpuTarget {
  Native,   ///< this machine's (-march=native): the fastest code here
  Portable, ///< any x86-64 CPU with AVX2 and FMA (-march=x86-64-v3)
};

/// The runtime file of the running program: <its folder>/../lib/lruc/
/// runtime.txt (/proc/self/exe, so a link to the program finds the file
/// beside the program itself), which names the runtime's headers and
/// archives (cmake/Runtime.cmake).
std::string runtimeFilePath();

/// The host compiler lruc was built with, its flags for `target`, and the
/// runtime's headers and the archives built for `target`, as lruc's runtime
/// file names them (<the program's folder>/../lib/lruc/runtime.txt, which
/// the build and an install write: cmake/Runtime.cmake). `LRUC_CXX` and
/// `LRUC_CXXFLAGS` in the environment override the compiler and its flags;
/// `LRUC_CXX_LAUNCHER` sets the launcher. False, with the reason in `error`,
/// where the runtime file is missing or names what is not there.
bool defaultHostCompiler(CpuTarget target, HostCompiler &compiler,
                         std::string &error);

/// What building a library took (`lruc --stats -o`): each compiler
/// process's wall time, in the order they ended, the link last.
struct LibraryBuild {
  struct Step {
    std::string name;     ///< a unit (merged ones joined by '+'), or "link"
    size_t codeBytes = 0; ///< the unit's (LibrarySource::Unit::codeBytes)
    double seconds = 0;
  };
  unsigned jobs = 1; ///< compiler processes at once
  std::vector<Step> steps;
  double seconds = 0; ///< the whole build
};

/// Compiles each unit of `source` to an object file, as many at once as
/// this process may use CPUs (`LRUC_JOBS` in the environment overrides),
/// and links them into the shared library `outputPath`, written to a
/// temporary file and renamed into place. On failure, returns false with a
/// message in `error` naming the kept source file and the compiler output.
/// The runtime's headers and archives are `compiler`'s.
/// `build`, if given, gets what each step took; `progress`, if given, is
/// told the steps done of all (each unit, then the link) as each starts
/// and ends.
bool compileLibrary(
    const LibrarySource &source, const std::string &outputPath,
    const HostCompiler &compiler, std::string &error,
    LibraryBuild *build = nullptr,
    const std::function<void(size_t done, size_t total)> &progress = nullptr);

} // namespace lruc

#endif // LRUC_CODEGEN_H
