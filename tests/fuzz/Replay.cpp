//===- Replay.cpp - Run files and directories through the fuzz target -----===//
//
//   lruc-frontend-replay PATH...
//
// Feeds every regular file under each PATH to LLVMFuzzerTestOneInput. A
// crash or sanitizer report fails the test; reaching the end passes it. Fails
// if no file was found, so a moved corpus cannot pass by replaying nothing.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace fs = std::filesystem;

static void replay(const fs::path &file, size_t &count) {
  std::ifstream in(file, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                         bytes.size());
  ++count;
}

int main(int argc, char **argv) {
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    fs::path path = argv[i];
    if (fs::is_directory(path)) {
      for (const auto &entry : fs::recursive_directory_iterator(path))
        if (entry.is_regular_file())
          replay(entry.path(), count);
    } else if (fs::is_regular_file(path)) {
      replay(path, count);
    } else {
      std::fprintf(stderr, "lruc-frontend-replay: no such file: %s\n", argv[i]);
      return 1;
    }
  }
  std::printf("replayed %zu inputs\n", count);
  return count == 0;
}
