// Converting copy into a contiguous f16 destination (offs.x even), one u32 word (two halves)
// per invocation so no two invocations share a word. u.y: word count; u.z: element count.

fn element(w: u32) {
    let n = p.u.z;
    let e0 = 2u * w;
    let v0 = a_get(unravel(e0, p.d_ne));
    let o = (p.offs.x >> 1u) + w;
    if (e0 + 1u < n) {
        d[o] = pack2x16float(vec2<f32>(v0, a_get(unravel(e0 + 1u, p.d_ne))));
    } else {
        // The last half of an odd count: keep the upper half of the word (not ours).
        d[o] = (d[o] & 0xffff0000u) | (pack2x16float(vec2<f32>(v0, 0.0)) & 0xffffu);
    }
}
