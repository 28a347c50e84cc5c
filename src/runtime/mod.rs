//! The runtime users see, a thin front over the scheduler: devices chosen once, each graph's
//! session (plan + memory) cached by the graph's shape, runs queued per session, inputs and
//! outputs by name. The JS API wraps exactly this. It is handed its devices (see
//! `create_runtime` at the crate root); weight storage lives in `backend::weights`.

mod program;
mod queue;
mod state;
mod tensor;
pub mod typed;

pub use crate::backend::{matrix_only, ByteSource, CopyStats, Device, StoredWeight, WeightSpec};
pub use program::Program;
pub use state::State;
pub use tensor::DeviceTensor;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::sched::CostModel;
use crate::backend::{
    DeviceKind, PlanOptions, Profile, Registry, RunInput, RunOutput, Scheduler, Session,
};
use crate::error::{Error, Result};
use crate::graph::{DType, Graph, Role, TensorId};
use queue::RunQueue;

/// Which devices a runtime uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceChoice {
    /// The GPU when there is one, with the CPU for what it cannot run; else the CPU.
    Auto,
    /// WebGPU (an error, with the reason, when there is none), the CPU for what it cannot run.
    WebGpu,
    /// The CPU only.
    Cpu,
}

impl DeviceChoice {
    /// Each choice by its name, as options name it (JS `device`, the examples' `--device`).
    pub const NAMES: [(&'static str, Self); 3] = [
        ("auto", Self::Auto),
        ("webgpu", Self::WebGpu),
        ("cpu", Self::Cpu),
    ];

    /// Whether this choice may use a GPU (a registry for it needs the GPU families).
    pub fn wants_gpu(self) -> bool {
        self != DeviceChoice::Cpu
    }
}

impl std::str::FromStr for DeviceChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let lower = s.to_ascii_lowercase();
        let name = if lower == "gpu" { "webgpu" } else { &lower };
        match Self::NAMES.iter().find(|(n, _)| *n == name) {
            Some(&(_, c)) => Ok(c),
            None => Err(Error::InvalidArgument(format!(
                "device must be \"auto\", \"webgpu\" or \"cpu\", got {s:?}"
            ))),
        }
    }
}

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

fn next_uid() -> u64 {
    NEXT_UID.fetch_add(1, Ordering::Relaxed)
}

/// Graph shapes whose sessions a runtime keeps by default (the least recently run is freed
/// when another comes).
pub const DEFAULT_CACHED_SESSIONS: usize = 8;

/// What a session depends on besides the devices: the graph's shape, which stored weight each
/// resident weight is, and the bytes of the weights a program carries itself (a digest).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct SessionKey {
    graph: u64,
    stored: Vec<(TensorId, usize)>,
    states: Vec<(TensorId, u64)>,
    owned: u64,
}

impl SessionKey {
    fn of(p: &Program) -> Self {
        // In graph order (no sort: ids ascend).
        let stored = p
            .graph
            .iter()
            .filter_map(|(id, _)| p.stored.get(&id).map(|w| (id, w.id())))
            .collect();
        let mut states: Vec<(TensorId, u64)> =
            p.states.iter().map(|(&id, s)| (id, s.uid())).collect();
        crate::sort::by_key(&mut states, |s| crate::sort::key2(s.0 .0 as u64, s.1));
        let (graph, owned) = p.shape_key();
        Self {
            graph,
            stored,
            states,
            owned,
        }
    }
}

/// The cost model's estimates of one run of a graph, in seconds.
#[derive(Clone, Debug)]
pub struct PlanEstimates {
    /// The plan the runtime runs.
    pub planned: f64,
    /// Each device alone (with the scheduler's fallbacks for what it cannot run), by name.
    pub alone: Vec<(String, f64)>,
}

/// A tensor's value given to or returned by [`Runtime::run_values`].
#[derive(Clone, Debug)]
pub enum Value {
    /// Raw bytes on the host.
    Bytes(Vec<u8>),
    /// Kept on a device by an earlier run.
    Device(DeviceTensor),
}

impl Value {
    /// The bytes, read back from the device when it is there.
    pub async fn into_bytes(self) -> Result<Vec<u8>> {
        match self {
            Value::Bytes(b) => Ok(b),
            Value::Device(t) => t.read().await,
        }
    }
}

/// A session and its run queue.
struct Cached {
    key: SessionKey,
    session: Rc<Session>,
    queue: Rc<RunQueue>,
}

/// Devices, a scheduler over them, and the sessions of the graphs it ran.
pub struct Runtime {
    uid: u64,
    sched: Scheduler,
    notes: Vec<String>,
    /// Least recently used first.
    sessions: RefCell<Vec<Cached>>,
    max_sessions: Cell<usize>,
    copied: Cell<CopyStats>,
    /// Plans made (sessions created) so far.
    plans: Cell<u64>,
    /// This runtime's per-op profile: only its own runs record into it.
    profile: Profile,
}

impl Runtime {
    /// A runtime on `choice`'s devices from `reg`; `cost_model` calibrates each device once
    /// (cached). Without a GPU in `reg`, `Auto` uses the CPU and `WebGpu` fails with the
    /// reasons the registry gives.
    pub async fn new(reg: &Registry, choice: DeviceChoice, cost_model: bool) -> Result<Self> {
        let cpu = reg.by_kind(DeviceKind::Cpu)?;
        let gpu = reg
            .by_kind(DeviceKind::Gpu)
            .or_else(|_| reg.by_kind(DeviceKind::IntegratedGpu));
        let reasons: Vec<String> = reg
            .backend_regs()
            .iter()
            .filter_map(|r| {
                r.unavailable_reason()
                    .map(|why| format!("{}: {why}", r.name()))
            })
            .collect();
        let devices: Vec<Rc<dyn Device>> = match (choice, gpu) {
            (DeviceChoice::Cpu, _) => vec![cpu],
            (_, Ok(gpu)) => vec![gpu, cpu],
            (DeviceChoice::Auto, Err(_)) => vec![cpu],
            (DeviceChoice::WebGpu, Err(_)) => {
                return Err(Error::NoDevice(format!(
                    "no WebGPU device ({})",
                    if reasons.is_empty() {
                        "no GPU family registered".to_string()
                    } else {
                        reasons.join("; ")
                    }
                )))
            }
        };
        Self::with_devices(devices, cost_model, reasons).await
    }

    /// A runtime over given devices (priority order: the last is the fallback for every op).
    pub async fn with_devices(
        devices: Vec<Rc<dyn Device>>,
        cost_model: bool,
        notes: Vec<String>,
    ) -> Result<Self> {
        let mut sched = Scheduler::new(devices)?;
        if cost_model && sched.devices().len() > 1 {
            sched.set_cost_model(Some(CostModel::calibrate(sched.devices()).await?));
        }
        Ok(Self {
            uid: next_uid(),
            sched,
            notes,
            sessions: RefCell::new(Vec::new()),
            max_sessions: Cell::new(DEFAULT_CACHED_SESSIONS),
            copied: Cell::new(CopyStats::default()),
            plans: Cell::new(0),
            profile: Profile::new(),
        })
    }

    /// Starts recording where this runtime's runs spend their time, per device, op and shapes
    /// (clears the last profile). While it records, each node runs alone and is waited for,
    /// so runs are slower; a run already under way when it starts is not recorded. Other
    /// runtimes' runs are never recorded here.
    pub fn profile_start(&self) {
        self.profile.start();
    }

    /// Whether this runtime's profile records ([`Runtime::profile_start`]).
    pub fn profiling(&self) -> bool {
        self.profile.is_on()
    }

    /// Stops recording; returns this runtime's profile as a table, most time first (and
    /// clears it): a `total ... ms in N kinds of node` line, then one row per device, op and
    /// operand shapes.
    pub fn profile_stop(&self) -> String {
        self.profile.stop()
    }

    /// Names of the devices in use, in priority order.
    pub fn device_names(&self) -> Vec<String> {
        self.sched
            .devices()
            .iter()
            .map(|d| d.name().to_string())
            .collect()
    }

    /// Why devices are missing (e.g. no WebGPU adapter).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Turns the cost model on (with these per-device costs) or off, for plans made from now on
    /// (cached sessions are freed).
    pub fn set_cost_model(&mut self, cost: Option<CostModel>) {
        self.sched.set_cost_model(cost);
        self.clear();
    }

    /// The device each weight of `graph` should be kept on: where the ops reading it run in
    /// this runtime's own plan of `graph` (cost model included), so that a model's weights
    /// live where their ops run for the shape given; a weight read on several devices goes to
    /// the first that reads it. Weights no op reads go to the last (fallback) device.
    pub fn weight_homes(&self, graph: &Graph) -> Result<HashMap<TensorId, usize>> {
        let plan = self.sched.plan(graph, &PlanOptions::default())?;
        let fallback = self.sched.devices().len() - 1;
        Ok(graph
            .iter()
            .filter(|(_, t)| t.role == Role::Weight && !t.is_view())
            .map(|(id, _)| {
                let d = plan.weight_devices[id.0].first().copied();
                (id, d.unwrap_or(fallback))
            })
            .collect())
    }

    /// Stores weights on this runtime's devices ([`crate::backend::store_weights`]):
    /// `spec.device` indexes [`Runtime::device_names`].
    pub fn store_weights(
        &self,
        specs: &[WeightSpec],
        src: &dyn ByteSource,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<StoredWeight>> {
        crate::backend::store_weights(self.sched.devices(), self.uid, specs, src, progress)
    }

    /// A state on device `device` (an index into [`Runtime::device_names`]): `dtype` (f32,
    /// f16 or i32) values of shape `ne`, zeroed, kept until every clone is dropped. Programs
    /// bind it with [`Program::state`]; runs read and write it in place on that device.
    pub fn create_state(
        &self,
        name: &str,
        dtype: DType,
        ne: &[usize],
        device: usize,
    ) -> Result<State> {
        let dev = self.sched.devices().get(device).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "state {name}: device {device} is not one of this runtime's {}",
                self.sched.devices().len()
            ))
        })?;
        State::alloc(
            dev.buffer_type(),
            self.uid,
            device,
            dev.name().to_string(),
            name,
            dtype,
            ne,
            next_uid(),
        )
    }

    /// Whether every device of this runtime runs node `node` of `graph` (a model builds a
    /// fused op only then, so the op never splits its graph across devices).
    pub fn runs_everywhere(&self, graph: &Graph, node: TensorId) -> bool {
        self.sched
            .devices()
            .iter()
            .all(|d| d.supports_op(graph, node).is_yes())
    }

    /// Whether device `d` (an index into [`Runtime::device_names`]) is the CPU.
    pub fn device_is_cpu(&self, d: usize) -> bool {
        self.sched
            .devices()
            .get(d)
            .is_some_and(|dev| dev.kind() == DeviceKind::Cpu)
    }

    /// Keeps at least `n` graph shapes' sessions (a model with that many shapes: each runs
    /// its prepared plan instead of planning again); never lowers the limit.
    pub fn reserve_cached_sessions(&self, n: usize) {
        if n > self.max_sessions.get() {
            self.max_sessions.set(n);
        }
    }

    /// How many graph shapes keep their sessions (memory) at once; at least 1.
    pub fn set_cached_sessions(&self, n: usize) {
        self.max_sessions.set(n.max(1));
        self.evict();
    }

    fn evict(&self) {
        let mut s = self.sessions.borrow_mut();
        let excess = s.len().saturating_sub(self.max_sessions.get());
        s.drain(..excess);
    }

    /// The session of `p`'s shape: cached, or planned now (the least recently run one freed
    /// when the cache is full).
    fn session(&self, p: &Program) -> Result<(Rc<Session>, Rc<RunQueue>)> {
        let key = SessionKey::of(p);
        {
            let mut cache = self.sessions.borrow_mut();
            if let Some(i) = cache.iter().position(|c| c.key == key) {
                let c = cache.remove(i);
                let found = (c.session.clone(), c.queue.clone());
                cache.push(c);
                return Ok(found);
            }
        }
        let mut opts = PlanOptions::default();
        let names = self.device_names();
        for (&id, w) in &p.stored {
            if w.owner() != self.uid {
                return Err(Error::InvalidArgument(format!(
                    "weight {} is stored on another runtime's devices",
                    p.graph.tensor(id).name
                )));
            }
            opts.resident.insert(id, names[w.device()].clone());
        }
        let mut bound = HashMap::new();
        for (&id, st) in &p.states {
            if st.owner() != self.uid {
                return Err(Error::InvalidArgument(format!(
                    "state {} belongs to another runtime",
                    st.name()
                )));
            }
            opts.states.insert(id, names[st.device()].clone());
            bound.insert(id, st.buffer().clone());
        }
        let plan = self.sched.plan(&p.graph, &opts)?;
        self.plans.set(self.plans.get() + 1);
        let mut session = Session::with_states(&self.sched, &p.graph, plan, &p.stored, &bound)?;
        session.set_weights(&p.weights)?;
        let (session, queue) = (Rc::new(session), Rc::new(RunQueue::default()));
        self.sessions.borrow_mut().push(Cached {
            key,
            session: session.clone(),
            queue: queue.clone(),
        });
        self.evict();
        Ok((session, queue))
    }

    /// Runs `p` with inputs by name (raw bytes); returns the outputs as (name, dtype, bytes).
    pub async fn run(
        &self,
        p: &Program,
        inputs: &HashMap<String, Vec<u8>>,
    ) -> Result<Vec<(String, DType, Vec<u8>)>> {
        let inputs = inputs
            .iter()
            .map(|(name, b)| (name.clone(), Value::Bytes(b.clone())))
            .collect();
        let outs = self.run_values(p, &inputs, false).await?;
        let mut bytes = Vec::with_capacity(outs.len());
        for (name, dtype, v) in outs {
            bytes.push((name, dtype, v.into_bytes().await?));
        }
        Ok(bytes)
    }

    /// Runs `p` with inputs by name, as host bytes or tensors an earlier run of this runtime
    /// kept on a device (copied on the device, without a trip through the host); returns the
    /// outputs as (name, dtype, value): read back, or with `keep_on_device` left on the device
    /// that computed each (a [`DeviceTensor`] a later run can take as an input).
    pub async fn run_values(
        &self,
        p: &Program,
        inputs: &HashMap<String, Value>,
        keep_on_device: bool,
    ) -> Result<Vec<(String, DType, Value)>> {
        // A graph that only writes states (a prefill chunk whose logits nobody reads) has
        // no output; one that does neither would compute nothing anyone sees.
        let writes_state = || {
            p.graph
                .iter()
                .any(|(id, t)| t.role == Role::Compute && p.graph.state_of(id).is_some())
        };
        if p.graph.outputs().is_empty() && !writes_state() {
            return Err(Error::Graph(
                "the graph has no output (mark one with output()) and writes no state".into(),
            ));
        }
        // Device tensors stay borrowed (kept alive) until the run is done with them.
        let mut held = Vec::new();
        let mut by_id = HashMap::new();
        for (name, value) in inputs {
            let ids: Vec<TensorId> = p
                .graph
                .iter()
                .filter(|(_, t)| t.role == Role::Input && !t.is_view() && &t.name == name)
                .map(|(id, _)| id)
                .collect();
            let id = match ids.as_slice() {
                [id] => *id,
                [] => {
                    return Err(Error::InvalidArgument(format!(
                        "the graph has no input named {name:?}"
                    )))
                }
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "several inputs are named {name:?}"
                    )))
                }
            };
            if let Value::Device(dt) = value {
                let t = p.graph.tensor(id);
                let buffer = dt.buffer_for(self.uid)?;
                if dt.dtype() != t.dtype || dt.shape() != t.ne {
                    return Err(Error::InvalidArgument(format!(
                        "input {name} is {} {:?}, but the device tensor given is {} {:?}",
                        t.dtype.name(),
                        t.ne,
                        dt.dtype().name(),
                        dt.shape()
                    )));
                }
                held.push((id, buffer));
            }
            by_id.insert(id, value);
        }
        let mut run_inputs = HashMap::new();
        for (&id, value) in &by_id {
            if let Value::Bytes(b) = value {
                run_inputs.insert(id, RunInput::Host(b));
            }
        }
        for (id, buffer) in &held {
            run_inputs.insert(*id, RunInput::Device(buffer));
        }
        let (session, queue) = self.session(p)?;
        let _turn = queue.enter().await;
        let outs = session
            .run_with(&run_inputs, keep_on_device, Some(&self.profile))
            .await?;
        let mut copied = self.copied.get();
        copied += session.last_run_copies();
        self.copied.set(copied);
        let names = self.device_names();
        Ok(p.graph
            .outputs()
            .into_iter()
            .zip(outs)
            .map(|(id, out)| {
                let t = p.graph.tensor(id);
                let value = match out {
                    RunOutput::Host(b) => Value::Bytes(b),
                    RunOutput::Device { device, buffer } => Value::Device(DeviceTensor::new(
                        buffer,
                        self.uid,
                        names[device].clone(),
                        t.name.clone(),
                        t.dtype,
                        t.ne,
                    )),
                };
                (t.name.clone(), t.dtype, value)
            })
            .collect())
    }

    /// Bytes copied between devices by every run so far (per run: split inputs; once:
    /// weight copies).
    pub fn copy_stats(&self) -> CopyStats {
        self.copied.get()
    }

    /// The cost model's estimates of one run of `p`; `None` when the cost model is off.
    pub fn estimates(&self, p: &Program) -> Result<Option<PlanEstimates>> {
        let (session, _) = self.session(p)?;
        let Some(planned) = self.sched.estimate(session.graph(), session.plan()) else {
            return Ok(None);
        };
        Ok(Some(PlanEstimates {
            planned,
            alone: self.sched.single_device_estimates(
                session.graph(),
                &session.plan().states.iter().copied().collect(),
            )?,
        }))
    }

    /// The plan of `p` described for people, ending with why devices are missing (one
    /// `not used:` line per note, e.g. a GPU that failed its self-check).
    pub fn explain(&self, p: &Program) -> Result<String> {
        let mut s = self.session(p)?.0.explain();
        for note in &self.notes {
            s.push_str("not used: ");
            s.push_str(note);
            s.push('\n');
        }
        Ok(s)
    }

    /// Frees the session of `p`'s shape (its device memory); a later run plans it again.
    pub fn release(&self, p: &Program) {
        let key = SessionKey::of(p);
        self.sessions.borrow_mut().retain(|c| c.key != key);
    }

    /// Frees every session (device memory of every graph run so far).
    pub fn clear(&self) {
        self.sessions.borrow_mut().clear();
    }

    /// How many plans (sessions) this runtime has made: a run of a shape it keeps makes none.
    pub fn plans_made(&self) -> u64 {
        self.plans.get()
    }

    /// Number of sessions kept.
    pub fn cached_sessions(&self) -> usize {
        self.sessions.borrow().len()
    }
}
