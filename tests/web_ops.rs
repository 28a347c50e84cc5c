//! The op conformance suite in wasm (Node or a headless browser): CPU fast kernels
//! (SIMD128) against the scalar reference.
#![cfg(target_arch = "wasm32")]

use std::rc::Rc;

use wasm_bindgen_test::wasm_bindgen_test;
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::testing::{run_suite, uncovered_ops};

#[wasm_bindgen_test]
async fn cpu_fast_matches_reference_wasm() {
    let report = run_suite(
        Rc::new(CpuDevice::new(KernelSet::Fast)),
        Rc::new(CpuDevice::new(KernelSet::Reference)),
        None,
    )
    .await;
    wasm_bindgen_test::console_log!("{report}");
    assert_eq!(report.skipped, 0, "the CPU runs every op");
    if let Err(e) = report.check() {
        panic!("{e}");
    }
}

#[wasm_bindgen_test]
fn suite_covers_every_compute_op_wasm() {
    assert!(uncovered_ops().is_empty(), "{:?}", uncovered_ops());
}
