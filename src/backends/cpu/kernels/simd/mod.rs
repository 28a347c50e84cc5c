//! The SIMD primitives the fast kernels are written in: a 4-lane f32 vector and 32-wide
//! i8 dot products, with one implementation per instruction set. wasm32 with `simd128`
//! uses `core::arch::wasm32`; everything else gets plain Rust over fixed-size arrays, shaped
//! so LLVM turns it into the host's vector instructions.
//!
//! All loads and stores are unaligned (tensor views may start anywhere).
//!
//! The lane types are in `simd128.rs` (wasm32 with `simd128`) and `portable.rs` (the rest),
//! one cfg each; `encode.rs` has the activations' encoding and the panels' layout, `dots.rs`
//! the integer dots, `math.rs` f16 conversion, `exp` and GELU.

mod dots;
mod encode;
mod math;
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
mod portable;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128;

pub use dots::*;
pub use encode::*;
pub use math::*;
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
pub use portable::*;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub use simd128::*;

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

/// 1.5 · 2^23: an integer-valued f32 `v` (|v| < 2^22) plus this holds `v` in its low
/// mantissa bits, so that its bits minus this constant's are `v` as an i32.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
const MAGIC_I32: f32 = 12_582_912.0;

/// 2^112: an f16's exponent and mantissa shifted into an f32 (`bits << 13`) read as f32 is
/// the f16's value times 2^-112, for normal and subnormal f16 alike.
const F16_RESCALE: f32 = f32::from_bits((112 + 127) << 23);

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
    fn f32x4_basics() {
        let a = [1.0f32, -2.0, 3.0, 4.5];
        let v = unsafe { F32x4::load(a.as_ptr()) };
        assert_eq!(v.hsum(), 6.5);
        assert_eq!(v.hmax(), 4.5);
        let mut out = [0f32; 4];
        unsafe { (v * F32x4::splat(2.0) + v).store(out.as_mut_ptr()) };
        assert_eq!(out, [3.0, -6.0, 9.0, 13.5]);
    }
}
