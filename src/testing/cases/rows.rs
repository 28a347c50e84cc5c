//! Row-wise cases: norms, rope, and row reductions.

use crate::graph::{DType, OpKind, RopeMode, RopeParams};
use crate::testing::OpCase;

use super::{operand, shape_name, Layout, F32_ACC};

pub(super) fn norm_cases(v: &mut Vec<OpCase>) {
    let shapes = [
        ([65, 3, 1, 1], Layout::Contig),
        ([1, 4, 1, 1], Layout::Contig),
        ([7, 5, 2, 1], Layout::Transposed),
        ([33, 3, 2, 1], Layout::Offset),
        ([768, 2, 1, 1], Layout::Contig),
    ];
    for rms in [false, true] {
        let (kind, lname) = if rms {
            (OpKind::RmsNorm, "rms_norm")
        } else {
            (OpKind::Norm, "norm")
        };
        for (ne, layout) in shapes {
            v.push(OpCase::new(
                format!("{lname}_{}_{layout:?}", shape_name(ne)),
                kind,
                F32_ACC,
                move |b| {
                    let x = operand(b, DType::F32, ne, layout, -3.0, 5.0)?;
                    let y = if rms {
                        b.g.rms_norm(x, 1e-6)?
                    } else {
                        b.g.norm(x, 1e-5)?
                    };
                    b.output(y)
                },
            ));
        }
        for ne0 in [67, 300] {
            v.push(
                OpCase::new(format!("{lname}_{ne0}x4"), kind, F32_ACC, move |b| {
                    let x = b.input_range(DType::F32, &[ne0, 4], -3.0, 5.0)?;
                    let y = if rms {
                        b.g.rms_norm(x, 1e-6)?
                    } else {
                        b.g.norm(x, 1e-5)?
                    };
                    b.output(y)
                })
                .in_place(),
            );
        }
    }
}

pub(super) fn rope_cases(v: &mut Vec<OpCase>) {
    // (shape [head_dim, heads, tokens, batch], n_dims, freq_scale, layout)
    // (shape [head_dim, heads, tokens, batch], n_dims, freq_scale, layout, frequency factors:
    // Llama 3's are 1 to 8, a pair's frequency divided by its factor)
    let list: [([usize; 4], usize, f32, Layout, bool); 7] = [
        ([64, 3, 5, 2], 64, 1.0, Layout::Contig, false),
        ([64, 3, 5, 1], 32, 1.0, Layout::Contig, false),
        ([10, 2, 7, 1], 6, 0.5, Layout::Contig, false),
        ([32, 3, 4, 1], 16, 1.0, Layout::Permuted, false),
        ([10, 3, 5, 2], 8, 1.0, Layout::Permuted, false),
        ([64, 3, 5, 1], 64, 1.0, Layout::Contig, true),
        ([32, 3, 4, 1], 16, 0.5, Layout::Permuted, true),
    ];
    for mode in [RopeMode::Normal, RopeMode::NeoX] {
        for (ne, n_dims, freq_scale, layout, factors) in list {
            let f = if factors { "_factors" } else { "" };
            let name =
                format!("rope_{mode:?}_{}_nd{n_dims}_{layout:?}{f}", shape_name(ne)).to_lowercase();
            v.push(OpCase::new(name, OpKind::Rope, F32_ACC, move |b| {
                let x = operand(b, DType::F32, ne, layout, -1.0, 1.0)?;
                let pos: Vec<i32> = (0..ne[2]).map(|_| b.rng.below(2048) as i32).collect();
                let p = b.input_i32(&[ne[2]], &pos)?;
                let factors = if factors {
                    Some(b.input_range(DType::F32, &[n_dims / 2], 1.0, 8.0)?)
                } else {
                    None
                };
                let params = RopeParams {
                    n_dims,
                    mode,
                    freq_base: 10000.0,
                    freq_scale,
                };
                let y = b.g.rope(x, p, factors, params)?;
                b.output(y)
            }));
        }
        v.push(
            OpCase::new(
                format!("rope_{mode:?}_16x2x3").to_lowercase(),
                OpKind::Rope,
                F32_ACC,
                move |b| {
                    let x = b.input(DType::F32, &[16, 2, 3])?;
                    let p = b.input_i32(&[3], &[0, 7, 100])?;
                    let params = RopeParams {
                        n_dims: 8,
                        mode,
                        freq_base: 10000.0,
                        freq_scale: 1.0,
                    };
                    let y = b.g.rope(x, p, None, params)?;
                    b.output(y)
                },
            )
            .in_place(),
        );
    }
}

pub(super) fn reduce_cases(v: &mut Vec<OpCase>) {
    let shapes = [
        ([65, 3, 2, 1], Layout::Contig),
        ([1, 4, 1, 1], Layout::Contig),
        ([7, 5, 1, 1], Layout::Transposed),
        ([300, 3, 1, 1], Layout::Offset),
    ];
    for kind in [OpKind::SumRows, OpKind::Mean] {
        for (ne, layout) in shapes {
            let lname = format!("{kind:?}").to_lowercase();
            v.push(OpCase::new(
                format!("{lname}_{}_{layout:?}", shape_name(ne)),
                kind,
                F32_ACC,
                move |b| {
                    let x = operand(b, DType::F32, ne, layout, -1.0, 1.0)?;
                    let y = if kind == OpKind::Mean {
                        b.g.mean(x)?
                    } else {
                        b.g.sum_rows(x)?
                    };
                    b.output(y)
                },
            ));
        }
    }
    for (ne, transposed) in [
        ([65, 7, 1, 1], false),
        ([1, 3, 1, 1], false),
        ([33, 4, 2, 1], true),
        ([260, 2, 1, 1], false),
    ] {
        v.push(OpCase::new(
            format!(
                "argmax_{}_{}",
                shape_name(ne),
                if transposed { "Transposed" } else { "Contig" }
            ),
            OpKind::Argmax,
            0.0,
            move |b| {
                // Distinct values per row, so the answer has no ties.
                let n: usize = ne.iter().product();
                let perm = b.rng.permutation(n);
                let vals: Vec<f32> = perm.iter().map(|&p| p as f32 / n as f32 - 0.5).collect();
                let x = if transposed {
                    let t = b.input_values(DType::F32, &[ne[1], ne[0], ne[2], ne[3]], &vals)?;
                    b.g.transpose(t)?
                } else {
                    b.input_values(DType::F32, &ne, &vals)?
                };
                let y = b.g.argmax(x)?;
                b.output(y)
            },
        ));
    }
}
