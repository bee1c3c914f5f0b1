//===- Kernels.cpp - CPU kernels that generated model code calls ----------===//
//
// fp32 versions of the structural primitives; compiler/interpreter's fp64
// loops define what each computes, and tests/cpu checks them against it.
//
// Shape kernels first merge the dims that they can walk as one (adjacent dims
// that are contiguous in every operand), then run an odometer over the outer
// dims with a contiguous inner loop. Sequence kernels walk [B, L, N] one
// sequence at a time, rows of N contiguous. GEMMs go to OpenBLAS.
//
//===----------------------------------------------------------------------===//

#include "lruc/cpu/Kernels.h"

#include "Bf16Products.h"
#include "BlasBuffers.h"

#include "lruc/core/AddressSpace.h"
#include "lruc/core/Bytes.h"
#include "lruc/core/Random.h"

#include <cblas.h>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace lruc::cpu {

int64_t Shape::numElements() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i)
    n *= dims[i];
  return n;
}

namespace {

constexpr int kMaxRank = Shape::kMaxRank;

/// Row-major strides of `shape`.
void stridesOf(const Shape &shape, int64_t *strides) {
  int64_t stride = 1;
  for (int d = shape.rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape.dims[d];
  }
}

/// "name[i] = value is outside [0, limit]" (or "[0, limit)" when open);
/// "name[i / steps, i % steps] = ..." for `steps` > 0.
std::string outsideMessage(const char *name, int64_t i, int64_t value,
                           int64_t limit, bool open, int64_t steps = 0) {
  std::string entry =
      steps > 0 ? std::to_string(i / steps) + ", " + std::to_string(i % steps)
                : std::to_string(i);
  return std::string(name) + "[" + entry + "] = " + std::to_string(value) +
         " is outside [0, " + std::to_string(limit) + (open ? ")" : "]");
}

} // namespace

bool indicesWithin(const int32_t *indices, int64_t count, int64_t limit,
                   IndexSource source, std::string &error) {
  for (int64_t i = 0; i < count; ++i)
    if (indices[i] < 0 || indices[i] >= limit) {
      error = outsideMessage(source.name, i, indices[i], limit, true,
                             source.steps);
      return false;
    }
  return true;
}

namespace {

/// Steps an odometer over dims [0, rank) of `size` by one in the last of
/// them, carrying into earlier ones; `offsets[k]` moves by `steps[k][d]`.
template <int Operands>
void advance(int64_t *index, const int64_t *size, int rank,
             const int64_t (*steps)[kMaxRank], int64_t *offsets) {
  for (int d = rank - 1; d >= 0; --d) {
    for (int k = 0; k < Operands; ++k)
      offsets[k] += steps[k][d];
    if (++index[d] < size[d])
      return;
    for (int k = 0; k < Operands; ++k)
      offsets[k] -= steps[k][d] * size[d];
    index[d] = 0;
  }
}

/// a * s + b, with complex products written out: std::complex's operator*
/// handles infinities through a library call (C99 Annex G), which the fp64
/// reference's finite values never need and which would keep the scan from
/// vectorising.
inline float mulAdd(float a, float s, float b) { return a * s + b; }
inline cfloat mulAdd(cfloat a, cfloat s, cfloat b) {
  float ar = a.real(), ai = a.imag(), sr = s.real(), si = s.imag();
  return {ar * sr - ai * si + b.real(), ar * si + ai * sr + b.imag()};
}

} // namespace

bool checkLengths(const int32_t *lengths, int64_t batch, int64_t steps,
                  std::string &error) {
  if (!lengths)
    return true;
  for (int64_t b = 0; b < batch; ++b)
    if (lengths[b] < 0 || lengths[b] > steps) {
      error = outsideMessage("lengths", b, lengths[b], steps, false);
      return false;
    }
  return true;
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

template <class T>
void broadcast(const T *x, const Shape &xShape, const int64_t *dims, T *y,
               const Shape &yShape) {
  if (yShape.numElements() == 0)
    return;
  int64_t xStrides[kMaxRank];
  stridesOf(xShape, xStrides);
  // The step in x of each result dim: x's stride where a dim of x maps to
  // it, 0 where the result repeats.
  int64_t stepOf[kMaxRank] = {};
  for (int i = 0; i < xShape.rank; ++i)
    stepOf[dims[i]] += xStrides[i];
  // Merge result dims that walk x as one (a repeated run, or a run of x's
  // own contiguous dims); size-1 dims drop out.
  int64_t size[kMaxRank], steps[1][kMaxRank];
  int rank = 0;
  for (int d = 0; d < yShape.rank; ++d) {
    int64_t n = yShape.dims[d];
    if (n == 1)
      continue;
    if (rank > 0 && steps[0][rank - 1] == stepOf[d] * n) {
      size[rank - 1] *= n;
      steps[0][rank - 1] = stepOf[d];
      continue;
    }
    size[rank] = n;
    steps[0][rank] = stepOf[d];
    ++rank;
  }
  if (rank == 0) {
    y[0] = x[0];
    return;
  }
  int64_t inner = size[rank - 1], innerStep = steps[0][rank - 1];
  int64_t outer = 1;
  for (int d = 0; d < rank - 1; ++d)
    outer *= size[d];
  int64_t index[kMaxRank] = {}, offset[1] = {0};
  for (int64_t o = 0; o < outer; ++o) {
    const T *src = x + offset[0];
    T *dst = y + o * inner;
    if (innerStep == 1)
      std::copy(src, src + inner, dst);
    else if (innerStep == 0)
      std::fill(dst, dst + inner, *src);
    else
      for (int64_t j = 0; j < inner; ++j)
        dst[j] = src[j * innerStep];
    advance<1>(index, size, rank - 1, steps, offset);
  }
}

template <class T>
void reduceSum(const T *x, const Shape &xShape, uint32_t reducedDims, T *y) {
  // y's size and each x dim's step in y (0 for a reduced dim).
  int64_t yCount = 1;
  int64_t yStepOf[kMaxRank];
  for (int d = xShape.rank - 1; d >= 0; --d) {
    bool reduced = reducedDims >> d & 1u;
    yStepOf[d] = reduced ? 0 : yCount;
    if (!reduced)
      yCount *= xShape.dims[d];
  }
  std::fill(y, y + yCount, T(0));
  if (xShape.numElements() == 0)
    return;
  // Merge adjacent dims that are both reduced or both kept: contiguous in x
  // and in y. Size-1 dims drop out.
  int64_t size[kMaxRank], steps[2][kMaxRank]; // x, y
  bool reduced[kMaxRank];
  int rank = 0;
  int64_t xStride = xShape.numElements();
  for (int d = 0; d < xShape.rank; ++d) {
    int64_t n = xShape.dims[d];
    xStride /= n;
    if (n == 1)
      continue;
    bool r = reducedDims >> d & 1u;
    if (rank > 0 && reduced[rank - 1] == r) {
      size[rank - 1] *= n;
      steps[0][rank - 1] = xStride;
      steps[1][rank - 1] = yStepOf[d];
      continue;
    }
    size[rank] = n;
    steps[0][rank] = xStride;
    steps[1][rank] = yStepOf[d];
    reduced[rank] = r;
    ++rank;
  }
  if (rank == 0) {
    y[0] += x[0];
    return;
  }
  // The innermost dim is contiguous in x: summed into one value when
  // reduced, added row by row into y when kept.
  int64_t inner = size[rank - 1];
  bool innerReduced = reduced[rank - 1];
  int64_t outer = 1;
  for (int d = 0; d < rank - 1; ++d)
    outer *= size[d];
  int64_t index[kMaxRank] = {}, offsets[2] = {0, 0};
  for (int64_t o = 0; o < outer; ++o) {
    const T *src = x + offsets[0];
    T *dst = y + offsets[1];
    if (innerReduced) {
      T sum = 0;
      for (int64_t j = 0; j < inner; ++j)
        sum += src[j];
      *dst += sum;
    } else {
      for (int64_t j = 0; j < inner; ++j)
        dst[j] += src[j];
    }
    advance<2>(index, size, rank - 1, steps, offsets);
  }
}

template <class T>
void concat(const T *const *parts, const Shape *partShapes, int count, int dim,
            T *y) {
  const Shape &first = partShapes[0];
  int64_t outer = 1, inner = 1, total = 0;
  for (int d = 0; d < dim; ++d)
    outer *= first.dims[d];
  for (int d = dim + 1; d < first.rank; ++d)
    inner *= first.dims[d];
  for (int p = 0; p < count; ++p)
    total += partShapes[p].dims[dim];
  // Ranges of y across the threads (the LRU's [B_re; B_im] and [C_re,
  // -C_im] weights are copied once a train step, megabytes each): each
  // range copies the runs of the parts it covers.
  constexpr int64_t kGrain = int64_t(1) << 16;
  const int64_t row = total * inner;
  parallelFor(outer * row, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end;) {
      const int64_t o = i / row;
      int64_t within = i % row;
      int p = 0;
      while (within >= partShapes[p].dims[dim] * inner)
        within -= partShapes[p++].dims[dim] * inner;
      const int64_t chunk = partShapes[p].dims[dim] * inner;
      const int64_t n = std::min(end - i, chunk - within);
      std::copy_n(parts[p] + o * chunk + within, n, y + i);
      i += n;
    }
  });
}

template <class T>
void slice(const T *x, const Shape &xShape, int dim, int64_t offset,
           int64_t size, T *y) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d)
    outer *= xShape.dims[d];
  for (int d = dim + 1; d < xShape.rank; ++d)
    inner *= xShape.dims[d];
  int64_t chunk = size * inner;
  for (int64_t o = 0; o < outer; ++o) {
    const T *src = x + (o * xShape.dims[dim] + offset) * inner;
    std::copy(src, src + chunk, y + o * chunk);
  }
}

//===----------------------------------------------------------------------===//
// Sequences
//===----------------------------------------------------------------------===//

bool lengthMask(const int32_t *lengths, const int32_t *scoredLabels,
                int64_t batch, int64_t steps, bool last, float *y,
                std::string &error) {
  if (!checkLengths(lengths, batch, steps, error))
    return false;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t length = lengths ? lengths[b] : steps;
    float *row = y + b * steps;
    std::fill(row, row + steps, 0.0f);
    if (!last)
      std::fill(row, row + length, 1.0f);
    else if (length > 0)
      row[length - 1] = 1.0f;
    for (int64_t t = 0; scoredLabels && t < steps; ++t)
      row[t] = scoredLabels[b * steps + t] < 0 ? 0.0f : row[t];
  }
  return true;
}

bool zeroPadding(const int32_t *x, const int32_t *lengths, int64_t batch,
                 int64_t steps, int64_t width, int32_t *y, std::string &error) {
  if (!checkLengths(lengths, batch, steps, error))
    return false;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t real = int64_t(lengths[b]) * width, all = steps * width;
    std::copy_n(x + b * all, real, y + b * all);
    std::fill(y + b * all + real, y + (b + 1) * all, 0);
  }
  return true;
}

void labelWeight(const int32_t *labels, int64_t count, const float *weights,
                 int64_t classes, float *y) {
  for (int64_t i = 0; i < count; ++i)
    y[i] = labels[i] >= 0 && labels[i] < classes ? weights[labels[i]] : 0.0f;
}

template <class T>
bool shift(const T *x, const T *init, const int32_t *lengths, bool reverse,
           int64_t batch, int64_t steps, int64_t width, T *y,
           std::string &error) {
  if (!checkLengths(lengths, batch, steps, error))
    return false;
  for (int64_t s = 0; s < batch; ++s) {
    int64_t length = lengths ? lengths[s] : steps;
    const T *xs = x + s * steps * width;
    T *ys = y + s * steps * width;
    for (int64_t t = 0; t < length; ++t) {
      // y_t = x_{t-1} (x_{t+1} reversed); the first step reads init.
      bool first = reverse ? t == length - 1 : t == 0;
      T *row = ys + t * width;
      if (!first) {
        const T *source = xs + (reverse ? t + 1 : t - 1) * width;
        std::copy(source, source + width, row);
      } else if (init) {
        std::copy(init + s * width, init + (s + 1) * width, row);
      } else {
        std::fill(row, row + width, T(0));
      }
    }
    std::fill(ys + length * width, ys + steps * width, T(0));
  }
  return true;
}

namespace {
constexpr int64_t kMaxScanBlock = 512;
} // namespace

int64_t scanChannelBlock(int64_t batch, int64_t width) {
  // Two threads on halves of Path-X's one sequence: reverse scans 1.6-1.8x
  // faster than one thread on whole rows, forward scans the same
  // (bench/cpu/BenchScan.cpp, quiet machine).
  int64_t threads = threadCount();
  int64_t parts = (width + kMaxScanBlock - 1) / kMaxScanBlock;
  if (batch < threads)
    parts =
        std::max(parts, (threads + batch - 1) / std::max<int64_t>(1, batch));
  int64_t block = (width + parts - 1) / parts;
  block = (block + 15) / 16 * 16;
  return std::max<int64_t>(16, std::min(kMaxScanBlock, block));
}

template <class T>
bool scan(const T *lambda, bool lambdaPerStep, const T *bIn, const T *init,
          const int32_t *lengths, bool reverse, int64_t batch, int64_t steps,
          int64_t width, T *xOut, std::string &error) {
  // x never overlaps b (the memory plan gives each live value its own
  // slot); saying so lets the step loop vectorise.
  const T *__restrict b = bIn;
  T *__restrict x = xOut;
  if (!checkLengths(lengths, batch, steps, error))
    return false;
  // The state of a block of channels lives in a local array (in L1) across
  // the time loop; each step reads and writes the block's contiguous values
  // of b and x, so that b and x stream through memory in order (a narrow
  // block strides through them and leaves the prefetcher behind).
  constexpr int64_t kScanPrefetchSteps = 16, kCacheLine = 64;
  const int64_t block = scanChannelBlock(batch, width);
  const int64_t blocks = (width + block - 1) / block;
  // Parts of at least ~16K elements: one step of a few sequences (step
  // mode) is cheaper to scan than to hand to another thread.
  int64_t grain =
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, steps * block));
  parallelFor(batch * blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      int64_t s = unit / blocks, n0 = unit % blocks * block;
      int64_t nb = std::min(block, width - n0);
      int64_t length = lengths ? lengths[s] : steps;
      int64_t base = s * steps * width; // of sequence s in b, x, lambda
      // Padding never enters the state; its outputs are 0.
      for (int64_t t = length; t < steps; ++t)
        std::fill(x + base + t * width + n0, x + base + t * width + n0 + nb,
                  T(0));
      T state[kMaxScanBlock];
      for (int64_t j = 0; j < nb; ++j)
        state[j] = init ? init[s * width + n0 + j] : T(0);
      // Real steps only: from 0 up, or from the sequence's last real step
      // down.
      for (int64_t k = 0; k < length; ++k) {
        int64_t t = reverse ? length - 1 - k : k;
        int64_t i = base + t * width + n0;
        // The hardware prefetcher follows ascending streams but not this
        // one going down a step at a time: fetch a few steps ahead.
        if (reverse && k + kScanPrefetchSteps < length) {
          int64_t ahead = i - kScanPrefetchSteps * width;
          for (int64_t j = 0; j < nb; j += kCacheLine / int64_t(sizeof(T))) {
            __builtin_prefetch(b + ahead + j, 0);
            __builtin_prefetch(x + ahead + j, 1);
          }
        }
        const T *l = lambdaPerStep ? lambda + i : lambda + n0;
        for (int64_t j = 0; j < nb; ++j) {
          state[j] = mulAdd(l[j], state[j], b[i + j]);
          x[i + j] = state[j];
        }
      }
    }
  });
  return true;
}

//===----------------------------------------------------------------------===//
// Dense algebra and lookups
//===----------------------------------------------------------------------===//

namespace {

std::atomic<FewRowProducts> fewRowProducts{FewRowProducts::Automatic};

/// Under an address-space cap (BlasBuffers.h): the BLAS calls running now,
/// the most that have run at once (the buffers OpenBLAS has mapped) and the
/// workspace leases held (calls of generated functions running). Trivially
/// destructible, so a dlclose'd library leaves nothing behind.
struct BlasAccounting {
  const bool capped = core::addressSpaceLeft().has_value();
  std::atomic<int> running{0}, most{0}, leases{0};
};

BlasAccounting &blasAccounting() {
  static BlasAccounting accounting;
  return accounting;
}

/// Counts this thread's BLAS calls as running while it lives (under a cap
/// only: the count's cache line would cost step mode's tokens).
class BlasCalls {
public:
  BlasCalls() : accounting_(blasAccounting()) {
    if (!accounting_.capped)
      return;
    const int now = accounting_.running.fetch_add(1) + 1;
    int most = accounting_.most.load();
    while (now > most && !accounting_.most.compare_exchange_weak(most, now)) {
    }
  }
  ~BlasCalls() {
    if (accounting_.capped)
      accounting_.running.fetch_sub(1);
  }
  BlasCalls(const BlasCalls &) = delete;
  BlasCalls &operator=(const BlasCalls &) = delete;

private:
  BlasAccounting &accounting_;
};

/// Whether OpenBLAS runs its AVX-512 kernels, which multiply small products
/// directly. Its AVX2 kernels pack B on every call: small calls run at ~38
/// GFLOP/s whatever the rows, below sgemv per row (42-50) and, from 8 rows,
/// one sgemm (55-97; bench/cpu/BenchSmallGemm.cpp, one core of a 2-core
/// AMD EPYC).
bool blasRunsAvx512() {
  static const bool avx512 = [] {
    std::string core = openblas_get_corename();
    std::transform(core.begin(), core.end(), core.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    return core == "skylakex" || core == "cooperlake" ||
           core == "sapphirerapids";
  }();
  return avx512;
}

// lruc's few-row products: dot products of a few rows with each row of a
// weight in PyTorch's [out, in] layout, the weight read once for every
// pass of up to Lanes::kMostRows rows. Compiled for AVX2 and FMA on every
// x86 build (so that tests run them wherever the CPU has them) and for
// AVX-512 where the kernels are built with it; the form that matches the
// build runs by default (kDotProductsBuilt).
#if defined(__x86_64__) || defined(__i386__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")

/// `v`, kept in a register: GCC would otherwise fold the loads of the
/// weight and row vectors into each multiply-add that uses them, issuing
/// up to 4 times the loads (1.25-1.55 times slower at 2-4 rows).
template <class Vector> inline Vector inRegister(Vector v) {
  asm("" : "+v"(v));
  return v;
}

/// The sums of the 8 lanes of each of `v`, in one vector, by horizontal
/// adds: a third of the instructions of four reductions (at 4 rows, four
/// reductions cost as much as the loop over a row of 128 floats).
inline __m128 sumsOfFour(const __m256 (&v)[4]) {
  __m256 pairs = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]),
                                _mm256_hadd_ps(v[2], v[3]));
  return _mm_add_ps(_mm256_castps256_ps128(pairs),
                    _mm256_extractf128_ps(pairs, 1));
}

/// 8 floats a vector. Up to four rows a pass: at most 8 accumulators (2
/// rows x 4 weight rows, 4 x 2), the weight vectors and a row vector of
/// the 16 registers. (Three weight rows at 3-4 rows, 12 accumulators, ran
/// 8-10% faster alone on a Zen 3 core but no faster in step mode, where
/// two threads read the weights from L3: not kept.)
struct Avx2Lanes {
  using Vector = __m256;
  static constexpr int64_t kWidth = 8;
  static constexpr int kMostRows = 4;
  static constexpr int columnsFor(int rows) { return rows <= 2 ? 4 : 2; }
  static Vector zero() { return _mm256_setzero_ps(); }
  static Vector load(const float *p) { return _mm256_loadu_ps(p); }
  /// The first `count` (< kWidth) floats at p, zeros after.
  static Vector loadFirst(const float *p, int64_t count) {
    __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_maskload_ps(
        p, _mm256_cmpgt_epi32(_mm256_set1_epi32(int(count)), lanes));
  }
  static Vector multiplyAdd(Vector a, Vector b, Vector c) {
    return _mm256_fmadd_ps(a, b, c);
  }
  static __m128 sumsOfFour(const Vector (&v)[4]) {
    return lruc::cpu::sumsOfFour(v);
  }
};

#if defined(__AVX512F__)
/// 16 floats a vector. Up to eight rows a pass: at most 16 accumulators
/// (4 rows x 4 weight rows, 8 x 2), the weight vectors and a row vector of
/// the 32 registers.
struct Avx512Lanes {
  using Vector = __m512;
  static constexpr int64_t kWidth = 16;
  static constexpr int kMostRows = 8;
  static constexpr int columnsFor(int rows) { return rows <= 4 ? 4 : 2; }
  static Vector zero() { return _mm512_setzero_ps(); }
  static Vector load(const float *p) { return _mm512_loadu_ps(p); }
  static Vector loadFirst(const float *p, int64_t count) {
    return _mm512_maskz_loadu_ps(__mmask16((1u << count) - 1), p);
  }
  static Vector multiplyAdd(Vector a, Vector b, Vector c) {
    return _mm512_fmadd_ps(a, b, c);
  }
  /// Halves added, then as Avx2Lanes.
  static __m128 sumsOfFour(const Vector (&v)[4]) {
    __m256 halves[4];
    for (int c = 0; c < 4; ++c)
      halves[c] = _mm256_add_ps(_mm512_castps512_ps256(v[c]),
                                _mm256_castpd_ps(_mm512_extractf64x4_pd(
                                    _mm512_castps_pd(v[c]), 1)));
    return lruc::cpu::sumsOfFour(halves);
  }
};
#endif

/// How far ahead (in floats) the dot products prefetch the weights: the
/// hardware prefetcher alone keeps too few lines in flight from L3. Two
/// threads each summing 2-4 MB read 97-100 GB/s each with plain loads,
/// 117-119 prefetching 2-8 KB ahead into L1 (into L2: no gain).
constexpr int64_t kWeightPrefetch = 1024;

/// y[r, j] = dot(x[r, :], w[j, :]) for r < M and j in [n0, n1), w [n, k]
/// and x [M, k] row-major: C weight rows at a time (Lanes::columnsFor(M):
/// 4, or 2 where M x 4 accumulators would not fit the registers), a vector
/// of each per load, M x C vector accumulators, a shorter load for k's
/// tail; the last n % C weight rows one at a time. Every form reduces
/// an accumulator's lanes in the same order (Lanes::sumsOfFour's), so a
/// sum's bits do not depend on M, C or which pass takes its column: the
/// rows of a batch and the columns of a thread's part come out as they
/// would alone. Step mode is bound by reading the weights: on one core of a
/// 2-core AMD EPYC (Zen 5) the AVX-512 form read them at 97-99 GB/s from
/// L3 without the prefetch (a plain sum of the same bytes: 101), where
/// OpenBLAS's sgemv per row reads 78-80 and, from two rows on, reads them
/// once per row.
template <class Lanes, int M, int C>
void dotProductsNT(const float *x, const float *w, int64_t k, int64_t n0,
                   int64_t n1, float *y, int64_t ldy) {
  static_assert(C == 4 || C == 2, "four or two weight rows a pass");
  using Vector = typename Lanes::Vector;
  constexpr int64_t W = Lanes::kWidth;
  const int64_t whole = k / W * W, tail = k - whole;
  auto full = [](const float *p) { return Lanes::load(p); };
  auto first = [tail](const float *p) { return Lanes::loadFirst(p, tail); };
  // acc[r][c] += wv[c] * x[r, i...] for the C weight rows c, each row r.
  auto multiplyAdd = [&](Vector(&acc)[M][C], const Vector(&wv)[C], int64_t i,
                         auto load) {
#pragma GCC unroll 8
    for (int r = 0; r < M; ++r) {
      Vector xv = inRegister(load(x + r * k + i));
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c)
        acc[r][c] = Lanes::multiplyAdd(wv[c], xv, acc[r][c]);
    }
  };
  int64_t j = n0;
  for (; j + C <= n1; j += C) {
    const float *rows = w + j * k;
    Vector acc[M][C];
#pragma GCC unroll 8
    for (int r = 0; r < M; ++r)
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c)
        acc[r][c] = Lanes::zero();
    for (int64_t i = 0; i < whole; i += W) {
      Vector wv[C];
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        _mm_prefetch(reinterpret_cast<const char *>(rows + c * k + i +
                                                    kWeightPrefetch),
                     _MM_HINT_T0);
        wv[c] = inRegister(full(rows + c * k + i));
      }
      multiplyAdd(acc, wv, i, full);
    }
    if (tail) {
      Vector wv[C];
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c)
        wv[c] = first(rows + c * k + whole);
      multiplyAdd(acc, wv, whole, first);
    }
    if constexpr (C == 4) {
#pragma GCC unroll 8
      for (int r = 0; r < M; ++r)
        _mm_storeu_ps(y + r * ldy + j, Lanes::sumsOfFour(acc[r]));
    } else {
      // Two rows' two sums in one vector: y[r, j..j+1], then y[r + 1, ...].
#pragma GCC unroll 4
      for (int r = 0; r < M; r += 2) {
        const Vector four[4] = {acc[r][0], acc[r][1],
                                r + 1 < M ? acc[r + 1][0] : Lanes::zero(),
                                r + 1 < M ? acc[r + 1][1] : Lanes::zero()};
        const __m128 sums = Lanes::sumsOfFour(four);
        _mm_storel_pi(reinterpret_cast<__m64 *>(y + r * ldy + j), sums);
        if (r + 1 < M)
          _mm_storeh_pi(reinterpret_cast<__m64 *>(y + (r + 1) * ldy + j), sums);
      }
    }
  }
  for (; j < n1; ++j) { // the last weight rows, one at a time
    Vector acc[M];
    for (int r = 0; r < M; ++r)
      acc[r] = Lanes::zero();
    for (int64_t i = 0; i < k; i += W) {
      auto load = [&](const float *p) { return i < whole ? full(p) : first(p); };
      Vector wv = load(w + j * k + i);
      for (int r = 0; r < M; ++r)
        acc[r] = Lanes::multiplyAdd(wv, load(x + r * k + i), acc[r]);
    }
    // Four rows a reduction, in the order of the passes above.
    for (int r0 = 0; r0 < M; r0 += 4) {
      const Vector four[4] = {acc[r0], r0 + 1 < M ? acc[r0 + 1] : Lanes::zero(),
                              r0 + 2 < M ? acc[r0 + 2] : Lanes::zero(),
                              r0 + 3 < M ? acc[r0 + 3] : Lanes::zero()};
      alignas(16) float sums[4];
      _mm_store_ps(sums, Lanes::sumsOfFour(four));
      for (int i = 0; i < 4 && r0 + i < M; ++i)
        y[(r0 + i) * ldy + j] = sums[i];
    }
  }
}

/// dotProductsNT for `rows` (1 to M) rows, with the weight rows a pass
/// that Lanes' registers hold for that many.
template <class Lanes, int M = Lanes::kMostRows>
void dotProductsOf(int64_t rows, const float *x, const float *w, int64_t k,
                   int64_t n0, int64_t n1, float *y, int64_t ldy) {
  if constexpr (M > 1)
    if (rows < M)
      return dotProductsOf<Lanes, M - 1>(rows, x, w, k, n0, n1, y, ldy);
  dotProductsNT<Lanes, M, Lanes::columnsFor(M)>(x, w, k, n0, n1, y, ldy);
}

/// Rows [m0, m1) and columns [n0, n1) of C[m, n] = A B^T, A [m, k] and
/// B [n, k] row-major, through dotProductsNT: up to Lanes::kMostRows rows
/// at a time, over blocks of B that stay in L2 for the next rows.
template <class Lanes>
void dotProductRowsWith(const float *a, const float *b, int64_t n, int64_t k,
                        float *c, int64_t m0, int64_t m1, int64_t n0,
                        int64_t n1) {
  const int64_t block = std::max<int64_t>(4, (int64_t(1) << 15) / k / 4 * 4);
  for (int64_t b0 = n0; b0 < n1; b0 += block) {
    const int64_t b1 = std::min(n1, b0 + block);
    for (int64_t r = m0; r < m1; r += Lanes::kMostRows)
      dotProductsOf<Lanes>(std::min<int64_t>(Lanes::kMostRows, m1 - r),
                           a + r * k, b, k, b0, b1, c + r * n, n);
  }
}

#pragma GCC pop_options
#endif

/// Whether this build has a dot-product form of its own vector width:
/// AVX-512, else AVX2 with FMA.
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
constexpr bool kDotProductsBuilt = true;
#else
constexpr bool kDotProductsBuilt = false;
#endif

/// Whether this CPU runs AVX2 and FMA (DotProductsAvx2 needs them).
bool cpuHasAvx2() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx2") &&
                          __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

/// Rows [m0, m1) and columns [n0, n1) of C[m, n] = A B^T, A [m, k] and
/// B [n, k] row-major, through lruc's dot products of the build's vector
/// width (`avx2`: of 8 floats); false (nothing done) where there are none.
bool dotProductRows(bool avx2, const float *a, const float *b, int64_t n,
                    int64_t k, float *c, int64_t m0, int64_t m1, int64_t n0,
                    int64_t n1) {
#if defined(__x86_64__) || defined(__i386__)
#if defined(__AVX512F__)
  if (!avx2) {
    dotProductRowsWith<Avx512Lanes>(a, b, n, k, c, m0, m1, n0, n1);
    return true;
  }
#endif
  if ((avx2 || kDotProductsBuilt) && cpuHasAvx2()) {
    dotProductRowsWith<Avx2Lanes>(a, b, n, k, c, m0, m1, n0, n1);
    return true;
  }
#endif
  (void)avx2, (void)a, (void)b, (void)n, (void)k, (void)c, (void)m0,
      (void)m1, (void)n0, (void)n1;
  return false;
}

/// Rows [m0, m1) and columns [n0, n1) of C[m, n] = op(A) op(B), op(A)
/// [m, k], row-major, through OpenBLAS on the calling thread; k > 0.
void gemmPart(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              const float *a, const float *b, float *c, int64_t m0,
              int64_t m1, int64_t n0, int64_t n1) {
  blasint lda = blasint(transA ? m : k), ldb = blasint(transB ? k : n);
  constexpr int64_t kVectorRows = 6, kFewRows = 32;
  const float *rows = transA ? a + m0 : a + m0 * k;
  const float *columns = transB ? b + n0 * k : b + n0;
  FewRowProducts form = fewRowProducts.load(std::memory_order_relaxed);
  if (form == FewRowProducts::Automatic)
    form = kDotProductsBuilt ? FewRowProducts::DotProducts
           : blasRunsAvx512() ? FewRowProducts::SmallCalls
                              : FewRowProducts::General;
  // A few rows times a weight in PyTorch's [out, in] layout (step mode: a
  // row per sequence). lruc's AVX-512 dot products run at 1.3-1.5 times
  // the faster of sgemv and sgemm for one row and 1.8-4 times for 2 to 32
  // rows (OpenBLAS's AVX2 kernels); on a par (0.9-1.2) with its AVX-512
  // kernels (bench/cpu/BenchSmallGemm.cpp, one core of a 2-core AMD EPYC,
  // Zen 5).
  if (m1 - m0 <= kFewRows && !transA && transB &&
      (form == FewRowProducts::DotProducts ||
       form == FewRowProducts::DotProductsAvx2) &&
      dotProductRows(form == FewRowProducts::DotProductsAvx2, a, b, n, k, c,
                     m0, m1, n0, n1))
    return;
  if (m1 - m0 > 1 && m1 - m0 <= kFewRows && !transA && transB &&
      form == FewRowProducts::SmallCalls) {
    // Calls of up to 4 rows and 2^17 multiply-adds stay small for OpenBLAS
    // and run at 1.2 to 2 times the rate of one call for all the rows or
    // of sgemv per row (one row: sgemv is faster). Row chunks inner, so
    // that each block of B is read from memory once and then from L2.
    BlasCalls running;
    constexpr int64_t kChunkRows = 4, kChunkWork = int64_t(1) << 17;
    int64_t block =
        std::max<int64_t>(16, kChunkWork / (kChunkRows * k) / 16 * 16);
    for (int64_t b0 = n0; b0 < n1; b0 += block) {
      int64_t b1 = std::min(n1, b0 + block);
      for (int64_t r0 = m0; r0 < m1; r0 += kChunkRows) {
        int64_t r1 = std::min(m1, r0 + kChunkRows);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(r1 - r0),
                    blasint(b1 - b0), blasint(k), 1.0f, a + r0 * k, lda,
                    b + b0 * k, ldb, 0.0f, c + r0 * n + b0, blasint(n));
      }
    }
    return;
  }
  if (m1 - m0 <= kVectorRows) {
    // Products with a few vectors: sgemv reads B as it is, where
    // OpenBLAS's sgemm first copies it into its packed layout (more than
    // twice the traffic, and reading B is the bound here). B is taken in
    // blocks of columns of ~128 KiB, which stay in cache across the rows.
    // From 7 rows on the packing pays (step mode on a 2-core AMD EPYC,
    // OpenBLAS's AVX2 kernels: ListOps and sCIFAR at batch 8 1.15-1.26
    // times faster with sgemm, at batch 5 and 6 1.3 times slower).
    BlasCalls running;
    int64_t block = std::max<int64_t>(16, (int64_t(1) << 15) / k);
    for (int64_t b0 = n0; b0 < n1; b0 += block) {
      int64_t b1 = std::min(n1, b0 + block);
      const float *weights = transB ? b + b0 * k : b + b0;
      for (int64_t r = m0; r < m1; ++r)
        cblas_sgemv(CblasRowMajor, transB ? CblasNoTrans : CblasTrans,
                    transB ? blasint(b1 - b0) : blasint(k),
                    transB ? blasint(k) : blasint(b1 - b0), 1.0f, weights,
                    ldb, transA ? a + r : a + r * k, transA ? lda : 1, 0.0f,
                    c + r * n + b0, 1);
    }
    return;
  }
  // Below these sizes rounding op(B) for the part would cost more than
  // the faster products save; a sum shorter than an AMX tile's 32 terms
  // gains nothing (a model's input features: k = 3).
  constexpr int64_t kBf16LeastRows = 64, kBf16LeastColumns = 16,
                    kBf16LeastSum = 32, kBf16LeastWork = int64_t(1) << 18;
  if (matmulPrecision() == MatmulPrecision::Bf16 && m1 - m0 >= kBf16LeastRows &&
      n1 - n0 >= kBf16LeastColumns && k >= kBf16LeastSum &&
      (m1 - m0) * (n1 - n0) * k >= kBf16LeastWork &&
      detail::bf16Product(transA, transB, m1 - m0, n1 - n0, k, rows, lda,
                          columns, ldb, c + m0 * n + n0, n))
    return;
  BlasCalls running;
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, blasint(m1 - m0),
              blasint(n1 - n0), blasint(k), 1.0f, rows, lda, columns, ldb,
              0.0f, c + m0 * n + n0, blasint(n));
}

/// C[m, n] = op(A) op(B), op(A) [m, k], row-major: a product for
/// GemmsTogether.
struct Gemm {
  bool transA, transB;
  int64_t m, n, k;
  const float *a, *b;
  float *c;
};

// Rows of C in parallel, each part one sgemm on OpenBLAS's calling thread,
// of at least ~4 MFLOP (2^21 multiply-adds). With too few rows to give
// every thread a part (step mode's few sequences: products with vectors,
// bound by reading the weights), columns of C instead, so that every core
// reads its share of B; a part then reads at least 64 KiB (256 KiB: 1.2-1.5
// times slower step mode at one stream, ListOps and Text on a 2-core AMD
// EPYC).
constexpr int64_t kRowPartWork = int64_t(1) << 21;
constexpr int64_t kColumnPartWork = int64_t(1) << 14;

int64_t rowGrain(const Gemm &g) {
  return std::max<int64_t>(1, kRowPartWork / (g.n * g.k));
}

void gemmPart(const Gemm &g, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  gemmPart(g.transA, g.transB, g.m, g.n, g.k, g.a, g.b, g.c, m0, m1, n0, n1);
}

/// Products with too few rows to split by rows, in one parallel region
/// whose parts are ranges of columns: the products' columns laid end to
/// end, each weighing its rows times k, cut into equal shares of whole
/// 16-column blocks (the SIMD width).
void gemmByColumns(const Gemm *gemms, size_t count) {
  int64_t total = 0, chunks = 0;
  for (size_t i = 0; i < count; ++i) {
    const Gemm &g = gemms[i];
    total += g.m * g.n * g.k;
    int64_t grain = std::max<int64_t>(16, kColumnPartWork / (g.m * g.k));
    grain = (grain + 15) / 16 * 16;
    chunks += (g.n + grain - 1) / grain;
  }
  int64_t parts = std::min<int64_t>(threadCount(), chunks);
  // The first column of `g` (its work starting at `offset`) at or after
  // the share boundary `boundary`.
  auto column = [](const Gemm &g, int64_t offset, int64_t boundary) {
    int64_t perColumn = g.m * g.k;
    if (boundary <= offset)
      return int64_t(0);
    if (boundary - offset >= g.n * perColumn)
      return g.n;
    return std::min(g.n, (boundary - offset) / perColumn / 16 * 16);
  };
  parallelFor(parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      int64_t lo = p * total / parts, hi = (p + 1) * total / parts;
      int64_t offset = 0;
      for (size_t i = 0; i < count; ++i) {
        const Gemm &g = gemms[i];
        int64_t n0 = column(g, offset, lo), n1 = column(g, offset, hi);
        if (n0 < n1)
          gemmPart(g, 0, g.m, n0, n1);
        offset += g.m * g.n * g.k;
      }
    }
  });
}

// A weight gradient (A^T B over every step of the batch: a small C, a
// long k) splits k instead, when each part keeps at least this many steps
// and C at most kSplitKMostOutputs floats. Split by rows, each thread
// reads all of B and multiplies half-height panels; split by k, each
// reads half of A and B once. OpenBLAS on one core of a 2-core AMD EPYC
// (Zen 4, Cooperlake kernels), k = 50176 halved either way: 64 x 32 from
// 2.33 to 1.87 ms a thread, 128 x 128 12.2 -> 10.4, 256 x 256 38.9 -> 36.4.
constexpr int64_t kSplitKLeastSteps = 4096;
constexpr int64_t kSplitKMostOutputs = int64_t(1) << 18;

/// C = A^T B, A [k, m] and B [k, n], as `parts` products over ranges of
/// k, added in order: the first part into C, the others into a scratch
/// block of this thread's, reused between calls.
void gemmSplitK(const Gemm &g, int64_t parts) {
  thread_local std::vector<float> partials;
  const int64_t outputs = g.m * g.n;
  partials.resize(size_t((parts - 1) * outputs));
  float *scratch = partials.data();
  parallelFor(parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      int64_t k0 = p * g.k / parts, k1 = (p + 1) * g.k / parts;
      // A's and B's leading dimensions (m, n) do not depend on k.
      gemmPart(true, false, g.m, g.n, k1 - k0, g.a + k0 * g.m, g.b + k0 * g.n,
               p ? scratch + (p - 1) * outputs : g.c, 0, g.m, 0, g.n);
    }
  });
  parallelFor(outputs, 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t p = 1; p < parts; ++p) {
      const float *part = scratch + (p - 1) * outputs;
      for (int64_t i = i0; i < i1; ++i)
        g.c[i] += part[i];
    }
  });
}

/// Independent products, split across lruc's threads: a weight gradient
/// by k (gemmSplitK), others by rows one after another where they have
/// rows for every thread, else together by columns (in regions of up to
/// kBatch products). BLAS rejects a leading dimension of 0 and does
/// nothing for k = 0, so empty products are handled here.
class GemmsTogether {
public:
  void add(const Gemm &g) {
    if (g.m == 0 || g.n == 0)
      return;
    if (g.k == 0) {
      std::fill(g.c, g.c + g.m * g.n, 0.0f);
      return;
    }
    const int64_t stepParts =
        std::min<int64_t>(threadCount(), g.k / kSplitKLeastSteps);
    if (g.transA && !g.transB && stepParts > 1 &&
        g.m * g.n <= kSplitKMostOutputs) {
      gemmSplitK(g, stepParts);
      return;
    }
    int64_t grain = rowGrain(g);
    if (g.m >= grain * threadCount()) {
      parallelFor(g.m, grain, [&](int64_t m0, int64_t m1) {
        gemmPart(g, m0, m1, 0, g.n);
      });
      return;
    }
    few_[count_++] = g;
    if (count_ == kBatch)
      flush();
  }

  /// Computes the few-row products added since the last flush.
  void flush() {
    if (count_)
      gemmByColumns(few_, count_);
    count_ = 0;
  }

private:
  static constexpr size_t kBatch = 8;
  Gemm few_[kBatch];
  size_t count_ = 0;
};

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          const float *a, const float *b, float *c) {
  GemmsTogether gemms;
  gemms.add(Gemm{transA, transB, m, n, k, a, b, c});
  gemms.flush();
}

} // namespace

void matmulNT(const float *x, const float *w, int64_t rows, int64_t n,
              int64_t k, float *y) {
  gemm(false, true, rows, n, k, x, w, y);
}

void matmulNN(const float *x, const float *w, int64_t rows, int64_t n,
              int64_t k, float *y) {
  gemm(false, false, rows, k, n, x, w, y);
}

void matmulTN(const float *x, const float *z, int64_t rows, int64_t n,
              int64_t k, float *y) {
  gemm(true, false, n, k, rows, x, z, y);
}

void matmulsTogether(std::initializer_list<Matmul> products) {
  GemmsTogether gemms;
  for (const Matmul &p : products)
    gemms.add(p.nn ? Gemm{false, false, p.rows, p.k, p.n, p.x, p.w, p.y}
                   : Gemm{false, true, p.rows, p.n, p.k, p.x, p.w, p.y});
  gemms.flush();
}

/// Rows [row0, row1) of an untransposed A's product, on this thread.
static void gemmRows(bool transB, int64_t row0, int64_t row1, int64_t n,
                     int64_t k, const float *a, const float *b, float *c) {
  if (row1 <= row0 || n == 0)
    return;
  if (k == 0) {
    std::fill(c + row0 * n, c + row1 * n, 0.0f);
    return;
  }
  // m only sets A's leading dimension when A is transposed: not here.
  gemmPart(false, transB, row1, n, k, a, b, c, row0, row1, 0, n);
}

void matmulNTRows(const float *x, const float *w, int64_t row0, int64_t row1,
                  int64_t n, int64_t k, float *y) {
  gemmRows(true, row0, row1, n, k, x, w, y);
}

void matmulNNRows(const float *x, const float *w, int64_t row0, int64_t row1,
                  int64_t n, int64_t k, float *y) {
  gemmRows(false, row0, row1, k, n, x, w, y);
}

/// Columns [c0, c1) of C[rows, n] = A op(B), A [rows, k] untransposed, on
/// this thread.
static void gemmColumns(bool transB, int64_t rows, int64_t n, int64_t k,
                        const float *a, const float *b, float *c, int64_t c0,
                        int64_t c1) {
  if (rows == 0 || c1 <= c0)
    return;
  if (k == 0) {
    for (int64_t r = 0; r < rows; ++r)
      std::fill(c + r * n + c0, c + r * n + c1, 0.0f);
    return;
  }
  gemmPart(false, transB, rows, n, k, a, b, c, 0, rows, c0, c1);
}

void matmulNTColumns(const float *x, const float *w, int64_t rows, int64_t n,
                     int64_t k, float *y, int64_t c0, int64_t c1) {
  gemmColumns(true, rows, n, k, x, w, y, c0, c1);
}

void matmulNNColumns(const float *x, const float *w, int64_t rows, int64_t n,
                     int64_t k, float *y, int64_t c0, int64_t c1) {
  gemmColumns(false, rows, k, n, x, w, y, c0, c1);
}

int64_t productColumnBlock(int64_t n, int64_t work) {
  const int64_t blocks = (n + 15) / 16;
  const int64_t parts = std::clamp<int64_t>(
      n * work / kColumnPartWork, 1, std::min<int64_t>(threadCount(), blocks));
  return (blocks + parts - 1) / parts * 16;
}

void setFewRowProducts(FewRowProducts how) {
  fewRowProducts.store(how, std::memory_order_relaxed);
}

bool gather(const float *table, int64_t vocab, int64_t width,
            const int32_t *indices, int64_t count, IndexSource source, float *y,
            std::string &error) {
  if (!indicesWithin(indices, count, vocab, source, error))
    return false;
  for (int64_t i = 0; i < count; ++i) {
    const float *row = table + int64_t(indices[i]) * width;
    std::copy(row, row + width, y + i * width);
  }
  return true;
}

bool scatterAdd(const float *updates, const int32_t *indices, int64_t count,
                IndexSource source, int64_t vocab, int64_t width, float *table,
                std::string &error) {
  if (!indicesWithin(indices, count, vocab, source, error))
    return false;
  std::fill(table, table + vocab * width, 0.0f);
  for (int64_t i = 0; i < count; ++i) {
    float *row = table + int64_t(indices[i]) * width;
    const float *update = updates + i * width;
    for (int64_t h = 0; h < width; ++h)
      row[h] += update[h];
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Losses and randomness
//===----------------------------------------------------------------------===//

namespace {

/// A row's softmax normaliser, shifted by its max so that nothing
/// overflows: Σ exp(z − top) = 1 + rest, where `rest` sums every class but
/// the (first) largest one.
struct SoftmaxStats {
  float top;
  float rest;
};

SoftmaxStats softmaxStats(const float *z, int64_t classes) {
  int64_t best = 0;
  for (int64_t k = 1; k < classes; ++k)
    if (z[k] > z[best])
      best = k;
  SoftmaxStats stats{
      classes > 0 ? z[best] : -std::numeric_limits<float>::infinity(), 0.0f};
  for (int64_t k = 0; k < classes; ++k)
    if (k != best)
      stats.rest += std::exp(z[k] - stats.top);
  return stats;
}

} // namespace

namespace {

/// Labels in [0, classes), or negative where `ignoreNegative`.
bool checkLabels(const int32_t *labels, int64_t rows, int64_t classes,
                 bool ignoreNegative, std::string &error) {
  if (!ignoreNegative)
    return indicesWithin(labels, rows, classes, {"labels"}, error);
  for (int64_t r = 0; r < rows; ++r)
    if (labels[r] >= classes) {
      error = outsideMessage("labels", r, labels[r], classes, true);
      return false;
    }
  return true;
}

} // namespace

namespace {
/// W = sum_k w[k], summed in order (the CUDA emitter folds the same sum);
/// 0 without weights.
float classWeightSum(const float *classWeights, int64_t classes) {
  float total = 0.0f;
  for (int64_t k = 0; classWeights && k < classes; ++k)
    total += classWeights[k];
  return total;
}
} // namespace

bool softmaxCrossEntropy(const float *logits, const int32_t *labels,
                         int64_t rows, int64_t classes, bool ignoreNegative,
                         float labelSmoothing, const float *classWeights,
                         float *loss, std::string &error) {
  if (!checkLabels(labels, rows, classes, ignoreNegative, error))
    return false;
  const float total = classWeightSum(classWeights, classes);
  for (int64_t r = 0; r < rows; ++r) {
    if (labels[r] < 0) { // not scored
      loss[r] = 0.0f;
      continue;
    }
    const float *z = logits + r * classes;
    SoftmaxStats stats = softmaxStats(z, classes);
    // log Σ exp(z) − z[label] as log1p(rest) + (top − z[label]): two
    // non-negative terms, so a confident row's small loss (rest ≪ 1) keeps
    // its relative precision instead of cancelling to 0.
    loss[r] = std::log1p(stats.rest) + (stats.top - z[labels[r]]);
    if (classWeights) {
      // (1 - s) w[label] nll + s / K sum_k w[k] (lse - z[k]), the sum as
      // W log1p(rest) + sum_k w[k] (top - z[k]): non-negative terms.
      float spread = 0.0f;
      for (int64_t k = 0; k < classes; ++k)
        spread += classWeights[k] * (stats.top - z[k]);
      loss[r] = (1.0f - labelSmoothing) * classWeights[labels[r]] * loss[r] +
                labelSmoothing / float(classes) *
                    (total * std::log1p(stats.rest) + spread);
    } else if (labelSmoothing != 0.0f) {
      // Against (1 - s) onehot + s / K: s (z[label] - mean z) more.
      float sum = 0.0f;
      for (int64_t k = 0; k < classes; ++k)
        sum += z[k];
      loss[r] += labelSmoothing * (z[labels[r]] - sum / float(classes));
    }
  }
  return true;
}

bool softmaxCrossEntropyGrad(const float *logits, const int32_t *labels,
                             const float *g, int64_t rows, int64_t classes,
                             bool ignoreNegative, float labelSmoothing,
                             const float *classWeights, float *dlogits,
                             std::string &error) {
  if (!checkLabels(labels, rows, classes, ignoreNegative, error))
    return false;
  const float total = classWeightSum(classWeights, classes);
  for (int64_t r = 0; r < rows; ++r) {
    const float *z = logits + r * classes;
    float *d = dlogits + r * classes;
    if (labels[r] < 0) { // not scored
      std::fill(d, d + classes, 0.0f);
      continue;
    }
    SoftmaxStats stats = softmaxStats(z, classes);
    float scale = g[r] / (1 + stats.rest);
    if (classWeights) {
      // ((1 - s) w[label] (p - onehot) + s / K (W p - w)) g.
      float share = labelSmoothing / float(classes);
      float label = (1.0f - labelSmoothing) * classWeights[labels[r]];
      float pScale = scale * (label + share * total);
      for (int64_t k = 0; k < classes; ++k)
        d[k] = std::exp(z[k] - stats.top) * pScale -
               share * classWeights[k] * g[r];
      d[labels[r]] -= label * g[r];
      continue;
    }
    float spread = labelSmoothing / float(classes) * g[r];
    for (int64_t k = 0; k < classes; ++k)
      d[k] = std::exp(z[k] - stats.top) * scale - spread;
    d[labels[r]] -= (1.0f - labelSmoothing) * g[r];
  }
  return true;
}

namespace {

// Random123's philox4x32 constants (runtime/core/lib/Random.cpp).
constexpr uint32_t kPhiloxM0 = 0xD2511F53, kPhiloxM1 = 0xCD9E8D57;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9, kPhiloxW1 = 0xBB67AE85;
#if defined(__AVX512F__)
constexpr int64_t kPhiloxLanes = 16;
#else
constexpr int64_t kPhiloxLanes = 8;
#endif

// Lanes of 32-bit words, and half as many of 64, as GCC/Clang vectors: 16
// an AVX-512 register, 8 an AVX2 one.
template <int Lanes> struct PhiloxVectors {
  typedef uint32_t Words __attribute__((vector_size(4 * Lanes)));
  typedef uint64_t Pairs __attribute__((vector_size(4 * Lanes)));
};

/// The 64-bit products m * c of every lane, as their high and low words:
/// the even and odd lanes widened separately, one vpmuludq each. Written as
/// 64-bit vector products, GCC 12 expands them into shifts and adds, which
/// made Philox two to three times slower.
template <int Lanes>
inline void mulHiLo(uint32_t m, typename PhiloxVectors<Lanes>::Words c,
                    typename PhiloxVectors<Lanes>::Words &hi,
                    typename PhiloxVectors<Lanes>::Words &lo) {
  using Words = typename PhiloxVectors<Lanes>::Words;
  if constexpr (Lanes == 16) {
#if defined(__AVX512F__)
    __m512i factor = _mm512_set1_epi32(int(m));
    Words pe = (Words)_mm512_mul_epu32((__m512i)c, factor);
    Words po =
        (Words)_mm512_mul_epu32(_mm512_srli_epi64((__m512i)c, 32), factor);
    lo = __builtin_shufflevector(pe, po, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10,
                                 26, 12, 28, 14, 30);
    hi = __builtin_shufflevector(pe, po, 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11,
                                 27, 13, 29, 15, 31);
#endif
  } else {
    static_assert(Lanes == 8, "Philox runs 8 or 16 lanes");
#if defined(__AVX2__)
    __m256i factor = _mm256_set1_epi32(int(m));
    Words pe = (Words)_mm256_mul_epu32((__m256i)c, factor);
    Words po =
        (Words)_mm256_mul_epu32(_mm256_srli_epi64((__m256i)c, 32), factor);
#else
    using Pairs = typename PhiloxVectors<Lanes>::Pairs;
    Pairs even = reinterpret_cast<Pairs>(c) & uint64_t(0xffffffff);
    Pairs odd = reinterpret_cast<Pairs>(c) >> 32;
    Words pe = reinterpret_cast<Words>(even * uint64_t(m));
    Words po = reinterpret_cast<Words>(odd * uint64_t(m));
#endif
    lo = __builtin_shufflevector(pe, po, 0, 8, 2, 10, 4, 12, 6, 14);
    hi = __builtin_shufflevector(pe, po, 1, 9, 3, 11, 5, 13, 7, 15);
  }
}

/// Dropout's decisions (1 keep, 0 drop) for the 4 * Lanes * Groups elements
/// of blocks first, first + 1, ... in element order (element 4 b + j by
/// word j of core::philox4x32 of the counter {b, b >> 32, site, step}),
/// into keep. Groups independent chains of rounds, interleaved, so that one
/// group's multiplies run while another's wait for theirs (one AVX-512
/// group: 0.74 ns an element on a Zen 4 core, bound by the rounds' latency;
/// two 0.55, four 0.46). The decisions are made and put in element order
/// in vectors (the word-by-word transposition after a scalar compare cost
/// about as much as the rounds). Not inlined: dropoutKeeps, called a row at
/// a time, then stays small (inlined, its set-up took a row of 32 elements
/// from 1.14 to 1.7-2.0 ns an element).
template <int Lanes, int Groups>
__attribute__((noinline)) void philoxKeeps(uint64_t first, uint32_t site,
                                           uint32_t step, core::PhiloxKey key,
                                           uint32_t threshold, uint32_t *keep) {
  using Words = typename PhiloxVectors<Lanes>::Words;
  using Pairs = typename PhiloxVectors<Lanes>::Pairs;
  Words lane;
  for (int l = 0; l < Lanes; ++l)
    lane[l] = uint32_t(l);
  const Words zero = lane & 0u;
  Words c0[Groups], c1[Groups], c2[Groups], c3[Groups];
  for (int g = 0; g < Groups; ++g) {
    const uint64_t block = first + uint64_t(g) * Lanes;
    const uint32_t low = uint32_t(block), high = uint32_t(block >> 32);
    c0[g] = low + lane;
    c1[g] = high - (Words)(c0[g] < low); // carried where the low word wraps
    c2[g] = zero + site;
    c3[g] = zero + step;
  }
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    for (int g = 0; g < Groups; ++g) {
      Words hi0, lo0, hi1, lo1;
      mulHiLo<Lanes>(kPhiloxM0, c0[g], hi0, lo0);
      mulHiLo<Lanes>(kPhiloxM1, c2[g], hi1, lo1);
      c0[g] = hi1 ^ c1[g] ^ k0;
      c1[g] = lo1;
      c2[g] = hi0 ^ c3[g] ^ k1;
      c3[g] = lo0;
    }
    k0 += kPhiloxW0;
    k1 += kPhiloxW1;
  }
  for (int g = 0; g < Groups; ++g, keep += 4 * Lanes) {
    const Words d0 = (Words)((c0[g] >> 8) >= threshold) & 1u;
    const Words d1 = (Words)((c1[g] >> 8) >= threshold) & 1u;
    const Words d2 = (Words)((c2[g] >> 8) >= threshold) & 1u;
    const Words d3 = (Words)((c3[g] >> 8) >= threshold) & 1u;
    // Words 0 and 1, and 2 and 3, of each block side by side (a pair as one
    // 64-bit lane), then the two pairs of each block.
    Pairs p01[2], p23[2], out[4];
    if constexpr (Lanes == 16) {
      p01[0] = (Pairs)__builtin_shufflevector(d0, d1, 0, 16, 1, 17, 2, 18, 3,
                                              19, 4, 20, 5, 21, 6, 22, 7, 23);
      p01[1] = (Pairs)__builtin_shufflevector(
          d0, d1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      p23[0] = (Pairs)__builtin_shufflevector(d2, d3, 0, 16, 1, 17, 2, 18, 3,
                                              19, 4, 20, 5, 21, 6, 22, 7, 23);
      p23[1] = (Pairs)__builtin_shufflevector(
          d2, d3, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      for (int h = 0; h < 2; ++h) {
        out[2 * h] =
            __builtin_shufflevector(p01[h], p23[h], 0, 8, 1, 9, 2, 10, 3, 11);
        out[2 * h + 1] =
            __builtin_shufflevector(p01[h], p23[h], 4, 12, 5, 13, 6, 14, 7, 15);
      }
    } else {
      p01[0] = (Pairs)__builtin_shufflevector(d0, d1, 0, 8, 1, 9, 2, 10, 3, 11);
      p01[1] =
          (Pairs)__builtin_shufflevector(d0, d1, 4, 12, 5, 13, 6, 14, 7, 15);
      p23[0] = (Pairs)__builtin_shufflevector(d2, d3, 0, 8, 1, 9, 2, 10, 3, 11);
      p23[1] =
          (Pairs)__builtin_shufflevector(d2, d3, 4, 12, 5, 13, 6, 14, 7, 15);
      for (int h = 0; h < 2; ++h) {
        out[2 * h] = __builtin_shufflevector(p01[h], p23[h], 0, 4, 1, 5);
        out[2 * h + 1] = __builtin_shufflevector(p01[h], p23[h], 2, 6, 3, 7);
      }
    }
    std::memcpy(keep, out, sizeof out);
  }
}

/// A dropout key {seed, step} as Philox's key and the counter's step word.
std::pair<core::PhiloxKey, uint32_t> dropoutKeyOf(const int64_t key[2]) {
  uint64_t seed = uint64_t(key[0]);
  return {{uint32_t(seed), uint32_t(seed >> 32)}, uint32_t(key[1])};
}

} // namespace

void dropoutMask(const float *x, int64_t count, const int64_t key[2],
                 double rate, uint32_t site, float *y) {
  const uint32_t threshold = core::dropoutThreshold(rate);
  // x * dropoutScale(rate) in float: the interpreter's value rounded.
  const float scale = core::dropoutScale(rate);
  constexpr int64_t kRun = 256;
  parallelFor((count + kRun - 1) / kRun, 64, [&](int64_t begin, int64_t end) {
    uint32_t keep[kRun];
    for (int64_t run = begin; run < end; ++run) {
      const int64_t first = run * kRun, n = std::min(kRun, count - first);
      dropoutKeeps(key, site, threshold, first, n, keep);
      // Every element scaled, then selected: a loop without branches.
      for (int64_t e = 0; e < n; ++e) {
        float kept = x[first + e] * scale;
        y[first + e] = keep[e] ? kept : 0.0f;
      }
    }
  });
}

void dropoutKeeps(const int64_t key[2], uint32_t site, uint32_t threshold,
                  int64_t first, int64_t count, uint32_t *keep) {
  core::PhiloxKey philoxKey;
  uint32_t step;
  std::tie(philoxKey, step) = dropoutKeyOf(key);
  const int64_t stop = first + count;
  const int64_t blockEnd = (stop + 3) / 4;
  // From the block holding `first`, runs of as many interleaved groups as
  // the blocks left fill, then a narrower vector for a short tail (an
  // AVX-512 group of 16 blocks is 64 elements, a model of width 32 two
  // rows). Elements outside [first, stop) of the first and last runs are
  // drawn into `spare` and not kept.
  constexpr int64_t kWide = kPhiloxLanes;
  uint32_t spare[4 * 4 * kWide];
  for (int64_t block = first / 4; block < blockEnd;) {
    const int64_t left = blockEnd - block;
    const int64_t blocks = left >= 4 * kWide   ? 4 * kWide
                           : left >= 2 * kWide ? 2 * kWide
                           : left > 8          ? kWide
                                               : 8;
    const int64_t e0 = block * 4, e1 = (block + blocks) * 4;
    const bool whole = e0 >= first && e1 <= stop;
    uint32_t *into = whole ? keep + (e0 - first) : spare;
    switch (blocks) {
    case 4 * kWide:
      philoxKeeps<kWide, 4>(uint64_t(block), site, step, philoxKey, threshold,
                            into);
      break;
    case 2 * kWide:
      philoxKeeps<kWide, 2>(uint64_t(block), site, step, philoxKey, threshold,
                            into);
      break;
    case kWide:
      philoxKeeps<kWide, 1>(uint64_t(block), site, step, philoxKey, threshold,
                            into);
      break;
    default:
      philoxKeeps<8, 1>(uint64_t(block), site, step, philoxKey, threshold,
                        into);
    }
    if (!whole) {
      const int64_t from = std::max(first, e0), to = std::min(stop, e1);
      std::memcpy(keep + (from - first), spare + (from - e0),
                  size_t(to - from) * sizeof(uint32_t));
    }
    block += blocks;
  }
}

namespace {

/// Workspaces not lent out, freed when the library unloads.
struct WorkspaceFreeList {
  std::mutex mutex;
  std::vector<std::pair<char *, std::size_t>> blocks;
  ~WorkspaceFreeList() {
    for (auto &block : blocks)
      std::free(block.first);
  }
};

WorkspaceFreeList &workspaces() {
  static WorkspaceFreeList list;
  return list;
}

/// At least `bytes` (and 64), 64-byte aligned, for std::free; its size in
/// `size`. Throws std::bad_alloc.
char *allocateAligned(std::size_t bytes, std::size_t &size) {
  std::size_t rounded = std::max<std::size_t>((bytes + 63) / 64 * 64, 64);
  auto *data = static_cast<char *>(std::aligned_alloc(64, rounded));
  if (!data)
    throw std::bad_alloc();
  size = rounded;
  return data;
}

/// Whether this thread's leases have found room for OpenBLAS's buffers
/// since their last fresh block (a trivial thread_local).
thread_local bool blasRoomChecked = false;

/// Under an address-space cap, whether the room left holds the buffers
/// OpenBLAS may still map for the calls running (BlasBuffers.h: without
/// them it would wait forever); else says so.
bool blasBuffersFit(int64_t batch, int64_t bytes, std::string &error) {
  BlasAccounting &accounting = blasAccounting();
  if (!accounting.capped)
    return true;
  const int atOnce = accounting.leases.load() * detail::blasCallsAtOnce();
  const int more = atOnce - accounting.most.load();
  if (more <= 0)
    return true;
  // A buffer mapped by one of the pool's other threads may come with that
  // thread's malloc arena (at its first call; the calling thread has its
  // own by now, having allocated the workspace): without them in the
  // count, a buffer that fit at the check found its room taken and hung.
  const int otherThreads = std::min(more, atOnce - 1);
  const uint64_t buffers = uint64_t(more) * core::kBlasBufferBytes;
  const uint64_t arenas = uint64_t(otherThreads) * core::kMallocArenaBytes;
  const std::optional<uint64_t> left = core::addressSpaceLeft();
  if (!left || *left >= buffers + arenas)
    return true;
  error = "not enough memory under the address-space limit (ulimit -v): "
          "beside the workspace of a batch of " +
          std::to_string(batch) + " (" + core::formatBytes(double(bytes)) +
          ") it leaves " + core::formatBytes(double(*left)) +
          ", and OpenBLAS's buffers need " +
          core::formatBytes(double(buffers + arenas)) + " more (" +
          core::formatBytes(double(core::kBlasBufferBytes)) +
          " for each of up to " + std::to_string(atOnce) +
          (atOnce == 1 ? " call" : " calls") + " at once" +
          (arenas ? ", and " + core::formatBytes(double(arenas)) +
                        " for the malloc arenas of the threads that run them"
                  : std::string()) +
          "); fewer threads, a smaller batch or a higher limit";
  return false;
}

} // namespace

bool WorkspaceLease::take(int64_t perExample, int64_t fixed, int64_t batch,
                          std::string &error) {
  if (batch < 0) {
    error = "batch " + std::to_string(batch) + " is negative";
    return false;
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(perExample, batch, &bytes) ||
      __builtin_add_overflow(bytes, fixed, &bytes)) {
    error = "batch " + std::to_string(batch) +
            ": the workspace would pass 2^63 bytes (" +
            core::formatBytes(double(perExample)) + " an example)";
    return false;
  }
  WorkspaceFreeList &list = workspaces();
  {
    std::lock_guard<std::mutex> lock(list.mutex);
    // The largest free block: one caller's sizes barely change, so it
    // fits from the second call on.
    auto largest = std::max_element(
        list.blocks.begin(), list.blocks.end(),
        [](const auto &a, const auto &b) { return a.second < b.second; });
    if (largest != list.blocks.end()) {
      std::tie(data_, size_) = *largest;
      list.blocks.erase(largest);
    }
  }
  if (!data_ || size_ < std::size_t(bytes)) {
    std::free(data_);
    data_ = nullptr;
    size_ = 0;
    try {
      data_ = allocateAligned(std::size_t(bytes), size_);
    } catch (const std::bad_alloc &) {
      error = "not enough memory for the workspace of a batch of " +
              std::to_string(batch) + ": " + core::formatBytes(double(bytes)) +
              " (" + core::formatBytes(double(perExample)) +
              " an example; a smaller batch needs less)";
      return false;
    }
    blasRoomChecked = false; // the block took address space
  }
  if (blasAccounting().capped)
    blasAccounting().leases.fetch_add(1); // until the lease ends
  // Reading /proc on every call would cost step mode's tokens.
  if (!blasRoomChecked) {
    if (!blasBuffersFit(batch, bytes, error))
      return false;
    blasRoomChecked = true;
  }
  return true;
}

WorkspaceLease::~WorkspaceLease() {
  if (!data_)
    return;
  if (blasAccounting().capped)
    blasAccounting().leases.fetch_sub(1);
  WorkspaceFreeList &list = workspaces();
  std::lock_guard<std::mutex> lock(list.mutex);
  list.blocks.emplace_back(data_, size_);
}

struct StepConstantsLease::Values {
  char *data = nullptr;
  std::size_t size = 0;
  std::vector<float> bits; ///< the ranges' floats the data came from
  bool valid = false;
  ~Values() { std::free(data); }
};

namespace {

/// Step-constant values not lent out, freed when the library unloads.
struct StepConstantsFreeList {
  std::mutex mutex;
  std::vector<std::unique_ptr<StepConstantsLease::Values>> values;
};

StepConstantsFreeList &stepConstants() {
  static StepConstantsFreeList list;
  return list;
}

} // namespace

StepConstantsLease::StepConstantsLease(std::size_t bytes, const float *params,
                                       const float *state, const Range *ranges,
                                       int count)
    : values_(nullptr), params_(params), state_(state), ranges_(ranges),
      count_(count), current_(false) {
  std::unique_ptr<Values> values;
  {
    StepConstantsFreeList &list = stepConstants();
    std::lock_guard<std::mutex> lock(list.mutex);
    // The last one given back: a single stream of calls gets its own.
    if (!list.values.empty()) {
      values = std::move(list.values.back());
      list.values.pop_back();
    }
  }
  if (!values)
    values = std::make_unique<Values>();
  if (values->size < bytes) {
    std::free(values->data);
    values->data = nullptr;
    values->size = 0;
    values->valid = false;
    values->data = allocateAligned(bytes, values->size);
  }
  current_ = values->valid;
  const float *bits = values->bits.data();
  for (int r = 0; r < count && current_; ++r) {
    const Range &range = ranges[r];
    current_ = bits + range.size <= values->bits.data() + values->bits.size() &&
               std::memcmp(bits, blockOf(range) + range.offset,
                           std::size_t(range.size) * sizeof(float)) == 0;
    bits += range.size;
  }
  // The caller is about to overwrite them.
  if (!current_)
    values->valid = false;
  values_ = values.release();
}

StepConstantsLease::~StepConstantsLease() {
  StepConstantsFreeList &list = stepConstants();
  std::lock_guard<std::mutex> lock(list.mutex);
  list.values.emplace_back(values_);
}

char *StepConstantsLease::data() const { return values_->data; }

void StepConstantsLease::computed() {
  std::vector<float> &bits = values_->bits;
  bits.clear();
  for (int r = 0; r < count_; ++r)
    bits.insert(bits.end(), blockOf(ranges_[r]) + ranges_[r].offset,
                blockOf(ranges_[r]) + ranges_[r].offset + ranges_[r].size);
  values_->valid = true;
  current_ = true;
}

//===----------------------------------------------------------------------===//
// Instantiations
//===----------------------------------------------------------------------===//

void sumPartials(float *rows, int64_t chunks, int64_t width) {
  // Columns in blocks whose accumulators stay in registers; a block's rows
  // are read in order, each once.
  constexpr int64_t kBlock = 64;
  for (int64_t j0 = 0; j0 < width; j0 += kBlock) {
    const int64_t n = std::min(kBlock, width - j0);
    double total[kBlock] = {};
    for (int64_t c = 0; c < chunks; ++c) {
      const float *row = rows + c * width + j0;
      for (int64_t j = 0; j < n; ++j)
        total[j] += row[j];
    }
    for (int64_t j = 0; j < n; ++j)
      rows[j0 + j] = float(total[j]);
  }
}

void copyResults(void *const *to, const void *const *from, const int64_t *bytes,
                 int count) {
  // Pieces of 64 KiB numbered across the results in order; a thread part
  // copies a run of them (at least 4, so that small results stay on the
  // caller). A result that is its own source has none; one that overlaps
  // its source in part has none either and is moved here first.
  constexpr int64_t kPiece = int64_t(1) << 16;
  auto piecesOf = [&](int r) -> int64_t {
    auto *dst = static_cast<char *>(to[r]);
    const auto *src = static_cast<const char *>(from[r]);
    if (dst == src || (dst < src + bytes[r] && src < dst + bytes[r]))
      return 0;
    return (bytes[r] + kPiece - 1) / kPiece;
  };
  int64_t pieces = 0;
  for (int r = 0; r < count; ++r) {
    const int64_t own = piecesOf(r);
    if (own == 0 && bytes[r] > 0 && to[r] != from[r])
      std::memmove(to[r], from[r], size_t(bytes[r]));
    pieces += own;
  }
  parallelFor(pieces, 4, [&](int64_t begin, int64_t end) {
    int64_t first = 0; // the number of result r's first piece
    for (int r = 0; r < count && first < end; ++r) {
      const int64_t own = piecesOf(r);
      const int64_t p0 = std::max(begin, first) - first;
      const int64_t p1 = std::min(end, first + own) - first;
      if (p0 < p1) {
        const int64_t b0 = p0 * kPiece, b1 = std::min(p1 * kPiece, bytes[r]);
        std::memcpy(static_cast<char *>(to[r]) + b0,
                    static_cast<const char *>(from[r]) + b0, size_t(b1 - b0));
      }
      first += own;
    }
  });
}

#define LRUC_INSTANTIATE(T)                                                    \
  template void broadcast<T>(const T *, const Shape &, const int64_t *, T *,   \
                             const Shape &);                                   \
  template void reduceSum<T>(const T *, const Shape &, uint32_t, T *);         \
  template void concat<T>(const T *const *, const Shape *, int, int, T *);     \
  template void slice<T>(const T *, const Shape &, int, int64_t, int64_t,      \
                         T *);                                                 \
  template bool shift<T>(const T *, const T *, const int32_t *, bool, int64_t, \
                         int64_t, int64_t, T *, std::string &);                \
  template bool scan<T>(const T *, bool, const T *, const T *,                 \
                        const int32_t *, bool, int64_t, int64_t, int64_t, T *, \
                        std::string &);

LRUC_INSTANTIATE(float)
LRUC_INSTANTIATE(cfloat)

#undef LRUC_INSTANTIATE

} // namespace lruc::cpu
