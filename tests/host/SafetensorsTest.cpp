//===- SafetensorsTest.cpp - The safetensors format and atomic writes -----===//

#include "TestUtil.h"

#include "lruc/host/Safetensors.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using namespace lruc::host;
using lruc::host::testing::TempDir;

/// A header + data built by hand, for files the writer would never make.
std::string fileWithHeader(const std::string &header, size_t dataBytes) {
  std::string out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out.push_back(char(n >> (8 * i) & 0xff));
  return out + header + std::string(dataBytes, '\0');
}

/// How many files and folders `dir` holds.
size_t entriesIn(const TempDir &dir) {
  size_t entries = 0;
  for (auto &entry : std::filesystem::directory_iterator(dir.path()))
    (void)entry, ++entries;
  return entries;
}

/// The error writeFileAtomically(path, ...) throws ("(written)" if none).
std::string writeError(const std::filesystem::path &path) {
  try {
    writeFileAtomically(path, "x");
  } catch (const HostError &e) {
    return e.what();
  }
  return "(written)";
}

std::string parseError(const std::string &bytes) {
  try {
    SafetensorsFile::parse(bytes, "x.safetensors");
  } catch (const HostError &e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(Safetensors, RoundTrip) {
  std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f};
  std::vector<int64_t> b = {1, -2, int64_t(1) << 40};
  std::vector<int32_t> c = {42};
  std::string bytes = encodeSafetensors(
      {{"a", DType::F32, {2, 3}, a.data()},
       {"b", DType::I64, {3}, b.data()},
       {"scalar", DType::I32, {}, c.data()}},
      {{"step", "12"}, {"note", "hello \"world\""}});
  // The data starts 8-byte aligned, as the reference writer's does.
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  EXPECT_EQ(header % 8, 0u);

  SafetensorsFile file = SafetensorsFile::parse(bytes, "x.safetensors");
  EXPECT_EQ(file.metadata().at("step"), "12");
  EXPECT_EQ(file.metadata().at("note"), "hello \"world\"");
  ASSERT_EQ(file.tensors().size(), 3u);
  EXPECT_EQ(file.find("a")->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(file.find("scalar")->shape, std::vector<int64_t>{});
  std::vector<float> a2(6);
  file.copyTo("a", DType::F32, a2.data(), 6);
  EXPECT_EQ(std::memcmp(a.data(), a2.data(), sizeof(float) * 6), 0);
  std::vector<int64_t> b2(3);
  file.copyTo("b", DType::I64, b2.data(), 3);
  EXPECT_EQ(b, b2);
  EXPECT_THROW(file.copyTo("a", DType::I64, b2.data(), 3), HostError);
  EXPECT_THROW(file.copyTo("missing", DType::F32, a2.data(), 6), HostError);
}

TEST(Safetensors, TheHeaderIsWhatOtherReadersExpect) {
  std::vector<float> a = {1, 2};
  std::string bytes =
      encodeSafetensors({{"w", DType::F32, {2}, a.data()}}, {{"k", "v"}});
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            R"({"__metadata__":{"k":"v"},"w":{"dtype":"F32","shape":[2],)"
            R"("data_offsets":[0,8]}})");
  EXPECT_EQ(bytes.size(), 8 + n + 8);
}

TEST(Safetensors, EmptyFileOfNoTensors) {
  std::string bytes = encodeSafetensors({}, {});
  SafetensorsFile file = SafetensorsFile::parse(bytes, "x.safetensors");
  EXPECT_TRUE(file.tensors().empty());
}

TEST(Safetensors, EmptyTensorsCopyNothing) {
  // No values: a null destination is fine (no memcpy of 0 bytes from it).
  std::string bytes = encodeSafetensors({{"none", DType::F32, {0, 3}, nullptr},
                                         {"ids", DType::I64, {0}, nullptr}},
                                        {});
  SafetensorsFile file = SafetensorsFile::parse(bytes, "x.safetensors");
  file.copyTo("none", DType::F32, nullptr, 0);
  EXPECT_TRUE(file.integers("ids").empty());
}

TEST(Safetensors, WriterRejectsDuplicateNames) {
  float x = 0;
  EXPECT_THROW(encodeSafetensors({{"a", DType::F32, {1}, &x},
                                  {"a", DType::F32, {1}, &x}},
                                 {}),
               HostError);
  EXPECT_THROW(encodeSafetensors({{"__metadata__", DType::F32, {1}, &x}}, {}),
               HostError);
}

TEST(Safetensors, CorruptFilesAreClearErrors) {
  EXPECT_NE(parseError("").find("x.safetensors: not a valid safetensors "
                                "file: 0 bytes, shorter than the 8-byte"),
            std::string::npos);
  // A header size larger than the file: truncated.
  std::string truncated = fileWithHeader(R"({"a":{}})", 0);
  truncated[0] = 100;
  EXPECT_NE(parseError(truncated).find("runs past the end of the file"),
            std::string::npos);
  // A header size over the 100 MB limit.
  std::string huge(16, '\0');
  huge[7] = 0x7f;
  EXPECT_NE(parseError(huge).find("exceeds the limit"), std::string::npos);
  EXPECT_NE(parseError(fileWithHeader("[1, 2]", 0)).find("not a JSON object"),
            std::string::npos);
  EXPECT_NE(parseError(fileWithHeader("{\"a\": ", 0)).find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(
      parseError(fileWithHeader(
                     R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})",
                     2))
          .find("tensor \"a\": dtype \"F16\" (lruc reads F32, I32, I64)"),
      std::string::npos);
  EXPECT_NE(
      parseError(fileWithHeader(
                     R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
                     4))
          .find("not a non-negative integer"),
      std::string::npos);
  EXPECT_NE(
      parseError(fileWithHeader(
                     R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})",
                     4))
          .find("hold 4 bytes; dtype F32 shape [2] needs 8"),
      std::string::npos);
  EXPECT_NE(
      parseError(fileWithHeader(
                     R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                     4))
          .find("run past the end of the data (4 bytes): truncated?"),
      std::string::npos);
  EXPECT_NE(parseError(fileWithHeader(
                           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                           8))
                .find("overlaps"),
            std::string::npos);
  EXPECT_NE(parseError(fileWithHeader(
                           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                           8))
                .find("bytes [0, 4) of the data belong to no tensor"),
            std::string::npos);
  EXPECT_NE(parseError(fileWithHeader(
                           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                           8))
                .find("4 bytes after the last tensor"),
            std::string::npos);
  EXPECT_NE(parseError(fileWithHeader(
                           R"({"__metadata__":{"step":3}})", 0))
                .find("__metadata__ entry \"step\" is not a string"),
            std::string::npos);
  // Dims whose product overflows 64 bits.
  EXPECT_NE(parseError(fileWithHeader(
                           R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],)"
                           R"("data_offsets":[0,0]}})",
                           0))
                .find("too large"),
            std::string::npos);
}

TEST(Safetensors, EveryTruncationIsAnError) {
  std::vector<float> a(64, 1.0f);
  std::string bytes =
      encodeSafetensors({{"a", DType::F32, {8, 8}, a.data()}}, {{"k", "v"}});
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(SafetensorsFile::parse(bytes.substr(0, n), "x"), HostError)
        << n << " bytes";
}

TEST(Safetensors, ReadNamesAMissingFile) {
  TempDir dir;
  try {
    SafetensorsFile::read(dir / "nope.safetensors");
    FAIL();
  } catch (const HostError &e) {
    EXPECT_EQ(std::string(e.what()), (dir / "nope.safetensors").string() +
                                         ": no such file");
  }
}

TEST(AtomicWrite, ReplacesTheFileAndLeavesNoTemporary) {
  TempDir dir;
  writeFileAtomically(dir / "f", "old");
  writeFileAtomically(dir / "f", "new contents");
  EXPECT_EQ(lruc::host::testing::readBytes(dir / "f"), "new contents");
  EXPECT_EQ(entriesIn(dir), 1u);
}

// A symbolic link keeps pointing where it did: its target is what a save
// replaces, also a target not written yet.
TEST(AtomicWrite, ReplacesALinksTargetAndKeepsTheLink) {
  TempDir dir;
  std::filesystem::create_directory(dir / "real");
  writeFileAtomically(dir / "real/f", "old");
  std::filesystem::create_symlink("real/f", dir / "link");
  writeFileAtomically(dir / "link", "new");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link"));
  EXPECT_EQ(lruc::host::testing::readBytes(dir / "real/f"), "new");

  std::filesystem::create_symlink("real/g", dir / "ahead");
  writeFileAtomically(dir / "ahead", "first");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "ahead"));
  EXPECT_EQ(lruc::host::testing::readBytes(dir / "real/g"), "first");
}

// What is not a regular file (a pipe here; /dev/null alike) is written
// through, not renamed over: it is still a pipe afterwards.
TEST(AtomicWrite, WritesIntoAPipe) {
  TempDir dir;
  const auto pipe = dir / "pipe";
  ASSERT_EQ(mkfifo(pipe.c_str(), 0600), 0);
  // Its reading end opened first (without waiting for a writer), so the
  // few bytes wait in the pipe's buffer.
  const int reader = open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  writeFileAtomically(pipe, "through the pipe");
  char received[64] = {};
  const ssize_t length = read(reader, received, sizeof received);
  close(reader);
  EXPECT_EQ(std::string(received, size_t(std::max<ssize_t>(length, 0))),
            "through the pipe");
  EXPECT_TRUE(std::filesystem::is_fifo(pipe));
  EXPECT_EQ(entriesIn(dir), 1u);
}

TEST(AtomicWrite, FailsClearlyInAMissingDirectory) {
  TempDir dir;
  EXPECT_NE(
      writeError(dir / "no/such/dir/f")
          .find("no/such/dir/f: cannot create a temporary file next to it"),
      std::string::npos);
}

TEST(AtomicWrite, RefusesADirectory) {
  TempDir dir;
  std::filesystem::create_directory(dir / "out");
  const std::string error = writeError(dir / "out");
  EXPECT_NE(error.find("out: is a directory, not a file"), std::string::npos)
      << error;
  // Nothing was left beside it.
  EXPECT_EQ(entriesIn(dir), 1u);
}

// A file read whole in blocks: a regular file (its size known) and a pipe
// (read until its end, past the first 1 MiB block).
TEST(ReadWholeFile, RegularFileAndPipe) {
  TempDir dir;
  std::string bytes(3 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = char(i * 2654435761u >> 24);
  writeFileAtomically(dir / "f", bytes);
  EXPECT_EQ(readWholeFile(dir / "f"), bytes);
  writeFileAtomically(dir / "empty", "");
  EXPECT_EQ(readWholeFile(dir / "empty"), "");

  const auto pipe = dir / "pipe";
  ASSERT_EQ(mkfifo(pipe.c_str(), 0600), 0);
  std::thread writer([&] {
    const int fd = open(pipe.c_str(), O_WRONLY);
    for (size_t at = 0; fd >= 0 && at < bytes.size();) {
      const ssize_t n = write(fd, bytes.data() + at, bytes.size() - at);
      if (n <= 0)
        break;
      at += size_t(n);
    }
    close(fd);
  });
  const std::string read = readWholeFile(pipe);
  writer.join();
  EXPECT_EQ(read, bytes);
}

// A device named by mistake is refused before a read that would not end.
TEST(ReadWholeFile, RefusesADevice) {
  try {
    readWholeFile("/dev/zero");
    FAIL() << "read /dev/zero";
  } catch (const HostError &e) {
    EXPECT_STREQ(e.what(), "/dev/zero: is a device, not a file");
  }
}

// A writer killed in the middle of a save leaves the old file whole.
TEST(AtomicWrite, SurvivesAKillMidSave) {
  TempDir dir;
  const auto path = dir / "checkpoint.safetensors";
  std::vector<float> small(16, 1.0f);
  writeFileAtomically(path, encodeSafetensors(
                                {{"w", DType::F32, {16}, small.data()}},
                                {{"step", "1"}}));

  // The child writes 512 MiB over it, a chunk at a time through the same
  // function; the parent kills it once the temporary file has started.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<float> big(size_t(128) << 20, 2.0f);
    writeFileAtomically(path, encodeSafetensors(
                                  {{"w", DType::F32,
                                    {int64_t(big.size())}, big.data()}},
                                  {{"step", "2"}}));
    _exit(0);
  }
  bool sawTemporary = false;
  for (int i = 0; i < 20000 && !sawTemporary; ++i) {
    for (auto &entry : std::filesystem::directory_iterator(dir.path()))
      if (entry.path().filename().string().find(".tmp-") != std::string::npos &&
          entry.file_size() > 0)
        sawTemporary = true;
    if (!sawTemporary)
      std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(sawTemporary) << "the child never started writing";
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before the kill";

  SafetensorsFile file = SafetensorsFile::read(path);
  EXPECT_EQ(file.metadata().at("step"), "1");
  EXPECT_EQ(file.find("w")->shape, std::vector<int64_t>{16});
}

} // namespace
