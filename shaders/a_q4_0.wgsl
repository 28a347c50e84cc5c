// Operand `a` in ggml Q4_0 blocks (f16 scale + 16 bytes of nibbles, 18 bytes), after
// a_packed. Element j < 16 is the low nibble of byte j, element j >= 16 the high nibble of
// byte j - 16.
fn a_at(r: u32, k: u32) -> f32 {
    let blk = r + (k / 32u) * p.a_nb.x;
    let j = k % 32u;
    let byte = a_byte(blk + 2u + j % 16u);
    let nib = select(byte & 15u, byte >> 4u, j >= 16u);
    return a_half(blk) * (f32(nib) - 8.0);
}

fn a_get(i: vec4<u32>) -> f32 {
    return a_at(a_row(i), i.x);
}

// a_vec4 reads every layout (element by element: blocks are not word-aligned).
fn a_vec_ok() -> bool {
    return true;
}

// Elements k .. k + 3 of the row starting at `r`.
fn a_vec4(r: u32, k: u32) -> vec4<f32> {
    return vec4<f32>(a_at(r, k), a_at(r, k + 1u), a_at(r, k + 2u), a_at(r, k + 3u));
}
