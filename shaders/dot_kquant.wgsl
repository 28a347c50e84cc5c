// 32 values of a K-quant row of a (row i.yzw, from element i.x, a multiple of 32) dotted
// with 32 values of b (from word bk, stride b_nb.x), for matvec: per 16 values (one scale)
// sum(q * b) and sum(b), then x * sum(q * b) + y * sum(b), a word of quants at a time.
fn a_dot32(i: vec4<u32>, bk: u32) -> f32 {
    let blk = kq_block(a_row(i), i.x);
    let e0 = i.x % 256u;
    let bs = p.b_nb.x;
    var s = 0.0;
    for (var h = 0u; h < 2u; h++) {
        let e = e0 + h * 16u;
        let sc = kq_scales(blk, e);
        var sq = 0.0;
        var sb = 0.0;
        for (var w = 0u; w < 4u; w++) {
            let o = bk + (h * 16u + w * 4u) * bs;
            let bv = vec4<f32>(b_at(o), b_at(o + bs), b_at(o + 2u * bs), b_at(o + 3u * bs));
            sq += dot(kq_q4(blk, e + w * 4u), bv);
            sb += bv.x + bv.y + bv.z + bv.w;
        }
        s += sc.x * sq + sc.y * sb;
    }
    return s;
}
