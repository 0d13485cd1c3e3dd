//! Symmetric eigendecomposition for small matrices: Householder tridiagonalisation (LAPACK
//! sytd2 on the full symmetric matrix, so that every update is over whole 8-element chunks
//! of contiguous columns), Q formed in place as org2r, then the implicit QL iteration with
//! Wilkinson shifts (EISPACK tql2), whose plane rotations update contiguous columns of the
//! eigenvector matrix. Columns are [`padded_ld`]`(n)` long, the rows past n zero.

use super::householder_qr::form_q_in_place;
use super::{chunks, fast_hypot, larfg, normalize_cols, sign, two_cols, KernelStatus, CHUNK};
use crate::Real;

pub use super::householder_qr::padded_ld;

/// Scratch length (in elements) that [`eigh`] needs for an n x n matrix.
pub fn eigh_scratch_len(n: usize) -> usize {
    2 * n + 2 * padded_ld(n)
}

/// Symmetric eigendecomposition of the n x n matrix `a`: column-major, leading dimension
/// `ld = padded_ld(n)`, both triangles filled (symmetric), rows n..ld zero. `w[0..n]` gets
/// the eigenvalues (unsorted); if `v` is Some, `v` (n columns, leading dimension `ld`, rows
/// n..ld left zero) gets orthonormal eigenvectors as columns, `v[:, i]` for `w[i]`. `a` is
/// destroyed. `scratch` must hold [`eigh_scratch_len`]`(n)` elements. Returns the QL
/// iterations taken and whether every eigenvalue converged.
pub fn eigh<T: Real>(
    n: usize,
    a: &mut [T],
    ld: usize,
    w: &mut [T],
    v: Option<&mut [T]>,
    scratch: &mut [T],
) -> KernelStatus {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: AVX2 and FMA were detected.
        return unsafe { eigh_avx2(n, a, ld, w, v, scratch) };
    }
    eigh_impl::<T, false>(n, a, ld, w, v, scratch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn eigh_avx2<T: Real>(
    n: usize,
    a: &mut [T],
    ld: usize,
    w: &mut [T],
    v: Option<&mut [T]>,
    scratch: &mut [T],
) -> KernelStatus {
    eigh_impl::<T, true>(n, a, ld, w, v, scratch)
}

#[inline(always)]
fn eigh_impl<T: Real, const F: bool>(
    n: usize,
    a: &mut [T],
    ld: usize,
    w: &mut [T],
    v: Option<&mut [T]>,
    scratch: &mut [T],
) -> KernelStatus {
    if n == 0 {
        return KernelStatus {
            iterations: 0,
            converged: true,
        };
    }
    assert!(ld >= n && ld % CHUNK == 0);
    let a = &mut a[..ld * n];
    let d = &mut w[..n];
    let (e, rest) = scratch[..eigh_scratch_len(n)].split_at_mut(n);
    let (tau, rest) = rest.split_at_mut(n);
    let (vb, p) = rest.split_at_mut(ld);
    match v {
        Some(z) => {
            let z = &mut z[..ld * n];
            tridiagonalize::<T, F>(n, a, ld, d, e, tau, vb, p, Some(&mut *z));
            form_q_in_place::<T, F>(n, n - 1, 1, z, ld, tau, n);
            let st = tql2::<T, F, true>(n, d, e, z, ld);
            if st.iterations > 0 {
                normalize_cols::<T, F>(z, ld);
            }
            st
        }
        None => {
            tridiagonalize::<T, F>(n, a, ld, d, e, tau, vb, p, None);
            tql2::<T, F, false>(n, d, e, &mut [], ld)
        }
    }
}

/// sytd2 (lower), on the full symmetric `a` (leading dimension `ld`): on return `d` holds
/// the diagonal, `e[0..n-1]` the sub-diagonal of T = Q^T A Q, `e[n-1] = 0`, `tau[0..n-1]`
/// the reflectors' scalars; when `z` is Some, column i+1 of `z` gets reflector i (its 1 at
/// row i+1) in the padded form [`form_q_in_place`] takes.
#[inline(always)]
fn tridiagonalize<T: Real, const F: bool>(
    n: usize,
    a: &mut [T],
    ld: usize,
    d: &mut [T],
    e: &mut [T],
    tau: &mut [T],
    vb: &mut [T],
    p: &mut [T],
    mut z: Option<&mut [T]>,
) {
    let v = &mut vb[..ld];
    let p = &mut p[..ld];
    for i in 0..n.saturating_sub(1) {
        let r0 = i + 1; // first row (and column) of the trailing block A22
        let lo = r0 / CHUNK * CHUNK;
        let (beta, t) = {
            let col = &mut a[i * ld + r0..i * ld + n];
            let (alpha, x) = col.split_first_mut().unwrap();
            let (beta, t) = larfg::<T, F>(*alpha, x);
            *alpha = beta;
            v[lo..r0].fill(T::ZERO);
            v[r0] = T::ONE;
            v[r0 + 1..n].copy_from_slice(x);
            v[n..].fill(T::ZERO);
            (beta, t)
        };
        e[i] = beta;
        tau[i] = t;
        if let Some(z) = z.as_deref_mut() {
            z[r0 * ld + lo..(r0 + 1) * ld].copy_from_slice(&v[lo..]);
        }
        if t != T::ZERO {
            let vv = &v[lo..];
            let pp = &mut p[lo..];
            // p = tau A22 v: A is symmetric, so A22 v is a sum of A22's columns; rows above
            // r0 pick up the (unused) upper part and are cleared.
            pp.fill(T::ZERO);
            for c in r0..n {
                chunks::axpy::<T, F>(v[c] * t, &a[c * ld + lo..(c + 1) * ld], pp);
            }
            pp[..r0 - lo].fill(T::ZERO);
            // w = p - (tau/2)(p.v) v
            let alpha2 = -(T::HALF * t) * chunks::dot::<T, F>(pp, vv);
            chunks::axpy::<T, F>(alpha2, vv, pp);
            // A22 -= v w^T + w v^T (whole columns; rows above r0 see v = w = 0).
            for c in r0..n {
                let (vc, pc) = (-v[c], -pp[c - lo]);
                chunks::axpy2::<T, F>(pc, vv, vc, pp, &mut a[c * ld + lo..(c + 1) * ld]);
            }
        }
        d[i] = a[i * ld + i];
    }
    d[n - 1] = a[(n - 1) * ld + n - 1];
    e[n - 1] = T::ZERO;
}

/// Implicit QL with Wilkinson shifts (EISPACK tql2) on the symmetric tridiagonal (d, e) with
/// `e[i]` coupling `d[i]` and `d[i+1]`; when `VEC`, the rotations are applied to the columns of
/// `z` (n columns, leading dimension `ld`, a whole number of chunks). On return d holds the eigenvalues (unsorted).
#[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN-safe on purpose
#[inline(always)]
pub(crate) fn tql2<T: Real, const F: bool, const VEC: bool>(
    n: usize,
    d: &mut [T],
    e: &mut [T],
    z: &mut [T],
    ld: usize,
) -> KernelStatus {
    let eps = T::EPSILON;
    let max_iter = 30 * n as u32 + 30;
    let mut iters = 0u32;
    let mut converged = true;
    let mut f = T::ZERO;
    let mut tst1 = T::ZERO;
    for l in 0..n {
        tst1 = tst1.max(d[l].abs() + e[l].abs());
        let mut m = l;
        while m < n - 1 {
            if e[m].abs() <= eps * tst1 {
                break;
            }
            m += 1;
        }
        if m > l {
            loop {
                if iters >= max_iter {
                    converged = false;
                    break;
                }
                iters += 1;
                // Shift from the leading 2x2.
                let g = d[l];
                let mut p = (d[l + 1] - g) / (T::TWO * e[l]);
                let r = sign(fast_hypot(p, T::ONE), p);
                d[l] = e[l] / (p + r);
                d[l + 1] = e[l] * (p + r);
                let dl1 = d[l + 1];
                let h = g - d[l];
                for di in d[l + 2..n].iter_mut() {
                    *di -= h;
                }
                f += h;
                // Implicit QL sweep from m-1 down to l.
                p = d[m];
                let mut c = T::ONE;
                let mut c2 = c;
                let mut c3 = c;
                let el1 = e[l + 1];
                let mut s = T::ZERO;
                let mut s2 = T::ZERO;
                for i in (l..m).rev() {
                    c3 = c2;
                    c2 = c;
                    s2 = s;
                    let g = c * e[i];
                    let h = c * p;
                    let r = fast_hypot(p, e[i]);
                    e[i + 1] = s * r;
                    s = e[i] / r;
                    c = p / r;
                    p = c * d[i] - s * g;
                    d[i + 1] = h + s * (c * g + s * d[i]);
                    if VEC {
                        // z[:, i+1] = s z[:, i] + c z[:, i+1];  z[:, i] = c z[:, i] - s z[:, i+1]
                        let (zi, zi1) = two_cols(z, ld, ld, i, i + 1);
                        chunks::rot::<T, F>(zi, zi1, c, -s);
                    }
                }
                p = -s * s2 * c3 * el1 * e[l] / dl1;
                e[l] = s * p;
                d[l] = c * p;
                if !(e[l].abs() > eps * tst1) {
                    break;
                }
            }
        }
        d[l] += f;
        e[l] = T::ZERO;
    }
    KernelStatus {
        iterations: iters,
        converged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::kernels::test_util::*;

    fn check<T: Real>(n: usize, a64: &[f64], name: &str, tol: f64) {
        let a_t: Vec<T> = a64.iter().map(|&x| T::from_f64(x)).collect();
        let a_in: Vec<f64> = a_t.iter().map(|x| x.to_f64()).collect();
        let an = fro(&a_in).max(f64::MIN_POSITIVE);
        // reference eigenvalues in f64 (faer), of the rounded input
        let mut ref_w: Vec<f64> = if n > 0 {
            let m = faer::Mat::<f64>::from_fn(n, n, |i, j| a_in[i + j * n]);
            let evd = m.self_adjoint_eigen(faer::Side::Lower).unwrap();
            (0..n).map(|i| evd.S()[i]).collect()
        } else {
            vec![]
        };
        ref_w.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let mut scratch = vec![T::from_f64(-7.0); eigh_scratch_len(n)];
        let ld = padded_ld(n);
        let pad = |x: &[T]| -> Vec<T> {
            let mut out = vec![T::ZERO; ld * n];
            for j in 0..n {
                out[j * ld..j * ld + n].copy_from_slice(&x[j * n..j * n + n]);
            }
            out
        };
        // eigenvalues only
        {
            let mut a = pad(&a_t);
            let mut w = vec![T::ZERO; n];
            let st = eigh(n, &mut a, ld, &mut w, None, &mut scratch);
            assert!(st.converged, "{name} {n}: no convergence (values)");
            let mut w: Vec<f64> = w.iter().map(|x| x.to_f64()).collect();
            w.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let ew = w
                .iter()
                .zip(&ref_w)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
                / an;
            assert!(ew <= tol, "{name} {n}: eigvalsh err {ew:e}");
        }
        let mut a = pad(&a_t);
        let mut w = vec![T::ZERO; n];
        let mut v = vec![T::from_f64(5.0); ld * n];
        let st = eigh(n, &mut a, ld, &mut w, Some(&mut v), &mut scratch);
        assert!(st.converged, "{name} {n}: no convergence");
        for j in 0..n {
            for i in n..ld {
                assert_eq!(v[i + j * ld].to_f64(), 0.0, "{name} {n}: padding of v");
            }
        }
        let v64: Vec<f64> = (0..n * n)
            .map(|x| v[x % n + (x / n) * ld].to_f64())
            .collect();
        let w64: Vec<f64> = w.iter().map(|x| x.to_f64()).collect();
        let av = matmul(n, n, n, &a_in, &v64);
        let mut res = av.clone();
        for j in 0..n {
            for i in 0..n {
                res[i + j * n] -= v64[i + j * n] * w64[j];
            }
        }
        let resid = fro(&res) / an;
        let orth = orth_err(n, n, &v64);
        let mut ws = w64.clone();
        ws.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let ew = ws
            .iter()
            .zip(&ref_w)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max)
            / an;
        let t = std::any::type_name::<T>();
        note(format!("eigh {t} resid"), resid);
        note(format!("eigh {t} orth"), orth);
        note(format!("eigh {t} eigvals"), ew);
        note(
            format!("eigh {t} iters/n"),
            st.iterations as f64 / n.max(1) as f64,
        );
        assert!(
            resid <= tol && orth <= tol && ew <= tol,
            "{name} {n}: resid {resid:e} orth {orth:e} eig {ew:e} iters {}",
            st.iterations
        );
    }

    fn run<T: Real>(tol: f64) {
        let mut r = rng(2);
        for &n in SIZES.iter().chain(&[4, 5, 6, 9, 40, 96]) {
            for (name, mut a) in symmetric_cases(&mut r, n) {
                driver_scale(&mut a);
                check::<T>(n, &a, name, tol);
            }
        }
        dump(&format!("eigh {}", std::any::type_name::<T>()));
    }

    #[test]
    fn eigh_portable_path_matches() {
        let mut r = rng(12);
        for n in [5usize, 17, 32] {
            let (_, a) = symmetric_cases(&mut r, n).swap_remove(0);
            let mut sc = vec![0.0; eigh_scratch_len(n)];
            let ld = padded_ld(n);
            let mut ap = vec![0.0; ld * n];
            for j in 0..n {
                ap[j * ld..j * ld + n].copy_from_slice(&a[j * n..j * n + n]);
            }
            let (mut a1, mut a2) = (ap.clone(), ap.clone());
            let (mut w1, mut w2) = (vec![0.0; n], vec![0.0; n]);
            let (mut v1, mut v2) = (vec![0.0; ld * n], vec![0.0; ld * n]);
            let s1 = eigh(n, &mut a1, ld, &mut w1, Some(&mut v1), &mut sc);
            let s2 = eigh_impl::<f64, false>(n, &mut a2, ld, &mut w2, Some(&mut v2), &mut sc);
            assert!(s1.converged && s2.converged);
            let d = w1
                .iter()
                .zip(&w2)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            assert!(d < 1e-12, "{n}: {d:e}");
        }
    }

    #[test]
    fn eigh_f32() {
        run::<f32>(2e-5);
    }

    #[test]
    fn eigh_f64() {
        run::<f64>(2e-5 * f64::EPSILON / f32::EPSILON as f64);
    }
}
