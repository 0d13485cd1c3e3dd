//! `batchlin._native`: the Python module's native layer, a thin skin over the batchlin
//! core. The pure-Python package (`python/batchlin/`) converts whatever the caller has
//! (NumPy, torch, JAX, lists) into a NumPy view of the same memory, promotes dtypes as
//! numpy.linalg does, and wraps results in the caller's framework; this layer reads that
//! view in place (any strides, no copy), allocates the outputs as NumPy arrays, releases
//! the GIL and passes the call to the core's one entry, `batchlin::run`
//! (docs/ARCHITECTURE.md), through the glue all bindings of this crate share (`glue`).
//!
//! Device memory (CUDA): `DeviceCall` is the one device call, for every operation. Made
//! once per input layout (operation, dtype, shape, element strides), it is then called
//! with the raw device addresses of the input (read in place) and of the outputs
//! (allocated by the caller's framework on the input's device, one buffer or one each,
//! in the layout it gives), the device ordinal and the caller's stream; the core queues
//! the work there and returns without synchronising (see `python/batchlin/_front.py`,
//! `device_spec`). Which operations a GPU runs is the core's answer: an UnavailableError
//! with its message for the others.

use batchlin::view::contiguous_strides;
use batchlin::{
    Backend, DType, Error, Info, Operation, Options, Place, Problem, QrMode, Stream, Uplo,
};
use numpy::npyffi::NPY_TYPES;
use numpy::{
    Element, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

mod glue;
mod xla_ffi;

use glue::{Raw, RawInfo};

// Named `batchlin.UnavailableError` (its home for users), not `_native.`.
pyo3::create_exception!(
    batchlin,
    UnavailableError,
    PyRuntimeError,
    "The backend or device a call needs is not available on this machine or in this build."
);

/// A core error as the Python exception its kind calls for: ValueError for what the
/// caller passed (shape, dtype, argument, output, overflow), UnavailableError for a
/// missing backend or device, RuntimeError for a device failure, MemoryError (as
/// numpy.linalg raises) where the outputs or scratch could not be allocated.
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
        Error::OutOfMemory(_) => PyMemoryError::new_err(msg),
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

/// A row-major output array and its address. Allocated fallibly: where NumPy cannot
/// allocate it the call raises NumPy's MemoryError (numpy.linalg's), never a panic.
fn alloc<'py, T: Element>(
    py: Python<'py>,
    shape: &[usize],
) -> PyResult<(Bound<'py, PyArrayDyn<T>>, usize)> {
    let mut dims = Vec::with_capacity(shape.len());
    for &d in shape {
        dims.push(numpy::npyffi::npy_intp::try_from(d).map_err(|_| {
            PyValueError::new_err(format!(
                "batchlin overflow error: output shape {shape:?} is too large"
            ))
        })?);
    }
    // More than the machine holds: refused (NumPy would get it from an overcommitting
    // kernel, and the process be killed when the call writes it).
    let bytes = shape
        .iter()
        .fold(std::mem::size_of::<T>() as u128, |b, &d| b * d as u128);
    batchlin::error::check_memory(bytes, &format!("an output of shape {shape:?}"))
        .map_err(to_py)?;
    // SAFETY: PyArray_Zeros takes the dims it reads (ndim of them) and steals the
    // descriptor reference; a NULL result has the Python error set.
    let a = unsafe {
        let ptr = numpy::npyffi::PY_ARRAY_API.PyArray_Zeros(
            py,
            dims.len() as std::ffi::c_int,
            dims.as_mut_ptr(),
            T::get_dtype(py).into_dtype_ptr(),
            0,
        );
        Bound::from_owned_ptr_or_err(py, ptr)?.cast_into_unchecked::<PyArrayDyn<T>>()
    };
    let p = a.data() as usize;
    Ok((a, p))
}

/// A row-major output array of the caller's dtype and its raw description.
fn out_array<'py>(
    py: Python<'py>,
    kind: Kind,
    shape: &[usize],
) -> PyResult<(Bound<'py, PyAny>, Raw)> {
    let strides = contiguous_strides(shape).map_err(to_py)?;
    let (a, ptr) = match kind {
        Kind::F32 => {
            let (a, p) = alloc::<f32>(py, shape)?;
            (a.into_any(), p)
        }
        Kind::F64 => {
            let (a, p) = alloc::<f64>(py, shape)?;
            (a.into_any(), p)
        }
    };
    Ok((
        a,
        Raw {
            ptr,
            shape: shape.to_vec(),
            strides,
        },
    ))
}

/// `op` on a host array: every output slot (None where the variant does not compute it)
/// and the info words (uint32 of the batch shape), as a tuple.
fn host_run<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    op: Operation,
    backend: Option<&str>,
) -> PyResult<Bound<'py, PyTuple>> {
    let opts = options(backend)?;
    let (_keep, v) = host_view(a)?;
    let nd = v.shape.len();
    if nd < 2 {
        return Err(PyValueError::new_err(format!(
            "batchlin shape error: expected an array of at least 2 dimensions [..., M, N], got {nd} (shape {:?})",
            v.shape
        )));
    }
    let batch = &v.shape[..nd - 2];
    let slots = glue::slots(op, batch, v.shape[nd - 2], v.shape[nd - 1]).map_err(to_py)?;
    let mut items = Vec::with_capacity(slots.len() + 1);
    let mut outs = Vec::new();
    for s in &slots {
        match &s.shape {
            Some(shape) => {
                let (arr, raw) = out_array(py, v.kind, shape)?;
                items.push(arr);
                outs.push(raw);
            }
            None => items.push(py.None().into_bound(py)),
        }
    }
    let (info, ip) = alloc::<u32>(py, batch)?;
    let info_raw = RawInfo {
        ptr: ip,
        len: batch.iter().product(),
    };
    items.push(info.into_any());
    let dtype = match v.kind {
        Kind::F32 => DType::F32,
        Kind::F64 => DType::F64,
    };
    let a_raw = Raw {
        ptr: v.ptr,
        shape: v.shape.clone(),
        strides: v.strides.clone(),
    };
    // SAFETY: the input array is kept alive (`_keep`) and the outputs are fresh arrays
    // held in `items`, all in host memory, for the whole call.
    py.detach(|| unsafe {
        glue::run_raw(dtype, op, Place::Host, &a_raw, &outs, Some(info_raw), &opts)
    })
    .map_err(to_py)?;
    PyTuple::new(py, items)
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
    host_run(py, a, Operation::Qr(mode), backend)
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
    host_run(py, a, Operation::Eigh { uplo, vectors }, backend)
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
    let op = Operation::Svd {
        full_matrices,
        vectors,
    };
    host_run(py, a, op, backend)
}

// ---------------------------------------------------------------------------------------
// Device memory (CUDA): one entry for every operation

/// `output_shapes(variant, shape, uplo="L") -> [shape or None, ...]`: the output slots of
/// an operation variant ("qr", "qr-complete", "qr-r", "eigh", "eigvalsh", "svd",
/// "svd-full", "svdvals") on input of `shape`, in the order `DeviceCall` takes them and the
/// host calls return them (None: not computed by this variant). The info words have the
/// batch shape.
#[pyfunction]
#[pyo3(signature = (variant, shape, uplo="L"))]
fn output_shapes(
    variant: &str,
    shape: Vec<usize>,
    uplo: &str,
) -> PyResult<Vec<Option<Vec<usize>>>> {
    let op = glue::operation(variant, uplo).map_err(to_py)?;
    let (batch, m, n) = split(&shape)?;
    Ok(glue::slots(op, batch, m, n)
        .map_err(to_py)?
        .into_iter()
        .map(|s| s.shape)
        .collect())
}

/// Where each output of a device call starts in one buffer holding them all, and where
/// the info words start after them: cudaMalloc's alignment (the kernels' vector loads
/// need at most 16 bytes), as separately allocated outputs would have.
const OUT_ALIGN: usize = 256;

/// `DeviceCall(variant, dtype, shape, strides=None, uplo="L", backend=None)`: one
/// operation on CUDA memory for an input of this shape and these element strides (None:
/// row-major contiguous), checked and converted once; calling it queues the work.
///
/// The Python front doors keep one per input layout (`batchlin/_front.py`,
/// `device_spec`), so that a call passes only addresses: no strings parsed, no shapes
/// converted, no output shapes worked out per call. `variant` as `output_shapes` takes
/// it; `dtype` "float32" or "float64". The outputs are row-major contiguous, in slot
/// order; `outputs` gives each present slot's shape and its byte offset in one buffer of
/// `nbytes` holding them all, and `info_offset` where the info words (`info_len` u32s)
/// may follow them in that buffer (`info_offset + 4 * info_len` bytes in all).
///
/// `call(a, out, info, ordinal, stream)`: `a` the input's device address; `out` either
/// the address of one buffer laid out as `outputs` says or a tuple of one address per
/// present slot; `info` the info words' address (None: not wanted; the core writes them
/// to scratch of its own); `ordinal` the CUDA device holding every buffer, `stream` a
/// `CUstream` of that device's primary context (the one PyTorch and CuPy use; 0 is the
/// legacy default stream). Returns once the work is queued: no host synchronisation. The
/// caller keeps every buffer alive until the stream has run the work. What the device
/// cannot do (a missing ordinal, an operation without a CUDA kernel) comes back as the
/// core's UnavailableError.
#[pyclass(frozen, module = "batchlin._native")]
struct DeviceCall {
    op: Operation,
    dtype: DType,
    opts: Options,
    /// The input's layout (`ptr` unused).
    a: Raw,
    /// One per present slot: its layout, `ptr` its byte offset in the shared buffer.
    outs: Vec<Raw>,
    /// Per slot: the index into `outs`, None where the variant computes nothing.
    slots: Vec<Option<usize>>,
    info_len: usize,
    info_offset: usize,
    nbytes: usize,
}

/// The outputs' place: one buffer (the layout `DeviceCall.outputs` gives) or one address
/// per present slot.
#[derive(FromPyObject)]
enum OutAddrs {
    Base(usize),
    Each(Vec<usize>),
}

#[pymethods]
impl DeviceCall {
    #[new]
    #[pyo3(signature = (variant, dtype, shape, strides=None, uplo="L", backend=None))]
    fn new(
        variant: &str,
        dtype: &str,
        shape: Vec<usize>,
        strides: Option<Vec<isize>>,
        uplo: &str,
        backend: Option<&str>,
    ) -> PyResult<Self> {
        let op = glue::operation(variant, uplo).map_err(to_py)?;
        let dtype = dtype_arg(dtype)?;
        let opts = options(backend)?;
        let strides = match strides {
            Some(s) if s.len() != shape.len() => {
                return Err(PyValueError::new_err(format!(
                    "batchlin argument error: strides {s:?} do not match shape {shape:?}"
                )))
            }
            Some(s) => s,
            None => contiguous_strides(&shape).map_err(to_py)?,
        };
        let (batch, m, n) = split(&shape)?;
        let es = dtype.size();
        let mut outs = Vec::new();
        let mut slots = Vec::new();
        let mut end = 0usize;
        let too_large = || {
            PyValueError::new_err(format!(
                "batchlin overflow error: the outputs for shape {shape:?} are too large"
            ))
        };
        for slot in glue::slots(op, batch, m, n).map_err(to_py)? {
            let Some(out_shape) = slot.shape else {
                slots.push(None);
                continue;
            };
            let out_strides = contiguous_strides(&out_shape).map_err(to_py)?;
            let bytes = out_shape
                .iter()
                .try_fold(es, |b, &d| b.checked_mul(d))
                .ok_or_else(too_large)?;
            let at = end.next_multiple_of(OUT_ALIGN);
            end = at.checked_add(bytes).ok_or_else(too_large)?;
            slots.push(Some(outs.len()));
            outs.push(Raw {
                ptr: at,
                shape: out_shape,
                strides: out_strides,
            });
        }
        let info_len: usize = batch.iter().product();
        let info_offset = end.next_multiple_of(OUT_ALIGN);
        Ok(DeviceCall {
            op,
            dtype,
            opts,
            a: Raw {
                ptr: 0,
                shape,
                strides,
            },
            outs,
            slots,
            info_len,
            info_offset,
            nbytes: end,
        })
    }

    /// Per output slot: None where the variant computes nothing, else (shape, byte offset
    /// in one buffer holding every output).
    #[getter]
    fn outputs(&self) -> Vec<Option<(Vec<usize>, usize)>> {
        self.slots
            .iter()
            .map(|s| s.map(|i| (self.outs[i].shape.clone(), self.outs[i].ptr)))
            .collect()
    }

    /// Bytes of one buffer holding every output (the info words not included).
    #[getter]
    fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// Where the info words start in a buffer holding the outputs and them.
    #[getter]
    fn info_offset(&self) -> usize {
        self.info_offset
    }

    /// The number of info words (one a matrix; the batch shape is the input's).
    #[getter]
    fn info_len(&self) -> usize {
        self.info_len
    }

    #[pyo3(signature = (a, out, info, ordinal, stream))]
    fn __call__(
        &self,
        py: Python<'_>,
        a: usize,
        out: OutAddrs,
        info: Option<usize>,
        ordinal: usize,
        stream: usize,
    ) -> PyResult<()> {
        let addrs: Vec<usize> = match out {
            OutAddrs::Base(base) => self
                .outs
                .iter()
                .map(|o| base.checked_add(o.ptr))
                .collect::<Option<_>>()
                .ok_or_else(|| PyValueError::new_err("batchlin argument error: bad address"))?,
            OutAddrs::Each(v) => v,
        };
        if addrs.len() != self.outs.len() {
            return Err(PyValueError::new_err(format!(
                "batchlin argument error: {} takes {} output addresses, got {}",
                self.op.variant(),
                self.outs.len(),
                addrs.len()
            )));
        }
        let outs: Vec<Raw> = self
            .outs
            .iter()
            .zip(addrs)
            .map(|(o, ptr)| Raw { ptr, ..o.clone() })
            .collect();
        let a = Raw {
            ptr: a,
            ..self.a.clone()
        };
        let info = info.map(|ptr| RawInfo {
            ptr,
            len: self.info_len,
        });
        // SAFETY: the caller's contract above (device memory of `ordinal`, alive until the
        // stream has run the work; the stream of that device's primary context).
        let place = Place::Cuda {
            ordinal,
            stream: unsafe { Stream::from_raw(stream as *mut std::ffi::c_void) },
        };
        let (dtype, op, opts) = (self.dtype, self.op, &self.opts);
        py.detach(|| unsafe { glue::run_raw(dtype, op, place, &a, &outs, info, opts) })
            .map_err(to_py)
    }
}

/// A dtype name after promotion: "float32" or "float64".
fn dtype_arg(dtype: &str) -> PyResult<DType> {
    match dtype {
        "float32" => Ok(DType::F32),
        "float64" => Ok(DType::F64),
        d => Err(PyValueError::new_err(format!(
            "batchlin dtype error: batchlin computes in float32 and float64, got {d:?}"
        ))),
    }
}

/// (batch dims, m, n) of a shape of at least two dimensions.
fn split(shape: &[usize]) -> PyResult<(&[usize], usize, usize)> {
    let nd = shape.len();
    if nd < 2 {
        return Err(PyValueError::new_err(format!(
            "batchlin shape error: expected a shape of at least 2 dimensions [..., M, N], got {shape:?}"
        )));
    }
    Ok((&shape[..nd - 2], shape[nd - 2], shape[nd - 1]))
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

/// `plan(variant, shape, dtype="float32", device="cpu", backend=None) -> (backend,
/// description)`: how a call of `variant` (as `output_shapes` takes it) on an array of
/// `shape` and `dtype` (after promotion) in the memory of `device` ("cpu", "cuda",
/// "cuda:N") would run: the backend's name and the core's plan as it prints it (e.g.
/// "cuda:0 tile [rules]"). Raises what the call would (UnavailableError for a missing
/// device or an operation the device's backend has no kernel for).
#[pyfunction]
#[pyo3(signature = (variant, shape, dtype="float32", device="cpu", backend=None))]
fn plan(
    variant: &str,
    shape: Vec<usize>,
    dtype: &str,
    device: &str,
    backend: Option<&str>,
) -> PyResult<(String, String)> {
    let op = glue::operation(variant, "L").map_err(to_py)?;
    let dtype = dtype_arg(dtype)?;
    let (batch, m, n) = split(&shape)?;
    glue::slots(op, batch, m, n).map_err(to_py)?; // the shape the operation needs
    let place = glue::place(device, Stream::DEFAULT).map_err(to_py)?;
    let problem = Problem::new(op.variant(), dtype, batch.iter().product(), m, n);
    let p = batchlin::plan(&problem, &place, &options(backend)?).map_err(to_py)?;
    Ok((p.backend.name().to_string(), p.to_string()))
}

/// Every device found, the CPU first: dicts with "kind" ("cpu", "cuda:N"), "name",
/// "detail", "available" and "reason" (why a device is unusable, else None). Where no
/// CUDA device is usable, an entry of kind "cuda" (no ordinal) says why.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    let entry = |kind: String, name: String, detail: String, reason: Option<String>| {
        let e = PyDict::new(py);
        e.set_item("kind", kind)?;
        e.set_item("name", name)?;
        e.set_item("detail", detail)?;
        e.set_item("available", reason.is_none())?;
        e.set_item("reason", reason)?;
        PyResult::Ok(e)
    };
    let mut usable_gpu = false;
    for d in batchlin::device::devices() {
        // The core names a GPU it found but could not open "unusable", its detail why.
        let reason = (d.name == "unusable").then(|| d.detail.clone());
        usable_gpu |= d.kind.starts_with("cuda") && reason.is_none();
        list.append(entry(d.kind, d.name, d.detail, reason)?)?;
    }
    if !usable_gpu {
        let why =
            batchlin::device::gpu_absent_reason().unwrap_or_else(|| "no usable CUDA device".into());
        list.append(entry(
            "cuda".into(),
            "no GPU".into(),
            why.clone(),
            Some(why),
        )?)?;
    }
    Ok(list)
}

/// Whether calls on CUDA device `ordinal` may compile kernels with NVRTC (the build
/// embedded none for its architecture): the Python side makes NVRTC findable only then.
#[pyfunction]
fn nvrtc_needed(py: Python<'_>, ordinal: usize) -> bool {
    py.detach(|| batchlin::cuda::needs_nvrtc(ordinal))
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

/// Pin `bytes` of host memory at address `ptr` for the GPU's copies
/// (`cuda::host_buffers::register`). The Python side (`batchlin.host_register`) keeps the
/// array that owns the memory alive until `host_unregister`.
#[pyfunction]
fn host_register(py: Python<'_>, ptr: usize, bytes: usize) -> PyResult<()> {
    // SAFETY: the caller holds the owning array until `host_unregister(ptr)`.
    py.detach(|| unsafe {
        batchlin::cuda::host_buffers::register(ptr as *mut std::ffi::c_void, bytes)
    })
    .map_err(to_py)
}

/// Whether `ptr` is the start of (or inside) a registered buffer.
#[pyfunction]
fn host_registered(ptr: usize) -> bool {
    batchlin::cuda::host_buffers::is_registered(ptr as *const std::ffi::c_void, 1)
}

/// Unpin the memory registered at `ptr` by `host_register`.
#[pyfunction]
fn host_unregister(py: Python<'_>, ptr: usize) -> PyResult<()> {
    py.detach(|| batchlin::cuda::host_buffers::unregister(ptr as *mut std::ffi::c_void))
        .map_err(to_py)
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(qr, m)?)?;
    m.add_function(wrap_pyfunction!(eigh, m)?)?;
    m.add_function(wrap_pyfunction!(svd, m)?)?;
    m.add_function(wrap_pyfunction!(output_shapes, m)?)?;
    m.add_class::<DeviceCall>()?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_absent_reason, m)?)?;
    m.add_function(wrap_pyfunction!(nvrtc_needed, m)?)?;
    m.add_function(wrap_pyfunction!(policy_source, m)?)?;
    m.add_function(wrap_pyfunction!(host_register, m)?)?;
    m.add_function(wrap_pyfunction!(host_unregister, m)?)?;
    m.add_function(wrap_pyfunction!(host_registered, m)?)?;
    m.add_function(wrap_pyfunction!(xla_ffi_targets, m)?)?;
    m.add(
        "XLA_FFI_API_VERSION",
        (xla_ffi::API_MAJOR, xla_ffi::API_MINOR),
    )?;
    m.add("UnavailableError", m.py().get_type::<UnavailableError>())?;
    m.add("INFO_NONFINITE", Info::NONFINITE)?;
    m.add("INFO_NOT_CONVERGED", Info::NOT_CONVERGED)?;
    m.add("INFO_RANK_DEFICIENT", Info::RANK_DEFICIENT)?;
    m.add("INFO_OVERFLOW", Info::OVERFLOW)?;
    m.add(
        "BACKENDS",
        Backend::ALL.iter().map(|b| b.name()).collect::<Vec<_>>(),
    )?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
