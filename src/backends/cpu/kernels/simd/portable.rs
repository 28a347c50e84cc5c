//! The lane types everywhere but wasm32 with `simd128`: plain Rust over fixed-size arrays,
//! shaped so LLVM turns it into the host's vector instructions.

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
