//! The C API of batchlin: `libbatchlin.so`, `libbatchlin.a` and `include/batchlin.h`
//! (generated from this file by cbindgen; see build.rs).
//!
//! Conventions:
//! - Every operation comes in float (`batchlin_s*`) and double (`batchlin_d*`), as in
//!   LAPACK, and in two forms: contiguous row-major buffers (`batchlin_sqr`), and
//!   explicit strides (`batchlin_sqr_strided`) with a `batchlin_layout` per buffer and a
//!   backend choice.
//! - Every call returns a `batchlin_status`; on an error, `batchlin_last_error()` says
//!   what was wrong, in this thread. No panic crosses the boundary: a bug inside is
//!   `BATCHLIN_ERROR_INTERNAL`.
//! - Per-matrix info words (`uint32_t`, one per matrix) are optional: NULL skips them.
//! - Sizes are `int64_t`: negative ones, NULL where data is needed, buffers not aligned
//!   to their element type and sizes whose products overflow are error statuses.
//!   Zero-size batches and matrices are valid, as in numpy.linalg.
//!
//! - The CUDA backend (QR for now): `batchlin_sqr_cuda` / `batchlin_dqr_cuda` and their
//!   `_strided` forms take device pointers and a CUDA stream and return once the work is
//!   queued; `BATCHLIN_BACKEND_CUDA` runs the host-memory forms on the GPU, and
//!   `batchlin_host_register` / `batchlin_host_unregister` pin host buffers once so that
//!   those calls copy to and from them in place. On a machine without CUDA these are
//!   `BATCHLIN_ERROR_UNAVAILABLE` with the reason. Device forms of eigh and the SVD are
//!   reserved (`batchlin_seigh_cuda`, ...): not in this version.

#![allow(non_camel_case_types)]

mod imp;

use batchlin_core::Info;
use imp::{guard, guard_value, In, Out};
use std::ffi::{c_char, c_int, c_void};

// ---------------------------------------------------------------------------------------
// Types and constants

/// The outcome of a call. On an error, `batchlin_last_error()` has the message.
#[repr(i32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)]
pub enum batchlin_status {
    /// Success.
    BATCHLIN_OK = 0,
    /// A size is negative, or the input's shape does not fit the operation.
    BATCHLIN_ERROR_SHAPE = 1,
    /// An element type batchlin does not compute in.
    BATCHLIN_ERROR_DTYPE = 2,
    /// A bad argument: NULL where data is needed, a misaligned buffer, an unknown mode,
    /// uplo or backend.
    BATCHLIN_ERROR_ARGUMENT = 3,
    /// An output's layout does not fit: wrong batch count, or strides that overlap.
    BATCHLIN_ERROR_OUTPUT = 4,
    /// Sizes or strides whose products overflow.
    BATCHLIN_ERROR_OVERFLOW = 5,
    /// The backend asked for is not available in this build or on this machine.
    BATCHLIN_ERROR_UNAVAILABLE = 6,
    /// A device (CUDA) call failed.
    BATCHLIN_ERROR_DEVICE = 7,
    /// A bug inside batchlin, caught before it reached the caller; please report it
    /// with the message.
    BATCHLIN_ERROR_INTERNAL = 8,
}

/// numpy.linalg.qr's modes: `BATCHLIN_QR_REDUCED`, `BATCHLIN_QR_COMPLETE`, `BATCHLIN_QR_R`.
pub type batchlin_qr_mode = i32;
/// Q is M x K and R is K x N, K = min(M, N).
pub const BATCHLIN_QR_REDUCED: batchlin_qr_mode = 0;
/// Q is M x M and R is M x N.
pub const BATCHLIN_QR_COMPLETE: batchlin_qr_mode = 1;
/// R (K x N) alone; Q is never formed and `q` is not touched (it may be NULL).
pub const BATCHLIN_QR_R: batchlin_qr_mode = 2;

/// Which triangle of a symmetric input is read: `BATCHLIN_LOWER` ('L') or
/// `BATCHLIN_UPPER` ('U'); 'l' and 'u' are taken too.
pub type batchlin_uplo = i32;
/// The lower triangle, as the character 'L'.
pub const BATCHLIN_LOWER: batchlin_uplo = 76;
/// The upper triangle, as the character 'U'.
pub const BATCHLIN_UPPER: batchlin_uplo = 85;

/// Where a call runs (the strided forms take one; the contiguous forms use AUTO).
pub type batchlin_backend = i32;
/// The router chooses (the environment variable BATCHLIN_BACKEND overrides it).
pub const BATCHLIN_BACKEND_AUTO: batchlin_backend = 0;
/// batchlin's own small-matrix kernels on the CPU.
pub const BATCHLIN_BACKEND_CPU_SMALL: batchlin_backend = 1;
/// faer's decompositions on the CPU.
pub const BATCHLIN_BACKEND_CPU_FAER: batchlin_backend = 2;
/// The CUDA backend, for host data: QR only so far (eigh and the SVD give
/// BATCHLIN_ERROR_UNAVAILABLE), and BATCHLIN_ERROR_UNAVAILABLE on a machine without CUDA.
/// Synchronous: the results are in place when the call returns.
pub const BATCHLIN_BACKEND_CUDA: batchlin_backend = 3;

/// An operation, for `batchlin_backend_for`.
pub type batchlin_op = i32;
/// QR.
pub const BATCHLIN_OP_QR: batchlin_op = 0;
/// eigh and eigvalsh.
pub const BATCHLIN_OP_EIGH: batchlin_op = 1;
/// SVD and singular values.
pub const BATCHLIN_OP_SVD: batchlin_op = 2;

/// An element type, for `batchlin_backend_for`.
pub type batchlin_dtype = i32;
/// float.
pub const BATCHLIN_FLOAT32: batchlin_dtype = 0;
/// double.
pub const BATCHLIN_FLOAT64: batchlin_dtype = 1;

/// Info bit: the matrix held NaN or Inf; all its outputs are NaN. The other matrices of
/// the batch are unaffected.
pub const BATCHLIN_INFO_NONFINITE: u32 = 1;
/// Info bit: an iterative method (eigh, SVD) hit its iteration limit; the outputs are
/// the best reached.
pub const BATCHLIN_INFO_NOT_CONVERGED: u32 = 2;
/// Info bit: a diagonal entry of R, or a singular value, is zero to working precision.
pub const BATCHLIN_INFO_RANK_DEFICIENT: u32 = 4;
/// Info bits 16..32 hold the iterations (sweeps) an iterative method took:
/// `info >> BATCHLIN_INFO_ITERATIONS_SHIFT`.
pub const BATCHLIN_INFO_ITERATIONS_SHIFT: u32 = 16;

/// The version of the header; `batchlin_version()` gives the library's.
pub const BATCHLIN_VERSION_MAJOR: u32 = 0;
/// The version of the header.
pub const BATCHLIN_VERSION_MINOR: u32 = 1;
/// The version of the header.
pub const BATCHLIN_VERSION_PATCH: u32 = 0;

const _: () = {
    assert!(BATCHLIN_INFO_NONFINITE == Info::NONFINITE);
    assert!(BATCHLIN_INFO_NOT_CONVERGED == Info::NOT_CONVERGED);
    assert!(BATCHLIN_INFO_RANK_DEFICIENT == Info::RANK_DEFICIENT);
    assert!(std::mem::size_of::<Info>() == 4);
};

/// Where a batch of matrices lies in memory, in elements (not bytes): element (i, j) of
/// matrix b is `ptr[b * batch_stride + i * row_stride + j * col_stride]`.
///
/// Row-major contiguous M x N matrices: `{batch, M * N, N, 1}`; column-major (Fortran):
/// `{batch, M * N, 1, M}`. Strides may be zero or negative for inputs (ptr then points
/// at element (0, 0) of matrix 0); outputs must not overlap themselves.
///
/// For a batch of vectors (eigenvalues, singular values), entry j of vector b is
/// `ptr[b * batch_stride + j * col_stride]` and `row_stride` is ignored.
///
/// An output's `batch` must equal the input's.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct batchlin_layout {
    /// Number of matrices.
    pub batch: i64,
    /// Elements from one matrix to the next.
    pub batch_stride: i64,
    /// Elements from one row to the next.
    pub row_stride: i64,
    /// Elements from one column to the next.
    pub col_stride: i64,
}

// ---------------------------------------------------------------------------------------
// Library queries

/// The library's version, "MAJOR.MINOR.PATCH" (static; never NULL).
#[no_mangle]
pub extern "C" fn batchlin_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

/// The message of the last call on this thread that returned a status: empty after
/// success. Never NULL; valid until the next batchlin call on this thread.
#[no_mangle]
pub extern "C" fn batchlin_last_error() -> *const c_char {
    imp::last_error_ptr()
}

/// A short name for a status: "ok", "shape", "dtype", "argument", "output", "overflow",
/// "unavailable", "device", "internal", or "unknown" (static; never NULL).
#[no_mangle]
pub extern "C" fn batchlin_status_name(status: i32) -> *const c_char {
    let name = match status {
        0 => c"ok",
        1 => c"shape",
        2 => c"dtype",
        3 => c"argument",
        4 => c"output",
        5 => c"overflow",
        6 => c"unavailable",
        7 => c"device",
        8 => c"internal",
        _ => c"unknown",
    };
    name.as_ptr()
}

/// The backend a call of `op` on host data of element type `dtype` and shape
/// [batch, m, n] would run on: "cpu-small", "cpu-faer" or "cuda" (static). NULL on an
/// error (unknown op or dtype, a negative size, an invalid BATCHLIN_BACKEND), with
/// `batchlin_last_error()` saying why.
#[no_mangle]
pub extern "C" fn batchlin_backend_for(
    op: batchlin_op,
    dtype: batchlin_dtype,
    batch: i64,
    m: i64,
    n: i64,
) -> *const c_char {
    guard_value(std::ptr::null(), || {
        imp::backend_for(op, dtype, batch, m, n).map(|s| s.as_ptr())
    })
    .0
}

/// Where the routing decisions come from (a measured policy, the size rule, or the
/// environment's BATCHLIN_BACKEND). Never NULL; valid until the next call of this
/// function on this thread.
#[no_mangle]
pub extern "C" fn batchlin_policy_source() -> *const c_char {
    imp::policy_source_ptr()
}

/// A row-major (C order) contiguous layout of `batch` matrices of `rows` x `cols`.
/// Products that overflow saturate, so a call given the layout reports the overflow.
#[no_mangle]
pub extern "C" fn batchlin_layout_row_major(batch: i64, rows: i64, cols: i64) -> batchlin_layout {
    batchlin_layout {
        batch,
        batch_stride: rows.saturating_mul(cols),
        row_stride: cols,
        col_stride: 1,
    }
}

/// A column-major (Fortran order) contiguous layout of `batch` matrices of `rows` x
/// `cols`. Products that overflow saturate, as in `batchlin_layout_row_major`.
#[no_mangle]
pub extern "C" fn batchlin_layout_col_major(batch: i64, rows: i64, cols: i64) -> batchlin_layout {
    batchlin_layout {
        batch,
        batch_stride: rows.saturating_mul(cols),
        row_stride: 1,
        col_stride: rows,
    }
}

// ---------------------------------------------------------------------------------------
// QR

/// QR of `batch` row-major M x N float matrices `a` (contiguous, one after another),
/// as numpy.linalg.qr: Q into `q` (M x K, or M x M for BATCHLIN_QR_COMPLETE; not
/// touched, and may be NULL, for BATCHLIN_QR_R) and R into `r` (K x N, or M x N for
/// COMPLETE), K = min(M, N), both row-major contiguous. diag(R) >= 0.
///
/// `info` (NULL, or `batch` words) gets each matrix's BATCHLIN_INFO_* flags.
///
/// # Safety
/// Each non-NULL pointer must point to a buffer of the size the shapes give, the outputs
/// not overlapping each other or `a`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_sqr(
    a: *const f32,
    batch: i64,
    m: i64,
    n: i64,
    mode: batchlin_qr_mode,
    q: *mut f32,
    r: *mut f32,
    info: *mut u32,
) -> batchlin_status {
    guard(|| {
        imp::qr(
            Ok(In::contiguous(a, batch)),
            m,
            n,
            mode,
            Out::contiguous("q", q),
            Out::contiguous("r", r),
            info,
            BATCHLIN_BACKEND_AUTO,
        )
    })
}

/// `batchlin_sqr` for double.
///
/// # Safety
/// As `batchlin_sqr`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_dqr(
    a: *const f64,
    batch: i64,
    m: i64,
    n: i64,
    mode: batchlin_qr_mode,
    q: *mut f64,
    r: *mut f64,
    info: *mut u32,
) -> batchlin_status {
    guard(|| {
        imp::qr(
            Ok(In::contiguous(a, batch)),
            m,
            n,
            mode,
            Out::contiguous("q", q),
            Out::contiguous("r", r),
            info,
            BATCHLIN_BACKEND_AUTO,
        )
    })
}

/// `batchlin_sqr` with explicit layouts: `a_layout` (required) gives the batch count and
/// the input's strides; `q_layout` and `r_layout` give the outputs' (NULL: row-major
/// contiguous). `backend` is BATCHLIN_BACKEND_AUTO or one to force.
///
/// # Safety
/// Each non-NULL pointer must point to a buffer reaching every element its layout
/// gives, the outputs not overlapping each other or `a`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_sqr_strided(
    a: *const f32,
    a_layout: *const batchlin_layout,
    m: i64,
    n: i64,
    mode: batchlin_qr_mode,
    q: *mut f32,
    q_layout: *const batchlin_layout,
    r: *mut f32,
    r_layout: *const batchlin_layout,
    info: *mut u32,
    backend: batchlin_backend,
) -> batchlin_status {
    guard(|| {
        imp::qr(
            In::strided(a, a_layout),
            m,
            n,
            mode,
            Out::strided("q", q, q_layout),
            Out::strided("r", r, r_layout),
            info,
            backend,
        )
    })
}

/// `batchlin_sqr_strided` for double.
///
/// # Safety
/// As `batchlin_sqr_strided`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_dqr_strided(
    a: *const f64,
    a_layout: *const batchlin_layout,
    m: i64,
    n: i64,
    mode: batchlin_qr_mode,
    q: *mut f64,
    q_layout: *const batchlin_layout,
    r: *mut f64,
    r_layout: *const batchlin_layout,
    info: *mut u32,
    backend: batchlin_backend,
) -> batchlin_status {
    guard(|| {
        imp::qr(
            In::strided(a, a_layout),
            m,
            n,
            mode,
            Out::strided("q", q, q_layout),
            Out::strided("r", r, r_layout),
            info,
            backend,
        )
    })
}

// ---------------------------------------------------------------------------------------
// QR on the GPU: device pointers and a stream

/// `batchlin_sqr` on the GPU, for data already there: `a`, `q`, `r` and `info` are CUDA
/// device pointers (`cudaMalloc`, `cuMemAlloc`, a PyTorch or CuPy tensor's data; cast a
/// `CUdeviceptr` with `(float *)(uintptr_t)`) of device 0, and the work is queued on
/// `stream` (a `cudaStream_t` / `CUstream` of device 0's primary context, the one the
/// CUDA runtime uses; NULL: the legacy default stream).
///
/// Returns as soon as the work is queued: no host synchronisation, so the results are
/// there once the stream has reached this point (`cudaStreamSynchronize`, an event, or
/// later work on the same stream). Scratch comes from the device's stream-ordered pool.
/// `info` (NULL, or `batch` words of device memory) gets each matrix's BATCHLIN_INFO_*
/// flags on the device; `q` may be NULL for BATCHLIN_QR_R. Only addresses and sizes are
/// checked: pointers must be device memory of the right size, else the kernels fault
/// (and CUDA reports the fault on a later call on the stream).
///
/// A status is returned for errors found while queueing (bad arguments, no CUDA:
/// BATCHLIN_ERROR_UNAVAILABLE, a failed launch: BATCHLIN_ERROR_DEVICE).
///
/// # Safety
/// Each non-NULL pointer must be device memory holding the elements the shapes give,
/// valid until the queued work has run; the outputs must not overlap each other or `a`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_sqr_cuda(
    a: *const f32,
    batch: i64,
    m: i64,
    n: i64,
    mode: batchlin_qr_mode,
    q: *mut f32,
    r: *mut f32,
    info: *mut u32,
    stream: *mut c_void,
) -> batchlin_status {
    guard(|| {
        imp::qr_cuda(
            Ok(In::contiguous(a, batch)),
            m,
            n,
            mode,
            Out::contiguous("q", q),
            Out::contiguous("r", r),
            info,
            stream,
        )
    })
}

/// `batchlin_sqr_cuda` for double.
///
/// # Safety
/// As `batchlin_sqr_cuda`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_dqr_cuda(
    a: *const f64,
    batch: i64,
    m: i64,
    n: i64,
    mode: batchlin_qr_mode,
    q: *mut f64,
    r: *mut f64,
    info: *mut u32,
    stream: *mut c_void,
) -> batchlin_status {
    guard(|| {
        imp::qr_cuda(
            Ok(In::contiguous(a, batch)),
            m,
            n,
            mode,
            Out::contiguous("q", q),
            Out::contiguous("r", r),
            info,
            stream,
        )
    })
}

/// `batchlin_sqr_cuda` with explicit layouts, as `batchlin_sqr_strided` (the layouts are
/// host memory; the data device memory): the input is read in place whatever its strides
/// (column-major, padded, a zero batch stride), and the outputs are written through
/// theirs.
///
/// # Safety
/// As `batchlin_sqr_cuda`, each pointer reaching every element its layout gives.
#[no_mangle]
pub unsafe extern "C" fn batchlin_sqr_cuda_strided(
    a: *const f32,
    a_layout: *const batchlin_layout,
    m: i64,
    n: i64,
    mode: batchlin_qr_mode,
    q: *mut f32,
    q_layout: *const batchlin_layout,
    r: *mut f32,
    r_layout: *const batchlin_layout,
    info: *mut u32,
    stream: *mut c_void,
) -> batchlin_status {
    guard(|| {
        imp::qr_cuda(
            In::strided(a, a_layout),
            m,
            n,
            mode,
            Out::strided("q", q, q_layout),
            Out::strided("r", r, r_layout),
            info,
            stream,
        )
    })
}

/// `batchlin_sqr_cuda_strided` for double.
///
/// # Safety
/// As `batchlin_sqr_cuda_strided`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_dqr_cuda_strided(
    a: *const f64,
    a_layout: *const batchlin_layout,
    m: i64,
    n: i64,
    mode: batchlin_qr_mode,
    q: *mut f64,
    q_layout: *const batchlin_layout,
    r: *mut f64,
    r_layout: *const batchlin_layout,
    info: *mut u32,
    stream: *mut c_void,
) -> batchlin_status {
    guard(|| {
        imp::qr_cuda(
            In::strided(a, a_layout),
            m,
            n,
            mode,
            Out::strided("q", q, q_layout),
            Out::strided("r", r, r_layout),
            info,
            stream,
        )
    })
}

// ---------------------------------------------------------------------------------------
// Registered host buffers

/// Pins `bytes` of host memory at `ptr` (page-locks it for every CUDA context,
/// `cuMemHostRegister` with the portable flag) and remembers it, so that GPU calls on
/// host data (`BATCHLIN_BACKEND_CUDA`) copy straight to and from buffers inside it
/// instead of staging them: pinning costs time per megabyte, so do it once for buffers
/// used again and again. An input is used in place when its elements fill their span (no
/// padding, no reversed or repeated strides), an output when it is row-major contiguous;
/// others are staged as before.
///
/// Errors: NULL or `bytes` 0 (BATCHLIN_ERROR_ARGUMENT), a range overlapping one already
/// registered (ARGUMENT), no CUDA (UNAVAILABLE), the driver refusing (DEVICE).
/// Thread-safe.
///
/// # Safety
/// `ptr` must point to `bytes` bytes of host memory that stay allocated until
/// `batchlin_host_unregister(ptr)`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_host_register(ptr: *mut c_void, bytes: usize) -> batchlin_status {
    guard(|| imp::host_register(ptr, bytes))
}

/// Unpins a buffer registered with `batchlin_host_register` (`ptr` as given there); do
/// it before freeing the buffer. BATCHLIN_ERROR_ARGUMENT when `ptr` is not the start of
/// a registered buffer, or when a call on another thread is using the buffer now.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn batchlin_host_unregister(ptr: *mut c_void) -> batchlin_status {
    guard(|| imp::host_unregister(ptr))
}

// ---------------------------------------------------------------------------------------
// Symmetric eigendecomposition

/// Eigenvalues and eigenvectors of `batch` symmetric row-major N x N float matrices
/// `a`, as numpy.linalg.eigh, reading only the `uplo` triangle: eigenvalues ascending
/// into `w` (N per matrix), eigenvectors as the columns of `v` (N x N row-major), each
/// with its largest component positive.
///
/// `info` (NULL, or `batch` words) gets each matrix's BATCHLIN_INFO_* flags.
///
/// # Safety
/// As `batchlin_sqr`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_seigh(
    a: *const f32,
    batch: i64,
    n: i64,
    uplo: batchlin_uplo,
    w: *mut f32,
    v: *mut f32,
    info: *mut u32,
) -> batchlin_status {
    guard(|| {
        imp::eigh(
            Ok(In::contiguous(a, batch)),
            n,
            uplo,
            Out::contiguous("w", w),
            Some(Out::contiguous("v", v)),
            info,
            BATCHLIN_BACKEND_AUTO,
        )
    })
}

/// `batchlin_seigh` for double.
///
/// # Safety
/// As `batchlin_sqr`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_deigh(
    a: *const f64,
    batch: i64,
    n: i64,
    uplo: batchlin_uplo,
    w: *mut f64,
    v: *mut f64,
    info: *mut u32,
) -> batchlin_status {
    guard(|| {
        imp::eigh(
            Ok(In::contiguous(a, batch)),
            n,
            uplo,
            Out::contiguous("w", w),
            Some(Out::contiguous("v", v)),
            info,
            BATCHLIN_BACKEND_AUTO,
        )
    })
}

/// Eigenvalues alone (numpy.linalg.eigvalsh), ascending, into `w` (N per matrix).
///
/// # Safety
/// As `batchlin_sqr`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_seigvalsh(
    a: *const f32,
    batch: i64,
    n: i64,
    uplo: batchlin_uplo,
    w: *mut f32,
    info: *mut u32,
) -> batchlin_status {
    guard(|| {
        imp::eigh(
            Ok(In::contiguous(a, batch)),
            n,
            uplo,
            Out::contiguous("w", w),
            None,
            info,
            BATCHLIN_BACKEND_AUTO,
        )
    })
}

/// `batchlin_seigvalsh` for double.
///
/// # Safety
/// As `batchlin_sqr`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_deigvalsh(
    a: *const f64,
    batch: i64,
    n: i64,
    uplo: batchlin_uplo,
    w: *mut f64,
    info: *mut u32,
) -> batchlin_status {
    guard(|| {
        imp::eigh(
            Ok(In::contiguous(a, batch)),
            n,
            uplo,
            Out::contiguous("w", w),
            None,
            info,
            BATCHLIN_BACKEND_AUTO,
        )
    })
}

/// `batchlin_seigh` with explicit layouts (`a_layout` required, its matrices N x N;
/// `w_layout` a vector layout; NULL output layouts are contiguous) and a backend.
///
/// # Safety
/// As `batchlin_sqr_strided`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_seigh_strided(
    a: *const f32,
    a_layout: *const batchlin_layout,
    n: i64,
    uplo: batchlin_uplo,
    w: *mut f32,
    w_layout: *const batchlin_layout,
    v: *mut f32,
    v_layout: *const batchlin_layout,
    info: *mut u32,
    backend: batchlin_backend,
) -> batchlin_status {
    guard(|| {
        imp::eigh(
            In::strided(a, a_layout),
            n,
            uplo,
            Out::strided("w", w, w_layout),
            Some(Out::strided("v", v, v_layout)),
            info,
            backend,
        )
    })
}

/// `batchlin_seigh_strided` for double.
///
/// # Safety
/// As `batchlin_sqr_strided`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_deigh_strided(
    a: *const f64,
    a_layout: *const batchlin_layout,
    n: i64,
    uplo: batchlin_uplo,
    w: *mut f64,
    w_layout: *const batchlin_layout,
    v: *mut f64,
    v_layout: *const batchlin_layout,
    info: *mut u32,
    backend: batchlin_backend,
) -> batchlin_status {
    guard(|| {
        imp::eigh(
            In::strided(a, a_layout),
            n,
            uplo,
            Out::strided("w", w, w_layout),
            Some(Out::strided("v", v, v_layout)),
            info,
            backend,
        )
    })
}

/// `batchlin_seigvalsh` with explicit layouts and a backend.
///
/// # Safety
/// As `batchlin_sqr_strided`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_seigvalsh_strided(
    a: *const f32,
    a_layout: *const batchlin_layout,
    n: i64,
    uplo: batchlin_uplo,
    w: *mut f32,
    w_layout: *const batchlin_layout,
    info: *mut u32,
    backend: batchlin_backend,
) -> batchlin_status {
    guard(|| {
        imp::eigh(
            In::strided(a, a_layout),
            n,
            uplo,
            Out::strided("w", w, w_layout),
            None,
            info,
            backend,
        )
    })
}

/// `batchlin_seigvalsh_strided` for double.
///
/// # Safety
/// As `batchlin_sqr_strided`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_deigvalsh_strided(
    a: *const f64,
    a_layout: *const batchlin_layout,
    n: i64,
    uplo: batchlin_uplo,
    w: *mut f64,
    w_layout: *const batchlin_layout,
    info: *mut u32,
    backend: batchlin_backend,
) -> batchlin_status {
    guard(|| {
        imp::eigh(
            In::strided(a, a_layout),
            n,
            uplo,
            Out::strided("w", w, w_layout),
            None,
            info,
            backend,
        )
    })
}

// ---------------------------------------------------------------------------------------
// SVD

/// SVD of `batch` row-major M x N float matrices `a`, as numpy.linalg.svd: A = U
/// diag(S) Vh with S descending into `s` (K per matrix, K = min(M, N)), U into `u` (M x
/// K) and Vh into `vh` (K x N), or M x M and N x N when `full_matrices` is non-zero.
/// Each column of U has its largest component positive.
///
/// `info` (NULL, or `batch` words) gets each matrix's BATCHLIN_INFO_* flags.
///
/// # Safety
/// As `batchlin_sqr`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_ssvd(
    a: *const f32,
    batch: i64,
    m: i64,
    n: i64,
    full_matrices: c_int,
    u: *mut f32,
    s: *mut f32,
    vh: *mut f32,
    info: *mut u32,
) -> batchlin_status {
    guard(|| {
        imp::svd(
            Ok(In::contiguous(a, batch)),
            m,
            n,
            full_matrices != 0,
            Some((Out::contiguous("u", u), Out::contiguous("vh", vh))),
            Out::contiguous("s", s),
            info,
            BATCHLIN_BACKEND_AUTO,
        )
    })
}

/// `batchlin_ssvd` for double.
///
/// # Safety
/// As `batchlin_sqr`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_dsvd(
    a: *const f64,
    batch: i64,
    m: i64,
    n: i64,
    full_matrices: c_int,
    u: *mut f64,
    s: *mut f64,
    vh: *mut f64,
    info: *mut u32,
) -> batchlin_status {
    guard(|| {
        imp::svd(
            Ok(In::contiguous(a, batch)),
            m,
            n,
            full_matrices != 0,
            Some((Out::contiguous("u", u), Out::contiguous("vh", vh))),
            Out::contiguous("s", s),
            info,
            BATCHLIN_BACKEND_AUTO,
        )
    })
}

/// Singular values alone (numpy.linalg.svdvals), descending, into `s` (min(M, N) per
/// matrix).
///
/// # Safety
/// As `batchlin_sqr`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_ssvdvals(
    a: *const f32,
    batch: i64,
    m: i64,
    n: i64,
    s: *mut f32,
    info: *mut u32,
) -> batchlin_status {
    guard(|| {
        imp::svd(
            Ok(In::contiguous(a, batch)),
            m,
            n,
            false,
            None,
            Out::contiguous("s", s),
            info,
            BATCHLIN_BACKEND_AUTO,
        )
    })
}

/// `batchlin_ssvdvals` for double.
///
/// # Safety
/// As `batchlin_sqr`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_dsvdvals(
    a: *const f64,
    batch: i64,
    m: i64,
    n: i64,
    s: *mut f64,
    info: *mut u32,
) -> batchlin_status {
    guard(|| {
        imp::svd(
            Ok(In::contiguous(a, batch)),
            m,
            n,
            false,
            None,
            Out::contiguous("s", s),
            info,
            BATCHLIN_BACKEND_AUTO,
        )
    })
}

/// `batchlin_ssvd` with explicit layouts (`a_layout` required; `s_layout` a vector
/// layout; NULL output layouts are contiguous) and a backend.
///
/// # Safety
/// As `batchlin_sqr_strided`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_ssvd_strided(
    a: *const f32,
    a_layout: *const batchlin_layout,
    m: i64,
    n: i64,
    full_matrices: c_int,
    u: *mut f32,
    u_layout: *const batchlin_layout,
    s: *mut f32,
    s_layout: *const batchlin_layout,
    vh: *mut f32,
    vh_layout: *const batchlin_layout,
    info: *mut u32,
    backend: batchlin_backend,
) -> batchlin_status {
    guard(|| {
        imp::svd(
            In::strided(a, a_layout),
            m,
            n,
            full_matrices != 0,
            Some((
                Out::strided("u", u, u_layout),
                Out::strided("vh", vh, vh_layout),
            )),
            Out::strided("s", s, s_layout),
            info,
            backend,
        )
    })
}

/// `batchlin_ssvd_strided` for double.
///
/// # Safety
/// As `batchlin_sqr_strided`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_dsvd_strided(
    a: *const f64,
    a_layout: *const batchlin_layout,
    m: i64,
    n: i64,
    full_matrices: c_int,
    u: *mut f64,
    u_layout: *const batchlin_layout,
    s: *mut f64,
    s_layout: *const batchlin_layout,
    vh: *mut f64,
    vh_layout: *const batchlin_layout,
    info: *mut u32,
    backend: batchlin_backend,
) -> batchlin_status {
    guard(|| {
        imp::svd(
            In::strided(a, a_layout),
            m,
            n,
            full_matrices != 0,
            Some((
                Out::strided("u", u, u_layout),
                Out::strided("vh", vh, vh_layout),
            )),
            Out::strided("s", s, s_layout),
            info,
            backend,
        )
    })
}

/// `batchlin_ssvdvals` with explicit layouts and a backend.
///
/// # Safety
/// As `batchlin_sqr_strided`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_ssvdvals_strided(
    a: *const f32,
    a_layout: *const batchlin_layout,
    m: i64,
    n: i64,
    s: *mut f32,
    s_layout: *const batchlin_layout,
    info: *mut u32,
    backend: batchlin_backend,
) -> batchlin_status {
    guard(|| {
        imp::svd(
            In::strided(a, a_layout),
            m,
            n,
            false,
            None,
            Out::strided("s", s, s_layout),
            info,
            backend,
        )
    })
}

/// `batchlin_ssvdvals_strided` for double.
///
/// # Safety
/// As `batchlin_sqr_strided`.
#[no_mangle]
pub unsafe extern "C" fn batchlin_dsvdvals_strided(
    a: *const f64,
    a_layout: *const batchlin_layout,
    m: i64,
    n: i64,
    s: *mut f64,
    s_layout: *const batchlin_layout,
    info: *mut u32,
    backend: batchlin_backend,
) -> batchlin_status {
    guard(|| {
        imp::svd(
            In::strided(a, a_layout),
            m,
            n,
            false,
            None,
            Out::strided("s", s, s_layout),
            info,
            backend,
        )
    })
}

#[cfg(test)]
mod tests;
