//! WebGPU matmul throughput per weight dtype and shape (native wgpu), as GFLOP/s medians,
//! written to `target/bench/webgpu_matmul.json`. A benchmark, not a test.
//!
//! `cargo bench --features bench --bench webgpu_matmul` (`--profile dev` for quick tries:
//! the kernels run in the adapter's driver whatever the profile). Shapes from
//! `WEBGPU_BENCH_SHAPES`: `TOKENSxKxOUT` (activation rows × inner × output features) or `N`
//! for N³; default "1x384x384,8x384x1536,32x384x384,128x384x1536,1024" ("4096" on a real GPU).
//! `WEBGPU_BENCH_DTYPES` (default "f32,f16,q8_0,q4_0"; also "q2_k" .. "q6_k", random valid
//! super-blocks) picks weight dtypes. Each problem runs
//! with each kernel selection of `WEBGPU_BENCH_KERNELS` (default "base,auto"; also "tiled",
//! "small", "reg": the register-tiled kernel, "rows": the row-parallel one), same process,
//! same data: `base` is the selection before the small-batch kernel, `auto` the current one. `GPU_PEAK_GFLOPS` (the GPU's f32
//! peak from its spec sheet) adds a % of peak column. On lavapipe/SwiftShader the numbers
//! say how the kernels use a CPU, not what a GPU would do.

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
    use webtensor::backends::webgpu::{MatmulKernels, WebGpuOptions, WebGpuReg};
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
            let shapes: Vec<(usize, usize, usize)> = std::env::var("WEBGPU_BENCH_SHAPES")
                .unwrap_or_else(|_| "1x384x384,8x384x1536,32x384x384,128x384x1536,1024".into())
                .split(',')
                .filter_map(|s| {
                    let v: Vec<usize> =
                        s.trim().split('x').filter_map(|x| x.parse().ok()).collect();
                    match v[..] {
                        [n] => Some((n, n, n)),
                        [t, k, o] => Some((t, k, o)),
                        _ => None,
                    }
                })
                .collect();
            let dtypes: Vec<DType> = std::env::var("WEBGPU_BENCH_DTYPES")
                .unwrap_or_else(|_| "f32,f16,q8_0,q4_0".into())
                .split(',')
                .filter_map(|s| {
                    [DType::F32, DType::F16, DType::Q8_0, DType::Q4_0]
                        .into_iter()
                        .chain(DType::K_QUANTS)
                        .find(|d| d.name() == s.trim())
                })
                .collect();
            let peak: Option<f64> = std::env::var("GPU_PEAK_GFLOPS")
                .ok()
                .and_then(|s| s.parse().ok());
            let kernels: Vec<(&str, MatmulKernels)> = std::env::var("WEBGPU_BENCH_KERNELS")
                .unwrap_or_else(|_| "base,auto".into())
                .split(',')
                .filter_map(|s| match s.trim() {
                    "base" => Some(("base", MatmulKernels::Base)),
                    "auto" => Some(("auto", MatmulKernels::Auto)),
                    "tiled" => Some(("tiled", MatmulKernels::Tiled)),
                    "small" => Some(("small", MatmulKernels::Small)),
                    "reg" => Some(("reg", MatmulKernels::Reg)),
                    "rows" => Some(("rows", MatmulKernels::Rows)),
                    _ => None,
                })
                .collect();
            let mut head = format!("{:>16} {:<5}", "tokens×k×out", "dtype");
            for (label, _) in &kernels {
                head += &format!(
                    " {:>10} {:>10}",
                    format!("{label} ms"),
                    format!("{label} GF/s")
                );
            }
            println!("{head}");
            let mut rows = Vec::new();
            for &(tokens, k, out) in &shapes {
                for &dtype in &dtypes {
                    let shape = format!("{tokens}x{k}x{out}");
                    let mut line = format!("{shape:>16} {:<5}", dtype.name());
                    for &(label, sel) in &kernels {
                        let opts = WebGpuOptions {
                            matmul_kernels: sel,
                            ..WebGpuOptions::default()
                        };
                        let Some(dev) = reg.with_options(opts).device() else {
                            continue;
                        };
                        let p = match MatmulProblem::new(dev, dtype, out, tokens, k) {
                            Ok(p) => p,
                            Err(e) => {
                                line += &format!(" {label} skipped: {e}");
                                continue;
                            }
                        };
                        // At least 5 runs and about 0.5 s of them.
                        let first = match p.median_seconds(1).await {
                            Ok(t) => t,
                            Err(e) => {
                                line += &format!(" {label} failed: {e}");
                                continue;
                            }
                        };
                        let reps = ((0.5 / first) as usize).clamp(5, 50);
                        let t = match p.median_seconds(reps).await {
                            Ok(t) => t,
                            Err(e) => {
                                line += &format!(" {label} failed: {e}");
                                continue;
                            }
                        };
                        let gflops = p.flops() / t / 1e9;
                        line += &format!(" {:>10.3} {:>10.2}", t * 1e3, gflops);
                        rows.push(format!(
                            "{{\"shape\":\"{shape}\",\"dtype\":\"{}\",\"kernels\":\"{label}\",\"ms\":{:.4},\"gflops\":{:.3}}}",
                            dtype.name(),
                            t * 1e3,
                            gflops
                        ));
                        if let (Some(pk), "auto") = (peak, label) {
                            line += &format!(" {:5.1}% of peak", 100.0 * gflops / pk);
                        }
                    }
                    println!("{line}");
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
