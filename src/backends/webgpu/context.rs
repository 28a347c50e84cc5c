//! The context shared by the WebGPU device, its buffers and backends: wgpu device and queue,
//! adapter facts, the pipeline cache, device-failure state, and the async bridges
//! (readback, queue completion) that must never block on wasm.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures_channel::oneshot;

use super::ops::PipelineKey;
use crate::backend::LocalBoxFuture;
use crate::error::{Error, Result};

/// The device name everywhere (device, buffer type prefix, errors).
pub(super) const DEVICE_NAME: &str = "WebGPU";

/// Objects a WebGPU device has created since it was made: what a prepared session avoids
/// making again on every run (command encoders, which WebGPU makes single-use, are not counted);
/// and its readbacks, which tensors kept on the device avoid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObjectCounts {
    /// Compute pipelines (each compiled once per kernel and dtype, then cached).
    pub pipelines: u64,
    /// Bind groups.
    pub bind_groups: u64,
    /// Buffers of every kind: storage, parameter (uniform) and readback staging.
    pub buffers: u64,
    /// Copies of device memory to the host.
    pub readbacks: u64,
}

/// Readback staging buffers up to this size are kept for reuse (larger ones are made per read).
const POOLED_STAGING_MAX: u64 = 16 << 20;
/// At most this many staging buffers are kept.
const POOLED_STAGING_COUNT: usize = 8;

/// A compiled compute pipeline with its (derived) bind group layout.
pub(super) struct Pipeline {
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
}

/// Owns the wgpu device and everything created once per device.
pub(super) struct Ctx {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub has_f16: bool,
    /// Set by the device-lost callback or an error outside any scope; later calls fail with it.
    failure: Arc<Mutex<Option<String>>>,
    /// Error-scope results not yet known (on the web they resolve later); checked on sync.
    pending: RefCell<Vec<LocalBoxFuture<'static, Option<wgpu::Error>>>>,
    pipelines: RefCell<HashMap<PipelineKey, Rc<Pipeline>>>,
    /// Idle MAP_READ staging buffers, reused by later readbacks.
    staging: RefCell<Vec<wgpu::Buffer>>,
    created: Cell<ObjectCounts>,
    /// Test hook: the device is destroyed right after this many more submits.
    #[cfg(feature = "testing")]
    lose_after: Cell<Option<u32>>,
    /// Bound where a shader declares an operand the node does not have (e.g. no mask), or
    /// one read through another binding: two slots, one storage alignment apart.
    pub dummy: wgpu::Buffer,
}

impl Ctx {
    /// Requests an adapter and a device with the adapter's own limits; `Err` says why none.
    pub async fn create() -> std::result::Result<Self, String> {
        #[cfg(target_arch = "wasm32")]
        browser_gpu_reachable()?;
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: None,
                apply_limit_buckets: false,
            })
            .await
            .map_err(|e| {
                if cfg!(target_arch = "wasm32") {
                    format!("no WebGPU adapter (navigator.gpu is undefined or requestAdapter returned null): {e}")
                } else {
                    format!("no WebGPU adapter (no Vulkan/Metal/DX12/GL driver found): {e}")
                }
            })?;
        let info = adapter.get_info();
        // A GLES/WebGL adapter may lack compute shaders or enough storage buffers: treat it
        // as no adapter rather than fail at the first pipeline.
        let downlevel = adapter.get_downlevel_capabilities();
        if !downlevel
            .flags
            .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
        {
            return Err(format!(
                "WebGPU adapter {} ({:?}) has no compute shaders",
                info.name, info.backend
            ));
        }
        if adapter.limits().max_storage_buffers_per_shader_stage < 3 {
            return Err(format!(
                "WebGPU adapter {} allows fewer than 3 storage buffers per shader",
                info.name
            ));
        }
        let has_f16 = adapter.features().contains(wgpu::Features::SHADER_F16);
        let required_features = if has_f16 {
            wgpu::Features::SHADER_F16
        } else {
            wgpu::Features::empty()
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("webtensor"),
                required_features,
                required_limits: adapter.limits(),
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| format!("WebGPU adapter {} refused a device: {e}", info.name))?;
        let limits = device.limits();
        let failure = Arc::new(Mutex::new(None::<String>));
        let lost = failure.clone();
        device.set_device_lost_callback(move |reason, msg| {
            if let Ok(mut f) = lost.lock() {
                f.get_or_insert_with(|| format!("device lost ({reason:?}): {msg}"));
            }
        });
        let uncaptured = failure.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut f) = uncaptured.lock() {
                f.get_or_insert_with(|| format!("uncaptured error: {e}"));
            }
        }));
        let dummy = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("webtensor dummy"),
            size: 2 * (limits.min_storage_buffer_offset_alignment as u64).max(16),
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        Ok(Self {
            device,
            queue,
            info,
            limits,
            has_f16,
            failure,
            pending: RefCell::new(Vec::new()),
            pipelines: RefCell::new(HashMap::new()),
            staging: RefCell::new(Vec::new()),
            created: Cell::new(ObjectCounts {
                buffers: 1,
                ..ObjectCounts::default()
            }),
            #[cfg(feature = "testing")]
            lose_after: Cell::new(None),
            dummy,
        })
    }

    /// Objects created so far.
    pub fn created(&self) -> ObjectCounts {
        self.created.get()
    }

    /// Makes a buffer (counted).
    pub fn create_buffer(&self, desc: &wgpu::BufferDescriptor<'_>) -> wgpu::Buffer {
        self.count(|c| c.buffers += 1);
        self.device.create_buffer(desc)
    }

    /// Makes a bind group (counted).
    pub fn create_bind_group(&self, desc: &wgpu::BindGroupDescriptor<'_>) -> wgpu::BindGroup {
        self.count(|c| c.bind_groups += 1);
        self.device.create_bind_group(desc)
    }

    /// Submits one command buffer to the queue.
    pub fn submit(&self, commands: wgpu::CommandBuffer) {
        self.queue.submit([commands]);
        #[cfg(feature = "testing")]
        match self.lose_after.get() {
            Some(0 | 1) => {
                self.lose_after.set(None);
                self.destroy();
            }
            Some(n) => self.lose_after.set(Some(n - 1)),
            None => {}
        }
    }

    /// Test hook: destroys the device (as if it were lost) right after the `n`-th submit from
    /// now, in the middle of whatever call makes it.
    #[cfg(feature = "testing")]
    pub fn lose_after_submits(&self, n: u32) {
        self.lose_after.set(Some(n));
    }

    fn count(&self, f: impl FnOnce(&mut ObjectCounts)) {
        let mut c = self.created.get();
        f(&mut c);
        self.created.set(c);
    }

    pub fn device_error(msg: impl Into<String>) -> Error {
        Error::Device {
            device: DEVICE_NAME.into(),
            msg: msg.into(),
        }
    }

    /// Fails if the device was lost or reported an error outside any scope.
    pub fn check(&self) -> Result<()> {
        let f = self
            .failure
            .lock()
            .map_err(|_| Self::device_error("device state poisoned"))?;
        match &*f {
            Some(msg) => Err(Self::device_error(msg.clone())),
            None => Ok(()),
        }
    }

    /// Destroys the wgpu device now (its memory is freed); every later call fails.
    pub fn destroy(&self) {
        let _ = self.fail("device destroyed".into());
        self.device.destroy();
    }

    /// Fails the device for good with `msg`, unless it already failed: the error then names
    /// that first cause (a lost device makes later steps fail with vaguer messages).
    fn fail(&self, msg: String) -> Error {
        let Ok(mut f) = self.failure.lock() else {
            return Self::device_error(msg);
        };
        match &*f {
            Some(first) if *first != msg => Self::device_error(format!("{first} ({msg})")),
            _ => Self::device_error(f.get_or_insert(msg).clone()),
        }
    }

    /// An error caught in a scope: running out of memory leaves the device usable (the caller
    /// may retry smaller); anything else is a bug or a broken device and fails it for good.
    fn report(&self, e: wgpu::Error) -> Error {
        match e {
            wgpu::Error::OutOfMemory { .. } => Self::device_error(format!("out of memory: {e}")),
            _ => self.fail(e.to_string()),
        }
    }

    /// Runs `f` inside validation and out-of-memory error scopes. Errors already known (native
    /// wgpu reports them at once) come back here; the rest are checked by [`Ctx::drain_errors`].
    pub fn scoped<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        self.check()?;
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        let futures: [LocalBoxFuture<'static, Option<wgpu::Error>>; 2] =
            [Box::pin(validation.pop()), Box::pin(oom.pop())];
        let mut cx = Context::from_waker(Waker::noop());
        let mut first = None;
        for mut fut in futures {
            match fut.as_mut().poll(&mut cx) {
                Poll::Ready(Some(e)) => {
                    first.get_or_insert(e);
                }
                Poll::Ready(None) => {}
                Poll::Pending => self.pending.borrow_mut().push(fut),
            }
        }
        match first {
            Some(e) => Err(self.report(e)),
            None => Ok(out),
        }
    }

    /// Awaits the error scopes still open from earlier calls; the first error is returned
    /// (and fails the device for later calls).
    pub async fn drain_errors(&self) -> Result<()> {
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        for fut in pending {
            if let Some(e) = fut.await {
                return Err(self.report(e));
            }
        }
        self.check()
    }

    /// Blocks natively until submitted work is done (drives callbacks); a no-op on wasm,
    /// where the browser's event loop drives them.
    pub fn poll_native(&self) -> Result<()> {
        #[cfg(not(target_arch = "wasm32"))]
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| self.fail(format!("poll failed: {e}")))?;
        Ok(())
    }

    /// A receiver that fires when all work submitted so far has completed.
    pub fn work_done_signal(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.queue.on_submitted_work_done(move || {
            let _ = tx.send(());
        });
        rx
    }

    /// Resolves when all submitted work has completed.
    pub async fn wait_idle(&self) -> Result<()> {
        self.check()?;
        let rx = self.work_done_signal();
        self.poll_native()?;
        rx.await
            .map_err(|_| self.fail("queue dropped before its work completed".into()))?;
        self.drain_errors().await
    }

    /// Readback: copies `[offset, offset + len)` of `src` (4-byte aligned) to a MAP_READ
    /// staging buffer (an idle one kept from an earlier read when one is large enough), maps
    /// it, and returns the bytes.
    pub async fn read_buffer(&self, src: &wgpu::Buffer, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.count(|c| c.readbacks += 1);
        let staging = self.take_staging(len)?;
        self.scoped(|| {
            let mut enc = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            enc.copy_buffer_to_buffer(src, offset, &staging, 0, len);
            self.submit(enc.finish());
        })?;
        let (tx, rx) = oneshot::channel();
        staging.map_async(wgpu::MapMode::Read, ..len, move |r| {
            let _ = tx.send(r);
        });
        self.poll_native()?;
        rx.await
            .map_err(|_| self.fail("readback cancelled".into()))?
            .map_err(|e| self.fail(format!("readback map failed: {e}")))?;
        let out = staging
            .get_mapped_range(..len)
            .map_err(|e| Self::device_error(format!("readback range: {e}")))?
            .to_vec();
        staging.unmap();
        self.drain_errors().await?;
        let mut pool = self.staging.borrow_mut();
        if staging.size() <= POOLED_STAGING_MAX && pool.len() < POOLED_STAGING_COUNT {
            pool.push(staging);
        }
        Ok(out)
    }

    /// The smallest idle staging buffer of at least `len` bytes, or a new one (sized up to a
    /// power of two, so that reads of similar sizes share it).
    fn take_staging(&self, len: u64) -> Result<wgpu::Buffer> {
        let mut pool = self.staging.borrow_mut();
        let best = pool
            .iter()
            .enumerate()
            .filter(|(_, b)| b.size() >= len)
            .min_by_key(|(_, b)| b.size())
            .map(|(i, _)| i);
        if let Some(i) = best {
            return Ok(pool.swap_remove(i));
        }
        drop(pool);
        let size = if len <= POOLED_STAGING_MAX {
            len.next_power_of_two().max(256)
        } else {
            len
        };
        self.scoped(|| {
            self.create_buffer(&wgpu::BufferDescriptor {
                label: Some("webtensor readback"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
    }

    /// The cached pipeline for `key`, compiling `source()` on first use.
    pub fn pipeline(
        &self,
        key: PipelineKey,
        source: impl FnOnce() -> String,
    ) -> Result<Rc<Pipeline>> {
        if let Some(p) = self.pipelines.borrow().get(&key) {
            return Ok(p.clone());
        }
        let label = format!("{:?}:{}", key.0, key.1.name());
        let (pipeline, layout) = self.scoped(|| {
            let module = self
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(&label),
                    source: wgpu::ShaderSource::Wgsl(source().into()),
                });
            let pipeline = self
                .device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(&label),
                    layout: None,
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache: None,
                });
            let layout = pipeline.get_bind_group_layout(0);
            (pipeline, layout)
        })?;
        self.count(|c| c.pipelines += 1);
        let pipeline = Rc::new(Pipeline { pipeline, layout });
        self.pipelines.borrow_mut().insert(key, pipeline.clone());
        Ok(pipeline)
    }

    /// Storage offset alignment in bytes.
    pub fn storage_align(&self) -> usize {
        (self.limits.min_storage_buffer_offset_alignment as usize).max(4)
    }

    /// Largest storage binding in bytes (capped to what u32 shader indices can address).
    pub fn max_binding(&self) -> usize {
        usize::try_from(
            self.limits
                .max_storage_buffer_binding_size
                .min(u32::MAX as u64),
        )
        .unwrap_or(u32::MAX as usize)
    }
}

/// Whether wgpu can reach `navigator.gpu` here. wgpu panics (killing the module) outside a
/// window or worker, e.g. in Node.js, so this is checked first and turned into a reason.
#[cfg(target_arch = "wasm32")]
fn browser_gpu_reachable() -> std::result::Result<(), String> {
    use js_sys::Reflect;
    let global = js_sys::global();
    let get = |obj: &wasm_bindgen::JsValue, key: &str| {
        Reflect::get(obj, &key.into())
            .ok()
            .filter(|v| !v.is_undefined() && !v.is_null())
    };
    if get(&global, "Window").is_none() && get(&global, "WorkerGlobalScope").is_none() {
        return Err("no WebGPU here: not a browser window or worker (e.g. Node.js)".into());
    }
    let gpu = get(&global, "navigator").and_then(|n| get(&n, "gpu"));
    if gpu.is_none() {
        return Err(
            "navigator.gpu is undefined (WebGPU is off or unsupported in this browser)".into(),
        );
    }
    Ok(())
}
