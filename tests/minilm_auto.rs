//! `device: 'auto'` on the real MiniLM model: after the first run of each shape, no weight
//! crosses between devices per run (weights live where their ops run, or a copy made once),
//! and the plan 'auto' picks is, by the cost model's own estimate, no slower than the best
//! single-device plan at the four benchmark shapes. Checked with a restricted "GPU" (the CPU
//! with ops turned off: runs on any machine) and with WebGPU when an adapter exists (lavapipe
//! here; `WEBTENSOR_REQUIRE_WEBGPU=1` makes its absence a failure).
#![cfg(not(target_arch = "wasm32"))]

use std::path::PathBuf;
use std::rc::Rc;

use pollster::block_on;
use webtensor::backend::sched::{CostModel, DeviceCost};
use webtensor::backend::{Device, DeviceKind, RestrictedDevice};
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::graph::OpKind;
use webtensor::model::bert::SentenceEmbedder;
use webtensor::runtime::{DeviceChoice, Runtime};

/// The benchmark's cases as (batch, tokens) encoder shapes: 8, 32 and 128 tokens, and
/// 16 sentences × 32 tokens (two batches of 8).
const SHAPES: [(usize, usize); 4] = [(1, 8), (1, 32), (1, 128), (8, 32)];

fn model() -> Option<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/minilm-q8_0.gguf");
    match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(_) => {
            println!(
                "skipped: no {} (run scripts/fetch-model.sh)",
                path.display()
            );
            None
        }
    }
}

fn text_of(tokens: usize) -> String {
    // "[CLS] w w ... [SEP]": one word piece per word.
    vec!["word"; tokens.saturating_sub(2)].join(" ")
}

/// Runs every shape twice on `rt`; returns the copies of the second pass.
fn steady_state(rt: &Runtime, e: &SentenceEmbedder) -> webtensor::runtime::CopyStats {
    let run_all = || {
        for (batch, tokens) in SHAPES {
            let texts: Vec<String> = (0..batch).map(|_| text_of(tokens)).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            block_on(e.embed(rt, &refs)).expect("embed");
        }
    };
    run_all();
    let before = rt.copy_stats();
    run_all();
    assert_eq!(
        rt.cached_sessions(),
        SHAPES.len(),
        "one session per shape, reused by every embed"
    );
    let after = rt.copy_stats();
    webtensor::runtime::CopyStats {
        per_run_bytes: after.per_run_bytes - before.per_run_bytes,
        per_run_weight_bytes: after.per_run_weight_bytes - before.per_run_weight_bytes,
        one_time_bytes: after.one_time_bytes - before.one_time_bytes,
    }
}

/// The plan of each shape is, by the runtime's cost model, no slower than every device alone.
fn check_estimates(rt: &Runtime, e: &SentenceEmbedder) {
    for (batch, tokens) in SHAPES {
        let p = e.program(batch, tokens).unwrap();
        let est = rt.estimates(&p).unwrap().expect("cost model on");
        let (planned, singles) = (est.planned, est.alone);
        println!("{batch} × {tokens}: planned {planned:.6} s, alone {singles:?}");
        for (dev, t) in singles {
            assert!(
                planned <= t * (1.0 + 1e-9),
                "{batch} × {tokens}: the plan ({planned} s) is estimated slower than {dev} \
                 alone ({t} s)\n{}",
                rt.explain(&p).unwrap()
            );
        }
    }
}

fn cpu() -> Rc<dyn Device> {
    Rc::new(CpuDevice::new(KernelSet::Fast))
}

/// A restricted "GPU" (no get_rows and no norm: the embeddings and every layer norm run on
/// the CPU) with costs that make the GPU fast at matmuls and slow to reach: small shapes go to
/// the CPU, large ones split. Weights are stored by the plan of one shape and read on the
/// other device by others: copied once.
#[test]
fn auto_copies_no_weight_per_run_on_a_restricted_gpu() {
    let Some(bytes) = model() else { return };
    let gpu: Rc<dyn Device> = Rc::new(RestrictedDevice::new(
        cpu(),
        "GPU",
        DeviceKind::Gpu,
        vec![OpKind::GetRows, OpKind::Norm],
    ));
    let cost = CostModel::new(vec![
        DeviceCost {
            flops_per_s: 4e11,
            bytes_per_s: 2e11,
            op_overhead_s: 2e-5,
            // No per-split cost: the shapes' plans should split (and disagree) here.
            submit_overhead_s: 0.0,
            transfer_bytes_per_s: 4e9,
            transfer_overhead_s: 1e-4,
        },
        DeviceCost {
            flops_per_s: 2e10,
            bytes_per_s: 1e10,
            op_overhead_s: 1e-6,
            submit_overhead_s: 0.0,
            transfer_bytes_per_s: f64::INFINITY,
            transfer_overhead_s: 0.0,
        },
    ]);
    let mut rt = block_on(Runtime::with_devices(vec![gpu, cpu()], false, vec![])).unwrap();
    rt.set_cost_model(Some(cost));
    let e = SentenceEmbedder::load(&rt, &bytes).unwrap();
    let copied = steady_state(&rt, &e);
    println!("restricted GPU, steady state: {copied:?}");
    assert_eq!(copied.per_run_weight_bytes, 0, "weights copied per run");
    assert_eq!(copied.one_time_bytes, 0, "weight copies made again");
    let all = rt.copy_stats();
    println!("restricted GPU, all runs: {all:?}");
    assert!(
        all.one_time_bytes > 0,
        "the shapes' plans disagree on devices here: some weight must have been copied once"
    );
    for (batch, tokens) in SHAPES {
        let plan = rt.explain(&e.program(batch, tokens).unwrap()).unwrap();
        println!(
            "{batch} × {tokens}: {}",
            plan.lines().next().unwrap_or_default()
        );
        assert!(
            !plan.contains("<- blk."),
            "a weight is a per-run copy: {plan}"
        );
    }
    check_estimates(&rt, &e);
}

/// The same on real WebGPU (lavapipe here), with the cost model calibrated as `'auto'` does.
#[test]
fn auto_copies_no_weight_per_run_on_webgpu() {
    let Some(bytes) = model() else { return };
    let rt = match block_on(webtensor::create_runtime(DeviceChoice::WebGpu, true)) {
        Ok(rt) => rt,
        Err(e) if std::env::var("WEBTENSOR_REQUIRE_WEBGPU").is_ok_and(|v| v == "1") => {
            panic!("WebGPU is required (WEBTENSOR_REQUIRE_WEBGPU=1) but: {e}")
        }
        Err(e) => {
            println!("skipped: no WebGPU ({e})");
            return;
        }
    };
    let e = SentenceEmbedder::load(&rt, &bytes).unwrap();
    let copied = steady_state(&rt, &e);
    println!("WebGPU {:?}, steady state: {copied:?}", rt.device_names());
    assert_eq!(copied.per_run_weight_bytes, 0, "weights copied per run");
    assert_eq!(copied.one_time_bytes, 0, "weight copies made again");
    let p = e.program(1, 32).unwrap();
    println!(
        "{}",
        rt.explain(&p).unwrap().lines().next().unwrap_or_default()
    );
    check_estimates(&rt, &e);
}
