// The `bidiag` SVD kernel (kernels/svd.cu, bl_svd_bidiag) run on the host, one matrix at a
// time as a block of one warp: a thread a lane, the warp intrinsics and __syncthreads by
// barriers (warp_emu.h), shared memory a static buffer. Built by svd_warp_emu.py bidiag.
#include "warp_emu.h"
#include <cstdlib>
alignas(16) unsigned char bl_smem[1 << 20];
// Matrices by path: [0] the QR iteration, [1] the fast path (thread 0 counts).
std::atomic<int> g_paths[2];
#define BL_SVD_PATH_HOOK(fast) \
    if (threadIdx.x == 0) g_paths[(fast) ? 1 : 0]++;
#define BL_NO_DEFAULT_INST
#include "common_host.cu"
#include "svd.cu"  // its `extern __shared__` bl_smem is the buffer above
#include "svd_emu_args.h"

template <typename T> void run_one(SvdArgs g) {
    emu_run_warp([&] { bl_svd_bidiag<T>(g); });
}
// Thin factors (or full ones of a square matrix) alone: as cuda/svd.rs takes them.
template <typename T> int svd(const T* a, int m, int n, int full, T* u, T* s, T* vh, unsigned* info) {
    SvdArgs g = svd_emu_args(a, m, n, full, u, s, vh, info);
    const int p = g.p, q = g.q;
    const bool vec = u != nullptr;
    if (full && p != q) return -1;
    // cuda/svd.rs ld_vectors: whole 16-byte vectors, an odd number of them.
    const int vn = 16 / sizeof(T), l = (p + vn - 1) / vn;
    g.ldu = (l % 2 ? l : l + 1) * vn; g.ldv = q | 1;
    // EMU_A_GLOBAL=1: place 2, A (and V with vectors) in `work` as cuda/svd.rs bidiag_shape
    // places them where A does not fit in shared memory: A, the panels (BL_SVD_PANEL), V,
    // then the fast path's scratch, whole 16-byte vectors and 16-byte aligned (the panels
    // are read as vectors). Else place 0: the fast path's scratch alone.
    const bool glob = getenv("EMU_A_GLOBAL") && *getenv("EMU_A_GLOBAL") == '1';
    g.place = glob ? 2 : 0;
    const size_t qq = (size_t)q * q;
    size_t len = 5 * qq + 1;
    if (glob) {
        len = (size_t)g.ldu * q + 2 * BL_SVD_PANEL * (size_t)(p + q) + (vec ? (size_t)g.ldv * q + 5 * qq : 0);
        len = (len + vn - 1) / vn * vn;
    }
    std::vector<T> work(len + 16 / sizeof(T));
    T* w0 = work.data();
    while ((uintptr_t)w0 % 16) ++w0;
    g.work = w0; g.work_bs = (long long)len;
    run_one<T>(g);
    return 0;
}
extern "C" int svd_f32(const float* a, int m, int n, int full, float* u, float* s, float* vh, unsigned* info) { return svd(a, m, n, full, u, s, vh, info); }
extern "C" int svd_f64(const double* a, int m, int n, int full, double* u, double* s, double* vh, unsigned* info) { return svd(a, m, n, full, u, s, vh, info); }
extern "C" void path_counts(int* out) { out[0] = g_paths[0]; out[1] = g_paths[1]; }
