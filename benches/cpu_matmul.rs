//! CPU matmul throughput: the fast kernels against a naive loop, printed as GFLOP/s medians
//! and written to `target/bench/cpu_matmul.json`.
//!
//! `cargo bench --bench cpu_matmul` (add `-- --quick` for one size each).

use std::time::Instant;

use webtensor::backends::cpu::kernels::{compute, KernelSet};
use webtensor::backends::cpu::TensorView;
use webtensor::graph::{contiguous_strides, row_from_f32, row_to_f32, DType, Op};

struct Mat {
    bytes: Vec<u8>,
    dtype: DType,
    ne: [usize; 4],
}

impl Mat {
    fn new(dtype: DType, k: usize, rows: usize, seed: u32) -> Self {
        let mut s = seed.wrapping_mul(2_654_435_761).max(1);
        let vals: Vec<f32> = (0..k * rows)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
            })
            .collect();
        let row = dtype.row_bytes(k).expect("whole blocks");
        let mut bytes = vec![0u8; row * rows];
        for (src, dst) in vals.chunks(k).zip(bytes.chunks_mut(row)) {
            row_from_f32(dtype, src, dst);
        }
        Self {
            bytes,
            dtype,
            ne: [k, rows, 1, 1],
        }
    }

    fn view(&mut self) -> TensorView {
        let nb = contiguous_strides(self.dtype, self.ne).expect("small");
        // The Vec outlives every use of the view in this file.
        unsafe { TensorView::from_raw(self.bytes.as_mut_ptr(), self.dtype, self.ne, nb) }
    }
}

/// Median seconds of `f` over a few runs (at least `min_runs`, about `budget` seconds).
fn time(mut f: impl FnMut(), budget: f64, min_runs: usize) -> f64 {
    let t = Instant::now();
    f();
    let first = t.elapsed().as_secs_f64();
    let runs = ((budget / first.max(1e-9)) as usize).clamp(min_runs, 50);
    let mut v: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The baseline: a plain triple loop over f32 (dequantizing weight rows first).
fn naive(a: &Mat, b: &Mat, out: &mut [f32]) {
    let (k, m, n) = (a.ne[0], a.ne[1], b.ne[1]);
    let arow_bytes = a.dtype.row_bytes(k).expect("blocks");
    let mut arow = vec![0f32; k];
    let bf: Vec<f32> = b
        .bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    for i in 0..m {
        row_to_f32(
            a.dtype,
            &a.bytes[i * arow_bytes..(i + 1) * arow_bytes],
            &mut arow,
        );
        for j in 0..n {
            let mut s = 0f32;
            for (x, y) in arow.iter().zip(&bf[j * k..(j + 1) * k]) {
                s += x * y;
            }
            out[j * m + i] = s;
        }
    }
}

struct Row {
    name: String,
    m: usize,
    n: usize,
    k: usize,
    fast: f64,
    naive: f64,
}

fn bench(dtype: DType, m: usize, n: usize, k: usize, budget: f64) -> Row {
    let mut a = Mat::new(dtype, k, m, 1);
    let mut b = Mat::new(DType::F32, k, n, 2);
    let mut d = Mat::new(DType::F32, m, n, 3);
    let (av, bv, dv) = (a.view(), b.view(), d.view());
    let flops = 2.0 * (m * n * k) as f64;
    let fast = time(
        || compute(KernelSet::Fast, &Op::MatMul, &dv, &[av, bv]).expect("matmul"),
        budget,
        3,
    );
    let mut out = vec![0f32; m * n];
    let slow = time(|| naive(&a, &b, &mut out), budget, 1);
    // Guard against a kernel that is fast because it is wrong.
    let fast_out: Vec<f32> = d
        .bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let num: f64 = fast_out
        .iter()
        .zip(&out)
        .map(|(x, y)| ((x - y) as f64).powi(2))
        .sum();
    let den: f64 = out.iter().map(|y| (*y as f64).powi(2)).sum();
    assert!(
        num <= 1e-3 * den,
        "{dtype:?} {m}x{n}x{k}: fast and naive disagree, nmse {}",
        num / den
    );
    Row {
        name: format!("{}_{m}x{n}x{k}", dtype.name()),
        m,
        n,
        k,
        fast: flops / fast / 1e9,
        naive: flops / slow / 1e9,
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let budget = if quick { 0.2 } else { 1.0 };
    let mut rows = Vec::new();
    let gemm_sizes: &[usize] = if quick { &[256] } else { &[256, 512, 1024] };
    for &s in gemm_sizes {
        rows.push(bench(DType::F32, s, s, s, budget));
    }
    for dtype in [DType::Q8_0, DType::Q4_0] {
        rows.push(bench(dtype, 4096, 1, 4096, budget));
    }
    if !quick {
        rows.push(bench(DType::F16, 1024, 1024, 1024, budget));
        rows.push(bench(DType::F32, 4096, 1, 4096, budget));
        rows.push(bench(DType::Q8_0, 1024, 16, 1024, budget));
        rows.push(bench(DType::Q8_0, 1024, 64, 1024, budget));
        rows.push(bench(DType::Q4_0, 1024, 64, 1024, budget));
    }
    println!(
        "{:<24} {:>12} {:>12} {:>8}",
        "matmul (m x n x k)", "fast GF/s", "naive GF/s", "ratio"
    );
    let mut json = String::from("{\n  \"bench\": \"cpu_matmul\",\n  \"simd\": \"");
    json.push_str(webtensor::backends::cpu::simd_level());
    json.push_str("\",\n  \"unit\": \"GFLOP/s (median)\",\n  \"results\": [\n");
    for (i, r) in rows.iter().enumerate() {
        println!(
            "{:<24} {:>12.2} {:>12.2} {:>7.1}x",
            r.name,
            r.fast,
            r.naive,
            r.fast / r.naive
        );
        json.push_str(&format!(
            "    {{\"name\": \"{}\", \"m\": {}, \"n\": {}, \"k\": {}, \"fast_gflops\": {:.3}, \"naive_gflops\": {:.3}}}{}\n",
            r.name,
            r.m,
            r.n,
            r.k,
            r.fast,
            r.naive,
            if i + 1 < rows.len() { "," } else { "" }
        ));
    }
    json.push_str("  ]\n}\n");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    let path = dir.join("cpu_matmul.json");
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, json)) {
        Ok(()) => println!("wrote {}", path.display()),
        Err(e) => eprintln!("cannot write {}: {e}", path.display()),
    }
}
