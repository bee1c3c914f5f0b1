//===- lruc_device.cuh - Device helpers of generated CUDA code --*- CUDA -*-===//
//
// The prelude of every CUDA source lruc generates (`lruc --emit=cuda`),
// compiled by NVRTC: no standard headers, so the fixed-width integers are
// defined here. It holds what runtime/cpu's Kernels.h holds for the CPU
// library: the scalar helpers the fused kernels name as lruc::gpu:: (the
// same names, the formulas of the reference interpreter in float), complex
// arithmetic, and the device side of bad-data reports. The emitter writes
// one kernel per op with its shapes as constants; only the batch `B` is a
// run-time argument.
//
//===----------------------------------------------------------------------===//

#ifdef __CUDACC_RTC__
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#elif defined(LRUC_GPU_SIMULATE)
// The GPU simulator (tests/models/GpuSimulator.h): the kernels compiled as
// C++ for the CPU. It runs a kernel's threads one after another, or, for a
// kernel whose threads synchronise, a block's threads as coroutines that
// switch at each barrier: `lruc_sim_wait`, which the simulator sets, returns
// once every thread of the block (-1) or of warp `w` has called it. The
// indices below are the running thread's; the simulator sets them before it
// resumes one. Atomics are plain updates: threads switch only at barriers.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>
#define __device__
#define __host__
#define __global__
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
struct lruc_sim_index {
  unsigned x;
};
struct lruc_sim_dims {
  lruc_sim_index threadIdx, blockIdx, blockDim, gridDim;
};
extern "C" {
__attribute__((visibility("default"))) lruc_sim_dims lruc_sim_now;
__attribute__((visibility("default"))) void (*lruc_sim_wait)(int warp);
}
#define threadIdx (lruc_sim_now.threadIdx)
#define blockIdx (lruc_sim_now.blockIdx)
#define blockDim (lruc_sim_now.blockDim)
#define gridDim (lruc_sim_now.gridDim)
inline void __syncthreads() { lruc_sim_wait(-1); }
inline float __fdividef(float x, float y) { return x / y; }
/// Lane + offset's `value` (the lane's own past the warp's end): each lane
/// writes its value into one of two exchange rows, waits for its warp, then
/// reads. Two rows, alternating per lane: a lane's next shuffle cannot
/// overwrite a value that another lane has still to read, since that lane
/// must reach the next shuffle's barrier first.
inline float __shfl_down_sync(unsigned, float value, int offset) {
  static float exchange[2][1024];
  static unsigned round[1024];
  const unsigned lane = threadIdx.x % 32, row = round[threadIdx.x]++ % 2;
  exchange[row][threadIdx.x] = value;
  lruc_sim_wait(int(threadIdx.x / 32));
  return lane + unsigned(offset) < 32 ? exchange[row][threadIdx.x + offset]
                                      : value;
}
/// Lane `source`'s `value`, exchanged as in __shfl_down_sync.
inline unsigned __shfl_sync(unsigned, unsigned value, int source) {
  static unsigned exchange[2][1024];
  static unsigned round[1024];
  const unsigned row = round[threadIdx.x]++ % 2;
  exchange[row][threadIdx.x] = value;
  lruc_sim_wait(int(threadIdx.x / 32));
  return exchange[row][threadIdx.x / 32 * 32 + unsigned(source) % 32];
}
inline float atomicAdd(float *address, float value) {
  float old = *address;
  *address = old + value;
  return old;
}
inline int atomicCAS(int *address, int expected, int value) {
  int old = *address;
  if (old == expected)
    *address = value;
  return old;
}
inline int atomicAdd(int *address, int value) {
  int old = *address;
  *address = old + value;
  return old;
}
inline int atomicExch(int *address, int value) {
  int old = *address;
  *address = value;
  return old;
}
inline void __threadfence() {}
inline unsigned __float_as_uint(float x) {
  unsigned u;
  memcpy(&u, &x, sizeof u);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
inline void __syncwarp() { lruc_sim_wait(int(threadIdx.x / 32)); }
#else // nvcc, for checking the prelude by hand
#include <cstdint>
#endif

// A loop unrolled, whole (a constant trip count) or by 2, 4 or 8 (NVRTC,
// nvcc); the simulator's C++ compiler takes it as it is.
#ifdef LRUC_GPU_SIMULATE
#define LRUC_UNROLL
#define LRUC_UNROLL_2
#define LRUC_UNROLL_4
#define LRUC_UNROLL_8
#else
#define LRUC_UNROLL _Pragma("unroll")
#define LRUC_UNROLL_2 _Pragma("unroll 2")
#define LRUC_UNROLL_4 _Pragma("unroll 4")
#define LRUC_UNROLL_8 _Pragma("unroll 8")
#endif

// A device function kept out of line (one copy a module), or, simulated, a
// plain function the C++ compiler may inline.
#ifdef LRUC_GPU_SIMULATE
#define LRUC_NOINLINE
#else
#define LRUC_NOINLINE __noinline__
#endif

#include "lruc/core/PhiloxRounds.h"

namespace lruc {
namespace gpu {

// --- Complex numbers (interleaved re, im, as std::complex<float>) -----------

/// 8-byte aligned (as float2), so that a thread loads or stores one
/// complex value with one 64-bit access, not two 32-bit ones: a scan's
/// loads are most of its instructions. Every complex array a kernel is
/// given starts at a multiple of 8 bytes (workspace slots at 64, step
/// mode's complex carries at an even float offset).
struct __align__(8) cfloat {
  float re, im;
  __device__ cfloat() : re(0.0f), im(0.0f) {}
  __device__ cfloat(float r) : re(r), im(0.0f) {}
  __device__ cfloat(float r, float i) : re(r), im(i) {}
  __device__ float real() const { return re; }
  __device__ float imag() const { return im; }
};

// --- bfloat16 storage (lruc --gpu-storage=bf16) ------------------------------

/// `x` rounded to bfloat16's nearest even, as its 16 bits (NaN stays NaN;
/// a float past bfloat16's largest rounds to infinity, as a float would).
/// On sm_80 and later one instruction (cvt.rn.bf16.f32); elsewhere (the
/// simulator, which checks these values, or an older device) by its bits,
/// which gives the same numbers.
__device__ inline unsigned short bf16Bits(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short bits;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(x));
  return bits;
#else
  const uint32_t u = __float_as_uint(x);
  return (u & 0x7fffffffu) > 0x7f800000u
             ? (unsigned short)((u >> 16) | 0x40u)
             : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
}

/// `lo` and `hi` rounded as bf16Bits, `lo` in the low half: one
/// instruction on sm_80 and later (cvt.rn.bf16x2.f32).
__device__ inline uint32_t bf16PairBits(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t bits;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(bits) : "f"(hi), "f"(lo));
  return bits;
#else
  return uint32_t(bf16Bits(lo)) | uint32_t(bf16Bits(hi)) << 16;
#endif
}

/// A float stored in 16 bits: its sign, exponent and top 7 mantissa bits.
/// Kernels read and write arrays of these as they do float arrays: a load
/// widens exactly, a store rounds to nearest even (bf16Bits).
struct __align__(2) bf16 {
  unsigned short bits;
  __device__ operator float() const {
    return __uint_as_float(uint32_t(bits) << 16);
  }
  __device__ bf16 &operator=(float x) {
    bits = bf16Bits(x);
    return *this;
  }
};

/// A complex value stored as two bf16 parts, the real one at the lower
/// address: one 4-byte load or store (two 2-byte members were two of each).
struct __align__(4) cbf16 {
  uint32_t bits;
  __device__ float real() const { return __uint_as_float(bits << 16); }
  __device__ float imag() const {
    return __uint_as_float(bits & 0xffff0000u);
  }
  __device__ operator cfloat() const { return cfloat(real(), imag()); }
  __device__ cbf16 &operator=(cfloat z) {
    bits = bf16PairBits(z.re, z.im);
    return *this;
  }
};

__device__ inline cfloat operator+(cfloat a, cfloat b) {
  return cfloat(a.re + b.re, a.im + b.im);
}
__device__ inline cfloat operator-(cfloat a, cfloat b) {
  return cfloat(a.re - b.re, a.im - b.im);
}
__device__ inline cfloat operator-(cfloat a) { return cfloat(-a.re, -a.im); }
__device__ inline cfloat &operator+=(cfloat &a, cfloat b) { return a = a + b; }
__device__ inline cfloat operator*(cfloat a, cfloat b) {
  return cfloat(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
/// a / b as (a conj(b)) / |b|^2: the CPU library's division (it is built
/// with -fcx-limited-range).
__device__ inline cfloat operator/(cfloat a, cfloat b) {
  float d = b.re * b.re + b.im * b.im;
  return cfloat((a.re * b.re + a.im * b.im) / d,
                (a.im * b.re - a.re * b.im) / d);
}

__device__ inline float real(cfloat z) { return z.re; }
__device__ inline float imag(cfloat z) { return z.im; }
__device__ inline float real(float x) { return x; }
__device__ inline float imag(float) { return 0.0f; }
__device__ inline cfloat conj(cfloat z) { return cfloat(z.re, -z.im); }

// --- Scalar functions the generated kernels use ------------------------------

__device__ inline float exp(float x) { return expf(x); }
__device__ inline cfloat exp(cfloat z) {
  float m = expf(z.re), s, c;
  sincosf(z.im, &s, &c);
  return cfloat(m * c, m * s);
}
__device__ inline float log(float x) { return logf(x); }
__device__ inline float sqrt(float x) { return sqrtf(x); }
__device__ inline float rsqrt(float x) { return 1.0f / sqrtf(x); }
__device__ inline float tanh(float x) { return tanhf(x); }
__device__ inline float max(float a, float b) { return fmaxf(a, b); }

/// 1 / (1 + e^-x); 0 or 1 (never NaN) where e^-x overflows. The fast
/// division (2 ulp, 0 past 2^126): IEEE division's rarely taken slow path
/// is a call that ptxas moves no loads across, so in an unrolled tile each
/// row's loads waited for the row before's sigmoid.
__device__ inline float sigmoid(float x) {
  return __fdividef(1.0f, 1.0f + expf(-x));
}

/// log(1 + e^x), no overflow: x + log1p(e^-x) for x > 0.
__device__ inline float softplus(float x) {
  return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}

/// Exact: x Φ(x) = ½ x (1 + erf(x/√2)); approximate: the tanh form.
__device__ inline float gelu(float x, bool approximate) {
  const float kSqrt2OverPi = 0.79788456080286535588f;
  if (approximate)
    return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
}

/// d gelu / dx (runtime/cpu's geluGrad: the tanh form's second term is
/// skipped where 1 - t^2 is 0).
__device__ inline float geluGrad(float x, bool approximate) {
  const float kSqrt2OverPi = 0.79788456080286535588f;
  if (approximate) {
    float t = tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x));
    float sech2 = 1.0f - t * t;
    if (sech2 == 0.0f)
      return 0.5f * (1.0f + t);
    float du = kSqrt2OverPi * (1.0f + 3.0f * 0.044715f * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * sech2 * du;
  }
  float density = expf(-0.5f * x * x) * 0.39894228040143267794f;
  return 0.5f * (1.0f + erff(x * 0.70710678118654752440f)) + x * density;
}

// --- Threads -------------------------------------------------------------------

/// The first index of this thread in a grid-stride loop, and the stride.
__device__ inline int64_t firstIndex() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t gridStride() {
  return int64_t(gridDim.x) * blockDim.x;
}

/// The sum of `v` over the block (blockDim.x a multiple of 32, at most
/// 1024), in thread 0; the same tree every run, so sums repeat exactly.
__device__ inline float blockSum(float v) {
  __shared__ float partial[32];
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_down_sync(0xffffffffu, v, offset);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? partial[lane] : 0.0f;
  if (warp == 0)
    for (int offset = 16; offset > 0; offset /= 2)
      v += __shfl_down_sync(0xffffffffu, v, offset);
  __syncthreads(); // partial is reused by the next call
  return v;
}

/// Lane by lane, the sum over the block's warps of `v` (float or double),
/// added in warp order (the same every run), in warp 0; every thread of the
/// block must call it.
template <typename T> __device__ inline T sumOverWarps(T v) {
  __shared__ T partial[32][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  partial[warp][lane] = v;
  __syncthreads();
  T total = 0;
  if (warp == 0)
    for (int w = 0; w < int(blockDim.x / 32); ++w)
      total += partial[w][lane];
  __syncthreads(); // partial is reused by the next call
  return total;
}

/// In double, the sum of `rows[c * stride]` (floats or cfloats) over the
/// rows c = w, w + W, ... < count of this thread's warp w of the block's W:
/// a thread keeps 16 rows' loads in flight (a column-sum kernel has few
/// blocks: with one load at a time, then four, it waited on memory, 60 and
/// then 21 µs for Text's 2048 rows on an H100), and adds them into four
/// partial sums in a fixed order, so sums repeat exactly. Not inlined: one
/// copy a module for the many kernels that call it, which keeps NVRTC's
/// and ptxas's work as it was.
template <typename T>
__device__ LRUC_NOINLINE void sumRows(const T *rows, int64_t stride,
                                      int64_t count, double &re,
                                      double &im) {
  constexpr int kInFlight = 16;
  const int64_t warps = blockDim.x / 32;
  double r[4] = {0.0, 0.0, 0.0, 0.0}, m[4] = {0.0, 0.0, 0.0, 0.0};
  int64_t c = threadIdx.x / 32;
  for (; c + (kInFlight - 1) * warps < count; c += kInFlight * warps) {
    T v[kInFlight];
    LRUC_UNROLL
    for (int u = 0; u < kInFlight; ++u)
      v[u] = rows[(c + u * warps) * stride];
    LRUC_UNROLL
    for (int u = 0; u < kInFlight; ++u) {
      r[u % 4] += real(v[u]);
      m[u % 4] += imag(v[u]);
    }
  }
  for (; c < count; c += warps) {
    r[0] += real(rows[c * stride]);
    m[0] += imag(rows[c * stride]);
  }
  re = (r[0] + r[1]) + (r[2] + r[3]);
  im = (m[0] + m[1]) + (m[2] + m[3]);
}

__device__ inline cfloat blockSum(cfloat v) {
  float re = blockSum(v.re);
  return cfloat(re, blockSum(v.im));
}

// --- Bad data --------------------------------------------------------------------
//
// A kernel that meets bad data (an index out of range, a length outside
// [0, L]) records the first report in the call's Status block and writes
// zeros; the host reads the block once, after the call, and turns it into
// the message the CPU library would give (lruc_model.h: nonzero return).

struct Status {
  int32_t op;    ///< the reporting op's number in its function, -1: none
  int32_t pad;
  int64_t index; ///< the bad entry's flat index
  int64_t value; ///< and its value
};

__device__ inline void report(Status *status, int32_t op, int64_t index,
                              int64_t value) {
  if (atomicCAS(&status->op, -1, op) == -1) {
    status->index = index;
    status->value = value;
  }
}

// --- Scans in chunks ------------------------------------------------------------
//
// A long scan runs as a block per chunk of steps of a sequence (and 32 of
// its channels), so that a few sequences still fill the device. Each
// chunk's block hands its end state (the carry) to the next chunk's through
// device memory just after the call's Status block, the function's scan
// chain: a ticket counter, a flag per item, a carry per item and lane.
// Blocks take their items by ticket, in the order they start, chunk by
// chunk (all first chunks, then all second ones, ...): the block a chunk
// waits for has started before it and waits only for earlier ones, so the
// waits end whatever order the device runs blocks in. The schedule zeroes
// the counter and the flags once a call (scan_chain_reset); each launch
// leaves them zero again: the last ticket resets the counter, and each
// flag is cleared by the one block that reads it.

struct ScanChain {
  int *ticket;
  int *flags;     ///< [items]: 1 once the item's carry is there
  float *carries; ///< [items][32 lanes][re, im]
};

/// The scan chain of a function whose chunked scans have at most `items`
/// items a launch.
__device__ inline ScanChain scanChain(Status *status, int64_t items) {
  char *base = reinterpret_cast<char *>(status) + 64;
  ScanChain chain;
  chain.ticket = reinterpret_cast<int *>(base);
  chain.flags = reinterpret_cast<int *>(base + 64);
  chain.carries =
      reinterpret_cast<float *>(base + 64 + (items * 4 + 255) / 256 * 256);
  return chain;
}

/// Thread `i` of the reset kernel's grid (FUNCTION_scan_chain_reset, at
/// least one thread an item): the counter and item i's flag zeroed.
__device__ inline void clearScanChain(ScanChain chain, int64_t items,
                                      int64_t i) {
  if (i == 0)
    *chain.ticket = 0;
  if (i < items)
    chain.flags[i] = 0;
}

/// The item of the calling block (thread 0 takes it) among `items`.
__device__ inline int64_t takeTicket(ScanChain chain, int64_t items) {
  const int ticket = atomicAdd(chain.ticket, 1);
  if (ticket == items - 1)
    atomicExch(chain.ticket, 0); // every block has its item
  return ticket;
}

/// Warp 0 of item `item`'s block: its carry, lane by lane, for the next
/// chunk's block.
__device__ inline void giveCarry(ScanChain chain, int64_t item, int lane,
                                 float re, float im) {
  float *slot = chain.carries + (item * 32 + lane) * 2;
  slot[0] = re;
  slot[1] = im;
  // Every lane's carry before the flag, for a reader on another SM: each
  // lane's stores fenced, the warp met, and the flag set after a fence of
  // its own.
  __threadfence();
  __syncwarp();
  if (lane == 0) {
    __threadfence();
    atomicExch(chain.flags + item, 1);
  }
}

/// Warp 0 of the block after item `item` in its sequence: that item's
/// carry, once it is there.
__device__ inline void takeCarry(ScanChain chain, int64_t item, int lane,
                                 float &re, float &im) {
  if (lane == 0) {
#ifdef LRUC_GPU_SIMULATE
    // One block at a time, in ticket order: the carry is there, or the
    // chain is broken.
    if (chain.flags[item] != 1)
      __builtin_trap();
#else
    while (atomicAdd(chain.flags + item, 0) == 0) {
    }
#endif
    chain.flags[item] = 0; // read: clear for the next launch
    __threadfence();
  }
  __syncwarp();
  const volatile float *slot = chain.carries + (item * 32 + lane) * 2;
  re = slot[0];
  im = slot[1];
}

/// Four neighbouring floats, read or written as one 16-byte access.
struct alignas(16) Float4 {
  float v[4];
};

/// A complex value's parts as one 8-byte shared-memory access (cfloat has
/// constructors, which a __shared__ array may not).
struct alignas(8) Float2 {
  float v[2];
};

/// Whether `a` and `b` are float arrays that both lie on 16 bytes (Float4
/// accesses); never for bf16 arrays.
template <class A, class C>
__device__ inline bool aligned16(const A *a, const C *b) {
  return sizeof(A) == 4 && sizeof(C) == 4 &&
         ((reinterpret_cast<uint64_t>(a) | reinterpret_cast<uint64_t>(b)) &
          15) == 0;
}

/// Dropout's decision for the four elements of Philox block `block`
/// (runtime/core's dropoutKeep): kept iff (word >> 8) >= threshold.
__device__ inline void dropoutWords(uint64_t seed, uint32_t step,
                                    uint32_t site, uint64_t block,
                                    uint32_t words[4]) {
  words[0] = uint32_t(block);
  words[1] = uint32_t(block >> 32);
  words[2] = site;
  words[3] = step;
  lruc::core::philoxRounds(words, uint32_t(seed), uint32_t(seed >> 32));
}

/// Dropout's decisions for the four elements of Philox block `block` as
/// bits (bit w: element 4 block + w kept), the key being {seed, step}.
__device__ inline uint32_t dropoutBits(const int64_t *key, uint32_t site,
                                       uint64_t block, uint32_t threshold) {
  uint32_t words[4];
  dropoutWords(uint64_t(key[0]), uint32_t(key[1]), site, block, words);
  uint32_t bits = 0;
  for (int w = 0; w < 4; ++w)
    bits |= uint32_t((words[w] >> 8) >= threshold) << w;
  return bits;
}

/// Whether dropout keeps element `index`, drawn alone.
__device__ inline bool dropoutKeep(const int64_t *key, uint32_t site,
                                   uint64_t index, uint32_t threshold) {
  return (dropoutBits(key, site, index / 4, threshold) >> (index % 4)) & 1u;
}

/// In a warp's tile of 4 rows of 32 neighbours whose 32 Philox blocks lane
/// l drew as `bits` (row l / 8, block l % 8 of it): whether the lane's
/// element of row r is kept. Every lane of the warp must call it.
__device__ inline bool dropoutKeepAt(uint32_t bits, int r) {
  const int lane = int(threadIdx.x % 32);
  return (__shfl_sync(0xffffffffu, bits, 8 * r + lane / 4) >> (lane % 4)) &
         1u;
}

// --- Products of a few rows ---------------------------------------------------
//
// y = x wᵀ for x [m, k] of 2 to kFewRowsMax rows (step mode: a row a
// stream), w [n, k] (a weight, [out, in]) and y [m, n], each with its
// leading dimension; `count` such products at strides of floats (a batch,
// lruc_gpu_ops.gemm). lruc::cuda::Device runs them here instead of in
// cuBLAS, whose tiles of 64 or more rows and columns put a 50-row product by
// a [768, 512] weight on about 12 blocks: a few SMs stream the weight while
// the rest of the device idles. Here a block takes kFewRowsColumns columns
// of one product, all its rows, and each of its kFewRowsWarps warps a range
// of k, so the weight is read once, by blocks on every SM. A lane holds
// rows `lane` and `lane + 32`; the warps' partial sums are added in warp
// order (a fixed order, no atomics). The block count is
// ceil(n / kFewRowsColumns) · count, its threads kFewRowsWarps · 32.

constexpr int kFewRowsMax = 64, kFewRowsColumns = 8, kFewRowsWarps = 8;
/// Steps of k a warp keeps in shared memory at once.
constexpr int kFewRowsChunk = 64;

} // namespace gpu
} // namespace lruc

extern "C" __global__ void
__launch_bounds__(lruc::gpu::kFewRowsWarps * 32)
    lruc_few_rows_nt(int64_t m, int64_t n, int64_t k,
                     const float *__restrict x, int64_t ldx, int64_t strideX,
                     const float *__restrict w, int64_t ldw, int64_t strideW,
                     float *__restrict y, int64_t ldy, int64_t strideY) {
  using namespace lruc::gpu;
  constexpr int kColumns = kFewRowsColumns, kWarps = kFewRowsWarps;
  // A column's elements one float apart and rows kColumns + 1 apart: the
  // lanes storing neighbouring steps of k (or rows) hit distinct banks.
  __shared__ float weights[kWarps][kFewRowsChunk][kColumns + 1];
  __shared__ float partial[kWarps][kFewRowsMax][kColumns + 1];
  const int64_t tiles = (n + kColumns - 1) / kColumns;
  const int64_t product = blockIdx.x / tiles;
  const int64_t n0 = int64_t(blockIdx.x % tiles) * kColumns;
  x += product * strideX;
  w += product * strideW;
  y += product * strideY;
  const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
  const int64_t k0 = k * warp / kWarps, k1 = k * (warp + 1) / kWarps;
  // Lanes past the last row multiply row 0 and drop the sums.
  const float *x0 = x + (lane < m ? lane : 0) * ldx;
  const float *x1 = x + (lane + 32 < m ? lane + 32 : 0) * ldx;
  float sum0[kColumns], sum1[kColumns];
  LRUC_UNROLL
  for (int c = 0; c < kColumns; ++c)
    sum0[c] = sum1[c] = 0.0f;
  for (int64_t kc = k0; kc < k1; kc += kFewRowsChunk) {
    const int steps = int(k1 - kc < kFewRowsChunk ? k1 - kc : kFewRowsChunk);
    // All of the chunk's loads first, in flight together (zeros past its
    // steps and the last column), then the stores.
    float chunk[kColumns][kFewRowsChunk / 32];
    LRUC_UNROLL
    for (int c = 0; c < kColumns; ++c)
      LRUC_UNROLL
      for (int u = 0; u < kFewRowsChunk / 32; ++u) {
        const int j = lane + 32 * u;
        chunk[c][u] =
            n0 + c < n && j < steps ? w[(n0 + c) * ldw + kc + j] : 0.0f;
      }
    LRUC_UNROLL
    for (int c = 0; c < kColumns; ++c)
      LRUC_UNROLL
      for (int u = 0; u < kFewRowsChunk / 32; ++u)
        weights[warp][lane + 32 * u][c] = chunk[c][u];
    __syncwarp();
    LRUC_UNROLL_8
    for (int j = 0; j < steps; ++j) {
      const float a0 = x0[kc + j], a1 = x1[kc + j];
      LRUC_UNROLL
      for (int c = 0; c < kColumns; ++c) {
        sum0[c] += a0 * weights[warp][j][c];
        sum1[c] += a1 * weights[warp][j][c];
      }
    }
    __syncwarp(); // the chunk read before the next overwrites it
  }
  LRUC_UNROLL
  for (int c = 0; c < kColumns; ++c) {
    partial[warp][lane][c] = sum0[c];
    partial[warp][lane + 32][c] = sum1[c];
  }
  __syncthreads();
  for (int o = int(threadIdx.x); o < kFewRowsMax * kColumns;
       o += int(blockDim.x)) {
    const int r = o / kColumns, c = o % kColumns;
    if (r < m && n0 + c < n) {
      float total = 0.0f;
      for (int v = 0; v < kWarps; ++v)
        total += partial[v][r][c];
      y[r * ldy + n0 + c] = total;
    }
  }
}
