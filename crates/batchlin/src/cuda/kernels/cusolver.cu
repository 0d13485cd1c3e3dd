// The kernels around a cuSOLVER eigh (cuda/cusolver.rs): `cus_eigh_pack_<t>` before
// it, `cus_eigh_unpack_<t>` after it, one block a matrix. cuSOLVER takes one dense
// column-major matrix a call and knows nothing of batchlin's conventions, so pack reads
// the named triangle through the caller's strides into a full symmetric column-major
// work matrix, scaled by a power of two so that max|a| lies in [0.5, 1) (as every
// backend scales), and replaces a matrix holding NaN/Inf by the identity (so that the
// solver runs on finite data); unpack undoes the scaling, applies the sign convention
// (each eigenvector's largest component positive, the first such on ties), writes the
// caller's strided outputs, NaN for the non-finite matrices, and the info words.
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
    const int* dinfo;  // chunk: the solver's info
    int b0, n, lower;
};

template <typename T> __device__ void bl_cus_eigh_pack(const CusEighArgs& p) {
    __shared__ T red[32];
    const int n = p.n, tid = threadIdx.x, nt = blockDim.x;
    const bl_i64 b = (bl_i64)p.b0 + blockIdx.x;
    const T* ap = reinterpret_cast<const T*>(p.a) + b * p.a_bs;
    T* z = reinterpret_cast<T*>(p.work) + (bl_i64)blockIdx.x * n * n;
    T mx = T(0);
    for (bl_i64 idx = tid; idx < (bl_i64)n * n; idx += nt) {
        const int i = (int)(idx / n), j = (int)(idx - (bl_i64)i * n);
        if (p.lower ? i >= j : i <= j) {
            const T f = bl_absflag(ap[i * p.a_rs + j * p.a_cs]);
            mx = f > mx ? f : mx;
        }
    }
    mx = bl_max_all(mx, red);
    bool bad;
    const int es = bl_scale_exp(mx, bad);
    for (bl_i64 idx = tid; idx < (bl_i64)n * n; idx += nt) {
        const int i = (int)(idx / n), j = (int)(idx - (bl_i64)i * n);
        if (!(p.lower ? i >= j : i <= j)) continue;
        T x;
        if (bad) {
            x = i == j ? T(1) : T(0);
        } else {
            x = bl_scale2(ap[i * p.a_rs + j * p.a_cs], -es);
            // Subnormal (in the input or after the scaling): zero, as every backend does.
            if (BlT<T>::abs_(x) < BlT<T>::tiny()) x = T(0);
        }
        z[(bl_i64)j * n + i] = x;
        z[(bl_i64)i * n + j] = x;
    }
    if (tid == 0) p.scale[blockIdx.x] = bad ? (int)0x80000000 : es;
}

template <typename T> __device__ void bl_cus_eigh_unpack(const CusEighArgs& p) {
    extern __shared__ __align__(16) unsigned char bl_smem[];
    T* sign = reinterpret_cast<T*>(bl_smem);  // n
    const int n = p.n, tid = threadIdx.x, nt = blockDim.x;
    const bl_i64 b = (bl_i64)p.b0 + blockIdx.x;
    const T* z = reinterpret_cast<const T*>(p.work) + (bl_i64)blockIdx.x * n * n;
    const T* wv = reinterpret_cast<const T*>(p.wwork) + (bl_i64)blockIdx.x * n;
    T* wp = reinterpret_cast<T*>(p.w) + b * p.w_bs;
    T* vp = p.v ? reinterpret_cast<T*>(p.v) + b * p.v_bs : nullptr;
    const int es = p.scale[blockIdx.x];
    const bool bad = es == (int)0x80000000;
    if (bad) {
        for (int j = tid; j < n; j += nt) wp[j * p.w_cs] = BlT<T>::nan();
        if (vp)
            for (bl_i64 idx = tid; idx < (bl_i64)n * n; idx += nt) {
                const int i = (int)(idx / n), j = (int)(idx - (bl_i64)i * n);
                vp[i * p.v_rs + j * p.v_cs] = BlT<T>::nan();
            }
        if (tid == 0 && p.info) p.info[b] = BL_INFO_NONFINITE;
        return;
    }
    for (int j = tid; j < n; j += nt) wp[j * p.w_cs] = bl_scale2(wv[j], es);
    if (vp) {
        for (int j = tid; j < n; j += nt) {
            const T* col = z + (bl_i64)j * n;
            T best = T(0), lead = T(1);
            for (int i = 0; i < n; ++i) {
                const T x = col[i];
                if (BlT<T>::abs_(x) > best) {
                    best = BlT<T>::abs_(x);
                    lead = x;
                }
            }
            sign[j] = lead < T(0) ? T(-1) : T(1);
        }
        __syncthreads();
        // Walk the output in its own fastest order: coalesced stores either way round.
        const bool rows_outer = (p.v_rs < 0 ? -p.v_rs : p.v_rs) >= (p.v_cs < 0 ? -p.v_cs : p.v_cs);
        for (bl_i64 idx = tid; idx < (bl_i64)n * n; idx += nt) {
            const int o = (int)(idx / n), in = (int)(idx - (bl_i64)o * n);
            const int i = rows_outer ? o : in, j = rows_outer ? in : o;
            vp[i * p.v_rs + j * p.v_cs] = sign[j] * z[(bl_i64)j * n + i];
        }
    }
    if (tid == 0 && p.info) {
        const T lo = bl_scale2(wv[0], es), hi = bl_scale2(wv[n - 1], es);
        const bool over = !(BlT<T>::abs_(lo) <= BlT<T>::huge() && BlT<T>::abs_(hi) <= BlT<T>::huge());
        p.info[b] = (p.dinfo[blockIdx.x] > 0 ? BL_INFO_NOT_CONVERGED : 0u) | (over ? BL_INFO_OVERFLOW : 0u);
    }
}

#define BL_CUS_EIGH_PACK(TN, T)                                                                      \
    extern "C" __global__ void __launch_bounds__(256) cus_eigh_pack_##TN(CusEighArgs p) { bl_cus_eigh_pack<T>(p); }
#define BL_CUS_EIGH_UNPACK(TN, T)                                                                    \
    extern "C" __global__ void __launch_bounds__(256) cus_eigh_unpack_##TN(CusEighArgs p) { bl_cus_eigh_unpack<T>(p); }
