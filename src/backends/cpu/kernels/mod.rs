//! CPU kernels: the scalar reference for every op, and faster kernels where they exist
//! (SIMD128 on wasm32, a portable path elsewhere), chosen per node.
//!
//! - `simd`: the f32x4 / i8 dot primitives, one implementation per instruction set.
//! - `gemm`: packed, register-tiled f32 GEMM (src0 f32 or f16) and a GEMV for few rows.
//! - `quant`: Q8_0 / Q4_0 matmul on integer dots against activations quantized to Q8_0.
//! - `elementwise`: binary/scale/unary, softmax, norm, rms_norm over packed rows.
//! - `rows`: rope, row sums/means, get_rows.
//!
//! A fast kernel that does not fit a node's dtypes or layout declines, and the reference
//! runs instead, so every node always has a kernel.

mod elementwise;
pub(crate) mod gemm;
mod quant;
pub mod reference;
mod rows;
mod simd;

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

/// Whether `v` is f32 with packed rows and every element 4-byte aligned, so fast kernels
/// may address it as `*f32` (views at odd byte offsets are left to the reference).
pub(crate) fn packed_f32(v: &TensorView) -> bool {
    v.dtype == crate::graph::DType::F32
        && v.nb[0] == 4
        && (v.ptr_at([0; 4]) as usize).is_multiple_of(4)
        && v.nb.iter().all(|n| n.is_multiple_of(4))
}

/// Computes one node.
pub fn compute(set: KernelSet, op: &Op, dst: &TensorView, src: &[TensorView]) -> Result<()> {
    // Nothing to write; and a kernel's row scratch, sized by a dim of any size, is never made
    // for a tensor with no rows (found fuzzing: an f32 [2^31, 0] copy asked for 8 GiB).
    if dst.ne.contains(&0) {
        return Ok(());
    }
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
