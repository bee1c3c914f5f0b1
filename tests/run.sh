#!/usr/bin/env bash
# Builds lruc and runs the whole test suite (unit tests, lit/FileCheck tests,
# the fuzz-corpus replay) under ctest; then does the same for an
# AddressSanitizer + UndefinedBehaviorSanitizer build; then builds the
# libFuzzer targets with clang and runs each briefly (tests/fuzz/run.sh).
#   tests/run.sh              all three
#   LRUC_SANITIZE=0 tests/run.sh   skip the sanitizer build
#   LRUC_FUZZ=0 tests/run.sh       skip the fuzz targets
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${JOBS:-$(nproc)}"
# ccache, where installed (.ci/install does), keeps the objects of earlier
# builds: a second run of the suite recompiles only what changed.
# The tests' model libraries go through it too (LRUC_CXX_LAUNCHER): the
# same model's units compile to the same objects from one run to the next.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export LRUC_CXX_LAUNCHER="${LRUC_CXX_LAUNCHER-ccache}"
  # Paths under the checkout are hashed relative to the build directory,
  # so a clone at another path (CI's) hits the objects this one cached.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR-$root}"
fi

run_suite() { # build-dir, extra cmake args...
  local dir="$1"; shift
  cmake -G Ninja -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
    "${launcher[@]}" "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
}

echo "== lruc: release build and tests"
run_suite "$root/build"
if [ "${LRUC_SANITIZE:-1}" != 0 ]; then
  echo "== lruc: ASan/UBSan build and tests"
  run_suite "$root/build-asan" -DLRUC_SANITIZE=ON
fi
if [ "${LRUC_FUZZ:-1}" != 0 ]; then
  echo "== lruc: fuzz targets (clang 14, libFuzzer), ${LRUC_FUZZ_SECONDS:-5} s each"
  bash "$root/tests/fuzz/run.sh"
fi
