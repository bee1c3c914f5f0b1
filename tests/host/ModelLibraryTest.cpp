//===- ModelLibraryTest.cpp - Loading model libraries ---------------------===//

#include "TestUtil.h"

#include "lruc/host/ModelLibrary.h"

#include <gtest/gtest.h>

namespace {

using namespace lruc::host;
using lruc::host::testing::TempDir;

std::string openError(const std::string &path) {
  try {
    ModelLibrary::open(path);
  } catch (const HostError &e) {
    return e.what();
  }
  return "(opened)";
}

TEST(ModelLibrary, MissingFile) {
  TempDir dir;
  std::string path = (dir / "model.so").string();
  EXPECT_EQ(openError(path), path + ": no such file");
}

TEST(ModelLibrary, Directory) {
  TempDir dir;
  EXPECT_NE(openError(dir.path().string()).find("is a directory, not a model "
                                                "library"),
            std::string::npos);
}

TEST(ModelLibrary, TextFileNamedSo) {
  TempDir dir;
  std::string path = (dir / "model.so").string();
  lruc::host::testing::writeBytes(path, "model fashion_mnist { }\n");
  std::string error = openError(path);
  EXPECT_EQ(error.rfind(path + ": not a shared library: ", 0), 0u) << error;
  // dlerror's own text says why.
  EXPECT_NE(error.find("model.so"), std::string::npos) << error;
}

TEST(ModelLibrary, SharedLibraryWithoutTheSymbol) {
  std::string path = LRUC_FAKE_MODEL_NOSYMBOL;
  EXPECT_EQ(openError(path),
            path + ": not an lruc model library (no lruc_model_get symbol; "
                   "make one with `lruc model.lru -o model.so`)");
}

TEST(ModelLibrary, AnotherAbiVersion) {
  std::string path = LRUC_FAKE_MODEL_OLD;
  EXPECT_EQ(openError(path),
            path + ": built for ABI v1, this runtime speaks v" +
                std::to_string(LRUC_ABI_VERSION) + ": rebuild it with this lruc");
}

// The fake model has no step mode: the manifest says so, and calling it is
// an error naming the library and the reason, not a crash.
TEST(ModelLibrary, WithoutStepMode) {
  ModelLibrary library = ModelLibrary::open(LRUC_FAKE_MODEL);
  EXPECT_FALSE(library.manifest().step);
  EXPECT_EQ(library.manifest().stepUnavailable, "the library has no step mode");
  std::vector<float> carry(1);
  try {
    library.stepReset(1, carry.data());
    FAIL() << "stepReset without a step mode";
  } catch (const HostError &e) {
    EXPECT_EQ(std::string(e.what()),
              std::string(LRUC_FAKE_MODEL) +
                  ": step_reset: the library has no step mode");
  }
}

TEST(ModelLibrary, ReadsTheManifest) {
  ModelLibrary library = ModelLibrary::open(LRUC_FAKE_MODEL);
  const Manifest &m = library.manifest();
  EXPECT_EQ(m.model, "fake");
  EXPECT_EQ(m.paramFloats, 7850u);
  EXPECT_EQ(m.stateFloats, 1u);
  ASSERT_EQ(m.params.size(), 2u);
  EXPECT_EQ(m.params[0].name, "head.weight");
  EXPECT_EQ(m.params[0].group, ParamGroup::Decay);
  EXPECT_EQ(m.params[0].shape, (std::vector<int64_t>{10, 784}));
  EXPECT_EQ(m.params[1].group, ParamGroup::Recurrent);
  EXPECT_EQ(m.params[1].offset, 7840u);
  EXPECT_EQ(m.params[1].init, R"({"kind":"zeros"})");
  ASSERT_EQ(m.state.size(), 1u);
  EXPECT_EQ(m.state[0].name, "norm.running_mean");
  ASSERT_EQ(m.inputs.size(), 3u);
  EXPECT_EQ(m.inputs[0].name, "features");
  EXPECT_EQ(m.inputs[0].shape, (std::vector<int64_t>{-1, 784, 1}));
  EXPECT_EQ(m.inputs[2].dtype, DType::I32);
  ASSERT_EQ(m.outputs.size(), 2u);
  EXPECT_EQ(m.outputs[1].shape, (std::vector<int64_t>{-1, 10}));
  EXPECT_NE(m.findParam("head.bias"), nullptr);
  EXPECT_EQ(m.findParam("nope"), nullptr);
  // What a call leases: per example times the batch, plus the fixed part;
  // unknown for a function the manifest does not name.
  EXPECT_EQ(m.workspaceBytes("forward", 10), std::optional<uint64_t>(32064));
  EXPECT_EQ(m.workspaceBytes("forward", 0), std::optional<uint64_t>(64));
  EXPECT_FALSE(m.workspaceBytes("train_step", 10));
  EXPECT_FALSE(m.workspaceBytes("forward", -1));

  ASSERT_TRUE(m.train.has_value());
  const TrainSettings &t = *m.train;
  EXPECT_EQ(t.task, "fashion_mnist");
  EXPECT_EQ(t.batch, 32);
  EXPECT_EQ(t.steps, 40);
  EXPECT_FALSE(t.epochs.has_value());
  EXPECT_DOUBLE_EQ(t.lr, 0.01);
  EXPECT_EQ(t.schedule, ScheduleKind::WarmupCosine);
  EXPECT_DOUBLE_EQ(t.recurrentLrFactor, 0.5);
  EXPECT_EQ(t.evalEvery, 10);
  EXPECT_EQ(t.seed, 1u);
  EXPECT_FALSE(library.hasCuda());
}

TEST(ModelLibrary, WithoutTrainSettings) {
  ModelLibrary library = ModelLibrary::open(LRUC_FAKE_MODEL_NOTRAIN);
  EXPECT_FALSE(library.manifest().train.has_value());
}

TEST(ModelLibrary, OpensAPlainFileNameInTheCurrentDirectory) {
  TempDir dir;
  std::filesystem::copy_file(LRUC_FAKE_MODEL, dir / "fake.so");
  auto previous = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  std::string error;
  try {
    ModelLibrary library = ModelLibrary::open("fake.so");
    EXPECT_EQ(library.manifest().model, "fake");
  } catch (const HostError &e) {
    error = e.what();
  }
  std::filesystem::current_path(previous);
  EXPECT_EQ(error, "");
}

TEST(ModelLibrary, EntryPointErrorsNameTheLibrary) {
  ModelLibrary library = ModelLibrary::open(LRUC_FAKE_MODEL);
  const Manifest &m = library.manifest();
  std::vector<float> params(m.paramFloats), state(m.stateFloats);
  library.init(1, params.data(), state.data());
  std::vector<float> features(784, 0.5f), loss(1), predictions(10);
  std::vector<int32_t> lengths = {784}, labels = {12};
  const void *inputs[] = {features.data(), lengths.data(), labels.data()};
  float *outputs[] = {loss.data(), predictions.data()};
  try {
    library.forward(1, params.data(), state.data(), inputs, outputs);
    FAIL();
  } catch (const HostError &e) {
    EXPECT_EQ(std::string(e.what()),
              std::string(LRUC_FAKE_MODEL) + ": forward: label 12 is not in 0..9");
  }
  labels[0] = 3;
  library.forward(1, params.data(), state.data(), inputs, outputs);
  EXPECT_GT(loss[0], 0.0f);
}

TEST(ModelLibrary, MovesKeepTheLibraryOpen) {
  ModelLibrary a = ModelLibrary::open(LRUC_FAKE_MODEL);
  ModelLibrary b = std::move(a);
  ModelLibrary c = ModelLibrary::open(LRUC_FAKE_MODEL_NOTRAIN);
  c = std::move(b);
  std::vector<float> params(c.manifest().paramFloats), state(1);
  c.init(3, params.data(), state.data());
  EXPECT_EQ(c.manifest().model, "fake");
}

TEST(TrainSettings, Errors) {
  EXPECT_THROW(parseTrainSettings("{", "m.so"), HostError);
  EXPECT_THROW(parseTrainSettings("[]", "m.so"), HostError);
  try {
    parseTrainSettings(R"({"schedule": "linear"})", "m.so");
    FAIL();
  } catch (const HostError &e) {
    EXPECT_EQ(std::string(e.what()), "m.so: unknown schedule \"linear\" "
                                     "(known: constant, warmup_cosine)");
  }
  EXPECT_THROW(parseTrainSettings(R"({"batch": "big"})", "m.so"), HostError);
  TrainSettings s = parseTrainSettings(R"({"seed": 7, "epochs": 2})", "m.so");
  EXPECT_EQ(s.dropoutSeed, 7u); // defaults to the seed
  EXPECT_EQ(s.epochs, 2);
}

} // namespace
