//! Matmul cases: every weight dtype, odd sizes, batches and layouts, and their tolerances.

use crate::graph::{DType, OpKind};
use crate::testing::OpCase;

use super::{operand, Layout, F32_ACC, QUANT_MATMUL};

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

pub(super) fn matmul_cases(v: &mut Vec<OpCase>) {
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
pub(super) fn matmul_tolerance(dtype: DType) -> f64 {
    // The CPU's integer dots quantize activations to 8 bits (Q8_0 blocks; Q8_K super-blocks
    // for the K-quants).
    if dtype.is_quantized() {
        QUANT_MATMUL
    } else {
        F32_ACC
    }
}
