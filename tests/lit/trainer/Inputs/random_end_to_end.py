"""A random model file (lruc-random-model SEED) through the commands a user
runs, on made-up data of its inputs written as a tensors task:

    python random_end_to_end.py SEED WORKDIR [--gpu SIMULATED_CUDA_SO|device]
        [--prebuilt DIR]
    python random_end_to_end.py SEED --prepare DIR

lruc compiles it; lru-train trains it a few steps (loss and every metric
finite); a run stopped halfway and resumed ends with the same checkpoint
and metrics, bit for bit; two threads record the one thread's losses
within 1e-4; without BatchNorm and dropout, two micro-batches a step
(--accumulate 2) do too; lru-eval on the best checkpoint and lru-predict
on the test split give the test loss the run recorded, lru-eval --split
val on the last checkpoint the last validation's; a run stopped early
(--patience 1) records its best checkpoint's test loss; where the model has
a step mode, lru-predict --stream ends each sequence at forward's
prediction, and streaming it in two pieces (--carry-out, --carry-in)
predicts what streaming it whole does. With --gpu (the simulated CUDA
driver, tests/cuda/SimulatedCuda.cpp) the same run on the GPU path (and,
where checked, its --accumulate 2) records the CPU run's losses within
1e-4 (stopped halfway and resumed, its own, bit for bit; resumed on the
CPU, the CPU's within 1e-4), lru-eval on the GPU gives the CPU's test loss, lru-predict on the
GPU, whole and streamed, predicts what the CPU does within 1e-4, two
pieces streamed on the GPU predict what it streams whole, bit for bit,
and a stream begun on the CPU goes on on the GPU from its carry file.
`--gpu device` runs them on this machine's GPU instead, within 1e-3 (its
exp and division differ from the CPU's in the last bits). Prints
`random_SEED: ... ok` or exits non-zero with the step that failed and its
output.

`--prepare DIR` writes the model file, its portable library (any x86-64
CPU with AVX2) and its manifest into DIR and stops; `--prebuilt DIR` runs
the checks on those (the GPU kit, bench/gpu/kit.sh: its machines have no
lruc).

The data is noise shaped as the manifest's inputs: lengths 1..L (the first
example the whole L), tokens 1..vocab-1 then padding 0, features NaN past
each end (not read), labels of every class, some per-step labels -1 and
some targets NaN (not scored). Pure Python beside the tools.
"""
import dataclasses
import json
import math
import os
import random
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from safetensors_file import pop_option, read_tensors, write_tensors  # noqa: E402

STEPS, BATCH = 4, 4
ROWS = {"train": 24, "val": 8, "test": 8}


class Failure(Exception):
    pass


def run(args, env=None):
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise Failure(f"`{' '.join(args)}` exited {done.returncode}:\n"
                      f"{done.stdout}{done.stderr}")
    return done.stdout + done.stderr


def manifest(source):
    """The library's manifest, as lruc's C++ embeds it (read from there, not
    by loading the library: a sanitizer build's would not load here)."""
    cpp = run(["lruc", source, "--emit=cpp"])
    begin = cpp.index('R"lruc_manifest(') + len('R"lruc_manifest(')
    return json.loads(cpp[begin:cpp.index(')lruc_manifest"', begin)])


def split_tensors(m, rows, rng):
    """{name: (dtype, shape, raw)} for `rows` examples of the model's inputs."""
    inputs = {i["name"]: i["shape"] for i in m["inputs"]}
    vocab = m["params"][0]["shape"][0]  # an embedding's table comes first
    classes = next(o for o in m["outputs"] if o["name"] == "predictions")["shape"][-1]
    out, lengths = {}, {}
    for name in ("tokens", "tokens_a", "tokens_b", "features"):
        if name not in inputs:
            continue
        steps = inputs[name][1]
        suffix = name[len("tokens"):] if name.startswith("tokens") else ""
        length = [steps] + [rng.randint(1, steps) for _ in range(rows - 1)]
        if "lengths" + suffix in inputs:
            lengths[name] = length
            out["lengths" + suffix] = ("I32", [rows], struct.pack(f"<{rows}i", *length))
        else:  # without lengths a sequence runs to its last non-zero token, or all L steps
            length = [steps] * rows
        if name == "features":
            channels = inputs[name][2]
            values = [rng.gauss(0, 1) if t < length[i] else math.nan
                      for i in range(rows) for t in range(steps) for _ in range(channels)]
            out[name] = ("F32", [rows, steps, channels], struct.pack(f"<{len(values)}f", *values))
        else:
            values = [rng.randint(1, vocab - 1) if t < length[i] else 0
                      for i in range(rows) for t in range(steps)]
            out[name] = ("I32", [rows, steps], struct.pack(f"<{len(values)}i", *values))
    shape = [rows] + inputs.get("labels", inputs.get("targets"))[1:]
    count = math.prod(shape)
    if "labels" in inputs:
        labels = [rng.randrange(classes) for _ in range(count)]
        if len(shape) == 2:  # a class a step: some real steps not scored, 0 past the end
            steps = shape[1]
            length = next(iter(lengths.values()), [steps] * rows)
            labels = [(-1 if rng.random() < 0.2 else labels[i * steps + t]) if t < length[i] else 0
                      for i in range(rows) for t in range(steps)]
        out["labels"] = ("I32", shape, struct.pack(f"<{count}i", *labels))
    else:
        targets = [math.nan if rng.random() < 0.2 else rng.gauss(0, 1) for _ in range(count)]
        out["targets"] = ("F32", shape, struct.pack(f"<{count}f", *targets))
    return out


def metrics(path):
    records = [json.loads(line) for line in open(path)]
    for r in records:
        for key in ("loss", "mae"):
            if key in r and (r[key] is None or not math.isfinite(r[key])):
                raise Failure(f"{path}: {key} not finite at step {r['step']}: {r}")
    return records


def same_metrics(a, b, rtol, what, losses_only=False):
    """close_metrics.py: the runs' records alike, losses within rtol (0: bit
    for bit); with losses_only, accuracies may differ (near ties)."""
    try:
        helper("close_metrics.py", a, b, repr(rtol),
               *(["--losses-only"] if losses_only else []))
    except Failure as failure:
        raise Failure(f"{what}: {failure}")


def loss_in(text, what):
    words = text.replace(",", " ").split()
    if "loss" not in words:
        raise Failure(f"{what} printed no loss:\n{text}")
    return float(words[words.index("loss") + 1])


def close(a, b, rtol, what):
    if abs(a - b) > rtol * max(abs(a), abs(b), 1e-30):
        raise Failure(f"{what}: {a} against {b}")


def close_arrays(a, b, rtol, what):
    """Equal NaNs, the rest within rtol of the largest value."""
    scale = max([abs(v) for v in a if not math.isnan(v)] + [1e-30])
    for i, (u, v) in enumerate(zip(a, b)):
        if math.isnan(u) != math.isnan(v) or abs(u - v) > rtol * scale:
            raise Failure(f"{what}: element {i} is {v}, {u} expected")


def predictions(path):
    _, shape, raw = read_tensors(path)["predictions"]
    return shape, struct.unpack(f"<{len(raw) // 4}f", raw)


def test_loss(library, checkpoint, test, out, batch):
    """The loss lru-predict reports for the test split, in batches of `batch`."""
    run(["lru-predict", library, checkpoint, test, "-o", out, "--threads", "1",
         "--batch", batch])
    return struct.unpack("<f", read_tensors(out)["loss"][2])[0]


def helper(script, *args):
    """Runs one of the trainer tests' checking scripts beside this one."""
    return run([sys.executable, os.path.join(HERE, script), *args])


def lru_predict_stream(library, best, inputs, out, *options, env=None):
    run(["lru-predict", library, best, inputs, "-o", out, "--stream", "--threads", "1",
         *options], env=env)


def cut_of(streamed):
    """Where check_pieces cuts the streams of `streamed` (None: one step)."""
    steps = predictions(streamed)[0][1]
    return str(1 + steps // 3) if steps >= 2 else None


def piece_files(work, tag=""):
    """check_pieces' files: the two pieces of the test split, what each
    streamed (tag: the run's) and the carry after each."""
    def files(name):
        return [os.path.join(work, name.format(i)) for i in (1, 2)]
    return (files("piece{}.safetensors"), files(tag + "piece{}-streamed.safetensors"),
            files(tag + "carry{}.safetensors"))


def check_pieces(work, library, best, test, streamed, tag="", env=None, device=()):
    """Streaming the test split in two pieces (--carry-out, then --carry-in)
    predicts what streaming it whole did (`streamed`), bit for bit
    (stream_pieces.py); False where its streams are one step long."""
    cut = cut_of(streamed)
    if cut is None:
        return False
    pieces, outs, carries = piece_files(work, tag)
    helper("stream_pieces.py", "split", test, cut, *pieces)
    lru_predict_stream(library, best, pieces[0], outs[0], *device,
                       "--carry-out", carries[0], env=env)
    lru_predict_stream(library, best, pieces[1], outs[1], *device,
                       "--carry-in", carries[0], "--carry-out", carries[1], env=env)
    helper("stream_pieces.py", "check", streamed, cut, test, *outs, *carries)
    return True


def check_stream(work, library, best, test, whole):
    """Step mode ends each sequence at forward's prediction
    (streamed_matches.py); two pieces stream as the whole does."""
    streamed = os.path.join(work, "streamed.safetensors")
    lru_predict_stream(library, best, test, streamed)
    values = [abs(v) for v in predictions(whole)[1] if not math.isnan(v)]
    atol = 1e-4 * max(values + [1.0])
    helper("streamed_matches.py", streamed, whole, test, "--atol", repr(atol))
    return "stream, pieces" if check_pieces(work, library, best, test, streamed) else "stream"


def check_resume(train, library, whole, parts, what, env=None, device=()):
    """The run of `train` stopped halfway and resumed (in `parts`) ends as
    the run in `whole` did: the same metrics and last checkpoint, bit for
    bit."""
    run(train + [*device, "--out", parts, "--stop-after", str(STEPS // 2)], env=env)
    run(["lru-train", library, "--resume", "--out", parts, "--threads", "1",
         "--log-every", "1000", *device], env=env)
    same_metrics(os.path.join(whole, "metrics.jsonl"), os.path.join(parts, "metrics.jsonl"),
                 0.0, what)
    a = read_tensors(os.path.join(whole, "last.safetensors"))
    b = read_tensors(os.path.join(parts, "last.safetensors"))
    differ = [name for name in a if a[name] != b.get(name)]
    if differ or a.keys() != b.keys():
        raise Failure(f"{what}: the last checkpoints differ ({differ[:3]})")


def build(seed, folder, *flags):
    """The seed's model file, library and manifest in folder: their paths."""
    os.makedirs(folder, exist_ok=True)
    source = os.path.join(folder, f"random_{seed}.lru")
    library = os.path.join(folder, f"random_{seed}.so")
    with open(source, "w") as f:
        f.write(run(["lruc-random-model", str(seed)]))
    run(["lruc", source, *flags, "-o", library])
    with open(os.path.join(folder, f"random_{seed}.manifest.json"), "w") as f:
        json.dump(manifest(source), f)
    return source, library


@dataclasses.dataclass
class Case:
    """What the CPU's checks leave for the GPU's."""
    seed: int
    work: str
    library: str
    test: str  # the test split's file
    train: list  # the lru-train command, without --out
    best: str  # the CPU run's best checkpoint
    metrics: str  # the CPU run's metrics.jsonl
    evaluated: float  # lru-eval's test loss of `best`
    streams: bool  # the model has a step mode lru-predict --stream runs
    accumulated: bool  # --accumulate 2 was checked on the CPU


def check_gpu(gpu, case):
    """The CPU's checks again on the GPU (`gpu`: "device", this machine's,
    or the simulated driver's library), against the CPU's results; the
    names of the checks passed."""
    work, library, test, train = case.work, case.library, case.test, case.train
    best, straight_metrics = case.best, case.metrics
    if gpu == "device":  # this machine's GPU, as lru-train finds it
        env, gpu_rtol = None, 1e-3
    else:  # the simulated driver, running the CPU build of the kernels
        kernels = os.path.join(work, f"random_{case.seed}-kernels.so")
        run(["lruc-simulated-kernels", library, "-o", kernels])
        env, gpu_rtol = dict(os.environ, LRUC_CUDA_DRIVER=gpu, LRUC_CUBLAS=gpu,
                             LRUC_NVRTC_OPTIONS="--Ofast-compile=max",
                             LRUC_SIMULATED_KERNELS=kernels,
                             LRUC_CACHE_DIR=os.path.join(work, "cache")), 1e-4
    checks = []
    run(train + ["--device", "gpu", "--out", os.path.join(work, "gpu")], env=env)
    # Accuracies may differ where two classes' logits nearly tie.
    same_metrics(straight_metrics, os.path.join(work, "gpu/metrics.jsonl"), gpu_rtol,
                 "gpu against cpu", losses_only=True)
    # Stopped and resumed on the GPU: its own run, bit for bit.
    check_resume(train, library, os.path.join(work, "gpu"),
                 os.path.join(work, "gpu-parts"), "resume on the GPU", env,
                 ["--device", "gpu"])
    # Begun on the GPU, resumed on the CPU: the CPU's run, up to rounding.
    moved = os.path.join(work, "gpu-then-cpu")
    run(train + ["--device", "gpu", "--out", moved, "--stop-after", str(STEPS // 2)],
        env=env)
    run(["lru-train", library, "--resume", "--out", moved, "--threads", "1",
         "--log-every", "1000", "--device", "cpu"])
    same_metrics(straight_metrics, os.path.join(moved, "metrics.jsonl"), gpu_rtol,
                 "begun on the GPU, resumed on the CPU", losses_only=True)
    if case.accumulated:
        run(train + ["--device", "gpu", "--accumulate", "2",
                     "--out", os.path.join(work, "gpu-accumulated")], env=env)
        same_metrics(straight_metrics,
                     os.path.join(work, "gpu-accumulated/metrics.jsonl"), gpu_rtol,
                     "--accumulate 2 on the GPU against one call on the CPU",
                     losses_only=True)
    gpu_evaluated = loss_in(run(["lru-eval", library, best, "--device", "gpu"], env=env),
                            "lru-eval --device gpu")
    close(case.evaluated, gpu_evaluated, 1e-3, "lru-eval's test loss on the GPU against the CPU")
    # Predictions on the GPU, whole and (with a step mode) streamed.
    for stream in ([], ["--stream"]) if case.streams else ([],):
        name = "streamed" if stream else "predicted"
        cpu_out = os.path.join(work, f"{name}.safetensors")
        gpu_out = os.path.join(work, f"gpu-{name}.safetensors")
        run(["lru-predict", library, best, test, "-o", gpu_out, "--device", "gpu"]
            + stream, env=env)
        close_arrays(predictions(cpu_out)[1], predictions(gpu_out)[1], gpu_rtol,
                     f"lru-predict {' '.join(stream)} on the GPU against the CPU")
    checks.append("gpu")
    # Streams carried from one piece to the next on the GPU, as it
    # streams them whole.
    if case.streams and check_pieces(work, library, best, test,
                                os.path.join(work, "gpu-streamed.safetensors"),
                                "gpu-", env, ["--device", "gpu"]):
        checks.append("gpu pieces")
        # A stream begun on the CPU goes on on the GPU from the CPU's
        # carry file, as the CPU streams it whole up to rounding.
        streamed = os.path.join(work, "streamed.safetensors")
        pieces, cpu_outs, cpu_carries = piece_files(work)
        _, outs, carries = piece_files(work, "cpu-gpu-")
        lru_predict_stream(library, best, pieces[1], outs[1], "--device", "gpu",
                           "--carry-in", cpu_carries[0], "--carry-out", carries[1], env=env)
        values = [abs(v) for v in predictions(streamed)[1] if not math.isnan(v)]
        helper("stream_pieces.py", "check", streamed, cut_of(streamed), test,
               cpu_outs[0], outs[1], cpu_carries[0], carries[1],
               "--atol", repr(gpu_rtol * max(values + [1.0])))
        checks.append("cpu to gpu")
    return checks


def main():
    args = sys.argv[1:]
    gpu = pop_option(args, "--gpu")
    prebuilt = pop_option(args, "--prebuilt")
    prepare = pop_option(args, "--prepare")
    seed = int(args[0])
    if prepare is not None:
        build(seed, prepare, "--portable")
        print(f"random_{seed}: prepared in {prepare}")
        return
    work = args[1]
    os.makedirs(work, exist_ok=True)
    if prebuilt is None:
        source, library = build(seed, work)
        prebuilt = work
    else:
        source = os.path.join(prebuilt, f"random_{seed}.lru")
        library = os.path.join(prebuilt, f"random_{seed}.so")
    with open(os.path.join(prebuilt, f"random_{seed}.manifest.json")) as f:
        m = json.load(f)
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    rng = random.Random(seed)
    for split, rows in ROWS.items():
        write_tensors(os.path.join(data, f"{split}.safetensors"),
                      split_tensors(m, rows, rng))
    test = os.path.join(data, "test.safetensors")

    def lru_train(steps=STEPS, eval_every=2, threads=1):
        return ["lru-train", library, "--task", "tensors", "--data", data,
                "--steps", str(steps), "--batch", str(BATCH), "--eval-every", str(eval_every),
                "--threads", str(threads), "--log-every", "1000"]
    train = lru_train()
    run(train + ["--out", os.path.join(work, "run")])
    straight_metrics = os.path.join(work, "run/metrics.jsonl")
    straight = metrics(straight_metrics)
    if not any(r.get("split") == "test" for r in straight):
        raise Failure("the run recorded no test evaluation")
    checks = ["train"]

    check_resume(train, library, os.path.join(work, "run"), os.path.join(work, "parts"),
                 "resume")
    checks.append("resume")

    # Two threads train as one does, up to the order of a product's sums.
    run(lru_train(threads=2) + ["--out", os.path.join(work, "threads")])
    same_metrics(straight_metrics, os.path.join(work, "threads/metrics.jsonl"), 1e-4,
                 "--threads 2 against 1", losses_only=True)
    checks.append("threads")

    # Two micro-batches a step (--accumulate 2) train as one batch, up to
    # rounding, where no layer couples a batch's examples (BatchNorm) and
    # no dropout draws masks per micro-batch: each micro-batch's gradient
    # weighs what its mean loss is over.
    text = open(source).read()
    if "norm batch" not in text and "dropout" not in text:
        run(train + ["--out", os.path.join(work, "accumulated"), "--accumulate", "2"])
        same_metrics(straight_metrics, os.path.join(work, "accumulated/metrics.jsonl"),
                     1e-4, "--accumulate 2 against one call", losses_only=True)
        checks.append("accumulate")

    # The test loss, three ways: the run's record, lru-eval, lru-predict.
    recorded = [r for r in straight if r.get("split") == "test"][-1]["loss"]
    best = os.path.join(work, "run/best.safetensors")
    # lru-eval prints 4 decimals. A split's loss does not depend on how it
    # is cut into batches (per-step, NaN targets, class weights).
    evaluated = loss_in(run(["lru-eval", library, best, "--threads", "1"]), "lru-eval")
    close(recorded, evaluated, 1e-3, "lru-eval's test loss against the run's")
    # The last checkpoint is the step of the last validation.
    last_val = [r for r in straight if r.get("split") == "val"][-1]["loss"]
    val = loss_in(run(["lru-eval", library, os.path.join(work, "run/last.safetensors"),
                       "--split", "val", "--threads", "1"]), "lru-eval --split val")
    close(last_val, val, 1e-3, "lru-eval's val loss of the last checkpoint against the run's")
    predicted = os.path.join(work, "predicted.safetensors")
    for batch in ("32", "3"):
        close(recorded, test_loss(library, best, test, predicted, batch), 1e-5,
              f"lru-predict's loss (batches of {batch}) against the run's")
    checks += ["eval", "predict"]

    # Stopped early (--patience 1, an evaluation each step): the test
    # record is the best checkpoint's test loss.
    patient = os.path.join(work, "patience")
    run(lru_train(steps=3 * STEPS, eval_every=1) + ["--patience", "1", "--out", patient])
    tested = [r for r in metrics(os.path.join(patient, "metrics.jsonl"))
              if r.get("split") == "test"]
    if len(tested) != 1:
        raise Failure(f"--patience: {len(tested)} test records, 1 expected")
    close(tested[0]["loss"], test_loss(library, os.path.join(patient, "best.safetensors"),
                                       test, os.path.join(patient, "predicted.safetensors"),
                                       "32"),
          1e-5, "--patience: the test record against the best checkpoint's test loss")
    checks.append("patience")

    # Step mode takes one sequence (not two towers) with its lengths.
    names = {i["name"] for i in m["inputs"]}
    streams = (not m.get("step_unavailable") and "lengths" in names
               and bool(names & {"tokens", "features"}))
    if streams:
        checks.append(check_stream(work, library, best, test, predicted))

    if gpu is not None:
        checks += check_gpu(gpu, Case(seed, work, library, test, train, best, straight_metrics,
                                      evaluated, streams, "accumulate" in checks))
    print(f"random_{seed}: {', '.join(checks)} ok")


if __name__ == "__main__":
    try:
        main()
    except Failure as failure:
        sys.exit(f"random_{sys.argv[1]}: {failure}")
