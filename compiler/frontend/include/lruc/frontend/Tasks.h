//===- Tasks.h - The training tasks a model file may name ------*- C++ -*-===//
//
// `train { data listops }` names a task. The front end checks that the model
// fits the task's data (input kind, channels, vocabulary, length, classes);
// the runtime reads or generates the data. One table, shared by both.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_FRONTEND_TASKS_H
#define LRUC_FRONTEND_TASKS_H

#include "lruc/frontend/AST.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace lruc {

struct TaskInfo {
  std::string_view name;
  ast::InputKind input;
  int64_t vocab;      ///< token tasks: tokens are in [0, vocab)
  int64_t channels;   ///< feature tasks: features per step
  int64_t length;     ///< longest sequence of the task
  bool exactLength;   ///< images: the model length must equal `length`
  int64_t classes;
  std::string_view description;
  /// The tensors task: input kind, sizes, classes and even the loss (class
  /// labels or real targets) come from its files, checked when the
  /// runtime reads them, not here.
  bool fromFiles = false;
};

/// Every known task, in the order the documentation lists them.
const std::vector<TaskInfo> &allTasks();

/// The task called `name`, or null.
const TaskInfo *findTask(std::string_view name);

} // namespace lruc

#endif // LRUC_FRONTEND_TASKS_H
