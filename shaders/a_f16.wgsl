// Operand `a` stored as f16 (after a_packed; no shader-f16 needed).
fn a_at(r: u32, k: u32) -> f32 {
    let h = r + k * p.a_nb.x;
    let w = unpack2x16float(a[h >> 1u]);
    return select(w.x, w.y, (h & 1u) == 1u);
}

fn a_get(i: vec4<u32>) -> f32 {
    return a_at(a_row(i), i.x);
}

// Whether a_vec4 may read a's rows: contiguous, every row starting at a multiple of 4.
fn a_vec_ok() -> bool {
    return p.a_nb.x == 1u && ((p.offs.y | p.a_nb.y | p.a_nb.z | p.a_nb.w) & 3u) == 0u;
}

// Elements k .. k + 3 of the row starting at `r` (k a multiple of 4; a_vec_ok): two words.
fn a_vec4(r: u32, k: u32) -> vec4<f32> {
    let w = (r + k) >> 1u;
    return vec4<f32>(unpack2x16float(a[w]), unpack2x16float(a[w + 1u]));
}
