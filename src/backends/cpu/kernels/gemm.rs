//! f32 matmul (src0 f32 or f16, Q8_0/Q4_0 for many activation rows, K-quants always, their
//! rows dequantized as they are packed or read): a packed, register-tiled GEMM after BLIS,
//! and a dot-product GEMV for few activation rows.
//!
//! ggml's layout: `dst[m, n] = dot(src0 row m, src1 row n)`, rows along K. The micro-kernel
//! computes an `MR x NR` tile of `dst` (MR along m, the contiguous dst dim, in f32x4 lanes)
//! from a packed A panel (`[kc][MR]`) and a packed B panel (`[kc][NR]`): per k step, two
//! vector loads of A, NR broadcasts of B and `2 * NR` multiply-adds into registers.
//! Blocking: K in `KC` slices (A and B panels stay in L1/L2), M in `MC` blocks, N in `NC`.

use std::ops::Range;

use super::batch::{DstRows, Rows};
use super::elementwise::Epilogue;
use super::simd::F32x4;
use crate::backends::cpu::pool::{Par, PIECES_PER_THREAD};
use crate::backends::cpu::TensorView;
use crate::graph::DType;

/// Micro-tile rows (along m, dst's contiguous dim): two f32x4.
pub const MR: usize = 8;
/// Micro-tile columns (along n).
pub const NR: usize = 4;
const KC: usize = 256;
const MC: usize = 128;
const NC: usize = 512;
/// Below this many activation rows the GEMV (no packing) is faster.
const GEMV_MAX_N: usize = 3;
/// From this many activation rows on, Q8_0/Q4_0 weights that were not prepared once take the
/// int8 GEMM, packed for the call (ggml's BLAS threshold); fewer take the row dots.
pub const QUANT_GEMM_MIN_N: usize = 32;
/// A matmul is cut over threads from this many multiply-adds per thread. Measured natively
/// (`cargo bench --bench cpu_matmul -- --thresholds`, release, 2 cores under load ~18, so no
/// 2-thread win showed): a cut costs ~7 us (matmul 8^3: 0.5 us on 1 thread, 7.1 eager on 2)
/// and 1 thread runs ~4.5 GMAC/s (64^3: 23.5 us, matvec 1024^2: 260 us), so a split pays
/// from ~2 x 7 us of work = ~60K MACs per thread; 2^17 keeps a margin for imperfect scaling.
pub const MIN_PAR_MACS: usize = 1 << 17;

/// A 2-D f32 weight packed once into the GEMM's A panels (every K slice × M block, as
/// [`gemm`] would pack them per call): repacking a weight costs about as much as multiplying
/// it by 8 activation rows, so weights read by many runs keep this copy.
pub struct PackedWeights {
    m: usize,
    k: usize,
    /// Panels of block (K slice `p`, M block `i`) start at `offsets[p * m_blocks + i]`.
    offsets: Vec<usize>,
    data: Vec<f32>,
}

impl PackedWeights {
    /// Packs `a` (a 2-D F32 matrix); `None` for other tensors (quantized weights take
    /// [`super::quant::Int8Panels`] or are read as they are).
    pub fn new(a: &TensorView) -> Option<Self> {
        if a.dtype != DType::F32 || a.ne[2] != 1 || a.ne[3] != 1 {
            return None;
        }
        let (m, k) = (a.ne[1], a.ne[0]);
        let rows = Rows::new(a, 0, 0);
        let (mut offsets, mut data) = (Vec::new(), Vec::new());
        let (mut panel, mut tmp) = (Vec::new(), Vec::new());
        for pc in (0..k).step_by(KC) {
            let kc = KC.min(k - pc);
            for ic in (0..m).step_by(MC) {
                pack::<MR>(&rows, ic, MC.min(m - ic), pc, kc, &mut panel, &mut tmp);
                offsets.push(data.len());
                data.extend_from_slice(&panel);
            }
        }
        Some(Self {
            m,
            k,
            offsets,
            data,
        })
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.data.len() * 4
    }

    /// The panels of K slice `pc` from row `ic` (a multiple of `MR`) to the end of its M
    /// block: a block's panels lie one after another, `MR` rows each.
    fn block(&self, pc: usize, ic: usize) -> &[f32] {
        let i = (pc / KC) * self.m.div_ceil(MC) + ic / MC;
        let kc = KC.min(self.k - pc);
        &self.data[self.offsets[i] + (ic % MC) / MR * kc * MR..]
    }
}

/// `dst = src0 · src1ᵀ` for f32/f16 `a` (or a K-quant / Q5_0 / Q5_1 `a`, its rows
/// dequantized as they are read) and f32 `b`, with `a` already packed if `pre` is given (made
/// from this `a`; rows too few for the GEMM take the GEMV as usual) and `ep` applied to the
/// output as it is stored; `false` when this kernel does not apply.
pub fn matmul_fused(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    pre: Option<&PackedWeights>,
    ep: Option<&Epilogue>,
) -> bool {
    if pre.is_some_and(|p| (p.m, p.k) != (a.ne[1], a.ne[0])) {
        return false;
    }
    matmul_with(par, dst, a, b, pre, ep)
}

/// Activation rows from which a packed weight pays off (fewer take the GEMV).
pub fn prepack_worth(n: usize) -> bool {
    n > GEMV_MAX_N
}

fn matmul_with(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    pre: Option<&PackedWeights>,
    ep: Option<&Epilogue>,
) -> bool {
    let (m, n, k) = (a.ne[1], b.ne[1], a.ne[0]);
    // Q8_0 / Q4_0 weights take the integer kernels (`quant`). Other quantized weights that
    // neither the panels' kernels nor `kquant`'s take have no integer GEMM: those matmuls
    // dequantize their rows into this one.
    let quant_ok = a.dtype.is_quantized()
        && !matches!(a.dtype, DType::Q8_0 | DType::Q4_0)
        && a.rows_contiguous();
    if !(matches!(a.dtype, DType::F32 | DType::F16) || quant_ok)
        || b.dtype != DType::F32
        || dst.dtype != DType::F32
        || !super::packed_f32(dst)
    {
        return false;
    }
    let (r2, r3) = (b.ne[2] / a.ne[2].max(1), b.ne[3] / a.ne[3].max(1));
    let (n2, batches) = (dst.ne[2], dst.ne[2] * dst.ne[3]);
    if m == 0 || n == 0 || batches == 0 {
        return true;
    }
    // A 2-D weight times several batches whose rows follow each other in memory (in `b` and
    // `dst`): one matrix of all their rows, so that the weight's panels are read once for
    // them all, not once a batch (MiniLM's batch of 16 × 32 tokens, f32: 8 GEMMs of 32
    // rows, each streaming 2.4 MB of FFN panels from past the L2). Each element is the same
    // dot in the same order either way.
    if batches > 1 && a.ne[2] == 1 && a.ne[3] == 1 {
        if let (Some(fd), Some(fb)) = (dst.batches_as_rows(), b.batches_as_rows()) {
            return matmul_with(par, &fd, a, &fb, pre, ep);
        }
    }
    // Tasks: every batch cut into `tiles` output rectangles along one dim (tiles on
    // boundaries of `align`), so each task writes its own part of dst; each dst element is
    // computed by the same code in the same order whatever the cut.
    let threads = par.pieces(batches * m * n * k.max(1), MIN_PAR_MACS);
    let few = n <= GEMV_MAX_N;
    // Each thread reads all of the operand along the dim not cut, so cut the longer one:
    // for a weight of more rows than there are activations (MiniLM's FFN up, 1536 × 384 by
    // 128 tokens: 2.4 MB of panels) a cut along n has every thread stream the whole weight.
    // Both cut on micro-tile bounds (a packed weight's panels are read from any MR row).
    let split_n = !few && n >= m;
    let (len, align) = if split_n { (n, NR) } else { (m, MR) };
    // The GEMV's rows are cut finer than one piece a thread (claimed as threads come free):
    // they cost nothing to cut. A GEMM tile repacks the operand it shares with the others.
    let per_thread = if few && threads > 1 {
        PIECES_PER_THREAD
    } else {
        1
    };
    let tiles = (threads * per_thread)
        .div_ceil(batches)
        .min(len.div_ceil(align))
        .max(1);
    let tasks = batches * tiles;
    par.for_ranges(tasks, tasks.div_ceil(threads * per_thread), 1, |r| {
        let mut ws = Workspace::default();
        for task in r {
            let (batch, tile) = (task / tiles, task % tiles);
            let (i2, i3) = (batch % n2, batch / n2);
            let cut = crate::backends::cpu::pool::piece(len, align, tiles, tile);
            let (ms, ns) = if split_n { (0..m, cut) } else { (cut, 0..n) };
            let ar = Rows::new(a, i2 / r2.max(1), i3 / r3.max(1));
            let br = Rows::new(b, i2, i3);
            let out = DstRows::batch(dst, i2, i3);
            if k == 0 {
                for j in ns.clone() {
                    unsafe { std::ptr::write_bytes(out.row(j).add(ms.start), 0, ms.len()) };
                }
                if let Some(ep) = ep {
                    ep.apply_rows(&out, ms, ns);
                }
            } else if few {
                gemv(&out, &ar, &br, ms.clone(), n, k, &mut ws);
                if let Some(ep) = ep {
                    ep.apply_rows(&out, ms, 0..n);
                }
            } else {
                gemm(&out, &ar, &br, ms, ns, k, pre, ep, &mut ws);
            }
        }
    });
    true
}

/// Scratch memory reused across batches.
#[derive(Default)]
struct Workspace {
    apack: Vec<f32>,
    bpack: Vec<f32>,
    arow: Vec<f32>,
    brow: Vec<f32>,
}

/// `sum(a[i] * b[i])` over `k` packed f32.
///
/// # Safety
/// Both pointers readable for `k` f32.
#[inline]
pub unsafe fn dot_f32(a: *const f32, b: *const f32, k: usize) -> f32 {
    unsafe {
        let z = F32x4::splat(0.0);
        let (mut s0, mut s1, mut s2, mut s3) = (z, z, z, z);
        let mut i = 0;
        while i + 16 <= k {
            s0 = s0.mul_add(F32x4::load(a.add(i)), F32x4::load(b.add(i)));
            s1 = s1.mul_add(F32x4::load(a.add(i + 4)), F32x4::load(b.add(i + 4)));
            s2 = s2.mul_add(F32x4::load(a.add(i + 8)), F32x4::load(b.add(i + 8)));
            s3 = s3.mul_add(F32x4::load(a.add(i + 12)), F32x4::load(b.add(i + 12)));
            i += 16;
        }
        while i + 4 <= k {
            s0 = s0.mul_add(F32x4::load(a.add(i)), F32x4::load(b.add(i)));
            i += 4;
        }
        let mut s = ((s0 + s1) + (s2 + s3)).hsum();
        while i < k {
            s += *a.add(i) * *b.add(i);
            i += 1;
        }
        s
    }
}

/// `sum(a[r][i] * b[i])` over `k` packed f32 for four rows `a[r]` at once: each load of `b`
/// serves four rows (a matvec streams its weight at the speed of memory only if its loads do
/// not wait on `b`'s). Two partial sums a row: 8 accumulators, within wasm's 16 registers.
///
/// # Safety
/// Every pointer readable for `k` f32.
#[inline]
unsafe fn dot4_f32(a: [*const f32; 4], b: *const f32, k: usize) -> [f32; 4] {
    unsafe {
        let z = F32x4::splat(0.0);
        let mut s = [[z; 2]; 4];
        let mut i = 0;
        while i + 8 <= k {
            let (b0, b1) = (F32x4::load(b.add(i)), F32x4::load(b.add(i + 4)));
            for (sr, ar) in s.iter_mut().zip(a) {
                sr[0] = sr[0].mul_add(F32x4::load(ar.add(i)), b0);
                sr[1] = sr[1].mul_add(F32x4::load(ar.add(i + 4)), b1);
            }
            i += 8;
        }
        if i + 4 <= k {
            let b0 = F32x4::load(b.add(i));
            for (sr, ar) in s.iter_mut().zip(a) {
                sr[0] = sr[0].mul_add(F32x4::load(ar.add(i)), b0);
            }
            i += 4;
        }
        let mut out = [0f32; 4];
        for ((o, sr), ar) in out.iter_mut().zip(&s).zip(a) {
            *o = (sr[0] + sr[1]).hsum();
            for t in i..k {
                *o += *ar.add(t) * *b.add(t);
            }
        }
        out
    }
}

/// dst rows `0..n`, elements `ms`. Packed f32 rows go four at a time from a multiple of 4
/// (callers cut `ms` at multiples of `MR`, so each element is computed by the same code
/// whatever the cut).
fn gemv(
    out: &DstRows,
    a: &Rows,
    b: &Rows,
    ms: Range<usize>,
    n: usize,
    k: usize,
    ws: &mut Workspace,
) {
    ws.brow.resize(k * n, 0.0);
    for j in 0..n {
        b.load(j, 0, &mut ws.brow[j * k..(j + 1) * k]);
    }
    ws.arow.resize(k, 0.0);
    let mut ms = ms;
    let packed = a.is_f32_packed();
    if packed {
        while ms.start + 4 <= ms.end {
            let i = ms.start;
            let rows = [i, i + 1, i + 2, i + 3].map(|r| a.ptr(r, 0) as *const f32);
            for j in 0..n {
                // In range: rows of `a` hold `k` f32, `brow` holds `n` rows of `k`.
                let s = unsafe { dot4_f32(rows, ws.brow.as_ptr().add(j * k), k) };
                let o = out.row(j);
                for (r, v) in s.into_iter().enumerate() {
                    unsafe { *o.add(i + r) = v };
                }
            }
            ms.start += 4;
        }
    }
    for i in ms {
        let ap = if packed {
            a.ptr(i, 0) as *const f32
        } else {
            a.load(i, 0, &mut ws.arow);
            ws.arow.as_ptr()
        };
        for j in 0..n {
            let s = unsafe { dot_f32(ap, ws.brow.as_ptr().add(j * k), k) };
            unsafe { *out.row(j).add(i) = s };
        }
    }
}

/// Packs rows `r0 .. r0 + rows` (cols `k0 .. k0 + kc`) into panels of `W` rows: `[kc][W]`
/// per panel, rows past `limit` zero.
fn pack<const W: usize>(
    src: &Rows,
    r0: usize,
    rows: usize,
    k0: usize,
    kc: usize,
    out: &mut Vec<f32>,
    tmp: &mut Vec<f32>,
) {
    let panels = rows.div_ceil(W);
    out.clear();
    out.resize(panels * kc * W, 0.0);
    tmp.resize(kc, 0.0);
    // Panels of 4 packed f32 rows (the activations' NR = 4): 4 × 4 blocks transposed in
    // registers, where the loop below stores one f32 at a time (every thread of an m-cut
    // GEMM packs all of the activations: that serial part kept MiniLM's 1536 → 384
    // projection at 1.74× on 2 threads).
    let mut r = 0;
    if W == 4 && src.is_f32_packed() {
        while r + 4 <= rows {
            let p: [*const f32; 4] = std::array::from_fn(|i| src.ptr(r0 + r + i, k0) as *const f32);
            let panel = &mut out[(r / 4) * kc * 4..(r / 4 + 1) * kc * 4];
            let mut kk = 0;
            // In range: each row holds `k0 + kc` f32, the panel `kc * 4`.
            while kk + 4 <= kc {
                let t = F32x4::transpose4(p.map(|p| unsafe { F32x4::load(p.add(kk)) }));
                for (i, v) in t.into_iter().enumerate() {
                    unsafe { v.store(panel.as_mut_ptr().add((kk + i) * 4)) };
                }
                kk += 4;
            }
            for kk in kk..kc {
                for (i, p) in p.iter().enumerate() {
                    panel[kk * 4 + i] = unsafe { *p.add(kk) };
                }
            }
            r += 4;
        }
    }
    for r in r..rows {
        src.load(r0 + r, k0, &mut tmp[..kc]);
        let panel = &mut out[(r / W) * kc * W..(r / W + 1) * kc * W];
        let lane = r % W;
        for (kk, &v) in tmp[..kc].iter().enumerate() {
            panel[kk * W + lane] = v;
        }
    }
}

/// The `MR x NR` register tile: `c[j][h]` holds dst row `n0 + j`, m lanes `4h .. 4h + 4`.
///
/// # Safety
/// `a` readable for `kc * MR` f32, `b` for `kc * NR`.
///
/// Not inlined: its own small wasm function, one call per `kc`-deep tile (the kernels
/// module's doc says why: inlined into `matmul_with`'s thread closure Firefox ran it 1.6×
/// slower than Chromium).
#[inline(never)]
unsafe fn micro_tile(kc: usize, a: *const f32, b: *const f32) -> [[F32x4; 2]; NR] {
    let z = F32x4::splat(0.0);
    let mut c = [[z; 2]; NR];
    unsafe {
        for p in 0..kc {
            let a0 = F32x4::load(a.add(p * MR));
            let a1 = F32x4::load(a.add(p * MR + 4));
            let bp = b.add(p * NR);
            for (j, cj) in c.iter_mut().enumerate() {
                let bj = F32x4::splat(*bp.add(j));
                cj[0] = cj[0].mul_add(a0, bj);
                cj[1] = cj[1].mul_add(a1, bj);
            }
        }
    }
    c
}

/// Writes (or adds, after the first K slice) a tile's valid `mr x nr` part, then applies
/// `ep` (given after the last K slice).
///
/// # Safety
/// Dst rows `n0 .. n0 + nr` must hold `m0 + mr` f32.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn store_tile(
    out: &DstRows,
    c: &[[F32x4; 2]; NR],
    m0: usize,
    n0: usize,
    mr: usize,
    nr: usize,
    accumulate: bool,
    ep: Option<&Epilogue>,
) {
    // A full tile's epilogue works on the registers, its bias loaded once for the tile.
    let full_ep = ep
        .filter(|_| mr == MR)
        .map(|e| (e, unsafe { e.bias_vecs::<2>(m0) }));
    for (j, cj) in c.iter().enumerate().take(nr) {
        let p = unsafe { out.row(n0 + j).add(m0) };
        unsafe {
            if mr == MR {
                let (mut v0, mut v1) = (cj[0], cj[1]);
                if accumulate {
                    v0 = v0 + F32x4::load(p);
                    v1 = v1 + F32x4::load(p.add(4));
                }
                if let Some((e, [b0, b1])) = full_ep {
                    (v0, v1) = (e.vec(v0, b0), e.vec(v1, b1));
                }
                v0.store(p);
                v1.store(p.add(4));
            } else {
                let mut t = [0f32; MR];
                cj[0].store(t.as_mut_ptr());
                cj[1].store(t.as_mut_ptr().add(4));
                for (i, &v) in t.iter().enumerate().take(mr) {
                    let q = p.add(i);
                    *q = if accumulate { *q + v } else { v };
                }
                if let Some(ep) = ep {
                    ep.apply(p, m0, mr);
                }
            }
        }
    }
}

/// The output rectangle `ms` × `ns` (dst elements × dst rows).
#[allow(clippy::too_many_arguments)]
fn gemm(
    out: &DstRows,
    a: &Rows,
    b: &Rows,
    ms: Range<usize>,
    ns: Range<usize>,
    k: usize,
    pre: Option<&PackedWeights>,
    ep: Option<&Epilogue>,
    ws: &mut Workspace,
) {
    let Workspace {
        apack, bpack, arow, ..
    } = ws;
    for jc in ns.clone().step_by(NC) {
        let nc = NC.min(ns.end - jc);
        for pc in (0..k).step_by(KC) {
            let kc = KC.min(k - pc);
            let ep = ep.filter(|_| pc + kc == k);
            pack::<NR>(b, jc, nc, pc, kc, bpack, arow);
            // M blocks end on multiples of MC (a packed weight's blocks), the first one
            // shorter when the cut starts inside one.
            let mut ic = ms.start;
            while ic < ms.end {
                let mc = (MC - ic % MC).min(ms.end - ic);
                let ablock: &[f32] = match pre {
                    Some(p) => p.block(pc, ic),
                    None => {
                        pack::<MR>(a, ic, mc, pc, kc, apack, arow);
                        apack
                    }
                };
                for jr in (0..nc).step_by(NR) {
                    let bp = bpack[(jr / NR) * kc * NR..].as_ptr();
                    for ir in (0..mc).step_by(MR) {
                        let ap = ablock[(ir / MR) * kc * MR..].as_ptr();
                        unsafe {
                            let c = micro_tile(kc, ap, bp);
                            store_tile(
                                out,
                                &c,
                                ic + ir,
                                jc + jr,
                                MR.min(mc - ir),
                                NR.min(nc - jr),
                                pc > 0,
                                ep,
                            );
                        }
                    }
                }
                ic += mc;
            }
        }
    }
}
