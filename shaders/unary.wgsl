// Element-wise functions of a. u.z: MAP_ACT the unary op of code u.x (act(), generated from
// the op table), MAP_SCALE x * f.x, MAP_CLAMP x limited to [f.y, f.z]; u.y: element count.

fn element(idx: u32) {
    let i = unravel(idx, p.d_ne);
    let x = a_get(i);
    var r: f32;
    switch p.u.z {
        case MAP_ACT: { r = act(x, p.u.x); }
        case MAP_SCALE: { r = x * p.f.x; }
        case MAP_CLAMP: { r = min(max(x, p.f.y), p.f.z); }
        // Unreachable (ops.rs sets one of the three); NaN from a runtime value if not.
        default: { r = bitcast<f32>(0x7fc00000u | (p.u.z & 0u)); }
    }
    d_put(p.offs.x + off4(i, p.d_nb), r);
}
