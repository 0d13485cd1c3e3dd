"""Checks the `jacobi` SVD kernel's source on the host, no GPU: compiles kernels/svd.cu with
common.cu against warp_emu.h (svd_jacobi_emu.cpp: a block of one warp, U and V in global
work), runs each matrix through the kernel and checks against float64 NumPy: singular
values, reconstruction, orthogonality of U (full) and V, sign convention, order, the
rank-deficient flag and the values alone agreeing. 65 rows or more. Slow (about a minute a
96x96 matrix on two cores; the default cases take a few minutes).

    python3 gpu-lab/warp_emu/svd_jacobi_emu.py f64   # or f32; shapes after it (gauss:100x70,
                                                     # graded:96x96, ones:70x70) run only those
"""
import ctypes, re, sys
import numpy as np

from emu_build import build

lib = build("svd_jacobi_emu.cpp")
rng = np.random.default_rng(1)
worst = {}


def run(a, full, vectors):
    m, n = a.shape; k = min(m, n); dt = a.dtype
    f = lib.svd_f32 if dt == np.float32 else lib.svd_f64
    uc, vr = (m, n) if full else (k, k)
    u = np.full((m, uc), -7.0, dt); vh = np.full((vr, n), -7.0, dt); s = np.full(k, -7.0, dt)
    info = np.zeros(1, np.uint32)
    P = lambda x: x.ctypes.data_as(ctypes.c_void_p)
    rc = f(P(np.ascontiguousarray(a)), m, n, int(full), P(u) if vectors else None, P(s), P(vh) if vectors else None, P(info))
    assert rc == 0, (m, n)
    return u, s, vh, int(info[0])


def check(name, a, dt, deficient=False):
    a = a.astype(dt); a64 = a.astype(np.float64)
    m, n = a.shape; k = min(m, n)
    floor = 2e-5 if dt == np.float32 else 3.7e-14
    na = max(np.linalg.norm(a64), 1e-300)
    sref = np.linalg.svd(a64, compute_uv=False)
    _, sv, _, iv = run(a, False, False)
    u, s, vh, info = run(a, True, True)
    u64, s64, vh64 = u.astype(np.float64), s.astype(np.float64), vh.astype(np.float64)
    errs = dict(
        sval=np.abs(s64 - sref).max() / na,
        recon=np.linalg.norm(a64 - u64[:, :k] @ np.diag(s64) @ vh64[:k]) / na,
        orthU=np.linalg.norm(u64.T @ u64 - np.eye(m)) / np.sqrt(m),
        orthV=np.linalg.norm(vh64 @ vh64.T - np.eye(n)) / np.sqrt(n),
        vals=np.abs(sv.astype(np.float64) - s64).max() / na)
    bad = [f"{e}={v:.1e}" for e, v in errs.items() if not v <= floor]
    lead = u64 if m >= n else u64  # U's columns lead the sign, as the front doors' convention
    idx = np.abs(lead[:, :k]).argmax(axis=0)
    if not (lead[idx, np.arange(k)] > 0).all(): bad.append("sign")
    if not (np.diff(s64) <= 0).all(): bad.append("order")
    if info & 3: bad.append(f"info {info:#x}")
    if bool(info & 4) != deficient: bad.append(f"rank flag {info:#x}")
    for e, v in errs.items(): worst[e] = max(worst.get(e, 0), v)
    tag = f"{np.dtype(dt).name} {name} {m}x{n} sweeps={info >> 16} " + " ".join(f"{e}={v:.1e}" for e, v in errs.items())
    print(tag, "FAIL " + " ".join(bad) if bad else "ok", flush=True)


def graded(m, n):
    x, y = (np.linalg.qr(rng.standard_normal((r, min(m, n))))[0] for r in (m, n))
    return (x * np.geomspace(1, 1e-3, min(m, n))) @ y.T


dt = np.float64 if sys.argv[1:2] == ["f64"] else np.float32
shapes = [mm.groups() for s in sys.argv[2:] if (mm := re.fullmatch(r"(gauss|graded|ones):(\d+)x(\d+)", s))]
for kind, m, n in shapes:
    m, n = int(m), int(n)
    a = {"gauss": lambda: rng.standard_normal((m, n)), "graded": lambda: graded(m, n),
         "ones": lambda: np.ones((m, n))}[kind]()
    check(kind, a, dt, deficient=kind == "ones")
if not shapes:
    # Few columns where they do not matter (the emulator's time goes as the columns
    # squared): its barriers are thread switches.
    g = rng.standard_normal((100, 30))
    check("gauss", g, dt); check("gauss", g.T.copy(), dt)
    check("graded", graded(80, 48), dt)
    check("ones", np.ones((70, 24)), dt, deficient=True)
    check("zeros", np.zeros((66, 20)), dt, deficient=True)
    check("rank1", np.outer(rng.standard_normal(90), rng.standard_normal(24)), dt, deficient=True)
    r5 = rng.standard_normal((80, 5)) @ rng.standard_normal((5, 30))
    check("rank5", r5, dt, deficient=True); check("rank5", r5.T.copy(), dt, deficient=True)
    check("tiny", 1e-30 * rng.standard_normal((70, 20)), dt)
    check("identity", np.eye(66), dt)
print({k: f"{v:.1e}" for k, v in worst.items()})
