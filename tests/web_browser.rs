//! wasm tests that run in headless Chromium (started with --enable-unsafe-webgpu through
//! webdriver.json), so WebGPU code paths run on SwiftShader: WebGPU is required here.
//! Built as the threaded build (`--features threads`, +atomics, build-std: scripts/test.sh
//! does both), every test runs with a 2-thread pool on the page's main thread (the test
//! runner serves the page cross-origin isolated).
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// Starts the 2-thread pool once (threaded build); nothing in the single-thread builds.
async fn pool() {
    #[cfg(target_feature = "atomics")]
    {
        thread_local!(static STARTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
        if !STARTED.get() {
            STARTED.set(true);
            webtensor::wasm::init_thread_pool(2.0, None)
                .await
                .unwrap_or_else(|e| panic!("{:?}", wasm_bindgen::JsValue::from(e)));
        }
    }
}

/// The pool's workers take work in the threaded build (2 threads on the main thread of the
/// page); the single-thread builds run it all on one.
#[wasm_bindgen_test]
async fn the_cpu_thread_pool_runs_its_threads() {
    pool().await;
    // On a loaded machine a worker may wake too late for one round: up to 10 rounds (a pool
    // whose workers never run fails them all).
    let (mut sum, mut used) = (0, 0);
    for _ in 0..10 {
        let (s, u) = webtensor::threads::pool_probe(256);
        (sum, used) = (s, used.max(u));
        if used >= 2 || !cfg!(target_feature = "atomics") {
            break;
        }
    }
    assert_ne!(sum, 0);
    if cfg!(target_feature = "atomics") {
        assert_eq!(webtensor::threads::count(), 2);
        assert!(used >= 2, "the probe ran on {used} thread(s)");
    } else {
        assert_eq!((webtensor::threads::count(), used), (1, 1));
    }
    web_sys::console::log_1(
        &format!(
            "{} build: {} thread(s), the probe ran on {used}",
            webtensor::threads::build_name(),
            webtensor::threads::count()
        )
        .into(),
    );
}

#[wasm_bindgen_test]
async fn every_listed_device_adds_vectors() {
    pool().await;
    let reg = webtensor::backends::registry().await;
    for r in reg.backend_regs() {
        if let Some(reason) = r.unavailable_reason() {
            web_sys::console::log_1(&format!("{}: not available: {reason}", r.name()).into());
        }
    }
    let devices = reg.devices();
    assert!(!devices.is_empty());
    for d in devices {
        let out = webtensor::model::smoke::vector_add(
            d.clone(),
            &[1.0, 2.0, 3.0, 4.0],
            &[10.0, 20.0, 30.0, 40.0],
        )
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", d.name()));
        assert_eq!(out, vec![11.0, 22.0, 33.0, 44.0], "{}", d.name());
        web_sys::console::log_1(&format!("{} ({}): ok", d.name(), d.description()).into());
    }
}

/// One GPU adapter and device per page: later registries (devices(), each runtime, each
/// model) share it instead of requesting another.
#[wasm_bindgen_test]
async fn registries_share_one_webgpu_device() {
    pool().await;
    let gpu = |reg: &webtensor::backend::Registry| {
        reg.devices().into_iter().find(|d| d.name() == "WebGPU")
    };
    let a = gpu(&webtensor::backends::registry().await).expect("WebGPU");
    let b = gpu(&webtensor::backends::registry().await).expect("WebGPU again");
    assert!(std::rc::Rc::ptr_eq(&a, &b), "a second GPU device was made");
}

/// The WebGPU device; Chromium runs with `--enable-unsafe-webgpu`, so having none fails.
async fn webgpu() -> std::rc::Rc<dyn webtensor::backend::Device> {
    let reg = webtensor::backends::registry().await;
    reg.by_name("WebGPU").unwrap_or_else(|e| {
        let why: Vec<String> = reg
            .backend_regs()
            .iter()
            .filter_map(|r| r.unavailable_reason())
            .collect();
        panic!("WebGPU is required in Chromium: {e} ({})", why.join("; "))
    })
}

/// The op conformance suite on every device (CPU SIMD128 kernels, WebGPU on SwiftShader)
/// against the CPU scalar reference.
#[wasm_bindgen_test]
async fn op_suite_on_every_device_in_chromium() {
    pool().await;
    use webtensor::testing::{run_suite_on_registry, SuiteOptions};
    let reg = webtensor::backends::registry().await;
    let opts = SuiteOptions {
        filter: None,
        require_webgpu: true,
    };
    let report = run_suite_on_registry(&reg, &opts)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    web_sys::console::log_1(&format!("{report}").into());
    if let Err(e) = report.check() {
        panic!("{e}");
    }
}

/// Random graphs scheduled over WebGPU (some ops turned off) and the CPU equal the reference.
#[wasm_bindgen_test]
async fn scheduler_splits_between_webgpu_and_cpu_in_chromium() {
    pool().await;
    use webtensor::backend::{Device, DeviceKind, RestrictedDevice};
    use webtensor::backends::cpu::{CpuDevice, KernelSet};
    use webtensor::testing::sched::{check_scheduled, random_graph};
    let gpu = webgpu().await;
    let mut multi = 0;
    for seed in 1..=12u64 {
        let (g, denied) = random_graph(seed);
        let restricted: std::rc::Rc<dyn Device> = std::rc::Rc::new(RestrictedDevice::new(
            gpu.clone(),
            "WebGPU",
            DeviceKind::Gpu,
            denied,
        ));
        let cpu: std::rc::Rc<dyn Device> = std::rc::Rc::new(CpuDevice::new(KernelSet::Fast));
        let plan = check_scheduled(&g, vec![restricted, cpu], None, seed, 1e-5)
            .await
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        multi += usize::from(plan.splits.len() > 1);
    }
    assert!(multi >= 4, "{multi} mixed-device graphs");
}
