//! MiniLM latency natively on each device choice, same run: `'cpu'` on 1 and on 2 threads,
//! `'webgpu'` (every op the GPU runs placed there, no cost model) and `'auto'` (cost model on,
//! as users get it), at the benchmark's four cases (8, 32 and 128 tokens; 16 sentences × 32
//! tokens), with the CPU's 2-thread scaling and the bytes that crossed between devices per
//! run in steady state. A benchmark: it prints numbers.
//!
//! ```text
//! cargo bench --bench minilm_devices                 # release build
//! cargo bench --profile dev --bench minilm_devices   # quicker build (the crate is -O2 in dev)
//! MINILM_MODEL=models/minilm-f32.gguf BENCH_REPS=9 BENCH_ROUNDS=2 cargo bench ...
//! BENCH_CHOICES=cpu cargo bench ...                  # only the choices whose name has "cpu"
//!                                                    # (a whole name: that choice alone)
//! BENCH_CHOICES=webgpu cargo bench ...               # WebGPU alone; "gpu": every WebGPU
//!                                                    # choice: "webgpu-base" (the matmul
//!                                                    # kernels before the small-batch one),
//!                                                    # "webgpu-unfused" (no fused
//!                                                    # epilogues), "webgpu-att-rows"
//!                                                    # (attention a workgroup per query
//!                                                    # row), "webgpu-att-off" (no fused
//!                                                    # attention)
//! ```
//!
//! Natively WebGPU is whatever adapter wgpu finds (Mesa's lavapipe here: a software GPU, so
//! only the ratios mean anything).

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use std::rc::Rc;

    use pollster::block_on;
    use webtensor::backend::Registry;
    use webtensor::backends::cpu::{CpuReg, KernelSet};
    use webtensor::backends::webgpu::{MatmulKernels, WebGpuOptions};
    use webtensor::backends::DeviceOptions;
    use webtensor::bench::{minilm_embed_ms, minilm_texts, MINILM_CASES};
    use webtensor::model::bert::SentenceEmbedder;
    use webtensor::runtime::{DeviceChoice, Runtime};

    let path = std::env::var("MINILM_MODEL").unwrap_or_else(|_| "models/minilm-q8_0.gguf".into());
    let Ok(bytes) = std::fs::read(&path) else {
        println!("skipped: no {path} (run scripts/fetch-model.sh)");
        return Ok(());
    };
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (reps, rounds) = (env("BENCH_REPS", 5), env("BENCH_ROUNDS", 2));
    let cases = MINILM_CASES;
    // (name, CPU threads of a CPU-only runtime, or the device choice and cost model).
    type Make = Result<usize, (DeviceChoice, bool)>;
    let only = std::env::var("BENCH_CHOICES").unwrap_or_default();
    // (name, run by default, how to make it); the others are run when named.
    let all: Vec<(&str, bool, Make)> = vec![
        ("cpu 1 thread", true, Ok(1)),
        ("cpu 2 threads", true, Ok(2)),
        ("webgpu", true, Err((DeviceChoice::WebGpu, false))),
        ("auto", true, Err((DeviceChoice::Auto, true))),
        // WebGPU with the matmul kernel selection before the small-batch kernel.
        ("webgpu-base", false, Err((DeviceChoice::WebGpu, false))),
        // WebGPU without fusing node chains into one dispatch.
        ("webgpu-unfused", false, Err((DeviceChoice::WebGpu, false))),
        // WebGPU's fused attention with a workgroup per query row (no query tiles).
        ("webgpu-att-rows", false, Err((DeviceChoice::WebGpu, false))),
        // WebGPU without the fused attention (the unfused matmuls and softmax).
        ("webgpu-att-off", false, Err((DeviceChoice::WebGpu, false))),
    ];
    let all_names: Vec<&str> = all.iter().map(|(name, _, _)| *name).collect();
    let choices: Vec<(&str, Make)> = all
        .into_iter()
        .filter(|(name, default, _)| match only.as_str() {
            "" => *default,
            // A word that is a choice's whole name picks that one alone ("webgpu" then is
            // not also "webgpu-base"); any other word, every choice whose name has it.
            only => only.split(',').map(str::trim).any(|w| {
                if all_names.contains(&w) {
                    *name == w
                } else {
                    name.contains(w)
                }
            }),
        })
        .map(|(name, _, make)| (name, make))
        .collect();
    let runtime = |name: &str, make: &Make| -> webtensor::Result<Runtime> {
        match *make {
            Ok(threads) => {
                let mut reg = Registry::new();
                reg.register(Rc::new(CpuReg::with_threads(
                    KernelSet::Fast,
                    Some(threads),
                )?));
                block_on(Runtime::new(&reg, DeviceChoice::Cpu, false))
            }
            Err((choice, cost)) => {
                let webgpu = WebGpuOptions {
                    fusion: name != "webgpu-unfused",
                    query_tiles: name != "webgpu-att-rows",
                    attention: name != "webgpu-att-off",
                    matmul_kernels: if name == "webgpu-base" {
                        MatmulKernels::Base
                    } else {
                        MatmulKernels::Auto
                    },
                    ..WebGpuOptions::default()
                };
                block_on(webtensor::create_runtime_with(
                    choice,
                    cost,
                    DeviceOptions { webgpu },
                ))
            }
        }
    };
    // Per choice and case: every round's median.
    let mut ms = vec![vec![Vec::new(); cases.len()]; choices.len()];
    let mut notes = vec![String::new(); choices.len()];
    for round in 0..rounds {
        // Odd rounds run the choices in reverse: what ran just before (a GPU still settling,
        // caches) does not always favour the same one.
        for i in 0..choices.len() {
            let c = if round % 2 == 0 {
                i
            } else {
                choices.len() - 1 - i
            };
            let (name, ref make) = choices[c];
            let rt = match runtime(name, make) {
                Ok(rt) => rt,
                Err(e) => {
                    notes[c] = format!("{name}: {e}");
                    continue;
                }
            };
            let e = SentenceEmbedder::load(&rt, &bytes)?;
            for (k, &(_, n, tokens)) in cases.iter().enumerate() {
                let t = minilm_texts(&e, n, tokens);
                // A first call warms up (one-time weight copies happen there): the copy
                // counts below cover steady-state runs only.
                block_on(minilm_embed_ms(&e, &rt, &t, 1))?;
                let before = rt.copy_stats();
                ms[c][k].push(block_on(minilm_embed_ms(&e, &rt, &t, reps))?);
                let after = rt.copy_stats();
                if k == cases.len() - 1 {
                    // The helper's two warm-up embeds count too.
                    let runs = reps as u64 + 2;
                    let per_run = (after.per_run_bytes - before.per_run_bytes) / runs;
                    let weights = (after.per_run_weight_bytes - before.per_run_weight_bytes) / runs;
                    let plan = e.explain(&rt)?;
                    notes[c] = format!(
                        "{name} on {:?}: per run {per_run} B crossed ({weights} B of weights), {} B \
                         of weights copied once\n  {}",
                        rt.device_names(),
                        after.one_time_bytes,
                        plan.lines().nth(1).unwrap_or_default()
                    );
                }
            }
        }
    }
    let median = |v: &[f64]| -> Option<f64> {
        (!v.is_empty()).then(|| webtensor::bench::median(&mut v.to_vec()))
    };
    println!("MiniLM {path}, native, median of {reps} runs, median over {rounds} rounds (ms)");
    println!(
        "device | {}",
        cases.iter().map(|c| c.0).collect::<Vec<_>>().join(" | ")
    );
    let table: Vec<Vec<Option<f64>>> = ms
        .iter()
        .map(|per| per.iter().map(|v| median(v)).collect())
        .collect();
    for (c, &(name, _)) in choices.iter().enumerate() {
        let row: Vec<String> = table[c]
            .iter()
            .map(|v| v.map_or("-".into(), |x| format!("{x:.1}")))
            .collect();
        println!("{name} | {}", row.join(" | "));
    }
    let row = |name: &str| choices.iter().position(|c| c.0 == name).map(|i| &table[i]);
    if let (Some(one), Some(two)) = (row("cpu 1 thread"), row("cpu 2 threads")) {
        let scaling: Vec<String> = one
            .iter()
            .zip(two)
            .map(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => format!("{:.2}x", a / b),
                _ => "-".into(),
            })
            .collect();
        println!("cpu 2 threads speedup over 1 | {}", scaling.join(" | "));
    }
    if let Some(auto) = row("auto") {
        let ratio: Vec<String> = (0..cases.len())
            .map(|k| {
                let best = table
                    .iter()
                    .zip(&choices)
                    .filter(|(_, c)| c.0 != "auto")
                    .filter_map(|(t, _)| t[k])
                    .fold(f64::INFINITY, f64::min);
                auto[k].map_or("-".into(), |a| format!("{:.3}", a / best))
            })
            .collect();
        println!("auto ÷ best of the others | {}", ratio.join(" | "));
    }
    for n in notes.iter().filter(|n| !n.is_empty()) {
        println!("{n}");
    }
    Ok(())
}

#[cfg(target_arch = "wasm32")]
fn main() {}
