#!/usr/bin/env python3
"""lruc against PyTorch on this CPU, on the same model, weights and batch.

For each configuration: forward (inference), forward + backward (train
mode), a full train step (forward, backward, AdamW) and step-mode inference
per token (causal models), timed for lruc's CPU library and for PyTorch
eager in both of its scan forms (the parallel scan and the FFT
convolution); the ratio is the faster PyTorch form over lruc. lruc and
PyTorch run in separate processes (both link OpenBLAS, and lruc's library
sets its thread count), each with every core. PyTorch's sgemm rate is
measured in the same run, to show it uses an optimised BLAS, and the
train step's matrix products (lruc --stats) are timed at that rate: the
speed-up the faster PyTorch form allows where lruc's step is its products.

  bench/compare/cpu.py [--configs listops,text]  Table 9 models (models/)
  bench/compare/cpu.py MODEL.lru BATCH [-D NAME=VALUE ...]   one model
  bench/compare/cpu.py --matmul bf16   both sides' matrix products on
      bfloat16 inputs: lruc's through oneDNN (--matmul bf16), PyTorch's
      under torch.autocast("cpu", dtype=torch.bfloat16)
Run with the reference Python (bench/reference/setup.sh):
  .venv-reference/bin/python bench/compare/cpu.py
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "reference"))

# Table 9 of Orvieto et al. 2023 as written in models/, at the batches of
# bench/cpu/run.sh (what fits a 24 GiB, 2-core machine).
TABLE9 = [("listops", 8), ("text", 2), ("retrieval", 2), ("scifar", 4),
          ("pathfinder", 8), ("pathx", 1)]
STEP_TOKENS = 64  # step mode: tokens timed after a warm-up (or the length)
# Step mode's warm-up, both sides: a process's first ~50 ms of tokens ran
# up to 4x slower here in some starts (Text at one stream: 130-200 us a
# token, then 48) while the scheduler settled where its threads run.
STEP_WARMUP_SECONDS = 0.3


def timed(fn, repeats, warmup_seconds=0.0):
    """The median of `repeats` timings of fn(), after calling it once and
    then for `warmup_seconds` (allocations, caches, first-call work)."""
    start = time.perf_counter()
    fn()
    while time.perf_counter() - start < warmup_seconds:
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def make_inputs(library, batch, seed=0):
    """Full-length sequences (no padding), random tokens or features."""
    from agree import make_inputs as padded
    inputs = padded(library, batch, seed)
    for name in inputs:
        if name.startswith("lengths"):
            steps = library.inputs[0]["shape"][1]
            inputs[name] = np.full(batch, steps, np.int32)
    return inputs


def run_lruc(args):
    from lruc_library import ModelLibrary, blas_core
    library = ModelLibrary(args.library)
    library.set_cpu_matmul(args.matmul)
    params, state = library.init(1)
    inputs = make_inputs(library, args.batch)
    key = (1, 1)
    zeros = np.zeros_like(params)
    out = {"blas": blas_core()}
    out.update({} if args.step_only else {
        "forward": timed(lambda: library.forward(params, state, inputs),
                         args.repeats),
        "forward+backward": timed(
            lambda: library.backward(params, state, inputs, key), args.repeats),
        "train step": timed(
            lambda: library.train_step(params, zeros, zeros, state, 1e-3, 1.0,
                                       inputs, key), args.repeats),
    })
    if library.step_mode:
        seq_name = library.manifest["step"]["inputs"][0]["name"]
        seq = inputs[seq_name]
        count = min(STEP_TOKENS, seq.shape[1])
        # The batch of the other rows, and one stream (batch 1): streaming
        # inference of a single sequence.
        for rows, label in ((args.batch, "step (per token)"),
                            (1, "step, batch 1")):
            stream = library.step_stream(params, state, rows)

            def tokens():
                for t in range(count):
                    stream.step({seq_name: seq[:rows, t:t + 1]})
            out[label] = timed(tokens, args.repeats,
                               STEP_WARMUP_SECONDS) / count
    return out


def run_torch(args):
    import torch
    import lru_torch
    from lruc_library import ModelLibrary, blas_core
    from model_spec import load_spec
    torch.set_num_threads(os.cpu_count())
    n = 1024
    a, b = torch.randn(n, n), torch.randn(n, n)
    bf16 = args.matmul == "bf16"
    # Autocast on the CPU: matrix products on bfloat16 inputs (oneDNN).
    precision = lambda: torch.autocast("cpu", dtype=torch.bfloat16,
                                       enabled=bf16)

    def mm():
        with precision():
            torch.mm(a, b)
    gemm = timed(mm, 5)
    out = {"sgemm GFLOP/s": 2 * n ** 3 / gemm / 1e9,
           "torch": torch.__version__,
           "threads": torch.get_num_threads(),
           "blas": blas_core("libblas.so.3")}  # what Debian's torch links
    library = ModelLibrary(args.library)  # for the manifest and input shapes
    spec = load_spec(args.lruc, args.model, args.define_map)
    inputs = {k: torch.as_tensor(v) for k, v in
              make_inputs(library, args.batch).items()}
    steps = library.inputs[0]["shape"][1]
    n_state = max([layer.args.get("state", 0) for _, layers in spec.blocks
                   for layer in layers] + [0])
    for form in ("scan", "fft"):
        # The parallel scan keeps every round of [B, L, N] complex tensors
        # for autograd; skip it where that would not fit in memory.
        rounds = max(1, (steps - 1).bit_length())
        need = 3 * rounds * args.batch * steps * n_state * 8 * len(spec.blocks)
        if form == "scan" and need > args.torch_memory * 2 ** 30:
            out[form] = {"skipped": f"the parallel scan would keep about "
                                    f"{need / 2 ** 30:.0f} GiB"}
            continue
        model = lru_torch.Model(spec, fft=(form == "fft"), lruc_dropout=False)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3,
                                      foreach=True)

        def forward():
            with torch.no_grad(), precision():
                model(inputs, train=False)

        def forward_backward():
            model.zero_grad(set_to_none=True)
            with precision():
                loss, _ = model(inputs, train=True, dropout_key=(1, 1))
            loss.backward()

        def train_step():
            forward_backward()
            optimizer.step()

        times = {} if args.step_only else {
            "forward": timed(forward, args.repeats),
            "forward+backward": timed(forward_backward, args.repeats),
            "train step": timed(train_step, args.repeats)}
        if library.step_mode:
            seq = inputs.get("tokens", inputs.get("features"))
            count = min(STEP_TOKENS, seq.shape[1])

            for rows, label in ((args.batch, "step (per token)"),
                                (1, "step, batch 1")):
                def tokens():
                    carry = lru_torch.StepState(model, rows)
                    with torch.no_grad(), precision():
                        for t in range(count):
                            lru_torch.step(model, seq[:rows, t], carry)
                times[label] = timed(tokens, args.repeats,
                                     STEP_WARMUP_SECONDS) / count
        out[form] = times
    return out


def side(args, which):
    """Runs one side in its own process; its JSON result."""
    command = [sys.executable, __file__, "--side", which, "--library",
               str(args.library), "--lruc", args.lruc, "--repeats",
               str(args.repeats), "--torch-memory", str(args.torch_memory),
               "--matmul", args.matmul,
               *(["--step-only"] if args.step_only else []),
               args.model, str(args.batch)]
    command += [f"-D{d}" for d in args.defines]
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1" if which == "lruc" else
                   str(os.cpu_count()))
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{which} side failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def train_step_gflop(args, flags):
    """The train step's matrix products at the batch, in GFLOP (lruc
    --stats counts 2 m n k a product: a row per function, "A B + C" MFLOP
    at batch B); None where the library has no train step."""
    stats = subprocess.run([args.lruc, args.model, "--stats"] + flags,
                           capture_output=True, text=True, check=True)
    row = re.search(r"^@train_step\s+(?:\d+\s+){4}([0-9.]+) B \+ ([0-9.]+)",
                    stats.stdout + stats.stderr, re.M)
    return ((float(row[1]) * args.batch + float(row[2])) / 1e3 if row
            else None)


def compare(args):
    work = pathlib.Path(tempfile.mkdtemp(prefix="lruc-compare-"))
    args.library = work / "model.so"
    # A model shrunk with -D may no longer fit its task: drop the train
    # section then (the optimizer's defaults cost the same).
    flags = ([f"-D{d}" for d in args.defines] +
             (["--no-train"] if args.defines else []))
    subprocess.run([args.lruc, args.model, "-o", str(args.library)] + flags,
                   check=True)
    lruc = side(args, "lruc")
    torch = side(args, "torch")
    lruc_blas = lruc.pop("blas")
    name = pathlib.Path(args.model).stem
    matmul = ("fp32" if args.matmul == "fp32" else
              "bf16 (lruc --matmul bf16, PyTorch autocast)")
    print(f"== {name} {' '.join('-D' + d for d in args.defines)} "
          f"(batch {args.batch}); PyTorch {torch['torch']}, "
          f"{torch['threads']} threads, {args.matmul} matmul "
          f"{torch['sgemm GFLOP/s']:.0f} GFLOP/s; OpenBLAS kernels: lruc "
          f"{lruc_blas}, PyTorch {torch['blas']}; products {matmul}")
    print(f"{'':18} {'lruc ms':>10} {'torch scan':>11} {'torch fft':>10} "
          f"{'speed-up':>9}")
    rows = {}
    for op, t in lruc.items():
        ref = [torch[f][op] for f in ("scan", "fft")
               if op in torch.get(f, {})]
        cell = lambda f: (f"{torch[f][op] * 1e3:10.3f}" if op in torch.get(f, {})
                          else f"{'-':>10}")
        ratio = min(ref) / t if ref else float("nan")
        rows[op] = {"lruc_s": t, "speedup": ratio,
                    **{f"torch_{f}_s": torch[f].get(op)
                       for f in ("scan", "fft") if "skipped" not in torch[f]}}
        print(f"{op:18} {t * 1e3:10.3f} {cell('scan'):>11} {cell('fft')} "
              f"{ratio:8.1f}x")
    # The train step's products alone at the rate PyTorch's reach in this
    # run: how near lruc's step is to them, and the speed-up the faster
    # PyTorch form would allow if lruc's step were its products alone (the
    # ceiling where both sides run the same BLAS).
    gflop = None if args.step_only else train_step_gflop(args, flags)
    step = rows.get("train step")
    if gflop and step and torch["sgemm GFLOP/s"] > 0:
        products_s = gflop / torch["sgemm GFLOP/s"]
        best = min([step[k] for k in ("torch_scan_s", "torch_fft_s")
                    if step.get(k)], default=None)
        step["products_gflop"] = gflop
        print(f"  train step's products: {gflop:.3g} GFLOP, "
              f"{products_s * 1e3:.3f} ms at the rate above; lruc's step "
              f"{step['lruc_s'] / products_s:.2f}x that"
              + (f", the faster PyTorch form {best / products_s:.1f}x"
                 if best else ""))
    for f in ("scan", "fft"):
        if "skipped" in torch[f]:
            print(f"  torch {f}: skipped, {torch[f]['skipped']}")
    print()
    return {"model": name, "batch": args.batch, "torch": torch["torch"],
            "matmul": args.matmul,
            "blas": {"lruc": lruc_blas, "torch": torch["blas"]},
            "sgemm_gflops": torch["sgemm GFLOP/s"], "ops": rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?")
    parser.add_argument("batch", nargs="?", type=int)
    parser.add_argument("-D", dest="defines", action="append", default=[])
    parser.add_argument("--lruc", default=str(ROOT / "build" / "bin" / "lruc"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--torch-memory", type=float, default=16,
                        help="GiB the parallel scan may keep (default 16)")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--matmul", choices=("fp32", "bf16"), default="fp32",
                        help="both sides' matrix products: fp32 (default) "
                             "or on bfloat16 inputs (lruc --matmul bf16, "
                             "PyTorch's CPU autocast)")
    parser.add_argument("--step-only", action="store_true",
                        help="time step mode only (causal models)")
    parser.add_argument("--configs",
                        help="comma-separated Table 9 models to run "
                             "(default: all)")
    parser.add_argument("--side", choices=("lruc", "torch"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--library", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.define_map = dict(d.split("=", 1) for d in args.defines)
    if args.side:
        run = run_lruc if args.side == "lruc" else run_torch
        print(json.dumps(run(args)))
        return 0
    print(f"machine: {cpu_name()}, {os.cpu_count()} cores")
    wanted = args.configs.split(",") if args.configs else [m for m, _ in TABLE9]
    unknown = set(wanted) - {m for m, _ in TABLE9}
    if unknown:
        parser.error(f"--configs: no Table 9 model {', '.join(sorted(unknown))}")
    configs = ([(args.model, args.batch)] if args.model else
               [(str(ROOT / "models" / f"{m}.lru"), b) for m, b in TABLE9
                if m in wanted])
    results = []
    for model, batch in configs:
        args.model, args.batch = model, batch
        results.append(compare(args))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    sys.exit(main())
