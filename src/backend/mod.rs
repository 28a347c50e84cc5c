//! The device API, after ggml-backend: registry → device → buffer type → buffer → backend,
//! with events and async reads. Generic: no concrete device lives here.
//!
//! Enqueueing work is synchronous; completion (reads, `synchronize`, events) is a future,
//! which mirrors WebGPU, where nothing may block on wasm.

mod exec;
mod registry;
mod restrict;
pub mod sched;

pub use exec::{run_graph, run_graph_aliased, TensorMemory};
pub use registry::{BackendReg, Registry};
pub use restrict::RestrictedDevice;
pub use sched::{Plan, PlanOptions, Scheduler, Session};

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use crate::error::{Error, Result};
use crate::graph::{Graph, Tensor, TensorId};

/// A boxed, non-`Send` future (wasm and wgpu-on-web objects are single-threaded).
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// What kind of processor a device is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// The host CPU.
    Cpu,
    /// A discrete GPU (or one whose kind is unknown).
    Gpu,
    /// A GPU sharing memory with the CPU (including software adapters).
    IntegratedGpu,
}

/// What a buffer holds; the scheduler keeps ops on weights where the weights live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferUsage {
    /// Unspecified.
    Any,
    /// Model parameters, written once.
    Weights,
    /// Intermediate results, reused by the memory planner.
    Compute,
}

/// Memory of a device in bytes (0 when unknown).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceMemory {
    /// Bytes still free.
    pub free: usize,
    /// Bytes in all.
    pub total: usize,
}

/// Optional abilities of a device (ggml's `ggml_backend_dev_caps`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceCaps {
    /// Compute completes asynchronously (`synchronize` must be awaited).
    pub async_compute: bool,
    /// Its buffers are addressable host memory.
    pub host_buffer: bool,
    /// It can wrap caller memory as a buffer without copying.
    pub buffer_from_host_ptr: bool,
    /// It supports events.
    pub events: bool,
}

/// Whether a device can run a node, and if not, why (for the scheduler and `explain()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    /// It can.
    Yes,
    /// It cannot, for this reason.
    No(String),
}

impl Support {
    /// Whether this is `Yes`.
    pub fn is_yes(&self) -> bool {
        matches!(self, Support::Yes)
    }
}

/// A device: one processor that tensors can live on and ops can run on.
pub trait Device {
    /// Short unique name ("CPU", "WebGPU").
    fn name(&self) -> &str;
    /// Human description (the adapter, the SIMD level, ...).
    fn description(&self) -> String;
    /// Processor kind.
    fn kind(&self) -> DeviceKind;
    /// Memory; default: unknown (zeros).
    fn memory(&self) -> DeviceMemory {
        DeviceMemory::default()
    }
    /// Optional abilities.
    fn caps(&self) -> DeviceCaps;
    /// Extra facts for listings (adapter info, limits); default: none.
    fn properties(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// The buffer type tensors on this device are allocated from.
    fn buffer_type(&self) -> Rc<dyn BufferType>;
    /// Whether this device can compute `node` of `graph` (dtypes, shapes, limits).
    fn supports_op(&self, graph: &Graph, node: TensorId) -> Support;
    /// Whether this device can read tensors in buffers of `bt`; default: only its own type.
    fn supports_buffer_type(&self, bt: &dyn BufferType) -> bool {
        bt.name() == self.buffer_type().name()
    }
    /// Whether an op whose weights live on the host is worth moving here; default: never.
    fn offload_op(&self, _graph: &Graph, _node: TensorId) -> bool {
        false
    }
    /// Whether `node` may be computed into its first operand's memory (element-wise ops whose
    /// kernels read each element before writing it); default: no.
    fn supports_inplace(&self, _graph: &Graph, _node: TensorId) -> bool {
        false
    }
    /// A new stream on this device.
    fn create_backend(self: Rc<Self>) -> Result<Rc<dyn Backend>>;
}

/// How a device allocates memory.
pub trait BufferType {
    /// Unique name (devices compare buffer types by it).
    fn name(&self) -> &str;
    /// Byte alignment of tensor offsets inside a buffer.
    fn alignment(&self) -> usize;
    /// Largest single allocation in bytes.
    fn max_size(&self) -> usize;
    /// Bytes a tensor needs in a buffer of this type; default: its `nbytes`.
    fn alloc_size(&self, t: &Tensor) -> usize {
        t.nbytes()
    }
    /// Whether buffers are host memory; default: no.
    fn is_host(&self) -> bool {
        false
    }
    /// Allocates `size` bytes (0 is valid); fails above `max_size`.
    fn alloc(&self, size: usize) -> Result<Rc<dyn Buffer>>;
}

/// A block of device memory. Every access is bounds-checked.
pub trait Buffer {
    /// Size in bytes.
    fn size(&self) -> usize;
    /// Name of the buffer type that made it.
    fn type_name(&self) -> &str;
    /// What it holds.
    fn usage(&self) -> BufferUsage;
    /// Declares what it holds.
    fn set_usage(&self, usage: BufferUsage);
    /// Writes `data` at `offset` (enqueued in order with later compute on GPUs).
    fn write(&self, offset: usize, data: &[u8]) -> Result<()>;
    /// Reads `len` bytes at `offset`, after all enqueued work that writes them.
    fn read(&self, offset: usize, len: usize) -> LocalBoxFuture<'_, Result<Vec<u8>>>;
    /// Sets `len` bytes at `offset` to `value`.
    fn memset(&self, offset: usize, len: usize, value: u8) -> Result<()>;
    /// Sets the whole buffer to `value`; default: `memset` over it.
    fn clear(&self, value: u8) -> Result<()> {
        self.memset(0, self.size(), value)
    }
    /// Copies from another buffer directly when both sides allow it; default: `Ok(false)`,
    /// meaning the caller must go through the host.
    fn copy_from(
        &self,
        _src: &dyn Buffer,
        _src_off: usize,
        _dst_off: usize,
        _len: usize,
    ) -> Result<bool> {
        Ok(false)
    }
    /// For the owning backend to reach its concrete type.
    fn as_any(&self) -> &dyn Any;
}

/// A marker in a backend's stream of work.
pub trait Event {
    /// Resolves once all work enqueued before the event completed.
    fn wait(&self) -> LocalBoxFuture<'_, Result<()>>;
}

/// A stream of work on one device (ggml's `ggml_backend`).
pub trait Backend {
    /// Name for messages.
    fn name(&self) -> &str;
    /// The device it runs on.
    fn device(&self) -> Rc<dyn Device>;
    /// Enqueues `nodes` of `graph` (in order), reading and writing tensors where `mem` says.
    fn compute(&self, graph: &Graph, nodes: &[TensorId], mem: &TensorMemory) -> Result<()>;
    /// Resolves when all enqueued work has completed.
    fn synchronize(&self) -> LocalBoxFuture<'_, Result<()>>;
    /// An event after the work enqueued so far; default: none (callers `synchronize`).
    fn record_event(&self) -> Option<Rc<dyn Event>> {
        None
    }
}

/// Checks that `[offset, offset + len)` lies in a buffer of `size` bytes.
pub fn check_range(what: &str, offset: usize, len: usize, size: usize) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(Error::OutOfBounds(format!(
            "{what} of {len} bytes at offset {offset} in a buffer of {size} bytes"
        ))),
    }
}
