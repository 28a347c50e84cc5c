// The readers of an `a` in 32-element blocks (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL), after
// a_packed and the type's snippet, which gives a_at(r, k): element k of the row starting at `r`.
fn a_get(i: vec4<u32>) -> f32 {
    return a_at(a_row(i), i.x);
}

// a_vec4 reads every layout (element by element: blocks are not word-aligned).
fn a_vec_ok() -> bool {
    return true;
}

// Elements k .. k + 3 of the row starting at `r`.
fn a_vec4(r: u32, k: u32) -> vec4<f32> {
    return vec4<f32>(a_at(r, k), a_at(r, k + 1u), a_at(r, k + 2u), a_at(r, k + 3u));
}
