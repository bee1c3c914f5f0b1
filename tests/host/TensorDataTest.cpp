//===- TensorDataTest.cpp - The tensors task's reader ---------------------===//

#include "lruc/host/TensorData.h"

#include "lruc/host/Error.h"
#include "lruc/host/Safetensors.h"

#include "ErrorOf.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace lruc::host {
namespace {

using data::Split;
using testing::errorOf;
using testing::TempDir;

struct Tensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> ints; ///< I32 or I64 values
  std::vector<float> floats; ///< F32 values
};

/// Writes `tensors` as DIR/SPLIT.safetensors.
void writeSplit(const TempDir &dir, const std::string &split,
                const std::vector<Tensor> &tensors) {
  std::vector<std::vector<int32_t>> narrow;
  narrow.reserve(tensors.size());
  std::vector<TensorToWrite> out;
  for (const Tensor &t : tensors) {
    const void *data = t.floats.data();
    if (t.dtype == DType::I64)
      data = t.ints.data();
    if (t.dtype == DType::I32)
      data = narrow.emplace_back(t.ints.begin(), t.ints.end()).data();
    out.push_back({t.name, t.dtype, t.shape, data});
  }
  writeFileAtomically(dir / (split + ".safetensors"),
                      encodeSafetensors(out, {}));
}

TEST(TensorData, TokensWithAndWithoutLengths) {
  TempDir dir;
  // Example 1 ends at its last non-zero token; example 0 is longer than the
  // model (L = 3) and is cut.
  writeSplit(dir, "train",
             {{"tokens", DType::I64, {2, 4}, {5, 6, 7, 8, 9, 3, 0, 0}, {}},
              {"labels", DType::I32, {2}, {2, 0}, {}},
              {"extra", DType::F32, {1}, {}, {1.5f}}});
  data::Dataset d = readTensorData(dir.path(), Split::Train, 3);
  EXPECT_EQ(d.invariantViolation(), "");
  EXPECT_EQ(d.kind, data::InputKind::Tokens);
  EXPECT_EQ(d.size(), 2u);
  EXPECT_EQ(d.length, 3);
  EXPECT_EQ(d.vocab, 10);
  EXPECT_EQ(d.classes, 3);
  EXPECT_EQ(d.truncated, 1);
  EXPECT_EQ(d.sequence(0).size, 3u);
  ASSERT_EQ(d.sequence(1).size, 2u);
  EXPECT_EQ(d.sequence(1)[1], 3);

  // Given lengths win over the padding rule.
  writeSplit(dir, "test",
             {{"tokens", DType::I32, {2, 4}, {5, 6, 7, 8, 9, 3, 0, 0}, {}},
              {"lengths", DType::I32, {2}, {1, 2}, {}},
              {"labels", DType::I64, {2}, {1, 1}, {}}});
  d = readTensorData(dir.path(), Split::Test, 4);
  EXPECT_EQ(d.sequence(0).size, 1u);
  EXPECT_EQ(d.truncated, 0);
  // Past given lengths tokens are not read: -1 or out of range there is
  // padding, and the vocabulary is the real tokens'.
  writeSplit(
      dir, "test",
      {{"tokens", DType::I64, {2, 4}, {5, -1, 70000, -1, 9, 3, -1, 0}, {}},
       {"lengths", DType::I32, {2}, {1, 2}, {}},
       {"labels", DType::I64, {2}, {1, 1}, {}}});
  d = readTensorData(dir.path(), Split::Test, 4);
  ASSERT_EQ(d.sequence(0).size, 1u);
  EXPECT_EQ(d.sequence(0)[0], 5);
  ASSERT_EQ(d.sequence(1).size, 2u);
  EXPECT_EQ(d.sequence(1)[1], 3);
  EXPECT_EQ(d.vocab, 10);
  EXPECT_FALSE(tensorDataHasValidation(dir.path()));
}

TEST(TensorData, PairsAndFeatures) {
  TempDir dir;
  writeSplit(dir, "val",
             {{"tokens_a", DType::I32, {1, 3}, {1, 2, 0}, {}},
              {"tokens_b", DType::I32, {1, 2}, {4, 4}, {}},
              {"labels", DType::I32, {1}, {1}, {}}});
  data::Dataset pairs = readTensorData(dir.path(), Split::Val, 8);
  EXPECT_EQ(pairs.invariantViolation(), "");
  EXPECT_EQ(pairs.kind, data::InputKind::TokenPairs);
  EXPECT_EQ(pairs.sequence(0, 0).size, 2u);
  EXPECT_EQ(pairs.sequence(0, 1).size, 2u);
  EXPECT_TRUE(tensorDataHasValidation(dir.path()));

  // Float features are fed as they are, through subsets and batches.
  writeSplit(dir, "train",
             {{"features", DType::F32, {3, 2, 1}, {}, {1, 2, 3, 4, 5, -6}},
              {"labels", DType::I32, {3}, {0, 1, 0}, {}}});
  data::Dataset features = readTensorData(dir.path(), Split::Train, 2);
  EXPECT_EQ(features.invariantViolation(), "");
  data::Dataset last = data::subset(features, {2});
  EXPECT_EQ(last.invariantViolation(), "");
  data::Batch batch = data::gather(last, {0});
  EXPECT_EQ(batch.features, (std::vector<float>{5, -6}));
  EXPECT_EQ(batch.lengths, (std::vector<int32_t>{2}));

  // With lengths, features end where each example does: the steps past
  // its end are not read (NaN there is no error) and are fed as 0.
  writeSplit(dir, "train",
             {{"features", DType::F32, {3, 2, 1}, {}, {1, NAN, 3, 4, 5, 7}},
              {"lengths", DType::I64, {3}, {1, 2, 1}, {}},
              {"labels", DType::I32, {3}, {0, 1, 0}, {}}});
  features = readTensorData(dir.path(), Split::Train, 2);
  EXPECT_EQ(features.invariantViolation(), "");
  EXPECT_EQ(features.featureLengths, (std::vector<int32_t>{1, 2, 1}));
  batch = data::gather(data::subset(features, {2, 0, 1}), {0, 1, 2});
  EXPECT_EQ(batch.features, (std::vector<float>{5, 0, 1, 0, 3, 4}));
  EXPECT_EQ(batch.lengths, (std::vector<int32_t>{1, 1, 2}));
  // Lengths of the whole L say nothing: kept as without them.
  writeSplit(dir, "train",
             {{"features", DType::F32, {1, 2, 1}, {}, {1, 2}},
              {"lengths", DType::I32, {1}, {2}, {}},
              {"labels", DType::I32, {1}, {0}, {}}});
  EXPECT_TRUE(
      readTensorData(dir.path(), Split::Train, 2).featureLengths.empty());
}

TEST(TensorData, StepLabelsAndTargets) {
  TempDir dir;
  const Tensor features{
      "features", DType::F32, {2, 3, 1}, {}, {1, 2, 3, 4, 5, 6}};
  writeSplit(
      dir, "train",
      {features, {"labels", DType::I64, {2, 3}, {0, 1, 2, 2, 1, 0}, {}}});
  data::Dataset steps = readTensorData(dir.path(), Split::Train, 3);
  EXPECT_EQ(steps.invariantViolation(), "");
  EXPECT_EQ(steps.supervision, data::Supervision::StepLabels);
  EXPECT_EQ(steps.classes, 3);
  EXPECT_EQ(steps.labels, (std::vector<int32_t>{0, 0}));
  data::Batch b = data::gather(data::subset(steps, {1}), {0});
  EXPECT_EQ(b.stepLabels, (std::vector<int32_t>{2, 1, 0}));

  // A negative step label (PyTorch's -100 too) marks a step not scored: -1.
  writeSplit(
      dir, "train",
      {features, {"labels", DType::I64, {2, 3}, {0, -100, 2, -1, 1, 0}, {}}});
  steps = readTensorData(dir.path(), Split::Train, 3);
  EXPECT_EQ(steps.invariantViolation(), "");
  EXPECT_EQ(steps.stepLabels, (std::vector<int32_t>{0, -1, 2, -1, 1, 0}));
  EXPECT_EQ(steps.classes, 3);

  writeSplit(
      dir, "train",
      {features, {"targets", DType::F32, {2, 3, 1}, {}, {0, 1, 2, 3, 4, 5}}});
  data::Dataset real = readTensorData(dir.path(), Split::Train, 3);
  EXPECT_EQ(real.invariantViolation(), "");
  EXPECT_EQ(real.supervision, data::Supervision::Targets);
  EXPECT_EQ(real.classes, 0);
  EXPECT_EQ(real.targetShape, (std::vector<int64_t>{3, 1}));
  b = data::gather(real, {1});
  EXPECT_EQ(b.targets, (std::vector<float>{3, 4, 5}));

  // NaN marks a target not scored: kept for the model's loss to leave out.
  writeSplit(dir, "train",
             {features,
              {"targets", DType::F32, {2, 3, 1}, {}, {0, NAN, 2, 3, 4, NAN}}});
  real = readTensorData(dir.path(), Split::Train, 3);
  EXPECT_EQ(real.invariantViolation(), "");
  b = data::gather(real, {1});
  EXPECT_EQ(b.targets[0], 3);
  EXPECT_TRUE(std::isnan(b.targets[2]));

  // A target an example: no step count to match.
  writeSplit(dir, "train",
             {features, {"targets", DType::F32, {2, 2}, {}, {0, 1, 2, 3}}});
  EXPECT_EQ(readTensorData(dir.path(), Split::Train, 3).targetShape,
            (std::vector<int64_t>{2}));
}

TEST(TensorData, ErrorsNameTheFileTensorAndExample) {
  TempDir dir;
  const std::string file = (dir / "train.safetensors").string();
  auto read = [&] { readTensorData(dir.path(), Split::Train, 4); };
  EXPECT_EQ(errorOf(read),
            "tensors: no " + file +
                " (the task reads train.safetensors, test.safetensors and "
                "optionally val.safetensors there; docs/data.md)");
  EXPECT_EQ(errorOf([] { readTensorData({}, Split::Train, 4); }),
            "tensors: no data directory given (one holding train.safetensors, "
            "test.safetensors and optionally val.safetensors; docs/data.md)");

  auto expect = [&](const std::vector<Tensor> &tensors,
                    const std::string &message) {
    writeSplit(dir, "train", tensors);
    EXPECT_EQ(errorOf(read), file + ": " + message);
  };
  const Tensor labels{"labels", DType::I32, {2}, {0, 1}, {}};
  const Tensor tokens{"tokens", DType::I32, {2, 2}, {1, 2, 3, 0}, {}};
  expect({tokens}, "no \"labels\" (I32 or I64 [n], or [n, L] a class a "
                   "step) or \"targets\" (F32 [n, ...]): what the model's "
                   "loss compares with");
  expect({tokens, {"labels", DType::I32, {2, 1, 1}, {0, 1}, {}}},
         "\"labels\" should be I32 or I64 [n], not [2, 1, 1]");
  expect({tokens, {"labels", DType::F32, {2}, {}, {0, 1}}},
         "tensor \"labels\" is F32; expected integers (I32 or I64)");
  expect({tokens, {"labels", DType::I32, {2}, {0, -1}, {}}},
         "\"labels\"[1] = -1 is not a class (0, 1, ...)");
  expect({labels}, "no \"tokens\", \"tokens_a\" and \"tokens_b\", or "
                   "\"features\": the inputs");
  expect({labels, {"tokens", DType::I32, {3, 2}, {1, 1, 1, 1, 1, 1}, {}}},
         "\"tokens\" should be I32 or I64 [2, L], not [3, 2]");
  expect({labels, {"tokens", DType::I64, {2, 2}, {1, 70000, 1, 1}, {}}},
         "\"tokens\"[0, 1] = 70000 is outside [0, 65536)");
  expect({labels, {"tokens", DType::I32, {2, 2}, {1, 2, 0, 0}, {}}},
         "example 1 of \"tokens\" has 0 steps, not 1 to 2 (all padding: "
         "token 0)");
  expect({labels, tokens, {"lengths", DType::I32, {2}, {2, 3}, {}}},
         "example 1 of \"tokens\" has 3 steps, not 1 to 2 (\"lengths\")");
  expect({labels, {"tokens", DType::I32, {2, 2}, {0, 2, 1, 1}, {}}},
         "\"tokens\"[0, 0] is 0, the padding token, inside a sequence of 2 "
         "steps");
  expect({labels, {"features", DType::I32, {2, 1, 1}, {1, 2}, {}}},
         "\"features\" should be F32 [2, L, C], not I32 [2, 1, 1]");
  expect({labels, {"features", DType::F32, {2, 1, 1}, {}, {1, std::nanf("")}}},
         "\"features\"[1, 0, 0] = nan is not finite");
  const Tensor features{"features", DType::F32, {2, 2, 1}, {}, {1, 2, 3, 4}};
  expect({features, labels, {"targets", DType::F32, {2, 1}, {}, {0, 0}}},
         "both \"labels\" and \"targets\": keep the one the model's loss "
         "reads");
  expect({features, {"targets", DType::F32, {2}, {}, {0, 0}}},
         "\"targets\" should be F32 [n, ...], not F32 [2]");
  expect({features, {"targets", DType::F32, {2, 1}, {}, {0, INFINITY}}},
         "\"targets\" value inf (example 1) is not finite (NaN marks a "
         "value not scored)");
  expect({features, {"targets", DType::F32, {2, 3, 1}, {}, {0, 0, 0, 0, 0, 0}}},
         "\"targets\" has 3 steps an example; the model reads 2");
  expect({features, {"labels", DType::I32, {2, 3}, {0, 0, 0, 0, 0, 0}, {}}},
         "\"labels\" has 3 steps an example; the model reads 2");
  expect({features, {"labels", DType::I64, {2, 2}, {0, 1, 1LL << 40, 0}, {}}},
         "\"labels\"[1, 0] = 1099511627776 is not a class (0, 1, ...)");
  expect({labels,
          {"features", DType::F32, {2, 2, 1}, {}, {1, 2, 3, 4}},
          {"lengths", DType::I32, {2}, {2, 3}, {}}},
         "example 1 of \"features\" has 3 steps, not 1 to 2 (\"lengths\")");
  expect({labels,
          {"features", DType::F32, {2, 2, 1}, {}, {1, 2, 3, 4}},
          {"lengths", DType::I32, {3}, {2, 1, 1}, {}}},
         "\"lengths\" should be I32 or I64 [2], not [3]");
}

} // namespace
} // namespace lruc::host
