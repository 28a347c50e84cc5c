// ggml's IQ4_NL quantizer on the inputs of src/graph/dtype.rs's `iq4_nl_matches_ggml` and
// `iq4_nl_matches_ggml_on_seeded_blocks`: prints what those tests hold (the hex of the
// first, the first two blocks' hex and the FNV-1a hash of all bytes of the second).
// Built and run by scripts/iq4nl-reference.sh against llama.cpp's ggml-quants.c (as
// vendored by llama-cpp-python 0.3.36), compiled for x86-64 without FMA, as the Rust
// tests run natively: the same libm `sinf`, only exact or singly-rounded f32 operations.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml-quants.h"

// What ggml-quants.c links against from ggml.c; none is reached by `quantize_iq4_nl`.
void ggml_abort(const char * file, int line, const char * fmt, ...) {
    fprintf(stderr, "ggml_abort at %s:%d (%s)\n", file, line, fmt);
    abort();
}
size_t ggml_row_size(enum ggml_type type, int64_t ne) { (void) type; (void) ne; abort(); }
size_t ggml_type_size(enum ggml_type type) { (void) type; abort(); }
const char * ggml_type_name(enum ggml_type type) { (void) type; abort(); }

static void hex(const uint8_t * b, size_t n) {
    for (size_t i = 0; i < n; i++) printf("%02x", b[i]);
}

int main(void) {
    // `ggml_input()`: 64 values.
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = sinf((float) i * 0.7f) * ((float) (i % 7) - 3.0f) + 0.01f * (float) i;
    uint8_t q[36];
    quantize_iq4_nl(x, q, 1, 64, NULL);
    printf("iq4_nl_matches_ggml: ");
    hex(q, 36);
    printf("\n");

    // 256 seeded blocks of eight kinds.
    uint64_t s = 0x1234567887654321ull, h = 0xcbf29ce484222325ull;
    const float scales[5] = {1e-3f, 0.02f, 1.0f, 7.5f, 300.0f};
    printf("iq4_nl_matches_ggml_on_seeded_blocks: first two blocks ");
    for (int b = 0; b < 256; b++) {
        int kind = b % 8;
        float sc = scales[b % 5], blk[32];
        for (int i = 0; i < 32; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            int32_t r = (int32_t) (s >> 40) - (1 << 23);
            float v = (float) r * (sc / 8388608.0f);
            if (kind == 1 && (r & 15) == 0) v *= 12.0f;
            switch (kind) {
                case 2: v = fabsf(v); break;
                case 3: v = (float) (r >> 12) * 0.001f - 0.5f; break;
                case 4: if (r & 7) v = 0.0f; break;
                case 5: v = sc; break;
                case 6: v = 0.0f; break;
                default: break;
            }
            blk[i] = v;
        }
        uint8_t out[18];
        quantize_iq4_nl(blk, out, 1, 32, NULL);
        for (int i = 0; i < 18; i++) h = (h ^ out[i]) * 0x100000001b3ull;
        if (b < 2) hex(out, 18);
    }
    printf(", FNV-1a %016llx\n", (unsigned long long) h);
    return 0;
}
