// The `block` eigh kernel (kernels/eigh.cu, bl_eigh_block) run on the host, one matrix at a
// time as a block of one warp: a thread a lane, the warp intrinsics and __syncthreads by
// barriers (warp_emu.h), shared memory a static buffer. Built by eigh_block_emu.py.
#include "warp_emu.h"
#include <cstdlib>
// eigh.cu's warp kernels compile along (they are not run here).
alignas(16) unsigned char bl_smem[1 << 20];
// Matrices by path: [0] tql2 (the fast path declined), [1] the fast path (thread 0 counts).
std::atomic<int> g_paths[2];
#define BL_EIGH_PATH_HOOK(fast) \
    if (threadIdx.x == 0) g_paths[(fast) ? 1 : 0]++;
#define BL_NO_DEFAULT_INST
#include "common_host.cu"
#include "eigh.cu"  // its `extern __shared__` bl_smem is the buffer above

template <typename T> void run_one(EighArgs g) {
    emu_run_warp([&] { bl_eigh_block<T>(g); });
}
// n x n row-major A (lower triangle read); w n; v n x n row-major (NULL: values alone).
template <typename T> int eigh(const T* a, int n, T* w, T* v, unsigned* info) {
    EighArgs g{};
    g.a = a; g.a_rs = n; g.a_cs = 1;
    g.w = w; g.w_cs = 1;
    g.v = v; g.v_rs = n; g.v_cs = 1;
    g.info = info; g.n = n; g.lower = 1; g.nmat = 1;
    // cuda/eigh.rs ld: whole 16-byte vectors, an odd number of them.
    const int vn = 16 / sizeof(T), l = (n + vn - 1) / vn;
    g.ld = (l % 2 ? l : l + 1) * vn;
    // EMU_A_GLOBAL=1: the work matrix in `work` too, as cuda/eigh.rs places it beyond shared memory.
    const bool glob = getenv("EMU_A_GLOBAL") && *getenv("EMU_A_GLOBAL") == '1';
    // A and the panels' V and W (BL_EIGH_PANEL), then the fast path's scratch.
    // 16-byte aligned, as cuda/eigh.rs allocates it: the panels are read as vectors.
    const size_t len = (glob ? (size_t)n * g.ld + 2 * BL_EIGH_PANEL * (size_t)n : 0) + 3 * (size_t)n * n + 1;
    std::vector<T> work(len + 16 / sizeof(T));
    T* w0 = work.data();
    while ((uintptr_t)w0 % 16) ++w0;
    g.work = w0; g.work_bs = (long long)len;
    g.a_global = glob; g.fast = v != nullptr && n >= 2;
    run_one<T>(g);
    return 0;
}
extern "C" int eigh_f32(const float* a, int n, float* w, float* v, unsigned* info) { return eigh(a, n, w, v, info); }
extern "C" int eigh_f64(const double* a, int n, double* w, double* v, unsigned* info) { return eigh(a, n, w, v, info); }
extern "C" void path_counts(int* out) { out[0] = g_paths[0]; out[1] = g_paths[1]; }
