#!/usr/bin/env bash
# Train steps per second of every Table 9 configuration on this machine's
# GPU at its Table 9 batch, against the paper's Table 4 (A100) figures, with
# the device's copy bandwidth measured in the same run. Needs a built tree
# and a GPU (lruc-bench-gpu says why it cannot run otherwise).
#   bench/gpu/run.sh [ITERS]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/build/bin"
iters="${1:-20}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# Orvieto et al. 2023, Table 4: LRU train steps/s on an A100.
declare -A paper=([scifar]=15.9 [listops]=2.1 [text]=14.7 [retrieval]=5.7
                  [pathfinder]=15.5 [pathx]=2.4)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
for name in scifar listops text retrieval pathfinder pathx; do
  model="$root/models/$name.lru"
  batch=$(sed -n 's/^ *batch \([0-9]*\).*/\1/p' "$model" | head -1)
  "$bin/lruc" "$model" -o "$out/$name.so"
  echo "== $name (batch $batch; paper, A100: ${paper[$name]} steps/s)"
  "$bin/lruc-bench-gpu" "$out/$name.so" "$batch" "$iters" | tee "$out/$name.txt"
  awk -v p="${paper[$name]}" '/steps\/s/ { printf "ratio to the paper: %.2fx\n", $4 / p }' "$out/$name.txt"
  echo
done
