// d[m, n] = sum_k a[k, m] * b[k, n], batched over dims 2, 3 with a broadcast.
// 64x64 output tile per workgroup of 16x16 threads, each thread a 4x4 register block,
// k in steps of 16 through workgroup memory. a is read through a_get (f32, f16, q8_0, q4_0).
// u.x, u.y: b.ne2 / a.ne2, b.ne3 / a.ne3.
@group(0) @binding(2) var<storage, read_write> d: array<f32>;
@group(0) @binding(3) var<storage, read_write> b: array<f32>;

// b[k], or word k of a's binding when b shares a's memory (offs.w bit 0).
fn b_at(k: u32) -> f32 {
    if ((p.offs.w & 1u) != 0u) {
        return a_word(k);
    }
    return b[k];
}

const TM: u32 = 64u;
const TN: u32 = 64u;
const TK: u32 = 16u;

var<workgroup> sa: array<f32, 1024>; // [TK][TM]
var<workgroup> sb: array<f32, 1024>; // [TK][TN]

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
    let b_base = p.offs.z + i2 * p.b_nb.z + i3 * p.b_nb.w;
    var acc: array<vec4<f32>, 4>;
    for (var k0 = 0u; k0 < K; k0 += TK) {
        for (var r = 0u; r < 4u; r++) {
            // Consecutive threads take consecutive k: rows of a and b are k-contiguous.
            let e = tid + r * 256u;
            let kk = e % TK;
            let mm = e / TK;
            let k = k0 + kk;
            var va = 0.0;
            if (m0 + mm < M && k < K) {
                va = a_get(vec4<u32>(k, m0 + mm, a2, a3));
            }
            sa[kk * TM + mm] = va;
            var vb = 0.0;
            if (n0 + mm < N && k < K) {
                vb = b_at(b_base + k * p.b_nb.x + (n0 + mm) * p.b_nb.y);
            }
            sb[kk * TN + mm] = vb;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk++) {
            let ia = kk * TM + lid.x * 4u;
            let ra = vec4<f32>(sa[ia], sa[ia + 1u], sa[ia + 2u], sa[ia + 3u]);
            let ib = kk * TN + lid.y * 4u;
            acc[0] += ra * sb[ib];
            acc[1] += ra * sb[ib + 1u];
            acc[2] += ra * sb[ib + 2u];
            acc[3] += ra * sb[ib + 3u];
        }
        workgroupBarrier();
    }
    let d_base = p.offs.x + i2 * p.d_nb.z + i3 * p.d_nb.w;
    for (var j = 0u; j < 4u; j++) {
        let n = n0 + lid.y * 4u + j;
        for (var i = 0u; i < 4u; i++) {
            let m = m0 + lid.x * 4u + i;
            if (m < M && n < N) {
                d[d_base + m * p.d_nb.x + n * p.d_nb.y] = acc[j][i];
            }
        }
    }
}
