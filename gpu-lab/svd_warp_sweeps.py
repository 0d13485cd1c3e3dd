"""Sweep counts of one-sided Jacobi in float32 under other orderings and preconditioners,
the `warp` SVD's tolerances (kernels/svd.cu bl_svd_limits, the rotation as bl_jacobi_t):
the round-robin order the kernel uses, the cross-product order a lane pair a column pair
would need (each slot keeps S while M cycles, then the halves recurse; tried on the GPU
and not taken, docs/results/h100/2026-12-06-svd-warp-pairs), the norms summed each round
or updated (Rutishauser), and Jacobi on R^T after a QR of A, without and with column
pivoting. Needs NumPy and SciPy.

    python3 gpu-lab/svd_warp_sweeps.py
"""
import sys, os
import numpy as np
import scipy.linalg as sl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svd_warp_model import partner


def rr_rounds(q):
    q2 = q + (q & 1)
    return [[(i, partner(i, r, q)) for i in range(q2) if i < partner(i, r, q)] for r in range(q2 - 1)]


def cross_rounds(q, sweeps=60):
    """The cross-product order on q padded to a power of two: per sweep, its rounds."""
    n = 2
    while n < q:
        n *= 2
    ns = n // 2
    S, M = list(range(ns)), list(range(ns, n))
    out = []
    for _ in range(sweeps):
        rounds, s = [], ns
        while s >= 1:
            for r in range(s):
                rounds.append(list(zip(S, M)))
                if r < s - 1:
                    M = [M[(t // s) * s + ((t % s) + 1) % s] for t in range(ns)]
            if s > 1:
                h = s // 2
                nS, nM = S[:], M[:]
                for t in range(ns):
                    p = t ^ h
                    if (t % s) < h:
                        nM[t] = S[p]
                    else:
                        nS[t] = M[p]
                S, M = nS, nM
            s //= 2
        out.append(rounds)
    return out


def jacobi_sweeps(a, rounds_of, incremental, max_sweeps=40):
    wt = np.float32
    p, q = a.shape
    mx = np.abs(a).max()
    es = 0 if mx == 0 else int(np.frexp(mx)[1])
    A = np.zeros((p, 64), wt)
    A[:, :q] = (a * 2.0 ** -es).astype(wt)
    eps = wt(np.finfo(np.float32).eps)
    cmax = (A * A).sum(axis=0, dtype=wt).max()
    nf = wt(min(max(p, 4), 32))
    null2 = nf * nf * eps * eps * cmax
    tol = wt(np.sqrt(wt(max(p, 16)))) * eps
    for sw in range(max_sweeps):
        nrm = (A * A).sum(axis=0, dtype=wt)
        rotated = False
        for ps in rounds_of(sw):
            I = np.array([i for i, _ in ps])
            J = np.array([j for _, j in ps])
            x, y = A[:, I], A[:, J]
            aii, ajj = (nrm[I], nrm[J]) if incremental else ((x * x).sum(0, dtype=wt), (y * y).sum(0, dtype=wt))
            aij = (x * y).sum(0, dtype=wt)
            with np.errstate(all="ignore"):
                ok = (aii > null2) & (ajj > null2) & (aij * aij > tol * tol * aii * ajj)
                d = ajj - aii
                t = (wt(2) * aij / (np.abs(d) + np.sqrt(d * d + wt(4) * aij * aij))).astype(wt)
                t = np.where(d < 0, -t, t)
            t = np.where(ok, t, wt(0)).astype(wt)
            c = (wt(1) / np.sqrt(wt(1) + t * t)).astype(wt)
            A[:, I] = c * (x - t * y)
            A[:, J] = c * (y + t * x)
            nrm[I], nrm[J] = aii - t * aij, ajj + t * aij
            rotated |= ok.any()
        if not rotated:
            return sw + 1
    return max_sweeps


def main():
    rng = np.random.default_rng(11)
    cases = {
        "gauss": lambda q: rng.standard_normal((q, q)),
        "gauss 64 rows": lambda q: rng.standard_normal((64, q)),
        "cond 1e6": lambda q: (np.linalg.qr(rng.standard_normal((q, q)))[0] * np.logspace(0, -6, q))
        @ np.linalg.qr(rng.standard_normal((q, q)))[0],
        "graded 1e-5": lambda q: rng.standard_normal((q, q)) * np.logspace(0, -5, q),
    }
    print("mean sweeps over 10 float32 matrices a case")
    print(f"{'q':>3} {'case':14} {'rr':>5} {'rr upd':>6} {'cross':>6} {'QR R^T':>6} {'QRCP R^T':>8}")
    for q in (32, 16):
        rr, cross = rr_rounds(q), cross_rounds(q)
        for name, make in cases.items():
            o = []
            for _ in range(10):
                a = make(q).astype(np.float32).astype(np.float64)
                r = sl.qr(a.astype(np.float32), mode="r")[0][:q].astype(np.float64)
                rp = sl.qr(a.astype(np.float32), pivoting=True, mode="economic")[1].astype(np.float64)
                o.append([jacobi_sweeps(a, lambda sw: rr, False), jacobi_sweeps(a, lambda sw: rr, True),
                          jacobi_sweeps(a, lambda sw: cross[sw], True),
                          jacobi_sweeps(r.T.copy(), lambda sw: rr, True), jacobi_sweeps(rp.T.copy(), lambda sw: rr, True)])
            m = np.array(o).mean(axis=0)
            print(f"{q:3d} {name:14} " + " ".join(f"{x:6.1f}" for x in m))


if __name__ == "__main__":
    main()
