// The cluster tridiagonalisation prototype (gpu-lab/eigh_cluster.cu) run on the host: a
// cluster of C blocks of one warp each (warp_emu.h emu_run_cluster), A, V and W in global
// buffers. Built by eigh_cluster_emu.py.
#include "warp_emu.h"
// eigh.cu's kernels compile along (its panel steps are the prototype's); not run here.
alignas(16) unsigned char bl_smem[1 << 16];
#define BL_NO_DEFAULT_INST
#include "common_host.cu"
#include "eigh.cu"
#include "../eigh_cluster.cu"

// n x n row-major symmetric a (whole) on C blocks: d, e, tau (n each) and the reflectors
// below the subdiagonal of r (n x n row-major, column k's from row k + 2).
template <typename T> int tridiag(const T* a, int n, int C, T* d, T* e, T* tau, T* r) {
    const int vn = 16 / sizeof(T), l = (n + vn - 1) / vn;
    const int ld = (l % 2 ? l : l + 1) * vn;
    std::vector<T> buf((size_t)n * ld + 2 * BL_EIGH_PANEL * (size_t)n + vn);
    T* A = buf.data();
    while ((uintptr_t)A % 16) ++A;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) A[(size_t)i * ld + j] = a[(size_t)i * n + j];
    T* V = A + (size_t)n * ld;  // n ld is whole vectors: V and W stay 16-byte aligned
    T* W = V + (size_t)BL_EIGH_PANEL * n;
    const int nv = (n + vn - 1) / vn * vn;
    const size_t smem = (2 * (size_t)nv + 32 + 2 * BL_EIGH_PANEL + 2) * sizeof(T);
    emu_run_cluster(C, smem, [&] { bl_tridiag_cluster<T>(A, ld, n, V, W, d, e, tau, C); });
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) r[(size_t)i * n + j] = A[(size_t)i * ld + j];
    return 0;
}
extern "C" int tridiag_f32(const float* a, int n, int C, float* d, float* e, float* tau, float* r) {
    return tridiag(a, n, C, d, e, tau, r);
}
extern "C" int tridiag_f64(const double* a, int n, int C, double* d, double* e, double* tau, double* r) {
    return tridiag(a, n, C, d, e, tau, r);
}

// The tridiagonal (d, e) of order n on C blocks: w (sig), x (the vectors normalised,
// row-major), and whether the fast path vouched for them.
template <typename T> int tri_vectors(const T* d, const T* e, int n, int C, T* w, T* x) {
    std::vector<T> ws(3 * (size_t)n + 3 * (size_t)n * n);
    std::vector<int> msg(8, 0);
    const T* X = nullptr;
    emu_run_cluster(C, 64, [&] {
        const T* r = bl_tri_vectors_cluster<T>(d, e, n, ws.data(), msg.data(), C);
        if (threadIdx.x == 0 && blockIdx.x == 0) X = r;
    });
    if (!X) return 0;
    const T* sig = ws.data() + n;
    const T* sc = sig + n;
    for (int k = 0; k < n; ++k) w[k] = sig[k];
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < n; ++k) x[(size_t)i * n + k] = X[(size_t)i * n + k] * sc[k];
    return 1;
}
extern "C" int tri_vectors_f32(const float* d, const float* e, int n, int C, float* w, float* x) {
    return tri_vectors(d, e, n, C, w, x);
}
extern "C" int tri_vectors_f64(const double* d, const double* e, int n, int C, double* w, double* x) {
    return tri_vectors(d, e, n, C, w, x);
}

// The whole eigh of the n x n row-major symmetric a (whole) on C blocks: w, v (row-major,
// vectors as columns); 0 where the fast path declined.
template <typename T> int eigh_cluster(const T* a, int n, int C, T* w, T* v) {
    const int vn = 16 / sizeof(T), l = (n + vn - 1) / vn;
    const int ld = (l % 2 ? l : l + 1) * vn, nb = BL_REFL_NB_WIDE;
    const size_t nn = (size_t)n * n;
    std::vector<T> buf((size_t)(n + 4) * ld + 2 * BL_EIGH_PANEL * (size_t)n + 3 * (size_t)n + 3 * (size_t)n + 3 * nn +
                       (size_t)C * nb * (n + nb) + vn);
    T* Aw = buf.data();
    while ((uintptr_t)Aw % 16) ++Aw;
    T* V = Aw + (size_t)(n + 4) * ld;
    T* W = V + (size_t)BL_EIGH_PANEL * n;
    T* d = W + (size_t)BL_EIGH_PANEL * n;
    T* e = d + n;
    T* tau = e + n;
    T* ws = tau + n;
    T* Z = ws + 3 * (size_t)n + 3 * nn;
    std::vector<int> msg(8, 0);
    std::vector<int> ok(C * 32, 0);
    const int nv = (n + vn - 1) / vn * vn;
    const size_t smem = (2 * (size_t)nv + 34 + 2 * BL_EIGH_PANEL) * sizeof(T) + (size_t)n * sizeof(int);
    emu_run_cluster(C, smem, [&] {
        const bool r = bl_eigh_cluster<T>(a, n, Aw, ld, V, W, d, e, tau, ws, msg.data(), w, v,
                                          Z + (size_t)g_rank * nb * (n + nb), C);
        ok[g_rank * 32 + threadIdx.x] = r;
    });
    for (int x : ok)
        if (x != ok[0]) return -1;  // every thread must agree
    return ok[0];
}
extern "C" int eigh_cluster_f32(const float* a, int n, int C, float* w, float* v) { return eigh_cluster(a, n, C, w, v); }
extern "C" int eigh_cluster_f64(const double* a, int n, int C, double* w, double* v) { return eigh_cluster(a, n, C, w, v); }
