//! Embeds sentences with a BERT GGUF (from `scripts/fetch-model.sh`) and prints their
//! pairwise cosine similarities and the time per batch.
//!
//! ```text
//! cargo run --release --example embed_minilm -- models/minilm-q8_0.gguf cpu "a cat" "a dog"
//! ```
//!
//! The device is `cpu`, `webgpu` or `auto`; with no sentences a few built-in ones are used.
//! REPS=N times N runs after the first (median); UNFUSED=1 builds attention unfused.

// Native only: it reads a file and blocks on the runtime.
#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::time::Instant;

    use pollster::block_on;
    use webtensor::model::bert::SentenceEmbedder;
    use webtensor::runtime::DeviceChoice;

    pub fn main() -> Result<(), Box<dyn std::error::Error>> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let path = args
            .first()
            .ok_or("usage: embed_minilm MODEL.gguf [cpu|webgpu|auto] [SENTENCE...]")?;
        let device: DeviceChoice = args.get(1).map_or("auto", String::as_str).parse()?;
        let mut texts: Vec<&str> = args.iter().skip(2).map(String::as_str).collect();
        if texts.is_empty() {
            texts = vec![
                "A man is eating food.",
                "A man is eating a piece of bread.",
                "The girl is carrying a baby.",
                "A man is riding a horse.",
            ];
        }
        let rt = block_on(webtensor::create_runtime(device, false))?;
        let mut embedder = SentenceEmbedder::load(&rt, &std::fs::read(path)?)?;
        if std::env::var("UNFUSED").is_ok() {
            embedder.set_fused_attention(false);
        }
        println!("devices: {:?} {:?}", rt.device_names(), rt.notes());
        let t0 = Instant::now();
        let embs = block_on(embedder.embed(&rt, &texts))?;
        let first = t0.elapsed();
        let reps: usize = std::env::var("REPS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(1);
        let mut times = Vec::new();
        for _ in 0..reps.max(1) {
            let t1 = Instant::now();
            block_on(embedder.embed(&rt, &texts))?;
            times.push(t1.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{} texts: first run {:.1} ms (plans the graph), then {:.1} ms (median of {})",
            texts.len(),
            first.as_secs_f64() * 1e3,
            times[times.len() / 2],
            times.len()
        );
        for (i, a) in embs.iter().enumerate() {
            let sims: Vec<String> = embs
                .iter()
                .map(|b| format!("{:.3}", a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>()))
                .collect();
            println!("{:>40.40}  {}", texts[i], sims.join(" "));
        }
        Ok(())
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    native::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
