//===- ToolsTest.cpp - lru-train, lru-eval and lru-plot end to end --------===//
//
// The tools run as child processes on the hand-written model library
// (FakeModel.cpp) and small Fashion-MNIST files written here: 400 training
// images (360 train + 40 held out for validation) and 100 test images.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "lruc/host/Checkpoint.h"
#include "lruc/host/Metrics.h"
#include "lruc/host/ModelLibrary.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <regex>
#include <thread>

namespace {

using namespace lruc::host;
using lruc::host::testing::readBytes;
using lruc::host::testing::run;
using lruc::host::testing::RunResult;
using lruc::host::testing::TempDir;
namespace fs = std::filesystem;

class Tools : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    data_ = new TempDir;
    lruc::host::testing::writeFashionMnist(data_->path(), 400, 100);
  }
  static void TearDownTestSuite() {
    delete data_;
    data_ = nullptr;
  }

  /// lru-train on the fake model and the test data, with `args` added.
  RunResult train(const std::vector<std::string> &args,
                  const std::string &model = LRUC_FAKE_MODEL) {
    std::vector<std::string> all = {LRU_TRAIN, model, "--data",
                                    data_->path().string(), "--threads", "1"};
    all.insert(all.end(), args.begin(), args.end());
    return run(all, dir_ / "log.txt");
  }
  RunResult tool(std::vector<std::string> args) {
    return run(args, dir_ / "log.txt");
  }
  fs::path out(const std::string &name) const { return dir_ / name; }

  static TempDir *data_;
  TempDir dir_;
};

TempDir *Tools::data_ = nullptr;

Checkpoint load(const fs::path &path) {
  ModelLibrary library = ModelLibrary::open(LRUC_FAKE_MODEL);
  return loadCheckpoint(path, library.manifest(), OptimizerState::Required);
}

/// How lru-train and lru-eval print an accuracy.
std::string accuracyText(double accuracy) {
  char text[64];
  std::snprintf(text, sizeof text, "accuracy %.2f%%", 100 * accuracy);
  return text;
}

/// The train lines of a metrics file without their wall-clock times.
std::vector<std::string> trainLines(const fs::path &metrics) {
  std::vector<std::string> lines;
  std::istringstream in(readBytes(metrics));
  std::regex time(",\"time\":[0-9.e+-]+");
  for (std::string line; std::getline(in, line);)
    if (line.find("\"split\"") == std::string::npos)
      lines.push_back(std::regex_replace(line, time, ""));
  return lines;
}

TEST_F(Tools, TrainWritesCheckpointsMetricsAndProgress) {
  RunResult r = train({"--out", out("run").string(), "--log-every", "5"});
  ASSERT_EQ(r.status, 0) << r.output;
  // The settings line, progress lines, evaluations, the summary.
  EXPECT_NE(r.output.find("lru-train: fake on cpu (1 thread): fashion_mnist, "
                          "train 360, val 40 (10% of train held out (seed 1))"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("40 steps (11 per epoch) of batch 32, lr 0.01 "
                          "(warmup_cosine), eval every 10 steps"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("step 5/40  12% loss [0-9.]+ acc [0-9.]+% "
                           "lr [0-9.e+-]+ [0-9.]+ steps/s ETA [0-9]+s\n")))
      << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("step 10: val loss [0-9.]+, accuracy [0-9.]+% "
                           "\\(best so far\\)")))
      << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.output, m, std::regex("test accuracy ([0-9.]+)% \\(loss [0-9.]+, "
                              "100 examples\\)")))
      << r.output;
  EXPECT_GT(std::stod(m[1]), 80.0) << "the pattern is easy to learn";

  Checkpoint last = load(out("run") / "last.safetensors");
  EXPECT_EQ(last.step, 40);
  EXPECT_EQ(last.metadata.at("epoch"), "3");
  EXPECT_TRUE(fs::exists(out("run") / "best.safetensors"));
  EXPECT_TRUE(fs::exists(out("run") / "config.json"));

  std::vector<MetricsEntry> metrics = readMetrics(out("run") / "metrics.jsonl");
  int trainLines = 0, valLines = 0, testLines = 0;
  double lastTrainAccuracy = -1;
  for (const MetricsEntry &e : metrics) {
    trainLines += e.split.empty();
    if (e.split.empty()) {
      // Each batch's accuracy: a multiple of 1/32.
      ASSERT_GE(e.accuracy, 0.0);
      ASSERT_LE(e.accuracy, 1.0);
      EXPECT_DOUBLE_EQ(e.accuracy * 32, std::round(e.accuracy * 32));
      lastTrainAccuracy = e.accuracy;
    }
    valLines += e.split == "val";
    testLines += e.split == "test";
  }
  EXPECT_EQ(trainLines, 40);
  EXPECT_GT(lastTrainAccuracy, 0.8) << "the last batches are learned";
  EXPECT_EQ(valLines, 4);
  EXPECT_EQ(testLines, 1);
  for (auto &entry : fs::directory_iterator(out("run")))
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"),
              std::string::npos);
}

// The acceptance test of --resume: K steps, stop, K more gives bitwise the
// parameters, moments, statistics and losses of 2K steps in one go.
TEST_F(Tools, ResumeIsExact) {
  ASSERT_EQ(train({"--out", out("whole").string(), "--steps", "30",
                   "--eval-every", "7"})
                .status,
            0);
  RunResult first = train({"--out", out("parts").string(), "--steps", "30",
                           "--eval-every", "7", "--stop-after", "15"});
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_NE(first.output.find("stopped after step 15 of 30 (--stop-after)"),
            std::string::npos)
      << first.output;
  EXPECT_EQ(load(out("parts") / "last.safetensors").step, 15);
  RunResult second = train({"--out", out("parts").string(), "--resume"});
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_NE(second.output.find("resuming at step 15"), std::string::npos);

  Checkpoint a = load(out("whole") / "last.safetensors");
  Checkpoint b = load(out("parts") / "last.safetensors");
  EXPECT_EQ(b.step, 30);
  auto same = [](const std::vector<float> &x, const std::vector<float> &y) {
    return x.size() == y.size() &&
           std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
  };
  EXPECT_TRUE(same(a.params, b.params));
  EXPECT_TRUE(same(a.adamM, b.adamM));
  EXPECT_TRUE(same(a.adamV, b.adamV));
  EXPECT_TRUE(same(a.state, b.state));
  EXPECT_EQ(a.metadata.at("best_step"), b.metadata.at("best_step"));
  EXPECT_EQ(trainLines(out("whole") / "metrics.jsonl"),
            trainLines(out("parts") / "metrics.jsonl"));
}

TEST_F(Tools, ResumeKeepsTheRunsSettings) {
  ASSERT_EQ(train({"--out", out("run").string(), "--stop-after", "5"}).status, 0);
  RunResult r = train({"--out", out("run").string(), "--resume", "--batch", "16"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--batch 16 differs from the checkpoint's batch "
                          "(32): a resumed run keeps the settings it started "
                          "with"),
            std::string::npos)
      << r.output;
  r = train({"--out", out("run").string(), "--resume", "--max-train", "100"});
  EXPECT_EQ(r.status, 2) << r.output;
  r = train({"--out", out("run").string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("already holds a run (last.safetensors): pass "
                          "--resume to continue it"),
            std::string::npos)
      << r.output;
  r = train({"--out", out("none").string(), "--resume"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("last.safetensors: no such file: nothing to resume"),
            std::string::npos)
      << r.output;
}

TEST_F(Tools, NonFiniteLossStopsAndKeepsTheLastGoodCheckpoint) {
  RunResult r = train({"--out", out("run").string(), "--lr", "1e38",
                       "--schedule", "constant", "--eval-every", "1"});
  EXPECT_EQ(r.status, 3) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.output, m,
      std::regex("lru-train: error: step ([0-9]+): the loss is (NaN|infinite); "
                 "stopping. The last good checkpoint, .*last.safetensors, is "
                 "kept.")))
      << r.output;
  int64_t bad = std::stoll(m[1]);
  Checkpoint last = load(out("run") / "last.safetensors");
  EXPECT_EQ(last.step, bad - 1);
  for (float p : last.params)
    ASSERT_TRUE(std::isfinite(p));
}

TEST_F(Tools, InterruptSavesThenResumes) {
  lruc::host::testing::Process p(
      {LRU_TRAIN, LRUC_FAKE_MODEL, "--data", data_->path().string(), "--out",
       out("run").string(), "--steps", "1000000", "--eval-every", "1000000",
       "--threads", "1"},
      dir_ / "log.txt");
  // Wait until it is training (a few metrics lines), then interrupt.
  bool training = false;
  for (int i = 0; i < 3000 && !training; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    training = readBytes(out("run") / "metrics.jsonl").size() > 300;
  }
  ASSERT_TRUE(training) << p.output();
  kill(p.pid(), SIGINT);
  int status = p.wait();
  std::string output = p.output();
  EXPECT_EQ(status, 130) << output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      output, m,
      std::regex("interrupted after step ([0-9]+) of 1000000; saved "
                 ".*last.safetensors. Continue with: lru-train .* --out .* "
                 "--resume")))
      << output;
  int64_t step = std::stoll(m[1]);
  EXPECT_EQ(load(out("run") / "last.safetensors").step, step);

  RunResult r = train({"--out", out("run").string(), "--resume", "--stop-after",
                       std::to_string(step + 3)});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(load(out("run") / "last.safetensors").step, step + 3);
}

TEST_F(Tools, BadFlagsAreUsageErrors) {
  RunResult r = train({"--bogus"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("lru-train: error: unknown option --bogus\n(run "
                          "`lru-train --help` for the options)"),
            std::string::npos)
      << r.output;
  r = train({"--batch", "abc"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--batch: \"abc\" is not an integer"),
            std::string::npos);
  r = train({"--batch", "0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--batch must be positive, not 0"), std::string::npos);
  r = train({"--steps", "5", "--epochs", "1"});
  EXPECT_EQ(r.status, 2);
  r = train({"--lr"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--lr needs a value (X)"), std::string::npos);
  r = train({"--device", "tpu"});
  EXPECT_EQ(r.status, 2);
  r = tool({LRU_TRAIN});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("no model library given"), std::string::npos);
  r = tool({LRU_TRAIN, "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("usage: lru-train model.so [options]"),
            std::string::npos);
  EXPECT_NE(r.output.find("--resume"), std::string::npos);
}

TEST_F(Tools, NotAModelLibrary) {
  lruc::host::testing::writeBytes(out("model.so"), "not a library\n");
  RunResult r = train({}, out("model.so").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("lru-train: error: " + out("model.so").string() +
                          ": not a shared library: "),
            std::string::npos)
      << r.output;
  r = train({}, out("missing.so").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find(out("missing.so").string() + ": no such file"),
            std::string::npos);
  r = train({}, LRUC_FAKE_MODEL_OLD);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("built for ABI v1"), std::string::npos);
}

// The hand-written model has no GPU half: --device gpu says so, auto runs
// on the CPU. (tests/lit/trainer/lru-train-gpu.test trains a compiled model
// on a GPU, the simulated one.)
TEST_F(Tools, GpuNeedsALibraryWithCudaKernels) {
  RunResult r = train({"--device", "gpu", "--out", out("run").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("--device gpu: the library carries no CUDA kernels"),
            std::string::npos)
      << r.output;
  r = train({"--device", "auto", "--steps", "2", "--out", out("auto").string()});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("on cpu"), std::string::npos);
}

TEST_F(Tools, ModelWithoutTrainSection) {
  RunResult r = train({}, LRUC_FAKE_MODEL_NOTRAIN);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("names no task (compiled without a train section?): "
                          "pass --task NAME and --data DIR"),
            std::string::npos)
      << r.output;
  r = train({"--task", "fashion_mnist", "--steps", "3", "--out",
             out("run").string()},
            LRUC_FAKE_MODEL_NOTRAIN);
  EXPECT_EQ(r.status, 0) << r.output;
  // A resumed run takes its task (and data) from its checkpoint.
  r = train({"--task", "fashion_mnist", "--steps", "3", "--stop-after", "1",
             "--out", out("parts").string()},
            LRUC_FAKE_MODEL_NOTRAIN);
  EXPECT_EQ(r.status, 0) << r.output;
  r = train({"--resume", "--out", out("parts").string()},
            LRUC_FAKE_MODEL_NOTRAIN);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("resuming at step 1"), std::string::npos) << r.output;
}

TEST_F(Tools, MissingDataNamesTheFile) {
  RunResult r = tool({LRU_TRAIN, LRUC_FAKE_MODEL, "--data",
                      out("nodata").string(), "--out", out("run").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("nodata"), std::string::npos) << r.output;
}

TEST_F(Tools, EvalMatchesTheRunsValidationAndDumpsABatch) {
  ASSERT_EQ(train({"--out", out("run").string(), "--steps", "20",
                   "--eval-every", "20"})
                .status,
            0);
  const std::string best = (out("run") / "best.safetensors").string();
  RunResult r = tool({LRU_EVAL, LRUC_FAKE_MODEL, best, "--split", "val",
                      "--data", data_->path().string()});
  ASSERT_EQ(r.status, 0) << r.output;
  // The held-out examples are the run's: the same accuracy as it logged.
  double logged = -1;
  for (const MetricsEntry &e : readMetrics(out("run") / "metrics.jsonl"))
    if (e.split == "val")
      logged = e.accuracy;
  EXPECT_NE(r.output.find(accuracyText(logged)), std::string::npos)
      << r.output << " vs " << logged;
  EXPECT_NE(r.output.find("lru-eval: fashion_mnist (val), step 20: loss "),
            std::string::npos);
  EXPECT_NE(r.output.find("(40 examples)"), std::string::npos);

  r = tool({LRU_EVAL, LRUC_FAKE_MODEL, best, "--data", data_->path().string()});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("fashion_mnist (test)"), std::string::npos);

  const fs::path dump = out("batch.safetensors");
  r = tool({LRU_EVAL, LRUC_FAKE_MODEL, best, "--data", data_->path().string(),
            "--dump-batch", dump.string(), "--batch-index", "1", "--grads"});
  ASSERT_EQ(r.status, 0) << r.output;
  SafetensorsFile file = SafetensorsFile::read(dump);
  EXPECT_EQ(file.find("features")->shape, (std::vector<int64_t>{32, 784, 1}));
  EXPECT_EQ(file.find("labels")->dtype, DType::I32);
  EXPECT_EQ(file.find("loss")->shape, std::vector<int64_t>{});
  EXPECT_EQ(file.find("predictions")->shape, (std::vector<int64_t>{32, 10}));
  EXPECT_EQ(file.find("grad.head.weight")->shape,
            (std::vector<int64_t>{10, 784}));
  EXPECT_NE(file.find("train_loss"), nullptr);
  EXPECT_EQ(file.metadata().at("examples"), "[32, 64)");
  std::vector<int32_t> labels(32);
  file.copyTo("labels", DType::I32, labels.data(), 32);
  EXPECT_EQ(labels[0], 2); // test image 32 is of class 32 % 10

  r = tool({LRU_EVAL, LRUC_FAKE_MODEL, best, "--data", data_->path().string(),
            "--dump-batch", dump.string(), "--batch-index", "9"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--batch-index 9: no such batch (the split has 4 "
                          "batches of 32: 0 to 3)"),
            std::string::npos)
      << r.output;
  lruc::host::testing::writeBytes(out("bad.safetensors"), "garbage");
  r = tool({LRU_EVAL, LRUC_FAKE_MODEL, out("bad.safetensors").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("bad.safetensors: not a valid safetensors file"),
            std::string::npos)
      << r.output;
  r = tool({LRU_EVAL, LRUC_FAKE_MODEL, best, "--split", "dev"});
  EXPECT_EQ(r.status, 2);
  // The hand-written model has no step mode: --stream says why, on any
  // device, before looking for one.
  for (const char *device : {"cpu", "gpu"}) {
    r = tool({LRU_EVAL, LRUC_FAKE_MODEL, best, "--data",
              data_->path().string(), "--stream", "0", "--device", device});
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.output.find(": no step mode: the library has no step mode"),
              std::string::npos)
        << r.output;
  }
}

TEST_F(Tools, PlotDrawsEveryRun) {
  ASSERT_EQ(train({"--out", out("a").string(), "--steps", "12", "--eval-every",
                   "4"})
                .status,
            0);
  ASSERT_EQ(train({"--out", out("b").string(), "--steps", "12", "--eval-every",
                   "4", "--lr", "0.001"})
                .status,
            0);
  const fs::path svg = out("curves.svg");
  RunResult r = tool({LRU_PLOT, svg.string(),
                      (out("a") / "metrics.jsonl").string(),
                      (out("b") / "metrics.jsonl").string()});
  ASSERT_EQ(r.status, 0) << r.output;
  std::string text = readBytes(svg);
  EXPECT_EQ(text.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(text.find("<polyline"), std::string::npos);
  EXPECT_NE(text.find(">a</text>"), std::string::npos);
  EXPECT_NE(text.find(">b</text>"), std::string::npos);
  EXPECT_NE(text.find(">accuracy</text>"), std::string::npos);
  EXPECT_NE(text.find("</svg>\n"), std::string::npos);

  r = tool({LRU_PLOT, out("curves.png").string(),
            (out("a") / "metrics.jsonl").string()});
  EXPECT_EQ(r.status, 2);
  lruc::host::testing::writeBytes(out("bad.jsonl"), "{\"step\": 1}\nnope\n");
  r = tool({LRU_PLOT, svg.string(), out("bad.jsonl").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("bad.jsonl:2: not JSON: parse error at column 2"),
            std::string::npos)
      << r.output;
}

} // namespace
