//! batchlin: QR, the symmetric eigendecomposition and the SVD of batches of dense
//! matrices, on the CPU and NVIDIA GPUs.
//!
//! Layers, top to bottom: the front door (`ops`: shapes, dtypes, outputs), the router
//! (`backend`), the backends (`cpu`, later `cuda`), each computing into outputs its
//! caller provides (`view`).

pub mod backend;
pub mod cpu;
pub mod cuda;
pub mod device;
pub mod error;
pub mod info;
pub mod ops;
pub mod scalar;
pub mod view;

pub use backend::{backend_for, policy_source, Backend, Op};
pub use error::{Error, Result};
pub use info::Info;
pub use ops::{
    eigh, eigh_ex, eigh_into, eigvalsh, qr, qr_ex, qr_into, svd, svd_ex, svd_into, svdvals, Eigh,
    Options, Qr, QrMode, Svd, Uplo,
};
pub use scalar::{DType, Real};
pub use view::{BatchMut, BatchRef, Layout, Tensor};
