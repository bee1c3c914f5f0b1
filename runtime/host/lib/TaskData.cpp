//===- TaskData.cpp - The splits a run trains and evaluates on ------------===//

#include "lruc/host/TaskData.h"

#include "lruc/data/Tasks.h"
#include "lruc/host/DataOrder.h"
#include "lruc/host/TensorData.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace lruc::host {

using data::Split;

int64_t modelSequenceLength(const Manifest &manifest) {
  for (const char *name : {"features", "tokens", "tokens_a"})
    if (const TensorInfo *input = manifest.findInput(name))
      if (input->shape.size() >= 2)
        return input->shape[1];
  return 0;
}

namespace {

data::Dataset firstN(data::Dataset dataset, const std::optional<int64_t> &n) {
  if (!n || size_t(*n) >= dataset.size())
    return dataset;
  return data::slice(dataset, 0, size_t(*n));
}

} // namespace

data::Dataset TaskData::read(Split split) const {
  data::Dataset dataset =
      options_.task == kTensorsTask
          ? readTensorData(options_.root, split, options_.length)
          : data::readTask(options_.task, options_.root, split,
                           options_.length);
  if (dataset.truncated > 0 && options_.warn)
    options_.warn(fmt::format(
        "{} of the {} sequences in the {} {} split are longer than the model's "
        "{} steps and are cut to their first {} (compile the model with a "
        "longer input to keep them)",
        dataset.truncated, dataset.offsets.size() - 1, options_.task,
        data::splitName(split), options_.length, options_.length));
  return dataset;
}

void TaskData::readTrainAndHoldout() {
  data::Dataset all = read(Split::Train);
  if (hasValidationSplit()) {
    splits_[Split::Train] = firstN(std::move(all), options_.maxTrain);
    return;
  }
  Holdout parts = holdout(all.size(), options_.valFraction, options_.seed);
  splits_[Split::Val] =
      firstN(data::subset(all, parts.validation), options_.maxEval);
  splits_[Split::Train] =
      firstN(data::subset(all, parts.train), options_.maxTrain);
}

const data::Dataset &TaskData::split(Split split) {
  if (auto it = splits_.find(split); it != splits_.end())
    return it->second;
  if (split == Split::Train || (split == Split::Val && !hasValidationSplit())) {
    readTrainAndHoldout();
    return splits_.at(split);
  }
  return splits_[split] = firstN(read(split), options_.maxEval);
}

bool TaskData::hasValidationSplit() const {
  return options_.task == kTensorsTask
             ? tensorDataHasValidation(options_.root)
             : data::hasValidationSplit(options_.task);
}

std::string TaskData::validationSource() const {
  if (hasValidationSplit())
    return "the val split";
  return fmt::format("{:g}% of train held out (seed {})",
                     100 * options_.valFraction, options_.seed);
}

} // namespace lruc::host
