//===- BlasBuffers.h - OpenBLAS's buffers under an address-space cap -*- C++
//-*-===//
//
// OpenBLAS maps a buffer of ~128 MiB (BUFFER_SIZE on x86-64) for every call
// running at once beyond the most that have run at once before, and keeps
// it. Where the mapping fails, OpenBLAS 0.3.21 (Debian 12's) retries
// forever: under an address-space cap (`ulimit -v`, a cluster's per-job
// virtual memory limit) a call would hang instead of failing. So under a
// cap the kernels count their BLAS calls running at once, and a call's
// workspace lease checks that the room left holds the buffers its calls
// may still need, and the malloc arenas the pool's threads may reserve
// before them (lruc::cpu::WorkspaceLease::take; the sizes are
// core::kBlasBufferBytes and core::kMallocArenaBytes). Internal to
// runtime/cpu.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CPU_BLASBUFFERS_H
#define LRUC_CPU_BLASBUFFERS_H

#include <cstdint>

namespace lruc::cpu::detail {

/// How many BLAS calls one call of a generated function made on this
/// thread may run at once: the pool's threads, or OpenBLAS's own when the
/// pool has one thread; one within a part of a region.
int blasCallsAtOnce();

} // namespace lruc::cpu::detail

#endif // LRUC_CPU_BLASBUFFERS_H
