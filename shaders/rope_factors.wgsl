// RoPE's frequency factors (llama.cpp's freq_factors, Llama 3's rope_freqs.weight): f32 at
// e.x in binding 4, one per rotated pair; pair i's frequency is divided by c[e.x + i].
@group(0) @binding(4) var<storage, read_write> c: array<f32>;

fn freq_factor(i: u32) -> f32 {
    return c[p.e.x + i];
}
