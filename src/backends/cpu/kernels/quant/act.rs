//! Activations quantized for the integer dots: Q8_0 blocks (the row dots, Q8_0's panels),
//! plain with each block's integer start (the Q4_0 / Q5_0 panels' bias), or with the sums of
//! each block's halves (the K-quant panels), laid out as the dots read them ([`QuantRows`]).

use crate::backends::cpu::kernels::batch::{Batches, DstRows, Rows};
use crate::backends::cpu::kernels::elementwise::Epilogue;
use crate::backends::cpu::kernels::gemm::MIN_PAR_MACS;
use crate::backends::cpu::kernels::simd::{
    act_slice_at, encode_act, encode_act_plain_sums, encode_slices, PAIRED, SLICE_BYTES,
};
use crate::backends::cpu::pool::Par;
use crate::backends::cpu::TensorView;
use crate::graph::QK;
use std::ops::Range;

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
    pub(super) recs: Vec<u32>,
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
pub(super) const REC_ROWS: usize = 4;

/// Bytes of one row's values in a record: a block's slices ([`SLICE_BYTES`] per 4 values).
pub(super) const REC_VALUES: usize = QK / 4 * SLICE_BYTES;

/// Where a record's sums begin (up to [`REC_SUMS`] `i32`s a row: Q4_0's / Q5_0's start,
/// [`STARTS_PER_BLOCK`], or the K-quants' two halves' sums), and its scales (up to
/// [`REC_DS`] `f32`s a row: the scale, and the K-quants' mins' term).
pub(super) const REC_STARTS: usize = REC_ROWS * REC_VALUES;

pub(super) const REC_SUMS: usize = STARTS_PER_BLOCK;

pub(super) const REC_SCALES: usize = REC_STARTS + REC_ROWS * REC_SUMS * 4;

pub(super) const REC_DS: usize = 2;

/// Bytes of one record: [`REC_ROWS`] rows' values, sums and scales for one block.
pub(super) const REC_BYTES: usize = REC_SCALES + REC_ROWS * REC_DS * 4;

/// Activation values per thread from which [`QuantRows::quantize`] is cut over threads: the
/// block encoders take about 1 ns a value (SIMD128), a cut about 7 us (see `MIN_PAR_MACS`),
/// so a thread gets at least twice that in work.
pub(super) const MIN_PAR_QUANT: usize = 1 << 14;

impl QuantRows {
    /// Row `j`'s record for block 0 ([`Layout::Records`]; the next block's is [`REC_BYTES`]
    /// on), and the row's lane in it.
    pub(super) fn record(&self, j: usize, nb: usize) -> (*const u8, usize) {
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

/// Which kernels quantized activations are for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
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
pub(super) fn quantize_rows(
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
pub(super) const STARTS_PER_BLOCK: usize = 4;

/// [`quantize_q8`] by [`encode_act_plain_sums`], with each block's `-bias ·` sum four times in
/// `s`: where the integer dots with weights stored `bias` higher start (one vector load a
/// block and activation row; computing it in the tiles took five instructions).
#[inline(never)]
pub(super) fn quantize_q8_biased(x: &[f32], d: &mut [f32], q: &mut [i8], s: &mut [i32], bias: i32) {
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
pub(super) fn quantize_q8_halves(x: &[f32], d: &mut [f32], q: &mut [i8], s: &mut [i32]) {
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

/// The outer loop of the matmuls that read weight rows as they are stored (the row dots and
/// the K-quants' kernels): `dst = a · bᵀ` in runs of activation rows (every batch of `b` as
/// one run for a 2-D weight: one quantization, one cut over threads; a batched weight one
/// batch at a time), each run quantized once into `xq` by `quantize(rows, count, xq)`, then
/// weight rows cut over threads in whole blocks of `m_block` (each output is the same
/// arithmetic whatever the cut), `block(out, ab, ms, xq, count)` computing rows `ms` of `a`'s
/// batch `ab` for the run's `count` activation rows, and `ep` applied as they are stored.
#[allow(clippy::too_many_arguments)]
pub fn weight_row_runs(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    ep: Option<&Epilogue>,
    m_block: usize,
    quantize: impl Fn(Batches, usize, &mut QuantRows),
    block: impl Fn(&DstRows, (usize, usize), Range<usize>, &QuantRows, usize) + Sync,
) {
    let (m, n, k) = (a.ne[1], b.ne[1], a.ne[0]);
    let (r2, r3) = (b.ne[2] / a.ne[2].max(1), b.ne[3] / a.ne[3].max(1));
    let batches = dst.ne[2] * dst.ne[3];
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
        quantize(rows, per_run, &mut xq);
        let min_rows = MIN_PAR_MACS.div_ceil((per_run * k).max(1));
        par.for_ranges(m, min_rows, m_block, |r| {
            for m0 in r.clone().step_by(m_block) {
                let ms = m0..r.end.min(m0 + m_block);
                block(&out, ab, ms.clone(), &xq, per_run);
                if let Some(ep) = ep {
                    ep.apply_rows(&out, ms, 0..per_run);
                }
            }
        });
    }
}
