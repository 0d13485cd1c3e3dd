//! The `cpu-faer` backend's per-matrix algorithms: faer's in-place decompositions on one
//! column-major work matrix, with scratch from a stack the worker reuses.

use crate::cpu::kernels::tridiag_dc_eigh;
use crate::cpu::kernels::KernelStatus;
use crate::scalar::Real;
use faer::dyn_stack::{MemStack, StackReq};
use faer::linalg::evd::{self_adjoint_evd, self_adjoint_evd_scratch, ComputeEigenvectors};
use faer::linalg::householder::{
    apply_block_householder_sequence_on_the_left_in_place_scratch,
    apply_block_householder_sequence_on_the_left_in_place_with_conj,
    apply_block_householder_transpose_on_the_left_in_place_scratch,
    apply_block_householder_transpose_on_the_left_in_place_with_conj, make_householder_in_place,
    upgrade_householder_factor,
};
use faer::linalg::qr::no_pivoting::factor::recommended_block_size;
use faer::linalg::svd::{
    svd as faer_svd, svd_scratch as faer_svd_scratch, ComputeSvdVectors, SvdParams,
};
use faer::linalg::{temp_mat_scratch, temp_mat_zeroed};
use faer::mat::AsMatMut;
use faer::reborrow::*;
use faer::{Auto, Spec};
use faer::{ColMut, Conj, MatMut, MatRef, Par};

pub(crate) fn qr_scratch<T: Real>(m: usize, n: usize, q_cols: usize, par: Par) -> StackReq {
    let k = m.min(n);
    if k == 0 {
        return StackReq::EMPTY;
    }
    let _ = par;
    let bs = recommended_block_size::<T>(m, n);
    StackReq::all_of(&[
        temp_mat_scratch::<T>(bs, k),
        StackReq::any_of(&[
            apply_block_householder_transpose_on_the_left_in_place_scratch::<T>(m, bs, n),
            apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(m, bs, q_cols),
        ]),
    ])
}

/// QR of the m x n column-major `a`: R lands in its upper triangle; with `q`, the first
/// `q_cols` columns of Q are formed there (m x q_cols, column-major).
pub(crate) fn qr<T: Real>(
    m: usize,
    n: usize,
    a: &mut [T],
    q: Option<(&mut [T], usize)>,
    par: Par,
    stack: &mut MemStack,
) {
    let k = m.min(n);
    let mut amat = MatMut::from_column_major_slice_mut(a, m, n);
    let bs = recommended_block_size::<T>(m, n);
    let (mut coeff, stack) = temp_mat_zeroed::<T, _, _>(bs.max(1), k, stack);
    let mut coeff = coeff.as_mat_mut();
    if k > 0 {
        qr_in_place_full_rank(amat.rb_mut(), coeff.rb_mut(), par, stack);
    }
    if let Some((q, q_cols)) = q {
        let mut qmat = MatMut::from_column_major_slice_mut(&mut q[..m * q_cols], m, q_cols);
        qmat.fill(T::ZERO);
        for i in 0..q_cols.min(m) {
            qmat[(i, i)] = T::ONE;
        }
        if k > 0 {
            apply_block_householder_sequence_on_the_left_in_place_with_conj(
                amat.rb().submatrix(0, 0, m, k),
                coeff.rb(),
                Conj::No,
                qmat,
                par,
                stack,
            );
        }
    }
}

/// Blocked Householder QR writing faer's `qr_in_place` layout (reflectors below the
/// diagonal, block-T factors in `h`, bs x min(m, n)), built from faer's own primitives.
/// Unlike `qr_in_place`, it never treats a column as numerically rank-deficient: faer's
/// unblocked kernel skips a column whose remaining norm is below
/// `eps * 16 * (m - row) * ||column||`, which in f32 (1e-4 relative at m = 65, 2e-3 at
/// m = 1024) drops graded columns and leaves ||A - QR|| / ||A|| at that level.
fn qr_in_place_full_rank<T: Real>(
    mut a: MatMut<'_, T>,
    mut h: MatMut<'_, T>,
    par: Par,
    stack: &mut MemStack,
) {
    let (m, n) = a.shape();
    let k = m.min(n);
    let bs = h.nrows();
    let mut j = 0;
    while j < k {
        let b = bs.min(k - j);
        // Unblocked factorisation of the panel j..j+b.
        for c in j..j + b {
            let (mut left, mut right) = a.rb_mut().get_mut(c.., c..j + b).split_at_col_mut(1);
            let (mut head, tail) = left.rb_mut().col_mut(0).split_at_row_mut(1);
            let info = make_householder_in_place(&mut head[0], tail);
            h[(c - j, c)] = info.tau;
            // tau is infinite for a zero tail: the reflector is the identity.
            let tau_inv = T::ONE / info.tau;
            let v = left.rb().col(0).subrows(1, m - c - 1);
            let v = v.try_as_col_major().expect("column-major").as_slice();
            for mut col in right.rb_mut().col_iter_mut() {
                let col = col.rb_mut().try_as_col_major_mut().expect("column-major");
                let (hd, tl) = col.as_slice_mut().split_at_mut(1);
                let kk = -((hd[0] + crate::cpu::kernels::dot::<T, false>(v, tl)) * tau_inv);
                hd[0] += kk;
                for (t, &vi) in tl.iter_mut().zip(v) {
                    *t += kk * vi;
                }
            }
        }
        upgrade_householder_factor(
            h.rb_mut().submatrix_mut(0, j, b, b),
            a.rb().get(j.., j..j + b),
            b,
            1,
            par,
        );
        if j + b < n {
            let (q0, a1) = a.rb_mut().get_mut(j.., ..).split_at_col_mut(j + b);
            apply_block_householder_transpose_on_the_left_in_place_with_conj(
                q0.rb().get(.., j..j + b),
                h.rb().submatrix(0, j, b, b),
                Conj::Yes,
                a1,
                par,
                stack,
            );
        }
        j += b;
    }
}

/// Whether eigenvectors of order n go through this crate's divide and conquer
/// ([`tridiag_dc`]) between faer's tridiagonalisation and back-transformation.
fn use_dc(n: usize, vectors: bool) -> bool {
    vectors && n > tridiag_dc_eigh::LEAF
}

pub(crate) fn eigh_scratch<T: Real>(n: usize, vectors: bool, par: Par) -> StackReq {
    // Nothing to decompose; faer's own size rule computes n - 1.
    if n == 0 {
        return StackReq::EMPTY;
    }
    if use_dc(n, vectors) {
        return tridiag_dc_eigh::eigh_dense_scratch::<T>(n, par);
    }
    let cv = if vectors {
        ComputeEigenvectors::Yes
    } else {
        ComputeEigenvectors::No
    };
    self_adjoint_evd_scratch::<T>(n, cv, par, Default::default())
}

/// Eigenvalues (and with `v`, eigenvectors as columns) of the symmetric n x n `a` (its
/// lower triangle is read; `a` is destroyed).
pub(crate) fn eigh<T: Real>(
    n: usize,
    a: &mut [T],
    w: &mut [T],
    v: Option<&mut [T]>,
    par: Par,
    stack: &mut MemStack,
) -> KernelStatus {
    if n == 0 {
        return KernelStatus {
            iterations: 0,
            converged: true,
        };
    }
    if let Some(v) = v {
        if use_dc(n, true) {
            return tridiag_dc_eigh::eigh_dense(n, a, w, v, par, stack);
        }
        let amat = MatRef::from_column_major_slice(a, n, n);
        let wcol = ColMut::from_slice_mut(&mut w[..n]);
        let vmat = MatMut::from_column_major_slice_mut(&mut v[..n * n], n, n);
        let ok = self_adjoint_evd(
            amat,
            wcol.as_diagonal_mut(),
            Some(vmat),
            par,
            stack,
            Default::default(),
        );
        return KernelStatus {
            iterations: 0,
            converged: ok.is_ok(),
        };
    }
    let amat = MatRef::from_column_major_slice(a, n, n);
    let wcol = ColMut::from_slice_mut(&mut w[..n]);
    let ok = self_adjoint_evd(
        amat,
        wcol.as_diagonal_mut(),
        None,
        par,
        stack,
        Default::default(),
    );
    KernelStatus {
        iterations: 0,
        converged: ok.is_ok(),
    }
}

pub(crate) fn svd_scratch<T: Real>(
    m: usize,
    n: usize,
    u_cols: Option<usize>,
    vectors: bool,
    par: Par,
) -> StackReq {
    if m == 0 || n == 0 {
        return StackReq::EMPTY;
    }
    let (cu, cv) = svd_vector_kinds(m, n, u_cols, vectors);
    faer_svd_scratch::<T>(m, n, cu, cv, par, svd_params::<T>())
}

/// faer's SVD QR-preconditions inputs with m / n > 11/6 through `qr_in_place`, whose
/// rank-deficiency skip loses graded columns in f32 (see `qr_in_place_full_rank`);
/// bidiagonalise the input directly instead.
fn svd_params<T: Real>() -> Spec<SvdParams, T> {
    let mut p = <SvdParams as Auto<T>>::auto();
    p.qr_ratio_threshold = f64::INFINITY;
    p.into()
}

fn svd_vector_kinds(
    m: usize,
    n: usize,
    u_cols: Option<usize>,
    vectors: bool,
) -> (ComputeSvdVectors, ComputeSvdVectors) {
    let cu = match u_cols {
        None => ComputeSvdVectors::No,
        Some(c) if c == m && m > n => ComputeSvdVectors::Full,
        Some(_) => ComputeSvdVectors::Thin,
    };
    let cv = if vectors {
        ComputeSvdVectors::Thin
    } else {
        ComputeSvdVectors::No
    };
    (cu, cv)
}

/// SVD of the m x n `a` with m >= n: singular values `s`, with `u` the first `u_cols`
/// left vectors (n, or m for the complete set) and with `v` the n x n right vectors as
/// columns.
pub(crate) fn svd<T: Real>(
    m: usize,
    n: usize,
    a: &[T],
    s: &mut [T],
    u: Option<(&mut [T], usize)>,
    v: Option<&mut [T]>,
    par: Par,
    stack: &mut MemStack,
) -> KernelStatus {
    if m.min(n) == 0 {
        if let Some((u, u_cols)) = u {
            // No singular vectors to find; a complete U is the identity.
            let mut umat = MatMut::from_column_major_slice_mut(&mut u[..m * u_cols], m, u_cols);
            umat.fill(T::ZERO);
            for i in 0..u_cols.min(m) {
                umat[(i, i)] = T::ONE;
            }
        }
        return KernelStatus {
            iterations: 0,
            converged: true,
        };
    }
    let amat = MatRef::from_column_major_slice(a, m, n);
    let scol = ColMut::from_slice_mut(&mut s[..n]);
    let umat = u.map(|(u, c)| MatMut::from_column_major_slice_mut(&mut u[..m * c], m, c));
    let vmat = v.map(|v| MatMut::from_column_major_slice_mut(&mut v[..n * n], n, n));
    let ok = faer_svd(
        amat,
        scol.as_diagonal_mut(),
        umat,
        vmat,
        par,
        stack,
        svd_params::<T>(),
    );
    KernelStatus {
        iterations: 0,
        converged: ok.is_ok(),
    }
}
