#!/usr/bin/env bash
# Measures model libraries' forward, train step and step mode on this CPU
# against the sgemm rate and memcpy bandwidth measured in the same run, with
# a per-op breakdown of the train step (libraries built with --profile).
#   bench/cpu/run.sh                      every Table 9 configuration (models/)
#   bench/cpu/run.sh MODEL.lru BATCH [ITERS] [-D NAME=VALUE ...]   one model
# Needs a built tree (tests/run.sh or examples/run.sh builds build/).
# OpenBLAS runs on one thread (its spinning threads hurt on small machines);
# set OPENBLAS_NUM_THREADS to change that.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/build/bin"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"

bench() { # MODEL BATCH ITERS [-D ...]
  local model="$1" batch="$2" iters="$3"
  shift 3
  "$bin/lruc" "$model" --profile "$@" -o "$out/model.so"
  echo "== $(basename "$model") $* (batch $batch)"
  "$bin/lruc-bench-cpu" "$out/model.so" "$batch" "$iters"
  echo
}

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores," \
  "OpenBLAS threads: $OPENBLAS_NUM_THREADS"
echo
if [ $# -ge 2 ]; then
  model="$1" batch="$2"
  iters="${3:-3}"
  shift $(( $# < 3 ? 2 : 3 ))
  bench "$model" "$batch" "$iters" "$@"
  exit 0
fi
# Table 9 of Orvieto et al. 2023 as written in models/, at batches that
# fit a 24 GiB, 2-core machine (the workspace is `lruc --stats`'s).
bench "$root/models/listops.lru" 8 3
bench "$root/models/text.lru" 2 3
bench "$root/models/retrieval.lru" 2 3
bench "$root/models/scifar.lru" 4 3
bench "$root/models/pathfinder.lru" 8 3
bench "$root/models/pathx.lru" 1 3
