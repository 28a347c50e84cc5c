// Index of each row's maximum, the first one on ties. u.y: row count.

var<workgroup> best_v: array<f32, WG>;
var<workgroup> best_i: array<u32, WG>;

fn row(r: vec4<u32>, lid: u32) {
    let n = p.a_ne.x;
    // A thread starts from its first element (not -inf), so rows of -inf still give index 0.
    var bv = bitcast<f32>(0xff7fffffu);
    var bi = 0xffffffffu;
    for (var i0 = lid; i0 < n; i0 += WG) {
        let v = a_get(vec4<u32>(i0, r.y, r.z, r.w));
        if (bi == 0xffffffffu || v > bv) {
            bv = v;
            bi = i0;
        }
    }
    best_v[lid] = bv;
    best_i[lid] = bi;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            let ov = best_v[lid + s];
            let oi = best_i[lid + s];
            let mi = best_i[lid];
            if (oi != 0xffffffffu && (mi == 0xffffffffu || ov > best_v[lid] || (ov == best_v[lid] && oi < mi))) {
                best_v[lid] = ov;
                best_i[lid] = oi;
            }
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        d[p.offs.x + off4(r, p.d_nb)] = i32(select(0u, best_i[0], best_i[0] != 0xffffffffu));
    }
}
