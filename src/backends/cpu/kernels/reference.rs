//! Scalar reference kernels: one per op, simple and obviously right. Every other kernel
//! (SIMD128, WGSL) is checked against these.

use super::super::view::TensorView;
use crate::error::{Error, Result};
use crate::graph::{BinaryOp, DType, Op, RopeMode, RopeParams};

/// Computes `op` into `dst` from `src` with the reference kernels.
pub fn compute(op: &Op, dst: &TensorView, src: &[TensorView]) -> Result<()> {
    match *op {
        Op::Leaf | Op::View => Ok(()),
        Op::GetRows => get_rows(dst, &src[0], &src[1]),
        Op::SetRows => set_rows(dst, &src[0], &src[1], &src[2]),
        Op::Binary(b) => {
            binary(b, dst, &src[0], &src[1]);
            Ok(())
        }
        Op::Scale(s) => {
            map(dst, &src[0], |x| x * s);
            Ok(())
        }
        Op::Clamp { min, max } => {
            map(dst, &src[0], |x| x.max(min).min(max));
            Ok(())
        }
        Op::Unary(u) => {
            map(dst, &src[0], |x| u.apply(x));
            Ok(())
        }
        Op::MatMul => {
            matmul(dst, &src[0], &src[1]);
            Ok(())
        }
        Op::SoftMax { scale } => {
            softmax(dst, &src[0], src.get(1), scale);
            Ok(())
        }
        Op::Attention { scale } => {
            attention(dst, &src[0], &src[1], &src[2], src.get(3), scale);
            Ok(())
        }
        Op::Norm { eps } => {
            norm(dst, &src[0], eps, false);
            Ok(())
        }
        Op::RmsNorm { eps } => {
            norm(dst, &src[0], eps, true);
            Ok(())
        }
        Op::Rope(p) => rope(dst, &src[0], &src[1], src.get(2), p),
        Op::Cpy => cpy(dst, &src[0]),
        Op::Concat { dim } => {
            concat(dst, &src[0], &src[1], dim);
            Ok(())
        }
        Op::SumRows | Op::Mean | Op::Argmax => {
            reduce_rows(op, dst, &src[0]);
            Ok(())
        }
    }
}

fn each_index(ne: [usize; 4], mut f: impl FnMut([usize; 4])) {
    for i3 in 0..ne[3] {
        for i2 in 0..ne[2] {
            for i1 in 0..ne[1] {
                for i0 in 0..ne[0] {
                    f([i0, i1, i2, i3]);
                }
            }
        }
    }
}

fn map(dst: &TensorView, a: &TensorView, f: impl Fn(f32) -> f32) {
    each_index(dst.ne, |i| dst.set(i, f(a.get(i))));
}

fn binary(op: BinaryOp, dst: &TensorView, a: &TensorView, b: &TensorView) {
    each_index(dst.ne, |i| {
        let x = a.get(i);
        let y = b.get([
            i[0] % b.ne[0],
            i[1] % b.ne[1],
            i[2] % b.ne[2],
            i[3] % b.ne[3],
        ]);
        dst.set(i, op.apply(x, y));
    });
}

fn get_rows(dst: &TensorView, a: &TensorView, idx: &TensorView) -> Result<()> {
    let mut row = vec![0f32; a.ne[0]];
    for i2 in 0..idx.ne[1] {
        for i1 in 0..idx.ne[0] {
            let r = idx.get_i32([i1, i2, 0, 0]);
            if r < 0 || r as usize >= a.ne[1] {
                return Err(Error::OutOfBounds(format!(
                    "get_rows: index {r} of {} rows",
                    a.ne[1]
                )));
            }
            let a2 = if a.ne[2] == 1 { 0 } else { i2 };
            a.load_row(r as usize, a2, 0, &mut row);
            for (i0, &v) in row.iter().enumerate() {
                dst.set([i0, i1, i2, 0], v);
            }
        }
    }
    Ok(())
}

/// Checks every index of a `set_rows` against `rows`, then copies `a` and writes `b`'s rows
/// in order (so the last of two rows aimed at one row wins).
fn set_rows(dst: &TensorView, a: &TensorView, b: &TensorView, idx: &TensorView) -> Result<()> {
    let row_of =
        |j: usize, i2: usize, i3: usize| idx.get_i32([j, i2 % idx.ne[1], i3 % idx.ne[2], 0]);
    for (j, i2, i3) in b.rows() {
        let r = row_of(j, i2, i3);
        if r < 0 || r as usize >= a.ne[1] {
            return Err(Error::OutOfBounds(format!(
                "set_rows: index {r} of {} rows",
                a.ne[1]
            )));
        }
    }
    map(dst, a, |x| x);
    for (j, i2, i3) in b.rows() {
        let r = row_of(j, i2, i3) as usize;
        for i0 in 0..b.ne[0] {
            dst.set([i0, r, i2, i3], b.get([i0, j, i2, i3]));
        }
    }
    Ok(())
}

fn matmul(dst: &TensorView, a: &TensorView, b: &TensorView) {
    let k = a.ne[0];
    let mut arow = vec![0f32; k];
    let mut bcol = vec![0f32; k];
    for i3 in 0..dst.ne[3] {
        for i2 in 0..dst.ne[2] {
            let (a2, a3) = (i2 / (b.ne[2] / a.ne[2]), i3 / (b.ne[3] / a.ne[3]));
            for n in 0..dst.ne[1] {
                b.load_row(n, i2, i3, &mut bcol);
                for m in 0..dst.ne[0] {
                    a.load_row(m, a2, a3, &mut arow);
                    let s: f64 = arow
                        .iter()
                        .zip(&bcol)
                        .map(|(&x, &y)| x as f64 * y as f64)
                        .sum();
                    dst.set([m, n, i2, i3], s as f32);
                }
            }
        }
    }
}

fn softmax(dst: &TensorView, a: &TensorView, mask: Option<&TensorView>, scale: f32) {
    let n = a.ne[0];
    let mut row = vec![0f32; n];
    for (i1, i2, i3) in a.rows() {
        for (i0, r) in row.iter_mut().enumerate() {
            let m = mask.map_or(0.0, |m| {
                m.get([i0, i1 % m.ne[1], i2 % m.ne[2], i3 % m.ne[3]])
            });
            *r = a.get([i0, i1, i2, i3]) * scale + m;
        }
        let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        let mut sum = 0f64;
        for r in row.iter_mut() {
            *r = (*r - max).exp();
            sum += *r as f64;
        }
        for (i0, r) in row.iter().enumerate() {
            dst.set([i0, i1, i2, i3], (*r as f64 / sum) as f32);
        }
    }
}

/// Per (query, head): scores over every key, softmax in f64, then the weighted sum of the
/// values; a row masked to -inf everywhere is zero.
fn attention(
    dst: &TensorView,
    q: &TensorView,
    k: &TensorView,
    v: &TensorView,
    mask: Option<&TensorView>,
    scale: f32,
) {
    let [d, n_q, heads, batch] = q.ne;
    let (n_kv, group, kv_group) = (k.ne[1], heads / k.ne[2], batch / k.ne[3]);
    let d_v = v.ne[0];
    let mut w = vec![0f64; n_kv];
    for b in 0..batch {
        for h in 0..heads {
            let (kh, kb) = (h / group, b / kv_group);
            for i in 0..n_q {
                for (j, wj) in w.iter_mut().enumerate() {
                    let dot: f64 = (0..d)
                        .map(|e| q.get([e, i, h, b]) as f64 * k.get([e, j, kh, kb]) as f64)
                        .sum();
                    let m = mask.map_or(0.0, |m| {
                        m.get([j, i % m.ne[1], h % m.ne[2], b % m.ne[3]]) as f64
                    });
                    // As the unfused graph rounds it: the scaled score in f32, plus the mask.
                    *wj = (dot as f32 * scale) as f64 + m;
                }
                let max = w.iter().fold(f64::NEG_INFINITY, |a, &x| a.max(x));
                if max == f64::NEG_INFINITY {
                    w.fill(0.0);
                } else {
                    w.iter_mut().for_each(|x| *x = (*x - max).exp());
                }
                let sum: f64 = w.iter().sum();
                for e in 0..d_v {
                    let o: f64 = w
                        .iter()
                        .enumerate()
                        .map(|(j, &p)| p * v.get([e, j, kh, kb]) as f64)
                        .sum();
                    dst.set([e, h, i, b], if sum > 0.0 { (o / sum) as f32 } else { 0.0 });
                }
            }
        }
    }
}

fn norm(dst: &TensorView, a: &TensorView, eps: f32, rms: bool) {
    let n = a.ne[0];
    let mut row = vec![0f32; n];
    for (i1, i2, i3) in a.rows() {
        a.load_row(i1, i2, i3, &mut row);
        let mean = if rms {
            0.0
        } else {
            row.iter().map(|&v| v as f64).sum::<f64>() / n as f64
        };
        let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n as f64;
        let inv = 1.0 / (var + eps as f64).sqrt();
        for (i0, &v) in row.iter().enumerate() {
            dst.set([i0, i1, i2, i3], ((v as f64 - mean) * inv) as f32);
        }
    }
}

fn rope(
    dst: &TensorView,
    a: &TensorView,
    pos: &TensorView,
    factors: Option<&TensorView>,
    p: RopeParams,
) -> Result<()> {
    let half = p.n_dims / 2;
    for (i1, i2, i3) in a.rows() {
        let position = pos.get_i32([i2, 0, 0, 0]) as f64 * p.freq_scale as f64;
        for i0 in p.n_dims..a.ne[0] {
            dst.set([i0, i1, i2, i3], a.get([i0, i1, i2, i3]));
        }
        for i in 0..half {
            let mut theta = position * (p.freq_base as f64).powf(-2.0 * i as f64 / p.n_dims as f64);
            if let Some(f) = factors {
                theta /= f.get([i, 0, 0, 0]) as f64;
            }
            let (s, c) = theta.sin_cos();
            let (j0, j1) = match p.mode {
                RopeMode::Normal => (2 * i, 2 * i + 1),
                RopeMode::NeoX => (i, i + half),
            };
            let x0 = a.get([j0, i1, i2, i3]) as f64;
            let x1 = a.get([j1, i1, i2, i3]) as f64;
            dst.set([j0, i1, i2, i3], (x0 * c - x1 * s) as f32);
            dst.set([j1, i1, i2, i3], (x0 * s + x1 * c) as f32);
        }
    }
    Ok(())
}

fn cpy(dst: &TensorView, a: &TensorView) -> Result<()> {
    if a.dtype == DType::I32 {
        each_index(dst.ne, |i| dst.set_i32(i, a.get_i32(i)));
        return Ok(());
    }
    if a.dtype == dst.dtype && a.dtype.is_quantized() {
        for (i1, i2, i3) in a.rows() {
            unsafe {
                dst.row_bytes_mut(i1, i2, i3)
                    .copy_from_slice(a.row_bytes(i1, i2, i3))
            };
        }
        return Ok(());
    }
    let mut row = vec![0f32; a.ne[0]];
    for (i1, i2, i3) in a.rows() {
        a.load_row(i1, i2, i3, &mut row);
        crate::graph::row_from_f32(dst.dtype, &row, unsafe { dst.row_bytes_mut(i1, i2, i3) })?;
    }
    Ok(())
}

fn concat(dst: &TensorView, a: &TensorView, b: &TensorView, dim: usize) {
    let bytes = dst.dtype.block_bytes();
    each_index(dst.ne, |i| {
        let (src, j) = if i[dim] < a.ne[dim] {
            (a, i)
        } else {
            let mut j = i;
            j[dim] -= a.ne[dim];
            (b, j)
        };
        unsafe { std::ptr::copy(src.ptr_at(j), dst.ptr_at(i), bytes) };
    });
}

fn reduce_rows(op: &Op, dst: &TensorView, a: &TensorView) {
    let n = a.ne[0];
    let mut row = vec![0f32; n];
    for (i1, i2, i3) in a.rows() {
        a.load_row(i1, i2, i3, &mut row);
        let out = [0, i1, i2, i3];
        match op {
            Op::Argmax => {
                let mut best = 0;
                for (i, &v) in row.iter().enumerate() {
                    if v > row[best] {
                        best = i;
                    }
                }
                dst.set_i32(out, best as i32);
            }
            _ => {
                let s: f64 = row.iter().map(|&v| v as f64).sum();
                let v = if matches!(op, Op::Mean) {
                    s / n.max(1) as f64
                } else {
                    s
                };
                dst.set(out, v as f32);
            }
        }
    }
}
