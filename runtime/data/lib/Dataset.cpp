//===- Dataset.cpp - Splits, subsets and batches --------------------------===//

#include "lruc/data/Dataset.h"

#include <fmt/format.h>

#include <algorithm>

namespace lruc::data {

std::string_view splitName(Split split) {
  switch (split) {
  case Split::Train:
    return "train";
  case Split::Val:
    return "val";
  case Split::Test:
    return "test";
  }
  return "?";
}

TokenSpan Dataset::sequence(size_t i, int side) const {
  size_t k = kind == InputKind::TokenPairs ? 2 * i + size_t(side) : i;
  return {tokens.data() + offsets[k], size_t(offsets[k + 1] - offsets[k])};
}

void Dataset::addSequence(const uint16_t *data, size_t count, int32_t label) {
  if (count > size_t(length)) {
    count = size_t(length);
    ++truncated;
  }
  tokens.insert(tokens.end(), data, data + count);
  offsets.push_back(tokens.size());
  labels.push_back(label);
}

void Dataset::addPair(const uint16_t *a, size_t countA, const uint16_t *b,
                      size_t countB, int32_t label) {
  for (auto [data, count] : {std::pair{a, countA}, std::pair{b, countB}}) {
    if (count > size_t(length)) {
      count = size_t(length);
      ++truncated;
    }
    tokens.insert(tokens.end(), data, data + count);
    offsets.push_back(tokens.size());
  }
  labels.push_back(label);
}

namespace {

size_t targetRow(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (int64_t d : shape)
    n *= size_t(d);
  return n;
}

std::string supervisionViolation(const Dataset &d) {
  const size_t n = d.labels.size();
  switch (d.supervision) {
  case Supervision::Labels:
    if (!d.stepLabels.empty() || !d.targets.empty())
      return "step labels or targets beside labels";
    return {};
  case Supervision::StepLabels:
    if (d.stepLabels.size() != n * size_t(d.length))
      return fmt::format("{} step labels for {} examples of {} steps",
                         d.stepLabels.size(), n, d.length);
    for (size_t k = 0; k < d.stepLabels.size(); ++k)
      if (d.stepLabels[k] < -1 || d.stepLabels[k] >= d.classes)
        return fmt::format("step label {} is not -1 (not scored) or in [0, "
                           "{})",
                           d.stepLabels[k], d.classes);
    break;
  case Supervision::Targets:
    if (d.targetShape.empty() ||
        d.targets.size() != n * targetRow(d.targetShape))
      return fmt::format("{} target values for {} examples", d.targets.size(),
                         n);
    break;
  }
  for (int32_t label : d.labels)
    if (label != 0)
      return "a label beside step labels or targets";
  return {};
}

} // namespace

std::string Dataset::invariantViolation() const {
  if (length < 1)
    return fmt::format("length {} < 1", length);
  for (size_t i = 0; i < labels.size(); ++i)
    if (supervision == Supervision::Labels &&
        (labels[i] < 0 || labels[i] >= classes))
      return fmt::format("label {} of example {} is not in [0, {})", labels[i],
                         i, classes);
  if (std::string broken = supervisionViolation(*this); !broken.empty())
    return broken;
  if (kind == InputKind::Features && !values.empty()) {
    if (channels < 1 || !pixels.empty())
      return "float features with channels < 1 or pixels too";
    if (values.size() != labels.size() * size_t(length) * size_t(channels))
      return fmt::format("{} feature values for {} examples of {}x{}",
                         values.size(), labels.size(), length, channels);
    if (!featureLengths.empty() && featureLengths.size() != labels.size())
      return fmt::format("{} feature lengths for {} examples",
                         featureLengths.size(), labels.size());
    for (size_t i = 0; i < featureLengths.size(); ++i) {
      const int32_t steps = featureLengths[i];
      if (steps < 1 || steps > length)
        return fmt::format("example {} has {} steps, not 1 to {}", i, steps,
                           length);
      const size_t row = size_t(length * channels);
      const auto past = values.begin() + ptrdiff_t(i * row);
      if (std::any_of(past + ptrdiff_t(size_t(steps) * size_t(channels)),
                      past + ptrdiff_t(row), [](float v) { return v != 0; }))
        return fmt::format("example {} has values past its {} steps", i, steps);
    }
    return {};
  }
  if (!featureLengths.empty())
    return "feature lengths without float features";
  if (kind == InputKind::Features) {
    if (channels < 1 || mean.size() != size_t(channels) ||
        stddev.size() != size_t(channels))
      return "channels and normalisation disagree";
    for (float s : stddev)
      if (!(s > 0))
        return "a standard deviation is not positive";
    if (pixels.size() != labels.size() * size_t(length) * size_t(channels))
      return fmt::format("{} pixel bytes for {} examples of {}x{}",
                         pixels.size(), labels.size(), length, channels);
    return {};
  }
  size_t perExample = kind == InputKind::TokenPairs ? 2 : 1;
  if (offsets.size() != labels.size() * perExample + 1 || offsets[0] != 0 ||
      offsets.back() != tokens.size())
    return "offsets do not match the examples";
  for (size_t k = 0; k + 1 < offsets.size(); ++k) {
    if (offsets[k + 1] <= offsets[k])
      return fmt::format("sequence {} is empty", k);
    if (offsets[k + 1] - offsets[k] > uint64_t(length))
      return fmt::format("sequence {} is longer than {}", k, length);
  }
  for (uint16_t t : tokens)
    if (t == 0 || t >= vocab)
      return fmt::format("token {} is not in [1, {})", t, vocab);
  return {};
}

namespace {

/// Appends row `i` (`width` values) of `from` to `to`; nothing when `from`
/// is empty (a kind of supervision not in use).
template <typename T>
void copyRow(const std::vector<T> &from, std::vector<T> &to, size_t i,
             size_t width) {
  if (from.empty())
    return;
  to.insert(to.end(), from.begin() + ptrdiff_t(i * width),
            from.begin() + ptrdiff_t((i + 1) * width));
}

} // namespace

Dataset subset(const Dataset &dataset, const std::vector<size_t> &indices) {
  Dataset out;
  out.supervision = dataset.supervision;
  out.targetShape = dataset.targetShape;
  out.kind = dataset.kind;
  out.length = dataset.length;
  out.channels = dataset.channels;
  out.vocab = dataset.vocab;
  out.classes = dataset.classes;
  out.mean = dataset.mean;
  out.stddev = dataset.stddev;
  size_t step = size_t(dataset.length * dataset.channels);
  for (size_t i : indices) {
    if (i >= dataset.size())
      throw std::out_of_range(fmt::format(
          "example {} of a dataset of {}", i, dataset.size()));
    out.labels.push_back(dataset.labels[i]);
    copyRow(dataset.stepLabels, out.stepLabels, i, size_t(dataset.length));
    copyRow(dataset.targets, out.targets, i, targetRow(dataset.targetShape));
    if (dataset.kind == InputKind::Features && !dataset.values.empty()) {
      auto begin = dataset.values.begin() + ptrdiff_t(i * step);
      out.values.insert(out.values.end(), begin, begin + ptrdiff_t(step));
      copyRow(dataset.featureLengths, out.featureLengths, i, 1);
      continue;
    }
    if (dataset.kind == InputKind::Features) {
      auto begin = dataset.pixels.begin() + ptrdiff_t(i * step);
      out.pixels.insert(out.pixels.end(), begin, begin + ptrdiff_t(step));
      continue;
    }
    int sides = dataset.kind == InputKind::TokenPairs ? 2 : 1;
    for (int side = 0; side < sides; ++side) {
      TokenSpan s = dataset.sequence(i, side);
      out.tokens.insert(out.tokens.end(), s.begin(), s.end());
      out.offsets.push_back(out.tokens.size());
    }
  }
  return out;
}

Dataset slice(const Dataset &dataset, size_t begin, size_t end) {
  if (begin > end || end > dataset.size())
    throw std::out_of_range(fmt::format("examples [{}, {}) of a dataset of {}",
                                        begin, end, dataset.size()));
  std::vector<size_t> indices(end - begin);
  for (size_t i = begin; i < end; ++i)
    indices[i - begin] = i;
  return subset(dataset, indices);
}

namespace {

void padInto(TokenSpan s, int32_t *row, int64_t length) {
  std::fill(std::copy(s.begin(), s.end(), row), row + length, 0);
}

} // namespace

void gather(const Dataset &dataset, const size_t *indices, size_t count,
            Batch &batch) {
  const int64_t L = dataset.length, C = dataset.channels;
  batch.kind = dataset.kind;
  batch.size = int64_t(count);
  batch.length = L;
  batch.channels = C;
  batch.labels.resize(count);
  batch.lengths.resize(count);
  bool pairs = dataset.kind == InputKind::TokenPairs;
  bool features = dataset.kind == InputKind::Features;
  batch.tokens.resize(features ? 0 : count * size_t(L));
  batch.tokensB.resize(pairs ? count * size_t(L) : 0);
  batch.lengthsB.resize(pairs ? count : 0);
  batch.features.resize(features ? count * size_t(L * C) : 0);
  batch.supervision = dataset.supervision;
  batch.targetShape = dataset.targetShape;
  const size_t targetWidth = targetRow(dataset.targetShape);
  batch.stepLabels.resize(dataset.stepLabels.empty() ? 0 : count * size_t(L));
  batch.targets.resize(dataset.targets.empty() ? 0 : count * targetWidth);
  // Every byte value of every channel, normalised once (pixel features).
  const bool pixels = features && dataset.values.empty();
  std::vector<float> lut(pixels ? size_t(C) * 256 : 0);
  for (int64_t c = 0; pixels && c < C; ++c)
    for (int p = 0; p < 256; ++p)
      lut[size_t(c) * 256 + size_t(p)] = dataset.normalise(uint8_t(p), c);
  for (size_t b = 0; b < count; ++b) {
    size_t i = indices[b];
    if (i >= dataset.size())
      throw std::out_of_range(fmt::format(
          "example {} of a dataset of {}", i, dataset.size()));
    batch.labels[b] = dataset.labels[i];
    if (!dataset.stepLabels.empty())
      std::copy_n(dataset.stepLabels.data() + i * size_t(L), size_t(L),
                  batch.stepLabels.data() + b * size_t(L));
    if (!dataset.targets.empty())
      std::copy_n(dataset.targets.data() + i * targetWidth, targetWidth,
                  batch.targets.data() + b * targetWidth);
    if (features && !dataset.values.empty()) {
      batch.lengths[b] = dataset.featureLengths.empty()
                             ? int32_t(L)
                             : dataset.featureLengths[i];
      std::copy_n(dataset.values.data() + i * size_t(L * C), size_t(L * C),
                  batch.features.data() + b * size_t(L * C));
      continue;
    }
    if (features) {
      batch.lengths[b] = int32_t(L);
      const uint8_t *src = dataset.pixels.data() + i * size_t(L * C);
      float *dst = batch.features.data() + b * size_t(L * C);
      for (int64_t t = 0; t < L; ++t)
        for (int64_t c = 0; c < C; ++c)
          dst[t * C + c] = lut[size_t(c) * 256 + src[t * C + c]];
      continue;
    }
    TokenSpan a = dataset.sequence(i, 0);
    batch.lengths[b] = int32_t(a.size);
    padInto(a, batch.tokens.data() + b * size_t(L), L);
    if (pairs) {
      TokenSpan s = dataset.sequence(i, 1);
      batch.lengthsB[b] = int32_t(s.size);
      padInto(s, batch.tokensB.data() + b * size_t(L), L);
    }
  }
}

Batch gather(const Dataset &dataset, const std::vector<size_t> &indices) {
  Batch batch;
  gather(dataset, indices.data(), indices.size(), batch);
  return batch;
}

} // namespace lruc::data
