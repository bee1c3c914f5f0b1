//===- ModelInputs.h - A model's inputs from a safetensors file -*- C++ -*-===//
//
// What lru-predict feeds a model: a safetensors file holding one tensor per
// model input under the input's name, every one with the examples as its
// first dimension (the layout `lru-eval --dump-batch` writes: `tokens` I32
// [n, L], `features` F32 [n, L, C], `lengths` I32 [n], ...). I64 integers
// are taken too (NumPy's default), when their values fit.
//
//   - The loss's input (`labels` or `targets`) may be left out: zeros then,
//     and ModelInputs::hasLoss is false.
//   - A `lengths` input may be left out: a token sequence then ends at its
//     last non-zero token (0 is padding), features run the whole length.
//   - Features past an example's length are not read (they may be NaN;
//     the model library never reads them) and are fed as 0, as the tensors
//     task feeds them.
//
// Everything else out of place (a missing input, another shape or dtype,
// different numbers of examples, a length outside 1..L (0..L where empty
// sequences are allowed), a feature at a real
// step that is not finite, an infinite target: NaN marks a target not
// scored) is a HostError naming the file and the input. Values the library
// checks itself (tokens below the vocabulary, labels below the classes) are
// left to it.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_HOST_MODELINPUTS_H
#define LRUC_HOST_MODELINPUTS_H

#include "lruc/host/ModelLibrary.h"
#include "lruc/host/Safetensors.h"

#include <cstdint>
#include <vector>

namespace lruc::host {

/// One model input as the calls read it: `rows` examples in its dtype.
struct InputColumn {
  const TensorInfo *info = nullptr; ///< the manifest's
  std::vector<char> bytes;
  size_t rowBytes = 0;
};

/// A file's examples as a model's inputs, in call order. Its pointers are
/// into its own columns and the manifest it was read for.
struct ModelInputs {
  std::vector<InputColumn> columns;
  int64_t rows = 0;
  bool hasLoss = false;                ///< the loss's input was given
  const int32_t *lengths = nullptr;    ///< the first lengths input's, if any
  const int32_t *labels = nullptr;     ///< an example's `labels`, if given
  const int32_t *stepLabels = nullptr; ///< per-step `labels`, if given
  const float *targets = nullptr;      ///< `targets`, if given
};

/// Whether a given length may be 0: a sequence with no step (step mode's
/// streams with nothing new in a piece) or not (forward needs a step).
enum class EmptySequences { Rejected, Allowed };

/// Reads `file`'s tensors for `m`'s inputs (see above).
ModelInputs readModelInputs(const SafetensorsFile &file, const Manifest &m,
                            EmptySequences empty = EmptySequences::Rejected);

} // namespace lruc::host

#endif // LRUC_HOST_MODELINPUTS_H
