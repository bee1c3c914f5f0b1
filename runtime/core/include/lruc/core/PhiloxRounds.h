//===- PhiloxRounds.h - Philox4x32-10 for host and device -------*- C++ -*-===//
//
// The ten rounds of Philox4x32 (Random123's philox4x32_R(10, ...)) on
// builtin types only, so that the same definition compiles as host C++
// (runtime/core) and inside the CUDA code lruc generates (NVRTC, no
// standard headers: the CUDA prelude defines uint32_t and uint64_t first).
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CORE_PHILOXROUNDS_H
#define LRUC_CORE_PHILOXROUNDS_H

#ifdef __CUDACC__
#define LRUC_HOST_DEVICE __host__ __device__
#else
#define LRUC_HOST_DEVICE
#endif

namespace lruc::core {

/// counter <- Philox4x32-10(counter, {key0, key1}).
LRUC_HOST_DEVICE inline void philoxRounds(uint32_t counter[4], uint32_t key0,
                                          uint32_t key1) {
  // The multipliers and Weyl increments of Random123's philox4x32.
  const uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  const uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += w0;
      key1 += w1;
    }
    uint64_t p0 = uint64_t(m0) * counter[0], p1 = uint64_t(m1) * counter[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    uint32_t c1 = counter[1], c3 = counter[3];
    counter[0] = hi1 ^ c1 ^ key0;
    counter[1] = lo1;
    counter[2] = hi0 ^ c3 ^ key1;
    counter[3] = lo0;
  }
}

} // namespace lruc::core

#endif // LRUC_CORE_PHILOXROUNDS_H
