// One Q5_0 block of a (row i.yzw, block at element i.x) dotted with 32 values of b: the
// scale and the fifth bits are read once, each byte gives elements j and j + 16.
fn a_dot32(i: vec4<u32>, bk: u32) -> f32 {
    let blk = a_block(i);
    let qh = a_q5_high(blk);
    var s = 0.0;
    for (var j = 0u; j < 16u; j++) {
        let byte = a_byte(blk + 6u + j);
        let lo = (byte & 15u) | (((qh >> j) & 1u) << 4u);
        let hi = (byte >> 4u) | (((qh >> (j + 16u)) & 1u) << 4u);
        s += (f32(lo) - 16.0) * b_at(bk + j * p.b_nb.x);
        s += (f32(hi) - 16.0) * b_at(bk + (j + 16u) * p.b_nb.x);
    }
    return a_half(blk) * s;
}
