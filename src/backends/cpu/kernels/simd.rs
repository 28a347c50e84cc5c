//! The SIMD primitives the fast kernels are written in: a 4-lane f32 vector and 32-wide
//! i8 dot products, with one implementation per instruction set. wasm32 with `simd128`
//! uses `core::arch::wasm32`; everything else gets plain Rust over fixed-size arrays, shaped
//! so LLVM turns it into the host's vector instructions.
//!
//! All loads and stores are unaligned (tensor views may start anywhere).

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod imp {
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
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
mod imp {
    use core::ops::{Add, Div, Mul, Sub};

    /// Four f32 lanes.
    #[derive(Clone, Copy)]
    pub struct F32x4([f32; 4]);

    #[inline(always)]
    fn zip(a: [f32; 4], b: [f32; 4], f: impl Fn(f32, f32) -> f32) -> [f32; 4] {
        [f(a[0], b[0]), f(a[1], b[1]), f(a[2], b[2]), f(a[3], b[3])]
    }

    impl F32x4 {
        /// `self + a * b` (a multiply and an add, as on wasm without relaxed SIMD).
        #[inline(always)]
        pub fn mul_add(self, a: Self, b: Self) -> Self {
            self + a * b
        }
        /// All lanes `x`.
        #[inline(always)]
        pub fn splat(x: f32) -> Self {
            Self([x; 4])
        }
        /// Loads 4 values from `p` (unaligned).
        ///
        /// # Safety
        /// `p` must be readable for 16 bytes.
        #[inline(always)]
        pub unsafe fn load(p: *const f32) -> Self {
            Self(unsafe { (p as *const [f32; 4]).read_unaligned() })
        }
        /// Stores 4 values to `p` (unaligned).
        ///
        /// # Safety
        /// `p` must be writable for 16 bytes.
        #[inline(always)]
        pub unsafe fn store(self, p: *mut f32) {
            unsafe { (p as *mut [f32; 4]).write_unaligned(self.0) }
        }
        /// The 4 × 4 matrix of rows `r` transposed: lane `j` of result `i` is lane `i` of
        /// `r[j]`.
        #[inline(always)]
        pub fn transpose4(r: [Self; 4]) -> [Self; 4] {
            std::array::from_fn(|i| Self(std::array::from_fn(|j| r[j].0[i])))
        }
        /// Four little-endian f16 at `p` (unaligned) as f32, exactly (as the wasm version).
        ///
        /// # Safety
        /// `p` must be readable for 8 bytes.
        #[inline(always)]
        pub unsafe fn load_f16(p: *const u8) -> Self {
            let h = unsafe { (p as *const [u16; 4]).read_unaligned() };
            Self(h.map(|h| super::f16_to_f32(u16::from_le(h))))
        }
        /// Lane-wise maximum (wasm's `pmax`: `a < b ? b : a`, same on every path).
        #[inline(always)]
        pub fn max(self, o: Self) -> Self {
            Self(zip(self.0, o.0, |a, b| if a < b { b } else { a }))
        }
        /// Sum of the lanes.
        #[inline(always)]
        pub fn hsum(self) -> f32 {
            (self.0[0] + self.0[2]) + (self.0[1] + self.0[3])
        }
        /// Largest lane.
        #[inline(always)]
        pub fn hmax(self) -> f32 {
            self.0.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v))
        }
        /// Lane-wise minimum (wasm's `pmin`: `b < a ? b : a`).
        #[inline(always)]
        pub fn min(self, o: Self) -> Self {
            Self(zip(self.0, o.0, |a, b| if b < a { b } else { a }))
        }
        /// Lanes rounded to the nearest integer (ties to even).
        #[inline(always)]
        pub fn round(self) -> Self {
            Self(self.0.map(f32::round_ties_even))
        }
        /// Lane-wise square root (NaN below 0).
        #[inline(always)]
        pub fn sqrt(self) -> Self {
            Self(self.0.map(f32::sqrt))
        }
        /// `self` where `x >= limit`, 0 elsewhere (and where `x` is NaN).
        #[inline(always)]
        pub fn zero_unless_ge(self, x: Self, limit: Self) -> Self {
            let mut o = self.0;
            for (v, (&a, &l)) in o.iter_mut().zip(x.0.iter().zip(&limit.0)) {
                if a.is_nan() || a < l {
                    *v = 0.0;
                }
            }
            Self(o)
        }
        /// `2^n` for integer-valued lanes `n` in `[-126, 127]`.
        #[inline(always)]
        pub fn pow2i(self) -> Self {
            Self(
                self.0
                    .map(|n| f32::from_bits(((n as i32 + 127) << 23) as u32)),
            )
        }
        /// Lane-wise conversion of four i32.
        #[inline(always)]
        pub fn from_i32(v: I32x4) -> Self {
            Self(v.0.map(|x| x as f32))
        }
    }

    impl Add for F32x4 {
        type Output = Self;
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            Self(zip(self.0, o.0, |a, b| a + b))
        }
    }
    impl Sub for F32x4 {
        type Output = Self;
        #[inline(always)]
        fn sub(self, o: Self) -> Self {
            Self(zip(self.0, o.0, |a, b| a - b))
        }
    }
    impl Mul for F32x4 {
        type Output = Self;
        #[inline(always)]
        fn mul(self, o: Self) -> Self {
            Self(zip(self.0, o.0, |a, b| a * b))
        }
    }
    impl Div for F32x4 {
        type Output = Self;
        #[inline(always)]
        fn div(self, o: Self) -> Self {
            Self(zip(self.0, o.0, |a, b| a / b))
        }
    }

    /// Four i32 lanes (partial sums of integer dot products).
    #[derive(Clone, Copy)]
    pub struct I32x4([i32; 4]);

    /// 32 i8 values (one quantized block, unpacked).
    #[derive(Clone, Copy)]
    pub struct I8x32([i8; 32]);

    impl I8x32 {
        /// Loads 32 i8 from `p`.
        ///
        /// # Safety
        /// `p` readable for 32 bytes.
        #[inline(always)]
        pub unsafe fn load(p: *const i8) -> Self {
            Self(unsafe { (p as *const [i8; 32]).read_unaligned() })
        }
        /// Unpacks a Q4_0 block's 16 nibble bytes: values `nibble - 8`, low nibbles first
        /// (ggml's layout).
        ///
        /// # Safety
        /// `qs` readable for 16 bytes.
        #[inline(always)]
        pub unsafe fn from_q4(qs: *const u8) -> Self {
            let q = unsafe { (qs as *const [u8; 16]).read_unaligned() };
            let mut a = [0i8; 32];
            for i in 0..16 {
                a[i] = (q[i] & 0x0f) as i8 - 8;
                a[i + 16] = (q[i] >> 4) as i8 - 8;
            }
            Self(a)
        }
        /// Lane partial sums of `self[i] * b[i]` (the lanes add up to the dot).
        ///
        /// # Safety
        /// `b` readable for 32 bytes.
        #[inline(always)]
        pub unsafe fn dot(self, b: *const i8) -> I32x4 {
            let b = unsafe { Self::load(b) }.0;
            let mut s = [0i32; 4];
            for i in 0..8 {
                for l in 0..4 {
                    s[l] += self.0[i * 4 + l] as i32 * b[i * 4 + l] as i32;
                }
            }
            I32x4(s)
        }
        /// Lane partial sums of `ACT_OFFSET * self[i]` (zero: this build's activation
        /// encoding has no offset).
        #[inline(always)]
        pub fn act_bias(self) -> I32x4 {
            I32x4([0; 4])
        }
    }

    impl Sub for I32x4 {
        type Output = Self;
        #[inline(always)]
        fn sub(self, o: Self) -> Self {
            Self(std::array::from_fn(|l| self.0[l] - o.0[l]))
        }
    }

    /// 16 i8 values: four weight rows' 4-value slices side by side (lane `r` of a dot is row
    /// `r`, its values at the bytes [`slot`](super::slot) gives).
    #[derive(Clone, Copy)]
    pub struct I8x16([i8; 16]);

    impl I8x16 {
        /// Loads 16 i8 from `p`.
        ///
        /// # Safety
        /// `p` readable for 16 bytes.
        #[inline(always)]
        pub unsafe fn load(p: *const i8) -> Self {
            Self(unsafe { (p as *const [i8; 16]).read_unaligned() })
        }
        /// Stores 16 i8 to `p`.
        ///
        /// # Safety
        /// `p` writable for 16 bytes.
        #[inline(always)]
        pub unsafe fn store(self, p: *mut i8) {
            unsafe { (p as *mut [i8; 16]).write_unaligned(self.0) }
        }
        /// `acc` plus, in each 32-bit lane `r`, the dot of row `r`'s 4 i8 in `self` with the
        /// activation slice `x`: SIMD128's two 16-bit dots of the widened halves, lane by
        /// lane (this build's panels are paired: [`PAIRED`](super::PAIRED)).
        #[inline(always)]
        pub fn dot4(self, x: ActSlice, acc: I32x4) -> I32x4 {
            x.dot_pairs(|i| self.0[i] as i32, acc)
        }
        /// [`I8x16::dot4`] (one form in this build).
        #[inline(always)]
        pub fn dot4_split(self, x: ActSlice, acc: I32x4) -> I32x4 {
            self.dot4(x, acc)
        }
    }

    /// Whether small weights' dots are faster summed in [`Dot16`]: never in this build (its
    /// lanes are 32-bit).
    pub fn narrow_dots_faster() -> bool {
        false
    }

    /// Partial dots of activation slices ([`ActSlice::dot4_u16`]): 32-bit lanes in this
    /// build.
    #[derive(Clone, Copy)]
    pub struct Dot16(I32x4);

    impl Dot16 {
        /// No dots yet.
        #[inline(always)]
        pub fn zero() -> Self {
            Self(I32x4::splat(0))
        }
        /// `acc` plus these dots.
        #[inline(always)]
        pub fn widen(self, acc: I32x4) -> I32x4 {
            acc + self.0
        }
    }

    /// One activation slice (4 values) as SIMD128's 16-bit dots take it: `x0 x1 x2 x3` and
    /// `x2 x3 x0 x1` as i16 (each repeated in the wasm build's vectors).
    #[derive(Clone, Copy)]
    pub struct ActSlice([i16; 8]);

    impl ActSlice {
        /// Loads the slice at `p` ([`SLICE_BYTES`](super::SLICE_BYTES) bytes).
        ///
        /// # Safety
        /// `p` readable for `SLICE_BYTES` bytes.
        #[inline(always)]
        pub unsafe fn load(p: *const u8) -> Self {
            Self(unsafe { (p as *const [i16; 8]).read_unaligned() })
        }
        /// `acc` plus, in each 32-bit lane `r`, the dot of this slice with row `r`'s 4 values
        /// in `w` (0..=127).
        #[inline(always)]
        pub fn dot4_u(self, w: U8x16, acc: I32x4) -> I32x4 {
            self.dot_pairs(|i| w.0[i] as i32, acc)
        }
        /// [`ActSlice::dot4_u`] (one form in this build).
        #[inline(always)]
        pub fn dot4_u_split(self, w: U8x16, acc: I32x4) -> I32x4 {
            self.dot4_u(w, acc)
        }
        /// [`ActSlice::dot4_u`] into [`Dot16`] (32-bit lanes in this build).
        #[inline(always)]
        pub fn dot4_u16(self, w: U8x16, acc: Dot16) -> Dot16 {
            Dot16(self.dot4_u(w, acc.0))
        }
        /// What `i32x4.dot_i16x8_s` gives for the widened low half of 16 weight bytes (`w(i)`,
        /// byte `i`) with `x0 x1 x2 x3 x0 x1 x2 x3`, plus the high half with
        /// `x2 x3 x0 x1 x2 x3 x0 x1`, plus `acc`.
        #[inline(always)]
        fn dot_pairs(self, w: impl Fn(usize) -> i32, acc: I32x4) -> I32x4 {
            I32x4(std::array::from_fn(|l| {
                let (a, b) = (&self.0[..4], &self.0[4..]);
                let xa = |i: usize| a[i % 4] as i32;
                let xb = |i: usize| b[i % 4] as i32;
                acc.0[l]
                    + w(2 * l) * xa(2 * l)
                    + w(2 * l + 1) * xa(2 * l + 1)
                    + w(8 + 2 * l) * xb(2 * l)
                    + w(8 + 2 * l + 1) * xb(2 * l + 1)
            }))
        }
    }

    impl I32x4 {
        /// Loads 4 i32 from `p` (unaligned).
        ///
        /// # Safety
        /// `p` readable for 16 bytes.
        #[inline(always)]
        pub unsafe fn load(p: *const i32) -> Self {
            Self(unsafe { (p as *const [i32; 4]).read_unaligned() })
        }
    }

    /// 16 u8 values: unpacked K-quant weights (0..=63) or the packed bytes they come from.
    #[derive(Clone, Copy)]
    pub struct U8x16([u8; 16]);

    impl U8x16 {
        /// Loads 16 bytes from `p`.
        ///
        /// # Safety
        /// `p` readable for 16 bytes.
        #[inline(always)]
        pub unsafe fn load(p: *const u8) -> Self {
            Self(unsafe { (p as *const [u8; 16]).read_unaligned() })
        }
        /// Stores 16 bytes to `p`.
        ///
        /// # Safety
        /// `p` writable for 16 bytes.
        #[inline(always)]
        pub unsafe fn store(self, p: *mut u8) {
            unsafe { (p as *mut [u8; 16]).write_unaligned(self.0) }
        }
        /// `(byte >> shift) & mask` for each byte.
        #[inline(always)]
        pub fn bits(self, shift: u32, mask: u8) -> Self {
            Self(self.0.map(|b| (b >> shift) & mask))
        }
        /// Each byte shifted left by `n` (bits past 8 dropped).
        #[inline(always)]
        pub fn shl(self, n: u32) -> Self {
            Self(self.0.map(|b| b << n))
        }
        /// `(byte << shift) & mask` for each byte.
        #[inline(always)]
        pub fn shl_bits(self, shift: u32, mask: u8) -> Self {
            Self(self.0.map(|b| (b << shift) & mask))
        }
        /// Bitwise or.
        #[inline(always)]
        pub fn or(self, o: Self) -> Self {
            Self(std::array::from_fn(|i| self.0[i] | o.0[i]))
        }
        /// Each byte (an index, 0..=15) replaced by that entry of `table`.
        #[inline(always)]
        pub fn lookup(self, table: I8x16) -> I8x16 {
            I8x16(self.0.map(|i| table.0[(i & 15) as usize]))
        }
    }

    impl I32x4 {
        /// All lanes `x`.
        #[inline(always)]
        pub fn splat(x: i32) -> Self {
            Self([x; 4])
        }
        /// Lane-wise product with `s` (wrapping, as wasm's).
        #[inline(always)]
        pub fn mul(self, s: Self) -> Self {
            Self(std::array::from_fn(|l| self.0[l].wrapping_mul(s.0[l])))
        }
        /// The 4 i8 at `p`, sign-extended (a K-quant panel's 4 rows' integer scales).
        ///
        /// # Safety
        /// `p` readable for 4 bytes.
        #[inline(always)]
        pub unsafe fn load_i8x4(p: *const u8) -> Self {
            Self(std::array::from_fn(|l| unsafe { *p.add(l) } as i8 as i32))
        }
        /// Sum of the lanes (wrapping, as wasm's).
        #[inline(always)]
        pub fn hsum(self) -> i32 {
            self.0.iter().fold(0i32, |s, &v| s.wrapping_add(v))
        }
        /// `self` plus, in each lane, the dot of 4 activations of `x` with the 4 weights of
        /// `w` in that lane.
        #[inline(always)]
        fn dot_u7(self, x: I8x16, w: U8x16) -> Self {
            Self(std::array::from_fn(|l| {
                (0..4).fold(self.0[l], |s, t| {
                    s + x.0[l * 4 + t] as i32 * w.0[l * 4 + t] as i32
                })
            }))
        }
        /// `self` plus the lane partial sums of `sc · Σ x[h][i] · w[h][i]` over the `N` pairs.
        #[inline(always)]
        pub fn dot_scaled<const N: usize>(self, x: [I8x16; N], w: [U8x16; N], sc: I16x8) -> Self {
            let mut acc = self;
            for h in 0..N {
                acc = acc.dot_u7(x[h], w[h]);
            }
            Self(std::array::from_fn(|l| {
                self.0[l].wrapping_add((acc.0[l].wrapping_sub(self.0[l])).wrapping_mul(sc.0 as i32))
            }))
        }
    }

    impl Add for I32x4 {
        type Output = Self;
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            Self(std::array::from_fn(|l| self.0[l].wrapping_add(o.0[l])))
        }
    }

    /// A K-quant group's integer scale.
    #[derive(Clone, Copy)]
    pub struct I16x8(i16);

    impl I16x8 {
        /// All lanes `x`.
        #[inline(always)]
        pub fn splat(x: i16) -> Self {
            Self(x)
        }
    }
}

pub use imp::*;

// The narrow-dot choice ([`narrow_dots_faster`], the kernels' const `N`) as a const parameter,
// so that a kernel passes it on instead of branching at each dot.
impl I8x16 {
    /// [`I8x16::dot4_split`] if `SPLIT`, else [`I8x16::dot4`].
    #[inline(always)]
    pub fn dot4_as<const SPLIT: bool>(self, x: ActSlice, acc: I32x4) -> I32x4 {
        if SPLIT {
            self.dot4_split(x, acc)
        } else {
            self.dot4(x, acc)
        }
    }
}

impl ActSlice {
    /// [`ActSlice::dot4_u_split`] if `SPLIT`, else [`ActSlice::dot4_u`].
    #[inline(always)]
    pub fn dot4_u_as<const SPLIT: bool>(self, w: U8x16, acc: I32x4) -> I32x4 {
        if SPLIT {
            self.dot4_u_split(w, acc)
        } else {
            self.dot4_u(w, acc)
        }
    }
}

/// Whether the int8 panels pair their values for SIMD128's 16-bit dot (see [`slot`]): every
/// build but relaxed SIMD's, whose 8-bit dot takes each row's 4 values side by side.
pub const PAIRED: bool = !cfg!(all(target_arch = "wasm32", target_feature = "relaxed-simd"));

/// The byte of a 16-byte panel slice (4 rows × 4 values) that holds value `j` of row `r`,
/// as [`I8x16::dot4`] and [`I8x16::dot4_u`] read it. Relaxed SIMD's 8-bit dot sums each
/// 32-bit lane's 4 bytes: row `r` at bytes `4r .. 4r + 4`. SIMD128's 16-bit dot sums pairs
/// of i16 lanes, so the slice is widened in two halves and dotted with the activations
/// `x0 x1 x2 x3 x0 x1 x2 x3` (low) and `x2 x3 x0 x1 x2 x3 x0 x1` (high): lane `r` of the low
/// half then takes row `r`'s values 0, 1 (even `r`) or 2, 3 (odd `r`), of the high half the
/// other pair, so both halves add into the same row lanes.
#[inline(always)]
pub const fn slot(r: usize, j: usize) -> usize {
    if PAIRED {
        (j / 2 + r) % 2 * 8 + r * 2 + j % 2
    } else {
        r * 4 + j
    }
}

/// Puts row `r`'s 4 values `four` into a 16-byte panel slice (4 rows × 4 values) where
/// [`slot`] places them: values `2i, 2i + 1` sit side by side in every build's order, so two
/// bytes a copy.
#[inline(always)]
pub fn put_slice_row(slice: &mut [u8], r: usize, four: &[u8]) {
    for i in 0..2 {
        let at = slot(r, 2 * i);
        slice[at..at + 2].copy_from_slice(&four[2 * i..2 * i + 2]);
    }
}

/// Where activation value `v` (a multiple of 4) starts as the panels' dots read it
/// ([`ActSlice::load`]): in the slices `x` ([`encode_slices`]) in paired builds, in the
/// values `q` themselves with relaxed SIMD.
#[inline(always)]
pub fn act_slice_at(q: &[i8], x: &[u8], v: usize) -> *const u8 {
    let at = v / 4 * SLICE_BYTES;
    if PAIRED {
        x[at..].as_ptr()
    } else {
        q[at..].as_ptr() as *const u8
    }
}

/// Stores the first `n` lanes of `v` at `p` (all four when `n >= 4`): a group of 4 weight
/// rows' outputs, fewer at a matrix's last group.
///
/// # Safety
/// `p` writable for `n.min(4)` f32.
#[inline(always)]
pub unsafe fn store_lanes(v: F32x4, p: *mut f32, n: usize) {
    unsafe {
        if n >= 4 {
            v.store(p);
        } else {
            let mut t = [0f32; 4];
            v.store(t.as_mut_ptr());
            std::ptr::copy_nonoverlapping(t.as_ptr(), p, n);
        }
    }
}

/// Bytes of one encoded activation slice (4 values) as [`ActSlice::load`] reads it: the 4
/// i8 themselves for relaxed SIMD's 8-bit dot, 8 i16 (see [`slot`]) for SIMD128's 16-bit dot.
pub const SLICE_BYTES: usize = if PAIRED { 16 } else { 4 };

/// Encodes quantized activations `q` (a multiple of 4) into the slices [`ActSlice::load`]
/// reads, `q.len() / 4 * SLICE_BYTES` bytes in `out`: `x0 x1 x2 x3 x2 x3 x0 x1` as i16 per
/// slice (paired builds; relaxed SIMD reads `q` itself, and this copies it).
pub fn encode_slices(q: &[i8], out: &mut [u8]) {
    for (x, o) in q.chunks_exact(4).zip(out.chunks_exact_mut(SLICE_BYTES)) {
        if PAIRED {
            for (i, &j) in [0, 1, 2, 3, 2, 3, 0, 1].iter().enumerate() {
                o[2 * i..2 * i + 2].copy_from_slice(&(x[j] as i16).to_le_bytes());
            }
        } else {
            for (o, &v) in o.iter_mut().zip(x) {
                *o = v as u8;
            }
        }
    }
}

/// How activations are encoded for the integer dots: `round(x / d) + ACT_OFFSET` with
/// `d = max|x| / ACT_LEVELS` per 32-value block. ggml's Q8_0 (127 levels each side, no
/// offset), except with relaxed SIMD, whose 8-bit dot wants its second operand in 0..=127:
/// there activations get 63 levels each side, shifted up by 64, and each dot subtracts
/// [`I8x32::act_bias`] (64 · the weights' sum).
#[cfg(not(all(target_arch = "wasm32", target_feature = "relaxed-simd")))]
pub const ACT_LEVELS: f32 = 127.0;
/// See [`ACT_LEVELS`].
#[cfg(not(all(target_arch = "wasm32", target_feature = "relaxed-simd")))]
pub const ACT_OFFSET: i8 = 0;
/// See [`ACT_LEVELS`].
#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
pub const ACT_LEVELS: f32 = 63.0;
/// See [`ACT_LEVELS`].
#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
pub const ACT_OFFSET: i8 = 64;

/// Encodes one block of 32 activations for the integer dots (see [`ACT_LEVELS`]) into `q`;
/// returns the block's scale `d`. The same values as [`encode_act_scalar`] (ggml's rounding,
/// half away from zero), in SIMD128 where the build has it: this runs on every activation
/// row of every quantized matmul. Other lengths than 32 take the scalar path.
#[inline]
pub fn encode_act(x: &[f32], q: &mut [i8]) -> f32 {
    encode_with(x, q, ACT_LEVELS, ACT_OFFSET).0
}

/// Encodes one block of 32 activations as ggml's Q8_0 does (127 levels each side, no offset,
/// in every build) into `q`; returns the block's scale and the sums of its two halves of
/// values (16 each). For the kernels whose weights are the 7-bit operand of relaxed SIMD's
/// dot (Q4_0 panels: nibbles 0..=15), so that the activations keep their full range, and
/// whose biased or K-quant dots need the sums: summed as the values are made (a sum of the
/// stored bytes took 100 x86 instructions a block in V8).
#[inline]
pub fn encode_act_plain_sums(x: &[f32], q: &mut [i8]) -> (f32, [i32; 2]) {
    encode_with(x, q, 127.0, 0)
}

#[inline(always)]
fn encode_with(x: &[f32], q: &mut [i8], levels: f32, offset: i8) -> (f32, [i32; 2]) {
    match (
        <&[f32; 32]>::try_from(x),
        <&mut [i8; 32]>::try_from(&mut *q),
    ) {
        (Ok(x), Ok(q)) => encode_block(x, q, levels, offset),
        _ => encode_scalar(x, q, levels, offset),
    }
}

/// [`encode_act`] one value at a time: the reference the SIMD encoding is tested against.
#[cfg(test)]
pub fn encode_act_scalar(x: &[f32], q: &mut [i8]) -> f32 {
    encode_scalar(x, q, ACT_LEVELS, ACT_OFFSET).0
}

/// [`encode_act_plain_sums`] one value at a time.
#[cfg(test)]
pub fn encode_act_plain_scalar(x: &[f32], q: &mut [i8]) -> (f32, [i32; 2]) {
    encode_scalar(x, q, 127.0, 0)
}

/// The scale, the values (plus `offset`) and the sums of the two halves' values (without
/// it), one value at a time.
#[inline(always)]
fn encode_scalar(x: &[f32], q: &mut [i8], levels: f32, offset: i8) -> (f32, [i32; 2]) {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = amax / levels;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut sums = [0i32; 2];
    let half = x.len().div_ceil(2);
    for (i, (o, &v)) in q.iter_mut().zip(x).enumerate() {
        let r = (v * id).round() as i8;
        sums[usize::from(i >= half)] += i32::from(r);
        *o = r.wrapping_add(offset);
    }
    (d, sums)
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline(always)]
fn encode_block(x: &[f32; 32], q: &mut [i8; 32], levels: f32, offset: i8) -> (f32, [i32; 2]) {
    encode_scalar(x, q, levels, offset)
}

/// Eight f32x4: the block's max |x| by `pmax` (NaN lanes ignored, as `f32::max` does), then
/// `s = x / d` rounded half away from zero and saturated to i8, plus the offset; and the
/// halves' sums of the values, from their i32 lanes.
///
/// `s` is first clamped to [-128, 127] (what the saturating `as i8` does after rounding;
/// NaN lanes stay NaN), so that every later step is exact and the narrowing needs no
/// saturation. The rounding is `trunc(s + copysign(0.49999997, s))`, the constant the
/// largest f32 below 0.5: equal to `f32::round` for every f32 of magnitude below 2^22
/// (checked for all of them; with 0.5 itself 0.49999997 would round up). The integer-valued
/// result is converted by adding 1.5 · 2^23 (its value then in the low mantissa bits) and
/// subtracting that constant's bits: two instructions where the saturating conversion
/// (`i32x4.trunc_sat_f32x4_s`) takes about seven x86 instructions; NaN lanes are masked to
/// 0, as the scalar `as i8` gives. The i32 lanes are narrowed to i16 (`narrow`, exact) and
/// their low bytes taken by a shuffle: two saturating narrows in a row make LLVM clamp each
/// vector to i16 with two constants and shuffle (V8 materializing every constant), which
/// with the old rounding made the block 150 instructions.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn encode_block(x: &[f32; 32], q: &mut [i8; 32], levels: f32, offset: i8) -> (f32, [i32; 2]) {
    use core::arch::wasm32::*;
    let p = x.as_ptr() as *const v128;
    // In range: 8 × 16 bytes of the 32 f32.
    let v: [v128; 8] = std::array::from_fn(|i| unsafe { v128_load(p.add(i)) });
    let amax = v
        .iter()
        .fold(f32x4_splat(0.0), |m, &x| f32x4_pmax(m, f32x4_abs(x)));
    let amax = f32x4_pmax(amax, i32x4_shuffle::<2, 3, 0, 1>(amax, amax));
    let amax = f32x4_pmax(amax, i32x4_shuffle::<1, 0, 3, 2>(amax, amax));
    let d = f32x4_extract_lane::<0>(amax) / levels;
    let id = f32x4_splat(if d != 0.0 { 1.0 / d } else { 0.0 });
    let (below_half, sign) = (f32x4_splat(ROUND_BELOW_HALF), f32x4_splat(-0.0));
    let (lo, hi, magic) = (
        f32x4_splat(-128.0),
        f32x4_splat(127.0),
        f32x4_splat(MAGIC_I32),
    );
    let r: [v128; 8] = std::array::from_fn(|i| {
        let s = f32x4_mul(v[i], id);
        // `pmax(s, lo)` is `s` where `s` is NaN (and `pmin` likewise).
        let c = f32x4_pmin(f32x4_pmax(s, lo), hi);
        let t = f32x4_trunc(f32x4_add(c, v128_or(below_half, v128_and(c, sign))));
        // NaN lanes 0, as `as i8` gives.
        v128_and(i32x4_sub(f32x4_add(t, magic), magic), f32x4_eq(s, s))
    });
    let off = i8x16_splat(offset);
    let o = q.as_mut_ptr() as *mut v128;
    let mut sums = [0i32; 2];
    for h in 0..2 {
        let r = &r[h * 4..h * 4 + 4];
        let (a, b) = (
            i16x8_narrow_i32x4(r[0], r[1]),
            i16x8_narrow_i32x4(r[2], r[3]),
        );
        let bytes =
            i8x16_shuffle::<0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30>(a, b);
        // In range: 2 × 16 bytes of the 32 i8.
        unsafe { v128_store(o.add(h), i8x16_add(bytes, off)) };
        let t = i32x4_add(i32x4_add(r[0], r[1]), i32x4_add(r[2], r[3]));
        let t = i32x4_add(t, i32x4_shuffle::<2, 3, 0, 1>(t, t));
        let t = i32x4_add(t, i32x4_shuffle::<1, 0, 3, 2>(t, t));
        sums[h] = i32x4_extract_lane::<0>(t);
    }
    (d, sums)
}

/// The largest f32 below 0.5 (see [`encode_block`]).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
const ROUND_BELOW_HALF: f32 = f32::from_bits(0.5f32.to_bits() - 1);

/// 1.5 · 2^23: an integer-valued f32 `v` (|v| < 2^22) plus this holds `v` in its low
/// mantissa bits, so that its bits minus this constant's are `v` as an i32.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
const MAGIC_I32: f32 = 12_582_912.0;

/// 2^112: an f16's exponent and mantissa shifted into an f32 (`bits << 13`) read as f32 is
/// the f16's value times 2^-112, for normal and subnormal f16 alike.
const F16_RESCALE: f32 = f32::from_bits((112 + 127) << 23);

/// The f16 bits `h` as f32, exactly for every value and without branches (what
/// [`F32x4::load_f16`] does per lane): exponent and mantissa shifted into an f32 and rescaled
/// by 2^112 (normal and subnormal alike), infinities and NaN given the all-ones exponent.
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    let em = (h & 0x7fff) as u32;
    let sign = ((h & 0x8000) as u32) << 16;
    let v = if em >= 0x7c00 {
        (em << 13) | 0x7f80_0000
    } else {
        (f32::from_bits(em << 13) * F16_RESCALE).to_bits()
    };
    f32::from_bits(v | sign)
}

/// The little-endian f16 at `p` (unaligned) as f32.
///
/// # Safety
/// `p` readable for 2 bytes.
#[inline(always)]
pub unsafe fn f16_at(p: *const u8) -> f32 {
    f16_to_f32(u16::from_le(unsafe { (p as *const u16).read_unaligned() }))
}

/// `out.len()` packed little-endian f16 at `p` as f32 into `out`, four at a time
/// ([`F32x4::load_f16`]).
///
/// # Safety
/// `p` readable for `2 * out.len()` bytes.
#[inline(always)]
pub unsafe fn f16_row(p: *const u8, out: &mut [f32]) {
    let n = out.len();
    let mut i = 0;
    while i + 4 <= n {
        unsafe { F32x4::load_f16(p.add(2 * i)).store(out.as_mut_ptr().add(i)) };
        i += 4;
    }
    for (j, x) in out.iter_mut().enumerate().skip(i) {
        *x = unsafe { f16_at(p.add(2 * j)) };
    }
}

/// Lane partial sums of `a[i] * (b[i] - ACT_OFFSET)` over 32 i8 pairs, `b` encoded by
/// [`encode_act`] (the lanes add up to the dot with the activations' integer values).
///
/// # Safety
/// Both pointers must be readable for 32 bytes.
#[inline(always)]
pub unsafe fn dot_i8x32(a: *const i8, b: *const i8) -> I32x4 {
    unsafe { I8x32::load(a).dot_act(b) }
}

/// Like [`dot_i8x32`] with `a` a Q4_0 block's 16 nibble bytes.
///
/// # Safety
/// `qs` readable for 16 bytes, `b` for 32.
#[inline(always)]
pub unsafe fn dot_q4x32(qs: *const u8, b: *const i8) -> I32x4 {
    unsafe { I8x32::from_q4(qs).dot_act(b) }
}

impl I8x32 {
    /// Lane partial sums of `self[i] * (b[i] - ACT_OFFSET)`: the dot with activations
    /// encoded by [`encode_act`] at `b`, their offset taken out.
    ///
    /// # Safety
    /// `b` readable for 32 bytes.
    #[inline(always)]
    pub unsafe fn dot_act(self, b: *const i8) -> I32x4 {
        unsafe { self.dot(b) - self.act_bias() }
    }
}

/// `e^r · 2^-n` split of `e^x` (`x` in range, `n = round(x / ln 2)`): returns `(e^r, n)`, the
/// reduced argument's exponential from Cephes' polynomial. Multiply-adds throughout
/// ([`F32x4::mul_add`]: fused with relaxed SIMD, 8 instructions fewer and half the
/// polynomial's latency; a multiply and an add otherwise, as before).
#[inline(always)]
fn exp_reduced(x: F32x4) -> (F32x4, F32x4) {
    let n = (x * F32x4::splat(std::f32::consts::LOG2_E)).round();
    let r = x
        .mul_add(n, F32x4::splat(-0.693_359_4))
        .mul_add(n, F32x4::splat(2.121_944_4e-4));
    let mut p = F32x4::splat(1.987_569_1e-4);
    for c in [
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        1.666_666_5e-1,
        0.5,
    ] {
        p = F32x4::splat(c).mul_add(p, r);
    }
    (r.mul_add(p * r, r) + F32x4::splat(1.0), n)
}

/// `e^x` lane-wise, relative error about 2e-7 (Cephes' polynomial after range reduction by
/// ln 2). Inputs above 88.7 saturate instead of overflowing; below -87.3 (incl. `-inf`, as
/// from a softmax mask) the result is exactly 0.
#[inline(always)]
pub fn exp(x_in: F32x4) -> F32x4 {
    let lo = F32x4::splat(-87.3);
    let (e, n) = exp_reduced(x_in.min(F32x4::splat(88.7)).max(lo));
    // 2^n for n = 128 would not be a normal float: split it.
    let half = (n * F32x4::splat(0.5)).round();
    (e * half.pow2i() * (n - half).pow2i()).zero_unless_ge(x_in, lo)
}

/// `e^x` for `x <= 0` (softmax after subtracting the row max, erf's Gaussian): as [`exp`]
/// with one power of two instead of two (no overflow to guard against). Below -87.3 (incl.
/// `-inf`) the result is exactly 0; positive inputs are out of contract.
#[inline(always)]
pub fn exp_nonpos(x_in: F32x4) -> F32x4 {
    let lo = F32x4::splat(-87.3);
    let (e, n) = exp_reduced(x_in.max(lo)); // n in [-126, 0]
    (e * n.pow2i()).zero_unless_ge(x_in, lo)
}

/// GELU with the exact (erf) form, `x Φ(x)` = `x/2 (1 + erf(x/√2))`, lane-wise, |error| below
/// 7e-7 · max(1, |x Φ(x)|). erf is the odd/even rational fit on [-4, 4] that Eigen and
/// XNNPACK use (`z P(z²) / Q(z²)`; |error| < 4e-7, and ±1 in f32 beyond): eleven
/// multiply-adds and a divide, against an exp and a divide for Abramowitz & Stegun 7.1.26
/// (MiniLM f32 128 tokens spends 4% of its CPU time in GELU). Below x = -10 the result is
/// exactly 0, above 10 exactly x (Φ is 1 - 8e-24 there).
#[inline(always)]
pub fn gelu_erf(x: F32x4) -> F32x4 {
    const P: [f32; 7] = [
        -2.726_142_3e-10,
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_6e-3,
        -1.609_603_3e-2,
    ];
    const Q: [f32; 5] = [
        -1.456_607_2e-5,
        -2.133_740_6e-4,
        -1.682_827e-3,
        -7.373_329e-3,
        -1.426_473_9e-2,
    ];
    let z = (x * F32x4::splat(std::f32::consts::FRAC_1_SQRT_2))
        .min(F32x4::splat(4.0))
        .max(F32x4::splat(-4.0));
    let z2 = z * z;
    let mut p = F32x4::splat(P[0]);
    for c in &P[1..] {
        p = F32x4::splat(*c).mul_add(p, z2);
    }
    let mut q = F32x4::splat(Q[0]);
    for c in &Q[1..] {
        q = F32x4::splat(*c).mul_add(q, z2);
    }
    let half_x = x * F32x4::splat(0.5);
    let r = half_x
        .mul_add(half_x, z * p / q)
        .zero_unless_ge(x, F32x4::splat(-10.0));
    // r + (x - r) is x exactly (x - r is exact: r is within a factor 2 of x there).
    r + (x - r).zero_unless_ge(x, F32x4::splat(10.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn transpose4_swaps_rows_and_lanes() {
        let m: [[f32; 4]; 4] = std::array::from_fn(|r| std::array::from_fn(|c| (r * 4 + c) as f32));
        let rows = m.map(|r| unsafe { F32x4::load(r.as_ptr()) });
        for (i, v) in F32x4::transpose4(rows).into_iter().enumerate() {
            let mut got = [0f32; 4];
            unsafe { v.store(got.as_mut_ptr()) };
            assert_eq!(got, std::array::from_fn(|j| m[j][i]), "result {i}");
        }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn f16_conversion_matches_half_for_every_value() {
        for h in 0..=u16::MAX {
            let want = half::f16::from_bits(h).to_f32();
            let got = f16_to_f32(h);
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{h:#x}"
            );
        }
        // Four at a time, each lane a different value (and unaligned).
        let all: Vec<u16> = (0..=u16::MAX).collect();
        let bytes: Vec<u8> = std::iter::once(0u8)
            .chain(all.iter().flat_map(|h| h.to_le_bytes()))
            .collect();
        for (i, chunk) in all.chunks_exact(4).enumerate() {
            let mut out = [0f32; 4];
            unsafe { F32x4::load_f16(bytes.as_ptr().add(1 + 8 * i)).store(out.as_mut_ptr()) };
            for (&h, got) in chunk.iter().zip(out) {
                let want = half::f16::from_bits(h).to_f32();
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "vector {h:#x}: {got} vs {want}"
                );
            }
        }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn vector_exp_is_accurate() {
        let mut x = -90.0f32;
        while x < 90.0 {
            let v = [x, x + 0.013, x + 0.37, -x * 0.5];
            let mut out = [0f32; 4];
            unsafe { exp(F32x4::load(v.as_ptr())).store(out.as_mut_ptr()) };
            for (a, b) in out.iter().zip(v) {
                let want = if b < -87.3 { 0.0 } else { b.min(88.7).exp() };
                assert!(
                    (a - want).abs() <= 4e-7 * want,
                    "exp({b}) = {a}, want {want}"
                );
            }
            x += 0.731;
        }
        let mut out = [1f32; 4];
        let v = [f32::NEG_INFINITY, -100.0, -87.3, 0.0];
        unsafe { exp(F32x4::load(v.as_ptr())).store(out.as_mut_ptr()) };
        assert_eq!(&out[..2], &[0.0, 0.0]);
        assert!(out[2] > 0.0 && out[3] == 1.0, "{out:?}");
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn vector_exp_of_nonpositive_inputs_is_accurate() {
        let mut x = -90.0f32;
        while x <= 0.0 {
            let v = [x, (x + 0.013).min(0.0), (x + 0.37).min(0.0), x * 0.5];
            let mut out = [0f32; 4];
            unsafe { exp_nonpos(F32x4::load(v.as_ptr())).store(out.as_mut_ptr()) };
            for (a, b) in out.iter().zip(v) {
                let want = if b < -87.3 { 0.0 } else { b.exp() };
                assert!(
                    (a - want).abs() <= 4e-7 * want,
                    "exp({b}) = {a}, want {want}"
                );
            }
            x += 0.377;
        }
        let mut out = [1f32; 4];
        let v = [f32::NEG_INFINITY, -100.0, -87.3, 0.0];
        unsafe { exp_nonpos(F32x4::load(v.as_ptr())).store(out.as_mut_ptr()) };
        assert_eq!(&out[..2], &[0.0, 0.0]);
        assert!(out[2] > 0.0 && out[3] == 1.0, "{out:?}");
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn vector_gelu_erf_matches_the_f64_formula() {
        let mut worst = 0f64;
        let mut x = -20.0f32;
        while x < 20.0 {
            let v = [x, x + 0.0037, x + 0.011, -x * 0.25];
            let mut out = [0f32; 4];
            unsafe { gelu_erf(F32x4::load(v.as_ptr())).store(out.as_mut_ptr()) };
            for (a, b) in out.iter().zip(v) {
                let b = b as f64;
                let want = 0.5 * b * (1.0 + crate::graph::erf(b / 2f64.sqrt()));
                let err = (*a as f64 - want).abs() / want.abs().max(1.0);
                worst = worst.max(err);
                assert!(err < 1e-6, "gelu_erf({b}) = {a}, want {want}");
            }
            x += 0.0173;
        }
        assert!(worst > 0.0, "compared nothing");
        let mut out = [1f32; 4];
        let v = [-200.0, 200.0, 0.0, -0.0];
        unsafe { gelu_erf(F32x4::load(v.as_ptr())).store(out.as_mut_ptr()) };
        assert_eq!(out, [0.0, 200.0, 0.0, 0.0]);
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn f32x4_basics() {
        let a = [1.0f32, -2.0, 3.0, 4.5];
        let v = unsafe { F32x4::load(a.as_ptr()) };
        assert_eq!(v.hsum(), 6.5);
        assert_eq!(v.hmax(), 4.5);
        let mut out = [0f32; 4];
        unsafe { (v * F32x4::splat(2.0) + v).store(out.as_mut_ptr()) };
        assert_eq!(out, [3.0, -6.0, 9.0, 13.5]);
    }

    /// The block encoder (SIMD128 on wasm) against the scalar one, bit for bit: random
    /// blocks, blocks whose values land exactly on .5 after scaling (the rounding ties) or
    /// just below it, signed zeros, an all-zero block, a NaN, and huge and tiny magnitudes.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn block_encoding_matches_scalar() {
        let mut blocks: Vec<[f32; 32]> = Vec::new();
        let mut s = 0x9e37_79b9u32;
        for scale in [1e-30f32, 1e-3, 1.0, 7.5, 1e30] {
            blocks.push(std::array::from_fn(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s as f32 / u32::MAX as f32 * 2.0 - 1.0) * scale
            }));
        }
        // max |x| = ACT_LEVELS: x / d = x, so every half-integer is a tie.
        blocks.push(std::array::from_fn(|i| {
            if i == 0 {
                ACT_LEVELS
            } else {
                (i as f32 - 16.0) + 0.5
            }
        }));
        blocks.push(std::array::from_fn(|i| if i % 2 == 0 { -0.0 } else { 0.0 }));
        // Subnormal scales: `1 / d` far from `levels / amax`, or infinite, so that `x / d`
        // leaves the i8 range and saturates.
        for amax in [1e-44f32, 3e-39, 1e-37] {
            blocks.push(std::array::from_fn(|i| (i as f32 - 15.5) / 16.5 * amax));
        }
        // max |x| = ACT_LEVELS again (d = 1): the largest f32 below each half-integer, where
        // adding 0.5 itself would round up (see `encode_block`), and the half-integers.
        blocks.push(std::array::from_fn(|i| {
            let h = (i / 2 % 8) as f32 + 0.5;
            let v = if i % 2 == 0 {
                f32::from_bits(h.to_bits() - 1)
            } else {
                h
            };
            match i {
                0 => ACT_LEVELS,
                _ if i >= 16 => -v,
                _ => v,
            }
        }));
        blocks.push(std::array::from_fn(|i| {
            if i == 5 {
                f32::NAN
            } else {
                i as f32
            }
        }));
        for x in &blocks {
            let (mut got, mut want) = ([0i8; 32], [0i8; 32]);
            let (d, dw) = (encode_act(x, &mut got), encode_act_scalar(x, &mut want));
            assert_eq!((d.to_bits(), got), (dw.to_bits(), want), "block {x:?}");
            let ((d, sums), (dw, sums_w)) = (
                encode_act_plain_sums(x, &mut got),
                encode_act_plain_scalar(x, &mut want),
            );
            assert_eq!(
                (d.to_bits(), got, sums),
                (dw.to_bits(), want, sums_w),
                "plain block {x:?}"
            );
            let halves: [i32; 2] =
                [0, 16].map(|h| got[h..h + 16].iter().map(|&v| i32::from(v)).sum());
            assert_eq!(sums, halves, "plain block {x:?}");
        }
    }

    /// The int8 GEMM's 4-row dot: lane `r` adds row `r`'s 4 weights times the activation
    /// slice, every weight value against every activation level the encoding makes.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn four_row_dot_matches_scalar() {
        let x: Vec<f32> = (0..32).map(|i| (i * 91 % 253 - 126) as f32).collect();
        let mut b = vec![0i8; 32];
        encode_act(&x, &mut b);
        for w0 in (-128i32..128).step_by(3) {
            let w: Vec<i8> = (0..16)
                .map(|i| (w0 + i * 17).clamp(-128, 127) as i8)
                .collect();
            for s in 0..8 {
                let xs = &b[s * 4..s * 4 + 4];
                let acc0 = [7, -3, 1 << 20, -(1 << 20)];
                // The slice as the kernels encode it.
                let slice = |x: &[i8]| {
                    let mut e = [0u8; SLICE_BYTES];
                    encode_slices(x, &mut e);
                    unsafe { ActSlice::load(e.as_ptr()) }
                };
                let got =
                    unsafe { I8x16::load(w.as_ptr()).dot4(slice(xs), I32x4::load(acc0.as_ptr())) };
                let got = unsafe {
                    let mut o = [0f32; 4];
                    F32x4::from_i32(got).store(o.as_mut_ptr());
                    o
                };
                for r in 0..4 {
                    let want = acc0[r]
                        + (0..4)
                            .map(|t| w[slot(r, t)] as i32 * xs[t] as i32)
                            .sum::<i32>();
                    assert_eq!(got[r], want as f32, "w0 {w0} slice {s} lane {r}");
                }
                // Weights 0..=127 (Q4_0's nibbles) with full-range activations.
                let wu: Vec<u8> = w.iter().map(|&v| v as u8 & 0x7f).collect();
                let xf: Vec<i8> = (0..4).map(|t| (w0 + 61 * t + s as i32) as i8).collect();
                let got = unsafe {
                    let mut o = [0f32; 4];
                    F32x4::from_i32(
                        slice(&xf).dot4_u(U8x16::load(wu.as_ptr()), I32x4::load(acc0.as_ptr())),
                    )
                    .store(o.as_mut_ptr());
                    o
                };
                for r in 0..4 {
                    let want = acc0[r]
                        + (0..4)
                            .map(|t| wu[slot(r, t)] as i32 * xf[t] as i32)
                            .sum::<i32>();
                    assert_eq!(got[r], want as f32, "u8 w0 {w0} slice {s} lane {r}");
                }
            }
        }
    }

    /// The K-quants' scaled dot at the extremes its i16 sums must hold (±127 activations,
    /// 63 weights, two pairs summed, scales -128 and 127) and on mixed values.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn scaled_dot_matches_scalar() {
        /// Activation and weight values by index.
        type Fill = (fn(usize) -> i8, fn(usize) -> u8);
        let fills: [Fill; 4] = [
            (|_| 127, |_| 63),
            (|_| -127, |_| 63),
            (
                |i| if i % 2 == 0 { 127 } else { -127 },
                |i| (i * 5 % 64) as u8,
            ),
            (
                |i| (i as i32 * 37 % 255 - 127) as i8,
                |i| (i * 11 % 64) as u8,
            ),
        ];
        for (fx, fw) in fills {
            let x: Vec<i8> = (0..32).map(fx).collect();
            let w: Vec<u8> = (0..32).map(fw).collect();
            for sc in [-128i16, -1, 0, 1, 63, 127] {
                let acc0 = [5, -7, 1 << 20, -(1 << 20)];
                let (xv, wv) = unsafe {
                    (
                        [I8x16::load(x.as_ptr()), I8x16::load(x.as_ptr().add(16))],
                        [U8x16::load(w.as_ptr()), U8x16::load(w.as_ptr().add(16))],
                    )
                };
                let acc = unsafe { I32x4::load(acc0.as_ptr()) };
                let dot = |n: usize| -> i32 {
                    (0..16 * n).map(|i| x[i] as i32 * w[i] as i32).sum::<i32>() * sc as i32
                };
                let base: i32 = acc0.iter().sum();
                let one = acc.dot_scaled([xv[0]], [wv[0]], I16x8::splat(sc)).hsum();
                let two = acc.dot_scaled(xv, wv, I16x8::splat(sc)).hsum();
                assert_eq!((one, two), (base + dot(1), base + dot(2)), "scale {sc}");
            }
        }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn integer_dots_match_scalar() {
        let a: Vec<i8> = (0..32).map(|i| (i * 37 % 255 - 127) as i8).collect();
        // Activations as `encode_act` makes them: every level, offset included.
        let levels = ACT_LEVELS as i32;
        let x: Vec<f32> = (0..32).map(|i| (i * 91 % 253 - 126) as f32).collect();
        let mut b = vec![0i8; 32];
        let d = encode_act(&x, &mut b);
        assert_eq!(d, 126.0 / ACT_LEVELS);
        let vals: Vec<i32> = b.iter().map(|&q| q as i32 - ACT_OFFSET as i32).collect();
        assert!(vals.iter().all(|v| v.abs() <= levels) && vals.iter().any(|v| v.abs() == levels));
        let want: i32 = a.iter().zip(&vals).map(|(&x, &y)| x as i32 * y).sum();
        let got = F32x4::from_i32(unsafe { dot_i8x32(a.as_ptr(), b.as_ptr()) }).hsum();
        let raw = F32x4::from_i32(unsafe { I8x32::load(a.as_ptr()).dot(b.as_ptr()) }).hsum();
        let bias = F32x4::from_i32(unsafe { I8x32::load(a.as_ptr()).act_bias() }).hsum();
        let rawwant: i32 = a.iter().zip(&b).map(|(&x, &y)| x as i32 * y as i32).sum();
        let biaswant: i32 = a.iter().map(|&x| x as i32 * ACT_OFFSET as i32).sum();
        // The two halves the kernels combine: the dot with the encoded values, and the offset's
        // share (relaxed SIMD's 8-bit dot computes both exactly only for 7-bit `b`).
        assert_eq!((raw, bias), (rawwant as f32, biaswant as f32));
        assert_eq!(got, want as f32);
        let qs: Vec<u8> = (0..16).map(|i| (i * 29 % 256) as u8).collect();
        let mut a4 = [0i32; 32];
        for i in 0..16 {
            a4[i] = (qs[i] & 15) as i32 - 8;
            a4[i + 16] = (qs[i] >> 4) as i32 - 8;
        }
        let want: i32 = a4.iter().zip(&vals).map(|(&x, &y)| x * y).sum();
        let got = F32x4::from_i32(unsafe { dot_q4x32(qs.as_ptr(), b.as_ptr()) }).hsum();
        assert_eq!(got, want as f32);
    }
}
