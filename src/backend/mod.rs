//! The device API, after ggml-backend: registry → device → buffer type → buffer → backend,
//! with events and async reads. Generic: no concrete device lives here.
//!
//! Enqueueing work is synchronous; completion (reads, `synchronize`, events) is a future,
//! which mirrors WebGPU, where nothing may block on wasm.

mod buffer;
mod exec;
pub mod fuse;
pub mod profile;
mod registry;
mod restrict;
pub mod sched;
mod stream;
pub mod weights;

pub use buffer::{check_range, Buffer, BufferImpl, BufferType, BufferUsage};
pub use exec::{run_graph, run_graph_aliased, TensorMemory};
pub use profile::Profile;
pub use registry::{BackendReg, Registry};
pub use restrict::RestrictedDevice;
pub use sched::{CopyStats, Plan, PlanOptions, RunInput, RunOutput, Scheduler, Session};
pub use stream::{Backend, BackendImpl, Event, PreparedImpl, PreparedSplit};
pub use weights::{matrix_only, store_weights, ByteSource, StoredWeight, WeightSpec};

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use crate::error::Result;
use crate::graph::{Graph, TensorId};

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
    /// The implementation of a new stream on this device (callers use [`Backend::new`]).
    fn backend_impl(self: Rc<Self>) -> Result<Box<dyn BackendImpl>>;
}
