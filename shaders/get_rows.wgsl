// d[i0, i1, i2] = a[i0, idx[i1, i2], i2 or 0]. b: i32 row indices. u.y: element count.
// An index outside a's rows yields NaN (the CPU reference reports an error).

fn element(idx: u32) {
    let i = unravel(idx, p.d_ne);
    let r = b[p.offs.z + i.y * p.b_nb.x + i.z * p.b_nb.y];
    var v: f32;
    if (r < 0 || u32(r) >= p.a_ne.y) {
        // NaN from a runtime value: WGSL rejects NaN constants (u.w is always 0).
        v = bitcast<f32>(0x7fc00000u | p.u.w);
    } else {
        let a2 = select(i.z, 0u, p.a_ne.z == 1u);
        v = a_get(vec4<u32>(i.x, u32(r), a2, 0u));
    }
    d[p.offs.x + off4(i, p.d_nb)] = v;
}
