//! Fusion of a split's node chains into one dispatch: the nodes after a matmul or a norm
//! that only transform its result element by element become the kernel's epilogue
//! (`shaders/epilogue.wgsl`), so their outputs are never written or read back.
//!
//! Two chain shapes, anywhere in a split (the planner knows nothing of models):
//! - matmul → add(bias row vector) [→ gelu | gelu_erf | silu | relu];
//! - [add(residual) →] norm | rms_norm → mul(weight row vector) [→ add(bias row vector)].
//!
//! A chain fuses only if its nodes are consecutive compute nodes of the split (nothing runs
//! between them, so no other node can see the skipped intermediates or the early-written
//! output) and every intermediate is f32, computed, not a view, not a graph output, and read
//! by nothing but the next node of the chain (no other node, split or view reads it).
//! Row vectors are f32 of shape `[ne0, 1, 1, 1]`, contiguous. Binding the fused dispatch can
//! still fail (the output overlapping an operand, operands too far apart to share a binding):
//! `backend.rs` then runs the nodes one by one.

use std::cell::Cell;

use super::context::Ctx;
use super::ops::{self, NodePlan};
use super::shader::{takes_epilogue, EP_BIAS, EP_RESID, EP_SCALE};
use crate::graph::{BinaryOp, DType, Graph, Op, Role, Tensor, TensorId, UnaryOp};

thread_local! {
    static FUSION: Cell<bool> = const { Cell::new(true) };
}

/// Turns the WebGPU fusion of node chains on (the default) or off for sessions prepared
/// later on this thread: a knob for same-run comparisons and tests.
pub fn set_fusion(on: bool) {
    FUSION.with(|c| c.set(on));
}

/// Whether fusion is on for this thread (see [`set_fusion`]).
pub(super) fn enabled() -> bool {
    FUSION.with(|c| c.get())
}

/// How many times each tensor is read: as an operand of a node (each occurrence), or through
/// a view of it.
pub(super) fn use_counts(graph: &Graph) -> Vec<u32> {
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

/// One fused dispatch: `plan` computes `out` (the chain's last node) from the first node's
/// operands, with `scale` and `bias` bound for the epilogue (binding 4).
#[derive(Clone)]
pub(super) struct Fused {
    pub out: TensorId,
    pub plan: NodePlan,
    pub scale: Option<TensorId>,
    pub bias: Option<TensorId>,
    /// Nodes the dispatch replaces.
    pub len: usize,
}

/// An intermediate the chain may skip: only `next` reads it (see the module docs).
fn skippable(graph: &Graph, uses: &[u32], id: TensorId, next: &Tensor) -> bool {
    let t = graph.tensor(id);
    uses.get(id.0) == Some(&1)
        && next.src.contains(&id)
        && !t.is_output
        && t.view_of.is_none()
        && t.role == Role::Compute
        && t.dtype == DType::F32
}

/// Whether `id` is an f32 contiguous row vector of `n` elements.
fn row_vector(graph: &Graph, id: TensorId, n: usize) -> bool {
    let t = graph.tensor(id);
    t.dtype == DType::F32 && t.ne == [n, 1, 1, 1] && t.nb[0] == 4
}

/// The other operand of `node` if it is `op` with `first` as operand 0.
fn binary_after(node: &Tensor, op: BinaryOp, first: TensorId) -> Option<TensorId> {
    match (&node.op, node.src.as_slice()) {
        (Op::Binary(o), &[a, b]) if *o == op && a == first => Some(b),
        _ => None,
    }
}

/// The activation code of `act.wgsl` for a unary op it implements.
fn act_code(op: &Op) -> Option<u32> {
    match op {
        Op::Unary(UnaryOp::Gelu) => Some(1),
        Op::Unary(UnaryOp::GeluErf) => Some(2),
        Op::Unary(UnaryOp::Silu) => Some(3),
        Op::Unary(UnaryOp::Relu) => Some(4),
        _ => None,
    }
}

/// The fused dispatches that could replace the chain starting at `nodes[0]` (the split's
/// compute nodes from there on), most preferred first; empty if no chain starts there.
pub(super) fn chains(ctx: &Ctx, graph: &Graph, nodes: &[TensorId], uses: &[u32]) -> Vec<Fused> {
    let t = |k: usize| nodes.get(k).map(|&id| (id, graph.tensor(id)));
    let Some((first, t0)) = t(0) else {
        return Vec::new();
    };
    match t0.op {
        Op::MatMul => matmul_chain(ctx, graph, nodes, uses).into_iter().collect(),
        Op::Norm { .. } | Op::RmsNorm { .. } => norm_chain(ctx, graph, nodes, 0, uses),
        Op::Binary(BinaryOp::Add) => match t(1) {
            Some((_, t1))
                if matches!(t1.op, Op::Norm { .. } | Op::RmsNorm { .. })
                    && t1.src.first() == Some(&first)
                    && skippable(graph, uses, first, t1) =>
            {
                norm_chain(ctx, graph, nodes, 1, uses)
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// matmul → add(bias) [→ activation].
fn matmul_chain(ctx: &Ctx, graph: &Graph, nodes: &[TensorId], uses: &[u32]) -> Option<Fused> {
    let (&mm, &add) = (nodes.first()?, nodes.get(1)?);
    let (tm, ta) = (graph.tensor(mm), graph.tensor(add));
    let bias = binary_after(ta, BinaryOp::Add, mm)?;
    if !skippable(graph, uses, mm, ta) || !row_vector(graph, bias, tm.ne[0]) {
        return None;
    }
    let mut plan = ops::plan(ctx, graph, mm).ok()??;
    if !takes_epilogue(plan.key.0) {
        return None;
    }
    let (mut out, mut len, mut act) = (add, 2, 0);
    if let Some(&u) = nodes.get(2) {
        let tu = graph.tensor(u);
        if let Some(code) = act_code(&tu.op) {
            if skippable(graph, uses, add, tu) {
                (out, len, act) = (u, 3, code);
            }
        }
    }
    let to = graph.tensor(out);
    // The epilogue finds an element's row index from its flat offset: contiguous only.
    if to.dtype != DType::F32 || to.ne != tm.ne || to.nb != tm.nb || !to.is_contiguous() {
        return None;
    }
    plan.params.e = [0, 0, act, EP_BIAS];
    Some(Fused {
        out,
        plan,
        scale: None,
        bias: Some(bias),
        len,
    })
}

/// [add(residual) →] norm → mul(weight) [→ add(bias)], the norm at `nodes[at]` (`at` = 1:
/// after the residual add, which the caller checked feeds only the norm).
fn norm_chain(ctx: &Ctx, graph: &Graph, nodes: &[TensorId], at: usize, uses: &[u32]) -> Vec<Fused> {
    let Some(f) = norm_affine(ctx, graph, nodes, at, uses) else {
        return Vec::new();
    };
    if at == 0 {
        return vec![f];
    }
    // Add commutes: with equal shapes the residual may be bound as `a` instead, which lets
    // the output be computed over it (in place) when the memory planner put it there.
    let swapped = swap_operands(graph, &f.plan).map(|plan| Fused { plan, ..f.clone() });
    std::iter::once(f).chain(swapped).collect()
}

fn norm_affine(
    ctx: &Ctx,
    graph: &Graph,
    nodes: &[TensorId],
    at: usize,
    uses: &[u32],
) -> Option<Fused> {
    let (&norm, &mul) = (nodes.get(at)?, nodes.get(at + 1)?);
    let (tn, tw) = (graph.tensor(norm), graph.tensor(mul));
    let weight = binary_after(tw, BinaryOp::Mul, norm)?;
    if !skippable(graph, uses, norm, tw) || !row_vector(graph, weight, tn.ne[0]) {
        return None;
    }
    let (mut out, mut len, mut bias) = (mul, at + 2, None);
    if let Some(&add) = nodes.get(at + 2) {
        let ta = graph.tensor(add);
        if let Some(b) = binary_after(ta, BinaryOp::Add, mul) {
            if skippable(graph, uses, mul, ta) && row_vector(graph, b, tn.ne[0]) {
                (out, len, bias) = (add, at + 3, Some(b));
            }
        }
    }
    let pn = ops::plan(ctx, graph, norm).ok()??;
    // The operands and output layout come from the first node: the residual add or the norm.
    let mut plan = match at {
        0 => pn.clone(),
        _ => ops::plan(ctx, graph, *nodes.first()?).ok()??,
    };
    let first = graph.tensor(*nodes.first()?);
    let to = graph.tensor(out);
    if to.dtype != DType::F32 || to.ne != first.ne || to.nb != first.nb || first.ne != tn.ne {
        return None;
    }
    let resid = if at == 0 { 0 } else { EP_RESID };
    plan.key = pn.key;
    plan.params.u = pn.params.u;
    plan.params.f = pn.params.f;
    plan.params.e = [0, 0, 0, EP_SCALE | resid | bias.map_or(0, |_| EP_BIAS)];
    plan.groups = pn.groups;
    plan.in_place_ok = plan.in_place_ok && pn.in_place_ok;
    if at == 0 {
        plan.b = Some(None);
    }
    Some(Fused {
        out,
        plan,
        scale: Some(weight),
        bias,
        len,
    })
}

/// The plan of a residual-fused norm with `a` and `b` exchanged, if they have one shape.
fn swap_operands(graph: &Graph, plan: &NodePlan) -> Option<NodePlan> {
    let b = plan.b.flatten()?;
    let (ta, tb) = (graph.tensor(plan.a), graph.tensor(b));
    if ta.ne != tb.ne || ta.dtype != tb.dtype || b == plan.a {
        return None;
    }
    let mut s = plan.clone();
    let p = &mut s.params;
    (p.a_ne, p.b_ne) = (p.b_ne, p.a_ne);
    (p.a_nb, p.b_nb) = (p.b_nb, p.a_nb);
    (s.a, s.b) = (b, Some(Some(plan.a)));
    Some(s)
}
