//! Scheduler property checks shared by the native and the wasm tests: random graphs from
//! the op table, run through the scheduler over several devices and compared with the CPU
//! reference.

use std::collections::HashMap;
use std::rc::Rc;

use super::{nmse, Rng};
use crate::backend::sched::CostModel;
use crate::backend::{run_graph, Backend, Device, Plan, PlanOptions, Scheduler, Session};
use crate::backends::cpu::{CpuDevice, KernelSet};
use crate::graph::{DType, Graph, OpKind, Role, TensorId};

/// Ops a random test may turn off on the preferred device.
pub const SWITCHABLE_OPS: [OpKind; 8] = [
    OpKind::Add,
    OpKind::Mul,
    OpKind::Gelu,
    OpKind::Silu,
    OpKind::MatMul,
    OpKind::SoftMax,
    OpKind::Norm,
    OpKind::SumRows,
];

/// A random graph over `[16, r]` activations (inputs, a weight, 4–19 ops, 1–2 outputs) and a
/// random set of ops to turn off on the preferred device.
pub fn random_graph(seed: u64) -> (Graph, Vec<OpKind>) {
    let mut rng = Rng::new(seed);
    let denied: Vec<OpKind> = SWITCHABLE_OPS
        .iter()
        .copied()
        .filter(|_| rng.below(3) == 0)
        .collect();
    let mut g = Graph::new();
    let build = |g: &mut Graph, rng: &mut Rng| -> crate::Result<()> {
        let r = 1 + rng.below(5);
        let mut pool = vec![g.input("x0", DType::F32, &[16, r])?];
        if rng.below(2) == 0 {
            pool.push(g.input("x1", DType::F32, &[16, r])?);
        }
        let w = g.weight("w", DType::F32, &[16, 16])?;
        for _ in 0..(4 + rng.below(16)) {
            let a = pool[rng.below(pool.len())];
            let b = pool[rng.below(pool.len())];
            let t = match rng.below(10) {
                0 => g.add(a, b)?,
                1 => g.mul(a, b)?,
                2 => g.gelu(a)?,
                3 => g.silu(a)?,
                4 => g.matmul(w, a)?,
                5 => g.softmax(a, None, 0.5)?,
                6 => g.norm(a, 1e-5)?,
                7 => {
                    let s = g.sum_rows(a)?;
                    g.add(b, s)?
                }
                8 => g.scale(a, 0.5)?,
                _ => g.sub(a, b)?,
            };
            pool.push(t);
        }
        let n = pool.len();
        g.set_output(pool[n - 1])?;
        if n > 3 && rng.below(2) == 0 {
            g.set_output(pool[n - 3])?;
        }
        Ok(())
    };
    // The shapes above always fit; an error here would be a bug in this generator.
    if let Err(e) = build(&mut g, &mut rng) {
        panic!("random_graph({seed}): {e}");
    }
    (g, denied)
}

/// Values for every input and weight of `g`, seeded.
pub fn random_leaves(
    g: &Graph,
    seed: u64,
) -> (HashMap<TensorId, Vec<u8>>, HashMap<TensorId, Vec<u8>>) {
    let mut rng = Rng::new(seed ^ 0x5EED);
    let (mut inputs, mut weights) = (HashMap::new(), HashMap::new());
    for (id, t) in g.iter() {
        if t.op.is_noop() && !t.is_view() {
            let v: Vec<u8> = (0..t.numel())
                .flat_map(|_| rng.uniform(-1.0, 1.0).to_le_bytes())
                .collect();
            if t.role == Role::Input {
                inputs.insert(id, v);
            } else {
                weights.insert(id, v);
            }
        }
    }
    (inputs, weights)
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Runs `g` through a scheduler over `devices` (twice, on one session) and on the CPU
/// reference; `Err` says what differs. Returns the plan.
pub async fn check_scheduled(
    g: &Graph,
    devices: Vec<Rc<dyn Device>>,
    cost: Option<CostModel>,
    seed: u64,
    tolerance: f64,
) -> Result<Plan, String> {
    let (inputs, weights) = random_leaves(g, seed);
    let mut sched = Scheduler::new(devices).map_err(|e| e.to_string())?;
    sched.set_cost_model(cost);
    let plan = sched
        .plan(g, &PlanOptions::default())
        .map_err(|e| e.to_string())?;
    let mut session =
        Session::new(&sched, g, plan.clone(), &HashMap::new()).map_err(|e| e.to_string())?;
    session.set_weights(&weights).map_err(|e| e.to_string())?;
    let got = session.run(&inputs).await.map_err(|e| e.to_string())?;
    let again = session.run(&inputs).await.map_err(|e| e.to_string())?;
    if got != again {
        return Err(format!("a second run differs\n{}", plan.explain(g)));
    }
    let reference: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Reference));
    let mut all = inputs;
    all.extend(weights);
    let backend = Backend::new(reference).map_err(|e| e.to_string())?;
    let want = run_graph(&backend, g, &all, 64)
        .await
        .map_err(|e| e.to_string())?;
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        let e = nmse(&floats(a), &floats(b));
        if e.is_nan() || e > tolerance {
            return Err(format!(
                "output {i}: nmse {e:.3e} > {tolerance:.1e}\n{}",
                plan.explain(g)
            ));
        }
    }
    Ok(plan)
}
