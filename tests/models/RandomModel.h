//===- RandomModel.h - Random valid model files for differential tests -*- C++ -*-===//
//
// A model file drawn from a seed: any input kind, encoder, a few blocks of
// any norm and any sequence of layers (widths changed by `linear` and put
// back before the block ends), any pooling, head and loss the language
// allows with them, at toy sizes (lengths down to 1, widths down to 1). The
// whole-model tests run them through the same checks as the files of
// models/ and examples/, so combinations nobody wrote by hand are checked
// too. The same seed gives the same text on every machine.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_TESTS_RANDOMMODEL_H
#define LRUC_TESTS_RANDOMMODEL_H

#include "ModelFixture.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lruc::testing {

/// The text of the model file drawn from `seed` (a model named
/// `random_SEED`, most with a train section: AdamW's settings, the
/// recurrent learning-rate factor, clipping; no task).
std::string randomModelSource(uint64_t seed, int64_t minLength = 1);

/// `count` random models from seed `first` on, as test cases named
/// `random_SEED` compiled with their train sections. `minLength` raises
/// shorter sequences to it (2: every batch of the test fixture has
/// padding), the rest of the model as drawn.
std::vector<ModelCase> randomModelCases(unsigned count, uint64_t first = 1,
                                        int64_t minLength = 1);

/// The random models a test suite searches: randomModelCases(count, 1,
/// minLength) unless `LRUC_RANDOM_MODELS` (the count) or
/// `LRUC_RANDOM_MODEL_SEED` (the first seed) say otherwise. Lists of chosen
/// seeds call randomModelCases and keep their seeds.
std::vector<ModelCase> searchedRandomModelCases(unsigned count,
                                                int64_t minLength = 1);

} // namespace lruc::testing

#endif // LRUC_TESTS_RANDOMMODEL_H
