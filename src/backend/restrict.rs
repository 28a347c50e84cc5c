//! A device with some ops turned off: for debugging placement ("what if the GPU lacked X?")
//! and for the scheduler's tests, which need mixed-device graphs on any machine.

use std::rc::Rc;

use super::{BackendImpl, BufferType, Device, DeviceCaps, DeviceKind, DeviceMemory, Support};
use crate::error::Result;
use crate::graph::{Graph, OpKind, TensorId};

/// `inner` under another name, refusing the ops in `denied`.
pub struct RestrictedDevice {
    inner: Rc<dyn Device>,
    name: String,
    kind: DeviceKind,
    denied: Vec<OpKind>,
    memory: Option<DeviceMemory>,
}

impl RestrictedDevice {
    /// Wraps `inner`, calling it `name` and presenting it as `kind`.
    pub fn new(inner: Rc<dyn Device>, name: &str, kind: DeviceKind, denied: Vec<OpKind>) -> Self {
        Self {
            inner,
            name: name.to_string(),
            kind,
            denied,
            memory: None,
        }
    }

    /// Reports `memory` instead of `inner`'s ("what if the device had less memory?").
    pub fn with_memory(mut self, memory: DeviceMemory) -> Self {
        self.memory = Some(memory);
        self
    }
}

impl Device for RestrictedDevice {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> String {
        format!("{} without {:?}", self.inner.description(), self.denied)
    }
    fn kind(&self) -> DeviceKind {
        self.kind
    }
    fn memory(&self) -> DeviceMemory {
        self.memory.unwrap_or_else(|| self.inner.memory())
    }
    fn caps(&self) -> DeviceCaps {
        self.inner.caps()
    }
    fn buffer_type(&self) -> Rc<dyn BufferType> {
        self.inner.buffer_type()
    }
    fn supports_op(&self, graph: &Graph, node: TensorId) -> Support {
        match graph.get(node) {
            Ok(t) if self.denied.contains(&t.op.kind()) => {
                Support::No(format!("{:?} is turned off", t.op.kind()))
            }
            Ok(_) => self.inner.supports_op(graph, node),
            Err(e) => Support::No(e.to_string()),
        }
    }
    fn offload_op(&self, graph: &Graph, node: TensorId) -> bool {
        self.inner.offload_op(graph, node)
    }
    fn supports_inplace(&self, graph: &Graph, node: TensorId) -> bool {
        self.inner.supports_inplace(graph, node)
    }
    fn backend_impl(self: Rc<Self>) -> Result<Box<dyn BackendImpl>> {
        self.inner.clone().backend_impl()
    }
}
