// One Q4_1 block of a (row i.yzw, block at element i.x) dotted with 32 values of b: the
// scale and min are read once, each byte gives elements j and j + 16;
// d * sum(q * b) + m * sum(b).
fn a_dot32(i: vec4<u32>, bk: u32) -> f32 {
    let blk = a_block(i);
    var s = 0.0;
    var sb = 0.0;
    for (var j = 0u; j < 16u; j++) {
        let byte = a_byte(blk + 4u + j);
        let b0 = b_at(bk + j * p.b_nb.x);
        let b1 = b_at(bk + (j + 16u) * p.b_nb.x);
        s += f32(byte & 15u) * b0 + f32(byte >> 4u) * b1;
        sb += b0 + b1;
    }
    return a_half(blk) * s + a_half(blk + 2u) * sb;
}
