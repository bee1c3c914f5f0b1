#!/usr/bin/env bash
# Packs what a GPU machine needs to check and time lruc without building it
# (the machines that lend a GPU here have CUDA, PyTorch and JAX but no
# LLVM/MLIR, so lruc cannot be built there): every model of models/ and
# examples/ as a portable model library (`lruc --portable`: any x86-64 CPU
# with AVX2 and FMA) with its Table 9 batch and its architecture
# (--emit=ast, for bench/compare/gpu.py), their PTX and machine code for
# sm_90 in the kit's PTX cache (lruc-kit-ptx), lruc-gpu-library-tests,
# lruc-bench-gpu and the trainer, the shared libraries they load that a CUDA
# image may lack (OpenBLAS and the like), and device.sh, in one compressed
# archive (the device tool carries at most 64 MiB).
#   bench/gpu/kit.sh [--models-only] [KIT_DIR [MODEL...]]
#                                       (default .gpu-kit, every model)
# --models-only leaves out device.sh train's, agree's and random's
# libraries (a kit for device.sh check and bench and bench/compare/gpu.py;
# packed in a tenth of the time).
# Needs a built tree ($LRUC_BIN, default build/bin). With
# LRUC_BASELINE_BIN (another build's bin, say of the previous main), each
# model is also built by that lruc as NAME.base.so, which device.sh bench
# times beside NAME.so in the same run, with that build's own
# lruc-bench-gpu (bin/lruc-bench-gpu.base: the two builds' GPU ABIs may
# differ). LRUC_BASELINE_FLAGS adds lruc flags to the baseline's builds:
# with LRUC_BASELINE_BIN=build/bin and, say, --cuda-column-loops=false, a
# feature of this build is timed against itself turned off, with no second
# build. LRUC_KIT_XZ_LEVEL (default 6) trades the archive's size for the
# time xz takes (the tests, which unpack it at once, use 0). Then, on the GPU
# machine, in the repository:
#   tar -xJf .gpu-kit/kit.tar.xz -C /tmp && /tmp/lruc-gpu-kit/device.sh all
set -euo pipefail
shopt -s nullglob # --models-only: no train/*.so, agree/*.so or random/*.so
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${LRUC_BIN:-$root/build/bin}"
models_only=0
if [ "${1:-}" = --models-only ]; then models_only=1; shift; fi
kit="${1:-$root/.gpu-kit}"
shift $(( $# > 0 ? 1 : 0 ))
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for file in "$root"/models/*.lru "$root"/examples/*.lru; do
    names+=("$(basename "$file" .lru)")
  done
fi
stage="$kit/lruc-gpu-kit"
rm -rf "$stage" "$kit/kit.tar.xz"
mkdir -p "$stage/bin" "$stage/lib" "$stage/models"

for name in "${names[@]}"; do
  file="$root/models/$name.lru"
  [ -f "$file" ] || file="$root/examples/$name.lru"
  [ -f "$file" ] || { echo "kit.sh: no model $name in models/ or examples/" >&2; exit 2; }
  # The model's training batch (the language's default, 32, where it
  # names none).
  batch="$(sed -n 's/^ *batch \([0-9]*\).*/\1/p' "$file" | head -1)"
  echo "${batch:-32}" > "$stage/models/$name.batch"
  # The architecture, for bench/compare/gpu.py's JAX and PyTorch models.
  "$bin/lruc" "$file" --no-train --emit=ast > "$stage/models/$name.ast"
  echo "kit.sh: lruc $file --portable" >&2
  "$bin/lruc" "$file" --portable -o "$stage/models/$name.so" &
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
  # A Table 9 model also at depth 1: device.sh times one block as the
  # difference of the two, divided by the blocks between them.
  depth="$(sed -n 's/^let DEPTH = \([0-9]*\)$/\1/p' "$file")"
  if [ "$file" = "$root/models/$name.lru" ] && [ "${depth:-1}" -gt 1 ]; then
    echo "$depth" > "$stage/models/$name.depth"
    "$bin/lruc" "$file" --portable -D DEPTH=1 -o "$stage/models/$name.depth1.so" &
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
  fi
  # A Table 9 model also with bfloat16 activations (--gpu-storage=bf16),
  # which device.sh bench times beside it (`device.sh check NAME.bf16`
  # checks it against its CPU entry points).
  if [ "$file" = "$root/models/$name.lru" ]; then
    "$bin/lruc" "$file" --portable --gpu-storage=bf16 -o "$stage/models/$name.bf16.so" &
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
  fi
  if [ -n "${LRUC_BASELINE_BIN:-}" ]; then
    echo "kit.sh: baseline $LRUC_BASELINE_BIN/lruc $file --portable ${LRUC_BASELINE_FLAGS:-}" >&2
    # shellcheck disable=SC2086 # the flags split on purpose
    "$LRUC_BASELINE_BIN/lruc" "$file" --portable ${LRUC_BASELINE_FLAGS:-} \
      -o "$stage/models/$name.base.so" &
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
  fi
done
for job in $(jobs -p); do wait "$job"; done # each one's failure stops here

# device.sh train: Table 9's ListOps shrunk (with dropout) for a short run
# on generated data, on the GPU and on the CPU, compared by the trainer
# tests' scripts.
if [ $models_only = 0 ]; then
  mkdir -p "$stage/train"
  "$bin/lruc" "$root/models/listops.lru" --portable -D DEPTH=2 -D H=32 -D N=32 \
    -D DROPOUT=0.1 -o "$stage/train/listops.so"
  cp "$root/tests/lit/trainer/Inputs/close_metrics.py" \
    "$root/tests/lit/trainer/Inputs/same_tensors.py" \
    "$root/tests/lit/trainer/Inputs/safetensors_file.py" "$stage/train/"

  # device.sh agree: the library of every model of models/, shrunk as the
  # agreement tests shrink them (tests/lit/reference), with its AST, for
  # bench/reference/agree.py --device gpu (PyTorch and JAX against the GPU
  # half); ListOps also at 300 steps (its scans chained in two chunks).
  mkdir -p "$stage/agree"
  agree=(
    "listops models/listops.lru -D L=6 -D H=4 -D N=3 -D DEPTH=1 -D DROPOUT=0.3"
    "listops_long models/listops.lru -D L=300 -D H=4 -D N=3 -D DEPTH=1 -D DROPOUT=0.3"
    "text models/text.lru -D L=6 -D H=4 -D N=3 -D DEPTH=1"
    "retrieval models/retrieval.lru -D L=6 -D H=4 -D N=3 -D DEPTH=1"
    "scifar models/scifar.lru -D L=6 -D H=4 -D N=3 -D DEPTH=2 -D DROPOUT=0.25"
    "pathfinder models/pathfinder.lru -D L=6 -D H=4 -D N=3 -D DEPTH=1"
    "pathx models/pathx.lru -D L=6 -D H=4 -D N=3 -D DEPTH=1")
  for line in "${agree[@]}"; do
    read -r name file defines <<< "$line"
    # shellcheck disable=SC2086 # the -D pairs split on purpose
    "$bin/lruc" "$root/$file" --no-train --emit=ast $defines > "$stage/agree/$name.ast"
    # shellcheck disable=SC2086
    "$bin/lruc" "$root/$file" --no-train --portable $defines -o "$stage/agree/$name.so"
  done
fi
# device.sh random: random model files (lruc-random-model) through
# lru-train, lru-eval and lru-predict on the GPU against the CPU
# (tests/lit/trainer/Inputs/random_end_to_end.py --prebuilt), each seed's
# file, portable library and manifest prepared here. The seeds of the
# trainer tests (tests/lit/trainer/random-models*.test), or
# LRUC_KIT_RANDOM_SEEDS.
if [ $models_only = 0 ]; then
  mkdir -p "$stage/random"
  inputs="$root/tests/lit/trainer/Inputs"
  for seed in ${LRUC_KIT_RANDOM_SEEDS:-1 10 13 18 29}; do
    PATH="$bin:$PATH" python3 "$inputs/random_end_to_end.py" "$seed" \
      --prepare "$stage/random" >&2
  done
  cp "$inputs/random_end_to_end.py" "$inputs/safetensors_file.py" \
    "$inputs/close_metrics.py" "$inputs/streamed_matches.py" \
    "$inputs/stream_pieces.py" "$stage/random/"
fi
cp "$bin/../lib/liblruc-device.so" "$stage/lib/"

# Every library's PTX for sm_90 (H100, H200), in the cache device.sh points
# NVRTC at: a device whose NVRTC has this version compiles nothing; and its
# machine code (ptxas), which spares the device's driver its compile of the
# PTX at each fresh machine's first load. Without NVRTC here the kit goes
# without (the device compiles).
if ! printf '%s\n' "$stage"/models/*.so "$stage"/train/*.so "$stage"/agree/*.so \
    "$stage"/random/*.so |
    grep -v '\.base\.so$' |
    LRUC_CACHE_DIR="$stage/cache" xargs -P "$(nproc)" -n 1 "$bin/lruc-kit-ptx" sm_90 >&2; then
  echo "kit.sh: no PTX in the kit (lruc-kit-ptx failed above); the GPU machine will compile it" >&2
  rm -rf "$stage/cache"
fi
# The baseline's libraries may speak an older GPU ABI than this build's
# binaries: they are timed by the baseline's own lruc-bench-gpu, and their
# PTX cached by the baseline's own lruc-kit-ptx where it has one.
if [ -n "${LRUC_BASELINE_BIN:-}" ] && [ -d "$stage/cache" ]; then
  base_ptx="$LRUC_BASELINE_BIN/lruc-kit-ptx"
  [ -x "$base_ptx" ] || base_ptx="$bin/lruc-kit-ptx"
  ls "$stage"/models/*.base.so |
    LRUC_CACHE_DIR="$stage/cache" xargs -P "$(nproc)" -n 1 "$base_ptx" sm_90 >&2 ||
    echo "kit.sh: the baseline's PTX is not in the kit; the GPU machine will compile it" >&2
fi

for tool in lruc-gpu-library-tests lruc-bench-gpu lru-train lru-eval lru-predict lru-data; do
  cp "$bin/$tool" "$stage/bin/"
done
if [ -n "${LRUC_BASELINE_BIN:-}" ]; then
  cp "$LRUC_BASELINE_BIN/lruc-bench-gpu" "$stage/bin/lruc-bench-gpu.base"
fi
cp "$root/bench/gpu/device.sh" "$stage/"

# Shared libraries beyond the C and C++ runtimes (which the machine's own
# newer ones replace): OpenBLAS, gfortran, fmt, libpng, ...
for elf in "$stage"/bin/* "$stage"/lib/*.so "$stage"/models/*.so \
    "$stage"/train/*.so "$stage"/agree/*.so "$stage"/random/*.so; do
  ldd "$elf" | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r library; do
  case "$(basename "$library")" in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|\
    libdl.so*|librt.so*|libz.so*) ;;
    *) cp -L "$library" "$stage/lib/" ;;
  esac
done

tar -C "$kit" -cf - lruc-gpu-kit | xz -T0 "-${LRUC_KIT_XZ_LEVEL:-6}" > "$kit/kit.tar.xz"
rm -rf "$stage"
size=$(du -m "$kit/kit.tar.xz" | cut -f1)
echo "kit.sh: $kit/kit.tar.xz, ${size} MiB, ${#names[@]} models"
if [ "$size" -gt 56 ]; then
  echo "kit.sh: over the 64 MiB the device tool carries with the repository" >&2
  exit 1
fi
