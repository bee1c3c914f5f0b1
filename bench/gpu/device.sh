#!/usr/bin/env bash
# On a GPU machine, in a kit unpacked from bench/gpu/kit.sh's archive:
#   device.sh check [MODEL...]         each model library's GPU schedule
#                                       against its own CPU entry points
#                                       (and Text's and Pathfinder's
#                                       bfloat16 copies; name one as
#                                       text.bf16)
#                                       (lruc-gpu-library-tests; pick
#                                       tests with GTEST_FILTER, e.g.
#                                       'GpuLibrary.text:GpuModelStep.*')
#   device.sh bench [ITERS [MODEL...]]  train steps/s of each Table 9
#                                       configuration at its Table 9 batch
#                                       (fp32, TF32 and bfloat16 GEMMs)
#                                       against the
#                                       paper's Table 4 (A100),
#                                       the scan kernels' bandwidth against a
#                                       device-to-device copy in the same run,
#                                       one block's forward+backward (the
#                                       model against its depth-1 copy),
#                                       step mode per token (a CUDA graph,
#                                       and kernel by kernel; at the batch
#                                       too, with its GEMMs' part of a
#                                       token, in the few-row kernel and
#                                       in cuBLAS), device memory
#                                       (lruc-bench-gpu); every kernel's
#                                       time in kernels-MODEL.csv, and
#                                       with bfloat16 activations too
#                                       (NAME.bf16.so, --gpu-storage=bf16),
#                                       beside a kit's baseline libraries
#                                       kernel by kernel
#                                       (kernels-MODEL-vs-base.csv)
#   device.sh train [STEPS]             lru-train on the GPU and on the CPU
#                                       (ListOps shrunk, generated data):
#                                       the same losses and parameters within
#                                       1e-3; lru-eval --stream on both
#   device.sh random [SEED...]          random model files (the kit's
#                                       seeds, or those named) through
#                                       lru-train, lru-eval and lru-predict
#                                       on the GPU against the CPU, within
#                                       1e-3 (random_end_to_end.py
#                                       --prebuilt; LRUC_RANDOM_GPU: the
#                                       simulated driver instead)
#   device.sh agree [FRAMEWORKS]        from the repository root: PyTorch
#                                       and JAX (default torch,jax) against
#                                       each model's GPU half, shrunk
#                                       (bench/reference/agree.py --device
#                                       gpu; the machine's Python with
#                                       torch, jax and safetensors)
#   device.sh all [ITERS]               check, train and bench, every model
# Logs go to $OUT (the device tool's folder that comes back) or ./gpu-out;
# NVRTC's PTX is cached in $LRUC_CACHE_DIR (default: beside the kit), so a
# second call on the same machine skips the compiles. Exit 1 when a check
# or a benchmark failed.
set -uo pipefail
kit="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LRUC_CACHE_DIR="${LRUC_CACHE_DIR:-$kit/cache}"
# cuBLAS and NVRTC: the runtime looks on the loader's path and in
# /usr/local/cuda/lib64; where the only copies came with Python wheels
# (nvidia-cublas, nvidia-cuda-nvrtc), their folder joins the path.
for name in libcublas.so.13 libnvrtc.so.13; do
  if ! ldconfig -p | grep -q "$name" && [ ! -e "/usr/local/cuda/lib64/$name" ]; then
    found="$(find /opt /usr/local/lib /usr/lib -path '*nvidia*' -name "$name" \
      2>/dev/null | head -1)"
    [ -n "$found" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"
  fi
done
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
what="${1:-all}"
shift $(( $# > 0 ? 1 : 0 ))
status=0

models() { # the kit's libraries (not the depth-1, baseline and bfloat16
  # copies), or those named (text.bf16: the bfloat16 copy)
  if [ $# -eq 0 ]; then
    ls "$kit"/models/*.so | grep -v '\.depth1\.so$\|\.base\.so$\|\.bf16\.so$'; else
    for name in "$@"; do echo "$kit/models/$name.so"; done; fi
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  2>&1 | tee "$out/device.txt"

if [ "$what" = check ] || [ "$what" = all ]; then
  [ "$what" = all ] && set --
  mapfile -t libraries < <(models "$@")
  # By default also two bfloat16 copies (kit.sh's NAME.bf16.so): cuBLAS's
  # bfloat16 GEMMs and the kernels' bfloat16 arrays on a device, against
  # the CPU within the looser tolerances the library's activations ask for.
  if [ $# -eq 0 ]; then
    for name in text pathfinder; do
      [ -f "$kit/models/$name.bf16.so" ] && libraries+=("$kit/models/$name.bf16.so")
    done
  fi
  "$kit/bin/lruc-gpu-library-tests" --gtest_output="xml:$out/check.xml" \
    "${libraries[@]}" 2>&1 | tee "$out/check.log" || status=1
fi

has_part() { # train/, agree/ or random/: a kit packed with kit.sh --models-only has none
  [ -d "$kit/$1" ] && return 0
  echo "device.sh $1: the kit has no $1/ (packed with kit.sh --models-only)"
  status=1
  return 1
}

if { [ "$what" = train ] || [ "$what" = all ]; } && has_part train; then
  steps=40
  [ "$what" = train ] && steps="${1:-40}"
  library="$kit/train/listops.so" data="$out/listops-data"
  "$kit/bin/lru-data" listops --out "$data" --train 1024 --val 128 \
    --test 128 || status=1
  for device in gpu cpu; do
    "$kit/bin/lru-train" "$library" --device "$device" --data "$data" \
      --steps "$steps" --eval-every $(( (steps + 1) / 2 )) --max-eval 128 \
      --batch 16 --out "$out/train-$device" 2>&1 | tee "$out/train-$device.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    "$kit/bin/lru-eval" "$library" "$out/train-gpu/last.safetensors" \
      --data "$data" --device "$device" --stream 0 --stream-every 250 \
      > "$out/stream-$device.log" 2>&1 || status=1
  done
  python3 "$kit/train/close_metrics.py" "$out/train-cpu/metrics.jsonl" \
    "$out/train-gpu/metrics.jsonl" 1e-3 || status=1
  python3 "$kit/train/same_tensors.py" "$out/train-cpu/last.safetensors" \
    "$out/train-gpu/last.safetensors" --atol 1e-3 || status=1
  # The streamed classes at every printed step, GPU against CPU.
  if diff <(grep -v "steps in\|compiling" "$out/stream-cpu.log") \
      <(grep -v "steps in\|compiling" "$out/stream-gpu.log"); then
    grep "steps in" "$out/stream-gpu.log" "$out/stream-cpu.log"
  else
    echo "device.sh: lru-eval --stream differs between the GPU and the CPU"
    status=1
  fi
fi

if [ "$what" = random ] && has_part random; then
  seeds=("$@")
  if [ ${#seeds[@]} -eq 0 ]; then
    for library in "$kit"/random/random_*.so; do
      name="$(basename "$library" .so)"
      seeds+=("${name#random_}")
    done
  fi
  # Each seed's data, runs and checkpoints beside the kit; its log in $OUT.
  for seed in "${seeds[@]}"; do
    PATH="$kit/bin:$PATH" python3 "$kit/random/random_end_to_end.py" "$seed" \
      "$kit/random/work-$seed" --prebuilt "$kit/random" --gpu "${LRUC_RANDOM_GPU:-device}" \
      2>&1 | tee "$out/random-$seed.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
fi

if [ "$what" = agree ] && has_part agree; then
  frameworks="${1:-torch,jax}"
  agree_py="$PWD/bench/reference/agree.py"
  if [ ! -f "$agree_py" ]; then
    echo "device.sh agree: run it from the repository root (no $agree_py)"
    status=1
  else
    for library in "$kit"/agree/*.so; do
      name="$(basename "$library" .so)"
      python3 "$agree_py" --library "$library" --ast "$kit/agree/$name.ast" \
        --device gpu --device-library "$kit/lib/liblruc-device.so" \
        --frameworks "$frameworks" --keep "$out/agree-$name" 2>&1 |
        tee "$out/agree-$name.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    done
  fi
fi

if [ "$what" = bench ] || [ "$what" = all ]; then
  iters="${1:-20}"
  shift $(( $# > 0 ? 1 : 0 ))
  [ "$what" = all ] && set --
  # Orvieto et al. 2023, Table 4: LRU train steps/s on an A100.
  declare -A paper=([scifar]=15.9 [listops]=2.1 [text]=14.7 [retrieval]=5.7
                    [pathfinder]=15.5 [pathx]=2.4)
  names=("$@")
  [ ${#names[@]} -eq 0 ] && names=(scifar listops text retrieval pathfinder pathx)
  summary="$out/bench-summary.txt"
  printf '%-11s %6s %8s %8s %7s %8s %7s %8s %7s %9s %9s %12s %8s %9s %9s %10s %10s %10s\n' model \
    batch "steps/s" paper ratio "tf32" ratio "bf16" ratio "scan fwd" "scan bwd" \
    "block f+b ms" "of step" "token us" "no graph" "batch us" "GEMMs us" \
    "cuBLAS us" > "$summary"
  rm -f "$out/bench-bf16.txt"
  for name in "${names[@]}"; do
    batch="$(cat "$kit/models/$name.batch")"
    echo "== $name (batch $batch; paper, A100: ${paper[$name]:-?} steps/s)"
    if ! "$kit/bin/lruc-bench-gpu" "$kit/models/$name.so" "$batch" "$iters" \
        --kernels "$out/kernels-$name.csv" 2>&1 | tee "$out/bench-$name.log"; then
      status=1
      continue
    fi
    log="$out/bench-$name.log"
    steps="$(awk '/^train_step  / { print $4 }' "$log")"
    tf32="$(awk '/^train_step tf32/ { print $5 }' "$log")"
    bf16="$(awk '/^train_step bf16/ { print $5 }' "$log")"
    scans=($(awk '/scan kernels:/ { print $NF == "bandwidth" ? $(NF-3) : "-" }' \
      "$log"))
    token="$(awk '/^step mode .* \(batch 1: .*graph\)/ { print $3 }' "$log")"
    launched="$(awk '/^step mode .* \(batch 1: .*one by one\)/ { print $3 }' "$log")"
    # Step mode at the batch (a CUDA graph), and the GEMMs' part of one
    # token timed kernel by kernel (the "  GEMMs: N, X ms" line under
    # "step: ..."), in the few-row kernel and in cuBLAS ("step-cublas: ...").
    batched="$(awk -v b="$batch" '$0 ~ "^step mode .* \\(batch " b ": .*graph\\)" { print $3 }' "$log")"
    gemmsOf() { awk -v c="$1:" '/^[a-z]/ { call = $1 }
      call == c && /^  GEMMs: / { printf "%.0f", $3 * 1000 }' "$log"; }
    gemms="$(gemmsOf step)" cublas="$(gemmsOf step-cublas)"
    # One block: (forward+backward at full depth - at depth 1) / (depth - 1).
    block=- share=-
    if [ -f "$kit/models/$name.depth1.so" ]; then
      depth="$(cat "$kit/models/$name.depth")"
      if "$kit/bin/lruc-bench-gpu" "$kit/models/$name.depth1.so" "$batch" \
          "$iters" > "$out/bench-$name-depth1.log" 2>&1; then
        read -r block share < <(awk -v d="$depth" '
          /^train_step  / { if (FILENAME == ARGV[1]) step = $2 }
          /^forward\+backward/ { fb[FILENAME] = $2 }
          END { b = (fb[ARGV[1]] - fb[ARGV[2]]) / (d - 1)
                printf "%.2f %.0f%%\n", b, 100 * b / step }' \
          "$log" "$out/bench-$name-depth1.log")
      else
        cat "$out/bench-$name-depth1.log"
        status=1
      fi
    fi
    # (Parenthesised: in awk, `print a > b` writes a to a file named b.)
    ratio() { awk -v s="$1" -v p="${paper[$name]:-0}" \
      'BEGIN { print (p > 0 && s > 0 ? s / p : 0) }'; }
    printf '%-11s %6s %8s %8s %6.2fx %8s %6.2fx %8s %6.2fx %9s %9s %12s %8s %9s %9s %10s %10s %10s\n' \
      "$name" "$batch" "$steps" "${paper[$name]:-?}" "$(ratio "$steps")" \
      "${tf32:--}" "$(ratio "${tf32:-0}")" "${bf16:--}" "$(ratio "${bf16:-0}")" \
      "${scans[0]:--}" "${scans[1]:--}" \
      "$block" "$share" "${token:--}" "${launched:--}" "${batched:--}" \
      "${gemms:--}" "${cublas:--}" >> "$summary"
    # The same model with bfloat16 activations (kit.sh's NAME.bf16.so):
    # its train steps/s against the paper and against the fp32 library's.
    if [ -f "$kit/models/$name.bf16.so" ]; then
      bf16_log="$out/bench-$name-bf16.log"
      if "$kit/bin/lruc-bench-gpu" "$kit/models/$name.bf16.so" "$batch" \
          "$iters" --kernels "$out/kernels-$name-bf16.csv" > "$bf16_log" 2>&1; then
        awk -v name="$name" -v p="${paper[$name]:-0}" -v s32="$steps" \
            -v t32="${tf32:-0}" '
          /^train_step  / { s = $4 }
          /^train_step tf32/ { t = $5 }
          /^device memory/ { memory = $3 " MiB" }
          END { printf "%-11s bf16 activations: %8s steps/s (%.2fx paper, %.2fx fp32), tf32 %8s (%.2fx paper, %.2fx fp32), memory %s\n",
                name, s, (p > 0 ? s / p : 0), (s32 > 0 ? s / s32 : 0),
                t, (p > 0 ? t / p : 0), (t32 > 0 ? t / t32 : 0), memory }' \
          "$bf16_log" >> "$out/bench-bf16.txt"
      else
        cat "$bf16_log"
        status=1
      fi
    fi
  done
  [ -f "$out/bench-bf16.txt" ] && cat "$out/bench-bf16.txt" >> "$summary"
  # The baseline's libraries (kit.sh with LRUC_BASELINE_BIN), each timed
  # after the model's own run above, on the same device, by the baseline's
  # own lruc-bench-gpu (they speak its GPU ABI; a kit packed before kits
  # carried it: this kit's).
  base_bench="$kit/bin/lruc-bench-gpu.base"
  [ -x "$base_bench" ] || base_bench="$kit/bin/lruc-bench-gpu"
  for name in "${names[@]}"; do
    [ -f "$kit/models/$name.base.so" ] || continue
    batch="$(cat "$kit/models/$name.batch")"
    base_log="$out/bench-$name-base.log"
    rm -f "$out/kernels-$name-base.csv"
    "$base_bench" "$kit/models/$name.base.so" "$batch" "$iters" \
      --kernels "$out/kernels-$name-base.csv" > "$base_log" 2>&1
    base_status=$?
    # A baseline older than --kernels: timed without its kernel table.
    if [ $base_status -ne 0 ] && grep -q "usage: lruc-bench-gpu" "$base_log"; then
      "$base_bench" "$kit/models/$name.base.so" "$batch" "$iters" > "$base_log" 2>&1
      base_status=$?
    fi
    if [ $base_status -eq 0 ]; then
      for log in "$base_log" "$out/bench-$name.log"; do
        awk -v what="$name $([ "$log" = "$out/bench-$name.log" ] && echo new || echo base)" '
          /^train_step  / { steps = $4 }
          /^train_step tf32/ { tf32 = $5 }
          /scan kernels:/ { scan[++n] = $(NF-3) }
          /^device memory/ { memory = $3 " MiB" }
          END { printf "%-16s %8s steps/s, tf32 %8s, scan fwd %s, bwd %s, memory %s\n",
                what, steps, tf32, scan[1], scan[2], memory }' "$log"
      done >> "$summary"
      if [ ! -f "$out/kernels-$name-base.csv" ]; then
        echo "$name kernels: the baseline's lruc-bench-gpu lists none" >> "$summary"
        continue
      fi
      # Kernel by kernel, where the two libraries name a kernel alike (the
      # same IR, another emitter): base ms, new ms, new / base; the slowest
      # base kernels first.
      awk -F, 'NR == FNR { if (FNR > 1) base[$1 "," $2] = $4; next }
        FNR > 1 && ($1 "," $2) in base {
          printf "%s,%s,%.4f,%.4f,%.3f\n", $1, $2, base[$1 "," $2], $4,
            $4 / base[$1 "," $2] }' \
        "$out/kernels-$name-base.csv" "$out/kernels-$name.csv" |
        sort -t, -k3,3 -g -r > "$out/kernels-$name-vs-base.csv"
      { echo "$name kernels, base ms -> new ms (new / base), slowest 12:"
        head -12 "$out/kernels-$name-vs-base.csv" |
          awk -F, '{ printf "  %-8s %-28s %8.3f -> %8.3f (%.3f)\n", $1, $2, $3, $4, $5 }'
      } >> "$summary"
    else
      cat "$base_log"
      status=1
    fi
  done
  echo
  cat "$summary"
fi
exit $status
