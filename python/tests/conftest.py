"""Shared helpers for the batchlin Python tests.

The package must be installed (scripts/test installs it from the checkout when it is
not importable). torch and JAX tests are skipped, with the reason shown, where those
packages are absent; CI installs both.
"""

import os

import numpy as np
import pytest

import batchlin

# On a GPU machine: JAX would otherwise take most of the GPU's memory when it first
# touches it, leaving little for the torch and CuPy tests in the same process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def rng(seed=0):
    return np.random.default_rng(seed)


def rel(x, ref):
    """Relative Frobenius distance over the whole batch (0 for two empty arrays)."""
    x = np.asarray(x, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    den = np.linalg.norm(ref)
    return float(np.linalg.norm(x - ref) / (den if den > 0 else 1.0))


def eye_like(n, batch=()):
    return np.broadcast_to(np.eye(n), (*batch, n, n))


def check_qr(a, q, r, tol, mode="reduced"):
    a = np.asarray(a, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    m, n = a.shape[-2:]
    k = min(m, n)
    assert rel(q @ r, a) < tol
    cols = q.shape[-1]
    assert rel(q.swapaxes(-1, -2) @ q, eye_like(cols, a.shape[:-2])) < tol
    assert np.all(np.tril(r, -1) == 0)
    d = np.diagonal(r[..., :k, :k], axis1=-2, axis2=-1)
    assert np.all(d >= 0)
    assert q.shape == (*a.shape[:-2], m, k if mode == "reduced" else m)


def check_eigh(a, w, v, tol):
    a = np.asarray(a, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    n = a.shape[-1]
    scale = max(np.linalg.norm(a), 1e-300)
    assert np.linalg.norm(a @ v - v * w[..., None, :]) / scale < tol
    assert rel(v.swapaxes(-1, -2) @ v, eye_like(n, a.shape[:-2])) < tol
    assert np.all(np.diff(w, axis=-1) >= -tol * scale)
    ref = np.linalg.eigvalsh(a)
    assert np.linalg.norm(w - ref) / scale < tol


def check_svd(a, u, s, vh, tol):
    a = np.asarray(a, dtype=np.float64)
    u, s, vh = (np.asarray(x, dtype=np.float64) for x in (u, s, vh))
    k = s.shape[-1]
    scale = max(np.linalg.norm(a), 1e-300)
    rec = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
    assert np.linalg.norm(rec - a) / scale < tol
    assert rel(u.swapaxes(-1, -2) @ u, eye_like(u.shape[-1], a.shape[:-2])) < tol
    assert rel(vh @ vh.swapaxes(-1, -2), eye_like(vh.shape[-2], a.shape[:-2])) < tol
    assert np.all(np.diff(s, axis=-1) <= tol * scale)
    assert np.all(s >= 0)
    ref = np.linalg.svd(a, compute_uv=False)
    assert np.linalg.norm(s - ref) / scale < tol


# Every operation and form, as (name, call, square input only), for the tests that run
# each of them through another layer (Dask, sharded JAX); `check_op` checks its results.
OPS = [
    ("qr", lambda t: batchlin.qr(t), False),
    ("qr-complete", lambda t: batchlin.qr(t, "complete"), False),
    ("qr-r", lambda t: batchlin.qr(t, "r"), False),
    ("qr_ex", lambda t: batchlin.qr_ex(t), False),
    ("eigh", lambda t: batchlin.eigh(t), True),
    ("eigh-U", lambda t: batchlin.eigh(t, UPLO="U"), True),
    ("eigvalsh", lambda t: batchlin.eigvalsh(t), True),
    ("eigh_ex", lambda t: batchlin.eigh_ex(t), True),
    ("svd", lambda t: batchlin.svd(t), False),
    ("svd-full", lambda t: batchlin.svd(t, full_matrices=True), False),
    ("svdvals", lambda t: batchlin.svdvals(t), False),
    ("svd_ex", lambda t: batchlin.svd_ex(t), False),
    ("svdvals_ex", lambda t: batchlin.svdvals_ex(t), False),
]


def same_output(got, want, m, n, atol=1e-12):
    """Whether one output of a call on a batch part equals the whole batch's, where the
    part may have been routed to another kernel (the routing tables pick by batch): equal
    within `atol`, but for what no kernel is bound to reproduce: an info word's
    iteration count (bits 16 on; the flags below must agree), and the columns or rows a
    full factor adds past min(m, n) (U of a tall matrix, Vh of a wide one, Q of
    mode "complete"): any orthonormal basis of that space, so their projector agrees."""
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        return False
    if g.dtype.kind in "iu":
        return np.array_equal(g.astype(np.int64) & 0xFFFF, w.astype(np.int64) & 0xFFFF)
    g, w, k = g.astype(np.float64), w.astype(np.float64), min(m, n)
    rows = g.ndim >= 2 and g.shape[-2:] == (n, n) and n > m  # Vh of a wide matrix
    cols = g.ndim >= 2 and g.shape[-2:] == (m, m) and m > n  # U or Q of a tall one
    if rows:
        g, w = np.swapaxes(g, -1, -2), np.swapaxes(w, -1, -2)
    if not (rows or cols):
        return np.allclose(g, w, rtol=0, atol=atol)

    def projector(x):
        return x[..., :, k:] @ np.swapaxes(x[..., :, k:], -1, -2)

    return (np.allclose(g[..., :, :k], w[..., :, :k], rtol=0, atol=atol)
            and np.allclose(projector(g), projector(w), rtol=0, atol=atol))


def check_op(name, x, res, tol=1e-12):
    """The results `res` of the OPS entry `name` on float64 input `x`, against
    independent references: numpy.linalg in float64, reconstruction, orthogonality."""
    x = np.asarray(x, dtype=np.float64)
    if name in ("qr", "qr-complete", "qr_ex"):
        check_qr(x, res[0], res[1], tol, "complete" if name == "qr-complete" else "reduced")
    elif name == "qr-r":
        r = np.linalg.qr(x, mode="r")
        d = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
        assert np.allclose(np.asarray(res), d[..., :, None] * r, atol=100 * tol)
    elif name in ("eigh", "eigh_ex", "eigh-U"):
        tri = np.triu if name == "eigh-U" else np.tril
        full = tri(x) + np.swapaxes(tri(x, 1 if name == "eigh-U" else -1), -1, -2)
        check_eigh(full, res[0], res[1], tol)
    elif name == "eigvalsh":
        assert np.allclose(np.asarray(res), np.linalg.eigvalsh(x), atol=tol)
    elif name in ("svd", "svd-full", "svd_ex"):
        check_svd(x, res[0], res[1], res[2], tol)
    elif name in ("svdvals", "svdvals_ex"):
        s = res[0] if name == "svdvals_ex" else res
        assert np.allclose(np.asarray(s), np.linalg.svd(x, compute_uv=False), atol=tol)
    else:
        raise AssertionError(f"no reference for {name}")


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="torch is not installed")


@pytest.fixture
def jax():
    jax = pytest.importorskip("jax", reason="jax is not installed")
    jax.config.update("jax_enable_x64", True)
    # The JAX tests are about arrays on the CPU; where JAX also sees a GPU, keep its
    # default there (test_cuda.py puts arrays on the GPU explicitly).
    jax.config.update("jax_default_device", jax.devices("cpu")[0])
    return jax
