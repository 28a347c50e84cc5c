// 32 products of a (row i.yzw, from i.x) with b (from word bk, stride b_nb.x), for matvec.
fn a_dot32(i: vec4<u32>, bk: u32) -> f32 {
    var s = 0.0;
    for (var j = 0u; j < 32u; j++) {
        s += a_get(vec4<u32>(i.x + j, i.y, i.z, i.w)) * b_at(bk + j * p.b_nb.x);
    }
    return s;
}
