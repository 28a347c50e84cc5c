//! Greedy text generation with a decoder GGUF (llama, qwen2, qwen3), printing the tokens and
//! the prefill and decode speeds.
//!
//! ```text
//! cargo run --release --example generate -- models/decoder/llama-q8_0.gguf \
//!     --prompt "Once upon a time" -n 32 [--device cpu|webgpu|auto] [--context 256] [--ids 1,2,3]
//!     [--kv f32|f16] [--unfused] [--logits FILE]   (the prompt's last logits, little-endian f32, for comparisons)
//! EXPLAIN=1 prints the last decode step's plan; PROFILE=1 the decode steps' time per node kind.
//! ```

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::time::Instant;

    use pollster::block_on;
    use webtensor::model::decoder::{Decoder, DecoderOptions};
    use webtensor::runtime::DeviceChoice;

    pub fn main() {
        if let Err(e) = run() {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }

    fn run() -> Result<(), String> {
        let mut args = std::env::args().skip(1);
        let path = args
            .next()
            .ok_or("usage: generate MODEL.gguf [--prompt TEXT] [-n N]")?;
        let mut logits_out: Option<String> = None;
        let mut kv = None;
        let mut unfused = false;
        let (mut prompt, mut ids, mut n, mut device, mut context) = (
            "Once upon a time".to_string(),
            None,
            32usize,
            "cpu".to_string(),
            None,
        );
        while let Some(a) = args.next() {
            let mut val = || args.next().ok_or(format!("{a} needs a value"));
            match a.as_str() {
                "--prompt" => prompt = val()?,
                "--ids" => {
                    ids = Some(
                        val()?
                            .split(',')
                            .map(|s| s.trim().parse::<u32>().map_err(|e| e.to_string()))
                            .collect::<Result<Vec<_>, _>>()?,
                    )
                }
                "-n" => n = val()?.parse().map_err(|e| format!("-n: {e}"))?,
                "--device" => device = val()?,
                "--logits" => logits_out = Some(val()?),
                "--kv" => {
                    kv = Some(match val()?.as_str() {
                        "f32" => webtensor::graph::DType::F32,
                        "f16" => webtensor::graph::DType::F16,
                        other => return Err(format!("--kv f32|f16, not {other}")),
                    })
                }
                "--unfused" => unfused = true,
                "--context" => {
                    context = Some(val()?.parse().map_err(|e| format!("--context: {e}"))?)
                }
                other => return Err(format!("unknown argument {other}")),
            }
        }
        let choice: DeviceChoice = device.parse().map_err(|e| format!("{e}"))?;
        let rt = block_on(webtensor::create_runtime(
            choice,
            choice == DeviceChoice::Auto,
        ))
        .map_err(|e| e.to_string())?;
        let bytes = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
        let t0 = Instant::now();
        let opts = DecoderOptions {
            context,
            kv_dtype: kv,
            fused_attention: !unfused,
            ..DecoderOptions::default()
        };
        let mut dec = Decoder::load(&rt, &bytes, &opts).map_err(|e| e.to_string())?;
        block_on(dec.warm_up(&rt)).map_err(|e| e.to_string())?;
        let load_s = t0.elapsed().as_secs_f64();
        let ids = match ids {
            Some(ids) => ids,
            None => dec
                .tokenizer()
                .ok_or("the file has no tokenizer: give --ids")?
                .encode(&prompt, true, false),
        };
        let t1 = Instant::now();
        let logits = block_on(dec.prefill(&rt, &ids)).map_err(|e| e.to_string())?;
        let prefill_s = t1.elapsed().as_secs_f64();
        if let Some(path) = &logits_out {
            let bytes: Vec<u8> = logits.iter().flat_map(|x| x.to_le_bytes()).collect();
            std::fs::write(path, bytes).map_err(|e| format!("{path}: {e}"))?;
        }
        let mut next = webtensor::model::decoder::argmax(&logits);
        let mut out = vec![next];
        let profile = std::env::var("PROFILE").is_ok();
        if profile {
            rt.profile_start();
        }
        let t2 = Instant::now();
        while out.len() < n && dec.len() < dec.context() {
            let logits = block_on(dec.step(&rt, next)).map_err(|e| e.to_string())?;
            next = webtensor::model::decoder::argmax(&logits);
            out.push(next);
        }
        let decode_s = t2.elapsed().as_secs_f64();
        if profile {
            println!("decode steps' profile:\n{}", rt.profile_stop());
        }
        let text = dec
            .tokenizer()
            .map(|t| t.decode(&out, false))
            .unwrap_or_default();
        if std::env::var("EXPLAIN").is_ok() {
            println!("{}", dec.explain(&rt).map_err(|e| e.to_string())?);
        }
        println!("ids: {out:?}");
        println!("text: {text:?}");
        let steps = out.len().saturating_sub(1).max(1);
        println!(
            "devices {:?}; load {:.1} ms; prefill {} tokens {:.1} ms ({:.1} tokens/s); decode {} tokens {:.1} ms ({:.1} tokens/s)",
            rt.device_names(),
            load_s * 1e3,
            ids.len(),
            prefill_s * 1e3,
            ids.len() as f64 / prefill_s,
            steps,
            decode_s * 1e3,
            steps as f64 / decode_s
        );
        Ok(())
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    native::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
