/*===- lruc_model.h - The C ABI of a compiled lruc model library ----------===*
 *
 * `lruc model.lru -o model.so` writes a shared library that exports one
 * symbol, `lruc_model_get`. Load it with dlopen, look the symbol up, and ask
 * for the ABI version this header describes:
 *
 *     const lruc_model *m = lruc_model_get(LRUC_ABI_VERSION);
 *     if (!m) { ... the library speaks another ABI version ... }
 *
 * It also exports `const char *lruc_cuda_source(void)`: the CUDA C++ of the
 * model's kernels (`lruc --emit=cuda`, docs/backend-cuda.md), for a runtime
 * that compiles them with NVRTC, and `lruc_gpu_model_get`, the schedule
 * that launches them (lruc_gpu.h). Look them up with dlsym; the CPU entry
 * points below need neither.
 *
 * Memory: the caller owns every buffer. All trainable parameters live in
 * one float block of `param_floats` floats, each at its `offset`; BatchNorm
 * running statistics in a second block of `state_floats`; the AdamW moments
 * are two more blocks shaped like the parameters. Inputs and outputs are
 * dense row-major arrays; the batch size is the leading dim of every input
 * whose shape starts with -1.
 *
 * Errors: every entry point returns 0 on success, or nonzero after writing
 * a NUL-terminated message (bad data: a token or label out of range, a
 * length outside [0, L]) into `error` (at most `error_size` bytes). Entry
 * points never abort the host process. A library is compiled for the CPU of
 * the machine that built it: on a CPU without its x86 extensions (AVX-512,
 * say) every entry point fails with a message that says so.
 *
 * Entry points are reentrant: calls on different buffers may run
 * concurrently.
 *
 * Step mode runs inference one step at a time, O(1) per step: what the
 * model carries from step to step (each recurrence's state, a running sum
 * for mean pooling) lives in a caller-owned carry block of
 * `batch * carry_floats` floats. Each carry (listed in the manifest's
 * "step" object with its name, shape and per-example offset) is a dense
 * [batch, ...] array starting at `batch * offset` floats; complex states
 * store re, im pairs, at even offsets (the block may hold padding between
 * carries). A zeroed block starts new sequences (`step_reset`).
 * After step t the outputs equal `forward`'s on the first t + 1 steps.
 *
 *===----------------------------------------------------------------------===*/

#ifndef LRUC_MODEL_H
#define LRUC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version 4 (1 had no step mode; 2's train_step wrote only the loss; 3 had
   no gradient accumulation). Bumped on any change to the structs or entry
   points below. */
#define LRUC_ABI_VERSION 4u

typedef enum lruc_dtype { LRUC_F32 = 0, LRUC_I32 = 1, LRUC_I64 = 2 } lruc_dtype;

/* The optimizer group of a parameter (docs/dialect.md, lru.param). */
typedef enum lruc_group {
  LRUC_GROUP_DECAY = 0,     /* AdamW with weight decay */
  LRUC_GROUP_RECURRENT = 1, /* lr x recurrent_lr_factor, no weight decay */
  LRUC_GROUP_STATE = 2      /* not trained: BatchNorm running statistics */
} lruc_group;

/* An input or output of the model. shape[0] == -1 is the batch. */
typedef struct lruc_tensor_info {
  const char *name; /* "tokens", "lengths", "labels", "features", ... */
  int32_t dtype;    /* lruc_dtype */
  int32_t rank;
  const int64_t *shape;
} lruc_tensor_info;

/* A parameter, or (group LRUC_GROUP_STATE) a running statistic. */
typedef struct lruc_param_info {
  const char *name; /* its place in the model: "blocks.0.lru.nu_log" */
  int32_t group;    /* lruc_group */
  int32_t rank;
  const int64_t *shape;
  uint64_t offset;  /* in floats, into the param block (or the state block) */
  uint64_t size;    /* in floats */
  const char *init; /* JSON: {"kind": "normal", "std": 0.5}, ... */
} lruc_param_info;

typedef struct lruc_model {
  uint32_t abi_version; /* LRUC_ABI_VERSION */
  uint32_t struct_size; /* sizeof(lruc_model) when built */
  const char *name;     /* the model's name in its .lru file */
  /* JSON with everything below, the model file's train settings and the
     scratch memory a CPU call of each entry point takes ("workspace":
     {"forward": {"per_example": P, "fixed": F}, ...}: P * batch + F bytes). */
  const char *manifest;

  uint64_t param_floats; /* the parameter block (and each AdamW moment) */
  uint64_t state_floats; /* the running-statistics block */
  int32_t num_params;    /* trainable, in block order */
  const lruc_param_info *params;
  int32_t num_state;
  const lruc_param_info *state;

  /* The model inputs, in call order (the dropout key, lr and step are
     separate arguments), and the outputs of `forward`: the loss (a scalar)
     then the predictions. Padding (the steps past each sequence's length)
     is never read: features and per-step targets there may hold anything,
     NaN and infinities too, and tokens and per-step labels any integer,
     -1 or past the vocabulary too (the library reads all of them as 0
     there); a NaN target at a real step is a value not scored. */
  int32_t num_inputs;
  const lruc_tensor_info *inputs;
  int32_t num_outputs;
  const lruc_tensor_info *outputs;

  /* Fills the parameter and state blocks with their initial values under
     `seed` (the same numbers as the reference interpreter). */
  int (*init)(uint64_t seed, float *params, float *state, char *error,
              size_t error_size);

  /* Inference: running statistics, no dropout. outputs[i] has the shape of
     outputs[i] above with the batch filled in. */
  int (*forward)(int64_t batch, const float *params, const float *state,
                 const void *const *inputs, float *const *outputs,
                 char *error, size_t error_size);

  /* Train mode: batch statistics, dropout keyed by dropout_key = {seed,
     step}. Also writes the updated running statistics to `new_state`. */
  int (*forward_train)(int64_t batch, const float *params,
                       const float *state, const void *const *inputs,
                       const int64_t dropout_key[2], float *const *outputs,
                       float *new_state, char *error, size_t error_size);

  /* The loss and its gradient with respect to every parameter (a block
     laid out like the parameters), in train mode. */
  int (*backward)(int64_t batch, const float *params, const float *state,
                  const void *const *inputs, const int64_t dropout_key[2],
                  float *loss, float *grads, char *error, size_t error_size);

  /* One AdamW step, in place: forward and backward in train mode, then
     params, adam_m, adam_v and state are updated. `step` counts from 1 (the
     bias correction); `lr` is this step's scheduled learning rate.
     `outputs` are forward_train's (the loss, then the predictions) before
     the update: a trainer reads the batch's loss and accuracy from them. */
  int (*train_step)(int64_t batch, float *params, float *adam_m,
                    float *adam_v, float *state, float lr, float step,
                    const void *const *inputs, const int64_t dropout_key[2],
                    float *const *outputs, char *error, size_t error_size);

  /* Step mode. NULL (and `step_reset` NULL) when the model cannot run
     causally; then `step_unavailable` says why, e.g. "step mode needs a
     causal model with one input sequence: a bidirectional recurrence reads
     steps that have not come yet (model.lru:14:5)". */
  const char *step_unavailable;
  uint64_t carry_floats; /* per example */
  /* The inputs of one step (the sequence inputs with length 1) and its
     outputs (the predictions after this step). */
  int32_t num_step_inputs;
  const lruc_tensor_info *step_inputs;
  int32_t num_step_outputs;
  const lruc_tensor_info *step_outputs;

  /* Zeroes the carry block of `batch` sequences: each starts anew. */
  int (*step_reset)(int64_t batch, float *carry, char *error,
                    size_t error_size);

  /* Feeds one step of `batch` sequences: reads and updates `carry` in
     place and writes the predictions, in inference mode (running
     statistics, no dropout). */
  int (*step)(int64_t batch, const float *params, const float *state,
              float *carry, const void *const *inputs, float *const *outputs,
              char *error, size_t error_size);

  /* Gradient accumulation: train_step in two halves, so that one update
     can follow the gradients of several batches (micro-batches of a batch
     too large for one call). accumulate_gradients runs forward and
     backward in train mode like train_step, adds `scale` times each
     gradient (of the batch's mean loss) to `grads` (laid out like the
     parameters; zero it before the first batch), updates `state` in place
     (the running statistics, batch by batch) and writes forward_train's
     outputs. apply_gradients is train_step's update on `grads`: gradient
     clipping, then AdamW on params, adam_m and adam_v in place. With
     scale 1 and one batch the two give train_step's results. */
  int (*accumulate_gradients)(int64_t batch, const float *params, float *state,
                              float *grads, float scale,
                              const void *const *inputs,
                              const int64_t dropout_key[2],
                              float *const *outputs, char *error,
                              size_t error_size);
  int (*apply_gradients)(float *params, float *adam_m, float *adam_v,
                         const float *grads, float lr, float step, char *error,
                         size_t error_size);
} lruc_model;

/* The model, if the library speaks `abi_version`; NULL otherwise. */
const lruc_model *lruc_model_get(uint32_t abi_version);

#ifdef __cplusplus
}
#endif

#endif /* LRUC_MODEL_H */
