//===- PtxCache.cpp - NVRTC results kept on disk --------------------------===//
//
// An entry is DIRECTORY/KEY.ptx, KEY 32 hex digits of the hashed key
// (source, options, architecture, NVRTC version, entry format):
//
//   lruc-ptx 1
//   key KEY
//   bytes N
//   check CHECKSUM
//   <blank line>
//   N bytes of PTX
//
// Anything else (a truncated file, a flipped byte, another key) fails the
// checks and is rebuilt. Machine code compiled from an entry's PTX ahead of
// time (a GPU kit's, by ptxas) is DIRECTORY/KEY.ARCH.cubin in the same
// format, KEY hashed from the PTX and the architecture.
//
//===----------------------------------------------------------------------===//

#include "lruc/cuda/PtxCache.h"

#include "lruc/core/Files.h"
#include "lruc/cuda/Nvrtc.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace lruc::cuda {
namespace {

constexpr const char *kMagic = "lruc-ptx 1";

/// 64-bit FNV-1a from `basis`: two bases give the 128-bit key.
uint64_t fnv1a(const std::string &bytes, uint64_t basis) {
  uint64_t hash = basis;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string hex(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(value));
  return text;
}

/// An entry's KEY: 32 hex digits, `keyText` hashed from two bases.
std::string keyOf(const std::string &keyText) {
  return hex(fnv1a(keyText, 0xcbf29ce484222325ull)) +
         hex(fnv1a(keyText, 0x84222325cbf29ce4ull));
}

std::string checksum(const std::string &ptx) {
  return hex(fnv1a(ptx, 0xcbf29ce484222325ull));
}

/// The PTX of a valid entry for `key`, or false.
bool readEntry(const std::string &path, const std::string &key,
               std::string &ptx) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::stringstream whole;
  whole << in.rdbuf();
  std::string text = whole.str();
  std::string header = std::string(kMagic) + "\nkey " + key + "\nbytes ";
  if (text.compare(0, header.size(), header) != 0)
    return false;
  size_t at = header.size();
  size_t end = text.find('\n', at);
  if (end == std::string::npos)
    return false;
  char *parsed = nullptr;
  unsigned long long bytes = std::strtoull(text.c_str() + at, &parsed, 10);
  if (parsed != text.c_str() + end)
    return false;
  std::string checkLine = "check ";
  at = end + 1;
  if (text.compare(at, checkLine.size(), checkLine) != 0)
    return false;
  at += checkLine.size();
  end = text.find('\n', at);
  if (end == std::string::npos || text.compare(end, 2, "\n\n") != 0)
    return false;
  std::string check = text.substr(at, end - at);
  at = end + 2;
  if (text.size() - at != bytes)
    return false;
  std::string body = text.substr(at);
  if (checksum(body) != check)
    return false;
  ptx = std::move(body);
  return true;
}

/// Writes `body` as the entry for `key` at `path`, atomically.
bool writeEntry(const std::string &path, const std::string &key,
                const std::string &body, std::string &error) {
  std::string entry = std::string(kMagic) + "\nkey " + key + "\nbytes " +
                      std::to_string(body.size()) + "\ncheck " +
                      checksum(body) + "\n\n" + body;
  return core::writeFileAtomically(path, entry, error);
}

/// The key of the machine code of `ptx` for `deviceArch`, and its path.
std::string machineCodeKey(const std::string &ptx,
                           const std::string &deviceArch) {
  return keyOf(std::string(kMagic) + '\0' + deviceArch + '\0' + ptx);
}
std::string machineCodePath(const std::string &directory,
                            const std::string &ptx,
                            const std::string &deviceArch) {
  return directory + "/" + machineCodeKey(ptx, deviceArch) + "." +
         deviceArch + ".cubin";
}

} // namespace

std::string defaultPtxCacheDirectory() {
  if (const char *dir = std::getenv("LRUC_CACHE_DIR"); dir && *dir)
    return std::string(dir) + "/ptx";
  if (const char *dir = std::getenv("XDG_CACHE_HOME"); dir && *dir)
    return std::string(dir) + "/lruc/ptx";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/lruc/ptx";
  return "";
}

bool compileToPtxCached(const std::string &directory, const std::string &source,
                        const std::string &sourceName, const std::string &arch,
                        const std::vector<std::string> &extraOptions,
                        std::string &ptx, PtxCacheOutcome &outcome,
                        std::string &warning, std::string &error) {
  warning.clear();
  std::string version = nvrtcVersion(error);
  if (version.empty())
    return false;
  // Every input of the compile, each ended by a NUL so that no two
  // different lists join to the same text.
  std::string keyText =
      std::string(kMagic) + '\0' + version + '\0' + arch + '\0';
  for (const std::string &option : extraOptions)
    keyText += option + '\0';
  keyText += '\0' + source;
  std::string key = keyOf(keyText);
  std::string path = directory + "/" + key + ".ptx";

  std::error_code ec;
  bool existed = std::filesystem::exists(path, ec);
  if (existed && readEntry(path, key, ptx)) {
    outcome = PtxCacheOutcome::Hit;
    return true;
  }
  outcome = existed ? PtxCacheOutcome::Rebuilt : PtxCacheOutcome::Compiled;
  if (!compileToPtx(source, sourceName, arch, extraOptions, ptx, error))
    return false;
  std::filesystem::create_directories(directory, ec);
  if (ec) {
    warning = "cannot create the PTX cache " + directory + ": " + ec.message();
    return true;
  }
  std::string writeError;
  if (!writeEntry(path, key, ptx, writeError))
    warning = "PTX not cached: " + writeError;
  return true;
}

bool findMachineCode(const std::string &directory, const std::string &ptx,
                     const std::string &deviceArch, std::string &code) {
  return !directory.empty() &&
         readEntry(machineCodePath(directory, ptx, deviceArch),
                   machineCodeKey(ptx, deviceArch), code);
}

bool storeMachineCode(const std::string &directory, const std::string &ptx,
                      const std::string &deviceArch, const std::string &code,
                      std::string &error) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) {
    error = "cannot create " + directory + ": " + ec.message();
    return false;
  }
  return writeEntry(machineCodePath(directory, ptx, deviceArch),
                    machineCodeKey(ptx, deviceArch), code, error);
}

std::vector<std::string> modelNvrtcOptions() {
  std::vector<std::string> options;
  const char *env = std::getenv("LRUC_NVRTC_OPTIONS");
  std::istringstream words(env ? env : "");
  for (std::string word; words >> word;)
    options.push_back(word);
  return options;
}

std::string ptxArchitecture(const std::string &deviceArch, std::string &note,
                            std::string &error) {
  note.clear();
  int device = 0;
  if (deviceArch.rfind("sm_", 0) != 0 ||
      std::sscanf(deviceArch.c_str() + 3, "%d", &device) != 1) {
    error = "not a device architecture: '" + deviceArch + "' (sm_NN)";
    return "";
  }
  std::string listError;
  const std::vector<int> known = nvrtcSupportedArchs(listError);
  if (known.empty() ||
      std::find(known.begin(), known.end(), device) != known.end())
    return "compute_" + std::to_string(device); // NVRTC's own error if any
  int newestBelow = 0;
  for (int arch : known)
    if (arch < device)
      newestBelow = std::max(newestBelow, arch);
  std::string version = nvrtcVersion(listError);
  if (newestBelow == 0) {
    error = "this NVRTC (" + version +
            ") compiles for no architecture as "
            "old as the device's " +
            deviceArch + " (its oldest: sm_" +
            std::to_string(*std::min_element(known.begin(), known.end())) + ")";
    return "";
  }
  note = "NVRTC " + version + " does not compile for " + deviceArch +
         "; PTX for compute_" + std::to_string(newestBelow) +
         ", which the driver compiles for the device (a newer CUDA toolkit's "
         "NVRTC would target it directly)";
  return "compute_" + std::to_string(newestBelow);
}

bool compileModelPtx(const std::string &source, const std::string &deviceArch,
                     std::string &ptx, PtxCacheOutcome &outcome,
                     std::string &warning, std::string &error) {
  std::string note;
  const std::string arch = ptxArchitecture(deviceArch, note, error);
  if (arch.empty())
    return false;
  const std::vector<std::string> options = modelNvrtcOptions();
  if (compileToPtxCached(defaultPtxCacheDirectory(), source, "model.cu", arch,
                         options, ptx, outcome, warning, error)) {
    if (!note.empty())
      warning = warning.empty() ? note : note + "; " + warning;
    return true;
  }
  // An option NVRTC rejects fails every model: say where it came from.
  if (!options.empty()) {
    while (!error.empty() &&
           std::isspace(static_cast<unsigned char>(error.back())))
      error.pop_back(); // NVRTC's log ends with a newline
    error += "\n(with LRUC_NVRTC_OPTIONS=" +
             std::string(std::getenv("LRUC_NVRTC_OPTIONS")) + ")";
  }
  return false;
}

} // namespace lruc::cuda
