//! Fusion of a split's node chains into one dispatch: the nodes after a matmul or a norm
//! that only transform its result element by element become the kernel's epilogue
//! (`shaders/epilogue.wgsl`), so their outputs are never written or read back.
//!
//! Two chain shapes, anywhere in a split (the planner knows nothing of models):
//! - matmul → add(bias row vector) [→ gelu | gelu_erf | silu | relu];
//! - [add(residual) →] norm | rms_norm → mul(weight row vector) [→ add(bias row vector)].
//!
//! When a chain may fuse at all is the graph's business ([`crate::backend::fuse`], shared
//! with the CPU's GEMM epilogue). Binding the fused dispatch can still fail (the output
//! overlapping an operand, operands too far apart to share a binding): `backend.rs` then runs
//! the nodes one by one.

use super::context::Ctx;
use super::ops::{self, NodePlan, WebGpuOptions};
use super::shader::{takes_epilogue, EP_BIAS, EP_RESID, EP_SCALE};
use crate::backend::fuse::{self, binary_after, row_vector, skippable};
use crate::graph::{BinaryOp, DType, Graph, Op, TensorId, UnaryOp, ACT_NONE};

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

/// The fused dispatches that could replace the chain starting at `nodes[0]` (the split's
/// compute nodes from there on), most preferred first; empty if no chain starts there.
pub(super) fn chains(
    ctx: &Ctx,
    opts: &WebGpuOptions,
    graph: &Graph,
    nodes: &[TensorId],
    uses: &[u32],
) -> Vec<Fused> {
    let t = |k: usize| nodes.get(k).map(|&id| (id, graph.tensor(id)));
    let Some((first, t0)) = t(0) else {
        return Vec::new();
    };
    match t0.op {
        Op::MatMul => matmul_chain(ctx, opts, graph, nodes, uses)
            .into_iter()
            .collect(),
        Op::Norm { .. } | Op::RmsNorm { .. } => norm_chain(ctx, opts, graph, nodes, 0, uses),
        Op::Binary(BinaryOp::Add) => match t(1) {
            Some((_, t1))
                if matches!(t1.op, Op::Norm { .. } | Op::RmsNorm { .. })
                    && t1.src.first() == Some(&first)
                    && skippable(graph, uses, first, t1) =>
            {
                norm_chain(ctx, opts, graph, nodes, 1, uses)
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// matmul → add(bias) [→ activation] (found by [`crate::backend::fuse::matmul_chain`]).
fn matmul_chain(
    ctx: &Ctx,
    opts: &WebGpuOptions,
    graph: &Graph,
    nodes: &[TensorId],
    uses: &[u32],
) -> Option<Fused> {
    let c = fuse::matmul_chain(graph, nodes, uses)?;
    let mut plan = ops::plan(ctx, opts, graph, c.matmul).ok()??;
    if !takes_epilogue(plan.key.0) {
        return None;
    }
    let act = c.act.map_or(ACT_NONE, UnaryOp::code);
    plan.params.e = [0, 0, act, EP_BIAS];
    Some(Fused {
        out: c.out,
        plan,
        scale: None,
        bias: Some(c.bias),
        len: c.len,
    })
}

/// [add(residual) →] norm → mul(weight) [→ add(bias)], the norm at `nodes[at]` (`at` = 1:
/// after the residual add, which the caller checked feeds only the norm).
fn norm_chain(
    ctx: &Ctx,
    opts: &WebGpuOptions,
    graph: &Graph,
    nodes: &[TensorId],
    at: usize,
    uses: &[u32],
) -> Vec<Fused> {
    let Some(f) = norm_affine(ctx, opts, graph, nodes, at, uses) else {
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
    opts: &WebGpuOptions,
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
    let pn = ops::plan(ctx, opts, graph, norm).ok()??;
    // The operands and output layout come from the first node: the residual add or the norm.
    let mut plan = match at {
        0 => pn.clone(),
        _ => ops::plan(ctx, opts, graph, *nodes.first()?).ok()??,
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
