// Converting copy into a contiguous f16 destination (offs.x even), one u32 word (two halves)
// per invocation so no two invocations share a word. u.y: element count.
@group(0) @binding(2) var<storage, read_write> d: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = p.u.y;
    let e0 = 2u * w;
    if (e0 >= n) {
        return;
    }
    let v0 = a_get(unravel(e0, p.d_ne));
    let o = (p.offs.x >> 1u) + w;
    if (e0 + 1u < n) {
        d[o] = pack2x16float(vec2<f32>(v0, a_get(unravel(e0 + 1u, p.d_ne))));
    } else {
        // The last half of an odd count: keep the upper half of the word (not ours).
        d[o] = (d[o] & 0xffff0000u) | (pack2x16float(vec2<f32>(v0, 0.0)) & 0xffffu);
    }
}
