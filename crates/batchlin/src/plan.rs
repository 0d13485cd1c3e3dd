//! The planner: for a problem, a place and options, which backend and kernel run it and
//! with which parameters. A forced backend or kernel is honoured (and checked against the
//! kernel's `supports`); otherwise the measured rules below choose. They are the
//! fallback a measured cost table will plug in front of, here, in [`plan`]
//! (docs/ARCHITECTURE.md, "The planner").

use crate::cuda;
use crate::error::{Error, Result};
use crate::place::Place;
use crate::problem::{Backend, Op, Options, Problem, TileConfig, Variant};
use crate::registry::{self, Kernel, Target};
use crate::scalar::DType;
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

/// Bytes a plan moves between the host and a device (host data computed on the GPU).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Copies {
    pub to_device: usize,
    pub to_host: usize,
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
    /// Why this backend and kernel: "forced", or the rules.
    pub source: &'static str,
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
                mb(c.to_host)
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

/// Where the routing decisions come from, for users to see.
pub fn policy_source() -> String {
    match env_override() {
        Ok(Some(b)) => format!("forced by BATCHLIN_BACKEND={b}"),
        Ok(None) => "measured rules (no cost table for this machine yet)".into(),
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

/// Plan `problem` at `place` under `opts`.
pub fn plan(problem: &Problem, place: &Place, opts: &Options) -> Result<Plan> {
    let forced = match opts.backend {
        Backend::Auto => env_override()?,
        b => Some(b),
    };
    let Place::Cuda { ordinal, .. } = *place else {
        return plan_forced(problem, place, opts, forced);
    };
    let key = (*problem, ordinal, *opts, forced);
    if let Some((k, p)) = LAST_DEVICE_PLAN.with(|c| c.get()) {
        if k == key {
            return Ok(p);
        }
    }
    let p = plan_forced(problem, place, opts, forced)?;
    LAST_DEVICE_PLAN.with(|c| c.set(Some((key, p))));
    Ok(p)
}

/// `plan` with the forced backend (the option's, else the environment's) given.
fn plan_forced(
    problem: &Problem,
    place: &Place,
    opts: &Options,
    forced: Option<Backend>,
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
            None => cpu_rule(problem),
        },
    };
    let source = if forced.is_some() || opts.kernel.is_some() {
        "forced"
    } else {
        "rules"
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
    let dev = cuda::device(ordinal)?;
    let (kernel, params) = cuda_kernel(problem, dev.caps(), opts)?;
    let copies = matches!(place, Place::Host).then(|| host_copies(problem));
    Ok(Plan {
        problem: *problem,
        backend,
        kernel,
        params,
        ordinal: Some(ordinal),
        copies,
        source,
    })
}

/// The CUDA kernel for `problem` on a device of `caps`, and its parameters: the forced
/// one (`opts.kernel`), else the rules' preference. Composite kernels (the SVD's `tall`,
/// QR first) plan their steps with it.
pub(crate) fn cuda_kernel(
    problem: &Problem,
    caps: &cuda::DeviceCaps,
    opts: &Options,
) -> Result<(&'static Kernel, KernelParams)> {
    let prefer = match problem.op() {
        Op::Qr => cuda::qr::preference(problem, caps),
        Op::Eigh => cuda::eigh::preference(problem),
        Op::Svd => cuda::svd::preference(problem),
    };
    let kernel = pick(problem, Backend::Cuda, &Target::Cuda(caps), opts, &prefer)?;
    let params = match kernel.name {
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
    };
    Ok((kernel, params))
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

/// Bytes in and out for host data on the GPU: the input, then every output and the info
/// words.
fn host_copies(p: &Problem) -> Copies {
    let es = p.dtype.size();
    let (b, m, n, k) = (p.batch, p.m, p.n, p.k());
    let out = match p.variant {
        Variant::QrReduced => m * k + k * n,
        Variant::QrComplete => m * m + m * n,
        Variant::QrR => k * n,
        Variant::Eigh => n + n * n,
        Variant::Eigvalsh => n,
        Variant::SvdThin => m * k + k + k * n,
        Variant::SvdFull => m * m + k + n * n,
        Variant::Svdvals => k,
    };
    Copies {
        to_device: b.saturating_mul(m * n).saturating_mul(es),
        to_host: b.saturating_mul(out * es + 4),
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
    let variant = match op {
        Op::Qr => Variant::QrReduced,
        Op::Eigh => Variant::Eigh,
        Op::Svd => Variant::SvdThin,
    };
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

    fn h200() -> DeviceCaps {
        DeviceCaps {
            ordinal: 0,
            name: "test".into(),
            sm_count: 132,
            cc: (9, 0),
            smem_optin: 232448,
            driver_version: 13000,
        }
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
        let caps = h200();
        let p = |m, n| Problem::new(Variant::QrReduced, DType::F32, 8, m, n);
        cuda::qr::check_tile_config(&p(64, 64), &caps, &t).unwrap();
        cuda::qr::check_tile_config(&p(40, 10), &caps, &t).unwrap();
        let e = cuda::qr::check_tile_config(&p(65, 64), &caps, &t).unwrap_err();
        assert!(e.message().contains("holds 64x64"), "{e}");
        let big: TileConfig = "128x128/8x32/b2/c16x16/s0".parse().unwrap();
        let f64p = Problem::new(Variant::QrReduced, DType::F64, 8, 128, 128);
        cuda::qr::check_tile_config(&f64p, &caps, &big).unwrap();
    }

    /// The planner sends SVDs of up to 32 columns (after transposing a wide matrix) and
    /// 64 rows in float32, 32 in float64, to the `warp` kernel, the rest to `bidiag`
    /// except full factors of a non-square matrix, which go to `jacobi`.
    #[test]
    fn svd_shapes_go_to_the_warp_kernel_where_they_fit() {
        let caps = h200();
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

    /// Matrices at least twice as long as wide that `warp` does not hold go to `tall` (QR
    /// first) for thin factors and values; full factors stay with the square kernels
    /// (`bidiag` for a square matrix, else `jacobi`).
    #[test]
    fn far_from_square_svds_go_to_the_tall_kernel() {
        let caps = h200();
        let opts = Options::default();
        for (variant, m, n, want) in [
            (Variant::SvdThin, 2048, 64, "tall"),
            (Variant::Svdvals, 64, 2048, "tall"),
            (Variant::SvdThin, 128, 64, "tall"),
            (Variant::SvdThin, 66, 33, "tall"),
            (Variant::SvdFull, 2048, 64, "jacobi"),
            (Variant::SvdThin, 127, 64, "bidiag"),
            (Variant::SvdThin, 65, 33, "bidiag"),
            (Variant::SvdFull, 127, 64, "jacobi"),
            (Variant::SvdFull, 128, 128, "bidiag"),
            (Variant::Svdvals, 256, 256, "bidiag"),
            (Variant::SvdThin, 64, 16, "warp"),
            (Variant::SvdThin, 65, 16, "tall"),
        ] {
            let p = Problem::new(variant, DType::F32, 256, m, n);
            let (k, _) = cuda_kernel(&p, &caps, &opts).unwrap();
            assert_eq!(k.name, want, "{p}");
        }
    }
}
