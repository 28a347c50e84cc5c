//! wasm tests that run in headless Chromium (started with --enable-unsafe-webgpu through
//! webdriver.json), so WebGPU code paths run on SwiftShader.
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
