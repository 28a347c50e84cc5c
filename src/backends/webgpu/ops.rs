//! Which nodes the WebGPU device runs, and how each becomes a compute dispatch (an attention
//! with its keys split, two: [`KvSplit`]): the shader ([`Kernel`] + source dtype), the
//! parameter block, the operands and the grid.
//!
//! [`plan`] is the single source of truth: `supports_op` answers from it, so the device never
//! claims a node its shaders cannot run.

use super::context::Ctx;
use super::shader::{
    in_place_kernel, AttShader, Kernel, Params, PipelineKey, RegTile, RowThreads, TileLimits,
    ATT_MAX_D, ATT_MAX_DV, ATT_TD, ATT_TILED_BYTES, ATT_TQ, ATT_WG, MAP_CLAMP, MAP_SCALE,
    MATMUL_TILE, MATVEC_COLS, MATVEC_ROWS, ROWS_COLS, SMALL_COLS, SMALL_WG, WG,
};
use crate::error::{Error, Result};
use crate::graph::{DType, Graph, Op, RopeMode, Tensor, TensorId, MAX_DIMS};

/// Which matmul kernels the planner may choose: a knob for benchmarks (same-run comparison
/// with the earlier selection) and for tests (every kernel on every shape).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MatmulKernels {
    /// By adapter and shape. On a software adapter: matvec for a few long dot products, the
    /// small-batch kernel up to `SMALL_COLS` columns (for f32 weights at every size), the
    /// 64 x 64 tile beyond. On a hardware GPU: the row-parallel kernel up to `SMALL_COLS`
    /// columns of `b` when k is long enough to share among a row's threads, else as
    /// [`MatmulKernels::Base`] (not the register-tiled kernel: see `matmul_kernel`).
    #[default]
    Auto,
    /// The selection before the small-batch kernel: matvec up to 8 columns, else the tile.
    Base,
    /// The 64 x 64 tile for every shape.
    Tiled,
    /// The small-batch kernel for every shape.
    Small,
    /// The register-tiled kernel (tile shape from the adapter's limits) for every shape; the
    /// 64 x 64 tile where the limits allow no register tile.
    Reg,
    /// The row-parallel kernel (threads per row from k, a workgroup reduction over k) for
    /// every shape.
    Rows,
}

/// From this k, `Auto` on a hardware GPU runs up to `SMALL_COLS` columns on the row-parallel
/// kernel (shorter rows leave too little for a row's threads to share).
const ROWS_MIN_K: usize = 128;

/// Threads per row of the row-parallel kernel for `rows` dot products of length `k`: about
/// 16 elements each, a power of two from 4 to `WG` (one row per workgroup); fewer (more rows
/// per workgroup) where the rows would need more than `max_groups` workgroups (e.g. a
/// vocabulary projection).
fn rows_threads(k: usize, rows: usize, max_groups: usize) -> usize {
    let mut tpr = 1 << (k / 16).clamp(4, WG).ilog2();
    while tpr > 1 && rows.div_ceil(WG / tpr) > max_groups {
        tpr /= 2;
    }
    tpr
}

/// How a WebGPU device plans its nodes: knobs for same-run comparisons and tests, set where
/// the device is made ([`super::WebGpuDevice::with_options`]), so two runtimes on one page
/// may differ and nothing carries over from one to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WebGpuOptions {
    /// Which matmul kernels the planner may choose (default [`MatmulKernels::Auto`]).
    pub matmul_kernels: MatmulKernels,
    /// Forces the threads per row of the row kernels (softmax, norms, row sums, argmax):
    /// `Some(t)` takes `t` rounded up to a power of two, 1 to 256; `None` (the default)
    /// chooses by adapter and row length.
    pub row_threads: Option<u32>,
    /// Fuses node chains into one dispatch (`fuse.rs`; default on).
    pub fusion: bool,
    /// Forces the key splits of a fused attention ([`KvSplit`]): `Some(n)` cuts the keys
    /// into `n` runs as even as they go (at most one a key; `Some(1)` never splits); `None`
    /// (the default) splits where few rows would leave a GPU idle (see `kv_splits`).
    pub kv_splits: Option<u32>,
    /// Runs the fused attention op (default on); off, the device refuses it, so models build
    /// the unfused nodes (tests, benchmarks). On lavapipe the fused op runs prompts at
    /// 0.76–0.94x the unfused nodes' speed with the query tiles (`cargo bench --bench
    /// attention`); MiniLM at 128 tokens on SwiftShader and on Firefox's lavapipe took about
    /// half the time of a workgroup per row (README).
    pub attention: bool,
    /// Lets a fused attention with several rows a KV head (its heads' query rows) run tiled
    /// over them (attention_tiled.wgsl: each K/V row read serves 16 rows; default on). Off,
    /// every attention takes the row kernel (tests cover both).
    pub query_tiles: bool,
    /// Lets kernels with a `shader-f16` variant use it where the adapter has the feature
    /// (default on; today the fused attention over an f16 cache).
    pub shader_f16: bool,
    /// Lets kernels with a subgroup variant use it where the device has wgpu's `SUBGROUP`
    /// feature (default on; today the fused attention; wgpu enables it on native adapters
    /// only, not through a browser's WebGPU).
    pub subgroups: bool,
}

impl Default for WebGpuOptions {
    fn default() -> Self {
        Self {
            matmul_kernels: MatmulKernels::Auto,
            row_threads: None,
            fusion: true,
            kv_splits: None,
            attention: true,
            query_tiles: true,
            shader_f16: true,
            subgroups: true,
        }
    }
}

/// The matmul kernel for an output of `m` x `n` (per batch entry of `batch`) with dot
/// products of length `k` over weights of dtype `dtype`. `software`: the adapter runs
/// shaders on the CPU (lavapipe, SwiftShader), where workgroup memory is ordinary cached
/// memory and barriers are costly, so the barrier-free small kernel also wins at large `n`
/// for f32 weights (webgpu_matmul bench on SwiftShader: 0.31 vs 0.17 GFLOP/s at
/// 128x384x1536). `reg`: the register tile the adapter's limits allow, if any. `sel`: which
/// kernels the device's options allow.
fn matmul_kernel(
    (m, n, k): (usize, usize, usize),
    batch: usize,
    dtype: DType,
    software: bool,
    reg: Option<RegTile>,
    sel: MatmulKernels,
) -> Kernel {
    let tiled = reg.map_or(Kernel::MatMul, Kernel::MatMulReg);
    match sel {
        MatmulKernels::Tiled => Kernel::MatMul,
        MatmulKernels::Small => Kernel::MatMulSmall,
        MatmulKernels::Reg => tiled,
        MatmulKernels::Rows => Kernel::MatMulRows,
        MatmulKernels::Base if n <= MATVEC_COLS => Kernel::MatVec,
        MatmulKernels::Base => Kernel::MatMul,
        // On a hardware GPU the small kernel's one invocation per 4 x 4 block, each walking
        // all of k, leaves most of the device idle: on an NVIDIA H200 (scripts/gpu-check.sh)
        // MiniLM q8_0 took 9.20 ms at 8 tokens and 20.5 ms at 16 x 32 with it, against 2.80
        // and 11.2 ms with matvec up to 8 columns and the tile beyond, and 8x384x1536 ran at
        // 51.5 against 83.7 GFLOP/s. So there the small kernel is not used. The row-parallel
        // kernel spreads few columns over every thread instead (matvec's fixed 64 threads per
        // row leave most idle at k = 384: 12 blocks of 32): on the H200, 32x1536x384 f32 at
        // 414 against 85 GFLOP/s, 1x4096x4096 at 237 against 124. Large outputs take the
        // 64 x 64 tile, not the register tile. With naga's loop bounding on, the register
        // tile lost to the tile at every size there (1.8 against 14.8 TFLOP/s at 4096³ f32);
        // with it off (`Ctx::pipeline`), at 4096³ it ran Q8_0 18.8 / Q4_0 20.4 / Q6_K 19.7
        // against the tile's 17.9 / 17.3 / 15.3, but Q4_K 4.7 against 5.8 and f32 at 1024³
        // 7.4 against 9.0 (2026-12-04, gpu-check): no clear win, so not chosen until a
        // shape rule is measured.
        MatmulKernels::Auto if !software && n <= SMALL_COLS && k >= ROWS_MIN_K => {
            Kernel::MatMulRows
        }
        MatmulKernels::Auto if !software && n <= MATVEC_COLS => Kernel::MatVec,
        MatmulKernels::Auto if !software => Kernel::MatMul,
        MatmulKernels::Auto => {
            // The small kernel has one invocation per 4 x 4 block; with too few of them
            // (one long dot product per row) matvec's 64 threads per row do better.
            let blocks = m.div_ceil(4) * n.div_ceil(4) * batch;
            if n <= MATVEC_COLS && blocks * 64 < k {
                Kernel::MatVec
            } else if n <= SMALL_COLS || dtype == DType::F32 {
                Kernel::MatMulSmall
            } else {
                Kernel::MatMul
            }
        }
    }
}

/// Whether the adapter is a software rasterizer running shaders on the CPU.
fn software_adapter(info: &wgpu::AdapterInfo) -> bool {
    let name = info.name.to_ascii_lowercase();
    info.device_type == wgpu::DeviceType::Cpu
        || ["swiftshader", "llvmpipe", "lavapipe"]
            .iter()
            .any(|s| name.contains(s))
}

/// One node as a dispatch (and, for a split attention, the merge after it: `split`).
#[derive(Clone)]
pub(super) struct NodePlan {
    pub key: PipelineKey,
    pub params: Params,
    /// Source `a` (binding 1).
    pub a: TensorId,
    /// Source `b` (binding 3): `Some(Some(id))` bound, `Some(None)` declared but absent
    /// (a dummy is bound), `None` not declared by the shader.
    pub b: Option<Option<TensorId>>,
    /// Source `c` (binding 4, set_rows' indices, attention's v; its offset goes in `e.x`).
    pub c: Option<TensorId>,
    /// Source `m` (binding 5, attention's mask; its offset goes in `e.y`): `Some(Some(id))`
    /// bound, `Some(None)` declared but absent (a dummy is bound), `None` not declared.
    pub m: Option<Option<TensorId>>,
    pub groups: [u32; 3],
    /// `a` and `b` share memory: bind them as one binding and read `b` through `a`'s.
    pub shared_b: bool,
    /// `a` and `c` share memory (attention's k and v, views of one tensor): `a`'s binding
    /// spans `c` too, read through it.
    pub shared_c: bool,
    /// The kernel may write its output over `a` (same layout): each invocation reads its
    /// elements (or its workgroup its row) before writing them.
    pub in_place_ok: bool,
    /// An attention with its keys split: this dispatch writes the splits' partial results to
    /// a scratch buffer (bound as `d`), and a second one ([`KvSplit::combine`]) merges them
    /// into the output.
    pub split: Option<KvSplit>,
}

/// A fused attention's keys cut into runs, each run of each output row a workgroup of its
/// own, and the runs' results merged by a second dispatch (shaders/attention_combine.wgsl).
/// One query row per head (a decode step) is a workgroup per head otherwise: 14 for
/// Qwen2.5-0.5B, each walking the whole KV cache, where a GPU runs thousands of threads
/// (llama.cpp's Vulkan and Metal flash attention split the same way for the same reason).
#[derive(Clone, Copy, Debug)]
pub(super) struct KvSplit {
    /// Scratch bytes the partial results take: per row and run, d_v sums, the run's maximum
    /// score and its weight sum (f32).
    pub scratch_bytes: u64,
    /// The merging dispatch's parameters and grid (its `a` the scratch at offset 0, its `d`
    /// the node's output).
    pub combine: (Params, [u32; 3]),
}

/// The merging dispatch of attention `plan` (bound, its output offset in `offs.x`), split as
/// `split` says: its `a` is the scratch, at offset 0.
pub(super) fn combine_plan(plan: &NodePlan, split: KvSplit) -> NodePlan {
    let (mut params, groups) = split.combine;
    params.offs = [plan.params.offs[0], 0, 0, 0];
    NodePlan {
        key: (Kernel::AttentionCombine, DType::F32),
        params,
        a: plan.a,
        b: None,
        c: None,
        m: None,
        groups,
        shared_b: false,
        shared_c: false,
        in_place_ok: false,
        split: None,
    }
}

/// Key runs of at least this many keys where the split is chosen by shape (`kv_splits`).
const SPLIT_MIN_KEYS: usize = 256;
/// Workgroups a split attention aims at on a GPU: a few per compute unit of a large one.
const SPLIT_TARGET_GROUPS: usize = 256;

/// Runs to cut `n_kv` keys into for `rows` output rows of an attention: `forced` (clamped
/// to 1 ..= n_kv), else 1 on a software adapter (its few cores are busy with a row each
/// already), else enough runs of at least [`SPLIT_MIN_KEYS`] keys to make about
/// [`SPLIT_TARGET_GROUPS`] workgroups, where the rows alone make fewer. The result is a
/// count of non-empty runs, `n_kv.div_ceil(chunk)` for the chunk `n_kv.div_ceil(splits)`
/// (1 without keys).
fn kv_splits(rows: usize, n_kv: usize, software: bool, forced: Option<u32>) -> usize {
    let want = match forced {
        Some(n) => n as usize,
        None if software || rows >= SPLIT_TARGET_GROUPS / 2 => 1,
        None => (SPLIT_TARGET_GROUPS / rows.max(1)).min(n_kv / SPLIT_MIN_KEYS),
    };
    let want = want.clamp(1, n_kv.max(1));
    n_kv.div_ceil(n_kv.div_ceil(want).max(1)).max(1)
}

/// Why planning a node failed: a refusal (the node's op and dtype are added by [`plan`] when it
/// becomes an [`Error::Unsupported`]), or any other error.
enum PlanError {
    Refused {
        /// The refused operand's dtype; `None`: the node's.
        dtype: Option<DType>,
        reason: String,
    },
    Other(Error),
}

impl From<Error> for PlanError {
    fn from(e: Error) -> Self {
        Self::Other(e)
    }
}

type PlanResult<T> = std::result::Result<T, PlanError>;

/// A refusal about the node as a whole.
fn unsupported(reason: impl Into<String>) -> PlanError {
    PlanError::Refused {
        dtype: None,
        reason: reason.into(),
    }
}

/// A refusal because of an operand of dtype `dtype`.
fn unsupported_dtype(dtype: DType, reason: impl Into<String>) -> PlanError {
    PlanError::Refused {
        dtype: Some(dtype),
        reason: reason.into(),
    }
}

/// Bytes per addressing unit of a tensor in the shaders (quantized tensors: bytes).
pub(super) fn unit(dt: DType) -> usize {
    match dt {
        DType::F32 | DType::I32 => 4,
        DType::F16 => 2,
        // The quantized dtypes.
        _ => 1,
    }
}

/// Alignment a tensor's byte offset must have (quantized f16 scales are read as half-words).
pub(super) fn granularity(dt: DType) -> usize {
    unit(dt).max(if dt.is_quantized() { 2 } else { 1 })
}

fn to_u32(x: usize, what: &str) -> PlanResult<u32> {
    u32::try_from(x).map_err(|_| unsupported(format!("{what} {x} exceeds 32-bit shader indexing")))
}

/// Shape and strides of `t` in storage units, after checking the shaders can address it.
fn describe(ctx: &Ctx, t: &Tensor) -> PlanResult<([u32; 4], [u32; 4])> {
    let u = unit(t.dtype);
    let g = granularity(t.dtype);
    if !t.view_offset.is_multiple_of(g) || t.nb.iter().any(|&nb| !nb.is_multiple_of(g)) {
        return Err(unsupported(format!(
            "{} has offsets/strides not a multiple of {g} bytes",
            t.name
        )));
    }
    let limit = ctx.max_binding();
    if t.nbytes().saturating_add(ctx.storage_align()) > limit {
        return Err(unsupported(format!(
            "{} ({} bytes) exceeds maxStorageBufferBindingSize ({limit})",
            t.name,
            t.nbytes()
        )));
    }
    let (mut ne, mut nb) = ([0u32; 4], [0u32; 4]);
    for i in 0..MAX_DIMS {
        ne[i] = to_u32(t.ne[i], "dimension")?;
        nb[i] = to_u32(t.nb[i] / u, "stride")?;
    }
    to_u32(t.numel(), "element count")?;
    Ok((ne, nb))
}

/// A 2-D grid of 1-D workgroups covering `n` invocations (or `n` workgroups if `per_group`).
fn grid(ctx: &Ctx, n: usize, per_group: bool) -> PlanResult<[u32; 3]> {
    let max = ctx.limits.max_compute_workgroups_per_dimension.max(1) as usize;
    let groups = if per_group { n } else { n.div_ceil(WG) };
    let x = groups.clamp(1, max);
    let y = groups.div_ceil(x).max(1);
    if y > max {
        return Err(unsupported(format!(
            "{n} invocations exceed the dispatch grid"
        )));
    }
    Ok([x as u32, y as u32, 1])
}

fn need(t: &Tensor, allowed: &[DType], what: &str) -> PlanResult<()> {
    if allowed.contains(&t.dtype) {
        Ok(())
    } else {
        Err(unsupported_dtype(
            t.dtype,
            format!(
                "{what} of dtype {} (WebGPU takes {allowed:?})",
                t.dtype.name()
            ),
        ))
    }
}

/// Whether two source tensors' byte spans overlap (all operands are bound read-write, and
/// WebGPU forbids aliasing writable bindings, so such operands must share one binding).
fn overlaps(graph: &Graph, x: TensorId, y: TensorId) -> bool {
    let (rx, ox) = graph.storage_of(x);
    let (ry, oy) = graph.storage_of(y);
    let (nx, ny) = (graph.tensor(x).nbytes(), graph.tensor(y).nbytes());
    rx == ry && nx > 0 && ny > 0 && ox < oy + ny && oy < ox + nx
}

/// Plans node `id` as one dispatch; `Ok(None)` when it has nothing to compute (empty).
/// Every reason the device cannot run it is an `Error::Unsupported`.
pub(super) fn plan(
    ctx: &Ctx,
    opts: &WebGpuOptions,
    graph: &Graph,
    id: TensorId,
) -> Result<Option<NodePlan>> {
    let t = graph.get(id)?;
    // A write of a state is always computed in place (the session binds both to the state).
    let in_state = t.op == Op::SetRows && graph.state_of(id).is_some();
    plan_node(ctx, opts, graph, t, in_state).map_err(|e| match e {
        PlanError::Refused { dtype, reason } => Error::Unsupported {
            op: t.op.name(),
            dtype: dtype.unwrap_or(t.dtype).name(),
            device: super::context::DEVICE_NAME.into(),
            reason: format!("node {}: {reason}", t.name),
        },
        PlanError::Other(e) => e,
    })
}

fn plan_node(
    ctx: &Ctx,
    opts: &WebGpuOptions,
    graph: &Graph,
    t: &Tensor,
    in_state: bool,
) -> PlanResult<Option<NodePlan>> {
    let srcs = t
        .src
        .iter()
        .map(|&s| graph.get(s))
        .collect::<Result<Vec<_>>>()?;
    if srcs.is_empty() {
        return Err(unsupported(format!("{} has no operands", t.op.name())));
    }
    if let Op::Attention { scale } = t.op {
        return plan_attention(ctx, opts, graph, t, &srcs, scale);
    }
    let shared_b = srcs.len() >= 2 && overlaps(graph, t.src[0], t.src[1]);
    if srcs.len() == 3 && t.src[..2].iter().any(|&s| overlaps(graph, t.src[2], s)) {
        return Err(unsupported("the third operand shares memory with another"));
    }
    if shared_b {
        // Only shaders that read b through `b_at` can take it from a's binding.
        let readable = matches!(
            t.op,
            Op::Binary(_) | Op::SoftMax { .. } | Op::MatMul | Op::Concat { .. } | Op::SetRows
        ) && srcs[0].dtype == srcs[1].dtype;
        let (_, oa) = graph.storage_of(t.src[0]);
        let (_, ob) = graph.storage_of(t.src[1]);
        let span = (oa + srcs[0].nbytes()).max(ob + srcs[1].nbytes()) - oa.min(ob);
        if !readable || span.saturating_add(ctx.storage_align()) > ctx.max_binding() {
            return Err(unsupported(
                "operands share memory in a way the shader cannot bind",
            ));
        }
    }
    let (d_ne, d_nb) = describe(ctx, t)?;
    let (a_ne, a_nb) = describe(ctx, srcs[0])?;
    let (b_ne, b_nb) = match srcs.get(1) {
        Some(b) => describe(ctx, b)?,
        None => ([1; 4], [0; 4]),
    };
    let mut params = Params {
        d_ne,
        d_nb,
        a_ne,
        a_nb,
        b_ne,
        b_nb,
        ..Params::default()
    };
    let a = t.src[0];
    let b = t.src.get(1).copied();
    let n = t.numel();
    let nrows = srcs[0].nrows();
    let software = software_adapter(&ctx.info);
    // Row kernels: threads per row from the row length, and their grid.
    let tpr = RowThreads::for_rows(srcs[0].ne[0], software, opts.row_threads);
    let row_grid = || grid(ctx, tpr.groups(nrows), true);
    params.u[1] = to_u32(n, "element count")?;
    // A third operand (set_rows' indices), bound at binding 4.
    let mut c = None;
    let (key, b, groups): (PipelineKey, Option<Option<TensorId>>, [u32; 3]) = match t.op {
        Op::Leaf | Op::View => return Ok(None),
        Op::Attention { .. } => unreachable!("planned by plan_attention"),
        Op::Binary(op) => {
            need(srcs[0], &[DType::F32], "binary operand")?;
            need(srcs[1], &[DType::F32], "binary operand")?;
            params.u[0] = op.code();
            ((Kernel::Binary, DType::F32), Some(b), grid(ctx, n, false)?)
        }
        // The unary kernel (unary.wgsl): u.x an act code, u.z MAP_SCALE / MAP_CLAMP.
        Op::Scale(s) => {
            need(srcs[0], &[DType::F32], "operand")?;
            params.u[2] = MAP_SCALE;
            params.f[0] = s;
            ((Kernel::Unary, DType::F32), None, grid(ctx, n, false)?)
        }
        Op::Clamp { min, max } => {
            need(srcs[0], &[DType::F32], "operand")?;
            params.u[2] = MAP_CLAMP;
            (params.f[1], params.f[2]) = (min, max);
            ((Kernel::Unary, DType::F32), None, grid(ctx, n, false)?)
        }
        Op::Unary(op) => {
            need(srcs[0], &[DType::F32], "operand")?;
            params.u[0] = op.code();
            ((Kernel::Unary, DType::F32), None, grid(ctx, n, false)?)
        }
        Op::SetRows => {
            // An f16 destination: over a state only, rows written a word (two halves) at a
            // time, so rows of even length at word-aligned strides (and the output starts on
            // a word: the binding checks it).
            let f16_words = srcs[0].dtype == DType::F16
                && in_state
                && srcs[1].ne[0].is_multiple_of(2)
                && srcs[1].nb[0] == 4
                && srcs[0].nb[0] == 2
                && srcs[0].nb[1..].iter().all(|nb| nb.is_multiple_of(4));
            if !f16_words {
                need(
                    srcs[0],
                    &[DType::F32],
                    "set_rows destination (f16: a state's rows of even length)",
                )?;
            }
            need(srcs[1], &[DType::F32], "set_rows rows")?;
            need(srcs[2], &[DType::I32], "set_rows indices")?;
            let ti = srcs[2];
            let stride = |i: usize| to_u32(ti.nb[i] / 4, "index stride");
            params.u[0] = stride(0)?;
            params.u[2] = stride(1)?;
            params.u[3] = stride(2)?;
            params.e[1] = to_u32(ti.ne[1], "index dim 1")?;
            params.e[2] = to_u32(ti.ne[2], "index dim 2")?;
            c = Some(t.src[2]);
            if f16_words {
                let pairs = srcs[1].numel() / 2;
                params.u[1] = to_u32(pairs, "row element pairs")?;
                (
                    (Kernel::SetRowsScatterF16, DType::F16),
                    Some(b),
                    grid(ctx, pairs, false)?,
                )
            } else if in_state {
                let rows = srcs[1].numel();
                params.u[1] = to_u32(rows, "row element count")?;
                (
                    (Kernel::SetRowsScatter, DType::F32),
                    Some(b),
                    grid(ctx, rows, false)?,
                )
            } else {
                ((Kernel::SetRows, DType::F32), Some(b), grid(ctx, n, false)?)
            }
        }
        Op::SoftMax { scale } => {
            need(srcs[0], &[DType::F32], "softmax input")?;
            if let Some(m) = srcs.get(1) {
                need(m, &[DType::F32], "softmax mask")?;
            }
            params.u[1] = to_u32(nrows, "row count")?;
            params.u[2] = u32::from(srcs.len() > 1);
            params.f[0] = scale;
            ((Kernel::SoftMax(tpr), DType::F32), Some(b), row_grid()?)
        }
        Op::Norm { eps } | Op::RmsNorm { eps } => {
            need(srcs[0], &[DType::F32], "norm input")?;
            params.u[0] = u32::from(matches!(t.op, Op::RmsNorm { .. }));
            params.u[1] = to_u32(nrows, "row count")?;
            params.f[0] = eps;
            // b: a fused residual (fuse.rs), otherwise a dummy.
            ((Kernel::Norm(tpr), DType::F32), Some(None), row_grid()?)
        }
        Op::SumRows | Op::Mean => {
            need(srcs[0], &[DType::F32], "reduction input")?;
            params.u[0] = u32::from(matches!(t.op, Op::Mean));
            params.u[1] = to_u32(nrows, "row count")?;
            ((Kernel::SumRows(tpr), DType::F32), None, row_grid()?)
        }
        Op::Argmax => {
            need(srcs[0], &[DType::F32], "argmax input")?;
            params.u[1] = to_u32(nrows, "row count")?;
            ((Kernel::Argmax(tpr), DType::F32), None, row_grid()?)
        }
        Op::Rope(rp) => {
            need(srcs[0], &[DType::F32], "rope input")?;
            need(srcs[1], &[DType::I32], "rope positions")?;
            // Frequency factors (contiguous f32, the builder checks) at binding 4.
            let factors = match srcs.get(2) {
                Some(f) => {
                    need(f, &[DType::F32], "rope frequency factors")?;
                    c = Some(t.src[2]);
                    true
                }
                None => false,
            };
            params.u[0] = u32::from(rp.mode == RopeMode::NeoX);
            params.u[2] = to_u32(rp.n_dims, "n_dims")?;
            params.f[0] = rp.freq_base;
            params.f[1] = rp.freq_scale;
            // One invocation per rotated pair or passed-through element.
            let slots = nrows * (t.ne[0] - rp.n_dims / 2);
            params.u[1] = to_u32(slots, "invocation count")?;
            (
                (Kernel::Rope { factors }, DType::F32),
                Some(b),
                grid(ctx, slots, false)?,
            )
        }
        Op::Cpy => match (srcs[0].dtype, t.dtype) {
            (DType::I32, DType::I32) => (
                (Kernel::CopyU32, DType::I32),
                Some(None),
                grid(ctx, n, false)?,
            ),
            (s, DType::F32 | DType::F16) if s != DType::I32 => {
                if t.dtype == DType::F32 {
                    ((Kernel::Cpy, srcs[0].dtype), None, grid(ctx, n, false)?)
                } else {
                    params.u[1] = to_u32(n.div_ceil(2), "word count")?;
                    params.u[2] = to_u32(n, "element count")?;
                    (
                        (Kernel::CpyF16, srcs[0].dtype),
                        None,
                        grid(ctx, n.div_ceil(2), false)?,
                    )
                }
            }
            (DType::F32 | DType::F16, DType::Q8_0 | DType::Q4_0) => {
                let blocks = n / crate::graph::QK;
                params.u[0] = u32::from(t.dtype == DType::Q4_0);
                params.u[1] = to_u32(blocks.div_ceil(2), "block pair count")?;
                params.u[2] = to_u32(blocks, "block count")?;
                (
                    (Kernel::Quantize, srcs[0].dtype),
                    None,
                    grid(ctx, blocks.div_ceil(2), false)?,
                )
            }
            (s, d) if s == d && s.is_quantized() && srcs[0].rows_contiguous() => {
                let bytes = t.nbytes();
                params.u[0] = to_u32(s.row_bytes(t.ne[0])?, "row bytes")?;
                params.u[1] = to_u32(bytes.div_ceil(4), "word count")?;
                params.u[2] = to_u32(bytes, "byte count")?;
                (
                    (Kernel::CopyBytes, DType::I32),
                    None,
                    grid(ctx, bytes.div_ceil(4), false)?,
                )
            }
            (s, d) => {
                return Err(unsupported(format!(
                    "cpy {} -> {} (requantizing copies run on the CPU)",
                    s.name(),
                    d.name()
                )))
            }
        },
        Op::Concat { dim } => {
            need(srcs[0], &[DType::F32, DType::I32], "concat operand")?;
            params.u[0] = to_u32(dim, "dim")?;
            params.u[2] = 1;
            ((Kernel::CopyU32, DType::I32), Some(b), grid(ctx, n, false)?)
        }
        Op::GetRows => {
            need(srcs[1], &[DType::I32], "get_rows indices")?;
            if srcs[0].dtype == DType::I32 {
                return Err(unsupported_dtype(DType::I32, "get_rows of i32 rows"));
            }
            (
                (Kernel::GetRows, srcs[0].dtype),
                Some(b),
                grid(ctx, n, false)?,
            )
        }
        Op::MatMul => {
            need(srcs[1], &[DType::F32], "matmul activations")?;
            if srcs[0].dtype == DType::I32 {
                return Err(unsupported_dtype(DType::I32, "matmul of i32 weights"));
            }
            let (ta, tb) = (srcs[0], srcs[1]);
            if ta.ne[2] == 0 || ta.ne[3] == 0 {
                return Ok(None);
            }
            params.u[0] = to_u32(tb.ne[2] / ta.ne[2], "batch ratio")?;
            params.u[1] = to_u32(tb.ne[3] / ta.ne[3], "batch ratio")?;
            let max = ctx.limits.max_compute_workgroups_per_dimension as usize;
            let batch = t.ne[2] * t.ne[3];
            let reg = RegTile::for_limits(TileLimits::from(&ctx.limits));
            let shape = (t.ne[0], t.ne[1], ta.ne[0]);
            let mut kernel =
                matmul_kernel(shape, batch, ta.dtype, software, reg, opts.matmul_kernels);
            if kernel == Kernel::MatVec
                && (t.ne[1] > MATVEC_COLS || t.ne[0].div_ceil(MATVEC_ROWS) > max)
            {
                kernel = Kernel::MatMulSmall;
            }
            if kernel == Kernel::MatMulSmall && shared_b {
                // The small kernel reads b from its own binding only.
                kernel = Kernel::MatMul;
            }
            let g = match kernel {
                Kernel::MatVec => [t.ne[0].div_ceil(MATVEC_ROWS), 1, batch],
                Kernel::MatMulSmall => {
                    let blocks = t.ne[0].div_ceil(4) * t.ne[1].div_ceil(4);
                    let groups = blocks.div_ceil(SMALL_WG);
                    let x = groups.clamp(1, max);
                    [x, groups.div_ceil(x), batch]
                }
                Kernel::MatMulReg(tile) => [
                    t.ne[0].div_ceil(tile.tm as usize),
                    t.ne[1].div_ceil(tile.tn as usize),
                    batch,
                ],
                Kernel::MatMulRows => {
                    let tpr = rows_threads(ta.ne[0], t.ne[0], max);
                    params.u[2] = tpr as u32;
                    [
                        t.ne[0].div_ceil(WG / tpr),
                        t.ne[1].div_ceil(ROWS_COLS),
                        batch,
                    ]
                }
                _ => [
                    t.ne[0].div_ceil(MATMUL_TILE),
                    t.ne[1].div_ceil(MATMUL_TILE),
                    batch,
                ],
            };
            if g.iter().any(|&x| x > max) {
                return Err(unsupported(
                    "matmul grid exceeds maxComputeWorkgroupsPerDimension",
                ));
            }
            let wg = ctx.limits.max_compute_invocations_per_workgroup;
            if wg < 256 || ctx.limits.max_compute_workgroup_storage_size < 8192 {
                return Err(unsupported("adapter limits too small for the tiled matmul"));
            }
            (
                (kernel, srcs[0].dtype),
                Some(b),
                [g[0] as u32, g[1] as u32, g[2] as u32],
            )
        }
    };
    if n == 0 || groups.contains(&0) {
        return Ok(None);
    }
    if ctx.limits.max_compute_invocations_per_workgroup < WG as u32
        || ctx.limits.max_compute_workgroup_size_x < WG as u32
    {
        return Err(unsupported(
            "adapter allows fewer than 256 invocations per workgroup",
        ));
    }
    Ok(Some(NodePlan {
        key,
        params,
        a,
        b,
        c,
        m: None,
        groups,
        shared_b,
        shared_c: false,
        in_place_ok: in_place_kernel(key.0) && (!shared_b || t.src[0] == t.src[1]),
        split: None,
    }))
}

/// The attention shader's variant for K/V of `dtype`: each optional feature where the
/// device has it and the options allow it (f16 only over an f16 cache).
fn att_shader(ctx: &Ctx, opts: &WebGpuOptions, dtype: DType) -> AttShader {
    AttShader {
        f16: opts.shader_f16 && ctx.has_f16 && dtype == DType::F16,
        subgroups: opts.subgroups && ctx.has_subgroups,
    }
}

/// Plans a fused attention node (shaders/attention.wgsl): k (f32 or f16) bound as `a`, q as
/// `b`, v at binding 4 (strides in `c_nb`, offset in `e.x`), the mask or a dummy at binding 5
/// (shape and strides in `m_ne` / `m_nb`, offset in `e.y`, `e.z` 1 when bound), `f.x` the
/// scale; one workgroup per output row (`u.y` rows).
fn plan_attention(
    ctx: &Ctx,
    opts: &WebGpuOptions,
    graph: &Graph,
    t: &Tensor,
    srcs: &[&Tensor],
    scale: f32,
) -> PlanResult<Option<NodePlan>> {
    if !opts.attention {
        return Err(unsupported(
            "fused attention turned off (WebGpuOptions::attention)",
        ));
    }
    let (q, k, v) = (srcs[0], srcs[1], srcs[2]);
    need(q, &[DType::F32], "attention q")?;
    need(k, &[DType::F32, DType::F16], "attention k")?;
    need(v, &[k.dtype], "attention v (k's dtype)")?;
    if let Some(m) = srcs.get(3) {
        need(m, &[DType::F32], "attention mask")?;
    }
    if q.ne[0] > ATT_MAX_D || v.ne[0] > ATT_MAX_DV {
        return Err(unsupported(format!(
            "head sizes {} (q, k) and {} (v) exceed the kernel's {ATT_MAX_D} and {ATT_MAX_DV}",
            q.ne[0], v.ne[0]
        )));
    }
    // Every operand is bound read-write, and WebGPU forbids aliasing writable bindings: q or
    // v in k's tensor (MiniLM's q, k and v are views of one projection) are read through k's
    // binding, which then spans them; the mask and any other pair must be apart.
    let root = |i: usize| graph.storage_of(t.src[i]).0;
    let (shared_b, shared_c) = (root(0) == root(1), root(2) == root(1));
    if (root(0) == root(2) && !shared_b) || (srcs.len() > 3 && (0..3).any(|i| root(i) == root(3))) {
        return Err(unsupported("attention operands share memory"));
    }
    if shared_b || shared_c {
        let span = |i: usize| {
            let (_, o) = graph.storage_of(t.src[i]);
            (o, o + srcs[i].nbytes())
        };
        let mut lo_hi = span(1);
        for (i, on) in [(0, shared_b), (2, shared_c)] {
            if on {
                let (lo, hi) = span(i);
                lo_hi = (lo_hi.0.min(lo), lo_hi.1.max(hi));
            }
        }
        if (lo_hi.1 - lo_hi.0).saturating_add(ctx.storage_align()) > ctx.max_binding() {
            return Err(unsupported(
                "attention operands share memory over more than one binding",
            ));
        }
    }
    if ctx.limits.max_compute_invocations_per_workgroup < ATT_WG as u32
        || ctx.limits.max_compute_workgroup_size_x < ATT_WG as u32
    {
        return Err(unsupported(
            "adapter allows too few invocations per workgroup",
        ));
    }
    let (d_ne, d_nb) = describe(ctx, t)?;
    let (a_ne, a_nb) = describe(ctx, k)?;
    let (b_ne, b_nb) = describe(ctx, q)?;
    let (_, c_nb) = describe(ctx, v)?;
    let (m_ne, m_nb) = match srcs.get(3) {
        Some(m) => describe(ctx, m)?,
        None => ([1; 4], [0; 4]),
    };
    let rows = q.ne[1] * q.ne[2] * q.ne[3];
    if t.numel() == 0 || rows == 0 {
        return Ok(None);
    }
    let mut params = Params {
        d_ne,
        d_nb,
        a_ne,
        a_nb,
        b_ne,
        b_nb,
        c_nb,
        m_ne,
        m_nb,
        ..Params::default()
    };
    params.e[2] = u32::from(srcs.len() > 3);
    params.f[0] = scale;
    let (n_kv, d_v) = (k.ne[1], v.ne[0]);
    let software = software_adapter(&ctx.info);
    let mut splits = kv_splits(rows, n_kv, software, opts.kv_splits);
    // Each row's runs side by side in the scratch: it must fit one binding.
    let per_split = rows as u64 * (d_v as u64 + 2) * 4;
    if per_split * splits as u64 > ctx.max_binding() as u64 {
        splits = 1;
    }
    let split = if splits > 1 {
        let chunk = n_kv.div_ceil(splits);
        params.u[2] = splits as u32;
        params.u[3] = to_u32(chunk, "keys per split")?;
        let combine = Params {
            d_ne,
            d_nb,
            b_ne,
            u: [
                0,
                to_u32(rows * d_v, "attention output size")?,
                splits as u32,
                0,
            ],
            ..Params::default()
        };
        Some(KvSplit {
            scratch_bytes: per_split * splits as u64,
            combine: (combine, grid(ctx, rows * d_v, false)?),
        })
    } else {
        None
    };
    // The query rows of the heads sharing a KV head (all its query heads' rows: a decode
    // step's too with grouped-query attention) share each K/V tile in the query-tiled
    // kernel, for unsplit keys (splits serve a few rows on a GPU). On a software adapter from
    // a quarter tile up: it then reads K/V at least 4x less often than a workgroup per row
    // (lavapipe, 4 query rows over 1024 keys: 2.1x the row kernel's speed, 4.5x with GQA 4).
    // On a GPU from a full tile: below it, a workgroup per row keeps more of it busy
    // (unmeasured on one).
    let kv_rows = q.ne[1] * (q.ne[2] / k.ne[2]);
    let min_rows = if software { ATT_TQ / 4 } else { ATT_TQ };
    let tiled = opts.query_tiles
        && split.is_none()
        && kv_rows >= min_rows
        && q.ne[0] <= ATT_TD
        && d_v <= ATT_TD
        && ctx.limits.max_compute_workgroup_storage_size as usize >= ATT_TILED_BYTES;
    // u.y: the tiled kernel's workgroup count, the row kernel's row count.
    let (kernel, items) = if tiled {
        let items = kv_rows.div_ceil(ATT_TQ) * k.ne[2] * q.ne[3];
        params.u[1] = to_u32(items, "workgroup count")?;
        (Kernel::AttentionTiled, items)
    } else {
        params.u[1] = to_u32(rows, "row count")?;
        (
            Kernel::Attention(att_shader(ctx, opts, k.dtype)),
            rows.saturating_mul(splits),
        )
    };
    let groups = grid(ctx, items, true)?;
    Ok(Some(NodePlan {
        key: (kernel, k.dtype),
        params,
        a: t.src[1],
        b: Some(Some(t.src[0])),
        c: Some(t.src[2]),
        m: Some(t.src.get(3).copied()),
        groups,
        shared_b,
        shared_c,
        in_place_ok: false,
        split,
    }))
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn attention_splits_keys_for_few_rows_on_a_gpu() {
        // A decode step of Qwen2.5-0.5B (14 heads) over 4096 keys: 16 runs of 256.
        assert_eq!(kv_splits(14, 4096, false, None), 16);
        // Fewer keys than two runs' worth, or enough rows, or a software adapter: none.
        assert_eq!(kv_splits(14, 400, false, None), 1);
        assert_eq!(kv_splits(128, 4096, false, None), 1);
        assert_eq!(kv_splits(14, 4096, true, None), 1);
        // 32 heads: 8 runs (256 workgroups).
        assert_eq!(kv_splits(32, 4096, false, None), 8);
        // Forced: as even as they go, never an empty run nor more runs than keys.
        assert_eq!(kv_splits(1, 13, true, Some(3)), 3);
        assert_eq!(kv_splits(1, 10, true, Some(4)), 4);
        assert_eq!(kv_splits(1, 9, true, Some(4)), 3);
        assert_eq!(kv_splits(1, 12, true, Some(16)), 12);
        assert_eq!(kv_splits(1, 1, false, Some(16)), 1);
        assert_eq!(kv_splits(1, 0, false, Some(0)), 1);
    }

    #[test]
    fn row_threads_grow_with_k() {
        let t: Vec<usize> = [0, 64, 100, 384, 1536, 4096, 1 << 20]
            .iter()
            .map(|&k| rows_threads(k, 1000, 65535))
            .collect();
        assert_eq!(t, [4, 4, 4, 16, 64, 256, 256]);
        // 151936 rows (a vocabulary) fit 65535 workgroups at 4 rows each.
        assert_eq!(rows_threads(4096, 151_936, 65535), 64);
        assert_eq!(rows_threads(16, 1 << 30, 65535), 1);
    }

    #[test]
    fn auto_on_a_hardware_gpu_takes_the_row_kernel_for_few_columns_and_the_tile_beyond() {
        let tile = RegTile::for_limits(TileLimits::from(&wgpu::Limits::default()));
        let pick = |m, n, k, software| {
            matmul_kernel(
                (m, n, k),
                1,
                DType::F32,
                software,
                tile,
                MatmulKernels::Auto,
            )
        };
        let Some(tile) = tile else {
            panic!("WebGPU's default limits allow a register tile")
        };
        assert_eq!(pick(1536, 8, 384, false), Kernel::MatMulRows);
        assert_eq!(pick(384, 32, 1536, false), Kernel::MatMulRows);
        assert_eq!(pick(384, 4, 64, false), Kernel::MatVec);
        assert_eq!(pick(384, 20, 64, false), Kernel::MatMul);
        // Not the register tile (slower than the 64 x 64 tile on the one GPU measured).
        assert_eq!(pick(4096, 4096, 4096, false), Kernel::MatMul);
        assert_eq!(pick(4096, 128, 4096, false), Kernel::MatMul);
        // A software adapter keeps its selection.
        assert_eq!(pick(1536, 8, 384, true), Kernel::MatMulSmall);
        assert_eq!(pick(4096, 4096, 4096, true), Kernel::MatMulSmall);
        let reg = |tile| matmul_kernel((5, 3, 7), 1, DType::F32, true, tile, MatmulKernels::Reg);
        assert_eq!(reg(Some(tile)), Kernel::MatMulReg(tile));
        assert_eq!(reg(None), Kernel::MatMul);
    }
}
