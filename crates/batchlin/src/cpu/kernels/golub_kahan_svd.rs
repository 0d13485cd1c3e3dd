//! Thin SVD for small matrices (m >= n): Householder bidiagonalisation (LAPACK gebd2, left
//! and right reflectors applied over contiguous columns), U and V formed in place as org2r,
//! then the Golub-Reinsch implicit-shift QR iteration on the upper bidiagonal, whose plane
//! rotations update contiguous columns of U and V. U = Q_left x rotations, so it has
//! orthonormal columns even where singular values are zero.

use super::householder_qr::{apply_reflector, form_q_in_place, padded_ld};
use super::{chunks, fast_hypot, larfg, sign, two_cols, KernelStatus, CHUNK};
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
    u: Option<&mut [T]>,
    v: Option<&mut [T]>,
    ldv: usize,
    scratch: &mut [T],
) -> KernelStatus {
    if let Some(st) = trivial(m, n) {
        return st;
    }
    assert!(ld >= m && ld % CHUNK == 0 && ldv >= n && ldv % CHUNK == 0);
    let mut g = bidiagonalise::<T, F>(m, n, a, ld, s, u, v, ldv, scratch);
    while let Some(mut sw) = g.next_sweep::<F>() {
        while sw.j < sw.k {
            g.step::<F>(&mut sw);
        }
        g.finish::<F>(&sw);
    }
    g.done::<F>()
}

/// The status for the shapes that need no work (n = 0) or that are refused (m < n).
#[inline(always)]
fn trivial(m: usize, n: usize) -> Option<KernelStatus> {
    if m < n || n == 0 {
        return Some(KernelStatus {
            iterations: 0,
            converged: m >= n,
        });
    }
    None
}

/// Householder bidiagonalisation of `a` and U, V formed in place: returns the bidiagonal
/// QR iteration, ready to run, over `s` (the diagonal) and the start of `scratch`.
#[inline(always)]
fn bidiagonalise<'a, T: Real, const F: bool>(
    m: usize,
    n: usize,
    a: &mut [T],
    ld: usize,
    s: &'a mut [T],
    mut u: Option<&'a mut [T]>,
    mut v: Option<&'a mut [T]>,
    ldv: usize,
    scratch: &'a mut [T],
) -> GolubKahan<'a, T> {
    let a = &mut a[..ld * n];
    let d = &mut s[..n];
    let (e, rest) = scratch[..svd_scratch_len(m, n)].split_at_mut(n);
    let (tauq, rest2) = rest.split_at_mut(n);
    let (taup, rest2) = rest2.split_at_mut(n);
    let (ub, rest2) = rest2.split_at_mut(n);
    let (vb, wv) = rest2.split_at_mut(ld);
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
                chunks::gemv_cols::<T, F>(ub, &a[r0 * ld + lo..], ld, w);
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
    // --- the bidiagonal QR iteration's state. rv1[i] couples d[i-1] and d[i]; rv1[0] = 0.
    let rv1 = e;
    for i in (1..n).rev() {
        rv1[i] = rv1[i - 1];
    }
    rv1[0] = T::ZERO;
    let mut anorm = T::ZERO;
    for i in 0..n {
        anorm = anorm.max(d[i].abs() + rv1[i].abs());
    }
    // The rest of the scratch (3n + 2 ld >= 4n) keeps a chase's rotations until it ends.
    let (rot_v, rot_u) = rest[..4 * n].split_at_mut(2 * n);
    GolubKahan {
        d,
        rv1,
        rot_u,
        rot_v,
        u: u.map(|u| &mut u[..ld * n]),
        ld,
        v: v.map(|v| &mut v[..ldv * n]),
        ldv,
        anorm,
        left: n,
        its: 0,
        iters: 0,
        converged: true,
    }
}

/// Golub-Reinsch implicit-shift QR on one upper bidiagonal (d, rv1), its rotations applied
/// to the columns of U and V, as a resumable state: [`GolubKahan::next_sweep`] settles what
/// has converged and returns the next chase, whose steps [`GolubKahan::step`] runs one at a
/// time, so that two matrices' chases can run interleaved (their scalar chains of square
/// roots and divisions are latency-bound and independent). The arithmetic, and so every
/// rounded value, is the same whichever way the steps are scheduled.
struct GolubKahan<'a, T> {
    d: &'a mut [T],
    rv1: &'a mut [T],
    /// The chase's rotations for U and for V: c at [j], s at [n + j].
    rot_u: &'a mut [T],
    rot_v: &'a mut [T],
    u: Option<&'a mut [T]>,
    ld: usize,
    v: Option<&'a mut [T]>,
    ldv: usize,
    anorm: T,
    /// Values not yet converged: d[left - 1] is the one being worked on.
    left: usize,
    its: u32,
    iters: u32,
    converged: bool,
}

/// One implicit-shift chase from row `l` down to `k`: the next step is at `j` (< k), with
/// the bulge `f`, the carried diagonal `x` and the last rotation (c, s).
struct Sweep<T> {
    l: usize,
    j: usize,
    k: usize,
    f: T,
    x: T,
    c: T,
    s: T,
}

const MAX_ITS: u32 = 75;

impl<T: Real> GolubKahan<'_, T> {
    /// Settle converged values and negligible couplings; return the next chase, or None
    /// when every value has converged (or run out of iterations).
    #[inline(always)]
    fn next_sweep<const F: bool>(&mut self) -> Option<Sweep<T>> {
        let (d, rv1, anorm) = (&mut *self.d, &mut *self.rv1, self.anorm);
        while self.left > 0 {
            let k = self.left - 1;
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
                    if let Some(u) = self.u.as_deref_mut() {
                        let (x, y) = two_cols(u, self.ld, self.ld, nm, i);
                        chunks::rot::<T, F>(x, y, c, s);
                    }
                }
            }
            let z = d[k];
            if l == k {
                if z < T::ZERO {
                    d[k] = -z;
                    if let Some(v) = self.v.as_deref_mut() {
                        for x in v[k * self.ldv..k * self.ldv + d.len()].iter_mut() {
                            *x = -*x;
                        }
                    }
                }
                self.left -= 1;
                self.its = 0;
                continue;
            }
            if self.its >= MAX_ITS {
                self.converged = false;
                d[k] = d[k].abs(); // keep s >= 0 even so
                self.left -= 1;
                self.its = 0;
                continue;
            }
            self.its += 1;
            self.iters += 1;
            // Shift from the bottom 2x2 minor.
            let x = d[l];
            let nm = k - 1;
            let y = d[nm];
            let g = rv1[nm];
            let h = rv1[k];
            let f = ((y - z) * (y + z) + (g - h) * (g + h)) / (T::TWO * h * y);
            let g = fast_hypot(f, T::ONE);
            let f = ((x - z) * (x + z) + h * ((y / (f + sign(g, f))) - h)) / x;
            return Some(Sweep {
                l,
                j: l,
                k,
                f,
                x,
                c: T::ONE,
                s: T::ONE,
            });
        }
        None
    }

    /// One step of the chase: the rotations at (j, j + 1), applied to B, V and U.
    #[inline(always)]
    fn step<const F: bool>(&mut self, sw: &mut Sweep<T>) {
        let (j, mut f, mut x, mut c, mut s) = (sw.j, sw.f, sw.x, sw.c, sw.s);
        let i = j + 1;
        let mut g = self.rv1[i];
        let mut y = self.d[i];
        let mut h = s * g;
        g = c * g;
        let mut zz = fast_hypot(f, h);
        self.rv1[j] = zz;
        c = f / zz;
        s = h / zz;
        f = x * c + g * s;
        g = g * c - x * s;
        h = y * s;
        y *= c;
        let n = self.d.len();
        self.rot_v[j] = c;
        self.rot_v[n + j] = s;
        zz = fast_hypot(f, h);
        self.d[j] = zz;
        if zz != T::ZERO {
            c = f / zz;
            s = h / zz;
        }
        f = c * g + s * y;
        x = c * y - s * g;
        self.rot_u[j] = c;
        self.rot_u[n + j] = s;
        *sw = Sweep {
            j: i,
            f,
            x,
            c,
            s,
            ..*sw
        };
    }

    /// Close a chase whose steps have all run (`sw.j == sw.k`): its rotations go to the
    /// columns l..=k of V and of U, in the chase's order (so with the rounding the chase
    /// would have given them one step at a time), a row chunk at a time.
    #[inline(always)]
    fn finish<const F: bool>(&mut self, sw: &Sweep<T>) {
        debug_assert_eq!(sw.j, sw.k);
        self.rv1[sw.l] = T::ZERO;
        self.rv1[sw.k] = sw.f;
        self.d[sw.k] = sw.x;
        let (l, k, n) = (sw.l, sw.k, self.d.len());
        let (cv, sv) = (&self.rot_v[l..k], &self.rot_v[n + l..n + k]);
        let (cu, su) = (&self.rot_u[l..k], &self.rot_u[n + l..n + k]);
        let (ld, ldv) = (self.ld, self.ldv);
        match (self.u.as_deref_mut(), self.v.as_deref_mut()) {
            (Some(u), Some(v)) => chunks::rot_seq2::<T, F>(
                &mut u[l * ld..],
                ld,
                cu,
                su,
                &mut v[l * ldv..],
                ldv,
                cv,
                sv,
            ),
            (Some(u), None) => chunks::rot_seq::<T, F>(&mut u[l * ld..], ld, ld, cu, su),
            (None, Some(v)) => chunks::rot_seq::<T, F>(&mut v[l * ldv..], ldv, ldv, cv, sv),
            (None, None) => {}
        }
    }

    /// After the last chase: renormalise the columns of U and V, report the status.
    #[inline(always)]
    fn done<const F: bool>(self) -> KernelStatus {
        if self.iters > 0 {
            if let Some(u) = self.u {
                normalize_padded::<T, F>(u, self.ld);
            }
            if let Some(v) = self.v {
                normalize_padded::<T, F>(v, self.ldv);
            }
        }
        KernelStatus {
            iterations: self.iters,
            converged: self.converged,
        }
    }
}

/// Rescale each column (`ld` long, a whole number of chunks) of `a` to unit 2-norm: plane
/// rotations with tiny angles round with a bias (c = 1 exactly while s != 0), which
/// inflates accumulated column norms over many rotations; this undoes that drift.
#[inline(always)]
fn normalize_padded<T: Real, const F: bool>(a: &mut [T], ld: usize) {
    for c in a.chunks_exact_mut(ld) {
        let nn = chunks::dot::<T, F>(c, c);
        if nn > T::ZERO {
            let r = T::ONE / nn.sqrt();
            for x in c.iter_mut() {
                *x *= r;
            }
        }
    }
}

/// Two thin SVDs of the same shape at once, each exactly as [`svd`] computes it (the same
/// arithmetic, so bitwise the same results), with the two bidiagonal QR iterations
/// interleaved step by step: one core then runs two independent scalar chains.
/// `u` and `v` are both given or both not; each pair holds the two matrices' buffers.
pub fn svd_pair<T: Real>(
    m: usize,
    n: usize,
    a: [&mut [T]; 2],
    ld: usize,
    s: [&mut [T]; 2],
    u: Option<[&mut [T]; 2]>,
    v: Option<[&mut [T]; 2]>,
    ldv: usize,
    scratch: [&mut [T]; 2],
) -> [KernelStatus; 2] {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: AVX2 and FMA were detected.
        return unsafe { svd_pair_avx2(m, n, a, ld, s, u, v, ldv, scratch) };
    }
    svd_pair_impl::<T, false>(m, n, a, ld, s, u, v, ldv, scratch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn svd_pair_avx2<T: Real>(
    m: usize,
    n: usize,
    a: [&mut [T]; 2],
    ld: usize,
    s: [&mut [T]; 2],
    u: Option<[&mut [T]; 2]>,
    v: Option<[&mut [T]; 2]>,
    ldv: usize,
    scratch: [&mut [T]; 2],
) -> [KernelStatus; 2] {
    svd_pair_impl::<T, true>(m, n, a, ld, s, u, v, ldv, scratch)
}

#[inline(always)]
fn svd_pair_impl<T: Real, const F: bool>(
    m: usize,
    n: usize,
    a: [&mut [T]; 2],
    ld: usize,
    s: [&mut [T]; 2],
    u: Option<[&mut [T]; 2]>,
    v: Option<[&mut [T]; 2]>,
    ldv: usize,
    scratch: [&mut [T]; 2],
) -> [KernelStatus; 2] {
    if let Some(st) = trivial(m, n) {
        return [st, st];
    }
    assert!(ld >= m && ld % CHUNK == 0 && ldv >= n && ldv % CHUNK == 0);
    let [a0, a1] = a;
    let [s0, s1] = s;
    let [sc0, sc1] = scratch;
    let (u0, u1) = match u {
        Some([x, y]) => (Some(x), Some(y)),
        None => (None, None),
    };
    let (v0, v1) = match v {
        Some([x, y]) => (Some(x), Some(y)),
        None => (None, None),
    };
    let mut g0 = bidiagonalise::<T, F>(m, n, a0, ld, s0, u0, v0, ldv, sc0);
    let mut g1 = bidiagonalise::<T, F>(m, n, a1, ld, s1, u1, v1, ldv, sc1);
    let mut w0 = g0.next_sweep::<F>();
    let mut w1 = g1.next_sweep::<F>();
    loop {
        match (&mut w0, &mut w1) {
            (Some(x), Some(y)) => {
                // Both chases run side by side until the shorter ends.
                let steps = (x.k - x.j).min(y.k - y.j);
                for _ in 0..steps {
                    g0.step::<F>(x);
                    g1.step::<F>(y);
                }
                if x.j == x.k {
                    g0.finish::<F>(x);
                    w0 = g0.next_sweep::<F>();
                }
                if y.j == y.k {
                    g1.finish::<F>(y);
                    w1 = g1.next_sweep::<F>();
                }
            }
            (Some(x), None) => {
                while x.j < x.k {
                    g0.step::<F>(x);
                }
                g0.finish::<F>(x);
                w0 = g0.next_sweep::<F>();
            }
            (None, Some(y)) => {
                while y.j < y.k {
                    g1.step::<F>(y);
                }
                g1.finish::<F>(y);
                w1 = g1.next_sweep::<F>();
            }
            (None, None) => break,
        }
    }
    [g0.done::<F>(), g1.done::<F>()]
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

    /// `svd_pair` gives each matrix bit for bit what `svd` gives it alone (vectors or not,
    /// the AVX2 and the portable copies), with partners of other spectra and of a zero
    /// matrix (no iterations at all).
    fn pair_matches<T: Real>() {
        let mut r = rng(29);
        for (m, n) in [
            (1usize, 1usize),
            (7, 5),
            (9, 9),
            (32, 32),
            (33, 31),
            (64, 64),
        ] {
            let (ld, ldv) = (padded_ld(m), padded_ld(n));
            let pad = |x: &[f64]| -> Vec<T> {
                let mut out = vec![T::ZERO; ld * n];
                for j in 0..n {
                    for i in 0..m {
                        out[j * ld + i] = T::from_f64(x[j * m + i]);
                    }
                }
                out
            };
            let mut cases: Vec<(&str, Vec<f64>)> = general_cases(&mut r, m, n);
            cases.push(("zero", vec![0.0; m * n]));
            for w in 0..cases.len() {
                let (x, y) = (&cases[w].1, &cases[(w + 1) % cases.len()].1);
                for vectors in [true, false] {
                    let alone = |a: &[f64], portable: bool| {
                        let mut a = pad(a);
                        let mut s = vec![T::ZERO; n];
                        let mut u = vec![T::ZERO; ld * n];
                        let mut v = vec![T::ZERO; ldv * n];
                        let mut sc = vec![T::ZERO; svd_scratch_len(m, n)];
                        let (uo, vo) = if vectors {
                            (Some(&mut u[..]), Some(&mut v[..]))
                        } else {
                            (None, None)
                        };
                        let st = if portable {
                            svd_impl::<T, false>(m, n, &mut a, ld, &mut s, uo, vo, ldv, &mut sc)
                        } else {
                            svd(m, n, &mut a, ld, &mut s, uo, vo, ldv, &mut sc)
                        };
                        (st, s, u, v)
                    };
                    for portable in [false, true] {
                        let (mut a0, mut a1) = (pad(x), pad(y));
                        let (mut s0, mut s1) = (vec![T::ZERO; n], vec![T::ZERO; n]);
                        let (mut u0, mut u1) = (vec![T::ZERO; ld * n], vec![T::ZERO; ld * n]);
                        let (mut v0, mut v1) = (vec![T::ZERO; ldv * n], vec![T::ZERO; ldv * n]);
                        let len = svd_scratch_len(m, n);
                        let (mut c0, mut c1) = (vec![T::ZERO; len], vec![T::ZERO; len]);
                        let (u, v) = if vectors {
                            (
                                Some([&mut u0[..], &mut u1[..]]),
                                Some([&mut v0[..], &mut v1[..]]),
                            )
                        } else {
                            (None, None)
                        };
                        let args = (
                            [&mut a0[..], &mut a1[..]],
                            [&mut s0[..], &mut s1[..]],
                            [&mut c0[..], &mut c1[..]],
                        );
                        let st = if portable {
                            svd_pair_impl::<T, false>(m, n, args.0, ld, args.1, u, v, ldv, args.2)
                        } else {
                            svd_pair(m, n, args.0, ld, args.1, u, v, ldv, args.2)
                        };
                        let bits =
                            |x: &[T]| x.iter().map(|v| v.to_f64().to_bits()).collect::<Vec<_>>();
                        for (k, (src, s, u, v)) in [(x, &s0, &u0, &v0), (y, &s1, &u1, &v1)]
                            .into_iter()
                            .enumerate()
                        {
                            let (st1, s1, u1, v1) = alone(src, portable);
                            let ctx = format!(
                                "{m}x{n} case {w} matrix {k} vectors={vectors} portable={portable}"
                            );
                            assert_eq!(st[k], st1, "{ctx}");
                            assert_eq!(bits(s), bits(&s1), "{ctx}: s");
                            assert_eq!(bits(u), bits(&u1), "{ctx}: u");
                            assert_eq!(bits(v), bits(&v1), "{ctx}: v");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn svd_pair_matches_single() {
        pair_matches::<f32>();
        pair_matches::<f64>();
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
