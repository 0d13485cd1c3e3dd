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
    /// Memory for the outputs or scratch (host, pinned or device) could not be
    /// allocated. Nothing was aborted; the library stays usable and a smaller call may
    /// succeed.
    OutOfMemory(String),
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
            | Error::Device(m)
            | Error::OutOfMemory(m) => m,
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
            Error::OutOfMemory(_) => "out of memory",
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

/// `len` copies of `value` in a vector allocated fallibly: running out of memory is
/// `Error::OutOfMemory` naming `what`, never an abort.
pub fn try_vec<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>> {
    check_memory((len as u128) * std::mem::size_of::<T>() as u128, what)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| out_of_memory::<T>(len, what))?;
    v.resize(len, value);
    Ok(v)
}

/// `Error::OutOfMemory` where `bytes` exceed the machine's memory and swap together. On
/// a machine that overcommits memory (Linux `vm.overcommit_memory = 1`, common on GPU
/// hosts) such an allocation succeeds and the process is killed once the pages are
/// written; refused here, it is a clear error instead.
pub fn check_memory(bytes: u128, what: &str) -> Result<()> {
    let total = machine_memory();
    if total > 0 && bytes > total {
        return Err(Error::OutOfMemory(format!(
            "could not allocate {} for {what}: more than this machine's {} of memory and swap",
            human_bytes(bytes),
            human_bytes(total)
        )));
    }
    Ok(())
}

/// Memory and swap in bytes (0 where unknown), read once.
fn machine_memory() -> u128 {
    static TOTAL: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    *TOTAL.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: sysinfo only fills the struct it is given.
            let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
            if unsafe { libc::sysinfo(&mut si) } == 0 {
                let unit = si.mem_unit.max(1) as u128;
                return (si.totalram as u128 + si.totalswap as u128) * unit;
            }
        }
        0
    })
}

/// The error for `len` elements of `T` that could not be allocated for `what`.
pub fn out_of_memory<T>(len: usize, what: &str) -> Error {
    let bytes = (len as u128) * std::mem::size_of::<T>() as u128;
    Error::OutOfMemory(format!(
        "could not allocate {} for {what}",
        human_bytes(bytes)
    ))
}

/// A byte count as people read it: "1.5 GiB".
pub fn human_bytes(bytes: u128) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut x = bytes as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{x:.1} {}", UNITS[u])
    }
}
