//! What a call asks for, in the words every layer shares: the operation and its variant,
//! the element type and the sizes (a [`Problem`]), the backends by name, and the
//! [`Options`] a caller may set. A leaf module: it depends on nothing of the crate but
//! errors and element types, so the backends, the planner and the front door all build
//! on it (docs/ARCHITECTURE.md, "Layers").

use crate::error::{Error, Result};
use crate::scalar::DType;
use std::fmt;
use std::str::FromStr;

/// The decompositions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Qr,
    Eigh,
    Svd,
}

impl Op {
    pub const ALL: [Op; 3] = [Op::Qr, Op::Eigh, Op::Svd];

    pub fn name(self) -> &'static str {
        match self {
            Op::Qr => "qr",
            Op::Eigh => "eigh",
            Op::Svd => "svd",
        }
    }

    /// The variant a bench, a tune or `plan_for` means by the operation: QR reduced, eigh
    /// with vectors, the thin SVD.
    pub fn main_variant(self) -> Variant {
        match self {
            Op::Qr => Variant::QrReduced,
            Op::Eigh => Variant::Eigh,
            Op::Svd => Variant::SvdThin,
        }
    }
}

impl FromStr for Op {
    type Err = Error;
    fn from_str(s: &str) -> Result<Op> {
        match s.to_ascii_lowercase().as_str() {
            "qr" => Ok(Op::Qr),
            "eigh" | "eigvalsh" => Ok(Op::Eigh),
            "svd" | "svdvals" => Ok(Op::Svd),
            _ => Err(Error::Argument(format!(
                "unknown operation {s:?}: expected qr, eigh or svd"
            ))),
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// numpy.linalg.qr's modes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum QrMode {
    /// Q `[..., M, K]`, R `[..., K, N]`, K = min(M, N).
    #[default]
    Reduced,
    /// Q `[..., M, M]`, R `[..., M, N]`.
    Complete,
    /// R `[..., K, N]` alone; Q is never formed.
    R,
}

impl FromStr for QrMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<QrMode> {
        match s {
            "reduced" => Ok(QrMode::Reduced),
            "complete" => Ok(QrMode::Complete),
            "r" => Ok(QrMode::R),
            _ => Err(Error::Argument(format!(
                "unknown QR mode {s:?}: expected \"reduced\", \"complete\" or \"r\""
            ))),
        }
    }
}

impl QrMode {
    /// Columns of Q (0 for mode "r") and rows of R for an m x n input.
    pub fn output_dims(self, m: usize, n: usize) -> (usize, usize) {
        let k = m.min(n);
        match self {
            QrMode::Reduced => (k, k),
            QrMode::Complete => (m, m),
            QrMode::R => (0, k),
        }
    }
}

/// Which triangle of a symmetric input is read.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Uplo {
    #[default]
    Lower,
    Upper,
}

impl FromStr for Uplo {
    type Err = Error;
    fn from_str(s: &str) -> Result<Uplo> {
        match s {
            "L" | "l" => Ok(Uplo::Lower),
            "U" | "u" => Ok(Uplo::Upper),
            _ => Err(Error::Argument(format!(
                "UPLO must be \"L\" or \"U\", got {s:?}"
            ))),
        }
    }
}

/// An operation with its arguments, as a call names it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    Qr(QrMode),
    /// `vectors = false` is eigvalsh.
    Eigh {
        uplo: Uplo,
        vectors: bool,
    },
    /// `vectors = false` is svdvals (`full_matrices` is then ignored).
    Svd {
        full_matrices: bool,
        vectors: bool,
    },
}

impl Operation {
    pub fn op(self) -> Op {
        match self {
            Operation::Qr(_) => Op::Qr,
            Operation::Eigh { .. } => Op::Eigh,
            Operation::Svd { .. } => Op::Svd,
        }
    }

    /// The variant a kernel is chosen and timed for (the triangle read does not matter).
    pub fn variant(self) -> Variant {
        match self {
            Operation::Qr(QrMode::Reduced) => Variant::QrReduced,
            Operation::Qr(QrMode::Complete) => Variant::QrComplete,
            Operation::Qr(QrMode::R) => Variant::QrR,
            Operation::Eigh { vectors: true, .. } => Variant::Eigh,
            Operation::Eigh { vectors: false, .. } => Variant::Eigvalsh,
            Operation::Svd { vectors: false, .. } => Variant::Svdvals,
            Operation::Svd {
                full_matrices: false,
                ..
            } => Variant::SvdThin,
            Operation::Svd { .. } => Variant::SvdFull,
        }
    }
}

/// The operation variants kernels are registered, planned and timed for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    QrReduced,
    QrComplete,
    QrR,
    Eigh,
    Eigvalsh,
    SvdThin,
    SvdFull,
    Svdvals,
}

impl Variant {
    pub const ALL: [Variant; 8] = [
        Variant::QrReduced,
        Variant::QrComplete,
        Variant::QrR,
        Variant::Eigh,
        Variant::Eigvalsh,
        Variant::SvdThin,
        Variant::SvdFull,
        Variant::Svdvals,
    ];

    pub fn op(self) -> Op {
        match self {
            Variant::QrReduced | Variant::QrComplete | Variant::QrR => Op::Qr,
            Variant::Eigh | Variant::Eigvalsh => Op::Eigh,
            Variant::SvdThin | Variant::SvdFull | Variant::Svdvals => Op::Svd,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Variant::QrReduced => "qr",
            Variant::QrComplete => "qr-complete",
            Variant::QrR => "qr-r",
            Variant::Eigh => "eigh",
            Variant::Eigvalsh => "eigvalsh",
            Variant::SvdThin => "svd",
            Variant::SvdFull => "svd-full",
            Variant::Svdvals => "svdvals",
        }
    }

    /// The operation this variant stands for (lower triangle for eigh).
    pub fn operation(self) -> Operation {
        match self {
            Variant::QrReduced => Operation::Qr(QrMode::Reduced),
            Variant::QrComplete => Operation::Qr(QrMode::Complete),
            Variant::QrR => Operation::Qr(QrMode::R),
            Variant::Eigh | Variant::Eigvalsh => Operation::Eigh {
                uplo: Uplo::Lower,
                vectors: self == Variant::Eigh,
            },
            Variant::SvdThin | Variant::SvdFull | Variant::Svdvals => Operation::Svd {
                full_matrices: self == Variant::SvdFull,
                vectors: self != Variant::Svdvals,
            },
        }
    }
}

impl FromStr for Variant {
    type Err = Error;
    fn from_str(s: &str) -> Result<Variant> {
        let s = s.to_ascii_lowercase();
        Variant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Variant::ALL.iter().map(|v| v.name()).collect();
                Error::Argument(format!(
                    "unknown operation variant {s:?}: expected one of {}",
                    names.join(", ")
                ))
            })
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A call's problem: what to compute, in which type, at which sizes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Problem {
    pub variant: Variant,
    pub dtype: DType,
    pub batch: usize,
    pub m: usize,
    pub n: usize,
}

impl Problem {
    pub fn new(variant: Variant, dtype: DType, batch: usize, m: usize, n: usize) -> Problem {
        Problem {
            variant,
            dtype,
            batch,
            m,
            n,
        }
    }

    pub fn op(&self) -> Op {
        self.variant.op()
    }

    /// min(m, n).
    pub fn k(&self) -> usize {
        self.m.min(self.n)
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self;
        write!(
            f,
            "{} {} {}x{}x{}",
            p.variant,
            p.dtype.name(),
            p.batch,
            p.m,
            p.n
        )
    }
}

/// Where a call runs: a backend, each with its own kernels (registry.rs).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// Let the planner choose (the default; `BATCHLIN_BACKEND` overrides it).
    #[default]
    Auto,
    /// batchlin's own small-matrix kernels on the CPU, the batch spread over all cores.
    CpuSmall,
    /// faer's in-place decompositions on the CPU, the batch spread over all cores.
    CpuFaer,
    /// The CUDA backend (host data is copied through device memory).
    Cuda,
}

impl Backend {
    pub const ALL: [Backend; 3] = [Backend::CpuSmall, Backend::CpuFaer, Backend::Cuda];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::CpuSmall => "cpu-small",
            Backend::CpuFaer => "cpu-faer",
            Backend::Cuda => "cuda",
        }
    }

    pub fn is_cpu(self) -> bool {
        matches!(self, Backend::CpuSmall | Backend::CpuFaer)
    }
}

impl FromStr for Backend {
    type Err = Error;
    fn from_str(s: &str) -> Result<Backend> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(Backend::Auto),
            "cpu-small" => Ok(Backend::CpuSmall),
            "cpu-faer" => Ok(Backend::CpuFaer),
            "cuda" => Ok(Backend::Cuda),
            _ => Err(Error::Argument(format!(
                "unknown backend {s:?}: expected auto, cpu-small, cpu-faer or cuda"
            ))),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Tuning parameters a caller (a sweep, `tune`, a user) may fix; `None` leaves each to
/// the planner. Typed and passed per call, never read from the environment.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Params {
    /// Panel width (16 or 32 columns) of the CUDA `blocked` QR kernel.
    pub qr_blocked_panel: Option<usize>,
    /// The instantiation of the CUDA `tile` QR kernel (compiled on first use).
    pub qr_tile: Option<TileConfig>,
}

/// One instantiation of the CUDA `tile` QR kernel: its capacity (`rows` x `cols`, the
/// matrix zero padded to it), thread grid (rows over `rg` lanes, columns over `cg` lane
/// groups), register cap (`minb` blocks an SM), steps unrolled together (`fc` factoring,
/// `qc` forming Q) and whether A and Q pass through shared memory (`stage`). Written
/// `64x64/4x16/b8/c8x8/s0`, as `batchlin info` and `bench --tile` show and take it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileConfig {
    pub rows: usize,
    pub cols: usize,
    pub rg: usize,
    pub cg: usize,
    pub minb: usize,
    pub fc: usize,
    pub qc: usize,
    pub stage: bool,
}

impl fmt::Display for TileConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self;
        write!(
            f,
            "{}x{}/{}x{}/b{}/c{}x{}/s{}",
            t.rows, t.cols, t.rg, t.cg, t.minb, t.fc, t.qc, t.stage as u8
        )
    }
}

impl FromStr for TileConfig {
    type Err = Error;
    fn from_str(s: &str) -> Result<TileConfig> {
        let bad = || {
            Error::Argument(format!(
                "tile instantiation {s:?}: expected ROWSxCOLS/RGxCG/bMINB/cFCxQC/sSTAGE, \
                 e.g. 64x64/4x16/b8/c8x8/s0"
            ))
        };
        let pair = |x: &str| -> Result<(usize, usize)> {
            let (a, b) = x.split_once('x').ok_or_else(bad)?;
            Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
        };
        let f: Vec<&str> = s.split('/').collect();
        let [cap, grid, b, c, st] = f[..] else {
            return Err(bad());
        };
        let (rows, cols) = pair(cap)?;
        let (rg, cg) = pair(grid)?;
        let minb = b
            .strip_prefix('b')
            .ok_or_else(bad)?
            .parse()
            .map_err(|_| bad())?;
        let (fc, qc) = pair(c.strip_prefix('c').ok_or_else(bad)?)?;
        let stage = match st {
            "s0" => false,
            "s1" => true,
            _ => return Err(bad()),
        };
        let t = TileConfig {
            rows,
            cols,
            rg,
            cg,
            minb,
            fc,
            qc,
            stage,
        };
        let threads = rg * cg;
        let whole = |a: usize, d: usize| d > 0 && a % d == 0;
        let fits = whole(rows, rg) && whole(cols, cg) && threads % 32 == 0 && threads <= 1024;
        if !fits || !(1..=32).contains(&minb) || fc == 0 || qc == 0 {
            return Err(Error::Argument(format!(
                "tile instantiation {t}: the grid must divide the capacity, with a whole \
                 number of warps (at most 1024 threads), 1 to 32 blocks an SM and chunks \
                 of at least one step"
            )));
        }
        Ok(t)
    }
}

/// How a call runs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `Backend::Auto` (the default) lets the planner choose.
    pub backend: Backend,
    /// A kernel of the registry to force by name (`"tile"`, `"faer"`, ...); with
    /// `backend` Auto it names the backend too. A forced kernel always runs its own
    /// algorithm, and one that does not take the problem is an `Argument` error.
    pub kernel: Option<&'static str>,
    pub params: Params,
}

impl Options {
    pub fn with_backend(backend: Backend) -> Options {
        Options {
            backend,
            ..Options::default()
        }
    }

    /// Force one kernel of the registry (`registry::find`).
    pub fn with_kernel(backend: Backend, kernel: &'static str) -> Options {
        Options {
            backend,
            kernel: Some(kernel),
            ..Options::default()
        }
    }
}
