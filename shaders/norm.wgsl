// Layer norm (u.x = 0) or RMS norm (u.x = 1) over rows, eps f.x. u.y: row count.

fn row(r: vec4<u32>, lid: u32) {
    let n = p.a_ne.x;
    var mean = 0.0;
    if (p.u.x == 0u) {
        var s = 0.0;
        for (var i0 = lid; i0 < n; i0 += WG) {
            s += a_get(vec4<u32>(i0, r.y, r.z, r.w));
        }
        mean = wg_sum(s, lid) / f32(n);
    }
    var s2 = 0.0;
    for (var i0 = lid; i0 < n; i0 += WG) {
        let v = a_get(vec4<u32>(i0, r.y, r.z, r.w)) - mean;
        s2 += v * v;
    }
    let inv = 1.0 / sqrt(wg_sum(s2, lid) / f32(n) + p.f.x);
    for (var i0 = lid; i0 < n; i0 += WG) {
        let i = vec4<u32>(i0, r.y, r.z, r.w);
        d_put(p.offs.x + off4(i, p.d_nb), (a_get(i) - mean) * inv);
    }
}
