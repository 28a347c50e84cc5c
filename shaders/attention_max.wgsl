// Fused attention's tile maximum through workgroup memory (attention.wgsl; every adapter).
var<workgroup> sc: array<f32, ATT_WG>;

// The largest of `m` and the tile's `n` scores; `s`: thread t's. Every thread of the
// workgroup calls it (it holds a barrier).
fn tile_max(m: f32, s: f32, t: u32, n: u32) -> f32 {
    sc[t] = s;
    workgroupBarrier();
    var mt = m;
    for (var x = 0u; x < n; x++) {
        mt = max(mt, sc[x]);
    }
    return mt;
}

// After the barrier that follows tile_max's reads: nothing to reset here.
fn tile_done(t: u32) {}
