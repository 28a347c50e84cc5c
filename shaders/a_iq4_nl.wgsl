// Operand `a` in ggml IQ4_NL blocks (f16 scale d + 16 bytes of nibbles, 18 bytes: Q4_0's
// layout), after a_packed (a_block_tail adds the readers): each nibble indexes ggml's table
// `kvalues_iq4nl`, the value that entry times d.
var<private> IQ4_NL_VALUES: array<f32, 16> = array<f32, 16>(
    -127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
    1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0,
);

fn a_at(r: u32, k: u32) -> f32 {
    let blk = r + (k / 32u) * p.a_nb.x;
    let j = k % 32u;
    let byte = a_byte(blk + 2u + j % 16u);
    let nib = select(byte & 15u, byte >> 4u, j >= 16u);
    return a_half(blk) * IQ4_NL_VALUES[nib];
}
