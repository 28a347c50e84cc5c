//! The WebGPU device itself (natively: Mesa lavapipe): buffer limits and ranges, offload
//! decisions, which ops run in place, events, registry order and a destroyed device. Its ops
//! are checked by the op suite (tests/ops.rs). Without an adapter each test prints why and
//! passes, unless `WEBTENSOR_REQUIRE_WEBGPU=1`.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;
use std::rc::Rc;

use pollster::block_on;
use webtensor::backend::{
    run_graph, run_graph_aliased, Backend, BackendReg, Device, PlanOptions, Scheduler, Session,
};
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::backends::webgpu::{
    MatmulKernels, ObjectCounts, WebGpuDevice, WebGpuOptions, WebGpuReg,
};
use webtensor::graph::{DType, Graph, RopeMode, RopeParams, TensorId};
use webtensor::runtime::{DeviceChoice, Program, Runtime, Value};
use webtensor::testing::{webgpu_required, CaseBuilder, GUARD_BYTES, REQUIRE_WEBGPU_ENV};
use webtensor::Error;

/// The WebGPU device, or `None` (with the reason printed) where none is expected.
fn gpu() -> Option<Rc<WebGpuDevice>> {
    let reg = block_on(WebGpuReg::new());
    let dev = reg.device();
    if dev.is_none() {
        let why = reg.unavailable_reason().unwrap_or_default();
        assert!(
            !webgpu_required(),
            "{REQUIRE_WEBGPU_ENV}=1 but no WebGPU device: {why}"
        );
        eprintln!("skipping: no WebGPU device ({why})");
    }
    dev
}

/// The op suite's matmul cases with each matmul kernel forced on every shape (the shape
/// rule picks one per case; this runs the others on the same cases).
#[test]
fn every_matmul_kernel_passes_every_matmul_case() {
    let Some(dev) = gpu() else { return };
    for sel in [
        MatmulKernels::Tiled,
        MatmulKernels::Small,
        MatmulKernels::Base,
        MatmulKernels::Reg,
        MatmulKernels::Rows,
        MatmulKernels::Auto,
    ] {
        let forced = dev.with_options(WebGpuOptions {
            matmul_kernels: sel,
            ..WebGpuOptions::default()
        });
        let report = block_on(webtensor::testing::run_suite(
            forced,
            Rc::new(CpuDevice::new(KernelSet::Reference)),
            Some("matmul"),
        ));
        assert!(report.passed >= 60, "{sel:?}: {report}");
        if let Err(e) = report.check() {
            panic!("{sel:?}: {e}");
        }
    }
}

/// The op suite's row-kernel cases (softmax, norms, fused norms, row sums and means, argmax)
/// at every kind of row width: one thread a row (what a software adapter gets), 4 (several
/// rows a workgroup, rows longer than their threads), a warp and a workgroup (a GPU's).
#[test]
fn row_kernels_pass_at_every_row_width() {
    let Some(dev) = gpu() else { return };
    for t in [1, 4, 32, 256] {
        let forced = dev.with_options(WebGpuOptions {
            row_threads: Some(t),
            ..WebGpuOptions::default()
        });
        for filter in ["softmax", "norm", "sumrows", "mean", "argmax"] {
            let report = block_on(webtensor::testing::run_suite(
                forced.clone(),
                Rc::new(CpuDevice::new(KernelSet::Reference)),
                Some(filter),
            ));
            assert!(report.passed >= 4, "{t} threads, {filter}: {report}");
            if let Err(e) = report.check() {
                panic!("{t} threads a row, {filter}: {e}");
            }
        }
    }
}

/// The op suite's attention cases with the keys split into runs merged by a second dispatch
/// (what a GPU gets for few query rows; a software adapter never splits by itself): 2 and 3
/// runs, and 16, more than some cases have keys (one key a run), so that runs whose every
/// key is masked are merged too.
#[test]
fn attention_cases_pass_with_split_keys() {
    let Some(dev) = gpu() else { return };
    for splits in [2, 3, 16] {
        let forced = dev.with_options(WebGpuOptions {
            kv_splits: Some(splits),
            ..WebGpuOptions::default()
        });
        let report = block_on(webtensor::testing::run_suite(
            forced,
            Rc::new(CpuDevice::new(KernelSet::Reference)),
            Some("attention"),
        ));
        assert!(report.passed >= 10, "{splits} runs: {report}");
        if let Err(e) = report.check() {
            panic!("keys in {splits} runs: {e}");
        }
    }
}

/// The fused attention in each shader variant: without and with `shader-f16` (over the
/// f16-cache cases) and subgroups, unsplit and in 3 runs. Mesa's lavapipe has both features,
/// so where WebGPU is required (the test command) and the adapter is lavapipe, both must be
/// there: every variant then ran (the default options take both, so the op suite runs the
/// f16-and-subgroup variant).
#[test]
fn attention_cases_pass_in_every_shader_variant() {
    let Some(dev) = gpu() else { return };
    let props: HashMap<String, String> = dev.properties().into_iter().collect();
    let has = |k: &str| props.get(k).is_some_and(|v| v == "true");
    let name = props.get("name").cloned().unwrap_or_default();
    println!(
        "{name}: shader-f16 {}, subgroups {}",
        has("shader-f16"),
        has("subgroups")
    );
    if webgpu_required() && name.contains("llvmpipe") {
        assert!(has("shader-f16") && has("subgroups"), "{props:?}");
    }
    for shader_f16 in [false, true] {
        for subgroups in [false, true] {
            for splits in [1, 3] {
                let forced = dev.with_options(WebGpuOptions {
                    shader_f16,
                    subgroups,
                    kv_splits: Some(splits),
                    // Unsplit, the cases of 4 rows and more a KV head would take the
                    // query tiles (tested below): here every row runs the row kernel.
                    query_tiles: false,
                    ..WebGpuOptions::default()
                });
                let report = block_on(webtensor::testing::run_suite(
                    forced,
                    Rc::new(CpuDevice::new(KernelSet::Reference)),
                    Some("attention"),
                ));
                let what = format!("f16 {shader_f16}, subgroups {subgroups}, {splits} runs");
                assert!(report.passed >= 10, "{what}: {report}");
                if let Err(e) = report.check() {
                    panic!("{what}: {e}");
                }
            }
        }
    }
}

/// The query-tiled attention (16 rows of the heads sharing a KV head a workgroup; unsplit
/// keys): the op suite's attention cases with it on (the default: on a software adapter
/// every case of 4 such rows and more takes it, grouped-query decode steps included, with
/// partial tiles, several key tiles, an odd head size and the largest it takes) pass as the
/// row kernel's do.
#[test]
fn attention_cases_pass_tiled_over_queries() {
    let Some(dev) = gpu() else { return };
    let forced = dev.with_options(WebGpuOptions {
        kv_splits: Some(1),
        ..WebGpuOptions::default()
    });
    let report = block_on(webtensor::testing::run_suite(
        forced,
        Rc::new(CpuDevice::new(KernelSet::Reference)),
        Some("attention"),
    ));
    assert!(report.passed >= 10, "{report}");
    if let Err(e) = report.check() {
        panic!("query tiles: {e}");
    }
}

/// `WebGpuOptions::attention` off, the device refuses the fused attention (models then build
/// the unfused nodes); on, the default, it runs it on any adapter.
#[test]
fn fused_attention_can_be_turned_off() {
    let Some(dev) = gpu() else { return };
    let mut g = Graph::new();
    let q = g.input("q", DType::F32, &[32, 8, 4]).unwrap();
    let k = g.input("k", DType::F16, &[32, 40, 2]).unwrap();
    let v = g.input("v", DType::F16, &[32, 40, 2]).unwrap();
    let y = g.attention(q, k, v, None, 0.2).unwrap();
    let with = |attention| {
        dev.with_options(WebGpuOptions {
            attention,
            ..WebGpuOptions::default()
        })
        .supports_op(&g, y)
        .is_yes()
    };
    assert!(dev.supports_op(&g, y).is_yes());
    assert!(with(true));
    assert!(!with(false));
}

/// Calibration measures the adapter's per-dispatch and per-submission cost (a chain of tiny
/// kernels against a single one); the CPU has neither.
#[test]
fn calibration_measures_dispatch_and_submission_costs() {
    let Some(dev) = gpu() else { return };
    let devices: Vec<Rc<dyn Device>> = vec![dev, Rc::new(CpuDevice::new(KernelSet::Fast))];
    let m = block_on(webtensor::backend::sched::CostModel::calibrate(&devices)).unwrap();
    let (g, c) = (&m.devices[0], &m.devices[1]);
    println!("WebGPU: {g:?}\nCPU: {c:?}");
    for x in [g.op_overhead_s, g.submit_overhead_s, g.transfer_overhead_s] {
        assert!(x > 0.0 && x < 1.0, "{g:?}");
    }
    assert_eq!(c.submit_overhead_s, 0.0, "{c:?}");
    assert!(g.submit_overhead_s > c.submit_overhead_s);
}

#[test]
fn large_matmuls_are_offloaded_small_ones_not() {
    let Some(dev) = gpu() else { return };
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[64, 2]).unwrap();
    let big = g.weight("big", DType::F32, &[1 << 20, 2]).unwrap();
    let v = g.input("v", DType::F32, &[1 << 20, 1]).unwrap();
    let mm = g.matmul(big, v).unwrap();
    assert!(dev.supports_op(&g, mm).is_yes());
    assert!(dev.offload_op(&g, mm));
    let small = g.matmul(x, x).unwrap();
    assert!(!dev.offload_op(&g, small));
}

#[test]
fn buffers_check_limits_and_ranges() {
    let Some(dev) = gpu() else { return };
    let bt = dev.buffer_type();
    assert!(bt.alignment() >= 4);
    assert!(matches!(
        bt.alloc(bt.max_size() + 1),
        Err(Error::AllocTooLarge { .. })
    ));
    let empty = bt.alloc(0).unwrap();
    assert_eq!(empty.size(), 0);
    assert!(block_on(empty.read(0, 0)).unwrap().is_empty());
    assert!(matches!(
        block_on(empty.read(0, 1)),
        Err(Error::OutOfBounds(_))
    ));

    let buf = bt.alloc(23).unwrap();
    buf.clear(0x11).unwrap();
    buf.write(3, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap();
    buf.write(14, &[0xee]).unwrap();
    buf.memset(18, 5, 0x77).unwrap();
    let mut want = vec![0x11u8; 23];
    want[3..13].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    want[14] = 0xee;
    want[18..23].fill(0x77);
    assert_eq!(block_on(buf.read(0, 23)).unwrap(), want);
    assert_eq!(block_on(buf.read(5, 3)).unwrap(), want[5..8]);
    assert!(matches!(buf.write(20, &[0; 4]), Err(Error::OutOfBounds(_))));
    assert!(matches!(
        block_on(buf.read(20, 4)),
        Err(Error::OutOfBounds(_))
    ));
    assert!(matches!(
        buf.memset(usize::MAX, 2, 0),
        Err(Error::OutOfBounds(_))
    ));

    buf.memset(1, 21, 0).unwrap();
    want[1..22].fill(0);
    assert_eq!(block_on(buf.read(0, 23)).unwrap(), want);
    buf.write(3, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap();
    want[3..13].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);

    let dst = bt.alloc(16).unwrap();
    dst.clear(0).unwrap();
    assert!(dst.copy_from(&buf, 4, 8, 8).unwrap());
    assert_eq!(block_on(dst.read(8, 8)).unwrap(), want[4..12]);
    // Unaligned copies fall back to the host (Ok(false)); out-of-range ones are errors.
    assert!(!dst.copy_from(&buf, 1, 0, 3).unwrap());
    assert!(dst.copy_from(&buf, 0, 12, 8).is_err());
}

#[test]
fn events_and_smoke_model_run() {
    let Some(dev) = gpu() else { return };
    let a: Vec<f32> = (0..1001).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..1001).map(|i| 0.5 * i as f32).collect();
    let sum = block_on(webtensor::model::smoke::vector_add(dev.clone(), &a, &b)).unwrap();
    assert!(sum.iter().enumerate().all(|(i, &s)| s == 1.5 * i as f32));
    let backend: Rc<Backend> = Backend::new(dev.clone()).unwrap();
    let ev = backend.record_event().expect("WebGPU records events");
    block_on(ev.wait()).unwrap();
    block_on(ev.wait()).unwrap();
    block_on(backend.synchronize()).unwrap();
}

#[test]
fn registry_lists_webgpu_after_cpu() {
    let reg = block_on(webtensor::backends::registry());
    let names: Vec<&str> = reg.backend_regs().iter().map(|r| r.name()).collect();
    assert_eq!(names, ["CPU", "WebGPU"]);
    let webgpu = &reg.backend_regs()[1];
    match webgpu.devices().first() {
        Some(d) => {
            assert_eq!(d.name(), "WebGPU");
            let props = d.properties();
            for key in [
                "name",
                "backend",
                "maxStorageBufferBindingSize",
                "shader-f16",
            ] {
                assert!(props.iter().any(|(k, _)| k == key), "missing {key}");
            }
        }
        None => {
            let why = webgpu.unavailable_reason();
            assert!(why.is_some());
            assert!(!webgpu_required(), "{REQUIRE_WEBGPU_ENV}=1: {why:?}");
        }
    }
}

/// Element-wise and row ops run in place (the suite's `_inplace` cases check the results;
/// this checks they are not skipped); an op whose output outgrows its operand is refused,
/// and running it in place anyway is an error, not a wrong answer.
#[test]
fn in_place_ops_are_the_expected_ones() {
    let Some(dev) = gpu() else { return };
    type Build = fn(&mut CaseBuilder) -> webtensor::Result<()>;
    let in_place: [(&str, Build); 8] = [
        ("add", |b| {
            let (x, y) = (
                b.input(DType::F32, &[300, 5])?,
                b.input(DType::F32, &[300, 5])?,
            );
            let z = b.g.add(x, y)?;
            b.output(z)
        }),
        ("mul x x", |b| {
            let x = b.input(DType::F32, &[300, 5])?;
            let z = b.g.mul(x, x)?;
            b.output(z)
        }),
        ("silu", |b| {
            let x = b.input(DType::F32, &[300, 5])?;
            let z = b.g.silu(x)?;
            b.output(z)
        }),
        ("scale", |b| {
            let x = b.input(DType::F32, &[300, 5])?;
            let z = b.g.scale(x, 3.0)?;
            b.output(z)
        }),
        ("softmax", |b| {
            let (x, m) = (
                b.input(DType::F32, &[300, 5])?,
                b.input(DType::F32, &[300, 5])?,
            );
            let z = b.g.softmax(x, Some(m), 0.5)?;
            b.output(z)
        }),
        ("rms_norm", |b| {
            let x = b.input(DType::F32, &[300, 5])?;
            let z = b.g.rms_norm(x, 1e-5)?;
            b.output(z)
        }),
        ("norm", |b| {
            let x = b.input(DType::F32, &[300, 5])?;
            let z = b.g.norm(x, 1e-5)?;
            b.output(z)
        }),
        ("rope", |b| {
            let x = b.input(DType::F32, &[10, 2, 3])?;
            let pos = b.input_i32(&[3], &[0, 3, 9])?;
            let params = RopeParams {
                n_dims: 6,
                mode: RopeMode::NeoX,
                freq_base: 10000.0,
                freq_scale: 1.0,
            };
            let z = b.g.rope(x, pos, None, params)?;
            b.output(z)
        }),
    ];
    for (name, build) in in_place {
        let mut b = CaseBuilder::new(1);
        build(&mut b).unwrap();
        let out = b.g.outputs()[0];
        assert!(
            dev.supports_inplace(&b.g, out),
            "{name} is not run in place"
        );
    }

    let mut b = CaseBuilder::new(2);
    let x = b.input(DType::F32, &[8, 3]).unwrap();
    let y = b.input(DType::F32, &[8, 3]).unwrap();
    let c = b.g.concat(x, y, 1).unwrap();
    b.output(c).unwrap();
    assert!(!dev.supports_inplace(&b.g, c));
    let backend = Backend::new(dev.clone()).unwrap();
    let r = block_on(run_graph_aliased(
        &backend,
        &b.g,
        &b.leaves,
        GUARD_BYTES,
        &[(c, x)],
    ));
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
}

#[test]
fn destroyed_device_fails_cleanly() {
    let Some(dev) = gpu() else { return };
    let backend = Backend::new(dev.clone()).unwrap();
    let buf = dev.buffer_type().alloc(64).unwrap();
    buf.write(0, &[1; 64]).unwrap();
    dev.destroy();
    assert!(matches!(buf.write(0, &[2; 8]), Err(Error::Device { .. })));
    assert!(matches!(
        block_on(buf.read(0, 8)),
        Err(Error::Device { .. })
    ));
    assert!(matches!(
        dev.buffer_type().alloc(16),
        Err(Error::Device { .. })
    ));
    assert!(matches!(
        block_on(backend.synchronize()),
        Err(Error::Device { .. })
    ));
    assert!(Backend::new(dev.clone()).is_err());
    let mut b = CaseBuilder::new(3);
    let x = b.input(DType::F32, &[4]).unwrap();
    let y = b.g.relu(x).unwrap();
    b.output(y).unwrap();
    assert!(block_on(run_graph(&backend, &b.g, &b.leaves, 0)).is_err());
}

/// The op suite's fused-chain cases run with fusion on make one bind group (one dispatch)
/// per node left after fusion: each chain drops its fused nodes, each near miss none; with
/// fusion off every node is a dispatch. Both runs give the same bytes.
#[test]
fn fusion_removes_the_expected_dispatches() {
    let Some(dev) = gpu() else { return };
    let unfused = dev.with_options(WebGpuOptions {
        fusion: false,
        ..WebGpuOptions::default()
    });
    let backends = [unfused, dev.clone()].map(|d| Backend::new(d as Rc<dyn Device>).unwrap());
    let cases: Vec<_> = webtensor::testing::all_cases()
        .into_iter()
        .filter(|c| c.name.starts_with("fused_"))
        .collect();
    assert!(cases.len() >= 20);
    let dispatches = |case: &webtensor::testing::OpCase, on: bool| {
        let before = dev.created_objects().bind_groups;
        let out = block_on(webtensor::testing::case_outputs(
            case,
            &backends[usize::from(on)],
        ));
        out.map(|out| (dev.created_objects().bind_groups - before, out))
    };
    let mut ran = 0;
    for case in &cases {
        // A chain this device refuses (an operand dtype it has no kernel for) is refused
        // fused and unfused alike; the scheduler would run it on the CPU.
        let (fused, a) = match dispatches(case, true) {
            Err(Error::Unsupported { reason, .. }) => {
                assert!(
                    matches!(dispatches(case, false), Err(Error::Unsupported { .. })),
                    "{}: refused fused ({reason}) but not unfused",
                    case.name
                );
                continue;
            }
            r => r.unwrap(),
        };
        let (plain, b) = dispatches(case, false).unwrap();
        ran += 1;
        let n = &case.name;
        // Nodes fused away: the bias add and an activation after a matmul; the residual
        // add, mul and bias add around a norm. A residual sum that is also an output stays,
        // the norm and mul after it still fuse.
        let saved = if n.ends_with("sum_also_output") {
            1
        } else if n.contains("also_output") || n.contains("read_twice") || n.contains("full") {
            0
        } else if n.starts_with("fused_matmul") {
            1 + u64::from(!n.ends_with("None"))
        } else {
            u64::from(!n.contains("residnone")) + 1 + u64::from(n.ends_with("biastrue"))
        };
        assert_eq!(
            plain - fused,
            saved,
            "{n}: {plain} dispatches unfused, {fused} fused"
        );
        assert!(
            a.iter().zip(&b).all(|(x, y)| x.len() == y.len()),
            "{n}: output sizes differ"
        );
    }
    assert!(ran >= 20, "only {ran} fused cases ran");
}

/// A small layer (matmul, bias, GELU, softmax, norm) over WebGPU and the CPU, its weights set:
/// the session, its graph's input and its output.
fn layer_session(dev: &Rc<WebGpuDevice>) -> (Session, TensorId) {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[32, 16]).unwrap();
    let w = g.weight("w", DType::F32, &[32, 64]).unwrap();
    let bias = g.weight("bias", DType::F32, &[64]).unwrap();
    let h = g.matmul(w, x).unwrap();
    let h = g.add(h, bias).unwrap();
    let h = g.gelu(h).unwrap();
    let h = g.softmax(h, None, 0.5).unwrap();
    let y = g.norm(h, 1e-5).unwrap();
    g.set_output(y).unwrap();
    let cpu: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Fast));
    let sched = Scheduler::new(vec![dev.clone() as Rc<dyn Device>, cpu]).unwrap();
    let plan = sched.plan(&g, &PlanOptions::default()).unwrap();
    assert!(
        plan.splits.iter().all(|s| s.device == 0),
        "every node runs on WebGPU"
    );
    let mut session = Session::new(&sched, &g, plan, &HashMap::new()).unwrap();
    let f32s = |n: usize, k: f32| -> Vec<u8> {
        (0..n)
            .flat_map(|i| ((i % 13) as f32 * k - 0.3).to_le_bytes())
            .collect()
    };
    let weights = HashMap::from([(w, f32s(32 * 64, 0.01)), (bias, f32s(64, 0.1))]);
    session.set_weights(&weights).unwrap();
    (session, x)
}

#[test]
fn prepared_session_runs_create_no_gpu_objects() {
    let Some(dev) = gpu() else { return };
    let (mut session, x) = layer_session(&dev);
    let input = |k: f32| -> HashMap<TensorId, Vec<u8>> {
        let v: Vec<u8> = (0..32 * 16)
            .flat_map(|i| ((i % 7) as f32 * k).to_le_bytes())
            .collect();
        HashMap::from([(x, v)])
    };
    // The first run may fill the readback pool.
    block_on(session.run(&input(0.1))).unwrap();
    let before = dev.created_objects();
    let prepared = block_on(session.run(&input(0.2))).unwrap();
    let steady = dev.created_objects();
    let objects = |c: ObjectCounts| (c.pipelines, c.bind_groups, c.buffers);
    assert_eq!(
        objects(steady),
        objects(before),
        "a steady-state prepared run created GPU objects"
    );
    // The same bytes as computing directly, which makes a bind group per dispatch and a
    // parameter buffer on every run.
    session.set_prepared(false).unwrap();
    let direct = block_on(session.run(&input(0.2))).unwrap();
    assert_eq!(prepared, direct);
    let after = dev.created_objects();
    let per_run = |a: ObjectCounts, b: ObjectCounts| {
        format!(
            "{} pipelines, {} bind groups, {} buffers",
            b.pipelines - a.pipelines,
            b.bind_groups - a.bind_groups,
            b.buffers - a.buffers
        )
    };
    println!(
        "objects per run: prepared {}; direct {}",
        per_run(before, steady),
        per_run(steady, after)
    );
    // matmul, bias and GELU are one dispatch (fused), then softmax and norm.
    assert_eq!(after.bind_groups - steady.bind_groups, 3);
    assert_eq!(after.buffers - steady.buffers, 1);
    // A new input gives new results through the same prepared objects.
    session.set_prepared(true).unwrap();
    let other = block_on(session.run(&input(0.3))).unwrap();
    assert_ne!(other, prepared);
}

/// An attention with its keys split is two dispatches (the runs, then their merge) over a
/// scratch buffer made when the session is prepared: a steady-state run creates nothing, and
/// its output equals the unsplit kernel's within rounding.
#[test]
fn split_attention_is_two_dispatches_made_once() {
    let Some(dev) = gpu() else { return };
    let session = |dev: Rc<WebGpuDevice>| {
        let mut g = Graph::new();
        let q = g.input("q", DType::F32, &[32, 1, 4]).unwrap();
        let k = g.input("k", DType::F32, &[32, 300, 2]).unwrap();
        let v = g.input("v", DType::F32, &[32, 300, 2]).unwrap();
        let y = g.attention(q, k, v, None, 0.2).unwrap();
        g.set_output(y).unwrap();
        let sched = Scheduler::new(vec![dev as Rc<dyn Device>]).unwrap();
        let plan = sched.plan(&g, &PlanOptions::default()).unwrap();
        let s = Session::new(&sched, &g, plan, &HashMap::new()).unwrap();
        let bytes = |n: usize, k: f32| -> Vec<u8> {
            (0..n)
                .flat_map(|i| (((i * 7) % 19) as f32 * k - 0.5).to_le_bytes())
                .collect()
        };
        let inputs = HashMap::from([
            (q, bytes(32 * 4, 0.05)),
            (k, bytes(32 * 300 * 2, 0.03)),
            (v, bytes(32 * 300 * 2, 0.07)),
        ]);
        (s, inputs)
    };
    let split = dev.with_options(WebGpuOptions {
        kv_splits: Some(4),
        ..WebGpuOptions::default()
    });
    let (mut s, inputs) = session(split.clone());
    block_on(s.run(&inputs)).unwrap();
    let before = split.created_objects();
    let out = block_on(s.run(&inputs)).unwrap();
    let steady = split.created_objects();
    let objects = |c: ObjectCounts| (c.pipelines, c.bind_groups, c.buffers);
    assert_eq!(
        objects(steady),
        objects(before),
        "a split run created GPU objects"
    );
    s.set_prepared(false).unwrap();
    let direct = block_on(s.run(&inputs)).unwrap();
    let after = split.created_objects();
    assert_eq!(direct, out);
    // Two bind groups (the runs, the merge) and two buffers (parameters, scratch) a build.
    assert_eq!(after.bind_groups - steady.bind_groups, 2);
    assert_eq!(after.buffers - steady.buffers, 2);
    let one = dev.with_options(WebGpuOptions {
        kv_splits: Some(1),
        ..WebGpuOptions::default()
    });
    let (whole, inputs) = session(one);
    let whole = block_on(whole.run(&inputs)).unwrap();
    let f = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    let (a, b) = (f(&out[0]), f(&whole[0]));
    assert_eq!(a.len(), 32 * 4);
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{x} vs {y}");
    }
    assert_ne!(a, vec![0.0; a.len()]);
}

/// The device lost in the middle of a run (after its compute was submitted, or after the
/// readback's copy was): that run rejects with the reason, later runs fail the same way, nothing
/// hangs, and a new device works.
#[test]
fn device_lost_mid_run_rejects_and_later_runs_fail_cleanly() {
    for submits in [1, 2] {
        let Some(dev) = gpu() else { return };
        let (session, x) = layer_session(&dev);
        let input = HashMap::from([(x, vec![0u8; 32 * 16 * 4])]);
        block_on(session.run(&input)).unwrap();
        dev.lose_after_submits(submits);
        let lost = |r: webtensor::Result<Vec<Vec<u8>>>| match r {
            Err(Error::Device { msg, .. }) => assert!(msg.contains("destroyed"), "{msg}"),
            other => panic!("after {submits} submits: {other:?}"),
        };
        lost(block_on(session.run(&input)));
        lost(block_on(session.run(&input)));
        assert!(Backend::new(dev.clone()).is_err());
    }
    let Some(fresh) = gpu() else { return };
    let (session, x) = layer_session(&fresh);
    block_on(session.run(&HashMap::from([(x, vec![0u8; 32 * 16 * 4])]))).unwrap();
}

/// Every buffer the device makes is live until it is dropped, which destroys it (on the web a
/// dropped wgpu buffer would otherwise wait for the garbage collector): a session's memory and
/// parameters go with the session, a buffer with its last handle; later runs keep none.
#[test]
fn buffers_are_live_until_dropped() {
    let Some(dev) = gpu() else { return };
    let input = |x| HashMap::from([(x, vec![0u8; 32 * 16 * 4])]);
    // A first session fills the readback staging pool, which the device keeps for later reads.
    {
        let (session, x) = layer_session(&dev);
        block_on(session.run(&input(x))).unwrap();
    }
    let base = dev.live_buffers();
    assert!(base.live >= 1 && base.created > base.live, "{base:?}");
    {
        let (session, x) = layer_session(&dev);
        block_on(session.run(&input(x))).unwrap();
        let during = dev.live_buffers();
        assert!(during.live > base.live, "{during:?} vs {base:?}");
        for _ in 0..5 {
            block_on(session.run(&input(x))).unwrap();
        }
        let after = dev.live_buffers();
        assert_eq!(
            (after.live, after.live_bytes),
            (during.live, during.live_bytes),
            "runs of one session keep no buffer"
        );
    }
    assert_eq!(
        dev.live_buffers().live,
        base.live,
        "the session's buffers were kept"
    );
    assert_eq!(dev.live_buffers().live_bytes, base.live_bytes);
    let big = dev.buffer_type().alloc(1 << 20).unwrap();
    assert!(dev.live_buffers().live_bytes >= base.live_bytes + (1 << 20));
    drop(big);
    assert_eq!(dev.live_buffers().live, base.live);
    assert_eq!(dev.live_buffers().live_bytes, base.live_bytes);
}

/// Sizes past the adapter's limits fail before anything is submitted or allocated: a tensor
/// past maxStorageBufferBindingSize is refused by the device (so a GPU-only plan fails), and
/// a session whose memory exceeds maxBufferSize fails to allocate it.
#[test]
fn sizes_past_the_adapters_limits_fail_before_submitting() {
    let Some(dev) = gpu() else { return };
    let prop = |key: &str| -> usize {
        let (_, v) = dev
            .properties()
            .into_iter()
            .find(|(k, _)| k == key)
            .unwrap();
        v.parse::<u64>().unwrap().min(usize::MAX as u64) as usize
    };
    let (binding, max_buffer) = (prop("maxStorageBufferBindingSize"), prop("maxBufferSize"));
    let only_gpu = Scheduler::new(vec![dev.clone() as Rc<dyn Device>]).unwrap();
    let start = dev.created_objects();

    let mut g = Graph::new();
    let big = g.input("big", DType::F32, &[binding / 4 + 1024]).unwrap();
    let y = g.relu(big).unwrap();
    g.set_output(y).unwrap();
    let why = dev.supports_op(&g, y);
    assert!(!why.is_yes());
    assert!(
        format!("{why:?}").contains("maxStorageBufferBindingSize"),
        "{why:?}"
    );
    assert!(only_gpu.plan(&g, &PlanOptions::default()).is_err());

    // Weights that each fit a binding but together exceed one buffer.
    let each = binding.min(max_buffer) / 2 / 4 * 4;
    let mut g = Graph::new();
    let mut sum = g.weight("w0", DType::F32, &[each / 4]).unwrap();
    for k in 1..=max_buffer / each + 1 {
        let w = g.weight(&format!("w{k}"), DType::F32, &[each / 4]).unwrap();
        sum = g.add(sum, w).unwrap();
    }
    g.set_output(sum).unwrap();
    let plan = only_gpu.plan(&g, &PlanOptions::default()).unwrap();
    let r = Session::new(&only_gpu, &g, plan, &HashMap::new());
    assert!(
        matches!(r, Err(Error::AllocTooLarge { .. })),
        "{:?}",
        r.err()
    );
    assert_eq!(dev.created_objects(), start, "nothing was made");
}

/// Outputs kept on the GPU feed later runs (of the same and of another graph) with no
/// readback; they read back on demand; a disposed one, one of another runtime, or one of the
/// wrong shape or dtype is an error.
#[test]
fn device_tensors_feed_later_runs_without_readback() {
    let Some(dev) = gpu() else { return };
    let runtime = |dev: &Rc<WebGpuDevice>| {
        let cpu: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Fast));
        block_on(Runtime::with_devices(
            vec![dev.clone() as Rc<dyn Device>, cpu],
            false,
            Vec::new(),
        ))
        .unwrap()
    };
    let rt = runtime(&dev);
    let mut double = Program::new();
    let x = double.graph_mut().input("x", DType::F32, &[8, 4]).unwrap();
    let y = double.graph_mut().scale(x, 2.0).unwrap();
    double.graph_mut().set_name(y, "y").unwrap();
    double.graph_mut().set_output(y).unwrap();
    let mut step = Program::new();
    let h = step.graph_mut().input("h", DType::F32, &[8, 4]).unwrap();
    let r = step.graph_mut().relu(h).unwrap();
    let z = step.graph_mut().add(r, h).unwrap();
    step.graph_mut().set_name(z, "z").unwrap();
    step.graph_mut().set_output(z).unwrap();

    let xs: Vec<f32> = (0..32).map(|i| i as f32 - 10.0).collect();
    let bytes = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let floats = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    let kept = |outs: Vec<(String, DType, Value)>| match outs.into_iter().next() {
        Some((_, _, Value::Device(t))) => t,
        other => panic!("{other:?}"),
    };
    let run = |p: &Program, name: &str, v: Value, keep: bool| {
        block_on(rt.run_values(p, &HashMap::from([(name.to_string(), v)]), keep))
    };
    // Warm both sessions (plans, pipelines, readback pool).
    for p in [&double, &step] {
        let name = if std::ptr::eq(p, &double) { "x" } else { "h" };
        run(p, name, Value::Bytes(bytes(&xs)), false).unwrap();
    }
    let before = dev.created_objects();
    let y = kept(run(&double, "x", Value::Bytes(bytes(&xs)), true).unwrap());
    assert_eq!(
        (y.device(), y.dtype(), y.shape()),
        ("WebGPU", DType::F32, [8, 4, 1, 1])
    );
    let z1 = kept(run(&step, "h", Value::Device(y.clone()), true).unwrap());
    let z2 = kept(run(&step, "h", Value::Device(z1.clone()), true).unwrap());
    assert_eq!(
        dev.created_objects().readbacks,
        before.readbacks,
        "no readback while the tensors stay on the GPU"
    );
    let f = |v: f32| v.max(0.0) + v;
    let want: Vec<f32> = xs.iter().map(|&v| f(f(2.0 * v))).collect();
    assert_eq!(floats(&block_on(z2.read()).unwrap()), want);
    let want_y: Vec<f32> = xs.iter().map(|&v| 2.0 * v).collect();
    assert_eq!(floats(&block_on(y.read()).unwrap()), want_y);

    let err = |r: webtensor::Result<Vec<(String, DType, Value)>>, what: &str| match r {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains(what), "{msg}"),
        other => panic!("expected an error about {what}: {other:?}"),
    };
    y.dispose();
    assert!(y.is_disposed());
    err(run(&step, "h", Value::Device(y.clone()), false), "disposed");
    assert!(block_on(y.read()).is_err());
    // A kept output of the wrong shape, or dtype.
    let mut other = Program::new();
    let a = other.graph_mut().input("a", DType::F32, &[4, 8]).unwrap();
    let b = other.graph_mut().scale(a, 1.0).unwrap();
    other.graph_mut().set_output(b).unwrap();
    let wrong = kept(run(&other, "a", Value::Bytes(bytes(&xs)), true).unwrap());
    err(
        run(&step, "h", Value::Device(wrong), false),
        "device tensor given",
    );
    let mut ints = Program::new();
    let i = ints.graph_mut().input("i", DType::I32, &[8, 4]).unwrap();
    let c = ints.graph_mut().cont(i).unwrap();
    ints.graph_mut().set_output(c).unwrap();
    let wrong = kept(run(&ints, "i", Value::Bytes(vec![0; 128]), true).unwrap());
    err(
        run(&step, "h", Value::Device(wrong), false),
        "device tensor given",
    );
    // Another runtime's.
    let rt2 = runtime(&dev);
    let theirs = kept(
        block_on(rt2.run_values(
            &double,
            &HashMap::from([("x".to_string(), Value::Bytes(bytes(&xs)))]),
            true,
        ))
        .unwrap(),
    );
    err(
        run(&step, "h", Value::Device(theirs), false),
        "another runtime",
    );
    // The still-live one is unaffected.
    assert_eq!(floats(&block_on(z2.read()).unwrap()), want);
}

/// MiniLM (f32, when `scripts/fetch-model.sh` fetched it) on WebGPU and the CPU: a steady-state
/// embed creates no pipeline, bind group or buffer; the first one (which prepares the
/// session) shows what every run made before sessions were prepared.
#[test]
fn minilm_steady_state_runs_create_no_gpu_objects() {
    let Some(dev) = gpu() else { return };
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/models/minilm-f32.gguf");
    let Ok(bytes) = std::fs::read(path) else {
        eprintln!("skipping: no {path} (run scripts/fetch-model.sh)");
        return;
    };
    let cpu: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Fast));
    let rt = block_on(Runtime::with_devices(
        vec![dev.clone() as Rc<dyn Device>, cpu],
        false,
        Vec::new(),
    ))
    .unwrap();
    let e = webtensor::model::bert::SentenceEmbedder::load(&rt, &bytes).unwrap();
    let texts = ["a quick brown fox jumps over the lazy dog"];
    let delta = |a: ObjectCounts, b: ObjectCounts| {
        [
            b.pipelines - a.pipelines,
            b.bind_groups - a.bind_groups,
            b.buffers - a.buffers,
            b.readbacks - a.readbacks,
        ]
    };
    let c0 = dev.created_objects();
    let first = block_on(e.embed(&rt, &texts)).unwrap();
    let c1 = dev.created_objects();
    block_on(e.embed(&rt, &texts)).unwrap();
    let c2 = dev.created_objects();
    let again = block_on(e.embed(&rt, &texts)).unwrap();
    let c3 = dev.created_objects();
    println!(
        "MiniLM [pipelines, bind groups, buffers, readbacks]: first run {:?}, steady runs {:?} \
         and {:?}",
        delta(c0, c1),
        delta(c1, c2),
        delta(c2, c3)
    );
    assert_eq!(first, again);
    // One bind group per dispatch: 119 nodes (a layer's Q, K and V one matmul, read in place
    // by one fused attention node), 50 dispatches with the fused epilogues (each layer's 4
    // bias adds, 1 GELU, 2 residual adds and 2 × 2 affine-norm nodes fused away).
    assert_eq!(delta(c0, c1)[1], 50, "MiniLM's dispatches");
    assert_eq!(
        delta(c2, c3)[..3],
        [0, 0, 0],
        "a steady-state run created GPU objects"
    );
    // Without fusion (a runtime on the same GPU with fusion off): a dispatch per node, the
    // same embeddings up to float rounding.
    let unfused_dev = dev.with_options(WebGpuOptions {
        fusion: false,
        ..WebGpuOptions::default()
    });
    let cpu: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Fast));
    let rt_plain = block_on(Runtime::with_devices(
        vec![unfused_dev as Rc<dyn Device>, cpu],
        false,
        Vec::new(),
    ))
    .unwrap();
    let plain = webtensor::model::bert::SentenceEmbedder::load(&rt_plain, &bytes).unwrap();
    let c4 = dev.created_objects();
    let unfused = block_on(plain.embed(&rt_plain, &texts));
    let c5 = dev.created_objects();
    let unfused = unfused.unwrap();
    assert_eq!(delta(c4, c5)[1], 119, "MiniLM's dispatches unfused");
    for (x, y) in first.iter().zip(&unfused) {
        let err = x
            .iter()
            .zip(y)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(err < 1e-4, "fused and unfused embeddings differ by {err}");
    }
}

/// A device that answers the self-check wrong is not used: its family is empty with the
/// reason, runtimes use the CPU and say why in `notes()` and `explain()`.
#[test]
fn a_device_failing_its_self_check_is_dropped_for_the_cpu() {
    let Some(_) = gpu() else { return };
    let reg = block_on(WebGpuReg::with_failing_self_check());
    let mut reg2 = webtensor::backend::Registry::new();
    reg2.register(Rc::new(webtensor::backends::cpu::CpuReg::new(
        KernelSet::Fast,
    )));
    reg2.register(Rc::new(block_on(WebGpuReg::with_failing_self_check())));
    assert!(reg.device().is_none());
    let why = reg.unavailable_reason().unwrap();
    assert!(
        why.contains("self-check") && why.contains("f32 matmul answered wrong"),
        "{why}"
    );
    let rt = block_on(Runtime::new(&reg2, DeviceChoice::Auto, false)).unwrap();
    assert_eq!(rt.device_names(), ["CPU"]);
    assert!(rt.notes().iter().any(|n| n.contains("self-check")));
    let mut p = Program::new();
    let x = p.graph_mut().input("x", DType::F32, &[4]).unwrap();
    let y = p.graph_mut().relu(x).unwrap();
    p.graph_mut().set_output(y).unwrap();
    let plan = rt.explain(&p).unwrap();
    assert!(
        plan.contains("not used: WebGPU: ") && plan.contains("self-check"),
        "{plan}"
    );
    assert!(matches!(
        block_on(Runtime::new(&reg2, DeviceChoice::WebGpu, false)),
        Err(Error::NoDevice(msg)) if msg.contains("self-check")
    ));
    // Without the switch the same adapter passes.
    assert!(block_on(WebGpuReg::new()).device().is_some());
}
