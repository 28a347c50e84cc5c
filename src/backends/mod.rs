//! The concrete devices, and the one place that knows them all: [`registry`].

pub mod cpu;
pub mod webgpu;

use std::rc::Rc;

use crate::backend::Registry;

/// A registry with every device this build can reach: the CPU always, then WebGPU (which
/// may have no device; its `unavailable_reason` says why).
pub async fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.register(Rc::new(cpu::CpuReg::new(cpu::KernelSet::Fast)));
    reg.register(Rc::new(webgpu::WebGpuReg::new().await));
    reg
}
