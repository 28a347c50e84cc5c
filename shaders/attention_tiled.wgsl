// Fused attention tiled over queries (prompts, and grouped-query decode steps): one workgroup
// of ATT_WG threads computes ATT_TQ rows of one KV head and batch entry (the query rows of
// the heads that share the KV head, query-major), so each K and V row it reads serves ATT_TQ
// rows instead of one (attention.wgsl, a workgroup per row, reads all of K/V per row: on
// lavapipe 5-10x slower than the unfused matmuls from 32 rows). Operands as in attention.wgsl
// (k is `a`, q is `b`, v and the mask in attention_kv.wgsl); u.y: the workgroup count,
// ceil(n_q * heads / kv_heads / ATT_TQ) * kv_heads * batch. Head sizes up to ATT_TD (q, k
// and v).
//
// q's rows sit in workgroup memory (zero past the rows and past dk, to a multiple of 4), each
// row's query, head and mask offset beside them. Keys go
// by tiles of ATT_TK (= ATT_WG): thread t scores key t of the tile against every row (the q
// element it reads is the same for all threads: a broadcast) into `st`; the ATT_QP threads
// of each row take its online softmax over the tile (each a part's maximum, then, the row's
// maximum known, its part's weights over the scores and its share of the weight sum; the
// rescale factor for the others in `at`); then thread t rescales its accumulators and adds
// the tile's weighted values of output elements t and t + ATT_WG for every row. A row whose
// every score is -inf writes zeros, as the row kernel does.
const QW: u32 = ATT_TD / 4u;

var<workgroup> qt: array<vec4<f32>, ATT_TQ * QW>;
var<workgroup> st: array<f32, ATT_TQ * ATT_TK>;
var<workgroup> at: array<f32, ATT_TQ>;
var<workgroup> px: array<f32, ATT_WG>;
var<workgroup> rq: array<vec2<u32>, ATT_TQ>;
var<workgroup> mo: array<u32, ATT_TQ>;

// Threads sharing a row's softmax, and the keys of a tile each takes.
const ATT_QP: u32 = ATT_WG / ATT_TQ;
const ATT_KP: u32 = ATT_TK / ATT_QP;

@compute @workgroup_size(ATT_WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let item = wid.x + wid.y * nwg.x;
    if (item >= p.u.y) {
        return;
    }
    // The rows of one KV head and batch entry: its `group` heads' query rows, query-major
    // (row r is query r / group of head kh * group + r % group), so with grouped-query
    // attention each K/V row read serves every head that shares it (a decode step's too).
    let n_q = p.b_ne.y;
    let heads = p.b_ne.z;
    let kv_heads = p.a_ne.z;
    let group = heads / kv_heads;
    let rows = n_q * group;
    let tiles = (rows + ATT_TQ - 1u) / ATT_TQ;
    // Consecutive workgroups take one KV head's row tiles: they read the same K/V.
    let r_first = (item % tiles) * ATT_TQ;
    let kbn = item / tiles;
    let kh = kbn % kv_heads;
    let bn = kbn / kv_heads;
    let kb = bn / (p.b_ne.w / p.a_ne.w);
    let dk = p.b_ne.x;
    let dk4 = (dk + 3u) / 4u;
    let d_v = p.d_ne.x;
    let n_kv = p.a_ne.y;
    let has_mask = p.e.z != 0u;

    // Each row's query, head and mask offset (rows past the KV head's: a dummy, never used).
    if (t < ATT_TQ) {
        let r = min(r_first + t, rows - 1u);
        let i = r / group;
        let h = kh * group + r % group;
        rq[t] = vec2<u32>(i, h);
        mo[t] = p.e.y + (i % p.m_ne.y) * p.m_nb.y + (h % p.m_ne.z) * p.m_nb.z
            + (bn % p.m_ne.w) * p.m_nb.w;
    }
    workgroupBarrier();
    for (var e = t; e < ATT_TQ * dk4; e += ATT_WG) {
        let qr = e / dk4;
        let c4 = (e % dk4) * 4u;
        var qv = vec4<f32>(0.0);
        if (r_first + qr < rows) {
            let base = p.offs.z + rq[qr].x * p.b_nb.y + rq[qr].y * p.b_nb.z + bn * p.b_nb.w;
            for (var c = 0u; c < 4u; c++) {
                if (c4 + c < dk) {
                    qv[c] = b_at(base + (c4 + c) * p.b_nb.x);
                }
            }
        }
        qt[qr * QW + e % dk4] = qv;
    }
    workgroupBarrier();

    let k_vec = a_vec_ok() && (dk & 3u) == 0u;
    // The output elements this thread owns: t and t + ATT_WG, of every row (d_v <= 2 ATT_WG).
    let c0 = min(t, d_v - 1u);
    let c1 = min(t + ATT_WG, d_v - 1u);
    let v_base = p.e.x + kh * p.c_nb.z + kb * p.c_nb.w;
    let wide = d_v > ATT_WG;
    var s: array<f32, ATT_TQ>;
    var acc0: array<f32, ATT_TQ>;
    var acc1: array<f32, ATT_TQ>;
    let row = t / ATT_QP;
    let part = t % ATT_QP;
    var m = -FLT_MAX;
    var l = 0.0;

    for (var j0 = 0u; j0 < n_kv; j0 += ATT_TK) {
        let n = min(ATT_TK, n_kv - j0);
        let j = j0 + t;
        if (j < n_kv) {
            let kr = a_row(vec4<u32>(0u, j, kh, kb));
            // Zeroed here each tile, declared outside the loop: declared in the loop (zeroed
            // at each declaration by the spec), it kept the last tile's sums in Chromium and
            // in Firefox (every case of more than one key tile failed there; natively none).
            for (var r = 0u; r < ATT_TQ; r++) {
                s[r] = 0.0;
            }
            if (k_vec) {
                for (var e4 = 0u; e4 < dk4; e4++) {
                    let kv = a_vec4(kr, e4 * 4u);
                    for (var r = 0u; r < ATT_TQ; r++) {
                        s[r] += dot(qt[r * QW + e4], kv);
                    }
                }
            } else {
                for (var e = 0u; e < dk; e++) {
                    let kv = a_at(kr, e);
                    for (var r = 0u; r < ATT_TQ; r++) {
                        s[r] += qt[r * QW + e / 4u][e % 4u] * kv;
                    }
                }
            }
            for (var r = 0u; r < ATT_TQ; r++) {
                var sc = s[r] * p.f.x;
                if (has_mask && r_first + r < rows) {
                    sc += mk[mo[r] + j * p.m_nb.x];
                }
                st[r * ATT_TK + t] = sc;
            }
        }
        workgroupBarrier();
        // Row t / ATT_QP's online softmax, its keys shared by ATT_QP threads: each takes the
        // maximum of its part of the tile, then (every part's maximum known) its part's weights
        // and weight sum. Each keeps the row's running maximum alike and its own share of the
        // weight sum (added up at the end).
        let y0 = part * ATT_KP;
        let y1 = min(n, y0 + ATT_KP);
        var pmax = -FLT_MAX;
        for (var y = y0; y < y1; y++) {
            pmax = max(pmax, st[row * ATT_TK + y]);
        }
        px[t] = pmax;
        workgroupBarrier();
        var mt = m;
        for (var x = 0u; x < ATT_QP; x++) {
            mt = max(mt, px[row * ATT_QP + x]);
        }
        let alpha = exp(m - mt);
        var sum = 0.0;
        for (var y = y0; y < y1; y++) {
            let sv = st[row * ATT_TK + y];
            let w = select(exp(sv - mt), 0.0, sv < -FLT_MAX);
            st[row * ATT_TK + y] = w;
            sum += w;
        }
        l = l * alpha + sum;
        m = mt;
        if (part == 0u) {
            at[row] = alpha;
        }
        workgroupBarrier();
        if (wide) {
            // Two output elements a thread (d_v > ATT_WG; the second clamped to the last
            // element, not written, past d_v).
            for (var r = 0u; r < ATT_TQ; r++) {
                acc0[r] *= at[r];
                acc1[r] *= at[r];
            }
            for (var y = 0u; y < n; y++) {
                let vr = v_base + (j0 + y) * p.c_nb.y;
                let v0 = v_at(vr + c0 * p.c_nb.x);
                let v1 = v_at(vr + c1 * p.c_nb.x);
                for (var r = 0u; r < ATT_TQ; r++) {
                    let w = st[r * ATT_TK + y];
                    acc0[r] += w * v0;
                    acc1[r] += w * v1;
                }
            }
        } else if (t < d_v) {
            for (var r = 0u; r < ATT_TQ; r++) {
                acc0[r] *= at[r];
            }
            for (var y = 0u; y < n; y++) {
                let v0 = v_at(v_base + c0 * p.c_nb.x + (j0 + y) * p.c_nb.y);
                for (var r = 0u; r < ATT_TQ; r++) {
                    acc0[r] += st[r * ATT_TK + y] * v0;
                }
            }
        }
        workgroupBarrier();
    }
    px[t] = l;
    workgroupBarrier();
    if (part == 0u) {
        var lr = 0.0;
        for (var x = 0u; x < ATT_QP; x++) {
            lr += px[row * ATT_QP + x];
        }
        at[row] = lr;
    }
    workgroupBarrier();

    for (var r = 0u; r < ATT_TQ; r++) {
        if (r_first + r < rows) {
            let i = rq[r].x;
            let h = rq[r].y;
            let lr = at[r];
            let o = p.offs.x + h * p.d_nb.y + i * p.d_nb.z + bn * p.d_nb.w;
            if (t < d_v) {
                d[o + t * p.d_nb.x] = select(acc0[r] / lr, 0.0, lr == 0.0);
            }
            if (t + ATT_WG < d_v) {
                d[o + (t + ATT_WG) * p.d_nb.x] = select(acc1[r] / lr, 0.0, lr == 0.0);
            }
        }
    }
}
