//! The int8 panels' slice layout and the activations' encoding for the integer dots.

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
    use super::MAGIC_I32;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
