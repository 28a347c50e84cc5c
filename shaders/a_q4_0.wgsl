// Operand `a` in ggml Q4_0 blocks (f16 scale + 16 bytes of nibbles, 18 bytes), after a_packed
// (a_block_tail adds the readers). Element j < 16 is the low nibble of byte j, element j >= 16
// the high nibble of byte j - 16.
fn a_at(r: u32, k: u32) -> f32 {
    let blk = r + (k / 32u) * p.a_nb.x;
    let j = k % 32u;
    let byte = a_byte(blk + 2u + j % 16u);
    let nib = select(byte & 15u, byte >> 4u, j >= 16u);
    return a_half(blk) * (f32(nib) - 8.0);
}
