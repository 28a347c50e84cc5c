// d = a with rows replaced (ggml's set_rows), written in place over a state: one invocation
// per element of b (u.y: b's element count) writes it to row c[j, i2 % e.y, i3 % e.z] of its
// batch, so a write costs the rows written, not the whole destination (the gather kernel,
// set_rows.wgsl, visits every element of d: a KV cache's every row, each step). Where two j
// name one row the last wins (an earlier j skips when a later one names its row); an index
// outside d's rows writes nothing (the CPU reference reports an error). c: i32 indices at e.x
// in binding 4, strides u.x (dim 0), u.z (dim 1), u.w (dim 2) in elements. Only planned for
// a node whose output is its destination's memory (IN_PLACE): rows it does not name keep
// their values because they are a's.
@group(0) @binding(4) var<storage, read_write> c: array<i32>;

fn element(idx: u32) {
    let i = unravel(idx, p.b_ne);
    let base = p.e.x + (i.z % p.e.y) * p.u.z + (i.w % p.e.z) * p.u.w;
    let r = c[base + i.y * p.u.x];
    if (r < 0 || u32(r) >= p.d_ne.y) {
        return;
    }
    for (var j = i.y + 1u; j < p.b_ne.y; j = j + 1u) {
        if (c[base + j * p.u.x] == r) {
            return;
        }
    }
    let v = b_at(p.offs.z + off4(i, p.b_nb));
    d_put(p.offs.x + off4(vec4<u32>(i.x, u32(r), i.z, i.w), p.d_nb), v);
}
