// Shared by every compute shader: the parameter block and index helpers.
// Offsets and strides are in units of the tensor's storage type: f32/i32 elements,
// f16 halves, or bytes for block-quantized tensors.

struct Params {
    d_ne: vec4<u32>,
    d_nb: vec4<u32>,
    a_ne: vec4<u32>,
    a_nb: vec4<u32>,
    b_ne: vec4<u32>,
    b_nb: vec4<u32>,
    // Offsets of dst, a, b (and a spare) inside their bindings.
    offs: vec4<u32>,
    // Op-specific integers and floats.
    u: vec4<u32>,
    f: vec4<f32>,
}

@group(0) @binding(0) var<uniform> p: Params;

const WG: u32 = 256u;

// Flat index of an invocation in a 2-D grid of 1-D workgroups of WG threads.
fn flat_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// Flat index of a workgroup in a 2-D grid.
fn flat_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

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
