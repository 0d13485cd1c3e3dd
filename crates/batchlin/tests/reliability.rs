//! What happens around the numerics: running out of memory (in a child process under an
//! address-space limit: an `Err(OutOfMemory)`, never an abort, and the library usable
//! afterwards), a process forked after a parallel call (the child computes, bit for bit
//! what the parent computes), float32 results beyond the type's range (`Info::OVERFLOW`),
//! and the argument checks of the reliability work.

mod common;
use batchlin::{Backend, BatchRef, DType, Info, Op, Options, QrMode, Uplo};
use common::*;

const CHILD: &str = "BATCHLIN_TEST_CHILD";

fn in_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Run the ignored test `name` of this binary in a child process; (passed, output).
fn run_child(name: &str) -> (bool, String) {
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            name,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env_remove("BATCHLIN_BACKEND")
        .output()
        .expect("spawn the test binary");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ok = out.status.success() && text.contains("1 passed");
    (ok, format!("status {:?}\n{text}", out.status))
}

/// Limit this process's address space to what it maps now plus `extra` bytes.
fn limit_address_space(extra: u64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let vm_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmSize");
    let lim = libc::rlimit {
        rlim_cur: vm_kb * 1024 + extra,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: plain system call on this process.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) }, 0);
}

fn expect_oom<T: std::fmt::Debug>(r: batchlin::Result<T>, what: &str) {
    match r {
        Err(batchlin::Error::OutOfMemory(m)) => {
            assert!(
                m.contains("allocate") || m.contains("exceeds"),
                "{what}: {m}"
            );
        }
        other => panic!("{what}: expected OutOfMemory, got {other:?}"),
    }
}

/// A known answer after the failures: the library is still usable.
fn still_usable() {
    let d = [3.0f64, 0.0, 4.0, 5.0]; // A'A = [25 20; 20 25]: singular values sqrt(45), sqrt(5)
    let a = BatchRef::contiguous(&d, &[2, 2]).unwrap();
    let s = batchlin::svdvals(&a).unwrap();
    let want = [45f64.sqrt(), 5f64.sqrt()];
    for (x, w) in s.data.iter().zip(want) {
        assert!((x - w).abs() < 1e-14, "{:?} vs {want:?}", s.data);
    }
    let mut g = rng(7);
    let inp = Input::<f64>::contiguous(&vec![gaussian(&mut g, 12, 9); 16], &[16], 12, 9);
    let qr = run_qr(&inp.view(), QrMode::Reduced, Backend::Auto);
    for (k, (q, r)) in qr.q.as_ref().unwrap().iter().zip(&qr.r).enumerate() {
        check_qr(
            &inp.mats[k],
            Some(q),
            r,
            false,
            tol::<f64>(),
            "after out of memory",
        );
    }
}

#[test]
fn out_of_memory_is_an_error_not_an_abort() {
    let (ok, out) = run_child("child_out_of_memory");
    assert!(ok, "{out}");
}

#[test]
#[ignore = "run in a child process by out_of_memory_is_an_error_not_an_abort"]
fn child_out_of_memory() {
    if !in_child() {
        return;
    }
    limit_address_space(1 << 30);
    let one = [1.0f64];
    let onef = [1.0f32];
    // Outputs: a zero-stride view of 2^40 2x2 matrices needs 32 TiB of R.
    let huge = BatchRef::new(&one, &[1 << 40, 2, 2], &[0, 0, 0]).unwrap();
    expect_oom(batchlin::qr(&huge, QrMode::Reduced), "qr outputs");
    expect_oom(batchlin::eigvalsh(&huge, Uplo::Lower), "eigvalsh outputs");
    // Scratch, one matrix: 30000 x 30000 (7 GB of work matrix), outputs of 240 KB.
    let big = BatchRef::new(&one, &[1, 30000, 30000], &[0, 0, 0]).unwrap();
    expect_oom(batchlin::svdvals(&big), "svdvals scratch");
    expect_oom(batchlin::eigvalsh(&big, Uplo::Upper), "eigvalsh scratch");
    for b in [Backend::CpuSmall, Backend::CpuFaer] {
        let o = Options::with_backend(b);
        expect_oom(
            batchlin::svd_ex(&big, false, false, &o),
            "svdvals scratch (forced)",
        );
    }
    // Scratch on every worker thread: 8 matrices, each worker's scratch past the limit.
    let many = BatchRef::new(&onef, &[8, 20000, 20000], &[0, 0, 0]).unwrap();
    expect_oom(batchlin::svdvals(&many), "parallel svdvals scratch");
    let qr_many = BatchRef::new(&onef, &[8, 20000, 3], &[0, 0, 0]).unwrap();
    expect_oom(
        batchlin::qr_ex(&qr_many, QrMode::Complete, &Options::default()),
        "complete qr outputs",
    );
    // A matrix whose scratch cannot even be addressed: refused before sizes wrap.
    let wide = BatchRef::new(&one, &[1, 1 << 31, 1 << 31], &[0, 0, 0]).unwrap();
    expect_oom(batchlin::svdvals(&wide), "unaddressable scratch");
    still_usable();
}

#[test]
fn calls_leave_rayons_global_pool_alone() {
    let (ok, out) = run_child("child_global_pool");
    assert!(ok, "{out}");
}

#[test]
#[ignore = "run in a child process by calls_leave_rayons_global_pool_alone"]
fn child_global_pool() {
    if !in_child() {
        return;
    }
    // One large matrix: faer's own parallelism inside a call (where the cores allow it).
    // Had batchlin asked rayon's global pool for its size, that pool would exist now, and
    // where its threads cannot start (an address-space limit) the call would panic.
    let mut g = rng(5);
    let a = gaussian(&mut g, 256, 256);
    let sym = sym_gaussian(&mut g, 256);
    let o = Options::with_backend(Backend::CpuFaer);
    let inp = Input::<f64>::contiguous(std::slice::from_ref(&a), &[1], 256, 256);
    let sinp = Input::<f64>::contiguous(std::slice::from_ref(&sym), &[1], 256, 256);
    batchlin::qr_ex(&inp.view(), QrMode::Reduced, &o).unwrap();
    batchlin::svd_ex(&inp.view(), true, false, &o).unwrap();
    batchlin::eigh_ex(&sinp.view(), Uplo::Lower, true, &o).unwrap();
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global()
        .expect("rayon's global pool was already built by a batchlin call");
}

/// Fewer large matrices than threads (a rayon pool of 6 here, a batch of 3 at 200x200 on
/// `cpu-faer`): they run side by side, faer using a share of the threads inside each. Each
/// matrix's factors pass the accuracy checks and agree with the same matrix computed
/// alone (every thread inside it), in both types.
#[test]
fn fewer_large_matrices_than_threads_run_side_by_side() {
    fn each<T: batchlin::Real>() {
        let mut g = rng(31);
        let (b, n) = (3, 200);
        let mats: Vec<M> = (0..b).map(|_| gaussian(&mut g, n, n)).collect();
        let syms: Vec<M> = (0..b).map(|_| sym_gaussian(&mut g, n)).collect();
        let (inp, sinp) = (
            Input::<T>::contiguous(&mats, &[b], n, n),
            Input::<T>::contiguous(&syms, &[b], n, n),
        );
        let f = Backend::CpuFaer;
        let t = tol::<T>();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(6)
            .build()
            .unwrap();
        let (qr, eig, svd) = pool.install(|| {
            (
                run_qr(&inp.view(), QrMode::Reduced, f),
                run_eigh(&sinp.view(), Uplo::Lower, true, f),
                run_svd(&inp.view(), false, true, f),
            )
        });
        for i in 0..b {
            let ctx = format!("{} matrix {i} of {b} side by side", dtype_name::<T>());
            let q = qr.q.as_ref().map(|q| &q[i]);
            check_qr(&mats[i], q, &qr.r[i], false, t, &ctx);
            let v = eig.v.as_ref().map(|v| &v[i]);
            check_eigh(&syms[i], &eig.w[i].d, v, t, &ctx);
            let (u, vh) = (
                svd.u.as_ref().map(|u| &u[i]),
                svd.vh.as_ref().map(|v| &v[i]),
            );
            check_svd(&mats[i], u, &svd.s[i].d, vh, false, t, &ctx);
            // The same matrix alone: every thread of the pool inside it.
            let one = Input::<T>::contiguous(std::slice::from_ref(&mats[i]), &[1], n, n);
            let sone = Input::<T>::contiguous(std::slice::from_ref(&syms[i]), &[1], n, n);
            let (w1, s1) = pool.install(|| {
                (
                    run_eigh(&sone.view(), Uplo::Lower, false, f).w.remove(0),
                    run_svd(&one.view(), false, false, f).s.remove(0),
                )
            });
            let near = |x: &[f64], y: &[f64], what: &str| {
                let scale = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let d = x
                    .iter()
                    .zip(y)
                    .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                assert_le(d / scale, t.eig, what, &ctx);
            };
            near(&eig.w[i].d, &w1.d, "eigenvalues against the matrix alone");
            near(
                &svd.s[i].d,
                &s1.d,
                "singular values against the matrix alone",
            );
        }
        infos_clean(&qr.info, "qr side by side");
        infos_clean(&eig.info, "eigh side by side");
        infos_clean(&svd.info, "svd side by side");
    }
    each::<f64>();
    each::<f32>();
}

// ---------------------------------------------------------------------------------------
// fork()

#[test]
fn a_forked_child_computes() {
    let (ok, out) = run_child("child_fork");
    assert!(ok, "{out}");
}

fn batch_svdvals(seed: u64) -> (Input<f64>, Vec<u64>) {
    let mut g = rng(seed);
    let mats: Vec<M> = (0..64).map(|_| gaussian(&mut g, 8, 8)).collect();
    let inp = Input::<f64>::contiguous(&mats, &[64], 8, 8);
    let s = batchlin::svdvals(&inp.view()).unwrap();
    (inp, s.data.iter().map(|x| x.to_bits()).collect())
}

fn r_bits(r: &QrRes) -> Vec<u64> {
    r.r.iter()
        .flat_map(|m| m.d.iter().map(|x| x.to_bits()))
        .collect()
}

#[test]
#[ignore = "run in a child process by a_forked_child_computes"]
fn child_fork() {
    if !in_child() {
        return;
    }
    // The parent's multi-matrix call starts the worker threads; then fork.
    let (_, want) = batch_svdvals(11);
    let (_, want_qr) = {
        let mut g = rng(12);
        let mats: Vec<M> = (0..200).map(|_| gaussian(&mut g, 30, 20)).collect();
        let inp = Input::<f64>::contiguous(&mats, &[200], 30, 20);
        let r = run_qr(&inp.view(), QrMode::Reduced, Backend::CpuFaer);
        (inp, r_bits(&r))
    };
    for round in 0..2 {
        // SAFETY: the child only computes and exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // A hang is the failure this guards against: die rather than wait for ever.
            unsafe { libc::alarm(60) };
            let (_, got) = batch_svdvals(11);
            let mut g = rng(12);
            let mats: Vec<M> = (0..200).map(|_| gaussian(&mut g, 30, 20)).collect();
            let inp = Input::<f64>::contiguous(&mats, &[200], 30, 20);
            let r = run_qr(&inp.view(), QrMode::Reduced, Backend::CpuFaer);
            let got_qr = r_bits(&r);
            // Threads of the child's own pool, not one: the pool was rebuilt.
            let threads = batchlin::device::devices()[0].detail.clone();
            let same = got == want && got_qr == want_qr;
            eprintln!("round {round}: child computed, same bits {same}, {threads}");
            unsafe { libc::_exit(if same { 0 } else { 3 }) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "round {round}: the forked child failed or hung (wait status {status:#x})"
        );
        // The parent's pool still works after its child came and went.
        assert_eq!(batch_svdvals(11).1, want);
    }
}

// ---------------------------------------------------------------------------------------
// Overflow of float32 results

#[test]
fn float32_results_beyond_the_range_are_flagged() {
    // Every entry 3e38: R's first row, the largest eigenvalue and singular value are
    // n * 3e38 = +Inf in float32; the input itself is finite.
    let n = 4;
    let d = vec![3e38f32; n * n];
    let a = BatchRef::contiguous(&d, &[1, n, n]).unwrap();
    // Every backend with every operation: the CUDA kernels too, where a GPU is (every
    // CUDA QR kernel forced: cuda::tests::qr_overflow_is_flagged_on_every_kernel).
    for b in backends_for_every_op() {
        let o = Options::with_backend(b);
        let (qr, info) = batchlin::qr_ex(&a, QrMode::Reduced, &o).unwrap();
        assert!(info[0].overflow() && !info[0].is_ok(), "{b} qr {info:?}");
        assert!(qr.r.data[0].is_infinite(), "{b}: R[0,0] = {}", qr.r.data[0]);
        let (e, info) = batchlin::eigh_ex(&a, Uplo::Lower, false, &o).unwrap();
        assert!(info[0].overflow(), "{b} eigh {info:?}");
        assert!(e.w.data[n - 1].is_infinite());
        let (s, info) = batchlin::svd_ex(&a, false, false, &o).unwrap();
        assert!(info[0].overflow(), "{b} svd {info:?}");
        assert!(s.s.data[0].is_infinite());
    }
    // Just inside the range (1e37 * 4 = 4e37 < 3.4e38): right, and no flag.
    let d = vec![1e37f32; n * n];
    let a = BatchRef::contiguous(&d, &[1, n, n]).unwrap();
    let (s, info) = batchlin::svd_ex(&a, false, false, &Options::default()).unwrap();
    assert!(!info[0].overflow(), "{info:?}");
    assert!((s.s.data[0] / 4e37 - 1.0).abs() < 1e-5, "{}", s.s.data[0]);
    // float64 never overflows from float32-sized input; a float64 input near its own
    // limit does and is flagged too.
    let d = vec![1e308f64; n * n];
    let a = BatchRef::contiguous(&d, &[1, n, n]).unwrap();
    let (_, info) = batchlin::svd_ex(&a, false, false, &Options::default()).unwrap();
    assert!(info[0].overflow(), "{info:?}");
    assert_eq!(info[0].0 & Info::NONFINITE, 0);
}

// ---------------------------------------------------------------------------------------
// Argument checks

/// Whether each m x m matrix of a row-major batch is orthogonal (Q'Q = I within 1e-12).
fn orthogonal(data: &[f64], m: usize) -> bool {
    if m == 0 {
        return data.is_empty();
    }
    data.chunks(m * m).all(|q| {
        (0..m).all(|i| {
            (0..m).all(|j| {
                let dot: f64 = (0..m).map(|r| q[r * m + i] * q[r * m + j]).sum();
                (dot - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12
            })
        })
    })
}

/// Empty matrices name no memory, so their strides may be anything: 7 x 0 matrices with a
/// row stride of isize::MAX (alone, and three a batch stride of isize::MAX apart), 0 x 5
/// ones with a column stride of isize::MIN, through the safe constructor. `to_contiguous`
/// and every CPU backend give their results (empty, or an orthogonal Q and U of 7 x 7). It computed
/// element offsets from those strides before, beyond the buffer: undefined behaviour,
/// which the standard library's checks stop in builds with debug assertions (the test
/// profile's). Found by the `front_door` fuzz target.
#[test]
fn empty_matrices_with_huge_strides() {
    let d = [1.0f64; 4];
    let cases: [(&[usize], &[isize]); 3] = [
        (&[7, 0], &[isize::MAX, 1]),
        (&[3, 7, 0], &[isize::MAX, isize::MAX, 1]),
        (&[2, 0, 5], &[isize::MAX, 1, isize::MIN]),
    ];
    for (shape, strides) in cases {
        let a = BatchRef::new(&d, shape, strides).unwrap();
        assert!(a.to_contiguous().unwrap().is_empty());
        let batch = a.layout().batch();
        let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        for b in [Backend::CpuSmall, Backend::CpuFaer, Backend::Auto] {
            let o = Options::with_backend(b);
            let ctx = format!("{b} {shape:?} strides {strides:?}");
            let (qr, info) = batchlin::qr_ex(&a, QrMode::Complete, &o).unwrap();
            assert!(info.iter().all(|i| i.is_ok()), "{ctx}: qr {info:?}");
            let q = qr.q.expect("complete mode gives Q");
            assert_eq!(q.data.len(), batch * m * m, "{ctx}");
            assert!(orthogonal(&q.data, m), "{ctx}: Q {:?}", q.data);
            assert_eq!(qr.r.data.len(), batch * m * n, "{ctx}");
            assert!(
                qr.r.data.iter().all(|x| *x == 0.0),
                "{ctx}: R {:?}",
                qr.r.data
            );
            let (s, info) = batchlin::svd_ex(&a, true, true, &o).unwrap();
            assert!(info.iter().all(|i| i.is_ok()), "{ctx}: svd {info:?}");
            assert!(s.s.data.is_empty(), "{ctx}: {:?}", s.s.data);
            assert!(orthogonal(&s.u.unwrap().data, m), "{ctx}: U");
            assert!(orthogonal(&s.vh.unwrap().data, n), "{ctx}: Vh");
        }
    }
    // eigh's matrices are square: empty only as 0 x 0.
    let a = BatchRef::new(&d, &[3, 0, 0], &[isize::MAX, isize::MIN, isize::MAX]).unwrap();
    for b in [Backend::CpuSmall, Backend::CpuFaer, Backend::Auto] {
        let (e, info) =
            batchlin::eigh_ex(&a, Uplo::Lower, true, &Options::with_backend(b)).unwrap();
        assert!(
            info.iter().all(|i| i.is_ok()) && e.w.data.is_empty(),
            "{b}: {info:?}"
        );
    }
}

/// Subnormal entries beside a largest entry already in [0.5, 1), so that the power-of-two
/// scaling has nothing to do: [[t, t], [t, 0.5]] with t = 1e-40 (f32) or 1e-310 (f64).
/// eigh gave NaN eigenvalues with a clean info word (found by the `front_door` fuzz
/// target): only entries the scaling itself made subnormal were flushed to zero. The
/// eigenvalues are t - 2t^2 (t, or 0: below any rounding of 0.5) and 0.5 + 2t^2.
/// The CPU kernels deflate the off-diagonal and return both to the last bit; the CUDA
/// kernel's eigenvalues-alone path bisects to LAPACK xSTEBZ's default tolerance, eps
/// times the spectrum's extent, and is held to that (4 eps |A| here).
fn subnormal_entries_case<T: batchlin::Real>(t: f64) {
    let d: Vec<T> = [t, t, t, 0.5].iter().map(|&x| T::from_f64(x)).collect();
    let a = BatchRef::contiguous(&d, &[1, 2, 2]).unwrap();
    // Every backend with eigh, QR and SVD kernels: the CUDA one too where a GPU is.
    for b in backends_for_every_op() {
        let o = Options::with_backend(b);
        let ctx = format!("{b} {:?}", T::DTYPE);
        for vectors in [true, false] {
            let ctx = format!("{ctx} vectors {vectors}");
            let (e, info) = batchlin::eigh_ex(&a, Uplo::Lower, vectors, &o).unwrap();
            let w: Vec<f64> = e.w.data.iter().map(|x| x.to_f64()).collect();
            assert!(info[0].is_ok(), "{ctx} eigh: info {:?}", info[0]);
            let used = match b {
                Backend::Auto => batchlin::backend_for(Op::Eigh, T::DTYPE, 1, 2, 2).unwrap(),
                b => b,
            };
            let (lo_tol, hi_tol) = if used == Backend::Cuda && !vectors {
                let bisect = 4.0 * T::EPSILON.to_f64() * 0.5;
                (bisect, bisect)
            } else {
                (2.0 * t, 1e-15)
            };
            assert!(
                w[0].abs() <= lo_tol && (w[1] - 0.5).abs() <= hi_tol,
                "{ctx} eigh: {w:?}"
            );
            let (s, info) = batchlin::svd_ex(&a, false, vectors, &o).unwrap();
            let s: Vec<f64> = s.s.data.iter().map(|x| x.to_f64()).collect();
            assert!(
                info[0].0 & Info::NONFINITE == 0,
                "{ctx} svd: info {:?}",
                info[0]
            );
            assert!(
                (s[0] - 0.5).abs() <= 1e-15 && s[1] <= 2.0 * t,
                "{ctx} svd: {s:?}"
            );
        }
        let (qr, info) = batchlin::qr_ex(&a, QrMode::Reduced, &o).unwrap();
        assert!(
            info[0].0 & Info::NONFINITE == 0,
            "{ctx} qr: info {:?}",
            info[0]
        );
        assert!(
            qr.r.data.iter().all(|x| x.is_finite()),
            "{ctx} qr: R not finite"
        );
    }
}

#[test]
fn subnormal_entries_without_scaling_stay_finite() {
    subnormal_entries_case::<f32>(1e-40);
    subnormal_entries_case::<f64>(1e-310);
}

#[test]
fn backend_for_checks_the_size_product() {
    let r = batchlin::backend_for(Op::Qr, DType::F32, 1 << 40, 1 << 20, 1 << 20);
    assert!(matches!(r, Err(batchlin::Error::Overflow(_))), "{r:?}");
    assert!(batchlin::backend_for(Op::Qr, DType::F32, 1 << 20, 8, 8).is_ok());
}

#[test]
fn backend_names_ignore_case_and_surrounding_space() {
    for (s, b) in [
        (" CPU-FAER ", Backend::CpuFaer),
        ("\tcpu-small\n", Backend::CpuSmall),
        ("Auto", Backend::Auto),
    ] {
        assert_eq!(s.parse::<Backend>().unwrap(), b, "{s:?}");
    }
    assert!("cpu faer".parse::<Backend>().is_err());
}
