#!/usr/bin/env bash
# The main job: install the packages, build lruc and the trainer, compile a
# sequential Fashion-MNIST model (examples/fashion_mnist.lru, shrunk to two
# blocks of width 32 so that it trains in a few minutes on a CPU) into a
# model library, train it briefly on Debian's Fashion-MNIST, and report its
# test accuracy and its curves.
#   examples/run.sh                 install, build, compile, train (1200 steps)
#   LRUC_SKIP_INSTALL=1 examples/run.sh   packages already there
#   LRUC_STEPS=2000 examples/run.sh       train longer
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if [ "${LRUC_SKIP_INSTALL:-0}" != 1 ]; then bash .ci/install; fi
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target lruc lruc-opt lru-train lru-eval lru-predict lru-plot

model=examples/fashion_mnist.lru
library=build/fashion_mnist_small.so
out=build/runs/fashion_mnist_small
echo "== compile $model -> $library"
build/bin/lruc "$model" -D DEPTH=2 -D H=32 -D N=32 --stats
build/bin/lruc "$model" -D DEPTH=2 -D H=32 -D N=32 -o "$library"
echo "== train (checkpoints, metrics.jsonl in $out)"
rm -rf "$out"
build/bin/lru-train "$library" --steps "${LRUC_STEPS:-1200}" --eval-every 400 --out "$out"
build/bin/lru-plot "$out/curves.svg" "$out/metrics.jsonl"
echo "== curves: $out/curves.svg"
echo "Inspect any stage:  build/bin/lruc $model --emit=ast|lru|primitive|grad|fused|cpp"
