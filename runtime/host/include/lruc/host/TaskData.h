//===- TaskData.h - The splits a run trains and evaluates on ----*- C++ -*-===//
//
// One definition of which examples are train, validation and test, shared by
// lru-train and lru-eval so that `lru-eval --split val` sees the run's
// validation set:
//
//   - tasks whose release has a validation split (listops, retrieval,
//     pathfinder, pathx; tensors when its directory has val.safetensors)
//     use it;
//   - the others (text, cifar, fashion_mnist) hold out `valFraction` of the
//     training split, chosen by a permutation seeded with `seed`
//     (DataOrder.h), and train on the rest;
//   - `maxTrain` keeps the first N training examples (after the hold-out),
//     `maxEval` the first N of validation and of test (quick runs, tests).
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_HOST_TASKDATA_H
#define LRUC_HOST_TASKDATA_H

#include "lruc/data/Dataset.h"
#include "lruc/host/ModelLibrary.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace lruc::host {

/// L of the model's sequence input (features, tokens or tokens_a); 0 if none.
int64_t modelSequenceLength(const Manifest &manifest);

struct DataOptions {
  std::string task;
  std::filesystem::path root; ///< empty: the task's default place
  int64_t length = 0;         ///< token sequences are cut to it
  uint64_t seed = 0;          ///< the hold-out's permutation
  double valFraction = 0.1;
  std::optional<int64_t> maxTrain, maxEval;
  /// Told, once per file read, how many of its sequences were longer than
  /// `length` and were cut (a model compiled too short for its data).
  std::function<void(const std::string &)> warn;
};

class TaskData {
public:
  explicit TaskData(DataOptions options) : options_(std::move(options)) {}

  /// The split, read on first use. Throws lruc::data::DataError.
  const data::Dataset &split(data::Split split);
  /// "the val split", "10% of train held out (seed 1)".
  std::string validationSource() const;
  /// Whether the task's data has a validation split of its own.
  bool hasValidationSplit() const;
  const DataOptions &options() const { return options_; }

private:
  void readTrainAndHoldout();
  data::Dataset read(data::Split split) const;

  DataOptions options_;
  std::map<data::Split, data::Dataset> splits_;
};

} // namespace lruc::host

#endif // LRUC_HOST_TASKDATA_H
