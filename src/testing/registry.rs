//! The suite over a registry: every case on every device a [`Registry`] lists (the CPU's
//! fast kernels, WebGPU when it has a device), each against the CPU scalar reference, as
//! test-backend-ops loops over every backend. Test files (native, Node, Chromium) call
//! [`run_suite_on_registry`] and check the report.

use std::fmt;
use std::rc::Rc;

use super::{run_suite, SuiteReport};
use crate::backend::{Device, DeviceKind, Registry};
use crate::backends::cpu::{CpuDevice, KernelSet};
use crate::error::{Error, Result};

/// The environment variable that makes a native run require a WebGPU device
/// (`WEBTENSOR_REQUIRE_WEBGPU=1`; `scripts/test.sh` sets it, since it installs lavapipe).
pub const REQUIRE_WEBGPU_ENV: &str = "WEBTENSOR_REQUIRE_WEBGPU";

/// The name of the WebGPU family in the registry.
const WEBGPU: &str = "WebGPU";

/// Whether this run expects a WebGPU device: natively, [`REQUIRE_WEBGPU_ENV`] is `1`; on
/// wasm never (Node has none; browser tests ask for it through [`SuiteOptions`]).
pub fn webgpu_required() -> bool {
    cfg!(not(target_arch = "wasm32"))
        && std::env::var(REQUIRE_WEBGPU_ENV).is_ok_and(|v| v.trim() == "1")
}

/// What [`run_suite_on_registry`] runs and expects.
#[derive(Clone, Debug, Default)]
pub struct SuiteOptions {
    /// Only cases whose name contains this (all when `None`).
    pub filter: Option<String>,
    /// Fail when the registry has no WebGPU device (the error carries its reason).
    pub require_webgpu: bool,
}

impl SuiteOptions {
    /// Every case; WebGPU required as [`webgpu_required`] says.
    pub fn from_env() -> Self {
        Self {
            filter: None,
            require_webgpu: webgpu_required(),
        }
    }
}

/// Results of the suite on every device of a registry.
#[derive(Clone, Debug, Default)]
pub struct RegistryReport {
    /// One report per device, in registry order.
    pub devices: Vec<SuiteReport>,
    /// Families without a device, with the reason each gives.
    pub unavailable: Vec<(String, String)>,
}

impl RegistryReport {
    /// The report of the device called `name` (case-insensitive).
    pub fn device(&self, name: &str) -> Option<&SuiteReport> {
        self.devices
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
    }

    /// `Err` listing every failed case on every device, and any case a CPU device skipped
    /// (the CPU is where the scheduler puts what other devices cannot run, so it runs every
    /// op); `Ok` otherwise.
    pub fn check(&self) -> std::result::Result<(), String> {
        let mut errors: Vec<String> = self
            .devices
            .iter()
            .filter_map(|r| r.check().err())
            .collect();
        for r in &self.devices {
            if r.kind == DeviceKind::Cpu && r.skipped > 0 {
                errors.push(format!(
                    "{} skipped {} cases; the CPU must run every op",
                    r.name, r.skipped
                ));
            }
        }
        if self.devices.is_empty() {
            errors.push("the registry lists no device".into());
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    }
}

impl fmt::Display for RegistryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cases = self.devices.first().map_or(0, |r| r.results.len());
        let names: Vec<&str> = self.devices.iter().map(|r| r.name.as_str()).collect();
        writeln!(
            f,
            "op suite: {cases} cases x {} devices ({}) against the CPU scalar reference",
            names.len(),
            names.join(", ")
        )?;
        for r in &self.devices {
            if f.alternate() {
                write!(f, "{r:#}")?;
            } else {
                write!(f, "{r}")?;
            }
        }
        for (family, why) in &self.unavailable {
            writeln!(f, "{family}: no device: {why}")?;
        }
        Ok(())
    }
}

/// Runs every case (or those `opts.filter` picks) on every device of `reg` against a CPU
/// device with the scalar reference kernels. Fails, before running anything, when
/// `opts.require_webgpu` and the registry has no WebGPU device; a failing case is not an
/// `Err` but a line of the report (see [`RegistryReport::check`]).
pub async fn run_suite_on_registry(reg: &Registry, opts: &SuiteOptions) -> Result<RegistryReport> {
    let unavailable: Vec<(String, String)> = reg
        .backend_regs()
        .iter()
        .filter(|r| r.devices().is_empty())
        .map(|r| {
            let why = r
                .unavailable_reason()
                .unwrap_or_else(|| "no reason given".into());
            (r.name().to_string(), why)
        })
        .collect();
    let devices = reg.devices();
    if opts.require_webgpu && !devices.iter().any(|d| d.name() == WEBGPU) {
        let why = unavailable
            .iter()
            .find(|(family, _)| family == WEBGPU)
            .map_or("the registry has no WebGPU family", |(_, why)| why.as_str());
        return Err(Error::NoDevice(format!(
            "WebGPU is required here but has no device: {why}"
        )));
    }
    let mut report = RegistryReport {
        devices: Vec::new(),
        unavailable,
    };
    for device in devices {
        let reference: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Reference));
        let r = run_suite(device, reference, opts.filter.as_deref()).await;
        report.devices.push(r);
    }
    Ok(report)
}
