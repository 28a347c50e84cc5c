// Operand `a` in ggml Q8_0 blocks (f16 scale + 32 x i8, 34 bytes), after a_packed.
fn a_get(i: vec4<u32>) -> f32 {
    let blk = a_block(i);
    let q = bitcast<i32>(a_byte(blk + 2u + i.x % 32u) << 24u) >> 24u;
    return a_half(blk) * f32(q);
}
