#!/usr/bin/env bash
# lruc-gpu-library-tests on the simulated CUDA driver: a few models, shrunk,
# built by lruc (--portable, as the GPU kit builds them) with their simulated
# kernels beside them (ctest's
# cuda-gpu-library-simulated; on a GPU the same binary runs the kit's
# prebuilt libraries, bench/gpu/kit.sh).
#   gpu-library-simulated.sh BIN_DIR SIMULATED_CUDA_LIBRARY WORK_DIR
set -euo pipefail
bin="$1" simulated="$2" work="$3"
src="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf "$work"
mkdir -p "$work"
# --no-train: a shrunk model no longer fits its task's data (train_step
# stays, with default AdamW settings).
small=(-D L=12 -D H=8 -D N=6 -D DEPTH=1 --no-train --portable)
"$bin/lruc" "$src/examples/tiny.lru" --portable -o "$work/tiny.so"
"$bin/lruc" "$src/models/listops.lru" "${small[@]}" -D DROPOUT=0.3 -o "$work/listops.so"
"$bin/lruc" "$src/models/pathfinder.lru" "${small[@]}" -o "$work/pathfinder.so"
"$bin/lruc" "$src/models/retrieval.lru" "${small[@]}" -o "$work/retrieval.so"
"$bin/lruc" "$src/examples/tagging.lru" "${small[@]}" -o "$work/tagging.so"
"$bin/lruc" "$src/examples/token_tagging.lru" "${small[@]}" -o "$work/token_tagging.so"
# Dropout in fused kernels, 32 channels: the GLU's gradient sums its rows
# with the dropout's decisions drawn for 4 rows of a warp's 32 columns at
# once (13 steps: a partial last tile of rows, and of 128 neighbours in
# the kernels without sums).
"$bin/lruc" "$src/models/listops.lru" "${small[@]}" -D L=13 -D H=32 \
  -D DROPOUT=0.3 -o "$work/listops_h32.so"
# Longer sequences (40 steps: whole runs of a thread's steps, unrolled,
# and a partial one) with other scan block sizes (--cuda-scan-warps):
# ListOps' causal scan at 32 warps, Pathfinder's bidirectional one at 4.
"$bin/lruc" "$src/models/listops.lru" "${small[@]}" -D L=40 \
  --cuda-scan-warps=32 -o "$work/listops_w32.so"
"$bin/lruc" "$src/models/pathfinder.lru" "${small[@]}" -D L=40 \
  --cuda-scan-warps=4 -o "$work/pathfinder_w4.so"
# Sequences of several scan chunks (600 steps: 256, 256 and 88), each
# chunk a block that takes the end state of the block before: ListOps'
# causal scan (padded sequences: its gradient's reverse scan starts at each
# one's length) and Pathfinder's bidirectional one at 4 warps (a chunk in 4
# tiles); both keep enough of a state over 256 steps (|lambda| up to 0.99
# and 0.999) that a lost carry fails them. Blocks run last first (below).
"$bin/lruc" "$src/models/listops.lru" "${small[@]}" -D L=600 \
  -o "$work/listops_long.so"
"$bin/lruc" "$src/models/pathfinder.lru" "${small[@]}" -D L=600 \
  --cuda-scan-warps=4 -o "$work/pathfinder_long_w4.so"
# The generalised LRU's real scans with a decay per step, chained too; an
# odd N puts a complex carry after a real one of odd length (step mode's
# carries, padded to 8 bytes: the kernels' alignment is checked).
"$bin/lruc" "$src/examples/generalized.lru" --portable -D L=300 -D H=8 \
  -D N=5 -o "$work/generalized_long.so"
# Activations in bfloat16 (--gpu-storage=bf16), chained scans: the check
# reads the library's lruc_gpu_model.activations and loosens its
# whole-sequence tolerances (step mode stays fp32).
"$bin/lruc" "$src/models/pathfinder.lru" "${small[@]}" -D L=600 \
  --gpu-storage=bf16 -o "$work/pathfinder_long_bf16.so"
libraries=("$work"/{tiny,listops,listops_h32,pathfinder,retrieval,tagging,token_tagging,listops_w32,pathfinder_w4,listops_long,pathfinder_long_w4,generalized_long,pathfinder_long_bf16}.so)
for library in "${libraries[@]}"; do
  "$bin/lruc-simulated-kernels" "$library" -o "${library%.so}.kernels.so"
done
# Blocks in reverse order: a device promises no order, and the chunked
# scans must not count on one (lruc::gpu::ScanChain).
LRUC_CUDA_DRIVER="$simulated" LRUC_CUBLAS="$simulated" \
  LRUC_SIMULATED_BLOCK_ORDER=reverse LRUC_CACHE_DIR="$work/cache" \
  LRUC_NVRTC_OPTIONS=--Ofast-compile=max exec "$bin/lruc-gpu-library-tests" "${libraries[@]}"
