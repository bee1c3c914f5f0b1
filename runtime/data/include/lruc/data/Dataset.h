//===- Dataset.h - A labelled split of a task, ready to batch --*- C++ -*-===//
//
// The in-memory form of one split of a Long Range Arena task (or of
// Fashion-MNIST), and the batches a model is fed (docs/data.md).
//
// Storage is compact; batches have the model's layout (docs/architecture.md,
// "Data flow inside @forward"):
//
//   Tokens      tokens i32 [B, L] (padded with 0), lengths i32 [B], labels [B]
//   TokenPairs  tokens_a, lengths_a, tokens_b, lengths_b, labels
//   Features    features f32 [B, L, C], lengths i32 [B] (L but for float
//               features of other lengths), labels [B]
//
// A split keeps token sequences ragged (uint16, at most `length` each) and
// image pixels as bytes with a per-channel normalisation, so that Path-X
// (200k × 16384 pixels) takes 3.3 GB instead of 13 GB of floats (features
// that are not pixels, from the tensors task, stay floats); gather() turns
// the chosen examples into the padded int32 / float batch.
//
// Errors: every reader throws lruc::data::DataError (Error.h).
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_DATA_DATASET_H
#define LRUC_DATA_DATASET_H

#include "lruc/data/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lruc::data {

/// What a model's input is (mirrors `input tokens | token_pairs | features`).
enum class InputKind { Tokens, TokenPairs, Features };

/// What the loss compares a model's predictions with.
enum class Supervision {
  Labels,     ///< a class an example (`labels`; every LRA task)
  StepLabels, ///< a class a step (`pool none`): `stepLabels`
  Targets,    ///< real values (`loss mse`): `targets`
};

/// Which part of a task's data. Tasks whose release has no validation split
/// (IMDB, CIFAR-10, Fashion-MNIST) reject Split::Val: take one with subset().
enum class Split { Train, Val, Test };

/// "train", "val", "test".
std::string_view splitName(Split split);

/// A read-only view of one token sequence.
struct TokenSpan {
  const uint16_t *data = nullptr;
  size_t size = 0;
  const uint16_t *begin() const { return data; }
  const uint16_t *end() const { return data + size; }
  uint16_t operator[](size_t i) const { return data[i]; }
};

/// One split of a task.
struct Dataset {
  InputKind kind = InputKind::Tokens;
  int64_t length = 0;   ///< L: the padded length of every sequence
  int64_t channels = 0; ///< Features: values per step; 0 for token tasks
  int64_t vocab = 0;    ///< token tasks: tokens lie in [0, vocab); 0 = padding
  int64_t classes = 0;  ///< labels lie in [0, classes); 0 for Targets

  std::vector<int32_t> labels; ///< one per example (0 unless Labels)

  /// Supervision other than a label an example (the tensors task,
  /// lruc/host/TensorData.h): a label a step, [n, length] (steps past a
  /// sequence's end hold 0 and are not scored; -1 marks a real step not
  /// scored), or real targets, [n,
  /// targetShape...] ([n, length, K] when per step).
  Supervision supervision = Supervision::Labels;
  std::vector<int32_t> stepLabels;
  std::vector<float> targets;
  std::vector<int64_t> targetShape;

  /// Token tasks: the sequences, concatenated. Tokens: sequence i is
  /// tokens[offsets[i], offsets[i+1]). TokenPairs: example i's first
  /// sequence is [offsets[2i], offsets[2i+1]), its second
  /// [offsets[2i+1], offsets[2i+2]). Each is 1..length tokens, none 0.
  std::vector<uint16_t> tokens;
  std::vector<uint64_t> offsets{0};

  /// Features: pixel bytes [n, length, channels]; the model sees
  /// (pixel / 255 - mean[c]) / stddev[c].
  std::vector<uint8_t> pixels;
  std::vector<float> mean, stddev;
  /// Features given as floats instead (the tensors task,
  /// lruc/host/TensorData.h): [n, length, channels], fed as they are;
  /// `pixels`, `mean` and `stddev` are empty then.
  std::vector<float> values;
  /// Float features: each example's real steps, 1..length (its values past
  /// them are 0); empty when every example runs the whole length.
  std::vector<int32_t> featureLengths;

  /// Sequences that were longer than `length` and were cut to it.
  int64_t truncated = 0;

  size_t size() const { return labels.size(); }

  /// Token sequence i (Tokens), or side 0/1 of pair i (TokenPairs).
  TokenSpan sequence(size_t i, int side = 0) const;

  /// The model's input value for pixel byte `pixel` in channel `c`.
  float normalise(uint8_t pixel, int64_t c) const {
    return (float(pixel) / 255.0f - mean[c]) / stddev[c];
  }

  /// Appends one example; `tokens` longer than `length` are cut (and
  /// counted in `truncated`). The caller has checked the tokens' range.
  void addSequence(const uint16_t *tokens, size_t count, int32_t label);
  void addPair(const uint16_t *a, size_t countA, const uint16_t *b,
               size_t countB, int32_t label);

  /// Empty when every invariant above holds; otherwise the first one broken.
  /// (The fuzz targets check it after every successful read.)
  std::string invariantViolation() const;
};

/// The examples `indices` of `dataset`, in that order (e.g. a validation
/// split taken from a training split). Throws std::out_of_range on a bad index.
Dataset subset(const Dataset &dataset, const std::vector<size_t> &indices);

/// Examples [begin, end) of `dataset`.
Dataset slice(const Dataset &dataset, size_t begin, size_t end);

/// A batch in the model's input layout. Vectors of the kinds not in use are
/// left empty.
struct Batch {
  InputKind kind = InputKind::Tokens;
  int64_t size = 0, length = 0, channels = 0;
  std::vector<int32_t> tokens;   ///< [B, L], padding 0 (TokenPairs: side a)
  std::vector<int32_t> lengths;  ///< [B]: real steps
  std::vector<int32_t> tokensB;  ///< TokenPairs: side b, [B, L]
  std::vector<int32_t> lengthsB; ///< TokenPairs: side b, [B]
  std::vector<float> features;   ///< Features: [B, L, C], normalised
  std::vector<int32_t> labels;   ///< [B]
  Supervision supervision = Supervision::Labels;
  std::vector<int32_t> stepLabels;  ///< StepLabels: [B, L]
  std::vector<float> targets;       ///< Targets: [B, targetShape...]
  std::vector<int64_t> targetShape; ///< Targets: past the batch dim
};

/// Fills `batch` with examples `indices[0..count)` of `dataset`, reusing its
/// storage. Throws std::out_of_range on a bad index.
void gather(const Dataset &dataset, const size_t *indices, size_t count,
            Batch &batch);
Batch gather(const Dataset &dataset, const std::vector<size_t> &indices);

} // namespace lruc::data

#endif // LRUC_DATA_DATASET_H
