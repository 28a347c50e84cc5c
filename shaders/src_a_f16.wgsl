// Source `a` stored as f16, read as u32 words (no shader-f16 needed).
@group(0) @binding(1) var<storage, read_write> a: array<u32>;

fn a_get(i: vec4<u32>) -> f32 {
    let h = p.offs.y + off4(i, p.a_nb);
    let w = unpack2x16float(a[h >> 1u]);
    return select(w.x, w.y, (h & 1u) == 1u);
}

// Word k of a's binding (unused: a b of another dtype never shares a's memory).
fn a_word(k: u32) -> f32 {
    return bitcast<f32>(a[k]);
}
