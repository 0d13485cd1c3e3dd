/*
 * Tests of batchlin's C API through the real libraries (scripts/test-c links this once
 * against libbatchlin.so and once against libbatchlin.a): QR, eigh and SVD in float
 * and double, contiguous and strided, info flags, and every error path.
 *
 * Prints "N passed, M failed" last and exits non-zero when any check failed.
 */
#include "batchlin.h"
#include "check.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------ */
/* Buffers of float or double, read and written as double. */

typedef struct {
    int dbl;
    size_t len;
    void *p;
} buf;

static buf balloc(int dbl, size_t len) {
    buf b;
    b.dbl = dbl;
    b.len = len;
    b.p = calloc(len ? len : 1, dbl ? sizeof(double) : sizeof(float));
    if (!b.p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return b;
}

static void bfree(buf b) { free(b.p); }

static double get(buf b, size_t i) {
    return b.dbl ? ((double *)b.p)[i] : (double)((float *)b.p)[i];
}

static void set(buf b, size_t i, double v) {
    if (b.dbl)
        ((double *)b.p)[i] = v;
    else
        ((float *)b.p)[i] = (float)v;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

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

static double tol_for(int dbl) { return dbl ? 1e-11 : 2e-4; }
static const char *tname(int dbl) { return dbl ? "double" : "float"; }

/* ------------------------------------------------------------------------------------ */
/* Dispatch on the element type. */

static batchlin_status qr(int dbl, const void *a, int64_t b, int64_t m, int64_t n,
                          batchlin_qr_mode mode, void *q, void *r, uint32_t *info) {
    return dbl ? batchlin_dqr(a, b, m, n, mode, q, r, info)
               : batchlin_sqr(a, b, m, n, mode, q, r, info);
}

static batchlin_status qr_strided(int dbl, const void *a, const batchlin_layout *al, int64_t m,
                                  int64_t n, batchlin_qr_mode mode, void *q,
                                  const batchlin_layout *ql, void *r, const batchlin_layout *rl,
                                  uint32_t *info, batchlin_backend be) {
    return dbl ? batchlin_dqr_strided(a, al, m, n, mode, q, ql, r, rl, info, be)
               : batchlin_sqr_strided(a, al, m, n, mode, q, ql, r, rl, info, be);
}

static batchlin_status eigh(int dbl, const void *a, int64_t b, int64_t n, batchlin_uplo uplo,
                            void *w, void *v, uint32_t *info) {
    return dbl ? batchlin_deigh(a, b, n, uplo, w, v, info)
               : batchlin_seigh(a, b, n, uplo, w, v, info);
}

static batchlin_status eigvalsh(int dbl, const void *a, int64_t b, int64_t n, batchlin_uplo uplo,
                                void *w, uint32_t *info) {
    return dbl ? batchlin_deigvalsh(a, b, n, uplo, w, info)
               : batchlin_seigvalsh(a, b, n, uplo, w, info);
}

static batchlin_status eigh_strided(int dbl, const void *a, const batchlin_layout *al, int64_t n,
                                    batchlin_uplo uplo, void *w, const batchlin_layout *wl,
                                    void *v, const batchlin_layout *vl, uint32_t *info,
                                    batchlin_backend be) {
    return dbl ? batchlin_deigh_strided(a, al, n, uplo, w, wl, v, vl, info, be)
               : batchlin_seigh_strided(a, al, n, uplo, w, wl, v, vl, info, be);
}

static batchlin_status eigvalsh_strided(int dbl, const void *a, const batchlin_layout *al,
                                        int64_t n, batchlin_uplo uplo, void *w,
                                        const batchlin_layout *wl, uint32_t *info,
                                        batchlin_backend be) {
    return dbl ? batchlin_deigvalsh_strided(a, al, n, uplo, w, wl, info, be)
               : batchlin_seigvalsh_strided(a, al, n, uplo, w, wl, info, be);
}

static batchlin_status svd(int dbl, const void *a, int64_t b, int64_t m, int64_t n, int full,
                           void *u, void *s, void *vh, uint32_t *info) {
    return dbl ? batchlin_dsvd(a, b, m, n, full, u, s, vh, info)
               : batchlin_ssvd(a, b, m, n, full, u, s, vh, info);
}

static batchlin_status svdvals(int dbl, const void *a, int64_t b, int64_t m, int64_t n, void *s,
                               uint32_t *info) {
    return dbl ? batchlin_dsvdvals(a, b, m, n, s, info) : batchlin_ssvdvals(a, b, m, n, s, info);
}

static batchlin_status svd_strided(int dbl, const void *a, const batchlin_layout *al, int64_t m,
                                   int64_t n, int full, void *u, const batchlin_layout *ul,
                                   void *s, const batchlin_layout *sl, void *vh,
                                   const batchlin_layout *vl, uint32_t *info,
                                   batchlin_backend be) {
    return dbl ? batchlin_dsvd_strided(a, al, m, n, full, u, ul, s, sl, vh, vl, info, be)
               : batchlin_ssvd_strided(a, al, m, n, full, u, ul, s, sl, vh, vl, info, be);
}

static batchlin_status svdvals_strided(int dbl, const void *a, const batchlin_layout *al,
                                       int64_t m, int64_t n, void *s, const batchlin_layout *sl,
                                       uint32_t *info, batchlin_backend be) {
    return dbl ? batchlin_dsvdvals_strided(a, al, m, n, s, sl, info, be)
               : batchlin_ssvdvals_strided(a, al, m, n, s, sl, info, be);
}

/* ------------------------------------------------------------------------------------ */
/* Dense checks on one matrix (row-major doubles). */

static double fro(const double *x, int64_t len) {
    double s = 0;
    for (int64_t i = 0; i < len; i++) s += x[i] * x[i];
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

/* ||X X^T - I||_F for X rows x cols (orthonormal rows). */
static double orth_rows(const double *x, int64_t rows, int64_t cols) {
    double s = 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < rows; j++) {
            double d = (i == j) ? -1.0 : 0.0;
            for (int64_t p = 0; p < cols; p++) d += x[i * cols + p] * x[j * cols + p];
            s += d * d;
        }
    return sqrt(s);
}

/* Checks A = Q R with Q m x kq orthonormal columns, R kq x n upper triangular with a
 * nonnegative diagonal. q NULL checks R alone (its triangle and diagonal). */
static void check_qr_one(int dbl, const char *what, const double *a, const double *q,
                         const double *r, int64_t m, int64_t n, int64_t kq) {
    double tol = tol_for(dbl), na = fro(a, m * n);
    if (na == 0) na = 1;
    double below = 0, neg = 0;
    for (int64_t i = 0; i < kq; i++)
        for (int64_t j = 0; j < n; j++) {
            if (j < i) below = fmax(below, fabs(r[i * n + j]));
            if (j == i) neg = fmin(neg, r[i * n + j]);
        }
    CHECK(below <= tol * 0.1 * na, "%s %s: R below the diagonal %g", what, tname(dbl), below);
    CHECK(neg >= 0, "%s %s: negative diagonal of R %g", what, tname(dbl), neg);
    if (!q) return;
    double *qr_ = calloc((size_t)(m * n) + 1, sizeof(double));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < kq; p++) s += q[i * kq + p] * r[p * n + j];
            qr_[i * n + j] = s - a[i * n + j];
        }
    double rec = fro(qr_, m * n) / na, orth = orth_cols(q, m, kq);
    CHECK(rec <= tol, "%s %s %lldx%lld: ||QR - A|| / ||A|| = %g", what, tname(dbl), (long long)m,
          (long long)n, rec);
    CHECK(orth <= tol, "%s %s %lldx%lld: ||Q'Q - I|| = %g", what, tname(dbl), (long long)m,
          (long long)n, orth);
    free(qr_);
}

/* Checks A V = V diag(w), V orthogonal, w ascending. v NULL checks the order alone. */
static void check_eigh_one(int dbl, const char *what, const double *a, const double *w,
                           const double *v, int64_t n) {
    double tol = tol_for(dbl), na = fro(a, n * n);
    if (na == 0) na = 1;
    int ascending = 1;
    for (int64_t i = 1; i < n; i++)
        if (w[i] < w[i - 1]) ascending = 0;
    CHECK(ascending, "%s %s: eigenvalues not ascending", what, tname(dbl));
    if (!v) return;
    double res = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = -v[i * n + j] * w[j];
            for (int64_t p = 0; p < n; p++) s += a[i * n + p] * v[p * n + j];
            res += s * s;
        }
    res = sqrt(res) / na;
    double orth = orth_cols(v, n, n);
    CHECK(res <= tol, "%s %s n=%lld: ||AV - VW|| / ||A|| = %g", what, tname(dbl), (long long)n,
          res);
    CHECK(orth <= tol, "%s %s n=%lld: ||V'V - I|| = %g", what, tname(dbl), (long long)n, orth);
}

/* Checks A = U diag(s) Vh, U (m x ku) and Vh (kv x n) orthonormal, s descending >= 0. */
static void check_svd_one(int dbl, const char *what, const double *a, const double *u,
                          const double *s, const double *vh, int64_t m, int64_t n, int64_t ku,
                          int64_t kv) {
    double tol = tol_for(dbl), na = fro(a, m * n);
    int64_t k = m < n ? m : n;
    if (na == 0) na = 1;
    int ok = 1;
    for (int64_t i = 0; i < k; i++)
        if (s[i] < 0 || (i > 0 && s[i] > s[i - 1])) ok = 0;
    CHECK(ok, "%s %s: singular values not descending and nonnegative", what, tname(dbl));
    if (!u) return;
    double rec = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double t = -a[i * n + j];
            for (int64_t p = 0; p < k; p++) t += u[i * ku + p] * s[p] * vh[p * n + j];
            rec += t * t;
        }
    rec = sqrt(rec) / na;
    double ou = orth_cols(u, m, ku), ov = orth_rows(vh, kv, n);
    CHECK(rec <= tol, "%s %s %lldx%lld: ||U S Vh - A|| / ||A|| = %g", what, tname(dbl),
          (long long)m, (long long)n, rec);
    CHECK(ou <= tol, "%s %s: ||U'U - I|| = %g", what, tname(dbl), ou);
    CHECK(ov <= tol, "%s %s: ||Vh Vh' - I|| = %g", what, tname(dbl), ov);
}

static double max_abs_diff(buf x, buf y) {
    double d = 0;
    for (size_t i = 0; i < x.len && i < y.len; i++) d = fmax(d, fabs(get(x, i) - get(y, i)));
    return d;
}

/* ------------------------------------------------------------------------------------ */
/* QR */

static void test_qr_shape(int dbl, int64_t batch, int64_t m, int64_t n) {
    int64_t k = m < n ? m : n;
    buf a = balloc(dbl, (size_t)(batch * m * n));
    fill_random(a);
    buf q = balloc(dbl, (size_t)(batch * m * k)), r = balloc(dbl, (size_t)(batch * k * n));
    buf qc = balloc(dbl, (size_t)(batch * m * m)), rc = balloc(dbl, (size_t)(batch * m * n));
    buf r_only = balloc(dbl, (size_t)(batch * k * n));
    uint32_t *info = malloc(sizeof(uint32_t) * (size_t)batch);
    memset(info, 0xff, sizeof(uint32_t) * (size_t)batch);

    CHECK_STATUS(qr(dbl, a.p, batch, m, n, BATCHLIN_QR_REDUCED, q.p, r.p, info), BATCHLIN_OK);
    CHECK_STATUS(qr(dbl, a.p, batch, m, n, BATCHLIN_QR_COMPLETE, qc.p, rc.p, NULL), BATCHLIN_OK);
    CHECK_STATUS(qr(dbl, a.p, batch, m, n, BATCHLIN_QR_R, NULL, r_only.p, NULL), BATCHLIN_OK);
    CHECK(strcmp(batchlin_last_error(), "") == 0, "last error after success: %s",
          batchlin_last_error());

    batchlin_layout la = batchlin_layout_row_major(batch, m, n);
    batchlin_layout lq = batchlin_layout_row_major(batch, m, k);
    batchlin_layout lr = batchlin_layout_row_major(batch, k, n);
    batchlin_layout lqc = batchlin_layout_row_major(batch, m, m);
    double *A = malloc(sizeof(double) * (size_t)(m * n + 1));
    double *Q = malloc(sizeof(double) * (size_t)(m * m + 1));
    double *R = malloc(sizeof(double) * (size_t)(m * n + 1));
    int info_ok = 1;
    for (int64_t b = 0; b < batch; b++) {
        extract(a, &la, b, m, n, A);
        extract(q, &lq, b, m, k, Q);
        extract(r, &lr, b, k, n, R);
        check_qr_one(dbl, "qr reduced", A, Q, R, m, n, k);
        extract(qc, &lqc, b, m, m, Q);
        extract(rc, &la, b, m, n, R);
        check_qr_one(dbl, "qr complete", A, Q, R, m, n, m);
        if ((info[b] & (BATCHLIN_INFO_NONFINITE | BATCHLIN_INFO_NOT_CONVERGED)) != 0) info_ok = 0;
    }
    CHECK(info_ok, "qr %s: unexpected info flags (info[0] = %#x)", tname(dbl), info[0]);
    CHECK(max_abs_diff(r, r_only) <= tol_for(dbl),
          "qr %s: mode R differs from the reduced R by %g", tname(dbl), max_abs_diff(r, r_only));
    free(A);
    free(Q);
    free(R);
    free(info);
    bfree(a);
    bfree(q);
    bfree(r);
    bfree(qc);
    bfree(rc);
    bfree(r_only);
}

/* Strided input (column-major with padding, and a reversed batch) and strided outputs,
 * checked against the contiguous results. */
static void test_qr_strided(int dbl, batchlin_backend be) {
    const int64_t batch = 4, m = 6, n = 4, k = 4, pad = 3;
    buf a = balloc(dbl, (size_t)(batch * m * n));
    fill_random(a);
    buf q = balloc(dbl, (size_t)(batch * m * k)), r = balloc(dbl, (size_t)(batch * k * n));
    CHECK_STATUS(qr(dbl, a.p, batch, m, n, BATCHLIN_QR_REDUCED, q.p, r.p, NULL), BATCHLIN_OK);

    /* The same matrices, column-major, `pad` elements between matrices, batch reversed. */
    int64_t bs = m * n + pad;
    buf at = balloc(dbl, (size_t)(batch * bs));
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                set(at, (size_t)((batch - 1 - b) * bs + j * m + i), get(a, (size_t)(b * m * n + i * n + j)));
    batchlin_layout al = {batch, -bs, 1, m};
    const void *a_first =
        dbl ? (const void *)((double *)at.p + (batch - 1) * bs) : (const void *)((float *)at.p + (batch - 1) * bs);

    /* Q column-major with padding, R row-major with a wider row. */
    batchlin_layout ql = {batch, m * k + 2, 1, m};
    batchlin_layout rl = {batch, k * (n + 2), n + 2, 1};
    buf q2 = balloc(dbl, (size_t)(batch * ql.batch_stride));
    buf r2 = balloc(dbl, (size_t)(batch * rl.batch_stride));
    uint32_t info[4];
    CHECK_STATUS(qr_strided(dbl, a_first, &al, m, n, BATCHLIN_QR_REDUCED, q2.p, &ql, r2.p, &rl,
                            info, be),
                 BATCHLIN_OK);
    batchlin_layout lq = batchlin_layout_row_major(batch, m, k);
    batchlin_layout lr = batchlin_layout_row_major(batch, k, n);
    double Q1[24], Q2[24], R1[16], R2[16];
    double dq = 0, dr = 0;
    for (int64_t b = 0; b < batch; b++) {
        extract(q, &lq, b, m, k, Q1);
        extract(q2, &ql, b, m, k, Q2);
        extract(r, &lr, b, k, n, R1);
        extract(r2, &rl, b, k, n, R2);
        for (int i = 0; i < 24; i++) dq = fmax(dq, fabs(Q1[i] - Q2[i]));
        for (int i = 0; i < 16; i++) dr = fmax(dr, fabs(R1[i] - R2[i]));
    }
    CHECK(dq <= tol_for(dbl) && dr <= tol_for(dbl),
          "qr strided %s backend %d: differs from contiguous by %g (Q), %g (R)", tname(dbl), be,
          dq, dr);
    /* NULL output layouts mean contiguous. */
    buf q3 = balloc(dbl, q.len), r3 = balloc(dbl, r.len);
    CHECK_STATUS(qr_strided(dbl, a_first, &al, m, n, BATCHLIN_QR_REDUCED, q3.p, NULL, r3.p, NULL,
                            NULL, be),
                 BATCHLIN_OK);
    CHECK(max_abs_diff(q, q3) <= tol_for(dbl) && max_abs_diff(r, r3) <= tol_for(dbl),
          "qr strided %s, contiguous outputs: differ", tname(dbl));
    bfree(a);
    bfree(q);
    bfree(r);
    bfree(at);
    bfree(q2);
    bfree(r2);
    bfree(q3);
    bfree(r3);
}

/* ------------------------------------------------------------------------------------ */
/* eigh */

static void symmetric_random(buf a, int64_t batch, int64_t n) {
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j <= i; j++) {
                double x = uniform();
                set(a, (size_t)(b * n * n + i * n + j), x);
                set(a, (size_t)(b * n * n + j * n + i), x);
            }
}

static void test_eigh_shape(int dbl, int64_t batch, int64_t n) {
    buf a = balloc(dbl, (size_t)(batch * n * n));
    symmetric_random(a, batch, n);
    /* Copies with the unread triangle spoiled. */
    buf al = balloc(dbl, a.len), au = balloc(dbl, a.len);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                size_t o = (size_t)(b * n * n + i * n + j);
                set(al, o, j > i ? 1e3 : get(a, o));
                set(au, o, j < i ? -1e3 : get(a, o));
            }
    buf w = balloc(dbl, (size_t)(batch * n)), v = balloc(dbl, (size_t)(batch * n * n));
    buf wu = balloc(dbl, w.len), vu = balloc(dbl, v.len), w2 = balloc(dbl, w.len);
    uint32_t *info = malloc(sizeof(uint32_t) * (size_t)batch);
    CHECK_STATUS(eigh(dbl, al.p, batch, n, BATCHLIN_LOWER, w.p, v.p, info), BATCHLIN_OK);
    CHECK_STATUS(eigh(dbl, au.p, batch, n, 'U', wu.p, vu.p, NULL), BATCHLIN_OK);
    CHECK_STATUS(eigvalsh(dbl, al.p, batch, n, 'l', w2.p, NULL), BATCHLIN_OK);

    batchlin_layout la = batchlin_layout_row_major(batch, n, n);
    batchlin_layout lw = batchlin_layout_row_major(batch, 1, n);
    double *A = malloc(sizeof(double) * (size_t)(n * n + 1));
    double *V = malloc(sizeof(double) * (size_t)(n * n + 1));
    double *W = malloc(sizeof(double) * (size_t)(n + 1));
    int info_ok = 1;
    for (int64_t b = 0; b < batch; b++) {
        extract(a, &la, b, n, n, A);
        extract(w, &lw, b, 1, n, W);
        extract(v, &la, b, n, n, V);
        check_eigh_one(dbl, "eigh lower", A, W, V, n);
        extract(wu, &lw, b, 1, n, W);
        extract(vu, &la, b, n, n, V);
        check_eigh_one(dbl, "eigh upper", A, W, V, n);
        if ((info[b] & (BATCHLIN_INFO_NONFINITE | BATCHLIN_INFO_NOT_CONVERGED)) != 0) info_ok = 0;
    }
    CHECK(info_ok, "eigh %s: unexpected info flags (info[0] = %#x)", tname(dbl), info[0]);
    CHECK(max_abs_diff(w, wu) <= tol_for(dbl) * n, "eigh %s: lower and upper differ by %g",
          tname(dbl), max_abs_diff(w, wu));
    CHECK(max_abs_diff(w, w2) <= tol_for(dbl) * n, "eigvalsh %s: differs from eigh by %g",
          tname(dbl), max_abs_diff(w, w2));
    free(A);
    free(V);
    free(W);
    free(info);
    bfree(a);
    bfree(al);
    bfree(au);
    bfree(w);
    bfree(v);
    bfree(wu);
    bfree(vu);
    bfree(w2);
}

static void test_eigh_strided(int dbl, batchlin_backend be) {
    const int64_t batch = 3, n = 5;
    buf a = balloc(dbl, (size_t)(batch * n * n));
    symmetric_random(a, batch, n);
    buf w = balloc(dbl, (size_t)(batch * n)), v = balloc(dbl, (size_t)(batch * n * n));
    CHECK_STATUS(eigh(dbl, a.p, batch, n, BATCHLIN_LOWER, w.p, v.p, NULL), BATCHLIN_OK);

    /* Input column-major (the transpose: the upper triangle read as the lower). */
    batchlin_layout al = batchlin_layout_col_major(batch, n, n);
    /* w every other element, 1 element between vectors; v column-major. */
    batchlin_layout wl = {batch, 2 * n + 1, 0, 2};
    batchlin_layout vl = batchlin_layout_col_major(batch, n, n);
    buf w2 = balloc(dbl, (size_t)(batch * wl.batch_stride)), v2 = balloc(dbl, v.len);
    buf w3 = balloc(dbl, w2.len);
    uint32_t info[3] = {7, 7, 7};
    CHECK_STATUS(eigh_strided(dbl, a.p, &al, n, BATCHLIN_UPPER, w2.p, &wl, v2.p, &vl, info, be),
                 BATCHLIN_OK);
    CHECK_STATUS(eigvalsh_strided(dbl, a.p, &al, n, BATCHLIN_UPPER, w3.p, &wl, NULL, be),
                 BATCHLIN_OK);
    batchlin_layout lw = batchlin_layout_row_major(batch, 1, n);
    batchlin_layout lv = batchlin_layout_row_major(batch, n, n);
    double W1[5], W2[5], W3[5], V1[25], V2[25], dw = 0, dv = 0;
    for (int64_t b = 0; b < batch; b++) {
        extract(w, &lw, b, 1, n, W1);
        extract(w2, &wl, b, 1, n, W2);
        extract(w3, &wl, b, 1, n, W3);
        extract(v, &lv, b, n, n, V1);
        extract(v2, &vl, b, n, n, V2);
        for (int i = 0; i < 5; i++) dw = fmax(dw, fmax(fabs(W1[i] - W2[i]), fabs(W1[i] - W3[i])));
        for (int i = 0; i < 25; i++) dv = fmax(dv, fabs(V1[i] - V2[i]));
    }
    CHECK(dw <= tol_for(dbl) * 10 && dv <= tol_for(dbl) * 10,
          "eigh strided %s backend %d: differs from contiguous by %g (w), %g (v)", tname(dbl), be,
          dw, dv);
    CHECK((info[0] & BATCHLIN_INFO_NONFINITE) == 0 && (info[2] & BATCHLIN_INFO_NOT_CONVERGED) == 0,
          "eigh strided: info %#x", info[0]);
    bfree(a);
    bfree(w);
    bfree(v);
    bfree(w2);
    bfree(v2);
    bfree(w3);
}

/* ------------------------------------------------------------------------------------ */
/* SVD */

static void test_svd_shape(int dbl, int64_t batch, int64_t m, int64_t n) {
    int64_t k = m < n ? m : n;
    buf a = balloc(dbl, (size_t)(batch * m * n));
    fill_random(a);
    buf u = balloc(dbl, (size_t)(batch * m * k)), s = balloc(dbl, (size_t)(batch * k)),
        vh = balloc(dbl, (size_t)(batch * k * n));
    buf uf = balloc(dbl, (size_t)(batch * m * m)), sf = balloc(dbl, s.len),
        vf = balloc(dbl, (size_t)(batch * n * n));
    buf s2 = balloc(dbl, s.len);
    uint32_t *info = malloc(sizeof(uint32_t) * (size_t)batch);
    CHECK_STATUS(svd(dbl, a.p, batch, m, n, 0, u.p, s.p, vh.p, info), BATCHLIN_OK);
    CHECK_STATUS(svd(dbl, a.p, batch, m, n, 1, uf.p, sf.p, vf.p, NULL), BATCHLIN_OK);
    CHECK_STATUS(svdvals(dbl, a.p, batch, m, n, s2.p, NULL), BATCHLIN_OK);

    batchlin_layout la = batchlin_layout_row_major(batch, m, n);
    batchlin_layout lu = batchlin_layout_row_major(batch, m, k);
    batchlin_layout ls = batchlin_layout_row_major(batch, 1, k);
    batchlin_layout lv = batchlin_layout_row_major(batch, k, n);
    batchlin_layout luf = batchlin_layout_row_major(batch, m, m);
    batchlin_layout lvf = batchlin_layout_row_major(batch, n, n);
    double *A = malloc(sizeof(double) * (size_t)(m * n + 1));
    double *U = malloc(sizeof(double) * (size_t)(m * m + 1));
    double *S = malloc(sizeof(double) * (size_t)(k + 1));
    double *VH = malloc(sizeof(double) * (size_t)(n * n + 1));
    int info_ok = 1;
    for (int64_t b = 0; b < batch; b++) {
        extract(a, &la, b, m, n, A);
        extract(u, &lu, b, m, k, U);
        extract(s, &ls, b, 1, k, S);
        extract(vh, &lv, b, k, n, VH);
        check_svd_one(dbl, "svd", A, U, S, VH, m, n, k, k);
        extract(uf, &luf, b, m, m, U);
        extract(sf, &ls, b, 1, k, S);
        extract(vf, &lvf, b, n, n, VH);
        check_svd_one(dbl, "svd full", A, U, S, VH, m, n, m, n);
        if ((info[b] & (BATCHLIN_INFO_NONFINITE | BATCHLIN_INFO_NOT_CONVERGED)) != 0) info_ok = 0;
    }
    CHECK(info_ok, "svd %s: unexpected info flags (info[0] = %#x)", tname(dbl), info[0]);
    CHECK(max_abs_diff(s, s2) <= tol_for(dbl) * 10, "svdvals %s: differs from svd by %g",
          tname(dbl), max_abs_diff(s, s2));
    free(A);
    free(U);
    free(S);
    free(VH);
    free(info);
    bfree(a);
    bfree(u);
    bfree(s);
    bfree(vh);
    bfree(uf);
    bfree(sf);
    bfree(vf);
    bfree(s2);
}

static void test_svd_strided(int dbl, batchlin_backend be) {
    const int64_t batch = 3, m = 4, n = 6, k = 4;
    buf a = balloc(dbl, (size_t)(batch * m * n));
    fill_random(a);
    buf u = balloc(dbl, (size_t)(batch * m * k)), s = balloc(dbl, (size_t)(batch * k)),
        vh = balloc(dbl, (size_t)(batch * k * n));
    CHECK_STATUS(svd(dbl, a.p, batch, m, n, 0, u.p, s.p, vh.p, NULL), BATCHLIN_OK);

    /* The input read as every other row of a taller buffer. */
    buf at = balloc(dbl, (size_t)(batch * 2 * m * n));
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                set(at, (size_t)(b * 2 * m * n + 2 * i * n + j), get(a, (size_t)(b * m * n + i * n + j)));
    batchlin_layout al = {batch, 2 * m * n, 2 * n, 1};
    batchlin_layout ul = batchlin_layout_col_major(batch, m, k);
    batchlin_layout sl = {batch, 1, 0, batch}; /* s transposed: [k, batch] */
    batchlin_layout vl = batchlin_layout_col_major(batch, k, n);
    buf u2 = balloc(dbl, u.len), s2 = balloc(dbl, s.len), v2 = balloc(dbl, vh.len),
        s3 = balloc(dbl, s.len);
    CHECK_STATUS(svd_strided(dbl, at.p, &al, m, n, 0, u2.p, &ul, s2.p, &sl, v2.p, &vl, NULL, be),
                 BATCHLIN_OK);
    CHECK_STATUS(svdvals_strided(dbl, at.p, &al, m, n, s3.p, &sl, NULL, be), BATCHLIN_OK);
    batchlin_layout lu = batchlin_layout_row_major(batch, m, k);
    batchlin_layout ls = batchlin_layout_row_major(batch, 1, k);
    batchlin_layout lv = batchlin_layout_row_major(batch, k, n);
    double U1[16], U2[16], S1[4], S2[4], S3[4], V1[24], V2[24], d = 0;
    for (int64_t b = 0; b < batch; b++) {
        extract(u, &lu, b, m, k, U1);
        extract(u2, &ul, b, m, k, U2);
        extract(s, &ls, b, 1, k, S1);
        extract(s2, &sl, b, 1, k, S2);
        extract(s3, &sl, b, 1, k, S3);
        extract(vh, &lv, b, k, n, V1);
        extract(v2, &vl, b, k, n, V2);
        for (int i = 0; i < 16; i++) d = fmax(d, fabs(U1[i] - U2[i]));
        for (int i = 0; i < 4; i++) d = fmax(d, fmax(fabs(S1[i] - S2[i]), fabs(S1[i] - S3[i])));
        for (int i = 0; i < 24; i++) d = fmax(d, fabs(V1[i] - V2[i]));
    }
    CHECK(d <= tol_for(dbl) * 10, "svd strided %s backend %d: differs from contiguous by %g",
          tname(dbl), be, d);
    bfree(a);
    bfree(u);
    bfree(s);
    bfree(vh);
    bfree(at);
    bfree(u2);
    bfree(s2);
    bfree(v2);
    bfree(s3);
}

/* ------------------------------------------------------------------------------------ */
/* Info words: a NaN or Inf in one matrix flags it alone. */

static void test_nonfinite(int dbl) {
    const int64_t batch = 3, n = 4;
    buf a = balloc(dbl, (size_t)(batch * n * n));
    symmetric_random(a, batch, n);
    set(a, (size_t)(1 * n * n + 2 * n + 1), NAN);
    set(a, (size_t)(1 * n * n + 1 * n + 2), NAN);
    buf q = balloc(dbl, a.len), r = balloc(dbl, a.len), w = balloc(dbl, (size_t)(batch * n)),
        v = balloc(dbl, a.len), s = balloc(dbl, (size_t)(batch * n)), vh = balloc(dbl, a.len);
    uint32_t info[3];
    batchlin_layout la = batchlin_layout_row_major(batch, n, n);
    double A[16], Q[16], R[16], W[4], V[16];

    memset(info, 0, sizeof info);
    CHECK_STATUS(qr(dbl, a.p, batch, n, n, BATCHLIN_QR_REDUCED, q.p, r.p, info), BATCHLIN_OK);
    CHECK((info[1] & BATCHLIN_INFO_NONFINITE) != 0, "qr %s: NaN not flagged (%#x)", tname(dbl),
          info[1]);
    CHECK(!(info[0] & BATCHLIN_INFO_NONFINITE) && !(info[2] & BATCHLIN_INFO_NONFINITE),
          "qr %s: finite matrices flagged (%#x, %#x)", tname(dbl), info[0], info[2]);
    CHECK(isnan(get(q, (size_t)(n * n))) && isnan(get(r, (size_t)(n * n + n + 1))),
          "qr %s: outputs of the NaN matrix are not NaN", tname(dbl));
    for (int64_t b = 0; b < batch; b += 2) {
        extract(a, &la, b, n, n, A);
        extract(q, &la, b, n, n, Q);
        extract(r, &la, b, n, n, R);
        check_qr_one(dbl, "qr beside NaN", A, Q, R, n, n, n);
    }

    memset(info, 0, sizeof info);
    set(a, (size_t)(1 * n * n + 2 * n + 1), INFINITY);
    set(a, (size_t)(1 * n * n + 1 * n + 2), INFINITY);
    CHECK_STATUS(eigh(dbl, a.p, batch, n, BATCHLIN_LOWER, w.p, v.p, info), BATCHLIN_OK);
    CHECK((info[1] & BATCHLIN_INFO_NONFINITE) != 0, "eigh %s: Inf not flagged (%#x)", tname(dbl),
          info[1]);
    CHECK(!(info[0] & BATCHLIN_INFO_NONFINITE) && !(info[2] & BATCHLIN_INFO_NONFINITE),
          "eigh %s: finite matrices flagged", tname(dbl));
    CHECK(isnan(get(w, (size_t)n)) && isnan(get(v, (size_t)(n * n))),
          "eigh %s: outputs of the Inf matrix are not NaN", tname(dbl));
    batchlin_layout lw = batchlin_layout_row_major(batch, 1, n);
    for (int64_t b = 0; b < batch; b += 2) {
        extract(a, &la, b, n, n, A);
        extract(w, &lw, b, 1, n, W);
        extract(v, &la, b, n, n, V);
        check_eigh_one(dbl, "eigh beside Inf", A, W, V, n);
    }

    memset(info, 0, sizeof info);
    set(a, (size_t)(2 * n * n), NAN);
    CHECK_STATUS(svd(dbl, a.p, batch, n, n, 0, q.p, s.p, vh.p, info), BATCHLIN_OK);
    CHECK((info[1] & BATCHLIN_INFO_NONFINITE) && (info[2] & BATCHLIN_INFO_NONFINITE) &&
              !(info[0] & BATCHLIN_INFO_NONFINITE),
          "svd %s: info %#x %#x %#x", tname(dbl), info[0], info[1], info[2]);
    CHECK(isnan(get(s, (size_t)n)) && isnan(get(s, (size_t)(2 * n))) && !isnan(get(s, 0)),
          "svd %s: singular values of the non-finite matrices are not NaN", tname(dbl));

    /* A zero matrix is rank deficient. */
    buf z = balloc(dbl, (size_t)(n * n));
    memset(info, 0, sizeof info);
    CHECK_STATUS(svdvals(dbl, z.p, 1, n, n, s.p, info), BATCHLIN_OK);
    CHECK((info[0] & BATCHLIN_INFO_RANK_DEFICIENT) != 0 && get(s, 0) == 0,
          "svdvals %s of zero: info %#x, s[0] = %g", tname(dbl), info[0], get(s, 0));
    bfree(z);
    bfree(a);
    bfree(q);
    bfree(r);
    bfree(w);
    bfree(v);
    bfree(s);
    bfree(vh);
}

/* ------------------------------------------------------------------------------------ */
/* Zero sizes are valid; NULL is fine where nothing is read or written. */

static void test_zero_sizes(int dbl) {
    CHECK_STATUS(qr(dbl, NULL, 0, 3, 3, BATCHLIN_QR_REDUCED, NULL, NULL, NULL), BATCHLIN_OK);
    CHECK_STATUS(qr(dbl, NULL, 2, 0, 3, BATCHLIN_QR_REDUCED, NULL, NULL, NULL), BATCHLIN_OK);
    CHECK_STATUS(eigh(dbl, NULL, 0, 4, BATCHLIN_LOWER, NULL, NULL, NULL), BATCHLIN_OK);
    CHECK_STATUS(eigh(dbl, NULL, 3, 0, BATCHLIN_LOWER, NULL, NULL, NULL), BATCHLIN_OK);
    CHECK_STATUS(eigvalsh(dbl, NULL, 0, 4, BATCHLIN_UPPER, NULL, NULL), BATCHLIN_OK);
    CHECK_STATUS(svd(dbl, NULL, 0, 3, 2, 0, NULL, NULL, NULL, NULL), BATCHLIN_OK);
    CHECK_STATUS(svd(dbl, NULL, 2, 0, 3, 0, NULL, NULL, NULL, NULL), BATCHLIN_OK);
    CHECK_STATUS(svdvals(dbl, NULL, 0, 3, 3, NULL, NULL), BATCHLIN_OK);
    uint32_t info[2] = {9, 9};
    CHECK_STATUS(svdvals(dbl, NULL, 2, 3, 0, NULL, info), BATCHLIN_OK);

    /* numpy: qr(mode="complete") of 3x0 matrices gives Q = I (3x3) and an empty R. */
    buf q = balloc(dbl, 2 * 9);
    for (size_t i = 0; i < q.len; i++) set(q, i, 42);
    CHECK_STATUS(qr(dbl, NULL, 2, 3, 0, BATCHLIN_QR_COMPLETE, q.p, NULL, NULL), BATCHLIN_OK);
    int identity = 1;
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                if (get(q, (size_t)(b * 9 + i * 3 + j)) != (i == j ? 1.0 : 0.0)) identity = 0;
    CHECK(identity, "qr complete %s of 3x0: Q is not the identity", tname(dbl));
    bfree(q);

    batchlin_layout empty = {0, 5, 1, 1};
    CHECK_STATUS(qr_strided(dbl, NULL, &empty, 3, 3, BATCHLIN_QR_R, NULL, NULL, NULL, NULL, NULL,
                            BATCHLIN_BACKEND_AUTO),
                 BATCHLIN_OK);
}

/* ------------------------------------------------------------------------------------ */
/* Every error path: a status and a message, never a crash. */

static void expect_message(const char *needle) {
    const char *msg = batchlin_last_error();
    CHECK(msg && strstr(msg, needle) != NULL, "last error \"%s\" lacks \"%s\"", msg ? msg : "(null)",
          needle);
}

static void test_errors(int dbl) {
    buf a = balloc(dbl, 2 * 9 + 1), q = balloc(dbl, 2 * 9 + 1), r = balloc(dbl, 2 * 9 + 1),
        w = balloc(dbl, 2 * 3 + 1);
    fill_random(a);
    uint32_t info[3];
    const batchlin_backend AUTO = BATCHLIN_BACKEND_AUTO;

    /* NULL where data is needed. */
    CHECK_STATUS(qr(dbl, NULL, 2, 3, 3, BATCHLIN_QR_REDUCED, q.p, r.p, NULL),
                 BATCHLIN_ERROR_ARGUMENT);
    expect_message("a is NULL");
    CHECK_STATUS(qr(dbl, a.p, 2, 3, 3, BATCHLIN_QR_REDUCED, NULL, r.p, NULL),
                 BATCHLIN_ERROR_ARGUMENT);
    expect_message("q is NULL");
    CHECK_STATUS(qr(dbl, a.p, 2, 3, 3, BATCHLIN_QR_COMPLETE, q.p, NULL, NULL),
                 BATCHLIN_ERROR_ARGUMENT);
    expect_message("r is NULL");
    CHECK_STATUS(eigh(dbl, a.p, 2, 3, BATCHLIN_LOWER, NULL, q.p, NULL), BATCHLIN_ERROR_ARGUMENT);
    expect_message("w is NULL");
    CHECK_STATUS(eigh(dbl, a.p, 2, 3, BATCHLIN_LOWER, w.p, NULL, NULL), BATCHLIN_ERROR_ARGUMENT);
    expect_message("v is NULL");
    CHECK_STATUS(eigvalsh(dbl, NULL, 2, 3, BATCHLIN_LOWER, w.p, NULL), BATCHLIN_ERROR_ARGUMENT);
    CHECK_STATUS(svd(dbl, a.p, 2, 3, 3, 0, NULL, w.p, r.p, NULL), BATCHLIN_ERROR_ARGUMENT);
    expect_message("u is NULL");
    CHECK_STATUS(svd(dbl, a.p, 2, 3, 3, 0, q.p, NULL, r.p, NULL), BATCHLIN_ERROR_ARGUMENT);
    expect_message("s is NULL");
    CHECK_STATUS(svd(dbl, a.p, 2, 3, 3, 0, q.p, w.p, NULL, NULL), BATCHLIN_ERROR_ARGUMENT);
    expect_message("vh is NULL");
    CHECK_STATUS(svdvals(dbl, a.p, 2, 3, 3, NULL, NULL), BATCHLIN_ERROR_ARGUMENT);
    CHECK_STATUS(qr_strided(dbl, a.p, NULL, 3, 3, BATCHLIN_QR_R, NULL, NULL, r.p, NULL, NULL, AUTO),
                 BATCHLIN_ERROR_ARGUMENT);
    expect_message("a_layout is NULL");

    /* Negative sizes. */
    CHECK_STATUS(qr(dbl, a.p, -1, 3, 3, BATCHLIN_QR_R, NULL, r.p, NULL), BATCHLIN_ERROR_SHAPE);
    expect_message("batch must be >= 0");
    CHECK_STATUS(qr(dbl, a.p, 2, -3, 3, BATCHLIN_QR_R, NULL, r.p, NULL), BATCHLIN_ERROR_SHAPE);
    CHECK_STATUS(qr(dbl, a.p, 2, 3, -3, BATCHLIN_QR_R, NULL, r.p, NULL), BATCHLIN_ERROR_SHAPE);
    CHECK_STATUS(eigh(dbl, a.p, 2, -1, BATCHLIN_LOWER, w.p, q.p, NULL), BATCHLIN_ERROR_SHAPE);
    CHECK_STATUS(svdvals(dbl, a.p, INT64_MIN, 3, 3, w.p, NULL), BATCHLIN_ERROR_SHAPE);

    /* Sizes whose products overflow (the buffers are never touched). */
    CHECK_STATUS(qr(dbl, a.p, INT64_MAX, 2, 2, BATCHLIN_QR_R, NULL, r.p, NULL),
                 BATCHLIN_ERROR_OVERFLOW);
    CHECK_STATUS(qr(dbl, a.p, (int64_t)1 << 40, (int64_t)1 << 20, (int64_t)1 << 20,
                    BATCHLIN_QR_REDUCED, q.p, r.p, NULL),
                 BATCHLIN_ERROR_OVERFLOW);
    CHECK_STATUS(eigh(dbl, a.p, 1, INT64_MAX, BATCHLIN_LOWER, w.p, q.p, NULL),
                 BATCHLIN_ERROR_OVERFLOW);
    CHECK_STATUS(svd(dbl, a.p, 3, (int64_t)1 << 31, (int64_t)1 << 31, 1, q.p, w.p, r.p, NULL),
                 BATCHLIN_ERROR_OVERFLOW);
    /* Elements that fit but bytes that do not. */
    CHECK_STATUS(svdvals(dbl, a.p, 1, (int64_t)1 << 31, (int64_t)1 << 31, w.p, NULL),
                 BATCHLIN_ERROR_OVERFLOW);
    {
        batchlin_layout big = {3, INT64_MAX / 2, 3, 1};
        CHECK_STATUS(qr_strided(dbl, a.p, &big, 3, 3, BATCHLIN_QR_R, NULL, NULL, r.p, NULL, NULL,
                                AUTO),
                     BATCHLIN_ERROR_OVERFLOW);
        batchlin_layout far = {1, 0, (int64_t)1 << 60, 1};
        CHECK_STATUS(qr_strided(dbl, a.p, &far, 3, 3, BATCHLIN_QR_R, NULL, NULL, r.p, NULL, NULL,
                                AUTO),
                     BATCHLIN_ERROR_OVERFLOW);
        batchlin_layout sat = batchlin_layout_row_major(2, (int64_t)1 << 62, 4);
        CHECK_STATUS(qr_strided(dbl, a.p, &sat, 3, 3, BATCHLIN_QR_R, NULL, NULL, r.p, NULL, NULL,
                                AUTO),
                     BATCHLIN_ERROR_OVERFLOW);
        batchlin_layout out_far = {2, INT64_MAX / 2, 3, 1};
        CHECK_STATUS(qr_strided(dbl, a.p, &(batchlin_layout){2, 9, 3, 1}, 3, 3, BATCHLIN_QR_R,
                                NULL, NULL, r.p, &out_far, NULL, AUTO),
                     BATCHLIN_ERROR_OVERFLOW);
    }

    /* Misaligned buffers. */
    {
        char *base = (char *)a.p + 1;
        char *rb = (char *)r.p + 1;
        CHECK_STATUS(qr(dbl, base, 2, 3, 3, BATCHLIN_QR_R, NULL, r.p, NULL),
                     BATCHLIN_ERROR_ARGUMENT);
        expect_message("aligned");
        CHECK_STATUS(qr(dbl, a.p, 2, 3, 3, BATCHLIN_QR_R, NULL, rb, NULL), BATCHLIN_ERROR_ARGUMENT);
        expect_message("r (");
        CHECK_STATUS(qr(dbl, a.p, 2, 3, 3, BATCHLIN_QR_REDUCED, (char *)q.p + 2, r.p, NULL),
                     BATCHLIN_ERROR_ARGUMENT);
        CHECK_STATUS(eigh(dbl, a.p, 2, 3, BATCHLIN_LOWER, (char *)w.p + 1, q.p, NULL),
                     BATCHLIN_ERROR_ARGUMENT);
        CHECK_STATUS(svdvals(dbl, a.p, 2, 3, 3, (char *)w.p + 3, NULL), BATCHLIN_ERROR_ARGUMENT);
        CHECK_STATUS(qr(dbl, a.p, 2, 3, 3, BATCHLIN_QR_R, NULL, r.p, (uint32_t *)((char *)info + 1)),
                     BATCHLIN_ERROR_ARGUMENT);
        expect_message("info");
        if (dbl) { /* 4-byte aligned but not 8 */
            CHECK_STATUS(qr(dbl, (char *)a.p + 4, 2, 3, 3, BATCHLIN_QR_R, NULL, r.p, NULL),
                         BATCHLIN_ERROR_ARGUMENT);
        }
        /* Misaligned is an error even when nothing would be read. */
        CHECK_STATUS(qr(dbl, base, 0, 3, 3, BATCHLIN_QR_R, NULL, NULL, NULL),
                     BATCHLIN_ERROR_ARGUMENT);
    }

    /* Unknown modes, triangles and backends. */
    CHECK_STATUS(qr(dbl, a.p, 2, 3, 3, 3, q.p, r.p, NULL), BATCHLIN_ERROR_ARGUMENT);
    expect_message("QR mode");
    CHECK_STATUS(qr(dbl, a.p, 2, 3, 3, -1, q.p, r.p, NULL), BATCHLIN_ERROR_ARGUMENT);
    CHECK_STATUS(eigh(dbl, a.p, 2, 3, 'X', w.p, q.p, NULL), BATCHLIN_ERROR_ARGUMENT);
    expect_message("uplo");
    CHECK_STATUS(eigvalsh(dbl, a.p, 2, 3, 0, w.p, NULL), BATCHLIN_ERROR_ARGUMENT);
    {
        batchlin_layout al = batchlin_layout_row_major(2, 3, 3);
        CHECK_STATUS(qr_strided(dbl, a.p, &al, 3, 3, BATCHLIN_QR_R, NULL, NULL, r.p, NULL, NULL,
                                42),
                     BATCHLIN_ERROR_ARGUMENT);
        expect_message("backend");
        CHECK_STATUS(svdvals_strided(dbl, a.p, &al, 3, 3, w.p, NULL, NULL, -7),
                     BATCHLIN_ERROR_ARGUMENT);
        /* CUDA: named, but not in this build. */
        CHECK_STATUS(qr_strided(dbl, a.p, &al, 3, 3, BATCHLIN_QR_R, NULL, NULL, r.p, NULL, NULL,
                                BATCHLIN_BACKEND_CUDA),
                     BATCHLIN_ERROR_UNAVAILABLE);
        expect_message("cuda");

        /* Output layouts that do not fit. */
        batchlin_layout wrong_batch = batchlin_layout_row_major(3, 3, 3);
        CHECK_STATUS(qr_strided(dbl, a.p, &al, 3, 3, BATCHLIN_QR_R, NULL, NULL, r.p, &wrong_batch,
                                NULL, AUTO),
                     BATCHLIN_ERROR_OUTPUT);
        expect_message("r_layout.batch");
        batchlin_layout overlap = {2, 9, 0, 1}; /* every row on the same elements */
        CHECK_STATUS(qr_strided(dbl, a.p, &al, 3, 3, BATCHLIN_QR_R, NULL, NULL, r.p, &overlap, NULL,
                                AUTO),
                     BATCHLIN_ERROR_OUTPUT);
        expect_message("overlap");
        batchlin_layout wl = {2, 0, 0, 1}; /* both vectors on the same elements */
        CHECK_STATUS(eigvalsh_strided(dbl, a.p, &al, 3, BATCHLIN_LOWER, w.p, &wl, NULL, AUTO),
                     BATCHLIN_ERROR_OUTPUT);
        /* A broadcast input (zero batch stride) is fine. */
        batchlin_layout bcast = {2, 0, 3, 1};
        CHECK_STATUS(eigvalsh_strided(dbl, a.p, &bcast, 3, BATCHLIN_LOWER, w.p, NULL, NULL, AUTO),
                     BATCHLIN_OK);
        CHECK(get(w, 0) == get(w, 3) && get(w, 2) == get(w, 5),
              "broadcast input: the two results differ");
    }

    /* The message is cleared by the next successful call. */
    CHECK_STATUS(qr(dbl, a.p, 2, 3, 3, BATCHLIN_QR_R, NULL, r.p, NULL), BATCHLIN_OK);
    CHECK(strcmp(batchlin_last_error(), "") == 0, "last error not cleared: %s",
          batchlin_last_error());
    bfree(a);
    bfree(q);
    bfree(r);
    bfree(w);
}

/* ------------------------------------------------------------------------------------ */
/* The device forms (the `_cuda` functions) on a machine without CUDA: argument errors
 * first, exactly as on a GPU machine, then BATCHLIN_ERROR_UNAVAILABLE with the reason.
 * The addresses are made up: no call gets far enough to use them. Where there is a GPU
 * the UNAVAILABLE checks are tests/c/test_cuda.c's, with real device memory. */

#define FAKE(type, addr) ((type *)(uintptr_t)(addr))

static void test_device_forms(void) {
    float *a = FAKE(float, 0x10000), *w = FAKE(float, 0x20000), *v = FAKE(float, 0x30000),
          *s = FAKE(float, 0x40000);
    double *ad = FAKE(double, 0x10000), *wd = FAKE(double, 0x20000), *vd = FAKE(double, 0x30000),
           *sd = FAKE(double, 0x40000);
    uint32_t *info = FAKE(uint32_t, 0x50000);
    batchlin_layout la = batchlin_layout_row_major(2, 3, 3);

    /* Argument errors, whatever the machine. */
    CHECK_STATUS(batchlin_seigh_cuda(NULL, 2, 3, BATCHLIN_LOWER, w, v, info, NULL),
                 BATCHLIN_ERROR_ARGUMENT);
    expect_message("a is NULL");
    CHECK_STATUS(batchlin_deigh_cuda(ad, 2, 3, 'X', wd, vd, info, NULL), BATCHLIN_ERROR_ARGUMENT);
    expect_message("uplo");
    CHECK_STATUS(batchlin_seigvalsh_cuda(a, 2, -1, BATCHLIN_UPPER, w, info, NULL),
                 BATCHLIN_ERROR_SHAPE);
    CHECK_STATUS(batchlin_ssvd_cuda(a, 2, 3, 3, 0, v, NULL, v, info, NULL),
                 BATCHLIN_ERROR_ARGUMENT);
    expect_message("s is NULL");
    CHECK_STATUS(batchlin_dsvdvals_cuda(ad, 2, 3, 3, FAKE(double, 0x40004), info, NULL),
                 BATCHLIN_ERROR_ARGUMENT);
    expect_message("aligned");
    CHECK_STATUS(batchlin_ssvdvals_cuda_strided(a, NULL, 3, 3, s, NULL, info, NULL),
                 BATCHLIN_ERROR_ARGUMENT);
    expect_message("a_layout is NULL");
    batchlin_layout wrong = batchlin_layout_row_major(5, 1, 3);
    CHECK_STATUS(batchlin_deigvalsh_cuda_strided(ad, &la, 3, BATCHLIN_LOWER, wd, &wrong, NULL, NULL),
                 BATCHLIN_ERROR_OUTPUT);
    expect_message("w_layout.batch");
    CHECK_STATUS(batchlin_sqr_cuda(a, 2, 3, 3, 7, v, w, info, NULL), BATCHLIN_ERROR_ARGUMENT);
    expect_message("QR mode");

    if (batchlin_plan(BATCHLIN_OP_QR, BATCHLIN_FLOAT32, 1, 2, 2, 0) != NULL) {
        printf("-- a CUDA device is present: the device forms' UNAVAILABLE checks are left to "
               "test_cuda\n");
        return;
    }
    /* Valid arguments: no CUDA here, said with the reason; zero sizes too. */
    CHECK_STATUS(batchlin_seigh_cuda(a, 2, 3, BATCHLIN_LOWER, w, v, info, NULL),
                 BATCHLIN_ERROR_UNAVAILABLE);
    expect_message("CUDA");
    CHECK_STATUS(batchlin_deigh_cuda_strided(ad, &la, 3, BATCHLIN_UPPER, wd, NULL, vd, NULL, NULL,
                                             NULL),
                 BATCHLIN_ERROR_UNAVAILABLE);
    expect_message("CUDA");
    CHECK_STATUS(batchlin_seigvalsh_cuda(a, 2, 3, BATCHLIN_LOWER, w, NULL, NULL),
                 BATCHLIN_ERROR_UNAVAILABLE);
    CHECK_STATUS(batchlin_deigvalsh_cuda(ad, 2, 3, BATCHLIN_LOWER, wd, info, NULL),
                 BATCHLIN_ERROR_UNAVAILABLE);
    CHECK_STATUS(batchlin_ssvd_cuda(a, 2, 3, 3, 1, v, s, w, info, NULL),
                 BATCHLIN_ERROR_UNAVAILABLE);
    expect_message("CUDA");
    CHECK_STATUS(batchlin_dsvd_cuda_strided(ad, &la, 3, 3, 0, vd, NULL, sd, NULL, wd, NULL, info,
                                            NULL),
                 BATCHLIN_ERROR_UNAVAILABLE);
    CHECK_STATUS(batchlin_ssvdvals_cuda_strided(a, &la, 3, 3, s, NULL, NULL, NULL),
                 BATCHLIN_ERROR_UNAVAILABLE);
    CHECK_STATUS(batchlin_dsvdvals_cuda(NULL, 0, 3, 3, NULL, NULL, NULL),
                 BATCHLIN_ERROR_UNAVAILABLE);
    CHECK_STATUS(batchlin_dqr_cuda(ad, 2, 3, 3, BATCHLIN_QR_R, NULL, vd, NULL, NULL),
                 BATCHLIN_ERROR_UNAVAILABLE);
    expect_message("CUDA");
}

/* ------------------------------------------------------------------------------------ */
/* Library queries. */

static void *thread_error(void *arg) {
    (void)arg;
    float r[4];
    batchlin_status st = batchlin_sqr(NULL, 1, 2, 2, BATCHLIN_QR_R, NULL, r, NULL);
    int ok = st == BATCHLIN_ERROR_ARGUMENT && strstr(batchlin_last_error(), "a is NULL") != NULL;
    return ok ? arg : NULL;
}

/* A host plan's text: "RULES [rules]", or "cpu-small" / "cpu-faer" with
   "[table: TIME us|ms predicted|extrapolated]". */
static int plan_described(const char *p, const char *rules) {
    char want[64];
    snprintf(want, sizeof want, "%s [rules]", rules);
    if (!strcmp(p, want))
        return 1;
    if (strncmp(p, "cpu-small [table: ", 18) && strncmp(p, "cpu-faer [table: ", 17))
        return 0;
    static const char *ends[] = {" us predicted]", " ms predicted]", " us extrapolated]",
                                 " ms extrapolated]"};
    size_t len = strlen(p);
    for (int i = 0; i < 4; i++) {
        size_t e = strlen(ends[i]);
        if (len > e && !strcmp(p + len - e, ends[i]))
            return 1;
    }
    return 0;
}

static void test_queries(void) {
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", BATCHLIN_VERSION_MAJOR, BATCHLIN_VERSION_MINOR,
             BATCHLIN_VERSION_PATCH);
    CHECK(strcmp(batchlin_version(), want) == 0, "library version %s, header %s",
          batchlin_version(), want);

    CHECK(strcmp(batchlin_status_name(BATCHLIN_OK), "ok") == 0, "status name of OK");
    CHECK(strcmp(batchlin_status_name(BATCHLIN_ERROR_OVERFLOW), "overflow") == 0,
          "status name of OVERFLOW");
    CHECK(strcmp(batchlin_status_name(BATCHLIN_ERROR_INTERNAL), "internal") == 0,
          "status name of INTERNAL");
    CHECK(strcmp(batchlin_status_name(1234), "unknown") == 0, "status name of 1234");

    static const batchlin_op ops[] = {BATCHLIN_OP_QR, BATCHLIN_OP_EIGH, BATCHLIN_OP_SVD};
    for (int i = 0; i < 3; i++)
        for (int d = 0; d < 2; d++) {
            const char *be = batchlin_backend_for(ops[i], d ? BATCHLIN_FLOAT64 : BATCHLIN_FLOAT32,
                                                  4096, 16, 16);
            CHECK(be && (!strcmp(be, "cpu-small") || !strcmp(be, "cpu-faer") || !strcmp(be, "cuda")),
                  "backend_for(op %d, dtype %d) = %s (%s)", ops[i], d, be ? be : "NULL",
                  batchlin_last_error());
        }
    CHECK(batchlin_backend_for(7, BATCHLIN_FLOAT32, 1, 2, 2) == NULL, "backend_for of op 7");
    expect_message("operation");
    CHECK(batchlin_backend_for(BATCHLIN_OP_QR, 5, 1, 2, 2) == NULL, "backend_for of dtype 5");
    expect_message("element type");
    CHECK(batchlin_backend_for(BATCHLIN_OP_QR, BATCHLIN_FLOAT32, 1, -2, 2) == NULL,
          "backend_for of m = -2");
    CHECK(batchlin_backend_for(BATCHLIN_OP_SVD, BATCHLIN_FLOAT64, 0, 0, 0) != NULL,
          "backend_for of an empty shape: %s", batchlin_last_error());

    /* The plan: named backend and kernel, and why: the rules' pick, or a CPU backend from
       this machine's cost table (the 2-core machine's QR table is built in). */
    int forced = getenv("BATCHLIN_BACKEND") != NULL;
    int from_table = 0;
    for (int i = 0; i < 3; i++)
        for (int d = 0; d < 2; d++) {
            batchlin_dtype dt = d ? BATCHLIN_FLOAT64 : BATCHLIN_FLOAT32;
            const char *p = batchlin_plan(ops[i], dt, 64, 8, 8, BATCHLIN_DEVICE_HOST);
            CHECK(p && (forced || plan_described(p, "cpu-small")),
                  "plan(op %d, dtype %d, 8x8) = %s (%s)", ops[i], d, p ? p : "NULL",
                  batchlin_last_error());
            from_table += p && strstr(p, "[table: ") != NULL;
            p = batchlin_plan(ops[i], dt, 4, 300, 300, BATCHLIN_DEVICE_HOST);
            CHECK(p && (forced || plan_described(p, "cpu-faer")),
                  "plan(op %d, dtype %d, 300x300) = %s (%s)", ops[i], d, p ? p : "NULL",
                  batchlin_last_error());
            from_table += p && strstr(p, "[table: ") != NULL;
        }
    CHECK(batchlin_plan(BATCHLIN_OP_QR, BATCHLIN_FLOAT32, 0, 0, 0, BATCHLIN_DEVICE_HOST) != NULL,
          "plan of an empty shape: %s", batchlin_last_error());
    CHECK(batchlin_plan(7, BATCHLIN_FLOAT32, 1, 2, 2, BATCHLIN_DEVICE_HOST) == NULL, "plan of op 7");
    expect_message("operation");
    CHECK(batchlin_plan(BATCHLIN_OP_QR, BATCHLIN_FLOAT32, 1, 2, 2, -5) == NULL,
          "plan on device -5");
    expect_message("device -5");
    CHECK(batchlin_plan(BATCHLIN_OP_EIGH, BATCHLIN_FLOAT64, 1, 2, 2, 4096) == NULL,
          "plan on device 4096");
    expect_message("CUDA");

    const char *src = batchlin_policy_source();
    CHECK(src && strlen(src) > 0, "policy_source is empty");
    /* Where a cost table is in use (policy_source says which), it decided some plans. */
    CHECK(forced || (strncmp(src, "cost table", 10) == 0) == (from_table > 0),
          "policy_source \"%s\" with %d plans from a table", src, from_table);

    batchlin_layout rm = batchlin_layout_row_major(5, 3, 4);
    batchlin_layout cm = batchlin_layout_col_major(5, 3, 4);
    CHECK(rm.batch == 5 && rm.batch_stride == 12 && rm.row_stride == 4 && rm.col_stride == 1,
          "row-major layout");
    CHECK(cm.batch == 5 && cm.batch_stride == 12 && cm.row_stride == 1 && cm.col_stride == 3,
          "column-major layout");

    /* The last error is per thread. */
    float r[4];
    CHECK_STATUS(batchlin_sqr(NULL, 0, 2, 2, BATCHLIN_QR_R, NULL, r, NULL), BATCHLIN_OK);
    pthread_t t;
    void *ret = NULL;
    int tag = 1;
    CHECK(pthread_create(&t, NULL, thread_error, &tag) == 0, "pthread_create");
    pthread_join(t, &ret);
    CHECK(ret == &tag, "the error in another thread was not reported there");
    CHECK(strcmp(batchlin_last_error(), "") == 0,
          "another thread's error leaked into this one: %s", batchlin_last_error());
}

int main(void) {
    test_queries();
    test_device_forms();
    for (int dbl = 0; dbl < 2; dbl++) {
        /* Shapes: tall, wide, square, one-by-one, and one big enough for faer. */
        test_qr_shape(dbl, 7, 5, 3);
        test_qr_shape(dbl, 4, 3, 5);
        test_qr_shape(dbl, 3, 8, 8);
        test_qr_shape(dbl, 5, 1, 1);
        test_qr_shape(dbl, 2, 40, 40);
        test_eigh_shape(dbl, 6, 1);
        test_eigh_shape(dbl, 5, 6);
        test_eigh_shape(dbl, 2, 40);
        test_svd_shape(dbl, 5, 6, 4);
        test_svd_shape(dbl, 4, 3, 7);
        test_svd_shape(dbl, 2, 40, 36);
        for (batchlin_backend be = BATCHLIN_BACKEND_AUTO; be <= BATCHLIN_BACKEND_CPU_FAER; be++) {
            test_qr_strided(dbl, be);
            test_eigh_strided(dbl, be);
            test_svd_strided(dbl, be);
        }
        test_nonfinite(dbl);
        test_zero_sizes(dbl);
        test_errors(dbl);
    }
    return check_report();
}
