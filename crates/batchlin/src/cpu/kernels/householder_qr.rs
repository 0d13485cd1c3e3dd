//! Unblocked Householder QR for small matrices: LAPACK geqr2 (factor) and org2r (form Q),
//! with the reflector applied column by column over contiguous memory.

use super::{larf_col, larfg, org2r_in_place};
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::kernels::test_util::*;

    fn check<T: Real>(m: usize, n: usize, a64: &[f64], name: &str, tol: f64) {
        let k = m.min(n);
        let mut a: Vec<T> = a64.iter().map(|&x| T::from_f64(x)).collect();
        let a_in: Vec<f64> = a.iter().map(|x| x.to_f64()).collect();
        let mut tau = vec![T::from_f64(7.0); k];
        qr_factor(m, n, &mut a, &mut tau);
        for q_cols in [k, m] {
            let mut q = vec![T::from_f64(3.0); m * q_cols];
            qr_form_q(m, k, &a, &tau, &mut q, q_cols);
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
            note(format!("qr {t} rec"), rec);
            note(format!("qr {t} orth"), orth);
            assert!(
                rec <= tol && orth <= tol,
                "{name} {m}x{n} q_cols={q_cols}: rec {rec:e} orth {orth:e}"
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
