//! Divide and conquer for the symmetric tridiagonal eigenproblem (Cuppen 1981, with Gu and
//! Eisenstat's recomputed z, 1995), written from the published method.
//!
//! T is torn at its middle coupling beta: T = diag(T1, T2) + rho v v^T, rho = |beta|, the
//! two children solved recursively (leaves of up to [`LEAF`] by this crate's implicit QL),
//! and the merge is the rank-one problem D + rho z z^T, z = diag(Q1, Q2)^T v. After
//! deflation (tiny z_j; pairs of close d_j rotated together) its roots solve the secular
//! equation 1/rho + sum z_j^2 / (d_j - lambda) = 0, each kept as an offset from its nearer
//! pole so that d_j - lambda is found without cancellation. z is recomputed from the roots
//! (Loewner's formula), which makes the vectors (D - lambda I)^-1 z orthogonal to working
//! precision; the merged eigenvectors are diag(Q1, Q2) times them, one GEMM per half over
//! the columns that are not deflated.
//!
//! Layout: every sub-problem at offset o of size m owns rows and columns o..o+m of two n x n
//! buffers (the caller's Q and a scratch one); children write into the buffer their parent
//! reads, so no level copies back.

use super::tridiag_ql_eigh::{padded_ld, tql2};
use super::{normalize_cols, KernelStatus};
use crate::Real;
use faer::dyn_stack::{MemStack, StackReq};
use faer::linalg::evd::tridiag::{tridiag_in_place, tridiag_in_place_scratch};
use faer::linalg::householder::{
    apply_block_householder_sequence_on_the_left_in_place_scratch,
    apply_block_householder_sequence_on_the_left_in_place_with_conj,
};
use faer::linalg::matmul::matmul;
use faer::linalg::qr::no_pivoting::factor::recommended_block_size;
use faer::linalg::{temp_mat_scratch, temp_mat_uninit};
use faer::mat::AsMatMut;
use faer::reborrow::*;
use faer::{Accum, Conj, MatMut, MatRef, Par};

/// Largest sub-problem solved by QL instead of being split.
pub const LEAF: usize = 48;

const LANES: usize = 8;

/// Scratch lengths (elements of T, and of usize) that [`tridiag_dc`] needs for order n.
pub fn tridiag_dc_scratch_len(n: usize) -> (usize, usize) {
    let leaf = LEAF.min(n);
    let lz = padded_ld(leaf) * leaf;
    (2 * n * n + lz + 10 * n + 16, 6 * n)
}

/// Eigen-decomposition of the symmetric tridiagonal (d, e) of order n, `e[i]` coupling
/// `d[i]` and `d[i+1]` (`e` at least n - 1 long): on return `d` holds the eigenvalues in
/// ascending order and `q` (n x n, column-major, leading dimension n) the orthonormal
/// eigenvectors as columns. `e` is destroyed. The scratch lengths are
/// [`tridiag_dc_scratch_len`]`(n)`; `par` is the merges' GEMMs' parallelism.
pub fn tridiag_dc<T: Real>(
    n: usize,
    d: &mut [T],
    e: &mut [T],
    q: &mut [T],
    scratch: &mut [T],
    iscratch: &mut [usize],
    par: Par,
) -> KernelStatus {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: AVX2 and FMA were detected.
        return unsafe { tridiag_dc_avx2(n, d, e, q, scratch, iscratch, par) };
    }
    tridiag_dc_impl::<T, false>(n, d, e, q, scratch, iscratch, par)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tridiag_dc_avx2<T: Real>(
    n: usize,
    d: &mut [T],
    e: &mut [T],
    q: &mut [T],
    scratch: &mut [T],
    iscratch: &mut [usize],
    par: Par,
) -> KernelStatus {
    tridiag_dc_impl::<T, true>(n, d, e, q, scratch, iscratch, par)
}

/// Scratch that [`eigh_dense`] needs for order n.
pub fn eigh_dense_scratch<T: Real>(n: usize, par: Par) -> StackReq {
    if n == 0 {
        return StackReq::EMPTY;
    }
    let bs = recommended_block_size::<T>(n, n);
    let (slen, ilen) = tridiag_dc_scratch_len(n);
    StackReq::all_of(&[
        temp_mat_scratch::<T>(bs, n - 1),
        temp_mat_scratch::<T>(n, 1),
        StackReq::any_of(&[
            tridiag_in_place_scratch::<T>(n, par, Default::default()),
            StackReq::all_of(&[temp_mat_scratch::<T>(slen, 1), StackReq::new::<usize>(ilen)]),
            apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(n - 1, bs, n),
        ]),
    ])
}

/// Symmetric eigendecomposition of the dense n x n `a` (column-major, lower triangle read,
/// destroyed): faer's tridiagonalisation and back-transformation around [`tridiag_dc`].
/// `w` gets the eigenvalues ascending, `v` (n x n, leading dimension n) the eigenvectors.
pub fn eigh_dense<T: Real>(
    n: usize,
    a: &mut [T],
    w: &mut [T],
    v: &mut [T],
    par: Par,
    stack: &mut MemStack,
) -> KernelStatus {
    if n == 0 {
        return KernelStatus {
            iterations: 0,
            converged: true,
        };
    }
    let mut amat = MatMut::from_column_major_slice_mut(&mut a[..n * n], n, n);
    let bs = recommended_block_size::<T>(n, n);
    // SAFETY: every entry is written before it is read (faer's tridiagonalisation fills
    // the factors; the solver's buffers are written before use).
    let (mut hh, stack) = unsafe { temp_mat_uninit::<T, _, _>(bs, n - 1, stack) };
    let mut hh = hh.as_mat_mut();
    tridiag_in_place(amat.rb_mut(), hh.rb_mut(), par, stack, Default::default());
    let (mut ecol, stack) = unsafe { temp_mat_uninit::<T, _, _>(n, 1, stack) };
    let mut ecol = ecol.as_mat_mut();
    let e = ecol
        .rb_mut()
        .col_mut(0)
        .try_as_col_major_mut()
        .expect("column")
        .as_slice_mut();
    let d = &mut w[..n];
    for i in 0..n {
        d[i] = amat[(i, i)];
        e[i] = if i + 1 < n { amat[(i + 1, i)] } else { T::ZERO };
    }
    let status = {
        let (slen, ilen) = tridiag_dc_scratch_len(n);
        let (mut sc, stack) = unsafe { temp_mat_uninit::<T, _, _>(slen, 1, stack) };
        let mut sc = sc.as_mat_mut();
        let sc = sc
            .rb_mut()
            .col_mut(0)
            .try_as_col_major_mut()
            .expect("column")
            .as_slice_mut();
        let (mut isc, _) = stack.make_with(ilen, |_| 0usize);
        tridiag_dc(n, d, e, &mut v[..n * n], sc, &mut isc, par)
    };
    let mut vmat = MatMut::from_column_major_slice_mut(&mut v[..n * n], n, n);
    apply_block_householder_sequence_on_the_left_in_place_with_conj(
        amat.rb().submatrix(1, 0, n - 1, n - 1),
        hh.rb(),
        Conj::No,
        vmat.rb_mut().subrows_mut(1, n - 1),
        par,
        stack,
    );
    status
}

/// Per-merge vectors (each n long) and the buffers the recursion shares.
struct Work<'a, T> {
    n: usize,
    wc: &'a mut [T],
    lz: &'a mut [T],
    z: &'a mut [T],
    dd: &'a mut [T],
    zz: &'a mut [T],
    tau: &'a mut [T],
    zhat: &'a mut [T],
    dp: &'a mut [T],
    zp: &'a mut [T],
    dv: &'a mut [T],
    le: &'a mut [T],
    idx: &'a mut [usize],
    kind: &'a mut [usize],
    nd: &'a mut [usize],
    df: &'a mut [usize],
    pole: &'a mut [usize],
    ord: &'a mut [usize],
    status: KernelStatus,
    par: Par,
}

#[inline(always)]
fn tridiag_dc_impl<T: Real, const F: bool>(
    n: usize,
    d: &mut [T],
    e: &mut [T],
    q: &mut [T],
    scratch: &mut [T],
    iscratch: &mut [usize],
    par: Par,
) -> KernelStatus {
    let mut status = KernelStatus {
        iterations: 0,
        converged: true,
    };
    if n == 0 {
        return status;
    }
    let (slen, ilen) = tridiag_dc_scratch_len(n);
    assert!(scratch.len() >= slen && iscratch.len() >= ilen && q.len() >= n * n);
    let d = &mut d[..n];
    let q = &mut q[..n * n];
    let leaf = LEAF.min(n);
    let (other, s) = scratch.split_at_mut(n * n);
    let (wc, s) = s.split_at_mut(n * n);
    let (lz, s) = s.split_at_mut(padded_ld(leaf) * leaf);
    let mut vs = s.chunks_exact_mut(n);
    let mut next = || vs.next().unwrap();
    let (z, dd, zz, tau, zhat) = (next(), next(), next(), next(), next());
    let (dp, zp, dv, le) = (next(), next(), next(), next());
    let mut is = iscratch.chunks_exact_mut(n);
    let mut inext = || is.next().unwrap();
    let (idx, kind, nd, df, pole, ord) = (inext(), inext(), inext(), inext(), inext(), inext());
    let mut w = Work {
        n,
        wc,
        lz,
        z,
        dd,
        zz,
        tau,
        zhat,
        dp,
        zp,
        dv,
        le,
        idx,
        kind,
        nd,
        df,
        pole,
        ord,
        status,
        par,
    };
    solve::<T, F>(&mut w, other, 0, n, d, e, q, true);
    status = w.status;
    // Ascending order: sort the indices, then permute columns along cycles.
    let ord = &mut *w.idx;
    for (i, o) in ord.iter_mut().enumerate() {
        *o = i;
    }
    ord.sort_by(|&a, &b| d[a].partial_cmp(&d[b]).unwrap_or(std::cmp::Ordering::Equal));
    let tmp = &mut w.wc[..n];
    let done = &mut *w.kind;
    done.fill(0);
    for start in 0..n {
        if done[start] != 0 || ord[start] == start {
            continue;
        }
        // Position i takes column ord[i]: walk the cycle through `start`.
        tmp.copy_from_slice(&q[start * n..start * n + n]);
        let dstart = d[start];
        let mut i = start;
        loop {
            done[i] = 1;
            let src = ord[i];
            if src == start {
                q[i * n..i * n + n].copy_from_slice(tmp);
                d[i] = dstart;
                break;
            }
            q.copy_within(src * n..src * n + n, i * n);
            d[i] = d[src];
            i = src;
        }
    }
    status
}

/// Solve the sub-problem at offset o of size m (its diagonal in `d[o..o+m]`, couplings in
/// `e[o..o+m-1]`) into rows and columns o..o+m of `q` when `into_q`, else of `w.other`; its
/// eigenvalues land in `d[o..o+m]` (not sorted), matching the columns.
fn solve<T: Real, const F: bool>(
    w: &mut Work<'_, T>,
    other: &mut [T],
    o: usize,
    m: usize,
    d: &mut [T],
    e: &mut [T],
    q: &mut [T],
    into_q: bool,
) {
    // Recursion leaves the target-feature copy: re-enter it at each level.
    #[cfg(target_arch = "x86_64")]
    if F {
        // SAFETY: F is only set once AVX2 and FMA were detected.
        return unsafe { solve_avx2::<T>(w, other, o, m, d, e, q, into_q) };
    }
    solve_impl::<T, F>(w, other, o, m, d, e, q, into_q)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn solve_avx2<T: Real>(
    w: &mut Work<'_, T>,
    other: &mut [T],
    o: usize,
    m: usize,
    d: &mut [T],
    e: &mut [T],
    q: &mut [T],
    into_q: bool,
) {
    solve_impl::<T, true>(w, other, o, m, d, e, q, into_q)
}

#[inline(always)]
fn solve_impl<T: Real, const F: bool>(
    w: &mut Work<'_, T>,
    other: &mut [T],
    o: usize,
    m: usize,
    d: &mut [T],
    e: &mut [T],
    q: &mut [T],
    into_q: bool,
) {
    let n = w.n;
    if m <= LEAF {
        let ld = padded_ld(m);
        let lz = &mut w.lz[..ld * m];
        lz.fill(T::ZERO);
        for i in 0..m {
            lz[i * ld + i] = T::ONE;
        }
        let le = &mut w.le[..m];
        le[..m - 1].copy_from_slice(&e[o..o + m - 1]);
        le[m - 1] = T::ZERO;
        let st = tql2::<T, F, true>(m, &mut d[o..o + m], le, lz, ld);
        if st.iterations > 0 {
            normalize_cols::<T, F>(lz, ld);
        }
        w.status.iterations += st.iterations;
        w.status.converged &= st.converged;
        let dst: &mut [T] = if into_q { q } else { other };
        for j in 0..m {
            dst[(o + j) * n + o..(o + j) * n + o + m].copy_from_slice(&lz[j * ld..j * ld + m]);
        }
        return;
    }
    let m1 = m / 2;
    // Tear: T = diag(T1, T2) + rho v v^T with v = e_{m1-1} + sign(beta) e_{m1}.
    let beta = e[o + m1 - 1];
    let rho = beta.abs();
    d[o + m1 - 1] -= rho;
    d[o + m1] -= rho;
    solve::<T, F>(w, other, o, m1, d, e, q, !into_q);
    solve::<T, F>(w, other, o + m1, m - m1, d, e, q, !into_q);
    let (src, dst): (&mut [T], &mut [T]) = if into_q { (other, q) } else { (q, other) };
    merge::<T, F>(
        n,
        o,
        m,
        m1,
        rho,
        beta < T::ZERO,
        &mut d[o..o + m],
        src,
        dst,
        w,
    );
}

/// Column j of the sub-problem's block (rows o..o+m) in an n x n buffer.
#[inline(always)]
fn col<T>(buf: &[T], n: usize, o: usize, m: usize, j: usize) -> &[T] {
    &buf[(o + j) * n + o..(o + j) * n + o + m]
}

#[inline(always)]
fn col_mut<T>(buf: &mut [T], n: usize, o: usize, m: usize, j: usize) -> &mut [T] {
    &mut buf[(o + j) * n + o..(o + j) * n + o + m]
}

const TOP: usize = 1;
const BOTH: usize = 2;
const BOTTOM: usize = 3;

/// Merge the children's solutions (in `src`'s block at o, eigenvalues `d`) into `dst`.
#[inline(always)]
fn merge<T: Real, const F: bool>(
    n: usize,
    o: usize,
    m: usize,
    m1: usize,
    rho: T,
    negative: bool,
    d: &mut [T],
    src: &mut [T],
    dst: &mut [T],
    w: &mut Work<'_, T>,
) {
    let m2 = m - m1;
    // The children's blocks are diagonal: clear the off-diagonal blocks so that columns
    // rotated across the halves are whole.
    for j in 0..m1 {
        col_mut(src, n, o, m, j)[m1..].fill(T::ZERO);
    }
    for j in m1..m {
        col_mut(src, n, o, m, j)[..m1].fill(T::ZERO);
    }
    // z = diag(Q1, Q2)^T v: Q1's last row and (signed) Q2's first row; then |z| = 1.
    let z = &mut w.z[..m];
    for j in 0..m1 {
        z[j] = src[(o + j) * n + o + m1 - 1];
    }
    for j in m1..m {
        let x = src[(o + j) * n + o + m1];
        z[j] = if negative { -x } else { x };
    }
    let zn2 = super::sumsq::<T, F>(z);
    let zn = zn2.sqrt();
    let rho = rho * zn2;
    if zn > T::ZERO {
        let s = T::ONE / zn;
        z.iter_mut().for_each(|x| *x *= s);
    }
    let kind = &mut w.kind[..m];
    for (j, k) in kind.iter_mut().enumerate() {
        *k = if j < m1 { TOP } else { BOTTOM };
    }
    // Sorted order of the poles.
    let idx = &mut w.idx[..m];
    for (i, x) in idx.iter_mut().enumerate() {
        *x = i;
    }
    idx.sort_by(|&a, &b| d[a].partial_cmp(&d[b]).unwrap_or(std::cmp::Ordering::Equal));
    // Deflation. tol bounds the perturbation ||rho z z^T|| parts dropped, relative to ||T||.
    let dmax = d.iter().fold(T::ZERO, |a, &x| a.max(x.abs()));
    let tol = T::from_f64(8.0) * T::EPSILON * dmax.max(rho);
    let (nd, df) = (&mut w.nd[..m], &mut w.df[..m]);
    let (mut k, mut nf) = (0usize, 0usize);
    let mut last: Option<usize> = None; // the last pole kept (a column index)
    for &j in idx.iter() {
        if rho * z[j].abs() <= tol {
            df[nf] = j;
            nf += 1;
            continue;
        }
        if let Some(a) = last {
            // Rotate columns a, j so that z_a' = 0; deflate a if the coupling
            // (d_j - d_a) z_a z_j / r^2 it leaves is below tol.
            let (za, zj) = (z[a], z[j]);
            let r = za.hypot(zj);
            let (c, s) = (zj / r, za / r);
            if ((d[j] - d[a]) * c * s).abs() <= tol {
                let (da, dj) = (d[a], d[j]);
                d[a] = c * c * da + s * s * dj;
                d[j] = s * s * da + c * c * dj;
                z[a] = T::ZERO;
                z[j] = r;
                let (ca, cj) = two_block_cols(src, n, o, m, a, j);
                for (x, y) in ca.iter_mut().zip(cj.iter_mut()) {
                    let (xa, xj) = (*x, *y);
                    *x = c * xa - s * xj;
                    *y = s * xa + c * xj;
                }
                if kind[a] != kind[j] {
                    kind[a] = BOTH;
                    kind[j] = BOTH;
                }
                df[nf] = a;
                nf += 1;
                nd[k - 1] = j;
                last = Some(j);
                continue;
            }
        }
        nd[k] = j;
        k += 1;
        last = Some(j);
    }
    // Deflated columns are eigenvectors already: copy them after the k merged ones.
    let dv = &mut w.dv[..m];
    for t in 0..nf {
        let j = df[t];
        dv[k + t] = d[j];
        col_mut(dst, n, o, m, k + t).copy_from_slice(col(src, n, o, m, j));
    }
    if k == 0 {
        d.copy_from_slice(dv);
        return;
    }
    // The rank-one problem scaled by a power of two to norm ~1: its 1/delta and 1/delta^2
    // terms stay in range however small the sub-problem (sums of squares overflow in f32
    // otherwise).
    let e2 = dmax.max(rho).exponent();
    let (sc, unsc) = (T::exp2i(-e2), T::exp2i(e2));
    let (dd, zz) = (&mut w.dd[..k], &mut w.zz[..k]);
    for r in 0..k {
        dd[r] = d[nd[r]] * sc;
        zz[r] = z[nd[r]];
    }
    let rho = rho * sc;
    let (tau, pole) = (&mut w.tau[..k], &mut w.pole[..k]);
    let rho_inv = T::ONE / rho;
    for i in 0..k {
        let (p, t, it, ok) = secular_root::<T, F>(i, dd, zz, rho, rho_inv);
        pole[i] = p;
        tau[i] = t;
        w.status.iterations += it;
        w.status.converged &= ok;
    }
    // Loewner: the z for which the computed roots are exact.
    let zhat = &mut w.zhat[..k];
    loewner::<T, F>(dd, zz, tau, pole, rho_inv, zhat);
    // Group the kept columns by kind (top only, both halves, bottom only) so that each
    // half's GEMM reads only the columns nonzero there.
    let ord = &mut w.ord[..k];
    let mut cnt = [0usize; 4];
    for r in 0..k {
        cnt[kind[nd[r]]] += 1;
    }
    let (n1, n2) = (cnt[TOP], cnt[BOTH]);
    let mut pos = [0, 0, n1, n1 + n2];
    for r in 0..k {
        let t = kind[nd[r]];
        ord[pos[t]] = r;
        pos[t] += 1;
    }
    let (dp, zp) = (&mut w.dp[..k], &mut w.zp[..k]);
    let wc = &mut w.wc[..m * k];
    for (qq, &r) in ord.iter().enumerate() {
        dp[qq] = dd[r];
        zp[qq] = zhat[r];
        wc[qq * m..qq * m + m].copy_from_slice(col(src, n, o, m, nd[r]));
    }
    // Eigenvectors of D + rho z z^T (rows in the grouped order) into src's block.
    for i in 0..k {
        let dpi = dd[pole[i]];
        let ti = tau[i];
        let u = &mut src[(o + i) * n + o..(o + i) * n + o + k];
        // Times tau: |tau| <= |delta_q|, so the entries are at most |zhat_q| <= 1.
        for ((x, &dq), &zq) in u.iter_mut().zip(dp.iter()).zip(zp.iter()) {
            *x = (zq * ti) / ((dq - dpi) - ti);
        }
        let s = T::ONE / super::sumsq::<T, F>(u).sqrt();
        u.iter_mut().for_each(|x| *x *= s);
    }
    let u = MatRef::from_column_major_slice_with_stride(&src[o * n + o..], k, k, n);
    let wcm = MatRef::from_column_major_slice(wc, m, k);
    let (top, bot) = (n1 + n2, k - n1);
    {
        let dt = MatMut::from_column_major_slice_with_stride_mut(&mut dst[o * n + o..], m, k, n);
        let (dtop, dbot) = dt.split_at_row_mut(m1);
        gemm_or_zero(
            w.par,
            dtop,
            wcm.subrows(0, m1).subcols(0, top),
            u.subrows(0, top),
        );
        gemm_or_zero(
            w.par,
            dbot,
            wcm.subrows(m1, m2).subcols(n1, bot),
            u.subrows(n1, bot),
        );
    }
    for i in 0..k {
        dv[i] = (dd[pole[i]] + tau[i]) * unsc;
    }
    d.copy_from_slice(dv);
}

#[inline(always)]
fn gemm_or_zero<T: Real>(par: Par, dst: MatMut<'_, T>, a: MatRef<'_, T>, b: MatRef<'_, T>) {
    let mut dst = dst;
    if a.ncols() == 0 {
        dst.fill(T::ZERO);
    } else {
        matmul(dst, Accum::Replace, a, b, T::ONE, par);
    }
}

/// Columns a != b of the block, mutably.
#[inline(always)]
fn two_block_cols<T>(
    buf: &mut [T],
    n: usize,
    o: usize,
    m: usize,
    a: usize,
    b: usize,
) -> (&mut [T], &mut [T]) {
    if a < b {
        let (lo, hi) = buf.split_at_mut((o + b) * n);
        (
            &mut lo[(o + a) * n + o..(o + a) * n + o + m],
            &mut hi[o..o + m],
        )
    } else {
        let (y, x) = two_block_cols(buf, n, o, m, b, a);
        (x, y)
    }
}

/// Root i of 1/rho + sum_j z_j^2 / (d_j - lambda) (d ascending, z nonzero, rho > 0), as
/// (p, tau) with lambda = d_p + tau, p the nearer pole; plus iterations and convergence.
/// Each step fits psi (poles up to s) and phi (poles above s) with one pole each at
/// d_s and d_{s+1}, matching value and slope (Li's middle way), and takes the root of that
/// model between them, falling back to bisection of the bracket.
#[inline(always)]
fn secular_root<T: Real, const F: bool>(
    i: usize,
    d: &[T],
    z: &[T],
    rho: T,
    rho_inv: T,
) -> (usize, T, u32, bool) {
    let k = d.len();
    if k == 1 {
        return (0, rho * z[0] * z[0], 0, true);
    }
    let last = i == k - 1;
    let s = if last { k - 2 } else { i };
    let (p, mut tau, mut lo, mut hi);
    let (mut psi, mut dpsi, mut phi, mut dphi);
    if last {
        p = k - 1;
        let zz = super::sumsq::<T, F>(z);
        lo = T::ZERO;
        hi = rho * zz * (T::ONE + T::from_f64(4.0) * T::EPSILON);
        tau = hi * T::HALF;
        (psi, dpsi, phi, dphi) = eval_split::<T, F>(d, z, s, p, tau);
    } else {
        let delta = d[i + 1] - d[i];
        let mid = delta * T::HALF;
        (psi, dpsi, phi, dphi) = eval_split::<T, F>(d, z, s, i, mid);
        let wv = rho_inv + psi + phi;
        // f increases between the poles: f(mid) >= 0 puts the root in (d_i, mid].
        if wv >= T::ZERO {
            p = i;
            tau = mid;
            lo = T::ZERO;
            hi = mid;
        } else {
            p = i + 1;
            tau = mid - delta;
            lo = tau;
            hi = T::ZERO;
        }
    }
    let eps = T::EPSILON;
    let mut it = 0u32;
    loop {
        let wv = rho_inv + psi + phi;
        let erretm = T::from_f64(8.0) * (phi.abs() - psi + rho_inv) + tau.abs() * (dpsi + dphi);
        if wv.abs() <= eps * erretm {
            return (p, tau, it, true);
        }
        if wv > T::ZERO {
            hi = hi.min(tau);
        } else {
            lo = lo.max(tau);
        }
        if hi - lo <= T::TWO * eps * lo.abs().max(hi.abs()) || it >= 64 {
            return (p, tau, it, it < 64);
        }
        it += 1;
        let ds = (d[s] - d[p]) - tau;
        let ds1 = (d[s + 1] - d[p]) - tau;
        let c = wv - ds * dpsi - ds1 * dphi;
        let a = (ds + ds1) * wv - ds * ds1 * (dpsi + dphi);
        let b = ds * ds1 * wv;
        let sq = (a * a - T::from_f64(4.0) * b * c).max(T::ZERO).sqrt();
        let eta = if !last {
            if a <= T::ZERO {
                (a - sq) / (T::TWO * c)
            } else {
                T::TWO * b / (a + sq)
            }
        } else if a >= T::ZERO {
            (a + sq) / (T::TWO * c)
        } else {
            T::TWO * b / (a - sq)
        };
        let mut next = tau + eta;
        if !(next > lo && next < hi) {
            next = lo + (hi - lo) * T::HALF;
        }
        tau = next;
        (psi, dpsi, phi, dphi) = eval_split::<T, F>(d, z, s, p, tau);
    }
}

/// (psi, psi', phi, phi') at lambda = d_p + tau: the sums over poles up to s and above it.
#[inline(always)]
fn eval_split<T: Real, const F: bool>(
    d: &[T],
    z: &[T],
    s: usize,
    p: usize,
    tau: T,
) -> (T, T, T, T) {
    let dpole = d[p];
    let (psi, dpsi) = sums_sq::<T, F>(&d[..=s], &z[..=s], dpole, tau);
    let (phi, dphi) = sums_sq::<T, F>(&d[s + 1..], &z[s + 1..], dpole, tau);
    (psi, dpsi, phi, dphi)
}

/// Sums over the poles j of z_j^2 / delta_j and z_j^2 / delta_j^2, delta_j = (d_j - d_p) -
/// tau, over independent lanes.
#[inline(always)]
fn sums_sq<T: Real, const F: bool>(d: &[T], z: &[T], dpole: T, tau: T) -> (T, T) {
    let n = d.len().min(z.len());
    let (d, z) = (&d[..n], &z[..n]);
    let mut s = [T::ZERO; LANES];
    let mut ds = [T::ZERO; LANES];
    let dc = d.chunks_exact(LANES);
    let zc = z.chunks_exact(LANES);
    let (dr, zr) = (dc.remainder(), zc.remainder());
    for (dx, zx) in dc.zip(zc) {
        for l in 0..LANES {
            let inv = T::ONE / ((dx[l] - dpole) - tau);
            let t = zx[l] * zx[l] * inv;
            s[l] += t;
            ds[l] = super::fma::<T, F>(t, inv, ds[l]);
        }
    }
    let (mut s0, mut ds0) = (T::ZERO, T::ZERO);
    for (&dx, &zx) in dr.iter().zip(zr) {
        let inv = T::ONE / ((dx - dpole) - tau);
        let t = zx * zx * inv;
        s0 += t;
        ds0 += t * inv;
    }
    (super::chunks::hsum(&s) + s0, super::chunks::hsum(&ds) + ds0)
}

/// zhat_j = sign(z_j) sqrt(prod_i (lambda_i - d_j) / (rho prod_{i != j} (d_i - d_j))), as a
/// product of ratios each in (0, 1]: root i < j over pole i, root i >= j over pole i+1,
/// the last root alone.
#[inline(always)]
fn loewner<T: Real, const F: bool>(
    d: &[T],
    z: &[T],
    tau: &[T],
    pole: &[usize],
    rho_inv: T,
    out: &mut [T],
) {
    let k = d.len();
    let out = &mut out[..k];
    out.fill(T::ONE);
    for i in 0..k {
        let (dpi, ti) = (d[pole[i]], tau[i]);
        // j > i: (lambda_i - d_j) / (d_i - d_j)
        let di = d[i];
        for (x, &dj) in out[i + 1..].iter_mut().zip(&d[i + 1..]) {
            *x *= ((dpi - dj) + ti) / (di - dj);
        }
        if i + 1 < k {
            let dn = d[i + 1];
            for (x, &dj) in out[..=i].iter_mut().zip(&d[..=i]) {
                *x *= ((dpi - dj) + ti) / (dn - dj);
            }
        } else {
            for (x, &dj) in out.iter_mut().zip(d) {
                *x *= (dpi - dj) + ti;
            }
        }
    }
    for (x, &zj) in out.iter_mut().zip(z) {
        let v = (*x * rho_inv).abs().sqrt();
        *x = if zj < T::ZERO { -v } else { v };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f64 reference eigenvalues of the tridiagonal (faer, dense).
    fn reference(d: &[f64], e: &[f64]) -> Vec<f64> {
        let n = d.len();
        let m = faer::Mat::<f64>::from_fn(n, n, |i, j| {
            if i == j {
                d[i]
            } else if i == j + 1 {
                e[j]
            } else if j == i + 1 {
                e[i]
            } else {
                0.0
            }
        });
        let mut w: Vec<f64> = m
            .self_adjoint_eigenvalues(faer::Side::Lower)
            .unwrap()
            .into_iter()
            .collect();
        w.sort_by(|a, b| a.partial_cmp(b).unwrap());
        w
    }

    /// Run the solver in T on (d, e) and return (eigenvalue error, residual, orthogonality)
    /// relative to ||T||_F.
    fn check<T: Real>(d64: &[f64], e64: &[f64]) -> (f64, f64, f64) {
        let n = d64.len();
        let dt: Vec<T> = d64.iter().map(|&x| T::from_f64(x)).collect();
        let et: Vec<T> = e64.iter().map(|&x| T::from_f64(x)).collect();
        let din: Vec<f64> = dt.iter().map(|x| x.to_f64()).collect();
        let ein: Vec<f64> = et.iter().map(|x| x.to_f64()).collect();
        let tn = (din.iter().map(|x| x * x).sum::<f64>()
            + 2.0 * ein.iter().map(|x| x * x).sum::<f64>())
        .sqrt()
        .max(f64::MIN_POSITIVE);
        let (sl, il) = tridiag_dc_scratch_len(n);
        let mut sc = vec![T::from_f64(-3.0); sl];
        let mut isc = vec![7usize; il];
        let mut d = dt.clone();
        let mut e = et.clone();
        e.push(T::ZERO);
        let mut q = vec![T::from_f64(9.0); n * n];
        let st = tridiag_dc(n, &mut d, &mut e, &mut q, &mut sc, &mut isc, Par::Seq);
        assert!(st.converged, "n {n}: not converged");
        let w: Vec<f64> = d.iter().map(|x| x.to_f64()).collect();
        for p in w.windows(2) {
            assert!(p[0] <= p[1], "n {n}: not ascending");
        }
        let r = reference(&din, &ein);
        let ew = w
            .iter()
            .zip(&r)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max)
            / tn;
        let v: Vec<f64> = q.iter().map(|x| x.to_f64()).collect();
        let mut res = 0.0;
        for j in 0..n {
            for i in 0..n {
                let mut tv = din[i] * v[i + j * n];
                if i > 0 {
                    tv += ein[i - 1] * v[i - 1 + j * n];
                }
                if i + 1 < n {
                    tv += ein[i] * v[i + 1 + j * n];
                }
                let x = tv - w[j] * v[i + j * n];
                res += x * x;
            }
        }
        let res = res.sqrt() / tn;
        // Relative to ||I||_F, as the suite's orth_err.
        let orth = crate::cpu::kernels::test_util::orth_err(n, n, &v) / (n as f64).sqrt();
        (ew, res, orth)
    }

    fn cases(n: usize, seed: u64) -> Vec<(&'static str, Vec<f64>, Vec<f64>)> {
        use crate::cpu::kernels::test_util::{randn, rng};
        let mut r = rng(seed);
        let m = n.saturating_sub(1);
        let mut out = vec![];
        out.push(("random", randn(&mut r, n, 1), randn(&mut r, m, 1)));
        let mut e = randn(&mut r, m, 1);
        for (i, x) in e.iter_mut().enumerate() {
            if i % 7 == 3 || i == n / 2 - 1 {
                *x = 0.0;
            }
        }
        out.push(("split", randn(&mut r, n, 1), e));
        out.push(("all-equal", vec![0.5; n], vec![0.0; m]));
        out.push(("ones-offdiag", vec![1.0; n], vec![1.0; m]));
        out.push(("zeros", vec![0.0; n], vec![0.0; m]));
        // repeated: diagonal blocks of a repeated 2x2, weakly coupled
        out.push((
            "repeated",
            (0..n).map(|i| if i % 2 == 0 { 1.0 } else { 2.0 }).collect(),
            (0..m)
                .map(|i| if i % 2 == 0 { 0.5 } else { 1e-9 })
                .collect(),
        ));
        out.push((
            "clustered",
            (0..n).map(|i| 1.0 + 1e-6 * i as f64).collect(),
            (0..m).map(|_| 1e-7).collect(),
        ));
        // glued Wilkinson W21+ blocks
        let mut d = vec![];
        let mut e = vec![];
        for i in 0..n {
            let b = i % 21;
            d.push((b as f64 - 10.0).abs());
            if i + 1 < n {
                e.push(if b == 20 { 1e-7 } else { 1.0 });
            }
        }
        out.push(("glued-wilkinson", d, e));
        out.push((
            "graded",
            (0..n)
                .map(|i| 10f64.powf(4.0 - 8.0 * i as f64 / (n.max(2) - 1) as f64))
                .collect(),
            (0..m)
                .map(|i| 10f64.powf(4.0 - 8.0 * (i as f64 + 0.5) / (n.max(2) - 1) as f64))
                .collect(),
        ));
        out.push((
            "graded-rev",
            (0..n)
                .map(|i| 10f64.powf(-4.0 + 8.0 * i as f64 / (n.max(2) - 1) as f64))
                .collect(),
            (0..m).map(|_| 1e-2).collect(),
        ));
        out.push(("1-2-1", vec![2.0; n], vec![-1.0; m]));
        // A rank-one matrix's tridiagonal: two large entries, then rounding noise whose
        // merges are 1e-16 in scale (their 1/delta^2 overflow f32 unless scaled).
        let mut d = randn(&mut r, n, 1);
        let mut e = randn(&mut r, m, 1);
        d.iter_mut().for_each(|x| *x *= 1e-16);
        e.iter_mut().for_each(|x| *x *= 1e-16);
        d[0] = 0.5;
        if n > 1 {
            d[1] = 48.0;
            e[0] = -4.9;
        }
        out.push(("tiny-tail", d, e));
        out
    }

    fn run<T: Real>(tol: f64) {
        let sizes = [
            1usize, 2, 3, 47, 48, 49, 50, 95, 96, 97, 100, 191, 193, 200, 256, 385, 513,
        ];
        let mut worst = (0.0f64, 0.0f64, 0.0f64);
        for &n in &sizes {
            for (name, d, e) in cases(n, n as u64) {
                let (ew, res, orth) = check::<T>(&d, &e);
                worst = (worst.0.max(ew), worst.1.max(res), worst.2.max(orth));
                assert!(
                    ew <= tol && res <= tol && orth <= tol,
                    "{} {name} n {n}: eig {ew:e} resid {res:e} orth {orth:e}",
                    std::any::type_name::<T>()
                );
            }
        }
        eprintln!(
            "{}: max eig {:.2e} resid {:.2e} orth {:.2e}",
            std::any::type_name::<T>(),
            worst.0,
            worst.1,
            worst.2
        );
    }

    #[test]
    fn dc_f32() {
        run::<f32>(2e-5);
    }

    #[test]
    fn dc_f64() {
        run::<f64>(2e-5 * f64::EPSILON / f32::EPSILON as f64);
    }
}

#[cfg(test)]
mod dense_tests {
    use super::*;
    use crate::cpu::kernels::test_util::*;
    use faer::dyn_stack::MemBuffer;

    fn check_dense<T: Real>(n: usize, a64: &[f64], name: &str, tol: f64) {
        let a_t: Vec<T> = a64.iter().map(|&x| T::from_f64(x)).collect();
        let a_in: Vec<f64> = a_t.iter().map(|x| x.to_f64()).collect();
        let an = fro(&a_in).max(f64::MIN_POSITIVE);
        let mut a = a_t.clone();
        let mut w = vec![T::ZERO; n];
        let mut v = vec![T::ZERO; n * n];
        let mut buf = MemBuffer::new(eigh_dense_scratch::<T>(n, Par::Seq));
        let st = eigh_dense(n, &mut a, &mut w, &mut v, Par::Seq, MemStack::new(&mut buf));
        assert!(st.converged);
        let v64: Vec<f64> = v.iter().map(|x| x.to_f64()).collect();
        let w64: Vec<f64> = w.iter().map(|x| x.to_f64()).collect();
        let mut res = crate::cpu::kernels::test_util::matmul(n, n, n, &a_in, &v64);
        for j in 0..n {
            for i in 0..n {
                res[i + j * n] -= v64[i + j * n] * w64[j];
            }
        }
        let resid = fro(&res) / an;
        let orth = orth_err(n, n, &v64) / (n as f64).sqrt();
        assert!(
            resid <= tol && orth <= tol,
            "{} {name} {n}: resid {resid:e} orth {orth:e}",
            std::any::type_name::<T>()
        );
    }

    #[test]
    fn dense_cases() {
        let mut r = rng(5);
        for n in [49usize, 97, 200] {
            for (name, mut a) in symmetric_cases(&mut r, n) {
                driver_scale(&mut a);
                check_dense::<f32>(n, &a, name, 2e-5);
                check_dense::<f64>(n, &a, name, 2e-5 * f64::EPSILON / f32::EPSILON as f64);
            }
        }
    }
}
