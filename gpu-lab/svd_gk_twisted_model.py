"""A model of the `bidiag` SVD kernel's fast path (kernels/svd.cu `bl_gk_fast_vectors`):
bidiagonalise (float64 here; the kernel's is backward stable), the singular values by
bisection on the Golub-Kahan tridiagonal to relative accuracy, each value's eigenvector of
that tridiagonal by a twisted factorisation (float32), shifted again by the Rayleigh
quotient's correction and solved once more; the vectors of values closer than `window`
times the largest made orthonormal by first-order symmetric (Lowdin) steps; v and u the
even and odd halves, each renormalised; U = Q u, V = P v. Prints ||A - U S V^T|| / ||A||
and ||U^T U - I||, ||V^T V - I|| (relative Frobenius, as the tests) and the largest
entry of E = X^T X - I over the window, for Gaussian, graded, rank-3 and conditioned
(1e3) n x n matrices.

2026-12-04, float32: at most 1.6e-6 at n = 64, 128 and 256 with window 1e-2 (the floor is
2e-5); with window 1e-3, or without the correction step, 256x256 Gaussian matrices came
within 1.0e-5 to 1.6e-5 of it; bisection stopped at eps ||B|| (absolute) left the graded
ones' small values undetermined (their vectors coincided). The model before this one,
inverse iteration from random starts, took three solves a vector and a Rayleigh-Ritz step
(a small SVD) on every cluster.

    python3 gpu-lab/svd_gk_twisted_model.py 128
"""
import sys
import numpy as np

F = np.float32


def bidiag(a):
    a = a.astype(np.float64).copy(); m, n = a.shape
    Q = np.eye(m); P = np.eye(n); d = np.zeros(n); e = np.zeros(max(n - 1, 0))
    for i in range(n):
        x = a[i:, i]; v = x.copy(); v[0] += np.copysign(np.linalg.norm(x), x[0] if x[0] != 0 else 1.0)
        if np.linalg.norm(v) > 0:
            v /= np.linalg.norm(v); a[i:, :] -= 2 * np.outer(v, v @ a[i:, :]); Q[:, i:] -= 2 * np.outer(Q[:, i:] @ v, v)
        d[i] = a[i, i]
        if i < n - 1:
            x = a[i, i + 1:]; v = x.copy(); v[0] += np.copysign(np.linalg.norm(x), x[0] if x[0] != 0 else 1.0)
            if np.linalg.norm(v) > 0:
                v /= np.linalg.norm(v); a[:, i + 1:] -= 2 * np.outer(a[:, i + 1:] @ v, v); P[:, i + 1:] -= 2 * np.outer(P[:, i + 1:] @ v, v)
            e[i] = a[i, i + 1]
    return Q[:, :n], d, e, P


def bisect(b, k, pivmin):
    """sigma_k (k-th smallest) of the Golub-Kahan tridiagonal with off-diagonal b (float32)."""
    b2 = b * b; n2 = len(b) + 1; q = n2 // 2; eps = np.finfo(F).eps
    lo, hi = F(0), F(2 * np.abs(b).max())
    for _ in range(256):
        mid = F(0.5) * (lo + hi)
        if hi - lo <= 2 * eps * hi + 4 * pivmin or not (lo < mid < hi): break
        t = -mid; cnt = 0
        for i in range(n2):
            if abs(t) < pivmin: t = F(-pivmin)
            cnt += t < 0
            if i == n2 - 1: break
            t = -mid - b2[i] / t
        if cnt > q + k: hi = mid
        else: lo = mid
    return F(0.5) * (lo + hi)


def twist(b, s, pivmin):
    """The twisted factorisation's vector of T - s I (z_r = 1) and its pivot gamma_r."""
    n2 = len(b) + 1; b2 = b * b
    g = lambda t: F(-pivmin) if abs(t) < pivmin else t
    dm = np.zeros(n2, F); dp = np.zeros(n2, F)
    dm[-1] = g(-s)
    for i in range(n2 - 2, -1, -1): dm[i] = g(-s - b2[i] / dm[i + 1])
    dp[0] = g(-s)
    for i in range(1, n2): dp[i] = g(-s - b2[i - 1] / dp[i - 1])
    gam = dp + dm + s; r = int(np.argmin(np.abs(gam)))
    z = np.zeros(n2, F); z[r] = 1
    for i in range(r - 1, -1, -1): z[i] = -(b[i] / dp[i]) * z[i + 1]
    for i in range(r + 1, n2): z[i] = -(b[i - 1] / dm[i]) * z[i - 1]
    return z, gam[r]


def svd(a, window=1e-2):
    n = a.shape[1]; Q, d, e, P = bidiag(a)
    b = np.zeros(2 * n - 1, F); b[0::2] = d; b[1::2] = e
    pivmin = np.finfo(F).tiny * max(1.0, float((b * b).max()))
    s = np.array([bisect(b, k, pivmin) for k in range(n)], F)  # ascending
    X = np.zeros((2 * n, n), F)
    for k in range(n):
        z, gam = twist(b, s[k], pivmin)
        sk = F(s[k] + gam / np.dot(z, z))
        z, _ = twist(b, sk, pivmin)
        X[:, k] = z / np.sqrt(np.dot(z, z))
    near = np.abs(s[:, None] - s[None, :]) <= window * s[-1]
    np.fill_diagonal(near, False)
    emax = 0.0
    for _ in range(4):
        E = np.where(near, X.T @ X, 0).astype(F)
        emax = max(emax, float(np.abs(E).max()))
        if np.abs(E).max() <= 8 * np.finfo(F).eps: break
        X = (X - F(0.5) * X @ E).astype(F)
    v = X[0::2]; u = X[1::2]
    u = u / np.sqrt((u * u).sum(0)); v = v / np.sqrt((v * v).sum(0))
    return Q @ u.astype(np.float64), s.astype(np.float64), P @ v.astype(np.float64), emax


def errors(a):
    U, s, V, emax = svd(a)
    n = a.shape[1]; eye = np.eye(n)
    rec = np.linalg.norm(a - (U * s) @ V.T) / np.linalg.norm(a)
    return rec, np.linalg.norm(U.T @ U - eye) / np.sqrt(n), np.linalg.norm(V.T @ V - eye) / np.sqrt(n), emax


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    rng = np.random.default_rng(1)
    orth = lambda: np.linalg.qr(rng.standard_normal((n, n)))[0]
    cases = {
        "gauss": rng.standard_normal((n, n)),
        "graded": rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-4, 4, n),
        "rank3": rng.standard_normal((n, 3)) @ rng.standard_normal((3, n)),
        "cond1e3": (orth() * np.geomspace(1, 1e-3, n)) @ orth().T,
    }
    for name, a in cases.items():
        print(name, n, "recon %.1e orthU %.1e orthV %.1e Emax %.1e" % errors(a))
