//! `batchlin tune`: every kernel of the registry timed on a grid of shapes, each result
//! checked first, into a cost table per device the planner reads (table.rs), with the raw
//! timings and a report of the tables' regret on shapes held out of the grid
//! (docs/proposals/measured-routing.md). Every variant of each operation (the QR modes,
//! eigh and eigvalsh, the thin and full SVD and svdvals) has its own rows. The CPU's
//! kernels are timed on host data; where there is a GPU, the first one's kernels are timed
//! with the data on it, and its copies to and from host memory are fitted as the transfer
//! model its table carries.

use crate::{check, make_inputs, plots, Shape};
use batchlin::cuda::DeviceCaps;
use batchlin::plan::{cost_us, host_copies, plan_with, Plan, Source};
use batchlin::registry::{Kernel, Target, KERNELS};
use batchlin::table::{
    current_kernel, kernel_key, DeviceKey, Link, Model, Point, Table, Transfer, Transfers,
};
use batchlin::timing::WarmUp;
use batchlin::{timing, Backend, DType, Op, Options, Place, Problem, Real, Variant};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub struct TuneArgs {
    pub only: Option<Op>,
    pub budget: Duration,
    pub out: Option<PathBuf>,
    /// Copy the table into the directory the planner reads local tables from.
    pub install: bool,
    /// Go on from the tables in `out`: their current kernels' points kept, the shapes
    /// they hold not measured again (a tune over several runs of a few minutes).
    pub resume: bool,
    /// Measure no grid: the held-out check alone, of this table, with the whole budget.
    pub check: Option<PathBuf>,
    /// The grid alone, with the whole budget: a run of a tune over several runs that is
    /// not the last (the check of its partial tables would be spent).
    pub grid_only: bool,
}

/// `30s`, `20m`, `1h` or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let scale = match unit {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "--budget: unknown unit {unit:?} in {s:?} (s, m or h)"
            ))
        }
    };
    match num.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(Duration::from_secs_f64(v * scale)),
        _ => Err(format!(
            "--budget needs a positive duration such as 30s or 20m, got {s:?}"
        )),
    }
}

/// Half-octaves of min(m, n) from 2 up: 2, 3, 4, 6, 8, 11, 16, 23, 32, ...
fn half_octaves(max: usize) -> Vec<usize> {
    (0..)
        .map(|i| (2f64.powf(1.0 + i as f64 / 2.0)).round() as usize)
        .take_while(|&k| k <= max)
        .collect()
}

/// How fine a grid index is: 0 for every fourth, 1 for every other, else 2. Points are
/// measured coarse first, so that a short budget still spans the grid.
fn level(i: usize) -> usize {
    if i % 4 == 0 {
        0
    } else if i % 2 == 0 {
        1
    } else {
        2
    }
}

/// The variants of an operation, each timed and routed on its own rows.
fn variants(op: Op) -> impl Iterator<Item = Variant> {
    Variant::ALL.into_iter().filter(move |v| v.op() == op)
}

/// Whether `v` forms a square factor of the longer side (the complete Q, the full U or V).
fn full(v: Variant) -> bool {
    matches!(v, Variant::QrComplete | Variant::SvdFull)
}

/// Work units of one call (about the flops over the size): the caps keep a call under
/// about a second on a small machine. A square factor of the longer side counts as a
/// square matrix of that side.
fn work(v: Variant, batch: usize, m: usize, n: usize) -> f64 {
    let k = m.min(n) as f64;
    let c = match v.op() {
        Op::Qr => 4.0,
        Op::Eigh => 9.0,
        Op::Svd => 20.0,
    };
    let mn = if full(v) {
        (m.max(n) as f64).powi(2)
    } else {
        m as f64 * n as f64
    };
    c * batch as f64 * mn * k
}

const MAX_ELEMS: usize = 1 << 24;
const MAX_WORK: f64 = 2e10;
const MAX_K: usize = 1024;

/// Within the caps: the input and the outputs' elements, and the work.
fn feasible(v: Variant, batch: usize, m: usize, n: usize) -> bool {
    within(v, batch, m, n, MAX_ELEMS, MAX_WORK)
}

/// The input and the outputs' elements at most `elems`, the work at most `max_work`.
fn within(v: Variant, batch: usize, m: usize, n: usize, elems: usize, max_work: f64) -> bool {
    let side = m.max(n);
    let extra = if full(v) { 2 * side * side } else { 0 };
    batch.saturating_mul(m * n + extra) <= elems && work(v, batch, m, n) <= max_work
}

/// The caps of a shape of record timed beyond the grid's, on the GPU alone: its input and
/// outputs' elements (a full SVD factor of 256 matrices of 2048 rows is not) and its work.
const GPU_MAX_ELEMS: usize = 1 << 27;
const GPU_MAX_WORK: f64 = 2e11;

/// The shapes of record (bench/shapes.txt) the grid's caps leave out, timed on the GPU
/// alone: eigh 256x256x256 and 16x1024x1024, the SVD's 1024x128x128, 256x256x256,
/// 256x2048x64 and 1x1024x1024 had no row in the tables, whose extrapolation sent eigh
/// 256x256x256 float32 to `block` on an H100 (14.5 ms, against cuSOLVER's 9.2-9.4;
/// docs/results/h100/2026-12-06-first-call-detour). The CPU's kernels are not timed
/// there (seconds a call on a small machine; the GPU takes such shapes anyway).
fn beyond_the_grid(ops: &[Op]) -> Vec<Shape> {
    crate::parse_shapes(crate::SHAPES_OF_RECORD)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| ops.contains(&s.op) && !feasible(s.op.main_variant(), s.batch, s.m, s.n))
        .collect()
}

/// Whether `v` at this shape of record beyond the grid is timed on the GPU.
fn feasible_on_gpu(v: Variant, batch: usize, m: usize, n: usize) -> bool {
    within(v, batch, m, n, GPU_MAX_ELEMS, GPU_MAX_WORK)
}

/// m x n from min(m, n) = k and the aspect m / n as 2^e.
fn dims(k: usize, e: i32) -> (usize, usize) {
    if e >= 0 {
        (k << e, k)
    } else {
        (k, k << -e)
    }
}

/// eigh's sizes just past a power of two, where kernels switch (the warp kernels end at
/// 16 and 32, padded sizes step at powers of two, and cuSOLVER's batched eigh's time
/// jumps past 256: float32 4x256x256 2.7 ms, 2x258x258 27.8 on an H100, 2026-12-06/07):
/// a half-octave grid has 256 and 362 only, and the tables interpolated the jump away
/// (4x289x289 sent to cuSOLVER at 4.1x `block`'s time).
/// Measured at the finest level, square as eigh is.
const EIGH_PAST_SWITCHES: [usize; 6] = [17, 33, 65, 129, 257, 513];

/// The grid, coarse levels first: log2 batch 0..16 (even powers), k in half-octaves,
/// aspects 1/32 to 32 (square only for eigh, which also has `EIGH_PAST_SWITCHES`).
fn grid(ops: &[Op]) -> Vec<(usize, Shape)> {
    let ks = half_octaves(MAX_K);
    let batches: Vec<usize> = (0..=8).map(|i| 1usize << (2 * i)).collect();
    let aspects = [0, -1, 1, -3, 3, -5, 5];
    // Each size with its level: the half-octaves by their place, eigh's extra sizes at
    // the finest.
    let leveled: Vec<(usize, usize)> = ks.iter().enumerate().map(|(i, &k)| (k, level(i))).collect();
    let mut out = vec![];
    for &op in ops {
        let extra = match op {
            Op::Eigh => &EIGH_PAST_SWITCHES[..],
            _ => &[],
        };
        let sizes = leveled.iter().copied().chain(extra.iter().map(|&k| (k, 2)));
        for (ai, &e) in aspects.iter().enumerate() {
            if op == Op::Eigh && e != 0 {
                continue;
            }
            let al = [0, 1, 1, 2, 2, 2, 2][ai];
            for (k, kl) in sizes.clone() {
                for (bi, &batch) in batches.iter().enumerate() {
                    let (m, n) = dims(k, e);
                    if !feasible(op.main_variant(), batch, m, n) {
                        continue;
                    }
                    let lv = kl.max(level(bi)).max(al);
                    out.push((lv, Shape { op, batch, m, n }));
                }
            }
        }
    }
    out.sort_by_key(|(lv, s)| (*lv, s.op as u8, s.m.min(s.n), s.batch, s.m));
    out
}

/// Where a kernel's input is and so how it is timed: host data (the CPU's kernels; a
/// GPU's with the copies there and back), or data on the GPU (`timing::time_device`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Data {
    Host,
    Gpu,
}

/// The first GPU, where there is one (its kernels are tuned too).
fn first_gpu() -> Option<&'static DeviceCaps> {
    match batchlin::cuda::device_count() {
        Ok(n) if n > 0 => batchlin::cuda::device(0).ok().map(|d| d.caps()),
        _ => None,
    }
}

/// The kernels that take `p`: the CPU's (`gpu` None), or the CUDA ones on `gpu`.
fn kernels_for(p: &Problem, gpu: Option<&DeviceCaps>) -> Vec<&'static Kernel> {
    KERNELS
        .iter()
        .filter(|k| k.op == p.op())
        .filter(|k| match gpu {
            None => k.backend.is_cpu() && k.supports(p, &Target::Cpu),
            Some(caps) => k.backend == Backend::Cuda && k.supports(p, &Target::Cuda(caps)),
        })
        .collect()
}

/// A timed call's inputs: in host memory, or uploaded to the first GPU once for every
/// kernel and round at a shape.
enum On<'a, T> {
    Host(&'a [&'a [T]]),
    Gpu(&'a timing::DeviceInputs),
}

impl<'a, T: Real> On<'a, T> {
    /// The inputs `refs` where `data` says (uploaded into `dev`, kept by the caller).
    fn new(
        p: &Problem,
        data: Data,
        refs: &'a [&'a [T]],
        dev: &'a mut Option<timing::DeviceInputs>,
    ) -> batchlin::Result<Self> {
        Ok(match data {
            Data::Host => On::Host(refs),
            Data::Gpu => On::Gpu(dev.insert(timing::DeviceInputs::upload(p, 0, refs)?)),
        })
    }
}

/// `reps` timed calls of `p` under `opts` on the inputs `on`, a GPU's after the warm-ups
/// `warm_up` says; the matrices `keep` come back from a GPU.
fn time_on<T: Real>(
    p: &Problem,
    opts: &Options,
    on: &On<T>,
    reps: usize,
    warm_up: WarmUp,
    keep: &[usize],
) -> batchlin::Result<timing::Timing<T>> {
    match on {
        On::Host(refs) => timing::time_host(p, opts, refs, reps),
        On::Gpu(dev) => timing::time_device_on(p, dev, opts, reps, keep, warm_up),
    }
}

/// A round of `reps` timed calls of kernel `k` on `p` on the inputs `on` (after its pilot).
fn time_round<T: Real>(
    k: &'static Kernel,
    p: &Problem,
    on: &On<T>,
    reps: usize,
) -> batchlin::Result<timing::Timing<T>> {
    let opts = Options::with_kernel(k.backend, k.name);
    time_on(p, &opts, on, reps, WarmUp::Warm, &[])
}

/// Matrices of a batch a pilot checks.
const CHECKED: usize = 2;

/// One kernel's first call at one shape, checked: its microseconds, or why it was left
/// out. Only the checked matrices' outputs come back from a GPU.
fn pilot<T: Real>(
    k: &'static Kernel,
    p: &Problem,
    on: &On<T>,
    inputs: &[batchlin::Tensor<T>],
) -> Result<f64, String> {
    let at = check::sampled(p.batch, CHECKED);
    let opts = Options::with_kernel(k.backend, k.name);
    let t = time_on(p, &opts, on, 1, WarmUp::Busy, &at).map_err(|e| e.to_string())?;
    let outs: Vec<_> = match on {
        On::Host(_) => t.outputs.iter().map(|o| check::pick(o, &at)).collect(),
        On::Gpu(_) => t.outputs,
    };
    let a = check::pick(&inputs[t.last_input], &at);
    let err = check::max_error(p.variant, &a, &outs, at.len());
    let bound = check::bound::<T>(p.op(), p.m.max(p.n));
    if !(err <= bound) || t.info.iter().any(|i| i.nonfinite() || i.not_converged()) {
        return Err(format!("error {err:.1e} over the bound {bound:.1e}"));
    }
    Ok(t.ms * 1e3)
}

/// Timed calls a CPU kernel gets at a shape from its pilot time: about `HOST_SAMPLE_US`
/// of calls, at least 3 (2 from 10 ms; from 100 ms the pilot alone, `pilot_suffices`)
/// and at most 2000; and in how many rounds, taken in turn with the other contenders so
/// that the machine's slow moments fall on all of them alike. Calls of a few
/// microseconds need the many samples: with 30 (2026-12-04's table) some rows were
/// bimodal (median 24 us, 25th percentile 11) and the held-out worst case was noise.
/// Calls of 10-100 ms were 715 of the 2-core machine's 3950 QR rows and 44% of their
/// time (the full tune of 2026-12-06), at six calls a kernel: now a pilot and two.
fn sampling(us: f64) -> (usize, usize) {
    let least = if us >= 1e4 { 2 } else { 3 };
    let reps = ((HOST_SAMPLE_US / us.max(0.01)) as usize).clamp(least, 2000);
    let rounds = if us < 1e3 {
        5
    } else if us < 1e4 {
        3
    } else {
        1
    };
    (reps, rounds)
}

/// Microseconds of timed calls a CPU kernel gets at a shape (`sampling`). At 20 ms, the
/// CPU's kernels took 599 s of an H100 machine's full tune (2026-12-06), 304 s of it in
/// 6444 rows of two kernels' 20 ms each, and the grid did not fit the issue's 20 minutes.
const HOST_SAMPLE_US: f64 = 10e3;

/// A CPU call this long is its own sample: its pilot, timed from the first call
/// (`timing::time_host`), is the point. In the tunes of 2026-12-06 about 70% of the CPU's
/// time went to shapes of 1e8 multiply-adds and more, and calls from 100 ms had their
/// three readings' quartiles 1% apart at the median point, 4-13% at the 90th percentile.
const HOST_ONE_CALL_US: f64 = 1e5;

/// Whether a kernel's pilot of `us` is its point, where the fastest pilot (or the bar)
/// took `best`: a long one three times slower than the best (`LONE_PILOT_US`), or a CPU
/// call from `HOST_ONE_CALL_US`.
fn pilot_suffices(us: f64, best: f64, data: Data) -> bool {
    (us > 3.0 * best && us >= LONE_PILOT_US) || (data == Data::Host && us >= HOST_ONE_CALL_US)
}

/// Timed calls a GPU kernel gets at a shape: about 2 ms of calls, at least 3 and at most
/// 50, in one round. CUDA events time each call to the microsecond on an otherwise idle
/// device: in an H100 tune of 2026-12-06 (200 calls at most) the quartiles of calls under
/// 30 us lay 6.5% apart at the median point, 0.7% from 100 us, so 50 calls hold the
/// median to about 1%, under the planner's 5% tie margin; and the GPU's half of the grid
/// must fit beside the CPU's in the issue's 20 minutes.
fn gpu_reps(us: f64) -> usize {
    ((2e3 / us.max(0.01)) as usize).clamp(3, 50)
}

/// A GPU call longer than this is of no use to any routing: the grid's caps hold each
/// shape's work to what the CPU does in about a second (held-out shapes, `regret`).
const GPU_CALL_CAP_US: f64 = 1e6;
/// How many times the fastest a kernel must be to count as hopeless (`verdict`).
const HOPELESS: f64 = 10.0;
/// A hopeless-looking kernel is probed at this fraction of the batch (`verdict`).
const PROBE_SPLIT: usize = 16;

/// What a kernel's pilot at `p` needs first (`verdict`).
#[derive(Copy, Clone, PartialEq, Debug)]
enum Verdict {
    /// Time it.
    Time,
    /// Leave it out: it is over `HOPELESS` times the fastest pilot here.
    Skip,
    /// Time it on this leading part of the batch first: no faster than the part, it is
    /// hopeless if the part is.
    Probe(usize),
}

/// The kernel's points of `p`'s variant and type in `points`.
fn own<'a>(k: &Kernel, p: &'a Problem, points: &'a [Point]) -> impl Iterator<Item = &'a Point> {
    let key = kernel_key(k);
    points
        .iter()
        .filter(move |q| q.kernel == key && q.variant == p.variant && q.dtype == p.dtype)
}

/// The kernel's longest time at a shape within `p` (no more matrices, rows or columns), 0
/// where it has none: a call takes no less time on more or larger matrices.
fn floor(k: &Kernel, p: &Problem, points: &[Point]) -> f64 {
    let within = |q: &&Point| {
        q.batch <= p.batch && q.m <= p.m && q.n <= p.n && (q.batch, q.m, q.n) != (p.batch, p.m, p.n)
    };
    own(k, p, points)
        .filter(within)
        .map(|q| q.median_us)
        .fold(0.0, f64::max)
}

/// What kernel `k` is expected to take at `p` from its points so far (None where nothing
/// is known): its time at a smaller batch scaled to `p`'s, or its `floor` where that is
/// more. Kernels are timed in this order, those with nothing known last, so that the
/// fastest sets the bar the others' verdicts read: ordered by the projection alone, every
/// kernel of a single matrix came first (nothing to project from), and an H100 tune
/// (2026-12-06) timed `jacobi`'s full SVD of 1x2048x64 for 4.8 s, its time at 1x1440x45
/// (1.7 s) unread, before cuSOLVER's 2.6 ms.
fn expected(k: &Kernel, p: &Problem, points: &[Point]) -> Option<f64> {
    let projected = nearest_smaller(k, p, points).map(|(b, us)| us * p.batch as f64 / b as f64);
    let floor = Some(floor(k, p, points)).filter(|&f| f > 0.0);
    match (projected, floor) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The start of kernel `k`'s projection to `p`'s batch (batch, us): its time at the
/// largest smaller batch of the same m x n in `points`, else at the smaller batch of a
/// smaller shape (no more rows nor columns) with the most time a matrix. From a smaller
/// shape the projection is low a matrix and high where a kernel still fills the GPU: it
/// only decides a probe. With the same m x n alone, an H100 tune (2026-12-06) ran
/// cuSOLVER's SVD loop on 65536 matrices of 2x4 and 4x2 for 19-23 s a call in ten rows
/// (three variants, both types), its 586 us at 1x2x2 unread: its smaller batches of
/// those sizes had no time, as probes had left them out.
fn nearest_smaller(k: &Kernel, p: &Problem, points: &[Point]) -> Option<(usize, f64)> {
    let smaller = || own(k, p, points).filter(|q| q.batch < p.batch);
    let same = smaller()
        .filter(|q| q.m == p.m && q.n == p.n)
        .max_by_key(|q| q.batch);
    let within = || {
        smaller()
            .filter(|q| q.m <= p.m && q.n <= p.n)
            .max_by(|a, b| {
                (a.median_us / a.batch as f64).total_cmp(&(b.median_us / b.batch as f64))
            })
    };
    same.or_else(within).map(|q| (q.batch, q.median_us))
}

/// Whether kernel `k` must be timed at `p`, where the fastest pilot so far (or the bar)
/// took `best_us`. A call takes no less time on more or larger matrices, so a kernel whose
/// time at a shape within `p` (no more matrices, rows or columns) is over `HOPELESS` times
/// `best_us` is left out. Where `probe` (a GPU's kernels), one whose time at a smaller
/// batch scaled linearly to `p` (what a kernel filling the GPU, or a loop of cuSOLVER
/// calls, takes) is over it, but measured at a batch far smaller, is probed first on the
/// fewest matrices the projection says would show it (at most 1/`PROBE_SPLIT` of
/// `p`'s). On an H100 (2026-12-06) cuSOLVER's SVD loop took 1.3 s at 256x128x128
/// against `bidiag`'s 2.6 ms, twice (its warm-up and its pilot), for each of eight
/// variants and types: the 1x128x128 point (5.6 ms) did not show it; a probe of 10
/// matrices (56 ms) does. A kernel that scales worse than linearly at small batches (a
/// block a matrix on a GPU still filling) is projected too high: it is probed, never
/// left out by the projection alone. One with no time at any shape within `p`, where
/// another kernel set the bar, is probed on 1/`PROBE_SPLIT` of a batch of 64 or more:
/// the finest level's shapes near a crossover go first (`contested`), before the smaller
/// batches of their size, and an H100 tune (2026-12-06) so ran cuSOLVER's SVD of 4096
/// 64x8 float64 matrices for 1.9 s, unprobed, against `jacobi`'s 0.37 ms.
fn verdict(k: &Kernel, p: &Problem, points: &[Point], best_us: f64, probe: bool) -> Verdict {
    let floor = floor(k, p, points);
    if floor > HOPELESS * best_us {
        return Verdict::Skip;
    }
    let unknown = floor == 0.0 && best_us.is_finite() && p.batch >= 4 * PROBE_SPLIT;
    if probe && unknown {
        return Verdict::Probe(p.batch / PROBE_SPLIT);
    }
    let Some((b, us)) = nearest_smaller(k, p, points).filter(|_| probe) else {
        return Verdict::Time;
    };
    let projected = us * p.batch as f64 / b as f64;
    if projected > HOPELESS * best_us && b * PROBE_SPLIT < p.batch {
        // The fewest matrices projected to take twice the hopeless time: a probe of a
        // fixed 1/16 took cuSOLVER's SVD loop 2.8 s at 4096 16x16 matrices (an H100,
        // 2026-12-06), most of that tune's GPU time.
        let part = (2.0 * HOPELESS * best_us / us * b as f64).ceil() as usize;
        match part.min(p.batch / PROBE_SPLIT) {
            part if part > b => Verdict::Probe(part),
            _ => Verdict::Time,
        }
    } else {
        Verdict::Time
    }
}

/// Inputs for timing `s`: two copies where small (calls alternate between them).
fn inputs_for<T: Real>(s: &Shape, rng: &mut StdRng) -> Vec<batchlin::Tensor<T>> {
    let copies = if s.batch * s.m * s.n < (1 << 16) {
        2
    } else {
        1
    };
    make_inputs::<T>(s, copies, rng)
}

/// A pilot at least this long (us) three times slower than the best is the kernel's only
/// sample: timing it again would cost more than the shape's other calls. Shorter calls are
/// all timed: one sample of a few microseconds can be an outlier (the 2-core machine's
/// tune of 2026-12-06 kept QR float32 1x4x128 on `cpu-small` at a pilot of 20.8 us,
/// against 1.1 us at 1x4x32, and its table sent 2x4x59 to faer at 3.8x the time).
const LONE_PILOT_US: f64 = 1e3;

/// A lone pilot shorter than this is read twice (`shape_points`).
const SECOND_LOOK_US: f64 = 1e4;

/// What a shape's kernels are measured against (`shape_points`).
#[derive(Clone, Copy)]
struct Against<'a> {
    /// The time to beat before any kernel here runs, us: the GPU with the copies for the
    /// CPU's kernels, a routing's pick for the held-out check's other kernels.
    bar_us: f64,
    /// The device's points so far: `verdict` reads those within the shape.
    history: &'a [Point],
    /// Whether a kernel `verdict` finds hopeless is probed first on part of the batch.
    probe: bool,
}

impl Against<'_> {
    /// Nothing to beat, nothing known, nothing probed: every kernel timed.
    const NOTHING: Against<'static> = Against {
        bar_us: f64::INFINITY,
        history: &[],
        probe: false,
    };
}

/// `kernels` (of `variant`) at one shape on `inputs`, the data where `data` says:
/// the points measured and the kernels that failed their check. Each kernel's first call
/// is checked; one three times slower than the best, or than the bar (`Against`), keeps
/// that one sample where the sample is long, as does a long CPU call (`pilot_suffices`);
/// the others are timed in rounds taken in turn (`sampling`), their median, 25th and
/// 75th percentiles the medians of the rounds'. A GPU's timings (CUDA events) take one
/// round. Kernels go in the order of their `expected` times, and those hopeless by the
/// fastest so far (`verdict`, on the device's points so far) are left out.
fn shape_points<T: Real>(
    s: &Shape,
    variant: Variant,
    kernels: &[&'static Kernel],
    data: Data,
    inputs: &[batchlin::Tensor<T>],
    against: Against,
) -> (Vec<Point>, Vec<String>) {
    let Against {
        bar_us,
        history,
        probe,
    } = against;
    if kernels.is_empty() {
        return (vec![], vec![]);
    }
    let p = Problem::new(variant, T::DTYPE, s.batch, s.m, s.n);
    let refs: Vec<&[T]> = inputs.iter().map(|t| t.data.as_slice()).collect();
    let mut dev = None;
    let on = match On::new(&p, data, &refs, &mut dev) {
        Ok(on) => on,
        Err(e) => {
            let why = |k: &&Kernel| format!("{} at {p}: the upload failed: {e}", kernel_key(k));
            return (vec![], kernels.iter().map(why).collect());
        }
    };
    let mut bad = vec![];
    let mut ok: Vec<(&'static Kernel, f64)> = vec![];
    // The points `verdict` may read (within this shape, of its variant and type), found
    // once a row rather than in the device's whole history for every kernel.
    let history: Vec<Point> = history
        .iter()
        .filter(|q| q.variant == variant && q.dtype == T::DTYPE)
        .filter(|q| q.batch <= s.batch && q.m <= s.m && q.n <= s.n)
        .cloned()
        .collect();
    let mut order: Vec<(f64, &'static Kernel)> = kernels
        .iter()
        .map(|&k| (expected(k, &p, &history).unwrap_or(f64::INFINITY), k))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (_, k) in order {
        let best = ok.iter().map(|(_, us)| *us).fold(bar_us, f64::min);
        let left_out = match verdict(k, &p, &history, best, probe) {
            Verdict::Time => false,
            Verdict::Skip => true,
            Verdict::Probe(part) => {
                let q = Problem::new(variant, T::DTYPE, part, s.m, s.n);
                let opts = Options::with_kernel(k.backend, k.name);
                // Host data: the batch's leading matrices (a GPU's inputs serve any part).
                let head: Vec<&[T]> = refs.iter().map(|r| &r[..part * s.m * s.n]).collect();
                let part_on = match on {
                    On::Host(_) => On::Host(&head),
                    On::Gpu(d) => On::Gpu(d),
                };
                // A failed probe says nothing: the pilot runs (and reports).
                time_on(&q, &opts, &part_on, 1, WarmUp::Busy, &[])
                    .is_ok_and(|t| t.ms * 1e3 > HOPELESS * best)
            }
        };
        if left_out {
            continue;
        }
        match pilot(k, &p, &on, inputs) {
            Ok(us) => ok.push((k, us)),
            Err(e) => bad.push(format!("{} at {p}: {e}", kernel_key(k))),
        }
    }
    let best = ok.iter().map(|(_, us)| *us).fold(bar_us, f64::min);
    // Per kernel the (median, p25, p75) of each round; a slow kernel keeps its pilot.
    // A lone pilot under `SECOND_LOOK_US` is called once more and the faster reading
    // kept: on the 2-core machine (2026-12-06) one held-out pilot of a 0.3 ms call read
    // 2.4 ms and stood as that kernel's time (a regret of 8.9).
    let mut rounds: Vec<[Vec<f64>; 3]> = ok
        .iter()
        .map(|&(k, us)| match pilot_suffices(us, best, data) {
            true => {
                let again = || time_round(k, &p, &on, 1).map_or(us, |t| t.ms * 1e3);
                let us = if us < SECOND_LOOK_US {
                    us.min(again())
                } else {
                    us
                };
                [vec![us], vec![us], vec![us]]
            }
            false => Default::default(),
        })
        .collect();
    let contenders: Vec<usize> = (0..ok.len()).filter(|&i| rounds[i][0].is_empty()).collect();
    let plan: Vec<(usize, usize)> = ok
        .iter()
        .map(|(_, us)| match data {
            Data::Gpu => (gpu_reps(*us), 1),
            Data::Host => sampling(*us),
        })
        .collect();
    let most = contenders.iter().map(|&i| plan[i].1).max().unwrap_or(0);
    for round in 0..most {
        for &i in &contenders {
            let (reps, n_rounds) = plan[i];
            if round >= n_rounds {
                continue;
            }
            let k = ok[i].0;
            match time_round(k, &p, &on, reps.div_ceil(n_rounds)) {
                Ok(t) => {
                    for (r, x) in rounds[i].iter_mut().zip([t.ms, t.p25_ms, t.p75_ms]) {
                        r.push(x * 1e3);
                    }
                }
                Err(e) => bad.push(format!("{} at {p}: {e}", kernel_key(k))),
            }
        }
    }
    // A table holds positive times: a GPU call timed at 0 counts a nanosecond.
    let us = |v: Vec<f64>| timing::median(v).max(1e-3);
    let pts = ok
        .iter()
        .zip(rounds)
        .filter(|(_, r)| !r[0].is_empty())
        .map(|((k, _), [med, p25, p75])| Point {
            kernel: kernel_key(k),
            variant,
            dtype: p.dtype,
            batch: s.batch,
            m: s.m,
            n: s.n,
            median_us: us(med),
            p25_us: us(p25),
            p75_us: us(p75),
        })
        .collect();
    (pts, bad)
}

/// Readings of the drift probe taken at each end of a run, `PROBE_GAP` apart: the first is
/// discarded.
const PROBE_READINGS: usize = 6;
/// The pause between two readings of the drift probe, so that one burst of other work on
/// the machine does not fall on all of them.
const PROBE_GAP: Duration = Duration::from_millis(50);

/// One end's probe time from its readings: the first dropped (at the start it is the
/// process's first timed call, with the pool and the allocator cold: a 30-second CI tune
/// read 52% drift from it), the fastest of the rest: other work only lengthens a reading,
/// and the fastest is what the machine can do. With the median of three readings taken
/// back to back, a tune on an H100 machine (16 threads, 2026-12-06) read its CPU's drift
/// at 13% and 36.5% in two calls where the GPU's read 2.9%, and its CPU table was
/// passed over. NaN if a reading failed.
fn settled(readings: &[f64]) -> f64 {
    let rest = readings.get(1..).unwrap_or_default();
    if rest.is_empty() || rest.iter().any(|r| !r.is_finite()) {
        return f64::NAN;
    }
    rest.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The fixed shape timed before and after the grid: how far the machine drifted. Each
/// reading is the median of 15 calls (128 matrices a thread: about 25 ms on 2 cores);
/// `settled` takes the end's time from `PROBE_READINGS` of them. On the GPU
/// (`Data::Gpu`) a batch of 4096 with the data there, after half a second of calls: an
/// idle GPU's clocks are low (345 against 1980 MHz on the H200), and the probe at the
/// start must not read a cold GPU against the end's warm one.
fn drift_probe(data: Data) -> f64 {
    // On the CPU 128 matrices a thread of the pool (256 on 2 threads): on the H200
    // machine's 16 a batch of 256 was a 0.2 ms call, the pool's wake-ups as much as the
    // work, and read 27% drift where the GPU's probe read 2% (2026-12-05).
    let threads = match DeviceKey::this_cpu() {
        DeviceKey::Cpu { threads, .. } => threads,
        _ => 2,
    };
    let s = Shape {
        op: Op::Qr,
        batch: if data == Data::Gpu {
            4096
        } else {
            128 * threads.max(1)
        },
        m: 32,
        n: 32,
    };
    let p = Problem::new(Variant::QrReduced, DType::F32, s.batch, s.m, s.n);
    let mut rng = StdRng::seed_from_u64(7);
    let inputs = make_inputs::<f32>(&s, 2, &mut rng);
    let refs: Vec<&[f32]> = inputs.iter().map(|t| t.data.as_slice()).collect();
    // The CPU's probe on the CPU whatever the tables say (they may send it to a GPU).
    let opts = match data {
        Data::Host => Options {
            backend: Backend::CpuSmall,
            ..Options::default()
        },
        Data::Gpu => Options::default(),
    };
    let mut dev = None;
    let Ok(on) = On::new(&p, data, &refs, &mut dev) else {
        return f64::NAN;
    };
    if data == Data::Gpu {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(500) {
            if time_on(&p, &opts, &on, 15, WarmUp::Idle, &[]).is_err() {
                return f64::NAN;
            }
        }
    }
    let readings: Vec<f64> = (0..PROBE_READINGS)
        .map(|i| {
            if i > 1 {
                std::thread::sleep(PROBE_GAP);
            }
            time_on(&p, &opts, &on, 15, WarmUp::Idle, &[]).map_or(f64::NAN, |t| t.ms)
        })
        .collect();
    settled(&readings)
}

/// The sizes the copies are timed at: 4 KiB to 256 MiB in steps of 4.
const COPY_SIZES: [usize; 9] = [
    4 << 10,
    16 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    4 << 20,
    16 << 20,
    64 << 20,
    256 << 20,
];

/// The first GPU's transfer model: copies of `COPY_SIZES` each way, staged and from
/// registered memory, each direction fitted (`Link::fit`); the timings as CSV lines
/// (path, bytes, microseconds to the device and back, each beside the fit's, so that a
/// fit the small sizes bend shows at the large ones); and why registered memory could
/// not be measured, where it could not (then it is priced as staged: never slower).
fn measure_transfers() -> Result<(Transfers, String, Option<String>), String> {
    let mut csv =
        String::from("path,bytes,to_device_us,to_host_us,fit_to_device_us,fit_to_host_us\n");
    let mut fit = |registered: bool| -> Result<Transfer, String> {
        let (mut up, mut down) = (vec![], vec![]);
        for b in COPY_SIZES {
            let reps = if b <= 1 << 20 {
                30
            } else if b <= 16 << 20 {
                10
            } else {
                3
            };
            let (u, d) = timing::time_copies(0, b, registered, reps).map_err(|e| e.to_string())?;
            up.push((b, u));
            down.push((b, d));
        }
        let model = Link::fit(&up)
            .zip(Link::fit(&down))
            .map(|(to_device, to_host)| Transfer { to_device, to_host });
        // Every row, the fit's columns empty where there is none.
        let path = if registered { "registered" } else { "staged" };
        for ((b, u), (_, d)) in up.iter().zip(&down) {
            let fitted = model.map_or(",".into(), |t| {
                format!("{:.1},{:.1}", t.to_device.us(*b), t.to_host.us(*b))
            });
            let _ = writeln!(csv, "{path},{b},{u},{d},{fitted}");
        }
        model.ok_or_else(|| format!("the copies' times do not grow with size: {up:?}, {down:?}"))
    };
    let staged = fit(false)?;
    let (registered, why) = match fit(true) {
        Ok(r) => (r, None),
        Err(e) => (staged, Some(e)),
    };
    Ok((Transfers { staged, registered }, csv, why))
}

/// A held-out shape and variant: k, batch and aspect drawn log-uniformly off the grid,
/// the variant uniformly among its operation's.
fn held_out(ops: &[Op], rng: &mut StdRng) -> (Shape, Variant) {
    loop {
        let op = ops[rng.random_range(0..ops.len())];
        let vs: Vec<Variant> = variants(op).collect();
        let v = vs[rng.random_range(0..vs.len())];
        let k = 2f64
            .powf(rng.random_range(1.0..(MAX_K as f64).log2()))
            .round() as usize;
        let batch = 2f64.powf(rng.random_range(0.0..16.0)).round() as usize;
        let e: f64 = if op == Op::Eigh {
            0.0
        } else {
            rng.random_range(-5.0..5.0)
        };
        let a = 2f64.powf(e);
        let (m, n) = if a >= 1.0 {
            ((k as f64 * a).round() as usize, k)
        } else {
            (k, (k as f64 / a).round() as usize)
        };
        if feasible(v, batch, m, n) {
            return (Shape { op, batch, m, n }, v);
        }
    }
}

/// One held-out shape, measured with its data in one place: each kernel's time there and
/// each routing's pick.
struct Regret {
    op: Op,
    data: Data,
    shape: String,
    /// Each kernel's measured median there (a GPU's on host data with its copies).
    times: Vec<(String, f64)>,
    /// (routing, the kernel it picks, that kernel's time over the fastest measured), the
    /// tables' routing first.
    picks: Vec<(&'static str, String, f64)>,
    extrapolated: bool,
    /// The tables' prediction for the kernel they chose and that kernel's measured time, us.
    predicted_us: f64,
    measured_us: f64,
}

impl Regret {
    /// The regret of the routing named `routing`, where it priced this shape.
    fn of(&self, routing: &str) -> Option<f64> {
        self.picks.iter().find(|p| p.0 == routing).map(|p| p.2)
    }
}

/// The routings compared on host data: the tables (the CPU's, and the GPU's with its
/// copies where there is one) and the rules; with a GPU also each device alone.
const TABLES: &str = "the tables";
const RULES: &str = "the rules";
const CPU_ALONE: &str = "always the CPU (its table)";
const GPU_ALONE: &str = "always the GPU (its table, copies)";
/// The routings compared on the GPU's data: its table among its kernels, and its rules.
const GPU_TABLE: &str = "the GPU's table (GPU data)";
const GPU_RULES: &str = "the GPU's rules (GPU data)";

/// The routings' regret at a held-out shape with the data where `data` says: every kernel
/// that can take it timed there (a GPU's on host data with the copies), and the time of
/// the kernel each routing picks over the fastest. `gpu`: the first GPU and its table.
fn regret<T: Real>(
    s: &Shape,
    v: Variant,
    data: Data,
    cpu: &Model,
    gpu: Option<(&'static DeviceCaps, &Model)>,
    inputs: &[batchlin::Tensor<T>],
) -> Option<Regret> {
    let p = Problem::new(v, T::DTYPE, s.batch, s.m, s.n);
    let g = gpu.map(|(_, m)| m);
    let on_gpu = Place::Cuda {
        ordinal: 0,
        stream: batchlin::Stream::DEFAULT,
    };
    // (routing, CPU table, GPU table, where it plans): a GPU's pick on host data is its
    // pick for data there, paid with the copies.
    let routes = match (data, gpu.is_some()) {
        (Data::Host, false) => vec![
            (TABLES, Some(cpu), None, Place::Host),
            (RULES, None, None, Place::Host),
        ],
        (Data::Host, true) => vec![
            (TABLES, Some(cpu), g, Place::Host),
            (RULES, None, None, Place::Host),
            (CPU_ALONE, Some(cpu), None, Place::Host),
            (GPU_ALONE, None, g, on_gpu),
        ],
        (Data::Gpu, _) => vec![
            (GPU_TABLE, None, g, on_gpu),
            (GPU_RULES, None, None, on_gpu),
        ],
    };
    // Each routing's plan (none where it cannot plan the shape: always the GPU where no
    // CUDA kernel takes it; that routing is left out here).
    let plans: Vec<(&'static str, Plan)> = routes
        .into_iter()
        .filter_map(|(name, t, gt, place)| {
            plan_with(&p, &place, &Options::default(), t, gt)
                .ok()
                .map(|plan| (name, plan))
        })
        .collect();
    let mut kernels = match data {
        Data::Host => kernels_for(&p, None),
        Data::Gpu => vec![],
    };
    if let Some((caps, model)) = gpu {
        // The GPU's kernels but those its table prices over `HOPELESS` times the fastest
        // and past `GPU_CALL_CAP_US` that no routing picks; one it has no rows for is
        // timed.
        let ks = kernels_for(&p, Some(caps));
        let pred = |k: &'static Kernel| model.predict(k, &p).map_or(f64::NAN, |x| x.us);
        let best = ks.iter().map(|k| pred(k)).fold(f64::INFINITY, f64::min);
        kernels.extend(ks.into_iter().filter(|k| {
            let us = pred(k);
            plans.iter().any(|(_, plan)| std::ptr::eq(plan.kernel, *k))
                || !(us > HOPELESS * best && us > GPU_CALL_CAP_US)
        }));
    }
    // The routings' picks timed first, in full; the others only to find a faster one, so
    // probed against the picks' best: in two calls of an H100 tune (2026-12-06) one
    // held-out shape ran past the budget's end by over 45 s, every kernel timed.
    let picked = |k: &&'static Kernel| plans.iter().any(|(_, plan)| std::ptr::eq(plan.kernel, *k));
    let (picks, others): (Vec<_>, Vec<_>) = kernels.into_iter().partition(picked);
    let (mut pts, _) = shape_points(s, v, &picks, data, inputs, Against::NOTHING);
    let against = Against {
        bar_us: pts
            .iter()
            .map(|p| p.median_us)
            .fold(f64::INFINITY, f64::min),
        history: &[],
        probe: true,
    };
    pts.extend(shape_points(s, v, &others, data, inputs, against).0);
    confirm(s, v, data, inputs, &plans, &mut pts);
    let best = pts.iter().map(|p| p.median_us).min_by(f64::total_cmp)?;
    // A routing whose pick failed its check is left out at this shape.
    let mut picks = vec![];
    let mut first = None;
    for (name, plan) in &plans {
        let key = kernel_key(plan.kernel);
        let Some(q) = pts.iter().find(|q| q.kernel == key) else {
            continue;
        };
        first.get_or_insert((plan.source, q.median_us));
        picks.push((*name, key, q.median_us / best));
    }
    let (source, measured_us) = first?;
    let predicted = match source {
        Source::Table {
            predicted_us,
            extrapolated,
        } => Some((predicted_us, extrapolated)),
        _ => None,
    };
    Some(Regret {
        op: s.op,
        data,
        shape: format!("{} {} {}x{}x{}", v.name(), T::DTYPE, s.batch, s.m, s.n),
        times: pts
            .iter()
            .map(|p| (p.kernel.clone(), p.median_us))
            .collect(),
        picks,
        extrapolated: predicted.is_some_and(|p| p.1),
        predicted_us: predicted.map_or(f64::NAN, |p| p.0),
        measured_us,
    })
}

/// A pick's regret above this is read again before it stands (`confirm`).
const CONFIRM_ABOVE: f64 = 1.1;
/// How many more times `confirm` times the kernels it reads again.
const CONFIRM_ROUNDS: usize = 2;

/// Where a routing's pick measured over `CONFIRM_ABOVE` times the fastest, that pick and
/// the fastest are timed `CONFIRM_ROUNDS` times more, alternated, and each keeps the
/// fastest of its medians: other work on the machine only lengthens a reading. On the
/// 2-core machine (2026-12-06, docs/results/cpu-2core/2026-12-06-tune-qr-fresh-outputs)
/// the held-out worst case, 1.56, was one such reading: the pick timed again took 1.64 ms
/// against the fastest's 1.91.
fn confirm<T: Real>(
    s: &Shape,
    v: Variant,
    data: Data,
    inputs: &[batchlin::Tensor<T>],
    plans: &[(&'static str, Plan)],
    pts: &mut [Point],
) {
    let Some(best) = pts
        .iter()
        .min_by(|a, b| a.median_us.total_cmp(&b.median_us))
    else {
        return;
    };
    let (best_key, best_us) = (best.kernel.clone(), best.median_us);
    let mut again: Vec<&'static Kernel> = vec![];
    for (_, plan) in plans {
        let key = kernel_key(plan.kernel);
        let slow = pts
            .iter()
            .any(|q| q.kernel == key && q.median_us > CONFIRM_ABOVE * best_us);
        if slow && !again.iter().any(|k| std::ptr::eq(*k, plan.kernel)) {
            again.push(plan.kernel);
        }
    }
    if again.is_empty() {
        return;
    }
    if let Some(k) = KERNELS.iter().find(|k| kernel_key(k) == best_key) {
        again.push(k);
    }
    for _ in 0..CONFIRM_ROUNDS {
        for q in shape_points(s, v, &again, data, inputs, Against::NOTHING).0 {
            if let Some(p) = pts.iter_mut().find(|p| p.kernel == q.kernel) {
                if q.median_us < p.median_us {
                    *p = q;
                }
            }
        }
    }
}

/// Whether `s` lies next to a crossover: among the shapes measured within one step of it
/// on every axis (batch x4, k a half-octave as rounded, aspect x4; the same operation), two kernels
/// each win somewhere for one variant and type, or a runner-up is within 1.3x of the
/// winner. The tune measures those of the finest level first.
fn contested(s: &Shape, points: &[Point]) -> bool {
    let near = |p: &Point| {
        let d = |a: usize, b: usize| ((a as f64).log2() - (b as f64).log2()).abs();
        let aspect = |m: usize, n: usize| (m as f64 / n as f64).log2();
        p.variant.op() == s.op
            && d(p.batch, s.batch) <= 2.01
            && d(p.m.min(p.n), s.m.min(s.n)) <= 0.6
            && (aspect(p.m, p.n) - aspect(s.m, s.n)).abs() <= 2.01
    };
    // Per (variant, dtype, shape): the best and second-best times and the winner.
    type Key = (Variant, DType, usize, usize, usize);
    let mut at: Vec<(Key, f64, f64, &str)> = vec![];
    for p in points.iter().filter(|p| near(p)) {
        let key = (p.variant, p.dtype, p.batch, p.m, p.n);
        match at.iter_mut().find(|e| e.0 == key) {
            Some(e) if p.median_us < e.1 => *e = (key, p.median_us, e.1, &p.kernel),
            Some(e) => e.2 = e.2.min(p.median_us),
            None => at.push((key, p.median_us, f64::INFINITY, &p.kernel)),
        }
    }
    at.iter().any(|e| e.2 < 1.3 * e.1)
        || at.iter().any(|a| {
            at.iter()
                .any(|b| (a.0 .0, a.0 .1) == (b.0 .0, b.0 .1) && a.3 != b.3)
        })
}

fn geomean(x: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = x.fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1));
    if n == 0 {
        f64::NAN
    } else {
        (s / n as f64).exp()
    }
}

/// A grid point's results, the CPU's and the GPU's (points and failed checks), and the
/// seconds it took: making the inputs, the CPU's kernels, the GPU's.
type GridPoints = ([(Vec<Point>, Vec<String>); 2], [f64; 3]);

/// One grid shape's points in `dtype`, each with the kernels that failed there: where
/// `gpu` is given its kernels with the data there, then the CPU's kernels on host data,
/// but those hopeless by their device's points so far (`cpu_points`, `gpu_points`:
/// `verdict`). With `only`, the kernels named there alone (a resumed tune's stale ones at
/// a shape it holds), measured against the points kept there. Where the copies'
/// model `link` is given, a CPU kernel three times slower than the GPU's best with the
/// copies keeps its pilot (`shape_points`): host data goes to the GPU there whatever the
/// CPU's exact time (on an H100 machine, 2026-12-06, two thirds of the CPU's time went
/// to calls of 10-500 ms at shapes the GPU takes 10-100x faster).
#[allow(clippy::too_many_arguments)]
fn grid_points(
    s: &Shape,
    v: Variant,
    dtype: DType,
    gpu: Option<&DeviceCaps>,
    cpu_too: bool,
    only: Option<&HashSet<String>>,
    [cpu_points, gpu_points]: [&[Point]; 2],
    link: Option<&Transfer>,
    rng: &mut StdRng,
) -> GridPoints {
    #[allow(clippy::too_many_arguments)]
    fn go<T: Real>(
        s: &Shape,
        v: Variant,
        gpu: Option<&DeviceCaps>,
        cpu_too: bool,
        only: Option<&HashSet<String>>,
        [cpu_points, gpu_points]: [&[Point]; 2],
        link: Option<&Transfer>,
        rng: &mut StdRng,
    ) -> GridPoints {
        let p = Problem::new(v, T::DTYPE, s.batch, s.m, s.n);
        let named = |k: &&'static Kernel| only.is_none_or(|o| o.contains(&kernel_key(k)));
        let gpu_ks: Vec<_> = gpu.map_or(vec![], |caps| kernels_for(&p, Some(caps)));
        let gpu_ks: Vec<_> = gpu_ks.into_iter().filter(named).collect();
        let cpu_ks: Vec<_> = match cpu_too {
            true => kernels_for(&p, None).into_iter().filter(named).collect(),
            false => vec![],
        };
        if gpu_ks.is_empty() && cpu_ks.is_empty() {
            return Default::default();
        }
        // The fastest point kept at this very shape (none unless `only`).
        let kept = |points: &[Point]| {
            points
                .iter()
                .filter(|q| (q.variant, q.dtype) == (v, T::DTYPE))
                .filter(|q| (q.batch, q.m, q.n) == (s.batch, s.m, s.n))
                .map(|q| q.median_us)
                .fold(f64::INFINITY, f64::min)
        };
        let t = Instant::now();
        let inputs = inputs_for::<T>(s, rng);
        let made = t.elapsed().as_secs_f64();
        let against = Against {
            bar_us: kept(gpu_points),
            history: gpu_points,
            probe: true,
        };
        let on_gpu = shape_points(s, v, &gpu_ks, Data::Gpu, &inputs, against);
        let gpu_done = t.elapsed().as_secs_f64();
        let gpu_best = (on_gpu.0.iter().map(|q| q.median_us)).fold(kept(gpu_points), f64::min);
        let bar_us = match link {
            Some(l) if gpu_best.is_finite() => cost_us(gpu_best, Some(host_copies(&p)), l),
            _ => f64::INFINITY,
        };
        let against = Against {
            bar_us: bar_us.min(kept(cpu_points)),
            history: cpu_points,
            probe: false,
        };
        let cpu = shape_points(s, v, &cpu_ks, Data::Host, &inputs, against);
        let all = t.elapsed().as_secs_f64();
        ([cpu, on_gpu], [made, all - gpu_done, gpu_done - made])
    }
    let points = [cpu_points, gpu_points];
    match dtype {
        DType::F64 => go::<f64>(s, v, gpu, cpu_too, only, points, link, rng),
        _ => go::<f32>(s, v, gpu, cpu_too, only, points, link, rng),
    }
}

/// Whether the first GPU still computes, asked after one of its timings failed: an
/// illegal address leaves its context unusable for every later call.
fn gpu_alive() -> bool {
    let p = Problem::new(Variant::QrReduced, DType::F32, 4, 8, 8);
    let x: Vec<f32> = (0..256).map(|i| (i % 7) as f32 - 3.0).collect();
    timing::time_device(&p, 0, &Options::default(), &[&x], 1).is_ok()
}

/// A held-out shape's regrets: with the data on the host and, where there is a GPU with a
/// table, with the data there.
fn held_out_regrets(
    s: &Shape,
    v: Variant,
    dtype: DType,
    cpu: &Model,
    gpu: Option<(&'static DeviceCaps, &Model)>,
    rng: &mut StdRng,
) -> Vec<Regret> {
    fn go<T: Real>(
        s: &Shape,
        v: Variant,
        cpu: &Model,
        gpu: Option<(&'static DeviceCaps, &Model)>,
        rng: &mut StdRng,
    ) -> Vec<Regret> {
        let inputs = inputs_for::<T>(s, rng);
        let mut out: Vec<Regret> = regret(s, v, Data::Host, cpu, gpu, &inputs)
            .into_iter()
            .collect();
        if gpu.is_some() {
            out.extend(regret(s, v, Data::Gpu, cpu, gpu, &inputs));
        }
        out
    }
    match dtype {
        DType::F64 => go::<f64>(s, v, cpu, gpu, rng),
        _ => go::<f32>(s, v, cpu, gpu, rng),
    }
}

/// The versions of the kernels of `ops` a table holds: the CPU's, or with `cuda` the
/// CUDA ones.
fn versions(ops: &[Op], cuda: bool) -> Vec<(String, u32)> {
    let mut v: Vec<(String, u32)> = KERNELS
        .iter()
        .filter(|k| ops.contains(&k.op) && (k.backend == Backend::Cuda) == cuda)
        .filter(|k| cuda || k.backend.is_cpu())
        .map(|k| (kernel_key(k), k.version))
        .collect();
    v.sort();
    v
}

/// The drift between two probe readings (NaN where either failed).
fn drift(start: f64, end: f64) -> Option<f64> {
    let d = (end / start - 1.0).abs();
    d.is_finite().then_some(d)
}

/// With `--resume`, the table of `device` in `dir` (none if there is none yet; another
/// device's is refused), holding only its points of kernels the registry still has at the
/// version measured, and the keys of its stale kernels: those of the operations it holds
/// that it measured at another version or not at all (measured again where it has shapes).
fn resumed(
    dir: &std::path::Path,
    device: &DeviceKey,
) -> Result<(Option<Table>, Vec<String>), String> {
    let path = dir.join(format!("{}.toml", device.file_stem()));
    if !path.exists() {
        return Ok((None, vec![]));
    }
    let mut t = read_checked(&path, device)?;
    let mut ops: Vec<Op> = vec![];
    for p in &t.points {
        if !ops.contains(&p.variant.op()) {
            ops.push(p.variant.op());
        }
    }
    let stale = versions(&ops, matches!(device, DeviceKey::Cuda { .. }))
        .into_iter()
        .filter(|kv| !t.versions.contains(kv))
        .map(|(k, _)| k)
        .collect();
    let current: HashSet<&str> = t
        .versions
        .iter()
        .filter(|(k, v)| current_kernel(k, *v).is_some())
        .map(|(k, _)| k.as_str())
        .collect();
    t.points.retain(|p| current.contains(p.kernel.as_str()));
    Ok((Some(t), stale))
}

/// The larger of two drifts: a table measured over several runs drifted at least as much as
/// its worst one (either unknown: the other).
fn worse_drift(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

/// Read a table (given to `--check`, or kept by `--resume`), refused unless it is of
/// `key`'s device.
fn read_checked(path: &std::path::Path, key: &DeviceKey) -> Result<Table, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let t = Table::parse(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))?;
    if &t.device != key {
        return Err(format!(
            "{} is for {}, this machine is {key}",
            path.display(),
            t.device
        ));
    }
    Ok(t)
}

pub fn run(a: &TuneArgs, command: &str) -> Result<(), String> {
    let t0 = Instant::now();
    let ops: Vec<Op> = match a.only {
        Some(op) => vec![op],
        None => vec![Op::Qr, Op::Eigh, Op::Svd],
    };
    let key = DeviceKey::this_cpu();
    let gpu = first_gpu();
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("tune-{}", key.file_stem())));
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot make {}: {e}", out.display()))?;
    let checked = match &a.check {
        Some(_) if a.install => {
            return Err("--check measures an existing table: nothing to --install".into())
        }
        Some(_) if a.resume => {
            return Err("--check measures an existing table: nothing to --resume".into())
        }
        Some(path) => Some((read_checked(path, &key)?, path.clone())),
        None => None,
    };
    let is_check = checked.is_some();
    if is_check && a.grid_only {
        return Err("--check measures no grid: --grid-only has nothing to do".into());
    }
    // Nine tenths of the budget for the grid, the rest for the held-out check (all of it
    // with --check): with three quarters, the 2-core machine's QR-only tune of 10 minutes
    // (2026-12-06) stopped its grid 28 shapes short and then checked 200 held-out shapes
    // in 30 s; an H100 machine's full tune checks about one a second.
    let grid_end = match (is_check, a.grid_only) {
        (true, _) => Duration::ZERO,
        (false, true) => a.budget,
        (false, false) => a.budget.mul_f64(0.9),
    };
    // --resume: the tables in `out` so far (the GPU's only where it is the first GPU here).
    let ((cpu_before, cpu_stale), (gpu_before, gpu_stale)) = match a.resume {
        true => (
            resumed(&out, &key)?,
            match gpu {
                Some(caps) => resumed(&out, &DeviceKey::of_gpu(caps))?,
                None => (None, vec![]),
            },
        ),
        false => ((None, vec![]), (None, vec![])),
    };
    // Kernels changed since the tables kept: measured again at the shapes those hold.
    let stale: HashSet<String> = cpu_stale.into_iter().chain(gpu_stale).collect();
    let kept = |t: &Option<Table>| t.as_ref().map_or(vec![], |t| t.points.clone());
    let (mut cpu_points, mut gpu_points) = (kept(&cpu_before), kept(&gpu_before));
    let resumed_points = cpu_points.len() + gpu_points.len();
    // (The shapes of record beyond the grid have GPU points alone.)
    let measured: HashSet<(Variant, DType, usize, usize, usize)> = cpu_points
        .iter()
        .chain(&gpu_points)
        .map(|p| (p.variant, p.dtype, p.batch, p.m, p.n))
        .collect();
    // The operations the tables hold: this run's and those of the points kept.
    let mut ops = ops;
    for p in cpu_points.iter().chain(&gpu_points) {
        if !ops.contains(&p.variant.op()) {
            ops.push(p.variant.op());
        }
    }
    // A different seed a run, so that each draws other held-out shapes.
    let mut rng = StdRng::seed_from_u64(1 + resumed_points as u64);
    let probe0 = [
        drift_probe(Data::Host),
        gpu.map_or(f64::NAN, |_| drift_probe(Data::Gpu)),
    ];
    let mut failed = vec![];
    // The GPU's copies first (seconds): its table's transfer model.
    let kept_transfer = gpu_before.as_ref().and_then(|t| t.transfer);
    let transfer = match (gpu, is_check) {
        (Some(_), false) if kept_transfer.is_some() => kept_transfer,
        (Some(_), false) => match measure_transfers() {
            Ok((t, csv, why)) => {
                std::fs::write(out.join("copies.csv"), csv).map_err(|e| e.to_string())?;
                if let Some(e) = why {
                    failed.push(format!(
                        "copies from registered memory (priced as staged ones): {e}"
                    ));
                }
                Some(t)
            }
            Err(e) => {
                failed.push(format!(
                    "the transfer model (host data stays on the CPU): {e}"
                ));
                None
            }
        },
        _ => None,
    };
    let shapes = grid(a.only.as_ref().map_or(&ops[..], std::slice::from_ref));
    let mut done = 0;
    // A progress line on a terminal, rewritten in place; in a log a line every 30 s.
    let tty = std::io::stderr().is_terminal();
    let mut logged = Duration::ZERO;
    let mut progress = |what: String, t: Duration| {
        let left = a.budget.saturating_sub(t).as_secs();
        let line = format!("[tune] {what}, {left} s of the budget left");
        if tty {
            eprint!("\r{line}   ");
            let _ = std::io::stderr().flush();
        } else if t >= logged + Duration::from_secs(30) {
            eprintln!("{line}");
            logged = t;
        }
    };
    // The GPU whose kernels are timed: none from the moment it stops computing. Host
    // data's copies to it: as staged (what the CPU's kernels are weighed against).
    let mut gpu_timed = gpu;
    let staged = transfer.map(|t| t.staged);
    // Levels 0 and 1, then level 2 with the shapes near a crossover first (`contested`,
    // by the CPU's points).
    let split = shapes
        .iter()
        .position(|(l, _)| *l >= 2)
        .unwrap_or(shapes.len());
    let mut queue: std::collections::VecDeque<Shape> =
        shapes[..split].iter().map(|(_, s)| s.clone()).collect();
    // Then the shapes of record beyond the grid's caps, on the GPU alone.
    let beyond = match gpu_timed {
        Some(_) => beyond_the_grid(a.only.as_ref().map_or(&ops[..], std::slice::from_ref)),
        None => vec![],
    };
    queue.extend(beyond.iter().cloned());
    let mut ordered = false;
    // Where the grid's time goes (shape-times.csv): making the inputs, the CPU's kernels,
    // the GPU's (its uploads, warm-ups and checks included).
    let mut times = match a.resume {
        true => std::fs::read_to_string(out.join("shape-times.csv")).unwrap_or_default(),
        false => String::new(),
    };
    if times.is_empty() {
        times = String::from("variant,dtype,batch,m,n,points,inputs_s,cpu_s,gpu_s\n");
    }
    'grid: loop {
        let Some(s) = queue.pop_front() else {
            if ordered {
                break;
            }
            // Level 2: contested shapes first, the rest in grid order.
            let mut fine: Vec<Shape> = shapes[split..].iter().map(|(_, s)| s.clone()).collect();
            fine.sort_by_key(|s| !(contested(s, &cpu_points) || contested(s, &gpu_points)));
            queue = fine.into();
            ordered = true;
            continue;
        };
        let cpu_too = feasible(s.op.main_variant(), s.batch, s.m, s.n);
        let on_gpu = gpu_timed.is_some();
        let takes = |v| match cpu_too {
            true => feasible(v, s.batch, s.m, s.n),
            false => on_gpu && feasible_on_gpu(v, s.batch, s.m, s.n),
        };
        for v in variants(s.op).filter(|&v| takes(v)) {
            for dtype in [DType::F32, DType::F64] {
                // A shape the tables kept: its stale kernels alone, if any.
                let again = measured.contains(&(v, dtype, s.batch, s.m, s.n));
                if again && stale.is_empty() {
                    continue;
                }
                if t0.elapsed() >= grid_end {
                    break 'grid;
                }
                let ([(c, bad_c), (g, bad_g)], secs) = grid_points(
                    &s,
                    v,
                    dtype,
                    gpu_timed,
                    cpu_too,
                    again.then_some(&stale),
                    [&cpu_points, &gpu_points],
                    staged.as_ref(),
                    &mut rng,
                );
                let nothing = [&c, &g].iter().all(|x| x.is_empty());
                if again && nothing && bad_c.is_empty() && bad_g.is_empty() {
                    continue;
                }
                let _ = writeln!(
                    times,
                    "{},{},{},{},{},{},{:.3},{:.3},{:.3}",
                    v.name(),
                    dtype.name(),
                    s.batch,
                    s.m,
                    s.n,
                    c.len() + g.len(),
                    secs[0],
                    secs[1],
                    secs[2]
                );
                cpu_points.extend(c);
                gpu_points.extend(g);
                failed.extend(bad_c);
                if !bad_g.is_empty() && !gpu_alive() {
                    failed.insert(
                        0,
                        format!(
                            "the GPU stopped computing after a failure (the first there: {}): \
                             its timings end there, and its table is written but not \
                             installed",
                            bad_g[0]
                        ),
                    );
                    gpu_timed = None;
                }
                failed.extend(bad_g);
            }
        }
        done += 1;
        progress(
            format!("{done}/{} grid shapes", shapes.len() + beyond.len()),
            t0.elapsed(),
        );
    }
    let probe1 = [
        drift_probe(Data::Host),
        gpu.map_or(f64::NAN, |_| drift_probe(Data::Gpu)),
    ];
    let drift_of = |t: &Option<Table>| t.as_ref().and_then(|t| t.drift);
    let drifts = [
        worse_drift(drift(probe0[0], probe1[0]), drift_of(&cpu_before)),
        worse_drift(drift(probe0[1], probe1[1]), drift_of(&gpu_before)),
    ];
    let write = |t: &Table| -> Result<PathBuf, String> {
        let file = out.join(format!("{}.toml", t.device.file_stem()));
        std::fs::write(&file, t.to_text())
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        Ok(file)
    };
    let (table, file) = match checked {
        Some(c) => c,
        None => {
            // Measured beside this run's GPU: host data may weigh its kernels wherever the
            // table is read, built in or installed (`table::gpu_tables_exist`).
            let beside = gpu.map(|caps| DeviceKey::of_gpu(caps).file_stem());
            let table = Table {
                device: key.clone(),
                made: command.to_string(),
                drift: drifts[0],
                versions: versions(&ops, false),
                points: cpu_points,
                transfer: None,
                gpu: beside,
            };
            let file = write(&table)?;
            (table, file)
        }
    };
    let gpu_table = match (gpu, is_check) {
        (Some(caps), false) => {
            let t = Table {
                device: DeviceKey::of_gpu(caps),
                made: command.to_string(),
                drift: drifts[1],
                versions: versions(&ops, true),
                points: gpu_points,
                transfer,
                gpu: None,
            };
            let file = write(&t)?;
            Some((t, file))
        }
        _ => None,
    };
    if !is_check {
        let mut csv = String::from("kernel,variant,dtype,batch,m,n,median_us,p25_us,p75_us\n");
        for p in table
            .points
            .iter()
            .chain(gpu_table.iter().flat_map(|(t, _)| &t.points))
        {
            let _ = writeln!(
                csv,
                "{},{:?},{},{},{},{},{},{},{}",
                p.kernel, p.variant, p.dtype, p.batch, p.m, p.n, p.median_us, p.p25_us, p.p75_us
            );
        }
        std::fs::write(out.join("points.csv"), csv).map_err(|e| e.to_string())?;
        std::fs::write(out.join("shape-times.csv"), &times).map_err(|e| e.to_string())?;
    }
    // Installed before the held-out check, so that a run stopped during it leaves them in
    // place; a GPU that stopped computing leaves its table written but not installed
    // (nothing vouches for its rows).
    let mut installed = vec![];
    if a.install && !is_check {
        let dir = batchlin::table::local_dir()
            .ok_or("no directory for local tables (set BATCHLIN_TABLE_DIR)")?;
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let gpu_file = gpu_table
            .iter()
            .filter(|_| gpu_timed.is_some())
            .map(|(_, f)| f);
        for f in std::iter::once(&file).chain(gpu_file) {
            let to = dir.join(f.file_name().expect("a file name"));
            std::fs::copy(f, &to).map_err(|e| format!("cannot write {}: {e}", to.display()))?;
            installed.push(to);
        }
    }

    // Held out: random shapes off the grid, each kernel timed, the routings compared. The
    // GPU's table is the one just measured, or with --check the one the planner finds.
    let model = Model::new(&table, &file.display().to_string());
    let gpu_model = gpu_table
        .as_ref()
        .map(|(t, f)| Model::new(t, &f.display().to_string()));
    let gpu_pair = match (gpu_timed, &gpu_model) {
        (Some(caps), Some(m)) => Some((caps, m)),
        (Some(caps), None) => batchlin::table::loaded_gpu(caps)
            .model
            .as_ref()
            .map(|m| (caps, m)),
        _ => None,
    };
    let mut regrets: Vec<Regret> = vec![];
    let held = |r: &[Regret]| r.iter().filter(|x| x.data == Data::Host).count();
    while !a.grid_only && t0.elapsed() < a.budget && held(&regrets) < 200 {
        let (s, v) = held_out(&ops, &mut rng);
        let dtype = if rng.random_bool(0.5) {
            DType::F32
        } else {
            DType::F64
        };
        regrets.extend(held_out_regrets(&s, v, dtype, &model, gpu_pair, &mut rng));
        progress(format!("{} shapes held out", held(&regrets)), t0.elapsed());
    }
    if tty {
        eprintln!();
    }
    // Every held-out timing, so that another table can be priced on them unmeasured.
    let mut csv = String::from("shape,data,kernel,median_us,picked_by\n");
    for r in &regrets {
        for (k, us) in &r.times {
            let by: Vec<&str> = r.picks.iter().filter(|p| &p.1 == k).map(|p| p.0).collect();
            let data = if r.data == Data::Host { "host" } else { "gpu" };
            let _ = writeln!(csv, "{},{data},{k},{us},{}", r.shape, by.join("+"));
        }
    }
    std::fs::write(out.join("held-out.csv"), csv).map_err(|e| e.to_string())?;
    // A checked table's own plots are in its tune's folder.
    let mut measured: Vec<&Table> = vec![];
    if !is_check {
        measured.push(&table);
        measured.extend(gpu_table.iter().map(|(t, _)| t));
    }
    let plots = write_plots(&out, &measured, &regrets)?;
    let grid = match is_check {
        true => format!("Checked {} (its grid not measured again)", file.display()),
        false if resumed_points > 0 => format!(
            "Grid: {done} of {} shapes measured (coarse levels first), {resumed_points} \
             points of them kept from the tables in {} (`--resume`){}",
            shapes.len() + beyond.len(),
            out.display(),
            match stale.is_empty() {
                true => String::new(),
                false => {
                    let mut names: Vec<&str> = stale.iter().map(|k| k.as_str()).collect();
                    names.sort();
                    format!(
                        "; changed since, and measured again at the shapes kept: {}",
                        names.join(", ")
                    )
                }
            }
        ),
        false => format!(
            "Grid: {done} of {} shapes measured (coarse levels first)",
            shapes.len() + beyond.len()
        ),
    };
    let run = Run {
        command,
        grid: &grid,
        drift: drifts,
        took: t0.elapsed(),
    };
    let gpu_t = gpu_table.as_ref().map(|(t, _)| t);
    let mut report = report(&table, gpu_t, &regrets, &failed, &run);
    report += &plots;
    std::fs::write(out.join("report.md"), &report).map_err(|e| e.to_string())?;
    print!("{report}");
    if is_check {
        println!(
            "wrote report.md, held-out.csv and the plots in {}",
            out.display()
        );
        return Ok(());
    }
    let files: Vec<PathBuf> = std::iter::once(file)
        .chain(gpu_table.iter().map(|(_, f)| f.clone()))
        .collect();
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    println!(
        "wrote {}, points.csv, shape-times.csv, held-out.csv, report.md and its plots in {}",
        names.join(" and "),
        out.display()
    );
    if a.install {
        for to in &installed {
            println!(
                "installed as {} (the planner reads it from the next process on)",
                to.display()
            );
        }
        if gpu.is_some() && gpu_timed.is_none() {
            println!("the GPU's table is not installed: the GPU stopped computing (report.md)");
        }
    } else {
        println!(
            "to route by it: batchlin tune --install, or BATCHLIN_TABLE={} (one table)",
            names[0]
        );
    }
    Ok(())
}

/// The report's plots as SVG files in `out`, and the Markdown that shows them: each
/// measured table's (winners, times; a GPU's files named `gpu-...`), and the held-out
/// shapes'.
fn write_plots(
    out: &std::path::Path,
    tables: &[&Table],
    regrets: &[Regret],
) -> Result<String, String> {
    let mut md = String::from("\n## Plots\n");
    let put = |file: String, svg: Option<String>, md: &mut String| -> Result<(), String> {
        if let Some(svg) = svg {
            std::fs::write(out.join(&file), svg)
                .map_err(|e| format!("cannot write {}: {e}", out.join(&file).display()))?;
            let _ = writeln!(md, "\n![{file}]({file})");
        }
        Ok(())
    };
    for t in tables {
        let points = &t.points[..];
        let prefix = match t.device {
            DeviceKey::Cpu { .. } => "",
            DeviceKey::Cuda { .. } => "gpu-",
        };
        let mut kinds: Vec<(Variant, DType)> =
            points.iter().map(|p| (p.variant, p.dtype)).collect();
        kinds.sort_by_key(|(v, d)| (*v as u8, *d as u8));
        kinds.dedup();
        for (v, d) in kinds {
            let stem = format!("{prefix}{}-{d}", v.name());
            put(
                format!("winners-{stem}.svg"),
                plots::winner_map(points, v, d),
                &mut md,
            )?;
            put(
                format!("times-{stem}.svg"),
                plots::time_curves(points, v, d),
                &mut md,
            )?;
        }
    }
    let pairs: Vec<(f64, f64)> = regrets
        .iter()
        .filter(|r| r.predicted_us.is_finite())
        .map(|r| (r.predicted_us, r.measured_us))
        .collect();
    put(
        "predicted.svg".into(),
        plots::predicted_vs_measured(&pairs),
        &mut md,
    )?;
    let series: Vec<(&str, Vec<f64>)> = routings(regrets)
        .into_iter()
        .map(|name| (name, regrets.iter().filter_map(|r| r.of(name)).collect()))
        .collect();
    put("regret.svg".into(), plots::regret_cdf(&series), &mut md)?;
    Ok(md)
}

/// The routings the regrets compare, in the order first met.
fn routings(regrets: &[Regret]) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = vec![];
    for p in regrets.iter().flat_map(|r| &r.picks) {
        if !names.contains(&p.0) {
            names.push(p.0);
        }
    }
    names
}

/// What the report says of the run itself.
struct Run<'a> {
    command: &'a str,
    grid: &'a str,
    /// The drift probes' change, the CPU's and the GPU's.
    drift: [Option<f64>; 2],
    took: Duration,
}

/// How many shapes each kernel of `t` wins (the fastest there).
fn kernel_lines(r: &mut String, t: &Table) {
    let mut by_shape: std::collections::BTreeMap<(String, usize, usize, usize), (f64, &str)> =
        Default::default();
    for p in &t.points {
        let e = by_shape
            .entry((format!("{:?}{}", p.variant, p.dtype), p.batch, p.m, p.n))
            .or_insert((f64::INFINITY, ""));
        if p.median_us < e.0 {
            *e = (p.median_us, &p.kernel);
        }
    }
    let _ = writeln!(
        r,
        "\n{}: {} points.\n\n| kernel | version | shapes won |\n|---|---|---|",
        t.device,
        t.points.len()
    );
    for (k, v) in &t.versions {
        let wins = by_shape.values().filter(|(_, w)| w == k).count();
        let _ = writeln!(r, "| {k} | {v} | {wins} |");
    }
}

fn report(
    t: &Table,
    gpu: Option<&Table>,
    regrets: &[Regret],
    failed: &[String],
    run: &Run,
) -> String {
    let mut r = String::new();
    let _ = writeln!(r, "# batchlin tune: {}\n", t.device);
    let _ = writeln!(
        r,
        "Command: `{}`; {:.0} s.\n",
        run.command,
        run.took.as_secs_f64()
    );
    let _ = writeln!(r, "- {}.", run.grid);
    let pct = |d: Option<f64>| d.map_or("not measured".into(), |d| format!("{:.1}%", d * 100.0));
    let _ = writeln!(
        r,
        "- Drift probe (QR float32 32x32, a batch of 128 a thread on the CPU, 4096 on the \
         GPU; the fastest of {} readings after a warm-up one), start to end: CPU {}{}.",
        PROBE_READINGS - 1,
        pct(run.drift[0]),
        match gpu {
            Some(_) => format!(", GPU {}", pct(run.drift[1])),
            None => String::new(),
        }
    );
    let _ = writeln!(
        r,
        "- Kernels failing their check (left out): {}.",
        failed.len()
    );
    for f in failed.iter().take(20) {
        let _ = writeln!(r, "  - {f}");
    }
    kernel_lines(&mut r, t);
    if let Some(g) = gpu {
        kernel_lines(&mut r, g);
        if let Some(tr) = g.transfer {
            let _ = writeln!(
                r,
                "\nCopies (latency + bytes / bandwidth, fitted on 4 KiB to 256 MiB; \
                 the planner prices a copy by the sizes' own times, interpolated: \
                 copies.csv has each beside the fit's):\n\n| path | to the GPU | back |\n|---|---|---|"
            );
            let link =
                |l: Link| format!("{:.1} us + {:.1} GB/s", l.latency_us, l.bytes_per_us / 1e3);
            for (name, x) in [("staged", tr.staged), ("registered", tr.registered)] {
                let _ = writeln!(
                    r,
                    "| {name} | {} | {} |",
                    link(x.to_device),
                    link(x.to_host)
                );
            }
        }
    }
    let hosts: Vec<&Regret> = regrets.iter().filter(|x| x.data == Data::Host).collect();
    let _ = writeln!(
        r,
        "\n## Held out: {} random shapes off the grid\n\nRegret: the time of the kernel \
         chosen over the fastest measured at that shape (on host data every kernel that \
         can take it, a GPU's with the copies there and back; on the GPU's data its kernels).\n",
        hosts.len()
    );
    if !regrets.is_empty() {
        fn stat<R: std::borrow::Borrow<Regret>>(of: &[R], routing: &str) -> String {
            let v: Vec<f64> = of.iter().filter_map(|x| x.borrow().of(routing)).collect();
            let g = geomean(v.iter().copied());
            let w = v.iter().copied().fold(1.0, f64::max);
            format!("{g:.3} | {w:.2}")
        }
        let _ = writeln!(
            r,
            "| routing | shapes | geometric mean | worst |\n|---|---|---|---|"
        );
        for name in routings(regrets) {
            let n = regrets.iter().filter(|x| x.of(name).is_some()).count();
            let _ = writeln!(r, "| {name} | {n} | {} |", stat(regrets, name));
        }
        let ops: Vec<Op> = [Op::Qr, Op::Eigh, Op::Svd]
            .into_iter()
            .filter(|&op| hosts.iter().any(|x| x.op == op))
            .collect();
        if ops.len() > 1 {
            let _ = writeln!(
                r,
                "\nBy operation (host data, every variant):\n\n| operation | shapes | tables: \
                 geometric mean | worst | rules: geometric mean | worst |\n|---|---|---|---|---|---|"
            );
            for op in ops {
                let of: Vec<&Regret> = hosts.iter().copied().filter(|x| x.op == op).collect();
                let _ = writeln!(
                    r,
                    "| {op} | {} | {} | {} |",
                    of.len(),
                    stat(&of, TABLES),
                    stat(&of, RULES)
                );
            }
        }
        let ext = hosts.iter().filter(|x| x.extrapolated).count();
        let _ = writeln!(
            r,
            "\n{ext} of the host-data shapes predicted by extrapolation. The worst for the \
             tables:\n"
        );
        let mut worst: Vec<&Regret> = regrets.iter().collect();
        let first = |x: &Regret| x.picks.first().map_or(1.0, |p| p.2);
        worst.sort_by(|a, b| first(b).total_cmp(&first(a)));
        for w in worst.iter().take(8) {
            let picks: Vec<String> = w
                .picks
                .iter()
                .map(|(name, k, x)| format!("{name} {x:.2} ({k})"))
                .collect();
            let data = if w.data == Data::Host { "host" } else { "GPU" };
            let _ = writeln!(r, "- {} ({data} data): {}", w.shape, picks.join(", "));
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("20m").unwrap(), Duration::from_secs(1200));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("2.5").unwrap(), Duration::from_millis(2500));
        for bad in ["", "0s", "-3m", "10x", "m", "nan"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_probe_drops_its_cold_first_reading_and_takes_the_fastest() {
        // A cold first reading (the 52% of a CI run) does not count, nor slow ones.
        assert_eq!(settled(&[2.3, 1.5, 1.6, 1.4]), 1.4);
        assert_eq!(settled(&[0.9, 1.5, 9.0, 1.4, 2.0, 1.9]), 1.4);
        // Start and end read alike when only the first reading at the start was cold and
        // some at the end fell on other work.
        let start = settled(&[2.3, 1.5, 1.52, 1.49, 1.5, 1.51]);
        let end = settled(&[1.6, 1.5, 2.1, 1.53, 2.0, 1.95]);
        assert!((end / start - 1.0).abs() < 0.01, "{start} {end}");
        // A failed reading or too few readings: no drift figure rather than a wrong one.
        assert!(settled(&[1.0, f64::NAN, 1.0, 1.0]).is_nan());
        assert!(settled(&[1.0]).is_nan());
        assert!(settled(&[]).is_nan());
    }

    /// The shapes of record the grid's caps leave out are timed on the GPU alone: the
    /// variants whose outputs fit, never a square factor of 256 matrices of 2048 rows.
    #[test]
    fn shapes_of_record_beyond_the_grid_go_to_the_gpu_alone() {
        let beyond = beyond_the_grid(&[Op::Qr, Op::Eigh, Op::Svd]);
        let got: Vec<(Op, usize, usize, usize)> =
            beyond.iter().map(|s| (s.op, s.batch, s.m, s.n)).collect();
        assert_eq!(
            got,
            [
                (Op::Eigh, 256, 256, 256),
                (Op::Eigh, 16, 1024, 1024),
                (Op::Svd, 1024, 128, 128),
                (Op::Svd, 256, 256, 256),
                (Op::Svd, 256, 2048, 64),
                (Op::Svd, 1, 1024, 1024),
            ]
        );
        let grid = grid(&[Op::Qr, Op::Eigh, Op::Svd]);
        for s in &beyond {
            assert!(!grid
                .iter()
                .any(|(_, g)| (g.op, g.batch, g.m, g.n) == (s.op, s.batch, s.m, s.n)));
            assert!(
                feasible_on_gpu(s.op.main_variant(), s.batch, s.m, s.n),
                "{s:?}"
            );
        }
        assert!(feasible_on_gpu(Variant::Svdvals, 256, 2048, 64));
        assert!(!feasible_on_gpu(Variant::SvdFull, 256, 2048, 64));
        assert!(beyond_the_grid(&[Op::Qr]).is_empty());
    }

    #[test]
    fn the_grid_spans_the_axes_coarse_first_within_its_caps() {
        let g = grid(&[Op::Qr, Op::Eigh]);
        assert!(g.windows(2).all(|w| w[0].0 <= w[1].0), "levels in order");
        assert!(g
            .iter()
            .all(|(_, s)| feasible(s.op.main_variant(), s.batch, s.m, s.n)));
        assert!(g.iter().all(|(_, s)| s.op != Op::Eigh || s.m == s.n));
        let coarse: Vec<&Shape> = g.iter().filter(|(l, _)| *l == 0).map(|(_, s)| s).collect();
        for k in [2, 8, 32, 128, 512] {
            assert!(
                coarse.iter().any(|s| s.m == k && s.n == k),
                "k = {k} at level 0"
            );
        }
        assert!(g.iter().any(|(_, s)| s.m == 32 * s.n), "tall 32:1");
        assert!(g.iter().any(|(_, s)| s.n == 32 * s.m), "wide 1:32");
        assert!(g.iter().any(|(_, s)| s.batch == 1 << 16));
        assert_eq!(half_octaves(16), vec![2, 3, 4, 6, 8, 11, 16]);
        // eigh on both sides of cuSOLVER's jump past 256, at the finest level.
        for k in [256, 257] {
            assert!(g
                .iter()
                .any(|(l, s)| s.op == Op::Eigh && s.m == k && s.n == k && *l <= 2));
        }
        assert!(g
            .iter()
            .any(|(l, s)| (s.op, s.batch, s.m, *l) == (Op::Eigh, 4, 257, 2)));
        assert!(!g.iter().any(|(_, s)| s.op == Op::Qr && s.n == 257));
        let mut seen = std::collections::HashSet::new();
        assert!(g
            .iter()
            .all(|(_, s)| seen.insert((s.op as u8, s.batch, s.m, s.n))));
    }

    /// Host kernels far slower than the bar (on a GPU machine: the GPU with the copies)
    /// keep their pilot where it is long; without a bar the fastest is timed in rounds.
    #[test]
    fn a_cpu_kernel_far_behind_the_gpu_keeps_its_pilot() {
        let s = Shape {
            op: Op::Qr,
            batch: 16,
            m: 256,
            n: 256,
        };
        let v = Variant::QrReduced;
        let inputs = inputs_for::<f64>(&s, &mut StdRng::seed_from_u64(7));
        let ks = kernels_for(&Problem::new(v, DType::F64, s.batch, s.m, s.n), None);
        let one_reading = |p: &Point| p.p25_us == p.median_us && p.p75_us == p.median_us;
        let bar = Against {
            bar_us: 1.0,
            ..Against::NOTHING
        };
        let (pts, bad) = shape_points(&s, v, &ks, Data::Host, &inputs, bar);
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(pts.len(), ks.len());
        for p in pts.iter().filter(|p| p.median_us >= LONE_PILOT_US) {
            assert!(one_reading(p), "{p:?}");
        }
        let (pts, _) = shape_points(&s, v, &ks, Data::Host, &inputs, Against::NOTHING);
        let best = pts
            .iter()
            .min_by(|a, b| a.median_us.total_cmp(&b.median_us))
            .unwrap();
        assert!(
            best.median_us >= HOST_ONE_CALL_US || !one_reading(best),
            "the fastest of calls under 100 ms is timed again: {best:?}"
        );
        assert!(pilot_suffices(2e5, 2e5, Data::Host));
        assert!(!pilot_suffices(2e5, 2e5, Data::Gpu));
        assert!(pilot_suffices(4e3, 1e3, Data::Gpu));
        assert!(!pilot_suffices(900.0, 100.0, Data::Gpu));
        assert_eq!(sampling(20e3), (2, 1));
        assert_eq!(sampling(5e3), (3, 3));
        assert_eq!(sampling(2e3), (5, 3));
        assert_eq!(sampling(1.0), (2000, 5));
    }

    /// The held-out check's kernels that no routing picks are probed against the picks'
    /// best, on host data on the batch's leading matrices: hopeless ones are left out, and
    /// without the probe they are timed.
    #[test]
    fn a_probe_on_host_data_leaves_out_what_cannot_win() {
        let s = Shape {
            op: Op::Qr,
            batch: 256,
            m: 16,
            n: 16,
        };
        let v = Variant::QrReduced;
        let inputs = inputs_for::<f32>(&s, &mut StdRng::seed_from_u64(3));
        let ks = kernels_for(&Problem::new(v, DType::F32, s.batch, s.m, s.n), None);
        let hopeless = Against {
            bar_us: 1e-3,
            history: &[],
            probe: true,
        };
        let (pts, bad) = shape_points(&s, v, &ks, Data::Host, &inputs, hopeless);
        assert!(pts.is_empty() && bad.is_empty(), "{pts:?} {bad:?}");
        let unprobed = Against {
            probe: false,
            ..hopeless
        };
        let (pts, bad) = shape_points(&s, v, &ks, Data::Host, &inputs, unprobed);
        assert_eq!((pts.len(), bad.len()), (ks.len(), 0), "{bad:?}");
    }

    /// A routing's pick read far slower than the fastest is timed again with it, and a
    /// reading within `CONFIRM_ABOVE` of the fastest, or of a kernel no routing picks,
    /// stands as it was.
    #[test]
    fn a_slow_reading_of_a_pick_is_timed_again() {
        let s = Shape {
            op: Op::Qr,
            batch: 64,
            m: 16,
            n: 16,
        };
        let v = Variant::QrReduced;
        let p = Problem::new(v, DType::F32, s.batch, s.m, s.n);
        let inputs = inputs_for::<f32>(&s, &mut StdRng::seed_from_u64(5));
        let ks = kernels_for(&p, None);
        assert!(ks.len() >= 2, "two CPU kernels take QR 64x16x16");
        let plan = plan_with(&p, &Place::Host, &Options::default(), None, None).unwrap();
        let pick = kernel_key(plan.kernel);
        let plans = [(RULES, plan)];
        let (pts, bad) = shape_points(&s, v, &ks, Data::Host, &inputs, Against::NOTHING);
        assert!(bad.is_empty() && pts.len() == ks.len(), "{bad:?}");
        let at = |pts: &[Point], key: &str| pts.iter().find(|q| q.kernel == key).unwrap().median_us;
        // A burst read as the pick's time: read again, it falls.
        let mut burst = pts.clone();
        let slow = 1e3 * pts.iter().map(|q| q.median_us).fold(0.0, f64::max);
        burst
            .iter_mut()
            .find(|q| q.kernel == pick)
            .unwrap()
            .median_us = slow;
        confirm(&s, v, Data::Host, &inputs, &plans, &mut burst);
        assert!(at(&burst, &pick) < slow / 10.0, "{burst:?}");
        // Within the margin, and a kernel no routing picks: not read again.
        let mut close = pts.clone();
        let fastest = pts
            .iter()
            .map(|q| q.median_us)
            .fold(f64::INFINITY, f64::min);
        let other = ks
            .iter()
            .map(|k| kernel_key(k))
            .find(|k| *k != pick)
            .unwrap();
        for q in close.iter_mut() {
            q.median_us = if q.kernel == pick {
                1.05 * fastest
            } else {
                fastest
            };
        }
        close
            .iter_mut()
            .find(|q| q.kernel == other)
            .unwrap()
            .median_us = slow;
        let before: Vec<f64> = close.iter().map(|q| q.median_us).collect();
        confirm(&s, v, Data::Host, &inputs, &plans, &mut close);
        assert_eq!(
            before,
            close.iter().map(|q| q.median_us).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_gpu_kernel_hopeless_by_a_smaller_batch_is_left_out_or_probed() {
        let k = &KERNELS[0];
        let key = kernel_key(k);
        let pt = |batch: usize, us: f64| Point {
            kernel: key.clone(),
            variant: Variant::QrReduced,
            dtype: DType::F32,
            batch,
            m: 8,
            n: 8,
            median_us: us,
            p25_us: us,
            p75_us: us,
        };
        let at = |batch: usize, m: usize, n: usize, us: f64| Point {
            m,
            n,
            ..pt(batch, us)
        };
        let p = |batch: usize| Problem::new(Variant::QrReduced, DType::F32, batch, 8, 8);
        use Verdict::{Probe, Skip, Time};
        let cases = [
            // No time within this shape, and no bar: timed.
            (256, vec![], f64::INFINITY, Time),
            (256, vec![pt(256, 1e6)], f64::INFINITY, Time),
            // With a bar, probed on a sixteenth from a batch of 64.
            (256, vec![], 1.0, Probe(16)),
            (256, vec![pt(256, 1e6)], 1.0, Probe(16)),
            (63, vec![], 1.0, Time),
            // Slower at a smaller batch than ten times the fastest here: left out.
            (256, vec![pt(1, 30.0)], 2.5, Skip),
            // Hopeless only scaled linearly from far below (cuSOLVER's SVD loop at 1 and
            // 256 matrices of 128 x 128 against `bidiag`): probed on the 10 of the 256
            // projected to take 20 times the fastest; at 65536 16 x 16 against `warp`, 47.
            (256, vec![pt(1, 5.6e3)], 2.6e3, Probe(10)),
            (65536, vec![pt(1, 693.0)], 1621.0, Probe(47)),
            // Never more than a sixteenth of the batch.
            (256, vec![pt(1, 600.0)], 2.6e3, Probe(16)),
            // Off the grid's powers of four, a sixteenth no larger than the batch measured:
            // nothing to probe.
            (20, vec![pt(1, 600.0)], 100.0, Time),
            // From a batch within 16 times, the time there decides alone.
            (256, vec![pt(16, 5.6e3)], 2.6e3, Time),
            (256, vec![pt(16, 90e3)], 2.6e3, Skip),
            // Not hopeless even scaled: timed. The nearest smaller batch decides.
            (256, vec![pt(1, 50.0)], 2.6e3, Time),
            (65536, vec![pt(1, 5.6e3), pt(4096, 100.0)], 2.6e3, Time),
            // No smaller batch of this size: the smaller size's time a matrix is
            // projected (cuSOLVER's SVD at 65536 2x4 from 586 us at 1x2x2, against
            // `warp`'s 197 us): probed on the 7 matrices that would take 20 times that.
            (65536, vec![at(1, 2, 2, 586.0)], 197.0, Probe(7)),
            // The most time a matrix of the smaller shapes' wins.
            (
                65536,
                vec![at(16, 4, 4, 160.0), at(1, 4, 8, 586.0)],
                197.0,
                Probe(7),
            ),
            // A larger size says nothing: probed as with nothing known.
            (256, vec![at(1, 16, 8, 1e6)], 1.0, Probe(16)),
        ];
        for (batch, pts, best, want) in cases {
            let got = verdict(k, &p(batch), &pts, best, true);
            assert_eq!(got, want, "at {batch} after {pts:?}, fastest {best} us");
        }
        // The order kernels are timed in: a single matrix has no smaller batch to project
        // from, but a smaller shape's time is a floor.
        let mut smaller = pt(1, 1.7e6);
        (smaller.m, smaller.n) = (4, 8);
        assert_eq!(expected(k, &p(1), &[smaller.clone()]), Some(1.7e6));
        assert_eq!(expected(k, &p(1), &[]), None);
        assert_eq!(expected(k, &p(64), &[pt(16, 10.0), smaller]), Some(1.7e6));
        assert_eq!(
            expected(k, &p(64), &[pt(16, 10.0), pt(1, 30.0)]),
            Some(40.0)
        );
        // Another variant, type or size says nothing: probed as with nothing known; not
        // on the CPU (no probes there).
        let mut other = pt(1, 1e6);
        other.m = 16;
        assert_eq!(
            verdict(k, &p(256), std::slice::from_ref(&other), 1.0, true),
            Verdict::Probe(16)
        );
        assert_eq!(verdict(k, &p(256), &[other], 1.0, false), Verdict::Time);
        // About 2 ms of GPU calls, 3 to 50 of them.
        assert_eq!(gpu_reps(10.0), 50);
        assert_eq!(gpu_reps(100.0), 20);
        assert_eq!(gpu_reps(1e6), 3);
    }

    #[test]
    fn shapes_next_to_a_crossover_are_measured_first() {
        let pt = |kernel: &str, batch: usize, k: usize, us: f64| Point {
            kernel: kernel.into(),
            variant: Variant::QrReduced,
            dtype: DType::F32,
            batch,
            m: k,
            n: k,
            median_us: us,
            p25_us: us,
            p75_us: us,
        };
        let s = Shape {
            op: Op::Qr,
            batch: 4,
            m: 6,
            n: 6,
        };
        // One kernel wins both neighbours by far.
        let clear = [pt("a", 1, 4, 1.0), pt("b", 1, 4, 5.0), pt("a", 16, 8, 1.0)];
        assert!(!contested(&s, &clear));
        // The neighbours' winners differ.
        let cross = [
            pt("a", 1, 4, 1.0),
            pt("b", 1, 4, 5.0),
            pt("b", 16, 8, 1.0),
            pt("a", 16, 8, 4.0),
        ];
        assert!(contested(&s, &cross));
        // A runner-up within 1.3x.
        assert!(contested(&s, &[pt("a", 1, 4, 1.0), pt("b", 1, 4, 1.2)]));
        // A crossover two steps away, or in another operation, does not count.
        let far = [
            pt("a", 1, 4, 1.0),
            pt("b", 1, 4, 5.0),
            pt("b", 1024, 32, 1.0),
            pt("a", 1024, 32, 2.0),
        ];
        assert!(!contested(&s, &far));
        let mut other = cross.to_vec();
        other.iter_mut().for_each(|p| p.variant = Variant::Eigh);
        assert!(!contested(&s, &other));
    }

    /// The report of a tune with a GPU (its branch needs a device to run; its report does
    /// not): both tables' kernels, the fitted copies, every routing's regret on each kind
    /// of data, and the worst shapes with every routing's pick.
    #[test]
    fn a_report_with_a_gpu_shows_both_tables_the_copies_and_every_routing() {
        let pt = |kernel: &str, us: f64| Point {
            kernel: kernel.into(),
            variant: Variant::QrReduced,
            dtype: DType::F32,
            batch: 4096,
            m: 32,
            n: 32,
            median_us: us,
            p25_us: us,
            p75_us: us,
        };
        let cpu = Table {
            device: DeviceKey::this_cpu(),
            made: "t".into(),
            drift: Some(0.01),
            versions: vec![("qr/cpu-small/small".into(), 2)],
            points: vec![pt("qr/cpu-small/small", 7000.0)],
            transfer: None,
            gpu: Some("cuda-8sm-a-gpu".into()),
        };
        let link = |latency_us, gb_s: f64| Link::line(latency_us, gb_s * 1e3);
        let gpu = Table {
            device: DeviceKey::Cuda {
                name: "a GPU".into(),
                sm_count: 8,
                cc: (8, 0),
                driver_major: 13,
            },
            versions: vec![("qr/cuda/tile".into(), 1), ("qr/cuda/warp".into(), 1)],
            points: vec![pt("qr/cuda/tile", 56.0), pt("qr/cuda/warp", 90.0)],
            transfer: Some(Transfers {
                staged: Transfer {
                    to_device: link(11.0, 12.0),
                    to_host: link(9.0, 11.0),
                },
                registered: Transfer {
                    to_device: link(6.0, 25.0),
                    to_host: link(6.0, 26.0),
                },
            }),
            gpu: None,
            ..cpu.clone()
        };
        let regret = |data, picks: Vec<(&'static str, &str, f64)>| Regret {
            op: Op::Qr,
            data,
            shape: "qr float32 3000x30x30".into(),
            times: vec![("qr/cuda/tile".into(), 1400.0)],
            picks: picks
                .into_iter()
                .map(|(r, k, x)| (r, k.to_string(), x))
                .collect(),
            extrapolated: false,
            predicted_us: 1300.0,
            measured_us: 1400.0,
        };
        let regrets = [
            regret(
                Data::Host,
                vec![
                    (TABLES, "qr/cuda/tile", 1.0),
                    (RULES, "qr/cpu-small/small", 4.0),
                    (CPU_ALONE, "qr/cpu-small/small", 4.0),
                    (GPU_ALONE, "qr/cuda/tile", 1.0),
                ],
            ),
            regret(
                Data::Gpu,
                vec![
                    (GPU_TABLE, "qr/cuda/warp", 1.5),
                    (GPU_RULES, "qr/cuda/tile", 1.0),
                ],
            ),
        ];
        let run = Run {
            command: "batchlin tune",
            grid: "Grid: 1 of 1 shapes measured",
            drift: [Some(0.02), Some(0.03)],
            took: Duration::from_secs(60),
        };
        let r = report(&cpu, Some(&gpu), &regrets, &[], &run);
        for want in [
            "CPU 2.0%, GPU 3.0%",
            "| qr/cuda/tile | 1 | 1 |",
            "| qr/cuda/warp | 1 | 0 |",
            "| staged | 11.0 us + 12.0 GB/s | 9.0 us + 11.0 GB/s |",
            "| registered | 6.0 us + 25.0 GB/s | 6.0 us + 26.0 GB/s |",
            "Held out: 1 random shapes",
            "| the rules | 1 | 4.000 | 4.00 |",
            "| always the GPU (its table, copies) | 1 | 1.000 | 1.00 |",
            "| the GPU's table (GPU data) | 1 | 1.500 | 1.50 |",
            "(GPU data): the GPU's table (GPU data) 1.50 (qr/cuda/warp)",
        ] {
            assert!(r.contains(want), "{want:?} not in\n{r}");
        }
        assert_eq!(
            routings(&regrets),
            [TABLES, RULES, CPU_ALONE, GPU_ALONE, GPU_TABLE, GPU_RULES]
        );
        assert_eq!(regrets[1].of(GPU_RULES), Some(1.0));
        assert_eq!(regrets[1].of(TABLES), None);
    }

    /// Held by each test that tunes: one tune's timings are not another's load (tests run
    /// two at a time on the 2-core CI machine).
    static TUNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn tuning_alone() -> std::sync::MutexGuard<'static, ()> {
        TUNING.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Four seconds of tuning the CPU's QR into `out`.
    fn short_qr_tune(out: &std::path::Path, resume: bool) -> TuneArgs {
        TuneArgs {
            only: Some(Op::Qr),
            budget: Duration::from_secs(4),
            out: Some(out.to_path_buf()),
            install: false,
            resume,
            check: None,
            grid_only: false,
        }
    }

    /// A few seconds of tuning: the table written reads back, covers both CPU QR kernels,
    /// and the planner routes a measured shape by it.
    #[test]
    fn a_short_tune_writes_a_table_the_planner_routes_by() {
        let _alone = tuning_alone();
        let out = std::env::temp_dir().join(format!("batchlin-tune-test-{}", std::process::id()));
        let args = short_qr_tune(&out, false);
        run(&args, "batchlin tune (test)").unwrap();
        let file = out.join(format!("{}.toml", DeviceKey::this_cpu().file_stem()));
        let table = Table::parse(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert!(!table.points.is_empty());
        assert!(table
            .points
            .iter()
            .all(|p| p.median_us > 0.0 && p.p25_us <= p.p75_us));
        let csv = std::fs::read_to_string(out.join("points.csv")).unwrap();
        assert_eq!(csv.lines().count(), table.points.len() + 1);
        // shape-times.csv accounts for every point, a line a shape, variant and type.
        let times = std::fs::read_to_string(out.join("shape-times.csv")).unwrap();
        let counted: usize = times
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(5).unwrap().parse::<usize>().unwrap())
            .sum();
        assert_eq!(counted, csv.lines().count() - 1, "{times}");
        let held = std::fs::read_to_string(out.join("held-out.csv")).unwrap();
        assert!(
            held.starts_with("shape,data,kernel,median_us,picked_by\n"),
            "{held}"
        );
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(report.contains("Held out"));
        // Every plot the report shows is a whole SVG file beside it.
        let shown: Vec<&str> = report
            .lines()
            .filter_map(|l| l.strip_prefix("![").and_then(|l| l.split("](").nth(1)))
            .map(|l| l.trim_end_matches(')'))
            .collect();
        assert!(shown.contains(&"winners-qr-float32.svg"), "{shown:?}");
        for f in &shown {
            let svg = std::fs::read_to_string(out.join(f)).unwrap();
            assert!(
                svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
                "{f}"
            );
        }
        let model = Model::new(&table, "test");
        for b in [batchlin::Backend::CpuSmall, batchlin::Backend::CpuFaer] {
            assert!(model.covers(Op::Qr, b), "{b}");
        }
        // The grid's first shape, measured by both kernels in both types.
        let first = &table.points[0];
        let p = Problem::new(
            Variant::QrReduced,
            first.dtype,
            first.batch,
            first.m,
            first.n,
        );
        let plan = plan_with(&p, &Place::Host, &Options::default(), Some(&model), None).unwrap();
        assert!(matches!(plan.source, Source::Table { .. }), "{plan}");
        // The held-out check alone, of the table just written: a report, no new table.
        let again = out.join("check");
        let check = TuneArgs {
            budget: Duration::from_secs(1),
            out: Some(again.clone()),
            check: Some(file.clone()),
            ..args
        };
        run(&check, "batchlin tune --check (test)").unwrap();
        let report = std::fs::read_to_string(again.join("report.md")).unwrap();
        assert!(
            report.contains("Checked ") && report.contains("Held out"),
            "{report}"
        );
        assert!(again.join("held-out.csv").exists() && !again.join("points.csv").exists());
        let refused = TuneArgs {
            install: true,
            ..check
        };
        assert!(run(&refused, "t").is_err());
        let _ = std::fs::remove_dir_all(&out);
    }

    /// A kernel changed since a table was measured (its version there another): a resumed
    /// tune measures it again at the shapes the table holds, and keeps the others' points
    /// there as they were.
    #[test]
    fn a_resumed_tune_measures_a_changed_kernel_again() {
        let _alone = tuning_alone();
        let out = std::env::temp_dir().join(format!("batchlin-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let file = out.join(format!("{}.toml", DeviceKey::this_cpu().file_stem()));
        let table = || Table::parse(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let grid_only = |secs| TuneArgs {
            grid_only: true,
            budget: Duration::from_secs(secs),
            ..short_qr_tune(&out, true)
        };
        run(
            &grid_only(3),
            "batchlin tune --resume --grid-only (test, 1)",
        )
        .unwrap();
        let first = table();
        let changed = "qr/cpu-small/small";
        let mut older = first.clone();
        for (k, v) in older.versions.iter_mut() {
            if k == changed {
                *v += 1;
            }
        }
        std::fs::write(&file, older.to_text()).unwrap();
        run(
            &grid_only(20),
            "batchlin tune --resume --grid-only (test, 2)",
        )
        .unwrap();
        let second = table();
        let at = |p: &Point| (p.variant, p.dtype, p.batch, p.m, p.n);
        let fastest = |t: &Table, p: &Point| {
            t.points
                .iter()
                .filter(|q| at(q) == at(p))
                .all(|q| q.median_us >= p.median_us)
        };
        let kernel = KERNELS.iter().find(|k| kernel_key(k) == changed).unwrap();
        let mut again = 0;
        for p in &first.points {
            match p.kernel == changed {
                // Where it was the fastest it is measured again, unless this run's own
                // points of it at a shape within show it hopeless there (`verdict`: on
                // a loaded CI machine, 2026-12-07, one reading at a smaller shape did).
                true if fastest(&first, p) => {
                    let q = second
                        .points
                        .iter()
                        .find(|q| q.kernel == changed && at(q) == at(p));
                    if q.is_some() {
                        again += 1;
                        continue;
                    }
                    let problem = Problem::new(p.variant, p.dtype, p.batch, p.m, p.n);
                    let best = (second.points.iter().filter(|q| at(q) == at(p)))
                        .map(|q| q.median_us)
                        .fold(f64::INFINITY, f64::min);
                    let hopeless = floor(kernel, &problem, &second.points) > HOPELESS * best;
                    assert!(hopeless, "{p:?} not measured again, nor hopeless");
                }
                true => {}
                false => assert!(second.points.contains(p), "{p:?} lost"),
            }
        }
        assert!(again > 0, "{first:?}");
        let key = |p: &Point| (p.kernel.clone(), p.variant, p.dtype, p.batch, p.m, p.n);
        let keys: HashSet<_> = second.points.iter().map(key).collect();
        assert_eq!(keys.len(), second.points.len(), "a point measured twice");
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        let said = format!("measured again at the shapes kept: {changed}");
        assert!(report.contains(&said), "{report}");
        let _ = std::fs::remove_dir_all(&out);
    }

    /// A tune in two runs: the second keeps every point of the first (the grid alone),
    /// measures only shapes the first did not reach, and its files account for both.
    #[test]
    fn a_resumed_tune_keeps_its_points_and_measures_new_shapes() {
        let _alone = tuning_alone();
        let out = std::env::temp_dir().join(format!("batchlin-resume-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let args = short_qr_tune(&out, true);
        let file = out.join(format!("{}.toml", DeviceKey::this_cpu().file_stem()));
        let table = || Table::parse(&std::fs::read_to_string(&file).unwrap()).unwrap();
        // Nothing to go on from: a fresh start, the grid alone (no shape held out).
        let grid_only = TuneArgs {
            grid_only: true,
            ..short_qr_tune(&out, true)
        };
        run(&grid_only, "batchlin tune --resume --grid-only (test, 1)").unwrap();
        let first = table();
        assert!(!first.points.is_empty());
        let held = std::fs::read_to_string(out.join("held-out.csv")).unwrap();
        assert_eq!(held.lines().count(), 1, "{held}");
        run(&args, "batchlin tune --resume (test, 2)").unwrap();
        let second = table();
        for p in &first.points {
            assert!(second.points.contains(p), "{p:?} lost");
        }
        assert!(second.points.len() > first.points.len());
        let key = |p: &Point| (p.kernel.clone(), p.variant, p.dtype, p.batch, p.m, p.n);
        let keys: HashSet<_> = second.points.iter().map(key).collect();
        assert_eq!(keys.len(), second.points.len(), "a point measured twice");
        assert!(second.drift >= first.drift || second.drift.is_none());
        let csv = std::fs::read_to_string(out.join("points.csv")).unwrap();
        assert_eq!(csv.lines().count(), second.points.len() + 1);
        let times = std::fs::read_to_string(out.join("shape-times.csv")).unwrap();
        assert_eq!(
            times.lines().filter(|l| l.starts_with("variant,")).count(),
            1
        );
        let counted: usize = times
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(5).unwrap().parse::<usize>().unwrap())
            .sum();
        assert_eq!(counted, second.points.len(), "{times}");
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(report.contains("kept from the tables in"), "{report}");
        // A table of another device in the folder is refused, not merged.
        let mut other = second.clone();
        other.device = DeviceKey::Cpu {
            model: "another".into(),
            threads: 3,
        };
        std::fs::write(&file, other.to_text()).unwrap();
        assert!(run(&args, "t").unwrap_err().contains("this machine is"));
        let refused = TuneArgs {
            check: Some(file.clone()),
            ..args
        };
        assert!(run(&refused, "t").is_err());
        let _ = std::fs::remove_dir_all(&out);
    }
}
