//! The glue every binding of this crate shares (the Python module's host and device
//! calls, the XLA handlers on the CPU and on CUDA): an operation's output slots, views
//! over raw buffers in host or device memory, and one `run_raw` that builds the core's
//! `Request` and calls `batchlin::run`, for host data as for device data
//! (docs/ARCHITECTURE.md). Nothing here knows which backend runs what: the core's
//! planner answers, with `Unavailable` for an operation a backend has no kernel for.
//!
//! The outputs of each operation (their slots, in binding order) are the core's
//! (`batchlin::entry::slots`): adding an operation touches one line per binding list
//! here (the Python names, the XLA targets).

use batchlin::entry::assemble;
pub use batchlin::entry::{slots, Slot};
use batchlin::{
    BatchMut, BatchRef, DType, DeviceWords, Error, Info, InfoOut, Operation, Options, Place, Real,
    Request, Result, Stream, Uplo, Variant,
};
use std::ptr::NonNull;

/// The operation a variant name ("qr", "qr-complete", "qr-r", "eigh", "eigvalsh", "svd",
/// "svd-full", "svdvals") and, for eigh, the triangle read stand for.
pub fn operation(variant: &str, uplo: &str) -> Result<Operation> {
    let v: Variant = variant.parse()?;
    Ok(match v.operation() {
        Operation::Eigh { vectors, .. } => Operation::Eigh {
            uplo: uplo.parse::<Uplo>()?,
            vectors,
        },
        op => op,
    })
}

/// A place name: "cpu", "cuda" (device 0) or "cuda:N", with the stream for device work.
pub fn place(device: &str, stream: Stream) -> Result<Place> {
    let d = device.trim().to_ascii_lowercase();
    match d.as_str() {
        "cpu" | "host" => Ok(Place::Host),
        "cuda" | "gpu" => Ok(Place::Cuda { ordinal: 0, stream }),
        _ => d
            .strip_prefix("cuda:")
            .or_else(|| d.strip_prefix("gpu:"))
            .and_then(|n| n.parse::<usize>().ok())
            .map(|ordinal| Place::Cuda { ordinal, stream })
            .ok_or_else(|| {
                Error::Argument(format!(
                    "unknown device {device:?}: expected \"cpu\" or \"cuda[:N]\""
                ))
            }),
    }
}

/// A buffer as a binding hands it over: address, shape, strides in elements.
#[derive(Clone, Debug)]
pub struct Raw {
    pub ptr: usize,
    pub shape: Vec<usize>,
    pub strides: Vec<isize>,
}

/// The info words: `len` u32s at `ptr` (host or device memory, as the place says).
#[derive(Copy, Clone, Debug)]
pub struct RawInfo {
    pub ptr: usize,
    pub len: usize,
}

/// Run `op` on raw buffers at `place`: `outs` one per present slot of `slots(op, ..)`,
/// in slot order. Host place: returns with the outputs written. CUDA place: returns once
/// the work is queued on the place's stream (the core restores the caller's context).
///
/// # Safety
/// Every buffer must be memory of the place (host memory, or memory of the place's CUDA
/// device) reaching every element its shape and strides address: the input readable and
/// not written meanwhile, the outputs and info words writable and not aliased, until the
/// call returns (host) or the queued work has run (device).
pub unsafe fn run_raw(
    dtype: DType,
    op: Operation,
    place: Place,
    a: &Raw,
    outs: &[Raw],
    info: Option<RawInfo>,
    opts: &Options,
) -> Result<()> {
    match dtype {
        DType::F32 => run_typed::<f32>(op, place, a, outs, info, opts),
        DType::F64 => run_typed::<f64>(op, place, a, outs, info, opts),
        d => Err(Error::DType(format!(
            "batchlin computes in float32 and float64, not {}",
            d.name()
        ))),
    }
}

unsafe fn run_typed<T: Real>(
    op: Operation,
    place: Place,
    a: &Raw,
    outs: &[Raw],
    info: Option<RawInfo>,
    opts: &Options,
) -> Result<()> {
    let nd = a.shape.len();
    if nd < 2 {
        return Err(Error::Shape(format!(
            "expected an array of at least 2 dimensions [..., M, N], got {nd} (shape {:?})",
            a.shape
        )));
    }
    let slots = slots(op, &a.shape[..nd - 2], a.shape[nd - 2], a.shape[nd - 1])?;
    let present: Vec<&Slot> = slots.iter().filter(|s| s.shape.is_some()).collect();
    if present.len() != outs.len() {
        let names: Vec<_> = present.iter().map(|s| s.name).collect();
        return Err(Error::Argument(format!(
            "{} takes {} output buffers ({}), got {}",
            op.variant(),
            present.len(),
            names.join(", "),
            outs.len()
        )));
    }
    let input = match place {
        Place::Host => BatchRef::from_raw_parts(a.ptr as *const T, &a.shape, &a.strides)?,
        Place::Cuda { ordinal, .. } => {
            BatchRef::from_device(a.ptr as *const T, ordinal, &a.shape, &a.strides)?
        }
    };
    let mut views = Vec::with_capacity(outs.len());
    for (slot, o) in present.iter().zip(outs) {
        let p = o.ptr as *mut T;
        views.push(match (place, slot.vectors) {
            (Place::Host, false) => BatchMut::from_raw_parts(p, &o.shape, &o.strides)?,
            (Place::Host, true) => BatchMut::from_raw_parts_vectors(p, &o.shape, &o.strides)?,
            (Place::Cuda { ordinal, .. }, false) => {
                BatchMut::from_device(p, ordinal, &o.shape, &o.strides)?
            }
            (Place::Cuda { ordinal, .. }, true) => {
                BatchMut::from_device_vectors(p, ordinal, &o.shape, &o.strides)?
            }
        });
    }
    let info = match (info, place) {
        (None, _) => None,
        (Some(i), Place::Host) => {
            let p = if i.len == 0 || i.ptr == 0 {
                NonNull::<Info>::dangling().as_ptr()
            } else {
                i.ptr as *mut Info
            };
            Some(InfoOut::Host(std::slice::from_raw_parts_mut(p, i.len)))
        }
        (Some(i), Place::Cuda { ordinal, .. }) => Some(InfoOut::Device(DeviceWords::new(
            i.ptr as *mut u32,
            ordinal,
            i.len,
        )?)),
    };
    let req = Request {
        operation: op,
        a: input,
        out: assemble(op, views)?,
        info,
        place,
    };
    batchlin::run(req, opts)
}
