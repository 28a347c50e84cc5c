// One IQ4_NL block of a (row i.yzw, block at element i.x) dotted with 32 values of b: the
// scale is read once, each byte gives elements j and j + 16 (their table entries).
fn a_dot32(i: vec4<u32>, bk: u32) -> f32 {
    let blk = a_block(i);
    var s = 0.0;
    for (var j = 0u; j < 16u; j++) {
        let byte = a_byte(blk + 2u + j);
        s += IQ4_NL_VALUES[byte & 15u] * b_at(bk + j * p.b_nb.x);
        s += IQ4_NL_VALUES[byte >> 4u] * b_at(bk + (j + 16u) * p.b_nb.x);
    }
    return a_half(blk) * s;
}
