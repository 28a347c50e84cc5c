//! [`Int8Panels`]: weights regrouped for the integer kernels, their packing from GGUF bytes
//! and unpacking back.

use super::act::*;
use super::kind::*;
use crate::backends::cpu::kernels::simd::{f16_at, put_slice_row, slot, I8x16, U8x16, ACT_OFFSET};
use crate::backends::cpu::TensorView;
use crate::error::{Error, Result};
use crate::graph::{q5_0_values, set_q5_0_values, DType, IQ4_NL_VALUES, QK, QK_K};

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
    pub(super) m: usize,
    pub(super) k: usize,
    /// How the weight's values are held.
    pub(super) kind: PanelKind,
    /// The three arrays (values at the start, 16-byte aligned); `_owned` holds them when they
    /// are not a buffer's.
    pub(super) values: *mut u8,
    pub(super) sums: *mut i32,
    pub(super) scales: *mut f32,
    pub(super) kscales: *mut u8,
    pub(super) _owned: Option<Vec<u128>>,
}

// Panels are written only while they are being filled (by `new`, or by the loader's writes
// to their buffer, never during a compute call); kernels on the thread team only read them.
unsafe impl Send for Int8Panels {}

unsafe impl Sync for Int8Panels {}

impl Int8Panels {
    /// Bytes of the values, the Q8_0 block sums, the f32 scales and the K-quants' integer
    /// scales of `m × k` panels of `kind`.
    pub(super) fn layout(kind: PanelKind, m: usize, k: usize) -> [usize; 4] {
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
    pub(super) unsafe fn over(
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
    pub(super) unsafe fn pack_row(&self, row: usize, w: &[u8]) {
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
    pub(super) unsafe fn pack_k_row(&self, row: usize, w: &[u8]) {
        let (g, r) = (row / GROUP, row % GROUP);
        let dtype = self.dtype();
        let high = self.kind.high();
        let mut u = crate::backends::cpu::kernels::kquant::Unpacked::new();
        for (sb, blk) in w.chunks_exact(dtype.block_bytes()).enumerate() {
            crate::backends::cpu::kernels::kquant::decode(dtype, blk, &mut u);
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
    pub(super) fn block(&self, row: usize, b: usize) -> (f32, [i8; QK]) {
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
    pub(super) fn neg_mins(&self) -> *mut f32 {
        debug_assert!(self.kind.has_min());
        self.sums as *mut f32
    }

    /// Block `b` of row `row`'s min (Q5_1's, Q4_1's); `None` for other kinds.
    pub(super) fn block_min(&self, row: usize, b: usize) -> Option<f32> {
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
                    crate::backends::cpu::kernels::kquant::encode(
                        self.dtype(),
                        &self.k_superblock(row0 + i, b),
                        blk,
                    );
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
    pub(super) fn k_at(&self, g: usize, sb: usize) -> (*mut f32, usize) {
        let at = g * (self.k / QK_K) + sb;
        debug_assert!(self.kind.is_k_quant() && at < self.m.div_ceil(GROUP) * (self.k / QK_K));
        // In range: super-block `at` of the `d` array.
        let d = unsafe { self.scales.add(at * GROUP * self.kind.d_per_row()) };
        (d, at * (QK_K / QK))
    }

    /// Super-block `sb` of K-quant row `row` in the common form (`kquant::decode`'s).
    pub(super) fn k_superblock(
        &self,
        row: usize,
        sb: usize,
    ) -> crate::backends::cpu::kernels::kquant::Unpacked {
        let (g, r) = (row / GROUP, row % GROUP);
        let high = self.kind.high();
        let mut u = crate::backends::cpu::kernels::kquant::Unpacked::new();
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
    pub(super) fn group_values(&self, g: usize) -> *const u8 {
        debug_assert!(g < self.m.div_ceil(GROUP));
        // In range: group `g` of the values array.
        unsafe { self.values.add(g * (self.k / QK) * self.kind.group_block()) }
    }

    /// Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q3_K, Q5_K or Q6_K panels' group `g` with each
    /// block's values as bytes (up to 63; IQ4_NL's table entries, i8) in Q8_0's layout
    /// (16-byte slices, slice `s` values `4s .. 4s + 4`), into `out` (`k / 32 · 128` bytes):
    /// each vector's nibbles with their higher bits, as [`int8_tile`]'s byte dots take them.
    pub(super) fn value_bytes(&self, g: usize, out: &mut [u8]) {
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
    pub(super) fn encoding(&self) -> Encoding {
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

/// Vector `v` of a block of nibbles (`raw`): the values `4v ..` (low nibbles) and
/// `16 + 4v ..` (high), with their bits above the nibbles from `planes` as `high` says
/// (Q5_0's plane, or Q6_K's two; none: `planes` unread). Two shifts and masks a plane.
#[inline(always)]
pub(super) fn nibble_halves(
    raw: U8x16,
    high: High,
    planes: [U8x16; 2],
    v: usize,
) -> (U8x16, U8x16) {
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
pub(super) fn move_bits(x: U8x16, from: u32, to: u32, width: u32) -> U8x16 {
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
pub(super) unsafe fn put_nibble_values(base: *mut u8, r: usize, vals: &[u8; QK], high: High) {
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
pub(super) unsafe fn nibble_values(base: *const u8, r: usize, high: High) -> [u8; QK] {
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
