//! The CUDA backend: batched QR, eigh and SVD on NVIDIA GPUs, on any CUDA device of the process.
//!
//! Everything goes through the CUDA driver (and NVRTC where a kernel must be compiled),
//! loaded at run time (cudarc's dynamic loading) behind `driver.rs`, the one module that calls CUDA: on a machine with
//! no CUDA the crate still builds and runs, and [`device`] returns
//! [`Error::Unavailable`] saying why.
//!
//! - Kernels are CUDA C in `kernels/` (`common.cu` then `qr.cu`, ...), one module per
//!   instantiation of the one list (`instantiations.rs`). The build compiles each ahead
//!   of time for sm_80 to sm_120 and embeds the CUBINs (`embedded.rs`, build.rs); a GPU
//!   of another architecture, or a build made without NVRTC, compiles with NVRTC on
//!   first use, cached in memory and on disk (`$BATCHLIN_CACHE_DIR`, else
//!   `$XDG_CACHE_HOME/batchlin`, else `~/.cache/batchlin`; keyed by source hash, arch,
//!   driver and NVRTC versions). docs/ARCHITECTURE.md, "Kernels ahead of time".
//! - Device data ([`run`] with `Place::Cuda`): the caller's views and stream as given, no
//!   host synchronisation, scratch from the stream-ordered pool, info words left on the
//!   device; the caller's current context is given back.
//! - Host data (a plan with copies): copied in through pinned staging (or in place from
//!   buffers registered with [`host_buffers`]), run, copied out, synchronised.
//!
//! The kernels, each a registry entry (registry.rs), are described with their measured
//! reasons in docs/proposals/cuda-qr.md.

pub(crate) mod cusolver;
mod driver;
pub(crate) use driver::cache_dir;
pub(crate) mod eigh;
mod embedded;
pub mod host_buffers;
mod instantiations;
pub(crate) mod qr;
pub(crate) mod qr_blocked;
pub(crate) mod svd;
#[cfg(test)]
mod tests;

use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};

use crate::cpu::pool;
use crate::entry::{DeviceWords, InfoOut, Outputs, Request};
use crate::place::{Place, Stream};
use crate::plan::{KernelParams, Plan};
use crate::view::{BatchMut, BatchRef, Layout};
use crate::{Error, Info, Operation, QrMode, Real, Result, Uplo};
use driver::{Pinned, RawStream, Scratch};
use qr::{KMat, QrKernel};

pub(crate) use driver::{DeviceBuffer, EventPair, OwnedStream};

/// What the planner and the kernels' predicates know of a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceCaps {
    pub ordinal: usize,
    pub name: String,
    pub sm_count: u32,
    /// Compute capability (major, minor).
    pub cc: (i32, i32),
    /// Shared memory a block may opt in to, bytes.
    pub smem_optin: usize,
    /// Driver API version, e.g. 13000.
    pub driver_version: i32,
}

#[cfg(test)]
impl DeviceCaps {
    /// An H200's capabilities, for planning without a device.
    pub(crate) fn h200() -> DeviceCaps {
        DeviceCaps {
            ordinal: 0,
            name: "test".into(),
            sm_count: 132,
            cc: (9, 0),
            smem_optin: 232448,
            driver_version: 13000,
        }
    }
}

/// One CUDA device, opened on first use: its primary context (the one PyTorch and CuPy
/// use), compiled kernels and pinned staging.
pub struct CudaDevice {
    pub(crate) dev: driver::Device,
    staging: Mutex<Pinned>,
}

impl CudaDevice {
    pub fn caps(&self) -> &DeviceCaps {
        &self.dev.caps
    }

    /// Kernel modules this device has loaded so far, by where they came from.
    pub fn kernel_loads(&self) -> KernelLoads {
        use std::sync::atomic::Ordering::Relaxed;
        let l = &self.dev.loads;
        KernelLoads {
            embedded: l[0].load(Relaxed),
            disk_cache: l[1].load(Relaxed),
            compiled: l[2].load(Relaxed),
        }
    }
}

/// Kernel modules a device has loaded: from the CUBINs embedded in the library, from the
/// disk cache, compiled by NVRTC at run time.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelLoads {
    pub embedded: usize,
    pub disk_cache: usize,
    pub compiled: usize,
}

/// Whether kernels on CUDA device `ordinal` may need NVRTC: the build embedded no CUBINs
/// for its architecture (or none at all). False where the device cannot be opened (a
/// call there fails with the reason anyway). A caller's own tile instantiation
/// (`Params::qr_tile`) is compiled by NVRTC whatever this says.
pub fn needs_nvrtc(ordinal: usize) -> bool {
    match device(ordinal) {
        Ok(d) => embedded::select_arch(&embedded::archs(), &d.dev.arch()).is_none(),
        Err(_) => false,
    }
}

/// The architectures this build embedded CUBINs for (empty where it was built without
/// NVRTC), and what it embedded in words.
pub fn embedded_kernels() -> (Vec<&'static str>, String) {
    (embedded::archs(), embedded::summary())
}

/// The number of CUDA devices, or why there are none (`Unavailable`).
pub fn device_count() -> Result<usize> {
    driver::device_count()
}

/// CUDA device `ordinal`, opened on first use; `Unavailable` with the reason where there
/// is no CUDA or no such device.
static DEVICES: OnceLock<Vec<OnceLock<Result<CudaDevice>>>> = OnceLock::new();

/// Free every device's pinned staging buffer: registered with `atexit` when the first
/// device opens, so the buffer goes back at exit (or when the library is unloaded)
/// instead of being reported leaked (compute-sanitizer's leak check). A buffer in use
/// by another thread at exit is left to the process's end. Nothing in a forked child
/// (its CUDA state is the parent's).
extern "C" fn release_staging() {
    if crate::fork::cuda_forked() {
        return;
    }
    for slot in DEVICES.get().into_iter().flatten() {
        if let Some(Ok(d)) = slot.get() {
            if let Ok(mut p) = d.staging.try_lock() {
                p.release(d.dev.ctx);
            }
        }
    }
}

pub fn device(ordinal: usize) -> Result<&'static CudaDevice> {
    let count = device_count()?;
    let slots = DEVICES.get_or_init(|| (0..count).map(|_| OnceLock::new()).collect());
    let slot = slots.get(ordinal).ok_or_else(|| {
        Error::Unavailable(format!(
            "no CUDA device {ordinal}: this machine has {count} (0..{})",
            count - 1
        ))
    })?;
    slot.get_or_init(|| {
        let dev = std::panic::catch_unwind(|| driver::open(ordinal)).unwrap_or_else(|_| {
            Err(Error::Unavailable(format!(
                "CUDA device {ordinal} could not be opened"
            )))
        })?;
        static AT_EXIT: std::sync::Once = std::sync::Once::new();
        // SAFETY: registers a function that takes no arguments.
        AT_EXIT.call_once(|| unsafe {
            libc::atexit(release_staging);
        });
        Ok(CudaDevice {
            dev,
            staging: Mutex::new(Pinned::empty()),
        })
    })
    .as_ref()
    .map_err(|e| e.clone())
}

/// The CUDA device a device pointer's memory belongs to (what the C API's device forms
/// and the XLA handlers run on).
pub fn device_of(ptr: *const c_void) -> Result<usize> {
    driver::pointer_device(ptr as u64)
}

/// A work matrix's leading dimension for `rows` elements of `es` bytes read in 16-byte
/// vectors (kernels/common.cu `BlVec`): whole vectors, an odd number of them, so that the
/// vectors of 8 rows (or columns) at one offset hit distinct shared-memory banks. The eigh
/// `block` and SVD `bidiag` kernels' reductions read their work matrix so.
pub(crate) fn ld_vectors(rows: usize, es: usize) -> usize {
    let vn = 16 / es;
    let l = rows.div_ceil(vn);
    (if l % 2 == 1 { l } else { l + 1 }) * vn
}

/// Run `req` by `plan` on the plan's device: in place for device data, through copies
/// for host data.
pub(crate) fn run<T: Real>(plan: &Plan, req: &mut Request<'_, T>) -> Result<()> {
    let dev = device(plan.ordinal.unwrap_or(0))?;
    let _ctx = dev.dev.enter()?;
    match req.place {
        Place::Cuda { stream, .. } => run_device(dev, plan, req, stream.as_raw() as RawStream),
        Place::Host => run_host(dev, plan, req),
    }
}

/// A device view as the kernels take it: one batch stride (the batch dimensions must
/// collapse to one, as a reshape would allow).
fn kmat(ptr: u64, l: &Layout) -> Result<KMat> {
    let bs = l.uniform_batch_stride().ok_or_else(|| {
        Error::Argument(format!(
            "device views need batch dimensions that collapse to one stride; got shape {:?} \
             with batch strides {:?}",
            l.shape(),
            l.batch_strides
        ))
    })?;
    Ok(KMat {
        ptr,
        bs: bs as i64,
        rs: l.row_stride as i64,
        cs: l.col_stride as i64,
    })
}

/// The work of `req` queued on `stream` (device data; `dev`'s context current).
fn run_device<T: Real>(
    dev: &CudaDevice,
    plan: &Plan,
    req: &mut Request<'_, T>,
    stream: RawStream,
) -> Result<()> {
    let l = req.a.layout();
    let (batch, m, n) = (l.batch(), l.rows, l.cols);
    let lim = i32::MAX as usize;
    if batch > lim || m > lim / 2 || n > lim / 2 {
        return Err(Error::Overflow(format!(
            "batch {batch} of {m}x{n} is too large for the CUDA kernels"
        )));
    }
    let info = match &req.info {
        Some(InfoOut::Device(w)) => w.addr,
        Some(InfoOut::Host(_)) => {
            return Err(Error::Argument(
                "internal: host info words for device data".into(),
            ))
        }
        None => 0,
    };
    if batch == 0 {
        return Ok(());
    }
    let a = kmat(req.a.as_ptr() as u64, l)?;
    let mat = |v: &mut BatchMut<'_, T>| kmat(v.as_mut_ptr() as u64, v.layout());
    // SAFETY (the launches): every view was made from device memory of this device by an
    // unsafe constructor whose contract covers the elements its layout reaches, and the
    // stream belongs to this device's primary context (Stream::from_raw's contract).
    unsafe {
        match (req.operation, &mut req.out) {
            (Operation::Qr(mode), Outputs::Qr { q, r }) => {
                let q = match q {
                    Some(q) => Some(mat(q)?),
                    None => None,
                };
                run_qr::<T>(dev, plan, stream, (batch, m, n), mode, a, q, mat(r)?, info)
            }
            (Operation::Eigh { uplo, .. }, Outputs::Eigh { w, v }) => {
                if n == 0 {
                    return zero_info(info, batch, stream);
                }
                let v = match v {
                    Some(v) => Some(mat(v)?),
                    None => None,
                };
                let call = eigh::Call {
                    batch,
                    n,
                    a,
                    lower: uplo == Uplo::Lower,
                    w: mat(w)?,
                    v,
                    info,
                };
                if plan.kernel.name == "cusolver" {
                    cusolver::run_eigh::<T>(&dev.dev, dev.caps().ordinal, stream, &call)
                } else {
                    eigh::run::<T>(&dev.dev, stream, &call, plan.kernel.name)
                }
            }
            (Operation::Svd { full_matrices, .. }, Outputs::Svd { u, s, vh }) => {
                let (u, vh) = match (u, vh) {
                    (Some(u), Some(vh)) => (Some(mat(u)?), Some(mat(vh)?)),
                    _ => (None, None),
                };
                if m.min(n) == 0 {
                    // Nothing to decompose: full factors are identities, thin ones empty.
                    if full_matrices {
                        for (x, k) in [(u, m), (vh, n)] {
                            if let (Some(x), true) = (x, k > 0) {
                                qr::eye::<T>(&dev.dev, stream, batch, k, x)?;
                            }
                        }
                    }
                    return zero_info(info, batch, stream);
                }
                let call = svd::Call {
                    batch,
                    m,
                    n,
                    a,
                    full: full_matrices,
                    u,
                    s: mat(s)?,
                    vh,
                    info,
                };
                svd::dispatch::<T>(dev, stream, &call, plan.kernel.name)
            }
            _ => Err(Error::Argument(
                "internal: the outputs do not match the operation".into(),
            )),
        }
    }
}

/// Zero info words (nothing decomposed); none asked for is nothing to do.
unsafe fn zero_info(info: u64, batch: usize, stream: RawStream) -> Result<()> {
    if info == 0 {
        Ok(())
    } else {
        driver::zero_words(info, batch, stream)
    }
}

/// QR on device views (`dev`'s context current).
#[allow(clippy::too_many_arguments)]
unsafe fn run_qr<T: Real>(
    dev: &CudaDevice,
    plan: &Plan,
    stream: RawStream,
    (batch, m, n): (usize, usize, usize),
    mode: QrMode,
    a: KMat,
    q: Option<KMat>,
    r: KMat,
    info: u64,
) -> Result<()> {
    let (q_cols, r_rows) = mode.output_dims(m, n);
    if m == 0 || n == 0 {
        // Nothing to factor: R is empty; a complete Q (M x M) is the identity.
        if let Some(qm) = q {
            if m > 0 && mode == QrMode::Complete {
                qr::eye::<T>(&dev.dev, stream, batch, m, qm)?;
            }
        }
        return zero_info(info, batch, stream);
    }
    // No info words asked for (info 0): every QR kernel skips its writes to a null
    // pointer, as eigh's and the SVD's do (pool scratch for them cost an allocation and
    // a free every call).
    let (panel, tile) = match plan.params {
        KernelParams::QrBlocked { panel } => (panel, None),
        KernelParams::QrTile(t) => (32, Some(t)),
        KernelParams::None => (32, None),
    };
    let call = qr::Call {
        batch,
        m,
        n,
        a,
        q,
        qcols: q_cols,
        r,
        rrows: r_rows,
        info,
        panel,
        tile,
    };
    qr::run::<T>(
        &dev.dev,
        QrKernel::from_name(plan.kernel.name)?,
        stream,
        &call,
    )
}

/// How one host view travels: its device buffer, the device view's strides, and whether
/// the host side is copied in place (dense) or gathered / scattered row-major.
struct Leg {
    dev: u64,
    bytes: usize,
    strides: Vec<isize>,
    dense: bool,
    /// Offset in the pinned staging buffer, when not copied from registered memory.
    pin: Option<usize>,
    _registered: Option<host_buffers::InUse>,
}

/// A token keeping the host view `l` at `host` registered, where it is dense and lies
/// inside a buffer the caller registered: its copies then skip the staging buffer.
fn registered(l: &Layout, host: *const u8, es: usize) -> Option<host_buffers::InUse> {
    let bytes = l.element_count().ok()? * es;
    l.dense_strides()
        .and_then(|_| host_buffers::lookup(host.cast(), bytes))
}

/// Which of a host-data call's buffers the caller registered (`registered`): what the
/// planner prices a GPU's copies at.
pub(crate) fn pinned<T>(req: &Request<'_, T>) -> crate::table::Pinned {
    if !host_buffers::any() {
        return Default::default();
    }
    let es = std::mem::size_of::<T>();
    let reg = |l: &Layout, p: *const T| registered(l, p.cast(), es).is_some();
    crate::table::Pinned {
        input: reg(req.a.layout(), req.a.as_ptr()),
        outputs: req.out.views().iter().all(|v| reg(v.layout(), v.as_ptr())),
    }
}

fn leg(l: &Layout, host: *const u8, es: usize, sc: &mut Scratch, pin: &mut usize) -> Result<Leg> {
    let count = l.element_count()?;
    let bytes = count * es;
    let dense = l.dense_strides().is_some();
    let strides = if dense {
        l.strides()
    } else {
        crate::view::contiguous_strides(&l.shape())?
    };
    let registered = registered(l, host, es);
    let at = registered.is_none().then(|| {
        let at = *pin;
        *pin += bytes.div_ceil(16) * 16;
        at
    });
    Ok(Leg {
        dev: sc.alloc(bytes)?,
        bytes,
        strides,
        dense,
        pin: at,
        _registered: registered,
    })
}

/// The bytes of one step of a staged copy: at least 4 MiB, at most 16 steps a copy. The
/// copy into (or out of) the pinned buffer on the pool's threads runs while the DMA of
/// the step before (after) it moves: done whole, one after the other, the two added up
/// (an H100 machine, 2026-12-06: 64 MiB to the GPU in 4535 us staged, of which the DMA
/// alone takes 1302 from page-locked memory).
fn stage_step(bytes: usize) -> usize {
    (bytes.div_ceil(16).max(4 << 20)).div_ceil(4096) * 4096
}

/// `src` to device memory at `dst` through the pinned buffer at `pin` (holding
/// `src.len()` bytes), in steps (`stage_step`): each step copied into the buffer on the
/// pool's threads, then its DMA queued on `stream`, which moves while the next step is
/// copied in.
///
/// # Safety
/// `dst` device memory of the current context holding `src.len()` bytes; `pin` page-locked
/// and untouched by anything else until `stream` has run the copies.
unsafe fn staged_to_device(dst: u64, src: &[u8], pin: *mut u8, stream: RawStream) -> Result<()> {
    let step = stage_step(src.len());
    for (i, part) in src.chunks(step).enumerate() {
        let at = i * step;
        pool::copy(
            std::slice::from_raw_parts_mut(pin.add(at), part.len()),
            part,
        );
        driver::copy_to_device(dst + at as u64, pin.add(at), part.len(), stream)?;
    }
    Ok(())
}

/// Queues device memory at `src` into the pinned buffer at `pin` on `stream` in steps
/// (`stage_step`), an event after each; `StagedBack::finish` copies each step out as its
/// event passes, while the later steps move.
///
/// # Safety
/// `src` device memory of the current context holding `bytes`; `pin` page-locked, holding
/// `bytes`, untouched by anything else until `finish` has returned.
unsafe fn staged_to_host(
    src: u64,
    bytes: usize,
    pin: *mut u8,
    stream: RawStream,
) -> Result<StagedBack> {
    let step = stage_step(bytes);
    let mut steps = Vec::with_capacity(bytes.div_ceil(step));
    for at in (0..bytes).step_by(step) {
        let len = step.min(bytes - at);
        driver::copy_to_host(pin.add(at), src + at as u64, len, stream)?;
        steps.push((at, len, driver::Event::record(stream)?));
    }
    Ok(StagedBack { pin, steps })
}

/// The steps of a staged copy back (`staged_to_host`): where each lies in the pinned
/// buffer and the event after its DMA.
struct StagedBack {
    pin: *mut u8,
    steps: Vec<(usize, usize, driver::Event)>,
}

impl StagedBack {
    /// Copies each step out of the pinned buffer into `dst` (as long as the copy) on the
    /// pool's threads once its DMA has run.
    ///
    /// # Safety
    /// As `staged_to_host`; `dst` holds the copy's bytes.
    unsafe fn finish(self, dst: &mut [u8]) -> Result<()> {
        for (at, len, done) in &self.steps {
            done.wait()?;
            let from = std::slice::from_raw_parts(self.pin.add(*at), *len);
            pool::copy(&mut dst[*at..at + len], from);
        }
        Ok(())
    }
}

/// Host data on the GPU: every view copied to device buffers (in place where dense, else
/// row-major), the device path run on a stream of ours, the outputs copied back; returns
/// when they are written.
fn run_host<T: Real>(dev: &CudaDevice, plan: &Plan, req: &mut Request<'_, T>) -> Result<()> {
    let batch = req.a.layout().batch();
    if batch == 0 {
        return Ok(());
    }
    let es = std::mem::size_of::<T>();
    let ordinal = dev.caps().ordinal;
    // The staging buffer's lock first, so that it is released last: the stream, dropped
    // before it, waits for every copy queued into the buffer, on an early error too.
    let mut staging = dev.staging.lock().unwrap_or_else(|p| p.into_inner());
    let stream = OwnedStream::new()?;
    let mut sc = Scratch::new(stream.0);
    let mut pin_len = 0usize;
    let a_leg = leg(
        req.a.layout(),
        req.a.as_ptr().cast(),
        es,
        &mut sc,
        &mut pin_len,
    )?;
    let mut outs = req.out.views_mut();
    let out_legs = outs
        .iter_mut()
        .map(|v| {
            let p = v.as_mut_ptr() as *const u8;
            leg(v.layout(), p, es, &mut sc, &mut pin_len)
        })
        .collect::<Result<Vec<_>>>()?;
    let info_pin = pin_len;
    pin_len += batch * 4;
    let info_dev = sc.alloc(batch * 4)?;
    let pin = staging.ensure(pin_len)?;
    // SAFETY: the pinned buffer holds `pin_len` bytes laid out above; host views are the
    // caller's, each reaching `bytes` from its pointer where dense (dense_strides); device
    // buffers hold `bytes` each. Copies run on our stream, synchronised before return
    // (OwnedStream's drop waits too, should anything fail in between).
    unsafe {
        match a_leg.pin {
            None => {
                let src = req.a.as_ptr() as *const u8;
                driver::copy_to_device(a_leg.dev, src, a_leg.bytes, stream.0)?;
            }
            Some(at) => {
                let bytes = |p: *const T| std::slice::from_raw_parts(p.cast::<u8>(), a_leg.bytes);
                let gathered;
                let src = match a_leg.dense {
                    true => bytes(req.a.as_ptr()),
                    false => {
                        gathered = req.a.to_contiguous()?;
                        bytes(gathered.as_ptr())
                    }
                };
                staged_to_device(a_leg.dev, src, pin.add(at), stream.0)?;
            }
        }
        let shape = |l: &Layout| l.shape();
        let a_dev = BatchRef::from_device(
            a_leg.dev as *const T,
            ordinal,
            &shape(req.a.layout()),
            &a_leg.strides,
        )?;
        let shapes: Vec<Vec<usize>> = outs.iter().map(|v| shape(v.layout())).collect();
        drop(outs);
        let mut dviews = Vec::with_capacity(out_legs.len());
        for (sh, lg) in shapes.iter().zip(&out_legs) {
            dviews.push(BatchMut::<T>::from_device(
                lg.dev as *mut T,
                ordinal,
                sh,
                &lg.strides,
            )?);
        }
        let mut it = dviews.into_iter();
        let mut next = || it.next().expect("one device view an output");
        let out = match &req.out {
            Outputs::Qr { q, .. } => Outputs::Qr {
                q: q.as_ref().map(|_| next()),
                r: next(),
            },
            Outputs::Eigh { v, .. } => Outputs::Eigh {
                w: next(),
                v: v.as_ref().map(|_| next()),
            },
            Outputs::Svd { u, vh, .. } => {
                let u = u.as_ref().map(|_| next());
                let s = next();
                Outputs::Svd {
                    u,
                    s,
                    vh: vh.as_ref().map(|_| next()),
                }
            }
        };
        let mut dreq = Request {
            operation: req.operation,
            a: a_dev,
            out,
            info: Some(InfoOut::Device(DeviceWords::new(
                info_dev as *mut u32,
                ordinal,
                batch,
            )?)),
            place: Place::Cuda {
                ordinal,
                stream: Stream::from_raw(stream.0 as *mut c_void),
            },
        };
        run_device(dev, plan, &mut dreq, stream.0)?;
        let mut outs = req.out.views_mut();
        // Dense staged outputs come back in steps, each copied out as it lands; the others
        // whole (registered memory directly; a strided view scattered after the sync).
        let mut back = Vec::with_capacity(out_legs.len());
        for (v, lg) in outs.iter_mut().zip(&out_legs) {
            back.push(match lg.pin {
                None => {
                    let dst = v.as_mut_ptr() as *mut u8;
                    driver::copy_to_host(dst, lg.dev, lg.bytes, stream.0)?;
                    None
                }
                Some(at) if lg.dense => {
                    Some(staged_to_host(lg.dev, lg.bytes, pin.add(at), stream.0)?)
                }
                Some(at) => {
                    driver::copy_to_host(pin.add(at), lg.dev, lg.bytes, stream.0)?;
                    None
                }
            });
        }
        driver::copy_to_host(pin.add(info_pin), info_dev, batch * 4, stream.0)?;
        drop(sc);
        for ((v, lg), b) in outs.iter_mut().zip(&out_legs).zip(back) {
            if let Some(b) = b {
                b.finish(std::slice::from_raw_parts_mut(
                    v.as_mut_ptr() as *mut u8,
                    lg.bytes,
                ))?;
            }
        }
        stream.sync()?;
        for (v, lg) in outs.iter_mut().zip(&out_legs) {
            let Some(at) = lg.pin.filter(|_| !lg.dense) else {
                continue;
            };
            let src = std::slice::from_raw_parts(pin.add(at) as *const T, lg.bytes / es);
            v.copy_from_contiguous(src)?;
        }
        if let Some(InfoOut::Host(info)) = &mut req.info {
            let words = std::slice::from_raw_parts(pin.add(info_pin) as *const u32, batch);
            for (d, &w) in info.iter_mut().zip(words) {
                *d = Info(w);
            }
        }
    }
    Ok(())
}

/// Wall-clock microseconds to copy `bytes` of host memory to device `ordinal` and back as
/// a call on host data does (`run_host`): on a stream made for the call, through the
/// pinned staging buffer in steps (`staged_to_device`, `staged_to_host`) or,
/// `registered`, straight from page-locked memory. Each of `reps` round trips after a
/// warm-up one: (to the device, back to the host).
pub(crate) fn time_copies(
    ordinal: usize,
    bytes: usize,
    registered: bool,
    reps: usize,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let dev = device(ordinal)?;
    let _ctx = dev.dev.enter()?;
    let bytes = bytes.max(1);
    let mut host = vec![1u8; bytes];
    let buf = DeviceBuffer::new(bytes)?;
    let hp = host.as_mut_ptr();
    if registered {
        // SAFETY: `host` outlives the registration, undone below before it is dropped.
        unsafe { driver::host_register(hp.cast(), bytes)? };
    }
    let mut staging = dev.staging.lock().unwrap_or_else(|p| p.into_inner());
    let timed = (|| -> Result<(Vec<f64>, Vec<f64>)> {
        let pin = match registered {
            true => hp,
            false => staging.ensure(bytes)?,
        };
        let (mut up, mut down) = (vec![], vec![]);
        for it in 0..=reps.max(1) {
            // A front door's output is fresh memory (glibc maps a large array afresh each
            // call, even of a size it has just unmapped), so the staged copy back writes
            // into a fresh buffer and pays its first touch: the copies into a reused one predicted a 4096x32x32
            // float32 QR of NumPy data at 5.0 ms where it took 10-15 (H100 and H200,
            // 2026-12-05).
            let mut fresh = if registered { vec![] } else { vec![0u8; bytes] };
            // Paged as NumPy's outputs are (`timing::time_host` allocates the CPU's so).
            crate::timing::huge_pages(fresh.as_mut_ptr(), fresh.len());
            let t0 = std::time::Instant::now();
            let stream = OwnedStream::new()?;
            // SAFETY: `pin` (the staging buffer or the registered `host`) and `buf` each
            // hold `bytes`; every copy is synchronised before the next step.
            unsafe {
                match registered {
                    true => driver::copy_to_device(buf.ptr, pin, bytes, stream.0)?,
                    false => {
                        let src = std::slice::from_raw_parts(hp, bytes);
                        staged_to_device(buf.ptr, src, pin, stream.0)?
                    }
                }
                stream.sync()?;
                let t1 = std::time::Instant::now();
                match registered {
                    true => driver::copy_to_host(pin, buf.ptr, bytes, stream.0)?,
                    false => staged_to_host(buf.ptr, bytes, pin, stream.0)?.finish(&mut fresh)?,
                }
                stream.sync()?;
                drop(stream);
                if it > 0 {
                    up.push((t1 - t0).as_secs_f64() * 1e6);
                    down.push(t1.elapsed().as_secs_f64() * 1e6);
                }
                drop(fresh);
            }
        }
        Ok((up, down))
    })();
    drop(staging);
    if registered {
        // SAFETY: registered above; no copy is in flight (every one was synchronised).
        unsafe { driver::host_unregister(hp.cast())? };
    }
    timed
}

/// Every kernel instantiation (instantiations.rs, the one list the build embeds).
fn all_instantiations() -> Vec<(String, String)> {
    instantiations::all()
}

/// Compile every kernel with NVRTC for `arch` (e.g. "sm_90") without a device: a check of
/// the sources wherever NVRTC is installed. With `cache` = Some((dir, driver_version)) the
/// CUBINs are also written there under the names the runtime looks for on a device with
/// that driver API version (e.g. 13000) and this NVRTC: a disk cache made ahead.
/// Returns (kernel name, CUBIN bytes).
pub fn compile_all_kernels(
    arch: &str,
    cache: Option<(&std::path::Path, i32)>,
) -> Result<Vec<(String, usize)>> {
    if !driver::nvrtc_present() {
        return Err(Error::Unavailable(
            "no NVRTC library (libnvrtc.so) found".into(),
        ));
    }
    let nv = driver::nvrtc_version()?;
    let mut out = Vec::new();
    for (name, inst) in all_instantiations() {
        if instantiations::arch_cc(arch).is_some_and(|cc| cc < instantiations::min_cc(&inst)) {
            continue;
        }
        let src = driver::module_source(&inst);
        let cubin = driver::nvrtc_cubin(&src, &format!("{name}.cu"), arch)?;
        if let Some((dir, dv)) = cache {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::Device(format!("{}: {e}", dir.display())))?;
            let p = dir.join(driver::cache_file(&name, &src, arch, dv, nv));
            std::fs::write(&p, &cubin)
                .map_err(|e| Error::Device(format!("{}: {e}", p.display())))?;
        }
        out.push((name, cubin.len()));
    }
    Ok(out)
}
