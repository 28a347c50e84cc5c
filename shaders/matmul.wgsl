// d[m, n] = sum_k a[k, m] * b[k, n], batched over dims 2, 3 with a broadcast.
// 64x64 output tile per workgroup of 16x16 threads, each thread a 4x4 register block,
// k in steps of 16 through workgroup memory. a is read through a_get (f32, f16, q8_0, q4_0).
// u.x, u.y: b.ne2 / a.ne2, b.ne3 / a.ne3.

// The thread layout fixes the tile: 16 x 16 threads of 4 x 4 outputs.
const TM: u32 = MATMUL_TILE;
const TN: u32 = MATMUL_TILE;
const TK: u32 = 16u;

// Tiles as vec4 along m (sa) and n (sb): a thread's 4 values are one conflict-free load.
var<workgroup> sa: array<vec4<f32>, 256>; // [TK][TM / 4]
var<workgroup> sb: array<vec4<f32>, 256>; // [TK][TN / 4]

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let M = p.d_ne.x;
    let N = p.d_ne.y;
    let K = p.a_ne.x;
    let i2 = wid.z % p.d_ne.z;
    let i3 = wid.z / p.d_ne.z;
    let a2 = i2 / p.u.x;
    let a3 = i3 / p.u.y;
    let m0 = wid.x * TM;
    let n0 = wid.y * TN;
    let tid = lid.y * 16u + lid.x;
    // This thread loads k = k0 + kk for 4 consecutive rows of a (and of b) starting at q * 4;
    // consecutive threads take consecutive k, along which rows are contiguous.
    let kk = tid % TK;
    let q = tid / TK;
    let b_base = p.offs.z + i2 * p.b_nb.z + i3 * p.b_nb.w;
    var acc: array<vec4<f32>, 4>;
    for (var k0 = 0u; k0 < K; k0 += TK) {
        let k = k0 + kk;
        var va = vec4<f32>(0.0);
        var vb = vec4<f32>(0.0);
        if (k < K) {
            for (var c = 0u; c < 4u; c++) {
                let m = m0 + q * 4u + c;
                if (m < M) {
                    va[c] = a_get(vec4<u32>(k, m, a2, a3));
                }
                let n = n0 + q * 4u + c;
                if (n < N) {
                    vb[c] = b_at(b_base + k * p.b_nb.x + n * p.b_nb.y);
                }
            }
        }
        sa[kk * 16u + q] = va;
        sb[kk * 16u + q] = vb;
        workgroupBarrier();
        for (var j = 0u; j < TK; j++) {
            let ra = sa[j * 16u + lid.x];
            let rb = sb[j * 16u + lid.y];
            acc[0] += ra * rb.x;
            acc[1] += ra * rb.y;
            acc[2] += ra * rb.z;
            acc[3] += ra * rb.w;
        }
        workgroupBarrier();
    }
    let d_base = p.offs.x + i2 * p.d_nb.z + i3 * p.d_nb.w;
    for (var j = 0u; j < 4u; j++) {
        let n = n0 + lid.y * 4u + j;
        for (var i = 0u; i < 4u; i++) {
            let m = m0 + lid.x * 4u + i;
            if (m < M && n < N) {
                store_d(d_base + m * p.d_nb.x + n * p.d_nb.y, acc[j][i]);
            }
        }
    }
}
