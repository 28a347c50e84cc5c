//! Streams of work, split like buffers: callers hold the concrete [`Backend`] (ggml's
//! `ggml_backend`), devices implement [`BackendImpl`]. The wrapper owns the device and name,
//! the optional "prepare" step (ggml's `graph_plan_create` / `graph_plan_compute`) with its
//! default, and the per-op profiler, so every device gets them the same way.

use std::rc::Rc;

use super::profile::node_key;
use super::{Device, LocalBoxFuture, Profile, TensorMemory};
use crate::error::Result;
use crate::graph::{Graph, TensorId};

/// A marker in a backend's stream of work.
pub trait Event {
    /// Resolves once all work enqueued before the event completed.
    fn wait(&self) -> LocalBoxFuture<'_, Result<()>>;
}

/// Work prepared once by a device for one split (pipelines, bind groups, parameters): enqueued
/// again by each run without being built again.
pub trait PreparedImpl {
    /// Enqueues the prepared work.
    fn compute(&self) -> Result<()>;
    /// (optional) A short note on the prepared work for `explain()` (such as its dispatch
    /// count); default: none.
    fn describe(&self) -> Option<String> {
        None
    }
}

/// What a device implements for a stream of work on it.
pub trait BackendImpl {
    /// Enqueues `nodes` of `graph` (in order), reading and writing tensors where `mem` says.
    fn compute(&self, graph: &Graph, nodes: &[TensorId], mem: &TensorMemory) -> Result<()>;
    /// Resolves when all enqueued work has completed.
    fn synchronize(&self) -> LocalBoxFuture<'_, Result<()>>;
    /// (optional) An event after the work enqueued so far; default: none (callers
    /// `synchronize`).
    fn record_event(&self) -> Option<Rc<dyn Event>> {
        None
    }
    /// (optional) Prepares `nodes` of `graph` over the fixed memory `mem` once, to be enqueued
    /// by [`PreparedImpl::compute`] any number of times; default: `None`, nothing to prepare
    /// (each run computes directly).
    fn prepare(
        &self,
        _graph: &Graph,
        _nodes: &[TensorId],
        _mem: &TensorMemory,
    ) -> Result<Option<Box<dyn PreparedImpl>>> {
        Ok(None)
    }
    /// (optional) Enqueues `nodes` as `compute` does, completing each node before starting
    /// the next and adding each node's time to `profile` itself ([`node_key`] rows):
    /// then a profiled run computes a split as one call, as an unprofiled run does (the CPU:
    /// its threads stay a team across the split). Default: `None`, nothing done; the stream
    /// times node by node ([`Backend::compute_profiled`]).
    fn compute_profiled(
        &self,
        _graph: &Graph,
        _nodes: &[TensorId],
        _mem: &TensorMemory,
        _profile: &Profile,
    ) -> Option<Result<()>> {
        None
    }
}

/// A split as a backend prepared it: the device's prepared form, or (the default) just the
/// nodes, computed directly each run.
pub struct PreparedSplit {
    nodes: Vec<TensorId>,
    prepared: Option<Box<dyn PreparedImpl>>,
}

impl PreparedSplit {
    /// The backend's note on its prepared form, if it has one ([`PreparedImpl::describe`]).
    pub fn describe(&self) -> Option<String> {
        self.prepared.as_ref().and_then(|p| p.describe())
    }
}

impl dyn Device {
    /// A new stream on this device: [`Backend::new`].
    pub fn create_backend(self: Rc<Self>) -> Result<Rc<Backend>> {
        Backend::new(self)
    }
}

/// A stream of work on one device.
pub struct Backend {
    imp: Box<dyn BackendImpl>,
    device: Rc<dyn Device>,
}

impl Backend {
    /// A new stream on `device`.
    pub fn new(device: Rc<dyn Device>) -> Result<Rc<Self>> {
        let imp = device.clone().backend_impl()?;
        Ok(Rc::new(Self { imp, device }))
    }

    /// Name for messages (the device's).
    pub fn name(&self) -> &str {
        self.device.name()
    }

    /// The device it runs on.
    pub fn device(&self) -> Rc<dyn Device> {
        self.device.clone()
    }

    /// Enqueues `nodes` of `graph` (in order), reading and writing tensors where `mem` says.
    pub fn compute(&self, graph: &Graph, nodes: &[TensorId], mem: &TensorMemory) -> Result<()> {
        self.imp.compute(graph, nodes, mem)
    }

    /// Resolves when all enqueued work has completed.
    pub fn synchronize(&self) -> LocalBoxFuture<'_, Result<()>> {
        self.imp.synchronize()
    }

    /// An event after the work enqueued so far, when the device has events.
    pub fn record_event(&self) -> Option<Rc<dyn Event>> {
        self.imp.record_event()
    }

    /// Prepares `nodes` of `graph` over `mem` (which must not change while it is used).
    pub fn prepare(
        &self,
        graph: &Graph,
        nodes: &[TensorId],
        mem: &TensorMemory,
    ) -> Result<PreparedSplit> {
        Ok(PreparedSplit {
            nodes: nodes.to_vec(),
            prepared: self.imp.prepare(graph, nodes, mem)?,
        })
    }

    /// Enqueues a prepared split; `graph` and `mem` are the ones it was prepared with.
    pub fn compute_prepared(
        &self,
        split: &PreparedSplit,
        graph: &Graph,
        mem: &TensorMemory,
    ) -> Result<()> {
        match &split.prepared {
            Some(p) => p.compute(),
            None => self.compute(graph, &split.nodes, mem),
        }
    }

    /// Runs `nodes` one at a time, each waited for, adding each node's time to `profile`
    /// (GPU work included: the clock stops when the device says the node completed); or all
    /// at once where the backend times its nodes itself
    /// ([`BackendImpl::compute_profiled`]).
    pub async fn compute_profiled(
        &self,
        graph: &Graph,
        nodes: &[TensorId],
        mem: &TensorMemory,
        profile: &Profile,
    ) -> Result<()> {
        if let Some(done) = self.imp.compute_profiled(graph, nodes, mem, profile) {
            done?;
            return self.imp.synchronize().await;
        }
        for &id in nodes {
            let t = graph.get(id)?;
            if t.op.is_noop() {
                continue;
            }
            let t0 = crate::clock::now_ms();
            self.imp.compute(graph, &[id], mem)?;
            self.imp.synchronize().await?;
            let ms = crate::clock::now_ms() - t0;
            profile.record(|| node_key(self.name(), graph, t), ms);
        }
        Ok(())
    }
}
