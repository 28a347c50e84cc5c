//! Element-wise cases: binary ops (broadcasting, shared memory), scale and unary ops, clamp.

use crate::error::Result;
use crate::graph::{BinaryOp, DType, OpKind, TensorId, UnaryOp};
use crate::testing::{CaseBuilder, OpCase};

use super::{operand, shape_name, Layout, EXACTISH, F32_ACC};

pub(super) fn binary_cases(v: &mut Vec<OpCase>) {
    // An f32 view at an odd byte offset (a raw reinterpretation, as a GGUF slice can be):
    // fast kernels must not assume aligned elements.
    v.push(OpCase::new(
        "add_f32_view_at_byte_offset_2",
        OpKind::Add,
        EXACTISH,
        |b| {
            let vals: Vec<f32> = (0..40).map(|i| 1.0 + i as f32 / 64.0).collect();
            let raw = b.input_values(DType::F32, &[40], &vals)?;
            let x = b.g.view(raw, &[7, 2], &[4, 40], 2)?;
            let y = b.input(DType::F32, &[7, 1])?;
            let z = b.g.add(x, y)?;
            b.output(z)
        },
    ));
    let shapes: [([usize; 4], [usize; 4], Layout, Layout); 9] = [
        ([7, 5, 3, 2], [7, 5, 3, 2], Layout::Contig, Layout::Contig),
        ([33, 4, 3, 2], [33, 1, 3, 1], Layout::Contig, Layout::Contig),
        ([65, 3, 1, 1], [65, 1, 1, 1], Layout::Contig, Layout::Contig),
        ([65, 3, 1, 1], [1, 3, 1, 1], Layout::Contig, Layout::Contig),
        ([1, 1, 1, 1], [1, 1, 1, 1], Layout::Contig, Layout::Contig),
        (
            [5, 7, 1, 1],
            [5, 1, 1, 1],
            Layout::Transposed,
            Layout::Contig,
        ),
        // b repeated along dim 0 (and 2) onto a transposed a.
        (
            [7, 5, 3, 1],
            [1, 5, 1, 1],
            Layout::Transposed,
            Layout::Contig,
        ),
        (
            [9, 4, 2, 1],
            [9, 4, 1, 1],
            Layout::Offset,
            Layout::Transposed,
        ),
        (
            [128, 16, 1, 1],
            [128, 16, 1, 1],
            Layout::Contig,
            Layout::Offset,
        ),
    ];
    for &op in BinaryOp::ALL {
        let kind = op.kind();
        for (a_ne, b_ne, la, lb) in shapes {
            let name = format!(
                "{}_{}_{}_{la:?}_{lb:?}",
                format!("{kind:?}").to_lowercase(),
                shape_name(a_ne),
                shape_name(b_ne)
            );
            v.push(OpCase::new(name, kind, EXACTISH, move |b| {
                let x = operand(b, DType::F32, a_ne, la, -1.0, 1.0)?;
                let y = if op == BinaryOp::Div {
                    divisor(b, b_ne, lb)?
                } else {
                    operand(b, DType::F32, b_ne, lb, -1.0, 1.0)?
                };
                let z = b.g.binary(op, x, y)?;
                b.output(z)
            }));
        }
        let ne = [65, 3, 2, 1];
        v.push(
            OpCase::new(
                format!("{kind:?}_65x3x2").to_lowercase(),
                kind,
                EXACTISH,
                move |b| {
                    let x = b.input(DType::F32, &ne)?;
                    let y = divisor(b, [65, 1, 2, 1], Layout::Contig)?;
                    let z = b.g.binary(op, x, y)?;
                    b.output(z)
                },
            )
            .in_place(),
        );
    }
}

/// Operands that share memory: one tensor twice, or two views into one tensor (as attention
/// slices q and k from a fused projection). A device binds overlapping spans once and must
/// read both operands through that binding.
pub(super) fn shared_memory_cases(v: &mut Vec<OpCase>) {
    v.push(OpCase::new("mul_f32_x_x_9x4", OpKind::Mul, EXACTISH, |b| {
        let x = b.input(DType::F32, &[9, 4])?;
        let y = b.g.mul(x, x)?;
        b.output(y)
    }));
    // x * x computed over x itself: one span for all three.
    v.push(
        OpCase::new("mul_f32_x_x_37x3", OpKind::Mul, EXACTISH, |b| {
            let x = b.input_range(DType::F32, &[37, 3], -9.0, 9.0)?;
            let y = b.g.mul(x, x)?;
            b.output(y)
        })
        .in_place(),
    );
    v.push(OpCase::new(
        "matmul_f32_k_q_views_of_one_tensor",
        OpKind::MatMul,
        F32_ACC,
        |b| {
            let qk = b.input(DType::F32, &[16, 6])?;
            let q = b.g.view(qk, &[8, 6], &[4, 64], 0)?;
            let k = b.g.view(qk, &[8, 6], &[4, 64], 32)?;
            let y = b.g.matmul(k, q)?;
            b.output(y)
        },
    ));
    v.push(OpCase::new(
        "softmax_input_and_mask_views_of_one_tensor",
        OpKind::SoftMax,
        F32_ACC,
        |b| {
            // Even rows are the input, odd rows the mask.
            let both = b.input_range(DType::F32, &[6, 12], -3.0, 3.0)?;
            let x = b.g.view(both, &[6, 6], &[4, 48], 0)?;
            let mask = b.g.view(both, &[6, 6], &[4, 48], 24)?;
            let y = b.g.softmax(x, Some(mask), 0.5)?;
            b.output(y)
        },
    ));
    v.push(OpCase::new(
        "concat_f32_x_x_dim1",
        OpKind::Concat,
        0.0,
        |b| {
            let x = b.input(DType::F32, &[9, 4])?;
            let y = b.g.concat(x, x, 1)?;
            b.output(y)
        },
    ));
}

/// Values of magnitude in `[0.5, 2)` with random signs (safe divisors).
fn divisor(b: &mut CaseBuilder, ne: [usize; 4], layout: Layout) -> Result<TensorId> {
    if let Layout::Contig = layout {
        let n: usize = ne.iter().product();
        let vals: Vec<f32> = (0..n)
            .map(|_| {
                let m = b.rng.uniform(0.5, 2.0);
                if b.rng.next_u32() & 1 == 0 {
                    m
                } else {
                    -m
                }
            })
            .collect();
        b.input_values(DType::F32, &ne, &vals)
    } else {
        operand(b, DType::F32, ne, layout, 0.5, 2.0)
    }
}

pub(super) fn scale_unary_cases(v: &mut Vec<OpCase>) {
    let shapes = [
        ([65, 3, 2, 1], Layout::Contig),
        ([1, 1, 1, 1], Layout::Contig),
        ([7, 5, 1, 1], Layout::Transposed),
        ([33, 3, 2, 1], Layout::Offset),
    ];
    for (ne, layout) in shapes {
        v.push(OpCase::new(
            format!("scale_{}_{layout:?}", shape_name(ne)),
            OpKind::Scale,
            EXACTISH,
            move |b| {
                let x = operand(b, DType::F32, ne, layout, -2.0, 2.0)?;
                let y = b.g.scale(x, 0.75)?;
                b.output(y)
            },
        ));
    }
    // Nothing to dispatch: the device must not fail or write anything.
    v.push(OpCase::new("scale_0x4_empty", OpKind::Scale, 0.0, |b| {
        let x = b.input(DType::F32, &[0, 4])?;
        let y = b.g.scale(x, 2.0)?;
        b.output(y)
    }));
    v.push(
        OpCase::new("scale_67x5", OpKind::Scale, EXACTISH, |b| {
            let x = b.input(DType::F32, &[67, 5])?;
            let y = b.g.scale(x, -1.5)?;
            b.output(y)
        })
        .in_place(),
    );
    // Every unary op of the table (graph/op.rs) over its test domain.
    for &op in UnaryOp::ALL {
        let kind = op.kind();
        let (lo, hi) = op.test_domain();
        let lname = format!("{kind:?}").to_lowercase();
        for (ne, layout) in shapes {
            v.push(OpCase::new(
                format!("{lname}_{}_{layout:?}", shape_name(ne)),
                kind,
                F32_ACC,
                move |b| {
                    let x = operand(b, DType::F32, ne, layout, lo, hi)?;
                    let y = b.g.unary(op, x)?;
                    b.output(y)
                },
            ));
        }
        v.push(
            OpCase::new(format!("{lname}_67x5"), kind, F32_ACC, move |b| {
                let x = b.input_range(DType::F32, &[67, 5], lo, hi)?;
                let y = b.g.unary(op, x)?;
                b.output(y)
            })
            .in_place(),
        );
    }
}

pub(super) fn clamp_cases(v: &mut Vec<OpCase>) {
    let shapes = [
        ([7, 5, 3, 2], Layout::Contig),
        ([5, 7, 1, 1], Layout::Transposed),
        ([9, 4, 2, 1], Layout::Offset),
    ];
    for (ne, layout) in shapes {
        v.push(OpCase::new(
            format!("clamp_{}_{layout:?}", shape_name(ne)),
            OpKind::Clamp,
            EXACTISH,
            move |b| {
                let x = operand(b, DType::F32, ne, layout, -3.0, 3.0)?;
                let y = b.g.clamp(x, -1.0, 2.0)?;
                b.output(y)
            },
        ));
    }
    v.push(
        OpCase::new("clamp_67x5_point", OpKind::Clamp, EXACTISH, |b| {
            let x = b.input_range(DType::F32, &[67, 5], -3.0, 3.0)?;
            let y = b.g.clamp(x, 0.5, 0.5)?;
            b.output(y)
        })
        .in_place(),
    );
}
