// Experiment: symmetric eigendecomposition of a batch of small matrices (n <= 32), one
// warp a matrix (32/N matrices a warp for N = 8, 16), the matrix in registers: cyclic
// two-sided Jacobi with a parallel ordering. Standalone; not the library's kernel.
// Build: nvcc -O3 -arch=sm_90 -o eigh_warp gpu-lab/eigh_warp.cu   (add -Xptxas -v for regs)
// Run:   ./eigh_warp [batch=4096] [f32|f64]   (exit status 1 when any case fails)
//
// Design (why, not what):
// - Padded size N = 8, 16 or 32 (a power of two >= n); padding rows/columns are zero and
//   never rotate (their a_pq is exactly 0), so odd n needs no dummy-pair logic.
// - Ordering: round m = 1..N-1 pairs index i with i^m. Each round is a perfect matching and
//   a sweep meets every pair once (a cyclic ordering). Its point is the layout below:
// - Lane j (j = lane mod N) keeps column j of A as b[k] = A[j^k][j] (the "XOR layout") and
//   ROW j of V as v[k] = V[j][j^k]. Then in round m, for every lane: its diagonal is b[0],
//   its pair's a_pq is b[m], the partner lane is j^m, and the rows (and V columns) that
//   round m rotates together are the register pairs (k, k^m) -- all compile-time indices
//   once the rounds are unrolled, so nothing leaves registers and no data is permuted
//   between rounds (a round-robin ordering would need a column move a round: ~N more
//   shuffles). The rotation of register pair (k, k^m) is the one lane j^k computed.
// - A round costs a lane 2(N/2-1) shuffles for the partner's column (the column rotation)
//   plus 2(N/2-1) for the (c, s) of the other pairs (the row rotations of A and the
//   column rotations of V, which share them: V kept by rows needs no shuffle of its own),
//   and 12 FMA-class operations a register pair. Both lanes of a pair compute (c, s)
//   themselves from the same three numbers (bitwise equal results, no broadcast); a_pq is
//   taken from the lower lane because the two stored copies A[p][q], A[q][p] drift apart by
//   rounding (each lane rounds its own column), and the lanes must agree on the rotation
//   and on the skip test.
// - Convergence: a pair is skipped when |a_pq| <= eps max(sqrt|a_pp a_qq|, eps) (relative,
//   the Demmel-Veselic test, floored at eps^2 of max|a| ~ 1 so rounding noise in a null
//   space is not chased). Before each sweep, every pair is tested (N-1 shuffles, ~2% of a
//   sweep), so no sweep is spent finding that nothing rotates. Skipped pairs rotate by
//   c = 1, s = 0 exactly: SIMT gives no saving for them anyway.
// - Alternatives rejected: a one-sided (Hestenes) variant needs dot products of column
//   pairs every round (a partner column exchange as here, plus 3 dot products instead of
//   the row rotation), and its SVD gives |lambda|: eigenpairs +-lambda mix unless A is
//   shifted. Keeping only A's upper triangle saves nothing in SIMT: each lane's
//   instructions are issued for the whole column anyway, and packing two half columns into
//   one register set needs per-lane selects on every update.
// - Cost (float, N = 32): ~284 instructions a lane a round (62 SHFL, 180 FP, the rest the
//   rotation), 31 rounds a sweep, ~6 sweeps for Gaussian matrices (clusters: up to ~10).
//   Measured on the H200 (batch 4096, fully unrolled sweep): n = 32 0.565 ms, n = 16
//   0.068 ms, n = 8 0.016 ms; with -DCS_SMEM=1 n = 32 0.49 ms. ncu on the n = 32 kernel:
//   issue slots 43% busy (IPC 2.1), 58% of the stall cycles waiting on instruction fetch
//   (the unrolled sweep is ~141 KB of code), occupancy 20 warps/SM (96 registers). Hence
//   the second form, sweep_loop (one round's code, the layout relabeled each round); main
//   times and checks both. Several matrices a warp (N = 8, 16) keep every lane busy at
//   small n; n in 17..31 pays for N = 32.
// Output: eigenvalues ascending; V row-major, V[i*n + j] = component i of eigenvector j,
// each eigenvector's largest-magnitude component positive (first such on ties).
// info: bit 0 non-finite input (outputs NaN), bit 1 not converged, bits 16.. sweeps.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>
#include <vector>
#include <cuda_runtime.h>

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, \
                    __LINE__, #x);                                                         \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

constexpr int WARPS = 4;  // warps a block
constexpr int MAX_SWEEPS = 15;
constexpr unsigned FULL = 0xffffffffu;

__host__ __device__ constexpr int hibit(int m) { return m >= 16 ? 16 : m >= 8 ? 8 : m >= 4 ? 4 : m >= 2 ? 2 : 1; }

template <typename T> struct Num;
template <> struct Num<float> {
    static constexpr float eps = FLT_EPSILON;
    static __device__ __forceinline__ float sqrt_approx(float x) { return x * rsqrtf(x); }  // x > 0
    static __device__ __forceinline__ float div_approx(float a, float b) { return __fdividef(a, b); }
    // c = 1/sqrt(x) to about an ulp: c^2 + s^2 = 1 is what keeps V orthogonal, so one Newton
    // step on the hardware estimate (2 ulp) is worth its 3 instructions.
    static __device__ __forceinline__ float rsqrt_acc(float x) {
        const float y = rsqrtf(x);
        return y * fmaf(-0.5f * x * y, y, 1.5f);
    }
};
template <> struct Num<double> {
    static constexpr double eps = DBL_EPSILON;
    static __device__ __forceinline__ double sqrt_approx(double x) { return sqrt(x); }
    static __device__ __forceinline__ double div_approx(double a, double b) { return a / b; }
    static __device__ __forceinline__ double rsqrt_acc(double x) { return rsqrt(x); }
};

// Same test in the sweep and in the convergence check (the product is commutative, so both
// lanes of a pair decide alike).
template <typename T> __device__ __forceinline__ bool negligible(T app, T aqq, T apq) {
    constexpr T e2 = Num<T>::eps * Num<T>::eps;
    const T d = fabs(app * aqq);
    return apq * apq <= e2 * (d > e2 ? d : e2);
}

// The rotation annihilating a_pq, p < q: A' = P^T A P with P_pp = P_qq = c, P_pq = s = -P_qp,
// t = s/c (Rutishauser: t = sign(theta)/(|theta| + sqrt(theta^2+1)), theta = (a_qq-a_pp)/(2a_pq),
// written without theta: no overflow for tiny a_pq). t need not be exact: any t gives an
// orthogonal P since c, s derive from it; its error only leaves a_pq' ~ ulp |a_pq|, zeroed.
template <typename T>
__device__ __forceinline__ bool rotation(T app, T aqq, T apq, T& c, T& s, T& t) {
    const bool skip = negligible(app, aqq, apq);
    const T d = aqq - app;
    const T r = Num<T>::sqrt_approx(d * d + T(4) * apq * apq);  // > 0 unless skipped
    T tt = Num<T>::div_approx(T(2) * apq, fabs(d) + r);
    tt = d < T(0) ? -tt : tt;
    t = skip ? T(0) : tt;
    c = skip ? T(1) : Num<T>::rsqrt_acc(T(1) + t * t);
    s = t * c;
    return skip;
}

#ifndef VALUES_ONLY
#define VALUES_ONLY 0  // 1: skip V's rotations (times eigenvalues alone; V checks then fail)
#endif
#ifndef CS_SMEM
#define CS_SMEM 0  // 1: the (c, s) of the other pairs through shared memory instead of shuffles
#endif
template <typename T> struct CS { T c, s; };

// One round m of the unrolled sweep (m, k compile-time).
template <typename T, int N, int M>
__device__ __forceinline__ void round_m(T (&b)[N], T (&v)[N], int j, CS<T> (*cs)[32]) {
    constexpr int HB = hibit(M);
    const bool lo = (j & HB) == 0;  // this lane is the pair's p (lower index)
    const T dpart = __shfl_xor_sync(FULL, b[0], M);
    const T opart = __shfl_xor_sync(FULL, b[M], M);
    const T apq = lo ? b[M] : opart;
    T c, s, t;
    const bool skip = rotation(lo ? b[0] : dpart, lo ? dpart : b[0], apq, c, s, t);
    // s signed for this lane's side: its column update is b' = c b - ss partner. A row pair
    // (j^k, j^k^M) is then updated with the ss of lane j^k, whichever side either lane is on.
    const T ss = lo ? s : -s;
    const T tt = lo ? t : -t;
    const int lane = threadIdx.x & 31;
    if (CS_SMEM) {  // two slots by round parity: a slot is rewritten after a __syncwarp
        cs[M & 1][lane] = CS<T>{c, ss};
        __syncwarp();
    }
#pragma unroll
    for (int k = 1; k < N; ++k) {
        if (k & HB) continue;  // k < k^M: one visit a register pair
        const int k2 = k ^ M;
        T cr, sr;  // rows j^k, j^k^M: lane j^k's rotation
        if (CS_SMEM) {
            const CS<T> r = cs[M & 1][lane ^ k];
            cr = r.c, sr = r.s;
        } else {
            cr = __shfl_xor_sync(FULL, c, k);
            sr = __shfl_xor_sync(FULL, ss, k);
        }
        const T px = __shfl_xor_sync(FULL, b[k2], M);  // partner column, row j^k
        const T py = __shfl_xor_sync(FULL, b[k], M);   // partner column, row j^k^M
        const T bk = c * b[k] - ss * px, bk2 = c * b[k2] - ss * py;  // A P (columns)
        b[k] = cr * bk - sr * bk2;                                      // P^T (A P) (rows)
        b[k2] = cr * bk2 + sr * bk;
        if (!VALUES_ONLY) {
            const T vk = v[k], vk2 = v[k2];  // V P: this lane's row of V
            v[k] = cr * vk - sr * vk2;
            v[k2] = cr * vk2 + sr * vk;
        }
    }
    // The pair's own 2x2 block: the diagonal by the accurate update, a_pq' = 0 exactly.
    b[0] -= tt * apq;
    b[M] = skip ? b[M] : T(0);
    if (VALUES_ONLY) return;
    const T v0 = v[0], vm = v[M];
    v[0] = c * v0 - ss * vm;
    v[M] = c * vm + ss * v0;
}

template <typename T, int N, int... Ms>
__device__ __forceinline__ void sweep(T (&b)[N], T (&v)[N], int j, CS<T> (*cs)[32],
                                      std::integer_sequence<int, Ms...>) {
    if (CS_SMEM) __syncwarp();  // rounds N-1 and then 1 use the same slot
    (round_m<T, N, Ms + 1>(b, v, j, cs), ...);
}

// The same sweep as a loop of one round's code. The unrolled sweep is ~9k instructions
// (141 KB) at N = 32, beyond the instruction caches: ncu put 58% of its stall cycles on
// instruction fetch. To keep register indices static in a loop, the layout is relabeled
// each round: in round t, slot x of lane j holds row j ^ L_t(x) with L_t = A^t, A the
// multiplication by a primitive element of GF(N) (linear over GF(2), of order N-1). Then
// round t's mask is m_t = L_t(1) (every nonzero mask once a sweep), its pairs are always
// the slots (x, x^1), the partner's matching slot is x^1, and going to round t+1 is the
// fixed slot permutation x <- A(x), folded into the stores of the rotated values. Only the
// lanes whose rotations a lane needs (j ^ L_t(x)) vary, read from a table.
template <int N> __host__ __device__ constexpr int mul_alpha(int x) {
    constexpr int poly = N == 8 ? 0xb : N == 16 ? 0x13 : 0x25;  // x^3+x+1, x^4+x+1, x^5+x^2+1
    x <<= 1;
    return x & N ? x ^ poly : x;
}
template <int N> struct RoundTab {
    unsigned char m[N - 1], hb[N - 1], lane[N - 1][N / 2];  // lane[t][x/2] = L_t(x), x even
};
template <int N> constexpr RoundTab<N> make_tab() {
    RoundTab<N> r{};
    int basis[N] = {};  // basis[x] = L_t(x)
    for (int x = 0; x < N; ++x) basis[x] = x;
    for (int t = 0; t < N - 1; ++t) {
        r.m[t] = (unsigned char)basis[1];
        r.hb[t] = (unsigned char)hibit(basis[1]);
        for (int x = 0; x < N; x += 2) r.lane[t][x / 2] = (unsigned char)basis[x];
        for (int x = 0; x < N; ++x) basis[x] = mul_alpha<N>(basis[x]);  // L_{t+1} = A L_t
    }
    return r;
}
__constant__ RoundTab<8> c_tab8;  // filled by main (nvcc takes no constexpr initializer here)
__constant__ RoundTab<16> c_tab16;
__constant__ RoundTab<32> c_tab32;
template <int N> __device__ __forceinline__ const RoundTab<N>& tab() {
    if constexpr (N == 8) return c_tab8;
    else if constexpr (N == 16) return c_tab16;
    else return c_tab32;
}

template <typename T, int N>
__device__ __forceinline__ void sweep_loop(T (&b)[N], T (&v)[N], int j, CS<T> (*cs)[32]) {
    if (CS_SMEM) __syncwarp();  // rounds N-2 and then 0 use the same slot
    const int lane = threadIdx.x & 31;
#pragma unroll 1
    for (int t = 0; t < N - 1; ++t) {
        const int m = tab<N>().m[t];
        const bool lo = (j & tab<N>().hb[t]) == 0;
        const T dpart = __shfl_xor_sync(FULL, b[0], m);
        const T opart = __shfl_xor_sync(FULL, b[1], m);
        const T apq = lo ? b[1] : opart;
        T c, s, t_;
        const bool skip = rotation(lo ? b[0] : dpart, lo ? dpart : b[0], apq, c, s, t_);
        const T ss = lo ? s : -s, tt = lo ? t_ : -t_;
        if (CS_SMEM) {
            cs[t & 1][lane] = CS<T>{c, ss};
            __syncwarp();
        }
        T nb[N], nv[N];
#pragma unroll
        for (int x = 2; x < N; x += 2) {
            // Rows j^L(x), j^L(x)^m: the rotation of lane j^L(x), signed for its side
            // (the formulas below hold whichever side this lane is on).
            const int src = tab<N>().lane[t][x / 2];
            T cr, sr;
            if (CS_SMEM) {
                const CS<T> r = cs[t & 1][lane ^ src];
                cr = r.c, sr = r.s;
            } else {
                cr = __shfl_xor_sync(FULL, c, src);
                sr = __shfl_xor_sync(FULL, ss, src);
            }
            const T px = __shfl_xor_sync(FULL, b[x + 1], m), py = __shfl_xor_sync(FULL, b[x], m);
            const T bk = c * b[x] - ss * px, bk2 = c * b[x + 1] - ss * py;
            nb[x] = cr * bk - sr * bk2;
            nb[x + 1] = cr * bk2 + sr * bk;
            nv[x] = VALUES_ONLY ? v[x] : cr * v[x] - sr * v[x + 1];
            nv[x + 1] = VALUES_ONLY ? v[x + 1] : cr * v[x + 1] + sr * v[x];
        }
        nb[0] = b[0] - tt * apq;
        nb[1] = skip ? b[1] : T(0);
        nv[0] = VALUES_ONLY ? v[0] : c * v[0] - ss * v[1];
        nv[1] = VALUES_ONLY ? v[1] : c * v[1] + ss * v[0];
#pragma unroll
        for (int x = 0; x < N; ++x) {  // relabel for round t+1
            b[x] = nb[mul_alpha<N>(x)];
            v[x] = VALUES_ONLY ? v[x] : nv[mul_alpha<N>(x)];
        }
    }
}

// Every pair negligible? The lower lane of each pair tests its copy (the one the sweep uses).
template <typename T, int N> __device__ __forceinline__ bool converged(const T (&b)[N], int j) {
    bool ok = true;
#pragma unroll
    for (int k = 1; k < N; ++k) {
        const T dk = __shfl_xor_sync(FULL, b[0], k);
        if ((j & hibit(k)) == 0 && !negligible(b[0], dk, b[k])) ok = false;
    }
    // All N lanes of this matrix (its group of lanes is N-aligned).
    const unsigned lane = threadIdx.x & 31;
    const unsigned gmask = (N == 32 ? FULL : ((1u << N) - 1u)) << (lane & ~(N - 1));
    return (__ballot_sync(FULL, !ok) & gmask) == 0;
}

template <typename T, int N, bool LOOP>
__global__ void __launch_bounds__(32 * WARPS)
    eigh_warp(const T* __restrict__ a, T* __restrict__ w_out, T* __restrict__ v_out,
              unsigned* __restrict__ info, int n, int batch) {
    constexpr int MPW = 32 / N, LD = N + 1;
    __shared__ T smem[WARPS][MPW * N * LD];  // input, then V, staged for coalesced access
    __shared__ CS<T> cs_smem[WARPS][CS_SMEM ? 2 : 1][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int j = lane & (N - 1);
    const long long g = ((long long)blockIdx.x * WARPS + warp) * MPW + lane / N;
    const bool valid = g < batch;
    T* sm = smem[warp] + (lane / N) * N * LD;
    const int nn = n * n;

    if (valid)
        for (int idx = j; idx < nn; idx += N) sm[(idx / n) * LD + idx % n] = a[g * nn + idx];
    __syncwarp();
    T b[N], v[N];
    T mx = T(0);
#pragma unroll
    for (int k = 0; k < N; ++k) {
        const int r = j ^ k;
        T x = T(0);
        if (valid && r < n && j < n) x = r >= j ? sm[r * LD + j] : sm[j * LD + r];  // lower triangle
        b[k] = x;
        const T f = x == x ? fabs(x) : T(INFINITY);  // NaN counts as non-finite
        mx = f > mx ? f : mx;
        v[k] = k == 0 ? T(1) : T(0);
    }
#pragma unroll
    for (int o = 1; o < N; o <<= 1) {
        const T y = __shfl_xor_sync(FULL, mx, o);
        mx = y > mx ? y : mx;
    }
    const bool bad = !isfinite(mx);
    int e = 0;
    if (!bad) frexp(mx, &e);  // max|a| = f 2^e, f in [0.5, 1): scale by 2^-e, exact
#pragma unroll
    for (int k = 0; k < N; ++k) {
        T x = bad ? T(0) : ldexp(b[k], -e);
        b[k] = fabs(x) < (sizeof(T) == 4 ? T(FLT_MIN) : T(DBL_MIN)) ? T(0) : x;  // subnormal: 0
    }

    int sweeps = 0;
    bool conv;
    for (int it = 0;; ++it) {
        conv = converged<T, N>(b, j);
        if (__all_sync(FULL, conv) || it == MAX_SWEEPS) break;
        sweeps += conv ? 0 : 1;  // converged matrices ride along unchanged (nothing rotates)
        if (LOOP) sweep_loop<T, N>(b, v, j, cs_smem[warp]);
        else sweep<T, N>(b, v, j, cs_smem[warp], std::make_integer_sequence<int, N - 1>{});
    }

    // Ascending rank among the n real indices (ties by index: a stable order).
    const T lam = b[0];
    int rank = 0;
#pragma unroll
    for (int k = 1; k < N; ++k) {
        const T o = __shfl_xor_sync(FULL, lam, k);
        const int oj = j ^ k;
        rank += (oj < n && (o < lam || (o == lam && oj < j))) ? 1 : 0;
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < N; ++k) sm[j * LD + (j ^ k)] = v[k];  // row j of V
    __syncwarp();
    if (valid && j < n) {
        // Column j: sign from its largest-magnitude component, then out as column rank.
        T big = T(-1), sg = T(1);
        for (int i = 0; i < n; ++i) {
            const T x = sm[i * LD + j];
            if (fabs(x) > big) { big = fabs(x); sg = x < T(0) ? T(-1) : T(1); }
        }
        const T nan = T(NAN);
        w_out[g * n + rank] = bad ? nan : ldexp(lam, e);
        for (int i = 0; i < n; ++i) v_out[g * nn + i * n + rank] = bad ? nan : sg * sm[i * LD + j];
        if (j == 0) info[g] = (bad ? 1u : 0u) | (conv || bad ? 0u : 2u) | ((unsigned)sweeps << 16);
    }
}

template <typename T, int N>
void launch_n(const T* a, T* w, T* v, unsigned* info, int n, int batch, bool loop) {
    constexpr int per_block = WARPS * (32 / N);
    const int grid = (batch + per_block - 1) / per_block;
    if (loop) eigh_warp<T, N, true><<<grid, 32 * WARPS>>>(a, w, v, info, n, batch);
    else eigh_warp<T, N, false><<<grid, 32 * WARPS>>>(a, w, v, info, n, batch);
}
// loop: the sweep as a loop of one round (sweep_loop), else fully unrolled (sweep).
template <typename T> void launch(const T* a, T* w, T* v, unsigned* info, int n, int batch, bool loop) {
    if (n <= 8) launch_n<T, 8>(a, w, v, info, n, batch, loop);
    else if (n <= 16) launch_n<T, 16>(a, w, v, info, n, batch, loop);
    else launch_n<T, 32>(a, w, v, info, n, batch, loop);
}

// ---------------------------------------------------------------------------------------
// Host: test matrices, a plain cyclic Jacobi in double as the reference, checks.

static void ref_eigvals(std::vector<double> A, int n, std::vector<double>& w) {
    auto at = [&](int i, int j) -> double& { return A[i * n + j]; };
    for (int sweep = 0; sweep < 100; ++sweep) {
        double off = 0, tot = 0;
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) (i == j ? tot : off) += at(i, j) * at(i, j);
        if (off <= 1e-34 * (tot + off)) break;
        for (int p = 0; p < n; ++p)
            for (int q = p + 1; q < n; ++q) {
                const double apq = at(p, q);
                if (apq == 0) continue;
                const double th = (at(q, q) - at(p, p)) / (2 * apq);
                const double t = (th >= 0 ? 1 : -1) / (std::fabs(th) + std::sqrt(th * th + 1));
                const double c = 1 / std::sqrt(t * t + 1), s = t * c;
                for (int r = 0; r < n; ++r) {  // columns, then rows
                    const double x = at(r, p), y = at(r, q);
                    at(r, p) = c * x - s * y;
                    at(r, q) = s * x + c * y;
                }
                for (int r = 0; r < n; ++r) {
                    const double x = at(p, r), y = at(q, r);
                    at(p, r) = c * x - s * y;
                    at(q, r) = s * x + c * y;
                }
            }
    }
    w.resize(n);
    for (int i = 0; i < n; ++i) w[i] = at(i, i);
    std::sort(w.begin(), w.end());
}

// Matrix b of the batch: 0 identity, 1 zero, 2 diagonal (a repeated value), 3 clustered
// eigenvalues (two clusters 1e-7 wide, of opposite sign), 4 rank one, 5 [[0 G] [G^T 0]]
// (eigenvalues +-sigma), 6 and 7 Gaussian times 2^40 and 2^-40; the rest Gaussian.
static void make_matrix(int b, int n, std::mt19937_64& rng, std::vector<double>& A) {
    std::normal_distribution<double> nd;
    A.assign(n * n, 0.0);
    auto sym = [&](double scale) {
        for (int i = 0; i < n; ++i)
            for (int j = 0; j <= i; ++j) A[i * n + j] = A[j * n + i] = scale * nd(rng);
    };
    if (b == 0) {
        for (int i = 0; i < n; ++i) A[i * n + i] = 1;
    } else if (b == 1) {
    } else if (b == 2) {
        for (int i = 0; i < n; ++i) A[i * n + i] = i == n - 1 ? A[0] : nd(rng);
    } else if (b == 3) {
        std::vector<double> Q(n * n);  // orthogonal: Gram-Schmidt (twice) of a Gaussian
        for (auto& x : Q) x = nd(rng);
        for (int j = 0; j < n; ++j)
            for (int pass = 0; pass < 2; ++pass) {
                for (int k = 0; k < j; ++k) {
                    double d = 0;
                    for (int i = 0; i < n; ++i) d += Q[i * n + k] * Q[i * n + j];
                    for (int i = 0; i < n; ++i) Q[i * n + j] -= d * Q[i * n + k];
                }
                double s = 0;
                for (int i = 0; i < n; ++i) s += Q[i * n + j] * Q[i * n + j];
                for (int i = 0; i < n; ++i) Q[i * n + j] /= std::sqrt(s);
            }
        for (int i = 0; i < n; ++i)
            for (int j = 0; j <= i; ++j) {
                double s = 0;
                for (int k = 0; k < n; ++k) s += Q[i * n + k] * (k % 2 ? -1.0 : 1.0) * (1 + 1e-7 * k) * Q[j * n + k];
                A[i * n + j] = A[j * n + i] = s;
            }
    } else if (b == 4) {
        std::vector<double> u(n);
        for (auto& x : u) x = nd(rng);
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) A[i * n + j] = u[i] * u[j];
    } else if (b == 5) {
        const int h = n / 2;
        for (int i = 0; i < h; ++i)
            for (int j = 0; j < h; ++j) A[i * n + (h + j)] = A[(h + j) * n + i] = nd(rng);
    } else {
        sym(b == 6 ? std::ldexp(1.0, 40) : b == 7 ? std::ldexp(1.0, -40) : 1.0);
    }
}

struct Result { double ms[2], res, orth, err; int max_sweeps; bool pass; };

// Median ms of 20 launches after ~200 ms of warm-up (so the clocks have risen).
template <typename T>
static double time_launches(const T* da, T* dw, T* dv, unsigned* dinfo, int n, int batch, bool loop) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0));
    for (float el = 0; el < 200;) {
        for (int i = 0; i < 10; ++i) launch<T>(da, dw, dv, dinfo, n, batch, loop);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&el, e0, e1));
    }
    std::vector<float> ts;
    for (int i = 0; i < 20; ++i) {
        CK(cudaEventRecord(e0));
        launch<T>(da, dw, dv, dinfo, n, batch, loop);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        ts.push_back(ms);
    }
    CK(cudaGetLastError());
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    std::sort(ts.begin(), ts.end());
    return 0.5 * (ts[9] + ts[10]);
}

// Info words of the whole batch; residual, orthogonality, order, signs and eigenvalues
// against the double reference for matrices 0..47 and the last 16.
template <typename T>
static void check(const std::vector<T>& a, const std::vector<T>& w, const std::vector<T>& v,
                  const std::vector<unsigned>& info, int n, int batch, Result& r) {
    const int nn = n * n;
    for (int b = 0; b < batch; ++b) {
        r.max_sweeps = std::max(r.max_sweeps, (int)(info[b] >> 16));
        if (info[b] & 0xffffu) {
            if (r.pass) fprintf(stderr, "n=%d matrix %d: info 0x%x\n", n, b, info[b]);
            r.pass = false;
        }
    }
    const double tol = sizeof(T) == 4 ? 1e-5 : 1e-12, eps = sizeof(T) == 4 ? FLT_EPSILON : DBL_EPSILON;
    std::vector<int> which;
    for (int b = 0; b < std::min(batch, 48); ++b) which.push_back(b);
    for (int b = std::max(48, batch - 16); b < batch; ++b) which.push_back(b);
    std::vector<double> ref;
    for (int b : which) {
        const T* Ab = &a[(size_t)b * nn];
        const T* Vb = &v[(size_t)b * nn];
        const T* wb = &w[(size_t)b * n];
        double fa = 0;
        for (int i = 0; i < nn; ++i) fa += (double)Ab[i] * Ab[i];
        fa = std::max(std::sqrt(fa), 1e-300);
        double res = 0, orth = 0, err = 0;
        bool ok = true;
        for (int j = 0; j < n; ++j) {
            if (j > 0 && !(wb[j - 1] <= wb[j])) ok = false;  // ascending (and not NaN)
            double big = 0, bigpos = 0;
            for (int i = 0; i < n; ++i) {
                double av = 0;
                for (int k = 0; k < n; ++k) av += (double)Ab[i * n + k] * Vb[k * n + j];
                const double d = av - (double)Vb[i * n + j] * wb[j];
                res += d * d;
                const double x = Vb[i * n + j];
                big = std::max(big, std::fabs(x));
                bigpos = std::max(bigpos, x);
            }
            if (bigpos < big * (1 - 64 * eps)) ok = false;  // largest component positive
            for (int k = 0; k < n; ++k) {
                double d = 0;
                for (int i = 0; i < n; ++i) d += (double)Vb[i * n + j] * Vb[i * n + k];
                orth = std::max(orth, std::fabs(d - (j == k ? 1.0 : 0.0)));
            }
        }
        std::vector<double> A64(Ab, Ab + nn);
        ref_eigvals(A64, n, ref);
        for (int j = 0; j < n; ++j) err = std::max(err, std::fabs(wb[j] - ref[j]) / fa);
        res = std::sqrt(res) / fa;
        if (!(res <= tol && orth <= tol && err <= tol) || !ok) {
            if (r.pass)
                fprintf(stderr, "n=%d matrix %d: res %.2e orth %.2e err %.2e order/sign %s\n", n, b,
                        res, orth, err, ok ? "ok" : "BAD");
            r.pass = false;
        }
        r.res = std::max(r.res, res);
        r.orth = std::max(r.orth, orth);
        r.err = std::max(r.err, err);
    }
}

// Both sweep forms (unrolled, loop) timed and checked.
template <typename T> Result run_case(int n, int batch) {
    const int nn = n * n;
    std::mt19937_64 rng(1234 + n * 7 + sizeof(T));
    std::vector<T> a((size_t)batch * nn);
    std::vector<double> A;
    for (int b = 0; b < batch; ++b) {
        make_matrix(b, n, rng, A);
        for (int i = 0; i < nn; ++i) a[(size_t)b * nn + i] = (T)A[i];
    }
    T *da, *dw, *dv;
    unsigned* dinfo;
    CK(cudaMalloc(&da, a.size() * sizeof(T)));
    CK(cudaMalloc(&dw, (size_t)batch * n * sizeof(T)));
    CK(cudaMalloc(&dv, a.size() * sizeof(T)));
    CK(cudaMalloc(&dinfo, batch * sizeof(unsigned)));
    CK(cudaMemcpy(da, a.data(), a.size() * sizeof(T), cudaMemcpyHostToDevice));
    Result r{{0, 0}, 0, 0, 0, 0, true};
    std::vector<T> w((size_t)batch * n), v(a.size());
    std::vector<unsigned> info(batch);
    for (int loop = 0; loop < 2; ++loop) {
        CK(cudaMemset(dw, 0xff, w.size() * sizeof(T)));  // NaN: a result never written shows
        CK(cudaMemset(dinfo, 0xff, batch * sizeof(unsigned)));
        r.ms[loop] = time_launches<T>(da, dw, dv, dinfo, n, batch, loop);
        CK(cudaMemcpy(w.data(), dw, w.size() * sizeof(T), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(v.data(), dv, v.size() * sizeof(T), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(info.data(), dinfo, batch * sizeof(unsigned), cudaMemcpyDeviceToHost));
        check(a, w, v, info, n, batch, r);
    }
    CK(cudaFree(da)); CK(cudaFree(dw)); CK(cudaFree(dv)); CK(cudaFree(dinfo));
    return r;
}

int main(int argc, char** argv) {
    const int batch = argc > 1 ? atoi(argv[1]) : 4096;
    const char* only = argc > 2 ? argv[2] : "";  // "f32" or "f64": that dtype alone
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    {
        const RoundTab<8> t8 = make_tab<8>();
        const RoundTab<16> t16 = make_tab<16>();
        const RoundTab<32> t32 = make_tab<32>();
        CK(cudaMemcpyToSymbol(c_tab8, &t8, sizeof t8));
        CK(cudaMemcpyToSymbol(c_tab16, &t16, sizeof t16));
        CK(cudaMemcpyToSymbol(c_tab32, &t32, sizeof t32));
    }
    printf("%s, batch %d, %d warps a block, max %d sweeps, CS_SMEM %d\n", prop.name, batch, WARPS,
           MAX_SWEEPS, CS_SMEM);
    printf("%4s %6s %11s %9s %10s %10s %10s %7s %s\n", "n", "dtype", "ms:unrolled", "ms:loop",
           "residual", "orth", "eig err", "sweeps", "");
    bool all = true;
    for (int dt = 0; dt < 2; ++dt)
        for (int n : {8, 16, 17, 31, 32}) {
            if (*only && strcmp(only, dt == 0 ? "f32" : "f64") != 0) continue;
            const Result r = dt == 0 ? run_case<float>(n, batch) : run_case<double>(n, batch);
            printf("%4d %6s %11.4f %9.4f %10.2e %10.2e %10.2e %7d %s\n", n, dt == 0 ? "f32" : "f64",
                   r.ms[0], r.ms[1], r.res, r.orth, r.err, r.max_sweeps, r.pass ? "PASS" : "FAIL");
            fflush(stdout);
            all = all && r.pass;
        }
    return all ? 0 : 1;
}
