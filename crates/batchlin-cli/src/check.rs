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

/// Columns of A^T A that a check of R alone compares (all up to this many).
const GRAM_COLUMNS: usize = 64;

/// Up to `samples` indices of `0..len`, evenly spaced from the first: the matrices of a
/// batch `max_error` checks, the columns of a Gram matrix it compares.
pub fn sampled(len: usize, samples: usize) -> Vec<usize> {
    let step = (len / samples.max(1)).max(1);
    (0..len).step_by(step).take(samples).collect()
}

/// The matrices `at` of a batch `t` (its first axis), as a batch of their own.
pub fn pick<T: Real>(t: &Tensor<T>, at: &[usize]) -> Tensor<T> {
    let each: usize = t.shape[1..].iter().product();
    let mut shape = t.shape.clone();
    shape[0] = at.len();
    let data = at
        .iter()
        .flat_map(|&i| t.data[i * each..(i + 1) * each].iter().copied())
        .collect();
    Tensor { data, shape }
}

/// The largest error over up to `samples` matrices of the batch, each against float64:
/// for factors the relative residual and the orthogonality error; for values alone the
/// largest difference from faer's float64 values, relative to the matrix's norm. Outputs as
/// `timing` lays them out, the present slots in order: QR (Q, R) or (R); eigh (w, V) or
/// (w); SVD (U, S, Vh) or (S).
pub fn max_error<T: Real>(v: Variant, a: &Tensor<T>, outs: &[Tensor<T>], samples: usize) -> f64 {
    let (batch, m, n) = (a.shape[0], a.shape[1], a.shape[2]);
    let k = m.min(n);
    let mut worst = 0.0f64;
    for b in sampled(batch, samples) {
        let am = mat(a, b, m, n);
        let e = match v {
            Variant::QrReduced | Variant::QrComplete => {
                let qc = if v == Variant::QrComplete { m } else { k };
                let q = mat(&outs[0], b, m, qc);
                let r = mat(&outs[1], b, qc, n);
                rel(&am, &(&q * &r)).max(orth_err(&q)).max(below(&r))
            }
            // R alone: R^T R is A^T A (whatever the rows' signs), compared on a spread
            // of its columns (the whole n x n took 30 s at 512 x 16384).
            Variant::QrR => {
                let r = mat(&outs[0], b, k, n);
                let cols = sampled(n, GRAM_COLUMNS);
                let of = |x: &Mat<f64>| Mat::from_fn(x.nrows(), cols.len(), |i, j| x[(i, cols[j])]);
                let gram = am.transpose() * of(&am);
                rel(&gram, &(r.transpose() * of(&r))).max(below(&r))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// R alone of a wide matrix, checked on a spread of its Gram matrix's columns: exact R
    /// passes, and an error in a column left out of the spread is still seen (through the
    /// rows of R^T R it feeds).
    #[test]
    fn r_alone_of_a_wide_matrix_is_checked_through_its_sampled_gram_columns() {
        let (m, n) = (6, 200);
        // Upper trapezoidal already: its R is itself (Q the identity).
        let data: Vec<f64> = (0..m * n)
            .map(|x| {
                let (i, j) = (x / n, x % n);
                if j < i {
                    0.0
                } else {
                    ((x * 7919 % 1000) as f64 / 500.0) - 1.0
                }
            })
            .collect();
        let a = Tensor {
            data,
            shape: vec![1, m, n],
        };
        let bound = bound::<f64>(Op::Qr, n);
        assert!(max_error(Variant::QrR, &a, std::slice::from_ref(&a), 1) <= bound);
        assert!(!sampled(n, GRAM_COLUMNS).contains(&7));
        let mut wrong = a.clone();
        wrong.data[2 * n + 7] += 1e-6;
        assert!(max_error(Variant::QrR, &a, &[wrong], 1) > bound);
    }
}
