//! CPU kernels: the scalar reference for every op, and faster kernels where they exist
//! (SIMD128 on wasm32, a portable path elsewhere), chosen per node.
//!
//! - `simd`: the f32x4 / i8 dot primitives, one implementation per instruction set.
//! - `gemm`: packed, register-tiled f32 GEMM (src0 f32 or f16; quantized rows dequantized,
//!   the K-quants' fallback) and a GEMV for few rows.
//! - `kquant`: K-quant (Q2_K … Q6_K) matmul on integer dots against activations quantized
//!   to Q8_K, weights unpacked from their GGUF bytes as they are read (Q2_K, and weights
//!   without panels).
//! - `quant`: Q8_0 / Q5_0 / Q5_1 / Q4_0 / Q4_1 / IQ4_NL / Q3_K / Q4_K / Q5_K / Q6_K matmul on
//!   integer dots against activations quantized to Q8_0, on weights regrouped once into int8
//!   panels ([`Prepacked`]).
//! - `attention`: fused attention with an online softmax (no score matrix in memory).
//! - `elementwise`: binary/scale/unary, softmax, norm, rms_norm over packed rows.
//! - `rows`: rope, row sums/means, get_rows.
//!
//! A fast kernel that does not fit a node's dtypes or layout declines, and the reference
//! runs instead, so every node always has a kernel.
//!
//! Hot loops live in small functions of their own, called from the thread team's closure,
//! never inlined into it (`quant`'s `int8_block` kernels, `gemm`'s `micro_tile`, the
//! attention's `run_block`): the engines compile a closure that holds a whole loop nest
//! badly. V8 runs a wasm function in its baseline tier until it is hot and has no on-stack
//! replacement, so a closure entered once per thread per matmul can run a share at baseline
//! speed, and its optimizing compiles wait for a free core, longer the larger the function
//! (one function holding every int8 kernel left the pool's workers on baseline code through
//! a whole prompt: the int8 GEMMs 1.15–1.4× slower at 2 threads). SpiderMonkey's register
//! allocation in a body with a hundred locals ran the f32 tile 1.6× slower than Chromium
//! (2.1× without relaxed SIMD); on its own, at Chromium's speed (MiniLM f32 16 × 32, one
//! thread, Firefox 153: 489 → 296 ms).

mod attention;
mod batch;
mod elementwise;
pub use elementwise::Epilogue;
pub(crate) mod gemm;
mod kquant;
pub(crate) mod quant;
pub mod reference;
mod rows;
mod simd;
pub use simd::narrow_dots_faster;

use super::pool::Par;
use super::view::TensorView;
use crate::error::Result;
use crate::graph::{DType, Op};
use std::rc::Rc;

/// A matmul weight prepared once for the fast kernels (weights buffers keep one per weight
/// while their bytes do not change): repacking costs about as much as multiplying by 8
/// activation rows.
pub enum Prepacked {
    /// The f32 GEMM's panels: f32 weights, and quantized ones dequantized in builds without
    /// the int8 GEMM (4 bytes per weight).
    F32(gemm::PackedWeights),
    /// Q8_0 / Q6_K / Q5_1 / Q5_0 / Q4_1 / IQ4_NL / Q5_K / Q4_0 / Q4_K / Q3_K weights
    /// regrouped for the int8 kernels (1.25 / 0.83 / 0.88 / 0.75 / 0.75 / 0.75 / 0.72 / 0.625 /
    /// 0.59 / 0.59 bytes per weight).
    Int8(Rc<quant::Int8Panels>),
}

impl Prepacked {
    /// `a` (a 2-D F32, Q8_0, Q5_0, Q5_1, Q4_0, Q4_1, IQ4_NL or Q3_K … Q6_K weight) prepared;
    /// `None` for other tensors.
    pub fn new(a: &TensorView) -> Option<Self> {
        if a.dtype.is_quantized() {
            // Dims first: a 3-D/4-D weight is not cached, so packing it would be thrown away.
            if a.ne[2] != 1 || a.ne[3] != 1 {
                return None;
            }
            quant::Int8Panels::new(a, 0, 0).map(|p| Self::Int8(Rc::new(p)))
        } else {
            gemm::PackedWeights::new(a).map(Self::F32)
        }
    }

    /// Bytes weights of `dtype` and shape `ne` take stored as panels, their only copy:
    /// Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / Q3_K … Q6_K matrices, as the int8 kernels
    /// read them; `None` for others (f32 panels would be as large as the weight: those keep
    /// their bytes and a copy made on use).
    pub fn stored_size(dtype: DType, ne: &[usize]) -> Option<usize> {
        quant::Int8Panels::size_for(dtype, ne)
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        match self {
            Self::F32(p) => p.bytes(),
            Self::Int8(p) => p.bytes(),
        }
    }

    /// Whether a matmul of a `dtype` weight by `n` activation rows runs faster on a prepared
    /// weight: those with int8 panels always (the panels' matrix-vector
    /// product is the fast one), others from a few rows on (fewer take the dot-product
    /// kernels, which read weights as they are).
    pub fn worth(dtype: DType, n: usize) -> bool {
        quant::PanelKind::of(dtype).is_some() || gemm::prepack_worth(n)
    }
}

/// `dst = a · bᵀ` with `a` prepared in `pre` (made from this `a`), if given, and `ep`
/// applied to the output as it is stored; `false` when no fast kernel applies (the caller
/// runs [`compute`], and the nodes `ep` stands for, unfused). The one place that checks `ep`
/// fits `a`'s rows, for every kernel below.
pub fn matmul_fused(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    pre: Option<&Prepacked>,
    ep: Option<&Epilogue>,
) -> bool {
    if ep.is_some_and(|e| !e.fits(a.ne[1])) {
        return false;
    }
    match pre {
        Some(Prepacked::F32(p)) => gemm::matmul_fused(par, dst, a, b, Some(p), ep),
        Some(Prepacked::Int8(p)) => quant::matmul_int8_panels(par, dst, a, b, p, ep),
        None => {
            kquant::matmul(par, dst, a, b, ep)
                || gemm::matmul_fused(par, dst, a, b, None, ep)
                || quant::matmul(par, dst, a, b, ep)
        }
    }
}

/// get_rows from a table stored as panels `p` (`a` its view, for the shape); `None` when
/// `dst` is not packed f32 rows of the right shape.
pub fn get_rows_panels(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    p: &quant::Int8Panels,
    idx: &TensorView,
) -> Option<Result<()>> {
    rows::get_rows_with(par, dst, a, idx, |r, _, out| p.row_f32(r, out))
}

/// `dst = a · bᵀ` by the f32 GEMM/GEMV, quantized rows dequantized as they are read: the
/// path K-quants took before their integer kernels, kept for the benchmark's before/after.
#[cfg(feature = "bench")]
pub fn matmul_dequantized(par: Par, dst: &TensorView, a: &TensorView, b: &TensorView) -> bool {
    gemm::matmul_fused(par, dst, a, b, None, None)
}

/// Which kernels a CPU backend runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelSet {
    /// The scalar reference kernels only (what tests compare against).
    Reference,
    /// The fastest kernels available for this build.
    Fast,
}

/// Whether `v` is f32 with packed rows and every element 4-byte aligned, so fast kernels
/// may address it as `*f32` (views at odd byte offsets are left to the reference).
pub(crate) fn packed_f32(v: &TensorView) -> bool {
    v.nb[0] == 4 && aligned_f32(v)
}

/// Whether `v` is f32 with every element 4-byte aligned (its rows possibly strided), so a
/// kernel may address its elements as `*f32` at strides of `nb / 4`.
pub(crate) fn aligned_f32(v: &TensorView) -> bool {
    v.dtype == crate::graph::DType::F32
        && (v.ptr_at([0; 4]) as usize).is_multiple_of(4)
        && v.nb.iter().all(|n| n.is_multiple_of(4))
}

/// Computes one node; fast kernels split large nodes over `par`'s threads (the reference
/// always runs on the calling thread).
pub fn compute(
    par: Par,
    set: KernelSet,
    op: &Op,
    dst: &TensorView,
    src: &[TensorView],
) -> Result<()> {
    // Nothing to write; and a kernel's row scratch, sized by a dim of any size, is never made
    // for a tensor with no rows (found fuzzing: an f32 [2^31, 0] copy asked for 8 GiB).
    if dst.ne.contains(&0) {
        return Ok(());
    }
    if set == KernelSet::Fast {
        if let Some(r) = fast(par, op, dst, src) {
            return r;
        }
    }
    reference::compute(op, dst, src)
}

/// Runs a fast kernel when one fits the node's dtypes and layout; `None` otherwise (the
/// caller falls back to the reference, which also reports data-dependent errors).
fn fast(par: Par, op: &Op, dst: &TensorView, src: &[TensorView]) -> Option<Result<()>> {
    let a = src.first()?;
    let b = src.get(1);
    let done = |ran: bool| ran.then_some(Ok(()));
    match *op {
        Op::MatMul => done(matmul_fused(par, dst, a, b?, None, None)),
        Op::Binary(o) => done(elementwise::binary(par, o, dst, a, b?)),
        Op::Scale(s) => done(elementwise::scale(par, dst, a, s)),
        Op::Clamp { min, max } => done(elementwise::clamp(par, dst, a, min, max)),
        Op::Unary(u) => done(elementwise::unary(par, u, dst, a)),
        Op::SoftMax { scale } => done(elementwise::softmax(par, dst, a, b, scale)),
        Op::Attention { scale } => done(attention::attention(
            par,
            dst,
            a,
            b?,
            src.get(2)?,
            src.get(3),
            scale,
        )),
        Op::Norm { eps } => done(elementwise::norm(par, dst, a, eps, false)),
        Op::RmsNorm { eps } => done(elementwise::norm(par, dst, a, eps, true)),
        Op::Rope(p) => done(rows::rope(par, dst, a, b?, src.get(2), p).is_some()),
        Op::SumRows | Op::Mean => done(rows::sum_rows(par, op, dst, a).is_some()),
        Op::Cpy => done(rows::cpy(par, dst, a).is_some()),
        Op::GetRows => rows::get_rows(par, dst, a, b?),
        Op::SetRows => rows::set_rows(par, dst, a, b?, src.get(2)?),
        // The reference computes these.
        Op::Leaf | Op::View | Op::Concat { .. } | Op::Argmax => None,
    }
}

/// Calls `f(i1, i2, i3)` for every row of `v` (a node's output shape), rows cut over `par`'s
/// threads when there are at least [`MIN_PAR_ELEMS`] elements per thread at `cost` (relative
/// to an add) per element.
pub(crate) fn for_rows(
    par: Par,
    v: &TensorView,
    cost: usize,
    f: impl Fn(usize, usize, usize) + Sync,
) {
    for_rows_with(par, v, cost, || (), |_, i1, i2, i3| f(i1, i2, i3));
}

/// [`for_rows`] with scratch state: `init` makes one per range, `f` gets it for each row.
pub(crate) fn for_rows_with<S>(
    par: Par,
    v: &TensorView,
    cost: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize, usize, usize) + Sync,
) {
    let [n0, n1, n2, n3] = v.ne;
    let min_rows = MIN_PAR_ELEMS.div_ceil((n0 * cost).max(1));
    par.for_ranges(n1 * n2 * n3, min_rows, 1, |r| {
        let mut s = init();
        for i in r {
            f(&mut s, i % n1, (i / n1) % n2, i / (n1 * n2));
        }
    });
}

/// Row kernels split a node over threads from this many elements (times the op's relative
/// cost) per thread. Measured natively (`cargo bench --bench cpu_matmul -- --thresholds`,
/// release, 2 cores; 2026-11-30 under load ~18 from other builds, so no run showed a 2-thread
/// win): cutting a node costs ~7 us (2 threads eager vs 1 on the smallest nodes: add 384x4
/// 0.4 vs 6.5 us, norm 1.2 vs 7.5 us), so a split pays from ~2 x 7 us of work; an add runs
/// 0.24 ns per element (384x128: 11.9 us), so 2^15 add-elements per thread is ~8 us each.
/// In a browser a cut used to cost more (waking a Web Worker for each node) and wasm split
/// from 4x as much; the CPU backend now keeps its threads as a team for a whole split
/// (`Pool::team`: a cut is a few atomic operations), so one threshold serves both. A cut of
/// a memory-bound node still moves data between the cores' caches: in MiniLM f32 128 tokens
/// on 2 threads (Chromium, profiled inside the team) the [32, 128, 12] copies took 57 us a
/// call against 32 on one thread, but whole runs with 2^17 in wasm were no faster (40.77 ms
/// both, same run; 2^17 there also cut the big FFN matmul along m, a separate change).
pub(crate) const MIN_PAR_ELEMS: usize = 1 << 15;
