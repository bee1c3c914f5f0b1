#!/usr/bin/env bash
# The main job: install the packages, build lruc, and compile every model in
# models/ and examples/ to verified lru-dialect IR under build/ir/.
# (Training arrives with the backends and the trainer; see docs/architecture.md.)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if [ "${LRUC_SKIP_INSTALL:-0}" != 1 ]; then bash .ci/install; fi
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target lruc lruc-opt
mkdir -p build/ir
for model in models/*.lru examples/*.lru; do
  name="$(basename "$model" .lru)"
  build/bin/lruc "$model" --emit=lru -o "build/ir/$name.mlir"
  params=$(grep -c 'lru.param' "build/ir/$name.mlir")
  printf '%-22s -> build/ir/%s.mlir  (%d parameters)\n' "$model" "$name" "$params"
done
echo "Inspect a stage:  build/bin/lruc models/listops.lru --emit=ast"
