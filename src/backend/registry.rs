//! The registry: every backend family, their devices, and lookups by name or kind.

use std::rc::Rc;

use super::{Device, DeviceKind};
use crate::error::{Error, Result};

/// A family of devices (ggml's `ggml_backend_reg`): CPU, WebGPU, ...
pub trait BackendReg {
    /// Family name.
    fn name(&self) -> &str;
    /// Its devices (may be none).
    fn devices(&self) -> Vec<Rc<dyn Device>>;
    /// Why it has no device, when it has none (e.g. "navigator.gpu is undefined").
    fn unavailable_reason(&self) -> Option<String> {
        None
    }
}

/// All registered families and their devices.
#[derive(Default)]
pub struct Registry {
    regs: Vec<Rc<dyn BackendReg>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a family.
    pub fn register(&mut self, reg: Rc<dyn BackendReg>) {
        self.regs.push(reg);
    }

    /// The families, in registration order.
    pub fn backend_regs(&self) -> &[Rc<dyn BackendReg>] {
        &self.regs
    }

    /// Every device of every family.
    pub fn devices(&self) -> Vec<Rc<dyn Device>> {
        self.regs.iter().flat_map(|r| r.devices()).collect()
    }

    /// The device called `name` (case-insensitive).
    pub fn by_name(&self, name: &str) -> Result<Rc<dyn Device>> {
        self.devices()
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| Error::NoDevice(format!("no device named {name:?}")))
    }

    /// The first device of `kind`.
    pub fn by_kind(&self, kind: DeviceKind) -> Result<Rc<dyn Device>> {
        self.devices()
            .into_iter()
            .find(|d| d.kind() == kind)
            .ok_or_else(|| Error::NoDevice(format!("no {kind:?} device")))
    }

    /// The best device: a GPU (discrete, then integrated), else the CPU.
    pub fn best(&self) -> Result<Rc<dyn Device>> {
        self.by_kind(DeviceKind::Gpu)
            .or_else(|_| self.by_kind(DeviceKind::IntegratedGpu))
            .or_else(|_| self.by_kind(DeviceKind::Cpu))
    }
}
