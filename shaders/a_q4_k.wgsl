// ggml Q4_K (144 bytes): f16 d, f16 dmin, scales[12] (8 6-bit scale/min pairs, one per 32
// values), qs[128] (value 64c + 32n + l is nibble n of qs[32c + l]).
// Value = d * scale * q - dmin * min.

// Values sharing one kq_scales (dot_kquant decodes it once per KQ_SPAN).
const KQ_SPAN: u32 = 32u;

fn kq_scales(blk: u32, e: u32) -> vec2<f32> {
    let sm = kq_scale_min_k4(blk + 4u, e / 32u);
    return vec2<f32>(a_half(blk) * f32(sm.x), -(a_half(blk + 2u) * f32(sm.y)));
}

// Byte offset and shift of value e's nibble.
fn q4k_at(blk: u32, e: u32) -> vec2<u32> {
    let j = e / 32u;
    return vec2<u32>(blk + 16u + (j / 2u) * 32u + e % 32u, (j & 1u) * 4u);
}

fn kq_q(blk: u32, e: u32) -> f32 {
    let o = q4k_at(blk, e);
    return f32((a_byte(o.x) >> o.y) & 15u);
}

fn kq_q4(blk: u32, e: u32) -> vec4<f32> {
    let o = q4k_at(blk, e);
    return vec4<f32>(kq_bytes(a_u32(o.x), o.y, 15u));
}
