//===- FuzzTensorData.cpp - libFuzzer entry point: tensors task files -----===//
//
// Any bytes, read as a split of the tensors task (a user's own data): the
// reader either throws HostError or returns a dataset that keeps every
// invariant of data::Dataset, at the file's length and cut to 8 steps, and
// whose examples all gather into one batch. Any other exception aborts (the
// fuzzer's crash), and so does a sanitizer report.
//
//===----------------------------------------------------------------------===//

#include "lruc/host/TensorData.h"

#include <cstdio>
#include <cstdlib>
#include <numeric>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  for (int64_t length : {0, 8}) {
    try {
      const lruc::host::SafetensorsFile file =
          lruc::host::SafetensorsFile::parse(bytes, "fuzz.safetensors");
      const lruc::data::Dataset d = lruc::host::tensorDataFrom(file, length);
      if (std::string broken = d.invariantViolation(); !broken.empty()) {
        std::fprintf(stderr, "tensors reader broke an invariant: %s\n",
                     broken.c_str());
        std::abort();
      }
      std::vector<size_t> all(d.size());
      std::iota(all.begin(), all.end(), size_t(0));
      const lruc::data::Batch batch = lruc::data::gather(d, all);
      if (batch.size != int64_t(d.size()))
        std::abort();
    } catch (const lruc::host::HostError &) {
    }
  }
  return 0;
}
