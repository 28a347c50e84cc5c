// Operand `a` in ggml K-quant super-blocks (256 values; after a_packed and before the
// type's own snippet, a_q2_k .. a_q6_k). Blocks are 84, 110, 144, 176 or 210 bytes, so a
// block (and a run of 4 of its bytes) may start at any even byte: a_u32 reads 4 bytes at any
// offset. Each type's snippet gives, for value e (0 .. 255) of the block at byte `blk`:
//   kq_scales(blk, e): (x, y), value = x * q + y for the 16 values (e / 16) around e (the 32
//     values (e / 32) for Q4_K / Q5_K: their scales span 32; the type's KQ_SPAN);
//   kq_q(blk, e): its quant q (signed offset applied), and kq_q4(blk, e): q of e .. e + 3
//     (e a multiple of 4; one word of each bit plane).

// The 4 bytes at byte offset `b` (any alignment), little-endian.
fn a_u32(b: u32) -> u32 {
    let w = b >> 2u;
    let s = (b & 3u) * 8u;
    if (s == 0u) {
        return a[w];
    }
    return (a[w] >> s) | (a[w + 1u] << (32u - s));
}

// Bits `shift ..` of each byte of `w` under `mask` (shift + 24 + the mask's width <= 32).
fn kq_bytes(w: u32, shift: u32, mask: u32) -> vec4<u32> {
    return (vec4<u32>(w) >> (vec4<u32>(0u, 8u, 16u, 24u) + vec4<u32>(shift))) & vec4<u32>(mask);
}

// Scale (x) and min (y) j (0 .. 7) of the 12 packed bytes at `s` (Q4_K, Q5_K; ggml's
// get_scale_min_k4).
fn kq_scale_min_k4(s: u32, j: u32) -> vec2<u32> {
    if (j < 4u) {
        return vec2<u32>(a_byte(s + j) & 63u, a_byte(s + j + 4u) & 63u);
    }
    let b = a_byte(s + j + 4u);
    return vec2<u32>(
        (b & 15u) | ((a_byte(s + j - 4u) >> 6u) << 4u),
        (b >> 4u) | ((a_byte(s + j) >> 6u) << 4u),
    );
}

// Byte offset of the super-block holding element k of the row starting at `r`.
fn kq_block(r: u32, k: u32) -> u32 {
    return r + (k / 256u) * p.a_nb.x;
}

// Element k of the row starting at `r`.
fn a_at(r: u32, k: u32) -> f32 {
    let blk = kq_block(r, k);
    let e = k % 256u;
    let s = kq_scales(blk, e);
    return s.x * kq_q(blk, e) + s.y;
}

fn a_get(i: vec4<u32>) -> f32 {
    return a_at(a_row(i), i.x);
}

// a_vec4 reads every layout (4 values never straddle a block or a scale).
fn a_vec_ok() -> bool {
    return true;
}

// Elements k .. k + 3 of the row starting at `r` (k a multiple of 4): one scale, one word
// of each bit plane.
fn a_vec4(r: u32, k: u32) -> vec4<f32> {
    let blk = kq_block(r, k);
    let e = k % 256u;
    let s = kq_scales(blk, e);
    return s.x * kq_q4(blk, e) + vec4<f32>(s.y);
}
