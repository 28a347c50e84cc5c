// Source `a` in ggml Q4_0 blocks (f16 scale + 16 bytes of nibbles, 18 bytes), addressed in
// bytes. Element j < 16 is the low nibble of byte j, element j >= 16 the high nibble of j - 16.
@group(0) @binding(1) var<storage, read_write> a: array<u32>;

fn a_byte(b: u32) -> u32 {
    return (a[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
}

fn a_half(b: u32) -> f32 {
    return unpack2x16float((a[b >> 2u] >> ((b & 2u) * 8u)) & 0xffffu).x;
}

fn a_get(i: vec4<u32>) -> f32 {
    let blk = p.offs.y + (i.x / 32u) * p.a_nb.x + i.y * p.a_nb.y + i.z * p.a_nb.z + i.w * p.a_nb.w;
    let j = i.x % 32u;
    let byte = a_byte(blk + 2u + j % 16u);
    let nib = select(byte & 15u, byte >> 4u, j >= 16u);
    return a_half(blk) * (f32(nib) - 8.0);
}

// Word k of a's binding (unused: a b of another dtype never shares a's memory).
fn a_word(k: u32) -> f32 {
    return bitcast<f32>(a[k]);
}
