// Source `a` in ggml Q8_0 blocks (f16 scale + 32 x i8, 34 bytes), addressed in bytes.
@group(0) @binding(1) var<storage, read_write> a: array<u32>;

fn a_byte(b: u32) -> u32 {
    return (a[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
}

// The f16 at even byte offset `b`.
fn a_half(b: u32) -> f32 {
    return unpack2x16float((a[b >> 2u] >> ((b & 2u) * 8u)) & 0xffffu).x;
}

fn a_get(i: vec4<u32>) -> f32 {
    let blk = p.offs.y + (i.x / 32u) * p.a_nb.x + i.y * p.a_nb.y + i.z * p.a_nb.z + i.w * p.a_nb.w;
    let q = bitcast<i32>(a_byte(blk + 2u + i.x % 32u) << 24u) >> 24u;
    return a_half(blk) * f32(q);
}

// Word k of a's binding (unused: a b of another dtype never shares a's memory).
fn a_word(k: u32) -> f32 {
    return bitcast<f32>(a[k]);
}
