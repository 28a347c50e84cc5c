//! The op conformance suite on the WebGPU device (natively: Mesa lavapipe), every case
//! against the CPU reference; ops WebGPU does not support are reported as skipped with the
//! reason. Without an adapter the test prints why and passes.
#![cfg(not(target_arch = "wasm32"))]

use std::rc::Rc;

use webtensor::backend::BackendReg;
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::backends::webgpu::WebGpuReg;
use webtensor::testing::run_suite;

#[test]
fn webgpu_matches_reference() {
    pollster::block_on(async {
        let reg = WebGpuReg::new().await;
        let Some(dev) = reg.devices().into_iter().next() else {
            println!(
                "WebGPU skipped: {}",
                reg.unavailable_reason().unwrap_or_default()
            );
            return;
        };
        println!("WebGPU: {}", dev.description());
        let report = run_suite(dev, Rc::new(CpuDevice::new(KernelSet::Reference)), None).await;
        println!("{report}");
        if let Err(e) = report.check() {
            panic!("{e}");
        }
    });
}
