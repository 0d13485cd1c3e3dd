// batchlin QR of tall matrices by a thread-block cluster (QrKernel::Cluster).
// Needs common.cu before it. NVRTC-compilable: no host headers.
//
// A matrix (m <= 8 * 256 rows, n <= NC columns, m >= n) is split by rows over a cluster of
// BL_QC_CS blocks: thread t of block (cluster rank) c holds row c * NT + t, all NC columns,
// in registers. Householder column by column as xGEQR2 (the same conventions as the other
// kernels); a step's cluster-wide sums are read through distributed shared memory after
// a cluster barrier: the vector V^T A (w for the rank-1 update of the columns to the
// right, and V^T v_k for Q) with the next column's norm folded in (see the step loop), and
// the sub-diagonal sum of squares afresh only when that folding would cancel.
// Every thread builds every reflector, and every block sums the blocks' partials in the
// same order, so all blocks agree bit for bit. The step loop is not
// unrolled (one body, small code: the unrolled panels of the blocked kernel stall on
// instruction fetch); instead the register row is rotated left by one column a step, so
// the step's column is always a[0]. Q = [I; 0] - V M, M = T V1^T (V1: V's top NC rows; T
// xLARFT's), is formed in the same kernel, so a whole tall QR is one launch (the blocked
// kernel needs ~13).
// A block a cluster-row-slice means 8 * batch blocks: for small batches of tall matrices
// (16x1024x64), which otherwise leave most of the GPU idle.

#define BL_QC_CS 8

__device__ __forceinline__ unsigned bl_cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// All threads of the cluster; orders shared-memory writes before it against reads of
// other blocks' shared memory after it (~180 ns on the H200).
__device__ __forceinline__ void bl_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// bl_cluster_sync split in two: a block may touch a peer's shared memory only once the
// peer has started (CUDA's rule for distributed shared memory), which a wait after every
// block's arrive guarantees. The first exchange's writes lacked it (compute-sanitizer
// racecheck, 2026-12-02: "located in a block that might not have entered yet"); the
// arrive at entry and the wait before that exchange keep the loads in between.
__device__ __forceinline__ void bl_cluster_arrive() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void bl_cluster_wait() {
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}
// The shared-memory address of *p in block `rank` of the cluster.
__device__ __forceinline__ unsigned bl_mapa(const void* p, unsigned rank) {
    unsigned a = (unsigned)__cvta_generic_to_shared(p), r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}
// Stores into and loads from another block's shared memory. The step's main exchange
// pulls (each block loads the eight partials, all in flight: barrier + pull 412 ns against
// 537 for pushing with stores, gpu-lab clmicro); the rare scalar exchanges push.
__device__ __forceinline__ void bl_st_dsm(unsigned addr, float x) {
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(addr), "f"(x) : "memory");
}
__device__ __forceinline__ void bl_st_dsm(unsigned addr, double x) {
    asm volatile("st.shared::cluster.f64 [%0], %1;" ::"r"(addr), "d"(x) : "memory");
}
template <typename T> __device__ __forceinline__ T bl_ld_dsm(unsigned addr);
template <> __device__ __forceinline__ float bl_ld_dsm<float>(unsigned addr) {
    float x;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(x) : "r"(addr) : "memory");
    return x;
}
template <> __device__ __forceinline__ double bl_ld_dsm<double>(unsigned addr) {
    double x;
    asm volatile("ld.shared::cluster.f64 %0, [%1];" : "=d"(x) : "r"(addr) : "memory");
    return x;
}
// x into slot `slot` of array `arr` in every block of the cluster.
template <typename T>
__device__ __forceinline__ void bl_push_all(T* arr, int slot, T x) {
#pragma unroll
    for (int c = 0; c < BL_QC_CS; ++c) bl_st_dsm(bl_mapa(arr + slot, c), x);
}

// Whether p may take a 16-byte access (BlVec's global load and store): a thread's row is
// contiguous in row-major data, and scalar accesses there touch a sector a value.
__device__ __forceinline__ bool bl_al16(const void* p) { return ((unsigned long long)p & 15ull) == 0; }

// Warp sum of 32 values a lane, transposed: lane l ends with the sum of value l.
template <typename T, int OFF>
__device__ __forceinline__ void bl_qc_stage(T (&a)[32], int lane) {
    const bool up = (lane & OFF) != 0;
#pragma unroll
    for (int i = 0; i < OFF; ++i) {
        const T send = up ? a[i] : a[i + OFF];
        const T keep = up ? a[i + OFF] : a[i];
        a[i] = keep + bl_shfl_xor(send, OFF);
    }
}
template <typename T>
__device__ __forceinline__ T bl_qc_vsum(T (&a)[32], int lane) {
    bl_qc_stage<T, 16>(a, lane);
    bl_qc_stage<T, 8>(a, lane);
    bl_qc_stage<T, 4>(a, lane);
    bl_qc_stage<T, 2>(a, lane);
    bl_qc_stage<T, 1>(a, lane);
    return a[0];
}

// Shared memory (dynamic, elements; qr.rs `cluster_smem_bytes` mirrors it): V1^T (later M)
// and G (NC x P each), warp partials (8 x NX), this block's exchange (2 x NP, by step
// parity), w-coefficients (NC), tau (NC), 40 scalars: ELEMS; at the end every thread's v
// row (NT x (NC + 1)) over all but M, so NC * P + NT * (NC + 1) if that is more.
template <int NC>
struct BlQcShape {
    static const int P = NC + 4;   // pitch: rows 16-byte aligned, not all in one bank
    static const int NX = NC + 8;  // V^T A and the next step's 5 downdating sums
    static const int NP = NX + NC;  // an exchange: those, then v_k's top NC rows (block 0's)
    static const int ELEMS = 2 * NC * P + 8 * NX + 2 * NP + 2 * NC + 40;
};

// Thread t of block c holds rows c * NT * RPT + q * NT + t (q < RPT); NT * RPT >= NC, so
// the top NC rows (row k of every step, and V1) are in block 0.
template <typename T, int NC, int RPT>
__device__ __forceinline__ void bl_qr_cluster(const QrArgs& p) {
    constexpr int CS = BL_QC_CS;
    constexpr int P = BlQcShape<NC>::P, NX = BlQcShape<NC>::NX, NP = BlQcShape<NC>::NP;
    constexpr int NE = 5;  // Saa, Sav, Svv (rows below kk + 1), A0, V0 (row kk + 1)
    constexpr int VN = BlVec<T>::N;
    extern __shared__ __align__(16) unsigned char bl_smem[];
    T* s_v1 = (T*)bl_smem;           // V1^T: s_v1[l * P + c] = v_l[c], c < NC; later M
    T* s_g = s_v1 + NC * P;          // G: s_g[l * P + k] = v_l^T v_k (l < k)
    T* s_red = s_g + NC * P;         // [warp][NX]
    T* s_part = s_red + 8 * NX;      // [step parity][NP]: this block's sums, pulled by all
    T* s_tw = s_part + 2 * NP;       // tau * w_j for the update (0 where none)
    T* s_tau = s_tw + NC;
    // [0,8) warp partials; [8,16) blocks' maxima; [16,24) blocks' ss; [25,30) the cluster's
    // extras; 32 alpha, alone in its 16 bytes: the loop's end reads s_x[25..27] with one
    // 16-byte load of [24,28), which a faster peer's push of the next alpha must not overlap.
    T* s_x = s_tau + NC;

    const int tid = threadIdx.x, NT = blockDim.x, lane = tid & 31, wid = tid >> 5, NW = NT >> 5;
    const unsigned rank = bl_cluster_rank();
    bl_cluster_arrive();
    const bl_i64 b = (bl_i64)(blockIdx.x / CS);  // the matrix; clusters are CS consecutive blocks
    const bl_i64 outer = b / p.inner;
    const int in = (int)(b - outer * p.inner);
    const int mr = (in == p.inner - 1) ? p.m_last : p.m;
    const int n = p.n;
    const int K = min(mr, n);
    int row[RPT];
#pragma unroll
    for (int q = 0; q < RPT; ++q) row[q] = (int)rank * NT * RPT + q * NT + tid;

    T a[RPT][NC];
#pragma unroll
    for (int q = 0; q < RPT; ++q) {
        const T* A = (const T*)p.a + outer * p.a_bs + (bl_i64)in * p.a_is + (bl_i64)row[q] * p.a_rs;
#pragma unroll
        for (int j = 0; j < NC; ++j) a[q][j] = T(0);
        if (row[q] < mr) {
            if (p.a_cs == 1 && n == NC && bl_al16(A)) {
#pragma unroll
                for (int j = 0; j < NC; j += VN) BlVec<T>::ldg(A + j, &a[q][j]);
            } else {
#pragma unroll
                for (int j = 0; j < NC; ++j) a[q][j] = j < n ? A[(bl_i64)j * p.a_cs] : T(0);
            }
        }
    }

    // Scale: max|a| over the matrix (non-finite -> inf), by warp, block, then cluster.
    T mx = bl_absmax(a);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const T o = bl_shfl_xor(mx, off);
        mx = o > mx ? o : mx;
    }
    if (lane == 0) s_x[wid] = mx;
    bl_cluster_wait();  // every peer has started: its shared memory may be written
    __syncthreads();
    if (tid == 0) {
        T m2 = s_x[0];
        for (int w = 1; w < NW; ++w) m2 = s_x[w] > m2 ? s_x[w] : m2;
        bl_push_all(s_x + 8, (int)rank, m2);
    }
    bl_cluster_sync();
    mx = T(0);
#pragma unroll
    for (int c = 0; c < CS; ++c) mx = s_x[8 + c] > mx ? s_x[8 + c] : mx;
    bool bad;
    const int e = bl_scale_exp(mx, bad);
    bl_rescale(a, -e);
    unsigned long long negs = 0;  // bit k: R_kk < 0 (uniform: every thread builds every reflector)
    T dmin = BlT<T>::huge(), dmax = T(0);  // the range of |R_kk| (bl_rank_deficient)

    // Step kk: the step's column is a[.][0]; columns kk+1.. are a[.][1..NC-1-kk]; the
    // finished columns 0..kk-1 (their v below the diagonal) are a[.][NC-kk..NC-1].
    // The next step's sum of squares and alpha come from the same exchange as w:
    // ss' = sum (a - tw v)^2 = Saa - 2 tw Sav + tw^2 Svv over the rows below the next
    // diagonal, taken only while it cancels less than a bit (ss' >= Saa / 2, so it is as
    // accurate as a fresh sum); otherwise (rank-deficient or structured input) the column
    // is summed afresh (`exact`). One cluster exchange a step (two: 1.25x slower).
    T ss = T(0), alpha = T(0);
    bool exact = true;
#pragma unroll 1
    for (int kk = 0; kk < K; ++kk) {
        if (exact) {  // uniform: every block computes the same sums
            T part = T(0);
#pragma unroll
            for (int q = 0; q < RPT; ++q) part += row[q] > kk ? a[q][0] * a[q][0] : T(0);
            part = bl_warp_sum(part);
            if (lane == 0) s_x[wid] = part;
#pragma unroll
            for (int q = 0; q < RPT; ++q)
                if (row[q] == kk) bl_push_all(s_x, 32, a[q][0]);
            __syncthreads();
            if (tid == 0) {
                T s = T(0);
                for (int w = 0; w < NW; ++w) s += s_x[w];
                bl_push_all(s_x + 16, (int)rank, s);
            }
            bl_cluster_sync();
            ss = T(0);
#pragma unroll
            for (int c = 0; c < CS; ++c) ss += s_x[16 + c];
            alpha = s_x[32];
        }
        T beta, tau, scal;
        bl_householder_nb(alpha, ss, beta, tau, scal);
        if (beta < T(0)) negs |= 1ull << kk;
        bl_diag_range(beta, dmin, dmax);
        T v[RPT];
#pragma unroll
        for (int q = 0; q < RPT; ++q) {
            v[q] = row[q] > kk ? a[q][0] * scal : (row[q] == kk ? T(1) : T(0));
            if (row[q] > kk) a[q][0] = v[q];
            if (row[q] == kk) a[q][0] = beta;
        }
        if (tid == 0) s_tau[kk] = tau;

        // V^T A: this thread's terms, summed over the warp (transposed), the block, the
        // cluster. Halves of 32 columns keep 32 accumulators live, not NC.
#pragma unroll
        for (int h = 0; h < NC; h += 32) {
            T acc[32];
#pragma unroll
            for (int j = 0; j < 32; ++j) {
                acc[j] = T(0);
#pragma unroll
                for (int q = 0; q < RPT; ++q) acc[j] += v[q] * a[q][h + j];
            }
            s_red[wid * NX + h + lane] = bl_qc_vsum<T>(acc, lane);
        }
        {
            T ex[NE] = {T(0), T(0), T(0), T(0), T(0)};
#pragma unroll
            for (int q = 0; q < RPT; ++q) {
                const bool below = row[q] > kk + 1, at = row[q] == kk + 1;
                const T x1 = a[q][1];
                ex[0] += below ? x1 * x1 : T(0);
                ex[1] += below ? x1 * v[q] : T(0);
                ex[2] += below ? v[q] * v[q] : T(0);
                ex[3] += at ? x1 : T(0);
                ex[4] += at ? v[q] : T(0);
            }
#pragma unroll
            for (int u = 0; u < NE; ++u) {
                const T r = bl_warp_sum(ex[u]);
                if (lane == 0) s_red[wid * NX + NC + u] = r;
            }
        }
        __syncthreads();
        T* part = s_part + (kk & 1) * NP;  // by parity: a block one step ahead writes the other
        if (rank == 0) {  // v_kk's top NC rows (column kk of V1): read by every block for Q
#pragma unroll
            for (int q = 0; q < RPT; ++q)
                if (row[q] < NC) part[NX + row[q]] = v[q];
        }
        for (int t = tid; t < NC + NE; t += NT) {
            T s = T(0);
            for (int w = 0; w < NW; ++w) s += s_red[w * NX + t];
            part[t] = s;
        }
        bl_cluster_sync();
        // Column kk of V1 from block 0, its load in flight with the partials' (after them it
        // would add a remote load's latency to every step).
        const bool get_v1 = p.q != nullptr && tid < NC;
        T v1 = T(0);
        if (get_v1) v1 = bl_ld_dsm<T>(bl_mapa(part + NX + tid, 0));
        for (int t = tid; t < NC + NE; t += NT) {
            T pv[CS];
#pragma unroll
            for (int c = 0; c < CS; ++c) pv[c] = bl_ld_dsm<T>(bl_mapa(part + t, c));
            T wsum = T(0);
#pragma unroll
            for (int c = 0; c < CS; ++c) wsum += pv[c];
            if (t < NC) {
                // Rotated slot t is column kk + t (trailing) or t + kk - NC (finished).
                const bool trailing = t >= 1 && t < NC - kk;
                s_tw[t] = trailing ? tau * wsum : T(0);
                if (t >= NC - kk) s_g[(t + kk - NC) * P + kk] = wsum;
            } else {
                s_x[25 + t - NC] = wsum;
            }
        }
        if (get_v1) s_v1[kk * P + tid] = v1;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < NC; j += VN) {
            T tw[VN];
            BlVec<T>::ld(s_tw + j, tw);
#pragma unroll
            for (int q = 0; q < RPT; ++q)
#pragma unroll
                for (int u = 0; u < VN; ++u) a[q][j + u] -= tw[u] * v[q];
        }
#pragma unroll
        for (int q = 0; q < RPT; ++q) {
            const T first = a[q][0];
#pragma unroll
            for (int j = 0; j < NC - 1; ++j) a[q][j] = a[q][j + 1];
            a[q][NC - 1] = first;
        }
        const T tw1 = s_tw[1], saa = s_x[25], sav = s_x[26], svv = s_x[27];
        ss = saa + tw1 * (tw1 * svv - T(2) * sav);
        alpha = s_x[28] - tw1 * s_x[29];
        exact = !(ss >= T(0.5) * saa);
    }
    // Undo the rotation: K steps rotated by K.
#pragma unroll 1
    for (int kk = K; kk < NC; ++kk) {
#pragma unroll
        for (int q = 0; q < RPT; ++q) {
            const T first = a[q][0];
#pragma unroll
            for (int j = 0; j < NC - 1; ++j) a[q][j] = a[q][j + 1];
            a[q][NC - 1] = first;
        }
    }

    // Every block has read the last exchange: from here no block reads another's shared
    // memory (so a block may exit, and the exchange buffers may be reused).
    bl_cluster_sync();

    // R (rrows x n): rows < K, upper trapezoid, row k times sign(R_kk), unscaled.
#pragma unroll
    for (int q = 0; q < RPT; ++q) {
        const int r = row[q];
        if (r < p.rrows && r < mr) {
            T* R = (T*)p.r + outer * p.r_bs + (bl_i64)in * p.r_is + (bl_i64)r * p.r_rs;
            const bool neg = r < K && ((negs >> r) & 1ull) != 0;
#pragma unroll
            for (int j = 0; j < NC; ++j) {
                if (j < n) {
                    const T val = (j >= r && r < K) ? bl_scale2(neg ? -a[q][j] : a[q][j], e) : T(0);
                    R[(bl_i64)j * p.r_cs] = bad ? BlT<T>::nan() : val;
                }
            }
        }
    }
    const bool rd = bl_rank_deficient(dmin, dmax, mr, n);
    // R's rows (< K <= NC) are all block 0's.
    const bool ovf = rank == 0 && !bad && bl_r_may_overflow<T>(e, mr) &&
                     bl_block_r_overflows((T*)p.r + outer * p.r_bs + (bl_i64)in * p.r_is, p.r_rs, p.r_cs,
                                          min(K, p.rrows), n);
    if (rank == 0 && tid == 0 && p.info)
        p.info[b] = bad ? BL_INFO_NONFINITE : ((rd ? BL_INFO_RANK_DEFICIENT : 0u) | (ovf ? BL_INFO_OVERFLOW : 0u));
    if (p.q == nullptr) return;  // uniform

    // Q = [I; 0] - V M: V's rows in a, M = T V1^T below.
#pragma unroll
    for (int q = 0; q < RPT; ++q)
#pragma unroll
        for (int l = 0; l < NC; ++l)
            a[q][l] = (l < K && row[q] > l) ? a[q][l] : ((l < K && row[q] == l) ? T(1) : T(0));
    // Every block has G, tau and V1 (exchanged step by step), so each forms M = T V1^T
    // itself, with no exchange after the loop, and without T: H_i times the later
    // reflectors gives T's row i = tau_i (e_i - sum_{l>i} G[i][l] T_l), so
    // M_i = tau_i (V1^T_i - sum_{l>i} G[i][l] M_l): a back substitution from the last row,
    // in place in V1^T, a block of B rows at a time (multiplications only, so tau = 0 is
    // fine). Building T column by column inside the step loop (xLARFT) outlasted the
    // cluster barrier it hid behind: 16x1024x64 0.176 -> 0.150 ms without it (gpu-lab).
    const int qc = p.qcols;
    constexpr int QW = 32 / (4 / VN);  // columns a pass of the Q rows: 32 f32, 16 f64
    T* Qm = (T*)p.q + outer * p.q_bs + (bl_i64)in * p.q_is;
    T* s_m = s_v1;
    {
        constexpr int B = 8;
        const int c = tid % NC, h = tid / NC, H = NT / NC;  // a column of M; row phase
        __syncthreads();  // the last step's G column, tau and V1 row
        if (K < NC) {  // G's columns from K on were never written: zero, for the update below
            for (int t = tid; t < K * NC; t += NT)
                if (t % NC >= K) s_g[(t / NC) * P + t % NC] = T(0);
            __syncthreads();
        }
        for (int l0 = K > 0 ? ((K - 1) / B) * B : -B; l0 >= 0; l0 -= B) {
            if (tid < NC) {  // rows l0 .. l0 + B - 1 (the later rows' terms are in already)
                T x[B];
#pragma unroll
                for (int u = 0; u < B; ++u) x[u] = s_m[(l0 + u) * P + c];
#pragma unroll
                for (int u = B - 1; u >= 0; --u) {
                    const int l = l0 + u;
                    if (l < K) {  // uniform; rows from K on are zero (G and V1 unset there)
                        const T mu = s_tau[l] * x[u];
                        x[u] = mu;
#pragma unroll
                        for (int u2 = 0; u2 < u; ++u2) x[u2] -= s_g[(l0 + u2) * P + l] * mu;
                    } else {
                        x[u] = T(0);
                    }
                }
#pragma unroll
                for (int u = 0; u < B; ++u) s_m[(l0 + u) * P + c] = x[u];
            }
            __syncthreads();
            if (h < H) {  // the block's terms into the rows above it
                T mb[B];
#pragma unroll
                for (int u = 0; u < B; ++u) mb[u] = s_m[(l0 + u) * P + c];
                for (int i = h; i < l0; i += H) {
                    T g[B];
#pragma unroll
                    for (int u = 0; u < B; u += VN) BlVec<T>::ld(s_g + i * P + l0 + u, g + u);
                    T x = s_m[i * P + c];
#pragma unroll
                    for (int u = 0; u < B; ++u) x -= g[u] * mb[u];
                    s_m[i * P + c] = x;
                }
            }
            __syncthreads();
        }
    }
    // Rows of Q, QW columns a pass: e_row - v_row^T M, the k loop not unrolled (an unrolled
    // one was 26 KB of straight code, stalled on instruction fetch), so each thread's v row
    // goes to shared memory (pitch NC + 1: conflict-free), over G and what follows it.
    T* s_vrow = s_g;
#pragma unroll
    for (int q = 0; q < RPT; ++q)
#pragma unroll
        for (int l = 0; l < NC; ++l) s_vrow[(q * NT + tid) * (NC + 1) + l] = a[q][l];
#pragma unroll 1
    for (int c0 = 0; c0 < qc; c0 += QW) {
        T qv[RPT][QW];
#pragma unroll
        for (int q = 0; q < RPT; ++q)
#pragma unroll
            for (int u = 0; u < QW; ++u) qv[q][u] = row[q] == c0 + u ? T(1) : T(0);
        const int kq = min(K, c0 + QW);  // M is upper triangular
#pragma unroll 2
        for (int k = 0; k < kq; ++k) {
            T m4[QW];
#pragma unroll
            for (int g = 0; g < QW; g += VN) BlVec<T>::ld(s_m + k * P + c0 + g, m4 + g);
#pragma unroll
            for (int q = 0; q < RPT; ++q) {
                const T vk = s_vrow[(q * NT + tid) * (NC + 1) + k];
#pragma unroll
                for (int u = 0; u < QW; ++u) qv[q][u] -= vk * m4[u];
            }
        }
#pragma unroll
        for (int q = 0; q < RPT; ++q) {
            if (row[q] < mr) {
                T* Q = Qm + (bl_i64)row[q] * p.q_rs;
#pragma unroll
                for (int u = 0; u < QW; ++u) {
                    const int c = c0 + u;
                    const bool neg = c < K && ((negs >> c) & 1ull) != 0;
                    qv[q][u] = bad ? BlT<T>::nan() : (neg ? -qv[q][u] : qv[q][u]);
                }
                if (p.q_cs == 1 && c0 + QW <= qc && bl_al16(Q + c0)) {
#pragma unroll
                    for (int u = 0; u < QW; u += VN) BlVec<T>::st(Q + c0 + u, &qv[q][u]);
                } else {
#pragma unroll
                    for (int u = 0; u < QW; ++u)
                        if (c0 + u < qc) Q[(bl_i64)(c0 + u) * p.q_cs] = qv[q][u];
                }
            }
        }
    }
}

// NC: 32 or 64 columns; one row a thread (RPT = 2 measured no faster); NT (blockDim) a
// multiple of 32, NC <= NT <= 256 (qr.rs cluster_threads). MINB: 1, or 2 to cap f32 at 128
// registers, which is 1.4x faster at 256 threads (2048 rows) and 5% slower at 128 (lab,
// cuda-qr.md).
#define BL_QR_CLUSTER(TN, T, NC, MINB)                                                       \
    extern "C" __global__ void __cluster_dims__(BL_QC_CS, 1, 1) __launch_bounds__(256, MINB) \
        qr_cluster_##TN##_n##NC##_b##MINB(QrArgs p) {                                        \
        bl_qr_cluster<T, NC, 1>(p);                                                          \
    }

#ifndef BL_NO_DEFAULT_INST
BL_QR_CLUSTER(f32, float, 32, 1)
BL_QR_CLUSTER(f32, float, 64, 1)
BL_QR_CLUSTER(f32, float, 32, 2)
BL_QR_CLUSTER(f32, float, 64, 2)
BL_QR_CLUSTER(f64, double, 32, 1)
BL_QR_CLUSTER(f64, double, 64, 1)
#endif
