// Operand `b` (binding 3) with elements of type BT (an alias shader.rs declares per kernel).
@group(0) @binding(3) var<storage, read_write> b: array<BT>;

// b[k], or word k of a's binding when b shares a's memory (SHARED_B: then a and b have one
// dtype, so the bits are b's).
fn b_at(k: u32) -> BT {
    if ((p.offs.w & SHARED_B) != 0u) {
        return bitcast<BT>(a_word(k));
    }
    return b[k];
}
