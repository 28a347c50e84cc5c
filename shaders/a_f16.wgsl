// Operand `a` stored as f16 (after a_packed; no shader-f16 needed).
fn a_at(r: u32, k: u32) -> f32 {
    let h = r + k * p.a_nb.x;
    let w = unpack2x16float(a[h >> 1u]);
    return select(w.x, w.y, (h & 1u) == 1u);
}

fn a_get(i: vec4<u32>) -> f32 {
    return a_at(a_row(i), i.x);
}
