//! Errors returned by every batchlin entry point. Nothing panics across an API boundary:
//! bad input is an `Err` with a message that says what was wrong and what was expected.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The input's shape, strides or rank do not fit the operation.
    Shape(String),
    /// The element type is not one batchlin computes in.
    DType(String),
    /// An argument (mode, uplo, backend name, ...) is not recognised.
    Argument(String),
    /// An output buffer does not have the shape the operation produces.
    Output(String),
    /// A size computation overflowed.
    Overflow(String),
    /// The requested backend or device is not available on this machine.
    Unavailable(String),
    /// A device (CUDA) call failed.
    Device(String),
}

impl Error {
    pub fn message(&self) -> &str {
        match self {
            Error::Shape(m)
            | Error::DType(m)
            | Error::Argument(m)
            | Error::Output(m)
            | Error::Overflow(m)
            | Error::Unavailable(m)
            | Error::Device(m) => m,
        }
    }
    /// A short name for the kind of error, as the C API and Python report it.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Shape(_) => "shape",
            Error::DType(_) => "dtype",
            Error::Argument(_) => "argument",
            Error::Output(_) => "output",
            Error::Overflow(_) => "overflow",
            Error::Unavailable(_) => "unavailable",
            Error::Device(_) => "device",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "batchlin {} error: {}", self.kind(), self.message())
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;
