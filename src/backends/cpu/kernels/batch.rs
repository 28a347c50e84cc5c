//! Rows of tensor views as the matmul kernels address them: an operand's rows at one batch
//! ([`Rows`]), several batches taken as one run of flat rows ([`Batches`]), and a packed f32
//! destination's rows by flat index ([`DstRows`]). Below the kernels: the f32 GEMM, the
//! quantized ones and the epilogues all address rows through these.

use super::simd::{f16_at, f16_row};
use crate::backends::cpu::TensorView;
use crate::graph::{row_to_f32, DType};

/// Rows of an F32/F16 tensor at batch `(i2, i3)`, read as f32.
#[derive(Clone, Copy)]
pub struct Rows<'a> {
    v: &'a TensorView,
    i2: usize,
    i3: usize,
}

impl<'a> Rows<'a> {
    /// Rows of `v` in batch `(i2, i3)`.
    pub fn new(v: &'a TensorView, i2: usize, i3: usize) -> Self {
        Self { v, i2, i3 }
    }

    /// Pointer to row `r`'s element `k0`.
    #[inline]
    pub(super) fn ptr(&self, r: usize, k0: usize) -> *const u8 {
        // Index in range: r < ne1, (i2, i3) in range, k0 < ne0 (checked by callers).
        unsafe {
            self.v
                .ptr_at([0, r, self.i2, self.i3])
                .add(k0 * self.v.nb[0])
        }
    }

    /// Whether rows are packed f32 (readable in place).
    pub fn is_f32_packed(&self) -> bool {
        super::packed_f32(self.v)
    }

    /// Row `r`'s first `k` elements in place, when rows are f32 with packed elements (no
    /// copy needed); `None` otherwise.
    #[inline]
    pub fn f32_row(&self, r: usize, k: usize) -> Option<&'a [f32]> {
        let fits = self.is_f32_packed() && k <= self.v.ne[0];
        // In range and aligned (checked): `k` f32 of row `r`, alive as long as the view.
        fits.then(|| unsafe { std::slice::from_raw_parts(self.ptr(r, 0) as *const f32, k) })
    }

    /// Elements `k0 .. k0 + out.len()` of row `r` as f32 (for quantized rows both ends are
    /// whole blocks).
    #[inline]
    pub fn load(&self, r: usize, k0: usize, out: &mut [f32]) {
        let nb0 = self.v.nb[0];
        let dtype = self.v.dtype;
        if dtype.is_quantized() {
            let bs = dtype.block_size();
            let p = unsafe { self.v.ptr_at([0, r, self.i2, self.i3]).add(k0 / bs * nb0) };
            // In range: rows are packed and `k0 + out.len() <= ne0`.
            let bytes = unsafe { std::slice::from_raw_parts(p, out.len() / bs * nb0) };
            row_to_f32(dtype, bytes, out);
            return;
        }
        let p = self.ptr(r, k0);
        unsafe {
            match dtype {
                DType::F32 if nb0 == 4 => {
                    std::ptr::copy_nonoverlapping(p as *const f32, out.as_mut_ptr(), out.len())
                }
                // Packed f16 (f16 weights' rows): four at a time.
                DType::F16 if nb0 == 2 => f16_row(p, out),
                DType::F16 => {
                    for (i, o) in out.iter_mut().enumerate() {
                        *o = f16_at(p.add(i * nb0));
                    }
                }
                _ => {
                    for (i, o) in out.iter_mut().enumerate() {
                        *o = (p.add(i * nb0) as *const f32).read_unaligned();
                    }
                }
            }
        }
    }
}

/// Rows of several batches of a tensor taken as one run: flat row `r` is row `r % n` of
/// batch `first + r / n`, batch `i` being `(i % ne2, i / ne2)`. The quantized kernels multiply
/// every batch of activations by a 2-D weight as one run (one cut over threads per matmul,
/// not one per batch: a wake-up of the pool's threads costs more in a browser than natively).
#[derive(Clone, Copy)]
pub struct Batches {
    /// Rows per batch (dim 1).
    pub n: usize,
    /// Batches along dim 2.
    pub ne2: usize,
    /// The run's first batch.
    pub first: usize,
}

impl Batches {
    /// Row `n` of batch `(i2, i3)` of flat row `r` (only called for rows that exist, so
    /// `n` and `ne2` are not 0).
    #[inline]
    pub fn at(&self, r: usize) -> (usize, usize, usize) {
        let b = self.first + r / self.n;
        (r % self.n, b % self.ne2, b / self.ne2)
    }
}

/// Rows of a packed f32 dst (`nb[0] == 4`) by flat row index (see [`Batches`]).
pub struct DstRows<'a> {
    pub v: &'a TensorView,
    pub rows: Batches,
}

impl<'a> DstRows<'a> {
    /// The rows of batch `(i2, i3)`: row `n` is dst row `n` of that batch.
    pub fn batch(v: &'a TensorView, i2: usize, i3: usize) -> Self {
        let rows = Batches {
            n: v.ne[1],
            ne2: v.ne[2],
            first: i2 + v.ne[2] * i3,
        };
        Self { v, rows }
    }

    /// Pointer to flat row `r` (ne0 packed f32).
    #[inline]
    pub fn row(&self, r: usize) -> *mut f32 {
        let (j, i2, i3) = self.rows.at(r);
        self.v.ptr_at([0, j, i2, i3]) as *mut f32
    }
}
