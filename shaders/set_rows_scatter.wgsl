// d = a with rows replaced (ggml's set_rows), written in place over a state: one invocation
// per element of b (u.y: b's element count) writes it to its row (scatter_row.wgsl), so a
// write costs the rows written, not the whole destination (the gather kernel, set_rows.wgsl,
// visits every element of d: a KV cache's every row, each step). Only planned for a node
// whose output is its destination's memory (IN_PLACE): rows it does not name keep their
// values because they are a's.
fn element(idx: u32) {
    let i = unravel(idx, p.b_ne);
    let r = scatter_row(i);
    if (r < 0) {
        return;
    }
    let v = b_at(p.offs.z + off4(i, p.b_nb));
    d_put(p.offs.x + off4(vec4<u32>(i.x, u32(r), i.z, i.w), p.d_nb), v);
}
