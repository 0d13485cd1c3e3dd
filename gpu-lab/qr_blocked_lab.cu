// Stage timings of the blocked QR kernel (crates/batchlin/src/cuda/kernels/qr_blocked.cu):
// the launch sequence of cuda/qr_blocked.rs replayed in C++ (keep them in step), a float64
// CPU check of matrix 0, the whole call timed (median), then one call with an event after
// every launch, summed by stage: where the time of a call goes.
// Build: nvcc -O3 -arch=sm_90 -o qr_blocked_lab gpu-lab/qr_blocked_lab.cu
// Run:   ./qr_blocked_lab [nb]     (nb = 16 or 32 forces the panel width, as BATCHLIN_BQ_NB)
//        LAB_VARS=01 picks variants (default all): 0 the library before the panel and prefetch
//        changes (bq_panel_reg, bq_vtc + bq_tw, bq_upd), 1 the library now without its prefetches
//        (bq_panel_ru for batches <= SMs, else bq_panel_reg; bq_vtw), 2 the library now,
//        3 the library now with NB = 16 (tall shapes).
// Programmatic dependent launch was also measured here (2026-11-30,
// docs/results/h200/2026-11-30-qr-blocked-panel-prefetch/lab1-variants.log) (every kernel starting with
// griddepcontrol.wait + launch_dependents, launched by cudaLaunchKernelEx with
// programmatic stream serialisation): 2-8% slower at every shape, dropped with the
// kernels' griddepcontrol lines, so this harness no longer has it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <string>
#include <algorithm>
#include <random>
#include <cuda_runtime.h>

#include "../crates/batchlin/src/cuda/kernels/common.cu"
#include "../crates/batchlin/src/cuda/kernels/qr_blocked.cu"

static const int REG_RPT = 2, REG_MAXT = 512;  // bq_panel_reg: 2 rows a thread, <= 512 threads
// g_reg: 0 smem/glob panel only, 1 bq_panel_reg, 2 the library's rule (bq_panel_ru when
// batch <= SMs: 2 rows a thread up to 1024 rows, f32 NB 16 also 4 up to 2048; else
// bq_panel_reg). g_fuse: bq_vtw instead of bq_vtc + bq_tw.
static int g_reg = 0, g_fuse = 0;
// g_pf: the library's bq_vtw / bq_upd (next chunk prefetched / C loaded first); 0: the
// same kernels without the prefetch (lab-only instantiations below).
static int g_pf = 1;
#define BL_LAB_NOPF(TN, T, NB)                                                                               \
    extern "C" __global__ void __launch_bounds__(256) bq_vtw0_##TN##_nb##NB(BqArgs p) { bq_vtc_tw<T, NB, false>(p); } \
    extern "C" __global__ void __launch_bounds__(256) bq_upd0_##TN##_nb##NB(BqArgs p) { bq_upd<T, NB, false>(p); }
BL_LAB_NOPF(f32, float, 16) BL_LAB_NOPF(f32, float, 32) BL_LAB_NOPF(f64, double, 16) BL_LAB_NOPF(f64, double, 32)

// The unfused baseline g_fuse = 0 runs (the library launches bq_vtw only).
// Y_s = V[split s]^T C[split s, c-tile], the partials kept apart.
template <typename T, int NB>
__device__ __forceinline__ void bq_vtc(const BqArgs& p) {
    constexpr int AR = NB / 16;
    __shared__ T Vs[32][NB + 1];
    __shared__ T Cs[32][65];
    const bl_i64 b = blockIdx.x / p.tiles;
    const int rest = (int)(blockIdx.x - b * p.tiles);
    const int ctiles = p.tiles / p.nsplit;
    const int s = rest / ctiles, ct = rest - s * ctiles;
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    T acc[AR][4];
    bq_vtc_acc<T, NB, false>(p, Vs, Cs, b, s, ct, acc);
    T* Y = (T*)p.y + ((b * p.nsplit + s) * NB) * (bl_i64)p.ldy;
#pragma unroll
    for (int x = 0; x < AR; ++x)
#pragma unroll
        for (int y = 0; y < 4; ++y) {
            const int a = ty + 16 * x, cc = ct * 64 + tx + 16 * y;
            if (cc < p.ldy) Y[(bl_i64)a * p.ldy + cc] = acc[x][y];
        }
}

// Z = op(T) sum_s Y_s for a 64-column tile; grid: matrix * ctiles + ct.
template <typename T, int NB>
__device__ __forceinline__ void bq_tw(const BqArgs& p) {
    __shared__ T Ys[NB][65];
    __shared__ T Ts[NB][NB + 1];
    const bl_i64 b = blockIdx.x / p.tiles;
    const int ct = (int)(blockIdx.x - b * p.tiles);
    const int tid = threadIdx.x;
    const T* Tg = (const T*)p.t + b * p.t_bs + (bl_i64)p.panel * NB * NB;
    for (int idx = tid; idx < NB * NB; idx += 256) {
        const int i = idx / NB, j = idx - i * NB;
        if (p.trans) Ts[j][i] = Tg[idx];
        else Ts[i][j] = Tg[idx];
    }
    const T* Y = (const T*)p.y + (b * p.nsplit * NB) * (bl_i64)p.ldy;
    for (int idx = tid; idx < NB * 64; idx += 256) {
        const int a = idx >> 6, cc = idx & 63;
        const int col = ct * 64 + cc;
        T s = T(0);
        if (col < p.ldy)
            for (int sp = 0; sp < p.nsplit; ++sp) s += Y[((bl_i64)sp * NB + a) * p.ldy + col];
        Ys[a][cc] = s;
    }
    __syncthreads();
    T* Z = (T*)p.z + (b * NB) * (bl_i64)p.ldy;
    for (int idx = tid; idx < NB * 64; idx += 256) {
        const int a = idx >> 6, cc = idx & 63;
        const int col = ct * 64 + cc;
        T s = T(0);
#pragma unroll
        for (int l = 0; l < NB; ++l) s += Ts[a][l] * Ys[l][cc];
        if (col < p.ldy) Z[(bl_i64)a * p.ldy + col] = s;
    }
}

#define BL_LAB_UNFUSED(TN, T, NB)                                                                     \
    extern "C" __global__ void __launch_bounds__(256) bq_vtc_##TN##_nb##NB(BqArgs p) { bq_vtc<T, NB>(p); } \
    extern "C" __global__ void __launch_bounds__(256) bq_tw_##TN##_nb##NB(BqArgs p) { bq_tw<T, NB>(p); }
BL_LAB_UNFUSED(f32, float, 16) BL_LAB_UNFUSED(f32, float, 32) BL_LAB_UNFUSED(f64, double, 16) BL_LAB_UNFUSED(f64, double, 32)

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, \
                    __LINE__, #x);                                                         \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

typedef void (*BqFn)(BqArgs);
template <typename T> struct KT;
#define KT_BODY(TN)                                                                          \
    static BqFn max() { return bq_max_##TN; }                                                \
    static BqFn load() { return bq_load_##TN; }                                              \
    static BqFn eye() { return bq_eye_##TN; }                                                \
    static BqFn store_r() { return bq_store_r_##TN; }                                        \
    static BqFn store_q() { return bq_store_q_##TN; }                                        \
    static BqFn panel(int nb, bool sm) {                                                     \
        return nb == 16 ? (sm ? bq_panel_smem_##TN##_nb16 : bq_panel_glob_##TN##_nb16)       \
                        : (sm ? bq_panel_smem_##TN##_nb32 : bq_panel_glob_##TN##_nb32);      \
    }                                                                                        \
    static BqFn vtc(int nb) { return nb == 16 ? bq_vtc_##TN##_nb16 : bq_vtc_##TN##_nb32; }   \
    static BqFn reg(int nb);                                                                 \
    static BqFn vtw(int nb) {                                                                \
        return g_pf ? (nb == 16 ? bq_vtw_##TN##_nb16 : bq_vtw_##TN##_nb32)                   \
                    : (nb == 16 ? bq_vtw0_##TN##_nb16 : bq_vtw0_##TN##_nb32);                \
    }                                                                                        \
    static BqFn ru(int nb, int rpt);                                                         \
    static BqFn tw(int nb) { return nb == 16 ? bq_tw_##TN##_nb16 : bq_tw_##TN##_nb32; }      \
    static BqFn upd(int nb) {                                                                \
        return g_pf ? (nb == 16 ? bq_upd_##TN##_nb16 : bq_upd_##TN##_nb32)                   \
                    : (nb == 16 ? bq_upd0_##TN##_nb16 : bq_upd0_##TN##_nb32);                \
    }                                                                                        \
    static const char* name() { return #TN; }
template <> struct KT<float> { KT_BODY(f32) };
template <> struct KT<double> { KT_BODY(f64) };
BqFn KT<float>::reg(int nb) { return nb == 16 ? bq_panel_reg_f32_nb16 : bq_panel_reg_f32_nb32; }
BqFn KT<double>::reg(int nb) { return nb == 16 ? bq_panel_reg_f64_nb16 : nullptr; }
BqFn KT<float>::ru(int nb, int rpt) {
    return rpt == 2 ? (nb == 16 ? bq_panel_ru_f32_nb16_r2 : bq_panel_ru_f32_nb32_r2) : (nb == 16 ? bq_panel_ru_f32_nb16_r4 : nullptr);
}
BqFn KT<double>::ru(int nb, int rpt) { return rpt == 2 && nb == 16 ? bq_panel_ru_f64_nb16_r2 : nullptr; }

enum Stage { S_PREP, S_PANEL, S_VTC, S_TW, S_UPD, S_QVTC, S_QTW, S_QUPD, S_STORE, S_N };
static const char* stage_name[S_N] = {"max+load+eye", "panel", "R: vtc", "R: tw", "R: upd",
                                      "Q: vtc", "Q: tw", "Q: upd", "store R,Q"};

struct Timer {  // an event after every launch, attributed to that launch's stage
    cudaStream_t s;
    std::vector<cudaEvent_t> ev;
    std::vector<int> st;
    void start() { mark(-1); }
    void mark(int stage) {
        cudaEvent_t e;
        CK(cudaEventCreate(&e));
        CK(cudaEventRecord(e, s));
        ev.push_back(e);
        st.push_back(stage);
    }
    void sums(double* out) {
        CK(cudaStreamSynchronize(s));
        for (size_t i = 1; i < ev.size(); ++i) {
            float ms;
            CK(cudaEventElapsedTime(&ms, ev[i - 1], ev[i]));
            out[st[i]] += ms;
        }
        for (auto e : ev) cudaEventDestroy(e);
        ev.clear();
        st.clear();
    }
};

static int g_nb = 0;
static int g_sms = 132;
static size_t g_optin = 227 * 1024;
static const size_t PANEL_STATIC_SMEM = 20 * 1024;

template <typename T>
static void launch(BqFn f, size_t blocks, int threads, size_t smem, cudaStream_t s, const BqArgs& p, Timer* tm,
                   int stage) {
    f<<<(unsigned)blocks, threads, smem, s>>>(p);
    CK(cudaGetLastError());
    if (tm) tm->mark(stage);
}

static int g_waves = 2;  // LAB_WAVES: the split rule's target of blocks, in SMs (the library: 2)
static void splits(int batch, int rows, int ctiles, int& nsplit, int& srows) {
    const int target = g_waves * g_sms, have = std::max(1, ctiles * batch);
    int want = (target + have - 1) / have;
    want = std::max(1, std::min(want, std::max(1, (rows + 63) / 64)));
    srows = ((rows + want - 1) / want + 31) / 32 * 32;
    nsplit = (rows + srows - 1) / srows;
}

static size_t tiles32(int r, int c) { return (size_t)((r + 31) / 32) * ((c + 31) / 32); }

// A row-major batch -> Q (m x k row-major), R (k x n row-major), info. Reduced mode
// (wantq) or r mode.
template <typename T>
static void run_blocked(int batch, int m, int n, bool wantq, const T* a, T* q, T* r, unsigned* info,
                        cudaStream_t s, Timer* tm) {
    const int k = std::min(m, n), qc = wantq ? k : 0;
    const size_t es = sizeof(T);
    const size_t room = g_optin - PANEL_STATIC_SMEM;
    int nbk = g_nb;
    // as qr_blocked.rs panel_width: 16 where only the 16-wide bq_panel_ru takes the panels
    // (library rule since 2026-11-30; variant 0 keeps the old rule)
    const bool ru32 = m <= 1024 && KT<T>::ru(32, 2), ru16 = m <= 2048 && KT<T>::ru(16, m <= 1024 ? 2 : 4);
    if (!nbk && g_reg == 2 && batch <= g_sms && !ru32 && ru16) nbk = 16;
    if (!nbk) nbk = ((size_t)m * 32 * es <= room || (size_t)m * 16 * es > room) ? 32 : 16;
    const int npan = (k + nbk - 1) / nbk;
    const int ldy = std::max(n, qc);
    int max_split = 1;
    for (int p = 0; p < npan; ++p) {
        const int k0 = p * nbk, nb = std::min(nbk, k - k0), rows = m - k0;
        const int cols[2] = {n - (k0 + nb), wantq ? qc - k0 : 0};
        for (int c : cols)
            if (c > 0) {
                int ns, sr;
                splits(batch, rows, (c + 63) / 64, ns, sr);
                max_split = std::max(max_split, ns);
            }
    }
    void *w, *qw = nullptr, *tau, *t, *y, *z, *mx;
    CK(cudaMallocAsync(&w, (size_t)batch * m * n * es, s));
    if (wantq) CK(cudaMallocAsync(&qw, (size_t)batch * m * qc * es, s));
    CK(cudaMallocAsync(&tau, (size_t)batch * k * es, s));
    const size_t t_bs = (size_t)npan * nbk * nbk;
    CK(cudaMallocAsync(&t, batch * t_bs * es, s));
    CK(cudaMallocAsync(&y, (size_t)batch * max_split * nbk * ldy * es, s));
    CK(cudaMallocAsync(&z, (size_t)batch * nbk * ldy * es, s));
    CK(cudaMallocAsync(&mx, (size_t)batch * 8, s));
    unsigned* cnt;  // bq_vtw's tile counters (each reset by its last block)
    const size_t ncnt = (size_t)batch * ((ldy + 63) / 64);
    CK(cudaMallocAsync((void**)&cnt, ncnt * 4, s));
    CK(cudaMemsetAsync(cnt, 0, ncnt * 4, s));
    CK(cudaMemsetAsync(mx, 0, (size_t)batch * 8, s));
    if (tm) tm->start();

    BqArgs base;
    memset(&base, 0, sizeof base);
    base.a = a; base.a_bs = (bl_i64)m * n; base.a_rs = n; base.a_cs = 1;
    base.w = w; base.w_bs = (bl_i64)m * n; base.tau = tau; base.t = t; base.t_bs = t_bs;
    base.y = y; base.z = z; base.mx = (unsigned long long*)mx; base.info = info; base.cnt = cnt;
    base.batch = batch; base.m = m; base.n = n; base.k = k; base.ldw = m;
    base.orows = m; base.ocols = n;

    BqArgs p = base;
    p.tiles = (int)tiles32(m, n);
    launch<T>(KT<T>::max(), (size_t)batch * p.tiles, 256, 0, s, p, tm, S_PREP);
    launch<T>(KT<T>::load(), (size_t)batch * p.tiles, 256, 0, s, p, tm, S_PREP);

    auto update = [&](int panel, void* cptr, size_t c_bs, int c0, int c1, bool trans) {
        const int k0 = panel * nbk, nb = std::min(nbk, k - k0), rows = m - k0, cols = c1 - c0;
        const int ctiles = (cols + 63) / 64;
        int nsplit, srows;
        splits(batch, rows, ctiles, nsplit, srows);
        BqArgs u = base;
        u.c = cptr; u.c_bs = c_bs; u.k0 = k0; u.nb = nb; u.panel = panel; u.c0 = c0; u.c1 = c1;
        u.nsplit = nsplit; u.srows = srows; u.ldy = cols; u.trans = trans;
        u.tiles = nsplit * ctiles;
        if (g_fuse) {
            launch<T>(KT<T>::vtw(nbk), (size_t)batch * u.tiles, 256, 0, s, u, tm, trans ? S_VTC : S_QVTC);
        } else {
            launch<T>(KT<T>::vtc(nbk), (size_t)batch * u.tiles, 256, 0, s, u, tm, trans ? S_VTC : S_QVTC);
            u.tiles = ctiles;
            launch<T>(KT<T>::tw(nbk), (size_t)batch * u.tiles, 256, 0, s, u, tm, trans ? S_TW : S_QTW);
        }
        u.tiles = ((rows + 63) / 64) * ctiles;
        launch<T>(KT<T>::upd(nbk), (size_t)batch * u.tiles, 256, 0, s, u, tm, trans ? S_UPD : S_QUPD);
    };

    for (int panel = 0; panel < npan; ++panel) {
        const int k0 = panel * nbk, nb = std::min(nbk, k - k0), rows = m - k0;
        const int threads = std::min(512, std::max(64, ((rows + 1) / 2 + 31) / 32 * 32));
        const size_t smem = (size_t)rows * nb * es;
        BqArgs pp = base;
        pp.k0 = k0; pp.nb = nb; pp.panel = panel;
        const bool sm = smem <= room;
        BqFn rf = KT<T>::reg(nbk);
        const int rpt = rows <= 1024 ? 2 : 4;
        BqFn uf = KT<T>::ru(nbk, rpt);
        if (g_reg == 2 && batch <= g_sms && uf && rows <= rpt * 512) {
            const int rt = std::max(64, ((rows + rpt - 1) / rpt + 31) / 32 * 32);
            launch<T>(uf, batch, rt, 0, s, pp, tm, S_PANEL);
        } else if (g_reg >= 1 && rf && rows <= REG_RPT * REG_MAXT) {
            const int rt = std::max(64, ((rows + REG_RPT - 1) / REG_RPT + 31) / 32 * 32);
            launch<T>(rf, batch, rt, 0, s, pp, tm, S_PANEL);
        } else {
            launch<T>(KT<T>::panel(nbk, sm), batch, threads, sm ? smem : 0, s, pp, tm, S_PANEL);
        }
        if (k0 + nb < n) update(panel, w, (size_t)m * n, k0 + nb, n, true);
    }
    BqArgs pr = base;
    pr.o = r; pr.o_bs = (bl_i64)k * n; pr.o_rs = n; pr.o_cs = 1; pr.orows = k; pr.ocols = n;
    pr.tiles = (int)tiles32(k, n);
    launch<T>(KT<T>::store_r(), (size_t)batch * pr.tiles, 256, 0, s, pr, tm, S_STORE);
    if (wantq) {
        BqArgs pq = base;
        pq.c = qw; pq.c_bs = (bl_i64)m * qc; pq.orows = m; pq.ocols = qc; pq.tiles = (int)tiles32(m, qc);
        launch<T>(KT<T>::eye(), (size_t)batch * pq.tiles, 256, 0, s, pq, tm, S_PREP);
        for (int panel = npan - 1; panel >= 0; --panel)
            if (panel * nbk < qc) update(panel, qw, (size_t)m * qc, panel * nbk, qc, false);
        pq.o = q; pq.o_bs = (bl_i64)m * k; pq.o_rs = k; pq.o_cs = 1;
        launch<T>(KT<T>::store_q(), (size_t)batch * pq.tiles, 256, 0, s, pq, tm, S_STORE);
    }
    for (void* b : {w, qw, tau, t, y, z, mx, (void*)cnt})
        if (b) CK(cudaFreeAsync(b, s));
}

static std::string vname() {
    std::string v = g_reg == 2 ? "ru" : g_reg == 1 ? "reg" : "smem";
    if (g_fuse) v += "+vtw";
    if (!g_pf) v += "+nopf";
    return v;
}

template <typename T>
static void set_smem_attrs() {
    for (int nb : {16, 32})
        CK(cudaFuncSetAttribute(KT<T>::panel(nb, true), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)(g_optin - PANEL_STATIC_SMEM)));
}

template <typename T>
static void shape(int batch, int m, int n) {
    const int k = std::min(m, n);
    const size_t elems = (size_t)batch * m * n;
    const int nbuf = (int)std::max<size_t>(2, std::min<size_t>(8, (256u << 20) / (elems * sizeof(T)) + 1));
    std::mt19937_64 rng(7);
    std::normal_distribution<double> nd;
    std::vector<T> h(elems);
    for (auto& x : h) x = (T)nd(rng);
    std::vector<T*> da(nbuf);
    for (auto& p : da) {
        CK(cudaMalloc(&p, elems * sizeof(T)));
        CK(cudaMemcpy(p, h.data(), elems * sizeof(T), cudaMemcpyHostToDevice));
    }
    T *dq, *dr;
    unsigned* di;
    CK(cudaMalloc(&dq, (size_t)batch * m * k * sizeof(T)));
    CK(cudaMalloc(&dr, (size_t)batch * k * n * sizeof(T)));
    CK(cudaMalloc(&di, batch * 4));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    // check matrix 0
    run_blocked<T>(batch, m, n, true, da[0], dq, dr, di, s, nullptr);
    CK(cudaStreamSynchronize(s));
    std::vector<T> q((size_t)m * k), r((size_t)k * n);
    CK(cudaMemcpy(q.data(), dq, q.size() * sizeof(T), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(r.data(), dr, r.size() * sizeof(T), cudaMemcpyDeviceToHost));
    unsigned info0;
    CK(cudaMemcpy(&info0, di, 4, cudaMemcpyDeviceToHost));
    double nd2 = 0, na2 = 0, no2 = 0;
    const int step = m * n > (1 << 18) ? 4 : 1;  // rows (and Q columns) sampled on big shapes
    for (int i = 0; i < m; i += step)
        for (int j = 0; j < n; ++j) {
            double sum = 0;
            for (int l = 0; l <= std::min(j, k - 1); ++l) sum += (double)q[(size_t)i * k + l] * r[(size_t)l * n + j];
            const double av = h[(size_t)i * n + j];
            nd2 += (av - sum) * (av - sum);
            na2 += av * av;
        }
    std::vector<double> g((size_t)k * k, 0.0);
    for (int i = 0; i < m; ++i)
        for (int c1 = 0; c1 < k; c1 += step) {
            const double x = q[(size_t)i * k + c1];
            for (int c2 = 0; c2 < k; ++c2) g[(size_t)c1 * k + c2] += x * q[(size_t)i * k + c2];
        }
    for (int c1 = 0; c1 < k; c1 += step)
        for (int c2 = 0; c2 < k; ++c2) {
            const double d = g[(size_t)c1 * k + c2] - (c1 == c2 ? 1.0 : 0.0);
            no2 += d * d;
        }
    bool diag_ok = true;
    for (int i = 0; i < k; ++i) diag_ok = diag_ok && r[(size_t)i * n + i] >= 0;
    const double rec = std::sqrt(nd2 / na2), orth = std::sqrt(no2 * step / k);
    const double tol = sizeof(T) == 4 ? 1e-4 : 1e-12;
    const bool ok = rec <= tol && orth <= tol && diag_ok && info0 == 0;
    // whole call, median of 10 after 3 warm-ups, inputs rotated
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> ts;
    for (int it = 0; it < 13; ++it) {
        CK(cudaEventRecord(e0, s));
        run_blocked<T>(batch, m, n, true, da[it % nbuf], dq, dr, di, s, nullptr);
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (it >= 3) ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    // mode r (no Q)
    std::vector<float> tr;
    for (int it = 0; it < 8; ++it) {
        CK(cudaEventRecord(e0, s));
        run_blocked<T>(batch, m, n, false, da[it % nbuf], nullptr, dr, di, s, nullptr);
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (it >= 3) tr.push_back(ms);
    }
    std::sort(tr.begin(), tr.end());
    // stage sums, mean of 3 calls with an event after each launch
    double st[S_N] = {0};
    Timer tm{s, {}, {}};
    for (int it = 0; it < 3; ++it) {
        run_blocked<T>(batch, m, n, true, da[it % nbuf], dq, dr, di, s, &tm);
        tm.sums(st);
    }
    printf("%s %dx%dx%d nb=%d waves=%d %s: check %s (rec %.2e orth %.2e info %u) | call %.3f ms (min %.3f), r mode %.3f ms\n",
           KT<T>::name(), batch, m, n, g_nb, g_waves, vname().c_str(), ok ? "ok" : "FAILED", rec, orth, info0, ts[ts.size() / 2], ts[0],
           tr[tr.size() / 2]);
    double tot = 0;
    for (int i = 0; i < S_N; ++i) tot += st[i] / 3;
    printf("   stages (events between launches, ms):");
    for (int i = 0; i < S_N; ++i) printf(" %s %.3f |", stage_name[i], st[i] / 3);
    printf(" sum %.3f\n", tot);
    for (auto p : da) CK(cudaFree(p));
    CK(cudaFree(dq));
    CK(cudaFree(dr));
    CK(cudaFree(di));
    CK(cudaStreamDestroy(s));
}

int main(int argc, char** argv) {
    if (argc > 1) g_nb = atoi(argv[1]);
    const int g_nb0 = g_nb;
    if (getenv("LAB_WAVES")) g_waves = atoi(getenv("LAB_WAVES"));
    cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, 0));
    g_sms = pr.multiProcessorCount;
    g_optin = pr.sharedMemPerBlockOptin;
    printf("%s, %d SMs, %zu B shared optin\n", pr.name, g_sms, g_optin);
    {  // as the library: freed scratch stays in the pool
        cudaMemPool_t pool;
        CK(cudaDeviceGetDefaultMemPool(&pool, 0));
        unsigned long long thr = ~0ull;
        CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr));
    }
    set_smem_attrs<float>();
    set_smem_attrs<double>();
    const int shapes[][3] = {{1, 1024, 1024}, {256, 256, 256}, {16, 1024, 64}, {16, 2048, 64}, {1, 256, 256}, {1, 1536, 1536}};
    const int nsh = sizeof shapes / sizeof shapes[0];
    // variants: 0 the library before the panel and prefetch changes; 1 now without the prefetches; 2 now;
    // 3 now with NB = 16
    const char* only = getenv("LAB_VARS");
    for (int v = 0; v < 4; ++v) {
        if (only && !strchr(only, '0' + v)) continue;
        g_reg = v == 0 ? 1 : 2;
        g_fuse = v >= 1;
        g_pf = v >= 2;
        g_nb = v == 3 ? 16 : g_nb0;
        for (int i = 0; i < nsh; ++i) shape<float>(shapes[i][0], shapes[i][1], shapes[i][2]);
        for (int i = 0; i < nsh; ++i) shape<double>(shapes[i][0], shapes[i][1], shapes[i][2]);
    }
    return 0;
}
