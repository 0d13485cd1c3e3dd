//! GPU QR tests: every CUDA kernel of the registry forced at shapes around its
//! boundaries, through the one entry, against a float64 CPU reference. With no CUDA they
//! print "skipped: no CUDA (reason)" and pass.

use super::*;
use crate::registry::{self, Kernel};
use crate::timing;
use crate::{Backend, DType, Op, Options, Problem, Tensor, Variant};

fn backend() -> Option<&'static CudaDevice> {
    match device(0) {
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
enum Lay {
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

/// The CUDA QR kernels of the registry, then None: the planner's own choice.
fn kernels() -> Vec<Option<&'static Kernel>> {
    registry::kernels(Op::Qr, Backend::Cuda)
        .map(Some)
        .chain([None])
        .collect()
}

fn kname(k: Option<&Kernel>) -> &'static str {
    k.map_or("auto", |k| k.name)
}

/// Runs one case (host data through the GPU, the kernel forced or planned); returns
/// Ok(false) when the forced kernel does not take the shape.
#[allow(clippy::too_many_arguments)]
fn case<T: Real>(
    kernel: Option<&Kernel>,
    batch: usize,
    m: usize,
    n: usize,
    mode: Mode,
    lay: Lay,
    sp: Special,
    seed: u64,
) -> Result<bool> {
    let k = m.min(n);
    let (qc, rr) = match mode {
        Mode::Complete => (m, m),
        _ => (k, k),
    };
    let (rs, cs, bs) = match lay {
        Lay::RowMajor => (n, 1, m * n),
        Lay::ColMajor => (1, m, m * n),
        Lay::Padded => (2 * n + 3, 2, m * (2 * n + 3) + 5),
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
    let (q_rs, q_cs) = if lay == Lay::RowMajor {
        (qc, 1)
    } else {
        (1, m)
    };
    let qmode = match mode {
        Mode::Reduced => crate::QrMode::Reduced,
        Mode::Complete => crate::QrMode::Complete,
        Mode::R => crate::QrMode::R,
    };
    let av = crate::BatchRef::new(
        &at_,
        &[batch, m, n],
        &[bs as isize, rs as isize, cs as isize],
    )?;
    let mut qv = crate::BatchMut::new(
        &mut q,
        &[batch, m, qc],
        &[(m * qc) as isize, q_rs as isize, q_cs as isize],
    )?;
    let mut rv = crate::BatchMut::contiguous(&mut r, &[batch, rr, n])?;
    let opts = match kernel {
        Some(k) => Options::with_kernel(Backend::Cuda, k.name),
        None => Options::with_backend(Backend::Cuda),
    };
    let qv = (mode != Mode::R).then_some(&mut qv);
    let res = crate::qr_into(&av, qmode, qv, &mut rv, Some(&mut info), &opts);
    match res {
        Err(Error::Argument(_)) if kernel.is_some() => return Ok(false),
        Err(e) => return Err(e),
        Ok(()) => {}
    }
    let eps = T::EPSILON.to_f64();
    let tol = if T::DTYPE == DType::F32 { 1e-4 } else { 1e-12 };
    let tag = format!(
        "{} {:?} {batch}x{m}x{n} {mode:?} {lay:?} {sp:?}",
        kname(kernel),
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
    for kernel in kernels() {
        let (mut ran, mut skipped) = (0, 0);
        for &(b, m, n) in SHAPES {
            seed += 1;
            if case::<T>(
                kernel,
                b,
                m,
                n,
                Mode::Reduced,
                Lay::RowMajor,
                Special::Rand,
                seed,
            )? {
                ran += 1;
            } else {
                skipped += 1;
            }
        }
        for (m, n, mode, lay) in [
            (24, 20, Mode::Complete, Lay::ColMajor),
            (12, 16, Mode::Complete, Lay::RowMajor),
            (100, 40, Mode::Complete, Lay::ColMajor),
            (60, 50, Mode::R, Lay::Padded),
            (128, 100, Mode::Complete, Lay::Padded),
            (30, 30, Mode::Reduced, Lay::Padded),
            (30, 30, Mode::R, Lay::RowMajor),
            (300, 40, Mode::R, Lay::ColMajor),
            (300, 40, Mode::Reduced, Lay::Padded),
            (300, 200, Mode::Complete, Lay::ColMajor),
            (130, 300, Mode::Complete, Lay::Padded),
            (200, 300, Mode::Reduced, Lay::Padded),
            (513, 257, Mode::R, Lay::RowMajor),
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
                if case::<T>(kernel, 5, m, n, Mode::Reduced, Lay::ColMajor, sp, seed)? {
                    ran += 1;
                } else {
                    skipped += 1;
                }
            }
        }
        println!(
            "{:?} {}: {ran} cases passed, {skipped} shapes not taken by this kernel",
            T::DTYPE,
            kname(kernel)
        );
        assert!(ran > 0, "{} ran no case", kname(kernel));
    }
    Ok(())
}

#[test]
fn qr_every_kernel_f32() {
    let Some(be) = backend() else { return };
    let c = be.caps();
    println!(
        "device: {} ({} SMs, sm_{}{})",
        c.name, c.sm_count, c.cc.0, c.cc.1
    );
    sweep::<f32>().unwrap();
}

/// Batches of tall matrices beyond twice the SM count: the rules send them to the
/// cluster kernel from 512 rows (Hopper and later) and to TSQR from 256 (not to smem,
/// which they fit; a GPU's cost table, where one is built in, routes by its own rows); the
/// results hold either way.
#[test]
fn qr_auto_large_batches_of_tall_matrices() {
    let Some(be) = backend() else { return };
    let batch = 2 * be.caps().sm_count as usize + 7;
    let cluster = be.caps().cc.0 >= 9;
    let planned = |variant, dtype, m, n| {
        let p = Problem::new(variant, dtype, batch, m, n);
        let rules = crate::plan::cuda_choice(&p, be.caps(), &Options::default(), None);
        rules.unwrap().0.name
    };
    for (m, n, want) in [
        (512, 64, if cluster { "cluster" } else { "tall" }),
        (300, 40, "tall"),
    ] {
        assert_eq!(planned(Variant::QrReduced, DType::F32, m, n), want);
        assert_eq!(planned(Variant::QrR, DType::F64, m, n), want);
        for (seed, mode, lay) in [
            (91, Mode::Reduced, Lay::RowMajor),
            (92, Mode::R, Lay::ColMajor),
        ] {
            assert!(case::<f32>(None, batch, m, n, mode, lay, Special::Rand, seed).unwrap());
            assert!(case::<f64>(None, batch, m, n, mode, lay, Special::Rand, seed + 10).unwrap());
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

/// Device data through the entry on a caller's stream: Q written transposed, info left
/// on the device until read here, the caller's current context given back.
#[test]
fn qr_device_on_callers_stream() {
    let Some(be) = backend() else { return };
    let (batch, m, n) = (33usize, 40usize, 24usize);
    let mut rng = Rng(99);
    let a: Vec<f32> = (0..batch * m * n).map(|_| rng.normal() as f32).collect();
    let _ctx = be.dev.enter().unwrap();
    let stream = OwnedStream::new().unwrap();
    let buf = |bytes: usize| DeviceBuffer::new(bytes).unwrap();
    let (da, dq, dr, di) = (
        buf(a.len() * 4),
        buf(batch * m * n * 4),
        buf(batch * n * n * 4),
        buf(batch * 4),
    );
    let bytes =
        |x: &[f32]| unsafe { std::slice::from_raw_parts(x.as_ptr() as *const u8, x.len() * 4) };
    da.upload(bytes(&a)).unwrap();
    // SAFETY: device buffers of device 0 sized for the views; a stream of its context.
    unsafe {
        let (b, mi, ni) = (batch as isize, m as isize, n as isize);
        let req = Request {
            operation: Operation::Qr(QrMode::Reduced),
            a: BatchRef::from_device(da.ptr as *const f32, 0, &[batch, m, n], &[mi * ni, ni, 1])
                .unwrap(),
            out: Outputs::Qr {
                // Q stored transposed (n x m per matrix, i.e. column-major m x n)
                q: Some(
                    BatchMut::from_device(dq.ptr as *mut f32, 0, &[batch, m, n], &[mi * ni, 1, mi])
                        .unwrap(),
                ),
                r: BatchMut::from_device(dr.ptr as *mut f32, 0, &[batch, n, n], &[ni * ni, ni, 1])
                    .unwrap(),
            },
            info: Some(InfoOut::Device(
                DeviceWords::new(di.ptr as *mut u32, 0, batch).unwrap(),
            )),
            place: Place::Cuda {
                ordinal: 0,
                stream: Stream::from_raw(stream.0 as *mut c_void),
            },
        };
        let _ = b;
        crate::run(req, &Options::default()).unwrap();
    }
    stream.sync().unwrap();
    let mut q = vec![0f32; batch * m * n];
    let mut r = vec![0f32; batch * n * n];
    let mut info = vec![0u32; batch];
    let bytes_mut = |x: &mut [f32]| unsafe {
        std::slice::from_raw_parts_mut(x.as_mut_ptr() as *mut u8, x.len() * 4)
    };
    dq.download(bytes_mut(&mut q)).unwrap();
    dr.download(bytes_mut(&mut r)).unwrap();
    di.download(unsafe { std::slice::from_raw_parts_mut(info.as_mut_ptr() as *mut u8, batch * 4) })
        .unwrap();
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

/// Device 0 named explicitly works; a missing ordinal is a clear Unavailable error from
/// the planner, the entry and `device`, and host data views cannot pose as device data.
#[test]
fn device_ordinals() {
    let Some(_) = backend() else { return };
    let count = device_count().unwrap();
    assert!(device(0).is_ok());
    let e = device(count).err().expect("a missing ordinal is an error");
    assert_eq!(e.kind(), "unavailable", "{e}");
    assert!(
        e.message().contains(&format!("no CUDA device {count}")),
        "{e}"
    );
    let p = Problem::new(Variant::QrReduced, DType::F32, 4, 8, 8);
    let place = |ordinal| Place::Cuda {
        ordinal,
        stream: Stream::DEFAULT,
    };
    let plan = crate::plan(&p, &place(0), &Options::default()).unwrap();
    assert_eq!((plan.ordinal, plan.kernel.name), (Some(0), "warp"));
    let e = crate::plan(&p, &place(count), &Options::default()).unwrap_err();
    assert_eq!(e.kind(), "unavailable", "{e}");
    // Host memory handed over as if on the device: refused before anything runs.
    let a = vec![1f32; 4 * 64];
    let mut r = vec![0f32; 4 * 64];
    let req = Request {
        operation: Operation::Qr(QrMode::R),
        a: BatchRef::contiguous(&a, &[4, 8, 8]).unwrap(),
        out: Outputs::Qr {
            q: None,
            r: BatchMut::contiguous(&mut r, &[4, 8, 8]).unwrap(),
        },
        info: None,
        place: place(0),
    };
    let e = crate::run(req, &Options::default()).unwrap_err();
    assert_eq!(e.kind(), "argument", "{e}");
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
            // Every instantiation of the one list (all build for sm_90).
            assert_eq!(v.len(), super::instantiations::all().len());
        }
        Err(Error::Unavailable(e)) => println!("skipped: no NVRTC ({e})"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn unavailable_is_an_error_not_a_panic() {
    // Whatever the machine, device() answers without panicking, and a host call forced
    // onto the GPU either works or reports Unavailable.
    let r = device(0);
    if let Err(e) = &r {
        assert_eq!(e.kind(), "unavailable", "{e}");
        let a = [1.0f32];
        let mut rr = [0.0f32];
        let e2 = crate::qr_into(
            &BatchRef::contiguous(&a, &[1, 1, 1]).unwrap(),
            QrMode::R,
            None,
            &mut BatchMut::contiguous(&mut rr, &[1, 1, 1]).unwrap(),
            None,
            &Options::with_backend(Backend::Cuda),
        )
        .unwrap_err();
        assert_eq!(e2.kind(), "unavailable");
        println!("skipped: no CUDA ({})", e.message());
    }
    assert!(QrKernel::from_name("warp").is_ok() && QrKernel::from_name("nope").is_err());
    for k in registry::kernels(Op::Qr, Backend::Cuda) {
        assert!(QrKernel::from_name(k.name).is_ok(), "{}", k.name);
    }
}

/// Times device-resident QR (the plan's kernel, then each registry kernel that takes the
/// shape) through the timing harness; f32 then f64. Run with --ignored on a GPU machine.
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
    println!("device: {}", be.caps().name);
    bench_shapes::<f32>(shapes);
    bench_shapes::<f64>(shapes);
}

fn bench_shapes<T: Real>(shapes: &[(usize, usize, usize)]) {
    let tn = T::DTYPE.name();
    for &(batch, m, n) in shapes {
        let mut rng = Rng(5);
        let host: Vec<T> = (0..batch * m * n)
            .map(|_| T::from_f64(rng.normal()))
            .collect();
        let p = Problem::new(Variant::QrReduced, T::DTYPE, batch, m, n);
        let reps = if m * n >= 1 << 20 { 5 } else { 15 };
        for kernel in kernels().into_iter().rev() {
            let opts = match kernel {
                Some(k) => Options::with_kernel(Backend::Cuda, k.name),
                None => Options::default(),
            };
            // A kernel that does not take the shape is left out.
            let Ok(t) = timing::time_device::<T>(&p, 0, &opts, &[&host], reps) else {
                continue;
            };
            let chosen = if kernel.is_none() {
                t.plan.kernel.name
            } else {
                ""
            };
            println!(
                "BENCH {tn} {batch}x{m}x{n} {:<7} {chosen:<7} median {:.4} ms  min {:.4}",
                kname(kernel),
                t.ms,
                t.min_ms
            );
        }
    }
}

/// A tile instantiation the library does not ship, fixed through `Params::qr_tile` (as
/// `bench --tile` and gpu-lab/tile-sweep.sh do), gives the same factorisation as the
/// planned kernel; one that cannot hold the matrix is an Argument error.
#[test]
fn tile_instantiation_through_params() {
    let Some(_) = backend() else { return };
    let (batch, m, n) = (9usize, 60usize, 50usize);
    let mut rng = Rng(77);
    let a: Vec<f32> = (0..batch * m * n).map(|_| rng.normal() as f32).collect();
    let av = BatchRef::contiguous(&a, &[batch, m, n]).unwrap();
    let run = |opts: &Options| crate::qr_ex(&av, QrMode::Reduced, opts).map(|(q, _)| q);
    let mut opts = Options::with_kernel(Backend::Cuda, "tile");
    let planned = run(&opts).unwrap();
    // The float64 grid (8 x 16 threads, A and Q staged) instantiated in float32.
    opts.params.qr_tile = Some("64x64/8x16/b1/c8x8/s1".parse().unwrap());
    let fixed = run(&opts).unwrap();
    let diff = |x: &Tensor<f32>, y: &Tensor<f32>| {
        x.data
            .iter()
            .zip(&y.data)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max)
    };
    assert!(diff(&planned.r, &fixed.r) < 1e-4, "R differs");
    assert!(
        diff(planned.q.as_ref().unwrap(), fixed.q.as_ref().unwrap()) < 1e-4,
        "Q differs"
    );
    opts.params.qr_tile = Some("32x32/4x8/b8/c8x8/s0".parse().unwrap());
    let e = run(&opts).unwrap_err();
    assert_eq!(e.kind(), "argument", "{e}");
}

/// Wherever the build embedded kernels, it embedded every instantiation of the one list
/// for every shipped architecture the instantiation compiles for, each a CUBIN built from
/// the module source the runtime composes. `BATCHLIN_REQUIRE_EMBEDDED=1` (CI, whose build
/// has NVRTC) makes a build that embedded nothing a failure.
#[test]
fn embedded_kernels_cover_every_instantiation() {
    use super::instantiations::{arch_cc, min_cc, ARCHS};
    let archs = embedded::archs();
    if archs.is_empty() {
        assert!(
            std::env::var_os("BATCHLIN_REQUIRE_EMBEDDED").is_none(),
            "BATCHLIN_REQUIRE_EMBEDDED is set but the build embedded no kernels: {}",
            embedded::summary()
        );
        eprintln!("skipped: {}", embedded::summary());
        return;
    }
    assert_eq!(archs, ARCHS, "{}", embedded::summary());
    let list = all_instantiations();
    let mut expected = 0;
    for &arch in ARCHS {
        let cc = arch_cc(arch).unwrap();
        for (name, inst) in &list {
            if min_cc(inst) > cc {
                continue;
            }
            expected += 1;
            let src = driver::module_source(inst);
            let c = embedded::cubin(name, arch, &src)
                .unwrap_or_else(|| panic!("{name} is not embedded for {arch}"));
            // An ELF image for the CUDA machine (EM_CUDA = 190) naming the kernel.
            assert_eq!(&c[..4], b"\x7fELF", "{name} {arch}");
            assert_eq!(u16::from_le_bytes([c[18], c[19]]), 190, "{name} {arch}");
            assert!(
                c.windows(name.len()).any(|w| w == name.as_bytes()),
                "{name} {arch}: the CUBIN does not hold the kernel's symbol"
            );
            assert_eq!(
                c.as_ptr() as usize % 16,
                0,
                "{name} {arch}: CUBIN misaligned"
            );
        }
    }
    assert_eq!(
        embedded::INDEX.len(),
        expected,
        "embedded modules beyond the list"
    );
}

/// Each embedded CUBIN is its own zlib stream: it inflates to its recorded size, the
/// streams tile the blob, and a damaged or truncated stream is refused (`None`, so the
/// loader compiles instead), never a panic. Prints the sizes and the time to inflate the
/// largest module (not asserted: machines differ).
#[test]
fn embedded_cubins_inflate_or_are_refused() {
    let index = embedded::INDEX;
    let Some(big) = index.iter().max_by_key(|e| e.size) else {
        eprintln!("skipped: {}", embedded::summary());
        return;
    };
    let mut at = 0;
    for e in index {
        assert_eq!(e.at, at, "{} {}: streams out of order", e.name, e.arch);
        at += e.len;
    }
    let blob = embedded::blob();
    assert_eq!(at, blob.len(), "the blob holds more than the index");
    let stream = &blob[big.at..big.at + big.len];
    let mut times = Vec::new();
    for _ in 0..20 {
        let t = std::time::Instant::now();
        let c = embedded::inflate(stream, big.size).expect("the largest CUBIN inflates");
        times.push(t.elapsed().as_secs_f64());
        assert_eq!(c.len(), big.size);
        assert_eq!(&c[..4], b"\x7fELF");
    }
    let best = times.iter().copied().fold(f64::INFINITY, f64::min);
    let t = std::time::Instant::now();
    let all: usize = index
        .iter()
        .map(|e| {
            embedded::inflate(&blob[e.at..e.at + e.len], e.size)
                .unwrap()
                .len()
        })
        .sum();
    eprintln!(
        "{} modules: {all} bytes of CUBIN in a {} byte blob, all inflated in {:.1} ms; \
         largest {} {} ({} -> {} bytes) inflated in {:.3} ms (first {:.3} ms)",
        index.len(),
        blob.len(),
        t.elapsed().as_secs_f64() * 1e3,
        big.name,
        big.arch,
        big.len,
        big.size,
        best * 1e3,
        times[0] * 1e3
    );
    // Damage: a flipped bit (the Adler-32 or the stream itself catches it), a truncated
    // stream, a size that does not match, an empty stream.
    let mut bad = stream.to_vec();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x10;
    assert!(embedded::inflate(&bad, big.size).is_none(), "a flipped bit");
    assert!(embedded::inflate(&stream[..stream.len() - 1], big.size).is_none());
    assert!(embedded::inflate(&stream[..stream.len() / 2], big.size).is_none());
    assert!(
        embedded::inflate(stream, big.size - 1).is_none(),
        "too short"
    );
    assert!(
        embedded::inflate(stream, big.size + 1).is_none(),
        "too long"
    );
    assert!(embedded::inflate(&[], big.size).is_none());
    assert!(embedded::inflate(&[0x78, 0x9c], 0).is_none());
}

/// The loader's choice of CUBIN: the device's own architecture, else the nearest lower
/// minor of its major, else none (NVRTC at run time); and a CUBIN is only taken for the
/// very source it was built from.
#[test]
fn embedded_loader_picks_a_compatible_cubin_or_none() {
    if device(0).is_err() {
        assert!(
            !needs_nvrtc(0),
            "no device: the call fails with its reason, not NVRTC's"
        );
    }
    use super::embedded::select_arch;
    let shipped = super::instantiations::ARCHS;
    assert_eq!(select_arch(shipped, "sm_90"), Some("sm_90"));
    assert_eq!(select_arch(shipped, "sm_80"), Some("sm_80"));
    assert_eq!(select_arch(shipped, "sm_87"), Some("sm_86"));
    assert_eq!(select_arch(shipped, "sm_89"), Some("sm_89"));
    assert_eq!(select_arch(shipped, "sm_103"), Some("sm_100"));
    assert_eq!(select_arch(shipped, "sm_121"), Some("sm_120"));
    assert_eq!(select_arch(shipped, "sm_75"), None);
    assert_eq!(select_arch(shipped, "sm_110"), None);
    assert_eq!(select_arch(shipped, "compute_90"), None);
    assert_eq!(select_arch(&[], "sm_90"), None);
    let (name, inst) = all_instantiations().swap_remove(0);
    let src = driver::module_source(&inst);
    if embedded::archs().is_empty() {
        assert!(embedded::cubin(&name, "sm_90", &src).is_none());
        return;
    }
    assert!(embedded::cubin(&name, "sm_90", &src).is_some());
    assert!(embedded::cubin(&name, "sm_103", &src).is_some());
    assert!(embedded::cubin(&name, "sm_75", &src).is_none());
    assert!(embedded::cubin("no_such_kernel", "sm_90", &src).is_none());
    let edited = src.replace("BL_NO_DEFAULT_INST", "BL_NO_DEFAULT_INST ");
    assert!(
        embedded::cubin(&name, "sm_90", &edited).is_none(),
        "stale source taken"
    );
}

/// The sources the runtime composes are the kernels folder's, and every instantiation
/// names a file there.
#[test]
fn every_instantiation_has_its_source() {
    let list = all_instantiations();
    assert!(list.len() > 50, "{} instantiations", list.len());
    let mut names: Vec<&str> = list.iter().map(|(n, _)| n.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), list.len(), "a kernel name twice");
    for (name, inst) in &list {
        let src = driver::module_source(inst);
        assert!(
            src.contains(embedded::source("common.cu")),
            "{name}: no common.cu"
        );
        let file = super::instantiations::module_file(inst);
        assert!(src.contains(embedded::source(file)), "{name}: no {file}");
        assert!(src.ends_with(&format!("{inst}\n")), "{name}");
    }
}

/// On a GPU of a shipped architecture, a build with embedded kernels loads them without
/// NVRTC: a QR of every kind the planner picks here compiles nothing.
#[test]
fn gpu_loads_embedded_kernels() {
    let Some(dev) = backend() else { return };
    let arch = dev.dev.arch();
    let shipped = embedded::archs();
    if embedded::select_arch(&shipped, &arch).is_none() {
        eprintln!(
            "skipped: nothing embedded for {arch} ({})",
            embedded::summary()
        );
        return;
    }
    assert!(
        !needs_nvrtc(0),
        "{arch} is covered: {}",
        embedded::summary()
    );
    let before = dev.kernel_loads();
    for &(b, m, n) in &[(64usize, 16usize, 16usize), (16, 64, 64), (4, 128, 96)] {
        let a = vec![0.5f32; b * m * n];
        let mut q = vec![0f32; b * m * n.min(m)];
        let mut r = vec![0f32; b * n.min(m) * n];
        crate::qr_into(
            &BatchRef::contiguous(&a, &[b, m, n]).unwrap(),
            QrMode::Reduced,
            Some(&mut BatchMut::contiguous(&mut q, &[b, m, n.min(m)]).unwrap()),
            &mut BatchMut::contiguous(&mut r, &[b, n.min(m), n]).unwrap(),
            None,
            &Options::with_backend(Backend::Cuda),
        )
        .unwrap();
    }
    let after = dev.kernel_loads();
    assert_eq!(after.compiled, before.compiled, "{before:?} -> {after:?}");
    assert_eq!(
        after.disk_cache, before.disk_cache,
        "{before:?} -> {after:?}"
    );
}

/// The planner's per-thread memo of the last device plan never hands back a plan made
/// for other options, another problem or another forced backend.
#[test]
fn device_plan_memo_follows_its_inputs() {
    if backend().is_none() {
        return;
    }
    let place = |ordinal| Place::Cuda {
        ordinal,
        stream: Stream::DEFAULT,
    };
    let p = Problem::new(Variant::QrReduced, DType::F32, 64, 32, 32);
    let q = Problem::new(Variant::QrReduced, DType::F32, 64, 128, 128);
    let auto = crate::plan(&p, &place(0), &Options::default()).unwrap();
    let smem = Options::with_kernel(Backend::Cuda, "smem");
    let forced = crate::plan(&p, &place(0), &smem).unwrap();
    assert_eq!(forced.kernel.name, "smem");
    assert_ne!(auto.kernel.name, "smem", "{auto}");
    let again = crate::plan(&p, &place(0), &Options::default()).unwrap();
    assert_eq!(again.kernel.name, auto.kernel.name);
    let other = crate::plan(&q, &place(0), &Options::default()).unwrap();
    assert_eq!(other.problem, q);
    assert_eq!(
        crate::plan(&p, &place(0), &Options::default())
            .unwrap()
            .problem,
        p
    );
    let e = crate::plan(&p, &place(0), &Options::with_backend(Backend::CpuFaer)).unwrap_err();
    assert_eq!(e.kind(), "argument", "{e}");
}

/// The per-thread memo of the last QR launch (qr.rs `launch_for`) hands back exactly
/// what working the launch out in full gives, whatever came before: other kernels,
/// shapes, dtypes, batches (wy's block size follows the batch) and Q or none.
#[test]
fn qr_launch_memo_follows_its_inputs() {
    use qr::{launch_for, single_launch, LaunchKey, QrArgs, QrKernel};
    let Some(be) = backend() else { return };
    let dev = &be.dev;
    let _ctx = dev.enter().unwrap();
    let args = |m: i32, n: i32, batch: i32, with_q: bool| QrArgs {
        q: u64::from(with_q),
        m,
        m_last: m,
        n,
        qcols: m.min(n),
        rrows: m.min(n),
        batch,
        inner: 1,
        ..Default::default()
    };
    let many = 8 * be.caps().sm_count as i32;
    let cases = [
        (QrKernel::Warp, args(8, 8, 64, true)),
        (QrKernel::Warp, args(8, 8, 64, false)),
        (QrKernel::Warp, args(16, 16, 64, true)),
        (QrKernel::Tile, args(64, 64, 4, true)),
        (QrKernel::Wy, args(100, 100, 4, true)),
        (QrKernel::Wy, args(100, 100, many, true)),
        (QrKernel::Smem, args(100, 100, 1, false)),
    ];
    let check = |kind, p: &QrArgs, f64: bool| {
        let (memo, full) = if f64 {
            let key = LaunchKey::new::<f64>(dev, kind, p, None);
            (
                launch_for::<f64>(dev, key, p, None).unwrap(),
                single_launch::<f64>(dev, kind, p, None).unwrap(),
            )
        } else {
            let key = LaunchKey::new::<f32>(dev, kind, p, None);
            (
                launch_for::<f32>(dev, key, p, None).unwrap(),
                single_launch::<f32>(dev, kind, p, None).unwrap(),
            )
        };
        assert_eq!(memo, full, "{kind:?} {p:?} f64 {f64}");
        memo
    };
    for round in 0..2 {
        for (kind, p) in &cases {
            for f64 in [false, true] {
                // Twice in a row (the memo's hit) and after every other case (its miss).
                let first = check(*kind, p, f64);
                assert_eq!(check(*kind, p, f64), first, "round {round}");
            }
        }
    }
    let few = check(QrKernel::Wy, &cases[4].1, false);
    let lots = check(QrKernel::Wy, &cases[5].1, false);
    assert_ne!(few, lots, "wy's block follows the batch");
}

/// Device memory exhausted (all but a few MB taken by another allocation): host data
/// forced onto the GPU needs device copies it cannot get, and the call is an
/// `OutOfMemory` error, not a crash; once the memory is back the same call succeeds with
/// the same answer.
#[test]
fn device_out_of_memory_is_an_error() {
    let Some(be) = backend() else { return };
    let (batch, m, n) = (64usize, 1024usize, 1024usize);
    let mut rng = Rng(5);
    let data: Vec<f32> = (0..batch * m * n).map(|_| rng.normal() as f32).collect();
    let a = Tensor::from_vec(data, &[batch, m, n]).unwrap();
    let opts = Options::with_backend(Backend::Cuda);
    let (want, _) = crate::qr_ex(&a.view(), QrMode::R, &opts).unwrap();
    let _ctx = be.dev.enter().unwrap();
    driver::trim_pool(0).unwrap();
    let (free, total) = driver::mem_info().unwrap();
    // All but a little: less than the 256 MB copy of the input is left.
    let hog = [16usize, 32, 64, 128]
        .iter()
        .find_map(|mb| DeviceBuffer::new(free.saturating_sub(mb << 20)).ok())
        .expect("could not take the device's free memory");
    let (left, _) = driver::mem_info().unwrap();
    println!("device memory: {total} total, {free} free, {left} left to the call");
    let e = crate::qr_ex(&a.view(), QrMode::R, &opts).unwrap_err();
    assert_eq!(e.kind(), "out of memory", "{e}");
    assert!(e.message().contains("OUT_OF_MEMORY"), "{e}");
    drop(hog);
    let (again, info) = crate::qr_ex(&a.view(), QrMode::R, &opts).unwrap();
    assert!(info.iter().all(|i| i.is_ok()));
    let scale = want.r.data.iter().fold(0f32, |x, y| x.max(y.abs()));
    let worst = want
        .r
        .data
        .iter()
        .zip(&again.r.data)
        .fold(0f32, |x, (p, q)| x.max((p - q).abs()));
    assert!(
        worst <= 1e-5 * scale,
        "after out of memory: max |R - R'| = {worst}"
    );
}

/// R entries beyond the element type's range once unscaled, on every CUDA QR kernel: a
/// batch of X (column 0 all ones, the rest normal / 10, so max|X| = 1), X times 2^127
/// (f32; 2^1023 in f64: finite, the largest power of two) and X with a NaN. Both X's scale
/// to the same bits inside the kernels, and undoing the scaling is exact, so the large
/// one's R must be exactly R(X) times 2^127 where that is in range and +-Inf where it is
/// not (R[0][0] = sqrt(m) 2^127 is not), with Q exactly Q(X). Its info word has OVERFLOW
/// (not NONFINITE); X's has neither; the NaN matrix's NONFINITE alone.
#[test]
fn qr_overflow_is_flagged_on_every_kernel() {
    let Some(_) = backend() else { return };
    fn run<T: Real>() {
        let big_exp = if T::DTYPE == DType::F32 { 127 } else { 1023 };
        let up = |x: T| x * T::exp2i(big_exp / 2) * T::exp2i(big_exp - big_exp / 2);
        let shapes = [
            (8, 8),
            (40, 20),
            (128, 64),
            (300, 200),
            (600, 32),
            (2048, 64),
        ];
        for kernel in kernels() {
            let mut ran = 0;
            for &(m, n) in &shapes {
                for mode in [QrMode::Reduced, QrMode::R] {
                    let mut rng = Rng(m as u64 * 1000 + n as u64);
                    let x: Vec<T> = (0..m * n)
                        .map(|i| T::from_f64(if i % n == 0 { 1.0 } else { rng.normal() / 10.0 }))
                        .collect();
                    let mut d: Vec<T> = x.iter().map(|&v| up(v)).collect();
                    d.extend(&x);
                    d.extend(&x);
                    d[2 * m * n + m * n / 2] = T::from_f64(f64::NAN);
                    // Just inside: R[0][0] = sqrt(m) 2^s <= 2^(big_exp - 1), where the
                    // kernels' cheap test (bl_r_may_overflow) passes and the exact one runs.
                    let s = (f64::from(big_exp - 1) - (m as f64).log2() / 2.0).floor() as i32;
                    let near = |v: T| v * T::exp2i(s);
                    d.extend(x.iter().map(|&v| near(v)));
                    let a = Tensor::from_vec(d, &[4, m, n]).unwrap();
                    let opts = match kernel {
                        Some(k) => Options::with_kernel(Backend::Cuda, k.name),
                        None => Options::with_backend(Backend::Cuda),
                    };
                    let tag = format!("{} {:?} {m}x{n} {mode:?}", kname(kernel), T::DTYPE);
                    let (qr, info) = match crate::qr_ex(&a.view(), mode, &opts) {
                        Err(Error::Argument(_)) if kernel.is_some() => continue,
                        r => r.unwrap_or_else(|e| panic!("{tag}: {e}")),
                    };
                    ran += 1;
                    let k = m.min(n);
                    let (big, x_r) = (&qr.r.data[..k * n], &qr.r.data[k * n..2 * k * n]);
                    assert!(
                        big[0] == T::from_f64(f64::INFINITY),
                        "{tag}: R[0][0] = {}",
                        big[0].to_f64()
                    );
                    for (idx, (&got, &want)) in big.iter().zip(x_r).enumerate() {
                        let want = up(want);
                        assert!(
                            got == want,
                            "{tag}: R[{}][{}] = {} where R(X) 2^{big_exp} = {}",
                            idx / n,
                            idx % n,
                            got.to_f64(),
                            want.to_f64()
                        );
                    }
                    if let Some(q) = &qr.q {
                        assert!(
                            q.data[..m * k] == q.data[m * k..2 * m * k],
                            "{tag}: Q differs from Q(X)"
                        );
                    }
                    assert!(
                        info[0].overflow() && !info[0].nonfinite(),
                        "{tag}: info {:?}",
                        info[0]
                    );
                    assert!(
                        info[1].0 & (Info::OVERFLOW | Info::NONFINITE) == 0,
                        "{tag}: X's info {:?}",
                        info[1]
                    );
                    assert!(
                        info[2].nonfinite() && !info[2].overflow(),
                        "{tag}: NaN's info {:?}",
                        info[2]
                    );
                    let near_r = &qr.r.data[3 * k * n..4 * k * n];
                    for (idx, (&got, &want)) in near_r.iter().zip(x_r).enumerate() {
                        assert!(
                            got == near(want) && got.to_f64().is_finite(),
                            "{tag}: near R[{}][{}] = {} where R(X) 2^{s} = {}",
                            idx / n,
                            idx % n,
                            got.to_f64(),
                            near(want).to_f64()
                        );
                    }
                    assert!(
                        info[3].0 & (Info::OVERFLOW | Info::NONFINITE) == 0,
                        "{tag}: near the range's end, info {:?}",
                        info[3]
                    );
                }
            }
            println!("{:?} {}: {ran} cases", T::DTYPE, kname(kernel));
            assert!(ran > 0, "{} took none of the shapes", kname(kernel));
        }
    }
    run::<f32>();
    run::<f64>();
}

/// The reduced case list `scripts/gpu-sanitize` runs under compute-sanitizer: every CUDA
/// QR kernel of the registry forced (and the planner's choice), float32 and float64,
/// shapes that cross each kernel's boundaries (one warp, a tile, shared memory, tall
/// levels, a cluster, several panels), every mode and layout, and NaN input. Ignored in
/// normal runs (the full sweeps cover these); small enough to finish under racecheck.
/// The kernel families the sanitizer runs take one at a time: `qr-<kernel>` for every
/// CUDA QR kernel and `qr-auto` for the planner's choice, `eigh-<kernel>`, `svd-<kernel>`.
fn sanitize_families() -> Vec<String> {
    let mut v: Vec<String> = kernels()
        .into_iter()
        .map(|k| format!("qr-{}", kname(k)))
        .collect();
    for op in [Op::Eigh, Op::Svd] {
        for k in registry::kernels(op, Backend::Cuda) {
            v.push(format!("{}-{}", op.name(), k.name));
        }
    }
    v
}

/// One eigh or SVD case on a forced CUDA kernel (host data through the GPU): random
/// input, one matrix with a NaN when `nan`; checks the residual in float64, the order of
/// the values and the NaN matrix's flag. Returns Ok(false) where the kernel does not take
/// the shape.
#[allow(clippy::too_many_arguments)]
fn eigh_svd_case<T: Real>(
    op: Op,
    kernel: &'static str,
    batch: usize,
    m: usize,
    n: usize,
    vectors: bool,
    full: bool,
    nan: bool,
    seed: u64,
) -> Result<bool> {
    let mut rng = Rng(seed);
    let mut a: Vec<T> = (0..batch * m * n)
        .map(|_| T::from_f64(rng.normal()))
        .collect();
    if op == Op::Eigh {
        // symmetric, so the residual check holds whichever triangle the kernel reads
        for b in 0..batch {
            for i in 0..n {
                for j in 0..i {
                    a[b * n * n + j * n + i] = a[b * n * n + i * n + j];
                }
            }
        }
    }
    if nan {
        a[(batch - 1) * m * n + m * n / 2] = T::from_f64(f64::NAN);
    }
    let av = crate::BatchRef::contiguous(&a, &[batch, m, n])?;
    let opts = Options::with_kernel(Backend::Cuda, kernel);
    let tag = format!(
        "{}-{kernel} {:?} {batch}x{m}x{n} vectors={vectors} full={full}",
        op.name(),
        T::DTYPE
    );
    let tol = if T::DTYPE == DType::F32 { 1e-4 } else { 1e-11 };
    let at = |b: usize, i: usize, j: usize| a[b * m * n + i * n + j].to_f64();
    let k = m.min(n);
    // per matrix: the values, and the residual of the vectors (0 without them)
    let (vals, resid, info): (Vec<Vec<f64>>, Vec<f64>, Vec<Info>) = if op == Op::Eigh {
        let res = crate::eigh_ex(&av, crate::Uplo::Lower, vectors, &opts);
        let (e, info) = match res {
            Err(Error::Argument(_)) => return Ok(false),
            r => r?,
        };
        let w = |b: usize, i: usize| e.w.data[b * n + i].to_f64();
        let vals = (0..batch)
            .map(|b| (0..n).map(|i| w(b, i)).collect())
            .collect();
        let resid = (0..batch)
            .map(|b| {
                let Some(v) = &e.v else { return 0.0 };
                let v = |i: usize, j: usize| v.data[b * n * n + i * n + j].to_f64();
                let (mut d, mut s) = (0f64, 0f64);
                for i in 0..n {
                    for j in 0..n {
                        let av: f64 = (0..n).map(|l| at(b, i, l) * v(l, j)).sum();
                        d += (av - w(b, j) * v(i, j)).powi(2);
                        s += at(b, i, j).powi(2);
                    }
                }
                (d / s.max(f64::MIN_POSITIVE)).sqrt()
            })
            .collect();
        (vals, resid, info)
    } else {
        let res = crate::svd_ex(&av, full, vectors, &opts);
        let (r, info) = match res {
            Err(Error::Argument(_)) => return Ok(false),
            r => r?,
        };
        let s = |b: usize, i: usize| r.s.data[b * k + i].to_f64();
        let vals = (0..batch)
            .map(|b| (0..k).rev().map(|i| s(b, i)).collect())
            .collect();
        let (uc, vr) = if full { (m, n) } else { (k, k) };
        let resid = (0..batch)
            .map(|b| {
                let (Some(u), Some(vh)) = (&r.u, &r.vh) else {
                    return 0.0;
                };
                let u = |i: usize, j: usize| u.data[b * m * uc + i * uc + j].to_f64();
                let vh = |i: usize, j: usize| vh.data[b * vr * n + i * n + j].to_f64();
                let (mut d, mut t) = (0f64, 0f64);
                for i in 0..m {
                    for j in 0..n {
                        let usv: f64 = (0..k).map(|l| u(i, l) * s(b, l) * vh(l, j)).sum();
                        d += (at(b, i, j) - usv).powi(2);
                        t += at(b, i, j).powi(2);
                    }
                }
                (d / t.max(f64::MIN_POSITIVE)).sqrt()
            })
            .collect();
        (vals, resid, info)
    };
    for b in 0..batch {
        if nan && b == batch - 1 {
            assert!(
                info[b].nonfinite(),
                "{tag}: NaN matrix {b} info {:?}",
                info[b]
            );
            assert!(
                vals[b].iter().all(|x| x.is_nan()),
                "{tag}: NaN matrix {b} values"
            );
            continue;
        }
        assert!(info[b].is_ok(), "{tag}: matrix {b} info {:?}", info[b]);
        assert!(
            vals[b].windows(2).all(|p| p[0] <= p[1]),
            "{tag}: matrix {b} values out of order"
        );
        assert!(resid[b] <= tol, "{tag}: matrix {b} residual {:e}", resid[b]);
    }
    Ok(true)
}

/// The case list of the GPU sanitizer runs (scripts/gpu-sanitize): every CUDA kernel
/// family forced in float32 and float64 at shapes crossing its boundaries (shared memory
/// and global scratch for eigh and the SVD), every mode and layout, NaN input.
/// BATCHLIN_SANITIZE_KERNELS="qr-tile svd-jacobi" restricts it to those families;
/// BATCHLIN_SANITIZE_LIST=1 prints the families and runs nothing.
/// BATCHLIN_SANITIZE_SMALL=1 keeps the eigh and SVD cases up to 40 x 40.
#[test]
#[ignore]
fn sanitize_every_kernel() {
    if std::env::var_os("BATCHLIN_SANITIZE_LIST").is_some() {
        println!("families: {}", sanitize_families().join(" "));
        return;
    }
    let Some(_) = backend() else { return };
    let only = std::env::var("BATCHLIN_SANITIZE_KERNELS").unwrap_or_default();
    let only: Vec<String> = only.split_whitespace().map(String::from).collect();
    let wanted = |f: &str| only.is_empty() || only.iter().any(|o| o == f);
    // BATCHLIN_SANITIZE_SMALL=1: eigh and SVD cases up to 40 x 40 only (racecheck tracks
    // every shared-memory access: the larger ones ran past its time bound).
    let small = std::env::var_os("BATCHLIN_SANITIZE_SMALL").is_some_and(|v| !v.is_empty());
    fn run<T: Real>(wanted: &dyn Fn(&str) -> bool, small: bool) {
        let cases = [
            (3, 8, 8, Mode::Reduced, Lay::RowMajor, Special::Rand),
            (3, 24, 20, Mode::Complete, Lay::ColMajor, Special::Rand),
            (2, 60, 50, Mode::R, Lay::Padded, Special::Rand),
            (2, 32, 28, Mode::Reduced, Lay::ColMajor, Special::NanOne),
            (2, 130, 60, Mode::Reduced, Lay::RowMajor, Special::Rand),
            (2, 600, 32, Mode::Reduced, Lay::Padded, Special::Rand),
            (2, 300, 200, Mode::Complete, Lay::ColMajor, Special::Rand),
        ];
        let mut seed = 1000;
        for kernel in kernels() {
            let family = format!("qr-{}", kname(kernel));
            if !wanted(&family) {
                continue;
            }
            let mut ran = 0;
            for &(b, m, n, mode, lay, sp) in &cases {
                seed += 1;
                if case::<T>(kernel, b, m, n, mode, lay, sp, seed).unwrap() {
                    ran += 1;
                }
            }
            println!("{:?} {family}: {ran} cases", T::DTYPE);
            assert!(ran > 0, "{family} ran no sanitizer case");
        }
        // (batch, m, n, vectors, full_matrices, a NaN matrix): eigh takes m x m; 200 is
        // past the shared-memory reach of both kernels (global scratch), 33 and 40 x 20
        // past the 32-column edge, 20 x 40 wide; 5 of 13 x 13 (eigh warp: 2 matrices a
        // warp, the last warp half empty) and 20 x 20 (its 32).
        let cases = [
            (3, 8, 8, true, false, false),
            (5, 13, 13, true, false, true),
            (3, 20, 20, false, false, true),
            (2, 33, 33, true, true, true),
            (2, 40, 20, true, false, false),
            (2, 20, 40, true, true, false),
            (2, 100, 100, false, false, true),
            (2, 200, 200, true, false, true),
            // SVD `tall`: QR by TSQR (past 128 rows), a wide one transposed.
            (2, 160, 20, true, false, true),
            (2, 20, 160, true, false, false),
        ];
        for op in [Op::Eigh, Op::Svd] {
            for k in registry::kernels(op, Backend::Cuda) {
                let family = format!("{}-{}", op.name(), k.name);
                if !wanted(&family) {
                    continue;
                }
                let mut ran = 0;
                for &(b, m, n, vectors, full, nan) in &cases {
                    let n = if op == Op::Eigh { m } else { n };
                    if small && m * n > 40 * 40 {
                        continue;
                    }
                    seed += 1;
                    if eigh_svd_case::<T>(op, k.name, b, m, n, vectors, full, nan, seed).unwrap() {
                        ran += 1;
                    }
                }
                println!("{:?} {family}: {ran} cases", T::DTYPE);
                assert!(ran > 0, "{family} ran no sanitizer case");
            }
        }
    }
    run::<f32>(&wanted, small);
    run::<f64>(&wanted, small);
}

/// Every CUDA kernel writes every element of its outputs and every info word, on data
/// on the device: torch, CuPy and JAX hand their outputs over as they come from their
/// allocators, so a kernel that leaves an element (R's lower triangle, the padding of
/// full factors) or reads one before writing it returns garbage. Each kernel, forced,
/// runs every variant it takes on outputs filled with NaN and info words of all ones;
/// none may survive. The CPU's counterpart is tests/outputs.rs.
#[test]
fn every_kernel_writes_every_device_output() {
    let Some(be) = backend() else { return };
    fn run<T: Real>(be: &'static CudaDevice) -> usize {
        let es = std::mem::size_of::<T>();
        let bytes = |x: &[T]| unsafe {
            std::slice::from_raw_parts(x.as_ptr() as *const u8, std::mem::size_of_val(x))
        };
        let shapes = [
            (3, 1, 1),
            (3, 5, 5),
            (5, 13, 13),
            (3, 32, 32),
            (3, 33, 33),
            (2, 40, 20),
            (2, 20, 40),
            (2, 65, 64),
            (2, 130, 60),
            (2, 160, 20),
            (1, 200, 200),
            (1, 600, 32),
            (70, 8, 8),
        ];
        let mut rng = Rng(5);
        let mut ran = 0;
        for (batch, m, n) in shapes {
            let a: Vec<T> = (0..batch * m * n)
                .map(|_| T::from_f64(rng.normal()))
                .collect();
            for v in Variant::ALL {
                if matches!(v, Variant::Eigh | Variant::Eigvalsh) && m != n {
                    continue;
                }
                let op = v.operation();
                let slots = crate::entry::slots(op, &[batch], m, n).unwrap();
                // (shape, a batch of vectors rather than of matrices)
                let shapes: Vec<(Vec<usize>, bool)> = slots
                    .iter()
                    .filter_map(|s| s.shape.clone().map(|sh| (sh, s.vectors)))
                    .collect();
                for k in registry::kernels(v.op(), Backend::Cuda) {
                    let _ctx = be.dev.enter().unwrap();
                    let da = DeviceBuffer::new(a.len() * es).unwrap();
                    da.upload(bytes(&a)).unwrap();
                    let outs: Vec<(DeviceBuffer, usize)> = shapes
                        .iter()
                        .map(|(sh, _)| {
                            let len: usize = sh.iter().product();
                            let d = DeviceBuffer::new(len.max(1) * es).unwrap();
                            d.upload(bytes(&vec![T::from_f64(f64::NAN); len])).unwrap();
                            (d, len)
                        })
                        .collect();
                    let di = DeviceBuffer::new(batch * 4).unwrap();
                    di.upload(&vec![0xff; batch * 4]).unwrap();
                    let stream = OwnedStream::new().unwrap();
                    // SAFETY: device buffers of device 0 sized for the views, on a stream
                    // of its context, synchronised below before they are read or freed.
                    let res = unsafe {
                        let views = shapes
                            .iter()
                            .zip(&outs)
                            .map(|((sh, vectors), (d, _))| {
                                let st = crate::view::contiguous_strides(sh)?;
                                let ptr = d.ptr as *mut T;
                                match vectors {
                                    true => BatchMut::from_device_vectors(ptr, 0, sh, &st),
                                    false => BatchMut::from_device(ptr, 0, sh, &st),
                                }
                            })
                            .collect::<Result<Vec<_>>>()
                            .unwrap();
                        let req = Request {
                            operation: op,
                            a: BatchRef::from_device(
                                da.ptr as *const T,
                                0,
                                &[batch, m, n],
                                &[(m * n) as isize, n as isize, 1],
                            )
                            .unwrap(),
                            out: crate::entry::assemble(op, views).unwrap(),
                            info: Some(InfoOut::Device(
                                DeviceWords::new(di.ptr as *mut u32, 0, batch).unwrap(),
                            )),
                            place: Place::Cuda {
                                ordinal: 0,
                                stream: Stream::from_raw(stream.0 as *mut c_void),
                            },
                        };
                        crate::run(req, &Options::with_kernel(Backend::Cuda, k.name))
                    };
                    let tag = format!("{} {} {:?} {batch}x{m}x{n}", k.name, v.name(), T::DTYPE);
                    match res {
                        // Not this kernel's shape, or its library (cuSOLVER) absent.
                        Err(Error::Argument(_) | Error::Unavailable(_)) => continue,
                        r => r.unwrap_or_else(|e| panic!("{tag}: {e}")),
                    }
                    stream.sync().unwrap();
                    let mut info = vec![0u8; batch * 4];
                    di.download(&mut info).unwrap();
                    for (b, w) in info.chunks(4).enumerate() {
                        let w = u32::from_ne_bytes(w.try_into().unwrap());
                        assert!(
                            w & (Info::NONFINITE | Info::NOT_CONVERGED) == 0,
                            "{tag}: info word {b} {w:#x} (all ones before the call)"
                        );
                    }
                    for (i, (d, len)) in outs.iter().enumerate() {
                        let mut out = vec![T::ZERO; *len];
                        let out_bytes = unsafe {
                            std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, len * es)
                        };
                        d.download(out_bytes).unwrap();
                        if let Some(j) = out.iter().position(|x| x.to_f64().is_nan()) {
                            panic!("{tag}: output {i} element {j} unwritten (NaN left)");
                        }
                    }
                    ran += 1;
                }
            }
        }
        ran
    }
    let ran = run::<f32>(be) + run::<f64>(be);
    println!("{ran} kernel, variant and shape cases");
    assert!(ran > 100, "only {ran} cases ran");
}

/// A staged copy's steps: whole pages of at least 4 MiB, at most 16 of them, covering it.
#[test]
fn staging_steps_are_pages_and_few() {
    for bytes in [
        0,
        1,
        4095,
        4 << 20,
        (4 << 20) + 1,
        16_646_400,
        64 << 20,
        (1 << 30) + 7,
    ] {
        let step = stage_step(bytes);
        assert!(step >= 4 << 20 && step % 4096 == 0, "{bytes}: {step}");
        assert!(bytes.div_ceil(step) <= 16, "{bytes}: {step}");
    }
    assert_eq!(stage_step(16_646_400), 4 << 20);
    assert_eq!(stage_step(256 << 20), 16 << 20);
}

/// Host data through the GPU in several staged steps (`stage_step`: 4 MiB a step here,
/// the input and Q 16.6 MB, the last step short): every matrix factors right, the first,
/// the last and each at a step's edge among them, and the non-dense path still scatters.
#[test]
fn host_data_crosses_the_staging_steps() {
    let Some(_) = backend() else { return };
    let (batch, m, n) = (2601usize, 40usize, 40usize);
    assert!(batch * m * n * 4 > 3 * stage_step(batch * m * n * 4));
    let mut rng = Rng(17);
    let a: Vec<f32> = (0..batch * m * n).map(|_| rng.normal() as f32).collect();
    let av = crate::BatchRef::contiguous(&a, &[batch, m, n]).unwrap();
    let opts = Options::with_backend(Backend::Cuda);
    let (res, info) = crate::qr_ex(&av, crate::QrMode::Reduced, &opts).unwrap();
    assert!(info.iter().all(|i| !i.nonfinite()));
    let q = res.q.unwrap().data;
    let r = res.r.data;
    let mut worst = 0f64;
    for b in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let s: f64 = (0..n)
                    .map(|l| q[b * m * n + i * n + l] as f64 * r[b * n * n + l * n + j] as f64)
                    .sum();
                worst = worst.max((s - a[b * m * n + i * n + j] as f64).abs());
            }
        }
    }
    assert!(worst < 1e-4, "max |A - QR| = {worst}");
    // A strided output (Q column-major) is staged whole and scattered after the sync.
    let mut qc = vec![f32::NAN; batch * m * n];
    let mut rr = vec![f32::NAN; batch * n * n];
    let (mi, ni) = (m as isize, n as isize);
    let mut qv = BatchMut::new(&mut qc, &[batch, m, n], &[mi * ni, 1, mi]).unwrap();
    let mut rv = BatchMut::contiguous(&mut rr, &[batch, n, n]).unwrap();
    crate::qr_into(
        &av,
        crate::QrMode::Reduced,
        Some(&mut qv),
        &mut rv,
        None,
        &opts,
    )
    .unwrap();
    // The same kernel on the same input: equal but for the last bits, should a kernel
    // ever order its sums by the launch.
    let near = |x: f32, y: f32| (x - y).abs() <= 1e-5;
    for b in [0, batch / 2, batch - 1] {
        for i in 0..m {
            for l in 0..n {
                let (x, y) = (qc[b * m * n + i + l * m], q[b * m * n + i * n + l]);
                assert!(near(x, y), "Q({b},{i},{l}): {x} strided, {y} dense");
            }
        }
    }
    assert!(
        rr.iter().zip(&r).all(|(&x, &y)| near(x, y)),
        "R strided against dense"
    );
}

#[test]
fn work_rows_are_whole_vectors_an_odd_number_of_them() {
    for es in [4, 8] {
        for n in 1..=300 {
            let l = ld_vectors(n, es);
            // Holds the rows padded to whole 16-byte vectors (the kernels read them so).
            assert!(l >= n.next_multiple_of(16 / es), "n {n} es {es}: ld {l}");
            // 16 bytes mod 32: the vectors of 8 rows at one offset hit distinct banks.
            assert_eq!(l * es % 32, 16, "n {n} es {es}: ld {l}");
            assert!(l < n + 2 * (16 / es), "n {n} es {es}: ld {l}");
        }
    }
}
