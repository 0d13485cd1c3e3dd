//! The C API's argument checking under arbitrary arguments: sizes (negative, zero,
//! huge), layouts (any batch count and strides: negative, zero, overlapping, overflowing),
//! NULL and misaligned pointers, modes, triangles, `full_matrices` and backends out of
//! range, for every operation in float and double.
//!
//! The buffers are real: a call is made only where every layout the library would accept
//! reaches inside its buffer (the C API cannot know a buffer's length; reaching past it
//! is the caller's error), or where an offset overflows (then the library must refuse).
//! What must hold: no crash (panics are caught inside as BATCHLIN_ERROR_INTERNAL, which
//! must never come back either), a non-OK status has a message, a layout that overflows
//! is refused, and an OK call writes nothing outside the elements its output layouts
//! name.
#![no_main]

use batchlin_c::*;
use libfuzzer_sys::fuzz_target;
use std::ffi::CStr;

const LEN: usize = 2048;
const SENTINEL: f64 = -4242.0;

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

fn size(b: &mut Bytes) -> i64 {
    b.pick(&[0, 1, 2, 3, 4, 5, 7, 8, 2, 3, 4, -1, 1 << 40, i64::MAX, i64::MIN])
}

fn stride(b: &mut Bytes, m: i64, n: i64) -> i64 {
    match b.u8() % 12 {
        0 => 0,
        1 => 1,
        2 => -1,
        3 => n,
        4 => m,
        5 => m.wrapping_mul(n),
        6 => n.wrapping_neg(),
        7 => n.wrapping_add(1),
        8 => (b.u8() as i8) as i64,
        9 => b.pick(&[1 << 40, -(1 << 40), i64::MAX, i64::MIN, 1 << 62]),
        10 => n.wrapping_mul(2),
        _ => m.wrapping_mul(n).wrapping_add(3),
    }
}

/// What the library will check a buffer as: `batch` x `rows` x `cols` with strides.
#[derive(Clone, Copy, Debug)]
struct Shape {
    batch: i64,
    rows: i64,
    cols: i64,
    strides: [i64; 3],
}

enum Fit {
    /// Every element offset in [lo, hi]: the buffer starts at -lo.
    Inside(i128),
    /// Offsets (in bytes) beyond what a pointer can reach: the library must refuse.
    Overflows,
    /// Negative sizes (refused by the library) or no elements.
    Nothing,
    /// Fits in memory but not in the test's buffer: not called.
    TooLarge,
}

fn fit(s: &Shape, elem: usize) -> Fit {
    if s.batch < 0 || s.rows < 0 || s.cols < 0 {
        return Fit::Nothing;
    }
    if s.batch == 0 || s.rows == 0 || s.cols == 0 {
        return Fit::Nothing;
    }
    // Saturating: three extents of i64::MAX x i64::MIN pass i128's range, and anything
    // past isize::MAX overflows the address space all the same.
    let (mut lo, mut hi) = (0i128, 0i128);
    for (n, st) in [s.batch, s.rows, s.cols].into_iter().zip(s.strides) {
        let ext = (n as i128 - 1).saturating_mul(st as i128);
        if ext < 0 {
            lo = lo.saturating_add(ext);
        } else {
            hi = hi.saturating_add(ext);
        }
    }
    let bytes = hi.saturating_sub(lo).saturating_add(1).saturating_mul(elem as i128);
    if lo.saturating_mul(elem as i128) < -(isize::MAX as i128)
        || hi.saturating_mul(elem as i128) > isize::MAX as i128
    {
        return Fit::Overflows;
    }
    if bytes > (LEN * elem) as i128 || hi - lo >= LEN as i128 {
        let _ = bytes;
        return Fit::TooLarge;
    }
    Fit::Inside(-lo)
}

/// Every element offset (from the start of the buffer) a layout names.
fn offsets(s: &Shape, base: i128) -> Vec<usize> {
    let mut v = Vec::new();
    for bi in 0..s.batch {
        for i in 0..s.rows {
            for j in 0..s.cols {
                let o = base
                    + bi as i128 * s.strides[0] as i128
                    + i as i128 * s.strides[1] as i128
                    + j as i128 * s.strides[2] as i128;
                v.push(o as usize);
            }
        }
    }
    v
}

trait Elem: Copy + PartialEq + std::fmt::Debug {
    fn from(x: f64) -> Self;
}
impl Elem for f32 {
    fn from(x: f64) -> Self {
        x as f32
    }
}
impl Elem for f64 {
    fn from(x: f64) -> Self {
        x
    }
}

/// One buffer argument: its storage, the layout passed (NULL or not) and what the library
/// will check it as.
struct Arg<T> {
    data: Vec<T>,
    shape: Shape,
    layout: batchlin_layout,
    null_layout: bool,
    null_ptr: bool,
    misalign: bool,
    base: i128,
    output: bool,
}

impl<T: Elem> Arg<T> {
    fn new(b: &mut Bytes, batch: i64, rows: i64, cols: i64, output: bool) -> Arg<T> {
        let null_layout = b.u8() % 4 == 0;
        let mut lb = batch;
        if b.u8() % 8 == 0 {
            lb = size(b);
        }
        let strides = if null_layout {
            // Row-major contiguous, as the library makes of a NULL layout.
            [rows.wrapping_mul(cols), cols, 1]
        } else {
            [stride(b, rows, cols), stride(b, rows, cols), stride(b, rows, cols)]
        };
        let shape = Shape {
            batch: if null_layout { batch } else { lb },
            rows,
            cols,
            strides,
        };
        let layout = batchlin_layout {
            batch: lb,
            batch_stride: strides[0],
            row_stride: strides[1],
            col_stride: strides[2],
        };
        let fill = |i: usize| {
            if output {
                T::from(SENTINEL)
            } else {
                T::from(((i * 7919) % 23) as f64 - 11.0)
            }
        };
        Arg {
            data: (0..LEN + 1).map(fill).collect(),
            shape,
            layout,
            null_layout,
            null_ptr: b.u8() % 16 == 0,
            misalign: b.u8() % 32 == 0,
            base: 0,
            output,
        }
    }
    /// The pointer to pass, or None where the call must not be made.
    fn ptr(&mut self, elem: usize, overflow: &mut bool) -> Option<*mut T> {
        if self.null_ptr {
            return Some(std::ptr::null_mut());
        }
        let p = match fit(&self.shape, elem) {
            Fit::Inside(base) => {
                self.base = base;
                unsafe { self.data.as_mut_ptr().add(base as usize) }
            }
            Fit::Nothing => self.data.as_mut_ptr(),
            Fit::Overflows => {
                *overflow = true;
                // Never dereferenced: the library must refuse before reading.
                unsafe { self.data.as_mut_ptr().add(LEN / 2) }
            }
            Fit::TooLarge => return None,
        };
        Some(if self.misalign {
            (p as *mut u8).wrapping_add(1) as *mut T
        } else {
            p
        })
    }
    fn layout_ptr(&self) -> *const batchlin_layout {
        if self.null_layout {
            std::ptr::null()
        } else {
            &self.layout
        }
    }
    /// After an OK call: nothing outside the layout's elements was written.
    fn check_untouched(&self, what: &str) {
        if !self.output || self.null_ptr {
            return;
        }
        let mut named = vec![false; self.data.len()];
        if let Fit::Inside(_) = fit(&self.shape, 8) {
            for o in offsets(&self.shape, self.base) {
                named[o] = true;
            }
        }
        for (i, x) in self.data.iter().enumerate() {
            assert!(
                named[i] || *x == T::from(SENTINEL),
                "{what}: element {i} outside the output layout {:?} was written",
                self.shape
            );
        }
    }
}

fn message() -> String {
    let p = batchlin_last_error();
    assert!(!p.is_null());
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

macro_rules! call {
    ($status:expr, $overflow:expr, $what:expr) => {{
        let st = $status;
        assert_ne!(
            st,
            batchlin_status::BATCHLIN_ERROR_INTERNAL,
            "{}: internal error: {}",
            $what,
            message()
        );
        if st != batchlin_status::BATCHLIN_OK {
            assert!(!message().is_empty(), "{}: {st:?} without a message", $what);
        } else {
            assert!(!$overflow, "{}: an overflowing layout was accepted", $what);
        }
        st
    }};
}

fn run<T: Elem>(b: &mut Bytes, dbl: bool) {
    let es = std::mem::size_of::<T>();
    let (batch, m, n) = (size(b), size(b), size(b));
    let k = m.min(n);
    let backend = b.pick(&[0, 0, 1, 2, 3, 4, -1]);
    let op = b.u8() % 4;
    // The input's layout says how many matrices there are (NULL is refused); eigh's
    // input is n x n (it takes no m).
    let mut a = Arg::<T>::new(b, batch, if op == 1 { n } else { m }, n, false);
    let batch = a.shape.batch;
    let mut info = vec![0u32; 64];
    let info_ptr = if b.u8() % 3 == 0 || !(0..=64).contains(&batch) {
        std::ptr::null_mut()
    } else {
        info.as_mut_ptr()
    };
    let mut of = false;
    match op {
        0 => {
            let mode = b.pick(&[0, 1, 2, 3, -1]);
            let (qc, rr) = if mode == 1 { (m, m) } else { (k, k) };
            let mut q = Arg::<T>::new(b, batch, m, qc, true);
            let mut r = Arg::<T>::new(b, batch, rr, n, true);
            let (Some(pa), Some(pq), Some(pr)) = (a.ptr(es, &mut of), q.ptr(es, &mut of), r.ptr(es, &mut of)) else {
                return;
            };
            // Q's layout does not matter in mode R (it is not touched).
            if mode == 2 {
                of = matches!(fit(&a.shape, es), Fit::Overflows) || matches!(fit(&r.shape, es), Fit::Overflows);
            }
            let st = unsafe {
                if dbl {
                    batchlin_dqr_strided(pa as *const f64, a.layout_ptr(), m, n, mode, pq as *mut f64, q.layout_ptr(), pr as *mut f64, r.layout_ptr(), info_ptr, backend)
                } else {
                    batchlin_sqr_strided(pa as *const f32, a.layout_ptr(), m, n, mode, pq as *mut f32, q.layout_ptr(), pr as *mut f32, r.layout_ptr(), info_ptr, backend)
                }
            };
            if call!(st, of, "qr") == batchlin_status::BATCHLIN_OK {
                if mode != 2 {
                    q.check_untouched("qr q");
                }
                r.check_untouched("qr r");
            }
        }
        1 => {
            let uplo = b.pick(&[76, 85, 108, 117, 0, 1]);
            let vectors = b.u8() % 2 == 0;
            let mut w = Arg::<T>::new(b, batch, 1, n, true);
            // Vector layouts: batch stride and col stride; the row stride is ignored.
            w.shape.strides[1] = 0;
            let mut v = Arg::<T>::new(b, batch, n, n, true);
            let (Some(pa), Some(pw)) = (a.ptr(es, &mut of), w.ptr(es, &mut of)) else {
                return;
            };
            let pv = if vectors {
                match v.ptr(es, &mut of) {
                    Some(p) => p,
                    None => return,
                }
            } else {
                std::ptr::null_mut()
            };
            let st = unsafe {
                match (dbl, vectors) {
                    (true, true) => batchlin_deigh_strided(pa as *const f64, a.layout_ptr(), n, uplo, pw as *mut f64, w.layout_ptr(), pv as *mut f64, v.layout_ptr(), info_ptr, backend),
                    (false, true) => batchlin_seigh_strided(pa as *const f32, a.layout_ptr(), n, uplo, pw as *mut f32, w.layout_ptr(), pv as *mut f32, v.layout_ptr(), info_ptr, backend),
                    (true, false) => batchlin_deigvalsh_strided(pa as *const f64, a.layout_ptr(), n, uplo, pw as *mut f64, w.layout_ptr(), info_ptr, backend),
                    (false, false) => batchlin_seigvalsh_strided(pa as *const f32, a.layout_ptr(), n, uplo, pw as *mut f32, w.layout_ptr(), info_ptr, backend),
                }
            };
            if call!(st, of, "eigh") == batchlin_status::BATCHLIN_OK {
                w.check_untouched("eigh w");
                if vectors {
                    v.check_untouched("eigh v");
                }
            }
        }
        _ => {
            let full = b.pick(&[0, 1, 2, -1]);
            let vectors = op == 2;
            let (uc, vr) = if full == 1 { (m, n) } else { (k, k) };
            let mut u = Arg::<T>::new(b, batch, m, uc, true);
            let mut s = Arg::<T>::new(b, batch, 1, k, true);
            s.shape.strides[1] = 0;
            let mut vh = Arg::<T>::new(b, batch, vr, n, true);
            let (Some(pa), Some(ps)) = (a.ptr(es, &mut of), s.ptr(es, &mut of)) else {
                return;
            };
            let st = if vectors {
                let (Some(pu), Some(pv)) = (u.ptr(es, &mut of), vh.ptr(es, &mut of)) else {
                    return;
                };
                unsafe {
                    if dbl {
                        batchlin_dsvd_strided(pa as *const f64, a.layout_ptr(), m, n, full, pu as *mut f64, u.layout_ptr(), ps as *mut f64, s.layout_ptr(), pv as *mut f64, vh.layout_ptr(), info_ptr, backend)
                    } else {
                        batchlin_ssvd_strided(pa as *const f32, a.layout_ptr(), m, n, full, pu as *mut f32, u.layout_ptr(), ps as *mut f32, s.layout_ptr(), pv as *mut f32, vh.layout_ptr(), info_ptr, backend)
                    }
                }
            } else {
                unsafe {
                    if dbl {
                        batchlin_dsvdvals_strided(pa as *const f64, a.layout_ptr(), m, n, ps as *mut f64, s.layout_ptr(), info_ptr, backend)
                    } else {
                        batchlin_ssvdvals_strided(pa as *const f32, a.layout_ptr(), m, n, ps as *mut f32, s.layout_ptr(), info_ptr, backend)
                    }
                }
            };
            if call!(st, of, "svd") == batchlin_status::BATCHLIN_OK {
                assert!(!vectors || full == 0 || full == 1, "full_matrices {full} accepted");
                s.check_untouched("svd s");
                if vectors {
                    u.check_untouched("svd u");
                    vh.check_untouched("svd vh");
                }
            }
        }
    }
    // The routing questions take the same sizes.
    let _ = batchlin_backend_for(b.pick(&[0, 1, 2, 9]), b.pick(&[0, 1, 5]), batch, m, n);
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    if b.u8() % 2 == 0 {
        run::<f32>(&mut b, false);
    } else {
        run::<f64>(&mut b, true);
    }
});
