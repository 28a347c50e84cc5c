// Fused attention's scores in f32 (attention.wgsl; every adapter): q's row in workgroup
// memory as f32, each score q·k times the scale.
var<workgroup> qs: array<f32, ATT_MAX_D>;

// Loads q's row (dk elements from `base`, through b's strides); thread t of the workgroup.
fn q_load(base: u32, dk: u32, t: u32) {
    for (var e = t; e < dk; e += ATT_WG) {
        qs[e] = b_at(base + e * p.b_nb.x);
    }
}

// The score of the K row starting at `kr`: (q·k) * scale. `k_vec`: the row may be read four
// elements at a time (a_vec_ok, dk a multiple of 4).
fn qk(kr: u32, dk: u32, k_vec: bool) -> f32 {
    var s = 0.0;
    if (k_vec) {
        for (var e = 0u; e < dk; e += 4u) {
            s += dot(vec4<f32>(qs[e], qs[e + 1u], qs[e + 2u], qs[e + 3u]), a_vec4(kr, e));
        }
    } else {
        for (var e = 0u; e < dk; e++) {
            s += qs[e] * a_at(kr, e);
        }
    }
    return s * p.f.x;
}
