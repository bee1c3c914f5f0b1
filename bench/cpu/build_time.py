#!/usr/bin/env python3
"""How long `lruc MODEL -o model.so` takes: wall and CPU time (lruc and
the host compiler it runs), each model built with every lruc given and,
for each, with the compiler processes it chooses and with LRUC_JOBS=1.
Rounds alternate between the builds; the median of each is reported, with
its ratio to the first build of the model (machines here are noisy).

  bench/cpu/build_time.py [--lruc PATH ...] [--rounds R] [MODEL.lru ...]

Defaults: build/bin/lruc, 3 rounds, the six Table 9 models (models/).
A second --lruc (an older build) is the baseline to compare against.
"""

import argparse
import os
import pathlib
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(lruc, model, jobs, out):
    """Seconds of wall and CPU time one library build takes."""
    env = dict(os.environ)
    if jobs:
        env["LRUC_JOBS"] = str(jobs)
    else:
        env.pop("LRUC_JOBS", None)
    cpu0, wall0 = children_cpu(), time.perf_counter()
    run = subprocess.run([lruc, str(model), "-o", out], env=env,
                         capture_output=True, text=True)
    wall, cpu = time.perf_counter() - wall0, children_cpu() - cpu0
    if run.returncode != 0:
        sys.exit(f"build_time: {lruc} {model} failed:\n{run.stderr}")
    return wall, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lruc", action="append",
                        help="an lruc to time (repeat to compare builds)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("models", nargs="*", type=pathlib.Path)
    args = parser.parse_args()
    compilers = args.lruc or [str(ROOT / "build/bin/lruc")]
    models = args.models or sorted((ROOT / "models").glob("*.lru"))
    if args.rounds < 1:
        sys.exit("build_time: --rounds must be at least 1")
    print(f"machine: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs (this process may use "
          f"{len(os.sched_getaffinity(0))}); median of {args.rounds} rounds")
    builds = [(lruc, jobs) for lruc in compilers for jobs in (None, 1)]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "model.so")
        for model in models:
            times = {b: [] for b in builds}
            for _ in range(args.rounds):
                for b in builds:
                    times[b].append(build(b[0], model, b[1], out))
            print(f"\n{model.name}")
            first = None
            for b in builds:
                wall = statistics.median(t[0] for t in times[b])
                cpu = statistics.median(t[1] for t in times[b])
                first = first or wall
                jobs = "LRUC_JOBS=1" if b[1] else "default jobs"
                print(f"  {b[0]:40s} {jobs:13s} {wall:6.2f} s wall "
                      f"({wall / first:4.2f}x the first)  {cpu:6.2f} s CPU")


if __name__ == "__main__":
    main()
