// batchlin blocked Householder QR spread across the grid (QrKernel::Blocked).
// Needs common.cu before it. NVRTC-compilable: no host headers.
//
// The matrix is copied, scaled by a power of two (max|a| in [0.5, 1)), into a column-major
// work copy W (ld = ldw = m). Panels of NB columns (NB = 16 or 32, the last narrower):
//   bq_panel   one block a matrix factors the panel W[k0:m, k0:k0+nb] column by column
//              (xGEQR2 conventions, tau = 0 rule), in shared memory when it fits, else in
//              place in global memory; builds the panel's T (xLARFT, H = I - V T V^T) on
//              the way: the reduction that gives w = v^T C also gives V^T v.
//              bq_panel_ru (rows in registers, the column loop unrolled, T after the loop)
//              for a lone matrix or small batches, bq_panel_reg for large batches.
//   bq_vtw     Z = op(T) (sum_s Y_s), Y_s = V^T C over row split s (split-K across the
//              grid; the last block of each column tile sums the splits in a fixed order):
//              T^T while factoring (H^T C), T while forming Q (H C)
//   bq_upd     C -= V Z
// Q is formed backwards (xORGQR): Qw = I (m x qcols), then for panels from the last,
// Qw[k0:m, k0:qcols] = H_p Qw[k0:m, k0:qcols]. R and Q are written out with the signs
// that make diag(R) >= 0, the scale undone, NaN for a matrix with NaN/Inf input.
// Grids are flat: block x = matrix * tiles + tile (no 65535 limit on the batch).

struct BqArgs {
    const void* a;  // input A (bq_max, bq_load)
    bl_i64 a_bs, a_rs, a_cs;
    void* o;  // output R or Q (bq_store_r, bq_store_q)
    bl_i64 o_bs, o_rs, o_cs;
    void* w;  // factor work, column-major, ld = ldw
    bl_i64 w_bs;
    void* c;  // the C of an update (W or Qw), column-major, ld = ldw
    bl_i64 c_bs;
    void* tau;  // batch x k
    void* t;    // T of every panel: t + b * t_bs + panel * NB * NB, row-major NB x NB
    bl_i64 t_bs;
    void* y;  // bq_vtw split partials: ((b * nsplit + s) * NB + row) * ldy + col
    void* z;  // bq_vtw result: (b * NB + row) * ldy + col
    unsigned long long* mx;  // per matrix: bits of max|a| (+inf: NaN/Inf seen)
    unsigned int* info;
    unsigned int* cnt;  // bq_vtc_tw: a counter per (matrix, column tile), zero between launches
    int batch, m, n, k, ldw;
    int k0, nb, panel;  // the panel: columns [k0, k0 + nb)
    int c0, c1;         // columns of C updated: [c0, c1)
    int nsplit, srows;  // bq_vtw: row splits of srows rows each, from row k0
    int ldy;            // c1 - c0
    int trans;          // bq_vtw: 1 -> T^T (factoring), 0 -> T (forming Q)
    int orows, ocols;   // bq_store_*: output rows x columns; bq_load / bq_max: m x n
    int tiles;          // blocks a matrix (flat grids)
};

// The matrix's scale exponent e (max|a| = f * 2^e, f in [0.5, 1)) and whether it is bad.
template <typename T>
__device__ __forceinline__ void bq_scale_of(const BqArgs& p, bl_i64 b, T& mxv, int& e, bool& bad) {
    mxv = BlBits<T>::from(p.mx[b]);
    e = bl_scale_exp(mxv, bad);
}

// 32x32 tiles of an rows x cols matrix, 256 threads (32 x 8): tile t of a matrix.
__device__ __forceinline__ void bq_tile(int tile, int rows, int& i0, int& j0) {
    const int tr = (rows + 31) >> 5;
    const int tj = tile / tr;
    i0 = (tile - tj * tr) << 5;
    j0 = tj << 5;
}

// ---------------------------------------------------------------------------------
// max|a| per matrix (atomicMax on the bits of non-negative values; NaN/Inf -> +inf).

template <typename T>
__device__ __forceinline__ void bq_max(const BqArgs& p) {
    __shared__ unsigned long long s_m[8];
    const bl_i64 b = blockIdx.x / p.tiles;
    const int tile = (int)(blockIdx.x - b * p.tiles);
    int i0, j0;
    bq_tile(tile, p.m, i0, j0);
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    const bool rowfast = (p.a_cs < 0 ? -p.a_cs : p.a_cs) <= (p.a_rs < 0 ? -p.a_rs : p.a_rs);
    const T* A = (const T*)p.a + b * p.a_bs;
    T mx = T(0);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int u = ty + 8 * q;
        const int i = i0 + (rowfast ? u : tx), j = j0 + (rowfast ? tx : u);
        if (i < p.m && j < p.n) {
            const T f = bl_absflag(A[(bl_i64)i * p.a_rs + (bl_i64)j * p.a_cs]);
            mx = f > mx ? f : mx;
        }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const T o = bl_shfl_xor(mx, off);
        mx = o > mx ? o : mx;
    }
    if (tx == 0) s_m[ty] = BlBits<T>::to(mx);
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long r = s_m[0];
        for (int w = 1; w < 8; ++w) r = s_m[w] > r ? s_m[w] : r;
        if (r != 0ull) atomicMax(p.mx + b, r);
    }
}

// W = A * 2^-e, column-major (through a shared tile: reads and writes coalesced).
template <typename T>
__device__ __forceinline__ void bq_load(const BqArgs& p) {
    __shared__ T s[32][33];
    const bl_i64 b = blockIdx.x / p.tiles;
    const int tile = (int)(blockIdx.x - b * p.tiles);
    int i0, j0;
    bq_tile(tile, p.m, i0, j0);
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    const bool rowfast = (p.a_cs < 0 ? -p.a_cs : p.a_cs) <= (p.a_rs < 0 ? -p.a_rs : p.a_rs);
    const T* A = (const T*)p.a + b * p.a_bs;
    T mxv;
    int e;
    bool bad;
    bq_scale_of<T>(p, b, mxv, e, bad);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int u = ty + 8 * q;
        const int il = rowfast ? u : tx, jl = rowfast ? tx : u;
        const int i = i0 + il, j = j0 + jl;
        T x = T(0);
        if (i < p.m && j < p.n) x = A[(bl_i64)i * p.a_rs + (bl_i64)j * p.a_cs];
        s[il][jl] = x;
    }
    __syncthreads();
    T* W = (T*)p.w + b * p.w_bs;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int jl = ty + 8 * q;
        const int i = i0 + tx, j = j0 + jl;
        if (i < p.m && j < p.n) W[i + (bl_i64)j * p.ldw] = e != 0 ? bl_scale2(s[tx][jl], -e) : s[tx][jl];
    }
}

// Qw = the first ocols columns of I_m (column-major, ld = ldw).
template <typename T>
__device__ __forceinline__ void bq_eye(const BqArgs& p) {
    const bl_i64 b = blockIdx.x / p.tiles;
    const int tile = (int)(blockIdx.x - b * p.tiles);
    int i0, j0;
    bq_tile(tile, p.m, i0, j0);
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    T* C = (T*)p.c + b * p.c_bs;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int i = i0 + tx, j = j0 + ty + 8 * q;
        if (i < p.m && j < p.ocols) C[i + (bl_i64)j * p.ldw] = (i == j) ? T(1) : T(0);
    }
}

// R (orows x n) or Q (m x ocols) from the work copies, into the caller's strides.
// R: upper trapezoid of W, row i times sign(W_ii), times 2^e. Q: column j of Qw times
// sign(W_jj) for j < k. NaN everywhere for a bad matrix. The first tile of each matrix
// of bq_store_r also writes its info word.
template <typename T, bool IS_Q>
__device__ __forceinline__ void bq_store(const BqArgs& p) {
    __shared__ T s[32][33];
    __shared__ T s_sg[32];
    const bl_i64 b = blockIdx.x / p.tiles;
    const int tile = (int)(blockIdx.x - b * p.tiles);
    int i0, j0;
    bq_tile(tile, p.orows, i0, j0);
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    T mxv;
    int e;
    bool bad;
    bq_scale_of<T>(p, b, mxv, e, bad);
    const T* W = (const T*)p.w + b * p.w_bs;
    const int K = p.k;
    if (threadIdx.x < 32) {
        const int d = (IS_Q ? j0 : i0) + tx;  // the sign's index: Q column / R row
        s_sg[tx] = (d < K && W[d + (bl_i64)d * p.ldw] < T(0)) ? T(-1) : T(1);
    }
    const T* S = IS_Q ? (const T*)p.c + b * p.c_bs : W;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int jl = ty + 8 * q;
        const int i = i0 + tx, j = j0 + jl;
        T x = T(0);
        if (i < p.orows && j < p.ocols) {
            if (IS_Q) x = S[i + (bl_i64)j * p.ldw];
            else if (i <= j && i < K) x = S[i + (bl_i64)j * p.ldw];
        }
        s[tx][jl] = x;
    }
    __syncthreads();
    const bool rowfast = (p.o_cs < 0 ? -p.o_cs : p.o_cs) <= (p.o_rs < 0 ? -p.o_rs : p.o_rs);
    T* O = (T*)p.o + b * p.o_bs;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int u = ty + 8 * q;
        const int il = rowfast ? u : tx, jl = rowfast ? tx : u;
        const int i = i0 + il, j = j0 + jl;
        if (i < p.orows && j < p.ocols) {
            const T sg = IS_Q ? s_sg[jl] : s_sg[il];
            T v = s[il][jl] * sg;
            if (!IS_Q && e != 0) v = bl_scale2(v, e);
            O[(bl_i64)i * p.o_rs + (bl_i64)j * p.o_cs] = bad ? BlT<T>::nan() : v;
        }
    }
    if (!IS_Q && tile == 0 && p.info) {
        // The rank rule (bl_rank_deficient) over W's diagonal, reduced over the block.
        __shared__ T s_dr[2][32];
        T dmin = BlT<T>::huge(), dmax = T(0);
        for (int d = threadIdx.x; d < K; d += blockDim.x) bl_diag_range(W[d + (bl_i64)d * p.ldw], dmin, dmax);
        for (int o = 16; o > 0; o >>= 1) {
            const T lo = __shfl_xor_sync(0xffffffffu, dmin, o), hi = __shfl_xor_sync(0xffffffffu, dmax, o);
            dmin = lo < dmin ? lo : dmin;
            dmax = hi > dmax ? hi : dmax;
        }
        if ((threadIdx.x & 31) == 0) {
            s_dr[0][threadIdx.x >> 5] = dmin;
            s_dr[1][threadIdx.x >> 5] = dmax;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int w = 1; w < (int)(blockDim.x >> 5); ++w) {
                dmin = s_dr[0][w] < dmin ? s_dr[0][w] : dmin;
                dmax = s_dr[1][w] > dmax ? s_dr[1][w] : dmax;
            }
            const bool rd = bl_rank_deficient(dmin, dmax, p.m, p.n);
            p.info[b] = bad ? BL_INFO_NONFINITE : (rd ? BL_INFO_RANK_DEFICIENT : 0u);
        }
        // R beyond the range once scaled back (where the scale allows it: rare), over the
        // whole factored W, which the other tiles' blocks only read: after the word above.
        if (!bad && bl_r_may_overflow<T>(e, p.m)) {
            int o = 0;
            for (bl_i64 idx = threadIdx.x; idx < (bl_i64)K * p.n; idx += blockDim.x) {
                const int j = (int)(idx / K), i = (int)(idx - (bl_i64)j * K);
                if (i <= j && bl_beyond_range(bl_scale2(W[i + (bl_i64)j * p.ldw], e))) o = 1;
            }
            if (__syncthreads_or(o) && threadIdx.x == 0) p.info[b] |= BL_INFO_OVERFLOW;
        }
    }
}

// ---------------------------------------------------------------------------------
// Panel factorisation, one block a matrix. Thread t owns rows t, t + NT, ... of the
// panel for the whole kernel, so only the reductions cross threads (3 barriers a column).

// One step of a warp's transposing reduction of NB values a lane: stage OFF halves the
// values each lane keeps (or, while 2 * OFF > NB, adds lane pairs); in the end lane l
// holds the warp's sum of value l % NB in a[0].
template <typename T, int NB, int OFF>
__device__ __forceinline__ void bq_vstage(T (&a)[NB], int lane) {
    if (2 * OFF > NB) {
#pragma unroll
        for (int i = 0; i < NB; ++i) a[i] += bl_shfl_xor(a[i], OFF);
    } else {
        const bool up = (lane & OFF) != 0;
#pragma unroll
        for (int i = 0; i < OFF; ++i) {
            const T send = up ? a[i] : a[i + OFF];
            const T keep = up ? a[i + OFF] : a[i];
            a[i] = keep + bl_shfl_xor(send, OFF);
        }
    }
}

template <typename T, int NB>
__device__ __forceinline__ T bq_warp_vsum(T (&a)[NB], int lane) {
    bq_vstage<T, NB, 16>(a, lane);
    bq_vstage<T, NB, 8>(a, lane);
    bq_vstage<T, NB, 4>(a, lane);
    bq_vstage<T, NB, 2>(a, lane);
    bq_vstage<T, NB, 1>(a, lane);
    return a[0];
}

template <typename T, int NB, bool SM>
__device__ __forceinline__ void bq_panel(const BqArgs& p) {
    extern __shared__ __align__(16) unsigned char bq_dsm[];
    __shared__ T s_ss[32];
    __shared__ T s_red[32][NB + 1];
    __shared__ T s_w[NB];
    __shared__ T s_T[NB][NB + 1];
    const int tid = threadIdx.x, NT = blockDim.x, lane = tid & 31, wid = tid >> 5, NW = NT >> 5;
    const bl_i64 b = blockIdx.x;
    const int k0 = p.k0, nb = p.nb, r = p.m - k0;
    const int ldg = p.ldw;
    T* Wp = (T*)p.w + b * p.w_bs + k0 + (bl_i64)k0 * ldg;
    T* P;
    int ld;
    if (SM) {
        P = (T*)bq_dsm;
        ld = r;
        for (int j = 0; j < nb; ++j)
            for (int i = tid; i < r; i += NT) P[i + j * ld] = Wp[i + (bl_i64)j * ldg];
        // no barrier needed: each thread reads back only its own rows until the first one
    } else {
        P = Wp;
        ld = ldg;
    }
    for (int kk = 0; kk < nb; ++kk) {
        T* pc = P + (bl_i64)kk * ld;
        T part = T(0);
        for (int i = tid; i < r; i += NT)
            if (i > kk) {
                const T x = pc[i];
                part += x * x;
            }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) part += bl_shfl_xor(part, off);
        if (lane == 0) s_ss[wid] = part;
        __syncthreads();
        T ss = T(0);
        for (int w = 0; w < NW; ++w) ss += s_ss[w];
        const T alpha = pc[kk];
        T beta, tau, scal;
        bl_householder_nb(alpha, ss, beta, tau, scal);
        // v below the diagonal (own rows), and acc[j] = v^T P[:, j] for j != kk: for
        // j > kk the w of the update, for j < kk column kk of V^T V (for T).
        T acc[NB];
#pragma unroll
        for (int j = 0; j < NB; ++j) acc[j] = T(0);
        for (int i = tid; i < r; i += NT) {
            if (i < kk) continue;
            T vi = T(1);
            if (i > kk) {
                vi = pc[i] * scal;
                pc[i] = vi;
            }
#pragma unroll
            for (int j = 0; j < NB; ++j)
                if (j < nb && j != kk) acc[j] += vi * P[i + (bl_i64)j * ld];
        }
        const T mine = bq_warp_vsum<T, NB>(acc, lane);
        if (lane < NB) s_red[wid][lane] = mine;
        __syncthreads();
        if (tid < NB) {
            T s = T(0);
            for (int w = 0; w < NW; ++w) s += s_red[w][tid];
            s_w[tid] = s;
        }
        __syncthreads();
        // T[0:kk, kk] = -tau T[0:kk, 0:kk] (V^T v)[0:kk]; thread i owns row i of T.
        if (tid < kk) {
            T s = T(0);
            for (int l = tid; l < kk; ++l) s += s_T[tid][l] * s_w[l];
            s_T[tid][kk] = -tau * s;
        } else if (tid == kk) {
            s_T[kk][kk] = tau;
        }
        if (tau != T(0)) {
            for (int i = tid; i < r; i += NT) {
                if (i < kk) continue;
                const T tv = tau * ((i == kk) ? T(1) : pc[i]);
#pragma unroll
                for (int j = 0; j < NB; ++j)
                    if (j > kk && j < nb) P[i + (bl_i64)j * ld] -= tv * s_w[j];
            }
        }
        if (tid == kk) pc[kk] = beta;  // row kk is owned by thread kk (NT >= NB)
    }
    __syncthreads();
    if (SM) {
        for (int j = 0; j < nb; ++j)
            for (int i = tid; i < r; i += NT) Wp[i + (bl_i64)j * ldg] = P[i + j * ld];
    }
    if (tid < nb) ((T*)p.tau)[b * p.k + k0 + tid] = s_T[tid][tid];
    T* Tg = (T*)p.t + b * p.t_bs + (bl_i64)p.panel * NB * NB;
    for (int idx = tid; idx < NB * NB; idx += NT) {
        const int i = idx / NB, j = idx - i * NB;
        Tg[idx] = (i <= j && j < nb) ? s_T[i][j] : T(0);
    }
}

// ---------------------------------------------------------------------------------
// bq_panel with the panel in registers (panels of up to RPT * 512 rows). Thread t owns rows t + q*NT
// (q < RPT) of the panel as NB registers each; column kk is picked out by a select chain
// (kk is a run-time loop index), so no shared-memory traffic outside the reductions.
// Same arithmetic as bq_panel; 25% faster at 1x1024x1024 f32 (blocked-QR lab, 2026-11-30:
// docs/results/h200/2026-11-30-qr-blocked-panel-prefetch/).
template <typename T, int NB, int RPT>
__device__ __forceinline__ void bq_panel_reg(const BqArgs& p) {
    __shared__ T s_ss[32];
    __shared__ T s_alpha[1];
    __shared__ T s_red[32][NB + 1];
    __shared__ T s_w[NB];
    __shared__ T s_T[NB][NB + 1];
    const int tid = threadIdx.x, NT = blockDim.x, lane = tid & 31, wid = tid >> 5, NW = NT >> 5;
    const bl_i64 b = blockIdx.x;
    const int k0 = p.k0, nb = p.nb, r = p.m - k0;
    const int ldg = p.ldw;
    T* Wp = (T*)p.w + b * p.w_bs + k0 + (bl_i64)k0 * ldg;
    T a[RPT][NB];
#pragma unroll
    for (int q = 0; q < RPT; ++q) {
        const int i = tid + q * NT;
#pragma unroll
        for (int j = 0; j < NB; ++j) a[q][j] = (i < r && j < nb) ? Wp[i + (bl_i64)j * ldg] : T(0);
    }
    for (int kk = 0; kk < nb; ++kk) {
        T x[RPT];
        T part = T(0);
#pragma unroll
        for (int q = 0; q < RPT; ++q) {
            T v = a[q][0];
#pragma unroll
            for (int j = 1; j < NB; ++j) v = (j == kk) ? a[q][j] : v;
            x[q] = v;
            if (tid + q * NT > kk) part += v * v;
        }
        if (tid == kk) s_alpha[0] = x[0];
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) part += bl_shfl_xor(part, off);
        if (lane == 0) s_ss[wid] = part;
        __syncthreads();
        T ss = T(0);
        for (int w = 0; w < NW; ++w) ss += s_ss[w];
        const T alpha = s_alpha[0];
        T beta, tau, scal;
        bl_householder_nb(alpha, ss, beta, tau, scal);
        T v[RPT];
#pragma unroll
        for (int q = 0; q < RPT; ++q) {
            const int i = tid + q * NT;
            v[q] = (i > kk) ? x[q] * scal : (i == kk ? T(1) : T(0));
            if (i > kk) {
#pragma unroll
                for (int j = 0; j < NB; ++j)
                    if (j == kk) a[q][j] = v[q];
            }
        }
        T acc[NB];
#pragma unroll
        for (int j = 0; j < NB; ++j) acc[j] = T(0);
#pragma unroll
        for (int q = 0; q < RPT; ++q)
#pragma unroll
            for (int j = 0; j < NB; ++j) acc[j] += v[q] * a[q][j];
        const T mine = bq_warp_vsum<T, NB>(acc, lane);
        if (lane < NB) s_red[wid][lane] = mine;
        __syncthreads();
        if (tid < NB) {
            T s = T(0);
            for (int w = 0; w < NW; ++w) s += s_red[w][tid];
            s_w[tid] = s;
        }
        __syncthreads();
        if (tid < kk) {
            T s = T(0);
            for (int l = tid; l < kk; ++l) s += s_T[tid][l] * s_w[l];
            s_T[tid][kk] = -tau * s;
        } else if (tid == kk) {
            s_T[kk][kk] = tau;
        }
        if (tau != T(0)) {
#pragma unroll
            for (int q = 0; q < RPT; ++q) {
                const T tv = tau * v[q];
#pragma unroll
                for (int j = 0; j < NB; ++j)
                    if (j > kk) a[q][j] -= tv * s_w[j];
            }
        }
        if (tid == kk) {
#pragma unroll
            for (int j = 0; j < NB; ++j)
                if (j == kk) a[0][j] = beta;
        }
    }
#pragma unroll
    for (int q = 0; q < RPT; ++q) {
        const int i = tid + q * NT;
#pragma unroll
        for (int j = 0; j < NB; ++j)
            if (i < r && j < nb) Wp[i + (bl_i64)j * ldg] = a[q][j];
    }
    __syncthreads();
    if (tid < nb) ((T*)p.tau)[b * p.k + k0 + tid] = s_T[tid][tid];
    T* Tg = (T*)p.t + b * p.t_bs + (bl_i64)p.panel * NB * NB;
    for (int idx = tid; idx < NB * NB; idx += NT) {
        const int i = idx / NB, j = idx - i * NB;
        Tg[idx] = (i <= j && j < nb) ? s_T[i][j] : T(0);
    }
}
// ---------------------------------------------------------------------------------
// bq_panel_ru: the register panel with the column loop unrolled (NB compile-time steps,
// the last panel's nb <= NB by a uniform guard), so column kk of the rows in registers is
// addressed directly (no select chains) and the rank-1 update touches only the columns
// right of kk. T is not built during the loop: each step keeps V^T v_kk (which the one
// vector reduction gives anyway) and tau_kk; after the loop thread i builds row i of T by
// the row recurrence T[i][j] = -tau_j sum_{l<j} T[i][l] (V^T v_j)[l] (T[i][i] = tau_i),
// which needs no barrier. Thread t owns rows t + q*NT (q < RPT): panels of up to
// RPT * 512 rows.
template <typename T, int NB, int RPT>
__device__ __forceinline__ void bq_panel_ru(const BqArgs& p) {
    __shared__ T s_ss[32];
    __shared__ T s_alpha[1];
    __shared__ T s_red[32][NB + 1];
    __shared__ T s_g[NB][NB + 1];  // s_g[kk][l] = (V^T v_kk)[l] (l > kk: w of the update)
    __shared__ T s_tau[NB];
    const int tid = threadIdx.x, NT = blockDim.x, lane = tid & 31, wid = tid >> 5, NW = NT >> 5;
    const bl_i64 b = blockIdx.x;
    const int k0 = p.k0, nb = p.nb, r = p.m - k0;
    const int ldg = p.ldw;
    T* Wp = (T*)p.w + b * p.w_bs + k0 + (bl_i64)k0 * ldg;
    T a[RPT][NB];
#pragma unroll
    for (int q = 0; q < RPT; ++q) {
        const int i = tid + q * NT;
#pragma unroll
        for (int j = 0; j < NB; ++j) a[q][j] = (i < r && j < nb) ? Wp[i + (bl_i64)j * ldg] : T(0);
    }
#pragma unroll
    for (int kk = 0; kk < NB; ++kk) {
        if (kk < nb) {
            T part = T(0);
#pragma unroll
            for (int q = 0; q < RPT; ++q)
                if (tid + q * NT > kk) part += a[q][kk] * a[q][kk];
            if (tid == kk) s_alpha[0] = a[0][kk];
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) part += bl_shfl_xor(part, off);
            if (lane == 0) s_ss[wid] = part;
            __syncthreads();
            T ss = T(0);
            for (int w = 0; w < NW; ++w) ss += s_ss[w];
            const T alpha = s_alpha[0];
            T beta, tau, scal;
            bl_householder_nb(alpha, ss, beta, tau, scal);
            T v[RPT];
#pragma unroll
            for (int q = 0; q < RPT; ++q) {
                const int i = tid + q * NT;
                v[q] = (i > kk) ? a[q][kk] * scal : (i == kk ? T(1) : T(0));
                if (i > kk) a[q][kk] = v[q];
            }
            T acc[NB];
#pragma unroll
            for (int j = 0; j < NB; ++j) {
                acc[j] = T(0);
                if (j != kk)
#pragma unroll
                    for (int q = 0; q < RPT; ++q) acc[j] += v[q] * a[q][j];
            }
            const T mine = bq_warp_vsum<T, NB>(acc, lane);
            if (lane < NB) s_red[wid][lane] = mine;
            __syncthreads();
            if (tid < NB) {
                T s = T(0);
                for (int w = 0; w < NW; ++w) s += s_red[w][tid];
                s_g[kk][tid] = s;
            }
            if (tid == 0) s_tau[kk] = tau;
            __syncthreads();
            if (kk + 1 < NB && tau != T(0)) {
#pragma unroll
                for (int j = kk + 1; j < NB; ++j) {
                    const T tw = tau * s_g[kk][j];
#pragma unroll
                    for (int q = 0; q < RPT; ++q) a[q][j] -= tw * v[q];
                }
            }
            if (tid == kk) a[0][kk] = beta;
        }
    }
#pragma unroll
    for (int q = 0; q < RPT; ++q) {
        const int i = tid + q * NT;
#pragma unroll
        for (int j = 0; j < NB; ++j)
            if (i < r && j < nb) Wp[i + (bl_i64)j * ldg] = a[q][j];
    }
    // T, row tid: T[i][j] = 0 (j < i), tau_i (j = i), -tau_j sum_{i<=l<j} T[i][l] g_j[l].
    if (tid < NB) {
        const int i = tid;
        T row[NB];
#pragma unroll
        for (int j = 0; j < NB; ++j) {
            T s = T(0);
#pragma unroll
            for (int l = 0; l < j; ++l) s += row[l] * s_g[j][l];
            const T tj = j < nb ? s_tau[j] : T(0);
            row[j] = (j < i || j >= nb) ? T(0) : (j == i ? tj : -tj * s);
        }
        if (i < nb) ((T*)p.tau)[b * p.k + k0 + i] = row[i];
        T* Tg = (T*)p.t + b * p.t_bs + (bl_i64)p.panel * NB * NB + i * NB;
#pragma unroll
        for (int j = 0; j < NB; ++j) Tg[j] = row[j];
    }
}
// ---------------------------------------------------------------------------------
// The update C -= V op(T) V^T C of rows [k0, m), columns [c0, c1) of C.
// V (r x nb, unit lower trapezoidal) is read from W's panel columns with the mask.

template <typename T>
__device__ __forceinline__ T bq_v(const T* Wv, bl_i64 ld, int il, int a, int nb) {
    // element (il, a) of V, il counted from row k0, Wv = &W[k0, k0]
    if (a >= nb || il < a) return T(0);
    if (il == a) return T(1);
    return Wv[il + a * ld];
}

// acc = V[split s]^T C[split s, c-tile] for this block's NB x 64 outputs (256 threads,
// thread (tx, ty) owns rows ty + 16x, columns tx + 16y). Grid: matrix * (nsplit * ctiles)
// + s * ctiles + ct. Vs and Cs are the caller's shared arrays; free again on return.
// PF: the next 32-row chunk of V and C is loaded into registers while the current one is
// multiplied (one barrier pair a chunk either way).
template <typename T, int NB, bool PF>
__device__ __forceinline__ void bq_vtc_acc(const BqArgs& p, T (*Vs)[NB + 1], T (*Cs)[65], bl_i64 b, int s, int ct,
                                           T (&acc)[NB / 16][4]) {
    constexpr int AR = NB / 16, VPT = 32 * NB / 256, CPT = 32 * 64 / 256;
    const int r = p.m - p.k0;
    const int rs0 = s * p.srows, rs1 = min(r, rs0 + p.srows);
    const int col0 = p.c0 + ct * 64;
    const bl_i64 ld = p.ldw;
    const T* Wv = (const T*)p.w + b * p.w_bs + p.k0 + (bl_i64)p.k0 * ld;
    const T* C = (const T*)p.c + b * p.c_bs + p.k0;
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
#pragma unroll
    for (int x = 0; x < AR; ++x)
#pragma unroll
        for (int y = 0; y < 4; ++y) acc[x][y] = T(0);
    T vr[VPT], cr[CPT];
    if (PF && rs0 < rs1) {
#pragma unroll
        for (int u = 0; u < VPT; ++u) {
            const int idx = tid + 256 * u, il = idx & 31, a = idx >> 5, i = rs0 + il;
            vr[u] = (i < rs1) ? bq_v(Wv, ld, i, a, p.nb) : T(0);
        }
#pragma unroll
        for (int u = 0; u < CPT; ++u) {
            const int idx = tid + 256 * u, il = idx & 31, cc = idx >> 5, i = rs0 + il, col = col0 + cc;
            cr[u] = (i < rs1 && col < p.c1) ? C[i + (bl_i64)col * ld] : T(0);
        }
    }
    for (int ib = rs0; ib < rs1; ib += 32) {
        if (PF) {
#pragma unroll
            for (int u = 0; u < VPT; ++u) {
                const int idx = tid + 256 * u;
                Vs[idx & 31][idx >> 5] = vr[u];
            }
#pragma unroll
            for (int u = 0; u < CPT; ++u) {
                const int idx = tid + 256 * u;
                Cs[idx & 31][idx >> 5] = cr[u];
            }
        } else {
            for (int idx = tid; idx < 32 * NB; idx += 256) {
                const int il = idx & 31, a = idx >> 5;
                const int i = ib + il;
                Vs[il][a] = (i < rs1) ? bq_v(Wv, ld, i, a, p.nb) : T(0);
            }
            for (int idx = tid; idx < 32 * 64; idx += 256) {
                const int il = idx & 31, cc = idx >> 5;
                const int i = ib + il, col = col0 + cc;
                Cs[il][cc] = (i < rs1 && col < p.c1) ? C[i + (bl_i64)col * ld] : T(0);
            }
        }
        __syncthreads();
        if (PF && ib + 32 < rs1) {
            const int nb0 = ib + 32;
#pragma unroll
            for (int u = 0; u < VPT; ++u) {
                const int idx = tid + 256 * u, il = idx & 31, a = idx >> 5, i = nb0 + il;
                vr[u] = (i < rs1) ? bq_v(Wv, ld, i, a, p.nb) : T(0);
            }
#pragma unroll
            for (int u = 0; u < CPT; ++u) {
                const int idx = tid + 256 * u, il = idx & 31, cc = idx >> 5, i = nb0 + il, col = col0 + cc;
                cr[u] = (i < rs1 && col < p.c1) ? C[i + (bl_i64)col * ld] : T(0);
            }
        }
#pragma unroll 8
        for (int il = 0; il < 32; ++il) {
            T v[AR], c[4];
#pragma unroll
            for (int x = 0; x < AR; ++x) v[x] = Vs[il][ty + 16 * x];
#pragma unroll
            for (int y = 0; y < 4; ++y) c[y] = Cs[il][tx + 16 * y];
#pragma unroll
            for (int x = 0; x < AR; ++x)
#pragma unroll
                for (int y = 0; y < 4; ++y) acc[x][y] += v[x] * c[y];
        }
        __syncthreads();
    }
}

// Z = op(T) sum_s Y_s (T^T while factoring, T while forming Q), Y_s = V^T C over row
// split s: the product and op(T) in one launch. With one split the block applies op(T) to its
// own tile from shared memory; with several, each block writes its split's partial, and
// the last block of a (matrix, column tile) to finish (a counter per tile in p.cnt, zeroed
// once a call and reset by that block) sums the splits in a fixed order and applies
// op(T): deterministic, one launch fewer per update (1024^2 f32 4.62 -> 4.33 ms: blocked-QR
// lab, docs/results/h200/2026-11-30-qr-blocked-panel-prefetch/).
template <typename T, int NB, bool PF>
__device__ __forceinline__ void bq_vtc_tw(const BqArgs& p) {
    constexpr int AR = NB / 16, PT = NB * 64 / 256;  // outputs a thread in the tail
    __shared__ T Vs[32][NB + 1];
    __shared__ T Cs[32][65];  // the C chunks; then (NB <= 32 rows) the summed Y tile
    __shared__ T Ts[NB][NB + 1];
    __shared__ int s_last;
    const bl_i64 b = blockIdx.x / p.tiles;
    const int rest = (int)(blockIdx.x - b * p.tiles);
    const int ctiles = p.tiles / p.nsplit;
    const int s = rest / ctiles, ct = rest - s * ctiles;
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    T acc[AR][4];
    bq_vtc_acc<T, NB, PF>(p, Vs, Cs, b, s, ct, acc);
    if (p.nsplit == 1) {
#pragma unroll
        for (int x = 0; x < AR; ++x)
#pragma unroll
            for (int y = 0; y < 4; ++y) Cs[ty + 16 * x][tx + 16 * y] = acc[x][y];
    } else {
        T* Y = (T*)p.y + ((b * p.nsplit + s) * NB) * (bl_i64)p.ldy;
#pragma unroll
        for (int x = 0; x < AR; ++x)
#pragma unroll
            for (int y = 0; y < 4; ++y) {
                const int a = ty + 16 * x, cc = ct * 64 + tx + 16 * y;
                if (cc < p.ldy) Y[(bl_i64)a * p.ldy + cc] = acc[x][y];
            }
        __threadfence();
        __syncthreads();
        if (tid == 0) s_last = atomicAdd(p.cnt + b * ctiles + ct, 1u) == (unsigned)(p.nsplit - 1);
        __syncthreads();
        if (!s_last) return;
        __threadfence();
        if (tid == 0) p.cnt[b * ctiles + ct] = 0u;
        // The sum in split order; a thread's PT outputs loaded together (independent
        // loads in flight), each still summed in the same fixed order.
        const T* Ys = (const T*)p.y + (b * p.nsplit * NB) * (bl_i64)p.ldy;
        const int cc = tid & 63, a0 = tid >> 6, col = ct * 64 + cc;
        T sum[PT];
#pragma unroll
        for (int u = 0; u < PT; ++u) sum[u] = T(0);
        if (col < p.ldy) {
#pragma unroll 2
            for (int sp = 0; sp < p.nsplit; ++sp) {
                T y[PT];
#pragma unroll
                for (int u = 0; u < PT; ++u) y[u] = __ldcg(Ys + ((bl_i64)sp * NB + a0 + 4 * u) * p.ldy + col);
#pragma unroll
                for (int u = 0; u < PT; ++u) sum[u] += y[u];
            }
        }
#pragma unroll
        for (int u = 0; u < PT; ++u) Cs[a0 + 4 * u][cc] = sum[u];
    }
    const T* Tg = (const T*)p.t + b * p.t_bs + (bl_i64)p.panel * NB * NB;
    for (int idx = tid; idx < NB * NB; idx += 256) {
        const int i = idx / NB, j = idx - i * NB;
        if (p.trans) Ts[j][i] = Tg[idx];
        else Ts[i][j] = Tg[idx];
    }
    __syncthreads();
    T* Z = (T*)p.z + (b * NB) * (bl_i64)p.ldy;
    for (int idx = tid; idx < NB * 64; idx += 256) {
        const int a = idx >> 6, cc = idx & 63;
        const int col = ct * 64 + cc;
        T sum = T(0);
#pragma unroll
        for (int l = 0; l < NB; ++l) sum += Ts[a][l] * Cs[l][cc];
        if (col < p.ldy) Z[(bl_i64)a * p.ldy + col] = sum;
    }
}

// C[k0:m, c0:c1] -= V Z: 64 x 64 tiles, 256 threads, 4 x 4 a thread.
// Grid: matrix * (rtiles * ctiles) + rt * ctiles + ct, tiles = rtiles * ctiles.
// PF: the thread's C elements are loaded first, in flight while V and Z are staged (and
// subtracted at the end as without PF: C - (V Z), the same rounding; folding C into the
// accumulator instead doubled the factorisation's error, measured in the lab).
template <typename T, int NB, bool PF>
__device__ __forceinline__ void bq_upd(const BqArgs& p) {
    __shared__ T Vs[NB][65];
    __shared__ T Zs[NB][65];
    const bl_i64 b = blockIdx.x / p.tiles;
    const int rest = (int)(blockIdx.x - b * p.tiles);
    const int ctiles = (p.ldy + 63) >> 6;
    const int rt = rest / ctiles, ct = rest - rt * ctiles;
    const int r = p.m - p.k0;
    const int row0 = rt * 64, cl0 = ct * 64;
    const bl_i64 ld = p.ldw;
    const T* Wv = (const T*)p.w + b * p.w_bs + p.k0 + (bl_i64)p.k0 * ld;
    T* C = (T*)p.c + b * p.c_bs + p.k0 + (bl_i64)p.c0 * ld;
    const T* Z = (const T*)p.z + (b * NB) * (bl_i64)p.ldy;
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    T acc[4][4], cv[4][4];
#pragma unroll
    for (int y = 0; y < 4; ++y) {
        const int col = cl0 + ty + 16 * y;
#pragma unroll
        for (int x = 0; x < 4; ++x) {
            const int i = row0 + tx + 16 * x;
            acc[x][y] = T(0);
            cv[x][y] = (PF && col < p.ldy && i < r) ? C[i + (bl_i64)col * ld] : T(0);
        }
    }
    for (int idx = tid; idx < 64 * NB; idx += 256) {
        const int il = idx & 63, a = idx >> 6;
        const int i = row0 + il;
        Vs[a][il] = (i < r) ? bq_v(Wv, ld, i, a, p.nb) : T(0);
        const int cc = idx & 63;
        const int col = cl0 + cc;
        Zs[a][cc] = (col < p.ldy) ? Z[(bl_i64)a * p.ldy + col] : T(0);
    }
    __syncthreads();
#pragma unroll
    for (int a = 0; a < NB; ++a) {
        T v[4], z[4];
#pragma unroll
        for (int x = 0; x < 4; ++x) v[x] = Vs[a][tx + 16 * x];
#pragma unroll
        for (int y = 0; y < 4; ++y) z[y] = Zs[a][ty + 16 * y];
#pragma unroll
        for (int x = 0; x < 4; ++x)
#pragma unroll
            for (int y = 0; y < 4; ++y) acc[x][y] += v[x] * z[y];
    }
#pragma unroll
    for (int y = 0; y < 4; ++y) {
        const int col = cl0 + ty + 16 * y;
        if (col >= p.ldy) continue;
#pragma unroll
        for (int x = 0; x < 4; ++x) {
            const int i = row0 + tx + 16 * x;
            if (i < r) {
                if (PF) C[i + (bl_i64)col * ld] = cv[x][y] - acc[x][y];
                else C[i + (bl_i64)col * ld] -= acc[x][y];
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Instantiations. Keep the list in step with cuda/qr_blocked.rs (instantiations()).

#define BL_BQ_K(NAME, TN, BODY) \
    extern "C" __global__ void __launch_bounds__(256) NAME##_##TN(BqArgs p) { BODY; }
#define BL_BQ_MAX(TN, T) BL_BQ_K(bq_max, TN, bq_max<T>(p))
#define BL_BQ_LOAD(TN, T) BL_BQ_K(bq_load, TN, bq_load<T>(p))
#define BL_BQ_EYE(TN, T) BL_BQ_K(bq_eye, TN, bq_eye<T>(p))
#define BL_BQ_STORE_R(TN, T) BL_BQ_K(bq_store_r, TN, (bq_store<T, false>(p)))
#define BL_BQ_STORE_Q(TN, T) BL_BQ_K(bq_store_q, TN, (bq_store<T, true>(p)))
#define BL_BQ_PANEL(TN, T, NB, SM, SN)                                                       \
    extern "C" __global__ void __launch_bounds__(512) bq_panel_##SN##_##TN##_nb##NB(BqArgs p) { \
        bq_panel<T, NB, SM>(p);                                                              \
    }
#define BL_BQ_PANEL_REG(TN, T, NB)                                                           \
    extern "C" __global__ void __launch_bounds__(512) bq_panel_reg_##TN##_nb##NB(BqArgs p) {  \
        bq_panel_reg<T, NB, 2>(p);                                                           \
    }
#define BL_BQ_PANEL_RU(TN, T, NB, RPT)                                                                \
    extern "C" __global__ void __launch_bounds__(512) bq_panel_ru_##TN##_nb##NB##_r##RPT(BqArgs p) { \
        bq_panel_ru<T, NB, RPT>(p);                                                                   \
    }
#define BL_BQ_VTW(TN, T, NB) \
    extern "C" __global__ void __launch_bounds__(256) bq_vtw_##TN##_nb##NB(BqArgs p) { bq_vtc_tw<T, NB, true>(p); }
#define BL_BQ_UPD(TN, T, NB) \
    extern "C" __global__ void __launch_bounds__(256) bq_upd_##TN##_nb##NB(BqArgs p) { bq_upd<T, NB, true>(p); }
// The runtime defines BL_NO_DEFAULT_INST and appends one of these lines per module.
#define BL_BQ_ALL(TN, T)                                                                     \
    BL_BQ_MAX(TN, T) BL_BQ_LOAD(TN, T) BL_BQ_EYE(TN, T) BL_BQ_STORE_R(TN, T) BL_BQ_STORE_Q(TN, T) \
    BL_BQ_PANEL(TN, T, 16, true, smem) BL_BQ_PANEL(TN, T, 16, false, glob)                  \
    BL_BQ_PANEL(TN, T, 32, true, smem) BL_BQ_PANEL(TN, T, 32, false, glob)                  \
    BL_BQ_VTW(TN, T, 16) BL_BQ_UPD(TN, T, 16) BL_BQ_VTW(TN, T, 32) BL_BQ_UPD(TN, T, 32)

#ifndef BL_NO_DEFAULT_INST
BL_BQ_ALL(f32, float)
BL_BQ_ALL(f64, double)
// The register panels: f64 only at 16 columns (32 would spill at 512 threads); 4 rows a
// thread only for f32 at 16 columns (f64 spills).
BL_BQ_PANEL_REG(f32, float, 16) BL_BQ_PANEL_REG(f32, float, 32) BL_BQ_PANEL_REG(f64, double, 16)
BL_BQ_PANEL_RU(f32, float, 16, 2) BL_BQ_PANEL_RU(f32, float, 32, 2) BL_BQ_PANEL_RU(f32, float, 16, 4)
BL_BQ_PANEL_RU(f64, double, 16, 2)
#endif
