//! eigh / eigvalsh: every backend forced and through the front door, sizes around every
//! boundary, both triangles (the other one never read), batches, strided inputs and
//! outputs, structured spectra, extreme magnitudes, non-finite input, the sign convention,
//! and accuracy against an independent float64 reference.

mod common;
use batchlin::{eigh_into, Backend, BatchRef, Info, Op, Options, Real, Uplo, Variant};
use common::*;
use rand::Rng;

const UPLOS: [Uplo; 2] = [Uplo::Lower, Uplo::Upper];

/// Overwrite the triangle `uplo` does not name (strictly) with `v`.
fn poison_other_triangle<T: Real>(inp: &mut Input<T>, uplo: Uplo, v: impl Fn(usize, usize) -> T) {
    let count: usize = inp.batch_shape().iter().product();
    let n = inp.shape[inp.shape.len() - 1];
    for b in 0..count {
        for i in 0..n {
            for j in 0..n {
                let other = match uplo {
                    Uplo::Lower => j > i,
                    Uplo::Upper => i > j,
                };
                if other {
                    inp.set(b, i, j, v(i, j));
                }
            }
        }
    }
}

/// Every size, backend and triangle on random symmetric batches; eigvalsh-style calls
/// give the same eigenvalues.
fn sizes_all_backends<T: Real>(seed: u64) {
    let t = tol::<T>();
    let mut g = rng(seed);
    for n in SQUARE {
        let mats = vec![sym_gaussian(&mut g, n), sym_gaussian(&mut g, n)];
        for uplo in UPLOS {
            let mut inp = Input::<T>::contiguous(&mats, &[2], n, n);
            // The other triangle holds garbage: it must not be read.
            poison_other_triangle(&mut inp, uplo, |i, j| T::from_f64(1e3 + (i * 7 + j) as f64));
            for b in backends(Op::Eigh) {
                let ctx = format!("{} eigh {uplo:?} n={n} {}", dtype_name::<T>(), b.name());
                let full = run_eigh(&inp.view(), uplo, true, b);
                let vals = run_eigh(&inp.view(), uplo, false, b);
                infos_clean(&full.info, &ctx);
                infos_clean(&vals.info, &ctx);
                assert_eq!(full.w.len(), 2);
                for i in 0..2 {
                    let c = format!("{ctx} #{i}");
                    check_eigh(
                        &inp.mats[i],
                        &full.w[i].d,
                        Some(&full.v.as_ref().unwrap()[i]),
                        t,
                        &c,
                    );
                    check_eigh(
                        &inp.mats[i],
                        &vals.w[i].d,
                        None,
                        t,
                        &format!("{c} (values only)"),
                    );
                    // eigvalsh == eigh's w, to tolerance.
                    let d = full.w[i].sub(&vals.w[i]).max_abs();
                    assert_le(d, t.eig * inp.mats[i].frob(), "|w_eigh - w_eigvalsh|", &c);
                }
            }
        }
    }
}

#[test]
fn eigh_sizes_all_backends_f32() {
    sizes_all_backends::<f32>(101);
}

#[test]
fn eigh_sizes_all_backends_f64() {
    sizes_all_backends::<f64>(102);
}

/// The front door gives exactly what the routed backend gives, and eigh / eigvalsh (the
/// plain wrappers) are that front door.
fn auto_matches_routed<T: Real>(seed: u64) {
    let mut g = rng(seed);
    for n in SQUARE {
        let mats = vec![
            sym_gaussian(&mut g, n),
            sym_gaussian(&mut g, n),
            sym_gaussian(&mut g, n),
        ];
        let inp = Input::<T>::contiguous(&mats, &[3], n, n);
        let chosen = routed_variant::<T>(Variant::Eigh, 3, n, n);
        let chosen_vals = routed_variant::<T>(Variant::Eigvalsh, 3, n, n);
        for uplo in UPLOS {
            let ctx = format!("eigh {uplo:?} n={n}: auto vs {chosen}");
            let auto = run_eigh(&inp.view(), uplo, true, Backend::Auto);
            let forced = run_eigh(&inp.view(), uplo, true, chosen);
            assert_same_bits(&auto.w, &forced.w, &ctx);
            assert_same_bits(auto.v.as_ref().unwrap(), forced.v.as_ref().unwrap(), &ctx);
            let plain = batchlin::eigh(&inp.view(), uplo).unwrap();
            assert_same_bits(&tensor_vecs(&plain.w), &auto.w, &ctx);
            assert_same_bits(
                &tensor_mats(plain.v.as_ref().unwrap()),
                auto.v.as_ref().unwrap(),
                &ctx,
            );
            let vals_auto = run_eigh(&inp.view(), uplo, false, Backend::Auto);
            let vals_forced = run_eigh(&inp.view(), uplo, false, chosen_vals);
            let plain_vals = batchlin::eigvalsh(&inp.view(), uplo).unwrap();
            assert_eq!(plain_vals.shape, vec![3, n]);
            assert_same_bits(&tensor_vecs(&plain_vals), &vals_auto.w, &ctx);
            assert_same_bits(&vals_forced.w, &vals_auto.w, &ctx);
        }
    }
}

#[test]
fn eigh_auto_matches_routed_backend() {
    auto_matches_routed::<f32>(103);
    auto_matches_routed::<f64>(104);
}

/// Only the named triangle is read: NaN (or Inf, or garbage) in the other triangle gives
/// exactly the results of the clean symmetric matrix, with no NONFINITE flag.
fn other_triangle_ignored<T: Real>(seed: u64) {
    let mut g = rng(seed);
    for n in [2, 5, 31, 32, 33, 64] {
        let mats: Vec<M> = (0..3).map(|_| sym_gaussian(&mut g, n)).collect();
        let clean = Input::<T>::contiguous(&mats, &[3], n, n);
        for uplo in UPLOS {
            for (pname, poison) in [
                ("nan", T::NAN),
                ("inf", T::from_f64(f64::INFINITY)),
                ("garbage", T::from_f64(-3.5e4)),
            ] {
                let mut inp = Input::<T>::contiguous(&mats, &[3], n, n);
                poison_other_triangle(&mut inp, uplo, |_, _| poison);
                for b in backends(Op::Eigh) {
                    for vectors in [true, false] {
                        let ctx = format!(
                            "eigh {uplo:?} other triangle {pname} n={n} {} vectors={vectors}",
                            b.name()
                        );
                        let got = run_eigh(&inp.view(), uplo, vectors, b);
                        let want = run_eigh(&clean.view(), uplo, vectors, b);
                        infos_clean(&got.info, &ctx);
                        assert_same_bits(&got.w, &want.w, &ctx);
                        if vectors {
                            assert_same_bits(
                                got.v.as_ref().unwrap(),
                                want.v.as_ref().unwrap(),
                                &ctx,
                            );
                        }
                    }
                }
            }
        }
        // And L and U of the same symmetric matrix agree to tolerance.
        for b in backends(Op::Eigh) {
            let lo = run_eigh(&clean.view(), Uplo::Lower, false, b);
            let up = run_eigh(&clean.view(), Uplo::Upper, false, b);
            for i in 0..3 {
                assert_le(
                    lo.w[i].sub(&up.w[i]).max_abs(),
                    tol::<T>().eig * mats[i].frob(),
                    "|w_L - w_U|",
                    "eigh L vs U",
                );
            }
        }
    }
}

#[test]
fn eigh_other_triangle_ignored() {
    other_triangle_ignored::<f32>(105);
    other_triangle_ignored::<f64>(106);
}

/// The named triangle is the one read: a non-symmetric input gives the eigenvalues of the
/// symmetric matrix built from its lower (or upper) triangle.
#[test]
fn eigh_reads_named_triangle_of_nonsymmetric_input() {
    let t = tol::<f64>();
    let mut g = rng(107);
    for n in [3, 20, 40] {
        let a = gaussian(&mut g, n, n);
        let lower = M::from_fn(n, n, |i, j| if i >= j { a.at(i, j) } else { a.at(j, i) });
        let upper = M::from_fn(n, n, |i, j| if i <= j { a.at(i, j) } else { a.at(j, i) });
        let inp = Input::<f64>::contiguous(std::slice::from_ref(&a), &[], n, n);
        for b in backends(Op::Eigh) {
            let l = run_eigh(&inp.view(), Uplo::Lower, true, b);
            let u = run_eigh(&inp.view(), Uplo::Upper, true, b);
            check_eigh(
                &lower,
                &l.w[0].d,
                Some(&l.v.as_ref().unwrap()[0]),
                t,
                &format!("eigh L nonsym n={n} {}", b.name()),
            );
            check_eigh(
                &upper,
                &u.w[0].d,
                Some(&u.v.as_ref().unwrap()[0]),
                t,
                &format!("eigh U nonsym n={n} {}", b.name()),
            );
        }
    }
}

/// Batch shapes [], [1], [3], [2,3], [0], [2,0,3]: shapes, and each matrix's result is
/// the one it gets alone.
fn batch_shapes<T: Real>(seed: u64) {
    let mut g = rng(seed);
    let batches: [&[usize]; 6] = [&[], &[1], &[3], &[2, 3], &[0], &[2, 0, 3]];
    for n in [4, 33, 0] {
        for batch in batches {
            let count: usize = batch.iter().product();
            let mats: Vec<M> = (0..count).map(|_| sym_gaussian(&mut g, n)).collect();
            let inp = Input::<T>::contiguous(&mats, batch, n, n);
            for b in backends(Op::Eigh) {
                let ctx = format!("eigh batch {batch:?} n={n} {}", b.name());
                let opts = one_kernel::<T>(b, Variant::Eigh, count, n, n);
                let (res, info) = batchlin::eigh_ex(&inp.view(), Uplo::Lower, true, &opts).unwrap();
                assert_eq!(res.w.shape, full_shape(batch, &[n]), "{ctx}");
                assert_eq!(
                    res.v.as_ref().unwrap().shape,
                    full_shape(batch, &[n, n]),
                    "{ctx}"
                );
                assert_eq!(info.len(), count, "{ctx}");
                let ws = tensor_vecs(&res.w);
                let vs = tensor_mats(res.v.as_ref().unwrap());
                let routed = concrete(b, || routed_variant::<T>(Variant::Eigh, count, n, n));
                let single = one_kernel::<T>(routed, Variant::Eigh, count, n, n);
                for i in 0..count {
                    let alone = Input::<T>::contiguous(&mats[i..i + 1], &[], n, n);
                    let one = try_eigh(&alone.view(), Uplo::Lower, true, &single).unwrap();
                    assert_same_bits(&one.w, &ws[i..i + 1], &ctx);
                    assert_same_bits(one.v.as_ref().unwrap(), &vs[i..i + 1], &ctx);
                }
            }
        }
    }
}

#[test]
fn eigh_batch_shapes() {
    batch_shapes::<f32>(108);
    batch_shapes::<f64>(109);
}

/// Inputs of any strides give exactly the row-major input's results.
fn strided_inputs<T: Real>(seed: u64) {
    let t = tol::<T>();
    let mut g = rng(seed);
    let batches: [&[usize]; 3] = [&[], &[3], &[2, 3]];
    for batch in batches {
        let nd = batch.len() + 2;
        for n in [1, 5, 34] {
            let count: usize = batch.iter().product();
            let mats: Vec<M> = (0..count).map(|_| sym_gaussian(&mut g, n)).collect();
            let base = Input::<T>::contiguous(&mats, batch, n, n);
            let mut lays = Lay::all(nd);
            lays.push(Lay::random(&mut g, nd));
            for b in [Backend::CpuSmall, Backend::CpuFaer] {
                for uplo in UPLOS {
                    let want = run_eigh(&base.view(), uplo, true, b);
                    for lay in &lays {
                        let inp = Input::<T>::new(&mats, batch, n, n, lay);
                        let ctx = format!(
                            "eigh {uplo:?} input {} {:?} n={n} {}",
                            lay.name,
                            inp.strides,
                            b.name()
                        );
                        let got = run_eigh(&inp.view(), uplo, true, b);
                        infos_clean(&got.info, &ctx);
                        assert_same_bits(&got.w, &want.w, &ctx);
                        assert_same_bits(got.v.as_ref().unwrap(), want.v.as_ref().unwrap(), &ctx);
                        for i in 0..count {
                            check_eigh(
                                &inp.mats[i],
                                &got.w[i].d,
                                Some(&got.v.as_ref().unwrap()[i]),
                                t,
                                &ctx,
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn eigh_strided_inputs() {
    strided_inputs::<f32>(110);
    strided_inputs::<f64>(111);
}

/// eigh_into with w and V of any strides: exactly eigh_ex's values with the same options,
/// nothing written outside the views, everything inside.
fn into_strided_outputs<T: Real>(seed: u64) {
    let mut g = rng(seed);
    // Every backend by the planner, and where a GPU is present every CUDA kernel forced
    // (each writes the strided outputs itself: `cusolver`'s unpack along either axis),
    // those from n = 1 (the planner's runs take the empty matrices).
    let mut runs: Vec<(String, Options, usize)> = backends(Op::Eigh)
        .into_iter()
        .map(|b| (b.name().to_string(), Options::with_backend(b), 0))
        .collect();
    if backends(Op::Eigh).contains(&Backend::Cuda) {
        for k in batchlin::registry::kernels(Op::Eigh, Backend::Cuda) {
            runs.push((
                format!("cuda kernel {}", k.name),
                Options::with_kernel(Backend::Cuda, k.name),
                1,
            ));
        }
    }
    let batches: [&[usize]; 3] = [&[], &[3], &[2, 2]];
    for batch in batches {
        let nd = batch.len() + 2;
        for n in [0, 1, 6, 35, 65] {
            let count: usize = batch.iter().product();
            let mats: Vec<M> = (0..count).map(|_| sym_gaussian(&mut g, n)).collect();
            let inp = Input::<T>::new(&mats, batch, n, n, &Lay::random(&mut g, nd));
            let mut mlays = Lay::all(nd);
            mlays.push(Lay::random(&mut g, nd));
            let mut vlays = Lay::all(nd - 1);
            vlays.push(Lay::random(&mut g, nd - 1));
            for (name, opts, _) in runs.iter().filter(|r| n >= r.2) {
                for vectors in [true, false] {
                    let want = match try_eigh(&inp.view(), Uplo::Upper, vectors, opts) {
                        Ok(want) => want,
                        Err(e) => {
                            // A forced kernel that does not take n says so.
                            assert_eq!(e.kind(), "argument", "eigh_ex n={n} {name}: {e}");
                            continue;
                        }
                    };
                    for (li, lay) in mlays.iter().enumerate() {
                        let wlay = &vlays[li % vlays.len()];
                        let ctx = format!(
                            "eigh_into {batch:?} n={n} {name} V:{} w:{} vectors={vectors}",
                            lay.name, wlay.name
                        );
                        let mut w = Out::<T>::vecs(batch, n, wlay);
                        let mut v = Out::<T>::mats(batch, n, n, lay);
                        let mut info = vec![Info(0xbeef); count];
                        {
                            let mut wv = w.view();
                            let mut vv = v.view();
                            let varg = if vectors { Some(&mut vv) } else { None };
                            eigh_into(
                                &inp.view(),
                                Uplo::Upper,
                                &mut wv,
                                varg,
                                Some(&mut info),
                                opts,
                            )
                            .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        }
                        w.check_written(&format!("{ctx} w"));
                        assert_same_bits(&w.read(), &want.w, &ctx);
                        if vectors {
                            v.check_written(&format!("{ctx} V"));
                            assert_same_bits(&v.read(), want.v.as_ref().unwrap(), &ctx);
                        } else {
                            assert!(
                                v.buf.iter().all(|x| x.to_f64() == SENTINEL),
                                "{ctx}: V touched"
                            );
                        }
                        assert_eq!(info, want.info, "{ctx}: info");
                    }
                }
            }
        }
    }
}

#[test]
fn eigh_into_strided_outputs() {
    into_strided_outputs::<f32>(112);
    into_strided_outputs::<f64>(113);
}

/// Structured input: zeros, identity, all ones, rank one, diagonal, repeated eigenvalues,
/// clustered eigenvalues, spectra graded over 1e-4 .. 1e4 (both signs).
fn structured<T: Real>(seed: u64, sizes: &[usize], backends: &[Backend]) {
    let runs: Vec<Options> = backends.iter().map(|&b| Options::with_backend(b)).collect();
    structured_runs::<T>(seed, sizes, &runs);
}

/// `structured` with each of `runs` (a backend, or a kernel forced: one that refuses a
/// size, an argument error, is left out there).
fn structured_runs<T: Real>(seed: u64, sizes: &[usize], runs: &[Options]) {
    let t = tol::<T>();
    let mut g = rng(seed);
    for &n in sizes {
        let u = gaussian(&mut g, n, 1);
        let mut rep = vec![1.0; n / 2];
        rep.extend(vec![-2.0; n - n / 2 - 1]);
        rep.push(5.0);
        let clustered: Vec<f64> = (0..n).map(|i| 1.0 + 1e-6 * i as f64).collect();
        let graded_pos = graded(n, 1e4, 1e-4);
        let graded_mixed: Vec<f64> = graded(n, 1e4, 1e-4)
            .iter()
            .enumerate()
            .map(|(i, x)| if i % 2 == 0 { *x } else { -*x })
            .collect();
        let diag: Vec<f64> = (0..n).map(|_| randn(&mut g)).collect();
        let cases: Vec<(&str, M)> = vec![
            ("zeros", M::zeros(n, n)),
            ("identity", M::eye(n, n)),
            ("ones", M::from_fn(n, n, |_, _| 1.0)),
            ("rank-one", u.mul(&u.t())),
            ("diagonal", M::diag(&diag)),
            ("repeated", sym_with_spectrum(&mut g, &rep)),
            ("clustered", sym_with_spectrum(&mut g, &clustered)),
            ("graded", sym_with_spectrum(&mut g, &graded_pos)),
            (
                "graded-mixed-sign",
                sym_with_spectrum(&mut g, &graded_mixed),
            ),
            (
                "tridiagonal-121",
                M::from_fn(n, n, |i, j| {
                    if i == j {
                        2.0
                    } else if i.abs_diff(j) == 1 {
                        -1.0
                    } else {
                        0.0
                    }
                }),
            ),
        ];
        let mats: Vec<M> = cases.iter().map(|c| c.1.clone()).collect();
        let inp = Input::<T>::contiguous(&mats, &[mats.len()], n, n);
        for opts in runs {
            let run = run_name(opts);
            for uplo in UPLOS {
                let res = match try_eigh(&inp.view(), uplo, true, opts) {
                    Ok(res) => res,
                    Err(e) if opts.kernel.is_some() && e.kind() == "argument" => continue,
                    Err(e) => panic!("eigh {uplo:?} n={n} {run}: {e}"),
                };
                for (i, (name, _)) in cases.iter().enumerate() {
                    let ctx = format!("{} eigh {name} {uplo:?} n={n} {run}", dtype_name::<T>());
                    assert!(res.info[i].is_ok(), "{ctx}: info {:#x}", res.info[i].0);
                    check_eigh(
                        &inp.mats[i],
                        &res.w[i].d,
                        Some(&res.v.as_ref().unwrap()[i]),
                        t,
                        &ctx,
                    );
                    let w = &res.w[i].d;
                    match *name {
                        "zeros" => assert!(w.iter().all(|&x| x == 0.0), "{ctx}: {w:?}"),
                        "identity" => assert!(
                            w.iter().all(|&x| (x - 1.0).abs() <= 4.0 * t.eps),
                            "{ctx}: {w:?}"
                        ),
                        "ones" => {
                            // LAPACK (numpy, float64) is 1.3-6 eps n off at 97-257;
                            // `block` with plain sums was 15 eps n off at float64 n = 200
                            // (docs/results/h100/2026-12-07-suites-cusolver-check).
                            assert_le(
                                (w[n - 1] - n as f64).abs(),
                                8.0 * t.eps * n as f64,
                                "top eigenvalue - n",
                                &ctx,
                            );
                            assert_le(
                                w[..n - 1].iter().fold(0.0f64, |m, x| m.max(x.abs())),
                                8.0 * t.eps * n as f64,
                                "other eigenvalues",
                                &ctx,
                            );
                            // The top eigenvector is 1/sqrt(n) everywhere, positive.
                            let v = &res.v.as_ref().unwrap()[i];
                            let e = (0..n).fold(0.0f64, |m, r| {
                                m.max((v.at(r, n - 1) - 1.0 / (n as f64).sqrt()).abs())
                            });
                            assert_le(e, 1e3 * t.eps, "top eigenvector - 1/sqrt(n)", &ctx);
                        }
                        "diagonal" => {
                            let mut d = inp.mats[i]
                                .d
                                .iter()
                                .step_by(n + 1)
                                .cloned()
                                .collect::<Vec<_>>();
                            d.sort_by(|a, b| a.partial_cmp(b).unwrap());
                            assert_le(
                                M { r: 1, c: n, d }.sub(&res.w[i]).max_abs(),
                                4.0 * t.eps * inp.mats[i].max_abs(),
                                "diagonal eigenvalues",
                                &ctx,
                            );
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

const STRUCTURED_SIZES: [usize; 8] = [2, 3, 16, 17, 32, 33, 64, 65];

#[test]
fn eigh_structured_f32() {
    structured::<f32>(114, &STRUCTURED_SIZES, &backends(Op::Eigh));
}

#[test]
fn eigh_structured_f64() {
    structured::<f64>(115, &STRUCTURED_SIZES, &backends(Op::Eigh));
}

/// The same at sizes where the faer path's divide and conquer merges more than once (its
/// leaves are 48 long): deflation of whole halves (zeros, diagonal), of runs of equal
/// diagonal entries (repeated, clustered) and of small z (graded), at several levels.
#[test]
fn eigh_structured_divide_and_conquer() {
    // Forced: the router sends some of these sizes to the small kernel. The CUDA
    // backend's large-matrix kernel (cuSOLVER where it loads) likewise, where present.
    let b: Vec<Backend> = backends(Op::Eigh)
        .into_iter()
        .filter(|b| matches!(b, Backend::CpuFaer | Backend::Cuda))
        .collect();
    structured::<f32>(116, &[97, 200, 257], &b);
    structured::<f64>(117, &[97, 200, 257], &b);
}

/// The same with every CUDA eigh kernel forced (where a GPU is present): through the
/// planner, float64 eigh of the 97x97 matrix of ones in this batch lost orthogonality on an
/// H100 (1.95e-3; docs/results/h100/2026-12-07-gpu-suites); forced, `cusolver`'s batched
/// solver did at n = 17 in float32 (3.6e-3), before its output was checked and such
/// matrices recomputed by `block`. Then matrices of ones and of rank one alone (cuSOLVER's
/// one-matrix solver, `syevd`, where `cusolver` is forced).
#[test]
fn eigh_structured_every_cuda_kernel() {
    let runs = forced_cuda_kernels(Op::Eigh);
    if runs.is_empty() {
        return;
    }
    structured_runs::<f32>(118, &[17, 33, 65, 97, 200, 257], &runs);
    structured_runs::<f64>(119, &[17, 33, 65, 97, 200, 257], &runs);
    degenerate_alone::<f32>(120, &[17, 97, 200], &runs);
    degenerate_alone::<f64>(121, &[17, 97, 200], &runs);
}

/// The matrix of ones and a rank-one matrix, each a batch of one, on each of `runs`.
fn degenerate_alone<T: Real>(seed: u64, sizes: &[usize], runs: &[Options]) {
    let t = tol::<T>();
    let mut g = rng(seed);
    for &n in sizes {
        let u = gaussian(&mut g, n, 1);
        for (name, a) in [
            ("ones", M::from_fn(n, n, |_, _| 1.0)),
            ("rank-one", u.mul(&u.t())),
        ] {
            let inp = Input::<T>::contiguous(std::slice::from_ref(&a), &[1], n, n);
            for opts in runs {
                let ctx = format!(
                    "{} eigh {name} alone n={n} {}",
                    dtype_name::<T>(),
                    run_name(opts)
                );
                let res = match try_eigh(&inp.view(), Uplo::Lower, true, opts) {
                    Ok(res) => res,
                    Err(e) if e.kind() == "argument" => continue,
                    Err(e) => panic!("{ctx}: {e}"),
                };
                assert!(res.info[0].is_ok(), "{ctx}: info {:#x}", res.info[0].0);
                check_eigh(
                    &inp.mats[0],
                    &res.w[0].d,
                    Some(&res.v.as_ref().unwrap()[0]),
                    t,
                    &ctx,
                );
            }
        }
    }
}

/// float32 input of magnitude 1e-30 and 1e+37: accurate relative to ||A||; power-of-two
/// multiples scale eigenvalues exactly and leave eigenvectors unchanged.
#[test]
fn eigh_extreme_magnitudes_f32() {
    let t = tol::<f32>();
    let mut g = rng(116);
    for n in [3, 16, 32, 33, 40] {
        let base = sym_gaussian(&mut g, n);
        let mx = base.max_abs();
        let mats = [base.clone(), base.scale(1e-30 / mx), base.scale(1e37 / mx)];
        let inp = Input::<f32>::contiguous(&mats, &[3], n, n);
        for b in backends(Op::Eigh) {
            for vectors in [true, false] {
                let res = run_eigh(&inp.view(), Uplo::Lower, vectors, b);
                infos_clean(&res.info, "eigh extreme");
                for i in 0..3 {
                    let ctx = format!(
                        "eigh f32 magnitude #{i} n={n} {} vectors={vectors}",
                        b.name()
                    );
                    check_eigh(
                        &inp.mats[i],
                        &res.w[i].d,
                        res.v.as_ref().map(|v| &v[i]),
                        t,
                        &ctx,
                    );
                    assert!(res.w[i].max_abs() > 0.0, "{ctx}: eigenvalues underflowed");
                }
            }
        }
        let b32 = base.round_to::<f32>();
        for e in [-100i32, 120] {
            let s = 2f64.powi(e);
            let inp = Input::<f32>::contiguous(&[b32.clone(), b32.scale(s)], &[2], n, n);
            for b in backends(Op::Eigh) {
                let res = run_eigh(&inp.view(), Uplo::Lower, true, b);
                let ctx = format!("eigh f32 2^{e} n={n} {}", b.name());
                let v = res.v.unwrap();
                assert_same_bits(&v[1..2], &v[0..1], &ctx);
                assert_same_bits(&[res.w[0].scale(s)], &res.w[1..2], &ctx);
            }
        }
    }
}

#[test]
fn eigh_extreme_magnitudes_f64() {
    let t = tol::<f64>();
    let mut g = rng(117);
    for n in [4, 33] {
        let base = sym_gaussian(&mut g, n);
        let mx = base.max_abs();
        let mats = [base.scale(1e-300 / mx), base.scale(1e300 / mx)];
        let inp = Input::<f64>::contiguous(&mats, &[2], n, n);
        for b in backends(Op::Eigh) {
            let res = run_eigh(&inp.view(), Uplo::Upper, true, b);
            for i in 0..2 {
                let s = if i == 0 { 1e300 } else { 1e-300 };
                check_eigh(
                    &inp.mats[i].scale(s),
                    &res.w[i].scale(s).d,
                    Some(&res.v.as_ref().unwrap()[i]),
                    t,
                    &format!("eigh f64 magnitude #{i} n={n} {}", b.name()),
                );
            }
        }
    }
}

/// NaN / Inf in the named triangle of some matrices: those get all-NaN w and V and
/// NONFINITE; the others are exactly the results of a batch without them.
fn nonfinite_in_batch<T: Real>(seed: u64) {
    let mut g = rng(seed);
    for n in [1, 4, 32, 33, 50] {
        let mats: Vec<M> = (0..5).map(|_| sym_gaussian(&mut g, n)).collect();
        let bad = [0usize, 2, 3];
        for uplo in UPLOS {
            let mut inp = Input::<T>::contiguous(&mats, &[5], n, n);
            let poison = [
                T::NAN,
                T::from_f64(f64::INFINITY),
                T::from_f64(f64::NEG_INFINITY),
            ];
            for (p, &b) in bad.iter().enumerate() {
                let (mut i, mut j) = (g.random_range(0..n), g.random_range(0..n));
                if (uplo == Uplo::Lower) != (i >= j) {
                    std::mem::swap(&mut i, &mut j);
                }
                inp.set(b, i, j, poison[p]);
            }
            let good: Vec<usize> = (0..5).filter(|i| !bad.contains(i)).collect();
            let good_mats: Vec<M> = good.iter().map(|&i| mats[i].clone()).collect();
            let clean = Input::<T>::contiguous(&good_mats, &[good.len()], n, n);
            for b in backends(Op::Eigh) {
                for vectors in [true, false] {
                    let ctx = format!(
                        "eigh {uplo:?} nonfinite n={n} {} vectors={vectors}",
                        b.name()
                    );
                    let variant = match vectors {
                        true => Variant::Eigh,
                        false => Variant::Eigvalsh,
                    };
                    let opts = one_kernel::<T>(b, variant, 5, n, n);
                    let res = try_eigh(&inp.view(), uplo, vectors, &opts).unwrap();
                    let routed = concrete(b, || routed_variant::<T>(variant, 5, n, n));
                    let single = one_kernel::<T>(routed, variant, 5, n, n);
                    let want = try_eigh(&clean.view(), uplo, vectors, &single).unwrap();
                    for &i in &bad {
                        assert!(res.info[i].nonfinite(), "{ctx}: matrix {i} not flagged");
                        assert!(res.w[i].all_nan(), "{ctx}: w of {i} not all NaN");
                        if let Some(v) = &res.v {
                            assert!(v[i].all_nan(), "{ctx}: V of {i} not all NaN");
                        }
                    }
                    for (gi, &i) in good.iter().enumerate() {
                        assert_eq!(res.info[i], want.info[gi], "{ctx}: info of {i}");
                        assert_same_bits(&res.w[i..i + 1], &want.w[gi..gi + 1], &ctx);
                        if let (Some(v), Some(wv)) = (&res.v, &want.v) {
                            assert_same_bits(&v[i..i + 1], &wv[gi..gi + 1], &ctx);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn eigh_nonfinite_in_batch() {
    nonfinite_in_batch::<f32>(118);
    nonfinite_in_batch::<f64>(119);
}

/// With well separated eigenvalues the eigenvectors are unique up to sign: both CPU
/// backends agree to tolerance once the sign convention is applied.
fn backends_agree<T: Real>(seed: u64) {
    let t = tol::<T>();
    let mut g = rng(seed);
    for n in [1, 2, 3, 16, 17, 31, 32, 33, 48, 64, 65] {
        // Eigenvalues 1..n, shifted to mixed sign: gaps of 1, ||A|| ~ n^1.5.
        let w: Vec<f64> = (0..n).map(|i| i as f64 - n as f64 / 3.0).collect();
        let a = sym_with_spectrum(&mut g, &w);
        let inp = Input::<T>::contiguous(&[a], &[], n, n);
        let sm = run_eigh(&inp.view(), Uplo::Lower, true, Backend::CpuSmall);
        let fa = run_eigh(&inp.view(), Uplo::Lower, true, Backend::CpuFaer);
        let ctx = format!("{} eigh backends agree n={n}", dtype_name::<T>());
        let na = inp.mats[0].frob();
        assert_le(
            sm.w[0].sub(&fa.w[0]).max_abs(),
            t.eig * na,
            "|w_small - w_faer|",
            &ctx,
        );
        // Eigenvector perturbation ~ eps ||A|| / gap, gap = 1.
        let bound = t.eig * na.max(1.0);
        assert_le(
            sm.v.as_ref().unwrap()[0]
                .sub(&fa.v.as_ref().unwrap()[0])
                .frob(),
            bound,
            "||V_small - V_faer||",
            &ctx,
        );
    }
}

#[test]
fn eigh_backends_agree() {
    backends_agree::<f32>(120);
    backends_agree::<f64>(121);
}

/// A 2x2 by hand: [[2, 1], [1, 2]] has eigenvalues 1, 3 and eigenvectors (1,-1)/sqrt2,
/// (1,1)/sqrt2 with the largest component positive (the first on a tie).
#[test]
fn eigh_two_by_two_by_hand() {
    let data = [2.0f64, 1.0, 1.0, 2.0];
    let a = BatchRef::contiguous(&data, &[2, 2]).unwrap();
    for b in backends(Op::Eigh) {
        let r = run_eigh(&a, Uplo::Lower, true, b);
        let h = std::f64::consts::FRAC_1_SQRT_2;
        assert_le(
            r.w[0]
                .sub(&M {
                    r: 1,
                    c: 2,
                    d: vec![1.0, 3.0],
                })
                .max_abs(),
            1e-15,
            "w",
            b.name(),
        );
        let v = &r.v.as_ref().unwrap()[0];
        // Column 0 is ±(1,-1)/sqrt2 (a tie up to rounding), column 1 is (1,1)/sqrt2.
        let vabs = M::from_fn(2, 2, |i, j| v.at(i, j).abs());
        assert_le(
            vabs.sub(&M::from_fn(2, 2, |_, _| h)).max_abs(),
            1e-15,
            "|V|",
            b.name(),
        );
        assert!(
            v.at(0, 0) * v.at(1, 0) < 0.0,
            "{}: column 0 not (1,-1)-like",
            b.name()
        );
        assert!(
            v.at(0, 1) > 0.0 && v.at(1, 1) > 0.0,
            "{}: column 1 not positive",
            b.name()
        );
        check_column_signs(v, b.name());
    }
}

/// A matrix spanning 5 to f64::MAX (found by the front-door fuzzer): scaled into [0.5, 1)
/// its small entries are subnormal, and the small kernel's arithmetic on them made a NaN
/// eigenvalue with a clean info word. Now no eigenvalue is NaN, and the dominant one
/// (about 1.6 f64::MAX) is infinite with the OVERFLOW flag.
#[test]
fn eigh_span_to_f64_max_stays_finite() {
    let x = [-5.0, -5.0, -5.0, -5.0, 0.0, -0.75, f64::MAX, -7.25];
    let n = x.len();
    let m = M::from_fn(n, n, |i, j| x[i.min(j)]);
    let inp = Input::<f64>::contiguous(&[m], &[1], n, n);
    for b in backends(Op::Eigh) {
        for vectors in [true, false] {
            let res = run_eigh(&inp.view(), Uplo::Upper, vectors, b);
            let ctx = format!("eigh to f64::MAX {} vectors={vectors}", b.name());
            let w = &res.w[0].d;
            assert!(!res.info[0].nonfinite(), "{ctx}: info {:#x}", res.info[0].0);
            assert!(w.iter().all(|w| !w.is_nan()), "{ctx}: eigenvalues {w:?}");
            // The dominant eigenvalue is about 1.6 f64::MAX: infinite, and flagged so.
            assert_eq!(
                w.iter().any(|w| w.is_infinite()),
                res.info[0].overflow(),
                "{ctx}: eigenvalues {w:?}, info {:#x}",
                res.info[0].0
            );
            assert!(w[n - 1] > 1e308, "{ctx}: eigenvalues {w:?}");
        }
    }
}

/// A batch through one forced kernel (`opts`): an argument error where the kernel does
/// not take the size, else matrix `nan_at` flagged with every output NaN and the others
/// clean and within the floor (`check_eigh`).
fn check_forced_batch<T: Real>(
    inp: &Input<T>,
    uplo: Uplo,
    vectors: bool,
    opts: &Options,
    nan_at: usize,
    t: Tol,
    ctx: &str,
) {
    let (res, info) = match batchlin::eigh_ex(&inp.view(), uplo, vectors, opts) {
        Ok(x) => x,
        Err(e) => {
            assert_eq!(e.kind(), "argument", "{ctx}: {e}");
            return;
        }
    };
    let w = tensor_vecs(&res.w);
    let v = res.v.as_ref().map(tensor_mats);
    for (i, a) in inp.mats.iter().enumerate() {
        let c = format!("{ctx} #{i}");
        if i == nan_at {
            assert!(info[i].nonfinite(), "{c}: not flagged");
            assert!(w[i].all_nan(), "{c}: w not all NaN");
            if let Some(v) = &v {
                assert!(v[i].all_nan(), "{c}: V not all NaN");
            }
            continue;
        }
        assert!(info[i].is_ok(), "{c}: info {:#x}", info[i].0);
        check_eigh(a, &w[i].d, v.as_ref().map(|v| &v[i]), t, &c);
    }
}

/// Every CUDA eigh kernel forced (where a GPU is present), at the sizes around the `warp`
/// kernel's padded sizes (8, 16, 32), the block kernel's small end and `cusolver`'s tiles
/// (32 and 64: kernels/cusolver.cu), both triangles with
/// junk in the other, every named input layout: Gaussian, graded (1e-4), clustered (1e-7
/// wide), rank one, zero and identity matrices with a NaN one in the batch, with vectors
/// and values alone, against float64's eigenvalues, the residual, orthogonality and the
/// sign convention; a kernel that does not take a size refuses it with an argument error.
fn every_cuda_kernel<T: Real>(seed: u64) {
    if !backends(Op::Eigh).contains(&Backend::Cuda) {
        return;
    }
    let t = tol::<T>();
    let mut g = rng(seed);
    let lays = Lay::all(3);
    for k in batchlin::registry::kernels(Op::Eigh, Backend::Cuda) {
        let opts = Options::with_kernel(Backend::Cuda, k.name);
        for (li, n) in [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 65]
            .into_iter()
            .enumerate()
        {
            let u = rank_one(&mut g, n, 1);
            let mut cluster: Vec<f64> = (0..n).map(|i| 1.0 + 1e-7 * i as f64).collect();
            for w in cluster.iter_mut().skip(n / 2) {
                *w = -*w; // two clusters of opposite sign
            }
            let mats = vec![
                sym_gaussian(&mut g, n),
                sym_with_spectrum(&mut g, &graded(n, 1.0, 1e-4)),
                sym_with_spectrum(&mut g, &cluster),
                u.mul(&u.t()),
                M::zeros(n, n),
                M::eye(n, n),
                sym_gaussian(&mut g, n),
            ];
            let nan_at = 6;
            for uplo in UPLOS {
                let mut inp = Input::<T>::new(&mats, &[mats.len()], n, n, &lays[li % lays.len()]);
                poison_other_triangle(&mut inp, uplo, |i, j| T::from_f64(7e3 - (i + 3 * j) as f64));
                let (i0, j0) = match uplo {
                    Uplo::Lower => (n - 1, 0),
                    Uplo::Upper => (0, n - 1),
                };
                inp.set(nan_at, i0, j0, T::NAN);
                for vectors in [true, false] {
                    let ctx = format!(
                        "{} eigh {uplo:?} n={n} vectors={vectors} kernel {} ({})",
                        dtype_name::<T>(),
                        k.name,
                        lays[li % lays.len()].name
                    );
                    check_forced_batch(&inp, uplo, vectors, &opts, nan_at, t, &ctx);
                }
            }
        }
    }
}

#[test]
fn eigh_every_cuda_kernel_f32() {
    every_cuda_kernel::<f32>(240);
}

#[test]
fn eigh_every_cuda_kernel_f64() {
    every_cuda_kernel::<f64>(241);
}

/// Every CUDA eigh kernel forced (where a GPU is present) on a batch past 65536 matrices,
/// one NaN matrix past the 65536th: cuSOLVER's batched call failed at 65536 matrices, so
/// `cusolver` splits the batch (`cusolver::MAX_BATCHED`); the rest must take any batch.
#[test]
fn eigh_every_cuda_kernel_past_65536_matrices() {
    if !backends(Op::Eigh).contains(&Backend::Cuda) {
        return;
    }
    let mut g = rng(242);
    let (n, count, nan_at) = (4, 70_001, 69_000);
    let mats: Vec<M> = (0..count).map(|_| sym_gaussian(&mut g, n)).collect();
    let mut inp = Input::<f32>::contiguous(&mats, &[count], n, n);
    inp.set(nan_at, n - 1, 0, f32::NAN);
    for k in batchlin::registry::kernels(Op::Eigh, Backend::Cuda) {
        let opts = Options::with_kernel(Backend::Cuda, k.name);
        let ctx = format!("float32 eigh {count}x{n}x{n} kernel {}", k.name);
        check_forced_batch(&inp, Uplo::Lower, true, &opts, nan_at, tol::<f32>(), &ctx);
    }
}

/// Every CUDA eigh kernel forced (where a GPU is present) from 12 to 256, where `block`
/// and `warp-bisect` take the vectors by their fast paths (twisted factorisations,
/// kernels/eigh.cu `bl_eigh_fast`, `bl_wql_fast`) or decline to tql2: Gaussian and graded matrices (the fast path), pairs
/// of eigenvalues 1e-3, 1e-5, 1e-7 apart or equal (`close_pairs`, and the same shifted to
/// mixed signs), rank one and the identity (declined), a NaN one in the batch; the work
/// matrix in shared memory and, from 168 (float32) or 118 (float64), in global memory.
fn every_cuda_kernel_close_pairs<T: Real>(seed: u64) {
    if !backends(Op::Eigh).contains(&Backend::Cuda) {
        return;
    }
    let t = tol::<T>();
    let mut g = rng(seed);
    for k in batchlin::registry::kernels(Op::Eigh, Backend::Cuda) {
        let opts = Options::with_kernel(Backend::Cuda, k.name);
        for n in [12, 24, 32, 48, 64, 100, 128, 200, 256] {
            let pairs = close_pairs(n);
            let mixed: Vec<f64> = pairs.iter().map(|w| w - 0.75).collect();
            let u = rank_one(&mut g, n, 1);
            let mats = vec![
                sym_gaussian(&mut g, n),
                sym_with_spectrum(&mut g, &graded(n, 1.0, 1e-4)),
                sym_with_spectrum(&mut g, &pairs),
                sym_with_spectrum(&mut g, &mixed),
                u.mul(&u.t()),
                M::eye(n, n),
                sym_gaussian(&mut g, n),
            ];
            let nan_at = 6;
            let mut inp = Input::<T>::contiguous(&mats, &[mats.len()], n, n);
            inp.set(nan_at, n - 1, 0, T::NAN);
            for vectors in [true, false] {
                let ctx = format!(
                    "{} eigh n={n} vectors={vectors} kernel {}",
                    dtype_name::<T>(),
                    k.name
                );
                check_forced_batch(&inp, Uplo::Lower, vectors, &opts, nan_at, t, &ctx);
            }
        }
    }
}

#[test]
fn eigh_every_cuda_kernel_close_pairs_f32() {
    every_cuda_kernel_close_pairs::<f32>(242);
}

#[test]
fn eigh_every_cuda_kernel_close_pairs_f64() {
    every_cuda_kernel_close_pairs::<f64>(243);
}
