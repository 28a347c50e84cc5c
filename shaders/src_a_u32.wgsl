// Source `a` as raw 32-bit words (f32 or i32 moved bit for bit).
@group(0) @binding(1) var<storage, read_write> a: array<u32>;

// Word k of a's binding (for an operand b that shares it).
fn a_word(k: u32) -> u32 {
    return a[k];
}
