//! f16 conversion and the vector functions: `exp` and GELU (erf).

use super::{F32x4, F16_RESCALE};

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
}
