//! Native end-to-end checks of the registry and a one-op graph on every device found.
#![cfg(not(target_arch = "wasm32"))]

use webtensor::backend::DeviceKind;

#[test]
fn registry_has_a_cpu_and_adds_on_every_device() {
    pollster::block_on(async {
        let reg = webtensor::backends::registry().await;
        assert_eq!(reg.by_kind(DeviceKind::Cpu).unwrap().name(), "CPU");
        assert!(reg.best().is_ok());
        for r in reg.backend_regs() {
            if let Some(reason) = r.unavailable_reason() {
                println!("{}: not available: {reason}", r.name());
            }
        }
        for d in reg.devices() {
            let out = webtensor::model::smoke::vector_add(d.clone(), &[1.0, -2.0], &[0.5, 2.0])
                .await
                .unwrap();
            assert_eq!(out, vec![1.5, 0.0], "{}", d.name());
        }
        assert!(reg.by_name("no-such-device").is_err());
    });
}
