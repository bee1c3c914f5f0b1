#!/usr/bin/env bash
# Builds every libFuzzer target with clang 14 (the front end's, the data
# readers', the host runtime's: docs/testing.md) and runs each for a few
# seconds from its corpus, under ASan and UBSan. The corpora are replayed by
# the normal build's ctest; this keeps the targets building with clang (the
# release builds use GCC, which accepts code clang refuses) and fuzzing.
#   tests/fuzz/run.sh                   every target, LRUC_FUZZ_SECONDS (5) each
#   LRUC_FUZZ_SECONDS=600 tests/fuzz/run.sh   a longer campaign
# A crash fails the run, naming the input that caused it (kept under
# build-fuzz/artifacts/); new inputs the fuzzer finds go to a temporary
# folder, never into the corpora.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${LRUC_FUZZ_BUILD:-$root/build-fuzz}"
seconds="${LRUC_FUZZ_SECONDS:-5}"
jobs="${JOBS:-$(nproc)}"
for tool in clang-14 clang++-14; do
  if ! command -v "$tool" >/dev/null; then
    echo "tests/fuzz/run.sh: $tool not found: apt-get install clang-14" \
      "libclang-rt-14-dev (.ci/install does), or LRUC_FUZZ=0 tests/run.sh" >&2
    exit 1
  fi
done
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR-$root}"
fi
cmake -G Ninja -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DLRUC_FRONTEND_ONLY=ON -DLRUC_FUZZ=ON "${launcher[@]}" >/dev/null
# Only the fuzz targets: the rest of this build is instrumented for them.
cmake --build "$dir" -j "$jobs" --target lruc-frontend-fuzzer \
  lruc-data-fuzzers lruc-host-fuzzers

artifacts="$dir/artifacts"
found="$(mktemp -d)"
trap 'rm -rf "$found"' EXIT
mkdir -p "$artifacts"
failed=0
run() { # target, libFuzzer arguments...
  local target="$1"; shift
  mkdir -p "$found/$target"
  if "$dir/bin/$target" -max_total_time="$seconds" -timeout=10 \
      -artifact_prefix="$artifacts/$target-" "$found/$target" "$@" \
      > "$found/$target.log" 2>&1; then
    echo "$target: ok ($(grep -o 'Done [0-9]* runs' "$found/$target.log" || echo 'done'))"
  else
    echo "$target: FAILED" >&2
    tail -n 40 "$found/$target.log" >&2
    failed=1
  fi
}
run lruc-frontend-fuzzer -dict="$root/tests/fuzz/lru.dict" \
  "$root/tests/fuzz/corpus" "$root/models" "$root/examples"
for binary in "$dir"/bin/lruc-data-fuzz-* "$dir"/bin/lruc-host-fuzz-*; do
  target="$(basename "$binary")"
  layer="${target#lruc-}"; layer="${layer%%-fuzz-*}"   # data or host
  run "$target" "$root/tests/$layer/corpus/${target#lruc-*-fuzz-}"
done
exit "$failed"
