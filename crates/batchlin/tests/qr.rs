//! QR: every backend forced and through the front door, shapes around every boundary,
//! batches, strided inputs and outputs, structured and extreme input, non-finite input,
//! the sign convention and the info words.

mod common;
use batchlin::{qr_into, Backend, BatchRef, Info, Op, Options, QrMode, Real, Variant};
use common::*;

const MODES: [QrMode; 3] = [QrMode::Reduced, QrMode::Complete, QrMode::R];

fn all_shapes() -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = SQUARE.iter().map(|&n| (n, n)).collect();
    v.extend_from_slice(&RECT);
    v
}

/// Every shape, every backend, every mode, on Gaussian batches of two; R alone equals the
/// reduced R; the complete Q extends the reduced one.
fn shapes_all_backends<T: Real>(seed: u64) {
    let t = tol::<T>();
    let mut g = rng(seed);
    for (m, n) in all_shapes() {
        let mats = vec![gaussian(&mut g, m, n), gaussian(&mut g, m, n)];
        let inp = Input::<T>::contiguous(&mats, &[2], m, n);
        for b in backends(Op::Qr) {
            let ctx =
                |mode: QrMode| format!("{} qr {mode:?} {m}x{n} {}", dtype_name::<T>(), b.name());
            let red = run_qr(&inp.view(), QrMode::Reduced, b);
            let com = run_qr(&inp.view(), QrMode::Complete, b);
            let ronly = run_qr(&inp.view(), QrMode::R, b);
            assert!(ronly.q.is_none());
            for (res, mode) in [
                (&red, QrMode::Reduced),
                (&com, QrMode::Complete),
                (&ronly, QrMode::R),
            ] {
                infos_clean(&res.info, &ctx(mode));
                assert_eq!(res.r.len(), 2);
                for i in 0..2 {
                    check_qr(
                        &inp.mats[i],
                        res.q.as_ref().map(|q| &q[i]),
                        &res.r[i],
                        mode == QrMode::Complete,
                        t,
                        &format!("{} #{i}", ctx(mode)),
                    );
                }
            }
            // mode "r" gives the same R as "reduced" (of the backend and, on the GPU, the
            // kernel mode r was routed to: a cost table routes each mode by its own rows).
            let br = concrete(b, || routed_qr::<T>(QrMode::R, 2, m, n));
            let red_r = if br == b && br != Backend::Cuda {
                red.r.clone()
            } else {
                let one = one_kernel::<T>(br, Variant::QrR, 2, m, n);
                run_qr_with(&inp.view(), QrMode::Reduced, &one).r
            };
            assert_same_bits(
                &ronly.r,
                &red_r,
                &format!(
                    "{}: R of mode r vs reduced on {}",
                    ctx(QrMode::R),
                    br.name()
                ),
            );
            // complete: R's first k rows are the reduced R, Q's first k columns the reduced Q.
            let k = m.min(n);
            for i in 0..2 {
                let rk = com.r[i].rows(0, k);
                assert_le(
                    rk.sub(&red.r[i]).frob(),
                    t.qr * norm_or_tiny(&inp.mats[i]),
                    "complete vs reduced R",
                    &ctx(QrMode::Complete),
                );
                let qk = com.q.as_ref().unwrap()[i].cols(0, k);
                assert_le(
                    qk.sub(&red.q.as_ref().unwrap()[i]).frob(),
                    t.qr * 10.0,
                    "complete vs reduced Q",
                    &ctx(QrMode::Complete),
                );
            }
        }
    }
}

#[test]
fn qr_shapes_all_backends_f32() {
    shapes_all_backends::<f32>(1);
}

#[test]
fn qr_shapes_all_backends_f64() {
    shapes_all_backends::<f64>(2);
}

/// The front door (Auto) gives exactly what the backend it routes to gives, in each mode.
fn auto_matches_routed<T: Real>(seed: u64) {
    let mut g = rng(seed);
    for (m, n) in all_shapes() {
        let mats = vec![gaussian(&mut g, m, n); 3];
        let inp = Input::<T>::contiguous(&mats, &[3], m, n);
        // backend_for names the main variant's (reduced) choice.
        assert_eq!(
            routed::<T>(Op::Qr, 3, m, n),
            routed_qr::<T>(QrMode::Reduced, 3, m, n)
        );
        for mode in MODES {
            let chosen = routed_qr::<T>(mode, 3, m, n);
            assert!(chosen.is_cpu(), "router picked {chosen} for host data");
            let auto = run_qr(&inp.view(), mode, Backend::Auto);
            let forced = run_qr(&inp.view(), mode, chosen);
            let ctx = format!("qr {mode:?} {m}x{n}: auto vs {chosen}");
            assert_same_bits(&auto.r, &forced.r, &ctx);
            if let (Some(a), Some(f)) = (&auto.q, &forced.q) {
                assert_same_bits(a, f, &ctx);
            }
            // And the allocating wrapper without options is the same front door.
            let plain = batchlin::qr(&inp.view(), mode).unwrap();
            assert_same_bits(&tensor_mats(&plain.r), &auto.r, &ctx);
        }
    }
}

#[test]
fn qr_auto_matches_routed_backend() {
    auto_matches_routed::<f32>(3);
    auto_matches_routed::<f64>(4);
}

/// Batch shapes [], [1], [3], [2,3], [0], [2,0,3]: output shapes, and each matrix's result
/// is the one it gets alone (from the backend the batch was routed to, for Auto).
fn batch_shapes<T: Real>(seed: u64) {
    let mut g = rng(seed);
    let batches: [&[usize]; 6] = [&[], &[1], &[3], &[2, 3], &[0], &[2, 0, 3]];
    for (m, n) in [(5, 4), (4, 5), (33, 20), (40, 40)] {
        for batch in batches {
            let count: usize = batch.iter().product();
            let mats: Vec<M> = (0..count).map(|_| gaussian(&mut g, m, n)).collect();
            let inp = Input::<T>::contiguous(&mats, batch, m, n);
            for b in backends(Op::Qr) {
                let ctx = format!("qr batch {batch:?} {m}x{n} {}", b.name());
                let (res, info) =
                    batchlin::qr_ex(&inp.view(), QrMode::Complete, &Options::with_backend(b))
                        .unwrap();
                assert_eq!(res.r.shape, full_shape(batch, &[m, n]), "{ctx}");
                assert_eq!(
                    res.q.as_ref().unwrap().shape,
                    full_shape(batch, &[m, m]),
                    "{ctx}"
                );
                assert_eq!(info.len(), count, "{ctx}");
                let (red, _) =
                    batchlin::qr_ex(&inp.view(), QrMode::Reduced, &Options::with_backend(b))
                        .unwrap();
                let k = m.min(n);
                assert_eq!(red.r.shape, full_shape(batch, &[k, n]), "{ctx}");
                assert_eq!(
                    red.q.as_ref().unwrap().shape,
                    full_shape(batch, &[m, k]),
                    "{ctx}"
                );
                let rs = tensor_mats(&red.r);
                let qs = tensor_mats(red.q.as_ref().unwrap());
                let routed = concrete(b, || routed_qr::<T>(QrMode::Reduced, count, m, n));
                for i in 0..count {
                    let alone = Input::<T>::contiguous(&mats[i..i + 1], &[], m, n);
                    let one = run_qr(&alone.view(), QrMode::Reduced, routed);
                    assert_same_bits(&one.r, &rs[i..i + 1], &format!("{ctx} #{i} R vs alone"));
                    assert_same_bits(
                        one.q.as_ref().unwrap(),
                        &qs[i..i + 1],
                        &format!("{ctx} #{i} Q vs alone"),
                    );
                }
            }
        }
    }
}

#[test]
fn qr_batch_shapes() {
    batch_shapes::<f32>(5);
    batch_shapes::<f64>(6);
}

/// Inputs of any strides (column-major, padded, scattered slices, batch innermost) give
/// exactly the row-major input's results; nothing outside the view is read (it is NaN).
fn strided_inputs<T: Real>(seed: u64) {
    let t = tol::<T>();
    let mut g = rng(seed);
    let batches: [&[usize]; 3] = [&[], &[3], &[2, 3]];
    for batch in batches {
        let nd = batch.len() + 2;
        for (m, n) in [(6, 4), (4, 6), (40, 35), (1, 1)] {
            let count: usize = batch.iter().product();
            let mats: Vec<M> = (0..count).map(|_| gaussian(&mut g, m, n)).collect();
            let base = Input::<T>::contiguous(&mats, batch, m, n);
            let mut lays = Lay::all(nd);
            lays.push(Lay::random(&mut g, nd));
            for b in [Backend::CpuSmall, Backend::CpuFaer] {
                let want = run_qr(&base.view(), QrMode::Reduced, b);
                for lay in &lays {
                    let inp = Input::<T>::new(&mats, batch, m, n, lay);
                    let ctx = format!(
                        "qr {} input {:?} {batch:?} {m}x{n} {}",
                        lay.name,
                        inp.strides,
                        b.name()
                    );
                    let got = run_qr(&inp.view(), QrMode::Reduced, b);
                    infos_clean(&got.info, &ctx);
                    assert_same_bits(&got.r, &want.r, &ctx);
                    assert_same_bits(got.q.as_ref().unwrap(), want.q.as_ref().unwrap(), &ctx);
                    for i in 0..count {
                        check_qr(
                            &inp.mats[i],
                            Some(&got.q.as_ref().unwrap()[i]),
                            &got.r[i],
                            false,
                            t,
                            &ctx,
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn qr_strided_inputs() {
    strided_inputs::<f32>(7);
    strided_inputs::<f64>(8);
}

/// A transposed view (strides swapped) is the QR of the transpose.
#[test]
fn qr_transposed_view() {
    let mut g = rng(9);
    let (m, n) = (7, 12);
    let a = gaussian(&mut g, m, n);
    let data: Vec<f32> = a.d.iter().map(|&x| x as f32).collect();
    // data is A (m x n) row-major; the view [n, m] with strides [1, n] is A^T.
    let at = BatchRef::new(&data, &[n, m], &[1, n as isize]).unwrap();
    let explicit = Input::<f32>::contiguous(&[a.t()], &[], n, m);
    for b in backends(Op::Qr) {
        let got = run_qr(&at, QrMode::Reduced, b);
        let want = run_qr(&explicit.view(), QrMode::Reduced, b);
        assert_same_bits(&got.r, &want.r, "transposed view R");
        assert_same_bits(
            got.q.as_ref().unwrap(),
            want.q.as_ref().unwrap(),
            "transposed view Q",
        );
        check_qr(
            &explicit.mats[0],
            Some(&got.q.unwrap()[0]),
            &got.r[0],
            false,
            tol::<f32>(),
            "transposed view",
        );
    }
}

/// A batch stride of 0 (one matrix broadcast over the batch) is fine for an input.
#[test]
fn qr_broadcast_input() {
    let mut g = rng(10);
    let a = gaussian(&mut g, 9, 5);
    let data: Vec<f64> = a.d.clone();
    let view = BatchRef::new(&data, &[4, 9, 5], &[0, 5, 1]).unwrap();
    for b in backends(Op::Qr) {
        let res = run_qr(&view, QrMode::Reduced, b);
        assert_eq!(res.r.len(), 4);
        for i in 1..4 {
            assert_same_bits(&res.r[i..i + 1], &res.r[..1], "broadcast R");
        }
        check_qr(
            &a,
            Some(&res.q.unwrap()[2]),
            &res.r[2],
            false,
            tol::<f64>(),
            "broadcast",
        );
    }
}

/// qr_into: outputs of any strides get exactly qr_ex's values; nothing outside the output
/// views is written, every element inside is.
fn into_strided_outputs<T: Real>(seed: u64) {
    let mut g = rng(seed);
    let batches: [&[usize]; 3] = [&[], &[3], &[2, 2]];
    for batch in batches {
        let nd = batch.len() + 2;
        for (m, n) in [(7, 5), (5, 7), (36, 34), (0, 3), (3, 0)] {
            let count: usize = batch.iter().product();
            let mats: Vec<M> = (0..count).map(|_| gaussian(&mut g, m, n)).collect();
            let in_lay = Lay::random(&mut g, nd);
            let inp = Input::<T>::new(&mats, batch, m, n, &in_lay);
            let k = m.min(n);
            let mut lays = Lay::all(nd);
            lays.push(Lay::random(&mut g, nd));
            for b in backends(Op::Qr) {
                for mode in MODES {
                    let want = run_qr(&inp.view(), mode, b);
                    let (qc, rr) = match mode {
                        QrMode::Reduced => (k, k),
                        QrMode::Complete => (m, m),
                        QrMode::R => (0, k),
                    };
                    for (li, lay) in lays.iter().enumerate() {
                        let qlay = &lays[(li + 1) % lays.len()];
                        let ctx = format!(
                            "qr_into {mode:?} {batch:?} {m}x{n} {} R:{} Q:{}",
                            b.name(),
                            lay.name,
                            qlay.name
                        );
                        let mut r = Out::<T>::mats(batch, rr, n, lay);
                        let mut q = Out::<T>::mats(batch, m, qc, qlay);
                        let mut info = vec![Info(0xdead); count];
                        {
                            let mut rv = r.view();
                            let mut qv = q.view();
                            let qarg = if mode == QrMode::R {
                                None
                            } else {
                                Some(&mut qv)
                            };
                            qr_into(
                                &inp.view(),
                                mode,
                                qarg,
                                &mut rv,
                                Some(&mut info),
                                &Options::with_backend(b),
                            )
                            .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        }
                        r.check_written(&format!("{ctx} R"));
                        assert_same_bits(&r.read(), &want.r, &ctx);
                        if mode != QrMode::R {
                            q.check_written(&format!("{ctx} Q"));
                            assert_same_bits(&q.read(), want.q.as_ref().unwrap(), &ctx);
                        } else {
                            assert!(
                                q.buf.iter().all(|x| x.to_f64() == SENTINEL),
                                "{ctx}: Q touched in mode r"
                            );
                        }
                        assert_eq!(info, want.info, "{ctx}: info");
                        // And without an info slice.
                        let mut r2 = Out::<T>::mats(batch, rr, n, lay);
                        let mut q2 = Out::<T>::mats(batch, m, qc, qlay);
                        {
                            let mut rv = r2.view();
                            let mut qv = q2.view();
                            let qarg = if mode == QrMode::R {
                                None
                            } else {
                                Some(&mut qv)
                            };
                            qr_into(
                                &inp.view(),
                                mode,
                                qarg,
                                &mut rv,
                                None,
                                &Options::with_backend(b),
                            )
                            .unwrap();
                        }
                        assert_same_bits(&r2.read(), &want.r, &ctx);
                    }
                }
            }
        }
    }
}

#[test]
fn qr_into_strided_outputs() {
    into_strided_outputs::<f32>(11);
    into_strided_outputs::<f64>(12);
}

/// Structured input: zeros, identity, ones, rank one, repeated columns, graded columns
/// and rows (1e-4 .. 1e4). Accurate, and flagged RANK_DEFICIENT where rank-deficient.
fn structured<T: Real>(seed: u64) {
    let t = tol::<T>();
    let mut g = rng(seed);
    for (m, n) in [
        (3, 3),
        (17, 17),
        (32, 32),
        (33, 33),
        (64, 64),
        (40, 8),
        (8, 40),
        (65, 20),
        (5, 1),
        (1, 5),
    ] {
        let k = m.min(n);
        let mut cases: Vec<(&str, M, bool)> = vec![
            ("zeros", M::zeros(m, n), true),
            ("identity", M::eye(m, n), false),
            ("ones", M::from_fn(m, n, |_, _| 1.0), k > 1),
            ("rank-one", rank_one(&mut g, m, n), k > 1),
            (
                "graded-cols",
                {
                    let s = graded(n, 1e4, 1e-4);
                    let o = orthogonal(&mut g, m).cols(0, k);

                    if m >= n {
                        o.mul(&M::diag(&s))
                    } else {
                        gaussian(&mut g, m, n).mul(&M::diag(&s))
                    }
                },
                false,
            ),
            (
                "graded-rows",
                {
                    let s = graded(m, 1e4, 1e-4);
                    M::diag(&s).mul(&gaussian(&mut g, m, n))
                },
                false,
            ),
        ];
        if n >= 2 && m >= 2 {
            let mut dup = gaussian(&mut g, m, n);
            for i in 0..m {
                let v = dup.at(i, 0);
                dup.set(i, n - 1, v);
            }
            cases.push(("duplicate-column", dup, m >= n)); // wide: other columns still span
        }
        let mats: Vec<M> = cases.iter().map(|c| c.1.clone()).collect();
        let inp = Input::<T>::contiguous(&mats, &[mats.len()], m, n);
        for b in backends(Op::Qr) {
            let res = run_qr(&inp.view(), QrMode::Complete, b);
            let red = run_qr(&inp.view(), QrMode::Reduced, b);
            for (i, (name, _, deficient)) in cases.iter().enumerate() {
                let ctx = format!("{} qr {name} {m}x{n} {}", dtype_name::<T>(), b.name());
                check_qr(
                    &inp.mats[i],
                    Some(&res.q.as_ref().unwrap()[i]),
                    &res.r[i],
                    true,
                    t,
                    &ctx,
                );
                check_qr(
                    &inp.mats[i],
                    Some(&red.q.as_ref().unwrap()[i]),
                    &red.r[i],
                    false,
                    t,
                    &ctx,
                );
                assert!(res.info[i].is_ok(), "{ctx}: info {:#x}", res.info[i].0);
                // graded rows can be numerically rank-deficient at 1e8 range in f32; only
                // check the flag where it is determined.
                if *name != "graded-rows" && *name != "graded-cols" {
                    assert_eq!(
                        res.info[i].rank_deficient(),
                        *deficient,
                        "{ctx}: RANK_DEFICIENT flag"
                    );
                }
                if *name == "identity" {
                    // diag(R) >= 0 makes the QR of the identity the identity.
                    let q = &red.q.as_ref().unwrap()[i];
                    assert_le(q.sub(&M::eye(m, k)).max_abs(), 4.0 * t.eps, "|Q - I|", &ctx);
                    assert_le(
                        red.r[i].sub(&M::eye(k, n)).max_abs(),
                        4.0 * t.eps,
                        "|R - I|",
                        &ctx,
                    );
                }
                if *name == "ones" {
                    // R's first row is sqrt(m) everywhere, its other rows (near) zero.
                    let r = &red.r[i];
                    for j in 0..n {
                        assert_le(
                            (r.at(0, j) - (m as f64).sqrt()).abs(),
                            8.0 * t.eps * (m as f64).sqrt(),
                            "R[0,j] - sqrt(m)",
                            &ctx,
                        );
                    }
                    assert_le(
                        r.rows(1, k).max_abs(),
                        16.0 * t.eps * (m as f64).sqrt(),
                        "R[1.., :]",
                        &ctx,
                    );
                }
                if *name == "zeros" {
                    assert!(res.r[i].max_abs() == 0.0, "{ctx}: R of zeros not zero");
                }
            }
        }
    }
}

#[test]
fn qr_structured_f32() {
    structured::<f32>(13);
}

#[test]
fn qr_structured_f64() {
    structured::<f64>(14);
}

/// float32 input of magnitude 1e-30 and 1e+37: accurate relative to ||A|| (no overflow or
/// underflow), and power-of-two multiples scale the results exactly.
#[test]
fn qr_extreme_magnitudes_f32() {
    let t = tol::<f32>();
    let mut g = rng(15);
    for (m, n) in [(4, 4), (17, 9), (9, 17), (32, 32), (40, 40), (48, 16)] {
        let base = gaussian(&mut g, m, n);
        let mx = base.max_abs();
        let tiny = base.scale(1e-30 / mx);
        let huge = base.scale(1e37 / mx);
        let inp = Input::<f32>::contiguous(&[base.clone(), tiny, huge], &[3], m, n);
        for b in backends(Op::Qr) {
            let res = run_qr(&inp.view(), QrMode::Reduced, b);
            infos_clean(&res.info, "extreme");
            for i in 0..3 {
                let ctx = format!("qr f32 magnitude #{i} {m}x{n} {}", b.name());
                check_qr(
                    &inp.mats[i],
                    Some(&res.q.as_ref().unwrap()[i]),
                    &res.r[i],
                    false,
                    t,
                    &ctx,
                );
                assert!(res.r[i].max_abs() > 0.0, "{ctx}: R underflowed to zero");
            }
        }
        // Exact power-of-two multiples: Q identical, R scaled exactly.
        let b32 = base.round_to::<f32>();
        for e in [-100i32, 120] {
            let s = 2f64.powi(e);
            let inp = Input::<f32>::contiguous(&[b32.clone(), b32.scale(s)], &[2], m, n);
            for b in backends(Op::Qr) {
                let res = run_qr(&inp.view(), QrMode::Reduced, b);
                let ctx = format!("qr f32 2^{e} {m}x{n} {}", b.name());
                let q = res.q.unwrap();
                assert_same_bits(&q[1..2], &q[0..1], &ctx);
                assert_same_bits(&[res.r[0].scale(s)], &res.r[1..2], &ctx);
            }
        }
    }
}

#[test]
fn qr_extreme_magnitudes_f64() {
    let t = tol::<f64>();
    let mut g = rng(16);
    for (m, n) in [(5, 5), (33, 33), (20, 40)] {
        let base = gaussian(&mut g, m, n);
        let mx = base.max_abs();
        let mats = [base.scale(1e-300 / mx), base.scale(1e300 / mx)];
        let inp = Input::<f64>::contiguous(&mats, &[2], m, n);
        for b in backends(Op::Qr) {
            let res = run_qr(&inp.view(), QrMode::Complete, b);
            for i in 0..2 {
                // ||A|| itself overflows f64 at 1e300 * sqrt(mn): check the scaled copy.
                let s = if i == 0 { 1e300 } else { 1e-300 };
                check_qr(
                    &inp.mats[i].scale(s),
                    Some(&res.q.as_ref().unwrap()[i]),
                    &res.r[i].scale(s),
                    true,
                    t,
                    &format!("qr f64 magnitude #{i} {m}x{n} {}", b.name()),
                );
            }
        }
    }
}

/// NaN and Inf in some matrices of a batch: those get all-NaN outputs and NONFINITE; the
/// others are exactly what a batch without the bad ones gives (on the backend the whole
/// batch was routed to, for Auto).
fn nonfinite_in_batch<T: Real>(seed: u64) {
    let mut g = rng(seed);
    for (m, n) in [(4, 4), (6, 3), (3, 6), (33, 33), (40, 70)] {
        let mats: Vec<M> = (0..6).map(|_| gaussian(&mut g, m, n)).collect();
        let bad = [1usize, 3, 4];
        let mut inp = Input::<T>::contiguous(&mats, &[2, 3], m, n);
        let poison = [
            T::NAN,
            T::from_f64(f64::INFINITY),
            T::from_f64(f64::NEG_INFINITY),
        ];
        for (p, &b) in bad.iter().enumerate() {
            let (i, j) = (g.random_range(0..m), g.random_range(0..n));
            inp.set(b, i, j, poison[p]);
        }
        let good: Vec<usize> = (0..6).filter(|i| !bad.contains(i)).collect();
        let good_mats: Vec<M> = good.iter().map(|&i| mats[i].clone()).collect();
        let clean = Input::<T>::contiguous(&good_mats, &[good.len()], m, n);
        for b in backends(Op::Qr) {
            for mode in MODES {
                let ctx = format!("qr {mode:?} nonfinite {m}x{n} {}", b.name());
                let res = run_qr(&inp.view(), mode, b);
                let routed = concrete(b, || routed_qr::<T>(mode, 6, m, n));
                let want = run_qr(&clean.view(), mode, routed);
                for &i in &bad {
                    assert!(res.info[i].nonfinite(), "{ctx}: matrix {i} not flagged");
                    assert!(!res.info[i].is_ok(), "{ctx}: matrix {i} is_ok");
                    assert!(res.r[i].all_nan(), "{ctx}: R of matrix {i} not all NaN");
                    if let Some(q) = &res.q {
                        assert!(q[i].all_nan(), "{ctx}: Q of matrix {i} not all NaN");
                    }
                }
                for (gi, &i) in good.iter().enumerate() {
                    assert!(!res.info[i].nonfinite(), "{ctx}: good matrix {i} flagged");
                    assert_eq!(res.info[i], want.info[gi], "{ctx}: info of matrix {i}");
                    assert_same_bits(&res.r[i..i + 1], &want.r[gi..gi + 1], &ctx);
                    if let (Some(q), Some(wq)) = (&res.q, &want.q) {
                        assert_same_bits(&q[i..i + 1], &wq[gi..gi + 1], &ctx);
                    }
                }
            }
        }
    }
}

use rand::Rng;

#[test]
fn qr_nonfinite_in_batch() {
    nonfinite_in_batch::<f32>(17);
    nonfinite_in_batch::<f64>(18);
}

/// On full-rank input the factorisation with diag(R) >= 0 is unique: both CPU backends
/// agree (to tolerance), so the sign convention is really the same.
fn backends_agree<T: Real>(seed: u64) {
    let t = tol::<T>();
    let mut g = rng(seed);
    let mut shapes = all_shapes();
    shapes.retain(|&(m, n)| m.min(n) > 0);
    for (m, n) in shapes {
        let k = m.min(n);
        // Condition number 2: the factors are well determined.
        let s: Vec<f64> = (0..k).map(|i| 1.0 + i as f64 / k.max(2) as f64).collect();
        let mats = [
            with_singular_values(&mut g, m, n, &s),
            gaussian(&mut g, m, n),
        ];
        let inp = Input::<T>::contiguous(&mats[..1], &[1], m, n);
        let sm = run_qr(&inp.view(), QrMode::Reduced, Backend::CpuSmall);
        let fa = run_qr(&inp.view(), QrMode::Reduced, Backend::CpuFaer);
        let ctx = format!("{} qr backends agree {m}x{n}", dtype_name::<T>());
        let bound = 10.0 * t.qr;
        assert_le(
            sm.q.as_ref().unwrap()[0]
                .sub(&fa.q.as_ref().unwrap()[0])
                .frob(),
            bound,
            "||Q_small - Q_faer||",
            &ctx,
        );
        assert_le(
            sm.r[0].sub(&fa.r[0]).frob() / inp.mats[0].frob(),
            bound,
            "||R_small - R_faer|| / ||A||",
            &ctx,
        );
        assert!(
            !sm.info[0].rank_deficient() && !fa.info[0].rank_deficient(),
            "{ctx}: full rank flagged"
        );
    }
}

#[test]
fn qr_backends_agree() {
    backends_agree::<f32>(19);
    backends_agree::<f64>(20);
}

/// RANK_DEFICIENT on rank-deficient input (every backend), not on well-conditioned random
/// input.
fn rank_flag<T: Real>(seed: u64) {
    let mut g = rng(seed);
    for (m, n) in [
        (2, 2),
        (8, 8),
        (31, 31),
        (32, 32),
        (33, 33),
        (64, 64),
        (40, 8),
        (8, 40),
        (100, 30),
        (30, 100),
        (129, 32),
    ] {
        let k = m.min(n);
        let mut zero_col = gaussian(&mut g, m, n);
        let jz = g.random_range(0..n);
        for i in 0..m {
            zero_col.set(i, jz, 0.0);
        }
        // Rank k-1 with well separated nonzero singular values.
        let mut s: Vec<f64> = (0..k).map(|i| 1.0 + i as f64 / k as f64).collect();
        s.pop();
        let deficient = vec![
            ("zeros", M::zeros(m, n)),
            ("rank-one", rank_one(&mut g, m, n)),
            ("rank-k-1", with_singular_values(&mut g, m, n, &s)),
        ];
        let mut deficient = deficient;
        if m >= n {
            // A zero column in a tall (or square) matrix always makes it rank-deficient.
            deficient.push(("zero-column", zero_col));
        }
        let full: Vec<(&str, M)> = vec![
            ("gaussian", gaussian(&mut g, m, n)),
            (
                "well-conditioned",
                with_singular_values(
                    &mut g,
                    m,
                    n,
                    &(0..k).map(|i| 1.0 + i as f64).collect::<Vec<_>>(),
                ),
            ),
        ];
        let cases: Vec<(&str, M, bool)> = deficient
            .into_iter()
            .map(|(a, b)| (a, b, true))
            .chain(full.into_iter().map(|(a, b)| (a, b, false)))
            .collect();
        let mats: Vec<M> = cases.iter().map(|c| c.1.clone()).collect();
        let inp = Input::<T>::contiguous(&mats, &[mats.len()], m, n);
        // Every backend through its planner, and every CUDA kernel forced where a GPU is
        // present (one that refuses the shape, an argument error, is left out there).
        let mut runs: Vec<Options> = backends(Op::Qr)
            .into_iter()
            .map(Options::with_backend)
            .collect();
        runs.extend(forced_cuda_kernels(Op::Qr));
        for opts in &runs {
            let run = run_name(opts);
            for mode in MODES {
                let info = match batchlin::qr_ex(&inp.view(), mode, opts) {
                    Ok((_, info)) => info,
                    Err(e) if opts.kernel.is_some() && e.kind() == "argument" => continue,
                    Err(e) => panic!("qr {mode:?} {m}x{n} {run}: {e}"),
                };
                for (i, (name, _, def)) in cases.iter().enumerate() {
                    let ctx = format!("{} qr {mode:?} {name} {m}x{n} {run}", dtype_name::<T>());
                    if k < 2 && *name != "zeros" {
                        continue; // a single column/row is full rank unless zero
                    }
                    assert_eq!(
                        info[i].rank_deficient(),
                        *def,
                        "{ctx}: RANK_DEFICIENT flag (info {:#x})",
                        info[i].0
                    );
                    assert!(info[i].is_ok(), "{ctx}");
                }
            }
        }
    }
}

#[test]
fn qr_rank_deficient_flag() {
    rank_flag::<f32>(21);
    rank_flag::<f64>(22);
}
