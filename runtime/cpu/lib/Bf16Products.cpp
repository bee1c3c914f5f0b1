//===- Bf16Products.cpp - Matrix products on bfloat16 inputs (oneDNN) -----===//
//
// MatmulPrecision::Bf16 (Kernels.h): each part of a large product, on the
// lruc thread that computes it, rounds its rows of op(A) and all of op(B)
// to bfloat16 and multiplies them with oneDNN's matmul primitive, which
// runs on AMX tiles (Sapphire Rapids and later) or AVX512-BF16 dot
// products (Cooper Lake, Zen 4), summing in fp32. oneDNN is opened at run
// time (dlopen), as the GPU runtime opens CUDA: a model library loads and
// runs in fp32 on a machine without it.
//
// oneDNN runs a primitive on the threads of its build's runtime (OpenMP in
// Debian's); lruc's pool has already split the product, so each calling
// thread tells OpenMP to use itself alone. Primitives are made once per
// thread and shape (oneDNN compiles a kernel for each) with a scratchpad
// of the thread's own, so threads never share one.
//
//===----------------------------------------------------------------------===//

#include "Bf16Products.h"

#include "lruc/cpu/Kernels.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#if defined(LRUC_HAVE_ONEDNN)
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#endif

namespace lruc::cpu {
namespace detail {
namespace {

std::atomic<MatmulPrecision> precision{MatmulPrecision::Fp32};

} // namespace

#if defined(LRUC_HAVE_ONEDNN)
namespace {

/// The oneDNN C functions lruc calls, looked up in libdnnl.so.2.
struct OneDnn {
#define LRUC_ONEDNN_FUNCTIONS(X)                                               \
  X(dnnl_version)                                                              \
  X(dnnl_get_effective_cpu_isa)                                                \
  X(dnnl_engine_create)                                                        \
  X(dnnl_engine_destroy)                                                       \
  X(dnnl_stream_create)                                                        \
  X(dnnl_stream_destroy)                                                       \
  X(dnnl_stream_wait)                                                          \
  X(dnnl_memory_desc_init_by_strides)                                          \
  X(dnnl_memory_desc_get_size)                                                 \
  X(dnnl_matmul_desc_init)                                                     \
  X(dnnl_primitive_attr_create)                                                \
  X(dnnl_primitive_attr_destroy)                                               \
  X(dnnl_primitive_attr_set_scratchpad_mode)                                   \
  X(dnnl_primitive_desc_create)                                                \
  X(dnnl_primitive_desc_destroy)                                               \
  X(dnnl_primitive_desc_query_md)                                              \
  X(dnnl_primitive_create)                                                     \
  X(dnnl_primitive_destroy)                                                    \
  X(dnnl_primitive_execute)                                                    \
  X(dnnl_memory_create)                                                        \
  X(dnnl_memory_destroy)                                                       \
  X(dnnl_memory_set_data_handle)
#define LRUC_ONEDNN_POINTER(name) decltype(&::name) name = nullptr;
  LRUC_ONEDNN_FUNCTIONS(LRUC_ONEDNN_POINTER)
#undef LRUC_ONEDNN_POINTER
  /// OpenMP's, where oneDNN runs on it (else null).
  void (*ompSetNumThreads)(int) = nullptr;
  /// Why bfloat16 products cannot run here ("" when they can).
  std::string whyNot;
};

const OneDnn &oneDnn() {
  static const OneDnn api = [] {
    OneDnn d;
    void *library = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      d.whyNot = std::string("oneDNN is not installed (") + dlerror() +
                 "; on Debian: apt-get install libdnnl2)";
      return d;
    }
    std::string missing;
#define LRUC_ONEDNN_LOOKUP(name)                                               \
  d.name = reinterpret_cast<decltype(&::name)>(dlsym(library, #name));         \
  if (!d.name)                                                                 \
    missing += std::string(missing.empty() ? "" : ", ") + #name;
    LRUC_ONEDNN_FUNCTIONS(LRUC_ONEDNN_LOOKUP)
#undef LRUC_ONEDNN_LOOKUP
    if (!missing.empty()) {
      d.whyNot = "libdnnl.so.2 lacks " + missing + " (lruc needs oneDNN 2.x)";
      return d;
    }
    const dnnl_version_t *version = d.dnnl_version();
    if (version->cpu_runtime == DNNL_RUNTIME_OMP) {
      void *omp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
      if (omp)
        d.ompSetNumThreads =
            reinterpret_cast<void (*)(int)>(dlsym(omp, "omp_set_num_threads"));
      if (!d.ompSetNumThreads) {
        d.whyNot = "oneDNN runs on an OpenMP other than GNU's libgomp";
        return d;
      }
    } else if (version->cpu_runtime != DNNL_RUNTIME_SEQ) {
      d.whyNot = "oneDNN was built for a threading runtime other than "
                 "OpenMP or sequential";
      return d;
    }
    const dnnl_cpu_isa_t isa = d.dnnl_get_effective_cpu_isa();
    if ((isa & dnnl_cpu_isa_avx512_core_bf16) != dnnl_cpu_isa_avx512_core_bf16)
      d.whyNot = "this CPU has neither AMX nor AVX512-BF16 (oneDNN " +
                 std::to_string(version->major) + "." +
                 std::to_string(version->minor) + ")";
    return d;
  }();
  return api;
}

/// Memory at a 64-byte boundary, grown as needed and reused.
class AlignedBuffer {
public:
  void *get(size_t bytes) {
    if (bytes > capacity_) {
      storage_.reset(new unsigned char[bytes + kAlign]);
      capacity_ = bytes;
    }
    auto address = reinterpret_cast<uintptr_t>(storage_.get());
    return storage_.get() + (kAlign - address % kAlign) % kAlign;
  }

private:
  static constexpr size_t kAlign = 64;
  std::unique_ptr<unsigned char[]> storage_;
  size_t capacity_ = 0;
};

/// x[rows, cols] at row stride ld → y[rows, cols] dense, each element
/// rounded to the nearest bfloat16 (ties to even; a NaN stays a NaN).
void roundToBf16(const float *x, int64_t rows, int64_t cols, int64_t ld,
                 uint16_t *y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *in = x + r * ld;
    uint16_t *out = y + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      uint32_t bits;
      std::memcpy(&bits, in + c, sizeof bits);
      const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
      const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
      out[c] = uint16_t(nan ? (bits >> 16) | 0x40u : rounded);
    }
  }
}

/// One shape's primitive on one thread, and the memory objects it is
/// executed with (their data pointers set on each call).
struct Product {
  bool transA, transB;
  int64_t rows, cols, k, ldc;
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_t src = nullptr, weights = nullptr, dst = nullptr,
                scratchpad = nullptr;
  size_t scratchpadBytes = 0;

  bool is(bool ta, bool tb, int64_t m, int64_t n, int64_t kk,
          int64_t ld) const {
    return transA == ta && transB == tb && rows == m && cols == n && k == kk &&
           ldc == ld;
  }
};

/// What a thread keeps between products: its engine and stream, its
/// primitives, and the bfloat16 copies of the operands.
class ThreadProducts {
public:
  ThreadProducts() = default;
  ThreadProducts(const ThreadProducts &) = delete;
  ThreadProducts &operator=(const ThreadProducts &) = delete;
  ~ThreadProducts() {
    clear();
    if (stream_)
      oneDnn().dnnl_stream_destroy(stream_);
    if (engine_)
      oneDnn().dnnl_engine_destroy(engine_);
  }

  bool multiply(bool transA, bool transB, int64_t rows, int64_t cols, int64_t k,
                const float *a, int64_t lda, const float *b, int64_t ldb,
                float *c, int64_t ldc) {
    const OneDnn &d = oneDnn();
    if (!engine_) {
      if (d.ompSetNumThreads)
        d.ompSetNumThreads(1);
      if (d.dnnl_engine_create(&engine_, dnnl_cpu, 0) != dnnl_success)
        return false;
      if (d.dnnl_stream_create(&stream_, engine_, dnnl_stream_default_flags) !=
          dnnl_success)
        return false;
    }
    Product *product = find(transA, transB, rows, cols, k, ldc);
    if (!product)
      return false;
    auto *a16 = static_cast<uint16_t *>(
        aCopy_.get(size_t(rows * k) * sizeof(uint16_t)));
    auto *b16 = static_cast<uint16_t *>(
        bCopy_.get(size_t(k * cols) * sizeof(uint16_t)));
    if (transA)
      roundToBf16(a, k, rows, lda, a16);
    else
      roundToBf16(a, rows, k, lda, a16);
    if (transB)
      roundToBf16(b, cols, k, ldb, b16);
    else
      roundToBf16(b, k, cols, ldb, b16);
    if (d.dnnl_memory_set_data_handle(product->src, a16) != dnnl_success ||
        d.dnnl_memory_set_data_handle(product->weights, b16) != dnnl_success ||
        d.dnnl_memory_set_data_handle(product->dst, c) != dnnl_success)
      return false;
    if (product->scratchpad &&
        d.dnnl_memory_set_data_handle(
            product->scratchpad, scratchpad_.get(product->scratchpadBytes)) !=
            dnnl_success)
      return false;
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, product->src},
                                    {DNNL_ARG_WEIGHTS, product->weights},
                                    {DNNL_ARG_DST, product->dst},
                                    {DNNL_ARG_SCRATCHPAD, product->scratchpad}};
    const int argCount = product->scratchpad ? 4 : 3;
    return d.dnnl_primitive_execute(product->primitive, stream_, argCount,
                                    args) == dnnl_success &&
           d.dnnl_stream_wait(stream_) == dnnl_success;
  }

private:
  // A thread meets a handful of shapes a model (each product's rows per
  // part); past this many, the cache starts again.
  static constexpr size_t kMostProducts = 64;

  Product *find(bool transA, bool transB, int64_t rows, int64_t cols, int64_t k,
                int64_t ldc) {
    for (Product &p : products_)
      if (p.is(transA, transB, rows, cols, k, ldc))
        return &p;
    if (products_.size() == kMostProducts)
      clear();
    Product p{transA, transB, rows, cols, k, ldc};
    if (!create(p)) {
      destroy(p);
      return nullptr;
    }
    products_.push_back(p);
    return &products_.back();
  }

  /// The primitive for p's shape: the bfloat16 copies are dense, op(A) as
  /// [rows, k] (transA: [k, rows]) and op(B) as [k, cols] (transB: [cols,
  /// k]); C at row stride ldc.
  bool create(Product &p) {
    const OneDnn &d = oneDnn();
    dnnl_memory_desc_t srcDesc, weightsDesc, dstDesc;
    const dnnl_dims_t srcDims = {p.rows, p.k}, weightsDims = {p.k, p.cols},
                      dstDims = {p.rows, p.cols};
    const dnnl_dims_t srcStrides = {p.transA ? 1 : p.k, p.transA ? p.rows : 1},
                      weightsStrides = {p.transB ? 1 : p.cols,
                                        p.transB ? p.k : 1},
                      dstStrides = {p.ldc, 1};
    if (d.dnnl_memory_desc_init_by_strides(&srcDesc, 2, srcDims, dnnl_bf16,
                                           srcStrides) != dnnl_success ||
        d.dnnl_memory_desc_init_by_strides(&weightsDesc, 2, weightsDims,
                                           dnnl_bf16,
                                           weightsStrides) != dnnl_success ||
        d.dnnl_memory_desc_init_by_strides(&dstDesc, 2, dstDims, dnnl_f32,
                                           dstStrides) != dnnl_success)
      return false;
    dnnl_matmul_desc_t desc;
    if (d.dnnl_matmul_desc_init(&desc, &srcDesc, &weightsDesc, nullptr,
                                &dstDesc) != dnnl_success)
      return false;
    dnnl_primitive_attr_t attr = nullptr;
    dnnl_primitive_desc_t pd = nullptr;
    bool made = d.dnnl_primitive_attr_create(&attr) == dnnl_success &&
                d.dnnl_primitive_attr_set_scratchpad_mode(
                    attr, dnnl_scratchpad_mode_user) == dnnl_success &&
                d.dnnl_primitive_desc_create(&pd, &desc, attr, engine_,
                                             nullptr) == dnnl_success;
    if (made) {
      const dnnl_memory_desc_t *scratchDesc =
          d.dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
      p.scratchpadBytes =
          scratchDesc ? d.dnnl_memory_desc_get_size(scratchDesc) : 0;
      made = d.dnnl_primitive_create(&p.primitive, pd) == dnnl_success &&
             d.dnnl_memory_create(&p.src, &srcDesc, engine_,
                                  DNNL_MEMORY_NONE) == dnnl_success &&
             d.dnnl_memory_create(&p.weights, &weightsDesc, engine_,
                                  DNNL_MEMORY_NONE) == dnnl_success &&
             d.dnnl_memory_create(&p.dst, &dstDesc, engine_,
                                  DNNL_MEMORY_NONE) == dnnl_success &&
             (p.scratchpadBytes == 0 ||
              d.dnnl_memory_create(&p.scratchpad, scratchDesc, engine_,
                                   DNNL_MEMORY_NONE) == dnnl_success);
    }
    if (pd)
      d.dnnl_primitive_desc_destroy(pd);
    if (attr)
      d.dnnl_primitive_attr_destroy(attr);
    return made;
  }

  static void destroy(Product &p) {
    const OneDnn &d = oneDnn();
    for (dnnl_memory_t m : {p.src, p.weights, p.dst, p.scratchpad})
      if (m)
        d.dnnl_memory_destroy(m);
    if (p.primitive)
      d.dnnl_primitive_destroy(p.primitive);
  }

  void clear() {
    for (Product &p : products_)
      destroy(p);
    products_.clear();
  }

  dnnl_engine_t engine_ = nullptr;
  dnnl_stream_t stream_ = nullptr;
  std::vector<Product> products_;
  AlignedBuffer aCopy_, bCopy_, scratchpad_;
};

} // namespace

bool bf16Product(bool transA, bool transB, int64_t rows, int64_t cols,
                 int64_t k, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float *c, int64_t ldc) {
  thread_local ThreadProducts products;
  return products.multiply(transA, transB, rows, cols, k, a, lda, b, ldb, c,
                           ldc);
}

static std::string whyNoBf16Products() { return oneDnn().whyNot; }
#else
bool bf16Product(bool, bool, int64_t, int64_t, int64_t, const float *, int64_t,
                 const float *, int64_t, float *, int64_t) {
  return false;
}

static std::string whyNoBf16Products() {
  return "this build of lruc has no oneDNN (its headers, libdnnl-dev, were "
         "not found when runtime/cpu was built)";
}
#endif

} // namespace detail

bool setMatmulPrecision(MatmulPrecision how, std::string &error) {
  if (how == MatmulPrecision::Bf16) {
    std::string whyNot = detail::whyNoBf16Products();
    if (!whyNot.empty()) {
      error = "bfloat16 matrix products are unavailable: " + whyNot;
      return false;
    }
  }
  detail::precision.store(how, std::memory_order_relaxed);
  return true;
}

MatmulPrecision matmulPrecision() {
  return detail::precision.load(std::memory_order_relaxed);
}

} // namespace lruc::cpu

extern "C" __attribute__((visibility("default"))) int
lruc_cpu_set_matmul(int bf16, char *error, size_t errorSize) {
  std::string message;
  if (lruc::cpu::setMatmulPrecision(bf16 ? lruc::cpu::MatmulPrecision::Bf16
                                         : lruc::cpu::MatmulPrecision::Fp32,
                                    message))
    return 0;
  if (error && errorSize) {
    size_t n = std::min(message.size(), errorSize - 1);
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
  }
  return 1;
}
