// Reductions over the TPR threads of one row (entry_row.wgsl; TPR > 1), in workgroup memory:
// the row's threads own `red[seg .. seg + TPR]`. Every thread of the workgroup must call them
// (they hold barriers).
var<workgroup> red: array<f32, WG>;
var<workgroup> red_i: array<u32, WG>;

// wg_argmax's index of a thread that saw no element.
const NONE: u32 = 0xffffffffu;

// The sum (`is_max` false) or the maximum (true) of the row's threads' values.
fn wg_reduce(v: f32, lane: u32, is_max: bool) -> f32 {
    red[seg + lane] = v;
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s = s >> 1u) {
        if (lane < s) {
            let a = red[seg + lane];
            let b = red[seg + lane + s];
            red[seg + lane] = select(a + b, max(a, b), is_max);
        }
        workgroupBarrier();
    }
    let r = red[seg];
    workgroupBarrier();
    return r;
}

fn wg_sum(v: f32, lane: u32) -> f32 {
    return wg_reduce(v, lane, false);
}

fn wg_max(v: f32, lane: u32) -> f32 {
    return wg_reduce(v, lane, true);
}

// The index of the row's maximum from each thread's best (value v, index i; i = NONE when
// the thread saw no element): the first index on ties.
fn wg_argmax(v: f32, i: u32, lane: u32) -> u32 {
    red[seg + lane] = v;
    red_i[seg + lane] = i;
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s = s >> 1u) {
        if (lane < s) {
            let j = seg + lane;
            let ov = red[j + s];
            let oi = red_i[j + s];
            let mi = red_i[j];
            if (oi != NONE && (mi == NONE || ov > red[j] || (ov == red[j] && oi < mi))) {
                red[j] = ov;
                red_i[j] = oi;
            }
        }
        workgroupBarrier();
    }
    let r = red_i[seg];
    workgroupBarrier();
    return r;
}
