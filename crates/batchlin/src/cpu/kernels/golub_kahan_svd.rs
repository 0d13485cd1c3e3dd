//! Thin SVD for small matrices (m >= n): Householder bidiagonalisation (LAPACK gebd2, left
//! and right reflectors applied over contiguous columns), U and V formed in place as org2r,
//! then the Golub-Reinsch implicit-shift QR iteration on the upper bidiagonal, whose plane
//! rotations update contiguous columns of U and V. U = Q_left x rotations, so it has
//! orthonormal columns even where singular values are zero.

use super::householder_qr::{apply_reflector, form_q_in_place, padded_ld};
use super::{chunks, fast_hypot, larfg, normalize_cols, sign, two_cols, KernelStatus, CHUNK};
use crate::Real;

/// Scratch length (in elements) that [`svd`] needs for an m x n matrix (m >= n).
pub fn svd_scratch_len(m: usize, n: usize) -> usize {
    4 * n + 2 * padded_ld(m.max(n))
}

/// Thin SVD of the column-major m x n `a`, m >= n, with leading dimension
/// `ld = padded_ld(m)` (rows m..ld zero). `s[0..n]` gets the singular values (>= 0,
/// unsorted); if `u` is Some, `u` (n columns, leading dimension `ld`, rows m..ld left zero)
/// the left singular vectors; if `v` is Some, `v` (n columns, leading dimension
/// `ldv = padded_ld(n)`, rows n..ldv left zero) the right singular vectors as columns,
/// A = U diag(s) V^T. `a` is destroyed. `scratch` must hold [`svd_scratch_len`]`(m, n)`
/// elements. Returns the QR iterations taken and whether every singular value converged
/// (m < n is refused: not converged).
pub fn svd<T: Real>(
    m: usize,
    n: usize,
    a: &mut [T],
    ld: usize,
    s: &mut [T],
    u: Option<&mut [T]>,
    v: Option<&mut [T]>,
    ldv: usize,
    scratch: &mut [T],
) -> KernelStatus {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: AVX2 and FMA were detected.
        return unsafe { svd_avx2(m, n, a, ld, s, u, v, ldv, scratch) };
    }
    svd_impl::<T, false>(m, n, a, ld, s, u, v, ldv, scratch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn svd_avx2<T: Real>(
    m: usize,
    n: usize,
    a: &mut [T],
    ld: usize,
    s: &mut [T],
    u: Option<&mut [T]>,
    v: Option<&mut [T]>,
    ldv: usize,
    scratch: &mut [T],
) -> KernelStatus {
    svd_impl::<T, true>(m, n, a, ld, s, u, v, ldv, scratch)
}

#[inline(always)]
fn svd_impl<T: Real, const F: bool>(
    m: usize,
    n: usize,
    a: &mut [T],
    ld: usize,
    s: &mut [T],
    mut u: Option<&mut [T]>,
    mut v: Option<&mut [T]>,
    ldv: usize,
    scratch: &mut [T],
) -> KernelStatus {
    if m < n {
        return KernelStatus {
            iterations: 0,
            converged: false,
        };
    }
    if n == 0 {
        return KernelStatus {
            iterations: 0,
            converged: true,
        };
    }
    assert!(ld >= m && ld % CHUNK == 0 && ldv >= n && ldv % CHUNK == 0);
    let a = &mut a[..ld * n];
    let d = &mut s[..n];
    let (e, rest) = scratch[..svd_scratch_len(m, n)].split_at_mut(n);
    let (tauq, rest) = rest.split_at_mut(n);
    let (taup, rest) = rest.split_at_mut(n);
    let (ub, rest) = rest.split_at_mut(n);
    let (vb, wv) = rest.split_at_mut(ld);
    let wv = &mut wv[..ld];

    // --- gebd2: A = Q B P^T, B upper bidiagonal (d, e). Reflectors are kept as padded
    // columns: the left ones in u (column i, its 1 at row i), the right ones in v (column
    // i+1, its 1 at row i+1), as form_q_in_place takes them.
    for i in 0..n {
        {
            let lo = i / CHUNK * CHUNK;
            let col = &mut a[i * ld + i..i * ld + m];
            let (alpha, x) = col.split_first_mut().unwrap();
            let (beta, t) = larfg::<T, F>(*alpha, x);
            *alpha = beta;
            d[i] = beta;
            tauq[i] = t;
            vb[lo..i].fill(T::ZERO);
            vb[i] = T::ONE;
            vb[i + 1..m].copy_from_slice(x);
            vb[m..].fill(T::ZERO);
            if let Some(u) = u.as_deref_mut() {
                u[i * ld + lo..(i + 1) * ld].copy_from_slice(&vb[lo..]);
            }
            if t != T::ZERO {
                apply_reflector::<T, F>(t, vb, a, ld, lo, i + 1, n);
            }
        }
        if i + 1 < n {
            let sz = n - 1 - i;
            let ub = &mut ub[..sz];
            for c in 0..sz {
                ub[c] = a[(i + 1 + c) * ld + i];
            }
            let (alpha, x) = ub.split_first_mut().unwrap();
            let (beta, t) = larfg::<T, F>(*alpha, x);
            e[i] = beta;
            taup[i] = t;
            *alpha = T::ONE;
            if let Some(v) = v.as_deref_mut() {
                let r0 = i + 1;
                let lo = r0 / CHUNK * CHUNK;
                let col = &mut v[r0 * ldv + lo..(r0 + 1) * ldv];
                col.fill(T::ZERO);
                col[r0 - lo..r0 - lo + sz].copy_from_slice(ub);
            }
            if t != T::ZERO {
                // A[i+1.., i+1..] -= tau (A u) u^T, over whole chunks from row i+1's; the
                // rows above i+1 of w are cleared so that those rows stay as they are.
                let r0 = i + 1;
                let lo = r0 / CHUNK * CHUNK;
                let w = &mut wv[lo..];
                w.fill(T::ZERO);
                for c in 0..sz {
                    let col = &a[(r0 + c) * ld + lo..(r0 + c + 1) * ld];
                    chunks::axpy::<T, F>(ub[c], col, w);
                }
                w[..r0 - lo].fill(T::ZERO);
                for c in 0..sz {
                    let col = &mut a[(r0 + c) * ld + lo..(r0 + c + 1) * ld];
                    chunks::axpy::<T, F>(-(t * ub[c]), w, col);
                }
            }
        }
    }
    // --- form U = Q (m x n) and V = P (n x n) in place.
    if let Some(u) = u.as_deref_mut() {
        form_q_in_place::<T, F>(m, n, 0, &mut u[..ld * n], ld, tauq, n);
    }
    if let Some(v) = v.as_deref_mut() {
        form_q_in_place::<T, F>(n, n - 1, 1, &mut v[..ldv * n], ldv, taup, n);
    }
    // --- Golub-Reinsch on the bidiagonal. rv1[i] couples d[i-1] and d[i]; rv1[0] = 0.
    let rv1 = e;
    for i in (1..n).rev() {
        rv1[i] = rv1[i - 1];
    }
    rv1[0] = T::ZERO;
    let mut anorm = T::ZERO;
    for i in 0..n {
        anorm = anorm.max(d[i].abs() + rv1[i].abs());
    }
    let mut iters = 0u32;
    let mut converged = true;
    const MAX_ITS: u32 = 75;
    for k in (0..n).rev() {
        let mut its = 0;
        loop {
            // Find l: rv1[l] negligible (split) or d[l-1] negligible (cancel rv1[l]).
            let mut l = k;
            let mut cancel = true;
            loop {
                if rv1[l].abs() + anorm == anorm {
                    cancel = false;
                    break;
                }
                // l >= 1 here since rv1[0] = 0.
                if d[l - 1].abs() + anorm == anorm {
                    break;
                }
                l -= 1;
            }
            if cancel {
                let nm = l - 1;
                let mut c = T::ZERO;
                let mut s = T::ONE;
                for i in l..=k {
                    let f = s * rv1[i];
                    rv1[i] = c * rv1[i];
                    if f.abs() + anorm == anorm {
                        break;
                    }
                    let g = d[i];
                    let h = fast_hypot(f, g);
                    d[i] = h;
                    // Divide (not multiply by 1/h): c must round without bias, or columns
                    // drift in norm over many rotations.
                    c = g / h;
                    s = -f / h;
                    if let Some(u) = u.as_deref_mut() {
                        let (x, y) = two_cols(u, ld, ld, nm, i);
                        chunks::rot::<T, F>(x, y, c, s);
                    }
                }
            }
            let z = d[k];
            if l == k {
                if z < T::ZERO {
                    d[k] = -z;
                    if let Some(v) = v.as_deref_mut() {
                        for x in v[k * ldv..k * ldv + n].iter_mut() {
                            *x = -*x;
                        }
                    }
                }
                break;
            }
            if its >= MAX_ITS {
                converged = false;
                d[k] = d[k].abs(); // keep s >= 0 even so
                break;
            }
            its += 1;
            iters += 1;
            // Shift from the bottom 2x2 minor.
            let mut x = d[l];
            let nm = k - 1;
            let mut y = d[nm];
            let mut g = rv1[nm];
            let mut h = rv1[k];
            let mut f = ((y - z) * (y + z) + (g - h) * (g + h)) / (T::TWO * h * y);
            g = fast_hypot(f, T::ONE);
            f = ((x - z) * (x + z) + h * ((y / (f + sign(g, f))) - h)) / x;
            let mut c = T::ONE;
            let mut s = T::ONE;
            for j in l..=nm {
                let i = j + 1;
                g = rv1[i];
                y = d[i];
                h = s * g;
                g = c * g;
                let mut zz = fast_hypot(f, h);
                rv1[j] = zz;
                c = f / zz;
                s = h / zz;
                f = x * c + g * s;
                g = g * c - x * s;
                h = y * s;
                y *= c;
                if let Some(v) = v.as_deref_mut() {
                    let (p, q) = two_cols(v, ldv, ldv, j, i);
                    chunks::rot::<T, F>(p, q, c, s);
                }
                zz = fast_hypot(f, h);
                d[j] = zz;
                if zz != T::ZERO {
                    c = f / zz;
                    s = h / zz;
                }
                f = c * g + s * y;
                x = c * y - s * g;
                if let Some(u) = u.as_deref_mut() {
                    let (p, q) = two_cols(u, ld, ld, j, i);
                    chunks::rot::<T, F>(p, q, c, s);
                }
            }
            rv1[l] = T::ZERO;
            rv1[k] = f;
            d[k] = x;
        }
    }
    if iters > 0 {
        if let Some(u) = u {
            normalize_cols::<T, F>(&mut u[..ld * n], ld);
        }
        if let Some(v) = v {
            normalize_cols::<T, F>(&mut v[..ldv * n], ldv);
        }
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

    fn check<T: Real>(m: usize, n: usize, a64: &[f64], name: &str, tol: f64) {
        let a_t: Vec<T> = a64.iter().map(|&x| T::from_f64(x)).collect();
        let a_in: Vec<f64> = a_t.iter().map(|x| x.to_f64()).collect();
        let an = fro(&a_in).max(f64::MIN_POSITIVE);
        let mut ref_s: Vec<f64> = if n > 0 {
            let mm = faer::Mat::<f64>::from_fn(m, n, |i, j| a_in[i + j * m]);
            mm.singular_values().unwrap()
        } else {
            vec![]
        };
        ref_s.sort_by(|a, b| b.partial_cmp(a).unwrap());
        let mut scratch = vec![T::from_f64(-3.0); svd_scratch_len(m, n)];
        let sort_desc = |s: &[T]| {
            let mut s: Vec<f64> = s.iter().map(|x| x.to_f64()).collect();
            s.sort_by(|a, b| b.partial_cmp(a).unwrap());
            s
        };
        let serr = |s: &[f64]| {
            s.iter()
                .zip(&ref_s)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
                / an
        };
        let (ld, ldv) = (padded_ld(m), padded_ld(n));
        let pad = |x: &[T]| -> Vec<T> {
            let mut out = vec![T::ZERO; ld * n];
            for j in 0..n {
                out[j * ld..j * ld + m].copy_from_slice(&x[j * m..j * m + m]);
            }
            out
        };
        // values only
        {
            let mut a = pad(&a_t);
            let mut s = vec![T::ZERO; n];
            let st = svd(m, n, &mut a, ld, &mut s, None, None, ldv, &mut scratch);
            assert!(st.converged, "{name} {m}x{n}: no convergence (values)");
            assert!(s.iter().all(|x| *x >= T::ZERO));
            let e = serr(&sort_desc(&s));
            assert!(e <= tol, "{name} {m}x{n}: svdvals err {e:e}");
        }
        // U only and V only must give the same values
        {
            let mut a = pad(&a_t);
            let mut s = vec![T::ZERO; n];
            let mut v = vec![T::ZERO; ldv * n];
            let st = svd(
                m,
                n,
                &mut a,
                ld,
                &mut s,
                None,
                Some(&mut v),
                ldv,
                &mut scratch,
            );
            assert!(st.converged);
            let e = serr(&sort_desc(&s));
            assert!(e <= tol, "{name} {m}x{n}: svd(V only) err {e:e}");
        }
        let mut a = pad(&a_t);
        let mut s = vec![T::ZERO; n];
        let mut u = vec![T::from_f64(5.0); ld * n];
        let mut v = vec![T::from_f64(5.0); ldv * n];
        let st = svd(
            m,
            n,
            &mut a,
            ld,
            &mut s,
            Some(&mut u),
            Some(&mut v),
            ldv,
            &mut scratch,
        );
        assert!(st.converged, "{name} {m}x{n}: no convergence");
        for j in 0..n {
            assert!(u[j * ld + m..(j + 1) * ld]
                .iter()
                .all(|x| x.to_f64() == 0.0));
            assert!(v[j * ldv + n..(j + 1) * ldv]
                .iter()
                .all(|x| x.to_f64() == 0.0));
        }
        let u: Vec<T> = (0..m * n).map(|x| u[x % m + (x / m) * ld]).collect();
        let v: Vec<T> = (0..n * n).map(|x| v[x % n + (x / n) * ldv]).collect();
        let u64: Vec<f64> = u.iter().map(|x| x.to_f64()).collect();
        let v64: Vec<f64> = v.iter().map(|x| x.to_f64()).collect();
        let s64: Vec<f64> = s.iter().map(|x| x.to_f64()).collect();
        assert!(s64.iter().all(|&x| x >= 0.0));
        let mut us = u64.clone();
        for j in 0..n {
            for i in 0..m {
                us[i + j * m] *= s64[j];
            }
        }
        let vt = transpose(n, n, &v64);
        let rec = matmul(m, n, n, &us, &vt);
        let diff: Vec<f64> = rec.iter().zip(&a_in).map(|(x, y)| x - y).collect();
        let rerr = fro(&diff) / an;
        let ou = orth_err(m, n, &u64);
        let ov = orth_err(n, n, &v64);
        let e = serr(&sort_desc(&s));
        let t = std::any::type_name::<T>();
        note(format!("svd {t} rec"), rerr);
        note(format!("svd {t} orthU"), ou);
        note(format!("svd {t} orthV"), ov);
        note(format!("svd {t} sv"), e);
        note(
            format!("svd {t} iters/n"),
            st.iterations as f64 / n.max(1) as f64,
        );
        assert!(
            rerr <= tol && ou <= tol && ov <= tol && e <= tol,
            "{name} {m}x{n}: rec {rerr:e} orthU {ou:e} orthV {ov:e} sv {e:e} iters {}",
            st.iterations
        );
    }

    fn run<T: Real>(tol: f64) {
        let mut r = rng(3);
        let mut shapes: Vec<(usize, usize)> = SIZES.iter().map(|&n| (n, n)).collect();
        shapes.extend([
            (5, 3),
            (64, 8),
            (33, 17),
            (100, 1),
            (4, 0),
            (48, 47),
            (96, 96),
            (9, 9),
            (40, 40),
            (70, 13),
        ]);
        for (m, n) in shapes {
            for (name, mut a) in general_cases(&mut r, m, n) {
                driver_scale(&mut a);
                check::<T>(m, n, &a, name, tol);
            }
        }
        dump(&format!("svd {}", std::any::type_name::<T>()));
    }

    #[test]
    fn svd_portable_path_matches() {
        let mut r = rng(13);
        for (m, n) in [(5usize, 5usize), (17, 17), (40, 32)] {
            let a = randn(&mut r, m, n);
            let mut sc = vec![0.0; svd_scratch_len(m, n)];
            let (ld, ldv) = (padded_ld(m), padded_ld(n));
            let mut ap = vec![0.0; ld * n];
            for j in 0..n {
                ap[j * ld..j * ld + m].copy_from_slice(&a[j * m..j * m + m]);
            }
            let (mut a1, mut a2) = (ap.clone(), ap.clone());
            let (mut s1, mut s2) = (vec![0.0; n], vec![0.0; n]);
            let (mut u1, mut u2) = (vec![0.0; ld * n], vec![0.0; ld * n]);
            let st1 = svd(
                m,
                n,
                &mut a1,
                ld,
                &mut s1,
                Some(&mut u1),
                None,
                ldv,
                &mut sc,
            );
            let st2 = svd_impl::<f64, false>(
                m,
                n,
                &mut a2,
                ld,
                &mut s2,
                Some(&mut u2),
                None,
                ldv,
                &mut sc,
            );
            assert!(st1.converged && st2.converged);
            let d = s1
                .iter()
                .zip(&s2)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            assert!(d < 1e-12, "{m}x{n}: {d:e}");
        }
    }

    #[test]
    fn svd_f32() {
        run::<f32>(2e-5);
    }

    #[test]
    fn svd_f64() {
        run::<f64>(2e-5 * f64::EPSILON / f32::EPSILON as f64);
    }
}
