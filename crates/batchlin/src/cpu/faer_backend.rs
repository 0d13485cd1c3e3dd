//! The `cpu-faer` backend's per-matrix algorithms: faer's in-place decompositions on one
//! column-major work matrix, with scratch from a stack the worker reuses.

use crate::cpu::kernels::KernelStatus;
use crate::scalar::Real;
use faer::dyn_stack::{MemStack, StackReq};
use faer::linalg::evd::{self_adjoint_evd, self_adjoint_evd_scratch, ComputeEigenvectors};
use faer::linalg::householder::{
    apply_block_householder_sequence_on_the_left_in_place_scratch,
    apply_block_householder_sequence_on_the_left_in_place_with_conj,
};
use faer::linalg::qr::no_pivoting::factor::{
    qr_in_place, qr_in_place_scratch, recommended_block_size,
};
use faer::linalg::svd::{svd as faer_svd, svd_scratch as faer_svd_scratch, ComputeSvdVectors};
use faer::linalg::{temp_mat_scratch, temp_mat_zeroed};
use faer::mat::AsMatMut;
use faer::reborrow::*;
use faer::{ColMut, Conj, MatMut, MatRef, Par};

pub(crate) fn qr_scratch<T: Real>(m: usize, n: usize, q_cols: usize, par: Par) -> StackReq {
    let k = m.min(n);
    if k == 0 {
        return StackReq::EMPTY;
    }
    let bs = recommended_block_size::<T>(m, n);
    StackReq::all_of(&[
        temp_mat_scratch::<T>(bs, k),
        StackReq::any_of(&[
            qr_in_place_scratch::<T>(m, n, bs, par, Default::default()),
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
        qr_in_place(
            amat.rb_mut(),
            coeff.rb_mut(),
            par,
            stack,
            Default::default(),
        );
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

pub(crate) fn eigh_scratch<T: Real>(n: usize, vectors: bool, par: Par) -> StackReq {
    let cv = if vectors {
        ComputeEigenvectors::Yes
    } else {
        ComputeEigenvectors::No
    };
    self_adjoint_evd_scratch::<T>(n, cv, par, Default::default())
}

/// Eigenvalues (and with `v`, eigenvectors as columns) of the symmetric n x n `a`.
pub(crate) fn eigh<T: Real>(
    n: usize,
    a: &[T],
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
    let amat = MatRef::from_column_major_slice(a, n, n);
    let wcol = ColMut::from_slice_mut(&mut w[..n]);
    let vmat = v.map(|v| MatMut::from_column_major_slice_mut(&mut v[..n * n], n, n));
    let ok = self_adjoint_evd(
        amat,
        wcol.as_diagonal_mut(),
        vmat,
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
    let (cu, cv) = svd_vector_kinds(m, n, u_cols, vectors);
    faer_svd_scratch::<T>(m, n, cu, cv, par, Default::default())
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
        Default::default(),
    );
    KernelStatus {
        iterations: 0,
        converged: ok.is_ok(),
    }
}
