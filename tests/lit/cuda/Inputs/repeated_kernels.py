"""Fails if an --emit=cuda source defines two kernels of the same text but
for their names (which the emitter writes as one kernel that both launches
run), or one name twice. Kernels that report bad data or draw dropouts are
no exception: the op a report names and a dropout's site are arguments."""
import re
import sys

text = open(sys.argv[1]).read()
seen, names = {}, set()
pattern = r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)(\(.*?\n\}\n)'
for name, rest in re.findall(pattern, text, re.S):
    if name in names:
        sys.exit(f"{name} is defined twice")
    names.add(name)
    if rest in seen:
        sys.exit(f"{name} is {seen[rest]} again")
    seen[rest] = name
print(f"{len(names)} kernels")
