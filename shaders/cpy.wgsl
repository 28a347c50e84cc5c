// Converting copy into a contiguous f32 destination. u.y: element count.
@group(0) @binding(2) var<storage, read_write> d: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = flat_id(gid, nwg);
    if (idx >= p.u.y) {
        return;
    }
    let i = unravel(idx, p.d_ne);
    d[p.offs.x + off4(i, p.d_nb)] = a_get(i);
}
