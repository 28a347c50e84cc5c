//! ggml's 32-value block formats: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL, their layouts,
//! reference quantizers and dequantizers (ggml-quants.c's `quantize_row_*_ref` and
//! `dequantize_row_*`). The dtype table (`super`) names these functions; nothing here knows
//! the table.

/// Values per block (ggml's QK8_0 / QK4_0 / QK4_1 / QK5_0 / QK5_1 / QK4_NL).
pub const QK: usize = 32;

/// Bytes of a Q8_0 block: an f16 scale, 32 `i8`.
pub const Q8_0_BYTES: usize = 2 + QK;
/// Bytes of a Q4_0 block: an f16 scale, 16 bytes of nibbles.
pub const Q4_0_BYTES: usize = 2 + QK / 2;
/// Bytes of a Q4_1 block: f16 scale and min, 16 bytes of nibbles.
pub const Q4_1_BYTES: usize = 4 + QK / 2;
/// Bytes of a Q5_0 block: an f16 scale, 4 bytes of fifth bits, 16 bytes of nibbles.
pub const Q5_0_BYTES: usize = 2 + 4 + QK / 2;
/// Bytes of a Q5_1 block: f16 scale and min, 4 bytes of fifth bits, 16 bytes of nibbles.
pub const Q5_1_BYTES: usize = 4 + 4 + QK / 2;
/// Bytes of an IQ4_NL block: Q4_0's layout.
pub const IQ4_NL_BYTES: usize = Q4_0_BYTES;

/// Quantizes `src` (a whole number of blocks) to Q8_0 bytes, as ggml's reference does.
pub fn quantize_q8_0(src: &[f32], dst: &mut [u8]) {
    for (blk, out) in src.chunks_exact(QK).zip(dst.chunks_exact_mut(Q8_0_BYTES)) {
        let amax = blk.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out[..2].copy_from_slice(&half::f16::from_f32(d).to_le_bytes());
        for (q, &v) in out[2..].iter_mut().zip(blk) {
            *q = ((v * id).round() as i8) as u8;
        }
    }
}

/// Dequantizes Q8_0 bytes into `dst` (a whole number of blocks).
pub fn dequantize_q8_0(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src.chunks_exact(Q8_0_BYTES).zip(dst.chunks_exact_mut(QK)) {
        let d = half::f16::from_le_bytes([blk[0], blk[1]]).to_f32();
        for (o, &q) in out.iter_mut().zip(&blk[2..]) {
            *o = d * (q as i8) as f32;
        }
    }
}

/// Quantizes `src` to Q4_0 bytes, as ggml's reference does (scale from the signed max).
pub fn quantize_q4_0(src: &[f32], dst: &mut [u8]) {
    for (blk, out) in src.chunks_exact(QK).zip(dst.chunks_exact_mut(Q4_0_BYTES)) {
        let d = signed_max(blk) / -8.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out[..2].copy_from_slice(&half::f16::from_f32(d).to_le_bytes());
        for j in 0..QK / 2 {
            let x0 = blk[j] * id;
            let x1 = blk[j + QK / 2] * id;
            let q0 = ((x0 + 8.5) as i32).min(15) as u8;
            let q1 = ((x1 + 8.5) as i32).min(15) as u8;
            out[2 + j] = q0 | (q1 << 4);
        }
    }
}

/// Dequantizes Q4_0 bytes into `dst` (a whole number of blocks).
pub fn dequantize_q4_0(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src.chunks_exact(Q4_0_BYTES).zip(dst.chunks_exact_mut(QK)) {
        let d = f16_at(blk, 0);
        for (o, v) in out.iter_mut().zip(nibble_values(&blk[2..])) {
            *o = (v as i32 - 8) as f32 * d;
        }
    }
}

/// Quantizes `src` to Q4_1 bytes, as ggml's `quantize_row_q4_1_ref`: per block `d = (max -
/// min) / 15`, `m = min`, values `(x - min) / d` rounded half up, at most 15.
pub fn quantize_q4_1(src: &[f32], dst: &mut [u8]) {
    for (blk, out) in src.chunks_exact(QK).zip(dst.chunks_exact_mut(Q4_1_BYTES)) {
        let (min, max) = min_max(blk);
        let d = (max - min) / 15.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out[..2].copy_from_slice(&half::f16::from_f32(d).to_le_bytes());
        out[2..4].copy_from_slice(&half::f16::from_f32(min).to_le_bytes());
        // ggml: MIN(15, (int8_t)((x - min) * id + 0.5f)).
        let q = |x: f32| (((x - min) * id + 0.5) as i8).min(15) as u8;
        for j in 0..QK / 2 {
            out[4 + j] = q(blk[j]) | (q(blk[j + QK / 2]) << 4);
        }
    }
}

/// Dequantizes Q4_1 bytes into `dst` (a whole number of blocks), as ggml's
/// `dequantize_row_q4_1`: `q · d + m`.
pub fn dequantize_q4_1(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src.chunks_exact(Q4_1_BYTES).zip(dst.chunks_exact_mut(QK)) {
        let (d, m) = (f16_at(blk, 0), f16_at(blk, 2));
        for (o, v) in out.iter_mut().zip(nibble_values(&blk[4..])) {
            *o = v as f32 * d + m;
        }
    }
}

/// IQ4_NL's 16 values (ggml's `kvalues_iq4nl`), indexed by a block's nibbles.
pub const IQ4_NL_VALUES: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// The index of the [`IQ4_NL_VALUES`] entry nearest `x` (ggml's `best_index_int8`: ties to
/// the upper entry).
fn iq4_nl_index(x: f32) -> u8 {
    let v = |i: usize| IQ4_NL_VALUES[i] as f32;
    if x <= v(0) {
        return 0;
    }
    if x >= v(15) {
        return 15;
    }
    let (mut lo, mut hi) = (0, 15);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if x < v(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    if x - v(hi - 1) < v(hi) - x {
        (hi - 1) as u8
    } else {
        hi as u8
    }
}

/// Quantizes `src` to IQ4_NL bytes, as ggml's `quantize_iq4_nl` without an importance
/// matrix (`quantize_row_iq4_nl_impl`, 7 tries): per block the values weighted by their
/// squares, a scale from the signed max, then 15 more scales tried, the one that fits the
/// values best (least squares over the table entries) kept, and the nibbles picked again
/// for it.
pub fn quantize_iq4_nl(src: &[f32], dst: &mut [u8]) {
    const NTRY: i32 = 7;
    let v0 = IQ4_NL_VALUES[0] as f32;
    for (x, out) in src.chunks_exact(QK).zip(dst.chunks_exact_mut(IQ4_NL_BYTES)) {
        let max = signed_max(x);
        // Σ w·q·x and Σ w·q² over the block for inverse scale `id` (weights `x²`).
        let fit = |id: f32| {
            let (mut sqx, mut sq2) = (0f32, 0f32);
            for &v in x {
                let q = IQ4_NL_VALUES[iq4_nl_index(id * v) as usize] as f32;
                let w = v * v;
                sqx += w * q * v;
                sq2 += w * q * q;
            }
            (sqx, sq2)
        };
        // (An all-but-zero block: scale 0, every nibble the entry nearest 0, as ggml.)
        let mut d = 0.0;
        if max.abs() >= 1e-15 {
            let (sqx, sq2) = fit(1.0 / (-max / v0));
            d = if sq2 > 0.0 { sqx / sq2 } else { 0.0 };
            let mut best = d * sqx;
            for t in -NTRY..=NTRY {
                let (sqx, sq2) = fit((t as f32 + v0) / max);
                if sq2 > 0.0 && sqx * sqx > best * sq2 {
                    d = sqx / sq2;
                    best = d * sqx;
                }
            }
        }
        out[..2].copy_from_slice(&half::f16::from_f32(d).to_le_bytes());
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        for j in 0..QK / 2 {
            out[2 + j] = iq4_nl_index(id * x[j]) | (iq4_nl_index(id * x[j + QK / 2]) << 4);
        }
    }
}

/// Dequantizes IQ4_NL bytes into `dst` (a whole number of blocks), as ggml's
/// `dequantize_row_iq4_nl`: the table entry of each nibble times `d`.
pub fn dequantize_iq4_nl(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src.chunks_exact(IQ4_NL_BYTES).zip(dst.chunks_exact_mut(QK)) {
        let d = f16_at(blk, 0);
        for (o, v) in out.iter_mut().zip(nibble_values(&blk[2..])) {
            *o = d * IQ4_NL_VALUES[v as usize] as f32;
        }
    }
}

/// Quantizes `src` to Q5_0 bytes, as ggml's `quantize_row_q5_0_ref` (scale from the signed
/// max, `max / -16`).
pub fn quantize_q5_0(src: &[f32], dst: &mut [u8]) {
    for (blk, out) in src.chunks_exact(QK).zip(dst.chunks_exact_mut(Q5_0_BYTES)) {
        let d = signed_max(blk) / -16.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out[..2].copy_from_slice(&half::f16::from_f32(d).to_le_bytes());
        // ggml: (int8_t)(x + 16.5f), then at most 31.
        let q: [u8; QK] = std::array::from_fn(|j| ((blk[j] * id + 16.5) as i8).min(31) as u8);
        set_q5_0_values(out, &q);
    }
}

/// The 32 values (0..=31; less 16 to dequantize) of a Q5_0 block.
pub fn q5_0_values(blk: &[u8]) -> [u8; QK] {
    let qh = u32::from_le_bytes([blk[2], blk[3], blk[4], blk[5]]);
    let mut v = nibble_values(&blk[6..]);
    for (j, x) in v.iter_mut().enumerate() {
        *x |= (((qh >> j) & 1) as u8) << 4;
    }
    v
}

/// Writes values `q` (0..=31) into a Q5_0 block's fifth bits and nibbles (its scale stays).
pub fn set_q5_0_values(blk: &mut [u8], q: &[u8; QK]) {
    let mut qh = 0u32;
    for j in 0..QK / 2 {
        blk[6 + j] = (q[j] & 0x0f) | ((q[QK / 2 + j] & 0x0f) << 4);
        qh |= u32::from(q[j] >> 4) << j;
        qh |= u32::from(q[QK / 2 + j] >> 4) << (j + QK / 2);
    }
    blk[2..6].copy_from_slice(&qh.to_le_bytes());
}

/// Quantizes `src` to Q5_1 bytes, as ggml's `quantize_row_q5_1_ref`: per block `d = (max -
/// min) / 31`, `m = min`, values `(x - min) / d` rounded half up.
pub fn quantize_q5_1(src: &[f32], dst: &mut [u8]) {
    for (blk, out) in src.chunks_exact(QK).zip(dst.chunks_exact_mut(Q5_1_BYTES)) {
        let (min, max) = min_max(blk);
        let d = (max - min) / 31.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out[..2].copy_from_slice(&half::f16::from_f32(d).to_le_bytes());
        out[2..4].copy_from_slice(&half::f16::from_f32(min).to_le_bytes());
        // ggml: (uint8_t)((x - min) * id + 0.5f), its low 5 bits kept.
        let q: [u8; QK] = std::array::from_fn(|j| (((blk[j] - min) * id + 0.5) as u8) & 31);
        set_q5_0_values(&mut out[2..], &q);
    }
}

/// Dequantizes Q5_1 bytes into `dst` (a whole number of blocks), as ggml's
/// `dequantize_row_q5_1`: `q · d + m`, the values Q5_0's two bytes further on.
pub fn dequantize_q5_1(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src.chunks_exact(Q5_1_BYTES).zip(dst.chunks_exact_mut(QK)) {
        let (d, m) = (f16_at(blk, 0), f16_at(blk, 2));
        for (o, v) in out.iter_mut().zip(q5_0_values(&blk[2..])) {
            *o = v as f32 * d + m;
        }
    }
}

/// Dequantizes Q5_0 bytes into `dst` (a whole number of blocks), as ggml's
/// `dequantize_row_q5_0`.
pub fn dequantize_q5_0(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src.chunks_exact(Q5_0_BYTES).zip(dst.chunks_exact_mut(QK)) {
        let d = half::f16::from_le_bytes([blk[0], blk[1]]).to_f32();
        for (o, v) in out.iter_mut().zip(q5_0_values(blk)) {
            *o = (v as i32 - 16) as f32 * d;
        }
    }
}

/// The 32 values (0..=15) of a block's 16 nibble bytes, as ggml lays them out: value `j`
/// in byte `j`'s low nibble, value `j + 16` in its high one (Q4_0, Q4_1, IQ4_NL; Q5_0's and
/// Q5_1's low 4 bits).
#[inline]
fn nibble_values(nibbles: &[u8]) -> [u8; QK] {
    std::array::from_fn(|j| {
        if j < QK / 2 {
            nibbles[j] & 0x0f
        } else {
            nibbles[j - QK / 2] >> 4
        }
    })
}

/// The value of largest magnitude in `blk`, its sign kept (the first of equals, as ggml's
/// `quantize_row_q4_0_ref` and kin pick it).
#[inline]
fn signed_max(blk: &[f32]) -> f32 {
    let (mut amax, mut max) = (0f32, 0f32);
    for &v in blk {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    max
}

/// A block's least and largest values (Q4_1's and Q5_1's `m` and range).
#[inline]
fn min_max(blk: &[f32]) -> (f32, f32) {
    blk.iter()
        .fold((f32::MAX, -f32::MAX), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

/// The f32 value of the little-endian f16 at `b[i..i + 2]`.
#[inline]
pub(super) fn f16_at(b: &[u8], i: usize) -> f32 {
    half::f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}
