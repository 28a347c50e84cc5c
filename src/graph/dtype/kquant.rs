//! ggml's reference K-quant quantizers (`quantize_row_q2_K_ref` … `quantize_row_q6_K_ref` in
//! ggml-quants.c), ported step for step so that the bytes equal llama.cpp's when it
//! quantizes without an importance matrix (`quantize_q4_K` & co. call the `_ref` rows then),
//! and its dequantizers (`dequantize_row_q2_K` …), with the super-blocks' layouts.
//!
//! Bit-exactness depends on doing the same f32 operations in the same order: every sum is
//! sequential, products are grouped as C groups them (`w*x*l` is `(w*x)*l`), no fused
//! multiply-add, and rounding is ggml's `nearest_int` (round half to even through the
//! 1.5·2²³ trick). tests/kquant_quantize.rs checks the bytes against llama.cpp's.

use super::blocks::f16_at;

/// Values per K-quant super-block (ggml's QK_K).
pub const QK_K: usize = 256;

/// Bytes of a Q2_K super-block: scales[16], qs[64], f16 `d` and `dmin`.
pub const Q2_K_BYTES: usize = QK_K / 16 + QK_K / 4 + 4;
/// Bytes of a Q3_K super-block: hmask[32], qs[64], scales[12], f16 `d`.
pub const Q3_K_BYTES: usize = QK_K / 8 + QK_K / 4 + 12 + 2;
/// Bytes of a Q4_K super-block: f16 `d` and `dmin`, scales[12], qs[128].
pub const Q4_K_BYTES: usize = 4 + 12 + QK_K / 2;
/// Bytes of a Q5_K super-block: Q4_K's header, qh[32], qs[128].
pub const Q5_K_BYTES: usize = 4 + 12 + QK_K / 8 + QK_K / 2;
/// Bytes of a Q6_K super-block: ql[128], qh[64], scales[16], f16 `d`.
pub const Q6_K_BYTES: usize = QK_K / 2 + QK_K / 4 + QK_K / 16 + 2;

/// ggml's `GROUP_MAX_EPS`: a group whose largest magnitude is below it is all zero.
const GROUP_MAX_EPS: f32 = 1e-15;

/// ggml's `nearest_int`: round half to even by adding 1.5·2²³ and reading the mantissa
/// (exact for |v| ≤ 2²²−1; other inputs, NaN included, give some integer, never a panic).
#[inline]
fn nearest_int(v: f32) -> i32 {
    let bits = (v + 12_582_912.0).to_bits() as i32;
    (bits & 0x007f_ffff) - 0x0040_0000
}

/// f32 to f16 bytes (round to nearest even, as `GGML_FP32_TO_FP16`).
#[inline]
fn f16_bytes(v: f32) -> [u8; 2] {
    half::f16::from_f32(v).to_le_bytes()
}

/// ggml's `make_qx_quants` for `qw == NULL` and `rmse_type == 1` (the only use, Q6_K):
/// levels in `0..2·nmax` into `l`, the scale returned (weights `x²`, ±0.9 scale search).
fn make_qx_quants(nmax: i32, x: &[f32], l_out: &mut [i8]) -> f32 {
    let (mut max, mut amax) = (0f32, 0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        l_out.fill(0);
        return 0.0;
    }
    let level = |iscale: f32, v: f32| nearest_int(iscale * v).clamp(-nmax, nmax - 1);
    let mut iscale = -(nmax as f32) / max;
    let (mut sumlx, mut suml2) = (0f32, 0f32);
    for (o, &v) in l_out.iter_mut().zip(x) {
        let l = level(iscale, v);
        *o = (l + nmax) as i8;
        let w = v * v;
        sumlx += w * v * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in -9..=9 {
        if is == 0 {
            continue;
        }
        iscale = -(nmax as f32 + 0.1 * is as f32) / max;
        sumlx = 0.0;
        suml2 = 0.0;
        for &v in x {
            let l = level(iscale, v);
            let w = v * v;
            sumlx += w * v * l as f32;
            suml2 += w * l as f32 * l as f32;
        }
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for (o, &v) in l_out.iter_mut().zip(x) {
                *o = (level(iscale, v) + nmax) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// ggml's `make_q3_quants` with `do_rmse` (Q3_K): levels in `0..2·nmax`, the scale
/// returned, after up to 5 passes that move single levels while the weighted fit improves.
fn make_q3_quants(nmax: i32, x: &[f32], l_out: &mut [i8]) -> f32 {
    let (mut max, mut amax) = (0f32, 0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        l_out.fill(0);
        return 0.0;
    }
    let iscale = -(nmax as f32) / max;
    let (mut sumlx, mut suml2) = (0f32, 0f32);
    for (o, &v) in l_out.iter_mut().zip(x) {
        let l = nearest_int(iscale * v).clamp(-nmax, nmax - 1);
        *o = l as i8;
        let w = v * v;
        sumlx += w * v * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    for _ in 0..5 {
        let mut changed = 0;
        for (o, &v) in l_out.iter_mut().zip(x) {
            let w = v * v;
            let cur = *o as f32;
            let mut slx = sumlx - w * v * cur;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * cur * cur;
                let new_l = nearest_int(v * sl2 / slx).clamp(-nmax, nmax - 1);
                if new_l != *o as i32 {
                    slx += w * v * new_l as f32;
                    sl2 += w * new_l as f32 * new_l as f32;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        *o = new_l as i8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed += 1;
                    }
                }
            }
        }
        if changed == 0 {
            break;
        }
    }
    for o in l_out.iter_mut() {
        *o += nmax as i8;
    }
    if suml2 > 0.0 {
        sumlx / suml2
    } else {
        0.0
    }
}

/// ggml's `make_qkx2_quants`: an asymmetric fit `x ≈ scale·l − min` with levels in
/// `0..=nmax` (into `l_out`), searching `nstep + 1` scales from `nmax + rmin` in steps of
/// `rdelta` for the least weighted error (absolute with `use_mad`, else squared). Returns
/// `(scale, min)` with `min ≥ 0` the amount subtracted.
#[allow(clippy::too_many_arguments)]
fn make_qkx2_quants(
    nmax: i32,
    x: &[f32],
    weights: &[f32],
    l_out: &mut [u8],
    rmin: f32,
    rdelta: f32,
    nstep: i32,
    use_mad: bool,
) -> (f32, f32) {
    let n = x.len();
    let (mut min, mut max) = (x[0], x[0]);
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x[0];
    for i in 1..n {
        min = if x[i] < min { x[i] } else { min };
        max = if x[i] > max { x[i] } else { max };
        let w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        l_out.fill(0);
        return (0.0, -min);
    }
    let err = |d: f32| if use_mad { d.abs() } else { d * d };
    let mut iscale = nmax as f32 / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0f32;
    for i in 0..n {
        let l = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
        l_out[i] = l as u8;
        best_error += weights[i] * err(scale * l as f32 + min - x[i]);
    }
    if nstep < 1 {
        return (scale, -min);
    }
    let mut aux = [0u8; 32];
    let aux = &mut aux[..n];
    for is in 0..=nstep {
        iscale = (rmin + rdelta * is as f32 + nmax as f32) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0f32, 0f32, 0f32);
        for i in 0..n {
            let l = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
            aux[i] = l as u8;
            let (w, lf) = (weights[i], l as f32);
            sum_l += w * lf;
            sum_l2 += w * lf * lf;
            sum_xl += w * lf * x[i];
        }
        let det = sum_w * sum_l2 - sum_l * sum_l;
        if det > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut cur_error = 0f32;
            for i in 0..n {
                cur_error += weights[i] * err(this_scale * aux[i] as f32 + this_min - x[i]);
            }
            if cur_error < best_error {
                l_out.copy_from_slice(aux);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}

/// Packs 2-bit levels (0..4) of 256 values into Q2_K/Q3_K's 64 bytes: value
/// `128h + 32s + l` at bits `2s` of byte `32h + l`.
fn pack_2bit(l: &[u8; QK_K], qs: &mut [u8]) {
    for h in 0..2 {
        for j in 0..32 {
            let at = 128 * h + j;
            qs[32 * h + j] = l[at] | (l[at + 32] << 2) | (l[at + 64] << 4) | (l[at + 96] << 6);
        }
    }
}

/// `quantize_row_q2_K_ref` on one super-block: 16 groups of 16 fitted with 2-bit levels and
/// a min (`make_qkx2_quants`, absolute error, weights `|x|`), scales and mins as 4-bit
/// multiples of f16 `d` and `dmin`, then levels recomputed against the rounded scales.
fn quantize_block_q2_k(x: &[f32], out: &mut [u8]) {
    let mut l = [0u8; QK_K];
    let (mut scales, mut mins) = ([0f32; 16], [0f32; 16]);
    let (mut max_scale, mut max_min) = (0f32, 0f32);
    for j in 0..16 {
        let g = &x[16 * j..16 * j + 16];
        let mut weights = [0f32; 16];
        for (w, v) in weights.iter_mut().zip(g) {
            *w = v.abs();
        }
        let (s, m) = make_qkx2_quants(
            3,
            g,
            &weights,
            &mut l[16 * j..16 * j + 16],
            -0.5,
            0.1,
            15,
            true,
        );
        scales[j] = s;
        mins[j] = m;
        if s > max_scale {
            max_scale = s;
        }
        if m > max_min {
            max_min = m;
        }
    }
    let (sc, rest) = out.split_at_mut(16);
    if max_scale > 0.0 {
        let iscale = 15.0 / max_scale;
        for j in 0..16 {
            sc[j] = nearest_int(iscale * scales[j]) as u8;
        }
        rest[64..66].copy_from_slice(&f16_bytes(max_scale / 15.0));
    } else {
        sc.fill(0);
        rest[64..66].copy_from_slice(&f16_bytes(0.0));
    }
    if max_min > 0.0 {
        let iscale = 15.0 / max_min;
        for j in 0..16 {
            sc[j] |= (nearest_int(iscale * mins[j]) << 4) as u8;
        }
        rest[66..68].copy_from_slice(&f16_bytes(max_min / 15.0));
    } else {
        rest[66..68].copy_from_slice(&f16_bytes(0.0));
    }
    let (d_all, dmin_all) = (f16_at(rest, 64), f16_at(rest, 66));
    for (j, &s) in sc.iter().enumerate() {
        let d = d_all * (s & 0xf) as f32;
        if d == 0.0 {
            continue;
        }
        let dm = dmin_all * (s >> 4) as f32;
        for i in 16 * j..16 * j + 16 {
            l[i] = nearest_int((x[i] + dm) / d).clamp(0, 3) as u8;
        }
    }
    pack_2bit(&l, &mut rest[..64]);
}

/// `quantize_row_q3_K_ref` on one super-block: 16 groups of 16 with signed 3-bit levels
/// (`make_q3_quants`), 6-bit signed scales of f16 `d`, levels recomputed, then the high
/// bit split off into `hmask` (bit `y / 32` of byte `y % 32`).
fn quantize_block_q3_k(x: &[f32], out: &mut [u8]) {
    let mut l = [0i8; QK_K];
    let mut scales = [0f32; 16];
    let (mut max_scale, mut amax) = (0f32, 0f32);
    for j in 0..16 {
        scales[j] = make_q3_quants(4, &x[16 * j..16 * j + 16], &mut l[16 * j..16 * j + 16]);
        if scales[j].abs() > amax {
            amax = scales[j].abs();
            max_scale = scales[j];
        }
    }
    let (hmask, rest) = out.split_at_mut(32);
    let (qs, rest) = rest.split_at_mut(64);
    let (sc, dbytes) = rest.split_at_mut(12);
    sc.fill(0);
    if max_scale != 0.0 {
        let iscale = -32.0 / max_scale;
        for j in 0..16 {
            // C stores nearest_int into an int8_t before clamping.
            let q = ((nearest_int(iscale * scales[j]) as i8).clamp(-32, 31) + 32) as u8;
            if j < 8 {
                sc[j] = q & 0xf;
            } else {
                sc[j - 8] |= (q & 0xf) << 4;
            }
            sc[j % 4 + 8] |= (q >> 4) << (2 * (j / 4));
        }
        dbytes.copy_from_slice(&f16_bytes(1.0 / iscale));
    } else {
        dbytes.copy_from_slice(&f16_bytes(0.0));
    }
    let d_all = f16_at(dbytes, 0);
    for j in 0..16 {
        let lo = if j < 8 { sc[j] & 0xf } else { sc[j - 8] >> 4 };
        let s = (lo | (((sc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) as i32 - 32;
        let d = d_all * s as f32;
        if d == 0.0 {
            continue;
        }
        for i in 16 * j..16 * j + 16 {
            l[i] = (nearest_int(x[i] / d).clamp(-4, 3) + 4) as i8;
        }
    }
    hmask.fill(0);
    let mut low = [0u8; QK_K];
    for (y, (&q, lo)) in l.iter().zip(low.iter_mut()).enumerate() {
        let mut q = q as u8;
        if q > 3 {
            hmask[y % 32] |= 1 << (y / 32);
            q -= 4;
        }
        *lo = q;
    }
    pack_2bit(&low, qs);
}

/// Q4_K/Q5_K's 8 scale/min pairs as 6-bit multiples of `max_scale / 63` and
/// `max_min / 63`, packed into 12 bytes (the inverse of `get_scale_min_k4`), with the f16
/// `d` and `dmin` at `out[0..4]`.
fn pack_scales_k4(scales: &[f32; 8], mins: &[f32; 8], out: &mut [u8]) {
    let (max_scale, max_min) = scales
        .iter()
        .zip(mins)
        .fold((0f32, 0f32), |(ms, mm), (&s, &m)| {
            (if s > ms { s } else { ms }, if m > mm { m } else { mm })
        });
    let inv_scale = if max_scale > 0.0 {
        63.0 / max_scale
    } else {
        0.0
    };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    let sc = &mut out[4..16];
    for j in 0..8 {
        let ls = (nearest_int(inv_scale * scales[j]) as u8).min(63);
        let lm = (nearest_int(inv_min * mins[j]) as u8).min(63);
        if j < 4 {
            sc[j] = ls;
            sc[j + 4] = lm;
        } else {
            sc[j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
            sc[j - 4] |= (ls >> 4) << 6;
            sc[j] |= (lm >> 4) << 6;
        }
    }
    out[0..2].copy_from_slice(&f16_bytes(max_scale / 63.0));
    out[2..4].copy_from_slice(&f16_bytes(max_min / 63.0));
}

/// `quantize_row_q4_K_ref` / `_q5_K_ref` on one super-block (`nmax` 15 or 31): 8 groups of
/// 32 fitted with `make_qkx2_quants` (squared error, weights `rms + |x|`), the packed
/// scales, then levels recomputed against the rounded scale and min of each group.
fn levels_q45_k(x: &[f32], nmax: i32, rmin: f32, nstep: i32, out: &mut [u8]) -> [u8; QK_K] {
    let mut l = [0u8; QK_K];
    let (mut scales, mut mins) = ([0f32; 8], [0f32; 8]);
    for j in 0..8 {
        let g = &x[32 * j..32 * j + 32];
        let mut sum_x2 = 0f32;
        for &v in g {
            sum_x2 += v * v;
        }
        let av_x = (sum_x2 / 32.0).sqrt();
        let mut weights = [0f32; 32];
        for (w, v) in weights.iter_mut().zip(g) {
            *w = av_x + v.abs();
        }
        let lj = &mut l[32 * j..32 * j + 32];
        (scales[j], mins[j]) = make_qkx2_quants(nmax, g, &weights, lj, rmin, 0.1, nstep, false);
    }
    pack_scales_k4(&scales, &mins, out);
    let (d_all, dmin_all) = (f16_at(out, 0), f16_at(out, 2));
    for j in 0..8 {
        let (sc, m) = scale_min_k4(j, &out[4..16]);
        let d = d_all * sc as f32;
        if d == 0.0 {
            continue;
        }
        let dm = dmin_all * m as f32;
        for i in 32 * j..32 * j + 32 {
            l[i] = nearest_int((x[i] + dm) / d).clamp(0, nmax) as u8;
        }
    }
    l
}

/// `quantize_row_q4_K_ref` on one super-block: nibble `n` of byte `32c + l` is value
/// `64c + 32n + l`.
fn quantize_block_q4_k(x: &[f32], out: &mut [u8]) {
    let l = levels_q45_k(x, 15, -1.0, 20, out);
    let qs = &mut out[16..144];
    for c in 0..4 {
        for j in 0..32 {
            qs[32 * c + j] = l[64 * c + j] | (l[64 * c + j + 32] << 4);
        }
    }
}

/// `quantize_row_q5_K_ref` on one super-block: Q4_K's nibbles plus bit `y / 32` of
/// `qh[y % 32]` for levels of 16 and above.
fn quantize_block_q5_k(x: &[f32], out: &mut [u8]) {
    let l = levels_q45_k(x, 31, -0.5, 15, out);
    let (qh, qs) = out[16..176].split_at_mut(32);
    qh.fill(0);
    for c in 0..4 {
        for j in 0..32 {
            let (mut l1, mut l2) = (l[64 * c + j], l[64 * c + j + 32]);
            if l1 > 15 {
                l1 -= 16;
                qh[j] |= 1 << (2 * c);
            }
            if l2 > 15 {
                l2 -= 16;
                qh[j] |= 2 << (2 * c);
            }
            qs[32 * c + j] = l1 | (l2 << 4);
        }
    }
}

/// `quantize_row_q6_K_ref` on one super-block: 16 groups of 16 with signed 6-bit levels
/// (`make_qx_quants`, weights `x²`), `i8` scales of f16 `d`, levels recomputed, then split
/// into low nibbles (`ql`) and 2-bit high parts (`qh`).
fn quantize_block_q6_k(x: &[f32], out: &mut [u8]) {
    let mut l = [0i8; QK_K];
    let mut scales = [0f32; 16];
    let (mut max_scale, mut max_abs) = (0f32, 0f32);
    for j in 0..16 {
        scales[j] = make_qx_quants(32, &x[16 * j..16 * j + 16], &mut l[16 * j..16 * j + 16]);
        if scales[j].abs() > max_abs {
            max_abs = scales[j].abs();
            max_scale = scales[j];
        }
    }
    if max_abs < GROUP_MAX_EPS {
        out.fill(0);
        return;
    }
    let iscale = -128.0 / max_scale;
    out[208..210].copy_from_slice(&f16_bytes(1.0 / iscale));
    let d_all = f16_at(out, 208);
    for j in 0..16 {
        out[192 + j] = nearest_int(iscale * scales[j]).min(127) as i8 as u8;
    }
    for j in 0..16 {
        let d = d_all * out[192 + j] as i8 as f32;
        if d == 0.0 {
            continue;
        }
        for i in 16 * j..16 * j + 16 {
            l[i] = (nearest_int(x[i] / d).clamp(-32, 31) + 32) as i8;
        }
    }
    let (ql, rest) = out.split_at_mut(128);
    let qh = &mut rest[..64];
    for h in 0..2 {
        for j in 0..32 {
            let at = 128 * h + j;
            let q = [l[at], l[at + 32], l[at + 64], l[at + 96]].map(|v| v as u8);
            ql[64 * h + j] = (q[0] & 0xf) | ((q[2] & 0xf) << 4);
            ql[64 * h + j + 32] = (q[1] & 0xf) | ((q[3] & 0xf) << 4);
            qh[32 * h + j] =
                (q[0] >> 4) | ((q[1] >> 4) << 2) | ((q[2] >> 4) << 4) | ((q[3] >> 4) << 6);
        }
    }
}

/// Quantizes `src` (whole super-blocks) with `block`, one block of `bytes` a super-block.
fn quantize_blocks(src: &[f32], dst: &mut [u8], bytes: usize, block: fn(&[f32], &mut [u8])) {
    for (x, out) in src.chunks_exact(QK_K).zip(dst.chunks_exact_mut(bytes)) {
        block(x, out);
    }
}

/// Quantizes `src` (whole super-blocks) to Q2_K bytes as `quantize_row_q2_K_ref`.
pub fn quantize_q2_k(src: &[f32], dst: &mut [u8]) {
    quantize_blocks(src, dst, Q2_K_BYTES, quantize_block_q2_k)
}

/// Quantizes `src` (whole super-blocks) to Q3_K bytes as `quantize_row_q3_K_ref`.
pub fn quantize_q3_k(src: &[f32], dst: &mut [u8]) {
    quantize_blocks(src, dst, Q3_K_BYTES, quantize_block_q3_k)
}

/// Quantizes `src` (whole super-blocks) to Q4_K bytes as `quantize_row_q4_K_ref`.
pub fn quantize_q4_k(src: &[f32], dst: &mut [u8]) {
    quantize_blocks(src, dst, Q4_K_BYTES, quantize_block_q4_k)
}

/// Quantizes `src` (whole super-blocks) to Q5_K bytes as `quantize_row_q5_K_ref`.
pub fn quantize_q5_k(src: &[f32], dst: &mut [u8]) {
    quantize_blocks(src, dst, Q5_K_BYTES, quantize_block_q5_k)
}

/// Quantizes `src` (whole super-blocks) to Q6_K bytes as `quantize_row_q6_K_ref`.
pub fn quantize_q6_k(src: &[f32], dst: &mut [u8]) {
    quantize_blocks(src, dst, Q6_K_BYTES, quantize_block_q6_k)
}

/// llama.cpp's `use_more_bits(i, n)`: the layers (of `n`) its `*_M` mixes give more bits to
/// (the first and last eighth, and every third between).
pub fn use_more_bits(i: usize, n: usize) -> bool {
    i < n / 8 || i >= 7 * n / 8 || (i as isize - (n / 8) as isize) % 3 == 2
}

/// `dequantize_row_q2_K`: value `128h + 32s + l` is bits `2s..2s+2` of `qs[32h + l]` times
/// Dequantizes Q2_K bytes into `dst` (a whole number of super-blocks), as ggml's
/// `d · (scale & 15)`, less `dmin · (scale >> 4)`, with scale `(128h + 32s + l) / 16`.
pub fn dequantize_q2_k(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src.chunks_exact(Q2_K_BYTES).zip(dst.chunks_exact_mut(QK_K)) {
        let (scales, qs) = (&blk[..16], &blk[16..80]);
        let (d, min) = (f16_at(blk, 80), f16_at(blk, 82));
        for (y, o) in out.iter_mut().enumerate() {
            let (h, s, l) = (y / 128, (y / 32) % 4, y % 32);
            let sc = scales[y / 16];
            let dl = d * (sc & 0xf) as f32;
            let ml = min * (sc >> 4) as f32;
            let q = (qs[32 * h + l] >> (2 * s)) & 3;
            *o = dl * q as f32 - ml;
        }
    }
}

/// Dequantizes Q3_K bytes into `dst` (a whole number of super-blocks), as ggml's
/// `dequantize_row_q3_K`: 2 low bits as Q2_K's, less 4 where the value's `hmask` bit is
/// clear, times `d · (scale - 32)` (16 6-bit scales: low nibbles in bytes 0..8, high bit
/// pairs in bytes 8..12).
pub fn dequantize_q3_k(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src.chunks_exact(Q3_K_BYTES).zip(dst.chunks_exact_mut(QK_K)) {
        let (hmask, qs, scales) = (&blk[..32], &blk[32..96], &blk[96..108]);
        let d = f16_at(blk, 108);
        let mut sc = [0f32; 16];
        for (i, s) in sc.iter_mut().enumerate() {
            let lo = (scales[i % 8] >> (4 * (i / 8))) & 0xf;
            let hi = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
            *s = d * ((lo | (hi << 4)) as i32 - 32) as f32;
        }
        for (y, o) in out.iter_mut().enumerate() {
            let (h, s, l) = (y / 128, (y / 32) % 4, y % 32);
            let lo = ((qs[32 * h + l] >> (2 * s)) & 3) as i32;
            let high = (hmask[l] >> (y / 32)) & 1;
            let q = lo - if high != 0 { 0 } else { 4 };
            *o = sc[y / 16] * q as f32;
        }
    }
}

/// Scale and min `j` (0..8) of a Q4_K/Q5_K super-block's 12 packed bytes (ggml's
/// `get_scale_min_k4`).
#[inline]
fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// Dequantizes Q4_K (or, with `high`, Q5_K) bytes into `dst`, as ggml's
/// `dequantize_row_q4_K` / `_q5_K`: value `64c + 32n + l` is nibble `n` of `qs[32c + l]`
/// (plus 16 for Q5_K's bit `y / 32` of `qh[l]`), times `d · scale`, less `dmin · min`,
/// with scale/min pair `y / 32`.
fn dequantize_q45_k(high: bool, src: &[u8], dst: &mut [f32]) {
    let bytes = if high { Q5_K_BYTES } else { Q4_K_BYTES };
    for (blk, out) in src.chunks_exact(bytes).zip(dst.chunks_exact_mut(QK_K)) {
        let (d, min) = (f16_at(blk, 0), f16_at(blk, 2));
        let scales = &blk[4..16];
        let (qh, qs) = if high {
            (&blk[16..48], &blk[48..176])
        } else {
            (&blk[..0], &blk[16..144])
        };
        for (j, sub) in out.chunks_exact_mut(32).enumerate() {
            let (sc, m) = scale_min_k4(j, scales);
            let d1 = d * sc as f32;
            let m1 = min * m as f32;
            let (c, n) = (j / 2, j % 2);
            for (l, o) in sub.iter_mut().enumerate() {
                let mut q = (qs[32 * c + l] >> (4 * n)) & 0xf;
                if high {
                    q |= ((qh[l] >> j) & 1) << 4;
                }
                *o = d1 * q as f32 - m1;
            }
        }
    }
}

/// Dequantizes Q4_K bytes into `dst` (a whole number of super-blocks).
pub fn dequantize_q4_k(src: &[u8], dst: &mut [f32]) {
    dequantize_q45_k(false, src, dst)
}

/// Dequantizes Q5_K bytes into `dst` (a whole number of super-blocks).
pub fn dequantize_q5_k(src: &[u8], dst: &mut [f32]) {
    dequantize_q45_k(true, src, dst)
}

/// Dequantizes Q6_K bytes into `dst` (a whole number of super-blocks), as ggml's
/// `dequantize_row_q6_K`: value `128h + 64n + l` (l < 64) has low nibble `n` of
/// `ql[64h + l]` and high bits `2s..2s+2` of `qh[32h + l % 32]` (`s = (y % 128) / 32`),
/// less 32, times `d · scales[y / 16]` (`i8`).
pub fn dequantize_q6_k(src: &[u8], dst: &mut [f32]) {
    for (blk, out) in src.chunks_exact(Q6_K_BYTES).zip(dst.chunks_exact_mut(QK_K)) {
        let (ql, qh, scales) = (&blk[..128], &blk[128..192], &blk[192..208]);
        let d = f16_at(blk, 208);
        for (y, o) in out.iter_mut().enumerate() {
            let (h, r) = (y / 128, y % 128);
            let (n, l) = (r / 64, r % 64);
            let lo = (ql[64 * h + l] >> (4 * n)) & 0xf;
            let hi = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
            let q = (lo | (hi << 4)) as i32 - 32;
            *o = d * scales[y / 16] as i8 as f32 * q as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_int_rounds_half_to_even() {
        let cases = [
            (0.5, 0),
            (1.5, 2),
            (2.5, 2),
            (-0.5, 0),
            (-1.5, -2),
            (3.49, 3),
            (-7.7, -8),
        ];
        for (v, want) in cases {
            assert_eq!(nearest_int(v), want, "{v}");
        }
        // Out of range and NaN: some integer, no panic.
        let _ = (
            nearest_int(f32::NAN),
            nearest_int(1e30),
            nearest_int(f32::NEG_INFINITY),
        );
    }
}
