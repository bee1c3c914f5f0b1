//===- StreamCarries.h - Where streams in step mode stand -------*- C++ -*-===//
//
// Step mode carries each sequence's state from one step to the next in a
// carry block (lruc_model.h). StreamCarries holds that state for n streams
// between runs, so that a stream fed in pieces (tokens as they arrive)
// continues where the last piece ended: lru-predict --stream --carry-out
// writes it after each example's last step, --carry-in starts from it.
//
// On disk it is a safetensors file (a "carry file"): a tensor per carry of
// the model under the manifest's name (`blocks.0.lru.state`, `pool.sum`),
// F32 [n, shape...] (complex states with a last dim of 2: re, im), and
// `steps` I64 [n], the steps each stream has taken; its metadata names the
// model.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_HOST_STREAMCARRIES_H
#define LRUC_HOST_STREAMCARRIES_H

#include "lruc/host/ModelLibrary.h"
#include "lruc/host/Safetensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lruc::host {

class StreamCarries {
public:
  /// `rows` streams that have taken no step (zero carries, as step_reset
  /// leaves them). `step` must outlive this.
  StreamCarries(const StepInfo &step, int64_t rows);

  /// The carries of `file`, a carry file of `rows` streams of the model of
  /// `manifest` (which has step mode and must outlive the result). Throws
  /// HostError naming the file when a carry is missing or of another
  /// shape, when it holds a tensor that is no carry of the model, or a step
  /// count is negative.
  static StreamCarries parse(const SafetensorsFile &file,
                             const Manifest &manifest, int64_t rows);

  int64_t rows() const { return rows_; }
  int64_t steps(int64_t row) const { return steps_[size_t(row)]; }

  /// Rows [begin, begin + count) into `block`, a carry block of `count`
  /// examples (count * StepInfo::carryFloats floats; padding between
  /// carries is left as it is).
  void toBlock(int64_t begin, int64_t count, float *block) const;
  /// Example `b` of `block` (a carry block of `count` examples) as row
  /// `row`, a stream that has taken `steps` steps in all. Calls on
  /// different rows may run concurrently.
  void fromBlock(const float *block, int64_t count, int64_t b, int64_t row,
                 int64_t steps);

  /// The carry file's bytes; `metadata` goes into it as given.
  std::string encode(const Metadata &metadata) const;

private:
  /// The tensor's shape on disk: [rows, shape...] (complex: [..., 2]).
  std::vector<int64_t> storedShape(const CarryInfo &carry) const;

  const StepInfo *step_;
  int64_t rows_;
  std::vector<std::vector<float>> values_; ///< per carry, [rows, floats]
  std::vector<int64_t> steps_;
};

} // namespace lruc::host

#endif // LRUC_HOST_STREAMCARRIES_H
