//! wasm tests that run in Node (wasm-bindgen-test's default): the CPU device end to end and
//! the op conformance suite on its SIMD128 kernels (Node has no WebGPU: not expected).
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;
use webtensor::backend::DeviceKind;

#[wasm_bindgen_test]
async fn cpu_device_is_listed_with_simd128() {
    let reg = webtensor::backends::registry().await;
    let cpu = reg.by_kind(DeviceKind::Cpu).expect("a CPU device");
    assert!(
        cpu.description().contains("simd128"),
        "{}",
        cpu.description()
    );
}

#[wasm_bindgen_test]
async fn vector_add_on_cpu() {
    let reg = webtensor::backends::registry().await;
    let cpu = reg.by_name("cpu").expect("a CPU device");
    let out = webtensor::model::smoke::vector_add(cpu, &[1.0, 2.0, 3.0], &[0.5, 0.25, -3.0])
        .await
        .unwrap();
    assert_eq!(out, vec![1.5, 2.25, 0.0]);
}

#[wasm_bindgen_test]
async fn bad_input_is_an_error_not_a_panic() {
    let reg = webtensor::backends::registry().await;
    let cpu = reg.by_name("cpu").expect("a CPU device");
    let err = webtensor::model::smoke::vector_add(cpu, &[1.0], &[1.0, 2.0])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("one length"), "{err}");
}

#[wasm_bindgen_test]
async fn no_webgpu_in_node_is_a_reason_not_a_panic() {
    let reg = webtensor::backends::registry().await;
    let gpu = reg
        .backend_regs()
        .iter()
        .find(|r| r.name() == "WebGPU")
        .cloned()
        .expect("the WebGPU family is registered");
    assert!(gpu.devices().is_empty());
    let reason = gpu.unavailable_reason().unwrap_or_default();
    assert!(
        reason.contains("Node.js") || reason.contains("navigator.gpu"),
        "{reason}"
    );
}

/// The op conformance suite on every device of the registry (here: the CPU's SIMD128
/// kernels) against the CPU scalar reference.
#[wasm_bindgen_test]
async fn op_suite_on_every_device_in_node() {
    use webtensor::testing::{run_suite_on_registry, SuiteOptions};
    let reg = webtensor::backends::registry().await;
    let report = run_suite_on_registry(&reg, &SuiteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    console_log!("{report}");
    assert!(report.device("CPU").is_some(), "{report}");
    if let Err(e) = report.check() {
        panic!("{e}");
    }
}

#[wasm_bindgen_test]
fn suite_covers_every_compute_op() {
    let missing = webtensor::testing::uncovered_ops();
    assert!(missing.is_empty(), "ops without a case: {missing:?}");
}
