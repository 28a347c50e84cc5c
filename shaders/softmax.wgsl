// Row softmax of a * f.x + mask (its rows repeated over a's rows, heads and batch). u.y: row
// count; u.z: 1 if the mask b is bound.

fn value(i: vec4<u32>) -> f32 {
    var m = 0.0;
    if (p.u.z != 0u) {
        m = b_at(p.offs.z + off4(vec4<u32>(i.x, i.y % p.b_ne.y, i.z % p.b_ne.z, i.w % p.b_ne.w), p.b_nb));
    }
    return a_get(i) * p.f.x + m;
}

fn row(r: vec4<u32>, lane: u32, live: bool) {
    let n = p.a_ne.x;
    var mx = bitcast<f32>(0xff7fffffu);
    for (var i0 = lane; i0 < n; i0 += TPR) {
        mx = max(mx, value(vec4<u32>(i0, r.y, r.z, r.w)));
    }
    mx = wg_max(mx, lane);
    var s = 0.0;
    for (var i0 = lane; i0 < n; i0 += TPR) {
        let i = vec4<u32>(i0, r.y, r.z, r.w);
        let e = exp(value(i) - mx);
        if (live) {
            d_put(p.offs.x + off4(i, p.d_nb), e);
        }
        s += e;
    }
    s = wg_sum(s, lane);
    for (var i0 = lane; i0 < n && live; i0 += TPR) {
        let o = p.offs.x + off4(vec4<u32>(i0, r.y, r.z, r.w), p.d_nb);
        d_put(o, d_read(o) / s);
    }
}
