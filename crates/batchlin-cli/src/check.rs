//! Accuracy checks for `batchlin bench`, computed in float64 with faer.

use batchlin::{Op, Real, Tensor, Variant};
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

/// The largest error over up to `samples` matrices of the batch, each against float64:
/// for factors the relative residual and the orthogonality error; for values alone the
/// largest difference from faer's float64 values, relative to the matrix's norm. Outputs as
/// `timing` lays them out, the present slots in order: QR (Q, R) or (R); eigh (w, V) or
/// (w); SVD (U, S, Vh) or (S).
pub fn max_error<T: Real>(v: Variant, a: &Tensor<T>, outs: &[Tensor<T>], samples: usize) -> f64 {
    let (batch, m, n) = (a.shape[0], a.shape[1], a.shape[2]);
    let k = m.min(n);
    let step = (batch / samples.max(1)).max(1);
    let mut worst = 0.0f64;
    for b in (0..batch).step_by(step).take(samples) {
        let am = mat(a, b, m, n);
        let e = match v {
            Variant::QrReduced | Variant::QrComplete => {
                let qc = if v == Variant::QrComplete { m } else { k };
                let q = mat(&outs[0], b, m, qc);
                let r = mat(&outs[1], b, qc, n);
                rel(&am, &(&q * &r)).max(orth_err(&q)).max(below(&r))
            }
            // R alone: R^T R is A^T A (whatever the rows' signs).
            Variant::QrR => {
                let r = mat(&outs[0], b, k, n);
                let gram = am.transpose() * &am;
                rel(&gram, &(r.transpose() * &r)).max(below(&r))
            }
            Variant::Eigh => {
                let w = vector(&outs[0], b, n);
                let v = mat(&outs[1], b, n, n);
                let vw = Mat::from_fn(n, n, |i, j| v[(i, j)] * w[j]);
                let res = (&am * &v - &vw).norm_l2() / am.norm_l2().max(f64::MIN_POSITIVE);
                res.max(orth_err(&v))
            }
            Variant::Eigvalsh => match am.self_adjoint_eigenvalues(faer::Side::Lower) {
                Ok(want) => values_err(&vector(&outs[0], b, n), &want),
                Err(_) => f64::NAN,
            },
            Variant::SvdThin | Variant::SvdFull => {
                let (uc, vr) = if v == Variant::SvdFull {
                    (m, n)
                } else {
                    (k, k)
                };
                let u = mat(&outs[0], b, m, uc);
                let s = vector(&outs[1], b, k);
                let vh = mat(&outs[2], b, vr, n);
                let us = Mat::from_fn(m, k, |i, j| u[(i, j)] * s[j]);
                let vk = Mat::from_fn(k, n, |i, j| vh[(i, j)]);
                rel(&am, &(&us * &vk))
                    .max(orth_err(&u))
                    .max(orth_err(&vh.transpose().to_owned()))
            }
            Variant::Svdvals => match am.singular_values() {
                Ok(want) => values_err(&vector(&outs[0], b, k), &want),
                Err(_) => f64::NAN,
            },
        };
        worst = worst.max(if e.is_nan() { f64::INFINITY } else { e });
    }
    worst
}

/// The largest entry below R's diagonal.
fn below(r: &Mat<f64>) -> f64 {
    let mut worst = 0.0f64;
    for j in 0..r.ncols() {
        for i in j + 1..r.nrows() {
            worst = worst.max(r[(i, j)].abs());
        }
    }
    worst
}

/// Values against the reference, in the same order: the largest difference over the
/// values' 2-norm (the matrix's Frobenius norm, as the residuals are relative to).
fn values_err(got: &[f64], want: &[f64]) -> f64 {
    let scale = want.iter().map(|x| x * x).sum::<f64>().sqrt();
    let diff = got
        .iter()
        .zip(want)
        .fold(0.0f64, |d, (g, w)| d.max((g - w).abs()));
    if scale == 0.0 {
        diff
    } else {
        diff / scale
    }
}
