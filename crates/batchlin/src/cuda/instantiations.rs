//! Every CUDA kernel instantiation the library ships: the one list.
//!
//! This module is read twice: by the crate (the launch code picks instantiations from
//! these tables) and by the build script (`build.rs`, `#[path]`), which compiles every
//! entry of [`all`] ahead of time with NVRTC for every architecture of [`ARCHS`] and
//! embeds the CUBINs. So it uses `std` only, never `crate::`. Adding a kernel is one
//! entry in [`all`] (and, for a new `.cu` file, one arm in [`module_file`]): the build
//! embeds it, `compile_all_kernels` and the coverage tests cover it.

/// The architectures whose CUBINs the build embeds (NVRTC 13.0 emits SASS for each; a
/// device of the same major and a higher minor runs the nearest lower one's CUBIN, any
/// other device compiles with NVRTC at run time).
#[allow(dead_code)] // read by build.rs and the tests
pub(crate) const ARCHS: &[&str] = &["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"];

/// The element types every kernel is instantiated for: (name in kernel names, C type).
pub(crate) const TYPES: [(&str, &str); 2] = [("f32", "float"), ("f64", "double")];

/// (rows M, columns W, lanes a column RS) of the warp kernel, as instantiated in
/// kernels/qr.cu, for the types whose `warp_lane_rows` allow M / RS rows a lane. Above 32
/// columns the tile kernel took over (2026-12-01, docs/results/h200/2026-12-01-qr-tile/:
/// 4096x64x64 f32 0.31 ms against the warp kernel's 0.45 with each column over two lanes).
pub(crate) const REG_SHAPES: &[(usize, usize, usize)] = &[
    (8, 8, 1),
    (16, 8, 1),
    (32, 8, 1),
    (16, 16, 1),
    (32, 16, 1),
    (64, 16, 1),
    (16, 32, 1),
    (32, 32, 1),
    (64, 32, 1),
];

/// Rows a lane of the warp kernel may hold: 64 in float32, 32 in float64 (beyond that
/// the registers spill).
pub(crate) fn warp_lane_rows(tn: &str) -> usize {
    if tn == "f64" {
        32
    } else {
        64
    }
}

/// The tile kernel's instantiations, smallest first, as
/// `[rows, cols, rg, cg, minb, fc, qc, stage]` (`TileConfig`); each the fastest of the
/// thread grids, register caps and chunk lengths measured for its capacity (gpu-lab
/// `gridsweep`, `tiletime128`, `tilenarrow`; docs/results/h200/2026-12-01-qr-tile/ and
/// docs/results/h200/2026-12-01-qr-tile-chunks-staging/).
pub(crate) fn tile_list(tn: &str) -> &'static [[usize; 8]] {
    if tn == "f32" {
        &[
            [64, 64, 4, 16, 8, 8, 8, 0],
            [128, 32, 8, 8, 8, 8, 8, 0],
            [128, 64, 8, 16, 1, 8, 8, 1],
            [128, 128, 8, 32, 2, 16, 16, 0],
        ]
    } else {
        &[
            [64, 64, 8, 16, 1, 8, 8, 1],
            [128, 64, 16, 16, 1, 16, 16, 1],
            [128, 128, 16, 32, 1, 16, 16, 1],
        ]
    }
}

/// The kernel name of a tile instantiation `[rows, cols, rg, cg, minb, fc, qc, stage]`.
pub(crate) fn tile_name(tn: &str, t: &[usize; 8]) -> String {
    let [m, n, rg, cg, minb, fc, qc, st] = *t;
    format!("qr_tile_{tn}_m{m}_n{n}_g{rg}x{cg}_b{minb}_c{fc}x{qc}_s{st}")
}

/// The instantiation line of a tile instantiation.
pub(crate) fn tile_inst(tn: &str, ct: &str, t: &[usize; 8]) -> String {
    let [m, n, rg, cg, minb, fc, qc, st] = *t;
    format!("BL_QR_TILE({tn}, {ct}, {m}, {n}, {rg}, {cg}, {minb}, {fc}, {qc}, {st})")
}

/// Rows a lane of the `wy` kernel holds (instantiated in kernels/qr.cu): m <= 32 * RPL.
pub(crate) const WY_RPL: [usize; 2] = [2, 4];

/// (rows P, columns Q) capacities of the `warp` SVD kernel (kernels/svd.cu), smallest
/// first: lane j holds P rows of A's column j and Q of V's. float32 to 64 rows (199
/// registers at 64x32, no spills; 128 rows spill), float64 to 32 (240 registers at 32x32;
/// 64 rows spill).
pub(crate) fn svd_warp_shapes(tn: &str) -> &'static [(usize, usize)] {
    if tn == "f64" {
        &[(16, 16), (32, 16), (32, 32)]
    } else {
        &[(16, 16), (32, 16), (32, 32), (64, 16), (64, 32)]
    }
}

/// Padded sizes N of the `warp` eigh kernel (kernels/eigh.cu), smallest first: 32 / N
/// matrices a warp.
pub(crate) const EIGH_WARP_N: [usize; 3] = [8, 16, 32];

/// (kernel name, instantiation line) of the `warp` eigh kernel of padded size N.
pub(crate) fn eigh_warp_inst(tn: &str, ct: &str, n: usize) -> (String, String) {
    (
        format!("eigh_warp_{tn}_n{n}"),
        format!("BL_EIGH_WARP({tn}, {ct}, {n})"),
    )
}

/// (kernel name, instantiation line) of the `warp-ql` eigh kernel of padded size N (the
/// sizes of `EIGH_WARP_N`).
pub(crate) fn eigh_wql_inst(tn: &str, ct: &str, n: usize) -> (String, String) {
    (
        format!("eigh_wql_{tn}_n{n}"),
        format!("BL_EIGH_WQL({tn}, {ct}, {n})"),
    )
}

/// (kernel name, instantiation line) of the `warp-bisect` eigh kernel of padded size N
/// (the sizes of `EIGH_WARP_N`).
pub(crate) fn eigh_wbis_inst(tn: &str, ct: &str, n: usize) -> (String, String) {
    (
        format!("eigh_wbis_{tn}_n{n}"),
        format!("BL_EIGH_WBIS({tn}, {ct}, {n})"),
    )
}

/// (kernel name, instantiation line) of the `warp` SVD kernel of capacity (P, Q).
pub(crate) fn svd_warp_inst(tn: &str, ct: &str, (p, q): (usize, usize)) -> (String, String) {
    (
        format!("svd_warp_{tn}_p{p}_q{q}"),
        format!("BL_SVD_WARP({tn}, {ct}, {p}, {q})"),
    )
}

/// The `cluster` kernel's (columns, register budget) instantiations: `_b2` caps f32 at
/// 128 registers (faster at 256 threads a block, slower at 128: cuda-qr.md).
pub(crate) fn cluster_variants(tn: &str) -> &'static [(usize, usize)] {
    if tn == "f32" {
        &[(32, 1), (64, 1), (32, 2), (64, 2)]
    } else {
        &[(32, 1), (64, 1)]
    }
}

/// Whether `bq_panel_reg` is instantiated for the type and width (f64 at 32 columns
/// would spill).
pub(crate) fn has_reg_panel(tn: &str, nb: usize) -> bool {
    tn == "f32" || nb == 16
}

/// Whether `bq_panel_ru` is instantiated for the type, width and rows a thread (2: f32 at
/// 16/32 columns, f64 at 16; 4: f32 at 16 only; the others spill).
pub(crate) fn has_ru_panel(tn: &str, nb: usize, rpt: usize) -> bool {
    match rpt {
        2 => tn == "f32" || nb == 16,
        4 => tn == "f32" && nb == 16,
        _ => false,
    }
}

pub(crate) fn ru_inst(tn: &str, ct: &str, nb: usize, rpt: usize) -> (String, String) {
    (
        format!("bq_panel_ru_{tn}_nb{nb}_r{rpt}"),
        format!("BL_BQ_PANEL_RU({tn}, {ct}, {nb}, {rpt})"),
    )
}

/// (kernel name, instantiation line) of every blocked QR kernel (kernels/qr_blocked.cu).
pub(crate) fn blocked() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for (tn, ct) in TYPES {
        for (k, mac) in [
            ("bq_max", "BL_BQ_MAX"),
            ("bq_load", "BL_BQ_LOAD"),
            ("bq_eye", "BL_BQ_EYE"),
            ("bq_store_r", "BL_BQ_STORE_R"),
            ("bq_store_q", "BL_BQ_STORE_Q"),
        ] {
            v.push((format!("{k}_{tn}"), format!("{mac}({tn}, {ct})")));
        }
        for nb in [16, 32] {
            for (sm, sn) in [("true", "smem"), ("false", "glob")] {
                v.push((
                    format!("bq_panel_{sn}_{tn}_nb{nb}"),
                    format!("BL_BQ_PANEL({tn}, {ct}, {nb}, {sm}, {sn})"),
                ));
            }
            if has_reg_panel(tn, nb) {
                v.push((
                    format!("bq_panel_reg_{tn}_nb{nb}"),
                    format!("BL_BQ_PANEL_REG({tn}, {ct}, {nb})"),
                ));
            }
            for rpt in [2, 4] {
                if has_ru_panel(tn, nb, rpt) {
                    v.push(ru_inst(tn, ct, nb, rpt));
                }
            }
            for (k, mac) in [("bq_vtw", "BL_BQ_VTW"), ("bq_upd", "BL_BQ_UPD")] {
                v.push((
                    format!("{k}_{tn}_nb{nb}"),
                    format!("{mac}({tn}, {ct}, {nb})"),
                ));
            }
        }
    }
    v
}

/// The `tall` SVD's own steps (kernels/svd.cu): "scale" or "finish".
pub(crate) fn svd_tall_inst(tn: &str, ct: &str, step: &str) -> (String, String) {
    (
        format!("svd_tall_{step}_{tn}"),
        format!("BL_SVD_TALL_{}({tn}, {ct})", step.to_uppercase()),
    )
}

/// The `cusolver` SVD's copy into the caller's outputs (kernels/svd.cu).
pub(crate) fn svd_cus_unpack_inst(tn: &str, ct: &str) -> (String, String) {
    (
        format!("svd_cus_unpack_{tn}"),
        format!("BL_SVD_CUS_UNPACK({tn}, {ct})"),
    )
}

/// Every kernel instantiation: (kernel name, instantiation line). Each is one module,
/// built from [`module_source`].
pub(crate) fn all() -> Vec<(String, String)> {
    let mut insts = Vec::new();
    for (tn, ct) in TYPES {
        for &(mm, w, rs) in REG_SHAPES {
            if mm / rs <= warp_lane_rows(tn) {
                insts.push((
                    format!("qr_warp_{tn}_m{mm}_w{w}_s{rs}"),
                    format!("BL_QR_WARP({tn}, {ct}, {mm}, {w}, {rs})"),
                ));
            }
        }
        for t in tile_list(tn) {
            insts.push((tile_name(tn, t), tile_inst(tn, ct, t)));
        }
        insts.push((format!("qr_smem_{tn}"), format!("BL_QR_SMEM({tn}, {ct})")));
        for rpl in WY_RPL {
            insts.push((
                format!("qr_wy_{tn}_r{rpl}"),
                format!("BL_QR_WY({tn}, {ct}, {rpl})"),
            ));
        }
        for &(nc, minb) in cluster_variants(tn) {
            insts.push((
                format!("qr_cluster_{tn}_n{nc}_b{minb}"),
                format!("BL_QR_CLUSTER({tn}, {ct}, {nc}, {minb})"),
            ));
        }
        insts.push((format!("gemm_{tn}"), format!("BL_GEMM({tn}, {ct})")));
        insts.push((format!("eye_{tn}"), format!("BL_EYE({tn}, {ct})")));
        insts.push((
            format!("qr_unscale_r_{tn}"),
            format!("BL_QR_UNSCALE_R({tn}, {ct})"),
        ));
        insts.push((
            format!("eigh_block_{tn}"),
            format!("BL_EIGH_BLOCK({tn}, {ct})"),
        ));
        for n in EIGH_WARP_N {
            insts.push(eigh_warp_inst(tn, ct, n));
            insts.push(eigh_wql_inst(tn, ct, n));
            insts.push(eigh_wbis_inst(tn, ct, n));
        }
        insts.push((
            format!("svd_jacobi_{tn}"),
            format!("BL_SVD_JACOBI({tn}, {ct})"),
        ));
        insts.push((
            format!("svd_bidiag_{tn}"),
            format!("BL_SVD_BIDIAG({tn}, {ct})"),
        ));
        for step in ["scale", "finish"] {
            insts.push(svd_tall_inst(tn, ct, step));
        }
        insts.push(svd_cus_unpack_inst(tn, ct));
        for step in ["scale", "pack", "unpack", "probe", "check"] {
            insts.push((
                format!("cus_eigh_{step}_{tn}"),
                format!("BL_CUS_EIGH_{}({tn}, {ct})", step.to_uppercase()),
            ));
        }
        for &shape in svd_warp_shapes(tn) {
            insts.push(svd_warp_inst(tn, ct, shape));
        }
    }
    insts.extend(blocked());
    insts
}

/// The `.cu` file of `kernels/` (after `common.cu`) holding the template that
/// instantiation line `inst` instantiates.
pub(crate) fn module_file(inst: &str) -> &'static str {
    if inst.starts_with("BL_BQ_") {
        "qr_blocked.cu"
    } else if inst.starts_with("BL_QR_CLUSTER") {
        "qr_cluster.cu"
    } else if inst.starts_with("BL_EIGH_") {
        "eigh.cu"
    } else if inst.starts_with("BL_SVD_") {
        "svd.cu"
    } else if inst.starts_with("BL_CUS_") {
        "cusolver.cu"
    } else {
        "qr.cu"
    }
}

/// The lowest compute capability (major * 10 + minor) an instantiation compiles for:
/// thread-block clusters need 9.0.
pub(crate) fn min_cc(inst: &str) -> u32 {
    if inst.starts_with("BL_QR_CLUSTER") {
        90
    } else {
        80
    }
}

/// `sm_XY` as a compute capability number (90 for sm_90, 120 for sm_120).
pub(crate) fn arch_cc(arch: &str) -> Option<u32> {
    let d = arch.strip_prefix("sm_")?;
    if d.len() < 2 || !d.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    d.parse().ok()
}

/// The full source of one module: `common.cu`, the operation's file, the line.
pub(crate) fn module_source(common: &str, ops: &str, inst: &str) -> String {
    format!("#define BL_NO_DEFAULT_INST\n{common}\n{ops}\n{inst}\n")
}

/// The NVRTC options every module is compiled with, for `arch`.
pub(crate) fn nvrtc_options(arch: &str) -> [String; 2] {
    [format!("--gpu-architecture={arch}"), "--std=c++17".into()]
}

/// FNV-1a, 64 bits: a stable hash for cache keys and for matching embedded CUBINs to
/// the sources they were built from.
pub(crate) fn fnv64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}
