//===- ModelForThisCpu.h - A library's own check of the CPU -----*- C++ -*-===//
//
// A model library's code is compiled for the extensions of the CPU that
// built it (-march=native). The tools check a library's `.lruc_cpu` records
// before they load it (lruc/core/CpuFeatures.h); a program of a user's that
// loads it with dlopen gets the same check from the library itself: on a
// CPU without the extensions, lruc_model_get answers with a model whose
// entry points each fail with why, instead of one that dies of SIGILL at
// its first call.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CPU_MODELFORTHISCPU_H
#define LRUC_CPU_MODELFORTHISCPU_H

struct lruc_model;

namespace lruc::cpu {

/// `model` where this CPU has every extension named in `unitRecords` (the
/// generated model unit's) and in the kernels' records; else a copy of
/// `model` whose entry points each write why (describeMissingCpuFeatures)
/// and fail. Compiled for any x86-64 CPU: the generated lruc_model_get calls
/// it before any code compiled for the extensions runs.
const lruc_model *modelForThisCpu(const lruc_model *model,
                                  const char *unitRecords);

namespace detail {
/// The kernels' records (Threads.cpp, compiled with the kernels' flags).
const char *kernelCpuFeatures();
} // namespace detail

} // namespace lruc::cpu

#endif // LRUC_CPU_MODELFORTHISCPU_H
