//! The plain-faer peer: what a Rust user writes without batchlin. A loop over the batch,
//! each matrix copied into a faer `Mat` and decomposed with faer's high-level API (which
//! uses faer's default parallelism inside each matrix).

use batchlin::{Op, Real, Tensor};
use faer::Mat;

/// Decompose every matrix of `a` (shape [batch, m, n], row-major) and write results in
/// the layout `bench` uses: QR (Q, R), eigh (w, V), SVD (U, S, Vh).
pub fn run<T: Real>(
    op: Op,
    a: &Tensor<T>,
    x: &mut Tensor<T>,
    y: &mut Tensor<T>,
    z: Option<&mut Tensor<T>>,
) {
    let (batch, m, n) = (a.shape[0], a.shape[1], a.shape[2]);
    let k = m.min(n);
    let mut z = z;
    for b in 0..batch {
        let am = Mat::<T>::from_fn(m, n, |i, j| a.data[b * m * n + i * n + j]);
        match op {
            Op::Qr => {
                let qr = am.qr();
                let q = qr.compute_thin_Q();
                let r = qr.thin_R();
                copy_out(x, b, &q.as_ref());
                copy_out(y, b, &r);
            }
            Op::Eigh => {
                let e = am
                    .self_adjoint_eigen(faer::Side::Lower)
                    .expect("eigh converges on random input");
                let s = e.S();
                for i in 0..n {
                    x.data[b * n + i] = s[i];
                }
                copy_out(y, b, &e.U());
            }
            Op::Svd => {
                let s = am.thin_svd().expect("svd converges on random input");
                copy_out(x, b, &s.U());
                let sv = s.S();
                for i in 0..k {
                    y.data[b * k + i] = sv[i];
                }
                let vh = s.V().transpose().to_owned();
                copy_out(z.as_deref_mut().expect("Vh"), b, &vh.as_ref());
            }
        }
    }
}

fn copy_out<T: Real>(t: &mut Tensor<T>, b: usize, m: &faer::MatRef<'_, T>) {
    let (r, c) = (m.nrows(), m.ncols());
    for i in 0..r {
        for j in 0..c {
            t.data[b * r * c + i * c + j] = m[(i, j)];
        }
    }
}
