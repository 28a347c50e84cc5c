// Operand `a` in ggml Q4_1 blocks (f16 scale d, f16 min m, 16 bytes of nibbles: 20 bytes),
// after a_packed (a_block_tail adds the readers): Q4_0's nibbles two bytes further on (element
// j < 16 the low nibble of byte j, j >= 16 the high nibble of byte j - 16); the value is that
// nibble times d plus m.
fn a_at(r: u32, k: u32) -> f32 {
    let blk = r + (k / 32u) * p.a_nb.x;
    let j = k % 32u;
    let byte = a_byte(blk + 4u + j % 16u);
    let nib = select(byte & 15u, byte >> 4u, j >= 16u);
    return f32(nib) * a_half(blk) + a_half(blk + 2u);
}
