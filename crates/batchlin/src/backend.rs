//! Backend names and the size rule that chooses among them.
//!
//! Every backend can be forced by name (for tests, sweeps and users) and then always runs
//! its own algorithm. `Backend::Auto` asks the router, which for now is a size rule; a
//! policy measured per machine will replace it (see docs/proposals/).

use crate::error::{Error, Result};
use crate::scalar::DType;
use std::fmt;
use std::str::FromStr;

/// The decompositions, as the router sees them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Qr,
    Eigh,
    Svd,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Qr => "qr",
            Op::Eigh => "eigh",
            Op::Svd => "svd",
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

/// Where a call runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// Let the router choose (the default; `BATCHLIN_BACKEND` overrides it).
    #[default]
    Auto,
    /// batchlin's own small-matrix kernels on the CPU, the batch spread over all cores.
    CpuSmall,
    /// faer's in-place decompositions on the CPU, the batch spread over all cores.
    CpuFaer,
    /// The CUDA backend (host data is staged through device memory).
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
        match s.to_ascii_lowercase().as_str() {
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

/// Largest max(m, n) for which the CPU's own small-matrix kernels beat faer, per op and
/// element type: measured one matrix on one core with
/// `cargo run --release -p batchlin --example kernels_vs_faer` (docs/results/cpu-2core/;
/// 2026-11-30, after the padded AVX2 kernels: f32 QR 1.8x faer at 128 and 1.0x at 192,
/// eigh 1.2x at 192 (and 0.9-1.2x at 256, where the batch of 256 on two cores measured
/// faster with faer), SVD 1.3x at 192 and 1.1x at 256; f64 QR 1.1x at 128, eigh 1.4x at
/// 128 and 0.8x at 192, SVD 1.2x at 128 and 1.0x at 192). Above it faer's blocked
/// algorithms win; tall matrices go to faer, which is blocked (QR) or QR-preconditioned
/// (SVD).
pub(crate) fn small_kernel_limit(op: Op, dtype: DType) -> usize {
    let f64 = dtype == DType::F64;
    match op {
        Op::Qr => {
            if f64 {
                128
            } else {
                160
            }
        }
        Op::Eigh => {
            if f64 {
                128
            } else {
                192
            }
        }
        Op::Svd => {
            if f64 {
                128
            } else {
                192
            }
        }
    }
}

/// The environment's forced backend, if any (`BATCHLIN_BACKEND=cpu-faer`, ...).
pub fn env_override() -> Result<Option<Backend>> {
    match std::env::var("BATCHLIN_BACKEND") {
        Ok(v) => match v.parse::<Backend>()? {
            Backend::Auto => Ok(None),
            b => Ok(Some(b)),
        },
        Err(_) => Ok(None),
    }
}

/// The backend the router picks for host (CPU memory) input of this shape.
///
/// Until a measured policy exists this is a size rule: own kernels up to the measured
/// crossover with faer, faer above it. Host data stays on the CPU; data already on a GPU
/// goes to the CUDA backend.
pub fn route_host(op: Op, dtype: DType, batch: usize, m: usize, n: usize) -> Backend {
    let _ = batch;
    if m.max(n) <= small_kernel_limit(op, dtype) {
        Backend::CpuSmall
    } else {
        Backend::CpuFaer
    }
}

/// Where the routing decisions come from, for users to see.
pub fn policy_source() -> String {
    match env_override() {
        Ok(Some(b)) => format!("forced by BATCHLIN_BACKEND={b}"),
        Ok(None) => "size rule (no measured policy for this machine yet)".into(),
        Err(e) => format!("BATCHLIN_BACKEND is invalid ({}); size rule", e.message()),
    }
}

/// The backend a call of this op and shape would run on (host memory input).
pub fn backend_for(op: Op, dtype: DType, batch: usize, m: usize, n: usize) -> Result<Backend> {
    Ok(match env_override()? {
        Some(b) => b,
        None => route_host(op, dtype, batch, m, n),
    })
}
