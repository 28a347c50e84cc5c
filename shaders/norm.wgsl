// Layer norm (u.x = 0) or RMS norm (u.x = 1) over rows, eps f.x. u.y: row count. Fused
// (fuse.rs): with EP_RESID the input is a + b (b broadcast onto a, as the binary kernel's),
// and each result goes through the epilogue (affine weight and bias).

fn x_get(i: vec4<u32>) -> f32 {
    var x = a_get(i);
    if ((p.e.w & EP_RESID) != 0u) {
        x += b_at(p.offs.z + off4(i % p.b_ne, p.b_nb));
    }
    return x;
}

fn row(r: vec4<u32>, lane: u32, live: bool) {
    let n = p.a_ne.x;
    var mean = 0.0;
    if (p.u.x == 0u) {
        var s = 0.0;
        for (var i0 = lane; i0 < n; i0 += TPR) {
            s += x_get(vec4<u32>(i0, r.y, r.z, r.w));
        }
        mean = wg_sum(s, lane) / f32(n);
    }
    var s2 = 0.0;
    for (var i0 = lane; i0 < n; i0 += TPR) {
        let v = x_get(vec4<u32>(i0, r.y, r.z, r.w)) - mean;
        s2 += v * v;
    }
    let inv = 1.0 / sqrt(wg_sum(s2, lane) / f32(n) + p.f.x);
    for (var i0 = lane; i0 < n && live; i0 += TPR) {
        let i = vec4<u32>(i0, r.y, r.z, r.w);
        d_put(p.offs.x + off4(i, p.d_nb), epilogue(i0, (x_get(i) - mean) * inv));
    }
}
