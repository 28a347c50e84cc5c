// set_rows_scatter.wgsl over an f16 state (no shader-f16 needed): one invocation per pair of
// b's elements (u.y: the pair count; b's rows of even length, d's rows packed at even
// offsets, as ops.rs plans it) packs the pair into its u32 word of row c[j, ...], so no two
// invocations share a word. The same indices, duplicates (the last wins) and out-of-range
// rows (nothing written) as the f32 kernel; planned in place only (the backend refuses
// otherwise), into a's binding.
@group(0) @binding(4) var<storage, read_write> c: array<i32>;

// d_in_place.wgsl's d_put for u32 words (that one stores f32).
fn word_put(k: u32, v: u32) {
    if ((p.offs.w & IN_PLACE) != 0u) {
        a[k] = v;
    } else {
        d[k] = v;
    }
}

fn element(w: u32) {
    let i = unravel(2u * w, p.b_ne);
    let base = p.e.x + (i.z % p.e.y) * p.u.z + (i.w % p.e.z) * p.u.w;
    let r = c[base + i.y * p.u.x];
    if (r < 0 || u32(r) >= p.d_ne.y) {
        return;
    }
    for (var j = i.y + 1u; j < p.b_ne.y; j = j + 1u) {
        if (c[base + j * p.u.x] == r) {
            return;
        }
    }
    let src = p.offs.z + off4(i, p.b_nb);
    let v = vec2<f32>(b_at(src), b_at(src + p.b_nb.x));
    let at = p.offs.x + off4(vec4<u32>(i.x, u32(r), i.z, i.w), p.d_nb);
    word_put(at >> 1u, pack2x16float(v));
}
