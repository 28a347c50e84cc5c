//! Data movement cases: cpy (dtype conversion, quantizing), concat, set_rows, get_rows.

use crate::graph::{DType, OpKind};
use crate::testing::OpCase;

use super::{operand, shape_name, Layout, EXACTISH, QUANT_CPY};

pub(super) fn cpy_cases(v: &mut Vec<OpCase>) {
    use DType::*;
    // (from, to, shape, layout)
    let list: [(DType, DType, [usize; 4], Layout); 38] = [
        (F32, F16, [65, 3, 2, 1], Layout::Contig),
        // f32 to f32 rows: memcpy (permuted rows, an offset view) or a strided gather.
        (F32, F32, [6, 4, 3, 2], Layout::Permuted),
        (F32, F32, [7, 3, 2, 1], Layout::Offset),
        (F32, Q8_0, [64, 3, 2, 1], Layout::Contig),
        (F32, Q4_0, [96, 5, 1, 1], Layout::Contig),
        (F16, F32, [33, 4, 1, 1], Layout::Contig),
        (Q8_0, F32, [64, 5, 1, 1], Layout::Contig),
        (Q4_0, F32, [128, 3, 1, 1], Layout::Contig),
        (Q4_0, F16, [32, 3, 1, 1], Layout::Contig),
        (Q8_0, Q8_0, [64, 3, 1, 1], Layout::Offset),
        (F32, F32, [7, 5, 3, 1], Layout::Transposed),
        (F32, F16, [9, 6, 1, 1], Layout::Transposed),
        (F16, F16, [5, 11, 1, 1], Layout::Transposed),
        (F32, Q8_0, [64, 4, 3, 1], Layout::Permuted),
        (F32, Q4_0, [32, 7, 1, 1], Layout::Offset),
        (F16, F32, [6, 4, 3, 1], Layout::Permuted),
        (F16, F32, [3, 5, 1, 1], Layout::Transposed),
        // 30 bytes: not a whole number of 4-byte words.
        (F16, F16, [5, 3, 1, 1], Layout::Contig),
        // Five blocks (odd: a lone last block) gathered from a transposed view.
        (F32, Q8_0, [32, 5, 1, 1], Layout::Transposed),
        (F32, Q4_0, [32, 5, 1, 1], Layout::Transposed),
        (F16, Q8_0, [64, 3, 1, 1], Layout::Contig),
        (F16, Q4_0, [64, 3, 1, 1], Layout::Contig),
        (Q4_0, Q4_0, [32, 3, 1, 1], Layout::Offset),
        (Q5_0, F32, [96, 3, 1, 1], Layout::Contig),
        (Q5_0, F16, [64, 3, 2, 1], Layout::Offset),
        (Q5_1, F32, [96, 3, 1, 1], Layout::Contig),
        (Q5_1, F16, [64, 3, 2, 1], Layout::Permuted),
        (Q4_1, F32, [64, 3, 1, 1], Layout::Contig),
        (Q4_1, F16, [96, 2, 2, 1], Layout::Offset),
        (IQ4_NL, F32, [96, 3, 1, 1], Layout::Contig),
        (IQ4_NL, F16, [64, 3, 2, 1], Layout::Permuted),
        // K-quants dequantized, and copied as bytes (the graph's cpy does not quantize to them).
        (Q2_K, F32, [256, 3, 1, 1], Layout::Contig),
        (Q3_K, F16, [512, 2, 1, 1], Layout::Contig),
        (Q4_K, F32, [256, 3, 2, 1], Layout::Offset),
        (Q5_K, F32, [256, 4, 3, 1], Layout::Permuted),
        (Q6_K, F16, [256, 3, 1, 1], Layout::Contig),
        (Q4_K, Q4_K, [256, 3, 1, 1], Layout::Offset),
        (Q6_K, Q6_K, [512, 2, 1, 1], Layout::Contig),
    ];
    for (from, to, ne, layout) in list {
        let tol = if to.is_quantized() {
            QUANT_CPY
        } else {
            EXACTISH
        };
        let name = format!(
            "cpy_{}_{}_{}_{layout:?}",
            from.name(),
            to.name(),
            shape_name(ne)
        );
        v.push(OpCase::new(name, OpKind::Cpy, tol, move |b| {
            let x = operand(b, from, ne, layout, -2.0, 2.0)?;
            let y = b.g.cpy(x, to)?;
            b.output(y)
        }));
    }
    v.push(OpCase::new(
        "cpy_i32_i32_7x3_Transposed",
        OpKind::Cpy,
        0.0,
        |b| {
            let vals: Vec<i32> = (0..21).map(|_| b.rng.next_u32() as i32).collect();
            let x = b.input_i32(&[3, 7], &vals)?;
            let t = b.g.transpose(x)?;
            let y = b.g.cpy(t, DType::I32)?;
            b.output(y)
        },
    ));
}

pub(super) fn concat_cases(v: &mut Vec<OpCase>) {
    let base = [5, 4, 3, 2];
    for dim in 0..4 {
        for layout in [Layout::Contig, Layout::Transposed] {
            let mut b_ne = base;
            b_ne[dim] = if dim == 1 { 1 } else { 3 };
            v.push(OpCase::new(
                format!("concat_f32_dim{dim}_{layout:?}"),
                OpKind::Concat,
                0.0,
                move |b| {
                    let x = operand(b, DType::F32, base, layout, -1.0, 1.0)?;
                    let y = b.input(DType::F32, &b_ne)?;
                    let z = b.g.concat(x, y, dim)?;
                    b.output(z)
                },
            ));
        }
    }
    v.push(OpCase::new(
        "concat_f32_dim1_second_Transposed",
        OpKind::Concat,
        0.0,
        |b| {
            let x = b.input(DType::F32, &[5, 3, 2])?;
            let y = operand(b, DType::F32, [5, 4, 2, 1], Layout::Transposed, -1.0, 1.0)?;
            let z = b.g.concat(x, y, 1)?;
            b.output(z)
        },
    ));
    v.push(OpCase::new(
        "concat_f32_dim1_empty_second",
        OpKind::Concat,
        0.0,
        |b| {
            let x = b.input(DType::F32, &[5, 3, 2])?;
            let y = b.input(DType::F32, &[5, 0, 2])?;
            let z = b.g.concat(x, y, 1)?;
            b.output(z)
        },
    ));
    v.push(OpCase::new("concat_i32_dim1", OpKind::Concat, 0.0, |b| {
        let x = b.input_i32(&[6, 2], &(0..12).collect::<Vec<_>>())?;
        let y = b.input_i32(&[6, 3], &(100..118).collect::<Vec<_>>())?;
        let z = b.g.concat(x, y, 1)?;
        b.output(z)
    }));
}

/// set_rows: `dst` `[ne0, rows, ne2, ne3]` of `dtype`, rows `[ne0, n, ne2, ne3]` (in `layout`),
/// indices `[n, c2, c3]` drawn from `rows` (with repeats when `dups`).
pub(super) fn set_rows_cases(v: &mut Vec<OpCase>) {
    type Case = (DType, [usize; 4], usize, [usize; 2], Layout, bool);
    let cases: [Case; 7] = [
        (DType::F32, [7, 10, 1, 1], 3, [1, 1], Layout::Contig, false),
        // A decode step's KV write: one row into a longer cache.
        (DType::F32, [64, 40, 1, 1], 1, [1, 1], Layout::Contig, false),
        // Two rows aimed at one row: the last wins.
        (DType::F32, [5, 6, 1, 1], 6, [1, 1], Layout::Contig, true),
        // Per-batch indices along dim 2, shared along dim 3.
        (DType::F32, [5, 6, 3, 2], 2, [3, 1], Layout::Contig, false),
        // Indices shared by every batch; rows read through a transposed view.
        (
            DType::F32,
            [6, 9, 2, 2],
            4,
            [1, 1],
            Layout::Transposed,
            false,
        ),
        (DType::F32, [9, 8, 2, 1], 3, [2, 1], Layout::Offset, false),
        // An f16 cache.
        (DType::F16, [16, 12, 2, 1], 5, [2, 1], Layout::Contig, true),
    ];
    for (dtype, ne, n, [c2, c3], layout, dups) in cases {
        let name = format!(
            "set_rows_{}_{}_rows{n}_idx{c2}x{c3}_{layout:?}{}",
            dtype.name(),
            shape_name(ne),
            if dups { "_repeats" } else { "" }
        );
        let case = move |name: String| {
            OpCase::new(name, OpKind::SetRows, EXACTISH, move |b| {
                let dst = b.input(dtype, &ne)?;
                let rows = operand(b, DType::F32, [ne[0], n, ne[2], ne[3]], layout, -1.0, 1.0)?;
                let count = n * c2 * c3;
                let idx: Vec<i32> = if dups {
                    (0..count)
                        .map(|_| b.rng.below(ne[1].min(3)) as i32)
                        .collect()
                } else {
                    // Distinct within each batch's row of indices.
                    (0..count)
                        .map(|k| ((k % n) * 7 + k / n) as i32 % ne[1] as i32)
                        .collect()
                };
                let i = b.input_i32(&[n, c2, c3], &idx)?;
                let y = b.g.set_rows(dst, rows, i)?;
                b.output(y)
            })
        };
        v.push(case(name.clone()));
        // Written over its destination, as a KV cache is.
        v.push(case(name).in_place());
    }
}

pub(super) fn get_rows_cases(v: &mut Vec<OpCase>) {
    for &dtype in DType::WEIGHTS {
        let ne0 = if dtype.is_k_quant() {
            256
        } else if dtype.is_quantized() {
            64
        } else {
            7
        };
        let tol = EXACTISH;
        v.push(OpCase::new(
            format!("get_rows_{}_{ne0}x10_idx5", dtype.name()),
            OpKind::GetRows,
            tol,
            move |b| {
                let a = b.input(dtype, &[ne0, 10])?;
                let idx: Vec<i32> = (0..5).map(|_| b.rng.below(10) as i32).collect();
                let i = b.input_i32(&[5], &idx)?;
                let y = b.g.get_rows(a, i)?;
                b.output(y)
            },
        ));
        v.push(OpCase::new(
            format!("get_rows_{}_{ne0}x6x3_idx4x3", dtype.name()),
            OpKind::GetRows,
            tol,
            move |b| {
                let a = b.input(dtype, &[ne0, 6, 3])?;
                let idx: Vec<i32> = (0..12).map(|_| b.rng.below(6) as i32).collect();
                let i = b.input_i32(&[4, 3], &idx)?;
                let y = b.g.get_rows(a, i)?;
                b.output(y)
            },
        ));
    }
    v.push(OpCase::new(
        "get_rows_f32_9x8_Transposed",
        OpKind::GetRows,
        EXACTISH,
        |b| {
            let a = operand(b, DType::F32, [9, 8, 1, 1], Layout::Transposed, -1.0, 1.0)?;
            let i = b.input_i32(&[4], &[7, 0, 3, 3])?;
            let y = b.g.get_rows(a, i)?;
            b.output(y)
        },
    ));
    for dtype in DType::K_QUANTS {
        v.push(OpCase::new(
            format!("get_rows_{}_512x5_Offset", dtype.name()),
            OpKind::GetRows,
            EXACTISH,
            move |b| {
                let a = operand(b, dtype, [512, 5, 1, 1], Layout::Offset, -1.0, 1.0)?;
                let i = b.input_i32(&[3], &[4, 1, 2])?;
                let y = b.g.get_rows(a, i)?;
                b.output(y)
            },
        ));
    }
    v.push(OpCase::new(
        "get_rows_q4_0_64x5_Offset",
        OpKind::GetRows,
        EXACTISH,
        |b| {
            let a = operand(b, DType::Q4_0, [64, 5, 1, 1], Layout::Offset, -1.0, 1.0)?;
            let i = b.input_i32(&[3], &[4, 1, 2])?;
            let y = b.g.get_rows(a, i)?;
            b.output(y)
        },
    ));
}
