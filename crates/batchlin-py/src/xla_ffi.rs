//! XLA FFI handlers: batchlin's operations as XLA custom calls, so that JAX arrays (on
//! the CPU and on CUDA GPUs) are decomposed inside XLA's own execution, under `jax.jit`,
//! with XLA's buffers and stream.
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
//! - called to execute, it reads its one input buffer and its attributes (the target's
//!   `operation`), checks every output buffer's type and shape against the operation's
//!   output slots, and passes the buffers to the core's one entry, `batchlin::run`
//!   (through `glue::run_raw`, docs/ARCHITECTURE.md): on the CPU as host views
//!   (row-major contiguous buffers, as XLA lays them out by default), on CUDA as device
//!   views on the device holding the input (`cuda::device_of`), queued on the stream
//!   `XLA_FFI_Stream_Get` gives (no host synchronisation). One body (`execute`) serves
//!   every target and platform; which operations a GPU runs is the core's answer.
//!
//! Errors come back as XLA FFI errors (`XLA_FFI_Error_Create`) with the core's message:
//! INVALID_ARGUMENT for what the caller passed, UNAVAILABLE where the CUDA device is
//! missing (no driver, no such device), UNIMPLEMENTED for an operation the backend has
//! no kernel for (the core's `Unavailable`), INTERNAL for a device failure. A panic is
//! caught and becomes an INTERNAL error: nothing unwinds into XLA.
//!
//! Targets (registered from Python, `python/batchlin/_jax.py`; one `Target` and one
//! entry of `targets!` each): `batchlin_qr` (attributes `mode`: "reduced" | "complete" |
//! "r", `backend`; results Q (not for "r"), R, info), `batchlin_eigh` (`uplo`: "L" | "U",
//! `vectors`: bool, `backend`; results w, V (with vectors), info) and `batchlin_svd`
//! (`full_matrices`, `vectors`, `backend`; results U, S, Vh (U and Vh with vectors),
//! info). info is uint32 of the batch shape.

use crate::glue::{self, Raw, RawInfo, Slot};
use batchlin::view::contiguous_strides;
use batchlin::{Backend, DType, Error, Operation, Options, Place, Stream};
use std::ffi::{c_char, c_int, c_void, CString};
use std::mem::{offset_of, size_of};
use std::panic::{catch_unwind, AssertUnwindSafe};

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
    ResourceExhausted = 8,
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
            Error::OutOfMemory(_) => Code::ResourceExhausted,
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

/// A custom-call target: its name and how its attributes name the operation. One per
/// operation; `targets!` below makes its handlers for every platform.
#[derive(Copy, Clone)]
struct Target {
    name: &'static str,
    /// # Safety
    /// Called with the attributes of the call frame XLA built.
    operation: unsafe fn(&Attrs) -> Res<Operation>,
}

impl Target {
    fn name(self) -> &'static str {
        self.name
    }
}

/// `batchlin_qr`: attribute `mode` ("reduced" | "complete" | "r").
const QR: Target = Target {
    name: "batchlin_qr",
    operation: |a| unsafe { Ok(Operation::Qr(str_attr(a, "mode", "reduced")?.parse()?)) },
};

/// `batchlin_eigh`: attributes `uplo` ("L" | "U"), `vectors` (false: eigvalsh).
const EIGH: Target = Target {
    name: "batchlin_eigh",
    operation: |a| unsafe {
        Ok(Operation::Eigh {
            uplo: str_attr(a, "uplo", "L")?.parse()?,
            vectors: bool_attr(a, "vectors", true)?,
        })
    },
};

/// `batchlin_svd`: attributes `full_matrices`, `vectors` (false: svdvals).
const SVD: Target = Target {
    name: "batchlin_svd",
    operation: |a| unsafe {
        Ok(Operation::Svd {
            full_matrices: bool_attr(a, "full_matrices", false)?,
            vectors: bool_attr(a, "vectors", true)?,
        })
    },
};

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

/// Check the results against the operation's output slots (the present ones, in order),
/// then info.
fn check_results(
    rets: &[Buf],
    slots: &[Slot],
    dtype: c_int,
    batch: &[usize],
    target: Target,
) -> Res<()> {
    let outs: Vec<(&str, &Vec<usize>)> = slots
        .iter()
        .filter_map(|s| s.shape.as_ref().map(|sh| (s.name, sh)))
        .collect();
    if rets.len() != outs.len() + 1 {
        return Err(invalid(format!(
            "{}: expected {} results ({} and info), got {}",
            target.name(),
            outs.len() + 1,
            outs.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
            rets.len()
        )));
    }
    for ((name, shape), r) in outs.iter().zip(rets) {
        expect(r, name, dtype, shape, target)?;
    }
    expect(&rets[outs.len()], "info", DT_U32, batch, target)
}

/// One handler body for every target and platform: read the operation from the
/// attributes, check the results against its output slots, and pass the buffers to the
/// core (`glue::run_raw`), on the host or on the CUDA device holding the input, queued on
/// XLA's stream.
///
/// # Safety
/// `f` must be the call frame XLA built for the execute stage.
unsafe fn execute(f: &CallFrame, target: Target, platform: Platform) -> Res<()> {
    let args = buffers(&f.args, "argument", target)?;
    let rets = buffers(&f.rets, "result", target)?;
    let (a, batch, m, n) = the_input(&args, target)?;
    let backend: Backend = str_attr(&f.attrs, "backend", "auto")?.parse()?;
    let op = (target.operation)(&f.attrs)?;
    let slots = glue::slots(op, &batch, m, n)?;
    check_results(&rets, &slots, a.dtype, &batch, target)?;
    let place = match platform {
        Platform::Cpu => Place::Host,
        Platform::Cuda => cuda_place(f, a)?,
    };
    // XLA lays its buffers out row-major and contiguous (the default layout).
    let raw = |b: &Buf| -> Res<Raw> {
        Ok(Raw {
            ptr: b.data as usize,
            shape: b.dims.clone(),
            strides: contiguous_strides(&b.dims)?,
        })
    };
    let (info, outs) = rets.split_last().expect("checked: info is the last result");
    let outs = outs.iter().map(raw).collect::<Res<Vec<_>>>()?;
    let info = RawInfo {
        ptr: info.data as usize,
        len: info.elements(),
    };
    let dtype = if a.dtype == DT_F32 {
        DType::F32
    } else {
        DType::F64
    };
    glue::run_raw(
        dtype,
        op,
        place,
        &raw(a)?,
        &outs,
        Some(info),
        &Options::with_backend(backend),
    )?;
    Ok(())
}

/// The place of a CUDA call: the device holding the input buffer (`cuda::device_of`; for
/// an empty input, the ordinal XLA's table gives, else 0) and XLA's stream. Where there
/// is no such device (no driver, no GPU), an UNAVAILABLE error with the core's reason.
///
/// # Safety
/// As `execute`, on the CUDA platform.
unsafe fn cuda_place(f: &CallFrame, a: &Buf) -> Res<Place> {
    let api = f.api;
    let stream = {
        let Some(get) = api_has(api, offset_of!(Api, stream_get) + size_of::<Unused>())
            .then(|| (*api).stream_get)
            .flatten()
        else {
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
    let unavailable = |e: Error| fail(Code::Unavailable, e.to_string());
    let ordinal = if a.data.is_null() {
        xla_ordinal(f)?.unwrap_or(0)
    } else {
        batchlin::cuda::device_of(a.data).map_err(unavailable)?
    };
    batchlin::cuda::device(ordinal).map_err(unavailable)?;
    Ok(Place::Cuda {
        ordinal,
        // SAFETY: XLA's stream for this call, of the device's primary context.
        stream: Stream::from_raw(stream),
    })
}

/// The device ordinal XLA's table gives for this call, where it has the entry.
///
/// # Safety
/// As `execute`.
unsafe fn xla_ordinal(f: &CallFrame) -> Res<Option<usize>> {
    let api = f.api;
    if !api_has(
        api,
        offset_of!(Api, device_ordinal_get) + size_of::<Unused>(),
    ) {
        return Ok(None);
    }
    let Some(get) = (*api).device_ordinal_get else {
        return Ok(None);
    };
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
    Ok(usize::try_from(args.device_ordinal).ok())
}

// ---------------------------------------------------------------------------------------
// The handlers

type Handler = unsafe extern "C" fn(*mut CallFrame) -> *mut XlaError;

/// `handlers()`: for every target listed, one `XLA_FFI_Handler` per platform (see the
/// module documentation), as (target name, platform as `jax.ffi.register_ffi_target`
/// takes it, function).
macro_rules! targets {
    ($($target:ident),* $(,)?) => {
        pub fn handlers() -> Vec<(&'static str, &'static str, Handler)> {
            let mut all: Vec<(&'static str, &'static str, Handler)> = Vec::new();
            $(
                {
                    /// # Safety
                    /// Called by XLA with a call frame it built.
                    unsafe extern "C" fn cpu(frame: *mut CallFrame) -> *mut XlaError {
                        entry(frame, $target, Platform::Cpu)
                    }
                    /// # Safety
                    /// Called by XLA with a call frame it built.
                    unsafe extern "C" fn cuda(frame: *mut CallFrame) -> *mut XlaError {
                        entry(frame, $target, Platform::Cuda)
                    }
                    all.push(($target.name(), "cpu", cpu));
                    all.push(($target.name(), "CUDA", cuda));
                }
            )*
            all
        }
    };
}

targets!(QR, EIGH, SVD);
