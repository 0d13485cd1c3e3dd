// The warp SVD kernel (kernels/svd.cu, bl_svd_warp) run on the host, one matrix at a time:
// a thread a lane, the warp intrinsics by barriers (warp_emu.h). Built by svd_warp_emu.py.
#include "warp_emu.h"
#define BL_NO_DEFAULT_INST
#include "common_host.cu"
#include "svd.cu"
#include "svd_emu_args.h"

template <typename T, int P, int Q> void run_one(SvdArgs g) {
    emu_run_warp([&] { bl_svd_warp<T, P, Q>(g); });
}
template <typename T> int svd(const T* a, int m, int n, int full, T* u, T* s, T* vh, unsigned* info) {
    SvdArgs g = svd_emu_args(a, m, n, full, u, s, vh, info);
    const int p = g.p, q = g.q;
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
