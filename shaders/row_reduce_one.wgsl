// The row reductions of row_reduce.wgsl for one thread per row (TPR = 1): the thread's own
// value. No workgroup memory and no barriers (a software adapter runs a barrier by switching
// between every invocation of the workgroup: far dearer than a serial row).
// wg_argmax's index of a thread that saw no element.
const NONE: u32 = 0xffffffffu;

fn wg_sum(v: f32, lane: u32) -> f32 {
    return v;
}

fn wg_max(v: f32, lane: u32) -> f32 {
    return v;
}

fn wg_argmax(v: f32, i: u32, lane: u32) -> u32 {
    return i;
}
