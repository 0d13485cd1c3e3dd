"""The cluster prototype (gpu-lab/eigh_cluster.cu) timed on the GPU through CuPy's NVRTC,
no library build (docs/proposals/gpu-large-matrices.md, step 2): a matrix a cluster of
CL blocks of NT threads (`__cluster_dims__`, so a plain launch), the tridiagonalisation
alone and the whole eigh, against `block`'s (eigh_block_lab's `stop2` and `full`, one
block a matrix) at the same shapes. Checked (first 4 matrices, float64, relative to
||A||): the tridiagonal's eigenvalues against cupy.linalg.eigvalsh of the matrix; the
whole eigh's values, residual and orthogonality.

    python3 gpu-lab/eigh_cluster_lab.py [float|double]   # on the GPU machine (CuPy)

LAB_SHAPES=1x1024x1024,.. shapes; LAB_CONFIGS=8x512,4x1024,.. (blocks a cluster x threads a
block); LAB_COMPILE_ONLY=1 compiles and times nothing.
"""
import os, sys
import cupy as cp
import numpy as np

import eigh_block_lab
from nvrtc_lab import median_ms, source

HERE = os.path.dirname(os.path.abspath(__file__))
COMMON = source("common.cu")
EIGH = source("eigh.cu")
CLUSTER = open(os.path.join(HERE, "eigh_cluster.cu")).read()

LAB = r"""
extern "C" __global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(NT, 1)
lab(T* a, int ld, int n, T* vw, T* d, T* e, T* tau, long long a_bs, long long vw_bs) {
    const long long b = blockIdx.x / CL;
    T* V = vw + b * vw_bs;
    bl_tridiag_cluster<T>(a + b * a_bs, ld, n, V, V + (long long)BL_EIGH_PANEL * n, d + b * n, e + b * n,
                          tau + b * n, CL);
}
// The whole eigh: a matrix's work in one piece of `work` (Aw with 4 rows more, V and W,
// d, e, tau, the vectors' scratch, then Z a block), its 8 message ints in `msgs`.
extern "C" __global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(NT, 1)
lab_eigh(const T* a, T* w, T* v, T* work, int* msgs, int ld, int n, long long work_bs, int* declined) {
    const long long b = blockIdx.x / CL;
    const long long nn = (long long)n * n;
    T* Aw = work + b * work_bs;
    T* V = Aw + (long long)(n + 4) * ld;
    T* W = V + (long long)BL_EIGH_PANEL * n;
    T* d = W + (long long)BL_EIGH_PANEL * n;
    T* e = d + n;
    T* tau = e + n;
    T* ws = tau + n;
    T* Z = ws + 3 * n + 3 * nn + (long long)bl_cl_rank() * BL_REFL_NB_WIDE * (n + BL_REFL_NB_WIDE);
    const bool ok = bl_eigh_cluster<T>(a + b * nn, n, Aw, ld, V, W, d, e, tau, ws, msgs + 8 * b, w + b * n,
                                       v + b * nn, Z, CL);
    if (!ok && threadIdx.x == 0 && bl_cl_rank() == 0) declined[b] = 1;
}
"""


def build(cl, nt, dtype, name="lab"):
    code = (f"#define BL_NO_DEFAULT_INST\n" + COMMON + "\n" + EIGH + "\n" + CLUSTER
            + f"\n#define T {dtype}\n#define CL {cl}\n#define NT {nt}\n" + LAB)
    return cp.RawKernel(code, name, options=("--std=c++17",))


def run(fn, a, cl, nt):
    """One cluster a matrix; A copied into a work matrix of odd vector rows (cuda/eigh.rs's
    ld) each call (timed with it: a copy of the batch, a few us)."""
    b, n, _ = a.shape
    es = a.dtype.itemsize
    vn = 16 // es
    l = -(-n // vn)
    ld = (l if l % 2 else l + 1) * vn
    w = cp.zeros((b, n, ld), a.dtype)
    vw_bs = 2 * 16 * n
    vw = cp.empty(b * vw_bs, a.dtype)
    d, e, tau = (cp.empty((b, n), a.dtype) for _ in range(3))
    nv = -(-n // vn) * vn
    smem = (2 * nv + 32 + 2 * 16 + 2) * es
    fn.max_dynamic_shared_size_bytes = smem
    args = (w, np.int32(ld), np.int32(n), vw, d, e, tau, np.int64(n * ld), np.int64(vw_bs))

    def call():
        w[:, :, :n] = a
        fn((b * cl,), (nt,), args, shared_mem=smem)
    ms = median_ms(call)
    k = min(b, 4)
    d64, e64 = d[:k].astype(cp.float64), e[:k].astype(cp.float64)
    t = cp.zeros((k, n, n))
    i = cp.arange(n)
    t[:, i, i] = d64
    t[:, i[:-1], i[:-1] + 1] = e64[:, :-1]
    t[:, i[:-1] + 1, i[:-1]] = e64[:, :-1]
    a64 = a[:k].astype(cp.float64)
    err = cp.abs(cp.linalg.eigvalsh(t) - cp.linalg.eigvalsh(a64)).max(axis=1) / cp.linalg.norm(a64.reshape(k, -1), axis=1)
    return ms, f"val {float(err.max()):.1e}"


def run_eigh(fn, a, cl, nt):
    """The whole eigh, a cluster a matrix; errors of the first 4 matrices in float64."""
    b, n, _ = a.shape
    es = a.dtype.itemsize
    vn = 16 // es
    l = -(-n // vn)
    ld = (l if l % 2 else l + 1) * vn
    nb = 32
    work_bs = (n + 4) * ld + 2 * 16 * n + 6 * n + 3 * n * n + cl * nb * (n + nb)
    work_bs = -(-work_bs // vn) * vn
    work = cp.zeros(b * work_bs, a.dtype)
    msgs = cp.zeros(8 * b, cp.int32)
    declined = cp.zeros(b, cp.int32)
    w = cp.empty((b, n), a.dtype)
    v = cp.empty((b, n, n), a.dtype)
    nv = -(-n // vn) * vn
    smem = (2 * nv + 34 + 2 * 16) * es + 4 * n
    fn.max_dynamic_shared_size_bytes = smem
    args = (a, w, v, work, msgs, np.int32(ld), np.int32(n), np.int64(work_bs), declined)

    def call():
        msgs.fill(0)
        fn((b * cl,), (nt,), args, shared_mem=smem)
    ms = median_ms(call)
    k = min(b, 4)
    a64, w64, v64 = (x[:k].astype(cp.float64) for x in (a, w, v))
    na = cp.linalg.norm(a64.reshape(k, -1), axis=1)
    val = cp.abs(w64 - cp.linalg.eigvalsh(a64)).max(axis=1) / na
    res = cp.linalg.norm((a64 @ v64 - v64 * w64[:, None, :]).reshape(k, -1), axis=1) / na
    orth = cp.linalg.norm((v64.transpose(0, 2, 1) @ v64 - cp.eye(n)).reshape(k, -1), axis=1)
    dec = int(declined.sum())
    return ms, (f"val {float(val.max()):.1e} res {float(res.max()):.1e} orth {float(orth.max()):.1e}"
                + (f" DECLINED {dec}" if dec else ""))


def main():
    dtype = sys.argv[-1] if sys.argv[-1] in ("float", "double") else "float"
    npt = np.float32 if dtype == "float" else np.float64
    shapes = [(1, 1024, 1024), (4, 1024, 1024), (16, 1024, 1024), (16, 512, 512), (1, 2048, 2048)]
    if os.environ.get("LAB_SHAPES"):
        shapes = [tuple(int(x) for x in sh.split("x")) for sh in os.environ["LAB_SHAPES"].split(",")]
    configs = [(8, 512), (8, 1024), (4, 1024), (2, 1024), (1, 1024)]
    if os.environ.get("LAB_CONFIGS"):
        configs = [tuple(int(x) for x in c.split("x")) for c in os.environ["LAB_CONFIGS"].split(",")]
    rng = np.random.default_rng(0)
    data = {}
    for sh in shapes:
        x = rng.standard_normal(sh)
        data[sh] = cp.asarray(((x + x.transpose(0, 2, 1)) / 2).astype(npt))
    for cl, nt in configs:
        fn = build(cl, nt, dtype)
        print(f"== cluster {cl} x {nt} ({dtype}): {fn.num_regs} registers, {fn.local_size_bytes} B local", flush=True)
        fe = build(cl, nt, dtype, "lab_eigh")
        print(f"   whole eigh: {fe.num_regs} registers, {fe.local_size_bytes} B local", flush=True)
        if os.environ.get("LAB_COMPILE_ONLY"):
            continue
        for sh in shapes:
            ms, err = run(fn, data[sh], cl, nt)
            print(f"  {sh[0]}x{sh[1]}x{sh[2]} tridiagonal: {ms:.3f} ms  {err}", flush=True)
            ms, err = run_eigh(fe, data[sh], cl, nt)
            print(f"  {sh[0]}x{sh[1]}x{sh[2]} eigh: {ms:.3f} ms  {err}", flush=True)
    # `block`'s tridiagonalisation alone and its whole eigh, one block a matrix (with its
    # load and scaling).
    es = np.dtype(npt).itemsize
    for stop in (2, 0):
        fn = eigh_block_lab.build(stop=stop, dtype=dtype)
        print(f"== block {'stop2' if stop else 'full'} ({dtype}): {fn.num_regs} registers", flush=True)
        if not os.environ.get("LAB_COMPILE_ONLY"):
            for sh in shapes:
                ms, err = eigh_block_lab.run(fn, data[sh], es)
                print(f"  {sh[0]}x{sh[1]}x{sh[2]}: {ms:.3f} ms  {err if not stop else ''}", flush=True)


if __name__ == "__main__":
    main()
