//! The context shared by the WebGPU device, its buffers and backends: wgpu device and queue,
//! adapter facts, the pipeline cache, device-failure state, and the async bridges
//! (readback, queue completion) that must never block on wasm.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures_channel::oneshot;

use super::shader::ShaderKey;
use crate::backend::LocalBoxFuture;
use crate::error::{DeviceFault, Error, Result};

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

/// The buffers of a WebGPU device (or of every device this process made, see
/// [`all_devices_buffers`]): how many were made, and how many (and how many bytes) are alive.
/// A buffer is alive from its creation until it is dropped, which destroys it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveBuffers {
    /// Buffers made so far.
    pub created: u64,
    /// Buffers made and not yet dropped (destroyed).
    pub live: u64,
    /// Their bytes.
    pub live_bytes: u64,
}

/// Every WebGPU device's buffers together (natively: the whole process, so parallel tests see
/// each other's; in a page: every device the page's module made, a lost one included).
static ALL_CREATED: AtomicU64 = AtomicU64::new(0);
static ALL_LIVE: AtomicU64 = AtomicU64::new(0);
static ALL_LIVE_BYTES: AtomicU64 = AtomicU64::new(0);

/// The buffers of every WebGPU device this process made (see [`LiveBuffers`]).
pub fn all_devices_buffers() -> LiveBuffers {
    LiveBuffers {
        created: ALL_CREATED.load(Ordering::Relaxed),
        live: ALL_LIVE.load(Ordering::Relaxed),
        live_bytes: ALL_LIVE_BYTES.load(Ordering::Relaxed),
    }
}

/// A wgpu buffer that is counted while it lives and destroyed when dropped.
///
/// Dropping a `wgpu::Buffer` on the web does not destroy its `GPUBuffer`: wgpu's web backend
/// leaves that to the browser's garbage collector, which knows nothing of the GPU memory
/// behind a small wrapper object, so a page that loads and disposes models would hold every
/// disposed weight's memory for as long as the collector leaves those wrappers alone.
/// Destroying a buffer after the submit that uses it is valid: WebGPU (and wgpu natively)
/// frees it once that work is done.
pub(super) struct GpuBuffer {
    buf: wgpu::Buffer,
    live: Rc<Cell<LiveBuffers>>,
}

impl GpuBuffer {
    fn new(buf: wgpu::Buffer, live: Rc<Cell<LiveBuffers>>) -> Self {
        let size = buf.size();
        let mut l = live.get();
        l.created += 1;
        l.live += 1;
        l.live_bytes += size;
        live.set(l);
        ALL_CREATED.fetch_add(1, Ordering::Relaxed);
        ALL_LIVE.fetch_add(1, Ordering::Relaxed);
        ALL_LIVE_BYTES.fetch_add(size, Ordering::Relaxed);
        Self { buf, live }
    }
}

impl std::ops::Deref for GpuBuffer {
    type Target = wgpu::Buffer;
    fn deref(&self) -> &wgpu::Buffer {
        &self.buf
    }
}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        self.buf.destroy();
        let size = self.buf.size();
        let mut l = self.live.get();
        l.live = l.live.saturating_sub(1);
        l.live_bytes = l.live_bytes.saturating_sub(size);
        self.live.set(l);
        ALL_LIVE.fetch_sub(1, Ordering::Relaxed);
        ALL_LIVE_BYTES.fetch_sub(size, Ordering::Relaxed);
    }
}

/// Why the device failed, shared with wgpu's callbacks (which must be `Send`).
#[derive(Default)]
struct Failure {
    /// The failure's message; `None` while the device works.
    msg: Option<String>,
    /// Whether `msg` reports the device lost (or destroyed): the root cause, which later
    /// symptoms (a readback that cannot map, a submit that errs) never replace.
    lost: bool,
    /// Woken when the device fails: a wait on GPU work races this, since a lost device need
    /// not finish (or report on) the work it was given.
    waiters: Vec<oneshot::Sender<()>>,
}

impl Failure {
    /// Records `msg` (a loss when `lost`) unless a loss is already known, and wakes waiters.
    /// A loss reported after a symptom becomes the message, the symptom kept after it.
    fn set(&mut self, msg: String, lost: bool) {
        self.msg = Some(match (self.msg.take(), self.lost, lost) {
            (None, _, _) => msg,
            (Some(first), true, _) | (Some(first), false, false) => first,
            (Some(first), false, true) => format!("{msg} (after: {first})"),
        });
        self.lost |= lost;
        for w in self.waiters.drain(..) {
            let _ = w.send(());
        }
    }
}

/// The message of a lost device: "device lost (destroyed): <the browser's words>".
fn lost_message(reason: wgpu::DeviceLostReason, msg: &str) -> String {
    let why = match reason {
        wgpu::DeviceLostReason::Destroyed => "device lost (destroyed)",
        _ => "device lost",
    };
    match msg.trim() {
        "" => why.to_string(),
        m => format!("{why}: {m}"),
    }
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
    /// The device has `shader-f16`.
    pub has_f16: bool,
    /// The device has wgpu's `SUBGROUP` (native adapters only).
    pub has_subgroups: bool,
    /// Set by the device-lost callback, an error outside any scope, or a failed step; later
    /// calls fail with it.
    failure: Arc<Mutex<Failure>>,
    /// Error-scope results not yet known (on the web they resolve later); checked on sync.
    pending: RefCell<Vec<LocalBoxFuture<'static, Option<wgpu::Error>>>>,
    pipelines: RefCell<HashMap<ShaderKey, Rc<Pipeline>>>,
    /// Idle MAP_READ staging buffers, reused by later readbacks.
    staging: RefCell<Vec<GpuBuffer>>,
    created: Cell<ObjectCounts>,
    /// Buffers made and alive (shared with each [`GpuBuffer`], which counts itself out).
    live: Rc<Cell<LiveBuffers>>,
    /// Test hook: the device is destroyed right after this many more submits.
    #[cfg(feature = "testing")]
    lose_after: Cell<Option<u32>>,
    /// Bound where a shader declares an operand the node does not have (e.g. no mask), or
    /// one read through another binding: two slots, one storage alignment apart.
    pub dummy: GpuBuffer,
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
        // The optional features some kernels have variants for, where offered (wgpu offers
        // SUBGROUP on native adapters only).
        let required_features =
            adapter.features() & (wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP);
        let has_f16 = required_features.contains(wgpu::Features::SHADER_F16);
        let has_subgroups = required_features.contains(wgpu::Features::SUBGROUP);
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
        let failure = Arc::new(Mutex::new(Failure::default()));
        let lost = failure.clone();
        device.set_device_lost_callback(move |reason, msg| {
            if let Ok(mut f) = lost.lock() {
                f.set(lost_message(reason, &msg), true);
            }
        });
        let uncaptured = failure.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut f) = uncaptured.lock() {
                f.set(format!("uncaptured error: {e}"), false);
            }
        }));
        let live = Rc::new(Cell::new(LiveBuffers::default()));
        let dummy = GpuBuffer::new(
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("webtensor dummy"),
                // Four slots: b, d and a fused epilogue's two vectors (backend.rs).
                size: 4 * (limits.min_storage_buffer_offset_alignment as u64).max(16),
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            }),
            live.clone(),
        );
        Ok(Self {
            device,
            queue,
            info,
            limits,
            has_f16,
            has_subgroups,
            failure,
            pending: RefCell::new(Vec::new()),
            pipelines: RefCell::new(HashMap::new()),
            staging: RefCell::new(Vec::new()),
            created: Cell::new(ObjectCounts::default()),
            live,
            #[cfg(feature = "testing")]
            lose_after: Cell::new(None),
            dummy,
        })
    }

    /// Objects created so far (buffers: those the live-buffer count has seen made).
    pub fn created(&self) -> ObjectCounts {
        ObjectCounts {
            buffers: self.live.get().created,
            ..self.created.get()
        }
    }

    /// Buffers made and alive.
    pub fn live_buffers(&self) -> LiveBuffers {
        self.live.get()
    }

    /// Makes a buffer (counted, and destroyed when dropped).
    pub fn create_buffer(&self, desc: &wgpu::BufferDescriptor<'_>) -> GpuBuffer {
        GpuBuffer::new(self.device.create_buffer(desc), self.live.clone())
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
        Error::device(DEVICE_NAME, DeviceFault::Failed, msg)
    }

    /// The error of a device that was lost (or destroyed).
    fn lost_error(msg: impl Into<String>) -> Error {
        Error::device(DEVICE_NAME, DeviceFault::Lost, msg)
    }

    /// Fails if the device was lost or reported an error outside any scope.
    pub fn check(&self) -> Result<()> {
        let f = self
            .failure
            .lock()
            .map_err(|_| Self::device_error("device state poisoned"))?;
        match (&f.msg, f.lost) {
            (Some(msg), true) => Err(Self::lost_error(msg.clone())),
            (Some(msg), false) => Err(Self::device_error(msg.clone())),
            (None, _) => Ok(()),
        }
    }

    /// Destroys the wgpu device now (its memory is freed); every later call fails.
    pub fn destroy(&self) {
        if let Ok(mut f) = self.failure.lock() {
            f.set("device destroyed".into(), true);
        }
        self.device.destroy();
    }

    /// Fails the device for good with `msg`, unless it already failed: the error then names
    /// that first cause (a lost device makes later steps fail with vaguer messages, which a
    /// loss's error leaves out).
    fn fail(&self, msg: String) -> Error {
        let Ok(mut f) = self.failure.lock() else {
            return Self::device_error(msg);
        };
        let first = match (&f.msg, f.lost) {
            (Some(first), true) => return Self::lost_error(first.clone()),
            (Some(first), false) if *first != msg => Some(first.clone()),
            _ => None,
        };
        f.set(msg.clone(), false);
        match first {
            Some(first) => Self::device_error(format!("{first} ({msg})")),
            None => Self::device_error(msg),
        }
    }

    /// A receiver that fires when the device fails (at once if it already has).
    fn failed_signal(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        match self.failure.lock() {
            Ok(mut f) if f.msg.is_none() => {
                // Waits that ended dropped their receivers: forget those senders.
                f.waiters.retain(|w| !w.is_canceled());
                f.waiters.push(tx);
            }
            _ => {
                let _ = tx.send(());
            }
        }
        rx
    }

    /// Awaits `work`, unless the device fails first: a lost device need not complete the work
    /// it was given, nor reject what waits on it, so every wait on the GPU races the failure.
    async fn unless_failed<T>(&self, mut work: impl Future<Output = T> + Unpin) -> Result<T> {
        let mut failed = self.failed_signal();
        let done = std::future::poll_fn(|cx| {
            if let Poll::Ready(v) = Pin::new(&mut work).poll(cx) {
                return Poll::Ready(Some(v));
            }
            match Pin::new(&mut failed).poll(cx) {
                Poll::Ready(_) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            }
        })
        .await;
        match done {
            Some(v) => Ok(v),
            None => Err(self
                .check()
                .err()
                .unwrap_or_else(|| Self::device_error("device failed"))),
        }
    }

    /// An error caught in a scope: running out of memory leaves the device usable (the caller
    /// may retry smaller); anything else is a bug or a broken device and fails it for good.
    fn report(&self, e: wgpu::Error) -> Error {
        match e {
            wgpu::Error::OutOfMemory { .. } => Error::device(
                DEVICE_NAME,
                DeviceFault::OutOfMemory,
                format!("out of memory: {e}"),
            ),
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
            if let Some(e) = self.unless_failed(fut).await? {
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
        self.unless_failed(rx)
            .await?
            .map_err(|_| self.fail("queue dropped before its work completed".into()))?;
        self.drain_errors().await
    }

    /// Awaits `signal` (completion of submitted work), unless the device fails first.
    pub async fn work_done(&self, signal: oneshot::Receiver<()>) -> Result<()> {
        self.unless_failed(signal)
            .await?
            .map_err(|_| Self::device_error("queue dropped before the work completed"))
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
        let mapped = self
            .unless_failed(rx)
            .await?
            .map_err(|_| self.fail("readback cancelled".into()))?;
        if let Err(e) = mapped {
            // The browser refuses to map a buffer of a device it has lost, and may say so
            // before it reports the loss: wait for the queue (or the loss) so that the error
            // names the loss when that is what happened.
            let signal = self.work_done_signal();
            let _ = self.poll_native();
            let _ = self.work_done(signal).await;
            return Err(self.fail(format!(
                "a readback could not map its buffer ({e}): the device may have been lost"
            )));
        }
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
    fn take_staging(&self, len: u64) -> Result<GpuBuffer> {
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
        key: ShaderKey,
        source: impl FnOnce() -> String,
    ) -> Result<Rc<Pipeline>> {
        if let Some(p) = self.pipelines.borrow().get(&key) {
            return Ok(p.clone());
        }
        let label = format!("{:?}:{}:{:?}", key.0 .0, key.0 .1.name(), key.1);
        let (pipeline, layout) = self.scoped(|| {
            let desc = wgpu::ShaderModuleDescriptor {
                label: Some(&label),
                source: wgpu::ShaderSource::Wgsl(source().into()),
            };
            // Every runtime check naga adds stays on but `force_loop_bounding`: a counter in
            // every loop, so that a loop the driver cannot prove finite still ends. On an
            // NVIDIA H200 (Vulkan) it kept the register-tiled matmul's loops from unrolling
            // (its accumulators then lived in memory): 4096³ f32 1.8 → 18.1 TFLOP/s, Q6_K
            // 2.2 → 15.3 on the 64 x 64 tile, MiniLM at 128 tokens 7.6 → 2.9 ms, with bounds
            // and division checks kept (2026-12-04, scripts/gpu-check.sh with each check
            // off in turn). Safety: these shaders have no `loop` or `while` (a test checks),
            // and every `for` steps by a constant, a planner-set step of at least 1 or a
            // halving to 0 over a range of at most a tensor's length, so each ends.
            let checks = wgpu::ShaderRuntimeChecks {
                force_loop_bounding: false,
                ..wgpu::ShaderRuntimeChecks::checked()
            };
            let module = unsafe { self.device.create_shader_module_trusted(desc, checks) };
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

    /// Storage offset alignment in bytes (at least 16: bindings start and end at multiples
    /// of 16 bytes, see `backend::bind_span`).
    pub fn storage_align(&self) -> usize {
        (self.limits.min_storage_buffer_offset_alignment as usize).max(16)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn a_loss_names_the_failure_and_keeps_an_earlier_symptom_after_it() {
        let mut f = Failure::default();
        f.set("a readback could not map its buffer".into(), false);
        f.set("a second symptom".into(), false);
        assert_eq!(
            f.msg.as_deref(),
            Some("a readback could not map its buffer")
        );
        f.set("device lost (destroyed): gone".into(), true);
        let lost = "device lost (destroyed): gone (after: a readback could not map its buffer)";
        assert_eq!(f.msg.as_deref(), Some(lost));
        f.set("device lost: again".into(), true);
        f.set("a later symptom".into(), false);
        assert_eq!(f.msg.as_deref(), Some(lost));
        assert!(f.lost);
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn a_failure_wakes_every_waiter() {
        let mut f = Failure::default();
        let (tx, mut rx) = oneshot::channel();
        f.waiters.push(tx);
        f.set("device lost".into(), true);
        assert_eq!(rx.try_recv(), Ok(Some(())));
        assert!(f.waiters.is_empty());
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn lost_messages_are_clean_text() {
        let destroyed = wgpu::DeviceLostReason::Destroyed;
        assert_eq!(
            lost_message(destroyed, " Device was destroyed. "),
            "device lost (destroyed): Device was destroyed."
        );
        assert_eq!(
            lost_message(wgpu::DeviceLostReason::Unknown, ""),
            "device lost"
        );
    }
}
