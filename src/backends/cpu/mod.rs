//! The CPU device: host buffers, the scalar reference kernels, and SIMD128 kernels on wasm32,
//! on a pool of threads ([`pool`]).

mod buffer;
pub mod kernels;
mod memory;
pub mod pool;
pub mod threads;
mod view;

pub use buffer::{CpuBuffer, CpuBufferType, CPU_ALIGNMENT, CPU_BUFFER_TYPE};
pub use kernels::KernelSet;
pub use pool::{Par, Pool};
pub use view::TensorView;

use std::ops::Range;
use std::rc::Rc;

use crate::backend::profile::node_key;
use crate::backend::{
    fuse, BackendImpl, BackendReg, BufferType, Device, DeviceCaps, DeviceKind, DeviceMemory,
    LocalBoxFuture, Profile, Support, TensorMemory,
};
use crate::error::{Error, Result};
use crate::graph::{Graph, Op, TensorId};

/// The CPU family: one device.
pub struct CpuReg {
    device: Rc<CpuDevice>,
}

impl CpuReg {
    /// The CPU family with its device running `kernels` on every thread of the pool.
    pub fn new(kernels: KernelSet) -> Self {
        Self {
            device: Rc::new(CpuDevice::new(kernels)),
        }
    }

    /// The CPU family with its device running `kernels` on `threads` threads (see
    /// [`CpuDevice::with_threads`]).
    pub fn with_threads(kernels: KernelSet, threads: Option<usize>) -> Result<Self> {
        Ok(Self {
            device: Rc::new(CpuDevice::with_threads(kernels, threads)?),
        })
    }
}

impl BackendReg for CpuReg {
    fn name(&self) -> &str {
        "CPU"
    }
    fn devices(&self) -> Vec<Rc<dyn Device>> {
        vec![self.device.clone()]
    }
}

/// The host CPU.
pub struct CpuDevice {
    kernels: KernelSet,
    pool: Pool,
    buffer_type: Rc<CpuBufferType>,
}

impl CpuDevice {
    /// A CPU device running `kernels` on every thread of rayon's global pool (natively one
    /// per core; on wasm what the threaded build's `initThreadPool` started, else 1).
    pub fn new(kernels: KernelSet) -> Self {
        Self::with_pool(kernels, Pool::global())
    }

    /// A CPU device running `kernels` on `threads` threads (`None`: as [`CpuDevice::new`]).
    /// Natively the device starts its own threads; on wasm the count must fit the global
    /// pool. Out of range (0, over [`pool::MAX_THREADS`], over the wasm pool) is an error
    /// naming the limit.
    pub fn with_threads(kernels: KernelSet, threads: Option<usize>) -> Result<Self> {
        Ok(Self::with_pool(kernels, Pool::new(threads)?))
    }

    fn with_pool(kernels: KernelSet, pool: Pool) -> Self {
        // The fast kernels read weights stored as panels; the reference reads GGUF bytes.
        let buffer_type = match kernels {
            KernelSet::Fast => CpuBufferType::new().packing(),
            KernelSet::Reference => CpuBufferType::new(),
        };
        Self {
            kernels,
            pool,
            buffer_type: Rc::new(buffer_type),
        }
    }

    /// This device with every size threshold off: each node that can be cut over threads
    /// is, however small (tests run the op suite's small cases across threads with it).
    pub fn eager(self) -> Self {
        Self {
            pool: self.pool.eager(),
            ..self
        }
    }

    /// Threads this device computes on (the reference kernels use one of them).
    pub fn threads(&self) -> usize {
        self.pool.threads()
    }
}

/// Which SIMD kernels this build carries.
pub fn simd_level() -> &'static str {
    if cfg!(all(target_arch = "wasm32", target_feature = "relaxed-simd")) {
        "wasm simd128 + relaxed simd"
    } else if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) {
        "wasm simd128"
    } else if cfg!(target_arch = "wasm32") {
        "wasm scalar"
    } else {
        "portable"
    }
}

/// How the quantized matmuls sum 8-bit dots on this engine (see
/// [`kernels::narrow_dots_faster`]).
pub fn int8_dots() -> &'static str {
    if !cfg!(target_arch = "wasm32") {
        "portable kernels (not wasm)"
    } else if !cfg!(target_feature = "relaxed-simd") {
        "SIMD128's 16-bit dots (no relaxed SIMD)"
    } else if kernels::narrow_dots_faster() {
        "relaxed 8-bit dots into 16-bit lanes, small weights' summed there (the engine's 32-bit dot is several x86 instructions)"
    } else {
        "relaxed 8-bit dots in 32-bit lanes (one instruction on this engine)"
    }
}

impl Device for CpuDevice {
    fn name(&self) -> &str {
        "CPU"
    }
    fn description(&self) -> String {
        let kernels = match self.kernels {
            KernelSet::Reference => "reference",
            KernelSet::Fast => simd_level(),
        };
        let threads = self.threads();
        let plural = if threads == 1 { "" } else { "s" };
        let note = threads::note();
        let note = if note.is_empty() {
            note
        } else {
            format!(" — {note}")
        };
        format!(
            "CPU ({kernels} kernels, {threads} thread{plural}, {} build){note}",
            threads::build_name()
        )
    }
    fn kind(&self) -> DeviceKind {
        DeviceKind::Cpu
    }
    fn memory(&self) -> DeviceMemory {
        memory::device_memory()
    }
    fn caps(&self) -> DeviceCaps {
        DeviceCaps {
            async_compute: false,
            host_buffer: true,
            buffer_from_host_ptr: false,
            events: false,
        }
    }
    fn properties(&self) -> Vec<(String, String)> {
        vec![
            ("simd".into(), simd_level().into()),
            ("threads".into(), self.threads().to_string()),
            ("build".into(), threads::build_name().into()),
            ("note".into(), threads::note()),
            ("int8_dots".into(), int8_dots().into()),
        ]
    }
    fn buffer_type(&self) -> Rc<dyn BufferType> {
        self.buffer_type.clone()
    }
    fn supports_op(&self, graph: &Graph, node: TensorId) -> Support {
        // Every op the graph builder accepts has a CPU kernel.
        match graph.get(node) {
            Ok(_) => Support::Yes,
            Err(e) => Support::No(e.to_string()),
        }
    }
    fn supports_inplace(&self, graph: &Graph, node: TensorId) -> bool {
        // These kernels read each element (or a whole row) before writing it.
        graph.get(node).is_ok_and(|t| {
            matches!(
                t.op,
                Op::Binary(_)
                    | Op::Scale(_)
                    | Op::Clamp { .. }
                    | Op::Unary(_)
                    | Op::SetRows
                    | Op::SoftMax { .. }
                    | Op::Norm { .. }
                    | Op::RmsNorm { .. }
                    | Op::Rope(_)
            )
        })
    }
    fn backend_impl(self: Rc<Self>) -> Result<Box<dyn BackendImpl>> {
        Ok(Box::new(CpuBackend { device: self }))
    }
}

/// A CPU stream: computes synchronously at enqueue time.
pub struct CpuBackend {
    device: Rc<CpuDevice>,
}

impl CpuBackend {
    fn view(&self, graph: &Graph, mem: &TensorMemory, id: TensorId) -> Result<TensorView> {
        let (view, stored) = self.view_or_panels(graph, mem, id)?;
        if stored.is_some() {
            return Err(Error::Graph(format!(
                "weight {} is stored as the int8 GEMM's panels, which only a matmul (as its \
                 weight) and get_rows (as its table) read on the CPU, and another op reads it",
                graph.tensor(id).name
            )));
        }
        Ok(view)
    }

    /// Tensor `id`'s view, and the panels it is stored as when it is a weight stored packed
    /// (the view's bytes are then those panels: only they may be read).
    fn view_or_panels(
        &self,
        graph: &Graph,
        mem: &TensorMemory,
        id: TensorId,
    ) -> Result<(TensorView, Option<Rc<kernels::Prepacked>>)> {
        let (buf, off) = mem.locate(graph, id)?;
        let t = graph.tensor(id);
        let cpu = buf
            .downcast::<CpuBuffer>()
            .ok_or_else(|| Error::ForeignBuffer {
                tensor: t.name.clone(),
                device: "CPU".into(),
                buffer: buf.type_name().to_string(),
            })?;
        let stored = match cpu.stored_at(off) {
            Some(p) if !t.is_view() => Some(p),
            _ if cpu.touches_stored(off, t.nbytes()) => {
                return Err(Error::Graph(format!(
                    "{} reads part of a weight stored as the int8 GEMM's panels",
                    t.name
                )))
            }
            _ => None,
        };
        // The buffer is kept alive by `mem` for the whole compute call.
        let view = unsafe { TensorView::new(t, cpu.base_ptr(), cpu.size(), off)? };
        Ok((view, stored))
    }
}

impl CpuBackend {
    /// The packed copy of matmul weight `id` (viewed as `a`) when it lives in a weights
    /// buffer and `b` has enough rows for the GEMM.
    fn packed_weights(
        &self,
        graph: &Graph,
        mem: &TensorMemory,
        id: TensorId,
        a: &TensorView,
        b: &TensorView,
    ) -> Result<Option<Rc<kernels::Prepacked>>> {
        if !kernels::Prepacked::worth(a.dtype, b.ne[1]) {
            return Ok(None);
        }
        let (buf, off) = mem.locate(graph, id)?;
        Ok(buf
            .downcast::<CpuBuffer>()
            .and_then(|c| c.packed_weights(buf, off, a)))
    }
}

impl BackendImpl for CpuBackend {
    fn compute(&self, graph: &Graph, nodes: &[TensorId], mem: &TensorMemory) -> Result<()> {
        // The pool's threads stay with this split until its last node (Pool::team).
        self.device
            .pool
            .team(|| self.compute_nodes(graph, nodes, mem, None))
    }
    fn synchronize(&self) -> LocalBoxFuture<'_, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }
    fn compute_profiled(
        &self,
        graph: &Graph,
        nodes: &[TensorId],
        mem: &TensorMemory,
        profile: &Profile,
    ) -> Option<Result<()>> {
        // Synchronous: each node has completed when the next starts, so it times them here.
        Some(
            self.device
                .pool
                .team(|| self.compute_nodes(graph, nodes, mem, Some(profile))),
        )
    }
}

impl CpuBackend {
    /// Computes `nodes`, adding each node's time (a fused chain's, as one row) to `profile`
    /// when given.
    fn compute_nodes(
        &self,
        graph: &Graph,
        nodes: &[TensorId],
        mem: &TensorMemory,
        profile: Option<&Profile>,
    ) -> Result<()> {
        let mut src = Vec::with_capacity(3);
        let par = self.device.pool.par();
        let profile = profile.filter(|p| p.is_on());
        let mut compute = Vec::with_capacity(nodes.len());
        for &id in nodes {
            if !graph.get(id)?.op.is_noop() {
                compute.push(id);
            }
        }
        // Matmul chains run as one kernel (backend::fuse), from use counts taken once a call.
        let fast = self.device.kernels == KernelSet::Fast;
        let uses = (fast && compute.iter().any(|&id| graph.tensor(id).op == Op::MatMul))
            .then(|| fuse::use_counts(graph));
        let mut i = 0;
        while i < compute.len() {
            let t = graph.tensor(compute[i]);
            let t0 = profile.is_some().then(crate::clock::now_ms);
            let done = match (t.op, fast) {
                (Op::MatMul, true) => {
                    self.matmul(graph, mem, &compute[i..], uses.as_deref(), par)?
                }
                (Op::GetRows, _) => self.get_rows(graph, mem, compute[i], par)?,
                _ => 0,
            };
            if done == 0 {
                let dst = self.view(graph, mem, compute[i])?;
                src.clear();
                for &s in &t.src {
                    src.push(self.view(graph, mem, s)?);
                }
                kernels::compute(par, self.device.kernels, &t.op, &dst, &src)?;
            }
            if let (Some(t0), Some(profile)) = (t0, profile) {
                let ms = crate::clock::now_ms() - t0;
                let fused = &compute[i + 1..i + done.max(1)];
                profile.record(
                    || {
                        let mut key = node_key(self.device.name(), graph, t);
                        for &f in fused {
                            key.push_str(&format!(" + {:?}", graph.tensor(f).op.kind()));
                        }
                        key
                    },
                    ms,
                );
            }
            i += done.max(1);
        }
        Ok(())
    }

    /// Runs the matmul `nodes[0]` with the nodes after it that [`fuse::matmul_chain`] finds
    /// fused into its store, or alone when there are none or the kernel cannot take them;
    /// returns how many nodes it computed (0: no fast kernel took it; the caller runs the
    /// reference).
    fn matmul(
        &self,
        graph: &Graph,
        mem: &TensorMemory,
        nodes: &[TensorId],
        uses: Option<&[u32]>,
        par: Par,
    ) -> Result<usize> {
        let t = graph.tensor(nodes[0]);
        let [ia, ib] = t.src[..] else {
            return Ok(0);
        };
        let (a, stored) = self.view_or_panels(graph, mem, ia)?;
        if t.ne.contains(&0) {
            return Ok(usize::from(stored.is_some()));
        }
        let b = self.view(graph, mem, ib)?;
        // A weight stored as panels has no other bytes: the panels' kernel must take it.
        let must = stored.is_some();
        let pre = match stored {
            Some(p) => Some(p),
            None => self.packed_weights(graph, mem, ia, &a, &b)?,
        };
        let pre = pre.as_deref();
        if let Some(c) = uses.and_then(|u| fuse::matmul_chain(graph, nodes, u)) {
            // The chain's output must not overlap the operands the GEMM is still reading
            // (the memory planner may reuse the bytes of one it frees after the matmul).
            let out = self.span(graph, mem, c.out)?;
            let mut free = true;
            for s in [ia, ib] {
                let s = self.span(graph, mem, s)?;
                free &= s.end <= out.start || out.end <= s.start;
            }
            let bias = self.view(graph, mem, c.bias)?;
            if let (true, Some(ep)) = (free, kernels::Epilogue::new(&bias, c.act)) {
                let dst = self.view(graph, mem, c.out)?;
                if kernels::matmul_fused(par, &dst, &a, &b, pre, Some(&ep)) {
                    return Ok(c.len);
                }
            }
        }
        let dst = self.view(graph, mem, nodes[0])?;
        let done = kernels::matmul_fused(par, &dst, &a, &b, pre, None);
        if must && !done {
            return Err(Error::Unsupported {
                op: t.op.name().to_string(),
                dtype: b.dtype.name(),
                device: self.device.name().to_string(),
                reason: format!(
                    "{}: its weight is stored as the int8 GEMM's panels, whose kernel takes \
                     f32 activations and a packed f32 output only",
                    t.name
                ),
            });
        }
        Ok(usize::from(done))
    }

    /// Runs get_rows `id` when its table is a weight stored as panels (rows dequantized from
    /// them); 0 when it is not (the caller runs the usual kernels).
    fn get_rows(&self, graph: &Graph, mem: &TensorMemory, id: TensorId, par: Par) -> Result<usize> {
        let t = graph.tensor(id);
        let [ia, ib] = t.src[..] else {
            return Ok(0);
        };
        let (a, stored) = self.view_or_panels(graph, mem, ia)?;
        let Some(p) = stored else {
            return Ok(0);
        };
        let kernels::Prepacked::Int8(p) = &*p else {
            return Ok(0);
        };
        let (dst, idx) = (self.view(graph, mem, id)?, self.view(graph, mem, ib)?);
        match kernels::get_rows_panels(par, &dst, &a, p, &idx) {
            Some(r) => r.map(|()| 1),
            None => Err(Error::Unsupported {
                op: t.op.name().to_string(),
                dtype: a.dtype.name(),
                device: self.device.name().to_string(),
                reason: format!(
                    "{}: its table is stored as the int8 GEMM's panels, read into packed f32 \
                     rows only",
                    t.name
                ),
            }),
        }
    }

    /// The host addresses tensor `id` spans.
    fn span(&self, graph: &Graph, mem: &TensorMemory, id: TensorId) -> Result<Range<usize>> {
        let (buf, off) = mem.locate(graph, id)?;
        let base = buf
            .downcast::<CpuBuffer>()
            .map_or(0, |c| c.base_ptr() as usize)
            + off;
        Ok(base..base + graph.tensor(id).nbytes())
    }
}
