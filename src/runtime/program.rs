//! A graph with its weight values: what a runtime runs.

use std::cell::Cell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::backend::StoredWeight;
use crate::error::{Error, Result};
use crate::graph::{row_from_f32, DType, Graph, TensorId};

/// A graph with its weight values (owned bytes, or weights stored on the runtime's devices):
/// what a runtime runs.
#[derive(Clone, Debug)]
pub struct Program {
    pub(super) graph: Graph,
    pub(super) weights: HashMap<TensorId, Vec<u8>>,
    pub(super) stored: HashMap<TensorId, StoredWeight>,
    pub(super) states: HashMap<TensorId, super::State>,
    pub(super) version: u64,
    /// (version, graph fingerprint, digest of the owned weight bytes), computed once per
    /// version: what the runtime's session cache keys on.
    shape_key: Cell<Option<(u64, u64, u64)>>,
}

impl Default for Program {
    fn default() -> Self {
        Self::new()
    }
}

impl Program {
    /// An empty program.
    pub fn new() -> Self {
        Self {
            graph: Graph::new(),
            weights: HashMap::new(),
            stored: HashMap::new(),
            states: HashMap::new(),
            version: 0,
            shape_key: Cell::new(None),
        }
    }

    /// The graph's fingerprint and a digest of the owned weights' bytes: programs built the
    /// same way from the same values share them (and so a session).
    pub(super) fn shape_key(&self) -> (u64, u64) {
        if let Some((v, g, w)) = self.shape_key.get() {
            if v == self.version {
                return (g, w);
            }
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        // In graph order (no sort: ids ascend).
        for (id, _) in self.graph.iter() {
            if let Some(bytes) = self.weights.get(&id) {
                id.hash(&mut h);
                bytes.hash(&mut h);
            }
        }
        let key = (self.graph.fingerprint(), h.finish());
        self.shape_key.set(Some((self.version, key.0, key.1)));
        key
    }

    /// The graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The graph, to add nodes (plans made before are dropped on the next run).
    pub fn graph_mut(&mut self) -> &mut Graph {
        self.version += 1;
        &mut self.graph
    }

    /// Adds a weight with its value: raw bytes of `dtype`.
    pub fn weight_bytes(
        &mut self,
        name: &str,
        dtype: DType,
        ne: &[usize],
        bytes: Vec<u8>,
    ) -> Result<TensorId> {
        let id = self.graph_mut().weight(name, dtype, ne)?;
        let want = self.graph.tensor(id).nbytes();
        if bytes.len() != want {
            return Err(Error::InvalidArgument(format!(
                "weight {name} needs {want} bytes, got {}",
                bytes.len()
            )));
        }
        self.weights.insert(id, bytes);
        Ok(id)
    }

    /// Adds a weight whose value is stored on a device ([`Runtime::store_weights`]); runs of
    /// this program read it there (ops on it run on that device unless another offloads them).
    pub fn weight_stored(&mut self, name: &str, w: &StoredWeight) -> Result<TensorId> {
        let id = self.graph_mut().weight(name, w.dtype(), w.ne())?;
        self.stored.insert(id, w.clone());
        Ok(id)
    }

    /// Adds state `s` ([`super::Runtime::create_state`]) as a leaf named after it: runs read
    /// it on its device, and `set_rows` on it writes its rows in place.
    pub fn state(&mut self, s: &super::State) -> Result<TensorId> {
        let ne = s.shape();
        let id = self.graph_mut().state(s.name(), s.dtype(), &ne)?;
        self.states.insert(id, s.clone());
        Ok(id)
    }

    /// Binds state `s` to the graph's state leaf named `name` (declared with
    /// [`crate::graph::Graph::state`]), checked to be of the leaf's dtype and shape.
    pub fn bind_state(&mut self, name: &str, s: &super::State) -> Result<()> {
        let id = self
            .graph
            .iter()
            .find(|(_, t)| t.role == crate::graph::Role::State && t.name == name)
            .map(|(id, _)| id)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("the graph has no state named {name:?}"))
            })?;
        let t = self.graph.tensor(id);
        if t.dtype != s.dtype() || t.ne != s.shape() {
            return Err(Error::InvalidArgument(format!(
                "state {name} is {} {:?}, but the State given is {} {:?}",
                t.dtype.name(),
                t.ne,
                s.dtype().name(),
                s.shape()
            )));
        }
        self.states.insert(id, s.clone());
        Ok(())
    }

    /// Adds a weight from f32 values, converted (or quantized) to `dtype`.
    pub fn weight_f32(
        &mut self,
        name: &str,
        dtype: DType,
        ne: &[usize],
        values: &[f32],
    ) -> Result<TensorId> {
        if dtype == DType::I32 {
            return Err(Error::InvalidArgument(format!(
                "weight {name}: give i32 weights as integers"
            )));
        }
        let numel = ne
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| Error::InvalidArgument(format!("weight {name}: {ne:?} is too large")))?;
        if values.len() != numel {
            return Err(Error::InvalidArgument(format!(
                "weight {name} needs {numel} values, got {}",
                values.len()
            )));
        }
        let row = *ne.first().unwrap_or(&1);
        let rb = dtype.row_bytes(row)?;
        let mut bytes = vec![0u8; numel / row.max(1) * rb];
        if row > 0 {
            for (src, dst) in values.chunks_exact(row).zip(bytes.chunks_exact_mut(rb)) {
                row_from_f32(dtype, src, dst)?;
            }
        }
        self.weight_bytes(name, dtype, ne, bytes)
    }
}
