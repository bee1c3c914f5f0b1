//===- SimulatedCuda.cpp - A CUDA driver and cuBLAS on the CPU, for tests -===//
//
// A shared library that exports the CUDA driver and cuBLAS entry points that
// lruc::cuda::Device opens (Device.cpp), by their real names and signatures,
// so that the runtime's GPU path runs end to end where there is no GPU:
//
//   LRUC_CUDA_DRIVER=liblruc-simulated-cuda.so
//   LRUC_CUBLAS=liblruc-simulated-cuda.so
//   LRUC_SIMULATED_KERNELS=kernels.so   (lruc-simulated-kernels model.so)
//
// One device, "lruc simulated GPU", compute capability 9.0. Device memory
// is host memory (unified addressing), filled with NaN bytes when
// allocated, at most $LRUC_SIMULATED_MEMORY bytes of it when that is set. A module is real PTX (NVRTC's, as Device compiles it): its
// target must suit the device, and its `.entry` names must be exactly the
// kernels of $LRUC_SIMULATED_KERNELS, the same CUDA source compiled as C++
// (tests/support/SimulatedKernels.h runs them).
//
// Work is asynchronous as on a device, as late as the documentation
// allows: launches, GEMMs, queued copies and event records wait in one
// queue, in order, and run only when the host must see their effects: at
// cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize (up to the
// event), a copy to pageable host memory (which the driver completes
// before returning), cuMemcpy, and freeing memory. A kernel's parameters
// are copied when it is launched (their sizes from the PTX); a queued copy
// from pageable host memory is staged at once, one from page-locked memory
// (cuMemHostAlloc) reads it when it runs, and one to page-locked memory
// writes it then. So a host that reads results before waiting for them, or
// reuses a page-locked buffer too early, sees stale data. Stream capture
// records a stream's work into a graph instead (cuGraphLaunch queues it
// again); while capturing, a wait, an allocation or a copy with pageable
// host memory fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and spoils
// the capture. A kernel whose
// block cannot finish poisons the context as a failed launch does on a
// device: the call that runs it and every later one returns
// CUDA_ERROR_LAUNCH_FAILED, and queued work is dropped. cublasSgemm_v2 is
// column-major, checks its
// sizes and leading dimensions as cuBLAS documents, and fails for an
// operand that does not lie inside one device allocation (on a device: an
// illegal address). What is checked is what the documentation says; what a
// real device does beyond it (timing, concurrency, memory limits) is not.
//
//===----------------------------------------------------------------------===//

#include "GemmBatch.h"
#include "SimulatedKernels.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace {

// cuda.h's values.
enum : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNotInitialized = 3,
  kInvalidDevice = 101,
  kInvalidImage = 200,
  kInvalidContext = 201,
  kNoBinaryForGpu = 209,
  kInvalidHandle = 400,
  kNotFound = 500,
  kLaunchFailed = 719,
  kCaptureUnsupported = 900,
  kCaptureInvalidated = 901,
  kCaptureUnmatched = 902,
};
constexpr int kAttributeMaxThreadsPerBlock = 1;
constexpr int kAttributeMaxSharedMemoryPerBlock = 8;
constexpr int kAttributeMultiprocessorCount = 16;
constexpr int kAttributeComputeCapabilityMajor = 75;
constexpr int kAttributeComputeCapabilityMinor = 76;
constexpr int kComputeCapability = 90;
constexpr unsigned kMaxSharedMemory = 48 * 1024; // without an opt-in
// cublas_api.h's values.
enum : int {
  kBlasSuccess = 0,
  kBlasNotInitialized = 1,
  kBlasInvalidValue = 7,
  kBlasExecutionFailed = 13,
  kBlasNotSupported = 15,
};
constexpr int kBlasOpN = 0, kBlasOpT = 1;

/// Each `.entry` of a PTX module by name: its parameters' sizes in bytes.
using EntryParams = std::map<std::string, std::vector<size_t>>;

struct Module {
  lruc::testing::SimulatedKernels kernels;
  EntryParams entries;
};
struct Function {
  Module *module;
  int32_t kernel;
  const std::vector<size_t> *paramSizes;
};
struct Event {
  bool recorded = false; ///< its record has run
  std::chrono::steady_clock::time_point when;
};
struct Stream {};

/// The one device and its primary context.
struct Driver {
  bool initialised = false;
  int retained = 0;             ///< primary context references
  int stickyError = kSuccess;   ///< a failed launch poisons the context
  std::map<uintptr_t, size_t> allocations; ///< device memory by start
  std::map<uintptr_t, size_t> hostAllocations; ///< page-locked host memory
  std::set<Module *> modules;
  std::set<Function *> functions;
  std::set<Event *> events;
  std::set<Stream *> streams;
  /// Work not run yet, in order (every stream's: one order is a valid one).
  /// Each returns false when it failed (it has reported why).
  struct Pending {
    std::function<bool()> run;
    const Event *records = nullptr; ///< an event record
  };
  std::deque<Pending> queue;
  /// Stream capture (cuStreamBeginCapture): what the stream is given goes
  /// into `captured` instead of the queue; `captureInvalid` once something
  /// that cannot be captured was asked for.
  Stream *capturing = nullptr;
  std::vector<Pending> captured;
  bool captureInvalid = false;
};
/// A captured graph (CUgraph), and an instantiated one (CUgraphExec, a
/// copy): the work, to queue again and again (each item may run many times).
struct Graph {
  std::vector<Driver::Pending> work;
};
Driver &driver() {
  static Driver d;
  return d;
}
int gPrimaryContext; // its address is the CUcontext
thread_local void *tCurrentContext = nullptr;

void report(const std::string &message) {
  std::fprintf(stderr, "simulated CUDA driver: %s\n", message.c_str());
}

/// What every call that needs the device's context checks first.
int contextError() {
  Driver &d = driver();
  if (!d.initialised)
    return kNotInitialized;
  if (tCurrentContext != &gPrimaryContext || d.retained == 0)
    return kInvalidContext;
  return d.stickyError;
}

/// Whether [address, address + bytes) lies inside one device allocation.
bool insideDeviceMemory(uintptr_t address, size_t bytes) {
  const auto &allocations = driver().allocations;
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin())
    return false;
  --it;
  return address - it->first <= it->second &&
         bytes <= it->second - (address - it->first);
}

/// Whether `address` falls inside a device allocation at all.
bool isDevicePointer(uintptr_t address) {
  return insideDeviceMemory(address, 0) && address != 0;
}

/// Whether [address, address + bytes) lies inside page-locked host memory.
bool insidePageLocked(uintptr_t address, size_t bytes) {
  const auto &allocations = driver().hostAllocations;
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin())
    return false;
  --it;
  return address - it->first < it->second &&
         bytes <= it->second - (address - it->first);
}

/// Runs queued work in order, up to and including the record of `until`
/// (everything when null). Returns the context's error: a failed item
/// poisons the context and drops what is left, as a device does.
int drain(const Event *until = nullptr) {
  Driver &d = driver();
  while (!d.queue.empty() && d.stickyError == kSuccess) {
    Driver::Pending item = std::move(d.queue.front());
    d.queue.pop_front();
    if (!item.run())
      d.stickyError = kLaunchFailed;
    if (until && item.records == until)
      break;
  }
  if (d.stickyError != kSuccess)
    d.queue.clear();
  return d.stickyError;
}

/// Queues `run` on `stream` (see Driver::queue), or records it into the
/// capture under way there; the context's error.
int enqueue(void *stream, std::function<bool()> run,
            const Event *records = nullptr) {
  Driver &d = driver();
  if (stream && stream == d.capturing) {
    d.captured.push_back({std::move(run), records});
    return kSuccess;
  }
  d.queue.push_back({std::move(run), records});
  return d.stickyError;
}

/// What cannot happen while a stream is captured (a wait for the device,
/// an allocation: cuStreamBeginCapture's global mode) fails with
/// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and spoils the capture; 0 when
/// nothing is captured.
int captureForbids(const char *what) {
  Driver &d = driver();
  if (!d.capturing)
    return kSuccess;
  report(std::string(what) + " while a stream is captured");
  d.captureInvalid = true;
  return kCaptureUnsupported;
}

/// The size of a PTX parameter type (`.u64`, `.f32`, ...; 0 if unknown).
size_t ptxTypeBytes(const std::string &type) {
  if (type.size() < 3)
    return 0;
  return size_t(std::atoi(type.c_str() + 2)) / 8;
}

/// The `.entry` kernels of a PTX module with their parameters' sizes, and
/// its `.target sm_NN` (0: none). A parameter is `.param .u64 NAME` or
/// `.param .align A .b8 NAME[BYTES]`.
EntryParams entriesOf(const std::string &ptx, int &target) {
  EntryParams entries;
  target = 0;
  if (size_t at = ptx.find(".target sm_"); at != std::string::npos)
    target = std::atoi(ptx.c_str() + at + std::strlen(".target sm_"));
  const std::string marker = ".entry ";
  for (size_t at = ptx.find(marker); at != std::string::npos;
       at = ptx.find(marker, at + 1)) {
    size_t begin = at + marker.size();
    size_t end = ptx.find_first_of("( \t\n", begin);
    std::vector<size_t> &sizes = entries[ptx.substr(begin, end - begin)];
    size_t close = ptx.find(')', end);
    for (size_t p = ptx.find(".param ", end); p < close;
         p = ptx.find(".param ", p + 1)) {
      size_t lineEnd = std::min(ptx.find_first_of(",\n)", p), close);
      std::string decl = ptx.substr(p, lineEnd - p);
      size_t bytes = 0;
      if (size_t open = decl.find('['); open != std::string::npos)
        bytes = size_t(std::atoll(decl.c_str() + open + 1));
      else if (size_t type = decl.find(" .", 6); type != std::string::npos)
        bytes = ptxTypeBytes(decl.substr(type + 1, decl.find(' ', type + 1) -
                                                       type - 1));
      sizes.push_back(bytes);
    }
  }
  return entries;
}

} // namespace

extern "C" {
#define LRUC_EXPORT __attribute__((visibility("default")))

//===-- The driver --------------------------------------------------------===//

LRUC_EXPORT int cuInit(unsigned flags) {
  if (flags != 0)
    return kInvalidValue;
  driver().initialised = true;
  return kSuccess;
}

LRUC_EXPORT int cuGetErrorString(int error, const char **text) {
  if (!text)
    return kInvalidValue;
  switch (error) {
  case kSuccess: *text = "no error"; break;
  case kInvalidValue: *text = "invalid argument"; break;
  case kOutOfMemory: *text = "out of memory"; break;
  case kNotInitialized: *text = "initialization error"; break;
  case kInvalidDevice: *text = "invalid device ordinal"; break;
  case kInvalidImage: *text = "device kernel image is invalid"; break;
  case kInvalidContext: *text = "invalid device context"; break;
  case kNoBinaryForGpu:
    *text = "no kernel image is available for execution on the device";
    break;
  case kInvalidHandle: *text = "invalid resource handle"; break;
  case kNotFound: *text = "named symbol not found"; break;
  case kLaunchFailed: *text = "unspecified launch failure"; break;
  default: *text = nullptr; return kInvalidValue;
  }
  return kSuccess;
}

LRUC_EXPORT int cuDeviceGetCount(int *count) {
  if (!driver().initialised)
    return kNotInitialized;
  if (!count)
    return kInvalidValue;
  *count = 1;
  return kSuccess;
}

LRUC_EXPORT int cuDeviceGet(int *device, int ordinal) {
  if (!driver().initialised)
    return kNotInitialized;
  if (!device)
    return kInvalidValue;
  if (ordinal != 0)
    return kInvalidDevice;
  *device = 0;
  return kSuccess;
}

LRUC_EXPORT int cuDeviceGetName(char *name, int length, int device) {
  if (!driver().initialised)
    return kNotInitialized;
  if (device != 0)
    return kInvalidDevice;
  if (!name || length <= 0)
    return kInvalidValue;
  std::snprintf(name, size_t(length), "%s", "lruc simulated GPU");
  return kSuccess;
}

LRUC_EXPORT int cuDeviceGetAttribute(int *value, int attribute, int device) {
  if (!driver().initialised)
    return kNotInitialized;
  if (device != 0)
    return kInvalidDevice;
  if (!value)
    return kInvalidValue;
  switch (attribute) {
  case kAttributeMaxThreadsPerBlock: *value = 1024; break;
  case kAttributeMaxSharedMemoryPerBlock: *value = int(kMaxSharedMemory); break;
  case kAttributeMultiprocessorCount: *value = 132; break;
  case kAttributeComputeCapabilityMajor: *value = kComputeCapability / 10; break;
  case kAttributeComputeCapabilityMinor: *value = kComputeCapability % 10; break;
  default: return kInvalidValue;
  }
  return kSuccess;
}

LRUC_EXPORT int cuDevicePrimaryCtxRetain(void **context, int device) {
  if (!driver().initialised)
    return kNotInitialized;
  if (device != 0)
    return kInvalidDevice;
  if (!context)
    return kInvalidValue;
  ++driver().retained;
  *context = &gPrimaryContext;
  return kSuccess;
}

LRUC_EXPORT int cuDevicePrimaryCtxRelease_v2(int device) {
  Driver &d = driver();
  if (!d.initialised)
    return kNotInitialized;
  if (device != 0)
    return kInvalidDevice;
  if (d.retained == 0)
    return kInvalidContext;
  if (--d.retained == 0) {
    // The last release destroys the context and everything in it, once
    // its work is done.
    drain();
    for (auto &[start, bytes] : d.hostAllocations)
      std::free(reinterpret_cast<void *>(start));
    d.hostAllocations.clear();
    for (Stream *s : d.streams)
      delete s;
    d.streams.clear();
    for (auto &[start, bytes] : d.allocations)
      std::free(reinterpret_cast<void *>(start));
    d.allocations.clear();
    for (Function *f : d.functions)
      delete f;
    d.functions.clear();
    for (Module *m : d.modules)
      delete m;
    d.modules.clear();
    for (Event *e : d.events)
      delete e;
    d.events.clear();
    d.stickyError = kSuccess;
  }
  return kSuccess;
}

LRUC_EXPORT int cuCtxSetCurrent(void *context) {
  if (!driver().initialised)
    return kNotInitialized;
  if (context && context != &gPrimaryContext)
    return kInvalidContext;
  tCurrentContext = context;
  return kSuccess;
}

LRUC_EXPORT int cuCtxSynchronize() {
  if (int error = contextError())
    return error;
  if (int error = captureForbids("cuCtxSynchronize"))
    return error;
  return drain();
}

LRUC_EXPORT int cuStreamCreate(void **stream, unsigned flags) {
  if (int error = contextError())
    return error;
  if (!stream || flags > 1) // CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING
    return kInvalidValue;
  auto *s = new Stream;
  driver().streams.insert(s);
  *stream = s;
  return kSuccess;
}

/// Whether `stream` is the legacy default stream (null) or one of ours.
bool knownStream(void *stream) {
  return !stream || driver().streams.count(static_cast<Stream *>(stream));
}

LRUC_EXPORT int cuStreamDestroy_v2(void *stream) {
  Driver &d = driver();
  if (int error = contextError(); error && error != d.stickyError)
    return error;
  auto it = d.streams.find(static_cast<Stream *>(stream));
  if (it == d.streams.end() || *it == d.capturing)
    return kInvalidHandle;
  // Its work still completes (the documentation); here, now.
  drain();
  delete *it;
  d.streams.erase(it);
  return kSuccess;
}

LRUC_EXPORT int cuStreamSynchronize(void *stream) {
  if (int error = contextError())
    return error;
  if (!knownStream(stream))
    return kInvalidHandle;
  if (int error = captureForbids("cuStreamSynchronize"))
    return error;
  return drain();
}

//===-- Stream capture and graphs -----------------------------------------===//

LRUC_EXPORT int cuStreamBeginCapture_v2(void *stream, int mode) {
  if (int error = contextError())
    return error;
  Driver &d = driver();
  if (!stream || !knownStream(stream) || mode < 0 || mode > 2)
    return kInvalidValue; // the legacy stream cannot be captured
  if (d.capturing)
    return kCaptureUnsupported; // one capture at a time, here
  d.capturing = static_cast<Stream *>(stream);
  d.captured.clear();
  d.captureInvalid = false;
  return kSuccess;
}

LRUC_EXPORT int cuStreamEndCapture(void *stream, void **graph) {
  Driver &d = driver();
  if (!graph)
    return kInvalidValue;
  *graph = nullptr;
  if (!d.capturing || stream != d.capturing)
    return kCaptureUnmatched;
  d.capturing = nullptr;
  if (d.captureInvalid) {
    d.captured.clear();
    return kCaptureInvalidated;
  }
  *graph = new Graph{std::move(d.captured)};
  d.captured.clear();
  return kSuccess;
}

LRUC_EXPORT int cuGraphInstantiateWithFlags(void **exec, void *graph,
                                            unsigned long long flags) {
  if (int error = contextError())
    return error;
  if (!exec || !graph || flags != 0)
    return kInvalidValue;
  *exec = new Graph{static_cast<Graph *>(graph)->work};
  return kSuccess;
}

LRUC_EXPORT int cuGraphLaunch(void *exec, void *stream) {
  if (int error = contextError())
    return error;
  if (!exec || !knownStream(stream))
    return kInvalidValue;
  if (stream && stream == driver().capturing)
    return captureForbids("cuGraphLaunch into a capture (not simulated)");
  for (const Driver::Pending &item : static_cast<Graph *>(exec)->work)
    enqueue(stream, item.run, item.records);
  return driver().stickyError;
}

LRUC_EXPORT int cuGraphExecDestroy(void *exec) {
  if (!exec)
    return kInvalidValue;
  delete static_cast<Graph *>(exec); // queued launches hold copies
  return kSuccess;
}

LRUC_EXPORT int cuGraphDestroy(void *graph) {
  if (!graph)
    return kInvalidValue;
  delete static_cast<Graph *>(graph);
  return kSuccess;
}

LRUC_EXPORT int cuModuleLoadData(void **module, const void *image) {
  if (int error = contextError())
    return error;
  if (!module || !image)
    return kInvalidValue;
  // Machine code (an ELF image: a kit's cubin) is declined as by a device
  // of another architecture; the caller falls back to the PTX.
  if (std::memcmp(image, "\x7f" "ELF", 4) == 0)
    return kNoBinaryForGpu;
  const std::string ptx(static_cast<const char *>(image));
  int target = 0;
  EntryParams entries = entriesOf(ptx, target);
  if (ptx.find(".version") == std::string::npos || target == 0) {
    report("the module is not PTX text (no .version or .target sm_NN)");
    return kInvalidImage;
  }
  if (target > kComputeCapability) {
    report("PTX for sm_" + std::to_string(target) + " on a device of sm_" +
           std::to_string(kComputeCapability));
    return kNoBinaryForGpu;
  }
  const char *path = std::getenv("LRUC_SIMULATED_KERNELS");
  if (!path || !*path) {
    report("LRUC_SIMULATED_KERNELS names no library: build one with "
           "lruc-simulated-kernels MODEL.so -o KERNELS.so");
    return kInvalidImage;
  }
  auto loaded = std::make_unique<Module>();
  std::string error;
  if (!loaded->kernels.open(path, error)) {
    report(error);
    return kInvalidImage;
  }
  // The same kernels by name (names are unique on both sides).
  size_t shared = 0;
  for (const auto &entry : entries)
    shared += loaded->kernels.find(entry.first.c_str()) >= 0;
  if (shared != entries.size() ||
      size_t(loaded->kernels.count()) != entries.size()) {
    report(std::string(path) + " holds " +
           std::to_string(loaded->kernels.count()) + " kernels, the PTX " +
           std::to_string(entries.size()) + ", " + std::to_string(shared) +
           " of them by the same names: not the same CUDA source");
    return kInvalidImage;
  }
  loaded->entries = std::move(entries);
  *module = loaded.get();
  driver().modules.insert(loaded.release());
  return kSuccess;
}

LRUC_EXPORT int cuModuleUnload(void *module) {
  Driver &d = driver();
  if (int error = contextError(); error && error != d.stickyError)
    return error;
  auto it = d.modules.find(static_cast<Module *>(module));
  if (it == d.modules.end())
    return kInvalidHandle;
  drain(); // its queued launches run first
  for (auto f = d.functions.begin(); f != d.functions.end();)
    if ((*f)->module == *it) {
      delete *f;
      f = d.functions.erase(f);
    } else {
      ++f;
    }
  delete *it;
  d.modules.erase(it);
  return kSuccess;
}

LRUC_EXPORT int cuModuleGetFunction(void **function, void *module,
                                    const char *name) {
  if (int error = contextError())
    return error;
  Driver &d = driver();
  auto it = d.modules.find(static_cast<Module *>(module));
  if (it == d.modules.end())
    return kInvalidHandle;
  if (!function || !name)
    return kInvalidValue;
  auto entry = (*it)->entries.find(name);
  if (entry == (*it)->entries.end())
    return kNotFound;
  auto *f = new Function{*it, (*it)->kernels.find(name), &entry->second};
  d.functions.insert(f);
  *function = f;
  return kSuccess;
}

LRUC_EXPORT int cuLaunchKernel(void *function, unsigned gridX, unsigned gridY,
                               unsigned gridZ, unsigned blockX,
                               unsigned blockY, unsigned blockZ,
                               unsigned sharedBytes, void *stream,
                               void **params, void **extra) {
  if (int error = contextError())
    return error;
  Driver &d = driver();
  auto it = d.functions.find(static_cast<Function *>(function));
  if (it == d.functions.end())
    return kInvalidHandle;
  if (!knownStream(stream))
    return kInvalidHandle;
  if (gridX == 0 || gridY == 0 || gridZ == 0 || blockX == 0 || blockY == 0 ||
      blockZ == 0 || gridX > 2147483647u || gridY > 65535 || gridZ > 65535 ||
      uint64_t(blockX) * blockY * blockZ > 1024 || blockZ > 64 ||
      sharedBytes > kMaxSharedMemory || (params && extra) || !params)
    return kInvalidValue;
  if (gridY != 1 || gridZ != 1 || blockY != 1 || blockZ != 1) {
    report("a launch with more than one dimension: lruc's kernels index x "
           "only");
    return kInvalidValue;
  }
  // The parameters are copied now, as the driver does: the caller's
  // arrays may be gone when the kernel runs.
  const std::vector<size_t> &sizes = *(*it)->paramSizes;
  std::vector<std::vector<char>> copies;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == 0 || !params[k])
      return kInvalidValue;
    const char *from = static_cast<const char *>(params[k]);
    copies.emplace_back(from, from + sizes[k]);
  }
  Function launched = **it;
  return enqueue(stream, [launched, copies = std::move(copies), gridX,
                          blockX]() mutable {
    std::vector<void *> pointers;
    for (std::vector<char> &copy : copies)
      pointers.push_back(copy.data());
    std::string error;
    if (launched.module->kernels.launch(launched.kernel, gridX,
                                        int32_t(blockX), pointers.data(),
                                        error))
      return true;
    report(error);
    return false;
  });
}

LRUC_EXPORT int cuMemAlloc_v2(unsigned long long *pointer, size_t bytes) {
  if (int error = contextError())
    return error;
  if (int error = captureForbids("cuMemAlloc"))
    return error;
  if (!pointer || bytes == 0)
    return kInvalidValue;
  // $LRUC_SIMULATED_MEMORY: the device's memory in bytes (default: as much
  // as the host gives).
  if (const char *limit = std::getenv("LRUC_SIMULATED_MEMORY")) {
    size_t used = 0;
    for (const auto &allocation : driver().allocations)
      used += allocation.second;
    if (used + bytes > std::strtoull(limit, nullptr, 10))
      return kOutOfMemory;
  }
  // 256-byte alignment, as cudaMalloc promises.
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!memory)
    return kOutOfMemory;
  std::memset(memory, 0xff, bytes); // NaN floats: reads before writes show
  driver().allocations[reinterpret_cast<uintptr_t>(memory)] = bytes;
  *pointer = reinterpret_cast<uintptr_t>(memory);
  return kSuccess;
}

LRUC_EXPORT int cuMemFree_v2(unsigned long long pointer) {
  Driver &d = driver();
  if (int error = contextError(); error && error != d.stickyError)
    return error;
  if (int error = captureForbids("cuMemFree"))
    return error;
  drain(); // queued work may still use it: the driver waits for it
  auto it = d.allocations.find(uintptr_t(pointer));
  if (it == d.allocations.end())
    return kInvalidValue;
  std::free(reinterpret_cast<void *>(it->first));
  d.allocations.erase(it);
  return kSuccess;
}

LRUC_EXPORT int cuMemHostAlloc(void **pointer, size_t bytes,
                               unsigned flags) {
  if (int error = contextError())
    return error;
  if (int error = captureForbids("cuMemHostAlloc"))
    return error;
  if (!pointer || bytes == 0 || flags > 7)
    return kInvalidValue;
  void *memory = std::malloc(bytes);
  if (!memory)
    return kOutOfMemory;
  std::memset(memory, 0xff, bytes);
  driver().hostAllocations[reinterpret_cast<uintptr_t>(memory)] = bytes;
  *pointer = memory;
  return kSuccess;
}

LRUC_EXPORT int cuMemFreeHost(void *pointer) {
  Driver &d = driver();
  if (int error = contextError(); error && error != d.stickyError)
    return error;
  if (int error = captureForbids("cuMemFreeHost"))
    return error;
  drain(); // the driver waits for the work that may still use it
  auto it = d.hostAllocations.find(reinterpret_cast<uintptr_t>(pointer));
  if (it == d.hostAllocations.end())
    return kInvalidValue;
  std::free(pointer);
  d.hostAllocations.erase(it);
  return kSuccess;
}

/// A copy's checks: a device end lies inside one allocation (unified
/// addressing: a pointer inside a device allocation is device memory).
bool validCopy(uintptr_t dst, uintptr_t src, size_t bytes) {
  for (uintptr_t p : {dst, src})
    if (isDevicePointer(p) && !insideDeviceMemory(p, bytes))
      return false;
  return bytes == 0 || (dst != 0 && src != 0);
}

LRUC_EXPORT int cuMemcpy(unsigned long long dst, unsigned long long src,
                         size_t bytes) {
  if (int error = contextError())
    return error;
  if (!validCopy(dst, src, bytes))
    return kInvalidValue;
  if (int error = captureForbids("cuMemcpy"))
    return error;
  if (int error = drain()) // the legacy stream waits for everything
    return error;
  if (bytes > 0)
    std::memmove(reinterpret_cast<void *>(dst),
                 reinterpret_cast<const void *>(src), bytes);
  return kSuccess;
}

/// cuMemcpy*Async: `dst` and `src` must be of the kinds the name says.
int queueCopy(uintptr_t dst, uintptr_t src, size_t bytes, void *stream,
              bool dstOnDevice, bool srcOnDevice) {
  if (int error = contextError())
    return error;
  if (!knownStream(stream) || !validCopy(dst, src, bytes) ||
      (bytes > 0 && (isDevicePointer(dst) != dstOnDevice ||
                     isDevicePointer(src) != srcOnDevice)))
    return kInvalidValue;
  if (bytes == 0)
    return kSuccess;
  auto *to = reinterpret_cast<char *>(dst);
  const auto *from = reinterpret_cast<const char *>(src);
  const bool pageable = (!srcOnDevice && !insidePageLocked(src, bytes)) ||
                        (!dstOnDevice && !insidePageLocked(dst, bytes));
  // The documentation is silent on pageable memory in a captured copy;
  // here it is refused (Device stages what it captures).
  if (pageable && stream && stream == driver().capturing)
    return captureForbids("a copy with pageable host memory");
  if (!srcOnDevice && !insidePageLocked(src, bytes)) {
    // Pageable source: staged now, so the caller may reuse it.
    std::vector<char> staged(from, from + bytes);
    return enqueue(stream, [to, staged = std::move(staged)] {
      std::memcpy(to, staged.data(), staged.size());
      return true;
    });
  }
  if (!dstOnDevice && !insidePageLocked(dst, bytes)) {
    // Pageable destination: the driver completes the copy before it
    // returns.
    if (int error = drain())
      return error;
    std::memmove(to, from, bytes);
    return kSuccess;
  }
  return enqueue(stream, [to, from, bytes] {
    std::memmove(to, from, bytes);
    return true;
  });
}

LRUC_EXPORT int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src,
                                     size_t bytes, void *stream) {
  return queueCopy(uintptr_t(dst), reinterpret_cast<uintptr_t>(src), bytes,
                   stream, true, false);
}

LRUC_EXPORT int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src,
                                     size_t bytes, void *stream) {
  return queueCopy(reinterpret_cast<uintptr_t>(dst), uintptr_t(src), bytes,
                   stream, false, true);
}

LRUC_EXPORT int cuMemcpyDtoDAsync_v2(unsigned long long dst,
                                     unsigned long long src, size_t bytes,
                                     void *stream) {
  return queueCopy(uintptr_t(dst), uintptr_t(src), bytes, stream, true, true);
}

LRUC_EXPORT int cuEventCreate(void **event, unsigned flags) {
  if (int error = contextError())
    return error;
  if (!event || flags != 0)
    return kInvalidValue;
  auto *e = new Event;
  driver().events.insert(e);
  *event = e;
  return kSuccess;
}

LRUC_EXPORT int cuEventRecord(void *event, void *stream) {
  if (int error = contextError())
    return error;
  auto it = driver().events.find(static_cast<Event *>(event));
  if (it == driver().events.end() || !knownStream(stream))
    return kInvalidHandle;
  Event *e = *it;
  return enqueue(
      stream,
      [e] {
        e->recorded = true;
        e->when = std::chrono::steady_clock::now();
        return true;
      },
      e);
}

LRUC_EXPORT int cuEventSynchronize(void *event) {
  if (int error = contextError())
    return error;
  auto *e = static_cast<Event *>(event);
  if (!driver().events.count(e))
    return kInvalidHandle;
  // Up to its latest record (an event never recorded has passed).
  auto records =
      std::count_if(driver().queue.begin(), driver().queue.end(),
                    [&](const Driver::Pending &p) { return p.records == e; });
  for (; records > 0; --records)
    if (int error = drain(e))
      return error;
  return contextError();
}

LRUC_EXPORT int cuEventElapsedTime(float *milliseconds, void *start,
                                   void *end) {
  if (int error = contextError())
    return error;
  auto &events = driver().events;
  auto *a = static_cast<Event *>(start), *b = static_cast<Event *>(end);
  if (!milliseconds)
    return kInvalidValue;
  if (!events.count(a) || !events.count(b) || !a->recorded || !b->recorded)
    return kInvalidHandle;
  *milliseconds = std::chrono::duration<float, std::milli>(b->when - a->when)
                      .count();
  return kSuccess;
}

LRUC_EXPORT int cuEventDestroy_v2(void *event) {
  auto &events = driver().events;
  auto it = events.find(static_cast<Event *>(event));
  if (it == events.end())
    return kInvalidHandle;
  // A record still queued completes first (the event lives until then).
  for (const Driver::Pending &p : driver().queue)
    if (p.records == *it) {
      drain(*it);
      break;
    }
  delete *it;
  events.erase(it);
  return kSuccess;
}

//===-- cuBLAS ------------------------------------------------------------===//

struct BlasHandle {
  int64_t gemms = 0;
  void *stream = nullptr;
  bool tf32 = false; // CUBLAS_TF32_TENSOR_OP_MATH
};

/// `x` rounded to TF32 (10 bits of mantissa, to nearest, ties away from
/// zero), as tensor cores read an fp32 operand.
static float roundToTf32(float x) {
  if (!std::isfinite(x))
    return x;
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits = (bits + 0x1000u) & ~0x1fffu;
  std::memcpy(&x, &bits, sizeof bits);
  return x;
}

LRUC_EXPORT int cublasCreate_v2(void **handle) {
  if (contextError())
    return kBlasNotInitialized;
  if (!handle)
    return kBlasInvalidValue;
  *handle = new BlasHandle;
  return kBlasSuccess;
}

LRUC_EXPORT int cublasDestroy_v2(void *handle) {
  if (!handle)
    return kBlasNotInitialized;
  delete static_cast<BlasHandle *>(handle);
  return kBlasSuccess;
}

LRUC_EXPORT int cublasSetStream_v2(void *handle, void *stream) {
  if (!handle)
    return kBlasNotInitialized;
  if (!knownStream(stream))
    return kBlasInvalidValue;
  static_cast<BlasHandle *>(handle)->stream = stream;
  return kBlasSuccess;
}

/// CUBLAS_DEFAULT_MATH (0) or CUBLAS_TF32_TENSOR_OP_MATH (3).
LRUC_EXPORT int cublasSetMathMode(void *handle, int mode) {
  if (!handle)
    return kBlasNotInitialized;
  if (mode != 0 && mode != 3)
    return kBlasInvalidValue;
  static_cast<BlasHandle *>(handle)->tf32 = mode == 3;
  return kBlasSuccess;
}

/// How a product reads fp32 operands: as they are, or rounded first to
/// TF32 (TF32 math mode) or to bfloat16 (CUBLAS_COMPUTE_32F_FAST_16BF).
enum class Rounding { none, tf32, bf16 };

/// `count` column-major products C_i[m, n] = alpha op(A_i) op(B_i) + beta
/// C_i, A_i = a + i * strideA elements and so on (fp32 operands in TF32
/// math mode rounded to TF32 first, with `bf16Products` to bfloat16):
/// cuBLAS's contract for `name`.
static int gemmBatch(const char *name, void *handle, int transA, int transB,
                     int m, int n, int k, const float *alpha,
                     lruc::testing::GemmArray a, int lda, long long strideA,
                     lruc::testing::GemmArray b, int ldb, long long strideB,
                     const float *beta, lruc::testing::GemmArray c, int ldc,
                     long long strideC, int count, bool bf16Products = false) {
  if (!handle)
    return kBlasNotInitialized;
  const int rowsA = transA == kBlasOpN ? m : k;
  const int rowsB = transB == kBlasOpN ? k : n;
  if ((transA != kBlasOpN && transA != kBlasOpT) ||
      (transB != kBlasOpN && transB != kBlasOpT) || m < 0 || n < 0 || k < 0 ||
      lda < std::max(1, rowsA) || ldb < std::max(1, rowsB) ||
      ldc < std::max(1, m) || !alpha || !beta || count < 0)
    return kBlasInvalidValue;
  if (contextError())
    return kBlasExecutionFailed;
  if (m == 0 || n == 0 || count == 0)
    return kBlasSuccess;
  // Each operand's extent in bytes, as cuBLAS reads it: `cols` columns of
  // `ld`.
  auto extent = [](int rows, int cols, int ld,
                   const lruc::testing::GemmArray &x) {
    return (size_t(cols - 1) * size_t(ld) + size_t(rows)) *
           size_t(x.elementBytes());
  };
  const int colsA = transA == kBlasOpN ? k : m;
  const int colsB = transB == kBlasOpN ? n : k;
  for (int i = 0; i < count; ++i) {
    const void *ai = a.plus(i * strideA).data, *bi = b.plus(i * strideB).data;
    const void *ci = c.plus(i * strideC).data;
    if ((k > 0 &&
         (!insideDeviceMemory(uintptr_t(ai), extent(rowsA, colsA, lda, a)) ||
          !insideDeviceMemory(uintptr_t(bi), extent(rowsB, colsB, ldb, b)))) ||
        !insideDeviceMemory(uintptr_t(ci), extent(m, n, ldc, c))) {
      report(std::string(name) + ": an operand outside device memory (m " +
             std::to_string(m) + ", n " + std::to_string(n) + ", k " +
             std::to_string(k) + ", lda " + std::to_string(lda) + ", ldb " +
             std::to_string(ldb) + ", ldc " + std::to_string(ldc) +
             ", product " + std::to_string(i) + ")");
      driver().stickyError = kLaunchFailed; // an illegal address, on a device
      return kBlasExecutionFailed;
    }
  }
  std::string overlap;
  if (count > 1 && k > 0 &&
      lruc::testing::batchOverlaps(
          a.data, int64_t(extent(rowsA, colsA, lda, a)),
          strideA * a.elementBytes(), b.data,
          int64_t(extent(rowsB, colsB, ldb, b)), strideB * b.elementBytes(),
          c.data, int64_t(extent(m, n, ldc, c)), strideC * c.elementBytes(),
          count, overlap)) {
    // On a device the products would race.
    report(std::string(name) + ": " + overlap);
    driver().stickyError = kLaunchFailed;
    return kBlasExecutionFailed;
  }
  ++static_cast<BlasHandle *>(handle)->gemms;
  // alpha and beta are read now (host pointer mode), the operands when the
  // GEMM runs, in order on the handle's stream.
  const double scaleAB = *alpha, scaleC = *beta;
  const Rounding rounding = a.bf16         ? Rounding::none
                            : bf16Products ? Rounding::bf16
                            : static_cast<BlasHandle *>(handle)->tf32
                                ? Rounding::tf32
                                : Rounding::none;
  enqueue(static_cast<BlasHandle *>(handle)->stream, [=] {
    auto operand = [rounding](double x) {
      switch (rounding) {
      case Rounding::tf32:
        return double(roundToTf32(float(x)));
      case Rounding::bf16:
        return double(lruc::testing::fromBf16(lruc::testing::toBf16(float(x))));
      case Rounding::none:
        break;
      }
      return x;
    };
    for (int product = 0; product < count; ++product) {
      const lruc::testing::GemmArray ai = a.plus(product * strideA),
                                     bi = b.plus(product * strideB),
                                     ci = c.plus(product * strideC);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          double sum = 0;
          for (int p = 0; p < k; ++p)
            sum += operand(transA == kBlasOpN ? ai.at(size_t(p) * lda + i)
                                              : ai.at(size_t(i) * lda + p)) *
                   operand(transB == kBlasOpN ? bi.at(size_t(j) * ldb + p)
                                              : bi.at(size_t(p) * ldb + j));
          const size_t out = size_t(j) * ldc + i;
          // beta 0: C is not read (it may hold NaNs), as cuBLAS documents.
          ci.store(out, float(scaleAB * sum +
                              (scaleC == 0.0 ? 0.0 : scaleC * ci.at(out))));
        }
    }
    return true;
  });
  return kBlasSuccess;
}

static lruc::testing::GemmArray floats(const float *p) {
  return {const_cast<float *>(p), false};
}

LRUC_EXPORT int cublasSgemm_v2(void *handle, int transA, int transB, int m,
                               int n, int k, const float *alpha, const float *a,
                               int lda, const float *b, int ldb,
                               const float *beta, float *c, int ldc) {
  return gemmBatch("cublasSgemm_v2", handle, transA, transB, m, n, k, alpha,
                   floats(a), lda, 0, floats(b), ldb, 0, beta, floats(c), ldc,
                   0, 1);
}

LRUC_EXPORT int
cublasSgemmStridedBatched(void *handle, int transA, int transB, int m, int n,
                          int k, const float *alpha, const float *a, int lda,
                          long long strideA, const float *b, int ldb,
                          long long strideB, const float *beta, float *c,
                          int ldc, long long strideC, int count) {
  return gemmBatch("cublasSgemmStridedBatched", handle, transA, transB, m, n, k,
                   alpha, floats(a), lda, strideA, floats(b), ldb, strideB,
                   beta, floats(c), ldc, strideC, count);
}

/// The types lruc asks of it: bfloat16 A and B (CUDA_R_16BF), C bfloat16
/// or fp32 (CUDA_R_32F), fp32 sums (CUBLAS_COMPUTE_32F); or fp32 A, B and C
/// rounded to bfloat16 with fp32 sums (CUBLAS_COMPUTE_32F_FAST_16BF; cuBLAS
/// may also take TF32 there, which lruc's tests, bounding the error by
/// bfloat16's, allow). Anything else is CUBLAS_STATUS_NOT_SUPPORTED, as
/// cuBLAS answers a combination it lacks.
LRUC_EXPORT int
cublasGemmStridedBatchedEx(void *handle, int transA, int transB, int m, int n,
                           int k, const void *alpha, const void *a, int aType,
                           int lda, long long strideA, const void *b, int bType,
                           int ldb, long long strideB, const void *beta,
                           void *c, int cType, int ldc, long long strideC,
                           int count, int computeType, int algo) {
  constexpr int kBf16 = 14, kF32 = 0, kCompute32F = 68,
                kCompute32FFast16BF = 75;
  (void)algo;
  const bool bf16Operands = aType == kBf16 && bType == kBf16 &&
                            (cType == kBf16 || cType == kF32) &&
                            computeType == kCompute32F;
  const bool bf16Products = aType == kF32 && bType == kF32 && cType == kF32 &&
                            computeType == kCompute32FFast16BF;
  if (!bf16Operands && !bf16Products)
    return kBlasNotSupported;
  return gemmBatch("cublasGemmStridedBatchedEx", handle, transA, transB, m, n,
                   k, static_cast<const float *>(alpha),
                   {const_cast<void *>(a), bf16Operands}, lda, strideA,
                   {const_cast<void *>(b), bf16Operands}, ldb, strideB,
                   static_cast<const float *>(beta), {c, cType == kBf16}, ldc,
                   strideC, count, bf16Products);
}

} // extern "C"
