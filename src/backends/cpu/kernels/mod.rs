//! CPU kernels: the scalar reference for every op, and faster kernels where they exist
//! (SIMD128 on wasm32, a portable path elsewhere), chosen per node.

pub mod reference;

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
    let _ = set;
    reference::compute(op, dst, src)
}
