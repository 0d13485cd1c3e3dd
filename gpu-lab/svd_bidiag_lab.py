"""Variants of the `bidiag` SVD kernel (kernels/svd.cu) timed side by side through CuPy's
NVRTC, no library build: the register cap (__launch_bounds__'s minimum blocks), how far
the rotation loads run ahead, where the work lives, one division a rotation. Each
variant is the library's source with a textual change; its registers, spills, time
(CUDA events, median of 5) and errors (||A - U S V^T|| / ||A||, ||U^T U - I||,
||V^T V - I||, in float64) on Gaussian batches.

    python3 gpu-lab/svd_bidiag_lab.py          # on the GPU machine (CuPy)
"""
import os, statistics, sys
import cupy as cp
import numpy as np

K = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "batchlin", "src", "cuda", "kernels")
COMMON = open(os.path.join(K, "common.cu")).read()
SVD = open(os.path.join(K, "svd.cu")).read()

LAB = r"""
extern "C" __global__ void __launch_bounds__(512, MINB) lab(const T* a, T* u, T* s, T* v, unsigned* info,
        T* work, long long work_bs, int p, int q, int place) {
    SvdArgs g{};
    g.a = a; g.a_bs = (bl_i64)p * q; g.a_rs = q; g.a_cs = 1;
    if (u) { g.x = u; g.x_bs = (bl_i64)p * q; g.x_rs = q; g.x_cs = 1;
             g.y = v; g.y_bs = (bl_i64)q * q; g.y_rs = q; g.y_cs = 1; }
    g.s = s; g.s_bs = q; g.s_cs = 1; g.info = info; g.work = work; g.work_bs = work_bs;
    g.p = p; g.q = q; g.xcols = q; g.ldu = p | 1; g.ldv = q | 1; g.place = place;
    bl_svd_bidiag<T>(g);
}
"""

ROT_OLD = """    if (r != T(0)) {
        c = f / r;
        s = h / r;
    }"""
ROT_ONE_DIV = """    if (r != T(0)) {
        const T inv = T(1) / r;
        c = f * inv;
        s = h * inv;
    }"""


def build(minb=1, ahead=8, one_div=False, dtype="float"):
    src = SVD
    if ahead != 8:
        src = src.replace("T y[8], cc[8], ss[8];", f"T y[{ahead}], cc[{ahead}], ss[{ahead}];")
        src = src.replace("j0 += 8)", f"j0 += {ahead})").replace("u < 8; ++u)", f"u < {ahead}; ++u)")
    if one_div:
        assert ROT_OLD in src
        src = src.replace(ROT_OLD, ROT_ONE_DIV)
    code = "#define BL_NO_DEFAULT_INST\n" + COMMON + "\n" + src + f"\n#define MINB {minb}\n#define T {dtype}\n" + LAB
    return cp.RawKernel(code, "lab", options=("--std=c++17",))


def threads(p, q, vec):
    rows = p + q if vec else p
    return min(max(-(-rows // 32) + 1, 2), 16) * 32


def run(fn, a, vec, place, es=4):
    b, p, q = a.shape
    ld, ldv = p | 1, q | 1
    small = (16 * q + 2 * p + 32) * es + (q + 18) * 4
    abytes, vbytes = ld * q * es, (ldv * q * es if vec else 0)
    if place == 0:
        smem, welems = small + abytes + vbytes, 0
    elif place == 1:
        smem, welems = small + abytes, ldv * q
    else:
        smem, welems = small, ld * q + (ldv * q if vec else 0)
    fn.max_dynamic_shared_size_bytes = smem
    dt = a.dtype
    u = cp.empty((b, p, q), dt) if vec else np.uint64(0)
    v = cp.empty((b, q, q), dt) if vec else np.uint64(0)
    s = cp.empty((b, q), dt)
    info = cp.zeros(b, cp.uint32)
    work = cp.empty(max(welems * b, 1), dt)
    args = (a, u, s, v, info, work, np.int64(welems), np.int32(p), np.int32(q), np.int32(place))
    call = lambda: fn((b,), (threads(p, q, vec),), args, shared_mem=smem)
    call()
    ts = []
    for _ in range(5):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(); call(); e1.record(); e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1))
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
    return statistics.median(ts), err + (f" BAD {bad}" if bad else "")


def main():
    rng = np.random.default_rng(0)
    shapes = [(4096, 33, 33), (1024, 64, 64), (1024, 128, 128), (256, 256, 256), (32, 512, 512)]
    data = {sh: cp.asarray(rng.standard_normal(sh, dtype=np.float32)) for sh in shapes}
    variants = [("base", {}), ("minb2", dict(minb=2)), ("minb3", dict(minb=3)), ("ahead4", dict(ahead=4)),
                ("ahead1", dict(ahead=1)), ("minb2-ahead4", dict(minb=2, ahead=4)),
                ("one-div", dict(one_div=True)), ("minb2-one-div", dict(minb=2, one_div=True))]
    for name, kw in variants:
        fn = build(**kw)
        print(f"== {name}: {fn.num_regs} registers, {fn.local_size_bytes} B local", flush=True)
        for sh in shapes:
            if sh[1] == 512 and "div" not in name and name != "base":
                continue
            for place in (0, 1, 2):
                b, p, q = sh
                es = 4
                small = (16 * q + 2 * p + 32) * es + (q + 18) * 4
                need = small + ((p | 1) * q + (q | 1) * q) * es if place == 0 else small + (p | 1) * q * es if place == 1 else small
                if need > 232448:
                    continue
                ms, err = run(fn, data[sh], True, place)
                print(f"  {b}x{p}x{q} place {place}: {ms:.3f} ms  {err}", flush=True)
        if name == "base":
            for sh in shapes[:4]:
                ms, _ = run(fn, data[sh], False, 1 if sh[1] <= 128 else 2)
                print(f"  values {sh[0]}x{sh[1]}x{sh[2]}: {ms:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
