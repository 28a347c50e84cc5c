//! The scheduler over the real WebGPU device (natively: lavapipe) and the CPU: random graphs
//! with some ops turned off on WebGPU, compared with the CPU reference. Without an adapter
//! the test prints why and passes, unless `WEBTENSOR_REQUIRE_WEBGPU=1`.
#![cfg(not(target_arch = "wasm32"))]

use std::rc::Rc;

use webtensor::backend::{BackendReg, Device, DeviceKind, RestrictedDevice};
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::backends::webgpu::WebGpuReg;
use webtensor::testing::sched::{check_scheduled, random_graph};
use webtensor::testing::{webgpu_required, REQUIRE_WEBGPU_ENV};

#[test]
fn random_graphs_over_webgpu_and_cpu_match_the_reference() {
    pollster::block_on(async {
        let reg = WebGpuReg::new().await;
        let Some(gpu) = reg.devices().into_iter().next() else {
            let why = reg.unavailable_reason().unwrap_or_default();
            assert!(!webgpu_required(), "{REQUIRE_WEBGPU_ENV}=1: {why}");
            println!("WebGPU skipped: {why}");
            return;
        };
        let mut multi = 0;
        for seed in 1..=24u64 {
            let (g, denied) = random_graph(seed);
            let gpu: Rc<dyn Device> = Rc::new(RestrictedDevice::new(
                gpu.clone(),
                "WebGPU",
                DeviceKind::Gpu,
                denied,
            ));
            let cpu: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Fast));
            let plan = check_scheduled(&g, vec![gpu, cpu], None, seed, 1e-5)
                .await
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            multi += usize::from(plan.splits.len() > 1);
        }
        println!("{multi} of 24 graphs split between WebGPU and the CPU");
        assert!(multi >= 8);
    });
}
