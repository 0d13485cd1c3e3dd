//! The machinery behind the extern "C" functions: the panic guard, the thread-local
//! messages, and the checks that turn raw pointers and sizes into batchlin views.
//!
//! Nothing here is exported; `lib.rs` holds every symbol of the C API.

use crate::{batchlin_layout, batchlin_status};
use batchlin_core::view::{contiguous_strides, Layout};
use batchlin_core::{
    Backend, BatchMut, BatchRef, DType, DeviceWords, Error, Info, InfoOut, Memory, Op, Operation,
    Options, Outputs, Place, QrMode, Real, Request, Result, Stream, Uplo,
};
use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

// ---------------------------------------------------------------------------------------
// Status, the last error and the panic guard

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    static POLICY_SOURCE: RefCell<CString> = RefCell::new(CString::default());
    static PLAN_TEXT: RefCell<CString> = RefCell::new(CString::default());
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

/// Copies a plan's description into this thread's buffer.
pub(crate) fn plan_text_ptr(text: String) -> *const c_char {
    PLAN_TEXT
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
        Error::OutOfMemory(_) => batchlin_status::BATCHLIN_ERROR_OUT_OF_MEMORY,
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

/// A C boolean argument: 0 or 1, anything else an argument error (2 or -1 is more likely
/// a misplaced argument than a deliberate "true").
pub(crate) fn flag(name: &str, v: c_int) -> Result<bool> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::Argument(format!("{name} must be 0 or 1, got {v}"))),
    }
}

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

    /// A checked matrix output, `rows` x `cols` matrices.
    ///
    /// # Safety
    /// As `matrix_layout`.
    unsafe fn matrices(&self, batch: usize, rows: usize, cols: usize) -> Result<Checked<T>> {
        let l = self.matrix_layout(batch, rows, cols)?;
        Ok(Checked {
            name: self.name,
            ptr: self.ptr,
            count: l.element_count()?,
            shape: l.shape(),
            strides: strides_of(&l),
            vectors: false,
        })
    }

    /// A checked vector output (eigenvalues, singular values): `len` entries each.
    ///
    /// # Safety
    /// As `matrix_layout`.
    unsafe fn vectors(&self, batch: usize, len: usize) -> Result<Checked<T>> {
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
        Ok(Checked {
            name: self.name,
            ptr: self.ptr,
            count: layout.element_count()?,
            shape: shape.to_vec(),
            strides,
            vectors: true,
        })
    }
}

/// An output whose address, shape and strides have been checked; its view is made once
/// the memory it lies in is known.
struct Checked<T> {
    name: &'static str,
    ptr: *mut T,
    count: usize,
    shape: Vec<usize>,
    strides: Vec<isize>,
    vectors: bool,
}

impl<T> Checked<T> {
    /// # Safety
    /// The elements the shape and strides reach are writable memory of `mem`, touched by
    /// nothing else until the call (or, on a device, its queued work) is done.
    unsafe fn view<'a>(&self, mem: Memory) -> Result<BatchMut<'a, T>> {
        let (p, s, st) = (self.ptr, &self.shape[..], &self.strides[..]);
        match (mem, self.vectors) {
            (Memory::Host, false) => BatchMut::from_raw_parts(p, s, st),
            (Memory::Host, true) => BatchMut::from_raw_parts_vectors(p, s, st),
            (Memory::Cuda(d), false) => BatchMut::from_device(p, d, s, st),
            (Memory::Cuda(d), true) => BatchMut::from_device_vectors(p, d, s, st),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Where a call runs

/// Where a call runs, as its form says: host data under a backend (a
/// `BATCHLIN_BACKEND_*` code; AUTO for the contiguous forms), or device data queued on a
/// caller's stream (the `_cuda` forms).
#[derive(Copy, Clone, Debug)]
pub(crate) enum At {
    Host(i32),
    Cuda(*mut c_void),
}

impl At {
    /// The options of the call: the host forms' backend code checked here, in its place
    /// among the argument checks.
    fn options(self) -> Result<Options> {
        match self {
            At::Host(code) => Ok(Options::with_backend(backend(code)?)),
            At::Cuda(_) => Ok(Options::default()),
        }
    }
}

/// The memory of one buffer holding `count` elements: the host for the host forms; for
/// the device forms the device CUDA says the pointer belongs to (None for a buffer
/// holding nothing, which may be NULL: it takes the call's device).
fn memory_of(at: At, name: &str, addr: usize, count: usize) -> Result<Option<Memory>> {
    match at {
        At::Host(_) => Ok(Some(Memory::Host)),
        At::Cuda(_) if count == 0 => Ok(None),
        At::Cuda(_) => match batchlin_core::cuda::device_of(addr as *const c_void) {
            Ok(d) => Ok(Some(Memory::Cuda(d))),
            Err(Error::Argument(m)) => Err(Error::Argument(format!(
                "{name}: {m}; the _cuda forms take device pointers (cudaMalloc, cuMemAlloc, \
                 a CUDA tensor's data)"
            ))),
            Err(e) => Err(e),
        },
    }
}

/// The place of a call and the memory of each of its buffers (`(name, address, element
/// count)`, the input first). A device call runs on the device of its first buffer that
/// holds anything (device 0 when none does); each buffer is tagged with its own device,
/// so that one on another device is the core's clear error rather than a fault.
///
/// For the device forms this is the first question put to CUDA: every argument check
/// comes before it, so that argument errors read the same with and without a GPU.
fn placement(at: At, bufs: &[(&str, usize, usize)]) -> Result<(Place, Vec<Memory>)> {
    let mems = bufs
        .iter()
        .map(|&(name, addr, count)| memory_of(at, name, addr, count))
        .collect::<Result<Vec<_>>>()?;
    let place = match at {
        At::Host(_) => Place::Host,
        // SAFETY: the C API's contract for `stream` (NULL or a stream of the primary
        // context of the device the pointers belong to) is `from_raw`'s.
        At::Cuda(stream) => Place::Cuda {
            ordinal: match mems.iter().flatten().next() {
                Some(Memory::Cuda(d)) => *d,
                _ => 0,
            },
            stream: unsafe { Stream::from_raw(stream) },
        },
    };
    let call = match place {
        Place::Host => Memory::Host,
        Place::Cuda { ordinal, .. } => Memory::Cuda(ordinal),
    };
    Ok((place, mems.into_iter().map(|m| m.unwrap_or(call)).collect()))
}

/// The caller's info words (`batch` of them, or None when `info` is NULL), checked.
fn check_info(info: *mut u32, batch: usize) -> Result<usize> {
    if info.is_null() {
        return Ok(0);
    }
    check_buffer::<u32>("info", info as usize, &Layout::new(&[batch, 1], &[1, 1])?)?;
    Ok(batch)
}

/// The info words as the core takes them, in `mem`.
///
/// # Safety
/// A non-NULL `info` points to `batch` writable `uint32_t`s of `mem`.
unsafe fn info_out<'a>(info: *mut u32, batch: usize, mem: Memory) -> Result<Option<InfoOut<'a>>> {
    if info.is_null() {
        return Ok(None);
    }
    Ok(Some(match mem {
        Memory::Host if batch == 0 => InfoOut::Host(&mut []),
        // `Info` is `repr(transparent)` over `u32`.
        Memory::Host => InfoOut::Host(std::slice::from_raw_parts_mut(info as *mut Info, batch)),
        Memory::Cuda(d) => InfoOut::Device(DeviceWords::new(info, d, batch)?),
    }))
}

/// The input's view in `mem`.
///
/// # Safety
/// Every element `l` reaches from `ptr` is readable memory of `mem` during the call (or
/// its queued work).
unsafe fn input<'a, T>(ptr: *const T, l: &Layout, mem: Memory) -> Result<BatchRef<'a, T>> {
    match mem {
        Memory::Host => BatchRef::from_raw_parts(ptr, &l.shape(), &strides_of(l)),
        Memory::Cuda(d) => BatchRef::from_device(ptr, d, &l.shape(), &strides_of(l)),
    }
}

/// Places a checked call and passes it to the core: the input `a` (layout `al`), the
/// outputs in their order, the info words; `outputs` turns the outputs' views into the
/// operation's `Outputs`.
///
/// # Safety
/// The pointers describe memory as the C API's documentation asks.
unsafe fn submit<T: Real>(
    at: At,
    opts: &Options,
    operation: Operation,
    a: (*const T, &Layout),
    outs: &[&Checked<T>],
    info: (*mut u32, usize),
    outputs: impl FnOnce(Vec<BatchMut<'_, T>>) -> Outputs<'_, T>,
) -> Result<()> {
    let batch = a.1.batch();
    let mut bufs = vec![("a", a.0 as usize, a.1.element_count()?)];
    bufs.extend(outs.iter().map(|o| (o.name, o.ptr as usize, o.count)));
    bufs.push(("info", info.0 as usize, info.1));
    let (place, mems) = placement(at, &bufs)?;
    let views = outs
        .iter()
        .zip(&mems[1..])
        .map(|(o, &m)| o.view(m))
        .collect::<Result<Vec<_>>>()?;
    let req = Request {
        operation,
        a: input(a.0, a.1, mems[0])?,
        out: outputs(views),
        info: info_out(info.0, batch, mems[mems.len() - 1])?,
        place,
    };
    batchlin_core::run(req, opts)
}

// ---------------------------------------------------------------------------------------
// The operations: host and device forms alike, every one through `batchlin_core::run`
// (docs/ARCHITECTURE.md). The arguments are checked in one order for every form:
// sizes, mode / uplo, backend, the input, the outputs, the info words; only then, for
// the device forms, is CUDA asked where the pointers lie.

/// # Safety
/// The pointers and layouts describe memory as the C API's documentation asks.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn qr<T: Real>(
    a: Result<In<T>>,
    m: i64,
    n: i64,
    mode: i32,
    q: Out<T>,
    r: Out<T>,
    info: *mut u32,
    at: At,
) -> Result<()> {
    let a = a?;
    let (m, n) = (dim("m", m)?, dim("n", n)?);
    let mode = qr_mode(mode)?;
    let opts = at.options()?;
    let al = a.layout(m, n)?;
    let batch = al.batch();
    let (q_cols, r_rows) = mode.output_dims(m, n);
    let r = r.matrices(batch, r_rows, n)?;
    let q = match mode {
        QrMode::R => None, // q is not touched and may be anything
        _ => Some(q.matrices(batch, m, q_cols)?),
    };
    let words = check_info(info, batch)?;
    let outs: Vec<_> = q.iter().chain([&r]).collect();
    submit(
        at,
        &opts,
        Operation::Qr(mode),
        (a.ptr, &al),
        &outs,
        (info, words),
        |mut v| {
            let r = v.pop().expect("r");
            Outputs::Qr { q: v.pop(), r }
        },
    )
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
    at: At,
) -> Result<()> {
    let a = a?;
    let n = dim("n", n)?;
    let uplo = uplo(uplo_code)?;
    let opts = at.options()?;
    let al = a.layout(n, n)?;
    let batch = al.batch();
    let w = w.vectors(batch, n)?;
    let v = match v {
        Some(v) => Some(v.matrices(batch, n, n)?),
        None => None,
    };
    let words = check_info(info, batch)?;
    let outs: Vec<_> = [&w].into_iter().chain(v.iter()).collect();
    let vectors = v.is_some();
    submit(
        at,
        &opts,
        Operation::Eigh { uplo, vectors },
        (a.ptr, &al),
        &outs,
        (info, words),
        |mut views| {
            let v = if vectors { views.pop() } else { None };
            let w = views.pop().expect("w");
            Outputs::Eigh { w, v }
        },
    )
}

/// `uv` None for singular values alone.
///
/// # Safety
/// As `qr`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn svd<T: Real>(
    a: Result<In<T>>,
    m: i64,
    n: i64,
    full_matrices: bool,
    uv: Option<(Out<T>, Out<T>)>,
    s: Out<T>,
    info: *mut u32,
    at: At,
) -> Result<()> {
    let a = a?;
    let (m, n) = (dim("m", m)?, dim("n", n)?);
    let opts = at.options()?;
    let al = a.layout(m, n)?;
    let batch = al.batch();
    let k = m.min(n);
    let (u_cols, vh_rows) = if full_matrices { (m, n) } else { (k, k) };
    let s = s.vectors(batch, k)?;
    let uv = match uv {
        Some((u, vh)) => Some((
            u.matrices(batch, m, u_cols)?,
            vh.matrices(batch, vh_rows, n)?,
        )),
        None => None,
    };
    let words = check_info(info, batch)?;
    let outs: Vec<_> = match &uv {
        Some((u, vh)) => vec![u, &s, vh],
        None => vec![&s],
    };
    let vectors = uv.is_some();
    submit(
        at,
        &opts,
        Operation::Svd {
            full_matrices,
            vectors,
        },
        (a.ptr, &al),
        &outs,
        (info, words),
        |mut views| {
            if vectors {
                let vh = views.pop();
                let s = views.pop().expect("s");
                Outputs::Svd {
                    u: views.pop(),
                    s,
                    vh,
                }
            } else {
                Outputs::Svd {
                    u: None,
                    s: views.pop().expect("s"),
                    vh: None,
                }
            }
        },
    )
}

/// The plan for a call of `op` on data of `dtype` and shape [batch, m, n], on the host
/// (`device` -1) or on CUDA device `device`, as text.
pub(crate) fn plan(o: i32, d: i32, batch: i64, m: i64, n: i64, device: i32) -> Result<String> {
    let (o, d) = (op(o)?, dtype(d)?);
    let (batch, m, n) = (dim("batch", batch)?, dim("m", m)?, dim("n", n)?);
    let place = match device {
        -1 => Place::Host,
        d if d >= 0 => Place::Cuda {
            ordinal: d as usize,
            stream: Stream::DEFAULT,
        },
        d => {
            return Err(Error::Argument(format!(
                "unknown device {d}: expected -1 (host data) or a CUDA device ordinal (0, 1, ...)"
            )))
        }
    };
    Ok(batchlin_core::plan_for(o, d, batch, m, n, &place)?.to_string())
}

/// # Safety
/// As `batchlin_host_register`.
pub(crate) unsafe fn host_register(ptr: *mut c_void, bytes: usize) -> Result<()> {
    batchlin_core::cuda::host_buffers::register(ptr, bytes)
}

pub(crate) fn host_unregister(ptr: *mut c_void) -> Result<()> {
    batchlin_core::cuda::host_buffers::unregister(ptr)
}
