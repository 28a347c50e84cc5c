//! Q8_0 / Q5_0 / Q5_1 / Q4_0 / Q4_1 / IQ4_NL and Q3_K … Q6_K matmul, as ggml does it: each activation row is
//! quantized to Q8_0 on the fly, then every output is a sum over 32-element blocks of
//! `d_w * d_x * (integer dot)`, the integer dots in i8x16/i16x8 lanes (the K-quants' `d_w`
//! an integer scale of the block times the super-block's `d`, less their mins). Weights are
//! read from int8 panels ([`Int8Panels`]), or as GGUF blocks by the row dots.

use super::elementwise::Epilogue;
use super::gemm::{Batches, DstRows, Rows};
use super::simd::{
    act_slice_at, dot_i8x32, dot_q4x32, encode_act, encode_act_plain_sums, encode_slices, f16_at,
    narrow_dots_faster, put_slice_row, slot, store_lanes, ActSlice, Dot16, F32x4, I32x4, I8x16,
    I8x32, U8x16, ACT_OFFSET, PAIRED, SLICE_BYTES,
};
use crate::backends::cpu::pool::Par;
use crate::backends::cpu::TensorView;
use crate::error::{Error, Result};
use crate::graph::{q5_0_values, set_q5_0_values, DType, IQ4_NL_VALUES, QK, QK_K};
use std::ops::Range;

/// Weight rows per block of the output loop (they stay in cache while every activation row
/// passes over them).
const M_BLOCK: usize = 32;

/// Activation rows quantized for the integer dots (f32 scales kept apart from the i8
/// values): to Q8_0 by [`encode_act`] (the Q8_0 kernels) or plainly by [`encode_act_plain_sums`]
/// with each block's integer start (the Q4_0 / Q5_0 panels, [`quantize_q8_biased`]), or to
/// Q8_K with each 16 values' sum (the K-quant kernels). Filled by [`QuantRows::quantize`].
#[derive(Default)]
pub struct QuantRows {
    /// The scales, a fixed count per row (one per block; for the K-quant panels two, the
    /// scale and the mins' term, see [`quantize_q8_halves`]).
    pub d: Vec<f32>,
    /// `k` values per row.
    pub q: Vec<i8>,
    /// The sums, a fixed count per row (none for Q8_0's own encoding; for the Q4_0 / Q5_0
    /// panels each block's integer start, four times, [`quantize_q8_biased`]).
    pub s: Vec<i32>,
    /// The values as the panels' dots read them ([`encode_slices`]), `k / 4 · SLICE_BYTES`
    /// bytes per row: paired builds, where the kernels asked for them (relaxed SIMD reads
    /// `q`; the row dots read `q` in every build).
    pub x: Vec<u8>,
    /// The int8 panels' activations again, as their tiles read them ([`Layout::Records`]):
    /// per [`REC_ROWS`] rows and block a record of [`REC_BYTES`], the rows' slices, sums
    /// and scales side by side, so that a tile reads them from one address that steps a
    /// record a block. With a pointer per row and array, a Q4_0 tile of 2 groups × 4 rows
    /// kept 16 and V8 spilled them: 203 instructions a block besides its 4 × 51 in the slice
    /// loop, 161 with records (`scripts/perf-wasm.sh`). Rows past the last in its record
    /// stay zero. `u32`s: the scales and sums in it are read in place.
    recs: Vec<u32>,
}

/// How [`QuantRows::quantize`] lays out the rows besides `d` / `q` / `s`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Nothing more (the row dots read `q`).
    Rows,
    /// The slices the panels' dots read, per row (`x`, paired builds).
    Slices,
    /// The records the int8 panels' tiles read ([`QuantRows::record`]).
    Records,
}

/// Activation rows per record of [`QuantRows::record`]: a tile's (tiles start at multiples
/// of it).
const REC_ROWS: usize = 4;
/// Bytes of one row's values in a record: a block's slices ([`SLICE_BYTES`] per 4 values).
const REC_VALUES: usize = QK / 4 * SLICE_BYTES;
/// Where a record's sums begin (up to [`REC_SUMS`] `i32`s a row: Q4_0's / Q5_0's start,
/// [`STARTS_PER_BLOCK`], or the K-quants' two halves' sums), and its scales (up to
/// [`REC_DS`] `f32`s a row: the scale, and the K-quants' mins' term).
const REC_STARTS: usize = REC_ROWS * REC_VALUES;
const REC_SUMS: usize = STARTS_PER_BLOCK;
const REC_SCALES: usize = REC_STARTS + REC_ROWS * REC_SUMS * 4;
const REC_DS: usize = 2;
/// Bytes of one record: [`REC_ROWS`] rows' values, sums and scales for one block.
const REC_BYTES: usize = REC_SCALES + REC_ROWS * REC_DS * 4;

/// Activation values per thread from which [`QuantRows::quantize`] is cut over threads: the
/// block encoders take about 1 ns a value (SIMD128), a cut about 7 us (see `MIN_PAR_MACS`),
/// so a thread gets at least twice that in work.
const MIN_PAR_QUANT: usize = 1 << 14;

impl QuantRows {
    /// Row `j`'s record for block 0 ([`Layout::Records`]; the next block's is [`REC_BYTES`]
    /// on), and the row's lane in it.
    fn record(&self, j: usize, nb: usize) -> (*const u8, usize) {
        let at = (j / REC_ROWS * nb * REC_BYTES) / 4;
        (self.recs[at..].as_ptr() as *const u8, j % REC_ROWS)
    }

    /// Where the slices the panels' dots read start for value `v` of the flat values
    /// ([`SLICE_BYTES`] per 4 values).
    pub fn slices(&self, v: usize) -> *const u8 {
        act_slice_at(&self.q, &self.x, v)
    }

    /// Quantizes flat activation rows `0 .. count` of `b` (see [`Batches`]), `k` values each,
    /// rows cut over threads (each row's values are the same whatever the cut): `encode(row,
    /// d, q, s)` writes one row's `per_row[0]` scales, `k` values and `per_row[1]` sums;
    /// `layout` asks for the panels' slices or records too.
    #[allow(clippy::too_many_arguments)]
    pub fn quantize(
        &mut self,
        par: Par,
        b: &TensorView,
        rows: Batches,
        count: usize,
        k: usize,
        per_row: [usize; 2],
        layout: Layout,
        encode: impl Fn(&[f32], &mut [f32], &mut [i8], &mut [i32]) + Sync,
    ) {
        let ([nd, ns], slices) = (per_row, PAIRED && layout != Layout::Rows);
        self.d.resize(count * nd, 0.0);
        self.q.resize(count * k, 0);
        self.s.resize(count * ns, 0);
        let slice_row = k / 4 * SLICE_BYTES;
        self.x.resize(if slices { count * slice_row } else { 0 }, 0);
        let nb = k / QK;
        let records = layout == Layout::Records && nb > 0;
        // Scales and sums a block, as the records keep them.
        let (ndb, nsb) = if records { (nd / nb, ns / nb) } else { (0, 0) };
        assert!(
            ndb <= REC_DS && nsb <= REC_SUMS,
            "{ndb} scales, {nsb} sums a block"
        );
        self.recs.clear();
        if records {
            self.recs
                .resize(count.div_ceil(REC_ROWS) * nb * REC_BYTES / 4, 0);
        }
        // Addresses, so the closure is Sync; each range writes only its own rows (and their
        // lanes of the records).
        let (dp, qp, sp, xp, rp) = (
            self.d.as_mut_ptr() as usize,
            self.q.as_mut_ptr() as usize,
            self.s.as_mut_ptr() as usize,
            self.x.as_mut_ptr() as usize,
            self.recs.as_mut_ptr() as usize,
        );
        par.for_ranges(count, MIN_PAR_QUANT.div_ceil(k.max(1)), 1, |r| {
            // A copy only for rows not packed f32 (made once per range).
            let mut copy = Vec::new();
            for f in r {
                let (j, i2, i3) = rows.at(f);
                let src = Rows::new(b, i2, i3);
                let row = match src.f32_row(j, k) {
                    Some(row) => row,
                    None => {
                        copy.resize(k, 0.0);
                        src.load(j, 0, &mut copy);
                        &copy[..]
                    }
                };
                // In range: flat row `f` of `count` in each array, written by this range
                // alone.
                let (d, q, s) = unsafe {
                    (
                        std::slice::from_raw_parts_mut((dp as *mut f32).add(f * nd), nd),
                        std::slice::from_raw_parts_mut((qp as *mut i8).add(f * k), k),
                        std::slice::from_raw_parts_mut((sp as *mut i32).add(f * ns), ns),
                    )
                };
                encode(row, d, q, s);
                if slices {
                    // In range: as above, row `f`'s slices.
                    let x = unsafe {
                        std::slice::from_raw_parts_mut(
                            (xp as *mut u8).add(f * slice_row),
                            slice_row,
                        )
                    };
                    encode_slices(q, x);
                }
                if records {
                    let values = if PAIRED {
                        xp as *const u8
                    } else {
                        qp as *const u8
                    };
                    let (t, l) = (f / REC_ROWS, f % REC_ROWS);
                    for b in 0..nb {
                        // In range: record (t, b) of the `recs` sized above, row `f`'s lane
                        // of it; row `f`'s blocks of slices, sums and scales.
                        unsafe {
                            let rec = (rp as *mut u8).add((t * nb + b) * REC_BYTES);
                            std::ptr::copy_nonoverlapping(
                                values.add(f * slice_row + b * REC_VALUES),
                                rec.add(l * REC_VALUES),
                                REC_VALUES,
                            );
                            std::ptr::copy_nonoverlapping(
                                s.as_ptr().add(b * nsb),
                                rec.add(REC_STARTS + l * REC_SUMS * 4) as *mut i32,
                                nsb,
                            );
                            std::ptr::copy_nonoverlapping(
                                d.as_ptr().add(b * ndb),
                                rec.add(REC_SCALES + l * REC_DS * 4) as *mut f32,
                                ndb,
                            );
                        }
                    }
                }
            }
        });
    }
}

/// Quantizes `x` (a whole number of blocks) into `d` / `q` as the integer dots take
/// activations: ggml's Q8_0 rounding, with relaxed SIMD's 7-bit encoding in those builds
/// (see [`encode_act`]).
#[inline(never)] // entered once per row (see `int8_block`)
pub fn quantize_q8(x: &[f32], d: &mut [f32], q: &mut [i8]) {
    for ((blk, db), qb) in x
        .chunks_exact(QK)
        .zip(d.iter_mut())
        .zip(q.chunks_exact_mut(QK))
    {
        *db = encode_act(blk, qb);
    }
}

/// Dot of one Q8_0 weight row (`nb` blocks at `w`) with a quantized activation row.
///
/// # Safety
/// `w` readable for `nb` Q8_0 blocks; `d`/`q` hold `nb` blocks.
#[inline]
pub unsafe fn dot_q8_0(w: *const u8, d: &[f32], q: &[i8], nb: usize) -> f32 {
    let mut acc = F32x4::splat(0.0);
    for (i, &dx) in d.iter().enumerate().take(nb) {
        unsafe {
            let blk = w.add(i * 34);
            let s = F32x4::from_i32(dot_i8x32(blk.add(2) as *const i8, q.as_ptr().add(i * QK)));
            acc = acc + s * F32x4::splat(f16_at(blk) * dx);
        }
    }
    acc.hsum()
}

/// Dot of one Q4_0 weight row (`nb` blocks at `w`) with a quantized activation row.
///
/// # Safety
/// As for [`dot_q8_0`] with Q4_0 blocks.
#[inline]
pub unsafe fn dot_q4_0(w: *const u8, d: &[f32], q: &[i8], nb: usize) -> f32 {
    let mut acc = F32x4::splat(0.0);
    for (i, &dx) in d.iter().enumerate().take(nb) {
        unsafe {
            let blk = w.add(i * 18);
            let s = F32x4::from_i32(dot_q4x32(blk.add(2), q.as_ptr().add(i * QK)));
            acc = acc + s * F32x4::splat(f16_at(blk) * dx);
        }
    }
    acc.hsum()
}

/// One of [`dot_q8_0`] / [`dot_q4_0`].
type RowDot = unsafe fn(*const u8, &[f32], &[i8], usize) -> f32;

/// Activation rows per tile: each weight block is loaded (and for Q4_0 unpacked) once for
/// this many dot products.
const N_TILE: usize = 4;

/// Dots of one weight row (`nb` blocks of `block_bytes` at `w`, values from `unpack`) with
/// `J` quantized activation rows (row `j` at `d[j * nb..]`, `q[j * k..]`).
///
/// # Safety
/// `w` readable for `nb` blocks; `d`/`q` hold `J` rows of `nb` blocks.
#[inline(never)]
unsafe fn dot_rows<const J: usize>(
    w: *const u8,
    block_bytes: usize,
    unpack: impl Fn(*const u8) -> I8x32,
    d: &[f32],
    q: &[i8],
    nb: usize,
) -> [f32; J] {
    let k = nb * QK;
    let mut acc = [F32x4::splat(0.0); J];
    for i in 0..nb {
        unsafe {
            let blk = w.add(i * block_bytes);
            let wq = unpack(blk.add(2));
            let bias = wq.act_bias();
            let dw = f16_at(blk);
            for (j, a) in acc.iter_mut().enumerate() {
                let s = F32x4::from_i32(wq.dot(q.as_ptr().add(j * k + i * QK)) - bias);
                *a = *a + s * F32x4::splat(dw * *d.get_unchecked(j * nb + i));
            }
        }
    }
    acc.map(|a| a.hsum())
}

/// Dots of `R` weight rows (blocks at `w[r]`) with one quantized activation row. A lone
/// dot is one chain of dependent adds; `R` independent chains keep the SIMD units busy.
///
/// # Safety
/// Each `w[r]` readable for `nb` blocks; `d`/`q` hold `nb` blocks.
#[inline(never)]
unsafe fn dot_wrows<const R: usize>(
    w: [*const u8; R],
    block_bytes: usize,
    unpack: impl Fn(*const u8) -> I8x32,
    d: &[f32],
    q: &[i8],
    nb: usize,
) -> [f32; R] {
    let mut acc = [F32x4::splat(0.0); R];
    for (i, &dx) in d.iter().enumerate().take(nb) {
        let x = unsafe { q.as_ptr().add(i * QK) };
        for (a, &wr) in acc.iter_mut().zip(&w) {
            unsafe {
                let blk = wr.add(i * block_bytes);
                let wq = unpack(blk.add(2));
                let s = F32x4::from_i32(wq.dot_act(x));
                *a = *a + s * F32x4::splat(f16_at(blk) * dx);
            }
        }
    }
    acc.map(|a| a.hsum())
}

/// Output rows `j0 .. j0 + J` for weight rows `rows` of one batch.
///
/// # Safety
/// Every weight row of `rows` in `a`'s batch `(a2, a3)`; `J` activation rows from `j0`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn tile<const J: usize>(
    out: &DstRows,
    a: &TensorView,
    (a2, a3): (usize, usize),
    rows: std::ops::Range<usize>,
    xq: &QuantRows,
    j0: usize,
    nb: usize,
    q4: bool,
) {
    let k = nb * QK;
    let (d, q) = (&xq.d[j0 * nb..(j0 + J) * nb], &xq.q[j0 * k..(j0 + J) * k]);
    for i in rows {
        let w = a.ptr_at([0, i, a2, a3]) as *const u8;
        let r: [f32; J] = unsafe {
            if q4 {
                dot_rows::<J>(w, 18, |p| I8x32::from_q4(p), d, q, nb)
            } else {
                dot_rows::<J>(w, 34, |p| I8x32::load(p as *const i8), d, q, nb)
            }
        };
        for (j, v) in r.iter().enumerate() {
            unsafe { *out.row(j0 + j).add(i) = *v };
        }
    }
}

/// Output rows `0 .. n` × weight rows `rows` of `a`'s batch `ab`: tiles of `N_TILE`
/// activation rows, then the rest one at a time (the matrix-vector case) over groups of 4
/// weight rows. The unit of work of [`matmul`]'s threads, not inlined into their closure so
/// that it is entered many times per matmul (see [`int8_block`]).
///
/// # Safety
/// Every weight row of `rows` in `a`'s batch `ab`; activation rows `0 .. n` in `xq`; dst
/// rows `0 .. n` hold `a.ne[1]` f32.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
unsafe fn dot_block(
    out: &DstRows,
    a: &TensorView,
    (a2, a3): (usize, usize),
    rows: Range<usize>,
    xq: &QuantRows,
    n: usize,
    q4: bool,
    dot: RowDot,
) {
    let nb = a.ne[0] / QK;
    let k = nb * QK;
    let mut j0 = 0;
    while j0 + N_TILE <= n {
        unsafe { tile::<N_TILE>(out, a, (a2, a3), rows.clone(), xq, j0, nb, q4) };
        j0 += N_TILE;
    }
    for j in j0..n {
        let (d, q) = (&xq.d[j * nb..(j + 1) * nb], &xq.q[j * k..(j + 1) * k]);
        let orow = out.row(j);
        let w = |i: usize| a.ptr_at([0, i, a2, a3]) as *const u8;
        let mut i = rows.start;
        while i + 4 <= rows.end {
            let ws = [w(i), w(i + 1), w(i + 2), w(i + 3)];
            let r = unsafe {
                if q4 {
                    dot_wrows(ws, 18, |p| I8x32::from_q4(p), d, q, nb)
                } else {
                    dot_wrows(ws, 34, |p| I8x32::load(p as *const i8), d, q, nb)
                }
            };
            for (o, v) in r.iter().enumerate() {
                unsafe { *orow.add(i + o) = *v };
            }
            i += 4;
        }
        for i in i..rows.end {
            unsafe { *orow.add(i) = dot(w(i), d, q, nb) };
        }
    }
}

/// `dst = src0 · src1ᵀ` for Q8_0/Q4_0 `a` and f32 `b`; `false` when this kernel does not apply.
pub fn matmul(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    ep: Option<&Epilogue>,
) -> bool {
    let (q4, dot): (bool, RowDot) = match a.dtype {
        DType::Q8_0 => (false, dot_q8_0),
        DType::Q4_0 => (true, dot_q4_0),
        // K-quants and Q5_0 take the f32 kernels (dequantized rows) or the panels; the others
        // are not quantized.
        DType::F32
        | DType::F16
        | DType::I32
        | DType::Q4_1
        | DType::Q5_0
        | DType::Q5_1
        | DType::IQ4_NL
        | DType::Q2_K
        | DType::Q3_K
        | DType::Q4_K
        | DType::Q5_K
        | DType::Q6_K => return false,
    };
    if b.dtype != DType::F32 || !super::packed_f32(dst) || !a.rows_contiguous() {
        return false;
    }
    let (m, n, k) = (a.ne[1], b.ne[1], a.ne[0]);
    if k % QK != 0 {
        return false;
    }
    if n >= super::gemm::QUANT_GEMM_MIN_N {
        return matmul_int8(par, dst, a, b, ep);
    }
    let (r2, r3) = (b.ne[2] / a.ne[2].max(1), b.ne[3] / a.ne[3].max(1));
    let batches = dst.ne[2] * dst.ne[3];
    // A 2-D weight multiplies every batch of `b` as one run of rows (one quantization, one
    // cut over threads); a batched weight one batch at a time.
    let (runs, per_run) = if a.ne[2] == 1 && a.ne[3] == 1 {
        (batches.min(1), n * batches)
    } else {
        (batches, n)
    };
    let mut xq = QuantRows::default();
    for run in 0..runs {
        let (i2, i3) = (run % dst.ne[2], run / dst.ne[2]);
        let ab = (i2 / r2.max(1), i3 / r3.max(1));
        let rows = Batches {
            n,
            ne2: dst.ne[2],
            first: run,
        };
        let out = DstRows { v: dst, rows };
        quantize_rows(par, b, rows, per_run, k, &mut xq, Encoding::RowDots);
        // Weight rows cut over threads in whole `M_BLOCK`s: each output is the same dot
        // whatever the cut.
        let min_rows = super::gemm::MIN_PAR_MACS.div_ceil((per_run * k).max(1));
        par.for_ranges(m, min_rows, M_BLOCK, |r| {
            for m0 in r.clone().step_by(M_BLOCK) {
                let ms = m0..r.end.min(m0 + M_BLOCK);
                // In range: weight rows of `a`'s batch, activation rows `0 .. per_run`.
                unsafe { dot_block(&out, a, ab, ms.clone(), &xq, per_run, q4, dot) };
                if let Some(ep) = ep {
                    ep.apply_rows(&out, ms, 0..per_run);
                }
            }
        });
    }
    true
}

/// Weight rows per group: one i8x16 holds 4 values of each, so a dot instruction with one
/// activation slice (4 values, repeated) yields 4 rows' partial dots in its 4 lanes.
const GROUP: usize = 4;
/// Bytes of one group's block of Q8_0 values: 4 rows × 32 values.
const GROUP_BLOCK: usize = GROUP * QK;
/// Bytes of one group's block of Q4_0 nibbles: 4 rows × 32 values / 2.
const GROUP_BLOCK_Q4: usize = GROUP * QK / 2;
/// Bytes of one group's block of Q5_0 values: Q4_0's nibbles, then a 16-byte plane of the
/// values' fifth bits (see [`Int8Panels`]).
const GROUP_BLOCK_Q5: usize = GROUP_BLOCK_Q4 + High::Fifth.bytes();
/// Bytes of one group's block of Q6_K values: Q4_0's nibbles, then two 16-byte planes of
/// their bits 4–5 (see [`High`]).
const GROUP_BLOCK_Q6: usize = GROUP_BLOCK_Q4 + High::Crumbs.bytes();
/// Bytes of one group's block of K-quant integer scales: two per row (see [`Int8Panels`]).
const GROUP_KSCALES: usize = 2 * GROUP;
/// Activation rows per block of the int8 GEMM's column loop (their quantized values,
/// `k` bytes each, stay in cache while every weight group passes over them).
const COL_BLOCK: usize = 64;

/// Q8_0 / Q4_0 weights rearranged for the integer matmuls (the GEMM for batches and the
/// matrix-vector product of a decode step): rows in groups of 4 (the last one padded with
/// zero rows), so that one dot instruction with an activation slice (4 values, repeated)
/// yields the 4 rows' partial dots in its 4 lanes, and one multiply-add by the 4 rows' block
/// scales finishes a block for all of them. Three arrays, one after the other:
///
/// - values, in 16-byte slices of 4 rows × 4 values (the bytes of each row's 4 as
///   [`slot`] places them for this build's dot). Q8_0: `[group][block][slice]` i8, slice `s`
///   holding values `32b + 4s .. 32b + 4s + 4` of the group's 4 rows. Q4_0: `[group][block]
///   [vector]` nibble bytes, vector `v`'s low nibbles holding values `4v .. 4v + 4` of the 4
///   rows, its high nibbles values `16 + 4v ..`: each row's 4-byte run of its GGUF block, so
///   packing is a byte shuffle. Q5_0: the values plus 16 (0..=31), their low 4 bits as
///   Q4_0's nibbles, then a 16-byte plane of their fifth bits, its byte at `slot(r, j)` the
///   bits of row `r`'s values `4v + j` (bit `v`) and `16 + 4v + j` (bit `4 + v`), `v` in
///   0..4: a row's byte its own (packing writes whole bytes), two shifts and masks a vector.
///   Q4_0's and Q5_0's values stay non-negative and 7-bit (relaxed SIMD's dot takes them as
///   its 7-bit operand, with full-range activations from [`encode_act_plain_sums`]); their bias
///   (8, 16) is `-bias ·` the activation block's sum, which starts the accumulator.
/// - Q8_0 only: per `[group][block][row]` an i32, `-ACT_OFFSET ·` the row's block sum,
///   which starts that block's integer accumulator (undoing the activation encoding's
///   offset for free). Q5_1 (Q5_0's values, not biased) keeps there its blocks' minus mins
///   (f32), multiplied by each activation block's `-dx · Σx` after the dots.
/// - per `[group][block][row]` the f32 scale; K-quants: per `[group][super-block]` the 4
///   rows' f32 `d` (Q4_K: then their `dmin`).
/// - K-quants only: per `[group][block]` 8 bytes, the 4 rows' integer scales of the block's
///   values `0 .. 16` then `16 .. 32` (Q3_K, Q6_K, i8), or their scale then their min (Q4_K,
///   Q5_K, 0..=63).
///
/// Q4_K's values (0..=15) and Q3_K's (0..=7, the weight's plus 4) are held as Q4_0's
/// nibbles, Q5_K's (0..=31) as Q5_0's (nibbles and a plane of fifth bits, [`High::Fifth`]),
/// Q6_K's (0..=63, the weight's plus 32) as nibbles and two planes of their bits 4–5
/// ([`High::Crumbs`]): so a K-quant block of 32 values is dotted as Q4_0's and Q5_0's are,
/// and finished with its integer scales (Q6_K's and Q3_K's offsets are `-32 ·` and `-4 ·` the
/// activation sums of its halves, which start its two accumulators; Q4_K's and Q5_K's mins
/// multiply the activation block's sum).
///
/// Q4_1's values are held as Q4_0's nibbles with Q5_1's minus mins; IQ4_NL's nibbles (table
/// indices) as Q4_0's, with each block's sum of its table entries as Q8_0's sums: its dots
/// look the entries up (one swizzle a vector) and take them as Q8_0's i8s.
///
/// Q8_0 takes 1.25 bytes per weight (GGUF 1.06), Q5_1 0.875 (0.75), Q6_K 0.83 (0.82), Q5_0
/// 0.75 (0.69), Q4_1 0.75 (0.625), IQ4_NL 0.75 (0.56), Q5_K 0.72 (0.69), Q4_0 0.625 (0.56),
/// Q4_K 0.59 (0.56), Q3_K 0.59 (0.43). The layout loses nothing: [`Int8Panels::unpack_rows`] gives back the GGUF bytes. The memory is the panels'
/// own (made from a weight on first use), or a weights buffer's, where the weight is stored
/// in this layout from the start ([`Int8Panels::at`]).
pub struct Int8Panels {
    m: usize,
    k: usize,
    /// How the weight's values are held.
    kind: PanelKind,
    /// The three arrays (values at the start, 16-byte aligned); `_owned` holds them when they
    /// are not a buffer's.
    values: *mut u8,
    sums: *mut i32,
    scales: *mut f32,
    kscales: *mut u8,
    _owned: Option<Vec<u128>>,
}

// Panels are written only while they are being filled (by `new`, or by the loader's writes
// to their buffer, never during a compute call); kernels on the thread team only read them.
unsafe impl Send for Int8Panels {}
unsafe impl Sync for Int8Panels {}

impl Int8Panels {
    /// Bytes of the values, the Q8_0 block sums, the f32 scales and the K-quants' integer
    /// scales of `m × k` panels of `kind`.
    fn layout(kind: PanelKind, m: usize, k: usize) -> [usize; 4] {
        let groups = m.div_ceil(GROUP);
        let blocks = groups * (k / QK);
        // Q8_0's and IQ4_NL's block sums, Q5_1's and Q4_1's minus mins.
        let sums = if matches!(kind, PanelKind::Q8 | PanelKind::IQ4NL) || kind.has_min() {
            blocks * GROUP * 4
        } else {
            0
        };
        let (scales, kscales) = match kind.d_per_row() {
            0 => (blocks * GROUP * 4, 0),
            n => (groups * (k / QK_K) * GROUP * n * 4, blocks * GROUP_KSCALES),
        };
        [blocks * kind.group_block(), sums, scales, kscales]
    }

    /// Bytes the panels of a weight of `dtype` and shape `ne` take; `None` when it has none
    /// (not a 2-D Q8_0/Q4_0 matrix of whole-block rows).
    pub fn size_for(dtype: DType, ne: &[usize]) -> Option<usize> {
        let kind = PanelKind::of(dtype)?;
        let (k, m) = (*ne.first()?, ne.get(1).copied().unwrap_or(1));
        if ne.iter().skip(2).any(|&d| d != 1) || k == 0 || !k.is_multiple_of(dtype.block_size()) {
            return None;
        }
        Some(Self::layout(kind, m, k).iter().sum())
    }

    /// Packs batch `(a2, a3)` of `a` (Q8_0 or Q4_0 with packed rows) into panels of their
    /// own; `None` otherwise.
    pub fn new(a: &TensorView, a2: usize, a3: usize) -> Option<Self> {
        let kind = PanelKind::of(a.dtype)?;
        if !a.rows_contiguous()
            || !a.ne[0].is_multiple_of(a.dtype.block_size())
            || a2 >= a.ne[2]
            || a3 >= a.ne[3]
        {
            return None;
        }
        let (m, k) = (a.ne[1], a.ne[0]);
        let bytes: usize = Self::layout(kind, m, k).iter().sum();
        let mut owned = vec![0u128; bytes.div_ceil(16)];
        let base = owned.as_mut_ptr() as *mut u8;
        // `base` holds the layout's bytes (just allocated).
        let p = unsafe { Self::over(base, kind, m, k, Some(owned)) };
        let row_bytes = p.row_bytes();
        for row in 0..m {
            // In range: `a`'s rows hold `row_bytes` each.
            let w = a.ptr_at([0, row, a2, a3]) as *const u8;
            unsafe { p.pack_row(row, std::slice::from_raw_parts(w, row_bytes)) };
        }
        Some(p)
    }

    /// Panels of a weight of `dtype` and shape `ne` in the memory at `base`, where its rows
    /// are packed in by [`Int8Panels::pack_rows`] (rows never packed read as zeros).
    ///
    /// # Safety
    /// `base` is 16-byte aligned, holds [`Int8Panels::size_for`] zeroed bytes, and outlives
    /// the panels.
    pub unsafe fn at(base: *mut u8, dtype: DType, ne: &[usize]) -> Option<Self> {
        Self::size_for(dtype, ne)?;
        let (m, kind) = (ne.get(1).copied().unwrap_or(1), PanelKind::of(dtype)?);
        Some(unsafe { Self::over(base, kind, m, ne[0], None) })
    }

    /// # Safety
    /// `base` is 16-byte aligned and holds [`Int8Panels::layout`]'s bytes.
    unsafe fn over(
        base: *mut u8,
        kind: PanelKind,
        m: usize,
        k: usize,
        owned: Option<Vec<u128>>,
    ) -> Self {
        let [v, s, f, _] = Self::layout(kind, m, k);
        Self {
            m,
            k,
            kind,
            values: base,
            sums: unsafe { base.add(v) } as *mut i32,
            scales: unsafe { base.add(v + s) } as *mut f32,
            kscales: unsafe { base.add(v + s + f) },
            _owned: owned,
        }
    }

    /// The weight's dtype.
    pub fn dtype(&self) -> DType {
        self.kind.dtype()
    }

    /// Bytes of one GGUF row.
    pub fn row_bytes(&self) -> usize {
        self.k / self.dtype().block_size() * self.dtype().block_bytes()
    }

    /// Packs whole GGUF rows (`bytes`) in as rows `row0 ..`.
    pub fn pack_rows(&self, row0: usize, bytes: &[u8]) -> Result<()> {
        let rb = self.row_bytes();
        if !bytes.len().is_multiple_of(rb) || row0 + bytes.len() / rb > self.m {
            return Err(Error::OutOfBounds(format!(
                "{} bytes at row {row0} of a {}-row {} weight are not whole rows of it",
                bytes.len(),
                self.m,
                self.dtype()
            )));
        }
        for (i, row) in bytes.chunks_exact(rb).enumerate() {
            unsafe { self.pack_row(row0 + i, row) };
        }
        Ok(())
    }

    /// # Safety
    /// `row < m`, `w` one GGUF row; nobody reads the panels meanwhile.
    unsafe fn pack_row(&self, row: usize, w: &[u8]) {
        if self.kind.is_k_quant() {
            return unsafe { self.pack_k_row(row, w) };
        }
        let (nb, g, r) = (self.k / QK, row / GROUP, row % GROUP);
        let block_bytes = self.dtype().block_bytes();
        for (b, blk) in w.chunks_exact(block_bytes).enumerate().take(nb) {
            let at = (g * nb + b) * GROUP + r;
            // Q5_0's values 0..=31 (the weight's plus 16), Q8_0's i8s and Q4_0's nibble bytes
            // as they are.
            let q5;
            let fifth = self.kind.high() == High::Fifth;
            let vals = match self.kind {
                PanelKind::Q5 => {
                    q5 = q5_0_values(blk);
                    &q5[..]
                }
                // Q5_1: Q5_0's values after its min.
                PanelKind::Q51 => {
                    q5 = q5_0_values(&blk[2..]);
                    &q5[..]
                }
                // Q4_1: Q4_0's nibble bytes after its min.
                PanelKind::Q41 => &blk[4..],
                _ => &blk[2..],
            };
            unsafe {
                *self.scales.add(at) = f16_at(blk.as_ptr());
                if self.kind == PanelKind::Q8 {
                    let sum: i32 = vals.iter().map(|&v| v as i8 as i32).sum();
                    *self.sums.add(at) = -(ACT_OFFSET as i32) * sum;
                }
                if self.kind == PanelKind::IQ4NL {
                    // The sum of the table entries the nibbles pick, as Q8_0's of its i8s.
                    let entry = |n: u8| IQ4_NL_VALUES[n as usize] as i32;
                    let sum: i32 = vals.iter().map(|&b| entry(b & 15) + entry(b >> 4)).sum();
                    *self.sums.add(at) = -(ACT_OFFSET as i32) * sum;
                }
                if self.kind.has_min() {
                    *self.neg_mins().add(at) = -f16_at(blk.as_ptr().add(2));
                }
                let base = self.values.add((g * nb + b) * self.kind.group_block());
                // Q8_0: slice `s` holds values `4s .. 4s + 4`; Q4_0 and Q5_0: vector `s` the
                // bytes `4s .. 4s + 4` of the block's nibbles, Q5_0's fifth bits in the plane.
                if fifth {
                    put_nibble_values(base, r, vals.try_into().unwrap_or(&[0; QK]), High::Fifth);
                } else {
                    for (s, four) in vals.chunks_exact(4).enumerate() {
                        put_slice_row(
                            std::slice::from_raw_parts_mut(base.add(s * 16), 16),
                            r,
                            four,
                        );
                    }
                }
            }
        }
    }

    /// [`Int8Panels::pack_row`] for the K-quants: each super-block decoded (values 0..=63,
    /// integer scales and mins, `d`, `dmin`), its values put as Q4_0's / Q5_0's are.
    ///
    /// # Safety
    /// As for [`Int8Panels::pack_row`].
    unsafe fn pack_k_row(&self, row: usize, w: &[u8]) {
        let (g, r) = (row / GROUP, row % GROUP);
        let dtype = self.dtype();
        let high = self.kind.high();
        let mut u = super::kquant::Unpacked::new();
        for (sb, blk) in w.chunks_exact(dtype.block_bytes()).enumerate() {
            super::kquant::decode(dtype, blk, &mut u);
            let (d, b0) = self.k_at(g, sb);
            unsafe {
                *d.add(r) = u.d;
                if self.kind.d_per_row() == 2 {
                    *d.add(GROUP + r) = u.dmin;
                }
                for i in 0..QK_K / QK {
                    let b = b0 + i;
                    let vals = u.q[i * QK..][..QK].try_into().unwrap_or(&[0; QK]);
                    put_nibble_values(self.values.add(b * self.kind.group_block()), r, vals, high);
                    // Q6_K, Q3_K: the scales of the block's halves; Q4_K, Q5_K: its scale and
                    // min.
                    let (a, z) = if self.kind.d_per_row() == 1 {
                        (u.sc[2 * i], u.sc[2 * i + 1])
                    } else {
                        (u.sc[2 * i], u.mn[2 * i])
                    };
                    let ks = self.kscales.add(b * GROUP_KSCALES);
                    *ks.add(r) = a as i8 as u8;
                    *ks.add(GROUP + r) = z as i8 as u8;
                }
            }
        }
    }

    /// Block `b` of row `row`: its scale and its 32 quantized values (Q4_0's minus 8, Q5_0's
    /// minus 16, IQ4_NL's table entries).
    fn block(&self, row: usize, b: usize) -> (f32, [i8; QK]) {
        let (nb, g, r) = (self.k / QK, row / GROUP, row % GROUP);
        let at = (g * nb + b) * GROUP + r;
        let mut q = [0i8; QK];
        unsafe {
            let base = self.values.add((g * nb + b) * self.kind.group_block());
            let bias = self.kind.bias();
            if self.kind == PanelKind::IQ4NL {
                for (o, v) in q.iter_mut().zip(nibble_values(base, r, High::None)) {
                    *o = IQ4_NL_VALUES[v as usize];
                }
            } else if self.kind != PanelKind::Q8 {
                for (o, v) in q.iter_mut().zip(nibble_values(base, r, self.kind.high())) {
                    *o = (v as i32 - bias) as i8;
                }
            } else {
                for s in 0..QK / 4 {
                    for j in 0..4 {
                        q[4 * s + j] = (*base.add(s * 16 + slot(r, j)) as i8 as i32 - bias) as i8;
                    }
                }
            }
            (*self.scales.add(at), q)
        }
    }

    /// Q5_1's and Q4_1's per-`[group][block][row]` minus mins, kept where Q8_0 keeps its
    /// block sums.
    fn neg_mins(&self) -> *mut f32 {
        debug_assert!(self.kind.has_min());
        self.sums as *mut f32
    }

    /// Block `b` of row `row`'s min (Q5_1's, Q4_1's); `None` for other kinds.
    fn block_min(&self, row: usize, b: usize) -> Option<f32> {
        self.kind.has_min().then(|| {
            let at = ((row / GROUP) * (self.k / QK) + b) * GROUP + row % GROUP;
            // In range: the block of a row of these panels.
            -unsafe { *self.neg_mins().add(at) }
        })
    }

    /// Rows `row0 ..` in their GGUF bytes (`out`: whole rows), exactly as packed.
    pub fn unpack_rows(&self, row0: usize, out: &mut [u8]) -> Result<()> {
        let rb = self.row_bytes();
        if !out.len().is_multiple_of(rb) || row0 + out.len() / rb > self.m {
            return Err(Error::OutOfBounds(format!(
                "{} bytes at row {row0} of a {}-row {} weight are not whole rows of it",
                out.len(),
                self.m,
                self.dtype()
            )));
        }
        for (i, row) in out.chunks_exact_mut(rb).enumerate() {
            for (b, blk) in row.chunks_exact_mut(self.dtype().block_bytes()).enumerate() {
                if self.kind.is_k_quant() {
                    super::kquant::encode(self.dtype(), &self.k_superblock(row0 + i, b), blk);
                    continue;
                }
                let (d, q) = self.block(row0 + i, b);
                // The scale (and Q5_1's and Q4_1's min) came from an f16: converting back is
                // exact.
                blk[..2].copy_from_slice(&half::f16::from_f32(d).to_le_bytes());
                if let Some(m) = self.block_min(row0 + i, b) {
                    blk[2..4].copy_from_slice(&half::f16::from_f32(m).to_le_bytes());
                }
                match self.kind {
                    PanelKind::Q4 => {
                        for j in 0..QK / 2 {
                            blk[2 + j] = ((q[j] + 8) as u8) | (((q[QK / 2 + j] + 8) as u8) << 4);
                        }
                    }
                    PanelKind::Q5 => set_q5_0_values(blk, &q.map(|v| (v + 16) as u8)),
                    PanelKind::Q51 => set_q5_0_values(&mut blk[2..], &q.map(|v| v as u8)),
                    PanelKind::Q41 => {
                        for j in 0..QK / 2 {
                            blk[4 + j] = (q[j] as u8) | ((q[QK / 2 + j] as u8) << 4);
                        }
                    }
                    PanelKind::IQ4NL => {
                        // Each entry's index (the table's entries differ).
                        let index =
                            |v: i8| IQ4_NL_VALUES.iter().position(|&e| e == v).unwrap_or(0) as u8;
                        for j in 0..QK / 2 {
                            blk[2 + j] = index(q[j]) | (index(q[QK / 2 + j]) << 4);
                        }
                    }
                    PanelKind::Q8 => {
                        for (o, &v) in blk[2..].iter_mut().zip(&q) {
                            *o = v as u8;
                        }
                    }
                    PanelKind::Q3K | PanelKind::Q4K | PanelKind::Q5K | PanelKind::Q6K => {}
                }
            }
        }
        Ok(())
    }

    /// Where group `g`'s super-block `sb` keeps its rows' `d` (then Q4_K's `dmin`), and the
    /// index of its first block (of 8): K-quant panels only.
    fn k_at(&self, g: usize, sb: usize) -> (*mut f32, usize) {
        let at = g * (self.k / QK_K) + sb;
        debug_assert!(self.kind.is_k_quant() && at < self.m.div_ceil(GROUP) * (self.k / QK_K));
        // In range: super-block `at` of the `d` array.
        let d = unsafe { self.scales.add(at * GROUP * self.kind.d_per_row()) };
        (d, at * (QK_K / QK))
    }

    /// Super-block `sb` of K-quant row `row` in the common form (`kquant::decode`'s).
    fn k_superblock(&self, row: usize, sb: usize) -> super::kquant::Unpacked {
        let (g, r) = (row / GROUP, row % GROUP);
        let high = self.kind.high();
        let mut u = super::kquant::Unpacked::new();
        let (d, b0) = self.k_at(g, sb);
        // In range: group `g`'s blocks of super-block `sb`, and its `d`s.
        unsafe {
            u.d = *d.add(r);
            u.dmin = if self.kind.d_per_row() == 2 {
                *d.add(GROUP + r)
            } else {
                u.d
            };
            for i in 0..QK_K / QK {
                let b = b0 + i;
                let vals = nibble_values(self.values.add(b * self.kind.group_block()), r, high);
                u.q[i * QK..][..QK].copy_from_slice(&vals);
                let ks = self.kscales.add(b * GROUP_KSCALES);
                let (a, z) = (*ks.add(r) as i8 as i32, *ks.add(GROUP + r) as i8 as i32);
                if self.kind.d_per_row() == 1 {
                    let off = kind_offset(self.kind as u8);
                    (u.sc[2 * i], u.sc[2 * i + 1]) = (a, z);
                    (u.mn[2 * i], u.mn[2 * i + 1]) = (off * a, off * z);
                } else {
                    (u.sc[2 * i], u.sc[2 * i + 1]) = (a, a);
                    (u.mn[2 * i], u.mn[2 * i + 1]) = (z, z);
                }
            }
        }
        u
    }

    /// Row `row` (`< m`) dequantized into `out` (`k` values), as GGUF's dequantization does.
    pub fn row_f32(&self, row: usize, out: &mut [f32]) {
        if self.kind.is_k_quant() {
            for (sb, o) in out.chunks_exact_mut(QK_K).enumerate().take(self.k / QK_K) {
                let u = self.k_superblock(row, sb);
                // ggml's order: `(d · sc) · q - dmin · m`, Q6_K's `(d · sc) · (q - 32)`,
                // Q3_K's `(d · sc) · (q - 4)`.
                let off = kind_offset(self.kind as u8);
                for (t, o) in o.iter_mut().enumerate() {
                    let (sc, q) = (u.sc[t / 16] as f32, u.q[t] as i32);
                    *o = if self.kind.d_per_row() == 1 {
                        u.d * sc * (q - off) as f32
                    } else {
                        u.d * sc * q as f32 - u.dmin * u.mn[t / 16] as f32
                    };
                }
            }
            return;
        }
        for (b, o) in out.chunks_exact_mut(QK).enumerate().take(self.k / QK) {
            let (d, q) = self.block(row, b);
            // Q5_1, Q4_1: `q · d + m`, as ggml's order.
            let m = self.block_min(row, b);
            for (o, &v) in o.iter_mut().zip(&q) {
                *o = match m {
                    Some(m) => v as f32 * d + m,
                    None => v as f32 * d,
                };
            }
        }
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.m
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        Self::layout(self.kind, self.m, self.k).iter().sum()
    }

    /// Whether these are the panels of a weight shaped like `a`.
    pub fn fits(&self, a: &TensorView) -> bool {
        (self.m, self.k) == (a.ne[1], a.ne[0])
    }

    /// Where group `g`'s values start (its blocks one after the other).
    fn group_values(&self, g: usize) -> *const u8 {
        debug_assert!(g < self.m.div_ceil(GROUP));
        // In range: group `g` of the values array.
        unsafe { self.values.add(g * (self.k / QK) * self.kind.group_block()) }
    }

    /// Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q3_K, Q5_K or Q6_K panels' group `g` with each
    /// block's values as bytes (up to 63; IQ4_NL's table entries, i8) in Q8_0's layout
    /// (16-byte slices, slice `s` values `4s .. 4s + 4`), into `out` (`k / 32 · 128` bytes):
    /// each vector's nibbles with their higher bits, as [`int8_tile`]'s byte dots take them.
    fn value_bytes(&self, g: usize, out: &mut [u8]) {
        debug_assert!(matches!(
            self.kind,
            PanelKind::Q4
                | PanelKind::Q41
                | PanelKind::IQ4NL
                | PanelKind::Q5
                | PanelKind::Q51
                | PanelKind::Q3K
                | PanelKind::Q5K
                | PanelKind::Q6K
        ));
        let (w, high) = (self.group_values(g), self.kind.high());
        let bb = self.kind.group_block();
        for (b, blk) in out
            .chunks_exact_mut(GROUP_BLOCK)
            .enumerate()
            .take(self.k / QK)
        {
            // In range: block `b` of group `g` (`bb` bytes), and 8 slices of `blk`.
            unsafe {
                let w = w.add(b * bb);
                // Q5_0's one plane twice, Q4_0's none (nothing past the block is read).
                let second = if high == High::Crumbs { 16 } else { 0 };
                let planes = match high {
                    High::None => [U8x16::load(w); 2],
                    _ => [0, second].map(|o| U8x16::load(w.add(GROUP_BLOCK_Q4 + o))),
                };
                for v in 0..4 {
                    let raw = U8x16::load(w.add(v * 16));
                    let (lo, hi) = nibble_halves(raw, high, planes, v);
                    if self.kind == PanelKind::IQ4NL {
                        let table = I8x16::load(IQ4_NL_VALUES.as_ptr());
                        lo.lookup(table)
                            .store(blk.as_mut_ptr().add(v * 16) as *mut i8);
                        hi.lookup(table)
                            .store(blk.as_mut_ptr().add((4 + v) * 16) as *mut i8);
                    } else {
                        lo.store(blk.as_mut_ptr().add(v * 16));
                        hi.store(blk.as_mut_ptr().add((4 + v) * 16));
                    }
                }
            }
        }
    }

    /// How the activations are encoded for these panels: offset into the 7-bit operand (the
    /// offset undone by the weights' block sums) for the full-range i8 values (Q8_0's,
    /// IQ4_NL's table entries); plainly
    /// (see [`QuantRows`]) for the non-negative values (Q4_0's, Q4_1's and Q4_K's nibbles,
    /// Q3_K's 0..=7, Q5_0's, Q5_1's and Q5_K's 0..=31, Q6_K's 0..=63), which are relaxed
    /// SIMD's 7-bit operand, with the sums of each block's halves for the K-quants (their
    /// scales are per 16 values, their offsets from the sums) and Q5_1 and Q4_1 (their mins,
    /// from each block's sum).
    fn encoding(&self) -> Encoding {
        match self.kind {
            // IQ4_NL's table entries are full-range i8, as Q8_0's values.
            PanelKind::Q8 | PanelKind::IQ4NL => Encoding::Panels,
            PanelKind::Q5 | PanelKind::Q4 => Encoding::PanelsBiased {
                bias: self.kind.bias(),
            },
            // Q5_1, Q4_1: their mins times each block's `dx · Σx`.
            PanelKind::Q51
            | PanelKind::Q41
            | PanelKind::Q3K
            | PanelKind::Q4K
            | PanelKind::Q5K
            | PanelKind::Q6K => Encoding::PanelsHalves,
        }
    }
}

/// How a dtype's values are held in [`Int8Panels`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum PanelKind {
    /// Q8_0: the i8 values as they are, with each row's block sums (the activation offset).
    Q8 = KIND_Q8,
    /// Q5_0: the values plus 16 (0..=31), as Q4_0's nibbles and a plane of fifth bits.
    Q5 = KIND_Q5,
    /// Q4_0: the nibble bytes as they are (the values plus 8).
    Q4 = KIND_Q4,
    /// Q4_K: the values (0..=15) as Q4_0's nibbles, integer scales and mins per block, `d`
    /// and `dmin` per super-block.
    Q4K = KIND_Q4K,
    /// Q6_K: the values plus 32 (0..=63) as nibbles and two planes of bits 4–5, integer
    /// scales per 16 values, `d` per super-block.
    Q6K = KIND_Q6K,
    /// Q5_K: the values (0..=31) as Q5_0's (nibbles and a plane of fifth bits), with
    /// Q4_K's scales and mins.
    Q5K = KIND_Q5K,
    /// Q3_K: the values plus 4 (0..=7) as nibbles, with Q6_K's scales (offset 4).
    Q3K = KIND_Q3K,
    /// Q5_1: the values (0..=31) as Q5_0's, with an f32 scale and minus min per block.
    Q51 = KIND_Q51,
    /// Q4_1: the values (0..=15) as Q4_0's nibbles, with an f32 scale and minus min per
    /// block.
    Q41 = KIND_Q41,
    /// IQ4_NL: the nibbles (table indices) as Q4_0's, each block's sum of its table entries
    /// as Q8_0's sums; the dots look the entries up (one swizzle a vector).
    IQ4NL = KIND_IQ4NL,
}

impl PanelKind {
    /// The panels' kind for `dtype`; `None` when it has none.
    pub fn of(dtype: DType) -> Option<Self> {
        match dtype {
            DType::Q8_0 => Some(Self::Q8),
            DType::Q5_0 => Some(Self::Q5),
            DType::Q4_0 => Some(Self::Q4),
            DType::Q4_K => Some(Self::Q4K),
            DType::Q3_K => Some(Self::Q3K),
            DType::Q5_K => Some(Self::Q5K),
            DType::Q6_K => Some(Self::Q6K),
            DType::Q5_1 => Some(Self::Q51),
            DType::Q4_1 => Some(Self::Q41),
            DType::IQ4_NL => Some(Self::IQ4NL),
            DType::F32 | DType::F16 | DType::I32 | DType::Q2_K => None,
        }
    }

    /// The weight's dtype.
    pub fn dtype(self) -> DType {
        match self {
            Self::Q8 => DType::Q8_0,
            Self::Q5 => DType::Q5_0,
            Self::Q4 => DType::Q4_0,
            Self::Q4K => DType::Q4_K,
            Self::Q3K => DType::Q3_K,
            Self::Q51 => DType::Q5_1,
            Self::Q41 => DType::Q4_1,
            Self::IQ4NL => DType::IQ4_NL,
            Self::Q5K => DType::Q5_K,
            Self::Q6K => DType::Q6_K,
        }
    }

    /// What the stored values exceed the weight's by (the K-quants' per block: none).
    fn bias(self) -> i32 {
        kind_bias(self as u8)
    }

    /// Whether each block has a min (Q5_1, Q4_1), kept in the sums' place.
    fn has_min(self) -> bool {
        kind_has_min(self as u8)
    }

    /// Whether these are a K-quant's panels (integer scales, `d` per super-block).
    fn is_k_quant(self) -> bool {
        self.d_per_row() != 0
    }

    /// The f32 scales per row and super-block of the K-quants (`d`, Q4_K's `dmin`); 0 for
    /// the others (an f32 scale per row and block).
    fn d_per_row(self) -> usize {
        kind_d_per_row(self as u8)
    }

    /// How the values keep their bits above the nibbles (Q8_0: as bytes, `None`).
    fn high(self) -> High {
        kind_high(self as u8)
    }

    /// Bytes of one group's block of values.
    fn group_block(self) -> usize {
        block_bytes(self as u8)
    }
}

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
unsafe fn int8_tile<const K: u8, const G: usize, const C: usize, const N: bool>(
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
unsafe fn store_tile<const G: usize, const C: usize>(
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
unsafe fn nibble_dots<const G: usize, const C: usize, const N: bool, const SPLIT: bool>(
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
unsafe fn ktile<const K: u8, const G: usize, const C: usize, const N: bool>(
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
fn rolled(n: usize, roll: bool) -> usize {
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
const fn rolls(k: u8, c: usize, narrow: bool) -> bool {
    c > 1
        && (!narrow
            || matches!(
                k,
                KIND_Q4_BYTES | KIND_Q41_BYTES | KIND_Q8 | KIND_Q6K_BYTES | KIND_Q3K_BYTES
            ))
}

/// How a panel block's values keep their bits above the nibbles (after the nibbles).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum High {
    /// Nowhere: values 0..=15 (Q4_0, Q4_K; 64 bytes a block).
    None,
    /// Q5_0's fifth bits: a 16-byte plane, its byte at `slot(r, j)` the fifth bits of row
    /// `r`'s values `4v + j` (bit `v`) and `16 + 4v + j` (bit `4 + v`), `v` in 0..4.
    Fifth,
    /// Q6_K's bits 4–5: two 16-byte planes, for the values `4v + j`, then `16 + 4v + j`,
    /// their byte at `slot(r, j)` holding the two bits of the value of vector `v` at bit `2v`.
    Crumbs,
}

impl High {
    /// Bits a value keeps above its nibble (one 16-byte plane each).
    const fn width(self) -> u32 {
        match self {
            Self::None => 0,
            Self::Fifth => 1,
            Self::Crumbs => 2,
        }
    }

    /// Bytes of the planes.
    const fn bytes(self) -> usize {
        16 * self.width() as usize
    }

    /// Where row `r`'s value `i` (0..32) of a block has its high bits: the plane's byte
    /// (after the nibbles), the bit there, the value's bit it is first.
    fn at(self, r: usize, i: usize) -> (usize, u32, u32) {
        let (half, v, j) = (i / 16, (i % 16 / 4) as u32, slot(r, i % 4));
        match self {
            Self::None => (0, 0, 4),
            Self::Fifth => (j, v + 4 * half as u32, 4),
            Self::Crumbs => (16 * half + j, 2 * v, 4),
        }
    }
}

/// Vector `v` of a block of nibbles (`raw`): the values `4v ..` (low nibbles) and
/// `16 + 4v ..` (high), with their bits above the nibbles from `planes` as `high` says
/// (Q5_0's plane, or Q6_K's two; none: `planes` unread). Two shifts and masks a plane.
#[inline(always)]
fn nibble_halves(raw: U8x16, high: High, planes: [U8x16; 2], v: usize) -> (U8x16, U8x16) {
    let (lo, hi) = (raw.bits(0, 0x0f), raw.bits(4, 0x0f));
    let v = v as u32;
    match high {
        High::None => (lo, hi),
        High::Fifth => (
            lo.or(move_bits(planes[0], v, 4, 1)),
            hi.or(move_bits(planes[0], 4 + v, 4, 1)),
        ),
        High::Crumbs => (
            lo.or(move_bits(planes[0], 2 * v, 4, 2)),
            hi.or(move_bits(planes[1], 2 * v, 4, 2)),
        ),
    }
}

/// Bits `from .. from + width` of each byte of `x` moved to `to ..`, the others cleared.
#[inline(always)]
fn move_bits(x: U8x16, from: u32, to: u32, width: u32) -> U8x16 {
    let mask = (((1u32 << width) - 1) << to) as u8;
    if from >= to {
        x.bits(from - to, mask)
    } else {
        x.shl_bits(to - from, mask)
    }
}

/// Puts row `r`'s 32 values of a block (`vals`) into a group's block at `base`: their low 4
/// bits as Q4_0's nibbles (vector `v`: values `4v + j` low, `16 + 4v + j` high, at
/// `slot(r, j)`), then their higher bits as `high` says: a row's bytes are its own.
///
/// # Safety
/// `base` writable for `64 + high.bytes()` bytes, its planes zero where row `r`'s go.
unsafe fn put_nibble_values(base: *mut u8, r: usize, vals: &[u8; QK], high: High) {
    let nibbles: [u8; QK / 2] =
        std::array::from_fn(|j| vals[j] & 0x0f | (vals[QK / 2 + j] & 0x0f) << 4);
    for (v, four) in nibbles.chunks_exact(4).enumerate() {
        // In range: vector `v` of the block.
        put_slice_row(
            unsafe { std::slice::from_raw_parts_mut(base.add(v * 16), 16) },
            r,
            four,
        );
    }
    if high != High::None {
        for i in 0..QK {
            // In range: a byte of the block's planes, row `r`'s alone.
            unsafe { *base.add(GROUP_BLOCK_Q4 + high.at(r, i).0) = 0 };
        }
        for (i, &x) in vals.iter().enumerate() {
            let (byte, bit, first) = high.at(r, i);
            // In range: a byte of the block's planes.
            unsafe { *base.add(GROUP_BLOCK_Q4 + byte) |= (x >> first) << bit };
        }
    }
}

/// Row `r`'s 32 values of a group's block at `base`, as [`put_nibble_values`] put them.
///
/// # Safety
/// `base` readable for `64 + high.bytes()` bytes.
unsafe fn nibble_values(base: *const u8, r: usize, high: High) -> [u8; QK] {
    let width = high.width();
    std::array::from_fn(|i| {
        let (v, j) = (i % 16 / 4, slot(r, i % 4));
        // In range: vector `v` and the planes of the block.
        let byte = unsafe { *base.add(v * 16 + j) };
        let nibble = if i < 16 { byte & 0x0f } else { byte >> 4 };
        let (at, bit, first) = high.at(r, i);
        let plane = if width == 0 {
            0
        } else {
            unsafe { *base.add(GROUP_BLOCK_Q4 + at) }
        };
        nibble | (plane >> bit & ((1 << width) - 1)) << first
    })
}

/// The integer dots of one block of Q8_0-layout panels (16-byte slices of 4 rows × 4
/// values), over its slices `slices`: groups' blocks `w` × activation slices `x`, each
/// weight slice loaded (`load`) once for the tile's columns and dotted (`dot`) into `acc`.
///
/// # Safety
/// Each `w[g]` holds a block's slices; each `x[c]` an activation block's.
#[inline(always)]
unsafe fn int8_slices<W: Copy, A: Copy, const G: usize, const C: usize>(
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
unsafe fn int8_tiles<const K: u8, const G: usize, const N: bool>(
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

/// Which kernels quantized activations are for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// The row dots of weights read as they are ([`encode_act`], no slices).
    RowDots,
    /// Q8_0 panels ([`encode_act`], and the slices the panels' dots read).
    Panels,
    /// Q4_0 / Q5_0 panels, whose values exceed the weights' by `bias`
    /// ([`encode_act_plain_sums`], each block's integer dots' start, `-bias ·` its sum, four
    /// times, [`quantize_q8_biased`]; and the slices).
    PanelsBiased { bias: i32 },
    /// K-quant panels ([`encode_act_plain_sums`] with the sums of each block's halves and two
    /// floats a block, [`quantize_q8_halves`]; and the slices).
    PanelsHalves,
}

/// Quantizes flat activation rows `0 .. count` of `b` (see [`Batches`]) to Q8_0 as `enc`
/// says.
fn quantize_rows(
    par: Par,
    b: &TensorView,
    rows: Batches,
    count: usize,
    k: usize,
    xq: &mut QuantRows,
    enc: Encoding,
) {
    let nb = k / QK;
    let layout = if enc == Encoding::RowDots {
        Layout::Rows
    } else {
        Layout::Records
    };
    match enc {
        Encoding::PanelsHalves => {
            let per_row = [2 * nb, 2 * nb];
            xq.quantize(par, b, rows, count, k, per_row, layout, quantize_q8_halves);
        }
        Encoding::PanelsBiased { bias } => {
            xq.quantize(
                par,
                b,
                rows,
                count,
                k,
                [nb, STARTS_PER_BLOCK * nb],
                layout,
                |x, d, q, s| quantize_q8_biased(x, d, q, s, bias),
            );
        }
        Encoding::Panels | Encoding::RowDots => {
            xq.quantize(par, b, rows, count, k, [nb, 0], layout, |x, d, q, _| {
                quantize_q8(x, d, q)
            });
        }
    }
}

/// `i32`s of a block's dot start in [`Encoding::PanelsBiased`]'s `s`: one vector, the tile's
/// accumulators' first value.
const STARTS_PER_BLOCK: usize = 4;

/// [`quantize_q8`] by [`encode_act_plain_sums`], with each block's `-bias ·` sum four times in
/// `s`: where the integer dots with weights stored `bias` higher start (one vector load a
/// block and activation row; computing it in the tiles took five instructions).
#[inline(never)]
fn quantize_q8_biased(x: &[f32], d: &mut [f32], q: &mut [i8], s: &mut [i32], bias: i32) {
    for (((blk, db), qb), sb) in x
        .chunks_exact(QK)
        .zip(d.iter_mut())
        .zip(q.chunks_exact_mut(QK))
        .zip(s.chunks_exact_mut(STARTS_PER_BLOCK))
    {
        let (dx, [lo, hi]) = encode_act_plain_sums(blk, qb);
        *db = dx;
        sb.fill(-bias * (lo + hi));
    }
}

/// [`quantize_q8_plain`] for the K-quant panels: the sums of each block's halves in `s` (two
/// a block), and two floats a block in `d`: the scale `dx`, then `-dx · Σx`, the block's term
/// of a Q4_K row's mins (computed here once per activation row, not in every tile).
#[inline(never)]
fn quantize_q8_halves(x: &[f32], d: &mut [f32], q: &mut [i8], s: &mut [i32]) {
    for (((blk, db), qb), sb) in x
        .chunks_exact(QK)
        .zip(d.chunks_exact_mut(2))
        .zip(q.chunks_exact_mut(QK))
        .zip(s.chunks_exact_mut(2))
    {
        let (dx, halves) = encode_act_plain_sums(blk, qb);
        sb.copy_from_slice(&halves);
        db[0] = dx;
        db[1] = -dx * (sb[0] + sb[1]) as f32;
    }
}

/// `dst = p · bᵀ` for flat rows `0 .. n` (see [`Batches`]) with the activations already
/// quantized in `xq`: weight groups cut over threads in pairs (each output is the same
/// arithmetic whatever the cut, so results do not depend on the thread count).
fn int8_gemm(
    par: Par,
    out: &DstRows,
    p: &Int8Panels,
    xq: &QuantRows,
    n: usize,
    ep: Option<&Epilogue>,
    narrow: bool,
) {
    let groups = p.m.div_ceil(GROUP);
    let min_groups = super::gemm::MIN_PAR_MACS.div_ceil((n * p.k * GROUP).max(1));
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

/// Weight groups per call of [`int8_block`]: a run long enough that a call's overhead is
/// nothing (2 K multiply-adds per activation row and k), short enough that a matmul makes
/// many calls.
const GROUP_RUN: usize = 16;

/// [`PanelKind`]s (their discriminants) as const generic arguments: each kind's kernels are
/// functions of their own (see [`int8_block`]).
const KIND_Q8: u8 = 0;
const KIND_Q5: u8 = 1;
const KIND_Q4: u8 = 2;
/// Q5_0 panels' values as bytes, Q8_0's layout (see [`int8_tiled`]).
const KIND_Q5_BYTES: u8 = 3;
const KIND_Q4K: u8 = 4;
const KIND_Q6K: u8 = 5;
/// Q6_K panels' values as bytes, Q8_0's layout (see [`int8_tiled`]).
const KIND_Q6K_BYTES: u8 = 6;
/// Q4_0 panels' values as bytes, Q8_0's layout, for the GEMM (see [`int8_tiled`]).
const KIND_Q4_BYTES: u8 = 7;
const KIND_Q5K: u8 = 8;
/// Q5_K panels' values as bytes, Q8_0's layout (see [`int8_tiled`]).
const KIND_Q5K_BYTES: u8 = 9;
const KIND_Q3K: u8 = 10;
/// Q3_K panels' values as bytes, Q8_0's layout (see [`int8_tiled`]).
const KIND_Q3K_BYTES: u8 = 11;
const KIND_Q51: u8 = 12;
/// Q5_1 panels' values as bytes, Q8_0's layout (see [`int8_tiled`]).
const KIND_Q51_BYTES: u8 = 13;
const KIND_Q41: u8 = 14;
/// Q4_1 panels' values as bytes, Q8_0's layout (see [`int8_tiled`]).
const KIND_Q41_BYTES: u8 = 15;
/// (IQ4_NL's table entries as bytes are Q8_0's i8s with its sums: the GEMM runs `KIND_Q8`.)
const KIND_IQ4NL: u8 = 16;

// The per-kind properties are `const fn`s of the kind byte, so a kernel's const generic
// argument folds them to constants and `PanelKind`'s methods read the same table.

/// [`PanelKind::bias`] of kind `k` (Q5_0's as bytes too).
const fn kind_bias(k: u8) -> i32 {
    match k {
        KIND_Q5 | KIND_Q5_BYTES => 16,
        KIND_Q4 | KIND_Q4_BYTES => 8,
        _ => 0,
    }
}

/// [`PanelKind::has_min`] of kind `k` (as bytes too).
const fn kind_has_min(k: u8) -> bool {
    matches!(k, KIND_Q51 | KIND_Q51_BYTES | KIND_Q41 | KIND_Q41_BYTES)
}

/// The kind whose tiles read kind `k`'s values as bytes in the GEMM ([`int8_tiled`]); `k`
/// itself where its tiles read the panels as they are (Q8_0's bytes, Q4_K's nibbles).
const fn bytes_kind(k: u8) -> u8 {
    match k {
        KIND_Q5 => KIND_Q5_BYTES,
        KIND_Q51 => KIND_Q51_BYTES,
        KIND_Q4 => KIND_Q4_BYTES,
        KIND_Q41 => KIND_Q41_BYTES,
        KIND_IQ4NL => KIND_Q8,
        KIND_Q6K => KIND_Q6K_BYTES,
        KIND_Q5K => KIND_Q5K_BYTES,
        KIND_Q3K => KIND_Q3K_BYTES,
        _ => k,
    }
}

/// [`PanelKind::d_per_row`] of kind `k` (Q6_K's as bytes too): not 0 for the K-quants.
const fn kind_d_per_row(k: u8) -> usize {
    match k {
        KIND_Q4K | KIND_Q5K | KIND_Q5K_BYTES => 2,
        KIND_Q3K | KIND_Q3K_BYTES | KIND_Q6K | KIND_Q6K_BYTES => 1,
        _ => 0,
    }
}

/// What the K-quants with a scale per half (Q3_K, Q6_K) store their values above the
/// weight's by: `offset ·` each activation half's sum starts its accumulator.
const fn kind_offset(k: u8) -> i32 {
    match k {
        KIND_Q6K | KIND_Q6K_BYTES => 32,
        KIND_Q3K | KIND_Q3K_BYTES => 4,
        _ => 0,
    }
}

/// [`PanelKind::high`] of kind `k`.
const fn kind_high(k: u8) -> High {
    match k {
        KIND_Q5 | KIND_Q5K | KIND_Q51 => High::Fifth,
        KIND_Q6K => High::Crumbs,
        _ => High::None,
    }
}

/// Bytes of one group's block of values as the kernels of kind `K` read them.
const fn block_bytes(k: u8) -> usize {
    match k {
        KIND_Q4 | KIND_Q41 | KIND_IQ4NL | KIND_Q4K | KIND_Q3K => GROUP_BLOCK_Q4,
        KIND_Q5 | KIND_Q5K | KIND_Q51 => GROUP_BLOCK_Q5,
        KIND_Q6K => GROUP_BLOCK_Q6,
        _ => GROUP_BLOCK,
    }
}

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
unsafe fn int8_block(
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
        // Q6_K's.
        if narrow {
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
unsafe fn int8_kernel<const N: bool>(
    out: &DstRows,
    p: &Int8Panels,
    xq: &QuantRows,
    groups: Range<usize>,
    cols: Range<usize>,
    bytes: &mut Vec<u8>,
) {
    unsafe {
        let j = cols.start;
        match (p.kind, cols.len() == 1) {
            (PanelKind::Q8, true) => int8_gemv::<KIND_Q8, N>(out, p, xq, groups, j),
            (PanelKind::Q5, true) => int8_gemv::<KIND_Q5, N>(out, p, xq, groups, j),
            (PanelKind::Q4, true) => int8_gemv::<KIND_Q4, N>(out, p, xq, groups, j),
            (PanelKind::Q4K, true) => int8_gemv::<KIND_Q4K, N>(out, p, xq, groups, j),
            (PanelKind::Q5K, true) => int8_gemv::<KIND_Q5K, N>(out, p, xq, groups, j),
            (PanelKind::Q3K, true) => int8_gemv::<KIND_Q3K, N>(out, p, xq, groups, j),
            (PanelKind::Q51, true) => int8_gemv::<KIND_Q51, N>(out, p, xq, groups, j),
            (PanelKind::Q41, true) => int8_gemv::<KIND_Q41, N>(out, p, xq, groups, j),
            (PanelKind::IQ4NL, true) => int8_gemv::<KIND_IQ4NL, N>(out, p, xq, groups, j),
            (PanelKind::Q6K, true) => int8_gemv::<KIND_Q6K, N>(out, p, xq, groups, j),
            (PanelKind::Q8, false) => int8_tiled::<KIND_Q8, N>(out, p, xq, groups, cols, bytes),
            (PanelKind::Q5, false) => int8_tiled::<KIND_Q5, N>(out, p, xq, groups, cols, bytes),
            (PanelKind::Q4, false) => int8_tiled::<KIND_Q4, N>(out, p, xq, groups, cols, bytes),
            (PanelKind::Q4K, false) => int8_tiled::<KIND_Q4K, N>(out, p, xq, groups, cols, bytes),
            (PanelKind::Q5K, false) => int8_tiled::<KIND_Q5K, N>(out, p, xq, groups, cols, bytes),
            (PanelKind::Q3K, false) => int8_tiled::<KIND_Q3K, N>(out, p, xq, groups, cols, bytes),
            (PanelKind::Q51, false) => int8_tiled::<KIND_Q51, N>(out, p, xq, groups, cols, bytes),
            (PanelKind::Q41, false) => int8_tiled::<KIND_Q41, N>(out, p, xq, groups, cols, bytes),
            (PanelKind::IQ4NL, false) => {
                int8_tiled::<KIND_IQ4NL, N>(out, p, xq, groups, cols, bytes)
            }
            (PanelKind::Q6K, false) => int8_tiled::<KIND_Q6K, N>(out, p, xq, groups, cols, bytes),
        }
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
unsafe fn int8_gemv<const K: u8, const N: bool>(
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
unsafe fn int8_tiled<const K: u8, const N: bool>(
    out: &DstRows,
    p: &Int8Panels,
    xq: &QuantRows,
    groups: Range<usize>,
    cols: Range<usize>,
    bytes: &mut Vec<u8>,
) {
    let nb = p.k / QK;
    // The values with higher bits, the nibbles but Q4_K's, and IQ4_NL's table entries are
    // unpacked to bytes (`value_bytes` writes every byte of a part).
    let as_bytes = bytes_kind(K) != K;
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
        for j in cols.clone().step_by(4) {
            let c = 4.min(cols.end - j);
            // One group or a pair, with the tiles of the kind that reads these values.
            macro_rules! tiles {
                ($kind:expr) => {
                    if pair {
                        int8_tiles::<{ $kind }, 2, N>(out, p, xq, [g, g + 1], w, j, c)
                    } else {
                        int8_tiles::<{ $kind }, 1, N>(out, p, xq, [g], [w[0]], j, c)
                    }
                };
            }
            unsafe {
                match K {
                    KIND_Q5 => tiles!(KIND_Q5_BYTES),
                    KIND_Q51 => tiles!(KIND_Q51_BYTES),
                    KIND_Q4 => tiles!(KIND_Q4_BYTES),
                    KIND_Q41 => tiles!(KIND_Q41_BYTES),
                    KIND_IQ4NL => tiles!(KIND_Q8),
                    KIND_Q6K => tiles!(KIND_Q6K_BYTES),
                    KIND_Q5K => tiles!(KIND_Q5K_BYTES),
                    KIND_Q3K => tiles!(KIND_Q3K_BYTES),
                    _ => tiles!(K),
                }
            }
        }
        g += if pair { 2 } else { 1 };
    }
}

/// `dst = a · bᵀ` with `a` packed into `p` (a 2-D weight: every batch of `b` uses it);
/// `false` when this kernel does not apply.
pub fn matmul_int8_panels(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    p: &Int8Panels,
    ep: Option<&Epilogue>,
) -> bool {
    matmul_int8_panels_dots(par, dst, a, b, p, ep, narrow_dots_faster())
}

/// [`matmul_int8_panels`] with narrow dots or not (see [`int8_block`]; the same results).
fn matmul_int8_panels_dots(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    p: &Int8Panels,
    ep: Option<&Epilogue>,
    narrow: bool,
) -> bool {
    if !p.fits(a)
        || a.ne[2] != 1
        || a.ne[3] != 1
        || b.dtype != DType::F32
        || b.ne[0] != p.k
        || !super::packed_f32(dst)
    {
        return false;
    }
    // Every batch of `b` in one run of rows: one quantization and one GEMM.
    let rows = Batches {
        n: b.ne[1],
        ne2: dst.ne[2],
        first: 0,
    };
    let count = b.ne[1] * dst.ne[2] * dst.ne[3];
    let mut xq = QuantRows::default();
    quantize_rows(par, b, rows, count, p.k, &mut xq, p.encoding());
    int8_gemm(par, &DstRows { v: dst, rows }, p, &xq, count, ep, narrow);
    true
}

/// The int8 GEMM on weights packed for this call (each batch of `a` once); `a` Q8_0/Q4_0
/// with packed rows of whole blocks, `b` f32, `dst` packed f32 (checked by the caller).
fn matmul_int8(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    ep: Option<&Epilogue>,
) -> bool {
    let (n, k) = (b.ne[1], a.ne[0]);
    let (r2, r3) = (b.ne[2] / a.ne[2].max(1), b.ne[3] / a.ne[3].max(1));
    let mut xq = QuantRows::default();
    let mut packed: Option<((usize, usize), Int8Panels)> = None;
    for i3 in 0..dst.ne[3] {
        for i2 in 0..dst.ne[2] {
            let ab = (i2 / r2.max(1), i3 / r3.max(1));
            let p = match packed.take() {
                Some((at, p)) if at == ab => p,
                _ => match Int8Panels::new(a, ab.0, ab.1) {
                    Some(p) => p,
                    None => return false,
                },
            };
            let rows = Batches {
                n,
                ne2: dst.ne[2],
                first: i2 + dst.ne[2] * i3,
            };
            quantize_rows(par, b, rows, n, k, &mut xq, p.encoding());
            int8_gemm(
                par,
                &DstRows { v: dst, rows },
                &p,
                &xq,
                n,
                ep,
                narrow_dots_faster(),
            );
            packed = Some((ab, p));
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cpu::Pool;
    use crate::graph::{contiguous_strides, row_from_f32, row_to_f32};
    use crate::testing::Rng;

    fn view(bytes: &mut [u8], dtype: DType, ne: [usize; 4]) -> TensorView {
        let nb = contiguous_strides(dtype, ne).expect("small");
        // The bytes outlive every use of the view in these tests.
        unsafe { TensorView::from_raw(bytes.as_mut_ptr(), dtype, ne, nb) }
    }

    /// The panels give back their GGUF bytes and rows, and their products (the
    /// matrix-vector tiles, 4 groups a quarter apart, then single ones; the GEMM's tiles of
    /// 2 groups × 1-4 rows) are the dequantized weights times the activations within the
    /// activations' 8-bit rounding, a last group padded; 1 and 2 threads give the same
    /// bytes. In wasm, in each build's kernels (the relaxed-SIMD step runs these).
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn int8_panels_match_dequantized_weights() {
        let pool = Pool::new(Some(if cfg!(target_arch = "wasm32") { 1 } else { 2 })).unwrap();
        let mut rng = Rng::new(33);
        for dtype in [
            DType::Q8_0,
            DType::Q5_0,
            DType::Q4_0,
            DType::Q3_K,
            DType::Q4_K,
            DType::Q5_K,
            DType::Q6_K,
            DType::Q5_1,
            DType::Q4_1,
            DType::IQ4_NL,
        ] {
            // The K-quants' rows are whole super-blocks of 256 values.
            let kk = dtype.block_size() / QK;
            // `extreme`: every block's largest values (4-bit 15, 5-bit 31: each block's first
            // value -1, the rest 15/16) against activations of ±1 (8-bit ±127), so the integer
            // sums reach the bounds the 16-bit partial sums (`Dot16`) rely on.
            for (m, n, k, extreme) in [
                (37, 1, 96 * kk, false),
                (5, 1, 32 * kk, false),
                (18, 3, 64 * kk, false),
                (37, 6, 160 * kk, false),
                (9, 70, 64 * kk, false),
                // A last column block of one row: the matrix-vector tile on a new record.
                (11, 65, 32 * kk, false),
                (13, 1, 64 * kk, true),
                (9, 8, 64 * kk, true),
            ] {
                let rb = dtype.row_bytes(k).unwrap();
                let wf: Vec<f32> = (0..m * k)
                    .map(|i| match (extreme, i % QK) {
                        (false, _) => rng.uniform(-1.0, 1.0),
                        (true, 0) => -1.0,
                        (true, _) => 0.9375,
                    })
                    .collect();
                let mut w = vec![0u8; m * rb];
                for (src, dst) in wf.chunks(k).zip(w.chunks_mut(rb)) {
                    row_from_f32(dtype, src, dst).unwrap();
                }
                let x: Vec<f32> = (0..n * k)
                    .map(|i| match extreme {
                        false => rng.uniform(-1.0, 1.0),
                        true if i / k % 2 == 0 => 1.0,
                        true => -1.0,
                    })
                    .collect();
                let mut xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
                let mut wb = w.clone();
                let wv = view(&mut wb, dtype, [k, m, 1, 1]);
                let xv = view(&mut xb, DType::F32, [k, n, 1, 1]);
                let p = Int8Panels::new(&wv, 0, 0).expect("panels");
                let mut back = vec![0u8; m * rb];
                p.unpack_rows(0, &mut back).unwrap();
                assert!(back == w, "{dtype:?} {m}x{k}: unpacked bytes differ");
                let (mut row, mut want) = (vec![0f32; k], vec![0f32; k]);
                for i in 0..m {
                    p.row_f32(i, &mut row);
                    row_to_f32(dtype, &w[i * rb..(i + 1) * rb], &mut want);
                    assert_eq!(row, want, "{dtype:?} row {i}");
                }
                // 1 and 2 threads, and narrow dots or not (see `int8_block`).
                let runs = [
                    (Par::SERIAL, false),
                    (pool.par().eager(), false),
                    (Par::SERIAL, true),
                ];
                let mut outs = runs.map(|_| vec![0u8; m * n * 4]);
                for (o, (par, narrow)) in outs.iter_mut().zip(runs) {
                    let ov = view(o, DType::F32, [m, n, 1, 1]);
                    assert!(matmul_int8_panels_dots(
                        par, &ov, &wv, &xv, &p, None, narrow
                    ));
                }
                assert_eq!(outs[0], outs[1], "{dtype:?} {m}x{n}x{k}: 1 vs 2 threads");
                assert_eq!(
                    outs[0], outs[2],
                    "{dtype:?} {m}x{n}x{k}: narrow dots differ"
                );
                let (mut err, mut sig) = (0f64, 0f64);
                for j in 0..n {
                    for i in 0..m {
                        row_to_f32(dtype, &w[i * rb..(i + 1) * rb], &mut want);
                        let exact: f64 = (0..k).map(|t| want[t] as f64 * x[j * k + t] as f64).sum();
                        let at = 4 * (j * m + i);
                        let got = f32::from_le_bytes(outs[0][at..at + 4].try_into().unwrap());
                        err += (got as f64 - exact).powi(2);
                        sig += exact.powi(2);
                    }
                }
                assert!(
                    err / sig < 1e-4,
                    "{dtype:?} {m}x{n}x{k}: nmse {}",
                    err / sig
                );
            }
        }
    }
}
