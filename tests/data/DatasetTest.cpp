//===- DatasetTest.cpp - Splits, subsets and batches ----------------------===//

#include "lruc/data/Dataset.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace lruc::data;

namespace {

Dataset tokens(int64_t length) {
  Dataset d;
  d.kind = InputKind::Tokens;
  d.length = length;
  d.vocab = 10;
  d.classes = 3;
  return d;
}

TEST(Dataset, SequencesAreRaggedAndCutToLength) {
  Dataset d = tokens(3);
  const uint16_t a[] = {1, 2}, b[] = {3, 4, 5, 6, 7};
  d.addSequence(a, 2, 0);
  d.addSequence(b, 5, 2);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d.truncated, 1);
  EXPECT_EQ(d.sequence(0).size, 2u);
  EXPECT_EQ(std::vector<uint16_t>(d.sequence(1).begin(), d.sequence(1).end()),
            (std::vector<uint16_t>{3, 4, 5}));
  EXPECT_EQ(d.invariantViolation(), "");
}

TEST(Dataset, GatherPadsTokensWithZero) {
  Dataset d = tokens(4);
  const uint16_t a[] = {1, 2}, b[] = {3, 4, 5, 6};
  d.addSequence(a, 2, 1);
  d.addSequence(b, 4, 2);
  Batch batch = gather(d, {1, 0, 1});
  EXPECT_EQ(batch.kind, InputKind::Tokens);
  EXPECT_EQ(batch.size, 3);
  EXPECT_EQ(batch.length, 4);
  EXPECT_EQ(batch.tokens,
            (std::vector<int32_t>{3, 4, 5, 6, 1, 2, 0, 0, 3, 4, 5, 6}));
  EXPECT_EQ(batch.lengths, (std::vector<int32_t>{4, 2, 4}));
  EXPECT_EQ(batch.labels, (std::vector<int32_t>{2, 1, 2}));
  EXPECT_TRUE(batch.features.empty());
  EXPECT_TRUE(batch.tokensB.empty());
  EXPECT_THROW(gather(d, {2}), std::out_of_range);
}

TEST(Dataset, PairsKeepTwoSequencesPerExample) {
  Dataset d = tokens(3);
  d.kind = InputKind::TokenPairs;
  const uint16_t a[] = {1}, b[] = {2, 3, 4, 5};
  d.addPair(a, 1, b, 4, 1);
  d.addPair(b, 2, a, 1, 0);
  EXPECT_EQ(d.truncated, 1);
  EXPECT_EQ(d.invariantViolation(), "");
  Batch batch = gather(d, {0, 1});
  EXPECT_EQ(batch.tokens, (std::vector<int32_t>{1, 0, 0, 2, 3, 0}));
  EXPECT_EQ(batch.lengths, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(batch.tokensB, (std::vector<int32_t>{2, 3, 4, 1, 0, 0}));
  EXPECT_EQ(batch.lengthsB, (std::vector<int32_t>{3, 1}));
  EXPECT_EQ(batch.labels, (std::vector<int32_t>{1, 0}));
}

TEST(Dataset, FeaturesAreNormalisedPerChannel) {
  Dataset d;
  d.kind = InputKind::Features;
  d.length = 2;
  d.channels = 2;
  d.classes = 2;
  d.mean = {0.5f, 0.0f};
  d.stddev = {0.25f, 1.0f};
  d.pixels = {0, 255, 255, 51, /* example 1 */ 128, 0, 0, 0};
  d.labels = {1, 0};
  ASSERT_EQ(d.invariantViolation(), "");
  Batch batch = gather(d, {0});
  ASSERT_EQ(batch.features.size(), 4u);
  EXPECT_FLOAT_EQ(batch.features[0], -2.0f); // (0 - 0.5) / 0.25
  EXPECT_FLOAT_EQ(batch.features[1], 1.0f);
  EXPECT_FLOAT_EQ(batch.features[2], 2.0f);  // (1 - 0.5) / 0.25
  EXPECT_FLOAT_EQ(batch.features[3], 0.2f);
  EXPECT_EQ(batch.lengths, (std::vector<int32_t>{2}));
  EXPECT_TRUE(batch.tokens.empty());
}

TEST(Dataset, SubsetAndSliceCopyExamples) {
  Dataset d = tokens(4);
  for (uint16_t i = 1; i <= 5; ++i) {
    std::vector<uint16_t> seq(i % 4 + 1, i);
    d.addSequence(seq.data(), seq.size(), i % 3);
  }
  Dataset s = subset(d, {4, 0});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.labels, (std::vector<int32_t>{5 % 3, 1 % 3}));
  EXPECT_EQ(s.sequence(0)[0], 5);
  EXPECT_EQ(s.sequence(1)[0], 1);
  EXPECT_EQ(s.invariantViolation(), "");
  Dataset t = slice(d, 1, 3);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.sequence(0)[0], 2);
  EXPECT_THROW(slice(d, 3, 6), std::out_of_range);
  EXPECT_THROW(subset(d, {5}), std::out_of_range);
}

TEST(Dataset, InvariantViolations) {
  Dataset d = tokens(2);
  const uint16_t bad[] = {10};
  d.addSequence(bad, 1, 0);
  EXPECT_EQ(d.invariantViolation(), "token 10 is not in [1, 10)");
  Dataset e = tokens(2);
  const uint16_t ok[] = {1};
  e.addSequence(ok, 1, 3);
  EXPECT_EQ(e.invariantViolation(), "label 3 of example 0 is not in [0, 3)");

  Dataset f; // float features of their own lengths
  f.kind = InputKind::Features;
  f.length = 2;
  f.channels = 1;
  f.classes = 2;
  f.labels = {0, 1};
  f.values = {1, 0, 2, 3};
  f.featureLengths = {1, 2};
  EXPECT_EQ(f.invariantViolation(), "");
  f.values[1] = 5;
  EXPECT_EQ(f.invariantViolation(), "example 0 has values past its 1 steps");
  f.values[1] = 0;
  f.featureLengths = {1, 3};
  EXPECT_EQ(f.invariantViolation(), "example 1 has 3 steps, not 1 to 2");
  f.featureLengths = {1};
  EXPECT_EQ(f.invariantViolation(), "1 feature lengths for 2 examples");
}

TEST(Dataset, SplitNames) {
  EXPECT_EQ(splitName(Split::Train), "train");
  EXPECT_EQ(splitName(Split::Val), "val");
  EXPECT_EQ(splitName(Split::Test), "test");
}

} // namespace
