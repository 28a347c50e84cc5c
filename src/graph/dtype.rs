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
}

/// Values per quantized block (ggml's QK8_0 / QK4_0).
pub const QK: usize = 32;

impl DType {
    /// All dtypes, for tables and tests.
    pub const ALL: [DType; 5] = [DType::F32, DType::F16, DType::I32, DType::Q8_0, DType::Q4_0];

    /// Number of elements one block holds (1 for plain types).
    pub fn block_size(self) -> usize {
        match self {
            DType::Q8_0 | DType::Q4_0 => QK,
            _ => 1,
        }
    }

    /// Bytes of one block.
    pub fn block_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F16 => 2,
            DType::Q8_0 => 2 + QK,
            DType::Q4_0 => 2 + QK / 2,
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
        let mut amax = 0f32;
        let mut max = 0f32;
        for &v in blk {
            if v.abs() > amax {
                amax = v.abs();
                max = v;
            }
        }
        let d = max / -8.0;
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
        let d = half::f16::from_le_bytes([blk[0], blk[1]]).to_f32();
        for j in 0..QK / 2 {
            let b = blk[2 + j];
            out[j] = ((b & 0x0f) as i32 - 8) as f32 * d;
            out[j + QK / 2] = ((b >> 4) as i32 - 8) as f32 * d;
        }
    }
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
    }
}

/// Converts f32 values into one row of `dtype` bytes.
pub fn row_from_f32(dtype: DType, src: &[f32], dst: &mut [u8]) {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn quantized_rows_must_be_whole_blocks() {
        assert!(DType::Q4_0.row_bytes(33).is_err());
        assert_eq!(DType::Q4_0.row_bytes(64).unwrap(), 36);
        assert_eq!(DType::F16.row_bytes(3).unwrap(), 6);
    }
}
