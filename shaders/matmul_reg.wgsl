// d[m, n] = sum_k a[k, m] * b[k, n], batched over dims 2, 3 with a broadcast: the
// register-tiled matmul for large outputs. Its shape is generated from the adapter's limits
// (shader.rs, `RegTile`): a TM x TN output tile per workgroup of NX x NY threads, each
// thread an RM x RN register block, k in steps of TK through workgroup memory.
// Workgroup tiles are vec4 along m (sa) and n (sb), each k row padded by one vec4 so the
// loads' stores spread over the banks; a thread's vec4s lie NX (NY) apart, so neighbouring
// threads read neighbouring vec4s. Global loads: 4 consecutive k at a time, one vec4 where
// the layout allows; a is read through a_vec4 / a_at (f32, f16, q8_0, q4_0).
// Grid: (ceil(M / TM), ceil(N / TN), batch).
// u.x, u.y: b.ne2 / a.ne2, b.ne3 / a.ne3.

const T: u32 = NX * NY;
const RM4: u32 = RM / 4u;
const RN4: u32 = RN / 4u;
// vec4s per k row of a tile, with the padding.
const SA_ROW: u32 = TM / 4u + 1u;
const SB_ROW: u32 = TN / 4u + 1u;
// Slots of 4 consecutive k per row of a tile, and how many of a tile's each thread loads.
const KQ: u32 = TK / 4u;
const LA: u32 = KQ * TM / T;
const LB: u32 = KQ * TN / T;

var<workgroup> sa: array<vec4<f32>, TK * SA_ROW>;
var<workgroup> sb: array<vec4<f32>, TK * SB_ROW>;

@compute @workgroup_size(NX, NY)
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
    let tid = lid.y * NX + lid.x;
    // Each thread loads LA (LB) slots of 4 consecutive k of one row of a (column of b): slot
    // tid + l * T holds k = k0 + kq * 4 .. + 3 of row m0 + (tid + l * T) / KQ, neighbouring
    // threads taking neighbouring k, along which rows of a (and contiguous columns of b) lie.
    // One vec4 load where the layout allows (a_vec_ok, b_vec_ok), else 4 scalar ones. Rows
    // and columns past the edge read the last valid one (their outputs are not written);
    // offsets are hoisted out of the k loop.
    let kq = tid % KQ;
    var ar: array<u32, LA>;
    for (var l = 0u; l < LA; l++) {
        let m = min(m0 + (tid + l * T) / KQ, M - 1u);
        ar[l] = a_row(vec4<u32>(0u, m, a2, a3));
    }
    let b_base = p.offs.z + i2 * p.b_nb.z + i3 * p.b_nb.w;
    var br: array<u32, LB>;
    for (var l = 0u; l < LB; l++) {
        br[l] = b_base + min(n0 + (tid + l * T) / KQ, N - 1u) * p.b_nb.y;
    }
    let a_vec = a_vec_ok();
    let b_vec = b_vec_ok();
    let bs = p.b_nb.x;
    var acc: array<vec4<f32>, RN * RM4>;
    for (var k0 = 0u; k0 < K; k0 += TK) {
        let k = k0 + kq * 4u;
        for (var l = 0u; l < LA; l++) {
            var v = vec4<f32>(0.0);
            if (a_vec && k + 3u < K) {
                v = a_vec4(ar[l], k);
            } else {
                for (var e = 0u; e < 4u; e++) {
                    if (k + e < K) {
                        v[e] = a_at(ar[l], k + e);
                    }
                }
            }
            let m = (tid + l * T) / KQ;
            for (var e = 0u; e < 4u; e++) {
                sa[(kq * 4u + e) * SA_ROW + m / 4u][m % 4u] = v[e];
            }
        }
        for (var l = 0u; l < LB; l++) {
            var v = vec4<f32>(0.0);
            let o = br[l] + k * bs;
            if (b_vec && k + 3u < K) {
                v = b_vec4(o);
            } else {
                for (var e = 0u; e < 4u; e++) {
                    if (k + e < K) {
                        v[e] = b_at(o + e * bs);
                    }
                }
            }
            let n = (tid + l * T) / KQ;
            for (var e = 0u; e < 4u; e++) {
                sb[(kq * 4u + e) * SB_ROW + n / 4u][n % 4u] = v[e];
            }
        }
        workgroupBarrier();
        for (var j = 0u; j < TK; j++) {
            var ra: array<vec4<f32>, RM4>;
            for (var i = 0u; i < RM4; i++) {
                ra[i] = sa[j * SA_ROW + i * NX + lid.x];
            }
            for (var jn = 0u; jn < RN4; jn++) {
                let rb = sb[j * SB_ROW + jn * NY + lid.y];
                for (var c = 0u; c < 4u; c++) {
                    for (var i = 0u; i < RM4; i++) {
                        acc[(jn * 4u + c) * RM4 + i] += ra[i] * rb[c];
                    }
                }
            }
        }
        workgroupBarrier();
    }
    // Output (m, n) of acc[(jn * 4 + c) * RM4 + i][e]: m = m0 + (i * NX + lid.x) * 4 + e,
    // n = n0 + (jn * NY + lid.y) * 4 + c.
    let d_base = p.offs.x + i2 * p.d_nb.z + i3 * p.d_nb.w;
    for (var jn = 0u; jn < RN4; jn++) {
        for (var c = 0u; c < 4u; c++) {
            let n = n0 + (jn * NY + lid.y) * 4u + c;
            for (var i = 0u; i < RM4; i++) {
                for (var e = 0u; e < 4u; e++) {
                    let m = m0 + (i * NX + lid.x) * 4u + e;
                    if (m < M && n < N) {
                        store_d(d_base + m * p.d_nb.x + n * p.d_nb.y, acc[(jn * 4u + c) * RM4 + i][e]);
                    }
                }
            }
        }
    }
}
