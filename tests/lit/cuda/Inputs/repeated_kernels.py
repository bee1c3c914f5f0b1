"""Fails if an --emit=cuda source defines two kernels of the same text but
for their names (which the emitter writes as one kernel that both launches
run), or one name twice. A kernel that reports bad data (its op's number
in its code, which each function's report table reads) is exempt."""
import re
import sys

text = open(sys.argv[1]).read()
seen, names = {}, set()
pattern = r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)(\(.*?\n\}\n)'
for name, rest in re.findall(pattern, text, re.S):
    if name in names:
        sys.exit(f"{name} is defined twice")
    names.add(name)
    if rest in seen and "lruc::gpu::report(" not in rest:
        sys.exit(f"{name} is {seen[rest]} again")
    seen[rest] = name
print(f"{len(names)} kernels")
