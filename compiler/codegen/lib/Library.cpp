//===- Library.cpp - Compiling generated C++ into model.so ----------------===//
//
// The host compiler, its flags and the runtime's headers and archives are
// fixed when lruc is built (CMake passes them in as LRUC_* definitions);
// `LRUC_CXX` overrides the compiler. The source goes to a temporary
// directory; the library is written next to its destination and renamed
// into place, so an interrupted compile never leaves half a file.
//
//===----------------------------------------------------------------------===//

#include "lruc/Codegen.h"
#include "lruc/cuda/Nvrtc.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"

#include <cstdlib>
#include <optional>

namespace lruc {

HostCompiler defaultHostCompiler(CpuTarget target) {
  HostCompiler compiler;
  compiler.command = LRUC_HOST_CXX;
  if (const char *env = std::getenv("LRUC_CXX"); env && *env)
    compiler.command = env;
  // -march=native: the library is built on the machine that runs it (or,
  // portable, for any x86-64-v3 CPU, with the kernels built for the same).
  // -fcx-limited-range: complex products and quotients as the plain
  // formulas, without C99's infinity recovery (a library call per product).
  // -fno-trapping-math: nothing here enables FP traps, and without it GCC
  // will not turn a select (x > m ? inf : y) into a blend, which keeps
  // every loop that calls exp, GELU or sigmoid scalar. Results are the same.
  // -fno-math-errno: nothing reads errno, and a sqrt that may set it keeps
  // its loop scalar (AdamW's update ran at ~10% of memcpy bandwidth); the
  // square roots are the same correctly rounded values.
  const bool portable = target == CpuTarget::Portable;
  compiler.flags = std::string("-std=c++17 -O3 ") +
                   (portable ? "-march=x86-64-v3" : "-march=native") +
                   " -fcx-limited-range -fno-trapping-math -fno-math-errno "
                   "-fPIC -shared -fvisibility=hidden";
  compiler.libraries =
      portable ? LRUC_PORTABLE_RUNTIME_LIBRARIES : LRUC_RUNTIME_LIBRARIES;
  if (const char *env = std::getenv("LRUC_CXXFLAGS"); env && *env)
    compiler.flags = env;
  return compiler;
}

namespace {

/// Splits a space-separated list (the flags and libraries CMake passed in;
/// none contains spaces).
std::vector<std::string> words(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ' ', -1, /*KeepEmpty=*/false);
  return {parts.begin(), parts.end()};
}

} // namespace

bool compileLibrary(const std::string &source, const std::string &outputPath,
                    const HostCompiler &compiler, std::string &error) {
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("lruc-build", dir)) {
    error = "cannot create a temporary directory: " + ec.message();
    return false;
  }
  llvm::SmallString<128> sourcePath(dir), logPath(dir);
  llvm::sys::path::append(sourcePath, "model.cpp");
  llvm::sys::path::append(logPath, "compiler.log");
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(sourcePath, ec);
    if (ec) {
      error = "cannot write " + sourcePath.str().str() + ": " + ec.message();
      return false;
    }
    out << source;
  }

  // Written beside the destination, then renamed: same file system.
  llvm::SmallString<128> partialPath;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(
          outputPath + "-%%%%%%.partial", fd, partialPath)) {
    error = "cannot write next to " + outputPath + ": " + ec.message();
    return false;
  }
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  std::string partial = partialPath.str().str();
  auto program = llvm::sys::findProgramByName(compiler.command);
  if (!program) {
    error = "cannot find the host C++ compiler '" + compiler.command +
            "' (set LRUC_CXX to override)";
    llvm::sys::fs::remove(partial);
    return false;
  }
  std::vector<std::string> args = {*program};
  for (const std::string &flag : words(compiler.flags))
    args.push_back(flag);
  for (const std::string &dirName : words(LRUC_RUNTIME_INCLUDE_DIRS))
    args.push_back("-I" + dirName);
  args.push_back("-o");
  args.push_back(partial);
  args.push_back(sourcePath.str().str());
  for (const std::string &lib : words(compiler.libraries))
    args.push_back(lib);
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath.str(),
                                                logPath.str()};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(*program, argRefs, std::nullopt, redirects,
                                     0, 0, &execError);
  if (rc != 0) {
    std::string log;
    if (auto buffer = llvm::MemoryBuffer::getFile(logPath))
      log = (*buffer)->getBuffer().str();
    llvm::sys::fs::remove(partial);
    error = "the host compiler failed on the generated code (a bug in lruc; "
            "please report it with the source): " +
            sourcePath.str().str() + "\n" +
            (execError.empty() ? "" : execError + "\n") + log;
    return false;
  }
  if (std::error_code ec = llvm::sys::fs::rename(partial, outputPath)) {
    llvm::sys::fs::remove(partial);
    error = "cannot write " + outputPath + ": " + ec.message();
    return false;
  }
  llvm::sys::fs::remove_directories(dir);
  return true;
}

bool compileKernelsToPtx(const std::string &source, const std::string &gpuArch,
                         const std::vector<std::string> &nvrtcOptions,
                         std::string &ptx, std::string &error) {
  llvm::StringRef arch(gpuArch);
  unsigned number = 0;
  if (!arch.consume_front("sm_") || arch.getAsInteger(10, number) ||
      number < 70) {
    error = "--gpu-arch expects sm_NN (NN >= 70, e.g. sm_80, sm_90), got '" +
            gpuArch + "'";
    return false;
  }
  std::string compileError;
  if (cuda::compileToPtx(source, "model.cu", "compute_" + arch.str(),
                         nvrtcOptions, ptx, compileError))
    return true;
  if (compileError.rfind("cannot open NVRTC", 0) == 0) {
    error = compileError;
    return false;
  }
  // The generated source failed to compile: a bug in lruc; keep it.
  llvm::SmallString<128> kept;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("lruc-kernels", "cu", fd, kept)) {
    error = compileError;
    return false;
  }
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << source;
  }
  error = "NVRTC failed on the generated CUDA code (a bug in lruc; please "
          "report it with the source): " +
          kept.str().str() + "\n" + compileError;
  return false;
}

} // namespace lruc
