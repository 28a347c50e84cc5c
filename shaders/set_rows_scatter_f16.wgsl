// set_rows_scatter.wgsl over an f16 state (no shader-f16 needed): one invocation per pair of
// b's elements (u.y: the pair count; b's rows of even length, d's rows packed at even
// offsets, as ops.rs plans it) packs the pair into its u32 word of its row, so no two
// invocations share a word. In place only, as the f32 kernel.
fn element(w: u32) {
    let i = unravel(2u * w, p.b_ne);
    let r = scatter_row(i);
    if (r < 0) {
        return;
    }
    let src = p.offs.z + off4(i, p.b_nb);
    let v = vec2<f32>(b_at(src), b_at(src + p.b_nb.x));
    let at = p.offs.x + off4(vec4<u32>(i.x, u32(r), i.z, i.w), p.d_nb);
    d_put(at >> 1u, pack2x16float(v));
}
