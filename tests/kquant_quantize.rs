//! The K-quant quantizer (`row_from_f32` to Q2_K…Q6_K) against llama.cpp's: the same bytes
//! for the seeded blocks of tests/reference/kquant_quantize.json (written by
//! scripts/kquant-quantize-reference.py through llama.cpp's `ggml_quantize_chunk`), an RMS
//! error no worse than llama.cpp's there, and round-trip error bounds on Gaussian rows,
//! outliers, all-zero and constant rows.
#![cfg(not(target_arch = "wasm32"))]

use sha2::{Digest, Sha256};
use webtensor::graph::{row_from_f32, row_to_f32, DType, QK_K};

/// splitmix64, as the Python script's `Rng` (every f32 step exact or IEEE-rounded alike).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f32 {
        (self.next() >> 40) as f32 * (1.0 / (1u32 << 24) as f32)
    }

    fn gauss(&mut self) -> f32 {
        let mut s = self.uniform() + self.uniform();
        s += self.uniform();
        s += self.uniform();
        (s - 2.0) * 1.732_050_8
    }
}

const SEED: u64 = 0x6B71_7561_6E74;
const SCALES: [f32; 5] = [1.0, 0.02, 300.0, 1e-3, 7.5];

/// Block `b` of the fixture's inputs (the script's `block`, kind `b % 8`).
fn block(rng: &mut Rng, b: usize) -> [f32; QK_K] {
    let scale = SCALES[(b / 8) % SCALES.len()];
    let mut x = [0f32; QK_K];
    let c = if b % 8 == 5 {
        (rng.uniform() - 0.5) * 4.0
    } else {
        0.0
    };
    for (i, o) in x.iter_mut().enumerate() {
        *o = match b % 8 {
            0 => rng.gauss() * scale,
            1 => {
                let v = rng.gauss() * scale;
                if rng.uniform() < 0.02 {
                    v * 12.0
                } else {
                    v
                }
            }
            2 => rng.uniform() * scale,
            3 => rng.gauss() * 0.1 - 0.5,
            // The draw decides first, then the value (as the script's conditional).
            4 if rng.uniform() < 0.1 => rng.gauss() * scale,
            5 => c,
            7 if i >= QK_K / 2 => rng.gauss() * 1e-6,
            _ => 0.0,
        };
    }
    x
}

fn fixture() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/reference/kquant_quantize.json"
    );
    let text = std::fs::read_to_string(path).expect("tests/reference/kquant_quantize.json");
    serde_json::from_str(&text).expect("fixture JSON")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Mean over blocks of the RMS error relative to the block's RMS (absolute for zero blocks).
fn rel_rms_errors(x: &[f32], back: &[f32]) -> Vec<f64> {
    x.chunks_exact(QK_K)
        .zip(back.chunks_exact(QK_K))
        .map(|(x, y)| {
            let e2: f64 = x
                .iter()
                .zip(y)
                .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
                .sum();
            let x2: f64 = x.iter().map(|a| (*a as f64).powi(2)).sum();
            let rms = (x2 / QK_K as f64).sqrt();
            (e2 / QK_K as f64).sqrt() / if rms > 0.0 { rms } else { 1.0 }
        })
        .collect()
}

#[test]
fn k_quant_bytes_equal_llama_cpp_s() {
    let doc = fixture();
    let blocks = doc["blocks"].as_u64().unwrap() as usize;
    let exact = doc["exact_blocks"].as_u64().unwrap() as usize;
    assert_eq!(doc["seed"].as_u64(), Some(SEED));
    let mut rng = Rng(SEED);
    let x: Vec<f32> = (0..blocks).flat_map(|b| block(&mut rng, b)).collect();
    let x_bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(
        hex(&Sha256::digest(&x_bytes)),
        doc["input_sha256"].as_str().unwrap(),
        "the inputs differ from the script's (generator drift)"
    );
    for (name, dtype) in [
        ("q2_k", DType::Q2_K),
        ("q3_k", DType::Q3_K),
        ("q4_k", DType::Q4_K),
        ("q5_k", DType::Q5_K),
        ("q6_k", DType::Q6_K),
    ] {
        let t = &doc["types"][name];
        let bb = dtype.block_bytes();
        let mut q = vec![0u8; dtype.row_bytes(x.len()).unwrap()];
        row_from_f32(dtype, &x, &mut q).unwrap();
        // Block by block first, to name the first block that differs.
        let want = t["first_blocks_hex"].as_str().unwrap();
        for b in 0..exact {
            let got = hex(&q[b * bb..(b + 1) * bb]);
            assert_eq!(got, want[2 * b * bb..2 * (b + 1) * bb], "{name} block {b}");
        }
        assert_eq!(
            hex(&Sha256::digest(&q)),
            t["sha256"].as_str().unwrap(),
            "{name}: bytes of the {blocks} blocks differ from llama.cpp's"
        );
        // The stated bound (implied by equal bytes, kept for a quantizer that may differ):
        // an error no worse than llama.cpp's reference quantizer's on the same data.
        let mut back = vec![0f32; x.len()];
        row_to_f32(dtype, &q, &mut back);
        let errs = rel_rms_errors(&x, &back);
        let mean = errs.iter().sum::<f64>() / errs.len() as f64;
        let ggml = t["mean_rel_rms_error"].as_f64().unwrap();
        println!("{name}: mean relative RMS error {mean:.5} (llama.cpp {ggml:.5})");
        assert!(
            mean <= ggml * (1.0 + 1e-9),
            "{name}: {mean} > llama.cpp's {ggml}"
        );
    }
}

/// Round trips on rows of several super-blocks: Gaussian, Gaussian with outliers, all
/// zero, constant, small (values ~5e-5, f16 scales near subnormal); the worst block's
/// relative RMS error stays under a per-type bound about 40% above what was measured on
/// the Gaussian rows (Q2_K 0.284, Q3_K 0.150, Q4_K 0.068, Q5_K 0.036, Q6_K 0.017), 1.5×
/// that with outliers and 2× for the small values.
#[test]
fn k_quant_round_trips_within_bounds() {
    let bounds = [
        (DType::Q2_K, 0.40),
        (DType::Q3_K, 0.21),
        (DType::Q4_K, 0.10),
        (DType::Q5_K, 0.05),
        (DType::Q6_K, 0.025),
    ];
    let mut rng = Rng(7);
    let n = 4 * QK_K;
    let gauss: Vec<f32> = (0..n).map(|_| rng.gauss() * 0.05).collect();
    let mut outliers = gauss.clone();
    for i in (0..n).step_by(61) {
        outliers[i] *= 25.0;
    }
    let small: Vec<f32> = gauss.iter().map(|v| v * 1e-3).collect();
    for (dtype, bound) in bounds {
        let mut q = vec![0u8; dtype.row_bytes(n).unwrap()];
        let mut back = vec![0f32; n];
        for (what, x, bound) in [
            ("gaussian", &gauss, bound),
            ("outliers", &outliers, bound * 1.5),
            ("small", &small, bound * 2.0),
        ] {
            row_from_f32(dtype, x, &mut q).unwrap();
            row_to_f32(dtype, &q, &mut back);
            let errs = rel_rms_errors(x, &back);
            let worst = errs.iter().cloned().fold(0.0, f64::max);
            println!("{dtype:?} {what}: worst block relative RMS error {worst:.4}");
            assert!(worst < bound, "{dtype:?} {what}: {worst} ≥ {bound}");
            assert!(back.iter().all(|v| v.is_finite()), "{dtype:?} {what}");
        }
        // All zero: exactly zero back.
        row_from_f32(dtype, &vec![0.0; n], &mut q).unwrap();
        row_to_f32(dtype, &q, &mut back);
        assert!(back.iter().all(|&v| v == 0.0), "{dtype:?} zeros");
        // Constant rows: within the type's step of the constant (f16 scales).
        for c in [1.0f32, -0.3, 40.0] {
            row_from_f32(dtype, &vec![c; n], &mut q).unwrap();
            row_to_f32(dtype, &q, &mut back);
            let worst = back.iter().map(|v| (v - c).abs()).fold(0f32, f32::max);
            assert!(
                worst <= c.abs() * 0.01,
                "{dtype:?} constant {c}: off by {worst}"
            );
        }
        // Rows that are not whole super-blocks are an error, not a partial write.
        assert!(row_from_f32(dtype, &gauss[..QK_K + 32], &mut q).is_err());
    }
}
