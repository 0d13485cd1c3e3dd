//! Timing of device-resident calls, for `batchlin bench` on a GPU machine.

use super::{driver, qr_device, CudaBackend, DevMat, QrKernel};
use crate::{Error, Info, Real, Result};
use cudarc::driver::sys as cu;

/// A timed device QR: the median time of a call and the outputs of the last one.
pub struct DeviceTiming<T> {
    /// Median milliseconds a call (CUDA events around each call).
    pub ms: f64,
    /// The kernel `Auto` chose.
    pub kernel: QrKernel,
    /// Which of the host inputs the last call read (its outputs are below).
    pub last_input: usize,
    /// Q (`batch x m x k`) and R (`batch x k x n`), row-major, and the info words.
    pub q: Vec<T>,
    pub r: Vec<T>,
    pub info: Vec<Info>,
}

/// Device memory freed on drop.
struct DevBuf(u64);
impl DevBuf {
    fn new(bytes: usize) -> Result<DevBuf> {
        let mut p = 0;
        driver::check(
            unsafe { cu::cuMemAlloc_v2(&mut p, bytes.max(4)) },
            "cuMemAlloc",
        )?;
        Ok(DevBuf(p))
    }
}
impl Drop for DevBuf {
    fn drop(&mut self) {
        let _ = unsafe { cu::cuMemFree_v2(self.0) };
    }
}

fn contiguous(ptr: u64, rows: usize, cols: usize) -> DevMat {
    DevMat {
        ptr,
        batch_stride: (rows * cols) as i64,
        row_stride: cols as i64,
        col_stride: 1,
    }
}

/// Reduced QR of `batch` row-major `m x n` matrices kept in device memory, as a program
/// calls it: inputs uploaded once, in enough copies (rotated) that the 50 MB L2 does not
/// flatter small problems; outputs allocated once; `reps` timed calls after 3 warm-ups.
pub fn time_qr_device<T: Real>(
    batch: usize,
    m: usize,
    n: usize,
    inputs: &[&[T]],
    reps: usize,
) -> Result<DeviceTiming<T>> {
    let be = CudaBackend::get()?;
    let k = m.min(n);
    let es = std::mem::size_of::<T>();
    let elems = batch * m * n;
    if inputs.is_empty() || inputs.iter().any(|x| x.len() != elems) {
        return Err(Error::Shape(format!(
            "time_qr_device needs inputs of {elems} elements"
        )));
    }
    be.dev.make_current()?;
    let copies = ((256usize << 20) / (elems * es).max(1) + 1).clamp(2, 16);
    let bufs = (0..copies)
        .map(|c| {
            let b = DevBuf::new(elems * es)?;
            let src = inputs[c % inputs.len()];
            driver::check(
                unsafe { cu::cuMemcpyHtoD_v2(b.0, src.as_ptr() as *const _, elems * es) },
                "cuMemcpyHtoD",
            )?;
            Ok(b)
        })
        .collect::<Result<Vec<_>>>()?;
    let (dq, dr, di) = (
        DevBuf::new(batch * m * k * es)?,
        DevBuf::new(batch * k * n * es)?,
        DevBuf::new(batch * 4)?,
    );
    let mut times = Vec::with_capacity(reps);
    let mut last = 0;
    unsafe {
        let mut stream: cu::CUstream = std::ptr::null_mut();
        driver::check(cu::cuStreamCreate(&mut stream, 1), "cuStreamCreate")?;
        let (mut e0, mut e1) = (std::ptr::null_mut(), std::ptr::null_mut());
        driver::check(cu::cuEventCreate(&mut e0, 0), "cuEventCreate")?;
        driver::check(cu::cuEventCreate(&mut e1, 0), "cuEventCreate")?;
        let res = (|| -> Result<()> {
            for it in 0..reps.max(1) + 3 {
                let c = it % copies;
                driver::check(cu::cuEventRecord(e0, stream), "cuEventRecord")?;
                qr_device::<T>(
                    be,
                    stream,
                    QrKernel::Auto,
                    batch,
                    m,
                    n,
                    contiguous(bufs[c].0, m, n),
                    Some(contiguous(dq.0, m, k)),
                    k,
                    contiguous(dr.0, k, n),
                    k,
                    di.0,
                )?;
                driver::check(cu::cuEventRecord(e1, stream), "cuEventRecord")?;
                driver::check(cu::cuEventSynchronize(e1), "cuEventSynchronize")?;
                let mut ms = 0f32;
                driver::check(
                    cu::cuEventElapsedTime_v2(&mut ms, e0, e1),
                    "cuEventElapsedTime",
                )?;
                if it >= 3 {
                    times.push(ms as f64);
                }
                last = c % inputs.len();
            }
            Ok(())
        })();
        let _ = cu::cuEventDestroy_v2(e0);
        let _ = cu::cuEventDestroy_v2(e1);
        let _ = cu::cuStreamDestroy_v2(stream);
        res?;
    }
    let mut q = vec![T::ZERO; batch * m * k];
    let mut r = vec![T::ZERO; batch * k * n];
    let mut words = vec![0u32; batch];
    unsafe {
        driver::check(
            cu::cuMemcpyDtoH_v2(q.as_mut_ptr() as *mut _, dq.0, q.len() * es),
            "cuMemcpyDtoH",
        )?;
        driver::check(
            cu::cuMemcpyDtoH_v2(r.as_mut_ptr() as *mut _, dr.0, r.len() * es),
            "cuMemcpyDtoH",
        )?;
        driver::check(
            cu::cuMemcpyDtoH_v2(words.as_mut_ptr() as *mut _, di.0, batch * 4),
            "cuMemcpyDtoH",
        )?;
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok(DeviceTiming {
        ms: times[times.len() / 2],
        kernel: be.qr_kernel_for::<T>(batch, m, n, Some(k)),
        last_input: last,
        q,
        r,
        info: words.into_iter().map(Info).collect(),
    })
}
