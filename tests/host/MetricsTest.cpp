//===- MetricsTest.cpp - metrics.jsonl ------------------------------------===//

#include "ErrorOf.h"
#include "TestUtil.h"

#include "lruc/host/Error.h"
#include "lruc/host/Metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

using namespace lruc::host;
using lruc::host::testing::errorOf;
using lruc::host::testing::readBytes;
using lruc::host::testing::TempDir;
using lruc::host::testing::writeBytes;

TEST(Metrics, WritesOneObjectALine) {
  TempDir dir;
  {
    MetricsLog log(dir / "metrics.jsonl", -1);
    log.train(1, 0, 1e-7, 2.5, 0.25, 0.1234);
    log.eval(1, 0, "val", 2.25, 0.125, 64, 0.5);
    log.train(2, 0, 1e-3, NAN, 0, 0.6);
    log.eval(3, 0, "test", 0.5, NAN, 8, 0.75, 0.625);
  }
  EXPECT_EQ(readBytes(dir / "metrics.jsonl"),
            "{\"step\":1,\"epoch\":0,\"lr\":1e-07,\"loss\":2.5,"
            "\"accuracy\":0.25,\"time\":0.123}\n"
            "{\"step\":1,\"epoch\":0,\"split\":\"val\",\"loss\":2.25,"
            "\"accuracy\":0.125,\"examples\":64,\"time\":0.5}\n"
            "{\"step\":2,\"epoch\":0,\"lr\":0.001,\"loss\":null,"
            "\"accuracy\":0.0,\"time\":0.6}\n"
            "{\"step\":3,\"epoch\":0,\"split\":\"test\",\"loss\":0.5,"
            "\"accuracy\":null,\"examples\":8,\"time\":0.75,\"mae\":0.625}\n");
  std::vector<MetricsEntry> entries = readMetrics(dir / "metrics.jsonl");
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[1].split, "val");
  EXPECT_DOUBLE_EQ(entries[0].accuracy, 0.25);
  EXPECT_DOUBLE_EQ(entries[1].accuracy, 0.125);
  EXPECT_TRUE(std::isnan(entries[2].loss));
}

TEST(Metrics, ResumingDropsWhatCameAfterTheCheckpoint) {
  TempDir dir;
  writeBytes(dir / "metrics.jsonl",
             "{\"step\":1,\"loss\":1}\n{\"step\":2,\"loss\":1}\n"
             "{\"step\":3,\"loss\":1}\n{\"step\":4,\"lo");
  {
    MetricsLog log(dir / "metrics.jsonl", 2);
    log.train(3, 0, 0.1, 0.5, 0.75, 1.0);
  }
  std::vector<MetricsEntry> entries = readMetrics(dir / "metrics.jsonl");
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[2].step, 3);
  EXPECT_DOUBLE_EQ(entries[2].loss, 0.5);
}

// lru-plot on a run that is writing its log: a last line not yet whole (no
// newline) is not a record; a whole line that is not JSON still is an error.
TEST(Metrics, ALastLineBeingWrittenIsPassedOver) {
  TempDir dir;
  const std::string file = (dir / "m.jsonl").string();
  writeBytes(file, "{\"step\":1,\"loss\":1}\n{\"step\":2,\"lo");
  std::vector<MetricsEntry> entries = readMetrics(file);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].step, 1);
  writeBytes(file, "{\"step\":1,\"loss\":1}\n{\"step\":2,\"lo\n");
  EXPECT_THROW(readMetrics(file), HostError);
}

TEST(Metrics, MalformedLinesNameTheLine) {
  TempDir dir;
  const std::string file = (dir / "m.jsonl").string();
  auto read = [&] { readMetrics(file); };
  writeBytes(file, "{\"step\":1}\n\nnot json\n");
  EXPECT_EQ(errorOf(read),
            file + ":3: not JSON: parse error at column 2: syntax error while "
                   "parsing value - invalid literal; last read: 'no'");
  writeBytes(file, "[1, 2]\n");
  EXPECT_EQ(errorOf(read), file + ":1: not a JSON object");
  writeBytes(file, "{\"step\":1,\"loss\":1e400}\n");
  EXPECT_EQ(errorOf(read),
            file + ":1: not JSON: number overflow parsing '1e400'");
  writeBytes(file, "\n\n");
  EXPECT_EQ(errorOf(read), file + ": no records (a run that has not logged "
                                  "its first steps yet?)");
  writeBytes(dir / "m.jsonl", "{\"loss\":1}\n");
  EXPECT_THROW(readMetrics(dir / "m.jsonl"), HostError);
  writeBytes(dir / "m.jsonl", "{\"step\":1,\"loss\":\"x\"}\n");
  EXPECT_THROW(readMetrics(dir / "m.jsonl"), HostError);
  EXPECT_THROW(readMetrics(dir / "none.jsonl"), HostError);
}

} // namespace
