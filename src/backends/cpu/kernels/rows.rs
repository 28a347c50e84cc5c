//! Fast row kernels for the ops models run every token: RoPE (one sin/cos table per
//! position, shared by all heads), row sums/means, and get_rows straight into packed rows.

use super::{aligned_f32, for_rows, for_rows_with, packed_f32, MIN_PAR_ELEMS};
use crate::backends::cpu::pool::Par;
use crate::backends::cpu::TensorView;
use crate::error::{Error, Result};
use crate::graph::{row_from_f32, row_to_f32, DType, Op, RopeMode, RopeParams};

/// RoPE over packed f32 rows; `None` when the layout does not fit.
pub fn rope(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    pos: &TensorView,
    factors: Option<&TensorView>,
    p: RopeParams,
) -> Option<()> {
    if !(packed_f32(dst) && packed_f32(a)) || a.ne != dst.ne {
        return None;
    }
    let ne0 = a.ne[0];
    // The reference's formulas, in f64: each pair's frequency once per call (a `powf` costs
    // as much as a `sin_cos`), divided by its factor where given, shared by the threads.
    let freqs: Vec<f64> = (0..p.n_dims / 2)
        .map(|i| {
            let f = (p.freq_base as f64).powf(-2.0 * i as f64 / p.n_dims as f64);
            f / factors.map_or(1.0, |t| t.get([i, 0, 0, 0]) as f64)
        })
        .collect();
    // Positions are cut over threads (each makes its own sin/cos table per position).
    let per_position = (ne0 * a.ne[1] * a.ne[3] * COST_ROPE).max(1);
    par.for_ranges(a.ne[2], MIN_PAR_ELEMS.div_ceil(per_position), 1, |r| {
        rope_positions(dst, a, pos, p, &freqs, r)
    });
    Some(())
}

/// Relative per-element costs (an add is 1) scaling [`MIN_PAR_ELEMS`]; not measured apart
/// (rope: f64 rotation per pair, like norm's few flops; conversion: a load and a store).
const COST_ROPE: usize = 4;
const COST_CONVERT: usize = 2;

/// RoPE of positions (dim 2) `r`, with each pair's frequency in `freqs` (`n_dims / 2`): the
/// angles once per position instead of per row.
fn rope_positions(
    dst: &TensorView,
    a: &TensorView,
    pos: &TensorView,
    p: RopeParams,
    freqs: &[f64],
    r: std::ops::Range<usize>,
) {
    let half = p.n_dims / 2;
    let ne0 = a.ne[0];
    let mut cs = vec![(0f64, 0f64); half];
    for i2 in r {
        let position = pos.get_i32([i2, 0, 0, 0]) as f64 * p.freq_scale as f64;
        for (c, &f) in cs.iter_mut().zip(freqs) {
            *c = (position * f).sin_cos();
        }
        for i3 in 0..a.ne[3] {
            for i1 in 0..a.ne[1] {
                let s = a.ptr_at([0, i1, i2, i3]) as *const f32;
                let d = dst.ptr_at([0, i1, i2, i3]) as *mut f32;
                for (i, &(sn, cn)) in cs.iter().enumerate() {
                    let (j0, j1) = match p.mode {
                        RopeMode::Normal => (2 * i, 2 * i + 1),
                        RopeMode::NeoX => (i, i + half),
                    };
                    unsafe {
                        let x0 = *s.add(j0) as f64;
                        let x1 = *s.add(j1) as f64;
                        *d.add(j0) = (x0 * cn - x1 * sn) as f32;
                        *d.add(j1) = (x0 * sn + x1 * cn) as f32;
                    }
                }
                if p.n_dims < ne0 && !std::ptr::eq(s, d) {
                    unsafe { std::ptr::copy(s.add(p.n_dims), d.add(p.n_dims), ne0 - p.n_dims) };
                }
            }
        }
    }
}

/// Sum (or mean) of each packed f32 row.
pub fn sum_rows(par: Par, op: &Op, dst: &TensorView, a: &TensorView) -> Option<()> {
    if !(packed_f32(a) && packed_f32(dst)) {
        return None;
    }
    let n = a.ne[0];
    let div = if matches!(op, Op::Mean) {
        n.max(1) as f32
    } else {
        1.0
    };
    for_rows(par, a, 1, |i1, i2, i3| {
        let p = a.ptr_at([0, i1, i2, i3]) as *const f32;
        unsafe { *(dst.ptr_at([0, i1, i2, i3]) as *mut f32) = super::elementwise::sum(p, n) / div };
    });
    Some(())
}

/// get_rows into packed f32 dst rows from packed source rows of any dtype.
pub fn get_rows(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    idx: &TensorView,
) -> Option<Result<()>> {
    if !a.rows_contiguous() {
        return None;
    }
    // In range: `get_rows_with` checked every index against `a`'s rows.
    get_rows_with(par, dst, a, idx, |r, a2, out| {
        row_to_f32(a.dtype, unsafe { a.row_bytes(r, a2, 0) }, out)
    })
}

/// [`get_rows`] with row `r` of batch `a2` of the table (shaped as `a`) read into `out`
/// by `row` (called only with rows in range).
pub fn get_rows_with(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    idx: &TensorView,
    row: impl Fn(usize, usize, &mut [f32]) + Sync,
) -> Option<Result<()>> {
    let shape_ok = dst.ne[1] == idx.ne[0] && dst.ne[2] == idx.ne[1] && dst.ne[3] == 1;
    if !packed_f32(dst) || a.dtype == DType::I32 || !shape_ok {
        return None;
    }
    for i2 in 0..idx.ne[1] {
        for i1 in 0..idx.ne[0] {
            let r = idx.get_i32([i1, i2, 0, 0]);
            if r < 0 || r as usize >= a.ne[1] {
                return Some(Err(Error::OutOfBounds(format!(
                    "get_rows: index {r} of {} rows",
                    a.ne[1]
                ))));
            }
        }
    }
    let n = a.ne[0];
    // dst rows (i1, i2) are idx's (i1, i2): every index was checked above.
    for_rows(par, dst, COST_CONVERT, |i1, i2, _| {
        let r = idx.get_i32([i1, i2, 0, 0]) as usize;
        let a2 = if a.ne[2] == 1 { 0 } else { i2 };
        let out = dst.ptr_at([0, i1, i2, 0]) as *mut f32;
        // dst is a fresh node: it never aliases the table; each row has one writer.
        let out = unsafe { std::slice::from_raw_parts_mut(out, n) };
        row(r, a2, out);
    });
    Some(Ok(()))
}

/// Copy with conversion (the reference's row loop, rows cut over threads); `None` for I32
/// or a dst whose rows are not packed.
pub fn cpy(par: Par, dst: &TensorView, a: &TensorView) -> Option<()> {
    if a.dtype == DType::I32 || !dst.rows_contiguous() || a.ne != dst.ne {
        return None;
    }
    if a.dtype == dst.dtype && a.dtype.is_quantized() {
        for_rows(par, a, 1, |i1, i2, i3| unsafe {
            dst.row_bytes_mut(i1, i2, i3)
                .copy_from_slice(a.row_bytes(i1, i2, i3))
        });
        return Some(());
    }
    // No quantizer for the dst (K-quants): the reference reports it.
    if !crate::graph::can_quantize(dst.dtype) {
        return None;
    }
    // f32 to f32 (the permute copies attention makes): a row is a memcpy, or a gather at
    // a's element stride, straight from pointers (no per-element index arithmetic).
    if aligned_f32(a) && packed_f32(dst) {
        let (n, step) = (a.ne[0], a.nb[0] / 4);
        for_rows(par, a, 1, |i1, i2, i3| {
            let s = a.ptr_at([0, i1, i2, i3]) as *const f32;
            let d = dst.ptr_at([0, i1, i2, i3]) as *mut f32;
            // In range: both views' rows hold `n` elements; dst never aliases a.
            unsafe {
                if step == 1 {
                    std::ptr::copy_nonoverlapping(s, d, n);
                } else {
                    for i in 0..n {
                        *d.add(i) = *s.add(i * step);
                    }
                }
            }
        });
        return Some(());
    }
    let row = || vec![0f32; a.ne[0]];
    for_rows_with(par, a, COST_CONVERT, row, |row, i1, i2, i3| {
        a.load_row(i1, i2, i3, row);
        // dst never aliases a (copies are not in-place); each row has one writer.
        // Cannot fail: `can_quantize(dst.dtype)` above.
        let _ = row_from_f32(dst.dtype, row, unsafe { dst.row_bytes_mut(i1, i2, i3) });
    });
    Some(())
}

/// set_rows over packed rows of one dtype (f32 or f16): `a`'s rows copied into `dst` (not
/// when it is computed in place, over `a`), then each row of `b` converted into the row its
/// index names, in order (the last of two rows aimed at one row wins). Every index is
/// checked first, so a bad one leaves `dst` unwritten. `None` when the layout does not fit
/// (the reference runs it then).
pub fn set_rows(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    idx: &TensorView,
) -> Option<Result<()>> {
    let fits = matches!(dst.dtype, DType::F32 | DType::F16)
        && a.dtype == dst.dtype
        && a.ne == dst.ne
        && a.rows_contiguous()
        && dst.rows_contiguous()
        && b.dtype == DType::F32;
    if !fits {
        return None;
    }
    let row_of =
        |j: usize, i2: usize, i3: usize| idx.get_i32([j, i2 % idx.ne[1], i3 % idx.ne[2], 0]);
    for (j, i2, i3) in b.rows() {
        let r = row_of(j, i2, i3);
        if r < 0 || r as usize >= a.ne[1] {
            return Some(Err(Error::OutOfBounds(format!(
                "set_rows: index {r} of {} rows",
                a.ne[1]
            ))));
        }
    }
    if a.ptr_at([0; 4]) != dst.ptr_at([0; 4]) || a.nb != dst.nb {
        // dst does not overlap a unless it is a itself (in place, same layout).
        for_rows(par, a, 1, |i1, i2, i3| unsafe {
            dst.row_bytes_mut(i1, i2, i3)
                .copy_from_slice(a.row_bytes(i1, i2, i3))
        });
    }
    let mut row = vec![0f32; b.ne[0]];
    for (j, i2, i3) in b.rows() {
        b.load_row(j, i2, i3, &mut row);
        let r = row_of(j, i2, i3) as usize;
        // In range (checked above); one writer. dst is f32 or f16, which always convert.
        if let Err(e) = row_from_f32(dst.dtype, &row, unsafe { dst.row_bytes_mut(r, i2, i3) }) {
            return Some(Err(e));
        }
    }
    Some(Ok(()))
}
