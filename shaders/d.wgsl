// The output `d` (binding 2) with elements of type DT (an alias shader.rs declares per kernel).
@group(0) @binding(2) var<storage, read_write> d: array<DT>;
