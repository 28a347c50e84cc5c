// Operand `a` stored as f32.
@group(0) @binding(1) var<storage, read_write> a: array<f32>;

// Where row i.yzw of `a` starts (the offset a_at takes): a_get split for loops along a row.
fn a_row(i: vec4<u32>) -> u32 {
    return p.offs.y + i.y * p.a_nb.y + i.z * p.a_nb.z + i.w * p.a_nb.w;
}

// Element k of the row starting at `r`.
fn a_at(r: u32, k: u32) -> f32 {
    return a[r + k * p.a_nb.x];
}

fn a_get(i: vec4<u32>) -> f32 {
    return a_at(a_row(i), i.x);
}

// Word k of a's binding, for an operand b that shares it (SHARED_B).
fn a_word(k: u32) -> u32 {
    return bitcast<u32>(a[k]);
}
