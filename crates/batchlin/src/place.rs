//! Where a call's work is queued: the host, or a CUDA device and a stream of it.

use std::ffi::c_void;
use std::fmt;

/// A CUDA stream handle of the caller's (null: the device's legacy default stream).
/// batchlin queues work on it and never destroys it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Stream(usize);

impl Stream {
    /// The legacy default stream.
    pub const DEFAULT: Stream = Stream(0);

    /// A stream the caller owns.
    ///
    /// # Safety
    /// `handle` must be null or a valid `CUstream` of the primary context of the device
    /// the call runs on, alive until the queued work has run.
    pub unsafe fn from_raw(handle: *mut c_void) -> Stream {
        Stream(handle as usize)
    }

    pub fn as_raw(self) -> *mut c_void {
        self.0 as *mut c_void
    }
}

/// Where the work runs and whose data it is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Place {
    /// The caller waits for the result; the data is in host memory.
    #[default]
    Host,
    /// Queued on `stream` of CUDA device `ordinal`, returning before it has run; the data
    /// is in that device's memory.
    Cuda { ordinal: usize, stream: Stream },
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Host => f.write_str("host"),
            Place::Cuda { ordinal, .. } => write!(f, "cuda:{ordinal}"),
        }
    }
}
