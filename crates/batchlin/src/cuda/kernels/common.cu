// batchlin CUDA kernels: shared pieces. NVRTC-compilable: no host headers.
// Concatenated before the op files (qr.cu, ...) at compile time.

typedef long long bl_i64;

// Arguments of every QR kernel, passed by value. The layout is mirrored by
// `QrArgs` in crates/batchlin/src/cuda/mod.rs (#[repr(C)]): keep them in step.
// Matrix index b in [0, batch*inner): outer = b / inner, in = b % inner;
// element (i, j) of matrix b of X at x + outer*x_bs + in*x_is + i*x_rs + j*x_cs.
// The last inner matrix (in == inner-1) has m_last rows (>= min(m, n)); others m.
struct QrArgs {
    const void* a;
    bl_i64 a_bs, a_is, a_rs, a_cs;
    void* q;  // NULL: Q is not formed (mode "r")
    bl_i64 q_bs, q_is, q_rs, q_cs;
    void* r;
    bl_i64 r_bs, r_is, r_rs, r_cs;
    unsigned int* info;  // one word per matrix b (flat index)
    // NULL, or each outer matrix's max|a| as BlBits: R is then stored scaled as that whole
    // matrix times 2^-E would give it (bl_r_exp; TSQR's leaves, kernels tile, wy, smem).
    const unsigned long long* r_mx;
    int batch;  // outer count
    int inner;
    int m, m_last, n;
    int qcols;  // k (reduced) or m (complete, needs m <= threads' columns)
    int rrows;  // k (reduced) or m (complete)
    int wld;    // qr_smem / qr_wy: leading dimension of the work rows
    // 0, or the rows the rank rule (bl_rank_deficient) counts when more than the factored
    // matrix's: TSQR's top level factors the stacked leaves' R's (a few n rows) for a
    // matrix of many more rows, whose rank rule is max(m, n) eps.
    int rank_rows;
};

// C = A * B for a batch (2-level like QrArgs): C is m x n, A m x kk, B kk x n.
struct GemmArgs {
    const void* a;
    bl_i64 a_bs, a_is, a_rs, a_cs;
    const void* b;
    bl_i64 b_bs, b_is, b_rs, b_cs;
    void* c;
    bl_i64 c_bs, c_is, c_rs, c_cs;
    int batch, inner;
    int m, m_last, n, kk;
};

// Arguments of qr_unscale_r (qr.cu: TSQR's R times 2^E), by value. Mirrored by
// `ScaleArgs` in cuda/qr.rs.
struct ScaleArgs {
    void* x;  // R, in place
    bl_i64 x_bs, x_rs, x_cs;
    const unsigned long long* mx;  // each matrix's max|a| as BlBits, whose exponent is E
    unsigned int* info;  // one word per matrix, or NULL
    int batch;
    int m, n;  // R's rows and columns
    int k;  // R's rows holding the triangle, min(m, n) of the input
};

#define BL_INFO_NONFINITE 1u
#define BL_INFO_NOT_CONVERGED 2u
#define BL_INFO_RANK_DEFICIENT 4u
#define BL_INFO_OVERFLOW 8u

template <typename T> struct BlT;
template <> struct BlT<float> {
    static __device__ __forceinline__ float eps() { return 1.1920928955078125e-7f; }
    static __device__ __forceinline__ float tiny() { return 1.1754943508222875e-38f; }  // smallest normal
    static __device__ __forceinline__ float huge() { return 3.4028234663852886e38f; }
    static __device__ __forceinline__ int max_exp() { return 128; }  // huge < 2^max_exp
    static __device__ __forceinline__ float nan() { return __int_as_float(0x7fffffff); }
    static __device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }
    // 2^e for e in [-126, 127]
    static __device__ __forceinline__ float pow2(int e) { return __int_as_float((e + 127) << 23); }
    // e with |x| = f * 2^e, f in [0.5, 1); x finite and nonzero
    static __device__ __forceinline__ int expo(float x) {
        int bits = __float_as_int(fabsf(x));
        int raw = (bits >> 23) & 0xff;
        if (raw == 0) {  // subnormal
            bits = __float_as_int(fabsf(x) * 16777216.0f);
            return ((bits >> 23) & 0xff) - 126 - 24;
        }
        return raw - 126;
    }
    static __device__ __forceinline__ float sqrt_(float x) { return sqrtf(x); }
    static __device__ __forceinline__ float abs_(float x) { return fabsf(x); }
    static __device__ __forceinline__ float fma_(float a, float b, float c) { return fmaf(a, b, c); }
    static __device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }  // never fused
};
template <> struct BlT<double> {
    static __device__ __forceinline__ double eps() { return 2.220446049250313e-16; }
    static __device__ __forceinline__ double tiny() { return 2.2250738585072014e-308; }
    static __device__ __forceinline__ double huge() { return 1.7976931348623157e308; }
    static __device__ __forceinline__ int max_exp() { return 1024; }
    static __device__ __forceinline__ double nan() { return __longlong_as_double(0x7fffffffffffffffLL); }
    static __device__ __forceinline__ double inf() { return __longlong_as_double(0x7ff0000000000000LL); }
    static __device__ __forceinline__ double pow2(int e) { return __longlong_as_double((long long)(e + 1023) << 52); }
    static __device__ __forceinline__ int expo(double x) {
        long long bits = __double_as_longlong(fabs(x));
        int raw = (int)((bits >> 52) & 0x7ff);
        if (raw == 0) {
            bits = __double_as_longlong(fabs(x) * 9007199254740992.0);
            return (int)((bits >> 52) & 0x7ff) - 1022 - 53;
        }
        return raw - 1022;
    }
    static __device__ __forceinline__ double sqrt_(double x) { return sqrt(x); }
    static __device__ __forceinline__ double abs_(double x) { return fabs(x); }
    static __device__ __forceinline__ double fma_(double a, double b, double c) { return fma(a, b, c); }
    static __device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }  // never fused
};

// x * 2^e, exact whenever the result is normal; e in about [-2*bias, 2*bias].
template <typename T> __device__ __forceinline__ T bl_scale2(T x, int e) {
    int h = e / 2;
    return x * BlT<T>::pow2(h) * BlT<T>::pow2(e - h);
}

// |x| if finite, +inf otherwise (NaN included): a max over these flags non-finite input.
template <typename T> __device__ __forceinline__ T bl_absflag(T x) {
    T ax = BlT<T>::abs_(x);
    return (ax <= BlT<T>::huge()) ? ax : BlT<T>::inf();
}

// Whether a matrix whose largest bl_absflag is mx holds NaN or Inf (its outputs are then
// NaN), and the exponent e of mx = f 2^e, f in [0.5, 1): every kernel decomposes the
// matrix times 2^-e (e = 0 for bad or zero input) and scales R back by 2^e.
template <typename T> __device__ __forceinline__ int bl_scale_exp(T mx, bool& bad) {
    bad = !(mx <= BlT<T>::huge());
    return (bad || mx == T(0)) ? 0 : BlT<T>::expo(mx);
}

// An entry of a finite matrix's result beyond the range (+-Inf once scaled back).
template <typename T> __device__ __forceinline__ bool bl_beyond_range(T v) {
    return !(BlT<T>::abs_(v) <= BlT<T>::huge());
}

// Whether QR's R, computed from an m-row matrix times 2^-e (largest entry in [0.5, 1)),
// can hold an entry beyond the range once scaled back (BL_INFO_OVERFLOW). Its entries are
// at most the columns' norms, below 2^(e + ceil(bits / 2) + 1) for m < 2^bits, so only
// input within a factor of about 4 sqrt(m) of the range's end can: uniform over a matrix,
// and false for the usual call, which so pays one test for the exact check it guards.
template <typename T> __device__ __forceinline__ bool bl_r_may_overflow(int e, int m) {
    const int bits = 32 - __clz(m > 1 ? m : 1);  // m < 2^bits
    return e + (bits + 1) / 2 + 1 >= BlT<T>::max_exp();
}

// Whether the k x n upper trapezoid of an R the block has just stored (R[i rs + j cs])
// holds an entry beyond the range. Every thread of the block calls it.
template <typename T>
__device__ bool bl_block_r_overflows(const T* R, bl_i64 rs, bl_i64 cs, int k, int n) {
    __syncthreads();  // the block's stores of R are visible to the block after it
    int o = 0;
    for (bl_i64 idx = threadIdx.x; idx < (bl_i64)k * n; idx += blockDim.x) {
        const int i = (int)(idx / n), j = (int)(idx - (bl_i64)i * n);
        if (i <= j && bl_beyond_range(R[i * rs + j * cs])) o = 1;
    }
    return __syncthreads_or(o) != 0;
}

// Non-negative values as unsigned integers of the same order (max|a| kept by atomicMax).
template <typename T> struct BlBits;
template <> struct BlBits<float> {
    static __device__ __forceinline__ unsigned long long to(float x) { return (unsigned long long)(unsigned)__float_as_int(x); }
    static __device__ __forceinline__ float from(unsigned long long u) { return __int_as_float((int)(unsigned)u); }
};
template <> struct BlBits<double> {
    static __device__ __forceinline__ unsigned long long to(double x) { return (unsigned long long)__double_as_longlong(x); }
    static __device__ __forceinline__ double from(unsigned long long u) { return __longlong_as_double((long long)u); }
};

// The exponent a QR kernel stores R with: its own scaling's e (undone), or with `r_mx`
// e - E, E the exponent of the whole outer matrix's max|a|: TSQR's leaves so give R's
// that the levels above can stack without leaving the range, and R is unscaled last.
template <typename T> __device__ __forceinline__ int bl_r_exp(const QrArgs& p, bl_i64 outer, int e) {
    if (p.r_mx == nullptr) return e;
    bool bad;
    return e - bl_scale_exp(BlBits<T>::from(p.r_mx[outer]), bad);
}

// A thread's register block of a matrix times 2^s (nothing to do for s = 0).
template <typename T, int R, int C> __device__ __forceinline__ void bl_rescale(T (&a)[R][C], int s) {
    if (s == 0) return;
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
        for (int c = 0; c < C; ++c) a[i][c] = bl_scale2(a[i][c], s);
}
template <typename T, int R> __device__ __forceinline__ void bl_rescale(T (&a)[R], int s) {
    if (s == 0) return;
#pragma unroll
    for (int i = 0; i < R; ++i) a[i] = bl_scale2(a[i], s);
}

// max of bl_absflag over a thread's register block (non-finite -> inf).
// The rank rule every backend keeps (the CPU's too): R is rank deficient when its smallest
// |R_kk| is at most max(m, n) * eps times its largest (a zero matrix: 0 <= 0).
template <typename T> __device__ __forceinline__ bool bl_rank_deficient(T dmin, T dmax, int m, int n) {
    return dmin <= T(max(m, n)) * BlT<T>::eps() * dmax;
}

// Running min and max of |R_kk| as the steps produce them.
template <typename T> __device__ __forceinline__ void bl_diag_range(T beta, T& dmin, T& dmax) {
    const T a = BlT<T>::abs_(beta);
    dmin = a < dmin ? a : dmin;
    dmax = a > dmax ? a : dmax;
}

template <typename T, int R, int C> __device__ __forceinline__ T bl_absmax(const T (&a)[R][C]) {
    T mx = T(0);
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const T f = bl_absflag(a[i][c]);
            mx = f > mx ? f : mx;
        }
    return mx;
}

template <typename T> __device__ __forceinline__ T bl_shfl_xor(T v, int off) {
    return __shfl_xor_sync(0xffffffffu, v, off);
}

template <typename T> __device__ __forceinline__ T bl_warp_sum(T v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += bl_shfl_xor(v, off);
    return v;
}

// Vector access, 16 bytes: 4 floats or 2 doubles. `ld` reads shared memory by volatile asm
// so the compiler reloads rather than keeping a whole vector live in registers; `ldg` (any
// memory) and `st` are plain 16-byte accesses.
template <typename T> struct BlVec;
template <> struct BlVec<float> {
    static const int N = 4;
    static __device__ __forceinline__ void ld(const float* p, float* x) {
#ifdef __CUDA_ARCH__
        unsigned addr = (unsigned)__cvta_generic_to_shared(p);
        asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(x[0]), "=f"(x[1]), "=f"(x[2]), "=f"(x[3]) : "r"(addr));
#else  // the host emulators (gpu-lab/warp_emu)
        ldg(p, x);
#endif
    }
    static __device__ __forceinline__ void ldg(const float* p, float* x) {  // any 16-byte aligned p
        const float4 v = *reinterpret_cast<const float4*>(p);
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    }
    static __device__ __forceinline__ void st(float* p, const float* x) {
        *reinterpret_cast<float4*>(p) = make_float4(x[0], x[1], x[2], x[3]);
    }
};
template <> struct BlVec<double> {
    static const int N = 2;
    static __device__ __forceinline__ void ld(const double* p, double* x) {
#ifdef __CUDA_ARCH__
        unsigned addr = (unsigned)__cvta_generic_to_shared(p);
        asm volatile("ld.shared.v2.f64 {%0,%1}, [%2];" : "=d"(x[0]), "=d"(x[1]) : "r"(addr));
#else  // the host emulators (gpu-lab/warp_emu)
        ldg(p, x);
#endif
    }
    static __device__ __forceinline__ void ldg(const double* p, double* x) {  // any 16-byte aligned p
        const double2 v = *reinterpret_cast<const double2*>(p);
        x[0] = v.x, x[1] = v.y;
    }
    static __device__ __forceinline__ void st(double* p, const double* x) {
        *reinterpret_cast<double2*>(p) = make_double2(x[0], x[1]);
    }
};

// Lanes an item for bl_vec_dots: the largest power of two up to gmax at which twice the
// items' lanes still fit in the block.
__device__ __forceinline__ int bl_vec_lanes(int items, int gmax) {
    int g = 1;
    while (g < gmax && 2 * g * items <= (int)blockDim.x) g *= 2;
    return g;
}

// A sum of products carried with its rounding error (Ogita, Rump and Oishi's Dot2: each
// product's error by an fma, each sum's by TwoSum), as accurate as one in twice the
// precision rounded once. Where like terms are summed (a matrix of ones), plain sums round
// alike and their errors add up: eigh `block`'s top eigenvalue of the float64 200x200
// matrix of ones was 14 eps n off with them (LAPACK 1.3), 1.3 with every product carried,
// at most 5 eps n with a 16-byte vector's products summed plainly first (add(x)), at
// plain sums' cost.
template <typename T> struct BlDot2 {
    T s = T(0), c = T(0);
    __device__ __forceinline__ void add(T a, T x) {
        const T pr = BlT<T>::mul_rn(a, x);  // unfused, so that s + pr below is this product
        const T pe = BlT<T>::fma_(a, x, -pr);
        const T s2 = s + pr, bb = s2 - s;
        c += ((s - (s2 - bb)) + (pr - bb)) + pe;
        s = s2;
    }
    // A term whose own rounding is left out (a short plain sum: a vector's products).
    __device__ __forceinline__ void add(T x) {
        const T s2 = s + x, bb = s2 - s;
        c += (s - (s2 - bb)) + (x - bb);
        s = s2;
    }
    __device__ __forceinline__ T value() const { return s + c; }
};

// w[i] = scale * sum_{c >= c0} X[i * ld + c] v[c] for the items i in [i0, i1), each item's
// entries contiguous from c0 (a whole vector) to n, read in 16-byte vectors from shared
// memory (BlVec::ld; ld whole vectors, X and v readable to the vector holding n - 1, and
// zero, or weighted by zeros, where they are not to count). A group of g lanes (a power
// of two up to 32: bl_vec_lanes) an item, as many groups as the block holds, the group's
// partial sums added by shuffles: the same trip count in every lane. eigh `block`'s rows
// (p = tau A v) and the SVD `bidiag`'s columns (w = tau A^T v).
template <typename T, bool EXACT = false>
__device__ void bl_vec_dots(const T* X, int ld, int i0, int i1, int c0, int n, const T* v, T* w, T scale, int g) {
    constexpr int VN = BlVec<T>::N;
    const int tid = threadIdx.x, gl = tid & (g - 1), ng = blockDim.x / g;
    for (int base = i0; base < i1; base += ng) {
        const int i = base + tid / g;
        T acc[VN] = {};
        BlDot2<T> ex;  // EXACT: every vector's sum into one compensated sum
        if (i < i1)
            for (int c = c0 + gl * VN; c < n; c += g * VN) {
                T a[VN], x[VN];
                BlVec<T>::ld(X + (bl_i64)i * ld + c, a);
                BlVec<T>::ld(v + c, x);
                if (EXACT) {  // a vector's products summed plainly, then carried exactly
                    T part = a[0] * x[0];
#pragma unroll
                    for (int u = 1; u < VN; ++u) part += a[u] * x[u];
                    ex.add(part);
                } else {
#pragma unroll
                    for (int u = 0; u < VN; ++u) acc[u] += a[u] * x[u];
                }
            }
        T s = EXACT ? ex.value() : acc[0];
        if (!EXACT) {
#pragma unroll
            for (int u = 1; u < VN; ++u) s += acc[u];
        }
        for (int off = g >> 1; off > 0; off >>= 1) s += bl_shfl_xor(s, off);
        if (i < i1 && gl == 0) w[i] = scale * s;
    }
}

// Householder reflector of a column with leading entry alpha and sub-diagonal sum of
// squares ss, as LAPACK's xLARFG: H x = beta e1 with v = x / (alpha - beta) below the
// diagonal; tau = 0 (H = I) when ss is below the smallest normal number.
template <typename T>
__device__ __forceinline__ void bl_householder(T alpha, T ss, T& beta, T& tau, T& scal) {
    if (ss < BlT<T>::tiny()) {
        beta = alpha;
        tau = T(0);
        scal = T(0);
    } else {
        const T nrm = BlT<T>::sqrt_(alpha * alpha + ss);
        beta = alpha >= T(0) ? -nrm : nrm;
        tau = (beta - alpha) / beta;
        scal = T(1) / (alpha - beta);
    }
}

// xLARFG as bl_householder, for float without a branch or an IEEE division, so the
// compiler can interleave it with independent work: the square root and reciprocals from
// the hardware approximations, refined (the reciprocals twice, tau's quotient by its
// residual): the rounding of bl_householder in all but rare cases. The register
// kernels' reflector step is on their critical path (tile: 4096x64x64 0.310 -> 0.285 ms,
// 1024x128x128 0.606 -> 0.552, errors unchanged; docs/results/h200/2026-12-01-qr-tile/).
__device__ __forceinline__ void bl_householder_nb(float alpha, float ss, float& beta, float& tau, float& scal) {
    const float x = alpha * alpha + ss;
    float rs;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(rs) : "f"(x));
    float nrm = x * rs;
    nrm = fmaf(0.5f * rs, fmaf(-nrm, nrm, x), nrm);
    const float b = alpha >= 0.0f ? -nrm : nrm;
    const float dd = alpha - b;  // |dd| >= |b| >= sqrt(smallest normal) where used: no flush
    float rb, rd;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(rb) : "f"(b));
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(rd) : "f"(dd));
    rb = fmaf(rb, fmaf(-b, rb, 1.0f), rb);
    rd = fmaf(rd, fmaf(-dd, rd, 1.0f), rd);
    rd = fmaf(rd, fmaf(-dd, rd, 1.0f), rd);
    float q = -dd * rb;  // (b - alpha) / b
    q = fmaf(fmaf(-q, b, -dd), rb, q);
    const bool id = ss < BlT<float>::tiny();  // H = I, as bl_householder
    beta = id ? alpha : b;
    tau = id ? 0.0f : q;
    scal = id ? 0.0f : rd;
}
__device__ __forceinline__ void bl_householder_nb(double alpha, double ss, double& beta, double& tau, double& scal) {
    bl_householder(alpha, ss, beta, tau, scal);
}

// Sum over the block (blockDim.x a multiple of 32) in a fixed order; every thread gets it.
// `red` holds 32 elements of shared memory.
template <typename T> __device__ __forceinline__ T bl_sum_all(T v, T* red) {
    v = bl_warp_sum(v);
    const int nw = blockDim.x >> 5;
    if (nw == 1) return v;
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    T s = T(0);
    for (int w = 0; w < nw; ++w) s += red[w];
    return s;
}

// Max over the warp; every lane gets it.
template <typename T> __device__ __forceinline__ T bl_warp_max(T v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const T o = bl_shfl_xor(v, off);
        v = o > v ? o : v;
    }
    return v;
}

template <typename T> __device__ __forceinline__ T bl_max_all(T v, T* red) {
    v = bl_warp_max(v);
    const int nw = blockDim.x >> 5;
    if (nw == 1) return v;
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    T s = T(0);
    for (int w = 0; w < nw; ++w) s = red[w] > s ? red[w] : s;
    return s;
}

// sqrt(a^2 + b^2), as the CPU's fast_hypot: the plain formula where it cannot overflow or
// underflow harmfully, else the library's hypot.
__device__ __forceinline__ float bl_hypot(float a, float b) {
    const float s = a * a + b * b;
    return (s >= BlT<float>::tiny() && s < 1e30f) ? sqrtf(s) : hypotf(a, b);
}
__device__ __forceinline__ double bl_hypot(double a, double b) {
    const double s = a * a + b * b;
    return (s >= BlT<double>::tiny() && s < 1e30) ? sqrt(s) : hypot(a, b);
}

// 1 / sqrt(x) to about an ulp, x > 0 normal: the float one is the hardware estimate (2 ulp)
// refined by a Newton step, where c^2 + s^2 = 1 of a rotation built from it matters.
__device__ __forceinline__ float bl_rsqrt_acc(float x) {
    const float ri = rsqrtf(x);
    return ri * fmaf(-0.5f * x * ri, ri, 1.5f);
}
__device__ __forceinline__ double bl_rsqrt_acc(double x) { return rsqrt(x); }

// The lanes of this lane's group of `width` (a power of two, 1..32; groups width-aligned).
__device__ __forceinline__ unsigned bl_group_mask(int width) {
    const unsigned lane = threadIdx.x & 31;
    return width == 32 ? 0xffffffffu : (((1u << width) - 1u) << (lane & ~(unsigned)(width - 1)));
}

// The plane rotation tql2 needs: r = |(a, b)|, c = a / r, s = b / r. One reciprocal square root instead of a square root and two
// divisions on the QL iteration's serial chain (the float one refined by a Newton step);
// the plain formulas where a^2 + b^2 would overflow or lose accuracy to underflow.
__device__ __forceinline__ void bl_givens(float a, float b, float& c, float& s, float& r) {
    const float x = a * a + b * b;
    if (x >= 1e-30f && x < 1e30f) {
        const float ri = bl_rsqrt_acc(x);
        r = x * ri;
        c = a * ri;
        s = b * ri;
    } else {
        r = bl_hypot(a, b);
        c = a / r;
        s = b / r;
    }
}
__device__ __forceinline__ void bl_givens(double a, double b, double& c, double& s, double& r) {
    const double x = a * a + b * b;
    if (x >= 1e-300 && x < 1e300) {
        const double ri = bl_rsqrt_acc(x);
        r = x * ri;
        c = a * ri;
        s = b * ri;
    } else {
        r = bl_hypot(a, b);
        c = a / r;
        s = b / r;
    }
}

// a / b where a few ulps do not matter (Sturm counts): float by the hardware's fast
// division, double as it is.
__device__ __forceinline__ float bl_fdiv(float a, float b) { return __fdividef(a, b); }
__device__ __forceinline__ double bl_fdiv(double a, double b) { return a / b; }

// a / t for a pivot of the Sturm and twisted recurrences, which their pivmin guard keeps at
// least the smallest normal number in magnitude: float by one approximate reciprocal (no
// range fix-up on the recurrence's chain, as __fdividef has), double as it is.
__device__ __forceinline__ float bl_pivdiv(float a, float t) {
#ifdef __CUDA_ARCH__
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(t));
    return a * r;
#else  // the host emulators (gpu-lab/warp_emu)
    return a / t;
#endif
}
__device__ __forceinline__ double bl_pivdiv(double a, double t) { return a / t; }

template <typename T> __device__ __forceinline__ T bl_sign(T a, T b) {
    return b >= T(0) ? BlT<T>::abs_(a) : -BlT<T>::abs_(a);
}

// The tangent t = s / c of the Jacobi rotation that annihilates apq between diagonal
// entries app and aqq (two-sided: of a symmetric matrix; one-sided: the squared norms and
// the dot product of two columns): t = sign(theta) / (|theta| + sqrt(theta^2 + 1)),
// theta = (aqq - app) / (2 apq), written without theta (no overflow for tiny apq); apq
// nonzero. Any t gives an orthogonal rotation as long as c = 1 / sqrt(1 + t^2) is exact
// to about an ulp (bl_rsqrt_acc). t's own error leaves about that relative part of apq
// in place: Fast takes the hardware's estimates (2 ulps; what the two-sided Jacobi
// affords), else within about an ulp (the one-sided's sweeps would grow by one of eight,
// gpu-lab/warp_emu's model of the estimates says).
template <bool Fast, typename T> __device__ __forceinline__ T bl_jacobi_t(T app, T aqq, T apq) {
    const T d = aqq - app;
    const T r2 = d * d + T(4) * apq * apq;
    T r;
    if constexpr (sizeof(T) == 4) r = r2 * (Fast ? rsqrtf(r2) : bl_rsqrt_acc(r2));
    else r = sqrt(r2);
    const T den = BlT<T>::abs_(d) + r;
    const T t = Fast ? bl_fdiv(T(2) * apq, den) : T(2) * apq / den;
    return d < T(0) ? -t : t;
}

// ---------------------------------------------------------------------------------------
// Eigenvectors of a symmetric tridiagonal T without a serial chain, shared by the SVD's
// `bidiag` fast path (T the Golub-Kahan tridiagonal of B: zero diagonal) and eigh's
// `block` fast path (T from the Householder tridiagonalisation). T is given by `dg(i)`,
// its diagonal, and `off(i)`, the entry coupling i and i + 1 (b2[i] = off(i)^2).

// Who runs a cooperative helper (bl_tri_lowdin, eigh's bl_eigh_bisect): every thread of
// a block, or one group of lanes of a warp (a warp kernel's matrix; its groups may take
// other paths meanwhile, so they sync apart).
struct BlBlockTeam {
    __device__ int rank() const { return threadIdx.x; }
    __device__ int size() const { return blockDim.x; }
    __device__ void sync() const { __syncthreads(); }
};
struct BlGroupTeam {
    int lane, width;  // lane of the group, lanes a group (a power of two)
    __device__ int rank() const { return lane; }
    __device__ int size() const { return width; }
    __device__ void sync() const { __syncwarp(bl_group_mask(width)); }
};

// The pivot guard of the Sturm recurrences (LAPACK's pivmin): tiny times the largest
// squared off-diagonal entry, at least tiny.
template <typename T> __device__ __forceinline__ T bl_tri_pivmin(T offmax2) {
    return BlT<T>::tiny() * (offmax2 > T(1) ? offmax2 : T(1));
}

// The diagonal of the Golub-Kahan tridiagonal.
template <typename T> struct BlTriZero {
    __device__ __forceinline__ T operator()(int) const { return T(0); }
};

// The Sturm count of T at x: how many of its eigenvalues lie below x (LAPACK's xSTEBZ
// recurrence, with its pivmin guard).
template <typename T, typename Dg>
__device__ __forceinline__ int bl_tri_count(Dg dg, const T* b2, int len, T x, T pivmin) {
    int cnt = 0;
    T t = dg(0) - x;
    for (int i = 0;; ++i) {
        if (BlT<T>::abs_(t) < pivmin) t = -pivmin;
        cnt += t < T(0);
        if (i == len - 1) break;
        t = dg(i + 1) - x - bl_pivdiv(b2[i], t);
    }
    return cnt;
}

// The eigenvalue of T of index idx (ascending, from 0) in [x0, x1) by bisection on Sturm
// counts (LAPACK's xSTEBZ, with its pivmin guard), to 2 eps max(|x0|, |x1|) + atol;
// steps: the halvings it took.
template <typename T, typename Dg>
__device__ T bl_tri_bisect(Dg dg, const T* b2, int len, int idx, T x0, T x1, T pivmin, T atol, int& steps) {
    const T eps = BlT<T>::eps();
    int st = 0;
    while (st < 256) {
        const T mid = T(0.5) * (x0 + x1);
        const T big = BlT<T>::abs_(x0) > BlT<T>::abs_(x1) ? BlT<T>::abs_(x0) : BlT<T>::abs_(x1);
        if (x1 - x0 <= T(2) * eps * big + atol || !(mid > x0 && mid < x1)) break;
        const int cnt = bl_tri_count(dg, b2, len, mid, pivmin);
        if (cnt > idx) x1 = mid;
        else x0 = mid;
        ++st;
    }
    steps = st;
    return T(0.5) * (x0 + x1);
}

// x[0..len) (stride xs) = the twisted-factorisation vector of T - s I (unnormalised, its
// entry r = 1); returns its squared norm, and in gam the twist's pivot gamma_r (the
// Rayleigh correction is gam / norm^2). The factorisations from below (dm) and from above
// (dp), twisted where |dp_i + dm_i - (t_ii - s)| is least: one inverse-iteration step from
// the best unit vector. x holds the lower factor's pivots on the way.
template <typename T, typename Dg, typename Of>
__device__ T bl_tri_twist(Dg dg, Of off, const T* b2, int len, T s, T pivmin, T* x, int xs, T& gam) {
    auto guard = [&](T t) { return BlT<T>::abs_(t) < pivmin ? -pivmin : t; };
    // From below: dm_i = t_ii - s - b_i^2 / dm_{i+1}.
    T t = guard(dg(len - 1) - s);
    x[(bl_i64)(len - 1) * xs] = t;
    for (int i = len - 2; i >= 0; --i) {
        t = guard(dg(i) - s - bl_pivdiv(b2[i], t));
        x[(bl_i64)i * xs] = t;
    }
    // From above: dp_i = t_ii - s - b_{i-1}^2 / dp_{i-1}; the twist where |gamma_i| is least.
    t = guard(dg(0) - s);
    T best = t + x[0] - (dg(0) - s);
    int r = 0;
    for (int i = 1; i < len; ++i) {
        t = guard(dg(i) - s - bl_pivdiv(b2[i - 1], t));
        const T gi = t + x[(bl_i64)i * xs] - (dg(i) - s);
        if (BlT<T>::abs_(gi) < BlT<T>::abs_(best)) {
            best = gi;
            r = i;
        }
    }
    gam = best;
    // dp again above the twist, over dm there.
    t = guard(dg(0) - s);
    for (int i = 0; i < r; ++i) {
        x[(bl_i64)i * xs] = t;
        t = guard(dg(i + 1) - s - bl_pivdiv(b2[i], t));
    }
    // The vector: z_r = 1, z_i = -(b_i / dp_i) z_{i+1} above, -(b_{i-1} / dm_i) z_{i-1} below.
    T z = T(1), nrm = T(1);
    for (int i = r - 1; i >= 0; --i) {
        z = -bl_pivdiv(off(i), x[(bl_i64)i * xs]) * z;
        x[(bl_i64)i * xs] = z;
        nrm += z * z;
    }
    x[(bl_i64)r * xs] = T(1);
    z = T(1);
    for (int i = r + 1; i < len; ++i) {
        z = -bl_pivdiv(off(i - 1), x[(bl_i64)i * xs]) * z;
        x[(bl_i64)i * xs] = z;
        nrm += z * z;
    }
    return nrm;
}

// The vectors of close values made orthonormal: X0 holds q unit vectors of length len
// (entry i of vector k at [i ldx + k], ldx >= q; X1 likewise) for the values sig
// ascending; the pairs closer than win get first-order symmetric (Lowdin) steps
// X <- X (I - E/2), E = X^T X - I over those pairs (in Ex, q x q), until E is at rounding
// level. Returns X0 or X1, whichever holds the
// result, or null (the same in every thread) where it cannot vouch for them: E beyond 1/4
// (vectors that coincide: values equal or too close for their shifts), or not at rounding
// level after three steps, or fl[0] set by the caller before (a vector that overflowed).
// fl[1], fl[2]: E's largest entry (float bits), two slots. Run by a team (BlBlockTeam,
// BlGroupTeam); starts with its sync.
template <typename T, typename Team>
__device__ T* bl_tri_lowdin(const Team& tm, T* X0, T* X1, T* Ex, int len, int q, int ldx, const T* sig, T win,
                             int* fl) {
    const int tid = tm.rank(), nt = tm.size();
    const T eps = BlT<T>::eps();
    T* X = X0;
    T* Y = X1;
    if (tid == 0) fl[1] = 0;
    for (int it = 0;; ++it) {
        int* slot = fl + 1 + (it & 1);  // two slots: one is read while the next is cleared
        tm.sync();
        if (fl[0]) return nullptr;
        // E over the window: thread c the pairs (c, b > c).
        float emax = 0.0f;
        for (int c = tid; c < q; c += nt)
            for (int b = c + 1; b < q && sig[b] - sig[c] <= win; ++b) {
                T dot = T(0);
                for (int i = 0; i < len; ++i) dot += X[(bl_i64)i * ldx + b] * X[(bl_i64)i * ldx + c];
                Ex[(bl_i64)b * q + c] = dot;
                Ex[(bl_i64)c * q + b] = dot;
                const float a = (float)BlT<T>::abs_(dot);
                emax = a > emax ? a : emax;
            }
        atomicMax(slot, __float_as_int(emax));
        tm.sync();
        const float em = __int_as_float(*slot);
        if (tid == 0) fl[1 + ((it + 1) & 1)] = 0;
        if (em <= 8.0f * (float)eps) return X;
        if (!(em <= 0.25f) || it == 3) return nullptr;
        // Y = X (I - E/2) over the window.
        for (int c = tid; c < q; c += nt) {
            int lo = c, hi = c;
            while (lo > 0 && sig[c] - sig[lo - 1] <= win) --lo;
            while (hi + 1 < q && sig[hi + 1] - sig[c] <= win) ++hi;
            for (int i = 0; i < len; ++i) {
                const T* xi = X + (bl_i64)i * ldx;
                T y = xi[c];
                for (int b = lo; b <= hi; ++b)
                    if (b != c) y -= T(0.5) * Ex[(bl_i64)b * q + c] * xi[b];
                Y[(bl_i64)i * ldx + c] = y;
            }
        }
        T* tmp = X;
        X = Y;
        Y = tmp;
    }
}

// The first entry of largest |x| of x[0], x[st], .., x[(len - 1) st], for every lane of
// the warp (1 where none is larger than zero, NaN included): the sign convention's lead.
template <typename W> __device__ W bl_warp_lead(const W* x, bl_i64 st, int len) {
    const int lane = threadIdx.x & 31;
    W best = W(0), lead = W(1);
    int at = 1 << 30;
    for (int i = lane; i < len; i += 32) {
        const W v = x[i * st];
        if (BlT<W>::abs_(v) > best) {
            best = BlT<W>::abs_(v);
            lead = v;
            at = i;
        }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const W ob = bl_shfl_xor(best, off);
        const W ol = bl_shfl_xor(lead, off);
        const int oa = __shfl_xor_sync(0xffffffffu, at, off);
        if (ob > best || (ob == best && oa < at)) {
            best = ob;
            lead = ol;
            at = oa;
        }
    }
    return lead;
}

// The sign convention on one factor column, by a warp: a (na entries, stride sa) negated
// where its lead (bl_warp_lead) is negative, and b (nb entries, stride sb: the other
// factor's column or row) with it; a NaN column stays as it is.
template <typename T> __device__ void bl_warp_sign(T* a, bl_i64 sa, int na, T* b, bl_i64 sb, int nb) {
    if (bl_warp_lead(a, sa, na) < T(0)) {
        for (int i = threadIdx.x & 31; i < na; i += 32) a[i * sa] = -a[i * sa];
        for (int i = threadIdx.x & 31; i < nb; i += 32) b[i * sb] = -b[i * sb];
    }
}

// ---------------------------------------------------------------------------------------
// Products with a sequence of Householder reflectors without forming it (xORG2R): the
// `bidiag` SVD's fast path (U = Q [u; 0], V = 1 (+) P v) and the `block` eigh's
// (V = 1 (+) Q' x). Reflectors a block in bl_refl_apply (three barriers a block):
// BL_REFL_NB, or BL_REFL_NB_WIDE from BL_REFL_WIDE_FROM columns (bl_refl_nb).
#define BL_REFL_NB 16
#define BL_REFL_NB_WIDE 32
#define BL_REFL_WIDE_FROM 96
__device__ __forceinline__ int bl_refl_nb(int cols) {
    return cols >= BL_REFL_WIDE_FROM ? BL_REFL_NB_WIDE : BL_REFL_NB;
}

// One product of bl_refl_apply: Y <- H_0 H_1 ... H_{k-1} Y for the m x n matrix Y (element
// (i, c) at Y[i ys + c cs]), H_j = I - tau[j] v_j v_j^T with v_j's row r at R[j ld + r rs]
// (the SVD: column-major, rs = 1; eigh: the columns of a row-major matrix, ld = 1) stored
// whole: zero above row j, 1 at row j (bl_refl_explicit); nbk reflectors a block.
// Z: min(nbk, k) x (n + min(nbk, k)) elements of scratch.
template <typename T> struct BlRefl {
    const T* R;
    const T* tau;
    T* Y;
    T* Z;
    bl_i64 ys, cs;
    int ld, rs, m, k, n, nbk;
};

// Reflectors j < k stored whole in R (element (r, j) at R[j ld + r rs]) for bl_refl_apply:
// rows above j zeroed, row j set to 1 (the factorisation leaves other entries, or nothing,
// there). By the block's threads, no barrier.
template <typename T> __device__ __forceinline__ void bl_refl_explicit(T* R, int ld, int rs, int k) {
    for (int idx = threadIdx.x; idx < k * k; idx += blockDim.x) {
        const int j = idx / k, r = idx - j * k;
        if (r <= j) R[(bl_i64)j * ld + (bl_i64)r * rs] = r == j ? T(1) : T(0);
    }
}

// acc[u][c] = sum over rows r = r0, r0 + G, .. < m of v[r rs + u ld] x[r xr + c xc], u and c
// clamped to ku and cu (the tile's last valid column; the rest is not written).
template <typename T, typename S>
__device__ __forceinline__ void bl_refl_tile(T (&acc)[4][4], const T* v, int ld, int rs, int ku, const T* x, S xr, S xc,
                                             int cu, int m, int r0, int G) {
    int vo[4];
    S xo[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        vo[u] = (u < ku ? u : ku) * ld;
        xo[u] = (u < cu ? u : cu) * xc;
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[u][c] = T(0);
    }
#pragma unroll 4
    for (int r = r0; r < m; r += G) {
        T a[4], y[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            a[u] = v[vo[u] + r * rs];
            y[u] = x[r * xr + xo[u]];
        }
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[u][c] += a[u] * y[c];
    }
}

// acc[u][c] = sum over l < nb of v[l ld + u vs] w[l zl + c cs].
template <typename T>
__device__ __forceinline__ void bl_refl_update_tile(T (&acc)[4][4], const T* v, int ld, int vs, const T* w, int zl,
                                                    int cs, int nb) {
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[u][c] = T(0);
#pragma unroll 4
    for (int l = 0; l < nb; ++l, v += ld, w += zl) {
        T a[4], y[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            a[u] = v[u * vs];
            y[u] = w[u * cs];
        }
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[u][c] += a[u] * y[c];
    }
}

// Y <- H_0 H_1 ... H_{k-1} Y (BlRefl J) without forming the product (xORG2R) or
// multiplying by it: blocks of nbk reflectors from the last, each Y -= V W with W
// from Z = V^T Y and G = V^T V by the recurrence w_j = tau_j (z_j - sum_{l > j} G_jl w_l)
// (the compact WY form, its T never formed); three barriers a block. Z's tiles past the
// edge read the last valid column, Y's update tiles up to 3 rows or columns beyond (see
// there); neither writes those. Ends with a barrier. The loops are unrolled by 4, so
// that loads of several rows are in flight (Y and Z are in global memory; H200
// 2026-12-04, float32: eigh `block` 1024x64x64 0.662 -> 0.610 ms, 1024x128x128 4.29 ->
// 4.08; the SVD's `bidiag` 1024x128x128 11.0 -> 10.9, 256x256x256 30.6 -> 29.9,
// 4096x33x33 1.91 -> 1.99).
template <typename T> __device__ __noinline__ void bl_refl_apply(const BlRefl<T> J) {
    const int tid = threadIdx.x, nt = blockDim.x;
    const bool rows_fast = (J.ys < 0 ? -J.ys : J.ys) <= (J.cs < 0 ? -J.cs : J.cs);
    for (int j1 = J.k; j1 > 0; j1 -= J.nbk) {
        const int j0 = j1 > J.nbk ? j1 - J.nbk : 0, nb = j1 - j0, zl = J.n + nb;
        // Z and G: a 4 x 4 tile a group of G lanes (rows split among them, summed by
        // shuffles), Z's tiles then G's.
        const int kb = (nb + 3) >> 2, tz = kb * ((J.n + 3) >> 2), tiles = tz + kb * kb;
        int G = 1;
        while (G < 32 && tiles * G * 2 <= nt) G *= 2;
        const int gl = tid & (G - 1), ng = nt / G;
        for (int base = 0; base < tiles; base += ng) {  // the same trip count in every lane
            const int t = base + tid / G, gt = t >= tz;
            const int ti = gt ? t - tz : t, k0 = (ti % kb) * 4, c0 = (ti / kb) * 4;
            const int lim = gt ? nb : J.n;
            // v: reflectors j0 + k0 .. of R; x: columns c0 .. of Y, or reflectors j0 + c0 .. of R.
            T acc[4][4];
            const T* vp = J.R + (bl_i64)(j0 + k0) * J.ld;
            const int ku = nb - 1 - k0, cu = lim - 1 - c0;  // the last valid v and x
            const int m = t < tiles ? J.m : 0;              // a lane past the tiles: zeros
            if (gt)
                bl_refl_tile<T>(acc, vp, J.ld, J.rs, ku, J.R + (bl_i64)(j0 + c0) * J.ld, J.rs, J.ld, cu, m, j0 + gl, G);
            else bl_refl_tile<T>(acc, vp, J.ld, J.rs, ku, J.Y + c0 * J.cs, J.ys, J.cs, cu, m, j0 + gl, G);
            for (int off = G >> 1; off > 0; off >>= 1)
#pragma unroll
                for (int u = 0; u < 4; ++u)
#pragma unroll
                    for (int c = 0; c < 4; ++c) acc[u][c] += bl_shfl_xor(acc[u][c], off);
            if (t < tiles && gl == 0) {
                const int col = gt ? J.n : 0;
#pragma unroll
                for (int u = 0; u < 4; ++u)
#pragma unroll
                    for (int c = 0; c < 4; ++c)
                        if (k0 + u < nb && c0 + c < lim) J.Z[(k0 + u) * zl + col + c0 + c] = acc[u][c];
            }
        }
        __syncthreads();
        // W over Z, a thread a column of Y.
        for (int c = tid; c < J.n; c += nt)
            for (int u = nb - 1; u >= 0; --u) {
                const T* gu = J.Z + u * zl + J.n;
                T s = J.Z[u * zl + c];
#pragma unroll 4
                for (int l = u + 1; l < nb; ++l) s -= gu[l] * J.Z[l * zl + c];
                J.Z[u * zl + c] = J.tau[j0 + u] * s;
            }
        __syncthreads();
        // Y -= V W over rows j0..m: a thread a 4 x 4 tile, a warp's entries consecutive
        // along Y's contiguous axis: rows i0 + u rb where Y is column-major, else columns
        // c0 + c cb.
        const int rb = (J.m - j0 + 3) >> 2, cb = (J.n + 3) >> 2;
        const int rstep = rows_fast ? rb : 1, cstep = rows_fast ? 1 : cb;
        for (int t = tid; t < rb * cb; t += nt) {
            const int ir = rows_fast ? t % rb : t / cb, ic = rows_fast ? t / rb : t % cb;
            const int i0 = j0 + (rows_fast ? ir : 4 * ir), c0 = rows_fast ? 4 * ic : ic;
            // A tile past the edge reads up to 3 rows past R's reflector (the next one, or
            // what follows R in memory: the caller's to provide) and up to 3 columns past
            // Z's row (G, or the scratch after Z); those entries are not written.
            T acc[4][4];
            bl_refl_update_tile<T>(acc, J.R + (bl_i64)j0 * J.ld + (bl_i64)i0 * J.rs, J.ld, rstep * J.rs, J.Z + c0, zl,
                                   cstep, nb);
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const int i = i0 + u * rstep;
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    const int cc = c0 + c * cstep;
                    if (i < J.m && cc < J.n) J.Y[i * J.ys + cc * J.cs] -= acc[u][c];
                }
            }
        }
        __syncthreads();
    }
}
