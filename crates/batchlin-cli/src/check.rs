//! Accuracy checks for `batchlin bench`, computed in float64 with faer.

use batchlin::{Op, Real, Tensor};
use faer::Mat;

/// The bound the bench holds every result to: the accuracy floor for float32
/// (docs/ARCHITECTURE.md, "Numerics"), scaled by epsilon for float64, with orthogonality
/// allowed sqrt(n/256) more above 256.
pub fn bound<T: Real>(op: Op, n: usize) -> f64 {
    let base = match op {
        Op::Qr => 1e-4,
        Op::Eigh | Op::Svd => 2e-5,
    };
    let eps_ratio = T::EPSILON.to_f64() / f32::EPSILON as f64;
    base * eps_ratio * (n as f64 / 256.0).sqrt().max(1.0)
}

fn mat<T: Real>(t: &Tensor<T>, b: usize, rows: usize, cols: usize) -> Mat<f64> {
    let off = b * rows * cols;
    Mat::from_fn(rows, cols, |i, j| t.data[off + i * cols + j].to_f64())
}

fn vector<T: Real>(t: &Tensor<T>, b: usize, len: usize) -> Vec<f64> {
    t.data[b * len..(b + 1) * len]
        .iter()
        .map(|x| x.to_f64())
        .collect()
}

/// ||Q^T Q - I||_F / ||I||_F: orthogonality, relative Frobenius (docs/ARCHITECTURE.md, "Numerics").
fn orth_err(q: &Mat<f64>) -> f64 {
    let g = q.transpose() * q;
    let id = Mat::<f64>::identity(g.nrows(), g.ncols());
    (&g - &id).norm_l2() / (g.nrows().max(1) as f64).sqrt()
}

fn rel(a: &Mat<f64>, b: &Mat<f64>) -> f64 {
    let na = a.norm_l2();
    if na == 0.0 {
        b.norm_l2()
    } else {
        (a - b).norm_l2() / na
    }
}

/// The largest relative residual or orthogonality error over up to `samples` matrices of
/// the batch. Outputs as `bench` lays them out: QR (Q, R); eigh (w, V); SVD (U, S, Vh).
pub fn max_error<T: Real>(
    op: &Op,
    a: &Tensor<T>,
    x: &Tensor<T>,
    y: Option<&Tensor<T>>,
    z: Option<&Tensor<T>>,
    samples: usize,
) -> f64 {
    let (batch, m, n) = (a.shape[0], a.shape[1], a.shape[2]);
    let k = m.min(n);
    let step = (batch / samples.max(1)).max(1);
    let mut worst = 0.0f64;
    for b in (0..batch).step_by(step).take(samples) {
        let am = mat(a, b, m, n);
        let e = match op {
            Op::Qr => {
                let q = mat(x, b, m, k);
                let r = mat(y.expect("R"), b, k, n);
                let mut below = 0.0f64;
                for j in 0..n {
                    for i in j + 1..k {
                        below = below.max(r[(i, j)].abs());
                    }
                }
                rel(&am, &(&q * &r)).max(orth_err(&q)).max(below)
            }
            Op::Eigh => {
                let w = vector(x, b, n);
                let v = mat(y.expect("V"), b, n, n);
                let vw = Mat::from_fn(n, n, |i, j| v[(i, j)] * w[j]);
                let res = (&am * &v - &vw).norm_l2() / am.norm_l2().max(f64::MIN_POSITIVE);
                res.max(orth_err(&v))
            }
            Op::Svd => {
                let u = mat(x, b, m, k);
                let s = vector(y.expect("S"), b, k);
                let vh = mat(z.expect("Vh"), b, k, n);
                let us = Mat::from_fn(m, k, |i, j| u[(i, j)] * s[j]);
                rel(&am, &(&us * &vh))
                    .max(orth_err(&u))
                    .max(orth_err(&vh.transpose().to_owned()))
            }
        };
        worst = worst.max(if e.is_nan() { f64::INFINITY } else { e });
    }
    worst
}
