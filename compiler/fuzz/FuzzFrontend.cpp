//===- FuzzFrontend.cpp - libFuzzer entry point for the .lru front end ----===//
//
// Any byte string must give either a model or diagnostics: no crash, no hang,
// no sanitizer report. The same entry point is linked into
// lruc-frontend-replay, which replays the corpus in the normal test suite.
//
//===----------------------------------------------------------------------===//

#include "lruc/frontend/Frontend.h"

#include <cstddef>
#include <cstdint>
#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lruc::SourceFile source{"fuzz.lru",
                          std::string(reinterpret_cast<const char *>(data), size)};
  std::ostringstream diagnostics;
  lruc::DiagnosticEngine diags(source, diagnostics);
  // Overrides exercise the -D path on every input.
  lruc::FrontendOptions options;
  options.overrides = {{"H", 16}};
  options.ignoreTrain = size % 2; // both paths, chosen by the input
  if (auto model = lruc::parseModel(source, options, diags)) {
    std::ostringstream printed;
    lruc::printModel(*model, printed);
  }
  return 0;
}
