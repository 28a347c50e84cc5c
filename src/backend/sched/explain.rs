//! `explain()`: the plan for people (ggml's GGML_SCHED_DEBUG, readable): splits, which node
//! runs where and why, the copies and their bytes, memory per device.

use std::fmt::Write;

use super::plan::Plan;
use crate::graph::Graph;

/// `1536` → `"1.5 KiB"`.
pub fn human_bytes(n: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

impl Plan {
    /// Number of input copies every run makes across all splits, and their bytes.
    pub fn copies(&self) -> (usize, usize) {
        self.splits
            .iter()
            .flat_map(|s| &s.inputs)
            .fold((0, 0), |(n, b), i| (n + 1, b + i.bytes))
    }

    /// Number of weight copies made once (resident weights read away from home), and their
    /// bytes.
    pub fn one_time_copies(&self) -> (usize, usize) {
        self.weight_copies
            .iter()
            .fold((0, 0), |(n, b), c| (n + 1, b + c.bytes))
    }

    /// Number of compute nodes per device.
    pub fn nodes_per_device(&self) -> Vec<usize> {
        let mut v = vec![0; self.devices.len()];
        for s in &self.splits {
            v[s.device] += s.nodes.len();
        }
        v
    }

    /// A readable description of the plan.
    pub fn explain(&self, graph: &Graph) -> String {
        let mut s = String::new();
        let (nc, bc) = self.copies();
        let (no, bo) = self.one_time_copies();
        let total: usize = self.nodes_per_device().iter().sum();
        let _ = writeln!(
            s,
            "plan: {total} nodes on {} device(s) [{}], {} split(s), {nc} copies per run ({}), \
             {no} weight copies once ({})",
            self.devices.len(),
            self.devices.join(", "),
            self.splits.len(),
            human_bytes(bc),
            human_bytes(bo)
        );
        for (name, what) in self.devices.iter().zip(&self.descriptions) {
            let _ = writeln!(s, "device {name}: {what}");
        }
        if let Some(cost) = &self.cost {
            let ms = |s: f64| format!("{:.3} ms", s * 1e3);
            let alone: Vec<String> = cost
                .alone
                .iter()
                .map(|(name, t)| format!("{name} {}", ms(*t)))
                .collect();
            let _ = writeln!(
                s,
                "estimate: {} per run (each device alone: {})",
                ms(cost.total_s()),
                alone.join(", ")
            );
            let origins: Vec<String> = self
                .devices
                .iter()
                .zip(&cost.origins)
                .map(|(name, o)| format!("{name} {o}"))
                .collect();
            let _ = writeln!(s, "device costs: {}", origins.join(", "));
            for (d, e) in cost.per_device.iter().enumerate() {
                if e.nodes == 0 && e.transfer_s == 0.0 {
                    continue;
                }
                let _ = writeln!(
                    s,
                    "  {}: {} = {} dispatch(es) {} + compute {} + {} submission(s) {} + \
                     copies in {}",
                    self.devices[d],
                    ms(e.total_s()),
                    e.nodes,
                    ms(e.dispatch_s),
                    ms(e.compute_s),
                    e.submits,
                    ms(e.submit_s),
                    ms(e.transfer_s)
                );
            }
        }
        for &(st, d) in &self.states {
            let t = graph.tensor(st);
            let writes = graph
                .iter()
                .filter(|(id, w)| !w.op.is_noop() && graph.state_of(*id) == Some(st))
                .count();
            let _ = writeln!(
                s,
                "state: {} {} {} on {} ({}, kept across runs, {writes} in-place write(s))",
                t.name,
                t.dtype.name(),
                t.shape_str(),
                self.devices[d],
                human_bytes(t.nbytes())
            );
        }
        for c in &self.weight_copies {
            let _ = writeln!(
                s,
                "once: {} ({}) {} -> {}",
                graph.tensor(c.tensor).name,
                human_bytes(c.bytes),
                self.devices[c.from],
                self.devices[c.to]
            );
        }
        for (i, split) in self.splits.iter().enumerate() {
            let _ = writeln!(
                s,
                "split {i} on {}: {} node(s)",
                self.devices[split.device],
                split.nodes.len()
            );
            for inp in &split.inputs {
                let _ = writeln!(
                    s,
                    "  <- {} ({}) from {}",
                    graph.tensor(inp.tensor).name,
                    human_bytes(inp.bytes),
                    self.devices[inp.from]
                );
            }
            for &id in &split.nodes {
                let t = graph.tensor(id);
                let why = self.why[id.0]
                    .as_ref()
                    .map(|w| w.to_string())
                    .unwrap_or_default();
                let _ = writeln!(
                    s,
                    "  {:<24} {:<8} {:<16} {why}",
                    t.name,
                    t.op.name(),
                    t.shape_str()
                );
            }
        }
        let _ = writeln!(s, "memory:");
        for (d, m) in self.memory.iter().enumerate() {
            let state_bytes: usize = self
                .states
                .iter()
                .filter(|&&(_, sd)| sd == d)
                .map(|&(st, _)| graph.tensor(st).nbytes())
                .sum();
            let copies: usize = self
                .weight_copies
                .iter()
                .filter(|c| c.to == d)
                .map(|c| c.bytes)
                .sum();
            let _ = writeln!(
                s,
                "  {}: compute {} planned ({} without reuse, {} in place), weights {}, \
                 states {}, weight copies kept {}",
                self.devices[d],
                human_bytes(m.compute_bytes),
                human_bytes(m.unshared_bytes),
                m.in_place,
                human_bytes(m.weight_bytes),
                human_bytes(state_bytes),
                human_bytes(copies)
            );
        }
        s
    }
}
