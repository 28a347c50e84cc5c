//! Element types, including ggml's block-quantized formats (same byte layout as GGUF), as one
//! table: each dtype is declared once in [`dtypes!`]'s invocation below (its name, ggml id,
//! block layout, format family, f16 scale offsets, (de)quantizer, and llama.cpp's fallback
//! for rows that are not whole blocks), and every fact about a dtype that is not a device's
//! is read from its row: GGUF ids, row sizes, the builder's checks, the conformance suite's
//! cases. What the devices do with a dtype is an exhaustive `match` in each device (the CPU's
//! panel kind, the WebGPU shader's block reader), so a new row is a build error there until
//! its kernels exist. The README's "Adding a dtype" walks through it.
//!
//! The codecs live by format: [`blocks`] (32-value blocks) and [`kquant`] (256-value
//! super-blocks); they know nothing of the table.

mod blocks;
mod kquant;

pub use blocks::{q5_0_values, set_q5_0_values, IQ4_NL_VALUES, QK};
pub use kquant::{use_more_bits, QK_K};

use crate::error::{Error, Result};

/// How a dtype's values are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// One value per element (f32, f16, i32).
    Plain,
    /// ggml's 32-value blocks with an f16 scale (Q8_0, Q4_0, …, IQ4_NL).
    Block,
    /// ggml's K-quants: 256-value super-blocks with packed sub-block scales.
    KQuant,
}

/// One dtype's row of the table: everything the graph layer knows about it.
#[derive(Clone, Copy, Debug)]
pub struct DTypeInfo {
    /// The dtype this row describes.
    pub dtype: DType,
    /// Short lower-case name, as ggml and GGUF tools write it.
    pub name: &'static str,
    /// ggml's `ggml_type` id (the GGUF tensor type).
    pub ggml_id: u32,
    /// Values one block holds (1 for plain types).
    pub block_size: usize,
    /// Bytes of one block.
    pub block_bytes: usize,
    /// How the values are stored.
    pub format: Format,
    /// Whether blocks hold an offset besides the scale (`d · q + m`: Q4_1, Q5_1, and the
    /// K-quants with `dmin`).
    pub has_min: bool,
    /// Byte offsets in a block of its f16 scales (`d`, and `dmin` where it has one): a NaN
    /// or infinite one is refused at load ([`first_non_finite_scale`]).
    pub scales: &'static [usize],
    /// Whether a weight (a matmul's or get_rows' `a`) may have this dtype.
    pub weight: bool,
    /// Whether the graph's `cpy` may convert f32/f16 into it (devices quantize it).
    pub cpy_target: bool,
    /// llama.cpp's `tensor_type_fallback`: what its quantization mixes write instead for rows
    /// that are not whole blocks (`None`: the dtype itself, or refuse).
    pub fallback: Option<DType>,
    /// Decodes whole blocks into f32 values.
    pub to_f32: fn(&[u8], &mut [f32]),
    /// Encodes f32 values (whole blocks) as ggml's reference quantizer does.
    pub from_f32: fn(&[f32], &mut [u8]),
}

/// Declares [`DType`] and its table from one list of rows: a row is a variant (with its doc)
/// and the fields of its [`DTypeInfo`], all of them (a missing field is a build error).
macro_rules! dtypes {
    ($( $(#[$attr:meta])* $v:ident { $($field:ident: $val:expr),+ $(,)? } )+) => {
        /// The element type of a tensor.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum DType {
            $( $(#[$attr])* $v, )+
        }

        impl DType {
            /// All dtypes, in the table's order.
            pub const ALL: [DType; [$(DType::$v),+].len()] = [$(DType::$v),+];
        }

        /// The table, in [`DType::ALL`]'s order (a dtype's row is `TABLE[dtype as usize]`).
        const TABLE: [DTypeInfo; DType::ALL.len()] = [
            $( DTypeInfo { dtype: DType::$v, $($field: $val),+ }, )+
        ];
    };
}

dtypes! {
    /// 32-bit float.
    F32 {
        name: "f32", ggml_id: 0, block_size: 1, block_bytes: 4, format: Format::Plain,
        has_min: false, scales: &[], weight: true, cpy_target: true, fallback: None,
        to_f32: f32_to_f32, from_f32: f32_from_f32,
    }
    /// IEEE half float.
    F16 {
        name: "f16", ggml_id: 1, block_size: 1, block_bytes: 2, format: Format::Plain,
        has_min: false, scales: &[], weight: true, cpy_target: true, fallback: None,
        to_f32: f16_to_f32, from_f32: f16_from_f32,
    }
    /// 32-bit signed integer (indices, positions).
    I32 {
        name: "i32", ggml_id: 26, block_size: 1, block_bytes: 4, format: Format::Plain,
        has_min: false, scales: &[], weight: false, cpy_target: false, fallback: None,
        to_f32: i32_to_f32, from_f32: i32_from_f32,
    }
    /// ggml Q8_0: blocks of 32 values, an f16 scale then 32 `i8` (34 bytes).
    Q8_0 {
        name: "q8_0", ggml_id: 8, block_size: QK, block_bytes: blocks::Q8_0_BYTES,
        format: Format::Block, has_min: false, scales: &[0], weight: true, cpy_target: true,
        fallback: None,
        to_f32: blocks::dequantize_q8_0, from_f32: blocks::quantize_q8_0,
    }
    /// ggml Q4_0: blocks of 32 values, an f16 scale then 16 bytes of nibbles (18 bytes).
    Q4_0 {
        name: "q4_0", ggml_id: 2, block_size: QK, block_bytes: blocks::Q4_0_BYTES,
        format: Format::Block, has_min: false, scales: &[0], weight: true, cpy_target: true,
        fallback: None,
        to_f32: blocks::dequantize_q4_0, from_f32: blocks::quantize_q4_0,
    }
    /// ggml Q4_1: blocks of 32 values, an f16 scale `d` and min `m` then 16 bytes of nibbles
    /// (20 bytes); values 0..=15 times `d` plus `m`. Older GGUF files hold it.
    Q4_1 {
        name: "q4_1", ggml_id: 3, block_size: QK, block_bytes: blocks::Q4_1_BYTES,
        format: Format::Block, has_min: true, scales: &[0, 2], weight: true,
        cpy_target: false, fallback: None,
        to_f32: blocks::dequantize_q4_1, from_f32: blocks::quantize_q4_1,
    }
    /// ggml Q5_0: blocks of 32 values, an f16 scale, the values' fifth bits (4 bytes) then 16
    /// bytes of low nibbles (22 bytes); values 0..=31 less 16. llama.cpp's Q4_K_M mix writes it
    /// for rows that are not whole K-quant super-blocks (Qwen2.5-0.5B's 896).
    Q5_0 {
        name: "q5_0", ggml_id: 6, block_size: QK, block_bytes: blocks::Q5_0_BYTES,
        format: Format::Block, has_min: false, scales: &[0], weight: true, cpy_target: false,
        fallback: None,
        to_f32: blocks::dequantize_q5_0, from_f32: blocks::quantize_q5_0,
    }
    /// ggml Q5_1: blocks of 32 values, an f16 scale `d` and min `m`, the values' fifth bits
    /// (4 bytes) then 16 bytes of low nibbles (24 bytes); values 0..=31 times `d` plus `m`.
    /// llama.cpp's Q5_K_M mix writes it for rows that are not whole K-quant super-blocks.
    Q5_1 {
        name: "q5_1", ggml_id: 7, block_size: QK, block_bytes: blocks::Q5_1_BYTES,
        format: Format::Block, has_min: true, scales: &[0, 2], weight: true,
        cpy_target: false, fallback: None,
        to_f32: blocks::dequantize_q5_1, from_f32: blocks::quantize_q5_1,
    }
    /// ggml IQ4_NL: blocks of 32 values, an f16 scale `d` then 16 bytes of nibbles (18
    /// bytes), Q4_0's layout; each nibble indexes a fixed non-linear table of 16 `i8`
    /// ([`IQ4_NL_VALUES`]), the value that entry times `d`. llama.cpp's Q2_K / Q3_K mixes
    /// write it for rows that are not whole K-quant super-blocks (Qwen2.5-0.5B's 896).
    #[allow(non_camel_case_types)]
    IQ4_NL {
        name: "iq4_nl", ggml_id: 20, block_size: QK, block_bytes: blocks::IQ4_NL_BYTES,
        format: Format::Block, has_min: false, scales: &[0], weight: true, cpy_target: false,
        fallback: None,
        to_f32: blocks::dequantize_iq4_nl, from_f32: blocks::quantize_iq4_nl,
    }
    /// ggml Q2_K: super-blocks of 256 values, 16 4-bit scale/min pairs, 2-bit values, f16
    /// `d` and `dmin` (84 bytes).
    #[allow(non_camel_case_types)]
    Q2_K {
        name: "q2_k", ggml_id: 10, block_size: QK_K, block_bytes: kquant::Q2_K_BYTES,
        format: Format::KQuant, has_min: true, scales: &[80, 82], weight: true,
        cpy_target: false, fallback: Some(DType::IQ4_NL),
        to_f32: kquant::dequantize_q2_k, from_f32: kquant::quantize_q2_k,
    }
    /// ggml Q3_K: super-blocks of 256 values, a high-bit mask, 2-bit low values, 16 6-bit
    /// scales packed in 12 bytes, f16 `d` (110 bytes).
    #[allow(non_camel_case_types)]
    Q3_K {
        name: "q3_k", ggml_id: 11, block_size: QK_K, block_bytes: kquant::Q3_K_BYTES,
        format: Format::KQuant, has_min: false, scales: &[108], weight: true,
        cpy_target: false, fallback: Some(DType::IQ4_NL),
        to_f32: kquant::dequantize_q3_k, from_f32: kquant::quantize_q3_k,
    }
    /// ggml Q4_K: super-blocks of 256 values, f16 `d` and `dmin`, 8 6-bit scale/min pairs
    /// packed in 12 bytes, 4-bit values (144 bytes).
    #[allow(non_camel_case_types)]
    Q4_K {
        name: "q4_k", ggml_id: 12, block_size: QK_K, block_bytes: kquant::Q4_K_BYTES,
        format: Format::KQuant, has_min: true, scales: &[0, 2], weight: true,
        cpy_target: false, fallback: Some(DType::Q5_0),
        to_f32: kquant::dequantize_q4_k, from_f32: kquant::quantize_q4_k,
    }
    /// ggml Q5_K: Q4_K's header, a high-bit plane of 32 bytes, 4-bit low values (176 bytes).
    #[allow(non_camel_case_types)]
    Q5_K {
        name: "q5_k", ggml_id: 13, block_size: QK_K, block_bytes: kquant::Q5_K_BYTES,
        format: Format::KQuant, has_min: true, scales: &[0, 2], weight: true,
        cpy_target: false, fallback: Some(DType::Q5_1),
        to_f32: kquant::dequantize_q5_k, from_f32: kquant::quantize_q5_k,
    }
    /// ggml Q6_K: super-blocks of 256 values, 4-bit low values, 2-bit high values, 16 `i8`
    /// scales, f16 `d` (210 bytes).
    #[allow(non_camel_case_types)]
    Q6_K {
        name: "q6_k", ggml_id: 14, block_size: QK_K, block_bytes: kquant::Q6_K_BYTES,
        format: Format::KQuant, has_min: false, scales: &[208], weight: true,
        cpy_target: false, fallback: Some(DType::Q8_0),
        to_f32: kquant::dequantize_q6_k, from_f32: kquant::quantize_q6_k,
    }
}

/// The table's rows, for lookups at run time (`TABLE` is a `const`: each use a copy).
static INFO: [DTypeInfo; DType::ALL.len()] = TABLE;

/// How many rows satisfy `|info| pred` (a `const`: an array length).
macro_rules! count {
    (|$i:ident| $pred:expr) => {{
        let (mut n, mut k) = (0, 0);
        while k < TABLE.len() {
            let $i = &TABLE[k];
            if $pred {
                n += 1;
            }
            k += 1;
        }
        n
    }};
}

/// The dtypes whose rows satisfy `|info| pred`, in the table's order, as an array of
/// [`count!`]`(pred)` dtypes.
macro_rules! select {
    (|$i:ident| $pred:expr) => {{
        let mut out = [DType::F32; count!(|$i| $pred)];
        let (mut n, mut k) = (0, 0);
        while k < TABLE.len() {
            let $i = &TABLE[k];
            if $pred {
                out[n] = $i.dtype;
                n += 1;
            }
            k += 1;
        }
        out
    }};
}

// Each row is at its dtype's index (what `DType::info` relies on).
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(TABLE[i].dtype as usize == i);
        i += 1;
    }
};

impl DType {
    /// The K-quant dtypes (256-value super-blocks), in the table's order.
    pub const K_QUANTS: [DType; count!(|i| matches!(i.format, Format::KQuant))] =
        select!(|i| matches!(i.format, Format::KQuant));

    /// The 32-value block dtypes, in the table's order.
    pub const BLOCK_QUANTS: [DType; count!(|i| matches!(i.format, Format::Block))] =
        select!(|i| matches!(i.format, Format::Block));

    /// The dtypes a weight (a matmul's or get_rows' `a`) may have.
    pub const WEIGHTS: &'static [DType] = &select!(|i| i.weight);

    /// This dtype's row of the table.
    pub fn info(self) -> &'static DTypeInfo {
        &INFO[self as usize]
    }

    /// The dtype of a ggml type id (a GGUF tensor type), if webtensor has it.
    pub fn from_ggml(id: u32) -> Option<DType> {
        INFO.iter().find(|i| i.ggml_id == id).map(|i| i.dtype)
    }

    /// The dtype named `name` ([`DType::name`], any case).
    pub fn from_name(name: &str) -> Option<DType> {
        INFO.iter()
            .find(|i| i.name.eq_ignore_ascii_case(name))
            .map(|i| i.dtype)
    }

    /// ggml's type id (the GGUF tensor type).
    pub fn ggml_id(self) -> u32 {
        self.info().ggml_id
    }

    /// Number of elements one block holds (1 for plain types).
    pub fn block_size(self) -> usize {
        self.info().block_size
    }

    /// Bytes of one block.
    pub fn block_bytes(self) -> usize {
        self.info().block_bytes
    }

    /// How the values are stored.
    pub fn format(self) -> Format {
        self.info().format
    }

    /// Whether this is one of ggml's K-quants (256-value super-blocks).
    pub fn is_k_quant(self) -> bool {
        self.format() == Format::KQuant
    }

    /// Whether this is a block-quantized type.
    pub fn is_quantized(self) -> bool {
        self.format() != Format::Plain
    }

    /// Short lower-case name (as in GGUF / ggml).
    pub fn name(self) -> &'static str {
        self.info().name
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
}

impl std::fmt::Display for DType {
    /// The short lower-case name ([`DType::name`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// llama.cpp's `tensor_type_fallback` for the K-quants its mixes use: `want` for rows of
/// `ne0` values when they are whole blocks, else the table's fallback (Q2_K and Q3_K →
/// IQ4_NL, Q4_K → Q5_0, Q5_K → Q5_1 and Q6_K → Q8_0; other types as they are). (IQ4_NL is
/// what the llama.cpp builds that wrote the Q2_K / Q3_K_M files on the model hubs pick; later
/// builds, such as the one llama-cpp-python 0.3.36 vendors, write Q4_0 there.)
pub fn k_quant_fallback(want: DType, ne0: usize) -> DType {
    match want.info().fallback {
        Some(other) if !ne0.is_multiple_of(want.block_size()) => other,
        _ => want,
    }
}

/// The first block of `bytes` (whole blocks of `dtype`) whose f16 scale `d` or `dmin` is NaN
/// or infinite, with that scale: such a block dequantizes to NaN or ±Inf everywhere, so a
/// loader refuses it rather than computing a wrong answer later.
pub fn first_non_finite_scale(dtype: DType, bytes: &[u8]) -> Option<(usize, f32)> {
    let offsets = dtype.info().scales;
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
    (dtype.info().to_f32)(src, dst)
}

/// Whether [`row_from_f32`] can write `dtype` (every dtype: each row has a quantizer, the
/// K-quants ggml's reference ones).
pub fn can_quantize(dtype: DType) -> bool {
    DType::ALL.contains(&dtype)
}

/// Converts f32 values into one row of `dtype` bytes (quantized types: a whole number of
/// blocks, as ggml's reference quantizers write them; the K-quants bit for bit). `dst` must
/// hold the row's bytes.
pub fn row_from_f32(dtype: DType, src: &[f32], dst: &mut [u8]) -> Result<()> {
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
    (dtype.info().from_f32)(src, &mut dst[..bytes]);
    Ok(())
}

fn f32_to_f32(src: &[u8], dst: &mut [f32]) {
    for (o, c) in dst.iter_mut().zip(src.chunks_exact(4)) {
        *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
}

fn f32_from_f32(src: &[f32], dst: &mut [u8]) {
    for (v, c) in src.iter().zip(dst.chunks_exact_mut(4)) {
        c.copy_from_slice(&v.to_le_bytes());
    }
}

fn f16_to_f32(src: &[u8], dst: &mut [f32]) {
    for (o, c) in dst.iter_mut().zip(src.chunks_exact(2)) {
        *o = half::f16::from_le_bytes([c[0], c[1]]).to_f32();
    }
}

fn f16_from_f32(src: &[f32], dst: &mut [u8]) {
    for (v, c) in src.iter().zip(dst.chunks_exact_mut(2)) {
        c.copy_from_slice(&half::f16::from_f32(*v).to_le_bytes());
    }
}

fn i32_to_f32(src: &[u8], dst: &mut [f32]) {
    for (o, c) in dst.iter_mut().zip(src.chunks_exact(4)) {
        *o = i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32;
    }
}

fn i32_from_f32(src: &[f32], dst: &mut [u8]) {
    for (v, c) in src.iter().zip(dst.chunks_exact_mut(4)) {
        c.copy_from_slice(&(*v as i32).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::blocks::*;
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

    /// The table against ggml's own (`enum ggml_type` in ggml.h and `type_traits` in ggml.c:
    /// name, id, values a block, bytes a block), written out here independently of it.
    #[test]
    fn table_matches_ggml_type_traits() {
        let ggml: [(&str, u32, usize, usize); 14] = [
            ("f32", 0, 1, 4),
            ("f16", 1, 1, 2),
            ("q4_0", 2, 32, 18),
            ("q4_1", 3, 32, 20),
            ("q5_0", 6, 32, 22),
            ("q5_1", 7, 32, 24),
            ("q8_0", 8, 32, 34),
            ("q2_k", 10, 256, 84),
            ("q3_k", 11, 256, 110),
            ("q4_k", 12, 256, 144),
            ("q5_k", 13, 256, 176),
            ("q6_k", 14, 256, 210),
            ("iq4_nl", 20, 32, 18),
            ("i32", 26, 1, 4),
        ];
        assert_eq!(ggml.len(), DType::ALL.len(), "a dtype without a row here");
        for (name, id, block, bytes) in ggml {
            let d = DType::from_ggml(id).unwrap_or_else(|| panic!("ggml type {id} ({name})"));
            assert_eq!((d.name(), d.ggml_id()), (name, id));
            assert_eq!((d.block_size(), d.block_bytes()), (block, bytes), "{d}");
            assert_eq!(DType::from_name(&name.to_uppercase()), Some(d));
            assert_eq!(d.is_k_quant(), block == 256, "{d}");
            assert_eq!(d.is_quantized(), block > 1, "{d}");
            assert_eq!(d.info().dtype, d);
        }
        // ggml types webtensor does not have.
        for id in [4, 5, 9, 15, 16, 23, 24, 30, 1000] {
            assert_eq!(DType::from_ggml(id), None, "{id}");
        }
        assert_eq!(DType::from_name("q8_1"), None);
        assert_eq!(
            DType::K_QUANTS,
            [
                DType::Q2_K,
                DType::Q3_K,
                DType::Q4_K,
                DType::Q5_K,
                DType::Q6_K
            ]
        );
        assert!(!DType::WEIGHTS.contains(&DType::I32));
        assert_eq!(DType::WEIGHTS.len(), DType::ALL.len() - 1);
    }

    /// Each f16 scale offset of a row lies in its block, and a block whose scale there is
    /// infinite is found.
    #[test]
    fn scale_offsets_are_found() {
        for d in DType::ALL.into_iter().filter(|d| d.is_quantized()) {
            assert!(!d.info().scales.is_empty(), "{d}");
            for &at in d.info().scales {
                assert!(at + 2 <= d.block_bytes(), "{d}");
                let mut bytes = vec![0u8; 3 * d.block_bytes()];
                assert_eq!(first_non_finite_scale(d, &bytes), None);
                let o = d.block_bytes() + at;
                bytes[o..o + 2].copy_from_slice(&half::f16::INFINITY.to_le_bytes());
                assert_eq!(
                    first_non_finite_scale(d, &bytes),
                    Some((1, f32::INFINITY)),
                    "{d}"
                );
            }
        }
    }

    /// Every row's codec: values quantized and back stay within a step of the format
    /// (plain types exactly, f16 to its precision), and the row checks refuse short
    /// buffers and partial blocks.
    #[test]
    fn every_dtype_round_trips() {
        let n = 512;
        let src: Vec<f32> = (0..n)
            .map(|i| ((i as f32 * 0.37).sin() * 2.0 * 64.0).round() / 64.0)
            .collect();
        for d in DType::ALL {
            let bytes = d.row_bytes(n).unwrap();
            let mut q = vec![0u8; bytes];
            row_from_f32(d, &src, &mut q).unwrap();
            let mut back = vec![0f32; n];
            row_to_f32(d, &q, &mut back);
            let tol = match d {
                DType::F32 | DType::F16 => 0.0,
                DType::I32 => 1.0,
                // 2-bit and 3-bit values over a range of 4: about half a step.
                DType::Q2_K => 0.75,
                DType::Q3_K => 0.6,
                // A 4-bit step over ±2 (Q4_0 clamps the signed max's negation by one step);
                // a wrong codec errs by about the values' size.
                _ => 0.26,
            };
            let worst = src
                .iter()
                .zip(&back)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(worst <= tol, "{d}: worst error {worst} > {tol}");
            assert!(
                row_from_f32(d, &src, &mut vec![0u8; bytes - 1]).is_err(),
                "{d}"
            );
            if d.is_quantized() {
                assert!(row_from_f32(d, &src[..n - 1], &mut q).is_err(), "{d}");
            }
        }
    }

    #[test]
    fn fallbacks_are_llama_cpp_s() {
        use DType::*;
        for (want, got) in [
            (Q2_K, IQ4_NL),
            (Q3_K, IQ4_NL),
            (Q4_K, Q5_0),
            (Q5_K, Q5_1),
            (Q6_K, Q8_0),
        ] {
            assert_eq!(k_quant_fallback(want, 896), got);
            assert_eq!(k_quant_fallback(want, 1024), want);
        }
        assert_eq!(k_quant_fallback(Q8_0, 896), Q8_0);
        assert_eq!(k_quant_fallback(F32, 7), F32);
    }

    #[test]
    fn quantized_rows_must_be_whole_blocks() {
        assert!(DType::Q4_0.row_bytes(33).is_err());
        assert_eq!(DType::Q4_0.row_bytes(64).unwrap(), 36);
        assert_eq!(DType::F16.row_bytes(3).unwrap(), 6);
    }
}
