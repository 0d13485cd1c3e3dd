// The `bidiag` SVD kernel (kernels/svd.cu, bl_svd_bidiag) run on the host, one matrix at a
// time as a block of one warp: a thread a lane, the warp intrinsics and __syncthreads by
// barriers (warp_emu.h), shared memory a static buffer. Built by svd_warp_emu.py bidiag.
#include "warp_emu.h"
alignas(16) unsigned char bl_smem[1 << 20];
// Matrices by path: [0] the QR iteration, [1] the fast path (thread 0 counts).
std::atomic<int> g_paths[2];
#define BL_SVD_PATH_HOOK(fast) \
    if (threadIdx.x == 0) g_paths[(fast) ? 1 : 0]++;
#define BL_NO_DEFAULT_INST
#include "common_host.cu"
#include "svd.cu"  // its `extern __shared__` bl_smem is the buffer above

template <typename T> void run_one(SvdArgs g) {
    emu_run_warp([&] { bl_svd_bidiag<T>(g); });
}
// m x n row-major A; U m x k row-major, Vh k x n row-major (thin); vectors: u != NULL.
template <typename T> int svd(const T* a, int m, int n, int full, T* u, T* s, T* vh, unsigned* info) {
    SvdArgs g{};
    const bool wide = m < n;
    const int p = wide ? n : m, q = wide ? m : n, k = q;
    const bool vec = u != nullptr;
    if (full && p != q) return -1;
    g.a = a;
    if (!wide) { g.a_rs = n; g.a_cs = 1; } else { g.a_rs = 1; g.a_cs = n; }
    g.s = s; g.s_cs = 1;
    if (vec) {
        if (!wide) { g.x = u; g.x_rs = k; g.x_cs = 1; g.y = vh; g.y_rs = 1; g.y_cs = n; }
        else { g.x = vh; g.x_rs = 1; g.x_cs = n; g.y = u; g.y_rs = k; g.y_cs = 1; }
    }
    g.info = info; g.p = p; g.q = q; g.xcols = q; g.sign_from_v = wide; g.nmat = 1;
    // cuda/svd.rs ld_vectors: whole 16-byte vectors, an odd number of them.
    const int vn = 16 / sizeof(T), l = (p + vn - 1) / vn;
    g.ldu = (l % 2 ? l : l + 1) * vn; g.ldv = q | 1; g.place = 0;
    std::vector<T> work(5 * (size_t)q * q + 1);  // the fast path's scratch (cuda/svd.rs)
    g.work = work.data(); g.work_bs = (long long)work.size();
    run_one<T>(g);
    return 0;
}
extern "C" int svd_f32(const float* a, int m, int n, int full, float* u, float* s, float* vh, unsigned* info) { return svd(a, m, n, full, u, s, vh, info); }
extern "C" int svd_f64(const double* a, int m, int n, int full, double* u, double* s, double* vh, unsigned* info) { return svd(a, m, n, full, u, s, vh, info); }
extern "C" void path_counts(int* out) { out[0] = g_paths[0]; out[1] = g_paths[1]; }
