// Sum (u.x = 0) or mean (u.x = 1) of each row. u.y: row count.

fn row(r: vec4<u32>, lane: u32, live: bool) {
    let n = p.a_ne.x;
    var s = 0.0;
    for (var i0 = lane; i0 < n; i0 += TPR) {
        s += a_get(vec4<u32>(i0, r.y, r.z, r.w));
    }
    s = wg_sum(s, lane);
    if (live && lane == 0u) {
        if (p.u.x == 1u) {
            s = s / f32(max(n, 1u));
        }
        d[p.offs.x + off4(r, p.d_nb)] = s;
    }
}
