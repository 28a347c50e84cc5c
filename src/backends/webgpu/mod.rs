//! The WebGPU device via wgpu: adapter and device set-up ([`WebGpuReg`]), storage buffers
//! within the adapter's limits, WGSL compute shaders (in `shaders/`) with a pipeline cache,
//! and async readback. wgpu types never leave this folder.
//!
//! Having no adapter is a normal outcome (most browsers without the flag, machines without
//! Vulkan): the family then has no device and says why.
//!
//! Files: `context` (device, queue, limits, pipeline cache, error scopes, readback and
//! completion futures), `buffer` (buffer type and buffers), `ops` (what runs and how: one
//! `ops::plan` per node, which `supports_op` also answers from), `shader` (WGSL sources
//! joined from `shaders/` pieces, the parameter structs and their generated WGSL),
//! `backend` (bindings and the one-submit encoder). Every operand is bound read-write, since WebGPU forbids a
//! buffer being both read-only and writable in one dispatch; operands sharing bytes are
//! bound once (a second operand, or an in-place output, goes through the first's binding).

mod backend;
mod buffer;
mod context;
mod fuse;
mod ops;
mod selfcheck;
mod shader;

pub use backend::WebGpuBackend;
pub use buffer::{WebGpuBuffer, WebGpuBufferType, WEBGPU_BUFFER_TYPE};
pub use context::{all_devices_buffers, LiveBuffers, ObjectCounts};
pub use ops::{MatmulKernels, WebGpuOptions};

use std::rc::Rc;

use crate::backend::{
    BackendImpl, BackendReg, BufferType, Device, DeviceCaps, DeviceKind, Support,
};
use crate::error::Result;
use crate::graph::{Graph, Op, Role, TensorId};
use context::{Ctx, DEVICE_NAME};

/// Weights of at least this many elements make a host-resident matmul worth moving here.
const OFFLOAD_MIN_ELEMENTS: usize = 1 << 20;

/// The WebGPU family: one device when an adapter exists, none otherwise.
pub struct WebGpuReg {
    device: Option<Rc<WebGpuDevice>>,
    reason: Option<String>,
}

impl WebGpuReg {
    /// Requests a high-performance adapter and a device with the adapter's own limits (and
    /// `shader-f16` and wgpu's native `SUBGROUP` when offered: kernels with variants for
    /// them use them), then runs the known-answer self-check on it. Never fails:
    /// without an adapter, or with one that answers wrong, the family is empty and
    /// [`BackendReg::unavailable_reason`] says why.
    pub async fn new() -> Self {
        Self::create(false).await
    }

    /// Test hook (`testing` feature): a family whose device answers one self-check value
    /// wrong, as a broken driver would (so it is dropped with the reason).
    #[cfg(feature = "testing")]
    pub async fn with_failing_self_check() -> Self {
        Self::create(true).await
    }

    async fn create(sabotage_self_check: bool) -> Self {
        let ctx = match Ctx::create().await {
            Ok(ctx) => Rc::new(ctx),
            Err(reason) => {
                return Self {
                    device: None,
                    reason: Some(reason),
                }
            }
        };
        let device = Rc::new(WebGpuDevice {
            buffer_type: Rc::new(WebGpuBufferType::new(ctx.clone())),
            ctx,
            opts: WebGpuOptions::default(),
        });
        match selfcheck::check(device.clone(), sabotage_self_check).await {
            Ok(()) => Self {
                device: Some(device),
                reason: None,
            },
            Err(why) => {
                let reason = format!(
                    "WebGPU adapter {} failed its self-check, so it is not used: {why}",
                    device.ctx.info.name
                );
                device.destroy();
                Self {
                    device: None,
                    reason: Some(reason),
                }
            }
        }
    }

    /// The same family with its device planning by `opts` ([`WebGpuDevice::with_options`]).
    pub fn with_options(&self, opts: WebGpuOptions) -> WebGpuReg {
        WebGpuReg {
            device: self.device.as_ref().map(|d| d.with_options(opts)),
            reason: self.reason.clone(),
        }
    }

    /// The device, if an adapter was found.
    pub fn device(&self) -> Option<Rc<WebGpuDevice>> {
        self.device.clone()
    }

    /// Whether its device was lost, destroyed or failed (later calls on it all fail).
    pub fn failed(&self) -> bool {
        self.device.as_ref().is_some_and(|d| d.ctx.check().is_err())
    }
}

impl BackendReg for WebGpuReg {
    fn name(&self) -> &str {
        DEVICE_NAME
    }
    fn devices(&self) -> Vec<Rc<dyn Device>> {
        self.device
            .iter()
            .map(|d| d.clone() as Rc<dyn Device>)
            .collect()
    }
    fn unavailable_reason(&self) -> Option<String> {
        self.reason.clone()
    }
}

/// One WebGPU adapter's device.
pub struct WebGpuDevice {
    ctx: Rc<Ctx>,
    buffer_type: Rc<WebGpuBufferType>,
    opts: WebGpuOptions,
}

impl WebGpuDevice {
    /// Whether `node` may be computed into its first operand's memory (same layout):
    /// element-wise ops and row-wise softmax/norms, whose invocations read before they write.
    /// (The device API's `supports_inplace`, where the trait has it.)
    pub fn computes_in_place(&self, graph: &Graph, node: TensorId) -> bool {
        matches!(ops::plan(&self.ctx, &self.opts, graph, node), Ok(Some(p)) if p.in_place_ok)
    }

    /// This device (its adapter, GPU device and buffers) planning with `opts`: a runtime made
    /// on it plans its sessions so, while others on the same GPU keep theirs.
    pub fn with_options(&self, opts: WebGpuOptions) -> Rc<WebGpuDevice> {
        Rc::new(WebGpuDevice {
            ctx: self.ctx.clone(),
            buffer_type: self.buffer_type.clone(),
            opts,
        })
    }

    /// How it plans ([`WebGpuDevice::with_options`]).
    pub fn options(&self) -> WebGpuOptions {
        self.opts
    }

    /// Pipelines, bind groups and buffers this device has created so far: a steady-state run
    /// of a prepared session adds none.
    pub fn created_objects(&self) -> ObjectCounts {
        self.ctx.created()
    }

    /// Its buffers: how many it made, and how many (and how many bytes) are still alive. A
    /// buffer is destroyed when it is dropped, so its memory is freed then, on the web too.
    pub fn live_buffers(&self) -> LiveBuffers {
        self.ctx.live_buffers()
    }

    /// Test hook (`testing` feature): the device is destroyed, as if lost, right after the
    /// `n`-th queue submit from now (a run's compute, a readback's copy...), so a test can
    /// lose it in the middle of a run.
    #[cfg(feature = "testing")]
    pub fn lose_after_submits(&self, n: u32) {
        self.ctx.lose_after_submits(n);
    }

    /// Releases the GPU device at once (like a lost device): every later call on it, its
    /// buffers and backends fails with `Error::Device` rather than panicking.
    pub fn destroy(&self) {
        self.ctx.destroy();
    }
}

impl Device for WebGpuDevice {
    fn name(&self) -> &str {
        DEVICE_NAME
    }
    fn description(&self) -> String {
        let info = &self.ctx.info;
        let name = if info.name.is_empty() {
            "unnamed adapter"
        } else {
            &info.name
        };
        format!(
            "WebGPU ({name}, {:?}, {:?})",
            info.backend, info.device_type
        )
    }
    fn kind(&self) -> DeviceKind {
        match self.ctx.info.device_type {
            wgpu::DeviceType::DiscreteGpu | wgpu::DeviceType::Other => DeviceKind::Gpu,
            wgpu::DeviceType::IntegratedGpu
            | wgpu::DeviceType::VirtualGpu
            | wgpu::DeviceType::Cpu => DeviceKind::IntegratedGpu,
        }
    }
    fn caps(&self) -> DeviceCaps {
        DeviceCaps {
            async_compute: true,
            host_buffer: false,
            buffer_from_host_ptr: false,
            events: true,
        }
    }
    fn properties(&self) -> Vec<(String, String)> {
        let info = &self.ctx.info;
        let l = &self.ctx.limits;
        vec![
            ("name".into(), info.name.clone()),
            ("vendor".into(), format!("{:#06x}", info.vendor)),
            ("device".into(), format!("{:#06x}", info.device)),
            (
                "driver".into(),
                format!("{} {}", info.driver, info.driver_info)
                    .trim()
                    .to_string(),
            ),
            ("backend".into(), format!("{:?}", info.backend)),
            ("device_type".into(), format!("{:?}", info.device_type)),
            (
                "maxStorageBufferBindingSize".into(),
                l.max_storage_buffer_binding_size.to_string(),
            ),
            ("maxBufferSize".into(), l.max_buffer_size.to_string()),
            (
                "minStorageBufferOffsetAlignment".into(),
                l.min_storage_buffer_offset_alignment.to_string(),
            ),
            (
                "maxComputeWorkgroupSizeX".into(),
                l.max_compute_workgroup_size_x.to_string(),
            ),
            (
                "maxComputeInvocationsPerWorkgroup".into(),
                l.max_compute_invocations_per_workgroup.to_string(),
            ),
            ("shader-f16".into(), self.ctx.has_f16.to_string()),
            ("subgroups".into(), self.ctx.has_subgroups.to_string()),
        ]
    }
    fn buffer_type(&self) -> Rc<dyn BufferType> {
        self.buffer_type.clone()
    }
    fn supports_op(&self, graph: &Graph, node: TensorId) -> Support {
        match ops::plan(&self.ctx, &self.opts, graph, node) {
            Ok(_) => Support::Yes,
            Err(crate::Error::Unsupported { reason, .. }) => Support::No(reason),
            Err(e) => Support::No(e.to_string()),
        }
    }
    fn offload_op(&self, graph: &Graph, node: TensorId) -> bool {
        let Ok(t) = graph.get(node) else {
            return false;
        };
        let heavy_weight = t.op == Op::MatMul
            && t.src
                .first()
                .and_then(|&w| graph.get(w).ok())
                .is_some_and(|w| w.role == Role::Weight && w.numel() >= OFFLOAD_MIN_ELEMENTS);
        heavy_weight && self.supports_op(graph, node).is_yes()
    }
    fn supports_inplace(&self, graph: &Graph, node: TensorId) -> bool {
        self.computes_in_place(graph, node)
    }
    fn backend_impl(self: Rc<Self>) -> Result<Box<dyn BackendImpl>> {
        self.ctx.check()?;
        Ok(Box::new(WebGpuBackend::new(self)))
    }
}
