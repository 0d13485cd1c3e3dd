"""Checks the `block` eigh kernel's source (kernels/eigh.cu, with its fast path) on the
host, no GPU: compiles it with common.cu (less its inline PTX) against warp_emu.h, runs
each matrix through the kernel as a block of one warp, and checks against float64 NumPy:
eigenvalues, residual, orthogonality, sign convention, order, info words and eigvalsh
agreeing; counts the matrices each path took (the fast path, or tql2 where it declines).

    python3 gpu-lab/warp_emu/eigh_block_emu.py f32   # or f64; optional sizes after
    EMU_A_GLOBAL=1 python3 ...   # the work matrix in global scratch, as beyond shared memory
"""
import ctypes, sys
import numpy as np

import eigh_cases
from emu_build import build

lib = build("eigh_block_emu.cpp")
P = lambda x: x.ctypes.data_as(ctypes.c_void_p)


def run(a, vectors):
    n = a.shape[0]
    dt = a.dtype
    f = lib.eigh_f32 if dt == np.float32 else lib.eigh_f64
    w = np.full(n, -7.0, dt); v = np.full((n, n), -7.0, dt); info = np.zeros(1, np.uint32)
    assert f(P(np.ascontiguousarray(a)), n, P(w), P(v) if vectors else None, P(info)) == 0
    return w, (v if vectors else None), int(info[0])


def paths():
    pc = (ctypes.c_int * 2)(); lib.path_counts(pc); return pc[0], pc[1]


rng = np.random.default_rng(1)
worst = {}


def check(name, a, dt):
    a = a.astype(dt); a = np.tril(a) + np.tril(a, -1).T
    a64 = a.astype(np.float64); n = a.shape[0]
    floor = 2e-5 if dt == np.float32 else 3.7e-14
    na = max(np.linalg.norm(a64, 2), 1e-300)
    wref = np.linalg.eigvalsh(a64)
    p0 = paths()
    w, v, info = run(a, True)
    p1 = paths()
    wv, _, iv = run(a, False)
    w64, v64 = w.astype(np.float64), v.astype(np.float64)
    errs = dict(val=np.abs(w64 - wref).max() / na,
                resid=np.linalg.norm(a64 @ v64 - v64 * w64) / na / np.sqrt(n),
                orth=np.linalg.norm(v64.T @ v64 - np.eye(n)) / np.sqrt(n),
                vals=np.abs(wv.astype(np.float64) - wref).max() / na)
    bad = [f"{e}={x:.1e}" for e, x in errs.items() if not x <= floor]
    idx = np.abs(v64).argmax(axis=0)
    if not (v64[idx, np.arange(n)] > 0).all(): bad.append("sign")
    if not (np.diff(w64) >= 0).all(): bad.append("order")
    if info & 3: bad.append(f"info {info:#x}")
    if name == "ones":  # as tests/eigh.rs: every eigenvalue within 8 eps n of n or 0
        e = np.finfo(dt).eps * n
        top, rest = abs(w64[-1] - n) / e, np.abs(w64[:-1]).max() / e
        if not (top <= 8 and rest <= 8): bad.append(f"ones {top:.1f}/{rest:.1f} eps n")
    for e, x in errs.items(): worst[e] = max(worst.get(e, 0), x)
    path = "fast" if p1[1] > p0[1] else "tql2"
    print(f"{np.dtype(dt).name} {name} n={n} {path} steps={info >> 16} "
          + " ".join(f"{e}={x:.1e}" for e, x in errs.items()), "FAIL " + " ".join(bad) if bad else "ok", flush=True)


dt = np.float64 if sys.argv[1:2] == ["f64"] else np.float32
sizes = [int(x) for x in sys.argv[2:]] or [2, 3, 7, 16, 33, 64, 100, 128]
for n in sizes:
    for name, a in eigh_cases.cases(n, rng):
        check(name, a, dt)
print({k: f"{v:.1e}" for k, v in worst.items()})
print("paths: %d tql2, %d fast" % paths())
