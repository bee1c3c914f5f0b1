//===- Device.cpp - The CUDA driver and cuBLAS, opened at run time --------===//

#include "lruc/cuda/Device.h"

#include "Dynamic.h"
#include "lruc/cuda/PtxCache.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace lruc::cuda {

// The parts of cuda.h and cublas_api.h used here, declared by hand: the
// headers may be absent where lruc is built. Handles are opaque pointers,
// device pointers 64-bit integers (unified addressing: a device pointer is
// also what the schedule passes around as void *).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using cublasStatus = int;
constexpr int kCuDeviceAttributeComputeCapabilityMajor = 75;
constexpr int kCuDeviceAttributeComputeCapabilityMinor = 76;
constexpr int kCublasOpN = 0, kCublasOpT = 1;
// library_types.h's cudaDataType and cublas_api.h's compute type and
// algorithm, for cublasGemmStridedBatchedEx.
constexpr int kCudaR16BF = 14, kCudaR32F = 0;
constexpr int kCublasCompute32F = 68, kCublasCompute32FFast16BF = 75,
              kCublasGemmDefault = -1;
constexpr unsigned kCuStreamNonBlocking = 1;
constexpr int kCuStreamCaptureModeThreadLocal = 1;
constexpr CUresult kCuErrorStreamCaptureUnsupported = 900;
// lruc_few_rows_nt (runtime/cuda/device/lruc_device.cuh): the most rows
// (kFewRowsMax), a block's columns (kFewRowsColumns) and threads
// (kFewRowsWarps warps).
constexpr int64_t kFewRowsMax = 64, kFewRowsColumns = 8;
constexpr unsigned kFewRowsThreads = 8 * 32;

struct Device::Api {
  CUresult (*init)(unsigned);
  CUresult (*getErrorString)(CUresult, const char **);
  CUresult (*deviceGetCount)(int *);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceGetName)(char *, int, CUdevice);
  CUresult (*deviceGetAttribute)(int *, int, CUdevice);
  CUresult (*primaryCtxRetain)(void **, CUdevice);
  CUresult (*primaryCtxRelease)(CUdevice);
  CUresult (*ctxSetCurrent)(void *);
  CUresult (*moduleLoadData)(void **, const void *);
  CUresult (*moduleUnload)(void *);
  CUresult (*moduleGetFunction)(void **, void *, const char *);
  CUresult (*launchKernel)(void *, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, void *, void **,
                           void **);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memHostAlloc)(void **, size_t, unsigned);
  CUresult (*memFreeHost)(void *);
  CUresult (*memcpyHtoDAsync)(CUdeviceptr, const void *, size_t, void *);
  CUresult (*memcpyDtoHAsync)(void *, CUdeviceptr, size_t, void *);
  CUresult (*memcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, void *);
  CUresult (*streamCreate)(void **, unsigned);
  CUresult (*streamDestroy)(void *);
  CUresult (*streamSynchronize)(void *);
  CUresult (*streamBeginCapture)(void *, int);
  CUresult (*streamEndCapture)(void *, void **);
  CUresult (*graphInstantiate)(void **, void *, unsigned long long);
  CUresult (*graphLaunch)(void *, void *);
  CUresult (*graphDestroy)(void *);
  CUresult (*graphExecDestroy)(void *);
  CUresult (*eventCreate)(void **, unsigned);
  CUresult (*eventRecord)(void *, void *);
  CUresult (*eventSynchronize)(void *);
  CUresult (*eventElapsedTime)(float *, void *, void *);
  CUresult (*eventDestroy)(void *);
  cublasStatus (*cublasCreate)(void **);
  cublasStatus (*cublasDestroy)(void *);
  cublasStatus (*cublasSetStream)(void *, void *);
  cublasStatus (*cublasSetMathMode)(void *, int);
  cublasStatus (*sgemm)(void *, int, int, int, int, int, const float *,
                        const float *, int, const float *, int, const float *,
                        float *, int);
  cublasStatus (*sgemmStridedBatched)(void *, int, int, int, int, int,
                                      const float *, const float *, int,
                                      long long, const float *, int, long long,
                                      const float *, float *, int, long long,
                                      int);
  /// cublasGemmStridedBatchedEx: bfloat16 operands (lruc_gpu.h's
  /// LRUC_GPU_BF16), and fp32 ones in bfloat16 products (Matmul::bf16).
  cublasStatus (*gemmStridedBatchedEx)(void *, int, int, int, int, int,
                                       const void *, const void *, int, int,
                                       long long, const void *, int, int,
                                       long long, const void *, void *, int,
                                       int, long long, int, int, int);
};

namespace {

/// The driver and cuBLAS, opened once per process; null with the reason.
const Device::Api *openApi(std::string &failure) {
  static std::once_flag once;
  static std::unique_ptr<Device::Api> api;
  static std::string reason;
  std::call_once(once, [] {
    void *driver = detail::openFirst("LRUC_CUDA_DRIVER", {"libcuda.so.1"});
    if (!driver) {
      reason = "no CUDA driver (tried $LRUC_CUDA_DRIVER and libcuda.so.1): "
               "this machine has no NVIDIA GPU driver";
      return;
    }
    void *cublas = detail::openFirst(
        "LRUC_CUBLAS",
        {"libcublas.so.13", "libcublas.so.12", "libcublas.so"});
    if (!cublas) {
      reason = "cannot open cuBLAS (tried $LRUC_CUBLAS, libcublas.so.13, "
               ".12, libcublas.so and /usr/local/cuda/lib64)";
      return;
    }
    auto table = std::make_unique<Device::Api>();
    detail::Binder bind(driver, "the CUDA driver");
    bind(table->init, "cuInit");
    bind(table->getErrorString, "cuGetErrorString");
    bind(table->deviceGetCount, "cuDeviceGetCount");
    bind(table->deviceGet, "cuDeviceGet");
    bind(table->deviceGetName, "cuDeviceGetName");
    bind(table->deviceGetAttribute, "cuDeviceGetAttribute");
    bind(table->primaryCtxRetain, "cuDevicePrimaryCtxRetain");
    bind(table->primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    bind(table->ctxSetCurrent, "cuCtxSetCurrent");
    bind(table->moduleLoadData, "cuModuleLoadData");
    bind(table->moduleUnload, "cuModuleUnload");
    bind(table->moduleGetFunction, "cuModuleGetFunction");
    bind(table->launchKernel, "cuLaunchKernel");
    bind(table->memAlloc, "cuMemAlloc_v2");
    bind(table->memFree, "cuMemFree_v2");
    bind(table->memHostAlloc, "cuMemHostAlloc");
    bind(table->memFreeHost, "cuMemFreeHost");
    bind(table->memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    bind(table->memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    bind(table->memcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    bind(table->streamCreate, "cuStreamCreate");
    bind(table->streamDestroy, "cuStreamDestroy_v2");
    bind(table->streamSynchronize, "cuStreamSynchronize");
    bind(table->streamBeginCapture, "cuStreamBeginCapture_v2");
    bind(table->streamEndCapture, "cuStreamEndCapture");
    bind(table->graphInstantiate, "cuGraphInstantiateWithFlags");
    bind(table->graphLaunch, "cuGraphLaunch");
    bind(table->graphDestroy, "cuGraphDestroy");
    bind(table->graphExecDestroy, "cuGraphExecDestroy");
    bind(table->eventCreate, "cuEventCreate");
    bind(table->eventRecord, "cuEventRecord");
    bind(table->eventSynchronize, "cuEventSynchronize");
    bind(table->eventElapsedTime, "cuEventElapsedTime");
    bind(table->eventDestroy, "cuEventDestroy_v2");
    detail::Binder bindBlas(cublas, "cuBLAS");
    bindBlas(table->cublasCreate, "cublasCreate_v2");
    bindBlas(table->cublasDestroy, "cublasDestroy_v2");
    bindBlas(table->cublasSetStream, "cublasSetStream_v2");
    bindBlas(table->cublasSetMathMode, "cublasSetMathMode");
    bindBlas(table->sgemm, "cublasSgemm_v2");
    bindBlas(table->sgemmStridedBatched, "cublasSgemmStridedBatched");
    bindBlas(table->gemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
    if (!bind.complete())
      reason = bind.failure();
    else if (!bindBlas.complete())
      reason = bindBlas.failure();
    else
      api = std::move(table);
  });
  failure = reason;
  return api.get();
}

/// `what` failed: the driver's name for `result`.
std::string driverError(const Device::Api &api, CUresult result,
                        const std::string &what) {
  constexpr CUresult kStubLibrary = 34; // CUDA_ERROR_STUB_LIBRARY
  const char *text = nullptr;
  if (result == kStubLibrary)
    text = "this libcuda is the CUDA toolkit's stub (lib64/stubs), not an "
           "NVIDIA driver: take stubs/ off the loader's path";
  else if (api.getErrorString(result, &text) != 0 || !text)
    text = "unknown error";
  return what + " failed: " + text + " (" + std::to_string(result) + ")";
}

} // namespace

std::unique_ptr<Device> Device::open(int ordinal, std::string &error) {
  const Api *api = openApi(error);
  if (!api)
    return nullptr;
  if (CUresult r = api->init(0)) {
    error = driverError(*api, r, "cuInit");
    return nullptr;
  }
  int count = 0;
  if (CUresult r = api->deviceGetCount(&count)) {
    error = driverError(*api, r, "cuDeviceGetCount");
    return nullptr;
  }
  if (ordinal < 0 || ordinal >= count) {
    error = "no CUDA device " + std::to_string(ordinal) + " (" +
            std::to_string(count) + " found)";
    return nullptr;
  }
  std::unique_ptr<Device> device(new Device);
  device->api_ = api;
  CUresult r = api->deviceGet(&device->device_, ordinal);
  char name[256] = "";
  int major = 0, minor = 0;
  if (!r)
    r = api->deviceGetName(name, sizeof name, device->device_);
  if (!r)
    r = api->deviceGetAttribute(
        &major, kCuDeviceAttributeComputeCapabilityMajor, device->device_);
  if (!r)
    r = api->deviceGetAttribute(
        &minor, kCuDeviceAttributeComputeCapabilityMinor, device->device_);
  if (!r)
    r = api->primaryCtxRetain(&device->context_, device->device_);
  if (r) {
    error = driverError(*api, r, "opening CUDA device " +
                                     std::to_string(ordinal));
    device->context_ = nullptr;
    return nullptr;
  }
  if ((r = api->ctxSetCurrent(device->context_))) {
    error = driverError(*api, r, "cuCtxSetCurrent");
    return nullptr;
  }
  // A stream of lruc's own (not the legacy default stream, which would
  // wait for and hold up every other stream of the context).
  if ((r = api->streamCreate(&device->stream_, kCuStreamNonBlocking))) {
    error = driverError(*api, r, "cuStreamCreate");
    device->stream_ = nullptr;
    return nullptr;
  }
  if (int status = api->cublasCreate(&device->cublas_)) {
    error = "cublasCreate failed (" + std::to_string(status) + ")";
    device->cublas_ = nullptr;
    return nullptr;
  }
  if (int status = api->cublasSetStream(device->cublas_, device->stream_)) {
    error = "cublasSetStream failed (" + std::to_string(status) + ")";
    return nullptr;
  }
  device->name_ = name;
  device->arch_ = "sm_" + std::to_string(major * 10 + minor);
  if (const char *env = std::getenv("LRUC_FEW_ROW_KERNEL"))
    device->fewRowsOn_ = std::strcmp(env, "0") != 0;
  // Each call reads its status block back itself (DeferredStatus.h defers).
  device->ops_ = {device.get(), &Device::launch, &Device::gemm, &Device::copy,
                  /*defer_status=*/nullptr};
  return device;
}

bool Device::setMatmul(Matmul precision, std::string &error) {
  // cublasMath_t: CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH. bf16 is
  // the compute type of each GEMM (gemm), in the default math mode.
  constexpr int kDefaultMath = 0, kTf32TensorOpMath = 3;
  if (int status = api_->cublasSetMathMode(
          cublas_, precision == Matmul::tf32 ? kTf32TensorOpMath
                                             : kDefaultMath)) {
    error = "cublasSetMathMode failed (" + std::to_string(status) + ")";
    return false;
  }
  matmul_ = precision;
  return true;
}

Device::~Device() {
  if (!api_)
    return;
  if (capturing_) { // a capture left open by an error: end and drop it
    std::string ignored;
    destroyGraph(endCapture(ignored));
  }
  for (const TimedLaunch &timed : timed_) {
    api_->eventDestroy(timed.start);
    api_->eventDestroy(timed.end);
  }
  if (cublas_)
    api_->cublasDestroy(cublas_);
  if (stream_) {
    api_->streamSynchronize(stream_);
    api_->streamDestroy(stream_);
  }
  if (module_)
    api_->moduleUnload(module_);
  if (context_)
    api_->primaryCtxRelease(device_);
}

bool Device::loadKernels(const std::string &source, const char *const *names,
                         int count, std::string &error) {
  std::string ptx, warning;
  PtxCacheOutcome outcome;
  if (!compileModelPtx(source, arch_, ptx, outcome, warning, error))
    return false;
  kernelWarning_ = warning;
  // Machine code a kit brought for this PTX, where the driver takes it (a
  // driver older than the ptxas that made it does not): no compile here.
  std::string code;
  kernelsFrom_ = "PTX, compiled by the driver";
  if (findMachineCode(defaultPtxCacheDirectory(), ptx, arch_, code)) {
    if (api_->moduleLoadData(&module_, code.data()) == 0)
      kernelsFrom_ = "machine code from the cache";
    else
      module_ = nullptr;
  }
  if (!module_) {
    if (CUresult r = api_->moduleLoadData(&module_, ptx.c_str())) {
      module_ = nullptr;
      error = driverError(*api_, r, "loading the model's kernels (" + arch_ +
                                        ")");
      return false;
    }
  }
  kernels_.assign(count, nullptr);
  for (int k = 0; k < count; ++k)
    if (CUresult r = api_->moduleGetFunction(&kernels_[k], module_, names[k])) {
      error = driverError(*api_, r, std::string("finding kernel ") + names[k]);
      return false;
    }
  // The device prelude's kernel; a module without it leaves every product
  // to cuBLAS.
  if (api_->moduleGetFunction(&fewRows_, module_, "lruc_few_rows_nt"))
    fewRows_ = nullptr;
  return true;
}

void *Device::allocate(size_t bytes, std::string &error) {
  CUdeviceptr memory = 0;
  if (CUresult r = api_->memAlloc(&memory, bytes ? bytes : 1)) {
    error = driverError(*api_, r,
                        "allocating " + std::to_string(bytes) + " bytes");
    return nullptr;
  }
  return reinterpret_cast<void *>(memory);
}

void Device::release(void *memory) {
  if (memory)
    api_->memFree(reinterpret_cast<CUdeviceptr>(memory));
}

void *Device::allocateHost(size_t bytes, std::string &error) {
  void *memory = nullptr;
  if (CUresult r = api_->memHostAlloc(&memory, bytes ? bytes : 1, 0)) {
    error = driverError(*api_, r,
                        "allocating " + std::to_string(bytes) +
                            " bytes of page-locked host memory");
    return nullptr;
  }
  return memory;
}

void Device::releaseHost(void *memory) {
  if (memory)
    api_->memFreeHost(memory);
}

/// A copy queued on `stream` (cuMemcpy*Async); the driver's status.
static CUresult queueCopy(const Device::Api &api, void *stream, void *dst,
                          const void *src, size_t bytes, int kind) {
  auto d = reinterpret_cast<CUdeviceptr>(dst);
  auto s = reinterpret_cast<CUdeviceptr>(src);
  switch (kind) {
  case LRUC_COPY_HOST_TO_DEVICE:
    return api.memcpyHtoDAsync(d, src, bytes, stream);
  case LRUC_COPY_DEVICE_TO_HOST:
    return api.memcpyDtoHAsync(dst, s, bytes, stream);
  case LRUC_COPY_DEVICE_TO_DEVICE:
    return api.memcpyDtoDAsync(d, s, bytes, stream);
  default:
    return 1; // CUDA_ERROR_INVALID_VALUE
  }
}

bool Device::copyAsync(void *dst, const void *src, size_t bytes, int kind,
                       std::string &error) {
  if (bytes == 0)
    return true;
  if (CUresult r = queueCopy(*api_, stream_, dst, src, bytes, kind)) {
    error = driverError(*api_, r, "queueing a copy");
    return false;
  }
  return true;
}

void *Device::createEvent(std::string &error) {
  void *event = nullptr;
  if (CUresult r = api_->eventCreate(&event, 0)) {
    error = driverError(*api_, r, "cuEventCreate");
    return nullptr;
  }
  return event;
}

void Device::destroyEvent(void *event) {
  if (event)
    api_->eventDestroy(event);
}

bool Device::record(void *event, std::string &error) {
  if (CUresult r = api_->eventRecord(event, stream_)) {
    error = driverError(*api_, r, "cuEventRecord");
    return false;
  }
  return true;
}

bool Device::wait(void *event, std::string &error) {
  if (CUresult r = api_->eventSynchronize(event)) {
    error = driverError(*api_, r, "running the kernels");
    return false;
  }
  return true;
}

struct Graph {
  void *exec = nullptr;         ///< CUgraphExec
  char *staging = nullptr;      ///< page-locked: the captured copies' sources
  size_t stagingBytes = 0, stagingUsed = 0;
};

bool Device::beginCapture(size_t stagingBytes, std::string &error) {
  if (capturing_) {
    error = "a capture is under way already";
    return false;
  }
  auto graph = std::make_unique<Graph>();
  graph->stagingBytes = stagingBytes;
  if (stagingBytes &&
      !(graph->staging = static_cast<char *>(allocateHost(stagingBytes, error))))
    return false;
  // Thread-local mode: only this thread's unsafe calls (allocations, waits)
  // would spoil it.
  if (CUresult r = api_->streamBeginCapture(stream_,
                                            kCuStreamCaptureModeThreadLocal)) {
    releaseHost(graph->staging);
    error = driverError(*api_, r, "cuStreamBeginCapture");
    return false;
  }
  capturing_ = graph.release();
  return true;
}

Graph *Device::endCapture(std::string &error) {
  std::unique_ptr<Graph> graph(capturing_);
  capturing_ = nullptr;
  if (!graph) {
    error = "no capture under way";
    return nullptr;
  }
  void *captured = nullptr;
  CUresult r = api_->streamEndCapture(stream_, &captured);
  if (!r)
    r = api_->graphInstantiate(&graph->exec, captured, 0);
  if (captured)
    api_->graphDestroy(captured);
  if (r) {
    error = driverError(*api_, r, "capturing a CUDA graph");
    releaseHost(graph->staging);
    return nullptr;
  }
  return graph.release();
}

bool Device::launchGraph(Graph *graph, std::string &error) {
  if (CUresult r = api_->graphLaunch(graph->exec, stream_)) {
    error = driverError(*api_, r, "cuGraphLaunch");
    return false;
  }
  return true;
}

void Device::destroyGraph(Graph *graph) {
  if (!graph)
    return;
  // Queued launches of it may still read its staging memory.
  api_->streamSynchronize(stream_);
  if (graph->exec)
    api_->graphExecDestroy(graph->exec);
  releaseHost(graph->staging);
  delete graph;
}

bool Device::synchronize(std::string &error) {
  if (CUresult r = api_->streamSynchronize(stream_)) {
    error = driverError(*api_, r, "running the kernels");
    return false;
  }
  return true;
}

bool Device::kernelTimes(std::vector<double> &milliseconds,
                         std::vector<int64_t> &launches, GemmTimes &gemms,
                         std::string &error) {
  milliseconds.assign(kernels_.size(), 0.0);
  launches.assign(kernels_.size(), 0);
  gemms = GemmTimes{};
  bool ok = true;
  for (const TimedLaunch &timed : timed_) {
    float ms = 0.0f;
    CUresult r = api_->eventSynchronize(timed.end);
    if (!r)
      r = api_->eventElapsedTime(&ms, timed.start, timed.end);
    if (r && ok) {
      error = driverError(*api_, r, "timing a kernel");
      ok = false;
    }
    if (timed.kernel == kGemm) {
      gemms.milliseconds += ms;
      gemms.flops += timed.flops;
      ++gemms.calls;
    } else {
      milliseconds[size_t(timed.kernel)] += ms;
      ++launches[size_t(timed.kernel)];
    }
    api_->eventDestroy(timed.start);
    api_->eventDestroy(timed.end);
  }
  timed_.clear();
  return ok;
}

int Device::startTimed(int32_t kernel, double flops) {
  if (!timing_)
    return 0;
  TimedLaunch timed{kernel, flops, nullptr, nullptr};
  if (CUresult r = api_->eventCreate(&timed.start, 0))
    return r;
  if (CUresult r = api_->eventCreate(&timed.end, 0)) {
    api_->eventDestroy(timed.start);
    return r;
  }
  timed_.push_back(timed); // destroyed by kernelTimes or ~Device
  return api_->eventRecord(timed.start, stream_);
}

int Device::endTimed() {
  return timing_ ? api_->eventRecord(timed_.back().end, stream_) : 0;
}

int Device::launch(void *context, int32_t kernel, int64_t blocks,
                   int32_t threads, int32_t, void **args) {
  auto *self = static_cast<Device *>(context);
  if (kernel < 0 || size_t(kernel) >= self->kernels_.size() || blocks <= 0)
    return -1;
  if (int r = self->startTimed(kernel, 0))
    return r;
  // Grid-stride kernels take any grid; those with a thread per item ask for
  // far fewer blocks than the limit.
  constexpr int64_t kMaxBlocks = 2147483647;
  if (CUresult r = self->api_->launchKernel(
          self->kernels_[kernel], unsigned(std::min(blocks, kMaxBlocks)), 1,
          1, unsigned(threads), 1, 1, 0, self->stream_, args, nullptr))
    return r;
  return self->endTimed();
}

int Device::gemm(void *context, int32_t transA, int32_t transB, int64_t m,
                 int64_t n, int64_t k, int32_t abType, const void *anyA,
                 int64_t lda, int64_t strideA, const void *anyB, int64_t ldb,
                 int64_t strideB, int32_t cType, void *anyC, int64_t ldc,
                 int64_t strideC, int64_t count) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS
  // gets the operands swapped, each with its own transpose flag.
  auto *self = static_cast<Device *>(context);
  if (count < 1)
    return count == 0 ? 0 : -1;
  const bool bf16 = abType == LRUC_GPU_BF16;
  if ((abType != LRUC_GPU_F32 && !bf16) ||
      (cType != LRUC_GPU_F32 && (!bf16 || cType != LRUC_GPU_BF16)))
    return -1; // fp32 operands give fp32
  if (int r = self->startTimed(kGemm, 2.0 * double(m) * double(n) * double(k) *
                                          double(count)))
    return r;
  const int opA = transB ? kCublasOpT : kCublasOpN;
  const int opB = transA ? kCublasOpT : kCublasOpN;
  const float one = 1.0f, zero = 0.0f;
  const auto *a = static_cast<const float *>(anyA);
  const auto *b = static_cast<const float *>(anyB);
  auto *c = static_cast<float *>(anyC);
  // A few rows go to the prelude's kernel in fp32 whatever the precision:
  // step mode's products, bound by reading the weights, not by FLOPs.
  if (!bf16 && !transA && transB && m >= 2 && m <= kFewRowsMax && n > 0 &&
      k > 0 && self->fewRowKernel()) {
    if (int r = self->fewRowProducts(m, n, k, a, lda, strideA, b, ldb, strideB,
                                     c, ldc, strideC, count))
      return r;
    return self->endTimed();
  }
  if (bf16 || self->matmul_ == Matmul::bf16) {
    // cublasGemmStridedBatchedEx, fp32 sums: of bfloat16 operands
    // (CUBLAS_COMPUTE_32F), or of fp32 ones that cuBLAS rounds to bfloat16
    // (CUBLAS_COMPUTE_32F_FAST_16BF). A batch with a negative stride runs
    // product by product, as below.
    const int typeAB = bf16 ? kCudaR16BF : kCudaR32F;
    const int typeC = cType == LRUC_GPU_BF16 ? kCudaR16BF : kCudaR32F;
    const int64_t abBytes = bf16 ? 2 : 4;
    const int64_t cBytes = cType == LRUC_GPU_BF16 ? 2 : 4;
    const bool batched = strideA >= 0 && strideB >= 0 && strideC >= 0;
    for (int64_t i = 0; i < (batched ? 1 : count); ++i)
      if (int status = self->api_->gemmStridedBatchedEx(
              self->cublas_, opA, opB, int(n), int(m), int(k), &one,
              static_cast<const char *>(anyB) + i * strideB * abBytes, typeAB,
              int(ldb), strideB,
              static_cast<const char *>(anyA) + i * strideA * abBytes, typeAB,
              int(lda), strideA, &zero,
              static_cast<char *>(anyC) + i * strideC * cBytes, typeC, int(ldc),
              strideC, int(batched ? count : 1),
              bf16 ? kCublasCompute32F : kCublasCompute32FFast16BF,
              kCublasGemmDefault))
        return status;
    return self->endTimed();
  }
  // cuBLAS documents no negative strides: such a batch runs product by
  // product.
  if (count > 1 && strideA >= 0 && strideB >= 0 && strideC >= 0) {
    if (int status = self->api_->sgemmStridedBatched(
            self->cublas_, opA, opB, int(n), int(m), int(k), &one, b, int(ldb),
            strideB, a, int(lda), strideA, &zero, c, int(ldc), strideC,
            int(count)))
      return status;
  } else {
    for (int64_t i = 0; i < count; ++i)
      if (int status = self->api_->sgemm(self->cublas_, opA, opB, int(n),
                                         int(m), int(k), &one, b + i * strideB,
                                         int(ldb), a + i * strideA, int(lda),
                                         &zero, c + i * strideC, int(ldc)))
        return status;
  }
  return self->endTimed();
}

int Device::fewRowProducts(int64_t m, int64_t n, int64_t k, const float *a,
                           int64_t lda, int64_t strideA, const float *b,
                           int64_t ldb, int64_t strideB, float *c, int64_t ldc,
                           int64_t strideC, int64_t count) {
  void *args[] = {&m, &n, &k, &a, &lda, &strideA, &b, &ldb, &strideB, &c,
                  &ldc, &strideC};
  const int64_t blocks = (n + kFewRowsColumns - 1) / kFewRowsColumns * count;
  if (blocks > 2147483647)
    return -1;
  return api_->launchKernel(fewRows_, unsigned(blocks), 1, 1, kFewRowsThreads,
                            1, 1, 0, stream_, args, nullptr);
}

int Device::copy(void *context, void *dst, const void *src, size_t bytes,
                 int32_t kind) {
  // Queued on the stream. From pageable host memory the driver stages the
  // source before returning; to it, the copy is done when it returns
  // (lruc_gpu_ops.copy's contract), which the stream synchronisation makes
  // sure of for page-locked memory as well.
  auto *self = static_cast<Device *>(context);
  if (Graph *graph = self->capturing_) {
    // Captured: nothing may wait, and a pageable source is staged with the
    // graph (a copy to pageable memory would have to wait).
    if (kind == LRUC_COPY_DEVICE_TO_HOST)
      return kCuErrorStreamCaptureUnsupported;
    if (kind == LRUC_COPY_HOST_TO_DEVICE) {
      const size_t at = (graph->stagingUsed + 15) / 16 * 16;
      if (at + bytes > graph->stagingBytes)
        return kCuErrorStreamCaptureUnsupported;
      std::memcpy(graph->staging + at, src, bytes);
      graph->stagingUsed = at + bytes;
      src = graph->staging + at;
    }
    return queueCopy(*self->api_, self->stream_, dst, src, bytes, kind);
  }
  if (CUresult r = queueCopy(*self->api_, self->stream_, dst, src, bytes, kind))
    return r;
  return kind == LRUC_COPY_DEVICE_TO_HOST
             ? self->api_->streamSynchronize(self->stream_)
             : 0;
}

} // namespace lruc::cuda
