// The merge of a fused attention whose keys were split (attention.wgsl with u.z splits): `a`
// holds, per output row and split, the split's unnormalized weighted sums of v (d_v of them),
// its maximum score m and its weight sum l. Output element e of row `row` is
// sum_s acc_s[e] exp(m_s - M) / sum_s l_s exp(m_s - M), M the largest m_s (0 when no key of
// any split had a finite score, as the unsplit kernel writes). One invocation per output
// element; u.y: rows * d_v, u.z: splits; the row's head, query and batch entry from q's
// shape (b_ne), written through d's strides like the unsplit kernel.
fn element(idx: u32) {
    let d_v = p.d_ne.x;
    let row = idx / d_v;
    let e = idx % d_v;
    let splits = p.u.z;
    let stride = d_v + 2u;
    let first = p.offs.y + row * splits * stride;
    var mx = a[first + d_v];
    for (var s = 1u; s < splits; s++) {
        mx = max(mx, a[first + s * stride + d_v]);
    }
    var l = 0.0;
    var acc = 0.0;
    for (var s = 0u; s < splits; s++) {
        let base = first + s * stride;
        let w = exp(a[base + d_v] - mx);
        l += a[base + d_v + 1u] * w;
        acc += a[base + e] * w;
    }
    let heads = p.b_ne.z;
    let h = row % heads;
    let r = row / heads;
    let i = r % p.b_ne.y;
    let bn = r / p.b_ne.y;
    let o = p.offs.x + e * p.d_nb.x + h * p.d_nb.y + i * p.d_nb.z + bn * p.d_nb.w;
    d[o] = select(acc / l, 0.0, l == 0.0);
}
