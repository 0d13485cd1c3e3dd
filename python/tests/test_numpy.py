"""batchlin against numpy.linalg on NumPy input: random and structured matrices, every
mode, batch shapes, float32 and float64, named results, info words, backends."""

import re

import numpy as np
import pytest

import batchlin
from conftest import check_eigh, check_qr, check_svd, rel, rng

F64_TOL = 1e-12
F32_TOL = 2e-5

SHAPES = [(3, 3), (5, 3), (3, 5), (7, 4, 4), (2, 3, 6, 6), (4, 40, 40), (2, 70, 33), (2, 33, 70)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches_numpy(shape, mode):
    a = rng(1).standard_normal(shape)
    got = batchlin.qr(a, mode=mode)
    ref = np.linalg.qr(a, mode=mode)
    if mode == "r":
        assert isinstance(got, np.ndarray)
        assert got.shape == ref.shape
        # R is unique up to the signs of its rows: batchlin's diagonal is nonnegative.
        assert rel(np.abs(got), np.abs(ref)) < F64_TOL
        return
    q, r = got
    assert got.Q is q and got.R is r
    assert q.shape == ref.Q.shape and r.shape == ref.R.shape
    check_qr(a, q, r, F64_TOL, mode)
    k = min(shape[-2:])
    signs = np.sign(np.diagonal(ref.R[..., :k, :k], axis1=-2, axis2=-1))
    assert rel(q[..., :, :k], ref.Q[..., :, :k] * signs[..., None, :]) < 1e-10


@pytest.mark.parametrize("shape", [(3, 3), (1, 1), (8, 5, 5), (2, 3, 17, 17), (3, 50, 50)])
def test_eigh_matches_numpy(shape):
    a = rng(2).standard_normal(shape)
    a = a + np.swapaxes(a, -1, -2)
    w, v = batchlin.eigh(a)
    ref = np.linalg.eigh(a)
    assert np.allclose(w, ref.eigenvalues, atol=1e-12 * np.abs(a).max())
    check_eigh(a, w, v, F64_TOL)
    # Sign convention: each eigenvector's largest component is positive.
    idx = np.argmax(np.abs(v), axis=-2)
    assert np.all(np.take_along_axis(v, idx[..., None, :], axis=-2) > 0)
    assert np.allclose(batchlin.eigvalsh(a), ref.eigenvalues, atol=1e-12 * np.abs(a).max())


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_reads_one_triangle(uplo):
    a = rng(3).standard_normal((4, 6, 6))
    sym = np.tril(a) + np.tril(a, -1).swapaxes(-1, -2) if uplo == "L" else \
        np.triu(a) + np.triu(a, 1).swapaxes(-1, -2)
    w, v = batchlin.eigh(a, UPLO=uplo)
    assert np.allclose(w, np.linalg.eigvalsh(sym), atol=1e-12)
    assert np.allclose(batchlin.eigvalsh(a, uplo), np.linalg.eigvalsh(a, UPLO=uplo), atol=1e-12)
    check_eigh(sym, w, v, F64_TOL)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [False, True])
def test_svd_matches_numpy(shape, full):
    a = rng(4).standard_normal(shape)
    u, s, vh = batchlin.svd(a, full_matrices=full)
    ref = np.linalg.svd(a, full_matrices=full)
    assert u.shape == ref.U.shape and s.shape == ref.S.shape and vh.shape == ref.Vh.shape
    assert np.allclose(s, ref.S, atol=1e-12 * np.abs(a).max())
    check_svd(a, u, s, vh, F64_TOL)
    assert np.allclose(batchlin.svdvals(a), ref.S, atol=1e-12 * np.abs(a).max())
    uk = u[..., :, : s.shape[-1]]
    idx = np.argmax(np.abs(uk), axis=-2)
    assert np.all(np.take_along_axis(uk, idx[..., None, :], axis=-2) > 0)


def structured(n):
    """Matrices the design names: zeros, ones, identity, rank one, repeated and clustered
    eigenvalues, graded spectra, tiny and huge scales."""
    r = rng(5)
    x = r.standard_normal((n, 1))
    q, _ = np.linalg.qr(r.standard_normal((n, n)))
    return {
        "zeros": np.zeros((n, n)),
        "ones": np.ones((n, n)),
        "identity": np.eye(n),
        "rank_one": x @ x.T,
        "repeated": q @ np.diag([1.0] * (n // 2) + [3.0] * (n - n // 2)) @ q.T,
        "clustered": q @ np.diag(1.0 + 1e-10 * np.arange(n)) @ q.T,
        "graded": q @ np.diag(10.0 ** -np.arange(n)) @ q.T,
        "tiny": 1e-300 * (x @ x.T + np.eye(n)),
        "huge": 1e300 * (x @ x.T + np.eye(n)),
    }


@pytest.mark.parametrize("n", [4, 20, 45])
@pytest.mark.parametrize("name", list(structured(4)))
def test_structured(name, n):
    a = structured(n)[name][None]
    # Checked on the matrix scaled to entries <= 1 (the outputs scaled alike), so that
    # the norms in the checks neither overflow nor underflow.
    c = np.abs(a).max() or 1.0
    q, r = batchlin.qr(a)
    check_qr(a / c, q, r / c, 1e-12)
    w, v = batchlin.eigh(a)
    check_eigh(a / c, w / c, v, 1e-12)
    u, s, vh = batchlin.svd(a)
    check_svd(a / c, u, s / c, vh, 1e-12)


@pytest.mark.parametrize("shape", [(6, 8, 8), (3, 40, 40), (2, 9, 5)])
def test_float32_in_own_precision(shape):
    a64 = rng(6).standard_normal(shape)
    a = a64.astype(np.float32)
    q, r = batchlin.qr(a)
    assert q.dtype == np.float32 and r.dtype == np.float32
    check_qr(a, q, r, 1e-5)
    u, s, vh = batchlin.svd(a)
    assert s.dtype == np.float32
    check_svd(a, u, s, vh, F32_TOL)
    if shape[-1] == shape[-2]:
        b = a + a.swapaxes(-1, -2)
        w, v = batchlin.eigh(b)
        assert w.dtype == np.float32
        check_eigh(b, w, v, F32_TOL)


def test_empty_and_degenerate_shapes():
    for shape in [(0, 3, 3), (2, 0, 3), (2, 3, 0), (0, 0)]:
        a = np.zeros(shape)
        ref = np.linalg.qr(a)
        got = batchlin.qr(a)
        assert got.Q.shape == ref.Q.shape and got.R.shape == ref.R.shape
        assert batchlin.svd(a).S.shape == np.linalg.svd(a, full_matrices=False).S.shape
    w, v = batchlin.eigh(np.zeros((0, 4, 4)))
    assert w.shape == (0, 4) and v.shape == (0, 4, 4)


def test_nonfinite_gives_nan_and_flag():
    a = rng(7).standard_normal((3, 4, 4))
    a = a + a.swapaxes(-1, -2)
    a[1, 2, 1] = np.nan
    a[1, 1, 2] = np.nan
    for res in (batchlin.qr_ex(a), batchlin.eigh_ex(a), batchlin.svd_ex(a)):
        info = res.info
        assert info.dtype == np.uint32 and info.shape == (3,)
        assert info[1] & batchlin.INFO_NONFINITE
        assert not info[0] & batchlin.INFO_NONFINITE and not info[2] & batchlin.INFO_NONFINITE
        for x in res[:-1]:
            assert np.all(np.isnan(x[1]))
            assert np.all(np.isfinite(x[0])) and np.all(np.isfinite(x[2]))
    assert np.all(np.isnan(batchlin.eigvalsh(a)[1]))
    assert np.all(np.isnan(batchlin.svdvals(a)[1]))


def test_ex_forms_and_named_results():
    a = rng(8).standard_normal((2, 5, 5))
    a = a + a.swapaxes(-1, -2)
    r = batchlin.qr_ex(a)
    assert r._fields == ("Q", "R", "info")
    assert batchlin.qr_ex(a, mode="r").Q is None
    e = batchlin.eigh(a)
    assert e._fields == ("eigenvalues", "eigenvectors")
    assert batchlin.eigvalsh_ex(a)._fields == ("eigenvalues", "info")
    assert batchlin.svd(a)._fields == ("U", "S", "Vh")
    s = batchlin.svd_ex(a)
    assert s._fields == ("U", "S", "Vh", "info")
    assert np.all(batchlin.info_iterations(s.info) > 0)
    assert np.array_equal(batchlin.svdvals_ex(a).S, batchlin.svdvals(a))
    rd = batchlin.qr_ex(np.ones((1, 4, 3))).info
    assert rd[0] & batchlin.INFO_RANK_DEFICIENT
    assert batchlin.qr_ex(np.eye(3)).info.shape == ()


@pytest.mark.parametrize("backend", ["cpu-small", "cpu-faer", "auto"])
def test_forced_backends_agree(backend):
    a = rng(9).standard_normal((3, 12, 12))
    a = a + a.swapaxes(-1, -2)
    q, r = batchlin.qr(a, backend=backend)
    check_qr(a, q, r, F64_TOL)
    w, v = batchlin.eigh(a, backend=backend)
    check_eigh(a, w, v, F64_TOL)
    u, s, vh = batchlin.svd(a, backend=backend)
    check_svd(a, u, s, vh, F64_TOL)


def test_routing_and_devices():
    devs = batchlin.devices()
    assert devs[0]["kind"] == "cpu" and devs[0]["name"]
    assert batchlin.backend_for("qr", (4096, 8, 8)) == "cpu-small"
    assert batchlin.backend_for("qr", (4, 256, 256), dtype=np.float64) == "cpu-faer"
    assert batchlin.backend_for("eigvalsh", (16, 16), dtype="int64") in batchlin._native.BACKENDS
    assert batchlin.backend_for("svdvals", [2, 3, 4], dtype="float16") in batchlin._native.BACKENDS
    assert isinstance(batchlin.policy_source(), str)
    with pytest.raises(ValueError):
        batchlin.backend_for("lu", (4, 4))
    with pytest.raises(ValueError):
        batchlin.backend_for("eigh", (4, 5))
    with pytest.raises(ValueError):
        batchlin.backend_for("qr", (4,))
    with pytest.raises(ValueError):
        batchlin.backend_for("qr", (4, 4), dtype="complex64")
    r = batchlin.backend_for("qr", (4096, 8, 8))
    assert isinstance(r, batchlin.Route) and r.plan.startswith("cpu-small") and r.device == "cpu"
    assert batchlin.backend_for("qr-complete", (4, 8, 8)) in batchlin._native.BACKENDS
    assert batchlin.backend_for("eigh", (4, 8, 8), backend="cpu-faer").plan.startswith("cpu-faer")
    with pytest.raises(ValueError, match="device"):
        batchlin.backend_for("qr", (4, 4), device="tpu:0")
    why = batchlin._front.gpu_absent_reason()
    if why is not None:
        # The core's reason, for any device named; devices() says it too.
        for dev in ("cuda", "cuda:0", "cuda:3"):
            with pytest.raises(batchlin.UnavailableError, match=re.escape(why)):
                batchlin.backend_for("qr", (4, 4), device=dev)
        absent = [d for d in devs if d["kind"] == "cuda"]
        assert absent and absent[0]["reason"] == why and not absent[0]["available"]
    assert all(d["available"] == (d["reason"] is None) for d in devs)


def test_host_register_pins_for_the_gpu_or_says_why_not():
    a = rng(7).standard_normal((4, 8, 8)).astype(np.float32)
    with pytest.raises(TypeError, match="host_register: expects a NumPy array"):
        batchlin.host_register([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="not contiguous"):
        batchlin.host_register(a[:, ::2])
    with pytest.raises(ValueError, match="empty"):
        batchlin.host_register(np.zeros((0, 3), np.float32))
    with pytest.raises(ValueError, match="not registered"):
        batchlin.host_unregister(a)
    why = batchlin._front.gpu_absent_reason()
    if why is not None:
        with pytest.raises(batchlin.UnavailableError):
            batchlin.host_register(a)
        assert not batchlin._pinned
        return
    batchlin.host_register(a)
    try:
        with pytest.raises(ValueError, match="overlap"):
            batchlin.host_register(a[1:])
        # Calls on registered memory, on the GPU (forced) and as routed, are right.
        for backend in ("cuda", None):
            q, r = batchlin.qr(a, backend=backend)
            check_qr(a, q, r, F32_TOL)
    finally:
        batchlin.host_unregister(a)
    assert not batchlin._pinned
    with pytest.raises(ValueError, match="not registered"):
        batchlin.host_unregister(a)


def test_environment_forces_backend(monkeypatch):
    monkeypatch.setenv("BATCHLIN_BACKEND", "cpu-faer")
    assert batchlin.backend_for("qr", (4096, 8, 8)) == "cpu-faer"
    assert "BATCHLIN_BACKEND" in batchlin.policy_source()
    monkeypatch.setenv("BATCHLIN_BACKEND", "nonsense")
    with pytest.raises(ValueError, match="nonsense"):
        batchlin.qr(np.eye(3))


def test_svd_compute_uv_as_numpy():
    a = rng(7).standard_normal((3, 6, 4))
    s = batchlin.svd(a, compute_uv=False)
    assert isinstance(s, np.ndarray) and s.shape == (3, 4)
    assert np.array_equal(s, batchlin.svdvals(a))
    assert rel(s, np.linalg.svd(a, compute_uv=False)) < F64_TOL
    # numpy.linalg's positional order: (a, full_matrices, compute_uv).
    assert np.array_equal(batchlin.svd(a, True, False), s)
    u, s2, vh = batchlin.svd(a, True, True)
    assert u.shape == (3, 6, 6) and vh.shape == (3, 4, 4) and rel(s2, s) < F64_TOL
    s3, info = batchlin.svd_ex(a, compute_uv=False)
    assert np.array_equal(s3, s) and info.shape == (3,)
    assert len(batchlin.svd_ex(a)) == 4


@pytest.mark.parametrize("call, message", [
    (lambda a: batchlin.svd(a, full_matrices="yes"),
     "batchlin.svd: full_matrices must be a bool, got str"),
    (lambda a: batchlin.svd(a, compute_uv=1),
     "batchlin.svd: compute_uv must be a bool, got int"),
    (lambda a: batchlin.svd_ex(a, full_matrices=None),
     "batchlin.svd_ex: full_matrices must be a bool, got NoneType"),
    (lambda a: batchlin.qr(a, mode=1), "batchlin.qr: mode must be a str, got int"),
    (lambda a: batchlin.qr(a, backend=3), "batchlin.qr: backend must be a str or None, got int"),
    (lambda a: batchlin.eigh(a, UPLO=b"L"), "batchlin.eigh: UPLO must be a str, got bytes"),
    (lambda a: batchlin.eigvalsh(a, backend=["cpu"]),
     "batchlin.eigvalsh: backend must be a str or None, got list"),
    (lambda a: batchlin.svdvals(a, backend=1.0),
     "batchlin.svdvals: backend must be a str or None, got float"),
])
def test_argument_type_errors_name_the_argument_and_function(call, message):
    with pytest.raises(TypeError) as e:
        call(np.eye(3))
    assert str(e.value) == message


def test_numpy_bools_are_bools():
    a = rng(8).standard_normal((2, 4, 3))
    u, s, vh = batchlin.svd(a, full_matrices=np.bool_(True))
    assert u.shape == (2, 4, 4)
    # Values alone may take another kernel than the factors: equal to rounding.
    assert np.allclose(batchlin.svd(a, compute_uv=np.False_), s, rtol=1e-14, atol=0)


def test_unavailable_error_is_named_batchlin():
    import traceback

    E = batchlin.UnavailableError
    assert E.__module__ == "batchlin" and E.__name__ == "UnavailableError"
    assert issubclass(E, RuntimeError)
    line = traceback.format_exception_only(E, E("why"))[-1]
    assert line.startswith("batchlin.UnavailableError: why"), line
