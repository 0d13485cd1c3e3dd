//! Views of batches of matrices: shape `[batch..., rows, cols]` with strides in elements.
//!
//! The core reads its input and writes its outputs through these views, so the caller's
//! memory is used where it lies (NumPy arrays, torch tensors, C buffers, transposed or
//! sliced views). `Tensor` is the owned, row-major (C order) form the allocating
//! wrappers return.

use crate::error::{Error, Result};
use std::marker::PhantomData;

/// Shape and strides (in elements) of a batch of matrices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub batch_shape: Vec<usize>,
    pub batch_strides: Vec<isize>,
    pub rows: usize,
    pub cols: usize,
    pub row_stride: isize,
    pub col_stride: isize,
}

impl Layout {
    /// From a full shape `[..., rows, cols]` and its strides (elements).
    pub fn new(shape: &[usize], strides: &[isize]) -> Result<Layout> {
        if shape.len() < 2 {
            return Err(Error::Shape(format!(
                "expected an array of at least 2 dimensions [..., M, N], got {} ({shape:?})",
                shape.len()
            )));
        }
        if strides.len() != shape.len() {
            return Err(Error::Shape(format!(
                "shape {shape:?} has {} dimensions but strides {strides:?} have {}",
                shape.len(),
                strides.len()
            )));
        }
        let nb = shape.len() - 2;
        let layout = Layout {
            batch_shape: shape[..nb].to_vec(),
            batch_strides: strides[..nb].to_vec(),
            rows: shape[nb],
            cols: shape[nb + 1],
            row_stride: strides[nb],
            col_stride: strides[nb + 1],
        };
        layout.element_count()?;
        Ok(layout)
    }

    /// Row-major (C order) contiguous layout of the given shape.
    pub fn contiguous(shape: &[usize]) -> Result<Layout> {
        Layout::new(shape, &contiguous_strides(shape)?)
    }

    /// Number of matrices in the batch.
    pub fn batch(&self) -> usize {
        self.batch_shape.iter().product()
    }

    /// The full shape `[..., rows, cols]`.
    pub fn shape(&self) -> Vec<usize> {
        let mut s = self.batch_shape.clone();
        s.push(self.rows);
        s.push(self.cols);
        s
    }

    /// The full strides `[..., row, col]`, as `new` took them.
    pub fn strides(&self) -> Vec<isize> {
        let mut s = self.batch_strides.clone();
        s.push(self.row_stride);
        s.push(self.col_stride);
        s
    }

    /// Total number of elements, checked for overflow.
    pub fn element_count(&self) -> Result<usize> {
        checked_product(&self.shape())
    }

    /// Element offset of matrix `index` (flat, row-major over the batch shape).
    ///
    /// Wrapping: a view of empty matrices names no memory and may have any batch strides
    /// (isize::MAX), so its offsets may not be representable; they are never used to
    /// address memory, and those of a view with elements never wrap (`check_fits`).
    #[inline]
    pub fn matrix_offset(&self, index: usize) -> isize {
        let mut rest = index;
        let mut off = 0isize;
        for (d, &len) in self.batch_shape.iter().enumerate().rev() {
            let i = rest % len;
            rest /= len;
            off = off.wrapping_add((i as isize).wrapping_mul(self.batch_strides[d]));
        }
        off
    }

    /// Smallest and largest element offsets the view touches (None when it is empty).
    pub fn offset_range(&self) -> Option<(isize, isize)> {
        if self.element_count().ok()? == 0 {
            return None;
        }
        let dims = self.batch_shape.iter().zip(&self.batch_strides).chain([
            (&self.rows, &self.row_stride),
            (&self.cols, &self.col_stride),
        ]);
        let (mut lo, mut hi) = (0isize, 0isize);
        for (&len, &stride) in dims {
            let span = (len as isize - 1).checked_mul(stride)?;
            if span < 0 {
                lo = lo.checked_add(span)?;
            } else {
                hi = hi.checked_add(span)?;
            }
        }
        Some((lo, hi))
    }

    /// True when no two distinct indices map to the same element (required of outputs,
    /// which are written in parallel).
    pub fn is_non_overlapping(&self) -> bool {
        // No elements (a dimension of length 0): nothing can overlap, whatever the strides
        // (the layout helpers give zero strides to empty matrices).
        if self.batch_shape.contains(&0) || self.rows == 0 || self.cols == 0 {
            return true;
        }
        let mut dims: Vec<(usize, usize)> = self
            .batch_shape
            .iter()
            .zip(&self.batch_strides)
            .chain([
                (&self.rows, &self.row_stride),
                (&self.cols, &self.col_stride),
            ])
            .filter(|(&len, _)| len > 1)
            .map(|(&len, &s)| (len, s.unsigned_abs()))
            .collect();
        dims.sort_by_key(|&(_, s)| s);
        let mut extent = 1usize; // elements spanned by the dimensions so far
        for (len, stride) in dims {
            if stride < extent {
                return false;
            }
            extent = match stride.checked_mul(len - 1).and_then(|x| x.checked_add(1)) {
                Some(e) => e.max(extent),
                None => return false,
            };
        }
        true
    }

    /// `[batch, row, col]` strides of a layout whose elements fill `[0, count)` exactly
    /// (any order of dimensions, none reversed, the batch dimensions collapsing to one),
    /// with the strides of dimensions of length 1 taken as 0; None for any other layout.
    pub fn dense_strides(&self) -> Option<[usize; 3]> {
        let count = self.element_count().ok()?;
        let (lo, hi) = self.offset_range()?;
        if count == 0 || lo != 0 || hi as usize + 1 != count || !self.is_non_overlapping() {
            return None;
        }
        let bs = self.uniform_batch_stride()?;
        let s = |len: usize, stride: isize| if len <= 1 { 0 } else { stride as usize };
        Some([
            s(self.batch(), bs),
            s(self.rows, self.row_stride),
            s(self.cols, self.col_stride),
        ])
    }

    /// The batch strides collapse to a single stride (matrix i at offset i * stride).
    pub fn uniform_batch_stride(&self) -> Option<isize> {
        let dims: Vec<(usize, isize)> = self
            .batch_shape
            .iter()
            .zip(&self.batch_strides)
            .filter(|(&l, _)| l != 1)
            .map(|(&l, &s)| (l, s))
            .collect();
        match dims.len() {
            0 => Some(0),
            _ => {
                let inner = dims[dims.len() - 1].1;
                let mut expect = inner;
                for &(len, stride) in dims.iter().rev() {
                    if stride != expect {
                        return None;
                    }
                    expect = stride.checked_mul(len as isize)?;
                }
                Some(inner)
            }
        }
    }
}

/// `[..., N]` with its strides as `[..., 1, N]`.
fn as_row_matrices(shape: &[usize], strides: &[isize]) -> Result<(Vec<usize>, Vec<isize>)> {
    if shape.is_empty() || strides.len() != shape.len() {
        return Err(Error::Output(format!(
            "expected a batch of vectors [..., N] with matching strides, got shape {shape:?} strides {strides:?}"
        )));
    }
    let nb = shape.len() - 1;
    let mut s = shape[..nb].to_vec();
    s.extend([1, shape[nb]]);
    let mut st = strides[..nb].to_vec();
    st.extend([0, strides[nb]]);
    Ok((s, st))
}

/// Row-major strides (elements) for a shape, checked for overflow.
pub fn contiguous_strides(shape: &[usize]) -> Result<Vec<isize>> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc: usize = 1;
    for (i, &len) in shape.iter().enumerate().rev() {
        strides[i] = isize::try_from(acc)
            .map_err(|_| Error::Overflow(format!("shape {shape:?} is too large")))?;
        acc = acc
            .checked_mul(len.max(1))
            .ok_or_else(|| Error::Overflow(format!("shape {shape:?} is too large")))?;
    }
    checked_product(shape)?;
    Ok(strides)
}

/// Product of the lengths, with an error when it overflows `isize`.
pub fn checked_product(shape: &[usize]) -> Result<usize> {
    let mut acc: usize = 1;
    for &len in shape {
        acc = acc
            .checked_mul(len)
            .filter(|&x| x <= isize::MAX as usize)
            .ok_or_else(|| Error::Overflow(format!("shape {shape:?} has too many elements")))?;
    }
    Ok(acc)
}

fn check_fits(layout: &Layout, len: usize, what: &str) -> Result<isize> {
    if layout.element_count()? == 0 {
        return Ok(0);
    }
    // With elements, `offset_range` is None only where an offset overflows: such a
    // layout cannot lie in any buffer (it was accepted before, and read out of bounds).
    match layout.offset_range() {
        None => Err(Error::Overflow(format!(
            "{what}: shape {:?} with strides {:?} reaches offsets beyond the address space",
            layout.shape(),
            layout.strides()
        ))),
        Some((lo, hi)) => {
            if lo < 0 {
                return Err(Error::Shape(format!(
                    "{what}: negative strides need a base offset; offsets reach {lo} (use from_raw_parts)"
                )));
            }
            if hi as usize >= len {
                return Err(Error::Shape(format!(
                    "{what}: shape {:?} with these strides reaches element {hi} but the buffer holds {len}",
                    layout.shape()
                )));
            }
            Ok(0)
        }
    }
}

/// Where a view's memory lies: the host, or the global memory of a CUDA device (by
/// ordinal). Only host memory is ever read or written from the host; device views are
/// handed to the CUDA backend as they are.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Memory {
    #[default]
    Host,
    Cuda(usize),
}

impl std::fmt::Display for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Memory::Host => f.write_str("host"),
            Memory::Cuda(d) => write!(f, "cuda:{d}"),
        }
    }
}

/// A read-only view of a batch of matrices, in host or device memory.
#[derive(Clone, Debug)]
pub struct BatchRef<'a, T> {
    ptr: *const T,
    layout: Layout,
    memory: Memory,
    _life: PhantomData<&'a [T]>,
}

// A `BatchRef` is a shared borrow of `T`s.
unsafe impl<T: Sync> Send for BatchRef<'_, T> {}
unsafe impl<T: Sync> Sync for BatchRef<'_, T> {}

impl<'a, T> BatchRef<'a, T> {
    /// A view of `data` with the given shape `[..., M, N]` and element strides.
    pub fn new(data: &'a [T], shape: &[usize], strides: &[isize]) -> Result<Self> {
        let layout = Layout::new(shape, strides)?;
        check_fits(&layout, data.len(), "input")?;
        Ok(BatchRef {
            ptr: data.as_ptr(),
            layout,
            memory: Memory::Host,
            _life: PhantomData,
        })
    }

    /// A row-major contiguous view of `data` with shape `[..., M, N]`.
    pub fn contiguous(data: &'a [T], shape: &[usize]) -> Result<Self> {
        BatchRef::new(data, shape, &contiguous_strides(shape)?)
    }

    /// A view of raw memory.
    ///
    /// # Safety
    /// Every element the shape and strides reach from `ptr` must be readable for `'a`
    /// and not written by anyone else meanwhile.
    pub unsafe fn from_raw_parts(
        ptr: *const T,
        shape: &[usize],
        strides: &[isize],
    ) -> Result<Self> {
        let layout = Layout::new(shape, strides)?;
        if ptr.is_null() && layout.element_count()? > 0 {
            return Err(Error::Argument("input pointer is null".into()));
        }
        Ok(BatchRef {
            ptr,
            layout,
            memory: Memory::Host,
            _life: PhantomData,
        })
    }

    /// A view of device memory of CUDA device `ordinal` (never read from the host).
    ///
    /// # Safety
    /// Every element the shape and strides reach from `ptr` must be device memory of that
    /// device, readable by the work a call queues until it has run.
    pub unsafe fn from_device(
        ptr: *const T,
        ordinal: usize,
        shape: &[usize],
        strides: &[isize],
    ) -> Result<Self> {
        let mut v = BatchRef::from_raw_parts(ptr, shape, strides)?;
        v.memory = Memory::Cuda(ordinal);
        Ok(v)
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    pub fn memory(&self) -> Memory {
        self.memory
    }
    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }

    /// Element (i, j) of matrix `b`.
    ///
    /// # Safety
    /// Indices must be in range.
    #[inline(always)]
    pub(crate) unsafe fn get_unchecked(&self, base: isize, i: usize, j: usize) -> T
    where
        T: Copy,
    {
        *self.ptr.offset(
            base + i as isize * self.layout.row_stride + j as isize * self.layout.col_stride,
        )
    }
}

impl<T: Copy> BatchRef<'_, T> {
    /// The batch copied into row-major (C order) contiguous memory (host views only:
    /// device memory is not readable here).
    pub fn to_contiguous(&self) -> Result<Vec<T>> {
        if self.memory != Memory::Host {
            return Err(Error::Argument(format!(
                "to_contiguous reads host memory; this view is on {}",
                self.memory
            )));
        }
        let l = &self.layout;
        let len = checked_product(&[l.batch(), l.rows, l.cols])?;
        let mut out = Vec::new();
        out.try_reserve_exact(len)
            .map_err(|_| crate::error::out_of_memory::<T>(len, "a contiguous copy"))?;
        if len == 0 {
            return Ok(out);
        }
        for b in 0..l.batch() {
            let base = l.matrix_offset(b);
            for i in 0..l.rows {
                for j in 0..l.cols {
                    // SAFETY: in range; the view was checked on creation.
                    out.push(unsafe { self.get_unchecked(base, i, j) });
                }
            }
        }
        Ok(out)
    }
}

/// A writable view of a batch of matrices. Its elements never overlap.
#[derive(Debug)]
pub struct BatchMut<'a, T> {
    ptr: *mut T,
    layout: Layout,
    memory: Memory,
    _life: PhantomData<&'a mut [T]>,
}

unsafe impl<T: Send> Send for BatchMut<'_, T> {}
unsafe impl<T: Send> Sync for BatchMut<'_, T> {}

impl<'a, T> BatchMut<'a, T> {
    /// A view of `data` with the given shape and element strides; the strides must not
    /// make two indices share an element.
    pub fn new(data: &'a mut [T], shape: &[usize], strides: &[isize]) -> Result<Self> {
        let layout = Layout::new(shape, strides)?;
        check_fits(&layout, data.len(), "output")?;
        if !layout.is_non_overlapping() {
            return Err(Error::Output(format!(
                "output strides {strides:?} make elements overlap for shape {shape:?}"
            )));
        }
        Ok(BatchMut {
            ptr: data.as_mut_ptr(),
            layout,
            memory: Memory::Host,
            _life: PhantomData,
        })
    }

    /// A row-major contiguous view of `data` with shape `[..., M, N]`.
    pub fn contiguous(data: &'a mut [T], shape: &[usize]) -> Result<Self> {
        let strides = contiguous_strides(shape)?;
        BatchMut::new(data, shape, &strides)
    }

    /// A view of raw memory.
    ///
    /// # Safety
    /// Every element the shape and strides reach from `ptr` must be writable for `'a`
    /// and not accessed by anyone else meanwhile.
    pub unsafe fn from_raw_parts(ptr: *mut T, shape: &[usize], strides: &[isize]) -> Result<Self> {
        let layout = Layout::new(shape, strides)?;
        if ptr.is_null() && layout.element_count()? > 0 {
            return Err(Error::Argument("output pointer is null".into()));
        }
        if !layout.is_non_overlapping() {
            return Err(Error::Output(format!(
                "output strides {strides:?} make elements overlap for shape {shape:?}"
            )));
        }
        Ok(BatchMut {
            ptr,
            layout,
            memory: Memory::Host,
            _life: PhantomData,
        })
    }

    /// A batch of vectors `[..., N]` (eigenvalues, singular values), seen as matrices of
    /// one row so the same machinery writes it.
    pub fn new_vectors(data: &'a mut [T], shape: &[usize], strides: &[isize]) -> Result<Self> {
        let (s, st) = as_row_matrices(shape, strides)?;
        BatchMut::new(data, &s, &st)
    }

    /// A row-major contiguous batch of vectors `[..., N]`.
    pub fn contiguous_vectors(data: &'a mut [T], shape: &[usize]) -> Result<Self> {
        let strides = contiguous_strides(shape)?;
        BatchMut::new_vectors(data, shape, &strides)
    }

    /// A batch of vectors in raw memory.
    ///
    /// # Safety
    /// As `from_raw_parts`.
    pub unsafe fn from_raw_parts_vectors(
        ptr: *mut T,
        shape: &[usize],
        strides: &[isize],
    ) -> Result<Self> {
        let (s, st) = as_row_matrices(shape, strides)?;
        BatchMut::from_raw_parts(ptr, &s, &st)
    }

    /// A view of device memory of CUDA device `ordinal` (never written from the host).
    ///
    /// # Safety
    /// Every element the shape and strides reach from `ptr` must be device memory of that
    /// device, writable by the work a call queues until it has run, and not accessed by
    /// anyone else meanwhile.
    pub unsafe fn from_device(
        ptr: *mut T,
        ordinal: usize,
        shape: &[usize],
        strides: &[isize],
    ) -> Result<Self> {
        let mut v = BatchMut::from_raw_parts(ptr, shape, strides)?;
        v.memory = Memory::Cuda(ordinal);
        Ok(v)
    }

    /// A batch of vectors `[..., N]` in device memory.
    ///
    /// # Safety
    /// As `from_device`.
    pub unsafe fn from_device_vectors(
        ptr: *mut T,
        ordinal: usize,
        shape: &[usize],
        strides: &[isize],
    ) -> Result<Self> {
        let (s, st) = as_row_matrices(shape, strides)?;
        BatchMut::from_device(ptr, ordinal, &s, &st)
    }

    /// The same view for a shorter borrow (to pass it on by value and keep it).
    pub fn reborrow(&mut self) -> BatchMut<'_, T> {
        BatchMut {
            ptr: self.ptr,
            layout: self.layout.clone(),
            memory: self.memory,
            _life: PhantomData,
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    pub fn memory(&self) -> Memory {
        self.memory
    }
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr
    }
    pub(crate) fn as_ptr(&self) -> *const T {
        self.ptr
    }

    /// A raw handle that can be shared between the threads writing disjoint matrices.
    pub(crate) fn raw(&mut self) -> RawMut<T> {
        RawMut {
            ptr: self.ptr,
            row_stride: self.layout.row_stride,
            col_stride: self.layout.col_stride,
        }
    }
}

impl<T: Copy> BatchMut<'_, T> {
    /// Write a row-major contiguous batch of the view's shape into the view.
    pub fn copy_from_contiguous(&mut self, src: &[T]) -> Result<()> {
        if self.memory != Memory::Host {
            return Err(Error::Argument(format!(
                "copy_from_contiguous writes host memory; this view is on {}",
                self.memory
            )));
        }
        let l = self.layout.clone();
        if src.len() != l.element_count()? {
            return Err(Error::Output(format!(
                "expected {} elements for shape {:?}, got {}",
                l.element_count()?,
                l.shape(),
                src.len()
            )));
        }
        if src.is_empty() {
            return Ok(());
        }
        let raw = self.raw();
        let mut it = src.iter();
        for b in 0..l.batch() {
            let base = l.matrix_offset(b);
            for i in 0..l.rows {
                for j in 0..l.cols {
                    // SAFETY: in range; the view was checked on creation.
                    unsafe { raw.set(base, i, j, *it.next().expect("length checked")) };
                }
            }
        }
        Ok(())
    }
}

/// A pointer for parallel writes to disjoint matrices of one output.
#[derive(Copy, Clone)]
pub(crate) struct RawMut<T> {
    ptr: *mut T,
    row_stride: isize,
    col_stride: isize,
}
unsafe impl<T: Send> Send for RawMut<T> {}
unsafe impl<T: Send> Sync for RawMut<T> {}

impl<T> RawMut<T> {
    /// True when a row's elements lie closer together than a column's (row-major-like), so
    /// that walking rows outermost visits memory in order.
    #[inline(always)]
    pub(crate) fn rows_outer(&self) -> bool {
        self.col_stride.unsigned_abs() <= self.row_stride.unsigned_abs()
    }

    #[inline(always)]
    pub(crate) fn row_stride(&self) -> isize {
        self.row_stride
    }

    #[inline(always)]
    pub(crate) fn col_stride(&self) -> isize {
        self.col_stride
    }

    /// Where row 0 of the matrix at `base` starts, when its rows are contiguous
    /// (col_stride 1) and lie apart (no two of the `rows` rows overlap).
    #[inline(always)]
    pub(crate) fn contiguous_rows(&self, base: isize, rows: usize) -> Option<*mut T> {
        (self.col_stride == 1 && (rows <= 1 || self.row_stride != 0))
            .then(|| self.ptr.wrapping_offset(base))
    }

    /// Where column 0 of the matrix at `base` starts, when its columns are contiguous
    /// (row_stride 1) and lie apart.
    #[inline(always)]
    pub(crate) fn contiguous_cols(&self, base: isize, cols: usize) -> Option<*mut T> {
        (self.row_stride == 1 && (cols <= 1 || self.col_stride != 0))
            .then(|| self.ptr.wrapping_offset(base))
    }

    /// # Safety
    /// In range, and no other thread writes the same matrix.
    #[inline(always)]
    pub(crate) unsafe fn set(&self, base: isize, i: usize, j: usize, v: T) {
        *self
            .ptr
            .offset(base + i as isize * self.row_stride + j as isize * self.col_stride) = v;
    }
}

/// An owned array in row-major (C) order: what the allocating wrappers return.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor<T> {
    pub data: Vec<T>,
    pub shape: Vec<usize>,
}

impl<T: Copy + Default> Tensor<T> {
    pub fn zeros(shape: &[usize]) -> Result<Self> {
        // Strides are checked too: an empty tensor of huge matrices must still be viewable.
        contiguous_strides(shape)?;
        let n = checked_product(shape)?;
        Ok(Tensor {
            data: crate::error::try_vec(n, T::default(), &format!("an output of shape {shape:?}"))?,
            shape: shape.to_vec(),
        })
    }
    pub fn from_vec(data: Vec<T>, shape: &[usize]) -> Result<Self> {
        contiguous_strides(shape)?;
        let n = checked_product(shape)?;
        if n != data.len() {
            return Err(Error::Shape(format!(
                "shape {shape:?} needs {n} elements, got {}",
                data.len()
            )));
        }
        Ok(Tensor {
            data,
            shape: shape.to_vec(),
        })
    }
    pub fn view(&self) -> BatchRef<'_, T> {
        BatchRef::contiguous(&self.data, &self.shape).expect("a tensor's own shape fits it")
    }
    pub fn view_mut(&mut self) -> BatchMut<'_, T> {
        BatchMut::contiguous(&mut self.data, &self.shape).expect("a tensor's own shape fits it")
    }
    /// A mutable view of a tensor holding a batch of vectors `[..., N]`.
    pub fn view_mut_vectors(&mut self) -> BatchMut<'_, T> {
        BatchMut::contiguous_vectors(&mut self.data, &self.shape)
            .expect("a tensor's own shape fits it")
    }
    /// Element at a full index.
    pub fn at(&self, index: &[usize]) -> T {
        let strides = contiguous_strides(&self.shape).expect("valid shape");
        let off: isize = index
            .iter()
            .zip(&strides)
            .map(|(&i, &s)| i as isize * s)
            .sum();
        self.data[off as usize]
    }
}

#[cfg(test)]
mod tests {
    /// Strides whose offsets overflow are refused by the safe constructors, not taken for
    /// "no elements" (found by the fuzz target `front_door`, 2026-12-02: a 9 x 3 view
    /// with a row stride of isize::MAX passed and read out of bounds).
    #[test]
    fn overflowing_strides_are_refused() {
        let d = [1.0f64; 4];
        for (shape, strides) in [
            (vec![9usize, 3], vec![isize::MAX, 10]),
            (vec![3, 3], vec![1, isize::MIN]),
            (vec![3, 2, 2], vec![isize::MAX / 2 + 1, 1, 1]),
        ] {
            let e = BatchRef::new(&d, &shape, &strides).unwrap_err();
            assert!(
                matches!(e, Error::Overflow(_)),
                "{shape:?} {strides:?}: {e}"
            );
            let mut o = [0.0f64; 4];
            let e = BatchMut::new(&mut o, &shape, &strides).unwrap_err();
            assert!(
                matches!(e, Error::Overflow(_)),
                "{shape:?} {strides:?}: {e}"
            );
        }
        // No elements: any strides are fine.
        assert!(BatchRef::new(&d, &[0, 3], &[isize::MAX, isize::MAX]).is_ok());
    }

    #[test]
    fn dense_strides_of_layouts() {
        let l = |shape: [usize; 3], strides: [isize; 3]| Layout::new(&shape, &strides).unwrap();
        assert_eq!(l([2, 3, 4], [12, 4, 1]).dense_strides(), Some([12, 4, 1]));
        assert_eq!(l([2, 3, 4], [12, 1, 3]).dense_strides(), Some([12, 1, 3]));
        // Batch first in memory order, matrices interleaved: still exactly its span.
        assert_eq!(l([2, 3, 4], [1, 8, 2]).dense_strides(), Some([1, 8, 2]));
        // One matrix, one row: those strides do not matter.
        assert_eq!(l([1, 1, 4], [-7, 99, 1]).dense_strides(), Some([0, 0, 1]));
        // Several batch dimensions that collapse to one.
        let l4 = Layout::new(&[2, 2, 3, 4], &[24, 12, 4, 1]).unwrap();
        assert_eq!(l4.dense_strides(), Some([12, 4, 1]));
        // Padding, reversal, repetition, emptiness: not in place.
        assert_eq!(l([2, 3, 4], [13, 4, 1]).dense_strides(), None);
        assert_eq!(l([2, 3, 4], [-12, 4, 1]).dense_strides(), None);
        assert_eq!(l([2, 3, 4], [0, 4, 1]).dense_strides(), None);
        assert_eq!(l([2, 2, 2], [0, 2, 1]).dense_strides(), None);
        assert_eq!(l([0, 3, 4], [12, 4, 1]).dense_strides(), None);
    }

    use super::*;

    #[test]
    fn overlap_detection() {
        assert!(Layout::new(&[2, 3, 4], &[12, 4, 1])
            .unwrap()
            .is_non_overlapping());
        assert!(Layout::new(&[2, 3, 4], &[1, 2, 6])
            .unwrap()
            .is_non_overlapping());
        assert!(!Layout::new(&[2, 3, 4], &[0, 4, 1])
            .unwrap()
            .is_non_overlapping());
        assert!(!Layout::new(&[3, 4], &[2, 1]).unwrap().is_non_overlapping());
        assert!(Layout::new(&[1, 3, 4], &[0, 4, 1])
            .unwrap()
            .is_non_overlapping());
        // Empty views overlap nowhere, whatever their strides (the layout helpers give
        // zero strides to empty dimensions).
        for (shape, strides) in [
            ([3, 0, 5], [0, 5, 1]),
            ([3, 5, 0], [0, 0, 1]),
            ([0, 4, 4], [0, 0, 0]),
        ] {
            assert!(Layout::new(&shape, &strides).unwrap().is_non_overlapping());
        }
    }

    #[test]
    fn offsets_and_uniform_stride() {
        let l = Layout::new(&[2, 3, 4, 5], &[60, 20, 5, 1]).unwrap();
        assert_eq!(l.matrix_offset(4), 80);
        assert_eq!(l.uniform_batch_stride(), Some(20));
        let l = Layout::new(&[2, 3, 4, 5], &[100, 20, 5, 1]).unwrap();
        assert_eq!(l.uniform_batch_stride(), None);
        assert_eq!(l.matrix_offset(4), 120);
    }

    #[test]
    fn rejects_bad_views() {
        let d = [0f32; 10];
        assert!(matches!(
            BatchRef::contiguous(&d, &[3]),
            Err(Error::Shape(_))
        ));
        assert!(matches!(
            BatchRef::contiguous(&d, &[3, 4]),
            Err(Error::Shape(_))
        ));
        assert!(matches!(
            BatchRef::new(&d, &[2, 2], &[-2, 1]),
            Err(Error::Shape(_))
        ));
        assert!(matches!(
            BatchRef::contiguous(&d, &[usize::MAX, 2, 2]),
            Err(Error::Overflow(_))
        ));
        assert!(BatchRef::contiguous(&d, &[0, 2, 2]).is_ok());
    }
}
