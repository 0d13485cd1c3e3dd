//! The planner: for a problem, a place and options, which backend and kernel run it and
//! with which parameters. A forced backend or kernel is honoured (and checked against the
//! kernel's `supports`); otherwise the cost tables measured on this machine (table.rs)
//! choose where they price every kernel that could take the problem, and the measured
//! rules below choose everywhere else (docs/ARCHITECTURE.md, "The planner";
//! docs/proposals/measured-routing.md):
//!
//! - host data: this CPU's table over the CPU kernels and, where the first GPU has a
//!   table with a transfer model, its kernels with the copies there and back added;
//! - device data: the GPU's table over its kernels.

use crate::cuda;
use crate::error::{Error, Result};
use crate::place::Place;
use crate::problem::{Backend, Op, Options, Problem, TileConfig, Variant};
use crate::registry::{self, Kernel, Target};
use crate::scalar::DType;
use crate::table::{self, Model, Pinned, Transfer, Transfers};
use std::fmt;

/// Parameters of the chosen kernel, fixed by the planner (or the caller's `Params`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum KernelParams {
    #[default]
    None,
    /// The CUDA `blocked` QR kernel's panel width.
    QrBlocked { panel: usize },
    /// The CUDA `tile` QR kernel's instantiation, where the caller fixed one (else the
    /// kernel takes the smallest of its measured ones that holds the matrix).
    QrTile(TileConfig),
}

/// Bytes a plan moves between the host and a device (host data computed on the GPU): the
/// input in one copy; back, each output and the info words in a copy of its own, as
/// `cuda::run_host` makes them, each paying the link's latency. Priced as one copy each
/// way, the copies of calls on host data under 100 KB (a call's time there less its time
/// on GPU data) took 1.8 times their price (median of 227 held-out shapes, an H100
/// machine, 2026-12-07), 1.1 priced a copy at a time
/// (docs/results/h100/2026-12-07-full-tune).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Copies {
    pub to_device: usize,
    /// The copies back: each output's bytes, then the info words'; zeros after the last.
    pub back: [usize; 4],
}

impl Copies {
    /// Bytes back to the host, all copies.
    pub fn to_host(&self) -> usize {
        self.back.iter().sum()
    }
}

/// Why a plan runs where it does.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Source {
    /// A backend or kernel forced by an option or `BATCHLIN_BACKEND`.
    Forced,
    /// The hand-written rules (no table, or none that covers the problem).
    Rules,
    /// The cost table: the kernel's predicted time, and whether it was extrapolated
    /// beyond (or next to a hole in) the measured cells.
    Table {
        predicted_us: f64,
        extrapolated: bool,
    },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Forced => f.write_str("forced"),
            Source::Rules => f.write_str("rules"),
            Source::Table {
                predicted_us,
                extrapolated,
            } => {
                let how = if *extrapolated {
                    "extrapolated"
                } else {
                    "predicted"
                };
                write!(f, "table: {} {how}", fmt_us(*predicted_us))
            }
        }
    }
}

/// Microseconds with three significant digits, in us or ms.
fn fmt_us(us: f64) -> String {
    if us >= 1e4 {
        format!("{:.0} ms", us / 1e3)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.3} us")
    }
}

/// How a call runs.
#[derive(Copy, Clone, Debug)]
pub struct Plan {
    pub problem: Problem,
    pub backend: Backend,
    pub kernel: &'static Kernel,
    pub params: KernelParams,
    /// The CUDA device, for the CUDA backend.
    pub ordinal: Option<usize>,
    /// Some when host data is copied to the device and back.
    pub copies: Option<Copies>,
    /// Why this backend and kernel.
    pub source: Source,
}

impl Plan {
    /// Whether the CPU computes this call after the GPU failed it with `e`: host data the
    /// planner (not the caller) sent to a GPU that lacked the memory, another process's
    /// say. The answer is the CPU's as without a GPU; a forced GPU reports the error.
    pub(crate) fn cpu_takes_over(&self, e: &Error) -> bool {
        matches!(e, Error::OutOfMemory(_))
            && self.copies.is_some()
            && !matches!(self.source, Source::Forced)
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ordinal {
            Some(d) => write!(f, "{}:{d}", self.backend)?,
            None => write!(f, "{}", self.backend)?,
        }
        // The kernel's name where the backend has more than one for the operation.
        if registry::kernels(self.problem.op(), self.backend).count() > 1 {
            write!(f, " {}", self.kernel.name)?;
        }
        match self.params {
            KernelParams::QrBlocked { panel } => write!(f, " (panel {panel})")?,
            KernelParams::QrTile(t) => write!(f, " ({t})")?,
            KernelParams::None => {}
        }
        if let Some(c) = self.copies {
            let mb = |b: usize| b as f64 / 1e6;
            write!(
                f,
                ", host data copied: {:.1} MB in, {:.1} MB out",
                mb(c.to_device),
                mb(c.to_host())
            )?;
        }
        write!(f, " [{}]", self.source)
    }
}

/// The environment's forced backend, if any (`BATCHLIN_BACKEND=cpu-faer`, ...).
pub fn env_override() -> Result<Option<Backend>> {
    let v = match std::env::var_os("BATCHLIN_BACKEND") {
        None => return Ok(None),
        Some(v) => v,
    };
    // Parsed as the `backend=` argument is (case and surrounding spaces ignored); an
    // error names the variable, since the caller passed nothing wrong.
    let parsed = v.to_str().map(str::parse::<Backend>);
    match parsed {
        Some(Ok(Backend::Auto)) => Ok(None),
        Some(Ok(b)) => Ok(Some(b)),
        _ => Err(Error::Argument(format!(
            "the environment variable BATCHLIN_BACKEND={v:?} is not a backend: expected \
             auto, cpu-small, cpu-faer or cuda (or unset it)"
        ))),
    }
}

/// Where the routing decisions come from, for users to see: the cost table (its file and
/// device) or the rules, and why; where a GPU's table could be found, each GPU's too.
pub fn policy_source() -> String {
    match env_override() {
        Ok(Some(b)) => format!("forced by BATCHLIN_BACKEND={b}"),
        Ok(None) => {
            let mut s = match table::loaded() {
                table::Loaded {
                    model: Some(m),
                    why,
                } => {
                    let mut s = format!(
                        "cost table {} ({}) for host data where it has rows; measured rules \
                         elsewhere",
                        m.origin, m.device
                    );
                    if !m.stale.is_empty() {
                        s += &format!(" (stale rows left out: {})", m.stale.join(", "));
                    }
                    if !why.is_empty() {
                        s += &format!(" (passed over: {why})");
                    }
                    s
                }
                table::Loaded { model: None, why } => format!("measured rules ({why})"),
            };
            // Each GPU's own table, where any GPU's could be found (else its rules).
            if table::gpu_tables_exist() {
                for i in 0..crate::cuda::device_count().unwrap_or(0) {
                    let Ok(d) = crate::cuda::device(i) else {
                        continue;
                    };
                    let l = table::loaded_gpu(d.caps());
                    s += &match &l.model {
                        Some(m) => format!("; cuda:{i}: cost table {} ({})", m.origin, m.device),
                        None => format!("; cuda:{i}: measured rules ({})", l.why),
                    };
                    if l.model.is_some() && !l.why.is_empty() {
                        s += &format!(" (passed over: {})", l.why);
                    }
                }
            }
            s
        }
        Err(e) => format!("BATCHLIN_BACKEND is invalid ({}); rules", e.message()),
    }
}

/// Largest max(m, n) for which the CPU's own small-matrix kernels beat faer, per op and
/// element type: measured one matrix on one core with
/// `cargo run --release -p batchlin --example kernels_vs_faer` (2026-11-30,
/// docs/results/cpu-2core/kernels_vs_faer-2026-11-30-padded.md: f32 QR 1.8x faer at 128
/// and 1.0x at 192, eigh 1.2x at 192 (0.9-1.2x at 256, where the batch of 256 on two
/// cores measured faster with faer), SVD 1.3x at 192 and 1.1x at 256; f64 QR 1.1x at 128,
/// eigh 1.4x at 128 and 0.8x at 192, SVD 1.2x at 128 and 1.0x at 192). Above it faer's
/// blocked algorithms win.
pub(crate) fn small_kernel_limit(op: Op, dtype: DType) -> usize {
    match (op, dtype == DType::F64) {
        (_, true) => 128,
        (Op::Qr, false) => 160,
        (Op::Eigh | Op::Svd, false) => 192,
    }
}

/// The CPU backend the rules pick for host data (the batch does not matter yet).
fn cpu_rule(p: &Problem) -> Backend {
    if p.m.max(p.n) <= small_kernel_limit(p.op(), p.dtype) {
        Backend::CpuSmall
    } else {
        Backend::CpuFaer
    }
}

/// What a device-data plan is made from: the same problem, device, options and forced
/// backend always give the same plan (the device's capabilities do not change).
type PlanKey = (Problem, usize, Options, Option<Backend>);

thread_local! {
    /// The last plan made on this thread for device data: a loop of calls on one shape
    /// (the common case from Python and C) plans once.
    static LAST_DEVICE_PLAN: std::cell::Cell<Option<(PlanKey, Plan)>> =
        const { std::cell::Cell::new(None) };
}

/// Plan `problem` at `place` under `opts`, with this device's cost table where there is
/// one (`table::loaded`).
pub fn plan(problem: &Problem, place: &Place, opts: &Options) -> Result<Plan> {
    plan_pinned(problem, place, opts, Pinned::default())
}

/// `plan` for a call on host data whose buffers the caller registered where `pinned`
/// says: a GPU's copies priced from registered memory there (`entry::run` asks).
pub(crate) fn plan_pinned(
    problem: &Problem,
    place: &Place,
    opts: &Options,
    pinned: Pinned,
) -> Result<Plan> {
    let forced = match opts.backend {
        Backend::Auto => env_override()?,
        b => Some(b),
    };
    let Place::Cuda { ordinal, .. } = *place else {
        // The table is looked for only where it could decide.
        let table = match (forced, opts.kernel) {
            (None, None) => table::loaded().model.as_ref(),
            _ => None,
        };
        return plan_forced(
            problem,
            place,
            opts,
            forced,
            table,
            GpuTable::Loaded,
            pinned,
        );
    };
    let key = (*problem, ordinal, *opts, forced);
    if let Some((k, p)) = LAST_DEVICE_PLAN.with(|c| c.get()) {
        if k == key {
            return Ok(p);
        }
    }
    let p = plan_forced(problem, place, opts, forced, None, GpuTable::Loaded, pinned)?;
    LAST_DEVICE_PLAN.with(|c| c.set(Some((key, p))));
    Ok(p)
}

/// `plan_pinned` for a call about to run (`entry::run`): where the tables send it to
/// cuSOLVER and cuSOLVER has not yet run that kind of computation in this process, their
/// next choice instead while that is worth it (`cusolver::cold_detour`: cuSOLVER's first
/// use loads its kernels, about 150 ms once). Only the tables price the detour: under
/// the rules, and where a kernel is forced, the plan stands.
pub(crate) fn plan_call(
    problem: &Problem,
    place: &Place,
    opts: &Options,
    pinned: Pinned,
) -> Result<Plan> {
    let plan = plan_pinned(problem, place, opts, pinned)?;
    let (Some(ordinal), Source::Table { .. }) = (plan.ordinal, plan.source) else {
        return Ok(plan);
    };
    if plan.kernel.name != "cusolver" {
        return Ok(plan);
    }
    let mut detour = None;
    let kind = cuda::cusolver::Kind::of(problem);
    let taken = cuda::cusolver::cold_detour(ordinal, kind, || {
        let (alt, extra) = cold_alternative(&plan, opts, pinned)?;
        detour = Some(alt);
        Some(extra)
    });
    Ok(match (taken, detour) {
        (true, Some(alt)) => alt,
        _ => plan,
    })
}

/// The tables' choice for `plan`'s call without `plan`'s kernel, and what it costs a call
/// beyond it by their predictions. None where the tables cannot price it.
fn cold_alternative(plan: &Plan, opts: &Options, pinned: Pinned) -> Option<(Plan, f64)> {
    let Source::Table { predicted_us, .. } = plan.source else {
        return None;
    };
    let p = &plan.problem;
    let alt = match plan.copies {
        // Host data: the CPU's kernels and the GPU's others, copies priced as before.
        Some(_) => {
            let t = table::loaded().model.as_ref()?;
            let gpu = gpu_for_host_data(GpuTable::Loaded);
            from_tables(p, t, opts, gpu, pinned, Some(plan.kernel))?.ok()?
        }
        None => {
            let caps = cuda::device(plan.ordinal?).ok()?.caps();
            let t = table::loaded_gpu(caps).model.as_ref()?;
            let cands = gpu_candidates(p, caps, t, None)?;
            let (c, _) = next_choice(&cands, plan.kernel)?;
            Plan {
                kernel: c.kernel,
                params: cuda_params(c.kernel, p, caps, opts).ok()?,
                source: table_source(&c),
                ..*plan
            }
        }
    };
    match alt.source {
        Source::Table {
            predicted_us: alt_us,
            ..
        } => Some((alt, alt_us - predicted_us)),
        _ => None,
    }
}

/// Among `cands`, the choice without `kernel`, and its time beyond `kernel`'s.
fn next_choice(cands: &[Candidate], kernel: &Kernel) -> Option<(Candidate, f64)> {
    let own = cands.iter().find(|c| std::ptr::eq(c.kernel, kernel))?.us;
    let rest: Vec<Candidate> = cands
        .iter()
        .filter(|c| !std::ptr::eq(c.kernel, kernel))
        .copied()
        .collect();
    let next = *choose(&rest, None)?;
    Some((next, next.us - own))
}

/// `plan` with the given cost tables instead of this machine's, as `batchlin tune`
/// compares them: `table` this CPU's (None: the rules alone), `gpu` the first GPU's (None:
/// host data stays on the CPU and device data goes by the rules).
pub fn plan_with(
    problem: &Problem,
    place: &Place,
    opts: &Options,
    table: Option<&Model>,
    gpu: Option<&Model>,
) -> Result<Plan> {
    let forced = match opts.backend {
        Backend::Auto => env_override()?,
        b => Some(b),
    };
    plan_forced(
        problem,
        place,
        opts,
        forced,
        table,
        GpuTable::Given(gpu),
        Pinned::default(),
    )
}

/// The GPU's cost table a plan uses: the one found for the device (`table::loaded_gpu`),
/// or one given (`plan_with`).
#[derive(Copy, Clone)]
enum GpuTable<'a> {
    Loaded,
    Given(Option<&'a Model>),
}

/// `plan` with the forced backend (the option's, else the environment's) and the cost
/// tables given.
fn plan_forced(
    problem: &Problem,
    place: &Place,
    opts: &Options,
    forced: Option<Backend>,
    table: Option<&Model>,
    gpu: GpuTable,
    pinned: Pinned,
) -> Result<Plan> {
    let backend = match (place, forced) {
        (Place::Cuda { .. }, None | Some(Backend::Cuda)) => Backend::Cuda,
        (Place::Cuda { ordinal, .. }, Some(b)) => {
            return Err(Error::Argument(format!(
                "the data is on cuda:{ordinal}: backend {b} cannot take it (use cuda or auto)"
            )))
        }
        (Place::Host, Some(b)) => b,
        // A kernel named without a backend names its backend: the first that has it.
        (Place::Host, None) => match opts.kernel {
            Some(name) => registry::KERNELS
                .iter()
                .find(|k| k.op == problem.op() && k.name == name)
                .map(|k| k.backend)
                .ok_or_else(|| {
                    Error::Argument(format!("no kernel named {name:?} for {}", problem.op()))
                })?,
            None => {
                let gpu = gpu_for_host_data(gpu);
                let tables = table.and_then(|t| from_tables(problem, t, opts, gpu, pinned, None));
                if let Some(plan) = tables {
                    return plan;
                }
                cpu_rule(problem)
            }
        },
    };
    let source = if forced.is_some() || opts.kernel.is_some() {
        Source::Forced
    } else {
        Source::Rules
    };
    if backend != Backend::Cuda {
        let kernel = pick(problem, backend, &Target::Cpu, opts, &[])?;
        return Ok(Plan {
            problem: *problem,
            backend,
            kernel,
            params: KernelParams::None,
            ordinal: None,
            copies: None,
            source,
        });
    }
    let ordinal = match place {
        Place::Cuda { ordinal, .. } => *ordinal,
        Place::Host => 0,
    };
    let caps = cuda::device(ordinal)?.caps();
    let gpu_table = match gpu {
        GpuTable::Loaded => table::loaded_gpu(caps).model.as_ref(),
        GpuTable::Given(t) => t,
    };
    let (kernel, params, by_table) = cuda_choice(problem, caps, opts, gpu_table)?;
    let copies = matches!(place, Place::Host).then(|| host_copies(problem));
    Ok(Plan {
        problem: *problem,
        backend,
        kernel,
        params,
        ordinal: Some(ordinal),
        copies,
        source: by_table
            .filter(|_| source == Source::Rules)
            .unwrap_or(source),
    })
}

/// The CUDA kernel for `problem` on a device of `caps`, and its parameters: the forced
/// one (`opts.kernel`), else the device's cost table's choice, else the rules'
/// preference. Composite kernels (the SVD's `tall`, QR first) plan their steps with it.
pub(crate) fn cuda_kernel(
    problem: &Problem,
    caps: &cuda::DeviceCaps,
    opts: &Options,
) -> Result<(&'static Kernel, KernelParams)> {
    let table = table::loaded_gpu(caps).model.as_ref();
    cuda_choice(problem, caps, opts, table).map(|(k, p, _)| (k, p))
}

/// `cuda_kernel` by the GPU table given (None: the rules), and the table's source where
/// the table chose.
pub(crate) fn cuda_choice(
    problem: &Problem,
    caps: &cuda::DeviceCaps,
    opts: &Options,
    table: Option<&Model>,
) -> Result<(&'static Kernel, KernelParams, Option<Source>)> {
    let prefer = match problem.op() {
        Op::Qr => cuda::qr::preference(problem, caps),
        Op::Eigh => cuda::eigh::preference(problem),
        Op::Svd => cuda::svd::preference(problem),
    };
    let target = Target::Cuda(caps);
    let rules = pick(problem, Backend::Cuda, &target, opts, &prefer)?;
    let chosen = match opts.kernel {
        Some(_) => None,
        None => table
            .and_then(|t| gpu_candidates(problem, caps, t, None))
            .and_then(|cands| {
                let c = choose(&cands, Some(rules))?;
                Some((c.kernel, table_source(c)))
            }),
    };
    let (kernel, by_table) = match chosen {
        Some((k, s)) => (k, Some(s)),
        None => (rules, None),
    };
    Ok((kernel, cuda_params(kernel, problem, caps, opts)?, by_table))
}

/// The parameters of CUDA `kernel` for `problem`: the caller's (checked) or the kernel's
/// own rule.
fn cuda_params(
    kernel: &Kernel,
    problem: &Problem,
    caps: &cuda::DeviceCaps,
    opts: &Options,
) -> Result<KernelParams> {
    Ok(match kernel.name {
        "blocked" => KernelParams::QrBlocked {
            panel: match opts.params.qr_blocked_panel {
                Some(p) if p == 16 || p == 32 => p,
                Some(p) => {
                    return Err(Error::Argument(format!(
                        "the blocked QR kernel's panel is 16 or 32 columns, not {p}"
                    )))
                }
                None => cuda::qr_blocked::panel_width(problem, caps),
            },
        },
        "tile" => match opts.params.qr_tile {
            Some(t) => {
                cuda::qr::check_tile_config(problem, caps, &t)?;
                KernelParams::QrTile(t)
            }
            None => KernelParams::None,
        },
        _ => KernelParams::None,
    })
}

/// The kernel: the one forced (checked), else the first of `prefer` the registry says
/// takes the problem, else the backend's first kernel that does.
fn pick(
    p: &Problem,
    backend: Backend,
    target: &Target,
    opts: &Options,
    prefer: &[&str],
) -> Result<&'static Kernel> {
    let op = p.op();
    if let Some(name) = opts.kernel {
        let k = registry::find(op, backend, name)?;
        if !k.supports(p, target) {
            return Err(Error::Argument(format!(
                "the {backend} kernel {name} does not take {p}"
            )));
        }
        return Ok(k);
    }
    let mut all = registry::kernels(op, backend).peekable();
    if all.peek().is_none() {
        let on: Vec<_> = registry::KERNELS
            .iter()
            .filter(|k| k.backend == backend)
            .map(|k| k.op.name())
            .fold(Vec::new(), |mut v, o| {
                if !v.contains(&o) {
                    v.push(o)
                }
                v
            });
        return Err(Error::Unavailable(format!(
            "backend {backend} does not run {op} yet (it has kernels for {})",
            on.join(", ")
        )));
    }
    let supported = |name: &str| {
        registry::kernels(op, backend).find(|k| k.name == name && k.supports(p, target))
    };
    prefer
        .iter()
        .find_map(|n| supported(n))
        .or_else(|| registry::kernels(op, backend).find(|k| k.supports(p, target)))
        .ok_or_else(|| Error::Unavailable(format!("no {backend} kernel takes {p}")))
}

/// Within this fraction of the fastest prediction kernels tie (the noise floor of the
/// measurements, docs/proposals/measured-routing.md). So do kernels whose measured
/// spreads overlap (`choose`).
pub const TIE_MARGIN: f64 = 0.05;

/// A tie by overlapping spreads holds only within this factor of the fastest median, so
/// that a widely bimodal kernel cannot win a tie at many times the fastest's time.
pub const SPREAD_TIE_MAX: f64 = 2.0;

/// A kernel the table can price for a problem.
#[derive(Copy, Clone, Debug)]
pub struct Candidate {
    pub kernel: &'static Kernel,
    /// The kernel's predicted time plus the copies' (`Transfer::cost_us`).
    pub us: f64,
    /// The same at the kernel's 25th and 75th percentiles (the copies' time unchanged).
    pub p25_us: f64,
    pub p75_us: f64,
    /// Bytes moved between host and device (0 where the data stays).
    pub moved: usize,
    pub extrapolated: bool,
}

/// The table's choice: the fastest candidate; among those that tie with it (within
/// [`TIE_MARGIN`], or a 25th percentile under its 75th: the measurements cannot tell them
/// apart; that only within [`SPREAD_TIE_MAX`] of it), the one moving the least data, then
/// `preferred` (the rules' pick: a tie does not change today's routing), then the
/// fastest. None for no candidates.
///
/// The spread matters at calls of a few microseconds, where a kernel can be bimodal (the
/// worker pool awake or asleep): the 2-core machine's tune of 2026-12-06 measured QR
/// float32 64x3x3 on `cpu-small` at a median of 31.9 us with its 25th percentile at 15.1,
/// faer at 21.7, and `cpu-small` faster at 2x2 (43 against 51 us) and 4x4 (19 against 28).
pub fn choose<'a>(cands: &'a [Candidate], preferred: Option<&Kernel>) -> Option<&'a Candidate> {
    let best = cands.iter().min_by(|a, b| a.us.total_cmp(&b.us))?;
    let tied = || {
        cands.iter().filter(|c| {
            c.us <= best.us * (1.0 + TIE_MARGIN)
                || (c.p25_us <= best.p75_us && c.us <= best.us * SPREAD_TIE_MAX)
        })
    };
    let least = tied().map(|c| c.moved).min()?;
    let tied = || tied().filter(move |c| c.moved == least);
    tied()
        .find(|c| preferred.is_some_and(|p| std::ptr::eq(p, c.kernel)))
        .or_else(|| tied().min_by(|a, b| a.us.total_cmp(&b.us)))
}

/// A candidate's time: the kernel's prediction plus, where it moves host data to a
/// device and back, the copies priced by the device's transfer model.
pub fn cost_us(kernel_us: f64, copies: Option<Copies>, transfer: &Transfer) -> f64 {
    kernel_us + copies.map_or(0.0, |c| transfer.cost_us(c.to_device, &c.back))
}

/// The tables' plan for host data: None (the rules decide) unless this CPU's table
/// predicts every CPU kernel that takes the problem from current rows. Where `gpu` (the
/// first GPU, its table and transfer model) prices every CUDA kernel that takes the
/// problem too, those compete with the copies there and back added: staged, or from
/// registered memory for the buffers `pinned` names.
fn from_tables(
    p: &Problem,
    t: &Model,
    opts: &Options,
    gpu: Option<(&cuda::DeviceCaps, &Model, Transfers)>,
    pinned: Pinned,
    leave_out: Option<&Kernel>,
) -> Option<Result<Plan>> {
    let mut cands = Vec::with_capacity(4);
    for k in registry::KERNELS
        .iter()
        .filter(|k| k.backend.is_cpu() && k.supports(p, &Target::Cpu))
    {
        let pr = t.predict(k, p)?;
        cands.push(Candidate {
            kernel: k,
            us: pr.us,
            p25_us: pr.p25_us,
            p75_us: pr.p75_us,
            moved: 0,
            extrapolated: pr.extrapolated,
        });
    }
    if let Some((caps, g, tr)) = gpu {
        let gpu_cands = gpu_candidates(p, caps, g, Some(&tr.for_call(pinned)));
        cands.extend(
            gpu_cands
                .unwrap_or_default()
                .into_iter()
                .filter(|c| !leave_out.is_some_and(|k| std::ptr::eq(k, c.kernel))),
        );
    }
    let rules = registry::kernels(p.op(), cpu_rule(p)).find(|k| k.supports(p, &Target::Cpu));
    let c = choose(&cands, rules)?;
    let source = table_source(c);
    let kernel = c.kernel;
    Some(match (kernel.backend, gpu) {
        (Backend::Cuda, Some((caps, ..))) => {
            cuda_params(kernel, p, caps, opts).map(|params| Plan {
                problem: *p,
                backend: Backend::Cuda,
                kernel,
                params,
                ordinal: Some(caps.ordinal),
                copies: Some(host_copies(p)),
                source,
            })
        }
        _ => Ok(Plan {
            problem: *p,
            backend: kernel.backend,
            kernel,
            params: KernelParams::None,
            ordinal: None,
            copies: None,
            source,
        }),
    })
}

/// Every CUDA kernel that takes `p` on a device of `caps`, priced by its table (with
/// host data's copies over `link` where given); None unless the table prices them all.
fn gpu_candidates(
    p: &Problem,
    caps: &cuda::DeviceCaps,
    t: &Model,
    link: Option<&Transfer>,
) -> Option<Vec<Candidate>> {
    let target = Target::Cuda(caps);
    let copies = link.map(|_| host_copies(p));
    let mut cands = vec![];
    for k in registry::KERNELS
        .iter()
        .filter(|k| k.backend == Backend::Cuda && k.supports(p, &target))
    {
        let pr = t.predict(k, p)?;
        let cost = |us| link.map_or(us, |l| cost_us(us, copies, l));
        cands.push(Candidate {
            kernel: k,
            us: cost(pr.us),
            p25_us: cost(pr.p25_us),
            p75_us: cost(pr.p75_us),
            moved: copies.map_or(0, |c| c.to_device + c.to_host()),
            extrapolated: pr.extrapolated,
        });
    }
    (!cands.is_empty()).then_some(cands)
}

fn table_source(c: &Candidate) -> Source {
    Source::Table {
        predicted_us: c.us,
        extrapolated: c.extrapolated,
    }
}

/// The first GPU, its table and transfer model, for host data. The loaded table only
/// where some table for a GPU exists at all (`table::gpu_tables_exist`), so that a machine
/// without one never opens the CUDA driver to plan a host call.
fn gpu_for_host_data(
    gpu: GpuTable<'_>,
) -> Option<(&'static cuda::DeviceCaps, &'_ Model, Transfers)> {
    let model = match gpu {
        GpuTable::Loaded if !table::gpu_tables_exist() => return None,
        GpuTable::Loaded => table::loaded_gpu(cuda::device(0).ok()?.caps())
            .model
            .as_ref()?,
        GpuTable::Given(t) => t?,
    };
    Some((cuda::device(0).ok()?.caps(), model, model.transfer?))
}

/// Bytes in and out for host data on the GPU: the input, then every output and the info
/// words.
pub fn host_copies(p: &Problem) -> Copies {
    let es = p.dtype.size();
    let (b, m, n, k) = (p.batch, p.m, p.n, p.k());
    // Each output's elements a matrix, in the order the outputs are written.
    let outs: &[usize] = match p.variant {
        Variant::QrReduced => &[m * k, k * n],
        Variant::QrComplete => &[m * m, m * n],
        Variant::QrR => &[k * n],
        Variant::Eigh => &[n, n * n],
        Variant::Eigvalsh => &[n],
        Variant::SvdThin => &[m * k, k, k * n],
        Variant::SvdFull => &[m * m, k, n * n],
        Variant::Svdvals => &[k],
    };
    let mut back = [0; 4];
    for (b_out, &e) in back.iter_mut().zip(outs) {
        *b_out = b.saturating_mul(e * es);
    }
    back[outs.len()] = b.saturating_mul(4); // the info words
    Copies {
        to_device: b.saturating_mul(m * n).saturating_mul(es),
        back,
    }
}

/// The backend a call of this op and shape on host data would run on (the op's main
/// variant: QR reduced, eigh with vectors, the thin SVD).
pub fn backend_for(op: Op, dtype: DType, batch: usize, m: usize, n: usize) -> Result<Backend> {
    Ok(plan_for(op, dtype, batch, m, n, &Place::Host)?.backend)
}

/// The plan for a call of this op and shape at `place` (the op's main variant).
pub fn plan_for(
    op: Op,
    dtype: DType,
    batch: usize,
    m: usize,
    n: usize,
    place: &Place,
) -> Result<Plan> {
    let variant = op.main_variant();
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(Error::DType(format!(
            "batchlin computes in float32 and float64, not {}",
            dtype.name()
        )));
    }
    // The sizes a call could be given: their product must be addressable, as the call
    // checks (a plan for a shape no call accepts would mislead).
    crate::view::checked_product(&[batch, m, n])?;
    plan(
        &Problem::new(variant, dtype, batch, m, n),
        place,
        &Options::default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::DeviceCaps;
    use crate::problem::TileConfig;

    #[test]
    fn the_cpu_takes_over_host_data_only_from_a_gpu_out_of_memory_it_was_not_forced_to() {
        let problem = Problem::new(Variant::QrReduced, DType::F32, 4096, 32, 32);
        let on_gpu = |source| Plan {
            problem,
            backend: Backend::Cuda,
            kernel: registry::find(Op::Qr, Backend::Cuda, "warp").unwrap(),
            params: KernelParams::None,
            ordinal: Some(0),
            copies: Some(Copies {
                to_device: 1 << 24,
                back: [1 << 24, 1 << 24, 1 << 14, 0],
            }),
            source,
        };
        let oom = Error::OutOfMemory("cuMemAllocAsync failed".into());
        let table = Source::Table {
            predicted_us: 4300.0,
            extrapolated: false,
        };
        assert!(on_gpu(table).cpu_takes_over(&oom));
        assert!(on_gpu(Source::Rules).cpu_takes_over(&oom));
        // The caller asked for the GPU; another failure is not the memory's.
        assert!(!on_gpu(Source::Forced).cpu_takes_over(&oom));
        assert!(!on_gpu(table).cpu_takes_over(&Error::Device("launch failed".into())));
        // Data already on the GPU has nowhere else to go.
        let resident = Plan {
            copies: None,
            ..on_gpu(table)
        };
        assert!(!resident.cpu_takes_over(&oom));
    }

    #[test]
    fn tile_configs_parse_and_are_checked() {
        let t: TileConfig = "64x64/4x16/b8/c8x8/s0".parse().unwrap();
        assert_eq!(
            (t.rows, t.cols, t.rg, t.cg, t.minb, t.fc, t.qc),
            (64, 64, 4, 16, 8, 8, 8)
        );
        assert!(!t.stage);
        assert_eq!(t.to_string(), "64x64/4x16/b8/c8x8/s0");
        for bad in [
            "64x64",
            "64x64/4x16/b8/c8x8/s2",
            "64x64/5x16/b8/c8x8/s0",
            "64x64/4x12/b8/c8x8/s0",
            "64x64/4x16/b0/c8x8/s0",
            "64x64/4x16/b8/c0x8/s0",
            "64x64/4x16/b8/c8x8/s0/x",
        ] {
            let e = bad.parse::<TileConfig>().unwrap_err();
            assert_eq!(e.kind(), "argument", "{bad}: {e}");
        }
        let caps = DeviceCaps::h200();
        let p = |m, n| Problem::new(Variant::QrReduced, DType::F32, 8, m, n);
        cuda::qr::check_tile_config(&p(64, 64), &caps, &t).unwrap();
        cuda::qr::check_tile_config(&p(40, 10), &caps, &t).unwrap();
        let e = cuda::qr::check_tile_config(&p(65, 64), &caps, &t).unwrap_err();
        assert!(e.message().contains("holds 64x64"), "{e}");
        let big: TileConfig = "128x128/8x32/b2/c16x16/s0".parse().unwrap();
        let f64p = Problem::new(Variant::QrReduced, DType::F64, 8, 128, 128);
        cuda::qr::check_tile_config(&f64p, &caps, &big).unwrap();
    }

    /// A synthetic table: every (kernel, batch, m, n) of `times` on QR reduced f32.
    fn synthetic(times: &[(&str, usize, usize, usize, f64)]) -> Model {
        let points = times
            .iter()
            .map(|&(k, batch, m, n, us)| table::Point {
                kernel: format!("qr/{k}"),
                variant: Variant::QrReduced,
                dtype: DType::F32,
                batch,
                m,
                n,
                median_us: us,
                p25_us: us,
                p75_us: us,
            })
            .collect();
        let t = table::Table {
            device: table::DeviceKey::Cpu {
                model: "synthetic".into(),
                threads: 2,
            },
            made: "test".into(),
            drift: None,
            versions: table::current_versions(&["qr/cpu-small/small", "qr/cpu-faer/faer"]),
            points,
            transfer: None,
            gpu: None,
        };
        Model::new(&t, "synthetic.toml")
    }

    fn host(m: &Model, batch: usize, rows: usize, cols: usize) -> Plan {
        let p = Problem::new(Variant::QrReduced, DType::F32, batch, rows, cols);
        plan_with(&p, &Place::Host, &Options::default(), Some(m), None).unwrap()
    }

    /// On a 2x2 grid of squares (batch 1 and 64, n 16 and 256) where faer is the faster at
    /// 16 and cpu-small at 256 (the rules' opposite), the table decides, with its
    /// prediction; between the cells the winner follows the interpolated times.
    #[test]
    fn the_table_chooses_where_it_has_rows() {
        let mut rows = vec![];
        for b in [1, 64] {
            let bf = b as f64;
            rows.push(("cpu-small/small", b, 16, 16, 10.0 * bf));
            rows.push(("cpu-faer/faer", b, 16, 16, 5.0 * bf));
            rows.push(("cpu-small/small", b, 256, 256, 1000.0 * bf));
            rows.push(("cpu-faer/faer", b, 256, 256, 4000.0 * bf));
        }
        let m = synthetic(&rows);
        let p = host(&m, 8, 16, 16);
        assert_eq!(
            (p.backend, p.kernel.name),
            (Backend::CpuFaer, "faer"),
            "{p}"
        );
        let Source::Table {
            predicted_us,
            extrapolated: false,
        } = p.source
        else {
            panic!("{p}")
        };
        assert!((predicted_us - 40.0).abs() < 1e-6, "{p}");
        assert_eq!(p.to_string(), "cpu-faer [table: 40.000 us predicted]");
        assert_eq!(host(&m, 8, 256, 256).backend, Backend::CpuSmall);
        // ln time is linear in ln n between 16 and 256: small 10 n^1.66 / 16^1.66, faer
        // 5 n^2.5 / 16^2.5; they cross at n = 16 * 2^(1/0.84) = 36.5.
        assert_eq!(host(&m, 8, 32, 32).backend, Backend::CpuFaer);
        assert_eq!(host(&m, 8, 40, 40).backend, Backend::CpuSmall);
        // The rules are unchanged without a table, and for what the table has no rows:
        // float64, eigh.
        let rules = |p: &Problem, t: Option<&Model>| {
            plan_with(p, &Place::Host, &Options::default(), t, None).unwrap()
        };
        let f32p = Problem::new(Variant::QrReduced, DType::F32, 8, 16, 16);
        let no_table = rules(&f32p, None);
        assert_eq!(
            (no_table.backend, no_table.source),
            (Backend::CpuSmall, Source::Rules)
        );
        for p in [
            Problem::new(Variant::QrReduced, DType::F64, 8, 16, 16),
            Problem::new(Variant::QrR, DType::F32, 8, 16, 16),
            Problem::new(Variant::Eigh, DType::F32, 8, 16, 16),
            Problem::new(Variant::QrReduced, DType::F32, 0, 16, 16),
        ] {
            let plan = rules(&p, Some(&m));
            assert_eq!(
                (plan.backend, plan.source),
                (Backend::CpuSmall, Source::Rules),
                "{p}"
            );
        }
        // Forcing still wins over the table.
        let p16 = Problem::new(Variant::QrReduced, DType::F32, 8, 16, 16);
        for opts in [
            Options::with_backend(Backend::CpuSmall),
            Options::with_kernel(Backend::Auto, "small"),
        ] {
            let p = plan_with(&p16, &Place::Host, &opts, Some(&m), None).unwrap();
            assert_eq!((p.backend, p.source), (Backend::CpuSmall, Source::Forced));
        }
    }

    #[test]
    fn extrapolation_is_flagged_in_the_plan() {
        let m = synthetic(&[
            ("cpu-small/small", 1, 16, 16, 10.0),
            ("cpu-faer/faer", 1, 16, 16, 20.0),
            ("cpu-small/small", 64, 16, 16, 640.0),
            ("cpu-faer/faer", 64, 16, 16, 1280.0),
        ]);
        let inside = host(&m, 8, 16, 16);
        assert!(matches!(
            inside.source,
            Source::Table {
                extrapolated: false,
                ..
            }
        ));
        for (b, rows, cols) in [(4096, 16, 16), (8, 64, 64), (8, 64, 16)] {
            let p = host(&m, b, rows, cols);
            assert!(
                matches!(
                    p.source,
                    Source::Table {
                        extrapolated: true,
                        ..
                    }
                ),
                "{b}x{rows}x{cols}: {p}"
            );
            assert!(p.to_string().contains("extrapolated"), "{p}");
        }
        // 4096 is 64 times the largest batch measured: linear in the batch.
        let Source::Table { predicted_us, .. } = host(&m, 4096, 16, 16).source else {
            unreachable!()
        };
        assert!((predicted_us - 640.0 * 64.0).abs() < 1e-6, "{predicted_us}");
    }

    #[test]
    fn a_stale_kernel_sends_the_problem_back_to_the_rules() {
        let mut t = table::Table::parse(
            &table::Table {
                device: table::DeviceKey::Cpu {
                    model: "synthetic".into(),
                    threads: 2,
                },
                made: String::new(),
                drift: None,
                versions: table::current_versions(&["qr/cpu-small/small", "qr/cpu-faer/faer"]),
                points: vec![],
                transfer: None,
                gpu: None,
            }
            .to_text(),
        )
        .unwrap();
        for (k, us) in [("qr/cpu-small/small", 10.0), ("qr/cpu-faer/faer", 1.0)] {
            t.points.push(table::Point {
                kernel: k.into(),
                variant: Variant::QrReduced,
                dtype: DType::F32,
                batch: 8,
                m: 16,
                n: 16,
                median_us: us,
                p25_us: us,
                p75_us: us,
            });
        }
        let fresh = Model::new(&t, "fresh");
        assert_eq!(host(&fresh, 8, 16, 16).backend, Backend::CpuFaer);
        let faer = registry::find(Op::Qr, Backend::CpuFaer, "faer").unwrap();
        t.versions[1].1 = faer.version + 1;
        let stale = Model::new(&t, "stale");
        let p = host(&stale, 8, 16, 16);
        assert_eq!(
            (p.backend, p.source),
            (Backend::CpuSmall, Source::Rules),
            "{p}"
        );
    }

    #[test]
    fn ties_keep_the_rules_pick_and_then_the_least_data_moved() {
        // Within 5%: the rules' cpu-small stays; beyond, faer.
        for (faer_us, want) in [(9.6, Backend::CpuSmall), (9.4, Backend::CpuFaer)] {
            let m = synthetic(&[
                ("cpu-small/small", 8, 16, 16, 10.0),
                ("cpu-faer/faer", 8, 16, 16, faer_us),
            ]);
            assert_eq!(host(&m, 8, 16, 16).backend, want, "faer {faer_us} us");
        }
        let k = |b, n| registry::find(Op::Qr, b, n).unwrap();
        let (small, faer, tile) = (
            k(Backend::CpuSmall, "small"),
            k(Backend::CpuFaer, "faer"),
            k(Backend::Cuda, "tile"),
        );
        let c = |kernel, us, moved| Candidate {
            kernel,
            us,
            p25_us: us,
            p75_us: us,
            moved,
            extrapolated: false,
        };
        // Whether `choose` picks kernel `want` from `cands` with the rules' pick `rules`.
        let picks = |cands: &[Candidate], rules: Option<&Kernel>, want: &Kernel| {
            std::ptr::eq(choose(cands, rules).unwrap().kernel, want)
        };
        // A GPU kernel 3% faster with the copies, but moving data: the host keeps it, and
        // of the two on the host the rules' pick, then the faster.
        let cands = [
            c(small, 100.0, 0),
            c(tile, 97.0, 1 << 20),
            c(faer, 101.0, 0),
        ];
        assert!(picks(&cands, Some(small), small));
        assert!(picks(&cands, Some(faer), faer));
        assert!(picks(&cands, None, small));
        // 10% faster is no tie.
        let cands = [c(small, 100.0, 0), c(tile, 90.0, 1 << 20)];
        assert!(picks(&cands, Some(small), tile));
        assert!(choose(&[], None).is_none());
        // Overlapping spreads tie though the medians are 30% apart (a bimodal tiny call:
        // the 2-core machine's 64x3x3 QR); apart, the faster median wins.
        let spread = |kernel, us, p25_us, p75_us| Candidate {
            p25_us,
            p75_us,
            ..c(kernel, us, 0)
        };
        let cands = [
            spread(small, 31.9, 15.1, 36.6),
            spread(faer, 21.7, 21.2, 22.6),
        ];
        assert!(picks(&cands, Some(small), small));
        assert!(picks(&cands, None, faer));
        let cands = [
            spread(small, 31.9, 29.0, 36.6),
            spread(faer, 21.7, 21.2, 22.6),
        ];
        assert!(picks(&cands, Some(small), faer));
        // Overlapping, but over twice the fastest median: no tie.
        let cands = [
            spread(small, 45.0, 15.1, 60.0),
            spread(faer, 21.7, 21.2, 22.6),
        ];
        assert!(picks(&cands, Some(small), faer));
    }

    /// The case: 4096x32x32 float32 QR, 7.0 ms on the CPU, 0.056 ms on the GPU.
    /// The copies are 16.8 MB in and 33.6 MB out (Q and R): at pinned speed (about 25
    /// GB/s) the GPU takes about 2.1 ms with them, still the choice; at pageable speed
    /// (about 3 GB/s) about 17 ms, and the CPU keeps it.
    #[test]
    fn the_copies_priced_turn_the_choice() {
        let p = Problem::new(Variant::QrReduced, DType::F32, 4096, 32, 32);
        let copies = host_copies(&p);
        assert_eq!(copies.to_device, 4096 * 32 * 32 * 4);
        let link = |gb_s: f64| table::Link::line(10.0, gb_s * 1e3);
        let k = |b, n| registry::find(Op::Qr, b, n).unwrap();
        let (small, tile) = (k(Backend::CpuSmall, "small"), k(Backend::Cuda, "tile"));
        let pick = |gb_s: f64| {
            let t = Transfer {
                to_device: link(gb_s),
                to_host: link(gb_s),
            };
            let gpu = cost_us(56.0, Some(copies), &t);
            let cands = [
                Candidate {
                    kernel: small,
                    us: 7000.0,
                    p25_us: 7000.0,
                    p75_us: 7000.0,
                    moved: 0,
                    extrapolated: false,
                },
                Candidate {
                    kernel: tile,
                    us: gpu,
                    p25_us: gpu,
                    p75_us: gpu,
                    moved: copies.to_device + copies.to_host(),
                    extrapolated: false,
                },
            ];
            (choose(&cands, Some(small)).unwrap().kernel.backend, gpu)
        };
        let (pinned, gpu_us) = pick(25.0);
        assert_eq!(pinned, Backend::Cuda);
        assert!((2000.0..2200.0).contains(&gpu_us), "{gpu_us}");
        let (pageable, gpu_us) = pick(3.0);
        assert_eq!(pageable, Backend::CpuSmall);
        assert!((16000.0..18000.0).contains(&gpu_us), "{gpu_us}");
    }

    /// Each copy back pays the link's latency: the outputs one by one, then the info
    /// words, as the host-data path makes them; their bytes add up to the outputs'.
    #[test]
    fn each_copy_back_is_priced_with_its_latency() {
        let t = Transfer {
            to_device: table::Link::line(10.0, 1e12),
            to_host: table::Link::line(10.0, 1e12),
        };
        let priced = |v, b, m, n| {
            let c = host_copies(&Problem::new(v, DType::F64, b, m, n));
            (cost_us(0.0, Some(c), &t), c)
        };
        let (us, c) = priced(Variant::QrReduced, 3, 5, 4);
        assert!((us - 40.0).abs() < 1e-6, "{us}"); // A in; Q, R, info back
        assert_eq!(c.back, [3 * 5 * 4 * 8, 3 * 4 * 4 * 8, 3 * 4, 0]);
        assert_eq!(c.to_host(), c.back.iter().sum::<usize>());
        let (us, c) = priced(Variant::Eigvalsh, 2, 6, 6);
        assert!((us - 30.0).abs() < 1e-6, "{us}");
        assert_eq!(c.back, [2 * 6 * 8, 2 * 4, 0, 0]);
        let (us, c) = priced(Variant::SvdFull, 1, 7, 3);
        assert!((us - 50.0).abs() < 1e-6, "{us}");
        assert_eq!(c.back, [7 * 7 * 8, 3 * 8, 3 * 3 * 8, 4]);
    }

    /// Host data with a GPU table and its transfer model: the GPU's kernels compete with
    /// the copies added, and a plan for the GPU carries them; without rows for every CUDA
    /// kernel that takes the problem, or with a slow link, the CPU keeps it, unless the
    /// caller registered every buffer (copies at the registered link's speed). Device
    /// data is routed by the GPU's table alone.
    #[test]
    fn a_gpu_table_takes_host_data_where_copies_and_all_are_faster() {
        let caps = DeviceCaps::h200();
        let p = Problem::new(Variant::QrReduced, DType::F32, 4096, 32, 32);
        let cpu_kernels = [("qr/cpu-small/small", 7000.0), ("qr/cpu-faer/faer", 9000.0)];
        let gpu_kernels: Vec<&Kernel> = registry::KERNELS
            .iter()
            .filter(|k| k.backend == Backend::Cuda && k.supports(&p, &Target::Cuda(&caps)))
            .collect();
        assert!(gpu_kernels.len() > 1);
        // Each kernel at the problem's shape and its neighbours on a 2x2x1 grid.
        let model = |times: &[(String, f64)], device: table::DeviceKey, tr| {
            let mut points = vec![];
            for (k, us) in times {
                for (batch, n) in [(1024, 16), (1024, 64), (16384, 16), (16384, 64)] {
                    // Scaled as the model's law, so each predicts `us` at 4096x32x32.
                    let f = (batch as f64 / 4096.0) * (n as f64 / 32.0).powi(3);
                    points.push(table::Point {
                        kernel: k.clone(),
                        variant: Variant::QrReduced,
                        dtype: DType::F32,
                        batch,
                        m: n,
                        n,
                        median_us: us * f,
                        p25_us: us * f,
                        p75_us: us * f,
                    });
                }
            }
            let t = table::Table {
                device,
                made: "test".into(),
                drift: None,
                versions: table::current_versions(
                    &times.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
                ),
                points,
                transfer: tr,
                gpu: None,
            };
            Model::new(&t, "synthetic")
        };
        let cpu = model(
            &cpu_kernels.map(|(k, us)| (k.to_string(), us)),
            table::DeviceKey::Cpu {
                model: "synthetic".into(),
                threads: 16,
            },
            None,
        );
        // The GPU kernels at 56 us, 80 us, ...: the first the fastest.
        let gpu_times: Vec<(String, f64)> = gpu_kernels
            .iter()
            .enumerate()
            .map(|(i, k)| (table::kernel_key(k), 56.0 + 24.0 * i as f64))
            .collect();
        let link = |gb_s: f64| Transfer {
            to_device: table::Link::line(10.0, gb_s * 1e3),
            to_host: table::Link::line(10.0, gb_s * 1e3),
        };
        let tr = |gb_s| Transfers {
            staged: link(gb_s),
            registered: link(50.0),
        };
        let gpu = model(&gpu_times, table::DeviceKey::of_gpu(&caps), Some(tr(25.0)));
        let opts = Options::default();
        // The plan with the staged link at `gb_s` GB/s, the input and the outputs
        // registered or not.
        let at = |gb_s: f64, input: bool, outputs: bool| {
            let pinned = Pinned { input, outputs };
            from_tables(&p, &cpu, &opts, Some((&caps, &gpu, tr(gb_s))), pinned, None)
                .unwrap()
                .unwrap()
        };
        let predicted = |plan: &Plan| match plan.source {
            Source::Table { predicted_us, .. } => predicted_us,
            _ => panic!("{plan}"),
        };
        let fast = at(25.0, false, false);
        assert_eq!(fast.backend, Backend::Cuda, "{fast}");
        assert!(std::ptr::eq(fast.kernel, gpu_kernels[0]), "{fast}");
        assert_eq!(fast.ordinal, Some(0));
        assert_eq!(fast.copies, Some(host_copies(&p)));
        // 56 us and the copies (16.8 MB in, 33.6 MB out at 25 GB/s, 10 us a copy).
        assert!((2000.0..2200.0).contains(&predicted(&fast)), "{fast}");
        // The fastest left out (a cold cuSOLVER's detour): the next GPU kernel, 24 us on.
        let without = Some(gpu_kernels[0]);
        let next = from_tables(
            &p,
            &cpu,
            &opts,
            Some((&caps, &gpu, tr(25.0))),
            Pinned::default(),
            without,
        )
        .unwrap()
        .unwrap();
        assert!(std::ptr::eq(next.kernel, gpu_kernels[1]), "{next}");
        assert!(
            (predicted(&next) - predicted(&fast) - 24.0).abs() < 1.0,
            "{next}"
        );
        let slow = at(3.0, false, false);
        assert_eq!(slow.backend, Backend::CpuSmall, "{slow}");
        assert_eq!((slow.ordinal, slow.copies), (None, None));
        // The same link, but the caller registered its buffers: the copies at 50 GB/s
        // (56 us and 50.4 MB, 10 us a copy: one in, Q, R and the info words back).
        let pinned = at(3.0, true, true);
        assert_eq!(pinned.backend, Backend::Cuda, "{pinned}");
        assert!((1095.0..1110.0).contains(&predicted(&pinned)), "{pinned}");
        // The input alone registered: the outputs' 33.6 MB still staged at 3 GB/s.
        let half = at(3.0, true, false);
        assert_eq!(half.backend, Backend::CpuSmall, "{half}");
        // A CUDA kernel without rows: no GPU candidates at all.
        let partial = model(
            &gpu_times[1..],
            table::DeviceKey::of_gpu(&caps),
            Some(tr(25.0)),
        );
        let plan = from_tables(
            &p,
            &cpu,
            &opts,
            Some((&caps, &partial, tr(25.0))),
            Pinned::default(),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(plan.backend, Backend::CpuSmall, "{plan}");
        // No GPU: the CPU table alone, as before.
        let plan = from_tables(&p, &cpu, &opts, None, Pinned::default(), None)
            .unwrap()
            .unwrap();
        assert_eq!(plan.backend, Backend::CpuSmall, "{plan}");
        // Device data: the GPU table's fastest kernel, no copies priced.
        let cands = gpu_candidates(&p, &caps, &gpu, None).unwrap();
        assert_eq!(cands.len(), gpu_kernels.len());
        assert!((cands[0].us - 56.0).abs() < 1e-6 && cands[0].moved == 0);
        assert!(gpu_candidates(&p, &caps, &partial, None).is_none());
    }

    /// Small eigh problems go to the warp kernels where they measured fastest, the rest up
    /// to cuSOLVER's range to `block` (registry order): float32 eigh `warp` to 16 and
    /// `warp-bisect` from 17 to 32, float32 eigvalsh `warp` to 8 and `warp-bisect` from 9
    /// to 32, float64 eigh `warp` to 16 and at 31-32, float64 eigvalsh `warp` to 16, but
    /// float64 `warp-ql` to 4 and from 9 to 12.
    #[test]
    fn eigh_shapes_go_to_the_warp_kernel_where_it_wins() {
        let caps = DeviceCaps::h200();
        for (variant, dtype, warp_to, bisect, warp_from) in [
            (Variant::Eigh, DType::F32, 16, 17..=32, 33),
            (Variant::Eigvalsh, DType::F32, 8, 9..=32, 33),
            (Variant::Eigh, DType::F64, 16, 0..=0, 31),
            (Variant::Eigvalsh, DType::F64, 16, 0..=0, 33),
        ] {
            for n in 1..=40 {
                let p = Problem::new(variant, dtype, 4096, n, n);
                let (k, _, _) = cuda_choice(&p, &caps, &Options::default(), None).unwrap();
                let ql = dtype == DType::F64 && (n <= 4 || (9..=12).contains(&n));
                let want = if ql {
                    "warp-ql"
                } else if n <= warp_to || (warp_from..=32).contains(&n) {
                    "warp"
                } else if bisect.contains(&n) {
                    "warp-bisect"
                } else {
                    "block"
                };
                assert_eq!(k.name, want, "{p}");
            }
        }
    }

    /// The planner sends SVDs of up to 32 columns (after transposing a wide matrix) and
    /// 64 rows in float32, 32 in float64, to the `warp` kernel, the rest to `bidiag`
    /// except full factors of a non-square matrix, which go to `jacobi`.
    #[test]
    fn svd_shapes_go_to_the_warp_kernel_where_they_fit() {
        let caps = DeviceCaps::h200();
        let t = Target::Cuda(&caps);
        for (dtype, rows) in [(DType::F32, 64), (DType::F64, 32)] {
            for variant in [Variant::SvdThin, Variant::SvdFull, Variant::Svdvals] {
                for (m, n, warp) in [
                    (1, 1, true),
                    (16, 16, true),
                    (32, 32, true),
                    (33, 32, rows > 32),
                    (32, 33, rows > 32),
                    (rows, 32, true),
                    (32, rows, true),
                    (rows + 1, 32, false),
                    (32, rows + 1, false),
                    (rows, 1, true),
                    (1, rows + 1, false),
                    (33, 33, false),
                    (100, 40, false),
                ] {
                    let p = Problem::new(variant, dtype, 4096, m, n);
                    let k = pick(&p, Backend::Cuda, &t, &Options::default(), &[]).unwrap();
                    let want = match (warp, variant == Variant::SvdFull && m != n) {
                        (true, _) => "warp",
                        (false, true) => "jacobi",
                        (false, false) => "bidiag",
                    };
                    assert_eq!(k.name, want, "{p}");
                }
            }
        }
    }

    /// cuSOLVER's SVD is preferred for a few large matrices and for full factors of a few
    /// non-square ones from 128 rows (the rule alone: whether the library loads is
    /// `supports_svd`'s question).
    #[test]
    fn cusolver_svd_rule() {
        let pref =
            |v, batch, m, n| cuda::cusolver::prefer_svd(&Problem::new(v, DType::F32, batch, m, n));
        use Variant::{SvdFull, SvdThin, Svdvals};
        // A few large ones: q^1.5 / 4096 of them with vectors, q^1.5 / 8192 values alone.
        assert!(pref(SvdThin, 8, 1024, 1024) && pref(Svdvals, 4, 1024, 1024));
        assert!(pref(SvdThin, 1, 256, 256) && !pref(Svdvals, 1, 256, 256));
        assert!(!pref(SvdThin, 2, 256, 256) && !pref(SvdFull, 1, 255, 255));
        // Full factors of non-square matrices: p^2 / 2048 of them from 128 rows.
        assert!(pref(SvdFull, 3, 462, 24) && pref(SvdFull, 12, 47, 669));
        assert!(pref(SvdFull, 8, 128, 20) && !pref(SvdFull, 9, 128, 20));
        assert!(!pref(SvdFull, 1, 127, 20) && !pref(SvdFull, 16, 87, 5));
        assert!(!pref(SvdThin, 3, 462, 24) && !pref(SvdFull, 3, 200, 200));
    }

    /// The rules' eigh through cuSOLVER: one matrix from 192 (float32) or 128 (float64),
    /// batches where `XsyevBatched` wins against `block` (not just past 256, where its
    /// time jumps; `block`'s panels moved the float32 bounds in version 5).
    #[test]
    fn cusolver_eigh_rule() {
        let pref = |dt, batch, n| {
            cuda::cusolver::prefer_eigh(&Problem::new(Variant::Eigh, dt, batch, n, n))
        };
        use DType::{F32, F64};
        // The shapes of record: 16 and 1 of 1024 to cuSOLVER; 256x256x256 and 1024x128
        // to `block` (its panels since version 5).
        assert!(!pref(F32, 256, 256) && pref(F32, 16, 1024) && pref(F32, 1, 1024));
        assert!(!pref(F32, 1024, 128) && !pref(F32, 1, 191) && pref(F32, 1, 354));
        assert!(pref(F32, 4, 256) && pref(F32, 16, 256) && !pref(F32, 64, 256));
        assert!(!pref(F32, 2, 258) && !pref(F32, 4, 289) && !pref(F32, 3, 594));
        assert!(!pref(F32, 4, 672) && pref(F32, 4, 724) && pref(F32, 32, 192));
        assert!(pref(F64, 1024, 128) && !pref(F64, 228, 147) && !pref(F64, 48, 286));
        assert!(!pref(F64, 16, 256) && !pref(F64, 4, 362));
        assert!(pref(F64, 2, 605) && pref(F64, 1, 163) && !pref(F64, 1, 127));
        let values = |batch, n| {
            cuda::cusolver::prefer_eigh(&Problem::new(Variant::Eigvalsh, F32, batch, n, n))
        };
        assert!(!values(2, 204) && values(1, 340) && !values(4, 724) && values(16, 1024));
    }

    /// The rules' QR beyond tile's and wy's 128 rows: blocked before smem from 16
    /// columns, smem first for wide matrices of few rows.
    #[test]
    fn qr_rules_put_blocked_before_smem_beyond_128_rows() {
        let caps = DeviceCaps::h200();
        let order = |v, dt, batch, m, n| {
            let pref = cuda::qr::preference(&Problem::new(v, dt, batch, m, n), &caps);
            let at = |k| pref.iter().position(|x| *x == k).unwrap_or(usize::MAX);
            at("blocked") < at("smem")
        };
        assert!(order(Variant::QrR, DType::F64, 20, 283, 99));
        assert!(order(Variant::QrComplete, DType::F32, 62, 159, 26));
        assert!(order(Variant::QrReduced, DType::F32, 4, 182, 91));
        assert!(!order(Variant::QrReduced, DType::F32, 8, 23, 736));
        assert!(!order(Variant::QrReduced, DType::F32, 1024, 192, 6));
    }

    /// Wide matrices of at most 32 rows beyond tile's columns go to smem before wy.
    #[test]
    fn qr_rules_put_smem_before_wy_for_wide_matrices_of_few_rows() {
        let caps = DeviceCaps::h200();
        let smem_first = |v, batch, m, n| {
            let pref = cuda::qr::preference(&Problem::new(v, DType::F32, batch, m, n), &caps);
            let at = |k| pref.iter().position(|x| *x == k).unwrap_or(usize::MAX);
            at("smem") < at("wy")
        };
        assert!(smem_first(Variant::QrReduced, 8, 23, 736));
        assert!(smem_first(Variant::QrComplete, 4, 11, 184));
        assert!(smem_first(Variant::QrR, 16, 32, 256));
        assert!(smem_first(Variant::QrReduced, 1092, 18, 131));
        assert!(!smem_first(Variant::QrReduced, 16, 45, 736));
        assert!(!smem_first(Variant::QrReduced, 16, 23, 128));
    }

    /// Matrices at least twice as long as wide that `warp` does not hold go to `tall` (QR
    /// first) for thin factors and values, from 8 columns (`jacobi` below, to 32:1);
    /// full factors stay with the square kernels (`bidiag` for a square matrix, else
    /// `jacobi`, or cuSOLVER for a few long ones).
    #[test]
    fn far_from_square_svds_go_to_the_tall_kernel() {
        let caps = DeviceCaps::h200();
        let opts = Options::default();
        // 256 full factors of 2048 rows: cuSOLVER's where it loads (`prefer_svd`).
        let long = Problem::new(Variant::SvdFull, DType::F32, 256, 2048, 64);
        let full_long = if cuda::cusolver::supports_svd(&long) {
            "cusolver"
        } else {
            "jacobi"
        };
        for (variant, m, n, want) in [
            (Variant::SvdThin, 2048, 64, "tall"),
            (Variant::Svdvals, 64, 2048, "tall"),
            (Variant::SvdThin, 128, 64, "tall"),
            (Variant::SvdThin, 66, 33, "tall"),
            (Variant::SvdFull, 2048, 64, full_long),
            (Variant::SvdThin, 127, 64, "bidiag"),
            (Variant::SvdThin, 65, 33, "bidiag"),
            (Variant::SvdFull, 127, 64, "jacobi"),
            (Variant::SvdFull, 128, 128, "bidiag"),
            (Variant::Svdvals, 256, 256, "bidiag"),
            (Variant::SvdThin, 64, 16, "warp"),
            (Variant::SvdThin, 65, 16, "tall"),
            // Under 8 columns `jacobi` (to 32:1), beyond that `tall` again.
            (Variant::SvdThin, 92, 3, "jacobi"),
            (Variant::Svdvals, 6, 83, "jacobi"),
            (Variant::SvdThin, 65, 8, "tall"),
            (Variant::SvdThin, 1024, 4, "tall"),
        ] {
            let p = Problem::new(variant, DType::F32, 256, m, n);
            let (k, _, _) = cuda_choice(&p, &caps, &opts, None).unwrap();
            assert_eq!(k.name, want, "{p}");
        }
    }

    /// The next choice without a kernel, and what it costs beyond it.
    #[test]
    fn the_next_choice_leaves_the_kernel_out() {
        let k = |n| registry::find(Op::Eigh, Backend::Cuda, n).unwrap();
        let cand = |kernel, us| Candidate {
            kernel,
            us,
            p25_us: us,
            p75_us: us,
            moved: 0,
            extrapolated: false,
        };
        let cands = [
            cand(k("cusolver"), 9000.0),
            cand(k("block"), 13000.0),
            cand(k("warp"), 20000.0),
        ];
        let (next, extra) = next_choice(&cands, k("cusolver")).unwrap();
        assert!(std::ptr::eq(next.kernel, k("block")));
        assert_eq!(extra, 4000.0);
        // A kernel the candidates lack has no price to compare with.
        assert!(next_choice(&cands[1..], k("cusolver")).is_none());
        assert!(next_choice(&cands[..1], k("cusolver")).is_none());
    }

    /// While cuSOLVER is cold the detours go on until their extra time would reach its
    /// first use; once it has run, none (and the price is not asked for).
    #[test]
    fn a_cold_cusolver_is_detoured_until_the_detours_cost_its_first_use() {
        use cuda::cusolver::{cold_detour, ran, Kind, FIRST_USE_US};
        // Device numbers no test's GPU has: this process's real ones are untouched.
        let (dev, other) = (1000, 1001);
        let kind = Kind::Eigh {
            f64_: false,
            one: false,
        };
        let third = FIRST_USE_US / 3.0;
        assert!(cold_detour(dev, kind, || Some(third * 0.99)));
        assert!(cold_detour(dev, kind, || Some(third * 0.99)));
        // Negative extra time (the tables disagree with themselves) counts as none.
        assert!(cold_detour(dev, kind, || Some(-5.0)));
        assert!(cold_detour(dev, kind, || Some(third * 0.99)));
        // The fourth third would pass it: cuSOLVER takes the call and pays the load.
        assert!(!cold_detour(dev, kind, || Some(third)));
        // No next choice: cuSOLVER.
        assert!(!cold_detour(other, kind, || None));
        // A detour costing more than the load: cuSOLVER at once.
        assert!(!cold_detour(other, Kind::Svd, || Some(FIRST_USE_US)));
        // Each kind and device apart.
        assert!(cold_detour(other, kind, || Some(1.0)));
        // Its first run is counted once (a timing whose call raised the count paid the
        // load), whether or not a detour came before it.
        let before = cuda::cusolver::first_uses();
        assert!(ran(other, kind));
        assert!(cuda::cusolver::first_uses() > before);
        assert!(!ran(other, kind));
        assert!(ran(1002, Kind::Svd));
        assert!(!ran(1002, Kind::Svd));
        assert!(!cold_detour(other, kind, || panic!("asked once it ran")));
        assert!(cold_detour(dev, Kind::Svd, || Some(1.0)));
        let single = Kind::of(&Problem::new(Variant::Eigh, DType::F64, 1, 300, 300));
        assert_eq!(
            single,
            Kind::Eigh {
                f64_: true,
                one: true
            }
        );
        let svd = Kind::of(&Problem::new(Variant::Svdvals, DType::F32, 4, 300, 200));
        assert_eq!(svd, Kind::Svd);
    }
}
