// d[m, n] = sum_k a[k, m] * b[k, n] for few columns (up to COLS: token generation, short
// sequences): a workgroup takes 4 rows of a with 64 threads each, striding over 32-element
// blocks of k (a_dot32, per dtype) for every column at once, so each weight is read once
// whatever the column count, then reduces all columns together in workgroup memory.
// Grid: (ceil(M / 4), 1, batch). u.x, u.y: b.ne2 / a.ne2, b.ne3 / a.ne3.

const ROWS: u32 = MATVEC_ROWS;
const TPR: u32 = WG / ROWS;
const COLS: u32 = MATVEC_COLS;

var<workgroup> part: array<f32, COLS * WG>; // [COLS][ROWS * TPR]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let M = p.d_ne.x;
    let K = p.a_ne.x;
    let N = min(p.d_ne.y, COLS);
    let i2 = wid.z % p.d_ne.z;
    let i3 = wid.z / p.d_ne.z;
    let a2 = i2 / p.u.x;
    let a3 = i3 / p.u.y;
    let r = lid / TPR;
    let t = lid % TPR;
    let m = wid.x * ROWS + r;
    var acc: array<f32, COLS>;
    if (m < M) {
        let b_base = p.offs.z + i2 * p.b_nb.z + i3 * p.b_nb.w;
        // Whole 32-element blocks first (quantized rows are nothing else), then the tail.
        let nblk = K / 32u;
        for (var blk = t; blk < nblk; blk += TPR) {
            let kb = b_base + blk * 32u * p.b_nb.x;
            for (var n = 0u; n < N; n++) {
                acc[n] += a_dot32(vec4<u32>(blk * 32u, m, a2, a3), kb + n * p.b_nb.y);
            }
        }
        for (var k = nblk * 32u + t; k < K; k += TPR) {
            let av = a_get(vec4<u32>(k, m, a2, a3));
            for (var n = 0u; n < N; n++) {
                acc[n] += av * b_at(b_base + n * p.b_nb.y + k * p.b_nb.x);
            }
        }
    }
    for (var n = 0u; n < N; n++) {
        part[n * WG + lid] = acc[n];
    }
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s = s >> 1u) {
        if (t < s) {
            for (var n = 0u; n < N; n++) {
                part[n * WG + lid] = part[n * WG + lid] + part[n * WG + lid + s];
            }
        }
        workgroupBarrier();
    }
    if (t == 0u && m < M) {
        let base = p.offs.x + m * p.d_nb.x + i2 * p.d_nb.z + i3 * p.d_nb.w;
        for (var n = 0u; n < N; n++) {
            store_d(base + n * p.d_nb.y, part[n * WG + lid]);
        }
    }
}
