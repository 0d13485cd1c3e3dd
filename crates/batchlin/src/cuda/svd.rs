//! GPU SVD and svdvals: the `jacobi` kernel (kernels/svd.cu), one-sided Jacobi one block
//! a matrix on the tall orientation (a wide matrix goes in transposed, by its strides),
//! the work in shared memory where it fits and in global scratch beyond, so it takes
//! every shape. Its launch and sizing are here; docs/proposals/gpu-eigh-svd.md has the
//! design and the measurements.

use super::driver::{launch, Device, RawStream, Scratch};
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

pub(crate) unsafe fn run<T: Real>(dev: &Device, stream: RawStream, c: &Call) -> Result<()> {
    let (m, n, batch) = (c.m, c.n, c.batch);
    let transpose = m < n;
    let (p, q) = (m.max(n), m.min(n));
    let vectors = c.u.is_some();
    let xc = if vectors && c.full { p } else { q };
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
    let chunk = if in_smem {
        batch
    } else {
        (super::eigh::WORK_BYTES / big.max(1)).clamp(1, batch)
    };
    if !in_smem {
        args.work = sc.alloc(chunk * big)?;
        args.work_bs = big_elems(p, q, xc, vectors) as i64;
    }
    let mut b0 = 0;
    while b0 < batch {
        let cnt = chunk.min(batch - b0);
        args.b0 = b0 as i32;
        launch(
            f,
            (cnt as u32, 1),
            threads(p, q) as u32,
            smem as u32,
            stream,
            &args,
        )?;
        b0 += cnt;
    }
    Ok(())
}
