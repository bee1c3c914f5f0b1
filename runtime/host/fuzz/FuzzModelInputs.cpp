//===- FuzzModelInputs.cpp - libFuzzer entry point: lru-predict inputs ----===//
//
// Any bytes, read as lru-predict's inputs for three small models (tokens
// with per-step labels, features with targets, token pairs): the reader
// either throws HostError or returns a column of every input holding
// exactly `rows` rows of the input's shape, every length in 1..L (0..L
// where empty sequences are allowed, as lru-predict --stream reads). Any
// other exception aborts (the fuzzer's crash), and so does a sanitizer
// report.
//
//===----------------------------------------------------------------------===//

#include "lruc/host/ModelInputs.h"

#include <cstdio>
#include <cstdlib>

namespace {

using lruc::host::DType;
using lruc::host::Manifest;

Manifest manifestOf(std::vector<lruc::host::TensorInfo> inputs) {
  Manifest m;
  m.model = "fuzz";
  m.inputs = std::move(inputs);
  return m;
}

const std::vector<Manifest> &fuzzManifests() {
  static const std::vector<Manifest> manifests = {
      manifestOf({{"tokens", DType::I32, {-1, 8}},
                  {"lengths", DType::I32, {-1}},
                  {"labels", DType::I32, {-1, 8}}}),
      manifestOf({{"features", DType::F32, {-1, 4, 2}},
                  {"lengths", DType::I32, {-1}},
                  {"targets", DType::F32, {-1, 1}}}),
      manifestOf({{"tokens_a", DType::I32, {-1, 6}},
                  {"lengths_a", DType::I32, {-1}},
                  {"tokens_b", DType::I32, {-1, 6}},
                  {"lengths_b", DType::I32, {-1}},
                  {"labels", DType::I32, {-1}}}),
  };
  return manifests;
}

void fail(const char *what) {
  std::fprintf(stderr, "model inputs reader: %s\n", what);
  std::abort();
}

void check(const lruc::host::ModelInputs &in, const Manifest &m,
           lruc::host::EmptySequences empty) {
  const int32_t least = empty == lruc::host::EmptySequences::Allowed ? 0 : 1;
  if (in.rows < 1 || in.columns.size() != m.inputs.size())
    fail("no rows, or a column missing");
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const lruc::host::TensorInfo &info = m.inputs[i];
    const lruc::host::InputColumn &column = in.columns[i];
    uint64_t row = lruc::host::dtypeSize(info.dtype);
    for (size_t d = 1; d < info.shape.size(); ++d)
      row *= uint64_t(info.shape[d]);
    if (column.info != &info || column.rowBytes != row ||
        column.bytes.size() != row * uint64_t(in.rows))
      fail("a column of another size than its input's rows");
    if (info.name.rfind("lengths", 0) != 0)
      continue;
    const int64_t steps = m.inputs[i - 1].shape[1]; // its sequence's
    const auto *lengths =
        reinterpret_cast<const int32_t *>(column.bytes.data());
    for (int64_t k = 0; k < in.rows; ++k)
      if (lengths[k] < least || lengths[k] > steps)
        fail("a length outside 1..L (0..L where empty sequences are allowed)");
  }
  if (!in.lengths)
    fail("no lengths");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  for (const Manifest &m : fuzzManifests())
    for (auto empty : {lruc::host::EmptySequences::Rejected,
                       lruc::host::EmptySequences::Allowed}) {
      try {
        const lruc::host::SafetensorsFile file =
            lruc::host::SafetensorsFile::parse(bytes, "fuzz.safetensors");
        check(lruc::host::readModelInputs(file, m, empty), m, empty);
      } catch (const lruc::host::HostError &) {
      }
    }
  return 0;
}
