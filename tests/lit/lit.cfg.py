# -*- Python -*-
import os
import shlex
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "lruc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".lru", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.lruc_obj_root, "tests", "lit")
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%lruc_src", config.lruc_src_root))
config.substitutions.append(("%lruc_bin", config.lruc_tools_dir))
config.substitutions.append(("%lruc_obj", config.lruc_obj_root))
config.substitutions.append(
    ("%lruc_lib", os.path.join(config.lruc_obj_root, "lib")))
# LRUC_CXX_LAUNCHER and ccache's settings: tests/run.sh compiles the
# tests' model libraries through ccache.
llvm_config.with_system_environment(
    ["HOME", "TMPDIR", "LRUC_CXX_LAUNCHER", "CCACHE_DIR", "CCACHE_MAXSIZE"])
llvm_config.use_default_substitutions()

# Project tools first, then FileCheck/not/count from LLVM.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.lruc_tools_dir, append_path=True)
tools = ["lruc", "lruc-opt", "lru-train", "lru-eval", "lru-predict", "lru-plot", "lru-data",
         "lruc-simulated-kernels", "lruc-gpu-plan", "lruc-random-model",
         "FileCheck", "not",
         "count"]
llvm_config.add_tool_substitutions(tools, [config.lruc_tools_dir, config.llvm_tools_dir])

# The trainer's end-to-end tests read Debian's dataset-fashion-mnist.
if os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
    config.available_features.add("fashion-mnist")

# The CPU's bfloat16 products (--matmul bf16): oneDNN loads and the CPU
# multiplies bfloat16 (AMX or AVX512-BF16). Tests of the error elsewhere
# require its absence.
def cpu_multiplies_bf16():
    import ctypes
    try:
        ctypes.CDLL("libdnnl.so.2")
    except OSError:
        return False
    with open("/proc/cpuinfo") as cpuinfo:
        flags = cpuinfo.read().split()
    return "avx512_bf16" in flags or "amx_bf16" in flags
if cpu_multiplies_bf16():
    config.available_features.add("cpu-bf16")
# A CPU without AVX-512, which a library compiled for it must be refused on.
with open("/proc/cpuinfo") as cpuinfo:
    if "avx512f" not in cpuinfo.read().split():
        config.available_features.add("cpu-without-avx512")
# The sanitizer build (LRUC_SANITIZE), for tests left out of it; a
# program a test compiles to load that build's model libraries (sanitized
# code, which needs the sanitizers' runtime in the process) is compiled
# with %host_program_flags.
sanitize = config.sanitize.upper() in ("ON", "1", "TRUE", "YES")
if sanitize:
    config.available_features.add("sanitizer")
config.substitutions.append(
    ("%host_program_flags",
     "-fsanitize=address,undefined" if sanitize else ""))

# tests/lit/reference: PyTorch and JAX side by side with lruc, where the
# reference Python (bench/reference/setup.sh) has them.
config.substitutions.append(("%reference_python", config.reference_python))
config.substitutions.append(
    ("%reference", os.path.join(config.lruc_src_root, "bench", "reference")))
if config.reference_python and os.path.exists(config.reference_python):
    probe = subprocess.run(
        [config.reference_python, "-c",
         "import importlib.util as u\n"
         "print(*[m for m in ('torch', 'jax')\n"
         "        if u.find_spec(m) and u.find_spec('safetensors')])"],
        capture_output=True, text=True)
    for module in probe.stdout.split():
        config.available_features.add(module)
    # XLA compiles the JAX reference's functions without LLVM's
    # optimisations: the same operations in a quarter less of these tests'
    # time (321 -> 245 CPU seconds; they check numbers, bench/compare
    # times them).
    config.environment["XLA_FLAGS"] = "--xla_backend_optimization_level=0"
    # The frameworks agree.py checks a library against in one run.
    config.substitutions.append(
        ("%agree_frameworks", ",".join(probe.stdout.split())))
    # tests/lit/docs: the tutorial's programs (NumPy and safetensors).
    tutorial = subprocess.run(
        [config.reference_python, "-c", "import numpy, safetensors.numpy"],
        capture_output=True)
    if tutorial.returncode == 0:
        config.available_features.add("safetensors-numpy")

# tests/lit/cuda: the generated kernels through NVRTC (opened at run time,
# as lruc opens it) to PTX, and ptxas, where the CUDA toolkit has both.
def nvrtc_loads():
    import ctypes
    for name in ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                 "/usr/local/cuda/lib64/libnvrtc.so"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            pass
    return False


config.substitutions.append(("%ptxas", config.ptxas or "ptxas"))
# The host compiler lruc builds model libraries with, and the runtime
# headers a library's C++ includes (tests/lit/codegen/units.test), as
# lruc's runtime file names them (cmake/Runtime.cmake).
with open(os.path.join(config.lruc_obj_root, "lib", "lruc",
                       "runtime.txt")) as runtime:
    runtime_includes = [line.split(" ", 1)[1] for line in
                        runtime.read().splitlines()
                        if line.startswith("include ")]
config.substitutions.append(("%host_compiler", config.host_cxx))
config.substitutions.append(
    ("%host_cxx",
     " ".join([config.host_cxx, "-std=c++17", "-march=native"] +
              [shlex.quote("-I" + folder) for folder in runtime_includes])))
if config.ptxas and os.path.exists(config.ptxas) and nvrtc_loads():
    config.available_features.add("nvrtc")

# The simulated CUDA driver and cuBLAS (tests/cuda/SimulatedCuda.cpp): the
# runtime's GPU path on the CPU. Built outside the sanitizer build, and it
# loads NVRTC's PTX, so it needs NVRTC too.
simulated_cuda = os.path.join(config.lruc_obj_root, "lib",
                              "liblruc-simulated-cuda.so")
# It runs a library's CUDA source compiled for the CPU and only loads the
# PTX: NVRTC compiles quickly.
config.substitutions.append(
    ("%simulated_gpu",
     f"env LRUC_CUDA_DRIVER={simulated_cuda} LRUC_CUBLAS={simulated_cuda}"
     " LRUC_NVRTC_OPTIONS=--Ofast-compile=max"))
config.substitutions.append(("%simulated_cuda", simulated_cuda))
if "nvrtc" in config.available_features and os.path.exists(simulated_cuda):
    config.available_features.add("simulated-cuda")
