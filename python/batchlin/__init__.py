"""batchlin: QR, the symmetric eigendecomposition and the SVD of batches of matrices.

The signatures and results are numpy.linalg's and torch.linalg's::

    import numpy as np, batchlin
    a = np.random.rand(4096, 32, 32).astype(np.float32)
    Q, R = batchlin.qr(a)                  # mode="reduced" | "complete" | "r"
    w, V = batchlin.eigh(a @ a.mT)         # ascending eigenvalues, eigenvectors as columns
    U, S, Vh = batchlin.svd(a)             # S descending; full_matrices=False by default

- Inputs: NumPy arrays (any strides), torch tensors, JAX arrays, anything with
  ``__dlpack__``, nested lists; ``[..., M, N]`` with any batch shape. The memory is read
  where it lies. Outputs come back in the caller's kind (torch in, torch out; JAX in,
  JAX out; NumPy or lists in, NumPy out).
- dtypes: float32 and float64 computed in their own precision; integers and bool in
  float64 (as numpy.linalg); float16 and bfloat16 in float32, returned as float32
  (numpy.linalg rejects float16). Complex input raises DTypeError.
- A matrix holding NaN or Inf gets NaN in all its outputs and the ``INFO_NONFINITE``
  bit in its info word (see the ``*_ex`` forms); nothing raises and the rest of the
  batch is untouched.
- Sign conventions: diag(R) >= 0; each eigenvector's, and each column of U's, largest
  component is positive.
- ``backend=`` (keyword) forces a backend: "cpu-small", "cpu-faer" (or "auto"); the
  environment variable BATCHLIN_BACKEND does the same for every call.
- PyTorch: the ops are registered as ``torch.ops.batchlin.*`` custom ops with autograd
  and fake implementations (``torch.compile(fullgraph=True)`` traces them).
- JAX: every function takes ``jax.Array`` inputs, concrete or traced (inside
  ``jax.jit``, ``jax.vmap``, ``lax.scan``), through XLA FFI custom calls
  (``jax.ffi.ffi_call``; see ``batchlin/_jax.py``), and returns JAX arrays on the input's
  device; differentiable (``jax.grad``, ``jax.jvp``: custom JVPs with the standard
  formulas).
- CUDA: every function takes torch CUDA tensors, CuPy arrays and JAX GPU arrays on any
  CUDA device and runs there, reading the input in place, with outputs from the
  caller's framework on the same device, queued on that device's current stream (XLA's
  stream for JAX) with no host synchronisation (info stays on the device). What the GPU
  backend cannot do (an operation it has no kernel for, a missing device) raises the
  core's UnavailableError with its message (under ``jax.jit``: an XLA error saying it);
  ``backend_for(..., device="cuda:N")`` answers the same beforehand.
- Dask: every function takes ``dask.array.Array`` inputs and returns lazy Dask arrays,
  one task per chunk of the batch axes (``batchlin/dask.py``), NumPy or CuPy chunks.
- Sharded JAX arrays: a batch split over several devices along its batch axes is
  decomposed shard by shard where it lies, with no collective (``batchlin/_jax.py``).
- The GIL is released while computing; calls from several threads at once are fine.
"""

from __future__ import annotations

import operator
import os
import sys
from typing import NamedTuple, Any

from . import _native
from . import _front
from . import _jax
from ._front import DTypeError, UnavailableError, to_host, _ndarray, F32, F64
from ._front import check_bool as _check_bool, check_str as _check_str
from ._front import check_backend as _check_backend

__version__ = _native.__version__

INFO_NONFINITE: int = _native.INFO_NONFINITE
"""Info bit 0: the matrix held NaN or Inf; all its outputs are NaN."""
INFO_NOT_CONVERGED: int = _native.INFO_NOT_CONVERGED
"""Info bit 1: an iterative method (eigh, SVD) hit its iteration limit."""
INFO_RANK_DEFICIENT: int = _native.INFO_RANK_DEFICIENT
"""Info bit 2: a diagonal entry of R, or a singular value, is zero to working precision."""
INFO_OVERFLOW: int = _native.INFO_OVERFLOW
"""Info bit 3: the input was finite but a result exceeds the dtype's range (float32
input near 1e38); those entries are +-Inf (CPU backends)."""

__all__ = [
    "qr", "qr_ex", "eigh", "eigh_ex", "eigvalsh", "eigvalsh_ex", "svd", "svd_ex",
    "svdvals", "svdvals_ex", "backend_for", "Route", "devices", "policy_source",
    "host_register", "host_unregister",
    "QRResult", "EighResult", "SVDResult", "QRExResult", "EighExResult",
    "EigvalshExResult", "SVDExResult", "SvdvalsExResult",
    "DTypeError", "UnavailableError", "INFO_NONFINITE", "INFO_NOT_CONVERGED",
    "INFO_RANK_DEFICIENT", "INFO_OVERFLOW", "info_iterations",
]


class QRResult(NamedTuple):
    Q: Any
    R: Any


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


class QRExResult(NamedTuple):
    Q: Any  # None for mode="r"
    R: Any
    info: Any


class EighExResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any
    info: Any


class EigvalshExResult(NamedTuple):
    eigenvalues: Any
    info: Any


class SVDExResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any
    info: Any


class SvdvalsExResult(NamedTuple):
    S: Any
    info: Any


def info_iterations(info):
    """Iterations (sweeps) an iterative method took, from info words."""
    return info >> 16


_torch_ops = None
_TorchTensor = None  # torch.Tensor, set when batchlin.torch is imported


def _bt():
    """batchlin.torch (imported on the first torch tensor; it registers the ops)."""
    global _torch_ops
    if _torch_ops is None:
        from . import torch as ops

        _torch_ops = ops
    return _torch_ops


def _torch_tensor(a) -> bool:
    T = _TorchTensor
    if T is None:
        t = sys.modules.get("torch")
        if t is None or not isinstance(a, t.Tensor):
            return False
        _bt()
        return True
    return isinstance(a, T)


def _dask_run(variant, a, uplo, backend):
    """The Dask path (batchlin.dask, imported on the first Dask array): lazy outputs."""
    from . import dask as bd

    return bd.run(variant, a, uplo, backend)


# ---------------------------------------------------------------------------------------
# QR


def _qr(a, mode, backend, ex):
    if backend is not None and _front._cuda_libs_state is None:
        _front.cuda_libs()  # backend="cuda" on host data opens the GPU backend
    if type(a) is _ndarray and (a.dtype is F32 or a.dtype is F64):  # the fast path
        q, r, info = _native.qr(a, mode, backend)
        wrap = None
    elif _torch_tensor(a):
        return _torch_ops.qr(a, mode, backend, ex)
    elif _jax.is_jax(a) and (res := _jax.qr(a, mode, backend, ex)) is not None:
        q, r, info = res
        wrap = None
    elif _front.is_cupy(a):
        q, r, info = _front.cupy_run(_front.qr_variant(mode), a, "L", backend, ex)
        wrap = None
    elif _front.is_dask(a):
        q, r, info = _dask_run(_front.qr_variant(mode), a, "L", backend)
        wrap = None
    else:
        x, wrap = to_host(a, "qr")
        q, r, info = _native.qr(x, mode, backend)
    if wrap is not None:
        q = None if q is None else wrap(q)
        r = wrap(r)
        if ex:
            info = wrap(info)
    if ex:
        return QRExResult(q, r, info)
    return r if mode == "r" else QRResult(q, r)


def qr(a, mode: str = "reduced", *, backend: str | None = None):
    """QR of every matrix of ``a`` ``[..., M, N]``, as numpy.linalg.qr.

    mode "reduced": (Q [..., M, K], R [..., K, N]), K = min(M, N); "complete":
    (Q [..., M, M], R [..., M, N]); "r": R [..., K, N] alone (Q is never formed).
    diag(R) >= 0. Returns a named tuple (Q, R), or R alone for mode "r".
    """
    if type(mode) is not str or (backend is not None and type(backend) is not str):
        _check_str("qr", "mode", mode)
        _check_backend("qr", backend)
    return _qr(a, mode, backend, False)


def qr_ex(a, mode: str = "reduced", *, backend: str | None = None) -> QRExResult:
    """As ``qr``, plus the per-matrix info words (uint32 [...]; int32 for torch):
    (Q, R, info), with Q None for mode "r"."""
    if type(mode) is not str or (backend is not None and type(backend) is not str):
        _check_str("qr_ex", "mode", mode)
        _check_backend("qr_ex", backend)
    return _qr(a, mode, backend, True)


# ---------------------------------------------------------------------------------------
# eigh


def _eigh(a, UPLO, vectors, backend, ex):
    if type(a) is _ndarray and (a.dtype is F32 or a.dtype is F64):
        w, v, info = _native.eigh(a, UPLO, vectors, backend)
    elif _torch_tensor(a):
        return _torch_ops.eigh(a, UPLO, vectors, backend, ex)
    elif _jax.is_jax(a) and (res := _jax.eigh(a, UPLO, vectors, backend, ex)) is not None:
        w, v, info = res
    elif _front.is_cupy(a):
        w, v, info = _front.cupy_run(_front.eigh_variant(vectors), a, UPLO, backend, ex)
    elif _front.is_dask(a):
        w, v, info = _dask_run(_front.eigh_variant(vectors), a, UPLO, backend)
    else:
        x, wrap = to_host(a, "eigh" if vectors else "eigvalsh")
        w, v, info = _native.eigh(x, UPLO, vectors, backend)
        w = wrap(w)
        v = None if v is None else wrap(v)
        if ex:
            info = wrap(info)
    if vectors:
        return EighExResult(w, v, info) if ex else EighResult(w, v)
    return EigvalshExResult(w, info) if ex else w


def eigh(a, UPLO: str = "L", *, backend: str | None = None) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of the symmetric matrices of
    ``a`` ``[..., N, N]``, reading only the ``UPLO`` ("L" or "U") triangle, as
    numpy.linalg.eigh. Returns (eigenvalues [..., N], eigenvectors [..., N, N])."""
    if type(UPLO) is not str or (backend is not None and type(backend) is not str):
        _check_str("eigh", "UPLO", UPLO)
        _check_backend("eigh", backend)
    return _eigh(a, UPLO, True, backend, False)


def eigh_ex(a, UPLO: str = "L", *, backend: str | None = None) -> EighExResult:
    """As ``eigh``, plus the per-matrix info words: (eigenvalues, eigenvectors, info)."""
    if type(UPLO) is not str or (backend is not None and type(backend) is not str):
        _check_str("eigh_ex", "UPLO", UPLO)
        _check_backend("eigh_ex", backend)
    return _eigh(a, UPLO, True, backend, True)


def eigvalsh(a, UPLO: str = "L", *, backend: str | None = None):
    """Eigenvalues (ascending) alone of the symmetric matrices of ``a``, as
    numpy.linalg.eigvalsh (cheaper than eigh)."""
    if type(UPLO) is not str or (backend is not None and type(backend) is not str):
        _check_str("eigvalsh", "UPLO", UPLO)
        _check_backend("eigvalsh", backend)
    return _eigh(a, UPLO, False, backend, False)


def eigvalsh_ex(a, UPLO: str = "L", *, backend: str | None = None) -> EigvalshExResult:
    """As ``eigvalsh``, plus the per-matrix info words: (eigenvalues, info)."""
    if type(UPLO) is not str or (backend is not None and type(backend) is not str):
        _check_str("eigvalsh_ex", "UPLO", UPLO)
        _check_backend("eigvalsh_ex", backend)
    return _eigh(a, UPLO, False, backend, True)


# ---------------------------------------------------------------------------------------
# SVD


def _svd(a, full_matrices, vectors, backend, ex):
    if type(a) is _ndarray and (a.dtype is F32 or a.dtype is F64):
        u, s, vh, info = _native.svd(a, full_matrices, vectors, backend)
    elif _torch_tensor(a):
        return _torch_ops.svd(a, full_matrices, vectors, backend, ex)
    elif (_jax.is_jax(a)
          and (res := _jax.svd(a, full_matrices, vectors, backend, ex)) is not None):
        u, s, vh, info = res
    elif _front.is_cupy(a):
        u, s, vh, info = _front.cupy_run(_front.svd_variant(full_matrices, vectors), a, "L",
                                         backend, ex)
    elif _front.is_dask(a):
        u, s, vh, info = _dask_run(_front.svd_variant(full_matrices, vectors), a, "L",
                                   backend)
    else:
        x, wrap = to_host(a, "svd" if vectors else "svdvals")
        u, s, vh, info = _native.svd(x, full_matrices, vectors, backend)
        s = wrap(s)
        if vectors:
            u, vh = wrap(u), wrap(vh)
        if ex:
            info = wrap(info)
    if vectors:
        return SVDExResult(u, s, vh, info) if ex else SVDResult(u, s, vh)
    return SvdvalsExResult(s, info) if ex else s


def svd(a, full_matrices: bool = False, compute_uv: bool = True, *,
        backend: str | None = None):
    """SVD of every matrix of ``a`` ``[..., M, N]``: A = U diag(S) Vh, S descending, as
    numpy.linalg.svd.

    U [..., M, K], S [..., K], Vh [..., K, N] (K = min(M, N)); with full_matrices,
    U [..., M, M] and Vh [..., N, N]. With ``compute_uv=False``, S alone (as
    ``svdvals``; U and Vh are never formed). Note the default full_matrices=False, as
    torch.linalg.svd's documentation recommends (numpy.linalg.svd defaults to True).
    """
    if type(full_matrices) is not bool or type(compute_uv) is not bool or (
            backend is not None and type(backend) is not str):
        full_matrices = _check_bool("svd", "full_matrices", full_matrices)
        compute_uv = _check_bool("svd", "compute_uv", compute_uv)
        _check_backend("svd", backend)
    return _svd(a, full_matrices and compute_uv, compute_uv, backend, False)


def svd_ex(a, full_matrices: bool = False, compute_uv: bool = True, *,
           backend: str | None = None):
    """As ``svd``, plus the per-matrix info words: (U, S, Vh, info), or (S, info) with
    ``compute_uv=False``."""
    if type(full_matrices) is not bool or type(compute_uv) is not bool or (
            backend is not None and type(backend) is not str):
        full_matrices = _check_bool("svd_ex", "full_matrices", full_matrices)
        compute_uv = _check_bool("svd_ex", "compute_uv", compute_uv)
        _check_backend("svd_ex", backend)
    return _svd(a, full_matrices and compute_uv, compute_uv, backend, True)


def svdvals(a, *, backend: str | None = None):
    """Singular values (descending) alone, as torch.linalg.svdvals (cheaper)."""
    if backend is not None and type(backend) is not str:
        _check_backend("svdvals", backend)
    return _svd(a, False, False, backend, False)


def svdvals_ex(a, *, backend: str | None = None) -> SvdvalsExResult:
    """As ``svdvals``, plus the per-matrix info words: (S, info)."""
    if backend is not None and type(backend) is not str:
        _check_backend("svdvals_ex", backend)
    return _svd(a, False, False, backend, True)


# ---------------------------------------------------------------------------------------
# Routing and devices

_DTYPE_NAMES = {"float32": "float32", "float64": "float64", "float16": "float32",
                "bfloat16": "float32", "half": "float32", "float": "float32",
                "double": "float64"}


def _dtype_name(dtype) -> str:
    """The dtype a call computes in, from a NumPy or torch dtype or a name."""
    import numpy as np

    if isinstance(dtype, str):
        name = dtype
    elif type(dtype).__module__ == "torch":
        name = str(dtype).replace("torch.", "")
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = str(dtype)
    if name in _DTYPE_NAMES:
        return _DTYPE_NAMES[name]
    if name.startswith(("int", "uint", "bool")):
        return "float64"
    try:
        dt = np.dtype(name)
    except TypeError:
        dt = None
    if dt is not None and dt.kind in "biu":
        return "float64"
    if dt is not None and dt.kind == "f" and dt.itemsize <= 8:
        return "float32" if dt.itemsize <= 4 else "float64"
    raise DTypeError(f"batchlin computes in float32 and float64; got dtype {dtype}")


class Route(str):
    """What ``backend_for`` returns: the backend's name (a ``str``, equal to "cpu-small",
    "cpu-faer" or "cuda"), with the core's whole plan for the call as ``plan`` (e.g.
    "cuda:0 tile [rules]": device, kernel and why) and the ``device`` asked about."""

    plan: str
    device: str

    def __new__(cls, backend: str, plan: str, device: str):
        r = super().__new__(cls, backend)
        r.plan, r.device = plan, device
        return r

    def __repr__(self):
        return f"Route({str(self)!r}, plan={self.plan!r}, device={self.device!r})"


def backend_for(op: str, shape, dtype="float32", device="cpu", *, backend=None) -> Route:
    """The backend a call would run on, as the core plans it: ``op`` "qr", "eigh",
    "eigvalsh", "svd" or "svdvals" (or a variant: "qr-complete", "qr-r", "svd-full");
    ``shape`` [..., M, N]; ``dtype`` as the input's (promoted as a call would);
    ``device`` "cpu", "cuda" or "cuda:N" (or a torch.device), the memory the input is in;
    ``backend`` forced, as the call's ``backend=``. Returns the backend's name, with the
    plan's description as ``.plan``. Raises what the call would: UnavailableError, with
    the core's message, for a missing device or an operation the device's backend has no
    kernel for."""
    _check_str("backend_for", "op", op)
    _check_backend("backend_for", backend)
    dev = device if isinstance(device, str) else str(device)  # torch.device: "cuda:0"
    if dev != "cpu" or backend is not None:
        _front.cuda_libs()
    try:
        dims = [operator.index(d) for d in shape]
    except TypeError:
        raise _front.arg_type_error("backend_for", "shape", "a sequence of ints", shape) from None
    if any(d < 0 for d in dims):
        raise ValueError(f"batchlin shape error: sizes must be >= 0, got shape {tuple(dims)}")
    name, plan = _native.plan(op, dims, _dtype_name(dtype), dev, backend)
    return Route(name, plan, dev)


def devices() -> list:
    """Every device found, the CPU first: dicts with "kind" ("cpu", "cuda:N"), "name",
    "detail", "available" and "reason" (why it cannot be used, else None). Where no CUDA
    device is usable, an entry of kind "cuda" says why."""
    _front.cuda_libs()
    return _native.devices()


def policy_source() -> str:
    """Where the routing decisions come from (a measured policy, a size rule, or
    BATCHLIN_BACKEND)."""
    return _native.policy_source()


# data address -> (the array registered, what keeps its memory alive): a NumPy array
# itself; a tensor's storage, which stays even if the tensor is given another one.
_pinned = {}


def _host_buffer(a, fn: str):
    """(address, bytes, what keeps the memory alive) of a host array's whole buffer."""
    if _torch_tensor(a):
        if a.device.type != "cpu":
            raise ValueError(f"batchlin.{fn}: the tensor is on {a.device}; only host memory "
                             "is registered (device memory needs no copies)")
        if not a.is_contiguous():
            raise ValueError(f"batchlin.{fn}: the tensor is not contiguous; register the "
                             "contiguous buffer the calls will read")
        return a.data_ptr(), a.numel() * a.element_size(), a.untyped_storage()
    if not isinstance(a, _ndarray):
        raise TypeError(f"batchlin.{fn}: expects a NumPy array or a CPU torch tensor, got "
                        f"{type(a).__module__}.{type(a).__qualname__}")
    if not (a.flags.c_contiguous or a.flags.f_contiguous):
        raise ValueError(f"batchlin.{fn}: the array is not contiguous; register the "
                         "contiguous buffer the calls will read")
    return a.__array_interface__["data"][0], a.nbytes, a


def host_register(a) -> None:
    """Pin a host array's memory for the GPU (page-locked, as cudaHostRegister does), so
    that GPU calls on it copy it straight to the device instead of through batchlin's
    staging buffer, and the planner prices those copies at that speed when it weighs the
    GPU against the CPU for host data. Pinning costs time per megabyte: do it once for an
    array used in many calls. `a`: a contiguous NumPy array or CPU torch tensor; batchlin
    keeps a reference to it until `host_unregister(a)`. Raises UnavailableError without
    a GPU, ValueError for a buffer overlapping one registered already."""
    ptr, nbytes, keep = _host_buffer(a, "host_register")
    if nbytes == 0:
        raise ValueError("batchlin.host_register: the array is empty")
    try:
        _native.host_register(ptr, nbytes)
    except ValueError as e:
        raise ValueError(f"batchlin.host_register: {e}") from None
    _pinned[ptr] = (a, keep)


def host_unregister(a) -> None:
    """Unpin an array registered with `host_register` (the same object, or one viewing
    the same memory from its start) and drop batchlin's reference to it. ValueError
    when it was not registered, or a call on another thread is using it now."""
    ptr = next((p for p, (o, _) in list(_pinned.items()) if o is a), None)
    if ptr is None:
        ptr, _, _ = _host_buffer(a, "host_unregister")
    entry = _pinned.get(ptr)
    if entry is None:
        raise ValueError("batchlin.host_unregister: the array was not registered with "
                         "batchlin.host_register")
    try:
        _native.host_unregister(ptr)
    except ValueError as e:  # in use now: still registered
        raise ValueError(f"batchlin.host_unregister: {e}") from None
    finally:
        # Unless it is still registered, forget it (the driver's refusal to unpin
        # included: the core has forgotten it then too).
        if not _native.host_registered(ptr) and _pinned.get(ptr) is entry:
            del _pinned[ptr]


if os.environ.get("BATCHLIN_BACKEND", "").strip().lower() == "cuda":
    _front.cuda_libs()  # every call opens the GPU backend: make NVRTC findable first

# Register the torch ops at import when torch is already loaded, so that
# torch.compile sees torch.ops.batchlin.* before it traces anything.
if "torch" in sys.modules:
    _bt()
