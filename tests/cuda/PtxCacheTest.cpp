//===- PtxCacheTest.cpp - The on-disk PTX cache ---------------------------===//
//
// compileToPtxCached compiles once, reads its entry back afterwards, keys
// entries by everything that changes the PTX, and rebuilds an entry that
// was truncated, altered or replaced. Needs NVRTC (not a GPU).
//
//===----------------------------------------------------------------------===//

#include "lruc/cuda/Nvrtc.h"
#include "lruc/cuda/PtxCache.h"

#include "../host/TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;
using lruc::cuda::PtxCacheOutcome;
using lruc::host::testing::readBytes;
using lruc::host::testing::TempDir;
using lruc::host::testing::writeBytes;

const char *kSource = R"(
extern "C" __global__ void scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] *= a;
}
)";

/// Environment variables as they were, put back (or unset) when it goes.
class SavedEnvironment {
public:
  explicit SavedEnvironment(std::initializer_list<const char *> names) {
    for (const char *name : names) {
      const char *value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value)
                                      : std::nullopt);
    }
  }
  ~SavedEnvironment() {
    for (const auto &[name, value] : saved_)
      if (value)
        setenv(name, value->c_str(), 1);
      else
        unsetenv(name);
  }

private:
  std::vector<std::pair<const char *, std::optional<std::string>>> saved_;
};

class PtxCache : public ::testing::Test {
protected:
  void SetUp() override {
    std::string error;
    if (lruc::cuda::nvrtcVersion(error).empty())
      GTEST_SKIP() << "NVRTC is not available here: " << error;
    dir = (temp.path() / "cache").string();
  }

  PtxCacheOutcome compile(const std::string &source, const std::string &arch,
                          std::vector<std::string> options, std::string &ptx) {
    PtxCacheOutcome outcome{};
    std::string warning, error;
    EXPECT_TRUE(lruc::cuda::compileToPtxCached(
        dir, source, "test.cu", arch, options, ptx, outcome, warning, error))
        << error;
    EXPECT_EQ(warning, "");
    return outcome;
  }

  std::vector<fs::path> entries() const {
    std::vector<fs::path> files;
    for (const auto &entry : fs::directory_iterator(dir))
      files.push_back(entry.path());
    return files;
  }

  TempDir temp;
  std::string dir;
};

TEST_F(PtxCache, CompilesOnceThenReadsTheEntry) {
  std::string first, second;
  EXPECT_EQ(compile(kSource, "compute_80", {}, first),
            PtxCacheOutcome::Compiled);
  EXPECT_NE(first.find(".entry scale"), std::string::npos);
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_EQ(compile(kSource, "compute_80", {}, second), PtxCacheOutcome::Hit);
  EXPECT_EQ(first, second);
  EXPECT_EQ(entries().size(), 1u); // no temporary file left behind
}

TEST_F(PtxCache, KeysBySourceArchitectureAndOptions) {
  std::string ptx;
  EXPECT_EQ(compile(kSource, "compute_80", {}, ptx), PtxCacheOutcome::Compiled);
  EXPECT_EQ(compile(kSource, "compute_90", {}, ptx), PtxCacheOutcome::Compiled);
  EXPECT_NE(ptx.find(".target sm_90"), std::string::npos);
  EXPECT_EQ(compile(kSource, "compute_80", {"--use_fast_math"}, ptx),
            PtxCacheOutcome::Compiled);
  EXPECT_EQ(compile(std::string(kSource) + "\n", "compute_80", {}, ptx),
            PtxCacheOutcome::Compiled);
  EXPECT_EQ(entries().size(), 4u);
  EXPECT_EQ(compile(kSource, "compute_90", {}, ptx), PtxCacheOutcome::Hit);
}

TEST_F(PtxCache, RebuildsAnEntryThatFailsItsChecks) {
  std::string good;
  compile(kSource, "compute_80", {}, good);
  ASSERT_EQ(entries().size(), 1u);
  fs::path entry = entries()[0];
  const std::string original = readBytes(entry);

  std::string flipped = original;
  flipped[flipped.size() - 10] ^= 0x20; // one byte of the PTX
  std::string wrongKey = original;
  wrongKey[wrongKey.find("key ") + 4] ^= 0x01;
  std::string fakeLength = original;
  fakeLength.insert(fakeLength.find("bytes ") + 6, "1");
  for (const std::string &bad :
       {original.substr(0, original.size() / 2), flipped, wrongKey, fakeLength,
        std::string(), std::string("not a cache entry\n")}) {
    writeBytes(entry, bad);
    std::string ptx;
    EXPECT_EQ(compile(kSource, "compute_80", {}, ptx),
              PtxCacheOutcome::Rebuilt);
    EXPECT_EQ(ptx, good);
    EXPECT_EQ(readBytes(entry), original); // replaced by a valid entry
  }
}

TEST_F(PtxCache, ACompileErrorStoresNothing) {
  std::string ptx, warning, error;
  PtxCacheOutcome outcome{};
  EXPECT_FALSE(lruc::cuda::compileToPtxCached(dir, "this is not CUDA",
                                              "broken.cu", "compute_80", {},
                                              ptx, outcome, warning, error));
  EXPECT_NE(error.find("broken.cu"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(dir) && !fs::is_empty(dir));
}

TEST_F(PtxCache, AnUnwritableCacheStillCompiles) {
  // The cache's place is taken by a file: nothing can be stored there.
  writeBytes(dir, "a file, not a directory");
  std::string ptx, warning, error;
  PtxCacheOutcome outcome{};
  EXPECT_TRUE(lruc::cuda::compileToPtxCached(
      dir, kSource, "test.cu", "compute_80", {}, ptx, outcome, warning, error))
      << error;
  EXPECT_NE(ptx.find(".entry scale"), std::string::npos);
  EXPECT_NE(warning.find(dir), std::string::npos) << warning;
}

TEST_F(PtxCache, KeepsMachineCodeByItsPtxAndArchitecture) {
  std::string ptx, code, error;
  compile(kSource, "compute_90", {}, ptx);
  EXPECT_FALSE(lruc::cuda::findMachineCode(dir, ptx, "sm_90", code));
  // Any bytes stand for ptxas's output here: the cache only keeps them.
  const std::string machine("\x7f" "ELF machine code\0with NULs", 27);
  ASSERT_TRUE(lruc::cuda::storeMachineCode(dir, ptx, "sm_90", machine, error))
      << error;
  ASSERT_TRUE(lruc::cuda::findMachineCode(dir, ptx, "sm_90", code));
  EXPECT_EQ(code, machine);
  EXPECT_FALSE(lruc::cuda::findMachineCode(dir, ptx, "sm_80", code));
  EXPECT_FALSE(lruc::cuda::findMachineCode(dir, ptx + "\n", "sm_90", code));
  EXPECT_FALSE(lruc::cuda::findMachineCode("", ptx, "sm_90", code));
  // A damaged entry is no machine code (the PTX is loaded instead).
  for (const fs::path &entry : entries())
    if (entry.extension() == ".cubin") {
      std::string bytes = readBytes(entry);
      bytes[bytes.size() - 3] ^= 0x01;
      writeBytes(entry, bytes);
    }
  EXPECT_FALSE(lruc::cuda::findMachineCode(dir, ptx, "sm_90", code));
}

// LRUC_NVRTC_OPTIONS reaches every model's compile and its cache key: with
// -lineinfo the PTX carries source lines (.loc) and is a second entry; an
// option NVRTC rejects fails with the variable named.
TEST_F(PtxCache, ModelsTakeTheUsersOptions) {
  const SavedEnvironment saved({"LRUC_CACHE_DIR", "LRUC_NVRTC_OPTIONS"});
  setenv("LRUC_CACHE_DIR", temp.path().c_str(), 1);
  const fs::path ptxDir = temp.path() / "ptx";
  auto modelPtx = [](std::string &ptx, std::string &error) {
    PtxCacheOutcome outcome{};
    std::string warning;
    return lruc::cuda::compileModelPtx(kSource, "sm_80", ptx, outcome, warning,
                                       error);
  };
  std::string plain, lines, error;
  unsetenv("LRUC_NVRTC_OPTIONS");
  EXPECT_TRUE(lruc::cuda::modelNvrtcOptions().empty());
  ASSERT_TRUE(modelPtx(plain, error)) << error;
  EXPECT_EQ(plain.find(".loc"), std::string::npos);

  setenv("LRUC_NVRTC_OPTIONS", " -lineinfo  --fmad=true ", 1);
  EXPECT_EQ(lruc::cuda::modelNvrtcOptions(),
            (std::vector<std::string>{"-lineinfo", "--fmad=true"}));
  ASSERT_TRUE(modelPtx(lines, error)) << error;
  EXPECT_NE(lines.find(".loc"), std::string::npos);
  size_t stored = 0;
  for (const auto &entry : fs::directory_iterator(ptxDir))
    stored += entry.path().extension() == ".ptx";
  EXPECT_EQ(stored, 2u);

  setenv("LRUC_NVRTC_OPTIONS", "--no-such-option", 1);
  std::string bad;
  EXPECT_FALSE(modelPtx(bad, error));
  EXPECT_NE(error.find("LRUC_NVRTC_OPTIONS=--no-such-option"),
            std::string::npos)
      << error;
}

// A device newer than this NVRTC knows (a new GPU, an older toolkit) gets
// PTX for the newest architecture NVRTC has below it, which the driver
// compiles for the device, and the warning says so; a device older than
// every architecture NVRTC knows is an error naming both.
TEST_F(PtxCache, ADeviceNewerThanNvrtcGetsItsNewestPtx) {
  const SavedEnvironment saved({"LRUC_CACHE_DIR", "LRUC_NVRTC_OPTIONS"});
  setenv("LRUC_CACHE_DIR", temp.path().c_str(), 1);
  unsetenv("LRUC_NVRTC_OPTIONS");
  std::string error, note;
  const std::vector<int> known = lruc::cuda::nvrtcSupportedArchs(error);
  ASSERT_FALSE(known.empty()) << error;
  const std::string newest =
      std::to_string(*std::max_element(known.begin(), known.end()));
  const std::string oldest =
      std::to_string(*std::min_element(known.begin(), known.end()));

  EXPECT_EQ(lruc::cuda::ptxArchitecture("sm_" + newest, note, error),
            "compute_" + newest);
  EXPECT_EQ(note, "");
  EXPECT_EQ(lruc::cuda::ptxArchitecture("sm_999", note, error),
            "compute_" + newest);
  EXPECT_NE(note.find("does not compile for sm_999; PTX for compute_" + newest),
            std::string::npos)
      << note;

  std::string ptx, warning;
  PtxCacheOutcome outcome{};
  ASSERT_TRUE(lruc::cuda::compileModelPtx(kSource, "sm_999", ptx, outcome,
                                          warning, error))
      << error;
  EXPECT_NE(ptx.find(".target sm_" + newest), std::string::npos);
  EXPECT_EQ(warning, note);

  EXPECT_EQ(lruc::cuda::ptxArchitecture("sm_10", note, error), "");
  EXPECT_NE(error.find("no architecture as old as the device's sm_10 (its "
                       "oldest: sm_" +
                       oldest + ")"),
            std::string::npos)
      << error;
  EXPECT_FALSE(lruc::cuda::compileModelPtx(kSource, "sm_10", ptx, outcome,
                                           warning, error));
  EXPECT_EQ(lruc::cuda::ptxArchitecture("gpu", note, error), "");
  EXPECT_NE(error.find("not a device architecture: 'gpu'"), std::string::npos);
}

TEST(PtxCacheDirectory, FollowsTheEnvironment) {
  const SavedEnvironment saved({"LRUC_CACHE_DIR", "XDG_CACHE_HOME", "HOME"});
  setenv("LRUC_CACHE_DIR", "/some/where", 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(lruc::cuda::defaultPtxCacheDirectory(), "/some/where/ptx");
  unsetenv("LRUC_CACHE_DIR");
  EXPECT_EQ(lruc::cuda::defaultPtxCacheDirectory(), "/xdg/lruc/ptx");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(lruc::cuda::defaultPtxCacheDirectory(), "/home/u/.cache/lruc/ptx");
  unsetenv("HOME");
  EXPECT_EQ(lruc::cuda::defaultPtxCacheDirectory(), "");
}

} // namespace
