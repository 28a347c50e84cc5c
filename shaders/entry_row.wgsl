// Entry point of row kernels: TPR threads per row of `a` (a power of two up to WG, compiled
// in), WG / TPR rows per workgroup, in a 2-D grid; u.y: the row count. The kernel body is
// `fn row(r: vec4<u32>, lane: u32, live: bool)`, r = (0, i1, i2, i3), lane in 0 .. TPR: it
// walks its row in steps of TPR. Threads past the last row run the last row again (the
// reductions' barriers need every thread of the workgroup) with `live` false: they write
// nothing.

// The first of this thread's row's slots in the reductions' workgroup memory.
var<private> seg: u32;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let k = (wid.x + wid.y * nwg.x) * (WG / TPR) + lid / TPR;
    seg = lid / TPR * TPR;
    row(row_index(min(k, p.u.y - 1u), p.a_ne), lid % TPR, k < p.u.y);
}
