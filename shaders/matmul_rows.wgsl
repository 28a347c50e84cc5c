// d[m, n] = sum_k a[k, m] * b[k, n] for few columns of b (token generation, short batches),
// batched over dims 2, 3 with a broadcast: row-parallel, a workgroup-wide reduction over k.
// A workgroup of WG threads takes WG / u.z rows of a, u.z threads per row (a power of two
// the planner picks from k, so that short rows still keep every thread busy), and ROWS_COLS
// columns of b from wid.y * ROWS_COLS. Each thread strides over k four consecutive elements
// at a time (one vec4 load where the layout allows; neighbouring threads read neighbouring
// words), dotting them with every column,
// then the row's threads sum their partials in workgroup memory.
// Grid: (ceil(M / (WG / u.z)), ceil(N / ROWS_COLS), batch).
// u.x, u.y: b.ne2 / a.ne2, b.ne3 / a.ne3; u.z: threads per row.

const COLS: u32 = ROWS_COLS;

var<workgroup> part: array<f32, COLS * WG>; // [COLS][WG]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let M = p.d_ne.x;
    let N = p.d_ne.y;
    let K = p.a_ne.x;
    let tpr = p.u.z;
    let i2 = wid.z % p.d_ne.z;
    let i3 = wid.z / p.d_ne.z;
    let a2 = i2 / p.u.x;
    let a3 = i3 / p.u.y;
    let t = lid % tpr;
    let m = wid.x * (WG / tpr) + lid / tpr;
    let n0 = wid.y * COLS;
    // Columns in this block (the grid has none past N); the `c < nc` tests are uniform.
    let nc = min(N - n0, COLS);
    var acc: array<f32, COLS>;
    if (m < M) {
        let ar = a_row(vec4<u32>(0u, m, a2, a3));
        let b_base = p.offs.z + i2 * p.b_nb.z + i3 * p.b_nb.w;
        let bs = p.b_nb.x;
        var bo: array<u32, COLS>;
        for (var c = 0u; c < COLS; c++) {
            bo[c] = b_base + min(n0 + c, N - 1u) * p.b_nb.y;
        }
        // One vec4 load where the layout allows (a_vec_ok, b_vec_ok), else 4 scalar ones.
        let a_vec = a_vec_ok();
        let b_vec = b_vec_ok();
        let k4 = K / 4u * 4u;
        for (var k = t * 4u; k < k4; k += tpr * 4u) {
            var av: vec4<f32>;
            if (a_vec) {
                av = a_vec4(ar, k);
            } else {
                av = vec4<f32>(a_at(ar, k), a_at(ar, k + 1u), a_at(ar, k + 2u), a_at(ar, k + 3u));
            }
            for (var c = 0u; c < COLS; c++) {
                if (c < nc) {
                    let o = bo[c] + k * bs;
                    var bv: vec4<f32>;
                    if (b_vec) {
                        bv = b_vec4(o);
                    } else {
                        bv = vec4<f32>(b_at(o), b_at(o + bs), b_at(o + 2u * bs), b_at(o + 3u * bs));
                    }
                    acc[c] += dot(av, bv);
                }
            }
        }
        for (var k = k4 + t; k < K; k += tpr) {
            let av = a_at(ar, k);
            for (var c = 0u; c < COLS; c++) {
                if (c < nc) {
                    acc[c] += av * b_at(bo[c] + k * bs);
                }
            }
        }
    }
    for (var c = 0u; c < COLS; c++) {
        if (c < nc) {
            part[c * WG + lid] = acc[c];
        }
    }
    workgroupBarrier();
    for (var s = tpr / 2u; s > 0u; s = s >> 1u) {
        if (t < s) {
            for (var c = 0u; c < nc; c++) {
                part[c * WG + lid] += part[c * WG + lid + s];
            }
        }
        workgroupBarrier();
    }
    if (t == 0u && m < M) {
        let base = p.offs.x + m * p.d_nb.x + i2 * p.d_nb.z + i3 * p.d_nb.w;
        for (var c = 0u; c < COLS; c++) {
            if (c < nc) {
                store_d(base + (n0 + c) * p.d_nb.y, part[c * WG + lid]);
            }
        }
    }
}
