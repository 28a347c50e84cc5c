//! The op case table: shapes with odd sizes, empty tensors, non-contiguous operands,
//! broadcasting, operands sharing memory, every dtype each op takes, in-place runs, and
//! per-op tolerances.

mod attention;
mod copy;
mod elementwise;
mod fused;
mod matmul;
mod rows;

use super::{CaseBuilder, OpCase};
use crate::error::Result;
use crate::graph::{DType, TensorId};
use attention::{attention_cases, softmax_cases};
use copy::{concat_cases, cpy_cases, get_rows_cases, set_rows_cases};
use elementwise::{binary_cases, clamp_cases, scale_unary_cases, shared_memory_cases};
use fused::fused_cases;
use matmul::matmul_cases;
use rows::{norm_cases, reduce_cases, rope_cases};

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
    use crate::graph::OpKind;

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
