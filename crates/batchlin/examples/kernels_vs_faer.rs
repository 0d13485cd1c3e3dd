//! Microbenchmark: batchlin's small-matrix CPU kernels vs faer's per-matrix in-place calls,
//! one core (Par::Seq), scratch reused, random normal input scaled as the batch driver does.
//! Prints microseconds per matrix and the ratio faer / kernel (> 1: the kernel is faster).
//!
//!     CARGO_TARGET_DIR=... cargo run --release --example kernels_vs_faer [-- quick] [-- op=qr,eigh,...] [-- n=4,8,...]
//!
//! Each timing includes copying the input into the work buffer (both sides); it is the minimum
//! over 41 short runs (the machine is shared), each cycling through a pool of inputs.

use std::hint::black_box;
use std::time::Instant;

use batchlin::cpu::kernels::{self, KernelStatus};
use batchlin::Real;
use faer::diag::Diag;
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::evd::ComputeEigenvectors;
use faer::linalg::svd::ComputeSvdVectors;
use faer::{Conj, Mat, Par};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

#[derive(Copy, Clone, PartialEq, Debug)]
enum Op {
    /// QR with the reduced Q formed (the padded kernels the batch driver runs).
    Qr,
    /// The same with the plain geqr2/org2r kernels (ld = m), for comparison.
    QrPlain,
    /// eigh with eigenvectors.
    Eigh,
    /// eigh with eigenvectors through faer's tridiagonalisation and back-transformation
    /// around our divide and conquer (the `cpu-faer` path above the leaf size).
    EighDc,
    /// The tridiagonal stage alone (of the pool's tridiagonalised inputs): our divide and
    /// conquer vs faer's `tridiagonal_self_adjoint_evd`.
    Tdc,
    /// eigenvalues only.
    Eigvalsh,
    /// thin SVD with U and V.
    Svd,
    /// singular values only.
    Svdvals,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Qr => "qr",
            Op::QrPlain => "qr-plain",
            Op::Eigh => "eigh",
            Op::EighDc => "eigh-dc",
            Op::Tdc => "tdc",
            Op::Eigvalsh => "eigvalsh",
            Op::Svd => "svd",
            Op::Svdvals => "svdvals",
        }
    }
}

/// Pool of `count` column-major n x n inputs, scaled so max |entry| is in [0.5, 1).
fn inputs<T: Real>(rng: &mut StdRng, n: usize, count: usize, symmetric: bool) -> Vec<Vec<T>> {
    (0..count)
        .map(|_| {
            let mut a: Vec<f64> = (0..n * n)
                .map(|_| rng.sample::<f64, _>(StandardNormal))
                .collect();
            if symmetric {
                for j in 0..n {
                    for i in 0..j {
                        let v = a[i + j * n];
                        a[j + i * n] = v;
                    }
                }
            }
            let mx = a.iter().fold(0.0f64, |s, x| s.max(x.abs()));
            if mx > 0.0 {
                let f = 2f64.powi(-(mx.log2().floor() as i32 + 1));
                a.iter_mut().for_each(|x| *x *= f);
            }
            a.into_iter().map(T::from_f64).collect()
        })
        .collect()
}

/// Time per call in microseconds: the minimum over several short runs (robust to other
/// processes sharing the cores); `f(i)` processes pool item i.
fn time_us(pool: usize, min_calls: usize, mut f: impl FnMut(usize)) -> f64 {
    // warm-up and calibrate
    let t0 = Instant::now();
    let mut calls = 0usize;
    while calls < pool.max(4) || t0.elapsed().as_secs_f64() < 0.003 {
        f(calls % pool);
        calls += 1;
    }
    let per = t0.elapsed().as_secs_f64() / calls as f64;
    // Many short runs: on a shared machine the minimum is a run no other process cut into.
    let reps = ((0.0005 / per) as usize).max(min_calls);
    (0..41)
        .map(|_| {
            let t = Instant::now();
            for r in 0..reps {
                f(r % pool);
            }
            t.elapsed().as_secs_f64() * 1e6 / reps as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// The tridiagonals (d, e) of the pool's matrices (faer's tridiagonalisation).
fn tridiagonals<T: Real>(n: usize, pool: &[Vec<T>]) -> Vec<(Vec<T>, Vec<T>)> {
    pool.iter()
        .map(|src| {
            let mut a = Mat::<T>::from_fn(n, n, |i, j| src[i + j * n]);
            let bs = faer::linalg::qr::no_pivoting::factor::recommended_block_size::<T>(n, n);
            let mut h = Mat::<T>::zeros(bs, n - 1);
            let mut buf =
                MemBuffer::new(faer::linalg::evd::tridiag::tridiag_in_place_scratch::<T>(
                    n,
                    Par::Seq,
                    Default::default(),
                ));
            faer::linalg::evd::tridiag::tridiag_in_place(
                a.as_mut(),
                h.as_mut(),
                Par::Seq,
                MemStack::new(&mut buf),
                Default::default(),
            );
            let d = (0..n).map(|i| a[(i, i)]).collect();
            let e = (0..n)
                .map(|i| if i + 1 < n { a[(i + 1, i)] } else { T::ZERO })
                .collect();
            (d, e)
        })
        .collect()
}

fn bench_dc<T: Real>(op: Op, n: usize, pool: &[Vec<T>]) -> f64 {
    use kernels::tridiag_dc_eigh as dc;
    let mut a = vec![T::ZERO; n * n];
    let mut v = vec![T::ZERO; n * n];
    let mut w = vec![T::ZERO; n];
    let mut e = vec![T::ZERO; n];
    let (sl, il) = dc::tridiag_dc_scratch_len(n);
    let mut sc = vec![T::ZERO; sl];
    let mut isc = vec![0usize; il];
    let mut buf = MemBuffer::new(dc::eigh_dense_scratch::<T>(n, Par::Seq));
    let tri = if op == Op::Tdc {
        tridiagonals(n, pool)
    } else {
        vec![]
    };
    time_us(pool.len(), 3, |i| {
        let st = if op == Op::Tdc {
            w.copy_from_slice(&tri[i].0);
            e.copy_from_slice(&tri[i].1);
            dc::tridiag_dc(n, &mut w, &mut e, &mut v, &mut sc, &mut isc, Par::Seq)
        } else {
            a.copy_from_slice(&pool[i]);
            dc::eigh_dense(n, &mut a, &mut w, &mut v, Par::Seq, MemStack::new(&mut buf))
        };
        black_box((&a, &v, &w, st));
    })
}

fn bench_kernel<T: Real>(op: Op, n: usize, pool: &[Vec<T>]) -> f64 {
    if matches!(op, Op::EighDc | Op::Tdc) {
        return bench_dc::<T>(op, n, pool);
    }
    let mut a = vec![T::ZERO; n * n];
    let mut tau = vec![T::ZERO; n];
    let mut q = vec![T::ZERO; n * n];
    let mut w = vec![T::ZERO; n];
    let mut scratch =
        vec![T::ZERO; kernels::eigh_scratch_len(n).max(kernels::svd_scratch_len(n, n))];
    let ld = kernels::padded_ld(n);
    let mut ap = vec![T::ZERO; ld * n];
    let mut qp = vec![T::ZERO; ld * n];
    let mut vp = vec![T::ZERO; ld * n];
    time_us(pool.len(), 3, |i| {
        if op != Op::QrPlain {
            for (dst, src) in ap.chunks_exact_mut(ld).zip(pool[i].chunks_exact(n)) {
                dst[..n].copy_from_slice(src);
            }
        } else {
            a.copy_from_slice(&pool[i]);
        }
        let st: KernelStatus = match op {
            Op::Qr => {
                kernels::qr_factor_padded(n, n, &mut ap, ld, &mut vp, &mut tau);
                kernels::qr_form_q_padded(n, n, &vp, ld, &tau, &mut qp, n);
                KernelStatus {
                    iterations: 0,
                    converged: true,
                }
            }
            Op::QrPlain => {
                kernels::qr_factor(n, n, &mut a, &mut tau);
                kernels::qr_form_q(n, n, &a, &tau, &mut q, n);
                KernelStatus {
                    iterations: 0,
                    converged: true,
                }
            }
            Op::Eigh => kernels::eigh(n, &mut ap, ld, &mut w, Some(&mut qp), &mut scratch),
            Op::EighDc | Op::Tdc => unreachable!(),
            Op::Eigvalsh => kernels::eigh(n, &mut ap, ld, &mut w, None, &mut scratch),
            Op::Svd => kernels::svd(
                n,
                n,
                &mut ap,
                ld,
                &mut w,
                Some(&mut qp),
                Some(&mut vp),
                ld,
                &mut scratch,
            ),
            Op::Svdvals => kernels::svd(n, n, &mut ap, ld, &mut w, None, None, ld, &mut scratch),
        };
        black_box((&a, &q, &w, &ap, &qp, &vp, st));
    })
}

fn bench_faer<T: Real>(op: Op, n: usize, pool: &[Vec<T>]) -> f64 {
    let par = Par::Seq;
    let mut a = Mat::<T>::zeros(n, n);
    let mut q = Mat::<T>::zeros(n, n);
    let mut v = Mat::<T>::zeros(n, n);
    let mut s = Diag::<T>::zeros(n);
    let bs = faer::linalg::qr::no_pivoting::factor::recommended_block_size::<T>(n, n);
    let mut qc = Mat::<T>::zeros(bs, n);
    let req = match op {
        Op::Qr | Op::QrPlain => StackReq::any_of(&[
            faer::linalg::qr::no_pivoting::factor::qr_in_place_scratch::<T>(n, n, bs, par, Default::default()),
            faer::linalg::householder::apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(n, bs, n),
        ]),
        Op::Eigh | Op::EighDc | Op::Tdc | Op::Eigvalsh => faer::linalg::evd::self_adjoint_evd_scratch::<T>(
            n,
            if op != Op::Eigvalsh { ComputeEigenvectors::Yes } else { ComputeEigenvectors::No },
            par,
            Default::default(),
        ),
        Op::Svd | Op::Svdvals => {
            let cv = if op == Op::Svd { ComputeSvdVectors::Thin } else { ComputeSvdVectors::No };
            faer::linalg::svd::svd_scratch::<T>(n, n, cv, cv, par, Default::default())
        }
    };
    let mut buf = MemBuffer::new(req);
    if op == Op::Tdc {
        let tri = tridiagonals(n, pool);
        return time_us(pool.len(), 3, |i| {
            let stack = MemStack::new(&mut buf);
            faer::linalg::evd::tridiagonal_self_adjoint_evd(
                faer::diag::DiagRef::from(faer::ColRef::from_slice(&tri[i].0).as_diagonal()),
                faer::ColRef::from_slice(&tri[i].1[..n - 1]).as_diagonal(),
                s.as_mut(),
                Some(v.as_mut()),
                par,
                stack,
                Default::default(),
            )
            .unwrap();
            black_box((&v, &s));
        });
    }
    time_us(pool.len(), 3, |i| {
        let src = &pool[i];
        for j in 0..n {
            a.col_mut(j)
                .try_as_col_major_mut()
                .unwrap()
                .as_slice_mut()
                .copy_from_slice(&src[j * n..j * n + n]);
        }
        let stack = MemStack::new(&mut buf);
        match op {
            Op::Qr | Op::QrPlain => {
                faer::linalg::qr::no_pivoting::factor::qr_in_place(
                    a.as_mut(),
                    qc.as_mut(),
                    par,
                    stack,
                    Default::default(),
                );
                q.fill(T::ZERO);
                q.diagonal_mut().fill(T::ONE);
                let stack = MemStack::new(&mut buf);
                faer::linalg::householder::apply_block_householder_sequence_on_the_left_in_place_with_conj(
                    a.as_ref(),
                    qc.as_ref(),
                    Conj::No,
                    q.as_mut(),
                    par,
                    stack,
                );
            }
            Op::Tdc => unreachable!(),
            Op::Eigh | Op::EighDc => {
                faer::linalg::evd::self_adjoint_evd(
                    a.as_ref(),
                    s.as_mut(),
                    Some(v.as_mut()),
                    par,
                    stack,
                    Default::default(),
                )
                .unwrap();
            }
            Op::Eigvalsh => {
                faer::linalg::evd::self_adjoint_evd(
                    a.as_ref(),
                    s.as_mut(),
                    None,
                    par,
                    stack,
                    Default::default(),
                )
                .unwrap();
            }
            Op::Svd => {
                faer::linalg::svd::svd(
                    a.as_ref(),
                    s.as_mut(),
                    Some(q.as_mut()),
                    Some(v.as_mut()),
                    par,
                    stack,
                    Default::default(),
                )
                .unwrap();
            }
            Op::Svdvals => {
                faer::linalg::svd::svd(
                    a.as_ref(),
                    s.as_mut(),
                    None,
                    None,
                    par,
                    stack,
                    Default::default(),
                )
                .unwrap();
            }
        }
        black_box((&a, &q, &v, &s));
    })
}

fn run<T: Real>(ops: &[Op], sizes: &[usize]) {
    let mut rng = StdRng::seed_from_u64(7);
    println!(
        "\n{} (us per matrix, one core; ratio = faer / kernel, > 1 means the kernel wins)",
        T::DTYPE
    );
    print!("{:>9}", "op \\ n");
    for n in sizes {
        print!(" | {:>20}", n);
    }
    println!();
    for &op in ops {
        print!("{:>9}", op.name());
        for &n in sizes {
            let count = ((1 << 20) / (n * n * std::mem::size_of::<T>())).clamp(4, 64);
            let pool = inputs::<T>(
                &mut rng,
                n,
                count,
                matches!(op, Op::Eigh | Op::EighDc | Op::Tdc | Op::Eigvalsh),
            );
            let k = bench_kernel::<T>(op, n, &pool);
            let f = bench_faer::<T>(op, n, &pool);
            print!(" | {:>7.2} {:>7.2} {:>4.1}x", k, f, f / k);
        }
        println!();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut sizes = vec![4usize, 8, 16, 32, 48, 64, 96, 128];
    let mut ops = vec![
        Op::Qr,
        Op::QrPlain,
        Op::Eigh,
        Op::Eigvalsh,
        Op::Svd,
        Op::Svdvals,
    ];
    for a in &args {
        if a == "quick" {
            sizes = vec![8, 16, 32, 64];
        } else if let Some(list) = a.strip_prefix("n=") {
            sizes = list
                .split(',')
                .map(|s| s.parse().expect("n=4,8,..."))
                .collect();
        } else if let Some(list) = a.strip_prefix("op=") {
            ops = list
                .split(',')
                .map(|s| match s {
                    "qr" => Op::Qr,
                    "qr-plain" => Op::QrPlain,
                    "eigh" => Op::Eigh,
                    "eigh-dc" => Op::EighDc,
                    "tdc" => Op::Tdc,
                    "eigvalsh" => Op::Eigvalsh,
                    "svd" => Op::Svd,
                    "svdvals" => Op::Svdvals,
                    _ => panic!("unknown op {s}"),
                })
                .collect();
        }
    }
    println!("columns: kernel_us faer_us ratio");
    run::<f32>(&ops, &sizes);
    run::<f64>(&ops, &sizes);
}
