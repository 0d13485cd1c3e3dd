//! batchlin: QR, the symmetric eigendecomposition and the SVD of batches of dense
//! matrices, on the CPU and NVIDIA GPUs.
//!
//! Layers, top to bottom (docs/ARCHITECTURE.md): the front doors (`ops` for Rust; the C
//! API, the Python module and the XLA handlers in their own crates) describe a call as a
//! [`Request`] and pass it to the one entry, [`entry::run`]; the planner (`plan`) picks a
//! backend, kernel and parameters from the kernel registry (`registry`); the backends
//! (`cpu`, `cuda`) compute into the outputs the caller provides (`view`).

pub mod cpu;
pub mod cuda;
pub mod device;
pub mod entry;
pub mod error;
pub mod fork;
pub mod info;
pub mod ops;
pub mod place;
pub mod plan;
pub mod problem;
pub mod registry;
pub mod scalar;
pub mod table;
pub mod timing;
pub mod view;

pub use entry::{run, DeviceWords, InfoOut, Outputs, Request};
pub use error::{Error, Result};
pub use info::Info;
pub use ops::{
    eigh, eigh_ex, eigh_into, eigvalsh, qr, qr_ex, qr_into, svd, svd_ex, svd_into, svdvals, Eigh,
    Qr, Svd,
};
pub use place::{Place, Stream};
pub use plan::{backend_for, plan, plan_for, policy_source, Plan};
pub use problem::{
    Backend, Op, Operation, Options, Params, Problem, QrMode, TileConfig, Uplo, Variant,
};
pub use scalar::{DType, Real};
pub use view::{BatchMut, BatchRef, Layout, Memory, Tensor};

/// The README's Rust example, compiled and run by `cargo test --doc` as written (its other
/// code blocks are shell, C and Python: not Rust, not run here).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExample;
