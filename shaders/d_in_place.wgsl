// Output access for kernels that may run in place: with IN_PLACE the output lives in a's
// binding (WebGPU forbids binding the same bytes twice for writing), whose elements are then
// of d's type DT (f32, or the u32 words of an f16 state).
fn d_put(k: u32, v: DT) {
    if ((p.offs.w & IN_PLACE) != 0u) {
        a[k] = v;
    } else {
        d[k] = v;
    }
}

fn d_read(k: u32) -> DT {
    if ((p.offs.w & IN_PLACE) != 0u) {
        return a[k];
    }
    return d[k];
}
