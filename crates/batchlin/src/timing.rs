//! The one timing harness: `bench`, the kernel sweeps of the GPU tests, and the lab time
//! calls through it, so every figure is taken the same way (docs/ARCHITECTURE.md,
//! "Measuring"). A timed call goes through the entry with a fixed plan's options, so what
//! is timed is what users run.
//!
//! - GPU: inputs uploaded once in enough copies (rotated) that the 50 MB L2 does not
//!   flatter small problems (`DeviceInputs`, reusable), outputs allocated once, CUDA
//!   events around each call on a stream of ours, 3 warm-ups (1 where the first call
//!   takes over 50 ms; fewer on a device kept busy, `WarmUp`), the median of `reps`.
//! - CPU: wall clock around each call, 1 warm-up, the median of `reps`.

use crate::cuda::{self, DeviceBuffer, EventPair};
use crate::entry::{self, DeviceWords, InfoOut, Request};
use crate::error::{Error, Result};
use crate::info::Info;
use crate::place::{Place, Stream};
use crate::plan::{self, Plan};
use crate::problem::{Backend, Options, Problem};
use crate::scalar::Real;
use crate::view::{contiguous_strides, BatchMut, BatchRef, Tensor};

/// A timed call: the plan it ran by, the median and spread of its times, and the
/// outputs of the last call (row-major, as the allocating front door returns them).
pub struct Timing<T> {
    pub plan: Plan,
    /// Median milliseconds a call.
    pub ms: f64,
    /// Fastest and slowest call, and the quartiles, milliseconds.
    pub min_ms: f64,
    pub max_ms: f64,
    pub p25_ms: f64,
    pub p75_ms: f64,
    /// Calls timed.
    pub reps: usize,
    /// Which of the inputs the last call read.
    pub last_input: usize,
    /// The outputs of the last call, in the order the operation returns them (Q, R;
    /// W, V; U, S, Vh) (from a GPU, of the matrices `time_device_on` was asked to bring
    /// back), and its info words.
    pub outputs: Vec<Tensor<T>>,
    pub info: Vec<Info>,
}

/// The present outputs of `p` (batch flattened to one dimension), in return order:
/// (shape, a batch of vectors).
fn output_shapes(p: &Problem) -> Result<Vec<(Vec<usize>, bool)>> {
    Ok(entry::slots(p.variant.operation(), &[p.batch], p.m, p.n)?
        .into_iter()
        .filter_map(|s| s.shape.map(|sh| (sh, s.vectors)))
        .collect())
}

/// The samples' median, minimum, maximum, 25th and 75th percentiles (the nearest sample).
fn spread(mut t: Vec<f64>) -> [f64; 5] {
    t.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| t[((t.len() - 1) as f64 * q).round() as usize];
    [middle(&t), t[0], t[t.len() - 1], at(0.25), at(0.75)]
}

/// The median of the samples (`middle`).
pub fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    middle(&t)
}

/// The middle of sorted samples, of an even count the lower one: other work only
/// lengthens a call, and of two readings (a `tune` call of 10-100 ms) the upper was the
/// slower one, one burst deciding: a 2-core tune (2026-12-06) read QR R of 6x3232x130
/// float32 on `cpu-small` at 23.9 ms where another had read 13.4.
fn middle(sorted: &[f64]) -> f64 {
    sorted[(sorted.len() - 1) / 2]
}

/// The runs of consecutive values in `v`: (where each starts in `v`, its length).
fn consecutive_runs(v: &[usize]) -> Vec<(usize, usize)> {
    let mut runs = vec![];
    let mut start = 0;
    while start < v.len() {
        let len = 1 + v[start..]
            .windows(2)
            .take_while(|w| w[1] == w[0] + 1)
            .count();
        runs.push((start, len));
        start += len;
    }
    runs
}

/// A zeroed output of `shape` whose pages nothing has touched: calloc's, as NumPy's
/// `np.zeros` and `np.empty` get (a large one mapped afresh, its pages faulting in as
/// the call writes them). `Tensor::zeros` writes its zeros.
fn untouched<T: Real>(shape: &[usize]) -> Result<Tensor<T>> {
    let n = crate::view::checked_product(shape)?;
    let what = format!("an output of shape {shape:?}");
    crate::error::check_memory((n * std::mem::size_of::<T>()) as u128, &what)?;
    let layout = match std::alloc::Layout::array::<T>(n) {
        Ok(l) if l.size() > 0 => l,
        Ok(_) => return Tensor::zeros(shape),
        Err(_) => return Err(crate::error::out_of_memory::<T>(n, &what)),
    };
    // SAFETY: a layout of non-zero size; all-zero bytes are 0.0 in f32 and f64 (the
    // `Real` types), and the Vec frees with the layout it was allocated with.
    let data = unsafe {
        let ptr = std::alloc::alloc_zeroed(layout) as *mut T;
        if ptr.is_null() {
            return Err(crate::error::out_of_memory::<T>(n, &what));
        }
        huge_pages(ptr.cast(), layout.size());
        Vec::from_raw_parts(ptr, n, n)
    };
    Tensor::from_vec(data, shape)
}

/// Asks for transparent huge pages over the whole pages of `[ptr, ptr + bytes)` from 4
/// MiB, as NumPy does for its arrays (where the kernel's setting is "madvise", a large
/// output then faults in 2 MiB at a time, not 4 KiB).
pub(crate) fn huge_pages(ptr: *mut u8, bytes: usize) {
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
    #[cfg(target_os = "linux")]
    if bytes >= 4 << 20 {
        let start = (ptr as usize).next_multiple_of(4096);
        let end = (ptr as usize + bytes) & !4095;
        if end > start {
            // SAFETY: advice over pages of an allocation of ours; it changes no contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}

fn check_inputs<T>(p: &Problem, inputs: &[&[T]]) -> Result<usize> {
    let elems = p.batch * p.m * p.n;
    if inputs.is_empty() || inputs.iter().any(|x| x.len() != elems) {
        return Err(Error::Shape(format!(
            "timing {p} needs row-major inputs of {elems} elements"
        )));
    }
    Ok(elems)
}

/// A CPU call this long is timed from the first: it warms its own caches and threads
/// (its outputs fresh, as every call's), and a `tune` of the 2-core machine spent a third
/// of its time on calls of 10-100 ms, each warmed up before every round.
const HOST_SELF_WARM_MS: f64 = 10.0;

/// Time `p` on host data (the CPU backends, or the GPU with copies when `opts` force it)
/// over `inputs` (row-major `batch x m x n` each), each call into outputs allocated for
/// it (as a front door's), `reps` timed calls after a warm-up
/// (on the CPU none before a call over `HOST_SELF_WARM_MS`: the first counts; a GPU's
/// first call is never timed, as it may compile the kernel's module); `reps` 0: about a
/// second's worth, at least 3 (one for calls over a second).
pub fn time_host<T: Real>(
    p: &Problem,
    opts: &Options,
    inputs: &[&[T]],
    reps: usize,
) -> Result<Timing<T>> {
    check_inputs(p, inputs)?;
    let plan = plan::plan(p, &Place::Host, opts)?;
    let op = p.variant.operation();
    let shapes = output_shapes(p)?;
    let fresh = || -> Result<Vec<Tensor<T>>> { shapes.iter().map(|(s, _)| untouched(s)).collect() };
    let mut outs = fresh()?;
    let mut info = vec![Info::OK; p.batch];
    let mut times = Vec::new();
    let mut last = 0;
    let mut reps = reps;
    let mut it = 0;
    while times.len() < reps.max(1) {
        // Every call writes into outputs allocated for it, as a front door's are: the
        // allocator maps large ones afresh each call (glibc's mmap, even for a size it has
        // just unmapped), and their pages fault in as the kernel writes them. Into reused
        // outputs the CPU's calls were priced below what NumPy pays, and below the GPU's
        // copies, which are timed into fresh memory (`cuda::time_copies`): QR 4096x32x32
        // float32 on 2 cores 16.5 ms with its outputs' pages in place, 20.0-20.5 from
        // NumPy and 20.3 so (2026-12-06); on an H100 machine's 16 threads the table said
        // 2.94 ms where NumPy took 4.4-5.7, which kept that shape off the GPU.
        if it > 0 {
            outs = fresh()?;
        }
        let c = it % inputs.len();
        let a = BatchRef::contiguous(inputs[c], &[p.batch, p.m, p.n])?;
        let views = outs
            .iter_mut()
            .zip(&shapes)
            .map(|(t, (shape, vectors))| {
                if *vectors {
                    BatchMut::contiguous_vectors(&mut t.data, shape)
                } else {
                    BatchMut::contiguous(&mut t.data, shape)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let out = entry::assemble(op, views)?;
        let req = Request {
            operation: op,
            a,
            out,
            info: Some(InfoOut::Host(&mut info)),
            place: Place::Host,
        };
        let t0 = std::time::Instant::now();
        entry::execute(&plan, &mut { req })?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        if it == 0 && reps == 0 {
            reps = if ms > 1e3 {
                1
            } else {
                ((1e3 / ms.max(1e-3)) as usize).clamp(3, 200)
            };
        }
        if it >= 1 || (ms > HOST_SELF_WARM_MS && plan.backend != Backend::Cuda) {
            times.push(ms);
        }
        last = c;
        it += 1;
    }
    let [ms, min_ms, max_ms, p25_ms, p75_ms] = spread(times);
    Ok(Timing {
        plan,
        ms,
        min_ms,
        max_ms,
        p25_ms,
        p75_ms,
        reps,
        last_input: last,
        outputs: outs,
        info,
    })
}

/// Time `p` on device-resident data on CUDA device `ordinal`, as a program calls it
/// (see the module notes), `reps` timed calls after the warm-ups (`time_device_on`).
pub fn time_device<T: Real>(
    p: &Problem,
    ordinal: usize,
    opts: &Options,
    inputs: &[&[T]],
    reps: usize,
) -> Result<Timing<T>> {
    let on = DeviceInputs::upload(p, ordinal, inputs)?;
    let all: Vec<usize> = (0..p.batch).collect();
    time_device_on(p, &on, opts, reps, &all, WarmUp::Idle)
}

/// Host inputs uploaded to a CUDA device once, in enough copies (rotated) that the L2
/// does not flatter small problems, for timing several kernels or rounds on them
/// (`time_device_on`) without uploading again.
pub struct DeviceInputs {
    ordinal: usize,
    /// Elements of one input and of one of its matrices, and bytes of an element.
    elems: usize,
    each: usize,
    elem_bytes: usize,
    /// How many host inputs there were: buffer c holds input c % inputs.
    inputs: usize,
    bufs: Vec<DeviceBuffer>,
}

impl DeviceInputs {
    /// Upload `inputs` (row-major `batch x m x n` each) for `p` to device `ordinal`.
    pub fn upload<T: Real>(p: &Problem, ordinal: usize, inputs: &[&[T]]) -> Result<Self> {
        let elems = check_inputs(p, inputs)?;
        let dev = cuda::device(ordinal)?;
        let _ctx = dev.dev.enter()?;
        let es = std::mem::size_of::<T>();
        let copies = ((256usize << 20) / (elems * es).max(1) + 1).clamp(2, 16);
        let bufs = (0..copies)
            .map(|c| {
                let x = inputs[c % inputs.len()];
                let b = DeviceBuffer::new(elems * es)?;
                // SAFETY: plain floats viewed as bytes.
                b.upload(unsafe {
                    std::slice::from_raw_parts(x.as_ptr() as *const u8, std::mem::size_of_val(x))
                })?;
                Ok(b)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DeviceInputs {
            ordinal,
            elems,
            each: p.m * p.n,
            elem_bytes: es,
            inputs: inputs.len(),
            bufs,
        })
    }
}

impl Drop for DeviceInputs {
    fn drop(&mut self) {
        // The buffers are freed with their device's context current.
        let guard = cuda::device(self.ordinal).and_then(|d| d.dev.enter());
        self.bufs.clear();
        drop(guard);
    }
}

/// A first call this long warms the device up alone: the other warm-ups are skipped.
const LONG_WARM_UP_MS: f64 = 50.0;

/// The untimed calls before the timed ones (`time_device_on`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum WarmUp {
    /// The device may have been idle (its clocks low): 3 calls, 1 where the first takes
    /// over `LONG_WARM_UP_MS`. The first call is never timed: it may compile the kernel's
    /// module.
    Idle,
    /// The device kept busy (a tune): 1 call, to load the kernel's module; where it takes
    /// over `LONG_WARM_UP_MS` and it neither compiled a module nor loaded cuSOLVER's
    /// kernels, it is the first timed call (a call of a second would otherwise run twice
    /// to give one time).
    Busy,
    /// The same plan ran on these inputs just before: 1 call, none over
    /// `LONG_WARM_UP_MS`.
    Warm,
}

/// Time `p` on inputs already on the device (`DeviceInputs`; the first `p.batch` matrices
/// of a larger batch uploaded will do), `reps` timed calls after
/// the warm-ups `warm_up` says. The outputs of the last call's matrices `keep` (indices
/// into the batch, in that order) come back to the host, a tensor of `keep.len()`
/// matrices an output (a check reads a few; a `tune` round brought 4096 64x64 Q factors,
/// 134 MB, back through pageable memory for nothing), and its info words.
pub fn time_device_on<T: Real>(
    p: &Problem,
    on: &DeviceInputs,
    opts: &Options,
    reps: usize,
    keep: &[usize],
    warm_up: WarmUp,
) -> Result<Timing<T>> {
    let es = std::mem::size_of::<T>();
    // The whole batch uploaded or its leading part (a `tune` probe).
    if p.m * p.n != on.each || p.batch * on.each > on.elems || on.elem_bytes != es {
        return Err(Error::Shape(format!(
            "timing {p}: the uploaded inputs are of another shape or type"
        )));
    }
    let ordinal = on.ordinal;
    let dev = cuda::device(ordinal)?;
    let _ctx = dev.dev.enter()?;
    let shapes = output_shapes(p)?;
    let out_bufs = shapes
        .iter()
        .map(|(s, _)| DeviceBuffer::new(s.iter().product::<usize>() * es))
        .collect::<Result<Vec<_>>>()?;
    let info_buf = DeviceBuffer::new(p.batch * 4)?;
    let stream = cuda::OwnedStream::new()?;
    let place = Place::Cuda {
        ordinal,
        // SAFETY: a stream of this device's primary context, alive past every call.
        stream: unsafe { Stream::from_raw(stream.0 as *mut std::ffi::c_void) },
    };
    let plan = plan::plan(p, &place, opts)?;
    let op = p.variant.operation();
    let events = EventPair::new()?;
    let mut times = Vec::with_capacity(reps);
    let mut last = 0;
    if let Some(&i) = keep.iter().find(|&&i| i >= p.batch) {
        return Err(Error::Shape(format!(
            "timing {p}: matrix {i} to bring back is past the batch"
        )));
    }
    let mut warm_ups = match warm_up {
        WarmUp::Idle => 3,
        WarmUp::Busy | WarmUp::Warm => 1,
    };
    // A first call that compiled a module or loaded cuSOLVER's kernels (their first use
    // in the process: 0.1-0.25 s, which a tune once kept as the time of eigh at 1x2x2
    // and so left cuSOLVER out of every larger shape) is never the timed one.
    let loads = || (dev.kernel_loads().compiled, cuda::cusolver::first_uses());
    let loads_before = loads();
    let mut it = 0;
    while it < reps.max(1) + warm_ups {
        let c = it % on.bufs.len();
        // SAFETY: device buffers of this device sized for the shapes they are viewed as.
        let req = unsafe {
            let shape = [p.batch, p.m, p.n];
            let a = BatchRef::from_device(
                on.bufs[c].ptr as *const T,
                ordinal,
                &shape,
                &contiguous_strides(&shape)?,
            )?;
            let views = shapes
                .iter()
                .zip(&out_bufs)
                .map(|((s, vectors), b)| {
                    let st = contiguous_strides(s)?;
                    let ptr = b.ptr as *mut T;
                    if *vectors {
                        BatchMut::from_device_vectors(ptr, ordinal, s, &st)
                    } else {
                        BatchMut::from_device(ptr, ordinal, s, &st)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            let out = entry::assemble(op, views)?;
            let info = DeviceWords::new(info_buf.ptr as *mut u32, ordinal, p.batch)?;
            Request {
                operation: op,
                a,
                out,
                info: Some(InfoOut::Device(info)),
                place,
            }
        };
        events.start(stream.0)?;
        entry::execute(&plan, &mut { req })?;
        let ms = events.stop_ms(stream.0)?;
        if it == 0 && ms > LONG_WARM_UP_MS {
            warm_ups = match warm_up {
                WarmUp::Idle => 1,
                WarmUp::Busy if loads() != loads_before => 1,
                WarmUp::Busy | WarmUp::Warm => 0,
            };
        }
        if it >= warm_ups {
            times.push(ms);
        }
        last = c % on.inputs;
        it += 1;
    }
    let mut outputs = Vec::with_capacity(shapes.len());
    for ((s, _), b) in shapes.iter().zip(&out_bufs).filter(|_| !keep.is_empty()) {
        let each: usize = s[1..].iter().product();
        let mut shape = s.clone();
        shape[0] = keep.len();
        let mut t = Tensor::<T>::zeros(&shape)?;
        // One copy a run of consecutive matrices (`time_device` brings back the whole
        // batch: one copy, not one a matrix).
        for (done, run) in consecutive_runs(keep) {
            let slot = &mut t.data[done * each..(done + run) * each];
            // SAFETY: plain floats viewed as bytes.
            let dst = unsafe {
                std::slice::from_raw_parts_mut(
                    slot.as_mut_ptr() as *mut u8,
                    std::mem::size_of_val(slot),
                )
            };
            b.download_at(keep[done] * each * es, dst)?;
        }
        outputs.push(t);
    }
    let mut words = vec![0u32; p.batch];
    // SAFETY: as above.
    info_buf.download(unsafe {
        std::slice::from_raw_parts_mut(words.as_mut_ptr() as *mut u8, p.batch * 4)
    })?;
    let [ms, min_ms, max_ms, p25_ms, p75_ms] = spread(times);
    Ok(Timing {
        plan,
        ms,
        min_ms,
        max_ms,
        p25_ms,
        p75_ms,
        reps,
        last_input: last,
        outputs,
        info: words.into_iter().map(Info).collect(),
    })
}

/// Wall-clock microseconds to copy `bytes` of host memory to CUDA device `ordinal` and
/// back as a call on host data does, through the backend's pinned staging buffer or,
/// `registered`, from page-locked memory: the medians of `reps` round trips, (to the
/// device, back). What `batchlin tune` fits the transfer model to.
pub fn time_copies(
    ordinal: usize,
    bytes: usize,
    registered: bool,
    reps: usize,
) -> Result<(f64, f64)> {
    let (up, down) = cuda::time_copies(ordinal, bytes, registered, reps)?;
    Ok((spread(up)[0], spread(down)[0]))
}

#[cfg(test)]
mod tests {
    use super::{consecutive_runs, median, spread};

    #[test]
    fn the_median_of_an_even_count_is_the_lower_middle() {
        assert_eq!(spread(vec![13.4, 34.4])[0], 13.4);
        assert_eq!(spread(vec![3.0, 1.0, 2.0])[0], 2.0);
        assert_eq!(spread(vec![4.0, 1.0, 3.0, 2.0]), [2.0, 1.0, 4.0, 2.0, 3.0]);
        assert_eq!(spread(vec![5.0]), [5.0; 5]);
        assert_eq!(median(vec![34.4, 13.4]), 13.4);
    }

    #[test]
    fn matrices_brought_back_are_copied_a_run_at_a_time() {
        assert_eq!(consecutive_runs(&[]), vec![]);
        assert_eq!(consecutive_runs(&[0, 1, 2, 3]), vec![(0, 4)]);
        assert_eq!(consecutive_runs(&[0, 2048]), vec![(0, 1), (1, 1)]);
        assert_eq!(
            consecutive_runs(&[3, 4, 9, 10, 11, 2]),
            vec![(0, 2), (2, 3), (5, 1)]
        );
    }
}
