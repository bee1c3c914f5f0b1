#!/usr/bin/env python3
"""Instructions per element of a model's sequence-sized CUDA kernels, without a GPU.

A kernel that streams an array of B x L x H elements is bound by memory
only while the SMs can issue its instructions faster than the device moves
its bytes; at half the bytes an element (lruc --gpu-storage=bf16) the same
instructions weigh twice as much. This counts them: lruc emits the model's
CUDA source and PTX (NVRTC), ptxas assembles the PTX for the architecture
and nvdisasm prints the SASS; for each kernel whose grid-stride loop runs
over the batch (a bound of `B * ...`) it takes the largest loop of its SASS
(the unrolled grid-stride loop), its instructions and the bytes its stores
write, and divides by the bytes one element's stores write (from the
kernel's output types) to get the elements an iteration handles. An
estimate, not a profile: a loop that holds a rarely taken tail counts both
paths, and the issue rate a kernel reaches depends on more than its count.

  python3 bench/gpu/sass_loops.py [--lruc build/bin/lruc] [--arch sm_90]
      [--nvdisasm PATH] [--top N] [--json FILE] model.lru [lruc flags ...]
  python3 bench/gpu/sass_loops.py --from SOURCE.cu SASS   # counted as they are

nvdisasm is not in the CUDA toolkit's compiler packages here: PyPI's
`nvidia-cuda-nvdisasm` wheel has it (nvidia/cu13/bin/nvdisasm); it is looked
for on PATH, beside ptxas and in the installed wheel.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Bytes one element of an output array of each type takes.
ELEMENT_BYTES = {"float": 4, "cfloat": 8, "int32_t": 4, "int64_t": 8,
                 "lruc::gpu::bf16": 2, "lruc::gpu::cbf16": 4}


def find_tool(name, given):
    if given:
        return given
    found = shutil.which(name)
    if found:
        return found
    for candidate in ["/usr/local/cuda/bin/" + name]:
        if os.path.exists(candidate):
            return candidate
    try:
        import nvidia  # the PyPI wheels' namespace package
        for base in nvidia.__path__:
            for sub in ("cu13", "cu12", "cuda_nvdisasm"):
                path = os.path.join(base, sub, "bin", name)
                if os.path.exists(path):
                    return path
    except ImportError:
        pass
    sys.exit(f"sass_loops.py: no {name} (pip install nvidia-cuda-nvdisasm, "
             f"or --{name} PATH)")


def sequence_kernels(cuda_source):
    """{kernel: bytes its outputs' elements take} for kernels whose
    loop runs over the batch."""
    kernels, name, outputs = {}, None, 0
    header = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\((.*)\) \{')
    for line in cuda_source.splitlines():
        m = header.match(line)
        if m:
            name = m.group(1)
            outputs = sum(ELEMENT_BYTES.get(t.strip(), 4) for t in
                          re.findall(r'(?:^|, )([\w:]+) \*__restrict out\d+', m.group(2)))
            continue
        # A grid-stride loop over the batch, or a kernel by columns' rows.
        if name and outputs and re.search(r'for \(int64_t \w+ = .*< B \*|'
                                          r'const int64_t rows = \(B \*', line):
            kernels[name] = outputs
            name = None
    return kernels


def sass_functions(sass):
    """{kernel: [instruction or label]} in address order."""
    functions, current = {}, None
    for line in sass.splitlines():
        m = re.match(r'\s*\.text\.(\S+):', line)
        if m:
            current = functions.setdefault(m.group(1), [])
            continue
        if current is None:
            continue
        m = re.match(r'\s*(\.L_x_\d+):', line)
        if m:
            current.append(("label", m.group(1)))
            continue
        m = re.search(r'/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;', line)
        if m and not m.group(1).startswith("NOP"):
            current.append(("op", m.group(1)))
    return functions


def largest_loop(body):
    """The largest innermost loop: the instructions from a label to a
    branch back to it, with no other branch back inside (a kernel by
    columns keeps its row loop inside a column loop)."""
    labels, ops = {}, []
    for kind, text in body:
        if kind == "label":
            labels[text] = len(ops)
        else:
            ops.append(text)
    loops = []
    for k, text in enumerate(ops):
        m = re.search(r'\bBRA\b.*`\((\.L_x_\d+)\)', text)
        if m and labels.get(m.group(1), k + 1) <= k:
            loops.append((labels[m.group(1)], k))
    best = []
    for start, end in loops:
        inner = any(start <= s and e <= end and (s, e) != (start, end)
                    for s, e in loops)
        if not inner and end + 1 - start > len(best):
            best = ops[start:end + 1]
    return best


def stored_bytes(loop):
    total = 0
    for text in loop:
        m = re.search(r'\bSTG\.E((?:\.[A-Z0-9]+)*)', text)
        if m:
            mods = m.group(1).split(".")
            total += (1 if "U8" in mods or "S8" in mods else
                      2 if "U16" in mods or "S16" in mods else
                      8 if "64" in mods else 16 if "128" in mods else 4)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lruc", default=os.path.join(ROOT, "build/bin/lruc"))
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--nvdisasm")
    parser.add_argument("--ptxas")
    parser.add_argument("--top", type=int, default=10,
                        help="kernels to list, most instructions an element first")
    parser.add_argument("--json", help="write every kernel's figures here")
    parser.add_argument("--from", dest="given", nargs=2, metavar=("CUDA", "SASS"),
                        help="count an lruc CUDA source and nvdisasm's SASS of "
                             "it instead of building them")
    parser.add_argument("model", nargs="?")
    args, flags = parser.parse_known_args()
    if args.given:
        with open(args.given[0]) as cu, open(args.given[1]) as listing:
            report(args, flags, sequence_kernels(cu.read()), listing.read(),
                   os.path.basename(args.given[0]))
        return
    if not args.model:
        parser.error("a model file, or --from CUDA SASS")
    nvdisasm = find_tool("nvdisasm", args.nvdisasm)
    ptxas = find_tool("ptxas", args.ptxas)
    with tempfile.TemporaryDirectory() as tmp:
        cu, ptx, cubin = (os.path.join(tmp, "model" + e) for e in (".cu", ".ptx", ".cubin"))
        base = [args.lruc, args.model, *flags]
        subprocess.run(base + ["--emit=cuda", "-o", cu], check=True)
        subprocess.run(base + ["--emit=ptx", "--gpu-arch=" + args.arch, "-o", ptx], check=True)
        subprocess.run([ptxas, "-arch=" + args.arch, ptx, "-o", cubin], check=True)
        sass = subprocess.run([nvdisasm, "-c", cubin], check=True,
                              capture_output=True, text=True).stdout
        kernels = sequence_kernels(open(cu).read())
    report(args, flags, kernels, sass, os.path.basename(args.model))


def report(args, flags, kernels, sass, title):
    """Prints (and with --json writes) each kernel's hot loop's figures."""
    functions = sass_functions(sass)
    rows = []
    for name, element_bytes in sorted(kernels.items()):
        loop = largest_loop(functions.get(name, []))
        written = stored_bytes(loop)
        if not loop or not written:
            continue
        elements = written / element_bytes
        rows.append({"kernel": name, "loop_instructions": len(loop),
                     "elements_per_iteration": elements,
                     "instructions_per_element": len(loop) / elements,
                     "stored_bytes_per_element": element_bytes})
    if not rows:
        sys.exit("sass_loops.py: no sequence-sized kernel with a loop found")
    per_element = [r["instructions_per_element"] for r in rows]
    print(f"{title} {' '.join(flags)} ({args.arch}): "
          f"{len(rows)} sequence-sized kernels; instructions an element: "
          f"median {statistics.median(per_element):.1f}, "
          f"mean {statistics.mean(per_element):.1f}, max {max(per_element):.1f}")
    if args.top > 0:
        print(f"{'kernel':<28} {'loop':>6} {'elements':>9} {'instr/elem':>11} "
              f"{'stored B/elem':>14}")
    for r in sorted(rows, key=lambda r: -r["instructions_per_element"])[:args.top]:
        print(f"{r['kernel']:<28} {r['loop_instructions']:>6} "
              f"{r['elements_per_iteration']:>9.1f} {r['instructions_per_element']:>11.1f} "
              f"{r['stored_bytes_per_element']:>14}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
