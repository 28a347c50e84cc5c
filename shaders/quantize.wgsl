// Quantizing copy into a contiguous Q8_0 (u.x = 0, 34-byte blocks) or Q4_0 (u.x = 1, 18-byte
// blocks) destination, as ggml's reference quantizers do. Blocks do not end on word
// boundaries, so each invocation builds two whole blocks (68 or 36 bytes: whole words) and
// no two invocations share a word. u.y: block pairs; u.z: block count; offs.x: dst byte offset
// (word aligned).

var<private> words: array<u32, 17>;
var<private> vals: array<f32, 32>;

fn put_byte(k: u32, v: u32) {
    words[k >> 2u] = words[k >> 2u] | ((v & 0xffu) << ((k & 3u) * 8u));
}

// Rust's f32::round: halves away from zero (WGSL's round() goes to even).
fn round_away(x: f32) -> f32 {
    return sign(x) * floor(abs(x) + 0.5);
}

// Encodes block `blk` of the tensor at byte `base` of `words`.
fn encode(blk: u32, base: u32) {
    let i = unravel(blk * 32u, p.d_ne);
    for (var j = 0u; j < 32u; j++) {
        vals[j] = a_get(vec4<u32>(i.x + j, i.y, i.z, i.w));
    }
    var amax = 0.0;
    var mx = 0.0;
    for (var j = 0u; j < 32u; j++) {
        if (abs(vals[j]) > amax) {
            amax = abs(vals[j]);
            mx = vals[j];
        }
    }
    var dq: f32;
    if (p.u.x == 0u) {
        dq = amax / 127.0;
    } else {
        dq = mx / -8.0;
    }
    let id = select(0.0, 1.0 / dq, dq != 0.0);
    let h = pack2x16float(vec2<f32>(dq, 0.0));
    put_byte(base, h);
    put_byte(base + 1u, h >> 8u);
    if (p.u.x == 0u) {
        for (var j = 0u; j < 32u; j++) {
            put_byte(base + 2u + j, u32(i32(round_away(vals[j] * id))));
        }
    } else {
        for (var j = 0u; j < 16u; j++) {
            let q0 = min(u32(max(i32(vals[j] * id + 8.5), 0)), 15u);
            let q1 = min(u32(max(i32(vals[j + 16u] * id + 8.5), 0)), 15u);
            put_byte(base + 2u + j, q0 | (q1 << 4u));
        }
    }
}

fn element(pair: u32) {
    let nblocks = p.u.z;
    let b0 = 2u * pair;
    let bb = select(18u, 34u, p.u.x == 0u);
    encode(b0, 0u);
    var nbytes = bb;
    if (b0 + 1u < nblocks) {
        encode(b0 + 1u, bb);
        nbytes = 2u * bb;
    }
    let w0 = (p.offs.x >> 2u) + pair * (bb >> 1u);
    let full = nbytes >> 2u;
    for (var k = 0u; k < full; k++) {
        d[w0 + k] = words[k];
    }
    if ((nbytes & 3u) != 0u) {
        // A lone last block ends mid-word: keep the bytes after it (not ours).
        d[w0 + full] = (d[w0 + full] & 0xffff0000u) | (words[full] & 0xffffu);
    }
}
