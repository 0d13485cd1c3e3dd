// The warp SVD kernel (kernels/svd.cu, bl_svd_warp) run on the host, one matrix at a time:
// a thread a lane, the warp intrinsics by barriers (warp_emu.h). Built by svd_warp_emu.py.
#include "warp_emu.h"
#define BL_NO_DEFAULT_INST
#include "common_host.cu"
#include "svd.cu"

template <typename T, int P, int Q> void run_one(SvdArgs g) {
    emu_run_warp([&] { bl_svd_warp<T, P, Q>(g); });
}
// m x n row-major A; U m x uc row-major, Vh vr x n row-major; vectors: u != NULL.
template <typename T> int svd(const T* a, int m, int n, int full, T* u, T* s, T* vh, unsigned* info) {
    SvdArgs g{};
    const bool wide = m < n;
    const int p = wide ? n : m, q = wide ? m : n, k = q;
    const bool vec = u != nullptr;
    const int xc = vec && full ? p : q;
    const int uc = full ? m : k, vr = full ? n : k;
    g.a = a;
    if (!wide) { g.a_rs = n; g.a_cs = 1; } else { g.a_rs = 1; g.a_cs = n; }
    g.s = s; g.s_cs = 1;
    if (vec) {
        if (!wide) { g.x = u; g.x_rs = uc; g.x_cs = 1; g.y = vh; g.y_rs = 1; g.y_cs = n; }
        else { g.x = vh; g.x_rs = 1; g.x_cs = n; g.y = u; g.y_rs = uc; g.y_cs = 1; }
    }
    (void)vr;
    g.info = info; g.p = p; g.q = q; g.xcols = xc; g.sign_from_v = wide; g.max_sweeps = 40; g.nmat = 1;
    const bool f = sizeof(T) == 4;
    if (p <= 16 && q <= 16) run_one<T, 16, 16>(g);
    else if (p <= 32 && q <= 16) run_one<T, 32, 16>(g);
    else if (p <= 32) run_one<T, 32, 32>(g);
    else if (f && q <= 16) run_one<T, 64, 16>(g);
    else if (f) run_one<T, 64, 32>(g);
    else return -1;
    return 0;
}
extern "C" int svd_f32(const float* a, int m, int n, int full, float* u, float* s, float* vh, unsigned* info) { return svd(a, m, n, full, u, s, vh, info); }
extern "C" int svd_f64(const double* a, int m, int n, int full, double* u, double* s, double* vh, unsigned* info) { return svd(a, m, n, full, u, s, vh, info); }
