//! The test helpers themselves cannot pass vacuously: each check rejects a slightly wrong
//! answer, the layouts really are strided, and the sentinels really catch stray writes.

mod common;
use batchlin::{Backend, QrMode, Uplo};
use common::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn rejects(name: &str, f: impl FnOnce()) {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(prev);
    assert!(r.is_err(), "the check accepted a wrong answer: {name}");
}

#[test]
fn checks_reject_wrong_answers() {
    let t = tol::<f32>();
    let mut g = rng(601);
    let (m, n) = (9, 6);
    let a = gaussian(&mut g, m, n).round_to::<f32>();
    let inp = Input::<f32>::contiguous(std::slice::from_ref(&a), &[], m, n);
    let qr = run_qr(&inp.view(), QrMode::Reduced, Backend::CpuSmall);
    let (q, r) = (qr.q.unwrap().remove(0), qr.r[0].clone());
    check_qr(&a, Some(&q), &r, false, t, "correct QR");
    let mut r_bad = r.clone();
    r_bad.set(1, 3, r.at(1, 3) + 1e-3);
    rejects("perturbed R", || {
        check_qr(&a, Some(&q), &r_bad, false, t, "")
    });
    let mut r_low = r.clone();
    r_low.set(2, 1, 1e-30);
    rejects("R with a tiny entry below the diagonal", || {
        check_qr(&a, Some(&q), &r_low, false, t, "")
    });
    let r_neg = M::from_fn(
        r.r,
        r.c,
        |i, j| if i == 0 { -r.at(i, j) } else { r.at(i, j) },
    );
    let q_neg = M::from_fn(
        q.r,
        q.c,
        |i, j| if j == 0 { -q.at(i, j) } else { q.at(i, j) },
    );
    rejects("negative diag(R) (a valid QR otherwise)", || {
        check_qr(&a, Some(&q_neg), &r_neg, false, t, "")
    });
    // R alone is checked through R^T R = A^T A (weaker; mode r is also compared bitwise
    // with the reduced R in qr.rs).
    let mut r_bad2 = r.clone();
    r_bad2.set(1, 3, r.at(1, 3) + 1e-2 * a.frob());
    rejects("R alone, perturbed", || {
        check_qr(&a, None, &r_bad2, false, t, "")
    });

    let s = sym_gaussian(&mut g, 7).round_to::<f32>();
    let inp = Input::<f32>::contiguous(std::slice::from_ref(&s), &[], 7, 7);
    let e = run_eigh(&inp.view(), Uplo::Lower, true, Backend::CpuFaer);
    let (w, v) = (e.w[0].d.clone(), e.v.unwrap().remove(0));
    check_eigh(&s, &w, Some(&v), t, "correct eigh");
    let mut w_bad = w.clone();
    w_bad[3] += 1e-3 * s.frob();
    rejects("perturbed eigenvalue", || {
        check_eigh(&s, &w_bad, None, t, "")
    });
    let w_desc: Vec<f64> = w.iter().rev().cloned().collect();
    rejects("descending eigenvalues", || {
        check_eigh(&s, &w_desc, None, t, "")
    });
    let v_flip = M::from_fn(7, 7, |i, j| if j == 2 { -v.at(i, j) } else { v.at(i, j) });
    rejects("eigenvector with the wrong sign", || {
        check_eigh(&s, &w, Some(&v_flip), t, "")
    });
    let mut v_bad = v.clone();
    v_bad.set(0, 0, v.at(0, 0) + 1e-3);
    rejects("perturbed eigenvector", || {
        check_eigh(&s, &w, Some(&v_bad), t, "")
    });

    let sv = run_svd(
        &Input::<f32>::contiguous(std::slice::from_ref(&a), &[], m, n).view(),
        false,
        true,
        Backend::CpuSmall,
    );
    let (u, sig, vh) = (
        sv.u.unwrap().remove(0),
        sv.s[0].d.clone(),
        sv.vh.unwrap().remove(0),
    );
    check_svd(&a, Some(&u), &sig, Some(&vh), false, t, "correct SVD");
    let mut s_bad = sig.clone();
    s_bad[5] *= 1.001;
    rejects("perturbed singular value", || {
        check_svd(&a, None, &s_bad, None, false, t, "")
    });
    let u_flip = M::from_fn(m, n, |i, j| if j == 1 { -u.at(i, j) } else { u.at(i, j) });
    let vh_flip = M::from_fn(n, n, |i, j| if i == 1 { -vh.at(i, j) } else { vh.at(i, j) });
    rejects("U column with the wrong sign", || {
        check_svd(&a, Some(&u_flip), &sig, Some(&vh_flip), false, t, "")
    });
    rejects("U and Vh inconsistent", || {
        check_svd(&a, Some(&u_flip), &sig, Some(&vh), false, t, "")
    });
}

#[test]
fn layouts_are_strided_and_sentinels_work() {
    let shape = [2usize, 3, 4, 5];
    for lay in Lay::all(4) {
        let (st, len) = lay.strides(&shape);
        // Non-overlapping: the distinct offsets are as many as the elements.
        let mut offs = std::collections::BTreeSet::new();
        for a in 0..2 {
            for b in 0..3 {
                for i in 0..4 {
                    for j in 0..5 {
                        offs.insert(
                            lay.offset as isize
                                + a * st[0]
                                + b * st[1]
                                + i as isize * st[2]
                                + j as isize * st[3],
                        );
                    }
                }
            }
        }
        assert_eq!(offs.len(), 120, "{}", lay.name);
        assert!(*offs.iter().last().unwrap() < len as isize, "{}", lay.name);
        if lay.name != "row-major" {
            assert_ne!(st, vec![60, 20, 5, 1], "{} is row-major", lay.name);
        }
    }
    // A stray write outside the view, or a missing write inside, is caught.
    let mut o = Out::<f64>::mats(&[2], 3, 3, &Lay::padded(3));
    assert!(o.read().iter().all(|m| m.d.iter().all(|&x| x == SENTINEL)));
    rejects("nothing written", || o.check_written(""));
    {
        let mut v = o.view();
        let p = v.as_mut_ptr();
        // Fill the view through its own strides.
        let l = v.layout().clone();
        for b in 0..2 {
            for i in 0..3 {
                for j in 0..3 {
                    unsafe {
                        *p.offset(
                            b as isize * l.batch_strides[0]
                                + i as isize * l.row_stride
                                + j as isize * l.col_stride,
                        ) = 1.0
                    };
                }
            }
        }
    }
    o.check_written("filled view");
    o.buf[o.offset - 1] = 0.0;
    rejects("stray write before the view", || o.check_written(""));
}
