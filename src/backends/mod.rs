//! The concrete devices, and the one place that knows them all: [`registry`].

pub mod cpu;
pub mod webgpu;

use std::cell::RefCell;
use std::rc::Rc;

use crate::backend::Registry;

thread_local! {
    static REGISTRY: RefCell<Option<Registry>> = const { RefCell::new(None) };
}

/// A registry with every device this build can reach: the CPU always, then WebGPU (which
/// may have no device; its `unavailable_reason` says why). Built once per thread and shared:
/// every call (each JS `devices()`, each runtime) sees the same devices instead of requesting
/// a new GPU adapter and device.
pub async fn registry() -> Registry {
    if let Some(reg) = REGISTRY.with(|r| r.borrow().clone()) {
        return reg;
    }
    let mut reg = Registry::new();
    reg.register(Rc::new(cpu::CpuReg::new(cpu::KernelSet::Fast)));
    reg.register(Rc::new(webgpu::WebGpuReg::new().await));
    REGISTRY.with(|r| *r.borrow_mut() = Some(reg.clone()));
    reg
}
