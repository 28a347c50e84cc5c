// What both fused attention kernels (attention.wgsl, attention_tiled.wgsl) read besides k
// (`a`) and q (`b`): v at binding 4 (u32 words, k's dtype: C_F16 compiled in; offset e.x,
// strides c_nb) and the optional mask at binding 5 (f32; offset e.y, shape m_ne, strides
// m_nb; e.z: 1 if bound).
@group(0) @binding(4) var<storage, read_write> c: array<u32>;
@group(0) @binding(5) var<storage, read_write> mk: array<f32>;

// The largest finite f32: a score below it is -inf (masked).
const FLT_MAX: f32 = 3.4028234e38; // rounds to the largest f32 (3.40282347e38 is above it: Tint refuses)

// Word k of v's binding, or of a's when v shares k's memory (SHARED_C; q, k and v views of
// one tensor: then q comes through a's binding too, SHARED_B).
fn c_word(k: u32) -> u32 {
    if ((p.offs.w & SHARED_C) != 0u) {
        return a_word(k);
    }
    return c[k];
}

// Element h of v (in v's units: halves when f16).
fn v_at(h: u32) -> f32 {
    if (C_F16) {
        let w = unpack2x16float(c_word(h >> 1u));
        return select(w.x, w.y, (h & 1u) == 1u);
    }
    return bitcast<f32>(c_word(h));
}

