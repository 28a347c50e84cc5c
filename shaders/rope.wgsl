// RoPE. u.x: 0 normal (adjacent pairs), 1 neox (split halves); u.y: element count;
// u.z: n_dims. f.x: freq_base, f.y: freq_scale. b: i32 positions, one per index of dim 2.
@group(0) @binding(2) var<storage, read_write> d: array<f32>;
@group(0) @binding(3) var<storage, read_write> b: array<i32>;

const TWO_PI: f32 = 6.28318530717958648;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = flat_id(gid, nwg);
    if (idx >= p.u.y) {
        return;
    }
    let i = unravel(idx, p.d_ne);
    let n_dims = p.u.z;
    let o = p.offs.x + off4(i, p.d_nb);
    if (i.x >= n_dims) {
        d[o] = a_get(i);
        return;
    }
    let half = n_dims / 2u;
    var k: u32;
    var j0: u32;
    var j1: u32;
    var second: bool;
    if (p.u.x == 0u) {
        k = i.x / 2u;
        j0 = 2u * k;
        j1 = j0 + 1u;
        second = (i.x & 1u) == 1u;
    } else {
        k = i.x % half;
        j0 = k;
        j1 = k + half;
        second = i.x >= half;
    }
    let pos = f32(b[p.offs.z + i.z * p.b_nb.x]) * p.f.y;
    let theta = pos * exp2(-2.0 * f32(k) / f32(n_dims) * log2(p.f.x));
    // Reduce to [-pi, pi], where WGSL's sin/cos accuracy is specified.
    let t = theta - TWO_PI * round(theta / TWO_PI);
    let c = cos(t);
    let s = sin(t);
    let x0 = a_get(vec4<u32>(j0, i.y, i.z, i.w));
    let x1 = a_get(vec4<u32>(j1, i.y, i.z, i.w));
    d[o] = select(x0 * c - x1 * s, x0 * s + x1 * c, second);
}
