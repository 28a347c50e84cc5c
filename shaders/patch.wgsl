// Byte-granular update of one u32 word: d[w] = (d[w] & ~mask) | (value & mask). Lets
// buffer writes and memsets reach bytes that queue.writeBuffer (4-byte granular) cannot.
// After the generated `PatchParams` struct (shader.rs).
@group(0) @binding(0) var<uniform> q: PatchParams;
@group(0) @binding(1) var<storage, read_write> d: array<u32>;

@compute @workgroup_size(1)
fn main() {
    if (q.word >= arrayLength(&d)) {
        return;
    }
    d[q.word] = (d[q.word] & ~q.mask) | (q.value & q.mask);
}
