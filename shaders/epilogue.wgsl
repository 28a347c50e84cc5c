// Fused epilogue (fuse.rs): what the nodes fused after a matmul or norm do to its result `v`
// at dim-0 index i0: times the scale vector (EP_SCALE), plus the bias vector (EP_BIAS), then
// the activation act(., EP_ACT). shader.rs declares the constants EP_OPS (EP_SCALE | EP_BIAS)
// and EP_ACT per pipeline. The vectors are f32, contiguous, one value per i0: the scale at
// e.x in binding 4, the bias at e.y in binding 5 (in binding 4 with EP_MERGED in e.w).
@group(0) @binding(4) var<storage, read_write> e_scale: array<f32>;
@group(0) @binding(5) var<storage, read_write> e_bias: array<f32>;

fn epilogue(i0: u32, v: f32) -> f32 {
    var r = v;
    if ((EP_OPS & EP_SCALE) != 0u) {
        r = r * e_scale[p.e.x + i0];
    }
    if ((EP_OPS & EP_BIAS) != 0u) {
        if ((p.e.w & EP_MERGED) != 0u) {
            r = r + e_scale[p.e.y + i0];
        } else {
            r = r + e_bias[p.e.y + i0];
        }
    }
    return act(r, EP_ACT);
}

// The matmul kernels' output store: d[idx] = epilogue(v). A fused output is contiguous
// (fuse.rs checks it), so idx's dim-0 index is (idx - offs.x) % d_ne.x.
fn store_d(idx: u32, v: f32) {
    d[idx] = epilogue((idx - p.offs.x) % p.d_ne.x, v);
}
