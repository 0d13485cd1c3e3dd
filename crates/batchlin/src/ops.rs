//! The Rust front door: one function per operation, over host views. Each describes the
//! call as a [`Request`] and passes it to the one entry ([`entry::run`]), as the C, Python
//! and XLA front doors do. The `*_into` forms write into outputs the caller provides
//! (views of any strides); the others allocate row-major outputs and return them.

use crate::entry::{self, expect_square, shape_of, InfoOut, Outputs, Request};
use crate::error::{try_vec, Result};
use crate::info::Info;
use crate::place::Place;
use crate::problem::{Operation, Options, QrMode, Uplo};
use crate::scalar::Real;
use crate::view::{BatchMut, BatchRef, Tensor};

/// A host call through the entry; `info` None: the caller does not want the words.
fn host<T: Real>(
    operation: Operation,
    a: &BatchRef<T>,
    out: Outputs<'_, T>,
    info: Option<&mut [Info]>,
    opts: &Options,
) -> Result<()> {
    let req = Request {
        operation,
        a: a.clone(),
        out,
        info: info.map(InfoOut::Host),
        place: Place::Host,
    };
    entry::run(req, opts)
}

// ---------------------------------------------------------------------------------------
// QR

/// QR of every matrix of `a` into the caller's outputs: `q` (None for `QrMode::R`) and `r`.
///
/// Sign convention (every backend): the diagonal of R is nonnegative, so the
/// factorisation of a full-rank matrix is unique.
pub fn qr_into<T: Real>(
    a: &BatchRef<T>,
    mode: QrMode,
    q: Option<&mut BatchMut<T>>,
    r: &mut BatchMut<T>,
    info: Option<&mut [Info]>,
    opts: &Options,
) -> Result<()> {
    let out = Outputs::Qr {
        q: q.map(|q| q.reborrow()),
        r: r.reborrow(),
    };
    host(Operation::Qr(mode), a, out, info, opts)
}

/// QR results: `q` is None for `QrMode::R`.
#[derive(Clone, Debug)]
pub struct Qr<T> {
    pub q: Option<Tensor<T>>,
    pub r: Tensor<T>,
}

/// QR of every matrix of `a` (numpy.linalg.qr), returning row-major outputs and the
/// per-matrix info words.
pub fn qr_ex<T: Real>(a: &BatchRef<T>, mode: QrMode, opts: &Options) -> Result<(Qr<T>, Vec<Info>)> {
    let l = a.layout();
    let (m, n) = (l.rows, l.cols);
    let (q_cols, r_rows) = mode.output_dims(m, n);
    let mut r = Tensor::zeros(&shape_of(&l.batch_shape, &[r_rows, n]))?;
    let mut q = match mode {
        QrMode::R => None,
        _ => Some(Tensor::zeros(&shape_of(&l.batch_shape, &[m, q_cols]))?),
    };
    let mut info = try_vec(l.batch(), Info::OK, "the info words")?;
    {
        let mut qv = q.as_mut().map(|t| t.view_mut());
        qr_into(
            a,
            mode,
            qv.as_mut(),
            &mut r.view_mut(),
            Some(&mut info),
            opts,
        )?;
    }
    Ok((Qr { q, r }, info))
}

/// QR of every matrix of `a` (numpy.linalg.qr).
pub fn qr<T: Real>(a: &BatchRef<T>, mode: QrMode) -> Result<Qr<T>> {
    Ok(qr_ex(a, mode, &Options::default())?.0)
}

// ---------------------------------------------------------------------------------------
// Symmetric eigendecomposition

/// Eigenvalues (ascending, into `w`, a batch of vectors `[..., N]`) and, with `v`,
/// eigenvectors as the columns of `v` `[..., N, N]`, of the symmetric matrices of `a`,
/// reading only the `uplo` triangle.
///
/// Sign convention (every backend): each eigenvector's largest component is positive.
pub fn eigh_into<T: Real>(
    a: &BatchRef<T>,
    uplo: Uplo,
    w: &mut BatchMut<T>,
    v: Option<&mut BatchMut<T>>,
    info: Option<&mut [Info]>,
    opts: &Options,
) -> Result<()> {
    let vectors = v.is_some();
    let out = Outputs::Eigh {
        w: w.reborrow(),
        v: v.map(|v| v.reborrow()),
    };
    host(Operation::Eigh { uplo, vectors }, a, out, info, opts)
}

/// Eigendecomposition results: eigenvalues `w` `[..., N]` ascending, eigenvectors `v`
/// `[..., N, N]` as columns (None from `eigvalsh`).
#[derive(Clone, Debug)]
pub struct Eigh<T> {
    pub w: Tensor<T>,
    pub v: Option<Tensor<T>>,
}

/// Eigendecomposition with options, returning the per-matrix info words.
pub fn eigh_ex<T: Real>(
    a: &BatchRef<T>,
    uplo: Uplo,
    vectors: bool,
    opts: &Options,
) -> Result<(Eigh<T>, Vec<Info>)> {
    let l = a.layout();
    expect_square("eigh", l)?;
    let n = l.rows;
    let mut w = Tensor::zeros(&shape_of(&l.batch_shape, &[n]))?;
    let mut v = if vectors {
        Some(Tensor::zeros(&shape_of(&l.batch_shape, &[n, n]))?)
    } else {
        None
    };
    let mut info = try_vec(l.batch(), Info::OK, "the info words")?;
    {
        let mut vv = v.as_mut().map(|t| t.view_mut());
        eigh_into(
            a,
            uplo,
            &mut w.view_mut_vectors(),
            vv.as_mut(),
            Some(&mut info),
            opts,
        )?;
    }
    Ok((Eigh { w, v }, info))
}

/// numpy.linalg.eigh: eigenvalues ascending and eigenvectors as columns.
pub fn eigh<T: Real>(a: &BatchRef<T>, uplo: Uplo) -> Result<Eigh<T>> {
    Ok(eigh_ex(a, uplo, true, &Options::default())?.0)
}

/// numpy.linalg.eigvalsh: eigenvalues alone (cheaper).
pub fn eigvalsh<T: Real>(a: &BatchRef<T>, uplo: Uplo) -> Result<Tensor<T>> {
    Ok(eigh_ex(a, uplo, false, &Options::default())?.0.w)
}

// ---------------------------------------------------------------------------------------
// SVD

/// Singular values (descending, into `s` `[..., K]`) and, with `u` and `vh`, singular
/// vectors: U `[..., M, K]`, Vh `[..., K, N]` (with `full_matrices`, `[..., M, M]` and
/// `[..., N, N]`).
///
/// Sign convention (every backend): each column of U has its largest component positive.
pub fn svd_into<T: Real>(
    a: &BatchRef<T>,
    full_matrices: bool,
    u: Option<&mut BatchMut<T>>,
    s: &mut BatchMut<T>,
    vh: Option<&mut BatchMut<T>>,
    info: Option<&mut [Info]>,
    opts: &Options,
) -> Result<()> {
    let vectors = u.is_some() || vh.is_some();
    let out = Outputs::Svd {
        u: u.map(|u| u.reborrow()),
        s: s.reborrow(),
        vh: vh.map(|v| v.reborrow()),
    };
    let operation = Operation::Svd {
        full_matrices,
        vectors,
    };
    host(operation, a, out, info, opts)
}

/// SVD results: U, S (descending), Vh; U and Vh are None from `svdvals`.
#[derive(Clone, Debug)]
pub struct Svd<T> {
    pub u: Option<Tensor<T>>,
    pub s: Tensor<T>,
    pub vh: Option<Tensor<T>>,
}

/// SVD with options, returning the per-matrix info words. `vectors = false` gives the
/// singular values alone.
pub fn svd_ex<T: Real>(
    a: &BatchRef<T>,
    full_matrices: bool,
    vectors: bool,
    opts: &Options,
) -> Result<(Svd<T>, Vec<Info>)> {
    let l = a.layout();
    let (m, n) = (l.rows, l.cols);
    let k = m.min(n);
    let (u_cols, vh_rows) = if full_matrices { (m, n) } else { (k, k) };
    let mut s = Tensor::zeros(&shape_of(&l.batch_shape, &[k]))?;
    let (mut u, mut vh) = if vectors {
        (
            Some(Tensor::zeros(&shape_of(&l.batch_shape, &[m, u_cols]))?),
            Some(Tensor::zeros(&shape_of(&l.batch_shape, &[vh_rows, n]))?),
        )
    } else {
        (None, None)
    };
    let mut info = try_vec(l.batch(), Info::OK, "the info words")?;
    {
        let mut uv = u.as_mut().map(|t| t.view_mut());
        let mut vv = vh.as_mut().map(|t| t.view_mut());
        svd_into(
            a,
            full_matrices,
            uv.as_mut(),
            &mut s.view_mut_vectors(),
            vv.as_mut(),
            Some(&mut info),
            opts,
        )?;
    }
    Ok((Svd { u, s, vh }, info))
}

/// numpy.linalg.svd: A = U diag(S) Vh.
pub fn svd<T: Real>(a: &BatchRef<T>, full_matrices: bool) -> Result<Svd<T>> {
    Ok(svd_ex(a, full_matrices, true, &Options::default())?.0)
}

/// Singular values alone, descending (cheaper).
pub fn svdvals<T: Real>(a: &BatchRef<T>) -> Result<Tensor<T>> {
    Ok(svd_ex(a, false, false, &Options::default())?.0.s)
}
