// Operand `b` (binding 3) of f32, bound as vec4s (for the kernels that load 4 elements at
// once; bindings span whole vec4s, see backend.rs).
@group(0) @binding(3) var<storage, read_write> b: array<vec4<f32>>;

// b[k], or word k of a's binding when b shares a's memory (SHARED_B).
fn b_at(k: u32) -> f32 {
    if ((p.offs.w & SHARED_B) != 0u) {
        return bitcast<f32>(a_word(k));
    }
    return b[k >> 2u][k & 3u];
}

// Whether b_vec4 may read b's columns: contiguous, each starting at a multiple of 4, in
// b's own binding.
fn b_vec_ok() -> bool {
    let aligned = ((p.offs.z | p.b_nb.y | p.b_nb.z | p.b_nb.w) & 3u) == 0u;
    return p.b_nb.x == 1u && aligned && (p.offs.w & SHARED_B) == 0u;
}

// b[k .. k + 3] (k a multiple of 4; b_vec_ok): one load.
fn b_vec4(k: u32) -> vec4<f32> {
    return b[k >> 2u];
}
