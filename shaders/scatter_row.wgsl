// The row a state write (set_rows in place, one invocation per element or pair of b) puts b's
// row i.y of batch i.zw into: c[j, i2 % e.y, i3 % e.z], or -1 when it writes nothing. Where
// two j name one row the last wins (an earlier j skips when a later one names its row); an
// index outside d's rows writes nothing (the CPU reference reports an error). c: i32 indices
// at e.x in binding 4, strides u.x (dim 0), u.z (dim 1), u.w (dim 2) in elements.
@group(0) @binding(4) var<storage, read_write> c: array<i32>;

fn scatter_row(i: vec4<u32>) -> i32 {
    let base = p.e.x + (i.z % p.e.y) * p.u.z + (i.w % p.e.z) * p.u.w;
    let r = c[base + i.y * p.u.x];
    if (r < 0 || u32(r) >= p.d_ne.y) {
        return -1;
    }
    for (var j = i.y + 1u; j < p.b_ne.y; j = j + 1u) {
        if (c[base + j * p.u.x] == r) {
            return -1;
        }
    }
    return r;
}
