//===- Nvrtc.cpp - NVRTC, opened at run time ------------------------------===//

#include "lruc/cuda/Nvrtc.h"

#include "Dynamic.h"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

namespace lruc::cuda {
namespace {

// The part of nvrtc.h used here, declared by hand: the header may be absent
// where lruc is built.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;
constexpr nvrtcResult kNvrtcSuccess = 0;

struct NvrtcApi {
  const char *(*getErrorString)(nvrtcResult);
  nvrtcResult (*version)(int *, int *);
  nvrtcResult (*createProgram)(nvrtcProgram *, const char *, const char *, int,
                               const char *const *, const char *const *);
  nvrtcResult (*destroyProgram)(nvrtcProgram *);
  nvrtcResult (*compileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*getProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*getProgramLog)(nvrtcProgram, char *);
  nvrtcResult (*getPTXSize)(nvrtcProgram, size_t *);
  nvrtcResult (*getPTX)(nvrtcProgram, char *);
  // Since NVRTC 11.2; null in an older one.
  nvrtcResult (*getNumSupportedArchs)(int *);
  nvrtcResult (*getSupportedArchs)(int *);
};

/// The process's NVRTC, opened once; null with the reason in `failure`.
const NvrtcApi *openNvrtc(std::string &failure) {
  static std::once_flag once;
  static std::unique_ptr<NvrtcApi> api;
  static std::string reason;
  std::call_once(once, [] {
    void *handle = detail::openFirst(
        "LRUC_NVRTC", {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"});
    if (!handle) {
      reason = "cannot open NVRTC (tried $LRUC_NVRTC, libnvrtc.so, "
               "libnvrtc.so.13, libnvrtc.so.12 and /usr/local/cuda/lib64); "
               "install the CUDA toolkit's NVRTC or set LRUC_NVRTC";
      return;
    }
    auto table = std::make_unique<NvrtcApi>();
    detail::Binder bind(handle, "NVRTC");
    bind(table->getErrorString, "nvrtcGetErrorString");
    bind(table->version, "nvrtcVersion");
    bind(table->createProgram, "nvrtcCreateProgram");
    bind(table->destroyProgram, "nvrtcDestroyProgram");
    bind(table->compileProgram, "nvrtcCompileProgram");
    bind(table->getProgramLogSize, "nvrtcGetProgramLogSize");
    bind(table->getProgramLog, "nvrtcGetProgramLog");
    bind(table->getPTXSize, "nvrtcGetPTXSize");
    bind(table->getPTX, "nvrtcGetPTX");
    table->getNumSupportedArchs =
        reinterpret_cast<decltype(table->getNumSupportedArchs)>(
            dlsym(handle, "nvrtcGetNumSupportedArchs"));
    table->getSupportedArchs =
        reinterpret_cast<decltype(table->getSupportedArchs)>(
            dlsym(handle, "nvrtcGetSupportedArchs"));
    reason = bind.failure();
    if (bind.complete())
      api = std::move(table);
  });
  failure = reason;
  return api.get();
}

} // namespace

std::string nvrtcVersion(std::string &error) {
  const NvrtcApi *api = openNvrtc(error);
  int major = 0, minor = 0;
  if (!api)
    return "";
  if (api->version(&major, &minor) != kNvrtcSuccess) {
    error = "nvrtcVersion failed";
    return "";
  }
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<int> nvrtcSupportedArchs(std::string &error) {
  const NvrtcApi *api = openNvrtc(error);
  if (!api)
    return {};
  int count = 0;
  if (!api->getNumSupportedArchs || !api->getSupportedArchs ||
      api->getNumSupportedArchs(&count) != kNvrtcSuccess || count <= 0) {
    error = "this NVRTC does not list the architectures it supports";
    return {};
  }
  std::vector<int> archs(size_t(count), 0);
  if (api->getSupportedArchs(archs.data()) != kNvrtcSuccess) {
    error = "nvrtcGetSupportedArchs failed";
    return {};
  }
  return archs;
}

bool compileToPtx(const std::string &source, const std::string &sourceName,
                  const std::string &arch,
                  const std::vector<std::string> &extraOptions,
                  std::string &ptx, std::string &error) {
  const NvrtcApi *api = openNvrtc(error);
  if (!api)
    return false;
  nvrtcProgram program = nullptr;
  nvrtcResult result = api->createProgram(
      &program, source.c_str(), sourceName.c_str(), 0, nullptr, nullptr);
  if (result != kNvrtcSuccess) {
    error = std::string("nvrtcCreateProgram: ") + api->getErrorString(result);
    return false;
  }
  std::string archOption = "--gpu-architecture=" + arch;
  std::vector<const char *> options = {archOption.c_str(), "--std=c++17",
                                       "--fmad=true"};
  for (const std::string &option : extraOptions)
    options.push_back(option.c_str());
  result = api->compileProgram(program, int(options.size()), options.data());
  size_t logSize = 0;
  std::string log;
  if (api->getProgramLogSize(program, &logSize) == kNvrtcSuccess &&
      logSize > 1) {
    log.resize(logSize);
    api->getProgramLog(program, log.data());
    log.resize(logSize - 1);
  }
  bool ok = result == kNvrtcSuccess;
  if (ok) {
    size_t size = 0;
    ok = api->getPTXSize(program, &size) == kNvrtcSuccess;
    ptx.resize(size);
    ok = ok && api->getPTX(program, ptx.data()) == kNvrtcSuccess;
    if (ok && !ptx.empty() && ptx.back() == '\0')
      ptx.pop_back();
  }
  if (!ok)
    error = "NVRTC could not compile " + sourceName + " for " + arch + ": " +
            api->getErrorString(result) + "\n" + log;
  api->destroyProgram(&program);
  return ok;
}

} // namespace lruc::cuda
