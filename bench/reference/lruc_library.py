"""A compiled lruc model library, called from Python through its C ABI.

`lruc model.lru -o model.so` writes a library that exports `lruc_model_get`
(runtime/include/lruc_model.h, ABI version 4). This module binds it with
ctypes and NumPy so that the reference implementations can run lruc on the
same parameters and inputs as themselves. Parameters travel as one float32
block (the manifest gives each one's offset and shape); `unpack` and `pack`
convert between the block and a {name: array} dictionary.
"""

import ctypes
import json
import struct

import numpy as np

ABI_VERSION = 4

_c_float_p = ctypes.POINTER(ctypes.c_float)
_c_int64_p = ctypes.POINTER(ctypes.c_int64)
_c_void_pp = ctypes.POINTER(ctypes.c_void_p)
_c_float_pp = ctypes.POINTER(_c_float_p)
_error_args = (ctypes.c_char_p, ctypes.c_size_t)


class _TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("shape", _c_int64_p)]


class _ParamInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("group", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("shape", _c_int64_p),
                ("offset", ctypes.c_uint64), ("size", ctypes.c_uint64),
                ("init", ctypes.c_char_p)]


_Init = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, _c_float_p,
                         _c_float_p, *_error_args)
_Forward = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, _c_float_p,
                            _c_float_p, _c_void_pp, _c_float_pp, *_error_args)
_ForwardTrain = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, _c_float_p,
                                 _c_float_p, _c_void_pp, _c_int64_p,
                                 _c_float_pp, _c_float_p, *_error_args)
_Backward = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, _c_float_p,
                             _c_float_p, _c_void_pp, _c_int64_p, _c_float_p,
                             _c_float_p, *_error_args)
_TrainStep = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, _c_float_p,
                              _c_float_p, _c_float_p, _c_float_p,
                              ctypes.c_float, ctypes.c_float, _c_void_pp,
                              _c_int64_p, _c_float_pp, *_error_args)
_StepReset = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, _c_float_p,
                              *_error_args)
_Step = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, _c_float_p,
                         _c_float_p, _c_float_p, _c_void_pp, _c_float_pp,
                         *_error_args)


class _Model(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_uint32), ("struct_size", ctypes.c_uint32),
        ("name", ctypes.c_char_p), ("manifest", ctypes.c_char_p),
        ("param_floats", ctypes.c_uint64), ("state_floats", ctypes.c_uint64),
        ("num_params", ctypes.c_int32), ("params", ctypes.POINTER(_ParamInfo)),
        ("num_state", ctypes.c_int32), ("state", ctypes.POINTER(_ParamInfo)),
        ("num_inputs", ctypes.c_int32),
        ("inputs", ctypes.POINTER(_TensorInfo)),
        ("num_outputs", ctypes.c_int32),
        ("outputs", ctypes.POINTER(_TensorInfo)),
        ("init", _Init), ("forward", _Forward),
        ("forward_train", _ForwardTrain), ("backward", _Backward),
        ("train_step", _TrainStep),
        ("step_unavailable", ctypes.c_char_p),
        ("carry_floats", ctypes.c_uint64),
        ("num_step_inputs", ctypes.c_int32),
        ("step_inputs", ctypes.POINTER(_TensorInfo)),
        ("num_step_outputs", ctypes.c_int32),
        ("step_outputs", ctypes.POINTER(_TensorInfo)),
        ("step_reset", _StepReset), ("step", _Step),
        # Gradient accumulation (lru-train --accumulate); not called here.
        ("accumulate_gradients", ctypes.c_void_p),
        ("apply_gradients", ctypes.c_void_p),
    ]


class LibraryError(RuntimeError):
    """An entry point of the library returned an error."""


_NUMPY_DTYPES = {"float": np.float32, "int32_t": np.int32, "int64_t": np.int64}


def blas_core(library_name="libopenblas.so.0"):
    """The kernels OpenBLAS runs in this process (as loaded by now)."""
    try:
        blas = ctypes.CDLL(library_name)
        blas.openblas_get_corename.restype = ctypes.c_char_p
        return blas.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "unknown"


# /proc/cpuinfo's names for the x86 extensions a library records in its
# ELF section .lruc_cpu (runtime/core/include/lruc/core/CpuFeatures.h),
# where they differ from the records'.
_CPUINFO_NAMES = {"sse4.1": "sse4_1", "sse4.2": "sse4_2", "bmi": "bmi1",
                  "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16",
                  "avx512vbmi2": "avx512_vbmi2",
                  "avx512bitalg": "avx512_bitalg",
                  "avx512vpopcntdq": "avx512_vpopcntdq"}


def _elf_section(path, name):
    """The bytes of the section `name` of the 64-bit ELF file `path`; empty
    where it has none (or is no such file)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2:
        return b""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shentsize != 64 or shstrndx >= shnum or shoff + 64 * shnum > len(data):
        return b""

    def header(i):  # sh_name, sh_type, sh_offset, sh_size
        fields = struct.unpack_from("<IIQQQQ", data, shoff + 64 * i)
        return fields[0], fields[1], fields[4], fields[5]

    _, _, names_at, names_size = header(shstrndx)
    names = data[names_at:names_at + names_size]
    for i in range(shnum):
        at, kind, offset, size = header(i)
        end = names.find(b"\0", at)
        if names[at:end] == name.encode() and kind != 8:  # 8: SHT_NOBITS
            return data[offset:offset + size]
    return b""


def _check_cpu(path):
    """Raises LibraryError when the library was compiled for x86 extensions
    this CPU lacks (loaded, it would die of SIGILL), as lru-train does."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = set(cpuinfo.read().split())
    except OSError:
        return
    records = _elf_section(path, ".lruc_cpu").replace(b"\0", b" ").split()
    missing = [name.decode() for name in dict.fromkeys(records)
               if _CPUINFO_NAMES.get(name.decode(), name.decode()) not in flags]
    if missing:
        raise LibraryError(
            f"{path}: compiled for a CPU with {', '.join(missing)}, which this "
            f"CPU lacks (a library is built for the machine that compiles "
            f"it): compile it on this machine (`lruc model.lru -o model.so`), "
            f"or with `lruc --portable` for any x86-64 CPU with AVX2 and FMA")


def _table(dll, symbol, table_type, version):
    """The table `symbol(version)` of a library returns (NULL: None)."""
    get = getattr(dll, symbol)
    get.restype = ctypes.POINTER(table_type)
    get.argtypes = [ctypes.c_uint32]
    table = get(version)
    return table.contents if table else None


def _ptr(array, ctype=ctypes.c_float):
    return array.ctypes.data_as(ctypes.POINTER(ctype))


class ModelLibrary:
    """One loaded model library: its manifest and its entry points."""

    def __init__(self, path):
        _check_cpu(path)
        self._dll = ctypes.CDLL(str(path))
        self._model = _table(self._dll, "lruc_model_get", _Model, ABI_VERSION)
        if self._model is None:
            raise LibraryError(f"{path}: the library does not speak ABI version "
                               f"{ABI_VERSION}: rebuild it with this lruc")
        self.manifest = json.loads(self._model.manifest.decode())
        self.name = self.manifest["model"]
        self.params = self.manifest["params"]
        self.state = self.manifest["state"]
        self.inputs = self.manifest["inputs"]
        self.outputs = self.manifest["outputs"]
        self.param_floats = int(self._model.param_floats)
        self.state_floats = int(self._model.state_floats)

    # -- blocks <-> named arrays ------------------------------------------
    @staticmethod
    def unpack(block, entries):
        """{name: array} views of a parameter (or state) block."""
        out = {}
        for e in entries:
            size = int(np.prod(e["shape"], dtype=np.int64))
            out[e["name"]] = block[e["offset"]:e["offset"] + size].reshape(
                e["shape"])
        return out

    @staticmethod
    def pack(named, entries, floats):
        """A float32 block holding `named` (every entry must be present)."""
        block = np.zeros(floats, np.float32)
        for e in entries:
            if e["name"] not in named:
                raise KeyError(f"no tensor named {e['name']}")
            value = np.asarray(named[e["name"]], np.float32)
            if list(value.shape) != list(e["shape"]):
                raise ValueError(f"{e['name']}: shape {list(value.shape)}, the "
                                 f"model's is {e['shape']}")
            block[e["offset"]:e["offset"] + value.size] = value.reshape(-1)
        return block

    def set_cpu_matmul(self, name):
        """The library's matrix products from now on: "fp32" or "bf16"
        (bfloat16 inputs through oneDNN, docs/backend-cpu.md); LibraryError
        with the reason where this machine cannot."""
        if name not in ("fp32", "bf16"):
            raise ValueError(f"matmul {name}: the CPU's are fp32 or bf16")
        fn = self._dll.lruc_cpu_set_matmul
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
        self._call(fn, int(name == "bf16"))

    # -- calls -------------------------------------------------------------
    def _call(self, fn, *args):
        error = ctypes.create_string_buffer(4096)
        if fn(*args, error, len(error)) != 0:
            raise LibraryError(f"{self.name}: {error.value.decode()}")

    def _inputs(self, inputs):
        """(batch, void** array, keep-alive list) of the model inputs."""
        arrays, batch = [], None
        for info in self.inputs:
            value = np.ascontiguousarray(inputs[info["name"]],
                                         _NUMPY_DTYPES[info["dtype"]])
            arrays.append(value)
            if info["shape"] and info["shape"][0] == -1:
                batch = value.shape[0]
        pointers = (ctypes.c_void_p * len(arrays))(
            *[a.ctypes.data for a in arrays])
        return batch, pointers, arrays

    def _output_arrays(self, batch):
        arrays = [np.zeros([batch if d == -1 else d for d in o["shape"]],
                           np.float32) for o in self.outputs]
        pointers = (_c_float_p * len(arrays))(*[_ptr(a) for a in arrays])
        return arrays, pointers

    def init(self, seed):
        params = np.zeros(self.param_floats, np.float32)
        state = np.zeros(max(self.state_floats, 1), np.float32)
        self._call(self._model.init, seed, _ptr(params), _ptr(state))
        return params, state[:self.state_floats]

    def forward(self, params, state, inputs):
        """Inference: the loss and the predictions."""
        batch, pointers, keep = self._inputs(inputs)
        outputs, out_ptrs = self._output_arrays(batch)
        state = np.ascontiguousarray(state, np.float32)
        self._call(self._model.forward, batch, _ptr(params), _ptr(state),
                   pointers, out_ptrs)
        del keep
        return outputs

    def forward_train(self, params, state, inputs, dropout_key):
        """Train mode: the loss, the predictions and the new running stats."""
        batch, pointers, keep = self._inputs(inputs)
        outputs, out_ptrs = self._output_arrays(batch)
        key = np.asarray(dropout_key, np.int64)
        new_state = np.zeros(max(self.state_floats, 1), np.float32)
        state = np.ascontiguousarray(state, np.float32)
        self._call(self._model.forward_train, batch, _ptr(params), _ptr(state),
                   pointers, _ptr(key, ctypes.c_int64), out_ptrs,
                   _ptr(new_state))
        del keep
        return outputs, new_state[:self.state_floats]

    def backward(self, params, state, inputs, dropout_key):
        """The train-mode loss and the gradient block."""
        batch, pointers, keep = self._inputs(inputs)
        key = np.asarray(dropout_key, np.int64)
        loss = np.zeros(1, np.float32)
        grads = np.zeros(self.param_floats, np.float32)
        state = np.ascontiguousarray(state, np.float32)
        self._call(self._model.backward, batch, _ptr(params), _ptr(state),
                   pointers, _ptr(key, ctypes.c_int64), _ptr(loss), _ptr(grads))
        del keep
        return float(loss[0]), grads

    def train_step(self, params, adam_m, adam_v, state, lr, step, inputs,
                   dropout_key):
        """One AdamW step on copies: (outputs, params, m, v, state)."""
        params, adam_m, adam_v = (np.array(a, np.float32)
                                  for a in (params, adam_m, adam_v))
        state = np.array(state, np.float32)
        state_block = state if state.size else np.zeros(1, np.float32)
        batch, pointers, keep = self._inputs(inputs)
        outputs, out_ptrs = self._output_arrays(batch)
        key = np.asarray(dropout_key, np.int64)
        self._call(self._model.train_step, batch, _ptr(params), _ptr(adam_m),
                   _ptr(adam_v), _ptr(state_block), float(lr), float(step),
                   pointers, _ptr(key, ctypes.c_int64), out_ptrs)
        del keep
        return outputs, params, adam_m, adam_v, state_block[:state.size]

    # -- step mode ---------------------------------------------------------
    @property
    def step_mode(self):
        return bool(self._model.step)

    def step_reset(self, batch):
        carry = np.zeros(batch * int(self._model.carry_floats), np.float32)
        self._call(self._model.step_reset, batch, _ptr(carry))
        return carry

    def step_stream(self, params, state, batch, carry=None):
        """Step mode for `batch` streams: a StepStream."""
        return StepStream(self, params, state, batch, carry)

    def step(self, params, state, carry, inputs):
        """Feeds one step (inputs shaped [batch, 1, ...]); carry in place."""
        batch = np.shape(inputs[self.manifest["step"]["inputs"][0]["name"]])[0]
        return self.step_stream(params, state, batch, carry).step(inputs)


def _block(array, floats, what):
    """`array` itself (not a copy, so that updates in place are seen) as a
    C-contiguous float32 block of `floats` floats, at least one."""
    if (not isinstance(array, np.ndarray) or array.dtype != np.float32
            or not array.flags.c_contiguous or array.size != floats):
        raise ValueError(f"{what}: expected a C-contiguous float32 array of "
                         f"{floats} floats")
    return array if floats else np.zeros(1, np.float32)


class StepStream:
    """Step mode over `batch` streams, its call's arguments made once.

    A serving loop calls `step` once per token; building the ctypes
    arguments on every call would cost as much as a small model's step.
    The stream reads the parameter and state blocks it was made with on
    every step (update them in place, e.g. by a train step, and the next
    step uses the new values) and owns its carry (the caller's, updated
    in place, when given); `reset` starts every stream again.
    """

    def __init__(self, library, params, state, batch, carry=None):
        model = library._model
        if not model.step:
            raise LibraryError(f"{library.name}: no step mode: "
                               f"{model.step_unavailable.decode()}")
        info = library.manifest["step"]
        self.params = _block(params, library.param_floats, "params")
        self.state = _block(state, library.state_floats, "state")
        floats = batch * int(model.carry_floats)
        if carry is None:
            carry = np.zeros(floats, np.float32)
        self.carry = _block(carry, floats, "carry")
        self._names = [i["name"] for i in info["inputs"]]
        self._inputs = [np.zeros([batch if d == -1 else d for d in i["shape"]],
                                 _NUMPY_DTYPES[i["dtype"]])
                        for i in info["inputs"]]
        self._outputs = [np.zeros([batch if d == -1 else d
                                   for d in o["shape"]], np.float32)
                         for o in info["outputs"]]
        self._error = ctypes.create_string_buffer(4096)
        self._library = library
        self._reset = model.step_reset
        self._step = model.step
        self._args = (
            batch, _ptr(self.params), _ptr(self.state), _ptr(self.carry),
            (ctypes.c_void_p * len(self._inputs))(
                *[a.ctypes.data for a in self._inputs]),
            (_c_float_p * len(self._outputs))(
                *[_ptr(a) for a in self._outputs]),
            self._error, len(self._error))

    def reset(self):
        batch, carry = self._args[0], self._args[3]
        if self._reset(batch, carry, self._error, len(self._error)) != 0:
            raise LibraryError(f"{self._library.name}: "
                               f"{self._error.value.decode()}")

    def step(self, inputs):
        """One token of every stream ({name: [batch, 1, ...]}); the step's
        outputs (predictions), new arrays."""
        for name, buffer in zip(self._names, self._inputs):
            value = inputs[name]
            if np.shape(value) != buffer.shape:
                raise ValueError(f"{name}: shape {list(np.shape(value))}, "
                                 f"the step takes {list(buffer.shape)}")
            buffer[...] = value
        if self._step(*self._args) != 0:
            raise LibraryError(f"{self._library.name}: "
                               f"{self._error.value.decode()}")
        return [o.copy() for o in self._outputs]


# -- The library's GPU half on a CUDA device ----------------------------------
#
# runtime/include/lruc_gpu.h (the schedule of the library's CUDA kernels)
# through runtime/include/lruc_device.h (liblruc-device.so: the runtime's
# device, CUDA opened at run time). On a machine without a GPU the same
# calls run on the simulated driver of tests/cuda ($LRUC_CUDA_DRIVER,
# $LRUC_CUBLAS and $LRUC_SIMULATED_KERNELS).

GPU_ABI_VERSION = 6
COPY_HOST_TO_DEVICE, COPY_DEVICE_TO_HOST = 1, 2

_vp = ctypes.c_void_p
_GpuWorkspaceBytes = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_int64)
_GpuForward = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _vp, ctypes.c_int64, _vp,
                               _vp, _c_void_pp, _c_void_pp, *_error_args)
_GpuForwardTrain = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _vp, ctypes.c_int64,
                                    _vp, _vp, _c_void_pp, _c_int64_p,
                                    _c_void_pp, _vp, *_error_args)
_GpuBackward = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _vp, ctypes.c_int64, _vp,
                                _vp, _c_void_pp, _c_int64_p, _vp, _vp,
                                *_error_args)
_GpuTrainStep = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _vp, ctypes.c_int64, _vp,
                                 _vp, _vp, _vp, ctypes.c_float, ctypes.c_float,
                                 _c_void_pp, _c_int64_p, _c_void_pp,
                                 *_error_args)


class _GpuModel(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_uint32), ("struct_size", ctypes.c_uint32),
        ("num_kernels", ctypes.c_int32),
        ("kernels", ctypes.POINTER(ctypes.c_char_p)),
        ("workspace_bytes", _GpuWorkspaceBytes), ("forward", _GpuForward),
        ("forward_train", _GpuForwardTrain), ("backward", _GpuBackward),
        ("train_step", _GpuTrainStep), ("step_reset", _vp), ("step", _vp),
        ("kernel_bytes", _c_int64_p), ("status_error", _vp),
        ("activations", ctypes.c_int32),
        ("accumulate_gradients", _vp), ("apply_gradients", _vp),
    ]


class Device:
    """A CUDA device (liblruc-device.so, `library`), or LibraryError."""

    def __init__(self, library, ordinal=0):
        self._dll = dll = ctypes.CDLL(str(library))
        for name, restype, argtypes in (
                ("lruc_device_open", _vp, [ctypes.c_int, *_error_args]),
                ("lruc_device_close", None, [_vp]),
                ("lruc_device_description", ctypes.c_char_p, [_vp]),
                ("lruc_device_load_kernels", ctypes.c_int,
                 [_vp, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                  ctypes.c_int, *_error_args]),
                ("lruc_device_ops", _vp, [_vp]),
                ("lruc_device_allocate", _vp,
                 [_vp, ctypes.c_size_t, *_error_args]),
                ("lruc_device_release", None, [_vp, _vp]),
                ("lruc_device_copy", ctypes.c_int,
                 [_vp, _vp, _vp, ctypes.c_size_t, ctypes.c_int,
                  *_error_args])):
            fn = getattr(dll, name)
            fn.restype, fn.argtypes = restype, argtypes
        error = ctypes.create_string_buffer(4096)
        self._handle = dll.lruc_device_open(ordinal, error, len(error))
        if not self._handle:
            raise LibraryError(f"no CUDA device: {error.value.decode()}")
        self.description = dll.lruc_device_description(self._handle).decode()

    def _check(self, status, error, what):
        if status:
            raise LibraryError(f"{what}: {error.value.decode()}")

    def close(self):
        if self._handle:
            self._dll.lruc_device_close(self._handle)
            self._handle = None

    def load_kernels(self, source, names, count):
        error = ctypes.create_string_buffer(65536)
        self._check(self._dll.lruc_device_load_kernels(
            self._handle, source, names, count, error, len(error)), error,
            "the library's kernels")

    @property
    def ops(self):
        return self._dll.lruc_device_ops(self._handle)

    def allocate(self, nbytes):
        error = ctypes.create_string_buffer(4096)
        memory = self._dll.lruc_device_allocate(self._handle, max(nbytes, 4),
                                                error, len(error))
        if not memory:
            raise LibraryError(f"device memory: {error.value.decode()}")
        return memory

    def release(self, memory):
        self._dll.lruc_device_release(self._handle, memory)

    def copy(self, dst, src, nbytes, kind):
        error = ctypes.create_string_buffer(4096)
        self._check(self._dll.lruc_device_copy(self._handle, dst, src, nbytes,
                                               kind, error, len(error)),
                    error, "copy")


class GpuModelLibrary:
    """A model library's GPU half on `device`: ModelLibrary's forward,
    forward_train, backward and train_step, host arrays in and out (each
    call uploads its arrays and brings its results back)."""

    def __init__(self, library, device):
        self.library, self.device = library, device
        self._gpu = _table(library._dll, "lruc_gpu_model_get", _GpuModel,
                           GPU_ABI_VERSION)
        if self._gpu is None:
            raise LibraryError(f"{library.name}: the library has no GPU half "
                               f"of version {GPU_ABI_VERSION}")
        source = library._dll.lruc_cuda_source
        source.restype = ctypes.c_char_p
        device.load_kernels(source(), self._gpu.kernels, self._gpu.num_kernels)

    def _call(self, fn, batch, arrays, results, make_args, updated=()):
        """Uploads `arrays` ({name: host array}), allocates `results`
        ({name: host array to fill}) and the workspace, calls fn(ops,
        workspace, batch, *make_args(pointers)), and brings the results
        back, and the arrays named in `updated` (changed in place)."""
        device, owned = self.device, []
        try:
            def upload(a):
                p = device.allocate(a.nbytes)
                owned.append(p)
                device.copy(p, a.ctypes.data, a.nbytes, COPY_HOST_TO_DEVICE)
                return p
            arrays = {k: np.ascontiguousarray(a) for k, a in arrays.items()}
            pointers = {name: upload(a) for name, a in arrays.items()}
            for name, a in results.items():
                pointers[name] = device.allocate(a.nbytes)
                owned.append(pointers[name])
            workspace = device.allocate(self._gpu.workspace_bytes(batch))
            owned.append(workspace)
            error = ctypes.create_string_buffer(4096)
            if fn(device.ops, workspace, batch, *make_args(pointers), error,
                  len(error)) != 0:
                raise LibraryError(f"{self.library.name} (GPU): "
                                   f"{error.value.decode()}")
            back = {**results, **{k: arrays[k] for k in updated}}
            for name, a in back.items():
                device.copy(a.ctypes.data, pointers[name], a.nbytes,
                            COPY_DEVICE_TO_HOST)
        finally:
            for p in owned:
                device.release(p)

    def _inputs(self, inputs):
        batch, _, arrays = self.library._inputs(inputs)
        return batch, {f"in{k}": a for k, a in enumerate(arrays)}

    @staticmethod
    def _pointer_array(pointers, prefix, count):
        return (ctypes.c_void_p * max(count, 1))(
            *[pointers[f"{prefix}{k}"] for k in range(count)])

    @staticmethod
    def _one_or_more(values, floats):
        """A float32 block to upload: `values`, or one float for an empty
        block (device memory of 0 bytes is no allocation)."""
        return np.ascontiguousarray(values if floats else np.zeros(1),
                                    np.float32)

    def forward(self, params, state, inputs):
        lib = self.library
        batch, arrays = self._inputs(inputs)
        outputs = lib._output_arrays(batch)[0]
        arrays.update(params=self._one_or_more(params, lib.param_floats),
                      state=self._one_or_more(state, lib.state_floats))
        results = {f"out{k}": o for k, o in enumerate(outputs)}
        self._call(self._gpu.forward, batch, arrays, results, lambda p: (
            p["params"], p["state"],
            self._pointer_array(p, "in", len(lib.inputs)),
            self._pointer_array(p, "out", len(outputs))))
        return outputs

    def forward_train(self, params, state, inputs, dropout_key):
        lib = self.library
        batch, arrays = self._inputs(inputs)
        outputs = lib._output_arrays(batch)[0]
        new_state = np.zeros(max(lib.state_floats, 1), np.float32)
        key = np.asarray(dropout_key, np.int64)
        arrays.update(params=self._one_or_more(params, lib.param_floats),
                      state=self._one_or_more(state, lib.state_floats))
        results = {f"out{k}": o for k, o in enumerate(outputs)}
        results["new_state"] = new_state
        self._call(self._gpu.forward_train, batch, arrays, results, lambda p: (
            p["params"], p["state"],
            self._pointer_array(p, "in", len(lib.inputs)),
            _ptr(key, ctypes.c_int64),
            self._pointer_array(p, "out", len(outputs)), p["new_state"]))
        return outputs, new_state[:lib.state_floats]

    def backward(self, params, state, inputs, dropout_key):
        lib = self.library
        batch, arrays = self._inputs(inputs)
        loss = np.zeros(1, np.float32)
        grads = np.zeros(lib.param_floats, np.float32)
        key = np.asarray(dropout_key, np.int64)
        arrays.update(params=self._one_or_more(params, lib.param_floats),
                      state=self._one_or_more(state, lib.state_floats))
        self._call(self._gpu.backward, batch, arrays,
                   {"loss": loss, "grads": grads}, lambda p: (
                       p["params"], p["state"],
                       self._pointer_array(p, "in", len(lib.inputs)),
                       _ptr(key, ctypes.c_int64), p["loss"], p["grads"]))
        return float(loss[0]), grads

    def train_step(self, params, adam_m, adam_v, state, lr, step, inputs,
                   dropout_key):
        """One AdamW step: (outputs, params, m, v, state), new arrays."""
        lib = self.library
        batch, arrays = self._inputs(inputs)
        outputs = lib._output_arrays(batch)[0]
        key = np.asarray(dropout_key, np.int64)
        blocks = dict(params=np.array(params, np.float32),
                      adam_m=np.array(adam_m, np.float32),
                      adam_v=np.array(adam_v, np.float32),
                      state=self._one_or_more(state, lib.state_floats).copy())
        results = {f"out{k}": o for k, o in enumerate(outputs)}
        names = ("params", "adam_m", "adam_v", "state")
        arrays.update(blocks)
        self._call(self._gpu.train_step, batch, arrays, results, lambda p: (
            *[p[n] for n in names], float(lr), float(step),
            self._pointer_array(p, "in", len(lib.inputs)),
            _ptr(key, ctypes.c_int64),
            self._pointer_array(p, "out", len(outputs))), updated=names)
        return (outputs, blocks["params"], blocks["adam_m"], blocks["adam_v"],
                blocks["state"][:lib.state_floats])
