/*
 * lruc_gpu.h - the GPU half of a model library (`lruc model.lru -o model.so`).
 *
 * Besides the CPU entry points of lruc_model.h, a model library exports
 *
 *     const lruc_gpu_model *g = lruc_gpu_model_get(LRUC_GPU_ABI_VERSION);
 *
 * the host schedule of its CUDA kernels (`lruc_cuda_source()`): for each
 * entry point, the kernels and GEMMs of `lruc --emit=cuda`'s launch plan
 * in order, with their arguments laid out in one device workspace. The
 * schedule calls no CUDA API itself: every launch, GEMM and copy goes
 * through the `lruc_gpu_ops` the caller passes (the runtime implements them
 * with the CUDA driver and cuBLAS; the tests with a CPU simulator).
 *
 * Every pointer an entry point takes is device memory, laid out as the
 * matching lruc_model entry point lays out host memory (parameter blocks,
 * inputs, outputs), but for `dropout_key`, `lr` and `step`, which are host
 * values the schedule copies into the workspace. `workspace` is device
 * memory of at least `workspace_bytes(batch)` bytes, aligned to 256 bytes,
 * not used by anything else during the call. An entry point returns 0, or
 * nonzero with a message in `error` (a failed callback, or bad data that a
 * kernel reported: a token, label or length out of range).
 *
 * The kernels report bad data in a status block in the workspace, which an
 * entry point reads back at its end (a copy to the host, which waits for
 * the device) unless the caller defers it (lruc_gpu_ops.defer_status):
 * then the call only queues its work, and the caller reads the block once
 * the work is done and asks status_error what it says.
 */
#ifndef LRUC_GPU_H
#define LRUC_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LRUC_GPU_ABI_VERSION 6u

/* Directions of lruc_gpu_ops.copy. */
enum {
  LRUC_COPY_DEVICE_TO_DEVICE = 0,
  LRUC_COPY_HOST_TO_DEVICE = 1,
  LRUC_COPY_DEVICE_TO_HOST = 2
};

/* Element types of the arrays of lruc_gpu_ops.gemm and of a library's
 * activations (lruc_gpu_model.activations). */
enum {
  LRUC_GPU_F32 = 0,
  LRUC_GPU_BF16 = 1 /* bfloat16 (`lruc --gpu-storage=bf16`) */
};

/* What the schedule asks of the device. Each returns 0 on success. */
typedef struct lruc_gpu_ops {
  void *context;
  /* Kernel `kernel` (an index into lruc_gpu_model.kernels) on `blocks`
   * blocks of `threads` threads; `args` as cuLaunchKernel's kernelParams.
   * `block_per_output`: a block reduction (its threads cooperate). */
  int (*launch)(void *context, int32_t kernel, int64_t blocks,
                int32_t threads, int32_t block_per_output, void **args);
  /* `count` independent row-major products C_i[m, n] = op(A_i) op(B_i),
   * op(X) = X, or X transposed when its flag is set; lda, ldb, ldc: the row
   * strides of A, B, C as stored; A_i = a + i * stride_a elements, and so
   * on for B and C. A stride may be zero (every product reads the same A or
   * B) or negative; no C_i overlaps another product's operands. A and B
   * hold `ab_type` elements, C `c_type` (LRUC_GPU_*): fp32 operands give
   * an fp32 C; bfloat16 operands, whose products are summed in fp32, give
   * either. */
  int (*gemm)(void *context, int32_t trans_a, int32_t trans_b, int64_t m,
              int64_t n, int64_t k, int32_t ab_type, const void *a, int64_t lda,
              int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b,
              int32_t c_type, void *c, int64_t ldc, int64_t stride_c,
              int64_t count);
  /* `bytes` from `src` to `dst`, in the direction `kind` (LRUC_COPY_*),
   * in order with the launches and GEMMs. `src` may be reused once it
   * returns; a copy to the host has completed when it returns. */
  int (*copy)(void *context, void *dst, const void *src, size_t bytes,
              int32_t kind);
  /* NULL, or the call defers reading its status block: instead of copying
   * it to the host at its end, it hands the block (device memory, `bytes`)
   * to `defer_status` and returns without waiting for the device. */
  int (*defer_status)(void *context, const void *status, size_t bytes);
} lruc_gpu_ops;

typedef struct lruc_gpu_model {
  uint32_t abi_version; /* LRUC_GPU_ABI_VERSION */
  uint32_t struct_size; /* sizeof(lruc_gpu_model) of the library */
  int32_t num_kernels;
  const char *const *kernels; /* the kernels' names in lruc_cuda_source() */
  /* Device workspace any entry point needs at `batch`. */
  size_t (*workspace_bytes)(int64_t batch);
  int (*forward)(const lruc_gpu_ops *ops, void *workspace, int64_t batch,
                 const float *params, const float *state,
                 const void *const *inputs, float *const *outputs,
                 char *error, size_t error_size);
  int (*forward_train)(const lruc_gpu_ops *ops, void *workspace,
                       int64_t batch, const float *params, const float *state,
                       const void *const *inputs, const int64_t dropout_key[2],
                       float *const *outputs, float *new_state, char *error,
                       size_t error_size);
  int (*backward)(const lruc_gpu_ops *ops, void *workspace, int64_t batch,
                  const float *params, const float *state,
                  const void *const *inputs, const int64_t dropout_key[2],
                  float *loss, float *grads, char *error, size_t error_size);
  int (*train_step)(const lruc_gpu_ops *ops, void *workspace, int64_t batch,
                    float *params, float *adam_m, float *adam_v, float *state,
                    float lr, float step, const void *const *inputs,
                    const int64_t dropout_key[2], float *const *outputs,
                    char *error, size_t error_size);
  /* Step mode, NULL where lruc_model's is (`carry`: device memory of
   * batch * lruc_model.carry_floats floats). */
  int (*step_reset)(const lruc_gpu_ops *ops, int64_t batch, float *carry,
                    char *error, size_t error_size);
  int (*step)(const lruc_gpu_ops *ops, void *workspace, int64_t batch,
              const float *params, const float *state, float *carry,
              const void *const *inputs, float *const *outputs, char *error,
              size_t error_size);
  /* Two per kernel: the bytes of its arrays (each read or written at least
   * once) that grow with the batch, per example, then the rest. Kernel k
   * at `batch` moves at least kernel_bytes[2k] * batch + kernel_bytes[2k+1]
   * bytes: what a kernel's achieved bandwidth is measured by. */
  const int64_t *kernel_bytes;
  /* What a deferred call's status block (lruc_gpu_ops.defer_status), read
   * back once its work is done, reports: 0 when nothing, else nonzero with
   * the message the call would have returned in `error`. `entry` is the
   * entry point called: "forward", "forward_train", "backward",
   * "train_step", "accumulate_gradients", "apply_gradients" or "step". */
  int (*status_error)(const char *entry, const void *status, char *error,
                      size_t error_size);
  /* How the kernels store the sequence-sized activations of the whole-
   * sequence entry points: LRUC_GPU_F32, or LRUC_GPU_BF16 (`lruc
   * --gpu-storage=bf16`: computed in fp32, stored in bfloat16, so that
   * results differ from the CPU entry points' by bfloat16's rounding).
   * Step mode is fp32 either way. */
  int32_t activations;
  /* Gradient accumulation, as lruc_model's (`grads`: device memory laid
   * out like the parameters). */
  int (*accumulate_gradients)(const lruc_gpu_ops *ops, void *workspace,
                              int64_t batch, const float *params, float *state,
                              float *grads, float scale,
                              const void *const *inputs,
                              const int64_t dropout_key[2],
                              float *const *outputs, char *error,
                              size_t error_size);
  int (*apply_gradients)(const lruc_gpu_ops *ops, void *workspace,
                         float *params, float *adam_m, float *adam_v,
                         const float *grads, float lr, float step, char *error,
                         size_t error_size);
} lruc_gpu_model;

/* NULL when the library speaks another version of this interface. */
const lruc_gpu_model *lruc_gpu_model_get(uint32_t abi_version);

#ifdef __cplusplus
}
#endif

#endif /* LRUC_GPU_H */
