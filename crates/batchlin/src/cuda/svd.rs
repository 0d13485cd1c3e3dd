//! GPU SVD and svdvals (kernels/svd.cu) on the tall orientation (a wide matrix goes in
//! transposed, by its strides): the `warp` kernel, one-sided Jacobi a warp a matrix in
//! registers, for up to 32 columns (64 rows in float32, 32 in float64); the `bidiag`
//! kernel, Golub-Kahan bidiagonalisation a block a matrix, the vectors by twisted
//! factorisations of its tridiagonal (the bidiagonal QR iteration where values coincide;
//! values alone by bisection), for the rest but full factors of a non-square matrix;
//! the `jacobi` kernel, one-sided Jacobi a block a matrix, the work in shared memory
//! where it fits and in global scratch beyond, which takes every shape; the `tall`
//! composite, QR first (the QR kernels), the SVD of R by the square kernels and U = Q U_R
//! by a batched product, for matrices far from square; `cusolver` for a few large ones.
//! Their launch and sizing are here; docs/proposals/gpu-eigh-svd.md has the design and
//! the measurements.

use super::driver::{launch, Device, Func, RawStream, Scratch};
use super::instantiations as insts;
use super::qr::{GemmArgs, KMat};
use super::{CudaDevice, DeviceCaps};
use crate::plan::{self, Plan};
use crate::problem::{Backend, Options, Variant};
use crate::{Error, Problem, QrMode, Real, Result};

/// Mirrors `struct SvdArgs` in kernels/svd.cu.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
struct SvdArgs {
    a: u64,
    a_bs: i64,
    a_rs: i64,
    a_cs: i64,
    x: u64,
    x_bs: i64,
    x_rs: i64,
    x_cs: i64,
    s: u64,
    s_bs: i64,
    s_cs: i64,
    y: u64,
    y_bs: i64,
    y_rs: i64,
    y_cs: i64,
    info: u64,
    work: u64,
    work_bs: i64,
    b0: i32,
    p: i32,
    q: i32,
    xcols: i32,
    ldu: i32,
    sign_from_v: i32,
    max_sweeps: i32,
    lpp: i32,
    nmat: i32,
    ldv: i32,
    place: i32,
}

/// One SVD call on device memory (A is m x n as the caller gave it).
pub(crate) struct Call {
    pub batch: usize,
    pub m: usize,
    pub n: usize,
    pub a: KMat,
    pub full: bool,
    /// None (with `vh`): singular values alone.
    pub u: Option<KMat>,
    pub s: KMat,
    pub vh: Option<KMat>,
    pub info: u64,
}

/// Sweeps before a matrix is flagged not converged (LAPACK's xGESVJ allows 30; float64
/// needs a few more than float32 to reach its tolerance on hard input).
const MAX_SWEEPS: i32 = 40;

/// The largest p * xcols the kernel's int indexing takes.
const MAX_ELEMS: usize = i32::MAX as usize / 2;

fn dims(p: &Problem, full: bool) -> (usize, usize, usize) {
    let (pp, q) = (p.m.max(p.n), p.m.min(p.n));
    (pp, q, if full { pp } else { q })
}

/// Matrices a block of the `warp` kernel (`BL_SVD_WARPS` in kernels/svd.cu).
const WARP_MATRICES_A_BLOCK: usize = 4;

/// The smallest `warp` instantiation (rows, columns) holding the tall p x q, if any.
fn warp_shape(tn: &str, p: usize, q: usize) -> Option<(usize, usize)> {
    insts::svd_warp_shapes(tn)
        .iter()
        .copied()
        .find(|&(pp, qq)| p <= pp && q <= qq)
}

pub(crate) fn supports_warp(p: &Problem, _caps: &DeviceCaps) -> bool {
    let (pp, q, _) = dims(p, false);
    warp_shape(super::qr::tname_of(p.dtype), pp, q).is_some()
}

/// `tall` computes thin factors and values alone (full_matrices stays with `jacobi`), of
/// a matrix longer than wide: it plans its square step (the q x q R) by the planner, so a
/// square matrix, which would plan itself again, is never its own (a cost table that
/// extrapolated `tall` as the fastest at 1x1024x1024 recursed until the stack or the GPU
/// ran out, H200, 2026-12-05).
pub(crate) fn supports_tall(p: &Problem, _caps: &DeviceCaps) -> bool {
    let (pp, q, _) = dims(p, false);
    p.variant != Variant::SvdFull && pp > q && pp.saturating_mul(q) <= MAX_ELEMS
}

/// The kernels the planner tries first, in order: `cusolver` for a few large matrices
/// (cusolver.rs `prefer_svd`; one 4096x1024 float32 took 37 ms there against 83 through
/// `tall`); `tall` where the matrix is at least `TALL_RATIO` times longer than wide and
/// `warp` does not hold it (QR first then costs less than the Jacobi sweeps over long
/// columns); else the registry's order (`warp` where it fits, then `bidiag`, then
/// `jacobi` for what `bidiag` does not take).
pub(crate) fn preference(p: &Problem) -> Vec<&'static str> {
    let (pp, q, _) = dims(p, false);
    let warp = warp_shape(super::qr::tname_of(p.dtype), pp, q).is_some();
    let mut v = Vec::new();
    if super::cusolver::prefer_svd(p) {
        v.push("cusolver");
    }
    if q >= 2 && pp >= TALL_RATIO * q && !warp {
        // Under 8 columns (to the grid's 32:1) `jacobi` beats `tall` and `bidiag`: an
        // H100's device rows (docs/results/h100/2026-12-06-full-tune), `tall` over
        // `jacobi` median 1.2-2.7x at 2-4 columns, 1.1-1.4x at 6, 0.65-0.81 from 8;
        // held out, float32 4858x92x3 2.10x, float64 values of 521x44x4 1.62x.
        v.push(if q < 8 && pp <= 32 * q {
            "jacobi"
        } else {
            "tall"
        });
    }
    v
}

/// The aspect ratio from which the planner takes `tall`. On the H200 (2026-12-03,
/// docs/results/h200/2026-12-03-svd-tall) `tall` beat `jacobi` from 2:1 (1024x128x64
/// float32 8.0 against 13.0 ms) up to 32:1 (256x2048x64 5.1 against 92); it tied `warp`
/// at 4096x64x16 (0.389 against 0.394 ms), so `warp` keeps what it holds.
const TALL_RATIO: usize = 2;

/// `bidiag` computes thin factors and values (full ones where they are the thin ones: a
/// square matrix), wherever its small vectors fit in shared memory.
pub(crate) fn supports_bidiag(p: &Problem, caps: &DeviceCaps) -> bool {
    let (pp, q, _) = dims(p, false);
    let es = p.dtype.size();
    (p.variant != Variant::SvdFull || pp == q)
        && pp.saturating_mul(q) <= MAX_ELEMS
        && bidiag_small_bytes(pp, q, es) <= caps.smem_optin
}

pub(crate) fn supports_jacobi(p: &Problem, _caps: &DeviceCaps) -> bool {
    let (pp, _, xc) = dims(p, true);
    pp.saturating_mul(xc) <= MAX_ELEMS
}

/// Elements (double) of the work matrices: U (p x xcols, or p x q for values) and V (q x q).
fn big_elems(p: usize, q: usize, xc: usize, vectors: bool) -> usize {
    if vectors {
        p * xc + q * q
    } else {
        p * q
    }
}

/// Bytes of the small vectors: norms, a candidate column, leverages, a reduction buffer,
/// then the permutation, the valid flags and two ints.
fn small_bytes(p: usize, q: usize, xc: usize, es: usize) -> usize {
    (xc + 2 * p + 32) * es + (q + xc + 2) * 4
}

/// Lanes a column pair: about four rows a lane, 4 to 32 lanes (a power of two), so that
/// short columns do not leave most of a warp idle.
fn lanes_per_pair(p: usize) -> usize {
    p.div_ceil(4).next_power_of_two().clamp(4, 32)
}

/// Every pair of a round at once, at most 16 warps.
fn threads(p: usize, q: usize) -> usize {
    (q.div_ceil(2) * lanes_per_pair(p))
        .div_ceil(32)
        .clamp(1, 16)
        * 32
}

/// Bytes of the `bidiag` kernel's small vectors (always in shared memory): two vectors of
/// p (padded to whole 16-byte vectors), d, e, the two reflector scalars, two slots of 6q
/// rotations and a reduction buffer, then the permutation and the messages and flags as
/// ints.
fn bidiag_small_bytes(p: usize, q: usize, es: usize) -> usize {
    (16 * q + 2 * p.next_multiple_of(16 / es) + 32) * es + (q + 21) * 4
}

/// The `bidiag` kernel's threads: a warp for the QR iteration's chain and a row of U or V
/// a thread (p + q rows; p for values alone), 64 to 512.
fn bidiag_threads(p: usize, q: usize, vectors: bool) -> usize {
    let rows = if vectors { p + q } else { p };
    (rows.div_ceil(32) + 1).clamp(2, 16) * 32
}

/// How one kernel is launched: matrices a block, threads, shared memory, matrices a
/// launch, and the global scratch a matrix (elements) where the work does not fit in
/// shared memory.
struct LaunchShape {
    f: Func,
    per_block: usize,
    threads: usize,
    smem: usize,
    chunk: usize,
    work_elems: usize,
}

/// The `jacobi` kernel's launch for the tall p x q with xc columns of work U.
fn jacobi_shape<T: Real>(
    dev: &Device,
    c: &Call,
    p: usize,
    q: usize,
    xc: usize,
) -> Result<LaunchShape> {
    let (m, n, vectors) = (c.m, c.n, c.u.is_some());
    if p.saturating_mul(xc) > MAX_ELEMS {
        return Err(Error::Argument(format!(
            "the CUDA SVD kernel takes up to {MAX_ELEMS} elements a factor; got {m}x{n}"
        )));
    }
    // The work is in double for both types (kernels/svd.cu says why).
    let es = std::mem::size_of::<f64>();
    let small = small_bytes(p, q, xc, es);
    let big = big_elems(p, q, xc, vectors) * es;
    let in_smem = big + small <= dev.smem_optin;
    let smem = if in_smem { big + small } else { small };
    if smem > dev.smem_optin {
        return Err(Error::Argument(format!(
            "the CUDA SVD kernel needs {smem} bytes of shared memory for {m}x{n}"
        )));
    }
    let (tn, ct) = super::qr::tname::<T>();
    let f = dev.function(
        &format!("svd_jacobi_{tn}"),
        &format!("BL_SVD_JACOBI({tn}, {ct})"),
        dev.smem_optin,
    )?;
    let (chunk, work_elems) = if in_smem {
        (c.batch, 0)
    } else {
        (
            (super::eigh::WORK_BYTES / big.max(1)).clamp(1, c.batch),
            big_elems(p, q, xc, vectors),
        )
    };
    Ok(LaunchShape {
        f,
        per_block: 1,
        threads: threads(p, q),
        smem,
        chunk,
        work_elems,
    })
}

/// Steps a panel of the `bidiag` kernel's bidiagonalisation where A is in global memory
/// (kernels/svd.cu `BL_SVD_PANEL`): its scratch, U and X (p rows) and V and Y (q rows) of
/// `PANEL` entries each, holds `2 * PANEL * (p + q)` elements after A.
const PANEL: usize = 16;

/// The `bidiag` kernel's launch for the tall p x q, and where its work lives (`place`:
/// 0 A and V in shared memory, 1 V in global scratch, 2 both there) with their leading
/// dimensions (odd: a thread a row or a column hits distinct banks).
fn bidiag_shape<T: Real>(
    dev: &Device,
    c: &Call,
    p: usize,
    q: usize,
) -> Result<(LaunchShape, i32, usize, usize)> {
    let vectors = c.u.is_some();
    if p.saturating_mul(q) > MAX_ELEMS || (vectors && c.full && p != q) {
        return Err(Error::Argument(format!(
            "the CUDA bidiag SVD kernel takes thin factors or values (full ones of a square \
             matrix), up to {MAX_ELEMS} elements; got {}x{}",
            c.m, c.n
        )));
    }
    let es = std::mem::size_of::<T>();
    let (ldu, ldv) = (super::ld_vectors(p, es), q | 1);
    let small = bidiag_small_bytes(p, q, es);
    // V in shared memory is padded to whole vectors (the small vectors after it aligned).
    let v_elems = (ldv * q).next_multiple_of(16 / es);
    let (a_bytes, v_bytes) = (ldu * q * es, if vectors { v_elems * es } else { 0 });
    // V in global scratch where A and V together would hold an SM to one or two blocks
    // (H200, 2026-12-04: 1024x128x128 float32 26.8 ms with V there, 56.7 with both in
    // shared memory; 1024x96x96 11.7 against 17.4); A too where A alone does not fit.
    let fits = |bytes: usize| small + bytes <= dev.smem_optin;
    let place = if vectors
        && fits(a_bytes + v_bytes)
        && 3 * (small + a_bytes + v_bytes) <= dev.smem_optin
    {
        0
    } else if fits(a_bytes) {
        1
    } else {
        2
    };
    let (smem, work_elems) = match place {
        0 => (small + a_bytes + v_bytes, 0),
        1 => (small + a_bytes, ldv * q),
        _ => (
            small,
            ldu * q + 2 * PANEL * (p + q) + if vectors { ldv * q } else { 0 },
        ),
    };
    // The vectors' fast path (kernels/svd.cu `bl_gk_fast_vectors`): two 2q x q buffers of
    // eigenvectors of the Golub-Kahan tridiagonal and their q x q Gram matrix, after A and V.
    // Whole 16-byte vectors a matrix: the panels' rows are read as vectors.
    let work_elems = (work_elems + if vectors { 5 * q * q } else { 0 }).next_multiple_of(16 / es);
    if smem > dev.smem_optin {
        return Err(Error::Argument(format!(
            "the CUDA bidiag SVD kernel needs {smem} bytes of shared memory for {}x{}",
            c.m, c.n
        )));
    }
    let (tn, ct) = super::qr::tname::<T>();
    let f = dev.function(
        &format!("svd_bidiag_{tn}"),
        &format!("BL_SVD_BIDIAG({tn}, {ct})"),
        dev.smem_optin,
    )?;
    let chunk = if work_elems == 0 {
        c.batch
    } else {
        (super::eigh::WORK_BYTES / (work_elems * es)).clamp(1, c.batch)
    };
    let shape = LaunchShape {
        f,
        per_block: 1,
        threads: bidiag_threads(p, q, vectors),
        smem,
        chunk,
        work_elems,
    };
    Ok((shape, place, ldu, ldv))
}

/// The `warp` kernel's launch for the tall p x q: its smallest instantiation holding it.
fn warp_shape_launch<T: Real>(dev: &Device, c: &Call, p: usize, q: usize) -> Result<LaunchShape> {
    let (tn, ct) = super::qr::tname::<T>();
    let shape = warp_shape(tn, p, q).ok_or_else(|| {
        Error::Argument(format!(
            "the CUDA SVD warp kernel takes up to 32 columns and {} rows in {tn} (after \
             transposing a wide matrix); got {}x{}",
            insts::svd_warp_shapes(tn).last().map_or(0, |s| s.0),
            c.m,
            c.n
        ))
    })?;
    let (name, inst) = insts::svd_warp_inst(tn, ct, shape);
    Ok(LaunchShape {
        f: dev.function(&name, &inst, 0)?,
        per_block: WARP_MATRICES_A_BLOCK,
        threads: 32 * WARP_MATRICES_A_BLOCK,
        smem: 0,
        chunk: c.batch,
        work_elems: 0,
    })
}

/// One SVD call by the kernel `kernel` ("jacobi", "warp" or "bidiag", the registry's names).
pub(crate) unsafe fn run<T: Real>(
    dev: &Device,
    stream: RawStream,
    c: &Call,
    kernel: &str,
) -> Result<()> {
    let (m, n, batch) = (c.m, c.n, c.batch);
    let transpose = m < n;
    let (p, q) = (m.max(n), m.min(n));
    let vectors = c.u.is_some();
    let xc = if vectors && c.full { p } else { q };
    let (mut place, mut ldu, mut ldv, mut work_es) = (0, p, 0, std::mem::size_of::<f64>());
    let shape = match kernel {
        "warp" => warp_shape_launch::<T>(dev, c, p, q)?,
        "bidiag" => {
            let (shape, pl, lu, lv) = bidiag_shape::<T>(dev, c, p, q)?;
            (place, ldu, ldv, work_es) = (pl, lu, lv, std::mem::size_of::<T>());
            shape
        }
        _ => jacobi_shape::<T>(dev, c, p, q, xc)?,
    };
    let (u, vh) = (c.u.unwrap_or_default(), c.vh.unwrap_or_default());
    // Tall: work U -> U, work V -> Vh^T. Wide (A^T decomposed): work U -> Vh^T, work V -> U.
    let (a, x, y) = if transpose {
        (t(c.a), t(vh), u)
    } else {
        (c.a, u, t(vh))
    };
    let mut args = SvdArgs {
        a: a.ptr,
        a_bs: a.bs,
        a_rs: a.rs,
        a_cs: a.cs,
        x: if vectors { x.ptr } else { 0 },
        x_bs: x.bs,
        x_rs: x.rs,
        x_cs: x.cs,
        s: c.s.ptr,
        s_bs: c.s.bs,
        s_cs: c.s.cs,
        y: y.ptr,
        y_bs: y.bs,
        y_rs: y.rs,
        y_cs: y.cs,
        info: c.info,
        p: p as i32,
        q: q as i32,
        xcols: xc as i32,
        ldu: ldu as i32,
        sign_from_v: transpose as i32,
        max_sweeps: MAX_SWEEPS,
        lpp: lanes_per_pair(p) as i32,
        ldv: ldv as i32,
        place,
        ..Default::default()
    };
    let mut sc = Scratch::new(stream);
    if shape.work_elems > 0 {
        args.work = sc.alloc(shape.chunk * shape.work_elems * work_es)?;
        args.work_bs = shape.work_elems as i64;
    }
    let mut b0 = 0;
    while b0 < batch {
        let cnt = shape.chunk.min(batch - b0);
        args.b0 = b0 as i32;
        args.nmat = cnt as i32;
        launch(
            shape.f,
            (cnt.div_ceil(shape.per_block) as u32, 1),
            shape.threads as u32,
            shape.smem as u32,
            stream,
            &args,
        )?;
        b0 += cnt;
    }
    Ok(())
}

/// Mirrors `struct SvdTallArgs` in kernels/svd.cu.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
struct SvdTallArgs {
    a: u64,
    a_bs: i64,
    a_rs: i64,
    a_cs: i64,
    w: u64,
    mx: u64,
    s: u64,
    s_bs: i64,
    s_cs: i64,
    u: u64,
    u_bs: i64,
    u_rs: i64,
    u_cs: i64,
    vh: u64,
    vh_bs: i64,
    vh_rs: i64,
    vh_cs: i64,
    info: u64,
    batch: i32,
    p: i32,
    q: i32,
    solver_copy: i32,
    u_rows: i32,
    u_cols: i32,
    vh_cols: i32,
}

/// Mirrors `struct SvdCusArgs` in kernels/svd.cu.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
struct SvdCusArgs {
    mx: u64,
    dinfo: u64,
    sw: u64,
    s: u64,
    s_bs: i64,
    s_cs: i64,
    us: u64,
    us_bs: i64,
    us_rs: i64,
    us_cs: i64,
    u: u64,
    u_bs: i64,
    u_rs: i64,
    u_cs: i64,
    vs: u64,
    vs_bs: i64,
    vs_rs: i64,
    vs_cs: i64,
    vh: u64,
    vh_bs: i64,
    vh_rs: i64,
    vh_cs: i64,
    info: u64,
    vt: u64,
    v_in_u: i32,
    batch: i32,
    q: i32,
    ur: i32,
    uc: i32,
    vr: i32,
    vc: i32,
}

/// The transposed view.
fn t(k: KMat) -> KMat {
    KMat {
        rs: k.cs,
        cs: k.rs,
        ..k
    }
}

/// A row-major r x c matrix a batch entry at `ptr`.
fn dense(ptr: u64, r: usize, c: usize) -> KMat {
    KMat {
        ptr,
        bs: (r * c) as i64,
        rs: c as i64,
        cs: 1,
    }
}

/// The plan the rules give a step of a composite kernel.
fn step_plan(dev: &CudaDevice, p: Problem) -> Result<Plan> {
    let (kernel, params) = plan::cuda_kernel(&p, dev.caps(), &Options::default())?;
    Ok(Plan {
        problem: p,
        backend: Backend::Cuda,
        kernel,
        params,
        ordinal: Some(dev.caps().ordinal),
        copies: None,
        source: plan::Source::Rules,
    })
}

/// One SVD call by the registry's kernel `kernel`.
///
/// # Safety
/// As `run`.
pub(crate) unsafe fn dispatch<T: Real>(
    dev: &CudaDevice,
    stream: RawStream,
    c: &Call,
    kernel: &str,
) -> Result<()> {
    match kernel {
        "tall" => run_tall::<T>(dev, stream, c),
        "cusolver" => run_cusolver::<T>(dev, stream, c),
        k => run::<T>(&dev.dev, stream, c, k),
    }
}

/// The element size of the `cusolver` SVD's work: double for every input type
/// (`gesvdp::<f64>`).
const SOLVER_ES: usize = std::mem::size_of::<f64>();

/// The first step of `tall` and `cusolver`: each matrix's max|a| (E its exponent), then
/// the tall orientation (A^T for a wide A) times 2^-E into scratch of `sc`, row-major for
/// the QR, or for cuSOLVER (`solver_copy`) in double, column-major, with a non-finite
/// matrix as zeros. Returns the scale kernel's arguments (w and mx set), which the
/// finish kernel takes on.
unsafe fn scaled_copy<T: Real>(
    d: &Device,
    stream: RawStream,
    sc: &mut Scratch,
    c: &Call,
    solver_copy: bool,
) -> Result<SvdTallArgs> {
    let (p, q, batch) = (c.m.max(c.n), c.m.min(c.n), c.batch);
    let a = if c.m < c.n { t(c.a) } else { c.a };
    let mx = sc.alloc(batch * 8)?;
    super::qr_blocked::max_abs_bits::<T>(d, stream, batch, p, q, a, mx)?;
    let copy_es = if solver_copy {
        SOLVER_ES
    } else {
        std::mem::size_of::<T>()
    };
    let g = SvdTallArgs {
        a: a.ptr,
        a_bs: a.bs,
        a_rs: a.rs,
        a_cs: a.cs,
        w: sc.alloc(batch * p * q * copy_es)?,
        mx,
        s: c.s.ptr,
        s_bs: c.s.bs,
        s_cs: c.s.cs,
        info: c.info,
        batch: super::qr::batch_arg(batch)?,
        p: p as i32,
        q: q as i32,
        solver_copy: solver_copy as i32,
        ..Default::default()
    };
    let (tn, ct) = super::qr::tname::<T>();
    let (name, inst) = insts::svd_tall_inst(tn, ct, "scale");
    let blocks = (batch * p * q).div_ceil(256).min(1 << 16) as u32;
    launch(
        d.function(&name, &inst, 0)?,
        (blocks, 1),
        256,
        0,
        stream,
        &g,
    )?;
    Ok(g)
}

/// The `tall` kernel: A (the tall p x q orientation) scaled by 2^-E into a row-major
/// copy, its QR by the QR kernel the rules pick, the SVD of the q x q R (of R^T for a
/// wide A) by the square kernel they pick, then the factor the QR's Q multiplies by a
/// batched product, S scaled back, the info words' overflow and rank bits for A, and the
/// sign convention on U.
unsafe fn run_tall<T: Real>(dev: &CudaDevice, stream: RawStream, c: &Call) -> Result<()> {
    let (m, n, batch) = (c.m, c.n, c.batch);
    let wide = m < n;
    let (p, q) = (m.max(n), m.min(n));
    let vectors = c.u.is_some();
    if vectors && c.full && p != q {
        return Err(Error::Argument(format!(
            "the CUDA tall SVD kernel gives thin factors and values; full matrices of \
             {m}x{n} go to jacobi"
        )));
    }
    let (d, es) = (&dev.dev, std::mem::size_of::<T>());
    let mut sc = Scratch::new(stream);
    let mut g = scaled_copy::<T>(d, stream, &mut sc, c, false)?;
    let w = g.w;

    // A 2^-E = Q R (Q only for the factors).
    let (variant, mode) = if vectors {
        (Variant::QrReduced, QrMode::Reduced)
    } else {
        (Variant::QrR, QrMode::R)
    };
    let qplan = step_plan(dev, Problem::new(variant, T::DTYPE, batch, p, q))?;
    let qm = if vectors {
        Some(dense(sc.alloc(batch * p * q * es)?, p, q))
    } else {
        None
    };
    let r = dense(sc.alloc(batch * q * q * es)?, q, q);
    super::run_qr::<T>(
        dev,
        &qplan,
        stream,
        (batch, p, q),
        mode,
        dense(w, p, q),
        qm,
        r,
        0,
    )?;

    // The square SVD: R = U_R S Vh_R (tall), or R^T = U S Vh_L (wide, U is A's). `x` is
    // the factor Q multiplies: U_R, or Vh_L^T.
    let x = dense(
        sc.alloc(if vectors { batch * q * q * es } else { 0 })?,
        q,
        q,
    );
    let inner = Call {
        batch,
        m: q,
        n: q,
        a: if wide { t(r) } else { r },
        full: false,
        u: if !vectors {
            None
        } else if wide {
            c.u
        } else {
            Some(x)
        },
        s: c.s,
        vh: if !vectors {
            None
        } else if wide {
            Some(x)
        } else {
            c.vh
        },
        info: c.info,
    };
    let variant = if vectors {
        Variant::SvdThin
    } else {
        Variant::Svdvals
    };
    let splan = step_plan(dev, Problem::new(variant, T::DTYPE, batch, q, q))?;
    if splan.kernel.name == "tall" {
        return Err(Error::Device(format!(
            "the CUDA tall SVD planned its square {q}x{q} step to itself"
        )));
    }
    dispatch::<T>(dev, stream, &inner, splan.kernel.name)?;

    if let (Some(qm), Some(u), Some(vh)) = (qm, c.u, c.vh) {
        // U = Q U_R (tall), or Vh^T = Q Vh_L^T (wide).
        let (b, out) = if wide { (t(x), t(vh)) } else { (x, u) };
        let mut b0 = 0;
        while b0 < batch {
            // The product's grid holds 65535 matrices a launch.
            let cnt = (batch - b0).min(65535);
            let off = |k: &KMat| k.ptr + (b0 as i64 * k.bs * es as i64) as u64;
            super::qr::gemm::<T>(
                d,
                stream,
                GemmArgs {
                    a: off(&qm),
                    a_bs: qm.bs,
                    a_rs: qm.rs,
                    a_cs: qm.cs,
                    b: off(&b),
                    b_bs: b.bs,
                    b_rs: b.rs,
                    b_cs: b.cs,
                    c: off(&out),
                    c_bs: out.bs,
                    c_rs: out.rs,
                    c_cs: out.cs,
                    batch: cnt as i32,
                    inner: 1,
                    m: p as i32,
                    m_last: p as i32,
                    n: q as i32,
                    kk: q as i32,
                    ..Default::default()
                },
            )?;
            b0 += cnt;
        }
        if !wide {
            (g.u, g.u_bs, g.u_rs, g.u_cs) = (u.ptr, u.bs, u.rs, u.cs);
            (g.vh, g.vh_bs, g.vh_rs, g.vh_cs) = (vh.ptr, vh.bs, vh.rs, vh.cs);
        }
    }
    (g.u_rows, g.u_cols, g.vh_cols) = (p as i32, q as i32, q as i32);
    finish::<T>(d, stream, &g)
}

/// The `tall` SVD's finish kernel, a block 32 of a matrix's columns of U.
unsafe fn finish<T: Real>(d: &Device, stream: RawStream, g: &SvdTallArgs) -> Result<()> {
    let (tn, ct) = super::qr::tname::<T>();
    let (name, inst) = insts::svd_tall_inst(tn, ct, "finish");
    let tiles = if g.u == 0 {
        1
    } else {
        (g.u_cols as u32).div_ceil(32)
    };
    launch(
        d.function(&name, &inst, 0)?,
        (g.batch as u32, tiles),
        256,
        0,
        stream,
        g,
    )
}

/// The `cusolver` kernel: the tall orientation B (p x q) scaled by 2^-E into a
/// column-major copy in double (a non-finite matrix as zeros); cuSOLVER's SVD B = U S V^T
/// a matrix a call in double (cusolver.rs `gesvdp`: its float32 polar decomposition had
/// to perturb some Gaussian matrices, whose fallback to the QR iteration took 5x as long:
/// float32 1x1024x1024 141-165 ms on the H200, 2026-12-06,
/// docs/results/h200/2026-12-06-svd-finish-grid); the factors copied into the caller's
/// outputs (tall A: U, Vh = V^T; wide A = B^T = V S U^T: U = V, Vh = U^T), NaN for a
/// non-finite matrix; then the `tall` finish (S scaled back, rank and overflow bits, the
/// sign convention).
unsafe fn run_cusolver<T: Real>(dev: &CudaDevice, stream: RawStream, c: &Call) -> Result<()> {
    let (m, n, batch) = (c.m, c.n, c.batch);
    let wide = m < n;
    let (p, q) = (m.max(n), m.min(n));
    let vectors = c.u.is_some();
    let xc = if vectors && c.full { p } else { q };
    let (d, es) = (&dev.dev, SOLVER_ES);
    let (tn, ct) = super::qr::tname::<T>();
    let mut sc = Scratch::new(stream);
    let mut g = scaled_copy::<T>(d, stream, &mut sc, c, true)?;
    let (w, mx) = (g.w, g.mx);

    // B = U S V^T: U p x xc, V q x q, column-major.
    let sw = sc.alloc(batch * q * es)?;
    let words = sc.alloc(batch * 8)?;
    let (dinfo, vt) = (words, words + 4 * batch as u64);
    let (uw, vw) = if vectors {
        (
            sc.alloc(batch * p * xc * es)?,
            sc.alloc(batch * q * q * es)?,
        )
    } else {
        (0, 0)
    };
    // A perturbation up to the input type's eps of a matrix scaled into [0.5, 1) is within
    // LAPACK's own backward error; a larger one sends the matrix to the QR-iteration SVD.
    let tol = T::EPSILON.to_f64();
    super::cusolver::gesvdp::<f64>(
        dev.caps().ordinal,
        stream,
        (batch, p, q),
        vectors,
        !c.full,
        tol,
        [w, sw, uw, vw, dinfo, vt],
    )?;

    let col_major = |ptr: u64, r: usize, c: usize| KMat {
        ptr,
        bs: (r * c) as i64,
        rs: 1,
        cs: r as i64,
    };
    let (u1, v1) = (col_major(uw, p, xc), col_major(vw, q, q));
    // (source, rows, columns) of the caller's U and Vh.
    let ((us, ur, uc), (vs, vr, vc)) = if wide {
        ((v1, q, q), (t(u1), xc, p))
    } else {
        ((u1, p, xc), (t(v1), q, q))
    };
    let (u, vh) = (c.u.unwrap_or_default(), c.vh.unwrap_or_default());
    let cu = SvdCusArgs {
        mx,
        dinfo,
        sw,
        s: c.s.ptr,
        s_bs: c.s.bs,
        s_cs: c.s.cs,
        us: us.ptr, // 0 for values alone: no factor buffers
        us_bs: us.bs,
        us_rs: us.rs,
        us_cs: us.cs,
        u: u.ptr,
        u_bs: u.bs,
        u_rs: u.rs,
        u_cs: u.cs,
        vs: vs.ptr,
        vs_bs: vs.bs,
        vs_rs: vs.rs,
        vs_cs: vs.cs,
        vh: vh.ptr,
        vh_bs: vh.bs,
        vh_rs: vh.rs,
        vh_cs: vh.cs,
        info: c.info,
        vt,
        v_in_u: wide as i32,
        batch: g.batch,
        q: q as i32,
        ur: ur as i32,
        uc: uc as i32,
        vr: vr as i32,
        vc: vc as i32,
    };
    let (name, inst) = insts::svd_cus_unpack_inst(tn, ct);
    let per = q + if vectors { ur * uc + vr * vc } else { 0 };
    let blocks = (batch * per).div_ceil(256).min(1 << 16) as u32;
    launch(
        d.function(&name, &inst, 0)?,
        (blocks, 1),
        256,
        0,
        stream,
        &cu,
    )?;
    if vectors {
        (g.u, g.u_bs, g.u_rs, g.u_cs) = (u.ptr, u.bs, u.rs, u.cs);
        (g.vh, g.vh_bs, g.vh_rs, g.vh_cs) = (vh.ptr, vh.bs, vh.rs, vh.cs);
        (g.u_rows, g.u_cols, g.vh_cols) = (ur as i32, uc as i32, vc as i32);
    }
    finish::<T>(d, stream, &g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    #[test]
    fn tall_is_preferred_from_the_ratio_on() {
        let pref = |m, n| preference(&Problem::new(Variant::SvdThin, DType::F32, 8, m, n));
        for (m, n) in [
            (128, 64),
            (2048, 64),
            (64, 2048),
            (65, 2),
            (4096, 32),
            (66, 33),
        ] {
            assert_eq!(pref(m, n), vec!["tall"], "{m}x{n}");
        }
        // Below 2:1, one column, or held by `warp` (64 rows, 32 columns in float32).
        for (m, n) in [
            (127, 64),
            (64, 64),
            (65, 33),
            (64, 16),
            (8, 2),
            (16, 1),
            (1, 16),
        ] {
            assert!(pref(m, n).is_empty(), "{m}x{n}");
        }
    }

    #[test]
    fn tall_never_takes_a_square_matrix() {
        // Its square step is planned by the planner: were a square matrix its own, a table
        // preferring `tall` there would make it plan itself again, without end.
        let caps = DeviceCaps::h200();
        for v in [Variant::SvdThin, Variant::Svdvals] {
            for (m, n) in [(1, 1), (2, 2), (33, 33), (1024, 1024), (4096, 4096)] {
                let p = Problem::new(v, DType::F32, 4, m, n);
                assert!(!supports_tall(&p, &caps), "{v:?} {m}x{n}");
            }
            for (m, n) in [(3, 2), (2, 3), (1025, 1024), (2048, 64)] {
                let p = Problem::new(v, DType::F64, 4, m, n);
                assert!(supports_tall(&p, &caps), "{v:?} {m}x{n}");
            }
        }
    }

    #[test]
    fn cusolver_is_preferred_for_a_few_large_matrices() {
        let pref = |b, m, n| preference(&Problem::new(Variant::SvdThin, DType::F32, b, m, n));
        let vals = |b, m, n| preference(&Problem::new(Variant::Svdvals, DType::F64, b, m, n));
        for (b, m, n) in [
            (1, 1024, 1024),
            (8, 1024, 1024),
            (1, 256, 256),
            (2, 512, 512),
            (1, 1024, 4096),
        ] {
            assert_eq!(pref(b, m, n)[0], "cusolver", "{b}x{m}x{n}");
        }
        for (b, m, n) in [
            (9, 1024, 1024),
            (1, 128, 128),
            (1, 255, 255),
            (2, 256, 256),
            (3, 512, 512),
        ] {
            assert!(pref(b, m, n).is_empty(), "{b}x{m}x{n}");
        }
        // Values alone: cuSOLVER for fewer (the bidiagonal QR's rotations not applied).
        for (b, n, want) in [
            (1, 256, false),
            (1, 512, true),
            (2, 512, false),
            (4, 1024, true),
        ] {
            assert_eq!(
                vals(b, n, n).first() == Some(&"cusolver"),
                want,
                "{b}x{n}x{n}"
            );
        }
        assert!(vals(5, 1024, 1024).is_empty());
        // Far from square and too many for cuSOLVER: QR first.
        assert_eq!(pref(200, 4096, 1024), vec!["tall"]);
    }
}
