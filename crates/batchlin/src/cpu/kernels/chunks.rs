//! Vector primitives over whole chunks ([`CHUNK`] elements) of contiguous columns: the
//! inner loops of the padded kernels.
//!
//! Each is generic over the element type with a portable body; when `F` is set (the copies
//! compiled with AVX2 and FMA) f32 and f64 go to explicit AVX2 code instead. LLVM's own
//! vectorisation of these short loops proved fragile: whether it happened depended on
//! what the loop was inlined into (aliasing it could not rule out), and a scalar copy is
//! several times slower. All slices passed must hold a whole number of chunks; only the
//! common length of the arguments is touched.

use super::{fma, CHUNK};
use crate::Real;
use std::any::TypeId;

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// `&[T]` as `&[U]` when T is U.
#[inline(always)]
fn cast<T: 'static, U: 'static>(x: &[T]) -> Option<&[U]> {
    (TypeId::of::<T>() == TypeId::of::<U>())
        // SAFETY: T and U are the same type.
        .then(|| unsafe { std::slice::from_raw_parts(x.as_ptr() as *const U, x.len()) })
}

/// `&mut [T]` as `&mut [U]` when T is U.
#[inline(always)]
fn cast_mut<T: 'static, U: 'static>(x: &mut [T]) -> Option<&mut [U]> {
    (TypeId::of::<T>() == TypeId::of::<U>())
        // SAFETY: T and U are the same type.
        .then(|| unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr() as *mut U, x.len()) })
}

/// `T` as `U` when T is U.
#[inline(always)]
fn cast_val<T: Real, U: Real>(x: T) -> U {
    U::from_f64(x.to_f64())
}

#[inline(always)]
fn whole(n: usize) -> usize {
    n / CHUNK
}

/// Sum of a chunk's lanes, pairwise.
#[inline(always)]
pub(crate) fn hsum<T: Real>(s: &[T; CHUNK]) -> T {
    ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]))
}

/// `x += w * v`.
#[inline(always)]
pub(crate) fn axpy<T: Real, const F: bool>(w: T, v: &[T], x: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if F {
        if let (Some(v), Some(x)) = (cast::<T, f32>(v), cast_mut::<T, f32>(x)) {
            // SAFETY: F is only set inside the AVX2+FMA copies.
            return unsafe { avx::axpy_f32(cast_val(w), v, x) };
        }
        if let (Some(v), Some(x)) = (cast::<T, f64>(v), cast_mut::<T, f64>(x)) {
            // SAFETY: as above.
            return unsafe { avx::axpy_f64(cast_val(w), v, x) };
        }
    }
    for (vc, xc) in v.chunks_exact(CHUNK).zip(x.chunks_exact_mut(CHUNK)) {
        for l in 0..CHUNK {
            xc[l] = fma::<T, F>(w, vc[l], xc[l]);
        }
    }
}

/// `x += a * v + b * p`.
#[inline(always)]
pub(crate) fn axpy2<T: Real, const F: bool>(a: T, v: &[T], b: T, p: &[T], x: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if F {
        if let (Some(v), Some(p), Some(x)) =
            (cast::<T, f32>(v), cast::<T, f32>(p), cast_mut::<T, f32>(x))
        {
            // SAFETY: F is only set inside the AVX2+FMA copies.
            return unsafe { avx::axpy2_f32(cast_val(a), v, cast_val(b), p, x) };
        }
        if let (Some(v), Some(p), Some(x)) =
            (cast::<T, f64>(v), cast::<T, f64>(p), cast_mut::<T, f64>(x))
        {
            // SAFETY: as above.
            return unsafe { avx::axpy2_f64(cast_val(a), v, cast_val(b), p, x) };
        }
    }
    for ((vc, pc), xc) in v
        .chunks_exact(CHUNK)
        .zip(p.chunks_exact(CHUNK))
        .zip(x.chunks_exact_mut(CHUNK))
    {
        for l in 0..CHUNK {
            xc[l] = fma::<T, F>(vc[l], a, fma::<T, F>(pc[l], b, xc[l]));
        }
    }
}

/// `x . y`.
#[inline(always)]
pub(crate) fn dot<T: Real, const F: bool>(x: &[T], y: &[T]) -> T {
    #[cfg(target_arch = "x86_64")]
    if F {
        if let (Some(x), Some(y)) = (cast::<T, f32>(x), cast::<T, f32>(y)) {
            // SAFETY: F is only set inside the AVX2+FMA copies.
            return cast_val(unsafe { avx::dot_f32(x, y) });
        }
        if let (Some(x), Some(y)) = (cast::<T, f64>(x), cast::<T, f64>(y)) {
            // SAFETY: as above.
            return cast_val(unsafe { avx::dot_f64(x, y) });
        }
    }
    let mut s = [T::ZERO; CHUNK];
    for (xc, yc) in x.chunks_exact(CHUNK).zip(y.chunks_exact(CHUNK)) {
        for l in 0..CHUNK {
            s[l] = fma::<T, F>(xc[l], yc[l], s[l]);
        }
    }
    hsum(&s)
}

/// `[v . x0, v . x1, v . x2, v . x3]`: one pass over v for four dot products.
#[inline(always)]
pub(crate) fn dot4<T: Real, const F: bool>(v: &[T], x: [&[T]; 4]) -> [T; 4] {
    #[cfg(target_arch = "x86_64")]
    if F {
        if let (Some(v), Some(a), Some(b), Some(c), Some(d)) = (
            cast::<T, f32>(v),
            cast::<T, f32>(x[0]),
            cast::<T, f32>(x[1]),
            cast::<T, f32>(x[2]),
            cast::<T, f32>(x[3]),
        ) {
            // SAFETY: F is only set inside the AVX2+FMA copies.
            return unsafe { avx::dot4_f32(v, [a, b, c, d]) }.map(cast_val);
        }
        if let (Some(v), Some(a), Some(b), Some(c), Some(d)) = (
            cast::<T, f64>(v),
            cast::<T, f64>(x[0]),
            cast::<T, f64>(x[1]),
            cast::<T, f64>(x[2]),
            cast::<T, f64>(x[3]),
        ) {
            // SAFETY: as above.
            return unsafe { avx::dot4_f64(v, [a, b, c, d]) }.map(cast_val);
        }
    }
    [
        dot::<T, F>(v, x[0]),
        dot::<T, F>(v, x[1]),
        dot::<T, F>(v, x[2]),
        dot::<T, F>(v, x[3]),
    ]
}

/// Plane rotation: `(x, y) <- (c x + s y, c y - s x)`.
#[inline(always)]
pub(crate) fn rot<T: Real, const F: bool>(x: &mut [T], y: &mut [T], c: T, s: T) {
    #[cfg(target_arch = "x86_64")]
    if F {
        if TypeId::of::<T>() == TypeId::of::<f32>() {
            let (x, y) = (
                cast_mut::<T, f32>(x).unwrap(),
                cast_mut::<T, f32>(y).unwrap(),
            );
            // SAFETY: F is only set inside the AVX2+FMA copies.
            return unsafe { avx::rot_f32(x, y, cast_val(c), cast_val(s)) };
        }
        if TypeId::of::<T>() == TypeId::of::<f64>() {
            let (x, y) = (
                cast_mut::<T, f64>(x).unwrap(),
                cast_mut::<T, f64>(y).unwrap(),
            );
            // SAFETY: as above.
            return unsafe { avx::rot_f64(x, y, cast_val(c), cast_val(s)) };
        }
    }
    for (xc, yc) in x.chunks_exact_mut(CHUNK).zip(y.chunks_exact_mut(CHUNK)) {
        for l in 0..CHUNK {
            let (a, b) = (xc[l], yc[l]);
            xc[l] = fma::<T, F>(c, a, s * b);
            yc[l] = fma::<T, F>(c, b, -(s * a));
        }
    }
}

/// A sequence of plane rotations down consecutive columns: for t in 0..c.len(), columns
/// (t, t + 1) of `a` (leading dimension `ld`, each `len` long, a whole number of chunks) get
/// `(x, y) <- (c x + s y, c y - s x)` by (c[t], s[t]), in that order, each row chunk kept in
/// registers from one rotation to the next. The carried column is the multiplicand of the
/// fused multiply-adds (`fma(c, x, s y)`, `fma(-s, x, c y)`), so that the chain through it
/// is one FMA a rotation; every copy rounds the same way.
#[inline(always)]
pub(crate) fn rot_seq<T: Real, const F: bool>(
    a: &mut [T],
    ld: usize,
    len: usize,
    c: &[T],
    s: &[T],
) {
    let r = c.len();
    assert!(s.len() == r && len <= ld && a.len() >= r * ld + len && len % CHUNK == 0);
    if r == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if F {
        if let (Some(a), Some(c), Some(s)) =
            (cast_mut::<T, f32>(a), cast::<T, f32>(c), cast::<T, f32>(s))
        {
            // SAFETY: F is only set inside the AVX2+FMA copies; the bounds were checked.
            return unsafe { avx::rot_seq_f32(a, ld, len, c, s) };
        }
        if let (Some(a), Some(c), Some(s)) =
            (cast_mut::<T, f64>(a), cast::<T, f64>(c), cast::<T, f64>(s))
        {
            // SAFETY: as above.
            return unsafe { avx::rot_seq_f64(a, ld, len, c, s) };
        }
    }
    for t in 0..r {
        let (lo, hi) = a.split_at_mut((t + 1) * ld);
        let (x, y) = (&mut lo[t * ld..t * ld + len], &mut hi[..len]);
        let (ct, st) = (c[t], s[t]);
        for (xi, yi) in x.iter_mut().zip(y.iter_mut()) {
            let (p, q) = (*xi, *yi);
            *xi = fma::<T, F>(ct, p, st * q);
            *yi = fma::<T, F>(-st, p, ct * q);
        }
    }
}

/// `x = sum_c coef[c] * a[c * ld..c * ld + x.len()]` (columns of `a`, leading dimension
/// `ld`), accumulated in column order as repeated [`axpy`]s from zero would (so with the
/// same rounding), the row chunks of `x` held in registers across the columns.
#[inline(always)]
pub(crate) fn gemv_cols<T: Real, const F: bool>(coef: &[T], a: &[T], ld: usize, x: &mut [T]) {
    let (nc, len) = (coef.len(), x.len());
    assert!(len % CHUNK == 0 && len <= ld && (nc == 0 || a.len() >= (nc - 1) * ld + len));
    #[cfg(target_arch = "x86_64")]
    if F {
        if let (Some(coef), Some(a), Some(x)) = (
            cast::<T, f32>(coef),
            cast::<T, f32>(a),
            cast_mut::<T, f32>(x),
        ) {
            // SAFETY: F is only set inside the AVX2+FMA copies; the bounds were checked.
            return unsafe { avx::gemv_cols_f32(coef, a, ld, x) };
        }
    }
    x.fill(T::ZERO);
    for (c, &w) in coef.iter().enumerate() {
        axpy::<T, F>(w, &a[c * ld..c * ld + len], x);
    }
}

/// [`rot_seq`] on two column blocks at once, `a` by (ca, sa) and `b` by (cb, sb) (the same
/// number of rotations): the row chunks of both are kept in registers side by side, so
/// that their rotation chains overlap. Each gets exactly what `rot_seq` gives it.
#[inline(always)]
pub(crate) fn rot_seq2<T: Real, const F: bool>(
    a: &mut [T],
    lda: usize,
    ca: &[T],
    sa: &[T],
    b: &mut [T],
    ldb: usize,
    cb: &[T],
    sb: &[T],
) {
    let r = ca.len();
    assert!(sa.len() == r && cb.len() == r && sb.len() == r);
    assert!(a.len() >= r * lda + lda && b.len() >= r * ldb + ldb);
    assert!(lda % CHUNK == 0 && ldb % CHUNK == 0);
    if r == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if F {
        if let (Some(a), Some(ca), Some(sa), Some(b), Some(cb), Some(sb)) = (
            cast_mut::<T, f32>(a),
            cast::<T, f32>(ca),
            cast::<T, f32>(sa),
            cast_mut::<T, f32>(b),
            cast::<T, f32>(cb),
            cast::<T, f32>(sb),
        ) {
            // SAFETY: F is only set inside the AVX2+FMA copies; the bounds were checked.
            return unsafe { avx::rot_seq2_f32(a, lda, ca, sa, b, ldb, cb, sb) };
        }
    }
    rot_seq::<T, F>(a, lda, lda, ca, sa);
    rot_seq::<T, F>(b, ldb, ldb, cb, sb);
}

#[cfg(target_arch = "x86_64")]
mod avx {
    //! The AVX2+FMA bodies. A chunk is one __m256 of f32, or two __m256d of f64.
    use super::*;

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum_ps(v: __m256) -> f32 {
        let lo = _mm256_castps256_ps128(v);
        let hi = _mm256_extractf128_ps::<1>(v);
        let s = _mm_add_ps(lo, hi);
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        _mm_cvtss_f32(s)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum_pd(a: __m256d, b: __m256d) -> f64 {
        let v = _mm256_add_pd(a, b);
        let lo = _mm256_castpd256_pd128(v);
        let hi = _mm256_extractf128_pd::<1>(v);
        let s = _mm_add_pd(lo, hi);
        _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)))
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpy_f32(w: f32, v: &[f32], x: &mut [f32]) {
        let n = whole(v.len().min(x.len()));
        let (vp, xp) = (v.as_ptr(), x.as_mut_ptr());
        let wv = _mm256_set1_ps(w);
        for i in 0..n {
            let o = i * 8;
            let r = _mm256_fmadd_ps(wv, _mm256_loadu_ps(vp.add(o)), _mm256_loadu_ps(xp.add(o)));
            _mm256_storeu_ps(xp.add(o), r);
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpy_f64(w: f64, v: &[f64], x: &mut [f64]) {
        let n = whole(v.len().min(x.len()));
        let (vp, xp) = (v.as_ptr(), x.as_mut_ptr());
        let wv = _mm256_set1_pd(w);
        for i in 0..2 * n {
            let o = i * 4;
            let r = _mm256_fmadd_pd(wv, _mm256_loadu_pd(vp.add(o)), _mm256_loadu_pd(xp.add(o)));
            _mm256_storeu_pd(xp.add(o), r);
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpy2_f32(a: f32, v: &[f32], b: f32, p: &[f32], x: &mut [f32]) {
        let n = whole(v.len().min(p.len()).min(x.len()));
        let (vp, pp, xp) = (v.as_ptr(), p.as_ptr(), x.as_mut_ptr());
        let (av, bv) = (_mm256_set1_ps(a), _mm256_set1_ps(b));
        for i in 0..n {
            let o = i * 8;
            let r = _mm256_fmadd_ps(bv, _mm256_loadu_ps(pp.add(o)), _mm256_loadu_ps(xp.add(o)));
            let r = _mm256_fmadd_ps(av, _mm256_loadu_ps(vp.add(o)), r);
            _mm256_storeu_ps(xp.add(o), r);
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpy2_f64(a: f64, v: &[f64], b: f64, p: &[f64], x: &mut [f64]) {
        let n = whole(v.len().min(p.len()).min(x.len()));
        let (vp, pp, xp) = (v.as_ptr(), p.as_ptr(), x.as_mut_ptr());
        let (av, bv) = (_mm256_set1_pd(a), _mm256_set1_pd(b));
        for i in 0..2 * n {
            let o = i * 4;
            let r = _mm256_fmadd_pd(bv, _mm256_loadu_pd(pp.add(o)), _mm256_loadu_pd(xp.add(o)));
            let r = _mm256_fmadd_pd(av, _mm256_loadu_pd(vp.add(o)), r);
            _mm256_storeu_pd(xp.add(o), r);
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_f32(x: &[f32], y: &[f32]) -> f32 {
        let n = whole(x.len().min(y.len()));
        let (xp, yp) = (x.as_ptr(), y.as_ptr());
        let mut s = _mm256_setzero_ps();
        for i in 0..n {
            let o = i * 8;
            s = _mm256_fmadd_ps(_mm256_loadu_ps(xp.add(o)), _mm256_loadu_ps(yp.add(o)), s);
        }
        hsum_ps(s)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_f64(x: &[f64], y: &[f64]) -> f64 {
        let n = whole(x.len().min(y.len()));
        let (xp, yp) = (x.as_ptr(), y.as_ptr());
        let (mut s0, mut s1) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        for i in 0..n {
            let o = i * 8;
            s0 = _mm256_fmadd_pd(_mm256_loadu_pd(xp.add(o)), _mm256_loadu_pd(yp.add(o)), s0);
            s1 = _mm256_fmadd_pd(
                _mm256_loadu_pd(xp.add(o + 4)),
                _mm256_loadu_pd(yp.add(o + 4)),
                s1,
            );
        }
        hsum_pd(s0, s1)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot4_f32(v: &[f32], x: [&[f32]; 4]) -> [f32; 4] {
        let n = whole(v.len().min(x.iter().map(|c| c.len()).min().unwrap()));
        let vp = v.as_ptr();
        let p = x.map(|c| c.as_ptr());
        let mut s = [_mm256_setzero_ps(); 4];
        for i in 0..n {
            let o = i * 8;
            let vv = _mm256_loadu_ps(vp.add(o));
            for k in 0..4 {
                s[k] = _mm256_fmadd_ps(vv, _mm256_loadu_ps(p[k].add(o)), s[k]);
            }
        }
        [hsum_ps(s[0]), hsum_ps(s[1]), hsum_ps(s[2]), hsum_ps(s[3])]
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot4_f64(v: &[f64], x: [&[f64]; 4]) -> [f64; 4] {
        let n = whole(v.len().min(x.iter().map(|c| c.len()).min().unwrap()));
        let vp = v.as_ptr();
        let p = x.map(|c| c.as_ptr());
        let mut s = [_mm256_setzero_pd(); 8];
        for i in 0..n {
            let o = i * 8;
            let v0 = _mm256_loadu_pd(vp.add(o));
            let v1 = _mm256_loadu_pd(vp.add(o + 4));
            for k in 0..4 {
                s[2 * k] = _mm256_fmadd_pd(v0, _mm256_loadu_pd(p[k].add(o)), s[2 * k]);
                s[2 * k + 1] = _mm256_fmadd_pd(v1, _mm256_loadu_pd(p[k].add(o + 4)), s[2 * k + 1]);
            }
        }
        [
            hsum_pd(s[0], s[1]),
            hsum_pd(s[2], s[3]),
            hsum_pd(s[4], s[5]),
            hsum_pd(s[6], s[7]),
        ]
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn rot_f32(x: &mut [f32], y: &mut [f32], c: f32, s: f32) {
        let n = whole(x.len().min(y.len()));
        let (xp, yp) = (x.as_mut_ptr(), y.as_mut_ptr());
        let (cv, sv, nsv) = (_mm256_set1_ps(c), _mm256_set1_ps(s), _mm256_set1_ps(-s));
        for i in 0..n {
            let o = i * 8;
            let a = _mm256_loadu_ps(xp.add(o));
            let b = _mm256_loadu_ps(yp.add(o));
            _mm256_storeu_ps(xp.add(o), _mm256_fmadd_ps(cv, a, _mm256_mul_ps(sv, b)));
            _mm256_storeu_ps(yp.add(o), _mm256_fmadd_ps(cv, b, _mm256_mul_ps(nsv, a)));
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn rot_f64(x: &mut [f64], y: &mut [f64], c: f64, s: f64) {
        let n = whole(x.len().min(y.len()));
        let (xp, yp) = (x.as_mut_ptr(), y.as_mut_ptr());
        let (cv, sv, nsv) = (_mm256_set1_pd(c), _mm256_set1_pd(s), _mm256_set1_pd(-s));
        for i in 0..2 * n {
            let o = i * 4;
            let a = _mm256_loadu_pd(xp.add(o));
            let b = _mm256_loadu_pd(yp.add(o));
            _mm256_storeu_pd(xp.add(o), _mm256_fmadd_pd(cv, a, _mm256_mul_pd(sv, b)));
            _mm256_storeu_pd(yp.add(o), _mm256_fmadd_pd(cv, b, _mm256_mul_pd(nsv, a)));
        }
    }

    /// `rot_seq` on `G` vectors of rows from offset `o`: they stay in registers while the
    /// rotations walk down the columns.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn rot_seq_ps<const G: usize>(p: *mut f32, ld: usize, o: usize, c: &[f32], s: &[f32]) {
        let mut x = [_mm256_setzero_ps(); G];
        for (g, xg) in x.iter_mut().enumerate() {
            *xg = _mm256_loadu_ps(p.add(o + 8 * g));
        }
        for t in 0..c.len() {
            let (cv, sv, nsv) = (
                _mm256_set1_ps(c[t]),
                _mm256_set1_ps(s[t]),
                _mm256_set1_ps(-s[t]),
            );
            let cur = p.add(t * ld + o);
            let next = p.add((t + 1) * ld + o);
            for (g, xg) in x.iter_mut().enumerate() {
                let b = _mm256_loadu_ps(next.add(8 * g));
                _mm256_storeu_ps(
                    cur.add(8 * g),
                    _mm256_fmadd_ps(cv, *xg, _mm256_mul_ps(sv, b)),
                );
                *xg = _mm256_fmadd_ps(nsv, *xg, _mm256_mul_ps(cv, b));
            }
        }
        let last = p.add(c.len() * ld + o);
        for (g, xg) in x.iter().enumerate() {
            _mm256_storeu_ps(last.add(8 * g), *xg);
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn rot_seq_f32(a: &mut [f32], ld: usize, len: usize, c: &[f32], s: &[f32]) {
        let p = a.as_mut_ptr();
        let nv = len / 8;
        let mut v = 0;
        while v + 4 <= nv {
            rot_seq_ps::<4>(p, ld, v * 8, c, s);
            v += 4;
        }
        match nv - v {
            3 => rot_seq_ps::<3>(p, ld, v * 8, c, s),
            2 => rot_seq_ps::<2>(p, ld, v * 8, c, s),
            1 => rot_seq_ps::<1>(p, ld, v * 8, c, s),
            _ => {}
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn gemv_cols_ps<const G: usize>(coef: &[f32], p: *const f32, ld: usize, x: *mut f32) {
        let mut acc = [_mm256_setzero_ps(); G];
        for (c, &w) in coef.iter().enumerate() {
            let wv = _mm256_set1_ps(w);
            let col = p.add(c * ld);
            for (g, ag) in acc.iter_mut().enumerate() {
                *ag = _mm256_fmadd_ps(wv, _mm256_loadu_ps(col.add(8 * g)), *ag);
            }
        }
        for (g, ag) in acc.iter().enumerate() {
            _mm256_storeu_ps(x.add(8 * g), *ag);
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn gemv_cols_f32(coef: &[f32], a: &[f32], ld: usize, x: &mut [f32]) {
        let nv = x.len() / 8;
        let (p, xp) = (a.as_ptr(), x.as_mut_ptr());
        let mut v = 0;
        while v < nv {
            let g = (nv - v).min(4);
            let (q, y) = (p.add(8 * v), xp.add(8 * v));
            match g {
                4 => gemv_cols_ps::<4>(coef, q, ld, y),
                3 => gemv_cols_ps::<3>(coef, q, ld, y),
                2 => gemv_cols_ps::<2>(coef, q, ld, y),
                _ => gemv_cols_ps::<1>(coef, q, ld, y),
            }
            v += g;
        }
    }

    /// `rot_seq_ps` on `G` vectors of `pa` and `G` of `pb` side by side.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn rot_seq2_ps<const G: usize>(
        pa: *mut f32,
        lda: usize,
        ca: &[f32],
        sa: &[f32],
        pb: *mut f32,
        ldb: usize,
        cb: &[f32],
        sb: &[f32],
    ) {
        let mut x = [_mm256_setzero_ps(); G];
        let mut y = [_mm256_setzero_ps(); G];
        for g in 0..G {
            x[g] = _mm256_loadu_ps(pa.add(8 * g));
            y[g] = _mm256_loadu_ps(pb.add(8 * g));
        }
        for t in 0..ca.len() {
            let (cva, sva, nsva) = (
                _mm256_set1_ps(ca[t]),
                _mm256_set1_ps(sa[t]),
                _mm256_set1_ps(-sa[t]),
            );
            let (cvb, svb, nsvb) = (
                _mm256_set1_ps(cb[t]),
                _mm256_set1_ps(sb[t]),
                _mm256_set1_ps(-sb[t]),
            );
            let (cura, nexta) = (pa.add(t * lda), pa.add((t + 1) * lda));
            let (curb, nextb) = (pb.add(t * ldb), pb.add((t + 1) * ldb));
            for g in 0..G {
                let p = _mm256_loadu_ps(nexta.add(8 * g));
                let q = _mm256_loadu_ps(nextb.add(8 * g));
                _mm256_storeu_ps(
                    cura.add(8 * g),
                    _mm256_fmadd_ps(cva, x[g], _mm256_mul_ps(sva, p)),
                );
                _mm256_storeu_ps(
                    curb.add(8 * g),
                    _mm256_fmadd_ps(cvb, y[g], _mm256_mul_ps(svb, q)),
                );
                x[g] = _mm256_fmadd_ps(nsva, x[g], _mm256_mul_ps(cva, p));
                y[g] = _mm256_fmadd_ps(nsvb, y[g], _mm256_mul_ps(cvb, q));
            }
        }
        let (lasta, lastb) = (pa.add(ca.len() * lda), pb.add(ca.len() * ldb));
        for g in 0..G {
            _mm256_storeu_ps(lasta.add(8 * g), x[g]);
            _mm256_storeu_ps(lastb.add(8 * g), y[g]);
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn rot_seq2_f32(
        a: &mut [f32],
        lda: usize,
        ca: &[f32],
        sa: &[f32],
        b: &mut [f32],
        ldb: usize,
        cb: &[f32],
        sb: &[f32],
    ) {
        let (pa, pb) = (a.as_mut_ptr(), b.as_mut_ptr());
        let (na, nb) = (lda / 8, ldb / 8);
        // Whole groups of up to four vectors of each side together, the rest alone.
        let mut v = 0;
        while v < na.min(nb) {
            let g = (na.min(nb) - v).min(4);
            let (qa, qb) = (pa.add(8 * v), pb.add(8 * v));
            match g {
                4 => rot_seq2_ps::<4>(qa, lda, ca, sa, qb, ldb, cb, sb),
                3 => rot_seq2_ps::<3>(qa, lda, ca, sa, qb, ldb, cb, sb),
                2 => rot_seq2_ps::<2>(qa, lda, ca, sa, qb, ldb, cb, sb),
                _ => rot_seq2_ps::<1>(qa, lda, ca, sa, qb, ldb, cb, sb),
            }
            v += g;
        }
        while v < na {
            let g = (na - v).min(4);
            match g {
                4 => rot_seq_ps::<4>(pa, lda, 8 * v, ca, sa),
                3 => rot_seq_ps::<3>(pa, lda, 8 * v, ca, sa),
                2 => rot_seq_ps::<2>(pa, lda, 8 * v, ca, sa),
                _ => rot_seq_ps::<1>(pa, lda, 8 * v, ca, sa),
            }
            v += g;
        }
        let mut w = na.min(nb);
        while w < nb {
            let g = (nb - w).min(4);
            match g {
                4 => rot_seq_ps::<4>(pb, ldb, 8 * w, cb, sb),
                3 => rot_seq_ps::<3>(pb, ldb, 8 * w, cb, sb),
                2 => rot_seq_ps::<2>(pb, ldb, 8 * w, cb, sb),
                _ => rot_seq_ps::<1>(pb, ldb, 8 * w, cb, sb),
            }
            w += g;
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn rot_seq_pd<const G: usize>(p: *mut f64, ld: usize, o: usize, c: &[f64], s: &[f64]) {
        let mut x = [_mm256_setzero_pd(); G];
        for (g, xg) in x.iter_mut().enumerate() {
            *xg = _mm256_loadu_pd(p.add(o + 4 * g));
        }
        for t in 0..c.len() {
            let (cv, sv, nsv) = (
                _mm256_set1_pd(c[t]),
                _mm256_set1_pd(s[t]),
                _mm256_set1_pd(-s[t]),
            );
            let cur = p.add(t * ld + o);
            let next = p.add((t + 1) * ld + o);
            for (g, xg) in x.iter_mut().enumerate() {
                let b = _mm256_loadu_pd(next.add(4 * g));
                _mm256_storeu_pd(
                    cur.add(4 * g),
                    _mm256_fmadd_pd(cv, *xg, _mm256_mul_pd(sv, b)),
                );
                *xg = _mm256_fmadd_pd(nsv, *xg, _mm256_mul_pd(cv, b));
            }
        }
        let last = p.add(c.len() * ld + o);
        for (g, xg) in x.iter().enumerate() {
            _mm256_storeu_pd(last.add(4 * g), *xg);
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn rot_seq_f64(a: &mut [f64], ld: usize, len: usize, c: &[f64], s: &[f64]) {
        let p = a.as_mut_ptr();
        // A chunk is two vectors of f64: groups of four vectors, then the even rest.
        let nv = len / 4;
        let mut v = 0;
        while v + 4 <= nv {
            rot_seq_pd::<4>(p, ld, v * 4, c, s);
            v += 4;
        }
        if nv - v == 2 {
            rot_seq_pd::<2>(p, ld, v * 4, c, s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::kernels::test_util::{randn, rng};

    /// The AVX2 bodies against the portable ones (and plain f64 sums), f32 and f64.
    fn check<T: Real>(tol: f64) {
        #[cfg(target_arch = "x86_64")]
        if !crate::cpu::kernels::has_avx2_fma() {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        unsafe {
            check_avx::<T>(tol)
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn check_avx<T: Real>(tol: f64) {
        let mut r = rng(21);
        for len in [8usize, 16, 40] {
            let g =
                |r: &mut _| -> Vec<T> { randn(r, len, 1).into_iter().map(T::from_f64).collect() };
            let (v, p, x0) = (g(&mut r), g(&mut r), g(&mut r));
            let ys: Vec<Vec<T>> = (0..4).map(|_| g(&mut r)).collect();
            let close = |a: &[T], b: &[T]| {
                a.iter()
                    .zip(b)
                    .all(|(x, y)| (x.to_f64() - y.to_f64()).abs() <= tol)
            };
            let (a, b) = (T::from_f64(0.3), T::from_f64(-1.7));
            let (mut x1, mut x2) = (x0.clone(), x0.clone());
            axpy::<T, true>(a, &v, &mut x1);
            axpy::<T, false>(a, &v, &mut x2);
            assert!(close(&x1, &x2), "axpy {len}");
            let (mut x1, mut x2) = (x0.clone(), x0.clone());
            axpy2::<T, true>(a, &v, b, &p, &mut x1);
            axpy2::<T, false>(a, &v, b, &p, &mut x2);
            assert!(close(&x1, &x2), "axpy2 {len}");
            let exact: f64 = v.iter().zip(&p).map(|(x, y)| x.to_f64() * y.to_f64()).sum();
            assert!(
                (dot::<T, true>(&v, &p).to_f64() - exact).abs() <= tol,
                "dot {len}"
            );
            assert!(
                (dot::<T, false>(&v, &p).to_f64() - exact).abs() <= tol,
                "dot {len}"
            );
            let d4 = dot4::<T, true>(&v, [&ys[0], &ys[1], &ys[2], &ys[3]]);
            for k in 0..4 {
                let e: f64 = v
                    .iter()
                    .zip(&ys[k])
                    .map(|(x, y)| x.to_f64() * y.to_f64())
                    .sum();
                assert!((d4[k].to_f64() - e).abs() <= tol, "dot4 {len} {k}");
            }
            let (c, s) = (T::from_f64(0.6), T::from_f64(0.8));
            let (mut x1, mut y1) = (x0.clone(), v.clone());
            let (mut x2, mut y2) = (x0.clone(), v.clone());
            rot::<T, true>(&mut x1, &mut y1, c, s);
            rot::<T, false>(&mut x2, &mut y2, c, s);
            assert!(close(&x1, &x2) && close(&y1, &y2), "rot {len}");
            for i in 0..len {
                let (xa, ya) = (x0[i].to_f64(), v[i].to_f64());
                assert!((x1[i].to_f64() - (0.6 * xa + 0.8 * ya)).abs() <= tol);
                assert!((y1[i].to_f64() - (0.6 * ya - 0.8 * xa)).abs() <= tol);
            }
        }
    }

    /// The column-sequence bodies: `rot_seq` (both copies) against an f64 replay of the
    /// rotations, `rot_seq2` bit for bit two `rot_seq`s, `gemv_cols` bit for bit zero plus
    /// `axpy`s, at lengths of 1 to 5 chunks (and 1 to 4 registers' worth, the groups'
    /// tails), leading dimensions above the length, 0 to 6 rotations.
    fn check_seq<T: Real>(tol: f64) {
        #[cfg(target_arch = "x86_64")]
        if !crate::cpu::kernels::has_avx2_fma() {
            return;
        }
        let mut r = rng(23);
        let bits = |x: &[T]| x.iter().map(|v| v.to_f64().to_bits()).collect::<Vec<_>>();
        for (len, ld) in [(8usize, 8usize), (16, 24), (24, 24), (32, 40), (40, 40)] {
            for nr in [0usize, 1, 2, 6] {
                let cols = nr + 1;
                let a0: Vec<T> = randn(&mut r, ld * cols, 1)
                    .into_iter()
                    .map(T::from_f64)
                    .collect();
                let b0: Vec<T> = randn(&mut r, 16 * cols, 1)
                    .into_iter()
                    .map(T::from_f64)
                    .collect();
                let ang: Vec<f64> = randn(&mut r, 2 * nr + 1, 1);
                let c: Vec<T> = ang[..nr].iter().map(|t| T::from_f64(t.cos())).collect();
                let sn: Vec<T> = ang[..nr].iter().map(|t| T::from_f64(t.sin())).collect();
                let c2: Vec<T> = ang[nr..2 * nr]
                    .iter()
                    .map(|t| T::from_f64(t.cos()))
                    .collect();
                let s2: Vec<T> = ang[nr..2 * nr]
                    .iter()
                    .map(|t| T::from_f64(t.sin()))
                    .collect();
                // f64 replay
                let mut want: Vec<f64> = a0.iter().map(|x| x.to_f64()).collect();
                for t in 0..nr {
                    let (ct, st) = (c[t].to_f64(), sn[t].to_f64());
                    for i in 0..len {
                        let (x, y) = (want[t * ld + i], want[(t + 1) * ld + i]);
                        want[t * ld + i] = ct * x + st * y;
                        want[(t + 1) * ld + i] = ct * y - st * x;
                    }
                }
                for fused in [true, false] {
                    let mut a = a0.clone();
                    if fused {
                        rot_seq::<T, true>(&mut a, ld, len, &c, &sn);
                    } else {
                        rot_seq::<T, false>(&mut a, ld, len, &c, &sn);
                    }
                    for j in 0..cols {
                        for i in 0..ld {
                            let (got, w) = (a[j * ld + i].to_f64(), want[j * ld + i]);
                            if i < len {
                                assert!((got - w).abs() <= tol, "rot_seq {len} {nr} {fused}");
                            } else {
                                assert_eq!(got, a0[j * ld + i].to_f64(), "rot_seq row {i}");
                            }
                        }
                    }
                }
                let (mut a1, mut b1) = (a0.clone(), b0.clone());
                rot_seq::<T, true>(&mut a1, ld, ld, &c, &sn);
                rot_seq::<T, true>(&mut b1, 16, 16, &c2, &s2);
                let (mut a2, mut b2) = (a0.clone(), b0.clone());
                rot_seq2::<T, true>(&mut a2, ld, &c, &sn, &mut b2, 16, &c2, &s2);
                assert_eq!(bits(&a1), bits(&a2), "rot_seq2 a {len} {nr}");
                assert_eq!(bits(&b1), bits(&b2), "rot_seq2 b {len} {nr}");
                let coef: Vec<T> = ang[..cols].iter().map(|&x| T::from_f64(x)).collect();
                let mut x1 = vec![T::from_f64(7.0); len];
                gemv_cols::<T, true>(&coef, &a0, ld, &mut x1);
                let mut x2 = vec![T::ZERO; len];
                for (k, &w) in coef.iter().enumerate() {
                    axpy::<T, true>(w, &a0[k * ld..k * ld + len], &mut x2);
                }
                assert_eq!(bits(&x1), bits(&x2), "gemv_cols {len} {nr}");
            }
        }
    }

    #[test]
    fn sequences_f32_f64() {
        check_seq::<f32>(1e-5);
        check_seq::<f64>(1e-13);
    }

    #[test]
    fn avx_matches_portable_f32() {
        check::<f32>(1e-5);
    }

    #[test]
    fn avx_matches_portable_f64() {
        check::<f64>(1e-13);
    }
}
