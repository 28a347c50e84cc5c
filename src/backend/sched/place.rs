//! Placement: which backend runs each node, and why (ggml-backend-sched's passes, then the
//! optional cost model in `cost.rs`).

use std::collections::HashMap;
use std::rc::Rc;

use crate::backend::{Device, Support};
use crate::error::{Error, Result};
use crate::graph::{Graph, Role, TensorId};

/// Why a node runs where it runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Why {
    /// The caller pinned it there.
    Pinned,
    /// Its weights live on that device.
    Weights,
    /// It reads or writes a state kept on that device (states never move).
    State,
    /// Its weights live elsewhere, and this device's `offload_op` asked for it.
    Offload,
    /// It follows its neighbour in graph order onto the same (non-last) device.
    Neighbour,
    /// The highest-priority device that supports it.
    Priority,
    /// Higher-priority devices cannot run it; the first one's reason.
    Fallback(String),
    /// The cost model found it cheaper there (transfers included).
    Cost,
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::Pinned => write!(f, "pinned"),
            Why::Weights => write!(f, "weights"),
            Why::State => write!(f, "state"),
            Why::Offload => write!(f, "offload"),
            Why::Neighbour => write!(f, "neighbour"),
            Why::Priority => write!(f, "priority"),
            Why::Fallback(r) => write!(f, "unsupported above: {r}"),
            Why::Cost => write!(f, "cost"),
        }
    }
}

/// Lazily computed `supports_op` answers per (node, device).
pub(crate) struct SupportTable<'a> {
    graph: &'a Graph,
    devices: &'a [Rc<dyn Device>],
    cache: HashMap<(TensorId, usize), Support>,
}

impl<'a> SupportTable<'a> {
    pub fn new(graph: &'a Graph, devices: &'a [Rc<dyn Device>]) -> Self {
        Self {
            graph,
            devices,
            cache: HashMap::new(),
        }
    }

    pub fn get(&mut self, node: TensorId, dev: usize) -> &Support {
        let (graph, devices) = (self.graph, self.devices);
        self.cache
            .entry((node, dev))
            .or_insert_with(|| devices[dev].supports_op(graph, node))
    }

    pub fn yes(&mut self, node: TensorId, dev: usize) -> bool {
        self.get(node, dev).is_yes()
    }
}

/// Per-tensor device assignment (compute nodes only) with reasons.
pub(crate) struct Placement {
    pub device: Vec<Option<usize>>,
    pub why: Vec<Option<Why>>,
}

/// Assigns every compute node of `graph` to one of `devices` (priority order).
pub(crate) fn place(
    graph: &Graph,
    devices: &[Rc<dyn Device>],
    sup: &mut SupportTable<'_>,
    pins: &HashMap<TensorId, usize>,
    resident: &HashMap<TensorId, usize>,
    states: &HashMap<TensorId, usize>,
) -> Result<Placement> {
    let n = graph.len();
    let mut device = vec![None; n];
    let mut why = vec![None; n];
    let nodes = graph.compute_nodes();
    let last = devices.len() - 1;

    // 1. pins
    for (&id, &d) in pins {
        let t = graph.get(id)?;
        if t.op.is_noop() {
            continue;
        }
        if let Support::No(reason) = sup.get(id, d) {
            return Err(Error::Unsupported {
                op: t.op.name(),
                dtype: t.dtype.name(),
                device: devices[d].name().to_string(),
                reason: format!("{reason} (node {} is pinned there)", t.name),
            });
        }
        device[id.0] = Some(d);
        why[id.0] = Some(Why::Pinned);
    }
    // 1b. ops reading or writing a state run on the state's device, whatever else they read
    for &id in &nodes {
        let t = graph.tensor(id);
        let Some(st) = t.src.iter().find_map(|&s| graph.state_of(s)) else {
            continue;
        };
        let Some(&d) = states.get(&st) else {
            return Err(Error::Graph(format!(
                "state {} has no memory bound (bind a State to it)",
                graph.tensor(st).name
            )));
        };
        if device[id.0].is_some_and(|p| p != d) {
            return Err(Error::InvalidArgument(format!(
                "node {} is pinned to {}, but it touches state {} on {}",
                t.name,
                devices[device[id.0].unwrap_or(d)].name(),
                graph.tensor(st).name,
                devices[d].name()
            )));
        }
        if let Support::No(reason) = sup.get(id, d) {
            return Err(Error::Unsupported {
                op: t.op.name(),
                dtype: t.dtype.name(),
                device: devices[d].name().to_string(),
                reason: format!(
                    "{reason} (node {} touches state {}, which lives there)",
                    t.name,
                    graph.tensor(st).name
                ),
            });
        }
        device[id.0] = Some(d);
        why[id.0] = Some(Why::State);
    }
    // 2. ops on resident weights run where the weights live, unless a higher device offloads
    for &id in &nodes {
        if device[id.0].is_some() {
            continue;
        }
        let home = graph.tensor(id).src.iter().find_map(|&s| {
            let (root, _) = graph.storage_of(s);
            (graph.tensor(root).role == Role::Weight)
                .then(|| resident.get(&root).copied())
                .flatten()
        });
        if let Some(w) = home {
            if let Some(h) = (0..w).find(|&h| sup.yes(id, h) && devices[h].offload_op(graph, id)) {
                device[id.0] = Some(h);
                why[id.0] = Some(Why::Offload);
            } else if sup.yes(id, w) {
                device[id.0] = Some(w);
                why[id.0] = Some(Why::Weights);
            }
        }
    }
    // 3. expand assignments on non-last devices to neighbours, forward then backward
    for order in [
        nodes.clone(),
        nodes.iter().rev().copied().collect::<Vec<_>>(),
    ] {
        let mut cur: Option<usize> = None;
        for &id in &order {
            match device[id.0] {
                Some(d) => cur = (d != last).then_some(d),
                None => {
                    if let Some(d) = cur {
                        if sup.yes(id, d) {
                            device[id.0] = Some(d);
                            why[id.0] = Some(Why::Neighbour);
                        } else {
                            cur = None;
                        }
                    }
                }
            }
        }
    }
    // 4. the rest: the first device that supports it
    for &id in &nodes {
        if device[id.0].is_some() {
            continue;
        }
        let Some(d) = (0..devices.len()).find(|&d| sup.yes(id, d)) else {
            let t = graph.tensor(id);
            let reasons: Vec<String> = (0..devices.len())
                .map(|d| match sup.get(id, d) {
                    Support::No(r) => format!("{}: {r}", devices[d].name()),
                    Support::Yes => String::new(),
                })
                .collect();
            return Err(Error::Unsupported {
                op: t.op.name(),
                dtype: t.dtype.name(),
                device: "any device".into(),
                reason: format!("node {}: {}", t.name, reasons.join("; ")),
            });
        };
        device[id.0] = Some(d);
        why[id.0] = Some(
            match (0..d).find_map(|h| match sup.get(id, h) {
                Support::No(r) => Some(format!("{}: {r}", devices[h].name())),
                Support::Yes => None,
            }) {
                Some(reason) => Why::Fallback(reason),
                None => Why::Priority,
            },
        );
    }
    Ok(Placement { device, why })
}
