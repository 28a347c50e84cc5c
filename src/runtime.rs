//! The runtime users see: devices chosen once, graphs with their weights compiled to a plan
//! on first run and cached, inputs and outputs by name. The JS API wraps exactly this.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_channel::oneshot;

use crate::backend::sched::CostModel;
use crate::backend::{Buffer, BufferUsage, Device, DeviceKind, PlanOptions, Scheduler, Session};
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

/// Where bytes come from, read a piece at a time: a slice in memory, or (in the browser) a
/// JS array outside wasm memory, so that weights reach device buffers without a second full
/// copy of the file.
pub trait ByteSource {
    /// Total bytes.
    fn len(&self) -> usize;
    /// Whether there are no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies `out.len()` bytes from `offset` into `out`.
    fn read_into(&self, offset: usize, out: &mut [u8]) -> Result<()>;
}

impl<T: AsRef<[u8]>> ByteSource for T {
    fn len(&self) -> usize {
        self.as_ref().len()
    }
    fn read_into(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        let bytes = self.as_ref();
        crate::backend::check_range("read", offset, out.len(), bytes.len())?;
        out.copy_from_slice(&bytes[offset..offset + out.len()]);
        Ok(())
    }
}

/// One weight to store: which device keeps it, its dtype and shape, where its bytes are.
#[derive(Clone, Debug)]
pub struct WeightSpec {
    /// Index of the device (in the runtime's priority order, see [`Runtime::device_names`]).
    pub device: usize,
    /// Element type.
    pub dtype: DType,
    /// Shape, innermost first.
    pub ne: Vec<usize>,
    /// Its bytes in the source.
    pub range: std::ops::Range<usize>,
}

/// A weight value stored once in a device buffer of one runtime, shared by every program that
/// binds it ([`Program::weight_stored`]): graphs of several shapes over one model keep one copy
/// of the weights. Freed when the last holder drops it.
#[derive(Clone)]
pub struct StoredWeight {
    runtime: u64,
    device: usize,
    buffer: Rc<Buffer>,
    offset: usize,
    dtype: DType,
    ne: Vec<usize>,
}

impl std::fmt::Debug for StoredWeight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredWeight")
            .field("device", &self.device)
            .field("offset", &self.offset)
            .field("dtype", &self.dtype)
            .field("ne", &self.ne)
            .finish()
    }
}

impl StoredWeight {
    /// Index of the device keeping it.
    pub fn device(&self) -> usize {
        self.device
    }
}

/// A graph with its weight values (owned bytes, or weights stored on the runtime's devices):
/// what a runtime runs.
#[derive(Clone, Debug)]
pub struct Program {
    graph: Graph,
    weights: HashMap<TensorId, Vec<u8>>,
    stored: HashMap<TensorId, StoredWeight>,
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
            stored: HashMap::new(),
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

    /// Adds a weight whose value is stored on a device ([`Runtime::store_weights`]); runs of
    /// this program read it there (ops on it run on that device unless another offloads them).
    pub fn weight_stored(&mut self, name: &str, w: &StoredWeight) -> Result<TensorId> {
        let id = self.graph_mut().weight(name, w.dtype, &w.ne)?;
        self.stored.insert(id, w.clone());
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

/// Bytes copied from a [`ByteSource`] to a device at a time.
const STORE_CHUNK: usize = 1 << 20;

/// Devices, a scheduler over them, and the sessions of the programs it ran.
pub struct Runtime {
    uid: u64,
    sched: Scheduler,
    notes: Vec<String>,
    sessions: RefCell<HashMap<u64, CachedSession>>,
}

/// A program's session, the program version it was planned for, and its run queue.
struct CachedSession {
    version: u64,
    session: Rc<Session>,
    queue: Rc<RunQueue>,
}

/// One run at a time per session (a second would overwrite the first's buffers): later runs
/// wait for their turn, in call order, instead of failing.
#[derive(Default)]
struct RunQueue {
    busy: Cell<bool>,
    waiting: RefCell<VecDeque<oneshot::Sender<()>>>,
}

impl RunQueue {
    /// Resolves when it is this caller's turn; the turn ends when the returned guard drops.
    async fn enter(self: Rc<Self>) -> Turn {
        if self.busy.replace(true) {
            let (tx, rx) = oneshot::channel();
            self.waiting.borrow_mut().push_back(tx);
            // The run before hands the turn over (`busy` stays set); the sender is only
            // dropped unsent with the queue itself.
            let _ = rx.await;
        }
        Turn(self)
    }
}

/// A run's turn: passes it to the next waiting run (skipping abandoned waits) when dropped,
/// however the run ended.
struct Turn(Rc<RunQueue>);

impl Drop for Turn {
    fn drop(&mut self) {
        loop {
            let next = self.0.waiting.borrow_mut().pop_front();
            match next {
                Some(tx) => {
                    if tx.send(()).is_ok() {
                        return;
                    }
                }
                None => {
                    self.0.busy.set(false);
                    return;
                }
            }
        }
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
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
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

    /// The device each weight of `graph` would be kept on: the first (highest-priority)
    /// device running an op that reads it, when the weights are stored nowhere yet and the cost
    /// model is off (weights go where their ops can run, not where one small shape is cheapest).
    pub fn weight_homes(&self, graph: &Graph) -> Result<HashMap<TensorId, usize>> {
        let mut sched = Scheduler::new(self.sched.devices().to_vec())?;
        sched.set_cost_model(None);
        let plan = sched.plan(graph, &PlanOptions::default())?;
        Ok(graph
            .iter()
            .filter(|(_, t)| t.role == Role::Weight)
            .filter_map(|(id, _)| {
                let devs = &plan.weight_devices[id.0];
                devs.iter().min().map(|&d| (id, d))
            })
            .collect())
    }

    /// Stores weights on their devices, reading `src` a chunk at a time (never a second full
    /// copy of it), packed into as few buffers per device as the device's size limit allows.
    /// `progress(done, total)` is called in bytes.
    pub fn store_weights(
        &self,
        specs: &[WeightSpec],
        src: &dyn ByteSource,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<StoredWeight>> {
        let devices = self.sched.devices();
        let mut probe = Graph::new();
        let mut placed = Vec::with_capacity(specs.len()); // (buffer index, offset) per spec
                                                          // Per device: the buffers' sizes, then the buffers.
        let mut sizes: Vec<Vec<usize>> = vec![Vec::new(); devices.len()];
        for (i, s) in specs.iter().enumerate() {
            let dev = devices
                .get(s.device)
                .ok_or_else(|| Error::NoDevice(format!("weight {i} is for device {}", s.device)))?;
            let t = probe.weight(&format!("w{i}"), s.dtype, &s.ne)?;
            let t = probe.tensor(t);
            if s.range.len() != t.nbytes() || s.range.end > src.len() {
                return Err(Error::InvalidArgument(format!(
                    "weight {i} ({:?} {:?}) needs {} bytes, its range {:?} holds {} of a \
                     {}-byte source",
                    s.dtype,
                    s.ne,
                    t.nbytes(),
                    s.range,
                    s.range.len(),
                    src.len()
                )));
            }
            let bt = dev.buffer_type();
            let (align, max) = (bt.alignment().max(1), bt.max_size());
            let size = bt.alloc_size(t);
            if size > max {
                return Err(Error::AllocTooLarge {
                    size,
                    max,
                    buffer_type: bt.name().to_string(),
                });
            }
            let bufs = &mut sizes[s.device];
            let fits = |used: usize| used.next_multiple_of(align) + size <= max;
            if !bufs.last().is_some_and(|&u| fits(u)) {
                bufs.push(0);
            }
            let used = bufs.last_mut().expect("a buffer was just pushed");
            let off = used.next_multiple_of(align);
            *used = off + size;
            placed.push((bufs.len() - 1, off));
        }
        let mut buffers: Vec<Vec<Rc<Buffer>>> = Vec::with_capacity(devices.len());
        for (dev, sizes) in devices.iter().zip(&sizes) {
            let mut bufs = Vec::with_capacity(sizes.len());
            for &size in sizes {
                let b = dev.buffer_type().alloc(size)?;
                b.set_usage(BufferUsage::Weights);
                bufs.push(b);
            }
            buffers.push(bufs);
        }
        let total: usize = specs.iter().map(|s| s.range.len()).sum();
        let mut done = 0;
        let mut stage = vec![0u8; STORE_CHUNK.min(total)];
        let mut out = Vec::with_capacity(specs.len());
        for (s, &(b, off)) in specs.iter().zip(&placed) {
            let buffer = buffers[s.device][b].clone();
            let mut at = 0;
            while at < s.range.len() {
                let n = (s.range.len() - at).min(STORE_CHUNK);
                src.read_into(s.range.start + at, &mut stage[..n])?;
                buffer.write(off + at, &stage[..n])?;
                at += n;
                done += n;
                progress(done, total);
            }
            out.push(StoredWeight {
                runtime: self.uid,
                device: s.device,
                buffer,
                offset: off,
                dtype: s.dtype,
                ne: s.ne.clone(),
            });
        }
        Ok(out)
    }

    fn session(&self, p: &Program) -> Result<(Rc<Session>, Rc<RunQueue>)> {
        if let Some(c) = self.sessions.borrow().get(&p.uid) {
            if c.version == p.version {
                return Ok((c.session.clone(), c.queue.clone()));
            }
        }
        let mut opts = PlanOptions::default();
        let mut external = HashMap::new();
        let names = self.device_names();
        for (&id, w) in &p.stored {
            if w.runtime != self.uid {
                return Err(Error::InvalidArgument(format!(
                    "weight {} is stored on another runtime's devices",
                    p.graph.tensor(id).name
                )));
            }
            opts.resident.insert(id, names[w.device].clone());
            external.insert(id, (w.buffer.clone(), w.offset));
        }
        let plan = self.sched.plan(&p.graph, &opts)?;
        let mut session = Session::new(&self.sched, &p.graph, plan, &external)?;
        session.set_weights(&p.weights)?;
        let (session, queue) = (Rc::new(session), Rc::new(RunQueue::default()));
        let cached = CachedSession {
            version: p.version,
            session: session.clone(),
            queue: queue.clone(),
        };
        self.sessions.borrow_mut().insert(p.uid, cached);
        Ok((session, queue))
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
        let (session, queue) = self.session(p)?;
        let _turn = queue.enter().await;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    /// Runs wait their turn in call order; an abandoned wait is skipped; the queue is free
    /// again after the last turn.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn runs_wait_their_turn_in_order() {
        let mut cx = Context::from_waker(Waker::noop());
        let q = Rc::new(RunQueue::default());
        let Poll::Ready(first) = pin!(q.clone().enter()).as_mut().poll(&mut cx) else {
            panic!("a free queue makes the caller wait");
        };
        let mut second = Box::pin(q.clone().enter());
        let mut abandoned = Box::pin(q.clone().enter());
        let mut third = Box::pin(q.clone().enter());
        assert!(second.as_mut().poll(&mut cx).is_pending());
        assert!(abandoned.as_mut().poll(&mut cx).is_pending());
        assert!(third.as_mut().poll(&mut cx).is_pending());
        drop(abandoned);
        drop(first);
        let Poll::Ready(second) = second.as_mut().poll(&mut cx) else {
            panic!("the second run did not get the turn");
        };
        assert!(third.as_mut().poll(&mut cx).is_pending());
        drop(second);
        let Poll::Ready(third) = third.as_mut().poll(&mut cx) else {
            panic!("the abandoned wait was not skipped");
        };
        drop(third);
        assert!(!q.busy.get());
    }
}
