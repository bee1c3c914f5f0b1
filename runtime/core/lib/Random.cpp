//===- Random.cpp - Philox4x32-10 and what is drawn from it ---------------===//

#include "lruc/core/Random.h"

#include <cstdint>

#include "lruc/core/PhiloxRounds.h"

#include <cmath>

namespace lruc::core {

PhiloxCounter philox4x32(PhiloxCounter counter, PhiloxKey key) {
  philoxRounds(counter.data(), key[0], key[1]);
  return counter;
}

constexpr double kTwoToMinus24 = 1.0 / double(1 << 24);

double uniform24(uint32_t u) { return double(u >> 8) * kTwoToMinus24; }

double uniformOpen(uint32_t u) {
  return (double(u >> 8) + 0.5) * kTwoToMinus24;
}

uint32_t fnv1a32(std::string_view text) {
  uint32_t hash = 2166136261u;
  for (char c : text) {
    hash ^= uint8_t(c);
    hash *= 16777619u;
  }
  return hash;
}

bool dropoutKeep(uint64_t seed, uint32_t step, uint32_t site, uint64_t index,
                 double rate) {
  PhiloxKey key = {uint32_t(seed), uint32_t(seed >> 32)};
  uint64_t block = index / 4;
  PhiloxCounter counter = {uint32_t(block), uint32_t(block >> 32), site, step};
  return uniform24(philox4x32(counter, key)[index % 4]) >= rate;
}

uint32_t dropoutThreshold(double rate) {
  // uniform24(u) >= rate  <=>  (u >> 8) >= rate * 2^24  <=>  (u >> 8) >=
  // ceil(rate * 2^24), as u >> 8 is an integer (rate * 2^24 is exact).
  double scaled = std::ceil(rate * double(1 << 24));
  return scaled <= 0                 ? 0
         : scaled >= double(1 << 24) ? (1u << 24)
                                     : uint32_t(scaled);
}

} // namespace lruc::core
