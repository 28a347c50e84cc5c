// 32 values of a K-quant row of a (row i.yzw, from element i.x, a multiple of 32) dotted
// with 32 values of b (from word bk, stride b_nb.x), for matvec: per KQ_SPAN values (one
// scale) sum(q * b) and sum(b), then x * sum(q * b) + y * sum(b), a word of quants at a time.
fn a_dot32(i: vec4<u32>, bk: u32) -> f32 {
    let blk = kq_block(a_row(i), i.x);
    let e0 = i.x % 256u;
    let bs = p.b_nb.x;
    var s = 0.0;
    for (var h = 0u; h < 32u; h += KQ_SPAN) {
        let e = e0 + h;
        let sc = kq_scales(blk, e);
        var sq = 0.0;
        var sb = 0.0;
        for (var w = 0u; w < KQ_SPAN; w += 4u) {
            let o = bk + (h + w) * bs;
            let bv = vec4<f32>(b_at(o), b_at(o + bs), b_at(o + 2u * bs), b_at(o + 3u * bs));
            sq += dot(kq_q4(blk, e + w), bv);
            sb += bv.x + bv.y + bv.z + bv.w;
        }
        s += sc.x * sq + sc.y * sb;
    }
    return s;
}
