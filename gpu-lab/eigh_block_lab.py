"""Variants of the `block` eigh kernel (kernels/eigh.cu) timed side by side through CuPy's
NVRTC, no library build: the library's source with a textual change, its registers,
spills, time (CUDA events, median of 5) and errors (||A V - V diag(w)|| / ||A||,
||V^T V - I||, in float64) on symmetric Gaussian batches, vectors wanted (the fast
path; a matrix it declines goes to tql2 as in the library). Where the time goes: the
kernel stopped after the load and scaling (`stop1`), the tridiagonalisation (`stop2`),
the eigenvalues' bisection (`stop3`), the twisted factorisations (`stop4`), the close
values' orthogonalisation, sort and X's write (`stop5`); `full` is the whole kernel.
`t128` launches 128 threads a block where n is smaller (the library: n rounded up to
warps), `m2` asks for two blocks an SM (64 registers a thread at 512 threads); `s2t128`,
`s2t256`: the kernel stopped after the tridiagonalisation at 128 or 256 threads and 64
registers; `apply`: the reflectors' apply as a kernel of its own at several thread
counts (`lab_apply`, random reflectors: the time does not depend on the values); `unroll` unrolls
the tridiagonalisation's row loops by 4, `nb16` and `nb32` apply 16 or 32 reflectors a
block at every n (the rule: 32 from 96); `noun`: the apply's loops not unrolled (the
library: by 4); the fast path's serial loops over its global scratch unrolled
(nvrtc_lab.loop_variants: `tw4`, `tw8`, `lw4`, `twlw4`; `fx4` bl_eigh_fast's own, `all4`).
With a path to an earlier eigh.cu as its argument, that source is timed first (`base`;
it must compile against today's common.cu; it runs under the layout before 2026-12-04's
vector rows, ld odd).

    python3 gpu-lab/eigh_block_lab.py [old eigh.cu] [float|double]   # on the GPU machine

`p8`, `p32`: panels of 8 or 32 steps where A is in global memory (the library: 16);
`s2p8`, `s2p32` the same stopped after the tridiagonalisation.
LAB_VARIANTS=full,stop2 picks variants, LAB_SHAPES=1024x64x64,.. shapes; LAB_COMPILE_ONLY=1
compiles and times nothing; LAB_LINEINFO=1 compiles with -lineinfo (for ncu's source page).
"""
import os, sys
import cupy as cp
import numpy as np

from nvrtc_lab import NO_UNROLL, apply_subs, loop_variants, median_ms, source

COMMON = source("common.cu")
EIGH = source("eigh.cu")

LAB = r"""
extern "C" __global__ void __launch_bounds__(MAXT, MINB) lab(const T* a, T* w, T* v, unsigned* info,
        T* work, long long work_bs, int n, int ld, int a_global) {
    EighArgs g{};
    g.a = a; g.a_bs = (bl_i64)n * n; g.a_rs = n; g.a_cs = 1;
    g.w = w; g.w_bs = n; g.w_cs = 1;
    g.v = v; g.v_bs = (bl_i64)n * n; g.v_rs = n; g.v_cs = 1;
    g.info = info; g.work = work; g.work_bs = work_bs;
    g.n = n; g.lower = 1; g.ld = ld; g.nmat = 1 << 30; g.a_global = a_global; g.fast = 1;
    bl_eigh_block<T>(g);
}
// The apply alone (`apply`): Y (n x n, row-major) <- (1 (+) Q') Y as the fast path calls it,
// the reflectors' matrix (n x ld) copied into shared memory first; any values time alike.
extern "C" __global__ void __launch_bounds__(MAXT, MINB) lab_apply(const T* r, const T* tau, T* y, T* z,
        int n, int ld, long long zs) {
    extern __shared__ __align__(16) unsigned char bl_smem[];
    T* R = reinterpret_cast<T*>(bl_smem);
    const bl_i64 b = blockIdx.x;
    for (int i = threadIdx.x; i < n * ld; i += blockDim.x) R[i] = r[b * n * ld + i];
    __syncthreads();
    const BlRefl<T> rq{R + ld, tau + b * n, y + b * n * n + n, z + b * zs, n, 1, 1, ld, n - 1, n - 1, n, bl_refl_nb(n)};
    bl_refl_apply<T>(rq);
}
"""

# Each stop's (the text a statement goes before, the statement) pairs: the stops within
# bl_eigh_vectors (3: after the bisection, 4: after the twisted factorisations) return X0
# and bl_eigh_fast then returns true, so that tql2 does not take the matrix.
FAST_ENDS = ("    // Ascending order (bisection's", "    if (STOP == 3 || STOP == 4) return true;\n")
STOPS = [
    [("    // Tridiagonalisation: step k", "    if (STOP == 1) return;\n")],
    [("    // The fast path: vectors without", "    if (STOP == 2) return;\n")],
    [("    int* fl = msg + 4;", "    if (STOP == 3) return X0;\n"), FAST_ENDS],
    [("    const T big = BlT<T>::abs_(sig[0])", "    if (STOP == 4) return X0;\n"), FAST_ENDS],
    [("    bl_refl_explicit(R, 1, ld, n - 1);", "    if (STOP == 5) return true;\n")],
]


def build(stop=0, dtype="float", src=None, subs=(), minb=1, maxt=512, name="lab"):
    """The lab kernel over common.cu and `src` (eigh.cu), each textual change `subs`
    applied to whichever of the two holds it."""
    src = src or EIGH
    common = COMMON
    src, common = apply_subs(src, common, subs)
    for at, cut in STOPS[stop - 1] if stop else []:
        assert src.count(at) == 1, at
        src = src.replace(at, cut + at)
    code = f"#define BL_NO_DEFAULT_INST\n#define STOP {stop}\n" + common + "\n" + src + f"\n#define T {dtype}\n#define MINB {minb}\n#define MAXT {maxt}\n" + LAB
    opts = ("--std=c++17",) + (("-lineinfo",) if os.environ.get("LAB_LINEINFO") else ())
    return cp.RawKernel(code, name, options=opts)


def layout(n, es, old=False):
    """(ld, small bytes) as cuda/eigh.rs; `old`: the rule before 2026-12-04's vector rows
    (ld odd), for an earlier eigh.cu."""
    if old:
        return n | 1, (9 * n + 32) * es + (8 + n) * 4
    vn = 16 // es
    l = -(-n // vn)
    return (l if l % 2 else l + 1) * vn, (2 * l * vn + 7 * n + 32) * es + (8 + n) * 4


def run(fn, a, es, nt=None, old=False, smem_cap=232448, panel=16):
    """One launch a matrix as the library's (cuda/eigh.rs run_block): A in shared memory
    where it fits, else A and the panels' V and W (2 x `panel` x n) in global memory; the fast
    path's 3 n^2 scratch in global memory; a matrix's work whole 16-byte vectors."""
    b, n, _ = a.shape
    ld, small = layout(n, es, old)
    big = n * ld * es
    in_smem = big + small <= smem_cap
    smem = big + small if in_smem else small
    vn = 16 // es
    per = -(-((0 if in_smem else n * ld + 2 * panel * n) + 3 * n * n) // vn) * vn
    fn.max_dynamic_shared_size_bytes = smem
    nt = nt or min(max(-(-n // 32), 1), 16) * 32
    w = cp.empty((b, n), a.dtype)
    v = cp.empty((b, n, n), a.dtype)
    info = cp.zeros(b, cp.uint32)
    work = cp.empty(per * b, a.dtype)
    args = (a, w, v, info, work, np.int64(per), np.int32(n), np.int32(ld), np.int32(0 if in_smem else 1))
    call = lambda: fn((b,), (nt,), args, shared_mem=smem)
    ms = median_ms(call)
    k = min(b, 16)
    a64, w64, v64 = (x[:k].astype(cp.float64) for x in (a, w, v))
    na = cp.linalg.norm(a64.reshape(k, -1), axis=1)
    res = cp.linalg.norm((a64 @ v64 - v64 * w64[:, None, :]).reshape(k, -1), axis=1) / na
    orth = cp.linalg.norm((v64.transpose(0, 2, 1) @ v64 - cp.eye(n)).reshape(k, -1), axis=1)
    bad = int(((info & 3) != 0).sum())
    err = f"res {float(res.max()):.1e} orth {float(orth.max()):.1e}" + (f" BAD {bad}" if bad else "")
    return ms, err


def apply_only(dtype, es, shapes, rng):
    """The apply as a kernel of its own (`lab_apply`) at several thread counts: what the
    fast path's apply would take split from the rest (its 64 threads and 128 registers)."""
    npt = np.float32 if es == 4 else np.float64
    for nt, maxt, minb in [(64, 512, 1), (128, 128, 8), (256, 256, 4), (512, 512, 2)]:
        fn = build(dtype=dtype, minb=minb, maxt=maxt, name="lab_apply")
        print(f"== apply nt {nt} bounds ({maxt}, {minb}): {fn.num_regs} registers, {fn.local_size_bytes} B local", flush=True)
        if os.environ.get("LAB_COMPILE_ONLY"):
            continue
        for b, n, _ in shapes:
            ld = layout(n, es)[0]
            nb = 32 if n >= 96 else 16
            zs = nb * (n + nb) + 4 * nb  # tiles past Z's rows read a little beyond
            r = cp.asarray((rng.standard_normal((b, n, ld)) * 0.1).astype(npt))
            tau = cp.asarray(rng.uniform(0, 2, (b, n)).astype(npt))
            y = cp.asarray(rng.standard_normal((b, n, n)).astype(npt))
            z = cp.zeros(b * zs, npt)
            smem = (n + 4) * ld * es  # the tiles read up to 3 rows past the reflectors
            if smem > 232448:
                continue
            fn.max_dynamic_shared_size_bytes = smem
            call = lambda: fn((b,), (nt,), (r, tau, y, z, np.int32(n), np.int32(ld), np.int64(zs)), shared_mem=smem)
            print(f"  {b}x{n}x{n}: {median_ms(call):.3f} ms", flush=True)


def main():
    rng = np.random.default_rng(0)
    base = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1].endswith(".cu") else None
    dtype = sys.argv[-1] if sys.argv[-1] in ("float", "double") else "float"
    npt, es = (np.float32, 4) if dtype == "float" else (np.float64, 8)
    shapes = [(4096, 48, 48), (1024, 64, 64), (1024, 128, 128), (256, 256, 256)]
    if os.environ.get("LAB_SHAPES"):
        shapes = [tuple(int(x) for x in sh.split("x")) for sh in os.environ["LAB_SHAPES"].split(",")]
    data = {}
    for sh in shapes:
        x = rng.standard_normal(sh)
        data[sh] = cp.asarray(((x + x.transpose(0, 2, 1)) / 2).astype(npt))
    variants = ([("base", dict(src=open(base).read(), old=True))] if base else []) + [("full", {})]
    variants += [(f"stop{s}", dict(stop=s)) for s in range(1, 6)]
    variants += [("t128", dict(nt=128)), ("t128m2", dict(nt=128, minb=2)), ("m2", dict(minb=2))]
    loop = "for (int c = j0 + gl * VN; c < n; c += lpr * VN) {"
    rule = "#define BL_REFL_WIDE_FROM 96\n"
    variants += [("unroll", dict(subs=[(loop, "_Pragma(\"unroll 4\") " + loop)])),
                 ("nb16", dict(subs=[(rule, rule.replace("96", "100000"))])),
                 ("nb32", dict(subs=[(rule, rule.replace("96", "0"))])),
                 NO_UNROLL] + loop_variants(COMMON)
    # bl_eigh_fast's own loops over its global scratch (a vector's scaling, the norms).
    fx = [(a, a.replace("for (int i", '_Pragma("unroll 4") for (int i')) for a in
          ("        for (int i = 0; i < n; ++i) X0[(bl_i64)i * n + k] *= inv;",
           "        for (int i = 0; i < n; ++i) s2 += X[(bl_i64)i * n + k] * X[(bl_i64)i * n + k];")]
    variants += [("fx4", dict(subs=fx)), ("all4", dict(subs=fx + loop_variants(COMMON)[-1][1]["subs"]))]
    # Panels of 8 or 32 steps where A is in global memory (BL_EIGH_PANEL; the library 16).
    pdef = "#define BL_EIGH_PANEL 16\n"
    variants += [(f"p{w}", dict(panel=w, subs=[(pdef, pdef.replace("16", str(w)))])) for w in (8, 32)]
    variants += [(f"s2p{w}", dict(stop=2, panel=w, subs=[(pdef, pdef.replace("16", str(w)))])) for w in (8, 32)]
    # The tridiagonalisation alone (stop2) with more threads and 64 registers a thread.
    variants += [("s2t128", dict(stop=2, nt=128, maxt=128, minb=8)), ("s2t256", dict(stop=2, nt=256, maxt=256, minb=4))]
    pick = os.environ.get("LAB_VARIANTS")
    if pick:
        variants = [v for v in variants if v[0] in pick.split(",")]
        if "apply" in pick.split(","):
            apply_only(dtype, es, shapes, rng)
    for name, kw in variants:
        nt, old, panel = kw.pop("nt", None), kw.pop("old", False), kw.pop("panel", 16)
        stopped = bool(kw.get("stop"))  # its outputs unwritten: no errors shown
        fn = build(dtype=dtype, **kw)
        print(f"== {name} ({dtype}): {fn.num_regs} registers, {fn.local_size_bytes} B local", flush=True)
        if os.environ.get("LAB_COMPILE_ONLY"):
            continue
        for sh in shapes:
            b, n, _ = sh
            ms, err = run(fn, data[sh], es, nt=max(nt, 32 * -(-n // 32)) if nt else None, old=old, panel=panel)
            print(f"  {b}x{n}x{n}: {ms:.3f} ms  {'' if stopped else err}", flush=True)


if __name__ == "__main__":
    main()
