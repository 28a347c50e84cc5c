//! Tensor graphs: dtypes, tensors with byte strides and views, ops, and shape inference.
//!
//! This layer knows nothing about devices. A [`Graph`] is built node by node; every builder
//! call checks shapes and dtypes and returns an [`crate::Error`] rather than panicking, and
//! because operands must exist before a node is added, insertion order is a topological order.

mod build;
mod dtype;
mod op;
mod tensor;

pub use dtype::{
    can_quantize, first_non_finite_scale, k_quant_fallback, q5_0_values, row_from_f32, row_to_f32,
    set_q5_0_values, use_more_bits, DType, DTypeInfo, Format, IQ4_NL_VALUES, QK, QK_K,
};
pub use op::{erf, BinaryOp, Op, OpKind, RopeMode, RopeParams, UnaryOp, ACT_NONE};
pub use tensor::{contiguous_strides, Role, Tensor, TensorId, MAX_DIMS};

use crate::error::{Error, Result};

/// A computation graph: tensors in topological (insertion) order.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    tensors: Vec<Tensor>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of tensors (leaves, views and computed nodes).
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether the graph holds no tensor.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// A hash of everything a plan depends on: every tensor's name, dtype, shape, strides, op
    /// and its parameters, operands, view, role and output mark. Graphs built the same way
    /// have the same fingerprint, so a runtime can reuse one graph's plan for the other.
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.tensors.len().hash(&mut h);
        for t in &self.tensors {
            t.name.hash(&mut h);
            t.dtype.hash(&mut h);
            t.ne.hash(&mut h);
            t.nb.hash(&mut h);
            t.op.hash_into(&mut h);
            t.src.hash(&mut h);
            t.view_of.hash(&mut h);
            t.view_offset.hash(&mut h);
            (t.role as u8).hash(&mut h);
            t.is_output.hash(&mut h);
        }
        h.finish()
    }

    /// The tensor with this id, or an error naming it.
    pub fn get(&self, id: TensorId) -> Result<&Tensor> {
        self.tensors
            .get(id.0)
            .ok_or_else(|| Error::Graph(format!("unknown tensor id {}", id.0)))
    }

    /// The tensor with this id. Ids come from this graph's builders, so this indexes directly;
    /// use [`Graph::get`] for ids from outside.
    pub fn tensor(&self, id: TensorId) -> &Tensor {
        &self.tensors[id.0]
    }

    /// All tensors with their ids, in topological order.
    pub fn iter(&self) -> impl Iterator<Item = (TensorId, &Tensor)> {
        self.tensors
            .iter()
            .enumerate()
            .map(|(i, t)| (TensorId(i), t))
    }

    /// Ids of the nodes that compute something, in order.
    pub fn compute_nodes(&self) -> Vec<TensorId> {
        self.iter()
            .filter(|(_, t)| !t.op.is_noop())
            .map(|(id, _)| id)
            .collect()
    }

    /// The tensor owning `id`'s memory (itself unless it is a view) and the byte offset into it.
    pub fn storage_of(&self, id: TensorId) -> (TensorId, usize) {
        let t = self.tensor(id);
        match t.view_of {
            Some(root) => (root, t.view_offset),
            None => (id, 0),
        }
    }

    /// The state whose memory `id` is (through views): the state leaf itself, or a `set_rows`
    /// on the state (or on an earlier such `set_rows`), which writes the state in place.
    pub fn state_of(&self, id: TensorId) -> Option<TensorId> {
        let (mut root, _) = self.storage_of(id);
        loop {
            let t = self.tensor(root);
            match (t.role, t.op) {
                (Role::State, _) => return Some(root),
                (Role::Compute, Op::SetRows) => {
                    let a = *t.src.first()?;
                    if self.tensor(a).is_view() {
                        return None;
                    }
                    root = a;
                }
                _ => return None,
            }
        }
    }

    /// Ids of the state leaves.
    pub fn states(&self) -> Vec<TensorId> {
        self.iter()
            .filter(|(_, t)| t.role == Role::State)
            .map(|(id, _)| id)
            .collect()
    }

    /// Checks that every reader of a state reads its latest version: once a `set_rows` wrote
    /// it, later nodes read that result, never the state as it was before (the write is in
    /// place, so the older value is gone).
    pub fn check_states(&self) -> Result<()> {
        let mut latest: std::collections::HashMap<TensorId, TensorId> = Default::default();
        for (id, t) in self.iter() {
            if t.op.is_noop() {
                continue;
            }
            for &s in &t.src {
                let (root, _) = self.storage_of(s);
                if let Some(st) = self.state_of(root) {
                    let cur = *latest.get(&st).unwrap_or(&st);
                    if cur != root {
                        return Err(Error::Graph(format!(
                            "{} reads state {} as it was before {} wrote it in place; read {}'s                              result instead",
                            t.name,
                            self.tensor(st).name,
                            self.tensor(cur).name,
                            self.tensor(cur).name
                        )));
                    }
                }
            }
            if let Some(st) = self.state_of(id) {
                latest.insert(st, id);
            }
        }
        Ok(())
    }

    /// Marks a tensor as an output: its value is kept and may be read after a run.
    pub fn set_output(&mut self, id: TensorId) -> Result<()> {
        self.get(id)?;
        self.tensors[id.0].is_output = true;
        Ok(())
    }

    /// Ids of the output tensors.
    pub fn outputs(&self) -> Vec<TensorId> {
        self.iter()
            .filter(|(_, t)| t.is_output)
            .map(|(id, _)| id)
            .collect()
    }

    /// Ids of the input tensors.
    pub fn inputs(&self) -> Vec<TensorId> {
        self.iter()
            .filter(|(_, t)| t.role == Role::Input)
            .map(|(id, _)| id)
            .collect()
    }

    /// Renames a tensor (for `explain()` and messages).
    pub fn set_name(&mut self, id: TensorId, name: &str) -> Result<()> {
        self.get(id)?;
        self.tensors[id.0].name = name.to_string();
        Ok(())
    }

    fn push(&mut self, t: Tensor) -> TensorId {
        self.tensors.push(t);
        TensorId(self.tensors.len() - 1)
    }
}
