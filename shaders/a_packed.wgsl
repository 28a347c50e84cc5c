// Operand `a` read as u32 words: 32-bit values moved bit for bit, or packed f16 and
// block-quantized data (then addressed in halves or bytes; a_f16, a_kquant and a_block_tail
// add `a_get`).
@group(0) @binding(1) var<storage, read_write> a: array<u32>;

// Word k of a's binding, for an operand b that shares it (SHARED_B).
fn a_word(k: u32) -> u32 {
    return a[k];
}

// The byte at byte offset `b`.
fn a_byte(b: u32) -> u32 {
    return (a[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
}

// The f16 at even byte offset `b`.
fn a_half(b: u32) -> f32 {
    return unpack2x16float((a[b >> 2u] >> ((b & 2u) * 8u)) & 0xffffu).x;
}

// Where row i.yzw of `a` starts, in a's units (halves or bytes; the f16 and quantized
// snippets' a_at takes it).
fn a_row(i: vec4<u32>) -> u32 {
    return p.offs.y + i.y * p.a_nb.y + i.z * p.a_nb.z + i.w * p.a_nb.w;
}

// Byte offset of the 32-element block of a block-quantized `a` holding element `i`.
fn a_block(i: vec4<u32>) -> u32 {
    return a_row(i) + (i.x / 32u) * p.a_nb.x;
}
