//! The panels' encoding of each dtype ([`PanelKind`]): how its values are held (bias, mins,
//! bits above the nibbles, scales per row) as `const fn`s of a kind byte, so that each kind's
//! kernels are functions of their own (a const generic argument folds them to constants).

use crate::backends::cpu::kernels::simd::slot;
use crate::graph::{DType, QK};

/// Weight rows per group: one i8x16 holds 4 values of each, so a dot instruction with one
/// activation slice (4 values, repeated) yields 4 rows' partial dots in its 4 lanes.
pub(super) const GROUP: usize = 4;

/// Bytes of one group's block of Q8_0 values: 4 rows × 32 values.
pub(super) const GROUP_BLOCK: usize = GROUP * QK;

/// Bytes of one group's block of Q4_0 nibbles: 4 rows × 32 values / 2.
pub(super) const GROUP_BLOCK_Q4: usize = GROUP * QK / 2;

/// Bytes of one group's block of Q5_0 values: Q4_0's nibbles, then a 16-byte plane of the
/// values' fifth bits (see [`Int8Panels`]).
pub(super) const GROUP_BLOCK_Q5: usize = GROUP_BLOCK_Q4 + High::Fifth.bytes();

/// Bytes of one group's block of Q6_K values: Q4_0's nibbles, then two 16-byte planes of
/// their bits 4–5 (see [`High`]).
pub(super) const GROUP_BLOCK_Q6: usize = GROUP_BLOCK_Q4 + High::Crumbs.bytes();

/// Bytes of one group's block of K-quant integer scales: two per row (see [`Int8Panels`]).
pub(super) const GROUP_KSCALES: usize = 2 * GROUP;

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
    pub(super) fn bias(self) -> i32 {
        kind_bias(self as u8)
    }

    /// Whether each block has a min (Q5_1, Q4_1), kept in the sums' place.
    pub(super) fn has_min(self) -> bool {
        kind_has_min(self as u8)
    }

    /// Whether these are a K-quant's panels (integer scales, `d` per super-block).
    pub(super) fn is_k_quant(self) -> bool {
        self.d_per_row() != 0
    }

    /// The f32 scales per row and super-block of the K-quants (`d`, Q4_K's `dmin`); 0 for
    /// the others (an f32 scale per row and block).
    pub(super) fn d_per_row(self) -> usize {
        kind_d_per_row(self as u8)
    }

    /// How the values keep their bits above the nibbles (Q8_0: as bytes, `None`).
    pub(super) fn high(self) -> High {
        kind_high(self as u8)
    }

    /// Bytes of one group's block of values.
    pub(super) fn group_block(self) -> usize {
        block_bytes(self as u8)
    }
}

/// How a panel block's values keep their bits above the nibbles (after the nibbles).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum High {
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
    pub(super) const fn width(self) -> u32 {
        match self {
            Self::None => 0,
            Self::Fifth => 1,
            Self::Crumbs => 2,
        }
    }

    /// Bytes of the planes.
    pub(super) const fn bytes(self) -> usize {
        16 * self.width() as usize
    }

    /// Where row `r`'s value `i` (0..32) of a block has its high bits: the plane's byte
    /// (after the nibbles), the bit there, the value's bit it is first.
    pub(super) fn at(self, r: usize, i: usize) -> (usize, u32, u32) {
        let (half, v, j) = (i / 16, (i % 16 / 4) as u32, slot(r, i % 4));
        match self {
            Self::None => (0, 0, 4),
            Self::Fifth => (j, v + 4 * half as u32, 4),
            Self::Crumbs => (16 * half + j, 2 * v, 4),
        }
    }
}

/// Weight groups per call of [`int8_block`]: a run long enough that a call's overhead is
/// nothing (2 K multiply-adds per activation row and k), short enough that a matmul makes
/// many calls.
pub(super) const GROUP_RUN: usize = 16;

/// [`PanelKind`]s (their discriminants) as const generic arguments: each kind's kernels are
/// functions of their own (see [`int8_block`]).
pub(super) const KIND_Q8: u8 = 0;

pub(super) const KIND_Q5: u8 = 1;

pub(super) const KIND_Q4: u8 = 2;

/// Q5_0 panels' values as bytes, Q8_0's layout (see [`int8_tiled`]).
pub(super) const KIND_Q5_BYTES: u8 = 3;

pub(super) const KIND_Q4K: u8 = 4;

pub(super) const KIND_Q6K: u8 = 5;

/// Q6_K panels' values as bytes, Q8_0's layout (see [`int8_tiled`]).
pub(super) const KIND_Q6K_BYTES: u8 = 6;

/// Q4_0 panels' values as bytes, Q8_0's layout, for the GEMM (see [`int8_tiled`]).
pub(super) const KIND_Q4_BYTES: u8 = 7;

pub(super) const KIND_Q5K: u8 = 8;

/// Q5_K panels' values as bytes, Q8_0's layout (see [`int8_tiled`]).
pub(super) const KIND_Q5K_BYTES: u8 = 9;

pub(super) const KIND_Q3K: u8 = 10;

/// Q3_K panels' values as bytes, Q8_0's layout (see [`int8_tiled`]).
pub(super) const KIND_Q3K_BYTES: u8 = 11;

pub(super) const KIND_Q51: u8 = 12;

/// Q5_1 panels' values as bytes, Q8_0's layout (see [`int8_tiled`]).
pub(super) const KIND_Q51_BYTES: u8 = 13;

pub(super) const KIND_Q41: u8 = 14;

/// Q4_1 panels' values as bytes, Q8_0's layout (see [`int8_tiled`]).
pub(super) const KIND_Q41_BYTES: u8 = 15;

/// (IQ4_NL's table entries as bytes are Q8_0's i8s with its sums: the GEMM runs `KIND_Q8`.)
pub(super) const KIND_IQ4NL: u8 = 16;

// The per-kind properties are `const fn`s of the kind byte, so a kernel's const generic
// argument folds them to constants and `PanelKind`'s methods read the same table.

/// [`PanelKind::bias`] of kind `k` (Q5_0's as bytes too).
pub(super) const fn kind_bias(k: u8) -> i32 {
    match k {
        KIND_Q5 | KIND_Q5_BYTES => 16,
        KIND_Q4 | KIND_Q4_BYTES => 8,
        _ => 0,
    }
}

/// [`PanelKind::has_min`] of kind `k` (as bytes too).
pub(super) const fn kind_has_min(k: u8) -> bool {
    matches!(k, KIND_Q51 | KIND_Q51_BYTES | KIND_Q41 | KIND_Q41_BYTES)
}

/// The kind whose tiles read kind `k`'s values as bytes in the GEMM ([`int8_tiled`]); `k`
/// itself where its tiles read the panels as they are (Q8_0's bytes, Q4_K's nibbles).
pub(super) const fn bytes_kind(k: u8) -> u8 {
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
pub(super) const fn kind_d_per_row(k: u8) -> usize {
    match k {
        KIND_Q4K | KIND_Q5K | KIND_Q5K_BYTES => 2,
        KIND_Q3K | KIND_Q3K_BYTES | KIND_Q6K | KIND_Q6K_BYTES => 1,
        _ => 0,
    }
}

/// What the K-quants with a scale per half (Q3_K, Q6_K) store their values above the
/// weight's by: `offset ·` each activation half's sum starts its accumulator.
pub(super) const fn kind_offset(k: u8) -> i32 {
    match k {
        KIND_Q6K | KIND_Q6K_BYTES => 32,
        KIND_Q3K | KIND_Q3K_BYTES => 4,
        _ => 0,
    }
}

/// [`PanelKind::high`] of kind `k`.
pub(super) const fn kind_high(k: u8) -> High {
    match k {
        KIND_Q5 | KIND_Q5K | KIND_Q51 => High::Fifth,
        KIND_Q6K => High::Crumbs,
        _ => High::None,
    }
}

/// Bytes of one group's block of values as the kernels of kind `K` read them.
pub(super) const fn block_bytes(k: u8) -> usize {
    match k {
        KIND_Q4 | KIND_Q41 | KIND_IQ4NL | KIND_Q4K | KIND_Q3K => GROUP_BLOCK_Q4,
        KIND_Q5 | KIND_Q5K | KIND_Q51 => GROUP_BLOCK_Q5,
        KIND_Q6K => GROUP_BLOCK_Q6,
        _ => GROUP_BLOCK,
    }
}
