//! QR on the CUDA backend through the front door (host data staged through the GPU): the
//! same properties the CPU backends are held to, at shapes around every GPU kernel's
//! boundary. Skipped, with the reason printed, on machines without a usable GPU; the
//! kernels' own tests (forced kernel by kernel, device memory) are in src/cuda/tests.rs.

mod common;
use batchlin::{qr_into, Backend, Info, Options, QrMode, Real};
use common::*;

const MODES: [QrMode; 3] = [QrMode::Reduced, QrMode::Complete, QrMode::R];

/// True when a GPU is usable; otherwise prints why the test is skipped.
fn gpu(test: &str) -> bool {
    match batchlin::device::gpu_absent_reason() {
        None => true,
        Some(why) => {
            println!("skipped {test}: no CUDA ({why})");
            false
        }
    }
}

/// Shapes around the GPU kernels' boundaries (warp up to 32 columns, shared memory up to
/// ~128, tall-skinny TSQR, the global-memory kernel) and the CPU's.
fn shapes() -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = SQUARE.iter().map(|&n| (n, n)).collect();
    v.extend_from_slice(&RECT);
    v.extend_from_slice(&[
        (8, 8),
        (128, 32),
        (128, 33),
        (127, 64),
        (96, 65),
        (128, 128),
        (120, 128),
        (129, 64),
        (256, 64),
        (1024, 64),
        (200, 200),
    ]);
    v
}

fn shapes_and_modes<T: Real>(seed: u64) {
    let t = tol::<T>();
    let mut g = rng(seed);
    for (m, n) in shapes() {
        let mats = vec![
            gaussian(&mut g, m, n),
            rank_one(&mut g, m, n),
            M::zeros(m, n),
        ];
        let inp = Input::<T>::contiguous(&mats, &[3], m, n);
        for mode in MODES {
            let ctx = format!("{} cuda qr {mode:?} {m}x{n}", dtype_name::<T>());
            let res = run_qr(&inp.view(), mode, Backend::Cuda);
            assert!(!res.info[0].nonfinite(), "{ctx}: info {:#x}", res.info[0].0);
            for i in 0..3 {
                check_qr(
                    &inp.mats[i],
                    res.q.as_ref().map(|q| &q[i]),
                    &res.r[i],
                    mode == QrMode::Complete,
                    t,
                    &format!("{ctx} #{i}"),
                );
            }
            // Same convention as the CPU: R agrees with the CPU's on full-rank input.
            if m.min(n) > 0 {
                let cpu = run_qr(&inp.view(), mode, Backend::CpuSmall);
                let d = res.r[0].sub(&cpu.r[0]).frob();
                assert_le(
                    d,
                    10.0 * t.qr * norm_or_tiny(&inp.mats[0]),
                    "R vs CPU",
                    &ctx,
                );
            }
            if m.min(n) > 0 && m.min(n) > 1 {
                assert!(
                    res.info[2].rank_deficient(),
                    "{ctx}: zero matrix not flagged rank deficient"
                );
            }
        }
    }
}

#[test]
fn cuda_qr_shapes_and_modes_f32() {
    if gpu("cuda_qr_shapes_and_modes_f32") {
        shapes_and_modes::<f32>(11);
    }
}

#[test]
fn cuda_qr_shapes_and_modes_f64() {
    if gpu("cuda_qr_shapes_and_modes_f64") {
        shapes_and_modes::<f64>(12);
    }
}

/// Strided inputs and outputs, magnitudes 1e-30 and 1e+37, NaN and Inf inside a batch.
#[test]
fn cuda_qr_strides_scales_nonfinite() {
    if !gpu("cuda_qr_strides_scales_nonfinite") {
        return;
    }
    let t = tol::<f32>();
    let mut g = rng(13);
    for (m, n) in [(7, 5), (32, 32), (64, 64), (100, 30), (30, 100)] {
        let k = m.min(n);
        for lay in Lay::all(3) {
            let mats: Vec<M> = (0..4)
                .map(|i| gaussian(&mut g, m, n).scale([1.0, 1e-30, 1e37, 1.0][i]))
                .collect();
            let mut inp = Input::<f32>::new(&mats, &[4], m, n, &lay);
            inp.set(3, m / 2, n / 2, f32::NAN);
            let mut q = Out::<f32>::mats(&[4], m, k, &lay);
            let mut r = Out::<f32>::mats(&[4], k, n, &lay);
            let mut info = vec![Info::OK; 4];
            let ctx = format!("cuda qr {m}x{n} layout {lay:?}");
            qr_into(
                &inp.view(),
                QrMode::Reduced,
                Some(&mut q.view()),
                &mut r.view(),
                Some(&mut info),
                &Options::with_backend(Backend::Cuda),
            )
            .unwrap();
            q.check_written(&ctx);
            r.check_written(&ctx);
            let (qm, rm) = (q.read(), r.read());
            for i in 0..3 {
                check_qr(
                    &mats[i],
                    Some(&qm[i]),
                    &rm[i],
                    false,
                    t,
                    &format!("{ctx} #{i}"),
                );
                assert!(info[i].is_ok(), "{ctx} #{i}: info {:#x}", info[i].0);
            }
            assert!(info[3].nonfinite(), "{ctx}: NaN matrix not flagged");
            assert!(
                qm[3].all_nan() && rm[3].all_nan(),
                "{ctx}: NaN matrix outputs not NaN"
            );
        }
    }
}
