// Prototype (docs/proposals/gpu-large-matrices.md, step 1): the tridiagonalisation of one
// symmetric matrix on a thread-block cluster, by panels as kernels/eigh.cu's
// bl_tridiag_panels (LAPACK xLATRD's scheme, lower), with its steps (bl_panel_column,
// bl_panel_av, bl_panel_p, bl_panel_update). Needs common.cu and eigh.cu before it.
// Checked on the host by gpu-lab/warp_emu/eigh_cluster_emu.py (blocks of one warp); not
// in the library yet.
//
// A (global, whole, row i at A[i ld]) is shared by the cluster's C blocks. Every block
// computes each step's column and reflector whole, in the same order (bit for bit the
// same, so v needs no exchange); the trailing rows of the step are dealt out in C
// contiguous slices, a block's p = tau (A v - V y - W z) over its slice; p.v is the one
// cluster-wide sum a step (each block's partial read by all over distributed shared
// memory, in rank order); then each block writes its rows of W, and a cluster barrier
// makes them (and V's, and the stored reflector) visible before the next step. The
// panel's trailing update by column slices, then a cluster barrier.

// The cluster's primitives: Hopper's (sm_90), or the host emulator's (warp_emu.h).
#ifdef __CUDA_ARCH__
__device__ __forceinline__ int bl_cl_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return (int)r;
}
__device__ __forceinline__ void bl_cl_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// *p's address in block r's shared memory (a generic address: plain loads read it).
template <typename T> __device__ __forceinline__ T* bl_cl_peer(T* p, int r) {
    unsigned long long a;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(a) : "l"(p), "r"(r));
    return reinterpret_cast<T*>(a);
}
extern __shared__ __align__(16) unsigned char bl_smem[];
__device__ __forceinline__ unsigned char* bl_cl_smem() { return bl_smem; }
#else
inline int bl_cl_rank() { return g_rank; }
inline void bl_cl_sync() { g_cbar->arrive_and_wait(); }
template <typename T> T* bl_cl_peer(T* p, int r) {
    return reinterpret_cast<T*>(g_smem_of[r] + (reinterpret_cast<unsigned char*>(p) - g_smem));
}
inline unsigned char* bl_cl_smem() { return g_smem; }
#endif

// The cluster's slice of rows lo..hi of r0..n-1 (whole warps of rows, so that a warp's
// loads of A's rows are contiguous).
__device__ __forceinline__ void bl_cl_slice(int r0, int n, int C, int rank, int& lo, int& hi) {
    const int per = ((n - r0 + C - 1) / C + 31) / 32 * 32;
    lo = r0 + rank * per;
    hi = min(n, lo + per);
}

// Shared memory a block: vv and pp (n each, to whole vectors), red (32), yz (2 PANEL),
// slot (2). V, W: global, PANEL entries a row of A (16-byte aligned). d, e, tau: n each
// (rank 0 writes them). C: the cluster's blocks.
template <typename T>
__device__ void bl_tridiag_cluster(T* A, int ld, int n, T* V, T* W, T* d, T* e, T* tau, int C) {
    constexpr int NB = BL_EIGH_PANEL, VN = BlVec<T>::N;
    const int tid = threadIdx.x, nt = blockDim.x;
    const int rank = bl_cl_rank();
    const int nv = (n + VN - 1) / VN * VN;
    T* vv = reinterpret_cast<T*>(bl_cl_smem());
    T* pp = vv + nv;
    T* red = pp + nv;
    T* yz = red + 32;
    T* slot = yz + 2 * NB;
    for (int k0 = 0; k0 < n - 1; k0 += NB) {
        const int kend = min(k0 + NB, n - 1);
        for (int k = k0; k < kend; ++k) {
            const int c = k - k0, r0 = k + 1;
            // Column k whole in every block, and its reflector.
            const T ss = bl_sum_all(bl_panel_column(A, ld, n, k, c, V, W, pp), red);
            __syncthreads();
            T beta, t, scal;
            bl_householder(pp[r0], ss, beta, t, scal);
            for (int i = r0 + tid; i < n; i += nt) vv[i] = i == r0 ? T(1) : pp[i] * scal;
            int lo, hi;
            bl_cl_slice(r0, n, C, rank, lo, hi);
            for (int i = lo + tid; i < hi; i += nt) {
                V[i * NB + c] = vv[i];
                if (i > r0) A[(bl_i64)i * ld + k] = vv[i];  // the reflector, kept for Q
            }
            if (rank == 0 && tid == 0) {
                e[k] = beta;
                tau[k] = t;
                d[k] = pp[k];
            }
            __syncthreads();
            if (t != T(0)) {
                bl_panel_av(A, ld, n, r0, c, V, W, vv, pp, yz, lo, hi);
                __syncthreads();
                // p.v over the cluster: each block's partial in its slot (two, by the
                // step's parity: a peer may still read the last one), all read in rank order.
                const T mine = bl_sum_all(bl_panel_p(c, t, V, W, vv, pp, yz, lo, hi), red);
                if (tid == 0) slot[k & 1] = mine;
                bl_cl_sync();
                T pv = T(0);
                for (int r = 0; r < C; ++r) pv += *bl_cl_peer(slot + (k & 1), r);
                const T kk = -(T(0.5) * t) * pv;
                for (int i = lo + tid; i < hi; i += nt) W[i * NB + c] = pp[i] + kk * vv[i];
            } else {
                for (int i = lo + tid; i < hi; i += nt) W[i * NB + c] = T(0);
            }
            bl_cl_sync();  // V's and W's column c whole before the next step reads them
        }
        // The trailing matrix by column slices; a short last panel's unused entries
        // zeroed first, each block its slice.
        int lo, hi;
        bl_cl_slice(kend, n, C, rank, lo, hi);
        if (kend - k0 < NB) {
            bl_panel_zero(V, W, kend - k0, lo, hi);
            bl_cl_sync();
        }
        bl_panel_update(A, ld, n, kend, V, W, lo, hi);
        bl_cl_sync();
    }
    if (rank == 0 && tid == 0) {
        d[n - 1] = A[(bl_i64)(n - 1) * ld + n - 1];
        e[n - 1] = T(0);
    }
}

// The cluster as bl_eigh_vectors' team (eigh.cu): a thread's rank over all its blocks, a
// sync the cluster's barrier (release / acquire: the scratch's global writes are seen).
struct BlClusterTeam {
    int C;
    __device__ int rank() const { return bl_cl_rank() * blockDim.x + threadIdx.x; }
    __device__ int size() const { return C * blockDim.x; }
    __device__ void sync() const { bl_cl_sync(); }
};

// The tridiagonal (d, e)'s eigenvalues (ascending, by bisection, into ws's sig) and
// vectors (twisted factorisations; close values' vectors orthogonalised) by the whole
// cluster, a value a thread over its blocks: bl_eigh_vectors, every scratch in global
// memory (ws: b2, sig, sc (n each), then X0, X1, Ex (n x n each, row i of the vectors at
// X[i n])); msg: 8 ints. Returns X0 or X1, whichever holds the vectors (their inverse
// norms in sc), or null where the fast path declines (as bl_eigh_fast's callers).
template <typename T>
__device__ const T* bl_tri_vectors_cluster(const T* d, const T* e, int n, T* ws, int* msg, int C) {
    T* b2 = ws;
    T* sig = b2 + n;
    T* sc = sig + n;
    T* X0 = sc + n;
    const bl_i64 nn = (bl_i64)n * n;
    return bl_eigh_vectors(BlClusterTeam{C}, d, e, b2, n, sig, X0, X0 + nn, X0 + 2 * nn, n, sc, msg);
}

// The whole eigh (values ascending, vectors as columns) of one symmetric matrix on the
// cluster, the prototype of docs/proposals/gpu-large-matrices.md: no power-of-two scaling
// and no NaN path yet (the library's kernel adds them as `block` has them). a: the input
// (n x n row-major, whole); Aw (n x ld, with 4 rows more for the reflectors' tiles to read
// past the edge), V and W, d, e, tau: as bl_tridiag_cluster; ws, msg: as
// bl_tri_vectors_cluster; w (n) and vout (n x n row-major): the outputs; Z: scratch for
// bl_refl_apply, BL_REFL_NB_WIDE x (n + BL_REFL_NB_WIDE) elements a block. Shared memory as
// bl_tridiag_cluster's, then n ints (the order). Each block then owns a slice of the
// output's columns: X's columns ordered and normalised, the reflectors applied to them
// (bl_refl_apply, no exchange), the sign convention. False (in every thread) where the
// fast path declines, as for ties: the caller's fallback takes the matrix.
template <typename T>
__device__ bool bl_eigh_cluster(const T* a, int n, T* Aw, int ld, T* V, T* W, T* d, T* e, T* tau, T* ws,
                                int* msg, T* w, T* vout, T* Z, int C) {
    constexpr int VN = BlVec<T>::N;
    const int tid = threadIdx.x, nt = blockDim.x, wid = tid >> 5, nw = nt >> 5;
    const int rank = bl_cl_rank();
    const int nv = (n + VN - 1) / VN * VN;
    int* perm = reinterpret_cast<int*>(reinterpret_cast<T*>(bl_cl_smem()) + 2 * nv + 34 + 2 * BL_EIGH_PANEL);
    int lo, hi;
    bl_cl_slice(0, n, C, rank, lo, hi);
    for (bl_i64 idx = (bl_i64)lo * n + tid; idx < (bl_i64)hi * n; idx += nt) Aw[(idx / n) * ld + idx % n] = a[idx];
    bl_cl_sync();
    bl_tridiag_cluster(Aw, ld, n, V, W, d, e, tau, C);
    const T* X = bl_tri_vectors_cluster(d, e, n, ws, msg, C);
    if (!X) return false;
    const T* sig = ws + n;
    const T* sc = sig + n;
    // Ascending order (bisection's values are, but for ties within rounding): a stable
    // rank sort, each block the whole.
    for (int j = tid; j < n; j += nt) {
        const T sj = sig[j];
        int r = 0;
        for (int i = 0; i < n; ++i) r += (sig[i] < sj) || (sig[i] == sj && i < j);
        perm[r] = j;
    }
    __syncthreads();
    if (rank == 0)
        for (int r = tid; r < n; r += nt) w[r] = sig[perm[r]];
    int c0, c1;
    bl_cl_slice(0, n, C, rank, c0, c1);
    const int nc = c1 > c0 ? c1 - c0 : 0;
    for (bl_i64 idx = tid; idx < (bl_i64)n * nc; idx += nt) {
        const int i = (int)(idx / nc), c = c0 + (int)(idx % nc), kc = perm[c];
        vout[(bl_i64)i * n + c] = X[(bl_i64)i * n + kc] * sc[kc];
    }
    // The reflectors whole (bl_refl_explicit's entries), dealt round the cluster's threads.
    T* R = Aw + ld;  // Q'(r, j) at Aw[r + 1][j]
    const int k = n - 1;
    for (bl_i64 idx = (bl_i64)rank * nt + tid; idx < (bl_i64)k * k; idx += (bl_i64)C * nt) {
        const int j = (int)(idx / k), r = (int)(idx % k);
        if (r <= j) R[j + (bl_i64)r * ld] = r == j ? T(1) : T(0);
    }
    bl_cl_sync();
    if (nc > 0 && k > 0) {
        // V = (1 (+) Q') X on this block's columns: rows 1..n-1.
        const BlRefl<T> rq{R, tau, vout + n + c0, Z, (bl_i64)n, 1, 1, ld, k, k, nc, bl_refl_nb(n)};
        bl_refl_apply(rq);
        for (int c = c0 + wid; c < c1; c += nw) bl_warp_sign(vout + c, (bl_i64)n, n, vout, 0, 0);
    }
    return true;
}
