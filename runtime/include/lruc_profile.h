/*===- lruc_profile.h - Per-op timings of a profiling model library -------===*
 *
 * `lruc model.lru --profile -o model.so` builds a library that, besides the
 * C ABI of lruc_model.h, counts the time of every op it runs (each kernel
 * call, each fused loop, each result copy) and exports two more symbols:
 *
 *     int32_t count;
 *     const lruc_profile_entry *ops = lruc_profile(&count);
 *     lruc_profile_reset();
 *
 * `lruc_profile` returns a snapshot of the counters since the library was
 * loaded or last reset, one entry per op of every entry point, in program
 * order; the snapshot stays valid until the next call. The counters are
 * atomic, so calls from several threads add up (their times then overlap).
 * Bench tools look the symbols up with dlsym; libraries built without
 * --profile lack them and pay nothing.
 *
 *===----------------------------------------------------------------------===*/

#ifndef LRUC_PROFILE_H
#define LRUC_PROFILE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lruc_profile_entry {
  const char *function; /* "train_step", "forward", ... */
  const char *op;       /* the IR op: "lru.matmul", "lru.fused", ... */
  const char *location; /* the model-file place it came from, or "" */
  uint64_t calls;
  uint64_t nanoseconds; /* summed over calls */
  double bytes;         /* operands read + results written, summed */
  double flops;         /* multiply-adds x 2 (matmuls; 0 for other ops) */
} lruc_profile_entry;

typedef const lruc_profile_entry *(*lruc_profile_fn)(int32_t *count);
typedef void (*lruc_profile_reset_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* LRUC_PROFILE_H */
