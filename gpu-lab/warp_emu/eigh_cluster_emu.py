"""Checks the cluster tridiagonalisation prototype (gpu-lab/eigh_cluster.cu) on the host,
no GPU: a cluster of C blocks of one warp each (warp_emu.h), against float64 NumPy: the
tridiagonal's eigenvalues against the matrix's, and Q^T A Q = T with Q the product of the
stored reflectors, Q orthogonal. Matrices of eigh_cases' kinds.

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
    print(f"{np.dtype(dt).name} {name} n={n} C={C} res={res:.2f} orth={orth:.2f} val={val:.2f} (eps n) {'ok' if ok else 'BAD'}", flush=True)
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
        }
        for name, a in kinds.items():
            for C in clusters:
                bad += not check(name, a, dt, C)
    print("all ok" if bad == 0 else f"{bad} BAD")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
