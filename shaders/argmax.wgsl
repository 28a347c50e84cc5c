// Index of each row's maximum, the first one on ties. u.y: row count.

fn row(r: vec4<u32>, lane: u32, live: bool) {
    let n = p.a_ne.x;
    // A thread starts from its first element (not -inf), so rows of -inf still give index 0.
    var bv = bitcast<f32>(0xff7fffffu);
    var bi = NONE;
    for (var i0 = lane; i0 < n; i0 += TPR) {
        let v = a_get(vec4<u32>(i0, r.y, r.z, r.w));
        if (bi == NONE || v > bv) {
            bv = v;
            bi = i0;
        }
    }
    let best = wg_argmax(bv, bi, lane);
    if (live && lane == 0u) {
        d[p.offs.x + off4(r, p.d_nb)] = i32(select(0u, best, best != NONE));
    }
}
