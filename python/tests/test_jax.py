"""JAX arrays on the CPU through XLA's FFI (batchlin/_jax.py, crates/batchlin-py/src/
xla_ffi.rs): against numpy.linalg in float64, every mode, batch shapes (empty ones too),
eager and under jax.jit, jax.vmap, derivatives (custom JVPs), dtypes, errors (raised in
Python and returned by the handler through XLA), NaN isolation, and the host fallback
where the FFI is not there.

The JAX GPU tests are in test_cuda.py."""

import threading

import numpy as np
import pytest

import batchlin
from conftest import check_eigh, check_qr, check_svd, rng

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SHAPES = [(3, 3), (5, 3), (3, 5), (1, 1), (4, 4, 4), (2, 3, 6, 4), (7, 2, 9)]
CALLS = ["eager", "jit"]


def run(jax, call, f, *args):
    """f(*args) outside a transformation, or inside jax.jit."""
    if call == "jit":
        return jax.jit(f)(*args)
    return f(*args)


def as_np(x):
    return np.asarray(x)


def sym(a):
    return a + np.swapaxes(a, -1, -2)


def assert_jax(jax, *xs):
    for x in xs:
        assert isinstance(x, jax.Array), type(x)
        assert {d.platform for d in x.devices()} == {"cpu"}


def test_ffi_targets_registered(jax):
    assert batchlin._jax.register() is True
    assert tuple(batchlin._native.XLA_FFI_API_VERSION) == (0, 3)
    names = {(n, p) for n, p, _ in batchlin._native.xla_ffi_targets()}
    for op in ("qr", "eigh", "svd"):
        assert (f"batchlin_{op}", "cpu") in names and (f"batchlin_{op}", "CUDA") in names


# ---------------------------------------------------------------------------------------
# Against numpy.linalg, float64


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(jax, call, shape, mode):
    x = rng(1).standard_normal(shape)
    a = jax.numpy.asarray(x)
    if mode == "r":
        r = run(jax, call, lambda t: batchlin.qr(t, mode="r"), a)
        assert_jax(jax, r)
        _, r_ref = batchlin.qr(x)  # NumPy path: the same kernels
        assert np.allclose(as_np(r), r_ref, atol=1e-12)
        assert r.shape == np.linalg.qr(x, mode="r").shape
        return
    q, r = run(jax, call, lambda t: batchlin.qr(t, mode=mode), a)
    assert_jax(jax, q, r)
    assert q.dtype == r.dtype == jax.numpy.float64
    ref = np.linalg.qr(x, mode=mode)
    assert q.shape == ref.Q.shape and r.shape == ref.R.shape
    check_qr(x, q, r, 1e-12, mode)
    # numpy's R up to the signs of its rows: batchlin's diag(R) >= 0
    k = min(shape[-2:])
    d = np.sign(np.diagonal(ref.R[..., :k, :k], axis1=-2, axis2=-1))
    d[d == 0] = 1
    assert np.allclose(as_np(r)[..., :k, :], d[..., :, None] * ref.R[..., :k, :], atol=1e-10)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("shape", [(3, 3), (1, 1), (5, 6, 6), (2, 3, 4, 4)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_and_eigvalsh(jax, call, shape, uplo):
    x = rng(2).standard_normal(shape)
    a = jax.numpy.asarray(x)  # not symmetric: only the UPLO triangle is read
    w, v = run(jax, call, lambda t: batchlin.eigh(t, UPLO=uplo), a)
    assert_jax(jax, w, v)
    full = np.tril(x) if uplo == "L" else np.triu(x)
    full = full + np.swapaxes(np.tril(x, -1) if uplo == "L" else np.triu(x, 1), -1, -2)
    check_eigh(full, w, v, 1e-12)
    assert np.allclose(as_np(w), np.linalg.eigvalsh(x, UPLO=uplo), atol=1e-12)
    w2 = run(jax, call, lambda t: batchlin.eigvalsh(t, UPLO=uplo), a)
    assert_jax(jax, w2)
    assert np.allclose(as_np(w2), as_np(w), atol=1e-12)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [False, True])
def test_svd_and_svdvals(jax, call, shape, full):
    x = rng(3).standard_normal(shape)
    a = jax.numpy.asarray(x)
    u, s, vh = run(jax, call, lambda t: batchlin.svd(t, full_matrices=full), a)
    assert_jax(jax, u, s, vh)
    ref = np.linalg.svd(x, full_matrices=full)
    assert u.shape == ref.U.shape and s.shape == ref.S.shape and vh.shape == ref.Vh.shape
    check_svd(x, u, s, vh, 1e-12)
    s2 = run(jax, call, batchlin.svdvals, a)
    assert_jax(jax, s2)
    assert np.allclose(as_np(s2), ref.S, atol=1e-12)


@pytest.mark.parametrize("call", CALLS)
def test_ex_forms_return_info(jax, call):
    x = rng(4).standard_normal((2, 3, 5, 4))
    a = jax.numpy.asarray(x)
    jnp = jax.numpy
    for f, n_out in [
        (lambda t: batchlin.qr_ex(t), 3),
        (lambda t: batchlin.qr_ex(t, "r"), 3),
        (lambda t: batchlin.eigh_ex(t[..., :4, :]), 3),
        (lambda t: batchlin.eigvalsh_ex(t[..., :4, :]), 2),
        (lambda t: batchlin.svd_ex(t), 4),
        (lambda t: batchlin.svdvals_ex(t), 2),
    ]:
        res = run(jax, call, f, a)
        assert len(res) == n_out
        info = res.info
        assert isinstance(info, jax.Array) and info.dtype == jnp.uint32
        assert info.shape == (2, 3) and not np.any(as_np(info) & batchlin.INFO_NONFINITE)
    assert batchlin.qr_ex(a, "r").Q is None
    # named-tuple results as for every input kind
    assert batchlin.eigh(a[..., :4, :]).eigenvalues.shape == (2, 3, 4)
    assert batchlin.qr(a).Q.shape == (2, 3, 5, 4)


def test_float32_in_its_own_precision(jax):
    jnp = jax.numpy
    x = rng(5).standard_normal((16, 6, 5)).astype(np.float32)
    q, r = batchlin.qr(jnp.asarray(x))
    assert q.dtype == r.dtype == jnp.float32
    check_qr(x, q, r, 1e-5)
    u, s, vh = jax.jit(batchlin.svd)(jnp.asarray(x))
    assert s.dtype == jnp.float32
    check_svd(x, u, s, vh, 1e-5)
    w, v = batchlin.eigh(jnp.asarray(sym(x[:, :5, :])))
    assert w.dtype == jnp.float32
    check_eigh(sym(x[:, :5, :]), w, v, 1e-5)


def test_backends_forced(jax):
    x = rng(6).standard_normal((8, 6, 6))
    a = jax.numpy.asarray(x)
    ref = batchlin.svdvals(x)
    for b in ("cpu-small", "cpu-faer", "auto"):
        assert np.allclose(as_np(batchlin.svdvals(a, backend=b)), ref, atol=1e-12)
        q, r = batchlin.qr(a, backend=b)
        check_qr(x, q, r, 1e-12)
    with pytest.raises(ValueError, match="unknown backend"):
        batchlin.qr(a, backend="tpu")


# ---------------------------------------------------------------------------------------
# Empty batches and matrices (numpy.linalg's shapes; computed without the custom call)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 3), (2, 3, 0), (2, 0, 0), (0, 4, 2),
                                   (3, 0)])
def test_empty(jax, call, shape):
    x = np.zeros(shape)
    a = jax.numpy.asarray(x)
    batch = shape[:-2]
    for mode in ("reduced", "complete"):
        q, r, info = run(jax, call, lambda t: batchlin.qr_ex(t, mode), a)
        ref = np.linalg.qr(x, mode=mode)
        assert q.shape == ref.Q.shape and r.shape == ref.R.shape and info.shape == batch
        assert np.array_equal(as_np(q), ref.Q) and np.array_equal(as_np(r), ref.R)
    assert batchlin.qr(a, "r").shape == np.linalg.qr(x, "r").shape
    for full in (False, True):
        u, s, vh = run(jax, call, lambda t: batchlin.svd(t, full_matrices=full), a)
        ref = np.linalg.svd(x, full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (ref.U.shape, ref.S.shape, ref.Vh.shape)
        assert np.array_equal(as_np(u), ref.U) and np.array_equal(as_np(vh), ref.Vh)
    if shape[-1] == shape[-2]:
        w, v = run(jax, call, batchlin.eigh, a)
        assert w.shape == (*batch, shape[-1]) and v.shape == shape


# ---------------------------------------------------------------------------------------
# vmap: supported (vmap_method="broadcast_all": the mapped axis is one more batch axis)


def test_vmap(jax):
    jnp = jax.numpy
    x = rng(7).standard_normal((4, 3, 6, 5))
    a = jnp.asarray(x)
    q, r = jax.vmap(batchlin.qr)(a)
    q0, r0 = batchlin.qr(x)
    assert np.allclose(as_np(q), q0, atol=1e-12) and np.allclose(as_np(r), r0, atol=1e-12)
    # a mapped axis that is not the first; nested vmap; vmap under jit
    s = jax.vmap(batchlin.svdvals, in_axes=1)(a)
    assert np.allclose(as_np(s), np.swapaxes(np.linalg.svd(x, compute_uv=False), 0, 1),
                       atol=1e-12)
    w = jax.jit(jax.vmap(jax.vmap(batchlin.eigvalsh)))(jnp.asarray(sym(x[..., :5, :])))
    assert np.allclose(as_np(w), np.linalg.eigvalsh(sym(x[..., :5, :])), atol=1e-12)
    # in_axes=None on an operand mixed with a mapped one
    b = jnp.asarray(x[0])
    out = jax.vmap(lambda c, d: batchlin.qr(c + d, "r"), in_axes=(0, None))(a, b)
    assert np.allclose(as_np(out), batchlin.qr(x + x[0], "r"), atol=1e-12)


def test_inside_control_flow(jax):
    jnp = jax.numpy
    x = jnp.asarray(rng(8).standard_normal((5, 4, 4)))

    def step(c, m):
        q, _ = batchlin.qr(m + c)
        return c + 1.0, q[0, 0]

    _, ys = jax.lax.scan(step, 0.0, x)
    ref = [batchlin.qr(np.asarray(x[i]) + i)[0][0, 0] for i in range(5)]
    assert np.allclose(as_np(ys), ref, atol=1e-12)


# ---------------------------------------------------------------------------------------
# Derivatives: custom JVPs (forward mode; reverse mode by JAX's transposition), checked
# against finite differences in float64 and against jnp.linalg where conventions agree


@pytest.mark.parametrize("shape", [(4, 4), (6, 4), (2, 5, 3)])
def test_grads_qr_svd(jax, shape):
    from jax.test_util import check_grads

    x = jax.numpy.asarray(rng(20).standard_normal(shape))
    for mode in ("reduced", "r"):
        check_grads(lambda t: batchlin.qr(t, mode=mode), (x,), order=1, modes=("fwd", "rev"))
    check_grads(batchlin.svd, (x,), order=1, modes=("fwd", "rev"))
    check_grads(batchlin.svdvals, (x,), order=1, modes=("fwd", "rev"))
    check_grads(lambda t: batchlin.svd(t.mT), (x,), order=1, modes=("fwd", "rev"))  # M < N
    if shape[-1] == shape[-2]:
        check_grads(lambda t: batchlin.qr(t, mode="complete"), (x,), order=1,
                    modes=("fwd", "rev"))
        check_grads(lambda t: batchlin.svd(t, full_matrices=True), (x,), order=1,
                    modes=("fwd", "rev"))


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_grads_eigh(jax, uplo):
    from jax.test_util import check_grads

    jnp = jax.numpy
    x = jnp.asarray(rng(21).standard_normal((3, 5, 5)))

    def symmetric(f):
        return lambda t: f(0.5 * (t + t.mT), UPLO=uplo)

    check_grads(symmetric(batchlin.eigh), (x,), order=1, modes=("fwd", "rev"))
    check_grads(symmetric(batchlin.eigvalsh), (x,), order=1, modes=("fwd", "rev"))
    # the convention of torch.linalg and jnp.linalg: symmetric gradients
    s = jnp.asarray(sym(np.asarray(x)))
    g = jax.grad(lambda t: (batchlin.eigvalsh(t, UPLO=uplo) ** 2).sum())(s)
    ref = jax.grad(lambda t: (jnp.linalg.eigvalsh(t, UPLO=uplo) ** 2).sum())(s)
    assert np.allclose(as_np(g), as_np(ref), atol=1e-10)
    g = jax.grad(lambda t: (batchlin.eigh(t).eigenvectors[..., 0, :] ** 2).sum())(s)
    ref = jax.grad(lambda t: (jnp.linalg.eigh(t).eigenvectors[..., 0, :] ** 2).sum())(s)
    assert np.allclose(as_np(g), as_np(ref), atol=1e-9)


def test_grads_with_jit_vmap_and_ex(jax):
    jnp = jax.numpy
    x = jnp.asarray(rng(22).standard_normal((4, 5, 3)))
    f = lambda t: batchlin.svdvals(t).sum()  # noqa: E731
    g1 = jax.jit(jax.vmap(jax.grad(f)))(x)
    g2 = jax.grad(lambda t: jax.vmap(batchlin.svdvals)(t).sum())(x)
    ref = jax.vmap(jax.grad(lambda t: jnp.linalg.svd(t, compute_uv=False).sum()))(x)
    assert np.allclose(as_np(g1), as_np(ref), atol=1e-10)
    assert np.allclose(as_np(g2), as_np(ref), atol=1e-10)
    # sign-invariant through QR: R**2 as jnp.linalg.qr's
    g = jax.grad(lambda t: (batchlin.qr_ex(t).R ** 2).sum())(x)
    ref = jax.grad(lambda t: (jnp.linalg.qr(t)[1] ** 2).sum())(x)
    assert np.allclose(as_np(g), as_np(ref), atol=1e-10)
    # float32 in, float32 gradients; integer input has no gradient to ask for
    g = jax.grad(lambda t: batchlin.svdvals(t).sum())(x.astype(jnp.float32))
    assert g.dtype == jnp.float32


def test_second_derivatives(jax):
    """The rules get their values from the differentiable functions themselves, so
    derivatives of any order work."""
    from jax.test_util import check_grads

    jnp = jax.numpy
    x = jnp.asarray(rng(24).standard_normal((2, 4, 3)))
    check_grads(lambda t: batchlin.qr(t, "r"), (x,), order=2, modes=("rev",))
    h = jax.hessian(lambda t: batchlin.svdvals(t).sum())(x[0])
    ref = jax.hessian(lambda t: jnp.linalg.svd(t, compute_uv=False).sum())(x[0])
    assert np.allclose(as_np(h), as_np(ref), atol=1e-8)


def test_grads_not_covered_raise(jax):
    x = jax.numpy.asarray(rng(23).standard_normal((3, 5)))
    with pytest.raises(NotImplementedError, match="M >= N"):
        jax.grad(lambda t: batchlin.qr(t).R.sum())(x)
    with pytest.raises(NotImplementedError, match="full_matrices"):
        jax.grad(lambda t: batchlin.svd(t, full_matrices=True).U.sum())(x)
    # empty shapes: zero tangents
    z = jax.numpy.zeros((0, 3, 3))
    assert jax.grad(lambda t: batchlin.svdvals(t).sum())(z).shape == (0, 3, 3)


# ---------------------------------------------------------------------------------------
# dtypes


def test_dtypes(jax):
    jnp = jax.numpy
    x = rng(9).standard_normal((3, 4, 4))
    assert batchlin.qr(jnp.asarray(x, jnp.float16)).R.dtype == jnp.float32
    assert batchlin.svdvals(jnp.asarray(x, jnp.bfloat16)).dtype == jnp.float32
    assert batchlin.eigvalsh(jnp.asarray(x, jnp.float16)).dtype == jnp.float32
    i = jnp.asarray((x * 3).astype(np.int32))
    q, r = batchlin.qr(i)
    assert q.dtype == jnp.float64  # as numpy.linalg (x64 is on in these tests)
    check_qr(np.asarray(i, np.float64), q, r, 1e-12)
    assert batchlin.svdvals(jnp.asarray(x > 0)).dtype == jnp.float64
    assert jax.jit(batchlin.eigvalsh)(jnp.asarray(x.astype(np.int8))).dtype == jnp.float64
    with pytest.raises(batchlin.DTypeError, match="complex"):
        batchlin.qr(jnp.asarray(x + 1j))
    with pytest.raises(TypeError, match="complex"):  # DTypeError is also a TypeError
        jax.jit(batchlin.svdvals)(jnp.asarray(x + 1j))


# ---------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize("call", CALLS)
def test_errors_raised_in_python(jax, call):
    jnp = jax.numpy
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        run(jax, call, batchlin.qr, jnp.ones(3))
    with pytest.raises(ValueError, match="square"):
        run(jax, call, batchlin.eigh, jnp.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="QR mode"):
        run(jax, call, lambda t: batchlin.qr(t, mode="full"), jnp.ones((3, 3)))
    with pytest.raises(ValueError, match="UPLO"):
        run(jax, call, lambda t: batchlin.eigh(t, UPLO="X"), jnp.ones((3, 3)))


def test_errors_returned_by_the_handler(jax):
    """What only the handler sees comes back through XLA as an error with batchlin's
    message, never a crash: called directly with results that do not fit, a dtype the
    wrapper would have promoted, an unknown attribute value."""
    jnp = jax.numpy
    sds = jax.ShapeDtypeStruct
    a = jnp.ones((2, 3, 3))
    info = sds((2,), jnp.uint32)

    def call(outs, x, **attrs):
        return jax.block_until_ready(jax.ffi.ffi_call("batchlin_qr", outs)(x, **attrs))

    with pytest.raises(jax.errors.JaxRuntimeError, match="result Q must have shape"):
        call([sds((2, 3, 4), jnp.float64), sds((2, 3, 3), jnp.float64), info], a,
             mode="reduced")
    with pytest.raises(jax.errors.JaxRuntimeError, match="float32 and float64"):
        call([sds((2, 3, 3), jnp.int32)] * 2 + [info], a.astype(jnp.int32), mode="reduced")
    with pytest.raises(jax.errors.JaxRuntimeError, match="unknown QR mode"):
        call([sds((2, 3, 3), jnp.float64)] * 2 + [info], a, mode="bogus")
    with pytest.raises(jax.errors.JaxRuntimeError, match="expected 3 results"):
        call([sds((2, 3, 3), jnp.float64), info], a, mode="reduced")
    with pytest.raises(jax.errors.JaxRuntimeError, match="info must be uint32"):
        call([sds((2, 3, 3), jnp.float64)] * 2 + [sds((2,), jnp.int32)], a, mode="reduced")
    with pytest.raises(jax.errors.JaxRuntimeError, match="unknown backend"):
        call([sds((2, 3, 3), jnp.float64)] * 2 + [info], a, mode="reduced", backend="x")
    with pytest.raises(jax.errors.JaxRuntimeError, match="square"):
        jax.block_until_ready(jax.ffi.ffi_call(
            "batchlin_eigh", [sds((2, 3), jnp.float64), info])(jnp.ones((2, 3, 4)),
                                                              vectors=False))
    # and the process is fine afterwards
    assert np.allclose(as_np(batchlin.qr(a).R), batchlin.qr(np.ones((2, 3, 3))).R)


# ---------------------------------------------------------------------------------------
# Non-finite input: that matrix gets NaN and its info bit, the rest is untouched


@pytest.mark.parametrize("call", CALLS)
def test_nan_isolated(jax, call):
    jnp = jax.numpy
    x = rng(10).standard_normal((4, 5, 5))
    x[1, 2, 3] = np.nan
    x[3, 0, 0] = np.inf
    a = jnp.asarray(x)
    good = [0, 2]
    q, r, info = run(jax, call, batchlin.qr_ex, a)
    u, s, vh, sinfo = run(jax, call, batchlin.svd_ex, a)
    w, v, einfo = run(jax, call, batchlin.eigh_ex, jnp.asarray(sym(x)))
    for inf_words in (info, sinfo, einfo):
        bits = as_np(inf_words) & batchlin.INFO_NONFINITE
        assert list(bits != 0) == [False, True, False, True]
    for out in (q, r, s, vh, w, v):
        o = as_np(out)
        assert np.all(np.isnan(o[[1, 3]]))
        assert np.all(np.isfinite(o[good]))
    check_qr(x[good], as_np(q)[good], as_np(r)[good], 1e-12)
    check_svd(x[good], as_np(u)[good], as_np(s)[good], as_np(vh)[good], 1e-12)


# ---------------------------------------------------------------------------------------
# Threads, and the host fallback


def test_threads(jax):
    a = jax.numpy.asarray(rng(11).standard_normal((32, 8, 8)))
    ref = as_np(batchlin.svdvals(a))
    errs = []

    def work():
        try:
            for _ in range(20):
                assert np.array_equal(as_np(batchlin.svdvals(a)), ref)
        except Exception as e:  # pragma: no cover - reported below
            errs.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs


def test_fallback_without_ffi(jax, monkeypatch):
    """Where the handlers cannot be registered (a jaxlib speaking another FFI API):
    concrete CPU arrays take the host path, traced values raise saying why."""
    monkeypatch.setattr(batchlin._jax, "_state", "registration failed (test)")
    monkeypatch.setattr(batchlin._jax, "_calls", {})  # as before any call
    x = rng(12).standard_normal((3, 4, 4))
    a = jax.numpy.asarray(x)
    q, r = batchlin.qr(a)
    assert isinstance(q, jax.Array)
    check_qr(x, q, r, 1e-12)
    assert isinstance(batchlin.eigvalsh(a), jax.Array)
    with pytest.raises(TypeError, match="registration failed"):
        jax.jit(batchlin.svdvals)(a)
