//! From a placement to a plan: splits with their input copies, and memory per device.

use std::collections::{HashMap, HashSet};

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

/// Everything needed to run a graph on several devices.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Device names, in priority order.
    pub devices: Vec<String>,
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
    /// Devices storing each weight.
    pub(crate) weight_devices: HashMap<TensorId, Vec<usize>>,
    /// Memory location of each (device, storage tensor).
    pub(crate) location: HashMap<(usize, TensorId), Slot>,
}

/// Builds splits and plans memory. `resident` weights stay on their device (others are stored
/// on every device that reads them); `inplace(dev, node)` says whether a device may compute a
/// node into its first input's memory.
pub(crate) fn build(
    graph: &Graph,
    devices: &[Rc<dyn Device>],
    placement: Placement,
    resident: &HashMap<TensorId, usize>,
) -> Result<Plan> {
    let nodes = graph.compute_nodes();
    let device_of = placement.device;
    let dev = |id: TensorId| device_of[id.0].unwrap_or(devices.len() - 1);
    let last_dev = devices.len() - 1;

    // Where each storage tensor's value lives; inputs go to their first consumer's device.
    let mut home: Vec<Option<usize>> = vec![None; graph.len()];
    let mut weight_devices: HashMap<TensorId, Vec<usize>> = HashMap::new();
    for &id in &nodes {
        home[id.0] = Some(dev(id));
        for &s in &graph.tensor(id).src {
            let (root, _) = graph.storage_of(s);
            match graph.tensor(root).role {
                Role::Input if home[root.0].is_none() => home[root.0] = Some(dev(id)),
                Role::Weight => {
                    let devs = weight_devices.entry(root).or_default();
                    let d = resident.get(&root).copied().unwrap_or(dev(id));
                    if !devs.contains(&d) {
                        devs.push(d);
                    }
                }
                _ => {}
            }
        }
    }
    for (id, t) in graph.iter() {
        if t.role == Role::Input && home[id.0].is_none() {
            home[id.0] = Some(last_dev);
        }
    }

    // Splits and their input copies (once per device and tensor).
    let mut splits: Vec<Split> = Vec::new();
    let mut copied: HashSet<(usize, TensorId)> = HashSet::new();
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
                    let devs = &weight_devices[&root];
                    if devs.contains(&d) {
                        continue;
                    }
                    devs[0]
                }
                _ => home[root.0].unwrap_or(last_dev),
            };
            if from != d && copied.insert((d, root)) {
                split.inputs.push(SplitInput {
                    tensor: root,
                    from,
                    bytes: graph.tensor(root).nbytes(),
                });
            }
        }
    }

    // Positions and last uses per (device, storage tensor).
    let pos: HashMap<TensorId, usize> = nodes.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let end = usize::MAX;
    let mut last_use: HashMap<(usize, TensorId), usize> = HashMap::new();
    let mut bump = |k: (usize, TensorId), p: usize| {
        let e = last_use.entry(k).or_insert(p);
        *e = (*e).max(p);
    };
    for &id in &nodes {
        // A node nobody reads is freed right after it runs.
        bump((dev(id), id), pos[&id]);
        for &s in &graph.tensor(id).src {
            let (root, _) = graph.storage_of(s);
            bump((dev(id), root), pos[&id]);
        }
    }
    for split in &splits {
        let p = pos[&split.nodes[0]];
        for inp in &split.inputs {
            bump((inp.from, inp.tensor), p);
        }
    }
    for id in graph.outputs() {
        let (root, _) = graph.storage_of(id);
        if let Some(h) = home[root.0] {
            last_use.insert((h, root), end);
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
    let mut location: HashMap<(usize, TensorId), Slot> = HashMap::new();
    let size_on = |d: usize, id: TensorId| devices[d].buffer_type().alloc_size(graph.tensor(id));
    for (&w, devs) in &weight_devices {
        for &d in devs {
            let off = weights[d].alloc(size_on(d, w));
            location.insert((d, w), Slot::Weights(off));
        }
    }
    for (id, t) in graph.iter() {
        if t.role == Role::Input {
            let d = home[id.0].unwrap_or(last_dev);
            let sz = size_on(d, id);
            location.insert((d, id), Slot::Compute(arenas[d].alloc(sz)));
            memory[d].unshared_bytes += sz;
        }
    }
    let mut frees: HashMap<usize, Vec<(usize, TensorId)>> = HashMap::new();
    for (&(d, id), &p) in &last_use {
        if p != end && graph.tensor(id).role == Role::Compute {
            frees.entry(p).or_default().push((d, id));
        }
    }
    let mut split_at: HashMap<usize, &Split> = HashMap::new();
    for s in &splits {
        split_at.insert(pos[&s.nodes[0]], s);
    }
    for (p, &id) in nodes.iter().enumerate() {
        let d = dev(id);
        if let Some(split) = split_at.get(&p) {
            for inp in &split.inputs {
                if graph.tensor(inp.tensor).role == Role::Compute
                    || graph.tensor(inp.tensor).role == Role::Input
                {
                    let sz = size_on(d, inp.tensor);
                    location.insert((d, inp.tensor), Slot::Compute(arenas[d].alloc(sz)));
                    memory[d].unshared_bytes += sz;
                } else {
                    // A resident weight read by an offloaded op: a per-run copy in compute memory.
                    let sz = size_on(d, inp.tensor);
                    location.insert((d, inp.tensor), Slot::Compute(arenas[d].alloc(sz)));
                    memory[d].unshared_bytes += sz;
                    frees
                        .entry(last_use.get(&(d, inp.tensor)).copied().unwrap_or(p))
                        .or_default()
                        .push((d, inp.tensor));
                }
            }
        }
        let t = graph.tensor(id);
        if !t.is_view() {
            let sz = size_on(d, id);
            memory[d].unshared_bytes += sz;
            let reuse = t.src.first().copied().filter(|&s| {
                let ts = graph.tensor(s);
                devices[d].supports_inplace(graph, id)
                    && !ts.is_view()
                    && ts.role == Role::Compute
                    && !ts.is_output
                    && home[s.0] == Some(d)
                    && last_use.get(&(d, s)) == Some(&p)
                    && ts.dtype == t.dtype
                    && ts.ne == t.ne
                    && ts.is_contiguous()
                    && t.is_contiguous()
            });
            let loc = match reuse.and_then(|s| location.get(&(d, s)).copied()) {
                Some(Slot::Compute(off)) => {
                    let s = reuse.expect("reuse is set");
                    if let Some(list) = frees.get_mut(&p) {
                        list.retain(|&k| k != (d, s));
                    }
                    memory[d].in_place += 1;
                    Slot::Compute(off)
                }
                _ => Slot::Compute(arenas[d].alloc(sz)),
            };
            location.insert((d, id), loc);
        }
        if let Some(list) = frees.remove(&p) {
            for (fd, fid) in list {
                if let Some(Slot::Compute(off)) = location.get(&(fd, fid)) {
                    arenas[fd].free(*off, size_on(fd, fid));
                }
            }
        }
    }
    for (d, m) in memory.iter_mut().enumerate() {
        m.compute_bytes = arenas[d].size();
        m.weight_bytes = weights[d].size();
    }

    Ok(Plan {
        devices: devices.iter().map(|d| d.name().to_string()).collect(),
        device_of,
        why: placement.why,
        splits,
        memory,
        home,
        weight_devices,
        location,
    })
}
