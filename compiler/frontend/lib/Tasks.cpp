//===- Tasks.cpp - The training tasks a model file may name --------------===//

#include "lruc/frontend/Tasks.h"

namespace lruc {

const std::vector<TaskInfo> &allTasks() {
  using ast::InputKind;
  // Vocabularies include the padding token 0. Lengths are those of the Long
  // Range Arena release (DESIGN.md §5).
  static const std::vector<TaskInfo> tasks = {
      {"listops", InputKind::Tokens, 18, 0, 2000, false, 10,
       "ListOps expressions (LRA listops-1000, or generated)"},
      {"text", InputKind::Tokens, 257, 0, 4000, false, 2,
       "IMDB reviews as bytes"},
      {"retrieval", InputKind::TokenPairs, 257, 0, 4000, false, 2,
       "AAN citation pairs as bytes, two towers"},
      {"cifar", InputKind::Features, 0, 3, 1024, true, 10,
       "CIFAR-10 images as 1024 RGB pixels"},
      {"pathfinder", InputKind::Features, 0, 1, 1024, true, 2,
       "Pathfinder 32x32 images (LRA pathfinder32, or generated)"},
      {"pathx", InputKind::Features, 0, 1, 16384, true, 2,
       "Path-X 128x128 images (LRA pathfinder128)"},
      {"fashion_mnist", InputKind::Features, 0, 1, 784, true, 10,
       "Fashion-MNIST 28x28 images (Debian's dataset-fashion-mnist)"},
      {"tensors", InputKind::Tokens, 0, 0, 0, false, 0,
       "your own data: train, val and test .safetensors files",
       /*fromFiles=*/true},
  };
  return tasks;
}

const TaskInfo *findTask(std::string_view name) {
  for (const TaskInfo &task : allTasks())
    if (task.name == name)
      return &task;
  return nullptr;
}

} // namespace lruc
