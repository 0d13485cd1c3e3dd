//! cuSOLVER as one more CUDA eigh and SVD kernel (`cusolver` of each), on the caller's
//! stream, for the large matrices where a block a matrix (`block`, `jacobi`) leaves most
//! of the GPU idle or runs out of shared memory:
//! - eigh: its batched `XsyevBatched` for a batch, its divide-and-conquer `syevd` for one
//!   matrix (or a library without the batched call); batchlin's conventions (the named
//!   triangle through any strides, power-of-two scaling, NaN isolation, the sign
//!   convention, info words) are kept by scale, pack and unpack kernels around the calls,
//!   tiles of each matrix spread over the grid (kernels/cusolver.cu). With vectors, a
//!   check kernel tests each matrix's output against half the accuracy floor and `block`
//!   computes the ones that miss it again (`XsyevBatched`'s vectors of matrices of ones
//!   were 2e-3 from orthogonal; docs/results/h100/2026-12-07-suites-cusolver-check).
//! - SVD: its polar-decomposition SVD `Xgesvdp` a matrix a call, in double for float32
//!   input too (in float32 it had to perturb some Gaussian matrices), falling back to its
//!   QR-iteration `Xgesvd` for a matrix where `Xgesvdp` had to perturb the input (near
//!   singular: its values would be off by the perturbation), between the `tall` SVD's
//!   scale kernel and a copy and finish kernel (kernels/svd.cu) that keep the same
//!   conventions. Its Jacobi `gesvdj` (what torch and JAX loop over) was 2x slower and
//!   missed the float32 accuracy floor at 1024 (docs/results/h200/2026-12-04-svd-cusolver).
//!
//! The library is loaded at run time, on the first call that would use it
//! (`BATCHLIN_CUSOLVER`, a path, else `libcusolver.so.12`, CUDA 13, or `.11`, CUDA 12):
//! where it is missing the kernels are simply not offered (the registry's predicates say
//! no) and batchlin's own take every shape.

use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys as cu;

use super::driver::{launch, Device, RawStream, Scratch};
use super::eigh::Call;
use crate::{DType, Error, Problem, Real, Result, Variant};

type Handle = *mut c_void;
type Status = i32;
type Ptr = *mut c_void;
/// cusolverDn{S,D}syevd_bufferSize (handle, jobz, uplo, n, A, lda, W, lwork): the float
/// and double forms differ only in their pointers' element type.
type SyevdSize = unsafe extern "C" fn(Handle, i32, i32, i32, Ptr, i32, Ptr, *mut i32) -> Status;
/// cusolverDn{S,D}syevd (handle, jobz, uplo, n, A, lda, W, work, lwork, info).
type Syevd =
    unsafe extern "C" fn(Handle, i32, i32, i32, Ptr, i32, Ptr, Ptr, i32, *mut i32) -> Status;
/// cusolverDnXsyevBatched_bufferSize (handle, params, jobz, uplo, n, type A, A, lda, type
/// W, W, compute type, device bytes, host bytes, batch).
type SyevBatchedSize = unsafe extern "C" fn(
    Handle,
    Ptr,
    i32,
    i32,
    i64,
    i32,
    *const c_void,
    i64,
    i32,
    *const c_void,
    i32,
    *mut usize,
    *mut usize,
    i64,
) -> Status;
/// cusolverDnXsyevBatched (handle, params, jobz, uplo, n, type A, A, lda, type W, W,
/// compute type, device buffer, bytes, host buffer, bytes, info, batch).
type SyevBatched = unsafe extern "C" fn(
    Handle,
    Ptr,
    i32,
    i32,
    i64,
    i32,
    Ptr,
    i64,
    i32,
    Ptr,
    i32,
    Ptr,
    usize,
    Ptr,
    usize,
    *mut i32,
    i64,
) -> Status;

/// The arguments cusolverDnXgesvdp and cusolverDnXgesvd share up to the compute type,
/// after (handle, params): (jobz, econ) or (jobu, jobvt), then m, n, type A, A, lda,
/// type S, S, type U, U, ldu, type V, V (Xgesvd: V^T), ldv, compute type.
macro_rules! svd_fn {
    ($($tail:ty),*) => {
        unsafe extern "C" fn(
            Handle, Ptr, i32, i32, i64, i64, i32, Ptr, i64, i32, Ptr, i32, Ptr, i64, i32, Ptr,
            i64, i32, $($tail),*
        ) -> Status
    };
}
/// bufferSize: device bytes, host bytes.
type SvdSize = svd_fn!(*mut usize, *mut usize);
/// Xgesvd: device buffer, bytes, host buffer, bytes, info.
type Gesvd = svd_fn!(Ptr, usize, Ptr, usize, *mut i32);
/// Xgesvdp: as Xgesvd, then the perturbation it added (host memory).
type Gesvdp = svd_fn!(Ptr, usize, Ptr, usize, *mut i32, *mut f64);

/// The cuSOLVER entry points used, resolved once.
struct Lib {
    _lib: libloading::Library,
    create: unsafe extern "C" fn(*mut Handle) -> Status,
    destroy: unsafe extern "C" fn(Handle) -> Status,
    destroy_params: unsafe extern "C" fn(Ptr) -> Status,
    set_stream: unsafe extern "C" fn(Handle, RawStream) -> Status,
    /// (bufferSize, syevd) for float and for double.
    syevd: [(SyevdSize, Syevd); 2],
    create_params: unsafe extern "C" fn(*mut Ptr) -> Status,
    /// Batched eigh (cuSOLVER 11.7, CUDA 12.6, on), every matrix of a batch in one call;
    /// None in older libraries, which loop over syevd.
    syev_batched: Option<(SyevBatchedSize, SyevBatched)>,
    /// The SVDs: (Xgesvdp's bufferSize, Xgesvdp), (Xgesvd's, Xgesvd) (cuSOLVER 11.1, CUDA
    /// 11.2, on; None keeps eigh working on a library that lacks them).
    svd: Option<((SvdSize, Gesvdp), (SvdSize, Gesvd))>,
}

// SAFETY: function pointers into a library kept loaded for the process's life.
unsafe impl Send for Lib {}
unsafe impl Sync for Lib {}

const NAMES: &[&str] = &["libcusolver.so.12", "libcusolver.so.11", "libcusolver.so"];

fn lib() -> std::result::Result<&'static Lib, &'static str> {
    static LIB: OnceLock<std::result::Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(|| {
        // SAFETY: loading cuSOLVER runs its initialisers only; the symbols are looked up
        // by their documented names and C signatures.
        unsafe {
            // BATCHLIN_CUSOLVER names the file (the Python package sets it to the copy
            // pip-installed PyTorch and CuPy bring); else the loader's path.
            let named = std::env::var_os("BATCHLIN_CUSOLVER");
            let lib = named
                .iter()
                .map(std::path::PathBuf::from)
                .chain(NAMES.iter().map(std::path::PathBuf::from))
                .find_map(|n| libloading::Library::new(n).ok())
                .ok_or_else(|| {
                    format!(
                        "no cuSOLVER library ({}) on the loader's path, nor at \
                         BATCHLIN_CUSOLVER",
                        NAMES.join(", ")
                    )
                })?;
            macro_rules! sym {
                ($n:literal) => {
                    *lib.get($n)
                        .map_err(|e| format!("cuSOLVER lacks {}: {e}", stringify!($n)))?
                };
            }
            Ok(Lib {
                create: sym!(b"cusolverDnCreate\0"),
                destroy: sym!(b"cusolverDnDestroy\0"),
                destroy_params: sym!(b"cusolverDnDestroyParams\0"),
                set_stream: sym!(b"cusolverDnSetStream\0"),
                syevd: [
                    (
                        sym!(b"cusolverDnSsyevd_bufferSize\0"),
                        sym!(b"cusolverDnSsyevd\0"),
                    ),
                    (
                        sym!(b"cusolverDnDsyevd_bufferSize\0"),
                        sym!(b"cusolverDnDsyevd\0"),
                    ),
                ],
                create_params: sym!(b"cusolverDnCreateParams\0"),
                syev_batched: lib
                    .get(b"cusolverDnXsyevBatched_bufferSize\0")
                    .and_then(|a| Ok((*a, *lib.get(b"cusolverDnXsyevBatched\0")?)))
                    .ok(),
                svd: (|| -> std::result::Result<_, libloading::Error> {
                    Ok((
                        (
                            *lib.get(b"cusolverDnXgesvdp_bufferSize\0")?,
                            *lib.get(b"cusolverDnXgesvdp\0")?,
                        ),
                        (
                            *lib.get(b"cusolverDnXgesvd_bufferSize\0")?,
                            *lib.get(b"cusolverDnXgesvd\0")?,
                        ),
                    ))
                })()
                .ok(),
                _lib: lib,
            })
        }
    })
    .as_ref()
    .map_err(|e| e.as_str())
}

/// cuSOLVER's first computation of a kind in a process loads that kind's kernels (CUDA's
/// lazy module loading; libcusolver ships SASS for every architecture, nothing is
/// compiled): 105-199 ms beyond a warm call on the H200 (docs/results/h200/2026-12-04-qr-
/// no-info-scratch), 62-188 ms for torch.linalg.eigh's own first call on an H100
/// (docs/results/h100/2026-12-06-variants-first-call). The planner's price for it.
pub(crate) const FIRST_USE_US: f64 = 150_000.0;

/// The kinds of cuSOLVER computation whose kernels load apart: eigh by type, batched or
/// one matrix (`syevd`), and the SVD (always in double).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Eigh { f64_: bool, one: bool },
    Svd,
}

impl Kind {
    pub(crate) fn of(p: &Problem) -> Kind {
        match p.op() {
            crate::Op::Svd => Kind::Svd,
            _ => Kind::Eigh {
                f64_: p.dtype == DType::F64,
                one: p.batch == 1,
            },
        }
    }
}

/// Per device and kind: whether it has run in this process, and the time the planner's
/// other choices have cost so far while it had not (`cold_detour`).
static FIRST_USE: Mutex<Vec<(usize, Kind, Option<f64>)>> = Mutex::new(Vec::new());

/// Records that cuSOLVER ran a computation of `kind` on device `ordinal` (its kernels are
/// loaded from now on); true where it was the first.
pub(crate) fn ran(ordinal: usize, kind: Kind) -> bool {
    let mut v = FIRST_USE.lock().unwrap_or_else(|e| e.into_inner());
    match v.iter_mut().find(|x| x.0 == ordinal && x.1 == kind) {
        Some(x) => x.2.take().is_some(),
        None => {
            v.push((ordinal, kind, None));
            true
        }
    }
}

/// How many first computations of a kind cuSOLVER has run in this process: a timing
/// whose call raised it paid cuSOLVER's load (`FIRST_USE_US`), which is no time of the
/// call's shape.
pub(crate) fn first_uses() -> usize {
    // An entry's `None` is its kind having run, which happens once.
    let v = FIRST_USE.lock().unwrap_or_else(|e| e.into_inner());
    v.iter().filter(|x| x.2.is_none()).count()
}

/// Whether a call the planner would send to cuSOLVER, which has not yet run `kind` on
/// device `ordinal` in this process, goes to the planner's next choice instead, which
/// costs `extra_us` more a call: yes while the extra time of all such detours, this one
/// included, stays under cuSOLVER's first use (`FIRST_USE_US`); the call that would pass
/// it goes to cuSOLVER and pays the load. A rent-or-buy rule: at worst about twice the
/// better of always and never loading it, and a first call no slower than the next
/// choice, where that choice is close.
///
/// `extra_us` is asked only while cuSOLVER is cold (None: no next choice).
pub(crate) fn cold_detour(
    ordinal: usize,
    kind: Kind,
    extra_us: impl FnOnce() -> Option<f64>,
) -> bool {
    let mut v = FIRST_USE.lock().unwrap_or_else(|e| e.into_inner());
    let i = match v.iter().position(|x| x.0 == ordinal && x.1 == kind) {
        Some(i) => i,
        None => {
            v.push((ordinal, kind, Some(0.0)));
            v.len() - 1
        }
    };
    let Some(spent) = &mut v[i].2 else {
        return false;
    };
    match extra_us() {
        Some(x) if *spent + x.max(0.0) < FIRST_USE_US => {
            *spent += x.max(0.0);
            true
        }
        _ => false,
    }
}

/// Whether cuSOLVER could be loaded (why not, otherwise).
pub(crate) fn availability() -> std::result::Result<(), &'static str> {
    lib().map(|_| ())
}

/// The largest n it takes: cuSOLVER's int workspace sizes (about 2n^2 elements).
const MAX_N: usize = 16_384;

pub(crate) fn supports_eigh(p: &Problem) -> bool {
    p.m == p.n && p.n <= MAX_N && availability().is_ok()
}

/// The eigh shapes the rules (a GPU without a cost table) send to cuSOLVER rather than
/// `block`. One matrix (`syevd`): from n = 192 in float32, 128 in float64. A batch
/// (`XsyevBatched`, whose time jumps past n = 256: float32 2x258x258 27.8 ms against
/// 4x256x256's 2.7): float32 with eigenvectors 192-256 below 64 matrices and from 720,
/// float32 values alone from 950; float64 128-144 and from 576.
/// `block` against `cusolver`, ms: on the H200 (2026-12-04,
/// docs/results/h200/2026-12-04-eigh-fast-path) float32 1024x160x160 11.1 / 20.6,
/// 512x192x192 12.9 / 12.6, float64 1024x96x96 6.1 / 9.0, 1024x128x128 17.3 / 13.0; on an
/// H100 (`batchlin tune`'s held-out shapes, docs/results/h100/2026-12-06-full-tune,
/// 2026-12-06-tune-routing, 2026-12-07-check-tables) float32 4x289x289 6.5 / 26.9,
/// 6x351x351 11.5 / 27.9, float64 228x147x147 5.2 / 14.5, 48x286x286 12.3 / 22.3,
/// 2x605x605 65.5 / 44.2; 1x354x354 float32 11.6 / 3.4. Since `block` tridiagonalises by
/// panels where A is in global memory (version 5; the H100's tune grid,
/// docs/results/h100/2026-12-07-eigh-panels, cuSOLVER's time over `block`'s): float32
/// eigh at 256 0.77 / 0.83 / 1.00 / 1.19 for 4 / 16 / 64 / 256 matrices (256x256x256
/// 8.0 ms against 9.5 forced), at 512 1.29-1.36, at 724 0.98, 16x1024 0.52; eigvalsh at
/// 724 1.70, 16x1024 0.87; float64 at 256 1.24-1.57, 362 1.16-1.27, 512 0.87-0.92.
pub(crate) fn prefer_eigh(p: &Problem) -> bool {
    let f32_ = p.dtype == DType::F32;
    if p.batch <= 1 {
        return p.n >= if f32_ { 192 } else { 128 };
    }
    let vectors = p.variant == Variant::Eigh;
    match (f32_, vectors) {
        (true, true) => ((192..=256).contains(&p.n) && p.batch < 64) || p.n >= 720,
        (true, false) => p.n >= 950,
        (false, _) => (128..=144).contains(&p.n) || p.n >= 576,
    }
}

/// Any m x n (the tall orientation goes in), up to the size eigh takes.
pub(crate) fn supports_svd(p: &Problem) -> bool {
    p.m.max(p.n) <= MAX_N && lib().is_ok_and(|l| l.svd.is_some())
}

/// The SVD shapes the planner sends to cuSOLVER: a few large matrices, which a block a
/// matrix (`bidiag`) runs on a few of the GPU's SMs for long. `bidiag`'s time is flat in
/// the batch up to about a matrix an SM, cuSOLVER's grows with it, so cuSOLVER wins below
/// the ratio of `bidiag`'s time to its own for one matrix. With `bidiag` version 3 (its
/// panels in global memory) that ratio, on an H100 (the 2026-12-07 table,
/// docs/results/h100/2026-12-07-svd-panels), at 256 / 512 / 1024 columns: thin factors
/// float32 1.3 / 2.6 / 8.2, float64 2.0 / 4.1 / 9.7; values float32 0.9 / 1.7 / 4.2,
/// float64 1.6 / 2.4 / 5.0. From 256 columns, up to q^1.5 / 4096 matrices with vectors
/// (1 of 256, 2 of 512, 8 of 1024), q^1.5 / 8192 for values (0, 1, 4). (Before version
/// 3: q^2 / 16384, from the H200's 2026-12-04 times, docs/results/h200/2026-12-04-svd-fast-path.)
///
/// Full factors of a non-square matrix, which only `jacobi` takes among batchlin's kernels
/// (beyond `warp`'s 64 rows), go to cuSOLVER from 128 rows (the longer side) up to
/// p^2 / 2048 matrices: `jacobi` forms the p x p U and its time grows about as p^2.4,
/// cuSOLVER's by 0.4-5 ms a matrix (H200, `batchlin tune`'s held-out shapes, 2026-12-05,
/// docs/results/h200/2026-12-05-tune-first, `jacobi` / `cusolver` in ms: float32 3x462x24
/// 118 / 3.3, 2x413x219 130 / 9.5, float64 12x47x669 260 / 29.5; below 128 rows `jacobi`
/// wins: 16x5x87 2.1 / 6.9, float64 5x14x60 0.96 / 3.1).
pub(crate) fn prefer_svd(p: &Problem) -> bool {
    let (pp, q) = (p.m.max(p.n), p.m.min(p.n));
    let per = if p.variant == Variant::Svdvals {
        8192.0
    } else {
        4096.0
    };
    let few_large = q >= 256 && p.batch as f64 * per <= (q as f64).powf(1.5);
    let full_rect = p.variant == Variant::SvdFull && pp != q;
    few_large || (full_rect && pp >= 128 && p.batch.saturating_mul(2048) <= pp * pp)
}

/// The SVD of `batch` column-major m x n matrices (m >= n) at `a` (lda m, one after
/// another; left as they were), a call each, on `stream` of device `ordinal`: S (n a
/// matrix, descending) at `s`, and with `vectors` U (m x ucols, ld m; ucols n for `econ`,
/// else m) at `u` and V (n x n, ld n) at `v`; cuSOLVER's info a matrix (0, or not
/// converged) at `dinfo`, and at `vt` a word a matrix, 1 where V holds V^T (the matrix
/// went to `Xgesvd`), else 0. A matrix goes to `Xgesvdp`
/// first; where it had to perturb the input by more than `tol` (absolute: the caller has
/// scaled max|a| into [0.5, 1)), it goes to `Xgesvd`. `Xgesvdp` returns that
/// perturbation in host memory, so this waits for each matrix.
///
/// # Safety
/// The pointers are device memory of that device, of the sizes above; its context is
/// current on this thread and `stream` belongs to it.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn gesvdp<T: Real>(
    ordinal: usize,
    stream: RawStream,
    (batch, m, n): (usize, usize, usize),
    vectors: bool,
    econ: bool,
    tol: f64,
    [a, s, u, v, dinfo, vt]: [u64; 6],
) -> Result<()> {
    let lib = lib().map_err(|e| Error::Unavailable(e.into()))?;
    let ((psize, gesvdp), (qsize, gesvd)) = lib
        .svd
        .ok_or_else(|| Error::Unavailable("this cuSOLVER library has no Xgesvdp".into()))?;
    let es = std::mem::size_of::<T>();
    let dt = if es == 8 { 1 } else { 0 }; // CUDA_R_64F, CUDA_R_32F
    let ucols = if econ { n } else { m };
    let mut hs = HANDLES.lock().unwrap_or_else(|e| e.into_inner());
    let x = handles(&mut hs, lib, ordinal, stream)?;
    let (h, params) = (x.handle as Handle, x.params as Ptr);
    let (mi, ni) = (m as i64, n as i64);
    let (jobz, econ) = (vectors as i32, econ as i32);
    // Xgesvd: U's first n columns ('S') or all m ('A'), V^T whole ('A' = 'S' for m >= n).
    let job = |c: u8| (if vectors { c } else { b'N' }) as i32;
    let (jobu, jobvt) = (job(if econ == 1 { b'S' } else { b'A' }), job(b'A'));
    let mut sc = Scratch::new(stream);
    // Both solvers overwrite A: each works on a copy.
    let w = sc.alloc(m * n * es)?;
    // Values alone still get U and V buffers (one matrix's, reused): Xgesvdp faulted
    // inside cuSOLVER on null U and V with jobz = no vectors (H200, CUDA 13.0).
    let (u, v, u_elems, v_elems) = if vectors {
        (u, v, m * ucols, n * n)
    } else {
        (sc.alloc(m * ucols * es)?, sc.alloc(n * n * es)?, 0, 0)
    };
    // The arguments both solvers and their bufferSize calls share (`svd_fn`): the two
    // job flags, then A (the copy), S, U and V, then each call's own tail.
    macro_rules! call {
        ($f:expr, $j1:expr, $j2:expr, $s:expr, $u:expr, $v:expr; $($tail:expr),*) => {
            $f(h, params, $j1, $j2, mi, ni, dt, w as Ptr, mi, dt, $s as Ptr, dt, $u as Ptr,
               mi, dt, $v as Ptr, ni, dt, $($tail),*)
        };
    }
    let (mut pd, mut ph, mut qd, mut qh) = (0usize, 0usize, 0usize, 0usize);
    check(
        call!(psize, jobz, econ, s, u, v; &mut pd, &mut ph),
        "cusolverDnXgesvdp_bufferSize",
    )?;
    check(
        call!(qsize, jobu, jobvt, s, u, v; &mut qd, &mut qh),
        "cusolverDnXgesvd_bufferSize",
    )?;
    let dwork = sc.alloc(pd.max(qd).max(1))?;
    let mut hwork = vec![0u8; ph.max(qh).max(1)];
    let at = |base: u64, i: usize, elems: usize| base + (i * elems * es) as u64;
    super::driver::zero_words(vt, batch, stream)?;
    for i in 0..batch {
        let (ui, vi) = (at(u, i, u_elems), at(v, i, v_elems));
        let (si, info) = (at(s, i, n), dinfo + 4 * i as u64);
        super::driver::copy_on_device(w, at(a, i, m * n), m * n * es, stream)?;
        let mut err = 0f64;
        let (work, hw) = (dwork as Ptr, hwork.as_mut_ptr().cast());
        check(
            call!(gesvdp, jobz, econ, si, ui, vi; work, pd, hw, ph, info as *mut i32, &mut err),
            "cusolverDnXgesvdp",
        )?;
        if err.is_nan() || err > tol {
            super::driver::copy_on_device(w, at(a, i, m * n), m * n * es, stream)?;
            check(
                call!(gesvd, jobu, jobvt, si, ui, vi; work, qd, hw, qh, info as *mut i32),
                "cusolverDnXgesvd",
            )?;
            super::driver::fill_words(vt + 4 * i as u64, 1, 1, stream)?;
        }
    }
    if ph.max(qh) > 0 {
        // A host workspace must outlive the work that reads it.
        super::driver::check(cu::cuStreamSynchronize(stream), "cuStreamSynchronize")?;
    }
    ran(ordinal, Kind::Svd);
    Ok(())
}

fn check(s: Status, what: &str) -> Result<()> {
    match s {
        0 => Ok(()),
        2 => Err(Error::OutOfMemory(format!(
            "{what}: CUSOLVER_STATUS_ALLOC_FAILED"
        ))),
        s => Err(Error::Unavailable(format!(
            "{what} failed: cuSOLVER status {s}"
        ))),
    }
}

/// A device's cuSOLVER objects, as addresses: the handle and the 64-bit API's params.
struct Handles {
    ordinal: usize,
    handle: usize,
    params: usize,
}

/// One set of handles a device (made on first use in that device's context, kept for
/// the process), behind a lock: a handle is not for two threads at once, and the lock
/// is held while a call's work is queued.
static HANDLES: Mutex<Vec<Handles>> = Mutex::new(Vec::new());

/// The handles of device `ordinal`, made on its first call, bound to `stream`.
///
/// # Safety
/// The device's context is current on this thread and `stream` belongs to it.
unsafe fn handles<'a>(
    hs: &'a mut Vec<Handles>,
    lib: &Lib,
    ordinal: usize,
    stream: RawStream,
) -> Result<&'a mut Handles> {
    let at = match hs.iter().position(|x| x.ordinal == ordinal) {
        Some(i) => i,
        None => {
            let (mut h, mut p): (Handle, Ptr) = (std::ptr::null_mut(), std::ptr::null_mut());
            check((lib.create)(&mut h), "cusolverDnCreate")?;
            check((lib.create_params)(&mut p), "cusolverDnCreateParams")?;
            if hs.is_empty() {
                libc::atexit(release_handles);
            }
            hs.push(Handles {
                ordinal,
                handle: h as usize,
                params: p as usize,
            });
            hs.len() - 1
        }
    };
    let x = &mut hs[at];
    check(
        (lib.set_stream)(x.handle as Handle, stream),
        "cusolverDnSetStream",
    )?;
    Ok(x)
}

/// The handles destroyed at exit, so that their device memory is not reported leaked
/// (compute-sanitizer's leak check). Registered after cuSOLVER loaded, so that it runs
/// before cuSOLVER's own exit handlers; nothing in a forked child, or where a call
/// holds the lock.
extern "C" fn release_handles() {
    if crate::fork::cuda_forked() {
        return;
    }
    let (Ok(lib), Ok(mut hs)) = (lib(), HANDLES.try_lock()) else {
        return;
    };
    for x in hs.drain(..) {
        // SAFETY: made by cusolverDnCreate / CreateParams, used by no one after this.
        unsafe {
            (lib.destroy_params)(x.params as Ptr);
            (lib.destroy)(x.handle as Handle);
        }
    }
}

/// Mirrors `struct CusEighArgs` in kernels/cusolver.cu.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
struct CusEighArgs {
    a: u64,
    a_bs: i64,
    a_rs: i64,
    a_cs: i64,
    w: u64,
    w_bs: i64,
    w_cs: i64,
    v: u64,
    v_bs: i64,
    v_rs: i64,
    v_cs: i64,
    info: u64,
    work: u64,
    wwork: u64,
    scale: u64,
    mx: u64,
    dinfo: u64,
    acopy: u64,
    probe: u64,
    acc: u64,
    redo: u64,
    b0: i32,
    n: i32,
    lower: i32,
}

/// Scratch for the matrices of one chunk (work matrices and values): the batch is split
/// into chunks of this size.
const CHUNK_BYTES: usize = 1 << 30;

/// The check's probe vectors and rows a block (kernels/cusolver.cu `BL_CUS_PROBES`,
/// `BL_CUS_CHECK_ROWS`).
const PROBES: usize = 4;
const CHECK_ROWS: usize = 32;
/// The check's sums a matrix (kernels/cusolver.cu `acc`): three doubles and a counter.
const CHECK_ACC_BYTES: usize = 4 * 8;

/// The most matrices one `XsyevBatched` call is given: on the H200 (CUDA 13.0) it failed
/// with status 7 (internal error) at 65536 matrices of 2x2 and 8x8 (`batchlin tune`,
/// 2026-12-05, docs/results/h200/2026-12-05-tune-first), as a grid dimension of 65535
/// would.
const MAX_BATCHED: usize = 32_768;

/// eigh of `c` through cuSOLVER, on `stream` of device `dev` (ordinal `ordinal`).
///
/// # Safety
/// As `eigh::run`: `c`'s matrices are device memory of `dev` covering their layouts, and
/// `stream` belongs to its context, current on this thread.
pub(crate) unsafe fn run_eigh<T: Real>(
    dev: &Device,
    ordinal: usize,
    stream: RawStream,
    c: &Call,
) -> Result<()> {
    let lib = lib().map_err(|e| Error::Unavailable(e.into()))?;
    let (n, batch) = (c.n, c.batch);
    let es = std::mem::size_of::<T>();
    let f64_ = es == 8;
    let (tn, ct) = super::qr::tname::<T>();
    let step = |name: &str| {
        dev.function(
            &format!("cus_eigh_{name}_{tn}"),
            &format!("BL_CUS_EIGH_{}({tn}, {ct})", name.to_uppercase()),
            0,
        )
    };
    let (scale, pack, unpack) = (step("scale")?, step("pack")?, step("unpack")?);
    // With vectors, each matrix's are checked before unpack and recomputed by `block` where
    // they miss the accuracy floor (kernels/cusolver.cu `cus_eigh_check`).
    let check_vectors = c.v.is_some();
    let check_steps = if check_vectors {
        Some((step("probe")?, step("check")?))
    } else {
        None
    };
    // Tiles a matrix (kernels/cusolver.cu: BL_CUS_SCALE_TILE, BL_CUS_TILE).
    let (scale_tiles, tiles) = (n.div_ceil(64), n.div_ceil(32));
    let mut hs = HANDLES.lock().unwrap_or_else(|e| e.into_inner());
    let x = handles(&mut hs, lib, ordinal, stream)?;
    let (h, params) = (x.handle as Handle, x.params as Ptr);
    let jobz = c.v.is_some() as i32;
    let (ni, lower) = (n as i32, 0); // the work matrix is full: either triangle
    let mut lwork = 0i32;
    let (syevd_size, syevd) = lib.syevd[f64_ as usize];
    let null = std::ptr::null_mut();
    check(
        syevd_size(h, jobz, lower, ni, null, ni, null, &mut lwork),
        "cusolverDn(S|D)syevd_bufferSize",
    )?;
    let checked = if check_vectors {
        n * n * es + 2 * PROBES * n * 8 + CHECK_ACC_BYTES
    } else {
        0
    };
    let per = (n * n + n) * es + 16 + checked;
    let chunk = (CHUNK_BYTES / per).clamp(1, batch).min(MAX_BATCHED);
    let mut sc = Scratch::new(stream);
    let work = sc.alloc(chunk * n * n * es)?;
    let wwork = sc.alloc(chunk * n * es)?;
    let ints = sc.alloc(chunk * 2 * 4)?;
    let mx = sc.alloc(chunk * 8)?;
    let solver_work = sc.alloc(lwork.max(1) as usize * es)?;
    let (acopy, probe, acc, redo) = if check_vectors {
        let redo = sc.alloc(batch * 4)?;
        super::driver::zero_words(redo, batch, stream)?;
        let acopy = sc.alloc(chunk * n * n * es)?;
        let probe = sc.alloc(chunk * 2 * PROBES * n * 8)?;
        (acopy, probe, sc.alloc(chunk * CHECK_ACC_BYTES)?, redo)
    } else {
        (0, 0, 0, 0)
    };
    // The batched call's workspaces, for a full chunk (a shorter last chunk needs less).
    let dt = if f64_ { 1 } else { 0 }; // CUDA_R_64F, CUDA_R_32F
    let mut batched_work = match lib.syev_batched {
        Some((size, _)) if chunk > 1 => {
            let (mut dbytes, mut hbytes) = (0usize, 0usize);
            check(
                size(
                    h,
                    params,
                    jobz,
                    lower,
                    n as i64,
                    dt,
                    std::ptr::null(),
                    n as i64,
                    dt,
                    std::ptr::null(),
                    dt,
                    &mut dbytes,
                    &mut hbytes,
                    chunk as i64,
                ),
                "cusolverDnXsyevBatched_bufferSize",
            )?;
            // Host workspace, if the library asks for any, lives as long as the call.
            Some(((sc.alloc(dbytes)?, dbytes), vec![0u8; hbytes]))
        }
        _ => None,
    };
    let v = c.v.unwrap_or_default();
    let mut args = CusEighArgs {
        a: c.a.ptr,
        a_bs: c.a.bs,
        a_rs: c.a.rs,
        a_cs: c.a.cs,
        w: c.w.ptr,
        w_bs: c.w.bs,
        w_cs: c.w.cs,
        v: v.ptr,
        v_bs: v.bs,
        v_rs: v.rs,
        v_cs: v.cs,
        info: c.info,
        work,
        wwork,
        scale: ints,
        mx,
        dinfo: ints + (chunk * 4) as u64,
        acopy,
        probe,
        acc,
        redo,
        n: ni,
        lower: c.lower as i32,
        b0: 0,
    };
    let mut b0 = 0;
    while b0 < batch {
        let cnt = chunk.min(batch - b0);
        args.b0 = b0 as i32;
        super::driver::zero_words(mx, cnt * 2, stream)?;
        let chunk_y = cnt as u32;
        launch(
            scale,
            ((scale_tiles * scale_tiles) as u32, chunk_y),
            256,
            0,
            stream,
            &args,
        )?;
        launch(
            pack,
            ((tiles * tiles) as u32, chunk_y),
            256,
            0,
            stream,
            &args,
        )?;
        match lib.syev_batched {
            Some((_, syev)) if cnt > 1 => {
                let (d, hb) = batched_work.as_mut().expect("sized with the batched call");
                check(
                    syev(
                        h,
                        params,
                        jobz,
                        lower,
                        n as i64,
                        dt,
                        work as Ptr,
                        n as i64,
                        dt,
                        wwork as Ptr,
                        dt,
                        d.0 as Ptr,
                        d.1,
                        hb.as_mut_ptr().cast(),
                        hb.len(),
                        args.dinfo as *mut i32,
                        cnt as i64,
                    ),
                    "cusolverDnXsyevBatched",
                )?;
            }
            _ => {
                for i in 0..cnt {
                    let a = (work + (i * n * n * es) as u64) as Ptr;
                    let w = (wwork + (i * n * es) as u64) as Ptr;
                    let info = (args.dinfo + (i * 4) as u64) as *mut i32;
                    check(
                        syevd(
                            h,
                            jobz,
                            lower,
                            ni,
                            a,
                            ni,
                            w,
                            solver_work as Ptr,
                            lwork,
                            info,
                        ),
                        "cusolverDn(S|D)syevd",
                    )?;
                }
            }
        }
        if let Some((probe, check)) = check_steps {
            // Tiles of CHECK_ROWS rows a block (kernels/cusolver.cu BL_CUS_CHECK_ROWS).
            let grid = (n.div_ceil(CHECK_ROWS) as u32, chunk_y);
            super::driver::zero_words(acc, cnt * CHECK_ACC_BYTES / 4, stream)?;
            launch(probe, grid, 256, 0, stream, &args)?;
            launch(check, grid, 256, 0, stream, &args)?;
        }
        launch(unpack, (tiles as u32, chunk_y), 256, 0, stream, &args)?;
        b0 += cnt;
    }
    if check_vectors {
        // Every matrix's block returns at once unless its check failed: no host sync.
        super::eigh::run_block::<T>(dev, stream, c, redo)?;
    }
    if batched_work.as_ref().is_some_and(|(_, hb)| !hb.is_empty()) {
        // A host workspace must outlive the work that reads it.
        super::driver::check(cu::cuStreamSynchronize(stream), "cuStreamSynchronize")?;
    }
    let one = batch == 1;
    ran(ordinal, Kind::Eigh { f64_, one });
    Ok(())
}
