//===- FuzzStreamCarries.cpp - libFuzzer entry point: carry files ---------===//
//
// Any bytes, read as lru-predict --carry-in's carry file of 1 to 3 streams
// of a model with a complex state and a float sum (padding between them in
// the block): the reader either throws HostError or returns carries whose
// steps are not negative and which write back to a file that reads again
// to the same bytes. Any other exception aborts (the fuzzer's crash), and
// so does a sanitizer report.
//
//===----------------------------------------------------------------------===//

#include "lruc/host/StreamCarries.h"

#include <cstdio>
#include <cstdlib>

namespace {

using lruc::host::Manifest;
using lruc::host::StreamCarries;

const Manifest &fuzzManifest() {
  static const Manifest manifest = [] {
    Manifest m;
    m.model = "fuzz";
    lruc::host::StepInfo step;
    step.carryFloats = 12;
    step.carries = {{"blocks.0.lru.state", true, {2, 2}, 0},
                    {"pool.sum", false, {3}, 9}};
    m.step = step;
    return m;
  }();
  return manifest;
}

void fail(const char *what) {
  std::fprintf(stderr, "carry file reader: %s\n", what);
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  const Manifest &m = fuzzManifest();
  for (int64_t rows = 1; rows <= 3; ++rows) {
    try {
      const lruc::host::SafetensorsFile file =
          lruc::host::SafetensorsFile::parse(bytes, "fuzz.safetensors");
      const StreamCarries carries = StreamCarries::parse(file, m, rows);
      for (int64_t r = 0; r < rows; ++r)
        if (carries.steps(r) < 0)
          fail("a negative step count");
      std::vector<float> block(size_t(rows) * m.step->carryFloats);
      carries.toBlock(0, rows, block.data());
      const std::string again = carries.encode({});
      const StreamCarries reread = StreamCarries::parse(
          lruc::host::SafetensorsFile::parse(again, "again.safetensors"), m,
          rows);
      if (reread.encode({}) != again)
        fail("a carry file that does not read back the same");
    } catch (const lruc::host::HostError &) {
    }
  }
  return 0;
}
