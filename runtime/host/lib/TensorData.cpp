//===- TensorData.cpp - The tensors task: a user's own data ---------------===//

#include "lruc/host/TensorData.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace lruc::host {

namespace fs = std::filesystem;

namespace {

fs::path splitFile(const fs::path &root, data::Split split) {
  return root / (std::string(data::splitName(split)) + ".safetensors");
}

/// An integer tensor of `file`, checked for its rank and first dimension.
struct IntegerTensor {
  std::vector<int64_t> shape, values;
};

IntegerTensor integerTensor(const SafetensorsFile &file,
                            const std::string &name, size_t rank,
                            int64_t rows) {
  const StoredTensor *stored = file.find(name);
  if (!stored || stored->shape.size() != rank ||
      (rows >= 0 && stored->shape[0] != rows))
    throw HostError(fmt::format(
        "{}: \"{}\" should be {} [{}{}]{}", file.name(), name, "I32 or I64",
        rows >= 0 ? std::to_string(rows) : "n", rank == 2 ? ", L" : "",
        stored ? fmt::format(", not {}", shapeString(stored->shape)) : ""));
  return {stored->shape, file.integers(name)};
}

/// One side's token sequences: ragged, no padding inside.
struct Sequences {
  int64_t width = 0;            ///< L of the file
  std::vector<uint16_t> tokens; ///< [n, width]
  std::vector<int64_t> lengths;
  int64_t vocab = 0; ///< the largest token + 1
};

Sequences readSequences(const SafetensorsFile &file, const std::string &name,
                        const std::string &lengthsName, int64_t rows) {
  IntegerTensor tokens = integerTensor(file, name, 2, rows);
  Sequences s;
  s.width = tokens.shape[1];
  if (s.width < 1)
    throw HostError(
        fmt::format("{}: \"{}\" has sequences of 0 steps", file.name(), name));
  // With lengths, the tokens past each example's end are not read (they
  // may hold anything, -1 too) and become 0, the padding token.
  const bool given = file.find(lengthsName) != nullptr;
  if (given)
    s.lengths = integerTensor(file, lengthsName, 1, rows).values;
  s.tokens.resize(tokens.values.size());
  for (size_t k = 0; k < tokens.values.size(); ++k) {
    const size_t example = k / size_t(s.width), step = k % size_t(s.width);
    if (given && int64_t(step) >= s.lengths[example])
      continue;
    const int64_t v = tokens.values[k];
    if (v < 0 || v > std::numeric_limits<uint16_t>::max())
      throw HostError(fmt::format("{}: \"{}\"[{}, {}] = {} is outside [0, "
                                  "65536)",
                                  file.name(), name, example, step, v));
    s.tokens[k] = uint16_t(v);
    s.vocab = std::max(s.vocab, v + 1);
  }
  if (!given) { // up to the last non-zero token
    s.lengths.resize(size_t(rows));
    for (int64_t i = 0; i < rows; ++i) {
      const uint16_t *row = s.tokens.data() + size_t(i * s.width);
      int64_t length = s.width;
      while (length > 0 && row[length - 1] == 0)
        --length;
      s.lengths[size_t(i)] = length;
    }
  }
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t length = s.lengths[size_t(i)];
    if (length < 1 || length > s.width)
      throw HostError(fmt::format(
          "{}: example {} of \"{}\" has {} steps, not 1 to {}{}", file.name(),
          i, name, length, s.width,
          file.find(lengthsName) ? fmt::format(" (\"{}\")", lengthsName)
                                 : " (all padding: token 0)"));
    const uint16_t *row = s.tokens.data() + size_t(i * s.width);
    for (int64_t t = 0; t < length; ++t)
      if (row[t] == 0)
        throw HostError(fmt::format(
            "{}: \"{}\"[{}, {}] is 0, the padding token, inside a sequence "
            "of {} steps",
            file.name(), name, i, t, length));
  }
  return s;
}

/// Features keep the file's length: lru-train's checkModelFitsData compares
/// it with the model's. With `lengths`, each example's values past its end
/// are not read (they may be anything, NaN too) and become 0.
void readFeatures(const SafetensorsFile &file, int64_t rows, data::Dataset &d) {
  const StoredTensor *stored = file.find("features");
  if (stored->dtype != DType::F32 || stored->shape.size() != 3 ||
      stored->shape[0] != rows || stored->shape[1] < 1 || stored->shape[2] < 1)
    throw HostError(fmt::format("{}: \"features\" should be F32 [{}, L, C], "
                                "not {} {}",
                                file.name(), rows, dtypeName(stored->dtype),
                                shapeString(stored->shape)));
  d.kind = data::InputKind::Features;
  d.length = stored->shape[1];
  d.channels = stored->shape[2];
  const uint64_t count = numElements(stored->shape);
  d.values.resize(count);
  file.copyTo("features", DType::F32, d.values.data(), count);
  std::vector<int32_t> lengths;
  if (file.find("lengths")) {
    for (int64_t v : integerTensor(file, "lengths", 1, rows).values) {
      if (v < 1 || v > d.length)
        throw HostError(fmt::format("{}: example {} of \"features\" has {} "
                                    "steps, not 1 to {} (\"lengths\")",
                                    file.name(), lengths.size(), v, d.length));
      lengths.push_back(int32_t(v));
    }
    // Every example the whole length: as without lengths.
    if (std::any_of(lengths.begin(), lengths.end(),
                    [&](int32_t v) { return v != d.length; }))
      d.featureLengths = lengths;
  }
  prepareFeatures(d.values.data(), rows, d.length, d.channels,
                  lengths.empty() ? nullptr : lengths.data(), file.name(),
                  "features");
}

/// What the loss compares with: `targets` (F32 [n, ...]: loss mse) or
/// `labels` (I32/I64 [n], or [n, L] a class a step); sets `d`'s supervision
/// and classes. Returns the per-example labels (0 but for [n] labels).
std::vector<int32_t> readSupervision(const SafetensorsFile &file,
                                     data::Dataset &d) {
  const StoredTensor *targets = file.find("targets");
  if (targets && file.find("labels"))
    throw HostError(fmt::format("{}: both \"labels\" and \"targets\": keep "
                                "the one the model's loss reads",
                                file.name()));
  if (targets) {
    if (targets->dtype != DType::F32 || targets->shape.size() < 2 ||
        targets->shape[0] < 1)
      throw HostError(fmt::format("{}: \"targets\" should be F32 [n, ...], "
                                  "not {} {}",
                                  file.name(), dtypeName(targets->dtype),
                                  shapeString(targets->shape)));
    d.supervision = data::Supervision::Targets;
    d.targetShape.assign(targets->shape.begin() + 1, targets->shape.end());
    const uint64_t count = numElements(targets->shape);
    d.targets.resize(count);
    file.copyTo("targets", DType::F32, d.targets.data(), count);
    checkTargets(d.targets.data(), count, count / uint64_t(targets->shape[0]),
                 file.name());
    return std::vector<int32_t>(size_t(targets->shape[0]), 0);
  }
  const StoredTensor *stored = file.find("labels");
  if (!stored)
    throw HostError(fmt::format(
        "{}: no \"labels\" (I32 or I64 [n], or [n, L] a class a step) or "
        "\"targets\" (F32 [n, ...]): what the model's loss compares with",
        file.name()));
  const bool perStep = stored && stored->shape.size() == 2;
  const IntegerTensor labels =
      integerTensor(file, "labels", perStep ? 2 : 1, -1);
  const int64_t rows = labels.shape[0];
  if (rows == 0)
    throw HostError(fmt::format("{}: no examples", file.name()));
  for (size_t k = 0; k < labels.values.size(); ++k) {
    const int64_t v = labels.values[k];
    if (perStep && v < 0)
      continue; // a step not scored
    if (v < 0 || v > std::numeric_limits<int32_t>::max())
      throw HostError(fmt::format(
          "{}: \"labels\"[{}] = {} is not a class (0, 1, ...)", file.name(),
          perStep ? fmt::format("{}, {}", k / size_t(labels.shape[1]),
                                k % size_t(labels.shape[1]))
                  : std::to_string(k),
          v));
    d.classes = std::max(d.classes, v + 1);
  }
  if (!perStep)
    return std::vector<int32_t>(labels.values.begin(), labels.values.end());
  d.supervision = data::Supervision::StepLabels;
  d.stepLabels.resize(labels.values.size());
  std::transform(labels.values.begin(), labels.values.end(),
                 d.stepLabels.begin(),
                 [](int64_t v) { return int32_t(std::max<int64_t>(v, -1)); });
  d.targetShape = {labels.shape[1]}; // the file's steps, checked below
  return std::vector<int32_t>(size_t(rows), 0);
}

/// Per-step labels and targets must have a step for each of the model's.
void checkStepWidth(const SafetensorsFile &file, data::Dataset &d) {
  const char *name = nullptr;
  int64_t steps = 0;
  if (d.supervision == data::Supervision::StepLabels) {
    name = "labels";
    steps = d.targetShape[0];
    d.targetShape.clear();
  } else if (d.supervision == data::Supervision::Targets &&
             d.targetShape.size() == 2) {
    name = "targets";
    steps = d.targetShape[0];
  }
  if (name && steps != d.length)
    throw HostError(
        fmt::format("{}: \"{}\" has {} steps an example; the model reads {}",
                    file.name(), name, steps, d.length));
}

} // namespace

void prepareFeatures(float *values, int64_t rows, int64_t L, int64_t C,
                     const int32_t *lengths, const std::string &file,
                     const std::string &name) {
  for (int64_t k = 0; k < rows; ++k) {
    float *row = values + k * L * C;
    const int64_t real = (lengths ? int64_t(lengths[k]) : L) * C;
    std::fill(row + real, row + L * C, 0.0f);
    for (int64_t v = 0; v < real; ++v)
      if (!std::isfinite(row[v]))
        throw HostError(fmt::format("{}: \"{}\"[{}, {}, {}] = {} is not "
                                    "finite",
                                    file, name, k, v / C, v % C, row[v]));
  }
}

void checkTargets(const float *values, uint64_t count, uint64_t perExample,
                  const std::string &file) {
  for (uint64_t v = 0; v < count; ++v)
    if (std::isinf(values[v]))
      throw HostError(fmt::format("{}: \"targets\" value {} (example {}) is "
                                  "not finite (NaN marks a value not scored)",
                                  file, values[v], v / perExample));
}

data::Dataset readTensorData(const fs::path &root, data::Split split,
                             int64_t length) {
  if (root.empty())
    throw HostError("tensors: no data directory given (one holding "
                    "train.safetensors, test.safetensors and optionally "
                    "val.safetensors; docs/data.md)");
  const fs::path path = splitFile(root, split);
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw HostError(fmt::format(
        "tensors: no {} (the task reads train.safetensors, test.safetensors "
        "and optionally val.safetensors there; docs/data.md)",
        path.string()));
  return tensorDataFrom(SafetensorsFile::read(path), length);
}

data::Dataset tensorDataFrom(const SafetensorsFile &file, int64_t length) {
  data::Dataset d;
  const std::vector<int32_t> labels = readSupervision(file, d);
  const auto rows = int64_t(labels.size());
  if (file.find("features")) {
    readFeatures(file, rows, d);
    d.labels = labels;
    checkStepWidth(file, d);
    return d;
  }
  const bool pairs = file.find("tokens_a") || file.find("tokens_b");
  if (!pairs && !file.find("tokens"))
    throw HostError(fmt::format("{}: no \"tokens\", \"tokens_a\" and "
                                "\"tokens_b\", or \"features\": the inputs",
                                file.name()));
  std::vector<Sequences> sides;
  if (pairs)
    for (const char *side : {"a", "b"})
      sides.push_back(readSequences(file, fmt::format("tokens_{}", side),
                                    fmt::format("lengths_{}", side), rows));
  else
    sides.push_back(readSequences(file, "tokens", "lengths", rows));
  d.kind = pairs ? data::InputKind::TokenPairs : data::InputKind::Tokens;
  d.length = length != 0 ? length : sides[0].width;
  for (const Sequences &s : sides)
    d.vocab = std::max(d.vocab, s.vocab);
  for (int64_t i = 0; i < rows; ++i) {
    auto row = [&](const Sequences &s) {
      return s.tokens.data() + size_t(i * s.width);
    };
    const int32_t label = labels[size_t(i)];
    if (pairs)
      d.addPair(row(sides[0]), size_t(sides[0].lengths[size_t(i)]),
                row(sides[1]), size_t(sides[1].lengths[size_t(i)]), label);
    else
      d.addSequence(row(sides[0]), size_t(sides[0].lengths[size_t(i)]), label);
  }
  checkStepWidth(file, d);
  return d;
}

bool tensorDataHasValidation(const fs::path &root) {
  std::error_code ec;
  return fs::exists(splitFile(root, data::Split::Val), ec);
}

} // namespace lruc::host
