// batchlin QR kernels (Householder, LAPACK conventions, diag(R) >= 0).
// Needs common.cu before it. NVRTC-compilable: no host headers.
//
// Kernels (extern "C", one per element type):
//   qr_warp_<t>_m<M>_w<W>   W in {8,16,32}: a group of W lanes a matrix, 128/W matrices
//                           a block; column j of the matrix in lane j's registers
//                           (M rows, zero padded), every step unrolled. n <= W, m <= M;
//                           M <= 64 in f32, 32 in f64.
//   qr_tile_<t>_m<M>_n<N>_g<RG>x<CG>_b<MINB>
//                           one matrix a block of RG x CG threads, the matrix in registers
//                           over the 2-D thread grid, reflectors in shared memory; m <= M,
//                           columns <= N (M, N up to 128).
//   qr_smem_<t>             one matrix a block, the matrix in shared memory (row-major
//                           work copy, ld = wld), any thread count (multiple of 32).
//   qr_wy_<t>_r<RPL>        as qr_smem, blocked (compact WY): m <= 32*RPL, 256 threads.
//   gemm_<t>                batched C = A * B (64x64 tiles), for TSQR's Q.
//   eye_<t>                 Q = I (complete mode on M x 0 input).
//
// All: per-matrix power-of-two scaling so max|a| lies in [0.5, 1), undone on output;
// Householder as LAPACK's xGEQR2 (beta = -sign(alpha) * norm, tau = (beta-alpha)/beta,
// tau = 0 where the sub-diagonal sum of squares is below the smallest normal number);
// Q formed as xORG2R (the warp kernel: the reflectors applied backwards to [I; 0]); then
// row k of R and column k of Q negated where R_kk < 0.
// info: bit 0 non-finite input (every output NaN), bit 2 some |R_kk| <=
// max(m,n) * eps * max|A|; bit 3 an R entry beyond the range once unscaled (checked only
// where the input's scale allows it: bl_r_may_overflow).

// ---------------------------------------------------------------------------------
// Register kernels: a column a thread.

// Reductions and syncs over a group of NT <= 32 lanes (a matrix's columns).
template <typename T, int NT>
__device__ __forceinline__ T bl_grp_max(T v) {
#pragma unroll
    for (int off = 1; off < NT; off <<= 1) {
        T o = bl_shfl_xor(v, off);
        v = o > v ? o : v;
    }
    return v;
}

// ---------------------------------------------------------------------------------
// Warp kernel: column j of the matrix in the registers of RS lanes (rows i * RS + h in
// lane h of the column's RS, so a step's row range splits the lanes at one register at
// most), every step unrolled, so the rows a step touches are known when compiling: no row
// masks, no skipped-chunk branches, no divergent reflector step (3.4x fewer instructions
// than a step loop: cuda-qr.md). Each step every lane also sums the squares of its own
// rows below the next row (one FMA a row, the same instructions the next column's owner
// alone would issue) and the next reflector is built redundantly by every lane; its owner
// stores the raw column (unscaled) to shared memory, where the other lanes read it with
// broadcast vector loads. v_k = [1; scal_k * u_k] with u_k the raw column below row k.
// A matrix is GT = NT * RS threads: within one warp (GT <= 32) or several warps that
// meet at a named barrier once a step; a warp whose columns are all left of the step
// skips it.

// Sync of the GT threads of matrix slot g of a block.
template <int GT>
__device__ __forceinline__ void bl_grp_sync(int g) {
    if (GT <= 32) {
        __syncwarp();
    } else {
        asm volatile("bar.sync %0, %1;" ::"r"(1 + g), "r"(GT) : "memory");
    }
}

// Sum over the RS lanes of a column (adjacent lanes); the same bits in each.
template <typename T, int RS>
__device__ __forceinline__ T bl_rs_sum(T v) {
#pragma unroll
    for (int o = 1; o < RS; o <<= 1) v += bl_shfl_xor(v, o);
    return v;
}

// Threads of a warp-kernel block, and its shared memory in elements (qr.rs
// `warp_smem_bytes` mirrors this): every reflector's raw column (RS slices of MR rows,
// PITCH apart so the slices start in different banks), tau and scal, 20 exchange slots.
template <int M, int NT, int RS>
struct BlWarpShape {
    static const int GT = NT * RS;
    static const int BT = GT < 128 ? 128 : GT;
    static const int GPB = BT / GT;
    static const int MR = M / RS;
    static const int PITCH = RS > 1 ? MR + 4 : MR;
    static const int CS = RS * PITCH;
    static const int KMAX = NT < M ? NT : M;
    static const int PER_MATRIX = KMAX * (CS + 2) + 20;
};

template <typename T, int M, int NT, int RS>
__device__ __forceinline__ void bl_qr_warp(const QrArgs& p) {
    typedef BlWarpShape<M, NT, RS> S;
    constexpr int GT = S::GT, GPB = S::GPB, MR = S::MR, PITCH = S::PITCH, CS = S::CS, KMAX = S::KMAX;
    constexpr int VN = BlVec<T>::N;
    static_assert((GT <= 32 || GT % 32 == 0) && MR % VN == 0 && KMAX <= 128, "warp kernel shape");
    constexpr int WC = GT > 32 ? 32 / RS : NT;  // columns a warp holds
    extern __shared__ __align__(16) unsigned char bl_smem[];
    const int tid = threadIdx.x;
    const int t = tid % GT, g = tid / GT;
    const int j = t / RS, h = t % RS;
    const int wc0 = GT > 32 ? (t & ~31) / RS : 0;  // first column of this lane's warp
    T* su = (T*)bl_smem + g * S::PER_MATRIX;
    T* s_tau = su + KMAX * CS;
    T* s_scal = s_tau + KMAX;
    T* s_x = s_scal + KMAX;  // [0, 16) the warps' maxima; [16, 20) alpha, ss by step parity

    const bl_i64 total = (bl_i64)p.batch * p.inner;
    bl_i64 b = (bl_i64)blockIdx.x * GPB + g;
    const bool live = b < total;
    if (!live) b = total - 1;  // computes a duplicate, writes nothing: keeps syncs uniform
    const bl_i64 outer = b / p.inner;
    const int in = (int)(b - outer * p.inner);
    const int mr = (in == p.inner - 1) ? p.m_last : p.m;
    const int n = p.n;
    const int K = min(p.m, n);

    T a[MR];  // rows i * RS + h of column j
    {
        const T* A = (const T*)p.a + outer * p.a_bs + (bl_i64)in * p.a_is + (bl_i64)j * p.a_cs;
        const bool colok = j < n;
#pragma unroll
        for (int i = 0; i < MR; ++i) {
            const int r = i * RS + h;
            a[i] = (colok && r < mr) ? A[(bl_i64)r * p.a_rs] : T(0);
        }
    }
    T mx = T(0);
#pragma unroll
    for (int i = 0; i < MR; ++i) {
        T f = bl_absflag(a[i]);
        mx = f > mx ? f : mx;
    }
    mx = bl_grp_max<T, (GT <= 32 ? GT : 32)>(mx);
    if (GT > 32) {
        if ((t & 31) == 0) s_x[t >> 5] = mx;
        bl_grp_sync<GT>(g);
#pragma unroll
        for (int w = 0; w < GT / 32; ++w) mx = s_x[w] > mx ? s_x[w] : mx;  // never NaN: bl_absflag
    }
    bool bad;
    const int e = bl_scale_exp(mx, bad);
    bl_rescale(a, -e);
    // Uniform across the matrix's lanes, as every lane builds every reflector: negs, bit k
    // set where R_kk < 0 (columns 64-127 in negs1); the range of |R_kk| (bl_rank_deficient).
    unsigned long long negs0 = 0, negs1 = 0;
    T dmin = BlT<T>::huge(), dmax = T(0);

    // Whether row i * RS + h lies below row k: known when compiling except for the one
    // register index where the column's lanes straddle k.
    auto below = [&](const int i, const int k) -> bool {
        return i * RS > k ? true : (i * RS + RS - 1 <= k ? false : h > k - i * RS);
    };
    // Reflector k from column k: every lane gets beta, tau, scal; the owner lanes store
    // their raw rows (the 16-byte groups holding rows > k) and put beta on the diagonal.
    auto reflector = [&](const int k, const T ss_own, T& tau, T& scal) {
        const bool own = j == k;
        if (own) {
#pragma unroll
            for (int c = 0; c < MR; c += VN)
                if ((c + VN - 1) * RS + RS - 1 > k) BlVec<T>::st(su + k * CS + h * PITCH + c, &a[c]);
        }
        const bool diag = own && h == k % RS;  // holds row k of column k: a[k / RS]
        T alpha, ss;
        if (GT <= 32) {
            alpha = __shfl_sync(0xffffffffu, a[k / RS], k * RS + k % RS, GT <= 32 ? GT : 32);
            ss = __shfl_sync(0xffffffffu, ss_own, k * RS, GT <= 32 ? GT : 32);
        } else if (diag) {
            // Slots by parity: step k-2's readers all passed step k-1's sync before this.
            s_x[16 + 2 * (k & 1)] = a[k / RS];
            s_x[17 + 2 * (k & 1)] = ss_own;
        }
        bl_grp_sync<GT>(g);
        if (GT > 32) {
            alpha = s_x[16 + 2 * (k & 1)];
            ss = s_x[17 + 2 * (k & 1)];
        }
        T beta;
        bl_householder_nb(alpha, ss, beta, tau, scal);
        if (diag) a[k / RS] = beta;
        if (t == 0) {
            s_tau[k] = tau;
            s_scal[k] = scal;
        }
        if (beta < T(0)) {
            if (k < 64) negs0 |= 1ull << (k & 63);
            else negs1 |= 1ull << (k & 63);
        }
        bl_diag_range(beta, dmin, dmax);
    };
    // x -= tw * v_k (v_k = [1; scal * u_k]) where tw = tau * v_k^T x, for lanes taking it.
    // With `norm`, returns in ss the column's sum of squares below row k + 1 (the next
    // reflector's; only the warp holding column k + 1 needs it).
    auto apply = [&](const int k, T* x, const T tau, const T scal, const bool take, const bool norm, T& ss) {
        const T* uk = su + k * CS + h * PITCH;
        T d[4] = {T(0), T(0), T(0), T(0)};
#pragma unroll
        for (int c = 0; c < MR; c += VN) {
            if ((c + VN - 1) * RS + RS - 1 > k) {
                T u[VN];
                BlVec<T>::ld(uk + c, u);
#pragma unroll
                for (int q = 0; q < VN; ++q) {
                    const int i = c + q;
                    if (i * RS + RS - 1 > k) d[i & 3] += (below(i, k) ? u[q] : T(0)) * x[i];
                }
            }
        }
        T part = scal * ((d[0] + d[1]) + (d[2] + d[3]));
        if (h == k % RS) part += x[k / RS];
        const T w = bl_rs_sum<T, RS>(part);
        const T tw = take ? tau * w : T(0);
        const T sw = tw * scal;
        if (h == k % RS) x[k / RS] -= tw;
#pragma unroll
        for (int c = 0; c < MR; c += VN) {
            if ((c + VN - 1) * RS + RS - 1 > k) {
                T u[VN];
                BlVec<T>::ld(uk + c, u);
#pragma unroll
                for (int q = 0; q < VN; ++q) {
                    const int i = c + q;
                    if (i * RS + RS - 1 > k) x[i] -= sw * (below(i, k) ? u[q] : T(0));
                }
            }
        }
        if (norm) {
            T s[4] = {T(0), T(0), T(0), T(0)};
#pragma unroll
            for (int i = 0; i < MR; ++i) {
                if (i * RS + RS - 1 > k + 1) {
                    const T xv = below(i, k + 1) ? x[i] : T(0);
                    s[i & 3] += xv * xv;
                }
            }
            ss = bl_rs_sum<T, RS>((s[0] + s[1]) + (s[2] + s[3]));
        }
    };

    // Factor.
    {
        T ss0 = T(0);
#pragma unroll
        for (int i = 0; i < MR; ++i) {
            const T xv = below(i, 0) ? a[i] : T(0);
            ss0 += xv * xv;
        }
        ss0 = bl_rs_sum<T, RS>(ss0);
        T tau = T(0), scal = T(0);
        if (K > 0) reflector(0, ss0, tau, scal);
#pragma unroll
        for (int k = 0; k < KMAX; ++k) {
            if (k >= K) break;
            T ss = T(0);
            // else: no column right of k; the sum of squares only where column k + 1 is
            if (wc0 + WC - 1 > k) apply(k, a, tau, scal, j > k, wc0 + WC > k + 1 && wc0 <= k + 1, ss);
            if (k + 1 < K) reflector(k + 1, ss, tau, scal);
        }
    }

    // R (rrows x n): upper trapezoid, rows scaled by sign(R_kk), unscaled.
    if (live && j < n) {
        T* R = (T*)p.r + outer * p.r_bs + (bl_i64)in * p.r_is + (bl_i64)j * p.r_cs;
#pragma unroll
        for (int i = 0; i < MR; ++i) {
            const int r = i * RS + h;
            if (r < p.rrows) {
                T val = T(0);
                if (r < KMAX && r <= j && r < mr) {
                    const bool neg = ((r < 64 ? negs0 >> (r & 63) : negs1 >> (r & 63)) & 1ull) != 0;
                    val = bl_scale2(neg ? -a[i] : a[i], e);
                }
                R[(bl_i64)r * p.r_rs] = bad ? BlT<T>::nan() : val;
            }
        }
    }
    // Warp-uniform (several matrices can share a warp), so the shuffles below are too.
    bool ovf = false;
    if (__any_sync(0xffffffffu, !bad && bl_r_may_overflow<T>(e, mr))) {
#pragma unroll
        for (int i = 0; i < MR; ++i) {
            const int r = i * RS + h;
            if (j < n && r < p.rrows && r < KMAX && r <= j && r < mr) ovf |= bl_beyond_range(bl_scale2(a[i], e));
        }
        T o = bl_grp_max<T, (GT <= 32 ? GT : 32)>(ovf ? T(1) : T(0));
        if (GT > 32) {  // uniform over the group; s_x[0, GT / 32) is free since the maxima
            if ((t & 31) == 0) s_x[t >> 5] = o;
            bl_grp_sync<GT>(g);
#pragma unroll
            for (int w = 0; w < GT / 32; ++w) o = s_x[w] > o ? s_x[w] : o;
        }
        ovf = !bad && o > T(0);
    }
    const bool rd = bl_rank_deficient(dmin, dmax, max(mr, p.rank_rows), n);
    if (live && t == 0 && p.info)
        p.info[b] = bad ? BL_INFO_NONFINITE : ((rd ? BL_INFO_RANK_DEFICIENT : 0u) | (ovf ? BL_INFO_OVERFLOW : 0u));

    if (p.q == nullptr) return;  // uniform
    bl_grp_sync<GT>(g);  // the last reflector's tau and scal
    // Q = H_0 ... H_{K-1} [I; 0], backwards: column j starts as e_j; a reflector leaves
    // the columns left of its row unchanged (their rows from k down are zero), so a warp
    // whose columns are all left of k skips it.
#pragma unroll
    for (int i = 0; i < MR; ++i) a[i] = (i * RS + h == j) ? T(1) : T(0);
#pragma unroll
    for (int k = KMAX - 1; k >= 0; --k) {
        if (k < K && wc0 + WC - 1 >= k) {
            T ss;
            apply(k, a, s_tau[k], s_scal[k], true, false, ss);
        }
    }
    if (live && j < p.qcols) {
        const bool neg = j < KMAX && (((j < 64 ? negs0 >> (j & 63) : negs1 >> (j & 63)) & 1ull) != 0);
        T* Q = (T*)p.q + outer * p.q_bs + (bl_i64)in * p.q_is + (bl_i64)j * p.q_cs;
#pragma unroll
        for (int i = 0; i < MR; ++i) {
            const int r = i * RS + h;
            if (r < mr) Q[(bl_i64)r * p.q_rs] = bad ? BlT<T>::nan() : (neg ? -a[i] : a[i]);
        }
    }
}

// ---------------------------------------------------------------------------------
// Tile kernel: one block a matrix, the matrix in registers over a 2-D grid of threads.
// Thread (rg, cg) holds rows rg + RG * i (i < R = M / RG) of columns cg + CG * c
// (c < C = N / CG); lane = cg % CPW + CPW * rg and warp = cg / CPW (CPW = 32 / RG), so
// the RG lanes of a column group share a warp and join a column's dot product with
// log2(RG) shuffles. Against the warp kernel (a column a lane or two) each v load and
// each shuffle serves C columns and R rows, not one column: fewer instructions a
// multiply-add. Step k: the RG lanes holding column k build reflector k and write
// v_k = [0; 1; scal * u] to shared memory (each row group's R rows contiguous, for vector
// loads); one barrier; every thread forms w = v_k^T a for its columns right of k and
// a -= tau v_k w^T. Every v_k stays in shared memory, so Q = H_0 ... H_{K-1} [I; 0] is
// then formed backwards in the same registers with no barrier. Steps run in chunks, FC
// steps a chunk while factoring and QC while forming Q: within a chunk the registers a
// step touches (rows from the chunk's first row group on, columns from its first column
// group on) are the same, so only the chunks are unrolled; rows a chunk's first registers
// hold above k meet zeros of v_k. FC is a multiple of min(RG, CG) dividing CG; beyond
// RG, row k's register is picked at run time by selects. The unrolled chunks are the
// kernel's instruction footprint: longer chunks cost masked multiply-adds but fewer
// instruction-fetch stalls (docs/results/h200/2026-12-01-qr-tile-chunks-staging/: with 4 x 16 threads at 64 x 64, FC 4
// -> 8 took 4096x64x64 from 0.374 to 0.245 ms).

// c ? a : b on registers. Opaque to the compiler, which otherwise turns a select of two
// array elements into a load from a computed address (the array then goes to local memory).
__device__ __forceinline__ float bl_sel(bool c, float a, float b) {
    float r;
    asm("{ .reg .pred p; setp.ne.u32 p, %3, 0; selp.f32 %0, %1, %2, p; }" : "=f"(r) : "f"(a), "f"(b), "r"((unsigned)c));
    return r;
}
__device__ __forceinline__ double bl_sel(bool c, double a, double b) {
    double r;
    asm("{ .reg .pred p; setp.ne.u32 p, %3, 0; selp.f64 %0, %1, %2, p; }" : "=d"(r) : "d"(a), "d"(b), "r"((unsigned)c));
    return r;
}

template <int M, int N, int RG, int CG>
struct BlTileShape {
    static const int R = M / RG, C = N / CG, NT = RG * CG, CPW = 32 / RG;
    static const int S = RG < CG ? RG : CG;
    // Pitch of a row group's slice of v: 16-byte loads of 8 row groups hit distinct banks.
    static const int P = R % 8 == 0 ? R + 4 : R;
    static const int VS = RG * P;  // one v
    static const int KMAX = N < M ? N : M;
    // v's, tau, beta, the warps' maxima (qr.rs `TileConfig::smem_bytes` mirrors this)
    static const int ELEMS = KMAX * VS + 2 * KMAX + 32;
};

template <typename T, int M, int N, int RG, int CG, int FC, int QC, bool ST>
__device__ __forceinline__ void bl_qr_tile(const QrArgs& p) {
    typedef BlTileShape<M, N, RG, CG> S;
    constexpr int R = S::R, C = S::C, CPW = S::CPW, P = S::P, VS = S::VS, KMAX = S::KMAX;
    constexpr int VN = BlVec<T>::N;
    static_assert(M % RG == 0 && N % CG == 0 && 32 % RG == 0 && S::NT % 32 == 0 && R % VN == 0 &&
                      P % VN == 0 && FC % S::S == 0 && CG % FC == 0 && KMAX % FC == 0 && KMAX % QC == 0,
                  "tile kernel shape");
    extern __shared__ __align__(16) unsigned char bl_smem[];
    T* sv = (T*)bl_smem;  // v_k at sv + k * VS; row rg + RG * i at rg * P + i
    T* s_tau = sv + KMAX * VS;
    T* s_beta = s_tau + KMAX;
    T* s_x = s_beta + KMAX;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int rg = lane / CPW, cg = warp * CPW + lane % CPW;

    const bl_i64 b = blockIdx.x;  // one matrix a block
    const bl_i64 outer = b / p.inner;
    const int in = (int)(b - outer * p.inner);
    const int mr = (in == p.inner - 1) ? p.m_last : p.m;
    const int n = p.n;
    const int K = min(p.m, n);

    T a[R][C];
    // With ST, A and Q pass through a staging copy in the v's shared memory (row pitch SP
    // puts a warp's lanes in distinct banks): a short loop moves them to and from global
    // memory, against an unrolled access per register (a third of the kernel's code).
    // Faster for f64 and f32 128 x 64 (4096x128x64 0.655 -> 0.534 ms, f64 64x64 0.632 ->
    // 0.533), slower with 64 threads a block (f32 64x64 0.244 -> 0.260):
    // docs/results/h200/2026-12-01-qr-tile-chunks-staging/.
    constexpr int SP = N + CPW;
    static_assert(!ST || M * SP <= KMAX * VS, "tile staging fits the v's");
    T* const stage = sv;
    // Element idx of the staged M x N block walks rows fastest where column-major
    // (rfast), else columns: consecutive threads touch consecutive addresses.
    auto stage_rc = [&](const int idx, const bool rfast, int& r, int& col) {
        r = rfast ? idx % M : idx / N;
        col = rfast ? idx / M : idx % N;
    };
    const T* A = (const T*)p.a + outer * p.a_bs + (bl_i64)in * p.a_is;
    if constexpr (ST) {
        const bool rfast = p.a_rs == 1 && p.a_cs != 1;
#pragma unroll 16
        for (int idx = tid; idx < M * N; idx += S::NT) {
            int r, col;
            stage_rc(idx, rfast, r, col);
            stage[r * SP + col] = (r < mr && col < n) ? A[(bl_i64)r * p.a_rs + (bl_i64)col * p.a_cs] : T(0);
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
            for (int c = 0; c < C; ++c) a[i][c] = stage[(rg + RG * i) * SP + cg + CG * c];
        // the next barrier (the block's maximum) precedes every write to the v's
    } else {
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const int r = rg + RG * i;
#pragma unroll
            for (int c = 0; c < C; ++c) {
                const int col = cg + CG * c;
                a[i][c] = (r < mr && col < n) ? A[(bl_i64)r * p.a_rs + (bl_i64)col * p.a_cs] : T(0);
            }
        }
    }
    T mx = bl_grp_max<T, 32>(bl_absmax(a));
    if (lane == 0) s_x[warp] = mx;
    __syncthreads();
#pragma unroll
    for (int w = 0; w < S::NT / 32; ++w) mx = s_x[w] > mx ? s_x[w] : mx;  // never NaN: bl_absflag
    bool bad;
    const int e = bl_scale_exp(mx, bad);
    bl_rescale(a, -e);

    // a[.][c] -= tau_k v_k (v_k^T a[.][c]) for the columns from C0 on, rows from I0 on
    // (v_k is zero above row k); with `right`, column c0's registers only where the
    // column lies right of k (the factorisation: column k itself holds R now).
    auto apply = [&](const int k, const int I0, const int C0, const bool right) {
        const T* vk = sv + k * VS + rg * P;
        T v[R];
#pragma unroll
        for (int i = (I0 / VN) * VN; i < R; i += VN) BlVec<T>::ld(vk + i, &v[i]);
        // One sum a column: the C columns are C independent chains already.
        T d[C];
#pragma unroll
        for (int c = C0; c < C; ++c) {
            d[c] = T(0);
#pragma unroll
            for (int i = I0; i < R; ++i) d[c] += v[i] * a[i][c];
        }
        const T tau = s_tau[k];
        T tw[C];  // tau v_k^T a[.][c], zero where column c is not right of k
        bool done = false;
        // Four columns over 8 lanes (every instantiation with C = 4 and RG = 8) are summed
        // transposed: each stage halves what a lane sends, then shuffles hand the sums
        // back: 8 shuffles, 4 adds and 6 selects against 12 shuffles and 12 adds (three
        // and two columns likewise). 4096x64x64 0.282 -> 0.273 ms, 4096x48x48 0.232 ->
        // 0.223 (gpu-lab, docs/results/h200/2026-12-01-qr-cluster-q-tile-sums/).
        if constexpr (C == 4 && CPW == 4) {
            if (C0 <= 1) {  // four columns or three (slot 0 zero)
                // lane bits 4, 3 end with the sum of column 2 b4 + b3
                const T d0 = C0 == 0 ? d[0] : T(0);
                const bool h16 = (lane & 16) != 0, h8 = (lane & 8) != 0;
                const T e0 = (h16 ? d[2] : d0) + bl_shfl_xor(h16 ? d0 : d[2], 16);
                const T e1 = (h16 ? d[3] : d[1]) + bl_shfl_xor(h16 ? d[1] : d[3], 16);
                T f = (h8 ? e1 : e0) + bl_shfl_xor(h8 ? e0 : e1, 8);
                f += bl_shfl_xor(f, 4);
                const int mine = (h16 ? 2 : 0) + (h8 ? 1 : 0);
                const T t = (!right || cg + CG * mine > k) ? tau * f : T(0);
#pragma unroll
                for (int c = C0; c < 4; ++c) tw[c] = __shfl_sync(0xffffffffu, t, (lane & 7) | ((c >> 1) << 4) | ((c & 1) << 3));
                done = true;
            }
            if (C0 == 2) {  // two columns: lane bit 4 ends with the sum of column 2 + b4
                const bool h16 = (lane & 16) != 0;
                T f = (h16 ? d[3] : d[2]) + bl_shfl_xor(h16 ? d[2] : d[3], 16);
                f += bl_shfl_xor(f, 8);
                f += bl_shfl_xor(f, 4);
                const T t = (!right || cg + CG * (h16 ? 3 : 2) > k) ? tau * f : T(0);
                tw[2] = __shfl_sync(0xffffffffu, t, lane & 15);
                tw[3] = __shfl_sync(0xffffffffu, t, lane | 16);
                done = true;
            }
        }
        if (!done) {
#pragma unroll
            for (int o = CPW; o < 32; o <<= 1)
#pragma unroll
                for (int c = C0; c < C; ++c) d[c] += bl_shfl_xor(d[c], o);
#pragma unroll
            for (int c = C0; c < C; ++c) {
                tw[c] = tau * d[c];
                if (c == C0 && right) tw[c] = (cg + CG * c > k) ? tw[c] : T(0);
            }
        }
#pragma unroll
        for (int c = C0; c < C; ++c)
#pragma unroll
            for (int i = I0; i < R; ++i) a[i][c] -= tw[c] * v[i];
    };

    // Reflector k from column k, held in registers [I][C1] (C1 = k / CG, I = k / RG, one of
    // the chunk's row registers I1 .. I1 + NI - 1) by the lanes with cg == k % CG; run by
    // their warp only. Rows of register I1 + NI on lie below k whatever the lane. Below the
    // diagonal the column keeps stale values: no later step reads them (apply masks columns
    // left of k).
    constexpr int NI = FC / RG > 1 ? FC / RG : 1;
    auto build = [&](const int k, const int I1, const int C1) {
        T ss = T(0);
#pragma unroll
        for (int i = I1; i < R; ++i) {
            const T x = (i >= I1 + NI || rg + RG * i > k) ? a[i][C1] : T(0);
            ss += x * x;
        }
#pragma unroll
        for (int o = CPW; o < 32; o <<= 1) ss += bl_shfl_xor(ss, o);
        T ak = a[I1][C1];
#pragma unroll
        for (int i = I1 + 1; i < I1 + NI && i < R; ++i) ak = bl_sel(k / RG == i, a[i][C1], ak);
        const T alpha = __shfl_sync(0xffffffffu, ak, (k % CG) % CPW + CPW * (k % RG));
        T beta, tau, scal;
        bl_householder_nb(alpha, ss, beta, tau, scal);
        if (cg == k % CG) {
            T v[R];
#pragma unroll
            for (int i = 0; i < R; ++i) {
                const int r = rg + RG * i;
                v[i] = i < I1 ? T(0) : i >= I1 + NI ? scal * a[i][C1] : (r < k ? T(0) : (r == k ? T(1) : scal * a[i][C1]));
            }
#pragma unroll
            for (int i = I1; i < I1 + NI && i < R; ++i) a[i][C1] = bl_sel(rg + RG * i == k, beta, a[i][C1]);
            T* vk = sv + k * VS + rg * P;
#pragma unroll
            for (int i = 0; i < R; i += VN) BlVec<T>::st(vk + i, &v[i]);
            if (rg == 0) {
                s_tau[k] = tau;
                s_beta[k] = beta;
            }
        }
    };
    // The warp holding column k.
    auto owner = [&](const int k) { return warp == (k % CG) / CPW; };

    // Factor, chunk by chunk: step k applies reflector k, then the warp holding column
    // k + 1 builds reflector k + 1 (look-ahead); one barrier a step.
    if (K > 0 && owner(0)) build(0, 0, 0);
    __syncthreads();
#pragma unroll
    for (int k0 = 0; k0 < KMAX; k0 += FC) {
        if (k0 >= K) break;
        const int I0 = k0 / RG, C0 = k0 / CG;  // registers of row k and column k
        // Step k, then reflector k + 1 from registers [I1][C1].
        auto step = [&](const int k, const int I1, const int C1, const bool next) {
            apply(k, I0, C0, true);
            if (next && owner(k + 1)) build(k + 1, I1, C1);
            __syncthreads();
        };
#pragma unroll 1
        for (int k = k0; k < k0 + FC - 1 && k < K; ++k) step(k, I0, C0, k + 1 < K);
        const int k = k0 + FC - 1;  // the chunk's last step builds in the next chunk's registers
        if (k < K) step(k, (k0 + FC) / RG, (k0 + FC) / CG, k0 + FC < KMAX && k + 1 < K);
    }

    // R (rrows x n): upper trapezoid, row r times sign(beta_r), unscaled.
    const int er = bl_r_exp<T>(p, outer, e);
    {
        T* Rp = (T*)p.r + outer * p.r_bs + (bl_i64)in * p.r_is;
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const int r = rg + RG * i;
            if (r < p.rrows) {
                const bool neg = r < K && s_beta[r] < T(0);
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    const int col = cg + CG * c;
                    if (col < n) {
                        T val = T(0);
                        if (r < K && r <= col) val = bl_scale2(neg ? -a[i][c] : a[i][c], er);
                        Rp[(bl_i64)r * p.r_rs + (bl_i64)col * p.r_cs] = bad ? BlT<T>::nan() : val;
                    }
                }
            }
        }
    }
    const bool ovf = !bad && bl_r_may_overflow<T>(er, mr) &&
                     bl_block_r_overflows((T*)p.r + outer * p.r_bs + (bl_i64)in * p.r_is, p.r_rs, p.r_cs,
                                          min(K, p.rrows), n);
    if (tid == 0 && p.info) {
        T dmin = BlT<T>::huge(), dmax = T(0);
        for (int k = 0; k < K; ++k) bl_diag_range(s_beta[k], dmin, dmax);
        const bool rd = bl_rank_deficient(dmin, dmax, max(mr, p.rank_rows), n);
        p.info[b] = bad ? BL_INFO_NONFINITE : ((rd ? BL_INFO_RANK_DEFICIENT : 0u) | (ovf ? BL_INFO_OVERFLOW : 0u));
    }
    if (p.q == nullptr) return;

    // Q = H_0 ... H_{K-1} [I; 0], backwards; H_k leaves the columns left of k unchanged.
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
        for (int c = 0; c < C; ++c) a[i][c] = (rg + RG * i == cg + CG * c) ? T(1) : T(0);
#pragma unroll
    for (int k0 = KMAX - QC; k0 >= 0; k0 -= QC) {
        if (k0 < K) {
            const int I0 = k0 / RG, C0 = k0 / CG;
            const int kend = min(k0 + QC, K);
#pragma unroll 1
            for (int k = kend - 1; k >= k0; --k) apply(k, I0, C0, false);
        }
    }
    T* Q = (T*)p.q + outer * p.q_bs + (bl_i64)in * p.q_is;
    if constexpr (ST) {
        __syncthreads();  // every thread is done with the v's
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
            for (int c = 0; c < C; ++c) stage[(rg + RG * i) * SP + cg + CG * c] = a[i][c];
        __syncthreads();
        const bool rfast = p.q_rs == 1 && p.q_cs != 1;
#pragma unroll 4
        for (int idx = tid; idx < M * N; idx += S::NT) {
            int r, col;
            stage_rc(idx, rfast, r, col);
            if (r < mr && col < p.qcols) {
                const T x = stage[r * SP + col];
                const bool neg = col < K && s_beta[col] < T(0);
                Q[(bl_i64)r * p.q_rs + (bl_i64)col * p.q_cs] = bad ? BlT<T>::nan() : (neg ? -x : x);
            }
        }
    } else {
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const int col = cg + CG * c;
            if (col < p.qcols) {
                const bool neg = col < K && s_beta[col] < T(0);
#pragma unroll
                for (int i = 0; i < R; ++i) {
                    const int r = rg + RG * i;
                    if (r < mr) Q[(bl_i64)r * p.q_rs + (bl_i64)col * p.q_cs] = bad ? BlT<T>::nan() : (neg ? -a[i][c] : a[i][c]);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Memory kernels: the matrix in a row-major work copy in shared memory, one block a
// matrix, columns dealt round the threads.

template <typename T>
__device__ __forceinline__ T bl_block_sum(T v, T* red) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += bl_shfl_xor(v, off);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    T r = T(0);
    const int nw = blockDim.x >> 5;
    for (int w = 0; w < nw; ++w) r += red[w];
    return r;
}

// The rank rule (bl_rank_deficient) over the diagonal of the factored work copy W, which
// holds R_kk = beta_k (one thread, after the factorisation's last barrier); the rule counts
// rank_rows rows where that is more than m (QrArgs::rank_rows).
template <typename T> __device__ bool bl_mem_rank_deficient(const T* W, int ld, int m, int n, int rank_rows) {
    T dmin = BlT<T>::huge(), dmax = T(0);
    for (int k = 0; k < min(m, n); ++k) bl_diag_range(W[(bl_i64)k * ld + k], dmin, dmax);
    return bl_rank_deficient(dmin, dmax, max(m, rank_rows), n);
}

// Copies matrix b of A into the row-major work copy W (mm x ld, zero padded to mm rows and
// nc columns) and scales it so max|a| lies in [0.5, 1) (2^-e). A non-finite matrix gets
// NaN outputs and its info word here, and the call returns true (the block is done).
template <typename T>
__device__ bool bl_mem_load(const QrArgs& p, bl_i64 b, bl_i64 outer, int in, int mr, int mm, int n,
                            int nc, int qc, T* W, int ld, T* sred, int& e) {
    const int tid = threadIdx.x;
    const int NT = blockDim.x;
    const T* A = (const T*)p.a + outer * p.a_bs + (bl_i64)in * p.a_is;
    T mx = T(0);
    const int tot = mm * nc;
    for (int idx = tid; idx < tot; idx += NT) {
        const int i = idx / nc, jj = idx - i * nc;
        T x = (i < mr && jj < n) ? A[(bl_i64)i * p.a_rs + (bl_i64)jj * p.a_cs] : T(0);
        W[(bl_i64)i * ld + jj] = x;
        const T f = bl_absflag(x);
        mx = f > mx ? f : mx;
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        T o = bl_shfl_xor(mx, off);
        mx = o > mx ? o : mx;
    }
    if ((tid & 31) == 0) sred[tid >> 5] = mx;
    __syncthreads();
    mx = T(0);
    for (int w = 0; w < (NT >> 5); ++w) mx = sred[w] > mx ? sred[w] : mx;
    __syncthreads();
    bool bad;
    e = bl_scale_exp(mx, bad);
    if (bad) {
        T* R = (T*)p.r + outer * p.r_bs + (bl_i64)in * p.r_is;
        for (int idx = tid; idx < p.rrows * n; idx += NT) {
            const int i = idx / n, jj = idx - i * n;
            R[(bl_i64)i * p.r_rs + (bl_i64)jj * p.r_cs] = BlT<T>::nan();
        }
        if (p.q) {
            T* Q = (T*)p.q + outer * p.q_bs + (bl_i64)in * p.q_is;
            for (int idx = tid; idx < mr * qc; idx += NT) {
                const int i = idx / qc, jj = idx - i * qc;
                Q[(bl_i64)i * p.q_rs + (bl_i64)jj * p.q_cs] = BlT<T>::nan();
            }
        }
        if (tid == 0 && p.info) p.info[b] = BL_INFO_NONFINITE;
        return true;
    }
    if (e != 0) {
        for (int idx = tid; idx < tot; idx += NT) {
            const int i = idx / nc, jj = idx - i * nc;
            W[(bl_i64)i * ld + jj] = bl_scale2(W[(bl_i64)i * ld + jj], -e);
        }
    }
    __syncthreads();
    return false;
}

// R (rrows x n) from the factored work copy: upper triangle, row k times sign k, 2^e.
// Returns whether R holds an entry beyond the range (BL_INFO_OVERFLOW); the whole block.
template <typename T>
__device__ bool bl_mem_store_r(const QrArgs& p, bl_i64 outer, int in, int mr, int n, const T* W, int ld,
                               const T* ssgn, int e) {
    T* R = (T*)p.r + outer * p.r_bs + (bl_i64)in * p.r_is;
    const int er = bl_r_exp<T>(p, outer, e);
    for (int idx = threadIdx.x; idx < p.rrows * n; idx += blockDim.x) {
        const int i = idx / n, jj = idx - i * n;
        T val = T(0);
        if (i <= jj && i < mr) val = bl_scale2(W[(bl_i64)i * ld + jj] * ssgn[i], er);
        R[(bl_i64)i * p.r_rs + (bl_i64)jj * p.r_cs] = val;
    }
    return bl_r_may_overflow<T>(er, mr) && bl_block_r_overflows(R, p.r_rs, p.r_cs, min(p.rrows, mr), n);
}

// Q (mr x qc) from the work copy holding it; column k < K times sign k.
template <typename T>
__device__ void bl_mem_store_q(const QrArgs& p, bl_i64 outer, int in, int mr, int K, int qc, const T* W,
                               int ld, const T* ssgn) {
    T* Q = (T*)p.q + outer * p.q_bs + (bl_i64)in * p.q_is;
    for (int idx = threadIdx.x; idx < mr * qc; idx += blockDim.x) {
        const int i = idx / qc, jj = idx - i * qc;
        const T sg = jj < K ? ssgn[jj] : T(1);
        Q[(bl_i64)i * p.q_rs + (bl_i64)jj * p.q_cs] = W[(bl_i64)i * ld + jj] * sg;
    }
}

template <typename T>
__device__ __forceinline__ void bl_qr_mem(const QrArgs& p) {
    extern __shared__ __align__(16) unsigned char bl_smem[];
    const int tid = threadIdx.x;
    const int NT = blockDim.x;
    const bl_i64 b = blockIdx.x;
    const bl_i64 outer = b / p.inner;
    const int in = (int)(b - outer * p.inner);
    const int mr = (in == p.inner - 1) ? p.m_last : p.m;
    const int mm = p.m;  // rows of the work copy (>= mr)
    const int n = p.n;
    const int K = min(mm, n);
    const int qc = p.q ? p.qcols : 0;
    const int nc = max(n, qc);
    const int ld = p.wld;

    T* W = (T*)bl_smem;
    T* sv = W + (bl_i64)mm * ld;
    T* sred = sv + 2 * mm;  // 2 x 32
    T* stau = sred + 64;
    T* ssgn = stau + K;

    int e;
    if (bl_mem_load<T>(p, b, outer, in, mr, mm, n, nc, qc, W, ld, sred, e)) return;
    for (int kk = 0; kk < K; ++kk) {
        const int buf = kk & 1;
        T* v = sv + buf * mm;
        T part = T(0);
        for (int i = kk + tid; i < mm; i += NT) {
            const T x = W[(bl_i64)i * ld + kk];
            v[i] = x;
            if (i > kk) part += x * x;
        }
        const T ss = bl_block_sum(part, sred + buf * 32);
        const T alpha = v[kk];
        T beta, tau, scal;
        bl_householder(alpha, ss, beta, tau, scal);
        for (int i = kk + tid; i < mm; i += NT) W[(bl_i64)i * ld + kk] = (i == kk) ? beta : v[i] * scal;
        if (tid == 0) {
            stau[kk] = tau;
            ssgn[kk] = beta < T(0) ? T(-1) : T(1);
        }
        if (tau != T(0)) {
            for (int jj = kk + 1 + tid; jj < nc; jj += NT) {
                T* col = W + jj;
                T w0 = T(0), w1 = T(0);
                int i = kk + 1;
                for (; i + 1 < mm; i += 2) {
                    w0 += v[i] * col[(bl_i64)i * ld];
                    w1 += v[i + 1] * col[(bl_i64)(i + 1) * ld];
                }
                if (i < mm) w0 += v[i] * col[(bl_i64)i * ld];
                const T w = tau * (col[(bl_i64)kk * ld] + scal * (w0 + w1));
                col[(bl_i64)kk * ld] -= w;
                const T ws = w * scal;
                for (i = kk + 1; i < mm; ++i) col[(bl_i64)i * ld] -= ws * v[i];
            }
        }
        __syncthreads();
    }
    __syncthreads();

    const bool ovf = bl_mem_store_r<T>(p, outer, in, mr, n, W, ld, ssgn, e);
    if (tid == 0 && p.info)
        p.info[b] = (bl_mem_rank_deficient(W, ld, mr, n, p.rank_rows) ? BL_INFO_RANK_DEFICIENT : 0u) | (ovf ? BL_INFO_OVERFLOW : 0u);
    if (!p.q) return;

    for (int idx = tid; idx < mm * qc; idx += NT) {
        const int i = idx / qc, jj = idx - i * qc;
        if (jj >= K) W[(bl_i64)i * ld + jj] = (i == jj) ? T(1) : T(0);
    }
    __syncthreads();
    for (int i0 = K - 1; i0 >= 0; --i0) {
        const int buf = i0 & 1;
        T* v = sv + buf * mm;
        for (int i = i0 + tid; i < mm; i += NT) v[i] = (i == i0) ? T(1) : W[(bl_i64)i * ld + i0];
        __syncthreads();
        const T tau = stau[i0];
        if (tau != T(0)) {
            for (int jj = i0 + 1 + tid; jj < qc; jj += NT) {
                T* col = W + jj;
                T w0 = T(0), w1 = T(0);
                int i = i0;
                for (; i + 1 < mm; i += 2) {
                    w0 += v[i] * col[(bl_i64)i * ld];
                    w1 += v[i + 1] * col[(bl_i64)(i + 1) * ld];
                }
                if (i < mm) w0 += v[i] * col[(bl_i64)i * ld];
                const T w = tau * (w0 + w1);
                for (i = i0; i < mm; ++i) col[(bl_i64)i * ld] -= w * v[i];
            }
        }
        for (int i = tid; i < mm; i += NT)
            W[(bl_i64)i * ld + i0] = (i < i0) ? T(0) : (i == i0 ? T(1) - tau : -tau * v[i]);
    }
    __syncthreads();
    bl_mem_store_q<T>(p, outer, in, mr, K, qc, W, ld, ssgn);
}

// ---------------------------------------------------------------------------------
// Blocked kernel (compact WY): one block a matrix in shared memory as qr_smem, but the
// trailing matrix is updated once a panel of NB columns, C -= V T^T (V^T C), instead of
// once a column (LAPACK's xGEQRF with xLARFT; Q backwards as xORGQR). Warps own columns,
// lanes own rows (row lane + 32 t, t < RPL): a panel's V sits in registers, so each
// trailing column costs RPL loads and stores and 2*NB*RPL FMAs a lane. m <= 32 * RPL.

template <int NB>
struct BlLog2 {
    static const int v = NB == 32 ? 5 : NB == 16 ? 4 : NB == 8 ? 3 : NB == 4 ? 2 : NB == 2 ? 1 : 0;
};

// One halving stage of bl_reduce_scatter: lanes with `BIT` set keep y[HALF..2 HALF), the
// others y[0..HALF), each adding its partner's copy; then the next stage.
template <typename T, int HALF, int BIT>
struct BlRsStage {
    static __device__ __forceinline__ void run(T* y, int lane) {
        const bool up = (lane & BIT) != 0;
#pragma unroll
        for (int i = 0; i < HALF; ++i) {
            const T send = bl_sel(up, y[i], y[i + HALF]);
            const T keep = bl_sel(up, y[i + HALF], y[i]);
            y[i] = keep + bl_shfl_xor(send, BIT);
        }
        BlRsStage<T, HALF / 2, BIT / 2>::run(y, lane);
    }
};
template <typename T, int BIT>
struct BlRsStage<T, 0, BIT> {  // one value left: sum it over the remaining lane bits
    static __device__ __forceinline__ void run(T* y, int) {
#pragma unroll
        for (int b = BIT; b > 0; b >>= 1) y[0] += bl_shfl_xor(y[0], b);
    }
};

// Sums y[0..NB) over the warp; lane l ends with the full sum of y[l >> (5 - log2 NB)] in
// y[0] (NB - 1 + 5 - log2 NB shuffles, against 5 NB for a butterfly of each value).
template <typename T, int NB>
__device__ __forceinline__ T bl_reduce_scatter(T* y, int lane) {
    BlRsStage<T, NB / 2, 16>::run(y, lane);
    return y[0];
}

template <typename T, int RPL, int NB>
__device__ __forceinline__ void bl_qr_wy(const QrArgs& p) {
    extern __shared__ __align__(16) unsigned char bl_smem[];
    constexpr int SH = 5 - BlLog2<NB>::v;  // lane l holds reduced value l >> SH
    constexpr int TLD = NB + 1;
    const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5;
    const int nw = blockDim.x >> 5;
    const bl_i64 b = blockIdx.x;
    const bl_i64 outer = b / p.inner;
    const int in = (int)(b - outer * p.inner);
    const int mr = (in == p.inner - 1) ? p.m_last : p.m;
    const int mm = p.m;
    const int n = p.n;
    const int K = min(mm, n);
    const int qc = p.q ? p.qcols : 0;
    const int nc = max(n, qc);
    const int ld = p.wld;

    T* sY = (T*)bl_smem;             // nw x 2 x NB: a warp's V^T c and T^T V^T c
    const int npan = (K + NB - 1) / NB;
    T* sT = sY + nw * 2 * NB;        // npan x NB x TLD: each panel's T
    T* sG = sT + npan * NB * TLD;    // NB: a column of V^T V
    T* W = sG + NB;                  // mm x ld, row-major
    T* stau = W + (bl_i64)mm * ld;
    T* ssgn = stau + K;
    T* sred = ssgn + K;  // 32

    int e;
    if (bl_mem_load<T>(p, b, outer, in, mr, mm, n, nc, qc, W, ld, sred, e)) return;

    auto load_col = [&](T* x, int j, int r0) {
#pragma unroll
        for (int t = 0; t < RPL; ++t) {
            const int i = lane + 32 * t;
            x[t] = (i >= r0 && i < mm) ? W[i * ld + j] : T(0);
        }
    };
    auto store_col = [&](const T* x, int j, int r0) {
#pragma unroll
        for (int t = 0; t < RPL; ++t) {
            const int i = lane + 32 * t;
            if (i >= r0 && i < mm) W[i * ld + j] = x[t];
        }
    };
    // Reflector of column c from the calling warp's x (rows lane + 32t, updated): v below
    // the diagonal and beta on it into W, tau and the sign into shared memory.
    auto reflect = [&](const T* x, int c) {
        T ss = T(0), xs = T(0);
#pragma unroll
        for (int t = 0; t < RPL; ++t) {
            const int i = lane + 32 * t;
            if (i > c && i < mm) ss += x[t] * x[t];
            xs += (i == c) ? x[t] : T(0);  // not x[c >> 5]: that would go to local memory
        }
        ss = bl_warp_sum(ss);
        const T alpha = __shfl_sync(0xffffffffu, xs, c & 31);
        T beta, tau, scal;
        bl_householder(alpha, ss, beta, tau, scal);
#pragma unroll
        for (int t = 0; t < RPL; ++t) {
            const int i = lane + 32 * t;
            if (i == c) W[i * ld + c] = beta;
            else if (i > c && i < mm) W[i * ld + c] = x[t] * scal;
        }
        if (lane == 0) {
            stau[c] = tau;
            ssgn[c] = beta < T(0) ? T(-1) : T(1);
        }
    };
    // Column c of the panel's T (xLARFT, forward): G[a] = v_a . v_c for a < c (v_c in
    // this warp's v registers), T[a][c] = -tau_c sum_l T[a][l] G[l], T[c][c] = tau_c.
    auto t_column = [&](T* sTp, int k0, int c, const T* v) {
        T y[NB];
#pragma unroll
        for (int a = 0; a < NB; ++a) {
            T s = T(0);
            if (a < c) {
#pragma unroll
                for (int t = 0; t < RPL; ++t) {
                    const int i = lane + 32 * t;
                    if (i >= k0 + c && i < mm) s += W[i * ld + k0 + a] * v[t];
                }
            }
            y[a] = s;
        }
        const T ga = bl_reduce_scatter<T, NB>(y, lane);
        if ((lane & ((1 << SH) - 1)) == 0) sG[lane >> SH] = ga;
        __syncwarp();
        if (lane < NB) {
            const T tau = stau[k0 + c];
            T val = T(0);
            if (lane == c) {
                val = tau;
            } else if (lane < c) {
                T s0 = T(0), s1 = T(0);
                int l = lane;
                for (; l + 1 < c; l += 2) {
                    s0 += sTp[lane * TLD + l] * sG[l];
                    s1 += sTp[lane * TLD + l + 1] * sG[l + 1];
                }
                if (l < c) s0 += sTp[lane * TLD + l] * sG[l];
                val = -tau * (s0 + s1);
            }
            sTp[lane * TLD + c] = val;
        }
        __syncwarp();
    };
    // The panel's V (columns k0.., nb of them, unit diagonal) into registers, and lane l's
    // column (trans: T^T is applied) or row of the panel's T into tc.
    T vr[RPL][NB];
    T tc[NB];
    auto load_v = [&](const T* sTp, int k0, int nb, bool trans) {
#pragma unroll
        for (int t = 0; t < RPL; ++t) {
            const int i = lane + 32 * t;
#pragma unroll
            for (int a = 0; a < NB; ++a) {
                T x = T(0);
                if (a < nb && i >= k0 + a && i < mm) x = (i == k0 + a) ? T(1) : W[i * ld + k0 + a];
                vr[t][a] = x;
            }
        }
        const int l = lane & (NB - 1);
#pragma unroll
        for (int a = 0; a < NB; ++a) {
            const bool in_t = a < nb && l < nb;
            tc[a] = in_t ? (trans ? sTp[a * TLD + l] : sTp[l * TLD + a]) : T(0);
        }
    };
    // Columns [j0, j1) of W, rows >= k0: C -= V * op(T) * V^T C, a column a warp at a time.
    auto apply = [&](int k0, int j0, int j1) {
        T* y1 = sY + wid * 2 * NB;
        T* y2 = y1 + NB;
        for (int j = j0 + wid; j < j1; j += nw) {
            T x[RPL];
            load_col(x, j, k0);
            T y[NB];
#pragma unroll
            for (int a = 0; a < NB; ++a) {
                T s = T(0);
#pragma unroll
                for (int t = 0; t < RPL; ++t) s += vr[t][a] * x[t];
                y[a] = s;
            }
            const T ya = bl_reduce_scatter<T, NB>(y, lane);
            if ((lane & ((1 << SH) - 1)) == 0) y1[lane >> SH] = ya;
            __syncwarp();
            if (lane < NB) {
                T s0 = T(0), s1 = T(0);
#pragma unroll
                for (int a = 0; a < NB; a += BlVec<T>::N) {
                    T yv[BlVec<T>::N];
                    BlVec<T>::ld(y1 + a, yv);
#pragma unroll
                    for (int u = 0; u < BlVec<T>::N; u += 2) {
                        s0 += tc[a + u] * yv[u];
                        s1 += tc[a + u + 1] * yv[u + 1];
                    }
                }
                y2[lane] = s0 + s1;
            }
            __syncwarp();
            T x1[RPL];
#pragma unroll
            for (int t = 0; t < RPL; ++t) x1[t] = T(0);
#pragma unroll
            for (int a = 0; a < NB; a += BlVec<T>::N) {
                T yv[BlVec<T>::N];
                BlVec<T>::ld(y2 + a, yv);
#pragma unroll
                for (int u = 0; u < BlVec<T>::N; u += 2)
#pragma unroll
                    for (int t = 0; t < RPL; ++t) {
                        x[t] -= vr[t][a + u] * yv[u];
                        x1[t] -= vr[t][a + u + 1] * yv[u + 1];
                    }
            }
#pragma unroll
            for (int t = 0; t < RPL; ++t) x[t] += x1[t];
            store_col(x, j, k0);
        }
    };

    for (int k0 = 0; k0 < K; k0 += NB) {
        const int nb = min(NB, K - k0), pend = k0 + nb;
        T* sTp = sT + (k0 / NB) * NB * TLD;
        if (wid == 0) {
            T x[RPL];
            load_col(x, k0, k0);
            reflect(x, k0);
        }
        __syncthreads();
        // Step kk: the owner of column kk+1 updates it and builds reflector kk+1 (the
        // critical path); the other warps update their columns; the warp that built
        // reflector kk adds column kk - k0 of T.
        for (int kk = k0; kk < pend; ++kk) {
            const T tau = stau[kk];
            T v[RPL];
#pragma unroll
            for (int t = 0; t < RPL; ++t) {
                const int i = lane + 32 * t;
                v[t] = (i == kk) ? T(1) : ((i > kk && i < mm) ? W[i * ld + kk] : T(0));
            }
            const int first = kk + 1 + ((wid - (kk + 1 - k0)) % nw + nw) % nw;
            for (int j = first; j < pend; j += nw) {
                T x[RPL];
                load_col(x, j, kk);
                T d = T(0);
#pragma unroll
                for (int t = 0; t < RPL; ++t) d += v[t] * x[t];
                const T w = tau * bl_warp_sum(d);
#pragma unroll
                for (int t = 0; t < RPL; ++t) x[t] -= w * v[t];
                store_col(x, j, kk);
                if (j == kk + 1) reflect(x, kk + 1);
            }
            if ((kk - k0) % nw == wid && (pend < n || qc > 0)) t_column(sTp, k0, kk - k0, v);
            __syncthreads();
        }
        if (pend < n) {
            load_v(sTp, k0, nb, true);
            apply(k0, pend, n);
            __syncthreads();
        }
    }
    __syncthreads();
    const bool ovf = bl_mem_store_r<T>(p, outer, in, mr, n, W, ld, ssgn, e);
    if (tid == 0 && p.info)
        p.info[b] = (bl_mem_rank_deficient(W, ld, mr, n, p.rank_rows) ? BL_INFO_RANK_DEFICIENT : 0u) | (ovf ? BL_INFO_OVERFLOW : 0u);
    if (!p.q) return;

    // Q = H_0 H_1 ... applied to the identity, a panel at a time from the last: the panel's
    // V into registers, its columns set to the identity, then all of [k0, qc) updated.
    for (int idx = tid; idx < mm * qc; idx += blockDim.x) {
        const int i = idx / qc, jj = idx - i * qc;
        if (jj >= K) W[i * ld + jj] = (i == jj) ? T(1) : T(0);
    }
    for (int k0 = ((K - 1) / NB) * NB; k0 >= 0; k0 -= NB) {
        const int nb = min(NB, K - k0), pend = k0 + nb;
        __syncthreads();
        load_v(sT + (k0 / NB) * NB * TLD, k0, nb, false);
        __syncthreads();
        for (int idx = tid; idx < mm * nb; idx += blockDim.x) {
            const int i = idx / nb, jj = k0 + idx - i * nb;
            W[i * ld + jj] = (i == jj) ? T(1) : T(0);
        }
        __syncthreads();
        apply(k0, k0, qc);
    }
    __syncthreads();
    bl_mem_store_q<T>(p, outer, in, mr, K, qc, W, ld, ssgn);
}

// ---------------------------------------------------------------------------------
// Batched C = A * B, 64x64 tiles of C, 256 threads, 4x4 a thread. Grid: x = tiles,
// y = matrix (batch*inner).

template <typename T>
__device__ __forceinline__ void bl_gemm(const GemmArgs& p) {
    __shared__ T As[16][65];
    __shared__ T Bs[16][65];
    const bl_i64 b = blockIdx.y;
    const bl_i64 outer = b / p.inner;
    const int in = (int)(b - outer * p.inner);
    const int m = (in == p.inner - 1) ? p.m_last : p.m;
    const int tn = (p.n + 63) / 64;
    const int ti = blockIdx.x / tn, tj = blockIdx.x - ti * tn;
    const int row0 = ti * 64, col0 = tj * 64;
    if (row0 >= m) return;
    const T* A = (const T*)p.a + outer * p.a_bs + (bl_i64)in * p.a_is;
    const T* B = (const T*)p.b + outer * p.b_bs + (bl_i64)in * p.b_is;
    T* C = (T*)p.c + outer * p.c_bs + (bl_i64)in * p.c_is;
    const int tid = threadIdx.x;
    const int tr = tid / 16, tc = tid % 16;
    T acc[4][4];
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
        for (int y = 0; y < 4; ++y) acc[x][y] = T(0);
    for (int k0 = 0; k0 < p.kk; k0 += 16) {
        for (int idx = tid; idx < 16 * 64; idx += 256) {
            const int r = idx % 64, kq = idx / 64;  // A tile: 64 rows x 16 k
            const int gi = row0 + r, gk = k0 + kq;
            As[kq][r] = (gi < m && gk < p.kk) ? A[(bl_i64)gi * p.a_rs + (bl_i64)gk * p.a_cs] : T(0);
            const int c = idx % 64, kb = idx / 64;  // B tile: 16 k x 64 cols
            const int gj = col0 + c, gk2 = k0 + kb;
            Bs[kb][c] = (gj < p.n && gk2 < p.kk) ? B[(bl_i64)gk2 * p.b_rs + (bl_i64)gj * p.b_cs] : T(0);
        }
        __syncthreads();
#pragma unroll
        for (int kq = 0; kq < 16; ++kq) {
            T av[4], bv[4];
#pragma unroll
            for (int x = 0; x < 4; ++x) av[x] = As[kq][tr + 16 * x];
#pragma unroll
            for (int y = 0; y < 4; ++y) bv[y] = Bs[kq][tc + 16 * y];
#pragma unroll
            for (int x = 0; x < 4; ++x)
#pragma unroll
                for (int y = 0; y < 4; ++y) acc[x][y] += av[x] * bv[y];
        }
        __syncthreads();
    }
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
        for (int y = 0; y < 4; ++y) {
            const int gi = row0 + tr + 16 * x, gj = col0 + tc + 16 * y;
            if (gi < m && gj < p.n) C[(bl_i64)gi * p.c_rs + (bl_i64)gj * p.c_cs] = acc[x][y];
        }
}

// ---------------------------------------------------------------------------------
// Q of M x 0 matrices in complete mode: the identity (nothing to factor). Grid-stride over
// batch * m * qcols elements.

// f(b, i, j) for every element of a batch of rows x cols matrices, over the whole grid.
template <typename F>
__device__ __forceinline__ void bl_grid_elements(bl_i64 batch, int rows, int cols, F f) {
    const bl_i64 per = (bl_i64)rows * cols;
    const bl_i64 total = batch * per;
    for (bl_i64 idx = blockIdx.x * (bl_i64)blockDim.x + threadIdx.x; idx < total;
         idx += (bl_i64)gridDim.x * blockDim.x) {
        const bl_i64 b = idx / per;
        const bl_i64 rem = idx - b * per;
        const int i = (int)(rem / cols);
        f(b, i, (int)(rem - (bl_i64)i * cols));
    }
}

template <typename T>
__device__ __forceinline__ void bl_eye(const QrArgs& p) {
    bl_grid_elements(p.batch, p.m, p.qcols, [&](bl_i64 b, int i, int j) {
        T* Q = (T*)p.q + b * p.q_bs;
        Q[(bl_i64)i * p.q_rs + (bl_i64)j * p.q_cs] = (i == j) ? T(1) : T(0);
    });
}

// ---------------------------------------------------------------------------------
// TSQR's R, stored scaled as the whole matrix times 2^-E gives it (its leaves' R's would
// leave the range on their own: bl_r_exp), times 2^E, E the exponent of the matrix's
// max|a| (mx, as BlBits); a finite matrix (no NONFINITE) whose R then holds an entry
// beyond the range (+-Inf, as numpy gives it) gets BL_INFO_OVERFLOW, as on the CPU.

// Over R's m x n elements; only the upper triangle can be nonzero.
template <typename T>
__device__ __forceinline__ void bl_qr_unscale_r(const ScaleArgs& p) {
    bl_grid_elements(p.batch, p.m, p.n, [&](bl_i64 b, int i, int j) {
        if (i > j || i >= p.k) return;
        T* x = (T*)p.x + b * p.x_bs + (bl_i64)i * p.x_rs + (bl_i64)j * p.x_cs;
        T v = *x;
        bool bad;
        const int e = bl_scale_exp(BlBits<T>::from(p.mx[b]), bad);
        if (e != 0) {
            v = bl_scale2(v, e);
            *x = v;
        }
        // Other threads only ever set the OVERFLOW bit: NONFINITE reads the same.
        if (bl_beyond_range(v) && p.info && !(p.info[b] & BL_INFO_NONFINITE))
            atomicOr(p.info + b, BL_INFO_OVERFLOW);
    });
}

// ---------------------------------------------------------------------------------
// Instantiations. Keep the lists in step with REG_SHAPES and tile_shapes in cuda/qr.rs.

// RS lanes a column (kernel name suffix _s<RS>). 5 blocks an SM at 32x32 f32: 93
// registers, no spills (4096x32x32 0.061 ms; 6 blocks spill and take 0.066).
#define BL_QR_WARP(TN, T, M, W, RS)                                                         \
    extern "C" __global__ void __launch_bounds__(BlWarpShape<M, W, RS>::BT,                 \
                                                 (sizeof(T) == 4 && (M) == 32 && (W) == 32 && (RS) == 1) ? 5 : 1) \
        qr_warp_##TN##_m##M##_w##W##_s##RS(QrArgs p) {                                     \
        bl_qr_warp<T, M, W, RS>(p);                                                         \
    }
// Tile kernel: M x N capacity over RG x CG threads (MINB blocks an SM asked of ptxas),
// chunks of FC steps factoring and QC forming Q, A and Q staged in shared memory if ST.
#define BL_QR_TILE(TN, T, M, N, RG, CG, MINB, FC, QC, ST)                                  \
    extern "C" __global__ void __launch_bounds__(RG * CG, MINB)                             \
        qr_tile_##TN##_m##M##_n##N##_g##RG##x##CG##_b##MINB##_c##FC##x##QC##_s##ST(QrArgs p) { \
        bl_qr_tile<T, M, N, RG, CG, FC, QC, ST>(p);                                         \
    }
#define BL_QR_SMEM(TN, T)                                                                   \
    extern "C" __global__ void __launch_bounds__(1024) qr_smem_##TN(QrArgs p) { bl_qr_mem<T>(p); }
// Blocked kernel: m <= 32*RPL rows; panels of 8 columns (16 measured slower in f32: more
// registers, fewer blocks an SM).
#define BL_QR_WY(TN, T, RPL)                                                                \
    extern "C" __global__ void __launch_bounds__(256) qr_wy_##TN##_r##RPL(QrArgs p) { bl_qr_wy<T, RPL, 8>(p); }
#define BL_EYE(TN, T) \
    extern "C" __global__ void __launch_bounds__(256) eye_##TN(QrArgs p) { bl_eye<T>(p); }
#define BL_GEMM(TN, T) \
    extern "C" __global__ void __launch_bounds__(256) gemm_##TN(GemmArgs p) { bl_gemm<T>(p); }
#define BL_QR_UNSCALE_R(TN, T) \
    extern "C" __global__ void __launch_bounds__(256) qr_unscale_r_##TN(ScaleArgs p) { bl_qr_unscale_r<T>(p); }
// The runtime defines BL_NO_DEFAULT_INST and appends one of these lines per module.
// Warp kernels hold at most 64 rows a lane in float32, 32 in float64 (more spill).
#define BL_QR_ALL(TN, T)                                                                    \
    BL_QR_WARP(TN, T, 8, 8, 1)                                                              \
    BL_QR_WARP(TN, T, 16, 8, 1)                                                             \
    BL_QR_WARP(TN, T, 32, 8, 1)                                                             \
    BL_QR_WARP(TN, T, 16, 16, 1)                                                            \
    BL_QR_WARP(TN, T, 32, 16, 1)                                                            \
    BL_QR_WARP(TN, T, 16, 32, 1)                                                            \
    BL_QR_WARP(TN, T, 32, 32, 1)                                                            \
    BL_QR_WY(TN, T, 2)                                                                      \
    BL_QR_WY(TN, T, 4)                                                                      \
    BL_QR_SMEM(TN, T) BL_GEMM(TN, T) BL_EYE(TN, T) BL_QR_UNSCALE_R(TN, T)

#ifndef BL_NO_DEFAULT_INST
BL_QR_ALL(f32, float)
BL_QR_WARP(f32, float, 64, 16, 1)
BL_QR_WARP(f32, float, 64, 32, 1)
BL_QR_ALL(f64, double)
#endif
