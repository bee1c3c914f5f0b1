//===- Device.h - A CUDA device for model libraries -------------*- C++ -*-===//
//
// What runs a model library's GPU schedule (lruc_gpu.h) on a real device:
// the CUDA driver and cuBLAS opened with dlopen (nothing links against
// CUDA), the library's kernels compiled by NVRTC through the PTX cache and
// loaded as one module, and the schedule's lruc_gpu_ops on them. Everything
// runs on one stream of the device's own, in order: launches, GEMMs and
// copies to the device are queued, and nothing waits for the device but a
// copy to pageable host memory, `synchronize` and `wait` on an event.
// Copies to page-locked host memory (allocateHost) are queued too
// (copyAsync), so a caller can keep the device busy while the host works.
//
// Run on an NVIDIA H200 (docs/performance.md); the normal test suite runs
// it on a simulated driver and cuBLAS instead (tests/cuda).
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CUDA_DEVICE_H
#define LRUC_CUDA_DEVICE_H

#include "lruc_gpu.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace lruc::cuda {

/// A captured CUDA graph, ready to launch (Device::endCapture).
struct Graph;

/// The arithmetic of matrix products of fp32 operands: fp32, the CPU
/// library's; tf32, on tensor cores: inputs rounded to 10 bits of
/// mantissa, sums in fp32 (what JAX's default precision and PyTorch's
/// allow_tf32 give), several times faster; or bf16: inputs rounded to
/// bfloat16's 8 bits of mantissa, sums in fp32
/// (CUBLAS_COMPUTE_32F_FAST_16BF; what JAX's "bfloat16" precision and
/// PyTorch's bfloat16 autocast give), twice tf32's tensor-core rate.
/// Whatever this says, products of bfloat16 operands (bfloat16
/// activations) are bfloat16 products with fp32 sums, and those of 2 to
/// 64 rows in the few-row kernel (useFewRowKernel) are fp32.
enum class Matmul { fp32, tf32, bf16 };

class Device {
public:
  /// Opens device `ordinal`: null with the reason in `error` when there is
  /// no CUDA driver ($LRUC_CUDA_DRIVER, else libcuda.so.1), no such device,
  /// or no cuBLAS ($LRUC_CUBLAS, else libcublas.so.13, .12, libcublas.so).
  static std::unique_ptr<Device> open(int ordinal, std::string &error);
  ~Device();
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  /// The arithmetic of the GEMMs from now on (fp32 when opened); false
  /// with cuBLAS's status.
  bool setMatmul(Matmul precision, std::string &error);

  /// The device's name and its architecture ("sm_90").
  const std::string &name() const { return name_; }
  const std::string &arch() const { return arch_; }

  /// Compiles `source` (a library's lruc_cuda_source()) for this device
  /// through the PTX cache (machine code for the device there, when a kit
  /// brought it, spares the driver's compile), loads it and finds the
  /// kernels `names` (the
  /// library's lruc_gpu_model::kernels, whose indices the schedule
  /// launches). False with NVRTC's or the driver's message in `error`.
  bool loadKernels(const std::string &source, const char *const *names,
                   int count, std::string &error);

  /// Where loadKernels found the kernels: "machine code from the cache" (a
  /// kit's, findMachineCode) or "PTX, compiled by the driver".
  const std::string &kernelsFrom() const { return kernelsFrom_; }
  /// What loadKernels could do but not as it should, for the caller to
  /// show: the PTX cache not written, PTX for an older architecture than
  /// the device's (compileModelPtx's warning); empty when nothing.
  const std::string &kernelWarning() const { return kernelWarning_; }

  /// The schedule's callbacks on this device (after loadKernels).
  const lruc_gpu_ops *ops() const { return &ops_; }

  /// Device memory; null with the reason in `error`.
  void *allocate(size_t bytes, std::string &error);
  void release(void *memory);
  /// Page-locked host memory, what copyAsync's host end must be; null with
  /// the reason in `error`.
  void *allocateHost(size_t bytes, std::string &error);
  void releaseHost(void *memory);
  /// `bytes` from `src` to `dst` (LRUC_COPY_* `kind`), queued on the
  /// stream without waiting for it. A host end must be page-locked memory
  /// (allocateHost) that is left alone until an event recorded after the
  /// copy has passed (`wait`).
  bool copyAsync(void *dst, const void *src, size_t bytes, int kind,
                 std::string &error);
  /// Events on the stream: `record` marks what is queued so far, `wait`
  /// returns once the device has done it (an event never recorded has
  /// passed).
  void *createEvent(std::string &error);
  void destroyEvent(void *event);
  bool record(void *event, std::string &error);
  bool wait(void *event, std::string &error);
  /// Waits for everything queued; false with the driver's message.
  bool synchronize(std::string &error);

  /// CUDA graphs: between `beginCapture` and `endCapture` what the stream
  /// is given (launches, GEMMs, copies) is recorded instead of run, and
  /// `endCapture` returns it as a graph that `launchGraph` queues again
  /// and again, in one call. Nothing may wait for the device meanwhile: a
  /// copy to pageable host memory fails. A copy from pageable host memory
  /// (a schedule's constants) is staged in page-locked memory that lives
  /// with the graph, up to `stagingBytes` in all: the graph copies the
  /// values it had when captured. Null with the driver's message when the
  /// capture failed.
  bool beginCapture(size_t stagingBytes, std::string &error);
  Graph *endCapture(std::string &error);
  bool launchGraph(Graph *graph, std::string &error);
  void destroyGraph(Graph *graph);

  /// Whether GEMMs x wᵀ of 2 to 64 rows (step mode's, a row a stream) run
  /// in the device prelude's kernel for them (lruc_few_rows_nt, in every
  /// model's module) instead of cuBLAS: on by default, unless
  /// $LRUC_FEW_ROW_KERNEL is 0; for comparing the two. Effective once
  /// loadKernels has found the kernel (a library built before it has none:
  /// cuBLAS then).
  void useFewRowKernel(bool on) { fewRowsOn_ = on; }
  bool fewRowKernel() const { return fewRows_ && fewRowsOn_; }

  /// From now on (or no longer), every launch and GEMM is timed by two
  /// events on its stream: for benchmarks, not for training (an event pair
  /// costs a few microseconds a launch).
  void timeKernels(bool on) { timing_ = on; }
  /// cuBLAS's share of the timed calls.
  struct GemmTimes {
    double milliseconds = 0;
    double flops = 0; ///< 2 m n k a product
    int64_t calls = 0;
  };
  /// Per kernel index, the milliseconds of its timed launches since the
  /// last call, and how many, and the GEMMs' together; waits for them.
  /// False with the driver's message if one could not be timed.
  bool kernelTimes(std::vector<double> &milliseconds,
                   std::vector<int64_t> &launches, GemmTimes &gemms,
                   std::string &error);

  struct Api; ///< the driver and cuBLAS entry points (Device.cpp)

private:
  Device() = default;
  static int launch(void *context, int32_t kernel, int64_t blocks,
                    int32_t threads, int32_t blockPerOutput, void **args);
  static int gemm(void *context, int32_t transA, int32_t transB, int64_t m,
                  int64_t n, int64_t k, int32_t abType, const void *a,
                  int64_t lda, int64_t strideA, const void *b, int64_t ldb,
                  int64_t strideB, int32_t cType, void *c, int64_t ldc,
                  int64_t strideC, int64_t count);
  static int copy(void *context, void *dst, const void *src, size_t bytes,
                  int32_t kind);

  const Api *api_ = nullptr;
  int device_ = 0;
  void *context_ = nullptr; ///< CUcontext (the primary context)
  void *stream_ = nullptr;  ///< CUstream: everything runs on it
  Graph *capturing_ = nullptr; ///< the graph being captured, if any
  void *module_ = nullptr;  ///< CUmodule
  void *cublas_ = nullptr;  ///< cublasHandle_t
  std::vector<void *> kernels_; ///< CUfunction by schedule index
  void *fewRows_ = nullptr;     ///< CUfunction lruc_few_rows_nt, if found
  bool fewRowsOn_ = true;
  Matmul matmul_ = Matmul::fp32;
  /// Queues x wᵀ on lruc_few_rows_nt (gemm's arguments with transA = 0,
  /// transB = 1; gemm times it).
  int fewRowProducts(int64_t m, int64_t n, int64_t k, const float *a,
                     int64_t lda, int64_t strideA, const float *b, int64_t ldb,
                     int64_t strideB, float *c, int64_t ldc, int64_t strideC,
                     int64_t count);
  struct TimedLaunch {
    int32_t kernel; ///< kGemm for a GEMM
    double flops;   ///< a GEMM's
    void *start, *end; ///< CUevent
  };
  static constexpr int32_t kGemm = -1;
  /// The start event of a timed launch (when timing), then its end.
  int startTimed(int32_t kernel, double flops);
  int endTimed();
  bool timing_ = false;
  std::vector<TimedLaunch> timed_; ///< not yet read by kernelTimes
  std::string name_, arch_, kernelsFrom_, kernelWarning_;
  lruc_gpu_ops ops_{};
};

} // namespace lruc::cuda

#endif // LRUC_CUDA_DEVICE_H
