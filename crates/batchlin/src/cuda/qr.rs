//! GPU QR: which kernel takes a shape (the registry's `supports` predicates), which the
//! rules prefer (`preference`), and the launches, TSQR's multi-launch sequence included.

use super::driver::{launch, Device, Func, RawStream, Scratch};
use super::DeviceCaps;
use crate::{DType, Error, Problem, Real, Result, TileConfig, Variant};

/// The QR kernels, as the launch code knows them (registry.rs names them for users).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum QrKernel {
    Warp,
    Tile,
    Smem,
    Wy,
    Tall,
    Blocked,
    Cluster,
}

impl QrKernel {
    pub(crate) fn from_name(s: &str) -> Result<QrKernel> {
        Ok(match s {
            "warp" => QrKernel::Warp,
            "tile" => QrKernel::Tile,
            "smem" => QrKernel::Smem,
            "wy" => QrKernel::Wy,
            "tall" => QrKernel::Tall,
            "blocked" => QrKernel::Blocked,
            "cluster" => QrKernel::Cluster,
            _ => {
                return Err(Error::Argument(format!(
                    "internal: no CUDA QR kernel {s:?}"
                )))
            }
        })
    }
}

/// A batch of matrices in device memory as the kernels take it: element (b, i, j) at
/// `ptr + (b*bs + i*rs + j*cs) * size_of::<T>()`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct KMat {
    pub ptr: u64,
    pub bs: i64,
    pub rs: i64,
    pub cs: i64,
}

/// Mirrors `struct QrArgs` in kernels/common.cu.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct QrArgs {
    pub a: u64,
    pub a_bs: i64,
    pub a_is: i64,
    pub a_rs: i64,
    pub a_cs: i64,
    pub q: u64,
    pub q_bs: i64,
    pub q_is: i64,
    pub q_rs: i64,
    pub q_cs: i64,
    pub r: u64,
    pub r_bs: i64,
    pub r_is: i64,
    pub r_rs: i64,
    pub r_cs: i64,
    pub info: u64,
    pub r_mx: u64,
    pub batch: i32,
    pub inner: i32,
    pub m: i32,
    pub m_last: i32,
    pub n: i32,
    pub qcols: i32,
    pub rrows: i32,
    pub wld: i32,
    /// 0, or the rows the rank rule counts where more than the factored matrix's (TSQR's
    /// top level: the matrix's rows, not the stacked leaves' R's).
    pub rank_rows: i32,
}

/// Mirrors `struct GemmArgs` in kernels/common.cu.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct GemmArgs {
    pub a: u64,
    pub a_bs: i64,
    pub a_is: i64,
    pub a_rs: i64,
    pub a_cs: i64,
    pub b: u64,
    pub b_bs: i64,
    pub b_is: i64,
    pub b_rs: i64,
    pub b_cs: i64,
    pub c: u64,
    pub c_bs: i64,
    pub c_is: i64,
    pub c_rs: i64,
    pub c_cs: i64,
    pub batch: i32,
    pub inner: i32,
    pub m: i32,
    pub m_last: i32,
    pub n: i32,
    pub kk: i32,
}

/// Mirrors `struct ScaleArgs` in kernels/common.cu.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct ScaleArgs {
    pub x: u64,
    pub x_bs: i64,
    pub x_rs: i64,
    pub x_cs: i64,
    pub mx: u64,
    pub info: u64,
    pub batch: i32,
    pub m: i32,
    pub n: i32,
    pub k: i32,
}

use super::instantiations as insts;
pub(crate) use super::instantiations::{REG_SHAPES, WY_RPL};

/// The tile kernel's launch facts for an instantiation (`TileConfig`, problem.rs:
/// capacity, thread grid, register cap, chunk lengths, staging; kernels/qr.cu
/// `bl_qr_tile`).
impl TileConfig {
    /// As `[rows, cols, rg, cg, minb, fc, qc, stage]`, the instantiation list's form.
    fn as_list(&self) -> [usize; 8] {
        let s = self;
        let (m, n, rg, cg, minb, fc, qc) = (s.rows, s.cols, s.rg, s.cg, s.minb, s.fc, s.qc);
        [m, n, rg, cg, minb, fc, qc, s.stage as usize]
    }
    pub(crate) fn name(&self, tn: &str) -> String {
        insts::tile_name(tn, &self.as_list())
    }
    pub(crate) fn inst(&self, tn: &str, ct: &str) -> String {
        insts::tile_inst(tn, ct, &self.as_list())
    }
    pub(crate) fn threads(&self) -> usize {
        self.rg * self.cg
    }
    /// Mirrors BlTileShape::ELEMS: every reflector (rg slices of rows / rg rows, 4 apart
    /// when that is a multiple of 8), tau, beta, 32 slots.
    pub(crate) fn smem_bytes<T: Real>(&self) -> usize {
        let r = self.rows / self.rg;
        let pitch = if r % 8 == 0 { r + 4 } else { r };
        let kmax = self.rows.min(self.cols);
        (kmax * self.rg * pitch + 2 * kmax + 32) * std::mem::size_of::<T>()
    }
}

/// The tile kernel's instantiations, smallest first (instantiations.rs `tile_list`).
pub(crate) fn tile_shapes(t: DType) -> Vec<TileConfig> {
    let shape = |&[rows, cols, rg, cg, minb, fc, qc, stage]: &[usize; 8]| TileConfig {
        rows,
        cols,
        rg,
        cg,
        minb,
        fc,
        qc,
        stage: stage != 0,
    };
    insts::tile_list(tname_of(t)).iter().map(shape).collect()
}

/// The kernel-name form of a dtype ("f32", "f64").
pub(crate) fn tname_of(t: DType) -> &'static str {
    match t {
        DType::F32 => "f32",
        _ => "f64",
    }
}

/// Whether a caller's tile instantiation holds `p` on this device (its template's own
/// constraints are checked when NVRTC compiles it).
pub(crate) fn check_tile_config(p: &Problem, caps: &DeviceCaps, t: &TileConfig) -> Result<()> {
    let nc = qr_cols(p).0;
    let smem = match p.dtype {
        DType::F32 => t.smem_bytes::<f32>(),
        _ => t.smem_bytes::<f64>(),
    };
    if t.rows < p.m || t.cols < nc {
        return Err(Error::Argument(format!(
            "tile instantiation {t} holds {}x{} matrices; {p} needs {}x{nc}",
            t.rows, t.cols, p.m
        )));
    }
    if smem > caps.smem_optin {
        return Err(Error::Argument(format!(
            "tile instantiation {t} needs {smem} bytes of shared memory in {}; the device has {}",
            p.dtype.name(),
            caps.smem_optin
        )));
    }
    Ok(())
}

/// The smallest tile instantiation taking m rows and `ncols` columns.
pub(crate) fn tile_shape<T: Real>(m: usize, ncols: usize) -> Option<TileConfig> {
    tile_shapes(T::DTYPE)
        .into_iter()
        .filter(|s| s.rows >= m && s.cols >= ncols)
        .min_by_key(|s| (s.rows * s.cols, s.cols))
}

/// Whether the tile kernel takes m x `ncols` on this device (its shared memory fits).
fn tile_fits<T: Real>(dev: &DeviceCaps, m: usize, ncols: usize) -> bool {
    tile_shape::<T>(m, ncols).is_some_and(|s| s.smem_bytes::<T>() <= dev.smem_optin)
}

/// Rows a lane of the warp kernel may hold (instantiations.rs).
pub(crate) fn warp_lane_rows(dtype: DType) -> usize {
    insts::warp_lane_rows(tname_of(dtype))
}

/// Columns a `wy` panel (BL_QR_WY's NB).
const WY_NB: usize = 8;

fn wy_rpl(m: usize) -> Option<usize> {
    WY_RPL.into_iter().find(|&r| m <= 32 * r)
}

/// Threads a `wy` block: 4 warps when there are enough matrices to fill the GPU with
/// several blocks an SM, else 8 (and always 8 for f64 above 64 rows: measured).
fn wy_threads<T: Real>(dev: &DeviceCaps, mats: u64, m: usize) -> usize {
    if mats < 4 * dev.sm_count as u64 || (T::DTYPE == DType::F64 && m > 64) {
        256
    } else {
        128
    }
}

fn wy_smem_bytes<T: Real>(m: usize, n: usize, ncols: usize, threads: usize) -> usize {
    let k = m.min(n);
    let panels = k.div_ceil(WY_NB);
    let e = (threads / 32) * 2 * WY_NB
        + panels * WY_NB * (WY_NB + 1)
        + WY_NB
        + m * (ncols | 1)
        + 2 * k
        + 32;
    e * std::mem::size_of::<T>()
}

/// Rows of a TSQR leaf.
pub(crate) const LEAF: usize = 128;

/// Blocks a cluster of the `cluster` kernel (BL_QC_CS), each holding a slice of the rows.
const CLUSTER_BLOCKS: usize = 8;

/// (columns NC, threads a block, register budget) of the `cluster` kernel for an m x n
/// reduced/r QR: a row a thread, NT >= NC, at most 256 threads (m <= 2048); None beyond.
fn cluster_shape<T: Real>(m: usize, n: usize) -> Option<(usize, usize, usize)> {
    let nc = if n <= 32 { 32 } else { 64 };
    let threads = m.div_ceil(CLUSTER_BLOCKS).max(nc).div_ceil(32) * 32;
    if n > 64 || threads > 256 {
        return None;
    }
    let minb = if T::DTYPE == DType::F32 && threads > 128 {
        2
    } else {
        1
    };
    Some((nc, threads, minb))
}

/// Mirrors BlQcShape<NC>::ELEMS in kernels/qr_cluster.cu, or M and every thread's v row.
fn cluster_smem_bytes<T: Real>(nc: usize, threads: usize) -> usize {
    let (p, nx, np) = (nc + 4, nc + 8, 2 * nc + 8);
    let elems = (2 * nc * p + 8 * nx + 2 * np + 2 * nc + 40).max(nc * p + threads * (nc + 1));
    elems * std::mem::size_of::<T>()
}

pub(crate) fn tname<T: Real>() -> (&'static str, &'static str) {
    match T::DTYPE {
        DType::F32 => ("f32", "float"),
        _ => ("f64", "double"),
    }
}

/// The smallest warp kernel (M, W, RS) for m rows and `ncols` columns.
pub(crate) fn reg_shape<T: Real>(m: usize, ncols: usize) -> Option<(usize, usize, usize)> {
    let lane_rows = warp_lane_rows(T::DTYPE);
    REG_SHAPES
        .iter()
        .copied()
        .filter(|&(mm, w, rs)| w >= ncols && mm >= m && mm / rs <= lane_rows)
        .min_by_key(|&(mm, w, rs)| (w, mm, rs))
}

/// Whether Auto sends m x `ncols` to the warp kernel: wherever it fits, up to 32 columns
/// and 64 rows (f64: 32). 4096x32x32 f32 0.057 ms; 4096x64x32 0.19 against the tile
/// kernel's 0.23 (docs/results/h200/2026-11-30-qr-warp-rewrite/, 2026-12-01-qr-tile/).
fn warp_wins<T: Real>(m: usize, ncols: usize) -> bool {
    reg_shape::<T>(m, ncols).is_some()
}

/// Threads of a warp-kernel block and the matrices it holds (kernels/qr.cu `BlWarpShape`).
fn warp_block(w: usize, rs: usize) -> (usize, usize) {
    let threads = (w * rs).max(128);
    (threads, threads / (w * rs))
}

/// Dynamic shared memory of a warp-kernel block (kernels/qr.cu `BlWarpShape`): each
/// matrix's min(w, mm) reflectors (rs slices of mm / rs rows, 4 apart when rs > 1), tau
/// and scal, and 20 exchange slots.
fn warp_smem_bytes<T: Real>(mm: usize, w: usize, rs: usize) -> usize {
    let pitch = mm / rs + if rs > 1 { 4 } else { 0 };
    let per_matrix = w.min(mm) * (rs * pitch + 2) + 20;
    warp_block(w, rs).1 * per_matrix * std::mem::size_of::<T>()
}

/// Shared memory of an `smem` block: the work copy (m x (ncols | 1)), two reflector
/// buffers, 64 reduction slots, tau and the signs.
fn smem_bytes<T: Real>(m: usize, n: usize, ncols: usize) -> usize {
    (m * (ncols | 1) + 2 * m + 64 + 2 * m.min(n)) * std::mem::size_of::<T>()
}

/// Columns a kernel holds for `p` (Q's columns too when Q is formed) and whether the
/// variant is reduced or "r" (Q, if any, m x min(m, n)).
fn qr_cols(p: &Problem) -> (usize, bool) {
    match p.variant {
        Variant::QrComplete => (p.n.max(p.m), p.m <= p.n),
        Variant::QrReduced => (p.n.max(p.k()), true),
        _ => (p.n, true),
    }
}

/// `f::<T>` for the problem's element type; false for types the kernels do not take.
fn typed(p: &Problem, f32: impl FnOnce() -> bool, f64: impl FnOnce() -> bool) -> bool {
    let empty = p.batch == 0 || p.m == 0 || p.n == 0;
    match p.dtype {
        // Nothing to factor: the backend fills the outputs without a kernel.
        DType::F32 | DType::F64 if empty => true,
        DType::F32 => f32(),
        DType::F64 => f64(),
        _ => false,
    }
}

fn tall_shape(p: &Problem) -> bool {
    let (_, reduced_or_r) = qr_cols(p);
    reduced_or_r && p.n <= 64 && p.m > LEAF
}

pub(crate) fn supports_warp(p: &Problem, _: &DeviceCaps) -> bool {
    let nc = qr_cols(p).0;
    typed(
        p,
        || reg_shape::<f32>(p.m, nc).is_some(),
        || reg_shape::<f64>(p.m, nc).is_some(),
    )
}

pub(crate) fn supports_tile(p: &Problem, caps: &DeviceCaps) -> bool {
    let nc = qr_cols(p).0;
    typed(
        p,
        || tile_fits::<f32>(caps, p.m, nc),
        || tile_fits::<f64>(caps, p.m, nc),
    )
}

fn wy_fits<T: Real>(caps: &DeviceCaps, p: &Problem) -> bool {
    let nc = qr_cols(p).0;
    let threads = wy_threads::<T>(caps, p.batch as u64, p.m);
    wy_rpl(p.m).is_some() && wy_smem_bytes::<T>(p.m, p.n, nc, threads) <= caps.smem_optin
}

pub(crate) fn supports_wy(p: &Problem, caps: &DeviceCaps) -> bool {
    typed(p, || wy_fits::<f32>(caps, p), || wy_fits::<f64>(caps, p))
}

pub(crate) fn supports_smem(p: &Problem, caps: &DeviceCaps) -> bool {
    let nc = qr_cols(p).0;
    typed(
        p,
        || smem_bytes::<f32>(p.m, p.n, nc) <= caps.smem_optin,
        || smem_bytes::<f64>(p.m, p.n, nc) <= caps.smem_optin,
    )
}

pub(crate) fn supports_tall(p: &Problem, _: &DeviceCaps) -> bool {
    typed(p, || tall_shape(p), || tall_shape(p))
}

pub(crate) fn supports_cluster(p: &Problem, caps: &DeviceCaps) -> bool {
    let ok = qr_cols(p).1 && caps.cc.0 >= 9;
    typed(
        p,
        || ok && cluster_shape::<f32>(p.m, p.n).is_some(),
        || ok && cluster_shape::<f64>(p.m, p.n).is_some(),
    )
}

pub(crate) fn supports_blocked(p: &Problem, _: &DeviceCaps) -> bool {
    typed(p, || true, || true)
}

/// The kernels the rules prefer for `p`, best first; the planner takes the first the
/// registry says supports it. From the measurements in docs/proposals/cuda-qr.md.
pub(crate) fn preference(p: &Problem, caps: &DeviceCaps) -> Vec<&'static str> {
    let (m, n) = (p.m, p.n);
    let tall = tall_shape(p) && m >= 4 * n;
    if tall && p.batch < 2 * caps.sm_count as usize {
        // A cluster of 8 blocks a matrix, one launch (Hopper and later): 16x1024x64 f32
        // 0.13 ms against blocked's 0.23, 16x2048x64 0.17 against 0.34, 16x1024x32 0.054
        // against tall's 0.19. Without clusters, blocked beats TSQR with wy leaves in f32
        // at 16x1024x64 (0.45 vs 0.57 ms) and 16x2048x64 (0.59 vs 0.75), in f64 at 1024
        // rows (0.57 vs 0.69) but not at 2048 (1.86 vs 1.03).
        let rows_max = if p.dtype == DType::F32 { 2048 } else { 1024 };
        return if n > 32 && m <= rows_max {
            vec!["cluster", "blocked", "tall"]
        } else {
            vec!["cluster", "tall"]
        };
    }
    // Larger batches of tall matrices from 256 rows: the cluster kernel from 512 rows (64
    // rows a block), TSQR below; both beat smem (f32 2048x512x64: cluster 4.5 ms, tall
    // 7.0, smem 39.6; 1024x256x64: tall 1.5, cluster 2.3, smem 3.7; 512x1024x64: cluster
    // 1.8, tall 3.9).
    if tall && m >= 256 {
        return if m >= 512 {
            vec!["cluster", "tall"]
        } else {
            vec!["tall"]
        };
    }
    // warp wherever it fits, up to 32 columns and 64 rows (f64: 32): 4096x32x32 f32
    // 0.057 ms; 4096x64x32 0.19 against tile's 0.23. Then tile up to 128 x 128: 1.4-3.9x
    // faster than warp and wy wherever both were measured (4096x64x64 f32 0.31 against
    // 0.45 ms, 1024x128x128 0.60 against wy's 1.41, 4096x128x32 0.19 against 0.74; f64
    // 64x64 0.64 against 1.07). wy up to 128 rows beyond 128 columns (1024x128x128 f32
    // 1.35 ms against blocked's 1.69). blocked 1.4-2.9x faster than smem from 128 columns
    // on; beyond shared memory blocked (10-40x faster than the retired one-block-a-matrix
    // kernel in global memory at every shape measured). Beyond tile's and wy's 128 rows
    // blocked beats smem from 16 columns too (an H100, `batchlin tune`'s device data,
    // docs/results/h100/2026-12-06-full-tune: 182x91 2.3-2.9x, 184x23 1.6-2.9x; held out,
    // docs/results/h100/2026-12-07-check-tables: float64 R alone of 20x283x99 3.9x,
    // float32 complete Q of 62x159x26 3.2x); smem keeps wide ones (23x736 1.1-2x faster).
    // Wide matrices of at most 32 rows beyond tile's 128 columns: smem before wy (the
    // H100 table's device rows, docs/results/h100/2026-12-07-retune-eigh: smem first at
    // every measured shape up to 16 rows, wy 1.3-1.75x its time; at 23 and 32 rows R
    // alone 1.13-1.99x, QR of 23x736 1.2-1.5x; the 16 such shapes held out in six tunes
    // and checks on an H100 and the H200: wy 1.10-1.82x smem's time in 15, 0.88 in one).
    // wy wins at aspect 8 with Q up to a batch of 64-256 by 10-15% (23x184, 32x256): not
    // worth a second bound.
    let wide_few_rows = n > 128 && m <= 32;
    let mut v = vec!["warp", "tile"];
    if wide_few_rows {
        v.push("smem");
    }
    v.push("wy");
    if m.min(n) >= 128 || (m > 128 && n >= 16) {
        v.push("blocked");
    }
    if !wide_few_rows {
        v.push("smem");
    }
    if tall {
        v.push("tall");
    }
    v.push("blocked");
    v
}

pub(crate) struct Call {
    pub batch: usize,
    pub m: usize,
    pub n: usize,
    pub a: KMat,
    pub q: Option<KMat>,
    pub qcols: usize,
    pub r: KMat,
    pub rrows: usize,
    pub info: u64,
    /// The blocked kernel's panel width (the plan's).
    pub panel: usize,
    /// The tile kernel's instantiation, where the plan fixes one.
    pub tile: Option<TileConfig>,
}

fn base_args(c: &Call) -> QrArgs {
    let q = c.q.unwrap_or_default();
    QrArgs {
        a: c.a.ptr,
        a_bs: c.a.bs,
        a_rs: c.a.rs,
        a_cs: c.a.cs,
        q: q.ptr,
        q_bs: q.bs,
        q_rs: q.rs,
        q_cs: q.cs,
        r: c.r.ptr,
        r_bs: c.r.bs,
        r_rs: c.r.rs,
        r_cs: c.r.cs,
        info: c.info,
        batch: c.batch as i32,
        inner: 1,
        m: c.m as i32,
        m_last: c.m as i32,
        n: c.n as i32,
        qcols: c.qcols as i32,
        rrows: c.rrows as i32,
        ..Default::default()
    }
}

/// What one launch of a single-level kernel needs beyond its arguments: the function,
/// the grid, the block, the dynamic shared memory and the work-copy pitch (`wld`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Launch {
    f: Func,
    blocks: u64,
    threads: usize,
    smem: usize,
    /// The work copy's row pitch, for the kernels that keep one (wy, smem).
    wld: Option<i32>,
}

/// Everything a `Launch` is computed from: the same key on the same device always gives
/// the same launch (the device's capabilities and loaded kernels do not change).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct LaunchKey {
    ordinal: usize,
    kind: QrKernel,
    dtype: DType,
    m: i32,
    n: i32,
    qcols: i32,
    with_q: bool,
    total: u64,
    tile: Option<TileConfig>,
}

impl LaunchKey {
    pub(crate) fn new<T: Real>(
        dev: &Device,
        kind: QrKernel,
        p: &QrArgs,
        tile: Option<TileConfig>,
    ) -> Self {
        LaunchKey {
            ordinal: dev.ordinal,
            kind,
            dtype: T::DTYPE,
            m: p.m,
            n: p.n,
            qcols: p.qcols,
            with_q: p.q != 0,
            total: p.batch as u64 * p.inner as u64,
            tile,
        }
    }
}

thread_local! {
    /// The last single-level launch worked out on this thread: a loop of calls on one
    /// shape (the common case from Python) skips the kernel's name formatting, the
    /// module table's lock and the shape search. One entry a thread, as the plan memo
    /// (plan.rs): no lock shared between threads.
    static LAST_LAUNCH: std::cell::Cell<Option<(LaunchKey, Launch)>> =
        const { std::cell::Cell::new(None) };
}

/// The launch for `key` (`p`, `tile` as the key was made from), remembered per thread.
pub(crate) fn launch_for<T: Real>(
    dev: &Device,
    key: LaunchKey,
    p: &QrArgs,
    tile: Option<TileConfig>,
) -> Result<Launch> {
    if let Some((k, l)) = LAST_LAUNCH.with(|c| c.get()) {
        if k == key {
            return Ok(l);
        }
    }
    let l = single_launch::<T>(dev, key.kind, p, tile)?;
    LAST_LAUNCH.with(|c| c.set(Some((key, l))));
    Ok(l)
}

/// The launch of a single-level kernel for `p`, worked out in full (kernel loaded on
/// first use).
pub(crate) fn single_launch<T: Real>(
    dev: &Device,
    kind: QrKernel,
    p: &QrArgs,
    tile: Option<TileConfig>,
) -> Result<Launch> {
    let (tn, ct) = tname::<T>();
    let (m, n) = (p.m as usize, p.n as usize);
    let ncols = if p.q != 0 { n.max(p.qcols as usize) } else { n };
    let total = p.batch as u64 * p.inner as u64;
    let mut wld = None;
    // (function, blocks, threads, dynamic shared memory): 128 / w matrices a block for
    // warp, one block a matrix for tile, wy and smem, a cluster of eight for cluster.
    let (f, blocks, threads, smem) = match kind {
        QrKernel::Warp => {
            let (mm, w, rs) = reg_shape::<T>(m, ncols).ok_or_else(|| {
                Error::Argument(format!(
                    "the warp kernel does not take {m}x{n} ({ncols} columns) in {tn}"
                ))
            })?;
            let name = format!("qr_warp_{tn}_m{mm}_w{w}_s{rs}");
            let inst = format!("BL_QR_WARP({tn}, {ct}, {mm}, {w}, {rs})");
            let smem = warp_smem_bytes::<T>(mm, w, rs);
            let f = dev.function(&name, &inst, smem)?;
            let (threads, gpb) = warp_block(w, rs);
            (f, total.div_ceil(gpb as u64), threads, smem)
        }
        QrKernel::Tile => {
            let shape = tile.or_else(|| tile_shape::<T>(m, ncols)).ok_or_else(|| {
                Error::Argument(format!(
                    "the tile kernel takes up to 128 rows and 128 columns; got {m}x{n} ({ncols} columns)"
                ))
            })?;
            let smem = shape.smem_bytes::<T>();
            if smem > dev.smem_optin {
                return Err(Error::Argument(format!(
                    "the tile kernel needs {smem} bytes of shared memory for {m}x{n} in {tn}"
                )));
            }
            let f = dev.function(&shape.name(tn), &shape.inst(tn, ct), smem)?;
            (f, total, shape.threads(), smem)
        }
        QrKernel::Wy => {
            let too_big = |what: String| {
                Error::Argument(format!(
                    "the wy kernel does not take {m}x{n} in {tn}: {what}"
                ))
            };
            let rpl = wy_rpl(m).ok_or_else(|| too_big("more than 128 rows".into()))?;
            let threads = wy_threads::<T>(dev, total, m);
            let smem = wy_smem_bytes::<T>(m, n, ncols, threads);
            if smem > dev.smem_optin {
                return Err(too_big(format!("{smem} bytes of shared memory")));
            }
            wld = Some((ncols | 1) as i32);
            let f = dev.function(
                &format!("qr_wy_{tn}_r{rpl}"),
                &format!("BL_QR_WY({tn}, {ct}, {rpl})"),
                dev.smem_optin,
            )?;
            (f, total, threads, smem)
        }
        QrKernel::Smem => {
            let smem = smem_bytes::<T>(m, n, ncols);
            if smem > dev.smem_optin {
                return Err(Error::Argument(format!(
                    "the smem kernel does not take {m}x{n} in {tn}: {smem} bytes of shared memory"
                )));
            }
            wld = Some((ncols | 1) as i32);
            let f = dev.function(
                &format!("qr_smem_{tn}"),
                &format!("BL_QR_SMEM({tn}, {ct})"),
                dev.smem_optin,
            )?;
            (f, total, ncols.div_ceil(32).clamp(2, 32) * 32, smem)
        }
        QrKernel::Cluster => {
            let k = m.min(n);
            if dev.cc.0 < 9 {
                return Err(Error::Argument(format!(
                    "the cluster kernel needs compute capability 9.0 or later (this device: {}.{})",
                    dev.cc.0, dev.cc.1
                )));
            }
            if p.q != 0 && p.qcols as usize > k {
                return Err(Error::Argument(
                    "the cluster kernel takes reduced and r modes only".into(),
                ));
            }
            let (nc, threads, minb) = cluster_shape::<T>(m, n).ok_or_else(|| {
                Error::Argument(format!(
                    "the cluster kernel takes n <= 64 and m <= 2048; got {m}x{n}"
                ))
            })?;
            let smem = cluster_smem_bytes::<T>(nc, threads);
            // The function's shared-memory limit is set once, when it is loaded: the most
            // any call may ask (256 threads), not this call's.
            let f = dev.function(
                &format!("qr_cluster_{tn}_n{nc}_b{minb}"),
                &format!("BL_QR_CLUSTER({tn}, {ct}, {nc}, {minb})"),
                cluster_smem_bytes::<T>(nc, 256),
            )?;
            (f, total * CLUSTER_BLOCKS as u64, threads, smem)
        }
        QrKernel::Tall | QrKernel::Blocked => {
            return Err(Error::Argument(
                "internal: not a single-level kernel".into(),
            ))
        }
    };
    if blocks > i32::MAX as u64 {
        return Err(Error::Overflow("batch too large for one launch".into()));
    }
    Ok(Launch {
        f,
        blocks,
        threads,
        smem,
        wld,
    })
}

/// One launch of a single-level kernel. `p` is complete except for wld.
unsafe fn launch_single<T: Real>(
    dev: &Device,
    kind: QrKernel,
    stream: RawStream,
    mut p: QrArgs,
    tile: Option<TileConfig>,
) -> Result<()> {
    if p.batch as u64 * p.inner as u64 == 0 {
        return Ok(());
    }
    let key = LaunchKey::new::<T>(dev, kind, &p, tile);
    let l = launch_for::<T>(dev, key, &p, tile)?;
    if let Some(w) = l.wld {
        p.wld = w;
    }
    launch(
        l.f,
        (l.blocks as u32, 1),
        l.threads as u32,
        l.smem as u32,
        stream,
        &p,
    )
}

/// A batch count as the kernels take it (an int).
pub(crate) fn batch_arg(batch: usize) -> Result<i32> {
    i32::try_from(batch).map_err(|_| Error::Overflow("batch too large".into()))
}

/// The `kernel_<t>` function of a kernel instantiated by `MACRO(<t>, <C type>)` alone,
/// without dynamic shared memory.
fn typed_function<T: Real>(dev: &Device, kernel: &str, instantiation: &str) -> Result<Func> {
    let (tn, ct) = tname::<T>();
    dev.function(
        &format!("{kernel}_{tn}"),
        &format!("{instantiation}({tn}, {ct})"),
        0,
    )
}

/// Q = I for a batch of M x 0 matrices in complete mode (nothing to factor).
pub(crate) unsafe fn eye<T: Real>(
    dev: &Device,
    stream: RawStream,
    batch: usize,
    m: usize,
    q: KMat,
) -> Result<()> {
    let f = typed_function::<T>(dev, "eye", "BL_EYE")?;
    let p = QrArgs {
        q: q.ptr,
        q_bs: q.bs,
        q_rs: q.rs,
        q_cs: q.cs,
        batch: batch_arg(batch)?,
        m: m as i32,
        qcols: m as i32,
        ..Default::default()
    };
    let blocks = ((batch * m * m).div_ceil(256)).min(4096) as u32;
    launch(f, (blocks, 1), 256, 0, stream, &p)
}

/// TSQR's R times 2^E of each matrix (E the exponent of its max|a|, `mx` as
/// `qr_blocked::max_abs_bits` keeps it), and `Info::OVERFLOW` in the info word of each
/// finite matrix whose R then holds an entry beyond the range, as the CPU backends flag
/// it (the single-launch kernels flag it as they store R).
unsafe fn unscale_r<T: Real>(dev: &Device, stream: RawStream, c: &Call, mx: u64) -> Result<()> {
    let k = c.m.min(c.n);
    let total = c.batch * c.rrows * c.n;
    if total == 0 {
        return Ok(());
    }
    let f = typed_function::<T>(dev, "qr_unscale_r", "BL_QR_UNSCALE_R")?;
    let p = ScaleArgs {
        x: c.r.ptr,
        x_bs: c.r.bs,
        x_rs: c.r.rs,
        x_cs: c.r.cs,
        mx,
        info: c.info,
        batch: batch_arg(c.batch)?,
        m: c.rrows as i32,
        n: c.n as i32,
        k: k as i32,
    };
    let blocks = total.div_ceil(256).min(4096) as u32;
    launch(f, (blocks, 1), 256, 0, stream, &p)
}

pub(crate) unsafe fn gemm<T: Real>(dev: &Device, stream: RawStream, g: GemmArgs) -> Result<()> {
    let f = typed_function::<T>(dev, "gemm", "BL_GEMM")?;
    let tiles = (g.m as u32).div_ceil(64) * (g.n as u32).div_ceil(64);
    let mats = g.batch as u64 * g.inner as u64;
    if mats > 65535 {
        return Err(Error::Overflow(
            "TSQR: too many leaves for one launch".into(),
        ));
    }
    launch(f, (tiles, mats as u32), 256, 0, stream, &g)
}

/// TSQR: leaves of 128 rows (the last zero padded), the stacked R's factored again until
/// one leaf is left; Q assembled top-down by batched products. Reduced and "r" modes.
unsafe fn tall<T: Real>(dev: &Device, stream: RawStream, c: &Call, sc: &mut Scratch) -> Result<()> {
    let (m, n, batch) = (c.m, c.n, c.batch);
    if n > 64 || m <= LEAF || (c.q.is_some() && c.qcols != n) {
        return Err(Error::Argument(format!(
            "the tall kernel takes m > {LEAF}, n <= 64, reduced or r mode; got {m}x{n}"
        )));
    }
    let es = std::mem::size_of::<T>();
    // 128-row leaves: `tile` (the warp kernel stops at 64 rows; tile beat wy 2.5-3.9x on
    // 4096 128x64 and 128x32 matrices), or `wy` where tile's shared memory does not fit.
    let leaf_kind = if tile_fits::<T>(dev, LEAF, n) {
        QrKernel::Tile
    } else {
        QrKernel::Wy
    };
    let wantq = c.q.is_some();
    struct Level {
        rows: usize,
        nch: usize,
        mlast: usize,
        qleaf: u64,
    }
    let mut levels = Vec::new();
    let sinfo = sc.alloc(batch * m.div_ceil(LEAF) * 4)?;
    // A leaf unscaling its own R could leave the range where the matrix's entries are
    // near it (the R of 128 rows of 3e38 holds 3.4e39): the first level's leaves store
    // their R's scaled as the whole matrix times 2^-E (E from each matrix's max|a|, a
    // read-only pass), the levels above keep that scale, and R is unscaled at the end.
    let mx = sc.alloc(batch * 8)?;
    super::qr_blocked::max_abs_bits::<T>(dev, stream, batch, m, n, c.a, mx)?;
    let mut cur = c.a;
    let mut r_mx = mx;
    let mut rows = m;
    while rows > LEAF {
        let nch = rows.div_ceil(LEAF);
        let mlast = rows - (nch - 1) * LEAF;
        let srows = nch * n;
        let s = sc.alloc(batch * srows * n * es)?;
        let qleaf = if wantq {
            sc.alloc(batch * rows * n * es)?
        } else {
            0
        };
        let p = QrArgs {
            a: cur.ptr,
            a_bs: cur.bs,
            a_is: cur.rs * LEAF as i64,
            a_rs: cur.rs,
            a_cs: cur.cs,
            q: qleaf,
            q_bs: (rows * n) as i64,
            q_is: (LEAF * n) as i64,
            q_rs: n as i64,
            q_cs: 1,
            r: s,
            r_bs: (srows * n) as i64,
            r_is: (n * n) as i64,
            r_rs: n as i64,
            r_cs: 1,
            info: sinfo,
            r_mx,
            batch: batch as i32,
            inner: nch as i32,
            m: LEAF as i32,
            m_last: mlast as i32,
            n: n as i32,
            qcols: n as i32,
            rrows: n as i32,
            ..Default::default()
        };
        launch_single::<T>(dev, leaf_kind, stream, p, None)?;
        r_mx = 0;
        levels.push(Level {
            rows,
            nch,
            mlast,
            qleaf,
        });
        cur = KMat {
            ptr: s,
            bs: (srows * n) as i64,
            rs: n as i64,
            cs: 1,
        };
        rows = srows;
    }
    let qtop = if wantq {
        sc.alloc(batch * rows * n * es)?
    } else {
        0
    };
    let mut p = base_args(c);
    p.a = cur.ptr;
    p.a_bs = cur.bs;
    p.a_rs = cur.rs;
    p.a_cs = cur.cs;
    p.m = rows as i32;
    p.m_last = rows as i32;
    p.q = qtop;
    p.q_bs = (rows * n) as i64;
    p.q_rs = n as i64;
    p.q_cs = 1;
    p.qcols = n as i32;
    // The rank rule of the whole matrix (max(m, n) eps), not of the stacked R's (64 rows
    // at 129x32): a rank-31 matrix of 129x32 went unflagged through the planner on an H100
    // (docs/results/h100/2026-12-07-gpu-suites), by reading this threshold.
    p.rank_rows = m as i32;
    let top_kind = if warp_wins::<T>(rows, n) {
        QrKernel::Warp
    } else if tile_fits::<T>(dev, rows, n) {
        QrKernel::Tile
    } else {
        QrKernel::Wy
    };
    launch_single::<T>(dev, top_kind, stream, p, None)?;
    unscale_r::<T>(dev, stream, c, mx)?;
    if !wantq {
        return Ok(());
    }
    let uq = c.q.unwrap();
    // `above`: the Q of the level above, row-major n columns per matrix.
    let (mut above, mut above_bs, mut above_rs, mut above_cs) =
        (qtop, (rows * n) as i64, n as i64, 1i64);
    for (l, lv) in levels.iter().enumerate().rev() {
        let (cptr, c_bs, c_rs, c_cs) = if l == 0 {
            (uq.ptr, uq.bs, uq.rs, uq.cs)
        } else {
            (
                sc.alloc(batch * lv.rows * n * es)?,
                (lv.rows * n) as i64,
                n as i64,
                1,
            )
        };
        let g = GemmArgs {
            a: lv.qleaf,
            a_bs: (lv.rows * n) as i64,
            a_is: (LEAF * n) as i64,
            a_rs: n as i64,
            a_cs: 1,
            b: above,
            b_bs: above_bs,
            b_is: n as i64 * above_rs,
            b_rs: above_rs,
            b_cs: above_cs,
            c: cptr,
            c_bs,
            c_is: c_rs * LEAF as i64,
            c_rs,
            c_cs,
            batch: batch as i32,
            inner: lv.nch as i32,
            m: LEAF as i32,
            m_last: lv.mlast as i32,
            n: n as i32,
            kk: n as i32,
        };
        gemm::<T>(dev, stream, g)?;
        above = cptr;
        above_bs = c_bs;
        above_rs = c_rs;
        above_cs = c_cs;
    }
    Ok(())
}

/// Run QR with the kernel `kind` (Auto resolved by the caller) on `stream`.
pub(crate) unsafe fn run<T: Real>(
    dev: &Device,
    kind: QrKernel,
    stream: RawStream,
    c: &Call,
) -> Result<()> {
    let mut sc = Scratch::new(stream);
    match kind {
        // Every kernel flags an R beyond the range itself (BL_INFO_OVERFLOW); TSQR with
        // its own pass, as it scales the batch in one.
        QrKernel::Tall => tall::<T>(dev, stream, c, &mut sc),
        QrKernel::Blocked => super::qr_blocked::run::<T>(dev, stream, c, &mut sc),
        k => launch_single::<T>(dev, k, stream, base_args(c), c.tile),
    }
}
