//! Every CPU kernel writes every element of its outputs and every info word, and reads
//! none of them first: a C
//! caller's outputs, XLA's buffers and the Python package's NumPy arrays are memory as it
//! comes, not zeros. Each kernel, forced, runs every variant it takes on outputs filled
//! with NaN and on outputs of zeros; the two must agree and hold no NaN, at shapes on both
//! sides of the kernels' limits (the own kernels' size limits, the warp of 32, one matrix
//! and a batch the thread pool splits), tall, wide and square, in both types.

use batchlin::entry::{assemble, slots};
use batchlin::registry::{Target, KERNELS};
use batchlin::{
    BatchMut, BatchRef, DType, InfoOut, Options, Place, Problem, Real, Request, Variant,
};

mod common;

/// Runs `p` on `a` with kernel `k` forced, its outputs first filled with `fill` and its
/// info words with `info_fill`: the outputs and the info words.
fn outputs<T: Real>(
    p: &Problem,
    a: &[T],
    k: &batchlin::registry::Kernel,
    (fill, info_fill): (T, u32),
) -> (Vec<Vec<T>>, Vec<u32>) {
    let op = p.variant.operation();
    let slots = slots(op, &[p.batch], p.m, p.n).unwrap();
    let mut data: Vec<(Vec<T>, Vec<usize>, bool)> = slots
        .iter()
        .filter_map(|s| s.shape.clone().map(|sh| (sh, s.vectors)))
        .map(|(sh, vectors)| (vec![fill; sh.iter().product()], sh, vectors))
        .collect();
    let views = data
        .iter_mut()
        .map(|(d, sh, vectors)| match vectors {
            true => BatchMut::contiguous_vectors(d, sh),
            false => BatchMut::contiguous(d, sh),
        })
        .collect::<batchlin::Result<Vec<_>>>()
        .unwrap();
    let mut info = vec![batchlin::Info(info_fill); p.batch];
    let req = Request {
        operation: op,
        a: BatchRef::contiguous(a, &[p.batch, p.m, p.n]).unwrap(),
        out: assemble(op, views).unwrap(),
        info: Some(InfoOut::Host(&mut info)),
        place: Place::Host,
    };
    let opts = Options::with_kernel(k.backend, k.name);
    batchlin::run(req, &opts).unwrap_or_else(|e| panic!("{} {}: {e}", k.name, p));
    let words = info.iter().map(|i| i.0).collect();
    (data.into_iter().map(|(d, _, _)| d).collect(), words)
}

fn every_element_written<T: Real>() {
    let mut rng = common::rng(11);
    let square = [1, 2, 3, 5, 17, 32, 33, 65, 129, 193, 257];
    let mut shapes: Vec<(usize, usize, usize)> = square.iter().map(|&n| (1, n, n)).collect();
    shapes.extend([
        (3, 40, 7),
        (3, 7, 40),
        (2, 300, 9),
        (2, 9, 300),
        (2, 130, 129),
        (300, 4, 4),
        (300, 6, 3),
        (300, 3, 6),
        (70, 20, 20),
    ]);
    let mut runs = 0;
    for (batch, m, n) in shapes {
        let a: Vec<T> = (0..batch * m * n)
            .map(|_| T::from_f64(common::randn(&mut rng)))
            .collect();
        for v in Variant::ALL {
            if matches!(v, Variant::Eigh | Variant::Eigvalsh) && m != n {
                continue;
            }
            let p = Problem::new(v, T::DTYPE, batch, m, n);
            let cpu = KERNELS
                .iter()
                .filter(|k| k.backend.is_cpu() && k.supports(&p, &Target::Cpu));
            for k in cpu {
                let (poisoned, info) = outputs(&p, &a, k, (T::from_f64(f64::NAN), u32::MAX));
                let (zeroed, info_zeroed) = outputs(&p, &a, k, (T::ZERO, 0));
                assert_eq!(info, info_zeroed, "{} {p}: info words", k.name);
                let bad =
                    |&w: &u32| w & (batchlin::Info::NONFINITE | batchlin::Info::NOT_CONVERGED) != 0;
                assert!(!info.iter().any(bad), "{} {p}: {info:?}", k.name);
                for (i, (x, z)) in poisoned.iter().zip(&zeroed).enumerate() {
                    let at = |j: usize| format!("{} {p}, output {i}, element {j}", k.name);
                    if let Some(j) = x.iter().position(|e| e.to_f64().is_nan()) {
                        panic!("{}: not written (NaN left)", at(j));
                    }
                    let scale = z.iter().fold(1.0f64, |s, e| s.max(e.to_f64().abs()));
                    let tol = scale * if T::DTYPE == DType::F32 { 1e-5 } else { 1e-13 };
                    if let Some(j) =
                        (0..x.len()).find(|&j| (x[j].to_f64() - z[j].to_f64()).abs() > tol)
                    {
                        panic!(
                            "{}: {} on NaN outputs, {} on zeros",
                            at(j),
                            x[j].to_f64(),
                            z[j].to_f64()
                        );
                    }
                }
                runs += 1;
            }
        }
    }
    // Both CPU backends, every variant, every shape (eigh square only).
    assert!(runs > 200, "only {runs} runs");
}

#[test]
fn every_cpu_kernel_writes_every_output_element_f32() {
    every_element_written::<f32>();
}

#[test]
fn every_cpu_kernel_writes_every_output_element_f64() {
    every_element_written::<f64>();
}
