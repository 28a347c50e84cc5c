// Shared by every op shader, after the generated `Params` struct and constants (shader.rs):
// the parameter binding and index helpers. Offsets and strides are in units of the
// tensor's storage type: f32/i32 elements, f16 halves, or bytes for block-quantized tensors.
@group(0) @binding(0) var<uniform> p: Params;

// 4-D index of flat position `i` in a tensor of shape `ne` (innermost first).
fn unravel(i: u32, ne: vec4<u32>) -> vec4<u32> {
    let i0 = i % ne.x;
    let r1 = i / ne.x;
    let i1 = r1 % ne.y;
    let r2 = r1 / ne.y;
    return vec4<u32>(i0, i1, r2 % ne.z, r2 / ne.z);
}

// Offset of 4-D index `i` with strides `nb`.
fn off4(i: vec4<u32>, nb: vec4<u32>) -> u32 {
    return i.x * nb.x + i.y * nb.y + i.z * nb.z + i.w * nb.w;
}

// (0, i1, i2, i3) of row number `row` of a tensor of shape `ne`.
fn row_index(row: u32, ne: vec4<u32>) -> vec4<u32> {
    let i1 = row % ne.y;
    let r = row / ne.y;
    return vec4<u32>(0u, i1, r % ne.z, r / ne.z);
}
