// Sum (u.x = 0) or mean (u.x = 1) of each row. u.y: row count.
@group(0) @binding(2) var<storage, read_write> d: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = flat_group(wid, nwg);
    if (row >= p.u.y) {
        return;
    }
    let r = row_index(row, p.a_ne);
    let n = p.a_ne.x;
    var s = 0.0;
    for (var i0 = lid; i0 < n; i0 += WG) {
        s += a_get(vec4<u32>(i0, r.y, r.z, r.w));
    }
    s = wg_sum(s, lid);
    if (lid == 0u) {
        if (p.u.x == 1u) {
            s = s / f32(max(n, 1u));
        }
        d[p.offs.x + off4(r, p.d_nb)] = s;
    }
}
