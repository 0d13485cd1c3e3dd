/*
 * GPU tests of batchlin's C API: the device-pointer QR (batchlin_sqr_cuda and friends) on
 * memory and streams made with the CUDA driver API, and host calls with
 * BATCHLIN_BACKEND_CUDA on registered and unregistered buffers, each checked for
 * reconstruction, orthogonality, the triangle and sign of R, and against the CPU's result.
 * The device forms of eigh and the SVD, on device memory, against the definitions and the
 * CPU forms' results; their status where the backend lacks a kernel,
 * never a fault; a pointer that is not device memory is an argument error.
 *
 * Needs cuda.h and libcuda; scripts/test-c builds and runs it where they are, and it
 * prints "skipped: ..." and passes where there is no CUDA device. By hand:
 *   cargo build --release -p batchlin-c
 *   cc -std=c11 -O1 -g -Wall -Wextra -Werror -Icrates/batchlin-c/include \
 *      -I/usr/local/cuda/include crates/batchlin-c/tests/c/test_cuda.c \
 *      -Ltarget/release -lbatchlin -Wl,-rpath,$PWD/target/release \
 *      -L/usr/local/cuda/lib64/stubs -lcuda -lpthread -lm -o test_cuda
 *   LD_LIBRARY_PATH=/usr/local/cuda/lib64 ./test_cuda    # batchlin loads NVRTC from there
 *
 * Prints "N passed, M failed" last and exits non-zero when any check failed.
 */
#include "batchlin.h"
#include "check.h"

#include <cuda.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A driver call that must work: the test cannot go on without it. */
#define CU(call)                                                                       \
    do {                                                                               \
        CUresult r_ = (call);                                                          \
        if (r_ != CUDA_SUCCESS) {                                                      \
            const char *s_ = NULL;                                                     \
            cuGetErrorString(r_, &s_);                                                 \
            fprintf(stderr, "FATAL %s:%d: %s: %s (%d)\n", __FILE__, __LINE__, #call,   \
                    s_ ? s_ : "unknown error", (int)r_);                               \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static CUstream stream;

/* ------------------------------------------------------------------------------------ */
/* Host buffers of float or double, read and written as double. */

typedef struct {
    int dbl;
    size_t len;
    void *p;
} buf;

static size_t esize(int dbl) { return dbl ? sizeof(double) : sizeof(float); }

/* Page-aligned and a whole number of pages, so that buffers registered separately never
 * share a page (CUDA pins whole pages). */
static void *page_alloc(size_t bytes) {
    size_t size = (bytes + 4095) / 4096 * 4096;
    void *p = aligned_alloc(4096, size ? size : 4096);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memset(p, 0, size ? size : 4096);
    return p;
}

static buf balloc(int dbl, size_t len) {
    buf b;
    b.dbl = dbl;
    b.len = len;
    b.p = page_alloc(len * esize(dbl));
    return b;
}

static void bfree(buf b) { free(b.p); }
static size_t bbytes(buf b) { return b.len * esize(b.dbl); }

static double get(buf b, size_t i) {
    return b.dbl ? ((double *)b.p)[i] : (double)((float *)b.p)[i];
}

static void set(buf b, size_t i, double v) {
    if (b.dbl)
        ((double *)b.p)[i] = v;
    else
        ((float *)b.p)[i] = (float)v;
}

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static double uniform(void) { /* in [-1, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 4503599627370496.0 - 1.0;
}

static void fill_random(buf b) {
    for (size_t i = 0; i < b.len; i++) set(b, i, uniform());
}

/* Matrix `k` of a batch with layout `l`, as a row-major rows x cols double array. */
static void extract(buf x, const batchlin_layout *l, int64_t k, int64_t rows, int64_t cols,
                    double *out) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            out[i * cols + j] =
                get(x, (size_t)(k * l->batch_stride + i * l->row_stride + j * l->col_stride));
}

static const char *tname(int dbl) { return dbl ? "double" : "float"; }

/* The accuracy asked of a QR with Q m x kq: the accuracy floor of docs/ARCHITECTURE.md
 * (1e-4 relative in float, scaled by eps in double), with room for the sizes' growth of rounding errors. */
static double tol_for(int dbl, int64_t m, int64_t kq) {
    double grow = sqrt((double)(m * (kq > 0 ? kq : 1))) / 32.0;
    if (grow < 1) grow = 1;
    return (dbl ? 1e-11 : 2e-4) * grow;
}

/* GPU against CPU: the same unique factorisation (diag(R) >= 0), up to rounding times the
 * condition of the matrix; a sign or an element out of place is off by O(1). */
static double agree_tol(int dbl) { return dbl ? 1e-8 : 1e-2; }

/* ------------------------------------------------------------------------------------ */
/* Device memory. */

static CUdeviceptr dalloc(size_t bytes) {
    CUdeviceptr p = 0;
    CU(cuMemAlloc(&p, bytes ? bytes : 16));
    return p;
}

static void *dptr(CUdeviceptr p) { return (void *)(uintptr_t)p; }

/* Fill with 0xff bytes: NaN in float and double, 0xffffffff in info words, so that any
 * element a call fails to write shows. */
static void poison(CUdeviceptr p, size_t bytes) {
    if (bytes) CU(cuMemsetD8Async(p, 0xff, bytes, stream));
}

static batchlin_status qr_cuda(int dbl, CUdeviceptr a, int64_t batch, int64_t m, int64_t n,
                               batchlin_qr_mode mode, CUdeviceptr q, CUdeviceptr r,
                               CUdeviceptr info, CUstream s) {
    uint32_t *pi = (uint32_t *)dptr(info);
    return dbl ? batchlin_dqr_cuda((const double *)dptr(a), batch, m, n, mode,
                                   (double *)dptr(q), (double *)dptr(r), pi, (void *)s)
               : batchlin_sqr_cuda((const float *)dptr(a), batch, m, n, mode, (float *)dptr(q),
                                   (float *)dptr(r), pi, (void *)s);
}

static batchlin_status qr_cuda_strided(int dbl, CUdeviceptr a, const batchlin_layout *al,
                                       int64_t m, int64_t n, batchlin_qr_mode mode,
                                       CUdeviceptr q, const batchlin_layout *ql, CUdeviceptr r,
                                       const batchlin_layout *rl, CUdeviceptr info,
                                       CUstream s) {
    uint32_t *pi = (uint32_t *)dptr(info);
    return dbl ? batchlin_dqr_cuda_strided((const double *)dptr(a), al, m, n, mode,
                                           (double *)dptr(q), ql, (double *)dptr(r), rl, pi,
                                           (void *)s)
               : batchlin_sqr_cuda_strided((const float *)dptr(a), al, m, n, mode,
                                           (float *)dptr(q), ql, (float *)dptr(r), rl, pi,
                                           (void *)s);
}

/* The CPU's QR of host data (contiguous). */
static batchlin_status qr_cpu(int dbl, const void *a, int64_t b, int64_t m, int64_t n,
                              batchlin_qr_mode mode, void *q, void *r, uint32_t *info) {
    return dbl ? batchlin_dqr(a, b, m, n, mode, q, r, info)
               : batchlin_sqr(a, b, m, n, mode, q, r, info);
}

/* Host data, strided, on a chosen backend. */
static batchlin_status qr_host(int dbl, const void *a, const batchlin_layout *al, int64_t m,
                               int64_t n, batchlin_qr_mode mode, void *q,
                               const batchlin_layout *ql, void *r, const batchlin_layout *rl,
                               uint32_t *info, batchlin_backend be) {
    return dbl ? batchlin_dqr_strided(a, al, m, n, mode, q, ql, r, rl, info, be)
               : batchlin_sqr_strided(a, al, m, n, mode, q, ql, r, rl, info, be);
}

/* ------------------------------------------------------------------------------------ */
/* Dense checks on one matrix (row-major doubles). */

static double fro(const double *x, int64_t len) {
    double s = 0;
    for (int64_t i = 0; i < len; i++) s += x[i] * x[i];
    return sqrt(s);
}

static double fro_diff(const double *x, const double *y, int64_t len) {
    double s = 0;
    for (int64_t i = 0; i < len; i++) s += (x[i] - y[i]) * (x[i] - y[i]);
    return sqrt(s);
}

/* ||X^T X - I||_F for X rows x cols (orthonormal columns). */
static double orth_cols(const double *x, int64_t rows, int64_t cols) {
    double s = 0;
    for (int64_t i = 0; i < cols; i++)
        for (int64_t j = 0; j < cols; j++) {
            double d = (i == j) ? -1.0 : 0.0;
            for (int64_t p = 0; p < rows; p++) d += x[p * cols + i] * x[p * cols + j];
            s += d * d;
        }
    return sqrt(s);
}

/* A = Q R with Q m x kq orthonormal, R kq x n upper triangular (exact zeros below the
 * diagonal), diag(R) >= 0, nothing NaN. q NULL checks R alone. */
static void check_qr_one(int dbl, const char *what, const double *a, const double *q,
                         const double *r, int64_t m, int64_t n, int64_t kq) {
    double tol = tol_for(dbl, m, kq), na = fro(a, m * n);
    if (na == 0) na = 1;
    double below = 0, neg = 0;
    int nan = 0;
    for (int64_t i = 0; i < kq; i++)
        for (int64_t j = 0; j < n; j++) {
            double v = r[i * n + j];
            if (isnan(v)) nan = 1;
            if (j < i) below = fmax(below, fabs(v));
            if (j == i) neg = fmin(neg, v);
        }
    CHECK(!nan, "%s %s %lldx%lld: R holds NaN (an element not written?)", what, tname(dbl),
          (long long)m, (long long)n);
    CHECK(below == 0, "%s %s: R below the diagonal %g", what, tname(dbl), below);
    CHECK(neg >= 0, "%s %s: negative diagonal of R %g", what, tname(dbl), neg);
    if (!q) return;
    double *d = calloc((size_t)(m * n) + 1, sizeof(double));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < kq; p++) s += q[i * kq + p] * r[p * n + j];
            d[i * n + j] = s - a[i * n + j];
        }
    double rec = fro(d, m * n) / na, orth = orth_cols(q, m, kq);
    CHECK(rec <= tol, "%s %s %lldx%lld: ||QR - A|| / ||A|| = %g (tol %g)", what, tname(dbl),
          (long long)m, (long long)n, rec, tol);
    CHECK(orth <= tol, "%s %s %lldx%lld: ||Q'Q - I|| = %g (tol %g)", what, tname(dbl),
          (long long)m, (long long)n, orth, tol);
    free(d);
}

/* Matrix b of GPU results (q: m x kq, r: kr x n, row-major contiguous batches) against
 * the CPU's and A. Only Q's first min(m, n) columns are unique (complete mode's others
 * are a basis of the complement), so only those are compared. */
static void check_against(int dbl, const char *what, buf a, buf q, buf r, buf qc, buf rc,
                          int64_t b, int64_t m, int64_t n, int64_t kq, int64_t kr) {
    int64_t k = m < n ? m : n;
    double *A = malloc(sizeof(double) * (size_t)(m * n + 1));
    double *Q = malloc(sizeof(double) * (size_t)(m * kq + 1));
    double *R = malloc(sizeof(double) * (size_t)(kr * n + 1));
    double *Qc = malloc(sizeof(double) * (size_t)(m * kq + 1));
    double *Rc = malloc(sizeof(double) * (size_t)(kr * n + 1));
    batchlin_layout la = batchlin_layout_row_major(b + 1, m, n);
    batchlin_layout lq = batchlin_layout_row_major(b + 1, m, kq);
    batchlin_layout lr = batchlin_layout_row_major(b + 1, kr, n);
    extract(a, &la, b, m, n, A);
    extract(r, &lr, b, kr, n, R);
    extract(rc, &lr, b, kr, n, Rc);
    if (q.p) {
        extract(q, &lq, b, m, kq, Q);
        extract(qc, &lq, b, m, kq, Qc);
    }
    check_qr_one(dbl, what, A, q.p ? Q : NULL, R, m, n, kr);
    double na = fro(A, m * n);
    if (na == 0) na = 1;
    double dr = fro_diff(R, Rc, kr * n) / na;
    CHECK(dr <= agree_tol(dbl), "%s %s %lldx%lld matrix %lld: ||R - R_cpu|| / ||A|| = %g", what,
          tname(dbl), (long long)m, (long long)n, (long long)b, dr);
    if (q.p) {
        double dq = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < k; j++)
                dq += (Q[i * kq + j] - Qc[i * kq + j]) * (Q[i * kq + j] - Qc[i * kq + j]);
        dq = k > 0 ? sqrt(dq / (double)k) : 0;
        CHECK(dq <= agree_tol(dbl), "%s %s %lldx%lld matrix %lld: ||Q - Q_cpu|| / sqrt(k) = %g",
              what, tname(dbl), (long long)m, (long long)n, (long long)b, dq);
    }
    free(A);
    free(Q);
    free(R);
    free(Qc);
    free(Rc);
}

/* ------------------------------------------------------------------------------------ */
/* Device pointers on a stream: copy in, QR, copy out, all queued, one synchronisation. */

static void test_device_shape(int dbl, int64_t batch, int64_t m, int64_t n,
                              batchlin_qr_mode mode) {
    int64_t k = m < n ? m : n;
    int64_t kq = mode == BATCHLIN_QR_COMPLETE ? m : k;
    const char *what = mode == BATCHLIN_QR_COMPLETE ? "cuda qr complete" : "cuda qr reduced";
    buf a = balloc(dbl, (size_t)(batch * m * n));
    fill_random(a);
    buf q = balloc(dbl, (size_t)(batch * m * kq)), r = balloc(dbl, (size_t)(batch * kq * n));
    buf qc = balloc(dbl, q.len), rc = balloc(dbl, r.len);
    uint32_t *info = page_alloc(sizeof(uint32_t) * (size_t)batch);
    CHECK_STATUS(qr_cpu(dbl, a.p, batch, m, n, mode, qc.p, rc.p, NULL), BATCHLIN_OK);

    CUdeviceptr da = dalloc(bbytes(a)), dq = dalloc(bbytes(q)), dr = dalloc(bbytes(r)),
                di = dalloc(sizeof(uint32_t) * (size_t)batch);
    poison(dq, bbytes(q));
    poison(dr, bbytes(r));
    poison(di, sizeof(uint32_t) * (size_t)batch);
    CU(cuMemcpyHtoDAsync(da, a.p, bbytes(a), stream));
    CHECK_STATUS(qr_cuda(dbl, da, batch, m, n, mode, dq, dr, di, stream), BATCHLIN_OK);
    CHECK(strcmp(batchlin_last_error(), "") == 0, "last error after success: %s",
          batchlin_last_error());
    CU(cuMemcpyDtoHAsync(q.p, dq, bbytes(q), stream));
    CU(cuMemcpyDtoHAsync(r.p, dr, bbytes(r), stream));
    CU(cuMemcpyDtoHAsync(info, di, sizeof(uint32_t) * (size_t)batch, stream));
    CU(cuStreamSynchronize(stream));

    int info_ok = 1;
    for (int64_t b = 0; b < batch; b++) {
        check_against(dbl, what, a, q, r, qc, rc, b, m, n, kq, kq);
        if (info[b] & (BATCHLIN_INFO_NONFINITE | BATCHLIN_INFO_NOT_CONVERGED)) info_ok = 0;
    }
    CHECK(info_ok, "%s %s %lldx%lld: info[0] = %#x", what, tname(dbl), (long long)m,
          (long long)n, info[0]);

    if (mode == BATCHLIN_QR_REDUCED) {
        /* Mode R with q and info NULL, on the default stream: R as the reduced one. */
        buf r2 = balloc(dbl, r.len);
        poison(dr, bbytes(r));
        CU(cuStreamSynchronize(stream));
        CHECK_STATUS(qr_cuda(dbl, da, batch, m, n, BATCHLIN_QR_R, 0, dr, 0, NULL), BATCHLIN_OK);
        CU(cuStreamSynchronize(NULL));
        CU(cuMemcpyDtoH(r2.p, dr, bbytes(r2)));
        double d = 0;
        int nan = 0;
        for (size_t i = 0; i < r.len; i++) {
            d = fmax(d, fabs(get(r, i) - get(r2, i)));
            if (isnan(get(r2, i))) nan = 1;
        }
        CHECK(!nan && d <= tol_for(dbl, m, k) * sqrt((double)(m * n)),
              "cuda qr r %s %lldx%lld: R differs from the reduced R by %g (NaN: %d)", tname(dbl),
              (long long)m, (long long)n, d, nan);
        bfree(r2);
    }
    CU(cuMemFree(da));
    CU(cuMemFree(dq));
    CU(cuMemFree(dr));
    CU(cuMemFree(di));
    free(info);
    bfree(a);
    bfree(q);
    bfree(r);
    bfree(qc);
    bfree(rc);
}

/* Strided device data: a column-major padded input, Q written column-major, R padded, and
 * a zero batch stride (one matrix for the whole batch), against the contiguous results. */
/* Complete QR of M x 0 matrices: Q is the M x M identity, info 0, R empty. */
static void test_device_empty_cols(int dbl) {
    const int64_t batch = 3, m = 5;
    const size_t es = esize(dbl), qn = (size_t)(batch * m * m);
    CUdeviceptr da = dalloc(16), dq = dalloc(qn * es), dr = dalloc(16),
                di = dalloc(sizeof(uint32_t) * (size_t)batch);
    poison(dq, qn * es);
    poison(di, sizeof(uint32_t) * (size_t)batch);
    CHECK_STATUS(qr_cuda(dbl, da, batch, m, 0, BATCHLIN_QR_COMPLETE, dq, dr, di, stream),
                 BATCHLIN_OK);
    buf q = balloc(dbl, qn);
    uint32_t info[3];
    CU(cuMemcpyDtoHAsync(q.p, dq, qn * es, stream));
    CU(cuMemcpyDtoHAsync(info, di, sizeof info, stream));
    CU(cuStreamSynchronize(stream));
    int eye = 1;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < m; j++)
                if (get(q, (size_t)(b * m * m + i * m + j)) != (i == j ? 1.0 : 0.0)) eye = 0;
    CHECK(eye, "cuda complete qr of %lldx0 %s: Q is not the identity", (long long)m, tname(dbl));
    CHECK(info[0] == 0 && info[1] == 0 && info[2] == 0, "cuda qr of %lldx0: info %u %u %u",
          (long long)m, info[0], info[1], info[2]);
    bfree(q);
    CU(cuMemFree(da));
    CU(cuMemFree(dq));
    CU(cuMemFree(dr));
    CU(cuMemFree(di));
}

static void test_device_strided(int dbl) {
    const int64_t batch = 5, m = 12, n = 7, k = 7, pad = 3;
    size_t es = esize(dbl);
    buf a = balloc(dbl, (size_t)(batch * m * n));
    fill_random(a);
    buf qc = balloc(dbl, (size_t)(batch * m * k)), rc = balloc(dbl, (size_t)(batch * k * n));
    CHECK_STATUS(qr_cpu(dbl, a.p, batch, m, n, BATCHLIN_QR_REDUCED, qc.p, rc.p, NULL),
                 BATCHLIN_OK);

    /* A column-major with leading dimension m + pad and a gap between matrices. */
    batchlin_layout la = {batch, (m + pad) * n + 5, 1, m + pad};
    buf as = balloc(dbl, (size_t)(batch * la.batch_stride));
    batchlin_layout lrm = batchlin_layout_row_major(batch, m, n);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                set(as, (size_t)(b * la.batch_stride + i * la.row_stride + j * la.col_stride),
                    get(a, (size_t)(b * lrm.batch_stride + i * n + j)));
    batchlin_layout lq = batchlin_layout_col_major(batch, m, k);
    batchlin_layout lr = {batch, k * (n + 2), n + 2, 1};
    buf q = balloc(dbl, (size_t)(batch * m * k)), r = balloc(dbl, (size_t)(batch * lr.batch_stride));
    CUdeviceptr da = dalloc(bbytes(as)), dq = dalloc(bbytes(q)), dr = dalloc(bbytes(r)),
                di = dalloc(sizeof(uint32_t) * (size_t)batch);
    CU(cuMemcpyHtoDAsync(da, as.p, bbytes(as), stream));
    poison(dq, bbytes(q));
    CU(cuMemsetD8Async(dr, 0, bbytes(r), stream));
    CHECK_STATUS(qr_cuda_strided(dbl, da, &la, m, n, BATCHLIN_QR_REDUCED, dq, &lq, dr, &lr, di,
                                 stream),
                 BATCHLIN_OK);
    CU(cuMemcpyDtoHAsync(q.p, dq, bbytes(q), stream));
    CU(cuMemcpyDtoHAsync(r.p, dr, bbytes(r), stream));
    CU(cuStreamSynchronize(stream));
    /* Back to row-major contiguous for the checks. */
    buf q2 = balloc(dbl, qc.len), r2 = balloc(dbl, rc.len);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < k; j++) {
                set(q2, (size_t)(b * m * k + i * k + j),
                    get(q, (size_t)(b * lq.batch_stride + i * lq.row_stride + j * lq.col_stride)));
                if (i < k && j < n)
                    set(r2, (size_t)(b * k * n + i * n + j),
                        get(r, (size_t)(b * lr.batch_stride + i * lr.row_stride + j)));
            }
    for (int64_t b = 0; b < batch; b++)
        check_against(dbl, "cuda qr strided", a, q2, r2, qc, rc, b, m, n, k, k);
    /* The padding of R was not written. */
    int pad_ok = 1;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = n; j < n + 2; j++)
                if (get(r, (size_t)(b * lr.batch_stride + i * lr.row_stride + j)) != 0) pad_ok = 0;
    CHECK(pad_ok, "cuda qr strided %s: R's padding was written", tname(dbl));

    /* A zero batch stride: matrix 0 of `a` (row-major) for every matrix of the batch. */
    batchlin_layout lb = {batch, 0, n, 1};
    CU(cuMemcpyHtoDAsync(da, a.p, (size_t)(m * n) * es, stream));
    poison(dr, (size_t)(batch * k * n) * es);
    CHECK_STATUS(qr_cuda_strided(dbl, da, &lb, m, n, BATCHLIN_QR_R, 0, NULL, dr, NULL, 0, stream),
                 BATCHLIN_OK);
    CU(cuMemcpyDtoHAsync(r2.p, dr, bbytes(r2), stream));
    CU(cuStreamSynchronize(stream));
    int same = 1;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < k * n; i++)
            if (fabs(get(r2, (size_t)(b * k * n + i)) - get(rc, (size_t)i)) >
                tol_for(dbl, m, k) * 10)
                same = 0;
    CHECK(same, "cuda qr %s with a zero batch stride: R differs from matrix 0's", tname(dbl));

    CU(cuMemFree(da));
    CU(cuMemFree(dq));
    CU(cuMemFree(dr));
    CU(cuMemFree(di));
    bfree(a);
    bfree(as);
    bfree(q);
    bfree(r);
    bfree(q2);
    bfree(r2);
    bfree(qc);
    bfree(rc);
}

/* A NaN or Inf in one matrix: its info flag and NaN outputs, the same flags as the CPU
 * gives, and the other matrices untouched. */
static void test_device_nonfinite(int dbl) {
    const int64_t batch = 3, m = 20, n = 12;
    buf a = balloc(dbl, (size_t)(batch * m * n));
    fill_random(a);
    set(a, (size_t)(1 * m * n + 5 * n + 3), NAN);
    set(a, (size_t)(1 * m * n + 9 * n + 0), INFINITY);
    buf q = balloc(dbl, (size_t)(batch * m * n)), r = balloc(dbl, (size_t)(batch * n * n));
    buf qc = balloc(dbl, q.len), rc = balloc(dbl, r.len);
    uint32_t info[3], info_cpu[3];
    CHECK_STATUS(qr_cpu(dbl, a.p, batch, m, n, BATCHLIN_QR_REDUCED, qc.p, rc.p, info_cpu),
                 BATCHLIN_OK);
    CUdeviceptr da = dalloc(bbytes(a)), dq = dalloc(bbytes(q)), dr = dalloc(bbytes(r)),
                di = dalloc(sizeof info);
    CU(cuMemcpyHtoDAsync(da, a.p, bbytes(a), stream));
    CHECK_STATUS(qr_cuda(dbl, da, batch, m, n, BATCHLIN_QR_REDUCED, dq, dr, di, stream),
                 BATCHLIN_OK);
    CU(cuMemcpyDtoHAsync(q.p, dq, bbytes(q), stream));
    CU(cuMemcpyDtoHAsync(r.p, dr, bbytes(r), stream));
    CU(cuMemcpyDtoHAsync(info, di, sizeof info, stream));
    CU(cuStreamSynchronize(stream));
    CHECK((info[1] & BATCHLIN_INFO_NONFINITE) != 0, "cuda qr %s: NaN not flagged (%#x)",
          tname(dbl), info[1]);
    CHECK(!(info[0] & BATCHLIN_INFO_NONFINITE) && !(info[2] & BATCHLIN_INFO_NONFINITE),
          "cuda qr %s: finite matrices flagged (%#x, %#x)", tname(dbl), info[0], info[2]);
    for (int b = 0; b < 3; b++)
        CHECK((info[b] & BATCHLIN_INFO_NONFINITE) == (info_cpu[b] & BATCHLIN_INFO_NONFINITE),
              "cuda qr %s matrix %d: info %#x, the CPU's %#x", tname(dbl), b, info[b],
              info_cpu[b]);
    int all_nan = 1;
    for (int64_t i = 0; i < m * n; i++)
        if (!isnan(get(q, (size_t)(m * n + i)))) all_nan = 0;
    for (int64_t i = 0; i < n; i++)
        if (!isnan(get(r, (size_t)(n * n + i * n + i)))) all_nan = 0;
    CHECK(all_nan, "cuda qr %s: outputs of the NaN matrix are not all NaN", tname(dbl));
    check_against(dbl, "cuda qr beside NaN", a, q, r, qc, rc, 0, m, n, n, n);
    check_against(dbl, "cuda qr beside NaN", a, q, r, qc, rc, 2, m, n, n, n);
    CU(cuMemFree(da));
    CU(cuMemFree(dq));
    CU(cuMemFree(dr));
    CU(cuMemFree(di));
    bfree(a);
    bfree(q);
    bfree(r);
    bfree(qc);
    bfree(rc);
}

/* Argument errors: statuses before anything is queued, never a fault. */
static void test_device_errors(int dbl) {
    CUdeviceptr d = dalloc(4096);
    CHECK_STATUS(qr_cuda(dbl, 0, 2, 3, 3, BATCHLIN_QR_REDUCED, d, d + 1024, 0, stream),
                 BATCHLIN_ERROR_ARGUMENT);
    CHECK_STATUS(qr_cuda(dbl, d, 2, 3, 3, BATCHLIN_QR_REDUCED, 0, d + 1024, 0, stream),
                 BATCHLIN_ERROR_ARGUMENT);
    CHECK_STATUS(qr_cuda(dbl, d, 2, -3, 3, BATCHLIN_QR_R, 0, d + 1024, 0, stream),
                 BATCHLIN_ERROR_SHAPE);
    CHECK_STATUS(qr_cuda(dbl, d, 2, 3, 3, 9, d + 512, d + 1024, 0, stream),
                 BATCHLIN_ERROR_ARGUMENT);
    CHECK_STATUS(qr_cuda(dbl, d + 2, 2, 3, 3, BATCHLIN_QR_R, 0, d + 1024, 0, stream),
                 BATCHLIN_ERROR_ARGUMENT);
    CHECK_STATUS(qr_cuda(dbl, d, 2, 3, 3, BATCHLIN_QR_R, 0, d + 1024, d + 2049, stream),
                 BATCHLIN_ERROR_ARGUMENT);
    batchlin_layout la = batchlin_layout_row_major(2, 3, 3), lr = batchlin_layout_row_major(1, 3, 3);
    CHECK_STATUS(qr_cuda_strided(dbl, d, &la, 3, 3, BATCHLIN_QR_R, 0, NULL, d + 1024, &lr, 0,
                                 stream),
                 BATCHLIN_ERROR_OUTPUT);
    /* Zero sizes are fine and touch nothing. */
    CHECK_STATUS(qr_cuda(dbl, 0, 0, 3, 3, BATCHLIN_QR_REDUCED, 0, 0, 0, stream), BATCHLIN_OK);
    CHECK_STATUS(qr_cuda(dbl, 0, 2, 0, 3, BATCHLIN_QR_REDUCED, 0, 0, 0, stream), BATCHLIN_OK);
    CU(cuStreamSynchronize(stream));
    CU(cuMemFree(d));
}

/* ------------------------------------------------------------------------------------ */
/* The plan, the eigh and SVD device forms, and pointers that are not device memory. */

/* Whether the CUDA backend plans `op` on device 0; if not, the message must say why. */
static int cuda_runs(batchlin_op op) {
    const char *p = batchlin_plan(op, BATCHLIN_FLOAT32, 4, 8, 8, 0);
    if (p) {
        CHECK(strncmp(p, "cuda:0 ", 7) == 0, "plan of op %d on device 0: %s", op, p);
        return 1;
    }
    CHECK(strlen(batchlin_last_error()) > 0, "plan of op %d on device 0: NULL, no message", op);
    return 0;
}

static void test_device_plan(void) {
    CHECK(cuda_runs(BATCHLIN_OP_QR), "QR is not planned on device 0: %s", batchlin_last_error());
    int count = 0;
    CU(cuDeviceGetCount(&count));
    CHECK(batchlin_plan(BATCHLIN_OP_QR, BATCHLIN_FLOAT32, 4, 8, 8, count) == NULL,
          "a plan on device %d of %d", count, count);
    CHECK(strstr(batchlin_last_error(), "no CUDA device") != NULL, "missing device: %s",
          batchlin_last_error());
}

/* QR on device 0 through the contiguous device form: R's triangle checked on the host. */
static void test_device_qr_runs(int dbl) {
    const int64_t batch = 3, m = 4, n = 3;
    buf a = balloc(dbl, (size_t)(batch * m * n)), r = balloc(dbl, (size_t)(batch * n * n));
    fill_random(a);
    CUdeviceptr da = dalloc(bbytes(a)), dr = dalloc(bbytes(r)), di = dalloc(batch * 4);
    CU(cuMemcpyHtoDAsync(da, a.p, bbytes(a), stream));
    poison(dr, bbytes(r));
    poison(di, batch * 4);
    CHECK_STATUS(qr_cuda(dbl, da, batch, m, n, BATCHLIN_QR_R, 0, dr, di, stream), BATCHLIN_OK);
    uint32_t info[3];
    CU(cuMemcpyDtoHAsync(r.p, dr, bbytes(r), stream));
    CU(cuMemcpyDtoHAsync(info, di, sizeof info, stream));
    CU(cuStreamSynchronize(stream));
    for (int64_t b = 0; b < batch; b++) {
        CHECK(info[b] == 0, "%s QR on device 0: info[%d] = %u", tname(dbl), (int)b, info[b]);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double x = get(r, (size_t)(b * n * n + i * n + j));
                CHECK(i <= j ? (isfinite(x) && (i != j || x >= 0)) : x == 0,
                      "%s QR on device 0: R[%d][%d][%d] = %g", tname(dbl), (int)b, (int)i,
                      (int)j, x);
            }
    }
    CU(cuMemFree(da));
    CU(cuMemFree(dr));
    CU(cuMemFree(di));
    bfree(a);
    bfree(r);
}

/* The eigh and SVD device forms on real device memory: OK where the backend has the
 * kernel (then the results are left to the tests that will come with it), else
 * UNAVAILABLE with the plan's reason, and nothing queued that faults. */
static void test_device_eigh_svd(int dbl) {
    const int64_t batch = 2, n = 3;
    CUdeviceptr d = dalloc(4096), di = dalloc(64);
    poison(d, 4096);
    CU(cuStreamSynchronize(stream));
    batchlin_status want_eigh =
        cuda_runs(BATCHLIN_OP_EIGH) ? BATCHLIN_OK : BATCHLIN_ERROR_UNAVAILABLE;
    batchlin_status want_svd = cuda_runs(BATCHLIN_OP_SVD) ? BATCHLIN_OK : BATCHLIN_ERROR_UNAVAILABLE;
    batchlin_layout la = batchlin_layout_col_major(batch, n, n);
    uint32_t *info = (uint32_t *)dptr(di);
    void *s_ = (void *)stream;
    if (dbl) {
        double *a = (double *)dptr(d), *w = a + 32, *v = a + 64, *u = a + 96, *vh = a + 128;
        CHECK_STATUS(batchlin_deigh_cuda(a, batch, n, BATCHLIN_LOWER, w, v, info, s_), want_eigh);
        CHECK_STATUS(batchlin_deigvalsh_cuda(a, batch, n, BATCHLIN_UPPER, w, NULL, s_), want_eigh);
        CHECK_STATUS(batchlin_deigh_cuda_strided(a, &la, n, BATCHLIN_LOWER, w, NULL, v, NULL, info,
                                                 s_),
                     want_eigh);
        CHECK_STATUS(batchlin_deigvalsh_cuda_strided(a, &la, n, BATCHLIN_LOWER, w, NULL, info, s_),
                     want_eigh);
        CHECK_STATUS(batchlin_dsvd_cuda(a, batch, n, n, 0, u, w, vh, info, s_), want_svd);
        CHECK_STATUS(batchlin_dsvdvals_cuda(a, batch, n, n, w, info, s_), want_svd);
        CHECK_STATUS(batchlin_dsvd_cuda_strided(a, &la, n, n, 1, u, NULL, w, NULL, vh, NULL, NULL,
                                                s_),
                     want_svd);
        CHECK_STATUS(batchlin_dsvdvals_cuda_strided(a, &la, n, n, w, NULL, NULL, s_), want_svd);
    } else {
        float *a = (float *)dptr(d), *w = a + 32, *v = a + 64, *u = a + 96, *vh = a + 128;
        CHECK_STATUS(batchlin_seigh_cuda(a, batch, n, BATCHLIN_LOWER, w, v, info, s_), want_eigh);
        CHECK_STATUS(batchlin_seigvalsh_cuda(a, batch, n, BATCHLIN_UPPER, w, NULL, s_), want_eigh);
        CHECK_STATUS(batchlin_seigh_cuda_strided(a, &la, n, BATCHLIN_LOWER, w, NULL, v, NULL, info,
                                                 s_),
                     want_eigh);
        CHECK_STATUS(batchlin_seigvalsh_cuda_strided(a, &la, n, BATCHLIN_LOWER, w, NULL, info, s_),
                     want_eigh);
        CHECK_STATUS(batchlin_ssvd_cuda(a, batch, n, n, 0, u, w, vh, info, s_), want_svd);
        CHECK_STATUS(batchlin_ssvdvals_cuda(a, batch, n, n, w, info, s_), want_svd);
        CHECK_STATUS(batchlin_ssvd_cuda_strided(a, &la, n, n, 1, u, NULL, w, NULL, vh, NULL, NULL,
                                                s_),
                     want_svd);
        CHECK_STATUS(batchlin_ssvdvals_cuda_strided(a, &la, n, n, w, NULL, NULL, s_), want_svd);
    }
    if (want_eigh != BATCHLIN_OK) {
        CHECK_STATUS(dbl ? batchlin_deigh_cuda((double *)dptr(d), batch, n, BATCHLIN_LOWER,
                                               (double *)dptr(d) + 32, (double *)dptr(d) + 64,
                                               info, s_)
                         : batchlin_seigh_cuda((float *)dptr(d), batch, n, BATCHLIN_LOWER,
                                               (float *)dptr(d) + 32, (float *)dptr(d) + 64, info,
                                               s_),
                     BATCHLIN_ERROR_UNAVAILABLE);
        CHECK(strstr(batchlin_last_error(), "eigh") != NULL, "the reason names eigh: %s",
              batchlin_last_error());
    }
    /* Argument errors come first, as everywhere. */
    CHECK_STATUS(dbl ? batchlin_dsvdvals_cuda(NULL, batch, n, n, (double *)dptr(d), info, s_)
                     : batchlin_ssvdvals_cuda(NULL, batch, n, n, (float *)dptr(d), info, s_),
                 BATCHLIN_ERROR_ARGUMENT);
    CU(cuStreamSynchronize(stream));
    CU(cuMemFree(d));
    CU(cuMemFree(di));
}

/* Copy a host buffer to fresh device memory. */
static CUdeviceptr to_device(buf h) {
    CUdeviceptr d = dalloc(bbytes(h));
    CU(cuMemcpyHtoD(d, h.p, bbytes(h)));
    /* From pageable memory the copy may return before the data reaches the device, and
     * `stream` does not wait for the legacy stream (a kernel read the previous test's
     * input under load: the H200, 2026-12-04). */
    CU(cuCtxSynchronize());
    return d;
}

static void from_device(buf h, CUdeviceptr d) { CU(cuMemcpyDtoH(h.p, d, bbytes(h))); }

/* eigh on the device against the definition and the CPU's eigenvalues: A V = V diag(w),
 * V^T V = I, w ascending and equal to the CPU's; eigvalsh equal to eigh's values. The
 * input is symmetric in its lower triangle only (junk above: it must not be read). */
static void test_device_eigh_results(int dbl, int64_t batch, int64_t n) {
    buf a = balloc(dbl, (size_t)(batch * n * n)), w = balloc(dbl, (size_t)(batch * n)),
        v = balloc(dbl, (size_t)(batch * n * n)), wc = balloc(dbl, (size_t)(batch * n)),
        w2 = balloc(dbl, (size_t)(batch * n));
    fill_random(a);
    for (int64_t k = 0; k < batch; k++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = i + 1; j < n; j++) set(a, (size_t)(k * n * n + i * n + j), 99.0);
    CUdeviceptr ad = to_device(a), wd = dalloc(bbytes(w)), vd = dalloc(bbytes(v)),
                w2d = dalloc(bbytes(w2)), id = dalloc((size_t)batch * 4);
    uint32_t *info = calloc((size_t)batch, 4);
    void *s_ = (void *)stream;
    CHECK_STATUS(dbl ? batchlin_deigh_cuda(dptr(ad), batch, n, BATCHLIN_LOWER, dptr(wd),
                                           dptr(vd), dptr(id), s_)
                     : batchlin_seigh_cuda(dptr(ad), batch, n, BATCHLIN_LOWER, dptr(wd),
                                           dptr(vd), dptr(id), s_),
                 BATCHLIN_OK);
    CHECK_STATUS(dbl ? batchlin_deigvalsh_cuda(dptr(ad), batch, n, BATCHLIN_LOWER, dptr(w2d),
                                               NULL, s_)
                     : batchlin_seigvalsh_cuda(dptr(ad), batch, n, BATCHLIN_LOWER, dptr(w2d),
                                               NULL, s_),
                 BATCHLIN_OK);
    CU(cuStreamSynchronize(stream));
    from_device(w, wd);
    from_device(v, vd);
    from_device(w2, w2d);
    CU(cuMemcpyDtoH(info, id, (size_t)batch * 4));
    CHECK_STATUS(dbl ? batchlin_deigvalsh(a.p, batch, n, BATCHLIN_LOWER, wc.p, NULL)
                     : batchlin_seigvalsh(a.p, batch, n, BATCHLIN_LOWER, wc.p, NULL),
                 BATCHLIN_OK);
    double tol = tol_for(dbl, n, n);
    double *am = malloc(sizeof(double) * (size_t)(n * n)), *vm = malloc(sizeof(double) * (size_t)(n * n));
    double worst_res = 0, worst_orth = 0, worst_w = 0, worst_w2 = 0;
    int sorted = 1, flags_ok = 1;
    for (int64_t k = 0; k < batch; k++) {
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double x = get(a, (size_t)(k * n * n + (i >= j ? i * n + j : j * n + i)));
                am[i * n + j] = x;
                vm[i * n + j] = get(v, (size_t)(k * n * n + i * n + j));
            }
        double na = fro(am, n * n), res = 0, dw = 0, dw2 = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double av = 0;
                for (int64_t p = 0; p < n; p++) av += am[i * n + p] * vm[p * n + j];
                double d = av - vm[i * n + j] * get(w, (size_t)(k * n + j));
                res += d * d;
            }
        for (int64_t j = 0; j < n; j++) {
            double x = get(w, (size_t)(k * n + j));
            dw += fabs(x - get(wc, (size_t)(k * n + j)));
            dw2 += fabs(x - get(w2, (size_t)(k * n + j)));
            if (j > 0 && x < get(w, (size_t)(k * n + j - 1))) sorted = 0;
        }
        worst_res = fmax(worst_res, sqrt(res) / na);
        worst_orth = fmax(worst_orth, orth_cols(vm, n, n));
        worst_w = fmax(worst_w, dw / na);
        worst_w2 = fmax(worst_w2, dw2 / na);
        if (info[k] & (BATCHLIN_INFO_NONFINITE | BATCHLIN_INFO_NOT_CONVERGED)) flags_ok = 0;
    }
    CHECK(worst_res < tol && worst_orth < tol && sorted && flags_ok,
          "%s eigh %lldx%lld: residual %.1e, orthogonality %.1e, sorted %d, info ok %d",
          tname(dbl), (long long)batch, (long long)n, worst_res, worst_orth, sorted, flags_ok);
    CHECK(worst_w < tol && worst_w2 < tol, "%s eigh %lldx%lld: values off the CPU's by %.1e, "
          "eigvalsh off eigh's by %.1e", tname(dbl), (long long)batch, (long long)n, worst_w,
          worst_w2);
    free(am);
    free(vm);
    free(info);
    bfree(a), bfree(w), bfree(v), bfree(wc), bfree(w2);
    CUdeviceptr dev_bufs[] = {ad, wd, vd, w2d, id};
    for (size_t i = 0; i < sizeof dev_bufs / sizeof dev_bufs[0]; i++) CU(cuMemFree(dev_bufs[i]));
}

/* The SVD on the device: U diag(S) Vh = A, U and Vh orthonormal, S descending and equal
 * to the CPU's and to svdvals'. */
static void test_device_svd_results(int dbl, int64_t batch, int64_t m, int64_t n, int full) {
    int64_t k = m < n ? m : n, uc = full ? m : k, vr = full ? n : k;
    buf a = balloc(dbl, (size_t)(batch * m * n)), u = balloc(dbl, (size_t)(batch * m * uc)),
        s = balloc(dbl, (size_t)(batch * k)), vh = balloc(dbl, (size_t)(batch * vr * n)),
        sc = balloc(dbl, (size_t)(batch * k)), s2 = balloc(dbl, (size_t)(batch * k));
    fill_random(a);
    CUdeviceptr ad = to_device(a), ud = dalloc(bbytes(u)), sd = dalloc(bbytes(s)),
                vd = dalloc(bbytes(vh)), s2d = dalloc(bbytes(s2));
    void *s_ = (void *)stream;
    CHECK_STATUS(dbl ? batchlin_dsvd_cuda(dptr(ad), batch, m, n, full, dptr(ud), dptr(sd),
                                          dptr(vd), NULL, s_)
                     : batchlin_ssvd_cuda(dptr(ad), batch, m, n, full, dptr(ud), dptr(sd),
                                          dptr(vd), NULL, s_),
                 BATCHLIN_OK);
    CHECK_STATUS(dbl ? batchlin_dsvdvals_cuda(dptr(ad), batch, m, n, dptr(s2d), NULL, s_)
                     : batchlin_ssvdvals_cuda(dptr(ad), batch, m, n, dptr(s2d), NULL, s_),
                 BATCHLIN_OK);
    CU(cuStreamSynchronize(stream));
    from_device(u, ud);
    from_device(s, sd);
    from_device(vh, vd);
    from_device(s2, s2d);
    CHECK_STATUS(dbl ? batchlin_dsvdvals(a.p, batch, m, n, sc.p, NULL)
                     : batchlin_ssvdvals(a.p, batch, m, n, sc.p, NULL),
                 BATCHLIN_OK);
    double tol = tol_for(dbl, m > n ? m : n, k);
    double *um = malloc(sizeof(double) * (size_t)(m * uc)), *vt = malloc(sizeof(double) * (size_t)(n * vr));
    double worst_rec = 0, worst_u = 0, worst_v = 0, worst_s = 0;
    for (int64_t b = 0; b < batch; b++) {
        double na = 0, rec = 0, ds = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t c = 0; c < uc; c++) um[i * uc + c] = get(u, (size_t)(b * m * uc + i * uc + c));
        for (int64_t r = 0; r < vr; r++)
            for (int64_t j = 0; j < n; j++) vt[j * vr + r] = get(vh, (size_t)(b * vr * n + r * n + j));
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double x = get(a, (size_t)(b * m * n + i * n + j)), y = 0;
                for (int64_t c = 0; c < k; c++) y += um[i * uc + c] * get(s, (size_t)(b * k + c)) * vt[j * vr + c];
                na += x * x;
                rec += (x - y) * (x - y);
            }
        for (int64_t c = 0; c < k; c++) {
            ds += fabs(get(s, (size_t)(b * k + c)) - get(sc, (size_t)(b * k + c)));
            ds += fabs(get(s, (size_t)(b * k + c)) - get(s2, (size_t)(b * k + c)));
        }
        worst_rec = fmax(worst_rec, sqrt(rec / na));
        worst_u = fmax(worst_u, orth_cols(um, m, uc));
        worst_v = fmax(worst_v, orth_cols(vt, n, vr));
        worst_s = fmax(worst_s, ds / sqrt(na));
    }
    CHECK(worst_rec < tol && worst_u < tol && worst_v < tol && worst_s < tol,
          "%s svd %lldx%lldx%lld full %d: reconstruction %.1e, U %.1e, V %.1e, S off the CPU's %.1e",
          tname(dbl), (long long)batch, (long long)m, (long long)n, full, worst_rec, worst_u,
          worst_v, worst_s);
    free(um);
    free(vt);
    bfree(a), bfree(u), bfree(s), bfree(vh), bfree(sc), bfree(s2);
    CUdeviceptr dev_bufs[] = {ad, ud, sd, vd, s2d};
    for (size_t i = 0; i < sizeof dev_bufs / sizeof dev_bufs[0]; i++) CU(cuMemFree(dev_bufs[i]));
}

/* Host memory given to a device form: a clear argument error naming the buffer, not a
 * fault; for the input and for an output. */
static void test_device_not_device_memory(int dbl) {
    buf h = balloc(dbl, 64);
    CUdeviceptr d = dalloc(4096);
    CUdeviceptr hp = (CUdeviceptr)(uintptr_t)h.p;
    CHECK_STATUS(qr_cuda(dbl, hp, 2, 3, 3, BATCHLIN_QR_R, 0, d, 0, stream),
                 BATCHLIN_ERROR_ARGUMENT);
    CHECK(strstr(batchlin_last_error(), "not CUDA device memory") != NULL &&
              strstr(batchlin_last_error(), "error: a: ") != NULL,
          "host input to a device form: %s", batchlin_last_error());
    CHECK_STATUS(qr_cuda(dbl, d, 2, 3, 3, BATCHLIN_QR_R, 0, hp, 0, stream),
                 BATCHLIN_ERROR_ARGUMENT);
    CHECK(strstr(batchlin_last_error(), "not CUDA device memory") != NULL &&
              strstr(batchlin_last_error(), "error: r: ") != NULL,
          "host output to a device form: %s", batchlin_last_error());
    CHECK_STATUS(dbl ? batchlin_deigvalsh_cuda((double *)h.p, 2, 3, BATCHLIN_LOWER,
                                               (double *)dptr(d), NULL, (void *)stream)
                     : batchlin_seigvalsh_cuda((float *)h.p, 2, 3, BATCHLIN_LOWER,
                                               (float *)dptr(d), NULL, (void *)stream),
                 BATCHLIN_ERROR_ARGUMENT);
    CHECK(strstr(batchlin_last_error(), "not CUDA device memory") != NULL,
          "host input to eigvalsh's device form: %s", batchlin_last_error());
    CU(cuStreamSynchronize(stream));
    CU(cuMemFree(d));
    bfree(h);
}

/* ------------------------------------------------------------------------------------ */
/* Host data with BATCHLIN_BACKEND_CUDA: registered buffers (copied in place), the same
 * buffers unregistered (staged), strided layouts, and the register / unregister rules. */

static void run_host(int dbl, const char *what, buf a, const batchlin_layout *al, buf a_rm,
                     int64_t batch, int64_t m, int64_t n, buf qc, buf rc, int with_q) {
    int64_t k = m < n ? m : n;
    buf q = balloc(dbl, (size_t)(batch * m * k)), r = balloc(dbl, (size_t)(batch * k * n));
    for (size_t i = 0; i < r.len; i++) set(r, i, NAN);
    uint32_t *info = page_alloc(sizeof(uint32_t) * (size_t)batch);
    memset(info, 0xff, sizeof(uint32_t) * (size_t)batch);
    int reg = with_q && batchlin_host_register(q.p, bbytes(q)) == BATCHLIN_OK &&
              batchlin_host_register(r.p, bbytes(r)) == BATCHLIN_OK &&
              batchlin_host_register(info, sizeof(uint32_t) * (size_t)batch) == BATCHLIN_OK;
    CHECK(!with_q || reg, "%s %s: registering the outputs: %s", what, tname(dbl),
          batchlin_last_error());
    CHECK_STATUS(qr_host(dbl, a.p, al, m, n, with_q ? BATCHLIN_QR_REDUCED : BATCHLIN_QR_R,
                         with_q ? q.p : NULL, NULL, r.p, NULL, with_q ? info : NULL,
                         BATCHLIN_BACKEND_CUDA),
                 BATCHLIN_OK);
    buf none = {dbl, 0, NULL};
    for (int64_t b = 0; b < batch; b++)
        check_against(dbl, what, a_rm, with_q ? q : none, r, qc, rc, b, m, n, k, k);
    if (with_q) {
        int info_ok = 1;
        for (int64_t b = 0; b < batch; b++)
            if (info[b] & (BATCHLIN_INFO_NONFINITE | BATCHLIN_INFO_NOT_CONVERGED)) info_ok = 0;
        CHECK(info_ok, "%s %s: info[0] = %#x", what, tname(dbl), info[0]);
        CHECK_STATUS(batchlin_host_unregister(q.p), BATCHLIN_OK);
        CHECK_STATUS(batchlin_host_unregister(r.p), BATCHLIN_OK);
        CHECK_STATUS(batchlin_host_unregister(info), BATCHLIN_OK);
    }
    free(info);
    bfree(q);
    bfree(r);
}

static void test_host(int dbl) {
    const int64_t batch = 50, m = 24, n = 16, k = 16;
    buf a = balloc(dbl, (size_t)(batch * m * n));
    fill_random(a);
    buf qc = balloc(dbl, (size_t)(batch * m * k)), rc = balloc(dbl, (size_t)(batch * k * n));
    CHECK_STATUS(qr_cpu(dbl, a.p, batch, m, n, BATCHLIN_QR_REDUCED, qc.p, rc.p, NULL),
                 BATCHLIN_OK);
    batchlin_layout la = batchlin_layout_row_major(batch, m, n);

    /* Registered input and outputs, then the rules. */
    CHECK_STATUS(batchlin_host_register(a.p, bbytes(a)), BATCHLIN_OK);
    CHECK_STATUS(batchlin_host_register((char *)a.p + 64, 128), BATCHLIN_ERROR_ARGUMENT);
    CHECK_STATUS(batchlin_host_unregister((char *)a.p + 64), BATCHLIN_ERROR_ARGUMENT);
    run_host(dbl, "cuda host qr registered", a, &la, a, batch, m, n, qc, rc, 1);
    run_host(dbl, "cuda host qr r registered", a, &la, a, batch, m, n, qc, rc, 0);
    CHECK_STATUS(batchlin_host_unregister(a.p), BATCHLIN_OK);
    CHECK_STATUS(batchlin_host_unregister(a.p), BATCHLIN_ERROR_ARGUMENT);

    /* The same unregistered: staged through pinned memory. */
    run_host(dbl, "cuda host qr staged", a, &la, a, batch, m, n, qc, rc, 0);

    /* A column-major input, registered (read in place from its span) and not. */
    batchlin_layout lc = batchlin_layout_col_major(batch, m, n);
    buf ac = balloc(dbl, a.len);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                set(ac, (size_t)(b * lc.batch_stride + i + j * m),
                    get(a, (size_t)(b * m * n + i * n + j)));
    CHECK_STATUS(batchlin_host_register(ac.p, bbytes(ac)), BATCHLIN_OK);
    run_host(dbl, "cuda host qr col-major registered", ac, &lc, a, batch, m, n, qc, rc, 1);
    CHECK_STATUS(batchlin_host_unregister(ac.p), BATCHLIN_OK);
    run_host(dbl, "cuda host qr col-major staged", ac, &lc, a, batch, m, n, qc, rc, 0);

    /* A padded output (not in place: the core's staged path). */
    batchlin_layout lr = {batch, k * (n + 1), n + 1, 1};
    buf r = balloc(dbl, (size_t)(batch * lr.batch_stride));
    CHECK_STATUS(qr_host(dbl, a.p, &la, m, n, BATCHLIN_QR_R, NULL, NULL, r.p, &lr, NULL,
                         BATCHLIN_BACKEND_CUDA),
                 BATCHLIN_OK);
    double d = 0;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = 0; j < n; j++)
                d = fmax(d, fabs(get(r, (size_t)(b * lr.batch_stride + i * lr.row_stride + j)) -
                                 get(rc, (size_t)(b * k * n + i * n + j))));
    CHECK(d <= agree_tol(dbl) * 4, "cuda host qr %s padded R: differs from the CPU's by %g",
          tname(dbl), d);

    /* eigvalsh of host data on the GPU (strided form, BATCHLIN_BACKEND_CUDA): the CPU's
     * values. */
    buf s = balloc(dbl, 16), w = balloc(dbl, 4), wc = balloc(dbl, 4);
    fill_random(s);
    batchlin_layout ls = batchlin_layout_row_major(1, 4, 4);
    batchlin_status st =
        dbl ? batchlin_deigvalsh_strided(s.p, &ls, 4, BATCHLIN_LOWER, w.p, NULL, NULL,
                                         BATCHLIN_BACKEND_CUDA)
            : batchlin_seigvalsh_strided(s.p, &ls, 4, BATCHLIN_LOWER, w.p, NULL, NULL,
                                         BATCHLIN_BACKEND_CUDA);
    CHECK(st == BATCHLIN_OK, "eigvalsh of host data on CUDA: %s: %s", batchlin_status_name(st),
          batchlin_last_error());
    CHECK_STATUS(dbl ? batchlin_deigvalsh(s.p, 1, 4, BATCHLIN_LOWER, wc.p, NULL)
                     : batchlin_seigvalsh(s.p, 1, 4, BATCHLIN_LOWER, wc.p, NULL),
                 BATCHLIN_OK);
    double dwc = 0;
    for (size_t i = 0; i < 4; i++) dwc = fmax(dwc, fabs(get(w, i) - get(wc, i)));
    CHECK(dwc < agree_tol(dbl) * 1e-2, "eigvalsh of host data on CUDA: off the CPU's by %g", dwc);
    bfree(wc);
    bfree(s);
    bfree(w);
    bfree(r);
    bfree(ac);
    bfree(a);
    bfree(qc);
    bfree(rc);
}

int main(void) {
    CUresult cr = cuInit(0);
    int count = 0;
    if (cr == CUDA_SUCCESS) cr = cuDeviceGetCount(&count);
    if (cr != CUDA_SUCCESS || count < 1) {
        const char *s = NULL;
        cuGetErrorString(cr, &s);
        printf("skipped: no CUDA device (%s)\n", cr != CUDA_SUCCESS && s ? s : "none found");
        return 0;
    }
    CUdevice dev;
    CUcontext ctx;
    char name[256];
    CU(cuDeviceGet(&dev, 0));
    CU(cuDeviceGetName(name, (int)sizeof name, dev));
    /* Device 0's primary context: the one the CUDA runtime and batchlin use. */
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    printf("batchlin %s on %s\n", batchlin_version(), name);

    test_device_plan();
    for (int dbl = 0; dbl < 2; dbl++) {
        test_device_errors(dbl);
        test_device_qr_runs(dbl);
        test_device_eigh_svd(dbl);
        test_device_eigh_results(dbl, 7, 5);
        test_device_eigh_results(dbl, 3, 33);
        test_device_eigh_results(dbl, 2, 130);
        for (int full = 0; full < 2; full++) {
            test_device_svd_results(dbl, 5, 9, 6, full);
            test_device_svd_results(dbl, 4, 6, 9, full);
            test_device_svd_results(dbl, 2, 40, 40, full);
            /* Around the warp kernel's bounds: 32 columns, 32 and 64 rows. */
            test_device_svd_results(dbl, 7, 32, 32, full);
            test_device_svd_results(dbl, 3, 64, 31, full);
            test_device_svd_results(dbl, 3, 20, 65, full);
        }
        test_device_not_device_memory(dbl);
        test_device_shape(dbl, 64, 16, 16, BATCHLIN_QR_REDUCED);
        test_device_shape(dbl, 33, 40, 24, BATCHLIN_QR_REDUCED);
        test_device_shape(dbl, 6, 24, 40, BATCHLIN_QR_REDUCED);
        test_device_shape(dbl, 4, 300, 32, BATCHLIN_QR_REDUCED);
        test_device_shape(dbl, 3, 100, 80, BATCHLIN_QR_REDUCED);
        test_device_shape(dbl, 9, 10, 6, BATCHLIN_QR_COMPLETE);
        test_device_shape(dbl, 5, 6, 9, BATCHLIN_QR_COMPLETE);
        test_device_strided(dbl);
        test_device_empty_cols(dbl);
        test_device_nonfinite(dbl);
        test_host(dbl);
    }
    CU(cuStreamSynchronize(stream));
    CU(cuStreamDestroy(stream));
    CU(cuDevicePrimaryCtxRelease(dev));
    return check_report();
}
