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

// Whether a_vec4 may read a's rows: contiguous, every row starting at a multiple of 4 (the
// other `a` snippets' rule, so a kernel's fast path is taken alike for every dtype).
fn a_vec_ok() -> bool {
    return p.a_nb.x == 1u && ((p.offs.y | p.a_nb.y | p.a_nb.z | p.a_nb.w) & 3u) == 0u;
}

// Elements k .. k + 3 of the row starting at `r` (k a multiple of 4; a_vec_ok).
fn a_vec4(r: u32, k: u32) -> vec4<f32> {
    let j = r + k;
    return vec4<f32>(a[j], a[j + 1u], a[j + 2u], a[j + 3u]);
}
