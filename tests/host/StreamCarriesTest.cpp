//===- StreamCarriesTest.cpp - Where streams in step mode stand -----------===//

#include "ErrorOf.h"

#include "lruc/host/StreamCarries.h"

#include <gtest/gtest.h>

namespace {

using namespace lruc::host;
using lruc::host::testing::errorOf;

/// A model of two carries in a block with padding between them: a complex
/// state [3] at float 0 and a float sum [2] at float 8 (block of 10).
Manifest twoCarries() {
  Manifest m;
  m.model = "two";
  StepInfo step;
  step.carryFloats = 10;
  step.carries = {{"blocks.0.lru.state", true, {3}, 0},
                  {"pool.sum", false, {2}, 8}};
  m.step = step;
  return m;
}

TEST(StreamCarries, BlocksAndFilesKeepEachStreamsCarries) {
  const Manifest m = twoCarries();
  constexpr int64_t kRows = 3, kCount = 2;
  StreamCarries carries(*m.step, kRows);
  // A block of 2 examples: the state [2, 3] complex at 0, the sum [2, 2]
  // at 2 * 8; example b's values are 100 b + their place.
  std::vector<float> block(kCount * 10, -1.0f);
  for (int64_t b = 0; b < kCount; ++b) {
    for (int64_t i = 0; i < 6; ++i)
      block[size_t(b * 6 + i)] = float(100 * b + i);
    for (int64_t i = 0; i < 2; ++i)
      block[size_t(kCount * 8 + b * 2 + i)] = float(100 * b + 50 + i);
  }
  carries.fromBlock(block.data(), kCount, 1, 2, 7); // example 1 as row 2
  carries.fromBlock(block.data(), kCount, 0, 0, 4);

  const SafetensorsFile file = SafetensorsFile::parse(
      carries.encode({{"model", "two"}}), "carry.safetensors");
  ASSERT_NE(file.find("blocks.0.lru.state"), nullptr);
  EXPECT_EQ(file.find("blocks.0.lru.state")->shape,
            (std::vector<int64_t>{kRows, 3, 2}));
  EXPECT_EQ(file.find("pool.sum")->shape, (std::vector<int64_t>{kRows, 2}));
  EXPECT_EQ(file.integers("steps"), (std::vector<int64_t>{4, 0, 7}));

  const StreamCarries read = StreamCarries::parse(file, m, kRows);
  EXPECT_EQ(read.steps(2), 7);
  // Rows 1 and 2 into a block of 2: row 1 never stepped (zeros), row 2 is
  // example 1 of the first block; padding untouched.
  std::vector<float> back(kCount * 10, -1.0f);
  read.toBlock(1, kCount, back.data());
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(back[size_t(i)], 0.0f);
    EXPECT_EQ(back[size_t(6 + i)], float(100 + i));
  }
  EXPECT_EQ(back[16], 0.0f);
  EXPECT_EQ(back[18], 150.0f);
  EXPECT_EQ(back[19], 151.0f);
  EXPECT_EQ(back[12], -1.0f); // padding
}

TEST(StreamCarries, FilesOfAnotherShapeOrModelAreErrors) {
  const Manifest m = twoCarries();
  const std::string good = StreamCarries(*m.step, 2).encode({});
  auto parse = [&](const std::string &bytes, int64_t rows) {
    return errorOf([&] {
      StreamCarries::parse(SafetensorsFile::parse(bytes, "c.safetensors"), m,
                           rows);
    });
  };
  EXPECT_EQ(parse(good, 2), "(no error)");
  EXPECT_EQ(parse(good, 3),
            "c.safetensors: carry \"blocks.0.lru.state\" is F32 [2, 3, 2]; "
            "this model's for 3 streams is F32 [3, 3, 2]");

  std::vector<float> zeros(12, 0.0f);
  std::vector<int64_t> steps = {1, -2};
  const std::string negative = encodeSafetensors(
      {{"blocks.0.lru.state", DType::F32, {2, 3, 2}, zeros.data()},
       {"pool.sum", DType::F32, {2, 2}, zeros.data()},
       {"steps", DType::I64, {2}, steps.data()}},
      {});
  EXPECT_EQ(parse(negative, 2), "c.safetensors: \"steps\"[1] = -2 is negative");
  const std::string missing =
      encodeSafetensors({{"pool.sum", DType::F32, {2, 2}, zeros.data()},
                         {"steps", DType::I64, {2}, steps.data()}},
                        {{"model", "other"}});
  EXPECT_EQ(parse(missing, 2),
            "c.safetensors (from model other, not two): no carry "
            "\"blocks.0.lru.state\" (F32 [2, 3, 2])");
  const std::string extra = encodeSafetensors(
      {{"blocks.0.lru.state", DType::F32, {2, 3, 2}, zeros.data()},
       {"blocks.1.lru.state", DType::F32, {2, 3, 2}, zeros.data()},
       {"pool.sum", DType::F32, {2, 2}, zeros.data()},
       {"steps", DType::I64, {2}, steps.data()}},
      {});
  EXPECT_EQ(parse(extra, 2),
            "c.safetensors: \"blocks.1.lru.state\" is no carry of this model's "
            "step mode (not a carry file of lru-predict --carry-out?)");
}

} // namespace
