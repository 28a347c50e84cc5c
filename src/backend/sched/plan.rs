//! From a placement to a plan: splits with their input copies, and memory per device.

use std::collections::HashMap;

use super::arena::Arena;
use super::place::{Placement, Why};
use crate::backend::Device;
use crate::error::Result;
use crate::graph::{Graph, Role, TensorId};
use std::rc::Rc;

/// A maximal run of consecutive nodes on one device.
#[derive(Clone, Debug)]
pub struct Split {
    /// Index of the device (in the scheduler's priority order).
    pub device: usize,
    /// The nodes, in order.
    pub nodes: Vec<TensorId>,
    /// Tensors copied in from other devices before it runs (each once per device).
    pub inputs: Vec<SplitInput>,
}

/// A tensor a split needs from another device.
#[derive(Clone, Debug)]
pub struct SplitInput {
    /// The tensor owning the memory (views are copied through their owner).
    pub tensor: TensorId,
    /// The device it is copied from.
    pub from: usize,
    /// Bytes copied.
    pub bytes: usize,
}

/// A resident weight copied once to a device other than its home.
#[derive(Clone, Debug)]
pub struct WeightCopyPlan {
    /// The weight.
    pub tensor: TensorId,
    /// Its home device.
    pub from: usize,
    /// The device reading it.
    pub to: usize,
    /// Bytes copied (once).
    pub bytes: usize,
}

/// Memory planned for one device.
#[derive(Clone, Debug, Default)]
pub struct DeviceMemoryPlan {
    /// Bytes of the compute arena (intermediates, copies, inputs) after reuse.
    pub compute_bytes: usize,
    /// Bytes all those tensors would take without reuse.
    pub unshared_bytes: usize,
    /// Bytes of weights stored on the device.
    pub weight_bytes: usize,
    /// Nodes computed in place (in their input's memory).
    pub in_place: usize,
}

/// Where a tensor's memory is on one device: an offset in its compute or weights arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    Compute(usize),
    Weights(usize),
}

/// A value per (device, tensor id), stored densely (plans are built for 10,000-node graphs).
#[derive(Clone, Debug)]
pub(crate) struct PerDevice<T> {
    n: usize,
    v: Vec<T>,
}

impl<T: Clone> PerDevice<T> {
    fn new(devices: usize, tensors: usize, init: T) -> Self {
        Self {
            n: tensors,
            v: vec![init; devices * tensors],
        }
    }
    pub fn get(&self, d: usize, id: TensorId) -> &T {
        &self.v[d * self.n + id.0]
    }
    fn get_mut(&mut self, d: usize, id: TensorId) -> &mut T {
        &mut self.v[d * self.n + id.0]
    }
    /// Every (device, tensor, value).
    pub fn iter(&self) -> impl Iterator<Item = (usize, TensorId, &T)> {
        self.v
            .iter()
            .enumerate()
            .map(move |(i, x)| (i / self.n.max(1), TensorId(i % self.n.max(1)), x))
    }
}

/// Everything needed to run a graph on several devices.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Device names, in priority order.
    pub devices: Vec<String>,
    /// Each device's description (what it is: for the CPU its kernels and threads).
    pub descriptions: Vec<String>,
    /// Device per tensor id (compute nodes only).
    pub device_of: Vec<Option<usize>>,
    /// Why each compute node runs where it runs.
    pub why: Vec<Option<Why>>,
    /// The splits, in execution order.
    pub splits: Vec<Split>,
    /// Memory per device.
    pub memory: Vec<DeviceMemoryPlan>,
    /// Device holding each input and compute root's value (weights: see `weight_devices`).
    pub(crate) home: Vec<Option<usize>>,
    /// Devices storing each weight (by tensor id; empty for other tensors and unused weights).
    /// A resident weight's home comes first.
    pub(crate) weight_devices: Vec<Vec<usize>>,
    /// Resident weights read on a device other than their home: copied there once, before the
    /// first run, and kept outside the plan's memory (never copied per run).
    pub weight_copies: Vec<WeightCopyPlan>,
    /// Memory location of each (device, storage tensor).
    pub(crate) location: PerDevice<Option<Slot>>,
    /// The cost model's estimate that decided the placement (`None`: cost model off).
    pub cost: Option<super::cost::PlanCost>,
    /// Each state leaf and its device, in graph order: kept outside the plan's memory (the
    /// session binds it), with the `set_rows` nodes writing it in place.
    pub states: Vec<(TensorId, usize)>,
}

/// Builds splits and plans memory. `resident` weights live outside the plan, on their home
/// device and, copied once, on every other device that reads them (the session binds that
/// memory); other weights are stored in the plan's weight arena of every device reading them.
pub(crate) fn build(
    graph: &Graph,
    devices: &[Rc<dyn Device>],
    placement: Placement,
    resident: &HashMap<TensorId, usize>,
    states: &HashMap<TensorId, usize>,
) -> Result<Plan> {
    let nodes = graph.compute_nodes();
    let device_of = placement.device;
    let dev = |id: TensorId| device_of[id.0].unwrap_or(devices.len() - 1);
    let last_dev = devices.len() - 1;

    // Where each storage tensor's value lives; inputs go to their first consumer's device.
    let mut home: Vec<Option<usize>> = vec![None; graph.len()];
    let n = graph.len();
    let ndev = devices.len();
    let mut weight_devices: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (&w, &home) in resident {
        if w.0 < n {
            weight_devices[w.0].push(home);
        }
    }
    for &id in &nodes {
        home[id.0] = Some(dev(id));
        for &s in &graph.tensor(id).src {
            let (root, _) = graph.storage_of(s);
            match graph.tensor(root).role {
                Role::Input if home[root.0].is_none() => home[root.0] = Some(dev(id)),
                Role::Weight => {
                    let devs = &mut weight_devices[root.0];
                    if !devs.contains(&dev(id)) {
                        devs.push(dev(id));
                    }
                }
                _ => {}
            }
        }
    }
    // (A view of an input has the input's role, and no memory of its own.)
    for (id, t) in graph.iter() {
        if t.role == Role::Input && !t.is_view() && home[id.0].is_none() {
            home[id.0] = Some(last_dev);
        }
    }
    // States live on their device; nodes writing them share their memory.
    let mut state_list: Vec<(TensorId, usize)> = states.iter().map(|(&s, &d)| (s, d)).collect();
    crate::sort::by_key(&mut state_list, |s| {
        crate::sort::key2(s.0 .0 as u64, s.1 as u64)
    });
    for &(s, d) in &state_list {
        if s.0 < n {
            home[s.0] = Some(d);
        }
    }
    let in_state = |id: TensorId| graph.state_of(id).is_some();

    // Splits and their input copies (once per device and tensor).
    let mut splits: Vec<Split> = Vec::new();
    let mut copied = PerDevice::new(ndev, n, false);
    for &id in &nodes {
        let d = dev(id);
        if splits.last().is_none_or(|s| s.device != d) {
            splits.push(Split {
                device: d,
                nodes: Vec::new(),
                inputs: Vec::new(),
            });
        }
        let split = splits.last_mut().expect("a split was just pushed");
        split.nodes.push(id);
        for &s in &graph.tensor(id).src {
            let (root, _) = graph.storage_of(s);
            let from = match graph.tensor(root).role {
                Role::Weight => {
                    let devs = &weight_devices[root.0];
                    if devs.contains(&d) {
                        continue;
                    }
                    devs[0]
                }
                _ => home[root.0].unwrap_or(last_dev),
            };
            if from != d && !std::mem::replace(copied.get_mut(d, root), true) {
                split.inputs.push(SplitInput {
                    tensor: root,
                    from,
                    bytes: graph.tensor(root).nbytes(),
                });
            }
        }
    }

    // Positions and last uses per (device, storage tensor).
    let mut pos = vec![usize::MAX; n];
    for (i, &id) in nodes.iter().enumerate() {
        pos[id.0] = i;
    }
    let end = usize::MAX;
    let mut last_use: PerDevice<Option<usize>> = PerDevice::new(ndev, n, None);
    let mut bump = |d: usize, id: TensorId, p: usize| {
        let e = last_use.get_mut(d, id);
        *e = Some(e.map_or(p, |x| x.max(p)));
    };
    for &id in &nodes {
        // A node nobody reads is freed right after it runs.
        bump(dev(id), id, pos[id.0]);
        for &s in &graph.tensor(id).src {
            let (root, _) = graph.storage_of(s);
            bump(dev(id), root, pos[id.0]);
        }
    }
    for split in &splits {
        let p = pos[split.nodes[0].0];
        for inp in &split.inputs {
            bump(inp.from, inp.tensor, p);
        }
    }
    for id in graph.outputs() {
        let (root, _) = graph.storage_of(id);
        if let Some(h) = home[root.0] {
            *last_use.get_mut(h, root) = Some(end);
        }
    }

    // Allocation in execution order.
    let mut arenas: Vec<Arena> = devices
        .iter()
        .map(|d| Arena::new(d.buffer_type().alignment()))
        .collect();
    let mut weights: Vec<Arena> = devices
        .iter()
        .map(|d| Arena::new(d.buffer_type().alignment()))
        .collect();
    let mut memory = vec![DeviceMemoryPlan::default(); devices.len()];
    let mut location: PerDevice<Option<Slot>> = PerDevice::new(ndev, n, None);
    let size_on = |d: usize, id: TensorId| devices[d].buffer_type().alloc_size(graph.tensor(id));
    for (w, devs) in weight_devices.iter().enumerate() {
        for &d in devs {
            if resident.contains_key(&TensorId(w)) {
                continue; // stored outside the plan; the session binds its memory
            }
            let off = weights[d].alloc(size_on(d, TensorId(w)));
            *location.get_mut(d, TensorId(w)) = Some(Slot::Weights(off));
        }
    }
    for (id, t) in graph.iter() {
        if t.role == Role::Input && !t.is_view() {
            let d = home[id.0].unwrap_or(last_dev);
            let sz = size_on(d, id);
            *location.get_mut(d, id) = Some(Slot::Compute(arenas[d].alloc(sz)));
            memory[d].unshared_bytes += sz;
        }
    }
    // Freed after their last use: intermediates on their own device, and every copy (split
    // inputs, including inputs and weights copied to a device that does not keep them).
    let stored_on = |d: usize, id: TensorId| match graph.tensor(id).role {
        Role::Compute => in_state(id),
        Role::Input | Role::State => home[id.0] == Some(d),
        Role::Weight => weight_devices[id.0].contains(&d),
    };
    let mut frees: Vec<Vec<(usize, TensorId)>> = vec![Vec::new(); nodes.len()];
    for (d, id, p) in last_use.iter() {
        if let Some(p) = *p {
            if p != end && !stored_on(d, id) {
                frees[p].push((d, id));
            }
        }
    }
    let mut split_at: Vec<Option<&Split>> = vec![None; nodes.len()];
    for s in &splits {
        split_at[pos[s.nodes[0].0]] = Some(s);
    }
    for (p, &id) in nodes.iter().enumerate() {
        let d = dev(id);
        if let Some(split) = split_at[p] {
            for inp in &split.inputs {
                let sz = size_on(d, inp.tensor);
                *location.get_mut(d, inp.tensor) = Some(Slot::Compute(arenas[d].alloc(sz)));
                memory[d].unshared_bytes += sz;
            }
        }
        let t = graph.tensor(id);
        // A write of a state is bound to the state's memory by the session.
        if !t.is_view() && !in_state(id) {
            let sz = size_on(d, id);
            memory[d].unshared_bytes += sz;
            let reuse = t.src.first().copied().filter(|&s| {
                let ts = graph.tensor(s);
                devices[d].supports_inplace(graph, id)
                    && !ts.is_view()
                    && ts.role == Role::Compute
                    && !in_state(s)
                    && !ts.is_output
                    && home[s.0] == Some(d)
                    && *last_use.get(d, s) == Some(p)
                    && ts.dtype == t.dtype
                    && ts.ne == t.ne
                    && ts.is_contiguous()
                    && t.is_contiguous()
            });
            let loc = match reuse.and_then(|s| *location.get(d, s)) {
                Some(Slot::Compute(off)) => {
                    let s = reuse.expect("reuse is set");
                    frees[p].retain(|&k| k != (d, s));
                    memory[d].in_place += 1;
                    Slot::Compute(off)
                }
                _ => Slot::Compute(arenas[d].alloc(sz)),
            };
            *location.get_mut(d, id) = Some(loc);
        }
        {
            let list = std::mem::take(&mut frees[p]);
            for (fd, fid) in list {
                if let Some(Slot::Compute(off)) = location.get(fd, fid) {
                    arenas[fd].free(*off, size_on(fd, fid));
                }
            }
        }
    }
    for (d, m) in memory.iter_mut().enumerate() {
        m.compute_bytes = arenas[d].size();
        m.weight_bytes = weights[d].size();
    }

    // In tensor order, then device order (no sort: both ascend here).
    let mut weight_copies = Vec::new();
    for (w, devs) in weight_devices.iter().enumerate() {
        let w = TensorId(w);
        let Some(&home) = resident.get(&w) else {
            continue;
        };
        for d in (0..ndev).filter(|d| devs.contains(d)) {
            if d != home {
                weight_copies.push(WeightCopyPlan {
                    tensor: w,
                    from: home,
                    to: d,
                    bytes: graph.tensor(w).nbytes(),
                });
            }
        }
    }

    Ok(Plan {
        devices: devices.iter().map(|d| d.name().to_string()).collect(),
        descriptions: devices.iter().map(|d| d.description()).collect(),
        device_of,
        why: placement.why,
        splits,
        memory,
        home,
        weight_devices,
        weight_copies,
        location,
        cost: None,
        states: state_list,
    })
}
