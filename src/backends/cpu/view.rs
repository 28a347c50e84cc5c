//! Raw, bounds-verified access to tensor memory for CPU kernels.
//!
//! A [`TensorView`] is only made by [`TensorView::new`], which checks that every byte the
//! tensor's shape and strides can reach lies inside its buffer. Kernels then address elements
//! through it without further checks. Views may alias (in-place ops), so this works on raw
//! pointers rather than slices.

use crate::error::{Error, Result};
use crate::graph::{DType, Tensor, MAX_DIMS};

/// A tensor's memory on the host with its shape and byte strides.
#[derive(Clone, Copy, Debug)]
pub struct TensorView {
    ptr: *mut u8,
    /// Element type.
    pub dtype: DType,
    /// Elements per dim.
    pub ne: [usize; MAX_DIMS],
    /// Byte strides per dim.
    pub nb: [usize; MAX_DIMS],
}

// SAFETY: a view is an address with a shape; it owns nothing, and its memory outlives every
// kernel call (the caller holds the buffers). Parallel kernels share one node's views across
// the pool's threads for one call: inputs are only read, and the output is cut into disjoint
// ranges (`Par::for_ranges`), so no byte is written by two threads, nor read by one while
// another writes it (an in-place op's thread reads exactly the elements it then writes).
unsafe impl Send for TensorView {}
unsafe impl Sync for TensorView {}

impl TensorView {
    /// A view of `t` at `base + offset`, after checking it lies in `[base, base + buf_len)`.
    ///
    /// # Safety
    /// `base` must point to `buf_len` bytes that stay valid, and are not accessed through
    /// other means, while the view is used.
    pub unsafe fn new(t: &Tensor, base: *mut u8, buf_len: usize, offset: usize) -> Result<Self> {
        let end = offset.checked_add(t.nbytes());
        if end.is_none_or(|e| e > buf_len) {
            return Err(Error::OutOfBounds(format!(
                "tensor {} ({} bytes at {offset}) outside its buffer of {buf_len} bytes",
                t.name,
                t.nbytes()
            )));
        }
        Ok(Self {
            ptr: unsafe { base.add(offset) },
            dtype: t.dtype,
            ne: t.ne,
            nb: t.nb,
        })
    }

    /// A view of plain host memory, e.g. a `Vec` in a test (same contract as `new`).
    ///
    /// # Safety
    /// As for [`TensorView::new`].
    pub unsafe fn from_raw(
        ptr: *mut u8,
        dtype: DType,
        ne: [usize; MAX_DIMS],
        nb: [usize; MAX_DIMS],
    ) -> Self {
        Self { ptr, dtype, ne, nb }
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.ne.iter().product()
    }

    #[inline]
    fn offset(&self, i: [usize; MAX_DIMS]) -> usize {
        i[0] * self.nb[0] + i[1] * self.nb[1] + i[2] * self.nb[2] + i[3] * self.nb[3]
    }

    /// Pointer to element (or block, for quantized types) `i`; `i` must be in range.
    #[inline]
    pub fn ptr_at(&self, i: [usize; MAX_DIMS]) -> *mut u8 {
        debug_assert!((0..MAX_DIMS).all(|d| i[d] < self.ne[d].max(1)));
        // In range by the constructor's check and the caller's index bounds.
        unsafe { self.ptr.add(self.offset(i)) }
    }

    /// Element `i` as f32 (F32/F16/I32 only).
    #[inline]
    pub fn get(&self, i: [usize; MAX_DIMS]) -> f32 {
        let p = self.ptr_at(i);
        unsafe {
            match self.dtype {
                DType::F32 => (p as *const f32).read_unaligned(),
                DType::F16 => half::f16::from_bits((p as *const u16).read_unaligned()).to_f32(),
                DType::I32 => (p as *const i32).read_unaligned() as f32,
                // The quantized dtypes.
                _ => f32::NAN,
            }
        }
    }

    /// Element `i` of an I32 tensor.
    #[inline]
    pub fn get_i32(&self, i: [usize; MAX_DIMS]) -> i32 {
        unsafe { (self.ptr_at(i) as *const i32).read_unaligned() }
    }

    /// Sets element `i` from f32 (F32/F16/I32 only).
    #[inline]
    pub fn set(&self, i: [usize; MAX_DIMS], v: f32) {
        let p = self.ptr_at(i);
        unsafe {
            match self.dtype {
                DType::F32 => (p as *mut f32).write_unaligned(v),
                DType::F16 => (p as *mut u16).write_unaligned(half::f16::from_f32(v).to_bits()),
                DType::I32 => (p as *mut i32).write_unaligned(v as i32),
                // The quantized dtypes.
                _ => {}
            }
        }
    }

    /// Sets element `i` of an I32 tensor.
    #[inline]
    pub fn set_i32(&self, i: [usize; MAX_DIMS], v: i32) {
        unsafe { (self.ptr_at(i) as *mut i32).write_unaligned(v) }
    }

    /// The bytes of row `(i1, i2, i3)`; rows must be packed (`nb[0]` one element/block).
    ///
    /// # Safety
    /// No mutable access to the same bytes may be live.
    #[inline]
    pub unsafe fn row_bytes(&self, i1: usize, i2: usize, i3: usize) -> &[u8] {
        let n = self.dtype.row_bytes(self.ne[0]).unwrap_or(0);
        unsafe { std::slice::from_raw_parts(self.ptr_at([0, i1, i2, i3]), n) }
    }

    /// The bytes of row `(i1, i2, i3)`, mutable; rows must be packed.
    ///
    /// # Safety
    /// No other access to the same bytes may be live.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn row_bytes_mut(&self, i1: usize, i2: usize, i3: usize) -> &mut [u8] {
        let n = self.dtype.row_bytes(self.ne[0]).unwrap_or(0);
        unsafe { std::slice::from_raw_parts_mut(self.ptr_at([0, i1, i2, i3]), n) }
    }

    /// Whether rows are packed.
    pub fn rows_contiguous(&self) -> bool {
        self.nb[0] == self.dtype.block_bytes()
    }

    /// The same memory as one batch of `ne[1] · ne[2] · ne[3]` rows, when the rows of each
    /// batch follow the last batch's (dims 2 and 3 add no gaps); `None` otherwise.
    pub fn batches_as_rows(&self) -> Option<TensorView> {
        if self.nb[2] != self.nb[1] * self.ne[1] || self.nb[3] != self.nb[2] * self.ne[2] {
            return None;
        }
        let mut f = *self;
        f.ne = [self.ne[0], self.ne[1] * self.ne[2] * self.ne[3], 1, 1];
        f.nb[2] = f.nb[1] * f.ne[1];
        f.nb[3] = f.nb[2];
        Some(f)
    }

    /// Row `(i1, i2, i3)` as f32 into `out` (`ne[0]` values), any dtype and stride.
    pub fn load_row(&self, i1: usize, i2: usize, i3: usize, out: &mut [f32]) {
        if self.dtype.is_quantized() || (self.rows_contiguous() && self.dtype != DType::I32) {
            crate::graph::row_to_f32(self.dtype, unsafe { self.row_bytes(i1, i2, i3) }, out);
        } else {
            for (i0, o) in out.iter_mut().enumerate().take(self.ne[0]) {
                *o = self.get([i0, i1, i2, i3]);
            }
        }
    }

    /// Iterates over all row indices `(i1, i2, i3)`.
    pub fn rows(&self) -> impl Iterator<Item = (usize, usize, usize)> {
        let [_, n1, n2, n3] = self.ne;
        (0..n3).flat_map(move |i3| (0..n2).flat_map(move |i2| (0..n1).map(move |i1| (i1, i2, i3))))
    }
}
