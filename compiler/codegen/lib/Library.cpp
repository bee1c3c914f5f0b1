//===- Library.cpp - Compiling generated C++ into model.so ----------------===//
//
// The host compiler and its flags are fixed when lruc is built (CMake
// passes the compiler in as LRUC_HOST_CXX; `LRUC_CXX` overrides it); the
// runtime's headers and archives are named by the runtime file beside the
// program (cmake/Runtime.cmake), so that an install may be moved. The
// units go to a temporary directory and compile there side by side (a
// model's C++ is tens of thousands of lines: one file took ~15 s at -O3,
// most of it in the optimiser), each compiler run in that directory on the
// unit's name, so that the same unit is the same command line in every
// build and a compiler cache (`LRUC_CXX_LAUNCHER=ccache`) finds it; the
// library is linked next to its destination and renamed into place, so an
// interrupted compile never leaves half a file.
//
//===----------------------------------------------------------------------===//

#include "lruc/Codegen.h"
#include "lruc/core/Files.h"
#include "lruc/cuda/Nvrtc.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/Threading.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <numeric>
#include <optional>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>

extern char **environ;

namespace lruc {

std::string runtimeFilePath() {
  std::string program = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  llvm::SmallString<256> path(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(program)));
  llvm::sys::path::append(path, "lib", "lruc", "runtime.txt");
  return path.str().str();
}

namespace {

/// Reads the runtime file's headers and `target`'s archives into
/// `compiler`: one entry a line, `include DIR`, `kernels ARCHIVE`,
/// `portable-kernels ARCHIVE` or `library FILE` (after the kernels, in link
/// order); '#' begins a comment line. A relative path is relative to the
/// file's folder. Each path must exist.
bool readRuntimeFile(CpuTarget target, HostCompiler &compiler,
                     std::string &error) {
  const std::string path = runtimeFilePath();
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file) {
    error = "cannot read lruc's runtime file " + path + ": " +
            file.getError().message() +
            " (lruc finds its runtime in ../lib/lruc/ from its own folder: "
            "run the lruc of a build, or of an install made by `cmake "
            "--install BUILD --prefix DIR`)";
    return false;
  }
  const llvm::StringRef folder = llvm::sys::path::parent_path(path);
  const char *kernelsKey =
      target == CpuTarget::Portable ? "portable-kernels" : "kernels";
  std::vector<std::string> kernels, libraries;
  llvm::SmallVector<llvm::StringRef> lines;
  (*file)->getBuffer().split(lines, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    llvm::StringRef line = lines[i].rtrim("\r");
    if (line.trim().empty() || line.trim().starts_with("#"))
      continue;
    auto [key, value] = line.split(' ');
    auto where = [&] { return path + ":" + std::to_string(i + 1) + ": "; };
    if (value.empty()) {
      error = where() + "expected `KEY PATH`, got '" + line.str() + "'";
      return false;
    }
    llvm::SmallString<256> resolved(value);
    if (llvm::sys::path::is_relative(resolved)) {
      resolved = folder;
      llvm::sys::path::append(resolved, value);
    }
    llvm::sys::path::remove_dots(resolved, /*remove_dot_dot=*/true);
    std::vector<std::string> *list = nullptr;
    if (key == "include")
      list = &compiler.includeDirs;
    else if (key == kernelsKey)
      list = &kernels;
    else if (key == "library")
      list = &libraries;
    else if (key != "kernels" && key != "portable-kernels") {
      error = where() + "unknown entry '" + key.str() +
              "' (expected include, kernels, portable-kernels or library)";
      return false;
    }
    if (!list)
      continue; // the other target's kernels
    if (!llvm::sys::fs::exists(resolved)) {
      error = where() + resolved.str().str() +
              ": no such file or folder (lruc's runtime is incomplete: "
              "build or install lruc again)";
      return false;
    }
    list->push_back(resolved.str().str());
  }
  if (kernels.size() != 1) {
    error = path + ": expected one `" + kernelsKey + "` entry, found " +
            std::to_string(kernels.size());
    return false;
  }
  compiler.libraries = kernels;
  compiler.libraries.insert(compiler.libraries.end(), libraries.begin(),
                            libraries.end());
  return true;
}

} // namespace

bool defaultHostCompiler(CpuTarget target, HostCompiler &compiler,
                         std::string &error) {
  compiler = HostCompiler();
  if (!readRuntimeFile(target, compiler, error))
    return false;
  compiler.command = LRUC_HOST_CXX;
  if (const char *env = std::getenv("LRUC_CXX"); env && *env)
    compiler.command = env;
  if (const char *env = std::getenv("LRUC_CXX_LAUNCHER"); env && *env)
    compiler.launcher = env;
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
  //
  // -mprefer-vector-width=512 (x86, native): where the CPU has AVX-512, its
  // full width for the loops; GCC's tunings otherwise stop at 256 bits
  // (-march=native on a 2-core Intel Xeon with AVX-512 tunes as rocketlake).
  // The loops that compute (GELU and its derivative, sigmoids beside
  // dropout) run faster; train steps there 4-7% faster (sCIFAR at batch 4
  // 764-797 -> 708-742 ms, Fashion-MNIST's example at 64 261-284 -> 248-253,
  // Text at 2 420-443 -> 407-414; three alternating runs each), and bit for
  // bit the same (each element's arithmetic does not depend on the width).
  // No effect on a CPU without AVX-512.
  const bool portable = target == CpuTarget::Portable;
  const char *march = portable ? "-march=x86-64-v3" : "-march=native";
#if defined(__x86_64__)
  if (!portable)
    march = "-march=native -mprefer-vector-width=512";
#endif
  compiler.flags = std::string("-std=c++17 -O3 ") + march +
                   " -fcx-limited-range -fno-trapping-math -fno-math-errno "
                   "-fPIC -shared -fvisibility=hidden";
  // Lower levels for the code that only orders the loops' work
  // (LibrarySource::Unit::Speed; ListOps: the train-step body 1.66 s of
  // GCC at -O1, 0.87 s at -O0, the GPU unit 0.69 and 0.47 s; the library
  // as fast).
  compiler.lightFlags = compiler.flags + " -O1";
  compiler.coldFlags = compiler.flags + " -O0";
  if (const char *env = std::getenv("LRUC_CXXFLAGS"); env && *env)
    compiler.flags = compiler.lightFlags = compiler.coldFlags = env;
  return true;
}

namespace {

/// Splits a space-separated list of flags.
std::vector<std::string> words(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ' ', -1, /*KeepEmpty=*/false);
  return {parts.begin(), parts.end()};
}

/// Units merged, the two smallest of the same flags at a time, until each
/// holds at least this much code: a unit costs GCC 12 ~0.45 s of headers
/// plus ~12 us per byte of generated code at -O3 (Table 9's ListOps, this
/// 2-core machine), so smaller ones cost more in headers than they gain
/// side by side. The merge depends on the sizes alone: the same source
/// gives the same library whatever the number of jobs.
constexpr size_t kUnitBytes = 100'000;

/// `source`'s units, the small ones merged (kUnitBytes), each merged unit's
/// parts in the order of the source.
std::vector<LibrarySource::Unit> mergeSmallUnits(const LibrarySource &source) {
  std::vector<std::vector<size_t>> groups;
  std::vector<size_t> sizes;
  for (size_t i = 0; i < source.units.size(); ++i) {
    groups.push_back({i});
    sizes.push_back(source.units[i].codeBytes());
  }
  auto speed = [&](size_t group) {
    return source.units[groups[group].front()].speed;
  };
  // The smallest other group of `group`'s flags.
  auto partnerOf = [&](size_t group) {
    std::optional<size_t> partner;
    for (size_t g = 0; g < groups.size(); ++g)
      if (g != group && speed(g) == speed(group) &&
          (!partner || sizes[g] < sizes[*partner]))
        partner = g;
    return partner;
  };
  while (true) {
    std::optional<size_t> smallest, partner;
    for (size_t g = 0; g < groups.size(); ++g)
      if (sizes[g] < kUnitBytes && (!smallest || sizes[g] < sizes[*smallest]))
        if (std::optional<size_t> p = partnerOf(g)) {
          smallest = g;
          partner = p;
        }
    if (!smallest)
      break;
    groups[*partner].insert(groups[*partner].end(), groups[*smallest].begin(),
                            groups[*smallest].end());
    llvm::sort(groups[*partner]);
    sizes[*partner] += sizes[*smallest];
    groups.erase(groups.begin() + *smallest);
    sizes.erase(sizes.begin() + *smallest);
  }
  std::vector<LibrarySource::Unit> merged;
  for (const std::vector<size_t> &group : groups) {
    LibrarySource::Unit &unit = merged.emplace_back();
    unit.speed = source.units[group.front()].speed;
    for (size_t i : group) {
      unit.name += (unit.name.empty() ? "" : "+") + source.units[i].name;
      unit.text += source.units[i].text;
      unit.dataBytes += source.units[i].dataBytes;
    }
  }
  return merged;
}

/// A compiler process: what it compiles, where it logs, its process.
struct Job {
  std::string name, source, log;
  size_t codeBytes = 0;
  std::vector<std::string> args; ///< args[0] is the program run
  std::string workingDir;        ///< where it runs; empty: here
  pid_t pid = 0;
  std::chrono::steady_clock::time_point started;
};

/// Starts `job`, its output and errors to its log; false with the reason.
bool startJob(Job &job, std::string &why) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, job.log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  if (!job.workingDir.empty())
    posix_spawn_file_actions_addchdir_np(&actions, job.workingDir.c_str());
  std::vector<char *> argv;
  for (std::string &arg : job.args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  // Its own process group, which a stopped build signals whole (the
  // compiler driver and the compilers it runs).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  job.started = std::chrono::steady_clock::now();
  const int failed = posix_spawn(&job.pid, argv[0], &actions, &attributes,
                                 argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (failed)
    why = "cannot run " + job.args[0] + ": " + std::strerror(failed);
  return !failed;
}

/// Whether `job` has ended (without waiting for it); its result in `ok`
/// and, for a failure that left no log, `why`.
bool jobEnded(Job &job, bool &ok, std::string &why) {
  int status = 0;
  pid_t done;
  do
    done = waitpid(job.pid, &status, WNOHANG);
  while (done < 0 && errno == EINTR);
  if (done == 0)
    return false;
  ok = done == job.pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (done < 0)
    why = std::string("cannot wait for the compiler: ") + std::strerror(errno);
  else if (WIFSIGNALED(status))
    why = job.args[0] + " was killed by signal " +
          std::to_string(WTERMSIG(status));
  return true;
}

/// `path` made absolute (against this process's directory).
std::string absolutePath(llvm::StringRef path) {
  llvm::SmallString<128> absolute(path);
  llvm::sys::fs::make_absolute(absolute);
  return absolute.str().str();
}

/// A compiler's `log` with the file it was given by name (`given`, relative
/// to the build directory) named by its full path, wherever a word starts
/// with it.
std::string withPath(const std::string &log, const std::string &given,
                     const std::string &path) {
  std::string named;
  size_t from = 0;
  for (size_t at; (at = log.find(given, from)) != std::string::npos;
       from = at + given.size()) {
    named.append(log, from, at - from);
    const bool starts = at == 0 || log[at - 1] == '\n' || log[at - 1] == ' ';
    named += starts ? path : given;
  }
  return named + log.substr(from);
}

/// Writes `text` to `path`; false with the reason (a full disk, a
/// file-size limit) in `error`.
bool writeTextFile(const std::string &path, llvm::StringRef text,
                   std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (!ec) {
    out << text;
    out.close();
    ec = out.error();
    // A stream left in error aborts in its destructor.
    out.clear_error();
  }
  if (ec)
    error = "cannot write " + path + ": " + ec.message();
  return !ec;
}

/// What stopped a compiler process other than the code it was given: the
/// line of its log or of `why` (a failed start, a signal) that names a full
/// disk, a file-size limit, too little memory or a signal; empty if none.
std::string resourceFailure(const std::string &log, const std::string &why) {
  static const char *const kSigns[] = {"No space left on device",
                                       "File too large",
                                       "Disk quota exceeded",
                                       "Cannot allocate memory",
                                       "memory exhausted",
                                       "out of memory",
                                       "Killed signal",
                                       "killed by signal",
                                       "Resource temporarily unavailable"};
  const std::string said = why + "\n" + log;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(said).split(lines, '\n');
  for (llvm::StringRef line : lines)
    for (const char *sign : kSigns)
      if (line.contains(sign))
        return line.trim().str();
  return "";
}

/// Puts the linked library `partial` where `-o` asked (`given`): renamed
/// over `destination` (its links followed), or, for a device or a pipe,
/// written into it. The reason it could not, or empty.
std::string placeLibrary(const std::string &partial, const std::string &given,
                         const std::string &destination, bool inPlace) {
  if (!inPlace) {
    std::error_code ec = llvm::sys::fs::rename(partial, destination);
    return ec ? "cannot write " + given + ": " + ec.message() : "";
  }
  auto library = llvm::MemoryBuffer::getFile(partial, /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
  if (!library)
    return "cannot read the linked library " + partial + ": " +
           library.getError().message();
  std::string error;
  core::writeFileAtomically(given, (*library)->getBuffer(), error);
  return error;
}

/// The signal that asked a build to stop (SIGINT, SIGTERM, SIGHUP), or 0.
volatile std::sig_atomic_t stopSignal = 0;
extern "C" void noteStopSignal(int signal) { stopSignal = signal; }
/// Whether Ctrl-Z (SIGTSTP) asked the build to pause.
volatile std::sig_atomic_t pauseAsked = 0;
extern "C" void notePause(int) { pauseAsked = 1; }

/// While it lives, SIGINT, SIGTERM and SIGHUP (those not ignored) only ask
/// the build to stop: it stops its compilers and removes its files, then
/// `dieOf` puts the previous handlers back and raises the signal again, so
/// that lruc ends as the signal would have ended it. SIGTSTP (Ctrl-Z) only
/// asks it to pause: `pauseIfAsked` stops the compilers, then lruc as the
/// signal would have, and continues them when lruc is continued (the
/// terminal signals lruc's process group alone, not theirs).
class StopSignals {
public:
  StopSignals() {
    stopSignal = 0;
    pauseAsked = 0;
    for (size_t i = 0; i < kSignals.size(); ++i) {
      struct sigaction note = {};
      note.sa_handler = kSignals[i] == SIGTSTP ? notePause : noteStopSignal;
      sigemptyset(&note.sa_mask);
      struct sigaction &previous = previous_[i];
      installed_[i] = sigaction(kSignals[i], nullptr, &previous) == 0 &&
                      previous.sa_handler != SIG_IGN &&
                      sigaction(kSignals[i], &note, nullptr) == 0;
    }
  }
  ~StopSignals() { restore(); }
  StopSignals(const StopSignals &) = delete;
  StopSignals &operator=(const StopSignals &) = delete;

  [[noreturn]] void dieOf(int signal) {
    restore();
    std::raise(signal);
    // A handler that returned (none of lruc's does): end as a shell would
    // report the signal.
    std::_Exit(128 + signal);
  }

  /// After a SIGTSTP: stops the process groups `groups` (the running
  /// compilers), then this process as SIGTSTP does (unless its process
  /// group is orphaned: then nothing could continue it, and the signal is
  /// dropped), and once it is continued, them.
  void pauseIfAsked(llvm::ArrayRef<pid_t> groups) {
    if (!pauseAsked)
      return;
    pauseAsked = 0;
    for (pid_t group : groups)
      kill(-group, SIGTSTP);
    struct sigaction byDefault = {}, mine = {};
    byDefault.sa_handler = SIG_DFL;
    sigemptyset(&byDefault.sa_mask);
    sigaction(SIGTSTP, &byDefault, &mine);
    std::raise(SIGTSTP); // returns when continued
    sigaction(SIGTSTP, &mine, nullptr);
    for (pid_t group : groups)
      kill(-group, SIGCONT);
  }

private:
  void restore() {
    for (size_t i = 0; i < kSignals.size(); ++i)
      if (installed_[i])
        sigaction(kSignals[i], &previous_[i], nullptr);
    installed_.fill(false);
  }

  static constexpr std::array<int, 4> kSignals = {SIGINT, SIGTERM, SIGHUP,
                                                  SIGTSTP};
  std::array<struct sigaction, 4> previous_ = {};
  std::array<bool, 4> installed_ = {};
};

/// How many compiler processes run at once: `LRUC_JOBS`, else the CPUs
/// this process may run on.
bool compileJobs(unsigned &jobs, std::string &error) {
  const char *env = std::getenv("LRUC_JOBS");
  if (!env || !*env) {
    jobs = llvm::hardware_concurrency().compute_thread_count();
    return true;
  }
  if (llvm::StringRef(env).getAsInteger(10, jobs) || jobs == 0) {
    error = std::string("LRUC_JOBS must be a positive number of compiler "
                        "processes, not '") +
            env + "'";
    return false;
  }
  return true;
}

} // namespace

bool compileLibrary(
    const LibrarySource &source, const std::string &outputPath,
    const HostCompiler &compiler, std::string &error, LibraryBuild *build,
    const std::function<void(size_t done, size_t total)> &progress) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point buildStart = Clock::now();
  unsigned jobs = 1;
  if (!compileJobs(jobs, error))
    return false;
  // A name with a '/' comes back as it is, found or not: checked here, so
  // that a missing compiler is not reported as the generated code failing.
  auto program = llvm::sys::findProgramByName(compiler.command);
  if (!program || !llvm::sys::fs::can_execute(*program)) {
    error = "cannot find the host C++ compiler '" + compiler.command +
            "' (set LRUC_CXX to override)";
    return false;
  }
  // Absolute: the compiles run in another directory.
  std::vector<std::string> launch;
  if (!compiler.launcher.empty()) {
    auto launcher = llvm::sys::findProgramByName(compiler.launcher);
    if (!launcher || !llvm::sys::fs::can_execute(*launcher)) {
      error = "cannot find the compiler launcher '" + compiler.launcher +
              "' (LRUC_CXX_LAUNCHER)";
      return false;
    }
    launch.push_back(absolutePath(*launcher));
  }
  launch.push_back(absolutePath(*program));
  // From here, Ctrl-C stops the compilers (each in a process group of its
  // own) and leaves nothing of the build behind.
  StopSignals stopSignals;
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("lruc-build", dir)) {
    error = "cannot create a temporary directory: " + ec.message();
    return false;
  }
  // The build's files go when it ends, unless the host compiler failed on
  // the generated code: then they are what a report of the bug needs.
  bool keepBuildDir = false;
  auto removeBuildDir = llvm::make_scope_exit([&] {
    if (!keepBuildDir)
      llvm::sys::fs::remove_directories(dir);
  });
  auto inDir = [&](const std::string &name) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, name);
    return path.str().str();
  };

  // A finished job's wall time, for `build`.
  auto record = [&](const Job &job) {
    if (build)
      build->steps.push_back(
          {job.name, job.codeBytes,
           std::chrono::duration<double>(Clock::now() - job.started).count()});
  };
  const std::vector<LibrarySource::Unit> units = mergeSmallUnits(source);
  std::vector<Job> compiles;
  std::vector<std::string> objects;
  for (const LibrarySource::Unit &unit : units) {
    Job job;
    job.name = unit.name;
    job.codeBytes = unit.codeBytes();
    job.source = inDir(unit.name + ".cpp");
    job.log = inDir(unit.name + ".log");
    if (!writeTextFile(job.source, source.prelude + unit.text, error))
      return false;
    objects.push_back(inDir(unit.name + ".o"));
    job.args = launch;
    for (const std::string &flag : words(compiler.flagsFor(unit.speed)))
      job.args.push_back(flag);
    for (const std::string &dirName : compiler.includeDirs)
      job.args.push_back("-I" + dirName);
    job.args.insert(job.args.end(),
                    {"-c", "-o", unit.name + ".o", unit.name + ".cpp"});
    job.workingDir = dir.str().str();
    compiles.push_back(std::move(job));
  }

  // The symbols the library exports, as a linker version script.
  std::string exportsScript;
  if (!source.exports.empty()) {
    exportsScript = inDir("exports.map");
    std::string script = "{\n  global:\n";
    for (const std::string &pattern : source.exports)
      script += "    " + pattern + ";\n";
    script += "  local:\n    *;\n};\n";
    if (!writeTextFile(exportsScript, script, error))
      return false;
  }

  // Written beside the destination, then renamed: same file system. A
  // link's target is replaced (the link kept); a device or a pipe (`-o
  // /dev/null`) is written in place, never renamed over.
  const bool inPlace = core::isWrittenInPlace(outputPath);
  const std::string destination =
      inPlace ? outputPath : core::followLinks(outputPath);
  llvm::SmallString<128> partialPath;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(
          (inPlace ? inDir("library") : destination) + "-%%%%%%.partial", fd,
          partialPath)) {
    error = "cannot write next to " + outputPath + ": " + ec.message();
    return false;
  }
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  std::string partial = partialPath.str().str();
  // An interrupted compile (Ctrl-C) leaves no partial library behind.
  llvm::sys::RemoveFileOnSignal(partial);
  Job link;
  link.name = "link";
  link.source =
      compiles.size() == 1 ? compiles.front().source : dir.str().str();
  link.log = inDir("link.log");
  link.args = {*program};
  for (const std::string &flag : words(compiler.flags))
    link.args.push_back(flag);
  if (!exportsScript.empty())
    link.args.push_back("-Wl,--version-script=" + exportsScript);
  link.args.insert(link.args.end(), {"-o", partial});
  link.args.insert(link.args.end(), objects.begin(), objects.end());
  link.args.insert(link.args.end(), compiler.libraries.begin(),
                   compiler.libraries.end());

  // The largest units first (a unit takes time in proportion to its
  // code), a new one whenever a running one finishes (polled: compiles
  // take seconds); after a failure, the running ones finish and no more
  // start.
  std::vector<size_t> order(compiles.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return units[a].codeBytes() > units[b].codeBytes();
  });
  std::vector<Job *> running;
  const Job *failure = nullptr;
  std::string why;
  size_t next = 0, finished = 0;
  const size_t steps = compiles.size() + 1; // the link last
  auto tell = [&] {
    if (progress)
      progress(finished, steps);
  };
  bool stopping = false, linkStarted = false;
  tell();
  // The job to start now, if any: a compile while fewer than `jobs` run,
  // then, once every compile has succeeded, the link; none after a failure
  // or a stop.
  auto nextJob = [&]() -> Job * {
    if (failure || stopping)
      return nullptr;
    if (next < order.size())
      return running.size() < jobs ? &compiles[order[next++]] : nullptr;
    if (linkStarted || !running.empty())
      return nullptr;
    linkStarted = true;
    return &link;
  };
  for (;;) {
    if (pauseAsked) {
      llvm::SmallVector<pid_t> groups;
      for (Job *job : running)
        groups.push_back(job->pid);
      stopSignals.pauseIfAsked(groups);
    }
    if (stopSignal && !stopping) {
      stopping = true;
      for (Job *job : running)
        kill(-job->pid, SIGTERM);
    }
    if (Job *job = nextJob()) {
      std::string startError;
      if (startJob(*job, startError))
        running.push_back(job);
      else {
        failure = job;
        why = startError;
      }
      continue;
    }
    if (running.empty())
      break;
    bool ok = true;
    std::string waitError;
    auto done = llvm::find_if(
        running, [&](Job *job) { return jobEnded(*job, ok, waitError); });
    if (done == running.end()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    if (!ok && !failure) {
      failure = *done;
      why = waitError;
    }
    record(**done);
    running.erase(done);
    ++finished;
    tell();
  }
  std::string placeError;
  if (!failure && !stopSignal)
    placeError = placeLibrary(partial, outputPath, destination, inPlace);
  llvm::sys::DontRemoveFileOnSignal(partial);
  llvm::sys::fs::remove(partial);
  if (const int signal = stopSignal) {
    // (A library placed before the signal came stays.)
    llvm::sys::fs::remove_directories(dir);
    stopSignals.dieOf(signal);
  }
  if (failure) {
    std::string log;
    if (auto buffer = llvm::MemoryBuffer::getFile(failure->log))
      log = (*buffer)->getBuffer().str();
    if (std::string resource = resourceFailure(log, why); !resource.empty()) {
      error = "the host compiler could not finish: " + resource +
              "\n(short of the machine's resources, not a fault in the "
              "generated code: free disk space or memory, raise the "
              "limit, or set LRUC_JOBS=1 to run one compiler at a time)";
      return false;
    }
    keepBuildDir = true;
    log = withPath(log, failure->name + ".cpp", failure->source);
    error = "the host compiler failed on the generated code (a bug in "
            "lruc; please report it with the source): " +
            failure->source + "\n" + (why.empty() ? "" : why + "\n") + log;
    return false;
  }
  if (!placeError.empty()) {
    error = placeError;
    return false;
  }
  if (build) {
    build->jobs = jobs;
    build->seconds =
        std::chrono::duration<double>(Clock::now() - buildStart).count();
  }
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
  // An architecture this NVRTC does not know is the user's to change, not
  // a failure of the generated source.
  std::string archError;
  const std::vector<int> archs = cuda::nvrtcSupportedArchs(archError);
  if (!archs.empty() &&
      std::find(archs.begin(), archs.end(), int(number)) == archs.end()) {
    std::string known;
    for (int a : archs)
      known += (known.empty() ? "sm_" : ", sm_") + std::to_string(a);
    std::string versionError;
    const std::string version = cuda::nvrtcVersion(versionError);
    error = "--gpu-arch " + gpuArch + ": this NVRTC" +
            (version.empty() ? "" : " (" + version + ")") +
            " does not compile for it; it does for " + known;
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
  std::string keepError;
  if (llvm::sys::fs::createTemporaryFile("lruc-kernels", "cu", kept) ||
      !writeTextFile(kept.str().str(), source, keepError)) {
    error = compileError;
    return false;
  }
  error = "NVRTC failed on the generated CUDA code (a bug in lruc; please "
          "report it with the source): " +
          kept.str().str() + "\n" + compileError;
  return false;
}

} // namespace lruc
