//! Fast row kernels for the ops models run every token: RoPE (one sin/cos table per
//! position, shared by all heads), row sums/means, and get_rows straight into packed rows.

use super::packed_f32;
use crate::backends::cpu::TensorView;
use crate::error::{Error, Result};
use crate::graph::{row_to_f32, DType, Op, RopeMode, RopeParams};

/// RoPE over packed f32 rows; `None` when the layout does not fit.
pub fn rope(dst: &TensorView, a: &TensorView, pos: &TensorView, p: RopeParams) -> Option<()> {
    if !(packed_f32(dst) && packed_f32(a)) || a.ne != dst.ne {
        return None;
    }
    let half = p.n_dims / 2;
    let mut cs = vec![(0f64, 0f64); half];
    let ne0 = a.ne[0];
    for i2 in 0..a.ne[2] {
        // The reference's formulas, in f64, computed once per position instead of per row.
        let position = pos.get_i32([i2, 0, 0, 0]) as f64 * p.freq_scale as f64;
        for (i, c) in cs.iter_mut().enumerate() {
            let theta = position * (p.freq_base as f64).powf(-2.0 * i as f64 / p.n_dims as f64);
            *c = theta.sin_cos();
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
    Some(())
}

/// Sum (or mean) of each packed f32 row.
pub fn sum_rows(op: &Op, dst: &TensorView, a: &TensorView) -> Option<()> {
    if !(packed_f32(a) && packed_f32(dst)) {
        return None;
    }
    let n = a.ne[0];
    let div = if matches!(op, Op::Mean) {
        n.max(1) as f32
    } else {
        1.0
    };
    for (i1, i2, i3) in a.rows() {
        let p = a.ptr_at([0, i1, i2, i3]) as *const f32;
        unsafe { *(dst.ptr_at([0, i1, i2, i3]) as *mut f32) = super::elementwise::sum(p, n) / div };
    }
    Some(())
}

/// get_rows into packed f32 dst rows from packed source rows of any dtype.
pub fn get_rows(dst: &TensorView, a: &TensorView, idx: &TensorView) -> Option<Result<()>> {
    if !packed_f32(dst) || !a.rows_contiguous() || a.dtype == DType::I32 {
        return None;
    }
    let n = a.ne[0];
    for i2 in 0..idx.ne[1] {
        for i1 in 0..idx.ne[0] {
            let r = idx.get_i32([i1, i2, 0, 0]);
            if r < 0 || r as usize >= a.ne[1] {
                return Some(Err(Error::OutOfBounds(format!(
                    "get_rows: index {r} of {} rows",
                    a.ne[1]
                ))));
            }
            let a2 = if a.ne[2] == 1 { 0 } else { i2 };
            let out = dst.ptr_at([0, i1, i2, 0]) as *mut f32;
            // dst is a fresh node: it never aliases the table.
            let out = unsafe { std::slice::from_raw_parts_mut(out, n) };
            row_to_f32(a.dtype, unsafe { a.row_bytes(r as usize, a2, 0) }, out);
        }
    }
    Some(Ok(()))
}
