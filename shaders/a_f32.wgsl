// Operand `a` stored as f32.
@group(0) @binding(1) var<storage, read_write> a: array<f32>;

fn a_get(i: vec4<u32>) -> f32 {
    return a[p.offs.y + off4(i, p.a_nb)];
}

// Word k of a's binding, for an operand b that shares it (SHARED_B).
fn a_word(k: u32) -> u32 {
    return bitcast<u32>(a[k]);
}
