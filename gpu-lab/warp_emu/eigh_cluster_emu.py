"""Checks the cluster prototype (gpu-lab/eigh_cluster.cu) on the host, no GPU: a cluster of
C blocks of one warp each (warp_emu.h), against float64 NumPy. The tridiagonalisation:
the tridiagonal's eigenvalues against the matrix's, and Q^T A Q = T with Q the product of
the stored reflectors, Q orthogonal. Then the tridiagonal's eigenvalues and vectors by
the cluster (bl_tri_vectors_cluster): values, residual T x - lambda x and orthogonality
(or `declined`, where the fast path leaves the matrix to tql2, as for ties). Then the
whole eigh (bl_eigh_cluster): values, residual A v - lambda v, orthogonality, the sign
convention (each column's largest entry positive).

    python3 gpu-lab/warp_emu/eigh_cluster_emu.py f32   # or f64; optional sizes after
    EMU_CLUSTER=2,4,8 (the blocks a cluster to try)
"""
import ctypes, os, sys
import numpy as np

from emu_build import build

lib = build("eigh_cluster_emu.cpp")
P = lambda x: x.ctypes.data_as(ctypes.c_void_p)


def tridiag(a, C):
    n = a.shape[0]; dt = a.dtype
    f = lib.tridiag_f32 if dt == np.float32 else lib.tridiag_f64
    d, e, tau = (np.full(n, -7.0, dt) for _ in range(3)); r = np.zeros((n, n), dt)
    assert f(P(np.ascontiguousarray(a)), n, C, P(d), P(e), P(tau), P(r)) == 0
    return d, e, tau, r


def tri_vectors(d, e, C):
    n = d.shape[0]; dt = d.dtype
    f = lib.tri_vectors_f32 if dt == np.float32 else lib.tri_vectors_f64
    w = np.full(n, -7.0, dt); x = np.full((n, n), -7.0, dt)
    ok = f(P(np.ascontiguousarray(d)), P(np.ascontiguousarray(e)), n, C, P(w), P(x))
    return (w, x) if ok else (None, None)


def eigh_cluster(a, C):
    n = a.shape[0]; dt = a.dtype
    f = lib.eigh_cluster_f32 if dt == np.float32 else lib.eigh_cluster_f64
    w = np.full(n, -7.0, dt); v = np.full((n, n), -7.0, dt)
    r = f(P(np.ascontiguousarray(a)), n, C, P(w), P(v))
    assert r >= 0, "the cluster's threads disagreed"
    return (w, v) if r else (None, None)


def check(name, a, dt, C):
    a = a.astype(dt); a = np.tril(a) + np.tril(a, -1).T
    n = a.shape[0]
    d, e, tau, r = (x.astype(np.float64) for x in tridiag(a, C))
    a64 = a.astype(np.float64); na = max(np.linalg.norm(a64), np.finfo(np.float64).tiny)
    t = np.diag(d) + np.diag(e[:n - 1], -1) + np.diag(e[:n - 1], 1)
    q = np.eye(n)
    for k in range(n - 1):
        v = np.zeros(n); v[k + 1] = 1.0; v[k + 2:] = r[k + 2:, k]
        q = q - tau[k] * np.outer(q @ v, v)
    eps = np.finfo(dt).eps
    res = np.linalg.norm(q.T @ a64 @ q - t) / na / (n * eps)
    orth = np.linalg.norm(q.T @ q - np.eye(n)) / (n * eps)
    val = np.max(np.abs(np.linalg.eigvalsh(t) - np.linalg.eigvalsh(a64))) / na / (n * eps)
    ok = res < 2 and orth < 2 and val < 2 and np.all(np.isfinite(d))
    line = f"{np.dtype(dt).name} {name} n={n} C={C} tridiagonal res={res:.2f} orth={orth:.2f} val={val:.2f}"
    # The tridiagonal's values and vectors by the cluster (from its own d and e).
    w, x = tri_vectors(d.astype(dt), e.astype(dt), C)
    if w is None:
        line += "; vectors declined"
    else:
        w, x = w.astype(np.float64), x.astype(np.float64)
        nt = max(np.linalg.norm(t), np.finfo(np.float64).tiny)
        vval = np.max(np.abs(w - np.linalg.eigvalsh(t))) / nt / (n * eps)
        vres = np.linalg.norm(t @ x - x * w) / nt / (n * eps)
        vorth = np.linalg.norm(x.T @ x - np.eye(n)) / (n * eps)
        ok = ok and vval < 2 and vres < 4 and vorth < 4
        line += f"; vectors val={vval:.2f} res={vres:.2f} orth={vorth:.2f}"
    w, v = eigh_cluster(a, C)
    if w is None:
        line += "; eigh declined"
    else:
        w, v = w.astype(np.float64), v.astype(np.float64)
        ew = np.max(np.abs(w - np.linalg.eigvalsh(a64))) / na / (n * eps)
        er = np.linalg.norm(a64 @ v - v * w) / na / (n * eps)
        eo = np.linalg.norm(v.T @ v - np.eye(n)) / (n * eps)
        sign = bool(np.all(v[np.argmax(np.abs(v), axis=0), np.arange(n)] > 0))
        ok = ok and ew < 2 and er < 4 and eo < 4 and sign
        line += f"; eigh val={ew:.2f} res={er:.2f} orth={eo:.2f} sign={'ok' if sign else 'BAD'}"
    print(f"{line} (eps n) {'ok' if ok else 'BAD'}", flush=True)
    return ok


def main():
    dt = np.float32 if sys.argv[1] == "f32" else np.float64
    sizes = [int(x) for x in sys.argv[2:]] or [2, 3, 17, 33, 40, 70]
    clusters = [int(x) for x in os.environ.get("EMU_CLUSTER", "1,2,4").split(",")]
    rng = np.random.default_rng(3)
    bad = 0
    for n in sizes:
        kinds = {
            "gauss": rng.standard_normal((n, n)),
            "graded": rng.standard_normal((n, n)) * np.logspace(-4, 4, n)[:, None] * np.logspace(-4, 4, n)[None, :],
            "ones": np.ones((n, n)),
            "rank1": np.outer(x := rng.standard_normal(n), x),
            "zero": np.zeros((n, n)),
            "identity": np.eye(n),
            # Groups of close values (within 1e-2 ||T||): their vectors orthogonalised
            # across the cluster's blocks.
            "clustered": (lambda q: (q * (np.arange(n) // 8 + 1e-4 * rng.standard_normal(n))) @ q.T)(
                np.linalg.qr(rng.standard_normal((n, n)))[0]),
        }
        for name, a in kinds.items():
            for C in clusters:
                bad += not check(name, a, dt, C)
    print("all ok" if bad == 0 else f"{bad} BAD")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
