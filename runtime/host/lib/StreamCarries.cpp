//===- StreamCarries.cpp - Where streams in step mode stand ---------------===//

#include "lruc/host/StreamCarries.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace lruc::host {

namespace {

constexpr const char *kSteps = "steps";

} // namespace

StreamCarries::StreamCarries(const StepInfo &step, int64_t rows)
    : step_(&step), rows_(rows), steps_(size_t(rows), 0) {
  for (const CarryInfo &carry : step.carries)
    values_.emplace_back(size_t(rows) * carry.floats(), 0.0f);
}

std::vector<int64_t> StreamCarries::storedShape(const CarryInfo &carry) const {
  std::vector<int64_t> shape{rows_};
  shape.insert(shape.end(), carry.shape.begin(), carry.shape.end());
  if (carry.complex)
    shape.push_back(2);
  return shape;
}

StreamCarries StreamCarries::parse(const SafetensorsFile &file,
                                   const Manifest &manifest, int64_t rows) {
  const StepInfo &step = *manifest.step;
  StreamCarries carries(step, rows);
  // Named in messages, with the model it came from when that is another.
  const auto found = file.metadata().find("model");
  const std::string writer =
      found == file.metadata().end() || found->second == manifest.model
          ? file.name()
          : fmt::format("{} (from model {}, not {})", file.name(),
                        found->second, manifest.model);
  for (const auto &tensor : file.tensors()) {
    const std::string &name = tensor.first;
    const bool known =
        name == kSteps ||
        std::any_of(step.carries.begin(), step.carries.end(),
                    [&](const CarryInfo &c) { return c.name == name; });
    if (!known)
      throw HostError(fmt::format(
          "{}: \"{}\" is no carry of this model's step mode (not a carry "
          "file of lru-predict --carry-out?)",
          writer, name));
  }
  for (size_t c = 0; c < step.carries.size(); ++c) {
    const CarryInfo &carry = step.carries[c];
    const StoredTensor *stored = file.find(carry.name);
    const std::vector<int64_t> shape = carries.storedShape(carry);
    if (!stored)
      throw HostError(fmt::format("{}: no carry \"{}\" (F32 {})", writer,
                                  carry.name, shapeString(shape)));
    if (stored->dtype != DType::F32 || stored->shape != shape)
      throw HostError(fmt::format(
          "{}: carry \"{}\" is {} {}; this model's for {} streams is F32 {}",
          writer, carry.name, dtypeName(stored->dtype),
          shapeString(stored->shape), rows, shapeString(shape)));
    file.copyTo(carry.name, DType::F32, carries.values_[c].data(),
                carries.values_[c].size());
  }
  if (!file.find(kSteps))
    throw HostError(
        fmt::format("{}: no \"{}\" (I64 [{}])", writer, kSteps, rows));
  std::vector<int64_t> steps = file.integers(kSteps);
  if (file.find(kSteps)->shape != std::vector<int64_t>{rows})
    throw HostError(fmt::format("{}: \"{}\" is {}; expected [{}]", writer,
                                kSteps, shapeString(file.find(kSteps)->shape),
                                rows));
  for (size_t r = 0; r < steps.size(); ++r)
    if (steps[r] < 0)
      throw HostError(fmt::format("{}: \"{}\"[{}] = {} is negative", writer,
                                  kSteps, r, steps[r]));
  carries.steps_ = std::move(steps);
  return carries;
}

void StreamCarries::toBlock(int64_t begin, int64_t count, float *block) const {
  for (size_t c = 0; c < step_->carries.size(); ++c) {
    const CarryInfo &carry = step_->carries[c];
    std::memcpy(block + uint64_t(count) * carry.offset,
                values_[c].data() + uint64_t(begin) * carry.floats(),
                uint64_t(count) * carry.floats() * sizeof(float));
  }
}

void StreamCarries::fromBlock(const float *block, int64_t count, int64_t b,
                              int64_t row, int64_t steps) {
  for (size_t c = 0; c < step_->carries.size(); ++c) {
    const CarryInfo &carry = step_->carries[c];
    std::memcpy(values_[c].data() + uint64_t(row) * carry.floats(),
                block + uint64_t(count) * carry.offset +
                    uint64_t(b) * carry.floats(),
                carry.floats() * sizeof(float));
  }
  steps_[size_t(row)] = steps;
}

std::string StreamCarries::encode(const Metadata &metadata) const {
  std::vector<TensorToWrite> tensors;
  for (size_t c = 0; c < step_->carries.size(); ++c)
    tensors.push_back({step_->carries[c].name, DType::F32,
                       storedShape(step_->carries[c]), values_[c].data()});
  tensors.push_back({kSteps, DType::I64, {rows_}, steps_.data()});
  return encodeSafetensors(tensors, metadata);
}

} // namespace lruc::host
