//! The lane types on wasm32 with `simd128`: `core::arch::wasm32` (relaxed SIMD's
//! instructions where the build enables `relaxed-simd`).

use core::arch::wasm32::*;
use core::ops::{Add, Div, Mul, Sub};

/// Four f32 lanes.
#[derive(Clone, Copy)]
pub struct F32x4(v128);

impl F32x4 {
    /// `self + a * b`: one fused multiply-add with relaxed SIMD (`+relaxed-simd`, opt-in;
    /// rounding may then differ in the last bit), a multiply and an add otherwise.
    #[inline(always)]
    pub fn mul_add(self, a: Self, b: Self) -> Self {
        #[cfg(target_feature = "relaxed-simd")]
        {
            Self(f32x4_relaxed_madd(a.0, b.0, self.0))
        }
        #[cfg(not(target_feature = "relaxed-simd"))]
        {
            Self(f32x4_add(self.0, f32x4_mul(a.0, b.0)))
        }
    }
    /// All lanes `x`.
    #[inline(always)]
    pub fn splat(x: f32) -> Self {
        Self(f32x4_splat(x))
    }
    /// Loads 4 values from `p` (unaligned).
    ///
    /// # Safety
    /// `p` must be readable for 16 bytes.
    #[inline(always)]
    pub unsafe fn load(p: *const f32) -> Self {
        Self(unsafe { v128_load(p as *const v128) })
    }
    /// Stores 4 values to `p` (unaligned).
    ///
    /// # Safety
    /// `p` must be writable for 16 bytes.
    #[inline(always)]
    pub unsafe fn store(self, p: *mut f32) {
        unsafe { v128_store(p as *mut v128, self.0) }
    }
    /// Lane-wise maximum (wasm's `pmax`: `a < b ? b : a`, same on every path).
    #[inline(always)]
    pub fn max(self, o: Self) -> Self {
        Self(f32x4_pmax(self.0, o.0))
    }
    /// The 4 × 4 matrix of rows `r` transposed: lane `j` of result `i` is lane `i` of
    /// `r[j]` (8 shuffles).
    #[inline(always)]
    pub fn transpose4(r: [Self; 4]) -> [Self; 4] {
        let [a, b, c, d] = r.map(|v| v.0);
        let ab_lo = i32x4_shuffle::<0, 4, 1, 5>(a, b);
        let ab_hi = i32x4_shuffle::<2, 6, 3, 7>(a, b);
        let cd_lo = i32x4_shuffle::<0, 4, 1, 5>(c, d);
        let cd_hi = i32x4_shuffle::<2, 6, 3, 7>(c, d);
        [
            Self(i32x4_shuffle::<0, 1, 4, 5>(ab_lo, cd_lo)),
            Self(i32x4_shuffle::<2, 3, 6, 7>(ab_lo, cd_lo)),
            Self(i32x4_shuffle::<0, 1, 4, 5>(ab_hi, cd_hi)),
            Self(i32x4_shuffle::<2, 3, 6, 7>(ab_hi, cd_hi)),
        ]
    }
    /// Sum of the lanes.
    #[inline(always)]
    pub fn hsum(self) -> f32 {
        let s = f32x4_add(self.0, i32x4_shuffle::<2, 3, 0, 1>(self.0, self.0));
        let s = f32x4_add(s, i32x4_shuffle::<1, 0, 3, 2>(s, s));
        f32x4_extract_lane::<0>(s)
    }
    /// Largest lane.
    #[inline(always)]
    pub fn hmax(self) -> f32 {
        let s = f32x4_pmax(self.0, i32x4_shuffle::<2, 3, 0, 1>(self.0, self.0));
        let s = f32x4_pmax(s, i32x4_shuffle::<1, 0, 3, 2>(s, s));
        f32x4_extract_lane::<0>(s)
    }
    /// Lane-wise minimum (wasm's `pmin`: `b < a ? b : a`).
    #[inline(always)]
    pub fn min(self, o: Self) -> Self {
        Self(f32x4_pmin(self.0, o.0))
    }
    /// Lanes rounded to the nearest integer (ties to even).
    #[inline(always)]
    pub fn round(self) -> Self {
        Self(f32x4_nearest(self.0))
    }
    /// Lane-wise square root (NaN below 0).
    #[inline(always)]
    pub fn sqrt(self) -> Self {
        Self(f32x4_sqrt(self.0))
    }
    /// `self` where `x >= limit`, 0 elsewhere (and where `x` is NaN).
    #[inline(always)]
    pub fn zero_unless_ge(self, x: Self, limit: Self) -> Self {
        Self(v128_and(self.0, f32x4_ge(x.0, limit.0)))
    }
    /// `2^n` for integer-valued lanes `n` in `[-126, 127]`.
    #[inline(always)]
    pub fn pow2i(self) -> Self {
        // `n + 1.5 · 2^23` (exact for integer `n`, |n| < 2^22) holds `n` in its low
        // mantissa bits: plus 127, shifted up by 23, they are 2^n's bits, the constant's
        // own bits shifted out. One add where a saturating conversion
        // (`i32x4.trunc_sat_f32x4_s`) takes about seven x86 instructions.
        let t = f32x4_add(self.0, f32x4_splat(super::MAGIC_I32));
        Self(i32x4_shl(i32x4_add(t, i32x4_splat(127)), 23))
    }
    /// Lane-wise conversion of four i32.
    #[inline(always)]
    pub fn from_i32(v: I32x4) -> Self {
        Self(f32x4_convert_i32x4(v.0))
    }
    /// Four little-endian f16 at `p` (unaligned) as f32, exactly (zeros, subnormals,
    /// infinities and NaN included), without branches: the f16 exponent and mantissa
    /// shifted into an f32 and rescaled by 2^112, infinities and NaN given the f32
    /// all-ones exponent, the sign put back.
    ///
    /// # Safety
    /// `p` must be readable for 8 bytes.
    #[inline(always)]
    pub unsafe fn load_f16(p: *const u8) -> Self {
        // Each f16 in its lane's high half: sign at bit 31, exponent and mantissa at
        // 16..30. An arithmetic shift by 3 with bits 28..30 cleared puts them at 13..27
        // under the sign: the f32 of the value times 2^-112 (normal and subnormal
        // alike), sign included, so one multiply rescales it (9 instructions on x86
        // where a separate sign and a bit-select took 13).
        let x = i32x4_shl(unsafe { u32x4_load_extend_u16x4(p as *const u16) }, 16);
        let bits = v128_and(i32x4_shr(x, 3), u32x4_splat(0x8fff_e000));
        let scaled = f32x4_mul(bits, f32x4_splat(super::F16_RESCALE));
        // Infinities and NaN (exponent 31, scaled to 2^16): the all-ones exponent, the
        // mantissa and sign kept.
        let special = i32x4_gt(
            v128_and(x, u32x4_splat(0x7fff_0000)),
            i32x4_splat(0x7bff_ffff),
        );
        Self(v128_or(scaled, v128_and(special, u32x4_splat(0x7f80_0000))))
    }
}

impl Add for F32x4 {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self(f32x4_add(self.0, o.0))
    }
}
impl Sub for F32x4 {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Self(f32x4_sub(self.0, o.0))
    }
}
impl Mul for F32x4 {
    type Output = Self;
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Self(f32x4_mul(self.0, o.0))
    }
}
impl Div for F32x4 {
    type Output = Self;
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        Self(f32x4_div(self.0, o.0))
    }
}

/// Four i32 lanes (partial sums of integer dot products).
#[derive(Clone, Copy)]
pub struct I32x4(v128);

#[cfg(not(target_feature = "relaxed-simd"))]
#[inline(always)]
fn dot16(a: v128, b: v128) -> v128 {
    let lo = i16x8_extmul_low_i8x16(a, b);
    let hi = i16x8_extmul_high_i8x16(a, b);
    i32x4_add(
        i32x4_extadd_pairwise_i16x8(lo),
        i32x4_extadd_pairwise_i16x8(hi),
    )
}

/// 32 i8 values (one quantized block, unpacked).
#[derive(Clone, Copy)]
pub struct I8x32(v128, v128);

impl I8x32 {
    /// Loads 32 i8 from `p`.
    ///
    /// # Safety
    /// `p` readable for 32 bytes.
    #[inline(always)]
    pub unsafe fn load(p: *const i8) -> Self {
        unsafe {
            Self(
                v128_load(p as *const v128),
                v128_load(p.add(16) as *const v128),
            )
        }
    }
    /// Unpacks a Q4_0 block's 16 nibble bytes: values `nibble - 8`, low nibbles first
    /// (ggml's layout).
    ///
    /// # Safety
    /// `qs` readable for 16 bytes.
    #[inline(always)]
    pub unsafe fn from_q4(qs: *const u8) -> Self {
        let q = unsafe { v128_load(qs as *const v128) };
        let eight = i8x16_splat(8);
        Self(
            i8x16_sub(v128_and(q, i8x16_splat(0x0f)), eight),
            i8x16_sub(u8x16_shr(q, 4), eight),
        )
    }
    /// Lane partial sums of `self[i] * b[i]` (the lanes add up to the dot), `b` an
    /// activation block as [`encode_act`](super::encode_act) made it. With relaxed SIMD
    /// that is one 8-bit dot instruction per 16 pairs, whose second operand must be 7-bit
    /// non-negative: what the encoding guarantees.
    ///
    /// # Safety
    /// `b` readable for 32 bytes.
    #[inline(always)]
    pub unsafe fn dot(self, b: *const i8) -> I32x4 {
        let o = unsafe { Self::load(b) };
        #[cfg(target_feature = "relaxed-simd")]
        {
            let lo = i32x4_relaxed_dot_i8x16_i7x16_add(self.0, o.0, i32x4_splat(0));
            I32x4(i32x4_relaxed_dot_i8x16_i7x16_add(self.1, o.1, lo))
        }
        #[cfg(not(target_feature = "relaxed-simd"))]
        {
            I32x4(i32x4_add(dot16(self.0, o.0), dot16(self.1, o.1)))
        }
    }
    /// Lane partial sums of `ACT_OFFSET * self[i]`: what the activation encoding's
    /// offset adds to every [`dot`](Self::dot) with this block (zero without one).
    #[inline(always)]
    pub fn act_bias(self) -> I32x4 {
        #[cfg(target_feature = "relaxed-simd")]
        {
            let off = i8x16_splat(super::ACT_OFFSET);
            let lo = i32x4_relaxed_dot_i8x16_i7x16_add(self.0, off, i32x4_splat(0));
            I32x4(i32x4_relaxed_dot_i8x16_i7x16_add(self.1, off, lo))
        }
        #[cfg(not(target_feature = "relaxed-simd"))]
        {
            I32x4(i32x4_splat(0))
        }
    }
}

impl Sub for I32x4 {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Self(i32x4_sub(self.0, o.0))
    }
}

/// 16 i8 values: four weight rows' 4-value slices side by side (lane `r` of a dot is row
/// `r`, its values at the bytes [`slot`](super::slot) gives).
#[derive(Clone, Copy)]
pub struct I8x16(v128);

impl I8x16 {
    /// Loads 16 i8 from `p`.
    ///
    /// # Safety
    /// `p` readable for 16 bytes.
    #[inline(always)]
    pub unsafe fn load(p: *const i8) -> Self {
        Self(unsafe { v128_load(p as *const v128) })
    }
    /// Stores 16 i8 to `p`.
    ///
    /// # Safety
    /// `p` writable for 16 bytes.
    #[inline(always)]
    pub unsafe fn store(self, p: *mut i8) {
        unsafe { v128_store(p as *mut v128, self.0) }
    }
    /// `acc` plus, in each 32-bit lane `r`, the dot of row `r`'s 4 i8 in `self` with the
    /// activation slice `x` (encoded by [`encode_act`](super::encode_act)). With relaxed
    /// SIMD one 8-bit dot instruction, whose second operand must be 7-bit non-negative,
    /// as the encoding guarantees; without, two 16-bit dots (`i32x4.dot_i16x8_s`) of the
    /// widened halves (see [`slot`](super::slot)).
    #[inline(always)]
    pub fn dot4(self, x: ActSlice, acc: I32x4) -> I32x4 {
        #[cfg(target_feature = "relaxed-simd")]
        {
            I32x4(i32x4_relaxed_dot_i8x16_i7x16_add(self.0, x.0, acc.0))
        }
        #[cfg(not(target_feature = "relaxed-simd"))]
        {
            let lo = i32x4_dot_i16x8(i16x8_extend_low_i8x16(self.0), x.0);
            let hi = i32x4_dot_i16x8(i16x8_extend_high_i8x16(self.0), x.1);
            I32x4(i32x4_add(i32x4_add(acc.0, lo), hi))
        }
    }
    /// [`I8x16::dot4`] where the engine's 32-bit dot is slow ([`narrow_dots_faster`]):
    /// with relaxed SIMD the 8-bit dot into 16-bit lanes, widened as [`Dot16::widen`]
    /// does it (x86 without AVX-VNNI: `pmaddubsw`, `pmaddwd`, `paddd`, against
    /// V8's five instructions for the 32-bit dot, which makes its ones every time).
    /// Exact: a 16-bit lane holds two products of at most `128 · 127`.
    #[inline(always)]
    pub fn dot4_split(self, x: ActSlice, acc: I32x4) -> I32x4 {
        #[cfg(target_feature = "relaxed-simd")]
        {
            Dot16(i16x8_relaxed_dot_i8x16_i7x16(self.0, x.0)).widen(acc)
        }
        #[cfg(not(target_feature = "relaxed-simd"))]
        {
            self.dot4(x, acc)
        }
    }
}

/// One activation slice (4 values) as the dots take it: relaxed SIMD's 8-bit dot the 4 i8
/// repeated; SIMD128's 16-bit dots two vectors of i16, `x0 x1 x2 x3 ×2` and
/// `x2 x3 x0 x1 ×2` (see [`slot`](super::slot)), stored so by
/// [`encode_slices`](super::encode_slices) and loaded with two 8-byte splats.
#[cfg(target_feature = "relaxed-simd")]
#[derive(Clone, Copy)]
pub struct ActSlice(v128);
/// See above.
#[cfg(not(target_feature = "relaxed-simd"))]
#[derive(Clone, Copy)]
pub struct ActSlice(v128, v128);

impl ActSlice {
    /// Loads the slice at `p` ([`SLICE_BYTES`](super::SLICE_BYTES) bytes).
    ///
    /// # Safety
    /// `p` readable for `SLICE_BYTES` bytes.
    #[inline(always)]
    pub unsafe fn load(p: *const u8) -> Self {
        #[cfg(target_feature = "relaxed-simd")]
        {
            Self(unsafe { v128_load32_splat(p as *const u32) })
        }
        #[cfg(not(target_feature = "relaxed-simd"))]
        unsafe {
            Self(
                v128_load64_splat(p as *const u64),
                v128_load64_splat(p.add(8) as *const u64),
            )
        }
    }
    /// `acc` plus, in each 32-bit lane `r`, the dot of this slice (full-range
    /// activations, encoded by [`encode_act_plain_sums`](super::encode_act_plain)) with row
    /// `r`'s 4 values in `w` (0..=127, e.g. Q4_0 nibbles, at the bytes
    /// [`slot`](super::slot) gives): relaxed SIMD's 8-bit dot with the weights as its
    /// 7-bit operand, or two 16-bit dots.
    #[inline(always)]
    pub fn dot4_u(self, w: U8x16, acc: I32x4) -> I32x4 {
        #[cfg(target_feature = "relaxed-simd")]
        {
            I32x4(i32x4_relaxed_dot_i8x16_i7x16_add(self.0, w.0, acc.0))
        }
        #[cfg(not(target_feature = "relaxed-simd"))]
        {
            let lo = i32x4_dot_i16x8(u16x8_extend_low_u8x16(w.0), self.0);
            let hi = i32x4_dot_i16x8(u16x8_extend_high_u8x16(w.0), self.1);
            I32x4(i32x4_add(i32x4_add(acc.0, lo), hi))
        }
    }
    /// [`ActSlice::dot4_u`] where the engine's 32-bit dot is slow, as
    /// [`I8x16::dot4_split`] does it (weights up to 127: exact).
    #[inline(always)]
    pub fn dot4_u_split(self, w: U8x16, acc: I32x4) -> I32x4 {
        #[cfg(target_feature = "relaxed-simd")]
        {
            Dot16(i16x8_relaxed_dot_i8x16_i7x16(self.0, w.0)).widen(acc)
        }
        #[cfg(not(target_feature = "relaxed-simd"))]
        {
            self.dot4_u(w, acc)
        }
    }
    /// [`ActSlice::dot4_u`] into [`Dot16`]'s lanes: with relaxed SIMD its 8-bit dot into
    /// 16-bit lanes (one x86 instruction; the 32-bit form takes three). Exact while a
    /// lane's sum fits i16: a dot adds at most `2 · 127 · w`, so 8 dots of weights up to
    /// 15 or 4 up to 31.
    #[inline(always)]
    pub fn dot4_u16(self, w: U8x16, acc: Dot16) -> Dot16 {
        #[cfg(target_feature = "relaxed-simd")]
        {
            Dot16(i16x8_add(acc.0, i16x8_relaxed_dot_i8x16_i7x16(self.0, w.0)))
        }
        #[cfg(not(target_feature = "relaxed-simd"))]
        {
            Dot16(self.dot4_u(w, I32x4(acc.0)).0)
        }
    }
}

/// Whether small weights' dots are faster summed in 16-bit lanes ([`Dot16`]) than by
/// relaxed SIMD's 32-bit dot: where the engine builds that dot from x86's `pmaddubsw` and
/// `pmaddwd` (three instructions a dot, against one and an add), not where it is one
/// instruction (x86's AVX-VNNI `vpdpbusd`, Arm's dot product: there `Dot16` is twice the
/// work). Measured in Chromium on a Sapphire Rapids core, Qwen2.5-0.5B's Q4_0 prompt:
/// 16-bit sums 0.81× the 32-bit dot's speed, and 1.34× with V8's AVX-VNNI turned off.
///
/// Told apart by a dot whose 7-bit operand is out of range (its result is then
/// implementation-defined): 255 × -128 in every byte gives -65536 a lane where pairs of
/// products saturate in 16 bits (`pmaddubsw`), -130560 with `vpdpbusd`, 512 where the
/// operand is read as signed (Arm).
pub fn narrow_dots_faster() -> bool {
    #[cfg(target_feature = "relaxed-simd")]
    {
        let a = core::hint::black_box(i8x16_splat(-128));
        let b = core::hint::black_box(u8x16_splat(255));
        let r = i32x4_relaxed_dot_i8x16_i7x16_add(a, b, i32x4_splat(0));
        i32x4_extract_lane::<0>(r) == -65536
    }
    #[cfg(not(target_feature = "relaxed-simd"))]
    {
        false
    }
}

/// Partial dots of activation slices with small weights ([`ActSlice::dot4_u16`]), summed
/// in 16-bit lanes with relaxed SIMD (row `r`'s in lanes `2r`, `2r + 1`) and widened once;
/// 32-bit lanes in other builds.
#[derive(Clone, Copy)]
pub struct Dot16(v128);

impl Dot16 {
    /// No dots yet.
    #[inline(always)]
    pub fn zero() -> Self {
        Self(i32x4_splat(0))
    }
    /// `acc` plus these dots, in its 4 row lanes.
    #[inline(always)]
    pub fn widen(self, acc: I32x4) -> I32x4 {
        #[cfg(target_feature = "relaxed-simd")]
        {
            I32x4(i32x4_add(acc.0, i32x4_dot_i16x8(self.0, i16x8_splat(1))))
        }
        #[cfg(not(target_feature = "relaxed-simd"))]
        {
            I32x4(i32x4_add(acc.0, self.0))
        }
    }
}

impl I32x4 {
    /// Loads 4 i32 from `p` (unaligned).
    ///
    /// # Safety
    /// `p` readable for 16 bytes.
    #[inline(always)]
    pub unsafe fn load(p: *const i32) -> Self {
        Self(unsafe { v128_load(p as *const v128) })
    }
}

/// 16 u8 values: unpacked K-quant weights (0..=63, so 7-bit non-negative: relaxed SIMD's
/// 8-bit dot takes them as its second operand and the activations, full-range i8, as the
/// first) or the packed bytes they are unpacked from.
#[derive(Clone, Copy)]
pub struct U8x16(v128);

impl U8x16 {
    /// Loads 16 bytes from `p`.
    ///
    /// # Safety
    /// `p` readable for 16 bytes.
    #[inline(always)]
    pub unsafe fn load(p: *const u8) -> Self {
        Self(unsafe { v128_load(p as *const v128) })
    }
    /// Stores 16 bytes to `p`.
    ///
    /// # Safety
    /// `p` writable for 16 bytes.
    #[inline(always)]
    pub unsafe fn store(self, p: *mut u8) {
        unsafe { v128_store(p as *mut v128, self.0) }
    }
    /// Bits `shift .. shift + width` of each byte, as values `0 .. 2^width`.
    #[inline(always)]
    pub fn bits(self, shift: u32, mask: u8) -> Self {
        if (mask as u32) << shift <= 0xff {
            // A 16-bit shift (one instruction on x86, where a byte shift takes several)
            // moves the next byte's low bits into each byte's top `shift` bits, and the
            // mask, which fits below them, drops them.
            Self(v128_and(u16x8_shr(self.0, shift), u8x16_splat(mask)))
        } else {
            Self(v128_and(u8x16_shr(self.0, shift), u8x16_splat(mask)))
        }
    }
    /// Each byte shifted left by `n` (bits past 8 dropped).
    #[inline(always)]
    pub fn shl(self, n: u32) -> Self {
        Self(i8x16_shl(self.0, n))
    }
    /// `(byte << shift) & mask` for each byte.
    #[inline(always)]
    pub fn shl_bits(self, shift: u32, mask: u8) -> Self {
        if (mask as u32) & ((1 << shift) - 1) == 0 {
            // As in `bits`: the previous byte's top bits land below `shift`, which the
            // mask drops.
            Self(v128_and(u16x8_shl(self.0, shift), u8x16_splat(mask)))
        } else {
            Self(v128_and(i8x16_shl(self.0, shift), u8x16_splat(mask)))
        }
    }
    /// Bitwise or.
    #[inline(always)]
    pub fn or(self, o: Self) -> Self {
        Self(v128_or(self.0, o.0))
    }
    /// Each byte (an index, 0..=15) replaced by that entry of `table`: one swizzle
    /// (relaxed where the build has it: indices below 16 give the same bytes, and x86
    /// needs no saturating add to zero the out-of-range ones).
    #[inline(always)]
    pub fn lookup(self, table: I8x16) -> I8x16 {
        #[cfg(target_feature = "relaxed-simd")]
        {
            I8x16(i8x16_relaxed_swizzle(table.0, self.0))
        }
        #[cfg(not(target_feature = "relaxed-simd"))]
        {
            I8x16(i8x16_swizzle(table.0, self.0))
        }
    }
}

impl I32x4 {
    /// All lanes `x`.
    #[inline(always)]
    pub fn splat(x: i32) -> Self {
        Self(i32x4_splat(x))
    }
    /// Lane-wise product with `s`.
    #[inline(always)]
    pub fn mul(self, s: Self) -> Self {
        Self(i32x4_mul(self.0, s.0))
    }
    /// The 4 i8 at `p`, sign-extended (a K-quant panel's 4 rows' integer scales).
    ///
    /// # Safety
    /// `p` readable for 4 bytes.
    #[inline(always)]
    pub unsafe fn load_i8x4(p: *const u8) -> Self {
        let v = unsafe { v128_load32_zero(p as *const u32) };
        Self(i32x4_extend_low_i16x8(i16x8_extend_low_i8x16(v)))
    }
    /// Sum of the lanes (wrapping, as the lanes do).
    #[inline(always)]
    pub fn hsum(self) -> i32 {
        let s = i32x4_add(self.0, i32x4_shuffle::<2, 3, 0, 1>(self.0, self.0));
        let s = i32x4_add(s, i32x4_shuffle::<1, 0, 3, 2>(s, s));
        i32x4_extract_lane::<0>(s)
    }
    /// `self` plus the lane partial sums of `sc · Σ x[h][i] · w[h][i]` over the `N` (1 or
    /// 2) pairs, `x` activations (i8) and `w` weights (0..=63, 7-bit as relaxed SIMD's dot
    /// wants its second operand): 8-bit products summed in pairs to i16 (relaxed SIMD's
    /// i16x8 dot, or widening products), then one i16 dot with the scale. Exact while
    /// `N · 2 · 127 · 63 < 2^15` and the i32 sums fit.
    #[inline(always)]
    pub fn dot_scaled<const N: usize>(self, x: [I8x16; N], w: [U8x16; N], sc: I16x8) -> Self {
        #[cfg(target_feature = "relaxed-simd")]
        {
            let mut p = i16x8_relaxed_dot_i8x16_i7x16(x[0].0, w[0].0);
            for h in 1..N {
                p = i16x8_add(p, i16x8_relaxed_dot_i8x16_i7x16(x[h].0, w[h].0));
            }
            Self(i32x4_add(self.0, i32x4_dot_i16x8(p, sc.0)))
        }
        #[cfg(not(target_feature = "relaxed-simd"))]
        {
            let mut acc = self.0;
            for h in 0..N {
                let lo = i16x8_extmul_low_i8x16(x[h].0, w[h].0);
                let hi = i16x8_extmul_high_i8x16(x[h].0, w[h].0);
                acc = i32x4_add(acc, i32x4_dot_i16x8(i16x8_add(lo, hi), sc.0));
            }
            Self(acc)
        }
    }
}

impl Add for I32x4 {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self(i32x4_add(self.0, o.0))
    }
}

/// Eight i16 lanes: a K-quant group's integer scale, splat.
#[derive(Clone, Copy)]
pub struct I16x8(v128);

impl I16x8 {
    /// All lanes `x`.
    #[inline(always)]
    pub fn splat(x: i16) -> Self {
        Self(i16x8_splat(x))
    }
}
