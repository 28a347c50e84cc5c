// Operand `a` in ggml Q8_0 blocks (f16 scale + 32 x i8, 34 bytes), after a_packed;
// a_block_tail adds the readers.
fn a_at(r: u32, k: u32) -> f32 {
    let blk = r + (k / 32u) * p.a_nb.x;
    let q = bitcast<i32>(a_byte(blk + 2u + k % 32u) << 24u) >> 24u;
    return a_half(blk) * f32(q);
}
