// d[m, n] = sum_k a[k, m] * b[k, n] for few columns (token generation): a workgroup takes
// 4 rows of a with 64 threads each, striding over 32-element blocks of k (a_dot32, per
// dtype), then reduces in workgroup memory.
// Grid: (ceil(M / 4), N, batch). u.x, u.y: b.ne2 / a.ne2, b.ne3 / a.ne3.
@group(0) @binding(2) var<storage, read_write> d: array<f32>;
@group(0) @binding(3) var<storage, read_write> b: array<f32>;

// b[k], or word k of a's binding when b shares a's memory (offs.w bit 0).
fn b_at(k: u32) -> f32 {
    if ((p.offs.w & 1u) != 0u) {
        return a_word(k);
    }
    return b[k];
}

const ROWS: u32 = 4u;
const TPR: u32 = 64u;

var<workgroup> part: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let M = p.d_ne.x;
    let K = p.a_ne.x;
    let n = wid.y;
    let i2 = wid.z % p.d_ne.z;
    let i3 = wid.z / p.d_ne.z;
    let a2 = i2 / p.u.x;
    let a3 = i3 / p.u.y;
    let r = lid / TPR;
    let t = lid % TPR;
    let m = wid.x * ROWS + r;
    var acc = 0.0;
    if (m < M) {
        let b_base = p.offs.z + n * p.b_nb.y + i2 * p.b_nb.z + i3 * p.b_nb.w;
        // Whole 32-element blocks first (quantized rows are nothing else), then the tail.
        let nblk = K / 32u;
        for (var blk = t; blk < nblk; blk += TPR) {
            acc += a_dot32(vec4<u32>(blk * 32u, m, a2, a3), b_base + blk * 32u * p.b_nb.x);
        }
        for (var k = nblk * 32u + t; k < K; k += TPR) {
            acc += a_get(vec4<u32>(k, m, a2, a3)) * b_at(b_base + k * p.b_nb.x);
        }
    }
    part[lid] = acc;
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s = s >> 1u) {
        if (t < s) {
            part[lid] = part[lid] + part[lid + s];
        }
        workgroupBarrier();
    }
    if (t == 0u && m < M) {
        d[p.offs.x + m * p.d_nb.x + n * p.d_nb.y + i2 * p.d_nb.z + i3 * p.d_nb.w] = part[lid];
    }
}
