// Entry point of element kernels: one invocation per work item, in a 2-D grid of 1-D
// workgroups; u.y: the item count. The kernel body is `fn element(idx: u32)`.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = gid.x + gid.y * nwg.x * WG;
    if (idx < p.u.y) {
        element(idx);
    }
}
