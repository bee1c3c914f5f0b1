//===- Random.h - Counter-based random numbers ------------------*- C++ -*-===//
//
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011; the Random123 library): a random number is a pure function of
// a counter and a key, so any element of a dropout mask or of a parameter's
// initial value can be computed on its own, on any device, in any order. The
// backward pass regenerates a dropout mask instead of storing it.
//
// Plain C++17, no MLIR or LLVM: the reference interpreter and the generated
// CPU and CUDA code share these definitions.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CORE_RANDOM_H
#define LRUC_CORE_RANDOM_H

#include <array>
#include <cstdint>
#include <string_view>

namespace lruc::core {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

/// Ten rounds of Philox4x32 on `counter` with `key` (Random123's
/// philox4x32_R(10, ...)).
PhiloxCounter philox4x32(PhiloxCounter counter, PhiloxKey key);

/// The top 24 bits of `u` as a double in [0, 1).
double uniform24(uint32_t u);

/// The top 24 bits of `u` as a double in (0, 1), never 0 or 1, so that
/// logarithms of it are finite.
double uniformOpen(uint32_t u);

/// FNV-1a, 32 bits: the hash of a parameter's name in its init counter.
uint32_t fnv1a32(std::string_view text);

/// Whether dropout keeps element `index` (the flat row-major index) of the
/// tensor at dropout `site` in training step `step`. One Philox call decides
/// four neighbouring elements: key = {seed lo32, seed hi32}, counter =
/// {block lo32, block hi32, site, step} with block = index / 4; element
/// `index` is kept iff uniform24(output word index % 4) >= rate.
bool dropoutKeep(uint64_t seed, uint32_t step, uint32_t site, uint64_t index,
                 double rate);

/// The same decision as an integer test on one Philox output word `u`:
/// kept iff (u >> 8) >= dropoutThreshold(rate).
uint32_t dropoutThreshold(double rate);

/// What a kept element is multiplied by: 1 / (1 - rate) rounded to float.
/// The kernels (CPU and CUDA) take the float product x * scale; the fp64
/// interpreter's product of the same two floats is exact, so its value
/// rounded to float is theirs bit for bit. A product, not a division (a
/// GPU's division branches, holding each row's loads behind the row
/// before), and in float: a product in double took a fifth of a CPU loop
/// of GELU and dropout.
inline float dropoutScale(double rate) { return float(1.0 / (1.0 - rate)); }

} // namespace lruc::core

#endif // LRUC_CORE_RANDOM_H
