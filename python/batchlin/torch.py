"""PyTorch integration: custom ops, fake implementations and autograd.

Importing this module (batchlin does it by itself as soon as torch is loaded) registers

    torch.ops.batchlin.qr(a, mode, backend) -> (Q, R, info)       Q is empty for mode "r"
    torch.ops.batchlin.eigh(a, UPLO, backend) -> (w, V, info)
    torch.ops.batchlin.eigvalsh(a, UPLO, backend) -> (w, info)
    torch.ops.batchlin.svd(a, full_matrices, backend) -> (U, S, Vh, info)
    torch.ops.batchlin.svdvals(a, backend) -> (S, info)

with `torch.library.Library` (`_register`: one kernel for every device, a fake (meta)
implementation, so that `torch.compile(fullgraph=True)` traces them, and an autograd
kernel of batchlin's own that calls the kernel directly when no gradient is needed), with
autograd by the backward formulas torch.linalg uses (the same degenerate cases: see the
docstrings of the *_backward functions). `info` is int32 (as torch.linalg's *_ex info),
with batchlin's bit layout.

`batchlin.qr(tensor)` and friends come here. In eager mode, with no gradient needed,
they skip the dispatcher and call the native layer directly (a few microseconds);
otherwise (autograd, torch.compile, tensor subclasses) they go through the ops.

CUDA tensors (on any device, `cuda:N`): every op, direct or through `torch.ops.batchlin`,
goes to the native device call (`_cuda`): the input read in place, the outputs
allocated by torch on the input's device, the work queued on the current stream of that
device with no host synchronisation. What the GPU backend cannot do comes back as the
core's UnavailableError, with its message.

For torch.compile, import torch before batchlin (or import batchlin.torch): the ops
must be registered before Dynamo traces a call.
"""

import sys

import numpy as np
import torch
from torch import Tensor

from . import _native
from . import _front
from ._front import DTypeError
import batchlin as _bl

_F32, _F64 = torch.float32, torch.float64


def promote(a: Tensor) -> Tensor:
    """float32/float64 as they are; float16, bfloat16 (and float8) to float32; integers
    and bool to float64 (numpy.linalg's rule); complex raises DTypeError."""
    dt = a.dtype
    if dt is _F32 or dt is _F64:
        return a
    if dt.is_complex:
        raise DTypeError(
            f"batchlin does not support complex input yet (got {dt}); "
            "it computes real float32 and float64 matrices")
    if dt.is_floating_point:
        return a.to(_F32)
    return a.to(_F64)


def _check_device(a: Tensor, op: str) -> None:
    t = a.device.type
    if t in ("cpu", "meta", "cuda"):
        return
    _front.device_call("torch", str(a.device), op)


def _np(a: Tensor, op: str) -> np.ndarray:
    """A NumPy view of a CPU tensor's memory (no copy)."""
    if not a.is_cpu:
        _check_device(a, op)
    if a.dtype is not _F32 and a.dtype is not _F64:  # the custom ops' input, as on CUDA
        _batch_and_mn(a, op)
    if a.layout is not _STRIDED:
        raise TypeError(f"batchlin.{op}: {a.layout} tensors are not supported; "
                        "pass a dense one (Tensor.to_dense())")
    if a.requires_grad:
        a = a.detach()
    if a.is_neg():
        a = a.resolve_neg()
    return a.numpy()


def _t(x: np.ndarray) -> Tensor:
    return torch.from_numpy(x)


def _info(x: np.ndarray) -> Tensor:
    return torch.from_numpy(x.view(np.int32))


def _batch_and_mn(a: Tensor, op: str):
    if a.dim() < 2:
        raise ValueError(
            f"batchlin shape error: expected a tensor of at least 2 dimensions [..., M, N], "
            f"got {a.dim()} (shape {tuple(a.shape)})")
    if a.dtype not in (_F32, _F64):
        raise DTypeError(f"torch.ops.batchlin.{op} takes float32 or float64, got {a.dtype}")
    return tuple(a.shape[:-2]), a.shape[-2], a.shape[-1]


# ---------------------------------------------------------------------------------------
# Registration: one helper for the five ops


_lib = torch.library.Library("batchlin", "DEF")

# What torch's own custom-op autograd kernel uses to run an op below autograd (present in
# every torch with torch.library.custom_op); without them the ops take
# torch.library.register_autograd's kernel.
_C = torch._C
_below_autograd = getattr(_C, "_AutoDispatchBelowAutograd", None)
_after_autograd = getattr(_C, "_after_autograd_keyset", None)
_after_inplace_or_view = getattr(_C, "_after_ADInplaceOrView_keyset", None)
_DispatchKey = getattr(_C, "DispatchKey", None)
_OWN_AUTOGRAD = (all(x is not None for x in (_below_autograd, _after_autograd,
                                            _after_inplace_or_view, _DispatchKey))
                 and hasattr(getattr(_C, "DispatchKeySet", None), "raw_repr"))
if _OWN_AUTOGRAD:
    _DIRECT = (_DispatchKey.CPU, _DispatchKey.CUDA)
    _direct = {}  # DispatchKeySet.raw_repr() -> _goes_direct (a handful of keysets)


def _goes_direct(keyset) -> bool:
    """Whether the dispatcher, below autograd, would call the kernel itself: a CPU or
    CUDA tensor with nothing between (no fake or functional tensor, no dispatch mode,
    no lazy negation)."""
    return (keyset & _after_inplace_or_view).highestPriorityTypeId() in _DIRECT


def _is_direct(keyset) -> bool:
    """`_goes_direct`, remembered per keyset."""
    raw = keyset.raw_repr()
    direct = _direct.get(raw)
    if direct is None:
        direct = _direct[raw] = _goes_direct(keyset)
    return direct


def _register(name: str, schema: str, kernel, fake, setup_context, backward):
    """Defines `batchlin::name` with `schema` (the arguments after the tensor as
    `kernel`'s defaults), `kernel` for every device (its own device check raises for
    devices batchlin does not serve), `fake` for meta and fake tensors, and autograd by
    `backward`/`setup_context`; returns the op's overload.

    Per call, what torch.library.custom_op adds is gone: its backend wrapper (a Dynamo
    disable wrapper and the outputs' aliasing check; the kernels allocate every output
    apart, as custom ops must) and, when no gradient is needed, the second trip through
    the dispatcher: the autograd kernel calls `kernel` itself where the dispatcher would
    (a CPU or CUDA tensor with nothing between autograd and the backend: no fake or
    functional tensor, no dispatch mode, no lazy negation), and redispatches below
    autograd otherwise, as custom_op's does. With a gradient: a torch.autograd.Function
    around the same, with `setup_context` and `backward` as register_autograd takes
    them."""
    _lib.define(name + schema)
    _lib.impl(name, kernel, "CompositeExplicitAutograd")
    qualname = "batchlin::" + name
    torch.library.register_fake(qualname, fake, lib=_lib)
    op = getattr(torch.ops.batchlin, name).default
    if not _OWN_AUTOGRAD:
        torch.library.register_autograd(qualname, backward, setup_context=setup_context,
                                        lib=_lib)
        return op
    defaults = kernel.__defaults__
    nargs = len(defaults)
    redispatch = op.redispatch

    def no_grad(keyset, args):
        if _is_direct(keyset):
            return kernel(*args)
        with _below_autograd():
            return redispatch(keyset & _after_autograd, *args)

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, keyset, *args):
            out = no_grad(keyset, args)
            setup_context(ctx, args, out)
            return out

        @staticmethod
        def backward(ctx, *grads):
            return (None, *backward(ctx, *grads))

    Function.__name__ = Function.__qualname__ = f"batchlin_{name}_backward"

    def autograd_kernel(keyset, a, *args):
        if not (a.requires_grad and _grad_enabled()) and _is_direct(keyset):
            # The common case first: the arguments as they came (the kernel's defaults
            # are the schema's), no tuple rebuilt.
            return kernel(a, *args)
        # The dispatcher leaves out trailing arguments equal to their defaults.
        if len(args) < nargs:
            args = (*args, *defaults[len(args):])
        if a.requires_grad and _grad_enabled():
            return Function.apply(keyset, a, *args)
        return no_grad(keyset, (a, *args))

    _lib.impl(name, autograd_kernel, "Autograd", with_keyset=True)
    return op


# ---------------------------------------------------------------------------------------
# QR


# The current stream of a CUDA device as an int, without building a torch.cuda.Stream
# (what torch.cuda.current_stream(dev).cuda_stream returns, at a tenth of the cost).
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_INT32 = torch.int32
_STRIDED = torch.strided
_empty = torch.empty
_data_ptr = Tensor.data_ptr
_Unavailable = _front.UnavailableError
_specs = _front.specs
_is_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled


def _stream_of(index: int) -> int:
    return torch.cuda.current_stream(index).cuda_stream


_current_stream = _raw_stream if _raw_stream is not None else _stream_of


def _spec(key, a: Tensor, variant: str, uplo: str, backend, info: bool, shared: bool):
    """The `_front.DeviceSpec` for `a`'s layout (first call on it): checks what the
    call would reject, then remembers it under `key`."""
    dt = a.dtype
    if a.dim() < 2 or (dt is not _F32 and dt is not _F64):
        _batch_and_mn(a, variant.split("-")[0])
    index = a.get_device()
    if index >= 0:
        dev = torch.device("cuda", index)
    else:  # a CPU tensor: only the tests' emulated device path comes here
        dev, index = a.device, 0
    return _front.device_spec(
        key, "torch", variant, "float32" if dt is _F32 else "float64", a.element_size(),
        a.shape, a.stride(), dev, index, uplo, backend, info, shared)


def _cuda(variant: str, a: Tensor, uplo: str = "L", backend=None, info: bool = True,
          shared: bool = True):
    """`variant` of a float32/float64 CUDA tensor on its device (`_front.DeviceSpec`):
    every output slot (None where not computed) and info (int32; None unless `info`),
    torch tensors on `a`'s device, queued on that device's current stream. `shared`:
    small outputs may be views into one allocation (`_front.SHARED_OUTPUTS_MAX`; not for
    the custom ops, whose outputs torch requires not to alias)."""
    if a.is_neg():
        a = a.resolve_neg()
    index = a.get_device()
    dt = a.dtype
    key = (variant, dt, a.shape, a.stride(), index, uplo, backend, info, shared)
    spec = _specs.get(key)
    if spec is None:
        spec = _spec(key, a, variant, uplo, backend, info, shared)
    if spec.copy:
        a = a.contiguous()
    if index < 0:  # a CPU tensor: only the tests' emulated device path comes here
        index = 0
    # The outputs are made inline, one torch call each: per-output Python hooks cost
    # 1-2 us a call. torch.empty(*size): a size tuple parses 0.7 us slower.
    dev = spec.device
    iw = iptr = None
    inf = spec.info
    if spec.elems:  # small outputs: views into one allocation
        buf = _empty(spec.elems, dtype=dt, device=dev)
        out = buf.data_ptr()
        res = list(map(buf.as_strided, spec.shapes, spec.strides, spec.offsets))
        if inf is not None:
            iptr = out + inf[3]
            iw = buf.view(_INT32).as_strided(inf[0], inf[1], inf[2])
    else:
        res = []
        for size in spec.sizes:
            res.append(_empty(*size, dtype=dt, device=dev))
        out = tuple(map(_data_ptr, res))
        if inf is not None:
            iw = _empty(*spec.info_size, dtype=_INT32, device=dev)
            iptr = iw.data_ptr()
    try:
        spec.call(a.data_ptr(), out, iptr, index, _current_stream(index))
    except _Unavailable as e:
        raise spec.error(e, index) from None
    # A copy made here (a) returns to torch's caching allocator for this stream, where
    # later work is ordered after the kernel that reads it.
    if spec.slots is not None:
        return spec.in_slots(res, iw)
    return (*res, iw)


def _qr_cuda(a: Tensor, mode: str, backend):
    """QR of a CUDA tensor for the custom op: (Q, or an empty tensor for mode "r"; R;
    info int32), each its own allocation."""
    q, r, info = _cuda(_front.qr_variant(mode), a, "L", backend, True, False)
    return (a.new_empty((0,)) if q is None else q), r, info


def _qr_kernel(a: Tensor, mode: str = "reduced", backend: str = "auto"):
    if a.is_cuda:
        return _qr_cuda(a, mode, backend)
    q, r, info = _native.qr(_np(a, "qr"), mode, backend)
    q = a.new_empty((0,)) if q is None else _t(q)
    return q, _t(r), _info(info)


def _qr_fake(a, mode="reduced", backend="auto"):
    b, m, n = _batch_and_mn(a, "qr")
    k = torch.sym_min(m, n)
    if mode == "reduced":
        qs, rs = (*b, m, k), (*b, k, n)
    elif mode == "complete":
        qs, rs = (*b, m, m), (*b, m, n)
    elif mode == "r":
        qs, rs = (0,), (*b, k, n)
    else:
        raise ValueError(f"batchlin argument error: unknown QR mode {mode!r}: "
                         "expected \"reduced\", \"complete\" or \"r\"")
    return a.new_empty(qs), a.new_empty(rs), a.new_empty(b, dtype=torch.int32)


def _copyltu(M: Tensor) -> Tensor:
    """The symmetric matrix with M's lower triangle."""
    L = M.tril(-1)
    return L + L.mT + torch.diag_embed(M.diagonal(dim1=-2, dim2=-1))


def qr_backward(gQ, gR, Q: Tensor, R: Tensor, mode: str):
    """Gradient of A = QR (torch.linalg.qr's formula). As torch, not defined for mode
    "r" (Q is not formed) nor for mode "complete" with M > N; rank-deficient input
    (a zero on R's diagonal) gives non-finite gradients."""
    if mode == "r":
        raise RuntimeError(
            "batchlin.qr: the derivative of qr depends on Q, which is not computed when "
            "mode='r'. Use mode='reduced' to differentiate through qr.")
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError(
            "batchlin.qr: the QR decomposition is not differentiable when mode='complete' "
            "and M > N.")
    if gQ is None and gR is None:
        return None
    gQ = torch.zeros_like(Q) if gQ is None else gQ
    gR = torch.zeros_like(R) if gR is None else gR
    if m >= n:
        M = R @ gR.mT - gQ.mT @ Q
        b = gQ + Q @ _copyltu(M)
        return torch.linalg.solve_triangular(R, b.mT, upper=True).mT
    # M < N: A = Q [U | V], X = QU square, Y = QV.
    U, V = R[..., :, :m], R[..., :, m:]
    gU, gV = gR[..., :, :m], gR[..., :, m:]
    gQ = gQ + (Q @ V) @ gV.mT
    M = U @ gU.mT - gQ.mT @ Q
    b = gQ + Q @ _copyltu(M)
    gX = torch.linalg.solve_triangular(U, b.mT, upper=True).mT
    return torch.cat([gX, Q @ gV], dim=-1)


def _qr_setup(ctx, inputs, output):
    ctx.mode = inputs[1] if len(inputs) > 1 else "reduced"
    q, r, _ = output
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(q, r)


def _qr_bwd(ctx, gq, gr, _ginfo):
    q, r = ctx.saved_tensors
    return qr_backward(gq, gr, q, r, ctx.mode), None, None


qr_op = _register(
    "qr", '(Tensor a, str mode="reduced", str backend="auto") -> (Tensor, Tensor, Tensor)',
    _qr_kernel, _qr_fake, _qr_setup, _qr_bwd)

# ---------------------------------------------------------------------------------------
# eigh


def _eigh_kernel(a: Tensor, UPLO: str = "L", backend: str = "auto"):
    if a.is_cuda:
        return _cuda("eigh", a, UPLO, backend, True, False)
    w, v, info = _native.eigh(_np(a, "eigh"), UPLO, True, backend)
    return _t(w), _t(v), _info(info)


def _eigvalsh_kernel(a: Tensor, UPLO: str = "L", backend: str = "auto"):
    if a.is_cuda:
        w, _, info = _cuda("eigvalsh", a, UPLO, backend, True, False)
        return w, info
    w, _, info = _native.eigh(_np(a, "eigvalsh"), UPLO, False, backend)
    return _t(w), _info(info)


def _eigh_shapes(a, UPLO):
    b, m, n = _batch_and_mn(a, "eigh")
    if m != n:
        raise ValueError(
            f"batchlin shape error: eigh needs square matrices [..., N, N], got [..., {m}, {n}]")
    if UPLO not in ("L", "U", "l", "u"):
        raise ValueError(f"batchlin argument error: UPLO must be \"L\" or \"U\", got {UPLO!r}")
    return b, n


def _eigh_fake(a, UPLO="L", backend="auto"):
    b, n = _eigh_shapes(a, UPLO)
    return a.new_empty((*b, n)), a.new_empty((*b, n, n)), a.new_empty(b, dtype=torch.int32)


def _eigvalsh_fake(a, UPLO="L", backend="auto"):
    b, n = _eigh_shapes(a, UPLO)
    return a.new_empty((*b, n)), a.new_empty(b, dtype=torch.int32)


def _div_nz(x: Tensor, y: Tensor) -> Tensor:
    """x / y, with 0 where x is 0 (unused gradient terms stay zero where y is 0)."""
    return torch.where(x == 0, torch.zeros_like(x), x / y)


def eigh_backward(gw, gV, w: Tensor, V: Tensor):
    """Gradient of the symmetric eigendecomposition (torch.linalg.eigh's formula; the
    result is symmetric). As torch: gradients through the eigenvectors are finite only
    for distinct eigenvalues, and unstable when two are close; gradients through the
    eigenvalues alone are always finite."""
    if gV is None:
        if gw is None:
            return None
        return (V * gw.unsqueeze(-2)) @ V.mT
    VtgV = V.mT @ gV
    skew = 0.5 * (VtgV - VtgV.mT)
    n = w.shape[-1]
    E = w.unsqueeze(-2) - w.unsqueeze(-1) + torch.eye(n, dtype=w.dtype, device=w.device)
    inner = _div_nz(skew, E)
    if gw is not None:
        inner = inner + torch.diag_embed(gw)
    return V @ inner @ V.mT


def _eigh_setup(ctx, inputs, output):
    w, v, _ = output
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(w, v)


def _eigh_bwd(ctx, gw, gv, _ginfo):
    w, v = ctx.saved_tensors
    return eigh_backward(gw, gv, w, v), None, None


eigh_op = _register(
    "eigh", '(Tensor a, str UPLO="L", str backend="auto") -> (Tensor, Tensor, Tensor)',
    _eigh_kernel, _eigh_fake, _eigh_setup, _eigh_bwd)


def _eigvalsh_setup(ctx, inputs, output):
    ctx.uplo = inputs[1] if len(inputs) > 1 else "L"
    ctx.backend = inputs[2] if len(inputs) > 2 else "auto"
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(inputs[0])


def _eigvalsh_bwd(ctx, gw, _ginfo):
    # The eigenvectors are computed here (batchlin.eigvalsh itself goes through eigh when
    # a gradient is needed, so this runs only for direct callers of the op).
    if gw is None:
        return None, None, None
    (a,) = ctx.saved_tensors
    w, v, _ = eigh_op(a.detach(), ctx.uplo, ctx.backend)
    return eigh_backward(gw, None, w, v), None, None


eigvalsh_op = _register(
    "eigvalsh", '(Tensor a, str UPLO="L", str backend="auto") -> (Tensor, Tensor)',
    _eigvalsh_kernel, _eigvalsh_fake, _eigvalsh_setup, _eigvalsh_bwd)

# ---------------------------------------------------------------------------------------
# SVD


def _svd_kernel(a: Tensor, full_matrices: bool = False, backend: str = "auto"):
    if a.is_cuda:
        return _cuda("svd-full" if full_matrices else "svd", a, "L", backend, True, False)
    u, s, vh, info = _native.svd(_np(a, "svd"), full_matrices, True, backend)
    return _t(u), _t(s), _t(vh), _info(info)


def _svdvals_kernel(a: Tensor, backend: str = "auto"):
    if a.is_cuda:
        _, s, _, info = _cuda("svdvals", a, "L", backend, True, False)
        return s, info
    _, s, _, info = _native.svd(_np(a, "svdvals"), False, False, backend)
    return _t(s), _info(info)


def _svd_fake(a, full_matrices=False, backend="auto"):
    b, m, n = _batch_and_mn(a, "svd")
    k = torch.sym_min(m, n)
    uc, vr = (m, n) if full_matrices else (k, k)
    return (a.new_empty((*b, m, uc)), a.new_empty((*b, k)), a.new_empty((*b, vr, n)),
            a.new_empty(b, dtype=torch.int32))


def _svdvals_fake(a, backend="auto"):
    b, m, n = _batch_and_mn(a, "svdvals")
    return a.new_empty((*b, torch.sym_min(m, n))), a.new_empty(b, dtype=torch.int32)


def svd_backward(gU, gS, gVh, U: Tensor, S: Tensor, Vh: Tensor):
    """Gradient of A = U diag(S) Vh (torch.linalg.svd's formula). As torch: with
    full_matrices, the gradients of U[..., :, K:] and Vh[..., K:, :] are ignored;
    gradients through U or Vh are finite only for distinct singular values (and, for a
    rectangular A, nonzero ones); gradients through S alone are always finite."""
    k = S.shape[-1]
    m, n = U.shape[-2], Vh.shape[-1]
    U, Vh = U[..., :, :k], Vh[..., :k, :]
    if gU is not None:
        gU = gU[..., :, :k]
    if gVh is not None:
        gVh = gVh[..., :k, :]
    if gU is None and gVh is None:
        if gS is None:
            return None
        return (U * gS.unsqueeze(-2)) @ Vh
    gU = torch.zeros_like(U) if gU is None else gU
    gVh = torch.zeros_like(Vh) if gVh is None else gVh
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + torch.eye(k, dtype=S.dtype, device=S.device)
    UtgU = U.mT @ gU
    V, gV = Vh.mT, gVh.mT
    VtgV = V.mT @ gV
    J = _div_nz(UtgU - UtgU.mT, E)
    K = _div_nz(VtgV - VtgV.mT, E)
    inner = J * S.unsqueeze(-2) + S.unsqueeze(-1) * K
    if gS is not None:
        inner = inner + torch.diag_embed(gS)
    if m > k:
        gUS = _div_nz(gU, S.unsqueeze(-2))
        return (U @ inner + gUS - U @ (U.mT @ gUS)) @ Vh
    if n > k:
        SgVh = _div_nz(gVh, S.unsqueeze(-1))
        return U @ (inner @ Vh + SgVh - (SgVh @ V) @ Vh)
    return U @ inner @ Vh


def _svd_setup(ctx, inputs, output):
    u, s, vh, _ = output
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(u, s, vh)


def _svd_bwd(ctx, gu, gs, gvh, _ginfo):
    u, s, vh = ctx.saved_tensors
    return svd_backward(gu, gs, gvh, u, s, vh), None, None


svd_op = _register(
    "svd",
    '(Tensor a, bool full_matrices=False, str backend="auto") -> (Tensor, Tensor, Tensor, Tensor)',
    _svd_kernel, _svd_fake, _svd_setup, _svd_bwd)


def _svdvals_setup(ctx, inputs, output):
    ctx.backend = inputs[1] if len(inputs) > 1 else "auto"
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(inputs[0])


def _svdvals_bwd(ctx, gs, _ginfo):
    if gs is None:
        return None, None
    (a,) = ctx.saved_tensors
    u, s, vh, _ = svd_op(a.detach(), False, ctx.backend)
    return svd_backward(None, gs, None, u, s, vh), None


svdvals_op = _register(
    "svdvals", '(Tensor a, str backend="auto") -> (Tensor, Tensor)',
    _svdvals_kernel, _svdvals_fake, _svdvals_setup, _svdvals_bwd)

# ---------------------------------------------------------------------------------------
# The front door for torch tensors (called by batchlin.qr, ...)


def _eager(a: Tensor) -> bool:
    """A plain tensor, eager, no gradient needed: the native layer is called directly
    (CPU tensors as NumPy views, CUDA tensors through `_cuda`)."""
    return (type(a) is Tensor and not (a.requires_grad and _grad_enabled())
            and not _is_compiling())


def qr(a: Tensor, mode="reduced", backend=None, ex=False):
    dt = a.dtype
    if dt is not _F32 and dt is not _F64:
        a = promote(a)
    backend = backend or "auto"
    eager = _eager(a)
    if eager and a.is_cuda:
        q, r, info = _cuda(_front.qr_variant(mode), a, "L", backend, ex)
    elif eager and a.is_cpu:
        q, r, info = _native.qr(_np(a, "qr"), mode, backend)
        q = None if q is None else _t(q)
        r = _t(r)
        info = _info(info) if ex else None
    else:
        _check_device(a, "qr")
        q, r, info = qr_op(a, mode, backend)
        if mode == "r":
            q = None
    if ex:
        return _bl.QRExResult(q, r, info)
    return r if mode == "r" else _bl.QRResult(q, r)


def eigh(a: Tensor, UPLO="L", vectors=True, backend=None, ex=False):
    dt = a.dtype
    if dt is not _F32 and dt is not _F64:
        a = promote(a)
    backend = backend or "auto"
    eager = _eager(a)
    if eager and a.is_cuda:
        w, v, info = _cuda("eigh" if vectors else "eigvalsh", a, UPLO, backend, ex)
    elif eager and a.is_cpu:
        x = _np(a, "eigh" if vectors else "eigvalsh")
        w, v, info = _native.eigh(x, UPLO, vectors, backend)
        w = _t(w)
        v = None if v is None else _t(v)
        info = _info(info) if ex else None
    else:
        _check_device(a, "eigh" if vectors else "eigvalsh")
        if vectors or (a.requires_grad and torch.is_grad_enabled()):
            # eigvalsh with a gradient: the eigenvectors are needed for the backward.
            w, v, info = eigh_op(a, UPLO, backend)
        else:
            w, info = eigvalsh_op(a, UPLO, backend)
    if vectors:
        return _bl.EighExResult(w, v, info) if ex else _bl.EighResult(w, v)
    return _bl.EigvalshExResult(w, info) if ex else w


def svd(a: Tensor, full_matrices=False, vectors=True, backend=None, ex=False):
    dt = a.dtype
    if dt is not _F32 and dt is not _F64:
        a = promote(a)
    backend = backend or "auto"
    eager = _eager(a)
    if eager and a.is_cuda:
        u, s, vh, info = _cuda(_front.svd_variant(full_matrices, vectors), a, "L", backend,
                               ex)
    elif eager and a.is_cpu:
        x = _np(a, "svd" if vectors else "svdvals")
        u, s, vh, info = _native.svd(x, full_matrices, vectors, backend)
        s = _t(s)
        if vectors:
            u, vh = _t(u), _t(vh)
        info = _info(info) if ex else None
    else:
        _check_device(a, "svd" if vectors else "svdvals")
        if vectors or (a.requires_grad and torch.is_grad_enabled()):
            u, s, vh, info = svd_op(a, full_matrices if vectors else False, backend)
        else:
            s, info = svdvals_op(a, backend)
    if vectors:
        return _bl.SVDExResult(u, s, vh, info) if ex else _bl.SVDResult(u, s, vh)
    return _bl.SvdvalsExResult(s, info) if ex else s


# batchlin's front doors send torch tensors here (set last: the module is complete).
_bl._torch_ops = sys.modules[__name__]
_bl._TorchTensor = Tensor
