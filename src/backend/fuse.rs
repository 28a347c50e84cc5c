//! Node chains a backend may run as one kernel, found in a split's node list (the planner
//! knows nothing of models): the graph-level half of fusion, shared by the backends. Each
//! backend decides what it can fuse and how (the CPU's GEMM epilogue, WebGPU's
//! `epilogue.wgsl`).
//!
//! A chain fuses only if its nodes are consecutive compute nodes of the split (nothing runs
//! between them, so no other node can see the skipped intermediates or the early-written
//! output) and every intermediate is f32, computed, not a view, not a graph output, and read
//! by nothing but the next node of the chain (no other node, split or view reads it). Row
//! vectors are f32 of shape `[ne0, 1, 1, 1]`, contiguous.

use crate::graph::{BinaryOp, DType, Graph, Op, Role, Tensor, TensorId, UnaryOp};

/// How many times each tensor is read: as an operand of a node (each occurrence), or through
/// a view of it.
pub fn use_counts(graph: &Graph) -> Vec<u32> {
    let mut uses = vec![0u32; graph.len()];
    for (_, t) in graph.iter() {
        for s in &t.src {
            if let Some(u) = uses.get_mut(s.0) {
                *u += 1;
            }
        }
        if let Some(u) = t.view_of.and_then(|root| uses.get_mut(root.0)) {
            *u += 1;
        }
    }
    uses
}

/// An intermediate a chain may skip: only `next` reads it (see the module docs).
pub fn skippable(graph: &Graph, uses: &[u32], id: TensorId, next: &Tensor) -> bool {
    let t = graph.tensor(id);
    uses.get(id.0) == Some(&1)
        && next.src.contains(&id)
        && !t.is_output
        && t.view_of.is_none()
        && t.role == Role::Compute
        && t.dtype == DType::F32
}

/// Whether `id` is an f32 contiguous row vector of `n` elements.
pub fn row_vector(graph: &Graph, id: TensorId, n: usize) -> bool {
    let t = graph.tensor(id);
    t.dtype == DType::F32 && t.ne == [n, 1, 1, 1] && t.nb[0] == 4
}

/// The other operand of `node` if it is `op` with `first` as operand 0.
pub fn binary_after(node: &Tensor, op: BinaryOp, first: TensorId) -> Option<TensorId> {
    match (&node.op, node.src.as_slice()) {
        (Op::Binary(o), &[a, b]) if *o == op && a == first => Some(b),
        _ => None,
    }
}

/// matmul → add(bias row vector) [→ activation], starting at `nodes[0]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MatmulChain {
    /// The matmul.
    pub matmul: TensorId,
    /// The bias row vector (one value per output element of a row, dim 0).
    pub bias: TensorId,
    /// The activation after the add, if the chain has one.
    pub act: Option<UnaryOp>,
    /// The chain's last node: its output is the one written (same shape and layout as the
    /// matmul's, f32, contiguous).
    pub out: TensorId,
    /// Nodes the chain covers (2 or 3).
    pub len: usize,
}

/// The matmul → add(bias) [→ activation] chain starting at `nodes[0]` (a split's compute
/// nodes from there on), if there is one.
pub fn matmul_chain(graph: &Graph, nodes: &[TensorId], uses: &[u32]) -> Option<MatmulChain> {
    let (&mm, &add) = (nodes.first()?, nodes.get(1)?);
    let (tm, ta) = (graph.tensor(mm), graph.tensor(add));
    if !matches!(tm.op, Op::MatMul) {
        return None;
    }
    let bias = binary_after(ta, BinaryOp::Add, mm)?;
    if !skippable(graph, uses, mm, ta) || !row_vector(graph, bias, tm.ne[0]) {
        return None;
    }
    let mut chain = MatmulChain {
        matmul: mm,
        bias,
        act: None,
        out: add,
        len: 2,
    };
    if let Some(&u) = nodes.get(2) {
        let tu = graph.tensor(u);
        if let (Op::Unary(op), &[src]) = (&tu.op, tu.src.as_slice()) {
            if src == add && skippable(graph, uses, add, tu) {
                (chain.act, chain.out, chain.len) = (Some(*op), u, 3);
            }
        }
    }
    let to = graph.tensor(chain.out);
    // Element (m, n) of the output is at the matmul's offset: contiguous, same layout.
    if to.dtype != DType::F32 || to.ne != tm.ne || to.nb != tm.nb || !to.is_contiguous() {
        return None;
    }
    Some(chain)
}
