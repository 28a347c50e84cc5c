//! The op case table: shapes with odd sizes, empty tensors, non-contiguous operands,
//! broadcasting, operands sharing memory, every dtype each op takes, in-place runs, and
//! per-op tolerances.

use super::{CaseBuilder, OpCase};
use crate::error::Result;
use crate::graph::{BinaryOp, DType, OpKind, RopeMode, RopeParams, TensorId, UnaryOp};

/// Tolerance of ops that should match the reference to float rounding.
const EXACTISH: f64 = 1e-7;
/// Float reductions in another order (f32 accumulators vs the reference's f64).
const F32_ACC: f64 = 1e-6;
/// Quantized matmul: activations are quantized to Q8_0 on the fly (as ggml does).
const QUANT_MATMUL: f64 = 5e-4;
/// Quantizing copies may round a value to the neighbouring level.
const QUANT_CPY: f64 = 1e-5;

/// How an operand is laid out in memory.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// Packed.
    Contig,
    /// Dims 0 and 1 swapped (element stride ≠ element size).
    Transposed,
    /// Dims 1 and 2 swapped (rows packed, row strides out of order).
    Permuted,
    /// A window into a larger tensor at a byte offset (row gaps).
    Offset,
}

/// A tensor of logical shape `ne` laid out as `layout`, values uniform in `[lo, hi)`.
fn operand(
    b: &mut CaseBuilder,
    dtype: DType,
    ne: [usize; 4],
    layout: Layout,
    lo: f32,
    hi: f32,
) -> Result<TensorId> {
    match layout {
        Layout::Contig => b.input_range(dtype, &ne, lo, hi),
        Layout::Transposed => {
            let t = b.input_range(dtype, &[ne[1], ne[0], ne[2], ne[3]], lo, hi)?;
            b.g.transpose(t)
        }
        Layout::Permuted => {
            let t = b.input_range(dtype, &[ne[0], ne[2], ne[1], ne[3]], lo, hi)?;
            b.g.permute(t, [0, 2, 1, 3])
        }
        Layout::Offset => {
            let pad = dtype.block_size().max(3);
            let big = b.input_range(dtype, &[ne[0] + pad, ne[1] + 1, ne[2], ne[3]], lo, hi)?;
            let nb = b.g.tensor(big).nb;
            let shift = if dtype.is_quantized() {
                nb[0]
            } else {
                3 * nb[0]
            };
            b.g.view(big, &ne, &nb, nb[1] + shift)
        }
    }
}

fn shape_name(ne: [usize; 4]) -> String {
    ne.iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

fn binary_cases(v: &mut Vec<OpCase>) {
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
fn shared_memory_cases(v: &mut Vec<OpCase>) {
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

fn scale_unary_cases(v: &mut Vec<OpCase>) {
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

/// One matmul case: src0 `[k, m, a2, a3]` of `dtype`, src1 `[k, n, b2, b3]` f32.
#[derive(Clone, Copy)]
struct Mm {
    dtype: DType,
    k: usize,
    m: usize,
    n: usize,
    a_batch: [usize; 2],
    b_batch: [usize; 2],
    la: Layout,
    lb: Layout,
}

fn mm(dtype: DType, k: usize, m: usize, n: usize) -> Mm {
    Mm {
        dtype,
        k,
        m,
        n,
        a_batch: [1, 1],
        b_batch: [1, 1],
        la: Layout::Contig,
        lb: Layout::Contig,
    }
}

fn matmul_cases(v: &mut Vec<OpCase>) {
    use DType::*;
    let bcast = |c: Mm| Mm {
        a_batch: [2, 1],
        b_batch: [4, 3],
        ..c
    };
    let la = |c: Mm, l| Mm { la: l, ..c };
    let lb = |c: Mm, l| Mm { lb: l, ..c };
    let list = [
        mm(F32, 1, 1, 1),
        mm(F32, 7, 5, 3),
        mm(F32, 33, 17, 9),
        mm(F32, 65, 33, 65),
        mm(F32, 300, 40, 12),
        mm(F32, 129, 67, 1),
        mm(F32, 64, 128, 64),
        mm(F32, 260, 136, 20),
        mm(F32, 40, 20, 530),
        mm(F32, 256, 256, 8),
        mm(F32, 0, 3, 5),
        mm(F32, 16, 0, 3),
        bcast(mm(F32, 16, 9, 7)),
        la(mm(F32, 33, 20, 5), Layout::Transposed),
        lb(mm(F32, 24, 13, 6), Layout::Transposed),
        lb(la(mm(F32, 19, 11, 10), Layout::Offset), Layout::Offset),
        Mm {
            a_batch: [3, 1],
            b_batch: [3, 1],
            ..lb(mm(F32, 32, 8, 5), Layout::Permuted)
        },
        // Weights broadcast over a transposed (non-contiguous) activation batch.
        Mm {
            a_batch: [2, 1],
            b_batch: [4, 1],
            ..lb(mm(F32, 20, 9, 5), Layout::Transposed)
        },
        // Small batches (1..32 columns: the WebGPU small-batch kernel), odd sizes.
        mm(F32, 97, 70, 1),
        mm(F32, 100, 45, 13),
        mm(F32, 64, 130, 31),
        mm(F32, 33, 5, 32),
        mm(F32, 384, 3, 2),
        bcast(mm(F32, 24, 10, 11)),
        lb(mm(F32, 40, 21, 17), Layout::Transposed),
        la(mm(F32, 36, 19, 6), Layout::Offset),
        mm(F16, 33, 17, 9),
        mm(F16, 64, 65, 1),
        mm(F16, 70, 37, 23),
        bcast(mm(F16, 40, 12, 6)),
        la(mm(F16, 20, 9, 4), Layout::Transposed),
        lb(mm(F16, 48, 20, 5), Layout::Offset),
        // Long dot products over few columns (the WebGPU row-parallel kernel) and an output
        // larger than one register tile with ragged edges.
        mm(F32, 4096, 256, 1),
        mm(F32, 1536, 384, 8),
        mm(F32, 3072, 64, 32),
        mm(F32, 257, 200, 130),
        mm(F16, 1030, 150, 3),
        Mm {
            a_batch: [2, 1],
            b_batch: [2, 2],
            ..lb(mm(F32, 90, 130, 140), Layout::Transposed)
        },
    ];
    let mut all: Vec<Mm> = list.to_vec();
    for q in DType::BLOCK_QUANTS {
        all.extend([
            mm(q, 256, 1, 1),
            mm(q, 0, 4, 2),
            mm(q, 32, 4, 3),
            mm(q, 64, 33, 1),
            mm(q, 64, 33, 7),
            mm(q, 256, 16, 19),
            mm(q, 128, 9, 2),
            mm(q, 96, 33, 40),
            mm(q, 160, 37, 13),
            mm(q, 64, 70, 32),
            mm(q, 1536, 40, 9),
            mm(q, 160, 140, 131),
            lb(mm(q, 288, 20, 35), Layout::Transposed),
            bcast(mm(q, 64, 8, 5)),
            lb(mm(q, 96, 7, 6), Layout::Transposed),
            la(mm(q, 64, 10, 3), Layout::Offset),
            Mm {
                a_batch: [3, 1],
                b_batch: [3, 1],
                ..la(mm(q, 32, 6, 4), Layout::Permuted)
            },
        ]);
    }
    // K-quants: every type, odd weight rows, the GEMV's few columns and the GEMM's many,
    // batches broadcast, and views (offset rows, permuted batches, transposed activations).
    for q in DType::K_QUANTS {
        all.extend([
            mm(q, 256, 1, 1),
            mm(q, 0, 4, 2),
            mm(q, 256, 33, 7),
            mm(q, 512, 37, 2),
            mm(q, 256, 70, 40),
            mm(q, 768, 9, 3),
            bcast(mm(q, 256, 8, 5)),
            la(mm(q, 256, 10, 3), Layout::Offset),
            lb(mm(q, 256, 20, 35), Layout::Transposed),
            Mm {
                a_batch: [3, 1],
                b_batch: [3, 1],
                ..la(mm(q, 256, 6, 4), Layout::Permuted)
            },
        ]);
    }
    for c in all {
        let tol = matmul_tolerance(c.dtype);
        let name = format!(
            "matmul_{}_k{}_m{}_n{}_batch{}x{}of{}x{}_{:?}_{:?}",
            c.dtype.name(),
            c.k,
            c.m,
            c.n,
            c.a_batch[0],
            c.a_batch[1],
            c.b_batch[0],
            c.b_batch[1],
            c.la,
            c.lb
        );
        v.push(OpCase::new(name, OpKind::MatMul, tol, move |b| {
            let a_ne = [c.k, c.m, c.a_batch[0], c.a_batch[1]];
            let b_ne = [c.k, c.n, c.b_batch[0], c.b_batch[1]];
            let x = operand(b, c.dtype, a_ne, c.la, -1.0, 1.0)?;
            let y = operand(b, DType::F32, b_ne, c.lb, -1.0, 1.0)?;
            let z = b.g.matmul(x, y)?;
            b.output(z)
        }));
    }
}

/// A matmul's tolerance for weights of `dtype` against the reference (which multiplies the
/// weights dequantized, in f64).
fn matmul_tolerance(dtype: DType) -> f64 {
    // The CPU's integer dots quantize activations to 8 bits (Q8_0 blocks; Q8_K super-blocks
    // for the K-quants).
    if dtype.is_quantized() {
        QUANT_MATMUL
    } else {
        F32_ACC
    }
}

fn softmax_cases(v: &mut Vec<OpCase>) {
    // (shape, mask shape, scale, layout)
    type SoftmaxCase = ([usize; 4], Option<[usize; 4]>, f32, Layout);
    let list: [SoftmaxCase; 7] = [
        ([33, 7, 2, 1], None, 1.0, Layout::Contig),
        // One mask row per batch, repeated over rows and heads (key padding).
        ([19, 6, 3, 2], Some([19, 1, 1, 2]), 0.25, Layout::Contig),
        ([65, 4, 1, 1], Some([65, 4, 1, 1]), 0.125, Layout::Contig),
        ([17, 5, 3, 2], Some([17, 5, 1, 2]), 0.5, Layout::Contig),
        ([1, 3, 1, 1], None, 1.0, Layout::Contig),
        ([8, 6, 1, 1], Some([8, 6, 1, 1]), 2.0, Layout::Transposed),
        ([256, 3, 1, 1], None, 3.0, Layout::Offset),
    ];
    for (ne, mask, scale, layout) in list {
        let name = format!(
            "softmax_{}_{}_{layout:?}",
            shape_name(ne),
            if mask.is_some() { "mask" } else { "nomask" }
        );
        v.push(OpCase::new(name, OpKind::SoftMax, F32_ACC, move |b| {
            let x = operand(b, DType::F32, ne, layout, -4.0, 4.0)?;
            let m = match mask {
                Some(mne) => Some(b.input_range(DType::F32, &mne, -2.0, 2.0)?),
                None => None,
            };
            let y = b.g.softmax(x, m, scale)?;
            b.output(y)
        }));
    }
    v.push(OpCase::new(
        "softmax_causal_9x9_mask_inf",
        OpKind::SoftMax,
        F32_ACC,
        |b| {
            let x = b.input_range(DType::F32, &[9, 9, 2], -4.0, 4.0)?;
            let mask: Vec<f32> = (0..81)
                .map(|i| {
                    if i % 9 > i / 9 {
                        f32::NEG_INFINITY
                    } else {
                        0.0
                    }
                })
                .collect();
            let m = b.input_values(DType::F32, &[9, 9], &mask)?;
            let y = b.g.softmax(x, Some(m), 0.3)?;
            b.output(y)
        },
    ));
    // In place, with rows shorter and longer than a workgroup.
    for ne0 in [37, 300] {
        v.push(
            OpCase::new(
                format!("softmax_{ne0}x5"),
                OpKind::SoftMax,
                F32_ACC,
                move |b| {
                    let x = b.input_range(DType::F32, &[ne0, 5], -4.0, 4.0)?;
                    let m = b.input(DType::F32, &[ne0, 5])?;
                    let y = b.g.softmax(x, Some(m), 0.7)?;
                    b.output(y)
                },
            )
            .in_place(),
        );
    }
}

/// One attention case: head size (q·k, then v), queries, heads, keys, KV heads, batch, K/V
/// dtype and mask.
#[derive(Clone, Copy)]
struct AttnCase {
    d: usize,
    d_v: usize,
    n_q: usize,
    heads: usize,
    n_kv: usize,
    kv_heads: usize,
    batch: usize,
    kv: DType,
    mask: AttnMask,
}

#[derive(Clone, Copy, Debug)]
enum AttnMask {
    None,
    /// Random values, `[n_kv, n_q]`.
    Full,
    /// Query `i` sees keys up to `n_kv - n_q + i` (-inf after), `[n_kv, n_q]`.
    Causal,
    /// Key padding per batch, `[n_kv, 1, 1, batch]`: the last third of the keys of batch 1
    /// masked with -inf.
    Padding,
    /// Causal, and query 1's row -inf everywhere (its output is zero).
    BlankRow,
}

fn attention_mask(b: &mut CaseBuilder, c: AttnCase) -> Result<Option<TensorId>> {
    let (n_kv, n_q) = (c.n_kv, c.n_q);
    let inf = f32::NEG_INFINITY;
    let causal = |blank: bool| -> Vec<f32> {
        (0..n_kv * n_q)
            .map(|x| {
                let (j, i) = (x % n_kv, x / n_kv);
                if (blank && i == 1) || j > n_kv - n_q + i {
                    inf
                } else {
                    0.0
                }
            })
            .collect()
    };
    Ok(Some(match c.mask {
        AttnMask::None => return Ok(None),
        AttnMask::Full => b.input_range(DType::F32, &[n_kv, n_q], -2.0, 2.0)?,
        AttnMask::Causal => b.input_values(DType::F32, &[n_kv, n_q], &causal(false))?,
        AttnMask::BlankRow => b.input_values(DType::F32, &[n_kv, n_q], &causal(true))?,
        AttnMask::Padding => {
            let vals: Vec<f32> = (0..n_kv * c.batch)
                .map(|x| {
                    if x / n_kv == 1 && x % n_kv >= n_kv - n_kv / 3 {
                        inf
                    } else {
                        0.0
                    }
                })
                .collect();
            b.input_values(DType::F32, &[n_kv, 1, 1, c.batch], &vals)?
        }
    }))
}

fn attention_cases(v: &mut Vec<OpCase>) {
    use AttnMask::{BlankRow, Causal, Full, Padding};
    let case = |d, d_v, n_q, heads, n_kv, kv_heads, batch, kv, mask| AttnCase {
        d,
        d_v,
        n_q,
        heads,
        n_kv,
        kv_heads,
        batch,
        kv,
        mask,
    };
    let list = [
        case(32, 32, 7, 4, 13, 4, 1, DType::F32, AttnMask::None),
        case(5, 5, 3, 2, 6, 1, 1, DType::F32, Full),
        case(16, 24, 9, 3, 9, 3, 2, DType::F32, Padding),
        case(32, 32, 40, 4, 40, 1, 1, DType::F16, Causal),
        case(64, 64, 1, 8, 37, 2, 1, DType::F16, Full),
        case(64, 64, 1, 8, 4096, 1, 1, DType::F16, Causal),
        case(48, 48, 1, 2, 1000, 2, 1, DType::F32, AttnMask::None),
        case(8, 8, 3, 2, 1, 2, 1, DType::F32, AttnMask::None),
        case(16, 16, 5, 4, 12, 4, 1, DType::F32, BlankRow),
        // v wider than a 64-thread workgroup (WebGPU: several outputs per thread), keys past
        // one 64-key tile.
        case(80, 160, 3, 2, 70, 1, 1, DType::F16, Full),
        // WebGPU's query tiles (16 rows of the heads sharing a KV head): the largest head
        // size they take (2 outputs a thread), GQA 4, two key tiles; an odd head size (K read
        // element by element), v wider than q, a partial row tile, causal.
        case(128, 128, 20, 8, 100, 2, 1, DType::F16, Full),
        case(5, 7, 18, 2, 33, 1, 1, DType::F32, Causal),
        // Three key tiles of WebGPU's query tiles (64 keys), the last partial, f32 K/V.
        case(32, 32, 20, 2, 130, 2, 1, DType::F32, AttnMask::None),
    ];
    for c in list {
        let name = format!(
            "attention_d{}_{}q_{}h_{}kv_{}kvh_b{}_{}_{:?}",
            c.d,
            c.n_q,
            c.heads,
            c.n_kv,
            c.kv_heads,
            c.batch,
            c.kv.name(),
            c.mask
        )
        .to_lowercase();
        let name = if c.d_v != c.d {
            format!("{name}_dv{}", c.d_v)
        } else {
            name
        };
        v.push(OpCase::new(name, OpKind::Attention, F32_ACC, move |b| {
            let q = b.input_range(DType::F32, &[c.d, c.n_q, c.heads, c.batch], -1.0, 1.0)?;
            let k = b.input_range(c.kv, &[c.d, c.n_kv, c.kv_heads, c.batch], -1.0, 1.0)?;
            let v = b.input_range(c.kv, &[c.d_v, c.n_kv, c.kv_heads, c.batch], -1.0, 1.0)?;
            let m = attention_mask(b, c)?;
            let scale = 1.0 / (c.d as f32).sqrt();
            let y = b.g.attention(q, k, v, m, scale)?;
            b.output(y)
        }));
    }
    // The decoder's layout: q a permuted view of `[d, heads, n_q]`, K/V the first n_kv rows
    // of a longer cache `[d, n_ctx + 1, kv_heads]` (an f16 state), V read as stored.
    v.push(OpCase::new(
        "attention_decoder_views_q_permuted_kv_cache_prefix",
        OpKind::Attention,
        F32_ACC,
        |b| {
            let (d, heads, n_q, kvh, n_ctx, n_kv) = (32, 6, 3, 2, 20, 11);
            let q = b.input_range(DType::F32, &[d, heads, n_q], -1.0, 1.0)?;
            let q = b.g.permute(q, [0, 2, 1, 3])?;
            let kc = b.input_range(DType::F16, &[d, n_ctx + 1, kvh], -1.0, 1.0)?;
            let vc = b.input_range(DType::F16, &[d, n_ctx + 1, kvh], -1.0, 1.0)?;
            let nb = b.g.tensor(kc).nb;
            let k = b.g.view(kc, &[d, n_kv, kvh], &nb[..3], 0)?;
            let v = b.g.view(vc, &[d, n_kv, kvh], &nb[..3], 0)?;
            let c = AttnCase {
                d,
                d_v: d,
                n_q,
                heads,
                n_kv,
                kv_heads: kvh,
                batch: 1,
                kv: DType::F16,
                mask: AttnMask::Causal,
            };
            let m = attention_mask(b, c)?;
            let y = b.g.attention(q, k, v, m, 0.2)?;
            b.output(y)
        },
    ));
    // MiniLM's layout: q, k and v views of one projection `[3 d heads, n]`, each token's Q, K
    // and V side by side (WebGPU reads them through one binding).
    v.push(OpCase::new(
        "attention_qkv_views_of_one_tensor",
        OpKind::Attention,
        F32_ACC,
        |b| {
            let (d, heads, n) = (16, 3, 7);
            let h = d * heads;
            let qkv = b.input_range(DType::F32, &[3 * h, n], -1.0, 1.0)?;
            let [e, row, ..] = b.g.tensor(qkv).nb;
            let mut part = |i: usize| -> Result<TensorId> {
                let x = b.g.view(qkv, &[d, heads, n], &[e, e * d, row], e * h * i)?;
                b.g.permute(x, [0, 2, 1, 3])
            };
            let (q, k, v) = (part(0)?, part(1)?, part(2)?);
            let c = AttnCase {
                d,
                d_v: d,
                n_q: n,
                heads,
                n_kv: n,
                kv_heads: heads,
                batch: 1,
                kv: DType::F32,
                mask: AttnMask::Full,
            };
            let m = attention_mask(b, c)?;
            let y = b.g.attention(q, k, v, m, 0.25)?;
            b.output(y)
        },
    ));
    // Q and K/V transposed (element strides ≠ element size): the reference's path on CPU.
    v.push(OpCase::new(
        "attention_q_transposed",
        OpKind::Attention,
        F32_ACC,
        |b| {
            let q = operand(b, DType::F32, [8, 6, 2, 1], Layout::Transposed, -1.0, 1.0)?;
            let k = operand(b, DType::F32, [8, 5, 2, 1], Layout::Offset, -1.0, 1.0)?;
            let v = b.input(DType::F32, &[8, 5, 2, 1])?;
            let y = b.g.attention(q, k, v, None, 0.5)?;
            b.output(y)
        },
    ));
}

fn norm_cases(v: &mut Vec<OpCase>) {
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

fn rope_cases(v: &mut Vec<OpCase>) {
    // (shape [head_dim, heads, tokens, batch], n_dims, freq_scale, layout)
    let list: [([usize; 4], usize, f32, Layout); 5] = [
        ([64, 3, 5, 2], 64, 1.0, Layout::Contig),
        ([64, 3, 5, 1], 32, 1.0, Layout::Contig),
        ([10, 2, 7, 1], 6, 0.5, Layout::Contig),
        ([32, 3, 4, 1], 16, 1.0, Layout::Permuted),
        ([10, 3, 5, 2], 8, 1.0, Layout::Permuted),
    ];
    for mode in [RopeMode::Normal, RopeMode::NeoX] {
        for (ne, n_dims, freq_scale, layout) in list {
            let name =
                format!("rope_{mode:?}_{}_nd{n_dims}_{layout:?}", shape_name(ne)).to_lowercase();
            v.push(OpCase::new(name, OpKind::Rope, F32_ACC, move |b| {
                let x = operand(b, DType::F32, ne, layout, -1.0, 1.0)?;
                let pos: Vec<i32> = (0..ne[2]).map(|_| b.rng.below(2048) as i32).collect();
                let p = b.input_i32(&[ne[2]], &pos)?;
                let params = RopeParams {
                    n_dims,
                    mode,
                    freq_base: 10000.0,
                    freq_scale,
                };
                let y = b.g.rope(x, p, params)?;
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
                    let y = b.g.rope(x, p, params)?;
                    b.output(y)
                },
            )
            .in_place(),
        );
    }
}

fn cpy_cases(v: &mut Vec<OpCase>) {
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

fn concat_cases(v: &mut Vec<OpCase>) {
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

fn reduce_cases(v: &mut Vec<OpCase>) {
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

fn clamp_cases(v: &mut Vec<OpCase>) {
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

/// set_rows: `dst` `[ne0, rows, ne2, ne3]` of `dtype`, rows `[ne0, n, ne2, ne3]` (in `layout`),
/// indices `[n, c2, c3]` drawn from `rows` (with repeats when `dups`).
fn set_rows_cases(v: &mut Vec<OpCase>) {
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

fn get_rows_cases(v: &mut Vec<OpCase>) {
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

/// Chains a device may fuse into one dispatch (WebGPU: matmul epilogues, affine norms),
/// and near misses it must not fuse (an intermediate that is also an output or read twice,
/// a bias that is not a row vector): all must match the reference.
fn fused_cases(v: &mut Vec<OpCase>) {
    // matmul (k, m, n, batch of b) → add(bias [m]) → activation, for every weight dtype.
    type Chain = (DType, usize, usize, usize, usize, Option<UnaryOp>);
    let chains: [Chain; 12] = [
        (DType::F32, 64, 33, 7, 2, None),
        (DType::F32, 40, 37, 45, 1, Some(UnaryOp::GeluErf)),
        (DType::F16, 64, 19, 3, 3, Some(UnaryOp::Gelu)),
        (DType::F16, 96, 70, 33, 1, None),
        (DType::Q8_0, 64, 33, 1, 2, Some(UnaryOp::GeluErf)),
        (DType::Q8_0, 128, 65, 20, 1, Some(UnaryOp::Silu)),
        (DType::Q8_0, 64, 9, 70, 1, None),
        (DType::Q4_0, 64, 33, 5, 2, Some(UnaryOp::Relu)),
        (DType::Q4_0, 96, 21, 40, 1, Some(UnaryOp::GeluErf)),
        (DType::Q4_0, 32, 70, 9, 1, None),
        (DType::Q4_K, 256, 33, 5, 2, Some(UnaryOp::Silu)),
        (DType::Q6_K, 512, 19, 40, 1, None),
    ];
    for (dtype, k, m, n, batch, act) in chains {
        let tol = matmul_tolerance(dtype);
        let name = format!(
            "fused_matmul_{}_k{k}_m{m}_n{n}_batch{batch}_bias_{act:?}",
            dtype.name()
        );
        v.push(OpCase::new(name, OpKind::MatMul, tol, move |b| {
            let w = b.input_range(dtype, &[k, m], -1.0, 1.0)?;
            let x = b.input_range(DType::F32, &[k, n, batch], -1.0, 1.0)?;
            let bias = b.input_range(DType::F32, &[m], -1.0, 1.0)?;
            let y = b.g.matmul(w, x)?;
            let mut y = b.g.add(y, bias)?;
            if let Some(op) = act {
                y = b.g.unary(op, y)?;
            }
            b.output(y)
        }));
    }
    // Every unary op of the table as a fused activation (f32 weights; inputs in [0, 1) where
    // the op's domain starts at 0, so the sums stay in it).
    for &op in UnaryOp::ALL {
        let lo = if op.test_domain().0 >= 0.0 { 0.0 } else { -1.0 };
        let name = format!("fused_matmul_f32_k32_m9_n5_bias_{}", op.method());
        v.push(OpCase::new(name, OpKind::MatMul, F32_ACC, move |b| {
            let w = b.input_range(DType::F32, &[32, 9], lo, 1.0)?;
            let x = b.input_range(DType::F32, &[32, 5], lo, 1.0)?;
            let bias = b.input_range(DType::F32, &[9], lo, 1.0)?;
            let y = b.g.matmul(w, x)?;
            let y = b.g.add(y, bias)?;
            let y = b.g.unary(op, y)?;
            b.output(y)
        }));
    }
    // Near misses: the matmul's result also an output, also read by another node, and a
    // bias that is a full matrix (not a row vector).
    for miss in ["also_output", "read_twice", "full_bias"] {
        let name = format!("fused_matmul_f32_k32_m17_n6_{miss}");
        v.push(OpCase::new(name, OpKind::MatMul, F32_ACC, move |b| {
            let w = b.input_range(DType::F32, &[32, 17], -1.0, 1.0)?;
            let x = b.input_range(DType::F32, &[32, 6], -1.0, 1.0)?;
            let bias_ne: &[usize] = if miss == "full_bias" { &[17, 6] } else { &[17] };
            let bias = b.input_range(DType::F32, bias_ne, -1.0, 1.0)?;
            let y = b.g.matmul(w, x)?;
            let z = b.g.add(y, bias)?;
            let z = b.g.gelu_erf(z)?;
            match miss {
                "also_output" => b.output(y)?,
                "read_twice" => {
                    let twice = b.g.mul(y, y)?;
                    b.output(twice)?;
                }
                _ => {}
            }
            b.output(z)
        }));
    }
    // [add(residual) →] norm → mul(weight) [→ add(bias)]; the residual may broadcast.
    type NormChain = ([usize; 4], Option<[usize; 4]>, bool, bool);
    let norms: [NormChain; 7] = [
        ([37, 5, 2, 1], Some([37, 5, 2, 1]), false, true),
        ([384, 3, 1, 1], Some([384, 3, 1, 1]), false, true),
        ([300, 4, 1, 1], Some([300, 1, 1, 1]), false, true),
        ([65, 3, 2, 1], None, false, true),
        ([65, 3, 2, 1], None, false, false),
        ([33, 6, 1, 1], None, true, false),
        ([33, 6, 1, 1], Some([33, 6, 1, 1]), true, true),
    ];
    for (ne, resid, rms, bias) in norms {
        let (kind, lname) = if rms {
            (OpKind::RmsNorm, "rms_norm")
        } else {
            (OpKind::Norm, "norm")
        };
        let name = format!(
            "fused_{lname}_{}_resid{}_bias{bias}",
            shape_name(ne),
            resid.map_or("none".into(), shape_name)
        );
        v.push(OpCase::new(name, kind, F32_ACC, move |b| {
            let mut x = b.input_range(DType::F32, &ne, -3.0, 5.0)?;
            let w = b.input_range(DType::F32, &[ne[0]], -1.0, 1.0)?;
            let bv = b.input_range(DType::F32, &[ne[0]], -1.0, 1.0)?;
            if let Some(rne) = resid {
                let r = b.input_range(DType::F32, &rne, -1.0, 1.0)?;
                x = b.g.add(x, r)?;
            }
            let mut y = if rms {
                b.g.rms_norm(x, 1e-6)?
            } else {
                b.g.norm(x, 1e-5)?
            };
            y = b.g.mul(y, w)?;
            if bias {
                y = b.g.add(y, bv)?;
            }
            b.output(y)
        }));
    }
    // Near miss: the residual sum also an output (the transformer's next residual).
    v.push(OpCase::new(
        "fused_norm_37x5x1x1_sum_also_output",
        OpKind::Norm,
        F32_ACC,
        |b| {
            let x = b.input_range(DType::F32, &[37, 5], -3.0, 5.0)?;
            let r = b.input_range(DType::F32, &[37, 5], -1.0, 1.0)?;
            let w = b.input_range(DType::F32, &[37], -1.0, 1.0)?;
            let sum = b.g.add(x, r)?;
            let y = b.g.norm(sum, 1e-5)?;
            let y = b.g.mul(y, w)?;
            b.output(sum)?;
            b.output(y)
        },
    ));
}

/// Every case of the suite, in a fixed order.
pub fn all_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    get_rows_cases(&mut v);
    set_rows_cases(&mut v);
    binary_cases(&mut v);
    clamp_cases(&mut v);
    shared_memory_cases(&mut v);
    scale_unary_cases(&mut v);
    matmul_cases(&mut v);
    softmax_cases(&mut v);
    attention_cases(&mut v);
    norm_cases(&mut v);
    rope_cases(&mut v);
    cpy_cases(&mut v);
    concat_cases(&mut v);
    reduce_cases(&mut v);
    fused_cases(&mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_builds_and_names_are_unique() {
        let cases = all_cases();
        let mut names = std::collections::HashSet::new();
        for c in &cases {
            assert!(names.insert(c.name.clone()), "duplicate case {}", c.name);
            let built = c.build().unwrap_or_else(|e| panic!("{}: {e}", c.name));
            // The case's op is computed in its graph (the output of a fused chain is the
            // chain's last op, not the one the case is filed under).
            assert!(
                built.graph.iter().any(|(_, t)| t.op.kind() == c.op),
                "{}: no {:?} node",
                c.name,
                c.op
            );
        }
    }

    /// Every weight dtype of the table is a matmul's and a get_rows' weight in some case, and
    /// every quantized one is dequantized by a cpy: a dtype added to the table without cases
    /// fails here, named.
    #[test]
    fn every_dtype_is_covered() {
        let mut seen = std::collections::HashSet::new();
        for c in all_cases() {
            let built = c.build().unwrap_or_else(|e| panic!("{}: {e}", c.name));
            for (_, t) in built.graph.iter() {
                let kind = t.op.kind();
                if let Some(&a) = t.src.first() {
                    let a = built.graph.get(a).expect("operand").dtype;
                    seen.insert((kind, a));
                }
            }
        }
        let mut missing = Vec::new();
        for &d in DType::WEIGHTS {
            for kind in [OpKind::MatMul, OpKind::GetRows] {
                if !seen.contains(&(kind, d)) {
                    missing.push(format!("{kind:?} of {d}"));
                }
            }
            if d.is_quantized() && !seen.contains(&(OpKind::Cpy, d)) {
                missing.push(format!("Cpy from {d}"));
            }
        }
        assert!(missing.is_empty(), "no case for: {}", missing.join(", "));
    }

    #[test]
    fn every_compute_op_is_covered() {
        assert_eq!(super::super::uncovered_ops(), Vec::<OpKind>::new());
    }
}
