"""Input conversion and output wrapping: the Python half of the front door.

Every public function comes here with whatever the caller passed. The input becomes a
NumPy view of the same memory (no copy where the memory can be read where it lies),
its dtype is promoted as described below, the native layer computes, and the outputs
are handed back in the caller's framework.

dtype rules (decided for batchlin; numpy.linalg's own behaviour noted):

- float32 and float64 are computed in their own precision.
- integers and bool are computed in float64 and returned as float64, as numpy.linalg
  does (torch.linalg rejects them; batchlin follows NumPy for every framework).
- float16 and bfloat16 are computed in float32 and returned as float32. numpy.linalg
  raises TypeError for float16; scipy.linalg computes it in float32, and so does
  batchlin (docs/ARCHITECTURE.md: half precision computed in float32). The result stays float32 so
  that no precision is silently thrown away.
- complex, object, string and other types raise DTypeError (a ValueError that is also
  a TypeError, so code written for numpy.linalg's TypeError catches it too).

Device memory (CUDA): every operation on torch CUDA tensors and CuPy arrays goes to the
native layer's one device call (`_native.DeviceCall`, made once per input layout by
`device_spec` below and run by `batchlin.torch._cuda` for torch, `cupy_run` for CuPy), on
the input's device (torch's ``tensor.get_device()``, CuPy's ``a.device.id``): the input
is read where it lies (a contiguous copy is made on the device, by the framework, only
when its batch dimensions do not collapse to one stride or a stride is negative), dtypes
are promoted on the device as above, the outputs are allocated by the caller's framework
on the same device (small ones as views into one allocation: `SHARED_OUTPUTS_MAX`), and
the work is queued on that device's current stream with no host synchronisation. Which
operations a GPU runs, and which devices exist, is the core's answer: what it cannot do
comes back as its UnavailableError, with its message. JAX arrays (CPU and GPU, concrete
or traced) go through XLA's FFI instead (`batchlin/_jax.py`); they reach `to_host` below
only where batchlin's FFI handlers could not be registered with the installed jaxlib.
Other devices and other DLPack producers on a GPU raise UnavailableError saying why
(`device_error`).
"""

from __future__ import annotations

import os
import sys

import numpy as np

from . import _native

UnavailableError = _native.UnavailableError


class DTypeError(ValueError, TypeError):
    """The input's element type is not one batchlin computes in (complex, object, ...)."""


DTypeError.__module__ = "batchlin"  # shown as batchlin.DTypeError, where users catch it


_ndarray = np.ndarray
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)

# DLPack device types (dlpack.h).
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_ROCM, _DL_CUDA_MANAGED = 1, 2, 3, 10, 13
_DL_NAMES = {_DL_CUDA: "cuda", _DL_CUDA_HOST: "cuda_host", _DL_ROCM: "rocm",
             _DL_CUDA_MANAGED: "cuda_managed", 4: "opencl", 7: "vulkan", 8: "metal",
             9: "vpi", 14: "oneapi", 15: "webgpu", 16: "hexagon", 17: "maia"}


def promote_numpy(x: np.ndarray) -> np.ndarray:
    """A float32/float64 array in native byte order holding `x`'s values (x itself
    when it already is one)."""
    dt = x.dtype
    if dt is F32 or dt is F64:
        return x
    kind = dt.kind
    if kind == "f":
        if dt.itemsize <= 4:
            return x.astype(F32)  # float16 (and float32 in a foreign byte order)
        if dt.itemsize == 8:
            return x.astype(F64)  # float64 in a foreign byte order
        raise DTypeError(
            f"batchlin computes in float32 and float64; got {dt} (long double): "
            "convert it with .astype(numpy.float64)")
    if kind in "biu":
        return x.astype(F64)
    if kind == "c":
        raise DTypeError(
            f"batchlin does not support complex input yet (got {dt}); "
            "it computes real float32 and float64 matrices")
    if dt.name == "bfloat16":  # ml_dtypes' bfloat16 (JAX)
        return x.astype(F32)
    raise DTypeError(f"batchlin computes in float32 and float64; got dtype {dt}")


def arg_type_error(fn: str, name: str, want: str, v) -> TypeError:
    """`batchlin.svd: full_matrices must be a bool, got str`: the function, the argument,
    what it takes and what it got."""
    return TypeError(f"batchlin.{fn}: {name} must be {want}, got {type(v).__name__}")


def check_bool(fn: str, name: str, v) -> bool:
    """A bool argument (NumPy's bool too, as numpy.linalg takes it); anything else is a
    TypeError naming the argument and the function."""
    if v is True or v is False:
        return v
    if isinstance(v, np.bool_):
        return bool(v)
    raise arg_type_error(fn, name, "a bool", v)


def check_str(fn: str, name: str, v) -> None:
    if not isinstance(v, str):
        raise arg_type_error(fn, name, "a str", v)


def check_backend(fn: str, backend) -> None:
    if backend is not None and not isinstance(backend, str):
        raise arg_type_error(fn, "backend", "a str or None", backend)


def not_an_array(a, why: str = "") -> TypeError:
    return TypeError(
        f"batchlin expects an array [..., M, N] (NumPy array, torch tensor, JAX or CuPy "
        f"array, anything with __dlpack__, or a nested list of numbers); got "
        f"{type(a).__module__}.{type(a).__qualname__}" + (f" ({why})" if why else ""))


# ---------------------------------------------------------------------------------------
# CUDA

_cuda_libs_state = None
_cuda_libs_keep = []


def cuda_libs() -> None:
    """Make NVRTC findable before the core first opens its CUDA backend.

    The core loads libcuda and libnvrtc at run time by name. The driver is on the loader's
    path wherever there is a GPU; NVRTC often is not (pip-installed PyTorch and CuPy bring
    their own copy in site-packages/nvidia/*/lib, the CUDA toolkit keeps it in
    /usr/local/cuda/lib64). When the loader cannot find it by name, the first copy found
    there is loaded here (with its builtins), so that the core's lookup by soname finds
    the already-loaded library. Runs once; does nothing off Linux.
    """
    global _cuda_libs_state
    if _cuda_libs_state is not None:
        return
    _cuda_libs_state = "searched"
    cusolver_path()
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import glob

    for name in ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"):
        try:
            _cuda_libs_keep.append(ctypes.CDLL(name))  # loaded already, or on the path
            _cuda_libs_state = name
            return
        except OSError:
            pass
    dirs = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs.append(os.path.join(os.environ[var], "lib64"))
    dirs += ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"]
    for p in sys.path:
        if p and os.path.isdir(os.path.join(p, "nvidia")):
            dirs += sorted(glob.glob(os.path.join(p, "nvidia", "*", "lib")), reverse=True)
    for d in dirs:
        libs = sorted(f for f in glob.glob(os.path.join(d, "libnvrtc.so.*"))
                      if f.rsplit(".so.", 1)[-1].split(".")[0].isdigit())
        if not libs:
            continue
        try:
            for b in sorted(glob.glob(os.path.join(d, "libnvrtc-builtins.so.*"))):
                _cuda_libs_keep.append(ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL))
                break
            _cuda_libs_keep.append(ctypes.CDLL(libs[0], mode=ctypes.RTLD_GLOBAL))
            _cuda_libs_state = libs[0]
            return
        except OSError:
            continue


_ready = set()  # CUDA ordinals prepared for calls (prepare_device)


def prepare_device(ordinal: int) -> None:
    """Before the first call on CUDA device `ordinal`: make NVRTC findable (`cuda_libs`)
    only where the core will compile kernels there (a GPU whose architecture the build
    embedded none for). Elsewhere NVRTC is never loaded: loading it took 40 ms of the
    first call (2026-12-02, the 2-core build machine)."""
    if _cuda_libs_state is None and _native.nvrtc_needed(ordinal):
        cuda_libs()
    cusolver_path()
    _ready.add(ordinal)


def cusolver_path() -> None:
    """Point the core at the cuSOLVER library in site-packages/nvidia/*/lib that
    pip-installed PyTorch and CuPy bring (BATCHLIN_CUSOLVER, which the core tries before
    the loader's path), unless the variable is set already. Only the path is set (a file
    search, no load): the core loads it on the first call that uses it (large eigh)."""
    if os.environ.get("BATCHLIN_CUSOLVER") or not sys.platform.startswith("linux"):
        return
    import glob

    for p in sys.path:
        if p and os.path.isdir(os.path.join(p, "nvidia")):
            for lib in sorted(glob.glob(os.path.join(p, "nvidia", "*", "lib",
                                                     "libcusolver.so.1[12]")), reverse=True):
                os.environ["BATCHLIN_CUSOLVER"] = lib
                return


def gpu_absent_reason():
    """Why there is no usable GPU backend, or None when there is one."""
    cuda_libs()
    return _native.gpu_absent_reason()


_MOVE = ("Move the data to the CPU first "
         "(e.g. tensor.cpu(), cupy.asnumpy(a), jax.device_get(a)).")


def device_error(framework: str, device: str, op: str = "qr",
                 why: str | None = None) -> UnavailableError:
    """The error for an input on a device batchlin has no backend for, saying why and
    what to do instead. `device` as "cuda:0". (What a CUDA device cannot do is the
    core's answer: `DeviceSpec.error`.)"""
    if why is None:
        reason = gpu_absent_reason()
        if reason is not None and (device == "cuda" or device.startswith("cuda:")):
            why = f"needs the GPU backend, which is not available ({reason})"
        else:
            why = "is on a device batchlin has no backend for (it runs on the CPU and CUDA)"
    return UnavailableError(f"batchlin.{op}: {framework} input on device {device}: "
                            f"{why}. {_MOVE}")


def device_call(framework: str, device: str, op: str = "qr"):
    """Raise `device_error` (inputs on a device the call cannot run on)."""
    raise device_error(framework, device, op)


def check_gpu_backend_arg(backend, device: str) -> None:
    """`backend=` for device input: None, "auto" or "cuda"; a CPU backend is an error."""
    if backend is None:
        return
    b = str(backend).lower()
    if b in ("", "auto", "cuda"):
        return
    if b in _native.BACKENDS:
        raise ValueError(
            f"batchlin argument error: backend {backend!r} runs on the CPU and the input is "
            f"on {device}; move it to the CPU first, or use backend=\"auto\" or \"cuda\"")
    raise ValueError(f"batchlin argument error: unknown backend {backend!r}: expected auto, "
                     f"{', '.join(_native.BACKENDS)}")


def check_qr_mode(mode) -> None:
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"batchlin argument error: unknown QR mode {mode!r}: "
                         "expected \"reduced\", \"complete\" or \"r\"")


def qr_shapes(batch: tuple, m: int, n: int, mode: str):
    """(Q shape or None, R shape) of a QR call."""
    k = min(m, n)
    if mode == "complete":
        return (*batch, m, m), (*batch, m, n)
    if mode == "r":
        return None, (*batch, k, n)
    return (*batch, m, k), (*batch, k, n)


_QR_VARIANTS = {"reduced": "qr", "complete": "qr-complete", "r": "qr-r"}


def qr_variant(mode) -> str:
    """The operation variant (as the native layer names it) of a QR call."""
    v = _QR_VARIANTS.get(mode) if type(mode) is str else None
    if v is None:
        check_qr_mode(mode)
    return v


def eigh_variant(vectors) -> str:
    return "eigh" if vectors else "eigvalsh"


def svd_variant(full_matrices, vectors) -> str:
    if not vectors:
        return "svdvals"
    return "svd-full" if full_matrices else "svd"


_out_shapes = {}  # (variant, shape, uplo) -> output shapes, as _native.output_shapes
_OUT_SHAPES_MAX = 4096


def output_shapes(variant: str, shape: tuple, uplo: str):
    """The output slots' shapes (None where not computed) of `variant` on `shape`,
    remembered per (variant, shape, uplo): a dict lookup per call, not a native call."""
    key = (variant, shape, uplo)
    got = _out_shapes.get(key)
    if got is None:
        got = tuple(None if s is None else tuple(s)
                    for s in _native.output_shapes(variant, list(shape), uplo))
        if len(_out_shapes) >= _OUT_SHAPES_MAX:
            _out_shapes.clear()
        _out_shapes[key] = got
    return got


# Outputs of one device call totalling at most this many bytes share one allocation
# (row-major views into it, each 256-byte aligned): one allocator call and one free a
# call instead of one an output, where the allocations cost as much as the kernel. Above
# it each output has its own memory, so that an output kept alive does not keep the
# others' (the kernel then takes longer than the host's work anyway). The torch.ops.*
# custom ops always allocate each output apart: torch forbids their outputs to alias.
SHARED_OUTPUTS_MAX = 1 << 20

specs = {}  # a framework's key for an input layout -> DeviceSpec (`device_spec`)
_SPECS_MAX = 4096


class DeviceSpec:
    """How device calls on one input layout run, worked out once (`device_spec`), for the
    framework's own call to read with no further work (`batchlin.torch._cuda`,
    `cupy_run`):

    - `call`: the native call (`_native.DeviceCall`); `copy`: the input is copied
      contiguous first;
    - the outputs the variant computes, in slot order: `shapes`, row-major element
      `strides`, offsets in one buffer in elements (`offsets`) and bytes
      (`byte_offsets`), and `sizes`, each shape as `torch.empty`'s positional arguments
      (the shape itself for a 0-d output);
    - `slots`: None when every output slot is computed, else the slot of each output (of
      `nslots`; the others are None);
    - `info`: None (not wanted) or the info words' (shape, strides, offset in 4-byte
      words, byte offset); `info_size` its shape as `torch.empty`'s arguments;
    - `elems`: the shared buffer's length in elements of the dtype (0: each output
      allocated apart);
    - `device`: the framework's device object; `op`, `framework`: for error messages."""

    __slots__ = ("call", "copy", "shapes", "strides", "offsets", "byte_offsets", "sizes",
                 "slots", "nslots", "info", "info_size", "elems", "device", "op",
                 "framework")

    def error(self, e: UnavailableError, ordinal: int) -> UnavailableError:
        """The core's refusal of this call, saying which call and input it was."""
        return UnavailableError(f"batchlin.{self.op}: {self.framework} input on "
                                f"cuda:{ordinal}: {e}. {_MOVE}")

    def in_slots(self, res: list, info) -> tuple:
        """The outputs `res` in their slots (None where not computed), then `info`."""
        out = [None] * self.nslots
        for i, t in zip(self.slots, res):
            out[i] = t
        return (*out, info)


def _sizes(shape: tuple) -> tuple:
    # torch.empty(*shape) parses faster than torch.empty(shape); a 0-d shape is passed
    # whole (torch.empty() takes no size at all).
    return shape if shape else (shape,)


def _row_major(shape) -> tuple:
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= max(int(d), 1)
    return tuple(reversed(st))


def device_spec(key, framework: str, variant: str, dtype: str, itemsize: int, shape,
                strides, device, ordinal: int, uplo: str = "L", backend=None,
                info: bool = True, shared: bool = True) -> DeviceSpec:
    """The `DeviceSpec` of `variant` on a `framework` array of `shape` and element
    `strides` (None: not whole elements, copied contiguous first; float32/float64 `dtype`,
    `itemsize` bytes) on CUDA device `ordinal`
    (`device`: the framework's device object, where the outputs go), remembered under
    `key` in `specs` (the framework's key for all of these), so that the next call on
    the same layout is a dict lookup. Everything that can be wrong with the arguments
    is raised here, before anything is remembered. Also makes the device ready for
    calls (`prepare_device`) on its first use."""
    if backend is not None and backend != "auto":
        check_gpu_backend_arg(backend, f"cuda:{ordinal}")
    shape = tuple(int(d) for d in shape)
    if strides is not None:
        strides = tuple(int(s) for s in strides)
    # The batch dimensions do not collapse to one stride, or a stride is negative: the
    # caller copies the input contiguous first.
    copy = strides is None or batch_layout(shape, strides) is None
    sent = None if copy or strides == _row_major(shape) else list(strides)
    call = _native.DeviceCall(variant, dtype, list(shape), sent, uplo, backend)
    slots = [i for i, o in enumerate(call.outputs) if o is not None]
    present = [call.outputs[i] for i in slots]
    spec = DeviceSpec()
    spec.call, spec.copy = call, copy
    spec.shapes = tuple(tuple(int(d) for d in o[0]) for o in present)
    spec.strides = tuple(_row_major(s) for s in spec.shapes)
    spec.offsets = tuple(o[1] // itemsize for o in present)
    spec.byte_offsets = tuple(o[1] for o in present)
    spec.sizes = tuple(_sizes(s) for s in spec.shapes)
    spec.nslots = len(call.outputs)
    spec.slots = None if len(slots) == spec.nslots else tuple(slots)
    nbytes = call.nbytes
    made = len(present)
    if info:
        batch = shape[:-2]
        nbytes = call.info_offset + 4 * call.info_len
        made += 1
        spec.info = (batch, _row_major(batch), call.info_offset // 4, call.info_offset)
        spec.info_size = _sizes(batch)
    else:
        spec.info = spec.info_size = None
    if ordinal not in _ready:
        prepare_device(ordinal)
    # One tensor to make is made in its own shape: a shared buffer would only add a view.
    spec.elems = (-(-nbytes // itemsize)
                  if shared and made > 1 and 0 < nbytes <= SHARED_OUTPUTS_MAX else 0)
    spec.device, spec.op, spec.framework = device, variant.split("-")[0], framework
    if len(specs) >= _SPECS_MAX:
        specs.clear()
    specs[key] = spec
    return spec


def batch_layout(shape, strides):
    """How the GPU kernels can read a `[..., M, N]` array with these element strides:
    (batch, batch_stride, row_stride, col_stride), or None when the batch dimensions do
    not collapse to one stride, or a stride is negative (then the caller makes a
    contiguous copy first). Dimensions of size 1 are ignored; zero strides (broadcast
    views) are fine, they are only read."""
    shape, strides = tuple(int(d) for d in shape), tuple(int(s) for s in strides)
    if any(d != 1 and s < 0 for d, s in zip(shape, strides)):
        return None
    m, n = shape[-2:]
    rs = strides[-2] if m != 1 else 0
    cs = strides[-1] if n != 1 else 0
    batch = 1
    for d in shape[:-2]:
        batch *= d
    dims = [(d, s) for d, s in zip(shape[:-2], strides[:-2]) if d != 1]
    if batch == 0 or not dims:
        return batch, 0, rs, cs
    for (_, s0), (d1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * d1:
            return None
    return batch, dims[-1][1], rs, cs


def _shape_error(shape) -> ValueError:
    return ValueError(
        f"batchlin shape error: expected an array of at least 2 dimensions [..., M, N], "
        f"got {len(shape)} (shape {tuple(shape)})")


_cp = None  # cupy, imported on the first CuPy array
_U32 = np.dtype(np.uint32)  # CuPy's info words


def cupy_run(variant: str, a, uplo: str = "L", backend=None, info: bool = True):
    """`variant` of a CuPy array on its GPU (`DeviceSpec`): every output slot (None where
    not computed) and info (uint32; None unless `info`), CuPy arrays on the input's
    device, queued on CuPy's current stream for that device."""
    global _cp
    if _cp is None:
        import cupy

        _cp = cupy
    cp = _cp
    dev = a.device
    if a.ndim < 2:
        raise _shape_error(a.shape)
    dt = a.dtype
    if dt.kind == "f" and dt.itemsize in (4, 8):
        pass
    elif dt.kind == "f" and dt.itemsize < 4:
        a = a.astype(cp.float32)  # float16: computed in float32
    elif dt.kind in "biu":
        a = a.astype(cp.float64)
    elif dt.kind == "c":
        raise DTypeError(f"batchlin does not support complex input yet (got {dt}); "
                         "it computes real float32 and float64 matrices")
    else:
        raise DTypeError(f"batchlin computes in float32 and float64; got dtype {dt}")
    dt = a.dtype
    ordinal = dev.id
    key = ("CuPy", variant, dt, a.shape, a.strides, ordinal, uplo, backend, info)
    with dev:
        spec = specs.get(key)
        if spec is None:
            isz = dt.itemsize
            strides = a.strides
            # Strides of a fraction of an element (views into packed records): copied.
            strides = None if any(s % isz for s in strides) else [s // isz for s in strides]
            spec = device_spec(key, "CuPy", variant, dt.name, isz, a.shape, strides, dev,
                               ordinal, uplo, backend, info)
        if spec.copy:
            a = cp.ascontiguousarray(a)
        # The outputs are made inline, as in batchlin.torch._cuda (per-output Python
        # hooks cost 1-2 us a call there).
        iw = iptr = None
        inf = spec.info
        if spec.elems:  # small outputs: views into one allocation
            mem = cp.empty(spec.elems, dtype=dt).data
            out = mem.ptr
            nd = cp.ndarray
            res = [nd(s, dt, mem + o) for s, o in zip(spec.shapes, spec.byte_offsets)]
            if inf is not None:
                iptr = out + inf[3]
                iw = nd(inf[0], _U32, mem + inf[3])
        else:
            res = [cp.empty(s, dtype=dt) for s in spec.shapes]
            out = tuple([t.data.ptr for t in res])
            if inf is not None:
                iw = cp.empty(inf[0], dtype=_U32)
                iptr = iw.data.ptr
        try:
            spec.call(a.data.ptr, out, iptr, ordinal, cp.cuda.get_current_stream().ptr)
        except UnavailableError as e:
            raise spec.error(e, ordinal) from None
        # `a` (a copy made here, if any) goes back to CuPy's pool for this stream: later
        # work on the stream is ordered after the kernel that reads it.
    if spec.slots is not None:
        return spec.in_slots(res, iw)
    return (*res, iw)


def is_cupy(a) -> bool:
    return (type(a).__module__ or "").startswith("cupy")


def is_dask(a) -> bool:
    return (type(a).__module__ or "").startswith("dask.")


def _jax():
    return sys.modules.get("jax")


def to_host(a, op: str = "qr"):
    """(x, wrap): `x` a float32/float64 ndarray viewing `a`'s memory (or a promoted copy),
    `wrap(ndarray) -> the caller's kind`. torch tensors are handled in batchlin.torch, CuPy
    arrays by `cupy_run`; device arrays that reach here raise UnavailableError."""
    t = type(a)
    if t is _ndarray:
        return promote_numpy(a), _identity
    if isinstance(a, _ndarray):  # subclasses (np.matrix, memmap): plain arrays out
        return promote_numpy(np.asarray(a)), _identity
    mod = t.__module__ or ""
    if mod.startswith("cupy"):
        dev = getattr(a, "device", "?")
        device_call("CuPy", f"cuda:{getattr(dev, 'id', dev)}", op)
    if mod.startswith(("jax", "jaxlib")):
        jax = _jax()
        if jax is not None and isinstance(a, getattr(jax.core, "Tracer", ())):
            raise TypeError(
                "batchlin cannot be called on traced JAX values (inside jax.jit, vmap or "
                "grad) without its XLA FFI handlers; call it on concrete arrays outside "
                "the transformation")
        dev_type, dev_id = a.__dlpack_device__()
        if int(dev_type) != _DL_CPU:
            device = f"{_DL_NAMES.get(int(dev_type), dev_type)}:{dev_id}"
            raise device_error("JAX", device, op, _JAX_GPU_WHY)
        x = np.asarray(a)  # a view of the buffer on the CPU (no copy)
        if x.dtype.kind == "V" or x.dtype.name == "bfloat16":
            x = np.asarray(a, dtype=np.float32)
        return promote_numpy(x), _wrap_jax
    if hasattr(a, "__dlpack__") and hasattr(a, "__dlpack_device__"):
        x = _from_dlpack(a, mod.split(".")[0] or "DLPack", op)
        ns = getattr(a, "__array_namespace__", None)
        if ns is not None:
            xp = ns()
            return x, lambda y: xp.from_dlpack(y)
        return x, _identity
    if isinstance(a, (str, bytes, dict, set)) or a is None:
        raise not_an_array(a)
    try:
        x = np.asarray(a)
    except (ValueError, TypeError) as e:
        raise not_an_array(a, str(e)) from None
    if x.dtype.kind in "OUSVMm":
        raise not_an_array(a, f"it converts to a NumPy array of dtype {x.dtype}")
    return promote_numpy(x), _identity


_JAX_GPU_WHY = (
    "JAX arrays on a GPU need batchlin's XLA FFI handlers, which could not be registered "
    "with this jaxlib. To compute on the GPU, share the buffer without a copy: "
    "jax.dlpack.from_dlpack(batchlin.qr(torch.from_dlpack(x)).R) (or cupy.from_dlpack)")


def _from_dlpack(a, framework: str, op: str = "qr") -> np.ndarray:
    dev_type, dev_id = a.__dlpack_device__()
    dev_type = int(dev_type)
    if dev_type != _DL_CPU:
        device = f"{_DL_NAMES.get(dev_type, dev_type)}:{dev_id}"
        why = None
        if dev_type == _DL_CUDA and gpu_absent_reason() is None:
            why = ("the GPU path takes torch tensors and CuPy arrays (the outputs are "
                   "allocated by the caller's framework); pass torch.from_dlpack(x) or "
                   "cupy.from_dlpack(x), which share the memory")
        raise device_error(framework, device, op, why)
    try:
        x = np.from_dlpack(a)
    except (BufferError, TypeError, RuntimeError):
        # Types NumPy's DLPack import does not know (bfloat16): let the producer convert.
        x = np.asarray(a)
    if x.dtype.kind == "V" and x.dtype.itemsize == 2:  # bfloat16 through DLPack
        x = np.asarray(a, dtype=np.float32)
    return promote_numpy(x)


def _identity(x):
    return x


def _wrap_jax(x):
    # Large outputs through DLPack: zero-copy where the buffer meets XLA's alignment
    # (64 bytes), copied otherwise. Small ones: jnp.asarray, the cheapest way in.
    jax = _jax()
    if x.nbytes >= 1 << 16:
        return jax.dlpack.from_dlpack(x)
    return jax.numpy.asarray(x)
