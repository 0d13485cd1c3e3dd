//! The machinery behind the extern "C" functions: the panic guard, the thread-local
//! messages, and the checks that turn raw pointers and sizes into batchlin views.
//!
//! Nothing here is exported; `lib.rs` holds every symbol of the C API.

use crate::{batchlin_layout, batchlin_status};
use batchlin_core::view::{contiguous_strides, Layout};
use batchlin_core::{
    Backend, BatchMut, BatchRef, DType, Error, Info, Op, Options, QrMode, Real, Result, Uplo,
};
use std::cell::RefCell;
use std::ffi::c_void;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

// ---------------------------------------------------------------------------------------
// Status, the last error and the panic guard

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    static POLICY_SOURCE: RefCell<CString> = RefCell::new(CString::default());
}

/// What a pointer to thread-local text falls back to while the thread is being torn down.
const NO_TLS: &CStr = c"batchlin: thread-local storage is gone (the thread is exiting)";

/// A C string from any text: interior NULs become spaces, so this never fails.
fn c_string(text: String) -> CString {
    let mut bytes = text.into_bytes();
    for b in bytes.iter_mut().filter(|b| **b == 0) {
        *b = b' ';
    }
    CString::new(bytes).unwrap_or_default()
}

fn set_last_error(text: Option<String>) {
    let _ = LAST_ERROR.try_with(|e| {
        if let Ok(mut e) = e.try_borrow_mut() {
            *e = text.map(c_string).unwrap_or_default();
        }
    });
}

pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|e| e.try_borrow().map(|e| e.as_ptr()).ok())
        .ok()
        .flatten()
        .unwrap_or(NO_TLS.as_ptr())
}

/// Copies the routing policy's description into this thread's buffer.
pub(crate) fn policy_source_ptr() -> *const c_char {
    let text = catch_unwind(batchlin_core::policy_source)
        .unwrap_or_else(|_| "unknown (the policy query failed)".into());
    POLICY_SOURCE
        .try_with(|p| {
            let mut slot = p.try_borrow_mut().ok()?;
            *slot = c_string(text);
            Some(slot.as_ptr())
        })
        .ok()
        .flatten()
        .unwrap_or(NO_TLS.as_ptr())
}

pub(crate) fn status_of(e: &Error) -> batchlin_status {
    match e {
        Error::Shape(_) => batchlin_status::BATCHLIN_ERROR_SHAPE,
        Error::DType(_) => batchlin_status::BATCHLIN_ERROR_DTYPE,
        Error::Argument(_) => batchlin_status::BATCHLIN_ERROR_ARGUMENT,
        Error::Output(_) => batchlin_status::BATCHLIN_ERROR_OUTPUT,
        Error::Overflow(_) => batchlin_status::BATCHLIN_ERROR_OVERFLOW,
        Error::Unavailable(_) => batchlin_status::BATCHLIN_ERROR_UNAVAILABLE,
        Error::Device(_) => batchlin_status::BATCHLIN_ERROR_DEVICE,
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

/// Runs `f` with every panic caught, records the outcome in the thread's last error and
/// returns its value (or `fallback` on error) with the status.
pub(crate) fn guard_value<R>(fallback: R, f: impl FnOnce() -> Result<R>) -> (R, batchlin_status) {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => {
            set_last_error(None);
            (v, batchlin_status::BATCHLIN_OK)
        }
        Ok(Err(e)) => {
            set_last_error(Some(e.to_string()));
            (fallback, status_of(&e))
        }
        Err(payload) => {
            // Reading the payload cannot itself panic; dropping it could in theory, so
            // that too stays inside a guard.
            let msg = panic_message(&*payload);
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            set_last_error(Some(format!(
                "batchlin internal error (a bug: please report it): {msg}"
            )));
            (fallback, batchlin_status::BATCHLIN_ERROR_INTERNAL)
        }
    }
}

/// `guard_value` for the calls that return a status alone.
pub(crate) fn guard(f: impl FnOnce() -> Result<()>) -> batchlin_status {
    guard_value((), f).1
}

// ---------------------------------------------------------------------------------------
// Arguments

fn dim(name: &str, v: i64) -> Result<usize> {
    if v < 0 {
        return Err(Error::Shape(format!("{name} must be >= 0, got {v}")));
    }
    usize::try_from(v).map_err(|_| Error::Overflow(format!("{name} = {v} is too large")))
}

fn stride(name: &str, v: i64) -> Result<isize> {
    isize::try_from(v).map_err(|_| Error::Overflow(format!("stride {name} = {v} is too large")))
}

pub(crate) fn qr_mode(mode: i32) -> Result<QrMode> {
    match mode {
        crate::BATCHLIN_QR_REDUCED => Ok(QrMode::Reduced),
        crate::BATCHLIN_QR_COMPLETE => Ok(QrMode::Complete),
        crate::BATCHLIN_QR_R => Ok(QrMode::R),
        _ => Err(Error::Argument(format!(
            "unknown QR mode {mode}: expected BATCHLIN_QR_REDUCED (0), BATCHLIN_QR_COMPLETE (1) or BATCHLIN_QR_R (2)"
        ))),
    }
}

pub(crate) fn uplo(u: i32) -> Result<Uplo> {
    match u {
        crate::BATCHLIN_LOWER | 0x6c => Ok(Uplo::Lower), // 'L', 'l'
        crate::BATCHLIN_UPPER | 0x75 => Ok(Uplo::Upper), // 'U', 'u'
        _ => Err(Error::Argument(format!(
            "unknown uplo {u}: expected BATCHLIN_LOWER ('L') or BATCHLIN_UPPER ('U')"
        ))),
    }
}

pub(crate) fn backend(b: i32) -> Result<Backend> {
    match b {
        crate::BATCHLIN_BACKEND_AUTO => Ok(Backend::Auto),
        crate::BATCHLIN_BACKEND_CPU_SMALL => Ok(Backend::CpuSmall),
        crate::BATCHLIN_BACKEND_CPU_FAER => Ok(Backend::CpuFaer),
        crate::BATCHLIN_BACKEND_CUDA => Ok(Backend::Cuda),
        _ => Err(Error::Argument(format!(
            "unknown backend {b}: expected one of BATCHLIN_BACKEND_AUTO (0), _CPU_SMALL (1), _CPU_FAER (2), _CUDA (3)"
        ))),
    }
}

pub(crate) fn op(o: i32) -> Result<Op> {
    match o {
        crate::BATCHLIN_OP_QR => Ok(Op::Qr),
        crate::BATCHLIN_OP_EIGH => Ok(Op::Eigh),
        crate::BATCHLIN_OP_SVD => Ok(Op::Svd),
        _ => Err(Error::Argument(format!(
            "unknown operation {o}: expected BATCHLIN_OP_QR (0), BATCHLIN_OP_EIGH (1) or BATCHLIN_OP_SVD (2)"
        ))),
    }
}

pub(crate) fn dtype(d: i32) -> Result<DType> {
    match d {
        crate::BATCHLIN_FLOAT32 => Ok(DType::F32),
        crate::BATCHLIN_FLOAT64 => Ok(DType::F64),
        _ => Err(Error::DType(format!(
            "unknown element type {d}: expected BATCHLIN_FLOAT32 (0) or BATCHLIN_FLOAT64 (1)"
        ))),
    }
}

pub(crate) fn backend_name(b: Backend) -> &'static CStr {
    match b {
        Backend::Auto => c"auto",
        Backend::CpuSmall => c"cpu-small",
        Backend::CpuFaer => c"cpu-faer",
        Backend::Cuda => c"cuda",
    }
}

pub(crate) fn backend_for(o: i32, d: i32, batch: i64, m: i64, n: i64) -> Result<&'static CStr> {
    let (o, d) = (op(o)?, dtype(d)?);
    let (batch, m, n) = (dim("batch", batch)?, dim("m", m)?, dim("n", n)?);
    Ok(backend_name(batchlin_core::backend_for(o, d, batch, m, n)?))
}

/// Checks a buffer against the view it will be read or written through: NULL only when
/// it holds nothing, aligned to its element type, every element reachable without
/// overflowing an offset or the address space.
fn check_buffer<T>(name: &str, addr: usize, layout: &Layout) -> Result<()> {
    let count = layout.element_count()?;
    if addr == 0 {
        if count > 0 {
            return Err(Error::Argument(format!(
                "{name} is NULL but must hold {count} elements"
            )));
        }
        return Ok(());
    }
    let align = std::mem::align_of::<T>();
    if addr % align != 0 {
        return Err(Error::Argument(format!(
            "{name} ({addr:#x}) is not aligned to {align} bytes, as its element type needs"
        )));
    }
    if count == 0 {
        return Ok(());
    }
    let overflow = || {
        Error::Overflow(format!(
            "{name}: shape {:?} with strides reaching this far overflows the address space",
            layout.shape()
        ))
    };
    let (lo, hi) = layout.offset_range().ok_or_else(overflow)?;
    let size = std::mem::size_of::<T>() as i128;
    let first = addr as i128 + lo as i128 * size;
    let end = addr as i128 + (hi as i128 + 1) * size;
    if first < 0 || end > isize::MAX as i128 {
        return Err(overflow());
    }
    Ok(())
}

/// An input batch as the C caller described it: `strides` None for row-major contiguous.
pub(crate) struct In<T> {
    pub ptr: *const T,
    pub batch: i64,
    pub strides: Option<[i64; 3]>,
}

impl<T> In<T> {
    pub fn contiguous(ptr: *const T, batch: i64) -> In<T> {
        In {
            ptr,
            batch,
            strides: None,
        }
    }

    /// # Safety
    /// `layout` is NULL or points to a readable `batchlin_layout`.
    pub unsafe fn strided(ptr: *const T, layout: *const batchlin_layout) -> Result<In<T>> {
        let l = layout
            .as_ref()
            .ok_or_else(|| Error::Argument("a_layout is NULL".into()))?;
        Ok(In {
            ptr,
            batch: l.batch,
            strides: Some([l.batch_stride, l.row_stride, l.col_stride]),
        })
    }

    /// The checked layout of the input, `rows` x `cols` matrices (host or device memory:
    /// only addresses are checked, nothing is read).
    fn layout(&self, rows: usize, cols: usize) -> Result<Layout> {
        let batch = dim("batch", self.batch)?;
        let shape = [batch, rows, cols];
        let strides = match self.strides {
            None => contiguous_strides(&shape)?,
            Some([b, r, c]) => vec![
                stride("a_layout.batch_stride", b)?,
                stride("a_layout.row_stride", r)?,
                stride("a_layout.col_stride", c)?,
            ],
        };
        let layout = Layout::new(&shape, &strides)?;
        check_buffer::<T>("a", self.ptr as usize, &layout)?;
        Ok(layout)
    }

    /// The view of the input: `rows` x `cols` matrices.
    ///
    /// # Safety
    /// Every element the sizes and strides reach must be readable during the call.
    unsafe fn view<'a>(&self, rows: usize, cols: usize) -> Result<BatchRef<'a, T>> {
        let l = self.layout(rows, cols)?;
        BatchRef::from_raw_parts(self.ptr, &l.shape(), &strides_of(&l))
    }
}

/// The strides of a one-batch-dimension layout, as `[batch, row, col]`.
fn strides_of(l: &Layout) -> Vec<isize> {
    let mut s = l.batch_strides.clone();
    s.extend([l.row_stride, l.col_stride]);
    s
}

/// An output as the C caller described it: `layout` NULL for row-major contiguous.
pub(crate) struct Out<T> {
    pub name: &'static str,
    pub ptr: *mut T,
    pub layout: *const batchlin_layout,
}

impl<T> Out<T> {
    pub fn contiguous(name: &'static str, ptr: *mut T) -> Out<T> {
        Out {
            name,
            ptr,
            layout: std::ptr::null(),
        }
    }

    pub fn strided(name: &'static str, ptr: *mut T, layout: *const batchlin_layout) -> Out<T> {
        Out { name, ptr, layout }
    }

    /// The caller's layout, its batch checked against the input's.
    unsafe fn given(&self, batch: usize) -> Result<Option<&batchlin_layout>> {
        match self.layout.as_ref() {
            Some(l) if l.batch != batch as i64 => Err(Error::Output(format!(
                "{}_layout.batch is {} but the input holds {batch} matrices",
                self.name, l.batch
            ))),
            l => Ok(l),
        }
    }

    /// The checked layout of a matrix output, `rows` x `cols` matrices, its elements
    /// distinct (host or device memory: only addresses are checked).
    ///
    /// # Safety
    /// `self.layout` is NULL or points to a readable `batchlin_layout`.
    unsafe fn matrix_layout(&self, batch: usize, rows: usize, cols: usize) -> Result<Layout> {
        let shape = [batch, rows, cols];
        let strides = match self.given(batch)? {
            None => contiguous_strides(&shape)?,
            Some(l) => vec![
                stride("batch_stride", l.batch_stride)?,
                stride("row_stride", l.row_stride)?,
                stride("col_stride", l.col_stride)?,
            ],
        };
        let layout = Layout::new(&shape, &strides)?;
        check_buffer::<T>(self.name, self.ptr as usize, &layout)?;
        if !layout.is_non_overlapping() {
            return Err(Error::Output(format!(
                "{}: strides {strides:?} make elements overlap for shape {shape:?}",
                self.name
            )));
        }
        Ok(layout)
    }

    /// The view of a matrix output: `rows` x `cols` matrices.
    ///
    /// # Safety
    /// Every element the sizes and strides reach must be writable during the call and
    /// touched by nothing else.
    unsafe fn matrices<'a>(
        &self,
        batch: usize,
        rows: usize,
        cols: usize,
    ) -> Result<BatchMut<'a, T>> {
        let l = self.matrix_layout(batch, rows, cols)?;
        BatchMut::from_raw_parts(self.ptr, &l.shape(), &strides_of(&l))
    }

    /// The view of a vector output (eigenvalues, singular values): `len` entries each.
    ///
    /// # Safety
    /// As `matrices`.
    unsafe fn vectors<'a>(&self, batch: usize, len: usize) -> Result<BatchMut<'a, T>> {
        let shape = [batch, len];
        let strides = match self.given(batch)? {
            None => contiguous_strides(&shape)?,
            Some(l) => vec![
                stride("batch_stride", l.batch_stride)?,
                stride("col_stride", l.col_stride)?,
            ],
        };
        // Checked as the one-row matrices the core sees it as.
        let layout = Layout::new(&[batch, 1, len], &[strides[0], 0, strides[1]])?;
        check_buffer::<T>(self.name, self.ptr as usize, &layout)?;
        BatchMut::from_raw_parts_vectors(self.ptr, &shape, &strides)
    }
}

/// The caller's info words, or None when `info` is NULL.
///
/// # Safety
/// A non-NULL `info` points to `batch` writable `uint32_t`s.
unsafe fn info_words<'a>(info: *mut u32, batch: usize) -> Result<Option<&'a mut [Info]>> {
    if info.is_null() {
        return Ok(None);
    }
    let layout = Layout::new(&[batch, 1], &[1, 1])?;
    check_buffer::<u32>("info", info as usize, &layout)?;
    if batch == 0 {
        return Ok(Some(&mut []));
    }
    // `Info` is `repr(transparent)` over `u32`.
    Ok(Some(std::slice::from_raw_parts_mut(
        info as *mut Info,
        batch,
    )))
}

// ---------------------------------------------------------------------------------------
// The operations

/// # Safety
/// The pointers and layouts describe memory as the C API's documentation asks.
pub(crate) unsafe fn qr<T: Real>(
    a: Result<In<T>>,
    m: i64,
    n: i64,
    mode: i32,
    q: Out<T>,
    r: Out<T>,
    info: *mut u32,
    backend_code: i32,
) -> Result<()> {
    let a = a?;
    let (m, n) = (dim("m", m)?, dim("n", n)?);
    let mode = qr_mode(mode)?;
    let opts = Options::with_backend(backend(backend_code)?);
    let a = a.view(m, n)?;
    let batch = a.layout().batch();
    let (q_cols, r_rows) = mode.output_dims(m, n);
    let mut r = r.matrices(batch, r_rows, n)?;
    let mut q = match mode {
        QrMode::R => None, // q is not touched and may be anything
        _ => Some(q.matrices(batch, m, q_cols)?),
    };
    let info = info_words(info, batch)?;
    batchlin_core::qr_into(&a, mode, q.as_mut(), &mut r, info, &opts)
}

/// `v` None for eigenvalues alone.
///
/// # Safety
/// As `qr`.
pub(crate) unsafe fn eigh<T: Real>(
    a: Result<In<T>>,
    n: i64,
    uplo_code: i32,
    w: Out<T>,
    v: Option<Out<T>>,
    info: *mut u32,
    backend_code: i32,
) -> Result<()> {
    let a = a?;
    let n = dim("n", n)?;
    let uplo = uplo(uplo_code)?;
    let opts = Options::with_backend(backend(backend_code)?);
    let a = a.view(n, n)?;
    let batch = a.layout().batch();
    let mut w = w.vectors(batch, n)?;
    let mut v = match v {
        Some(v) => Some(v.matrices(batch, n, n)?),
        None => None,
    };
    let info = info_words(info, batch)?;
    batchlin_core::eigh_into(&a, uplo, &mut w, v.as_mut(), info, &opts)
}

/// `uv` None for singular values alone.
///
/// # Safety
/// As `qr`.
pub(crate) unsafe fn svd<T: Real>(
    a: Result<In<T>>,
    m: i64,
    n: i64,
    full_matrices: bool,
    uv: Option<(Out<T>, Out<T>)>,
    s: Out<T>,
    info: *mut u32,
    backend_code: i32,
) -> Result<()> {
    let a = a?;
    let (m, n) = (dim("m", m)?, dim("n", n)?);
    let opts = Options::with_backend(backend(backend_code)?);
    let a = a.view(m, n)?;
    let batch = a.layout().batch();
    let k = m.min(n);
    let (u_cols, vh_rows) = if full_matrices { (m, n) } else { (k, k) };
    let mut s = s.vectors(batch, k)?;
    let (mut u, mut vh) = match uv {
        Some((u, vh)) => (
            Some(u.matrices(batch, m, u_cols)?),
            Some(vh.matrices(batch, vh_rows, n)?),
        ),
        None => (None, None),
    };
    let info = info_words(info, batch)?;
    batchlin_core::svd_into(
        &a,
        full_matrices,
        u.as_mut(),
        &mut s,
        vh.as_mut(),
        info,
        &opts,
    )
}

// ---------------------------------------------------------------------------------------
// The CUDA device forms and registered host buffers

/// QR of device memory, queued on `stream`: every argument is checked (addresses only:
/// device memory is never read from the host) before CUDA is asked for, so that argument
/// errors read the same on machines with and without a GPU.
///
/// # Safety
/// The pointers are device memory of device 0 as the C API's documentation asks, and
/// `stream` is NULL or a stream of device 0's primary context.
pub(crate) unsafe fn qr_cuda<T: Real>(
    a: Result<In<T>>,
    m: i64,
    n: i64,
    mode: i32,
    q: Out<T>,
    r: Out<T>,
    info: *mut u32,
    stream: *mut c_void,
) -> Result<()> {
    use batchlin_core::cuda::{qr_device, CudaBackend, DevMat, QrKernel, Stream};
    let a = a?;
    let (m, n) = (dim("m", m)?, dim("n", n)?);
    let mode = qr_mode(mode)?;
    let al = a.layout(m, n)?;
    let batch = al.batch();
    let (q_cols, r_rows) = mode.output_dims(m, n);
    let rl = r.matrix_layout(batch, r_rows, n)?;
    let ql = match mode {
        QrMode::R => None, // q is not touched and may be anything
        _ => Some(q.matrix_layout(batch, m, q_cols)?),
    };
    if !info.is_null() {
        check_buffer::<u32>("info", info as usize, &Layout::new(&[batch, 1], &[1, 1])?)?;
    }
    let be = CudaBackend::get()?;
    let dev = |ptr: u64, l: &Layout| DevMat {
        ptr,
        batch_stride: l.batch_strides[0] as i64,
        row_stride: l.row_stride as i64,
        col_stride: l.col_stride as i64,
    };
    let am = dev(a.ptr as u64, &al);
    let qm = ql.as_ref().map(|l| dev(q.ptr as u64, l));
    let rm = dev(r.ptr as u64, &rl);
    qr_device::<T>(
        be,
        stream as Stream,
        QrKernel::Auto,
        batch,
        m,
        n,
        am,
        qm,
        q_cols,
        rm,
        r_rows,
        info as u64,
    )
}

/// # Safety
/// As `batchlin_host_register`.
pub(crate) unsafe fn host_register(ptr: *mut c_void, bytes: usize) -> Result<()> {
    batchlin_core::cuda::registry::register(ptr, bytes)
}

pub(crate) fn host_unregister(ptr: *mut c_void) -> Result<()> {
    batchlin_core::cuda::registry::unregister(ptr)
}
