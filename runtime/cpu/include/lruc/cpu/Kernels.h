//===- Kernels.h - CPU kernels that generated model code calls --*- C++ -*-===//
//
// The structural primitives of docs/primitives.md in fp32 on the CPU. Code
// that lruc generates for a model (`lruc model.lru -o model.so`) does the
// elementwise arithmetic itself, in fused loops, and calls these for
// everything else. The fp64 reference interpreter (compiler/interpreter)
// defines what each must compute; tests/cpu checks them against it.
//
// Conventions: row-major dense arrays; complex values are std::complex<float>
// (interleaved re, im); `lengths` are int32 per sequence, null when a
// sequence is never padded. A kernel that can meet bad data (an index out of
// range, a length outside [0, L]) returns false after writing a message to
// `error`; nothing aborts.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_CPU_KERNELS_H
#define LRUC_CPU_KERNELS_H

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace lruc::cpu {

using cfloat = std::complex<float>;

/// A row-major shape of at most kMaxRank dims.
struct Shape {
  static constexpr int kMaxRank = 6;
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t numElements() const;
};

// --- Scalar functions the generated elementwise loops use -------------------
//
// Inline, so that the fused loops that call them can be vectorised (forced:
// GCC's heuristics leave a nested call such as geluGrad -> erf -> exp out of
// line, and one call keeps a whole loop scalar). The formulas are the
// interpreter's (compiler/interpreter), in float.
#define LRUC_INLINE inline __attribute__((always_inline))

/// e^x without a libm call, so that the loops calling it vectorise (glibc's
/// expf is a call GCC cannot vectorise without -ffast-math): x = n ln 2 + r
/// with |r| <= ln 2 / 2, e^r by Cephes' expf polynomial (relative error
/// below 2e-7), 2^n built in the exponent bits of two floats (so that n =
/// 128 does not overflow early). inf above ln(FLT_MAX); 0 below
/// ln(FLT_MIN) (no denormals); NaN stays NaN.
LRUC_INLINE float exp(float x) {
  constexpr float kMax = 88.7228317f, kMin = -87.3365479f;
  float clamped = std::min(std::max(x, kMin), kMax);
  float n = std::floor(clamped * 1.44269504088896341f + 0.5f);
  float r = clamped - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t whole = int32_t(n), half = whole / 2;
  int32_t bits1 = (half + 127) << 23, bits2 = (whole - half + 127) << 23;
  float scale1, scale2;
  std::memcpy(&scale1, &bits1, sizeof scale1);
  std::memcpy(&scale2, &bits2, sizeof scale2);
  float y = p * scale1 * scale2;
  y = x > kMax ? HUGE_VALF : y;
  y = x < kMin ? 0.0f : y;
  return x != x ? x : y;
}
inline cfloat exp(cfloat z) { return std::exp(z); }

/// 1 / (1 + e^-x); 0 or 1 (never NaN) where e^-x overflows.
LRUC_INLINE float sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

/// log(1 + e^x), no overflow: x + log1p(e^-x) for x > 0.
inline float softplus(float x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

namespace detail {
constexpr float kSqrt2 = 1.41421356237309504880f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f; // sqrt(2/pi)
constexpr float kSqrt2Pi = 2.50662827463100050242f;     // sqrt(2 pi)
constexpr float kTanhCoefficient = 0.044715f;

/// erf(x) by Abramowitz & Stegun 7.1.26: |error| < 6e-7 in float (below
/// the kernels' 1e-5 tolerance against the fp64 reference), about 3x faster
/// than glibc's erff, which made exact GELU the largest single cost of a
/// train step.
/// `gaussian` is e^(-x^2), which GELU's derivative has already.
LRUC_INLINE float erfWithGaussian(float x, float gaussian) {
  float a = std::fabs(x);
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float poly =
      ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t -
        0.284496736f) * t + 0.254829592f) * t;
  return std::copysign(1.0f - poly * gaussian, x);
}
LRUC_INLINE float erf(float x) {
  return erfWithGaussian(x, lruc::cpu::exp(-x * x));
}
} // namespace detail

/// Exact: x Φ(x) = ½ x (1 + erf(x/√2)); approximate: the tanh form
/// ½ x (1 + tanh(√(2/π) (x + 0.044715 x³))).
LRUC_INLINE float gelu(float x, bool approximate) {
  using namespace detail;
  if (approximate)
    return 0.5f * x *
           (1 + std::tanh(kSqrt2OverPi * (x + kTanhCoefficient * x * x * x)));
  return 0.5f * x * (1 + detail::erf(x / kSqrt2));
}

/// d gelu / dx. Exact: Φ(x) + x φ(x); approximate: ½ (1 + t) +
/// ½ x (1 − t²) √(2/π) (1 + 3·0.044715 x²), t the tanh above. The second
/// term is skipped where 1 − t² is 0 (|x| ≳ 10), where √(2/π)(…x²) may be
/// inf for |x| > 1e19 and 0·inf would be NaN.
LRUC_INLINE float geluGrad(float x, bool approximate) {
  using namespace detail;
  if (approximate) {
    float t = std::tanh(kSqrt2OverPi * (x + kTanhCoefficient * x * x * x));
    float sech2 = 1 - t * t;
    if (sech2 == 0)
      return 0.5f * (1 + t);
    float du = kSqrt2OverPi * (1 + 3 * kTanhCoefficient * x * x);
    return 0.5f * (1 + t) + 0.5f * x * sech2 * du;
  }
  // One exponential for both terms: e^(-x^2 / 2) is the density's and
  // erf(x / sqrt 2)'s.
  float gaussian = lruc::cpu::exp(-0.5f * x * x);
  return 0.5f * (1 + detail::erfWithGaussian(x / kSqrt2, gaussian)) +
         x * gaussian / kSqrt2Pi;
}

// The rest of the scalar helpers the generated loops name as lruc::cpu::
// (the CUDA backend's lruc::gpu defines the same names).
using std::conj;
using std::imag;
using std::log;
using std::max;
using std::real;
using std::sqrt;
using std::tanh;
LRUC_INLINE float rsqrt(float x) { return 1.0f / std::sqrt(x); }

// --- Shapes -----------------------------------------------------------------

/// y[i_0..i_{r-1}] = x[i_dims[0], ..., i_dims[k-1]] (lru.broadcast).
template <class T>
void broadcast(const T *x, const Shape &xShape, const int64_t *dims, T *y,
               const Shape &yShape);

/// y = sum of x over the dims whose bit is set in `reducedDims`
/// (bit d for dim d); those dims disappear from the shape.
template <class T>
void reduceSum(const T *x, const Shape &xShape, uint32_t reducedDims, T *y);

/// Adds `chunks` rows of `width` partial sums, in row order and in double,
/// into the first row (which is 0 when there are none): how an lru.fused
/// group's sums are completed after its chunks ran, in any order.
void sumPartials(float *rows, int64_t chunks, int64_t width);

/// Joins `count` tensors along `dim` (shapes equal elsewhere).
template <class T>
void concat(const T *const *parts, const Shape *partShapes, int count,
            int dim, T *y);

/// to[i] <- from[i], bytes[i] each, for i < count, split across the pool:
/// an entry point's results copied out of the workspace at its end (the
/// copy may alias an input: train_step's updated parameters and moments go
/// back over the blocks it read). A result that overlaps its source in
/// part is moved whole on one thread.
void copyResults(void *const *to, const void *const *from, const int64_t *bytes,
                 int count);

/// The `size` entries of `dim` from `offset`.
template <class T>
void slice(const T *x, const Shape &xShape, int dim, int64_t offset,
           int64_t size, T *y);

/// A buffer's floats read as another element type (lru.view): a cfloat is
/// two floats, real part first. Keeps the pointer's constness.
template <class To, class From>
To *viewAs(From *x) {
  return reinterpret_cast<To *>(x);
}
template <class To, class From>
const To *viewAs(const From *x) {
  return reinterpret_cast<const To *>(x);
}

// --- Sequences [B, L, N] ----------------------------------------------------

/// Whether every length is within [0, steps] (null lengths are); else a
/// message naming the first one outside.
bool checkLengths(const int32_t *lengths, int64_t batch, int64_t steps,
                  std::string &error);

/// lru.length_mask: y[b, t] = 1 for t < lengths[b] (prefix) or
/// t == lengths[b] - 1 (last), else 0; with `scoredLabels` [batch, steps],
/// 0 also where scoredLabels[b, t] < 0.
bool lengthMask(const int32_t *lengths, const int32_t *scoredLabels,
                int64_t batch, int64_t steps, bool last, float *y,
                std::string &error);

/// lru.zero_padding: y = x [batch, steps, width] with 0 at each step
/// t >= lengths[b] (x there is never read).
bool zeroPadding(const int32_t *x, const int32_t *lengths, int64_t batch,
                 int64_t steps, int64_t width, int32_t *y, std::string &error);

/// lru.label_weight: y[i] = weights[labels[i]] for a label in [0, classes),
/// else 0 (a step not scored; a label past the classes is the cross
/// entropy's to report).
void labelWeight(const int32_t *labels, int64_t count, const float *weights,
                 int64_t classes, float *y);

/// lru.shift: y_t = x_{t-1} (y_0 = init, or 0); reverse: y_t = x_{t+1} and
/// the last real step reads init. Padded steps are 0. init is [B, N] or null.
template <class T>
bool shift(const T *x, const T *init, const int32_t *lengths, bool reverse,
           int64_t batch, int64_t steps, int64_t width, T *y,
           std::string &error);

/// lru.scan: x_t = lambda_t * x_{t-1} + b_t (reverse: x_{t+1}), from init
/// ([B, N] or null = 0). lambda is [N] (constant) or, with lambdaPerStep,
/// [B, L, N]. Padded steps never enter the state and are 0; the reverse
/// scan starts at each sequence's last real step.
template <class T>
bool scan(const T *lambda, bool lambdaPerStep, const T *b, const T *init,
          const int32_t *lengths, bool reverse, int64_t batch, int64_t steps,
          int64_t width, T *x, std::string &error);

// --- Dense algebra and lookups ----------------------------------------------

/// y[rows, n] = x[rows, k] w[n, k]^T (lru.matmul nt).
void matmulNT(const float *x, const float *w, int64_t rows, int64_t n,
              int64_t k, float *y);
/// y[rows, k] = x[rows, n] w[n, k] (lru.matmul nn).
void matmulNN(const float *x, const float *w, int64_t rows, int64_t n,
              int64_t k, float *y);
/// y[n, k] = x[rows, n]^T z[rows, k] (lru.matmul tn).
void matmulTN(const float *x, const float *z, int64_t rows, int64_t n,
              int64_t k, float *y);
/// Rows [row0, row1) of matmulNT's and matmulNN's y, on the calling thread:
/// a fused group's epilogue computes its rows of the products in the part
/// of its loop that reads them.
void matmulNTRows(const float *x, const float *w, int64_t row0, int64_t row1,
                  int64_t n, int64_t k, float *y);
void matmulNNRows(const float *x, const float *w, int64_t row0, int64_t row1,
                  int64_t n, int64_t k, float *y);
/// Columns [c0, c1) of matmulNT's y (of its n) and of matmulNN's (of its
/// k), all rows, on the calling thread: step mode's scan computes its
/// channels of `B u` in the part that scans them.
void matmulNTColumns(const float *x, const float *w, int64_t rows, int64_t n,
                     int64_t k, float *y, int64_t c0, int64_t c1);
void matmulNNColumns(const float *x, const float *w, int64_t rows, int64_t n,
                     int64_t k, float *y, int64_t c0, int64_t c1);
/// The columns of a part when `n` columns of products, each `work`
/// multiply-adds, are shared across lruc's threads by columns: whole
/// 16-column blocks, a part as much work at least as matmulsTogether gives
/// one.
int64_t productColumnBlock(int64_t n, int64_t work);

/// One product of matmulsTogether: matmulNT's arguments (nn false) or
/// matmulNN's (nn true).
struct Matmul {
  const float *x, *w;
  int64_t rows, n, k;
  float *y;
  bool nn;
};
/// Independent products (none reads another's y) at once. With few rows
/// (step mode), the threads split the columns of all of them in one
/// parallel region: one hand-off between threads instead of one per
/// product, and products too small to split on their own shared out too.
/// Products with rows for every thread run one after another, each split
/// by rows as matmulNT splits it.
void matmulsTogether(std::initializer_list<Matmul> products);

/// The arithmetic of the matrix products above. Fp32 (the default): fp32
/// inputs and sums (OpenBLAS, lruc's dot products). Bf16: a product part
/// of at least 64 rows, 16 columns, sums of 32 terms and 2^18
/// multiply-adds has its inputs rounded to
/// bfloat16 (8 bits of mantissa, to nearest) and its sums in fp32, through
/// oneDNN (libdnnl.so.2, opened at run time) on AMX or AVX512-BF16: about
/// twice the fp32 rate on such CPUs, each product within ~2^-8 of
/// sum |x| |w| of fp32's. Smaller parts (step mode's few rows) stay fp32.
/// One setting for the whole library (every thread, every call).
enum class MatmulPrecision { Fp32, Bf16 };
/// False, with the reason in `error` and the setting unchanged, when this
/// machine or build cannot multiply bfloat16 (no oneDNN, a CPU without
/// AMX or AVX512-BF16). Call when no kernel is running. Also exported from
/// model libraries as `extern "C" int lruc_cpu_set_matmul(int bf16, char
/// *error, size_t error_size)` (0 on success).
bool setMatmulPrecision(MatmulPrecision precision, std::string &error);
MatmulPrecision matmulPrecision();

/// How matmulNT multiplies 1 to 32 rows (step mode's batch) by a weight:
/// DotProducts, lruc's own kernel of the build's vector width, reading the
/// weight once for every 4 rows (AVX-512) or 2 (AVX2 and FMA; elsewhere as
/// General); DotProductsAvx2, the same with 8-float vectors wherever the
/// CPU has AVX2 and FMA (else as General); SmallCalls, sgemm calls of up to
/// 4 rows (from 2 rows); or General, one sgemv per row up to 6 rows, else
/// one sgemm. Automatic (the default) takes DotProducts where the build has
/// it, else SmallCalls where OpenBLAS runs its AVX-512 kernels (which
/// multiply small products without packing B), else General. Tests and
/// benchmarks choose; all compute the same products.
enum class FewRowProducts {
  Automatic,
  DotProducts,
  DotProductsAvx2,
  SmallCalls,
  General
};
void setFewRowProducts(FewRowProducts how);

/// What an index outside the table is reported as: `name[i]`, or
/// `name[b, t]` of indices [B, steps] when `steps` > 0 (a model's tokens).
struct IndexSource {
  const char *name = "indices";
  int64_t steps = 0;
};

/// Whether every one of `count` indices is within [0, limit); else false
/// with gather's message for the first that is not.
bool indicesWithin(const int32_t *indices, int64_t count, int64_t limit,
                   IndexSource source, std::string &error);

/// y[i, :] = table[indices[i], :] for i < count; table is [vocab, width].
bool gather(const float *table, int64_t vocab, int64_t width,
            const int32_t *indices, int64_t count, IndexSource source, float *y,
            std::string &error);
/// table[vocab, width] = 0, then table[indices[i], :] += updates[i, :].
bool scatterAdd(const float *updates, const int32_t *indices, int64_t count,
                IndexSource source, int64_t vocab, int64_t width, float *table,
                std::string &error);

// --- Losses and randomness ----------------------------------------------------

/// loss[r] = -log softmax(logits[r, :])[labels[r]] for r < rows; with
/// `labelSmoothing` s, the cross entropy against (1 - s) onehot(labels[r])
/// + s / classes; with `classWeights` w (null: none), PyTorch's weighted
/// row -(1 - s) w[label] log p[label] - s / classes sum_k w[k] log p[k]. A
/// label outside [0, classes) is an error, but with `ignoreNegative` a
/// negative one marks a row not scored: loss[r] = 0.
bool softmaxCrossEntropy(const float *logits, const int32_t *labels,
                         int64_t rows, int64_t classes, bool ignoreNegative,
                         float labelSmoothing, const float *classWeights,
                         float *loss, std::string &error);
/// dlogits[r, :] = (softmax(logits[r, :]) - (1 - s) onehot(labels[r]) -
/// s / classes) * g[r] (s: `labelSmoothing`); with `classWeights` w,
/// ((1 - s) w[label] (softmax - onehot) + s / classes (sum(w) softmax - w))
/// * g[r]; 0 for a row not scored (`ignoreNegative`, a negative label).
bool softmaxCrossEntropyGrad(const float *logits, const int32_t *labels,
                             const float *g, int64_t rows, int64_t classes,
                             bool ignoreNegative, float labelSmoothing,
                             const float *classWeights, float *dlogits,
                             std::string &error);

/// y[i] = x[i] * keep(i) / (1 - rate), keep drawn by runtime/core's
/// dropoutKeep(key[0], key[1], site, i, rate): the same mask as the
/// interpreter's.
void dropoutMask(const float *x, int64_t count, const int64_t key[2],
                 double rate, uint32_t site, float *y);
/// keep[e] = 1 if dropout keeps element first + e of the tensor at `site`
/// (the decision dropoutMask makes; `threshold` is core's
/// dropoutThreshold(rate)), else 0, for e < count: a fused loop's row of
/// decisions, drawn before its elements are computed.
void dropoutKeeps(const int64_t key[2], uint32_t site, uint32_t threshold,
                  int64_t first, int64_t count, uint32_t *keep);

// --- Threads -----------------------------------------------------------------
//
// One pool for every kernel (runtime/cpu/lib/Threads.cpp): LRUC_NUM_THREADS
// threads, else one per core; GEMMs are split by rows across it (by
// columns when there are too few rows for every thread), each part a
// single-threaded OpenBLAS call. The partition depends only on the sizes
// and the thread count, so results repeat exactly run to run.

/// The pool's threads, the caller included: those asked for, or fewer
/// where the system would not start more. Also exported from model
/// libraries as `extern "C" int lruc_cpu_threads()`.
int threadCount();
/// Replaces the pool; call when no kernel is running. Also exported from
/// model libraries as `extern "C" void lruc_cpu_set_threads(int)`.
void setThreadCount(int threads);

/// The channels a scan's thread part takes of each sequence of `width`
/// channels: whole rows up to 512 channels when there are at least as many
/// sequences as threads; else rows split so that every thread has a part
/// (at least 16 channels each). Both forms keep each part's state in L1.
int64_t scanChannelBlock(int64_t batch, int64_t width);

/// Runs body(context, begin, end) over [0, n) in up to threadCount() parts
/// of at least `grain` each (the caller runs one), or at once on the caller
/// when one part would do or another region holds the pool.
void parallelForRaw(int64_t n, int64_t grain,
                    void (*body)(void *, int64_t, int64_t), void *context);

/// parallelForRaw with a callable body(begin, end).
template <class F>
void parallelFor(int64_t n, int64_t grain, F &&body) {
  using Body = std::remove_reference_t<F>;
  parallelForRaw(
      n, grain,
      [](void *c, int64_t begin, int64_t end) {
        (*static_cast<Body *>(c))(begin, end);
      },
      const_cast<void *>(static_cast<const void *>(&body)));
}

/// The fewest streams a thread takes when step mode splits its batch by
/// streams: one pass of the AVX2 few-row products (4 rows).
constexpr int64_t kLeastStreamsPerThread = 4;
/// The most weight bytes a token reads for step mode to split its batch by
/// streams: every thread then reads all of them, which pays while they sit
/// in the last-level cache together (half a 32 MB L3 of an AMD EPYC; at 2
/// threads ListOps' 4 MB 1.2-1.4x faster a token at batch 8, Text's 7.9 MB
/// even, sCIFAR's 31.5 MB 1.5x slower).
constexpr int64_t kMostStreamPartWeightBytes = int64_t(16) << 20;

using StreamPartBody = bool (*)(void *context, int64_t first, int64_t count,
                                std::string &error);

/// Runs step mode's `batch` streams, which never read one another, as
/// body(context, first, count, error) over parts of whole streams, one a
/// thread, when every thread gets at least kLeastStreamsPerThread streams
/// and a token reads at most kMostStreamPartWeightBytes of weights
/// (`weightBytes`): each part then runs its ops on its own thread
/// (threadCount() is 1 there), with no hand-off between them. Else one
/// part on the caller, whose ops split their columns across the threads.
/// False when a part failed, with the first failing part's error; a part's
/// exception is rethrown here once every part is done. The parts depend
/// only on the sizes and the thread count.
bool forStreamPartsRaw(int64_t batch, int64_t weightBytes, StreamPartBody body,
                       void *context, std::string &error);

/// forStreamPartsRaw with a callable body(first, count, error).
template <class F>
bool forStreamParts(int64_t batch, int64_t weightBytes, std::string &error,
                    F &&body) {
  using Body = std::remove_reference_t<F>;
  return forStreamPartsRaw(
      batch, weightBytes,
      [](void *c, int64_t first, int64_t count, std::string &error) {
        return (*static_cast<Body *>(c))(first, count, error);
      },
      const_cast<void *>(static_cast<const void *>(&body)), error);
}

/// Scratch memory for one call of a generated function, 64-byte aligned,
/// lent from the library's free list and given back when the lease ends:
/// concurrent calls get different memory, and a steady run allocates
/// nothing after its first calls. The contents are undefined. Not
/// thread_local: a dlclose'd library leaves no thread-local destructor
/// behind to keep it mapped.
class WorkspaceLease {
public:
  WorkspaceLease() = default;
  ~WorkspaceLease();
  WorkspaceLease(const WorkspaceLease &) = delete;
  WorkspaceLease &operator=(const WorkspaceLease &) = delete;

  /// Takes `perExample * batch + fixed` bytes (the memory plan's size of a
  /// function at `batch`). False, with the reason in `error`, where the
  /// batch is negative, the size passes 2^63 bytes or there is not enough
  /// memory for it: a message that says how much, never an exception.
  bool take(int64_t perExample, int64_t fixed, int64_t batch,
            std::string &error);
  char *data() const { return data_; }

private:
  char *data_ = nullptr;
  std::size_t size_ = 0;
};

/// The values of step mode that depend on parameters alone (the ops of
/// @step marked lru.step_constant: BatchNorm's scale, the LRU's λ and γ),
/// kept from one call to the next. Lent like a workspace from the library's
/// own list, so a stream of calls gets its values back and concurrent calls
/// get different ones. The values remember the bits of the parameters they
/// were computed from: when `current()` is false the caller computes them
/// into data() and then calls `computed()`. Throws std::bad_alloc.
class StepConstantsLease {
public:
  /// Floats [offset, offset + size) of the parameter block, or of the
  /// state block (running statistics).
  struct Range {
    bool state;
    int64_t offset, size;
  };

  /// `bytes` of values (64-byte aligned) computed from `count` ranges.
  StepConstantsLease(std::size_t bytes, const float *params,
                     const float *state, const Range *ranges, int count);
  ~StepConstantsLease();
  StepConstantsLease(const StepConstantsLease &) = delete;
  StepConstantsLease &operator=(const StepConstantsLease &) = delete;

  char *data() const;
  /// Whether data() holds the values of the parameters at hand: the ranges
  /// have the bits the values were computed from.
  bool current() const { return current_; }
  /// Records that data() now holds the values of the parameters at hand.
  void computed();

  struct Values; // the values and the parameter bits they came from

private:
  const float *blockOf(const Range &range) const {
    return range.state ? state_ : params_;
  }

  Values *values_;
  const float *params_, *state_;
  const Range *ranges_;
  int count_;
  bool current_;
};

} // namespace lruc::cpu

#endif // LRUC_CPU_KERNELS_H
