//===- lru-data.cpp - Generate ListOps and Pathfinder data ----------------===//
//
//   lru-data listops --out DIR [--train N] [--val N] [--test N] [--seed S]
//            [--max-depth D] [--min-length A] [--max-length B]
//   lru-data pathfinder --out DIR [--size 32|128] [--contour 6|9|14]
//            [--count N] [--seed S]
//
// Writes the data library's generated datasets (docs/data.md,
// "Generators") in the official LRA release layouts under DIR, where
// `lru-train model.so --data DIR` finds them:
//
//   DIR/listops-1000/basic_{train,val,test}.tsv
//   DIR/pathfinderN/DIFFICULTY/{imgs/B/sample_I.png, metadata/B.npy}
//
// The same flags give the same files (docs/data.md, "Generators"). Each
// file is written atomically (lruc::data::writeFile: a temporary renamed
// into place).
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"

#include "lruc/data/Dataset.h"
#include "lruc/data/ListOps.h"
#include "lruc/data/Pathfinder.h"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>

namespace fs = std::filesystem;
using namespace lruc;
using tools::UsageError;

namespace {

constexpr const char *kTool = "lru-data";
/// Far beyond LRA's sizes: a typo of many digits is refused up front.
constexpr int64_t kMaxCount = 10'000'000;
/// writeListOps holds the whole pool and the files' text in memory, about
/// 2 GB per 100000 expressions at LRA's lengths: ten times LRA is plenty.
constexpr int64_t kMaxListOps = 1'000'000;
/// writePathfinder's default, which the tool uses: images per metadata file.
constexpr int64_t kPathfinderPerFile = 1000;

const char *const kOverview =
    "usage: lru-data COMMAND --out DIR [options]\n"
    "\n"
    "Writes generated Long Range Arena data in the release layout under DIR\n"
    "(docs/data.md); train on it with `lru-train model.so --data DIR`.\n"
    "\n"
    "commands:\n"
    "  listops      DIR/listops-1000/basic_{train,val,test}.tsv\n"
    "  pathfinder   DIR/pathfinderN/DIFFICULTY/{imgs,metadata}/\n"
    "\n"
    "`lru-data COMMAND --help` lists a command's options; `lru-data\n"
    "--version` prints lruc's version.\n";

int64_t checkedCount(const std::optional<int64_t> &value, int64_t fallback,
                     const char *name, int64_t least) {
  int64_t v = value.value_or(fallback);
  if (v < least || v > kMaxCount)
    throw UsageError(
        fmt::format("--{} {}: must be in {}..{}", name, v, least, kMaxCount));
  return v;
}

uint64_t checkedSeed(const std::optional<int64_t> &seed) {
  if (seed && *seed < 0)
    throw UsageError(fmt::format("--seed {}: must not be negative", *seed));
  return uint64_t(seed.value_or(1));
}

/// Makes `dir` and checks a file can be created in it, so that an unwritable
/// --out fails at once rather than after minutes of generating.
void prepareDirectory(const fs::path &dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error(fmt::format("{}: cannot create directory: {}",
                                         dir.string(), ec.message()));
  fs::path probe = dir / ".lru-data-probe";
  bool ok = static_cast<bool>(std::ofstream(probe));
  fs::remove(probe, ec);
  if (!ok)
    throw std::runtime_error(
        fmt::format("{}: cannot write in directory", dir.string()));
}

/// Refuses to write `files` metadata files into `metadata` when it holds
/// other .npy files: the reader takes every one, so a larger earlier run's
/// 1.npy, 2.npy, … would silently join the new images.
void checkNoStaleMetadata(const fs::path &metadata, int64_t files) {
  std::error_code ec;
  for (fs::directory_iterator it(metadata, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().extension() != ".npy")
      continue;
    const std::string stem = it->path().stem().string();
    bool ours = false;
    for (int64_t b = 0; b < files && !ours; ++b)
      ours = stem == std::to_string(b);
    if (!ours)
      throw std::runtime_error(fmt::format(
          "{}: left from an earlier run (this one writes {}); the reader "
          "would take it too: remove {} or choose another --out",
          it->path().string(),
          files == 1 ? std::string("0.npy")
                     : fmt::format("0.npy..{}.npy", files - 1),
          metadata.parent_path().string()));
  }
}

/// Runs `work` while printing "lru-data: WHAT... Ns" on stderr every
/// `every`: the generators take one call for the whole set and report no
/// progress of their own.
void withProgress(const std::string &what, const std::function<void()> &work,
                  std::chrono::seconds every = std::chrono::seconds(5)) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::fprintf(stderr, "%s: %s...\n", kTool, what.c_str());
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  std::thread ticker([&] {
    std::unique_lock<std::mutex> lock(mutex);
    while (!done.wait_for(lock, every, [&] { return finished; }))
      std::fprintf(stderr, "%s: %s... %llds\n", kTool, what.c_str(),
                   (long long)std::chrono::duration_cast<std::chrono::seconds>(
                       Clock::now() - start)
                       .count());
  });
  auto stop = [&] {
    {
      std::lock_guard<std::mutex> lock(mutex);
      finished = true;
    }
    done.notify_one();
    ticker.join();
  };
  try {
    work();
  } catch (...) {
    stop();
    throw;
  }
  stop();
  std::fprintf(stderr, "%s: %s: done in %.1fs\n", kTool, what.c_str(),
               std::chrono::duration<double>(Clock::now() - start).count());
}

int listOpsMain(int argc, char **argv) {
  std::optional<std::string> out;
  std::optional<int64_t> train, val, test, seed, maxDepth, minLength, maxLength;
  const data::ListOpsConfig defaults;
  tools::CommandLine cl("lru-data listops", "--out DIR [options]");
  cl.flag("out", &out, "DIR",
          "writes DIR/listops-1000/basic_{train,val,test}.tsv");
  cl.flag("train", &train, "N", "training expressions (default 96000, as LRA)");
  cl.flag("val", &val, "N", "validation expressions (default 2000)");
  cl.flag("test", &test, "N", "test expressions (default 2000)");
  cl.flag("seed", &seed, "S", "the generator's seed (default 1)");
  cl.flag(
      "max-depth", &maxDepth, "D",
      fmt::format("deepest operator nesting (default {})", defaults.maxDepth));
  cl.flag("min-length", &minLength, "A",
          fmt::format("keep expressions of more than A tokens (default {})",
                      defaults.minLength));
  cl.flag("max-length", &maxLength, "B",
          fmt::format("and fewer than B (default {})", defaults.maxLength));
  if (!cl.parse(argc, argv).empty())
    throw UsageError("lru-data listops takes no positional arguments");
  if (!out || out->empty())
    throw UsageError("lru-data listops needs --out DIR");

  const int64_t nTrain = checkedCount(train, 96000, "train", 1);
  const int64_t nVal = checkedCount(val, 2000, "val", 0);
  const int64_t nTest = checkedCount(test, 2000, "test", 0);
  if (nTrain + nVal + nTest > kMaxListOps)
    throw UsageError(fmt::format(
        "{} expressions in all: at most {} (all are held in memory while "
        "generating, about 2 GB per 100000)",
        nTrain + nVal + nTest, kMaxListOps));
  const uint64_t s = checkedSeed(seed);
  data::ListOpsConfig config = defaults;
  config.maxDepth =
      int(checkedCount(maxDepth, defaults.maxDepth, "max-depth", 1));
  config.minLength =
      checkedCount(minLength, defaults.minLength, "min-length", 0);
  config.maxLength =
      checkedCount(maxLength, defaults.maxLength, "max-length", 2);
  if (config.minLength + 1 >= config.maxLength)
    throw UsageError(fmt::format(
        "--min-length {} --max-length {}: no length lies strictly between",
        config.minLength, config.maxLength));

  try {
    // Zero expressions: only the generator's own check of the config, so an
    // impossible one is refused before anything is made or written.
    data::generateListOps(config, s, 0);
  } catch (const std::invalid_argument &e) {
    throw UsageError(e.what());
  }

  const fs::path root = *out;
  const fs::path dir = root / "listops-1000";
  prepareDirectory(dir);
  withProgress(fmt::format("generating {} ListOps expressions (seed {})",
                           nTrain + nVal + nTest, s),
               [&] {
                 data::writeListOps(dir, config, s, size_t(nTrain),
                                    size_t(nVal), size_t(nTest));
               });
  std::printf("%s: wrote %lld/%lld/%lld ListOps expressions to "
              "%s/basic_{train,val,test}.tsv\n",
              kTool, (long long)nTrain, (long long)nVal, (long long)nTest,
              dir.string().c_str());
  std::printf("%s: train on it with: lru-train model.so --data %s\n", kTool,
              root.string().c_str());
  return 0;
}

int pathfinderMain(int argc, char **argv) {
  std::optional<std::string> out;
  std::optional<int64_t> size, contour, count, seed;
  tools::CommandLine cl("lru-data pathfinder", "--out DIR [options]");
  cl.flag("out", &out, "DIR",
          "writes DIR/pathfinderN/DIFFICULTY/{imgs,metadata}/");
  cl.flag("size", &size, "N", "32 (Pathfinder, default) or 128 (Path-X)");
  cl.flag("contour", &contour, "L",
          "paddles per contour: 6, 9 or 14 (default 14)");
  cl.flag("count", &count, "N",
          "images (default 2000); LRA splits them 80/10/10");
  cl.flag("seed", &seed, "S", "the generator's seed (default 1)");
  if (!cl.parse(argc, argv).empty())
    throw UsageError("lru-data pathfinder takes no positional arguments");
  if (!out || out->empty())
    throw UsageError("lru-data pathfinder needs --out DIR");

  const int64_t n = size.value_or(32), length = contour.value_or(14);
  if (n != 32 && n != 128)
    throw UsageError(fmt::format("--size {}: must be 32 or 128", n));
  if (length != 6 && length != 9 && length != 14)
    throw UsageError(fmt::format("--contour {}: must be 6, 9 or 14", length));
  const int64_t images = checkedCount(count, 2000, "count", 1);
  const uint64_t s = checkedSeed(seed);
  const data::PathfinderConfig config =
      data::PathfinderConfig::forSize(int(n), int(length));

  const fs::path root = *out;
  const std::string difficulty = data::pathfinderDifficulty(int(length));
  // writePathfinder's layout, named here for the messages.
  const fs::path dir = root / ("pathfinder" + std::to_string(n)) / difficulty;
  prepareDirectory(dir);
  checkNoStaleMetadata(dir / "metadata",
                       (images + kPathfinderPerFile - 1) / kPathfinderPerFile);
  withProgress(fmt::format("generating {} {}x{} Pathfinder images (contour "
                           "length {}, seed {})",
                           images, n, n, length, s),
               [&] {
                 data::writePathfinder(root, config, s, size_t(images),
                                       size_t(kPathfinderPerFile));
               });

  const size_t total = size_t(images);
  const size_t trainEnd = total * 8 / 10, valEnd = total * 9 / 10;
  std::printf("%s: wrote %lld images to %s/{imgs,metadata}/ (train %zu, val "
              "%zu, test %zu)\n",
              kTool, (long long)images, dir.string().c_str(), trainEnd,
              valEnd - trainEnd, total - valEnd);
  const char *task = n == 128 ? "pathx" : "pathfinder";
  if (length == 14)
    std::printf("%s: train on it with: lru-train model.so --data %s (task "
                "%s)\n",
                kTool, root.string().c_str(), task);
  else
    // readTask reads the default difficulty only; say so rather than let
    // lru-train report a missing release.
    std::printf("%s: note: lru-train's %s task reads %s only; read this "
                "difficulty with readPathfinder (docs/data.md)\n",
                kTool, task, data::pathfinderDifficulty(14).c_str());
  return 0;
}

int dataMain(int argc, char **argv) {
  if (argc < 2)
    throw UsageError("expected a command: listops or pathfinder");
  const std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kOverview, stdout);
    return 0;
  }
  if (command == "--version") {
    lruc::tools::printVersion();
    return 0;
  }
  // The subcommand's flags follow it: argv[1] plays argv[0] to the parser.
  if (command == "listops")
    return listOpsMain(argc - 1, argv + 1);
  if (command == "pathfinder")
    return pathfinderMain(argc - 1, argv + 1);
  if (!command.empty() && command[0] == '-')
    throw UsageError(fmt::format(
        "{}: expected a command (listops or pathfinder) before the options",
        command));
  throw UsageError(fmt::format(
      "unknown command '{}' (known: listops, pathfinder)", command));
}

} // namespace

int main(int argc, char **argv) {
  return tools::runTool(kTool, dataMain, argc, argv);
}
