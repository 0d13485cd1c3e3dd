//! The CPU backends: the batch spread over all cores, one matrix per task, each worker
//! with scratch it reuses for every matrix it takes (no allocation per matrix).
//!
//! For every matrix the driver gathers the input into a column-major work buffer (any
//! strides), checks it is finite, scales it by a power of two, runs the chosen algorithm
//! (`kernels`, batchlin's own small-matrix kernels, or `faer_backend`), then applies the
//! conventions every backend shares (sorting, signs, rank flag), undoes the scaling and
//! writes the outputs where the caller asked.

pub(crate) mod faer_backend;
pub mod kernels;
pub(crate) mod pool;

use crate::entry::{self, Outputs, Request};
use crate::error::{try_vec, Error, Result};
use crate::info::Info;
use crate::plan::Plan;
use crate::problem::{Backend, Operation, QrMode, Uplo};
use crate::scalar::Real;
use crate::view::{BatchMut, BatchRef, RawMut};
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::Par;
use rayon::prelude::*;

/// Which per-matrix algorithm the CPU driver runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum CpuAlgo {
    Small,
    Faer,
}

impl CpuAlgo {
    pub(crate) fn of(backend: Backend) -> Option<CpuAlgo> {
        match backend {
            Backend::CpuSmall => Some(CpuAlgo::Small),
            Backend::CpuFaer => Some(CpuAlgo::Faer),
            _ => None,
        }
    }
}

fn out_mat<'a, T>(v: &'a mut BatchMut<'_, T>) -> OutMat<'a, T> {
    let raw = v.raw();
    OutMat {
        raw,
        layout: v.layout(),
    }
}

/// Run `req` (host data, checked by the entry) by `plan`: the batch spread over the
/// cores, each matrix by the plan's algorithm.
pub(crate) fn run<T: Real>(plan: &Plan, req: &mut Request<'_, T>) -> Result<()> {
    let algo = CpuAlgo::of(plan.backend).ok_or_else(|| {
        Error::Argument(format!("internal: {} is not a CPU backend", plan.backend))
    })?;
    let batch = req.a.layout().batch();
    // An empty batch: nothing to compute, and no scratch to size for matrices that may
    // be huge.
    if batch == 0 {
        return Ok(());
    }
    let mut scratch_info;
    let info: &mut [Info] = match &mut req.info {
        Some(entry::InfoOut::Host(i)) => i,
        Some(entry::InfoOut::Device(_)) => {
            return Err(Error::Argument(
                "internal: device info words for a CPU call".into(),
            ))
        }
        None => {
            scratch_info = try_vec(batch, Info::OK, "the info words")?;
            &mut scratch_info
        }
    };
    let a = &req.a;
    check_scratch_size(a.layout().rows, a.layout().cols)?;
    match (req.operation, &mut req.out) {
        (Operation::Qr(mode), Outputs::Qr { q, r }) => {
            let out = QrOut {
                q: q.as_mut().map(out_mat),
                r: out_mat(r),
            };
            qr_batch(algo, a, mode, out, info)?;
        }
        (Operation::Eigh { uplo, .. }, Outputs::Eigh { w, v }) => {
            let out = EighOut {
                w: out_mat(w),
                v: v.as_mut().map(out_mat),
            };
            eigh_batch(algo, a, uplo, out, info)?;
        }
        (Operation::Svd { full_matrices, .. }, Outputs::Svd { u, s, vh }) => {
            let out = SvdOut {
                u: u.as_mut().map(out_mat),
                s: out_mat(s),
                vh: vh.as_mut().map(out_mat),
            };
            svd_batch(algo, a, full_matrices, out, info)?;
        }
        _ => {
            return Err(Error::Argument(
                "internal: the outputs do not match the operation".into(),
            ))
        }
    }
    Ok(())
}

/// The work buffers of every algorithm are a few (ld x max(m, n)) matrices, ld at most
/// max(m, n) padded to a chunk: refuse a matrix whose scratch cannot be addressed (a
/// zero-stride view of a huge matrix) before any size computation could wrap.
fn check_scratch_size(m: usize, n: usize) -> Result<()> {
    let big = m.max(n).saturating_add(64);
    big.checked_mul(big)
        .and_then(|x| x.checked_mul(16 * 16))
        .filter(|&x| x <= isize::MAX as usize)
        .map(|_| ())
        .ok_or_else(|| {
            Error::OutOfMemory(format!(
                "the scratch for a {m} x {n} matrix exceeds the address space"
            ))
        })
}

/// An output matrix of the batch: where to write and the offset of matrix `index`.
#[derive(Copy, Clone)]
pub(crate) struct OutMat<'a, T> {
    pub raw: RawMut<T>,
    pub layout: &'a crate::view::Layout,
}

impl<T> OutMat<'_, T> {
    #[inline]
    fn base(&self, index: usize) -> isize {
        self.layout.matrix_offset(index)
    }

    /// Set element (i, j) of matrix `index` to `f(i, j)` for i < rows, j < cols, walking
    /// the output's memory in order (rows outermost for row-major outputs).
    #[inline(always)]
    fn write(&self, index: usize, rows: usize, cols: usize, f: impl Fn(usize, usize) -> T) {
        // An empty matrix names no memory: its strides may be anything (isize::MAX), and
        // an offset computed from them would leave the allocation.
        if rows == 0 || cols == 0 {
            return;
        }
        let base = self.base(index);
        // SAFETY (all loops): in range of the output view, checked by the front door, and
        // matrix `index` is written by this worker alone.
        if let (Some(p), true) = (self.raw.contiguous_rows(base, rows), cols > TILE_ABOVE) {
            // Large matrices: column tiles of TILE, each walked down all rows, so that the
            // source (a column-major work matrix, read as f(i, j)) streams TILE columns at a
            // time instead of touching a new cache line for every element of a row.
            for jb in (0..cols).step_by(TILE) {
                let je = (jb + TILE).min(cols);
                for i in 0..rows {
                    let row = unsafe {
                        std::slice::from_raw_parts_mut(
                            p.offset(i as isize * self.raw.row_stride() + jb as isize),
                            je - jb,
                        )
                    };
                    for (j, x) in row.iter_mut().enumerate() {
                        *x = f(i, jb + j);
                    }
                }
            }
        } else if let Some(p) = self.raw.contiguous_rows(base, rows) {
            for i in 0..rows {
                let row = unsafe {
                    std::slice::from_raw_parts_mut(
                        p.offset(i as isize * self.raw.row_stride()),
                        cols,
                    )
                };
                for (j, x) in row.iter_mut().enumerate() {
                    *x = f(i, j);
                }
            }
        } else if let Some(p) = self.raw.contiguous_cols(base, cols) {
            for j in 0..cols {
                let col = unsafe {
                    std::slice::from_raw_parts_mut(
                        p.offset(j as isize * self.raw.col_stride()),
                        rows,
                    )
                };
                for (i, x) in col.iter_mut().enumerate() {
                    *x = f(i, j);
                }
            }
        } else if self.raw.rows_outer() {
            for i in 0..rows {
                for j in 0..cols {
                    unsafe { self.raw.set(base, i, j, f(i, j)) };
                }
            }
        } else {
            for j in 0..cols {
                for i in 0..rows {
                    unsafe { self.raw.set(base, i, j, f(i, j)) };
                }
            }
        }
    }
}

/// Transposing copies of matrices wider than this go by column tiles of `TILE` (8: the
/// columns of a work matrix whose leading dimension is a multiple of 1024 floats fall in
/// one L1 set, 8 ways; 16 measured 1.8x slower at 1024x1024).
const TILE_ABOVE: usize = 64;
const TILE: usize = 8;

/// A pointer to the info words, written once per matrix from the worker threads.
#[derive(Copy, Clone)]
struct InfoOut(*mut Info);
unsafe impl Send for InfoOut {}
unsafe impl Sync for InfoOut {}

/// A worker's scratch: element buffers for the driver and the algorithm, and a byte stack
/// for faer.
struct Workspace<T> {
    buf: Vec<T>,
    mem: MemBuffer,
}

impl<T: Real> Workspace<T> {
    /// Allocated fallibly: running out is `Error::OutOfMemory`, never an abort.
    fn new(len: usize, req: StackReq) -> Result<Self> {
        let buf = try_vec(len, T::ZERO, "a worker's scratch")?;
        let mem = MemBuffer::try_new(req).map_err(|_| {
            Error::OutOfMemory(format!(
                "could not allocate {} of scratch for faer",
                crate::error::human_bytes(req.size_bytes() as u128)
            ))
        })?;
        Ok(Workspace { buf, mem })
    }
}

/// The first error of a parallel loop's workers (each worker's scratch is allocated on
/// the worker); once one is set every worker skips its remaining matrices.
struct FirstError(
    std::sync::Mutex<Option<Error>>,
    std::sync::atomic::AtomicBool,
);

impl FirstError {
    fn new() -> Self {
        FirstError(
            std::sync::Mutex::new(None),
            std::sync::atomic::AtomicBool::new(false),
        )
    }
    fn failed(&self) -> bool {
        self.1.load(std::sync::atomic::Ordering::Relaxed)
    }
    fn set(&self, e: &Error) {
        self.1.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(e.clone());
        }
    }
    fn result(self) -> Result<()> {
        match self.0.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// What handing work to the pool costs, in us, for `serial_head`'s limit: learnt from
/// the calls that went to the pool after a serial head (`Dispatch`), from this start.
/// Measured on the 2-core machine as an AMD EPYC (2026-12-05, calls of 7 QRs of 3 x 2 or
/// 4 eigh of 3 x 3: 3.1-3.4 us on the calling thread, 10-15 on the pool) the wake-up cost
/// 5-13 us; the same machines as an Intel Xeon (2026-12-06) took 14 us back to back and
/// 53-74 us after an idle gap of 50 us or more (the median of 200 round trips of an empty
/// job), so that a fixed figure sent calls of 64 4x4 QRs (20 us alone) to the pool at
/// 35-65 us.
const DISPATCH_US: f64 = 7.5;

/// The pool's wake-up cost as learnt so far (us, f64 bits): a call handed to the pool
/// after a serial head measures it as the pool part's wall time less its work at the
/// head's pace, and moves the estimate an eighth of the way there, the sample first
/// clamped to half and twice the estimate (one descheduled call moves it little). Only
/// calls whose pool part is at most twice the estimate's work a thread count: in longer
/// ones the pace's error would outweigh the wake-up.
struct Dispatch(std::sync::atomic::AtomicU64);

static DISPATCH: Dispatch = Dispatch(std::sync::atomic::AtomicU64::new(DISPATCH_US.to_bits()));

impl Dispatch {
    const MIN_US: f64 = 2.0;
    const MAX_US: f64 = 200.0;

    fn us(&self) -> f64 {
        f64::from_bits(self.0.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// A pool part of `items` that took `wall`, at `pace` an item alone, on `threads`.
    fn observe(&self, wall: std::time::Duration, items: usize, pace: f64, threads: usize) {
        let work_us = items as f64 * pace * 1e6 / threads as f64;
        let est = self.us();
        if !(work_us <= 2.0 * est) {
            return;
        }
        let sample = (wall.as_secs_f64() * 1e6 - work_us).clamp(est / 2.0, est * 2.0);
        let next = (est + (sample - est) / 8.0).clamp(Self::MIN_US, Self::MAX_US);
        // A lost race drops one sample: no matter.
        self.0
            .store(next.to_bits(), std::sync::atomic::Ordering::Relaxed);
    }
}

/// m n min(m, n): a QR's or an SVD's work, up to a constant.
fn work(m: usize, n: usize) -> usize {
    m.saturating_mul(n).saturating_mul(m.min(n))
}

/// What `for_each_matrix` knows of a matrix's cost before running one: whether it is cheap
/// enough that trying the serial head on any batch costs about nothing, and a rough time
/// alone on one core (us) to tell a batch too small for the pool's wake-up before trying.
#[derive(Clone, Copy, Debug)]
struct Cost {
    cheap: bool,
    us: f64,
}

impl Cost {
    /// Whether `serial_head` may try a batch: any batch of cheap matrices (it stops where
    /// the rest is worth the pool), and a batch whose whole projected time alone is under
    /// the limit (two eigh of 13 x 13 took 40-54 us through the pool on the 2-core machine
    /// as an Intel Xeon and 12 us alone; a wrong projection costs at most the two matrices
    /// before the head's first check).
    fn head_worth_trying(self, batch: usize, threads: usize, dispatch_us: f64) -> bool {
        self.cheap || self.batch_alone_beats_pool(batch, threads, dispatch_us)
    }

    /// Whether `batch` such matrices, projected alone on the calling thread, are under the
    /// pool's wake-up limit (`serial_limit`).
    fn batch_alone_beats_pool(self, batch: usize, threads: usize, dispatch_us: f64) -> bool {
        batch as f64 * self.us * 1e-6 <= serial_limit(threads, dispatch_us)
    }
}

/// A QR of m x n: cheap where trying the head costs one matrix of about a microsecond
/// (8 x 8 took 1.1 us on the 2-core machine); its time about 0.3 ns a unit of `work`
/// (one core, 2026-12-06: 16 x 16 2-3 us, 32 x 32 8-9, 64 x 16 5-6, call included).
fn qr_cost(m: usize, n: usize) -> Cost {
    Cost {
        cheap: work(m, n) <= 512,
        us: 3e-4 * work(m, n) as f64,
    }
}

/// As `qr_cost` for eigh of n x n (3 x 3 took 0.8 us, 8 x 8 3.9 on an AMD core; on an
/// Intel core 2026-12-06, float32 / float64: 13 x 13 5 / 6 us, 16 x 16 6 / 8, 24 x 24
/// 14 / 19, 32 x 32 24 / 35).
fn eigh_cost(n: usize) -> Cost {
    let n = n as f64;
    Cost {
        cheap: n <= 4.0,
        us: 0.02 * n * n + 5e-4 * n * n * n,
    }
}

/// As `qr_cost` for an SVD of m x n one matrix at a time (batches too small for pairs to
/// fill the threads): 8 x 8 took 2.8 us, 49 x 4 about 3; 2026-12-06, float32 / float64:
/// 16 x 16 10 / 14 us, 32 x 32 37 / 58, 64 x 16 15 / 23.
fn svd_cost(m: usize, n: usize) -> Cost {
    Cost {
        cheap: work(m, n) <= 1024,
        us: 1.2e-3 * work(m, n) as f64 + 0.02 * (m.min(n) * m.min(n)) as f64,
    }
}

/// The most time (s) the rest of a batch may take alone on the calling thread before the
/// pool, `threads` strong after its wake-up, beats it:
/// rest < dispatch + rest / t  <=>  rest < dispatch t / (t - 1).
fn serial_limit(threads: usize, dispatch_us: f64) -> f64 {
    let t = threads as f64;
    dispatch_us * 1e-6 * t / (t - 1.0)
}

/// Runs `run(0)`, `run(1)`, ... on the calling thread while that beats the pool, and
/// returns how many it ran: after 1, 2, 4, ... timed items it projects the rest at the
/// pace so far and stops where the rest would take longer alone than split over
/// `threads` after the pool's wake-up (`serial_limit`). Measuring rather than estimating
/// from the shape keeps it right on any kernel and input (a matrix that returns early, a
/// NaN, is outvoted at the next check); the shape only says whether to try
/// (`Cost::head_worth_trying`). The first item is not timed: it pays for the caches and
/// the workspace's first touch, and timed alone it sent some calls of 64 tiny matrices
/// to the pool, where they took 3-5x longer (the 2-core machine, 2026-12-06: QR float32
/// 64x3x3 32 us, float64 14.8; 64x2x2 float32 9.4, float64 40.9).
///
/// Returns how many ran and, where it stopped short, the pace it saw (seconds an item).
fn serial_head(
    items: usize,
    threads: usize,
    dispatch_us: f64,
    mut run: impl FnMut(usize),
) -> (usize, f64) {
    let limit = serial_limit(threads, dispatch_us);
    if items == 0 {
        return (0, 0.0);
    }
    run(0);
    let start = std::time::Instant::now();
    let mut check = 1;
    for done in 2..=items {
        run(done - 1);
        let timed = done - 1;
        if timed == check && done < items {
            let pace = start.elapsed().as_secs_f64() / timed as f64;
            if pace * (items - done) as f64 > limit {
                return (done, pace);
            }
            check *= 2;
        }
    }
    (items, 0.0)
}

/// Run `f(workspace, index)` for every matrix of the batch: the first ones on the calling
/// thread (all of a batch too small to be worth the pool, `serial_head`), the rest across
/// the worker threads. With `inner_par` (fewer large matrices than threads) the matrices
/// run side by side, faer using a share of the threads inside each (`par_for`); a lone
/// one gets them all.
fn for_each_matrix<T: Real, F>(
    batch: usize,
    inner_par: bool,
    cost: Cost,
    ws_len: usize,
    req: StackReq,
    info: &mut [Info],
    f: F,
) -> Result<()>
where
    F: Fn(&mut Workspace<T>, usize) -> Info + Sync,
{
    debug_assert_eq!(info.len(), batch);
    if batch == 0 {
        return Ok(());
    }
    let threads = pool::threads();
    if batch == 1 || threads == 1 {
        let mut ws = Workspace::new(ws_len, req)?;
        let mut each = || {
            for (i, slot) in info.iter_mut().enumerate() {
                *slot = f(&mut ws, i);
            }
        };
        // faer's inner parallelism runs on batchlin's pool.
        if inner_par {
            pool::install(each);
        } else {
            each();
        }
        return Ok(());
    }
    let dispatch_us = DISPATCH.us();
    let (head, pace) = if !inner_par && cost.head_worth_trying(batch, threads, dispatch_us) {
        let mut ws = Workspace::new(ws_len, req)?;
        serial_head(batch, threads, dispatch_us, |i| info[i] = f(&mut ws, i))
    } else {
        (0, 0.0)
    };
    if head == batch {
        return Ok(());
    }
    let pooled = std::time::Instant::now();
    let out = InfoOut(info.as_mut_ptr());
    let out = &out;
    let min_len = ((batch - head) / (threads * 8)).max(1);
    let failed = FirstError::new();
    pool::install(|| {
        (head..batch)
            .into_par_iter()
            .with_min_len(min_len)
            .for_each_init(
                || Workspace::new(ws_len, req),
                |ws, i| match ws {
                    Ok(_) if failed.failed() => {}
                    Ok(ws) => {
                        let r = f(ws, i);
                        // SAFETY: each index is visited once and info has `batch` entries.
                        unsafe { *out.0.add(i) = r };
                    }
                    Err(e) => failed.set(e),
                },
            )
    });
    if head > 0 {
        DISPATCH.observe(pooled.elapsed(), batch - head, pace, threads);
    }
    failed.result()
}

/// Whether a lone matrix (or a batch smaller than the thread count) of this size should
/// get cores inside faer rather than one core per matrix.
fn use_inner_par(algo: CpuAlgo, batch: usize, m: usize, n: usize) -> bool {
    algo == CpuAlgo::Faer && batch < pool::threads() && m.saturating_mul(n) >= 192 * 192
}

/// faer's threads inside each matrix: with `inner`, the pool's threads shared among the
/// batch's matrices, which run side by side. One at a time with every thread inside, they
/// took the batch times one matrix's time, and faer's threads barely gain on one matrix at
/// these sizes (16 threads, float32, ms: QR 256x256 3.3 for one matrix, 12.0 for 4, 3.1 for
/// 16 on a thread each; eigh 512x512 22.1, 140, 33.1; the full SVD of 362x181 9.0, 38.8,
/// 10.4; docs/results/h100/2026-12-07-full-tune). The thread count is named here, not
/// left to faer: `Par::rayon(0)` asks rayon's global pool (this is evaluated outside
/// `pool::install`), which builds that pool, and panics where its threads cannot be
/// started (an address-space limit).
fn par_for(inner: bool, batch: usize) -> Par {
    if inner {
        Par::rayon((pool::threads() / batch.max(1)).max(1))
    } else {
        Par::Seq
    }
}

/// Power-of-two factors (two halves, so no intermediate overflows) that multiply by 2^e.
#[derive(Copy, Clone)]
struct Pow2<T>(T, T);

impl<T: Real> Pow2<T> {
    fn new(e: i32) -> Self {
        Pow2(T::exp2i(e / 2), T::exp2i(e - e / 2))
    }
    #[inline(always)]
    fn apply(self, x: T) -> T {
        x * self.0 * self.1
    }
}

/// `Info::OVERFLOW` where the largest result, `max` before unscaling, exceeds the element
/// type's range once unscaled (it and others come out as +-Inf), else 0.
fn overflow_flag<T: Real>(unscale: Pow2<T>, max: T) -> u32 {
    if unscale.apply(max).is_finite() {
        0
    } else {
        Info::OVERFLOW
    }
}

/// The exponent e with max * 2^-e in [0.5, 1); 0 for a zero matrix.
fn scale_exponent<T: Real>(max: T) -> i32 {
    if max > T::ZERO {
        max.exponent()
    } else {
        0
    }
}

/// Gather matrix `index` of `a` (or its transpose) into column-major `w` with leading
/// dimension `ld` (>= rows; rows past the matrix's are zeroed); returns the largest |entry|
/// and whether every entry was finite.
fn gather<T: Real>(
    a: &BatchRef<T>,
    index: usize,
    transpose: bool,
    w: &mut [T],
    ld: usize,
) -> (T, bool) {
    let l = a.layout();
    // An empty matrix names no memory (see `OutMat::write`).
    if l.rows == 0 || l.cols == 0 {
        return (T::ZERO, true);
    }
    let base = l.matrix_offset(index);
    // Element (i, j) of the work matrix sits at base + i * si + j * sj in the input.
    let (rows, cols, si, sj) = if transpose {
        (l.cols, l.rows, l.col_stride, l.row_stride)
    } else {
        (l.rows, l.cols, l.row_stride, l.col_stride)
    };
    debug_assert!(ld >= rows);
    let w = &mut w[..ld * cols];
    let src = a.as_ptr();
    // SAFETY: i < rows, j < cols, and the view was checked on creation. Read the input in
    // memory order; the work buffer is small and cache-resident either way.
    unsafe {
        if sj.unsigned_abs() < si.unsigned_abs() {
            if sj == 1 {
                for i in 0..rows {
                    let row = std::slice::from_raw_parts(src.offset(base + i as isize * si), cols);
                    for (j, &x) in row.iter().enumerate() {
                        *w.get_unchecked_mut(i + j * ld) = x;
                    }
                }
            } else {
                for i in 0..rows {
                    let row = src.offset(base + i as isize * si);
                    for j in 0..cols {
                        w[i + j * ld] = *row.offset(j as isize * sj);
                    }
                }
            }
        } else if si == 1 {
            for j in 0..cols {
                let col = std::slice::from_raw_parts(src.offset(base + j as isize * sj), rows);
                w[j * ld..j * ld + rows].copy_from_slice(col);
            }
        } else {
            for j in 0..cols {
                let col = src.offset(base + j as isize * sj);
                for (i, slot) in w[j * ld..j * ld + rows].iter_mut().enumerate() {
                    *slot = *col.offset(i as isize * si);
                }
            }
        }
    }
    if ld > rows {
        for c in w.chunks_exact_mut(ld) {
            c[rows..].fill(T::ZERO);
        }
    }
    prefetch_next(a, index);
    max_abs_and_finite(w)
}

/// Ask for matrix `index + 1` of `a` to be brought into cache while this one is worked on
/// (the workers take consecutive indices): the input of a large batch streams from memory,
/// and small matrices leave too little time per matrix for the hardware prefetcher alone.
/// Only for matrices whose rows or columns are contiguous (one hint per cache line).
#[inline(always)]
fn prefetch_next<T: Real>(a: &BatchRef<T>, index: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let l = a.layout();
        if index + 1 >= l.batch() {
            return;
        }
        let (lines, len, stride) = if l.col_stride == 1 {
            (l.rows, l.cols, l.row_stride)
        } else if l.row_stride == 1 {
            (l.cols, l.rows, l.col_stride)
        } else {
            return;
        };
        let size = std::mem::size_of::<T>();
        let bytes = len * size;
        if lines * bytes > 64 * 1024 {
            return;
        }
        let base = l.matrix_offset(index + 1);
        let p = a.as_ptr().wrapping_offset(base) as *const i8;
        for r in 0..lines {
            let row = p.wrapping_offset(r as isize * stride * size as isize);
            let mut off = 0;
            while off < bytes {
                // SAFETY: a prefetch hint never faults, whatever the address.
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                        row.wrapping_add(off),
                    )
                };
                off += 64;
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (a, index);
}

/// The largest |entry| and whether every entry is finite (x * 0 is NaN exactly for
/// NaN and Inf, and the sum of those products stays branch-free so it vectorises).
fn max_abs_and_finite<T: Real>(w: &[T]) -> (T, bool) {
    // Eight independent lanes and a plain compare-select (not `max`, whose NaN rule keeps
    // LLVM from vectorising): NaN is caught by the poison sum, not by the maximum.
    const L: usize = 8;
    let mut max = [T::ZERO; L];
    let mut poison = [T::ZERO; L];
    let chunks = w.chunks_exact(L);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..L {
            let a = c[l].abs();
            max[l] = if a > max[l] { a } else { max[l] };
            poison[l] += c[l] * T::ZERO;
        }
    }
    for (l, &x) in rest.iter().enumerate() {
        let a = x.abs();
        max[l] = if a > max[l] { a } else { max[l] };
        poison[l] += x * T::ZERO;
    }
    let mut m = T::ZERO;
    let mut p = T::ZERO;
    for l in 0..L {
        m = if max[l] > m { max[l] } else { m };
        p += poison[l];
    }
    (m, p == T::ZERO)
}

fn scale_in_place<T: Real>(w: &mut [T], e: i32) {
    // Subnormal entries once scaled (below 2^-1022 of a largest entry in [0.5, 1): far
    // below the rounding of anything computed from it) are flushed to zero, whether the
    // scaling made them so or the input held them: the kernels' arithmetic on them could
    // make a NaN from finite input (eighs of a matrix spanning 5 to f64::MAX and of
    // [[1e-40, 1e-40], [1e-40, 0.5]] in f32 did, with a clean info word; both found by
    // the front_door fuzz target).
    let p = Pow2::new(-e);
    for x in w.iter_mut() {
        let y = p.apply(*x);
        *x = if y.abs() < T::MIN_POSITIVE {
            T::ZERO
        } else {
            y
        };
    }
}

/// Fill an output matrix with `value` (NaN for a non-finite input, zero for padding).
fn fill_out<T: Real>(out: &OutMat<T>, index: usize, value: T) {
    out.write(index, out.layout.rows, out.layout.cols, |_, _| value);
}

/// Write an identity (rows x cols) to an output matrix.
fn write_identity<T: Real>(out: &OutMat<T>, index: usize) {
    out.write(index, out.layout.rows, out.layout.cols, |i, j| {
        if i == j {
            T::ONE
        } else {
            T::ZERO
        }
    });
}

/// Index of the entry of largest magnitude (the first on ties).
fn argmax_abs<T: Real>(x: &[T]) -> usize {
    if x.len() <= 64 {
        let mut best = 0;
        let mut bv = T::ZERO;
        for (i, &v) in x.iter().enumerate() {
            if v.abs() > bv {
                bv = v.abs();
                best = i;
            }
        }
        return best;
    }
    // Long columns: the largest |entry| over independent lanes (vectorised), then the
    // first index holding it (NaN never wins, as above).
    const L: usize = 8;
    let mut m = [T::ZERO; L];
    let chunks = x.chunks_exact(L);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..L {
            let a = c[l].abs();
            m[l] = if a > m[l] { a } else { m[l] };
        }
    }
    let mut bv = T::ZERO;
    for a in m.into_iter().chain(rest.iter().map(|v| v.abs())) {
        bv = if a > bv { a } else { bv };
    }
    if bv == T::ZERO {
        return 0;
    }
    x.iter().position(|v| v.abs() == bv).unwrap_or(0)
}

/// Sort `vals` (ascending, or descending) and permute the columns (length `ld`) of
/// every matrix in `cols` the same way. Selection sort: O(n^2) compares, n swaps.
fn sort_with_columns<T: Real>(vals: &mut [T], descending: bool, cols: &mut [(&mut [T], usize)]) {
    let n = vals.len();
    // Already in order (faer's eigenvalues are): nothing to do.
    if vals.windows(2).all(|p| {
        if descending {
            p[0] >= p[1]
        } else {
            p[0] <= p[1]
        }
    }) {
        return;
    }
    for i in 0..n {
        let mut best = i;
        for j in i + 1..n {
            let better = if descending {
                vals[j] > vals[best]
            } else {
                vals[j] < vals[best]
            };
            if better {
                best = j;
            }
        }
        if best != i {
            vals.swap(i, best);
            for (mat, ld) in cols.iter_mut() {
                let ld = *ld;
                let (lo, hi) = mat.split_at_mut(best * ld);
                lo[i * ld..(i + 1) * ld].swap_with_slice(&mut hi[..ld]);
            }
        }
    }
}

/// Sort `vals` descending as `sort_with_columns` does, recording in `order` (`vals.len()`
/// long) which original position each sorted value came from: the same permutation,
/// applied later (to columns, on the way out) instead of by swapping columns.
fn sort_order<T: Real>(vals: &mut [T], order: &mut [usize]) {
    let n = vals.len();
    for (i, o) in order.iter_mut().enumerate() {
        *o = i;
    }
    if vals.windows(2).all(|p| p[0] >= p[1]) {
        return;
    }
    for i in 0..n {
        let mut best = i;
        for j in i + 1..n {
            if vals[j] > vals[best] {
                best = j;
            }
        }
        if best != i {
            vals.swap(i, best);
            order.swap(i, best);
        }
    }
}

/// The largest min(m, n) whose SVD vectors are sorted and signed on the way out (a
/// permutation on the stack) rather than by swapping columns.
const ORDER_MAX: usize = 128;

// ---------------------------------------------------------------------------------------
// QR

pub(crate) struct QrOut<'a, T> {
    pub q: Option<OutMat<'a, T>>,
    pub r: OutMat<'a, T>,
}

pub(crate) fn qr_batch<T: Real>(
    algo: CpuAlgo,
    a: &BatchRef<T>,
    mode: QrMode,
    out: QrOut<T>,
    info: &mut [Info],
) -> Result<()> {
    let l = a.layout();
    let (m, n, batch) = (l.rows, l.cols, l.batch());
    let k = m.min(n);
    let q_cols = match mode {
        QrMode::Complete => m,
        QrMode::Reduced => k,
        QrMode::R => 0,
    };
    let inner = use_inner_par(algo, batch, m, n);
    let par = par_for(inner, batch);
    let req = match algo {
        CpuAlgo::Faer => faer_backend::qr_scratch::<T>(m, n, q_cols, par),
        CpuAlgo::Small => StackReq::EMPTY,
    };
    // Leading dimension of the work matrices: the padded kernels want whole chunks.
    let ld = match algo {
        CpuAlgo::Small => kernels::padded_ld(m),
        CpuAlgo::Faer => m,
    };
    let vlen = match algo {
        CpuAlgo::Small => ld * k,
        CpuAlgo::Faer => 0,
    };
    // Work layout: a (ld x n) | q (ld x q_cols) | reflectors (ld x k) | tau (k) | signs (k)
    let ws_len = ld * n + ld * q_cols + vlen + 2 * k;
    for_each_matrix::<T, _>(
        batch,
        inner,
        qr_cost(m, n),
        ws_len,
        req,
        info,
        |ws, index| {
            let (aw, rest) = ws.buf.split_at_mut(ld * n);
            let (qw, rest) = rest.split_at_mut(ld * q_cols);
            let (vw, rest) = rest.split_at_mut(vlen);
            let (tau, signs) = rest.split_at_mut(k);
            let (max, finite) = gather(a, index, false, aw, ld);
            if !finite {
                fill_out(&out.r, index, T::NAN);
                if let Some(q) = &out.q {
                    fill_out(q, index, T::NAN);
                }
                return Info(Info::NONFINITE);
            }
            if k == 0 {
                fill_out(&out.r, index, T::ZERO);
                if let Some(q) = &out.q {
                    write_identity(q, index);
                }
                return Info::OK;
            }
            let e = scale_exponent(max);
            scale_in_place(aw, e);
            let want_q = out.q.is_some();
            match algo {
                CpuAlgo::Small => {
                    kernels::qr_factor_padded(m, n, aw, ld, vw, tau);
                    if want_q {
                        kernels::qr_form_q_padded(m, k, vw, ld, tau, qw, q_cols);
                    }
                }
                CpuAlgo::Faer => {
                    let stack = MemStack::new(&mut ws.mem);
                    let q = if want_q {
                        Some((&mut qw[..], q_cols))
                    } else {
                        None
                    };
                    faer_backend::qr(m, n, aw, q, par, stack);
                }
            }
            // Sign convention: diag(R) >= 0, so the factorisation of a full-rank matrix is
            // unique and every backend agrees.
            let mut dmax = T::ZERO;
            let mut dmin = T::ZERO;
            for i in 0..k {
                let d = aw[i + i * ld];
                signs[i] = if d < T::ZERO { -T::ONE } else { T::ONE };
                dmax = dmax.max(d.abs());
                dmin = if i == 0 { d.abs() } else { dmin.min(d.abs()) };
            }
            let tol = T::from_f64(m.max(n) as f64) * T::EPSILON * dmax;
            let mut inf = Info::OK;
            if dmin <= tol {
                inf = inf.with_flag(Info::RANK_DEFICIENT);
            }
            let unscale = Pow2::new(e);
            if e > 0 {
                let mut rmax = T::ZERO;
                for j in 0..n {
                    for i in 0..=j.min(k - 1) {
                        rmax = rmax.max(aw[i + j * ld].abs());
                    }
                }
                inf = inf.with_flag(overflow_flag(unscale, rmax));
            }
            out.r.write(index, out.r.layout.rows, n, |i, j| {
                if i <= j && i < k {
                    unscale.apply(aw[i + j * ld] * signs[i])
                } else {
                    T::ZERO
                }
            });
            if let Some(q) = &out.q {
                let signs = &signs[..];
                q.write(index, m, q_cols, |i, j| {
                    let v = qw[i + j * ld];
                    if j < k {
                        v * signs[j]
                    } else {
                        v
                    }
                });
            }
            inf
        },
    )
}

// ---------------------------------------------------------------------------------------
// Symmetric eigendecomposition

/// Gather the `uplo` triangle of matrix `index` as a full symmetric column-major matrix with
/// leading dimension `ld` (rows past n zeroed).
fn gather_symmetric<T: Real>(
    a: &BatchRef<T>,
    index: usize,
    uplo: Uplo,
    w: &mut [T],
    ld: usize,
) -> (T, bool) {
    let l = a.layout();
    let n = l.rows;
    if n == 0 {
        return (T::ZERO, true);
    }
    let base = l.matrix_offset(index);
    // Lower-triangle element (i, j), i >= j, is read at base + i * si + j * sj.
    let (si, sj) = match uplo {
        Uplo::Lower => (l.row_stride, l.col_stride),
        Uplo::Upper => (l.col_stride, l.row_stride),
    };
    let w = &mut w[..ld * n];
    let src = a.as_ptr();
    // SAFETY: i, j < n, and the view was checked on creation. Read in memory order.
    unsafe {
        if sj.unsigned_abs() < si.unsigned_abs() && n > TILE_ABOVE {
            // By column tiles of the lower triangle (see `OutMat::write`).
            for jb in (0..n).step_by(TILE) {
                for i in jb..n {
                    let row = src.offset(base + i as isize * si);
                    for j in jb..(jb + TILE).min(i + 1) {
                        let x = *row.offset(j as isize * sj);
                        *w.get_unchecked_mut(i + j * ld) = x;
                        *w.get_unchecked_mut(j + i * ld) = x;
                    }
                }
            }
        } else if sj.unsigned_abs() < si.unsigned_abs() {
            for i in 0..n {
                let row = src.offset(base + i as isize * si);
                for j in 0..=i {
                    let x = *row.offset(j as isize * sj);
                    w[i + j * ld] = x;
                    w[j + i * ld] = x;
                }
            }
        } else {
            for j in 0..n {
                let col = src.offset(base + j as isize * sj);
                for i in j..n {
                    let x = *col.offset(i as isize * si);
                    w[i + j * ld] = x;
                    w[j + i * ld] = x;
                }
            }
        }
    }
    if ld > n {
        for c in w.chunks_exact_mut(ld) {
            c[n..].fill(T::ZERO);
        }
    }
    prefetch_next(a, index);
    max_abs_and_finite(w)
}

pub(crate) struct EighOut<'a, T> {
    pub w: OutMat<'a, T>,
    pub v: Option<OutMat<'a, T>>,
}

pub(crate) fn eigh_batch<T: Real>(
    algo: CpuAlgo,
    a: &BatchRef<T>,
    uplo: Uplo,
    out: EighOut<T>,
    info: &mut [Info],
) -> Result<()> {
    let l = a.layout();
    let (n, batch) = (l.rows, l.batch());
    let vectors = out.v.is_some();
    let inner = use_inner_par(algo, batch, n, n);
    let par = par_for(inner, batch);
    let (req, kscratch) = match algo {
        CpuAlgo::Faer => (faer_backend::eigh_scratch::<T>(n, vectors, par), 0),
        CpuAlgo::Small => (StackReq::EMPTY, kernels::eigh_scratch_len(n)),
    };
    // Leading dimension of the work matrices: the small kernel wants whole chunks.
    let ld = match algo {
        CpuAlgo::Small => kernels::padded_ld(n),
        CpuAlgo::Faer => n,
    };
    // Work layout: a (ld x n) | w (n) | v (ld x n if vectors) | kernel scratch
    let vlen = if vectors { ld * n } else { 0 };
    let ws_len = ld * n + n + vlen + kscratch;
    for_each_matrix::<T, _>(
        batch,
        inner,
        eigh_cost(n),
        ws_len,
        req,
        info,
        |ws, index| {
            let (aw, rest) = ws.buf.split_at_mut(ld * n);
            let (ww, rest) = rest.split_at_mut(n);
            let (vw, kscr) = rest.split_at_mut(vlen);
            let (max, finite) = gather_symmetric(a, index, uplo, aw, ld);
            if !finite {
                fill_out(&out.w, index, T::NAN);
                if let Some(v) = &out.v {
                    fill_out(v, index, T::NAN);
                }
                return Info(Info::NONFINITE);
            }
            let e = scale_exponent(max);
            scale_in_place(aw, e);
            let vopt = if vectors { Some(&mut vw[..]) } else { None };
            let status = match algo {
                CpuAlgo::Small => kernels::eigh(n, aw, ld, ww, vopt, kscr),
                CpuAlgo::Faer => {
                    faer_backend::eigh(n, aw, ww, vopt, par, MemStack::new(&mut ws.mem))
                }
            };
            let mut inf = Info::OK.with_iterations(status.iterations);
            if !status.converged {
                inf = inf.with_flag(Info::NOT_CONVERGED);
            }
            if vectors {
                sort_with_columns(ww, false, &mut [(&mut vw[..], ld)]);
                // Sign convention: each eigenvector's largest component is positive.
                for j in 0..n {
                    let col = &mut vw[j * ld..j * ld + n];
                    if col[argmax_abs(col)] < T::ZERO {
                        col.iter_mut().for_each(|x| *x = -*x);
                    }
                }
            } else {
                sort_with_columns(ww, false, &mut []);
            }
            let unscale = Pow2::new(e);
            let wmax = ww.iter().fold(T::ZERO, |m, x| m.max(x.abs()));
            inf = inf.with_flag(overflow_flag(unscale, wmax));
            out.w.write(index, 1, n, |_, j| unscale.apply(ww[j]));
            if let Some(v) = &out.v {
                v.write(index, n, n, |i, j| vw[i + j * ld]);
            }
            inf
        },
    )
}

// ---------------------------------------------------------------------------------------
// SVD

pub(crate) struct SvdOut<'a, T> {
    pub u: Option<OutMat<'a, T>>,
    pub s: OutMat<'a, T>,
    pub vh: Option<OutMat<'a, T>>,
}

pub(crate) fn svd_batch<T: Real>(
    algo: CpuAlgo,
    a: &BatchRef<T>,
    full: bool,
    out: SvdOut<T>,
    info: &mut [Info],
) -> Result<()> {
    let l = a.layout();
    let (m, n, batch) = (l.rows, l.cols, l.batch());
    // Work on the tall orientation: p x q with p >= q. A wide A is decomposed as A^T.
    let transpose = m < n;
    let (p, q) = if transpose { (n, m) } else { (m, n) };
    let vectors = out.u.is_some();
    let u_cols = if full { p } else { q };
    let inner = use_inner_par(algo, batch, m, n);
    let par = par_for(inner, batch);
    // Leading dimensions of the work matrices: the small kernel wants whole chunks.
    let (ld, ldv) = match algo {
        CpuAlgo::Small => (kernels::padded_ld(p), kernels::padded_ld(q)),
        CpuAlgo::Faer => (p, q),
    };
    let (req, kscratch) = match algo {
        CpuAlgo::Faer => (
            faer_backend::svd_scratch::<T>(p, q, vectors.then_some(u_cols), vectors, par),
            0,
        ),
        CpuAlgo::Small => (
            StackReq::EMPTY,
            kernels::svd_scratch_len(p, q) + if full { 3 * ld * q + q } else { 0 },
        ),
    };
    let (ulen, vlen) = if vectors {
        (ld * u_cols, ldv * q)
    } else {
        (0, 0)
    };
    // Work layout: a (ld x q) | s (q) | u (ld x u_cols) | v (ldv x q) | kernel scratch
    let ws_len = ld * q + q + ulen + vlen + kscratch;
    let parts = [ld * q, q, ulen, vlen, kscratch];
    // Gather and scale matrix `index`: the scaling exponent, or (outputs written) its info
    // when there is nothing to decompose.
    let start = |w: &mut SvdWork<T>, index: usize| -> std::result::Result<i32, Info> {
        let (max, finite) = gather(a, index, transpose, w.aw, ld);
        if !finite {
            fill_out(&out.s, index, T::NAN);
            for o in [&out.u, &out.vh].into_iter().flatten() {
                fill_out(o, index, T::NAN);
            }
            return Err(Info(Info::NONFINITE));
        }
        if q == 0 {
            for o in [&out.u, &out.vh].into_iter().flatten() {
                write_identity(o, index);
            }
            return Err(Info::OK);
        }
        let e = scale_exponent(max);
        scale_in_place(w.aw, e);
        Ok(e)
    };
    // The full basis of U, when asked for, after the kernel.
    let complete = |w: &mut SvdWork<T>| {
        if vectors && u_cols > q {
            complete_basis(p, q, w.uw, ld, w.kscr);
        }
    };
    // Conventions, unscaling and write-out of matrix `index` after its kernel.
    let finish =
        |w: &mut SvdWork<T>, index: usize, e: i32, status: kernels::KernelStatus| -> Info {
            let SvdWork { sw, uw, vw, .. } = w;
            let (sw, uw, vw) = (&mut **sw, &mut **uw, &mut **vw);
            let mut inf = Info::OK.with_iterations(status.iterations);
            if !status.converged {
                inf = inf.with_flag(Info::NOT_CONVERGED);
            }
            for x in sw.iter_mut() {
                *x = x.abs();
            }
            // After sorting: the rank flag, and S unscaled and written.
            let rank_and_s = |sw: &[T], inf: &mut Info| {
                let smax = sw[0];
                if sw[q - 1] <= T::from_f64(p as f64) * T::EPSILON * smax || smax == T::ZERO {
                    *inf = inf.with_flag(Info::RANK_DEFICIENT);
                }
                let unscale = Pow2::new(e);
                let smax = sw.iter().fold(T::ZERO, |m, x| m.max(*x));
                *inf = inf.with_flag(overflow_flag(unscale, smax));
                out.s.write(index, 1, q, |_, j| unscale.apply(sw[j]));
            };
            if vectors && q <= ORDER_MAX {
                // Sorted and signed on the way out: column j of the result is work column
                // order[j] times sg[j] (the permutation `sort_with_columns` would make).
                let mut order = [0usize; ORDER_MAX];
                let order = &mut order[..q];
                sort_order(sw, order);
                let mut sg = [T::ONE; ORDER_MAX];
                for (j, &c) in order.iter().enumerate() {
                    // Sign convention: each column of A's U has its largest component positive
                    // (A's U is the work V when A was transposed).
                    let lead = if transpose {
                        &vw[c * ldv..c * ldv + q]
                    } else {
                        &uw[c * ld..c * ld + p]
                    };
                    if lead[argmax_abs(lead)] < T::ZERO {
                        sg[j] = -T::ONE;
                    }
                }
                for j in q..u_cols {
                    let col = &mut uw[j * ld..j * ld + p];
                    if col[argmax_abs(col)] < T::ZERO {
                        col.iter_mut().for_each(|x| *x = -*x);
                    }
                }
                rank_and_s(sw, &mut inf);
                if let (Some(u), Some(vh)) = (&out.u, &out.vh) {
                    let (uw, vw, order) = (&uw[..], &vw[..], &order[..]);
                    if !transpose {
                        u.write(index, m, u.layout.cols, |i, j| {
                            if j < q {
                                uw[i + order[j] * ld] * sg[j]
                            } else {
                                uw[i + j * ld]
                            }
                        });
                        vh.write(index, vh.layout.rows, n, |i, j| {
                            vw[j + order[i] * ldv] * sg[i]
                        });
                    } else {
                        u.write(index, m, u.layout.cols, |i, j| {
                            vw[i + order[j] * ldv] * sg[j]
                        });
                        vh.write(index, vh.layout.rows, n, |i, j| {
                            if i < q {
                                uw[j + order[i] * ld] * sg[i]
                            } else {
                                uw[j + i * ld]
                            }
                        });
                    }
                }
                return inf;
            }
            if vectors {
                let (u_first, _) = uw.split_at_mut(ld * q);
                sort_with_columns(sw, true, &mut [(u_first, ld), (&mut vw[..], ldv)]);
                // Sign convention: each column of A's U has its largest component positive
                // (A's U is the work V when A was transposed).
                for j in 0..q {
                    let lead = if transpose {
                        &vw[j * ldv..j * ldv + q]
                    } else {
                        &uw[j * ld..j * ld + p]
                    };
                    if lead[argmax_abs(lead)] < T::ZERO {
                        uw[j * ld..(j + 1) * ld].iter_mut().for_each(|x| *x = -*x);
                        vw[j * ldv..(j + 1) * ldv].iter_mut().for_each(|x| *x = -*x);
                    }
                }
                for j in q..u_cols {
                    let col = &mut uw[j * ld..j * ld + p];
                    if col[argmax_abs(col)] < T::ZERO {
                        col.iter_mut().for_each(|x| *x = -*x);
                    }
                }
            } else {
                sort_with_columns(sw, true, &mut []);
            }
            rank_and_s(sw, &mut inf);
            // Tall: U = uw, Vh = vw^T. Wide (transposed): U = vw, Vh = uw^T.
            if let (Some(u), Some(vh)) = (&out.u, &out.vh) {
                let (uw, vw) = (&uw[..], &vw[..]);
                if !transpose {
                    u.write(index, m, u.layout.cols, |i, j| uw[i + j * ld]);
                    vh.write(index, vh.layout.rows, n, |i, j| vw[j + i * ldv]);
                } else {
                    u.write(index, m, u.layout.cols, |i, j| vw[i + j * ldv]);
                    vh.write(index, vh.layout.rows, n, |i, j| uw[j + i * ld]);
                }
            }
            inf
        };
    // The small kernel on one matrix.
    let small = |w: &mut SvdWork<T>| -> kernels::KernelStatus {
        let (uo, vo) = if vectors {
            (Some(&mut w.uw[..ld * q]), Some(&mut w.vw[..]))
        } else {
            (None, None)
        };
        let st = kernels::svd(p, q, w.aw, ld, w.sw, uo, vo, ldv, w.kscr);
        complete(w);
        st
    };
    // Pairs only where they fill every thread: two SVDs of 34 x 170 took 390 us as a pair
    // on one core of the 2-core machine and 200 on a core each (2026-12-05).
    let pairs_fill = batch > 1 && batch.div_ceil(2) >= pool::threads();
    if algo == CpuAlgo::Small && !inner && pairs_fill && q <= PAIR_MAX {
        // Two matrices a task, their bidiagonal QR iterations interleaved on one core (see
        // `kernels::svd_pair`); a matrix whose partner has nothing to decompose runs alone.
        let cost = svd_cost(m, n);
        let r = for_each_pair::<T, _>(batch, 2 * ws_len, cost, info, |ws, index, inf| {
            let (b0, b1) = ws.buf.split_at_mut(ws_len);
            let (mut w0, mut w1) = (SvdWork::new(b0, parts), SvdWork::new(b1, parts));
            let e0 = start(&mut w0, index);
            let e1 = if inf.len() > 1 {
                start(&mut w1, index + 1)
            } else {
                Err(Info::OK)
            };
            match (e0, e1) {
                (Ok(e0), Ok(e1)) => {
                    let (u, v) = if vectors {
                        (
                            Some([&mut w0.uw[..ld * q], &mut w1.uw[..ld * q]]),
                            Some([&mut w0.vw[..], &mut w1.vw[..]]),
                        )
                    } else {
                        (None, None)
                    };
                    let [st0, st1] = kernels::svd_pair(
                        p,
                        q,
                        [&mut w0.aw[..], &mut w1.aw[..]],
                        ld,
                        [&mut w0.sw[..], &mut w1.sw[..]],
                        u,
                        v,
                        ldv,
                        [&mut w0.kscr[..], &mut w1.kscr[..]],
                    );
                    complete(&mut w0);
                    complete(&mut w1);
                    inf[0] = finish(&mut w0, index, e0, st0);
                    inf[1] = finish(&mut w1, index + 1, e1, st1);
                }
                (e0, e1) => {
                    for (k, (w, e)) in [(&mut w0, e0), (&mut w1, e1)]
                        .into_iter()
                        .enumerate()
                        .take(inf.len())
                    {
                        inf[k] = match e {
                            Ok(e) => {
                                let st = small(w);
                                finish(w, index + k, e, st)
                            }
                            Err(i) => i,
                        };
                    }
                }
            }
        });
        return r;
    }
    for_each_matrix::<T, _>(
        batch,
        inner,
        svd_cost(m, n),
        ws_len,
        req,
        info,
        |ws, index| {
            let mut w = SvdWork::new(&mut ws.buf, parts);
            let e = match start(&mut w, index) {
                Ok(e) => e,
                Err(i) => return i,
            };
            let status = match algo {
                CpuAlgo::Small => small(&mut w),
                CpuAlgo::Faer => {
                    let (uo, vo) = if vectors {
                        (Some((&mut w.uw[..], u_cols)), Some(&mut w.vw[..]))
                    } else {
                        (None, None)
                    };
                    faer_backend::svd(p, q, w.aw, w.sw, uo, vo, par, MemStack::new(&mut ws.mem))
                }
            };
            finish(&mut w, index, e, status)
        },
    )
}

/// The SVD's per-matrix work buffers (see `svd_batch`'s work layout).
struct SvdWork<'a, T> {
    aw: &'a mut [T],
    sw: &'a mut [T],
    uw: &'a mut [T],
    vw: &'a mut [T],
    kscr: &'a mut [T],
}

impl<'a, T> SvdWork<'a, T> {
    /// Split `buf` into parts of the given lengths (a, s, u, v, kernel scratch).
    fn new(buf: &'a mut [T], len: [usize; 5]) -> Self {
        let (aw, rest) = buf.split_at_mut(len[0]);
        let (sw, rest) = rest.split_at_mut(len[1]);
        let (uw, rest) = rest.split_at_mut(len[2]);
        let (vw, kscr) = rest.split_at_mut(len[3]);
        SvdWork {
            aw,
            sw,
            uw,
            vw,
            kscr: &mut kscr[..len[4]],
        }
    }
}

/// The largest SVD (min(m, n)) that the small kernel runs two matrices at a time: one
/// core, float32, us a matrix, single / pair: 2.8 / 2.3 at 8, 35.2 / 28.0 at 32, 151 / 130
/// at 64, 821 / 785 at 128 (above, the router sends f64 to faer and the pair was not
/// measured).
const PAIR_MAX: usize = 128;

/// As `for_each_matrix` (one core per task, no inner parallelism), over pairs of
/// consecutive matrices: `f(workspace, i, info)` handles matrices i and i + 1 and sets
/// their info (`info` holds one entry when i is the last matrix of an odd batch). A batch
/// whose projected time alone is under the pool's wake-up limit runs on the calling
/// thread, as `for_each_matrix`'s small batches do.
fn for_each_pair<T: Real, F>(
    batch: usize,
    ws_len: usize,
    cost: Cost,
    info: &mut [Info],
    f: F,
) -> Result<()>
where
    F: Fn(&mut Workspace<T>, usize, &mut [Info]) + Sync,
{
    debug_assert_eq!(info.len(), batch);
    let threads = pool::threads();
    if threads == 1 || cost.batch_alone_beats_pool(batch, threads, DISPATCH.us()) {
        let mut ws = Workspace::new(ws_len, StackReq::EMPTY)?;
        for (pair, inf) in info.chunks_mut(2).enumerate() {
            f(&mut ws, 2 * pair, inf);
        }
        return Ok(());
    }
    let min_len = (batch / 2 / (threads * 8)).max(1);
    let failed = FirstError::new();
    pool::install(|| {
        info.par_chunks_mut(2)
            .enumerate()
            .with_min_len(min_len)
            .for_each_init(
                || Workspace::new(ws_len, StackReq::EMPTY),
                |ws, (pair, inf)| match ws {
                    Ok(_) if failed.failed() => {}
                    Ok(ws) => f(ws, 2 * pair, inf),
                    Err(e) => failed.set(e),
                },
            )
    });
    failed.result()
}

/// Extend the p x q orthonormal columns at the start of `u` (leading dimension `ld`, rows
/// p..ld zero; room for p columns) to a full orthonormal basis: a Householder QR of them
/// gives the complement.
fn complete_basis<T: Real>(p: usize, q: usize, u: &mut [T], ld: usize, scratch: &mut [T]) {
    let (orig, rest) = scratch.split_at_mut(ld * q);
    let (fact, rest) = rest.split_at_mut(ld * q);
    let (refl, rest) = rest.split_at_mut(ld * q);
    let tau = &mut rest[..q];
    orig.copy_from_slice(&u[..ld * q]);
    fact.copy_from_slice(&u[..ld * q]);
    kernels::qr_factor_padded(p, q, fact, ld, refl, tau);
    kernels::qr_form_q_padded(p, q, refl, ld, tau, &mut u[..ld * p], p);
    u[..ld * q].copy_from_slice(orig);
}

#[cfg(test)]
mod tests {
    use super::serial_head;

    /// The indices run, in order, by a `serial_head` of `items` whose items take `each`.
    fn head_of(items: usize, each: std::time::Duration) -> Vec<usize> {
        let mut ran = vec![];
        let (head, _) = serial_head(items, 2, super::DISPATCH_US, |i| {
            ran.push(i);
            std::thread::sleep(each);
        });
        assert_eq!(ran, (0..head).collect::<Vec<_>>());
        ran
    }

    #[test]
    fn serial_head_keeps_cheap_batches_and_hands_on_dear_ones() {
        // 1 ms an item: the rest projects far over the limit at the first check (after
        // the untimed first item and one timed).
        assert_eq!(head_of(8, std::time::Duration::from_millis(1)).len(), 2);
        // A lone item always runs.
        assert_eq!(head_of(1, std::time::Duration::from_millis(1)).len(), 1);
        // Items of no time run here (a descheduled moment can cut a try short: one of
        // five tries must keep the whole batch).
        let kept = (0..5).any(|_| {
            let mut n = 0;
            serial_head(16, 2, super::DISPATCH_US, |_| n += 1).0 == 16 && n == 16
        });
        assert!(kept, "16 empty items were handed to the pool in five tries");
        // A slow first item (cold caches) does not set the pace.
        let kept = (0..5).any(|_| {
            let mut n = 0;
            let (head, _) = serial_head(16, 2, super::DISPATCH_US, |i| {
                n += 1;
                if i == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            });
            head == 16 && n == 16
        });
        assert!(
            kept,
            "a slow first item handed the rest to the pool in five tries"
        );
        // An empty batch runs nothing.
        let mut n = 0;
        assert_eq!(serial_head(0, 2, super::DISPATCH_US, |_| n += 1).0, 0);
        assert_eq!(n, 0);
    }

    #[test]
    fn a_batch_whose_work_is_under_the_wake_up_tries_the_head() {
        use super::{eigh_cost, qr_cost, svd_cost};
        // The Intel 2-core machine's wake-up back to back (14 us): two eigh of 13 x 13
        // (12 us alone) and two wide QRs of 5 x 81 try it; the cheap shapes try it at any
        // batch; a batch of dear matrices or many mid-size ones goes straight to the pool.
        assert!(eigh_cost(13).head_worth_trying(2, 2, 14.0));
        assert!(qr_cost(5, 81).head_worth_trying(2, 2, 14.0));
        assert!(eigh_cost(8).head_worth_trying(5, 2, 14.0));
        assert!(qr_cost(4, 4).head_worth_trying(100_000, 2, 14.0));
        assert!(!eigh_cost(100).head_worth_trying(2, 2, 14.0));
        assert!(!svd_cost(32, 32).head_worth_trying(2, 2, 14.0));
        assert!(!eigh_cost(13).head_worth_trying(1000, 2, 14.0));
        // The projections follow the measured times within about 2x (see the costs).
        for (cost, us) in [
            (qr_cost(32, 32), 8.5),
            (eigh_cost(13), 5.5),
            (eigh_cost(32), 30.0),
            (svd_cost(16, 16), 12.0),
            (svd_cost(64, 16), 19.0),
        ] {
            assert!(
                cost.us > us / 2.0 && cost.us < us * 2.0,
                "{cost:?} against {us} us"
            );
        }
    }

    #[test]
    fn the_dispatch_estimate_follows_its_samples_and_not_outliers() {
        use super::Dispatch;
        use std::time::Duration;
        let d = Dispatch(std::sync::atomic::AtomicU64::new(7.5f64.to_bits()));
        // 10 items of 1 us on 2 threads (5 us of work a thread) taking 45 us: a wake-up
        // of 40 us, reached in steps of at most twice the estimate.
        for _ in 0..60 {
            d.observe(Duration::from_micros(45), 10, 1e-6, 2);
        }
        assert!((d.us() - 40.0).abs() < 1.0, "{}", d.us());
        // One descheduled call (10 ms) moves it by at most an eighth.
        d.observe(Duration::from_millis(10), 10, 1e-6, 2);
        assert!(d.us() <= 45.0 + 1e-9, "{}", d.us());
        // A long pool part (work far beyond the estimate) is no sample.
        let before = d.us();
        d.observe(Duration::from_micros(100), 1000, 1e-6, 2);
        assert_eq!(d.us(), before);
        // Nor below the floor: wake-ups of no time.
        for _ in 0..200 {
            d.observe(Duration::from_micros(1), 2, 1e-6, 2);
        }
        assert_eq!(d.us(), Dispatch::MIN_US);
    }
}
