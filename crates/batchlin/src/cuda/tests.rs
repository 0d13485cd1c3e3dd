//! GPU QR tests: every forced kernel at shapes around its boundaries, against a float64
//! CPU reference. With no CUDA they print "skipped: no CUDA (reason)" and pass.

use super::*;
use crate::DType;

fn backend() -> Option<&'static CudaBackend> {
    match CudaBackend::get() {
        Ok(b) => Some(b),
        Err(e) => {
            // Straight to the stream, past the test harness's capture, so that it shows.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "skipped: no CUDA ({})", e.message());
            None
        }
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    fn normal(&mut self) -> f64 {
        let u1 = ((self.next() >> 11) + 1) as f64 / 9007199254740993.0;
        let u2 = (self.next() >> 11) as f64 / 9007199254740992.0;
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum Special {
    Rand,
    NanOne,
    Zeros,
    RankOne,
    Tiny,
    Huge,
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum Layout {
    RowMajor,
    ColMajor,
    Padded,
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum Mode {
    Reduced,
    Complete,
    R,
}

/// Runs one case; returns Ok(false) when the forced kernel does not take the shape.
#[allow(clippy::too_many_arguments)]
fn case<T: Real>(
    kernel: QrKernel,
    batch: usize,
    m: usize,
    n: usize,
    mode: Mode,
    lay: Layout,
    sp: Special,
    seed: u64,
) -> Result<bool> {
    let k = m.min(n);
    let (qc, rr) = match mode {
        Mode::Complete => (m, m),
        _ => (k, k),
    };
    let (rs, cs, bs) = match lay {
        Layout::RowMajor => (n, 1, m * n),
        Layout::ColMajor => (1, m, m * n),
        Layout::Padded => (2 * n + 3, 2, m * (2 * n + 3) + 5),
    };
    let mut rng = Rng(seed);
    let mut a = vec![0f64; bs * batch];
    for x in a.iter_mut() {
        *x = rng.normal();
    }
    let at = |b: usize, i: usize, j: usize| b * bs + i * rs + j * cs;
    for b in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let v = a[at(b, i, j)];
                a[at(b, i, j)] = match sp {
                    Special::Zeros if b % 2 == 0 => 0.0,
                    Special::RankOne => a[at(b, i, 0)] * a[at(b, 0, j)] + 0.0 * v,
                    Special::Tiny => v * 1e-30,
                    Special::Huge => v * 1e37,
                    _ => v,
                };
            }
        }
    }
    if sp == Special::NanOne {
        a[at(batch / 2, m / 2, n / 2)] = f64::NAN;
        a[at(batch - 1, m - 1, 0)] = f64::INFINITY;
    }
    let at_: Vec<T> = a.iter().map(|&x| T::from_f64(x)).collect();
    let a: Vec<f64> = at_.iter().map(|x| x.to_f64()).collect();
    let poison = T::from_f64(-7.77e7);
    let mut q = vec![poison; batch * m * qc];
    let mut r = vec![poison; batch * rr * n];
    let mut info = vec![Info(0xdead); batch];
    // Q row-major after row-major input (the kernels' 16-byte row stores), column-major
    // otherwise; R row-major: exercises the output strides too.
    let (q_rs, q_cs) = if lay == Layout::RowMajor {
        (qc, 1)
    } else {
        (1, m)
    };
    let res = qr_host::<T>(
        kernel,
        batch,
        m,
        n,
        HostMat {
            data: &at_,
            batch_stride: bs,
            row_stride: rs,
            col_stride: cs,
        },
        if mode == Mode::R {
            None
        } else {
            Some(HostMatMut {
                data: &mut q,
                batch_stride: m * qc,
                row_stride: q_rs,
                col_stride: q_cs,
            })
        },
        qc,
        HostMatMut {
            data: &mut r,
            batch_stride: rr * n,
            row_stride: n,
            col_stride: 1,
        },
        rr,
        &mut info,
    );
    match res {
        Err(Error::Argument(_)) if kernel != QrKernel::Auto => return Ok(false),
        Err(e) => return Err(e),
        Ok(()) => {}
    }
    let eps = T::EPSILON.to_f64();
    let tol = if T::DTYPE == DType::F32 { 1e-4 } else { 1e-12 };
    let tag = format!(
        "{} {:?} {batch}x{m}x{n} {mode:?} {lay:?} {sp:?}",
        kernel.name(),
        T::DTYPE
    );
    let mut rank_flags = 0;
    for b in 0..batch {
        let qv = |i: usize, j: usize| q[b * m * qc + i * q_rs + j * q_cs].to_f64();
        let rv = |i: usize, j: usize| r[b * rr * n + i * n + j].to_f64();
        let bad = (0..m).any(|i| (0..n).any(|j| !a[at(b, i, j)].is_finite()));
        for i in 0..rr {
            for j in 0..n {
                assert!(
                    r[b * rr * n + i * n + j] != poison,
                    "{tag}: R({b},{i},{j}) unwritten"
                );
            }
        }
        if mode != Mode::R {
            for x in &q[b * m * qc..(b + 1) * m * qc] {
                assert!(*x != poison, "{tag}: Q of matrix {b} unwritten");
            }
        }
        if bad {
            assert!(
                info[b].nonfinite(),
                "{tag}: matrix {b} has NaN/Inf but info {:?}",
                info[b]
            );
            assert!(
                r[b * rr * n..(b + 1) * rr * n]
                    .iter()
                    .all(|x| x.to_f64().is_nan()),
                "{tag}: R of NaN matrix {b} not all NaN"
            );
            if mode != Mode::R {
                assert!(
                    q[b * m * qc..(b + 1) * m * qc]
                        .iter()
                        .all(|x| x.to_f64().is_nan()),
                    "{tag}: Q of NaN matrix {b} not all NaN"
                );
            }
            continue;
        }
        assert!(
            !info[b].nonfinite(),
            "{tag}: matrix {b} finite but info {:?}",
            info[b]
        );
        if info[b].rank_deficient() {
            rank_flags += 1;
        }
        for i in 0..rr {
            for j in 0..n.min(i) {
                assert!(
                    rv(i, j) == 0.0,
                    "{tag}: R({b},{i},{j}) = {} below the diagonal",
                    rv(i, j)
                );
            }
        }
        for i in 0..k {
            assert!(rv(i, i) >= 0.0, "{tag}: R({b},{i},{i}) = {} < 0", rv(i, i));
        }
        if mode == Mode::R {
            // R^T R = A^T A
            let (mut d, mut s) = (0f64, 0f64);
            for i in 0..n {
                for j in 0..n {
                    let ata: f64 = (0..m).map(|l| a[at(b, l, i)] * a[at(b, l, j)]).sum();
                    let rtr: f64 = (0..rr.min(i + 1).min(j + 1))
                        .map(|l| rv(l, i) * rv(l, j))
                        .sum();
                    d += (ata - rtr) * (ata - rtr);
                    s += ata * ata;
                }
            }
            let e = if s > 0.0 { (d / s).sqrt() } else { d.sqrt() };
            assert!(
                e <= 10.0 * tol,
                "{tag}: matrix {b}: ||R^T R - A^T A|| / ||A^T A|| = {e:e}"
            );
            continue;
        }
        let (mut nd, mut na) = (0f64, 0f64);
        for i in 0..m {
            for j in 0..n {
                let s: f64 = (0..qc.min(rr)).map(|l| qv(i, l) * rv(l, j)).sum();
                nd += (a[at(b, i, j)] - s).powi(2);
                na += a[at(b, i, j)].powi(2);
            }
        }
        let rec = if na > 0.0 {
            (nd / na).sqrt()
        } else {
            nd.sqrt()
        };
        let mut no = 0f64;
        for c1 in 0..qc {
            for c2 in 0..qc {
                let s: f64 = (0..m).map(|i| qv(i, c1) * qv(i, c2)).sum();
                no += (s - if c1 == c2 { 1.0 } else { 0.0 }).powi(2);
            }
        }
        let orth = (no / qc as f64).sqrt();
        assert!(
            rec <= tol,
            "{tag}: matrix {b}: ||A - QR||/||A|| = {rec:e} ({:.1} eps)",
            rec / eps
        );
        assert!(
            orth <= tol,
            "{tag}: matrix {b}: ||Q^T Q - I|| = {orth:e} ({:.1} eps)",
            orth / eps
        );
    }
    if sp == Special::Zeros {
        assert!(
            rank_flags > 0,
            "{tag}: zero matrices not flagged rank deficient"
        );
    }
    if sp == Special::RankOne && k > 1 {
        assert!(
            rank_flags > 0,
            "{tag}: rank-one matrices not flagged rank deficient"
        );
    }
    Ok(true)
}

const SHAPES: &[(usize, usize, usize)] = &[
    (7, 1, 1),
    (7, 5, 3),
    (9, 8, 8),
    (9, 9, 7),
    (9, 16, 16),
    (9, 17, 16),
    (9, 3, 9),
    (9, 32, 32),
    (5, 33, 30),
    (5, 64, 32),
    (5, 65, 20),
    (3, 128, 32),
    (3, 129, 31),
    // the tile kernel's capacities: 64 x 64, 128 x 32, 128 x 64, 128 x 128
    (3, 96, 33),
    (3, 127, 64),
    (3, 128, 65),
    (3, 64, 127),
    (2, 1, 128),
    (3, 20, 64),
    (3, 63, 33),
    (3, 47, 50),
    (3, 64, 64),
    (3, 65, 60),
    (2, 128, 64),
    (2, 128, 128),
    (2, 100, 128),
    (2, 200, 150),
    (2, 300, 20),
    (2, 1000, 64),
    // the cluster kernel: one to eight blocks of rows, 32 and 64 columns, its 2048-row edge
    (2, 256, 64),
    (2, 257, 33),
    (2, 1500, 63),
    (2, 2048, 64),
    (2, 2049, 40),
    (3, 700, 32),
    // several panels of the blocked kernel
    (2, 300, 200),
    (2, 100, 300),
    (2, 513, 257),
    (1, 1024, 1024),
];

fn sweep<T: Real>() -> Result<()> {
    let mut seed = 1;
    for kernel in QrKernel::FORCEABLE.into_iter().chain([QrKernel::Auto]) {
        let (mut ran, mut skipped) = (0, 0);
        for &(b, m, n) in SHAPES {
            seed += 1;
            if case::<T>(
                kernel,
                b,
                m,
                n,
                Mode::Reduced,
                Layout::RowMajor,
                Special::Rand,
                seed,
            )? {
                ran += 1;
            } else {
                skipped += 1;
            }
        }
        for (m, n, mode, lay) in [
            (24, 20, Mode::Complete, Layout::ColMajor),
            (12, 16, Mode::Complete, Layout::RowMajor),
            (100, 40, Mode::Complete, Layout::ColMajor),
            (60, 50, Mode::R, Layout::Padded),
            (128, 100, Mode::Complete, Layout::Padded),
            (30, 30, Mode::Reduced, Layout::Padded),
            (30, 30, Mode::R, Layout::RowMajor),
            (300, 40, Mode::R, Layout::ColMajor),
            (300, 40, Mode::Reduced, Layout::Padded),
            (300, 200, Mode::Complete, Layout::ColMajor),
            (130, 300, Mode::Complete, Layout::Padded),
            (200, 300, Mode::Reduced, Layout::Padded),
            (513, 257, Mode::R, Layout::RowMajor),
        ] {
            seed += 1;
            if case::<T>(kernel, 5, m, n, mode, lay, Special::Rand, seed)? {
                ran += 1;
            } else {
                skipped += 1;
            }
        }
        for sp in [
            Special::NanOne,
            Special::Zeros,
            Special::RankOne,
            Special::Tiny,
            Special::Huge,
        ] {
            for (m, n) in [(32, 28), (60, 50), (120, 90), (260, 24), (150, 100)] {
                seed += 1;
                if case::<T>(kernel, 5, m, n, Mode::Reduced, Layout::ColMajor, sp, seed)? {
                    ran += 1;
                } else {
                    skipped += 1;
                }
            }
        }
        println!(
            "{:?} {}: {ran} cases passed, {skipped} shapes not taken by this kernel",
            T::DTYPE,
            kernel.name()
        );
        assert!(ran > 0, "{} ran no case", kernel.name());
    }
    Ok(())
}

#[test]
fn qr_every_kernel_f32() {
    let Some(be) = backend() else { return };
    println!(
        "device: {} ({} SMs, sm_{}{})",
        be.device_name(),
        be.sm_count(),
        be.compute_capability().0,
        be.compute_capability().1
    );
    sweep::<f32>().unwrap();
}

/// Batches of tall matrices beyond twice the SM count: Auto sends them to the cluster
/// kernel from 512 rows (Hopper and later) and to TSQR from 256 (not to smem, which they
/// fit); the results hold either way.
#[test]
fn qr_auto_large_batches_of_tall_matrices() {
    let Some(be) = backend() else { return };
    let batch = 2 * be.sm_count() as usize + 7;
    let cluster = be.compute_capability().0 >= 9;
    for (m, n, want) in [
        (512, 64, if cluster { "cluster" } else { "tall" }),
        (300, 40, "tall"),
    ] {
        let k = m.min(n);
        assert_eq!(be.qr_kernel_for::<f32>(batch, m, n, Some(k)).name(), want);
        assert_eq!(be.qr_kernel_for::<f64>(batch, m, n, None).name(), want);
        for (seed, mode, lay) in [
            (91, Mode::Reduced, Layout::RowMajor),
            (92, Mode::R, Layout::ColMajor),
        ] {
            assert!(
                case::<f32>(QrKernel::Auto, batch, m, n, mode, lay, Special::Rand, seed).unwrap()
            );
            assert!(case::<f64>(
                QrKernel::Auto,
                batch,
                m,
                n,
                mode,
                lay,
                Special::Rand,
                seed + 10
            )
            .unwrap());
        }
    }
}

#[test]
fn qr_every_kernel_f64() {
    if backend().is_none() {
        return;
    }
    sweep::<f64>().unwrap();
}

/// The device entry point on a caller's stream with caller's device pointers: Q written
/// transposed, info left on the device until read here.
#[test]
fn qr_device_on_callers_stream() {
    let Some(be) = backend() else { return };
    let (batch, m, n) = (33usize, 40usize, 24usize);
    let mut rng = Rng(99);
    let a: Vec<f32> = (0..batch * m * n).map(|_| rng.normal() as f32).collect();
    unsafe {
        be.dev.make_current().unwrap();
        let mut stream: cu::CUstream = std::ptr::null_mut();
        driver::check(cu::cuStreamCreate(&mut stream, 1), "cuStreamCreate").unwrap();
        let alloc = |bytes: usize| {
            let mut p = 0;
            driver::check(cu::cuMemAlloc_v2(&mut p, bytes), "cuMemAlloc").unwrap();
            p
        };
        let (da, dq, dr, di) = (
            alloc(a.len() * 4),
            alloc(batch * m * n * 4),
            alloc(batch * n * n * 4),
            alloc(batch * 4),
        );
        driver::check(
            cu::cuMemcpyHtoD_v2(da, a.as_ptr() as *const _, a.len() * 4),
            "htod",
        )
        .unwrap();
        // Q stored transposed (n x m per matrix, i.e. column-major m x n)
        let qm = DevMat {
            ptr: dq,
            batch_stride: (m * n) as i64,
            row_stride: 1,
            col_stride: m as i64,
        };
        let am = DevMat {
            ptr: da,
            batch_stride: (m * n) as i64,
            row_stride: n as i64,
            col_stride: 1,
        };
        let rm = DevMat {
            ptr: dr,
            batch_stride: (n * n) as i64,
            row_stride: n as i64,
            col_stride: 1,
        };
        qr_device::<f32>(
            be,
            stream,
            QrKernel::Auto,
            batch,
            m,
            n,
            am,
            Some(qm),
            n,
            rm,
            n,
            di,
        )
        .unwrap();
        driver::check(cu::cuStreamSynchronize(stream), "sync").unwrap();
        let mut q = vec![0f32; batch * m * n];
        let mut r = vec![0f32; batch * n * n];
        let mut info = vec![0u32; batch];
        driver::check(
            cu::cuMemcpyDtoH_v2(q.as_mut_ptr() as *mut _, dq, q.len() * 4),
            "dtoh",
        )
        .unwrap();
        driver::check(
            cu::cuMemcpyDtoH_v2(r.as_mut_ptr() as *mut _, dr, r.len() * 4),
            "dtoh",
        )
        .unwrap();
        driver::check(
            cu::cuMemcpyDtoH_v2(info.as_mut_ptr() as *mut _, di, batch * 4),
            "dtoh",
        )
        .unwrap();
        for p in [da, dq, dr, di] {
            let _ = cu::cuMemFree_v2(p);
        }
        let _ = cu::cuStreamDestroy_v2(stream);
        for b in 0..batch {
            assert_eq!(info[b], 0);
            let mut worst = 0f64;
            for i in 0..m {
                for j in 0..n {
                    let s: f64 = (0..n)
                        .map(|l| q[b * m * n + i + l * m] as f64 * r[b * n * n + l * n + j] as f64)
                        .sum();
                    worst = worst.max((s - a[b * m * n + i * n + j] as f64).abs());
                }
            }
            assert!(worst < 1e-4, "matrix {b}: max |A - QR| = {worst}");
        }
    }
}

/// The kernel sources compile under NVRTC for sm_90 wherever NVRTC is installed (no GPU
/// needed). Slow (a few seconds a kernel): run with --ignored.
#[test]
#[ignore]
fn nvrtc_compiles_every_kernel() {
    // BATCHLIN_PREBUILD_DIR=dir: also write a disk cache for a driver API 13000 device.
    let dir = std::env::var_os("BATCHLIN_PREBUILD_DIR").map(std::path::PathBuf::from);
    match compile_all_kernels("sm_90", dir.as_deref().map(|d| (d, 13000))) {
        Ok(v) => {
            for (name, bytes) in &v {
                println!("{name}: {bytes} bytes of CUBIN");
            }
            let warps = [DType::F32, DType::F64]
                .into_iter()
                .map(|t| {
                    let max = qr::warp_lane_rows(t);
                    qr::REG_SHAPES.iter().filter(|s| s.0 / s.2 <= max).count()
                })
                .sum::<usize>();
            let clusters =
                qr::cluster_variants(DType::F32).len() + qr::cluster_variants(DType::F64).len();
            let tiles = qr::tile_shapes(DType::F32).len() + qr::tile_shapes(DType::F64).len();
            assert_eq!(
                v.len(),
                warps
                    + tiles
                    + 2 * (qr::WY_RPL.len() + 3)
                    + clusters
                    + qr_blocked::instantiations().len()
            );
        }
        Err(Error::Unavailable(e)) => println!("skipped: no NVRTC ({e})"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn unavailable_is_an_error_not_a_panic() {
    // Whatever the machine, get() answers without panicking, and a host call either works
    // or reports Unavailable.
    let r = CudaBackend::get();
    if let Err(e) = &r {
        assert_eq!(e.kind(), "unavailable", "{e}");
        let mut info = [Info(0)];
        let a = [1.0f32];
        let mut rr = [0.0f32];
        let e2 = qr_host::<f32>(
            QrKernel::Auto,
            1,
            1,
            1,
            HostMat {
                data: &a,
                batch_stride: 1,
                row_stride: 1,
                col_stride: 1,
            },
            None,
            1,
            HostMatMut {
                data: &mut rr,
                batch_stride: 1,
                row_stride: 1,
                col_stride: 1,
            },
            1,
            &mut info,
        )
        .unwrap_err();
        assert_eq!(e2.kind(), "unavailable");
        println!("skipped: no CUDA ({})", e.message());
    }
    assert!(QrKernel::from_name("warp").is_ok() && QrKernel::from_name("nope").is_err());
}

/// Times qr_device (Auto and each kernel that takes the shape) with CUDA events, inputs
/// rotated beyond L2, median of 15 after warm-up (3 for the largest); scratch from the pool
/// inside the timing; f32 then f64. Run with --ignored on a GPU machine.
#[test]
#[ignore]
fn bench_qr_device() {
    let Some(be) = backend() else { return };
    let shapes: &[(usize, usize, usize)] = &[
        (4096, 8, 8),
        (4096, 16, 16),
        (4096, 32, 32),
        (4096, 64, 64),
        (1024, 128, 128),
        (256, 256, 256),
        (16, 1024, 64),
        (16, 2048, 64),
        (1, 1024, 1024),
        // where the blocked kernel may take over
        (1, 128, 128),
        (16, 128, 128),
        (1, 256, 256),
        (16, 256, 256),
        (1024, 256, 256),
        (1, 512, 512),
        (8, 512, 512),
        (64, 512, 512),
        (1, 2048, 2048),
        (1, 4096, 1024),
        (1, 1024, 4096),
    ];
    println!("device: {}", be.device_name());
    bench_shapes::<f32>(be, shapes);
    bench_shapes::<f64>(be, shapes);
}

fn bench_shapes<T: Real>(be: &CudaBackend, shapes: &[(usize, usize, usize)]) {
    let es = std::mem::size_of::<T>();
    let tn = if T::DTYPE == DType::F32 { "f32" } else { "f64" };
    unsafe {
        be.dev.make_current().unwrap();
        let mut stream: cu::CUstream = std::ptr::null_mut();
        driver::check(cu::cuStreamCreate(&mut stream, 1), "cuStreamCreate").unwrap();
        let (mut e0, mut e1) = (std::ptr::null_mut(), std::ptr::null_mut());
        driver::check(cu::cuEventCreate(&mut e0, 0), "ev").unwrap();
        driver::check(cu::cuEventCreate(&mut e1, 0), "ev").unwrap();
        for &(batch, m, n) in shapes {
            let k = m.min(n);
            let elems = batch * m * n;
            let nbuf = ((256usize << 20) / (elems * es) + 1).clamp(2, 16);
            let mut rng = Rng(5);
            let host: Vec<T> = (0..elems).map(|_| T::from_f64(rng.normal())).collect();
            let alloc = |bytes: usize| {
                let mut p = 0;
                driver::check(cu::cuMemAlloc_v2(&mut p, bytes), "cuMemAlloc").unwrap();
                p
            };
            let bufs: Vec<u64> = (0..nbuf).map(|_| alloc(elems * es)).collect();
            for &b in &bufs {
                driver::check(
                    cu::cuMemcpyHtoD_v2(b, host.as_ptr() as *const _, elems * es),
                    "htod",
                )
                .unwrap();
            }
            let (dq, dr, di) = (
                alloc(batch * m * k * es),
                alloc(batch * k * n * es),
                alloc(batch * 4),
            );
            for kernel in [QrKernel::Auto].into_iter().chain(QrKernel::FORCEABLE) {
                let mut ts = Vec::new();
                let mut ok = true;
                let reps = if m * n >= 1 << 20 { 5 } else { 15 };
                for it in 0..reps + 3 {
                    let am = DevMat {
                        ptr: bufs[it % nbuf],
                        batch_stride: (m * n) as i64,
                        row_stride: n as i64,
                        col_stride: 1,
                    };
                    let qm = DevMat {
                        ptr: dq,
                        batch_stride: (m * k) as i64,
                        row_stride: k as i64,
                        col_stride: 1,
                    };
                    let rm = DevMat {
                        ptr: dr,
                        batch_stride: (k * n) as i64,
                        row_stride: n as i64,
                        col_stride: 1,
                    };
                    cu::cuEventRecord(e0, stream);
                    if qr_device::<T>(be, stream, kernel, batch, m, n, am, Some(qm), k, rm, k, di)
                        .is_err()
                    {
                        ok = false;
                        break;
                    }
                    cu::cuEventRecord(e1, stream);
                    cu::cuEventSynchronize(e1);
                    let mut ms = 0f32;
                    cu::cuEventElapsedTime_v2(&mut ms, e0, e1);
                    if it >= 3 {
                        ts.push(ms);
                    }
                }
                if ok {
                    ts.sort_by(|a, b| a.partial_cmp(b).unwrap());
                    let chosen = if kernel == QrKernel::Auto {
                        be.qr_kernel_for::<T>(batch, m, n, Some(k)).name()
                    } else {
                        ""
                    };
                    println!(
                        "BENCH {tn} {batch}x{m}x{n} {:<7} {chosen:<7} median {:.4} ms  min {:.4}",
                        kernel.name(),
                        ts[ts.len() / 2],
                        ts[0]
                    );
                }
            }
            for p in bufs.into_iter().chain([dq, dr, di]) {
                let _ = cu::cuMemFree_v2(p);
            }
        }
        let _ = cu::cuStreamDestroy_v2(stream);
    }
}
