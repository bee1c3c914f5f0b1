//===- CApi.cpp - lruc_device.h over lruc::cuda::Device -------------------===//
//
// The C interface of runtime/include/lruc_device.h: each call forwards to
// lruc::cuda::Device and turns its error string into the caller's buffer.
//
//===----------------------------------------------------------------------===//

#include "lruc_device.h"

#include "lruc/cuda/Device.h"

#include <cstdio>
#include <memory>
#include <string>

struct lruc_device {
  std::unique_ptr<lruc::cuda::Device> device;
  std::string description;
};

namespace {

/// `message` into the caller's buffer; the failure value `result`.
template <typename T>
T failed(const std::string &message, char *error, size_t size, T result) {
  if (error && size)
    std::snprintf(error, size, "%s", message.c_str());
  return result;
}

} // namespace

extern "C" {

lruc_device *lruc_device_open(int ordinal, char *error, size_t error_size) {
  std::string message;
  std::unique_ptr<lruc::cuda::Device> device =
      lruc::cuda::Device::open(ordinal, message);
  if (!device)
    return failed<lruc_device *>(message, error, error_size, nullptr);
  auto *handle = new lruc_device{std::move(device), {}};
  handle->description =
      handle->device->name() + " (" + handle->device->arch() + ")";
  return handle;
}

void lruc_device_close(lruc_device *device) { delete device; }

const char *lruc_device_description(const lruc_device *device) {
  return device->description.c_str();
}

int lruc_device_set_matmul(lruc_device *device, int precision, char *error,
                           size_t error_size) {
  using lruc::cuda::Matmul;
  std::string message;
  if (precision < 0 || precision > 2)
    return failed("matmul precision " + std::to_string(precision) +
                      ": unknown (0 fp32, 1 tf32, 2 bf16)",
                  error, error_size, 1);
  constexpr Matmul kByCode[] = {Matmul::fp32, Matmul::tf32, Matmul::bf16};
  if (!device->device->setMatmul(kByCode[precision], message))
    return failed(message, error, error_size, 1);
  return 0;
}

int lruc_device_load_kernels(lruc_device *device, const char *source,
                             const char *const *names, int count, char *error,
                             size_t error_size) {
  std::string message;
  if (!device->device->loadKernels(source, names, count, message))
    return failed(message, error, error_size, 1);
  return 0;
}

const lruc_gpu_ops *lruc_device_ops(const lruc_device *device) {
  return device->device->ops();
}

void *lruc_device_allocate(lruc_device *device, size_t bytes, char *error,
                           size_t error_size) {
  std::string message;
  void *memory = device->device->allocate(bytes, message);
  if (!memory)
    return failed<void *>(message, error, error_size, nullptr);
  return memory;
}

void lruc_device_release(lruc_device *device, void *memory) {
  device->device->release(memory);
}

int lruc_device_copy(lruc_device *device, void *dst, const void *src,
                     size_t bytes, int kind, char *error, size_t error_size) {
  const lruc_gpu_ops *ops = device->device->ops();
  if (int status = ops->copy(ops->context, dst, src, bytes, kind))
    return failed("a copy of " + std::to_string(bytes) +
                      " bytes failed (CUDA error " + std::to_string(status) +
                      ")",
                  error, error_size, 1);
  return 0;
}

int lruc_device_synchronize(lruc_device *device, char *error,
                            size_t error_size) {
  std::string message;
  if (!device->device->synchronize(message))
    return failed(message, error, error_size, 1);
  return 0;
}

} // extern "C"
