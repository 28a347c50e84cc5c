//! The cost model ggml lacks: measured throughput per device and copy cost, so a tiny op
//! between two CPU ops is not sent to the GPU at the price of two transfers.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::place::{Placement, SupportTable, Why};
use crate::backend::{run_graph, Backend, Device};
use crate::error::Result;
use crate::graph::{Graph, Op, Role, TensorId};

/// Measured (or given) costs of one device.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceCost {
    /// Matmul throughput, flop/s.
    pub flops_per_s: f64,
    /// Throughput of memory-bound ops, bytes read + written per second.
    pub bytes_per_s: f64,
    /// Fixed cost of one op (dispatch), seconds.
    pub op_overhead_s: f64,
    /// Host ↔ device copy bandwidth, bytes/s (`f64::INFINITY` for host memory).
    pub transfer_bytes_per_s: f64,
    /// Fixed cost of one copy (submission, mapping), seconds.
    pub transfer_overhead_s: f64,
}

/// Costs of the scheduler's devices, in the same order.
#[derive(Clone, Debug)]
pub struct CostModel {
    /// One entry per device.
    pub devices: Vec<DeviceCost>,
}

thread_local! {
    static CALIBRATED: RefCell<HashMap<String, DeviceCost>> = RefCell::new(HashMap::new());
}

fn now_s() -> f64 {
    crate::clock::now_ms() / 1e3
}

impl CostModel {
    /// Measures every device (once per device per process: results are cached).
    pub async fn calibrate(devices: &[Rc<dyn Device>]) -> Result<Self> {
        let mut out = Vec::new();
        for d in devices {
            let key = format!("{}|{}", d.name(), d.description());
            if let Some(c) = CALIBRATED.with(|c| c.borrow().get(&key).cloned()) {
                out.push(c);
                continue;
            }
            let c = calibrate_device(d).await?;
            CALIBRATED.with(|cache| cache.borrow_mut().insert(key, c.clone()));
            out.push(c);
        }
        Ok(Self { devices: out })
    }

    /// Estimated seconds to run `node` on device `d`.
    pub fn node_time(&self, graph: &Graph, node: TensorId, d: usize) -> f64 {
        let c = &self.devices[d];
        let t = graph.tensor(node);
        let bytes: usize = t.nbytes()
            + t.src
                .iter()
                .map(|&s| graph.tensor(s).nbytes())
                .sum::<usize>();
        let flops = match t.op {
            Op::MatMul => 2.0 * (t.numel() * graph.tensor(t.src[0]).ne[0]) as f64,
            _ => 0.0,
        };
        c.op_overhead_s + flops / c.flops_per_s + bytes as f64 / c.bytes_per_s
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
    /// `None` counts as the last device): every node's time, plus one transfer per tensor
    /// and device that reads it away from where it lives (inputs live with their first
    /// consumer, outputs go back to the host). Weights cost nothing per run: they are stored,
    /// or copied once, where their ops run.
    pub fn estimate(&self, graph: &Graph, device_of: &[Option<usize>]) -> f64 {
        let host = self.devices.len().saturating_sub(1);
        let dev = |id: TensorId| device_of.get(id.0).copied().flatten().unwrap_or(host);
        let mut home: HashMap<TensorId, usize> = HashMap::new();
        let mut moved: std::collections::HashSet<(TensorId, usize)> = Default::default();
        let mut total = 0.0;
        for id in graph.compute_nodes() {
            let d = dev(id);
            total += self.node_time(graph, id, d);
            for &s in &graph.tensor(id).src {
                let (root, _) = graph.storage_of(s);
                let rt = graph.tensor(root);
                let from = match rt.role {
                    Role::Weight => continue,
                    Role::Input => *home.entry(root).or_insert(d),
                    Role::Compute => dev(root),
                };
                if from != d && moved.insert((root, d)) {
                    total += self.transfer_time(rt.nbytes(), from, d);
                }
            }
        }
        for id in graph.outputs() {
            let (root, _) = graph.storage_of(id);
            if graph.tensor(root).role == Role::Compute {
                total += self.transfer_time(graph.tensor(root).nbytes(), dev(root), host);
            }
        }
        total
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
            for &id in &nodes {
                if pins.contains_key(&id) {
                    continue;
                }
                let Some(cur) = placement.device[id.0] else {
                    continue;
                };
                let cost = |d: usize, dev: &Vec<Option<usize>>| -> f64 {
                    let mut c = self.node_time(graph, id, d);
                    for &s in &graph.tensor(id).src {
                        let (root, _) = graph.storage_of(s);
                        let rt = graph.tensor(root);
                        let from = match rt.role {
                            Role::Weight => continue,
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
                    to.sort_unstable();
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
    let t0 = now_s();
    for _ in 0..reps {
        run_graph(&backend, g, &leaves, 0).await?;
    }
    Ok(((now_s() - t0) / reps as f64).max(1e-7))
}

async fn calibrate_device(d: &Rc<dyn Device>) -> Result<DeviceCost> {
    use crate::graph::DType;
    // A run of a graph includes upload and readback; subtract the cost of an empty-ish one.
    let tiny = {
        let mut g = Graph::new();
        let a = g.input("a", DType::F32, &[16])?;
        let b = g.add(a, a)?;
        g.set_output(b)?;
        time_graph(d, &g, 8).await?
    };
    let (n, k) = (128, 128);
    let mm = {
        let mut g = Graph::new();
        let w = g.input("w", DType::F32, &[k, n])?;
        let x = g.input("x", DType::F32, &[k, n])?;
        let y = g.matmul(w, x)?;
        g.set_output(y)?;
        time_graph(d, &g, 4).await?
    };
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
        flops_per_s: (2.0 * (n * n * k) as f64) / (mm - tiny).max(1e-6),
        bytes_per_s: (4.0 * (len * 4) as f64) / ew_compute.max(1e-7),
        op_overhead_s: if is_host { 1e-6 } else { tiny / 4.0 },
        transfer_bytes_per_s,
        transfer_overhead_s: if is_host { 0.0 } else { tiny / 2.0 },
    })
}
