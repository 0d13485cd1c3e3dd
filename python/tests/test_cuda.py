"""CUDA inputs (torch, CuPy, JAX on a GPU).

Every operation of torch CUDA tensors and CuPy arrays goes to the native device call on
the input's device; QR runs on the GPU. Checked here against a NumPy
float64 reference for every mode and the shapes that reach each GPU kernel, with strided,
transposed and broadcast inputs (read in place where the batch collapses to one stride),
NaN isolation, outputs on the input's device and in its framework, the caller's stream
with no host synchronisation, CuPy, torch.compile, opcheck, gradcheck and CUDA graph
capture. JAX arrays on a GPU: QR through XLA's FFI on XLA's stream, eager, under jit and
vmap. eigh and svd of CUDA input take the same device call (their results are checked in
test_cuda_eigh_svd.py); an operation a GPU backend lacks raises the core's
UnavailableError with its message; a missing device ordinal raises the core's error too.

Everything that needs a GPU is skipped, with the reason shown, where there is none. The
Python half of the device path (layouts, copies, output allocation, empty shapes) is
also checked on the CPU, with the native call emulated on host memory.
"""

import ctypes

import numpy as np
import pytest

import batchlin
from batchlin import _front
from conftest import check_qr, rel, rng

try:
    import torch

    HAVE_TORCH = True
    HAVE_TORCH_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    torch = None
    HAVE_TORCH = False
    HAVE_TORCH_CUDA = False

try:
    import cupy

    HAVE_CUPY = cupy.cuda.runtime.getDeviceCount() > 0
except Exception:  # ImportError, or CUDA errors without a GPU
    cupy = None
    HAVE_CUPY = False

GPU_BACKEND = any(d["available"] and d["kind"].startswith("cuda:") for d in batchlin.devices())

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")
needs_torch_cuda = pytest.mark.skipif(
    not HAVE_TORCH_CUDA, reason="no CUDA GPU visible to torch on this machine")
needs_cupy = pytest.mark.skipif(not HAVE_CUPY, reason="CuPy with a CUDA GPU is not available")
needs_backend = pytest.mark.skipif(
    not GPU_BACKEND, reason=f"no batchlin GPU backend: {_front.gpu_absent_reason()}")
without_backend = pytest.mark.skipif(GPU_BACKEND, reason="the GPU backend is present")

MODES = ["reduced", "complete", "r"]
TOL = {"float32": 1e-4, "float64": 1e-11}


def _dtname(dt) -> str:
    return str(dt).replace("torch.", "")


def check_r(a, r, tol):
    """Mode "r": R upper triangular with diag >= 0, R^T R = A^T A, and (for the small
    well-conditioned shapes) R equal to NumPy's up to the signs of its rows."""
    a = np.asarray(a, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    m, n = a.shape[-2:]
    k = min(m, n)
    assert r.shape == (*a.shape[:-2], k, n)
    assert np.all(np.tril(r, -1) == 0)
    assert np.all(np.diagonal(r, axis1=-2, axis2=-1) >= 0)
    assert rel(r.swapaxes(-1, -2) @ r, a.swapaxes(-1, -2) @ a) < 10 * tol
    check_r_vs_numpy(a, r, tol)


def check_r_vs_numpy(a, r, tol):
    """R's first K rows against numpy.linalg.qr's (float64), signs made diag >= 0."""
    a = np.asarray(a, dtype=np.float64)
    m, n = a.shape[-2:]
    k = min(m, n)
    if n > 16 or k == 0:
        return  # larger random matrices are too ill-conditioned to compare R entrywise
    ref = np.linalg.qr(a, mode="r")
    s = np.sign(np.diagonal(ref, axis1=-2, axis2=-1))
    s[s == 0] = 1
    ref = ref * s[..., :, None]
    assert rel(np.asarray(r, dtype=np.float64)[..., :k, :], ref[..., :k, :]) < 100 * tol


# ---------------------------------------------------------------------------------------
# The Python half of the device path, on the CPU (runs everywhere)


def test_batch_layout():
    bl = _front.batch_layout
    assert bl((4, 3, 5), (15, 5, 1)) == (4, 15, 5, 1)
    assert bl((3, 5), (5, 1)) == (1, 0, 5, 1)
    assert bl((2, 3, 4, 5), (60, 20, 5, 1)) == (6, 20, 5, 1)
    assert bl((2, 3, 4, 5), (20, 40, 5, 1)) is None  # batch dimensions permuted
    assert bl((2, 1, 4, 5), (20, 999, 5, 1)) == (2, 20, 5, 1)  # size-1 dimensions ignored
    assert bl((4, 3, 5), (15, 1, 3)) == (4, 15, 1, 3)  # transposed matrices
    assert bl((4, 3, 5), (0, 5, 1)) == (4, 0, 5, 1)  # a broadcast batch
    assert bl((4, 3, 5), (-15, 5, 1)) is None  # negative strides
    assert bl((4, 3, 5), (15, -5, 1)) is None
    assert bl((4, 1, 5), (5, -5, 1)) == (4, 5, 0, 1)  # a size-1 dimension's stride is unused
    assert bl((0, 3, 5), (15, 5, 1)) == (0, 0, 5, 1)
    assert bl((2, 0, 3, 5), (0, 15, 5, 1))[0] == 0


def _host_view(ptr, dtype, shape, strides):
    """An ndarray over host memory at `ptr` (element strides, >= 0 where a dimension is
    larger than 1)."""
    dt = np.dtype(dtype)
    if 0 in shape:
        return np.zeros(shape, dt)
    span = 1 + sum((d - 1) * s for d, s in zip(shape, strides))
    buf = (ctypes.c_char * (span * dt.itemsize)).from_address(ptr)
    base = np.frombuffer(buf, dtype=dt, count=span)
    return np.lib.stride_tricks.as_strided(base, shape, [s * dt.itemsize for s in strides])


_QR_MODES = {"qr": "reduced", "qr-complete": "complete", "qr-r": "r"}


def _contiguous(shape):
    return [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))]


class _EmulatedDevice:
    """`_native.DeviceCall` on host memory (the pointers of CPU tensors), computed by the
    core on the CPU: it checks what the Python half hands the native layer (the input's
    layout, the outputs at the addresses of the layout the native call gives, the
    ordinal and stream). Constructed like `DeviceCall`; each call is recorded."""

    def __init__(self):
        self.calls = []
        self.made = []  # every DeviceCall made: (variant, shape, strides)
        self.real = batchlin._native.DeviceCall

    def __call__(self, variant, dtype, shape, strides=None, uplo="L", backend=None):
        real = self.real(variant, dtype, shape, strides, uplo, backend)
        self.made.append((variant, list(shape), strides))
        return _EmulatedCall(self, real, variant, dtype, list(shape), strides, uplo)


class _EmulatedCall:
    def __init__(self, device, real, variant, dtype, shape, strides, uplo):
        self.device, self.real = device, real
        self.variant, self.dtype, self.shape, self.uplo = variant, dtype, shape, uplo
        self.strides = _contiguous(shape) if strides is None else list(strides)
        for name in ("outputs", "nbytes", "info_offset", "info_len"):
            setattr(self, name, getattr(real, name))

    def __call__(self, a_ptr, out, info_ptr, ordinal, stream):
        variant, dtype, shape, strides = self.variant, self.dtype, self.shape, self.strides
        present = [o for o in self.outputs if o is not None]
        if isinstance(out, int):  # one buffer, the outputs at the native call's offsets
            addrs = [out + off for _, off in present]
        else:
            addrs = list(out)
        assert len(addrs) == len(present)
        self.device.calls.append(dict(variant=variant, dtype=dtype, a_ptr=a_ptr,
                                      shape=shape, strides=strides, ordinal=ordinal,
                                      stream=stream, uplo=self.uplo, out=out,
                                      info_ptr=info_ptr))
        assert all(s >= 0 for d, s in zip(shape, strides) if d != 1)
        x = np.array(_host_view(a_ptr, dtype, shape, strides))
        if variant in _QR_MODES:
            *res, info = batchlin._native.qr(x, _QR_MODES[variant])
        elif variant in ("eigh", "eigvalsh"):
            *res, info = batchlin._native.eigh(x, self.uplo, variant == "eigh")
        else:
            *res, info = batchlin._native.svd(x, variant == "svd-full", variant != "svdvals")
        res = [r for r in res if r is not None]
        assert [tuple(sh) for sh, _ in present] == [r.shape for r in res]
        for r, p in zip(res, addrs):
            _host_view(p, dtype, r.shape, _contiguous(r.shape))[...] = r
        if info.size and info_ptr is not None:
            _host_view(info_ptr, np.uint32, info.shape, _contiguous(info.shape))[...] = info


@pytest.fixture
def emulated(monkeypatch):
    fake = _EmulatedDevice()
    monkeypatch.setattr(batchlin._native, "DeviceCall", fake)
    _front.specs.clear()  # no native call made before the patch is reused

    class _Stream:
        cuda_stream = 12345

    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: _Stream())
    import batchlin.torch as bt

    monkeypatch.setattr(bt, "_current_stream", lambda index: _Stream.cuda_stream)
    yield fake
    _front.specs.clear()  # nor is an emulated one after it


@needs_torch
@pytest.mark.parametrize("needed", [False, True])
def test_nvrtc_loaded_only_where_needed(emulated, monkeypatch, needed):
    """The first device call makes NVRTC findable only where the core says kernels will be
    compiled (no embedded CUBINs for the GPU), once per device."""
    import batchlin.torch as bt

    loads, asked = [], []
    monkeypatch.setattr(_front, "_ready", set())
    monkeypatch.setattr(_front, "_cuda_libs_state", None)
    monkeypatch.setattr(_front, "cuda_libs", lambda: loads.append(1))
    monkeypatch.setattr(batchlin._native, "nvrtc_needed",
                        lambda ordinal: asked.append(ordinal) or needed)
    x = torch.from_numpy(rng(4).standard_normal((3, 5, 4)))
    for _ in range(3):
        bt._qr_cuda(x, "reduced", "auto")
    assert asked == [0] and len(loads) == int(needed)
    assert len(emulated.calls) == 3


@needs_torch
@pytest.mark.parametrize("mode", MODES)
def test_device_path_emulated(emulated, mode):
    import batchlin.torch as bt

    base = torch.from_numpy(rng(3).standard_normal((4, 3, 7, 5)))
    cases = {  # name: (tensor, copied before the call)
        "contiguous": (base, False),
        "transposed": (base.mT, False),
        "sliced": (base[:, :, 1:, ::2], False),
        "one strided batch dim": (base[:, 0][::2], False),
        "broadcast": (base[0, :1].expand(6, 7, 5), False),
        "unbatched": (base[0, 0], False),
        "size-1 batch dims": (base[:1, 1:2], False),
        "float32": (base.float().mT, False),
        "permuted batch": (base.permute(1, 0, 2, 3), True),
        "strided batch": (base[::2], True),
        "negative view": (base._neg_view(), True),
    }
    for name, (x, copied) in cases.items():
        emulated.calls.clear()
        q, r, info = bt._qr_cuda(x, mode, "auto")
        (call,) = emulated.calls
        assert (call["a_ptr"] != x.data_ptr()) == copied, name
        assert call["stream"] == 12345 and call["variant"] == _front.qr_variant(mode)
        assert call["dtype"] == _dtname(x.dtype) and call["ordinal"] == 0
        xr = x.resolve_neg().contiguous()
        ref = batchlin.qr_ex(xr.numpy(), mode=mode)
        assert r.dtype == x.dtype and r.shape == ref.R.shape, name
        assert info.dtype == torch.int32 and info.shape == x.shape[:-2], name
        assert np.allclose(r.numpy(), ref.R, atol=1e-5), name
        if mode == "r":
            assert q.numel() == 0
        else:
            assert q.shape == ref.Q.shape and np.allclose(q.numpy(), ref.Q, atol=1e-5), name
        assert np.array_equal(info.numpy().view(np.uint32), ref.info), name


@needs_torch
@pytest.mark.parametrize("shape", [(0, 4, 4), (3, 0, 4), (3, 4, 0), (2, 0, 0), (5, 0, 3, 3)])
@pytest.mark.parametrize("mode", MODES)
def test_device_path_emulated_empty(emulated, shape, mode):
    import batchlin.torch as bt

    x = torch.zeros(shape)
    q, r, info = bt._qr_cuda(x, mode, "auto")
    # Empty problems go to the core like any other (it writes a complete Q's identity).
    assert len(emulated.calls) == 1
    ref = batchlin.qr_ex(x.numpy(), mode=mode)
    assert r.shape == ref.R.shape and np.array_equal(r.numpy(), ref.R)
    assert info.shape == ref.info.shape and not info.any()
    if mode != "r":
        assert q.shape == ref.Q.shape and np.array_equal(q.numpy(), ref.Q)


@needs_torch
def test_device_path_emulated_arguments(emulated):
    import batchlin.torch as bt

    x = torch.randn(2, 4, 3)
    with pytest.raises(ValueError, match="CPU"):
        bt._qr_cuda(x, "reduced", "cpu-small")
    with pytest.raises(ValueError, match="backend"):
        bt._qr_cuda(x, "reduced", "tpu")
    with pytest.raises(ValueError, match="mode"):
        bt._qr_cuda(x, "economic", "auto")
    with pytest.raises(ValueError, match="dimensions"):
        bt._qr_cuda(torch.randn(4), "reduced", "auto")
    bt._qr_cuda(x, "reduced", "cuda")
    assert len(emulated.calls) == 1


@needs_torch
@pytest.mark.parametrize("variant", ["qr", "qr-complete", "eigh", "svd"])
def test_device_path_shared_outputs(emulated, variant, monkeypatch):
    """Small outputs of the eager path are row-major views into one allocation, 256-byte
    aligned and disjoint: each is independent of the others (writing one leaves the
    others as they were), contiguous, and as correct as outputs allocated apart; large
    ones, and the custom ops' (torch forbids their outputs to alias), are allocated
    apart; the info words are made only where asked for (the kernels skip theirs otherwise)."""
    import batchlin.torch as bt

    a = torch.from_numpy(rng(6).standard_normal((3, 5, 5)))
    *apart, info_apart = bt._cuda(variant, a, "L", None, True, False)
    *shared, info = bt._cuda(variant, a, "L", None, True, True)
    assert emulated.calls[-1]["info_ptr"] == info.data_ptr()
    assert isinstance(emulated.calls[-1]["out"], int)  # one buffer's address
    outs = [t for t in shared if t is not None]
    base = outs[0].untyped_storage().data_ptr()
    for t, u in zip(shared, apart):
        assert (t is None) == (u is None)
        if t is None:
            continue
        assert t.is_contiguous() and t.untyped_storage().data_ptr() == base
        assert (t.data_ptr() - base) % 256 == 0 and torch.equal(t, u)
    assert torch.equal(info, info_apart) and info.dtype == torch.int32
    spans = sorted((t.data_ptr(), t.data_ptr() + t.nbytes) for t in [*outs, info])
    assert all(e <= b for (_, e), (b, _) in zip(spans, spans[1:]))  # disjoint
    before = [t.clone() for t in outs]
    outs[0].fill_(7.0)
    for t, b in zip(outs[1:], before[1:]):
        assert torch.equal(t, b)
    assert torch.equal(info, info_apart)
    for t in apart:
        if t is not None:
            assert t.untyped_storage().nbytes() == t.nbytes  # each its own allocation
    # No info wanted: none made, none passed; one output alone is made in its shape.
    *res, none = bt._cuda(variant, a, "L", None, False, True)
    assert none is None and emulated.calls[-1]["info_ptr"] is None
    assert all(torch.equal(t, u) for t, u in zip(res, apart) if t is not None)
    (r,) = [t for t in bt._cuda("qr-r", a, "L", None, False, True)[:-1] if t is not None]
    assert r._base is None and isinstance(emulated.calls[-1]["out"], tuple)
    # Above the limit each output has its own memory.
    monkeypatch.setattr(_front, "SHARED_OUTPUTS_MAX", 64)
    _front.specs.clear()
    *big, _ = bt._cuda(variant, a, "L", None, True, True)
    assert isinstance(emulated.calls[-1]["out"], tuple)
    assert all(t.untyped_storage().nbytes() == t.nbytes for t in big if t is not None)


@needs_torch
def test_device_path_emulated_every_op(emulated):
    """eigh, eigvalsh, svd (thin and full) and svdvals take the same device call as QR:
    outputs allocated in the order the native layer gives, the triangle passed on."""
    import batchlin.torch as bt

    a = torch.from_numpy(rng(4).standard_normal((3, 5, 5)))
    w, v, info = bt._cuda("eigh", a.mT, "U")
    ref = batchlin.eigh_ex(a.mT.contiguous().numpy(), UPLO="U")
    assert emulated.calls[-1]["uplo"] == "U" and emulated.calls[-1]["variant"] == "eigh"
    assert np.allclose(w.numpy(), ref.eigenvalues) and np.allclose(v.numpy(), ref.eigenvectors)
    assert info.dtype == torch.int32 and info.shape == (3,)
    w, v, info = bt._cuda("eigvalsh", a)
    assert v is None and np.allclose(w.numpy(), batchlin.eigvalsh(a.numpy()))
    b = torch.from_numpy(rng(5).standard_normal((2, 6, 4)))
    for variant, full in (("svd", False), ("svd-full", True)):
        u, s_, vh, info = bt._cuda(variant, b)
        ref = batchlin.svd(b.numpy(), full_matrices=full)
        assert u.shape == ref.U.shape and vh.shape == ref.Vh.shape
        assert np.allclose(s_.numpy(), ref.S)
    u, s_, vh, info = bt._cuda("svdvals", b)
    assert u is None and vh is None and np.allclose(s_.numpy(), batchlin.svdvals(b.numpy()))
    with pytest.raises(ValueError, match="square"):
        bt._cuda("eigh", b)
    with pytest.raises(ValueError, match="UPLO|uplo"):
        bt._cuda("eigh", a, "X")


class _HostMemPtr:
    """cupy.cuda.MemoryPointer over host memory: an address and what keeps it alive."""

    def __init__(self, ptr, owner):
        self.ptr, self.owner = ptr, owner

    def __add__(self, off):
        return _HostMemPtr(self.ptr + off, self.owner)


class _HostDevice:
    id = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _HostCupyArray:
    """What batchlin reads of a CuPy array, over a NumPy array's memory."""

    __module__ = "cupy._emulated"  # batchlin tells CuPy arrays by their module

    def __init__(self, h, owner=None):
        self.h = h
        self.data = _HostMemPtr(h.ctypes.data, h if owner is None else owner)
        self.device = _HostDevice()
        self.shape, self.strides, self.dtype, self.ndim = h.shape, h.strides, h.dtype, h.ndim

    def astype(self, dtype):
        return _HostCupyArray(self.h.astype(dtype))


class _HostCupy:
    """The few names of the cupy module that batchlin's CuPy path uses, on host memory."""

    float32, float64 = np.float32, np.float64

    class cuda:
        class _Stream:
            ptr = 4321

        @staticmethod
        def get_current_stream():
            return _HostCupy.cuda._Stream

    @staticmethod
    def empty(shape, dtype):
        return _HostCupyArray(np.empty(shape, dtype))

    @staticmethod
    def ndarray(shape, dtype, memptr):
        shape = tuple(shape)
        return _HostCupyArray(_host_view(memptr.ptr, dtype, shape, _contiguous(shape)),
                              memptr.owner)

    @staticmethod
    def ascontiguousarray(a):
        return _HostCupyArray(np.ascontiguousarray(a.h))


@pytest.mark.parametrize("shared_max", [_front.SHARED_OUTPUTS_MAX, 0])
def test_cupy_path_emulated(monkeypatch, shared_max):
    """The CuPy path without a GPU (cupy replaced by arrays over host memory, the native
    call emulated there): every operation's outputs, in their slots, as views into one
    allocation or each apart, with info words where asked, equal to the host path's."""
    fake = _EmulatedDevice()
    monkeypatch.setattr(batchlin._native, "DeviceCall", fake)
    monkeypatch.setattr(_front, "_cp", _HostCupy)
    monkeypatch.setattr(_front, "SHARED_OUTPUTS_MAX", shared_max)
    _front.specs.clear()
    try:
        base = rng(8).standard_normal((4, 3, 6, 5))
        sym = base[0, :, :5, :] + base[0, :, :5, :].swapaxes(-1, -2)
        cases = {  # name: (array, copied before the call)
            "contiguous": (base[0], False),
            "transposed": (base[1].swapaxes(-1, -2), False),
            "unbatched": (base[0, 0], False),
            "float32": (base[2].astype(np.float32), False),
            "strided batch": (base[:, 0][::2], False),
            "permuted batch": (base.transpose(1, 0, 2, 3), True),
        }
        for name, (x, copied) in cases.items():
            a = _HostCupyArray(x)
            for ex in (False, True):
                for mode in MODES:
                    fn = batchlin.qr_ex if ex else batchlin.qr
                    got, ref = fn(a, mode=mode), fn(x, mode=mode)
                    call = fake.calls[-1]
                    assert (call["a_ptr"] != x.ctypes.data) == copied, name
                    assert call["stream"] == 4321 and call["ordinal"] == 0
                    assert isinstance(call["out"], int) == (shared_max > 0 and (
                        mode != "r" or ex) and x.size > 0), (name, mode, ex)
                    if mode == "r" and not ex:
                        got, ref = (got,), (ref,)
                    for g, r in zip(got, ref):
                        assert (g is None) == (r is None), (name, mode, ex)
                        if g is not None:
                            assert g.h.dtype == r.dtype and g.shape == r.shape
                            assert np.allclose(g.h, r, atol=1e-5), (name, mode, ex)
            for fn, y in ((batchlin.eigh_ex, sym), (batchlin.eigvalsh, sym),
                          (batchlin.svd_ex, x), (batchlin.svdvals_ex, x)):
                got, ref = fn(_HostCupyArray(y)), fn(y)
                got, ref = (got, ref) if isinstance(ref, tuple) else ((got,), (ref,))
                for g, r in zip(got, ref):
                    assert g.h.dtype == r.dtype and g.shape == r.shape, (name, fn)
                    assert np.allclose(np.abs(g.h), np.abs(r), atol=1e-5), (name, fn)
            got = batchlin.svd(_HostCupyArray(x), full_matrices=True)
            assert [g.shape for g in got] == [r.shape for r in batchlin.svd(x, True)]
        # Promotion on the device, as for torch: float16 to float32, integers to float64.
        assert batchlin.qr(_HostCupyArray(base[0].astype(np.float16))).R.dtype == np.float32
        assert batchlin.qr(_HostCupyArray(np.arange(24).reshape(2, 3, 4))).R.dtype == np.float64
    finally:
        _front.specs.clear()


def test_device_errors_say_why():
    e = _front.device_error("torch", "xla:0", "eigh", None)
    assert isinstance(e, batchlin.UnavailableError) and "xla:0" in str(e)
    assert "no backend" in str(e)
    e = _front.device_error("torch", "cuda:0", "eigh", None)
    if not GPU_BACKEND:
        assert "not available" in str(e)
    assert "QR only" not in str(e) and "only so far" not in str(e)


@pytest.mark.skipif(GPU_BACKEND, reason="the GPU backend is present")
def test_device_call_without_gpu_says_why():
    """No GPU: the device call answers for every operation with the core's reason (the
    Python layer decides nothing about what a GPU runs)."""
    why = _front.gpu_absent_reason()
    for variant in ("qr", "qr-r", "eigh", "eigvalsh", "svd", "svdvals"):
        call = batchlin._native.DeviceCall(variant, "float32", [0, 4, 4], [16, 4, 1])
        with pytest.raises(batchlin.UnavailableError) as e:
            call(0, 0, None, 3, 0)
        assert why in str(e.value)


# ---------------------------------------------------------------------------------------
# Without the GPU backend (a GPU torch sees, but no driver or NVRTC for batchlin)


@needs_torch_cuda
@without_backend
def test_torch_cuda_raises_clearly_without_backend():
    a = torch.randn(4, 8, 8, device="cuda")
    for f in (batchlin.qr, batchlin.eigh, batchlin.svd, batchlin.svdvals):
        with pytest.raises(batchlin.UnavailableError, match="cuda:0"):
            f(a)
    with pytest.raises(batchlin.UnavailableError):
        torch.ops.batchlin.qr(a, "reduced", "auto")


@needs_cupy
@without_backend
def test_cupy_raises_clearly_without_backend():
    with pytest.raises(batchlin.UnavailableError, match="CuPy"):
        batchlin.qr(cupy.eye(3, dtype=cupy.float32))


# ---------------------------------------------------------------------------------------
# torch on the GPU

# Shapes that reach every kernel (Auto): warp (small), smem (100x100), tall (1000x16 with
# a small batch; complete mode goes to the single-level kernels), blocked (300x300).
SHAPES = [(64, 8, 8), (3, 5, 12, 7), (5, 7, 12), (40, 3), (16, 1, 5), (16, 5, 1),
          (8, 100, 100), (4, 1000, 16), (2, 300, 300)]


@needs_torch_cuda
@needs_backend
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_torch_cuda_qr_matches_reference(shape, mode, dtype):
    x = rng(sum(shape)).standard_normal(shape).astype(dtype)
    a = torch.from_numpy(x).cuda()
    q, r, info = batchlin.qr_ex(a, mode=mode)
    torch.cuda.synchronize()
    assert type(r) is torch.Tensor and r.device == a.device and r.dtype == a.dtype
    assert info.device == a.device and info.dtype == torch.int32 and info.shape == shape[:-2]
    assert not (info.cpu().numpy().view(np.uint32) & batchlin.INFO_NONFINITE).any()
    tol = TOL[dtype]
    if mode == "r":
        assert q is None
        check_r(x, r.cpu().numpy(), tol)
        assert isinstance(batchlin.qr(a, mode="r"), torch.Tensor)
        return
    assert q.device == a.device and q.dtype == a.dtype
    m, n = shape[-2:]
    assert r.shape == (*shape[:-2], m if mode == "complete" else min(m, n), n)
    check_qr(x, q.cpu().numpy(), r.cpu().numpy(), tol, mode)
    check_r_vs_numpy(x, r.cpu().numpy(), tol)
    Q, R = batchlin.qr(a, mode=mode)
    assert torch.allclose(Q, q, atol=tol) and torch.allclose(R, r, atol=tol)


@pytest.fixture
def spy_qr_cuda(monkeypatch):
    """Records the input address each native device call reads."""
    seen = []
    real = batchlin._native.DeviceCall

    class Spy:
        def __init__(self, *args):
            self.call = real(*args)
            self.outputs, self.nbytes = self.call.outputs, self.call.nbytes
            self.info_offset, self.info_len = self.call.info_offset, self.call.info_len

        def __call__(self, a, *rest):
            seen.append(a)
            return self.call(a, *rest)

    monkeypatch.setattr(batchlin._native, "DeviceCall", Spy)
    _front.specs.clear()
    yield seen
    _front.specs.clear()


@needs_torch_cuda
@needs_backend
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_cuda_strided_inputs(dtype, spy_qr_cuda):
    base = torch.from_numpy(rng(5).standard_normal((4, 3, 9, 6)).astype(dtype)).cuda()
    cases = {  # name: (tensor, read in place)
        "transposed": (base.mT, True),
        "sliced": (base[:, :, 1:, ::2], True),
        "row-strided": (base[:, :, ::2, :], True),
        "broadcast batch": (base[0, :1].expand(5, 9, 6), True),
        "unbatched": (base[1, 2], True),
        "storage offset": (base[1, 1:], True),
        "permuted batch": (base.permute(1, 0, 2, 3), False),
        "strided batch": (base[::2], False),
        "negative view": (base._neg_view(), False),
    }
    tol = TOL[dtype]
    for name, (x, in_place) in cases.items():
        xn = x.resolve_neg().cpu().numpy()
        cpu = batchlin.qr(x.resolve_neg().cpu())
        k = min(x.shape[-2:])
        for mode in MODES:
            spy_qr_cuda.clear()
            q, r, info = batchlin.qr_ex(x, mode=mode)
            assert (spy_qr_cuda == [x.data_ptr()]) == in_place, (name, mode)
            r_np = r.cpu().numpy()
            assert np.allclose(r_np[..., :k, :], cpu.R.numpy(), atol=10 * tol), (name, mode)
            if mode == "r":
                check_r(xn, r_np, tol)
                continue
            check_qr(xn, q.cpu().numpy(), r_np, tol, mode)
            assert np.allclose(q.cpu().numpy()[..., :k], cpu.Q.numpy(), atol=10 * tol), (name, mode)
    q, r = batchlin.qr(cases["broadcast batch"][0])
    assert torch.equal(r[0], r[4]) and torch.equal(q[0], q[4])


@needs_torch_cuda
@needs_backend
def test_torch_cuda_promotes_on_device():
    a = torch.randn(6, 5, 4, device="cuda")
    for dt in (torch.float16, torch.bfloat16):
        q, r = batchlin.qr(a.to(dt))
        assert r.dtype == torch.float32 and r.device == a.device
        check_qr(a.to(dt).float().cpu().numpy(), q.cpu().numpy(), r.cpu().numpy(), 1e-4)
    i = torch.randint(-5, 6, (6, 5, 4), device="cuda")
    for x in (i, i > 0):
        q, r = batchlin.qr(x)
        assert r.dtype == torch.float64 and r.device == a.device
        check_qr(x.double().cpu().numpy(), q.cpu().numpy(), r.cpu().numpy(), 1e-11)
    with pytest.raises(batchlin.DTypeError):
        batchlin.qr(a.to(torch.complex64))


@needs_torch_cuda
@needs_backend
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_cuda_nan_isolated(dtype):
    x = rng(7).standard_normal((8, 6, 5)).astype(dtype)
    x[2, 1, 3] = np.nan
    x[5, 0, 0] = np.inf
    a = torch.from_numpy(x).cuda()
    q, r, info = batchlin.qr_ex(a)
    info = info.cpu().numpy().view(np.uint32)
    bad, good = [2, 5], [0, 1, 3, 4, 6, 7]
    assert all(info[b] & batchlin.INFO_NONFINITE for b in bad)
    assert not any(info[g] & batchlin.INFO_NONFINITE for g in good)
    assert torch.isnan(q[bad]).all() and torch.isnan(r[bad]).all()
    check_qr(x[good], q[good].cpu().numpy(), r[good].cpu().numpy(), TOL[dtype])


@needs_torch_cuda
@needs_backend
def test_torch_cuda_empty_shapes():
    for shape in [(0, 4, 4), (3, 0, 4), (3, 4, 0)]:
        a = torch.zeros(shape, device="cuda")
        for mode in MODES:
            q, r, info = batchlin.qr_ex(a, mode=mode)
            ref = batchlin.qr_ex(a.cpu(), mode=mode)
            assert r.device == a.device and torch.equal(r.cpu(), ref.R)
            assert info.shape == shape[:-2] and not info.any()
            if mode != "r":
                assert q.device == a.device and torch.equal(q.cpu(), ref.Q)


@needs_torch_cuda
@needs_backend
def test_torch_cuda_current_stream_no_host_sync():
    a = torch.randn(256, 32, 32, device="cuda")
    batchlin.qr(a)  # warm-up: the kernel is compiled and loaded outside the timed part
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(1_000_000_000)  # about half a second of GPU time on s
        b = a * 2  # written on s after the sleep
        q, r, info = batchlin.qr_ex(b)
        # The call returned while s was still busy: it queued the work and did not wait.
        busy = not s.query()
        rec = q @ r  # usable at once on the same stream
    s.synchronize()
    assert busy, "batchlin.qr synchronised with the GPU"
    # Had the kernel run on another stream, it would have read b before b was written.
    check_qr(b.cpu().numpy(), q.cpu().numpy(), r.cpu().numpy(), 1e-4)
    assert torch.allclose(rec, b, atol=1e-4)
    assert not info.any()


@needs_torch_cuda
@needs_backend
def test_torch_cuda_graph_capture():
    a = torch.randn(64, 16, 16, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        batchlin.qr(a)  # warm-up: load the kernel outside the capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        q, r = batchlin.qr(a)
    a.copy_(torch.randn_like(a))
    g.replay()
    torch.cuda.synchronize()
    check_qr(a.cpu().numpy(), q.cpu().numpy(), r.cpu().numpy(), 1e-4)


def _core_says(variant, shape, device="cuda:0"):
    """The core's own UnavailableError message for `variant` at `device` (the planner's
    answer), or None where the core plans it."""
    try:
        batchlin._native.plan(variant, list(shape), "float32", device)
    except batchlin.UnavailableError as e:
        return str(e)
    return None


GPU_OPS = [(batchlin.eigh, "eigh"), (batchlin.eigvalsh, "eigvalsh"), (batchlin.svd, "svd"),
           (batchlin.svdvals, "svdvals"), (batchlin.eigh_ex, "eigh"), (batchlin.svd_ex, "svd")]


@needs_torch_cuda
@needs_backend
def test_torch_cuda_other_ops_raise_clearly():
    """eigh and svd of CUDA tensors go to the device call like QR: they run where the
    core plans them (test_cuda_eigh_svd.py checks the results), else the core's
    UnavailableError comes back (not a crash, not a TypeError), naming what the GPU
    lacks."""
    a = torch.randn(4, 6, 6, device="cuda")
    for f, variant in GPU_OPS:
        core = _core_says(variant, a.shape)
        if core is None:  # the GPU backend runs it now
            f(a)
            continue
        assert ("eigh" if "eig" in variant else "svd") in core  # names what the GPU lacks
        for x in (a, a.clone().requires_grad_(True)):
            with pytest.raises(batchlin.UnavailableError) as e:
                f(x)
            assert core in str(e.value) and "cuda:0" in str(e.value)
            assert "QR only" not in str(e.value)
    for op, args in ((torch.ops.batchlin.eigh, (a, "L", "auto")),
                     (torch.ops.batchlin.svdvals, (a, "auto"))):
        core = _core_says("eigh" if op is torch.ops.batchlin.eigh else "svdvals", a.shape)
        if core is not None:
            with pytest.raises(batchlin.UnavailableError) as e:
                op(*args)
            assert core in str(e.value)
    r = batchlin.backend_for("qr", a.shape, a.dtype, a.device)
    assert r == "cuda" and r.plan.startswith("cuda:0")
    if _core_says("eigh", a.shape) is not None:
        with pytest.raises(batchlin.UnavailableError):
            batchlin.backend_for("eigh", a.shape, a.dtype, "cuda")
    with pytest.raises(ValueError, match="CPU"):
        batchlin.qr(a, backend="cpu-small")
    assert batchlin.qr(a, backend="cuda").R.device == a.device


@needs_torch_cuda
@needs_backend
def test_torch_cuda_explicit_ordinal_zero():
    """A tensor on cuda:0, named explicitly: QR runs there, on that device's stream."""
    a = torch.randn(16, 9, 7, dtype=torch.float64, device="cuda:0")
    q, r, info = batchlin.qr_ex(a)
    q2, r2, _ = torch.ops.batchlin.qr(a, "reduced", "auto")
    torch.cuda.synchronize("cuda:0")
    for t in (q, r, info, q2, r2):
        assert t.device == torch.device("cuda:0")
    check_qr(a.cpu().numpy(), q.cpu().numpy(), r.cpu().numpy(), 1e-11)
    assert torch.allclose(r, r2) and not info.any()
    r = batchlin.backend_for("qr", a.shape, a.dtype, "cuda:0")
    assert r == "cuda" and r.plan.startswith("cuda:0") and r.device == "cuda:0"


@needs_torch_cuda
@needs_backend
def test_missing_ordinal_raises_clearly():
    """A CUDA ordinal the machine lacks: the core's UnavailableError, naming the device
    and how many there are (torch makes no tensor there, so the planner and the device
    call are asked directly, with empty buffers)."""
    n = torch.cuda.device_count()
    with pytest.raises(batchlin.UnavailableError, match=f"no CUDA device {n}"):
        batchlin.backend_for("qr", (4, 8, 8), "float32", device=f"cuda:{n}")
    call = batchlin._native.DeviceCall("qr", "float32", [0, 8, 8], [64, 8, 1])
    with pytest.raises(batchlin.UnavailableError, match=f"no CUDA device {n}"):
        call(0, (0, 0), None, n, 0)


@needs_torch_cuda
@needs_backend
@pytest.mark.skipif(HAVE_TORCH_CUDA and torch.cuda.device_count() < 2,
                    reason="one CUDA device: no second device to run on")
def test_torch_cuda_second_device():
    """QR of a tensor on cuda:1 runs on cuda:1, its outputs there, and leaves the
    caller's current device as it was."""
    torch.cuda.set_device(0)
    a = torch.randn(8, 6, 5, device="cuda:1")
    q, r = batchlin.qr(a)
    torch.cuda.synchronize("cuda:1")
    assert q.device == a.device and r.device == a.device
    assert torch.cuda.current_device() == 0
    check_qr(a.cpu().numpy(), q.cpu().numpy(), r.cpu().numpy(), 1e-4)


@needs_torch_cuda
@needs_backend
def test_torch_cuda_opcheck():
    from torch.library import opcheck

    a = torch.randn(3, 5, 4, dtype=torch.float64, device="cuda")
    opcheck(torch.ops.batchlin.qr.default, (a, "reduced", "auto"))
    opcheck(torch.ops.batchlin.qr.default, (a.mT.contiguous(), "complete", "auto"),
            test_utils=("test_schema", "test_faketensor"))
    opcheck(torch.ops.batchlin.qr.default, (a, "r", "auto"),
            test_utils=("test_schema", "test_faketensor"))


@needs_torch_cuda
@needs_backend
@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 4, 4), (2, 3, 5)])
def test_torch_cuda_gradcheck(shape):
    from torch.autograd import gradcheck

    g = torch.Generator(device="cuda").manual_seed(sum(shape))
    a = torch.randn(*shape, dtype=torch.float64, device="cuda", generator=g)
    a.requires_grad_(True)
    assert gradcheck(lambda a: tuple(batchlin.qr(a)), (a,))
    if shape[-2] <= shape[-1]:
        assert gradcheck(lambda a: tuple(batchlin.qr(a, mode="complete")), (a,))
    # Against torch.linalg.qr's gradient, with a loss blind to the signs LAPACK picks.
    w = torch.randn(shape, dtype=torch.float64, device="cuda", generator=g)

    def loss(lib, a):
        q, r = lib.qr(a)
        return ((q @ q.mT) * w[..., :1]).sum() + (r.abs() * w[..., : r.shape[-2], :]).sum()

    (g1,) = torch.autograd.grad(loss(batchlin, a), a)
    (g2,) = torch.autograd.grad(loss(torch.linalg, a), a)
    assert g1.device == a.device and torch.allclose(g1, g2, atol=1e-10)


@needs_torch_cuda
@needs_backend
def test_torch_cuda_compile_fullgraph():
    import torch._dynamo

    torch._dynamo.reset()

    @torch.compile(fullgraph=True, backend="aot_eager")
    def f(a):
        q, r = batchlin.qr(a)
        qc, rc = batchlin.qr(a, mode="complete")
        return q.sum() + (r * r).sum() + (qc @ rc).sum()

    a = torch.randn(3, 5, 6, dtype=torch.float64, device="cuda", requires_grad=True)
    out = f(a)
    (g,) = torch.autograd.grad(out, a)
    a2 = a.detach().clone().requires_grad_(True)
    q, r = batchlin.qr(a2)
    qc, rc = batchlin.qr(a2, mode="complete")
    ref = q.sum() + (r * r).sum() + (qc @ rc).sum()
    (g2,) = torch.autograd.grad(ref, a2)
    assert out.device == a.device and g.device == a.device
    assert torch.allclose(out, ref) and torch.allclose(g, g2)

    torch._dynamo.reset()

    @torch.compile(fullgraph=True, dynamic=True)
    def h(a):
        return batchlin.qr(a).R.sum(-1) + batchlin.qr(a, mode="r")[..., :1, :].sum(-1)

    with torch.no_grad():
        for shape in [(4, 6, 6), (2, 7, 3)]:
            b = torch.randn(*shape, device="cuda")
            want = batchlin.qr(b).R.sum(-1) + batchlin.qr(b, mode="r")[..., :1, :].sum(-1)
            got = h(b)
            assert got.device == b.device and torch.allclose(got, want, atol=1e-5)


# ---------------------------------------------------------------------------------------
# CuPy on the GPU


@needs_cupy
@needs_backend
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cupy_qr(dtype, spy_qr_cuda):
    x = rng(9).standard_normal((6, 4, 10, 7)).astype(dtype)
    a = cupy.asarray(x)
    cases = {  # name: (array, read in place)
        "contiguous": (a, True),
        "transposed": (a.swapaxes(-1, -2), True),
        "sliced": (a[:, :, 1:, ::2], True),
        "negative batch stride": (a[::-1], False),
        "negative row stride": (a[..., ::-1, :], False),
        "permuted batch": (a.transpose(1, 0, 2, 3), False),
    }
    tol = TOL[dtype]
    for name, (c, in_place) in cases.items():
        xn = cupy.asnumpy(c)
        for mode in MODES:
            spy_qr_cuda.clear()
            q, r, info = batchlin.qr_ex(c, mode=mode)
            assert (spy_qr_cuda == [c.data.ptr]) == in_place, (name, mode)
            assert isinstance(r, cupy.ndarray) and r.device.id == 0 and r.dtype == c.dtype
            assert isinstance(info, cupy.ndarray) and info.dtype == cupy.uint32
            assert info.shape == c.shape[:-2] and not info.any()
            if mode == "r":
                assert q is None
                check_r(xn, cupy.asnumpy(r), tol)
            else:
                assert isinstance(q, cupy.ndarray)
                check_qr(xn, cupy.asnumpy(q), cupy.asnumpy(r), tol, mode)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        q, r = batchlin.qr(a)
        rec = q @ r
    s.synchronize()
    assert cupy.allclose(rec, a, atol=10 * tol)
    assert batchlin.qr(a.astype(cupy.float16)).R.dtype == cupy.float32
    assert batchlin.qr(cupy.arange(24).reshape(2, 3, 4)).R.dtype == cupy.float64
    for f, x, variant in ((batchlin.eigh, a[..., :7, :], "eigh"), (batchlin.svdvals, a, "svdvals")):
        core = _core_says(variant, x.shape)
        if core is not None:
            with pytest.raises(batchlin.UnavailableError) as e:
                f(x)
            assert core in str(e.value) and "CuPy" in str(e.value)


# ---------------------------------------------------------------------------------------
# JAX on a GPU: QR as an XLA FFI custom call on XLA's stream (batchlin/_jax.py)


def _jax_gpus():
    """(jax, the GPU devices JAX sees), or why not."""
    try:
        import jax
    except ImportError:
        return None, "jax is not installed"
    try:
        gpus = jax.devices("gpu")
    except Exception as e:  # RuntimeError: no GPU backend in this JAX
        return None, f"JAX sees no GPU ({type(e).__name__}: {str(e)[:120]})"
    if not gpus:
        return None, "JAX sees no GPU"
    return jax, gpus


@pytest.fixture
def jax_gpu():
    """JAX with x64 on, and its first GPU. Skips, saying why, without one (or without
    batchlin's GPU backend)."""
    jax, gpus = _jax_gpus()
    if jax is None:
        pytest.skip(gpus)
    if not GPU_BACKEND:
        pytest.skip(f"no batchlin GPU backend: {_front.gpu_absent_reason()}")
    jax.config.update("jax_enable_x64", True)
    return jax, gpus[0]


def _on_gpu(jax, x):
    return {d.platform for d in x.devices()} == {"gpu"}


@pytest.mark.parametrize("call", ["eager", "jit"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_jax_gpu_qr_matches_reference(jax_gpu, shape, mode, dtype, call):
    jax, gpu = jax_gpu
    x = rng(sum(shape)).standard_normal(shape).astype(dtype)
    a = jax.device_put(x, gpu)
    f = (lambda t: batchlin.qr_ex(t, mode=mode))
    q, r, info = jax.jit(f)(a) if call == "jit" else f(a)
    assert isinstance(r, jax.Array) and _on_gpu(jax, r) and r.dtype == a.dtype
    assert _on_gpu(jax, info) and info.dtype == np.uint32 and info.shape == shape[:-2]
    assert not (np.asarray(info) & batchlin.INFO_NONFINITE).any()
    tol = TOL[dtype]
    if mode == "r":
        assert q is None
        check_r(x, np.asarray(r), tol)
        return
    assert _on_gpu(jax, q) and q.dtype == a.dtype
    m, n = shape[-2:]
    assert r.shape == (*shape[:-2], m if mode == "complete" else min(m, n), n)
    check_qr(x, np.asarray(q), np.asarray(r), tol, mode)  # Q R = A, Q^T Q = I, triu, diag >= 0
    check_r_vs_numpy(x, np.asarray(r), tol)
    if mode == "reduced" and n <= 16:  # Q = A R^-1 is unique: the CPU's, up to rounding
        q_cpu, _ = batchlin.qr(x.astype(np.float64))
        assert rel(np.asarray(q), q_cpu) < 100 * tol


def test_jax_gpu_vmap_jit_and_chained_work(jax_gpu):
    jax, gpu = jax_gpu
    jnp = jax.numpy
    x = rng(31).standard_normal((6, 4, 20, 12)).astype(np.float32)
    a = jax.device_put(x, gpu)

    hi = jax.lax.Precision.HIGHEST  # JAX's default float32 matmul on a GPU is TF32 (~1e-3)

    @jax.jit
    def resid(t):
        q, r = jax.vmap(batchlin.qr)(t)  # the mapped axis is one more batch axis
        qr_ = jnp.matmul(q, r, precision=hi)
        qtq = jnp.matmul(q.mT, q, precision=hi)
        return jnp.max(jnp.abs(qr_ - t)), jnp.max(jnp.abs(qtq - jnp.eye(12)))

    e_rec, e_orth = resid(a)
    assert float(e_rec) < 1e-4 and float(e_orth) < 1e-4
    q, r = batchlin.qr(a)
    q2, r2 = jax.vmap(jax.vmap(batchlin.qr))(a)
    assert np.allclose(np.asarray(q), np.asarray(q2), atol=1e-6)


def test_jax_gpu_qr_in_a_loop_on_xlas_stream(jax_gpu):
    """Orthogonalise repeatedly inside one jitted loop: every call reads what the one
    before wrote, so a call off XLA's stream would read stale data."""
    jax, gpu = jax_gpu
    jnp = jax.numpy
    x = jax.device_put(rng(32).standard_normal((512, 32, 32)).astype(np.float32), gpu)

    @jax.jit
    def loop(t):
        def body(i, c):
            q, r = batchlin.qr(c)
            return q * 2.0 + 0.01 * c
        return jax.lax.fori_loop(0, 20, body, t)

    out = np.asarray(loop(x))
    ref = np.asarray(x, dtype=np.float64)
    for _ in range(20):
        q, _ = np.linalg.qr(ref)
        s = np.sign(np.diagonal(np.linalg.qr(ref, mode="r"), axis1=-2, axis2=-1))
        s[s == 0] = 1
        ref = (q * s[..., None, :]) * 2.0 + 0.01 * ref
    assert rel(out, ref) < 1e-3


def test_jax_gpu_dtypes_empty_and_nan(jax_gpu):
    jax, gpu = jax_gpu
    jnp = jax.numpy
    x = rng(33).standard_normal((5, 6, 4))
    assert batchlin.qr(jax.device_put(x.astype(np.float16), gpu)).R.dtype == jnp.float32
    assert batchlin.qr(jax.device_put((x * 4).astype(np.int32), gpu)).R.dtype == jnp.float64
    for shape in [(0, 4, 4), (3, 0, 4), (3, 4, 0), (2, 0, 0)]:
        z = np.zeros(shape)
        for mode in ("reduced", "complete"):
            q, r = batchlin.qr(jax.device_put(z, gpu), mode=mode)
            ref = np.linalg.qr(z, mode=mode)
            assert q.shape == ref.Q.shape and np.array_equal(np.asarray(q), ref.Q)
            assert r.shape == ref.R.shape
    y = x.copy()
    y[2, 1, 1] = np.nan
    q, r, info = batchlin.qr_ex(jax.device_put(y, gpu))
    bits = np.asarray(info) & batchlin.INFO_NONFINITE
    assert list(bits != 0) == [False, False, True, False, False]
    assert np.all(np.isnan(np.asarray(r)[2])) and np.all(np.isfinite(np.asarray(r)[[0, 1, 3, 4]]))
    check_qr(y[[0, 1, 3, 4]], np.asarray(q)[[0, 1, 3, 4]], np.asarray(r)[[0, 1, 3, 4]], 1e-11)


def test_jax_gpu_grad(jax_gpu):
    """Gradients through QR on the GPU (the custom JVP around the GPU custom call)
    against jnp.linalg's, on a sign-invariant function of R."""
    jax, gpu = jax_gpu
    jnp = jax.numpy
    x = jax.device_put(rng(34).standard_normal((8, 6, 4)), gpu)
    g = jax.jit(jax.grad(lambda t: (batchlin.qr(t).R ** 2).sum()))(x)
    ref = jax.grad(lambda t: (jnp.linalg.qr(t)[1] ** 2).sum())(x)
    assert _on_gpu(jax, g)
    assert np.allclose(np.asarray(g), np.asarray(ref), atol=1e-9)


def test_jax_gpu_other_ops_raise_clearly(jax_gpu):
    jax, gpu = jax_gpu
    a = jax.device_put(np.eye(3, dtype=np.float32)[None].repeat(2, 0), gpu)
    for f, variant in GPU_OPS[:4]:
        core = _core_says(variant, a.shape, f"cuda:{gpu.id}")
        if core is None:  # the GPU backend runs it now
            continue
        with pytest.raises(batchlin.UnavailableError) as e:
            f(a)  # a concrete GPU array: raised before the call, as the core plans it
        assert core in str(e.value)
        with pytest.raises(jax.errors.JaxRuntimeError) as e:
            jax.block_until_ready(jax.jit(f)(a))  # traced: the CUDA handler says it
        assert core.split("error: ", 1)[-1] in str(e.value)
    with pytest.raises(jax.errors.JaxRuntimeError, match="cpu-small"):
        jax.block_until_ready(jax.jit(lambda t: batchlin.qr(t, backend="cpu-small"))(a))
    assert np.allclose(np.asarray(batchlin.qr(a).R), np.eye(3))  # and it still works

