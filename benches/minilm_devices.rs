//! MiniLM latency natively on each device choice, same run: `'cpu'`, `'webgpu'` (every op the
//! GPU runs placed there, no cost model) and `'auto'` (cost model on, as users get it), at the
//! benchmark's four cases (8, 32 and 128 tokens; 16 sentences × 32 tokens), with the bytes
//! that crossed between devices per run in steady state. A benchmark: it prints numbers.
//!
//! ```text
//! cargo bench --bench minilm_devices                 # release build
//! cargo bench --profile dev --bench minilm_devices   # quicker build (the crate is -O2 in dev)
//! MINILM_MODEL=models/minilm-f32.gguf BENCH_REPS=9 BENCH_ROUNDS=2 cargo bench ...
//! MINILM_CHOICES=webgpu,webgpu-base cargo bench ...  # WebGPU with the matmul kernels before
//!                                                    # the small-batch kernel, same run
//! ```
//!
//! Natively WebGPU is whatever adapter wgpu finds (Mesa's lavapipe here: a software GPU, so
//! only the ratios mean anything).

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use std::time::Instant;

    use pollster::block_on;
    use webtensor::backends::webgpu::{set_matmul_kernels, MatmulKernels};
    use webtensor::model::bert::SentenceEmbedder;
    use webtensor::runtime::DeviceChoice;

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
    let cases: [(&str, usize, usize); 4] = [
        ("8 tok", 1, 8),
        ("32 tok", 1, 32),
        ("128 tok", 1, 128),
        ("16 × 32", 16, 32),
    ];
    // Texts of exactly `tokens` tokens ([CLS] and [SEP] included), as bench/minilm.html makes.
    const WORDS: [&str; 16] = [
        "the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "seven",
        "happy", "wizards", "quietly", "brew", "potions",
    ];
    let texts = |e: &SentenceEmbedder, n: usize, tokens: usize| -> Vec<String> {
        let mut words: Vec<&str> = Vec::new();
        let count = |w: &[&str]| e.encode(&[&w.join(" ")]).map_or(0, |v| v[0].len());
        while count(&words) < tokens {
            words.push(WORDS[words.len() % WORDS.len()]);
        }
        while count(&words) > tokens {
            words.pop();
        }
        vec![words.join(" "); n]
    };
    // "webgpu-base": WebGPU with the matmul kernel selection before the small-batch kernel.
    let all_choices = [
        ("cpu", DeviceChoice::Cpu, false),
        ("webgpu", DeviceChoice::WebGpu, false),
        ("auto", DeviceChoice::Auto, true),
        ("webgpu-base", DeviceChoice::WebGpu, false),
    ];
    let wanted = std::env::var("MINILM_CHOICES").unwrap_or_else(|_| "cpu,webgpu,auto".into());
    let choices: Vec<_> = all_choices
        .into_iter()
        .filter(|c| wanted.split(',').any(|w| w.trim() == c.0))
        .collect();
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
            let (name, choice, cost) = choices[c];
            set_matmul_kernels(if name == "webgpu-base" {
                MatmulKernels::Base
            } else {
                MatmulKernels::Auto
            });
            let rt = match block_on(webtensor::create_runtime(choice, cost)) {
                Ok(rt) => rt,
                Err(e) => {
                    notes[c] = format!("{name}: {e}");
                    continue;
                }
            };
            let e = SentenceEmbedder::load(&rt, &bytes)?;
            for (k, &(_, n, tokens)) in cases.iter().enumerate() {
                let t = texts(&e, n, tokens);
                let refs: Vec<&str> = t.iter().map(String::as_str).collect();
                for _ in 0..2 {
                    block_on(e.embed(&rt, &refs))?;
                }
                let before = rt.copy_stats();
                let mut v = Vec::with_capacity(reps);
                for _ in 0..reps {
                    let t0 = Instant::now();
                    block_on(e.embed(&rt, &refs))?;
                    v.push(t0.elapsed().as_secs_f64() * 1e3);
                }
                let after = rt.copy_stats();
                v.sort_by(f64::total_cmp);
                ms[c][k].push(v[v.len() / 2]);
                if k == cases.len() - 1 {
                    let per_run = (after.per_run_bytes - before.per_run_bytes) / reps as u64;
                    let weights =
                        (after.per_run_weight_bytes - before.per_run_weight_bytes) / reps as u64;
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
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
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
    for (c, &(name, _, _)) in choices.iter().enumerate() {
        let row: Vec<String> = table[c]
            .iter()
            .map(|v| v.map_or("-".into(), |x| format!("{x:.1}")))
            .collect();
        println!("{name} | {}", row.join(" | "));
    }
    let row = |name: &str| choices.iter().position(|c| c.0 == name).map(|i| &table[i]);
    if let (Some(cpu), Some(gpu), Some(auto)) = (row("cpu"), row("webgpu"), row("auto")) {
        let ratio: Vec<String> = (0..cases.len())
            .map(|k| {
                let best = [cpu[k], gpu[k]]
                    .into_iter()
                    .flatten()
                    .fold(f64::INFINITY, f64::min);
                auto[k].map_or("-".into(), |a| format!("{:.3}", a / best))
            })
            .collect();
        println!("auto ÷ best of cpu, webgpu | {}", ratio.join(" | "));
    }
    for n in notes.iter().filter(|n| !n.is_empty()) {
        println!("{n}");
    }
    Ok(())
}

#[cfg(target_arch = "wasm32")]
fn main() {}
