//! GPU eigh and eigvalsh (kernels/eigh.cu): the `block` kernel, one block a matrix, the
//! work matrix in shared memory where it fits and in global scratch beyond, so it takes
//! every n (vectors by twisted factorisations where it can vouch for them, else tql2);
//! the `warp` kernel, a warp a matrix in registers (Jacobi), for n up to 32, and
//! `warp-ql` and `warp-bisect` beside it (tridiagonalisation in registers, then tql2 or
//! bisection and twisted factorisations). Their
//! launch, sizing and routing rule are here; docs/proposals/gpu-eigh-svd.md has the design
//! and the measurements.

use super::driver::{launch, Device, RawStream, Scratch};
use super::instantiations as insts;
use super::qr::KMat;
use super::DeviceCaps;
use crate::{DType, Error, Problem, Real, Result, Variant};

/// Mirrors `struct EighArgs` in kernels/eigh.cu.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
struct EighArgs {
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
    work_bs: i64,
    b0: i32,
    n: i32,
    lower: i32,
    ld: i32,
    nmat: i32,
    a_global: i32,
    fast: i32,
    only: u64,
}

/// One eigh call on device memory.
pub(crate) struct Call {
    pub batch: usize,
    pub n: usize,
    pub a: KMat,
    pub lower: bool,
    pub w: KMat,
    /// None: eigenvalues alone.
    pub v: Option<KMat>,
    pub info: u64,
}

/// The work matrices' leading dimension: rows in whole 16-byte vectors (the
/// tridiagonalisation reads them so).
fn ld(n: usize, es: usize) -> usize {
    super::ld_vectors(n, es)
}

/// Elements of T of the work matrix (A, with Q and then Z formed over it).
fn big_elems(n: usize, es: usize) -> usize {
    n * ld(n, es)
}

/// Columns of a panel of the tridiagonalisation in global memory (kernels/eigh.cu
/// `BL_EIGH_PANEL`): its scratch, V and W, holds `2 * PANEL * n` elements after A.
const PANEL: usize = 16;

/// Elements of T a matrix of the fast path's global scratch (kernels/eigh.cu
/// `bl_eigh_fast`): the twisted factorisations' vectors, their orthogonalised copy and
/// X^T X - I, n x n each.
fn fast_elems(n: usize) -> usize {
    3 * n * n
}

/// Bytes of the small vectors (always in shared memory): v and p (padded to whole
/// vectors), d, e, tau, two rotation slots, a reduction buffer, then the messages and the
/// permutation as ints.
fn small_bytes(n: usize, es: usize) -> usize {
    (2 * n.next_multiple_of(16 / es) + 7 * n + 32) * es + (8 + n) * 4
}

/// The thread count: a row a thread up to 512 rows (the kernel's launch bound, which
/// leaves float64 128 registers a thread), rows looped beyond.
fn threads(n: usize) -> usize {
    n.div_ceil(32).clamp(1, 16) * 32
}

/// The largest n the kernel takes (its int indexing of n * n elements).
const MAX_N: usize = 46_000;

pub(crate) fn supports_block(p: &Problem, _caps: &DeviceCaps) -> bool {
    p.m == p.n && p.n <= MAX_N
}

/// Matrices a block of the `warp` kernel: `BL_EIGH_WARPS` warps, 32 / N matrices each.
const WARPS_A_BLOCK: usize = 4;

pub(crate) fn supports_warp(p: &Problem, _caps: &DeviceCaps) -> bool {
    p.m == p.n && warp_size(p.n).is_some()
}

/// `warp-bisect` where `supports_warp` holds and its shared memory fits the device
/// (float64 at N = 32 takes 109 KB a block: more than sm_86, sm_89 and sm_120 allow).
pub(crate) fn supports_warp_bisect(p: &Problem, caps: &DeviceCaps) -> bool {
    let es = if p.dtype == DType::F64 { 8 } else { 4 };
    supports_warp(p, caps)
        && warp_size(p.n).is_some_and(|nw| wql_smem(nw, es, true) <= caps.smem_optin)
}

/// The `warp` kernel's padded size N for n: the smallest instantiation holding it.
fn warp_size(n: usize) -> Option<usize> {
    insts::EIGH_WARP_N.iter().copied().find(|&w| n <= w)
}

/// The CUDA eigh kernels to try first for `p`, fastest first (the planner falls back to
/// registry order, `block`). Measured on an H100 (2026-12-05, batch 4096, ms, `warp` /
/// `warp-bisect` / `block`; docs/results/h100/2026-12-05-eigh-warp-bisect/):
/// - eigh float32: n = 8 0.019 / 0.034 / 0.096, 16 0.070 / 0.076 / 0.199, then 17 0.377 /
///   0.163 / 0.229, 24 0.406 / 0.222 / 0.348, 32 0.432 / 0.290 / 0.512: `warp` up to 16,
///   `warp-bisect` from 17 to 32 (128 matrices of 32x32: 0.108 against 0.109, a tie).
/// - eigvalsh float32: 8 0.018 / 0.020 / 0.052, 12 0.057 / 0.033 / 0.077, 16 0.064 / 0.043 /
///   0.102, 32 0.364 / 0.151 / 0.247: `warp` up to 8, `warp-bisect` from 9 to 32.
/// - float64 (its bisection twice as long, its registers and shared memory twice as
///   many): eigh 8 0.031 / 0.076 / 0.214, 16 0.130 / 0.288 / 0.437, 24 1.130 / 0.831 /
///   0.753, 32 1.006 / 1.101 / 1.097: `warp` up to 16 and from 31 (2026-12-02 on the H200:
///   31 1.06 against `block`'s 1.25), `block` between; eigvalsh `warp` up to 16, `block`
///   from 17 (32: 0.596 against 0.741). `warp-ql` is first at float64 n = 4 and 12, by a
///   fifth (eigh 0.023 against 0.030 and 0.110 against 0.140, eigvalsh 0.020 against 0.029
///   and 0.092 against 0.127; the same in the run of docs/results/h100/2026-12-05-eigh-
///   warp-ql): its loops run to n where Jacobi's run to the padded size, so it takes
///   float64 n up to 4 and from 9 to 12 (5-7 and 13-15 not measured: `warp` as before).
/// - cuSOLVER's eigh where `cusolver::prefer_eigh` says (one matrix from n = 192 in
///   float32 and 128 in float64, batches in narrower ranges; it has the numbers).
pub(crate) fn preference(p: &Problem) -> Vec<&'static str> {
    let n = p.n;
    let first = match (p.variant, p.dtype) {
        (Variant::Eigvalsh, DType::F32) if n <= 8 => Some("warp"),
        (Variant::Eigvalsh, DType::F32) if n <= 32 => Some("warp-bisect"),
        (_, DType::F64) if n <= 4 || (9..=12).contains(&n) => Some("warp-ql"),
        (Variant::Eigvalsh, _) if n <= 16 => Some("warp"),
        (Variant::Eigvalsh, _) => None,
        (_, DType::F64) if n <= 16 || (31..=32).contains(&n) => Some("warp"),
        (_, DType::F64) => None,
        _ if n <= 16 => Some("warp"),
        _ if n <= 32 => Some("warp-bisect"),
        _ => None,
    };
    if let Some(k) = first {
        vec![k]
    } else if super::cusolver::prefer_eigh(p) {
        vec!["cusolver"]
    } else {
        Vec::new()
    }
}

/// The kernel arguments of a call, before the launch-specific fields.
fn args(c: &Call, es: usize) -> EighArgs {
    let v = c.v.unwrap_or_default();
    EighArgs {
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
        n: c.n as i32,
        lower: c.lower as i32,
        ld: ld(c.n, es) as i32,
        ..Default::default()
    }
}

/// One eigh call by the kernel `kernel` ("block", "warp", "warp-ql" or "warp-bisect", the
/// registry's names).
pub(crate) unsafe fn run<T: Real>(
    dev: &Device,
    stream: RawStream,
    c: &Call,
    kernel: &str,
) -> Result<()> {
    match kernel {
        "warp" => run_warp::<T>(dev, stream, c, Warp::Jacobi),
        "warp-ql" => run_warp::<T>(dev, stream, c, Warp::Ql),
        "warp-bisect" => run_warp::<T>(dev, stream, c, Warp::Bisect),
        _ => run_block::<T>(dev, stream, c, 0),
    }
}

/// The warp kernels: after Jacobi, the two that tridiagonalise in registers first.
#[derive(Copy, Clone, PartialEq)]
enum Warp {
    Jacobi,
    Ql,
    Bisect,
}

/// Dynamic shared memory of a `warp-ql` or `warp-bisect` block (kernels/eigh.cu
/// `bl_wql_warp_elems`, `bl_wql_warp_ints`), a warp's part: Z (32 (N + 1) elements), seven
/// vectors of N a matrix and N ints a matrix; `warp-bisect` adds two N x N matrices, two
/// vectors of N and 8 ints a matrix.
fn wql_smem(nw: usize, es: usize, bisect: bool) -> usize {
    let mats = 32 / nw;
    let (elems, ints) = if bisect {
        (mats * (2 * nw * nw + 2 * nw), mats * 8)
    } else {
        (0, 0)
    };
    WARPS_A_BLOCK * ((32 * (nw + 1) + 7 * 32 + elems) * es + (32 + ints) * 4)
}

/// One of the warp kernels.
unsafe fn run_warp<T: Real>(dev: &Device, stream: RawStream, c: &Call, kind: Warp) -> Result<()> {
    let (tn, ct) = super::qr::tname::<T>();
    let nw = warp_size(c.n).ok_or_else(|| {
        Error::Argument(format!(
            "the CUDA eigh warp kernels take n up to {}, not {}",
            insts::EIGH_WARP_N.last().copied().unwrap_or(0),
            c.n
        ))
    })?;
    let es = std::mem::size_of::<T>();
    let ((name, inst), smem) = match kind {
        Warp::Jacobi => (insts::eigh_warp_inst(tn, ct, nw), 0),
        Warp::Ql => (insts::eigh_wql_inst(tn, ct, nw), wql_smem(nw, es, false)),
        Warp::Bisect => (insts::eigh_wbis_inst(tn, ct, nw), wql_smem(nw, es, true)),
    };
    let f = dev.function(&name, &inst, smem)?;
    let per_block = WARPS_A_BLOCK * (32 / nw);
    let mut args = args(c, es);
    // One launch: the batch is at most i32::MAX (run_device checks), so the grid fits.
    args.nmat = c.batch as i32;
    launch(
        f,
        (c.batch.div_ceil(per_block) as u32, 1),
        (32 * WARPS_A_BLOCK) as u32,
        smem as u32,
        stream,
        &args,
    )
}

/// The `block` kernel; `only`: 0, or device words a matrix, nonzero for the matrices to
/// compute (the others' outputs are left as they are: cuSOLVER's redone, `cusolver.rs`).
pub(crate) unsafe fn run_block<T: Real>(
    dev: &Device,
    stream: RawStream,
    c: &Call,
    only: u64,
) -> Result<()> {
    let (n, batch) = (c.n, c.batch);
    if n > MAX_N {
        return Err(Error::Argument(format!(
            "the CUDA eigh kernel takes n up to {MAX_N}, not {n}"
        )));
    }
    let es = std::mem::size_of::<T>();
    let small = small_bytes(n, es);
    let big = big_elems(n, es) * es;
    let in_smem = big + small <= dev.smem_optin;
    let smem = if in_smem { big + small } else { small };
    let (tn, ct) = super::qr::tname::<T>();
    let f = dev.function(
        &format!("eigh_block_{tn}"),
        &format!("BL_EIGH_BLOCK({tn}, {ct})"),
        dev.smem_optin,
    )?;
    let mut args = args(c, es);
    // Global work (A and the panels where A does not fit in shared memory, the fast
    // path's scratch with vectors) in chunks of the batch of at most WORK_BYTES.
    let fast = c.v.is_some() && n >= 2;
    let a_work = if in_smem {
        0
    } else {
        big_elems(n, es) + 2 * PANEL * n
    };
    let fast_work = if fast { fast_elems(n) } else { 0 };
    // Whole 16-byte vectors a matrix: the panels' rows are read as vectors.
    let per = (a_work + fast_work).next_multiple_of(16 / es);
    let mut sc = Scratch::new(stream);
    let chunk = if per == 0 {
        batch
    } else {
        (WORK_BYTES / (per * es)).clamp(1, batch)
    };
    if per > 0 {
        args.work = sc.alloc(chunk * per * es)?;
        args.work_bs = per as i64;
    }
    args.a_global = !in_smem as i32;
    args.fast = fast as i32;
    args.only = only;
    let mut b0 = 0;
    while b0 < batch {
        let cnt = chunk.min(batch - b0);
        args.b0 = b0 as i32;
        args.nmat = cnt as i32;
        launch(
            f,
            (cnt as u32, 1),
            threads(n) as u32,
            smem as u32,
            stream,
            &args,
        )?;
        b0 += cnt;
    }
    Ok(())
}

/// Global scratch a launch may use when the work matrices do not fit in shared memory
/// (the batch is split into launches that fit).
pub(crate) const WORK_BYTES: usize = 1 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    /// `warp-bisect` refuses where its shared memory would not fit: float64 at n = 32 on a
    /// device that allows 99 KB a block (an sm_86); float32 there, and both on an H200, fit.
    #[test]
    fn warp_bisect_fits_the_devices_shared_memory() {
        let h200 = DeviceCaps::h200();
        let small = DeviceCaps {
            smem_optin: 101376,
            ..DeviceCaps::h200()
        };
        let p = |dtype, n| Problem::new(Variant::Eigh, dtype, 64, n, n);
        assert!(supports_warp_bisect(&p(DType::F64, 32), &h200));
        assert!(!supports_warp_bisect(&p(DType::F64, 32), &small));
        assert!(supports_warp_bisect(&p(DType::F32, 32), &small));
        assert!(supports_warp_bisect(&p(DType::F64, 16), &small));
        assert!(!supports_warp_bisect(&p(DType::F32, 33), &h200));
        assert_eq!(wql_smem(32, 4, true), 54_912); // ncu read 54.91 KB a block
    }
}
