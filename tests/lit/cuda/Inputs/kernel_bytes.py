"""Prints a kernel's bytes (per example, fixed) from a library's C++
(lruc --emit=cpp): its kGpuKernels and kGpuKernelBytes tables."""
import re
import sys

source = open(sys.argv[1]).read()
names = re.findall(r'"([^"]+)"', re.search(
    r"kGpuKernels\[\] = \{([^}]*)\}", source).group(1))
sizes = [int(x) for x in re.search(
    r"kGpuKernelBytes\[\] = \{([^}]*)\}", source).group(1).split(",")
    if x.strip()]
for name in sys.argv[2:]:
    k = names.index(name)
    print(name, sizes[2 * k], sizes[2 * k + 1])
