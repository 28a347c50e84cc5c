//! The runtime users see: devices chosen once, graphs with their weights compiled to a plan
//! on first run and cached, inputs and outputs by name. The JS API wraps exactly this.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::sched::CostModel;
use crate::backend::{Device, DeviceKind, PlanOptions, Scheduler, Session};
use crate::error::{Error, Result};
use crate::graph::{row_from_f32, DType, Graph, Role, TensorId};

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

impl std::str::FromStr for DeviceChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "webgpu" | "gpu" => Ok(Self::WebGpu),
            "cpu" => Ok(Self::Cpu),
            _ => Err(Error::InvalidArgument(format!(
                "devices must be \"auto\", \"webgpu\" or \"cpu\", got {s:?}"
            ))),
        }
    }
}

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// A graph with its weight values: what a runtime runs.
#[derive(Clone, Debug)]
pub struct Program {
    graph: Graph,
    weights: HashMap<TensorId, Vec<u8>>,
    uid: u64,
    version: u64,
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
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            version: 0,
        }
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
        let numel: usize = ne.iter().product();
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
                row_from_f32(dtype, src, dst);
            }
        }
        self.weight_bytes(name, dtype, ne, bytes)
    }
}

/// Devices, a scheduler over them, and the sessions of the programs it ran.
pub struct Runtime {
    sched: Scheduler,
    notes: Vec<String>,
    sessions: RefCell<HashMap<u64, CachedSession>>,
}

/// A program's session, the program version it was planned for, and whether a run is on.
struct CachedSession {
    version: u64,
    session: Rc<Session>,
    busy: Rc<Cell<bool>>,
}

/// Clears a session's busy flag when a run ends, however it ends.
struct BusyGuard(Rc<Cell<bool>>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl Runtime {
    /// A runtime on `choice`'s devices; `cost_model` calibrates each device once (cached).
    pub async fn new(choice: DeviceChoice, cost_model: bool) -> Result<Self> {
        let reg = crate::backends::registry().await;
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
                    reasons.join("; ")
                )))
            }
        };
        Self::with_devices(devices, cost_model, reasons).await
    }

    /// A runtime over given devices (priority order).
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
            sched,
            notes,
            sessions: RefCell::new(HashMap::new()),
        })
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

    fn session(&self, p: &Program) -> Result<(Rc<Session>, Rc<Cell<bool>>)> {
        if let Some(c) = self.sessions.borrow().get(&p.uid) {
            if c.version == p.version {
                return Ok((c.session.clone(), c.busy.clone()));
            }
        }
        let plan = self.sched.plan(&p.graph, &PlanOptions::default())?;
        let mut session = Session::new(&self.sched, &p.graph, plan)?;
        session.set_weights(&p.weights)?;
        let (session, busy) = (Rc::new(session), Rc::new(Cell::new(false)));
        let cached = CachedSession {
            version: p.version,
            session: session.clone(),
            busy: busy.clone(),
        };
        self.sessions.borrow_mut().insert(p.uid, cached);
        Ok((session, busy))
    }

    /// Runs `p` with inputs by name (raw bytes); returns the outputs as (name, dtype, bytes).
    pub async fn run(
        &self,
        p: &Program,
        inputs: &HashMap<String, Vec<u8>>,
    ) -> Result<Vec<(String, DType, Vec<u8>)>> {
        if p.graph.outputs().is_empty() {
            return Err(Error::Graph(
                "the graph has no output (mark one with output())".into(),
            ));
        }
        let mut by_id = HashMap::new();
        for (name, bytes) in inputs {
            let ids: Vec<TensorId> = p
                .graph
                .iter()
                .filter(|(_, t)| t.role == Role::Input && !t.is_view() && &t.name == name)
                .map(|(id, _)| id)
                .collect();
            match ids.as_slice() {
                [id] => by_id.insert(*id, bytes.clone()),
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
        }
        let (session, busy) = self.session(p)?;
        // One run at a time per program: a second one would overwrite the first's buffers.
        if busy.replace(true) {
            return Err(Error::InvalidArgument(
                "this graph is already running; await the previous run first".into(),
            ));
        }
        let _guard = BusyGuard(busy);
        let outs = session.run(&by_id).await?;
        Ok(p.graph
            .outputs()
            .into_iter()
            .zip(outs)
            .map(|(id, b)| (p.graph.tensor(id).name.clone(), p.graph.tensor(id).dtype, b))
            .collect())
    }

    /// The plan of `p` described for people.
    pub fn explain(&self, p: &Program) -> Result<String> {
        Ok(self.session(p)?.0.explain())
    }

    /// Frees the session of one program (its device memory); a later run plans it again.
    pub fn release(&self, p: &Program) {
        self.sessions.borrow_mut().remove(&p.uid);
    }

    /// Frees every session (device memory of every program run so far).
    pub fn clear(&self) {
        self.sessions.borrow_mut().clear();
    }
}
