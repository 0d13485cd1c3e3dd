//! Blocked Householder QR across the grid (`QrKernel::Blocked`): the launch sequence for
//! the kernels of `kernels/qr_blocked.cu`. For large matrices, alone or in small batches,
//! where one block a matrix leaves most of the GPU idle.
//!
//! Per call, all on the caller's stream with pool scratch and no host synchronisation:
//! max|a| per matrix, the scaled column-major work copy W; per panel of NB columns the
//! panel factorisation (one block a matrix, T built on the way) and the trailing update
//! `C -= V T^T V^T C` as two grid-wide kernels (split-K `V^T C` with `T^T` applied to the
//! sum of the splits by the last block of each column tile, then `C -= V Z`); R and the
//! info words written out; for Q, Qw = I and the panels applied backwards
//! (`Qw = H_p Qw`, columns from the panel's first on), then Q.

use super::driver::{launch, zero_words, Device, Func, RawStream, Scratch};
use super::instantiations::{has_reg_panel, has_ru_panel, ru_inst};
use super::qr::{batch_arg, tname, Call, KMat};
use super::DeviceCaps;
use crate::{DType, Error, Problem, Real, Result};

/// Mirrors `struct BqArgs` in kernels/qr_blocked.cu.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
struct BqArgs {
    a: u64,
    a_bs: i64,
    a_rs: i64,
    a_cs: i64,
    o: u64,
    o_bs: i64,
    o_rs: i64,
    o_cs: i64,
    w: u64,
    w_bs: i64,
    c: u64,
    c_bs: i64,
    tau: u64,
    t: u64,
    t_bs: i64,
    y: u64,
    z: u64,
    mx: u64,
    info: u64,
    cnt: u64,
    batch: i32,
    m: i32,
    n: i32,
    k: i32,
    ldw: i32,
    k0: i32,
    nb: i32,
    panel: i32,
    c0: i32,
    c1: i32,
    nsplit: i32,
    srows: i32,
    ldy: i32,
    trans: i32,
    orows: i32,
    ocols: i32,
    tiles: i32,
}

/// Shared memory the panel kernels declare statically (at most, f64 NB = 32), kept free
/// of the dynamic panel copy.
const PANEL_STATIC_SMEM: usize = 20 * 1024;

/// Rows a panel may have for the register panel kernel (2 a thread, 512 threads).
const REG_PANEL_ROWS: usize = 1024;

/// Rows a thread of `bq_panel_ru` for a panel of `rows` rows (512 threads at most), if it
/// takes the panel.
fn ru_rpt(tn: &str, nb: usize, rows: usize) -> Option<usize> {
    [2, 4]
        .into_iter()
        .find(|&rpt| rows <= rpt * 512 && has_ru_panel(tn, nb, rpt))
}

struct Kernels {
    max: Func,
    load: Func,
    eye: Func,
    store_r: Func,
    store_q: Func,
    panel_smem: Func,
    panel_glob: Func,
    panel_reg: Option<Func>,
    /// `bq_panel_ru` at 2 and 4 rows a thread, where instantiated.
    panel_ru: [Option<Func>; 2],
    vtw: Func,
    upd: Func,
}

fn ru_func(
    dev: &Device,
    tn: &str,
    ct: &str,
    nb: usize,
    rpt: usize,
    want: bool,
) -> Result<Option<Func>> {
    if !want || !has_ru_panel(tn, nb, rpt) {
        return Ok(None);
    }
    let (name, inst) = ru_inst(tn, ct, nb, rpt);
    dev.function(&name, &inst, 0).map(Some)
}

/// The kernels of a call; `ru_for`: whether the call uses `bq_panel_ru` at 2 / 4 rows a
/// thread (only those are compiled).
fn kernels<T: Real>(dev: &Device, nb: usize, wantq: bool, ru_for: [bool; 2]) -> Result<Kernels> {
    let (tn, ct) = tname::<T>();
    let simple =
        |k: &str, mac: &str| dev.function(&format!("{k}_{tn}"), &format!("{mac}({tn}, {ct})"), 0);
    let with_nb = |k: &str, mac: &str| {
        dev.function(
            &format!("{k}_{tn}_nb{nb}"),
            &format!("{mac}({tn}, {ct}, {nb})"),
            0,
        )
    };
    let panel = |sm: &str, sn: &str, smem: usize| {
        dev.function(
            &format!("bq_panel_{sn}_{tn}_nb{nb}"),
            &format!("BL_BQ_PANEL({tn}, {ct}, {nb}, {sm}, {sn})"),
            smem,
        )
    };
    let store_r = simple("bq_store_r", "BL_BQ_STORE_R")?;
    Ok(Kernels {
        max: simple("bq_max", "BL_BQ_MAX")?,
        load: simple("bq_load", "BL_BQ_LOAD")?,
        eye: if wantq {
            simple("bq_eye", "BL_BQ_EYE")?
        } else {
            store_r
        },
        store_r,
        store_q: if wantq {
            simple("bq_store_q", "BL_BQ_STORE_Q")?
        } else {
            store_r
        },
        panel_smem: panel(
            "true",
            "smem",
            dev.smem_optin.saturating_sub(PANEL_STATIC_SMEM),
        )?,
        panel_glob: panel("false", "glob", 0)?,
        panel_reg: if has_reg_panel(tn, nb) {
            Some(dev.function(
                &format!("bq_panel_reg_{tn}_nb{nb}"),
                &format!("BL_BQ_PANEL_REG({tn}, {ct}, {nb})"),
                0,
            )?)
        } else {
            None
        },
        panel_ru: [
            ru_func(dev, tn, ct, nb, 2, ru_for[0])?,
            ru_func(dev, tn, ct, nb, 4, ru_for[1])?,
        ],
        vtw: with_nb("bq_vtw", "BL_BQ_VTW")?,
        upd: with_nb("bq_upd", "BL_BQ_UPD")?,
    })
}

/// Panel width: 32 columns, or 16 where a 32-wide first panel does not fit in shared
/// memory but a 16-wide one does (f64 beyond ~900 rows), or where only the 16-wide
/// `bq_panel_ru` takes the panels (f64 with batch <= SMs and m <= 1024: 1x256x256 1.30 ->
/// 0.85 ms). The planner calls this; `Params::qr_blocked_panel` overrides it.
pub(crate) fn panel_width(p: &Problem, caps: &DeviceCaps) -> usize {
    let tn = if p.dtype == DType::F64 { "f64" } else { "f32" };
    let (batch, m) = (p.batch, p.m);
    if batch <= caps.sm_count as usize && ru_rpt(tn, 32, m).is_none() && ru_rpt(tn, 16, m).is_some()
    {
        return 16;
    }
    let es = p.dtype.size();
    let room = caps.smem_optin.saturating_sub(PANEL_STATIC_SMEM);
    if m * 32 * es <= room || m * 16 * es > room {
        32
    } else {
        16
    }
}

/// Row splits of `V^T C`: enough blocks for two waves of the GPU, splits of >= 64 rows.
fn splits(dev: &Device, batch: usize, rows: usize, ctiles: usize) -> (usize, usize) {
    let target = 2 * dev.sm_count as usize;
    let have = ctiles * batch;
    let want = target
        .div_ceil(have.max(1))
        .clamp(1, rows.div_ceil(64).max(1));
    let srows = rows.div_ceil(want).div_ceil(32) * 32;
    (rows.div_ceil(srows), srows)
}

fn grid(blocks: usize) -> Result<(u32, u32)> {
    if blocks > i32::MAX as usize {
        return Err(Error::Overflow(
            "batch too large for the blocked kernel's grid".into(),
        ));
    }
    Ok((blocks as u32, 1))
}

/// max|a| of every matrix of a batch (m x n at `a`) into `mx` (a u64 word a matrix: the
/// bits of the value, which order as the values do; NaN and Inf as +Inf), as the blocked
/// kernel keeps it: zeroed, then raised by `bq_max` over 32 x 32 tiles. TSQR scales its
/// levels by it.
pub(crate) unsafe fn max_abs_bits<T: Real>(
    dev: &Device,
    stream: RawStream,
    batch: usize,
    m: usize,
    n: usize,
    a: KMat,
    mx: u64,
) -> Result<()> {
    let (tn, ct) = tname::<T>();
    let f = dev.function(
        &format!("bq_max_{tn}"),
        &format!("BL_BQ_MAX({tn}, {ct})"),
        0,
    )?;
    zero_words(mx, batch * 2, stream)?;
    let tl = tiles32(m, n);
    let p = BqArgs {
        a: a.ptr,
        a_bs: a.bs,
        a_rs: a.rs,
        a_cs: a.cs,
        mx,
        batch: batch_arg(batch)?,
        m: m as i32,
        n: n as i32,
        tiles: tl as i32,
        ..Default::default()
    };
    launch(f, grid(batch * tl)?, 256, 0, stream, &p)
}

/// 32 x 32 tiles of a rows x cols matrix.
fn tiles32(rows: usize, cols: usize) -> usize {
    rows.div_ceil(32) * cols.div_ceil(32)
}

/// Run the blocked QR of `c` on `stream`.
pub(crate) unsafe fn run<T: Real>(
    dev: &Device,
    stream: RawStream,
    c: &Call,
    sc: &mut Scratch,
) -> Result<()> {
    let (batch, m, n) = (c.batch, c.m, c.n);
    let k = m.min(n);
    let wantq = c.q.is_some();
    let qc = if wantq { c.qcols } else { 0 };
    let es = std::mem::size_of::<T>();
    let nbk = c.panel;
    let npan = k.div_ceil(nbk);
    let (tn, _) = tname::<T>();
    // The unrolled register panel where the panel blocks do not share SMs (a lone matrix,
    // small batches); beyond that its long unrolled code is slower than bq_panel_reg
    // (256x256x256 f32: 2.42 against 2.24 ms; blocked-QR lab,
    // docs/results/h200/2026-11-30-qr-blocked-panel-prefetch/).
    let ru_ok = batch <= dev.sm_count as usize;
    let ru_of = |rows: usize| if ru_ok { ru_rpt(tn, nbk, rows) } else { None };
    let mut ru_for = [false; 2];
    for panel in 0..npan {
        if let Some(rpt) = ru_of(m - panel * nbk) {
            ru_for[rpt / 4] = true;
        }
    }
    let ks = kernels::<T>(dev, nbk, wantq, ru_for)?;
    let ldw = m;
    let ldy = n.max(qc);

    // The largest split count of any update, to size the partials.
    let mut max_split = 1;
    for p in 0..npan {
        let k0 = p * nbk;
        let nb = nbk.min(k - k0);
        let rows = m - k0;
        for cols in [n - (k0 + nb), if wantq { qc - k0 } else { 0 }] {
            if cols > 0 {
                max_split = max_split.max(splits(dev, batch, rows, cols.div_ceil(64)).0);
            }
        }
    }

    let w = sc.alloc(batch * m * n * es)?;
    let qw = if wantq {
        sc.alloc(batch * m * qc * es)?
    } else {
        0
    };
    let tau = sc.alloc(batch * k * es)?;
    let t_bs = npan * nbk * nbk;
    let t = sc.alloc(batch * t_bs * es)?;
    let y = sc.alloc(batch * max_split * nbk * ldy * es)?;
    let z = sc.alloc(batch * nbk * ldy * es)?;
    let mx = sc.alloc(batch * 8)?;
    zero_words(mx, batch * 2, stream)?;
    // bq_vtw's counters, one a (matrix, 64-column tile); each returns to zero after use.
    let ncnt = batch * ldy.div_ceil(64);
    let cnt = sc.alloc(ncnt * 4)?;
    zero_words(cnt, ncnt, stream)?;

    let base = BqArgs {
        a: c.a.ptr,
        a_bs: c.a.bs,
        a_rs: c.a.rs,
        a_cs: c.a.cs,
        w,
        w_bs: (m * n) as i64,
        tau,
        t,
        t_bs: t_bs as i64,
        y,
        z,
        mx,
        info: c.info,
        cnt,
        batch: batch as i32,
        m: m as i32,
        n: n as i32,
        k: k as i32,
        ldw: ldw as i32,
        orows: m as i32,
        ocols: n as i32,
        ..Default::default()
    };

    // max|a|, then the scaled work copy.
    let tl = tiles32(m, n);
    let p = BqArgs {
        tiles: tl as i32,
        ..base
    };
    launch(ks.max, grid(batch * tl)?, 256, 0, stream, &p)?;
    launch(ks.load, grid(batch * tl)?, 256, 0, stream, &p)?;

    // The trailing update of C (rows k0.., columns c0..c1) by panel `panel`.
    let update = |panel: usize, cptr: u64, c_bs: usize, c0: usize, c1: usize, trans: bool| {
        let k0 = panel * nbk;
        let nb = nbk.min(k - k0);
        let rows = m - k0;
        let cols = c1 - c0;
        let ctiles = cols.div_ceil(64);
        let (nsplit, srows) = splits(dev, batch, rows, ctiles);
        let p = BqArgs {
            c: cptr,
            c_bs: c_bs as i64,
            k0: k0 as i32,
            nb: nb as i32,
            panel: panel as i32,
            c0: c0 as i32,
            c1: c1 as i32,
            nsplit: nsplit as i32,
            srows: srows as i32,
            ldy: cols as i32,
            trans: trans as i32,
            ..base
        };
        launch(
            ks.vtw,
            grid(batch * nsplit * ctiles)?,
            256,
            0,
            stream,
            &BqArgs {
                tiles: (nsplit * ctiles) as i32,
                ..p
            },
        )?;
        let ut = rows.div_ceil(64) * ctiles;
        launch(
            ks.upd,
            grid(batch * ut)?,
            256,
            0,
            stream,
            &BqArgs {
                tiles: ut as i32,
                ..p
            },
        )
    };

    // Factor: panel by panel.
    let room = dev.smem_optin.saturating_sub(PANEL_STATIC_SMEM);
    for panel in 0..npan {
        let k0 = panel * nbk;
        let nb = nbk.min(k - k0);
        let rows = m - k0;
        let threads = (rows.div_ceil(2).div_ceil(32) * 32).clamp(64, 512);
        let smem = rows * nb * es;
        let p = BqArgs {
            k0: k0 as i32,
            nb: nb as i32,
            panel: panel as i32,
            ..base
        };
        if let Some((rpt, f)) = ru_of(rows).and_then(|rpt| Some((rpt, ks.panel_ru[rpt / 4]?))) {
            let threads = (rows.div_ceil(rpt).div_ceil(32) * 32).max(64);
            launch(f, grid(batch)?, threads as u32, 0, stream, &p)?;
        } else if let (Some(f), true) = (ks.panel_reg, rows <= REG_PANEL_ROWS) {
            launch(f, grid(batch)?, threads as u32, 0, stream, &p)?;
        } else if smem <= room {
            launch(
                ks.panel_smem,
                grid(batch)?,
                threads as u32,
                smem as u32,
                stream,
                &p,
            )?;
        } else {
            launch(ks.panel_glob, grid(batch)?, threads as u32, 0, stream, &p)?;
        }
        if k0 + nb < n {
            update(panel, w, m * n, k0 + nb, n, true)?;
        }
    }

    // R and the info words.
    let r = c.r;
    let tr = tiles32(c.rrows, n);
    launch(
        ks.store_r,
        grid(batch * tr)?,
        256,
        0,
        stream,
        &BqArgs {
            o: r.ptr,
            o_bs: r.bs,
            o_rs: r.rs,
            o_cs: r.cs,
            orows: c.rrows as i32,
            ocols: n as i32,
            tiles: tr as i32,
            ..base
        },
    )?;
    if !wantq {
        return Ok(());
    }

    // Q: Qw = I, the panels applied backwards, then written out.
    let tq = tiles32(m, qc);
    let pq = BqArgs {
        c: qw,
        c_bs: (m * qc) as i64,
        orows: m as i32,
        ocols: qc as i32,
        tiles: tq as i32,
        ..base
    };
    launch(ks.eye, grid(batch * tq)?, 256, 0, stream, &pq)?;
    for panel in (0..npan).rev() {
        let k0 = panel * nbk;
        if k0 < qc {
            update(panel, qw, m * qc, k0, qc, false)?;
        }
    }
    let q = c.q.unwrap();
    launch(
        ks.store_q,
        grid(batch * tq)?,
        256,
        0,
        stream,
        &BqArgs {
            o: q.ptr,
            o_bs: q.bs,
            o_rs: q.rs,
            o_cs: q.cs,
            ..pq
        },
    )
}
