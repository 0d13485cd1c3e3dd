//! Unblocked Householder QR for small matrices: LAPACK geqr2 (factor) and org2r (form Q),
//! with the reflector applied column by column over contiguous memory.
//!
//! Two forms: [`qr_factor`] / [`qr_form_q`] on a plain column-major buffer (ld = m), and
//! the padded forms [`qr_factor_padded`] / [`qr_form_q_padded`] the batch driver uses,
//! where every column is [`padded_ld`]`(m)` long (a whole number of 8-element chunks, the
//! rows past m zero) and each reflector is kept as a full zero-padded column. A reflector
//! then touches whole chunks only (from the chunk holding its first row), and is applied to
//! four columns per pass over it: one load of v for four dot products, no scalar tails.

use super::{chunks, larf_col, larfg, org2r_in_place, CHUNK};
use crate::Real;

/// Householder QR as LAPACK geqr2: on return the upper triangle (k x n, k = min(m,n)) of the
/// column-major `a` (ld = m) holds R, the strict lower part holds the Householder vectors v
/// (v[0] = 1 implicit), `tau[0..k]` the scalars, H_i = I - tau_i v_i v_i^T,
/// A = H_0 H_1 ... H_{k-1} R. A column whose sub-diagonal sum of squares underflows gets
/// tau = 0 (no reflection).
pub fn qr_factor<T: Real>(m: usize, n: usize, a: &mut [T], tau: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: AVX2 and FMA were detected.
        return unsafe { qr_factor_avx2(m, n, a, tau) };
    }
    qr_factor_impl::<T, false>(m, n, a, tau)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn qr_factor_avx2<T: Real>(m: usize, n: usize, a: &mut [T], tau: &mut [T]) {
    qr_factor_impl::<T, true>(m, n, a, tau)
}

#[inline(always)]
pub(crate) fn qr_factor_impl<T: Real, const F: bool>(
    m: usize,
    n: usize,
    a: &mut [T],
    tau: &mut [T],
) {
    let k = m.min(n);
    let a = &mut a[..m * n];
    for j in 0..k {
        let (left, right) = a.split_at_mut((j + 1) * m);
        let col = &mut left[j * m + j..j * m + m];
        let (alpha, x) = col.split_first_mut().unwrap();
        let (beta, t) = larfg::<T, F>(*alpha, x);
        *alpha = beta;
        tau[j] = t;
        if t != T::ZERO {
            let v_rest: &[T] = x;
            for c in right.chunks_exact_mut(m) {
                larf_col::<T, F>(t, v_rest, &mut c[j..]);
            }
        }
    }
}

/// Form the first `q_cols` columns (k <= q_cols <= m) of Q = H_0 ... H_{k-1} into `q`
/// (m x q_cols, column-major, ld = m), as LAPACK org2r. `a` holds the reflectors as left by
/// [`qr_factor`] (ld = m; only its strict lower part, first k columns, is read).
pub fn qr_form_q<T: Real>(m: usize, k: usize, a: &[T], tau: &[T], q: &mut [T], q_cols: usize) {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: AVX2 and FMA were detected.
        return unsafe { qr_form_q_avx2(m, k, a, tau, q, q_cols) };
    }
    qr_form_q_impl::<T, false>(m, k, a, tau, q, q_cols)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn qr_form_q_avx2<T: Real>(
    m: usize,
    k: usize,
    a: &[T],
    tau: &[T],
    q: &mut [T],
    q_cols: usize,
) {
    qr_form_q_impl::<T, true>(m, k, a, tau, q, q_cols)
}

#[inline(always)]
fn qr_form_q_impl<T: Real, const F: bool>(
    m: usize,
    k: usize,
    a: &[T],
    tau: &[T],
    q: &mut [T],
    q_cols: usize,
) {
    let k = k.min(q_cols).min(m);
    let q_cols = q_cols.min(m);
    // Copy the reflectors (strict lower part) in, then build Q in place.
    for j in 0..k {
        q[j * m + j + 1..j * m + m].copy_from_slice(&a[j * m + j + 1..j * m + m]);
    }
    org2r_in_place::<T, F>(m, q_cols, k, &mut q[..m * q_cols], m, tau);
}

/// Leading dimension of the padded kernels' buffers: `m` rounded up to a whole chunk.
pub fn padded_ld(m: usize) -> usize {
    m.div_ceil(CHUNK) * CHUNK
}

/// Apply `H = I - tau v v^T` from the left to columns `c0..c1` of the column-major `a`
/// (leading dimension `ld`), over rows `lo..ld` only: `v` is zero outside them (`v` is one
/// column, `ld` long; `lo` a multiple of [`CHUNK`]). Four columns per pass over `v`.
#[inline(always)]
pub(crate) fn apply_reflector<T: Real, const F: bool>(
    tau: T,
    v: &[T],
    a: &mut [T],
    ld: usize,
    lo: usize,
    c0: usize,
    c1: usize,
) {
    let v = &v[lo..ld];
    let mut c = c0;
    while c + 4 <= c1 {
        let blk = &mut a[c * ld..(c + 4) * ld];
        let (x0, r) = blk.split_at_mut(ld);
        let (x1, r) = r.split_at_mut(ld);
        let (x2, x3) = r.split_at_mut(ld);
        let (x0, x1, x2, x3) = (&mut x0[lo..], &mut x1[lo..], &mut x2[lo..], &mut x3[lo..]);
        let s = chunks::dot4::<T, F>(v, [x0, x1, x2, x3]);
        chunks::axpy::<T, F>(-(tau * s[0]), v, x0);
        chunks::axpy::<T, F>(-(tau * s[1]), v, x1);
        chunks::axpy::<T, F>(-(tau * s[2]), v, x2);
        chunks::axpy::<T, F>(-(tau * s[3]), v, x3);
        c += 4;
    }
    while c < c1 {
        let x = &mut a[c * ld + lo..(c + 1) * ld];
        let s = chunks::dot::<T, F>(v, x);
        chunks::axpy::<T, F>(-(tau * s), v, x);
        c += 1;
    }
}

/// Householder QR (as [`qr_factor`]) of the column-major m x n `a` with leading dimension
/// `ld = padded_ld(m)`, whose rows m..ld are zero in every column. On return the upper
/// triangle of `a` (k x n, k = min(m, n)) holds R (the entries below it are left
/// unspecified), column j of `v` (ld x k) reflector j: 1 at row j, zero from row m and
/// from the start of row j's chunk up to row j (rows above that chunk are never read, and
/// left unspecified); and `tau[0..k]` the scalars, A = H_0 ... H_{k-1} R.
pub fn qr_factor_padded<T: Real>(
    m: usize,
    n: usize,
    a: &mut [T],
    ld: usize,
    v: &mut [T],
    tau: &mut [T],
) {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: AVX2 and FMA were detected.
        return unsafe { qr_factor_padded_avx2(m, n, a, ld, v, tau) };
    }
    qr_factor_padded_impl::<T, false>(m, n, a, ld, v, tau)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn qr_factor_padded_avx2<T: Real>(
    m: usize,
    n: usize,
    a: &mut [T],
    ld: usize,
    v: &mut [T],
    tau: &mut [T],
) {
    qr_factor_padded_impl::<T, true>(m, n, a, ld, v, tau)
}

#[inline(always)]
pub(crate) fn qr_factor_padded_impl<T: Real, const F: bool>(
    m: usize,
    n: usize,
    a: &mut [T],
    ld: usize,
    v: &mut [T],
    tau: &mut [T],
) {
    assert!(ld >= m && ld % CHUNK == 0);
    let k = m.min(n);
    let a = &mut a[..ld * n];
    let v = &mut v[..ld * k];
    for j in 0..k {
        let lo = j / CHUNK * CHUNK;
        let col = &mut a[j * ld + j..j * ld + m];
        let (alpha, x) = col.split_first_mut().unwrap();
        let (beta, t) = larfg::<T, F>(*alpha, x);
        *alpha = beta;
        tau[j] = t;
        let vj = &mut v[j * ld..(j + 1) * ld];
        vj[lo..j].fill(T::ZERO);
        vj[j] = T::ONE;
        vj[j + 1..m].copy_from_slice(x);
        vj[m..].fill(T::ZERO);
        if t != T::ZERO {
            apply_reflector::<T, F>(t, vj, a, ld, lo, j + 1, n);
        }
    }
}

/// Form the first `q_cols` columns (k <= q_cols <= m) of Q = H_0 ... H_{k-1} into `q`
/// (leading dimension `ld`, rows m..ld left zero), from the reflectors `v` and `tau` that
/// [`qr_factor_padded`] left.
pub fn qr_form_q_padded<T: Real>(
    m: usize,
    k: usize,
    v: &[T],
    ld: usize,
    tau: &[T],
    q: &mut [T],
    q_cols: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: AVX2 and FMA were detected.
        return unsafe { qr_form_q_padded_avx2(m, k, v, ld, tau, q, q_cols) };
    }
    qr_form_q_padded_impl::<T, false>(m, k, v, ld, tau, q, q_cols)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn qr_form_q_padded_avx2<T: Real>(
    m: usize,
    k: usize,
    v: &[T],
    ld: usize,
    tau: &[T],
    q: &mut [T],
    q_cols: usize,
) {
    qr_form_q_padded_impl::<T, true>(m, k, v, ld, tau, q, q_cols)
}

#[inline(always)]
pub(crate) fn qr_form_q_padded_impl<T: Real, const F: bool>(
    m: usize,
    k: usize,
    v: &[T],
    ld: usize,
    tau: &[T],
    q: &mut [T],
    q_cols: usize,
) {
    assert!(ld >= m && ld % CHUNK == 0);
    let q_cols = q_cols.min(m);
    let k = k.min(q_cols);
    q[..ld * k].copy_from_slice(&v[..ld * k]);
    form_q_in_place::<T, F>(m, k, 0, q, ld, tau, q_cols);
}

/// Q = H_0 ... H_{k-1} in place, padded: on entry column `i + shift` of `q` (leading
/// dimension `ld`) holds reflector i as [`qr_factor_padded`] leaves it, with its 1 at row
/// `i + shift` (rows above its chunk unread); on exit `q` holds the first `q_cols` columns
/// of Q, columns before `shift` those of the identity (H_i acts on rows `i + shift..`
/// only). Requires `k + shift <= q_cols <= m <= ld`. Backwards, as org2r: when H_i is
/// applied, the columns after its own are zero in the rows above its 1.
#[inline(always)]
pub(crate) fn form_q_in_place<T: Real, const F: bool>(
    m: usize,
    k: usize,
    shift: usize,
    q: &mut [T],
    ld: usize,
    tau: &[T],
    q_cols: usize,
) {
    debug_assert!(k + shift <= q_cols && q_cols <= m && m <= ld && ld % CHUNK == 0);
    let q = &mut q[..ld * q_cols];
    for j in (0..shift).chain(k + shift..q_cols) {
        let col = &mut q[j * ld..(j + 1) * ld];
        col.fill(T::ZERO);
        col[j] = T::ONE;
    }
    for i in (0..k).rev() {
        let t = tau[i];
        let c = i + shift;
        let lo = c / CHUNK * CHUNK;
        let (left, right) = q.split_at_mut((c + 1) * ld);
        let col = &mut left[c * ld..];
        if t != T::ZERO {
            apply_reflector::<T, F>(t, col, right, ld, lo, 0, q_cols - c - 1);
        }
        col[..c].fill(T::ZERO);
        col[c] = T::ONE - t;
        let nt = -t;
        for x in col[c + 1..].iter_mut() {
            *x *= nt;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::kernels::test_util::*;

    /// Run the plain (ld = m) or the padded kernels; return the column-major R factor's
    /// source (ld = m, R in the upper triangle) and, per requested q_cols, Q (ld = m).
    fn factor<T: Real>(
        m: usize,
        n: usize,
        a: &[T],
        padded: bool,
    ) -> (Vec<T>, Vec<(usize, Vec<T>)>) {
        let k = m.min(n);
        let mut tau = vec![T::from_f64(7.0); k];
        if !padded {
            let mut a = a.to_vec();
            qr_factor(m, n, &mut a, &mut tau);
            let qs = [k, m]
                .iter()
                .map(|&qc| {
                    let mut q = vec![T::from_f64(3.0); m * qc];
                    qr_form_q(m, k, &a, &tau, &mut q, qc);
                    (qc, q)
                })
                .collect();
            return (a, qs);
        }
        let ld = padded_ld(m);
        // Garbage everywhere the kernels must not depend on; zero padding rows of a.
        let mut ap = vec![T::from_f64(5.0); ld * n];
        for j in 0..n {
            for i in 0..ld {
                ap[i + j * ld] = if i < m { a[i + j * m] } else { T::ZERO };
            }
        }
        let mut v = vec![T::from_f64(-9.0); ld * k];
        qr_factor_padded(m, n, &mut ap, ld, &mut v, &mut tau);
        for j in 0..k {
            for i in 0..ld {
                let x = v[i + j * ld].to_f64();
                if (i >= j / CHUNK * CHUNK && i < j) || i >= m {
                    assert_eq!(x, 0.0, "v[{i}, {j}] of {m}x{n}");
                }
            }
        }
        let unpad = |b: &[T], cols: usize| -> Vec<T> {
            (0..m * cols).map(|x| b[x % m + (x / m) * ld]).collect()
        };
        let qs = [k, m]
            .iter()
            .map(|&qc| {
                let mut q = vec![T::from_f64(3.0); ld * qc];
                qr_form_q_padded(m, k, &v, ld, &tau, &mut q, qc);
                (qc, unpad(&q, qc))
            })
            .collect();
        (unpad(&ap, n), qs)
    }

    fn check<T: Real>(m: usize, n: usize, a64: &[f64], name: &str, tol: f64) {
        for padded in [false, true] {
            check_one::<T>(m, n, a64, name, tol, padded);
        }
    }

    fn check_one<T: Real>(m: usize, n: usize, a64: &[f64], name: &str, tol: f64, padded: bool) {
        let k = m.min(n);
        let a: Vec<T> = a64.iter().map(|&x| T::from_f64(x)).collect();
        let a_in: Vec<f64> = a.iter().map(|x| x.to_f64()).collect();
        let (a, qs) = factor(m, n, &a, padded);
        for (q_cols, q) in qs {
            let q64: Vec<f64> = q.iter().map(|x| x.to_f64()).collect();
            let mut r = vec![0.0; q_cols * n];
            for j in 0..n {
                for i in 0..=j.min(k.saturating_sub(1)) {
                    if i < k {
                        r[i + j * q_cols] = a[i + j * m].to_f64();
                    }
                }
            }
            let qr = matmul(m, q_cols, n, &q64, &r);
            let diff: Vec<f64> = qr.iter().zip(&a_in).map(|(x, y)| x - y).collect();
            let an = fro(&a_in).max(f64::MIN_POSITIVE);
            let rec = fro(&diff) / an;
            let orth = orth_err(m, q_cols, &q64);
            let t = std::any::type_name::<T>();
            note(format!("qr {t} padded={padded} rec"), rec);
            note(format!("qr {t} padded={padded} orth"), orth);
            assert!(
                rec <= tol && orth <= tol,
                "{name} {m}x{n} q_cols={q_cols} padded={padded}: rec {rec:e} orth {orth:e}"
            );
        }
    }

    fn run<T: Real>(tol: f64) {
        let mut r = rng(1);
        let mut shapes: Vec<(usize, usize)> = SIZES.iter().map(|&n| (n, n)).collect();
        shapes.extend([
            (5, 3),
            (3, 5),
            (64, 8),
            (8, 64),
            (33, 17),
            (17, 33),
            (100, 1),
            (1, 100),
            (9, 9),
            (40, 40),
            (65, 65),
            (64, 63),
            (13, 70),
            (0, 4),
            (4, 0),
        ]);
        for (m, n) in shapes {
            for (name, mut a) in general_cases(&mut r, m, n) {
                driver_scale(&mut a);
                check::<T>(m, n, &a, name, tol);
            }
        }
        dump(&format!("qr {}", std::any::type_name::<T>()));
    }

    #[test]
    fn qr_f32() {
        run::<f32>(2e-5);
    }

    #[test]
    fn qr_f64() {
        run::<f64>(2e-5 * f64::EPSILON / f32::EPSILON as f64);
    }

    #[test]
    fn qr_portable_path_matches() {
        // The copy compiled without FMA/AVX2 must agree with the dispatched one.
        let mut r = rng(11);
        for (m, n) in [(17usize, 17usize), (33, 9), (9, 33)] {
            let a: Vec<f64> = randn(&mut r, m, n);
            let mut a1 = a.clone();
            let mut a2 = a.clone();
            let k = m.min(n);
            let (mut t1, mut t2) = (vec![0.0; k], vec![0.0; k]);
            qr_factor(m, n, &mut a1, &mut t1);
            qr_factor_impl::<f64, false>(m, n, &mut a2, &mut t2);
            let (mut q1, mut q2) = (vec![0.0; m * k], vec![0.0; m * k]);
            qr_form_q(m, k, &a1, &t1, &mut q1, k);
            qr_form_q_impl::<f64, false>(m, k, &a2, &t2, &mut q2, k);
            let d = a1
                .iter()
                .zip(&a2)
                .chain(q1.iter().zip(&q2))
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            assert!(d < 1e-12, "{m}x{n}: {d:e}");
        }
    }

    #[test]
    fn qr_padded_portable_path_matches() {
        let mut r = rng(13);
        for (m, n) in [(17usize, 17usize), (33, 9), (9, 33), (32, 32)] {
            let ld = padded_ld(m);
            let k = m.min(n);
            let mut a = vec![0.0; ld * n];
            for j in 0..n {
                for i in 0..m {
                    a[i + j * ld] = randn(&mut r, 1, 1)[0];
                }
            }
            let (mut a1, mut a2) = (a.clone(), a.clone());
            let (mut v1, mut v2) = (vec![0.0; ld * k], vec![0.0; ld * k]);
            let (mut t1, mut t2) = (vec![0.0; k], vec![0.0; k]);
            qr_factor_padded(m, n, &mut a1, ld, &mut v1, &mut t1);
            qr_factor_padded_impl::<f64, false>(m, n, &mut a2, ld, &mut v2, &mut t2);
            let (mut q1, mut q2) = (vec![0.0; ld * m], vec![0.0; ld * m]);
            qr_form_q_padded(m, k, &v1, ld, &t1, &mut q1, m);
            qr_form_q_padded_impl::<f64, false>(m, k, &v2, ld, &t2, &mut q2, m);
            let d = v1
                .iter()
                .zip(&v2)
                .chain(q1.iter().zip(&q2))
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            assert!(d < 1e-12, "{m}x{n}: {d:e}");
        }
    }

    #[test]
    fn qr_underflow_column_gets_zero_tau() {
        // A column whose sub-diagonal underflows is left unreflected.
        let m = 4;
        let mut a = vec![0.75f32, 1e-30, 0.0, 0.0, 0.5, 0.25, 0.125, 0.5];
        let mut tau = [1.0f32; 2];
        qr_factor(m, 2, &mut a, &mut tau);
        assert_eq!(tau[0], 0.0);
        assert_eq!(a[0], 0.75);
    }
}
