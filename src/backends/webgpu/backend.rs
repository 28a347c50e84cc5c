//! The WebGPU stream: a graph split becomes one command encoder with one compute pass (one
//! dispatch per node), submitted once; completion and events are futures.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures_channel::oneshot;

use super::buffer::WebGpuBuffer;
use super::context::{Ctx, DEVICE_NAME};
use super::ops::{self, granularity, unit, NodePlan, PARAMS_SIZE};
use super::WebGpuDevice;
use crate::backend::{check_range, Backend, Buffer, Device, Event, LocalBoxFuture, TensorMemory};
use crate::error::{Error, Result};
use crate::graph::{Graph, TensorId};

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
struct Binding<'m> {
    buffer: &'m wgpu::Buffer,
    base: u64,
    size: u64,
    /// Offset of the tensor in the binding, in its storage units.
    rel: u32,
}

/// Binds tensor `id` from the aligned start at or below it, so the binding offset meets
/// minStorageBufferOffsetAlignment whatever the tensor's (view) offset.
fn bind_tensor<'m>(
    ctx: &Ctx,
    graph: &Graph,
    mem: &'m TensorMemory,
    id: TensorId,
) -> Result<Binding<'m>> {
    let t = graph.tensor(id);
    let (buf, off) = mem.locate(graph, id)?;
    let gb = buf
        .as_any()
        .downcast_ref::<WebGpuBuffer>()
        .ok_or_else(|| Error::Unsupported {
            device: DEVICE_NAME.into(),
            op: "access".into(),
            reason: format!("tensor {} is in a {} buffer", t.name, buf.type_name()),
        })?;
    let nbytes = t.nbytes();
    check_range(&format!("tensor {}", t.name), off, nbytes, gb.size())?;
    let align = ctx.storage_align();
    let real = gb.real_size();
    let mut base = off / align * align;
    let mut end = (off + nbytes).div_ceil(4) * 4;
    end = end.max(base + 4);
    if end > real {
        // Only an empty tensor at the very end of a buffer: bind its last word.
        base = (real - 4) / align * align;
        end = real;
    }
    if (end - base) > ctx.max_binding() {
        return Err(Error::Unsupported {
            device: DEVICE_NAME.into(),
            op: "bind".into(),
            reason: format!("tensor {} exceeds maxStorageBufferBindingSize", t.name),
        });
    }
    let rel_bytes = off.saturating_sub(base);
    if rel_bytes % granularity(t.dtype) != 0 {
        return Err(Error::Unsupported {
            device: DEVICE_NAME.into(),
            op: "bind".into(),
            reason: format!("tensor {} at byte offset {off} is misaligned", t.name),
        });
    }
    Ok(Binding {
        buffer: gb.raw(),
        base: base as u64,
        size: (end - base) as u64,
        rel: (rel_bytes / unit(t.dtype)) as u32,
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

impl Backend for WebGpuBackend {
    fn name(&self) -> &str {
        DEVICE_NAME
    }

    fn device(&self) -> Rc<dyn Device> {
        self.device.clone()
    }

    fn compute(&self, graph: &Graph, nodes: &[TensorId], mem: &TensorMemory) -> Result<()> {
        let ctx = &*self.device.ctx;
        ctx.check()?;
        let mut plans: Vec<(TensorId, NodePlan)> = Vec::new();
        for &id in nodes {
            if graph.get(id)?.op.is_noop() {
                continue;
            }
            if let Some(plan) = ops::plan(ctx, graph, id)? {
                plans.push((id, plan));
            }
        }
        if plans.is_empty() {
            return Ok(());
        }
        let ua = (ctx.limits.min_uniform_buffer_offset_alignment as usize).max(16);
        let stride = PARAMS_SIZE.div_ceil(ua) * ua;
        let mut uniform_data = vec![0u8; stride * plans.len()];
        let mut bindings = Vec::with_capacity(plans.len());
        let mut pipelines = Vec::with_capacity(plans.len());
        for (k, (id, plan)) in plans.iter_mut().enumerate() {
            let d = bind_tensor(ctx, graph, mem, *id)?;
            let a = bind_tensor(ctx, graph, mem, plan.a)?;
            let b = match plan.b {
                Some(Some(b)) => Some(bind_tensor(ctx, graph, mem, b)?),
                Some(None) => Some(Binding {
                    buffer: &ctx.dummy,
                    base: 0,
                    size: ctx.dummy.size(),
                    rel: 0,
                }),
                None => None,
            };
            plan.params.offs = [d.rel, a.rel, b.as_ref().map_or(0, |b| b.rel), 0];
            uniform_data[k * stride..k * stride + PARAMS_SIZE]
                .copy_from_slice(bytemuck::bytes_of(&plan.params));
            let key = plan.key;
            pipelines.push(ctx.pipeline(key, || ops::shader_source(key))?);
            bindings.push((d, a, b));
        }
        ctx.scoped(|| {
            let uniform = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("webtensor params"),
                size: uniform_data.len() as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            ctx.queue.write_buffer(&uniform, 0, &uniform_data);
            let groups: Vec<wgpu::BindGroup> = bindings
                .iter()
                .zip(&pipelines)
                .enumerate()
                .map(|(k, ((d, a, b), pipeline))| {
                    let mut entries = vec![
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: &uniform,
                                offset: (k * stride) as u64,
                                size: wgpu::BufferSize::new(PARAMS_SIZE as u64),
                            }),
                        },
                        buffer_entry(1, a),
                        buffer_entry(2, d),
                    ];
                    if let Some(b) = b {
                        entries.push(buffer_entry(3, b));
                    }
                    ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: None,
                        layout: &pipeline.get_bind_group_layout(0),
                        entries: &entries,
                    })
                })
                .collect();
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
                for ((_, plan), (pipeline, group)) in
                    plans.iter().zip(pipelines.iter().zip(&groups))
                {
                    pass.set_pipeline(pipeline);
                    pass.set_bind_group(0, group, &[]);
                    let [x, y, z] = plan.groups;
                    pass.dispatch_workgroups(x, y, z);
                }
            }
            ctx.queue.submit([enc.finish()]);
        })
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
                    rx.await.map_err(|_| {
                        Ctx::device_error("queue dropped before the event's work completed")
                    })?;
                    self.done.set(true);
                }
                // Another wait holds the signal: waiting for everything is a safe superset.
                None => self.ctx.wait_idle().await?,
            }
            self.ctx.drain_errors().await
        })
    }
}
