// ggml Q3_K (110 bytes): hmask[32] (value e's high bit is bit e / 32 of hmask[e % 32]),
// qs[64] (low 2 bits, as Q2_K's), scales[12] (16 6-bit scales: low nibbles in bytes 0 .. 7,
// high bit pairs in bytes 8 .. 11), f16 d. Value = d * (scale - 32) * (low - 4 * !high).

// Values sharing one kq_scales (dot_kquant decodes it once per KQ_SPAN).
const KQ_SPAN: u32 = 16u;

fn kq_scales(blk: u32, e: u32) -> vec2<f32> {
    let i = e / 16u;
    let lo = (a_byte(blk + 96u + i % 8u) >> ((i / 8u) * 4u)) & 15u;
    let hi = (a_byte(blk + 104u + i % 4u) >> ((i / 4u) * 2u)) & 3u;
    return vec2<f32>(a_half(blk + 108u) * f32(i32(lo | (hi << 4u)) - 32), 0.0);
}

// Byte offset and shift of value e's low bits.
fn q3k_at(blk: u32, e: u32) -> vec2<u32> {
    return vec2<u32>(blk + 32u + (e / 128u) * 32u + e % 32u, ((e / 32u) % 4u) * 2u);
}

fn kq_q(blk: u32, e: u32) -> f32 {
    let o = q3k_at(blk, e);
    let lo = (a_byte(o.x) >> o.y) & 3u;
    let hi = (a_byte(blk + e % 32u) >> (e / 32u)) & 1u;
    return f32(i32(lo + 4u * hi) - 4);
}

fn kq_q4(blk: u32, e: u32) -> vec4<f32> {
    let o = q3k_at(blk, e);
    let lo = kq_bytes(a_u32(o.x), o.y, 3u);
    let hi = kq_bytes(a_u32(blk + e % 32u), e / 32u, 1u);
    return vec4<f32>(vec4<i32>(lo + 4u * hi) - vec4<i32>(4));
}
