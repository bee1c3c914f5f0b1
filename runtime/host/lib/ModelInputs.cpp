//===- ModelInputs.cpp - A model's inputs from a safetensors file ---------===//

#include "lruc/host/ModelInputs.h"
#include "lruc/host/TensorData.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace lruc::host {

namespace {

bool isLossInput(const std::string &name) {
  return name == "labels" || name == "targets";
}

bool isLengths(const std::string &name) {
  return name.rfind("lengths", 0) == 0;
}

/// "tokens_a" for "lengths_a": the sequence a lengths input measures.
std::string sequenceOf(const TensorInfo &lengths, const Manifest &m) {
  std::string suffix = lengths.name.substr(std::strlen("lengths"));
  for (const char *base : {"tokens", "features"})
    if (m.findInput(base + suffix))
      return base + suffix;
  return {};
}

/// What the model expects, for messages: "tokens I32 [n, 64], lengths I32
/// [n], labels I32 [n]".
std::string expectedInputs(const Manifest &m) {
  std::vector<std::string> parts;
  for (const TensorInfo &in : m.inputs) {
    std::vector<std::string> dims{"n"};
    for (size_t d = 1; d < in.shape.size(); ++d)
      dims.push_back(std::to_string(in.shape[d]));
    parts.push_back(fmt::format("{} {} [{}]", in.name, dtypeName(in.dtype),
                                fmt::join(dims, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

/// Reads the tensor for `in` from `file` into `column`, checking its dtype
/// and shape; returns its number of examples.
int64_t readColumn(const SafetensorsFile &file, const StoredTensor &stored,
                   const TensorInfo &in, InputColumn &column,
                   const std::string &expected) {
  const std::string where = fmt::format("{}: \"{}\"", file.name(), in.name);
  std::vector<int64_t> want(in.shape.begin() + 1, in.shape.end());
  if (stored.shape.empty() ||
      !std::equal(want.begin(), want.end(), stored.shape.begin() + 1,
                  stored.shape.end()))
    throw HostError(fmt::format("{} is {}; the model takes {}", where,
                                shapeString(stored.shape), expected));
  const int64_t rows = stored.shape[0];
  const uint64_t count = numElements(stored.shape);
  column.info = &in;
  column.rowBytes = dtypeSize(in.dtype) * numElements(want);
  column.bytes.resize(size_t(count) * dtypeSize(in.dtype));
  if (stored.dtype == in.dtype) {
    file.copyTo(in.name, in.dtype, column.bytes.data(), count);
    return rows;
  }
  if (stored.dtype == DType::I64 && in.dtype == DType::I32) {
    const std::vector<int64_t> wide = file.integers(in.name);
    auto *narrow = reinterpret_cast<int32_t *>(column.bytes.data());
    for (uint64_t k = 0; k < count; ++k) {
      if (wide[k] < std::numeric_limits<int32_t>::min() ||
          wide[k] > std::numeric_limits<int32_t>::max())
        throw HostError(fmt::format("{}: value {} (element {}) does not fit "
                                    "the model's I32",
                                    where, wide[k], k));
      narrow[k] = int32_t(wide[k]);
    }
    return rows;
  }
  throw HostError(fmt::format("{} is {}; the model takes {} ({})", where,
                              dtypeName(stored.dtype), dtypeName(in.dtype),
                              expected));
}

/// Fills a left-out lengths column: each token sequence up to its last
/// non-zero token, features the whole length.
void inferLengths(const InputColumn &sequence, int64_t rows,
                  InputColumn &lengths, const std::string &file) {
  lengths.rowBytes = sizeof(int32_t);
  lengths.bytes.resize(size_t(rows) * sizeof(int32_t));
  auto *out = reinterpret_cast<int32_t *>(lengths.bytes.data());
  const int64_t L = sequence.info->shape[1];
  for (int64_t i = 0; i < rows; ++i) {
    int64_t length = L;
    if (sequence.info->dtype == DType::I32) {
      const auto *row = reinterpret_cast<const int32_t *>(
          sequence.bytes.data() + size_t(i) * sequence.rowBytes);
      while (length > 0 && row[length - 1] == 0)
        --length;
      if (length == 0)
        throw HostError(fmt::format(
            "{}: \"{}\" example {} is all padding (token 0), and there is no "
            "\"{}\" to say otherwise",
            file, sequence.info->name, i, lengths.info->name));
    }
    out[i] = int32_t(length);
  }
}

} // namespace

ModelInputs readModelInputs(const SafetensorsFile &file, const Manifest &m,
                            EmptySequences empty) {
  const std::string expected = expectedInputs(m);
  ModelInputs ex;
  ex.columns.resize(m.inputs.size());
  int64_t rows = -1;
  std::vector<size_t> missingLengths;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const TensorInfo &in = m.inputs[i];
    const StoredTensor *stored = file.find(in.name);
    if (!stored) {
      ex.columns[i].info = &in;
      if (isLossInput(in.name))
        continue; // zeros, once the number of examples is known
      if (isLengths(in.name) && !sequenceOf(in, m).empty()) {
        missingLengths.push_back(i);
        continue;
      }
      throw HostError(fmt::format("{}: no \"{}\"; the model takes {}",
                                  file.name(), in.name, expected));
    }
    ex.hasLoss = ex.hasLoss || isLossInput(in.name);
    const int64_t n = readColumn(file, *stored, in, ex.columns[i], expected);
    if (rows >= 0 && n != rows)
      throw HostError(fmt::format(
          "{}: \"{}\" has {} examples, \"{}\" {}: every input needs the same "
          "number",
          file.name(), in.name, n, m.inputs[0].name, rows));
    rows = n;
  }
  if (rows <= 0)
    throw HostError(fmt::format("{}: no examples", file.name()));
  ex.rows = rows;
  for (size_t i : missingLengths) {
    const std::string sequence = sequenceOf(m.inputs[i], m);
    const size_t s = size_t(m.findInput(sequence) - m.inputs.data());
    inferLengths(ex.columns[s], rows, ex.columns[i], file.name());
  }
  for (InputColumn &column : ex.columns)
    if (column.bytes.empty()) { // the loss's input, left out: zeros
      std::vector<int64_t> dims(column.info->shape.begin() + 1,
                                column.info->shape.end());
      column.rowBytes = dtypeSize(column.info->dtype) * numElements(dims);
      column.bytes.assign(size_t(rows) * column.rowBytes, 0);
    }
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    if (!isLengths(m.inputs[i].name))
      continue;
    const auto *lengths =
        reinterpret_cast<const int32_t *>(ex.columns[i].bytes.data());
    const TensorInfo *sequence = m.findInput(sequenceOf(m.inputs[i], m));
    const int64_t steps = sequence ? sequence->shape.at(1) : 0;
    for (int64_t k = 0; k < rows; ++k) {
      if (empty == EmptySequences::Rejected && lengths[k] < 1)
        throw HostError(fmt::format(
            "{}: \"{}\"[{}] = {}: every sequence needs at least one step",
            file.name(), m.inputs[i].name, k, lengths[k]));
      if (lengths[k] < 0)
        throw HostError(fmt::format("{}: \"{}\"[{}] = {} is negative",
                                    file.name(), m.inputs[i].name, k,
                                    lengths[k]));
      if (steps > 0 && lengths[k] > steps)
        throw HostError(fmt::format("{}: \"{}\"[{}] = {}: \"{}\" has {} "
                                    "steps a sequence",
                                    file.name(), m.inputs[i].name, k,
                                    lengths[k], sequence->name, steps));
    }
    if (!ex.lengths)
      ex.lengths = lengths;
    if (sequence && sequence->dtype == DType::F32)
      prepareFeatures(reinterpret_cast<float *>(
                          ex.columns[size_t(sequence - m.inputs.data())]
                              .bytes.data()),
                      rows, steps, sequence->shape.at(2), lengths, file.name(),
                      sequence->name);
  }
  if (const TensorInfo *labels = m.findInput("labels");
      labels && ex.hasLoss) {
    const auto *values = reinterpret_cast<const int32_t *>(
        ex.columns[size_t(labels - m.inputs.data())].bytes.data());
    (labels->shape.size() == 2 ? ex.stepLabels : ex.labels) = values;
  }
  if (const TensorInfo *targets = m.findInput("targets");
      targets && ex.hasLoss) {
    const InputColumn &column = ex.columns[size_t(targets - m.inputs.data())];
    const uint64_t perExample = column.rowBytes / sizeof(float);
    checkTargets(reinterpret_cast<const float *>(column.bytes.data()),
                 uint64_t(rows) * perExample, perExample, file.name());
    ex.targets = reinterpret_cast<const float *>(column.bytes.data());
  }
  return ex;
}

} // namespace lruc::host
