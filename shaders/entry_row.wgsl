// Entry point of row kernels: one workgroup of WG threads per row of `a`, in a 2-D grid;
// u.y: the row count. The kernel body is `fn row(r: vec4<u32>, lid: u32)`, r = (0, i1, i2, i3).
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let k = wid.x + wid.y * nwg.x;
    if (k < p.u.y) {
        row(row_index(k, p.a_ne), lid);
    }
}
