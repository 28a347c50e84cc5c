//! The scheduler on mixed-device graphs. A "GPU" here is the CPU device with some ops turned
//! off (`RestrictedDevice`), so placement, splits, copies and memory planning are checked on
//! any machine; the WebGPU runs live in tests/web_browser.rs and tests/sched_webgpu.rs.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;
use std::rc::Rc;

use pollster::block_on;
use webtensor::backend::sched::{
    calibration_key, export_calibrations, forget_calibrations, import_calibrations, CostModel,
    CostOrigin, DeviceCost, Why,
};
use webtensor::backend::{
    Device, DeviceKind, Plan, PlanOptions, Profile, RestrictedDevice, RunInput, Scheduler, Session,
};
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::graph::{DType, Graph, OpKind, TensorId};
use webtensor::testing::sched::{check_scheduled, random_graph};

fn cpu() -> Rc<dyn Device> {
    Rc::new(CpuDevice::new(KernelSet::Fast))
}

fn fake_gpu(denied: Vec<OpKind>) -> Rc<dyn Device> {
    Rc::new(RestrictedDevice::new(cpu(), "GPU", DeviceKind::Gpu, denied))
}

/// Runs `g` through the scheduler on `devices` and on the CPU reference; returns the plan.
fn check_against_reference(
    g: &Graph,
    devices: Vec<Rc<dyn Device>>,
    cost: Option<CostModel>,
    seed: u64,
) -> Plan {
    block_on(check_scheduled(g, devices, cost, seed, 1e-6)).unwrap_or_else(|e| panic!("{e}"))
}

fn mlp(g: &mut Graph) -> (TensorId, TensorId) {
    let x = g.input("x", DType::F32, &[32, 4]).unwrap();
    let w1 = g.weight("w1", DType::F32, &[32, 48]).unwrap();
    let w2 = g.weight("w2", DType::F32, &[48, 32]).unwrap();
    let h = g.matmul(w1, x).unwrap();
    let h = g.gelu(h).unwrap();
    let y = g.matmul(w2, h).unwrap();
    let y = g.add(y, x).unwrap();
    let out = g.norm(y, 1e-5).unwrap();
    g.set_output(out).unwrap();
    (x, out)
}

#[test]
fn unsupported_op_splits_the_graph_and_copies_once_per_split() {
    let mut g = Graph::new();
    mlp(&mut g);
    let plan = check_against_reference(&g, vec![fake_gpu(vec![OpKind::Gelu]), cpu()], None, 1);
    let devs: Vec<&str> = plan
        .splits
        .iter()
        .map(|s| plan.devices[s.device].as_str())
        .collect();
    assert_eq!(devs, ["GPU", "CPU", "GPU"], "{}", plan.explain(&g));
    // x is read by matmul (GPU) and by add (GPU): copied zero times (it lives on the GPU);
    // the matmul result goes to the CPU once, the gelu result back once.
    assert_eq!(plan.copies().0, 2, "{}", plan.explain(&g));
    let gelu = plan.splits[1].nodes[0];
    assert!(matches!(plan.why[gelu.0], Some(Why::Fallback(ref r)) if r.contains("turned off")));
}

#[test]
fn a_tensor_read_twice_on_another_device_is_copied_once() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[16, 2]).unwrap();
    let a = g.silu(x).unwrap(); // GPU
    let b = g.relu(a).unwrap(); // CPU (relu off on the GPU)
    let c = g.mul(a, b).unwrap(); // GPU: reads a (local) and b (copy)
    let d = g.relu(c).unwrap(); // CPU: reads c (copy)
    let e = g.add(d, a).unwrap(); // CPU again? add runs on GPU: reads d (copy) and a (local)
    g.set_output(e).unwrap();
    let plan = check_against_reference(&g, vec![fake_gpu(vec![OpKind::Relu]), cpu()], None, 2);
    for s in &plan.splits {
        let mut seen: Vec<TensorId> = s.inputs.iter().map(|i| i.tensor).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), s.inputs.len(), "duplicate copies in a split");
    }
    // `a` goes to the CPU once even though two CPU splits read it... only the first relu does.
    let a_copies = plan
        .splits
        .iter()
        .flat_map(|s| &s.inputs)
        .filter(|i| i.tensor == a)
        .count();
    assert_eq!(a_copies, 1, "{}", plan.explain(&g));
}

#[test]
fn memory_is_reused_and_outputs_survive() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[256, 4]).unwrap();
    let mut t = x;
    for i in 0..12 {
        t = if i % 2 == 0 {
            g.silu(t).unwrap()
        } else {
            g.scale(t, 0.9).unwrap()
        };
        if i == 5 {
            g.set_output(t).unwrap();
        }
    }
    let y = g.matmul(x, t).unwrap();
    g.set_output(y).unwrap();
    let plan = check_against_reference(&g, vec![cpu()], None, 3);
    let m = &plan.memory[0];
    assert!(
        m.compute_bytes < m.unshared_bytes / 2,
        "{}",
        plan.explain(&g)
    );
    assert!(m.in_place > 0, "{}", plan.explain(&g));
}

fn cost(flops: f64, bw: f64, overhead: f64, xfer: f64, xfer_overhead: f64) -> DeviceCost {
    DeviceCost {
        flops_per_s: flops,
        bytes_per_s: bw,
        op_overhead_s: overhead,
        submit_overhead_s: 0.0,
        transfer_bytes_per_s: xfer,
        transfer_overhead_s: xfer_overhead,
    }
}

fn costs() -> CostModel {
    CostModel::new(vec![
        cost(1e12, 1e11, 20e-6, 4e9, 100e-6), // GPU: fast, but each copy costs 100 µs
        cost(2e10, 2e10, 1e-6, f64::INFINITY, 0.0),
    ])
}

#[test]
fn cost_model_keeps_a_tiny_op_between_cpu_ops_on_the_cpu() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[8, 2]).unwrap();
    let a = g.relu(x).unwrap(); // CPU only
    let b = g.scale(a, 2.0).unwrap(); // tiny: either
    let c = g.relu(b).unwrap(); // CPU only
    g.set_output(c).unwrap();
    let devices = || vec![fake_gpu(vec![OpKind::Relu]), cpu()];
    let without = check_against_reference(&g, devices(), None, 4);
    assert_eq!(without.devices[without.device_of[b.0].unwrap()], "GPU");
    let with = check_against_reference(&g, devices(), Some(costs()), 4);
    assert_eq!(
        with.devices[with.device_of[b.0].unwrap()],
        "CPU",
        "{}",
        with.explain(&g)
    );
    assert_eq!(with.why[b.0], Some(Why::Cost));
    assert_eq!(with.splits.len(), 1);
}

#[test]
fn cost_model_sends_a_large_matmul_to_the_gpu() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[256, 64]).unwrap();
    let w = g.weight("w", DType::F32, &[256, 256]).unwrap();
    let a = g.relu(x).unwrap(); // CPU only
    let b = g.matmul(w, a).unwrap(); // 8 Mflop
    let c = g.relu(b).unwrap(); // CPU only
    g.set_output(c).unwrap();
    let plan = check_against_reference(
        &g,
        vec![fake_gpu(vec![OpKind::Relu]), cpu()],
        Some(costs()),
        5,
    );
    assert_eq!(
        plan.devices[plan.device_of[b.0].unwrap()],
        "GPU",
        "{}",
        plan.explain(&g)
    );
}

/// An MLP block (two matmuls, gelu, residual add, norm) over `tokens` columns of `width`.
fn mlp_of(width: usize, tokens: usize) -> Graph {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[width, tokens]).unwrap();
    let w1 = g.weight("w1", DType::F32, &[width, width]).unwrap();
    let w2 = g.weight("w2", DType::F32, &[width, width]).unwrap();
    let h = g.matmul(w1, x).unwrap();
    let h = g.gelu(h).unwrap();
    let y = g.matmul(w2, h).unwrap();
    let y = g.add(y, x).unwrap();
    let out = g.norm(y, 1e-5).unwrap();
    g.set_output(out).unwrap();
    g
}

/// Compute nodes per device name.
fn nodes_on(plan: &Plan) -> HashMap<&str, usize> {
    let mut m = HashMap::new();
    for (d, n) in plan.nodes_per_device().into_iter().enumerate() {
        m.insert(plan.devices[d].as_str(), n);
    }
    m
}

#[test]
fn dispatch_and_submit_costs_keep_small_batches_on_the_cpu() {
    // A GPU 50x faster than the CPU at compute, whose dispatches and submissions cost what
    // a software or remote adapter's do.
    let gpu_cost = |dispatch: f64, submit: f64, copy: f64| {
        CostModel::new(vec![
            DeviceCost {
                op_overhead_s: dispatch,
                submit_overhead_s: submit,
                ..cost(1e12, 1e12, 0.0, 4e9, copy)
            },
            cost(2e10, 2e10, 1e-6, f64::INFINITY, 0.0),
        ])
    };
    let devices = || vec![fake_gpu(vec![]), cpu()];
    let small = mlp_of(64, 4);
    let large = mlp_of(256, 256);
    // Free dispatches: even the small batch goes to the faster device.
    let free = check_against_reference(&small, devices(), Some(gpu_cost(0.0, 0.0, 0.0)), 7);
    assert_eq!(nodes_on(&free)["CPU"], 0, "{}", free.explain(&small));
    // 200 µs per dispatch, 1 ms per submission: the small batch stays on the CPU ...
    let costly = || Some(gpu_cost(200e-6, 1e-3, 100e-6));
    let plan = check_against_reference(&small, devices(), costly(), 7);
    assert_eq!(nodes_on(&plan)["GPU"], 0, "{}", plan.explain(&small));
    let text = plan.explain(&small);
    assert!(text.contains("estimate: "), "{text}");
    assert!(text.contains("each device alone: GPU "), "{text}");
    let c = plan.cost.as_ref().expect("cost model on");
    let gpu_alone = c.alone.iter().find(|(n, _)| n == "GPU").map(|x| x.1);
    assert!(
        gpu_alone.is_some_and(|t| t > 2e-3 && t > c.total_s()),
        "{c:?}"
    );
    // ... and the large one (67 Mflop) runs its matmuls on the GPU, in one submission there.
    let plan = check_against_reference(&large, devices(), costly(), 8);
    for (id, t) in large.iter() {
        if t.op == webtensor::graph::Op::MatMul {
            let on = plan.device_of[id.0].map(|d| plan.devices[d].as_str());
            assert_eq!(on, Some("GPU"), "{}", plan.explain(&large));
        }
    }
    let c = plan.cost.as_ref().expect("cost model on");
    assert_eq!(c.per_device[0].submits, 1, "{c:?}");
    let n = c.per_device[0].nodes;
    assert!(n >= 3, "{c:?}");
    assert!(
        (c.per_device[0].dispatch_s - n as f64 * 200e-6).abs() < 1e-12,
        "{c:?}"
    );
    let cpu_alone = c.alone.iter().find(|(n, _)| n == "CPU").map(|x| x.1);
    assert!(cpu_alone.is_some_and(|t| t > c.total_s()), "{c:?}");
}

#[test]
fn calibration_measures_a_device() {
    let m = block_on(CostModel::calibrate(&[cpu()])).unwrap();
    let c = &m.devices[0];
    assert!(c.flops_per_s > 1e6 && c.flops_per_s.is_finite(), "{c:?}");
    assert!(c.bytes_per_s > 1e6, "{c:?}");
    assert_eq!(c.submit_overhead_s, 0.0, "host memory: nothing to submit");
}

#[test]
fn bad_plans_fail_before_running() {
    let mut g = Graph::new();
    let (x, out) = mlp(&mut g);
    let sched = Scheduler::new(vec![
        fake_gpu(vec![OpKind::Norm]),
        fake_gpu(vec![OpKind::Norm]),
    ])
    .unwrap();
    let err = sched
        .plan(&g, &PlanOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("norm") && err.contains("turned off"), "{err}");

    let sched = Scheduler::new(vec![fake_gpu(vec![]), cpu()]).unwrap();
    let pins = HashMap::from([(out, "TPU".to_string())]);
    let err = sched
        .plan(
            &g,
            &PlanOptions {
                pins,
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("TPU"), "{err}");

    let plan = sched.plan(&g, &PlanOptions::default()).unwrap();
    let mut session = Session::new(&sched, &g, plan, &HashMap::new()).unwrap();
    let err = block_on(session.run(&HashMap::new()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no value given for input x"), "{err}");
    let input = HashMap::from([(x, vec![0u8; 32 * 4 * 4])]);
    let err = block_on(session.run(&input)).unwrap_err().to_string();
    assert!(err.contains("never set"), "{err}");
    let err = session
        .set_weights(&HashMap::from([(x, vec![0u8; 4])]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a weight"), "{err}");
}

#[test]
fn pins_are_honoured() {
    let mut g = Graph::new();
    let (_, out) = mlp(&mut g);
    let sched = Scheduler::new(vec![fake_gpu(vec![]), cpu()]).unwrap();
    let pins = HashMap::from([(out, "cpu".to_string())]);
    let plan = sched
        .plan(
            &g,
            &PlanOptions {
                pins,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(plan.devices[plan.device_of[out.0].unwrap()], "CPU");
    assert_eq!(plan.why[out.0], Some(Why::Pinned));
}

/// Random graphs from the op table, some ops off on the "GPU": the scheduler's result over
/// {GPU, CPU} equals the CPU reference.
#[test]
fn random_graphs_match_the_reference() {
    let (mut multi_split, mut copies) = (0, 0);
    for seed in 1..=60u64 {
        let (g, denied) = random_graph(seed);
        let cost = (seed % 3 == 0).then(costs);
        let plan = block_on(check_scheduled(
            &g,
            vec![fake_gpu(denied), cpu()],
            cost,
            seed,
            1e-6,
        ))
        .unwrap();
        multi_split += usize::from(plan.splits.len() > 1);
        copies += plan.copies().0;
    }
    println!("{multi_split} of 60 graphs split across devices, {copies} copies");
    assert!(
        multi_split >= 20 && copies >= 40,
        "the generator must exercise splits: {multi_split}, {copies}"
    );
}

/// The profiler, on a 2-thread CPU device: a profiled run computes the split as one call (its
/// threads a team across it) and the CPU records each node once, under its op and shapes.
#[test]
fn a_profiled_run_records_each_cpu_node_once() {
    let mut g = Graph::new();
    let (x, _) = mlp(&mut g);
    let dev: Rc<dyn Device> = Rc::new(CpuDevice::with_threads(KernelSet::Fast, Some(2)).unwrap());
    let sched = Scheduler::new(vec![dev]).unwrap();
    let plan = sched.plan(&g, &PlanOptions::default()).unwrap();
    let w: HashMap<TensorId, Vec<u8>> = g
        .iter()
        .filter(|(_, t)| t.role == webtensor::graph::Role::Weight)
        .map(|(id, t)| (id, vec![0u8; t.nbytes()]))
        .collect();
    let mut session = Session::new(&sched, &g, plan, &HashMap::new()).unwrap();
    session.set_weights(&w).unwrap();
    let bytes = vec![0u8; 32 * 4 * 4];
    let input = HashMap::from([(x, RunInput::Host(&bytes))]);
    let profile = Profile::new();
    // Off: a run given the profile records nothing.
    block_on(session.run_with(&input, false, Some(&profile))).unwrap();
    assert!(profile.is_empty());
    profile.start();
    for _ in 0..3 {
        block_on(session.run_with(&input, false, Some(&profile))).unwrap();
    }
    // Not given the profile: not recorded, though it is on.
    block_on(session.run(&HashMap::from([(x, bytes.clone())]))).unwrap();
    let table = profile.stop();
    let rows: Vec<&str> = table.lines().skip(1).collect();
    // mlp: two matmuls (different shapes), gelu, add, norm: 5 kinds, each 3 times.
    assert_eq!(rows.len(), 5, "{table}");
    for r in &rows {
        assert!(r.contains("     3×  CPU "), "{table}");
    }
    assert!(
        table.contains("CPU MatMul F32 [32, 48, 1, 1] [32, 4, 1, 1]"),
        "{table}"
    );
    assert!(!profile.is_on() && profile.is_empty());
}

/// Two runtimes profile independently: one's runs never add rows to the other's profile,
/// and stopping one leaves the other recording.
#[test]
fn runtimes_profile_independently() {
    use webtensor::runtime::{DeviceChoice, Program, Runtime};
    let program = || {
        let mut p = Program::new();
        let w = p
            .weight_f32("w", DType::F32, &[2, 2], &[1.0, 2.0, 3.0, 4.0])
            .unwrap();
        let x = p.graph_mut().input("x", DType::F32, &[2, 1]).unwrap();
        let y = p.graph_mut().matmul(w, x).unwrap();
        let y = p.graph_mut().gelu(y).unwrap();
        p.graph_mut().set_name(y, "y").unwrap();
        p.graph_mut().set_output(y).unwrap();
        p
    };
    let new_rt =
        || -> Runtime { block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap() };
    let (a, b, p) = (new_rt(), new_rt(), program());
    let inputs = HashMap::from([("x".to_string(), vec![0u8; 8])]);
    let run = |rt: &Runtime, n: usize| {
        for _ in 0..n {
            block_on(rt.run(&p, &inputs)).unwrap();
        }
    };
    // Each row's count (the "3×" column); at least one row.
    let counts = |table: &str| -> Vec<u64> {
        let rows: Vec<u64> = table
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().find_map(|w| w.strip_suffix('×')))
            .map(|n| n.parse().unwrap())
            .collect();
        assert!(!rows.is_empty(), "{table}");
        rows
    };

    a.profile_start();
    assert!(a.profiling() && !b.profiling());
    run(&a, 2);
    run(&b, 5); // b is not profiling: nothing recorded anywhere
    b.profile_start();
    run(&b, 3);
    let ta = a.profile_stop();
    assert!(
        !a.profiling() && b.profiling(),
        "stopping a leaves b recording"
    );
    run(&a, 4); // a stopped: adds nothing to b
    run(&b, 1);
    let tb = b.profile_stop();
    // Each kind of node (matmul and gelu, fused or not) counted by its own runtime's
    // profiled runs only.
    assert!(counts(&ta).iter().all(|&n| n == 2), "{ta}");
    assert!(counts(&tb).iter().all(|&n| n == 4), "{tb}");
    // Stopped: an empty profile, and runs record nothing until started again.
    run(&a, 1);
    let empty = a.profile_stop();
    assert!(empty.starts_with("total 0.00 ms in 0 kinds"), "{empty}");
}

#[test]
fn a_saved_calibration_is_used_instead_of_measuring() {
    let devs = vec![fake_gpu(vec![]), cpu()];
    let first = block_on(CostModel::calibrate(&devs)).unwrap();
    assert!(matches!(first.origins[0], CostOrigin::Measured(ms) if ms >= 0.0));
    assert!(matches!(first.origins[1], CostOrigin::Measured(_)));
    let again = block_on(CostModel::calibrate(&devs)).unwrap();
    assert_eq!(again.origins, vec![CostOrigin::Process; 2]);
    assert_eq!(again.devices, first.devices);

    let text = export_calibrations();
    assert_eq!(text.lines().count(), 2, "{text}");
    // A later process (here: this one, after forgetting) with the saved text and one
    // entry changed, to see it is the saved figure that is used.
    forget_calibrations();
    let gpu_key = calibration_key(devs[0].as_ref());
    let edited: String = text
        .lines()
        .map(|l| match l.split_once('\t') {
            Some((k, _)) if k == gpu_key => format!("{k}\t1e9 2e9 3e-5 4e-4 5e8 6e-5\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    let stale = "webtensor 0.0.0-old|CPU|whatever\t1 1 0 0 inf 0\n";
    assert_eq!(import_calibrations(&format!("{stale}{edited}")).unwrap(), 2);
    let saved = block_on(CostModel::calibrate(&devs)).unwrap();
    assert_eq!(saved.origins, vec![CostOrigin::Saved; 2]);
    assert_eq!(saved.devices[0].flops_per_s, 1e9);
    assert_eq!(saved.devices[0].transfer_overhead_s, 6e-5);
    assert_eq!(saved.devices[1], first.devices[1]);
    // The host's infinite transfer rate survives the text.
    assert_eq!(saved.devices[1].transfer_bytes_per_s, f64::INFINITY);
}

#[test]
fn a_malformed_calibration_is_refused_whole() {
    let key = calibration_key(cpu().as_ref());
    let good = format!("{key}\t1e9 2e9 0 0 inf 0\n");
    for (bad, says) in [
        ("no tab here\n", "line 2: no tab"),
        ("k\t1 2 3\n", "line 2: 3 numbers, expected 6"),
        ("k\t1 2 x 0 1 0\n", "line 2: \"x\" is not a number"),
        ("k\t-1 2 0 0 1 0\n", "line 2: a throughput"),
        ("k\t1 2 NaN 0 1 0\n", "line 2: a throughput"),
        ("k\t1 inf 0 0 1 0\n", "line 2: a throughput"),
    ] {
        let err = import_calibrations(&format!("{good}{bad}")).unwrap_err();
        assert!(err.to_string().contains(says), "{bad:?}: {err}");
        assert!(export_calibrations().is_empty(), "{bad:?} took a line");
    }
    assert_eq!(import_calibrations(&good).unwrap(), 1);
    assert_eq!(import_calibrations("").unwrap(), 0);
}
