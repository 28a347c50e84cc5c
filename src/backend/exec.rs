//! Where tensors live during a run, and the simplest runner: a whole graph on one backend.
//! (The scheduler, which splits graphs between backends, builds on the same pieces.)

use std::collections::HashMap;
use std::rc::Rc;

use super::{Backend, Buffer};
use crate::error::{Error, Result};
use crate::graph::{Graph, Role, TensorId};

/// The buffer and byte offset of each storage tensor (views resolve through their owner).
#[derive(Default, Clone)]
pub struct TensorMemory {
    places: HashMap<TensorId, (Rc<Buffer>, usize)>,
}

impl TensorMemory {
    /// No tensor placed yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Places storage tensor `id` at `offset` of `buffer`, checking that it fits.
    pub fn place(
        &mut self,
        graph: &Graph,
        id: TensorId,
        buffer: Rc<Buffer>,
        offset: usize,
    ) -> Result<()> {
        let t = graph.get(id)?;
        if t.is_view() {
            return Err(Error::Graph(format!(
                "{} is a view; place its owner",
                t.name
            )));
        }
        super::check_range(
            &format!("tensor {}", t.name),
            offset,
            t.nbytes(),
            buffer.size(),
        )?;
        self.places.insert(id, (buffer, offset));
        Ok(())
    }

    /// The buffer holding `id` (or its owner, for views) and `id`'s byte offset in it,
    /// checked to hold all of `id`'s bytes.
    pub fn locate(&self, graph: &Graph, id: TensorId) -> Result<(&Rc<Buffer>, usize)> {
        let (root, view_off) = graph.storage_of(id);
        let t = graph.get(id)?;
        let (buf, off) = self
            .places
            .get(&root)
            .ok_or_else(|| Error::Graph(format!("tensor {} has no memory assigned", t.name)))?;
        let off = off + view_off;
        if off
            .checked_add(t.nbytes())
            .is_none_or(|end| end > buf.size())
        {
            // Formatted only on failure: this runs for every operand of every node.
            super::check_range(&format!("tensor {}", t.name), off, t.nbytes(), buf.size())?;
        }
        Ok((buf, off))
    }
}

/// Runs all of `graph` on `backend`: one buffer for every storage tensor, `leaves` written
/// (inputs and weights, by id, raw bytes), then the outputs read back in `graph.outputs()`
/// order. `guard` bytes of `0xA5` separate tensors; a kernel that overruns into them makes the
/// run fail.
pub async fn run_graph(
    backend: &Backend,
    graph: &Graph,
    leaves: &HashMap<TensorId, Vec<u8>>,
    guard: usize,
) -> Result<Vec<Vec<u8>>> {
    run_graph_aliased(backend, graph, leaves, guard, &[]).await
}

/// [`run_graph`] where each `(node, operand)` of `aliases` shares the operand's memory, as a
/// memory planner computing the node in place would arrange (the caller checks the layouts
/// match).
pub async fn run_graph_aliased(
    backend: &Backend,
    graph: &Graph,
    leaves: &HashMap<TensorId, Vec<u8>>,
    guard: usize,
    aliases: &[(TensorId, TensorId)],
) -> Result<Vec<Vec<u8>>> {
    const GUARD_BYTE: u8 = 0xA5;
    let bt = backend.device().buffer_type();
    let align = bt.alignment().max(1);
    let round = |x: usize| x.div_ceil(align) * align;
    let mut offsets = Vec::new();
    let mut end = round(guard);
    let aliased = |id: TensorId| aliases.iter().any(|&(node, _)| node == id);
    for (id, t) in graph.iter().filter(|&(id, t)| !t.is_view() && !aliased(id)) {
        offsets.push((id, end, t.nbytes()));
        end = round(end + bt.alloc_size(t) + guard);
    }
    let buffer = bt.alloc(end)?;
    buffer.clear(GUARD_BYTE)?;
    let mut mem = TensorMemory::new();
    for &(id, off, _) in &offsets {
        mem.place(graph, id, buffer.clone(), off)?;
        for &(node, _) in aliases.iter().filter(|&&(_, operand)| operand == id) {
            mem.place(graph, node, buffer.clone(), off)?;
        }
    }
    for (id, t) in graph.iter().filter(|(_, t)| t.op.is_noop() && !t.is_view()) {
        let data = leaves.get(&id).ok_or_else(|| {
            Error::Graph(format!(
                "no value given for {} {}",
                role_name(t.role),
                t.name
            ))
        })?;
        if data.len() != t.nbytes() {
            return Err(Error::InvalidArgument(format!(
                "{} needs {} bytes, got {}",
                t.name,
                t.nbytes(),
                data.len()
            )));
        }
        buffer.write(mem.locate(graph, id)?.1, data)?;
    }
    // Through the backend's prepared form, as sessions run it (the op suite checks that path).
    let prepared = backend.prepare(graph, &graph.compute_nodes(), &mem)?;
    backend.compute_prepared(&prepared, graph, &mem)?;
    backend.synchronize().await?;
    if guard > 0 {
        let all = buffer.read(0, buffer.size()).await?;
        let mut prev_end = 0;
        for &(id, off, n) in &offsets {
            if all[prev_end..off].iter().any(|&b| b != GUARD_BYTE) {
                return Err(Error::OutOfBounds(format!(
                    "guard bytes before {} were overwritten",
                    graph.tensor(id).name
                )));
            }
            prev_end = off + n;
        }
        if all[prev_end..].iter().any(|&b| b != GUARD_BYTE) {
            return Err(Error::OutOfBounds(
                "guard bytes after the last tensor were overwritten".into(),
            ));
        }
    }
    let mut out = Vec::new();
    for id in graph.outputs() {
        let t = graph.tensor(id);
        if !t.is_contiguous() {
            return Err(Error::InvalidArgument(format!(
                "output {} is not contiguous",
                t.name
            )));
        }
        let (buf, off) = mem.locate(graph, id)?;
        out.push(buf.read(off, t.nbytes()).await?);
    }
    Ok(out)
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Input => "input",
        Role::Weight => "weight",
        Role::Compute => "tensor",
        Role::State => "state",
    }
}
