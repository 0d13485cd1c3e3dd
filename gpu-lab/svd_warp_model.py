"""CPU model of the `warp` SVD kernel (crates/batchlin/src/cuda/kernels/svd.cu,
bl_svd_warp): one-sided Jacobi with lane j holding column j of A and of V, the jacobi
kernel's round-robin pairs, tolerances and null-column rule, in the work precision the
kernel uses (float32 for float input). Every lane of a pair computes the same rotation
from the same dot products, so the model rotates each pair once. It models the rotation
as the kernel had it until 2026-12-06 (c and s applied, norms summed each round); the
kernel now scales its columns and updates the norms (svd_warp_sweeps.py models that; the
emulator, warp_emu/svd_warp_emu.py, runs the kernel's own source).

    python3 gpu-lab/svd_warp_model.py            # the report in the proposal
    python3 gpu-lab/svd_warp_model.py --work f64 # float input, double work

Prints, per case, the sweeps (max over the batch) and the errors relative to ||A||:
reconstruction, ||U^T U - I|| / sqrt(q) and ||V^T V - I|| / sqrt(q) (the tests'
`orth_err`), and max |s - s_ref| / ||A|| against
float64's singular values.
"""

import argparse
import numpy as np


def partner(lane, r, q):
    """The lane paired with `lane` in round r: the jacobi kernel's tournament (pair 0 is
    (0, 1 + r), pair k > 0 is (1 + (r + k) % R, 1 + (r + R - k) % R), R = q2 - 1)."""
    q2 = q + (q & 1)
    rounds = q2 - 1
    if lane >= q2:
        return lane
    if lane == 0:
        return 1 + r
    i = lane - 1
    j = (2 * r - i) % rounds
    return 0 if j == i else j + 1


def svd_warp(a, wt, out_eps, max_sweeps=40, vectors=True):
    """a: p x q (p >= q, q <= 32) in float64; wt: the work type. Returns s, U, V, sweeps,
    converged (U, V as the work type; columns sorted, signs not applied)."""
    p, q = a.shape
    mx = np.abs(a).max()
    es = 0 if mx == 0 else int(np.frexp(mx)[1])
    A = (a * 2.0**-es).astype(wt)
    V = np.eye(q, dtype=wt)
    eps = wt(out_eps)
    cmax = max((A[:, j] * A[:, j]).sum(dtype=wt) for j in range(q))
    nf = wt(min(max(p, 4), 32))
    null2 = nf * nf * eps * eps * cmax
    tol = wt(np.sqrt(wt(max(p, 16)))) * eps
    q2 = q + (q & 1)
    rounds = q2 - 1
    sweeps, conv = 0, False
    one, two, half = wt(1), wt(2), wt(0.5)
    for sw in range(max_sweeps):
        rotated = False
        for r in range(rounds):
            for i in range(q):
                j = partner(i, r, q)
                if not (i < j < q):
                    continue
                x, y = A[:, i].copy(), A[:, j].copy()
                aii, ajj, aij = wt(0), wt(0), wt(0)
                for k in range(p):  # row order, as a lane sums its registers
                    aii = wt(aii + x[k] * x[k])
                    ajj = wt(ajj + y[k] * y[k])
                    aij = wt(aij + x[k] * y[k])
                if aii <= null2 or ajj <= null2:
                    continue
                if not abs(aij) > tol * np.sqrt(aii) * np.sqrt(ajj):
                    continue
                zeta = wt((ajj - aii) / (two * aij))
                az = abs(zeta)
                if az > one / eps:
                    t = wt(half / zeta)
                else:
                    t = wt(np.copysign(one, zeta) / (az + np.sqrt(one + zeta * zeta)))
                c = wt(one / np.sqrt(one + t * t))
                s = wt(c * t)
                A[:, i] = c * x - s * y
                A[:, j] = s * x + c * y
                if vectors:
                    vx, vy = V[:, i].copy(), V[:, j].copy()
                    V[:, i] = c * vx - s * vy
                    V[:, j] = s * vx + c * vy
                rotated = True
        sweeps = sw + 1
        if not rotated:
            conv = True
            break
    nrm = np.array([np.sqrt((A[:, j] * A[:, j]).sum(dtype=wt)) for j in range(q)], dtype=wt)
    order = sorted(range(q), key=lambda j: (-nrm[j], j))  # the stable rank sort
    s = nrm[order].astype(np.float64) * 2.0**es
    U = None
    if vectors:
        U = np.zeros((p, q), dtype=wt)
        nullc = np.sqrt(null2)
        for c, j in enumerate(order):
            if nrm[j] > nullc:
                U[:, c] = A[:, j] / nrm[j]
        # Null columns: Gram-Schmidt (twice) from the row of least leverage, as the kernel.
        nv = sum(1 for j in range(q) if nrm[j] > nullc)
        for c in range(nv, q):
            lev = (U[:, :c] ** 2).sum(axis=1)
            e = np.zeros(p, dtype=wt)
            e[int(np.argmin(lev))] = 1
            for _ in range(2):
                e = e - U[:, :c] @ (U[:, :c].T @ e)
            U[:, c] = e / np.sqrt((e * e).sum())
        V = V[:, order]
    return s, U, V, sweeps, conv


def cases(rng):
    def gauss(p, q):
        return rng.standard_normal((p, q))

    def cond(p, q, k):
        u, _ = np.linalg.qr(rng.standard_normal((p, q)))
        v, _ = np.linalg.qr(rng.standard_normal((q, q)))
        return u @ np.diag(np.logspace(0, -k, q)) @ v.T

    def rank(p, q, r):
        return rng.standard_normal((p, r)) @ rng.standard_normal((r, q))

    out = []
    for p, q in [(16, 16), (32, 32), (64, 32), (64, 16), (32, 2), (32, 1), (33, 31), (64, 31)]:
        out.append((f"gauss {p}x{q}", lambda p=p, q=q: gauss(p, q)))
    out.append(("cond 1e6 32x32", lambda: cond(32, 32, 6)))
    out.append(("cond 1e6 64x32", lambda: cond(64, 32, 6)))
    out.append(("rank 5 32x32", lambda: rank(32, 32, 5)))
    out.append(("ones 32x32", lambda: np.ones((32, 32))))
    out.append(("graded 32x32", lambda: gauss(32, 32) * np.logspace(0, -5, 32)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="f32", choices=["f32", "f64"])
    ap.add_argument("--out", default="f32", choices=["f32", "f64"])
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    wt = np.float32 if args.work == "f32" else np.float64
    out_eps = np.finfo(np.float32 if args.out == "f32" else np.float64).eps
    rng = np.random.default_rng(7)
    print(f"work {args.work}, tolerances of {args.out}, batch {args.batch} a case")
    print(f"{'case':18} {'sweeps':>6} {'recon':>9} {'orthU':>9} {'orthV':>9} {'sval':>9}")
    for name, make in cases(rng):
        worst = np.zeros(4)
        sweeps = 0
        for _ in range(args.batch):
            a = make()
            if args.out == "f32":
                a = a.astype(np.float32).astype(np.float64)  # the input as the caller has it
            s, U, V, sw, conv = svd_warp(a, wt, out_eps)
            assert conv, name
            sweeps = max(sweeps, sw)
            U64, V64 = U.astype(np.float64), V.astype(np.float64)
            na = np.linalg.norm(a)
            q = a.shape[1]
            errs = [
                np.linalg.norm(a - U64 @ np.diag(s) @ V64.T) / na,
                np.linalg.norm(U64.T @ U64 - np.eye(q)) / np.sqrt(q),
                np.linalg.norm(V64.T @ V64 - np.eye(q)) / np.sqrt(q),
                np.abs(s - np.linalg.svd(a, compute_uv=False)).max() / na,
            ]
            worst = np.maximum(worst, errs)
        print(f"{name:18} {sweeps:6d} " + " ".join(f"{e:9.2e}" for e in worst))


if __name__ == "__main__":
    main()
