// Element-wise functions of a. u.x: 0 scale by f.x, else the activation act(x, u.x) (act.wgsl:
// 1 gelu (tanh), 2 gelu (erf), 3 silu, 4 relu); u.y: element count.

fn element(idx: u32) {
    let i = unravel(idx, p.d_ne);
    let x = a_get(i);
    var r: f32;
    if (p.u.x == 0u) {
        r = x * p.f.x;
    } else {
        r = act(x, p.u.x);
    }
    d_put(p.offs.x + off4(i, p.d_nb), r);
}
