#!/usr/bin/env bash
# A GPU session's checks and measurements in one call of the device tool
# (GPU loans here are short and every start counts): unpacks a kit
# (bench/gpu/kit.sh), then runs the parts named, each under a time limit
# of its own so that one that hangs leaves the others their time, and packs
# every log into $OUT/session.tar.gz (the device tool brings back few
# files). Run from the repository root (gpu.py is the repository's).
#   bench/gpu/session.sh [--kit ARCHIVE] [PART...]
#     ARCHIVE: default .gpu-kit/kit.tar.xz (the device tool carries it
#     with `carry: [".gpu-kit"]`: the folder is not tracked)
#     PART, in the order given (default: check random bench jax):
#       check   device.sh check          every library against its CPU half
#       random  device.sh random         random models through the tools
#       bench   device.sh bench ITERS    steps/s against Table 4, scans, memory
#       jax     gpu.py --frameworks jax --matmul tf32   lruc against JAX
#       jax-bf16  the same with bfloat16 products on every side
#       step    gpu.py --step --frameworks torch        step mode per token
# Limits in seconds, each part's: LRUC_SESSION_LIMIT_<PART> (jax-bf16:
# LRUC_SESSION_LIMIT_JAX_BF16); defaults from the runs of docs/backend-cuda.md
# ("On a GPU machine"), so that the default parts fit the device tool's
# 600 s a call with the machine's start. LRUC_SESSION_ITERS (default 5):
# bench's; LRUC_SESSION_CONFIGS (default text,scifar,pathfinder): gpu.py's.
# Exit 1 when a part failed or ran out of time (the others still ran).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
archive="$root/.gpu-kit/kit.tar.xz"
if [ "${1:-}" = --kit ]; then archive="$2"; shift 2; fi
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(check random bench jax)
out="${OUT:-$PWD/gpu-out}"
logs="$out/session"
mkdir -p "$logs"
if [ ! -f "$archive" ]; then
  echo "session.sh: no kit at $archive (bench/gpu/kit.sh packs one)" >&2
  exit 2
fi
unpacked="$(mktemp -d)"
tar -xJf "$archive" -C "$unpacked" || exit 2
kit="$unpacked/lruc-gpu-kit"
iters="${LRUC_SESSION_ITERS:-5}"
configs="${LRUC_SESSION_CONFIGS:-text,scifar,pathfinder}"

declare -A limits=([check]=90 [random]=150 [bench]=150 [jax]=150
                   [jax-bf16]=150 [step]=90)
status=0
for part in "${parts[@]}"; do
  case "$part" in
    check) command=("$kit/device.sh" check) ;;
    random) command=("$kit/device.sh" random) ;;
    bench) command=("$kit/device.sh" bench "$iters") ;;
    jax) command=(python3 "$root/bench/compare/gpu.py" --kit "$kit" --frameworks jax
                  --matmul tf32 --iters 10 --configs "$configs") ;;
    jax-bf16) command=(python3 "$root/bench/compare/gpu.py" --kit "$kit" --frameworks jax
                       --matmul bf16 --iters 10 --configs "$configs") ;;
    step) command=(python3 "$root/bench/compare/gpu.py" --kit "$kit" --frameworks torch
                   --step --configs "$configs") ;;
    *) echo "session.sh: no part '$part' (check random bench jax jax-bf16 step)" >&2
       status=1; continue ;;
  esac
  variable="LRUC_SESSION_LIMIT_$(echo "$part" | tr 'a-z-' 'A-Z_')"
  limit="${!variable:-${limits[$part]}}"
  echo "== session.sh: $part (at most ${limit} s): ${command[*]}"
  start=$SECONDS
  # device.sh writes its own logs into $OUT; the part's output goes beside.
  OUT="$logs" timeout --kill-after=10 "$limit" "${command[@]}" \
    > "$logs/$part.out" 2>&1
  code=$?
  tail -25 "$logs/$part.out"
  case $code in
    0) verdict=ok ;;
    124|137) verdict="ran out of its ${limit} s"; status=1 ;;
    *) verdict="failed ($code)"; status=1 ;;
  esac
  echo "== session.sh: $part $verdict after $(( SECONDS - start )) s"
  echo "$part: $verdict, $(( SECONDS - start )) s" >> "$logs/summary.txt"
done
tar -czf "$out/session.tar.gz" -C "$out" session
echo "session.sh: logs in $out/session.tar.gz"
cat "$logs/summary.txt"
rm -rf "$unpacked"
exit $status
