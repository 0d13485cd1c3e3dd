// The `warp-ql` and `warp-bisect` eigh kernels (kernels/eigh.cu, bl_eigh_wql) run on the host: one warp, 32/N
// matrices (a group of N lanes each), a thread a lane, the warp intrinsics by barriers
// (warp_emu.h), dynamic shared memory a static buffer. Built by eigh_wql_emu.py.
#include <atomic>
#include "warp_emu.h"
alignas(16) unsigned char bl_smem[1 << 20];
std::atomic<int> g_paths[2];  // lanes that took tql2, the fast path (a group's N lanes each)
#define BL_EIGH_PATH_HOOK(fast) g_paths[(fast) ? 1 : 0]++;
#define BL_NO_DEFAULT_INST
#include "common_host.cu"
#include "eigh.cu"

// nmat matrices n x n row-major (lower triangle read) at a; w nmat x n; v nmat x n x n (NULL:
// values alone); N the padded size (8, 16, 32).
template <typename T, bool F> int eigh(const T* a, int nmat, int n, int N, T* w, T* v, unsigned* info) {
    EighArgs g{};
    g.a = a; g.a_bs = (long long)n * n; g.a_rs = n; g.a_cs = 1;
    g.w = w; g.w_bs = n; g.w_cs = 1;
    g.v = v; g.v_bs = (long long)n * n; g.v_rs = n; g.v_cs = 1;
    g.info = info; g.n = n; g.lower = 1; g.nmat = nmat;
    if (N == 8) emu_run_warp([&] { bl_eigh_wql<T, 8, F>(g); });
    else if (N == 16) emu_run_warp([&] { bl_eigh_wql<T, 16, F>(g); });
    else emu_run_warp([&] { bl_eigh_wql<T, 32, F>(g); });
    return 0;
}
// fast: 1 for `warp-bisect`, 0 for `warp-ql`.
extern "C" int eigh_f32(const float* a, int nm, int n, int N, float* w, float* v, unsigned* info, int fast) {
    return fast ? eigh<float, true>(a, nm, n, N, w, v, info) : eigh<float, false>(a, nm, n, N, w, v, info);
}
extern "C" int eigh_f64(const double* a, int nm, int n, int N, double* w, double* v, unsigned* info, int fast) {
    return fast ? eigh<double, true>(a, nm, n, N, w, v, info) : eigh<double, false>(a, nm, n, N, w, v, info);
}
extern "C" void path_counts(int* out) { out[0] = g_paths[0]; out[1] = g_paths[1]; }
