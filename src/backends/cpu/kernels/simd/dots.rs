//! The integer dots over the lane types: a 32-value block's, and the kernels' choice of
//! 4-row dot as a const parameter.

use super::{ActSlice, I32x4, I8x16, I8x32, U8x16};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cpu::kernels::simd::{
        encode_act, encode_slices, slot, F32x4, I16x8, ACT_LEVELS, ACT_OFFSET, SLICE_BYTES,
    };

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
