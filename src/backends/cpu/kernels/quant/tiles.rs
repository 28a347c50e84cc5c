//! The integer GEMM and GEMV over [`Int8Panels`]: tiles of weight groups × activation rows,
//! one function per panel kind and shape.

use super::act::*;
use super::kind::*;
use super::panels::*;
use crate::backends::cpu::kernels::batch::DstRows;
use crate::backends::cpu::kernels::elementwise::Epilogue;
use crate::backends::cpu::kernels::simd::{
    store_lanes, ActSlice, Dot16, F32x4, I32x4, I8x16, U8x16, SLICE_BYTES,
};
use crate::backends::cpu::pool::Par;
use crate::graph::{IQ4_NL_VALUES, QK, QK_K};
use std::ops::Range;

/// Activation rows per block of the int8 GEMM's column loop (their quantized values,
/// `k` bytes each, stay in cache while every weight group passes over them).
pub(super) const COL_BLOCK: usize = 64;

/// Output rows `j0 .. j0 + C` × weight groups `gs`: per block, `G × C` integer
/// accumulators over 8 dot instructions each, then one multiply-add by the block scales.
/// Every output is computed by the same operations in the same order whatever `G` and `C`
/// (the integer sums are exact, so splitting them is no change).
///
/// The values of groups `gs` are read at `w` (each group's blocks one after the other,
/// [`block_bytes`]`(K)` apart): the panels' own, or Q5_0's as bytes ([`KIND_Q5_BYTES`]).
///
/// # Safety
/// Groups `gs` in `p`, their values at `w`; activation rows `j0 .. j0 + C` in `xq`, encoded
/// as [`Int8Panels::encoding`] says; dst rows `j0 .. j0 + C` hold `p.m` f32.
#[inline(always)]
pub(super) unsafe fn int8_tile<const K: u8, const G: usize, const C: usize, const N: bool>(
    out: &DstRows,
    p: &Int8Panels,
    xq: &QuantRows,
    gs: [usize; G],
    w: [*const u8; G],
    j0: usize,
) {
    if kind_d_per_row(K) != 0 {
        return unsafe { ktile::<K, G, C, N>(out, p, xq, gs, w, j0) };
    }
    let nb = p.k / QK;
    let (sums, scales) = (p.sums, p.scales);
    let with_min = kind_has_min(K);
    let roll = rolls(K, C, N);
    let mut accf = [[F32x4::splat(0.0); C]; G];
    // The rows' records ([`Layout::Records`]): tiles of several rows start a record
    // (`int8_tiled`), so their lanes are constants.
    let (mut rec, lane) = xq.record(j0, nb);
    debug_assert!(C == 1 || lane == 0);
    let lane = if C == 1 { lane } else { 0 };
    for b in 0..nb {
        unsafe {
            let gb: [usize; G] = std::array::from_fn(|g| gs[g] * nb + b);
            let w: [*const u8; G] = w.map(|w| w.add(b * block_bytes(K)));
            let x: [*const u8; C] = std::array::from_fn(|c| rec.add((lane + c) * REC_VALUES));
            // The biased values' accumulators start at `-bias ·` the activation block's sum
            // (`quantize_q8_biased`).
            // (Q5_1's and Q4_1's start at 0: their records hold the halves' sums there,
            // their mins come after the dots.)
            let start = || -> [[I32x4; C]; G] {
                if with_min {
                    return [[I32x4::splat(0); C]; G];
                }
                let s = |c: usize| rec.add(REC_STARTS + (lane + c) * REC_SUMS * 4);
                [std::array::from_fn(|c| I32x4::load(s(c) as *const i32)); G]
            };
            let acc: [[I32x4; C]; G] = match K {
                KIND_Q8 => {
                    let acc = std::array::from_fn(|g| [I32x4::load(sums.add(gb[g] * GROUP)); C]);
                    // On narrow dots the 32-bit dot split in two ([`I8x16::dot4_split`]).
                    let dot = |w: I8x16, xs, a| w.dot4_as::<N>(xs, a);
                    let load = |w| I8x16::load(w as *const i8);
                    int8_slices(acc, w, x, 0..QK / 4, load, dot, roll)
                }
                // Q5_0's and Q5_1's values as bytes (0..=31, the 7-bit operand).
                KIND_Q5_BYTES | KIND_Q51_BYTES if N => {
                    // Narrow dots: each half's 4 dots of values up to 31 (`Dot16`'s bound)
                    // in 16-bit lanes.
                    let load = |w| U8x16::load(w);
                    let dot = |w, xs: ActSlice, a| xs.dot4_u16(w, a);
                    let zero = [[Dot16::zero(); C]; G];
                    let lo = int8_slices(zero, w, x, 0..QK / 8, load, dot, roll);
                    let hi = int8_slices(zero, w, x, QK / 8..QK / 4, load, dot, roll);
                    let mut acc = start();
                    for g in 0..G {
                        for c in 0..C {
                            acc[g][c] = hi[g][c].widen(lo[g][c].widen(acc[g][c]));
                        }
                    }
                    acc
                }
                // IQ4_NL one row at a time (the GEMM reads its entries as Q8_0's bytes):
                // each vector's nibbles looked up in the table, then dotted as Q8_0's i8s.
                KIND_IQ4NL => {
                    debug_assert!(C == 1);
                    let table = I8x16::load(IQ4_NL_VALUES.as_ptr());
                    let mut acc: [[I32x4; C]; G] =
                        std::array::from_fn(|g| [I32x4::load(sums.add(gb[g] * GROUP)); C]);
                    for v in 0..4 {
                        for g in 0..G {
                            let raw = U8x16::load(w[g].add(v * 16));
                            let (l, h) = nibble_halves(raw, High::None, [raw; 2], v);
                            for c in 0..C {
                                let xl = ActSlice::load(x[c].add(v * SLICE_BYTES));
                                let xh = ActSlice::load(x[c].add((QK / 8 + v) * SLICE_BYTES));
                                let a = l.lookup(table).dot4_as::<N>(xl, acc[g][c]);
                                acc[g][c] = h.lookup(table).dot4_as::<N>(xh, a);
                            }
                        }
                    }
                    acc
                }
                // Q4_0's and Q4_1's values as bytes (0..=15) on narrow dots: a block's 8
                // dots in one 16-bit sum (`Dot16`'s bound), widened once.
                KIND_Q4_BYTES | KIND_Q41_BYTES if N => {
                    let zero = [[Dot16::zero(); C]; G];
                    let load = |w| U8x16::load(w);
                    let dot = |w, xs: ActSlice, a| xs.dot4_u16(w, a);
                    let d = int8_slices(zero, w, x, 0..QK / 4, load, dot, roll);
                    let mut acc = start();
                    for g in 0..G {
                        for c in 0..C {
                            acc[g][c] = d[g][c].widen(acc[g][c]);
                        }
                    }
                    acc
                }
                KIND_Q5_BYTES | KIND_Q51_BYTES | KIND_Q4_BYTES | KIND_Q41_BYTES => int8_slices(
                    start(),
                    w,
                    x,
                    0..QK / 4,
                    |w| U8x16::load(w),
                    |w, xs, a| xs.dot4_u(w, a),
                    roll,
                ),
                _ => {
                    // Q4_0 and Q5_0 (values 0..=15 / 0..=31, the 7-bit operand) one row at
                    // a time; the GEMM (C > 1) reads both as bytes (`int8_tiled`).
                    debug_assert!(C == 1);
                    // Q5_0's and Q5_1's fifth bits (see `Int8Panels`).
                    let planes: Option<[[U8x16; 2]; G]> =
                        (kind_high(K) == High::Fifth).then(|| {
                            std::array::from_fn(|g| [U8x16::load(w[g].add(GROUP_BLOCK_Q4)); 2])
                        });
                    let zero = [[I32x4::splat(0); C]; G];
                    let (mut acc, hi) = nibble_dots::<G, C, N, false>(
                        w,
                        x,
                        kind_high(K),
                        planes,
                        false,
                        start(),
                        zero,
                        roll,
                    );
                    for g in 0..G {
                        for c in 0..C {
                            acc[g][c] = acc[g][c] + hi[g][c];
                        }
                    }
                    acc
                }
            };
            for g in 0..G {
                let dw = F32x4::load(scales.add(gb[g] * GROUP));
                for c in 0..C {
                    let dx = rec.add(REC_SCALES + (lane + c) * REC_DS * 4) as *const f32;
                    let s = dw * F32x4::splat(*dx);
                    accf[g][c] = accf[g][c].mul_add(F32x4::from_i32(acc[g][c]), s);
                    if with_min {
                        // `-m` times the block's `-dx · Σx` (`quantize_q8_halves`).
                        let neg_m = F32x4::load(sums.add(gb[g] * GROUP) as *const f32);
                        accf[g][c] = accf[g][c].mul_add(neg_m, F32x4::splat(*dx.add(1)));
                    }
                }
            }
            rec = rec.add(REC_BYTES);
        }
    }
    unsafe { store_tile(out, p, accf, gs, j0) };
}

/// A tile's outputs (`accf[g][c]`: group `gs[g]`'s rows, activation row `j0 + c`) stored.
///
/// # Safety
/// As for [`int8_tile`].
#[inline(always)]
pub(super) unsafe fn store_tile<const G: usize, const C: usize>(
    out: &DstRows,
    p: &Int8Panels,
    accf: [[F32x4; C]; G],
    gs: [usize; G],
    j0: usize,
) {
    for (c, row) in (j0..j0 + C).enumerate() {
        let o = out.row(row);
        for (g, v) in accf.iter().enumerate() {
            let r0 = gs[g] * GROUP;
            // In range: rows `r0 ..` of the output row, as many as the weight has.
            unsafe { store_lanes(v[c], o.add(r0), p.m - r0) };
        }
    }
}

/// The integer dots of one block of nibble panels (Q4_0; Q5_0 and Q6_K with the `high` bits
/// in `planes`; Q4_K) with activation rows `x`: each output's low-half dots added to `lo`, its
/// high-half dots to `hi`. Where the halves need not stay apart (`!apart`: one scale for
/// both) a tile of several rows adds both to `lo` (one accumulator an output: half the
/// registers); a lone row keeps two chains (independent dots). How the dots sum: with `N`
/// (narrow dots, values up to 31) in 16-bit lanes ([`Dot16`]), widened once: 4 a half, or a
/// tile's 8 (values up to 15) when together; else each a 32-bit dot, split in two when
/// `SPLIT` ([`ActSlice::dot4_u_as`]: Q6_K's values up to 63 on narrow-dot engines, where
/// `N` must be false). `roll`: the loop over the block's 4 vectors stays a loop ([`rolled`]).
///
/// # Safety
/// Each `w[g]` holds a block's nibbles; each `x[c]` an activation block's slices.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn nibble_dots<
    const G: usize,
    const C: usize,
    const N: bool,
    const SPLIT: bool,
>(
    w: [*const u8; G],
    x: [*const u8; C],
    high: High,
    planes: Option<[[U8x16; 2]; G]>,
    apart: bool,
    mut lo: [[I32x4; C]; G],
    mut hi: [[I32x4; C]; G],
    roll: bool,
) -> ([[I32x4; C]; G], [[I32x4; C]; G]) {
    let two = apart || C == 1;
    let (dl, dh) = if two { (0, 1) } else { (0, 0) };
    debug_assert!(!(N && SPLIT));
    let dot = |x: ActSlice, w, a| x.dot4_u_as::<SPLIT>(w, a);
    let mut d16 = [[[Dot16::zero(); 2]; C]; G];
    for v in 0..rolled(4, roll) {
        let vals: [(U8x16, U8x16); G] = std::array::from_fn(|g| {
            let raw = unsafe { U8x16::load(w[g].add(v * 16)) };
            match planes {
                Some(pl) => nibble_halves(raw, high, pl[g], v),
                None => nibble_halves(raw, High::None, [raw; 2], v),
            }
        });
        for c in 0..C {
            let xl = unsafe { ActSlice::load(x[c].add(v * SLICE_BYTES)) };
            let xh = unsafe { ActSlice::load(x[c].add((QK / 8 + v) * SLICE_BYTES)) };
            for g in 0..G {
                let (l, h) = vals[g];
                if N {
                    let d = &mut d16[g][c];
                    d[dl] = xl.dot4_u16(l, d[dl]);
                    d[dh] = xh.dot4_u16(h, d[dh]);
                } else if two {
                    lo[g][c] = dot(xl, l, lo[g][c]);
                    hi[g][c] = dot(xh, h, hi[g][c]);
                } else {
                    lo[g][c] = dot(xh, h, dot(xl, l, lo[g][c]));
                }
            }
        }
    }
    if N {
        for g in 0..G {
            for c in 0..C {
                lo[g][c] = d16[g][c][0].widen(lo[g][c]);
                if two {
                    hi[g][c] = d16[g][c][1].widen(hi[g][c]);
                }
            }
        }
    }
    (lo, hi)
}

/// [`int8_tile`] for the K-quant panels (`K`: Q3_K's, Q4_K's, Q5_K's or Q6_K's, or Q3_K's,
/// Q5_K's or Q6_K's values as bytes, [`KIND_Q3K_BYTES`], [`KIND_Q5K_BYTES`],
/// [`KIND_Q6K_BYTES`]): per block two integer accumulators an output, the dots of the block's
/// halves (Q6_K's and Q3_K's starting at `-offset ·` the activation halves' sums,
/// [`kind_offset`]), finished by the rows' integer scales: Q6_K's and Q3_K's
/// `sc_lo · lo + sc_hi · hi` in integers, times `d · dx`; Q4_K's and Q5_K's
/// `(lo + hi) · d · sc · dx - dmin · m · dx · Σx`.
///
/// # Safety
/// As for [`int8_tile`], the activations encoded with the sums of the blocks' halves.
#[inline(always)]
pub(super) unsafe fn ktile<const K: u8, const G: usize, const C: usize, const N: bool>(
    out: &DstRows,
    p: &Int8Panels,
    xq: &QuantRows,
    gs: [usize; G],
    w: [*const u8; G],
    j0: usize,
) {
    let (nb, nsb) = (p.k / QK, p.k / QK_K);
    // `d`s per row and super-block (`k_at`'s layout, a constant here).
    let nd = kind_d_per_row(K);
    // Q4_K's and Q5_K's scale and min per block (Q6_K: a scale per half, an offset).
    let q4k = nd == 2;
    let roll = rolls(K, C, N);
    let mut accf = [[F32x4::splat(0.0); C]; G];
    // The rows' records, as in `int8_tile`.
    let (mut rec, lane) = xq.record(j0, nb);
    debug_assert!(C == 1 || lane == 0);
    let lane = if C == 1 { lane } else { 0 };
    for b in 0..nb {
        unsafe {
            let w: [*const u8; G] = w.map(|w| w.add(b * block_bytes(K)));
            let x: [*const u8; C] = std::array::from_fn(|c| rec.add((lane + c) * REC_VALUES));
            // The activation sums of the block's halves.
            let xs: [[i32; 2]; C] = std::array::from_fn(|c| {
                let at = rec.add(REC_STARTS + (lane + c) * REC_SUMS * 4) as *const i32;
                [*at, *at.add(1)]
            });
            let start = |h: usize| -> [[I32x4; C]; G] {
                [std::array::from_fn(|c| I32x4::splat(-kind_offset(K) * xs[c][h])); G]
            };
            let (lo, hi) = if K == KIND_Q5K_BYTES {
                // Q5_K's values as bytes (0..=31), one scale a block: on narrow dots each
                // half's 4 dots in 16-bit lanes (`Dot16`'s bound), else one chain of 8.
                let load = |w| U8x16::load(w);
                if N {
                    let dot = |w, xs: ActSlice, a| xs.dot4_u16(w, a);
                    let zero = [[Dot16::zero(); C]; G];
                    let lo = int8_slices(zero, w, x, 0..QK / 8, load, dot, roll);
                    let hi = int8_slices(zero, w, x, QK / 8..QK / 4, load, dot, roll);
                    let widen = |d: [[Dot16; C]; G]| d.map(|d| d.map(|d| d.widen(I32x4::splat(0))));
                    (widen(lo), widen(hi))
                } else {
                    let dot = |w, xs: ActSlice, a| xs.dot4_u(w, a);
                    let all = int8_slices(start(0), w, x, 0..QK / 4, load, dot, roll);
                    (all, start(1))
                }
            } else if K == KIND_Q6K_BYTES || K == KIND_Q3K_BYTES {
                let load = |w| U8x16::load(w);
                // On narrow dots the 32-bit dot split in two ([`ActSlice::dot4_u_split`]).
                let dot = |w, xs: ActSlice, a| xs.dot4_u_as::<N>(w, a);
                (
                    int8_slices(start(0), w, x, 0..QK / 8, load, dot, roll),
                    int8_slices(start(1), w, x, QK / 8..QK / 4, load, dot, roll),
                )
            } else {
                // Q4_K's nibbles (halves of one scale), Q5_K's with their plane of fifth bits
                // (values up to 31: 4 dots a half in 16-bit sums), or Q6_K's with their two
                // planes of higher bits (values up to 63: no 16-bit sums, on narrow dots
                // split 32-bit dots; a scale a half).
                let high = kind_high(K);
                let second = if high == High::Crumbs { 16 } else { 0 };
                let planes: Option<[[U8x16; 2]; G]> = (high != High::None).then(|| {
                    std::array::from_fn(|g| {
                        [0, second].map(|o| U8x16::load(w[g].add(GROUP_BLOCK_Q4 + o)))
                    })
                });
                let (lo, hi) = (start(0), start(1));
                if q4k || K == KIND_Q3K {
                    // Q4_K's one scale: a tile's halves share accumulators (values up to 15),
                    // or keep apart (Q5_K's, up to 31: `Dot16` holds 4 of their dots; Q3_K's,
                    // 0..=7, a scale a half).
                    let apart = high == High::Fifth || K == KIND_Q3K;
                    nibble_dots::<G, C, N, false>(w, x, high, planes, apart, lo, hi, roll)
                } else {
                    nibble_dots::<G, C, false, N>(w, x, High::Crumbs, planes, true, lo, hi, roll)
                }
            };
            for g in 0..G {
                let ks = p.kscales.add((gs[g] * nb + b) * GROUP_KSCALES);
                let (sa, sz) = (I32x4::load_i8x4(ks), I32x4::load_i8x4(ks.add(GROUP)));
                let dp = p.scales.add((gs[g] * nsb + b / (QK_K / QK)) * GROUP * nd);
                let d = F32x4::load(dp);
                if q4k {
                    let dsc = d * F32x4::from_i32(sa);
                    let dmn = F32x4::load(dp.add(GROUP)) * F32x4::from_i32(sz);
                    for c in 0..C {
                        // The block's `dx` and `-dx · Σx` (`quantize_q8_halves`).
                        let at = rec.add(REC_SCALES + (lane + c) * REC_DS * 4) as *const f32;
                        let (dx, min) = (*at, *at.add(1));
                        let acc = F32x4::from_i32(lo[g][c] + hi[g][c]);
                        accf[g][c] = accf[g][c].mul_add(acc, dsc * F32x4::splat(dx));
                        accf[g][c] = accf[g][c].mul_add(dmn, F32x4::splat(min));
                    }
                } else {
                    for c in 0..C {
                        let dx = *(rec.add(REC_SCALES + (lane + c) * REC_DS * 4) as *const f32);
                        let t = lo[g][c].mul(sa) + hi[g][c].mul(sz);
                        accf[g][c] = accf[g][c].mul_add(F32x4::from_i32(t), d * F32x4::splat(dx));
                    }
                }
            }
            rec = rec.add(REC_BYTES);
        }
    }
    unsafe { store_tile(out, p, accf, gs, j0) };
}

/// `n`, hidden from the optimizer where `roll` (tiles of several activation rows,
/// [`rolls`]) so that a block's loop over its slices stays a loop. Unrolled, LLVM's wasm
/// output computes every weight vector of a block first and then each output's 8 dots as
/// one nested expression, and V8 (which keeps that order) spills the tile's accumulators
/// and activations: Chromium on a Sapphire Rapids core ran 349 instructions a block of a
/// 2 × 4 Q4_0 tile, 105 of them spill moves. Rolled, each iteration loads a slice's weights
/// and dots them with every activation row, nothing spilled in the loop: the prompt's GEMMs
/// 1.07–1.11× faster (Q8_0, Q4_0, Q4_K; relaxed SIMD), the same in the SIMD128 build, Q4_0's
/// on narrow dots 1.1× (Chromium without AVX-VNNI) and 1.03–1.05× (Firefox); its byte
/// panels on narrow dots unrolled ran the GEMM 0.65× (AMD EPYC without AVX-VNNI, Chromium),
/// and two slices an iteration 0.95×. Q5_0's and Q4_K's tiles on narrow dots stay unrolled
/// (rolled, Firefox ran Q4_K_M's prompt 0.93–0.97×), and so does a matrix-vector tile (few
/// live values).
#[inline(always)]
pub(super) fn rolled(n: usize, roll: bool) -> usize {
    if roll {
        std::hint::black_box(n)
    } else {
        n
    }
}

/// Whether the tiles of kind `k` over `c` activation rows, on narrow dots or not, keep a
/// block's slice loop rolled ([`rolled`]): every tile of several rows on the 32-bit dot, and
/// on narrow dots Q4_0's (its GEMM reads byte panels, [`int8_tiled`]) and the split 32-bit
/// dots' (Q8_0's, Q6_K's bytes), whose loops are the 32-bit dot's.
pub(super) const fn rolls(k: u8, c: usize, narrow: bool) -> bool {
    c > 1
        && (!narrow
            || matches!(
                k,
                KIND_Q4_BYTES | KIND_Q41_BYTES | KIND_Q8 | KIND_Q6K_BYTES | KIND_Q3K_BYTES
            ))
}

/// The integer dots of one block of Q8_0-layout panels (16-byte slices of 4 rows × 4
/// values), over its slices `slices`: groups' blocks `w` × activation slices `x`, each
/// weight slice loaded (`load`) once for the tile's columns and dotted (`dot`) into `acc`.
///
/// # Safety
/// Each `w[g]` holds a block's slices; each `x[c]` an activation block's.
#[inline(always)]
pub(super) unsafe fn int8_slices<W: Copy, A: Copy, const G: usize, const C: usize>(
    mut acc: [[A; C]; G],
    w: [*const u8; G],
    x: [*const u8; C],
    slices: Range<usize>,
    load: impl Fn(*const u8) -> W,
    dot: impl Fn(W, ActSlice, A) -> A,
    roll: bool,
) -> [[A; C]; G] {
    for s in slices.start..slices.start + rolled(slices.len(), roll) {
        let ws: [W; G] = std::array::from_fn(|g| load(unsafe { w[g].add(s * 16) }));
        for c in 0..C {
            let xs = unsafe { ActSlice::load(x[c].add(s * SLICE_BYTES)) };
            for g in 0..G {
                acc[g][c] = dot(ws[g], xs, acc[g][c]);
            }
        }
    }
    acc
}

/// [`int8_tile`] for `cols` (1 to 4) activation rows.
///
/// # Safety
/// As for [`int8_tile`].
#[inline(always)]
pub(super) unsafe fn int8_tiles<const K: u8, const G: usize, const N: bool>(
    out: &DstRows,
    p: &Int8Panels,
    xq: &QuantRows,
    gs: [usize; G],
    w: [*const u8; G],
    j0: usize,
    cols: usize,
) {
    unsafe {
        match cols {
            4 => int8_tile::<K, G, 4, N>(out, p, xq, gs, w, j0),
            3 => int8_tile::<K, G, 3, N>(out, p, xq, gs, w, j0),
            2 => int8_tile::<K, G, 2, N>(out, p, xq, gs, w, j0),
            _ => int8_tile::<K, G, 1, N>(out, p, xq, gs, w, j0),
        }
    }
}

/// `dst = p · bᵀ` for flat rows `0 .. n` (see [`Batches`]) with the activations already
/// quantized in `xq`: weight groups cut over threads in pairs (each output is the same
/// arithmetic whatever the cut, so results do not depend on the thread count).
pub(super) fn int8_gemm(
    par: Par,
    out: &DstRows,
    p: &Int8Panels,
    xq: &QuantRows,
    n: usize,
    ep: Option<&Epilogue>,
    narrow: bool,
) {
    let groups = p.m.div_ceil(GROUP);
    let min_groups =
        crate::backends::cpu::kernels::gemm::MIN_PAR_MACS.div_ceil((n * p.k * GROUP).max(1));
    // A matrix-vector product takes a thread's groups in one call (see `int8_gemv`).
    let run = if n == 1 { groups } else { GROUP_RUN };
    par.for_ranges(groups, min_groups, 4, |r| {
        // The tiles' unpacked values (Q5_0, Q6_K), reused by every call of this range.
        let mut bytes = Vec::new();
        for jc in (0..n).step_by(COL_BLOCK) {
            for g in (r.start..r.end).step_by(run.max(1)) {
                let (groups, cols) = (g..r.end.min(g + run), jc..n.min(jc + COL_BLOCK));
                // In range: groups and activation rows as checked by the callers.
                unsafe { int8_block(out, p, xq, groups.clone(), cols.clone(), &mut bytes, narrow) };
                if let Some(ep) = ep {
                    let ms = groups.start * GROUP..p.m.min(groups.end * GROUP);
                    ep.apply_rows(out, ms, cols);
                }
            }
        }
    });
}

/// Whether this build has narrow dots ([`int8_block`]): relaxed SIMD's.
const NARROW_DOTS: bool = cfg!(target_feature = "relaxed-simd");

/// Output rows `cols` × weight groups `groups`, the unit of work of [`int8_gemm`], by
/// functions of one panel kind and shape each (a matrix-vector product, or tiles of 4
/// activation rows), each small and out of the thread's closure (the kernels module's doc
/// says why; measured here: the int8 GEMMs 1.15–1.4× slower at 2 threads with every kind
/// and shape inlined into one function, 1.7× with `--no-liftoff`).
///
/// `narrow`: small weights' dots (Q4_0's, Q5_0's and Q4_K's) summed in 16-bit lanes
/// ([`Dot16`]) before widening, and Q8_0's and Q6_K's 32-bit dots split into a 16-bit dot
/// and its widening ([`I8x16::dot4_split`]), where this engine's 32-bit dot is slower
/// ([`narrow_dots_faster`]; AMD EPYC without AVX-VNNI, Chromium: `q8_0 gemm 1536×512×384`
/// 10.5 → 8.9–9.5 ms, `q6_k gemm 896×64×4864` 13.0–14.1 → 10.5 ms, `q6_k matvec 4096×4096`
/// 1.30–1.31 → 1.20–1.25 ms). The integer sums are exact either way: the same results.
///
/// # Safety
/// As for [`int8_tile`], for every group of `groups` and row of `cols`.
#[inline(always)]
pub(super) unsafe fn int8_block(
    out: &DstRows,
    p: &Int8Panels,
    xq: &QuantRows,
    groups: Range<usize>,
    cols: Range<usize>,
    bytes: &mut Vec<u8>,
    narrow: bool,
) {
    unsafe {
        // Narrow dots where they apply: small weights' dots (Q4_0, Q5_0, Q4_K), Q8_0's and
        // Q6_K's. Only relaxed SIMD has them (`narrow_dots_faster` is false in every other
        // build): elsewhere the narrow kernels, the same arithmetic, are not compiled (a
        // third of the int8 kernels' code, 10 kinds × 3 shapes).
        if NARROW_DOTS && narrow {
            int8_kernel::<true>(out, p, xq, groups, cols, bytes)
        } else {
            int8_kernel::<false>(out, p, xq, groups, cols, bytes)
        }
    }
}

/// [`int8_block`] with the narrow-dot choice a constant (`N`): the kernel for the panels'
/// kind, matrix-vector for one activation row, tiled for more.
///
/// # Safety
/// As for [`int8_block`].
#[inline(always)]
pub(super) unsafe fn int8_kernel<const N: bool>(
    out: &DstRows,
    p: &Int8Panels,
    xq: &QuantRows,
    groups: Range<usize>,
    cols: Range<usize>,
    bytes: &mut Vec<u8>,
) {
    unsafe {
        if cols.len() == 1 {
            let j = cols.start;
            return match p.kind {
                PanelKind::Q8 => int8_gemv::<KIND_Q8, N>(out, p, xq, groups, j),
                PanelKind::Q5 => int8_gemv::<KIND_Q5, N>(out, p, xq, groups, j),
                PanelKind::Q4 => int8_gemv::<KIND_Q4, N>(out, p, xq, groups, j),
                PanelKind::Q4K => int8_gemv::<KIND_Q4K, N>(out, p, xq, groups, j),
                PanelKind::Q5K => int8_gemv::<KIND_Q5K, N>(out, p, xq, groups, j),
                PanelKind::Q3K => int8_gemv::<KIND_Q3K, N>(out, p, xq, groups, j),
                PanelKind::Q51 => int8_gemv::<KIND_Q51, N>(out, p, xq, groups, j),
                PanelKind::Q41 => int8_gemv::<KIND_Q41, N>(out, p, xq, groups, j),
                PanelKind::IQ4NL => int8_gemv::<KIND_IQ4NL, N>(out, p, xq, groups, j),
                PanelKind::Q6K => int8_gemv::<KIND_Q6K, N>(out, p, xq, groups, j),
            };
        }
        let tiles = match p.kind {
            PanelKind::Q8 => tiles_for::<KIND_Q8, N>(),
            PanelKind::Q5 => tiles_for::<KIND_Q5, N>(),
            PanelKind::Q4 => tiles_for::<KIND_Q4, N>(),
            PanelKind::Q4K => tiles_for::<KIND_Q4K, N>(),
            PanelKind::Q5K => tiles_for::<KIND_Q5K, N>(),
            PanelKind::Q3K => tiles_for::<KIND_Q3K, N>(),
            PanelKind::Q51 => tiles_for::<KIND_Q51, N>(),
            PanelKind::Q41 => tiles_for::<KIND_Q41, N>(),
            PanelKind::IQ4NL => tiles_for::<KIND_IQ4NL, N>(),
            PanelKind::Q6K => tiles_for::<KIND_Q6K, N>(),
        };
        int8_tiled(out, p, xq, groups, cols, bytes, tiles)
    }
}

/// [`int8_block`] for one activation row `j` (the matrix-vector case): 4 groups at a time,
/// 4 (Q4_0: 8) independent chains of dot instructions. The 4 are a quarter of `groups`
/// apart, each walking its quarter in order, so that memory is read as 4 long streams: 4
/// neighbouring groups (4 streams a row apart, restarting every 4 groups) read rows of 896
/// Q4_0 values (Qwen2.5-0.5B's) at 4.3–4.6 GB/s against 7.3 for rows of 4864, in Chromium
/// at 1 thread.
///
/// # Safety
/// As for [`int8_block`].
#[inline(never)]
pub(super) unsafe fn int8_gemv<const K: u8, const N: bool>(
    out: &DstRows,
    p: &Int8Panels,
    xq: &QuantRows,
    groups: Range<usize>,
    j: usize,
) {
    let (g0, q) = (groups.start, groups.len() / 4);
    for t in g0..g0 + q {
        let gs = [t, t + q, t + 2 * q, t + 3 * q];
        unsafe { int8_tile::<K, 4, 1, N>(out, p, xq, gs, gs.map(|g| p.group_values(g)), j) };
    }
    for g in g0 + 4 * q..groups.end {
        unsafe { int8_tile::<K, 1, 1, N>(out, p, xq, [g], [p.group_values(g)], j) };
    }
}

/// [`int8_block`] for several activation rows: tiles of 2 groups × 4 rows. Q5_0's, Q5_K's
/// and Q6_K's groups (and Q3_K's, whose halves keep a scale each) are first unpacked
/// to bytes ([`Int8Panels::value_bytes`]) for all the
/// tiles of their columns: putting the fifth bits back costs as much as the dots of a tile's
/// 4 columns (the prompt's matmuls ran 1.7× slower than on byte panels). So are Q4_0's: a
/// tile's slice loop then has no nibbles to split (on the 32-bit dot 6 of its 51
/// instructions: Q5_0's GEMM on bytes ran 1.07× faster than Q4_0's on nibbles), and on
/// narrow dots a block's 8 byte dots sum in one 16-bit lane as the nibbles' did (AMD EPYC
/// without AVX-VNNI, Chromium: `q4_0 gemm 4864×64×896` 6.5 → 6.0 ms, 1.07×). Q4_K's
/// stay nibbles: as bytes its two halves (a scale each) take two slice loops and twice the
/// accumulators, and its GEMM ran 0.88×.
///
/// # Safety
/// As for [`int8_block`].
#[inline(never)]
pub(super) unsafe fn int8_tiled(
    out: &DstRows,
    p: &Int8Panels,
    xq: &QuantRows,
    groups: Range<usize>,
    cols: Range<usize>,
    bytes: &mut Vec<u8>,
    (as_bytes, tiles): (bool, TileCols),
) {
    let nb = p.k / QK;
    if as_bytes {
        bytes.resize(2 * nb * GROUP_BLOCK, 0);
    }
    let mut g = groups.start;
    while g < groups.end {
        let pair = g + 2 <= groups.end;
        let w = if as_bytes {
            let n = if pair { 2 } else { 1 };
            for (i, part) in bytes.chunks_exact_mut(nb * GROUP_BLOCK).take(n).enumerate() {
                p.value_bytes(g + i, part);
            }
            [bytes.as_ptr(), bytes[nb * GROUP_BLOCK..].as_ptr()]
        } else {
            [
                p.group_values(g),
                p.group_values((g + 1).min(groups.end - 1)),
            ]
        };
        unsafe { tiles(out, p, xq, g, pair, w, cols.clone()) };
        g += if pair { 2 } else { 1 };
    }
}

/// An [`int8_tile_cols`] instance: the tiles of one tile kind over a group or a pair.
pub(super) type TileCols =
    unsafe fn(&DstRows, &Int8Panels, &QuantRows, usize, bool, [*const u8; 2], Range<usize>);

/// What [`int8_tiled`] runs for panels of kind `K`: whether their values are unpacked to
/// bytes first (the values with higher bits, the nibbles but Q4_K's, and IQ4_NL's table
/// entries; `value_bytes` writes every byte of a part), and the tiles of the kind that reads
/// them. One tile function per tile kind, shared by the panel kinds whose tiles are the same
/// code, and one `int8_tiled` for all: a copy of the group loop per kind was small enough for
/// wasm-opt to inline all 20 into `int8_gemm`'s closure (a 106 KB body, past JavaScriptCore's
/// optimizing limit).
#[inline(always)]
pub(super) fn tiles_for<const K: u8, const N: bool>() -> (bool, TileCols) {
    let tiles: TileCols = match K {
        KIND_Q5 | KIND_Q4 if !N => int8_tile_cols::<KIND_Q5_BYTES, N>,
        KIND_Q51 | KIND_Q41 if !N => int8_tile_cols::<KIND_Q51_BYTES, N>,
        KIND_Q5 => int8_tile_cols::<KIND_Q5_BYTES, N>,
        KIND_Q51 => int8_tile_cols::<KIND_Q51_BYTES, N>,
        KIND_Q4 => int8_tile_cols::<KIND_Q4_BYTES, N>,
        KIND_Q41 => int8_tile_cols::<KIND_Q41_BYTES, N>,
        KIND_IQ4NL => int8_tile_cols::<KIND_Q8, N>,
        KIND_Q6K => int8_tile_cols::<KIND_Q6K_BYTES, N>,
        KIND_Q5K => int8_tile_cols::<KIND_Q5K_BYTES, N>,
        KIND_Q3K => int8_tile_cols::<KIND_Q3K_BYTES, N>,
        _ => int8_tile_cols::<K, N>,
    };
    (bytes_kind(K) != K, tiles)
}

// What lets `int8_tiled` run Q4_0's and Q4_1's bytes with Q5_0's and Q5_1's tiles on the
// 32-bit dot: the same block size and the same rolling at every tile width.
const _: () = {
    assert!(block_bytes(KIND_Q4_BYTES) == block_bytes(KIND_Q5_BYTES));
    assert!(block_bytes(KIND_Q41_BYTES) == block_bytes(KIND_Q51_BYTES));
    let mut c = 1;
    while c <= 4 {
        assert!(rolls(KIND_Q4_BYTES, c, false) == rolls(KIND_Q5_BYTES, c, false));
        assert!(rolls(KIND_Q41_BYTES, c, false) == rolls(KIND_Q51_BYTES, c, false));
        c += 1;
    }
};

/// The tiles of [`int8_tiled`] over one group (`pair` false) or a pair (`g`, `g + 1`), their
/// values at `w`, for activation rows `cols`: tiles of 4 rows, then the rest. A function per
/// tile kind `T`, not per panel kind: IQ4_NL's bytes are Q8_0's, and on the 32-bit dot
/// (`N` false) Q4_0's and Q4_1's bytes are dotted as Q5_0's and Q5_1's are (`rolls` and
/// `block_bytes` agree for them), so those panel kinds share one copy of the tiles' code
/// (each a quarter of the int8 kernels' size).
///
/// # Safety
/// As for [`int8_tile`], for groups `g` (and `g + 1` where `pair`) and every row of `cols`.
#[inline(never)]
pub(super) unsafe fn int8_tile_cols<const T: u8, const N: bool>(
    out: &DstRows,
    p: &Int8Panels,
    xq: &QuantRows,
    g: usize,
    pair: bool,
    w: [*const u8; 2],
    cols: Range<usize>,
) {
    for j in cols.clone().step_by(4) {
        let c = 4.min(cols.end - j);
        unsafe {
            if pair {
                int8_tiles::<T, 2, N>(out, p, xq, [g, g + 1], w, j, c)
            } else {
                int8_tiles::<T, 1, N>(out, p, xq, [g], [w[0]], j, c)
            }
        }
    }
}
