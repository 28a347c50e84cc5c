//! The cost model ggml lacks: measured throughput per device, copy cost and the fixed cost
//! of each dispatch and each submission, so a tiny op between two CPU ops is not sent to the
//! GPU at the price of two transfers, and a small batch whose GPU run would be mostly
//! dispatch and submission overhead stays on the CPU.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::place::{Placement, SupportTable, Why};
use crate::backend::{run_graph, Backend, Device};
use crate::error::{Error, Result};
use crate::graph::{Graph, Op, Role, TensorId};

/// Measured (or given) costs of one device.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceCost {
    /// Matmul throughput, flop/s.
    pub flops_per_s: f64,
    /// Throughput of memory-bound ops, bytes read + written per second.
    pub bytes_per_s: f64,
    /// Fixed cost of one op (dispatch: encoding and launching one kernel), seconds.
    pub op_overhead_s: f64,
    /// Fixed cost of one run of a split on the device (submission and waiting for it),
    /// seconds; paid once per split, whatever its size.
    pub submit_overhead_s: f64,
    /// Host ↔ device copy bandwidth, bytes/s (`f64::INFINITY` for host memory).
    pub transfer_bytes_per_s: f64,
    /// Fixed cost of one copy (submission, mapping), seconds.
    pub transfer_overhead_s: f64,
}

/// Where the estimated time of one run goes on one device.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceEstimate {
    /// Compute nodes placed there (each one dispatch).
    pub nodes: usize,
    /// Their fixed per-dispatch cost, seconds.
    pub dispatch_s: f64,
    /// Their flop and byte cost, seconds.
    pub compute_s: f64,
    /// Splits run there (each one submission).
    pub submits: usize,
    /// Their fixed per-submission cost, seconds.
    pub submit_s: f64,
    /// Copies into the device (split inputs; outputs: to the host), seconds.
    pub transfer_s: f64,
}

impl DeviceEstimate {
    /// The device's share of the run, seconds.
    pub fn total_s(&self) -> f64 {
        self.dispatch_s + self.compute_s + self.submit_s + self.transfer_s
    }
}

/// The estimate that decided a plan: the planned placement's time per device, and every
/// device alone (the placements the scheduler compared it with), in seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanCost {
    /// Per device of the plan, in priority order.
    pub per_device: Vec<DeviceEstimate>,
    /// Each device alone (every node it supports on it), by device name.
    pub alone: Vec<(String, f64)>,
    /// Where each device's costs came from, in priority order.
    pub origins: Vec<CostOrigin>,
}

/// Where a device's costs came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CostOrigin {
    /// Measured by this runtime's creation, taking this many milliseconds.
    Measured(f64),
    /// Measured earlier in this process (another runtime on the same device).
    Process,
    /// Read from a saved calibration ([`import_calibrations`]): nothing measured at load.
    Saved,
    /// Given by the caller ([`CostModel::new`]).
    Given,
}

impl std::fmt::Display for CostOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CostOrigin::Measured(ms) => write!(f, "measured at load ({ms:.0} ms)"),
            CostOrigin::Process => write!(f, "measured earlier in this process"),
            CostOrigin::Saved => write!(f, "from the saved calibration"),
            CostOrigin::Given => write!(f, "given"),
        }
    }
}

impl PlanCost {
    /// The planned placement's estimated seconds per run.
    pub fn total_s(&self) -> f64 {
        self.per_device.iter().map(DeviceEstimate::total_s).sum()
    }
}

/// Costs of the scheduler's devices, in the same order.
#[derive(Clone, Debug)]
pub struct CostModel {
    /// One entry per device.
    pub devices: Vec<DeviceCost>,
    /// Where each entry came from.
    pub origins: Vec<CostOrigin>,
}

/// A calibration cached in this process: its costs, and whether it was measured here.
#[derive(Clone)]
struct Cached {
    cost: DeviceCost,
    saved: bool,
}

thread_local! {
    static CALIBRATED: RefCell<HashMap<String, Cached>> = RefCell::new(HashMap::new());
}

/// The calibration key of a device: this crate's version (kernels and the calibration
/// itself change between versions), the device's name and its description (adapter, kernel
/// set, threads), so a saved calibration is only used for the same device in the same build.
pub fn calibration_key(d: &dyn Device) -> String {
    format!(
        "webtensor {}|{}|{}",
        env!("CARGO_PKG_VERSION"),
        d.name(),
        d.description()
    )
    .replace(['\t', '\n'], " ")
}

const COST_FIELDS: usize = 6;

fn cost_fields(c: &DeviceCost) -> [f64; COST_FIELDS] {
    [
        c.flops_per_s,
        c.bytes_per_s,
        c.op_overhead_s,
        c.submit_overhead_s,
        c.transfer_bytes_per_s,
        c.transfer_overhead_s,
    ]
}

/// Forgets every calibration this process holds (measured or imported): the next
/// [`CostModel::calibrate`] measures again.
pub fn forget_calibrations() {
    CALIBRATED.with(|c| c.borrow_mut().clear());
}

/// Every calibration this process holds (measured or imported), as text to save and pass
/// to [`import_calibrations`] in a later process (the browser's next page load): one line
/// per device, its key, a tab, and six numbers.
pub fn export_calibrations() -> String {
    CALIBRATED.with(|c| {
        let c = c.borrow();
        let mut keys: Vec<&String> = c.keys().collect();
        crate::sort::few(&mut keys);
        keys.iter()
            .map(|k| {
                let v = cost_fields(&c[*k].cost).map(|x| format!("{x:e}"));
                format!("{k}\t{}\n", v.join(" "))
            })
            .collect()
    })
}

/// Seeds this process's calibrations from [`export_calibrations`]'s text, so runtimes on
/// those devices skip measuring them. Lines of another crate version are skipped (not an
/// error: the cache outlives upgrades); a malformed line fails the whole import with the
/// line named, and nothing is taken. Returns how many calibrations were taken.
pub fn import_calibrations(text: &str) -> Result<usize> {
    let prefix = format!("webtensor {}|", env!("CARGO_PKG_VERSION"));
    let mut taken = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: &str| Error::InvalidArgument(format!("calibration line {}: {why}", i + 1));
        let (key, nums) = line
            .split_once('\t')
            .ok_or_else(|| bad("no tab after the key"))?;
        let v: Vec<f64> = nums
            .split_whitespace()
            .map(|x| {
                x.parse::<f64>()
                    .map_err(|_| bad(&format!("{x:?} is not a number")))
            })
            .collect::<Result<_>>()?;
        if v.len() != COST_FIELDS {
            return Err(bad(&format!("{} numbers, expected {COST_FIELDS}", v.len())));
        }
        // Throughputs positive (the transfer rate may be infinite: host memory); overheads
        // finite and not negative.
        let rate = |x: f64| x > 0.0 && !x.is_nan();
        let overhead = |x: f64| x.is_finite() && x >= 0.0;
        if !(rate(v[0]) && v[0].is_finite() && rate(v[1]) && v[1].is_finite() && rate(v[4]))
            || !(overhead(v[2]) && overhead(v[3]) && overhead(v[5]))
        {
            return Err(bad(
                "a throughput that is not positive or an overhead that is negative",
            ));
        }
        if !key.starts_with(&prefix) {
            continue;
        }
        let cost = DeviceCost {
            flops_per_s: v[0],
            bytes_per_s: v[1],
            op_overhead_s: v[2],
            submit_overhead_s: v[3],
            transfer_bytes_per_s: v[4],
            transfer_overhead_s: v[5],
        };
        taken.push((key.to_string(), cost));
    }
    let n = taken.len();
    CALIBRATED.with(|c| {
        let mut c = c.borrow_mut();
        for (key, cost) in taken {
            c.insert(key, Cached { cost, saved: true });
        }
    });
    Ok(n)
}

fn now_s() -> f64 {
    crate::clock::now_ms() / 1e3
}

impl CostModel {
    /// Given costs, one per device.
    pub fn new(devices: Vec<DeviceCost>) -> Self {
        let origins = vec![CostOrigin::Given; devices.len()];
        Self { devices, origins }
    }

    /// Measures every device, once per device per process: results are cached, and a
    /// calibration imported with [`import_calibrations`] is used as it is.
    pub async fn calibrate(devices: &[Rc<dyn Device>]) -> Result<Self> {
        let mut out = Vec::new();
        let mut origins = Vec::new();
        for d in devices {
            let key = calibration_key(d.as_ref());
            if let Some(c) = CALIBRATED.with(|c| c.borrow().get(&key).cloned()) {
                out.push(c.cost);
                origins.push(if c.saved {
                    CostOrigin::Saved
                } else {
                    CostOrigin::Process
                });
                continue;
            }
            let t0 = now_s();
            let cost = calibrate_device(d).await?;
            origins.push(CostOrigin::Measured((now_s() - t0) * 1e3));
            CALIBRATED.with(|c| {
                c.borrow_mut().insert(
                    key,
                    Cached {
                        cost: cost.clone(),
                        saved: false,
                    },
                )
            });
            out.push(cost);
        }
        Ok(Self {
            devices: out,
            origins,
        })
    }

    /// Estimated seconds to run `node` on device `d`: its dispatch and its compute.
    pub fn node_time(&self, graph: &Graph, node: TensorId, d: usize) -> f64 {
        self.devices[d].op_overhead_s + self.compute_time(graph, node, d)
    }

    /// The flop and byte part of [`node_time`](Self::node_time).
    fn compute_time(&self, graph: &Graph, node: TensorId, d: usize) -> f64 {
        let c = &self.devices[d];
        let t = graph.tensor(node);
        let bytes: usize = t.nbytes()
            + t.src
                .iter()
                .map(|&s| graph.tensor(s).nbytes())
                .sum::<usize>();
        // Every op listed: a new one says here whether its arithmetic counts.
        let flops = match t.op {
            Op::MatMul => 2.0 * (t.numel() * graph.tensor(t.src[0]).ne[0]) as f64,
            // q·k and p·v per (query, head, key): 2 (d + d_v) flops.
            Op::Attention { .. } => {
                let q = graph.tensor(t.src[0]);
                let n_kv = graph.tensor(t.src[1]).ne[1];
                2.0 * (q.numel() / q.ne[0].max(1) * n_kv * (q.ne[0] + t.ne[0])) as f64
            }
            // Bound by the bytes they move.
            Op::Leaf
            | Op::View
            | Op::GetRows
            | Op::SetRows
            | Op::Binary(_)
            | Op::Scale(_)
            | Op::Clamp { .. }
            | Op::SoftMax { .. }
            | Op::Norm { .. }
            | Op::RmsNorm { .. }
            | Op::Unary(_)
            | Op::Rope(_)
            | Op::Cpy
            | Op::Concat { .. }
            | Op::SumRows
            | Op::Mean
            | Op::Argmax => 0.0,
        };
        flops / c.flops_per_s + bytes as f64 / c.bytes_per_s
    }

    /// Estimated seconds to copy `bytes` from device `a` to device `b`.
    pub fn transfer_time(&self, bytes: usize, a: usize, b: usize) -> f64 {
        if a == b {
            return 0.0;
        }
        let (ca, cb) = (&self.devices[a], &self.devices[b]);
        ca.transfer_overhead_s.max(cb.transfer_overhead_s)
            + bytes as f64 / ca.transfer_bytes_per_s.min(cb.transfer_bytes_per_s)
    }

    /// Estimated seconds of one run of `graph` placed as `device_of` says (compute nodes;
    /// `None` counts as the last device): the sum of [`breakdown`](Self::breakdown).
    pub fn estimate(&self, graph: &Graph, device_of: &[Option<usize>]) -> f64 {
        self.breakdown(graph, device_of)
            .iter()
            .map(DeviceEstimate::total_s)
            .sum()
    }

    /// Where one run of `graph` placed as `device_of` says spends its time, per device:
    /// every node's dispatch and compute, one submission per split (a run of consecutive
    /// nodes on one device), plus one transfer per tensor and device that reads it away
    /// from where it lives (inputs live with their first consumer, outputs go back to the
    /// host). Weights cost nothing per run: they are stored, or copied once, where their
    /// ops run.
    pub fn breakdown(&self, graph: &Graph, device_of: &[Option<usize>]) -> Vec<DeviceEstimate> {
        let host = self.devices.len().saturating_sub(1);
        let dev = |id: TensorId| device_of.get(id.0).copied().flatten().unwrap_or(host);
        let mut home: HashMap<TensorId, usize> = HashMap::new();
        let mut moved: std::collections::HashSet<(TensorId, usize)> = Default::default();
        let mut out = vec![DeviceEstimate::default(); self.devices.len()];
        let mut prev = None;
        for id in graph.compute_nodes() {
            let d = dev(id);
            let e = &mut out[d];
            e.nodes += 1;
            e.dispatch_s += self.devices[d].op_overhead_s;
            e.compute_s += self.compute_time(graph, id, d);
            if prev != Some(d) {
                e.submits += 1;
                e.submit_s += self.devices[d].submit_overhead_s;
                prev = Some(d);
            }
            for &s in &graph.tensor(id).src {
                let (root, _) = graph.storage_of(s);
                let rt = graph.tensor(root);
                let from = match rt.role {
                    // Weights and states live where their ops run (placed there).
                    Role::Weight | Role::State => continue,
                    Role::Input => *home.entry(root).or_insert(d),
                    Role::Compute => dev(root),
                };
                if from != d && moved.insert((root, d)) {
                    out[d].transfer_s += self.transfer_time(rt.nbytes(), from, d);
                }
            }
        }
        for id in graph.outputs() {
            let (root, _) = graph.storage_of(id);
            if graph.tensor(root).role == Role::Compute {
                let from = dev(root);
                out[host].transfer_s += self.transfer_time(graph.tensor(root).nbytes(), from, host);
            }
        }
        out
    }

    /// Moves unpinned nodes to the device where compute plus transfers cost least.
    pub(crate) fn refine(
        &self,
        graph: &Graph,
        devices: &[Rc<dyn Device>],
        sup: &mut SupportTable<'_>,
        placement: &mut Placement,
        pins: &HashMap<TensorId, usize>,
    ) {
        if self.devices.len() != devices.len() {
            return;
        }
        let host = devices.len() - 1;
        let nodes = graph.compute_nodes();
        let mut consumers: HashMap<TensorId, Vec<TensorId>> = HashMap::new();
        for &id in &nodes {
            for &s in &graph.tensor(id).src {
                consumers.entry(graph.storage_of(s).0).or_default().push(id);
            }
        }
        for _sweep in 0..2 {
            for (i, &id) in nodes.iter().enumerate() {
                if pins.contains_key(&id) {
                    continue;
                }
                let Some(cur) = placement.device[id.0] else {
                    continue;
                };
                let cost = |d: usize, dev: &Vec<Option<usize>>| -> f64 {
                    let mut c = self.node_time(graph, id, d);
                    // On a device neither neighbour in run order uses, the node is a split
                    // of its own: one more submission.
                    let on = |j: Option<usize>| {
                        j.and_then(|j| nodes.get(j))
                            .is_some_and(|n| dev[n.0].unwrap_or(host) == d)
                    };
                    if !on(i.checked_sub(1)) && !on(Some(i + 1)) {
                        c += self.devices[d].submit_overhead_s;
                    }
                    for &s in &graph.tensor(id).src {
                        let (root, _) = graph.storage_of(s);
                        let rt = graph.tensor(root);
                        let from = match rt.role {
                            Role::Weight | Role::State => continue,
                            Role::Input => host,
                            Role::Compute => dev[root.0].unwrap_or(host),
                        };
                        c += self.transfer_time(rt.nbytes(), from, d);
                    }
                    let mut to: Vec<usize> = consumers
                        .get(&id)
                        .map(|v| v.iter().filter_map(|&u| dev[u.0]).collect())
                        .unwrap_or_default();
                    if graph.tensor(id).is_output {
                        to.push(host);
                    }
                    crate::sort::few(&mut to);
                    to.dedup();
                    c + to
                        .iter()
                        .map(|&b| self.transfer_time(graph.tensor(id).nbytes(), d, b))
                        .sum::<f64>()
                };
                let now = cost(cur, &placement.device);
                let best = (0..devices.len())
                    .filter(|&d| d != cur && sup.yes(id, d))
                    .map(|d| (d, cost(d, &placement.device)))
                    .min_by(|a, b| a.1.total_cmp(&b.1));
                if let Some((d, c)) = best {
                    if c < now * 0.9 {
                        placement.device[id.0] = Some(d);
                        placement.why[id.0] = Some(Why::Cost);
                    }
                }
            }
        }
        // The promise: never slower (by the estimate) than the best plan on one device.
        let mut best = self.estimate(graph, &placement.device);
        for d in 0..devices.len() {
            let single = all_on(graph, sup, &placement.device, d, pins);
            let t = self.estimate(graph, &single);
            if t < best {
                best = t;
                for (id, (now, was)) in single.iter().zip(&mut placement.device).enumerate() {
                    if now != was {
                        *was = *now;
                        placement.why[id] = Some(Why::Cost);
                    }
                }
            }
        }
    }
}

/// `device_of` with every compute node that device `d` supports, and `pins` leave free,
/// moved to `d` (the rest stays where it was placed): "everything on `d`" as far as it goes.
pub(crate) fn all_on(
    graph: &Graph,
    sup: &mut SupportTable<'_>,
    device_of: &[Option<usize>],
    d: usize,
    pins: &HashMap<TensorId, usize>,
) -> Vec<Option<usize>> {
    let mut out = device_of.to_vec();
    for id in graph.compute_nodes() {
        if !pins.contains_key(&id) && sup.yes(id, d) {
            out[id.0] = Some(d);
        }
    }
    out
}

async fn time_graph(device: &Rc<dyn Device>, g: &Graph, reps: usize) -> Result<f64> {
    let leaves: HashMap<TensorId, Vec<u8>> = g
        .iter()
        .filter(|(_, t)| t.op == Op::Leaf)
        .map(|(id, t)| (id, vec![0u8; t.nbytes()]))
        .collect();
    let backend = Backend::new(device.clone())?;
    run_graph(&backend, g, &leaves, 0).await?;
    // The median run: one stall (a collection, a thread waking late) moves a mean far, and
    // the estimates below subtract one timing from another.
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let t0 = now_s();
        run_graph(&backend, g, &leaves, 0).await?;
        times.push(now_s() - t0);
    }
    crate::sort::by_key(&mut times, |&t| crate::sort::f64_key(t));
    Ok(times[times.len() / 2].max(1e-7))
}

/// Median seconds of an f32 matmul `[k, m] x [k, n]` on `d`.
async fn time_matmul(d: &Rc<dyn Device>, (m, n, k): (usize, usize, usize)) -> Result<f64> {
    use crate::graph::DType;
    let mut g = Graph::new();
    let w = g.input("w", DType::F32, &[k, m])?;
    let x = g.input("x", DType::F32, &[k, n])?;
    let y = g.matmul(w, x)?;
    g.set_output(y)?;
    time_graph(d, &g, 5).await
}

async fn calibrate_device(d: &Rc<dyn Device>) -> Result<DeviceCost> {
    use crate::graph::DType;
    // A chain of `n` tiny adds: one submission, n dispatches, one tiny upload and readback.
    let chain = |n: usize| -> Result<Graph> {
        let mut g = Graph::new();
        let a = g.input("a", DType::F32, &[16])?;
        let mut x = a;
        for _ in 0..n {
            x = g.add(x, a)?;
        }
        g.set_output(x)?;
        Ok(g)
    };
    const CHAIN: usize = 33;
    let tiny = time_graph(d, &chain(1)?, 9).await?;
    let long = time_graph(d, &chain(CHAIN)?, 5).await?;
    // Per dispatch: what each added op costs; the rest of the one-op run is fixed per run.
    let dispatch = ((long - tiny) / (CHAIN - 1) as f64).max(1e-7);
    let fixed = (tiny - dispatch).max(1e-7);
    // Matmul throughput from two sizes, k and 4k: their difference is compute alone (25
    // Mflop, well above a software adapter's per-run noise). A matmul run less the one-op
    // run also counted the matmul's own fixed costs (its bigger buffers, the CPU's thread
    // team) as compute: the CPU measured 2–9 GFLOP/s that way in Chromium, below
    // SwiftShader's 2–3 now and then, and `'auto'` put MiniLM on SwiftShader (150x slower).
    let (m, n, k) = (256, 64, 256);
    let small = time_matmul(d, (m, n, k)).await?;
    let big = time_matmul(d, (m, n, 4 * k)).await?;
    let len = 1 << 18;
    let ew = {
        let mut g = Graph::new();
        let a = g.input("a", DType::F32, &[len])?;
        let b = g.scale(a, 2.0)?;
        let c = g.scale(b, 2.0)?;
        g.set_output(c)?;
        time_graph(d, &g, 4).await?
    };
    let is_host = d.buffer_type().is_host();
    // elementwise graph: upload 1 MiB + readback 1 MiB + 2 ops over 2 MiB each
    let xfer_bytes = 2.0 * (len * 4) as f64;
    let transfer_bytes_per_s = if is_host {
        f64::INFINITY
    } else {
        xfer_bytes / (ew * 0.5).max(1e-7)
    };
    let ew_compute = if is_host { ew } else { ew * 0.5 };
    Ok(DeviceCost {
        flops_per_s: (2.0 * (m * n * 3 * k) as f64) / (big - small).max(1e-6),
        bytes_per_s: (4.0 * (len * 4) as f64) / ew_compute.max(1e-7),
        op_overhead_s: if is_host { 1e-6 } else { dispatch },
        // The fixed part of a one-op run: a submission and two tiny copies (upload,
        // readback); half of it to the submission, a quarter to each copy.
        submit_overhead_s: if is_host { 0.0 } else { fixed / 2.0 },
        transfer_bytes_per_s,
        transfer_overhead_s: if is_host { 0.0 } else { fixed / 4.0 },
    })
}
