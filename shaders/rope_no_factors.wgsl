// RoPE without frequency factors: every pair's is 1.
fn freq_factor(i: u32) -> f32 {
    return 1.0;
}
