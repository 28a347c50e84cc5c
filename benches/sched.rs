//! Scheduler overhead: placement + splitting + memory planning time for 1,000- and
//! 10,000-node graphs over two devices (a "GPU" with some ops off, and the CPU), and the
//! planned memory against the sum of all tensors. A benchmark, not a test.
//!
//! `cargo bench --bench sched`

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    use std::rc::Rc;
    use std::time::Instant;

    use webtensor::backend::{Device, DeviceKind, PlanOptions, RestrictedDevice, Scheduler};
    use webtensor::backends::cpu::{CpuDevice, KernelSet};
    use webtensor::graph::{DType, Graph, OpKind};

    /// A transformer-like stack: per block matmul, add, norm, mul, gelu, matmul, add, softmax.
    fn graph(nodes: usize) -> Graph {
        let mut g = Graph::new();
        let d = 256;
        let mut x = g.input("x", DType::F32, &[d, 32]).expect("input");
        let w = g.weight("w", DType::Q8_0, &[d, d]).expect("weight");
        let gamma = g.weight("gamma", DType::F32, &[d]).expect("weight");
        while g.len() < nodes {
            let h = g.matmul(w, x).expect("matmul");
            let h = g.add(h, x).expect("add");
            let n = g.norm(h, 1e-5).expect("norm");
            let n = g.mul(n, gamma).expect("mul");
            let a = g.gelu(n).expect("gelu");
            let o = g.matmul(w, a).expect("matmul");
            let o = g.add(o, h).expect("add");
            x = g.softmax(o, None, 1.0).expect("softmax");
        }
        g.set_output(x).expect("output");
        g
    }

    let cpu = || -> Rc<dyn Device> { Rc::new(CpuDevice::new(KernelSet::Fast)) };
    let gpu: Rc<dyn Device> = Rc::new(RestrictedDevice::new(
        cpu(),
        "GPU",
        DeviceKind::Gpu,
        vec![OpKind::Gelu],
    ));
    let sched = match Scheduler::new(vec![gpu, cpu()]) {
        Ok(s) => s,
        Err(e) => return println!("{e}"),
    };
    println!(
        "{:>7} {:>7} {:>12} {:>14} {:>14}",
        "nodes", "splits", "plan (ms)", "planned", "sum of tensors"
    );
    for n in [1_000, 10_000] {
        let g = graph(n);
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..9 {
            let t = Instant::now();
            match sched.plan(&g, &PlanOptions::default()) {
                Ok(p) => last = Some(p),
                Err(e) => return println!("{e}"),
            }
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        let Some(p) = last else { return };
        let planned: usize = p.memory.iter().map(|m| m.compute_bytes).sum();
        let unshared: usize = p.memory.iter().map(|m| m.unshared_bytes).sum();
        println!(
            "{:>7} {:>7} {:>12.3} {:>11.1} MiB {:>11.1} MiB",
            g.len(),
            p.splits.len(),
            times[times.len() / 2],
            planned as f64 / (1 << 20) as f64,
            unshared as f64 / (1 << 20) as f64
        );
    }
}
