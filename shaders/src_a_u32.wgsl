// Source `a` as raw 32-bit words (f32 or i32 moved bit for bit).
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
