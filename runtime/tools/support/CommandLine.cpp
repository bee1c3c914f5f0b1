//===- CommandLine.cpp - Flags of the lru-* tools -------------------------===//

#include "CommandLine.h"
#include "lruc/Version.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <system_error>
#include <thread>

namespace lruc::tools {

const char *versionLine() { return LRUC_VERSION_LINE; }

void printVersion() { std::puts(versionLine()); }

CommandLine::CommandLine(std::string tool, std::string synopsis)
    : tool_(std::move(tool)), synopsis_(std::move(synopsis)) {}

void CommandLine::flag(const std::string &name,
                       std::optional<std::string> *value,
                       const std::string &meta, const std::string &help) {
  flags_.push_back({name, meta, help, value});
}
void CommandLine::flag(const std::string &name, std::optional<int64_t> *value,
                       const std::string &meta, const std::string &help) {
  flags_.push_back({name, meta, help, value});
}
void CommandLine::flag(const std::string &name, std::optional<double> *value,
                       const std::string &meta, const std::string &help) {
  flags_.push_back({name, meta, help, value});
}
void CommandLine::flag(const std::string &name, bool *value,
                       const std::string &help) {
  flags_.push_back({name, "", help, value});
}

std::string CommandLine::usage() const {
  std::string text = fmt::format("usage: {} {}\n\noptions:\n", tool_, synopsis_);
  for (const Flag &f : flags_) {
    std::string left = "--" + f.name + (f.meta.empty() ? "" : " " + f.meta);
    text += fmt::format("  {:<22} {}\n", left, f.help);
  }
  text += fmt::format("  {:<22} {}\n", "--help", "print this and exit");
  text += fmt::format("  {:<22} {}\n", "--version",
                      "print lruc's version and exit");
  return text;
}

void CommandLine::set(const Flag &flag, const std::string &value) {
  auto bad = [&](const char *what) {
    return UsageError(
        fmt::format("--{}: \"{}\" is not {}", flag.name, value, what));
  };
  if (auto *s = std::get_if<std::optional<std::string> *>(&flag.target)) {
    **s = value;
  } else if (auto *i = std::get_if<std::optional<int64_t> *>(&flag.target)) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size())
      throw bad("an integer");
    **i = v;
  } else if (auto *d = std::get_if<std::optional<double> *>(&flag.target)) {
    char *end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !std::isfinite(v))
      throw bad("a finite number");
    **d = v;
  }
}

std::vector<std::string> CommandLine::parse(int argc, char **argv) {
  std::vector<std::string> positional;
  bool flagsDone = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (flagsDone || arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flagsDone = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage().c_str(), stdout);
      std::exit(0);
    }
    if (arg == "--version") {
      printVersion();
      std::exit(0);
    }
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1), value;
    bool hasValue = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasValue = true;
    }
    const Flag *flag = nullptr;
    for (const Flag &f : flags_)
      if (f.name == name)
        flag = &f;
    if (!flag)
      throw UsageError(fmt::format("unknown option {}", arg));
    if (auto *b = std::get_if<bool *>(&flag->target)) {
      if (hasValue)
        throw UsageError(fmt::format("--{} takes no value", name));
      **b = true;
      continue;
    }
    if (!hasValue) {
      if (i + 1 >= argc)
        throw UsageError(fmt::format("--{} needs a value ({})", name, flag->meta));
      value = argv[++i];
    }
    set(*flag, value);
  }
  return positional;
}

void DeviceFlags::declare(CommandLine &cl, const std::string &deviceNote) {
  cl.flag("device", &device, "KIND",
          "cpu, gpu or auto (default auto: a GPU when the library and machine "
          "have one" +
              deviceNote + ")");
  cl.flag("matmul", &matmul, "fp32|tf32|bf16",
          "the matrix products: fp32 (default), tf32 (a GPU's tensor cores, "
          "several times faster; inputs rounded to 10 bits of mantissa) or "
          "bf16 (a CPU's AMX or AVX512-BF16 through oneDNN, about twice as "
          "fast; inputs rounded to 8 bits of mantissa)");
}

void DeviceFlags::check() const {
  if (matmul && *matmul != "fp32" && *matmul != "tf32" && *matmul != "bf16")
    throw UsageError(fmt::format("--matmul {}: unknown (known: fp32, tf32, "
                                 "bf16)",
                                 *matmul));
  if (device && *device != "cpu" && *device != "gpu" && *device != "auto")
    throw UsageError(
        fmt::format("--device {}: unknown (known: cpu, gpu, auto)", *device));
}

int threadsOrAllCores(const std::optional<int64_t> &threads) {
  const int64_t cores =
      std::max<unsigned>(1, std::thread::hardware_concurrency());
  // More threads than this only queue for the cores (and 2^32 of them
  // wrapped around int); the flag's check has made sure it is positive.
  constexpr int64_t kMostThreads = 1024;
  if (threads && *threads > kMostThreads)
    throw UsageError(fmt::format("--threads must be at most {}, not {} (this "
                                 "machine has {} core{})",
                                 kMostThreads, *threads, cores,
                                 cores == 1 ? "" : "s"));
  return int(threads.value_or(cores));
}

int runTool(const std::string &tool, int (*body)(int, char **), int argc,
            char **argv) {
  // A write past the file-size limit (`ulimit -f`) then fails with EFBIG,
  // which the tools report with the file's name, instead of killing the
  // process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return body(argc, argv);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "%s: error: %s\n(run `%s --help` for the options)\n",
                 tool.c_str(), e.what(), tool.c_str());
    return 2;
  } catch (const std::bad_alloc &) {
    // Where the memory is not one the tool names (a block, a workspace).
    std::fprintf(stderr, "%s: error: not enough memory\n", tool.c_str());
    return 1;
  } catch (const std::system_error &e) {
    // std::thread's failure names no thread.
    const bool thread = e.code() == std::errc::resource_unavailable_try_again;
    std::fprintf(stderr, "%s: error: %s%s\n", tool.c_str(),
                 thread ? "cannot start a thread (too little memory for its "
                          "stack, or too many threads; --threads N uses "
                          "fewer): "
                        : "",
                 e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: error: %s\n", tool.c_str(), e.what());
    return 1;
  }
}

} // namespace lruc::tools
