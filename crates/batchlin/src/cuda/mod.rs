//! The CUDA backend: batched QR on NVIDIA GPUs.
//!
//! Everything goes through the CUDA driver and NVRTC, loaded at run time (cudarc's
//! dynamic loading): on a machine with no CUDA the crate still builds and runs, and
//! [`CudaBackend::get`] returns [`Error::Unavailable`] saying why.
//!
//! - Kernels are CUDA C in `kernels/` (`common.cu` then `qr.cu`), compiled by NVRTC for
//!   the device's compute capability on first use, one module per kernel, cached in
//!   memory and on disk (`$BATCHLIN_CACHE_DIR`, else `$XDG_CACHE_HOME/batchlin`, else
//!   `~/.cache/batchlin`; keyed by source hash, arch, driver and NVRTC versions).
//! - [`qr_device`] works on the caller's device pointers and stream as given: no host
//!   synchronisation, scratch from the stream-ordered pool, info words left on the device.
//! - [`qr_host`] is the convenience path for host memory (pinned staging, synchronous).
//!
//! Kernels (see docs/proposals/cuda-qr.md for what each costs where):
//! - `warp`: a matrix per group of 8/16/32 lanes, column j in lane j's registers, every
//!   step unrolled (n, or m in complete mode, up to 32; m up to 64, 32 in f64);
//! - `tile`: a block a matrix, the matrix in registers over a 2-D grid of threads (rows
//!   over lanes, columns over lane groups and warps), the reflectors in shared memory
//!   (m up to 128 and up to 128 columns);
//! - `smem`: a block a matrix, the matrix in shared memory (up to 227 KB);
//! - `wy`: as smem, blocked: panels of 8 columns, the trailing matrix updated once a panel
//!   (compact WY, V in registers), Q formed backwards the same way (m up to 128; Auto
//!   sends it only what `tile` cannot take: more than 128 columns);
//! - `tall`: TSQR over 128-row leaves plus batched products for Q (n <= 64);
//! - `blocked`: blocked Householder QR across the grid, panels of 16/32 columns and
//!   grid-wide updates (any size; for large matrices alone or in small batches).
//! - `cluster`: a thread-block cluster of 8 blocks a matrix, a row a thread, the whole
//!   reduced/r QR in one launch (n <= 64, m <= 2048; small batches of tall matrices;
//!   compute capability 9.0 and later).

pub mod bench;
mod driver;
mod qr;
mod qr_blocked;
pub mod registry;
#[cfg(test)]
mod tests;

use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys as cu;

use crate::{DType, Error, Info, Real, Result};

/// A CUDA stream handle (null: the legacy default stream).
pub type Stream = cu::CUstream;

/// Which QR kernel runs; `Auto` picks by shape. A forced kernel that cannot take the
/// shape is an [`Error::Argument`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum QrKernel {
    Auto,
    Warp,
    Tile,
    Smem,
    Wy,
    Tall,
    Blocked,
    Cluster,
}

impl QrKernel {
    pub const FORCEABLE: [QrKernel; 7] = [
        QrKernel::Warp,
        QrKernel::Tile,
        QrKernel::Smem,
        QrKernel::Wy,
        QrKernel::Tall,
        QrKernel::Blocked,
        QrKernel::Cluster,
    ];

    pub fn name(self) -> &'static str {
        match self {
            QrKernel::Auto => "auto",
            QrKernel::Warp => "warp",
            QrKernel::Tile => "tile",
            QrKernel::Smem => "smem",
            QrKernel::Wy => "wy",
            QrKernel::Tall => "tall",
            QrKernel::Blocked => "blocked",
            QrKernel::Cluster => "cluster",
        }
    }

    pub fn from_name(s: &str) -> Result<QrKernel> {
        Ok(match s {
            "auto" => QrKernel::Auto,
            "warp" => QrKernel::Warp,
            "tile" => QrKernel::Tile,
            "smem" => QrKernel::Smem,
            "wy" => QrKernel::Wy,
            "tall" => QrKernel::Tall,
            "blocked" => QrKernel::Blocked,
            "cluster" => QrKernel::Cluster,
            _ => {
                return Err(Error::Argument(format!(
                    "unknown CUDA QR kernel {s:?}: expected auto, warp, tile, smem, wy, tall, blocked or cluster"
                )))
            }
        })
    }
}

/// A batch of matrices in device memory: element (b, i, j) at
/// `ptr + (b*batch_stride + i*row_stride + j*col_stride) * size_of::<T>()`.
/// The pointer is the caller's: batchlin never frees it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DevMat {
    pub ptr: u64,
    pub batch_stride: i64,
    pub row_stride: i64,
    pub col_stride: i64,
}

/// A batch of matrices in host memory, element (b, i, j) at
/// `data[b*batch_stride + i*row_stride + j*col_stride]`.
#[derive(Debug)]
pub struct HostMat<'a, T> {
    pub data: &'a [T],
    pub batch_stride: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

/// The output counterpart of [`HostMat`].
#[derive(Debug)]
pub struct HostMatMut<'a, T> {
    pub data: &'a mut [T],
    pub batch_stride: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

/// The process's CUDA device 0 (its primary context, the one PyTorch and CuPy use).
pub struct CudaBackend {
    dev: driver::Device,
    staging: Mutex<Pinned>,
}

struct Pinned {
    ptr: *mut u8,
    len: usize,
}
// SAFETY: the pinned buffer is only touched under its mutex.
unsafe impl Send for Pinned {}

impl Pinned {
    fn ensure(&mut self, len: usize) -> Result<*mut u8> {
        if self.len < len {
            unsafe {
                if !self.ptr.is_null() {
                    let _ = cu::cuMemFreeHost(self.ptr as *mut std::ffi::c_void);
                    self.ptr = std::ptr::null_mut();
                    self.len = 0;
                }
                let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
                let want = len.next_power_of_two().max(1 << 20);
                driver::check(cu::cuMemAllocHost_v2(&mut p, want), "cuMemAllocHost")?;
                self.ptr = p as *mut u8;
                self.len = want;
            }
        }
        Ok(self.ptr)
    }
}

static BACKEND: OnceLock<Result<CudaBackend>> = OnceLock::new();

impl CudaBackend {
    /// The backend, opened on first use; `Err(Unavailable)` with the reason when there is
    /// no CUDA driver, NVRTC or device.
    pub fn get() -> Result<&'static CudaBackend> {
        BACKEND
            .get_or_init(|| {
                let dev = std::panic::catch_unwind(driver::open).unwrap_or_else(|_| {
                    Err(Error::Unavailable(
                        "the CUDA libraries could not be loaded".into(),
                    ))
                })?;
                Ok(CudaBackend {
                    dev,
                    staging: Mutex::new(Pinned {
                        ptr: std::ptr::null_mut(),
                        len: 0,
                    }),
                })
            })
            .as_ref()
            .map_err(|e| e.clone())
    }

    pub fn device_name(&self) -> String {
        self.dev.name.clone()
    }
    pub fn sm_count(&self) -> u32 {
        self.dev.sm_count
    }
    pub fn compute_capability(&self) -> (i32, i32) {
        self.dev.cc
    }
    /// Driver API version, e.g. 13000.
    pub fn driver_version(&self) -> i32 {
        self.dev.driver_version
    }

    /// The kernel `Auto` runs for this shape (`q_cols`: None for mode "r").
    pub fn qr_kernel_for<T: Real>(
        &self,
        batch: usize,
        m: usize,
        n: usize,
        q_cols: Option<usize>,
    ) -> QrKernel {
        let ncols = q_cols.map_or(n, |q| q.max(n));
        let reduced_or_r = q_cols.is_none_or(|q| q == m.min(n));
        qr::choose::<T>(&self.dev, batch, m, n, ncols, reduced_or_r)
    }
}

fn check_dims(
    batch: usize,
    m: usize,
    n: usize,
    q_cols: Option<usize>,
    r_rows: usize,
) -> Result<()> {
    let k = m.min(n);
    if let Some(qc) = q_cols {
        if qc != k && qc != m {
            return Err(Error::Output(format!(
                "Q must have k = {k} (reduced) or m = {m} (complete) columns, not {qc}"
            )));
        }
        if (qc == m) != (r_rows == m) && k != m {
            return Err(Error::Output(format!(
                "complete mode needs Q m x m and R m x n; got {qc} Q columns, {r_rows} R rows"
            )));
        }
    }
    if r_rows != k && r_rows != m {
        return Err(Error::Output(format!(
            "R must have k = {k} or m = {m} rows, not {r_rows}"
        )));
    }
    let lim = i32::MAX as usize;
    if batch > lim || m > lim / 2 || n > lim / 2 {
        return Err(Error::Overflow(format!(
            "batch {batch} of {m}x{n} is too large for the CUDA kernels"
        )));
    }
    Ok(())
}

/// QR of a batch of `m x n` matrices in device memory, queued on `stream`.
///
/// `q`: `m x q_cols` (q_cols = min(m,n) reduced, m complete), or None for mode "r";
/// `r`: `r_rows x n`, zeros below the diagonal; `info`: device address of `batch` u32
/// words ([`Info`] bits). diag(R) >= 0. Returns once the work is queued.
///
/// # Safety
/// Every pointer must be valid device memory of the current device for the elements its
/// strides reach, outputs must not overlap the input or each other, and `stream` must be
/// a valid stream of the primary context (or null).
#[allow(clippy::too_many_arguments)]
pub unsafe fn qr_device<T: Real>(
    be: &CudaBackend,
    stream: Stream,
    kernel: QrKernel,
    batch: usize,
    m: usize,
    n: usize,
    a: DevMat,
    q: Option<DevMat>,
    q_cols: usize,
    r: DevMat,
    r_rows: usize,
    info: u64,
) -> Result<()> {
    check_dims(batch, m, n, q.map(|_| q_cols), r_rows)?;
    if batch == 0 {
        return Ok(());
    }
    be.dev.make_current()?;
    if m == 0 || n == 0 {
        // Nothing to factor: R is empty; a complete Q (M x M) is the identity.
        if let Some(qm) = q {
            if m > 0 && q_cols == m {
                qr::eye::<T>(&be.dev, stream, batch, m, qm)?;
            }
        }
        if info == 0 {
            return Ok(());
        }
        return driver::check(
            cu::cuMemsetD32Async(info, 0, batch, stream),
            "cuMemsetD32Async",
        );
    }
    // info 0 (the C API's NULL): the kernels write their words to pool scratch instead,
    // freed stream-ordered after them when `discard` drops at the end of this function.
    let mut discard = driver::Scratch::new(stream);
    let info = if info == 0 {
        discard.alloc(batch * 4)?
    } else {
        info
    };
    let kind = match kernel {
        QrKernel::Auto => be.qr_kernel_for::<T>(batch, m, n, q.map(|_| q_cols)),
        k => k,
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
    };
    qr::run::<T>(&be.dev, kind, stream, &call)
}

fn span(bs: usize, rs: usize, cs: usize, batch: usize, rows: usize, cols: usize) -> usize {
    if batch == 0 || rows == 0 || cols == 0 {
        0
    } else {
        (batch - 1) * bs + (rows - 1) * rs + (cols - 1) * cs + 1
    }
}

/// QR of a batch in host memory through the GPU: copies in through pinned staging, runs,
/// copies out and synchronises. Same conventions as [`qr_device`]; `info` gets one word
/// per matrix.
#[allow(clippy::too_many_arguments)]
pub fn qr_host<T: Real>(
    kernel: QrKernel,
    batch: usize,
    m: usize,
    n: usize,
    a: HostMat<'_, T>,
    q: Option<HostMatMut<'_, T>>,
    q_cols: usize,
    r: HostMatMut<'_, T>,
    r_rows: usize,
    info: &mut [Info],
) -> Result<()> {
    let be = CudaBackend::get()?;
    check_dims(batch, m, n, q.as_ref().map(|_| q_cols), r_rows)?;
    let es = std::mem::size_of::<T>();
    let a_len = span(a.batch_stride, a.row_stride, a.col_stride, batch, m, n);
    if a.data.len() < a_len {
        return Err(Error::Shape(format!(
            "input holds {} elements; its strides reach {a_len}",
            a.data.len()
        )));
    }
    if let Some(q) = &q {
        let l = span(q.batch_stride, q.row_stride, q.col_stride, batch, m, q_cols);
        if q.data.len() < l {
            return Err(Error::Output(format!(
                "Q holds {} elements; its strides reach {l}",
                q.data.len()
            )));
        }
    }
    let r_len = span(r.batch_stride, r.row_stride, r.col_stride, batch, r_rows, n);
    if r.data.len() < r_len {
        return Err(Error::Output(format!(
            "R holds {} elements; its strides reach {r_len}",
            r.data.len()
        )));
    }
    if info.len() < batch {
        return Err(Error::Output(format!(
            "info holds {} words for {batch} matrices",
            info.len()
        )));
    }
    if batch == 0 {
        return Ok(());
    }
    let q_elems = if q.is_some() { batch * m * q_cols } else { 0 };
    let r_elems = batch * r_rows * n;
    let a_bytes = a_len * es;
    // Buffers inside ranges the caller registered (registry.rs) are already pinned: the
    // input is copied to the device straight from its span, and an output laid out as the
    // device writes it (row-major contiguous) straight back into place. The tokens keep
    // them registered until this call returns. Everything else goes through staging.
    let a_reg = registry::lookup(a.data.as_ptr().cast(), a_bytes);
    let q_reg = q.as_ref().and_then(|q| {
        let dense = is_dense(q.batch_stride, q.row_stride, q.col_stride, batch, m, q_cols);
        dense.then(|| registry::lookup(q.data.as_ptr().cast(), q_elems * es))?
    });
    let r_reg = is_dense(r.batch_stride, r.row_stride, r.col_stride, batch, r_rows, n)
        .then(|| registry::lookup(r.data.as_ptr().cast(), r_elems * es))
        .flatten();
    let mut q = q;
    let q_home = q.as_mut().map(|q| q.data.as_mut_ptr() as *mut u8);
    let r_home = r.data.as_mut_ptr() as *mut u8;
    // Staging offsets of the outputs that go through it: Q, R, then the info words.
    let q_staged = if q.is_some() && q_reg.is_none() {
        q_elems * es
    } else {
        0
    };
    let r_staged = if r_reg.is_none() { r_elems * es } else { 0 };
    let (r_off, info_off) = (q_staged, q_staged + r_staged);
    let out_bytes = info_off + batch * 4;
    let in_bytes = if a_reg.is_none() { a_bytes } else { 0 };
    be.dev.make_current()?;
    let mut staging = be.staging.lock().unwrap();
    let pin = staging.ensure(in_bytes.max(out_bytes))?;
    unsafe {
        let mut stream: cu::CUstream = std::ptr::null_mut();
        driver::check(
            cu::cuStreamCreate(&mut stream, 1 /* non-blocking */),
            "cuStreamCreate",
        )?;
        let res = (|| -> Result<()> {
            let mut sc = driver::Scratch::new(stream);
            let da = sc.alloc(a_bytes)?;
            let dq = if q.is_some() {
                sc.alloc(q_elems * es)?
            } else {
                0
            };
            let dr = sc.alloc(r_elems * es)?;
            let dinfo = sc.alloc(batch * 4)?;
            let a_src = if a_reg.is_some() {
                a.data.as_ptr() as *const u8
            } else {
                std::ptr::copy_nonoverlapping(a.data.as_ptr() as *const u8, pin, a_bytes);
                pin as *const u8
            };
            driver::check(
                cu::cuMemcpyHtoDAsync_v2(da, a_src as *const _, a_bytes, stream),
                "cuMemcpyHtoDAsync",
            )?;
            let dm = |p: u64, rows: usize, cols: usize| DevMat {
                ptr: p,
                batch_stride: (rows * cols) as i64,
                row_stride: cols as i64,
                col_stride: 1,
            };
            let am = DevMat {
                ptr: da,
                batch_stride: a.batch_stride as i64,
                row_stride: a.row_stride as i64,
                col_stride: a.col_stride as i64,
            };
            let qm = q.as_ref().map(|_| dm(dq, m, q_cols));
            qr_device::<T>(
                be,
                stream,
                kernel,
                batch,
                m,
                n,
                am,
                qm,
                q_cols,
                dm(dr, r_rows, n),
                r_rows,
                dinfo,
            )?;
            if a_reg.is_none() {
                // The input copy must be done before the staging buffer is reused for
                // outputs.
                driver::check(cu::cuStreamSynchronize(stream), "cuStreamSynchronize")?;
            }
            if let Some(home) = q_home {
                let dst = if q_reg.is_some() { home } else { pin };
                driver::check(
                    cu::cuMemcpyDtoHAsync_v2(dst as *mut _, dq, q_elems * es, stream),
                    "cuMemcpyDtoHAsync",
                )?;
            }
            let dst = if r_reg.is_some() {
                r_home
            } else {
                pin.add(r_off)
            };
            driver::check(
                cu::cuMemcpyDtoHAsync_v2(dst as *mut _, dr, r_elems * es, stream),
                "cuMemcpyDtoHAsync",
            )?;
            driver::check(
                cu::cuMemcpyDtoHAsync_v2(pin.add(info_off) as *mut _, dinfo, batch * 4, stream),
                "cuMemcpyDtoHAsync",
            )?;
            drop(sc);
            driver::check(cu::cuStreamSynchronize(stream), "cuStreamSynchronize")
        })();
        if res.is_err() {
            // Copies to or from the caller's buffers may still be queued: let them finish
            // before those buffers go back to the caller.
            let _ = cu::cuStreamSynchronize(stream);
        }
        let _ = cu::cuStreamDestroy_v2(stream);
        res?;
        if let Some(q) = q.filter(|_| q_reg.is_none()) {
            let src = std::slice::from_raw_parts(pin as *const T, q_elems);
            for b in 0..batch {
                for i in 0..m {
                    for j in 0..q_cols {
                        q.data[b * q.batch_stride + i * q.row_stride + j * q.col_stride] =
                            src[(b * m + i) * q_cols + j];
                    }
                }
            }
        }
        if r_reg.is_none() {
            let src = std::slice::from_raw_parts(pin.add(r_off) as *const T, r_elems);
            for b in 0..batch {
                for i in 0..r_rows {
                    for j in 0..n {
                        r.data[b * r.batch_stride + i * r.row_stride + j * r.col_stride] =
                            src[(b * r_rows + i) * n + j];
                    }
                }
            }
        }
        let words = std::slice::from_raw_parts(pin.add(info_off) as *const u32, batch);
        for (d, &w) in info.iter_mut().zip(words) {
            *d = Info(w);
        }
    }
    Ok(())
}

/// Whether strides place a batch of `rows x cols` matrices row-major and contiguous, as
/// the device writes outputs (strides of dimensions of length 1 do not matter).
fn is_dense(bs: usize, rs: usize, cs: usize, batch: usize, rows: usize, cols: usize) -> bool {
    (batch <= 1 || bs == rows * cols) && (rows <= 1 || rs == cols) && (cols <= 1 || cs == 1)
}

fn all_instantiations() -> Vec<(String, String)> {
    let mut insts = Vec::new();
    for (tn, ct) in [("f32", "float"), ("f64", "double")] {
        let dtype = if tn == "f32" { DType::F32 } else { DType::F64 };
        for &(mm, w, rs) in qr::REG_SHAPES {
            if mm / rs <= qr::warp_lane_rows(dtype) {
                insts.push((
                    format!("qr_warp_{tn}_m{mm}_w{w}_s{rs}"),
                    format!("BL_QR_WARP({tn}, {ct}, {mm}, {w}, {rs})"),
                ));
            }
        }
        for shape in qr::tile_shapes(dtype) {
            insts.push((shape.name(tn), shape.inst(tn, ct)));
        }
        insts.push((format!("qr_smem_{tn}"), format!("BL_QR_SMEM({tn}, {ct})")));
        for rpl in qr::WY_RPL {
            insts.push((
                format!("qr_wy_{tn}_r{rpl}"),
                format!("BL_QR_WY({tn}, {ct}, {rpl})"),
            ));
        }
        for (nc, minb) in qr::cluster_variants(dtype) {
            insts.push((
                format!("qr_cluster_{tn}_n{nc}_b{minb}"),
                format!("BL_QR_CLUSTER({tn}, {ct}, {nc}, {minb})"),
            ));
        }
        insts.push((format!("gemm_{tn}"), format!("BL_GEMM({tn}, {ct})")));
        insts.push((format!("eye_{tn}"), format!("BL_EYE({tn}, {ct})")));
    }
    insts.extend(qr_blocked::instantiations());
    insts
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
    // SAFETY: only dlopens.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Error::Unavailable(
            "no NVRTC library (libnvrtc.so) found".into(),
        ));
    }
    let nv = driver::nvrtc_version()?;
    let mut out = Vec::new();
    for (name, inst) in all_instantiations() {
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
