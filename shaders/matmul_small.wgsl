// d[m, n] = sum_k a[k, m] * b[k, n] for few columns of b (up to SMALL_COLS: a batch of a few
// tokens), batched over dims 2, 3 with a broadcast. No workgroup memory and no barriers: each
// invocation owns a 4 x 4 output block (4 rows of a, 4 columns of b) and walks all of k, so
// the dispatch has ceil(M / 4) * ceil(N / 4) invocations per batch entry: enough to fill the
// device where the 64 x 64 tile would make a handful of mostly idle workgroups. Neighbouring
// invocations take neighbouring row blocks of one column block, so they read the same b.
// Grid: (x, y) workgroups of SMALL_WG flattened over the blocks, z: batch.
// u.x, u.y: b.ne2 / a.ne2, b.ne3 / a.ne3.

@compute @workgroup_size(SMALL_WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let M = p.d_ne.x;
    let N = p.d_ne.y;
    let K = p.a_ne.x;
    let mb = (M + 3u) / 4u;
    let idx = (wid.y * nwg.x + wid.x) * SMALL_WG + lid;
    if (idx >= mb * ((N + 3u) / 4u)) {
        return;
    }
    let m0 = (idx % mb) * 4u;
    let n0 = (idx / mb) * 4u;
    let i2 = wid.z % p.d_ne.z;
    let i3 = wid.z / p.d_ne.z;
    let a2 = i2 / p.u.x;
    let a3 = i3 / p.u.y;
    // Rows and columns past the edge read the last valid one (no branch in the loop); their
    // results are not written. Offsets are hoisted out of the loop (a software adapter's
    // shader compiler may not do it). b never shares a's memory here (ops.rs).
    let ar = vec4<u32>(
        a_row(vec4<u32>(0u, min(m0, M - 1u), a2, a3)),
        a_row(vec4<u32>(0u, min(m0 + 1u, M - 1u), a2, a3)),
        a_row(vec4<u32>(0u, min(m0 + 2u, M - 1u), a2, a3)),
        a_row(vec4<u32>(0u, min(m0 + 3u, M - 1u), a2, a3)),
    );
    let b_base = p.offs.z + i2 * p.b_nb.z + i3 * p.b_nb.w;
    var bo: vec4<u32>;
    for (var j = 0u; j < 4u; j++) {
        bo[j] = b_base + min(n0 + j, N - 1u) * p.b_nb.y;
    }
    let bs = p.b_nb.x;
    var acc: array<vec4<f32>, 4>;
    for (var k = 0u; k < K; k++) {
        let av = vec4<f32>(a_at(ar.x, k), a_at(ar.y, k), a_at(ar.z, k), a_at(ar.w, k));
        acc[0] += av * b[bo.x];
        acc[1] += av * b[bo.y];
        acc[2] += av * b[bo.z];
        acc[3] += av * b[bo.w];
        bo += vec4<u32>(bs);
    }
    let d_base = p.offs.x + i2 * p.d_nb.z + i3 * p.d_nb.w;
    for (var j = 0u; j < 4u; j++) {
        let n = n0 + j;
        for (var i = 0u; i < 4u; i++) {
            if (m0 + i < M && n < N) {
                store_d(d_base + (m0 + i) * p.d_nb.x + n * p.d_nb.y, acc[j][i]);
            }
        }
    }
}
