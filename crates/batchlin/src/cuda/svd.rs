//! GPU SVD and svdvals (kernels/svd.cu), one-sided Jacobi on the tall orientation (a wide
//! matrix goes in transposed, by its strides): the `jacobi` kernel, one block a matrix,
//! the work in shared memory where it fits and in global scratch beyond, so it takes
//! every shape; the `warp` kernel, a warp a matrix in registers, for up to 32 columns
//! (64 rows in float32, 32 in float64). Their launch and sizing are here;
//! docs/proposals/gpu-eigh-svd.md has the design and the measurements.

use super::driver::{launch, Device, Func, RawStream, Scratch};
use super::instantiations as insts;
use super::qr::KMat;
use super::DeviceCaps;
use crate::{Error, Problem, Real, Result};

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

/// One SVD call by the kernel `kernel` ("jacobi" or "warp", the registry's names).
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
    let shape = match kernel {
        "warp" => warp_shape_launch::<T>(dev, c, p, q)?,
        _ => jacobi_shape::<T>(dev, c, p, q, xc)?,
    };
    let (u, vh) = (c.u.unwrap_or_default(), c.vh.unwrap_or_default());
    let t = |k: KMat| KMat {
        rs: k.cs,
        cs: k.rs,
        ..k
    };
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
        ldu: p as i32,
        sign_from_v: transpose as i32,
        max_sweeps: MAX_SWEEPS,
        lpp: lanes_per_pair(p) as i32,
        ..Default::default()
    };
    let mut sc = Scratch::new(stream);
    if shape.work_elems > 0 {
        args.work = sc.alloc(shape.chunk * shape.work_elems * std::mem::size_of::<f64>())?;
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
