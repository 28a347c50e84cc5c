//! WebGPU matmul throughput per weight dtype and size (native wgpu), as GFLOP/s medians,
//! written to `target/bench/webgpu_matmul.json`. A benchmark, not a test.
//!
//! `cargo bench --bench webgpu_matmul` — sizes from `WEBGPU_BENCH_SIZES` (default
//! "256,512,1024"; "4096" on a real GPU); `GPU_PEAK_GFLOPS` (the GPU's f32 peak from its
//! spec sheet) adds a % of peak column. On lavapipe/SwiftShader the numbers mean nothing.

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    native::main()
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::rc::Rc;

    use webtensor::backend::{BackendReg, Device};
    use webtensor::backends::webgpu::WebGpuReg;
    use webtensor::bench::MatmulProblem;
    use webtensor::graph::DType;

    pub fn main() {
        pollster::block_on(async {
            let reg = WebGpuReg::new().await;
            let Some(dev) = reg.devices().into_iter().next() else {
                println!(
                    "no WebGPU adapter: {}",
                    reg.unavailable_reason().unwrap_or_default()
                );
                return;
            };
            let dev: Rc<dyn Device> = dev;
            println!("adapter: {}", dev.description());
            let sizes: Vec<usize> = std::env::var("WEBGPU_BENCH_SIZES")
                .unwrap_or_else(|_| "256,512,1024".into())
                .split(',')
                .filter_map(|s| s.trim().parse().ok())
                .collect();
            let peak: Option<f64> = std::env::var("GPU_PEAK_GFLOPS")
                .ok()
                .and_then(|s| s.parse().ok());
            let mut rows = Vec::new();
            for &n in &sizes {
                for dtype in [DType::F32, DType::F16, DType::Q8_0, DType::Q4_0] {
                    let p = match MatmulProblem::new(dev.clone(), dtype, n, n, n) {
                        Ok(p) => p,
                        Err(e) => {
                            println!("{:>5} {:<5} skipped: {e}", n, dtype.name());
                            continue;
                        }
                    };

                    let reps = if n >= 2048 { 10 } else { 5 };
                    let t = match p.median_seconds(reps).await {
                        Ok(t) => t,
                        Err(e) => {
                            println!("{:>5} {:<5} failed: {e}", n, dtype.name());
                            continue;
                        }
                    };
                    let gflops = p.flops() / t / 1e9;
                    let pct = peak
                        .map(|pk| format!("{:5.1}% of peak", 100.0 * gflops / pk))
                        .unwrap_or_default();
                    println!(
                        "{:>5}³ {:<5} {:>10.3} ms {:>9.2} GFLOP/s {pct}",
                        n,
                        dtype.name(),
                        t * 1e3,
                        gflops
                    );
                    rows.push(format!(
                        "{{\"n\":{n},\"dtype\":\"{}\",\"ms\":{:.4},\"gflops\":{:.3}}}",
                        dtype.name(),
                        t * 1e3,
                        gflops
                    ));
                }
            }
            let json = format!(
                "{{\"adapter\":{:?},\"peak_gflops\":{},\"rows\":[{}]}}\n",
                dev.description(),
                peak.map_or("null".into(), |p| p.to_string()),
                rows.join(",")
            );
            let _ = std::fs::create_dir_all("target/bench");
            if let Err(e) = std::fs::write("target/bench/webgpu_matmul.json", json) {
                println!("cannot write target/bench/webgpu_matmul.json: {e}");
            }
        });
    }
}
