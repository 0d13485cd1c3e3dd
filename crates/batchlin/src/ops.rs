//! The front door: one entry point per operation. It checks shapes, element types and
//! outputs, asks the router where to run, and hands the batch to that backend. The
//! `*_into` forms write into outputs the caller provides (views of any strides); the
//! others allocate row-major outputs and return them.

use crate::backend::{self, Backend, Op};
use crate::cpu::{self, CpuAlgo, OutMat};
use crate::error::{Error, Result};
use crate::info::Info;
use crate::scalar::Real;
use crate::view::{BatchMut, BatchRef, Layout, Tensor};
use std::str::FromStr;

/// numpy.linalg.qr's modes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum QrMode {
    /// Q `[..., M, K]`, R `[..., K, N]`, K = min(M, N).
    #[default]
    Reduced,
    /// Q `[..., M, M]`, R `[..., M, N]`.
    Complete,
    /// R `[..., K, N]` alone; Q is never formed.
    R,
}

impl FromStr for QrMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<QrMode> {
        match s {
            "reduced" => Ok(QrMode::Reduced),
            "complete" => Ok(QrMode::Complete),
            "r" => Ok(QrMode::R),
            _ => Err(Error::Argument(format!(
                "unknown QR mode {s:?}: expected \"reduced\", \"complete\" or \"r\""
            ))),
        }
    }
}

impl QrMode {
    /// Columns of Q (0 for mode "r") and rows of R for an m x n input.
    pub fn output_dims(self, m: usize, n: usize) -> (usize, usize) {
        let k = m.min(n);
        match self {
            QrMode::Reduced => (k, k),
            QrMode::Complete => (m, m),
            QrMode::R => (0, k),
        }
    }
}

/// Which triangle of a symmetric input is read.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Uplo {
    #[default]
    Lower,
    Upper,
}

impl FromStr for Uplo {
    type Err = Error;
    fn from_str(s: &str) -> Result<Uplo> {
        match s {
            "L" | "l" => Ok(Uplo::Lower),
            "U" | "u" => Ok(Uplo::Upper),
            _ => Err(Error::Argument(format!(
                "UPLO must be \"L\" or \"U\", got {s:?}"
            ))),
        }
    }
}

/// How a call runs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `Backend::Auto` (the default) lets the router choose.
    pub backend: Backend,
}

impl Options {
    pub fn with_backend(backend: Backend) -> Options {
        Options { backend }
    }
}

/// The backend that will run a call: the one forced, or the router's choice.
fn resolve(opts: &Options, op: Op, dtype: crate::DType, l: &Layout) -> Result<Backend> {
    match opts.backend {
        Backend::Auto => backend::backend_for(op, dtype, l.batch(), l.rows, l.cols),
        b => Ok(b),
    }
}

fn expect_shape(what: &str, got: &Layout, batch: &[usize], rows: usize, cols: usize) -> Result<()> {
    if got.batch_shape != batch || got.rows != rows || got.cols != cols {
        let mut want = batch.to_vec();
        want.extend([rows, cols]);
        return Err(Error::Output(format!(
            "{what} must have shape {want:?}, got {:?}",
            got.shape()
        )));
    }
    Ok(())
}

fn expect_vectors(what: &str, got: &Layout, batch: &[usize], len: usize) -> Result<()> {
    if got.batch_shape != batch || got.rows != 1 || got.cols != len {
        let mut want = batch.to_vec();
        want.push(len);
        let mut have = got.batch_shape.clone();
        have.push(got.cols);
        return Err(Error::Output(format!(
            "{what} must have shape {want:?}, got {have:?}"
        )));
    }
    Ok(())
}

fn expect_info(info: &Option<&mut [Info]>, batch: usize) -> Result<()> {
    match info {
        Some(i) if i.len() != batch => Err(Error::Output(format!(
            "info must have one entry per matrix ({batch}), got {}",
            i.len()
        ))),
        _ => Ok(()),
    }
}

fn unavailable(b: Backend, op: Op) -> Error {
    Error::Unavailable(format!(
        "backend {b} does not run {op} yet (the CUDA backend does QR only so far)"
    ))
}

/// The CPU algorithm backend `b` runs, or None when the batch is empty: nothing to
/// compute, and no scratch to size for matrices that may be huge.
fn cpu_algo(b: Backend, op: Op, l: &Layout) -> Result<Option<CpuAlgo>> {
    let algo = CpuAlgo::of(b).ok_or_else(|| unavailable(b, op))?;
    Ok((l.batch() > 0).then_some(algo))
}

fn out_mat<'a, T>(v: &'a mut BatchMut<'_, T>) -> OutMat<'a, T> {
    let raw = v.raw();
    OutMat {
        raw,
        layout: v.layout(),
    }
}

/// Run `f` with the caller's info slice or a scratch one.
fn with_info<R>(info: Option<&mut [Info]>, batch: usize, f: impl FnOnce(&mut [Info]) -> R) -> R {
    match info {
        Some(i) => f(i),
        None => f(&mut vec![Info::OK; batch]),
    }
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
    let l = a.layout();
    let (m, n) = (l.rows, l.cols);
    let (q_cols, r_rows) = mode.output_dims(m, n);
    expect_shape("R", r.layout(), &l.batch_shape, r_rows, n)?;
    match (&q, mode) {
        (Some(_), QrMode::R) => {
            return Err(Error::Output(
                "mode \"r\" returns R alone: pass no Q".into(),
            ))
        }
        (None, QrMode::Reduced | QrMode::Complete) => {
            return Err(Error::Output(format!("mode {mode:?} needs a Q output")))
        }
        (Some(q), _) => expect_shape("Q", q.layout(), &l.batch_shape, m, q_cols)?,
        (None, QrMode::R) => {}
    }
    expect_info(&info, l.batch())?;
    let b = resolve(opts, Op::Qr, T::DTYPE, l)?;
    if b == Backend::Cuda {
        return qr_cuda_host(a, q_cols, r_rows, q, r, info);
    }
    let Some(algo) = cpu_algo(b, Op::Qr, l)? else {
        return Ok(());
    };
    let out = cpu::QrOut {
        q: q.map(|q| out_mat(q)),
        r: out_mat(r),
    };
    with_info(info, l.batch(), |info| {
        cpu::qr_batch(algo, a, mode, out, info)
    });
    Ok(())
}

/// QR of host data on the GPU: staged through contiguous copies (the GPU path for data
/// already on the device is `cuda::qr_device`, which reads any strides in place).
fn qr_cuda_host<T: Real>(
    a: &BatchRef<T>,
    q_cols: usize,
    r_rows: usize,
    q: Option<&mut BatchMut<T>>,
    r: &mut BatchMut<T>,
    info: Option<&mut [Info]>,
) -> Result<()> {
    use crate::cuda::{qr_host, CudaBackend, HostMat, HostMatMut, QrKernel};
    let l = a.layout();
    let (batch, m, n) = (l.batch(), l.rows, l.cols);
    CudaBackend::get()?;
    if batch == 0 {
        return Ok(());
    }
    // Views that fill their span exactly go to the GPU as they are, so that ranges
    // registered with `cuda::registry` are copied to and from in place; others through
    // contiguous copies.
    let q_s = match &q {
        None => Some(None),
        Some(q) => q.layout().dense_strides().map(Some),
    };
    if let (Some(a_s), Some(q_s), Some(r_s)) = (l.dense_strides(), q_s, r.layout().dense_strides())
    {
        // SAFETY: each view's elements fill [ptr, ptr + count) (dense_strides), memory
        // the views borrow for this call.
        let (am, qh, rh) = unsafe {
            let am = HostMat {
                data: std::slice::from_raw_parts(a.as_ptr(), l.element_count()?),
                batch_stride: a_s[0],
                row_stride: a_s[1],
                col_stride: a_s[2],
            };
            let out = |v: &mut BatchMut<T>, s: [usize; 3]| -> Result<HostMatMut<'_, T>> {
                let count = v.layout().element_count()?;
                Ok(HostMatMut {
                    data: std::slice::from_raw_parts_mut(v.as_mut_ptr(), count),
                    batch_stride: s[0],
                    row_stride: s[1],
                    col_stride: s[2],
                })
            };
            let qh = match (q, q_s) {
                (Some(q), Some(s)) => Some(out(q, s)?),
                _ => None,
            };
            (am, qh, out(r, r_s)?)
        };
        return with_info(info, batch, |info| {
            qr_host(
                QrKernel::Auto,
                batch,
                m,
                n,
                am,
                qh,
                q_cols,
                rh,
                r_rows,
                info,
            )
        });
    }
    let ac = a.to_contiguous();
    let mut qc = q.as_ref().map(|_| vec![T::ZERO; batch * m * q_cols]);
    let mut rc = vec![T::ZERO; batch * r_rows * n];
    let qh = qc.as_deref_mut().map(|d| HostMatMut {
        data: d,
        batch_stride: m * q_cols,
        row_stride: q_cols,
        col_stride: 1,
    });
    let rh = HostMatMut {
        data: &mut rc,
        batch_stride: r_rows * n,
        row_stride: n,
        col_stride: 1,
    };
    let am = HostMat {
        data: &ac,
        batch_stride: m * n,
        row_stride: n,
        col_stride: 1,
    };
    with_info(info, batch, |info| {
        qr_host(
            QrKernel::Auto,
            batch,
            m,
            n,
            am,
            qh,
            q_cols,
            rh,
            r_rows,
            info,
        )
    })?;
    if let (Some(q), Some(qc)) = (q, qc) {
        q.copy_from_contiguous(&qc)?;
    }
    r.copy_from_contiguous(&rc)
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
    let mut info = vec![Info::OK; l.batch()];
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

fn shape_of(batch: &[usize], tail: &[usize]) -> Vec<usize> {
    let mut s = batch.to_vec();
    s.extend_from_slice(tail);
    s
}

// ---------------------------------------------------------------------------------------
// Symmetric eigendecomposition

fn expect_square(op: &str, l: &Layout) -> Result<()> {
    if l.rows != l.cols {
        return Err(Error::Shape(format!(
            "{op} needs square matrices [..., N, N], got [..., {}, {}]",
            l.rows, l.cols
        )));
    }
    Ok(())
}

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
    let l = a.layout();
    expect_square("eigh", l)?;
    let n = l.rows;
    expect_vectors("eigenvalues", w.layout(), &l.batch_shape, n)?;
    if let Some(v) = &v {
        expect_shape("eigenvectors", v.layout(), &l.batch_shape, n, n)?;
    }
    expect_info(&info, l.batch())?;
    let b = resolve(opts, Op::Eigh, T::DTYPE, l)?;
    let Some(algo) = cpu_algo(b, Op::Eigh, l)? else {
        return Ok(());
    };
    let out = cpu::EighOut {
        w: out_mat(w),
        v: v.map(|v| out_mat(v)),
    };
    with_info(info, l.batch(), |info| {
        cpu::eigh_batch(algo, a, uplo, out, info)
    });
    Ok(())
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
    let mut info = vec![Info::OK; l.batch()];
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
    let l = a.layout();
    let (m, n) = (l.rows, l.cols);
    let k = m.min(n);
    expect_vectors("S", s.layout(), &l.batch_shape, k)?;
    let (u_cols, vh_rows) = if full_matrices { (m, n) } else { (k, k) };
    match (&u, &vh) {
        (Some(u), Some(vh)) => {
            expect_shape("U", u.layout(), &l.batch_shape, m, u_cols)?;
            expect_shape("Vh", vh.layout(), &l.batch_shape, vh_rows, n)?;
        }
        (None, None) => {}
        _ => {
            return Err(Error::Output(
                "pass both U and Vh, or neither (singular values alone)".into(),
            ))
        }
    }
    expect_info(&info, l.batch())?;
    let b = resolve(opts, Op::Svd, T::DTYPE, l)?;
    let Some(algo) = cpu_algo(b, Op::Svd, l)? else {
        return Ok(());
    };
    let out = cpu::SvdOut {
        u: u.map(|u| out_mat(u)),
        s: out_mat(s),
        vh: vh.map(|v| out_mat(v)),
    };
    with_info(info, l.batch(), |info| {
        cpu::svd_batch(algo, a, full_matrices, out, info)
    });
    Ok(())
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
    let mut info = vec![Info::OK; l.batch()];
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
