"""Checks the `warp-ql` eigh kernel's source (kernels/eigh.cu, bl_eigh_wql; with --bisect
`warp-bisect`, its fast path's matrices counted) on the host, no
GPU: compiled with common.cu (less its inline PTX) against warp_emu.h, a warp of 32/N
matrices a run (the groups iterate apart), against float64 NumPy: eigenvalues, residual,
orthogonality, sign convention, order, info words, eigvalsh agreeing.

    python3 gpu-lab/warp_emu/eigh_wql_emu.py f32 [--bisect]   # or f64; optional sizes after
"""
import ctypes, sys
import numpy as np

import eigh_cases
from emu_build import build

lib = build("eigh_wql_emu.cpp")
P = lambda x: x.ctypes.data_as(ctypes.c_void_p)


def padded(n):
    return 8 if n <= 8 else 16 if n <= 16 else 32


def run(mats, vectors):
    nm, n, _ = mats.shape
    dt = mats.dtype
    f = lib.eigh_f32 if dt == np.float32 else lib.eigh_f64
    w = np.full((nm, n), -7.0, dt); v = np.full((nm, n, n), -7.0, dt); info = np.zeros(nm, np.uint32)
    assert f(P(np.ascontiguousarray(mats)), nm, n, padded(n), P(w), P(v) if vectors else None, P(info), BISECT) == 0
    return w, (v if vectors else None), info


worst = {}
fails = 0


def check(names, mats, dt):
    global fails
    mats = np.array([np.tril(a) + np.tril(a, -1).T for a in mats]).astype(dt)
    n = mats.shape[1]
    floor = 2e-5 if dt == np.float32 else 3.7e-14
    w, v, info = run(mats, True)
    wv, _, iv = run(mats, False)
    for k, name in enumerate(names):
        a64 = mats[k].astype(np.float64)
        na = max(np.linalg.norm(a64, 2), 1e-300)
        wref = np.linalg.eigvalsh(a64)
        w64, v64 = w[k].astype(np.float64), v[k].astype(np.float64)
        errs = dict(val=np.abs(w64 - wref).max() / na,
                    resid=np.linalg.norm(a64 @ v64 - v64 * w64) / na / np.sqrt(n),
                    orth=np.linalg.norm(v64.T @ v64 - np.eye(n)) / np.sqrt(n),
                    vals=np.abs(wv[k].astype(np.float64) - wref).max() / na)
        bad = [f"{e}={x:.1e}" for e, x in errs.items() if not x <= floor]
        idx = np.abs(v64).argmax(axis=0)
        if not (v64[idx, np.arange(n)] > 0).all(): bad.append("sign")
        if not (np.diff(w64) >= 0).all(): bad.append("order")
        if info[k] & 3: bad.append(f"info {info[k]:#x}")
        for e, x in errs.items(): worst[e] = max(worst.get(e, 0), x)
        fails += bool(bad)
        print(f"{np.dtype(dt).name} {name} n={n} iters={info[k] >> 16} "
              + " ".join(f"{e}={x:.1e}" for e, x in errs.items()), "FAIL " + " ".join(bad) if bad else "ok", flush=True)


rng = np.random.default_rng(1)
dt = np.float64 if sys.argv[1:2] == ["f64"] else np.float32
BISECT = int("--bisect" in sys.argv)
sizes = [int(x) for x in sys.argv[2:] if x != "--bisect"] or [1, 2, 3, 7, 8, 9, 16, 17, 31, 32]
paths = [0, 0]
for n in sizes:
    mpw = 32 // padded(n)
    cases = eigh_cases.cases(n, rng)
    for i in range(0, len(cases), mpw):  # a warp's groups at once
        part = cases[i:i + mpw]
        before = (ctypes.c_int * 2)(); lib.path_counts(before)
        check([c[0] for c in part], np.array([c[1] for c in part]), dt)
        after = (ctypes.c_int * 2)(); lib.path_counts(after)
        for i in range(2): paths[i] += (after[i] - before[i]) // padded(n)
if BISECT: print("matrices with vectors: %d tql2, %d fast (the padding groups of a warp counted)" % tuple(paths))
print({k: f"{v:.1e}" for k, v in worst.items()})
sys.exit(1 if fails else 0)
