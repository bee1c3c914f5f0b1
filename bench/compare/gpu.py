#!/usr/bin/env python3
"""lruc against JAX and PyTorch on a GPU, at the Table 9 batch sizes.

For each Table 9 configuration of a GPU kit (bench/gpu/kit.sh, unpacked):
a full train step (forward, backward, AdamW) timed for lruc's GPU schedule
(lruc-bench-gpu, its own process), for the JAX implementation of
bench/reference/lru_jax.py (the paper's Appendix A: lax.associative_scan,
jit-compiled, warm) and for PyTorch eager (lru_torch.py, its parallel scan
and its FFT form) on the same device; the speed-up is the faster framework
over lruc (issue target: at least 5x JAX on an H100). The frameworks run
on lruc's initial parameters and a padded batch, every side's matrix
products in the same arithmetic (--matmul): fp32 (JAX's precision
"highest", PyTorch's default, lruc's default), TF32 on tensor cores, or
bfloat16 inputs with fp32 sums (JAX's "bfloat16", PyTorch's autocast,
lruc --matmul bf16);
times are the mean of `--iters` steps queued back to back after warm-up,
closed by one device synchronisation (as lru-train and lruc-bench-gpu run).
With --step, causal models also report step-mode inference per token:
lruc's CUDA graph of a token (lruc-bench-gpu, at one stream and at the
batch) against PyTorch eager's lru_torch.step on the same device (issue
target: at least 20x). Where the kit has a model's library with bfloat16
activations too (NAME.bf16.so, `lruc --gpu-storage=bf16`), its train step
is timed beside it ("lruc bf16"; the frameworks stay in fp32 or TF32
throughout, so that column compares lruc's mixed precision with theirs).

  python3 bench/compare/gpu.py --kit /tmp/lruc-gpu-kit [--configs listops,text]
      [--iters 20] [--frameworks jax,torch] [--matmul fp32|tf32|bf16] [--batch N]
      [--step] [--json FILE]
Runs on the GPU machine's own Python (it has JAX and PyTorch with CUDA);
without a GPU the frameworks run on the CPU (for checking the script).
"""

import argparse
import itertools
import json
import os
import pathlib
import re
import subprocess
import sys
import time


# JAX takes 75% of the GPU's memory when it starts unless told otherwise;
# PyTorch runs in the same process after it.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "reference"))

TABLE9 = ("listops", "text", "retrieval", "scifar", "pathfinder", "pathx")


def queued_time(step, sync, iters, warmup=3):
    """Mean seconds of step() over `iters` calls queued back to back after
    `warmup` calls, up to one sync() at the end (the device's work done):
    how lru-train and lruc-bench-gpu run steps, none waiting for the
    device."""
    for _ in range(warmup):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        step()
    sync()
    return (time.perf_counter() - start) / iters


STEP_TOKENS = 64  # step mode: tokens timed after a warm-up


def lruc_train_step(kit, name, batch, iters, matmul):
    """lruc-bench-gpu's train step time (seconds) with `matmul` GEMMs, its
    device line, and its step mode's seconds a token as a CUDA graph by
    batch ({} without step mode)."""
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = str(kit / "lib") + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env.setdefault("LRUC_CACHE_DIR", str(kit / "cache"))
    result = subprocess.run(
        [str(kit / "bin" / "lruc-bench-gpu"), str(kit / "models" / f"{name}.so"),
         str(batch), str(iters)], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"lruc-bench-gpu {name}: {result.stderr.strip()}")
    line = r"^train_step\s+" if matmul == "fp32" else rf"^train_step {matmul}\s+"
    step = re.search(line + r"([0-9.]+) ms", result.stdout, re.M)
    device = re.search(r"^device: (.*?);", result.stdout, re.M)
    if not step:
        raise RuntimeError(f"lruc-bench-gpu {name}: no train_step line in\n"
                           f"{result.stdout}")
    tokens = {int(b): float(us) * 1e-6 for us, b in re.findall(
        r"^step mode\s+([0-9.]+) us per token\s+\(batch ([0-9]+):.*a CUDA graph",
        result.stdout, re.M)}
    return (float(step.group(1)) * 1e-3, device.group(1) if device else "?",
            tokens)


def jax_train_step(spec, library, params, state, inputs, iters, matmul):
    """JAX: value_and_grad of the model and lruc's AdamW, one jit."""
    import jax
    import lru_jax
    # The products' arithmetic named, as lruc's: fp32 ("highest"), TF32
    # (what JAX's default gives on a GPU) or bfloat16 inputs ("bfloat16",
    # one pass on bfloat16 with fp32 sums).
    jax.config.update("jax_default_matmul_precision",
                      {"fp32": "highest", "tf32": "tensorfloat32",
                       "bf16": "bfloat16"}[matmul])
    apply = lru_jax.make_model(spec, lruc_dropout=False)
    train = library.manifest["optimizer"]
    p = {k: jax.numpy.asarray(v) for k, v in params.items()}
    s = {k: jax.numpy.asarray(v) for k, v in state.items()}
    x = {k: jax.numpy.asarray(v) for k, v in inputs.items()}
    zeros = {k: jax.numpy.zeros_like(v) for k, v in p.items()}

    @jax.jit
    def step(p, m, v, s, x):
        grad = jax.value_and_grad(
            lambda p_: apply(p_, s, x, train=True, dropout_key=(1, 1)),
            has_aux=True)
        (loss, (_, new_s)), grads = grad(p)
        p1, (m1, v1) = lru_jax.adamw_step(p, grads, (m, v), 1e-3, 1, train)
        return p1, m1, v1, new_s, loss

    now = {"blocks": (p, zeros, zeros, s), "loss": None}

    def run():
        *blocks, loss = step(*now["blocks"], x)
        now["blocks"], now["loss"] = tuple(blocks), loss

    def sync():
        jax.block_until_ready(now["loss"])

    seconds = queued_time(run, sync, iters)
    return seconds, str(jax.devices()[0])


def torch_train_step(spec, inputs, iters, fft, matmul):
    """PyTorch eager on the GPU (or the CPU), lru_torch's scan or FFT form."""
    import torch
    import lru_torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = matmul == "tf32"
    # bf16: autocast, the matrix products on bfloat16 inputs, fp32 sums.
    precision = lambda: torch.autocast(device, dtype=torch.bfloat16,
                                       enabled=matmul == "bf16")
    if device == "cuda":  # the model's own tensors too (PyTorch 2)
        torch.set_default_device(device)
    out_of_memory = getattr(torch.cuda, "OutOfMemoryError", MemoryError)
    try:
        model = lru_torch.Model(spec, fft=fft, lruc_dropout=False)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3,
                                      foreach=True)
        x = {k: torch.as_tensor(v, device=device) for k, v in inputs.items()}

        def run():
            model.zero_grad(set_to_none=True)
            with precision():
                loss, _ = model(x, train=True, dropout_key=(1, 1))
            loss.backward()
            optimizer.step()

        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        return queued_time(run, sync, iters), (
            torch.cuda.get_device_name() if device == "cuda" else "cpu")
    except out_of_memory as error:
        return None, f"out of memory ({str(error).splitlines()[0]})"
    finally:
        if device == "cuda":
            torch.set_default_device("cpu")


def torch_step(spec, inputs, rows):
    """PyTorch eager's step mode on the GPU (or the CPU): seconds a token at
    `rows` streams, lru_torch.step a token at a time, queued like the
    train steps (one synchronisation at the end)."""
    import torch
    import lru_torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        torch.set_default_device(device)
    try:
        model = lru_torch.Model(spec, lruc_dropout=False)
        seq = torch.as_tensor(inputs.get("tokens", inputs.get("features")),
                              device=device)[:rows]
        carry = lru_torch.StepState(model, rows)
        steps = itertools.cycle(range(seq.shape[1]))

        def token():
            lru_torch.step(model, seq[:, next(steps)], carry)

        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        with torch.no_grad():
            return queued_time(token, sync, STEP_TOKENS)
    finally:
        if device == "cuda":
            torch.set_default_device("cpu")


def compare(kit, name, args):
    from agree import make_inputs
    from lruc_library import ModelLibrary
    from model_spec import parse_ast
    models = kit / "models"
    batch = args.batch or int((models / f"{name}.batch").read_text() or 0)
    if batch <= 0:
        raise SystemExit(f"{name}: no Table 9 batch in the kit; pass --batch")
    spec = parse_ast((models / f"{name}.ast").read_text())
    library = ModelLibrary(models / f"{name}.so")
    block, state_block = library.init(1)
    params = ModelLibrary.unpack(block, library.params)
    state = ModelLibrary.unpack(state_block, library.state)
    inputs = make_inputs(library, batch, 0)
    row = {"model": name, "batch": batch, "matmul": args.matmul}
    row["lruc_s"], row["lruc_device"], lruc_tokens = lruc_train_step(
        kit, name, batch, args.iters, args.matmul)
    if (models / f"{name}.bf16.so").exists():
        row["lruc_bf16_s"], _, _ = lruc_train_step(
            kit, f"{name}.bf16", batch, args.iters, args.matmul)
    if args.step and lruc_tokens:
        row["step"] = []
        for rows, seconds in sorted(lruc_tokens.items()):
            entry = {"batch": rows, "lruc_s": seconds}
            try:
                entry["torch_s"] = torch_step(spec, inputs, rows)
            except Exception as error:  # reported, not fatal
                entry["torch_s"] = None
                entry["torch_error"] = str(error).strip().splitlines()[0][:200]
            row["step"].append(entry)
    # A framework that fails (out of memory at Path-X's batch, say) leaves
    # its cell empty and says why; the others still run.
    runs = []
    if "jax" in args.frameworks:
        runs.append(("jax", lambda: jax_train_step(
            spec, library, params, state, inputs, args.iters, args.matmul)))
    if "torch" in args.frameworks:
        for form in ("scan", "fft"):
            runs.append((f"torch_{form}", lambda form=form: torch_train_step(
                spec, inputs, args.iters, fft=(form == "fft"),
                matmul=args.matmul)))
    for key, run in runs:
        try:
            row[f"{key}_s"], row[f"{key.split('_')[0]}_device"] = run()
        except Exception as error:  # reported, not fatal
            row[f"{key}_s"] = None
            row[f"{key}_error"] = str(error).strip().splitlines()[0][:200]
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kit", required=True, type=pathlib.Path,
                        help="an unpacked GPU kit (bench/gpu/kit.sh)")
    parser.add_argument("--configs", default=",".join(TABLE9),
                        help="comma-separated models of the kit")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--batch", type=int,
                        help="instead of each model's Table 9 batch")
    parser.add_argument("--frameworks", default="jax,torch")
    parser.add_argument("--matmul", choices=("fp32", "tf32", "bf16"),
                        default="fp32",
                        help="the products' arithmetic, the same for all: "
                        "fp32 (JAX 'highest'; lruc's default), tf32 "
                        "(JAX 'tensorfloat32', PyTorch allow_tf32, lruc "
                        "--matmul tf32) or bf16 (JAX 'bfloat16', PyTorch "
                        "autocast, lruc --matmul bf16)")
    parser.add_argument("--step", action="store_true",
                        help="also step mode per token (causal models): "
                        "lruc's CUDA graph against PyTorch eager")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    args.frameworks = args.frameworks.split(",")
    rows = []
    print(f"{'model':11} {'batch':>5} {'lruc ms':>9} {'jax ms':>9} "
          f"{'torch scan':>10} {'torch fft':>10} {'vs jax':>7} {'vs best':>7} "
          f"{'lruc bf16':>9} {'vs jax':>7}")
    for name in args.configs.split(","):
        row = compare(args.kit, name, args)
        rows.append(row)
        ms = lambda key: (f"{row[key] * 1e3:9.2f}" if row.get(key) else
                          f"{'-':>9}")
        ratio = lambda slower, key="lruc_s": (
            f"{slower / row[key]:6.1f}x" if slower and row.get(key)
            else f"{'-':>7}")
        best = min([row[k] for k in ("jax_s", "torch_scan_s", "torch_fft_s")
                    if row.get(k)], default=None)
        print(f"{name:11} {row['batch']:5d} {ms('lruc_s')} {ms('jax_s')} "
              f"{ms('torch_scan_s'):>10} {ms('torch_fft_s'):>10} "
              f"{ratio(row.get('jax_s'))} {ratio(best)} {ms('lruc_bf16_s')} "
              f"{ratio(row.get('jax_s'), 'lruc_bf16_s')}", flush=True)
        for key in [k for k in row if k.endswith("_error")]:
            print(f"  {key[:-6]}: {row[key]}")
    stepping = [row for row in rows if row.get("step")]
    if stepping:
        print(f"{'step mode':11} {'batch':>5} {'lruc us':>9} "
              f"{'torch us':>9} {'speed-up':>8}")
        for row in stepping:
            for entry in row["step"]:
                torch_s = entry["torch_s"]
                print(f"{row['model']:11} {entry['batch']:5d} "
                      f"{entry['lruc_s'] * 1e6:9.1f} " +
                      (f"{torch_s * 1e6:9.1f} {torch_s / entry['lruc_s']:7.1f}x"
                       if torch_s else f"{'-':>9} {'-':>8}"))
                if entry.get("torch_error"):
                    print(f"  torch: {entry['torch_error']}")
    devices = {k: rows[0][k] for k in rows[0] if k.endswith("_device")}
    print("devices: " + ", ".join(f"{k[:-7]} {v}" for k, v in devices.items()))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
