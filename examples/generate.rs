//! Greedy text generation with a decoder GGUF (llama, qwen2, qwen3), printing the tokens and
//! the prefill and decode speeds.
//!
//! ```text
//! cargo run --release --example generate -- models/decoder/llama-q8_0.gguf \
//!     --prompt "Once upon a time" -n 32 [--device cpu|webgpu|auto] [--context 256] [--ids 1,2,3]
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
            ..DecoderOptions::default()
        };
        let mut dec = Decoder::load(&rt, &bytes, &opts).map_err(|e| e.to_string())?;
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
        let mut next = webtensor::model::decoder::argmax(&logits);
        let mut out = vec![next];
        let t2 = Instant::now();
        while out.len() < n && dec.len() < dec.context() {
            let logits = block_on(dec.step(&rt, next)).map_err(|e| e.to_string())?;
            next = webtensor::model::decoder::argmax(&logits);
            out.push(next);
        }
        let decode_s = t2.elapsed().as_secs_f64();
        let text = dec
            .tokenizer()
            .map(|t| t.decode(&out, false))
            .unwrap_or_default();
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
