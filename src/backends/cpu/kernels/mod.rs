//! CPU kernels: the scalar reference for every op, and faster kernels where they exist
//! (SIMD128 on wasm32, a portable path elsewhere), chosen per node.

mod elementwise;
pub mod gemm;
pub mod quant;
pub mod reference;
mod rows;
pub mod simd;

use super::view::TensorView;
use crate::error::Result;
use crate::graph::Op;

/// Which kernels a CPU backend runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelSet {
    /// The scalar reference kernels only (what tests compare against).
    Reference,
    /// The fastest kernels available for this build.
    Fast,
}

/// Computes one node.
pub fn compute(set: KernelSet, op: &Op, dst: &TensorView, src: &[TensorView]) -> Result<()> {
    if set == KernelSet::Fast {
        if let (Op::GetRows, [a, idx]) = (op, src) {
            if let Some(r) = rows::get_rows(dst, a, idx) {
                return r;
            }
        }
        if fast(op, dst, src) {
            return Ok(());
        }
    }
    reference::compute(op, dst, src)
}

/// Runs a fast kernel when one fits the node's dtypes and layout; `false` otherwise (the
/// caller falls back to the reference, which also reports data-dependent errors).
fn fast(op: &Op, dst: &TensorView, src: &[TensorView]) -> bool {
    match (*op, src) {
        (Op::MatMul, [a, b]) => gemm::matmul(dst, a, b) || quant::matmul(dst, a, b),
        (Op::Binary(o), [a, b]) => elementwise::binary(o, dst, a, b),
        (Op::Scale(s), [a]) => elementwise::scale(dst, a, s),
        (Op::Unary(u), [a]) => elementwise::unary(u, dst, a),
        (Op::SoftMax { scale }, [a]) => elementwise::softmax(dst, a, None, scale),
        (Op::SoftMax { scale }, [a, m]) => elementwise::softmax(dst, a, Some(m), scale),
        (Op::Norm { eps }, [a]) => elementwise::norm(dst, a, eps, false),
        (Op::RmsNorm { eps }, [a]) => elementwise::norm(dst, a, eps, true),
        (Op::Rope(p), [a, pos]) => rows::rope(dst, a, pos, p).is_some(),
        (Op::SumRows | Op::Mean, [a]) => rows::sum_rows(op, dst, a).is_some(),
        _ => false,
    }
}
