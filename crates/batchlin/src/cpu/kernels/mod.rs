//! Small-matrix CPU kernels: one matrix per call, one core, no heap allocation.
//!
//! The batch driver hands each kernel a contiguous column-major work buffer (leading
//! dimension = rows), already scaled by a power of two so that its largest |entry| lies in
//! [0.5, 1) and checked finite. The kernels:
//!
//! - [`qr_factor`] / [`qr_form_q`]: unblocked Householder QR (LAPACK geqr2 / org2r).
//! - [`eigh`]: Householder tridiagonalisation (sytd2, full symmetric, padded columns) + implicit QL with
//!   Wilkinson shifts (EISPACK tql2), rotations applied to contiguous eigenvector columns.
//! - [`svd`]: Householder bidiagonalisation (gebd2) + Golub-Reinsch implicit-shift QR on the
//!   bidiagonal, rotations applied to contiguous columns of U and V.
//! - [`tridiag_dc_eigh`]: divide and conquer on a symmetric tridiagonal (QL leaves, faer's
//!   matmul for the merges), and `eigh_dense` around it with faer's tridiagonalisation and
//!   back-transformation: the `cpu-faer` eigh with eigenvectors.
//!
//! All inner loops are over contiguous columns. Each public kernel dispatches at run time
//! to a copy compiled with AVX2+FMA (x86_64) or, failing that, to a portable copy; the
//! generic bodies take a `const F: bool` saying whether fused multiply-add is cheap.

pub(crate) mod chunks;
pub mod golub_kahan_svd;
pub mod householder_qr;
pub mod tridiag_dc_eigh;
pub mod tridiag_ql_eigh;

pub use golub_kahan_svd::{svd, svd_pair, svd_scratch_len};
pub use householder_qr::{padded_ld, qr_factor, qr_factor_padded, qr_form_q, qr_form_q_padded};
pub use tridiag_ql_eigh::{eigh, eigh_scratch_len};

use crate::Real;

/// What an iterative kernel reports: sweeps/iterations taken and whether it converged.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KernelStatus {
    pub iterations: u32,
    pub converged: bool,
}

/// Whether the AVX2+FMA copies of the kernels can run here (cached by std).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn has_avx2_fma() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

/// `a * b + c`, fused when `F` (only set in the copies compiled with FMA available).
#[inline(always)]
pub(crate) fn fma<T: Real, const F: bool>(a: T, b: T, c: T) -> T {
    if F {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// `sqrt(a^2 + b^2)` without the cost of libm's hypot when the plain formula is safe.
#[inline(always)]
pub(crate) fn fast_hypot<T: Real>(a: T, b: T) -> T {
    let s = a * a + b * b;
    // Safe when s is a normal finite number: no overflow and no harmful underflow.
    if s >= T::MIN_POSITIVE && s < T::from_f64(1e30) {
        s.sqrt()
    } else {
        a.hypot(b)
    }
}

/// `|a|` with the sign of `b` (b = 0 counts as positive).
#[inline(always)]
pub(crate) fn sign<T: Real>(a: T, b: T) -> T {
    if b >= T::ZERO {
        a.abs()
    } else {
        -a.abs()
    }
}

const LANES: usize = 8;

/// Chunk length of the padded kernels: columns are a whole number of chunks long.
pub(crate) const CHUNK: usize = 8;

/// Dot product over the common length, with independent accumulators so that LLVM vectorises.
#[inline(always)]
pub(crate) fn dot<T: Real, const F: bool>(x: &[T], y: &[T]) -> T {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &y[..n]);
    let xc = x.chunks_exact(LANES);
    let yc = y.chunks_exact(LANES);
    let (xr, yr) = (xc.remainder(), yc.remainder());
    let mut acc = [T::ZERO; LANES];
    for (a, b) in xc.zip(yc) {
        for k in 0..LANES {
            acc[k] = fma::<T, F>(a[k], b[k], acc[k]);
        }
    }
    let mut s = T::ZERO;
    for (a, b) in xr.iter().zip(yr) {
        s = fma::<T, F>(*a, *b, s);
    }
    let a0 = (acc[0] + acc[4]) + (acc[1] + acc[5]);
    let a1 = (acc[2] + acc[6]) + (acc[3] + acc[7]);
    (a0 + a1) + s
}

/// Sum of squares.
#[inline(always)]
pub(crate) fn sumsq<T: Real, const F: bool>(x: &[T]) -> T {
    dot::<T, F>(x, x)
}

/// `y += alpha * x` over the common length.
#[inline(always)]
pub(crate) fn axpy<T: Real, const F: bool>(alpha: T, x: &[T], y: &mut [T]) {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &mut y[..n]);
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi = fma::<T, F>(alpha, *xi, *yi);
    }
}

/// `x *= alpha`.
#[inline(always)]
pub(crate) fn scal<T: Real>(alpha: T, x: &mut [T]) {
    for xi in x.iter_mut() {
        *xi *= alpha;
    }
}

/// Two distinct columns `i < j` (each `len` long, leading dimension `ld`) of a column-major
/// buffer, mutably.
#[inline(always)]
pub(crate) fn two_cols<T>(
    a: &mut [T],
    ld: usize,
    len: usize,
    i: usize,
    j: usize,
) -> (&mut [T], &mut [T]) {
    debug_assert!(i < j);
    let (lo, hi) = a.split_at_mut(j * ld);
    (&mut lo[i * ld..i * ld + len], &mut hi[..len])
}

/// Rescale each `len`-long column (leading dimension `len`) of `a` to unit 2-norm. Plane
/// rotations with tiny angles round with a bias (c = 1 exactly while s != 0), which inflates
/// accumulated column norms over many rotations; this undoes that drift at O(len x cols).
#[inline(always)]
pub(crate) fn normalize_cols<T: Real, const F: bool>(a: &mut [T], len: usize) {
    if len == 0 {
        return;
    }
    for c in a.chunks_exact_mut(len) {
        let nn = sumsq::<T, F>(c);
        if nn > T::ZERO {
            scal(T::ONE / nn.sqrt(), c);
        }
    }
}

/// LAPACK larfg: given `alpha` and `x`, find `beta`, `tau` and overwrite `x` with `v[1..]` so
/// that `(I - tau v v^T) [alpha; x] = [beta; 0]`, `v[0] = 1`. A sub-vector whose sum of squares
/// underflows gets `tau = 0` (no reflection, `x` left as is).
#[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN-safe on purpose
#[inline(always)]
pub(crate) fn larfg<T: Real, const F: bool>(alpha: T, x: &mut [T]) -> (T, T) {
    let xnorm2 = sumsq::<T, F>(x);
    if !(xnorm2 > T::MIN_POSITIVE) {
        return (alpha, T::ZERO);
    }
    let beta = -sign(fast_hypot(alpha, xnorm2.sqrt()), alpha);
    let tau = (beta - alpha) / beta;
    scal(T::ONE / (alpha - beta), x);
    (beta, tau)
}

/// Apply `H = I - tau v v^T` (`v = [1; v_rest]`) from the left to the column `c`
/// (`c.len() == 1 + v_rest.len()`).
#[inline(always)]
pub(crate) fn larf_col<T: Real, const F: bool>(tau: T, v_rest: &[T], c: &mut [T]) {
    let (c0, cr) = c.split_first_mut().unwrap();
    let w = tau * (*c0 + dot::<T, F>(v_rest, cr));
    *c0 -= w;
    axpy::<T, F>(-w, v_rest, cr);
}

/// LAPACK org2r in place on a column-major `m x qc` block with leading dimension `ld`
/// (`a[0]` is the block's (0, 0)): on entry columns `0..k` hold reflector `i` below row `i`
/// (`v_i[i] = 1` implicit), `tau[i]` its scalar; on exit the block holds the first `qc`
/// columns of `H_0 ... H_{k-1}`. Requires `k <= qc <= m`.
#[inline(always)]
pub(crate) fn org2r_in_place<T: Real, const F: bool>(
    m: usize,
    qc: usize,
    k: usize,
    a: &mut [T],
    ld: usize,
    tau: &[T],
) {
    for j in k..qc {
        let col = &mut a[j * ld..j * ld + m];
        col.fill(T::ZERO);
        col[j] = T::ONE;
    }
    for i in (0..k).rev() {
        let t = tau[i];
        let split = ((i + 1) * ld).min(a.len());
        let (left, right) = a.split_at_mut(split);
        let vcol = &mut left[i * ld..i * ld + m];
        if t != T::ZERO {
            let v_rest = &vcol[i + 1..m];
            for j in 0..qc - i - 1 {
                larf_col::<T, F>(t, v_rest, &mut right[j * ld + i..j * ld + m]);
            }
        }
        scal(-t, &mut vcol[i + 1..m]);
        vcol[i] = T::ONE - t;
        vcol[..i].fill(T::ZERO);
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Shared helpers for the kernel tests: random and structured inputs, f64 checks.
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use rand_distr::StandardNormal;

    pub fn rng(seed: u64) -> StdRng {
        StdRng::seed_from_u64(seed)
    }

    /// Column-major m x n with N(0,1) entries.
    pub fn randn(r: &mut StdRng, m: usize, n: usize) -> Vec<f64> {
        (0..m * n)
            .map(|_| r.sample::<f64, _>(StandardNormal))
            .collect()
    }

    /// Random orthogonal n x n (QR of a Gaussian via faer).
    pub fn rand_orth(r: &mut StdRng, n: usize) -> Vec<f64> {
        if n == 0 {
            return vec![];
        }
        let g = randn(r, n, n);
        let m = faer::Mat::<f64>::from_fn(n, n, |i, j| g[i + j * n]);
        let q = m.qr().compute_Q();
        let mut out = vec![0.0; n * n];
        for j in 0..n {
            for i in 0..n {
                out[i + j * n] = q[(i, j)];
            }
        }
        out
    }

    /// C = A (m x k) * B (k x n), column-major.
    pub fn matmul(m: usize, k: usize, n: usize, a: &[f64], b: &[f64]) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for j in 0..n {
            for l in 0..k {
                let blj = b[l + j * k];
                for i in 0..m {
                    c[i + j * m] += a[i + l * m] * blj;
                }
            }
        }
        c
    }

    pub fn transpose(m: usize, n: usize, a: &[f64]) -> Vec<f64> {
        let mut t = vec![0.0; m * n];
        for j in 0..n {
            for i in 0..m {
                t[j + i * n] = a[i + j * m];
            }
        }
        t
    }

    pub fn fro(a: &[f64]) -> f64 {
        a.iter().map(|x| x * x).sum::<f64>().sqrt()
    }

    /// ||Q^T Q - I||_F for m x k column-major Q.
    pub fn orth_err(m: usize, k: usize, q: &[f64]) -> f64 {
        let qt = transpose(m, k, q);
        let mut g = matmul(k, m, k, &qt, q);
        for i in 0..k {
            g[i + i * k] -= 1.0;
        }
        fro(&g)
    }

    /// Scale by a power of two so that max |entry| is in [0.5, 1), as the driver does.
    pub fn driver_scale(a: &mut [f64]) {
        let mx = a.iter().fold(0.0f64, |s, x| s.max(x.abs()));
        if mx > 0.0 {
            let e = mx.log2().floor() as i32 + 1;
            let f = 2f64.powi(-e);
            for x in a.iter_mut() {
                *x *= f;
            }
        }
    }

    /// General m x n test matrices: random and structured.
    pub fn general_cases(r: &mut StdRng, m: usize, n: usize) -> Vec<(&'static str, Vec<f64>)> {
        let k = m.min(n);
        let mut out = vec![];
        out.push(("random", randn(r, m, n)));
        out.push(("zeros", vec![0.0; m * n]));
        let mut id = vec![0.0; m * n];
        for i in 0..k {
            id[i + i * m] = 1.0;
        }
        out.push(("identity", id));
        out.push(("ones", vec![1.0; m * n]));
        let x = randn(r, m, 1);
        let y = randn(r, n, 1);
        out.push(("rank1", matmul(m, 1, n, &x, &y)));
        // U diag(s) V^T with prescribed spectra
        let spectra: Vec<(&'static str, Vec<f64>)> = vec![
            (
                "graded",
                (0..k)
                    .map(|i| 10f64.powf(4.0 - 8.0 * i as f64 / (k.max(2) - 1) as f64))
                    .collect(),
            ),
            (
                "repeated",
                (0..k).map(|i| if i < k / 2 { 1.0 } else { 0.5 }).collect(),
            ),
            ("clustered", (0..k).map(|i| 1.0 + 1e-6 * i as f64).collect()),
            (
                "rankdef",
                (0..k)
                    .map(|i| if i < k / 2 { 1.0 + i as f64 } else { 0.0 })
                    .collect(),
            ),
        ];
        for (name, s) in spectra {
            let u = rand_orth(r, m);
            let v = rand_orth(r, n);
            let mut us = vec![0.0; m * n];
            for j in 0..k {
                for i in 0..m {
                    us[i + j * m] = u[i + j * m] * s[j];
                }
            }
            let vt = transpose(n, n, &v);
            out.push((name, matmul(m, n, n, &us, &vt)));
        }
        out
    }

    /// Symmetric n x n test matrices: random and structured.
    pub fn symmetric_cases(r: &mut StdRng, n: usize) -> Vec<(&'static str, Vec<f64>)> {
        let mut out = vec![];
        let g = randn(r, n, n);
        let gt = transpose(n, n, &g);
        out.push(("random", g.iter().zip(&gt).map(|(a, b)| a + b).collect()));
        out.push(("zeros", vec![0.0; n * n]));
        let mut id = vec![0.0; n * n];
        for i in 0..n {
            id[i + i * n] = 1.0;
        }
        out.push(("identity", id));
        out.push(("ones", vec![1.0; n * n]));
        let x = randn(r, n, 1);
        out.push(("rank1", matmul(n, 1, n, &x, &x)));
        let spectra: Vec<(&'static str, Vec<f64>)> = vec![
            (
                "graded",
                (0..n)
                    .map(|i| {
                        (if i % 2 == 0 { 1.0 } else { -1.0 })
                            * 10f64.powf(4.0 - 8.0 * i as f64 / (n.max(2) - 1) as f64)
                    })
                    .collect(),
            ),
            (
                "repeated",
                (0..n).map(|i| if i < n / 2 { 1.0 } else { -0.5 }).collect(),
            ),
            ("clustered", (0..n).map(|i| 1.0 + 1e-6 * i as f64).collect()),
            (
                "tridiag-ish",
                (0..n).map(|i| i as f64 - n as f64 / 2.0).collect(),
            ),
        ];
        for (name, s) in spectra {
            let q = rand_orth(r, n);
            let mut qs = q.clone();
            for j in 0..n {
                for i in 0..n {
                    qs[i + j * n] *= s[j];
                }
            }
            let qt = transpose(n, n, &q);
            let mut a = matmul(n, n, n, &qs, &qt);
            // exact symmetry
            for j in 0..n {
                for i in 0..j {
                    let v = 0.5 * (a[i + j * n] + a[j + i * n]);
                    a[i + j * n] = v;
                    a[j + i * n] = v;
                }
            }
            out.push((name, a));
        }
        // a tridiagonal (1,2,1)-like Wilkinson matrix
        let mut w = vec![0.0; n * n];
        for i in 0..n {
            w[i + i * n] = (i as f64 - (n as f64 - 1.0) / 2.0).abs();
            if i + 1 < n {
                w[i + 1 + i * n] = 1.0;
                w[i + (i + 1) * n] = 1.0;
            }
        }
        out.push(("wilkinson", w));
        out
    }

    static MAXES: std::sync::Mutex<Vec<(String, f64)>> = std::sync::Mutex::new(Vec::new());

    /// Track the largest value seen under `key` (errors, for the report).
    pub fn note(key: String, v: f64) {
        let mut g = MAXES.lock().unwrap();
        match g.iter_mut().find(|(k, _)| *k == key) {
            Some((_, x)) => *x = x.max(v),
            None => g.push((key, v)),
        }
    }

    /// Print the largest values noted under keys starting with `prefix`.
    pub fn dump(prefix: &str) {
        let g = MAXES.lock().unwrap();
        for (k, v) in g.iter().filter(|(k, _)| k.starts_with(prefix)) {
            eprintln!("max {k}: {v:.3e}");
        }
    }

    pub const SIZES: &[usize] = &[0, 1, 2, 3, 7, 8, 16, 17, 31, 32, 33, 48, 64];
}
