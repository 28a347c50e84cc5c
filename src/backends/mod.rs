//! The concrete devices, and the one place that knows them all: [`registry`] and
//! [`registry_for`] (the crate root's `create_runtime` builds runtimes over them), and the
//! few facts of the concrete devices that are the page's rather than one device's (the CPU
//! thread pool, the SIMD level, the GPU buffer counts). Code above this layer (the wasm
//! bindings, benchmarks) reaches the devices through these, never through `cpu` or `webgpu`.

pub mod cpu;
#[cfg(feature = "webgpu")]
pub mod webgpu;

use std::rc::Rc;

use crate::backend::{Device, Registry};
use crate::error::Result;

pub use cpu::simd_level;
#[cfg(feature = "webgpu")]
pub use webgpu::{all_devices_buffers as gpu_buffers, LiveBuffers};

/// The CPU device's thread pool ([`cpu::threads`]): its size, the threaded wasm build's
/// start-up, the build's name and the loader's note, and a probe that the threads take work.
pub mod threads {
    pub use super::cpu::pool::pool_probe;
    #[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
    pub(crate) use super::cpu::threads::web;
    pub use super::cpu::threads::{build_name, check_count, count, note, set_note, MAX_THREADS};
}

/// A registry with every device this build can reach: the CPU always, then WebGPU (which
/// may have no device; its `unavailable_reason` says why).
///
/// In the browser the WebGPU family (its adapter and device) is made once per page and
/// shared by every later call (`listDevices()`, each runtime, each model), and made again only
/// after its device was lost or failed. Natively each call makes its own: a device kept in a
/// thread-local would be dropped during thread-local destruction at exit, which aborts in
/// the Vulkan driver's teardown.
pub async fn registry() -> Registry {
    registry_for(true).await
}

/// A registry with the CPU, and the GPU families when `gpu` is set: without it no GPU
/// instance or adapter is even asked for.
pub async fn registry_for(gpu: bool) -> Registry {
    registry_with(gpu, DeviceOptions::default()).await
}

/// How a registry's devices plan their work: given where a runtime's devices are made (not
/// a switch of the page or thread), so two runtimes on one page can differ and nothing
/// carries over from one to the next. The defaults are what runtimes use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceOptions {
    /// The WebGPU device's planning knobs (its matmul kernels, row widths, fusion).
    #[cfg(feature = "webgpu")]
    pub webgpu: webgpu::WebGpuOptions,
}

/// [`registry_for`] with its devices planning by `opts` (the GPU device itself, its adapter
/// and memory, are the page's one, shared). Built without the `webgpu` feature, the CPU
/// alone whatever `gpu` says.
pub async fn registry_with(gpu: bool, opts: DeviceOptions) -> Registry {
    let mut reg = Registry::new();
    reg.register(Rc::new(cpu::CpuReg::new(cpu::KernelSet::Fast)));
    #[cfg(not(feature = "webgpu"))]
    let _ = (gpu, opts);
    #[cfg(feature = "webgpu")]
    if gpu {
        let gpu = webgpu_reg().await;
        if opts.webgpu == webgpu::WebGpuOptions::default() {
            reg.register(gpu);
        } else {
            reg.register(Rc::new(gpu.with_options(opts.webgpu)));
        }
    }
    reg
}

#[cfg(all(feature = "webgpu", not(target_arch = "wasm32")))]
async fn webgpu_reg() -> Rc<webgpu::WebGpuReg> {
    Rc::new(webgpu::WebGpuReg::new().await)
}

#[cfg(all(feature = "webgpu", target_arch = "wasm32"))]
async fn webgpu_reg() -> Rc<webgpu::WebGpuReg> {
    thread_local! {
        static WEBGPU: std::cell::RefCell<Option<Rc<webgpu::WebGpuReg>>> =
            const { std::cell::RefCell::new(None) };
    }
    let cached = WEBGPU.with(|c| c.borrow().clone());
    if let Some(reg) = cached.filter(|r| !r.failed()) {
        return reg;
    }
    let reg = Rc::new(webgpu::WebGpuReg::new().await);
    WEBGPU.with(|c| *c.borrow_mut() = Some(reg.clone()));
    reg
}

/// A CPU device with the fast kernels on `threads` threads (`None`: the whole pool), apart
/// from any registry: for benchmarks that time one thread count against another in one page.
/// Errors: a count out of range (see [`cpu::CpuDevice::with_threads`]).
pub fn cpu_device(threads: Option<usize>) -> Result<Rc<dyn Device>> {
    Ok(Rc::new(cpu::CpuDevice::with_threads(
        cpu::KernelSet::Fast,
        threads,
    )?))
}
