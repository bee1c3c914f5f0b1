//===- TasksTest.cpp - Reading a task by its name -------------------------===//

#include "lruc/data/Tasks.h"

#include "lruc/data/ListOps.h"
#include "lruc/data/Pathfinder.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace lruc::data;
using lruc::data::test::errorOf;
using lruc::data::test::TempDir;

namespace {

TEST(Tasks, ReadsByName) {
  TempDir dir;
  ListOpsConfig config;
  config.maxDepth = 4;
  config.minLength = 4;
  config.maxLength = 50;
  writeListOps(dir / "listops-1000", config, 1, 5, 2, 2);
  Dataset d = readTask("listops", dir.path(), Split::Test, 2048);
  EXPECT_EQ(d.size(), 2u);
  EXPECT_EQ(d.length, 2048);
  writePathfinder(dir.path(), PathfinderConfig::forSize(32, 14), 1, 10);
  EXPECT_EQ(readTask("pathfinder", dir.path(), Split::Train, 1024).size(), 8u);
  EXPECT_EQ(readTask("pathfinder", dir.path(), Split::Val, 0).size(), 1u);
}

TEST(Tasks, Errors) {
  TempDir dir;
  writePathfinder(dir.path(), PathfinderConfig::forSize(32, 14), 1, 10);
  EXPECT_EQ(errorOf([&] { readTask("pathfinder", dir.path(), Split::Train, 2048); }),
            "pathfinder: images are sequences of 1024 steps; the model reads 2048");
  EXPECT_EQ(errorOf([&] { readTask("listops", {}, Split::Train, 2048); }),
            "listops: no data directory given (the LRA release, or data made "
            "by the generators; docs/data.md)");
  EXPECT_EQ(errorOf([&] { readTask("imagenet", dir.path(), Split::Train, 1); }),
            "unknown task 'imagenet' (known: listops, text, retrieval, cifar, "
            "pathfinder, pathx, fashion_mnist; and tensors, files of your "
            "own)");
}

TEST(Tasks, ValidationSplits) {
  for (const char *task : {"listops", "retrieval", "pathfinder", "pathx"})
    EXPECT_TRUE(hasValidationSplit(task)) << task;
  for (const char *task : {"text", "cifar", "fashion_mnist"})
    EXPECT_FALSE(hasValidationSplit(task)) << task;
  // What the readers do: fashion_mnist (installed by Debian here, when it
  // is) rejects Split::Val.
  if (std::filesystem::exists("/usr/share/datasets/fashion-mnist")) {
    EXPECT_THROW(readTask("fashion_mnist", {}, Split::Val, 0), DataError);
  }
}

} // namespace
