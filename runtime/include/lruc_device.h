/*
 * lruc_device.h - a CUDA device for a model library's GPU half, from C.
 *
 * liblruc-device.so wraps the runtime's device (runtime/cuda: the CUDA
 * driver, NVRTC and cuBLAS opened at run time) in a C interface, so that a
 * program in another language (bench/reference/lruc_library.py, through
 * ctypes) can run a library's GPU schedule (lruc_gpu.h):
 *
 *     char error[512];
 *     lruc_device *d = lruc_device_open(0, error, sizeof error);
 *     lruc_device_load_kernels(d, lruc_cuda_source(), g->kernels,
 *                              g->num_kernels, error, sizeof error);
 *     void *w = lruc_device_allocate(d, g->workspace_bytes(batch), ...);
 *     g->forward(lruc_device_ops(d), w, batch, ...);  // device pointers
 *
 * Every function that can fail returns 0 on success (a pointer: non-null)
 * and otherwise writes the reason into `error`. Device memory is
 * addressed by plain pointers (unified addressing); copies go through
 * lruc_device_copy or the ops' `copy`, in order with the launches.
 * Without a GPU, the same calls run on a simulated driver where one is
 * named by $LRUC_CUDA_DRIVER and $LRUC_CUBLAS (tests/cuda).
 */
#ifndef LRUC_DEVICE_H
#define LRUC_DEVICE_H

#include "lruc_gpu.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lruc_device lruc_device;

/* CUDA device `ordinal`, or NULL: no driver, no such device, no cuBLAS. */
lruc_device *lruc_device_open(int ordinal, char *error, size_t error_size);
void lruc_device_close(lruc_device *device);
/* "NAME (sm_NN)". */
const char *lruc_device_description(const lruc_device *device);
/* The GEMMs' arithmetic: 0 fp32 (the default, the CPU library's), 1 TF32,
 * 2 bfloat16 inputs with fp32 sums; anything else is an error. */
int lruc_device_set_matmul(lruc_device *device, int precision, char *error,
                           size_t error_size);
/* Compiles `source` (a library's lruc_cuda_source()) through NVRTC, cached
 * on disk, and loads `names` (lruc_gpu_model.kernels) for the schedule. */
int lruc_device_load_kernels(lruc_device *device, const char *source,
                             const char *const *names, int count, char *error,
                             size_t error_size);
/* What a library's GPU entry points take. */
const lruc_gpu_ops *lruc_device_ops(const lruc_device *device);
void *lruc_device_allocate(lruc_device *device, size_t bytes, char *error,
                           size_t error_size);
void lruc_device_release(lruc_device *device, void *memory);
/* `bytes` from `src` to `dst` in direction `kind` (LRUC_COPY_*), in order
 * with the launches; a copy to the host has completed when it returns. */
int lruc_device_copy(lruc_device *device, void *dst, const void *src,
                     size_t bytes, int kind, char *error, size_t error_size);
/* Waits for everything queued. */
int lruc_device_synchronize(lruc_device *device, char *error,
                            size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* LRUC_DEVICE_H */
