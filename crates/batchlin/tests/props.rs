//! Property tests: random batch shapes (up to two batch dimensions, each 0..=3), random
//! matrix sizes up to 70 x 70, random input and output stride layouts, random power-of-two
//! magnitudes, every backend, float32 and float64. Each case checks the accuracy floor,
//! the conventions, that *_into into strided outputs writes exactly the allocating
//! wrapper's values, and nothing outside the output views.

mod common;
use batchlin::{
    eigh_into, qr_into, svd_into, Backend, BatchMut, BatchRef, Info, Options, QrMode, Real, Uplo,
};
use common::*;
use proptest::prelude::*;
use rand::Rng;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const BACK: [Backend; 3] = [Backend::CpuSmall, Backend::CpuFaer, Backend::Auto];

/// Random matrices for a case: mostly Gaussian, some rank-deficient, all scaled by a random
/// power of two.
fn random_mats(
    g: &mut rand::rngs::StdRng,
    count: usize,
    m: usize,
    n: usize,
    symmetric: bool,
) -> Vec<M> {
    (0..count)
        .map(|_| {
            let e = g.random_range(-40..40);
            let a = match g.random_range(0..6) {
                0 if m.min(n) > 0 => rank_one(g, m, n),
                _ => gaussian(g, m, n),
            };
            let a = if symmetric {
                M::from_fn(n, n, |i, j| a.at(i, j) + a.at(j, i))
            } else {
                a
            };
            a.scale(2f64.powi(e))
        })
        .collect()
}

fn qr_case<T: Real>(seed: u64, batch: &[usize], m: usize, n: usize, b: Backend, mode: QrMode) {
    let t = tol::<T>();
    let mut g = rng(seed);
    let count: usize = batch.iter().product();
    let nd = batch.len() + 2;
    let mats = random_mats(&mut g, count, m, n, false);
    let inp = Input::<T>::new(&mats, batch, m, n, &Lay::random(&mut g, nd));
    let k = m.min(n);
    let (qc, rr) = match mode {
        QrMode::Reduced => (k, k),
        QrMode::Complete => (m, m),
        QrMode::R => (0, k),
    };
    let mut r = Out::<T>::mats(batch, rr, n, &Lay::random(&mut g, nd));
    let mut q = Out::<T>::mats(batch, m, qc, &Lay::random(&mut g, nd));
    let mut info = vec![Info(0x5555); count];
    {
        let (mut rv, mut qv) = (r.view(), q.view());
        let qa = if mode == QrMode::R {
            None
        } else {
            Some(&mut qv)
        };
        qr_into(
            &inp.view(),
            mode,
            qa,
            &mut rv,
            Some(&mut info),
            &Options::with_backend(b),
        )
        .unwrap();
    }
    let ctx = format!(
        "{} qr {mode:?} {batch:?} {m}x{n} {} in {:?} R {:?}",
        dtype_name::<T>(),
        b.name(),
        inp.strides,
        r.strides
    );
    r.check_written(&ctx);
    let rs = r.read();
    let qs = if mode == QrMode::R {
        None
    } else {
        q.check_written(&ctx);
        Some(q.read())
    };
    for i in 0..count {
        assert!(info[i].is_ok(), "{ctx}: info {:#x}", info[i].0);
        check_qr(
            &inp.mats[i],
            qs.as_ref().map(|q| &q[i]),
            &rs[i],
            mode == QrMode::Complete,
            t,
            &format!("{ctx} #{i}"),
        );
    }
    let contiguous = Input::<T>::contiguous(&mats, batch, m, n);
    let want = run_qr(&contiguous.view(), mode, b);
    assert_same_bits(&rs, &want.r, &ctx);
    if let Some(qs) = &qs {
        assert_same_bits(qs, want.q.as_ref().unwrap(), &ctx);
    }
    assert_eq!(info, want.info, "{ctx}");
}

fn eigh_case<T: Real>(seed: u64, batch: &[usize], n: usize, b: Backend, uplo: Uplo, vectors: bool) {
    let t = tol::<T>();
    let mut g = rng(seed);
    let count: usize = batch.iter().product();
    let nd = batch.len() + 2;
    let mats = random_mats(&mut g, count, n, n, true);
    let mut inp = Input::<T>::new(&mats, batch, n, n, &Lay::random(&mut g, nd));
    // NaN in the triangle that is not read.
    for bi in 0..count {
        for i in 0..n {
            for j in 0..n {
                if (uplo == Uplo::Lower && j > i) || (uplo == Uplo::Upper && i > j) {
                    inp.set(bi, i, j, T::NAN);
                }
            }
        }
    }
    let mut w = Out::<T>::vecs(batch, n, &Lay::random(&mut g, nd - 1));
    let mut v = Out::<T>::mats(batch, n, n, &Lay::random(&mut g, nd));
    let mut info = vec![Info(0x5555); count];
    {
        let (mut wv, mut vv) = (w.view(), v.view());
        let va = if vectors { Some(&mut vv) } else { None };
        eigh_into(
            &inp.view(),
            uplo,
            &mut wv,
            va,
            Some(&mut info),
            &Options::with_backend(b),
        )
        .unwrap();
    }
    let ctx = format!(
        "{} eigh {uplo:?} vectors={vectors} {batch:?} n={n} {} in {:?}",
        dtype_name::<T>(),
        b.name(),
        inp.strides
    );
    w.check_written(&ctx);
    let ws = w.read();
    let vs = if vectors {
        v.check_written(&ctx);
        Some(v.read())
    } else {
        None
    };
    for i in 0..count {
        assert!(info[i].is_ok(), "{ctx}: info {:#x}", info[i].0);
        check_eigh(
            &inp.mats[i],
            &ws[i].d,
            vs.as_ref().map(|v| &v[i]),
            t,
            &format!("{ctx} #{i}"),
        );
    }
    let contiguous = Input::<T>::contiguous(&mats, batch, n, n);
    let want = run_eigh(&contiguous.view(), uplo, vectors, b);
    assert_same_bits(&ws, &want.w, &ctx);
    if let Some(vs) = &vs {
        assert_same_bits(vs, want.v.as_ref().unwrap(), &ctx);
    }
}

fn svd_case<T: Real>(
    seed: u64,
    batch: &[usize],
    m: usize,
    n: usize,
    b: Backend,
    full: bool,
    vectors: bool,
) {
    let t = tol::<T>();
    let mut g = rng(seed);
    let count: usize = batch.iter().product();
    let nd = batch.len() + 2;
    let mats = random_mats(&mut g, count, m, n, false);
    let inp = Input::<T>::new(&mats, batch, m, n, &Lay::random(&mut g, nd));
    let k = m.min(n);
    let (uc, vr) = if full { (m, n) } else { (k, k) };
    let mut u = Out::<T>::mats(batch, m, uc, &Lay::random(&mut g, nd));
    let mut s = Out::<T>::vecs(batch, k, &Lay::random(&mut g, nd - 1));
    let mut vh = Out::<T>::mats(batch, vr, n, &Lay::random(&mut g, nd));
    let mut info = vec![Info(0x5555); count];
    {
        let (mut uv, mut sv, mut vv) = (u.view(), s.view(), vh.view());
        let (ua, va) = if vectors {
            (Some(&mut uv), Some(&mut vv))
        } else {
            (None, None)
        };
        svd_into(
            &inp.view(),
            full,
            ua,
            &mut sv,
            va,
            Some(&mut info),
            &Options::with_backend(b),
        )
        .unwrap();
    }
    let ctx = format!(
        "{} svd full={full} vectors={vectors} {batch:?} {m}x{n} {} in {:?}",
        dtype_name::<T>(),
        b.name(),
        inp.strides
    );
    s.check_written(&ctx);
    let ss = s.read();
    let (us, vhs) = if vectors {
        u.check_written(&ctx);
        vh.check_written(&ctx);
        (Some(u.read()), Some(vh.read()))
    } else {
        (None, None)
    };
    for i in 0..count {
        assert!(info[i].is_ok(), "{ctx}: info {:#x}", info[i].0);
        check_svd(
            &inp.mats[i],
            us.as_ref().map(|u| &u[i]),
            &ss[i].d,
            vhs.as_ref().map(|v| &v[i]),
            full,
            t,
            &format!("{ctx} #{i}"),
        );
    }
    let contiguous = Input::<T>::contiguous(&mats, batch, m, n);
    let want = run_svd(&contiguous.view(), full, vectors, b);
    assert_same_bits(&ss, &want.s, &ctx);
    if let (Some(us), Some(vhs)) = (&us, &vhs) {
        assert_same_bits(us, want.u.as_ref().unwrap(), &ctx);
        assert_same_bits(vhs, want.vh.as_ref().unwrap(), &ctx);
    }
}

fn batch_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..=3, 0..=2)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn prop_qr(seed in any::<u64>(), batch in batch_strategy(), m in 0usize..=70, n in 0usize..=70,
               double in any::<bool>(), bi in 0usize..3, mi in 0usize..3) {
        let mode = [QrMode::Reduced, QrMode::Complete, QrMode::R][mi];
        if double { qr_case::<f64>(seed, &batch, m, n, BACK[bi], mode) } else { qr_case::<f32>(seed, &batch, m, n, BACK[bi], mode) }
    }

    #[test]
    fn prop_eigh(seed in any::<u64>(), batch in batch_strategy(), n in 0usize..=70,
                 double in any::<bool>(), bi in 0usize..3, upper in any::<bool>(), vectors in any::<bool>()) {
        let uplo = if upper { Uplo::Upper } else { Uplo::Lower };
        if double { eigh_case::<f64>(seed, &batch, n, BACK[bi], uplo, vectors) } else { eigh_case::<f32>(seed, &batch, n, BACK[bi], uplo, vectors) }
    }

    #[test]
    fn prop_svd(seed in any::<u64>(), batch in batch_strategy(), m in 0usize..=70, n in 0usize..=70,
                double in any::<bool>(), bi in 0usize..3, full in any::<bool>(), vectors in any::<bool>()) {
        if double { svd_case::<f64>(seed, &batch, m, n, BACK[bi], full, vectors) } else { svd_case::<f32>(seed, &batch, m, n, BACK[bi], full, vectors) }
    }
}

/// Negative strides through the raw-pointer constructors: a flipped view (rows reversed,
/// columns reversed, batch reversed) decomposes the flipped matrices, and outputs written
/// through negative strides land where they should.
#[test]
fn negative_strides_via_raw_parts() {
    let t = tol::<f64>();
    let mut g = rng(401);
    let (bn, m, n) = (3usize, 9usize, 6usize);
    let mats: Vec<M> = (0..bn).map(|_| gaussian(&mut g, m, n)).collect();
    let mut data = Vec::new();
    for a in &mats {
        data.extend_from_slice(&a.d);
    }
    // Element (b, i, j) of the view is mats[bn-1-b][m-1-i][n-1-j].
    let last = data.len() - 1;
    let flipped: Vec<M> = (0..bn)
        .map(|b| M::from_fn(m, n, |i, j| mats[bn - 1 - b].at(m - 1 - i, n - 1 - j)))
        .collect();
    let strides = [-((m * n) as isize), -(n as isize), -1];
    let a = unsafe { BatchRef::from_raw_parts(data.as_ptr().add(last), &[bn, m, n], &strides) }
        .unwrap();
    let k = m.min(n);
    for b in BACK {
        let qr = run_qr(&a, QrMode::Reduced, b);
        let sv = run_svd(&a, false, true, b);
        for i in 0..bn {
            check_qr(
                &flipped[i],
                Some(&qr.q.as_ref().unwrap()[i]),
                &qr.r[i],
                false,
                t,
                "qr negative strides",
            );
            check_svd(
                &flipped[i],
                Some(&sv.u.as_ref().unwrap()[i]),
                &sv.s[i].d,
                Some(&sv.vh.as_ref().unwrap()[i]),
                false,
                t,
                "svd negative strides",
            );
        }
        // R written through a negative-stride view: R[b][i][j] at the mirrored place.
        let mut rbuf = vec![SENTINEL; bn * k * n];
        let rl = rbuf.len() - 1;
        {
            let mut rv = unsafe {
                BatchMut::from_raw_parts(
                    rbuf.as_mut_ptr().add(rl),
                    &[bn, k, n],
                    &[-((k * n) as isize), -(n as isize), -1],
                )
            }
            .unwrap();
            let mut qbuf = vec![0.0f64; bn * m * k];
            let mut qv = BatchMut::contiguous(&mut qbuf, &[bn, m, k]).unwrap();
            qr_into(
                &a,
                QrMode::Reduced,
                Some(&mut qv),
                &mut rv,
                None,
                &Options::with_backend(b),
            )
            .unwrap();
        }
        for bi in 0..bn {
            for i in 0..k {
                for j in 0..n {
                    let at = rl - (bi * k * n + i * n + j);
                    assert_eq!(
                        rbuf[at].to_bits(),
                        qr.r[bi].at(i, j).to_bits(),
                        "negative-stride R output {bi},{i},{j}"
                    );
                }
            }
        }
    }
    // eigh of a view with a negative batch stride.
    let syms: Vec<M> = (0..bn).map(|_| sym_gaussian(&mut g, 5)).collect();
    let mut sd = Vec::new();
    for s in &syms {
        sd.extend_from_slice(&s.d);
    }
    let a = unsafe {
        BatchRef::from_raw_parts(sd.as_ptr().add(25 * (bn - 1)), &[bn, 5, 5], &[-25, 5, 1])
    }
    .unwrap();
    for b in BACK {
        let e = run_eigh(&a, Uplo::Lower, true, b);
        for i in 0..bn {
            check_eigh(
                &syms[bn - 1 - i],
                &e.w[i].d,
                Some(&e.v.as_ref().unwrap()[i]),
                t,
                "eigh negative batch stride",
            );
        }
    }
}
