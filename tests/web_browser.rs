//! wasm tests that run in headless Chromium (started with --enable-unsafe-webgpu through
//! webdriver.json), so WebGPU code paths run on SwiftShader: WebGPU is required here.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn every_listed_device_adds_vectors() {
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

/// The matmul cases with each WebGPU matmul kernel forced on every shape, on SwiftShader.
#[wasm_bindgen_test]
async fn every_matmul_kernel_passes_in_chromium() {
    use webtensor::backends::cpu::{CpuDevice, KernelSet};
    use webtensor::backends::webgpu::{set_matmul_kernels, MatmulKernels};
    let gpu = webgpu().await;
    for sel in [
        MatmulKernels::Tiled,
        MatmulKernels::Small,
        MatmulKernels::Base,
    ] {
        set_matmul_kernels(sel);
        let report = webtensor::testing::run_suite(
            gpu.clone(),
            std::rc::Rc::new(CpuDevice::new(KernelSet::Reference)),
            Some("matmul"),
        )
        .await;
        set_matmul_kernels(MatmulKernels::Auto);
        assert!(report.passed >= 60, "{sel:?}: {report}");
        if let Err(e) = report.check() {
            panic!("{sel:?}: {e}");
        }
    }
}

/// Random graphs scheduled over WebGPU (some ops turned off) and the CPU equal the reference.
#[wasm_bindgen_test]
async fn scheduler_splits_between_webgpu_and_cpu_in_chromium() {
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
