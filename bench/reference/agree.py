#!/usr/bin/env python3
"""Do lruc, PyTorch and JAX compute the same model?

For one model file (shrunk with -D overrides), this compiles it with lruc,
initialises its parameters through the library, saves them as a safetensors
checkpoint, loads that checkpoint by name into the PyTorch and JAX
implementations (lru_torch.py, lru_jax.py) and compares, on one seeded
batch with padding:

  forward      inference loss and predictions
  train        train-mode loss, predictions and new running statistics
               (batch statistics, dropout masks drawn as lruc draws them)
  grad         every parameter's gradient
  train_step   the parameters, AdamW moments and running statistics after
               one train_step (lr of the model's schedule peak, step 1)
  second step  the same after a second train_step from the first's results
               (moments no longer 0, so each moment's decay, the bias
               correction at step 2 and the running statistics' second
               update count) on another batch, dropout key and lr

A tensor agrees when max|ref - lruc| <= rtol * max|ref| + atol (rtol 1e-4,
atol 1e-6 by default): relative to its largest element, so that entries
near zero do not demand more than fp32 gives. Prints one line per check and
exits 1 if any disagrees.

  agree.py --lruc build/bin/lruc models/listops.lru -D L=6 -D H=4 -D N=3

`--device gpu` (or `both`) runs the same checks on the library's GPU half
(its CUDA kernels and cuBLAS GEMMs, fp32) through liblruc-device.so beside
lruc (`--device-library`); without a GPU, `--simulated-kernels` names
lruc-simulated-kernels, which builds the kernels for the simulated driver
that $LRUC_CUDA_DRIVER and $LRUC_CUBLAS name (tests/cuda).
"""

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lruc_library import (Device, GpuModelLibrary, LibraryError,  # noqa: E402
                          ModelLibrary)
from model_spec import load_spec, parse_ast  # noqa: E402


def make_inputs(library, batch, seed):
    """A seeded batch: lengths from 1 to L (padding in all but one)."""
    rng = np.random.default_rng(seed)
    spec_inputs = {i["name"]: i for i in library.inputs}
    vocab = library.params[0]["shape"][0]  # encoder.weight of an embedding
    out = {}
    for name, info in spec_inputs.items():
        shape = [batch if d == -1 else d for d in info["shape"]]
        if name.startswith("lengths"):
            steps = spec_inputs[name.replace("lengths", "tokens")
                                if "tokens" + name[7:] in spec_inputs
                                else "features"]["shape"][1]
            lengths = rng.integers(1, steps + 1, size=batch)
            lengths[0] = steps
            out[name] = lengths.astype(np.int32)
        elif name.startswith("tokens"):
            out[name] = rng.integers(0, vocab, size=shape).astype(np.int32)
        elif name == "labels":
            classes = library.outputs[1]["shape"][-1]
            labels = rng.integers(0, classes, size=shape)
            if len(shape) == 2:  # a class a step: some steps not scored
                labels[rng.random(size=shape) < 0.25] = -1
                labels[0, -1] = -100  # PyTorch's ignore_index
            out[name] = labels.astype(np.int32)
        else:  # features, targets
            out[name] = rng.normal(size=shape).astype(np.float32)
            if name == "targets":  # some values not scored
                out[name][rng.random(size=shape) < 0.2] = np.nan
    return out


class Report:
    def __init__(self, rtol, atol):
        self.rtol, self.atol, self.failures, self.checks = rtol, atol, [], 0

    def compare(self, framework, what, ref, got, mask=None):
        ref = np.asarray(ref, np.float64)
        got = np.asarray(got, np.float64)
        if ref.shape != got.shape:
            self.failures.append(f"{framework} {what}: shape {ref.shape} vs "
                                 f"lruc {got.shape}")
            return
        if mask is not None:
            ref, got = ref * mask, got * mask
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        err = float(np.max(np.abs(ref - got))) if ref.size else 0.0
        self.checks += 1
        if not np.isfinite(err) or err > self.rtol * scale + self.atol:
            self.failures.append(f"{framework} {what}: max error {err:.3g} "
                                 f"(largest element {scale:.3g})")
        return err / max(scale, 1e-30)


def output_mask(library, inputs):
    """Predictions of a per-step model are compared at real steps only."""
    shape = library.outputs[1]["shape"]
    if len(shape) != 3 or "lengths" not in inputs:
        return None
    steps = shape[1]
    real = np.arange(steps)[None, :] < inputs["lengths"][:, None]
    return real[..., None].astype(np.float64)


def lruc_results(half, params, state, inputs, key, lr, second, stream=None):
    """What lruc computes: `half` is the library's CPU half (ModelLibrary)
    or its GPU half (GpuModelLibrary), which answer the same calls;
    `second`, the (inputs, key, lr) of the second train step; `stream`,
    step mode's predictions (lruc_stream), or None."""
    loss, preds = half.forward(params, state, inputs)
    (t_loss, t_preds), t_state = half.forward_train(params, state, inputs, key)
    g_loss, grads = half.backward(params, state, inputs, key)
    zeros = np.zeros_like(params)
    _, p1, m1, v1, s1 = half.train_step(params, zeros, zeros, state, lr, 1.0,
                                        inputs, key)
    inputs2, key2, lr2 = second
    _, p2, m2, v2, s2 = half.train_step(p1, m1, v1, s1, lr2, 2.0, inputs2,
                                        key2)
    return dict(forward=(loss, preds), train=(t_loss, t_preds, t_state),
                grad_loss=g_loss, grads=grads, step=(p1, m1, v1, s1),
                step2=(p2, m2, v2, s2), stream=stream)


def lruc_stream(library, params, state, inputs):
    """lruc's step mode on the first row (full length), through a
    StepStream: the predictions after the last step (pooled models) or
    after every step ([1, steps, classes]); None without step mode."""
    if not library.step_mode:
        return None
    names = [i["name"] for i in library.manifest["step"]["inputs"]]
    steps = np.shape(inputs[names[0]])[1]
    stream = library.step_stream(params, state, 1)
    preds = [stream.step({n: inputs[n][:1, t:t + 1] for n in names})[0]
             for t in range(steps)]
    if len(library.outputs[1]["shape"]) == 3:  # per-step predictions
        return np.concatenate(preds, axis=1)
    return preds[-1]


def torch_adam_block(model):
    """The parameters and AdamW moments, copied (the tensors change in
    place at the next step)."""
    return ({k: p.detach().numpy().copy()
             for k, p in model.named_parameters()},
            {k: m.numpy().copy() for k, (m, _) in model._adam.items()},
            {k: v.numpy().copy() for k, (_, v) in model._adam.items()})


def torch_results(spec, checkpoint, library, inputs, key, lr, second):
    import torch
    import lru_torch
    torch.manual_seed(0)
    model = lru_torch.Model(spec)
    lru_torch.load_checkpoint(model, checkpoint)
    with torch.no_grad():
        loss, preds = model(inputs, train=False)
    forward = (loss.item(), preds.numpy())
    # The benchmark's other forms of the same model: FFT convolutions for
    # the scans, and step mode (one token at a time) on the full-length row.
    model.fft = True
    with torch.no_grad():
        _, fft_preds = model(inputs, train=False)
        try:
            seq = next(v for k, v in inputs.items()
                       if k in ("tokens", "features"))
            carry = lru_torch.StepState(model, 1)
            for t in range(seq.shape[1]):
                step_preds = lru_torch.step(
                    model, torch.as_tensor(seq[:1, t]).long()
                    if seq.dtype == np.int32 else torch.as_tensor(seq[:1, t]),
                    carry)
            step_preds = step_preds.numpy()
        except (ValueError, StopIteration):
            step_preds = None
    model.fft = False
    loss, preds = model(inputs, train=True, dropout_key=key)
    loss.backward()
    buffers = dict(model.named_buffers())
    new_state = {k: v.numpy().copy() for k, v in buffers.items()}
    grads = {k: g.numpy().copy()
             for k, g in lru_torch.gradients(model).items()}
    optimizer = library.manifest["optimizer"]
    lru_torch.adamw_step(model, lr, 1, optimizer)
    first = torch_adam_block(model)
    inputs2, key2, lr2 = second
    model.zero_grad(set_to_none=True)
    loss2, _ = model(inputs2, train=True, dropout_key=key2)
    loss2.backward()
    state2 = {k: v.numpy().copy() for k, v in model.named_buffers()}
    lru_torch.adamw_step(model, lr2, 2, optimizer)
    return dict(forward=forward, fft=fft_preds.numpy(), stream=step_preds,
                train=(loss.item(), preds.detach().numpy(), new_state),
                grads=grads, step=(*first, new_state),
                step2=(*torch_adam_block(model), state2))


def jax_results(spec, checkpoint, library, inputs, key, lr, second):
    import jax
    import lru_jax
    # fp32 products, as lruc's: on a GPU JAX's default precision multiplies
    # in TF32, about 1e-4 off.
    jax.config.update("jax_default_matmul_precision", "highest")
    apply = lru_jax.make_model(spec)
    p = lru_jax.load_checkpoint(checkpoint, [e["name"] for e in library.params])
    s = lru_jax.load_checkpoint(checkpoint, [e["name"] for e in library.state])
    x = {k: jax.numpy.asarray(v) for k, v in inputs.items()}
    # Three compiled programs, as JAX users run a model (op by op, eagerly,
    # JAX would compile each primitive on its own: a few hundred programs).
    forward_fn = jax.jit(lambda p_, s_, x_: apply(p_, s_, x_, train=False))
    loss, (preds, _) = forward_fn(p, s, x)
    forward = (float(loss), np.asarray(preds))
    # The dropout key is a static argument: lru_jax draws lruc's masks on
    # the host.
    grad_fn = jax.jit(jax.value_and_grad(
        lambda p_, s_, x_, key_: apply(p_, s_, x_, train=True,
                                       dropout_key=key_),
        has_aux=True), static_argnums=3)
    (t_loss, (t_preds, t_state)), grads = grad_fn(p, s, x, key)
    optimizer = library.manifest["optimizer"]
    step_fn = jax.jit(lambda p_, g_, adam_, lr_, step_: lru_jax.adamw_step(
        p_, g_, adam_, lr_, step_, optimizer), static_argnums=(3, 4))
    zeros = {k: jax.numpy.zeros_like(v) for k, v in p.items()}
    p1, (m1, v1) = step_fn(p, grads, (zeros, zeros), lr, 1)
    inputs2, key2, lr2 = second
    x2 = {k: jax.numpy.asarray(v) for k, v in inputs2.items()}
    (_, (_, state2)), grads2 = grad_fn(p1, t_state, x2, key2)
    p2, (m2, v2) = step_fn(p1, grads2, (m1, v1), lr2, 2)
    as_np = lambda d: {k: np.asarray(v) for k, v in d.items()}
    return dict(forward=forward,
                train=(float(t_loss), np.asarray(t_preds), as_np(t_state)),
                grads=as_np(grads),
                step=(as_np(p1), as_np(m1), as_np(v1), as_np(t_state)),
                step2=(as_np(p2), as_np(m2), as_np(v2), as_np(state2)))


def compare_all(report, framework, ref, got, library, mask):
    unpack = ModelLibrary.unpack
    report.compare(framework, "forward loss", ref["forward"][0],
                   got["forward"][0])
    report.compare(framework, "forward predictions", ref["forward"][1],
                   got["forward"][1], mask)
    if "fft" in ref:
        report.compare(framework, "forward predictions (FFT scans)",
                       ref["fft"], got["forward"][1], mask)
    if ref.get("stream") is not None:
        report.compare(framework, "step mode predictions after every step",
                       ref["stream"], got["forward"][1][:1])
    if got["stream"] is not None:
        report.compare(framework, "lruc step mode predictions (first row)",
                       ref["forward"][1][:1], got["stream"])
    report.compare(framework, "train loss", ref["train"][0], got["train"][0])
    report.compare(framework, "train predictions", ref["train"][1],
                   got["train"][1], mask)
    lruc_state = unpack(got["train"][2], library.state)
    for name, value in lruc_state.items():
        report.compare(framework, f"new {name}", ref["train"][2][name], value)
    report.compare(framework, "backward loss", ref["train"][0], got["grad_loss"])
    for name, value in unpack(got["grads"], library.params).items():
        report.compare(framework, f"grad {name}", ref["grads"][name], value)
    for step, what in (("step", "train_step"), ("step2", "second step")):
        params, m, v, state = got[step]
        for label, block, ref_named in (("param", params, ref[step][0]),
                                        ("adam_m", m, ref[step][1]),
                                        ("adam_v", v, ref[step][2])):
            for name, value in unpack(block, library.params).items():
                report.compare(framework, f"{what} {label} {name}",
                               ref_named[name], value)
        for name, value in unpack(state, library.state).items():
            report.compare(framework, f"{what} {name}", ref[step][3][name],
                           value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?",
                        help="the .lru model file (or --library and --ast)")
    parser.add_argument("-D", dest="defines", action="append", default=[],
                        metavar="NAME=VALUE", help="override a constant")
    parser.add_argument("--lruc", default="lruc", help="the lruc to run")
    parser.add_argument("--frameworks", default="torch,jax",
                        help="comma-separated: torch, jax (default both)")
    parser.add_argument("--batch", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-6)
    parser.add_argument("--checkpoint",
                        help="an lruc safetensors checkpoint (lru-train's) to "
                             "run instead of the library's initial values")
    parser.add_argument("--keep", help="keep the library and checkpoint here")
    parser.add_argument("--train", action="store_true",
                        help="compile with the model file's train section "
                             "(its AdamW settings, recurrent learning-rate "
                             "factor and clipping: the train steps compared "
                             "use them); default --no-train, lruc's defaults")
    parser.add_argument("--device", choices=("cpu", "gpu", "both"),
                        default="cpu",
                        help="which half of the library to check (default "
                             "cpu)")
    parser.add_argument("--device-library",
                        help="liblruc-device.so (default: lib/ beside "
                             "lruc's bin/)")
    parser.add_argument("--library",
                        help="a library built already (with --no-train) to "
                             "check instead of compiling the model file, "
                             "with --ast (a GPU kit's: no lruc needed)")
    parser.add_argument("--ast", help="the model's `lruc --emit=ast`, with "
                                      "--library")
    parser.add_argument("--simulated-kernels", metavar="TOOL",
                        help="lruc-simulated-kernels: run the GPU half on the "
                             "simulated driver (tests/cuda)")
    args = parser.parse_args()
    defines = dict(d.split("=", 1) for d in args.defines)

    if bool(args.library) != bool(args.ast):
        parser.error("--library and --ast go together")
    if not args.library and not args.model:
        parser.error("a model file, or --library and --ast")
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="lruc-agree-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.library:
        spec = parse_ast(pathlib.Path(args.ast).read_text())
        library_path = pathlib.Path(args.library)
    else:
        spec = load_spec(args.lruc, args.model, defines)
        library_path = work / f"{spec.name}.so"
        command = [args.lruc, args.model, "-o", str(library_path)]
        if not args.train:
            command.append("--no-train")
        command += [f"-D{k}={v}" for k, v in defines.items()]
        subprocess.run(command, check=True)
    library = ModelLibrary(library_path)

    from safetensors.numpy import load_file, save_file
    if args.checkpoint:
        checkpoint = pathlib.Path(args.checkpoint)
        named = load_file(str(checkpoint))
        params = ModelLibrary.pack(named, library.params, library.param_floats)
        state = ModelLibrary.pack(named, library.state, library.state_floats)
    else:
        params, state = library.init(args.seed)
        checkpoint = work / "init.safetensors"
        named = {**ModelLibrary.unpack(params, library.params),
                 **ModelLibrary.unpack(state, library.state)}
        save_file({k: np.ascontiguousarray(v) for k, v in named.items()},
                  str(checkpoint))

    inputs = make_inputs(library, args.batch, args.seed)
    key = (1234 + args.seed, 3)
    lr = 2e-3
    second = (make_inputs(library, args.batch, args.seed + 1),
              (1234 + args.seed, 4), 1.5e-3)
    got = {}
    if args.device in ("cpu", "both"):
        got["lruc"] = lruc_results(
            library, params, state, inputs, key, lr, second,
            stream=lruc_stream(library, params, state, inputs))
    if args.device in ("gpu", "both"):
        if args.simulated_kernels:
            kernels = work / f"{spec.name}.kernels.so"
            subprocess.run([args.simulated_kernels, str(library_path), "-o",
                            str(kernels)], check=True)
            os.environ["LRUC_SIMULATED_KERNELS"] = str(kernels)
        device_library = args.device_library or str(
            pathlib.Path(shutil.which(args.lruc) or args.lruc).resolve()
            .parent.parent / "lib" / "liblruc-device.so")
        try:
            device = Device(device_library)
        except (LibraryError, OSError) as e:
            print(f"agree.py: --device {args.device}: {e}", file=sys.stderr)
            return 2
        print(f"{spec.name}: GPU half on {device.description}")
        gpu = GpuModelLibrary(library, device)
        # Step mode stays the CPU's (lruc-gpu-library-tests checks the
        # GPU's against it).
        got["lruc GPU"] = lruc_results(gpu, params, state, inputs, key, lr,
                                       second)
    report = Report(args.rtol, args.atol)
    mask = output_mask(library, inputs)
    for framework in args.frameworks.split(","):
        run = {"torch": torch_results, "jax": jax_results}[framework]
        ref = run(spec, checkpoint, library, inputs, key, lr, second)
        for side, results in got.items():
            before = len(report.failures)
            label = framework if side == "lruc" else f"{framework} vs {side}"
            compare_all(report, label, ref, results, library, mask)
            print(f"{spec.name} {label}: loss {side} "
                  f"{results['train'][0]:.6f} {framework} "
                  f"{ref['train'][0]:.6f}; "
                  f"{len(report.failures) - before} of the checks disagree")
    for failure in report.failures:
        print("  DISAGREE " + failure)
    print(f"{spec.name}: {report.checks} checks, "
          f"{len(report.failures)} disagree")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
