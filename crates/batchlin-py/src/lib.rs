//! `batchlin._native`: the Python module's native layer, a thin skin over the batchlin
//! core. The pure-Python package (`python/batchlin/`) converts whatever the caller has
//! (NumPy, torch, JAX, lists) into a NumPy view of the same memory, promotes dtypes as
//! numpy.linalg does, and wraps results in the caller's framework; this layer reads that
//! view in place (any strides, no copy), allocates the outputs as NumPy arrays, releases
//! the GIL and calls the core's `*_into` front door.
//!
//! Device memory (CUDA, QR only so far): `qr_cuda` takes raw device addresses and element
//! strides of the input (read in place), outputs the caller's framework allocated on the
//! same device, and the caller's stream; it queues the work there through the core's
//! `cuda::qr_device` and returns without synchronising (see `python/batchlin/_front.py`,
//! `device_call`, and `python/batchlin/torch.py`).

use batchlin::view::contiguous_strides;
use batchlin::{Backend, BatchMut, BatchRef, DType, Error, Info, Op, Options, QrMode, Real, Uplo};
use numpy::npyffi::NPY_TYPES;
use numpy::{
    Element, PyArray, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::ptr::NonNull;

mod xla_ffi;

pyo3::create_exception!(
    _native,
    UnavailableError,
    PyRuntimeError,
    "The backend or device a call needs is not available on this machine or in this build."
);

/// A core error as the Python exception its kind calls for: ValueError for what the
/// caller passed (shape, dtype, argument, output, overflow), UnavailableError for a
/// missing backend or device, RuntimeError for a device failure.
fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Shape(_)
        | Error::DType(_)
        | Error::Argument(_)
        | Error::Output(_)
        | Error::Overflow(_) => PyValueError::new_err(msg),
        Error::Unavailable(_) => UnavailableError::new_err(msg),
        Error::Device(_) => PyRuntimeError::new_err(msg),
    }
}

fn options(backend: Option<&str>) -> PyResult<Options> {
    Ok(Options::with_backend(match backend {
        None => Backend::Auto,
        Some(b) => b.parse().map_err(to_py)?,
    }))
}

/// The element types computed natively.
#[derive(Copy, Clone)]
enum Kind {
    F32,
    F64,
}

/// A host array as the core sees it: base pointer, shape, strides in elements.
struct HostView {
    kind: Kind,
    ptr: usize,
    shape: Vec<usize>,
    strides: Vec<isize>,
}

/// Read a NumPy array's memory where it lies. An array whose data or strides are not
/// aligned to its element size (rare: views into packed records) is copied first.
fn host_view<'py>(a: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyUntypedArray>, HostView)> {
    let arr = a.cast::<PyUntypedArray>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "batchlin._native expects a numpy.ndarray, got {}",
            a.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let dt = arr.dtype();
    let kind = match (dt.num(), dt.is_native_byteorder()) {
        (n, Some(true) | None) if n == NPY_TYPES::NPY_FLOAT as i32 => Kind::F32,
        (n, Some(true) | None) if n == NPY_TYPES::NPY_DOUBLE as i32 => Kind::F64,
        _ => {
            return Err(PyValueError::new_err(format!(
                "batchlin computes in float32 and float64 (native byte order); got {}",
                dt.str()?
            )))
        }
    };
    let size: usize = match kind {
        Kind::F32 => 4,
        Kind::F64 => 8,
    };
    let ptr = unsafe { (*arr.as_array_ptr()).fields.data } as usize;
    let aligned = ptr % size == 0 && arr.strides().iter().all(|s| s % size as isize == 0);
    if !aligned {
        let copy = arr.call_method0("copy")?.cast_into::<PyUntypedArray>()?;
        let (_, view) = host_view(copy.as_any())?;
        return Ok((copy, view));
    }
    let view = HostView {
        kind,
        ptr,
        shape: arr.shape().to_vec(),
        strides: arr.strides().iter().map(|s| s / size as isize).collect(),
    };
    Ok((arr.clone(), view))
}

/// A row-major output array and its address.
fn alloc<'py, T: Element>(py: Python<'py>, shape: &[usize]) -> (Bound<'py, PyArrayDyn<T>>, usize) {
    let a = PyArray::<T, _>::zeros(py, shape, false);
    let p = a.data() as usize;
    (a, p)
}

fn shape_of(batch: &[usize], tail: &[usize]) -> Vec<usize> {
    let mut s = batch.to_vec();
    s.extend_from_slice(tail);
    s
}

/// The batch shape and matrix size of an input, checked (at least two dimensions).
fn dims(v: &HostView) -> PyResult<(Vec<usize>, usize, usize)> {
    let nd = v.shape.len();
    if nd < 2 {
        return Err(PyValueError::new_err(format!(
            "batchlin shape error: expected an array of at least 2 dimensions [..., M, N], got {nd} (shape {:?})",
            v.shape
        )));
    }
    Ok((v.shape[..nd - 2].to_vec(), v.shape[nd - 2], v.shape[nd - 1]))
}

/// A row-major output for the core: (address, shape, strides).
struct Out {
    ptr: usize,
    shape: Vec<usize>,
    strides: Vec<isize>,
}

impl Out {
    fn new<T: Element>(py: Python<'_>, shape: Vec<usize>) -> PyResult<(Bound<'_, PyAny>, Out)> {
        let strides = contiguous_strides(&shape).map_err(to_py)?;
        let (a, ptr) = alloc::<T>(py, &shape);
        Ok((
            a.into_any(),
            Out {
                ptr,
                shape,
                strides,
            },
        ))
    }
    /// # Safety
    /// The array this describes must be alive and unshared for the view's use.
    unsafe fn view<'a, T>(&self) -> batchlin::Result<BatchMut<'a, T>> {
        BatchMut::from_raw_parts(self.ptr as *mut T, &self.shape, &self.strides)
    }
    /// # Safety
    /// As `view`.
    unsafe fn vectors<'a, T>(&self) -> batchlin::Result<BatchMut<'a, T>> {
        BatchMut::from_raw_parts_vectors(self.ptr as *mut T, &self.shape, &self.strides)
    }
}

/// The info words as a uint32 array of the batch shape, and its address.
fn info_out<'py>(py: Python<'py>, batch: &[usize]) -> (Bound<'py, PyAny>, usize, usize) {
    let (a, p) = alloc::<u32>(py, batch);
    let len = batch.iter().product();
    let p = if len == 0 {
        NonNull::<u32>::dangling().as_ptr() as usize
    } else {
        p
    };
    (a.into_any(), p, len)
}

/// # Safety
/// `ptr` must address `len` writable u32s (or be dangling with `len == 0`).
unsafe fn info_slice<'a>(ptr: usize, len: usize) -> &'a mut [Info] {
    std::slice::from_raw_parts_mut(ptr as *mut Info, len)
}

/// # Safety
/// The input array must stay alive and unwritten during the call.
unsafe fn input<'a, T>(v: &HostView) -> batchlin::Result<BatchRef<'a, T>> {
    BatchRef::from_raw_parts(v.ptr as *const T, &v.shape, &v.strides)
}

// ---------------------------------------------------------------------------------------
// QR

fn qr_typed<'py, T: Real + Element>(
    py: Python<'py>,
    v: &HostView,
    mode: QrMode,
    opts: Options,
) -> PyResult<Bound<'py, PyTuple>> {
    let (batch, m, n) = dims(v)?;
    let (q_cols, r_rows) = mode.output_dims(m, n);
    let (r, ro) = Out::new::<T>(py, shape_of(&batch, &[r_rows, n]))?;
    let q = match mode {
        QrMode::R => None,
        _ => Some(Out::new::<T>(py, shape_of(&batch, &[m, q_cols]))?),
    };
    let (info, ip, il) = info_out(py, &batch);
    let qo = q.as_ref().map(|(_, o)| o);
    py.detach(|| unsafe {
        let a = input::<T>(v)?;
        let mut qv = qo.map(|o| o.view::<T>()).transpose()?;
        batchlin::qr_into(
            &a,
            mode,
            qv.as_mut(),
            &mut ro.view::<T>()?,
            Some(info_slice(ip, il)),
            &opts,
        )
    })
    .map_err(to_py)?;
    let q = match q {
        Some((q, _)) => q,
        None => py.None().into_bound(py),
    };
    PyTuple::new(py, [q, r, info])
}

/// `qr(a, mode, backend=None) -> (Q or None, R, info)` for a float32/float64 ndarray.
#[pyfunction]
#[pyo3(signature = (a, mode="reduced", backend=None))]
fn qr<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    mode: &str,
    backend: Option<&str>,
) -> PyResult<Bound<'py, PyTuple>> {
    let mode: QrMode = mode.parse().map_err(to_py)?;
    let opts = options(backend)?;
    let (_keep, v) = host_view(a)?;
    match v.kind {
        Kind::F32 => qr_typed::<f32>(py, &v, mode, opts),
        Kind::F64 => qr_typed::<f64>(py, &v, mode, opts),
    }
}

// ---------------------------------------------------------------------------------------
// QR of CUDA device memory

/// The calling thread's current CUDA context (null when none).
///
/// # Safety
/// The CUDA driver library must be loaded (the backend opened).
unsafe fn current_context() -> cudarc::driver::sys::CUcontext {
    let mut ctx: cudarc::driver::sys::CUcontext = std::ptr::null_mut();
    if cudarc::driver::sys::cuCtxGetCurrent(&mut ctx) != cudarc::driver::sys::CUresult::CUDA_SUCCESS
    {
        return std::ptr::null_mut();
    }
    ctx
}

/// `qr_cuda(dtype, mode, batch, m, n, a_ptr, a_strides, q_ptr, r_ptr, info_ptr, stream)`:
/// QR of `batch` `m x n` matrices in CUDA memory of device 0 (its primary context, the
/// one PyTorch and CuPy use), queued on `stream` (a `CUstream` handle; 0 is the legacy
/// default stream). Returns once the work is queued: no host synchronisation, scratch
/// from the stream-ordered pool.
///
/// `dtype`: "float32" or "float64". `a_ptr` and `a_strides` (batch, row, column; in
/// elements): the input, read in place. The outputs are row-major and contiguous,
/// allocated by the caller on the same device: Q `[batch, m, q_cols]` (`q_ptr` None for
/// mode "r"), R `[batch, r_rows, n]` and `batch` 32-bit info words; q_cols and r_rows are
/// min(m, n) (reduced, "r") or m (complete). The caller keeps every buffer alive until
/// the stream has run the work.
#[pyfunction]
#[pyo3(signature = (dtype, mode, batch, m, n, a_ptr, a_strides, q_ptr, r_ptr, info_ptr, stream))]
fn qr_cuda(
    py: Python<'_>,
    dtype: &str,
    mode: &str,
    batch: usize,
    m: usize,
    n: usize,
    a_ptr: u64,
    a_strides: (i64, i64, i64),
    q_ptr: Option<u64>,
    r_ptr: u64,
    info_ptr: u64,
    stream: usize,
) -> PyResult<()> {
    use batchlin::cuda::{qr_device, CudaBackend, DevMat, QrKernel};
    let mode: QrMode = mode.parse().map_err(to_py)?;
    let dtype = match dtype {
        "float32" => DType::F32,
        "float64" => DType::F64,
        d => {
            return Err(PyValueError::new_err(format!(
                "batchlin dtype error: the GPU backend computes in float32 and float64, got {d:?}"
            )))
        }
    };
    if (mode == QrMode::R) != q_ptr.is_none() {
        return Err(PyValueError::new_err(
            "batchlin argument error: qr_cuda takes a Q output except in mode \"r\"",
        ));
    }
    let k = m.min(n);
    let (q_cols, r_rows) = match mode {
        QrMode::Complete => (m, m),
        _ => (k, k),
    };
    let be = CudaBackend::get().map_err(to_py)?;
    let a = DevMat {
        ptr: a_ptr,
        batch_stride: a_strides.0,
        row_stride: a_strides.1,
        col_stride: a_strides.2,
    };
    let row_major = |ptr: u64, rows: usize, cols: usize| DevMat {
        ptr,
        batch_stride: (rows * cols) as i64,
        row_stride: cols as i64,
        col_stride: 1,
    };
    let q = q_ptr.map(|p| row_major(p, m, q_cols));
    let r = row_major(r_ptr, r_rows, n);
    py.detach(move || unsafe {
        let stream = stream as batchlin::cuda::Stream;
        // The core makes device 0's primary context current; give the thread back the
        // context it had (the caller's framework may be working on another device).
        let prev = current_context();
        let res = match dtype {
            DType::F32 => qr_device::<f32>(
                be,
                stream,
                QrKernel::Auto,
                batch,
                m,
                n,
                a,
                q,
                q_cols,
                r,
                r_rows,
                info_ptr,
            ),
            _ => qr_device::<f64>(
                be,
                stream,
                QrKernel::Auto,
                batch,
                m,
                n,
                a,
                q,
                q_cols,
                r,
                r_rows,
                info_ptr,
            ),
        };
        if !prev.is_null() && prev != current_context() {
            let _ = cudarc::driver::sys::cuCtxSetCurrent(prev);
        }
        res
    })
    .map_err(to_py)
}

// ---------------------------------------------------------------------------------------
// eigh

fn eigh_typed<'py, T: Real + Element>(
    py: Python<'py>,
    v: &HostView,
    uplo: Uplo,
    vectors: bool,
    opts: Options,
) -> PyResult<Bound<'py, PyTuple>> {
    let (batch, m, n) = dims(v)?;
    if m != n {
        return Err(PyValueError::new_err(format!(
            "batchlin shape error: eigh needs square matrices [..., N, N], got [..., {m}, {n}]"
        )));
    }
    let (w, wo) = Out::new::<T>(py, shape_of(&batch, &[n]))?;
    let vecs = if vectors {
        Some(Out::new::<T>(py, shape_of(&batch, &[n, n]))?)
    } else {
        None
    };
    let (info, ip, il) = info_out(py, &batch);
    let vo = vecs.as_ref().map(|(_, o)| o);
    py.detach(|| unsafe {
        let a = input::<T>(v)?;
        let mut vv = vo.map(|o| o.view::<T>()).transpose()?;
        batchlin::eigh_into(
            &a,
            uplo,
            &mut wo.vectors::<T>()?,
            vv.as_mut(),
            Some(info_slice(ip, il)),
            &opts,
        )
    })
    .map_err(to_py)?;
    let vecs = match vecs {
        Some((x, _)) => x,
        None => py.None().into_bound(py),
    };
    PyTuple::new(py, [w, vecs, info])
}

/// `eigh(a, UPLO="L", vectors=True, backend=None) -> (w, V or None, info)`.
#[pyfunction]
#[pyo3(signature = (a, uplo="L", vectors=true, backend=None))]
fn eigh<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    uplo: &str,
    vectors: bool,
    backend: Option<&str>,
) -> PyResult<Bound<'py, PyTuple>> {
    let uplo: Uplo = uplo.parse().map_err(to_py)?;
    let opts = options(backend)?;
    let (_keep, v) = host_view(a)?;
    match v.kind {
        Kind::F32 => eigh_typed::<f32>(py, &v, uplo, vectors, opts),
        Kind::F64 => eigh_typed::<f64>(py, &v, uplo, vectors, opts),
    }
}

// ---------------------------------------------------------------------------------------
// SVD

fn svd_typed<'py, T: Real + Element>(
    py: Python<'py>,
    v: &HostView,
    full_matrices: bool,
    vectors: bool,
    opts: Options,
) -> PyResult<Bound<'py, PyTuple>> {
    let (batch, m, n) = dims(v)?;
    let k = m.min(n);
    let (u_cols, vh_rows) = if full_matrices { (m, n) } else { (k, k) };
    let (s, so) = Out::new::<T>(py, shape_of(&batch, &[k]))?;
    let uv = if vectors {
        Some((
            Out::new::<T>(py, shape_of(&batch, &[m, u_cols]))?,
            Out::new::<T>(py, shape_of(&batch, &[vh_rows, n]))?,
        ))
    } else {
        None
    };
    let (info, ip, il) = info_out(py, &batch);
    let outs = uv.as_ref().map(|((_, u), (_, vh))| (u, vh));
    py.detach(|| unsafe {
        let a = input::<T>(v)?;
        let (mut u, mut vh) = match outs {
            Some((u, vh)) => (Some(u.view::<T>()?), Some(vh.view::<T>()?)),
            None => (None, None),
        };
        batchlin::svd_into(
            &a,
            full_matrices,
            u.as_mut(),
            &mut so.vectors::<T>()?,
            vh.as_mut(),
            Some(info_slice(ip, il)),
            &opts,
        )
    })
    .map_err(to_py)?;
    let (u, vh) = match uv {
        Some(((u, _), (vh, _))) => (u, vh),
        None => (py.None().into_bound(py), py.None().into_bound(py)),
    };
    PyTuple::new(py, [u, s, vh, info])
}

/// `svd(a, full_matrices=False, vectors=True, backend=None) -> (U or None, S, Vh or None, info)`.
#[pyfunction]
#[pyo3(signature = (a, full_matrices=false, vectors=true, backend=None))]
fn svd<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    full_matrices: bool,
    vectors: bool,
    backend: Option<&str>,
) -> PyResult<Bound<'py, PyTuple>> {
    let opts = options(backend)?;
    let (_keep, v) = host_view(a)?;
    match v.kind {
        Kind::F32 => svd_typed::<f32>(py, &v, full_matrices, vectors, opts),
        Kind::F64 => svd_typed::<f64>(py, &v, full_matrices, vectors, opts),
    }
}

// ---------------------------------------------------------------------------------------
// XLA FFI (JAX)

/// The XLA FFI handlers (`xla_ffi`), for `jax.ffi.register_ffi_target`: a list of
/// (target name, platform, PyCapsule holding the `XLA_FFI_Handler*`).
#[pyfunction]
fn xla_ffi_targets(py: Python<'_>) -> PyResult<Vec<(String, String, Bound<'_, PyAny>)>> {
    xla_ffi::handlers()
        .into_iter()
        .map(|(name, platform, f)| {
            // A capsule without a name or destructor (what jax.ffi.pycapsule makes): XLA
            // reads the pointer whatever the name.
            let cap = unsafe {
                let p =
                    pyo3::ffi::PyCapsule_New(f as *mut std::ffi::c_void, std::ptr::null(), None);
                Bound::from_owned_ptr_or_err(py, p)?
            };
            Ok((name.to_string(), platform.to_string(), cap))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Routing and devices

/// The backend a call of `op` on an array of `shape` and `dtype` ("float32" or
/// "float64", after promotion) would run on: for host memory (`device="cpu"`), or for
/// CUDA memory (`"cuda"`, `"cuda:0"`: "cuda", QR only so far, device 0 only).
#[pyfunction]
#[pyo3(signature = (op, shape, dtype="float32", device="cpu"))]
fn backend_for(op: &str, shape: Vec<usize>, dtype: &str, device: &str) -> PyResult<String> {
    let op: Op = op.parse().map_err(to_py)?;
    let dtype = match dtype {
        "float32" => DType::F32,
        "float64" => DType::F64,
        d => {
            return Err(PyValueError::new_err(format!(
                "batchlin dtype error: batchlin computes in float32 and float64, got {d:?}"
            )))
        }
    };
    let nd = shape.len();
    if nd < 2 {
        return Err(PyValueError::new_err(format!(
            "batchlin shape error: expected a shape of at least 2 dimensions [..., M, N], got {shape:?}"
        )));
    }
    let (m, n) = (shape[nd - 2], shape[nd - 1]);
    if op == Op::Eigh && m != n {
        return Err(PyValueError::new_err(format!(
            "batchlin shape error: eigh needs square matrices [..., N, N], got [..., {m}, {n}]"
        )));
    }
    let batch: usize = shape[..nd - 2].iter().product();
    match device {
        "cpu" => batchlin::backend_for(op, dtype, batch, m, n)
            .map(|b| b.name().to_string())
            .map_err(to_py),
        d if d == "cuda" || d.starts_with("cuda:") => {
            if let Some(why) = batchlin::device::gpu_absent_reason() {
                return Err(UnavailableError::new_err(format!(
                    "batchlin unavailable error: no GPU backend for device {d:?}: {why}"
                )));
            }
            if !matches!(d, "cuda" | "cuda:0") {
                return Err(UnavailableError::new_err(format!(
                    "batchlin unavailable error: the GPU backend runs on CUDA device 0 only so far, not {d:?}"
                )));
            }
            if op != Op::Qr {
                return Err(UnavailableError::new_err(format!(
                    "batchlin unavailable error: the GPU backend does QR only so far: no {op} on {d:?}"
                )));
            }
            Ok(Backend::Cuda.name().to_string())
        }
        d => Err(PyValueError::new_err(format!(
            "batchlin argument error: unknown device {d:?}: expected \"cpu\" or \"cuda[:N]\""
        ))),
    }
}

/// Every device found, the CPU first: a list of dicts with kind, name and detail.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for d in batchlin::device::devices() {
        let e = PyDict::new(py);
        e.set_item("kind", d.kind)?;
        e.set_item("name", d.name)?;
        e.set_item("detail", d.detail)?;
        list.append(e)?;
    }
    Ok(list)
}

/// Why there is no usable GPU, or None when there is one.
#[pyfunction]
fn gpu_absent_reason() -> Option<String> {
    batchlin::device::gpu_absent_reason()
}

/// Where the routing decisions come from.
#[pyfunction]
fn policy_source() -> String {
    batchlin::policy_source()
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(qr, m)?)?;
    m.add_function(wrap_pyfunction!(eigh, m)?)?;
    m.add_function(wrap_pyfunction!(svd, m)?)?;
    m.add_function(wrap_pyfunction!(qr_cuda, m)?)?;
    m.add_function(wrap_pyfunction!(backend_for, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_absent_reason, m)?)?;
    m.add_function(wrap_pyfunction!(policy_source, m)?)?;
    m.add_function(wrap_pyfunction!(xla_ffi_targets, m)?)?;
    m.add(
        "XLA_FFI_API_VERSION",
        (xla_ffi::API_MAJOR, xla_ffi::API_MINOR),
    )?;
    m.add("UnavailableError", m.py().get_type::<UnavailableError>())?;
    m.add("INFO_NONFINITE", Info::NONFINITE)?;
    m.add("INFO_NOT_CONVERGED", Info::NOT_CONVERGED)?;
    m.add("INFO_RANK_DEFICIENT", Info::RANK_DEFICIENT)?;
    m.add(
        "BACKENDS",
        Backend::ALL.iter().map(|b| b.name()).collect::<Vec<_>>(),
    )?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
