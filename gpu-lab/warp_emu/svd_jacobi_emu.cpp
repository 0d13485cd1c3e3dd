// The `jacobi` SVD kernel (kernels/svd.cu, bl_svd_jacobi) run on the host, one matrix at a
// time as a block of one warp (warp_emu.h), U and V in a global work buffer (as the kernel
// places them where they do not fit in shared memory). Columns of 65 rows or more: a whole
// warp a column pair (the emulator's shuffles wait on the whole warp). Built by
// svd_jacobi_emu.py.
#include "warp_emu.h"
alignas(16) unsigned char bl_smem[1 << 20];
#define BL_NO_DEFAULT_INST
#include "common_host.cu"
#include "svd.cu"

// m x n row-major A (a wide one decomposed as its transpose, as cuda/svd.rs does);
// u: m x uc row-major, vh: vr x n row-major (full: uc = m, vr = n; else k = min(m, n));
// u == NULL: values alone. Returns -1 for a shape the emulator cannot run.
template <typename T> int svd(const T* a, int m, int n, int full, T* u, T* s, T* vh, unsigned* info) {
    const bool wide = m < n;
    const int p = wide ? n : m, q = wide ? m : n;
    if (p < 65) return -1;
    const bool vec = u != nullptr;
    const int xc = vec && full ? p : q, uc = full ? m : q, vr = full ? n : q;
    SvdArgs g{};
    g.a = a;
    if (!wide) { g.a_rs = n; g.a_cs = 1; } else { g.a_rs = 1; g.a_cs = n; }
    g.s = s; g.s_cs = 1;
    if (vec) {
        // Tall: work U -> U, work V -> Vh^T. Wide: work U -> Vh^T, work V -> U.
        if (!wide) { g.x = u; g.x_rs = uc; g.x_cs = 1; g.y = vh; g.y_rs = 1; g.y_cs = n; }
        else { g.x = vh; g.x_rs = 1; g.x_cs = n; g.y = u; g.y_rs = uc; g.y_cs = 1; }
    }
    (void)vr;
    g.info = info; g.p = p; g.q = q; g.xcols = xc; g.ldu = p; g.sign_from_v = wide;
    g.max_sweeps = 40; g.lpp = 32; g.nmat = 1;
    const size_t big = vec ? (size_t)p * xc + (size_t)q * q : (size_t)p * q;
    std::vector<double> work(big);
    g.work = work.data(); g.work_bs = (long long)big;
    emu_run_warp([&] { bl_svd_jacobi<T, double>(g); });
    return 0;
}
extern "C" int svd_f32(const float* a, int m, int n, int full, float* u, float* s, float* vh, unsigned* info) { return svd(a, m, n, full, u, s, vh, info); }
extern "C" int svd_f64(const double* a, int m, int n, int full, double* u, double* s, double* vh, unsigned* info) { return svd(a, m, n, full, u, s, vh, info); }
