//===- TensorData.h - The tensors task: a user's own data ------*- C++ -*-===//
//
// `train { data tensors("DIR") }` (or `lru-train --task tensors --data DIR`)
// trains on data of any source, written as safetensors files (e.g. NumPy's
// `safetensors.numpy.save_file`): DIR/train.safetensors,
// DIR/test.safetensors and, optionally, DIR/val.safetensors (without it the
// run holds out part of train, as for IMDB). Each holds, by the names of
// the model's inputs, the examples as the first dimension:
//
//   tokens    I32/I64 [n, L]     token ids, 0 = padding (then none inside a
//                                sequence); or tokens_a and tokens_b (pairs)
//   lengths   I32/I64 [n]        optional (lengths_a, lengths_b for pairs):
//                                each sequence ends at its last non-zero token
//   features  F32 [n, L, C]      instead of tokens; with `lengths`, each
//                                example's steps past its end are not read
//                                (else every sequence runs L steps)
//   labels    I32/I64 [n]        classes 0, 1, ... (loss cross_entropy);
//             or [n, L]          a class a step (pool none); a negative
//                                one (-1, -100) marks a step not scored
//   targets   F32 [n, ...]       instead of labels: real values (loss mse),
//                                [n, L, K] a step; NaN marks a value not
//                                scored
//
// Other tensors are passed over. Token sequences longer than the model's
// length are cut (and counted, Dataset::truncated); features keep their
// length (lru-train refuses a model of another). Everything else out of place
// is a HostError naming the file, the tensor and, for a value, the example.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_HOST_TENSORDATA_H
#define LRUC_HOST_TENSORDATA_H

#include "lruc/data/Dataset.h"
#include "lruc/host/Safetensors.h"

#include <filesystem>

namespace lruc::host {

/// The task's name in model files and on the command line.
inline constexpr const char *kTensorsTask = "tensors";

/// Split `split` of the tensors task under `root`, for a model whose
/// sequences are `length` steps.
data::Dataset readTensorData(const std::filesystem::path &root,
                             data::Split split, int64_t length);

/// The split `file` holds (already read), as readTensorData reads it; with
/// `length` 0, tokens keep the file's length. The dataset returned keeps
/// every invariant of data::Dataset (the fuzz target checks it).
data::Dataset tensorDataFrom(const SafetensorsFile &file, int64_t length);

/// Real-valued features [rows, L, C] (`name` in `file`) as a model reads
/// them, in place: each example's steps past `lengths[k]` (null: none)
/// become 0, as data::Dataset keeps padding (a model library never reads
/// them, NaN or not); the others must be finite (a HostError naming the
/// element otherwise). The tensors task and lru-predict's inputs share it.
void prepareFeatures(float *values, int64_t rows, int64_t L, int64_t C,
                     const int32_t *lengths, const std::string &file,
                     const std::string &name);

/// Real targets, `perExample` floats each: NaN marks a value not scored,
/// an infinity is a HostError naming the example.
void checkTargets(const float *values, uint64_t count, uint64_t perExample,
                  const std::string &file);

/// Whether `root` holds a val.safetensors.
bool tensorDataHasValidation(const std::filesystem::path &root);

} // namespace lruc::host

#endif // LRUC_HOST_TENSORDATA_H
