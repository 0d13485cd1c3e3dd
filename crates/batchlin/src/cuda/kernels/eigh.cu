// Symmetric eigendecomposition, one block a matrix (eigh_block_<t>): the named triangle
// read into a full symmetric work matrix, scaled by a power of two so max|a| lies in
// [0.5, 1); Householder tridiagonalisation (LAPACK xSYTD2 on the full matrix, as the CPU
// kernel); then the fast path (`bl_eigh_fast`: eigenvalues by bisection, vectors by
// twisted factorisations of the tridiagonal written to the output and the reflectors
// applied to them there, Q not formed; no serial chain), or, where it declines (values
// that coincide, a diagonal tridiagonal), Q formed in place over the reflectors (xORG2R)
// and the implicit QL iteration with Wilkinson shifts
// (EISPACK tql2, the CPU kernel's) run by thread 0, which logs each sweep's rotations to
// one of two slots while every thread applies the previous slot's to its rows of Z
// (eigenvalues alone: bisection on Sturm counts, a thread an eigenvalue); then
// eigenvalues ascending (a stable rank sort), each eigenvector's largest component
// positive, the scaling undone.
//
// The work matrix (A, then Q and Z over it; row-major, leading dimension ld: a multiple of
// 16 bytes, odd in units of 16, so that 8 rows' 16-byte vectors hit distinct banks) sits in
// dynamic shared memory when it fits, else in global scratch (`work`, work_bs elements a
// matrix); the fast path's scratch (3 n^2) is in `work`, after A where A is there; the
// small vectors are always in shared memory.
// info: bit 0 non-finite input (every output NaN), bit 1 not converged, bits 16.. the QL
// iterations (eigenvalues alone and the fast path: the most bisection steps of an
// eigenvalue).

// Mirrors `EighArgs` in crates/batchlin/src/cuda/eigh.rs.
struct EighArgs {
    const void* a;
    bl_i64 a_bs, a_rs, a_cs;
    void* w;
    bl_i64 w_bs, w_cs;
    void* v;  // NULL: eigenvalues only
    bl_i64 v_bs, v_rs, v_cs;
    unsigned int* info;
    void* work;  // NULL: A and Z in shared memory
    bl_i64 work_bs;
    int b0;  // first matrix of this launch
    int n, lower, ld;
    int nmat;  // warp kernel: matrices b0 .. b0 + nmat of this launch
    int a_global;  // block: A in `work` (else in shared memory)
    int fast;      // block: the fast path's scratch (3 n^2) in `work`, after A where it is there
    const unsigned int* only;  // block: NULL, or the matrices b with only[b] != 0 alone (the rest untouched)
};

// Eigenvalues of the tridiagonal (d, e; e[i] couples i and i + 1) ascending into out[0..n)
// by bisection on Sturm counts, a thread an eigenvalue (LAPACK's xSTEBZ, with its pivmin
// guard), every thread at once: no serial chain. e2 (n) gets e squared, *steps the most
// steps of a value. `rel`: to relative accuracy down to eps^2 ||T|| (the vectors' shifts),
// else to eps ||T|| (LAPACK's default abstol). Returns whether T is diagonal (then out = d,
// exactly), the same in every thread. Run by a team (BlBlockTeam, BlGroupTeam); ends with
// its sync.
template <typename T, typename Team>
__device__ bool bl_eigh_bisect(const Team& tm, const T* d, const T* e, T* e2, int n, T* out, int* steps_out, bool rel,
                               T& pivmin) {
    const int tid = tm.rank(), nt = tm.size();
    const T eps = BlT<T>::eps();
    for (int i = tid; i < n; i += nt) e2[i] = i < n - 1 ? e[i] * e[i] : T(0);
    if (tid == 0) *steps_out = 0;
    tm.sync();
    T lo = d[0], hi = d[0], emax2 = T(0);
    for (int i = 0; i < n; ++i) {
        const T r = (i > 0 ? BlT<T>::abs_(e[i - 1]) : T(0)) + (i < n - 1 ? BlT<T>::abs_(e[i]) : T(0));
        lo = d[i] - r < lo ? d[i] - r : lo;
        hi = d[i] + r > hi ? d[i] + r : hi;
        emax2 = e2[i] > emax2 ? e2[i] : emax2;
    }
    pivmin = bl_tri_pivmin(emax2);
    // The interval's ends are accurate to eps times the spectrum's extent (as LAPACK's
    // default abstol): about 25 halvings in float32, 54 in float64.
    const T span = BlT<T>::abs_(lo) > BlT<T>::abs_(hi) ? BlT<T>::abs_(lo) : BlT<T>::abs_(hi);
    const T atol = rel ? T(4) * pivmin + eps * eps * span : eps * span;
    lo -= T(4) * eps * span + T(2) * pivmin;
    hi += T(4) * eps * span + T(2) * pivmin;
    const auto dg = [=](int i) { return d[i]; };
    // A value a thread (the warp kernels; the block kernel to its thread count): first one
    // Sturm count a thread at n points evenly across [lo, hi] (counts in out), each value
    // bracketed between two of them: about log2(n + 1) halvings fewer a value.
    T x0 = lo, x1 = hi;
    if (emax2 != T(0) && n <= nt) {  // uniform
        const T h = (hi - lo) / T(n + 1);
        if (tid < n) out[tid] = T(bl_tri_count(dg, e2, n, lo + h * T(tid + 1), pivmin));
        tm.sync();
        if (tid < n) {
            int a = 0;  // points with at most tid values below them: the counts ascend
            for (int m = 0; m < n; ++m) a += out[m] <= T(tid);
            if (a > 0) x0 = lo + h * T(a);
            if (a < n) x1 = lo + h * T(a + 1);
        }
        tm.sync();  // every count read before a value overwrites it
    }
    int steps = 0;
    for (int k = tid; k < n; k += nt) {
        // A diagonal T (n = 1, a zero or diagonal matrix) is its own answer, exactly:
        // bisection would stop within pivmin of it (the zero matrix gave FLT_MIN).
        if (emax2 == T(0)) {
            out[k] = d[k];
            continue;
        }
        int st;
        out[k] = bl_tri_bisect(dg, e2, n, k, x0, x1, pivmin, atol, st);  // x0, x1: lo, hi unless bracketed
        steps = st > steps ? st : steps;
    }
    atomicMax(steps_out, steps);
    tm.sync();
    return emax2 == T(0);
}

#define BL_EIGH_WINDOW 1e-2
#ifndef BL_EIGH_FAST
#define BL_EIGH_FAST 1  // 0: always tql2
#endif
// The emulator's count of matrices by path (gpu-lab/warp_emu); nothing on the GPU.
#ifndef BL_EIGH_PATH_HOOK
#define BL_EIGH_PATH_HOOK(fast)
#endif
// The fast path's vectors of the tridiagonal (d, e), by a team (the block kernel's
// threads, or `warp-bisect`'s group of lanes, a lane a value): the eigenvalues into sig by
// bisection to relative accuracy; each vector by a twisted factorisation of T - lambda I,
// again at the Rayleigh-corrected shift, into column k of X0 (n x n, leading dimension
// ldx), normalised; the vectors of values closer than BL_EIGH_WINDOW ||T|| made
// orthonormal (bl_tri_lowdin, X1 and Ex its scratch); their inverse norms into sc (may be
// b2: read only before). Returns X0 or X1, whichever holds the vectors, or null (the same
// in every thread) where it cannot vouch for them: T diagonal, a vector that overflowed,
// values that coincide. b2: n; msg: 8 ints (msg[0] the most bisection steps). Ends with
// the team's sync.
template <typename T, typename Team>
__device__ const T* bl_eigh_vectors(const Team& tm, const T* d, const T* e, T* b2, int n, T* sig, T* X0, T* X1, T* Ex,
                                    int ldx, T* sc, int* msg) {
    const int tid = tm.rank(), nt = tm.size();
    T pivmin;
    if (bl_eigh_bisect(tm, d, e, b2, n, sig, msg, true, pivmin)) return nullptr;
    int* fl = msg + 4;
    if (tid == 0) fl[0] = 0;
    tm.sync();
    const auto dg = [=](int i) { return d[i]; };
    const auto off = [=](int i) { return e[i]; };
    for (int k = tid; k < n; k += nt) {
        T s = sig[k], gam;
        T n2 = bl_tri_twist(dg, off, b2, n, s, pivmin, X0 + k, ldx, gam);
        s += gam / n2;
        n2 = bl_tri_twist(dg, off, b2, n, s, pivmin, X0 + k, ldx, gam);
        if (!(n2 < BlT<T>::huge())) {
            atomicMax(fl, 1);
            continue;
        }
        const T inv = T(1) / BlT<T>::sqrt_(n2);
        for (int i = 0; i < n; ++i) X0[(bl_i64)i * ldx + k] *= inv;
    }
    const T big = BlT<T>::abs_(sig[0]) > BlT<T>::abs_(sig[n - 1]) ? BlT<T>::abs_(sig[0]) : BlT<T>::abs_(sig[n - 1]);
    const T* X = bl_tri_lowdin(tm, X0, X1, Ex, n, n, ldx, sig, T(BL_EIGH_WINDOW) * big, fl);
    BL_EIGH_PATH_HOOK(X != nullptr);
    if (!X) return nullptr;
    // The columns' inverse norms (the symmetric steps keep them only to second order).
    for (int k = tid; k < n; k += nt) {
        T s2 = T(0);
        for (int i = 0; i < n; ++i) s2 += X[(bl_i64)i * ldx + k] * X[(bl_i64)i * ldx + k];
        sc[k] = T(1) / BlT<T>::sqrt_(s2);
    }
    tm.sync();
    return X;
}

// The vectors without tql2's serial chain (block's fast path; svd.cu's bidiag has the
// same): the vectors of T by bl_eigh_vectors; z written to the output in
// ascending order and the reflectors applied to it there (V = (1 (+) Q') z, bl_refl_apply:
// Q never formed), the sign convention on the output, the eigenvalues and the info word.
// Returns false (the same in every thread; tql2 then takes the matrix, exact for
// clusters) where it cannot vouch for the vectors: T diagonal, a vector that overflowed,
// values so close that their vectors coincide (identity, rank-one, exact ties). R: the
// reflectors, Q'(r, j) at R[r ld + j] (A's row 1), stored whole once the vectors are
// accepted. Scratch fs: X0, X1, E (n x n each), then Z. b2, sig, sc: n each of shared
// memory; msg: 8 ints.
template <typename T>
__device__ bool bl_eigh_fast(const EighArgs& p, bl_i64 b, T* R, const T* tau, const T* d, const T* e, T* b2,
                             T* sig, T* sc, int* perm, int* msg, T* fs, int es) {
    const int n = p.n, ld = p.ld, tid = threadIdx.x, nt = blockDim.x;
    const int wid = tid >> 5, nw = nt >> 5;
    const bl_i64 nn = (bl_i64)n * n;
    const T* X = bl_eigh_vectors(BlBlockTeam{}, d, e, b2, n, sig, fs, fs + nn, fs + 2 * nn, n, sc, msg);
    if (!X) return false;
    // Ascending order (bisection's values are, but for ties within rounding: a stable rank sort).
    for (int j = tid; j < n; j += nt) {
        const T sj = sig[j];
        int r = 0;
        for (int i = 0; i < n; ++i) {
            const T si = sig[i];
            r += (si < sj) || (si == sj && i < j);
        }
        perm[r] = j;
    }
    __syncthreads();
    T* wp = reinterpret_cast<T*>(p.w) + b * p.w_bs;
    T* vp = reinterpret_cast<T*>(p.v) + b * p.v_bs;
    for (int r = tid; r < n; r += nt) wp[r * p.w_cs] = bl_scale2(sig[perm[r]], es);
    // X (ascending, normalised) straight into the output, a warp's entries consecutive
    // along its contiguous axis; the reflectors stored whole (Q'(r, j) at A[r + 1][j]).
    const bool by_col = (p.v_rs < 0 ? -p.v_rs : p.v_rs) <= (p.v_cs < 0 ? -p.v_cs : p.v_cs);
    for (int idx = tid; idx < n * n; idx += nt) {
        const int o = idx / n, in = idx - o * n;
        const int c = by_col ? o : in, i = by_col ? in : o, kc = perm[c];
        vp[i * p.v_rs + c * p.v_cs] = X[(bl_i64)i * n + kc] * sc[kc];
    }
    bl_refl_explicit(R, 1, ld, n - 1);
    __syncthreads();
    // X is spent: fs is bl_refl_apply's Z. V = (1 (+) Q') X: Q' = H'_0 .. H'_{n-2} on rows
    // 1..n-1, the reflectors the columns of R (R's tiles past the edge read up to 3 rows
    // beyond A: d, e, .. in shared memory, the scratch in global).
    const BlRefl<T> rq{R, tau, vp + p.v_rs, fs, p.v_rs, p.v_cs, 1, ld, n - 1, n - 1, n, bl_refl_nb(n)};
    bl_refl_apply(rq);
    // The sign convention, on the output: each column's largest component positive.
    for (int c = wid; c < n; c += nw) bl_warp_sign(vp + c * p.v_cs, p.v_rs, n, vp, 0, 0);
    if (tid == 0 && p.info) {
        const int it = msg[0];
        const unsigned itw = it > 0xffff ? 0xffffu : (unsigned)it;
        const T lo = bl_scale2(sig[perm[0]], es), hi = bl_scale2(sig[perm[n - 1]], es);
        const bool over = !(BlT<T>::abs_(lo) <= BlT<T>::huge() && BlT<T>::abs_(hi) <= BlT<T>::huge());
        p.info[b] = (itw << 16) | (over ? BL_INFO_OVERFLOW : 0u);
    }
    return true;
}

// The implicit QL iteration with Wilkinson shifts (EISPACK tql2, the CPU kernel's) in three
// parts, shared by the block and warp kernels. The tridiagonal is d (n) and e (e[i] couples i
// and i + 1, e[n-1] = 0).
// The split for eigenvalue l: the first m >= l with e[m] negligible against tst1, the
// running max of |d| + |e| (updated here). Reads only.
template <typename T> __device__ __forceinline__ int bl_ql_split(const T* d, const T* e, int l, int n, T& tst1) {
    const T eps = BlT<T>::eps();
    const T el = BlT<T>::abs_(e[l]);
    const T dl = BlT<T>::abs_(d[l]);
    tst1 = dl + el > tst1 ? dl + el : tst1;
    int m = l;
    while (m < n - 1 && !(BlT<T>::abs_(e[m]) <= eps * tst1)) ++m;
    return m;
}

// One QL sweep on rows l..m (m > l): d and e updated, the shift accumulated in f, and the
// sweep's rotations logged as (rc[i], rs[i]), i = m-1 down to l, for bl_ql_apply. One
// thread: a serial chain.
template <typename T> __device__ void bl_ql_sweep(T* d, T* e, T* rc, T* rs, int l, int m, int n, T& f) {
    const T g = d[l];
    T pq = (d[l + 1] - g) / (T(2) * e[l]);
    const T r = bl_sign(bl_hypot(pq, T(1)), pq);
    d[l] = e[l] / (pq + r);
    d[l + 1] = e[l] * (pq + r);
    const T dl1 = d[l + 1];
    const T h = g - d[l];
    for (int i = l + 2; i < n; ++i) d[i] -= h;
    f += h;
    pq = d[m];
    T c = T(1), c2 = T(1), c3 = T(1), s = T(0), s2 = T(0);
    const T el1 = e[l + 1];
    for (int i = m - 1; i >= l; --i) {
        c3 = c2;
        c2 = c;
        s2 = s;
        const T ei = e[i];
        const T gg = c * ei;
        const T hh = c * pq;
        T cn, sn, rr;
        bl_givens(pq, ei, cn, sn, rr);
        e[i + 1] = s * rr;
        s = sn;
        c = cn;
        pq = c * d[i] - s * gg;
        d[i + 1] = hh + s * (c * gg + s * d[i]);
        rc[i] = c;
        rs[i] = s;
    }
    pq = -s * s2 * c3 * el1 * e[l] / dl1;
    e[l] = s * pq;
    d[l] = c * pq;
}

// A sweep's rotations (lo < hi) applied to one row zr of the eigenvectors Z.
template <typename T> __device__ __forceinline__ void bl_ql_apply(T* zr, const T* rc, const T* rs, int lo, int hi) {
    T zh = zr[hi];
    for (int i = hi - 1; i >= lo; --i) {
        const T zi = zr[i];
        zr[i + 1] = rs[i] * zi + rc[i] * zh;
        zh = rc[i] * zi - rs[i] * zh;
    }
    zr[lo] = zh;
}

// The rank of d[j] among d[0..n), ascending, ties by index (a stable order).
template <typename T> __device__ __forceinline__ int bl_rank(const T* d, int n, int j) {
    const T dj = d[j];
    int r = 0;
    for (int i = 0; i < n; ++i) {
        const T di = d[i];
        r += (di < dj) || (di == dj && i < j);
    }
    return r;
}

// Column j of Z (n rows, leading dimension ld): the factor that makes its largest
// component (the first of equals) positive, and, with `renorm` (after rotations), its
// norm 1.
template <typename T> __device__ __forceinline__ T bl_column_scale(const T* Z, int ld, int n, int j, bool renorm) {
    T nn = T(0), best = T(0), lead = T(1);
    for (int i = 0; i < n; ++i) {
        const T z = Z[(bl_i64)i * ld + j];
        nn += z * z;
        if (BlT<T>::abs_(z) > best) {
            best = BlT<T>::abs_(z);
            lead = z;
        }
    }
    const T sc = (renorm && nn > T(0)) ? T(1) / BlT<T>::sqrt_(nn) : T(1);
    return lead < T(0) ? -sc : sc;
}

// Columns of a panel of the global-memory tridiagonalisation (cuda/eigh.rs PANEL).
#define BL_EIGH_PANEL 16

// The steps of a panel of the tridiagonalisation in global memory, shared by
// bl_tridiag_panels (a block a matrix) and the cluster prototype (gpu-lab/eigh_cluster.cu):
// V and W (PANEL entries a row of A, 16-byte aligned) hold the panel's reflectors v and
// w = p - (tau/2)(p.v) v. Rows or columns [lo, hi) are the caller's share, a thread a row
// or column from `lo + threadIdx.x` by `blockDim.x`.

// Column k (rows k..n-1) as the panel's earlier steps c left it into pp: row k of A (as at
// the panel's start; symmetric, and contiguous) less the corrections; returns this
// thread's part of the squares below row k + 1.
template <typename T>
__device__ __forceinline__ T bl_panel_column(const T* A, int ld, int n, int k, int c, const T* V, const T* W,
                                             T* pp) {
    constexpr int NB = BL_EIGH_PANEL;
    T part = T(0);
    for (int i = k + threadIdx.x; i < n; i += blockDim.x) {
        T x = A[(bl_i64)k * ld + i];
        for (int u = 0; u < c; ++u) x -= V[i * NB + u] * W[k * NB + u] + W[i * NB + u] * V[k * NB + u];
        pp[i] = x;
        if (i > k + 1) part += x * x;
    }
    return part;
}

// A v over rows [lo, hi) (A as at the panel's start, columns r0..n-1) into pp, a thread a
// row, compensated; then y = W^T v and z = V^T v over the panel's earlier steps c into yz,
// a warp a product (yz read after a barrier).
template <typename T>
__device__ __forceinline__ void bl_panel_av(const T* A, int ld, int n, int r0, int c, const T* V, const T* W,
                                            const T* vv, T* pp, T* yz, int lo, int hi) {
    constexpr int NB = BL_EIGH_PANEL;
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        BlDot2<T> s;
        int j = r0;
        for (; j + 4 <= n; j += 4)  // four products summed plainly, then carried exactly
            s.add(A[(bl_i64)j * ld + i] * vv[j] + A[(bl_i64)(j + 1) * ld + i] * vv[j + 1] +
                  A[(bl_i64)(j + 2) * ld + i] * vv[j + 2] + A[(bl_i64)(j + 3) * ld + i] * vv[j + 3]);
        for (; j < n; ++j) s.add(A[(bl_i64)j * ld + i], vv[j]);
        pp[i] = s.value();
    }
    for (int q = wid; q < 2 * c; q += nw) {
        const T* X = q < c ? W + q : V + (q - c);
        T s = T(0);
        for (int j = r0 + lane; j < n; j += 32) s += X[j * NB] * vv[j];
        s = bl_warp_sum(s);
        if (lane == 0) yz[q] = s;
    }
}

// p = t (A v - V y - W z) over rows [lo, hi), each thread its own rows of A v in pp;
// returns this thread's part of p.v.
template <typename T>
__device__ __forceinline__ T bl_panel_p(int c, T t, const T* V, const T* W, const T* vv, T* pp, const T* yz,
                                        int lo, int hi) {
    constexpr int NB = BL_EIGH_PANEL;
    BlDot2<T> part;
    for (int i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        T s = pp[i];
        for (int u = 0; u < c; ++u) s -= V[i * NB + u] * yz[u] + W[i * NB + u] * yz[c + u];
        s *= t;
        pp[i] = s;
        part.add(s, vv[i]);
    }
    return part.value();
}

// A short last panel's unused entries (steps nc.. of rows [lo, hi)) zeroed: the scratch
// may hold anything there, and the update reads whole rows of V and W.
template <typename T> __device__ __forceinline__ void bl_panel_zero(T* V, T* W, int nc, int lo, int hi) {
    constexpr int NB = BL_EIGH_PANEL;
    for (int idx = threadIdx.x; idx < (hi - lo) * (NB - nc); idx += blockDim.x) {
        const int i = lo + idx / (NB - nc), u = nc + idx % (NB - nc);
        V[i * NB + u] = W[i * NB + u] = T(0);
    }
}

// The trailing matrix's columns [lo, hi), every row from kend: A -= V W^T + W V^T over the
// panel's steps, a thread a column (its V and W entries in registers), row j's entries
// read as 16-byte vectors (the same for every lane); V and W whole from kend (a short last
// panel's unused entries zero).
template <typename T>
__device__ __forceinline__ void bl_panel_update(T* A, int ld, int n, int kend, const T* V, const T* W, int lo,
                                                int hi) {
    constexpr int NB = BL_EIGH_PANEL, VN = BlVec<T>::N;
    for (int i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        T vi[NB], wi[NB];
#pragma unroll
        for (int u = 0; u < NB; u += VN) {
            BlVec<T>::ldg(V + i * NB + u, vi + u);
            BlVec<T>::ldg(W + i * NB + u, wi + u);
        }
        for (int j = kend; j < n; ++j) {
            T s = A[(bl_i64)j * ld + i];
#pragma unroll
            for (int u0 = 0; u0 < NB; u0 += VN) {
                T vj[VN], wj[VN];
                BlVec<T>::ldg(V + j * NB + u0, vj);
                BlVec<T>::ldg(W + j * NB + u0, wj);
#pragma unroll
                for (int u = 0; u < VN; ++u) s -= vj[u] * wi[u0 + u] + wj[u] * vi[u0 + u];
            }
            A[(bl_i64)j * ld + i] = s;
        }
    }
}

// The tridiagonalisation where A is in global memory, by panels (the scheme of LAPACK's
// xLATRD, lower): within a panel of BL_EIGH_PANEL steps A is read as it was at the panel's
// start and the panel's earlier reflectors enter as corrections (A_k = A - V W^T - W V^T
// over the panel's steps so far); the trailing matrix is updated once a panel, a rank-2nb
// product. A step then reads the trailing matrix once (p = tau A v), where the unblocked
// step read it three times (the product, the update's read and write): such a step is
// bound by those reads (float32 from n = 237, float64 from 129 on a 227 KB SM).
// A: symmetric, whole, row i at A[i ld]; column k keeps step k's reflector below row k + 1
// (for Q), as the shared-memory steps leave it. V, W (global scratch, PANEL entries a row
// of A): each column written from the reflector's first row on (the rows before it are
// never read); 16-byte aligned (cuda/eigh.rs rounds each matrix's scratch to whole
// vectors). yz: 2 PANEL shared. The products p are compensated sums (BlDot2), as the
// other path's.
template <typename T>
__device__ void bl_tridiag_panels(T* A, int ld, int n, T* vv, T* pp, T* d, T* e, T* tau, T* red, T* V, T* W,
                                  T* yz) {
    constexpr int NB = BL_EIGH_PANEL;
    const int tid = threadIdx.x, nt = blockDim.x;
    for (int k0 = 0; k0 < n - 1; k0 += NB) {
        const int kend = min(k0 + NB, n - 1);  // the panel's steps k0 .. kend - 1
        for (int k = k0; k < kend; ++k) {
            const int c = k - k0, r0 = k + 1;
            const T ss = bl_sum_all(bl_panel_column(A, ld, n, k, c, V, W, pp), red);
            __syncthreads();  // pp, where one warp sums without a barrier
            T beta, t, scal;
            bl_householder(pp[r0], ss, beta, t, scal);
            for (int i = r0 + tid; i < n; i += nt) {
                const T v = i == r0 ? T(1) : pp[i] * scal;
                vv[i] = v;
                V[i * NB + c] = v;
                if (i > r0) A[(bl_i64)i * ld + k] = v;  // the reflector, kept for Q
            }
            if (tid == 0) {
                e[k] = beta;
                tau[k] = t;
                d[k] = pp[k];
            }
            __syncthreads();
            if (t != T(0)) {
                bl_panel_av(A, ld, n, r0, c, V, W, vv, pp, yz, r0, n);
                __syncthreads();
                const T kk = -(T(0.5) * t) * bl_sum_all(bl_panel_p(c, t, V, W, vv, pp, yz, r0, n), red);
                for (int i = r0 + tid; i < n; i += nt) W[i * NB + c] = pp[i] + kk * vv[i];
            } else {
                for (int i = r0 + tid; i < n; i += nt) W[i * NB + c] = T(0);
            }
            __syncthreads();
        }
        if (kend - k0 < NB) {
            bl_panel_zero(V, W, kend - k0, kend, n);
            __syncthreads();
        }
        bl_panel_update(A, ld, n, kend, V, W, kend, n);
        __syncthreads();
    }
}

template <typename T> __device__ void bl_eigh_block(const EighArgs& p) {
    extern __shared__ __align__(16) unsigned char bl_smem[];
    const int n = p.n, ld = p.ld, tid = threadIdx.x, nt = blockDim.x;
    const bl_i64 b = (bl_i64)p.b0 + blockIdx.x;
    if (p.only && !p.only[b]) return;  // the whole block, before any barrier
    const bool vec = p.v != nullptr;
    T* sm = reinterpret_cast<T*>(bl_smem);
    T* A;
    T* gw = p.work ? reinterpret_cast<T*>(p.work) + (bl_i64)blockIdx.x * p.work_bs : nullptr;  // per launch
    if (p.a_global) {
        A = gw;
    } else {
        A = sm;
        sm += (bl_i64)n * ld;
    }
    T* const Z = A;  // the eigenvectors are formed over A
    // v and p first, 16-byte aligned and padded to whole vectors (zeros past n).
    constexpr int VN = BlVec<T>::N;
    const int nv = (n + VN - 1) / VN * VN;
    T* vv = sm;
    T* pp = vv + nv;
    T* d = pp + nv;
    T* e = d + n;
    T* tau = e + n;
    T* rot = tau + n;  // two slots of (c[n], s[n])
    T* red = rot + 4 * n;
    int* msg = reinterpret_cast<int*>(red + 32);  // two slots of (lo, hi, stop, pad)
    int* perm = msg + 8;

    const T* ap = reinterpret_cast<const T*>(p.a) + b * p.a_bs;
    T mx = T(0);
    for (int idx = tid; idx < n * n; idx += nt) {
        const int i = idx / n, j = idx - i * n;
        if (p.lower ? i >= j : i <= j) {
            const T x = ap[i * p.a_rs + j * p.a_cs];
            A[(bl_i64)i * ld + j] = x;
            A[(bl_i64)j * ld + i] = x;
            const T f = bl_absflag(x);
            mx = f > mx ? f : mx;
        }
    }
    mx = bl_max_all(mx, red);
    bool bad;
    const int es = bl_scale_exp(mx, bad);
    T* wp = reinterpret_cast<T*>(p.w) + b * p.w_bs;
    T* vp = vec ? reinterpret_cast<T*>(p.v) + b * p.v_bs : nullptr;
    if (bad) {
        for (int j = tid; j < n; j += nt) wp[j * p.w_cs] = BlT<T>::nan();
        if (vec)
            for (int idx = tid; idx < n * n; idx += nt) {
                const int i = idx / n, j = idx - i * n;
                vp[i * p.v_rs + j * p.v_cs] = BlT<T>::nan();
            }
        if (tid == 0 && p.info) p.info[b] = BL_INFO_NONFINITE;
        return;
    }
    __syncthreads();
    for (int idx = tid; idx < n * n; idx += nt) {
        const int i = idx / n, j = idx - i * n;
        const T x = bl_scale2(A[(bl_i64)i * ld + j], -es);
        // Subnormal once scaled (by the scaling or in the input): zero, as the CPU path (a
        // NaN otherwise came out of finite input spanning 5 to f64::MAX).
        A[(bl_i64)i * ld + j] = BlT<T>::abs_(x) < BlT<T>::tiny() ? T(0) : x;
    }
    // Zeros where the rows' vectors reach past n: A's pad columns, v's and p's tails.
    for (int idx = tid; idx < n * (nv - n); idx += nt) A[(bl_i64)(idx / (nv - n)) * ld + n + idx % (nv - n)] = T(0);
    for (int i = n + tid; i < nv; i += nt) vv[i] = pp[i] = T(0);
    __syncthreads();

    // Tridiagonalisation: step k reduces column k below its sub-diagonal; the reflector
    // (v[k+1] = 1) is kept in column k below row k+1 for forming Q.
    // A is symmetric, so the products read and update rows or columns alike. In shared
    // memory by rows, a group of lpr lanes a row, in 16-byte vectors from the vector holding
    // column k + 1 (v and p zero before it: those columns, the reflectors', are read and
    // left as they are); a thread's vector loads of 8 rows hit distinct banks (ld). Three
    // barriers a step and no block reduction there: the reflector; p = tau A22 v; then
    // each warp sums p.v and updates its rows, A22 -= v w^T + w v^T with
    // w = p - (tau/2)(p.v) v, each row leaving the square of its new entry in column k + 1
    // in csq, which every thread of the next step sums itself for that column's norm. In
    // global memory by panels (bl_tridiag_panels).
    // The products p and p.v are compensated sums (BlDot2, common.cu): plain ones left the
    // float64 200x200 matrix of ones' top eigenvalue 14 eps n off, its other eigenvalues as
    // far from zero (the trailing block's rounding alike in every entry).
    const bool rows = !p.a_global;
    // Global scratch after A: the panels' V and W, then the fast path's.
    T* const panels = rows ? nullptr : gw + (bl_i64)n * ld;
    if (!rows) bl_tridiag_panels<T>(A, ld, n, vv, pp, d, e, tau, red, panels, panels + (bl_i64)BL_EIGH_PANEL * n, rot);
    const int lpr = bl_vec_lanes(n, 4);
    const int grp = tid / lpr, gl = tid - grp * lpr, ngrp = nt / lpr;
    T* csq = rot;          // n: column k + 1's squares by row (rot is free until tql2)
    bool have_ss = false;  // csq holds column k's squares
    for (int k = 0; rows && k < n - 1; ++k) {
        const int r0 = k + 1, j0 = r0 / VN * VN;
        T ss = T(0);
        if (have_ss) {  // rows r0 + 1.. of column k, summed in every thread alike
            for (int i = r0 + 1; i < n; ++i) ss += csq[i];
        } else {
            T part = T(0);
            for (int i = r0 + 1 + tid; i < n; i += nt) {
                const T x = A[(bl_i64)i * ld + k];
                part += x * x;
            }
            ss = bl_sum_all(part, red);
        }
        T beta, t, scal;
        bl_householder(A[(bl_i64)r0 * ld + k], ss, beta, t, scal);
        for (int i = j0 + tid; i < n; i += nt) vv[i] = i < r0 ? T(0) : i == r0 ? T(1) : A[(bl_i64)i * ld + k] * scal;
        for (int i = j0 + tid; i < r0; i += nt) pp[i] = T(0);
        if (tid == 0) {
            e[k] = beta;
            tau[k] = t;
            d[k] = A[(bl_i64)k * ld + k];
        }
        __syncthreads();
        if (t != T(0)) {
            bl_vec_dots<T, true>(A, ld, r0, n, j0, n, vv, pp, t, lpr);  // p = tau A22 v
            __syncthreads();
            // p.v by each warp alike, a lane every 32nd vector, the lanes' sums added by
            // xor shuffles (commutative: every lane of every warp gets the same bits); it
            // was every thread's own sum of n terms.
            BlDot2<T> pv;
            for (int c = j0 + (tid & 31) * VN; c < n; c += 32 * VN) {
                T x[VN], y[VN];
                BlVec<T>::ld(vv + c, x);
                BlVec<T>::ld(pp + c, y);
#pragma unroll
                for (int u = 0; u < VN; ++u) pv.add(x[u], y[u]);
            }
            const T kk = -(T(0.5) * t) * bl_warp_sum(pv.value());  // w = p + kk v
            for (int i = r0 + grp; i < n; i += ngrp) {
                const T vi = vv[i], wi = pp[i] + kk * vi;
                for (int c = j0 + gl * VN; c < n; c += lpr * VN) {
                    T a[VN], x[VN], y[VN];
                    BlVec<T>::ld(A + (bl_i64)i * ld + c, a);
                    BlVec<T>::ld(vv + c, x);
                    BlVec<T>::ld(pp + c, y);
#pragma unroll
                    for (int u = 0; u < VN; ++u) a[u] -= vi * (y[u] + kk * x[u]) + wi * x[u];
                    if (c == j0) {  // the vector holding columns k (if here) and k + 1
                        csq[i] = a[r0 - j0] * a[r0 - j0];
                        // Column k (reflector storage): its entry, unchanged above (v and p
                        // are zero there), becomes the reflector's.
                        if (k >= j0 && i > r0) a[k - j0] = vv[i];
                    }
                    BlVec<T>::st(A + (bl_i64)i * ld + c, a);
                }
            }
        }
        // The reflector into column k, where no vector store above wrote it.
        if (t == T(0) || k < j0)
            for (int i = r0 + 1 + tid; i < n; i += nt) A[(bl_i64)i * ld + k] = vv[i];
        have_ss = t != T(0);
        __syncthreads();
    }
    if (tid == 0) {
        d[n - 1] = A[(bl_i64)(n - 1) * ld + n - 1];
        e[n - 1] = T(0);
    }

    __syncthreads();
    // The fast path: vectors without tql2's chain, the reflectors applied to them in the
    // output (Q not formed); Q formed and tql2 below where it declines.
    if (vec && BL_EIGH_FAST && p.fast && n >= 2) {
        T* fs = rows ? gw : panels + 2 * (bl_i64)BL_EIGH_PANEL * n;
        if (bl_eigh_fast(p, b, A + ld, tau, d, e, vv, rot, pp, perm, msg, fs, es)) return;
        __syncthreads();  // every thread is past the fast path's flags before tql2's messages
    }
    if (vec) {
        // Q = diag(1, Q') with Q' = H'_0 ... H'_{n-2} formed in place over the reflectors
        // (xORG2R, a thread a column): Q'(r, c) at A[r + 1][c]. Then every row shifted
        // one column right, so that Z = Q is A itself: one work matrix, not two.
        const int nn = n - 1;
        for (int j = nn - 1; j >= 0; --j) {
            const T t = tau[j];
            if (t != T(0)) {
                for (int c = j + 1 + tid; c < nn; c += nt) {
                    T s = A[(bl_i64)(j + 1) * ld + c];
                    for (int r = j + 1; r < nn; ++r) s += A[(bl_i64)(r + 1) * ld + j] * A[(bl_i64)(r + 1) * ld + c];
                    s *= t;
                    A[(bl_i64)(j + 1) * ld + c] -= s;
                    for (int r = j + 1; r < nn; ++r) A[(bl_i64)(r + 1) * ld + c] -= s * A[(bl_i64)(r + 1) * ld + j];
                }
                __syncthreads();
            }
            for (int r = tid; r < nn; r += nt) {
                T* x = A + (bl_i64)(r + 1) * ld + j;
                *x = r > j ? -t * *x : (r == j ? T(1) - t : T(0));
            }
            __syncthreads();
        }
        for (int i = tid; i < n; i += nt) {
            T* row = A + (bl_i64)i * ld;
            if (i == 0) {
                row[0] = T(1);
                for (int j = 1; j < n; ++j) row[j] = T(0);
            } else {
                for (int j = n - 1; j >= 1; --j) row[j] = row[j - 1];
                row[0] = T(0);
            }
        }
    }
    __syncthreads();

    const T eps = BlT<T>::eps();
    int iters = 0;
    bool conv = true;
    if (vec) {
        // With vectors, the implicit QL (tql2). Thread 0 holds the iteration's state; each step
        // of the loop below publishes one message (a sweep's rotations, or none) in slot t & 1,
        // applied by every thread to its rows after the barrier. A slot is rewritten two
        // messages later, after a barrier every reader has passed.
        const int max_iter = 30 * n + 30;
        T f = T(0), tst1 = T(0);
        int m = 0, t = 0;
        for (int l = 0; l < n; ++l) {
            if (tid == 0) m = bl_ql_split(d, e, l, n, tst1);
            while (true) {
                int* mg = msg + (t & 1) * 4;
                T* rc = rot + (t & 1) * 2 * n;
                T* rs = rc + n;
                if (tid == 0) {
                    int lo = 0, hi = 0, stop = 1;
                    if (m > l && iters >= max_iter) {
                        conv = false;
                    } else if (m > l) {
                        ++iters;
                        bl_ql_sweep(d, e, rc, rs, l, m, n, f);
                        lo = l;
                        hi = m;
                        stop = !(BlT<T>::abs_(e[l]) > eps * tst1);
                    }
                    mg[0] = lo;
                    mg[1] = hi;
                    mg[2] = stop;
                }
                __syncthreads();
                const int lo = mg[0], hi = mg[1], stop = mg[2];
                if (hi > lo)
                    for (int r = tid; r < n; r += nt) bl_ql_apply(Z + (bl_i64)r * ld, rc, rs, lo, hi);
                ++t;
                if (stop) break;
            }
            if (tid == 0) {
                d[l] += f;
                e[l] = T(0);
            }
        }
    } else {
        // Eigenvalues alone: bisection, every thread at once: no serial chain.
        T pivmin;
        bl_eigh_bisect(BlBlockTeam{}, d, e, vv, n, pp, msg + 1, false, pivmin);
        for (int k = tid; k < n; k += nt) d[k] = pp[k];
        if (tid == 0) iters = msg[1];
    }
    __syncthreads();
    if (tid == 0) msg[0] = iters;
    __syncthreads();
    const int iters_all = msg[0];

    // Renormalise Z's columns after rotations (as the CPU kernel), then sort and sign.
    for (int j = tid; j < n; j += nt) perm[bl_rank(d, n, j)] = j;
    if (vec) {
        for (int j = tid; j < n; j += nt) pp[j] = bl_column_scale(Z, ld, n, j, iters_all > 0);
    }
    __syncthreads();
    for (int r = tid; r < n; r += nt) wp[r * p.w_cs] = bl_scale2(d[perm[r]], es);
    if (vec) {
        const bool rows_outer = (p.v_rs < 0 ? -p.v_rs : p.v_rs) >= (p.v_cs < 0 ? -p.v_cs : p.v_cs);
        for (int idx = tid; idx < n * n; idx += nt) {
            const int o = idx / n, in = idx - o * n;
            const int i = rows_outer ? o : in, r = rows_outer ? in : o;
            const int j = perm[r];
            vp[i * p.v_rs + r * p.v_cs] = pp[j] * Z[(bl_i64)i * ld + j];
        }
    }
    if (tid == 0 && p.info) {
        const unsigned it = iters_all > 0xffff ? 0xffffu : (unsigned)iters_all;
        // Finite input whose extreme eigenvalues exceed the type once unscaled.
        const T lo = bl_scale2(d[perm[0]], es), hi = bl_scale2(d[perm[n - 1]], es);
        const bool over = !(BlT<T>::abs_(lo) <= BlT<T>::huge() && BlT<T>::abs_(hi) <= BlT<T>::huge());
        p.info[b] = (it << 16) | (conv ? 0u : BL_INFO_NOT_CONVERGED) | (over ? BL_INFO_OVERFLOW : 0u);
    }
}

// ---------------------------------------------------------------------------------------
// Symmetric eigendecomposition for n <= 32, a warp a matrix in registers
// (eigh_warp_<t>_n<N>; 32/N matrices a warp for N = 8, 16): cyclic two-sided Jacobi.
// - N, the padded size, is 8, 16 or 32 (a power of two >= n): padding rows and columns are
//   zero and never rotate (their a_pq is exactly 0), so odd n needs no dummy pairs.
// - Ordering: round m pairs index i with i ^ m, m = 1 .. N-1; each round is a perfect
//   matching and a sweep meets every pair once. Lane j keeps column j of A as
//   b[x] = A[j ^ L(x)][j] and row j of V as v[x] = V[j][j ^ L(x)], L a relabeling that
//   changes each round (below): its diagonal is b[0], its pair's a_pq is b[1], and the
//   rows (and V's columns) that a round rotates together are the register pairs
//   (x, x ^ 1), every index a constant, so nothing leaves registers.
// - One round's code, looped: in round t, L_t = A^t with A the multiplication by a
//   primitive element of GF(N) (linear over GF(2), of order N-1), so the round's mask is
//   L_t(1), every nonzero mask once a sweep, and going to round t+1 is a fixed permutation
//   of the slots. The fully unrolled sweep (a constant mask a round) is ~141 KB of code at
//   N = 32 and stalled on instruction fetch (58% of stalls): on the H200 (2026-12-02,
//   batch 4096) the loop takes 0.38 ms at n = 32 float against 0.57 unrolled, 0.061
//   against 0.068 at 16, 0.017 against 0.016 at 8.
// - A round costs a lane N-2 shuffles for the partner's column and N-2 for the (c, s) of
//   the other pairs, shared by A's row rotation and V's column rotation (V kept by rows
//   needs none of its own). Both lanes of a pair compute (c, s) from the same three
//   numbers (bitwise equal, no broadcast); a_pq is the lower lane's copy, as the two
//   stored copies drift apart by rounding and the lanes must agree on the rotation.
// - Convergence: a pair is skipped when |a_pq| <= eps max(sqrt|a_pp a_qq|, eps) (relative,
//   the Demmel-Veselic test, floored at eps^2 of max|a|, in [0.5, 1) once scaled, so
//   rounding noise in a null space is not chased). Every pair is tested before each sweep.
// Then the eigenvalues ascending (a stable rank sort), each eigenvector's largest component
// positive, the scaling undone, as the block kernel. info: bit 0 non-finite input (every
// output NaN), bit 1 not converged after BL_EIGH_WARP_SWEEPS, bit 3 an eigenvalue beyond
// the range once unscaled, bits 16.. the sweeps.

#define BL_EIGH_WARPS 4  // warps a block
#define BL_EIGH_WARP_SWEEPS 40

// round t: mask m[t], its highest bit hb[t], and lane[t][x / 2] = L_t(x) for even x.
template <int N> struct BlRoundTab {
    unsigned char m[N - 1], hb[N - 1], lane[N - 1][N / 2];
};
// Multiplication by the primitive element: x^3+x+1, x^4+x+1, x^5+x^2+1.
template <int N> __host__ __device__ constexpr int bl_mul_alpha(int x) {
    constexpr int poly = N == 8 ? 0xb : N == 16 ? 0x13 : 0x25;
    x <<= 1;
    return (x & N) ? x ^ poly : x;
}
__host__ __device__ constexpr int bl_hibit(int m) {
    return m >= 16 ? 16 : m >= 8 ? 8 : m >= 4 ? 4 : m >= 2 ? 2 : 1;
}
template <int N> __host__ __device__ constexpr BlRoundTab<N> bl_round_tab() {
    BlRoundTab<N> r{};
    int l[N] = {};  // l[x] = L_t(x)
    for (int x = 0; x < N; ++x) l[x] = x;
    for (int t = 0; t < N - 1; ++t) {
        r.m[t] = (unsigned char)l[1];
        r.hb[t] = (unsigned char)bl_hibit(l[1]);
        for (int x = 0; x < N; x += 2) r.lane[t][x / 2] = (unsigned char)l[x];
        for (int x = 0; x < N; ++x) l[x] = bl_mul_alpha<N>(l[x]);  // L_{t+1} = A L_t
    }
    return r;
}
__constant__ BlRoundTab<8> bl_tab8 = bl_round_tab<8>();
__constant__ BlRoundTab<16> bl_tab16 = bl_round_tab<16>();
__constant__ BlRoundTab<32> bl_tab32 = bl_round_tab<32>();
template <int N> __device__ __forceinline__ const BlRoundTab<N>& bl_tab() {
    if constexpr (N == 8) return bl_tab8;
    else if constexpr (N == 16) return bl_tab16;
    else return bl_tab32;
}

// The same test in the sweep and the convergence check (the product commutes, so both
// lanes of a pair decide alike).
template <typename T> __device__ __forceinline__ bool bl_jacobi_negligible(T app, T aqq, T apq) {
    const T e2 = BlT<T>::eps() * BlT<T>::eps();
    const T d = BlT<T>::abs_(app * aqq);
    return apq * apq <= e2 * (d > e2 ? d : e2);
}

// The rotation annihilating a_pq, p < q, of P^T A P with P_pp = P_qq = c, P_pq = s = -P_qp
// (t = bl_jacobi_t). Its error leaves a_pq' ~ ulp |a_pq|, set to 0.
template <typename T> __device__ __forceinline__ bool bl_jacobi_rotation(T app, T aqq, T apq, T& c, T& s, T& t) {
    const bool skip = bl_jacobi_negligible(app, aqq, apq);
    const T tt = bl_jacobi_t<true>(app, aqq, apq);  // garbage when skipped (apq may be 0)
    t = skip ? T(0) : tt;
    c = skip ? T(1) : bl_rsqrt_acc(T(1) + t * t);
    s = t * c;
    return skip;
}

// One sweep: N-1 rounds, the layout back to L_0 (the identity) at its end.
template <typename T, int N> __device__ __forceinline__ void bl_jacobi_sweep(T (&b)[N], T (&v)[N], int j, bool vec) {
#pragma unroll 1
    for (int t = 0; t < N - 1; ++t) {
        const int m = bl_tab<N>().m[t];
        const bool lo = (j & bl_tab<N>().hb[t]) == 0;  // this lane is the pair's p
        const T dpart = bl_shfl_xor(b[0], m);
        const T opart = bl_shfl_xor(b[1], m);
        const T apq = lo ? b[1] : opart;
        T c, s, t_;
        const bool skip = bl_jacobi_rotation(lo ? b[0] : dpart, lo ? dpart : b[0], apq, c, s, t_);
        // s signed for this lane's side: its column update is b' = c b - ss partner; a row
        // pair is updated with the ss of the lane that owns its lower row, either side.
        const T ss = lo ? s : -s, tt = lo ? t_ : -t_;
        T nb[N], nv[N];
#pragma unroll
        for (int x = 2; x < N; x += 2) {
            const int src = bl_tab<N>().lane[t][x / 2];  // rows j^L(x), j^L(x)^m: its rotation
            const T cr = bl_shfl_xor(c, src), sr = bl_shfl_xor(ss, src);
            const T px = bl_shfl_xor(b[x + 1], m), py = bl_shfl_xor(b[x], m);
            const T bk = c * b[x] - ss * px, bk2 = c * b[x + 1] - ss * py;  // A P (columns)
            nb[x] = cr * bk - sr * bk2;                                      // P^T (A P) (rows)
            nb[x + 1] = cr * bk2 + sr * bk;
            if (vec) {
                nv[x] = cr * v[x] - sr * v[x + 1];  // V P: this lane's row
                nv[x + 1] = cr * v[x + 1] + sr * v[x];
            }
        }
        // The pair's own 2x2 block: the diagonal by the accurate update, a_pq' = 0.
        nb[0] = b[0] - tt * apq;
        nb[1] = skip ? b[1] : T(0);
#pragma unroll
        for (int x = 0; x < N; ++x) b[x] = nb[bl_mul_alpha<N>(x)];  // relabel for round t+1
        if (vec) {
            nv[0] = c * v[0] - ss * v[1];
            nv[1] = c * v[1] + ss * v[0];
#pragma unroll
            for (int x = 0; x < N; ++x) v[x] = nv[bl_mul_alpha<N>(x)];
        }
    }
}

// Every pair of this lane's matrix negligible? (The lower lane tests its copy, the one the
// sweep uses; the matrix's N lanes are an N-aligned group.)
template <typename T, int N> __device__ __forceinline__ bool bl_jacobi_converged(const T (&b)[N], int j) {
    bool ok = true;
#pragma unroll
    for (int k = 1; k < N; ++k) {
        const T dk = bl_shfl_xor(b[0], k);
        if ((j & bl_hibit(k)) == 0 && !bl_jacobi_negligible(b[0], dk, b[k])) ok = false;
    }
    return (__ballot_sync(0xffffffffu, !ok) & bl_group_mask(N)) == 0;
}

// Where a thread of a warp kernel stands: BL_EIGH_WARPS warps a block, a group of N
// lanes a matrix (32 / N a warp), lane j of its group; matrix b of the call, valid when
// within this launch's (an invalid group runs on with zeros: its shuffles need every lane).
template <int N> struct BlWarpLane {
    int lane, warp, grp, j;
    bool valid;
    bl_i64 b;
    __device__ explicit BlWarpLane(const EighArgs& p) {
        lane = threadIdx.x & 31;
        warp = threadIdx.x >> 5;
        grp = lane / N;
        j = lane & (N - 1);
        const int local = (blockIdx.x * BL_EIGH_WARPS + warp) * (32 / N) + grp;
        valid = local < p.nmat;
        b = (bl_i64)p.b0 + local;
    }
};

// The warp kernels' input and output, a group of N lanes a matrix (lane j of the group).
// Reads the named triangle of matrix b, mirrored, into sm (row-major, leading dimension
// N + 1) along the input's faster axis, and returns the exponent the matrix is scaled by
// (bl_scale_exp over the group; bad: non-finite input). Eight loads a lane in flight
// before their stores (one at a time, the load's latency was 14% of `warp-bisect`'s stall
// samples at 32 x 32). Ends with a __syncwarp.
template <typename T, int N>
__device__ __forceinline__ int bl_warp_read_sym(const EighArgs& p, bl_i64 b, bool valid, int j, T* sm, bool& bad) {
    constexpr int LD = N + 1, U = 8;
    const int n = p.n, nn = n * n;
    T mx = T(0);
    if (valid) {
        const T* ap = reinterpret_cast<const T*>(p.a) + b * p.a_bs;
        const bool rows_outer = (p.a_rs < 0 ? -p.a_rs : p.a_rs) >= (p.a_cs < 0 ? -p.a_cs : p.a_cs);
        for (int base = j; base < nn; base += U * N) {
            T x[U];
            int at[U], mirror[U];  // (r, c) and (c, r) in sm; -1: outside the named triangle
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int idx = base + u * N, o = idx / n, in = idx - o * n;
                const int r = rows_outer ? o : in, c = rows_outer ? in : o;
                const bool take = idx < nn && (p.lower ? r >= c : r <= c);
                x[u] = take ? ap[r * p.a_rs + c * p.a_cs] : T(0);
                at[u] = take ? r * LD + c : -1;
                mirror[u] = c * LD + r;
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                if (at[u] < 0) continue;
                sm[at[u]] = x[u];
                sm[mirror[u]] = x[u];
                const T f = bl_absflag(x[u]);
                mx = f > mx ? f : mx;
            }
        }
    }
#pragma unroll
    for (int o = 1; o < N; o <<= 1) {
        const T y = bl_shfl_xor(mx, o);
        mx = y > mx ? y : mx;
    }
    const int es = bl_scale_exp(mx, bad);
    __syncwarp();
    return es;
}

// Writes V's column r as scale[c] times column c = perm[r] of Z (sm, leading dimension
// N + 1), every entry NaN for bad input; along the output's faster axis.
template <typename T, int N>
__device__ __forceinline__ void bl_warp_write_vectors(const EighArgs& p, bl_i64 b, int j, const T* sm, const int* perm,
                                                      const T* scale, bool bad) {
    constexpr int LD = N + 1;
    const int n = p.n, nn = n * n;
    T* vp = reinterpret_cast<T*>(p.v) + b * p.v_bs;
    const bool rows_outer = (p.v_rs < 0 ? -p.v_rs : p.v_rs) >= (p.v_cs < 0 ? -p.v_cs : p.v_cs);
    for (int idx = j; idx < nn; idx += N) {
        const int o = idx / n, in = idx - o * n;
        const int i = rows_outer ? o : in, r = rows_outer ? in : o;
        const int c = perm[r];
        vp[i * p.v_rs + r * p.v_cs] = bad ? BlT<T>::nan() : scale[c] * sm[i * LD + c];
    }
}

template <typename T, int N> __device__ void bl_eigh_warp(const EighArgs& p) {
    constexpr int MPW = 32 / N, LD = N + 1;
    __shared__ T s_mat[BL_EIGH_WARPS][MPW * N * LD];  // A in, then V out, staged
    __shared__ T s_sign[BL_EIGH_WARPS][32];
    __shared__ int s_perm[BL_EIGH_WARPS][32];
    const BlWarpLane<N> at(p);
    const int warp = at.warp, grp = at.grp, j = at.j, n = p.n;
    const bool valid = at.valid, vec = p.v != nullptr;
    const bl_i64 b = at.b;
    T* sm = s_mat[warp] + grp * N * LD;
    T* sign = s_sign[warp] + grp * N;
    int* perm = s_perm[warp] + grp * N;

    bool bad;
    const int es = bl_warp_read_sym<T, N>(p, b, valid, j, sm, bad);
    T bv[N], v[N];
#pragma unroll
    for (int k = 0; k < N; ++k) {
        const int r = j ^ k;
        T x = (valid && !bad && r < n && j < n) ? bl_scale2(sm[r * LD + j], -es) : T(0);
        // Subnormal once scaled: zero, as the block kernel.
        bv[k] = BlT<T>::abs_(x) < BlT<T>::tiny() ? T(0) : x;
        v[k] = k == 0 ? T(1) : T(0);
    }

    int sweeps = 0;
    bool conv;
    for (int it = 0;; ++it) {
        conv = bl_jacobi_converged<T, N>(bv, j);
        if (__all_sync(0xffffffffu, conv) || it == BL_EIGH_WARP_SWEEPS) break;
        sweeps += conv ? 0 : 1;  // a converged matrix rides along unchanged (nothing rotates)
        bl_jacobi_sweep<T, N>(bv, v, j, vec);
    }

    // Rank among the n real indices, ascending, ties by index (a stable order).
    const T lam = bv[0];
    int rank = 0;
#pragma unroll
    for (int k = 1; k < N; ++k) {
        const T o = bl_shfl_xor(lam, k);
        const int oj = j ^ k;
        rank += (oj < n && (o < lam || (o == lam && oj < j))) ? 1 : 0;
    }
    const T w = bl_scale2(lam, es);
    const bool over = j < n && bl_beyond_range(w);
    const bool any_over = (__ballot_sync(0xffffffffu, over) & bl_group_mask(N)) != 0;
    __syncwarp();
    if (vec) {
#pragma unroll
        for (int k = 0; k < N; ++k) sm[j * LD + (j ^ k)] = v[k];  // V row-major: row j
    }
    __syncwarp();
    T* wp = reinterpret_cast<T*>(p.w) + b * p.w_bs;
    if (valid && j < n) {
        wp[rank * p.w_cs] = bad ? BlT<T>::nan() : w;
        if (vec) {  // column j: its largest component (the first of equals) positive
            T big = T(-1), sg = T(1);
            for (int i = 0; i < n; ++i) {
                const T x = BlT<T>::abs_(sm[i * LD + j]);
                if (x > big) {
                    big = x;
                    sg = sm[i * LD + j] < T(0) ? T(-1) : T(1);
                }
            }
            sign[j] = sg;
            perm[rank] = j;
        }
        if (j == 0 && p.info)
            p.info[b] = bad ? BL_INFO_NONFINITE
                            : ((unsigned)sweeps << 16) | (conv ? 0u : BL_INFO_NOT_CONVERGED) |
                                  (any_over ? BL_INFO_OVERFLOW : 0u);
    }
    if (!vec) return;  // uniform: a kernel argument
    __syncwarp();
    if (!valid) return;
    bl_warp_write_vectors<T, N>(p, b, j, sm, perm, sign, bad);
}

// ---------------------------------------------------------------------------------------
// Symmetric eigendecomposition for n <= 32, a group of N lanes a matrix (32/N matrices a
// warp, N = 8, 16, 32, the padded size): Householder tridiagonalisation in registers, then
// either tql2 (`warp-ql`, eigh_wql_<t>_n<N>: the block kernel's implicit QL) or the block
// kernel's fast path a lane a value (`warp-bisect`, eigh_wbis_<t>_n<N>: bl_wql_fast;
// tql2 where it declines). Two-sided Jacobi (`warp`) spends about 280 instructions a lane
// a round over 6-9 sweeps at n = 32; the reduction and Q cost about 3 n^2 a lane, tql2
// about 25 a rotation of its serial chain, bisection about 12 a Sturm step of n, 25-50
// steps a value. Measured on an H100 (docs/results/h100/2026-12-05-eigh-warp-bisect,
// 2026-12-05-eigh-bisect-bracket): float32 eigh at 32 0.263 ms (`warp` 0.432, `warp-ql`
// 0.540: one lane's QL chain sets its pace); routing in cuda/eigh.rs `preference`.
// - Lane j holds row j of A (a[N]) and of Q (z[N]) in registers. Step k (xSYTD2, as the
//   block kernel) forms the reflector of column k from the lanes' entries there, broadcasts
//   v and then w = p - (tau/2)(p.v) v through shared memory (16-byte loads), and every lane
//   updates its row of A22 -= v w^T + w v^T and of Q := Q H_k (Q accumulated forwards, so
//   no reflector is kept). v and w are zero in columns <= k, so a step's products start at
//   the multiple of 8 below k + 1 (a compile-time bound: one copy of the step per 8
//   columns) and need no mask; padding rows and columns (n < N) stay zero.
// - tql2: lane 0 of the group runs the serial chain (d, e in shared memory) and logs each
//   sweep's rotations; every lane then applies them to its row of Z = Q (in shared memory,
//   leading dimension N + 1: a lane's row, conflict-free). Groups of a warp iterate apart
//   (group-masked syncs).
// - The fast path (`warp-bisect`): lane j finds eigenvalue j by bisection and its vector
//   of T by twisted factorisations (column j of X in shared memory), the group makes close
//   values' vectors orthonormal (bl_tri_lowdin, a group of lanes as its team), and lane j
//   forms row j of V = Q X from its row of Q in registers. Where it declines (T diagonal,
//   values that coincide) tql2 takes the matrix; values alone are bisection's.
// Then the eigenvalues ascending (a stable rank sort), Z's columns renormalised after
// rotations, each eigenvector's largest component positive, the scaling undone, as the
// block kernel. info: bit 0 non-finite input (every output NaN), bit 1 not converged, bit 3
// an eigenvalue beyond the range once unscaled, bits 16.. the QL iterations (the fast path
// and values alone by bisection: the most bisection steps of a value).
// Dynamic shared memory, a warp's part: 32 (N + 1) elements of Z (A staged there first;
// E of the fast path's orthogonalisation), then per group v, w, d, e, rc, rs, the columns'
// scale and sign (N each); `warp-bisect` adds per group X0 and X1 (N x N each), b2 and the
// values (N each); then N ints a group (the order), and for `warp-bisect` 8 more (steps,
// flags).

template <typename T, int N, bool FAST> __host__ __device__ constexpr int bl_wql_warp_elems() {
    return 32 * (N + 1) + (32 / N) * (7 * N + (FAST ? 2 * N * N + 2 * N : 0));
}
template <int N, bool FAST> __host__ __device__ constexpr int bl_wql_warp_ints() { return 32 + (FAST ? (32 / N) * 8 : 0); }

// One step k of the reduction, for k + 1 in [C0, C0 + 8): columns below C0 are final.
template <typename T, int N, int C0>
__device__ __forceinline__ void bl_wql_step(T (&a)[N], T (&z)[N], int k, int j, T* vb, T* wb, T* d, T* e, bool vec) {
    constexpr int VN = BlVec<T>::N;
    T xk = T(0);  // this lane's entry in column k (k >= C0 - 1)
#pragma unroll
    for (int c = C0 > 0 ? C0 - 1 : 0; c < C0 + 8 && c < N; ++c)
        if (c == k) xk = a[c];
    const T below = j > k + 1 ? xk : T(0);
    T ss = below * below;
#pragma unroll
    for (int o = 1; o < N; o <<= 1) ss += bl_shfl_xor(ss, o);  // the same bits in every lane
    const T alpha = __shfl_sync(0xffffffffu, xk, k + 1, N);
    T beta, tau, scal;
    bl_householder(alpha, ss, beta, tau, scal);
    const T vj = j <= k ? T(0) : j == k + 1 ? T(1) : xk * scal;
    if (j == k) d[k] = xk;  // final since step k - 1
    if (j == k + 1) e[k] = beta;
    __syncwarp();  // every lane is done with the last step's v (its update of Q reads it)
    vb[j] = vj;
    __syncwarp();
    T s = T(0);  // (A22 v)_j; v is zero in columns <= k, so row j's stale column k counts 0
#pragma unroll
    for (int c = C0; c < N; c += VN) {
        T x[VN];
        BlVec<T>::ld(vb + c, x);
#pragma unroll
        for (int u = 0; u < VN; ++u) s += a[c + u] * x[u];
    }
    const T pj = j > k ? tau * s : T(0);
    T pv = pj * vj;
#pragma unroll
    for (int o = 1; o < N; o <<= 1) pv += bl_shfl_xor(pv, o);
    const T wj = pj - (T(0.5) * tau * pv) * vj;
    wb[j] = wj;
    __syncwarp();
    T q = T(0);
#pragma unroll
    for (int c = C0; c < N; c += VN) {
        T x[VN], y[VN];
        BlVec<T>::ld(vb + c, x);
        BlVec<T>::ld(wb + c, y);
#pragma unroll
        for (int u = 0; u < VN; ++u) {
            a[c + u] -= vj * y[u] + wj * x[u];
            q += z[c + u] * x[u];
        }
    }
    if (vec) {  // Q := Q (I - tau v v^T), this lane's row
        q *= tau;
#pragma unroll
        for (int c = C0; c < N; c += VN) {
            T x[VN];
            BlVec<T>::ld(vb + c, x);
#pragma unroll
            for (int u = 0; u < VN; ++u) z[c + u] -= q * x[u];
        }
    }
}

// tql2 on one group's tridiagonal (d, e): lane 0 of the group sweeps, every lane applies
// the sweep to its row of Z (sm, leading dimension N + 1). iters, conv: the iterations
// and whether it converged.
template <typename T, int N>
__device__ void bl_wql_tql2(T* d, T* e, T* rc, T* rs, T* sm, int j, int n, bool vec, int& iters, bool& conv) {
    constexpr int LD = N + 1;
    const unsigned gm = bl_group_mask(N);
    const T eps = BlT<T>::eps();
    const int max_iter = 30 * n + 30;
    T f = T(0), tst1 = T(0);
    for (int l = 0; l < n; ++l) {
        const int m = bl_ql_split(d, e, l, n, tst1);  // every lane alike (reads only)
        __syncwarp(gm);  // every lane has read d and e before lane 0 writes them
        while (m > l) {
            if (iters >= max_iter) {
                conv = false;
                break;
            }
            ++iters;
            if (j == 0) bl_ql_sweep(d, e, rc, rs, l, m, n, f);
            __syncwarp(gm);
            if (vec) bl_ql_apply(sm + j * LD, rc, rs, l, m);
            const bool stop = !(BlT<T>::abs_(e[l]) > eps * tst1);
            __syncwarp(gm);  // rc, rs and e read before lane 0 writes them again
            if (stop) break;
        }
        if (j == 0) {
            d[l] += f;
            e[l] = T(0);
        }
        __syncwarp(gm);
    }
}

// `warp-bisect`'s fast path for one group's matrix: the vectors of its tridiagonal (d, e)
// by bl_eigh_vectors, a lane a value (X0 with leading dimension N, so that its rows load
// as 16-byte vectors; X1 N x N more; E over sm), then lane j's row of V = Q X from its row
// of Q (z) into sm (leading dimension N + 1), the columns normalised. Returns false (the
// same in every lane of the group) where it cannot vouch for the vectors (tql2 then takes
// the matrix). b2: N; msg: 8 ints (msg[0] the most steps).
template <typename T, int N>
__device__ __forceinline__ bool bl_wql_fast(const BlGroupTeam& tm, int n, const T* d, const T* e, const T (&z)[N], T* sm, T* X0,
                            T* b2, T* sig, int* msg) {
    constexpr int LD = N + 1;
    const int j = tm.lane;
    // The columns' inverse norms in b2 (spent by then).
    const T* X = bl_eigh_vectors(tm, d, e, b2, n, sig, X0, X0 + N * N, sm, N, b2, msg);
    if (!X) return false;
    T y[N];
#pragma unroll
    for (int c = 0; c < N; ++c) y[c] = T(0);
    // Row i of X in 16-byte vectors (its columns from n on are stale: y's there go unused).
    constexpr int VN = BlVec<T>::N;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        if (i < n) {
            const T zi = z[i];
#pragma unroll
            for (int c = 0; c < N; c += VN) {
                T x[VN];
                BlVec<T>::ld(X + i * N + c, x);
#pragma unroll
                for (int u = 0; u < VN; ++u) y[c + u] += zi * x[u];
            }
        }
    }
#pragma unroll
    for (int c = 0; c < N; ++c)
        if (c < n) sm[j * LD + c] = y[c] * b2[c];  // E in sm was read before lowdin's last sync
    return true;
}

template <typename T, int N, bool FAST> __device__ void bl_eigh_wql(const EighArgs& p) {
    extern __shared__ __align__(16) unsigned char bl_smem[];
    constexpr int LD = N + 1;
    const BlWarpLane<N> at(p);
    const int warp = at.warp, grp = at.grp, j = at.j, n = p.n;
    const bool valid = at.valid, vec = p.v != nullptr;
    const bl_i64 b = at.b;
    constexpr int ELEMS = bl_wql_warp_elems<T, N, FAST>(), INTS = bl_wql_warp_ints<N, FAST>();
    T* wbase = reinterpret_cast<T*>(bl_smem + (size_t)warp * (ELEMS * sizeof(T) + INTS * sizeof(int)));
    T* gv = wbase + 32 * LD + grp * 7 * N;  // v and w first: 16-byte aligned (N >= 8)
    T *vb = gv, *wb = gv + N, *d = gv + 2 * N, *e = gv + 3 * N, *rc = gv + 4 * N, *rs = gv + 5 * N, *sg = gv + 6 * N;
    T* sm = wbase + grp * N * LD;
    int* perm = reinterpret_cast<int*>(wbase + ELEMS) + grp * N;

    bool bad;
    const int es = bl_warp_read_sym<T, N>(p, b, valid, j, sm, bad);
    T a[N], z[N];
#pragma unroll
    for (int c = 0; c < N; ++c) {
        T x = (valid && !bad && j < n && c < n) ? bl_scale2(sm[j * LD + c], -es) : T(0);
        a[c] = BlT<T>::abs_(x) < BlT<T>::tiny() ? T(0) : x;  // subnormal once scaled: zero
        z[c] = c == j ? T(1) : T(0);
    }
    for (int k = 0; k < n - 1; ++k) {  // n is the launch's: uniform
        const int c0 = (k + 1) & ~7;
        if (c0 == 0) {
            bl_wql_step<T, N, 0>(a, z, k, j, vb, wb, d, e, vec);
        } else if constexpr (N > 8) {
            if (c0 == 8) {
                bl_wql_step<T, N, 8>(a, z, k, j, vb, wb, d, e, vec);
            } else if constexpr (N > 16) {
                if (c0 == 16) bl_wql_step<T, N, 16>(a, z, k, j, vb, wb, d, e, vec);
                else bl_wql_step<T, N, 24>(a, z, k, j, vb, wb, d, e, vec);
            }
        }
    }
    {
        T last = T(0);
#pragma unroll
        for (int c = 0; c < N; ++c)
            if (c == n - 1) last = a[c];
        if (j == n - 1) {
            d[n - 1] = last;
            e[n - 1] = T(0);
        }
    }
    __syncwarp();
    const unsigned gm = bl_group_mask(N);
    int iters = 0;
    bool conv = true, fast = false;
    const T* vals = d;  // the eigenvalues, unsorted
    if constexpr (FAST) {
        // Values by bisection, a lane a value, and vectors by twisted factorisations
        // (bl_wql_fast); values alone to LAPACK's absolute tolerance.
        const BlGroupTeam tm{j, N};
        T* X0 = wbase + 32 * LD + (32 / N) * 7 * N + grp * (2 * N * N + 2 * N);
        T *b2 = X0 + 2 * N * N, *sig = b2 + N;
        int* msg = reinterpret_cast<int*>(wbase + ELEMS) + 32 + grp * 8;
        T pivmin;
        fast = vec ? bl_wql_fast<T, N>(tm, n, d, e, z, sm, X0, b2, sig, msg)
                   : (bl_eigh_bisect(tm, d, e, b2, n, sig, msg, false, pivmin), true);
        if (fast) {
            iters = msg[0];
            vals = sig;
        }
        tm.sync();
    }
    if (!fast) {
        if (vec) {
#pragma unroll
            for (int c = 0; c < N; ++c) sm[j * LD + c] = z[c];  // Z = Q, row j
        }
        __syncwarp(gm);
        bl_wql_tql2<T, N>(d, e, rc, rs, sm, j, n, vec, iters, conv);
    }

    // Rank among the n eigenvalues, ascending, ties by index (a stable order); Z's columns
    // renormalised after rotations, their largest component (the first of equals) positive.
    if (j < n) {
        perm[bl_rank(vals, n, j)] = j;
        if (vec) sg[j] = bl_column_scale(sm, LD, n, j, !fast && iters > 0);
    }
    const T wj = j < n ? bl_scale2(vals[j], es) : T(0);
    const bool any_over = (__ballot_sync(0xffffffffu, j < n && bl_beyond_range(wj)) & bl_group_mask(N)) != 0;
    __syncwarp();
    if (!valid) return;  // no warp-wide operation below
    T* wp = reinterpret_cast<T*>(p.w) + b * p.w_bs;
    if (j < n) wp[j * p.w_cs] = bad ? BlT<T>::nan() : bl_scale2(vals[perm[j]], es);
    if (j == 0 && p.info)
        p.info[b] = bad ? BL_INFO_NONFINITE
                        : ((unsigned)(iters > 0xffff ? 0xffff : iters) << 16) | (conv ? 0u : BL_INFO_NOT_CONVERGED) |
                              (any_over ? BL_INFO_OVERFLOW : 0u);
    if (!vec) return;
    bl_warp_write_vectors<T, N>(p, b, j, sm, perm, sg, bad);
}


#define BL_EIGH_BLOCK(TN, T)                                                                \
    extern "C" __global__ void __launch_bounds__(512) eigh_block_##TN(EighArgs p) { bl_eigh_block<T>(p); }
#define BL_EIGH_WARP(TN, T, N)                                                                \
    extern "C" __global__ void __launch_bounds__(32 * BL_EIGH_WARPS) eigh_warp_##TN##_n##N(EighArgs p) { \
        bl_eigh_warp<T, N>(p);                                                                \
    }
#define BL_EIGH_WQL(TN, T, N)                                                                 \
    extern "C" __global__ void __launch_bounds__(32 * BL_EIGH_WARPS) eigh_wql_##TN##_n##N(EighArgs p) { \
        bl_eigh_wql<T, N, false>(p);                                                          \
    }
#define BL_EIGH_WBIS(TN, T, N)                                                                \
    extern "C" __global__ void __launch_bounds__(32 * BL_EIGH_WARPS) eigh_wbis_##TN##_n##N(EighArgs p) { \
        bl_eigh_wql<T, N, true>(p);                                                           \
    }
