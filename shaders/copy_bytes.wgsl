// Byte copy of a tensor with packed rows (any row strides) into a contiguous destination of
// the same dtype (quantized `cont`). One invocation per destination word; the last word
// keeps the bytes past the tensor. u.x: row bytes; u.y: destination words; u.z: destination
// bytes; offs in bytes (offs.x word aligned).

fn src_byte(k: u32) -> u32 {
    let row = k / p.u.x;
    let r = unravel(row, vec4<u32>(p.a_ne.y, p.a_ne.z, p.a_ne.w, 1u));
    let b = p.offs.y + r.x * p.a_nb.y + r.y * p.a_nb.z + r.z * p.a_nb.w + k % p.u.x;
    return a_byte(b);
}

fn element(w: u32) {
    let n = p.u.z;
    let k0 = 4u * w;
    let o = (p.offs.x >> 2u) + w;
    var v = 0u;
    var mask = 0u;
    for (var j = 0u; j < 4u; j++) {
        if (k0 + j < n) {
            v = v | (src_byte(k0 + j) << (8u * j));
            mask = mask | (0xffu << (8u * j));
        }
    }
    if (mask == 0xffffffffu) {
        d[o] = v;
    } else {
        d[o] = (d[o] & ~mask) | v;
    }
}
