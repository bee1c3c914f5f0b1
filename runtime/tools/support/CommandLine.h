//===- CommandLine.h - Flags of the lru-* tools -----------------*- C++ -*-===//
//
// `--name VALUE`, `--name=VALUE` and `--switch`, checked as they are read:
// an unknown flag, a missing value or a value that is not a number is a
// UsageError whose message names the flag, and the tool exits with status 2.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_TOOLS_COMMANDLINE_H
#define LRUC_TOOLS_COMMANDLINE_H

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace lruc::tools {

class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// lruc's version: `lruc COMMIT (DATE)`, what `--version` prints.
const char *versionLine();
/// Prints versionLine() to stdout.
void printVersion();

class CommandLine {
public:
  CommandLine(std::string tool, std::string synopsis);

  void flag(const std::string &name, std::optional<std::string> *value,
            const std::string &meta, const std::string &help);
  void flag(const std::string &name, std::optional<int64_t> *value,
            const std::string &meta, const std::string &help);
  void flag(const std::string &name, std::optional<double> *value,
            const std::string &meta, const std::string &help);
  void flag(const std::string &name, bool *value, const std::string &help);

  /// Parses argv; returns the positional arguments. `--help` prints the
  /// usage, `--version` lruc's version, to stdout, and exits 0. Throws
  /// UsageError.
  std::vector<std::string> parse(int argc, char **argv);

  std::string usage() const;
  const std::string &tool() const { return tool_; }

private:
  using Target = std::variant<std::optional<std::string> *,
                              std::optional<int64_t> *,
                              std::optional<double> *, bool *>;
  struct Flag {
    std::string name, meta, help;
    Target target;
  };
  void set(const Flag &flag, const std::string &value);

  std::string tool_, synopsis_;
  std::vector<Flag> flags_;
};

/// `--device cpu|gpu|auto` and `--matmul fp32|tf32|bf16`, as every tool that
/// runs a model takes them.
struct DeviceFlags {
  std::optional<std::string> device, matmul;

  /// Declares both flags; `deviceNote` ends --device's help.
  void declare(CommandLine &cl, const std::string &deviceNote = "");
  /// Throws UsageError on a value neither flag knows.
  void check() const;
  std::string deviceOrAuto() const { return device.value_or("auto"); }
  std::string matmulOrFp32() const { return matmul.value_or("fp32"); }
};

/// `--threads N`'s value, or one thread per core when not given; throws
/// UsageError above 1024.
int threadsOrAllCores(const std::optional<int64_t> &threads);

/// Runs `body`, turning a UsageError into "TOOL: error: MESSAGE" + a hint
/// and exit status 2, and any other exception into "TOOL: error: MESSAGE"
/// and status 1. A file-size limit makes writes fail instead of killing it.
int runTool(const std::string &tool, int (*body)(int, char **), int argc,
            char **argv);

} // namespace lruc::tools

#endif // LRUC_TOOLS_COMMANDLINE_H
