"""A NumPy model of the `jacobi` SVD kernel (kernels/svd.cu, bl_svd_jacobi) in float64: the
same scaling, pair order, Rutishauser rotation, tolerance, null-column rule and
re-orthogonalisation, each round's disjoint pairs at once. For the kernel's accuracy at
sizes the host emulator (warp_emu/svd_warp_emu.py jacobi) takes hours to run, and its
variants:

  as is       version 1: sigma_j the rotated columns' norms, U's and V's columns made
              orthonormal again at the end
  U from A V  version 2: V made orthonormal again, then U = A V from the input and sigma_j
              its columns' norms

    python3 gpu-lab/svd_jacobi_model.py graded:256x256 gauss:256x256   # ~30 s a 256 case

Prints ||A - U S V^T|| / ||A||, orthogonality and sweeps per variant; with `relacc`, the
relative error of the values of column-graded matrices (B D) against the model run in
long double.
"""
import sys
import numpy as np

EPS = np.finfo(np.float64).eps


def rounds(q):
    """The kernel's round-robin order: the disjoint pairs of each round."""
    q2 = q + (q & 1)
    n = q2 - 1
    out = []
    for r in range(n):
        ps = [(0, 1 + r % n)] + [(1 + (r + k) % n, 1 + (r + n - k) % n) for k in range(1, q2 // 2)]
        out.append(np.array([(i, j) for i, j in ps if i < q and j < q]))
    return out


def reorth(x, order, valid=None):
    """One pass of classical Gram-Schmidt over x's columns in `order` (bl_reorth)."""
    x = x.copy()
    done = []
    for j in order:
        if valid is not None and not valid[j]:
            continue
        if done:
            x[:, j] -= x[:, done] @ (x[:, done].T @ x[:, j])
        x[:, j] /= np.linalg.norm(x[:, j])
        done.append(j)
    return x


def jacobi(a, u_from_av, eps=EPS):
    p, q = a.shape
    u, v = a.copy(), np.eye(q, dtype=a.dtype)
    cmax = (u * u).sum(0).max()
    nf = min(max(p, 4), 32)
    null2 = nf * nf * eps * eps * cmax
    tol = np.sqrt(max(p, 16)) * eps
    sweeps = 0
    for sweeps in range(1, 41):
        rotated = False
        for ps in rounds(q):
            i, j = ps[:, 0], ps[:, 1]
            ui, uj = u[:, i], u[:, j]
            aii, ajj, aij = (ui * ui).sum(0), (uj * uj).sum(0), (ui * uj).sum(0)
            go = (aii > null2) & (ajj > null2) & (np.abs(aij) > tol * np.sqrt(aii) * np.sqrt(ajj))
            if not go.any():
                continue
            rotated = True
            with np.errstate(all="ignore"):
                zeta = (ajj - aii) / (2 * aij)
                az = np.abs(zeta)
                t = np.where(az > 1 / eps, 0.5 / zeta,
                             np.where(zeta < 0, -1, 1) / (az + np.sqrt(1 + zeta * zeta)))
                c = 1 / np.sqrt(1 + t * t)
            c, s = np.where(go, c, 1), np.where(go, c * t, 0)
            u[:, i], u[:, j] = c * ui - s * uj, s * ui + c * uj
            vi, vj = v[:, i], v[:, j]
            v[:, i], v[:, j] = c * vi - s * vj, s * vi + c * vj
        if not rotated:
            break
    nrm = np.sqrt((u * u).sum(0))
    order = sorted(range(q), key=lambda k: (-nrm[k], k))
    valid = nrm > np.sqrt(null2)  # the columns the sweeps did not freeze
    v = reorth(v, order)
    if u_from_av:
        u = a @ v
        nrm = np.sqrt((u * u).sum(0))
        order = sorted(range(q), key=lambda k: (-nrm[k], k))
    u = reorth(u / np.where(valid, nrm, 1), order, valid)
    return u[:, order], nrm[order], v[:, order], sweeps


def scaled(a):
    """As the kernel loads it: max |a| in [0.5, 1)."""
    return np.ldexp(a, -np.frexp(np.abs(a).max())[1])


def with_values(rng, m, n, s):
    x, y = (np.linalg.qr(rng.standard_normal((r, n)))[0] for r in (m, n))
    return (x * s) @ y.T


if __name__ == "__main__":
    rng = np.random.default_rng(1)
    for spec in sys.argv[1:]:
        if spec == "relacc":
            for p, q, span in [(100, 60, 1e-12), (128, 128, 1e-10)]:
                a = scaled(rng.standard_normal((p, q)) * np.geomspace(1, span, q))
                ref = jacobi(a.astype(np.longdouble), False, np.finfo(np.longdouble).eps)[1]
                ref = ref.astype(np.float64)
                for name, av in [("as is", False), ("U from A V", True)]:
                    s = jacobi(a, av)[1]
                    print(f"B D {p}x{q} D to {span:g} {name:10s} "
                          f"values' relative error {np.max(np.abs(s - ref) / ref):.1e}")
            continue
        kind, shape = spec.split(":")
        m, n = map(int, shape.split("x"))
        a = rng.standard_normal((m, n)) if kind == "gauss" else \
            with_values(rng, m, n, np.geomspace(1, 1e-3, n))
        a = scaled(a)
        na = np.linalg.norm(a)
        for name, av in [("as is", False), ("U from A V", True)]:
            u, s, v, sw = jacobi(a, av)
            rec = np.linalg.norm(a - (u * s) @ v.T) / na
            ou = np.linalg.norm(u.T @ u - np.eye(n)) / np.sqrt(n)
            ov = np.linalg.norm(v.T @ v - np.eye(n)) / np.sqrt(n)
            print(f"{kind} {m}x{n} {name:10s} sweeps {sw} ||A - U S V^T||/||A|| {rec:.1e} "
                  f"orth U {ou:.1e} V {ov:.1e}", flush=True)
