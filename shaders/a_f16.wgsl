// Operand `a` stored as f16 (after a_packed; no shader-f16 needed).
fn a_get(i: vec4<u32>) -> f32 {
    let h = p.offs.y + off4(i, p.a_nb);
    let w = unpack2x16float(a[h >> 1u]);
    return select(w.x, w.y, (h & 1u) == 1u);
}
