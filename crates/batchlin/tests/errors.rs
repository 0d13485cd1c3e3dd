//! Bad input is an `Err` of the right kind, never a panic: wrong rank, non-square eigh,
//! outputs of the wrong shape or with overlapping strides, info of the wrong length, sizes
//! that overflow, mode "r" with a Q output, unknown mode / UPLO / backend names, the CUDA
//! backend where there is none, and the BATCHLIN_BACKEND override (in child processes).

mod common;
use batchlin::{
    eigh_into, qr_into, svd_into, Backend, BatchMut, BatchRef, Error, Info, Layout, Op, Options,
    QrMode, Tensor, Uplo,
};
use common::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn kind<T: std::fmt::Debug>(r: batchlin::Result<T>) -> &'static str {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => {
            assert!(!e.message().is_empty(), "empty error message");
            assert!(
                e.to_string().contains(e.kind()),
                "Display lacks the kind: {e}"
            );
            e.kind()
        }
    }
}

fn opts(b: Backend) -> Options {
    Options::with_backend(b)
}

#[test]
fn wrong_rank_and_bad_views() {
    let d = [1.0f32; 24];
    assert_eq!(kind(BatchRef::contiguous(&d, &[3])), "shape");
    assert_eq!(kind(BatchRef::contiguous(&d, &[])), "shape");
    assert_eq!(kind(BatchRef::new(&d, &[3], &[1])), "shape");
    assert_eq!(kind(BatchRef::new(&d, &[2, 3], &[3])), "shape"); // strides of the wrong length
    assert_eq!(kind(BatchRef::contiguous(&d, &[5, 5])), "shape"); // does not fit the buffer
    assert_eq!(kind(BatchRef::new(&d, &[2, 3, 4], &[12, 4, 2])), "shape"); // reaches past the end
    assert_eq!(kind(BatchRef::new(&d, &[2, 2], &[-2, 1])), "shape"); // negative without a base
    assert_eq!(
        kind(unsafe { BatchRef::<f32>::from_raw_parts(std::ptr::null(), &[2, 2], &[2, 1]) }),
        "argument"
    );
    assert_eq!(
        kind(unsafe { BatchRef::from_raw_parts(d.as_ptr(), &[4], &[1]) }),
        "shape"
    );
    assert_eq!(kind(Layout::new(&[7], &[1])), "shape");
    let mut o = [0.0f64; 24];
    assert_eq!(kind(BatchMut::contiguous(&mut o, &[24])), "shape");
    assert_eq!(kind(BatchMut::contiguous(&mut o, &[5, 5])), "shape");
    assert_eq!(kind(BatchMut::contiguous_vectors(&mut o, &[])), "output");
    assert_eq!(kind(BatchMut::contiguous_vectors(&mut o, &[5, 5])), "shape");
    assert_eq!(
        kind(unsafe { BatchMut::<f64>::from_raw_parts(std::ptr::null_mut(), &[2, 2], &[2, 1]) }),
        "argument"
    );
    assert_eq!(
        kind(Tensor::<f32>::from_vec(vec![0.0; 5], &[2, 3])),
        "shape"
    );
}

#[test]
fn overlapping_output_strides() {
    let mut o = [0.0f32; 64];
    // Batch stride 0: every matrix the same memory.
    assert_eq!(
        kind(BatchMut::new(&mut o, &[2, 3, 3], &[0, 3, 1])),
        "output"
    );
    // Rows overlapping columns.
    assert_eq!(kind(BatchMut::new(&mut o, &[3, 3], &[1, 1])), "output");
    assert_eq!(kind(BatchMut::new(&mut o, &[3, 3], &[2, 1])), "output");
    // Matrices overlapping each other.
    assert_eq!(
        kind(BatchMut::new(&mut o, &[3, 3, 3], &[4, 3, 1])),
        "output"
    );
    assert_eq!(
        kind(BatchMut::new_vectors(&mut o, &[3, 4], &[2, 1])),
        "output"
    );
    assert_eq!(
        kind(BatchMut::new_vectors(&mut o, &[3, 4], &[0, 1])),
        "output"
    );
    assert_eq!(
        kind(unsafe { BatchMut::from_raw_parts(o.as_mut_ptr(), &[2, 3, 3], &[0, 3, 1]) }),
        "output"
    );
    // The same strides are fine where a length of 1 makes them harmless, and gaps are fine.
    assert!(BatchMut::new(&mut o, &[1, 3, 3], &[0, 3, 1]).is_ok());
    assert!(BatchMut::new(&mut o, &[2, 3, 3], &[20, 1, 5]).is_ok());
    assert!(BatchMut::new(&mut o, &[0, 3, 3], &[0, 3, 1]).is_ok());
}

#[test]
fn sizes_that_overflow() {
    let big = 1usize << 40;
    assert_eq!(kind(Layout::new(&[big, big, big], &[1, 1, 1])), "overflow");
    assert_eq!(kind(Layout::contiguous(&[big, big, 2])), "overflow");
    assert_eq!(kind(Layout::contiguous(&[usize::MAX, 2, 2])), "overflow");
    let d = [0.0f32; 4];
    assert_eq!(kind(BatchRef::contiguous(&d, &[big, big, 2])), "overflow");
    assert_eq!(
        kind(unsafe { BatchRef::from_raw_parts(d.as_ptr(), &[1 << 62, 4, 4], &[16, 4, 1]) }),
        "overflow"
    );
    let mut o = [0.0f32; 4];
    assert_eq!(
        kind(BatchMut::contiguous(&mut o, &[big, big, 2])),
        "overflow"
    );
    assert_eq!(kind(Tensor::<f32>::zeros(&[usize::MAX, 2])), "overflow");
    assert_eq!(kind(Tensor::<f64>::zeros(&[big, big])), "overflow");
}

/// An empty batch of enormous matrices holds no elements: the allocating front door must
/// return (Ok with empty outputs, or an Overflow error), never panic.
#[test]
fn empty_batch_of_huge_matrices_does_not_panic() {
    let huge = 1usize << 33;
    let data: [f32; 0] = [];
    let a = BatchRef::new(&data, &[0, huge, huge], &[0, huge as isize, 1])
        .expect("an empty view is valid");
    let mut failures = Vec::new();
    type Call<'a> = (&'static str, Box<dyn Fn() -> Result<(), Error> + 'a>);
    let calls: Vec<Call> = vec![
        (
            "qr reduced",
            Box::new(|| batchlin::qr(&a, QrMode::Reduced).map(|_| ())),
        ),
        ("qr r", Box::new(|| batchlin::qr(&a, QrMode::R).map(|_| ()))),
        (
            "eigh",
            Box::new(|| batchlin::eigh(&a, Uplo::Lower).map(|_| ())),
        ),
        (
            "eigvalsh",
            Box::new(|| batchlin::eigvalsh(&a, Uplo::Lower).map(|_| ())),
        ),
        ("svd", Box::new(|| batchlin::svd(&a, false).map(|_| ()))),
        ("svdvals", Box::new(|| batchlin::svdvals(&a).map(|_| ()))),
    ];
    for (name, f) in calls {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => assert!(
                matches!(e, Error::Overflow(_)),
                "{name}: unexpected error kind {e}"
            ),
            Err(_) => failures.push(name),
        }
    }
    assert!(
        failures.is_empty(),
        "panicked on an empty batch of {huge}x{huge} matrices: {failures:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Child processes: tests that could abort the process (allocation failure) or that set
// environment variables run as a fresh copy of this test binary.

const CHILD: &str = "BATCHLIN_TEST_CHILD";

fn in_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Run the ignored test `name` of this binary in a child process with `env`; its output.
fn run_child(name: &str, env: &[(&str, &str)]) -> (bool, String) {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        "--exact",
        name,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, "1");
    cmd.env_remove("BATCHLIN_BACKEND");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("spawn the test binary");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ok = out.status.success() && text.contains("1 passed");
    (ok, format!("status {:?}\n{text}", out.status))
}

/// An empty batch of large (but addressable) matrices: nothing to compute, so nothing may
/// be allocated for it. Run in a child because a failed allocation aborts the process.
#[test]
fn empty_batch_of_large_matrices_returns() {
    let (ok, out) = run_child("child_empty_batch_of_large_matrices", &[]);
    assert!(
        ok,
        "an empty batch of 2^20 x 2^20 matrices crashed or failed:\n{out}"
    );
}

#[test]
#[ignore = "run in a child process by empty_batch_of_large_matrices_returns"]
fn child_empty_batch_of_large_matrices() {
    if !in_child() {
        return;
    }
    let n = 1usize << 20;
    let data: [f32; 0] = [];
    let a = BatchRef::new(&data, &[0, n, n], &[0, n as isize, 1]).unwrap();
    for b in backends_for_every_op() {
        let o = opts(b);
        let (r, info) = batchlin::qr_ex(&a, QrMode::R, &o).expect("qr of an empty batch");
        assert!(r.r.data.is_empty() && info.is_empty());
        let (e, _) =
            batchlin::eigh_ex(&a, Uplo::Lower, false, &o).expect("eigvalsh of an empty batch");
        assert!(e.w.data.is_empty());
        let (s, _) = batchlin::svd_ex(&a, false, false, &o).expect("svdvals of an empty batch");
        assert!(s.s.data.is_empty());
    }
}

/// BATCHLIN_BACKEND forces the front door's choice; an invalid value is an Argument error
/// for Auto calls (forced calls ignore it); "cuda" without CUDA is Unavailable.
#[test]
fn env_override_of_the_router() {
    for (val, child) in [
        ("cpu-faer", "child_env_forced"),
        ("CPU-SMALL", "child_env_forced"),
        (" CPU-FAER ", "child_env_forced"),
        ("bogus", "child_env_invalid"),
        ("cuda", "child_env_cuda"),
        ("auto", "child_env_auto"),
    ] {
        let (ok, out) = run_child(child, &[("BATCHLIN_BACKEND", val)]);
        assert!(ok, "BATCHLIN_BACKEND={val}:\n{out}");
    }
}

fn env_value() -> String {
    std::env::var("BATCHLIN_BACKEND").unwrap()
}

#[test]
#[ignore = "run in a child process by env_override_of_the_router"]
fn child_env_forced() {
    if !in_child() {
        return;
    }
    let want: Backend = env_value().parse().unwrap();
    let mut g = rng(301);
    for (m, n) in [(4, 4), (40, 40), (100, 30)] {
        assert_eq!(
            batchlin::backend_for(Op::Qr, batchlin::DType::F32, 1, m, n).unwrap(),
            want
        );
        assert_eq!(
            batchlin::backend_for(Op::Svd, batchlin::DType::F64, 7, m, n).unwrap(),
            want
        );
        let inp = Input::<f32>::contiguous(&[gaussian(&mut g, m, n)], &[1], m, n);
        let auto = run_qr(&inp.view(), QrMode::Reduced, Backend::Auto);
        let forced = run_qr(&inp.view(), QrMode::Reduced, want);
        assert_same_bits(&auto.r, &forced.r, "env-forced qr");
        let auto = run_svd(&inp.view(), false, true, Backend::Auto);
        let forced = run_svd(&inp.view(), false, true, want);
        assert_same_bits(&auto.s, &forced.s, "env-forced svd");
        assert_same_bits(
            auto.u.as_ref().unwrap(),
            forced.u.as_ref().unwrap(),
            "env-forced svd",
        );
    }
    assert!(
        batchlin::policy_source().contains(want.name()),
        "{}",
        batchlin::policy_source()
    );
}

#[test]
#[ignore = "run in a child process by env_override_of_the_router"]
fn child_env_invalid() {
    if !in_child() {
        return;
    }
    let d = [1.0f64, 2.0, 3.0, 5.0];
    let a = BatchRef::contiguous(&d, &[2, 2]).unwrap();
    assert_eq!(
        kind(batchlin::backend_for(Op::Qr, batchlin::DType::F64, 1, 2, 2)),
        "argument"
    );
    assert_eq!(
        kind(batchlin::qr(&a, QrMode::Reduced).map(|_| ())),
        "argument"
    );
    assert_eq!(
        kind(batchlin::eigh(&a, Uplo::Lower).map(|_| ())),
        "argument"
    );
    assert_eq!(kind(batchlin::svdvals(&a).map(|_| ())), "argument");
    // Forced backends do not consult the environment.
    assert!(batchlin::qr_ex(&a, QrMode::Reduced, &opts(Backend::CpuSmall)).is_ok());
    assert!(batchlin::policy_source().contains("invalid"));
    // The error names the variable: the call itself passed nothing wrong.
    let e = batchlin::svdvals(&a).unwrap_err();
    assert!(
        e.message().contains("BATCHLIN_BACKEND") && e.message().contains("bogus"),
        "{e}"
    );
}

#[test]
#[ignore = "run in a child process by env_override_of_the_router"]
fn child_env_cuda() {
    if !in_child() {
        return;
    }
    if cuda_present() {
        return;
    }
    let d = [1.0f32, 2.0, 3.0, 5.0];
    let a = BatchRef::contiguous(&d, &[2, 2]).unwrap();
    assert_eq!(
        kind(batchlin::qr(&a, QrMode::Reduced).map(|_| ())),
        "unavailable"
    );
    assert_eq!(
        kind(batchlin::eigvalsh(&a, Uplo::Upper).map(|_| ())),
        "unavailable"
    );
    assert_eq!(kind(batchlin::svd(&a, true).map(|_| ())), "unavailable");
    // What backend_for answers agrees with the call: the same Unavailable error.
    let answer = batchlin::backend_for(batchlin::Op::Qr, batchlin::DType::F32, 1, 2, 2);
    assert_eq!(kind(answer.map(|_| ())), "unavailable");
}

#[test]
#[ignore = "run in a child process by env_override_of_the_router"]
fn child_env_auto() {
    if !in_child() {
        return;
    }
    // "auto" means the router: small shapes to the own kernels, large ones to faer.
    assert_eq!(
        batchlin::backend_for(Op::Eigh, batchlin::DType::F32, 10, 8, 8).unwrap(),
        Backend::CpuSmall
    );
    assert_eq!(
        batchlin::backend_for(Op::Eigh, batchlin::DType::F32, 10, 600, 600).unwrap(),
        Backend::CpuFaer
    );
    assert!(!batchlin::policy_source().contains("forced"));
}

/// Whether this machine has an NVIDIA driver at all.
fn cuda_present() -> bool {
    std::path::Path::new("/dev/nvidiactl").exists()
        || std::path::Path::new("/proc/driver/nvidia").exists()
}

/// The router (without BATCHLIN_BACKEND): host data stays on the CPU, tiny problems go to
/// the own kernels and large ones to faer, with one crossover per op and dtype (the
/// crossovers themselves are measured policy, not pinned here).
#[test]
fn router_small_to_own_kernels_large_to_faer() {
    if std::env::var_os("BATCHLIN_BACKEND").is_some() {
        return;
    }
    use batchlin::DType::{F32, F64};
    for dt in [F32, F64] {
        for op in [Op::Qr, Op::Eigh, Op::Svd] {
            let pick = |m: usize, n: usize| batchlin::backend_for(op, dt, 64, m, n).unwrap();
            assert_eq!(pick(2, 2), Backend::CpuSmall, "{op} {dt} 2x2");
            assert_eq!(pick(16, 16), Backend::CpuSmall, "{op} {dt} 16x16");
            assert_eq!(pick(1000, 1000), Backend::CpuFaer, "{op} {dt} 1000x1000");
            let mut switched = false;
            for n in 1..=600 {
                let b = pick(n, n);
                assert!(b.is_cpu(), "{op} {dt} {n}: {b}");
                if b == Backend::CpuFaer {
                    switched = true;
                } else {
                    assert!(
                        !switched,
                        "{op} {dt}: back to the own kernels at n={n} after faer"
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The front door's own checks.

#[test]
fn eigh_needs_square_input() {
    let d = [0.5f64; 24];
    for shape in [[3usize, 4], [4, 3], [1, 2]] {
        let a = BatchRef::contiguous(&d, &shape).unwrap();
        for b in [
            Backend::Auto,
            Backend::CpuSmall,
            Backend::CpuFaer,
            Backend::Cuda,
        ] {
            assert_eq!(
                kind(batchlin::eigh_ex(&a, Uplo::Lower, true, &opts(b)).map(|_| ())),
                "shape"
            );
            assert_eq!(
                kind(batchlin::eigh_ex(&a, Uplo::Upper, false, &opts(b)).map(|_| ())),
                "shape"
            );
            let mut w = Tensor::<f64>::zeros(&[shape[0]]).unwrap();
            assert_eq!(
                kind(eigh_into(
                    &a,
                    Uplo::Lower,
                    &mut w.view_mut_vectors(),
                    None,
                    None,
                    &opts(b)
                )),
                "shape"
            );
        }
        assert_eq!(kind(batchlin::eigh(&a, Uplo::Lower).map(|_| ())), "shape");
        assert_eq!(
            kind(batchlin::eigvalsh(&a, Uplo::Lower).map(|_| ())),
            "shape"
        );
    }
    let a = BatchRef::contiguous(&d, &[2, 3, 4]).unwrap();
    assert_eq!(kind(batchlin::eigh(&a, Uplo::Lower).map(|_| ())), "shape");
}

fn t32(shape: &[usize]) -> Tensor<f32> {
    Tensor::zeros(shape).unwrap()
}

#[test]
fn qr_into_output_checks() {
    let d: Vec<f32> = (0..2 * 5 * 3).map(|i| (i as f32).sin()).collect();
    let a = BatchRef::contiguous(&d, &[2, 5, 3]).unwrap(); // batch [2], 5x3, k = 3
    let o = opts(Backend::CpuSmall);
    let run = |mode: QrMode, q: Option<&[usize]>, r: &[usize], info: Option<usize>| {
        let mut qt = q.map(t32);
        let mut rt = t32(r);
        let mut iv = info.map(|n| vec![Info::OK; n]);
        let mut qv = qt.as_mut().map(|t| t.view_mut());
        qr_into(
            &a,
            mode,
            qv.as_mut(),
            &mut rt.view_mut(),
            iv.as_deref_mut(),
            &o,
        )
    };
    // The right shapes work.
    assert!(run(QrMode::Reduced, Some(&[2, 5, 3]), &[2, 3, 3], Some(2)).is_ok());
    assert!(run(QrMode::Complete, Some(&[2, 5, 5]), &[2, 5, 3], None).is_ok());
    assert!(run(QrMode::R, None, &[2, 3, 3], Some(2)).is_ok());
    // Wrong R.
    assert_eq!(
        kind(run(QrMode::Reduced, Some(&[2, 5, 3]), &[2, 5, 3], None)),
        "output"
    );
    assert_eq!(
        kind(run(QrMode::Reduced, Some(&[2, 5, 3]), &[2, 3, 4], None)),
        "output"
    );
    assert_eq!(
        kind(run(QrMode::Reduced, Some(&[2, 5, 3]), &[3, 3, 3], None)),
        "output"
    );
    assert_eq!(
        kind(run(QrMode::Reduced, Some(&[2, 5, 3]), &[1, 2, 3, 3], None)),
        "output"
    );
    assert_eq!(
        kind(run(QrMode::Complete, Some(&[2, 5, 5]), &[2, 3, 3], None)),
        "output"
    );
    // Wrong Q.
    assert_eq!(
        kind(run(QrMode::Reduced, Some(&[2, 5, 5]), &[2, 3, 3], None)),
        "output"
    );
    assert_eq!(
        kind(run(QrMode::Complete, Some(&[2, 5, 3]), &[2, 5, 3], None)),
        "output"
    );
    assert_eq!(
        kind(run(QrMode::Reduced, Some(&[5, 3]), &[2, 3, 3], None)),
        "output"
    );
    // A Q where none is made, none where one is.
    assert_eq!(
        kind(run(QrMode::R, Some(&[2, 5, 3]), &[2, 3, 3], None)),
        "output"
    );
    assert_eq!(kind(run(QrMode::Reduced, None, &[2, 3, 3], None)), "output");
    assert_eq!(
        kind(run(QrMode::Complete, None, &[2, 5, 3], None)),
        "output"
    );
    // Info of the wrong length.
    assert_eq!(
        kind(run(QrMode::Reduced, Some(&[2, 5, 3]), &[2, 3, 3], Some(1))),
        "output"
    );
    assert_eq!(kind(run(QrMode::R, None, &[2, 3, 3], Some(3))), "output");
    assert_eq!(kind(run(QrMode::R, None, &[2, 3, 3], Some(0))), "output");
}

#[test]
fn eigh_into_output_checks() {
    let d: Vec<f64> = (0..3 * 4 * 4).map(|i| (i as f64).cos()).collect();
    let a = BatchRef::contiguous(&d, &[3, 4, 4]).unwrap();
    for b in [Backend::CpuSmall, Backend::CpuFaer, Backend::Auto] {
        let o = opts(b);
        let run = |w: &[usize], v: Option<&[usize]>, info: Option<usize>| {
            let mut wt = Tensor::<f64>::zeros(w).unwrap();
            let mut vt = v.map(|s| Tensor::<f64>::zeros(s).unwrap());
            let mut iv = info.map(|n| vec![Info::OK; n]);
            let mut vv = vt.as_mut().map(|t| t.view_mut());
            eigh_into(
                &a,
                Uplo::Lower,
                &mut wt.view_mut_vectors(),
                vv.as_mut(),
                iv.as_deref_mut(),
                &o,
            )
        };
        assert!(run(&[3, 4], Some(&[3, 4, 4]), Some(3)).is_ok());
        assert!(run(&[3, 4], None, None).is_ok());
        assert_eq!(kind(run(&[3, 3], None, None)), "output");
        assert_eq!(kind(run(&[4, 4], None, None)), "output");
        assert_eq!(kind(run(&[12], None, None)), "output");
        assert_eq!(kind(run(&[1, 3, 4], None, None)), "output");
        assert_eq!(kind(run(&[3, 4], Some(&[3, 4, 3]), None)), "output");
        assert_eq!(kind(run(&[3, 4], Some(&[4, 4]), None)), "output");
        assert_eq!(kind(run(&[3, 4], Some(&[2, 4, 4]), None)), "output");
        assert_eq!(kind(run(&[3, 4], None, Some(2))), "output");
        assert_eq!(kind(run(&[3, 4], Some(&[3, 4, 4]), Some(4))), "output");
    }
    // w given as a batch of 1 x 4 matrices is the same memory as vectors [3, 4]: accepted.
    let mut w = vec![0.0f64; 12];
    let mut wv = BatchMut::contiguous(&mut w, &[3, 1, 4]).unwrap();
    assert!(eigh_into(&a, Uplo::Lower, &mut wv, None, None, &Options::default()).is_ok());
}

#[test]
fn svd_into_output_checks() {
    let d: Vec<f32> = (0..2 * 6 * 4)
        .map(|i| ((i * 7 % 11) as f32) - 5.0)
        .collect();
    let a = BatchRef::contiguous(&d, &[2, 6, 4]).unwrap(); // k = 4
    for b in [Backend::CpuSmall, Backend::CpuFaer, Backend::Auto] {
        let o = opts(b);
        let run = |full: bool,
                   u: Option<&[usize]>,
                   s: &[usize],
                   vh: Option<&[usize]>,
                   info: Option<usize>| {
            let mut ut = u.map(t32);
            let mut st = t32(s);
            let mut vt = vh.map(t32);
            let mut iv = info.map(|n| vec![Info::OK; n]);
            let mut uv = ut.as_mut().map(|t| t.view_mut());
            let mut vv = vt.as_mut().map(|t| t.view_mut());
            svd_into(
                &a,
                full,
                uv.as_mut(),
                &mut st.view_mut_vectors(),
                vv.as_mut(),
                iv.as_deref_mut(),
                &o,
            )
        };
        assert!(run(false, Some(&[2, 6, 4]), &[2, 4], Some(&[2, 4, 4]), Some(2)).is_ok());
        assert!(run(true, Some(&[2, 6, 6]), &[2, 4], Some(&[2, 4, 4]), None).is_ok());
        assert!(run(false, None, &[2, 4], None, None).is_ok());
        assert!(run(true, None, &[2, 4], None, None).is_ok());
        // Wrong S.
        assert_eq!(kind(run(false, None, &[2, 6], None, None)), "output");
        assert_eq!(kind(run(false, None, &[3, 4], None, None)), "output");
        assert_eq!(kind(run(false, None, &[8], None, None)), "output");
        // Wrong U / Vh, for thin and full.
        assert_eq!(
            kind(run(
                false,
                Some(&[2, 6, 6]),
                &[2, 4],
                Some(&[2, 4, 4]),
                None
            )),
            "output"
        );
        assert_eq!(
            kind(run(true, Some(&[2, 6, 4]), &[2, 4], Some(&[2, 4, 4]), None)),
            "output"
        );
        assert_eq!(
            kind(run(
                false,
                Some(&[2, 6, 4]),
                &[2, 4],
                Some(&[2, 4, 6]),
                None
            )),
            "output"
        );
        assert_eq!(
            kind(run(
                false,
                Some(&[2, 6, 4]),
                &[2, 4],
                Some(&[1, 4, 4]),
                None
            )),
            "output"
        );
        // One of U and Vh alone.
        assert_eq!(
            kind(run(false, Some(&[2, 6, 4]), &[2, 4], None, None)),
            "output"
        );
        assert_eq!(
            kind(run(false, None, &[2, 4], Some(&[2, 4, 4]), None)),
            "output"
        );
        // Info of the wrong length.
        assert_eq!(kind(run(false, None, &[2, 4], None, Some(1))), "output");
        assert_eq!(
            kind(run(
                false,
                Some(&[2, 6, 4]),
                &[2, 4],
                Some(&[2, 4, 4]),
                Some(5)
            )),
            "output"
        );
    }
}

/// An error leaves the outputs untouched (nothing is computed before the checks pass).
#[test]
fn errors_write_nothing() {
    let d: Vec<f64> = (0..2 * 4 * 4).map(|i| i as f64).collect();
    let a = BatchRef::contiguous(&d, &[2, 4, 4]).unwrap();
    let mut r = vec![SENTINEL; 2 * 4 * 4];
    let mut q = vec![SENTINEL; 2 * 4 * 4];
    let mut info = vec![Info(7); 2];
    {
        let mut rv = BatchMut::contiguous(&mut r, &[2, 4, 4]).unwrap();
        let mut qv = BatchMut::contiguous(&mut q, &[2, 4, 4]).unwrap();
        // Mode r with a Q output.
        assert_eq!(
            kind(qr_into(
                &a,
                QrMode::R,
                Some(&mut qv),
                &mut rv,
                Some(&mut info),
                &Options::default()
            )),
            "output"
        );
        // The CUDA backend where there is none.
        if !cuda_present() {
            assert_eq!(
                kind(qr_into(
                    &a,
                    QrMode::Reduced,
                    Some(&mut qv),
                    &mut rv,
                    Some(&mut info),
                    &opts(Backend::Cuda)
                )),
                "unavailable"
            );
        }
    }
    assert!(r.iter().chain(&q).all(|&x| x == SENTINEL));
    assert!(info.iter().all(|&i| i == Info(7)));
}

#[test]
fn unknown_names() {
    for s in [
        "",
        "full",
        "economic",
        "raw",
        "Reduced",
        "R",
        "q",
        "complete ",
    ] {
        assert_eq!(kind(s.parse::<QrMode>()), "argument", "mode {s:?}");
    }
    for s in ["reduced", "complete", "r"] {
        assert!(s.parse::<QrMode>().is_ok(), "mode {s:?}");
    }
    assert_eq!("reduced".parse::<QrMode>().unwrap(), QrMode::Reduced);
    assert_eq!("complete".parse::<QrMode>().unwrap(), QrMode::Complete);
    assert_eq!("r".parse::<QrMode>().unwrap(), QrMode::R);
    for s in ["", "X", "lower", "LU", " L"] {
        assert_eq!(kind(s.parse::<Uplo>()), "argument", "uplo {s:?}");
    }
    assert_eq!("L".parse::<Uplo>().unwrap(), Uplo::Lower);
    assert_eq!("U".parse::<Uplo>().unwrap(), Uplo::Upper);
    assert_eq!("u".parse::<Uplo>().unwrap(), Uplo::Upper);
    for s in ["gpu", "cpu", "faer", "cpu_small", "metal", "cuda0"] {
        assert_eq!(kind(s.parse::<Backend>()), "argument", "backend {s:?}");
    }
    for b in [
        Backend::Auto,
        Backend::CpuSmall,
        Backend::CpuFaer,
        Backend::Cuda,
    ] {
        assert_eq!(b.name().parse::<Backend>().unwrap(), b);
    }
    for s in ["lu", "cholesky", ""] {
        assert_eq!(kind(s.parse::<Op>()), "argument", "op {s:?}");
    }
}

/// Forcing the CUDA backend: Err(Unavailable) on a machine without CUDA (every op, every
/// entry point), never a panic.
#[test]
fn cuda_backend_without_cuda() {
    if cuda_present() {
        eprintln!("an NVIDIA driver is present: skipping the no-CUDA checks");
        return;
    }
    let o = opts(Backend::Cuda);
    let d: Vec<f32> = (0..3 * 5 * 5).map(|i| (i as f32 * 0.37).sin()).collect();
    let a = BatchRef::contiguous(&d, &[3, 5, 5]).unwrap();
    let r = catch_unwind(AssertUnwindSafe(|| {
        assert_eq!(
            kind(batchlin::qr_ex(&a, QrMode::Reduced, &o).map(|_| ())),
            "unavailable"
        );
        assert_eq!(
            kind(batchlin::qr_ex(&a, QrMode::R, &o).map(|_| ())),
            "unavailable"
        );
        assert_eq!(
            kind(batchlin::eigh_ex(&a, Uplo::Lower, true, &o).map(|_| ())),
            "unavailable"
        );
        assert_eq!(
            kind(batchlin::eigh_ex(&a, Uplo::Upper, false, &o).map(|_| ())),
            "unavailable"
        );
        assert_eq!(
            kind(batchlin::svd_ex(&a, false, true, &o).map(|_| ())),
            "unavailable"
        );
        assert_eq!(
            kind(batchlin::svd_ex(&a, true, false, &o).map(|_| ())),
            "unavailable"
        );
        let mut s = t32(&[3, 5]);
        assert_eq!(
            kind(svd_into(
                &a,
                false,
                None,
                &mut s.view_mut_vectors(),
                None,
                None,
                &o
            )),
            "unavailable"
        );
        let mut w = t32(&[3, 5]);
        assert_eq!(
            kind(eigh_into(
                &a,
                Uplo::Lower,
                &mut w.view_mut_vectors(),
                None,
                None,
                &o
            )),
            "unavailable"
        );
        // Empty batches too.
        let e = BatchRef::contiguous(&d, &[0, 5, 5]).unwrap();
        assert_eq!(
            kind(batchlin::qr_ex(&e, QrMode::Reduced, &o).map(|_| ())),
            "unavailable"
        );
    }));
    assert!(r.is_ok(), "forcing the CUDA backend panicked");
}

/// The info word's accessors.
#[test]
fn info_word_bits() {
    let i = Info::OK.with_flag(Info::RANK_DEFICIENT).with_iterations(37);
    assert!(i.rank_deficient() && !i.nonfinite() && !i.not_converged() && i.is_ok());
    assert_eq!(i.iterations(), 37);
    let j = Info(Info::NONFINITE);
    assert!(j.nonfinite() && !j.is_ok());
    assert!(!Info(Info::NOT_CONVERGED).is_ok());
    assert_eq!(Info::OK.with_iterations(1 << 20).iterations(), 0xffff);
}
