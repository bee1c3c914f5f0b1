//===- ModelForThisCpu.cpp - A library's own check of the CPU -------------===//
//
// Compiled for any x86-64 CPU (CMakeLists.txt), and plain C inside: no
// template or inline function of the standard library, whose one copy in a
// library may be the copy compiled for the extensions it checks.
//
//===----------------------------------------------------------------------===//

#include "lruc/cpu/ModelForThisCpu.h"

#include "lruc/core/CpuFeatures.h"
#include "lruc_model.h"

#include <cstdio>
#include <cstring>

namespace lruc::cpu {
namespace {

/// Why this CPU cannot run the library, once known.
char refusal[1024];

int refuse(char *error, size_t errorSize) {
  if (error && errorSize > 0)
    std::snprintf(error, errorSize, "%s", refusal);
  return 1;
}

} // namespace

const lruc_model *modelForThisCpu(const lruc_model *model,
                                  const char *unitRecords) {
  // The unit's records, then the kernels'.
  char records[2048];
  std::snprintf(records, sizeof records, "%s %s", unitRecords,
                detail::kernelCpuFeatures());
  if (!core::describeMissingCpuFeatures(records, std::strlen(records), refusal,
                                        sizeof refusal))
    return model;
  // The same tables and manifest; every entry point refuses.
  static lruc_model refused;
  std::memcpy(&refused, model, sizeof refused);
  refused.init = [](uint64_t, float *, float *, char *error, size_t size) {
    return refuse(error, size);
  };
  refused.forward = [](int64_t, const float *, const float *,
                       const void *const *, float *const *, char *error,
                       size_t size) { return refuse(error, size); };
  refused.forward_train = [](int64_t, const float *, const float *,
                             const void *const *, const int64_t[2],
                             float *const *, float *, char *error,
                             size_t size) { return refuse(error, size); };
  refused.backward = [](int64_t, const float *, const float *,
                        const void *const *, const int64_t[2], float *, float *,
                        char *error,
                        size_t size) { return refuse(error, size); };
  refused.train_step = [](int64_t, float *, float *, float *, float *, float,
                          float, const void *const *, const int64_t[2],
                          float *const *, char *error,
                          size_t size) { return refuse(error, size); };
  if (model->step_reset)
    refused.step_reset = [](int64_t, float *, char *error, size_t size) {
      return refuse(error, size);
    };
  if (model->step)
    refused.step = [](int64_t, const float *, const float *, float *,
                      const void *const *, float *const *, char *error,
                      size_t size) { return refuse(error, size); };
  refused.accumulate_gradients =
      [](int64_t, const float *, float *, float *, float, const void *const *,
         const int64_t[2], float *const *, char *error,
         size_t size) { return refuse(error, size); };
  refused.apply_gradients = [](float *, float *, float *, const float *, float,
                               float, char *error,
                               size_t size) { return refuse(error, size); };
  return &refused;
}

} // namespace lruc::cpu
