// One Q8_0 block of a (row i.yzw, block at element i.x) dotted with 32 values of b: the
// scale is read once and applied to the integer-weighted sum.
fn a_dot32(i: vec4<u32>, bk: u32) -> f32 {
    let blk = a_block(i);
    var s = 0.0;
    for (var j = 0u; j < 32u; j++) {
        let q = bitcast<i32>(a_byte(blk + 2u + j) << 24u) >> 24u;
        s += f32(q) * b_at(bk + j * p.b_nb.x);
    }
    return a_half(blk) * s;
}
