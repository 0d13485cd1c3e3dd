//! Shared helpers for the integration tests: a small f64 matrix type, random and
//! structured test matrices, strided input/output buffers (with sentinels around the
//! views), independent float64 references (faer's high-level API) and the accuracy checks
//! of docs/ARCHITECTURE.md ("Numerics every backend keeps").
#![allow(dead_code)]

use batchlin::{Backend, BatchMut, BatchRef, Info, Real, Tensor};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

// ---------------------------------------------------------------------------------------
// Randomness

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

pub fn randn(rng: &mut StdRng) -> f64 {
    rng.sample::<f64, _>(StandardNormal)
}

// ---------------------------------------------------------------------------------------
// A dense f64 matrix, row-major. Everything the tests check is computed in f64.

#[derive(Clone, Debug, PartialEq)]
pub struct M {
    pub r: usize,
    pub c: usize,
    pub d: Vec<f64>,
}

impl M {
    pub fn zeros(r: usize, c: usize) -> M {
        M {
            r,
            c,
            d: vec![0.0; r * c],
        }
    }
    pub fn eye(r: usize, c: usize) -> M {
        M::from_fn(r, c, |i, j| if i == j { 1.0 } else { 0.0 })
    }
    pub fn from_fn(r: usize, c: usize, f: impl Fn(usize, usize) -> f64) -> M {
        let mut d = Vec::with_capacity(r * c);
        for i in 0..r {
            for j in 0..c {
                d.push(f(i, j));
            }
        }
        M { r, c, d }
    }
    #[inline]
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.d[i * self.c + j]
    }
    #[inline]
    pub fn set(&mut self, i: usize, j: usize, v: f64) {
        self.d[i * self.c + j] = v;
    }
    pub fn t(&self) -> M {
        M::from_fn(self.c, self.r, |i, j| self.at(j, i))
    }
    pub fn mul(&self, b: &M) -> M {
        assert_eq!(self.c, b.r, "inner dimensions");
        let mut out = M::zeros(self.r, b.c);
        for i in 0..self.r {
            for k in 0..self.c {
                let a = self.at(i, k);
                if a == 0.0 {
                    continue;
                }
                let row = &b.d[k * b.c..(k + 1) * b.c];
                let o = &mut out.d[i * b.c..(i + 1) * b.c];
                for (x, y) in o.iter_mut().zip(row) {
                    *x += a * y;
                }
            }
        }
        out
    }
    pub fn sub(&self, b: &M) -> M {
        assert_eq!((self.r, self.c), (b.r, b.c));
        M {
            r: self.r,
            c: self.c,
            d: self.d.iter().zip(&b.d).map(|(x, y)| x - y).collect(),
        }
    }
    pub fn scale(&self, s: f64) -> M {
        M {
            r: self.r,
            c: self.c,
            d: self.d.iter().map(|x| x * s).collect(),
        }
    }
    pub fn frob(&self) -> f64 {
        // Scaled so that 1e37-sized f32 data and 1e-30-sized data are fine in f64 anyway.
        self.d.iter().map(|x| x * x).sum::<f64>().sqrt()
    }
    pub fn max_abs(&self) -> f64 {
        self.d.iter().fold(0.0, |m, x| m.max(x.abs()))
    }
    pub fn cols(&self, c0: usize, c1: usize) -> M {
        M::from_fn(self.r, c1 - c0, |i, j| self.at(i, c0 + j))
    }
    pub fn rows(&self, r0: usize, r1: usize) -> M {
        M::from_fn(r1 - r0, self.c, |i, j| self.at(r0 + i, j))
    }
    pub fn col(&self, j: usize) -> Vec<f64> {
        (0..self.r).map(|i| self.at(i, j)).collect()
    }
    pub fn diag(v: &[f64]) -> M {
        M::from_fn(v.len(), v.len(), |i, j| if i == j { v[i] } else { 0.0 })
    }
    pub fn all_finite(&self) -> bool {
        self.d.iter().all(|x| x.is_finite())
    }
    pub fn all_nan(&self) -> bool {
        self.d.iter().all(|x| x.is_nan())
    }
    /// Round every entry to T and back (what the library actually sees).
    pub fn round_to<T: Real>(&self) -> M {
        M {
            r: self.r,
            c: self.c,
            d: self.d.iter().map(|&x| T::from_f64(x).to_f64()).collect(),
        }
    }
}

/// Bitwise equality of two lists of matrices (NaN equals NaN).
pub fn same_bits(a: &[M], b: &[M]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.r == y.r
                && x.c == y.c
                && x.d
                    .iter()
                    .zip(&y.d)
                    .all(|(p, q)| p.to_bits() == q.to_bits())
        })
}

pub fn assert_same_bits(a: &[M], b: &[M], ctx: &str) {
    if !same_bits(a, b) {
        let mut worst = (0usize, 0usize, 0.0f64);
        for (k, (x, y)) in a.iter().zip(b).enumerate() {
            for (i, (p, q)) in x.d.iter().zip(&y.d).enumerate() {
                let d = (p - q).abs();
                if d > worst.2 || (p.is_nan() != q.is_nan()) {
                    worst = (k, i, if d.is_nan() { f64::INFINITY } else { d });
                }
            }
        }
        panic!(
            "{ctx}: results differ (lens {} vs {}; worst at matrix {} element {}: |diff| {:e})",
            a.len(),
            b.len(),
            worst.0,
            worst.1,
            worst.2
        );
    }
}

// ---------------------------------------------------------------------------------------
// Test matrices

pub fn gaussian(rng: &mut StdRng, r: usize, c: usize) -> M {
    let d = (0..r * c).map(|_| randn(rng)).collect();
    M { r, c, d }
}

/// A random n x n orthogonal matrix (modified Gram-Schmidt, twice, on a Gaussian one).
pub fn orthogonal(rng: &mut StdRng, n: usize) -> M {
    let g = gaussian(rng, n, n);
    let mut cols: Vec<Vec<f64>> = (0..n).map(|j| g.col(j)).collect();
    for j in 0..n {
        for _pass in 0..2 {
            for p in 0..j {
                let d: f64 = cols[j].iter().zip(&cols[p]).map(|(a, b)| a * b).sum();
                let cp = cols[p].clone();
                for (x, y) in cols[j].iter_mut().zip(&cp) {
                    *x -= d * y;
                }
            }
        }
        let nrm = cols[j].iter().map(|x| x * x).sum::<f64>().sqrt();
        cols[j].iter_mut().for_each(|x| *x /= nrm);
    }
    M::from_fn(n, n, |i, j| cols[j][i])
}

/// Q diag(w) Q^T with a random orthogonal Q, symmetrised exactly.
pub fn sym_with_spectrum(rng: &mut StdRng, w: &[f64]) -> M {
    let n = w.len();
    let q = orthogonal(rng, n);
    let a = q.mul(&M::diag(w)).mul(&q.t());
    M::from_fn(n, n, |i, j| 0.5 * (a.at(i, j) + a.at(j, i)))
}

/// A random symmetric matrix (Gaussian, symmetrised).
pub fn sym_gaussian(rng: &mut StdRng, n: usize) -> M {
    let g = gaussian(rng, n, n);
    M::from_fn(n, n, |i, j| 0.5 * (g.at(i, j) + g.at(j, i)))
}

/// U[:, :k] diag(s) V[:, :k]^T with random orthogonal U, V; k = s.len() <= min(m, n).
pub fn with_singular_values(rng: &mut StdRng, m: usize, n: usize, s: &[f64]) -> M {
    let k = s.len();
    assert!(k <= m.min(n));
    let u = orthogonal(rng, m).cols(0, k);
    let v = orthogonal(rng, n).cols(0, k);
    u.mul(&M::diag(s)).mul(&v.t())
}

/// Rank-one u v^T with Gaussian u, v.
pub fn rank_one(rng: &mut StdRng, m: usize, n: usize) -> M {
    let u = gaussian(rng, m, 1);
    let v = gaussian(rng, 1, n);
    u.mul(&v)
}

/// Geometric sequence from `hi` down to `lo` (n values).
pub fn graded(n: usize, hi: f64, lo: f64) -> Vec<f64> {
    if n == 1 {
        return vec![hi];
    }
    (0..n)
        .map(|i| hi * (lo / hi).powf(i as f64 / (n - 1) as f64))
        .collect()
}

/// r singular values (or eigenvalues) from 1 down in pairs: well apart between pairs, and
/// within a pair 1e-3, 1e-5, 1e-7 apart or equal, in turn (the fast paths of the `bidiag`
/// SVD and `block` eigh kernels orthogonalise vectors of values closer than 1e-2 of the
/// largest and decline values that coincide).
pub fn close_pairs(r: usize) -> Vec<f64> {
    let mut s = vec![1.0];
    for k in 1..r {
        let gap = if k % 2 == 1 {
            [1e-3, 1e-5, 1e-7, 0.0][(k / 2) % 4]
        } else {
            0.5 / r as f64
        };
        s.push(s[k - 1] - gap);
    }
    s
}

// ---------------------------------------------------------------------------------------
// Layouts: strides for a shape, built innermost-first with optional gaps.

/// Dimension order (innermost first), an additive gap per position, and a base offset.
#[derive(Clone, Debug)]
pub struct Lay {
    pub name: &'static str,
    pub order: Vec<usize>,
    pub gaps: Vec<usize>,
    pub offset: usize,
}

impl Lay {
    pub fn row_major(nd: usize) -> Lay {
        Lay {
            name: "row-major",
            order: (0..nd).rev().collect(),
            gaps: vec![0; nd],
            offset: 0,
        }
    }
    /// Each matrix column-major (a transposed row-major array), batch outermost.
    pub fn col_major(nd: usize) -> Lay {
        if nd < 2 {
            return Lay {
                name: "col-major",
                ..Lay::row_major(nd)
            };
        }
        let mut order = vec![nd - 2, nd - 1];
        order.extend((0..nd - 2).rev());
        Lay {
            name: "col-major",
            order,
            gaps: vec![0; nd],
            offset: 0,
        }
    }
    /// Row-major with padding after every row and every matrix, and a base offset.
    pub fn padded(nd: usize) -> Lay {
        let gaps = (0..nd).map(|p| [0, 3, 5, 2, 1][p % 5]).collect();
        Lay {
            name: "padded",
            order: (0..nd).rev().collect(),
            gaps,
            offset: 5,
        }
    }
    /// Column-major, no dimension contiguous (every stride has a gap): a slice of a larger
    /// buffer such as a[..., ::2, ::3].
    pub fn scattered(nd: usize) -> Lay {
        let mut l = Lay::col_major(nd);
        l.name = "scattered";
        l.gaps = (0..nd).map(|p| [1, 2, 4, 3, 1][p % 5]).collect();
        l.offset = 7;
        l
    }
    /// The batch dimensions innermost, the matrix dimensions outermost (a permuted
    /// `[m, n, batch]` array), the inner batch dimension outermost of the batch ones.
    pub fn batch_inner(nd: usize) -> Lay {
        if nd < 3 {
            return Lay {
                name: "batch-inner",
                ..Lay::col_major(nd)
            };
        }
        let nb = nd - 2;
        let mut order: Vec<usize> = (0..nb).collect();
        order.extend([nd - 1, nd - 2]);
        Lay {
            name: "batch-inner",
            order,
            gaps: vec![0; nd],
            offset: 1,
        }
    }
    pub fn random(rng: &mut StdRng, nd: usize) -> Lay {
        let mut order: Vec<usize> = (0..nd).collect();
        for i in (1..nd).rev() {
            let j = rng.random_range(0..=i);
            order.swap(i, j);
        }
        let gaps = (0..nd)
            .map(|_| {
                if rng.random_bool(0.5) {
                    0
                } else {
                    rng.random_range(1..4)
                }
            })
            .collect();
        Lay {
            name: "random",
            order,
            gaps,
            offset: rng.random_range(0..4),
        }
    }
    /// Every named layout, for a batch of matrices with `nd` dimensions in all.
    pub fn all(nd: usize) -> Vec<Lay> {
        vec![
            Lay::row_major(nd),
            Lay::col_major(nd),
            Lay::padded(nd),
            Lay::scattered(nd),
            Lay::batch_inner(nd),
        ]
    }
    /// Strides for `shape`, and the buffer length (offset + span + trailing slack).
    pub fn strides(&self, shape: &[usize]) -> (Vec<isize>, usize) {
        assert_eq!(shape.len(), self.order.len());
        let mut st = vec![0isize; shape.len()];
        let mut acc = 1usize;
        for (p, &d) in self.order.iter().enumerate() {
            let s = acc + self.gaps[p];
            st[d] = s as isize;
            acc = s * shape[d].max(1);
        }
        let span: usize = if shape.contains(&0) {
            0
        } else {
            shape
                .iter()
                .zip(&st)
                .map(|(&l, &s)| (l - 1) * s as usize)
                .sum::<usize>()
                + 1
        };
        (st, self.offset + span + 3)
    }
}

/// Flat row-major batch index -> element offset.
pub fn batch_offset(batch_shape: &[usize], batch_strides: &[isize], mut index: usize) -> isize {
    let mut off = 0isize;
    for d in (0..batch_shape.len()).rev() {
        let i = index % batch_shape[d];
        index /= batch_shape[d];
        off += i as isize * batch_strides[d];
    }
    off
}

pub fn full_shape(batch: &[usize], tail: &[usize]) -> Vec<usize> {
    let mut s = batch.to_vec();
    s.extend_from_slice(tail);
    s
}

/// An input buffer holding a batch of matrices in some layout; everything outside the
/// view is `fill` (NaN by default, so that any read outside the view shows up).
pub struct Input<T> {
    pub buf: Vec<T>,
    pub offset: usize,
    pub shape: Vec<usize>,
    pub strides: Vec<isize>,
    /// The matrices as the library sees them (rounded to T), row-major f64.
    pub mats: Vec<M>,
}

impl<T: Real> Input<T> {
    pub fn new(mats: &[M], batch: &[usize], rows: usize, cols: usize, lay: &Lay) -> Input<T> {
        Input::with_fill(mats, batch, rows, cols, lay, T::NAN)
    }
    pub fn with_fill(
        mats: &[M],
        batch: &[usize],
        rows: usize,
        cols: usize,
        lay: &Lay,
        fill: T,
    ) -> Input<T> {
        let count: usize = batch.iter().product();
        assert_eq!(mats.len(), count, "matrices for batch {batch:?}");
        let shape = full_shape(batch, &[rows, cols]);
        let (strides, len) = lay.strides(&shape);
        let mut inp = Input {
            buf: vec![fill; len],
            offset: lay.offset,
            shape,
            strides,
            mats: Vec::new(),
        };
        for (b, m) in mats.iter().enumerate() {
            assert_eq!((m.r, m.c), (rows, cols));
            for i in 0..rows {
                for j in 0..cols {
                    inp.set(b, i, j, T::from_f64(m.at(i, j)));
                }
            }
        }
        inp.mats = mats.iter().map(|m| m.round_to::<T>()).collect();
        inp
    }
    /// Contiguous row-major input.
    pub fn contiguous(mats: &[M], batch: &[usize], rows: usize, cols: usize) -> Input<T> {
        Input::new(mats, batch, rows, cols, &Lay::row_major(batch.len() + 2))
    }
    pub fn batch_shape(&self) -> &[usize] {
        &self.shape[..self.shape.len() - 2]
    }
    pub fn index(&self, b: usize, i: usize, j: usize) -> usize {
        let nb = self.shape.len() - 2;
        let off = self.offset as isize
            + batch_offset(&self.shape[..nb], &self.strides[..nb], b)
            + i as isize * self.strides[nb]
            + j as isize * self.strides[nb + 1];
        off as usize
    }
    /// Write one element of the buffer (without touching `mats`).
    pub fn set(&mut self, b: usize, i: usize, j: usize, v: T) {
        let k = self.index(b, i, j);
        self.buf[k] = v;
    }
    pub fn view(&self) -> BatchRef<'_, T> {
        BatchRef::new(&self.buf[self.offset..], &self.shape, &self.strides)
            .expect("test input view")
    }
}

/// An output buffer in some layout, filled with a sentinel outside (and inside) the view.
pub struct Out<T> {
    pub buf: Vec<T>,
    pub offset: usize,
    pub shape: Vec<usize>,
    pub strides: Vec<isize>,
    pub vectors: bool,
}

pub const SENTINEL: f64 = -7777.25;

impl<T: Real> Out<T> {
    /// A matrix output `[..batch, rows, cols]`.
    pub fn mats(batch: &[usize], rows: usize, cols: usize, lay: &Lay) -> Out<T> {
        let shape = full_shape(batch, &[rows, cols]);
        let (strides, len) = lay.strides(&shape);
        Out {
            buf: vec![T::from_f64(SENTINEL); len],
            offset: lay.offset,
            shape,
            strides,
            vectors: false,
        }
    }
    /// A vector output `[..batch, len]`.
    pub fn vecs(batch: &[usize], n: usize, lay: &Lay) -> Out<T> {
        let shape = full_shape(batch, &[n]);
        let (strides, len) = lay.strides(&shape);
        Out {
            buf: vec![T::from_f64(SENTINEL); len],
            offset: lay.offset,
            shape,
            strides,
            vectors: true,
        }
    }
    pub fn view(&mut self) -> BatchMut<'_, T> {
        let data = &mut self.buf[self.offset..];
        if self.vectors {
            BatchMut::new_vectors(data, &self.shape, &self.strides).expect("test output view")
        } else {
            BatchMut::new(data, &self.shape, &self.strides).expect("test output view")
        }
    }
    fn positions(&self) -> Vec<Vec<usize>> {
        // For each matrix, the buffer positions of its elements, row-major.
        let (nb, rows, cols) = if self.vectors {
            (self.shape.len() - 1, 1, self.shape[self.shape.len() - 1])
        } else {
            (
                self.shape.len() - 2,
                self.shape[self.shape.len() - 2],
                self.shape[self.shape.len() - 1],
            )
        };
        let (rs, cs) = if self.vectors {
            (0, self.strides[nb])
        } else {
            (self.strides[nb], self.strides[nb + 1])
        };
        let count: usize = self.shape[..nb].iter().product();
        (0..count)
            .map(|b| {
                let base =
                    self.offset as isize + batch_offset(&self.shape[..nb], &self.strides[..nb], b);
                let mut v = Vec::with_capacity(rows * cols);
                for i in 0..rows {
                    for j in 0..cols {
                        v.push((base + i as isize * rs + j as isize * cs) as usize);
                    }
                }
                v
            })
            .collect()
    }
    /// The matrices of the view (vectors as 1 x n), as f64.
    pub fn read(&self) -> Vec<M> {
        let (rows, cols) = if self.vectors {
            (1, self.shape[self.shape.len() - 1])
        } else {
            (
                self.shape[self.shape.len() - 2],
                self.shape[self.shape.len() - 1],
            )
        };
        self.positions()
            .into_iter()
            .map(|p| M {
                r: rows,
                c: cols,
                d: p.iter().map(|&k| self.buf[k].to_f64()).collect(),
            })
            .collect()
    }
    /// Nothing outside the view was written, and every element inside it was.
    pub fn check_written(&self, ctx: &str) {
        let mut inside = vec![false; self.buf.len()];
        for p in self.positions() {
            for k in p {
                inside[k] = true;
            }
        }
        for (k, x) in self.buf.iter().enumerate() {
            let sentinel = x.to_f64() == SENTINEL;
            if !inside[k] {
                assert!(
                    sentinel,
                    "{ctx}: element {k} outside the output view was written ({x})"
                );
            } else {
                assert!(
                    !sentinel,
                    "{ctx}: element {k} inside the output view was not written"
                );
            }
        }
    }
}

/// The matrices of a row-major tensor `[..., r, c]`.
pub fn tensor_mats<T: Real>(t: &Tensor<T>) -> Vec<M> {
    let nd = t.shape.len();
    assert!(nd >= 2);
    let (r, c) = (t.shape[nd - 2], t.shape[nd - 1]);
    let count: usize = t.shape[..nd - 2].iter().product();
    assert_eq!(t.data.len(), count * r * c);
    (0..count)
        .map(|b| M {
            r,
            c,
            d: t.data[b * r * c..(b + 1) * r * c]
                .iter()
                .map(|x| x.to_f64())
                .collect(),
        })
        .collect()
}

/// The vectors of a row-major tensor `[..., n]`, each as a 1 x n matrix.
pub fn tensor_vecs<T: Real>(t: &Tensor<T>) -> Vec<M> {
    let nd = t.shape.len();
    assert!(nd >= 1);
    let n = t.shape[nd - 1];
    let count: usize = t.shape[..nd - 1].iter().product();
    assert_eq!(t.data.len(), count * n);
    (0..count)
        .map(|b| M {
            r: 1,
            c: n,
            d: t.data[b * n..(b + 1) * n]
                .iter()
                .map(|x| x.to_f64())
                .collect(),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Independent float64 references (faer's high-level API on the f64 input).

pub fn faer_mat(a: &M) -> faer::Mat<f64> {
    faer::Mat::<f64>::from_fn(a.r, a.c, |i, j| a.at(i, j))
}

/// Eigenvalues (ascending) of the symmetric `a`, in f64.
pub fn ref_eigvals(a: &M) -> Vec<f64> {
    if a.r == 0 {
        return vec![];
    }
    let mut w = faer_mat(a)
        .self_adjoint_eigenvalues(faer::Side::Lower)
        .expect("f64 reference eigh");
    w.sort_by(|x, y| x.partial_cmp(y).unwrap());
    w
}

/// Singular values (descending) of `a`, in f64.
pub fn ref_singvals(a: &M) -> Vec<f64> {
    if a.r.min(a.c) == 0 {
        return vec![];
    }
    let mut s = faer_mat(a).singular_values().expect("f64 reference svd");
    s.sort_by(|x, y| y.partial_cmp(x).unwrap());
    s
}

// ---------------------------------------------------------------------------------------
// Tolerances and checks

/// The accuracy floor (docs/ARCHITECTURE.md, "Numerics"), for element type T (float32
/// values; float64 scaled by the ratio of the epsilons, 2.2e-16 / 1.2e-7).
#[derive(Copy, Clone, Debug)]
pub struct Tol {
    /// QR reconstruction and orthogonality.
    pub qr: f64,
    /// eigh and SVD residual, orthogonality and values (relative to ||A||).
    pub eig: f64,
    /// T's machine epsilon.
    pub eps: f64,
}

impl Tol {
    /// Bound on the relative orthogonality error (`orth_err`) of eigh and SVD vectors for
    /// matrices with largest dimension `l`: the floor, allowed sqrt(l/256) more above 256.
    pub fn orth_bound(&self, l: usize) -> f64 {
        self.eig * (l as f64 / 256.0).sqrt().max(1.0)
    }
}

/// The DESIGN floor, which every test holds every backend to.
pub fn tol<T: Real>() -> Tol {
    let eps = T::EPSILON.to_f64();
    let ratio = eps / f32::EPSILON as f64;
    Tol {
        qr: 1e-4 * ratio,
        eig: 2e-5 * ratio,
        eps,
    }
}

/// The same floor, by the name `accuracy_floor.rs` uses.
pub fn tol_floor<T: Real>() -> Tol {
    tol::<T>()
}

/// Orthogonality, relative Frobenius as docs/ARCHITECTURE.md ("Numerics") measures accuracy:
/// ||X^T X - I||_F / ||I||_F for X with orthonormal columns.
pub fn orth_err(x: &M) -> f64 {
    x.t().mul(x).sub(&M::eye(x.c, x.c)).frob() / (x.c.max(1) as f64).sqrt()
}

/// ||A||_F, or the smallest positive f64 for a zero matrix (so 0/0 cannot pass).
pub fn norm_or_tiny(a: &M) -> f64 {
    a.frob().max(f64::MIN_POSITIVE)
}

/// Each column's largest-|.| component is positive (exactly: the library applies the
/// convention to the values it writes).
pub fn check_column_signs(x: &M, ctx: &str) {
    for j in 0..x.c {
        let col = x.col(j);
        let pos = col.iter().cloned().fold(0.0, f64::max);
        let neg = col.iter().map(|v| -v).fold(0.0, f64::max);
        assert!(
            pos >= neg,
            "{ctx}: column {j} has its largest component negative ({neg} > {pos})"
        );
    }
}

pub fn assert_le(v: f64, bound: f64, what: &str, ctx: &str) {
    assert!(v <= bound, "{ctx}: {what} = {v:e} exceeds {bound:e}");
}

/// QR of one matrix: shapes by mode, R upper triangular (exactly) with diag >= 0,
/// ||A - QR|| / ||A|| and ||Q^T Q - I|| within tol.qr.
pub fn check_qr(a: &M, q: Option<&M>, r: &M, complete: bool, t: Tol, ctx: &str) {
    let (m, n) = (a.r, a.c);
    let k = m.min(n);
    let rr = if complete { m } else { k };
    assert_eq!((r.r, r.c), (rr, n), "{ctx}: R shape");
    assert!(r.all_finite(), "{ctx}: R not finite");
    for i in 0..r.r {
        for j in 0..r.c.min(i) {
            assert!(
                r.at(i, j) == 0.0,
                "{ctx}: R[{i},{j}] = {} below the diagonal",
                r.at(i, j)
            );
        }
        if i < n {
            assert!(r.at(i, i) >= 0.0, "{ctx}: R[{i},{i}] = {} < 0", r.at(i, i));
        }
    }
    // Rows of R past k (complete mode, tall A) are zero.
    for i in k..r.r {
        for j in 0..n {
            assert!(
                r.at(i, j) == 0.0,
                "{ctx}: R[{i},{j}] = {} past row k",
                r.at(i, j)
            );
        }
    }
    if let Some(q) = q {
        assert_eq!((q.r, q.c), (m, rr), "{ctx}: Q shape");
        assert!(q.all_finite(), "{ctx}: Q not finite");
        assert_le(orth_err(q), t.qr, "||Q^T Q - I||", ctx);
        let res = a.sub(&q.mul(r)).frob() / norm_or_tiny(a);
        if a.frob() == 0.0 {
            assert!(r.max_abs() == 0.0, "{ctx}: R of a zero matrix is not zero");
        } else {
            assert_le(res, t.qr, "||A - QR|| / ||A||", ctx);
        }
    } else {
        // R alone: R^T R = A^T A.
        let ata = a.t().mul(a);
        let rtr = r.t().mul(r);
        let na = a.frob();
        if na == 0.0 {
            assert!(r.max_abs() == 0.0, "{ctx}: R of a zero matrix is not zero");
        } else {
            assert_le(
                ata.sub(&rtr).frob() / (na * na),
                t.qr,
                "||A^T A - R^T R|| / ||A||^2",
                ctx,
            );
        }
    }
}

/// eigh of one symmetric matrix: w ascending, |w - w_ref| <= tol.eig ||A||, and with V,
/// ||AV - VW|| / ||A|| and ||V^T V - I|| within tol.eig and the sign convention.
pub fn check_eigh(a: &M, w: &[f64], v: Option<&M>, t: Tol, ctx: &str) {
    let n = a.r;
    assert_eq!(w.len(), n, "{ctx}: w length");
    assert!(
        w.iter().all(|x| x.is_finite()),
        "{ctx}: w not finite: {w:?}"
    );
    for i in 1..n {
        assert!(
            w[i - 1] <= w[i],
            "{ctx}: eigenvalues not ascending at {i}: {} > {}",
            w[i - 1],
            w[i]
        );
    }
    let na = a.frob();
    let wref = ref_eigvals(a);
    let err = w
        .iter()
        .zip(&wref)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    assert_le(err, t.eig * na, "max |w - w_ref|", ctx);
    if let Some(v) = v {
        assert_eq!((v.r, v.c), (n, n), "{ctx}: V shape");
        assert!(v.all_finite(), "{ctx}: V not finite");
        assert_le(orth_err(v), t.orth_bound(n), "||V^T V - I||", ctx);
        let res = a.mul(v).sub(&v.mul(&M::diag(w))).frob();
        assert_le(res, t.eig * na, "||AV - VW||", ctx);
        check_column_signs(v, ctx);
    }
}

/// Thin or full SVD of one matrix: S descending and nonnegative, |S - S_ref| <= tol.eig
/// ||A||, and with U and Vh, ||A - U S Vh|| / ||A||, orthogonality and the sign convention.
pub fn check_svd(a: &M, u: Option<&M>, s: &[f64], vh: Option<&M>, full: bool, t: Tol, ctx: &str) {
    let (m, n) = (a.r, a.c);
    let k = m.min(n);
    assert_eq!(s.len(), k, "{ctx}: S length");
    assert!(
        s.iter().all(|x| x.is_finite() && *x >= 0.0),
        "{ctx}: S not finite/nonnegative: {s:?}"
    );
    for i in 1..k {
        assert!(
            s[i - 1] >= s[i],
            "{ctx}: singular values not descending at {i}"
        );
    }
    let na = a.frob();
    let sref = ref_singvals(a);
    let err = s
        .iter()
        .zip(&sref)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    assert_le(err, t.eig * na, "max |S - S_ref|", ctx);
    match (u, vh) {
        (Some(u), Some(vh)) => {
            let (uc, vr) = if full { (m, n) } else { (k, k) };
            assert_eq!((u.r, u.c), (m, uc), "{ctx}: U shape");
            assert_eq!((vh.r, vh.c), (vr, n), "{ctx}: Vh shape");
            assert!(u.all_finite() && vh.all_finite(), "{ctx}: U/Vh not finite");
            let orth_tol = t.orth_bound(m.max(n));
            assert_le(orth_err(u), orth_tol, "||U^T U - I||", ctx);
            assert_le(orth_err(&vh.t()), orth_tol, "||Vh Vh^T - I||", ctx);
            let us = u.cols(0, k).mul(&M::diag(s)).mul(&vh.rows(0, k));
            let res = a.sub(&us).frob();
            assert_le(res, t.eig * na, "||A - U S Vh||", ctx);
            check_column_signs(u, ctx);
        }
        (None, None) => {}
        _ => panic!("{ctx}: U and Vh must come together"),
    }
}

// ---------------------------------------------------------------------------------------
// Backends and shapes

/// The backends a suite runs `op` on: every backend the kernel registry has a kernel of
/// `op` for, forced, where it is usable here (the CUDA backend needs a GPU: without one
/// it is left out, saying why), then the planner's choice (Auto).
pub fn backends(op: batchlin::Op) -> Vec<Backend> {
    let mut v: Vec<Backend> = batchlin::registry::backends(op)
        .into_iter()
        .filter(|&b| usable(b))
        .collect();
    v.push(Backend::Auto);
    v
}

/// The backends that have kernels for every operation (and Auto).
pub fn backends_for_every_op() -> Vec<Backend> {
    let all = batchlin::Op::ALL.map(backends);
    all[0]
        .iter()
        .copied()
        .filter(|b| all.iter().all(|v| v.contains(b)))
        .collect()
}

fn usable(b: Backend) -> bool {
    if b != Backend::Cuda {
        return true;
    }
    match batchlin::cuda::device(0) {
        Ok(_) => true,
        Err(e) => {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| eprintln!("cuda backend left out: no CUDA ({})", e.message()));
            false
        }
    }
}

/// Square sizes around every boundary: the small kernels' internal ones (their 8-element
/// chunks: 7/8/9, 16/17, 31/32/33) and the planner's crossovers to faer (plan.rs, per op
/// and dtype: 128, 160, 192, 256).
pub const SQUARE: [usize; 26] = [
    0, 1, 2, 3, 7, 8, 9, 16, 17, 31, 32, 33, 48, 49, 64, 65, 96, 97, 128, 129, 160, 161, 192, 193,
    256, 257,
];

/// Rectangular shapes: tall, wide, degenerate, and around the boundaries.
pub const RECT: [(usize, usize); 22] = [
    (65, 10),
    (10, 65),
    (97, 20),
    (20, 97),
    (40, 8),
    (8, 40),
    (1, 5),
    (5, 1),
    (100, 30),
    (30, 100),
    (0, 3),
    (3, 0),
    (33, 31),
    (31, 33),
    (32, 33),
    (33, 32),
    (129, 32),
    (128, 33),
    (70, 17),
    (17, 70),
    (2, 3),
    (65, 64),
];

pub fn infos_clean(info: &[Info], ctx: &str) {
    for (i, x) in info.iter().enumerate() {
        assert!(x.is_ok(), "{ctx}: matrix {i} info {:#x} not ok", x.0);
        assert!(!x.nonfinite(), "{ctx}: matrix {i} flagged NONFINITE");
    }
}

/// Which backend name to print.
pub fn bname(b: Backend) -> &'static str {
    b.name()
}

pub fn dtype_name<T: Real>() -> &'static str {
    T::DTYPE.name()
}

// ---------------------------------------------------------------------------------------
// Running the ops (allocating front door, with options), results as f64 matrices.

use batchlin::{Options, QrMode, Uplo};

pub struct QrRes {
    pub q: Option<Vec<M>>,
    pub r: Vec<M>,
    pub info: Vec<Info>,
}

pub fn run_qr<T: Real>(a: &BatchRef<T>, mode: QrMode, b: Backend) -> QrRes {
    run_qr_with(a, mode, &Options::with_backend(b))
}

/// `run_qr` with any options (a forced kernel).
pub fn run_qr_with<T: Real>(a: &BatchRef<T>, mode: QrMode, opts: &Options) -> QrRes {
    let (res, info) = batchlin::qr_ex(a, mode, opts)
        .unwrap_or_else(|e| panic!("qr_ex {mode:?} with {opts:?}: {e}"));
    QrRes {
        q: res.q.as_ref().map(tensor_mats),
        r: tensor_mats(&res.r),
        info,
    }
}

pub struct EighRes {
    pub w: Vec<M>,
    pub v: Option<Vec<M>>,
    pub info: Vec<Info>,
}

pub fn run_eigh<T: Real>(a: &BatchRef<T>, uplo: Uplo, vectors: bool, b: Backend) -> EighRes {
    try_eigh(a, uplo, vectors, &Options::with_backend(b))
        .unwrap_or_else(|e| panic!("eigh_ex {uplo:?} on {}: {e}", b.name()))
}

/// `run_eigh` with any options (a forced kernel), its error returned.
pub fn try_eigh<T: Real>(
    a: &BatchRef<T>,
    uplo: Uplo,
    vectors: bool,
    opts: &Options,
) -> batchlin::Result<EighRes> {
    let (res, info) = batchlin::eigh_ex(a, uplo, vectors, opts)?;
    assert_eq!(res.v.is_some(), vectors);
    Ok(EighRes {
        w: tensor_vecs(&res.w),
        v: res.v.as_ref().map(tensor_mats),
        info,
    })
}

pub struct SvdRes {
    pub u: Option<Vec<M>>,
    pub s: Vec<M>,
    pub vh: Option<Vec<M>>,
    pub info: Vec<Info>,
}

pub fn run_svd<T: Real>(a: &BatchRef<T>, full: bool, vectors: bool, b: Backend) -> SvdRes {
    run_svd_with(a, full, vectors, &Options::with_backend(b))
}

/// `run_svd` with any options (a forced kernel).
pub fn run_svd_with<T: Real>(a: &BatchRef<T>, full: bool, vectors: bool, opts: &Options) -> SvdRes {
    let (res, info) = batchlin::svd_ex(a, full, vectors, opts)
        .unwrap_or_else(|e| panic!("svd_ex full={full} with {opts:?}: {e}"));
    assert_eq!(res.u.is_some(), vectors);
    assert_eq!(res.vh.is_some(), vectors);
    SvdRes {
        u: res.u.as_ref().map(tensor_mats),
        s: tensor_vecs(&res.s),
        vh: res.vh.as_ref().map(tensor_mats),
        info,
    }
}

/// The backend the front door would pick for this call (what Auto must match bitwise).
pub fn routed<T: Real>(op: batchlin::Op, batch: usize, m: usize, n: usize) -> Backend {
    batchlin::backend_for(op, T::DTYPE, batch, m, n).expect("backend_for")
}

/// The backend a QR of `mode` on host data is routed to: what `Backend::Auto` stands for
/// in that call. Where this machine has a cost table (crates/batchlin/tables/), the choice
/// depends on the batch and the mode, so a property each backend has (a matrix's result is
/// the same in any batch; mode r's R is the reduced R) holds for Auto against the backend
/// it picked for the call.
pub fn routed_qr<T: Real>(mode: QrMode, batch: usize, m: usize, n: usize) -> Backend {
    routed_variant::<T>(batchlin::Operation::Qr(mode).variant(), batch, m, n)
}

/// The backend a call of `variant` on host data is routed to (as `routed_qr`: a cost
/// table routes each variant by its own rows, and by the batch).
pub fn routed_variant<T: Real>(
    variant: batchlin::Variant,
    batch: usize,
    m: usize,
    n: usize,
) -> Backend {
    let p = batchlin::Problem::new(variant, T::DTYPE, batch, m, n);
    batchlin::plan(&p, &batchlin::Place::Host, &Options::default())
        .expect("a plan")
        .backend
}

/// Options that run backend `b` on one kernel: for the CUDA backend the kernel its planner
/// takes for `variant` at (batch, m, n) of host data, forced; other backends as given (one
/// kernel an operation each). Comparisons bit for bit across batch sizes or modes compare
/// one kernel so: a GPU's cost table routes each batch size and mode by its own rows, and
/// a first call the table sends to cuSOLVER may take its next choice (`cold_detour`). On
/// an H100 with its table built in (docs/results/h100/2026-12-07-gpu-suites) the
/// comparisons through the planner compared two kernels.
pub fn one_kernel<T: Real>(
    b: Backend,
    variant: batchlin::Variant,
    batch: usize,
    m: usize,
    n: usize,
) -> Options {
    if b != Backend::Cuda {
        return Options::with_backend(b);
    }
    let p = batchlin::Problem::new(variant, T::DTYPE, batch.max(1), m, n);
    match batchlin::plan(&p, &batchlin::Place::Host, &Options::with_backend(b)) {
        Ok(plan) => Options::with_kernel(b, plan.kernel.name),
        Err(_) => Options::with_backend(b),
    }
}

/// Every CUDA kernel of `op` forced, where a GPU is present (none otherwise).
pub fn forced_cuda_kernels(op: batchlin::Op) -> Vec<Options> {
    if !backends(op).contains(&Backend::Cuda) {
        return vec![];
    }
    batchlin::registry::kernels(op, Backend::Cuda)
        .map(|k| Options::with_kernel(Backend::Cuda, k.name))
        .collect()
}

/// What `opts` runs on, for a failure's message: the backend, and the kernel where forced.
pub fn run_name(opts: &Options) -> String {
    match opts.kernel {
        Some(k) => format!("{} kernel {k}", opts.backend.name()),
        None => opts.backend.name().to_string(),
    }
}

/// `b`, or for Auto the backend `routed` names.
pub fn concrete(b: Backend, routed: impl FnOnce() -> Backend) -> Backend {
    if b == Backend::Auto {
        routed()
    } else {
        b
    }
}
