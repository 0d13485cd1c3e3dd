// The `jacobi` SVD kernel (kernels/svd.cu, bl_svd_jacobi) run on the host, one matrix at a
// time as a block of one warp (warp_emu.h), U and V in a global work buffer (as the kernel
// places them where they do not fit in shared memory). Columns of 65 rows or more: a whole
// warp a column pair (the emulator's shuffles wait on the whole warp). Built by
// svd_warp_emu.py jacobi.
#include "warp_emu.h"
alignas(16) unsigned char bl_smem[1 << 20];
#define BL_NO_DEFAULT_INST
#include "common_host.cu"
#include "svd.cu"
#include "svd_emu_args.h"

// Returns -1 for a shape the emulator cannot run.
template <typename T> int svd(const T* a, int m, int n, int full, T* u, T* s, T* vh, unsigned* info) {
    SvdArgs g = svd_emu_args(a, m, n, full, u, s, vh, info);
    const int p = g.p, q = g.q, xc = g.xcols;
    if (p < 65) return -1;
    const bool vec = u != nullptr;
    g.ldu = p; g.lpp = 32;
    const size_t big = vec ? (size_t)p * xc + (size_t)q * q : (size_t)p * q;
    std::vector<double> work(big);
    g.work = work.data(); g.work_bs = (long long)big;
    emu_run_warp([&] { bl_svd_jacobi<T, double>(g); });
    return 0;
}
extern "C" int svd_f32(const float* a, int m, int n, int full, float* u, float* s, float* vh, unsigned* info) { return svd(a, m, n, full, u, s, vh, info); }
extern "C" int svd_f64(const double* a, int m, int n, int full, double* u, double* s, double* vh, unsigned* info) { return svd(a, m, n, full, u, s, vh, info); }
