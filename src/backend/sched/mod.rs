//! The scheduler: places each node on a device, splits the graph where the device changes,
//! copies split inputs across, plans memory per device, and runs the splits (after
//! `ggml_backend_sched`, plus a cost model and `explain()`).
//!
//! ```text
//! Scheduler::new(devices) ─plan(graph)→ Plan ─Session::new→ Session ─set_weights, run(inputs)→ outputs
//! ```

mod arena;
pub mod cost;
pub(crate) mod explain;
mod place;
mod plan;

pub use cost::{
    calibration_key, export_calibrations, forget_calibrations, import_calibrations, CostModel,
    CostOrigin, DeviceCost, DeviceEstimate, PlanCost,
};
pub use place::Why;
pub use plan::{DeviceMemoryPlan, Plan, Split, SplitInput, WeightCopyPlan};

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::weights::{StoredWeight, WeightCopy};
use super::{Backend, Buffer, BufferUsage, Device, PreparedSplit, Profile, TensorMemory};
use crate::error::{Error, Result};
use crate::graph::{Graph, Role, TensorId};
use plan::Slot;

/// Options of one plan.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// Nodes the caller pins to a device (by device name).
    pub pins: HashMap<TensorId, String>,
    /// Weights already stored on a device (by name), outside the plan's memory: ops on them run
    /// there unless placed elsewhere (offload, cost), and then read a copy made once for that
    /// device; [`Session::new`] binds their memory.
    pub resident: HashMap<TensorId, String>,
    /// The device (by name) of each state the graph declares ([`Graph::state`]): every op
    /// touching a state runs there, and [`Session::new`] binds its memory.
    pub states: HashMap<TensorId, String>,
}

/// Places graphs on devices in priority order (first = preferred, last = fallback, the CPU).
pub struct Scheduler {
    devices: Vec<Rc<dyn Device>>,
    cost: Option<CostModel>,
}

impl Scheduler {
    /// A scheduler over `devices` in priority order; at least one.
    pub fn new(devices: Vec<Rc<dyn Device>>) -> Result<Self> {
        if devices.is_empty() {
            return Err(Error::InvalidArgument(
                "a scheduler needs at least one device".into(),
            ));
        }
        Ok(Self {
            devices,
            cost: None,
        })
    }

    /// Turns the cost model on (with these per-device costs) or off (`None`).
    pub fn set_cost_model(&mut self, cost: Option<CostModel>) {
        self.cost = cost;
    }

    /// The devices, in priority order.
    pub fn devices(&self) -> &[Rc<dyn Device>] {
        &self.devices
    }

    /// The cost model's estimate of one run of `plan` (seconds), when the model is on.
    pub fn estimate(&self, graph: &Graph, plan: &Plan) -> Option<f64> {
        self.cost
            .as_ref()
            .map(|c| c.estimate(graph, &plan.device_of))
    }

    /// The cost model's estimate of one run of `graph` with every node each device supports
    /// on that device (the rest where the scheduler falls back), per device; empty when the
    /// cost model is off.
    pub fn single_device_estimates(
        &self,
        graph: &Graph,
        states: &HashMap<TensorId, usize>,
    ) -> Result<Vec<(String, f64)>> {
        let Some(cost) = &self.cost else {
            return Ok(Vec::new());
        };
        let mut sup = place::SupportTable::new(graph, &self.devices);
        let base = place::place(
            graph,
            &self.devices,
            &mut sup,
            &HashMap::new(),
            &HashMap::new(),
            states,
        )?;
        let mut out = Vec::new();
        for (d, dev) in self.devices.iter().enumerate() {
            let device_of = cost::all_on(graph, &mut sup, &base.device, d, &HashMap::new());
            out.push((dev.name().to_string(), cost.estimate(graph, &device_of)));
        }
        Ok(out)
    }

    fn device_index(&self, name: &str) -> Result<usize> {
        self.devices
            .iter()
            .position(|d| d.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::NoDevice(format!("{name:?} is not one of this scheduler's devices"))
            })
    }

    /// Places, splits and plans memory for `graph`. Fails, before anything runs, on ops no
    /// device supports, pins to unknown devices or to devices that cannot run the node.
    pub fn plan(&self, graph: &Graph, opts: &PlanOptions) -> Result<Plan> {
        let mut pins = HashMap::new();
        for (&id, name) in &opts.pins {
            graph.get(id)?;
            pins.insert(id, self.device_index(name)?);
        }
        let mut resident = HashMap::new();
        for (&id, name) in &opts.resident {
            if graph.get(id)?.role != Role::Weight {
                return Err(Error::InvalidArgument(format!(
                    "{} is not a weight",
                    graph.tensor(id).name
                )));
            }
            resident.insert(id, self.device_index(name)?);
        }
        let mut states = HashMap::new();
        for (&id, name) in &opts.states {
            if graph.get(id)?.role != Role::State {
                return Err(Error::InvalidArgument(format!(
                    "{} is not a state",
                    graph.tensor(id).name
                )));
            }
            states.insert(id, self.device_index(name)?);
        }
        graph.check_states()?;
        let mut sup = place::SupportTable::new(graph, &self.devices);
        let mut placement =
            place::place(graph, &self.devices, &mut sup, &pins, &resident, &states)?;
        if let Some(cost) = &self.cost {
            // Nodes on states stay where their state is.
            let mut fixed = pins.clone();
            for (i, why) in placement.why.iter().enumerate() {
                if let (Some(place::Why::State), Some(d)) = (why, placement.device[i]) {
                    fixed.insert(TensorId(i), d);
                }
            }
            cost.refine(graph, &self.devices, &mut sup, &mut placement, &fixed);
        }
        let mut plan = plan::build(graph, &self.devices, placement, &resident, &states)?;
        if let Some(cost) = &self.cost {
            plan.cost = Some(PlanCost {
                per_device: cost.breakdown(graph, &plan.device_of),
                alone: self.single_device_estimates(graph, &states)?,
                origins: cost.origins.clone(),
            });
        }
        Ok(plan)
    }
}

/// A plan with its memory allocated and each split prepared by its backend: weights set
/// once, then run any number of times.
pub struct Session {
    graph: Graph,
    plan: Plan,
    backends: Vec<Rc<Backend>>,
    mems: Vec<TensorMemory>,
    weights_set: HashSet<TensorId>,
    /// One per split, when prepared (see [`Session::set_prepared`]).
    prepared: Option<Vec<PreparedSplit>>,
    /// Copies of resident weights this plan reads on other devices, with their sources.
    weight_copies: Vec<(StoredWeight, Rc<WeightCopy>)>,
    copied: Cell<CopyStats>,
}

/// An input's value for [`Session::run_with`].
pub enum RunInput<'a> {
    /// Raw bytes from the host.
    Host(&'a [u8]),
    /// A whole buffer (of exactly the input's size) on any device.
    Device(&'a Buffer),
}

impl RunInput<'_> {
    fn len(&self) -> usize {
        match self {
            RunInput::Host(b) => b.len(),
            RunInput::Device(b) => b.size(),
        }
    }
}

/// An output of [`Session::run_with`].
pub enum RunOutput {
    /// Read back to the host.
    Host(Vec<u8>),
    /// Left in a buffer of its own on the device (index into the scheduler's devices) that
    /// computed it.
    Device {
        /// The device's index.
        device: usize,
        /// The output's bytes, from offset 0.
        buffer: Rc<Buffer>,
    },
}

/// Bytes that crossed between devices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Copies made by every run: split inputs (activations, and weights of a plan that is not
    /// told where they are stored).
    pub per_run_bytes: u64,
    /// The part of `per_run_bytes` that is weights.
    pub per_run_weight_bytes: u64,
    /// Copies made once: resident weights copied to a device other than their home.
    pub one_time_bytes: u64,
}

impl std::ops::AddAssign for CopyStats {
    fn add_assign(&mut self, o: Self) {
        self.per_run_bytes += o.per_run_bytes;
        self.per_run_weight_bytes += o.per_run_weight_bytes;
        self.one_time_bytes += o.one_time_bytes;
    }
}

impl Session {
    /// Allocates every device's arenas for `plan` of `graph` on `scheduler`'s devices.
    /// `resident` gives the stored value of each weight the plan was told is resident (stored
    /// on the same devices, in the same order); those count as set, and their copies for other
    /// devices are made (once, shared with every session binding the same weight) here and
    /// filled by the first run. A plan with states needs [`Session::with_states`].
    pub fn new(
        scheduler: &Scheduler,
        graph: &Graph,
        plan: Plan,
        resident: &HashMap<TensorId, StoredWeight>,
    ) -> Result<Self> {
        Self::with_states(scheduler, graph, plan, resident, &HashMap::new())
    }

    /// [`Session::new`] where `states` gives the memory of each state in the plan (a buffer
    /// of the state's device, the state at offset 0), bound to the state and to every
    /// `set_rows` writing it in place.
    pub fn with_states(
        scheduler: &Scheduler,
        graph: &Graph,
        plan: Plan,
        resident: &HashMap<TensorId, StoredWeight>,
        states: &HashMap<TensorId, Rc<Buffer>>,
    ) -> Result<Self> {
        let devices = scheduler.devices();
        // Every arena is checked against its device's limit before any is allocated.
        for (d, dev) in devices.iter().enumerate() {
            let bt = dev.buffer_type();
            let m = &plan.memory[d];
            if let Some(&size) = [m.compute_bytes, m.weight_bytes]
                .iter()
                .find(|&&size| size > bt.max_size())
            {
                return Err(Error::AllocTooLarge {
                    size,
                    max: bt.max_size(),
                    buffer_type: bt.name().to_string(),
                });
            }
        }
        let mut backends = Vec::new();
        let mut mems = Vec::new();
        for (d, dev) in devices.iter().enumerate() {
            backends.push(Backend::new(dev.clone())?);
            let bt = dev.buffer_type();
            let compute = bt.alloc(plan.memory[d].compute_bytes)?;
            compute.set_usage(BufferUsage::Compute);
            let weights = bt.alloc(plan.memory[d].weight_bytes)?;
            weights.set_usage(BufferUsage::Weights);
            let mut mem = TensorMemory::new();
            for (ld, id, slot) in plan.location.iter() {
                let Some(slot) = *slot else { continue };
                if ld != d {
                    continue;
                }
                match slot {
                    Slot::Compute(off) => mem.place(graph, id, compute.clone(), off)?,
                    Slot::Weights(off) => mem.place(graph, id, weights.clone(), off)?,
                }
            }
            mems.push(mem);
        }
        // Each in-place write of a state shares the state's memory (one pass over the graph).
        let writers: Vec<(TensorId, TensorId)> = graph
            .iter()
            .filter(|(_, w)| !w.is_view() && w.role == Role::Compute)
            .filter_map(|(id, _)| graph.state_of(id).map(|st| (id, st)))
            .collect();
        for &(st, d) in &plan.states {
            let t = graph.get(st)?;
            let buf = states
                .get(&st)
                .ok_or_else(|| Error::Graph(format!("state {} has no memory bound", t.name)))?;
            if buf.size() < t.nbytes() {
                return Err(Error::InvalidArgument(format!(
                    "state {} needs {} bytes, its memory has {}",
                    t.name,
                    t.nbytes(),
                    buf.size()
                )));
            }
            mems[d].place(graph, st, buf.clone(), 0)?;
            for &(id, _) in writers.iter().filter(|&&(_, of)| of == st) {
                mems[d].place(graph, id, buf.clone(), 0)?;
            }
        }
        let mut weights_set = HashSet::new();
        let mut weight_copies = Vec::new();
        for (w, devs) in plan.weight_devices.iter().enumerate() {
            let id = TensorId(w);
            for &d in devs {
                if plan.location.get(d, id).is_some() {
                    continue;
                }
                let t = graph.tensor(id);
                let sw = resident.get(&id).ok_or_else(|| {
                    Error::Graph(format!("resident weight {} has no memory bound", t.name))
                })?;
                if sw.dtype() != t.dtype || sw.nbytes() != t.nbytes() {
                    return Err(Error::InvalidArgument(format!(
                        "weight {} ({:?}, {} bytes) is bound to a stored {:?} value of {} bytes",
                        t.name,
                        t.dtype,
                        t.nbytes(),
                        sw.dtype(),
                        sw.nbytes()
                    )));
                }
                let (buf, off) = if d == sw.device() {
                    let (buf, off) = sw.memory();
                    (buf.clone(), off)
                } else {
                    let copy = sw.copy_on(d, &devices[d])?;
                    let buf = copy.buffer.clone();
                    weight_copies.push((sw.clone(), copy));
                    (buf, 0)
                };
                let need = devices[d].buffer_type().alloc_size(t);
                if off.checked_add(need).is_none_or(|end| end > buf.size()) {
                    return Err(Error::OutOfBounds(format!(
                        "weight {} does not fit its bound buffer",
                        t.name
                    )));
                }
                mems[d].place(graph, id, buf, off)?;
                weights_set.insert(id);
            }
        }
        let mut session = Self {
            graph: graph.clone(),
            plan,
            backends,
            mems,
            weights_set,
            prepared: None,
            weight_copies,
            copied: Cell::new(CopyStats::default()),
        };
        session.set_prepared(true)?;
        Ok(session)
    }

    /// Whether runs use the splits as their backends prepared them (the default) or compute
    /// each split's nodes directly; the bytes are the same either way.
    pub fn set_prepared(&mut self, on: bool) -> Result<()> {
        self.prepared = None;
        if on {
            let mut prepared = Vec::with_capacity(self.plan.splits.len());
            for split in &self.plan.splits {
                let (backend, mem) = (&self.backends[split.device], &self.mems[split.device]);
                prepared.push(backend.prepare(&self.graph, &split.nodes, mem)?);
            }
            self.prepared = Some(prepared);
        }
        Ok(())
    }

    /// The plan this session runs.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The graph this session runs.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Stores weight values (raw bytes in the weight's dtype) on every device that keeps them.
    pub fn set_weights(&mut self, weights: &HashMap<TensorId, Vec<u8>>) -> Result<()> {
        for (&id, bytes) in weights {
            let t = self.graph.get(id)?;
            if t.role != Role::Weight || t.is_view() {
                return Err(Error::InvalidArgument(format!(
                    "{} is not a weight",
                    t.name
                )));
            }
            check_len(&t.name, t.nbytes(), bytes.len())?;
        }
        for (&id, bytes) in weights {
            for &d in &self.plan.weight_devices[id.0] {
                let (buf, off) = self.mems[d].locate(&self.graph, id)?;
                buf.write(off, bytes)?;
            }
            self.weights_set.insert(id);
        }
        Ok(())
    }

    /// Runs the graph with `inputs` (raw bytes per input id) and returns the outputs' bytes in
    /// `graph.outputs()` order. Every input and weight is checked before anything is enqueued.
    pub async fn run(&self, inputs: &HashMap<TensorId, Vec<u8>>) -> Result<Vec<Vec<u8>>> {
        let inputs = inputs
            .iter()
            .map(|(&id, b)| (id, RunInput::Host(b)))
            .collect();
        let outs = self.run_with(&inputs, false, None).await?;
        Ok(outs
            .into_iter()
            .map(|o| match o {
                RunOutput::Host(b) => b,
                // Never: nothing is kept on a device.
                RunOutput::Device { .. } => Vec::new(),
            })
            .collect())
    }

    /// Runs the graph with `inputs` given as host bytes or device buffers (copied on the
    /// device when they are on the input's device, without a trip through the host), and
    /// returns the outputs in `graph.outputs()` order: read back, or, with `keep_on_device`,
    /// each copied into a new buffer on the device that computed it. Every input and weight is
    /// checked before anything is enqueued. When `profile` is given and on (when the run
    /// starts), each node's time goes to it (see [`Backend::compute_profiled`]).
    pub async fn run_with(
        &self,
        inputs: &HashMap<TensorId, RunInput<'_>>,
        keep_on_device: bool,
        profile: Option<&Profile>,
    ) -> Result<Vec<RunOutput>> {
        let g = &self.graph;
        for (&id, value) in inputs {
            let t = g.get(id)?;
            if t.role != Role::Input || t.is_view() {
                return Err(Error::InvalidArgument(format!(
                    "{} is not an input",
                    t.name
                )));
            }
            check_len(&t.name, t.nbytes(), value.len())?;
        }
        for (id, t) in g.iter() {
            if t.role == Role::Input && !t.is_view() && !inputs.contains_key(&id) {
                return Err(Error::Graph(format!("no value given for input {}", t.name)));
            }
        }
        for (w, devs) in self.plan.weight_devices.iter().enumerate() {
            if !devs.is_empty() && !self.weights_set.contains(&TensorId(w)) {
                let name = &g.tensor(TensorId(w)).name;
                return Err(Error::Graph(format!("weight {name} was never set")));
            }
        }
        for (&id, value) in inputs {
            let d = self.plan.home[id.0].unwrap_or(self.backends.len() - 1);
            let (buf, off) = self.mems[d].locate(g, id)?;
            match value {
                RunInput::Host(bytes) => buf.write(off, bytes)?,
                RunInput::Device(src) => buf.copy_via_host(src, 0, off, src.size()).await?,
            }
        }
        let mut copied = CopyStats::default();
        for (sw, copy) in &self.weight_copies {
            if !copy.is_filled() {
                let (src, off) = sw.memory();
                copy.buffer.copy_via_host(src, off, 0, sw.nbytes()).await?;
                copy.set_filled();
                copied.one_time_bytes += sw.nbytes() as u64;
            }
        }
        let profile = profile.filter(|p| p.is_on());
        for (i, split) in self.plan.splits.iter().enumerate() {
            for inp in &split.inputs {
                let (src, src_off) = self.mems[inp.from].locate(g, inp.tensor)?;
                let (dst, dst_off) = self.mems[split.device].locate(g, inp.tensor)?;
                dst.copy_via_host(src, src_off, dst_off, inp.bytes).await?;
                copied.per_run_bytes += inp.bytes as u64;
                if g.tensor(inp.tensor).role == Role::Weight {
                    copied.per_run_weight_bytes += inp.bytes as u64;
                }
            }
            let (backend, mem) = (&self.backends[split.device], &self.mems[split.device]);
            match (&self.prepared, profile) {
                (_, Some(p)) => backend.compute_profiled(g, &split.nodes, mem, p).await?,
                (Some(prepared), None) => backend.compute_prepared(&prepared[i], g, mem)?,
                (None, None) => backend.compute(g, &split.nodes, mem)?,
            }
        }
        let mut out = Vec::new();
        for id in g.outputs() {
            let t = g.tensor(id);
            if !t.is_contiguous() {
                return Err(Error::InvalidArgument(format!(
                    "output {} is not contiguous",
                    t.name
                )));
            }
            let (root, _) = g.storage_of(id);
            let d = match g.tensor(root).role {
                Role::Weight => self.plan.weight_devices[root.0].first().copied(),
                _ => self.plan.home[root.0],
            }
            .ok_or_else(|| Error::Graph(format!("output {} is never computed", t.name)))?;
            let (buf, off) = self.mems[d].locate(g, id)?;
            out.push(if keep_on_device {
                let kept = self.backends[d].device().buffer_type().alloc(t.nbytes())?;
                kept.copy_via_host(buf, off, 0, t.nbytes()).await?;
                RunOutput::Device {
                    device: d,
                    buffer: kept,
                }
            } else {
                RunOutput::Host(buf.read(off, t.nbytes()).await?)
            });
        }
        self.copied.set(copied);
        Ok(out)
    }

    /// Bytes copied between devices by the last run.
    pub fn last_run_copies(&self) -> CopyStats {
        self.copied.get()
    }

    /// The plan described for people (see [`Plan::explain`]), with each prepared split's note.
    pub fn explain(&self) -> String {
        let mut s = self.plan.explain(&self.graph);
        for (i, split) in self.prepared.iter().flatten().enumerate() {
            if let Some(note) = split.describe() {
                s.push_str(&format!("split {i} prepared: {note}\n"));
            }
        }
        s
    }
}

fn check_len(name: &str, want: usize, got: usize) -> Result<()> {
    if want != got {
        return Err(Error::InvalidArgument(format!(
            "{name} needs {want} bytes, got {got}"
        )));
    }
    Ok(())
}
