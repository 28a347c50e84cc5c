//! The row dots: Q8_0 / Q4_0 weights read as GGUF blocks (no panels), each weight row dotted
//! with tiles of quantized activation rows.

use super::act::*;
use crate::backends::cpu::kernels::batch::DstRows;
use crate::backends::cpu::kernels::simd::{dot_i8x32, dot_q4x32, f16_at, F32x4, I8x32};
use crate::backends::cpu::TensorView;
use crate::graph::QK;
use std::ops::Range;

/// Weight rows per block of the output loop (they stay in cache while every activation row
/// passes over them).
pub(super) const M_BLOCK: usize = 32;

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

/// One of [`dot_q8_0`] / [`dot_q4_0`].
pub(super) type RowDot = unsafe fn(*const u8, &[f32], &[i8], usize) -> f32;

/// Activation rows per tile: each weight block is loaded (and for Q4_0 unpacked) once for
/// this many dot products.
pub(super) const N_TILE: usize = 4;

/// Dots of one weight row (`nb` blocks of `block_bytes` at `w`, values from `unpack`) with
/// `J` quantized activation rows (row `j` at `d[j * nb..]`, `q[j * k..]`).
///
/// # Safety
/// `w` readable for `nb` blocks; `d`/`q` hold `J` rows of `nb` blocks.
#[inline(never)]
pub(super) unsafe fn dot_rows<const J: usize>(
    w: *const u8,
    block_bytes: usize,
    unpack: impl Fn(*const u8) -> I8x32,
    d: &[f32],
    q: &[i8],
    nb: usize,
) -> [f32; J] {
    let k = nb * QK;
    let mut acc = [F32x4::splat(0.0); J];
    for i in 0..nb {
        unsafe {
            let blk = w.add(i * block_bytes);
            let wq = unpack(blk.add(2));
            let bias = wq.act_bias();
            let dw = f16_at(blk);
            for (j, a) in acc.iter_mut().enumerate() {
                let s = F32x4::from_i32(wq.dot(q.as_ptr().add(j * k + i * QK)) - bias);
                *a = *a + s * F32x4::splat(dw * *d.get_unchecked(j * nb + i));
            }
        }
    }
    acc.map(|a| a.hsum())
}

/// Dots of `R` weight rows (blocks at `w[r]`) with one quantized activation row. A lone
/// dot is one chain of dependent adds; `R` independent chains keep the SIMD units busy.
///
/// # Safety
/// Each `w[r]` readable for `nb` blocks; `d`/`q` hold `nb` blocks.
#[inline(never)]
pub(super) unsafe fn dot_wrows<const R: usize>(
    w: [*const u8; R],
    block_bytes: usize,
    unpack: impl Fn(*const u8) -> I8x32,
    d: &[f32],
    q: &[i8],
    nb: usize,
) -> [f32; R] {
    let mut acc = [F32x4::splat(0.0); R];
    for (i, &dx) in d.iter().enumerate().take(nb) {
        let x = unsafe { q.as_ptr().add(i * QK) };
        for (a, &wr) in acc.iter_mut().zip(&w) {
            unsafe {
                let blk = wr.add(i * block_bytes);
                let wq = unpack(blk.add(2));
                let s = F32x4::from_i32(wq.dot_act(x));
                *a = *a + s * F32x4::splat(f16_at(blk) * dx);
            }
        }
    }
    acc.map(|a| a.hsum())
}

/// Output rows `j0 .. j0 + J` for weight rows `rows` of one batch.
///
/// # Safety
/// Every weight row of `rows` in `a`'s batch `(a2, a3)`; `J` activation rows from `j0`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn tile<const J: usize>(
    out: &DstRows,
    a: &TensorView,
    (a2, a3): (usize, usize),
    rows: std::ops::Range<usize>,
    xq: &QuantRows,
    j0: usize,
    nb: usize,
    q4: bool,
) {
    let k = nb * QK;
    let (d, q) = (&xq.d[j0 * nb..(j0 + J) * nb], &xq.q[j0 * k..(j0 + J) * k]);
    for i in rows {
        let w = a.ptr_at([0, i, a2, a3]) as *const u8;
        let r: [f32; J] = unsafe {
            if q4 {
                dot_rows::<J>(w, 18, |p| I8x32::from_q4(p), d, q, nb)
            } else {
                dot_rows::<J>(w, 34, |p| I8x32::load(p as *const i8), d, q, nb)
            }
        };
        for (j, v) in r.iter().enumerate() {
            unsafe { *out.row(j0 + j).add(i) = *v };
        }
    }
}

/// Output rows `0 .. n` × weight rows `rows` of `a`'s batch `ab`: tiles of `N_TILE`
/// activation rows, then the rest one at a time (the matrix-vector case) over groups of 4
/// weight rows. The unit of work of [`matmul`]'s threads, not inlined into their closure so
/// that it is entered many times per matmul (see [`int8_block`]).
///
/// # Safety
/// Every weight row of `rows` in `a`'s batch `ab`; activation rows `0 .. n` in `xq`; dst
/// rows `0 .. n` hold `a.ne[1]` f32.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn dot_block(
    out: &DstRows,
    a: &TensorView,
    (a2, a3): (usize, usize),
    rows: Range<usize>,
    xq: &QuantRows,
    n: usize,
    q4: bool,
    dot: RowDot,
) {
    let nb = a.ne[0] / QK;
    let k = nb * QK;
    let mut j0 = 0;
    while j0 + N_TILE <= n {
        unsafe { tile::<N_TILE>(out, a, (a2, a3), rows.clone(), xq, j0, nb, q4) };
        j0 += N_TILE;
    }
    for j in j0..n {
        let (d, q) = (&xq.d[j * nb..(j + 1) * nb], &xq.q[j * k..(j + 1) * k]);
        let orow = out.row(j);
        let w = |i: usize| a.ptr_at([0, i, a2, a3]) as *const u8;
        let mut i = rows.start;
        while i + 4 <= rows.end {
            let ws = [w(i), w(i + 1), w(i + 2), w(i + 3)];
            let r = unsafe {
                if q4 {
                    dot_wrows(ws, 18, |p| I8x32::from_q4(p), d, q, nb)
                } else {
                    dot_wrows(ws, 34, |p| I8x32::load(p as *const i8), d, q, nb)
                }
            };
            for (o, v) in r.iter().enumerate() {
                unsafe { *orow.add(i + o) = *v };
            }
            i += 4;
        }
        for i in i..rows.end {
            unsafe { *orow.add(i) = dot(w(i), d, q, nb) };
        }
    }
}
