//! The Rust front door under arbitrary input: shapes (batch dimensions, empty and
//! huge-but-empty ones), strides (negative, zero, padded, transposed), element types,
//! values (NaN, Inf, huge, tiny, subnormal), operations and modes, forced backends,
//! allocating and `_into` forms with arbitrary output layouts.
//!
//! What must hold: no panic (libFuzzer reports one as a crash), and every answer is an
//! `Ok` or a clear `Err`. For `Ok` on finite input with clean info words, the cheap
//! invariants every backend promises: singular values nonnegative and descending,
//! eigenvalues ascending, R's diagonal nonnegative and zero below it.
#![no_main]

use batchlin_core as batchlin;
use batchlin_core::{Backend, BatchMut, BatchRef, Info, Options, QrMode, Real, Uplo};
use libfuzzer_sys::fuzz_target;

/// Reads the fuzzer's bytes as small choices; zeros once they run out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.u8() as usize % xs.len()]
    }
}

const VALUES: [f64; 16] = [
    0.0, 1.0, -1.0, 0.5, 3.0, -7.25, 1e-30, 1e30, 1e37, -1e38, 1e-40, f64::MAX, f64::NAN,
    f64::INFINITY, f64::NEG_INFINITY, 1e300,
];

fn value(b: &mut Bytes) -> f64 {
    let tag = b.u8();
    if tag < 160 {
        (tag as f64 - 80.0) / 16.0
    } else {
        VALUES[tag as usize % VALUES.len()]
    }
}

/// A shape of 2 to 4 dimensions: the batch dimensions then M, N.
fn shape(b: &mut Bytes) -> Vec<usize> {
    let nb = b.u8() % 3;
    let mut s: Vec<usize> = (0..nb).map(|_| b.pick(&[0, 1, 2, 3, 4])).collect();
    let m = b.pick(&[0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17]);
    let n = b.pick(&[0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17]);
    s.push(m);
    s.push(n);
    // Huge matrices in an empty batch: nothing to compute or allocate.
    if nb > 0 && s[0] == 0 && b.u8() % 4 == 0 {
        let l = s.len();
        s[l - 2] = b.pick(&[1 << 20, 1 << 31, usize::MAX / 4]);
        s[l - 1] = b.pick(&[1, 1 << 20, 1 << 31]);
    }
    s
}

/// Strides for `shape`: row-major, column-major, padded, reversed, zero or arbitrary.
fn strides(b: &mut Bytes, shape: &[usize]) -> Vec<isize> {
    let d = shape.len();
    let kind = b.u8() % 6;
    let mut st = vec![0isize; d];
    // Row-major or column-major (of the last two) with padding, batch outermost.
    let (inner_first, pad) = (kind % 2 == 1, (b.u8() % 3) as isize);
    let mut acc: isize = 1;
    let order: Vec<usize> = if inner_first {
        let mut o = vec![d - 2, d - 1];
        o.extend((0..d - 2).rev());
        o
    } else {
        (0..d).rev().collect()
    };
    for &i in &order {
        st[i] = acc;
        acc = acc.saturating_mul((shape[i] as isize).saturating_add(pad).max(1));
    }
    match kind {
        2 => st.iter_mut().for_each(|s| *s = -*s),
        3 => {
            let i = b.u8() as usize % d;
            st[i] = 0;
        }
        4 => st.iter_mut().for_each(|s| *s = (b.u8() as i8) as isize),
        5 => {
            let i = b.u8() as usize % d;
            st[i] = b.pick(&[isize::MAX, isize::MIN, 1 << 40, -(1 << 40)]);
        }
        _ => {}
    }
    st
}

/// The smallest and largest element offsets of a layout, None where they overflow.
fn span(shape: &[usize], strides: &[isize]) -> Option<(i128, i128)> {
    let (mut lo, mut hi) = (0i128, 0i128);
    for (&n, &s) in shape.iter().zip(strides) {
        if n == 0 {
            return Some((0, 0));
        }
        let ext = (n as i128 - 1) * s as i128;
        if ext < 0 {
            lo += ext;
        } else {
            hi += ext;
        }
    }
    (hi - lo < 1 << 20).then_some((lo, hi))
}

/// A buffer holding a view of `shape`/`strides` at an offset: (data, offset of element 0).
fn buffer<T: Real>(b: &mut Bytes, shape: &[usize], strides: &[isize]) -> (Vec<T>, usize) {
    let (lo, hi) = span(shape, strides).unwrap_or((0, 0));
    let len = (hi - lo + 1) as usize + (b.u8() % 3) as usize;
    let data = (0..len).map(|_| T::from_f64(value(b))).collect();
    (data, (-lo) as usize)
}

fn check_sorted<T: Real>(s: &[T], k: usize, descending: bool, what: &str) {
    for chunk in s.chunks(k.max(1)) {
        for w in chunk.windows(2) {
            let ok = if descending { w[0] >= w[1] } else { w[0] <= w[1] };
            assert!(ok, "{what} not sorted: {:?}", w.iter().map(|x| x.to_f64()).collect::<Vec<_>>());
        }
    }
}

fn clean(info: &[Info]) -> bool {
    info.iter().all(|i| i.is_ok())
}

fn run<T: Real>(b: &mut Bytes) {
    let sh = shape(b);
    let st = strides(b, &sh);
    let (data, off) = buffer::<T>(b, &sh, &st);
    // Where the span fits the buffer (negative strides included), the view starts at
    // element 0's offset; else the safe constructor checks it against the buffer.
    let a = if span(&sh, &st).is_some() {
        // SAFETY: `buffer` made `data` reach every offset of the layout from `off`.
        unsafe { BatchRef::from_raw_parts(data.as_ptr().add(off), &sh, &st) }
    } else {
        BatchRef::new(&data, &sh, &st)
    };
    let Ok(a) = a else { return };
    let backend = b.pick(&[Backend::Auto, Backend::CpuSmall, Backend::CpuFaer, Backend::Cuda]);
    let opts = Options::with_backend(backend);
    let d = sh.len();
    let (m, n) = (sh[d - 2], sh[d - 1]);
    let k = m.min(n);
    let finite = a
        .to_contiguous().map(|v| v.iter().all(|x| x.is_finite())).unwrap_or(false);
    match b.u8() % 4 {
        0 => {
            let mode = b.pick(&[QrMode::Reduced, QrMode::Complete, QrMode::R]);
            if let Ok((qr, info)) = batchlin::qr_ex(&a, mode, &opts) {
                if finite && clean(&info) {
                    let rows = qr.r.shape[qr.r.shape.len() - 2];
                    for (idx, x) in qr.r.data.iter().enumerate() {
                        let (i, j) = ((idx / n) % rows.max(1), idx % n.max(1));
                        if i == j {
                            assert!(*x >= T::ZERO, "diag(R) negative");
                        } else if i > j {
                            assert!(*x == T::ZERO, "R not upper triangular");
                        }
                    }
                }
            }
        }
        1 => {
            let uplo = b.pick(&[Uplo::Lower, Uplo::Upper]);
            let vectors = b.u8() % 2 == 0;
            if let Ok((e, info)) = batchlin::eigh_ex(&a, uplo, vectors, &opts) {
                if finite && clean(&info) {
                    check_sorted(&e.w.data, m, false, "eigenvalues");
                }
            }
        }
        2 => {
            let full = b.u8() % 2 == 0;
            let vectors = b.u8() % 2 == 0;
            if let Ok((s, info)) = batchlin::svd_ex(&a, full, vectors, &opts) {
                if finite && clean(&info) {
                    assert!(s.s.data.iter().all(|x| *x >= T::ZERO), "negative singular value");
                    check_sorted(&s.s.data, k, true, "singular values");
                }
            }
        }
        _ => {
            // The _into form with an output of arbitrary layout (overlapping, too small,
            // wrong shape): an error, or a result in exactly the requested elements.
            let mut osh = sh.clone();
            let l = osh.len();
            osh[l - 2] = k;
            if b.u8() % 4 == 0 {
                osh[l - 1] = b.pick(&[0, 1, n + 1]);
            }
            let ost = strides(b, &osh);
            let (mut odata, ooff) = buffer::<T>(b, &osh, &ost);
            let sentinel = T::from_f64(-12345.0);
            odata.iter_mut().for_each(|x| *x = sentinel);
            let mut info = vec![Info::OK; a.layout().batch() + (b.u8() % 2) as usize];
            let r = if span(&osh, &ost).is_some() {
                // SAFETY: as the input's.
                unsafe { BatchMut::from_raw_parts(odata.as_mut_ptr().add(ooff), &osh, &ost) }
            } else {
                BatchMut::new(&mut odata, &osh, &ost)
            };
            let ok = match r {
                Ok(mut r) => batchlin::qr_into(&a, QrMode::R, None, &mut r, Some(&mut info), &opts)
                    .is_ok(),
                Err(_) => false,
            };
            // An accepted output is written only where its layout names elements.
            if ok {
                if let Some((lo, _)) = span(&osh, &ost) {
                    let mut named = vec![false; odata.len()];
                    let count: usize = osh.iter().product();
                    for flat in 0..count {
                        let (mut rem, mut o) = (flat, ooff as i128);
                        for d in (0..osh.len()).rev() {
                            o += (rem % osh[d]) as i128 * ost[d] as i128;
                            rem /= osh[d];
                        }
                        named[o as usize] = true;
                    }
                    let _ = lo;
                    for (i, x) in odata.iter().enumerate() {
                        assert!(named[i] || *x == sentinel, "element {i} outside the output written");
                    }
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    if b.u8() % 2 == 0 {
        run::<f32>(&mut b);
    } else {
        run::<f64>(&mut b);
    }
});
