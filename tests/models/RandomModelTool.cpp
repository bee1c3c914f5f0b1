//===- RandomModelTool.cpp - Prints the random model of a seed ------------===//
//
// `lruc-random-model SEED` writes the model file the whole-model tests draw
// from SEED (tests/models/RandomModel.h) to stdout: to reproduce a failing
// case with lruc itself, or to run it through other checks (the framework
// agreement of bench/reference).
//
//===----------------------------------------------------------------------===//

#include "RandomModel.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
  char *end = nullptr;
  errno = 0;
  unsigned long long seed = argc == 2 ? std::strtoull(argv[1], &end, 10) : 0;
  if (argc != 2 || *argv[1] == '\0' || *argv[1] == '-' || *end != '\0' ||
      errno == ERANGE) {
    std::fprintf(stderr, "usage: lruc-random-model SEED (a whole number)\n");
    return 2;
  }
  std::fputs(lruc::testing::randomModelSource(seed).c_str(), stdout);
  return 0;
}
