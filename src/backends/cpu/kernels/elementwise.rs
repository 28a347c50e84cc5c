//! Fast row kernels for packed f32 rows: binary ops (with broadcasting), scale, unary
//! functions, softmax, norm and rms_norm. Each returns `false` when the layout does not
//! fit (then the reference kernel runs).
//!
//! `dst` may alias `src[0]` (in-place): every kernel reads an element (or a whole row into
//! scratch) before writing the same position, and works on raw pointers, never slices that
//! would claim exclusive access.

use std::ops::Range;

use super::simd::{self, exp, exp_nonpos, F32x4};
use super::{for_rows, for_rows_with, packed_f32};
use crate::backends::cpu::pool::Par;
use crate::backends::cpu::TensorView;
use crate::graph::{BinaryOp, UnaryOp};

#[inline(always)]
fn row_ptr(v: &TensorView, i1: usize, i2: usize, i3: usize) -> *mut f32 {
    v.ptr_at([0, i1, i2, i3]) as *mut f32
}

/// `d[i] = vf(a[i], b[i])` over `n` values, scalar tail by `sf`.
///
/// # Safety
/// All pointers valid for `n` f32; `d` may equal `a`.
#[inline(always)]
unsafe fn zip_row(
    d: *mut f32,
    a: *const f32,
    b: *const f32,
    n: usize,
    vf: impl Fn(F32x4, F32x4) -> F32x4,
    sf: impl Fn(f32, f32) -> f32,
) {
    let mut i = 0;
    unsafe {
        while i + 4 <= n {
            vf(F32x4::load(a.add(i)), F32x4::load(b.add(i))).store(d.add(i));
            i += 4;
        }
        while i < n {
            *d.add(i) = sf(*a.add(i), *b.add(i));
            i += 1;
        }
    }
}

/// `d[i] = vf(a[i])` over `n` values, scalar tail by `sf`.
///
/// # Safety
/// As for [`zip_row`].
#[inline(always)]
unsafe fn map_row(
    d: *mut f32,
    a: *const f32,
    n: usize,
    vf: impl Fn(F32x4) -> F32x4,
    sf: impl Fn(f32) -> f32,
) {
    let mut i = 0;
    unsafe {
        while i + 16 <= n {
            let x: [F32x4; 4] = std::array::from_fn(|j| F32x4::load(a.add(i + 4 * j)));
            let y = x.map(&vf);
            for (j, y) in y.iter().enumerate() {
                y.store(d.add(i + 4 * j));
            }
            i += 16;
        }
        while i + 4 <= n {
            vf(F32x4::load(a.add(i))).store(d.add(i));
            i += 4;
        }
        while i < n {
            *d.add(i) = sf(*a.add(i));
            i += 1;
        }
    }
}

/// Relative per-element costs of the row kernels (an add is 1), which scale
/// [`super::MIN_PAR_ELEMS`]. Measured natively, 1 thread, 384-wide rows x 128
/// (`cargo bench --bench cpu_matmul -- --thresholds`): add 0.24 ns/element, norm 0.8 (3x),
/// softmax 7.6 (~32x), GELU 26 (~100x; the portable `exp`; SiLU/GELU-erf taken alike).
const COST_BINARY: usize = 1;
const COST_UNARY: usize = 100;
const COST_SOFTMAX: usize = 32;
const COST_NORM: usize = 3;

fn binary_with(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    vf: impl Fn(F32x4, F32x4) -> F32x4 + Copy + Sync,
    sf: impl Fn(f32, f32) -> f32 + Copy + Sync,
) {
    let n = dst.ne[0];
    let row_b = b.ne[0] == n;
    for_rows(par, dst, COST_BINARY, |i1, i2, i3| {
        let d = row_ptr(dst, i1, i2, i3);
        let pa = row_ptr(a, i1, i2, i3);
        let pb = row_ptr(b, i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]);
        unsafe {
            if row_b {
                zip_row(d, pa, pb, n, vf, sf);
            } else {
                let y = *pb;
                let vy = F32x4::splat(y);
                map_row(d, pa, n, |x| vf(x, vy), |x| sf(x, y));
            }
        }
    });
}

/// Element-wise `a op b`, `b` broadcast; packed rows, `b` a full row or one value per row.
pub fn binary(par: Par, op: BinaryOp, dst: &TensorView, a: &TensorView, b: &TensorView) -> bool {
    if !(packed_f32(dst) && packed_f32(a) && packed_f32(b))
        || !(b.ne[0] == dst.ne[0] || b.ne[0] == 1)
        || a.ne != dst.ne
    {
        return false;
    }
    let sf = move |x, y| op.apply(x, y);
    match op {
        BinaryOp::Add => binary_with(par, dst, a, b, |x, y| x + y, sf),
        BinaryOp::Sub => binary_with(par, dst, a, b, |x, y| x - y, sf),
        BinaryOp::Mul => binary_with(par, dst, a, b, |x, y| x * y, sf),
        BinaryOp::Div => binary_with(par, dst, a, b, |x, y| x / y, sf),
    }
    true
}

fn map_with(
    par: Par,
    cost: usize,
    dst: &TensorView,
    a: &TensorView,
    vf: impl Fn(F32x4) -> F32x4 + Copy + Sync,
    sf: impl Fn(f32) -> f32 + Copy + Sync,
) -> bool {
    if !(packed_f32(dst) && packed_f32(a)) || a.ne != dst.ne {
        return false;
    }
    let n = dst.ne[0];
    for_rows(par, dst, cost, |i1, i2, i3| unsafe {
        map_row(row_ptr(dst, i1, i2, i3), row_ptr(a, i1, i2, i3), n, vf, sf)
    });
    true
}

/// `a * s` over packed rows.
pub fn scale(par: Par, dst: &TensorView, a: &TensorView, s: f32) -> bool {
    let vs = F32x4::splat(s);
    map_with(par, COST_BINARY, dst, a, |x| x * vs, |x| x * s)
}

/// GELU (tanh): 0.5 x (1 + tanh u) = x - x / (e^(2u) + 1), u = sqrt(2/pi) (x + 0.044715 x^3).
#[inline(always)]
fn gelu_tanh_v(x: F32x4) -> F32x4 {
    let c = F32x4::splat(2.0 * 0.797_884_6);
    let c3 = F32x4::splat(2.0 * 0.797_884_6 * 0.044715);
    x - x / (exp(x * (c + c3 * x * x)) + F32x4::splat(1.0))
}

/// SiLU, `x / (1 + e^-x)`, from `t = e^-|x|` (at most 1: [`exp_nonpos`], one power of two
/// and no overflow guard, where `e^-x` needs both): `x / (1 + t)` for `x >= 0`,
/// `x · t / (1 + t)` below. The decoders' feed-forward runs it on every hidden value
/// (Qwen2.5-0.5B's prompt: 2-3% of prefill with the full `exp`). `x` is floored at -88 for
/// the product, where `t` is 0 (so -inf gives -0, not NaN).
#[inline(always)]
fn silu_v(x: F32x4) -> F32x4 {
    let (zero, one) = (F32x4::splat(0.0), F32x4::splat(1.0));
    let t = exp_nonpos(x.min(zero - x));
    let num = x.max(F32x4::splat(-88.0)) * (t + (one - t).zero_unless_ge(x, zero));
    num / (one + t)
}

/// A unary op on four lanes: what the unary node and the fused matmul epilogue both compute
/// (so fusing changes no result). `exp` is the vector one ([`simd::exp`], clamped to the
/// f32 range); GELU (erf) uses a vector erf ([`simd::gelu_erf`]).
#[inline(always)]
fn unary_v(op: UnaryOp, x: F32x4) -> F32x4 {
    let one = F32x4::splat(1.0);
    let zero = F32x4::splat(0.0);
    match op {
        UnaryOp::Gelu => gelu_tanh_v(x),
        UnaryOp::GeluErf => simd::gelu_erf(x),
        UnaryOp::Silu => silu_v(x),
        UnaryOp::Relu => x.max(zero),
        // 1 - 2 / (e^(2x) + 1): exact at both ends (e^(2x) saturates to 0 or inf).
        UnaryOp::Tanh => one - F32x4::splat(2.0) / (exp(x + x) + one),
        UnaryOp::Sigmoid => one / (one + exp(zero - x)),
        UnaryOp::Exp => exp(x),
        UnaryOp::Neg => zero - x,
        UnaryOp::Sqr => x * x,
        UnaryOp::Sqrt => x.sqrt(),
    }
}

/// Relative cost of a unary op per element (for cutting a node over threads).
fn unary_cost(op: UnaryOp) -> usize {
    match op {
        UnaryOp::Relu | UnaryOp::Neg | UnaryOp::Sqr | UnaryOp::Sqrt => COST_BINARY,
        UnaryOp::Gelu
        | UnaryOp::GeluErf
        | UnaryOp::Silu
        | UnaryOp::Tanh
        | UnaryOp::Sigmoid
        | UnaryOp::Exp => COST_UNARY,
    }
}

/// Element-wise function over packed rows, in SIMD ([`unary_v`]).
pub fn unary(par: Par, op: UnaryOp, dst: &TensorView, a: &TensorView) -> bool {
    map_with(
        par,
        unary_cost(op),
        dst,
        a,
        move |x| unary_v(op, x),
        move |x| op.apply(x),
    )
}

/// `a` limited to `[min, max]` over packed rows.
pub fn clamp(par: Par, dst: &TensorView, a: &TensorView, min: f32, max: f32) -> bool {
    let (lo, hi) = (F32x4::splat(min), F32x4::splat(max));
    map_with(
        par,
        COST_BINARY,
        dst,
        a,
        move |x| x.max(lo).min(hi),
        move |x| x.max(min).min(max),
    )
}

/// What a matmul does to its output as it stores it, in place of the nodes after it
/// (`crate::backend::fuse::MatmulChain`): `act(x + bias[m])`, `m` the element's index along
/// dim 0. The same SIMD functions as the unfused add and [`unary`] nodes, so fusing changes
/// no result.
#[derive(Clone, Copy)]
pub struct Epilogue {
    bias: *const f32,
    len: usize,
    act: Option<UnaryOp>,
}

// SAFETY: the bias is a weight the caller holds for the whole kernel call and nobody writes
// while it runs; the epilogue only reads it.
unsafe impl Send for Epilogue {}
unsafe impl Sync for Epilogue {}

impl Epilogue {
    /// Adds `bias` (packed f32, one value per element of dim 0) then applies `act`; `None`
    /// when `bias` is not such a vector.
    pub fn new(bias: &TensorView, act: Option<UnaryOp>) -> Option<Self> {
        let row = bias.ne[1] == 1 && bias.ne[2] == 1 && bias.ne[3] == 1;
        (packed_f32(bias) && row).then(|| Self {
            bias: bias.ptr_at([0; 4]) as *const f32,
            len: bias.ne[0],
            act,
        })
    }

    /// Whether it fits outputs whose rows have `m` elements (`kernels::matmul_fused` checks
    /// it once for every matmul kernel).
    pub fn fits(&self, m: usize) -> bool {
        self.len == m
    }

    /// The bias of elements `m0 .. m0 + 4 * N`, as vectors.
    ///
    /// # Safety
    /// `m0 + 4 * N <= len`.
    #[inline(always)]
    pub unsafe fn bias_vecs<const N: usize>(&self, m0: usize) -> [F32x4; N] {
        debug_assert!(m0 + 4 * N <= self.len);
        std::array::from_fn(|i| unsafe { F32x4::load(self.bias.add(m0 + 4 * i)) })
    }

    /// `act(x + bias)` for four values whose bias is `bias`.
    #[inline(always)]
    pub fn vec(&self, x: F32x4, bias: F32x4) -> F32x4 {
        let x = x + bias;
        match self.act {
            None => x,
            Some(op) => unary_v(op, x),
        }
    }

    /// Applies it to `n` values at `p`: elements `m0 .. m0 + n` of one output row.
    ///
    /// # Safety
    /// `p` valid for `n` f32 and `m0 + n <= len`.
    #[inline]
    pub unsafe fn apply(&self, p: *mut f32, m0: usize, n: usize) {
        debug_assert!(m0 + n <= self.len);
        let scalar = |x: f32, y: f32| self.act.map_or(x + y, |op| op.apply(x + y));
        unsafe { zip_row(p, p, self.bias.add(m0), n, |x, y| self.vec(x, y), scalar) }
    }

    /// Applies it to elements `ms` of output rows `rows` (flat rows of `out`).
    pub fn apply_rows(&self, out: &super::batch::DstRows, ms: Range<usize>, rows: Range<usize>) {
        for r in rows {
            // In range: the caller's rows of `out`, elements `ms` within its dim 0 (= len).
            unsafe { self.apply(out.row(r).add(ms.start), ms.start, ms.len()) };
        }
    }
}

/// Sum of `n` packed f32.
///
/// # Safety
/// `p` valid for `n` f32.
#[inline]
pub(super) unsafe fn sum(p: *const f32, n: usize) -> f32 {
    let z = F32x4::splat(0.0);
    let (mut s0, mut s1) = (z, z);
    let mut i = 0;
    unsafe {
        while i + 8 <= n {
            s0 = s0 + F32x4::load(p.add(i));
            s1 = s1 + F32x4::load(p.add(i + 4));
            i += 8;
        }
        let mut s = (s0 + s1).hsum();
        while i < n {
            s += *p.add(i);
            i += 1;
        }
        s
    }
}

/// Row softmax of `a * scale + mask`, packed rows.
pub fn softmax(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    mask: Option<&TensorView>,
    scale: f32,
) -> bool {
    if !(packed_f32(dst) && packed_f32(a)) || mask.is_some_and(|m| !packed_f32(m)) {
        return false;
    }
    let n = a.ne[0];
    let scratch = || vec![0f32; n];
    for_rows_with(par, a, COST_SOFTMAX, scratch, |w, i1, i2, i3| {
        let pa = row_ptr(a, i1, i2, i3);
        let pm = mask.map(|m| row_ptr(m, i1 % m.ne[1], i2 % m.ne[2], i3 % m.ne[3]));
        let wp = w.as_mut_ptr();
        // Pass 1: w = a * scale + mask, and its max.
        let max = unsafe { scale_mask_max(pa, wp, n, scale, pm.map(|m| m as *const f32)) };
        // Pass 2: e^(w - max) and their sum; pass 3: normalize into dst.
        let total = unsafe { exp_sum(wp, n, max) };
        let inv = 1.0 / total;
        let vi = F32x4::splat(inv);
        unsafe { map_row(row_ptr(dst, i1, i2, i3), wp, n, |x| x * vi, |x| x * inv) };
    });
    true
}

/// `x = e^(x - max)` in place for `n` values (`max` at least each of them, so the arguments
/// are ≤ 0), and their sum: a softmax row's second pass, [`softmax`]'s and the fused
/// attention's tiles'. Every value through the vector [`exp_nonpos`], a tail of fewer than 4
/// in one more vector.
///
/// # Safety
/// `p` readable and writable for `n` f32.
#[inline(always)]
pub(super) unsafe fn exp_sum(p: *mut f32, n: usize, max: f32) -> f32 {
    let vmax = F32x4::splat(max);
    let mut vsum = F32x4::splat(0.0);
    let mut i = 0;
    unsafe {
        while i + 4 <= n {
            let e = exp_nonpos(F32x4::load(p.add(i)) - vmax);
            e.store(p.add(i));
            vsum = vsum + e;
            i += 4;
        }
    }
    let mut total = vsum.hsum();
    if i < n {
        let mut t = [max; 4];
        for (k, x) in t.iter_mut().enumerate().take(n - i) {
            *x = unsafe { *p.add(i + k) };
        }
        let mut e = [0f32; 4];
        unsafe { exp_nonpos(F32x4::load(t.as_ptr()) - vmax).store(e.as_mut_ptr()) };
        for (k, &x) in e.iter().enumerate().take(n - i) {
            unsafe { *p.add(i + k) = x };
            total += x;
        }
    }
    total
}

/// `dst[j] = src[j] * scale + mask[j]` (no mask: `src[j] * scale`) for `n` values, four at
/// a time, and the largest of them (wasm's `pmax` order, as [`F32x4::max`]): a softmax row's
/// first pass, [`softmax`]'s and the fused attention's tiles'. `dst` may be `src`.
///
/// # Safety
/// `src` readable, `dst` writable for `n` f32; `mask`, when given, readable for `n` f32.
#[inline(always)]
pub(super) unsafe fn scale_mask_max(
    src: *const f32,
    dst: *mut f32,
    n: usize,
    scale: f32,
    mask: Option<*const f32>,
) -> f32 {
    let vs = F32x4::splat(scale);
    let mut vmax = F32x4::splat(f32::NEG_INFINITY);
    let mut j = 0;
    unsafe {
        while j + 4 <= n {
            let mut x = F32x4::load(src.add(j)) * vs;
            if let Some(m) = mask {
                x = x + F32x4::load(m.add(j));
            }
            x.store(dst.add(j));
            vmax = vmax.max(x);
            j += 4;
        }
        let mut max = vmax.hmax();
        for j in j..n {
            let mut x = *src.add(j) * scale;
            if let Some(m) = mask {
                x += *m.add(j);
            }
            *dst.add(j) = x;
            max = if max < x { x } else { max };
        }
        max
    }
}

/// Layer norm (`rms == false`) or RMS norm over packed rows.
pub fn norm(par: Par, dst: &TensorView, a: &TensorView, eps: f32, rms: bool) -> bool {
    if !(packed_f32(dst) && packed_f32(a)) {
        return false;
    }
    let n = a.ne[0];
    if n == 0 {
        return true;
    }
    for_rows(par, a, COST_NORM, |i1, i2, i3| {
        let pa = row_ptr(a, i1, i2, i3);
        let mean = if rms {
            0.0
        } else {
            (unsafe { sum(pa, n) }) / n as f32
        };
        let vm = F32x4::splat(mean);
        let mut acc = F32x4::splat(0.0);
        let mut i = 0;
        let mut tail = 0f32;
        unsafe {
            while i + 4 <= n {
                let x = F32x4::load(pa.add(i)) - vm;
                acc = acc + x * x;
                i += 4;
            }
            while i < n {
                let x = *pa.add(i) - mean;
                tail += x * x;
                i += 1;
            }
        }
        let var = (acc.hsum() + tail) / n as f32;
        let inv = 1.0 / (var + eps).sqrt();
        let vi = F32x4::splat(inv);
        unsafe {
            map_row(
                row_ptr(dst, i1, i2, i3),
                pa,
                n,
                |x| (x - vm) * vi,
                |x| (x - mean) * inv,
            )
        };
    });
    true
}
