// SVD by one-sided (Hestenes) Jacobi, one block a matrix (svd_jacobi_<t>), on the tall
// orientation p x q (p >= q; a wide matrix is passed transposed through its strides).
// The matrix is scaled by a power of two so max|a| lies in [0.5, 1); columns are rotated
// in pairs until every pair is orthogonal to tol = sqrt(max(p, 16)) eps relative to its norms
// (the Rutishauser rotation), pairs in round-robin order (q/2 disjoint pairs a round, a
// group of 4-32 lanes a pair, a barrier a round); a column below min(32, p) eps of the largest is
// null and never rotated (rotating rounding noise against the others never converges:
// ones(32, 32) ran out of sweeps). Then U's and V's columns re-orthogonalised once. Then sigma_j = |a_j|, sorted
// descending (a stable rank sort); U's columns a_j / sigma_j, null columns and, for full
// matrices, the complement filled by Gram-Schmidt from the unit vector of the row of
// least leverage (twice); signs so that each column of A's U (work U, or work V for a
// wide A) has its largest component positive; the scaling undone.
//
// Work U (p x xcols) and V (q x q) are column-major (U ld ldu), in dynamic shared memory
// when they fit, else in global scratch (work, work_bs elements a matrix).
// info: bit 0 non-finite input (every output NaN), bit 1 not converged, bit 2 rank
// deficient (sigma_min <= p eps sigma_max), bits 16.. the sweeps.

// Mirrors `SvdArgs` in crates/batchlin/src/cuda/svd.rs.
struct SvdArgs {
    const void* a;  // element (i, j), i < p, j < q, at a + i*a_rs + j*a_cs
    bl_i64 a_bs, a_rs, a_cs;
    void* x;  // work U's columns out (p x xcols); NULL: values only
    bl_i64 x_bs, x_rs, x_cs;
    void* s;
    bl_i64 s_bs, s_cs;
    void* y;  // work V's columns out (q x q)
    bl_i64 y_bs, y_rs, y_cs;
    unsigned int* info;
    void* work;  // NULL: U and V in shared memory
    bl_i64 work_bs;
    int b0;
    int p, q, xcols, ldu, sign_from_v, max_sweeps, lpp;
    int nmat;  // warp kernel: matrices b0 .. b0 + nmat of this launch
    int ldv;    // bidiag kernel: work V's leading dimension
    int place;  // bidiag kernel: 0 A and V in shared memory, 1 V in work, 2 both in work
};

// Columns order[0..count) of X (column-major, ld; `rows` long), those with valid[j] when
// `valid` is given, made orthonormal in that order by one pass of classical Gram-Schmidt.
// They are orthonormal to a few ulps times the sweeps already; this removes the drift
// that thousands of rotations leave (||V^T V - I|| 2.1e-5 at 128x128 float32 without it).
template <typename T>
__device__ void bl_reorth(T* X, int ld, int rows, const int* order, int count, const int* valid, T* coef,
                          T* red) {
    const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, wid = tid >> 5, nw = nt >> 5;
    for (int c = 0; c < count; ++c) {
        const int j = order[c];
        if (valid && !valid[j]) continue;
        T* xj = X + (bl_i64)j * ld;
        for (int ci = wid; ci < c; ci += nw) {
            const int i = order[ci];
            T s = T(0);
            if (!valid || valid[i]) {
                const T* xi = X + (bl_i64)i * ld;
                for (int r = lane; r < rows; r += 32) s += xi[r] * xj[r];
                s = bl_warp_sum(s);
            }
            if (lane == 0) coef[ci] = s;
        }
        __syncthreads();
        T part = T(0);
        for (int r = tid; r < rows; r += nt) {
            T x = xj[r];
            for (int ci = 0; ci < c; ++ci) x -= coef[ci] * X[(bl_i64)order[ci] * ld + r];
            xj[r] = x;
            part += x * x;
        }
        const T inv = T(1) / BlT<T>::sqrt_(bl_sum_all(part, red));
        for (int r = tid; r < rows; r += nt) xj[r] *= inv;
        __syncthreads();
    }
}

// An input element scaled by 2^-es, flushed to zero where it is subnormal in
// the output type (as eigh.cu).
template <typename T, typename W> __device__ __forceinline__ W bl_svd_scale_in(W x, int es) {
    const W y = bl_scale2(x, -es);
    return BlT<W>::abs_(y) < W(BlT<T>::tiny()) ? W(0) : y;  // subnormal input too
}

// The null-column bound null2 (a squared norm) and the orthogonality tolerance tol, from
// the largest column's squared norm cmax. Null: below min(32, p) eps of the largest column
// (at most the rank rule's p eps, so a frozen null column is flagged).
template <typename W>
__device__ __forceinline__ void bl_svd_limits(int p, W eps, W cmax, W& null2, W& tol) {
    const W nf = W(p < 4 ? 4 : (p > 32 ? 32 : p));
    null2 = nf * nf * eps * eps * cmax;
    tol = BlT<W>::sqrt_(W(p > 16 ? p : 16)) * eps;
}

// Whether the pair with squared norms aii, ajj and dot product aij is rotated, and the
// rotation (Rutishauser's): a_i' = c a_i - s a_j, a_j' = s a_i + c a_j.
template <typename W>
__device__ __forceinline__ bool bl_svd_rotation(W aii, W ajj, W aij, W null2, W tol, W eps, W& c, W& s) {
    if (aii <= null2 || ajj <= null2) return false;
    if (!(BlT<W>::abs_(aij) > tol * BlT<W>::sqrt_(aii) * BlT<W>::sqrt_(ajj))) return false;
    const W zeta = (ajj - aii) / (W(2) * aij);
    const W az = BlT<W>::abs_(zeta);
    const W t = az > W(1) / eps ? W(0.5) / zeta : bl_sign(W(1), zeta) / (az + BlT<W>::sqrt_(W(1) + zeta * zeta));
    c = W(1) / BlT<W>::sqrt_(W(1) + t * t);
    s = c * t;
    return true;
}

// The info word from the sweeps, convergence and the extreme column norms (scaled).
template <typename T, typename W>
__device__ __forceinline__ unsigned bl_svd_info(int sweeps, bool conv, W smax, W smin, int p, W eps, int es) {
    unsigned word = ((unsigned)(sweeps > 0xffff ? 0xffff : sweeps) << 16) | (conv ? 0u : BL_INFO_NOT_CONVERGED);
    if (smin <= W(p) * eps * smax || smax == W(0)) word |= BL_INFO_RANK_DEFICIENT;
    const T top = T(bl_scale2(smax, es));
    if (!(BlT<T>::abs_(top) <= BlT<T>::huge())) word |= BL_INFO_OVERFLOW;  // finite input
    return word;
}

// Matrix b's tall p x q orientation into X (column-major, ld) scaled by 2^-es so that
// max|a| lies in [0.5, 1) (the scaling as bl_svd_scale_in); true with es set. A matrix
// holding NaN or Inf instead gets NaN in S, in U's xc columns and in V and its info flag,
// and false. Every thread of the block calls it; `red` is 32 elements of scratch.
template <typename T, typename W>
__device__ bool bl_svd_load(const SvdArgs& g, bl_i64 b, W* X, int ld, int xc, W* red, int& es) {
    const int p = g.p, q = g.q, tid = threadIdx.x, nt = blockDim.x;
    const T* ap = reinterpret_cast<const T*>(g.a) + b * g.a_bs;
    const bool rows_fast = (g.a_rs < 0 ? -g.a_rs : g.a_rs) <= (g.a_cs < 0 ? -g.a_cs : g.a_cs);
    W mx = W(0);
    for (int idx = tid; idx < p * q; idx += nt) {
        const int o = idx / (rows_fast ? p : q), in = idx - o * (rows_fast ? p : q);
        const int i = rows_fast ? in : o, j = rows_fast ? o : in;
        const W x = W(ap[i * g.a_rs + j * g.a_cs]);
        X[(bl_i64)j * ld + i] = x;
        const W f = bl_absflag(x);
        mx = f > mx ? f : mx;
    }
    mx = bl_max_all(mx, red);
    bool bad;
    es = bl_scale_exp(mx, bad);
    if (bad) {
        const T nan = BlT<T>::nan();
        T* sp = reinterpret_cast<T*>(g.s) + b * g.s_bs;
        for (int j = tid; j < q; j += nt) sp[j * g.s_cs] = nan;
        if (g.x) {
            T* xp = reinterpret_cast<T*>(g.x) + b * g.x_bs;
            T* yp = reinterpret_cast<T*>(g.y) + b * g.y_bs;
            for (int idx = tid; idx < p * xc; idx += nt) xp[(idx % p) * g.x_rs + (idx / p) * g.x_cs] = nan;
            for (int idx = tid; idx < q * q; idx += nt) yp[(idx % q) * g.y_rs + (idx / q) * g.y_cs] = nan;
        }
        if (tid == 0 && g.info) g.info[b] = BL_INFO_NONFINITE;
        return false;
    }
    __syncthreads();
    for (int idx = tid; idx < p * q; idx += nt) {
        W* x = X + (bl_i64)(idx / p) * ld + idx % p;
        *x = bl_svd_scale_in<T>(*x, es);
    }
    return true;
}

template <typename T, typename W> __device__ void bl_svd_jacobi(const SvdArgs& g) {
    extern __shared__ __align__(16) unsigned char bl_smem[];
    const int p = g.p, q = g.q, xc = g.xcols, ldu = g.ldu;
    const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, wid = tid >> 5, nw = nt >> 5;
    const bl_i64 b = (bl_i64)g.b0 + blockIdx.x;
    const bool vec = g.x != nullptr;
    W* sm = reinterpret_cast<W*>(bl_smem);
    W* U;
    W* V;
    const bl_i64 ubig = (bl_i64)ldu * (vec ? xc : q);
    if (g.work) {
        U = reinterpret_cast<W*>(g.work) + (bl_i64)blockIdx.x * g.work_bs;  // per launch
        V = U + ubig;
    } else {
        U = sm;
        V = sm + ubig;
        sm += ubig + (vec ? (bl_i64)q * q : 0);
    }
    W* nrm = sm;            // xc: column norms, then signs
    W* vecp = nrm + xc;     // p: the candidate column of a completion
    W* lev = vecp + p;      // p: leverages
    W* red = lev + p;       // 32
    int* perm = reinterpret_cast<int*>(red + 32);  // q
    int* valid = perm + q;  // xc
    int* flags = valid + xc;  // [0] last sweep that rotated, [1] argmin row

    int es;
    if (!bl_svd_load<T>(g, b, U, ldu, xc, red, es)) return;
    T* sp = reinterpret_cast<T*>(g.s) + b * g.s_bs;
    T* xp = vec ? reinterpret_cast<T*>(g.x) + b * g.x_bs : nullptr;
    T* yp = vec ? reinterpret_cast<T*>(g.y) + b * g.y_bs : nullptr;
    if (vec)
        for (int idx = tid; idx < q * q; idx += nt) V[idx] = (idx % q == idx / q) ? W(1) : W(0);
    if (tid == 0) flags[0] = -1;
    __syncthreads();

    // The largest column's squared norm, for the null-column rule.
    W cmax = W(0);
    for (int j = wid; j < q; j += nw) {
        const W* u = U + (bl_i64)j * ldu;
        W s = W(0);
        for (int i = lane; i < p; i += 32) s += u[i] * u[i];
        s = bl_warp_sum(s);
        cmax = s > cmax ? s : cmax;
    }
    cmax = bl_max_all(cmax, red);
    const W eps = W(BlT<T>::eps());  // the output type's: the tolerances it can show
    W null2, tol;
    bl_svd_limits(p, eps, cmax, null2, tol);
    const int q2 = q + (q & 1), rounds = q2 - 1, npairs = q2 / 2;

    int sweeps = 0;
    bool conv = false;
    // A group of lpp lanes (4..32, a power of two) a column pair: lpp * 4 rows or more.
    const int lpp = g.lpp, gl = tid & (lpp - 1), gid = tid / lpp, ng = nt / lpp;
    const unsigned gmask = bl_group_mask(lpp);
    for (int sw = 0; sw < g.max_sweeps; ++sw) {
        for (int r = 0; r < rounds; ++r) {
            for (int k = gid; k < npairs; k += ng) {
                int i, j;
                if (k == 0) {
                    i = 0;
                    j = 1 + r % rounds;
                } else {
                    i = 1 + (r + k) % rounds;
                    j = 1 + (r + rounds - k) % rounds;
                }
                if (i >= q || j >= q) continue;
                W* ui = U + (bl_i64)i * ldu;
                W* uj = U + (bl_i64)j * ldu;
                W aii = W(0), ajj = W(0), aij = W(0);
                for (int row = gl; row < p; row += lpp) {
                    const W x = ui[row], y = uj[row];
                    aii += x * x;
                    ajj += y * y;
                    aij += x * y;
                }
                for (int off = lpp >> 1; off > 0; off >>= 1) {
                    aii += __shfl_xor_sync(gmask, aii, off);
                    ajj += __shfl_xor_sync(gmask, ajj, off);
                    aij += __shfl_xor_sync(gmask, aij, off);
                }
                W c, s;
                if (!bl_svd_rotation(aii, ajj, aij, null2, tol, eps, c, s)) continue;
                for (int row = gl; row < p; row += lpp) {
                    const W x = ui[row], y = uj[row];
                    ui[row] = c * x - s * y;
                    uj[row] = s * x + c * y;
                }
                if (vec) {
                    W* vi = V + (bl_i64)i * q;
                    W* vj = V + (bl_i64)j * q;
                    for (int row = gl; row < q; row += lpp) {
                        const W x = vi[row], y = vj[row];
                        vi[row] = c * x - s * y;
                        vj[row] = s * x + c * y;
                    }
                }
                if (gl == 0) flags[0] = sw;
            }
            __syncthreads();
        }
        sweeps = sw + 1;
        // flags[0] < sw: nothing rotated this sweep. Every thread reads it before any
        // writes the next sweep's (racecheck flagged the read racing that write).
        const bool quiet = flags[0] < sw;
        __syncthreads();
        if (quiet) {
            conv = true;
            break;
        }
    }

    // Singular values and their order.
    for (int j = wid; j < q; j += nw) {
        const W* u = U + (bl_i64)j * ldu;
        W s = W(0);
        for (int i = lane; i < p; i += 32) s += u[i] * u[i];
        s = bl_warp_sum(s);
        if (lane == 0) nrm[j] = BlT<W>::sqrt_(s);
    }
    __syncthreads();
    for (int j = tid; j < q; j += nt) {
        const W sj = nrm[j];
        int r = 0;
        for (int i = 0; i < q; ++i) {
            const W si = nrm[i];
            r += (si > sj) || (si == sj && i < j);
        }
        perm[r] = j;
    }
    __syncthreads();
    for (int c = tid; c < q; c += nt) sp[c * g.s_cs] = T(bl_scale2(nrm[perm[c]], es));
    const unsigned word = bl_svd_info<T>(sweeps, conv, nrm[perm[0]], nrm[perm[q - 1]], p, eps, es);
    if (!vec) {
        if (tid == 0 && g.info) g.info[b] = word;
        return;
    }

    // U: columns normalised; null ones (and the complement for full matrices) filled.
    const W nullc = BlT<W>::sqrt_(null2);
    for (int j = wid; j < xc; j += nw) {
        W* u = U + (bl_i64)j * ldu;
        const bool ok = j < q && nrm[j] > nullc;
        if (ok) {
            const W inv = W(1) / nrm[j];
            for (int i = lane; i < p; i += 32) u[i] *= inv;
        }
        if (lane == 0) valid[j] = ok;
    }
    __syncthreads();
    bl_reorth(U, ldu, p, perm, q, valid, lev, red);
    bl_reorth(V, q, q, perm, q, (const int*)nullptr, lev, red);
    for (int c = 0; c < xc; ++c) {
        if (valid[c]) continue;
        // The row of least leverage over the valid columns, first on ties.
        for (int i = tid; i < p; i += nt) {
            W l = W(0);
            for (int j = 0; j < xc; ++j)
                if (valid[j]) {
                    const W u = U[(bl_i64)j * ldu + i];
                    l += u * u;
                }
            lev[i] = l;
        }
        __syncthreads();
        if (tid == 0) {
            int best = 0;
            for (int i = 1; i < p; ++i)
                if (lev[i] < lev[best]) best = i;
            flags[1] = best;
        }
        __syncthreads();
        const int kr = flags[1];
        for (int i = tid; i < p; i += nt) vecp[i] = i == kr ? W(1) : W(0);
        __syncthreads();
        // Twice: vecp -= sum_j (u_j . vecp) u_j over the valid columns (classical GS).
        for (int pass = 0; pass < 2; ++pass) {
            for (int j = wid; j < xc; j += nw) {
                if (!valid[j]) continue;
                const W* u = U + (bl_i64)j * ldu;
                W s = W(0);
                for (int i = lane; i < p; i += 32) s += u[i] * vecp[i];
                s = bl_warp_sum(s);
                if (lane == 0) lev[j] = s;  // coefficients (lev is free now; xc <= p)
            }
            __syncthreads();
            for (int i = tid; i < p; i += nt) {
                W x = vecp[i];
                for (int j = 0; j < xc; ++j)
                    if (valid[j]) x -= lev[j] * U[(bl_i64)j * ldu + i];
                vecp[i] = x;
            }
            __syncthreads();
        }
        W part = W(0);
        for (int i = tid; i < p; i += nt) part += vecp[i] * vecp[i];
        const W inv = W(1) / BlT<W>::sqrt_(bl_sum_all(part, red));
        for (int i = tid; i < p; i += nt) U[(bl_i64)c * ldu + i] = vecp[i] * inv;
        if (tid == 0) valid[c] = 1;
        __syncthreads();
    }

    // Signs: sorted column c < q from work column perm[c] led by A's U; the complement's
    // columns by themselves. lev[] now holds the signs.
    for (int c = wid; c < xc; c += nw) {
        const int j = c < q ? perm[c] : c;
        const bool from_v = c < q && g.sign_from_v;
        const W* col = from_v ? V + (bl_i64)j * q : U + (bl_i64)j * ldu;
        const W lead = bl_warp_lead(col, 1, from_v ? q : p);
        if (lane == 0) lev[c] = lead < W(0) ? W(-1) : W(1);
    }
    __syncthreads();
    const bool x_rows = (g.x_rs < 0 ? -g.x_rs : g.x_rs) >= (g.x_cs < 0 ? -g.x_cs : g.x_cs);
    for (int idx = tid; idx < p * xc; idx += nt) {
        const int o = idx / (x_rows ? xc : p), in = idx - o * (x_rows ? xc : p);
        const int i = x_rows ? o : in, c = x_rows ? in : o;
        const int j = c < q ? perm[c] : c;
        xp[i * g.x_rs + c * g.x_cs] = T(lev[c] * U[(bl_i64)j * ldu + i]);
    }
    const bool y_rows = (g.y_rs < 0 ? -g.y_rs : g.y_rs) >= (g.y_cs < 0 ? -g.y_cs : g.y_cs);
    for (int idx = tid; idx < q * q; idx += nt) {
        const int o = idx / q, in = idx - o * q;
        const int i = y_rows ? o : in, c = y_rows ? in : o;
        yp[i * g.y_rs + c * g.y_cs] = T(lev[c] * V[(bl_i64)perm[c] * q + i]);
    }
    if (tid == 0 && g.info) g.info[b] = word;
}

// float work in double: a float matrix's rotations accumulate rounding in U and V that
// breaks the accuracy floor from 256 columns (||A - U S Vh|| 2.8e-5 at 256x256 in a float
// model of the kernel, 5.5e-5 before the final re-orthogonalisation); the tolerances stay
// float's, so the sweeps are float's.
#define BL_SVD_JACOBI(TN, T)                                                                \
    extern "C" __global__ void __launch_bounds__(512) svd_jacobi_##TN(SvdArgs p) { bl_svd_jacobi<T, double>(p); }

// ---------------------------------------------------------------------------------
// svd_warp_<t>_p<P>_q<Q>: the same algorithm a warp a matrix (WARPS matrices a block), the
// matrix in registers, for q <= Q <= 32 columns and p <= P rows: lane j holds column j of
// A (P values) and of V (Q values). A round pairs lane j with BlRrPartner's: both
// lanes fetch the partner's column by shuffles, compute the same dot products in the same
// order (so the same bits) and the same rotation, and update their own column. Work in T
// (float for float: a float model reaches the accuracy floor with room at q <= 32; see
// docs/proposals/gpu-eigh-svd.md). No re-orthogonalisation (the model: ||V^T V - I|| at
// most 6.4e-6 without it). Null columns and the complement for full matrices are filled
// in the output itself (Gram-Schmidt twice, modified, from the unit vector of the row of
// least leverage over the columns already there).

// Lane `lane`'s partner round by round in bl_svd_jacobi's order (pair 0 is (0, 1 + r),
// pair k (1 + (r + k) % R, 1 + (r + R - k) % R), R = q2 - 1 rounds): lanes i, j > 0 pair
// when (i - 1) + (j - 1) = 2r mod R, lane 0 with the one left alone; lanes past q2 pair
// with themselves. (2r - (lane - 1)) mod R is stepped a round at a time, not recomputed.
struct BlRrPartner {
    int lane, q2, rounds, jj;
    __device__ __forceinline__ BlRrPartner(int lane_, int q2_) : lane(lane_), q2(q2_), rounds(q2_ - 1) {
        jj = lane <= 1 || lane >= q2 ? 0 : rounds - (lane - 1);
    }
    // The partner in round r (called for r = 0, 1, .. in turn).
    __device__ __forceinline__ int next(int r) {
        const int pj = lane >= q2 ? lane : (lane == 0 ? 1 + r : (jj == lane - 1 ? 0 : jj + 1));
        jj += 2;
        jj -= jj >= rounds ? rounds : 0;
        jj -= jj >= rounds ? rounds : 0;  // rounds = 1
        return pj;
    }
};

// Sign (+-1) leading column x[0..n): that of its first entry of largest |x| (in a lane).
template <typename T, int N> __device__ __forceinline__ T bl_lead_sign(const T (&x)[N]) {
    T best = T(0), lead = T(1);
#pragma unroll
    for (int k = 0; k < N; ++k) {
        const T ax = BlT<T>::abs_(x[k]);
        if (ax > best) {
            best = ax;
            lead = x[k];
        }
    }
    return lead < T(0) ? T(-1) : T(1);
}

template <typename T, int P, int Q> __device__ void bl_svd_warp(const SvdArgs& g) {
    static_assert(Q <= 32 && Q <= P, "svd warp shape");
    constexpr unsigned ALL = 0xffffffffu;
    constexpr int RL = (P + 31) / 32;  // rows a lane in the completion
    const int p = g.p, q = g.q, xc = g.xcols;
    const int lane = threadIdx.x & 31;
    const int mat = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    if (mat >= g.nmat) return;  // a whole warp: no block-wide barrier follows
    const bl_i64 b = (bl_i64)g.b0 + mat;
    const bool vec = g.x != nullptr;
    const bool own = lane < q;

    T a[P];  // column `lane` of the work U
    {
        const T* ap = reinterpret_cast<const T*>(g.a) + b * g.a_bs + (own ? lane : 0) * g.a_cs;
#pragma unroll
        for (int k = 0; k < P; ++k) a[k] = (own && k < p) ? ap[k * g.a_rs] : T(0);
    }
    T mx = T(0);
#pragma unroll
    for (int k = 0; k < P; ++k) {
        const T f = bl_absflag(a[k]);
        mx = f > mx ? f : mx;
    }
    mx = bl_warp_max(mx);
    bool bad;
    const int es = bl_scale_exp(mx, bad);
    T* sp = reinterpret_cast<T*>(g.s) + b * g.s_bs;
    T* xp = vec ? reinterpret_cast<T*>(g.x) + b * g.x_bs : nullptr;
    T* yp = vec ? reinterpret_cast<T*>(g.y) + b * g.y_bs : nullptr;
    auto xat = [&](int i, int c) -> T& { return xp[(bl_i64)i * g.x_rs + (bl_i64)c * g.x_cs]; };
    if (bad) {
        const T nan = BlT<T>::nan();
        if (own) sp[lane * g.s_cs] = nan;
        if (vec) {
            for (int c = lane; c < xc; c += 32)
                for (int i = 0; i < p; ++i) xat(i, c) = nan;
            if (own)
                for (int i = 0; i < q; ++i) yp[(bl_i64)i * g.y_rs + (bl_i64)lane * g.y_cs] = nan;
        }
        if (lane == 0 && g.info) g.info[b] = BL_INFO_NONFINITE;
        return;
    }
#pragma unroll
    for (int k = 0; k < P; ++k) a[k] = bl_svd_scale_in<T>(a[k], es);
    T v[Q];  // column `lane` of V
#pragma unroll
    for (int k = 0; k < Q; ++k) v[k] = (vec && k == lane) ? T(1) : T(0);

    auto sumsq = [&]() {
        T s = T(0);
#pragma unroll
        for (int k = 0; k < P; ++k) s += a[k] * a[k];
        return s;
    };
    const T eps = BlT<T>::eps();
    T null2, tol;
    bl_svd_limits(p, eps, bl_warp_max(sumsq()), null2, tol);
    const int q2 = q + (q & 1), rounds = q2 - 1;

    // Scaled rotations: the true column is sig times a (and V's, sig times v), so that a
    // rotation costs one FMA an element: a_i' = c (a_i - t a_j) is kept as sig_i' = c sig_i,
    // a_i' = a_i - t (sig_j / sig_i) a_j. The squared norm nn (of the true column) follows
    // Rutishauser's update (a_ii' = a_ii - t a_ij, a_jj' = a_jj + t a_ij), recomputed where
    // it lost most of itself to cancellation; each sweep starts from the columns with sig
    // folded in (sig >= 2^-16 within a sweep: c >= 1/sqrt(2), at most 31 rotations).
    T sig = T(1), nn = sumsq();
    auto fold = [&]() {
#pragma unroll
        for (int k = 0; k < P; ++k) a[k] *= sig;
        if (vec) {
#pragma unroll
            for (int k = 0; k < Q; ++k) v[k] *= sig;
        }
        sig = T(1);
    };
    const T tol2 = tol * tol;
    int sweeps = 0;
    bool conv = false;
    for (int sw = 0; sw < g.max_sweeps; ++sw) {
        if (sw > 0) {
            fold();
            nn = sumsq();
        }
        bool rotated = false;
        BlRrPartner partner(lane, q2);
        for (int r = 0; r < rounds; ++r) {
            const int pj = partner.next(r);
            T y[P];
            T dot = T(0);
#pragma unroll
            for (int k = 0; k < P; ++k) {
                y[k] = __shfl_sync(ALL, a[k], pj);
                dot += a[k] * y[k];  // the partner's product of the same two values
            }
            const T npart = __shfl_sync(ALL, nn, pj), spart = __shfl_sync(ALL, sig, pj);
            // The pair's lower lane is the rotation's i; both lanes form the same numbers.
            const bool lo = lane < pj;
            const T aii = lo ? nn : npart, ajj = lo ? npart : nn, aij = (sig * spart) * dot;
            const bool rot = own && pj < q && pj != lane && aii > null2 && ajj > null2 &&
                             aij * aij > tol2 * (aii * ajj);
            if (!__any_sync(ALL, rot)) continue;
            rotated |= rot;
            const T t = rot ? bl_jacobi_t<false>(aii, ajj, aij) : T(0);
            // i: a_i - t (sig_j / sig_i) a_j; j: a_j + t (sig_i / sig_j) a_i. A lane not
            // rotating keeps its column (t = 0).
            const T co = (lo ? -t : t) * (spart / sig);
#pragma unroll
            for (int k = 0; k < P; ++k) a[k] += co * y[k];
            if (vec) {
#pragma unroll
                for (int k = 0; k < Q; ++k) v[k] += co * __shfl_sync(ALL, v[k], pj);
            }
            if (rot) {
                sig *= bl_rsqrt_acc(T(1) + t * t);
                nn = lo ? aii - t * aij : ajj + t * aij;
            }
            // Below an eighth of what it was, the update's rounding (a few ulps of the
            // old norm) would be more than a few ulps of the new one: recomputed.
            const bool low = rot && nn < T(0.125) * (lo ? aii : ajj);
            if (__any_sync(ALL, low)) {
                const T s2 = sumsq();
                if (low) nn = (sig * sig) * s2;
            }
        }
        sweeps = sw + 1;
        if (!__any_sync(ALL, rotated)) {
            conv = true;
            break;
        }
    }
    fold();

    // Singular values and their order (the stable rank sort).
    const T nrm = BlT<T>::sqrt_(sumsq());
    int rank = 0;
    for (int i = 0; i < q; ++i) {
        const T si = __shfl_sync(ALL, nrm, i);
        rank += (si > nrm) || (si == nrm && i < lane);
    }
    if (own) sp[rank * g.s_cs] = bl_scale2(nrm, es);
    const int first = __ffs(__ballot_sync(ALL, own && rank == 0)) - 1;
    const int last = __ffs(__ballot_sync(ALL, own && rank == q - 1)) - 1;
    const unsigned word =
        bl_svd_info<T>(sweeps, conv, __shfl_sync(ALL, nrm, first), __shfl_sync(ALL, nrm, last), p, eps, es);
    if (!vec) {
        if (lane == 0 && g.info) g.info[b] = word;
        return;
    }

    // Sorted column rank from this lane's: U's normalised, V's, both with the sign of A's U
    // (work V for a wide A); null columns of U are filled below.
    const bool valid = own && nrm > BlT<T>::sqrt_(null2);
    if (valid) {
        const T inv = T(1) / nrm;
#pragma unroll
        for (int k = 0; k < P; ++k) a[k] *= inv;
    }
    const T sgn = g.sign_from_v ? bl_lead_sign(v) : bl_lead_sign(a);
    T vsgn = sgn;  // a null column of a tall A: its completed U column's, below
    if (valid) {
#pragma unroll
        for (int k = 0; k < P; ++k)
            if (k < p) xat(k, rank) = sgn * a[k];
    }
    // The valid columns sort first (their norms are above every null one's): fill the rest.
    const int nv = __popc(__ballot_sync(ALL, valid));
    for (int c = nv; c < xc; ++c) {
        __syncwarp();  // the columns before c are written
        // The row of least leverage over columns 0..c, first on ties.
        T best = BlT<T>::inf();
        int kr = 1 << 30;
#pragma unroll
        for (int t = 0; t < RL; ++t) {
            const int i = lane + 32 * t;
            if (i < p) {
                T l = T(0);
                for (int cc = 0; cc < c; ++cc) l += xat(i, cc) * xat(i, cc);
                if (l < best) {
                    best = l;
                    kr = i;
                }
            }
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            const T ob = bl_shfl_xor(best, off);
            const int oi = __shfl_xor_sync(ALL, kr, off);
            if (ob < best || (ob == best && oi < kr)) {
                best = ob;
                kr = oi;
            }
        }
        T e[RL];
#pragma unroll
        for (int t = 0; t < RL; ++t) e[t] = lane + 32 * t == kr ? T(1) : T(0);
        for (int pass = 0; pass < 2; ++pass)
            for (int cc = 0; cc < c; ++cc) {
                T d = T(0);
#pragma unroll
                for (int t = 0; t < RL; ++t)
                    if (lane + 32 * t < p) d += xat(lane + 32 * t, cc) * e[t];
                d = bl_warp_sum(d);
#pragma unroll
                for (int t = 0; t < RL; ++t)
                    if (lane + 32 * t < p) e[t] -= d * xat(lane + 32 * t, cc);
            }
        T ss = T(0);
#pragma unroll
        for (int t = 0; t < RL; ++t) ss += e[t] * e[t];
        const T inv = T(1) / BlT<T>::sqrt_(bl_warp_sum(ss));
        // The sign: V's column's for a sorted column of a wide A, else the column's own.
        T cs;
        if (c < q && g.sign_from_v) {
            cs = __shfl_sync(ALL, sgn, __ffs(__ballot_sync(ALL, own && rank == c)) - 1);
        } else {
            T big = T(0), lead = T(1);
            int bi = 1 << 30;
#pragma unroll
            for (int t = 0; t < RL; ++t) {
                const T ax = BlT<T>::abs_(e[t]);
                if (lane + 32 * t < p && ax > big) {
                    big = ax;
                    lead = e[t];
                    bi = lane + 32 * t;
                }
            }
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) {
                const T ob = bl_shfl_xor(big, off);
                const T ol = bl_shfl_xor(lead, off);
                const int oi = __shfl_xor_sync(ALL, bi, off);
                if (ob > big || (ob == big && oi < bi)) {
                    big = ob;
                    lead = ol;
                    bi = oi;
                }
            }
            cs = lead < T(0) ? T(-1) : T(1);
            if (own && rank == c) vsgn = cs;
        }
#pragma unroll
        for (int t = 0; t < RL; ++t)
            if (lane + 32 * t < p) xat(lane + 32 * t, c) = cs * inv * e[t];
    }
    if (own) {
#pragma unroll
        for (int k = 0; k < Q; ++k)
            if (k < q) yp[(bl_i64)k * g.y_rs + (bl_i64)rank * g.y_cs] = vsgn * v[k];
    }
    if (lane == 0 && g.info) g.info[b] = word;
}

// A block of SVD_WARPS warps, a matrix each (svd.rs `WARP_MATRICES_A_BLOCK` mirrors it).
#define BL_SVD_WARPS 4
#define BL_SVD_WARP(TN, T, P, Q)                                                            \
    extern "C" __global__ void __launch_bounds__(32 * BL_SVD_WARPS) svd_warp_##TN##_p##P##_q##Q(SvdArgs g) { \
        bl_svd_warp<T, P, Q>(g);                                                            \
    }

// ---------------------------------------------------------------------------------
// svd_bidiag_<t>: Golub-Kahan, a block a matrix, on the tall p x q: the CPU kernel's
// algorithm (cpu/kernels/golub_kahan_svd.rs) with the eigh block kernel's division of
// labour. Householder bidiagonalisation (LAPACK xGEBD2; by panels, xLABRD's scheme, where A
// is in global memory) of the scaled matrix in the work A (column-major, ld odd), each
// right reflector kept in a column of the work V; for the
// QR iteration, U formed over A and V over its reflectors (xORG2R); then the
// Golub-Reinsch implicit-shift QR iteration on the bidiagonal, run by thread 0, which
// publishes each chase's rotations
// (and a cancellation's, where a diagonal entry is negligible) in one of two slots while
// the other warps apply the previous slot's to their rows of U and V. U = Q x rotations, so
// its columns are orthonormal even where singular values are zero. Then the columns
// renormalised (as the CPU kernel: rotations round with a bias), the values sorted
// descending (a stable rank sort), the sign convention, the scaling undone. Thin factors
// or values (full ones only where p = q). Work in T: the method is backward stable, its
// error grows with n, not with the rotations' count as Jacobi's does.
// Before the QR iteration, the fast path (`bl_gk_fast_vectors`): the values by bisection
// and the vectors by twisted factorisations of the Golub-Kahan tridiagonal, a thread a
// value, U = Q [u; 0] and V = P v by applying the reflectors to u and v (bl_refl_apply in
// common.cu: Q and P never formed); no serial chain. Where it cannot vouch for its
// vectors (values that coincide: identity, ones, clusters; B diagonal) the QR iteration
// takes the matrix.
// Values alone skip U, V and the QR iteration: bisection on the Golub-Kahan tridiagonal.
// info: as bl_svd_jacobi's, bits 16.. the QR iterations (values alone and the fast path:
// the most bisection steps of a value).

// w[i] = scale * sum_{e in [e0, e1)} v[e] X[i*is + e*es] for i in [i0, i1): a group of
// lanes (a power of two) an item, as many groups as the block holds.
template <typename T>
__device__ void bl_gk_dots(const T* X, int is, int es, int i0, int i1, int e0, int e1, const T* v, T* w, T scale) {
    const int ni = i1 - i0;
    if (ni <= 0) return;
    int G = 1;
    while (G < 32 && ni * G * 2 <= (int)blockDim.x) G *= 2;
    const int tid = threadIdx.x, gl = tid & (G - 1), ng = blockDim.x / G;
    // The same trip count in every lane, so that each shuffle has the whole warp.
    for (int base = i0; base < i1; base += ng) {
        const int i = base + tid / G;
        T s = T(0);
        if (i < i1) {
            const T* x = X + (bl_i64)i * is;
            for (int e = e0 + gl; e < e1; e += G) s += v[e] * x[(bl_i64)e * es];
        }
        for (int off = G >> 1; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
        if (i < i1 && gl == 0) w[i] = scale * s;
    }
}

// Where A (column-major, leading dimension a whole, odd number of 16-byte vectors:
// cuda/svd.rs `ld_vectors`) is in shared memory, the bidiagonalisation's products and
// rank-one updates go down the columns in 16-byte vectors, from the vector holding the
// first row they change, rv (the rows before it weighted by zeros: read, and written back
// unchanged); rows past p are zeros to the next vector (A's pad, and v's, w's, x's). The
// product down the columns, w = tau A^T v, is bl_vec_dots (common.cu; a group of lanes a
// column).

// w[r] = scale * sum_{c in [c0, c1)} u[c] A[c][r] for the rows of the vectors from rv to p,
// zero for the rows before r0: a group of G lanes a vector of rows.
template <typename T>
__device__ void bl_gk_dots_rows(const T* A, int ld, int c0, int c1, int rv, int r0, int p, const T* u, T* w,
                                T scale) {
    constexpr int VN = BlVec<T>::N;
    const int nvec = (p - rv + VN - 1) / VN;
    if (nvec <= 0) return;
    int G = 1;
    while (G < 32 && nvec * G * 2 <= (int)blockDim.x) G *= 2;
    const int tid = threadIdx.x, gl = tid & (G - 1), ng = blockDim.x / G;
    for (int base = 0; base < nvec; base += ng) {  // the same trip count in every lane (the shuffles)
        const int vi = base + tid / G, r = rv + vi * VN;
        T acc[VN] = {};
        if (vi < nvec)
            for (int c = c0 + gl; c < c1; c += G) {
                T a[VN];
                BlVec<T>::ld(A + (bl_i64)c * ld + r, a);
                const T uc = u[c];
#pragma unroll
                for (int k = 0; k < VN; ++k) acc[k] += uc * a[k];
            }
        for (int off = G >> 1; off > 0; off >>= 1)
#pragma unroll
            for (int k = 0; k < VN; ++k) acc[k] += __shfl_xor_sync(0xffffffffu, acc[k], off);
        if (vi < nvec && gl == 0)
#pragma unroll
            for (int k = 0; k < VN; ++k)
                if (r + k < p) w[r + k] = r + k >= r0 ? scale * acc[k] : T(0);
    }
}

// A[c][r] -= y[c] x[r] for c in [c0, c1) and the rows of the vectors from rv (x zero on the
// rows to leave as they are): a thread a vector.
template <typename T> __device__ void bl_gk_rank1(T* A, int ld, int c0, int c1, int rv, int p, const T* x, const T* y) {
    constexpr int VN = BlVec<T>::N;
    const int nvec = (p - rv + VN - 1) / VN, total = (c1 - c0) * nvec;
    for (int idx = threadIdx.x; idx < total; idx += blockDim.x) {
        const int c = c0 + idx / nvec, r = rv + (idx - (idx / nvec) * nvec) * VN;
        T a[VN], xv[VN];
        BlVec<T>::ld(A + (bl_i64)c * ld + r, a);
        BlVec<T>::ld(x + r, xv);
        const T yc = y[c];
#pragma unroll
        for (int k = 0; k < VN; ++k) a[k] -= yc * xv[k];
        BlVec<T>::st(A + (bl_i64)c * ld + r, a);
    }
}

// LAPACK xORG2R in place on the column-major m x k block X (leading dimension ld): on
// entry column j holds reflector j below row j (its 1 at row j implicit), tau[j] its
// scalar; on exit the first k columns of H_0 ... H_{k-1}. w: k elements of scratch.
template <typename T> __device__ void bl_gk_org2r(T* X, int ld, int m, int k, const T* tau, T* w) {
    const int tid = threadIdx.x, nt = blockDim.x;
    for (int j = k - 1; j >= 0; --j) {
        const T t = tau[j];
        T* xj = X + (bl_i64)j * ld;
        if (t != T(0) && j < k - 1) {
            // Rows j + 1.. only: row j of the columns formed so far is zero.
            bl_gk_dots(X, ld, 1, j + 1, k, j + 1, m, xj, w, t);
            __syncthreads();
            const int nr = m - j, total = (k - j - 1) * nr;
            for (int idx = tid; idx < total; idx += nt) {
                const int c = j + 1 + idx / nr, r = j + idx % nr;
                X[(bl_i64)c * ld + r] -= w[c] * (r == j ? T(1) : xj[r]);
            }
            __syncthreads();
        }
        for (int r = tid; r < m; r += nt) xj[r] = r > j ? -t * xj[r] : (r == j ? T(1) - t : T(0));
        __syncthreads();
    }
}

// r = |(f, h)|, c = f / r, s = h / r by IEEE divisions, as the CPU kernel (the reciprocal
// square root of bl_givens, tried 2026-12-04, lost accuracy: 32x512x512 float32 3.1e-5
// against 3.3e-6, past the floor); r = 0 leaves c and s as they were.
template <typename T> __device__ __forceinline__ void bl_gk_rot(T f, T h, T& c, T& s, T& r) {
    r = bl_hypot(f, h);
    if (r != T(0)) {
        c = f / r;
        s = h / r;
    }
}

// A row of U or V (element j at row[j * rl]) through rotations j in [lo, hi) down
// consecutive columns (x_j' = c x_j + s x_{j+1}; the new x_{j+1} carried), or with `fan`
// of column lo - 1 against each column j in [lo, hi) (x_j' = c x_j - s x_f, x_f' = c x_f +
// s x_j). The loads run eight ahead of the carried value: the row may be in global memory.
template <typename T, bool FAN>
__device__ __forceinline__ void bl_gk_rot_row(T* row, bl_i64 rl, int lo, int hi, const T* c, const T* s) {
    const int carry = FAN ? lo - 1 : lo;
    T x = row[carry * rl];
    for (int j0 = lo; j0 < hi; j0 += 8) {
        T y[8], cc[8], ss[8];
#pragma unroll
        for (int u = 0; u < 8; ++u)
            if (j0 + u < hi) {
                y[u] = row[(j0 + u + (FAN ? 0 : 1)) * rl];
                cc[u] = c[j0 + u];
                ss[u] = s[j0 + u];
            }
#pragma unroll
        for (int u = 0; u < 8; ++u)
            if (j0 + u < hi) {
                if (FAN) {
                    row[(j0 + u) * rl] = cc[u] * y[u] - ss[u] * x;
                    x = cc[u] * x + ss[u] * y[u];
                } else {
                    row[(j0 + u) * rl] = cc[u] * x + ss[u] * y[u];
                    x = cc[u] * y[u] - ss[u] * x;
                }
            }
    }
    row[(FAN ? carry : hi) * rl] = x;
}

// The bidiagonal QR iteration's state, held by thread 0 (the CPU kernel's GolubKahan).
template <typename T> struct BlGk {
    int left, its, iters;
    bool conv;
    T anorm;
};

// The Golub-Reinsch iteration up to its next message (thread 0): values that converged
// settled, at most one cancellation (rv1[l] chased out against the negligible d[l - 1],
// rotating U's columns (l - 1, i)) and at most one chase from l to k. rr: the slot's
// rotations, c and s a column, for U's chase at [0, q) and [q, 2q), V's at [2q, 4q), the
// cancellation's at [4q, 6q). mg: cancellation column (-1: none), its first and end
// columns, the chase's l and k (k > l: a chase), done. vneg[k] = -1 where column k of V
// is negated (its value came out negative).
#define BL_GK_MAX_ITS 75
template <typename T> __device__ void bl_gk_next(BlGk<T>& st, T* d, T* rv1, int q, T* rr, int* mg, T* vneg) {
    const T anorm = st.anorm;
    int cnm = -1, clo = 0, chi = 0, cl = 0, ck = 0;
    while (st.left > 0) {
        const int k = st.left - 1;
        int l = k;
        bool cancel = true;
        while (true) {
            if (BlT<T>::abs_(rv1[l]) + anorm == anorm) {
                cancel = false;
                break;
            }
            if (BlT<T>::abs_(d[l - 1]) + anorm == anorm) break;  // l >= 1: rv1[0] = 0
            --l;
        }
        if (cancel) {
            if (cnm >= 0) break;  // one cancellation a message; this one next time
            cnm = l - 1;
            clo = chi = l;
            T c = T(0), s = T(1);
            for (int i = l; i <= k; ++i) {
                const T f = s * rv1[i];
                rv1[i] = c * rv1[i];
                if (BlT<T>::abs_(f) + anorm == anorm) break;
                const T g = d[i];
                const T h = bl_hypot(f, g);
                d[i] = h;
                // Divide (not multiply by 1/h), as the CPU kernel: c rounds without bias.
                c = g / h;
                s = -f / h;
                rr[4 * q + i] = c;
                rr[5 * q + i] = s;
                chi = i + 1;
            }
        }
        const T z = d[k];
        if (l == k) {
            if (z < T(0)) {
                d[k] = -z;
                if (vneg) vneg[k] = T(-1);
            }
            --st.left;
            st.its = 0;
            continue;
        }
        if (st.its >= BL_GK_MAX_ITS) {
            st.conv = false;
            d[k] = BlT<T>::abs_(d[k]);
            --st.left;
            st.its = 0;
            continue;
        }
        ++st.its;
        ++st.iters;
        // The shift from the bottom 2x2 minor, then the chase from l down to k.
        T x = d[l];
        T y = d[k - 1], g = rv1[k - 1], h = rv1[k];
        T f = ((y - z) * (y + z) + (g - h) * (g + h)) / (T(2) * h * y);
        g = bl_hypot(f, T(1));
        f = ((x - z) * (x + z) + h * ((y / (f + bl_sign(g, f))) - h)) / x;
        T c = T(1), s = T(1);
        T gi = rv1[l + 1], yi = d[l + 1];  // step j's, loaded a step ahead
        for (int j = l; j < k; ++j) {
            const int i = j + 1;
            const T gn = i < k ? rv1[i + 1] : T(0), yn = i < k ? d[i + 1] : T(0);
            g = gi;
            y = yi;
            gi = gn;
            yi = yn;
            h = s * g;
            g = c * g;
            T zz;
            bl_gk_rot(f, h, c, s, zz);
            rv1[j] = zz;
            f = x * c + g * s;
            g = g * c - x * s;
            h = y * s;
            y *= c;
            rr[2 * q + j] = c;
            rr[3 * q + j] = s;
            bl_gk_rot(f, h, c, s, zz);
            d[j] = zz;
            f = c * g + s * y;
            x = c * y - s * g;
            rr[j] = c;
            rr[q + j] = s;
        }
        rv1[l] = T(0);
        rv1[k] = f;
        d[k] = x;
        cl = l;
        ck = k;
        break;
    }
    mg[0] = cnm;
    mg[1] = clo;
    mg[2] = chi;
    mg[3] = cl;
    mg[4] = ck;
    mg[5] = st.left == 0;
}

// The off-diagonal entry i of the Golub-Kahan tridiagonal of B (d, e with e[i] coupling
// d[i-1] and d[i]): d0, e1, d1, e2, .., d_{q-1}. Its eigenvalues are +-sigma.
template <typename T> __device__ __forceinline__ T bl_gk_off(const T* d, const T* e, int i) {
    return (i & 1) ? e[(i >> 1) + 1] : d[i >> 1];
}

// The singular values of B ascending into sig[0..q) by bisection on Sturm counts of its
// Golub-Kahan tridiagonal, a thread a value (no serial chain; as eigh.cu's eigenvalues
// alone): below x > 0 lie q + #(sigma < x) of its eigenvalues. b2 (2q elements) gets the
// off-diagonal entries squared; msg[0] the most steps of a value. `rel`: to relative
// accuracy (the vectors' shifts need it: a value accurate only to eps ||B|| leaves the
// small ones' vectors undetermined), else to eps ||B|| as well. pivmin gets the Sturm
// recurrences' guard (bl_tri_pivmin), for the vectors. Returns whether B is diagonal
// (then sig = |d| exactly: bisection would stop within pivmin of a zero), the same in
// every thread. Ends with a barrier.
template <typename T>
__device__ bool bl_gk_bisect(const T* d, const T* e, int q, T* b2, T* sig, int* msg, bool rel, T& pivmin) {
    const int tid = threadIdx.x, nt = blockDim.x;
    for (int k = tid; k < 2 * q - 1; k += nt) {
        const T x = bl_gk_off(d, e, k);
        b2[k] = x * x;
    }
    if (tid == 0) msg[0] = 0;
    __syncthreads();
    // Gershgorin's bound, the largest entry, and whether B is diagonal.
    T hi = T(0), prev = T(0), bmax2 = T(0), emax2 = T(0);
    for (int k = 0; k < 2 * q - 1; ++k) {
        const T a = BlT<T>::abs_(bl_gk_off(d, e, k));
        hi = prev + a > hi ? prev + a : hi;
        prev = a;
        bmax2 = b2[k] > bmax2 ? b2[k] : bmax2;
        if (k & 1) emax2 = b2[k] > emax2 ? b2[k] : emax2;
    }
    const T eps = BlT<T>::eps(), span = hi;
    pivmin = bl_tri_pivmin(bmax2);
    const T atol = rel ? T(4) * pivmin : eps * span;
    hi += T(4) * eps * span + T(2) * pivmin;
    int steps = 0;
    for (int k = tid; k < q; k += nt) {
        if (emax2 == T(0)) {
            sig[k] = BlT<T>::abs_(d[k]);
            continue;
        }
        // sigma_k, the k-th smallest, lies in [0, hi): q + k eigenvalues of T below it.
        int st_k;
        sig[k] = bl_tri_bisect(BlTriZero<T>{}, b2, 2 * q, q + k, T(0), hi, pivmin, atol, st_k);
        steps = st_k > steps ? st_k : steps;
    }
    atomicMax(msg, steps);
    __syncthreads();
    return emax2 == T(0);
}

// The vectors without the QR iteration's serial chain (bidiag's fast path), a thread a
// value: each eigenvector of the Golub-Kahan tridiagonal T at +sigma_k by a twisted
// factorisation of T - sigma I (its LDL^T from above and from below, twisted where their
// sum is smallest: one inverse-iteration step from the best unit vector), shifted again by
// the Rayleigh quotient's correction and solved once more; then the vectors of values
// closer than BL_GK_WINDOW ||B|| made orthonormal by first-order symmetric
// (Lowdin) steps X <- X (I - E/2), E = X^T X - I over those pairs, until E is at rounding
// level. The eigenvector is (v0, u0, v1, u1, ..) / sqrt 2: B's right and left singular
// vectors are its even and odd entries, each renormalised (a small value's vector mixes
// with its partner -sigma's (v, -u), which only rescales the two halves).
// A NumPy model (gpu-lab/svd_gk_twisted_model.py) of this in float32 is within 1.6e-6 of
// ||A|| (reconstruction, orthogonality) on Gaussian, graded, rank-3 and conditioned 1e3
// matrices at 64-256; without the correction step or with a window of 1e-3 it came within
// 1.6e-5 at 256, too near the 2e-5 floor.
#define BL_GK_WINDOW 1e-2
// The emulator's count of matrices by path (gpu-lab/warp_emu); nothing on the GPU.
#ifndef BL_SVD_PATH_HOOK
#define BL_SVD_PATH_HOOK(fast)
#endif

// x[0..2q) (stride xs) = the twisted-factorisation vector of T - s I (unnormalised, its
// entry r = 1); returns its squared norm, and in gam the twist's pivot gamma_r (the
// Rayleigh correction is gam / norm^2). x holds the lower factor's pivots on the way.
template <typename T>
__device__ T bl_gk_twist(const T* d, const T* e, const T* b2, int q, T s, T pivmin, T* x, int xs, T& gam) {
    return bl_tri_twist(BlTriZero<T>{}, [=](int i) { return bl_gk_off(d, e, i); }, b2, 2 * q, s, pivmin, x, xs, gam);
}

// Sets the block's rejection flag (the fast path then hands the matrix to the QR iteration).
__device__ __forceinline__ void bl_gk_reject(int* flag) { atomicMax(flag, 1); }

// The fast path's vectors of B (d, e; values sig ascending from bl_gk_bisect with rel):
// on return true, the eigenvector of value k in column k of the returned buffer (X0 or X1,
// entry i at [i q + k]), and nu[k], nv[k] the inverse norms of its odd (u) and even (v)
// halves. False (the same in every thread) where it cannot vouch for them: a vector that
// overflowed, values so close that their vectors coincide (E beyond 1/4, or not at
// rounding level after three steps), a half that vanished. Scratch: X0, X1 (2q x q each),
// Ex (q x q). fl[0]: the flag; fl[1], fl[2]: E's largest entry (float bits); apart from
// the QR iteration's messages, which a thread that read the flag may already be writing.
template <typename T>
__device__ T* bl_gk_fast_vectors(const T* d, const T* e, int q, const T* b2, const T* sig, T pivmin, T* X0, T* X1,
                                 T* Ex, T* nu, T* nv, int* fl) {
    const int tid = threadIdx.x, nt = blockDim.x;
    const T eps = BlT<T>::eps();
    if (tid == 0) fl[0] = 0;
    __syncthreads();
    for (int k = tid; k < q; k += nt) {
        T s = sig[k], gam;
        T n2 = bl_gk_twist(d, e, b2, q, s, pivmin, X0 + k, q, gam);
        s += gam / n2;
        n2 = bl_gk_twist(d, e, b2, q, s, pivmin, X0 + k, q, gam);
        if (!(n2 < BlT<T>::huge())) {
            bl_gk_reject(fl);
            continue;
        }
        const T inv = T(1) / BlT<T>::sqrt_(n2);
        for (int i = 0; i < 2 * q; ++i) X0[(bl_i64)i * q + k] *= inv;
    }
    const T win = T(BL_GK_WINDOW) * sig[q - 1];
    T* X = bl_tri_lowdin(BlBlockTeam{}, X0, X1, Ex, 2 * q, q, q, sig, win, fl);
    if (!X) return nullptr;
    // The halves' norms.
    for (int k = tid; k < q; k += nt) {
        T su = T(0), sv = T(0);
        for (int j = 0; j < q; ++j) {
            const T v = X[(bl_i64)(2 * j) * q + k], u = X[(bl_i64)(2 * j + 1) * q + k];
            sv += v * v;
            su += u * u;
        }
        if (!(su > T(0.1) && sv > T(0.1))) bl_gk_reject(fl);
        nu[k] = T(1) / BlT<T>::sqrt_(su);
        nv[k] = T(1) / BlT<T>::sqrt_(sv);
    }
    __syncthreads();
    return fl[0] ? nullptr : X;
}

// The panels' products with A (global memory) are compensated sums (BlDot2): with plain
// ones the panels' A^T u and A v sum A's own entries where the unblocked steps summed the
// updated, cancelled ones, and the float64 matrix of ones lost an order of magnitude
// (host emulator, ||A - U S V^T|| / ||A||: 400x300 3.5e-14 against 4.6e-15 unblocked,
// 1.7e-15 compensated).

// A group's compensated partial sums added over its G lanes, at lane offsets off0, 2 off0,
// .. < off0 G (each lane's sum and error carried); the whole warp shuffles.
template <typename T> __device__ __forceinline__ T bl_dot2_group(BlDot2<T> d, int off0, int G) {
    for (int off = off0; off < off0 * G; off <<= 1) {
        const T s = bl_shfl_xor(d.s, off), c = bl_shfl_xor(d.c, off);
        d.add(s);
        d.c += c;
    }
    return d.value();
}

// w[c] = sum_{r >= rv} A[c ld + r] v[r] for the columns c in [c0, c1): the columns and v
// (16-byte aligned) read in 16-byte vectors from row rv (a whole vector) to p's vector (A
// and v zero past p, v weighting the rows to leave out by zeros), 8 lanes a column (a
// 128-byte line a load), a vector's products summed plainly, then carried (BlDot2).
template <typename T>
__device__ void bl_gk_gcols(const T* A, int ld, int c0, int c1, int rv, int p, const T* v, T* w) {
    constexpr int VN = BlVec<T>::N, G = 8;
    const int tid = threadIdx.x, gl = tid & (G - 1), ng = blockDim.x / G;
    for (int base = c0; base < c1; base += ng) {  // the same trip count in every lane (the shuffles)
        const int c = base + tid / G;
        BlDot2<T> s;
        if (c < c1)
            for (int r = rv + gl * VN; r < p; r += G * VN) {
                T a[VN], x[VN];
                BlVec<T>::ldg(A + (bl_i64)c * ld + r, a);
                BlVec<T>::ldg(v + r, x);
                T part = a[0] * x[0];
#pragma unroll
                for (int k = 1; k < VN; ++k) part += a[k] * x[k];
                s.add(part);
            }
        const T t = bl_dot2_group(s, 1, G);
        if (c < c1 && gl == 0) w[c] = t;
    }
}

// w[r] = sum_{c in [c0, c1)} A[c ld + r] v[c] for the rows r in [r0, p): G lanes a row (as
// many as the block fills), a warp's lanes on 32 / G consecutive rows (coalesced), each lane
// four columns at a time, their products summed plainly, then carried (BlDot2).
template <typename T>
__device__ void bl_gk_grows(const T* A, int ld, int r0, int p, int c0, int c1, const T* v, T* w) {
    const int nr = p - r0;
    if (nr <= 0) return;
    int G = 1;
    while (G < 32 && nr * G * 2 <= (int)blockDim.x) G *= 2;
    const int R = 32 / G, lane = threadIdx.x & 31, gl = lane / R, per = (blockDim.x >> 5) * R;
    for (int base = r0; base < p; base += per) {  // the same trip count in every lane
        const int r = base + (threadIdx.x >> 5) * R + lane % R;
        BlDot2<T> s;
        if (r < p) {
            const T* a = A + r;
            int c = c0 + 4 * gl;
            for (; c + 4 <= c1; c += 4 * G)
                s.add(a[(bl_i64)c * ld] * v[c] + a[(bl_i64)(c + 1) * ld] * v[c + 1] +
                      a[(bl_i64)(c + 2) * ld] * v[c + 2] + a[(bl_i64)(c + 3) * ld] * v[c + 3]);
            for (int j = c; j < c1 && j < c + 4; ++j) s.add(a[(bl_i64)j * ld], v[j]);  // a short last block
        }
        const T t = bl_dot2_group(s, R, G);
        if (r < p && gl == 0) w[r] = t;
    }
}

// Steps a panel of the bidiagonalisation where A is in global memory (cuda/svd.rs PANEL).
#define BL_SVD_PANEL 16

// The bidiagonalisation where A is in global memory (place 2), by panels (the scheme of
// LAPACK's xLABRD, upper bidiagonal, p >= q): within a panel of BL_SVD_PANEL steps A is
// read as it was at the panel's start and the panel's earlier steps enter as corrections,
// A_c = A - U Y^T - X V^T over its steps so far; the trailing matrix is updated once a
// panel, a rank-2nb product. A step then reads the trailing matrix twice (A^T u, A v)
// where the unblocked one read it four times and wrote it twice.
// U (left reflectors) and X, p rows, V (right reflectors) and Y, q rows: global scratch,
// BL_SVD_PANEL entries a row (panels[row NB + step]), 16-byte aligned (cuda/svd.rs rounds
// each matrix's scratch to whole vectors); step i's entries written from row i (U) or
// i + 1 (X, V, Y) on, the rows a later read reaches (it reads rows from its own step on).
// Leaves what the unblocked steps leave: d, e (unshifted), tauq, taup, each left reflector
// below the diagonal of its column of A, each right one in Vw's column i + 1 from row
// i + 1 (with vectors). The rest of A's first kend rows and columns is left stale (as at
// the panel's start): the steps after a panel read rows and columns from kend on only,
// which the trailing update brings up to date, and the code after only the reflectors.
// vv, wv: shared, 16-byte aligned, p to whole vectors (zeros past p, as A's rows); sm:
// 2 BL_SVD_PANEL shared. A call of its own (as bl_refl_apply), its registers apart from
// the QR iteration's (inlined, the kernel's float spills grew by a tenth).
template <typename T>
__device__ __noinline__ void bl_bidiag_panels(T* A, int ld, int p, int q, T* vv, T* wv, T* d, T* e, T* tauq,
                                              T* taup, T* red, T* Vw, int ldv, T* U, T* X, T* V, T* Y, T* sm) {
    constexpr int NB = BL_SVD_PANEL, VN = BlVec<T>::N;
    const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, wid = tid >> 5, nw = nt >> 5;
    for (int k0 = 0; k0 < q; k0 += NB) {
        const int kend = min(k0 + NB, q);  // the panel's steps k0 .. kend - 1
        for (int i = k0; i < kend; ++i) {
            const int c = i - k0;
            const T* Ui = U + (bl_i64)i * NB;
            const T* Xi = X + (bl_i64)i * NB;
            // Column i from row i as the panel's earlier steps left it; its left reflector
            // u into vv, U and A (below the diagonal, for Q).
            T part = T(0);
            for (int r = i + tid; r < p; r += nt) {
                const T* Ur = U + (bl_i64)r * NB;
                const T* Xr = X + (bl_i64)r * NB;
                T x = A[(bl_i64)i * ld + r];
                for (int u = 0; u < c; ++u) x -= Ur[u] * Y[(bl_i64)i * NB + u] + Xr[u] * V[(bl_i64)i * NB + u];
                wv[r] = x;
                if (r > i) part += x * x;
            }
            const T ss = bl_sum_all(part, red);
            __syncthreads();  // wv[i], where one warp sums without a barrier
            T beta, t, scal;
            bl_householder(wv[i], ss, beta, t, scal);
            const int rv = i / VN * VN;  // the vector holding row i: A^T u from there
            for (int r = rv + tid; r < p; r += nt) {
                const T u = r < i ? T(0) : r == i ? T(1) : wv[r] * scal;
                vv[r] = u;
                if (r < i) continue;
                U[(bl_i64)r * NB + c] = u;
                if (r > i) A[(bl_i64)i * ld + r] = u;
            }
            if (tid == 0) {
                d[i] = beta;
                tauq[i] = t;
            }
            __syncthreads();
            if (i + 1 >= q) break;  // the last column: a left reflector only
            // y = tauq A_c^T u over columns i + 1.., A_c^T u = A^T u - Y (U^T u) - V (X^T u):
            // A^T u into wv, U^T u and X^T u over the panel's earlier steps a warp a product,
            // into sm.
            if (t != T(0)) {
                bl_gk_gcols(A, ld, i + 1, q, rv, p, vv, wv);
                for (int k = wid; k < 2 * c; k += nw) {
                    const T* M = k < c ? U + k : X + (k - c);
                    T s = T(0);
                    for (int r = i + lane; r < p; r += 32) s += M[(bl_i64)r * NB] * vv[r];
                    s = bl_warp_sum(s);
                    if (lane == 0) sm[k] = s;
                }
                __syncthreads();
            }
            // y into Y; row i from column i + 1 as this step left it (A_c less u y^T, u_i = 1)
            // into vv.
            part = T(0);
            for (int j = i + 1 + tid; j < q; j += nt) {
                const T* Yj = Y + (bl_i64)j * NB;
                const T* Vj = V + (bl_i64)j * NB;
                T y = T(0);
                if (t != T(0)) {
                    y = wv[j];
                    for (int u = 0; u < c; ++u) y -= Yj[u] * sm[u] + Vj[u] * sm[c + u];
                    y *= t;
                }
                Y[(bl_i64)j * NB + c] = y;
                T z = A[(bl_i64)j * ld + i] - y;
                for (int u = 0; u < c; ++u) z -= Yj[u] * Ui[u] + Vj[u] * Xi[u];
                vv[j] = z;
                if (j > i + 1) part += z * z;
            }
            const T ss2 = bl_sum_all(part, red);
            __syncthreads();  // vv[i + 1]
            // Its right reflector v into wv, V and Vw's column i + 1.
            bl_householder(vv[i + 1], ss2, beta, t, scal);
            for (int j = i + 1 + tid; j < q; j += nt) {
                const T v = j == i + 1 ? T(1) : vv[j] * scal;
                wv[j] = v;
                V[(bl_i64)j * NB + c] = v;
                if (Vw) Vw[(bl_i64)(i + 1) * ldv + j] = v;
            }
            if (tid == 0) {
                e[i] = beta;
                taup[i] = t;
            }
            __syncthreads();
            // x = taup A_c v over rows i + 1.., A_c v = A v - U (Y^T v) - X (V^T v) with this
            // step's u and y: A v into vv, Y^T v (steps to this one) and V^T v (the earlier
            // ones) a warp a product, into sm.
            if (t != T(0)) {
                bl_gk_grows(A, ld, i + 1, p, i + 1, q, wv, vv);
                for (int k = wid; k < 2 * c + 1; k += nw) {
                    const T* M = k <= c ? Y + k : V + (k - c - 1);
                    T s = T(0);
                    for (int j = i + 1 + lane; j < q; j += 32) s += M[(bl_i64)j * NB] * wv[j];
                    s = bl_warp_sum(s);
                    if (lane == 0) sm[k] = s;
                }
                __syncthreads();
            }
            for (int r = i + 1 + tid; r < p; r += nt) {
                const T* Ur = U + (bl_i64)r * NB;
                const T* Xr = X + (bl_i64)r * NB;
                T x = T(0);
                if (t != T(0)) {
                    x = vv[r] - Ur[c] * sm[c];
                    for (int u = 0; u < c; ++u) x -= Ur[u] * sm[u] + Xr[u] * sm[c + 1 + u];
                    x *= t;
                }
                X[(bl_i64)r * NB + c] = x;
            }
            __syncthreads();
        }
        // A panel ends short only at q, where nothing is left to update.
        if (kend >= q) break;
        // The trailing matrix, rows and columns from kend: A -= U Y^T + X V^T over the
        // panel's steps, a thread a row (its U and X entries in registers; a warp's rows
        // consecutive, coalesced) and a share of the columns, row j's Y and V entries read
        // as 16-byte vectors (the same for every lane).
        const int nr = p - kend, ncs = max(1, nt / nr);
        for (int idx = tid; idx < nr * ncs; idx += nt) {
            const int r = kend + idx % nr, cs = idx / nr;
            T ur[NB], xr[NB];
#pragma unroll
            for (int u = 0; u < NB; u += VN) {
                BlVec<T>::ldg(U + (bl_i64)r * NB + u, ur + u);
                BlVec<T>::ldg(X + (bl_i64)r * NB + u, xr + u);
            }
            for (int j = kend + cs; j < q; j += ncs) {
                T s = A[(bl_i64)j * ld + r];
#pragma unroll
                for (int u0 = 0; u0 < NB; u0 += VN) {
                    T yj[VN], vj[VN];
                    BlVec<T>::ldg(Y + (bl_i64)j * NB + u0, yj);
                    BlVec<T>::ldg(V + (bl_i64)j * NB + u0, vj);
#pragma unroll
                    for (int u = 0; u < VN; ++u) s -= ur[u0 + u] * yj[u] + xr[u0 + u] * vj[u];
                }
                A[(bl_i64)j * ld + r] = s;
            }
        }
        __syncthreads();
    }
}

template <typename T> __device__ void bl_svd_bidiag(const SvdArgs& g) {
    extern __shared__ __align__(16) unsigned char bl_smem[];
    const int p = g.p, q = g.q, ld = g.ldu, ldv = g.ldv;
    const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, wid = tid >> 5, nw = nt >> 5;
    const bl_i64 b = (bl_i64)g.b0 + blockIdx.x;
    const bool vec = g.x != nullptr;
    T* sm = reinterpret_cast<T*>(bl_smem);
    T* gw = g.work ? reinterpret_cast<T*>(g.work) + (bl_i64)blockIdx.x * g.work_bs : nullptr;  // per launch
    constexpr int VN = BlVec<T>::N;
    const int pv = (p + VN - 1) / VN * VN;  // p to whole vectors
    const bool vecs = g.place != 2;         // A in shared memory: the products by vectors
    T* A;
    T* V = nullptr;
    T* panels = nullptr;  // place 2: U, X, V, Y of bl_bidiag_panels
    if (g.place == 2) {
        A = gw;
        panels = gw + (bl_i64)ld * q;
        V = panels + 2 * BL_SVD_PANEL * (bl_i64)(p + q);
    } else {
        A = sm;
        sm += (bl_i64)ld * q;
        if (vec && g.place == 1) {
            V = gw;
        } else if (vec) {
            V = sm;
            sm += ((bl_i64)ldv * q + VN - 1) / VN * VN;  // the small vectors 16-byte aligned
        }
    }
    T* vv = sm;           // pv: a left reflector, then U's inverse column norms
    T* wv = vv + pv;      // pv: products, then V's inverse column norms
    T* d = wv + pv;       // q: the diagonal, then the singular values
    T* e = d + q;         // q: the superdiagonal, then rv1 (rv1[i] couples d[i-1], d[i])
    T* tauq = e + q;      // q: left reflectors' scalars, then the output signs
    T* taup = tauq + q;   // q: right reflectors' scalars, then vneg
    T* rot = taup + q;    // two slots of 6q rotations
    T* red = rot + 12 * q;  // 32
    int* perm = reinterpret_cast<int*>(red + 32);  // q
    int* msg = perm + q;  // two slots of 8, iters and conv, the fast path's three flags

    int es;
    if (!bl_svd_load<T>(g, b, A, ld, q, red, es)) return;
    // Zeros where the vectors reach past p: A's pad rows, v's and w's tails.
    for (int idx = tid; idx < q * (pv - p); idx += nt) A[(bl_i64)(idx / (pv - p)) * ld + p + idx % (pv - p)] = T(0);
    for (int r = p + tid; r < pv; r += nt) vv[r] = wv[r] = T(0);
    T* sp = reinterpret_cast<T*>(g.s) + b * g.s_bs;
    T* xp = vec ? reinterpret_cast<T*>(g.x) + b * g.x_bs : nullptr;
    T* yp = vec ? reinterpret_cast<T*>(g.y) + b * g.y_bs : nullptr;
    __syncthreads();

    // Bidiagonalisation, A = Q B P^T (B upper bidiagonal: d, e): in global memory by panels,
    // in shared memory a step at a time.
    if (!vecs) {
        T* const pU = panels;
        T* const pX = pU + BL_SVD_PANEL * (bl_i64)p;
        T* const pV = pX + BL_SVD_PANEL * (bl_i64)p;
        T* const pY = pV + BL_SVD_PANEL * (bl_i64)q;
        bl_bidiag_panels<T>(A, ld, p, q, vv, wv, d, e, tauq, taup, red, vec ? V : nullptr, ldv, pU, pX, pV, pY, rot);
    }
    for (int i = 0; vecs && i < q; ++i) {
        // The left reflector of column i (rows i..p), kept below the diagonal for U.
        T* ai = A + (bl_i64)i * ld;
        T part = T(0);
        for (int r = i + 1 + tid; r < p; r += nt) part += ai[r] * ai[r];
        const T ss = bl_sum_all(part, red);
        T beta, t, scal;
        bl_householder(ai[i], ss, beta, t, scal);
        __syncthreads();  // every thread has read ai[i]
        const int rv = i / VN * VN;  // the vector holding row i
        for (int r = rv + tid; r < p; r += nt) {
            const T v = r < i ? T(0) : r == i ? T(1) : ai[r] * scal;
            vv[r] = v;
            if (r > i) ai[r] = v;
        }
        if (tid == 0) {
            d[i] = beta;
            tauq[i] = t;
        }
        __syncthreads();
        if (t != T(0) && i + 1 < q) {
            bl_vec_dots(A, ld, i + 1, q, rv, p, vv, wv, t, bl_vec_lanes(q - i - 1, 32));
            __syncthreads();
            bl_gk_rank1(A, ld, i + 1, q, rv, p, vv, wv);
            __syncthreads();
        }
        if (i + 1 >= q) break;
        // The right reflector of row i (columns i+1..q), kept in column i + 1 of V.
        part = T(0);
        for (int c = i + 2 + tid; c < q; c += nt) {
            const T x = A[(bl_i64)c * ld + i];
            part += x * x;
        }
        const T ss2 = bl_sum_all(part, red);
        bl_householder(A[(bl_i64)(i + 1) * ld + i], ss2, beta, t, scal);
        __syncthreads();
        T* ub = vv;  // the row's reflector over columns i+1..q (vv is free again)
        for (int c = i + 1 + tid; c < q; c += nt) {
            const T u = c == i + 1 ? T(1) : A[(bl_i64)c * ld + i] * scal;
            ub[c] = u;
            if (vec) V[(bl_i64)(i + 1) * ldv + c] = u;
        }
        if (tid == 0) {
            e[i] = beta;
            taup[i] = t;
        }
        __syncthreads();
        if (t != T(0)) {
            const int rw = (i + 1) / VN * VN;  // the vector holding row i + 1
            bl_gk_dots_rows(A, ld, i + 1, q, rw, i + 1, p, ub, wv, t);
            __syncthreads();
            bl_gk_rank1(A, ld, i + 1, q, rw, p, wv, ub);
            __syncthreads();
        }
    }
    if (tid == 0) {
        for (int i = q - 1; i >= 1; --i) e[i] = e[i - 1];
        e[0] = T(0);
    }
    __syncthreads();

    // The fast path: values by bisection, vectors by twisted factorisations, [u; 0] and v
    // written to the outputs and the reflectors applied to them there (U = Q [u; 0],
    // V = P v; Q and P never formed). The QR iteration below where it declines.
    T* fs = gw ? (g.place == 2 ? V + (bl_i64)ldv * q : g.place == 1 ? gw + (bl_i64)ldv * q : gw) : nullptr;
    if (vec && q >= 2 && fs) {
        const bl_i64 qq = (bl_i64)q * q;
        T* sig = rot + 2 * q;
        T pivmin;
        const bool diagonal = bl_gk_bisect(d, e, q, rot, sig, msg, true, pivmin);
        const T* X = diagonal ? nullptr
                              : bl_gk_fast_vectors(d, e, q, rot, sig, pivmin, fs, fs + 2 * qq, fs + 4 * qq, vv, wv, msg + 18);
        BL_SVD_PATH_HOOK(X != nullptr);
        if (X) {
            for (int c = tid; c < q; c += nt) sp[c * g.s_cs] = bl_scale2(sig[q - 1 - c], es);
            // Column c holds value q - 1 - c (the largest first): u (odd rows of X) over
            // rows 0..q of U, zero below; v (even rows) over V; a warp's entries
            // consecutive along the output's contiguous axis. The reflectors stored whole.
            for (int idx = tid; idx < (p + q) * q; idx += nt) {
                const bool in_u = idx < p * q;
                const int o = in_u ? idx : idx - p * q, rows = in_u ? p : q;
                const bl_i64 rs = in_u ? g.x_rs : g.y_rs, cs = in_u ? g.x_cs : g.y_cs;
                const bool by_col = (rs < 0 ? -rs : rs) <= (cs < 0 ? -cs : cs);
                const int c = by_col ? o / rows : o % q, i = by_col ? o - c * rows : o / q, kx = q - 1 - c;
                if (in_u) xp[i * rs + c * cs] = i < q ? X[(bl_i64)(2 * i + 1) * q + kx] * vv[kx] : T(0);
                else yp[i * rs + c * cs] = X[(bl_i64)(2 * i) * q + kx] * wv[kx];
            }
            bl_refl_explicit(A, ld, 1, q);
            bl_refl_explicit(V + ldv + 1, ldv, 1, q - 1);
            __syncthreads();
            // X is spent: fs is bl_refl_apply's Z. V = P v, P = 1 (+) the (q-1) x (q-1)
            // block of right reflectors.
            const int nbk = bl_refl_nb(q);
            const BlRefl<T> ru{A, tauq, xp, fs, g.x_rs, g.x_cs, ld, 1, p, q, q, nbk};
            const BlRefl<T> rv{V + ldv + 1, taup, yp + g.y_rs, fs, g.y_rs, g.y_cs, ldv, 1, q - 1, q - 1, q, nbk};
            bl_refl_apply(ru);
            bl_refl_apply(rv);
            // The sign convention, on the outputs: A's U is work U, or work V for a wide A.
            for (int c = wid; c < q; c += nw) {
                T* xc = xp + c * g.x_cs;
                T* yc = yp + c * g.y_cs;
                if (g.sign_from_v) bl_warp_sign(yc, g.y_rs, q, xc, g.x_rs, p);
                else bl_warp_sign(xc, g.x_rs, p, yc, g.y_rs, q);
            }
            if (tid == 0 && g.info)
                g.info[b] = bl_svd_info<T>(msg[0], true, sig[q - 1], sig[0], p, BlT<T>::eps(), es);
            return;
        }
    }

    T* vneg = taup;  // free once V is formed
    if (vec) {
        // U = Q over A; V = P: 1 then the (q-1) x (q-1) block of reflectors.
        bl_gk_org2r(A, ld, p, q, tauq, wv);
        bl_gk_org2r(V + ldv + 1, ldv, q - 1, q - 1, taup, wv);
        for (int r = tid; r < q; r += nt) {
            V[r] = r == 0 ? T(1) : T(0);
            V[(bl_i64)r * ldv] = r == 0 ? T(1) : T(0);
        }
        __syncthreads();
        for (int j = tid; j < q; j += nt) vneg[j] = T(1);
    }

    // The bidiagonal QR iteration: thread 0 computes, every thread applies (rows of U
    // first, then rows of V), one barrier a message.
    BlGk<T> st;
    if (tid == 0) {
        T an = T(0);
        for (int i = 0; i < q; ++i) {
            const T x = BlT<T>::abs_(d[i]) + BlT<T>::abs_(e[i]);
            an = x > an ? x : an;
        }
        st = BlGk<T>{q, 0, 0, true, an};
    }
    if (!vec) {
        // Values alone: bisection on the Golub-Kahan tridiagonal, every thread at once.
        T pivmin;
        bl_gk_bisect(d, e, q, rot, wv, msg, false, pivmin);
        for (int k = tid; k < q; k += nt) d[k] = wv[k];
        if (tid == 0) st.iters = msg[0];
    } else {
        for (int t = 0;; ++t) {
            int* mg = msg + (t & 1) * 8;
            T* rr = rot + (t & 1) * 6 * q;
            if (tid == 0) bl_gk_next(st, d, e, q, rr, mg, vneg);
            __syncthreads();
            const int cnm = mg[0], clo = mg[1], chi = mg[2], cl = mg[3], ck = mg[4], done = mg[5];
            // Warp 0 keeps to the iteration where the block has other warps for the rows.
            const int a0 = nt > 32 ? 32 : 0;
            for (int r = tid - a0; r >= 0 && r < p + q; r += nt - a0) {
                const bool in_u = r < p;
                T* row = in_u ? A + r : V + (r - p);
                const bl_i64 rl = in_u ? ld : ldv;
                if (in_u && cnm >= 0) bl_gk_rot_row<T, true>(row, rl, clo, chi, rr + 4 * q, rr + 5 * q);
                const T* cs = rr + (in_u ? 0 : 2 * q);
                if (ck > cl) bl_gk_rot_row<T, false>(row, rl, cl, ck, cs, cs + q);
            }
            if (done) break;
        }
    }
    if (tid == 0) {  // apart from the slots, which slower threads may still be reading
        msg[16] = st.iters;
        msg[17] = st.conv;
    }
    __syncthreads();
    const int iters = msg[16];
    const bool conv = msg[17] != 0;

    // Singular values in order.
    for (int j = tid; j < q; j += nt) {
        const T sj = d[j];
        int r = 0;
        for (int i = 0; i < q; ++i) {
            const T si = d[i];
            r += (si > sj) || (si == sj && i < j);
        }
        perm[r] = j;
    }
    __syncthreads();
    for (int c = tid; c < q; c += nt) sp[c * g.s_cs] = bl_scale2(d[perm[c]], es);
    const T eps = BlT<T>::eps();
    const unsigned word = bl_svd_info<T>(iters, conv, d[perm[0]], d[perm[q - 1]], p, eps, es);
    if (!vec) {
        if (tid == 0 && g.info) g.info[b] = word;
        return;
    }

    // Inverse column norms (vv: U's, wv: V's with its negation), then each sorted
    // column's sign from A's U (work U, or work V for a wide A).
    for (int j = wid; j < 2 * q; j += nw) {
        const bool in_u = j < q;
        const int c = in_u ? j : j - q;
        const T* col = in_u ? A + (bl_i64)c * ld : V + (bl_i64)c * ldv;
        T s = T(0);
        for (int i = lane; i < (in_u ? p : q); i += 32) s += col[i] * col[i];
        s = bl_warp_sum(s);
        if (lane == 0) {
            const T inv = s > T(0) ? T(1) / BlT<T>::sqrt_(s) : T(1);
            if (in_u) vv[c] = inv;
            else wv[c] = inv * vneg[c];
        }
    }
    __syncthreads();
    T* sgn = tauq;
    for (int c = wid; c < q; c += nw) {
        const int j = perm[c];
        const bool from_v = g.sign_from_v;
        const T* col = from_v ? V + (bl_i64)j * ldv : A + (bl_i64)j * ld;
        const T lead = bl_warp_lead(col, 1, from_v ? q : p);
        if (lane == 0) sgn[c] = (from_v ? lead * vneg[j] : lead) < T(0) ? T(-1) : T(1);
    }
    __syncthreads();
    const bool x_rows = (g.x_rs < 0 ? -g.x_rs : g.x_rs) >= (g.x_cs < 0 ? -g.x_cs : g.x_cs);
    for (int idx = tid; idx < p * q; idx += nt) {
        const int o = idx / (x_rows ? q : p), in = idx - o * (x_rows ? q : p);
        const int i = x_rows ? o : in, c = x_rows ? in : o;
        const int j = perm[c];
        xp[i * g.x_rs + c * g.x_cs] = sgn[c] * vv[j] * A[(bl_i64)j * ld + i];
    }
    const bool y_rows = (g.y_rs < 0 ? -g.y_rs : g.y_rs) >= (g.y_cs < 0 ? -g.y_cs : g.y_cs);
    for (int idx = tid; idx < q * q; idx += nt) {
        const int o = idx / q, in = idx - o * q;
        const int i = y_rows ? o : in, c = y_rows ? in : o;
        const int j = perm[c];
        yp[i * g.y_rs + c * g.y_cs] = sgn[c] * wv[j] * V[(bl_i64)j * ldv + i];
    }
    if (tid == 0 && g.info) g.info[b] = word;
}

// float: at least two blocks an SM's registers (64 a thread): the chain on thread 0 is
// latency bound, so blocks side by side are what fills the SM. H200 2026-12-04, against no
// minimum (107 registers): 4096x33x33 3.26 ms against 4.79, 1024x64x64 4.52 against 5.94,
// 1024x128x128 27.4 against 55.9, 256x256x256 74.7 against 69.0 (gpu-lab/
// svd_bidiag_lab.py). double spills at 64: 1024x64x64 13.3 against 9.4, 1024x128x128 121
// against 92 (docs/results/h200/2026-12-04-svd-bidiag).
#define BL_SVD_BIDIAG(TN, T)                                                                \
    extern "C" __global__ void __launch_bounds__(512, sizeof(T) == 4 ? 2 : 1) svd_bidiag_##TN(SvdArgs g) { \
        bl_svd_bidiag<T>(g);                                                                \
    }

// ---------------------------------------------------------------------------------
// The `tall` SVD (QR first; cuda/svd.rs `run_tall`): its two steps of its own around the
// QR, square SVD and product kernels it reuses.

// Mirrors `SvdTallArgs` in crates/batchlin/src/cuda/svd.rs.
struct SvdTallArgs {
    const void* a;  // the tall p x q orientation of A: (i, j) at a + i*a_rs + j*a_cs
    bl_i64 a_bs, a_rs, a_cs;
    void* w;  // the scaled copy, row-major p x q a matrix (solver_copy: double, column-major)
    const unsigned long long* mx;  // each matrix's max|a| as BlBits (bq_max)
    void* s;
    bl_i64 s_bs, s_cs;
    void* u;  // NULL: no sign step (values alone, or A wide: U came from the square SVD)
    bl_i64 u_bs, u_rs, u_cs;
    void* vh;  // Vh, whose rows flip with U's first q columns
    bl_i64 vh_bs, vh_rs, vh_cs;
    unsigned int* info;
    int batch, p, q;
    int solver_copy;  // scale: w in double, column-major (ld p), a non-finite matrix as zeros, for cuSOLVER
    int u_rows, u_cols, vh_cols;  // finish: U's shape and Vh's columns (p, q, q for `tall`)
};

template <typename T> __device__ __forceinline__ int bl_tall_exp(const SvdTallArgs& g, bl_i64 b) {
    bool bad;
    return bl_scale_exp(BlBits<T>::from(g.mx[b]), bad);
}

// w = A 2^-E (E the exponent of the matrix's max|a|; 0 for a zero or non-finite matrix,
// which so reaches the square SVD as it is and is flagged there), row-major: the QR then
// sees a well-scaled matrix, and R cannot leave the range whatever A's scale. With
// solver_copy, in double, column-major and a non-finite matrix as zeros (cuSOLVER must
// not see NaN; its polar-decomposition SVD in float32 had to perturb some Gaussian
// matrices, whose fallback took 5x as long, so every type is solved in double).
template <typename T> __device__ void bl_svd_tall_scale(const SvdTallArgs& g) {
    const bl_i64 per = (bl_i64)g.p * g.q, total = (bl_i64)g.batch * per;
    for (bl_i64 idx = blockIdx.x * (bl_i64)blockDim.x + threadIdx.x; idx < total;
         idx += (bl_i64)gridDim.x * blockDim.x) {
        const bl_i64 b = idx / per, rem = idx - b * per;
        const int i = (int)(rem / g.q), j = (int)(rem - (bl_i64)i * g.q);
        const T x = ((const T*)g.a)[b * g.a_bs + i * g.a_rs + j * g.a_cs];
        bool bad;
        const int e = bl_scale_exp(BlBits<T>::from(g.mx[b]), bad);  // bl_tall_exp's
        if (g.solver_copy)
            ((double*)g.w)[b * per + (bl_i64)j * g.p + i] = bad ? 0.0 : (double)bl_scale2(x, -e);
        else
            ((T*)g.w)[idx] = bl_scale2(x, -e);
    }
}

// S back to A's scale, the info word's overflow and rank bits judged for A (the square
// SVD judged R's: q rows, not p), then the sign convention on U (each column's first entry
// of largest |u| positive, Vh's row flipped with it where U's column has one), which
// neither U = Q U_R nor cuSOLVER keeps. A block 32 of a matrix's columns (blockIdx.x the
// matrix, y the column tile; one block a matrix walked a 1024 x 1024 U's strided columns
// on one SM): where U's rows are its contiguous axis a lane a column, the warps down the
// rows (each read a row's 32 entries at once), else a warp a column; Vh's rows likewise
// along their own faster axis.
template <typename T> __device__ void bl_svd_tall_finish(const SvdTallArgs& g) {
    __shared__ T lead_s[8][32], best_s[8][32];
    __shared__ int at_s[8][32];
    __shared__ T sign[32];
    const bl_i64 b = blockIdx.x;
    const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5, nw = blockDim.x >> 5;  // 8 warps
    const int e = bl_tall_exp<T>(g, b);
    T* s = (T*)g.s + b * g.s_bs;
    if (blockIdx.y == 0 && tid == 0) {
        const T s0 = s[0];  // still scaled; the largest first
        const T sq = s[(bl_i64)(g.q - 1) * g.s_cs];
        for (int j = 0; j < g.q; ++j) s[(bl_i64)j * g.s_cs] = bl_scale2(s[(bl_i64)j * g.s_cs], e);
        if (g.info) {
            unsigned word = g.info[b];
            if (!(word & BL_INFO_NONFINITE)) {
                word &= ~(BL_INFO_RANK_DEFICIENT | BL_INFO_OVERFLOW);
                if (sq <= T(g.p) * BlT<T>::eps() * s0 || s0 == T(0)) word |= BL_INFO_RANK_DEFICIENT;
                if (bl_beyond_range(bl_scale2(s0, e))) word |= BL_INFO_OVERFLOW;
            }
            g.info[b] = word;
        }
    }
    const int j0 = blockIdx.y * 32;
    if (!g.u || j0 >= g.u_cols) return;  // uniform
    const int nc = g.u_cols - j0 < 32 ? g.u_cols - j0 : 32;
    T* U = (T*)g.u + b * g.u_bs + (bl_i64)j0 * g.u_cs;
    T* V = (T*)g.vh + b * g.vh_bs + (bl_i64)j0 * g.vh_rs;
    const bl_i64 urs = g.u_rs < 0 ? -g.u_rs : g.u_rs, ucs = g.u_cs < 0 ? -g.u_cs : g.u_cs;
    const bool lane_col = ucs < urs;  // a row's entries nearer than a column's
    if (lane_col) {
        // Lane c scans column c's rows wid, wid + 8, ..: the first largest of its share;
        // then the first largest of the eight shares (bl_warp_lead's rule).
        T best = T(0), lead = T(1);
        int at = 1 << 30;
        if (lane < nc)
            for (int i = wid; i < g.u_rows; i += nw) {
                const T v = U[i * g.u_rs + lane * g.u_cs];
                if (BlT<T>::abs_(v) > best) {
                    best = BlT<T>::abs_(v);
                    lead = v;
                    at = i;
                }
            }
        best_s[wid][lane] = best;
        lead_s[wid][lane] = lead;
        at_s[wid][lane] = at;
        __syncthreads();
        if (tid < 32) {
            for (int w = 1; w < nw; ++w)
                if (best_s[w][tid] > best || (best_s[w][tid] == best && at_s[w][tid] < at)) {
                    best = best_s[w][tid];
                    lead = lead_s[w][tid];
                    at = at_s[w][tid];
                }
            sign[tid] = lead < T(0) ? T(-1) : T(1);
        }
    } else {
        for (int c = wid; c < nc; c += nw) {
            const T lead = bl_warp_lead(U + (bl_i64)c * g.u_cs, g.u_rs, g.u_rows);
            if (lane == 0) sign[c] = lead < T(0) ? T(-1) : T(1);
        }
    }
    __syncthreads();
    // U's 32 columns, then Vh's rows j0 .. (those of U's first q columns), each along its
    // faster axis: k's low 5 bits the column (U) or row (Vh) where that axis is the tile's.
    for (int k = tid; k < g.u_rows * 32; k += blockDim.x) {
        const int c = lane_col ? (k & 31) : k / g.u_rows, i = lane_col ? (k >> 5) : k - c * g.u_rows;
        if (c < nc && sign[c] < T(0)) U[i * g.u_rs + c * g.u_cs] = -U[i * g.u_rs + c * g.u_cs];
    }
    const int nr = g.q - j0 < nc ? g.q - j0 : nc;  // Vh's rows here
    if (nr <= 0) return;
    const bool lane_row = (g.vh_rs < 0 ? -g.vh_rs : g.vh_rs) < (g.vh_cs < 0 ? -g.vh_cs : g.vh_cs);
    for (int k = tid; k < g.vh_cols * 32; k += blockDim.x) {
        const int r = lane_row ? (k & 31) : k / g.vh_cols, c = lane_row ? (k >> 5) : k - r * g.vh_cols;
        if (r < nr && sign[r] < T(0)) V[r * g.vh_rs + c * g.vh_cs] = -V[r * g.vh_rs + c * g.vh_cs];
    }
}

// Mirrors `SvdCusArgs` in crates/batchlin/src/cuda/svd.rs: cuSOLVER's results (cuda/
// cusolver.rs `gesvdp`) copied into the caller's strided outputs.
struct SvdCusArgs {
    const unsigned long long* mx;  // each matrix's max|a| as BlBits: non-finite ones get NaN
    const int* dinfo;              // cuSOLVER's info a matrix: > 0 not converged
    const double* sw;              // S, q a matrix, still scaled (cuSOLVER's: double)
    void* s;
    bl_i64 s_bs, s_cs;
    const double* us;  // U's source: (i, j) at us + b*us_bs + i*us_rs + j*us_cs; NULL: values alone
    bl_i64 us_bs, us_rs, us_cs;
    void* u;
    bl_i64 u_bs, u_rs, u_cs;
    const double* vs;  // Vh's source, as U's
    bl_i64 vs_bs, vs_rs, vs_cs;
    void* vh;
    bl_i64 vh_bs, vh_rs, vh_cs;
    unsigned int* info;
    const int* vt;  // a word a matrix: 1 where cuSOLVER's V buffer holds V^T
    int v_in_u;     // whether U (A wide) or Vh (A tall) reads that buffer
    int batch, q, ur, uc, vr, vc;  // S's length, U's and Vh's shapes
};

// Elementwise over the grid: S, U and Vh of every matrix (NaN for a non-finite one), and
// each matrix's info word (non-finite, or not converged); the finish kernel then scales
// S back, judges the rank and overflow bits and applies the sign convention.
template <typename T> __device__ void bl_svd_cus_unpack(const SvdCusArgs& g) {
    const bl_i64 nu = g.us ? (bl_i64)g.ur * g.uc : 0, nv = g.us ? (bl_i64)g.vr * g.vc : 0;
    const bl_i64 per = g.q + nu + nv, total = (bl_i64)g.batch * per;
    for (bl_i64 idx = blockIdx.x * (bl_i64)blockDim.x + threadIdx.x; idx < total;
         idx += (bl_i64)gridDim.x * blockDim.x) {
        const bl_i64 b = idx / per;
        bl_i64 r = idx - b * per;
        bool bad;
        bl_scale_exp(BlBits<T>::from(g.mx[b]), bad);
        // A zero matrix: S = 0 and the identity's columns for U and V, whatever the solver
        // made of it (a polar decomposition of zero is not defined).
        const bool zero = g.mx[b] == 0ull;
        if (r < g.q) {
            const T x = zero ? T(0) : T(g.sw[b * g.q + r]);
            ((T*)g.s)[b * g.s_bs + r * g.s_cs] = bad ? BlT<T>::nan() : x;
            if (r == 0 && g.info)
                g.info[b] = bad ? BL_INFO_NONFINITE : (g.dinfo[b] > 0 ? BL_INFO_NOT_CONVERGED : 0u);
            continue;
        }
        r -= g.q;
        const bool in_u = r < nu;
        if (!in_u) r -= nu;
        const int cols = in_u ? g.uc : g.vc;
        const bl_i64 i = r / cols, j = r - i * cols;
        const bool swap = g.vt[b] && (in_u == (g.v_in_u != 0));  // V^T read as V
        const bl_i64 rs = in_u ? g.us_rs : g.vs_rs, cs = in_u ? g.us_cs : g.vs_cs;
        const double* src = in_u ? g.us + b * g.us_bs : g.vs + b * g.vs_bs;
        const T x = zero ? T(i == j) : T(src[swap ? i * cs + j * rs : i * rs + j * cs]);
        T* out = in_u ? (T*)g.u + b * g.u_bs + i * g.u_rs + j * g.u_cs : (T*)g.vh + b * g.vh_bs + i * g.vh_rs + j * g.vh_cs;
        *out = bad ? BlT<T>::nan() : x;
    }
}

#define BL_SVD_CUS_UNPACK(TN, T)                                                            \
    extern "C" __global__ void __launch_bounds__(256) svd_cus_unpack_##TN(SvdCusArgs g) { bl_svd_cus_unpack<T>(g); }
#define BL_SVD_TALL_SCALE(TN, T)                                                            \
    extern "C" __global__ void __launch_bounds__(256) svd_tall_scale_##TN(SvdTallArgs g) { bl_svd_tall_scale<T>(g); }
#define BL_SVD_TALL_FINISH(TN, T)                                                           \
    extern "C" __global__ void __launch_bounds__(256) svd_tall_finish_##TN(SvdTallArgs g) { bl_svd_tall_finish<T>(g); }
