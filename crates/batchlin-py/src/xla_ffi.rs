//! XLA FFI handlers: batchlin's operations as XLA custom calls, so that JAX arrays (on
//! the CPU and, for QR, on CUDA GPUs) are decomposed inside XLA's own execution, under
//! `jax.jit`, with XLA's buffers and stream.
//!
//! The types below mirror the stable C ABI of XLA's FFI (`xla/ffi/api/c_api.h`, API
//! version 0.3 as jaxlib 0.10 ships it): only the layouts, written here from the header's
//! declarations, so that nothing of XLA is linked. Const assertions pin every size and
//! offset this module relies on (checked against the header with a C compiler).
//!
//! Each handler is one `extern "C" fn(*mut CallFrame) -> *mut XlaError`:
//!
//! - called with the metadata extension (at registration; `api` is null then), it writes
//!   the API version it was written for and no traits, and returns;
//! - called for the instantiate, prepare or initialize stages, it has nothing to do;
//! - called to execute, it reads its one input buffer and its attributes, checks every
//!   output buffer's type and shape, and computes: on the CPU through the core's `*_into`
//!   front door (row-major contiguous buffers, as XLA lays them out by default), on CUDA
//!   through `cuda::qr_device` on the stream `XLA_FFI_Stream_Get` gives (no host
//!   synchronisation). eigh and the SVD have no CUDA backend yet: their CUDA handlers
//!   return an UNIMPLEMENTED error saying so.
//!
//! Errors come back as XLA FFI errors (`XLA_FFI_Error_Create`) with the core's message;
//! a panic is caught and becomes an INTERNAL error: nothing unwinds into XLA.
//!
//! Targets (registered from Python, `python/batchlin/_jax.py`): `batchlin_qr`
//! (attributes `mode`: "reduced" | "complete" | "r", `backend`; results Q (not for "r"),
//! R, info), `batchlin_eigh` (`uplo`: "L" | "U", `vectors`: bool, `backend`; results w,
//! V (with vectors), info) and `batchlin_svd` (`full_matrices`, `vectors`, `backend`;
//! results U, S, Vh (U and Vh with vectors), info). info is uint32 of the batch shape.

use batchlin::view::contiguous_strides;
use batchlin::{Backend, BatchMut, BatchRef, Error, Info, Options, QrMode, Real, Uplo};
use std::ffi::{c_char, c_int, c_void, CString};
use std::mem::{offset_of, size_of};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

// ---------------------------------------------------------------------------------------
// The C ABI (xla/ffi/api/c_api.h)

/// The API version these declarations follow (`XLA_FFI_API_MAJOR`, `XLA_FFI_API_MINOR`).
pub const API_MAJOR: c_int = 0;
pub const API_MINOR: c_int = 3;

/// `XLA_FFI_Error` (opaque, owned by XLA).
#[repr(C)]
pub struct XlaError {
    _opaque: [u8; 0],
}

const EXTENSION_METADATA: c_int = 1; // XLA_FFI_Extension_Metadata
const STAGE_EXECUTE: c_int = 3; // XLA_FFI_ExecutionStage_EXECUTE
const ARG_BUFFER: c_int = 1; // XLA_FFI_ArgType_BUFFER / XLA_FFI_RetType_BUFFER
const ATTR_SCALAR: c_int = 3; // XLA_FFI_AttrType_SCALAR
const ATTR_STRING: c_int = 4; // XLA_FFI_AttrType_STRING

// XLA_FFI_DataType values used here.
const DT_PRED: c_int = 1;
const DT_S8: c_int = 2;
const DT_S16: c_int = 3;
const DT_S32: c_int = 4;
const DT_S64: c_int = 5;
const DT_U8: c_int = 6;
const DT_U16: c_int = 7;
const DT_U32: c_int = 8;
const DT_U64: c_int = 9;
const DT_F32: c_int = 11;
const DT_F64: c_int = 12;

/// XLA_FFI_Error_Code values used here.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(C)]
pub enum Code {
    InvalidArgument = 3,
    FailedPrecondition = 9,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
}

#[repr(C)]
struct ExtensionBase {
    struct_size: usize,
    kind: c_int,
    next: *mut ExtensionBase,
}

#[repr(C)]
struct ApiVersion {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    major_version: c_int,
    minor_version: c_int,
}

#[repr(C)]
struct ErrorCreateArgs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    message: *const c_char,
    errc: c_int,
}

#[repr(C)]
struct Buffer {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    dtype: c_int,
    data: *mut c_void,
    rank: i64,
    dims: *const i64,
}

/// `XLA_FFI_Args` and `XLA_FFI_Rets` (the same layout).
#[repr(C)]
struct List {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    size: i64,
    types: *const c_int,
    items: *const *mut c_void,
}

#[repr(C)]
struct ByteSpan {
    ptr: *const c_char,
    len: usize,
}

#[repr(C)]
struct Scalar {
    dtype: c_int,
    value: *const c_void,
}

#[repr(C)]
struct Attrs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    size: i64,
    types: *const c_int,
    names: *const *const ByteSpan,
    attrs: *const *const c_void,
}

/// `XLA_FFI_CallFrame`.
#[repr(C)]
pub struct CallFrame {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    api: *const Api,
    ctx: *mut c_void,
    stage: c_int,
    args: List,
    rets: List,
    attrs: Attrs,
    future: *mut c_void,
}

#[repr(C)]
struct StreamGetArgs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    ctx: *mut c_void,
    stream: *mut c_void,
}

#[repr(C)]
struct DeviceOrdinalGetArgs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    ctx: *mut c_void,
    device_ordinal: i32,
}

#[repr(C)]
struct Metadata {
    struct_size: usize,
    api_version: ApiVersion,
    traits: u32,
    state_type_id: i64,
}

#[repr(C)]
struct MetadataExtension {
    extension_base: ExtensionBase,
    metadata: *mut Metadata,
}

type ErrorCreateFn = unsafe extern "C" fn(*mut ErrorCreateArgs) -> *mut XlaError;
type StreamGetFn = unsafe extern "C" fn(*mut StreamGetArgs) -> *mut XlaError;
type DeviceOrdinalGetFn = unsafe extern "C" fn(*mut DeviceOrdinalGetArgs) -> *mut XlaError;
/// An entry of the table this module never calls.
type Unused = *const c_void;

/// `XLA_FFI_Api`: the runtime's function table.
#[repr(C)]
#[allow(dead_code)] // the entries not called are there for their place in the layout
pub struct Api {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    api_version: ApiVersion,
    internal_api: Unused,
    error_create: Option<ErrorCreateFn>,
    error_get_message: Unused,
    error_destroy: Unused,
    handler_register: Unused,
    stream_get: Option<StreamGetFn>,
    type_register: Unused,
    execution_context_get: Unused,
    state_set: Unused,
    state_get: Unused,
    device_memory_allocate: Unused,
    device_memory_free: Unused,
    thread_pool_schedule: Unused,
    thread_pool_num_threads: Unused,
    future_create: Unused,
    future_set_available: Unused,
    future_set_error: Unused,
    run_id_get: Unused,
    device_ordinal_get: Option<DeviceOrdinalGetFn>,
}

/// `XLA_FFI_STRUCT_SIZE(T, last)`: the bytes up to the end of the field named in the
/// header's `XLA_FFI_DEFINE_STRUCT_TRAITS` (trailing padding and later fields excluded).
macro_rules! struct_size {
    ($t:ty, $last:ident, $last_t:ty) => {
        offset_of!($t, $last) + size_of::<$last_t>()
    };
}

const ERROR_CREATE_ARGS_SIZE: usize = struct_size!(ErrorCreateArgs, errc, c_int);
const BUFFER_SIZE: usize = struct_size!(Buffer, dims, *const i64);
const CALL_FRAME_SIZE: usize = struct_size!(CallFrame, attrs, Attrs);
const STREAM_GET_ARGS_SIZE: usize = struct_size!(StreamGetArgs, stream, *mut c_void);
const DEVICE_ORDINAL_GET_ARGS_SIZE: usize = struct_size!(DeviceOrdinalGetArgs, device_ordinal, i32);
const API_VERSION_SIZE: usize = struct_size!(ApiVersion, minor_version, c_int);
const METADATA_SIZE: usize = struct_size!(Metadata, traits, u32);
const METADATA_EXTENSION_SIZE: usize = struct_size!(MetadataExtension, metadata, *mut Metadata);

// The layout of c_api.h on 64-bit targets, as a C compiler computes it from the header
// (sizeof, offsetof and XLA_FFI_..._STRUCT_SIZE).
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(size_of::<ExtensionBase>() == 24);
    assert!(size_of::<ApiVersion>() == 24 && API_VERSION_SIZE == 24);
    assert!(size_of::<ErrorCreateArgs>() == 32 && ERROR_CREATE_ARGS_SIZE == 28);
    assert!(size_of::<Buffer>() == 48 && BUFFER_SIZE == 48);
    assert!(offset_of!(Buffer, dtype) == 16 && offset_of!(Buffer, data) == 24);
    assert!(offset_of!(Buffer, rank) == 32 && offset_of!(Buffer, dims) == 40);
    assert!(size_of::<List>() == 40 && size_of::<Attrs>() == 48);
    assert!(size_of::<ByteSpan>() == 16 && size_of::<Scalar>() == 16);
    assert!(size_of::<CallFrame>() == 176 && CALL_FRAME_SIZE == 168);
    assert!(offset_of!(CallFrame, api) == 16 && offset_of!(CallFrame, ctx) == 24);
    assert!(offset_of!(CallFrame, stage) == 32 && offset_of!(CallFrame, args) == 40);
    assert!(offset_of!(CallFrame, rets) == 80 && offset_of!(CallFrame, attrs) == 120);
    assert!(offset_of!(CallFrame, future) == 168);
    assert!(size_of::<StreamGetArgs>() == 32 && STREAM_GET_ARGS_SIZE == 32);
    assert!(size_of::<DeviceOrdinalGetArgs>() == 32 && DEVICE_ORDINAL_GET_ARGS_SIZE == 28);
    assert!(size_of::<Metadata>() == 48 && METADATA_SIZE == 36);
    assert!(offset_of!(Metadata, api_version) == 8 && offset_of!(Metadata, traits) == 32);
    assert!(size_of::<MetadataExtension>() == 32 && METADATA_EXTENSION_SIZE == 32);
    assert!(size_of::<Api>() == 192);
    assert!(offset_of!(Api, error_create) == 48 && offset_of!(Api, stream_get) == 80);
    assert!(offset_of!(Api, device_ordinal_get) == 184);
};

// ---------------------------------------------------------------------------------------
// Errors

/// An error on its way back to XLA: ours, or one XLA's API returned (passed on as it is).
enum Fail {
    Msg { code: Code, msg: String },
    Xla(*mut XlaError),
}

type Res<T> = std::result::Result<T, Fail>;

fn fail(code: Code, msg: impl Into<String>) -> Fail {
    Fail::Msg {
        code,
        msg: msg.into(),
    }
}

fn invalid(msg: impl Into<String>) -> Fail {
    fail(Code::InvalidArgument, msg)
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        let code = match e {
            Error::Shape(_)
            | Error::DType(_)
            | Error::Argument(_)
            | Error::Output(_)
            | Error::Overflow(_) => Code::InvalidArgument,
            Error::Unavailable(_) => Code::Unimplemented,
            Error::Device(_) => Code::Internal,
        };
        fail(code, e.to_string())
    }
}

/// Whether the runtime's table reaches the entry ending at `end` bytes.
///
/// # Safety
/// `api` must be null or point to the runtime's `XLA_FFI_Api`.
unsafe fn api_has(api: *const Api, end: usize) -> bool {
    !api.is_null() && (*api).struct_size >= end
}

/// An `XLA_FFI_Error` carrying `msg` (null where the runtime gave no API to create one).
///
/// # Safety
/// As `api_has`.
unsafe fn xla_error(api: *const Api, code: Code, msg: &str) -> *mut XlaError {
    if !api_has(api, offset_of!(Api, error_create) + size_of::<Unused>()) {
        return std::ptr::null_mut();
    }
    let Some(create) = (*api).error_create else {
        return std::ptr::null_mut();
    };
    let text = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    let mut args = ErrorCreateArgs {
        struct_size: ERROR_CREATE_ARGS_SIZE,
        extension_start: std::ptr::null_mut(),
        message: text.as_ptr(),
        errc: code as c_int,
    };
    // XLA copies the message into its status.
    create(&mut args)
}

// ---------------------------------------------------------------------------------------
// Entry

#[derive(Copy, Clone, PartialEq, Eq)]
enum Platform {
    Cpu,
    Cuda,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Target {
    Qr,
    Eigh,
    Svd,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Qr => "batchlin_qr",
            Target::Eigh => "batchlin_eigh",
            Target::Svd => "batchlin_svd",
        }
    }
}

/// Every handler: the metadata query, the stages with nothing to do, and the execute
/// stage under `catch_unwind`.
///
/// # Safety
/// `frame` must be null or a call frame XLA built.
unsafe fn entry(frame: *mut CallFrame, target: Target, platform: Platform) -> *mut XlaError {
    if frame.is_null() {
        return std::ptr::null_mut();
    }
    let api = (*frame).api;
    let run = catch_unwind(AssertUnwindSafe(|| {
        let f = &*frame;
        let ext = f.extension_start;
        if !ext.is_null() && (*ext).kind == EXTENSION_METADATA {
            return metadata(api, ext as *mut MetadataExtension);
        }
        if api.is_null() {
            return std::ptr::null_mut();
        }
        if f.struct_size < CALL_FRAME_SIZE {
            return xla_error(
                api,
                Code::InvalidArgument,
                &format!(
                    "{}: XLA_FFI_CallFrame of {} bytes, expected at least {CALL_FRAME_SIZE} \
                     (this batchlin speaks XLA FFI API {API_MAJOR}.{API_MINOR})",
                    target.name(),
                    f.struct_size
                ),
            );
        }
        if f.stage != STAGE_EXECUTE {
            return std::ptr::null_mut(); // instantiate, prepare, initialize: nothing to do
        }
        match execute(f, target, platform) {
            Ok(()) => std::ptr::null_mut(),
            Err(Fail::Msg { code, msg }) => xla_error(api, code, &msg),
            Err(Fail::Xla(e)) => e,
        }
    }));
    run.unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        xla_error(
            api,
            Code::Internal,
            &format!(
                "{}: internal error in batchlin (a bug): {what}",
                target.name()
            ),
        )
    })
}

/// Answer the metadata query: the API version these declarations follow, no traits (not
/// declared command-buffer compatible: the CUDA path may compile kernels and allocate
/// pool scratch on first use), no state.
///
/// # Safety
/// `ext` must point to the metadata extension XLA passed.
unsafe fn metadata(api: *const Api, ext: *mut MetadataExtension) -> *mut XlaError {
    let e = &mut *ext;
    if e.extension_base.struct_size < METADATA_EXTENSION_SIZE
        || e.metadata.is_null()
        || (*e.metadata).struct_size < METADATA_SIZE
    {
        return xla_error(
            api,
            Code::InvalidArgument,
            "batchlin: XLA FFI metadata structures smaller than API 0.3's",
        );
    }
    let m = &mut *e.metadata;
    m.api_version = ApiVersion {
        struct_size: API_VERSION_SIZE,
        extension_start: std::ptr::null_mut(),
        major_version: API_MAJOR,
        minor_version: API_MINOR,
    };
    m.traits = 0;
    std::ptr::null_mut()
}

// ---------------------------------------------------------------------------------------
// Reading the call frame

/// A buffer as XLA passed it: element type, address, dimensions.
struct Buf {
    dtype: c_int,
    data: *mut c_void,
    dims: Vec<usize>,
}

impl Buf {
    fn elements(&self) -> usize {
        self.dims.iter().product()
    }
}

fn dtype_name(dt: c_int) -> String {
    match dt {
        DT_F32 => "float32".into(),
        DT_F64 => "float64".into(),
        DT_U32 => "uint32".into(),
        DT_PRED => "bool".into(),
        10 => "float16".into(),
        16 => "bfloat16".into(),
        15 | 18 => "complex".into(),
        DT_S8..=DT_S64 => "a signed integer type".into(),
        DT_U8..=DT_U64 => "an unsigned integer type".into(),
        d => format!("XLA type {d}"),
    }
}

/// The buffers of an argument or result list.
///
/// # Safety
/// `l` must be a list of the call frame XLA built.
unsafe fn buffers(l: &List, what: &str, target: Target) -> Res<Vec<Buf>> {
    let n = usize::try_from(l.size).map_err(|_| invalid(format!("{what}: negative count")))?;
    if n > 0 && (l.types.is_null() || l.items.is_null()) {
        return Err(invalid(format!(
            "{}: {what} list without entries",
            target.name()
        )));
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if *l.types.add(i) != ARG_BUFFER {
            return Err(invalid(format!(
                "{}: {what} {i} is not a buffer",
                target.name()
            )));
        }
        let b = *l.items.add(i) as *const Buffer;
        if b.is_null() || (*b).struct_size < BUFFER_SIZE {
            return Err(invalid(format!(
                "{}: {what} {i}: XLA_FFI_Buffer missing or smaller than API 0.3's",
                target.name()
            )));
        }
        let b = &*b;
        let rank = usize::try_from(b.rank)
            .map_err(|_| invalid(format!("{}: {what} {i}: negative rank", target.name())))?;
        if rank > 0 && b.dims.is_null() {
            return Err(invalid(format!(
                "{}: {what} {i}: no dimensions",
                target.name()
            )));
        }
        let mut dims = Vec::with_capacity(rank);
        for d in 0..rank {
            let v = *b.dims.add(d);
            dims.push(usize::try_from(v).map_err(|_| {
                invalid(format!(
                    "{}: {what} {i}: negative dimension {v}",
                    target.name()
                ))
            })?);
        }
        let buf = Buf {
            dtype: b.dtype,
            data: b.data,
            dims,
        };
        if buf.data.is_null() && buf.elements() > 0 {
            return Err(invalid(format!(
                "{}: {what} {i}: null data for {} elements",
                target.name(),
                buf.elements()
            )));
        }
        out.push(buf);
    }
    Ok(out)
}

/// An attribute's value.
enum Attr {
    Int(i64),
    Str(String),
}

/// The attribute `name`, if passed.
///
/// # Safety
/// `a` must be the attributes of the call frame XLA built.
unsafe fn attr(a: &Attrs, name: &str) -> Res<Option<Attr>> {
    let n = usize::try_from(a.size).unwrap_or(0);
    if n == 0 || a.names.is_null() || a.types.is_null() || a.attrs.is_null() {
        return Ok(None);
    }
    for i in 0..n {
        let s = *a.names.add(i);
        if s.is_null() || (*s).ptr.is_null() {
            continue;
        }
        let key = std::slice::from_raw_parts((*s).ptr as *const u8, (*s).len);
        if key != name.as_bytes() {
            continue;
        }
        let p = *a.attrs.add(i);
        if p.is_null() {
            break;
        }
        return match *a.types.add(i) {
            ATTR_STRING => {
                let s = &*(p as *const ByteSpan);
                let bytes = if s.ptr.is_null() {
                    &[][..]
                } else {
                    std::slice::from_raw_parts(s.ptr as *const u8, s.len)
                };
                Ok(Some(Attr::Str(String::from_utf8_lossy(bytes).into_owned())))
            }
            ATTR_SCALAR => {
                let s = &*(p as *const Scalar);
                let v = s.value;
                if v.is_null() {
                    return Err(invalid(format!("attribute {name:?}: no value")));
                }
                let x = match s.dtype {
                    DT_PRED | DT_U8 => *(v as *const u8) as i64,
                    DT_S8 => *(v as *const i8) as i64,
                    DT_S16 => *(v as *const i16) as i64,
                    DT_U16 => *(v as *const u16) as i64,
                    DT_S32 => *(v as *const i32) as i64,
                    DT_U32 => *(v as *const u32) as i64,
                    DT_S64 => *(v as *const i64),
                    DT_U64 => *(v as *const u64) as i64,
                    d => {
                        return Err(invalid(format!(
                            "attribute {name:?}: expected an integer or bool, got {}",
                            dtype_name(d)
                        )))
                    }
                };
                Ok(Some(Attr::Int(x)))
            }
            t => Err(invalid(format!(
                "attribute {name:?}: expected a string or a scalar, got attribute type {t}"
            ))),
        };
    }
    Ok(None)
}

/// # Safety
/// As `attr`.
unsafe fn str_attr(a: &Attrs, name: &str, default: &str) -> Res<String> {
    match attr(a, name)? {
        None => Ok(default.into()),
        Some(Attr::Str(s)) => Ok(s),
        Some(Attr::Int(_)) => Err(invalid(format!("attribute {name:?} must be a string"))),
    }
}

/// # Safety
/// As `attr`.
unsafe fn bool_attr(a: &Attrs, name: &str, default: bool) -> Res<bool> {
    match attr(a, name)? {
        None => Ok(default),
        Some(Attr::Int(v)) => Ok(v != 0),
        Some(Attr::Str(_)) => Err(invalid(format!("attribute {name:?} must be a bool"))),
    }
}

// ---------------------------------------------------------------------------------------
// Execute

/// The input, checked: (buffer, batch dims, m, n).
fn the_input(args: &[Buf], target: Target) -> Res<(&Buf, Vec<usize>, usize, usize)> {
    let [a] = args else {
        return Err(invalid(format!(
            "{}: expected 1 input buffer, got {}",
            target.name(),
            args.len()
        )));
    };
    if a.dtype != DT_F32 && a.dtype != DT_F64 {
        return Err(invalid(format!(
            "batchlin dtype error: {} computes in float32 and float64, got {} (the Python \
             wrapper promotes other types first)",
            target.name(),
            dtype_name(a.dtype)
        )));
    }
    let nd = a.dims.len();
    if nd < 2 {
        return Err(invalid(format!(
            "batchlin shape error: expected an array of at least 2 dimensions [..., M, N], got {nd} (shape {:?})",
            a.dims
        )));
    }
    Ok((a, a.dims[..nd - 2].to_vec(), a.dims[nd - 2], a.dims[nd - 1]))
}

/// Check a result's element type and shape against what the operation writes.
fn expect(r: &Buf, what: &str, dtype: c_int, shape: &[usize], target: Target) -> Res<()> {
    if r.dtype != dtype {
        return Err(invalid(format!(
            "{}: result {what} must be {}, got {}",
            target.name(),
            dtype_name(dtype),
            dtype_name(r.dtype)
        )));
    }
    if r.dims != shape {
        return Err(invalid(format!(
            "{}: result {what} must have shape {shape:?}, got {:?}",
            target.name(),
            r.dims
        )));
    }
    Ok(())
}

fn shape_of(batch: &[usize], tail: &[usize]) -> Vec<usize> {
    let mut s = batch.to_vec();
    s.extend_from_slice(tail);
    s
}

/// The results expected, in order: (name, shape) of each matrix output, then info.
struct Plan {
    outs: Vec<(&'static str, Vec<usize>)>,
}

fn check_results(
    rets: &[Buf],
    plan: &Plan,
    dtype: c_int,
    batch: &[usize],
    target: Target,
) -> Res<()> {
    if rets.len() != plan.outs.len() + 1 {
        return Err(invalid(format!(
            "{}: expected {} results ({} and info), got {}",
            target.name(),
            plan.outs.len() + 1,
            plan.outs
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
            rets.len()
        )));
    }
    for ((name, shape), r) in plan.outs.iter().zip(rets) {
        expect(r, name, dtype, shape, target)?;
    }
    expect(&rets[plan.outs.len()], "info", DT_U32, batch, target)
}

/// # Safety
/// `f` must be the call frame XLA built for the execute stage.
unsafe fn execute(f: &CallFrame, target: Target, platform: Platform) -> Res<()> {
    let args = buffers(&f.args, "argument", target)?;
    let rets = buffers(&f.rets, "result", target)?;
    let (a, batch, m, n) = the_input(&args, target)?;
    let backend: Backend = str_attr(&f.attrs, "backend", "auto")?.parse()?;
    let k = m.min(n);
    match target {
        Target::Qr => {
            let mode: QrMode = str_attr(&f.attrs, "mode", "reduced")?.parse()?;
            let (q_cols, r_rows) = mode.output_dims(m, n);
            let mut outs = Vec::new();
            if mode != QrMode::R {
                outs.push(("Q", shape_of(&batch, &[m, q_cols])));
            }
            outs.push(("R", shape_of(&batch, &[r_rows, n])));
            check_results(&rets, &Plan { outs }, a.dtype, &batch, target)?;
            match platform {
                Platform::Cpu => qr_host(a, &rets, mode, backend),
                Platform::Cuda => qr_cuda(f, a, &rets, &batch, m, n, mode, backend),
            }
        }
        Target::Eigh => {
            let uplo: Uplo = str_attr(&f.attrs, "uplo", "L")?.parse()?;
            let vectors = bool_attr(&f.attrs, "vectors", true)?;
            if m != n {
                return Err(invalid(format!(
                    "batchlin shape error: eigh needs square matrices [..., N, N], got [..., {m}, {n}]"
                )));
            }
            let mut outs = vec![("eigenvalues", shape_of(&batch, &[n]))];
            if vectors {
                outs.push(("eigenvectors", shape_of(&batch, &[n, n])));
            }
            check_results(&rets, &Plan { outs }, a.dtype, &batch, target)?;
            if platform == Platform::Cuda {
                return Err(gpu_unavailable(if vectors { "eigh" } else { "eigvalsh" }));
            }
            eigh_host(a, &rets, uplo, vectors, backend)
        }
        Target::Svd => {
            let full = bool_attr(&f.attrs, "full_matrices", false)?;
            let vectors = bool_attr(&f.attrs, "vectors", true)?;
            let (u_cols, vh_rows) = if full { (m, n) } else { (k, k) };
            let mut outs = Vec::new();
            if vectors {
                outs.push(("U", shape_of(&batch, &[m, u_cols])));
            }
            outs.push(("S", shape_of(&batch, &[k])));
            if vectors {
                outs.push(("Vh", shape_of(&batch, &[vh_rows, n])));
            }
            check_results(&rets, &Plan { outs }, a.dtype, &batch, target)?;
            if platform == Platform::Cuda {
                return Err(gpu_unavailable(if vectors { "svd" } else { "svdvals" }));
            }
            svd_host(a, &rets, full, vectors, backend)
        }
    }
}

fn gpu_unavailable(op: &str) -> Fail {
    fail(
        Code::Unimplemented,
        format!(
            "batchlin unavailable error: batchlin.{op} of a JAX array on a GPU: the GPU \
             backend does QR only so far ({op} is not on the GPU yet). Move the data to the \
             CPU first (jax.device_put(x, jax.devices(\"cpu\")[0]))"
        ),
    )
}

// --- CPU -------------------------------------------------------------------------------

/// # Safety
/// `b` must be a live buffer of XLA's holding `T`s in row-major order.
unsafe fn in_view<'a, T>(b: &Buf) -> batchlin::Result<BatchRef<'a, T>> {
    BatchRef::from_raw_parts(b.data as *const T, &b.dims, &contiguous_strides(&b.dims)?)
}

/// # Safety
/// As `in_view`, writable and not aliased.
unsafe fn out_view<'a, T>(b: &Buf) -> batchlin::Result<BatchMut<'a, T>> {
    BatchMut::from_raw_parts(b.data as *mut T, &b.dims, &contiguous_strides(&b.dims)?)
}

/// # Safety
/// As `out_view`; `b` a batch of vectors `[..., K]`.
unsafe fn vec_view<'a, T>(b: &Buf) -> batchlin::Result<BatchMut<'a, T>> {
    BatchMut::from_raw_parts_vectors(b.data as *mut T, &b.dims, &contiguous_strides(&b.dims)?)
}

/// # Safety
/// `b` must be a live uint32 buffer of XLA's, not aliased.
unsafe fn info_view<'a>(b: &Buf) -> &'a mut [Info] {
    let len = b.elements();
    let p = if len == 0 || b.data.is_null() {
        NonNull::<Info>::dangling().as_ptr()
    } else {
        b.data as *mut Info
    };
    std::slice::from_raw_parts_mut(p, len)
}

/// # Safety
/// The buffers must be those `execute` checked.
unsafe fn qr_host(a: &Buf, rets: &[Buf], mode: QrMode, backend: Backend) -> Res<()> {
    unsafe fn typed<T: Real>(a: &Buf, rets: &[Buf], mode: QrMode, opts: &Options) -> Res<()> {
        let av = in_view::<T>(a)?;
        let (mut q, r, info) = if mode == QrMode::R {
            (None, &rets[0], &rets[1])
        } else {
            (Some(out_view::<T>(&rets[0])?), &rets[1], &rets[2])
        };
        let mut rv = out_view::<T>(r)?;
        batchlin::qr_into(&av, mode, q.as_mut(), &mut rv, Some(info_view(info)), opts)?;
        Ok(())
    }
    let opts = Options::with_backend(backend);
    if a.dtype == DT_F32 {
        typed::<f32>(a, rets, mode, &opts)
    } else {
        typed::<f64>(a, rets, mode, &opts)
    }
}

/// # Safety
/// As `qr_host`.
unsafe fn eigh_host(a: &Buf, rets: &[Buf], uplo: Uplo, vectors: bool, backend: Backend) -> Res<()> {
    unsafe fn typed<T: Real>(
        a: &Buf,
        rets: &[Buf],
        uplo: Uplo,
        vectors: bool,
        opts: &Options,
    ) -> Res<()> {
        let av = in_view::<T>(a)?;
        let mut w = vec_view::<T>(&rets[0])?;
        let (mut v, info) = if vectors {
            (Some(out_view::<T>(&rets[1])?), &rets[2])
        } else {
            (None, &rets[1])
        };
        batchlin::eigh_into(&av, uplo, &mut w, v.as_mut(), Some(info_view(info)), opts)?;
        Ok(())
    }
    let opts = Options::with_backend(backend);
    if a.dtype == DT_F32 {
        typed::<f32>(a, rets, uplo, vectors, &opts)
    } else {
        typed::<f64>(a, rets, uplo, vectors, &opts)
    }
}

/// # Safety
/// As `qr_host`.
unsafe fn svd_host(a: &Buf, rets: &[Buf], full: bool, vectors: bool, backend: Backend) -> Res<()> {
    unsafe fn typed<T: Real>(
        a: &Buf,
        rets: &[Buf],
        full: bool,
        vectors: bool,
        opts: &Options,
    ) -> Res<()> {
        let av = in_view::<T>(a)?;
        let (mut u, s, mut vh, info) = if vectors {
            (
                Some(out_view::<T>(&rets[0])?),
                &rets[1],
                Some(out_view::<T>(&rets[2])?),
                &rets[3],
            )
        } else {
            (None, &rets[0], None, &rets[1])
        };
        let mut sv = vec_view::<T>(s)?;
        batchlin::svd_into(
            &av,
            full,
            u.as_mut(),
            &mut sv,
            vh.as_mut(),
            Some(info_view(info)),
            opts,
        )?;
        Ok(())
    }
    let opts = Options::with_backend(backend);
    if a.dtype == DT_F32 {
        typed::<f32>(a, rets, full, vectors, &opts)
    } else {
        typed::<f64>(a, rets, full, vectors, &opts)
    }
}

// --- CUDA ------------------------------------------------------------------------------

/// QR of XLA's device buffers, queued on XLA's stream.
///
/// # Safety
/// As `execute`, on the CUDA platform.
#[allow(clippy::too_many_arguments)]
unsafe fn qr_cuda(
    f: &CallFrame,
    a: &Buf,
    rets: &[Buf],
    batch_dims: &[usize],
    m: usize,
    n: usize,
    mode: QrMode,
    backend: Backend,
) -> Res<()> {
    use batchlin::cuda::{qr_device, CudaBackend, DevMat, QrKernel};
    if !matches!(backend, Backend::Auto | Backend::Cuda) {
        return Err(invalid(format!(
            "batchlin argument error: backend {:?} runs on the CPU and the input is on a GPU; \
             move it to the CPU first, or use backend=\"auto\" or \"cuda\"",
            backend.name()
        )));
    }
    let api = f.api;
    if api_has(
        api,
        offset_of!(Api, device_ordinal_get) + size_of::<Unused>(),
    ) {
        if let Some(get) = (*api).device_ordinal_get {
            let mut args = DeviceOrdinalGetArgs {
                struct_size: DEVICE_ORDINAL_GET_ARGS_SIZE,
                extension_start: std::ptr::null_mut(),
                ctx: f.ctx,
                device_ordinal: -1,
            };
            let err = get(&mut args);
            if !err.is_null() {
                return Err(Fail::Xla(err));
            }
            if args.device_ordinal > 0 {
                return Err(fail(
                    Code::Unimplemented,
                    format!(
                        "batchlin unavailable error: batchlin.qr of a JAX array on GPU {}: the \
                         GPU backend runs on CUDA device 0 only so far",
                        args.device_ordinal
                    ),
                ));
            }
        }
    }
    let stream = {
        if !api_has(api, offset_of!(Api, stream_get) + size_of::<Unused>()) {
            return Err(fail(
                Code::FailedPrecondition,
                "XLA FFI API without Stream_Get",
            ));
        }
        let Some(get) = (*api).stream_get else {
            return Err(fail(
                Code::FailedPrecondition,
                "XLA FFI API without Stream_Get",
            ));
        };
        let mut args = StreamGetArgs {
            struct_size: STREAM_GET_ARGS_SIZE,
            extension_start: std::ptr::null_mut(),
            ctx: f.ctx,
            stream: std::ptr::null_mut(),
        };
        let err = get(&mut args);
        if !err.is_null() {
            return Err(Fail::Xla(err)); // XLA's own error, as it is
        }
        args.stream
    };
    let batch: usize = batch_dims.iter().product();
    // As the torch / CuPy entry passes them (q_cols unused without Q).
    let k = m.min(n);
    let (q_cols, r_rows) = match mode {
        QrMode::Complete => (m, m),
        _ => (k, k),
    };
    let be = CudaBackend::get().map_err(|e| {
        fail(
            Code::Unavailable,
            format!("{e} (batchlin needs the CUDA driver and NVRTC to run QR on the GPU)"),
        )
    })?;
    let row_major = |ptr: *mut c_void, rows: usize, cols: usize| DevMat {
        ptr: ptr as u64,
        batch_stride: (rows * cols) as i64,
        row_stride: cols as i64,
        col_stride: 1,
    };
    let am = row_major(a.data, m, n);
    let (q, r, info) = if mode == QrMode::R {
        (None, &rets[0], &rets[1])
    } else {
        (Some(row_major(rets[0].data, m, q_cols)), &rets[1], &rets[2])
    };
    let rm = row_major(r.data, r_rows, n);
    let prev = crate::current_context();
    let res = if a.dtype == DT_F32 {
        qr_device::<f32>(
            be,
            stream as batchlin::cuda::Stream,
            QrKernel::Auto,
            batch,
            m,
            n,
            am,
            q,
            q_cols,
            rm,
            r_rows,
            info.data as u64,
        )
    } else {
        qr_device::<f64>(
            be,
            stream as batchlin::cuda::Stream,
            QrKernel::Auto,
            batch,
            m,
            n,
            am,
            q,
            q_cols,
            rm,
            r_rows,
            info.data as u64,
        )
    };
    // The core makes device 0's primary context current; give XLA's thread back its own.
    if !prev.is_null() && prev != crate::current_context() {
        let _ = cudarc::driver::sys::cuCtxSetCurrent(prev);
    }
    res.map_err(Fail::from)
}

// ---------------------------------------------------------------------------------------
// The handlers

macro_rules! handler {
    ($name:ident, $target:expr, $platform:expr) => {
        /// An `XLA_FFI_Handler` (see the module documentation).
        ///
        /// # Safety
        /// Called by XLA with a call frame it built.
        pub unsafe extern "C" fn $name(frame: *mut CallFrame) -> *mut XlaError {
            entry(frame, $target, $platform)
        }
    };
}

handler!(qr_cpu, Target::Qr, Platform::Cpu);
handler!(eigh_cpu, Target::Eigh, Platform::Cpu);
handler!(svd_cpu, Target::Svd, Platform::Cpu);
handler!(qr_gpu, Target::Qr, Platform::Cuda);
handler!(eigh_gpu, Target::Eigh, Platform::Cuda);
handler!(svd_gpu, Target::Svd, Platform::Cuda);

type Handler = unsafe extern "C" fn(*mut CallFrame) -> *mut XlaError;

/// Every handler: (target name, platform as `jax.ffi.register_ffi_target` takes it,
/// function).
pub fn handlers() -> [(&'static str, &'static str, Handler); 6] {
    [
        (Target::Qr.name(), "cpu", qr_cpu),
        (Target::Eigh.name(), "cpu", eigh_cpu),
        (Target::Svd.name(), "cpu", svd_cpu),
        (Target::Qr.name(), "CUDA", qr_gpu),
        (Target::Eigh.name(), "CUDA", eigh_gpu),
        (Target::Svd.name(), "CUDA", svd_gpu),
    ]
}
