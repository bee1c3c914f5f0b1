#!/usr/bin/env bash
# The GPU kit (bench/gpu/kit.sh) packed with one model, unpacked elsewhere
# and run by its device.sh on the simulated CUDA driver: the archive holds
# what device.sh needs, its check passes, and so do its train, its random
# (a random model file through the tools, run by bench/gpu/session.sh) and
# its bench's kernel tables (ctest's gpu-kit-simulated).
#   gpu-kit-simulated.sh BIN_DIR SIMULATED_CUDA_LIBRARY WORK_DIR
set -euo pipefail
bin="$1" simulated="$2" work="$3"
src="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf "$work"
mkdir -p "$work/unpacked"
# A baseline build's copy of each model (here this build's own lruc, with
# a flag that changes the kernels), for device.sh bench to time beside it.
LRUC_BIN="$bin" LRUC_BASELINE_BIN="$bin" LRUC_KIT_XZ_LEVEL=0 \
  LRUC_BASELINE_FLAGS="--cuda-scan-warps=4" LRUC_KIT_RANDOM_SEEDS=13 \
  "$src/bench/gpu/kit.sh" "$work/kit" tiny
tar -xJf "$work/kit/kit.tar.xz" -C "$work/unpacked"
kit="$work/unpacked/lruc-gpu-kit"
if cmp -s "$kit/models/tiny.so" "$kit/models/tiny.base.so"; then
  echo "kit.sh built the baseline without LRUC_BASELINE_FLAGS" >&2
  exit 1
fi
for file in bin/lruc-gpu-library-tests bin/lruc-bench-gpu bin/lruc-bench-gpu.base \
    bin/lru-train bin/lru-predict random/random_13.so random/random_13.manifest.json \
    random/random_end_to_end.py \
    lib/libopenblas.so.0 lib/liblruc-device.so models/tiny.so \
    models/tiny.base.so train/listops.so agree/listops_long.so \
    agree/listops_long.ast agree/pathx.so device.sh; do
  [ -e "$kit/$file" ] || { echo "the kit lacks $file" >&2; exit 1; }
done
"$bin/lruc-simulated-kernels" "$kit/models/tiny.so" -o "$kit/models/tiny.kernels.so"
# The kit carries its libraries' PTX for sm_90 (the simulated device's):
# tiny's, its baseline's, the train model's, the 7 agreement libraries'
# and the random model's, which the runs below find there; and their
# machine code (ptxas), which the simulated device declines, as a device
# of another architecture would, so that Device loads the PTX instead.
cached() { ls "$kit/cache/ptx" | sort; }
if [ "$(cached | grep -c '\.ptx$')" -ne 11 ] ||
    [ "$(cached | grep -c '\.sm_90\.cubin$')" -ne 11 ]; then
  echo "the kit's PTX cache: $(cached)" >&2
  exit 1
fi
before="$(cached)"
LRUC_CUDA_DRIVER="$simulated" LRUC_CUBLAS="$simulated" OUT="$work/out" \
  "$kit/device.sh" check tiny
# The model's two tests and the device's bfloat16 products (GpuProducts).
grep -q '\[  PASSED  \] 3 tests' "$work/out/check.log"
# Step mode ran as a CUDA graph (no fallback to launching kernel by kernel).
if grep -q "one by one" "$work/out/check.log"; then
  echo "step mode fell back from its CUDA graph" >&2
  exit 1
fi
# device.sh train, 4 steps: lru-train and lru-eval --stream on the GPU and
# on the CPU agree.
"$bin/lruc-simulated-kernels" "$kit/train/listops.so" \
  -o "$kit/train/listops.kernels.so"
LRUC_CUDA_DRIVER="$simulated" LRUC_CUBLAS="$simulated" OUT="$work/out" \
  LRUC_SIMULATED_KERNELS="$kit/train/listops.kernels.so" \
  "$kit/device.sh" train 4
# device.sh random, through session.sh (a session's parts from the
# archive, their logs in one tarball): the kit's random model (seed 13,
# width 32) through lru-train, lru-eval and lru-predict on the GPU path
# against the CPU (lruc-simulated-kernels from this build: the kit has no
# compiler).
PATH="$bin:$PATH" LRUC_RANDOM_GPU="$simulated" OUT="$work/session-out" \
  "$src/bench/gpu/session.sh" --kit "$work/kit/kit.tar.xz" random
grep -qx "random: ok, [0-9]* s" "$work/session-out/session/summary.txt"
tar -tzf "$work/session-out/session.tar.gz" > "$work/session-files.txt"
grep -qx "session/random-13.log" "$work/session-files.txt"
grep -q "^random_13: .*, gpu, gpu pieces, cpu to gpu ok$" \
  "$work/session-out/session/random-13.log"
# device.sh bench, 2 steps: every kernel's time in a CSV, and beside the
# baseline's library (here the same build's) kernel by kernel.
LRUC_CUDA_DRIVER="$simulated" LRUC_CUBLAS="$simulated" OUT="$work/out" \
  LRUC_SIMULATED_KERNELS="$kit/models/tiny.kernels.so" \
  "$kit/device.sh" bench 2 tiny > "$work/bench.log"
head -1 "$work/out/kernels-tiny.csv" |
  grep -qx 'call,kernel,launches,ms,bytes,gb_per_s,of_copy'
for call in forward backward step; do
  grep -q "^$call,${call}_[0-9]*_scan,1," "$work/out/kernels-tiny.csv" ||
    { echo "kernels-tiny.csv has no $call scan" >&2; exit 1; }
done
# The timed step-mode token at the batch: its kernels and GEMMs, those in
# the few-row kernel and in cuBLAS.
for call in step step-cublas; do
  grep -q "^$call: [0-9]* kernels, .* (GEMMs .* ms, gaps .* ms)" \
    "$work/out/bench-tiny.log" ||
    { echo "lruc-bench-gpu timed no $call token" >&2; exit 1; }
done
# Same library, same kernels: each of the base's rows has its match.
[ "$(wc -l < "$work/out/kernels-tiny-vs-base.csv")" -eq \
  "$(( $(wc -l < "$work/out/kernels-tiny-base.csv") - 1 ))" ] ||
  { echo "kernels-tiny-vs-base.csv lacks kernels" >&2; exit 1; }
grep -q "^tiny kernels, base ms -> new ms" "$work/out/bench-summary.txt"
# The summary's tiny row ends with step mode at the batch and its GEMMs'
# part of a token in the few-row kernel and in cuBLAS, all measured.
awk '$1 == "tiny" && $(NF-2) ~ /^[0-9.]+$/ && $(NF-1) ~ /^[0-9.]+$/ &&
     $NF ~ /^[0-9.]+$/ { ok = 1 }
     END { exit !ok }' "$work/out/bench-summary.txt" ||
  { echo "bench-summary.txt lacks step mode at the batch" >&2;
    cat "$work/out/bench-summary.txt" >&2; exit 1; }
# Train steps with bfloat16 products (--matmul bf16) timed beside the fp32
# and TF32 ones, in the summary's bf16 column with their paper ratio.
grep -Eq '^train_step bf16 +[0-9.]+ ms +[0-9.]+ steps/s' "$work/out/bench-tiny.log" ||
  { echo "lruc-bench-gpu lacks the bfloat16 products' train step" >&2; exit 1; }
awk 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "bf16") col = i }
     $1 == "tiny" && col && $col ~ /^[0-9.]+$/ { ok = 1 }
     END { exit !ok }' "$work/out/bench-summary.txt" ||
  { echo "bench-summary.txt lacks the bf16 column" >&2;
    cat "$work/out/bench-summary.txt" >&2; exit 1; }
# A model's bfloat16 library (kit.sh builds NAME.bf16.so for the Table 9
# models; here tiny's own library under that name, since the simulated
# driver runs one kernel library a process): device.sh bench times it
# beside the model and summarises it against the paper and the fp32 run.
cp "$kit/models/tiny.so" "$kit/models/tiny.bf16.so"
LRUC_CUDA_DRIVER="$simulated" LRUC_CUBLAS="$simulated" OUT="$work/out-bf16" \
  LRUC_SIMULATED_KERNELS="$kit/models/tiny.kernels.so" \
  "$kit/device.sh" bench 2 tiny > "$work/bench-bf16.log"
grep -Eq '^tiny +bf16 activations: +[0-9.]+ steps/s \([0-9.]+x paper, [0-9.]+x fp32\), tf32 +[0-9.]+ \([0-9.]+x paper, [0-9.]+x fp32\), memory [0-9]+ MiB$' \
  "$work/out-bf16/bench-summary.txt" ||
  { echo "bench-summary.txt lacks the bfloat16 library's line" >&2;
    cat "$work/out-bf16/bench-summary.txt" >&2; exit 1; }
rm "$kit/models/tiny.bf16.so"
# A baseline's lruc-bench-gpu from before --kernels (three arguments or its
# usage): the base still timed beside the model, without a kernel table.
mv "$kit/bin/lruc-bench-gpu.base" "$kit/bin/lruc-bench-gpu.base.real"
cat > "$kit/bin/lruc-bench-gpu.base" <<EOF
#!/usr/bin/env bash
[ \$# -eq 3 ] || { echo "lruc-bench-gpu: usage: lruc-bench-gpu model.so BATCH ITERS" >&2; exit 1; }
exec "$kit/bin/lruc-bench-gpu.base.real" "\$@"
EOF
chmod +x "$kit/bin/lruc-bench-gpu.base"
LRUC_CUDA_DRIVER="$simulated" LRUC_CUBLAS="$simulated" OUT="$work/out-old" \
  LRUC_SIMULATED_KERNELS="$kit/models/tiny.kernels.so" \
  "$kit/device.sh" bench 2 tiny > "$work/bench-old.log"
grep -q "^tiny base .* steps/s" "$work/out-old/bench-summary.txt"
grep -q "^tiny kernels: the baseline's lruc-bench-gpu lists none" \
  "$work/out-old/bench-summary.txt"
[ "$(cached)" = "$before" ] || { echo "NVRTC ran: the kit's PTX was not used" >&2; exit 1; }
