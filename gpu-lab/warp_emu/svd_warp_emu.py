"""Checks the `warp` SVD kernel's source (or with `bidiag`, the `bidiag` kernel's, as a block of
one warp) on the host, no GPU: compiles kernels/svd.cu with common.cu (less its inline
PTX, which the SVD does not use) against warp_emu.h, runs each matrix through the kernel
with a thread a lane, and checks against float64 NumPy: singular values, reconstruction,
orthogonality, sign convention, order, info words and svdvals agreeing. Slow (minutes a
dtype on two cores).

    python3 gpu-lab/warp_emu/svd_warp_emu.py f32   # or f64; then `bidiag` or `jacobi`

`jacobi` runs that kernel as a block of one warp with U and V in global work
(svd_jacobi_emu.cpp), on matrices of 65 rows or more, and checks the rank flag too.

Shapes after them (`40x33`, `ones:200x200`) run only those: a Gaussian matrix (and its
transpose where not square), or the matrix of ones. EMU_A_GLOBAL=1 runs `bidiag` with A
in global scratch (place 2, svd_bidiag_emu.cpp).
"""
import ctypes, re, sys
import numpy as np

from emu_build import build

BIDIAG = "bidiag" in sys.argv[2:]
JACOBI = "jacobi" in sys.argv[2:]
lib = build("svd_bidiag_emu.cpp" if BIDIAG else "svd_jacobi_emu.cpp" if JACOBI else "svd_warp_emu.cpp")


def run(a, full, vectors):
    m, n = a.shape; k = min(m, n)
    dt = a.dtype; f = lib.svd_f32 if dt == np.float32 else lib.svd_f64
    uc, vr = (m, n) if full else (k, k)
    u = np.full((m, uc), -7.0, dt); vh = np.full((vr, n), -7.0, dt); s = np.full(k, -7.0, dt)
    info = np.zeros(1, np.uint32)
    P = lambda x: x.ctypes.data_as(ctypes.c_void_p)
    rc = f(P(np.ascontiguousarray(a)), m, n, int(full), P(u) if vectors else None, P(s), P(vh) if vectors else None, P(info))
    assert rc == 0
    return (u, s, vh, int(info[0])) if vectors else (None, s, None, int(info[0]))
rng = np.random.default_rng(1)
worst = {}
def check(name, a, dt, deficient=None):
    a = a.astype(dt); a64 = a.astype(np.float64)
    m, n = a.shape; k = min(m, n)
    floor = 2e-5 if dt == np.float32 else 3.7e-14
    na = max(np.linalg.norm(a64), 1e-300)
    sref = np.linalg.svd(a64, compute_uv=False)
    _, sv, _, iv = run(a, False, False)
    for full in ((False,) if BIDIAG and m != n else (False, True)):
        u, s, vh, info = run(a, full, True)
        u64, s64, vh64 = u.astype(np.float64), s.astype(np.float64), vh.astype(np.float64)
        errs = dict(
            sval=np.abs(s64 - sref).max() / na,
            recon=np.linalg.norm(a64 - u64[:, :k] @ np.diag(s64) @ vh64[:k]) / na,
            orthU=np.linalg.norm(u64.T @ u64 - np.eye(u.shape[1])) / np.sqrt(u.shape[1]),
            orthV=np.linalg.norm(vh64 @ vh64.T - np.eye(vh.shape[0])) / np.sqrt(vh.shape[0]),
            vals=np.abs(sv.astype(np.float64) - s64).max() / na)
        bad = [f"{e}={v:.1e}" for e, v in errs.items() if not v <= floor]
        idx = np.abs(u64).argmax(axis=0)
        if not (u64[idx, np.arange(u.shape[1])] > 0).all(): bad.append("sign")
        if not (np.diff(s64) <= 0).all(): bad.append("order")
        if info & 3: bad.append(f"info {info:#x}")
        if deficient is not None and bool(info & 4) != deficient: bad.append(f"rank flag {info:#x}")
        if iv & 0xffff != info & 0xffff: bad.append(f"values info {iv:#x} vs {info:#x}")
        for e, v in errs.items(): worst[e] = max(worst.get(e, 0), v)
        tag = f"{np.dtype(dt).name} {name} {m}x{n} full={full} sweeps={info >> 16} rd={(info >> 2) & 1}"
        if BIDIAG:
            pc = (ctypes.c_int * 2)(); lib.path_counts(pc); tag += f" paths={pc[0]}/{pc[1]}"
        if SHAPES: tag += " " + " ".join(f"{e}={v:.1e}" for e, v in errs.items())
        print(tag, "FAIL " + " ".join(bad) if bad else "ok")
SHAPES = [m.groups() for a in sys.argv[2:] if (m := re.fullmatch(r"(?:(gauss|ones):)?(\d+)x(\d+)", a))]
for dt in [np.float64 if sys.argv[1:2] == ["f64"] else np.float32]:
    for kind, p, q in SHAPES:
        p, q = int(p), int(q)
        if kind == "ones":
            check("ones", np.ones((p, q)), dt)
            continue
        g = rng.standard_normal((p, q))
        check("gauss", g, dt)
        if p != q: check("gauss", g.T.copy(), dt)
    if SHAPES: break
    if JACOBI:
        # 65 rows or more (a whole warp a column pair: the emulator's shuffles wait on the
        # whole warp); few columns where they do not matter (its time goes as their square).
        g = rng.standard_normal((100, 30))
        check("gauss", g, dt); check("gauss", g.T.copy(), dt)
        x, y = (np.linalg.qr(rng.standard_normal((r, 48)))[0] for r in (80, 48))
        check("graded", (x * np.geomspace(1, 1e-3, 48)) @ y.T, dt)
        check("ones", np.ones((70, 24)), dt, deficient=True)
        check("zeros", np.zeros((66, 20)), dt, deficient=True)
        check("rank1", np.outer(rng.standard_normal(90), rng.standard_normal(24)), dt, deficient=True)
        r5 = rng.standard_normal((80, 5)) @ rng.standard_normal((5, 30))
        check("rank5", r5, dt, deficient=True); check("rank5", r5.T.copy(), dt, deficient=True)
        check("tiny", 1e-30 * rng.standard_normal((70, 20)), dt)
        check("identity", np.eye(66), dt)
        break
    rows = 64 if dt == np.float32 or BIDIAG else 32
    for q in [1, 2, 15, 16, 17, 31, 32]:
        for p in sorted({q, 16, 17, 32, rows}):
            if p < q or p > rows: continue
            g = rng.standard_normal((p, q))
            check("gauss", g, dt); check("gauss", g.T.copy(), dt)
    check("zeros", np.zeros((20, 12)), dt); check("zeros", np.zeros((12, 20)), dt)
    check("ones", np.ones((32, 32)), dt)
    check("rank1", np.outer(rng.standard_normal(rows), rng.standard_normal(20)), dt)
    check("rank1", np.outer(rng.standard_normal(20), rng.standard_normal(rows)), dt)
    r5 = rng.standard_normal((30, 5)) @ rng.standard_normal((5, 24))
    check("rank5", r5, dt); check("rank5", r5.T.copy(), dt)
    check("tiny", 1e-30 * rng.standard_normal((20, 12)), dt)
    if BIDIAG:
        for p, q in [(33, 33), (48, 40), (65, 64), (64, 64), (100, 70), (130, 128)]:
            g = rng.standard_normal((p, q))
            check("gauss", g, dt); check("gauss", g.T.copy(), dt)
        x = rng.standard_normal((60, 60)) @ np.diag(10.0 ** rng.uniform(-4, 4, 60)) @ rng.standard_normal((60, 60))
        check("graded", x, dt)
        check("ones", np.ones((50, 40)), dt)
        check("identity", np.eye(40), dt)
        r3 = rng.standard_normal((70, 3)) @ rng.standard_normal((3, 50))
        check("rank3", r3, dt); check("rank3", r3.T.copy(), dt)
        c = np.linalg.qr(rng.standard_normal((64, 64)))[0]
        check("clustered", c @ np.diag(1 + 1e-6 * rng.standard_normal(64)) @ c.T, dt)
        # Pairs 1e-3, 1e-5, 1e-7 apart or equal (tests/svd.rs `close_pairs`).
        sv = [1.0]
        for k in range(1, 48):
            sv.append(sv[-1] - ([1e-3, 1e-5, 1e-7, 0.0][(k // 2) % 4] if k % 2 else 0.5 / 48))
        x, y = (np.linalg.qr(rng.standard_normal((r, 48)))[0] for r in (60, 48))
        check("close pairs", (x * sv) @ y.T, dt); check("close pairs", y @ (x * sv).T, dt)
print({k: f"{v:.1e}" for k, v in worst.items()})
if BIDIAG:
    pc = (ctypes.c_int * 2)(); lib.path_counts(pc)
    print(f"bidiag paths: {pc[0]} QR iteration, {pc[1]} fast (vectors by twisted factorisations)")
