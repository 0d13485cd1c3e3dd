//! The per-matrix info word every backend reports.
//!
//! Bit layout (stable: the C API and the GPU kernels write the same bits):
//! - bit 0 `NONFINITE`: the input held NaN or Inf; every output of that matrix is NaN.
//! - bit 1 `NOT_CONVERGED`: an iterative method (eigh, SVD) hit its iteration limit;
//!   the outputs are the best reached and may be inaccurate.
//! - bit 2 `RANK_DEFICIENT`: a diagonal entry of R, or a singular value, is zero to
//!   working precision (relative to the matrix's largest).
//! - bit 3 `OVERFLOW`: the input was finite but a result exceeds the element type's
//!   range (float32 input near 1e38: R's entries, eigenvalues or singular values up to
//!   sqrt(M N) times the largest entry); those entries are +-Inf, the rest are right.
//!   numpy.linalg returns the same Inf with a RuntimeWarning and LAPACK with no sign at
//!   all; a flag of its own, rather than NOT_CONVERGED, says what happened. `is_ok` is
//!   false.
//! - bits 16..32: the number of iterations (sweeps) an iterative method took.

/// The info word of one matrix.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Info(pub u32);

impl Info {
    pub const OK: Info = Info(0);
    pub const NONFINITE: u32 = 1 << 0;
    pub const NOT_CONVERGED: u32 = 1 << 1;
    pub const RANK_DEFICIENT: u32 = 1 << 2;
    pub const OVERFLOW: u32 = 1 << 3;
    const ITER_SHIFT: u32 = 16;

    pub fn nonfinite(self) -> bool {
        self.0 & Self::NONFINITE != 0
    }
    pub fn not_converged(self) -> bool {
        self.0 & Self::NOT_CONVERGED != 0
    }
    pub fn rank_deficient(self) -> bool {
        self.0 & Self::RANK_DEFICIENT != 0
    }
    pub fn overflow(self) -> bool {
        self.0 & Self::OVERFLOW != 0
    }
    /// Iterations (sweeps) taken by an iterative method; 0 for direct ones.
    pub fn iterations(self) -> u32 {
        self.0 >> Self::ITER_SHIFT
    }
    /// True when the outputs are trustworthy: finite input, converged, no overflow.
    pub fn is_ok(self) -> bool {
        self.0 & (Self::NONFINITE | Self::NOT_CONVERGED | Self::OVERFLOW) == 0
    }
    pub fn with_flag(self, flag: u32) -> Info {
        Info(self.0 | flag)
    }
    pub fn with_iterations(self, iters: u32) -> Info {
        Info((self.0 & 0xffff) | (iters.min(0xffff) << Self::ITER_SHIFT))
    }
}
