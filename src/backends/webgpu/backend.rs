//! The WebGPU stream: a graph split becomes one command encoder with one compute pass (one
//! dispatch per node, two for an attention with its keys split), submitted once; completion
//! and events are futures. A prepared split ([`Encoded`]) keeps its pipelines, bind groups,
//! parameter buffer and scratch, so that a run of it creates no GPU object but the command
//! encoder.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures_channel::oneshot;

use super::buffer::WebGpuBuffer;
use super::context::{Ctx, GpuBuffer, Pipeline, DEVICE_NAME};
use super::fuse::{self, Fused};
use super::ops::{self, granularity, unit, NodePlan, WebGpuOptions};
use super::shader::{
    self, Variant, EP_BIAS, EP_MERGED, EP_SCALE, IN_PLACE, PARAMS_SIZE, SHARED_B, SHARED_C,
};
use super::WebGpuDevice;
use crate::backend::{BackendImpl, Event, LocalBoxFuture, PreparedImpl, TensorMemory};
use crate::error::{Error, Result};
use crate::graph::{Graph, Tensor, TensorId};

/// A stream on the WebGPU device.
pub struct WebGpuBackend {
    device: Rc<WebGpuDevice>,
}

impl WebGpuBackend {
    pub(super) fn new(device: Rc<WebGpuDevice>) -> Self {
        Self { device }
    }
}

/// Where one operand is bound: the buffer range and the operand's offset inside it.
#[derive(Clone, Copy)]
struct Binding<'m> {
    buffer: &'m wgpu::Buffer,
    base: u64,
    size: u64,
    /// Offset of the tensor in the binding, in its storage units.
    rel: u32,
}

/// Node `node` cannot be bound as planned.
fn bind_error(node: &Tensor, reason: String) -> Error {
    Error::Unsupported {
        op: node.op.name(),
        dtype: node.dtype.name(),
        device: DEVICE_NAME.into(),
        reason: format!("node {}: {reason}", node.name),
    }
}

fn foreign(t: &Tensor, buffer: String) -> Error {
    Error::ForeignBuffer {
        tensor: t.name.clone(),
        device: DEVICE_NAME.into(),
        buffer,
    }
}

/// The WebGPU buffer holding `id`, `id`'s byte offset in it, and its byte span.
fn locate<'m>(
    ctx: &Ctx,
    graph: &Graph,
    mem: &'m TensorMemory,
    id: TensorId,
) -> Result<(&'m WebGpuBuffer, usize, usize)> {
    let t = graph.tensor(id);
    let (buf, off) = mem.locate(graph, id)?;
    let gb = buf
        .downcast::<WebGpuBuffer>()
        .ok_or_else(|| foreign(t, buf.type_name().to_string()))?;
    if !gb.is_on(ctx) {
        return Err(foreign(t, "another WebGPU device's".into()));
    }
    // `mem.locate` checked that the tensor lies in the buffer.
    Ok((gb, off, t.nbytes()))
}

/// Binds bytes `[start, end)` of `gb` from the aligned start at or below `start`, so the
/// binding offset meets minStorageBufferOffsetAlignment whatever the tensor's (view) offset,
/// to the next multiple of 16 bytes (buffers are sized in those), so that a shader reading
/// the binding as vec4s reaches every element.
fn bind_span<'m>(
    ctx: &Ctx,
    node: &Tensor,
    gb: &'m WebGpuBuffer,
    start: usize,
    end: usize,
) -> Result<Binding<'m>> {
    let align = ctx.storage_align();
    let real = gb.real_size();
    let mut base = start / align * align;
    let mut end = end.div_ceil(16) * 16;
    end = end.max(base + 16);
    if end > real {
        // Only an empty tensor at the very end of a buffer: bind its last 16 bytes.
        base = (real - 16) / align * align;
        end = real;
    }
    if (end - base) > ctx.max_binding() {
        return Err(bind_error(
            node,
            format!("{} bytes exceed maxStorageBufferBindingSize", end - base),
        ));
    }
    Ok(Binding {
        buffer: gb.raw(),
        base: base as u64,
        size: (end - base) as u64,
        rel: 0,
    })
}

/// Offset of tensor `id` (at byte `off`) inside binding `b` of `node`, in its storage units.
fn rel_offset(
    graph: &Graph,
    node: &Tensor,
    id: TensorId,
    off: usize,
    b: &Binding<'_>,
) -> Result<u32> {
    let t = graph.tensor(id);
    let rel_bytes = off.saturating_sub(b.base as usize);
    if !rel_bytes.is_multiple_of(granularity(t.dtype)) {
        return Err(bind_error(
            node,
            format!("operand {} at byte offset {off} is misaligned", t.name),
        ));
    }
    Ok((rel_bytes / unit(t.dtype)) as u32)
}

/// Whether byte ranges `[x, x + nx)` and `[y, y + ny)` of one buffer intersect.
fn intersect(
    gx: &WebGpuBuffer,
    x: usize,
    nx: usize,
    gy: &WebGpuBuffer,
    y: usize,
    ny: usize,
) -> bool {
    std::ptr::eq(gx, gy) && nx > 0 && ny > 0 && x < y + ny && y < x + nx
}

/// The bindings of one node: dst, a, b (if the shader declares b), and the `offs` block.
/// Operands sharing bytes are bound once (WebGPU forbids aliasing writable bindings): b is
/// then read through a's binding, and an output computed in place is written through it.
fn bind_node<'m>(
    ctx: &'m Ctx,
    graph: &Graph,
    mem: &'m TensorMemory,
    id: TensorId,
    plan: &NodePlan,
) -> Result<(Binding<'m>, Binding<'m>, Option<Binding<'m>>, [u32; 4])> {
    let t = graph.tensor(id);
    let (gd, od, nd) = locate(ctx, graph, mem, id)?;
    let (ga, oa, na) = locate(ctx, graph, mem, plan.a)?;
    let b_place = match plan.b {
        Some(Some(b)) => Some((b, locate(ctx, graph, mem, b)?)),
        _ => None,
    };
    let in_place = intersect(gd, od, nd, ga, oa, na);
    if super::shader::in_place_only(plan.key.0) && !in_place {
        // It writes only the rows named: the others must already be the destination's.
        return Err(bind_error(
            t,
            "a state write must be computed in place".into(),
        ));
    }
    if in_place {
        let ta = graph.tensor(plan.a);
        // Each invocation must read an element (or its row) before writing it, in one layout.
        let same = od == oa && ta.dtype == t.dtype && ta.ne == t.ne && ta.nb == t.nb;
        if !(plan.in_place_ok && same) {
            return Err(bind_error(
                t,
                "the output overlaps its input in a way this kernel cannot run in place".into(),
            ));
        }
    }
    if let Some((b, (gb, ob, nb))) = b_place {
        let b_is_a = b == plan.a;
        if intersect(gd, od, nd, gb, ob, nb) && !(in_place && b_is_a) {
            return Err(bind_error(
                t,
                format!("the output overlaps operand {}", graph.tensor(b).name),
            ));
        }
    }
    // a's binding spans every operand that shares it.
    let (mut lo, mut hi) = (oa, oa + na);
    if in_place {
        (lo, hi) = (lo.min(od), hi.max(od + nd));
    }
    if plan.shared_b {
        if let Some((_, (gb, ob, nb))) = b_place {
            if !std::ptr::eq(ga, gb) {
                return Err(bind_error(t, "shared operands in different buffers".into()));
            }
            (lo, hi) = (lo.min(ob), hi.max(ob + nb));
        }
    }
    if let (true, Some(c)) = (plan.shared_c, plan.c) {
        let (gc, oc, nc) = locate(ctx, graph, mem, c)?;
        if !std::ptr::eq(ga, gc) {
            return Err(bind_error(t, "shared operands in different buffers".into()));
        }
        (lo, hi) = (lo.min(oc), hi.max(oc + nc));
    }
    let mut a = bind_span(ctx, t, ga, lo, hi)?;
    a.rel = rel_offset(graph, t, plan.a, oa, &a)?;
    // Unused bindings get disjoint slices of the dummy buffer (two writable bindings of the
    // same bytes would alias, even there).
    let slot = ctx.storage_align() as u64;
    let dummy = |index: u64, rel| Binding {
        buffer: &ctx.dummy,
        base: index * slot,
        size: 16,
        rel,
    };
    let mut flags = 0;
    let d = if in_place {
        flags |= IN_PLACE;
        dummy(0, rel_offset(graph, t, id, od, &a)?)
    } else {
        let mut d = bind_span(ctx, t, gd, od, od + nd)?;
        d.rel = rel_offset(graph, t, id, od, &d)?;
        d
    };
    // Shaders writing f16 or quantized outputs own whole words from the start.
    if !od.is_multiple_of(4) {
        return Err(bind_error(t, "the output is not 4-byte aligned".into()));
    }
    let b = match (plan.b, b_place) {
        (Some(_), Some((b, (_, ob, _)))) if plan.shared_b => {
            flags |= SHARED_B;
            Some(dummy(1, rel_offset(graph, t, b, ob, &a)?))
        }
        (Some(_), Some((b, (gb, ob, nb)))) => {
            let mut bind = bind_span(ctx, t, gb, ob, ob + nb)?;
            bind.rel = rel_offset(graph, t, b, ob, &bind)?;
            Some(bind)
        }
        (Some(_), None) => Some(dummy(1, 0)),
        (None, _) => None,
    };
    let offs = [d.rel, a.rel, b.as_ref().map_or(0, |b| b.rel), flags];
    Ok((d, a, b, offs))
}

/// Binds tensor `id` of `node` alone, with its offset.
fn bind_one<'m>(
    ctx: &'m Ctx,
    graph: &Graph,
    mem: &'m TensorMemory,
    node: &Tensor,
    id: TensorId,
) -> Result<(&'m WebGpuBuffer, Binding<'m>)> {
    let (gb, off, n) = locate(ctx, graph, mem, id)?;
    let mut b = bind_span(ctx, node, gb, off, off + n)?;
    b.rel = rel_offset(graph, node, id, off, &b)?;
    Ok((gb, b))
}

/// Whether two bindings share bytes.
fn aliases(x: &Binding<'_>, y: &Binding<'_>) -> bool {
    std::ptr::eq(x.buffer, y.buffer) && x.base < y.base + y.size && y.base < x.base + x.size
}

/// The bindings 4 and 5 of a fused epilogue: its scale and bias vectors, each alone (a
/// dummy if absent), or both through binding 4 when their bindings would share bytes
/// (`EP_MERGED` is then set in `e`). None may share bytes with the node's other bindings
/// `others` (WebGPU forbids aliasing writable bindings). Sets the offsets in `e`.
#[allow(clippy::too_many_arguments)]
fn bind_epilogue<'m>(
    ctx: &'m Ctx,
    graph: &Graph,
    mem: &'m TensorMemory,
    node: &Tensor,
    scale: Option<TensorId>,
    bias: Option<TensorId>,
    others: &[&Binding<'_>],
    e: &mut [u32; 4],
) -> Result<[Binding<'m>; 2]> {
    let slot = ctx.storage_align() as u64;
    let dummy = |index: u64| Binding {
        buffer: &ctx.dummy,
        base: index * slot,
        size: 16,
        rel: 0,
    };
    let s = scale
        .map(|id| bind_one(ctx, graph, mem, node, id))
        .transpose()?;
    let b = bias
        .map(|id| bind_one(ctx, graph, mem, node, id))
        .transpose()?;
    let bindings = match (s, b, scale, bias) {
        (Some((gs, s)), Some((_, b)), Some(sid), Some(bid)) if aliases(&s, &b) => {
            let (_, os, ns) = locate(ctx, graph, mem, sid)?;
            let (_, ob, nb) = locate(ctx, graph, mem, bid)?;
            let both = bind_span(ctx, node, gs, os.min(ob), (os + ns).max(ob + nb))?;
            e[0] = rel_offset(graph, node, sid, os, &both)?;
            e[1] = rel_offset(graph, node, bid, ob, &both)?;
            e[3] |= EP_MERGED;
            [both, dummy(3)]
        }
        (s, b, _, _) => {
            let s = s.map_or_else(|| dummy(2), |(_, s)| s);
            let b = b.map_or_else(|| dummy(3), |(_, b)| b);
            (e[0], e[1]) = (s.rel, b.rel);
            [s, b]
        }
    };
    if bindings
        .iter()
        .any(|x| others.iter().any(|o| aliases(x, o)))
    {
        return Err(bind_error(
            node,
            "epilogue operands overlap another binding".into(),
        ));
    }
    Ok(bindings)
}

/// A dispatch's plan and bindings: d, a, b (if declared) and a fused epilogue's vectors.
struct Bound<'m> {
    plan: NodePlan,
    d: Binding<'m>,
    a: Binding<'m>,
    b: Option<Binding<'m>>,
    /// A third operand's binding 4 (set_rows' indices, attention's v).
    c: Option<Binding<'m>>,
    /// A fourth operand's binding 5 (attention's mask, or a dummy).
    m: Option<Binding<'m>>,
    /// A fused epilogue's bindings 4 and 5.
    e: Option<[Binding<'m>; 2]>,
}

/// Binds the fused dispatch `f`, or fails if its operands cannot be bound as one dispatch.
fn bind_fused<'m>(
    ctx: &'m Ctx,
    graph: &Graph,
    mem: &'m TensorMemory,
    f: Fused,
) -> Result<Bound<'m>> {
    let Fused {
        out,
        mut plan,
        scale,
        bias,
        ..
    } = f;
    let (d, a, b, offs) = bind_node(ctx, graph, mem, out, &plan)?;
    let mut others = vec![&d, &a];
    others.extend(b.as_ref());
    let node = graph.tensor(out);
    let e = bind_epilogue(
        ctx,
        graph,
        mem,
        node,
        scale,
        bias,
        &others,
        &mut plan.params.e,
    )?;
    plan.params.offs = offs;
    Ok(Bound {
        plan,
        d,
        a,
        b,
        c: None,
        m: None,
        e: Some(e),
    })
}

fn buffer_entry<'a>(binding: u32, b: &'a Binding<'a>) -> wgpu::BindGroupEntry<'a> {
    wgpu::BindGroupEntry {
        binding,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: b.buffer,
            offset: b.base,
            size: wgpu::BufferSize::new(b.size),
        }),
    }
}

/// A split as the GPU runs it: every node's pipeline and bind group, and one parameter buffer
/// holding every node's parameters, made once; [`Encoded::submit`] records the dispatches into
/// one compute pass and submits it, creating nothing but the (single-use) command encoder.
pub(super) struct Encoded {
    ctx: Rc<Ctx>,
    steps: Vec<Step>,
    /// Nodes fused away (computed by another node's dispatch).
    fused: usize,
    /// Keeps the parameters alive with the bind groups that read them.
    _params: Option<GpuBuffer>,
    /// The split attentions' partial results ([`ops::KvSplit`]), one region every split
    /// node reuses (the dispatches of a pass run in order).
    _scratch: Option<GpuBuffer>,
}

/// One dispatch.
struct Step {
    pipeline: Rc<Pipeline>,
    group: wgpu::BindGroup,
    groups: [u32; 3],
}

impl Encoded {
    /// Plans and binds `nodes` of `graph` over `mem`, fusing chains of them into one
    /// dispatch where `fuse` finds them (and fusion is on); the parameters are written once
    /// here.
    fn build(
        ctx: &Rc<Ctx>,
        opts: &WebGpuOptions,
        graph: &Graph,
        nodes: &[TensorId],
        mem: &TensorMemory,
    ) -> Result<Self> {
        ctx.check()?;
        let mut compute = Vec::with_capacity(nodes.len());
        for &id in nodes {
            if !graph.get(id)?.op.is_noop() {
                compute.push(id);
            }
        }
        let uses = opts.fusion.then(|| crate::backend::fuse::use_counts(graph));
        // The attentions are planned first: the scratch their split keys need is made before
        // any is bound (each plan is used below, not made again).
        let mut attention_plans = std::collections::HashMap::new();
        for &id in &compute {
            if matches!(graph.tensor(id).op, crate::graph::Op::Attention { .. }) {
                attention_plans.insert(id, ops::plan(ctx, opts, graph, id)?);
            }
        }
        let scratch_bytes = attention_plans
            .values()
            .filter_map(|p| p.as_ref()?.split)
            .map(|s| s.scratch_bytes.div_ceil(16) * 16)
            .max();
        let scratch = match scratch_bytes {
            Some(size) => Some(ctx.scoped(|| {
                ctx.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("webtensor attention scratch"),
                    size,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                })
            })?),
            None => None,
        };
        let mut bound: Vec<Bound<'_>> = Vec::new();
        let (mut k, mut fused) = (0, 0);
        'nodes: while k < compute.len() {
            if let Some(uses) = &uses {
                // A chain that cannot be bound as one dispatch runs node by node below.
                for f in fuse::chains(ctx, opts, graph, &compute[k..], uses) {
                    let len = f.len;
                    if let Ok(b) = bind_fused(ctx, graph, mem, f) {
                        bound.push(b);
                        fused += len - 1;
                        k += len;
                        continue 'nodes;
                    }
                }
            }
            let id = compute[k];
            k += 1;
            let plan = match attention_plans.remove(&id) {
                Some(plan) => plan,
                None => ops::plan(ctx, opts, graph, id)?,
            };
            if let Some(mut plan) = plan {
                let (d, a, b, offs) = bind_node(ctx, graph, mem, id, &plan)?;
                plan.params.offs = offs;
                let c = match plan.c {
                    // Read through a's binding (which bind_node made span it): the fourth
                    // slot of the dummy buffer stands in.
                    Some(cid) if plan.shared_c => {
                        let node = graph.tensor(id);
                        let (_, oc, _) = locate(ctx, graph, mem, cid)?;
                        plan.params.e[0] = rel_offset(graph, node, cid, oc, &a)?;
                        plan.params.offs[3] |= SHARED_C;
                        let slot = ctx.storage_align() as u64;
                        Some(Binding {
                            buffer: &ctx.dummy,
                            base: 3 * slot,
                            size: 16,
                            rel: 0,
                        })
                    }
                    Some(cid) => {
                        let node = graph.tensor(id);
                        let (_, c) = bind_one(ctx, graph, mem, node, cid)?;
                        if [&d, &a].into_iter().chain(&b).any(|o| aliases(&c, o)) {
                            return Err(bind_error(
                                node,
                                format!(
                                    "operand {} overlaps another binding",
                                    graph.tensor(cid).name
                                ),
                            ));
                        }
                        plan.params.e[0] = c.rel;
                        Some(c)
                    }
                    None => None,
                };
                let m = match plan.m {
                    Some(Some(mid)) => {
                        let node = graph.tensor(id);
                        let (_, m) = bind_one(ctx, graph, mem, node, mid)?;
                        if [&d, &a]
                            .into_iter()
                            .chain(&b)
                            .chain(&c)
                            .any(|o| aliases(&m, o))
                        {
                            return Err(bind_error(
                                node,
                                format!(
                                    "operand {} overlaps another binding",
                                    graph.tensor(mid).name
                                ),
                            ));
                        }
                        plan.params.e[1] = m.rel;
                        Some(m)
                    }
                    // Declared but absent: the third slot of the dummy buffer (d and b may
                    // use the first two).
                    Some(None) => {
                        let slot = ctx.storage_align() as u64;
                        Some(Binding {
                            buffer: &ctx.dummy,
                            base: 2 * slot,
                            size: 16,
                            rel: 0,
                        })
                    }
                    None => None,
                };
                let split = plan.split;
                let mut node = Bound {
                    plan,
                    d,
                    a,
                    b,
                    c,
                    m,
                    e: None,
                };
                if let Some(split) = split {
                    // The runs' partial results to the scratch, then merged into `d`.
                    let scratch = scratch.as_ref().ok_or_else(|| {
                        bind_error(graph.tensor(id), "split attention without scratch".into())
                    })?;
                    let part = Binding {
                        buffer: scratch,
                        base: 0,
                        size: split.scratch_bytes.div_ceil(16) * 16,
                        rel: 0,
                    };
                    let merge = Bound {
                        plan: ops::combine_plan(&node.plan, split),
                        d: node.d,
                        a: part,
                        b: None,
                        c: None,
                        m: None,
                        e: None,
                    };
                    node.plan.params.offs[0] = 0;
                    node.d = part;
                    bound.push(node);
                    bound.push(merge);
                } else {
                    bound.push(node);
                }
            }
        }
        if bound.is_empty() {
            return Ok(Self {
                ctx: ctx.clone(),
                steps: Vec::new(),
                fused,
                _params: None,
                _scratch: None,
            });
        }
        let ua = (ctx.limits.min_uniform_buffer_offset_alignment as usize).max(16);
        let stride = PARAMS_SIZE.div_ceil(ua) * ua;
        let mut uniform_data = vec![0u8; stride * bound.len()];
        let mut pipelines = Vec::with_capacity(bound.len());
        for (k, b) in bound.iter().enumerate() {
            uniform_data[k * stride..k * stride + PARAMS_SIZE]
                .copy_from_slice(bytemuck::bytes_of(&b.plan.params));
            let e = b.plan.params.e;
            let variant = if b.e.is_some() {
                Variant::Fused {
                    ops: e[3] & (EP_SCALE | EP_BIAS),
                    act: e[2],
                }
            } else {
                Variant::Plain
            };
            let key = (b.plan.key, variant);
            pipelines.push(ctx.pipeline(key, || shader::source(key))?);
        }
        let (steps, uniform) = ctx.scoped(|| {
            let uniform = ctx.create_buffer(&wgpu::BufferDescriptor {
                label: Some("webtensor params"),
                size: uniform_data.len() as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            ctx.queue.write_buffer(&uniform, 0, &uniform_data);
            let steps = bound
                .iter()
                .zip(pipelines)
                .enumerate()
                .map(|(k, (b, pipeline))| {
                    let mut entries = vec![
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: &uniform,
                                offset: (k * stride) as u64,
                                size: wgpu::BufferSize::new(PARAMS_SIZE as u64),
                            }),
                        },
                        buffer_entry(1, &b.a),
                        buffer_entry(2, &b.d),
                    ];
                    if let Some(bb) = &b.b {
                        entries.push(buffer_entry(3, bb));
                    }
                    if let Some(c) = &b.c {
                        entries.push(buffer_entry(4, c));
                    }
                    if let Some(m) = &b.m {
                        entries.push(buffer_entry(5, m));
                    }
                    if let Some([scale, bias]) = &b.e {
                        entries.push(buffer_entry(4, scale));
                        entries.push(buffer_entry(5, bias));
                    }
                    let group = ctx.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: None,
                        layout: &pipeline.layout,
                        entries: &entries,
                    });
                    Step {
                        pipeline,
                        group,
                        groups: b.plan.groups,
                    }
                })
                .collect();
            (steps, uniform)
        })?;
        // The bind groups hold what they read; the bindings' borrows end here.
        drop(bound);
        Ok(Self {
            ctx: ctx.clone(),
            steps,
            fused,
            _params: Some(uniform),
            _scratch: scratch,
        })
    }

    /// Records every dispatch into one compute pass and submits it.
    fn submit(&self) -> Result<()> {
        let ctx = &*self.ctx;
        ctx.check()?;
        if self.steps.is_empty() {
            return Ok(());
        }
        ctx.scoped(|| {
            let mut enc = ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("webtensor graph"),
                });
            {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("webtensor graph"),
                    timestamp_writes: None,
                });
                for step in &self.steps {
                    pass.set_pipeline(&step.pipeline.pipeline);
                    pass.set_bind_group(0, &step.group, &[]);
                    let [x, y, z] = step.groups;
                    pass.dispatch_workgroups(x, y, z);
                }
            }
            ctx.submit(enc.finish());
        })
    }
}

impl PreparedImpl for Encoded {
    fn compute(&self) -> Result<()> {
        self.submit()
    }

    fn describe(&self) -> Option<String> {
        Some(format!(
            "{} dispatches ({} fused)",
            self.steps.len(),
            self.fused
        ))
    }
}

impl BackendImpl for WebGpuBackend {
    fn compute(&self, graph: &Graph, nodes: &[TensorId], mem: &TensorMemory) -> Result<()> {
        Encoded::build(&self.device.ctx, &self.device.opts, graph, nodes, mem)?.submit()
    }

    fn prepare(
        &self,
        graph: &Graph,
        nodes: &[TensorId],
        mem: &TensorMemory,
    ) -> Result<Option<Box<dyn PreparedImpl>>> {
        Ok(Some(Box::new(Encoded::build(
            &self.device.ctx,
            &self.device.opts,
            graph,
            nodes,
            mem,
        )?)))
    }

    fn synchronize(&self) -> LocalBoxFuture<'_, Result<()>> {
        Box::pin(self.device.ctx.wait_idle())
    }

    fn record_event(&self) -> Option<Rc<dyn Event>> {
        let ctx = self.device.ctx.clone();
        let rx = ctx.work_done_signal();
        Some(Rc::new(WebGpuEvent {
            ctx,
            rx: RefCell::new(Some(rx)),
            done: Cell::new(false),
        }))
    }
}

/// Completion of the work submitted before it was recorded.
struct WebGpuEvent {
    ctx: Rc<Ctx>,
    rx: RefCell<Option<oneshot::Receiver<()>>>,
    done: Cell<bool>,
}

impl Event for WebGpuEvent {
    fn wait(&self) -> LocalBoxFuture<'_, Result<()>> {
        Box::pin(async move {
            if self.done.get() {
                return self.ctx.check();
            }
            let rx = self.rx.borrow_mut().take();
            match rx {
                Some(rx) => {
                    self.ctx.poll_native()?;
                    self.ctx.work_done(rx).await?;
                    self.done.set(true);
                }
                // Another wait holds the signal: waiting for everything is a safe superset.
                None => self.ctx.wait_idle().await?,
            }
            self.ctx.drain_errors().await
        })
    }
}
