//===- Tasks.cpp - Read a task's split by its name ------------------------===//

#include "lruc/data/Tasks.h"

#include "Common.h"
#include "lruc/data/Images.h"
#include "lruc/data/ListOps.h"
#include "lruc/data/Pathfinder.h"
#include "lruc/data/Text.h"

namespace lruc::data {

namespace {

Dataset image(Dataset dataset, std::string_view task, int64_t length) {
  if (length != 0 && length != dataset.length)
    throw DataError(fmt::format(
        "{}: images are sequences of {} steps; the model reads {}", task,
        dataset.length, length));
  return dataset;
}

std::filesystem::path required(const std::filesystem::path &root,
                               std::string_view task) {
  if (root.empty())
    throw DataError(fmt::format(
        "{}: no data directory given (the LRA release, or data made by the "
        "generators; docs/data.md)",
        task));
  return root;
}

} // namespace

Dataset readTask(std::string_view task, const std::filesystem::path &root,
                 Split split, int64_t length) {
  if (task == "listops")
    return readListOps(required(root, task), split, length);
  if (task == "text")
    return readImdb(required(root, task), split, length);
  if (task == "retrieval")
    return readRetrieval(required(root, task), split, length);
  if (task == "cifar")
    return image(readCifar10(required(root, task), split), task, length);
  if (task == "pathfinder" || task == "pathx") {
    PathfinderReadOptions options;
    options.resolution = task == "pathx" ? 128 : 32;
    return image(readPathfinder(required(root, task), split, options), task,
                 length);
  }
  if (task == "fashion_mnist")
    return image(readFashionMnist(root, split), task, length);
  throw DataError(fmt::format(
      "unknown task {} (known: listops, text, retrieval, cifar, pathfinder, "
      "pathx, fashion_mnist; and tensors, files of your own)",
      detail::quote(task)));
}

bool hasValidationSplit(std::string_view task) {
  return !(task == "text" || task == "cifar" || task == "fashion_mnist");
}

} // namespace lruc::data
