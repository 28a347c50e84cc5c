// No fused epilogue: the result is stored as it is (see epilogue.wgsl for the fused variant).
fn epilogue(i0: u32, v: f32) -> f32 {
    return v;
}

// The matmul kernels' output store: d[idx] = v.
fn store_d(idx: u32, v: f32) {
    d[idx] = v;
}
