//! The GPU check: on a machine with a real GPU, in one go (a few minutes), natively:
//!
//! 1. the op suite on every device (the GPU through wgpu, and the CPU) against the scalar
//!    reference;
//! 2. matmul at 1024³ and 4096³ on the GPU per weight dtype, as GFLOP/s and as a share of the
//!    GPU's f32 peak (`GPU_PEAK_GFLOPS`, from its spec sheet; H100/H200 SXM: 66900), with the
//!    CPU beside it at the sizes it finishes quickly, and the GPU again with the
//!    register-tiled kernel (`MatmulKernels::Reg`, which `Auto` leaves out: it lost to the
//!    64 x 64 tile on an H200), and at MiniLM's small-batch shapes with the earlier matmul
//!    kernels (`MatmulKernels::Base`) for an A/B of the row-parallel kernel;
//! 3. MiniLM at the benchmark's four cases on `'cpu'`, `'webgpu'` and `'auto'` (and WebGPU
//!    with the earlier matmul kernels, and without fused epilogues);
//! 4. text generation with the decoder GGUFs named in `DECODER_MODELS` (comma-separated;
//!    default: the `models/decoder/bench-*.gguf` that `scripts/decoder-models.py --bench`
//!    writes, where present) on the GPU and the CPU: a 128-token prompt's prefill tokens/s
//!    and 64 greedy decode steps' tokens/s, each the median of `DECODER_REPS` (default 3);
//! 5. attention alone, a decode step over 1024 and 4096 keys (the Qwen2.5-0.5B shape, and
//!    32 × 128 heads over 8 KV heads): on the GPU with its keys split by the adapter's rule,
//!    unsplit, and as the unfused nodes, and on the CPU;
//!
//! then prints one table (markdown). `scripts/gpu-check.sh` builds and runs it, or bundles it
//! with the model for a GPU machine without Rust. Exit status 1 when a case fails or there is
//! no GPU adapter. Env: `GPU_CHECK_SIZES` (default "1024,4096"), `MINILM_MODEL` (default
//! `models/minilm-q8_0.gguf`), `BENCH_REPS` (default 7), `DECODER_MODELS`, `DECODER_REPS`.

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    std::process::exit(pollster::block_on(native::check()));
}

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::rc::Rc;

    use webtensor::backend::{Device, DeviceKind};
    use webtensor::backends::webgpu::{MatmulKernels, WebGpuOptions};
    use webtensor::backends::DeviceOptions;
    use webtensor::bench::{
        median, minilm_embed_ms, minilm_texts, AttentionCase, MatmulProblem, MINILM_CASES,
    };
    use webtensor::graph::DType;
    use webtensor::model::bert::SentenceEmbedder;
    use webtensor::runtime::DeviceChoice;
    use webtensor::testing::{run_suite_on_registry, SuiteOptions};

    fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
        std::env::var(key)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    }

    /// Median GFLOP/s of `W (n×n, dtype) · X (n×n)` on `dev`, or why not.
    async fn matmul_gflops(dev: &Rc<dyn Device>, dtype: DType, n: usize, reps: usize) -> String {
        let p = match MatmulProblem::new(dev.clone(), dtype, n, n, n) {
            Ok(p) => p,
            Err(e) => return format!("skipped: {e}"),
        };
        match p.median_seconds(reps).await {
            Ok(t) => format!("{:.1}", p.flops() / t / 1e9),
            Err(e) => format!("failed: {e}"),
        }
    }

    /// Device options choosing the WebGPU matmul kernels `kernels`, fused or not.
    fn options(kernels: MatmulKernels, fusion: bool) -> DeviceOptions {
        DeviceOptions {
            webgpu: WebGpuOptions {
                matmul_kernels: kernels,
                fusion,
                ..WebGpuOptions::default()
            },
        }
    }

    /// The WebGPU device planning with `kernels` (the same GPU device as the registry's).
    async fn gpu_with(kernels: MatmulKernels) -> Option<Rc<dyn Device>> {
        let reg = webtensor::backends::registry_with(true, options(kernels, true)).await;
        reg.devices().into_iter().find(|d| d.name() == "WebGPU")
    }

    const GEN_PROMPT: usize = 128;
    const GEN_STEPS: usize = 64;

    /// The decoder GGUFs of section 4: `DECODER_MODELS`, or the bench models present.
    fn decoder_models() -> Vec<String> {
        if let Ok(list) = std::env::var("DECODER_MODELS") {
            return list
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
        }
        let mut found: Vec<String> = std::fs::read_dir("models/decoder")
            .map(|dir| {
                dir.filter_map(|e| e.ok())
                    .map(|e| e.path().to_string_lossy().into_owned())
                    .filter(|p| p.contains("/bench-") && p.ends_with(".gguf"))
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        found
    }

    /// Median prefill and decode tokens/s of one model on `choice` over `reps` runs (BOS,
    /// then ids cycling 1000..4000, as scripts/bench-decoder.sh gives both engines).
    async fn generation(
        bytes: &[u8],
        choice: DeviceChoice,
        reps: usize,
    ) -> Result<(f64, f64), String> {
        use webtensor::model::decoder::{argmax, Decoder, DecoderOptions};
        let rt = webtensor::create_runtime(choice, false)
            .await
            .map_err(|e| e.to_string())?;
        let opts = DecoderOptions {
            context: Some(256),
            ..DecoderOptions::default()
        };
        let mut dec = Decoder::load(&rt, bytes, &opts).map_err(|e| e.to_string())?;
        dec.warm_up(&rt).await.map_err(|e| e.to_string())?;
        let ids: Vec<u32> = std::iter::once(1)
            .chain((0..GEN_PROMPT as u32 - 1).map(|i| 1000 + i % 3001))
            .collect();
        let (mut prefill, mut decode) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            dec.reset();
            let t = std::time::Instant::now();
            let logits = dec.prefill(&rt, &ids).await.map_err(|e| e.to_string())?;
            prefill.push(ids.len() as f64 / t.elapsed().as_secs_f64());
            let mut next = argmax(&logits);
            let t = std::time::Instant::now();
            for _ in 0..GEN_STEPS {
                next = argmax(&dec.step(&rt, next).await.map_err(|e| e.to_string())?);
            }
            decode.push(GEN_STEPS as f64 / t.elapsed().as_secs_f64());
        }
        Ok((median(&mut prefill), median(&mut decode)))
    }

    pub async fn check() -> i32 {
        let mut rows: Vec<[String; 4]> = Vec::new();
        let mut status = 0;
        let t0 = std::time::Instant::now();

        // 1. The op suite on every device, the GPU required.
        let reg = webtensor::backends::registry().await;
        let devices = reg.devices();
        let Some(gpu) = devices.iter().find(|d| d.name() == "WebGPU").cloned() else {
            let why: Vec<String> = reg
                .backend_regs()
                .iter()
                .filter_map(|r| r.unavailable_reason().map(|w| format!("{}: {w}", r.name())))
                .collect();
            let names: Vec<&str> = devices.iter().map(|d| d.name()).collect();
            println!("no GPU adapter (devices: {names:?}): {}", why.join("; "));
            return 1;
        };
        let cpu = devices
            .iter()
            .find(|d| d.kind() == DeviceKind::Cpu)
            .cloned();
        println!("GPU: {}", gpu.description());
        // The kernel selection before the row-parallel kernel, and the register tile.
        let gpu_base = gpu_with(MatmulKernels::Base)
            .await
            .unwrap_or_else(|| gpu.clone());
        let gpu_reg = gpu_with(MatmulKernels::Reg)
            .await
            .unwrap_or_else(|| gpu.clone());
        let opts = SuiteOptions {
            filter: None,
            require_webgpu: true,
        };
        match run_suite_on_registry(&reg, &opts).await {
            Ok(report) => {
                println!("{report}");
                if report.check().is_err() {
                    status = 1;
                }
                for r in &report.devices {
                    rows.push([
                        format!("op suite, {}", r.name),
                        format!(
                            "{} passed, {} failed, {} skipped",
                            r.passed, r.failed, r.skipped
                        ),
                        String::new(),
                        r.device.clone(),
                    ]);
                }
            }
            Err(e) => {
                println!("op suite could not run: {e}");
                return 1;
            }
        }

        // 2. Matmul throughput.
        let peak: Option<f64> = std::env::var("GPU_PEAK_GFLOPS")
            .ok()
            .and_then(|s| s.parse().ok());
        let sizes: Vec<usize> = std::env::var("GPU_CHECK_SIZES")
            .unwrap_or_else(|_| "1024,4096".into())
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        // Untimed work first: a GPU idles at a low clock, and the first case measured
        // (f32 at 1024³) came out 4x below the same kernel measured later in the run.
        let _ = matmul_gflops(&gpu, DType::F32, 2048, 50).await;
        for &n in &sizes {
            for dtype in [
                DType::F32,
                DType::F16,
                DType::Q8_0,
                DType::Q4_0,
                DType::Q4_K,
                DType::Q6_K,
            ] {
                let reps = if n >= 2048 { 10 } else { 20 };
                let g = matmul_gflops(&gpu, dtype, n, reps).await;
                // The same on the register-tiled kernel.
                let reg = matmul_gflops(&gpu_reg, dtype, n, reps).await;
                let c = match &cpu {
                    Some(cpu) if n <= 1024 => matmul_gflops(cpu, dtype, n, 3).await,
                    _ => "-".into(),
                };
                let note = match (peak, g.parse::<f64>(), reg.parse::<f64>()) {
                    (Some(pk), Ok(x), Ok(e)) => format!(
                        "{:.1}% of the GPU's f32 peak ({pk} GFLOP/s); register tile: {reg} GFLOP/s, {:.1}%",
                        100.0 * x / pk,
                        100.0 * e / pk
                    ),
                    _ => format!("register tile: {reg} GFLOP/s"),
                };
                println!(
                    "matmul {n}³ {}: GPU {g} GFLOP/s (register tile {reg}), CPU {c}",
                    dtype.name()
                );
                rows.push([
                    format!("matmul {n}³ {} (GFLOP/s)", dtype.name()),
                    g,
                    c,
                    note,
                ]);
            }
        }

        // MiniLM's small-batch shapes (tokens × k × out, f32), with both kernel selections.
        for (n, k, m) in [
            (1, 384, 384),
            (8, 384, 1536),
            (32, 1536, 384),
            (1, 4096, 4096),
        ] {
            let mut g = [String::new(), String::new()];
            for (i, dev) in [&gpu, &gpu_base].into_iter().enumerate() {
                g[i] = match MatmulProblem::new(dev.clone(), DType::F32, m, n, k) {
                    Ok(p) => match p.median_seconds(50).await {
                        Ok(t) => format!("{:.1}", p.flops() / t / 1e9),
                        Err(e) => format!("failed: {e}"),
                    },
                    Err(e) => format!("skipped: {e}"),
                };
            }
            rows.push([
                format!("matmul {n}×{k}×{m} f32 (GFLOP/s)"),
                g[0].clone(),
                "-".into(),
                format!("earlier kernels: {} GFLOP/s", g[1]),
            ]);
        }

        // 3. MiniLM, each device choice.
        let path =
            std::env::var("MINILM_MODEL").unwrap_or_else(|_| "models/minilm-q8_0.gguf".into());
        let reps = env_or("BENCH_REPS", 7usize);
        match std::fs::read(&path) {
            Err(e) => println!("MiniLM skipped: cannot read {path}: {e}"),
            Ok(bytes) => {
                // The last two: WebGPU with the matmul kernels chosen as before the
                // small-batch kernel, to see what that kernel does on this GPU, and WebGPU
                // without fused epilogues (one dispatch per node).
                let choices = [
                    (DeviceChoice::WebGpu, false, MatmulKernels::Auto),
                    (DeviceChoice::Cpu, false, MatmulKernels::Auto),
                    (DeviceChoice::Auto, true, MatmulKernels::Auto),
                    (DeviceChoice::WebGpu, false, MatmulKernels::Base),
                    (DeviceChoice::WebGpu, false, MatmulKernels::Auto),
                ];
                let mut ms = vec![vec![String::from("-"); MINILM_CASES.len()]; choices.len()];
                for (c, &(choice, cost, kernels)) in choices.iter().enumerate() {
                    let opts = options(kernels, c != 4);
                    let rt = match webtensor::create_runtime_with(choice, cost, opts).await {
                        Ok(rt) => rt,
                        Err(e) => {
                            println!("MiniLM {choice:?}: {e}");
                            continue;
                        }
                    };
                    let e = match SentenceEmbedder::load(&rt, &bytes) {
                        Ok(e) => e,
                        Err(e) => {
                            println!("MiniLM {choice:?}: {e}");
                            status = 1;
                            continue;
                        }
                    };
                    for (k, &(_, n, tokens)) in MINILM_CASES.iter().enumerate() {
                        let texts = minilm_texts(&e, n, tokens);
                        ms[c][k] = match minilm_embed_ms(&e, &rt, &texts, reps).await {
                            Ok(t) => format!("{t:.2}"),
                            Err(err) => {
                                status = 1;
                                format!("failed: {err}")
                            }
                        };
                    }
                    if choice == DeviceChoice::Auto {
                        if let Ok(plan) = e.explain(&rt) {
                            println!(
                                "auto, last case: {}",
                                plan.lines().nth(1).unwrap_or_default()
                            );
                        }
                    }
                }
                let name = path.rsplit('/').next().unwrap_or(&path);
                for (k, &(label, _, _)) in MINILM_CASES.iter().enumerate() {
                    let speedup = match (ms[0][k].parse::<f64>(), ms[1][k].parse::<f64>()) {
                        (Ok(g), Ok(c)) => format!("GPU {:.2}× the CPU", c / g),
                        _ => String::new(),
                    };
                    rows.push([
                        format!("MiniLM {name} {label} (ms, median of {reps})"),
                        ms[0][k].clone(),
                        ms[1][k].clone(),
                        format!(
                            "auto {} ms; {speedup}; WebGPU with the earlier matmul kernels {} ms, \
                             unfused {} ms",
                            ms[2][k], ms[3][k], ms[4][k]
                        ),
                    ]);
                }
            }
        }

        // 4. Text generation.
        let reps = env_or("DECODER_REPS", 3usize).max(1);
        for path in decoder_models() {
            let name = path.rsplit('/').next().unwrap_or(&path).to_string();
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) => {
                    println!("decoder {name} skipped: {e}");
                    continue;
                }
            };
            let mut cells = Vec::new();
            for choice in [DeviceChoice::WebGpu, DeviceChoice::Cpu] {
                match generation(&bytes, choice, reps).await {
                    Ok((p, d)) => {
                        println!(
                            "decoder {name} {choice:?}: prefill {p:.1} tok/s, decode {d:.1} tok/s"
                        );
                        cells.push(format!("{p:.1} / {d:.1}"));
                    }
                    Err(e) => {
                        println!("decoder {name} {choice:?}: {e}");
                        status = 1;
                        cells.push(format!("failed: {e}"));
                    }
                }
            }
            rows.push([
                format!("generate {name}: prefill / decode (tokens/s)"),
                cells[0].clone(),
                cells[1].clone(),
                format!(
                    "{GEN_PROMPT}-token prompt, then {GEN_STEPS} greedy steps; median of {reps}"
                ),
            ]);
        }

        // 5. Attention alone: a decode step (one query) over a long cache and a 512-token
        // prompt, on the GPU with its keys split by the adapter's rule and unsplit, without
        // shader-f16 and subgroups, against the unfused nodes, and on the CPU.
        let gpu_opts = |kv_splits, features| DeviceOptions {
            webgpu: WebGpuOptions {
                kv_splits,
                shader_f16: features,
                subgroups: features,
                ..WebGpuOptions::default()
            },
        };
        for case in [
            AttentionCase {
                d: 64,
                heads: 14,
                kv_heads: 2,
                n_q: 1,
                n_kv: 1024,
                pad: 0,
            },
            AttentionCase {
                d: 64,
                heads: 14,
                kv_heads: 2,
                n_q: 1,
                n_kv: 4096,
                pad: 0,
            },
            AttentionCase {
                d: 128,
                heads: 32,
                kv_heads: 8,
                n_q: 1,
                n_kv: 4096,
                pad: 0,
            },
            AttentionCase {
                d: 64,
                heads: 14,
                kv_heads: 2,
                n_q: 512,
                n_kv: 512,
                pad: 0,
            },
        ] {
            let mut ms = Vec::new();
            for (choice, opts, fused) in [
                (DeviceChoice::WebGpu, gpu_opts(None, true), true),
                (DeviceChoice::WebGpu, gpu_opts(Some(1), true), true),
                (DeviceChoice::WebGpu, gpu_opts(None, true), false),
                (DeviceChoice::Cpu, gpu_opts(None, true), true),
                (DeviceChoice::WebGpu, gpu_opts(None, false), true),
            ] {
                let cell = match webtensor::create_runtime_with(choice, false, opts).await {
                    Ok(rt) => match case.program(fused) {
                        Ok((p, inputs)) => {
                            let t = AttentionCase::median_ms(&rt, &p, &inputs).await;
                            rt.release(&p);
                            t.map_or_else(|e| format!("failed: {e}"), |t| format!("{t:.3}"))
                        }
                        Err(e) => format!("failed: {e}"),
                    },
                    Err(e) => format!("failed: {e}"),
                };
                if cell.starts_with("failed") {
                    status = 1;
                }
                ms.push(cell);
            }
            rows.push([
                format!("attention {} (ms, median of 7)", case.name()),
                ms[0].clone(),
                ms[3].clone(),
                format!(
                    "GPU keys unsplit {} ms, without shader-f16 and subgroups {} ms, unfused nodes {} ms",
                    ms[1], ms[4], ms[2]
                ),
            ]);
        }

        let secs = t0.elapsed().as_secs_f64();
        println!();
        println!("| check | GPU (WebGPU) | CPU | note |");
        println!("|---|---|---|---|");
        for r in &rows {
            println!("| {} | {} | {} | {} |", r[0], r[1], r[2], r[3]);
        }
        println!("\nGPU check took {secs:.0} s; status {status}");
        status
    }
}
