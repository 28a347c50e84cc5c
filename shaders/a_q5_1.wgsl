// Operand `a` in ggml Q5_1 blocks (f16 scale d, f16 min m, 4 bytes of fifth bits, 16 bytes of
// nibbles: 24 bytes), after a_packed (a_block_tail adds the readers): Q5_0's values two bytes
// further on (element j < 16 the low nibble of byte j, j >= 16 the high nibble of byte j - 16,
// bit j of the little-endian u32 at byte 4 its fifth bit); the value is that 5-bit number
// times d plus m.
fn a_q5_high(blk: u32) -> u32 {
    return a_byte(blk + 4u) | (a_byte(blk + 5u) << 8u) | (a_byte(blk + 6u) << 16u) | (a_byte(blk + 7u) << 24u);
}

fn a_at(r: u32, k: u32) -> f32 {
    let blk = r + (k / 32u) * p.a_nb.x;
    let j = k % 32u;
    let byte = a_byte(blk + 8u + j % 16u);
    let nib = select(byte & 15u, byte >> 4u, j >= 16u);
    let v = nib | (((a_q5_high(blk) >> j) & 1u) << 4u);
    return f32(v) * a_half(blk) + a_half(blk + 2u);
}
