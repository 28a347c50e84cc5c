// d = a with rows replaced (ggml's set_rows): row j of b goes to row c[j, i2 % e.y, i3 % e.z]
// of batch (i2, i3); where two j name one row the last wins, an index outside a's rows
// writes nothing (the CPU reference reports an error). c: i32 indices at e.x in binding 4,
// strides u.x (dim 0), u.z (dim 1), u.w (dim 2) in elements; u.y: element count. One
// invocation per output element, searching c's row of indices from its end; it reads its
// element of a before writing it, so it may run in place.
@group(0) @binding(4) var<storage, read_write> c: array<i32>;

fn element(idx: u32) {
    let i = unravel(idx, p.d_ne);
    let base = p.e.x + (i.z % p.e.y) * p.u.z + (i.w % p.e.z) * p.u.w;
    var v = a_get(i);
    for (var j = p.b_ne.y; j > 0u; j = j - 1u) {
        let r = c[base + (j - 1u) * p.u.x];
        if (r >= 0 && u32(r) == i.y) {
            v = b_at(p.offs.z + off4(vec4<u32>(i.x, j - 1u, i.z, i.w), p.b_nb));
            break;
        }
    }
    d_put(p.offs.x + off4(i, p.d_nb), v);
}
