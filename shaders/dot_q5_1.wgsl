// One Q5_1 block of a (row i.yzw, block at element i.x) dotted with 32 values of b: the
// scale, min and fifth bits are read once, each byte gives elements j and j + 16;
// d * sum(q * b) + m * sum(b).
fn a_dot32(i: vec4<u32>, bk: u32) -> f32 {
    let blk = a_block(i);
    let qh = a_q5_high(blk);
    var s = 0.0;
    var sb = 0.0;
    for (var j = 0u; j < 16u; j++) {
        let byte = a_byte(blk + 8u + j);
        let lo = (byte & 15u) | (((qh >> j) & 1u) << 4u);
        let hi = (byte >> 4u) | (((qh >> (j + 16u)) & 1u) << 4u);
        let b0 = b_at(bk + j * p.b_nb.x);
        let b1 = b_at(bk + (j + 16u) * p.b_nb.x);
        s += f32(lo) * b0 + f32(hi) * b1;
        sb += b0 + b1;
    }
    return a_half(blk) * s + a_half(blk + 2u) * sb;
}
