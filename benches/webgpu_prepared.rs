//! Per-run cost of a WebGPU session prepared once (pipelines, bind groups, parameters kept)
//! against the same session computing each split directly (planned and bound again every
//! run), on a chain of small ops where that overhead is the run, same process, interleaved.
//! A benchmark: it prints numbers (median ms per run, and GPU objects created per run).
//!
//! ```text
//! cargo bench --profile dev --bench webgpu_prepared    # BENCH_REPS=50 NODES=200
//! ```

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use std::collections::HashMap;
    use std::rc::Rc;
    use std::time::Instant;

    use pollster::block_on;
    use webtensor::backend::{Device, PlanOptions, Scheduler, Session};
    use webtensor::backends::cpu::{CpuDevice, KernelSet};
    use webtensor::backends::webgpu::WebGpuReg;
    use webtensor::graph::{DType, Graph};

    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (reps, nodes) = (env("BENCH_REPS", 50), env("NODES", 200));
    let reg = block_on(WebGpuReg::new());
    let Some(gpu) = reg.device() else {
        println!("skipped: no WebGPU ({})", reg_reason(&reg));
        return Ok(());
    };
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[64, 8])?;
    let mut h = x;
    for k in 0..nodes {
        h = if k % 2 == 0 {
            g.add(h, x)?
        } else {
            g.scale(h, 0.5)?
        };
    }
    g.set_output(h)?;
    let cpu: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Fast));
    let sched = Scheduler::new(vec![gpu.clone() as Rc<dyn Device>, cpu])?;
    let plan = sched.plan(&g, &PlanOptions::default())?;
    let mut session = Session::new(&sched, &g, plan, &HashMap::new())?;
    let input = HashMap::from([(x, vec![0u8; 64 * 8 * 4])]);
    let mut ms = [Vec::new(), Vec::new()];
    let mut objects = [(0, 0, 0); 2];
    for rep in 0..reps + 2 {
        for (i, prepared) in [true, false].into_iter().enumerate() {
            session.set_prepared(prepared)?;
            block_on(session.run(&input))?;
            let before = gpu.created_objects();
            let t0 = Instant::now();
            block_on(session.run(&input))?;
            let t = t0.elapsed().as_secs_f64() * 1e3;
            let after = gpu.created_objects();
            if rep >= 2 {
                ms[i].push(t);
            }
            objects[i] = (
                after.pipelines - before.pipelines,
                after.bind_groups - before.bind_groups,
                after.buffers - before.buffers,
            );
        }
    }
    println!(
        "{}, {nodes} dispatches per run, median of {reps} runs",
        gpu.description()
    );
    println!("session | ms per run | pipelines, bind groups, buffers made per run");
    for (i, name) in ["prepared", "direct"].iter().enumerate() {
        ms[i].sort_by(f64::total_cmp);
        println!("{name} | {:.2} | {:?}", ms[i][ms[i].len() / 2], objects[i]);
    }
    Ok(())
}

#[cfg(not(target_arch = "wasm32"))]
fn reg_reason(reg: &webtensor::backends::webgpu::WebGpuReg) -> String {
    use webtensor::backend::BackendReg;
    reg.unavailable_reason().unwrap_or_default()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
