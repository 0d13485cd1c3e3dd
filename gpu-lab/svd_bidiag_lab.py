"""Variants of the `bidiag` SVD kernel (kernels/svd.cu) timed side by side through CuPy's
NVRTC, no library build. Each variant is the library's source with a textual change; its
registers, spills, time (CUDA events, median of 5) and errors (||A - U S V^T|| / ||A||,
||U^T U - I||, ||V^T V - I||, in float64) on Gaussian batches. `stop1` and `stop2` end the
kernel after the bidiagonalisation and after the fast path's vectors (before the
reflectors are applied): where the time goes. `nb16`, `nb32`: 16 or 32 reflectors a block
in bl_refl_apply (common.cu, shared with eigh) at every size (the kernel's rule: 32
from 96 columns); `inline`: bl_refl_apply inlined (it is a call of its own); `noun`: its loops not unrolled (the library: by 4). With a path to an earlier svd.cu as its
argument, that source is timed first (`base`; it must compile against today's
common.cu; `base` runs under the layout of its day, ld odd). Earlier variants (register cap, rotation loads ahead, one division a
rotation; forming Q and P) and what they found: docs/results/h200/2026-12-04-svd-bidiag,
2026-12-04-svd-fast-path, 2026-12-04-svd-apply.

    python3 gpu-lab/svd_bidiag_lab.py [old svd.cu] [float|double]   # on the GPU machine (CuPy)

LAB_COMPILE_ONLY=1 compiles the variants into CuPy's cache and times nothing (it can run
beside a GPU job). LAB_VARIANTS=full,nb32 picks variants, LAB_SHAPES=256x256x256,.. shapes
(batch x rows x columns, rows >= columns). `p8`, `p32`: panels of 8 or 32 steps where A is
in global memory (the library: 16); `s1p8`, `s1p32` the same stopped after the
bidiagonalisation.
"""
import os, sys
import cupy as cp
import numpy as np

from nvrtc_lab import NO_UNROLL, apply_subs, loop_variants, median_ms, source

COMMON = source("common.cu")
SVD = source("svd.cu")

LAB = r"""
extern "C" __global__ void __launch_bounds__(512, MINB) lab(const T* a, T* u, T* s, T* v, unsigned* info,
        T* work, long long work_bs, int p, int q, int ldu, int place) {
    SvdArgs g{};
    g.a = a; g.a_bs = (bl_i64)p * q; g.a_rs = q; g.a_cs = 1;
    if (u) { g.x = u; g.x_bs = (bl_i64)p * q; g.x_rs = q; g.x_cs = 1;
             g.y = v; g.y_bs = (bl_i64)q * q; g.y_rs = q; g.y_cs = 1; }
    g.s = s; g.s_bs = q; g.s_cs = 1; g.info = info; g.work = work; g.work_bs = work_bs;
    g.p = p; g.q = q; g.xcols = q; g.ldu = ldu; g.ldv = q | 1; g.place = place;
    bl_svd_bidiag<T>(g);
}
"""

STOPS = [
    "    if (tid == 0) {\n        for (int i = q - 1; i >= 1; --i) e[i] = e[i - 1];",
    "        BL_SVD_PATH_HOOK(X != nullptr);\n",
]


def build(minb=2, stop=0, dtype="float", src=None, subs=()):
    """The lab kernel over common.cu and `src` (svd.cu), each textual change `subs`
    applied to whichever of the two holds it."""
    src = src or SVD
    common = COMMON
    src, common = apply_subs(src, common, subs)
    if stop:
        at = STOPS[stop - 1]
        assert at in src, at
        cut = "    if (STOP) return;\n"
        src = src.replace(at, cut + at) if stop == 1 else src.replace(at, at + cut)
    code = (f"#define BL_NO_DEFAULT_INST\n#define STOP {stop}\n" + common + "\n" + src
            + f"\n#define MINB {minb}\n#define T {dtype}\n" + LAB)
    return cp.RawKernel(code, "lab", options=("--std=c++17",))


def threads(p, q, vec):
    rows = p + q if vec else p
    return min(max(-(-rows // 32) + 1, 2), 16) * 32


def layout(p, q, es, old=False):
    """(ldu, small bytes, V's elements in shared memory) as cuda/svd.rs bidiag_shape;
    `old`: the rule before the vectors down the columns (ld odd), for an earlier svd.cu."""
    if old:
        return p | 1, (16 * q + 2 * p + 32) * es + (q + 21) * 4, (q | 1) * q
    vn = 16 // es
    l = -(-p // vn)
    pv = l * vn
    return (l if l % 2 else l + 1) * vn, (16 * q + 2 * pv + 32) * es + (q + 21) * 4, -(-(q | 1) * q // vn) * vn


def place_of(p, q, es, old=False):
    """The library's place (cuda/svd.rs bidiag_shape): both in shared memory where three
    blocks fit, V apart where A fits, else both apart."""
    ld, small, velems = layout(p, q, es, old)
    a_b, v_b = ld * q * es, velems * es
    return 0 if small + a_b + v_b <= 232448 and 3 * (small + a_b + v_b) <= 232448 else 1 if small + a_b <= 232448 else 2


def run(fn, a, vec, place, es=4, old=False, panel=16):
    b, p, q = a.shape
    ld, small, velems = layout(p, q, es, old)
    ldv = q | 1
    abytes, vbytes = ld * q * es, (velems * es if vec else 0)
    if place == 0:
        smem, welems = small + abytes + vbytes, 0
    elif place == 1:
        smem, welems = small + abytes, ldv * q
    else:
        # A, the panels (U, X, V, Y: cuda/svd.rs PANEL = 16 entries a row), V
        smem, welems = small, ld * q + 2 * panel * (p + q) + (ldv * q if vec else 0)
    welems += 5 * q * q if vec else 0  # the fast path's scratch (cuda/svd.rs)
    welems = -(-welems // (16 // es)) * (16 // es)  # whole 16-byte vectors a matrix
    fn.max_dynamic_shared_size_bytes = smem
    dt = a.dtype
    u = cp.empty((b, p, q), dt) if vec else np.uint64(0)
    v = cp.empty((b, q, q), dt) if vec else np.uint64(0)
    s = cp.empty((b, q), dt)
    info = cp.zeros(b, cp.uint32)
    work = cp.empty(max(welems * b, 1), dt)
    args = (a, u, s, v, info, work, np.int64(welems), np.int32(p), np.int32(q), np.int32(ld), np.int32(place))
    call = lambda: fn((b,), (threads(p, q, vec),), args, shared_mem=smem)
    ms = median_ms(call)
    err = ""
    if vec:
        n = min(b, 16)
        a64, u64, s64, v64 = (x[:n].astype(cp.float64) for x in (a, u, s, v))
        na = cp.linalg.norm(a64.reshape(n, -1), axis=1)
        rec = cp.linalg.norm((a64 - (u64 * s64[:, None, :]) @ v64.transpose(0, 2, 1)).reshape(n, -1), axis=1) / na
        ou = cp.linalg.norm((u64.transpose(0, 2, 1) @ u64 - cp.eye(q)).reshape(n, -1), axis=1)
        ov = cp.linalg.norm((v64.transpose(0, 2, 1) @ v64 - cp.eye(q)).reshape(n, -1), axis=1)
        err = f"rec {float(rec.max()):.1e} oU {float(ou.max()):.1e} oV {float(ov.max()):.1e}"
    bad = int(((info & 3) != 0).sum())
    return ms, err + (f" BAD {bad}" if bad else "")


def main():
    rng = np.random.default_rng(0)
    base = sys.argv[1] if len(sys.argv) > 1 else None
    dtype = sys.argv[2] if len(sys.argv) > 2 else "float"
    npt, es = (np.float32, 4) if dtype == "float" else (np.float64, 8)
    shapes = [(4096, 33, 33), (1024, 64, 64), (1024, 128, 128), (256, 256, 256)]
    if os.environ.get("LAB_SHAPES"):
        shapes = [tuple(int(x) for x in sh.split("x")) for sh in os.environ["LAB_SHAPES"].split(",")]
    data = {sh: cp.asarray(rng.standard_normal(sh).astype(npt)) for sh in shapes}
    rule = "#define BL_REFL_WIDE_FROM 96\n"
    variants = ([("base", dict(src=open(base).read(), old=True))] if base else []) + [
        ("full", {}), ("nb16", dict(subs=[(rule, rule.replace("96", "100000"))])),
        ("nb32", dict(subs=[(rule, rule.replace("96", "0"))])),
        ("inline", dict(subs=[("__device__ __noinline__ void bl_refl_apply(", "__device__ void bl_refl_apply(")])),
        ("stop1", dict(stop=1)), ("stop2", dict(stop=2)),
        NO_UNROLL] + loop_variants(COMMON)
    # Panels of 8 or 32 steps where A is in global memory (BL_SVD_PANEL; the library 16).
    pdef = "#define BL_SVD_PANEL 16\n"
    variants += [(f"p{w}", dict(panel=w, subs=[(pdef, pdef.replace("16", str(w)))])) for w in (8, 32)]
    variants += [(f"s1p{w}", dict(stop=1, panel=w, subs=[(pdef, pdef.replace("16", str(w)))])) for w in (8, 32)]
    pick = os.environ.get("LAB_VARIANTS")
    if pick:
        variants = [v for v in variants if v[0] in pick.split(",")]
    minb = 2 if dtype == "float" else 1
    for name, kw in variants:
        old, panel = kw.pop("old", False), kw.pop("panel", 16)
        stopped = bool(kw.get("stop"))  # its outputs unwritten: no errors shown
        fn = build(minb=minb, dtype=dtype, **kw)
        print(f"== {name} ({dtype}): {fn.num_regs} registers, {fn.local_size_bytes} B local", flush=True)
        if os.environ.get("LAB_COMPILE_ONLY"):  # fill CuPy's kernel cache (CPU only)
            continue
        for sh in shapes:
            b, p, q = sh
            place = place_of(p, q, es, old)
            ms, err = run(fn, data[sh], True, place, es, old, panel)
            print(f"  {b}x{p}x{q} place {place}: {ms:.3f} ms  {'' if stopped else err}", flush=True)


if __name__ == "__main__":
    main()
