// RoPE. One invocation per rotated pair (it reads both elements before writing both, so it
// may run in place) or per passed-through element. u.x: 0 normal (adjacent pairs), 1 neox
// (split halves); u.y: invocation count; u.z: n_dims. f.x: freq_base, f.y: freq_scale.
// b: i32 positions, one per index of dim 2. freq_factor(i) (rope_factors.wgsl or
// rope_no_factors.wgsl) divides pair i's frequency.

const TWO_PI: f32 = 6.28318530717958648;

fn element(idx: u32) {
    let n_dims = p.u.z;
    let half = n_dims / 2u;
    let per_row = half + p.d_ne.x - n_dims;
    let r = unravel(idx / per_row, vec4<u32>(p.d_ne.y, p.d_ne.z, p.d_ne.w, 1u));
    let slot = idx % per_row;
    if (slot >= half) {
        let i = vec4<u32>(n_dims + slot - half, r.x, r.y, r.z);
        d_put(p.offs.x + off4(i, p.d_nb), a_get(i));
        return;
    }
    var j0 = slot;
    var j1 = slot + half;
    if (p.u.x == 0u) {
        j0 = 2u * slot;
        j1 = j0 + 1u;
    }
    let pos = f32(b[p.offs.z + r.y * p.b_nb.x]) * p.f.y;
    let theta = pos * exp2(-2.0 * f32(slot) / f32(n_dims) * log2(p.f.x)) / freq_factor(slot);
    // Reduce to [-pi, pi], where WGSL's sin/cos accuracy is specified.
    let t = theta - TWO_PI * round(theta / TWO_PI);
    let c = cos(t);
    let s = sin(t);
    let i0 = vec4<u32>(j0, r.x, r.y, r.z);
    let i1 = vec4<u32>(j1, r.x, r.y, r.z);
    let x0 = a_get(i0);
    let x1 = a_get(i1);
    d_put(p.offs.x + off4(i0, p.d_nb), x0 * c - x1 * s);
    d_put(p.offs.x + off4(i1, p.d_nb), x0 * s + x1 * c);
}
