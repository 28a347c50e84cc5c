// d = a op b, b broadcast (repeated) onto a's shape; any strides. u.x: 0 add, 1 sub, 2 mul,
// 3 div; u.y: element count.
@group(0) @binding(2) var<storage, read_write> d: array<f32>;
@group(0) @binding(3) var<storage, read_write> b: array<f32>;

// b[k], or word k of a's binding when b shares a's memory (offs.w bit 0).
fn b_at(k: u32) -> f32 {
    if ((p.offs.w & 1u) != 0u) {
        return a_word(k);
    }
    return b[k];
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = flat_id(gid, nwg);
    if (idx >= p.u.y) {
        return;
    }
    let i = unravel(idx, p.d_ne);
    let x = a_get(i);
    let y = b_at(p.offs.z + off4(i % p.b_ne, p.b_nb));
    var r: f32;
    switch p.u.x {
        case 0u: { r = x + y; }
        case 1u: { r = x - y; }
        case 2u: { r = x * y; }
        default: { r = x / y; }
    }
    d_put(p.offs.x + off4(i, p.d_nb), r);
}
