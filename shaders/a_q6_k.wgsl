// ggml Q6_K (210 bytes): ql[128] (low nibbles: value 128h + 32g + l is nibble g / 2 of
// ql[64h + 32 (g & 1) + l]), qh[64] (high bit pairs: bits 2g of qh[32h + l]), scales[16]
// (i8, one per 16 values), f16 d. Value = d * scale * (q - 32).

// Values sharing one kq_scales (dot_kquant decodes it once per KQ_SPAN).
const KQ_SPAN: u32 = 16u;

fn kq_scales(blk: u32, e: u32) -> vec2<f32> {
    let sc = bitcast<i32>(a_byte(blk + 192u + e / 16u) << 24u) >> 24u;
    return vec2<f32>(a_half(blk + 208u) * f32(sc), 0.0);
}

// Byte offsets of value e's low and high bits, and their shifts.
fn q6k_at(blk: u32, e: u32) -> vec4<u32> {
    let h = e / 128u;
    let g = (e / 32u) % 4u;
    let l = e % 32u;
    return vec4<u32>(blk + h * 64u + (g & 1u) * 32u + l, blk + 128u + h * 32u + l, (g / 2u) * 4u, g * 2u);
}

fn kq_q(blk: u32, e: u32) -> f32 {
    let o = q6k_at(blk, e);
    let q = ((a_byte(o.x) >> o.z) & 15u) | (((a_byte(o.y) >> o.w) & 3u) << 4u);
    return f32(i32(q) - 32);
}

fn kq_q4(blk: u32, e: u32) -> vec4<f32> {
    let o = q6k_at(blk, e);
    let q = kq_bytes(a_u32(o.x), o.z, 15u) | (kq_bytes(a_u32(o.y), o.w, 3u) << vec4<u32>(4u));
    return vec4<f32>(vec4<i32>(q) - vec4<i32>(32));
}
