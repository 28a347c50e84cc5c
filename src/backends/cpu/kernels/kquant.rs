//! K-quant (Q2_K … Q6_K) matmul on integer dot products, as ggml's `vec_dot_qX_K_q8_K`: each
//! activation row is quantized on the fly to ggml's Q8_K (per 256 values one f32 scale, 256
//! i8 and the 16 sums of each 16 values), each weight super-block is unpacked in registers
//! into 256 non-negative values and 16 integer scales and mins, and an output is, per
//! super-block, `dx · (d · Σ scale_s · dot_s − dmin · Σ min_s · xsum_s)` with `dot_s` the
//! integer dot of sub-block `s`'s 16 values (one relaxed-SIMD 8-bit dot instruction).
//! Weights are read in GGUF's layout as they are: no copy, no packing at load (unpacking a
//! super-block costs a few instructions per 16 values, shared by up to 4 activation rows in
//! the GEMM's tiles). That is Q2_K's path, and 3-D weights'; 2-D Q3_K, Q4_K, Q5_K and Q6_K
//! weights (the Q3_K_M, Q4_K_M and Q5_K_M mixes') take int8 panels (`quant::Int8Panels`,
//! which decode and encode their super-blocks with [`decode`] / [`encode`]): their
//! matrix-vector product runs 1.7–1.8× this path's (Node, relaxed SIMD, 4096 × 4096), 2.2–2.6×
//! in a decoder's profile in Chromium (see the README).
//!
//! Every type is brought to one form, `w = d · sc_s · q − dmin · mn_s` with `q` in 0..=63
//! per 16-value group `s`: Q4_K/Q5_K's 32-value scale/min pairs repeated, Q2_K's 4-bit
//! pairs, and for the symmetric types (Q3_K's `q − 4`, Q6_K's `q − 32`) `mn_s = offset ·
//! sc_s` with `dmin = d`, subtracted in integers before the one conversion to f32.

use super::batch::{Batches, DstRows};
use super::elementwise::Epilogue;
use super::quant::act::{weight_row_runs, Layout, QuantRows};
use super::simd::{
    put_slice_row, store_lanes, ActSlice, F32x4, I16x8, I32x4, I8x16, U8x16, SLICE_BYTES,
};
use crate::backends::cpu::pool::Par;
use crate::backends::cpu::TensorView;
use crate::graph::{DType, QK_K};
use std::ops::Range;

/// Sub-blocks of 16 values per super-block.
const GROUPS: usize = QK_K / 16;

/// Quantizes one super-block of activations: ggml's Q8_K (`d = max|x| / 127`, values rounded
/// half away from zero), returns `d`.
#[inline]
fn quantize_q8k(x: &[f32], q: &mut [i8], sums: &mut [i32]) -> f32 {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    // Half away from zero by adding ±0.5 and truncating (`round` is a libm call in wasm);
    // |v · id| <= 127, and the saturating casts take NaN to 0.
    for (o, &v) in q.iter_mut().zip(x) {
        let s = v * id;
        *o = (s + 0.5f32.copysign(s)) as i32 as i8;
    }
    for (s, g) in sums.iter_mut().zip(q.chunks_exact(16)) {
        *s = g.iter().map(|&v| v as i32).sum();
    }
    d
}

/// One weight super-block in the common form (see the module comment).
#[repr(C, align(16))]
pub(super) struct Unpacked {
    /// 256 values, 0..=63.
    pub q: [u8; QK_K],
    /// Scale of each 16 values.
    pub sc: [i32; GROUPS],
    /// Min (or offset · scale) of each 16 values.
    pub mn: [i32; GROUPS],
    pub d: f32,
    pub dmin: f32,
}

impl Unpacked {
    pub fn new() -> Self {
        Self {
            q: [0; QK_K],
            sc: [0; GROUPS],
            mn: [0; GROUPS],
            d: 0.0,
            dmin: 0.0,
        }
    }

    /// Stores 16 values at group `g`.
    #[inline(always)]
    fn put(&mut self, g: usize, v: U8x16) {
        // In range: g < 16.
        unsafe { v.store(self.q.as_mut_ptr().add(g * 16)) }
    }
}

/// Little-endian f16 at byte `at` of `b`, as f32.
#[inline(always)]
fn f16_le(b: &[u8], at: usize) -> f32 {
    super::simd::f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// 16 bytes of `b` from `at`.
#[inline(always)]
fn load16(b: &[u8], at: usize) -> U8x16 {
    let s = &b[at..at + 16];
    // In range: `s` is 16 bytes.
    unsafe { U8x16::load(s.as_ptr()) }
}

/// A K-quant's super-block unpacker and the facts the kernels branch on. The kernels are
/// generic over it: [`Q2K`] gives them constants, so its unpacking is inlined into its dot
/// loop (Q2_K weights have no int8 panels: this is their decoding kernel); [`Paneled`]
/// gives them run-time values for the four types that do have panels, whose weights come
/// here only when they were not made panels (3-D or not stored), so those four share one
/// copy of the kernels (each copy is about 11 KB of wasm).
trait KQuant: Copy {
    /// Whether scales come in pairs of groups (Q4_K, Q5_K: 32-value sub-blocks), so two
    /// 16-value dots share one multiply by the scale.
    fn paired(self) -> bool;
    /// The symmetric types' offset (`mn_s = OFFSET · sc_s`); 0 for the others.
    fn offset(self) -> i32;
    /// Whether mins are an offset of the values scaled like them (`dmin == d`: Q3_K, Q6_K).
    fn symmetric(self) -> bool {
        self.offset() != 0
    }
    /// Bytes of a super-block.
    fn bytes(self) -> usize;
    /// Unpacks super-block `b` (its bytes) into `u`.
    fn unpack(self, b: &[u8], u: &mut Unpacked);
}

/// Q2_K, at compile time.
#[derive(Clone, Copy)]
struct Q2K;

impl KQuant for Q2K {
    #[inline(always)]
    fn paired(self) -> bool {
        false
    }
    #[inline(always)]
    fn offset(self) -> i32 {
        0
    }
    #[inline(always)]
    fn bytes(self) -> usize {
        84
    }
    #[inline(always)]
    fn unpack(self, b: &[u8], u: &mut Unpacked) {
        unpack_q2_k(b, u)
    }
}

/// Q3_K, Q4_K, Q5_K or Q6_K, at run time.
#[derive(Clone, Copy)]
struct Paneled {
    dtype: DType,
    paired: bool,
    offset: i32,
    bytes: usize,
}

impl Paneled {
    fn of(dtype: DType) -> Self {
        let (paired, offset) = match dtype {
            DType::Q3_K => (false, 4),
            DType::Q6_K => (false, 32),
            _ => (true, 0),
        };
        let bytes = dtype.block_bytes();
        Self {
            dtype,
            paired,
            offset,
            bytes,
        }
    }
}

impl KQuant for Paneled {
    fn paired(self) -> bool {
        self.paired
    }
    fn offset(self) -> i32 {
        self.offset
    }
    fn bytes(self) -> usize {
        self.bytes
    }
    fn unpack(self, b: &[u8], u: &mut Unpacked) {
        decode(self.dtype, b, u)
    }
}

/// Q2_K (84 bytes: scales[16], qs[64], d, dmin): value `128h + 32s + l` is bits `2s..2s+2` of
/// `qs[32h + l]`; group `g` has scale `scales[g] & 15`, min `scales[g] >> 4`.
#[inline(always)]
fn unpack_q2_k(b: &[u8], u: &mut Unpacked) {
    for h in 0..2 {
        for half in 0..2 {
            let qs = load16(b, 16 + 32 * h + 16 * half);
            for s in 0..4 {
                u.put(8 * h + 2 * s + half, qs.bits(2 * s as u32, 3));
            }
        }
    }
    for (g, &s) in b[..16].iter().enumerate() {
        u.sc[g] = (s & 15) as i32;
        u.mn[g] = (s >> 4) as i32;
    }
    (u.d, u.dmin) = (f16_le(b, 80), f16_le(b, 82));
}

/// Q3_K (110 bytes: hmask[32], qs[64], scales[12], d): Q2_K's low bits plus 4 where the
/// value's `hmask` bit is set, offset 4; 6-bit scales less 32.
#[inline(always)]
fn unpack_q3_k(b: &[u8], u: &mut Unpacked) {
    for half in 0..2 {
        let hm = load16(b, 16 * half);
        for h in 0..2 {
            let qs = load16(b, 32 + 32 * h + 16 * half);
            for s in 0..4 {
                let hi = hm.bits((4 * h + s) as u32, 1).shl(2);
                u.put(8 * h + 2 * s + half, qs.bits(2 * s as u32, 3).or(hi));
            }
        }
    }
    let scales = &b[96..108];
    for g in 0..GROUPS {
        let lo = (scales[g % 8] >> (4 * (g / 8))) & 0xf;
        let hi = (scales[8 + g % 4] >> (2 * (g / 4))) & 3;
        let sc = (lo | (hi << 4)) as i32 - 32;
        u.sc[g] = sc;
        u.mn[g] = 4 * sc;
    }
    let d = f16_le(b, 108);
    (u.d, u.dmin) = (d, d);
}

/// Scale and min `j` (0..8) of Q4_K/Q5_K's 12 packed bytes (ggml's `get_scale_min_k4`).
#[inline(always)]
fn scale_min_k4(j: usize, q: &[u8]) -> (i32, i32) {
    let (s, m) = if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    };
    (s as i32, m as i32)
}

/// Q4_K's and Q5_K's header: `d`, `dmin` and the 8 scale/min pairs, each for 2 groups.
#[inline(always)]
fn q45_header(b: &[u8], u: &mut Unpacked) {
    let scales = &b[4..16];
    for j in 0..8 {
        let (s, m) = scale_min_k4(j, scales);
        u.sc[2 * j] = s;
        u.sc[2 * j + 1] = s;
        u.mn[2 * j] = m;
        u.mn[2 * j + 1] = m;
    }
    (u.d, u.dmin) = (f16_le(b, 0), f16_le(b, 2));
}

/// Q4_K (144 bytes: d, dmin, scales[12], qs[128]): value `64c + 32n + l` is nibble `n` of
/// `qs[32c + l]`.
#[inline(always)]
fn unpack_q4_k(b: &[u8], u: &mut Unpacked) {
    for c in 0..4 {
        for half in 0..2 {
            let qs = load16(b, 16 + 32 * c + 16 * half);
            u.put(4 * c + half, qs.bits(0, 15));
            u.put(4 * c + 2 + half, qs.bits(4, 15));
        }
    }
    q45_header(b, u);
}

/// Q5_K (176 bytes: Q4_K's header, qh[32], qs[128]): Q4_K's nibbles plus 16 where bit `y / 32`
/// of `qh[y % 32]` is set.
#[inline(always)]
fn unpack_q5_k(b: &[u8], u: &mut Unpacked) {
    for half in 0..2 {
        let qh = load16(b, 16 + 16 * half);
        for c in 0..4 {
            let qs = load16(b, 48 + 32 * c + 16 * half);
            for n in 0..2 {
                let hi = qh.bits((2 * c + n) as u32, 1).shl(4);
                u.put(4 * c + 2 * n + half, qs.bits(4 * n as u32, 15).or(hi));
            }
        }
    }
    q45_header(b, u);
}

/// Q6_K (210 bytes: ql[128], qh[64], scales[16] i8, d): value `128h + 64n + l` (l < 64) has
/// low nibble `n` of `ql[64h + l]` and high bits `2(r / 32)` of `qh[32h + r % 32]` with
/// `r = 64n + l`; offset 32.
#[inline(always)]
fn unpack_q6_k(b: &[u8], u: &mut Unpacked) {
    for h in 0..2 {
        for t in 0..4 {
            let ql = load16(b, 64 * h + 16 * t);
            let qh = load16(b, 128 + 32 * h + 16 * (t % 2));
            for n in 0..2 {
                let hi = qh.bits((2 * (2 * n + t / 2)) as u32, 3).shl(4);
                u.put(8 * h + 4 * n + t, ql.bits(4 * n as u32, 15).or(hi));
            }
        }
    }
    for (g, &s) in b[192..208].iter().enumerate() {
        u.sc[g] = s as i8 as i32;
        u.mn[g] = 32 * (s as i8 as i32);
    }
    let d = f16_le(b, 208);
    (u.d, u.dmin) = (d, d);
}

/// Super-block `b` (its GGUF bytes) of a Q3_K, Q4_K, Q5_K or Q6_K weight into `u`. (The
/// int8 panels hold these four types, `quant::Int8Panels`, and call this only for them.)
pub(super) fn decode(dtype: DType, b: &[u8], u: &mut Unpacked) {
    debug_assert!(
        matches!(dtype, DType::Q3_K | DType::Q4_K | DType::Q5_K | DType::Q6_K),
        "{dtype:?}"
    );
    match dtype {
        DType::Q3_K => unpack_q3_k(b, u),
        DType::Q6_K => unpack_q6_k(b, u),
        DType::Q5_K => unpack_q5_k(b, u),
        _ => unpack_q4_k(b, u),
    }
}

/// The GGUF bytes of a Q3_K, Q4_K, Q5_K or Q6_K super-block `u` (as [`decode`] gave it, so
/// its scales fit the type's fields and `d`/`dmin` are f16 values) into `out`, the inverse of
/// [`decode`]. Only for those four types, as [`decode`].
pub(super) fn encode(dtype: DType, u: &Unpacked, out: &mut [u8]) {
    debug_assert!(
        matches!(dtype, DType::Q3_K | DType::Q4_K | DType::Q5_K | DType::Q6_K),
        "{dtype:?}"
    );
    let f16 = |v: f32| half::f16::from_f32(v).to_le_bytes();
    match dtype {
        DType::Q3_K => {
            // Value `128h + 32s + l`: bits 0-1 at bits `2s` of `qs[32h + l]`, bit 2 at bit
            // `4h + s` of `hmask[l]`; group `g`'s scale plus 32 in 6 bits, its low 4 at
            // nibble `g / 8` of `scales[g % 8]`, its high 2 at bits `2(g / 4)` of
            // `scales[8 + g % 4]` (the inverse of `unpack_q3_k`).
            out[..108].fill(0);
            for h in 0..2 {
                for s in 0..4 {
                    for l in 0..32 {
                        let v = u.q[128 * h + 32 * s + l];
                        out[32 + 32 * h + l] |= (v & 3) << (2 * s);
                        out[l] |= (v >> 2 & 1) << (4 * h + s);
                    }
                }
            }
            for (g, &sc) in u.sc.iter().enumerate() {
                let v = (sc + 32) as u8;
                out[96 + g % 8] |= (v & 15) << (4 * (g / 8));
                out[96 + 8 + g % 4] |= (v >> 4) << (2 * (g / 4));
            }
            out[108..110].copy_from_slice(&f16(u.d));
        }
        DType::Q4_K | DType::Q5_K => {
            out[0..2].copy_from_slice(&f16(u.d));
            out[2..4].copy_from_slice(&f16(u.dmin));
            // The inverse of `scale_min_k4`: pairs 0..4 in the low 6 bits of bytes 0..8,
            // pairs 4..8 in the nibbles of bytes 8..12 and the top 2 bits of bytes 0..8.
            let (sc, mn) = (|j: usize| u.sc[2 * j] as u8, |j: usize| u.mn[2 * j] as u8);
            let q = &mut out[4..16];
            for j in 0..4 {
                q[j] = sc(j) | (sc(j + 4) >> 4) << 6;
                q[j + 4] = mn(j) | (mn(j + 4) >> 4) << 6;
                q[j + 8] = sc(j + 4) & 15 | (mn(j + 4) & 15) << 4;
            }
            // Value `64c + 32n + l`: nibble `n` of `qs[32c + l]`, Q5_K's fifth bit at bit
            // `2c + n` of `qh[l]`.
            let q5 = dtype == DType::Q5_K;
            let qs = if q5 { 48 } else { 16 };
            if q5 {
                out[16..48].fill(0);
            }
            for c in 0..4 {
                for l in 0..32 {
                    let (a, b) = (u.q[64 * c + l], u.q[64 * c + 32 + l]);
                    out[qs + 32 * c + l] = a & 15 | (b & 15) << 4;
                    if q5 {
                        out[16 + l] |= (a >> 4) << (2 * c) | (b >> 4) << (2 * c + 1);
                    }
                }
            }
        }
        DType::Q6_K => {
            out[..192].fill(0);
            for h in 0..2 {
                for n in 0..2 {
                    for t in 0..4 {
                        for i in 0..16 {
                            let v = u.q[128 * h + 64 * n + 16 * t + i];
                            out[64 * h + 16 * t + i] |= (v & 15) << (4 * n);
                            out[128 + 32 * h + 16 * (t % 2) + i] |=
                                (v >> 4 & 3) << (2 * (2 * n + t / 2));
                        }
                    }
                }
            }
            for (o, &s) in out[192..208].iter_mut().zip(&u.sc) {
                *o = s as i8 as u8;
            }
            out[208..210].copy_from_slice(&f16(u.d));
        }
        _ => {}
    }
}

/// Dot of one unpacked super-block with an activation super-block (values at `x`, 16 group
/// sums at `s`, scale `dx`), as 4 f32 lanes whose sum it is: no horizontal sum per
/// super-block (the row's lanes are summed once, by [`dot_row`]).
///
/// # Safety
/// `x` readable for 256 i8, `s` for 16 i32.
#[inline(always)]
unsafe fn dot_sb<T: KQuant>(t: T, u: &Unpacked, x: *const i8, s: *const i32, dx: f32) -> F32x4 {
    let zero = I32x4::splat(0);
    let mut acc = [zero; 2];
    let q = u.q.as_ptr();
    let w = |g: usize| unsafe { U8x16::load(q.add(g * 16)) };
    let xv = |g: usize| unsafe { I8x16::load(x.add(g * 16)) };
    if t.paired() {
        for (i, g) in (0..GROUPS).step_by(2).enumerate() {
            let sc = I16x8::splat(u.sc[g] as i16);
            acc[i % 2] = acc[i % 2].dot_scaled([xv(g), xv(g + 1)], [w(g), w(g + 1)], sc);
        }
    } else {
        for g in 0..GROUPS {
            let sc = I16x8::splat(u.sc[g] as i16);
            acc[g % 2] = acc[g % 2].dot_scaled([xv(g)], [w(g)], sc);
        }
    }
    // The mins' Σ mn · xsum, in lanes as the dots are.
    let mut m = zero;
    for i in 0..4 {
        m = m + unsafe { I32x4::load(u.mn.as_ptr().add(4 * i)).mul(I32x4::load(s.add(4 * i))) };
    }
    let isum = acc[0] + acc[1];
    if t.symmetric() {
        F32x4::from_i32(isum - m) * F32x4::splat(dx * u.d)
    } else {
        F32x4::from_i32(isum) * F32x4::splat(dx * u.d)
            - F32x4::from_i32(m) * F32x4::splat(dx * u.dmin)
    }
}

/// Weight rows per block of the output loop (cut over threads in whole blocks).
const M_BLOCK: usize = 16;
/// Activation rows per tile of the GEMM (its panels' dots take this many at once).
const N_TILE: usize = 4;

/// Activation row `j` of `xq` (row length `nb` super-blocks) dotted with the super-blocks
/// `sb(b)`, `b` in `0 .. nb`, summed.
///
/// # Safety
/// Activation row `j` in `xq`.
#[inline(always)]
unsafe fn dot_row<T: KQuant>(
    t: T,
    xq: &QuantRows,
    j: usize,
    nb: usize,
    mut sb: impl FnMut(usize) -> *const Unpacked,
) -> f32 {
    let k = nb * QK_K;
    let mut acc = F32x4::splat(0.0);
    for b in 0..nb {
        // In range: row `j`'s super-block `b`; `sb` gives a live super-block.
        unsafe {
            let x = xq.q.as_ptr().add(j * k + b * QK_K);
            let s = xq.s.as_ptr().add((j * nb + b) * GROUPS);
            acc = acc + dot_sb(t, &*sb(b), x, s, *xq.d.get_unchecked(j * nb + b));
        }
    }
    acc.hsum()
}

/// Output rows `0 .. n` × weight rows `rows`, the unit of work of [`matmul`]'s threads, not
/// inlined into their closure (see `quant::int8_block` on V8's tiers). One activation row
/// (a matrix-vector product, the decoder's every token) unpacks each super-block as it is
/// read and dots it at once; from `N_TILE` rows on, the rows are unpacked once into
/// [`Panels`] (about 1.7 bytes per weight, for 16 rows) and dotted with tiles of up to
/// `N_TILE` activation rows.
///
/// # Safety
/// Every weight row of `rows` in `a`'s batch `(a2, a3)`; activation rows `0 .. n` in `xq`;
/// dst rows `0 .. n` hold `a.ne[1]` f32.
#[inline(never)]
unsafe fn block<T: KQuant>(
    t: T,
    out: &DstRows,
    a: &TensorView,
    (a2, a3): (usize, usize),
    rows: Range<usize>,
    xq: &QuantRows,
    n: usize,
) {
    let nb = a.ne[0] / QK_K;
    let bytes = t.bytes();
    debug_assert_eq!(bytes, a.dtype.block_bytes());
    // In range: row `i` of the batch holds `nb` super-blocks.
    let blk = |i: usize, b: usize| unsafe {
        let w = a.ptr_at([0, i, a2, a3]) as *const u8;
        std::slice::from_raw_parts(w.add(b * bytes), bytes)
    };
    let store = |j: usize, i: usize, v: f32| unsafe { *out.row(j).add(i) = v };
    if n < N_TILE {
        let mut u = Unpacked::new();
        for i in rows {
            for j in 0..n {
                let up: *mut Unpacked = &mut u;
                let r = unsafe {
                    dot_row(t, xq, j, nb, |b| {
                        t.unpack(blk(i, b), &mut *up);
                        up
                    })
                };
                store(j, i, r);
            }
        }
        return;
    }
    let panels = Panels::new(t, rows.len(), nb, |r, b| blk(rows.start + r, b));
    let mut j0 = 0;
    while j0 < n {
        let cols = N_TILE.min(n - j0);
        for g in 0..rows.len().div_ceil(GROUP) {
            // In range: group `g` of the panels (weight rows from `rows.start + 4g`, as many
            // as `rows` has), activation rows `j0 .. j0 + cols`.
            let (i0, m) = (rows.start + g * GROUP, rows.len() - g * GROUP);
            unsafe {
                match cols {
                    4 => panel_tile::<T, 4>(t, out, &panels, g, xq, (j0, i0), m),
                    3 => panel_tile::<T, 3>(t, out, &panels, g, xq, (j0, i0), m),
                    2 => panel_tile::<T, 2>(t, out, &panels, g, xq, (j0, i0), m),
                    _ => panel_tile::<T, 1>(t, out, &panels, g, xq, (j0, i0), m),
                }
            }
        }
        j0 += cols;
    }
}

/// Weight rows per panel group: one 8-bit dot instruction yields 4 rows' partial dots (as
/// `quant::Int8Panels`).
const GROUP: usize = 4;
/// Bytes of one group's super-block of values (4 rows × 256).
const GROUP_SB: usize = GROUP * QK_K;

/// A block of a K-quant weight's rows unpacked for the GEMM, in groups of 4 rows (the last
/// padded with zero rows) laid out like `quant::Int8Panels`, so that one dot instruction
/// with an activation slice (4 values, repeated) yields 4 rows' partial dots in its 4 lanes:
///
/// - `values`: per `[group][super-block]` 64 slices of 16 bytes, slice `t` holding values
///   `4t .. 4t + 4` (0..=63) of the 4 rows as [`slot`] places them;
/// - `sc`, `mn`: per `[group][super-block][16-value group]` the 4 rows' scales and mins;
/// - `d`, `dmin`: per `[group][super-block]` the 4 rows' `d` and `dmin`.
///
/// The symmetric types' `mn` and `dmin` are empty: their mins are `OFFSET ·` the scales,
/// `dmin` is `d`.
///
/// Made per block of `M_BLOCK` rows per call (where the row dots unpacked each row's
/// super-blocks alike), so K-quant weights keep their GGUF bytes for the matrix-vector
/// product of decoding.
struct Panels {
    nb: usize,
    values: Vec<u8>,
    sc: Vec<i32>,
    mn: Vec<i32>,
    d: Vec<f32>,
    dmin: Vec<f32>,
}

impl Panels {
    /// `rows` rows of `nb` super-blocks each, super-block `b` of row `r` at `blk(r, b)`.
    fn new<'a, T: KQuant>(
        t: T,
        rows: usize,
        nb: usize,
        blk: impl Fn(usize, usize) -> &'a [u8],
    ) -> Self {
        let sbs = rows.div_ceil(GROUP) * nb;
        let mins = if t.symmetric() { 0 } else { sbs };
        let mut p = Self {
            nb,
            values: vec![0; sbs * GROUP_SB],
            sc: vec![0; sbs * GROUPS * GROUP],
            mn: vec![0; mins * GROUPS * GROUP],
            d: vec![0.0; sbs * GROUP],
            dmin: vec![0.0; mins * GROUP],
        };
        let mut u = Unpacked::new();
        for row in 0..rows {
            let (g, r) = (row / GROUP, row % GROUP);
            for b in 0..nb {
                t.unpack(blk(row, b), &mut u);
                let sb = g * nb + b;
                let vals = &mut p.values[sb * GROUP_SB..(sb + 1) * GROUP_SB];
                for (slice, four) in vals.chunks_exact_mut(16).zip(u.q.chunks_exact(4)) {
                    put_slice_row(slice, r, four);
                }
                for s in 0..GROUPS {
                    p.sc[(sb * GROUPS + s) * GROUP + r] = u.sc[s];
                    if !t.symmetric() {
                        p.mn[(sb * GROUPS + s) * GROUP + r] = u.mn[s];
                    }
                }
                p.d[sb * GROUP + r] = u.d;
                if !t.symmetric() {
                    p.dmin[sb * GROUP + r] = u.dmin;
                }
            }
        }
        p
    }
}

/// Group `g`'s 4 weight rows (output rows `i0 ..`, `m` of them at most) dotted with
/// activation rows `j0 .. j0 + C`, stored in `out`: per super-block,
/// per 16 (paired types: 32) values, one chain of dot instructions, multiplied by the 4
/// rows' integer scales into the super-block's integer sum; the mins' `Σ mn · xsum` beside
/// it (subtracted in integers for the symmetric types); one multiply-add in f32.
///
/// The i32 sums cannot overflow: values are 0..=63, activations -127..=127 and scales at
/// most 128 in magnitude (Q6_K's signed 8-bit ones), so a super-block's `Σ sc · dot` is at
/// most 256 · 63 · 127 · 128 ≈ 2.6e8; mins at most 32 · 128 = 4096 (Q6_K's offset times
/// its scale) against sums of 16 activations (≤ 2032), so `Σ mn · xsum` ≤ 1.3e8; and their
/// difference stays under 4e8, a fifth of `i32::MAX`. Each super-block starts at zero.
///
/// # Safety
/// Group `g` in `p`; activation rows `j0 .. j0 + C` in `xq` with their slices; dst rows
/// `j0 .. j0 + C` hold columns `i0 .. i0 + m.min(4)`.
#[inline(always)]
unsafe fn panel_tile<T: KQuant, const C: usize>(
    t: T,
    out: &DstRows,
    p: &Panels,
    g: usize,
    xq: &QuantRows,
    (j0, i0): (usize, usize),
    m: usize,
) {
    let nb = p.nb;
    let k = nb * QK_K;
    let span = if t.paired() { 2 } else { 1 };
    let zero = I32x4::splat(0);
    let mut accf = [F32x4::splat(0.0); C];
    for b in 0..nb {
        let sb = g * nb + b;
        unsafe {
            let w = p.values.as_ptr().add(sb * GROUP_SB);
            let x: [*const u8; C] = std::array::from_fn(|c| xq.slices((j0 + c) * k + b * QK_K));
            let mut acc = [zero; C];
            for s in (0..GROUPS).step_by(span) {
                let mut t = [zero; C];
                for sl in 4 * s..4 * (s + span) {
                    let ws = U8x16::load(w.add(sl * 16));
                    for c in 0..C {
                        t[c] = ActSlice::load(x[c].add(sl * SLICE_BYTES)).dot4_u(ws, t[c]);
                    }
                }
                let sc = I32x4::load(p.sc.as_ptr().add((sb * GROUPS + s) * GROUP));
                for c in 0..C {
                    acc[c] = acc[c] + t[c].mul(sc);
                }
            }
            // The symmetric types' `Σ sc · xsum`, times the offset below.
            let mins = if t.symmetric() { &p.sc } else { &p.mn };
            let mut m = [zero; C];
            for s in 0..GROUPS {
                let mn = I32x4::load(mins.as_ptr().add((sb * GROUPS + s) * GROUP));
                for (c, m) in m.iter_mut().enumerate() {
                    let xs = *xq.s.get_unchecked(((j0 + c) * nb + b) * GROUPS + s);
                    *m = *m + mn.mul(I32x4::splat(xs));
                }
            }
            let d = F32x4::load(p.d.as_ptr().add(sb * GROUP));
            let dmin = if t.symmetric() {
                d
            } else {
                F32x4::load(p.dmin.as_ptr().add(sb * GROUP))
            };
            for c in 0..C {
                let dx = F32x4::splat(*xq.d.get_unchecked((j0 + c) * nb + b));
                accf[c] = if t.symmetric() {
                    let m = m[c].mul(I32x4::splat(t.offset()));
                    accf[c].mul_add(F32x4::from_i32(acc[c] - m), d * dx)
                } else {
                    accf[c]
                        .mul_add(F32x4::from_i32(acc[c]), d * dx)
                        .mul_add(F32x4::from_i32(m[c]), F32x4::splat(0.0) - dmin * dx)
                };
            }
        }
    }
    for (c, v) in accf.iter().enumerate() {
        // In range: as the caller says.
        unsafe { store_lanes(*v, out.row(j0 + c).add(i0), m) };
    }
}

/// The [`KQuant`] of a K-quant dtype: `Ok(None)` for Q2_K ([`Q2K`]), `Ok(Some)` for the
/// others ([`Paneled`]); `Err` for other dtypes.
fn kquant_of(dtype: DType) -> std::result::Result<Option<Paneled>, ()> {
    match dtype {
        DType::Q2_K => Ok(None),
        DType::Q3_K | DType::Q4_K | DType::Q5_K | DType::Q6_K => Ok(Some(Paneled::of(dtype))),
        // Not a K-quant (`integer_dots_match_dequantized_weights` runs every K-quant here).
        _ => Err(()),
    }
}

/// Quantizes flat activation rows `0 .. count` of `b` (see [`Batches`]) to Q8_K, with the
/// panels' slices for the GEMM (from `N_TILE` rows on, see `block`).
fn quantize_rows(
    par: Par,
    b: &TensorView,
    rows: Batches,
    count: usize,
    k: usize,
    xq: &mut QuantRows,
) {
    let nb = k / QK_K;
    let per_row = [nb, nb * GROUPS];
    xq.quantize(
        par,
        b,
        rows,
        count,
        k,
        per_row,
        if count >= N_TILE {
            Layout::Slices
        } else {
            Layout::Rows
        },
        |x, d, q, s| {
            for (((x, d), q), s) in x
                .chunks_exact(QK_K)
                .zip(d.iter_mut())
                .zip(q.chunks_exact_mut(QK_K))
                .zip(s.chunks_exact_mut(GROUPS))
            {
                *d = quantize_q8k(x, q, s);
            }
        },
    );
}

/// `dst = src0 · src1ᵀ` for K-quant `a` and f32 `b`, `ep` applied as rows are stored;
/// `false` when this kernel does not apply (other dtypes, strided weight rows).
pub fn matmul(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    ep: Option<&Epilogue>,
) -> bool {
    let Ok(kind) = kquant_of(a.dtype) else {
        return false;
    };
    if b.dtype != DType::F32 || !super::packed_f32(dst) || !a.rows_contiguous() {
        return false;
    }
    let k = a.ne[0];
    if !k.is_multiple_of(QK_K) {
        return false;
    }
    weight_row_runs(
        par,
        dst,
        a,
        b,
        ep,
        M_BLOCK,
        |rows, count, xq| quantize_rows(par, b, rows, count, k, xq),
        // In range: weight rows of `a`'s batch, activation rows `0 .. count`.
        |out, ab, ms, xq, count| unsafe {
            match kind {
                None => block(Q2K, out, a, ab, ms, xq, count),
                Some(t) => block(t, out, a, ab, ms, xq, count),
            }
        },
    );
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cpu::Pool;
    use crate::graph::{contiguous_strides, row_to_f32};
    use crate::testing::{random_k_quant, Rng};

    /// `m` rows of `k` random valid super-blocks of `dtype`, with edge cases among them: a
    /// super-block with zero `d` and `dmin`, one with every scale and min byte at its
    /// largest (extreme mins), one with every value bit set.
    fn weights(rng: &mut Rng, dtype: DType, m: usize, k: usize) -> Vec<u8> {
        let mut w = random_k_quant(rng, dtype, m * k, 1.0).expect("a K-quant");
        let bb = dtype.block_bytes();
        let blocks = w.len() / bb;
        let (hdr, scales): (&[usize], Range<usize>) = match dtype {
            DType::Q2_K => (&[80, 82], 0..16),
            DType::Q3_K => (&[108], 96..108),
            DType::Q4_K | DType::Q5_K => (&[0, 2], 4..16),
            _ => (&[208], 192..208),
        };
        for &at in hdr {
            w[at] = 0;
            w[at + 1] = 0;
        }
        if blocks > 1 {
            for b in &mut w[bb + scales.start..bb + scales.end] {
                // Q6_K's scales are i8: 0x80 is -128, its most negative.
                *b = if dtype == DType::Q6_K { 0x80 } else { 0xff };
            }
        }
        if blocks > 2 {
            let keep = scales.clone();
            for (i, b) in w[2 * bb..3 * bb].iter_mut().enumerate() {
                if !keep.contains(&i) && !hdr.iter().any(|&h| i == h || i == h + 1) {
                    *b = 0xff;
                }
            }
        }
        w
    }

    fn view(bytes: &mut [u8], dtype: DType, ne: [usize; 4]) -> TensorView {
        let nb = contiguous_strides(dtype, ne).expect("small");
        // The bytes outlive every use of the view in these tests.
        unsafe { TensorView::from_raw(bytes.as_mut_ptr(), dtype, ne, nb) }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn super_block_sizes_match_dtypes() {
        // (The run-time kinds read theirs from the dtype.)
        assert_eq!(Q2K.bytes(), DType::Q2_K.block_bytes());
    }

    /// The integer kernel against the dequantized weights times the activations as Q8_K
    /// holds them (in f64: the kernel's only other error is f32 rounding of per-super-block
    /// terms), and within the op suite's tolerance of the f32 activations; for the GEMV's
    /// and GEMM's row counts; 1 and 2 threads give the same bytes.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn integer_dots_match_dequantized_weights() {
        let pool = Pool::new(Some(if cfg!(target_arch = "wasm32") { 1 } else { 2 })).unwrap();
        let mut rng = Rng::new(26);
        for dtype in DType::K_QUANTS {
            for (m, n, k) in [(37, 1, 768), (5, 3, 256), (19, 9, 512), (33, 70, 256)] {
                let mut w = weights(&mut rng, dtype, m, k);
                let mut x: Vec<f32> = (0..n * k).map(|_| rng.uniform(-1.0, 1.0)).collect();
                // An all-zero super-block and a large one.
                x[..QK_K].fill(0.0);
                if n > 1 {
                    x[k..k + QK_K].iter_mut().for_each(|v| *v *= 1e4);
                }
                let mut xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
                let wv = view(&mut w, dtype, [k, m, 1, 1]);
                let xv = view(&mut xb, DType::F32, [k, n, 1, 1]);
                let mut outs = [vec![0u8; m * n * 4], vec![0u8; m * n * 4]];
                for (o, par) in outs.iter_mut().zip([Par::SERIAL, pool.par().eager()]) {
                    let ov = view(o, DType::F32, [m, n, 1, 1]);
                    assert!(matmul(par, &ov, &wv, &xv, None), "{dtype:?} declined");
                }
                assert_eq!(outs[0], outs[1], "{dtype:?} {m}x{n}x{k}: 1 vs 2 threads");
                let got: Vec<f32> = outs[0]
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                let rb = dtype.row_bytes(k).unwrap();
                let mut wrow = vec![0f32; k];
                let (mut q, mut sums) = (vec![0i8; QK_K], vec![0i32; GROUPS]);
                let (mut err, mut sig) = (0f64, 0f64);
                for j in 0..n {
                    let xr = &x[j * k..(j + 1) * k];
                    let xq: Vec<f64> = xr
                        .chunks_exact(QK_K)
                        .flat_map(|c| {
                            let d = quantize_q8k(c, &mut q, &mut sums) as f64;
                            q.iter().map(|&v| d * v as f64).collect::<Vec<_>>()
                        })
                        .collect();
                    for i in 0..m {
                        row_to_f32(dtype, &w[i * rb..(i + 1) * rb], &mut wrow);
                        let (mut want, mut mag, mut exact) = (0f64, 0f64, 0f64);
                        for t in 0..k {
                            want += wrow[t] as f64 * xq[t];
                            mag += (wrow[t] as f64 * xq[t]).abs();
                            exact += wrow[t] as f64 * xr[t] as f64;
                        }
                        let g = got[j * m + i] as f64;
                        assert!(
                            (g - want).abs() <= 1e-5 * mag + 1e-30,
                            "{dtype:?} {m}x{n}x{k} out ({j}, {i}): {g} vs {want} (|terms| {mag})"
                        );
                        err += (g - exact).powi(2);
                        sig += exact.powi(2);
                    }
                }
                assert!(sig > 0.0, "{dtype:?}: all-zero outputs compare nothing");
                assert!(
                    err / sig < 5e-4,
                    "{dtype:?} {m}x{n}x{k}: nmse {}",
                    err / sig
                );
            }
        }
    }
}
