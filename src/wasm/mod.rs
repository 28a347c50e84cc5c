//! JS bindings: thin wrappers only. JS names, `Error`s, Promises and typed arrays live here;
//! the logic they call is in the rest of the crate, where native tests reach it.

#[cfg(feature = "bench")]
mod bench;
mod convert;
mod generator;
mod model;
// Public so that browser tests drive the JS surface (`Runtime`, `Graph`, `GpuTensor`) itself.
pub mod runtime;
mod state;
mod threads;
// Public so that the wasm tests (tests/web_node.rs) drive `Tokenizer` through its bindings.
pub mod tokenizer;

pub use convert::JsErr;
pub use threads::init_thread_pool;

use std::rc::Rc;

use js_sys::{Array, Float32Array, Object};
use wasm_bindgen::prelude::*;

use wasm_bindgen::JsCast;

use crate::backend::{Device, DeviceKind};
use convert::{prop, set, to_js_error};

/// Installs the panic hook (panics then reach the console with a message).
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

fn kind_name(k: DeviceKind) -> &'static str {
    match k {
        DeviceKind::Cpu => "cpu",
        DeviceKind::Gpu => "gpu",
        DeviceKind::IntegratedGpu => "integrated-gpu",
    }
}

fn device_object(d: &Rc<dyn Device>) -> Result<Object, JsErr> {
    let o = Object::new();
    set(&o, "name", &d.name().into())?;
    set(&o, "kind", &kind_name(d.kind()).into())?;
    set(&o, "description", &d.description().into())?;
    set(&o, "available", &true.into())?;
    let props = Object::new();
    for (k, v) in d.properties().into_iter().filter(|(_, v)| !v.is_empty()) {
        set(&props, &k, &v.into())?;
    }
    set(&o, "properties", &props)?;
    Ok(o)
}

/// Lists the devices: `[{name, kind, description, available, properties}]`, plus, for each
/// family with no device (no WebGPU here), `{name, available: false, reason}`.
#[wasm_bindgen(js_name = listDevices)]
pub async fn list_devices() -> Result<Array, JsErr> {
    let reg = crate::backends::registry().await;
    let out = Array::new();
    for r in reg.backend_regs() {
        let devs = r.devices();
        for d in &devs {
            let o = device_object(d)?;
            if d.kind() != DeviceKind::Cpu {
                add_browser_adapter_info(&o).await;
            }
            out.push(&o.into());
        }
        if devs.is_empty() {
            let o = Object::new();
            set(&o, "name", &r.name().into())?;
            set(&o, "available", &false.into())?;
            let reason = r
                .unavailable_reason()
                .unwrap_or_else(|| "no device found".into());
            set(&o, "reason", &reason.into())?;
            out.push(&o);
        }
    }
    Ok(out)
}

/// wgpu's adapter info is nearly empty on the web; the browser's own `GPUAdapter.info`
/// (vendor, architecture, isFallbackAdapter, ...) goes into `properties` as `adapter.*`.
/// Best effort: anything missing is simply left out.
async fn add_browser_adapter_info(device: &Object) {
    use js_sys::{Function, Promise, Reflect};
    let Some(gpu) = prop(&js_sys::global(), "navigator").and_then(|n| prop(&n, "gpu")) else {
        return;
    };
    let Some(request) = prop(&gpu, "requestAdapter").and_then(|f| f.dyn_into::<Function>().ok())
    else {
        return;
    };
    let Ok(promise) = request.call0(&gpu).and_then(|p| p.dyn_into::<Promise>()) else {
        return;
    };
    let Ok(adapter) = wasm_bindgen_futures::JsFuture::from(promise).await else {
        return;
    };
    let (Some(info), Some(props)) = (prop(&adapter, "info"), prop(device, "properties")) else {
        return;
    };
    for key in [
        "vendor",
        "architecture",
        "device",
        "description",
        "isFallbackAdapter",
    ] {
        if let Some(v) = prop(&info, key).filter(|v| v.as_string().is_none_or(|s| !s.is_empty())) {
            let _ = Reflect::set(&props, &format!("adapter.{key}").into(), &v);
        }
    }
}

/// The GPU buffers of every WebGPU device this module made, a lost one included:
/// `{ created, live, liveBytes }`. A buffer is live from its creation until the engine drops
/// it, which destroys it (so its memory is freed then, not when the page's garbage collector
/// gets to it): after `dispose()` of a model, `live` is back where it was before its `load`.
#[wasm_bindgen(
    js_name = gpuBuffers,
    unchecked_return_type = "{ created: number, live: number, liveBytes: number }"
)]
pub fn gpu_buffers() -> Result<Object, JsErr> {
    #[cfg(feature = "webgpu")]
    let (created, live, live_bytes) = {
        let b = crate::backends::gpu_buffers();
        (b.created, b.live, b.live_bytes)
    };
    // Built without the `webgpu` feature: no GPU buffers, ever.
    #[cfg(not(feature = "webgpu"))]
    let (created, live, live_bytes) = (0u64, 0u64, 0u64);
    let o = Object::new();
    set(&o, "created", &(created as f64).into())?;
    set(&o, "live", &(live as f64).into())?;
    set(&o, "liveBytes", &(live_bytes as f64).into())?;
    Ok(o)
}

/// `a + b` computed on the device called `device` ("CPU", "WebGPU").
#[wasm_bindgen(js_name = vectorAdd)]
pub async fn vector_add(
    device: String,
    a: Float32Array,
    b: Float32Array,
) -> Result<Float32Array, JsErr> {
    let reg = crate::backends::registry().await;
    let dev = reg.by_name(&device).map_err(to_js_error)?;
    let out = crate::model::smoke::vector_add(dev, &a.to_vec(), &b.to_vec())
        .await
        .map_err(to_js_error)?;
    Ok(Float32Array::from(out.as_slice()))
}

/// The cost model's device calibrations this module holds (measured by `device: 'auto'`
/// or set with [`set_calibrations`]), as text to keep and hand to `setCalibrations` on a
/// later page load: one line per device, keyed by crate version, device name and description.
#[wasm_bindgen(js_name = calibrations)]
pub fn calibrations() -> String {
    crate::backend::sched::export_calibrations()
}

/// Takes `calibrations()`'s text from an earlier load, so runtimes on those devices skip
/// measuring them (about a second for a software WebGPU adapter). Lines of another version
/// are skipped; a malformed text is refused whole with the line named. Returns how many
/// device calibrations were taken.
#[wasm_bindgen(js_name = setCalibrations)]
pub fn set_calibrations(text: &str) -> Result<u32, JsErr> {
    let n = crate::backend::sched::import_calibrations(text).map_err(to_js_error)?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}
