//===- MemoryTest.cpp - The memory a process may plan to take -------------===//

#include "lruc/host/Memory.h"

#include <gtest/gtest.h>

namespace {

using namespace lruc::host;

TEST(Memory, AvailableFromTheKernelsTexts) {
  const char *meminfo = "MemTotal:       24000000 kB\n"
                        "MemFree:        20000000 kB\n"
                        "MemAvailable:   22000000 kB\n";
  EXPECT_EQ(availableMemoryFrom(meminfo, "", "", std::nullopt),
            std::optional<uint64_t>(22000000ull * 1024));
  // A cgroup's cap less what it holds, when lower; "max" is no cap.
  EXPECT_EQ(availableMemoryFrom(meminfo, "4294967296\n", "1073741824\n",
                                std::nullopt),
            std::optional<uint64_t>(3ull << 30));
  EXPECT_EQ(availableMemoryFrom(meminfo, "max\n", "1073741824\n", std::nullopt),
            std::optional<uint64_t>(22000000ull * 1024));
  EXPECT_EQ(availableMemoryFrom(meminfo, "100\n", "200\n", std::nullopt),
            std::optional<uint64_t>(0));
  // The user's limit, when lower; with nothing else known, it alone.
  EXPECT_EQ(availableMemoryFrom(meminfo, "", "", uint64_t(5000)),
            std::optional<uint64_t>(5000));
  EXPECT_EQ(availableMemoryFrom("", "", "", uint64_t(5000)),
            std::optional<uint64_t>(5000));
  EXPECT_FALSE(availableMemoryFrom("MemFree: 5 kB\n", "", "", std::nullopt));
  // This machine's, read from /proc: some memory is available.
  const std::optional<uint64_t> here = availableMemoryBytes();
  ASSERT_TRUE(here.has_value());
  EXPECT_GT(*here, 0u);
}

TEST(Memory, ByteSizes) {
  EXPECT_EQ(parseByteSize("1073741824"), std::optional<uint64_t>(1ull << 30));
  EXPECT_EQ(parseByteSize("8G"), std::optional<uint64_t>(8ull << 30));
  EXPECT_EQ(parseByteSize("8GiB"), std::optional<uint64_t>(8ull << 30));
  EXPECT_EQ(parseByteSize("8gb"), std::optional<uint64_t>(8ull << 30));
  EXPECT_EQ(parseByteSize("512M"), std::optional<uint64_t>(512ull << 20));
  EXPECT_EQ(parseByteSize("3K"), std::optional<uint64_t>(3072));
  EXPECT_EQ(parseByteSize("2T"), std::optional<uint64_t>(2ull << 40));
  for (const char *bad :
       {"", "G", "lots", "8X", "8GBs", "-1", "1.5G", "99999999999T"})
    EXPECT_FALSE(parseByteSize(bad)) << bad;
}

TEST(Memory, CallsThatFit) {
  EXPECT_EQ(callsThatFit(8, uint64_t(100), uint64_t(350)), 3);
  EXPECT_EQ(callsThatFit(2, uint64_t(100), uint64_t(350)), 2);
  // One runs whatever the memory (it says itself when it cannot).
  EXPECT_EQ(callsThatFit(8, uint64_t(100), uint64_t(0)), 1);
  // Unknown sizes limit nothing.
  EXPECT_EQ(callsThatFit(8, std::nullopt, uint64_t(0)), 8);
  EXPECT_EQ(callsThatFit(8, uint64_t(100), std::nullopt), 8);
  EXPECT_EQ(callsThatFit(0, uint64_t(100), uint64_t(350)), 1);
}

} // namespace
