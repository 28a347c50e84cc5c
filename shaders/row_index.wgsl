// Row addressing for row kernels.

// (i1, i2, i3) of row number `row` of a tensor of shape `ne`.
fn row_index(row: u32, ne: vec4<u32>) -> vec4<u32> {
    let i1 = row % ne.y;
    let r = row / ne.y;
    return vec4<u32>(0u, i1, r % ne.z, r / ne.z);
}
