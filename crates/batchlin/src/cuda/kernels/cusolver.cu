// The kernels around a cuSOLVER eigh (cuda/cusolver.rs): `cus_eigh_scale_<t>` and
// `cus_eigh_pack_<t>` before it, `cus_eigh_unpack_<t>` after it, each spread over the
// grid (tiles of a matrix by the batch: one block a matrix left one 1024x1024 matrix's
// strided passes to one SM). cuSOLVER takes one dense column-major matrix a call and
// knows nothing of batchlin's conventions, so scale finds each matrix's max|a| over its
// named triangle (an atomic max of the value's bits, non-negative), pack reads the
// triangle through the caller's strides into a full symmetric column-major work matrix,
// scaled by a power of two so that max|a| lies in [0.5, 1) (as every backend scales),
// and replaces a matrix holding NaN/Inf by the identity (so that the solver runs on
// finite data); unpack undoes the scaling, applies the sign convention (each
// eigenvector's largest component positive, the first such on ties), writes the
// caller's strided outputs, NaN for the non-finite matrices, and the info words.
// Tiles go through shared memory, so that reads and writes both follow the faster axis
// of their own layout.
// With eigenvectors, `cus_eigh_check_<t>` tests the solver's output before unpack: the
// batched solver (XsyevBatched, CUDA 13.0) returned eigenvectors 2e-3 to 4e-3 from
// orthogonal for matrices of ones (float32 n = 17, float64 n = 97, on an H100), so each
// matrix whose vectors miss the accuracy floor is marked for `block` to compute again.
// info: bit 0 non-finite input, bit 1 cuSOLVER's info > 0 (not converged), bit 3 an
// eigenvalue beyond the type's range once unscaled; no iteration count (cuSOLVER gives
// none).

// Mirrors `CusEighArgs` in crates/batchlin/src/cuda/cusolver.rs.
struct CusEighArgs {
    const void* a;
    bl_i64 a_bs, a_rs, a_cs;
    void* w;
    bl_i64 w_bs, w_cs;
    void* v;  // NULL: eigenvalues alone
    bl_i64 v_bs, v_rs, v_cs;
    unsigned int* info;
    void* work;      // chunk x n x n, column-major, the solver's A (then its Z)
    void* wwork;     // chunk x n, the solver's W
    int* scale;      // chunk: the power of two, or INT_MIN for a non-finite matrix
    unsigned long long* mx;  // chunk: max|a| a matrix as BlBits (zeroed before scale)
    const int* dinfo;  // chunk: the solver's info
    void* acopy;       // NULL, or chunk x n x n: pack's work matrix kept for the check
    double* probe;     // chunk x 8n: the check's Y = Z X and U = Z diag(w) X
    double* acc;       // chunk x 4: the check's sums and its blocks' counter (zeroed a chunk)
    unsigned int* redo;  // batch: set by the check where `block` must compute the vectors again
    int b0, n, lower;
};

#define BL_CUS_TILE 32      // pack's and unpack's tiles: 32 x 32, a block of 256 threads
#define BL_CUS_SCALE_TILE 64  // scale's: 64 x 64

// Whether (i, j) lies in the named triangle.
__device__ __forceinline__ bool bl_cus_named(const CusEighArgs& p, int i, int j) { return p.lower ? i >= j : i <= j; }

// Each matrix's max bl_absflag over its named triangle into mx (its bits; zeroed before),
// a 64 x 64 tile a block (blockIdx.x over the tiles, y over the chunk), reading along
// the input's faster axis.
template <typename T> __device__ void bl_cus_eigh_scale(const CusEighArgs& p) {
    __shared__ T red[32];
    const int n = p.n, tid = threadIdx.x, tn = (n + BL_CUS_SCALE_TILE - 1) / BL_CUS_SCALE_TILE;
    const int ti = blockIdx.x / tn, tj = blockIdx.x - ti * tn;
    const int i0 = ti * BL_CUS_SCALE_TILE, j0 = tj * BL_CUS_SCALE_TILE;
    // A tile wholly outside the triangle reads nothing (uniform: the whole block returns).
    if (p.lower ? i0 + BL_CUS_SCALE_TILE - 1 < j0 : j0 + BL_CUS_SCALE_TILE - 1 < i0) return;
    const bl_i64 b = (bl_i64)p.b0 + blockIdx.y;
    const T* ap = reinterpret_cast<const T*>(p.a) + b * p.a_bs;
    const bool along_i = (p.a_rs < 0 ? -p.a_rs : p.a_rs) < (p.a_cs < 0 ? -p.a_cs : p.a_cs);
    T mx = T(0);
    for (int k = tid; k < BL_CUS_SCALE_TILE * BL_CUS_SCALE_TILE; k += blockDim.x) {
        const int f = k % BL_CUS_SCALE_TILE, s = k / BL_CUS_SCALE_TILE;
        const int i = i0 + (along_i ? f : s), j = j0 + (along_i ? s : f);
        if (i < n && j < n && bl_cus_named(p, i, j)) {
            const T x = bl_absflag(ap[i * p.a_rs + j * p.a_cs]);
            mx = x > mx ? x : mx;
        }
    }
    mx = bl_max_all(mx, red);
    if (tid == 0 && mx > T(0)) atomicMax(p.mx + blockIdx.y, BlBits<T>::to(mx));
}

// The full symmetric column-major work matrix, a 32 x 32 tile of it a block: its entries
// read from the named triangle (directly or mirrored) along the input's faster axis
// into shared memory, written down the work matrix's columns. The first tile of each
// matrix records its exponent in scale (INT_MIN: non-finite, the identity written).
template <typename T> __device__ void bl_cus_eigh_pack(const CusEighArgs& p) {
    __shared__ T tile[BL_CUS_TILE][BL_CUS_TILE + 1];
    const int n = p.n, tid = threadIdx.x, tn = (n + BL_CUS_TILE - 1) / BL_CUS_TILE;
    const int ti = blockIdx.x / tn, tj = blockIdx.x - ti * tn;
    const int i0 = ti * BL_CUS_TILE, j0 = tj * BL_CUS_TILE;
    const bl_i64 b = (bl_i64)p.b0 + blockIdx.y;
    const T* ap = reinterpret_cast<const T*>(p.a) + b * p.a_bs;
    T* z = reinterpret_cast<T*>(p.work) + (bl_i64)blockIdx.y * n * n;
    bool bad;
    const int es = bl_scale_exp(BlBits<T>::from(p.mx[blockIdx.y]), bad);
    if (blockIdx.x == 0 && tid == 0) p.scale[blockIdx.y] = bad ? (int)0x80000000 : es;
    // Off the diagonal a tile is all read directly or all mirrored: along the work
    // matrix's rows i where the source's stride along i is the smaller.
    const bool direct = bl_cus_named(p, i0 + BL_CUS_TILE - 1, j0) && bl_cus_named(p, i0, j0 + BL_CUS_TILE - 1);
    const bl_i64 si = direct ? p.a_rs : p.a_cs, sj = direct ? p.a_cs : p.a_rs;
    const bool along_i = (si < 0 ? -si : si) < (sj < 0 ? -sj : sj);
    for (int k = tid; k < BL_CUS_TILE * BL_CUS_TILE; k += blockDim.x) {
        const int f = k % BL_CUS_TILE, s = k / BL_CUS_TILE;
        const int r = along_i ? f : s, c = along_i ? s : f, i = i0 + r, j = j0 + c;
        T x = T(0);
        if (i < n && j < n) {
            if (bad) {
                x = i == j ? T(1) : T(0);
            } else {
                x = bl_scale2(bl_cus_named(p, i, j) ? ap[i * p.a_rs + j * p.a_cs] : ap[j * p.a_rs + i * p.a_cs], -es);
                // Subnormal (in the input or after the scaling): zero, as every backend does.
                if (BlT<T>::abs_(x) < BlT<T>::tiny()) x = T(0);
            }
        }
        tile[r][c] = x;
    }
    __syncthreads();
    for (int k = tid; k < BL_CUS_TILE * BL_CUS_TILE; k += blockDim.x) {
        const int r = k % BL_CUS_TILE, c = k / BL_CUS_TILE, i = i0 + r, j = j0 + c;
        if (i < n && j < n) {
            z[(bl_i64)j * n + i] = tile[r][c];
            if (p.acopy) reinterpret_cast<T*>(p.acopy)[(bl_i64)blockIdx.y * n * n + (bl_i64)j * n + i] = tile[r][c];
        }
    }
}

// 32 columns of one matrix a block (blockIdx.x over the column tiles, y over the chunk):
// their eigenvalues, their signs (a warp a column, down the work matrix's contiguous
// columns), then the columns written a 32 x 32 tile at a time along the output's faster
// axis; the first block writes the info word.
template <typename T> __device__ void bl_cus_eigh_unpack(const CusEighArgs& p) {
    __shared__ T tile[BL_CUS_TILE][BL_CUS_TILE + 1];
    __shared__ T sign[BL_CUS_TILE];
    const int n = p.n, tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, wid = tid >> 5, nw = nt >> 5;
    const int j0 = blockIdx.x * BL_CUS_TILE, nc = n - j0 < BL_CUS_TILE ? n - j0 : BL_CUS_TILE;
    const bl_i64 b = (bl_i64)p.b0 + blockIdx.y;
    const T* z = reinterpret_cast<const T*>(p.work) + (bl_i64)blockIdx.y * n * n;
    const T* wv = reinterpret_cast<const T*>(p.wwork) + (bl_i64)blockIdx.y * n;
    T* wp = reinterpret_cast<T*>(p.w) + b * p.w_bs;
    T* vp = p.v ? reinterpret_cast<T*>(p.v) + b * p.v_bs : nullptr;
    const int es = p.scale[blockIdx.y];
    const bool bad = es == (int)0x80000000;
    if (tid < nc) wp[(j0 + tid) * p.w_cs] = bad ? BlT<T>::nan() : bl_scale2(wv[j0 + tid], es);
    if (blockIdx.x == 0 && tid == 0 && p.info) {
        if (bad) {
            p.info[b] = BL_INFO_NONFINITE;
        } else {
            const T lo = bl_scale2(wv[0], es), hi = bl_scale2(wv[n - 1], es);
            const bool over = !(BlT<T>::abs_(lo) <= BlT<T>::huge() && BlT<T>::abs_(hi) <= BlT<T>::huge());
            p.info[b] = (p.dinfo[blockIdx.y] > 0 ? BL_INFO_NOT_CONVERGED : 0u) | (over ? BL_INFO_OVERFLOW : 0u);
        }
    }
    if (!vp) return;
    for (int c = wid; c < nc; c += nw) {
        const T lead = bl_warp_lead(z + (bl_i64)(j0 + c) * n, 1, n);
        if (lane == 0) sign[c] = bad ? BlT<T>::nan() : lead < T(0) ? T(-1) : T(1);
    }
    __syncthreads();
    const bool along_i = (p.v_rs < 0 ? -p.v_rs : p.v_rs) < (p.v_cs < 0 ? -p.v_cs : p.v_cs);
    for (int i0 = 0; i0 < n; i0 += BL_CUS_TILE) {
        for (int k = tid; k < BL_CUS_TILE * BL_CUS_TILE; k += nt) {
            const int r = k % BL_CUS_TILE, c = k / BL_CUS_TILE;
            if (i0 + r < n && c < nc) tile[r][c] = sign[c] * z[(bl_i64)(j0 + c) * n + i0 + r];
        }
        __syncthreads();
        for (int k = tid; k < BL_CUS_TILE * BL_CUS_TILE; k += nt) {
            const int f = k % BL_CUS_TILE, s = k / BL_CUS_TILE;
            const int r = along_i ? f : s, c = along_i ? s : f;
            if (i0 + r < n && c < nc) vp[(i0 + r) * p.v_rs + (j0 + c) * p.v_cs] = tile[r][c];
        }
        __syncthreads();  // the tile read before the next is written
    }
}

// The check's probes: BL_CUS_PROBES vectors of +-1 entries by a hash of (row, probe),
// the same in every call.
#define BL_CUS_PROBES 4
__device__ __forceinline__ double bl_cus_probe(int i, int k) {
    unsigned h = (unsigned)i * 0x9E3779B1u ^ (unsigned)(k + 1) * 0x85EBCA77u;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    return (h & 1u) ? 1.0 : -1.0;
}

// Whether the solver's Z (work, column-major) and W (wwork) of the scaled matrix A_s
// (acopy) hold its eigendecomposition to half the accuracy floor every backend keeps
// (docs/ARCHITECTURE.md "Numerics": ||Z^T Z - I||_F / sqrt(n) and ||A Z - Z W||_F /
// ||A||_F at most 2e-5 (float32) or 3.7e-14 (float64), the first allowed sqrt(n / 256)
// more above 256), estimated in double on BL_CUS_PROBES random sign vectors X, whose
// ||E X||_F^2 / ||X||_F^2 estimates ||E||_F^2 / n without the n^3 products: O(n^2) a
// matrix. Two launches, each a tile of BL_CUS_CHECK_ROWS rows (or columns) a block over
// the grid (blockIdx.x the tile, y the chunk), so that a few large matrices fill the GPU:
// probe (Y, U), then check (the sums, by atomics; the matrix's last block to finish
// decides). A miss, a NaN, or the solver's info > 0 sets redo[b]. Matrices with NaN/Inf
// input are left to unpack (their outputs are NaN).
#define BL_CUS_CHECK_ROWS 32

// Y = Z X and U = Z diag(w) X on a tile of rows: a lane a row (down Z's contiguous
// columns), the warps splitting the columns, their parts summed in shared memory.
template <typename T> __device__ void bl_cus_eigh_probe(const CusEighArgs& p) {
    __shared__ double part[8][2 * BL_CUS_PROBES][BL_CUS_CHECK_ROWS];
    const int n = p.n, tid = threadIdx.x, lane = tid & 31, wid = tid >> 5, nw = blockDim.x >> 5;
    if (p.scale[blockIdx.y] == (int)0x80000000) return;  // the whole block: non-finite input
    const T* z = reinterpret_cast<const T*>(p.work) + (bl_i64)blockIdx.y * n * n;
    const T* wv = reinterpret_cast<const T*>(p.wwork) + (bl_i64)blockIdx.y * n;
    double* Y = p.probe + (bl_i64)blockIdx.y * 2 * BL_CUS_PROBES * n;
    double* U = Y + BL_CUS_PROBES * n;
    const int i = blockIdx.x * BL_CUS_CHECK_ROWS + lane;
    double y[BL_CUS_PROBES] = {}, u[BL_CUS_PROBES] = {};
    if (i < n) {
        for (int j = wid; j < n; j += nw) {
            const double zij = z[(bl_i64)j * n + i], zw = zij * (double)wv[j];
#pragma unroll
            for (int k = 0; k < BL_CUS_PROBES; ++k) {
                const double x = bl_cus_probe(j, k);
                y[k] += zij * x;
                u[k] += zw * x;
            }
        }
    }
#pragma unroll
    for (int k = 0; k < BL_CUS_PROBES; ++k) {
        part[wid][k][lane] = y[k];
        part[wid][BL_CUS_PROBES + k][lane] = u[k];
    }
    __syncthreads();
    for (int t = tid; t < 2 * BL_CUS_PROBES * BL_CUS_CHECK_ROWS; t += blockDim.x) {
        const int k = t / BL_CUS_CHECK_ROWS, r = t - k * BL_CUS_CHECK_ROWS, row = blockIdx.x * BL_CUS_CHECK_ROWS + r;
        double s = 0.0;
        for (int w = 0; w < nw; ++w) s += part[w][k][r];
        if (row < n) {
            if (k < BL_CUS_PROBES) Y[row * BL_CUS_PROBES + k] = s;
            else U[row * BL_CUS_PROBES + k - BL_CUS_PROBES] = s;
        }
    }
}

// On the same tile: ||A_s Y - U||^2 over its rows (a lane a row of pack's symmetric copy,
// the warps splitting the columns), ||Z^T Y - X||^2 over its columns (a warp a column)
// and sum w^2 over its rows, added into acc (3 doubles and a counter a matrix, zeroed
// before); the matrix's last block compares them with the floor.
template <typename T> __device__ void bl_cus_eigh_check(const CusEighArgs& p) {
    __shared__ double part[8][BL_CUS_PROBES][BL_CUS_CHECK_ROWS];
    __shared__ double red[32];
    __shared__ bool last;
    const int n = p.n, tid = threadIdx.x, lane = tid & 31, wid = tid >> 5, nw = blockDim.x >> 5;
    if (p.scale[blockIdx.y] == (int)0x80000000) return;
    const T* z = reinterpret_cast<const T*>(p.work) + (bl_i64)blockIdx.y * n * n;
    const T* as = reinterpret_cast<const T*>(p.acopy) + (bl_i64)blockIdx.y * n * n;
    const T* wv = reinterpret_cast<const T*>(p.wwork) + (bl_i64)blockIdx.y * n;
    const double* Y = p.probe + (bl_i64)blockIdx.y * 2 * BL_CUS_PROBES * n;
    const double* U = Y + BL_CUS_PROBES * n;
    const int r0 = blockIdx.x * BL_CUS_CHECK_ROWS, i = r0 + lane;
    double t[BL_CUS_PROBES] = {};
    if (i < n) {
        for (int j = wid; j < n; j += nw) {
            const double x = as[(bl_i64)j * n + i];
#pragma unroll
            for (int k = 0; k < BL_CUS_PROBES; ++k) t[k] += x * Y[j * BL_CUS_PROBES + k];
        }
    }
#pragma unroll
    for (int k = 0; k < BL_CUS_PROBES; ++k) part[wid][k][lane] = t[k];
    // Z^T Y - X on the tile's columns, a warp a column.
    double orth = 0.0;
    for (int c = wid; c < BL_CUS_CHECK_ROWS && r0 + c < n; c += nw) {
        const int j = r0 + c;
        double g[BL_CUS_PROBES] = {};
        for (int r = lane; r < n; r += 32) {
            const double zrj = z[(bl_i64)j * n + r];
#pragma unroll
            for (int k = 0; k < BL_CUS_PROBES; ++k) g[k] += zrj * Y[r * BL_CUS_PROBES + k];
        }
#pragma unroll
        for (int k = 0; k < BL_CUS_PROBES; ++k) {
            const double d = bl_warp_sum(g[k]) - bl_cus_probe(j, k);
            if (lane == 0) orth += d * d;
        }
    }
    __syncthreads();
    double res = 0.0, wf = 0.0;
    for (int q = tid; q < BL_CUS_PROBES * BL_CUS_CHECK_ROWS; q += blockDim.x) {
        const int k = q / BL_CUS_CHECK_ROWS, r = q - k * BL_CUS_CHECK_ROWS, row = r0 + r;
        if (row >= n) continue;
        double s = 0.0;
        for (int w = 0; w < nw; ++w) s += part[w][k][r];
        const double d = s - U[row * BL_CUS_PROBES + k];
        res += d * d;
        if (k == 0) wf += (double)wv[row] * (double)wv[row];
    }
    orth = bl_sum_all(orth, red);
    res = bl_sum_all(res, red);
    wf = bl_sum_all(wf, red);
    double* acc = p.acc + (bl_i64)blockIdx.y * 4;
    if (tid == 0) {
        atomicAdd(acc, orth);
        atomicAdd(acc + 1, res);
        atomicAdd(acc + 2, wf);
        __threadfence();
        last = atomicAdd(reinterpret_cast<unsigned int*>(acc + 3), 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (tid == 0 && last) {
        __threadfence();
        const double o = atomicAdd(acc, 0.0), rs = atomicAdd(acc + 1, 0.0), w2 = atomicAdd(acc + 2, 0.0);
        const double np = (double)BL_CUS_PROBES * n, tol = 84.0 * (double)BlT<T>::eps();
        const double grow = n > 256 ? sqrt(n / 256.0) : 1.0;
        const bool ok = sqrt(o / np) <= tol * grow && sqrt(rs / np) <= tol * sqrt(w2 / n);
        if (!ok || p.dinfo[blockIdx.y] > 0) p.redo[(bl_i64)p.b0 + blockIdx.y] = 1u;
    }
}

#define BL_CUS_EIGH_SCALE(TN, T)                                                                     \
    extern "C" __global__ void __launch_bounds__(256) cus_eigh_scale_##TN(CusEighArgs p) { bl_cus_eigh_scale<T>(p); }
#define BL_CUS_EIGH_PACK(TN, T)                                                                      \
    extern "C" __global__ void __launch_bounds__(256) cus_eigh_pack_##TN(CusEighArgs p) { bl_cus_eigh_pack<T>(p); }
#define BL_CUS_EIGH_UNPACK(TN, T)                                                                    \
    extern "C" __global__ void __launch_bounds__(256) cus_eigh_unpack_##TN(CusEighArgs p) { bl_cus_eigh_unpack<T>(p); }
#define BL_CUS_EIGH_PROBE(TN, T)                                                                     \
    extern "C" __global__ void __launch_bounds__(256) cus_eigh_probe_##TN(CusEighArgs p) { bl_cus_eigh_probe<T>(p); }
#define BL_CUS_EIGH_CHECK(TN, T)                                                                     \
    extern "C" __global__ void __launch_bounds__(256) cus_eigh_check_##TN(CusEighArgs p) { bl_cus_eigh_check<T>(p); }
