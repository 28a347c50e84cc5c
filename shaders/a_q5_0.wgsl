// Operand `a` in ggml Q5_0 blocks (f16 scale, 4 bytes of fifth bits, 16 bytes of nibbles: 22
// bytes), after a_packed (a_block_tail adds the readers). Element j < 16 is the low nibble of
// byte j, element j >= 16 the high nibble of byte j - 16; bit j of the little-endian u32 at
// byte 2 is element j's fifth bit; the value is that 5-bit number less 16.
fn a_q5_high(blk: u32) -> u32 {
    return a_byte(blk + 2u) | (a_byte(blk + 3u) << 8u) | (a_byte(blk + 4u) << 16u) | (a_byte(blk + 5u) << 24u);
}

fn a_at(r: u32, k: u32) -> f32 {
    let blk = r + (k / 32u) * p.a_nb.x;
    let j = k % 32u;
    let byte = a_byte(blk + 6u + j % 16u);
    let nib = select(byte & 15u, byte >> 4u, j >= 16u);
    let v = nib | (((a_q5_high(blk) >> j) & 1u) << 4u);
    return a_half(blk) * (f32(v) - 16.0);
}
