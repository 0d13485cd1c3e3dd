// Symmetric eigendecomposition, one block a matrix (eigh_block_<t>): the named triangle
// read into a full symmetric work matrix, scaled by a power of two so max|a| lies in
// [0.5, 1); Householder tridiagonalisation (LAPACK xSYTD2 on the full matrix, as the CPU
// kernel); Q formed in place over the reflectors (xORG2R); the implicit QL iteration with Wilkinson shifts
// (EISPACK tql2, the CPU kernel's) run by thread 0, which logs each sweep's rotations to
// one of two slots while every thread applies the previous slot's to its rows of Z
// (eigenvalues alone: bisection on Sturm counts, a thread an eigenvalue); then
// eigenvalues ascending (a stable rank sort), each eigenvector's largest component
// positive, the scaling undone.
//
// The work matrix (A, then Q and Z over it; row-major, leading dimension ld, odd) sits in
// dynamic shared memory when it fits, else in global scratch (`work`, work_bs elements a
// matrix); the small vectors are always in shared memory.
// info: bit 0 non-finite input (every output NaN), bit 1 not converged, bits 16.. the QL
// iterations (eigenvalues alone: the most bisection steps of an eigenvalue).

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
};

template <typename T> __device__ void bl_eigh_block(const EighArgs& p) {
    extern __shared__ __align__(16) unsigned char bl_smem[];
    const int n = p.n, ld = p.ld, tid = threadIdx.x, nt = blockDim.x;
    const bl_i64 b = (bl_i64)p.b0 + blockIdx.x;
    const bool vec = p.v != nullptr;
    T* sm = reinterpret_cast<T*>(bl_smem);
    T* A;
    if (p.work) {
        A = reinterpret_cast<T*>(p.work) + (bl_i64)blockIdx.x * p.work_bs;  // per launch
    } else {
        A = sm;
        sm += (bl_i64)n * ld;
    }
    T* const Z = A;  // the eigenvectors are formed over A
    T* d = sm;
    T* e = d + n;
    T* tau = e + n;
    T* vv = tau + n;
    T* pp = vv + n;
    T* rot = pp + n;  // two slots of (c[n], s[n])
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
    __syncthreads();

    // Tridiagonalisation: step k reduces column k below its sub-diagonal; the reflector
    // (v[k+1] = 1) is kept in column k below row k+1 for forming Q.
    for (int k = 0; k < n - 1; ++k) {
        const int r0 = k + 1;
        T part = T(0);
        for (int i = r0 + 1 + tid; i < n; i += nt) {
            const T x = A[(bl_i64)i * ld + k];
            part += x * x;
        }
        const T ss = bl_sum_all(part, red);
        const T alpha = A[(bl_i64)r0 * ld + k];
        T beta, t, scal;
        bl_householder(alpha, ss, beta, t, scal);
        for (int i = r0 + tid; i < n; i += nt) vv[i] = i == r0 ? T(1) : A[(bl_i64)i * ld + k] * scal;
        if (tid == 0) {
            e[k] = beta;
            tau[k] = t;
            d[k] = A[(bl_i64)k * ld + k];
        }
        __syncthreads();
        if (t != T(0)) {
            // p = tau A22 v; w = p - (tau/2)(p.v) v; A22 -= v w^T + w v^T.
            T part2 = T(0);
            for (int i = r0 + tid; i < n; i += nt) {
                const T* row = A + (bl_i64)i * ld;
                T s = T(0);
                for (int j = r0; j < n; ++j) s += row[j] * vv[j];
                pp[i] = t * s;
                part2 += pp[i] * vv[i];
            }
            const T kk = -(T(0.5) * t) * bl_sum_all(part2, red);
            for (int i = r0 + tid; i < n; i += nt) pp[i] += kk * vv[i];
            __syncthreads();
            for (int i = r0 + tid; i < n; i += nt) {
                T* row = A + (bl_i64)i * ld;
                const T vi = vv[i], wi = pp[i];
                for (int j = r0; j < n; ++j) row[j] -= vi * pp[j] + wi * vv[j];
            }
        }
        for (int i = r0 + 1 + tid; i < n; i += nt) A[(bl_i64)i * ld + k] = vv[i];
        __syncthreads();
    }
    if (tid == 0) {
        d[n - 1] = A[(bl_i64)(n - 1) * ld + n - 1];
        e[n - 1] = T(0);
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
            if (tid == 0) {
                const T el = BlT<T>::abs_(e[l]);
                const T dl = BlT<T>::abs_(d[l]);
                tst1 = dl + el > tst1 ? dl + el : tst1;
                m = l;
                while (m < n - 1 && !(BlT<T>::abs_(e[m]) <= eps * tst1)) ++m;
            }
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
                    for (int r = tid; r < n; r += nt) {
                        T* zr = Z + (bl_i64)r * ld;
                        T zh = zr[hi];
                        for (int i = hi - 1; i >= lo; --i) {
                            const T zi = zr[i];
                            zr[i + 1] = rs[i] * zi + rc[i] * zh;
                            zh = rc[i] * zi - rs[i] * zh;
                        }
                        zr[lo] = zh;
                    }
                ++t;
                if (stop) break;
            }
            if (tid == 0) {
                d[l] += f;
                e[l] = T(0);
            }
        }
    } else {
        // Eigenvalues alone: bisection on Sturm counts, a thread an eigenvalue (LAPACK's
        // xSTEBZ, with its pivmin guard), every thread at once: no serial chain.
        T* e2 = vv;
        for (int i = tid; i < n; i += nt) e2[i] = i < n - 1 ? e[i] * e[i] : T(0);
        if (tid == 0) msg[1] = 0;
        __syncthreads();
        T lo = d[0], hi = d[0], emax2 = T(0);
        for (int i = 0; i < n; ++i) {
            const T r = (i > 0 ? BlT<T>::abs_(e[i - 1]) : T(0)) + (i < n - 1 ? BlT<T>::abs_(e[i]) : T(0));
            lo = d[i] - r < lo ? d[i] - r : lo;
            hi = d[i] + r > hi ? d[i] + r : hi;
            emax2 = e2[i] > emax2 ? e2[i] : emax2;
        }
        const T pivmin = BlT<T>::tiny() * (emax2 > T(1) ? emax2 : T(1));
        // The interval's ends are accurate to eps times the spectrum's extent (as LAPACK's
        // default abstol): about 25 halvings in float32, 54 in float64.
        const T span = BlT<T>::abs_(lo) > BlT<T>::abs_(hi) ? BlT<T>::abs_(lo) : BlT<T>::abs_(hi);
        lo -= T(4) * eps * span + T(2) * pivmin;
        hi += T(4) * eps * span + T(2) * pivmin;
        int steps = 0;
        for (int k = tid; k < n; k += nt) {
            T x0 = lo, x1 = hi;
            int st = 0;
            while (st < 256) {
                const T mid = T(0.5) * (x0 + x1);
                const T big = BlT<T>::abs_(x0) > BlT<T>::abs_(x1) ? BlT<T>::abs_(x0) : BlT<T>::abs_(x1);
                if (x1 - x0 <= T(2) * eps * big + eps * span || !(mid > x0 && mid < x1)) break;
                int cnt = 0;
                T q = d[0] - mid;
                for (int i = 0;; ++i) {
                    if (BlT<T>::abs_(q) < pivmin) q = -pivmin;
                    cnt += q < T(0);
                    if (i == n - 1) break;
                    q = d[i + 1] - mid - bl_fdiv(e2[i], q);
                }
                if (cnt > k) x1 = mid;
                else x0 = mid;
                ++st;
            }
            pp[k] = T(0.5) * (x0 + x1);
            steps = st > steps ? st : steps;
        }
        atomicMax(msg + 1, steps);
        __syncthreads();
        for (int k = tid; k < n; k += nt) d[k] = pp[k];
        if (tid == 0) iters = msg[1];
    }
    __syncthreads();
    if (tid == 0) msg[0] = iters;
    __syncthreads();
    const int iters_all = msg[0];

    // Renormalise Z's columns after rotations (as the CPU kernel), then sort and sign.
    for (int j = tid; j < n; j += nt) {
        const T dj = d[j];
        int r = 0;
        for (int i = 0; i < n; ++i) {
            const T di = d[i];
            r += (di < dj) || (di == dj && i < j);
        }
        perm[r] = j;
    }
    if (vec) {
        for (int j = tid; j < n; j += nt) {
            T nn = T(0);
            for (int i = 0; i < n; ++i) {
                const T z = Z[(bl_i64)i * ld + j];
                nn += z * z;
            }
            const T sc = (iters_all > 0 && nn > T(0)) ? T(1) / BlT<T>::sqrt_(nn) : T(1);
            T best = T(0), lead = T(1);
            for (int i = 0; i < n; ++i) {
                const T z = Z[(bl_i64)i * ld + j];
                if (BlT<T>::abs_(z) > best) {
                    best = BlT<T>::abs_(z);
                    lead = z;
                }
            }
            pp[j] = lead < T(0) ? -sc : sc;  // the column's scale and sign
        }
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

#define BL_EIGH_BLOCK(TN, T)                                                                \
    extern "C" __global__ void __launch_bounds__(512) eigh_block_##TN(EighArgs p) { bl_eigh_block<T>(p); }
