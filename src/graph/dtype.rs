//! Element types, including ggml's block-quantized formats (same byte layout as GGUF).

use crate::error::{Error, Result};

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// IEEE half float.
    F16,
    /// 32-bit signed integer (indices, positions).
    I32,
    /// ggml Q8_0: blocks of 32 values, an f16 scale then 32 `i8` (34 bytes).
    Q8_0,
    /// ggml Q4_0: blocks of 32 values, an f16 scale then 16 bytes of nibbles (18 bytes).
    Q4_0,
    /// ggml Q4_1: blocks of 32 values, an f16 scale `d` and min `m` then 16 bytes of nibbles
    /// (20 bytes); values 0..=15 times `d` plus `m`. Older GGUF files hold it.
    Q4_1,
    /// ggml Q5_0: blocks of 32 values, an f16 scale, the values' fifth bits (4 bytes) then 16
    /// bytes of low nibbles (22 bytes); values 0..=31 less 16. llama.cpp's Q4_K_M mix writes it
    /// for rows that are not whole K-quant super-blocks (Qwen2.5-0.5B's 896).
    Q5_0,
    /// ggml Q5_1: blocks of 32 values, an f16 scale `d` and min `m`, the values' fifth bits
    /// (4 bytes) then 16 bytes of low nibbles (24 bytes); values 0..=31 times `d` plus `m`.
    /// llama.cpp's Q5_K_M mix writes it for rows that are not whole K-quant super-blocks.
    Q5_1,
    /// ggml IQ4_NL: blocks of 32 values, an f16 scale `d` then 16 bytes of nibbles (18
    /// bytes), Q4_0's layout; each nibble indexes a fixed non-linear table of 16 `i8`
    /// ([`IQ4_NL_VALUES`]), the value that entry times `d`. llama.cpp's Q2_K / Q3_K mixes
    /// write it for rows that are not whole K-quant super-blocks (Qwen2.5-0.5B's 896).
    #[allow(non_camel_case_types)]
    IQ4_NL,
    /// ggml Q2_K: super-blocks of 256 values, 16 4-bit scale/min pairs, 2-bit values, f16
    /// `d` and `dmin` (84 bytes).
    #[allow(non_camel_case_types)]
    Q2_K,
    /// ggml Q3_K: super-blocks of 256 values, a high-bit mask, 2-bit low values, 16 6-bit
    /// scales packed in 12 bytes, f16 `d` (110 bytes).
    #[allow(non_camel_case_types)]
    Q3_K,
    /// ggml Q4_K: super-blocks of 256 values, f16 `d` and `dmin`, 8 6-bit scale/min pairs
    /// packed in 12 bytes, 4-bit values (144 bytes).
    #[allow(non_camel_case_types)]
    Q4_K,
    /// ggml Q5_K: Q4_K's header, a high-bit plane of 32 bytes, 4-bit low values (176 bytes).
    #[allow(non_camel_case_types)]
    Q5_K,
    /// ggml Q6_K: super-blocks of 256 values, 4-bit low values, 2-bit high values, 16 `i8`
    /// scales, f16 `d` (210 bytes).
    #[allow(non_camel_case_types)]
    Q6_K,
}

/// Values per quantized block (ggml's QK8_0 / QK4_0).
pub const QK: usize = 32;

/// Values per K-quant super-block (ggml's QK_K).
pub const QK_K: usize = 256;

impl DType {
    /// All dtypes, for tables and tests.
    pub const ALL: [DType; 14] = [
        DType::F32,
        DType::F16,
        DType::I32,
        DType::Q8_0,
        DType::Q4_0,
        DType::Q4_1,
        DType::Q5_0,
        DType::Q5_1,
        DType::IQ4_NL,
        DType::Q2_K,
        DType::Q3_K,
        DType::Q4_K,
        DType::Q5_K,
        DType::Q6_K,
    ];

    /// The K-quant dtypes (256-value super-blocks).
    pub const K_QUANTS: [DType; 5] = [
        DType::Q2_K,
        DType::Q3_K,
        DType::Q4_K,
        DType::Q5_K,
        DType::Q6_K,
    ];

    /// Number of elements one block holds (1 for plain types).
    pub fn block_size(self) -> usize {
        match self {
            DType::F32 | DType::F16 | DType::I32 => 1,
            DType::Q8_0 | DType::Q4_0 | DType::Q4_1 | DType::Q5_0 | DType::Q5_1 | DType::IQ4_NL => {
                QK
            }
            DType::Q2_K | DType::Q3_K | DType::Q4_K | DType::Q5_K | DType::Q6_K => QK_K,
        }
    }

    /// Whether this is one of ggml's K-quants (256-value super-blocks).
    pub fn is_k_quant(self) -> bool {
        match self {
            DType::F32
            | DType::F16
            | DType::I32
            | DType::Q8_0
            | DType::Q4_0
            | DType::Q4_1
            | DType::Q5_0
            | DType::Q5_1
            | DType::IQ4_NL => false,
            DType::Q2_K | DType::Q3_K | DType::Q4_K | DType::Q5_K | DType::Q6_K => true,
        }
    }

    /// Bytes of one block.
    pub fn block_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F16 => 2,
            DType::Q8_0 => 2 + QK,
            DType::Q4_0 | DType::IQ4_NL => 2 + QK / 2,
            DType::Q4_1 => 4 + QK / 2,
            DType::Q5_0 => 2 + 4 + QK / 2,
            DType::Q5_1 => 4 + 4 + QK / 2,
            // scales[16], qs[64], d, dmin
            DType::Q2_K => QK_K / 16 + QK_K / 4 + 4,
            // hmask[32], qs[64], scales[12], d
            DType::Q3_K => QK_K / 8 + QK_K / 4 + 12 + 2,
            // d, dmin, scales[12], qs[128]
            DType::Q4_K => 4 + 12 + QK_K / 2,
            // d, dmin, scales[12], qh[32], qs[128]
            DType::Q5_K => 4 + 12 + QK_K / 8 + QK_K / 2,
            // ql[128], qh[64], scales[16], d
            DType::Q6_K => QK_K / 2 + QK_K / 4 + QK_K / 16 + 2,
        }
    }

    /// Whether this is a block-quantized type.
    pub fn is_quantized(self) -> bool {
        self.block_size() > 1
    }

    /// Bytes of a row of `n` elements; quantized rows must be whole blocks.
    pub fn row_bytes(self, n: usize) -> Result<usize> {
        if !n.is_multiple_of(self.block_size()) {
            return Err(Error::Shape {
                op: "row",
                msg: format!(
                    "{self:?} rows must be a multiple of {} elements, got {n}",
                    self.block_size()
                ),
            });
        }
        (n / self.block_size())
            .checked_mul(self.block_bytes())
            .ok_or_else(|| Error::InvalidArgument(format!("row of {n} {self:?} overflows")))
    }

    /// Short lower-case name (as in GGUF / ggml).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::I32 => "i32",
            DType::Q8_0 => "q8_0",
            DType::Q4_0 => "q4_0",
            DType::Q4_1 => "q4_1",
            DType::Q5_0 => "q5_0",
            DType::Q5_1 => "q5_1",
            DType::IQ4_NL => "iq4_nl",
            DType::Q2_K => "q2_k",
            DType::Q3_K => "q3_k",
            DType::Q4_K => "q4_k",
            DType::Q5_K => "q5_k",
            DType::Q6_K => "q6_k",
        }
    }
}

impl std::fmt::Display for DType {
    /// The short lower-case name ([`DType::name`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Quantizes `src` (a whole number of blocks) to Q8_0 bytes, as ggml's reference does.
pub fn quantize_q8_0(src: &[f32], dst: &mut [u8]) {
    for (blk, out) in src
        .chunks_exact(QK)
        .zip(dst.chunks_exact_mut(DType::Q8_0.block_bytes()))
    {
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
    for (blk, out) in src
        .chunks_exact(DType::Q8_0.block_bytes())
        .zip(dst.chunks_exact_mut(QK))
    {
        let d = half::f16::from_le_bytes([blk[0], blk[1]]).to_f32();
        for (o, &q) in out.iter_mut().zip(&blk[2..]) {
            *o = d * (q as i8) as f32;
        }
    }
}

/// Quantizes `src` to Q4_0 bytes, as ggml's reference does (scale from the signed max).
pub fn quantize_q4_0(src: &[f32], dst: &mut [u8]) {
    for (blk, out) in src
        .chunks_exact(QK)
        .zip(dst.chunks_exact_mut(DType::Q4_0.block_bytes()))
    {
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
    for (blk, out) in src
        .chunks_exact(DType::Q4_0.block_bytes())
        .zip(dst.chunks_exact_mut(QK))
    {
        let d = f16_at(blk, 0);
        for (o, v) in out.iter_mut().zip(nibble_values(&blk[2..])) {
            *o = (v as i32 - 8) as f32 * d;
        }
    }
}

/// Quantizes `src` to Q4_1 bytes, as ggml's `quantize_row_q4_1_ref`: per block `d = (max -
/// min) / 15`, `m = min`, values `(x - min) / d` rounded half up, at most 15.
pub fn quantize_q4_1(src: &[f32], dst: &mut [u8]) {
    for (blk, out) in src
        .chunks_exact(QK)
        .zip(dst.chunks_exact_mut(DType::Q4_1.block_bytes()))
    {
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
    for (blk, out) in src
        .chunks_exact(DType::Q4_1.block_bytes())
        .zip(dst.chunks_exact_mut(QK))
    {
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
    for (x, out) in src
        .chunks_exact(QK)
        .zip(dst.chunks_exact_mut(DType::IQ4_NL.block_bytes()))
    {
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
    for (blk, out) in src
        .chunks_exact(DType::IQ4_NL.block_bytes())
        .zip(dst.chunks_exact_mut(QK))
    {
        let d = f16_at(blk, 0);
        for (o, v) in out.iter_mut().zip(nibble_values(&blk[2..])) {
            *o = d * IQ4_NL_VALUES[v as usize] as f32;
        }
    }
}

/// Quantizes `src` to Q5_0 bytes, as ggml's `quantize_row_q5_0_ref` (scale from the signed
/// max, `max / -16`).
pub fn quantize_q5_0(src: &[f32], dst: &mut [u8]) {
    for (blk, out) in src
        .chunks_exact(QK)
        .zip(dst.chunks_exact_mut(DType::Q5_0.block_bytes()))
    {
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
    for (blk, out) in src
        .chunks_exact(QK)
        .zip(dst.chunks_exact_mut(DType::Q5_1.block_bytes()))
    {
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
    for (blk, out) in src
        .chunks_exact(DType::Q5_1.block_bytes())
        .zip(dst.chunks_exact_mut(QK))
    {
        let (d, m) = (f16_at(blk, 0), f16_at(blk, 2));
        for (o, v) in out.iter_mut().zip(q5_0_values(&blk[2..])) {
            *o = v as f32 * d + m;
        }
    }
}

/// Dequantizes Q5_0 bytes into `dst` (a whole number of blocks), as ggml's
/// `dequantize_row_q5_0`.
pub fn dequantize_q5_0(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src
        .chunks_exact(DType::Q5_0.block_bytes())
        .zip(dst.chunks_exact_mut(QK))
    {
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

#[inline]
fn f16_at(b: &[u8], i: usize) -> f32 {
    half::f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}

/// Dequantizes Q2_K bytes into `dst` (a whole number of super-blocks), as ggml's
/// `dequantize_row_q2_K`: value `128h + 32s + l` is bits `2s..2s+2` of `qs[32h + l]` times
/// `d · (scale & 15)`, less `dmin · (scale >> 4)`, with scale `(128h + 32s + l) / 16`.
pub fn dequantize_q2_k(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src
        .chunks_exact(DType::Q2_K.block_bytes())
        .zip(dst.chunks_exact_mut(QK_K))
    {
        let (scales, qs) = (&blk[..16], &blk[16..80]);
        let (d, min) = (f16_at(blk, 80), f16_at(blk, 82));
        for (y, o) in out.iter_mut().enumerate() {
            let (h, s, l) = (y / 128, (y / 32) % 4, y % 32);
            let sc = scales[y / 16];
            let dl = d * (sc & 0xf) as f32;
            let ml = min * (sc >> 4) as f32;
            let q = (qs[32 * h + l] >> (2 * s)) & 3;
            *o = dl * q as f32 - ml;
        }
    }
}

/// Dequantizes Q3_K bytes into `dst` (a whole number of super-blocks), as ggml's
/// `dequantize_row_q3_K`: 2 low bits as Q2_K's, less 4 where the value's `hmask` bit is
/// clear, times `d · (scale - 32)` (16 6-bit scales: low nibbles in bytes 0..8, high bit
/// pairs in bytes 8..12).
pub fn dequantize_q3_k(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src
        .chunks_exact(DType::Q3_K.block_bytes())
        .zip(dst.chunks_exact_mut(QK_K))
    {
        let (hmask, qs, scales) = (&blk[..32], &blk[32..96], &blk[96..108]);
        let d = f16_at(blk, 108);
        let mut sc = [0f32; 16];
        for (i, s) in sc.iter_mut().enumerate() {
            let lo = (scales[i % 8] >> (4 * (i / 8))) & 0xf;
            let hi = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
            *s = d * ((lo | (hi << 4)) as i32 - 32) as f32;
        }
        for (y, o) in out.iter_mut().enumerate() {
            let (h, s, l) = (y / 128, (y / 32) % 4, y % 32);
            let lo = ((qs[32 * h + l] >> (2 * s)) & 3) as i32;
            let high = (hmask[l] >> (y / 32)) & 1;
            let q = lo - if high != 0 { 0 } else { 4 };
            *o = sc[y / 16] * q as f32;
        }
    }
}

/// Scale and min `j` (0..8) of a Q4_K/Q5_K super-block's 12 packed bytes (ggml's
/// `get_scale_min_k4`).
#[inline]
pub(super) fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// Dequantizes Q4_K (or, with `high`, Q5_K) bytes into `dst`, as ggml's
/// `dequantize_row_q4_K` / `_q5_K`: value `64c + 32n + l` is nibble `n` of `qs[32c + l]`
/// (plus 16 for Q5_K's bit `y / 32` of `qh[l]`), times `d · scale`, less `dmin · min`,
/// with scale/min pair `y / 32`.
fn dequantize_q45_k(dtype: DType, src: &[u8], dst: &mut [f32]) {
    let high = dtype == DType::Q5_K;
    for (blk, out) in src
        .chunks_exact(dtype.block_bytes())
        .zip(dst.chunks_exact_mut(QK_K))
    {
        let (d, min) = (f16_at(blk, 0), f16_at(blk, 2));
        let scales = &blk[4..16];
        let (qh, qs) = if high {
            (&blk[16..48], &blk[48..176])
        } else {
            (&blk[..0], &blk[16..144])
        };
        for (j, sub) in out.chunks_exact_mut(32).enumerate() {
            let (sc, m) = scale_min_k4(j, scales);
            let d1 = d * sc as f32;
            let m1 = min * m as f32;
            let (c, n) = (j / 2, j % 2);
            for (l, o) in sub.iter_mut().enumerate() {
                let mut q = (qs[32 * c + l] >> (4 * n)) & 0xf;
                if high {
                    q |= ((qh[l] >> j) & 1) << 4;
                }
                *o = d1 * q as f32 - m1;
            }
        }
    }
}

/// Dequantizes Q4_K bytes into `dst` (a whole number of super-blocks).
pub fn dequantize_q4_k(src: &[u8], dst: &mut [f32]) {
    dequantize_q45_k(DType::Q4_K, src, dst)
}

/// Dequantizes Q5_K bytes into `dst` (a whole number of super-blocks).
pub fn dequantize_q5_k(src: &[u8], dst: &mut [f32]) {
    dequantize_q45_k(DType::Q5_K, src, dst)
}

/// Dequantizes Q6_K bytes into `dst` (a whole number of super-blocks), as ggml's
/// `dequantize_row_q6_K`: value `128h + 64n + l` (l < 64) has low nibble `n` of
/// `ql[64h + l]` and high bits `2s..2s+2` of `qh[32h + l % 32]` (`s = (y % 128) / 32`),
/// less 32, times `d · scales[y / 16]` (`i8`).
pub fn dequantize_q6_k(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src
        .chunks_exact(DType::Q6_K.block_bytes())
        .zip(dst.chunks_exact_mut(QK_K))
    {
        let (ql, qh, scales) = (&blk[..128], &blk[128..192], &blk[192..208]);
        let d = f16_at(blk, 208);
        for (y, o) in out.iter_mut().enumerate() {
            let (h, r) = (y / 128, y % 128);
            let (n, l) = (r / 64, r % 64);
            let lo = (ql[64 * h + l] >> (4 * n)) & 0xf;
            let hi = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
            let q = (lo | (hi << 4)) as i32 - 32;
            *o = d * scales[y / 16] as i8 as f32 * q as f32;
        }
    }
}

/// Byte offsets in a block of `dtype` of its f16 scales (`d`, and `dmin` where it has one);
/// none for unquantized types.
fn scale_offsets(dtype: DType) -> &'static [usize] {
    match dtype {
        DType::Q8_0 | DType::Q4_0 | DType::Q5_0 | DType::IQ4_NL => &[0],
        DType::Q4_1 | DType::Q5_1 => &[0, 2],
        DType::Q2_K => &[80, 82],
        DType::Q3_K => &[108],
        DType::Q4_K | DType::Q5_K => &[0, 2],
        DType::Q6_K => &[208],
        DType::F32 | DType::F16 | DType::I32 => &[],
    }
}

/// The first block of `bytes` (whole blocks of `dtype`) whose f16 scale `d` or `dmin` is NaN
/// or infinite, with that scale: such a block dequantizes to NaN or ±Inf everywhere, so a
/// loader refuses it rather than computing a wrong answer later.
pub fn first_non_finite_scale(dtype: DType, bytes: &[u8]) -> Option<(usize, f32)> {
    let offsets = scale_offsets(dtype);
    if offsets.is_empty() {
        return None;
    }
    bytes
        .chunks_exact(dtype.block_bytes())
        .enumerate()
        .find_map(|(i, blk)| {
            offsets.iter().find_map(|&o| {
                let h = u16::from_le_bytes([blk[o], blk[o + 1]]);
                // f16 exponent all ones: infinite or NaN.
                (h & 0x7c00 == 0x7c00).then(|| (i, half::f16::from_bits(h).to_f32()))
            })
        })
}

/// Converts one row of `dtype` bytes into f32 values (`dst.len()` elements).
pub fn row_to_f32(dtype: DType, src: &[u8], dst: &mut [f32]) {
    match dtype {
        DType::F32 => {
            for (o, c) in dst.iter_mut().zip(src.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        DType::F16 => {
            for (o, c) in dst.iter_mut().zip(src.chunks_exact(2)) {
                *o = half::f16::from_le_bytes([c[0], c[1]]).to_f32();
            }
        }
        DType::I32 => {
            for (o, c) in dst.iter_mut().zip(src.chunks_exact(4)) {
                *o = i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32;
            }
        }
        DType::Q8_0 => dequantize_q8_0(src, dst),
        DType::Q4_0 => dequantize_q4_0(src, dst),
        DType::Q4_1 => dequantize_q4_1(src, dst),
        DType::Q5_0 => dequantize_q5_0(src, dst),
        DType::Q5_1 => dequantize_q5_1(src, dst),
        DType::IQ4_NL => dequantize_iq4_nl(src, dst),
        DType::Q2_K => dequantize_q2_k(src, dst),
        DType::Q3_K => dequantize_q3_k(src, dst),
        DType::Q4_K => dequantize_q4_k(src, dst),
        DType::Q5_K => dequantize_q5_k(src, dst),
        DType::Q6_K => dequantize_q6_k(src, dst),
    }
}

/// Whether [`row_from_f32`] can write `dtype` (every dtype: the K-quants through ggml's
/// reference quantizers).
pub fn can_quantize(dtype: DType) -> bool {
    DType::ALL.contains(&dtype)
}

/// Converts f32 values into one row of `dtype` bytes (quantized types: a whole number of
/// blocks, as ggml's reference quantizers write them; the K-quants bit for bit).
pub fn row_from_f32(dtype: DType, src: &[f32], dst: &mut [u8]) -> Result<()> {
    match dtype {
        DType::F32 => {
            for (v, c) in src.iter().zip(dst.chunks_exact_mut(4)) {
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        DType::F16 => {
            for (v, c) in src.iter().zip(dst.chunks_exact_mut(2)) {
                c.copy_from_slice(&half::f16::from_f32(*v).to_le_bytes());
            }
        }
        DType::I32 => {
            for (v, c) in src.iter().zip(dst.chunks_exact_mut(4)) {
                c.copy_from_slice(&(*v as i32).to_le_bytes());
            }
        }
        DType::Q8_0 => quantize_q8_0(src, dst),
        DType::Q4_0 => quantize_q4_0(src, dst),
        DType::Q4_1 => quantize_q4_1(src, dst),
        DType::Q5_0 => quantize_q5_0(src, dst),
        DType::Q5_1 => quantize_q5_1(src, dst),
        DType::IQ4_NL => quantize_iq4_nl(src, dst),
        DType::Q2_K | DType::Q3_K | DType::Q4_K | DType::Q5_K | DType::Q6_K => {
            let bytes = dtype.row_bytes(src.len())?;
            if dst.len() < bytes {
                return Err(Error::DType {
                    op: "quantize",
                    dtype: format!("{dtype:?}"),
                    msg: format!(
                        "{} bytes for {} values (need {bytes})",
                        dst.len(),
                        src.len()
                    ),
                });
            }
            super::kquant::quantize_k(dtype, src, dst)
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The input of the `*_matches_ggml` tests: 64 values, two blocks.
    fn ggml_input() -> Vec<f32> {
        (0..64)
            .map(|i| (i as f32 * 0.7).sin() * ((i % 7) as f32 - 3.0) + 0.01 * i as f32)
            .collect()
    }

    #[test]
    fn q8_0_round_trip_is_close() {
        let src: Vec<f32> = (0..64).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let mut q = vec![0u8; DType::Q8_0.row_bytes(64).unwrap()];
        quantize_q8_0(&src, &mut q);
        let mut back = vec![0f32; 64];
        dequantize_q8_0(&q, &mut back);
        for (a, b) in src.iter().zip(&back) {
            assert!((a - b).abs() < 3.0 / 127.0, "{a} vs {b}");
        }
    }

    #[test]
    fn q4_0_round_trip_is_close() {
        let src: Vec<f32> = (0..64).map(|i| (i as f32 * 0.37).cos() * 2.0).collect();
        let mut q = vec![0u8; DType::Q4_0.row_bytes(64).unwrap()];
        quantize_q4_0(&src, &mut q);
        let mut back = vec![0f32; 64];
        dequantize_q4_0(&q, &mut back);
        for (a, b) in src.iter().zip(&back) {
            assert!((a - b).abs() < 2.0 / 7.0, "{a} vs {b}");
        }
    }

    /// Q4_1 as ggml writes it: the bytes of the `gguf` package's port of
    /// `quantize_row_q4_1_ref` for `q5_0_matches_ggml`'s input (gguf 0.19), and dequantized
    /// within half a step.
    #[test]
    fn q4_1_matches_ggml() {
        let src = ggml_input();
        let mut q = vec![0u8; DType::Q4_1.row_bytes(64).unwrap()];
        quantize_q4_1(&src, &mut q);
        let hex: String = q.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "1c361cc1a77374b7f815608f7a57478a2b2a5a8c153627c1e763a0bc877698ea09458f8d69384a8d"
        );
        let mut back = vec![0f32; 64];
        dequantize_q4_1(&q, &mut back);
        for (blk, (x, y)) in src.chunks(QK).zip(back.chunks(QK)).enumerate() {
            let d = f16_at(&q, blk * 20);
            for (a, b) in x.iter().zip(y) {
                assert!((a - b).abs() <= d * 0.5 + 1e-3, "{a} vs {b} (step {d})");
            }
        }
    }

    /// IQ4_NL as ggml writes it: the bytes ggml's `quantize_iq4_nl` (llama.cpp as vendored by
    /// llama-cpp-python 0.3.36, compiled for x86-64 without FMA) gives for
    /// `q5_0_matches_ggml`'s input (`scripts/iq4nl-reference.sh` prints them); dequantized as
    /// the `gguf` package's `IQ4_NL.dequantize_blocks` (the same values); an all-zero block
    /// as ggml writes it.
    #[test]
    fn iq4_nl_matches_ggml() {
        let src = ggml_input();
        let mut q = vec![0u8; DType::IQ4_NL.row_bytes(64).unwrap()];
        quantize_iq4_nl(&src, &mut q);
        let hex: String = q.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "2da6487c7b3807ea9f6074a8b864d2d4a472e6a5089d3f3267895604f5bb706194c6b471"
        );
        let mut back = vec![0f32; 64];
        dequantize_iq4_nl(&q, &mut back);
        let want: Vec<u32> = "bcc5a000,bfa3a880,bf6aae00,bcc5a000,3e770800,bf1a6500,c02e7740,404414c0,3f974e80,bcc5a000,bcc5a000,3f974e80,400025c0,3f974e80,3f974e80,400025c0,3f974e80,3e770800,3e770800,3fc8b680,404414c0,c0096940,bea09200,3f07de00,3e770800,bf1a6500,bf6aae00,3f07de00,bfd51080,bfd51080,bf1a6500,3e770800,bcbcc000,bfcb7f00,c026a180,3ff4c900,3e6bf000,be995c00,3f01c400,3f908300,3f4e7200,bf602400,403b4680,40195c00,3f908300,3f01c400,3f908300,40195c00,403b4680,be995c00,3fbfb300,3fbfb300,3f01c400,bcbcc000,3f4e7200,403b4680,c026a180,bf602400,3e6bf000,3f01c400,be995c00,bf9c4f00,bf602400,3e6bf000".split(',').map(|h| u32::from_str_radix(h, 16).unwrap()).collect();
        assert_eq!(back.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
        // Each value within the table's widest gap (24 entries' steps) of the input.
        for (blk, (x, y)) in src.chunks(QK).zip(back.chunks(QK)).enumerate() {
            let d = f16_at(&q, blk * 18).abs();
            for (a, b) in x.iter().zip(y) {
                assert!((a - b).abs() <= d * 12.0 + 1e-3, "{a} vs {b} (scale {d})");
            }
        }
        let mut zero = [0u8; 18];
        quantize_iq4_nl(&[0.0; QK], &mut zero);
        assert_eq!(zero[..2], [0, 0]);
        assert!(zero[2..].iter().all(|&b| b == 0x88), "{zero:?}");
    }

    /// IQ4_NL on 256 seeded blocks of eight kinds (Gaussian-like at scales 1e-3 … 300,
    /// outliers ×12, all positive, mostly negative, sparse, constant, zero): the FNV-1a hash
    /// of all their bytes equals that of ggml's `quantize_row_iq4_nl_impl` (7 tries, no
    /// importance matrix: `quantize_iq4_nl`'s call; llama-cpp-python 0.3.36's ggml-quants.c
    /// compiled here for x86-64 without FMA) on the same values, from the same integer
    /// generator and only exact or singly-rounded f32 operations
    /// (`scripts/iq4nl-reference.sh` prints the hash and the first blocks).
    #[test]
    fn iq4_nl_matches_ggml_on_seeded_blocks() {
        let mut s: u64 = 0x1234_5678_8765_4321;
        let mut next = || {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (s >> 40) as i32 - (1 << 23)
        };
        let scales = [1e-3f32, 0.02, 1.0, 7.5, 300.0];
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut first = String::new();
        for b in 0..256 {
            let (kind, sc) = (b % 8, scales[b % 5]);
            let x: [f32; QK] = std::array::from_fn(|_| {
                let r = next();
                let mut v = r as f32 * (sc / 8_388_608.0);
                if kind == 1 && r & 15 == 0 {
                    v *= 12.0;
                }
                match kind {
                    2 => v.abs(),
                    3 => (r >> 12) as f32 * 0.001 - 0.5,
                    4 if r & 7 != 0 => 0.0,
                    5 => sc,
                    6 => 0.0,
                    _ => v,
                }
            });
            let mut out = [0u8; 18];
            quantize_iq4_nl(&x, &mut out);
            for &byte in &out {
                h = (h ^ byte as u64).wrapping_mul(0x100_0000_01b3);
            }
            if b < 2 {
                first += &out.iter().map(|b| format!("{b:02x}")).collect::<String>();
            }
        }
        assert_eq!(
            first,
            "86801d811ffd325082b933fe1c5a797e2fe7c7126089987a668998999788898889aa97a8"
        );
        assert_eq!(h, 0xcd79_31e8_e6a3_19a9);
    }

    /// Q5_1 as ggml writes it: the bytes of the `gguf` package's port of
    /// `quantize_row_q5_1_ref` for `q5_0_matches_ggml`'s input (gguf 0.19), and dequantized
    /// within half a step.
    #[test]
    fn q5_1_matches_ggml() {
        let src = ggml_input();
        let mut q = vec![0u8; DType::Q5_1.row_bytes(64).unwrap()];
        quantize_q5_1(&src, &mut q);
        let hex: String = q.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "e9311cc190f999884ef7f96ef01ac01ef5ae9e044854b508e33127c1c8fddd8ceed6506a1fec20d513890f1bc470840b"
        );
        let mut back = vec![0f32; 64];
        dequantize_q5_1(&q, &mut back);
        for (blk, (x, y)) in src.chunks(QK).zip(back.chunks(QK)).enumerate() {
            let d = f16_at(&q, blk * 24);
            for (a, b) in x.iter().zip(y) {
                assert!((a - b).abs() <= d * 0.5 + 1e-3, "{a} vs {b} (step {d})");
            }
        }
    }

    /// Q5_0 as ggml writes it: the bytes the `gguf` Python package's port of
    /// `quantize_row_q5_0_ref` gives for this input (`gguf.quants.quantize(x, Q5_0)`, gguf
    /// 0.19), and dequantized within half a step; the panels' unpacking is checked against
    /// these bytes elsewhere (tests/runtime.rs).
    #[test]
    fn q5_0_matches_ggml() {
        let src = ggml_input();
        let mut q = vec![0u8; DType::Q5_0.row_bytes(64).unwrap()];
        quantize_q5_0(&src, &mut q);
        let hex: String = q.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "58b26f026076a0f6f5800ec32dd1f9405fea979b3ae641b22702227310179d95df02ce2acb54e0d42b7e5af3"
        );
        let mut back = vec![0f32; 64];
        dequantize_q5_0(&q, &mut back);
        for (blk, (x, y)) in src.chunks(QK).zip(back.chunks(QK)).enumerate() {
            let d = f16_at(&q, blk * 22).abs();
            for (a, b) in x.iter().zip(y) {
                assert!((a - b).abs() <= d * 0.5 + 1e-6, "{a} vs {b} (step {d})");
            }
        }
    }

    /// ggml's K-quant dequantizers as the `gguf` Python package ports them, on random and
    /// edge super-blocks: equal bit for bit. scripts/kquant-vectors.py writes the fixture
    /// into models/vectors/ (scripts/test.sh runs it); without it the test says so and
    /// passes, unless WEBTENSOR_REQUIRE_VECTORS=1.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn k_quants_dequantize_as_ggml_bit_for_bit() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/models/vectors/kquant_vectors.bin"
        );
        let Ok(data) = std::fs::read(path) else {
            let required = std::env::var("WEBTENSOR_REQUIRE_VECTORS").is_ok_and(|v| v == "1");
            assert!(!required, "no {path}: run scripts/kquant-vectors.py");
            println!("skipped: no {path} (run scripts/kquant-vectors.py)");
            return;
        };
        let data: &[u8] = &data;
        let u32_at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
        assert_eq!(&data[..4], b"WTKQ");
        assert_eq!(u32_at(4), 1, "fixture version");
        let types = u32_at(8) as usize;
        let mut at = 12;
        let mut seen = Vec::new();
        for _ in 0..types {
            let (id, block_bytes, blocks) = (u32_at(at), u32_at(at + 4) as usize, u32_at(at + 8));
            at += 12;
            // ggml's type ids 10..14 (the GGUF reader's table, checked in its own tests).
            assert!((10..15).contains(&id), "type id {id}");
            let dtype = DType::K_QUANTS[id as usize - 10];
            assert_eq!(dtype.block_bytes(), block_bytes, "{dtype:?}");
            let n = blocks as usize * QK_K;
            let bytes = &data[at..at + blocks as usize * block_bytes];
            at += bytes.len();
            let want: Vec<u32> = data[at..at + 4 * n]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            at += 4 * n;
            let mut got = vec![0f32; n];
            row_to_f32(dtype, bytes, &mut got);
            let bad: Vec<usize> = (0..n).filter(|&i| got[i].to_bits() != want[i]).collect();
            assert!(
                bad.is_empty(),
                "{dtype:?}: {} of {n} values differ, first at {} (block {}): {} vs {}",
                bad.len(),
                bad[0],
                bad[0] / QK_K,
                got[bad[0]],
                f32::from_bits(want[bad[0]])
            );
            // Row by row too (each block alone), as kernels dequantize panels.
            for (b, blk) in bytes.chunks_exact(block_bytes).enumerate() {
                let mut one = [0f32; QK_K];
                row_to_f32(dtype, blk, &mut one);
                assert!(one
                    .iter()
                    .zip(&want[b * QK_K..])
                    .all(|(g, w)| g.to_bits() == *w));
            }
            seen.push((dtype, blocks));
        }
        assert_eq!(at, data.len(), "trailing bytes in the fixture");
        let types: Vec<DType> = seen.iter().map(|s| s.0).collect();
        assert_eq!(types, DType::K_QUANTS);
        assert!(seen.iter().all(|s| s.1 >= 29), "{seen:?}");
    }

    #[test]
    fn k_quant_block_layouts_are_ggml_s() {
        let sizes: Vec<usize> = DType::K_QUANTS.iter().map(|d| d.block_bytes()).collect();
        assert_eq!(sizes, [84, 110, 144, 176, 210]);
        for d in DType::K_QUANTS {
            assert_eq!(d.block_size(), 256);
            assert!(d.is_quantized() && d.is_k_quant() && can_quantize(d));
            assert!(d.row_bytes(128).is_err());
            assert!(row_from_f32(d, &[0.0; 128], &mut [0; 256]).is_err());
            let err = row_from_f32(d, &[0.0; 256], &mut [0; 16]).unwrap_err();
            assert!(err.to_string().contains("need"), "{err}");
            row_from_f32(d, &[0.0; 256], &mut vec![0; d.block_bytes()]).unwrap();
        }
    }

    #[test]
    fn quantized_rows_must_be_whole_blocks() {
        assert!(DType::Q4_0.row_bytes(33).is_err());
        assert_eq!(DType::Q4_0.row_bytes(64).unwrap(), 36);
        assert_eq!(DType::F16.row_bytes(3).unwrap(), 6);
    }
}
