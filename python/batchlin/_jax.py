"""JAX arrays through XLA's FFI: batchlin's operations as XLA custom calls.

The native module carries one ``XLA_FFI_Handler`` per operation and platform
(``crates/batchlin-py/src/xla_ffi.rs``): targets ``batchlin_qr``, ``batchlin_eigh`` and
``batchlin_svd``, for the platforms "cpu" (the batchlin core on XLA's host buffers) and
"CUDA" (the core on XLA's device buffers, on the device holding them, queued on XLA's
stream; an operation the GPU backend has no kernel for answers with the core's
Unavailable message as an UNIMPLEMENTED error). They are registered with
``jax.ffi.register_ffi_target`` on the first JAX input, and every call goes through
``jax.ffi.ffi_call``:

- the same call works on concrete arrays and on traced values (inside ``jax.jit``,
  ``jax.vmap``, ``lax.scan``, ...) and returns JAX arrays on the input's device;
- outside a transformation, each (op, options) has one cached ``jax.jit`` wrapper, so
  that an eager call costs one dispatch of an already compiled executable (JAX caches
  one executable per shape and dtype);
- ``jax.vmap`` is supported (``custom_vmap``: the mapped axis becomes one more batch
  dimension, which the operations take as they are);
- sharded arrays (several devices, under ``jax.jit``, eagerly or in ``shard_map``): a
  batch split along its batch axes is decomposed shard by shard, each on the device
  holding it, with no collective (``custom_partitioning``, "Sharded arrays" below); a
  sharding that splits a matrix axis is gathered along it first, with a warning, once;
- dtypes as for every other input (``_front.py``): float32 and float64 in their own
  precision; float16, bfloat16 (and other small floats) in float32; integers and bool
  in float64 (float32 where JAX runs without ``jax_enable_x64``, which has no float64);
  complex raises DTypeError;
- empty batches and matrices with a zero dimension are computed here with ``jnp`` (no
  custom call);
- differentiable (forward and reverse mode) through a custom JVP per operation with the
  standard formulas (see "Derivatives" below for the cases covered).

Errors found before the call (shape, dtype, mode; for a concrete GPU array, what the
core's planner says the device cannot do) raise ValueError / DTypeError / UnavailableError at once; what only
the handler can see comes back from XLA as ``jax.errors.JaxRuntimeError`` with
batchlin's message.
"""

from __future__ import annotations

import sys

import numpy as np

from . import _native
from . import _front
from ._front import DTypeError

# None: not tried yet; True: registered; a string: why not (the JAX input then takes the
# host path of _front.to_host where it can).
_state = None
_cuda_state = None  # whether the CUDA targets were registered (or why not)


def _jax():
    m = sys.modules.get("jax")
    if m is None:  # a jaxlib array without jax imported (unusual)
        import jax as m
    return m


def is_jax(a) -> bool:
    """A JAX array or a traced JAX value."""
    mod = type(a).__module__ or ""
    return mod.startswith(("jax.", "jaxlib."))


def register():
    """Register the FFI targets with JAX (once). Returns True, or why not."""
    global _state, _cuda_state
    if _state is not None:
        return _state
    jax = _jax()
    _front.cusolver_path()  # before any GPU call: the core looks for cuSOLVER once
    try:
        targets = _native.xla_ffi_targets()
    except Exception as e:  # pragma: no cover - a build without the handlers
        _state = f"the native module has no XLA FFI handlers ({e})"
        return _state
    try:
        for name, platform, capsule in targets:
            if platform == "cpu":
                jax.ffi.register_ffi_target(name, capsule, platform="cpu")
    except Exception as e:
        major, minor = _native.XLA_FFI_API_VERSION
        _state = (f"registering batchlin's XLA FFI handlers with jax {jax.__version__} "
                  f"failed (they speak XLA FFI API {major}.{minor}): "
                  f"{type(e).__name__}: {e}")
        return _state
    try:
        for name, platform, capsule in targets:
            if platform != "cpu":
                jax.ffi.register_ffi_target(name, capsule, platform=platform)
        _cuda_state = True
    except Exception as e:  # a jaxlib without CUDA support
        _cuda_state = f"{type(e).__name__}: {e}"
    _state = True
    if _has_gpu(jax):
        # The CUDA handler runs under jit with no Python around it: make NVRTC findable
        # now where it will be needed (a GPU the build embedded no kernels for).
        for d in jax.local_devices():
            if d.platform in ("gpu", "cuda"):
                hw = getattr(d, "local_hardware_id", None)
                _front.prepare_device(d.id if hw is None else hw)
    return _state


_Tracer = None


def _is_tracer(a) -> bool:
    global _Tracer
    if _Tracer is None:
        _Tracer = getattr(getattr(_jax(), "core", None), "Tracer", None)
        if _Tracer is None:  # pragma: no cover - a JAX without jax.core.Tracer
            from jax._src.core import Tracer as _Tracer
    return isinstance(a, _Tracer)


def _float64():
    """float64, or float32 where JAX runs without jax_enable_x64."""
    jax = _jax()
    try:
        return jax.dtypes.canonicalize_dtype(np.float64)
    except AttributeError:  # pragma: no cover - older / newer JAX
        return np.dtype(np.float64 if jax.config.jax_enable_x64 else np.float32)


def _has_gpu(jax) -> bool:
    try:
        return bool(jax.devices("gpu"))
    except Exception:
        return False


# ---------------------------------------------------------------------------------------
# dtypes and shapes


def _promote(a):
    """`a` in the dtype batchlin computes it in (traced)."""
    jnp = _jax().numpy
    dt = a.dtype
    if dt == np.float32 or dt == np.float64:
        return a
    if jnp.issubdtype(dt, jnp.complexfloating):
        raise DTypeError(f"batchlin does not support complex input yet (got {dt}); "
                         "it computes real float32 and float64 matrices")
    if jnp.issubdtype(dt, jnp.floating):
        if dt.itemsize <= 4:
            return a.astype(jnp.float32)  # float16, bfloat16, float8: computed in float32
        raise DTypeError(f"batchlin computes in float32 and float64; got {dt}")
    if jnp.issubdtype(dt, jnp.integer) or jnp.issubdtype(dt, jnp.bool_):
        # float64 as numpy.linalg; float32 where JAX has no float64 (x64 off).
        return a.astype(_float64())
    raise DTypeError(f"batchlin computes in float32 and float64; got dtype {dt}")


def _dims(a, op):
    if a.ndim < 2:
        raise ValueError(
            f"batchlin shape error: expected an array of at least 2 dimensions [..., M, N], "
            f"got {a.ndim} (shape {tuple(a.shape)})")
    batch = tuple(a.shape[:-2])
    m, n = a.shape[-2:]
    if op == "eigh" and m != n:
        raise ValueError(f"batchlin shape error: eigh needs square matrices [..., N, N], "
                         f"got [..., {m}, {n}]")
    return batch, m, n


def _empty(batch, m, n) -> bool:
    return m == 0 or n == 0 or any(d == 0 for d in batch)


def _eye(batch, n, dtype):
    jnp = _jax().numpy
    return jnp.broadcast_to(jnp.eye(n, dtype=dtype), (*batch, n, n))


def _zeros(shape, dtype):
    return _jax().numpy.zeros(shape, dtype)


def _call(target, outs, a, **attrs):
    """The custom call `target` on `a` [..., M, N], with results `outs` (each [..., *]:
    the batch dimensions first), through the batch-parallel wrapper (`_batch_parallel`)."""
    nb = a.ndim - 2
    trailing = tuple((tuple(o.shape[nb:]), np.dtype(o.dtype)) for o in outs)
    key = (target, trailing, tuple(sorted(attrs.items())))
    f = _parallel.get(key)
    if f is None:
        f = _batch_parallel(target, trailing, attrs)
        try:
            _parallel[key] = f
        except TypeError:  # an unhashable attribute value: no caching
            pass
    return f(a)


# ---------------------------------------------------------------------------------------
# Sharded arrays: every matrix is independent of the others, so a batch sharded over
# several devices is computed shard by shard, each on the device holding it, with no
# collective. The custom call is wrapped in jax.experimental.custom_partitioning with a
# rule that keeps the batch axes' sharding and replicates the two matrix axes (a matrix
# split over devices is gathered along those axes first, with a warning, once). Inside
# shard_map and on one device the wrapper lowers to the plain custom call.
# custom_partitioning has no batching rule, so jax.vmap goes through custom_vmap: the
# mapped axis becomes one more batch axis, as the operations take it.

_parallel = {}  # (target, trailing shapes and dtypes, attributes) -> the wrapped call
_warned_matrix_split = False

MATRIX_SPLIT_WARNING = (
    "batchlin: the input's sharding splits a matrix axis (one of the last two); each "
    "matrix is decomposed whole on one device, so XLA gathers those axes before the "
    "call. Shard only the batch axes (e.g. PartitionSpec('x') or PartitionSpec('x', "
    "None, None)) to compute every shard where it lies, with no communication.")


def _warn_matrix_split():
    global _warned_matrix_split
    if not _warned_matrix_split:
        _warned_matrix_split = True
        import warnings

        warnings.warn(MATRIX_SPLIT_WARNING, UserWarning, stacklevel=2)


def _batch_sharding(mesh, sharding, ndim):
    """The sharding the call takes for an input of `ndim` dimensions sharded as
    `sharding`: its batch axes' sharding, the matrix axes replicated."""
    from jax.sharding import NamedSharding, PartitionSpec

    if isinstance(sharding, NamedSharding):
        spec = tuple(sharding.spec) + (None,) * (ndim - len(sharding.spec))
        if spec[-2] is not None or spec[-1] is not None:
            _warn_matrix_split()
        return NamedSharding(sharding.mesh, PartitionSpec(*spec[:-2]))
    # A sharding not named over a mesh (rare: no mesh could be decoded): replicated.
    if not sharding.is_fully_replicated:
        _warn_matrix_split()
    return NamedSharding(mesh, PartitionSpec())


def _batch_parallel(target, trailing, attrs):
    """`a -> results` of the custom call `target`, partitioned over the batch axes."""
    jax = _jax()
    from jax.sharding import NamedSharding

    def call(a):
        batch = tuple(a.shape[:-2])
        outs = [jax.ShapeDtypeStruct(batch + shape, dt) for shape, dt in trailing]
        res = jax.ffi.ffi_call(target, outs, vmap_method="broadcast_all")(a, **attrs)
        return tuple(res)

    def shardings(mesh, arg_shapes):
        arg = arg_shapes[0]
        s = _batch_sharding(mesh, arg.sharding, len(arg.shape))
        # every result has the input's batch axes first, sharded alike; the rest whole
        return s, tuple(NamedSharding(s.mesh, s.spec) for _ in trailing)

    def partition(mesh, arg_shapes, result_shape):
        arg, results = shardings(mesh, arg_shapes)
        return mesh, call, results, (arg,)

    def infer(mesh, arg_shapes, result_shape):  # GSPMD (jax_use_shardy_partitioner off)
        return shardings(mesh, arg_shapes)[1]

    # Shardy: the batch axes ("...") pass through; every other axis is one device's.
    matrix = ["m", "n"]
    results = []
    for i, (shape, _) in enumerate(trailing):
        axes = [f"r{i}_{j}" for j in range(len(shape))]
        matrix += axes
        results.append(" ".join(["...", *axes]))
    rule = "... m n -> " + ", ".join(results)

    try:
        from jax.experimental.custom_partitioning import custom_partitioning

        parted = custom_partitioning(call)
        parted.def_partition(partition, infer_sharding_from_operands=infer,
                             sharding_rule=rule, need_replication_factors=tuple(matrix))
    except (ImportError, AttributeError, TypeError):
        # A JAX whose custom_partitioning lacks these rules (older releases): the plain
        # custom call, which XLA computes whole on every device of a sharded input.
        return call

    @jax.custom_batching.custom_vmap
    def f(a):
        return parted(a)

    @f.def_vmap
    def _vmap(axis_size, in_batched, a):
        # the mapped axis (moved first by custom_vmap) is one more batch axis
        return f(a), tuple(in_batched[0] for _ in trailing)

    return f


# ---------------------------------------------------------------------------------------
# The traced bodies: (outputs..., info), with None where an output is not computed


def _qr_body(a, mode, backend):
    jax = _jax()
    a = _promote(a)
    batch, m, n = _dims(a, "qr")
    dt = a.dtype
    qs, rs = _front.qr_shapes(batch, m, n, mode)
    u32 = np.uint32
    if _empty(batch, m, n):
        q = None
        if qs is not None:
            q = _eye(batch, m, dt) if mode == "complete" else _zeros(qs, dt)
        return q, _zeros(rs, dt), _zeros(batch, u32)
    sds = jax.ShapeDtypeStruct
    outs = ([] if qs is None else [sds(qs, dt)]) + [sds(rs, dt), sds(batch, u32)]
    res = _call("batchlin_qr", outs, a, mode=mode, backend=backend)
    if qs is None:
        return None, res[0], res[1]
    return res[0], res[1], res[2]


def _eigh_body(a, uplo, vectors, backend):
    jax = _jax()
    a = _promote(a)
    batch, n, _ = _dims(a, "eigh")
    dt = a.dtype
    u32 = np.uint32
    if _empty(batch, n, n):
        v = _zeros((*batch, n, n), dt) if vectors else None
        return _zeros((*batch, n), dt), v, _zeros(batch, u32)
    sds = jax.ShapeDtypeStruct
    outs = [sds((*batch, n), dt)]
    if vectors:
        outs.append(sds((*batch, n, n), dt))
    outs.append(sds(batch, u32))
    res = _call("batchlin_eigh", outs, a, uplo=uplo, vectors=vectors, backend=backend)
    if vectors:
        return res[0], res[1], res[2]
    return res[0], None, res[1]


def _svd_body(a, full_matrices, vectors, backend):
    jax = _jax()
    a = _promote(a)
    batch, m, n = _dims(a, "svd")
    dt = a.dtype
    k = min(m, n)
    u_cols, vh_rows = (m, n) if full_matrices else (k, k)
    u32 = np.uint32
    if _empty(batch, m, n):
        u = vh = None
        if vectors:
            if full_matrices:
                u, vh = _eye(batch, m, dt), _eye(batch, n, dt)
            else:
                u, vh = _zeros((*batch, m, k), dt), _zeros((*batch, k, n), dt)
        return u, _zeros((*batch, k), dt), vh, _zeros(batch, u32)
    sds = jax.ShapeDtypeStruct
    outs = []
    if vectors:
        outs.append(sds((*batch, m, u_cols), dt))
    outs.append(sds((*batch, k), dt))
    if vectors:
        outs.append(sds((*batch, vh_rows, n), dt))
    outs.append(sds(batch, u32))
    res = _call("batchlin_svd", outs, a, full_matrices=full_matrices, vectors=vectors,
                backend=backend)
    if vectors:
        return res[0], res[1], res[2], res[3]
    return None, res[0], None, res[1]


# ---------------------------------------------------------------------------------------
# Derivatives: a custom JVP per operation (forward mode; JAX transposes it for reverse
# mode), the standard formulas (as jax.lax.linalg's and torch.linalg's). Real input; QR
# for M >= N (reduced, "r", or complete of square matrices), eigh / eigvalsh (the input
# taken as symmetric, so gradients are symmetric, as torch.linalg's and jnp.linalg's;
# distinct eigenvalues for the vectors), the thin SVD (or
# full of square matrices; distinct nonzero singular values for the vectors). The info
# words have no tangent (float0).


def _mT(x):
    return _jax().numpy.swapaxes(x, -1, -2)


def _no_tangent(info):
    return np.zeros(info.shape, dtype=_jax().dtypes.float0)


def _zeros_like(x):
    return None if x is None else _jax().numpy.zeros_like(x)


def _qr_jvp(a, da, mode, backend):
    lax = _jax().lax
    jnp = _jax().numpy
    out = _d("qr", mode, backend)(a)
    q, r, info = out
    batch, m, n = _dims(a, "qr")
    if _empty(batch, m, n):
        return out, (_zeros_like(q), jnp.zeros_like(r), _no_tangent(info))
    if m < n or (mode == "complete" and m != n):
        raise NotImplementedError(
            f"batchlin.qr: derivatives for M >= N only (reduced, \"r\", or complete of "
            f"square matrices); got [..., {m}, {n}] in mode {mode!r}")
    qq, rr = (q, r) if mode != "r" else _d("qr", "reduced", backend)(a)[:2]
    dx_rinv = lax.linalg.triangular_solve(rr, da, left_side=False, lower=False)
    qt_dx_rinv = _mT(qq) @ dx_rinv
    low = jnp.tril(qt_dx_rinv, -1)
    do = low - _mT(low)  # skew-symmetric
    dq = qq @ (do - qt_dx_rinv) + dx_rinv
    dr = (qt_dx_rinv - do) @ rr
    return out, (None if q is None else dq, dr, _no_tangent(info))


def _eigh_jvp(a, da, uplo, vectors, backend):
    jnp = _jax().numpy
    batch, n, _ = _dims(a, "eigh")
    if _empty(batch, n, n):
        out = _eigh_body(a, uplo, vectors, backend)
        return out, (jnp.zeros_like(out[0]), _zeros_like(out[1]), _no_tangent(out[2]))
    w, v, info = _d("eigh", uplo, True, backend)(a)
    # As torch.linalg.eigh and jnp.linalg.eigh (and batchlin's torch ops): the input is
    # taken as symmetric, so the tangent is symmetrised and gradients come out symmetric.
    da = 0.5 * (da + _mT(da))
    vt_da_v = _mT(v) @ da @ v
    dw = jnp.diagonal(vt_da_v, axis1=-2, axis2=-1)
    if not vectors:
        return (w, None, info), (dw, None, _no_tangent(info))
    eye = jnp.eye(n, dtype=w.dtype)
    f = 1.0 / (eye + w[..., None, :] - w[..., :, None]) - eye
    dv = v @ (f * vt_da_v)
    return (w, v, info), (dw, dv, _no_tangent(info))


def _svd_jvp(a, da, full_matrices, vectors, backend):
    jnp = _jax().numpy
    batch, m, n = _dims(a, "svd")
    if _empty(batch, m, n):
        out = _svd_body(a, full_matrices, vectors, backend)
        return out, (_zeros_like(out[0]), jnp.zeros_like(out[1]), _zeros_like(out[2]),
                     _no_tangent(out[3]))
    if vectors and full_matrices and m != n:
        raise NotImplementedError(
            "batchlin.svd: derivatives with full_matrices=True for square matrices only "
            f"(got [..., {m}, {n}]); use full_matrices=False")
    u, s, vh, info = _d("svd", False, True, backend)(a)
    v, ut = _mT(vh), _mT(u)
    ds_mat = ut @ da @ v
    ds = jnp.diagonal(ds_mat, axis1=-2, axis2=-1)
    if not vectors:
        return (None, s, None, info), (None, ds, None, _no_tangent(info))
    k = s.shape[-1]
    s_row = s[..., None, :]
    s_col = _mT(s_row)
    eye = jnp.eye(k, dtype=s.dtype)
    f = 1.0 / ((s_row + s_col) * (s_row - s_col) + eye) - eye
    dss = s_row * ds_mat
    sds = s_col * ds_mat
    du = u @ (f * (dss + _mT(dss)))
    dv = v @ (f * (sds + _mT(sds)))
    if m > n:
        dav = da @ v
        du = du + (dav - u @ (ut @ dav)) / s_row
    if n > m:
        dau = _mT(da) @ u
        dv = dv + (dau - v @ (vh @ dau)) / s_row
    return (u, s, vh, info), (du, ds, _mT(dv), _no_tangent(info))


_custom = {}


def _d(op, *opts):
    """The custom-JVP function of (op, options) on float32/float64 input. The rules call
    these (not the bodies) for the values they need, so that derivatives of any order
    work."""
    key = (op, *opts)
    f = _custom.get(key)
    if f is None:
        jax = _jax()
        body = {"qr": _qr_body, "eigh": _eigh_body, "svd": _svd_body}[op]
        rule = {"qr": _qr_jvp, "eigh": _eigh_jvp, "svd": _svd_jvp}[op]
        f = jax.custom_jvp(lambda a: body(a, *opts))
        f.defjvp(lambda primals, tangents: rule(primals[0], tangents[0], *opts))
        _custom[key] = f
    return f


def _differentiable(op, opts):
    """`a -> outputs` for (op, options): dtype promotion, then the custom-JVP function."""
    f = _d(op, *opts)
    return lambda a: f(_promote(a))


# ---------------------------------------------------------------------------------------
# Entry points (called by batchlin.qr & co. for JAX inputs)

# (op, the caller's options as given, ex) -> the jitted call; an entry exists only once
# the options were checked and the handlers registered.
_calls = {}


def _run(key, name, a):
    """Run the cached call for `key` ("qr" | "eigh" | "svd", options..., ex) on `a`;
    None where the FFI path is not available. `name` is the public function's."""
    f = _calls.get(key)
    if f is None:
        return _first_run(key, name, a)
    if not isinstance(a, _Tracer):
        try:
            dk = (a.sharding, name)
            if dk not in _device_ok:
                _check_device(a, name)
                _device_ok[dk] = None
        except (AttributeError, TypeError):
            _check_device(a, name)
    return f(a)


def _first_run(key, name, a):
    _is_tracer(a)  # looks the Tracer class up for _run's fast path
    op, ex = key[0], key[-1]
    if op == "qr":
        mode = key[1]
        _front.check_qr_mode(mode)
        opts = (mode, _backend(key[2]))
    elif op == "eigh":
        uplo = key[1]
        if uplo not in ("L", "U", "l", "u"):
            raise ValueError(f"batchlin argument error: UPLO must be \"L\" or \"U\", got "
                             f"{uplo!r}")
        opts = (uplo.upper(), bool(key[2]), _backend(key[3]))
    else:
        opts = (bool(key[1]), bool(key[2]), _backend(key[3]))
    if _prepare(a, name) is not None:
        return None
    d = _differentiable(op, opts)
    # Without ex, the info words stay inside the executable (one output array fewer).
    f = _jax().jit(d if ex else (lambda t: d(t)[:-1]))
    try:
        _calls[key] = f
    except TypeError:  # an unhashable option (it was valid): no caching
        pass
    return f(a)


_BACKENDS = ("auto", "cpu-small", "cpu-faer", "cuda")


def _backend(backend) -> str:
    if backend is None:
        return "auto"
    b = str(backend).strip().lower()
    if b in _BACKENDS:
        return b if b else "auto"
    if b == "":
        return "auto"
    raise ValueError(f"batchlin argument error: unknown backend {backend!r}: expected "
                     f"auto, {', '.join(_BACKENDS[1:])}")


def _check_device(a, op: str) -> None:
    """For a concrete array on a GPU: raise now what the handler would, as the core's
    planner answers it (a missing device, an operation the GPU backend has no kernel
    for). Traced values are checked by the handler."""
    if _is_tracer(a):
        return
    try:
        devs = a.devices()
    except Exception:
        return
    for d in devs:
        if d.platform == "cpu":
            continue
        device = f"{d.platform}:{d.id}"
        if d.platform not in ("gpu", "cuda"):
            raise _front.device_error("JAX", device, op)
        if _cuda_state is not True:
            raise _front.device_error(
                "JAX", device, op,
                f"batchlin's CUDA handlers could not be registered with JAX ({_cuda_state})")
        ordinal = getattr(d, "local_hardware_id", None)
        ordinal = d.id if ordinal is None else ordinal
        if ordinal not in _front._ready:
            _front.prepare_device(ordinal)
        dt = np.dtype(a.dtype)
        dtype = "float32" if dt.kind == "f" and dt.itemsize <= 4 else "float64"
        try:
            _native.plan(op, [int(s) for s in a.shape], dtype, f"cuda:{ordinal}")
        except _front.UnavailableError as e:
            raise _front.UnavailableError(
                f"batchlin.{op}: JAX input on cuda:{ordinal}: {e}. {_front._MOVE}") from None


def _unregistered(a, why: str, op: str):
    """The JAX input could not go through the FFI: raise, saying why, where the host
    path cannot take it either (traced values, GPU arrays)."""
    if _is_tracer(a):
        raise TypeError(f"batchlin cannot be called on traced JAX values here: {why}")
    dev_type, dev_id = a.__dlpack_device__()
    if int(dev_type) != _front._DL_CPU:
        raise _front.device_error("JAX", f"gpu:{dev_id}", op, why)


_device_ok = {}  # sharding -> None (checked, fine)


def _prepare(a, op):
    """Register on the first call, check a concrete array's devices once per sharding.
    Returns None when the FFI path is taken, or why not."""
    st = _state if _state is not None else register()
    if st is not True:
        _unregistered(a, st, op)
        return st
    if _is_tracer(a):
        return None  # the handler checks the device
    try:
        key = (a.sharding, op)
        seen = key in _device_ok
    except Exception:
        key, seen = None, False
    if not seen:
        _check_device(a, op)
        if key is not None:
            _device_ok[key] = None
    return None


def qr(a, mode, backend, ex):
    """(Q or None, R, info or None) of a JAX array, or None where the FFI path is not
    available (the caller then takes the host path)."""
    res = _run(("qr", mode, backend, ex), "qr", a)
    if res is None or ex:
        return res
    return res[0], res[1], None


def eigh(a, uplo, vectors, backend, ex):
    res = _run(("eigh", uplo, vectors, backend, ex), "eigh" if vectors else "eigvalsh", a)
    if res is None or ex:
        return res
    return res[0], res[1], None


def svd(a, full_matrices, vectors, backend, ex):
    res = _run(("svd", full_matrices, vectors, backend, ex), "svd" if vectors else "svdvals",
               a)
    if res is None or ex:
        return res
    return res[0], res[1], res[2], None
