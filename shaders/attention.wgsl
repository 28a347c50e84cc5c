// Fused attention (ggml's flash_attn_ext): d[:, h, i, b] = softmax(q·k * f.x + mask)·v for
// query row i of head h, batch entry b. Operands: k is `a` (binding 1, read through the
// snippet of its dtype: a_row / a_at), q is `b` (binding 3, f32, strides b_nb, offset offs.z),
// v is `c` (binding 4, k's dtype: C_F16 compiled in; strides c_nb, offset e.x; q and v may
// come through a's binding instead, SHARED_B / SHARED_C), the optional
// mask is `mk` (binding 5, f32; shape m_ne, strides m_nb, offset e.y; e.z: 1 if bound); v and
// the mask are declared in attention_kv.wgsl, shared with the query-tiled attention_tiled.wgsl
// (which ops.rs picks for 4 query rows a head and more, keys unsplit).
// u.y: the row count n_q * heads * batch; u.z, u.w: the key splits (below). Head h reads KV
// head h / (heads / kv_heads), batch entry b KV entry b / (batch / kv_batch).
//
// Split keys (u.z: splits > 1, u.w: keys per split): one workgroup per output row and split,
// writing the split's unnormalized sums, its running maximum and its weight sum to `d` (then
// a scratch buffer: [d_v sums, m, l] per row and split, the row's splits side by side) for
// attention_combine.wgsl to merge: a decode step's few rows spread over the GPU.
//
// One workgroup of ATT_WG threads per output row. Keys go by tiles of ATT_WG: thread t scores
// key j0 + t (q from workgroup memory), the tile's maximum is taken (online softmax), thread t
// writes its key's weight exp(s - m) (0 for a -inf score), then every thread rescales its
// accumulators and adds the weighted values of the output elements it owns: t, t + ATT_WG,
// t + 2 ATT_WG, t + 3 ATT_WG (one vec4; d_v <= 4 ATT_WG). The running sum l is kept by every
// thread alike. A row whose every score is -inf sums to 0 and writes zeros.
//
// Two pieces come in per adapter (shader.rs, `AttShader`): q's load and the score, q_load
// and qk (attention_qk.wgsl in f32; attention_qk_f16.wgsl with shader-f16 over an f16
// cache), and the tile's maximum, tile_max and tile_done (attention_max.wgsl through
// workgroup memory; attention_max_subgroup.wgsl with subgroups).
var<workgroup> pw: array<f32, ATT_WG>;

@compute @workgroup_size(ATT_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let splits = max(p.u.z, 1u);
    let item = wid.x + wid.y * nwg.x;
    if (item >= p.u.y * splits) {
        return;
    }
    let row = item / splits;
    let part = item % splits;
    let dk = p.b_ne.x;
    let heads = p.b_ne.z;
    let h = row % heads;
    let r = row / heads;
    let i = r % p.b_ne.y;
    let bn = r / p.b_ne.y;
    let kh = h / (heads / p.a_ne.z);
    let kb = bn / (p.b_ne.w / p.a_ne.w);
    // This workgroup's keys: all of them, or its split's.
    let j_begin = select(0u, part * p.u.w, splits > 1u);
    let j_end = select(p.a_ne.y, min(p.a_ne.y, j_begin + p.u.w), splits > 1u);
    let d_v = p.d_ne.x;
    let has_mask = p.e.z != 0u;
    let m_base = p.e.y + (i % p.m_ne.y) * p.m_nb.y + (h % p.m_ne.z) * p.m_nb.z
        + (bn % p.m_ne.w) * p.m_nb.w;

    q_load(p.offs.z + i * p.b_nb.y + h * p.b_nb.z + bn * p.b_nb.w, dk, t);
    workgroupBarrier();

    // The output elements this thread owns (clamped to the last, never read past `per`).
    let last = d_v - 1u;
    let own = min(vec4<u32>(t, t + ATT_WG, t + 2u * ATT_WG, t + 3u * ATT_WG), vec4<u32>(last));
    let v_base = p.e.x + kh * p.c_nb.z + kb * p.c_nb.w;
    let v_off = own * p.c_nb.x + vec4<u32>(v_base);
    // How many of acc's lanes hold elements of the row: 1 to 4 (every thread alike, so the
    // branches below are uniform; a lane past the row's end is neither read nor written).
    let per = (d_v + ATT_WG - 1u) / ATT_WG;
    // K rows read four elements at a time where their layout allows.
    let k_vec = a_vec_ok() && (dk & 3u) == 0u;
    var acc = vec4<f32>(0.0);
    var m = -FLT_MAX;
    var l = 0.0;

    for (var j0 = j_begin; j0 < j_end; j0 += ATT_WG) {
        let j = j0 + t;
        // This thread's key's score (the lowest finite f32 past the keys' end).
        var s = -FLT_MAX;
        if (j < j_end) {
            s = qk(a_row(vec4<u32>(0u, j, kh, kb)), dk, k_vec);
            if (has_mask) {
                s += mk[m_base + j * p.m_nb.x];
            }
        }
        let n = min(ATT_WG, j_end - j0);
        let mt = tile_max(m, s, t, n);
        if (t < n) {
            pw[t] = select(exp(s - mt), 0.0, s < -FLT_MAX);
        }
        workgroupBarrier();
        tile_done(t);
        let alpha = exp(m - mt);
        m = mt;
        acc *= alpha;
        l *= alpha;
        for (var x = 0u; x < n; x++) {
            let w = pw[x];
            l += w;
            let vo = v_off + vec4<u32>((j0 + x) * p.c_nb.y);
            acc.x += w * v_at(vo.x);
            if (per > 1u) {
                acc.y += w * v_at(vo.y);
            }
            if (per > 2u) {
                acc.z += w * v_at(vo.z);
            }
            if (per > 3u) {
                acc.w += w * v_at(vo.w);
            }
        }
        workgroupBarrier();
    }

    let e = vec4<u32>(t, t + ATT_WG, t + 2u * ATT_WG, t + 3u * ATT_WG);
    if (splits > 1u) {
        let s_base = item * (d_v + 2u);
        for (var r4 = 0u; r4 < 4u; r4++) {
            if (e[r4] < d_v) {
                d[s_base + e[r4]] = acc[r4];
            }
        }
        if (t == 0u) {
            d[s_base + d_v] = m;
            d[s_base + d_v + 1u] = l;
        }
        return;
    }
    let out = select(acc / l, vec4<f32>(0.0), l == 0.0);
    let o_base = p.offs.x + h * p.d_nb.y + i * p.d_nb.z + bn * p.d_nb.w;
    for (var r4 = 0u; r4 < 4u; r4++) {
        if (e[r4] < d_v) {
            d[o_base + e[r4] * p.d_nb.x] = out[r4];
        }
    }
}
