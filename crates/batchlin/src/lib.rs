pub mod error;
pub mod info;
pub mod scalar;
pub use error::{Error, Result};
pub use info::Info;
pub use scalar::{DType, Real};
