//! CPU matmul throughput on 1 and 2 threads (interleaved runs, medians, and the 2/1 scaling)
//! against a naive loop, written to `target/bench/cpu_matmul.json`; then the thread
//! thresholds: small nodes on 1 thread vs 2 with every threshold off.
//!
//! Matrix-vector rows also give the weights' bytes read per second, beside a streaming-read
//! probe of this machine's memory bandwidth timed between them; K-quant matvecs also run the
//! f32 path that dequantizes rows (the kernels before the integer dots) in the same window.
//!
//! `cargo bench --bench cpu_matmul` (`-- --quick`: one size each, no thresholds;
//! `-- --thresholds`: only the thresholds).

use std::time::Instant;

use webtensor::backends::cpu::kernels::{compute, matmul_dequantized, KernelSet};
use webtensor::backends::cpu::{Pool, TensorView};
use webtensor::graph::{contiguous_strides, row_from_f32, row_to_f32, DType, Op};

struct Mat {
    bytes: Vec<u8>,
    dtype: DType,
    ne: [usize; 4],
}

impl Mat {
    fn new(dtype: DType, k: usize, rows: usize, seed: u32) -> Self {
        if dtype.is_k_quant() {
            // No quantizer for K-quants here: random valid super-blocks.
            let mut rng = webtensor::testing::Rng::new(seed as u64);
            let bytes = webtensor::testing::random_k_quant(&mut rng, dtype, k * rows, 1.0)
                .expect("a K-quant");
            return Self {
                bytes,
                dtype,
                ne: [k, rows, 1, 1],
            };
        }
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
            row_from_f32(dtype, src, dst).expect("a quantizable dtype");
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
    median(&mut v)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median seconds of each of `fs`, runs interleaved (`f0, f1, f0, f1, ...`) so that a noisy
/// neighbour slows every variant alike; about `budget` seconds in all, at least `min_runs`.
fn time_interleaved(fs: &mut [&mut dyn FnMut()], budget: f64, min_runs: usize) -> Vec<f64> {
    let t = Instant::now();
    for f in fs.iter_mut() {
        f();
    }
    let first = t.elapsed().as_secs_f64();
    let runs = ((budget / first.max(1e-9)) as usize).clamp(min_runs, 200);
    let mut v = vec![Vec::with_capacity(runs); fs.len()];
    for r in 0..runs {
        // Alternate which variant goes first.
        for i in 0..fs.len() {
            let i = if r % 2 == 0 { i } else { fs.len() - 1 - i };
            let t = Instant::now();
            fs[i]();
            v[i].push(t.elapsed().as_secs_f64());
        }
    }
    v.iter_mut().map(|x| median(x)).collect()
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
    /// GFLOP/s on 1 and on 2 threads.
    t1: f64,
    t2: f64,
    naive: Option<f64>,
    /// Matrix-vector products: GB/s of weights read on 1 and 2 threads, and the memory
    /// probe's GB/s (1 thread) timed in the same window.
    bandwidth: Option<(f64, f64, f64)>,
    /// K-quant matrix-vector products: GFLOP/s of the dequantizing f32 path on 1 thread, in
    /// the same window.
    dequant: Option<f64>,
}

fn read_f32(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn bench(pools: &[Pool; 2], dtype: DType, (m, n, k): (usize, usize, usize), budget: f64) -> Row {
    let mut a = Mat::new(dtype, k, m, 1);
    let mut b = Mat::new(DType::F32, k, n, 2);
    let mut d1 = Mat::new(DType::F32, m, n, 3);
    let mut d2 = Mat::new(DType::F32, m, n, 4);
    let (av, bv, dv1, dv2) = (a.view(), b.view(), d1.view(), d2.view());
    let flops = 2.0 * (m * n * k) as f64;
    let run = |p: &Pool, d: &TensorView| {
        compute(p.par(), KernelSet::Fast, &Op::MatMul, d, &[av, bv]).expect("matmul")
    };
    let matvec = n == 1;
    let mut d3 = Mat::new(DType::F32, m, n, 5);
    let dv3 = d3.view();
    let stream = webtensor::bench::StreamProbe::new(if matvec { STREAM_BYTES } else { 0 });
    let mut sink = 0u64;
    let before = matvec && dtype.is_k_quant();
    let t = {
        let mut fs: Vec<&mut dyn FnMut()> = Vec::new();
        let (mut r1, mut r2) = (|| run(&pools[0], &dv1), || run(&pools[1], &dv2));
        let mut probe = || sink = sink.wrapping_add(stream.run());
        let mut deq = || {
            assert!(matmul_dequantized(pools[0].par(), &dv3, &av, &bv));
        };
        fs.push(&mut r1);
        fs.push(&mut r2);
        if matvec {
            fs.push(&mut probe);
        }
        if before {
            fs.push(&mut deq);
        }
        time_interleaved(&mut fs, budget, 3)
    };
    assert!(sink != 1, "probe result kept");
    assert!(
        d1.bytes == d2.bytes,
        "{dtype:?} {m}x{n}x{k}: 2 threads differ from 1"
    );
    // The naive loop (a guard against a kernel that is fast because it is wrong) only where
    // it takes under a few seconds.
    let naive = (m * n * k <= 1 << 28).then(|| {
        let mut out = vec![0f32; m * n];
        let slow = time(|| naive(&a, &b, &mut out), budget, 1);
        let fast_out = read_f32(&d1.bytes);
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
        flops / slow / 1e9
    });
    Row {
        name: format!("{}_{m}x{n}x{k}", dtype.name()),
        m,
        n,
        k,
        t1: flops / t[0] / 1e9,
        t2: flops / t[1] / 1e9,
        naive,
        bandwidth: matvec.then(|| {
            let wbytes = (m * dtype.row_bytes(k).expect("blocks")) as f64;
            (
                wbytes / t[0] / 1e9,
                wbytes / t[1] / 1e9,
                stream.bytes() as f64 / t[2] / 1e9,
            )
        }),
        dequant: before.then(|| flops / t[3] / 1e9),
    }
}

/// Bytes the streaming-read probe sums (well past the caches, as a 4096² weight is).
const STREAM_BYTES: usize = 64 << 20;

/// The thresholds: microseconds per node on 1 thread and on 2 threads with every threshold
/// off ([`Par::eager`]) over growing sizes; the first size where 2 threads win is where a
/// kernel's `MIN_PAR_*` constant goes.
fn thresholds(pools: &[Pool; 2], budget: f64) {
    println!("\nthresholds: median us per node, 1 thread vs 2 (eager split), interleaved");
    println!(
        "{:<28} {:>10} {:>10} {:>8}",
        "case", "1 thr us", "2 thr us", "2/1"
    );
    let mut cases: Vec<(String, Op, Vec<usize>)> = Vec::new();
    for s in [8, 16, 24, 32, 48, 64, 96] {
        cases.push((
            format!("matmul {s}^3 ({} MACs)", s * s * s),
            Op::MatMul,
            vec![s, s, s],
        ));
    }
    for m in [256, 512, 1024, 2048] {
        cases.push((
            format!("matvec {m}x{m} ({} MACs)", m * m),
            Op::MatMul,
            vec![m, 1, m],
        ));
    }
    let rows_ops = [
        ("add", Op::Binary(webtensor::graph::BinaryOp::Add)),
        ("gelu", Op::Unary(webtensor::graph::UnaryOp::Gelu)),
        ("softmax", Op::SoftMax { scale: 1.0 }),
        ("norm", Op::Norm { eps: 1e-5 }),
    ];
    for (name, op) in rows_ops {
        for rows in [4, 8, 16, 32, 64, 128] {
            cases.push((
                format!("{name} 384x{rows} ({} el)", 384 * rows),
                op,
                vec![384, rows],
            ));
        }
    }
    for (name, op, dims) in cases {
        let (srcs, mut d1, mut d2) = if let Op::MatMul = op {
            let (m, n, k) = (dims[0], dims[1], dims[2]);
            (
                vec![Mat::new(DType::F32, k, m, 1), Mat::new(DType::F32, k, n, 2)],
                Mat::new(DType::F32, m, n, 3),
                Mat::new(DType::F32, m, n, 3),
            )
        } else {
            let nsrc = if matches!(op, Op::Binary(_)) { 2 } else { 1 };
            let srcs = (0..nsrc)
                .map(|i| Mat::new(DType::F32, dims[0], dims[1], i + 1))
                .collect();
            (
                srcs,
                Mat::new(DType::F32, dims[0], dims[1], 9),
                Mat::new(DType::F32, dims[0], dims[1], 9),
            )
        };
        let mut srcs = srcs;
        let sv: Vec<TensorView> = srcs.iter_mut().map(|m| m.view()).collect();
        let (dv1, dv2) = (d1.view(), d2.view());
        let (p1, p2) = (pools[0].par(), pools[1].par().eager());
        let t = time_interleaved(
            &mut [
                &mut || compute(p1, KernelSet::Fast, &op, &dv1, &sv).expect("node"),
                &mut || compute(p2, KernelSet::Fast, &op, &dv2, &sv).expect("node"),
            ],
            budget,
            21,
        );
        assert!(d1.bytes == d2.bytes, "{name}: 2 threads differ from 1");
        println!(
            "{name:<28} {:>10.1} {:>10.1} {:>7.2}x",
            t[0] * 1e6,
            t[1] * 1e6,
            t[0] / t[1]
        );
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let only_thresholds = std::env::args().any(|a| a == "--thresholds");
    let budget = if quick { 0.3 } else { 2.0 };
    let pools = [
        Pool::new(Some(1)).expect("1 thread"),
        Pool::new(Some(2)).expect("2 threads"),
    ];
    println!(
        "nproc {}, load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    if only_thresholds {
        thresholds(&pools, 0.3);
        return;
    }
    let mut rows = Vec::new();
    let gemm_sizes: &[usize] = if quick { &[256] } else { &[256, 512, 1024] };
    for &s in gemm_sizes {
        rows.push(bench(&pools, DType::F32, (s, s, s), budget));
    }
    let kq = [
        DType::Q4_K,
        DType::Q6_K,
        DType::Q5_K,
        DType::Q3_K,
        DType::Q2_K,
    ];
    for dtype in [DType::F32, DType::Q8_0, DType::Q4_0].into_iter().chain(kq) {
        rows.push(bench(&pools, dtype, (4096, 1, 4096), budget));
    }
    for dtype in [DType::F32, DType::Q8_0, DType::Q4_0].into_iter().chain(kq) {
        if !quick && dtype == DType::F32 {
            continue; // timed above
        }
        rows.push(bench(&pools, dtype, (1024, 1024, 1024), budget));
    }
    if !quick {
        rows.push(bench(&pools, DType::F16, (1024, 1024, 1024), budget));
        rows.push(bench(&pools, DType::Q8_0, (1024, 16, 1024), budget));
        rows.push(bench(&pools, DType::Q8_0, (1024, 64, 1024), budget));
        rows.push(bench(&pools, DType::Q4_0, (1024, 64, 1024), budget));
    }
    println!(
        "{:<24} {:>12} {:>12} {:>8} {:>12}",
        "matmul (m x n x k)", "1 thr GF/s", "2 thr GF/s", "2/1", "naive GF/s"
    );
    let mut json = String::from("{\n  \"bench\": \"cpu_matmul\",\n  \"simd\": \"");
    json.push_str(webtensor::backends::cpu::simd_level());
    json.push_str("\",\n  \"unit\": \"GFLOP/s (median)\",\n  \"results\": [\n");
    for (i, r) in rows.iter().enumerate() {
        let naive = r.naive.map_or("-".to_string(), |g| format!("{g:.2}"));
        let mut extra = String::new();
        if let Some((b1, b2, probe)) = r.bandwidth {
            extra =
                format!("  weights {b1:.2} / {b2:.2} GB/s (1/2 thr), stream probe {probe:.2} GB/s");
        }
        if let Some(g) = r.dequant {
            extra.push_str(&format!(", dequantize path {g:.2} GF/s (1 thr)"));
        }
        println!(
            "{:<24} {:>12.2} {:>12.2} {:>7.2}x {:>12}{extra}",
            r.name,
            r.t1,
            r.t2,
            r.t2 / r.t1,
            naive
        );
        json.push_str(&format!(
            "    {{\"name\": \"{}\", \"m\": {}, \"n\": {}, \"k\": {}, \"gflops_1thread\": {:.3}, \"gflops_2threads\": {:.3}, \"naive_gflops\": {}, \"weights_gbs_1thread\": {}, \"stream_gbs\": {}, \"dequant_gflops_1thread\": {}}}{}\n",
            r.name,
            r.m,
            r.n,
            r.k,
            r.t1,
            r.t2,
            r.naive.map_or("null".to_string(), |g| format!("{g:.3}")),
            r.bandwidth.map_or("null".to_string(), |b| format!("{:.3}", b.0)),
            r.bandwidth.map_or("null".to_string(), |b| format!("{:.3}", b.2)),
            r.dequant.map_or("null".to_string(), |g| format!("{g:.3}")),
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
    if !quick {
        thresholds(&pools, 0.3);
    }
}
