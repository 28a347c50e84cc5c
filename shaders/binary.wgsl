// d = a op b, b broadcast (repeated) onto a's shape; any strides. u.x: 0 add, 1 sub, 2 mul,
// 3 div; u.y: element count.

fn element(idx: u32) {
    let i = unravel(idx, p.d_ne);
    let x = a_get(i);
    let y = b_at(p.offs.z + off4(i % p.b_ne, p.b_nb));
    var r: f32;
    switch p.u.x {
        case 0u: { r = x + y; }
        case 1u: { r = x - y; }
        case 2u: { r = x * y; }
        default: { r = x / y; }
    }
    d_put(p.offs.x + off4(i, p.d_nb), r);
}
