// Fused attention's tile maximum with subgroup operations (attention.wgsl; native adapters
// with wgpu's SUBGROUP feature): each subgroup's maximum (subgroupMax), one lane per subgroup
// folding it into a workgroup atomic, then one read each, instead of every thread reading
// every score. The atomic holds the maximum as an order-preserving u32 (`ordered`; 0 is below
// every float's code, and is the empty maximum).
var<workgroup> tile_hi: atomic<u32>;

// A u32 ordered as the f32 `x` is (not NaN).
fn ordered(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

// The f32 whose `ordered` code is `u` (u != 0).
fn unordered(u: u32) -> f32 {
    return bitcast<f32>(select(~u, u & 0x7fffffffu, (u & 0x80000000u) != 0u));
}

// The largest of `m` and the tile's `n` scores; `s`: thread t's (the lowest finite f32 past
// the tile's keys, so it never raises the maximum). Every thread of the workgroup calls it.
fn tile_max(m: f32, s: f32, t: u32, n: u32) -> f32 {
    let hi = subgroupMax(s);
    // One lane per subgroup (whichever is first) folds the subgroup's maximum in.
    if (subgroupBroadcastFirst(t) == t) {
        atomicMax(&tile_hi, ordered(hi));
    }
    workgroupBarrier();
    return max(m, unordered(atomicLoad(&tile_hi)));
}

// After the barrier that follows tile_max's reads: the atomic emptied for the next tile (its
// writers come after the tile's last barrier).
fn tile_done(t: u32) {
    if (t == 0u) {
        atomicStore(&tile_hi, 0u);
    }
}
