// ggml Q2_K (84 bytes): scales[16] (low nibble: scale, high nibble: min, per 16 values),
// qs[64] (2-bit quants: value 128h + 32s + l is bits 2s of qs[32h + l]), f16 d, f16 dmin.
// Value = d * (sc & 15) * q - dmin * (sc >> 4).

// Values sharing one kq_scales (dot_kquant decodes it once per KQ_SPAN).
const KQ_SPAN: u32 = 16u;

fn kq_scales(blk: u32, e: u32) -> vec2<f32> {
    let sc = a_byte(blk + e / 16u);
    return vec2<f32>(a_half(blk + 80u) * f32(sc & 15u), -(a_half(blk + 82u) * f32(sc >> 4u)));
}

// Byte offset and shift of value e's quant.
fn q2k_at(blk: u32, e: u32) -> vec2<u32> {
    return vec2<u32>(blk + 16u + (e / 128u) * 32u + e % 32u, ((e / 32u) % 4u) * 2u);
}

fn kq_q(blk: u32, e: u32) -> f32 {
    let o = q2k_at(blk, e);
    return f32((a_byte(o.x) >> o.y) & 3u);
}

fn kq_q4(blk: u32, e: u32) -> vec4<f32> {
    let o = q2k_at(blk, e);
    return vec4<f32>(kq_bytes(a_u32(o.x), o.y, 3u));
}
