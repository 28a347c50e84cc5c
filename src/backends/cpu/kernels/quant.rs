//! Q8_0 / Q4_0 matmul, as ggml does it: each activation row is quantized to Q8_0 on the fly,
//! then every output is a sum over 32-element blocks of `d_w * d_x * (integer dot)`, the
//! integer dots in i8x16/i16x8 lanes. Weights are read in GGUF's block layout as they are.

use super::gemm::{DstRows, Rows};
use super::simd::{dot_i8x32, dot_q4x32, F32x4};
use crate::backends::cpu::TensorView;
use crate::graph::{DType, QK};

/// Weight rows per block of the output loop (they stay in cache while every activation row
/// passes over them).
const M_BLOCK: usize = 32;

/// Activation rows quantized to Q8_0 (f32 scales kept apart from the i8 values).
#[derive(Default)]
pub struct QuantRows {
    /// `k / 32` scales per row.
    pub d: Vec<f32>,
    /// `k` values per row.
    pub q: Vec<i8>,
}

/// Quantizes `x` (a whole number of blocks) to Q8_0 into `d` / `q` (ggml's rounding).
pub fn quantize_q8(x: &[f32], d: &mut [f32], q: &mut [i8]) {
    for ((blk, db), qb) in x
        .chunks_exact(QK)
        .zip(d.iter_mut())
        .zip(q.chunks_exact_mut(QK))
    {
        let amax = blk.iter().fold(0f32, |m, v| m.max(v.abs()));
        let scale = amax / 127.0;
        let id = if scale != 0.0 { 1.0 / scale } else { 0.0 };
        *db = scale;
        for (o, &v) in qb.iter_mut().zip(blk) {
            *o = (v * id).round() as i8;
        }
    }
}

/// The f16 at `p` as f32: branch-free for normal numbers (every block scale in practice).
#[inline(always)]
fn f16_at(p: *const u8) -> f32 {
    let h = unsafe { (p as *const u16).read_unaligned() } as u32;
    let exp = h & 0x7c00;
    if exp == 0 || exp == 0x7c00 {
        return half::f16::from_bits(h as u16).to_f32();
    }
    f32::from_bits(((h & 0x8000) << 16) | (((h & 0x7fff) << 13) + ((127 - 15) << 23)))
}

/// Dot of one Q8_0 weight row (`nb` blocks at `w`) with a quantized activation row.
///
/// # Safety
/// `w` readable for `nb` Q8_0 blocks; `d`/`q` hold `nb` blocks.
#[inline]
pub unsafe fn dot_q8_0(w: *const u8, d: &[f32], q: &[i8], nb: usize) -> f32 {
    let mut acc = F32x4::splat(0.0);
    for (i, &dx) in d.iter().enumerate().take(nb) {
        unsafe {
            let blk = w.add(i * 34);
            let s = F32x4::from_i32(dot_i8x32(blk.add(2) as *const i8, q.as_ptr().add(i * QK)));
            acc = acc + s * F32x4::splat(f16_at(blk) * dx);
        }
    }
    acc.hsum()
}

/// Dot of one Q4_0 weight row (`nb` blocks at `w`) with a quantized activation row.
///
/// # Safety
/// As for [`dot_q8_0`] with Q4_0 blocks.
#[inline]
pub unsafe fn dot_q4_0(w: *const u8, d: &[f32], q: &[i8], nb: usize) -> f32 {
    let mut acc = F32x4::splat(0.0);
    for (i, &dx) in d.iter().enumerate().take(nb) {
        unsafe {
            let blk = w.add(i * 18);
            let s = F32x4::from_i32(dot_q4x32(blk.add(2), q.as_ptr().add(i * QK)));
            acc = acc + s * F32x4::splat(f16_at(blk) * dx);
        }
    }
    acc.hsum()
}

/// `dst = src0 · src1ᵀ` for Q8_0/Q4_0 `a` and f32 `b`; `false` when this kernel does not apply.
pub fn matmul(dst: &TensorView, a: &TensorView, b: &TensorView) -> bool {
    let dot = match a.dtype {
        DType::Q8_0 => dot_q8_0,
        DType::Q4_0 => dot_q4_0,
        _ => return false,
    };
    if b.dtype != DType::F32 || dst.dtype != DType::F32 || dst.nb[0] != 4 || !a.rows_contiguous() {
        return false;
    }
    let (m, n, k) = (a.ne[1], b.ne[1], a.ne[0]);
    if k % QK != 0 {
        return false;
    }
    let nb = k / QK;
    let (r2, r3) = (b.ne[2] / a.ne[2].max(1), b.ne[3] / a.ne[3].max(1));
    let mut xq = QuantRows::default();
    let mut row = vec![0f32; k];
    for i3 in 0..dst.ne[3] {
        for i2 in 0..dst.ne[2] {
            let (a2, a3) = (i2 / r2.max(1), i3 / r3.max(1));
            let br = Rows::new(b, i2, i3);
            let out = DstRows { v: dst, i2, i3 };
            xq.d.resize(n * nb, 0.0);
            xq.q.resize(n * k, 0);
            for j in 0..n {
                br.load(j, 0, &mut row);
                quantize_q8(
                    &row,
                    &mut xq.d[j * nb..(j + 1) * nb],
                    &mut xq.q[j * k..(j + 1) * k],
                );
            }
            for m0 in (0..m).step_by(M_BLOCK) {
                for j in 0..n {
                    let (d, q) = (&xq.d[j * nb..(j + 1) * nb], &xq.q[j * k..(j + 1) * k]);
                    let orow = out.row(j);
                    for i in m0..m.min(m0 + M_BLOCK) {
                        let w = a.ptr_at([0, i, a2, a3]) as *const u8;
                        unsafe { *orow.add(i) = dot(w, d, q, nb) };
                    }
                }
            }
        }
    }
    true
}
