"""The symmetric test matrices of the eigh emulators (eigh_block_emu.py, eigh_wql_emu.py):
random, close pairs of eigenvalues, graded, clustered, rank one, identity, zero, ones."""
import numpy as np


def close_pairs(n, rng):
    ev = [1.0]
    for k in range(1, n):
        ev.append(ev[-1] - ([1e-3, 1e-5, 1e-7, 0.0][(k // 2) % 4] if k % 2 else 1.0 / n))
    q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    return (q * ev) @ q.T


def cases(n, rng):
    """(name, n x n float64 matrix) pairs, symmetric."""
    g = rng.standard_normal((n, n))
    q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    u = rng.standard_normal(n)
    return [("gauss", g + g.T), ("close pairs", close_pairs(n, rng)),
            ("graded", (q * 10.0 ** rng.uniform(-6, 6, n)) @ q.T),
            ("clustered", (q * (1 + 1e-6 * rng.standard_normal(n))) @ q.T),
            ("rank1", np.outer(u, u)), ("identity", np.eye(n)), ("zero", np.zeros((n, n))),
            ("ones", np.ones((n, n)))]
