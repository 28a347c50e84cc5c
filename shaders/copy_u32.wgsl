// Bit-exact 32-bit copy (i32 cpy) and concat of a and b along dim u.x. u.y: element count;
// u.z: 1 for concat (else b is unused).
@group(0) @binding(2) var<storage, read_write> d: array<u32>;
@group(0) @binding(3) var<storage, read_write> b: array<u32>;

// b[k], or word k of a's binding when b shares a's memory (offs.w bit 0).
fn b_at(k: u32) -> u32 {
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
    var j = i;
    let dim = p.u.x;
    var v: u32;
    if (p.u.z == 0u || j[dim] < p.a_ne[dim]) {
        v = a[p.offs.y + off4(i, p.a_nb)];
    } else {
        j[dim] = j[dim] - p.a_ne[dim];
        v = b_at(p.offs.z + off4(j, p.b_nb));
    }
    d[p.offs.x + off4(i, p.d_nb)] = v;
}
