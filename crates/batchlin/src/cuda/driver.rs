//! The thin unsafe layer over the CUDA driver and NVRTC (through cudarc's raw `sys`
//! bindings, loaded dynamically): library probing, the primary context, kernels compiled
//! by NVRTC and cached in memory and on disk, stream-ordered scratch, launches.

use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::Mutex;

use cudarc::driver::sys as cu;
use cudarc::nvrtc::sys as rtc;

use super::{embedded, DeviceCaps};
use crate::{Error, Result};

/// A CUDA stream handle as the launch code passes it on.
pub(crate) type RawStream = cu::CUstream;

/// Whether NVRTC can be loaded (probing only dlopens).
pub(crate) fn nvrtc_present() -> bool {
    // SAFETY: only dlopens.
    unsafe { rtc::is_culib_present() }
}

pub(crate) fn check(r: cu::CUresult, what: &str) -> Result<()> {
    if r == cu::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        let mut s: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: cuGetErrorString only writes a static string pointer.
        let msg = unsafe {
            if cu::cuGetErrorString(r, &mut s) == cu::CUresult::CUDA_SUCCESS && !s.is_null() {
                CStr::from_ptr(s).to_string_lossy().into_owned()
            } else {
                String::new()
            }
        };
        let m = format!("{what} failed: {r:?} {msg}");
        Err(match r {
            cu::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Error::OutOfMemory(m),
            _ => Error::Device(m),
        })
    }
}

fn rtc_check(r: rtc::nvrtcResult, what: &str) -> Result<()> {
    if r == rtc::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(Error::Device(format!("{what} failed: {r:?}")))
    }
}

/// A compiled kernel: its module stays loaded for the life of the process.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Func(pub cu::CUfunction);
// SAFETY: a CUfunction handle is a process-wide driver object, usable from any thread
// once its context is current.
unsafe impl Send for Func {}
unsafe impl Sync for Func {}

pub(crate) struct Device {
    pub ctx: cu::CUcontext,
    pub caps: DeviceCaps,
    /// NVRTC's version, or why there is none: read when a kernel must be compiled.
    nvrtc_version: std::sync::OnceLock<Result<(i32, i32)>>,
    funcs: Mutex<HashMap<String, Func>>,
    /// Modules loaded: [embedded CUBIN, disk cache, compiled by NVRTC].
    pub loads: [std::sync::atomic::AtomicUsize; 3],
}

impl std::ops::Deref for Device {
    type Target = DeviceCaps;
    fn deref(&self) -> &DeviceCaps {
        &self.caps
    }
}
// SAFETY: the primary context handle is valid process-wide; every use makes it current.
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

/// Probe the libraries and initialise the driver once a process; the number of CUDA
/// devices, or why there are none (`Unavailable`).
pub(crate) fn device_count() -> Result<usize> {
    if crate::fork::cuda_forked() {
        return Err(Error::Unavailable(crate::fork::CUDA_AFTER_FORK.into()));
    }
    static COUNT: std::sync::OnceLock<Result<usize>> = std::sync::OnceLock::new();
    COUNT
        .get_or_init(|| {
            // cudarc panics where a library symbol is missing: a reason, not a crash.
            std::panic::catch_unwind(probe).unwrap_or_else(|_| {
                Err(Error::Unavailable(
                    "the CUDA libraries could not be loaded".into(),
                ))
            })
        })
        .clone()
}

fn probe() -> Result<usize> {
    // SAFETY: probing only dlopens; nothing is called before the library is known present.
    if !unsafe { cu::is_culib_present() } {
        return Err(Error::Unavailable(
            "no CUDA driver library (libcuda.so) found: no NVIDIA driver on this machine".into(),
        ));
    }
    crate::fork::note_cuda_start();
    unsafe {
        let r = cu::cuInit(0);
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(Error::Unavailable(format!(
                "cuInit failed ({r:?}): no usable CUDA device"
            )));
        }
        let mut count = 0;
        check(cu::cuDeviceGetCount(&mut count), "cuDeviceGetCount")?;
        if count < 1 {
            return Err(Error::Unavailable("no CUDA device".into()));
        }
        Ok(count as usize)
    }
}

/// Open CUDA device `ordinal` (its primary context, the one PyTorch and CuPy use); every
/// reason for failure is an `Unavailable` error. The calling thread's current context is
/// left as it was.
pub(crate) fn open(ordinal: usize) -> Result<Device> {
    let count = device_count()?;
    if ordinal >= count {
        return Err(Error::Unavailable(format!(
            "no CUDA device {ordinal}: this machine has {count} (0..{})",
            count - 1
        )));
    }
    unsafe {
        let mut dev: cu::CUdevice = 0;
        check(cu::cuDeviceGet(&mut dev, ordinal as i32), "cuDeviceGet")?;
        let mut ctx: cu::CUcontext = std::ptr::null_mut();
        check(
            cu::cuDevicePrimaryCtxRetain(&mut ctx, dev),
            "cuDevicePrimaryCtxRetain",
        )?;
        let _guard = CtxGuard::enter(ctx)?;
        let attr = |a: cu::CUdevice_attribute| -> Result<i32> {
            let mut v = 0;
            check(
                cu::cuDeviceGetAttribute(&mut v, a, dev),
                "cuDeviceGetAttribute",
            )?;
            Ok(v)
        };
        use cu::CUdevice_attribute as A;
        let sm_count = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let cc = (
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        let smem_optin = attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as usize;
        if attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? == 0 {
            return Err(Error::Unavailable(
                "the CUDA device does not support stream-ordered allocation".into(),
            ));
        }
        let mut name = [0 as std::ffi::c_char; 256];
        check(
            cu::cuDeviceGetName(name.as_mut_ptr(), 256, dev),
            "cuDeviceGetName",
        )?;
        let name = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
        let mut driver_version = 0;
        check(
            cu::cuDriverGetVersion(&mut driver_version),
            "cuDriverGetVersion",
        )?;
        // Keep freed scratch in the pool: no return to the OS (and no re-mapping) per call.
        let mut pool: cu::CUmemoryPool = std::ptr::null_mut();
        check(
            cu::cuDeviceGetDefaultMemPool(&mut pool, dev),
            "cuDeviceGetDefaultMemPool",
        )?;
        let mut thr: u64 = u64::MAX;
        check(
            cu::cuMemPoolSetAttribute(
                pool,
                cu::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &mut thr as *mut u64 as *mut c_void,
            ),
            "cuMemPoolSetAttribute",
        )?;
        Ok(Device {
            ctx,
            caps: DeviceCaps {
                ordinal,
                name,
                sm_count,
                cc,
                smem_optin,
                driver_version,
            },
            nvrtc_version: std::sync::OnceLock::new(),
            funcs: Mutex::new(HashMap::new()),
            loads: Default::default(),
        })
    }
}

use super::instantiations::{self as insts, fnv64};

/// The disk cache's file name for kernel `name` built from `src`.
pub(crate) fn cache_file(
    name: &str,
    src: &str,
    arch: &str,
    driver_version: i32,
    nvrtc: (i32, i32),
) -> String {
    let key = fnv64(&[
        src.as_bytes(),
        arch.as_bytes(),
        &driver_version.to_le_bytes(),
        &nvrtc.0.to_le_bytes(),
        &nvrtc.1.to_le_bytes(),
    ]);
    format!("{name}-{arch}-{key:016x}.cubin")
}

/// NVRTC's version, or `Unavailable` saying it is missing.
pub(crate) fn nvrtc_version() -> Result<(i32, i32)> {
    if !nvrtc_present() {
        return Err(Error::Unavailable(
            "no NVRTC library (libnvrtc.so.13) found: install the CUDA toolkit's NVRTC \
             (or pip install \"nvidia-cuda-nvrtc==13.0.*\") or add its lib folder to \
             LD_LIBRARY_PATH"
                .into(),
        ));
    }
    // cudarc panics where a library symbol is missing: a reason, not a crash.
    std::panic::catch_unwind(|| {
        let (mut ma, mut mi) = (0, 0);
        // SAFETY: NVRTC is present; nvrtcVersion only writes two ints.
        let r = unsafe { rtc::nvrtcVersion(&mut ma, &mut mi) };
        rtc_check(r, "nvrtcVersion").map(|_| (ma, mi))
    })
    .unwrap_or_else(|_| Err(Error::Unavailable("NVRTC could not be loaded".into())))
}

pub(crate) fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("BATCHLIN_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("batchlin"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("batchlin"))
}

/// Compile `src` with NVRTC for `arch` (e.g. "sm_90") and return the CUBIN.
pub(crate) fn nvrtc_cubin(src: &str, name: &str, arch: &str) -> Result<Vec<u8>> {
    let csrc = CString::new(src).map_err(|_| Error::Device("kernel source holds a NUL".into()))?;
    let cname = CString::new(name).unwrap();
    let opts: Vec<CString> = insts::nvrtc_options(arch)
        .into_iter()
        .map(|o| CString::new(o).unwrap())
        .collect();
    let optp: Vec<*const std::ffi::c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    unsafe {
        let mut prog: rtc::nvrtcProgram = std::ptr::null_mut();
        rtc_check(
            rtc::nvrtcCreateProgram(
                &mut prog,
                csrc.as_ptr(),
                cname.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            ),
            "nvrtcCreateProgram",
        )?;
        let r = rtc::nvrtcCompileProgram(prog, optp.len() as i32, optp.as_ptr());
        let mut log_size = 0usize;
        rtc::nvrtcGetProgramLogSize(prog, &mut log_size);
        let mut log = vec![0u8; log_size.max(1)];
        rtc::nvrtcGetProgramLog(prog, log.as_mut_ptr() as *mut std::ffi::c_char);
        if r != rtc::nvrtcResult::NVRTC_SUCCESS {
            rtc::nvrtcDestroyProgram(&mut prog);
            let log = String::from_utf8_lossy(&log);
            return Err(Error::Device(format!(
                "NVRTC could not compile {name} for {arch}: {r:?}\n{log}"
            )));
        }
        let mut size = 0usize;
        rtc_check(rtc::nvrtcGetCUBINSize(prog, &mut size), "nvrtcGetCUBINSize")?;
        let mut cubin = vec![0u8; size];
        rtc_check(
            rtc::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut std::ffi::c_char),
            "nvrtcGetCUBIN",
        )?;
        rtc::nvrtcDestroyProgram(&mut prog);
        Ok(cubin)
    }
}

/// The full source of the module that holds kernel `name`, instantiated by `inst`.
pub(crate) fn module_source(inst: &str) -> String {
    let ops = embedded::source(insts::module_file(inst));
    insts::module_source(embedded::source("common.cu"), ops, inst)
}

impl Device {
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.cc.0, self.cc.1)
    }

    /// Make this device's context current until the guard drops, which gives the thread
    /// back the context it had (the caller's framework may be working on another device).
    pub fn enter(&self) -> Result<CtxGuard> {
        CtxGuard::enter(self.ctx)
    }

    /// The kernel `name`, instantiated by `inst` (its instantiation line), loaded on first
    /// use: the CUBIN the build embedded for this architecture (inflated), else one from the disk
    /// cache (keyed by source hash, arch, driver and NVRTC versions), else compiled by
    /// NVRTC and written to the cache.
    pub fn function(&self, name: &str, inst: &str, max_dyn_smem: usize) -> Result<Func> {
        if let Some(f) = self.funcs.lock().unwrap().get(name) {
            return Ok(*f);
        }
        let src = module_source(inst);
        let arch = self.arch();
        if let Some(c) = embedded::cubin(name, &arch, &src) {
            // A driver too old for the CUBIN falls through to the compiling path (as a
            // damaged one does: `cubin` gives none).
            if let Ok(f) = self.load(name, &c, max_dyn_smem) {
                self.loads[0].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return Ok(f);
            }
        }
        let nv = self
            .nvrtc_version
            .get_or_init(nvrtc_version)
            .clone()
            .map_err(|e| match e {
                Error::Unavailable(m) => Error::Unavailable(format!(
                    "kernel {name} is not embedded for {arch} ({}) and needs NVRTC: {m}",
                    embedded::summary()
                )),
                e => e,
            })?;
        let path =
            cache_dir().map(|d| d.join(cache_file(name, &src, &arch, self.driver_version, nv)));
        if let Some(c) = path.as_ref().and_then(|p| std::fs::read(p).ok()) {
            if let Ok(f) = self.load(name, &c, max_dyn_smem) {
                self.loads[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return Ok(f);
            }
            // A stale or damaged cache file: drop it and compile afresh.
            if let Some(p) = &path {
                let _ = std::fs::remove_file(p);
            }
        }
        let c = nvrtc_cubin(&src, &format!("{name}.cu"), &arch)?;
        if let Some(p) = &path {
            if let Some(d) = p.parent() {
                let _ = std::fs::create_dir_all(d);
            }
            let tmp = p.with_extension(format!("tmp{}", std::process::id()));
            if std::fs::write(&tmp, &c).is_ok() {
                let _ = std::fs::rename(&tmp, p);
            }
        }
        let f = self.load(name, &c, max_dyn_smem)?;
        self.loads[2].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(f)
    }

    /// Load a CUBIN as a module (kept for the life of the process) and get kernel `name`.
    fn load(&self, name: &str, cubin: &[u8], max_dyn_smem: usize) -> Result<Func> {
        let cname = CString::new(name).unwrap();
        unsafe {
            let _ctx = self.enter()?;
            let mut module: cu::CUmodule = std::ptr::null_mut();
            check(
                cu::cuModuleLoadData(&mut module, cubin.as_ptr() as *const c_void),
                "cuModuleLoadData",
            )?;
            let mut f: cu::CUfunction = std::ptr::null_mut();
            check(
                cu::cuModuleGetFunction(&mut f, module, cname.as_ptr()),
                "cuModuleGetFunction",
            )?;
            if max_dyn_smem > 48 * 1024 {
                check(
                    cu::cuFuncSetAttribute(
                        f,
                        cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        max_dyn_smem.min(self.smem_optin) as i32,
                    ),
                    "cuFuncSetAttribute",
                )?;
            }
            let f = Func(f);
            self.funcs.lock().unwrap().insert(name.to_string(), f);
            Ok(f)
        }
    }
}

/// Launch `f` with one by-value struct argument.
///
/// # Safety
/// `args` must match the kernel's parameter struct and every pointer in it must be valid
/// for the launch on `stream`.
pub(crate) unsafe fn launch<A>(
    f: Func,
    grid: (u32, u32),
    block: u32,
    smem: u32,
    stream: cu::CUstream,
    args: &A,
) -> Result<()> {
    let mut p = [args as *const A as *mut c_void];
    check(
        cu::cuLaunchKernel(
            f.0,
            grid.0,
            grid.1,
            1,
            block,
            1,
            1,
            smem,
            stream,
            p.as_mut_ptr(),
            std::ptr::null_mut(),
        ),
        "cuLaunchKernel",
    )
}

/// Stream-ordered scratch, freed (stream-ordered) on drop: no host synchronisation.
pub(crate) struct Scratch {
    stream: cu::CUstream,
    ptrs: Vec<cu::CUdeviceptr>,
}

impl Scratch {
    pub fn new(stream: cu::CUstream) -> Self {
        Scratch {
            stream,
            ptrs: Vec::new(),
        }
    }
    pub fn alloc(&mut self, bytes: usize) -> Result<u64> {
        let mut p: cu::CUdeviceptr = 0;
        // SAFETY: plain stream-ordered allocation on the caller's stream.
        unsafe {
            check(
                cu::cuMemAllocAsync(&mut p, bytes.max(16), self.stream),
                "cuMemAllocAsync",
            )?
        };
        self.ptrs.push(p);
        Ok(p as u64)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for &p in &self.ptrs {
            // SAFETY: each pointer came from cuMemAllocAsync on this stream.
            unsafe {
                let _ = cu::cuMemFreeAsync(p, self.stream);
            }
        }
    }
}

/// The thread's current context set to one device's until drop, then put back.
pub(crate) struct CtxGuard {
    prev: cu::CUcontext,
    set: bool,
}

impl CtxGuard {
    fn enter(ctx: cu::CUcontext) -> Result<CtxGuard> {
        let mut prev: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: reading and setting the thread's current context; `ctx` is a retained
        // primary context.
        unsafe {
            check(cu::cuCtxGetCurrent(&mut prev), "cuCtxGetCurrent")?;
            if prev == ctx {
                return Ok(CtxGuard { prev, set: false });
            }
            check(cu::cuCtxSetCurrent(ctx), "cuCtxSetCurrent")?;
        }
        Ok(CtxGuard { prev, set: true })
    }
}

impl Drop for CtxGuard {
    fn drop(&mut self) {
        if self.set {
            // SAFETY: `prev` was the thread's current context (or null) when entered.
            unsafe {
                let _ = cu::cuCtxSetCurrent(self.prev);
            }
        }
    }
}

/// The CUDA device a device (or managed) pointer belongs to.
pub(crate) fn pointer_device(addr: u64) -> Result<usize> {
    device_count()?;
    let mut ordinal: i32 = -1;
    // SAFETY: the driver only inspects the address.
    let r = unsafe {
        cu::cuPointerGetAttribute(
            &mut ordinal as *mut i32 as *mut c_void,
            cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            addr,
        )
    };
    if r != cu::CUresult::CUDA_SUCCESS || ordinal < 0 {
        return Err(Error::Argument(format!(
            "{addr:#x} is not CUDA device memory ({r:?})"
        )));
    }
    Ok(ordinal as usize)
}

/// (free, total) bytes of the current context's device (tests that exhaust it).
#[cfg(test)]
pub(crate) fn mem_info() -> Result<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: writes two sizes; a context is current.
    unsafe { check(cu::cuMemGetInfo_v2(&mut free, &mut total), "cuMemGetInfo")? };
    Ok((free, total))
}

/// Give the unused memory of device `ordinal`'s default pool back to the device.
#[cfg(test)]
pub(crate) fn trim_pool(ordinal: usize) -> Result<()> {
    // SAFETY: reads the device's default pool and trims it.
    unsafe {
        let mut dev: cu::CUdevice = 0;
        check(cu::cuDeviceGet(&mut dev, ordinal as i32), "cuDeviceGet")?;
        let mut pool: cu::CUmemoryPool = std::ptr::null_mut();
        check(
            cu::cuDeviceGetDefaultMemPool(&mut pool, dev),
            "cuDeviceGetDefaultMemPool",
        )?;
        check(cu::cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo")
    }
}

/// A stream batchlin created (for host data computed on the GPU and for timing), destroyed
/// on drop after its work has run.
pub(crate) struct OwnedStream(pub cu::CUstream);

impl OwnedStream {
    /// A non-blocking stream of the current context.
    pub fn new() -> Result<OwnedStream> {
        let mut s: cu::CUstream = std::ptr::null_mut();
        // SAFETY: creates a stream in the current context.
        unsafe { check(cu::cuStreamCreate(&mut s, 1), "cuStreamCreate")? };
        Ok(OwnedStream(s))
    }
    pub fn sync(&self) -> Result<()> {
        // SAFETY: a stream this value owns.
        unsafe { check(cu::cuStreamSynchronize(self.0), "cuStreamSynchronize") }
    }
}

impl Drop for OwnedStream {
    fn drop(&mut self) {
        // SAFETY: the stream is ours; its queued work finishes before it is destroyed
        // (copies may still target caller memory).
        unsafe {
            let _ = cu::cuStreamSynchronize(self.0);
            let _ = cu::cuStreamDestroy_v2(self.0);
        }
    }
}

/// Device memory allocated synchronously and freed on drop (timing inputs and outputs).
pub(crate) struct DeviceBuffer {
    pub ptr: u64,
    pub bytes: usize,
}

impl DeviceBuffer {
    pub fn new(bytes: usize) -> Result<DeviceBuffer> {
        let mut p = 0;
        // SAFETY: plain allocation in the current context.
        unsafe { check(cu::cuMemAlloc_v2(&mut p, bytes.max(16)), "cuMemAlloc")? };
        Ok(DeviceBuffer { ptr: p, bytes })
    }
    /// Copy `src` (at most `bytes`) in, synchronously.
    pub fn upload(&self, src: &[u8]) -> Result<()> {
        assert!(src.len() <= self.bytes.max(16));
        // SAFETY: `src` is host memory of its length, the buffer holds at least as much.
        unsafe {
            check(
                cu::cuMemcpyHtoD_v2(self.ptr, src.as_ptr() as *const c_void, src.len()),
                "cuMemcpyHtoD",
            )
        }
    }
    /// Copy `dst.len()` bytes out, synchronously.
    pub fn download(&self, dst: &mut [u8]) -> Result<()> {
        self.download_at(0, dst)
    }
    /// Copy `dst.len()` bytes out from `offset` bytes in, synchronously.
    pub fn download_at(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        assert!(offset + dst.len() <= self.bytes.max(16));
        // SAFETY: as `upload`; the range lies inside the buffer.
        unsafe {
            check(
                cu::cuMemcpyDtoH_v2(
                    dst.as_mut_ptr() as *mut c_void,
                    self.ptr + offset as u64,
                    dst.len(),
                ),
                "cuMemcpyDtoH",
            )
        }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemAlloc; the work using it has been synchronised.
        unsafe {
            let _ = cu::cuMemFree_v2(self.ptr);
        }
    }
}

/// Queue a copy of `bytes` from host `src` to device `dst` on `stream`.
///
/// # Safety
/// Both ranges valid until the copy has run; `src` pinned for it to be asynchronous.
pub(crate) unsafe fn copy_to_device(
    dst: u64,
    src: *const u8,
    bytes: usize,
    stream: cu::CUstream,
) -> Result<()> {
    check(
        cu::cuMemcpyHtoDAsync_v2(dst, src as *const c_void, bytes, stream),
        "cuMemcpyHtoDAsync",
    )
}

/// Queue a copy of `bytes` from device `src` to host `dst` on `stream`.
///
/// # Safety
/// As `copy_to_device`.
pub(crate) unsafe fn copy_to_host(
    dst: *mut u8,
    src: u64,
    bytes: usize,
    stream: cu::CUstream,
) -> Result<()> {
    check(
        cu::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src, bytes, stream),
        "cuMemcpyDtoHAsync",
    )
}

/// Queue `words` zero u32 words at `dst` on `stream`.
///
/// # Safety
/// `dst` device memory of the current context holding `words` words.
pub(crate) unsafe fn zero_words(dst: u64, words: usize, stream: cu::CUstream) -> Result<()> {
    fill_words(dst, words, 0, stream)
}

/// Queue `words` u32 words of `value` at `dst` on `stream`.
///
/// # Safety
/// As `zero_words`.
pub(crate) unsafe fn fill_words(
    dst: u64,
    words: usize,
    value: u32,
    stream: cu::CUstream,
) -> Result<()> {
    check(
        cu::cuMemsetD32Async(dst, value, words, stream),
        "cuMemsetD32Async",
    )
}

/// Queue a copy of `bytes` from device memory `src` to device memory `dst` on `stream`.
///
/// # Safety
/// Both device memory of the current context, `bytes` long, not overlapping.
pub(crate) unsafe fn copy_on_device(
    dst: u64,
    src: u64,
    bytes: usize,
    stream: cu::CUstream,
) -> Result<()> {
    check(
        cu::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream),
        "cuMemcpyDtoDAsync",
    )
}

/// A pair of events around queued work: its time on the device.
pub(crate) struct EventPair(cu::CUevent, cu::CUevent);

impl EventPair {
    pub fn new() -> Result<EventPair> {
        let (mut a, mut b) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: creates events in the current context.
        unsafe {
            check(cu::cuEventCreate(&mut a, 0), "cuEventCreate")?;
            if let Err(e) = check(cu::cuEventCreate(&mut b, 0), "cuEventCreate") {
                let _ = cu::cuEventDestroy_v2(a);
                return Err(e);
            }
        }
        Ok(EventPair(a, b))
    }
    pub fn start(&self, stream: cu::CUstream) -> Result<()> {
        // SAFETY: an event of ours on a stream of the current context.
        unsafe { check(cu::cuEventRecord(self.0, stream), "cuEventRecord") }
    }
    /// Record the end and wait for it: milliseconds from start to end.
    pub fn stop_ms(&self, stream: cu::CUstream) -> Result<f64> {
        let mut ms = 0f32;
        // SAFETY: as `start`.
        unsafe {
            check(cu::cuEventRecord(self.1, stream), "cuEventRecord")?;
            check(cu::cuEventSynchronize(self.1), "cuEventSynchronize")?;
            check(
                cu::cuEventElapsedTime_v2(&mut ms, self.0, self.1),
                "cuEventElapsedTime",
            )?;
        }
        Ok(ms as f64)
    }
}

impl Drop for EventPair {
    fn drop(&mut self) {
        // SAFETY: our events.
        unsafe {
            let _ = cu::cuEventDestroy_v2(self.0);
            let _ = cu::cuEventDestroy_v2(self.1);
        }
    }
}

/// An event marking a point in a stream's work (no timing), destroyed on drop.
pub(crate) struct Event(cu::CUevent);

impl Event {
    /// An event of the current context recorded on `stream` now.
    pub fn record(stream: cu::CUstream) -> Result<Event> {
        let mut e = std::ptr::null_mut();
        // SAFETY: creates an event in the current context (2: CU_EVENT_DISABLE_TIMING)
        // and records it on a stream of that context.
        unsafe {
            check(cu::cuEventCreate(&mut e, 2), "cuEventCreate")?;
            let ev = Event(e);
            check(cu::cuEventRecord(ev.0, stream), "cuEventRecord")?;
            Ok(ev)
        }
    }
    /// Wait until the work before it has run.
    pub fn wait(&self) -> Result<()> {
        // SAFETY: our event, recorded.
        unsafe { check(cu::cuEventSynchronize(self.0), "cuEventSynchronize") }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: our event (destroying one whose work is queued is allowed).
        unsafe {
            let _ = cu::cuEventDestroy_v2(self.0);
        }
    }
}

/// A page-locked host buffer for staging, grown as needed and freed on drop.
pub(crate) struct Pinned {
    ptr: *mut u8,
    len: usize,
}
// SAFETY: the pinned buffer is only touched by its owner (under a mutex).
unsafe impl Send for Pinned {}

impl Pinned {
    pub const fn empty() -> Pinned {
        Pinned {
            ptr: std::ptr::null_mut(),
            len: 0,
        }
    }

    /// At least `len` bytes (the current context must be the device's).
    pub fn ensure(&mut self, len: usize) -> Result<*mut u8> {
        if self.len < len {
            self.free();
            let mut p: *mut c_void = std::ptr::null_mut();
            let want = len
                .checked_next_power_of_two()
                .ok_or_else(|| crate::error::out_of_memory::<u8>(len, "pinned staging"))?
                .max(1 << 20);
            // SAFETY: allocates page-locked host memory.
            unsafe { check(cu::cuMemAllocHost_v2(&mut p, want), "cuMemAllocHost")? };
            self.ptr = p as *mut u8;
            self.len = want;
        }
        Ok(self.ptr)
    }

    /// Free the buffer in `ctx` (at exit: see `cuda::release_staging`).
    pub fn release(&mut self, ctx: cu::CUcontext) {
        if !self.ptr.is_null() {
            if let Ok(_guard) = CtxGuard::enter(ctx) {
                self.free();
            }
        }
    }

    fn free(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: allocated by cuMemAllocHost.
            unsafe {
                let _ = cu::cuMemFreeHost(self.ptr as *mut c_void);
            }
            self.ptr = std::ptr::null_mut();
            self.len = 0;
        }
    }
}

/// Page-lock `[ptr, ptr + bytes)` for every context.
///
/// # Safety
/// The range must be host memory the caller owns.
pub(crate) unsafe fn host_register(ptr: *mut c_void, bytes: usize) -> Result<()> {
    check(
        cu::cuMemHostRegister_v2(ptr, bytes, cu::CU_MEMHOSTREGISTER_PORTABLE),
        "cuMemHostRegister",
    )
}

/// Undo `host_register`.
///
/// # Safety
/// `ptr` registered by `host_register` and in use by no queued work.
pub(crate) unsafe fn host_unregister(ptr: *mut c_void) -> Result<()> {
    check(cu::cuMemHostUnregister(ptr), "cuMemHostUnregister")
}
