// d = a op b, b broadcast (repeated) onto a's shape; any strides. u.x: the binary op's code
// (binary_op(), generated from the op table); u.y: element count.

fn element(idx: u32) {
    let i = unravel(idx, p.d_ne);
    let x = a_get(i);
    let y = b_at(p.offs.z + off4(i % p.b_ne, p.b_nb));
    d_put(p.offs.x + off4(i, p.d_nb), binary_op(x, y, p.u.x));
}
