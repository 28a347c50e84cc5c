// Fused attention's scores with shader-f16 over an f16 cache (attention.wgsl; `enable f16`
// heads the module): q's row, times the scale, held in workgroup memory as f16 four to a
// vector (half the memory and one read per four elements; ggml's CPU kernel rounds q to f16
// for an f16 cache too), the products and their sums in f32. Not f16 arithmetic: a model
// with large q·k (Qwen2's K biases) loses whole units of a score to f16 sums, which is why
// llama.cpp asks every backend for f32 precision in attention (GGML_PREC_F32).
var<workgroup> qh: array<vec4<f16>, ATT_MAX_D / 4u>;

// Loads q's row (dk elements from `base`, through b's strides), scaled; thread t of the
// workgroup writes whole vectors (zeros past dk).
fn q_load(base: u32, dk: u32, t: u32) {
    for (var e4 = t; e4 * 4u < dk; e4 += ATT_WG) {
        var v = vec4<f16>(0.0h);
        for (var c4 = 0u; c4 < 4u; c4++) {
            let e = e4 * 4u + c4;
            if (e < dk) {
                v[c4] = f16(b_at(base + e * p.b_nb.x) * p.f.x);
            }
        }
        qh[e4] = v;
    }
}

// The score of the K row starting at `kr` (q already scaled). `k_vec`: the row may be read
// four elements at a time (a_vec_ok, dk a multiple of 4).
fn qk(kr: u32, dk: u32, k_vec: bool) -> f32 {
    var s = 0.0;
    if (k_vec) {
        for (var e = 0u; e < dk; e += 4u) {
            s += dot(vec4<f32>(qh[e >> 2u]), a_vec4(kr, e));
        }
    } else {
        for (var e = 0u; e < dk; e++) {
            s += f32(qh[e >> 2u][e & 3u]) * a_at(kr, e);
        }
    }
    return s;
}
