// Converting copy into a contiguous f32 destination. u.y: element count.

fn element(idx: u32) {
    let i = unravel(idx, p.d_ne);
    d[p.offs.x + off4(i, p.d_nb)] = a_get(i);
}
