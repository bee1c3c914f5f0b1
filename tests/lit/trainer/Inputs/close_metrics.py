"""Exit 0 iff two runs' metrics.jsonl hold the same records, losses (and a
regression's mean absolute errors) within a relative tolerance and everything else (steps, splits, learning rates,
accuracies, example counts) equal; wall-clock times are ignored. With
--losses-only, accuracies may differ too (runs of different precision).

    python close_metrics.py A/metrics.jsonl B/metrics.jsonl RTOL [--losses-only]
"""
import json
import sys

a = [json.loads(line) for line in open(sys.argv[1])]
b = [json.loads(line) for line in open(sys.argv[2])]
rtol = float(sys.argv[3])
if "--losses-only" in sys.argv[4:]:
    for record in a + b:
        record.pop("accuracy", None)
if len(a) != len(b):
    sys.exit(f"{len(a)} records against {len(b)}")
worst = 0.0
for x, y in zip(a, b):
    x.pop("time"), y.pop("time")
    measured = [(name, x.pop(name), y.pop(name)) for name in ("loss", "mae")
                if name in x and name in y]
    if x != y:
        sys.exit(f"records differ: {x} against {y}")
    for name, vx, vy in measured:
        d = abs(vx - vy) / max(abs(vx), 1e-30)
        worst = max(worst, d)
        if d > rtol:
            sys.exit(f"step {x['step']}: {name} {vx} against {vy}")
print(f"{len(a)} records agree (largest relative loss difference {worst:.2g})")
