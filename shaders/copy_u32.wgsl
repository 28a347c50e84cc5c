// Bit-exact 32-bit copy (i32 cpy) and concat of a and b along dim u.x. u.y: element count;
// u.z: 1 for concat (else b is unused).

fn element(idx: u32) {
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
