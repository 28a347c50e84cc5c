//! Text generation on a decoder (`model::generate`): greedy tokens as llama.cpp's, seeded
//! sampling reproducible, pieces that join to the decoded text, stop tokens and stop strings
//! (across token boundaries), the context's end, a conversation's prefix reused, and a
//! generation dropped midway leaving the model consistent. On the tiny llama of
//! scripts/decoder-models.py (skipped when missing unless WEBTENSOR_REQUIRE_VECTORS=1).
#![cfg(not(target_arch = "wasm32"))]

use pollster::block_on;
use webtensor::model::decoder::{Decoder, DecoderOptions};
use webtensor::model::generate::{GenerateOptions, Generation, StopReason};
use webtensor::model::sampler::SamplerOptions;
use webtensor::runtime::{DeviceChoice, Runtime};

fn setup() -> Option<(Runtime, Decoder, serde_json::Value)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(bytes) = std::fs::read(root.join("models/decoder/llama-f32.gguf")) else {
        assert!(
            std::env::var("WEBTENSOR_REQUIRE_VECTORS").map_or(true, |v| v != "1"),
            "models/decoder/llama-f32.gguf missing: run scripts/decoder-models.py"
        );
        return None;
    };
    let reference: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("tests/reference/decoder/llama-f32.json")).unwrap(),
    )
    .unwrap();
    let rt = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    let opts = DecoderOptions {
        kv_dtype: Some(webtensor::graph::DType::F32),
        ..DecoderOptions::default()
    };
    let dec = Decoder::load(&rt, &bytes, &opts).unwrap();
    Some((rt, dec, reference))
}

fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// Pulls every piece; returns them and the generation.
fn run_all(
    rt: &Runtime,
    dec: &mut Decoder,
    prompt: Vec<u32>,
    opts: GenerateOptions,
) -> (Vec<String>, Generation) {
    let mut g = Generation::new(dec, prompt, opts).unwrap();
    let mut pieces = Vec::new();
    while let Some(p) = block_on(g.next(rt, dec)).unwrap() {
        assert!(!p.is_empty());
        pieces.push(p);
    }
    (pieces, g)
}

fn greedy(n: usize) -> GenerateOptions {
    GenerateOptions {
        max_tokens: n,
        sampler: SamplerOptions::greedy(),
        stop_tokens: Some(Vec::new()),
        ..GenerateOptions::default()
    }
}

#[test]
fn greedy_generation_is_llama_cpps_and_its_pieces_join_to_the_text() {
    let Some((rt, mut dec, reference)) = setup() else {
        return;
    };
    let case = &reference["cases"][0];
    let (prompt, want) = (ids(&case["prompt"]), ids(&case["greedy"]));
    let (pieces, g) = run_all(&rt, &mut dec, prompt.clone(), greedy(32));
    assert_eq!(g.tokens(), want.as_slice());
    assert_eq!(g.stop_reason(), Some(&StopReason::MaxTokens));
    let text = dec.tokenizer().unwrap().decode(&want, false);
    assert_eq!(pieces.concat(), text);
    let st = g.stats();
    assert_eq!(
        (st.prompt_tokens, st.generated_tokens, st.decode_steps),
        (prompt.len(), 32, 31)
    );
    assert!(st.prefill_ms > 0.0 && st.decode_ms > 0.0 && st.ttft_ms >= st.prefill_ms);
    // The cache holds the prompt and every generated token but the last.
    assert_eq!(dec.len(), prompt.len() + 31);

    // The next turn extends the conversation: only its new tokens run.
    let mut next = prompt.clone();
    next.extend_from_slice(&want);
    next.extend_from_slice(&[450, 937]);
    let (_, g2) = run_all(&rt, &mut dec, next.clone(), greedy(4));
    assert_eq!(g2.stats().reused_tokens, prompt.len() + 31);
    // The same as on a fresh cache.
    dec.reset();
    let (_, g3) = run_all(&rt, &mut dec, next, greedy(4));
    assert_eq!(g3.stats().reused_tokens, 0);
    assert_eq!(g2.tokens(), g3.tokens());
}

#[test]
fn seeded_sampling_repeats_and_stops_where_told() {
    let Some((rt, mut dec, reference)) = setup() else {
        return;
    };
    let prompt = ids(&reference["cases"][0]["prompt"]);
    let sampled = |dec: &mut Decoder, seed: u64| {
        let opts = GenerateOptions {
            max_tokens: 24,
            sampler: SamplerOptions {
                temperature: 1.0,
                seed,
                ..SamplerOptions::default()
            },
            stop_tokens: Some(Vec::new()),
            ..GenerateOptions::default()
        };
        run_all(&rt, dec, prompt.clone(), opts).1.tokens().to_vec()
    };
    let a = sampled(&mut dec, 7);
    assert_eq!(a, sampled(&mut dec, 7));
    assert_ne!(a, sampled(&mut dec, 8));

    // A stop token ends it (not given out); a stop string too, matched across pieces.
    let (pieces, full) = run_all(&rt, &mut dec, prompt.clone(), greedy(32));
    let stop_at = full.tokens()[5];
    let (_, g) = run_all(
        &rt,
        &mut dec,
        prompt.clone(),
        GenerateOptions {
            stop_tokens: Some(vec![stop_at]),
            ..greedy(32)
        },
    );
    let first = full.tokens().iter().position(|&t| t == stop_at).unwrap();
    assert_eq!(g.tokens().len(), first + 1);
    assert_eq!(g.stop_reason(), Some(&StopReason::StopToken(stop_at)));
    let text = pieces.concat();
    // A stop string spanning two pieces: the end of piece 3 and the start of piece 4.
    let (p3, p4) = (&pieces[3], &pieces[4]);
    let cut3 = p3.char_indices().last().unwrap().0;
    let stop = format!("{}{}", &p3[cut3..], p4.chars().next().unwrap());
    let before = &text[..text.find(&stop).unwrap()];
    let (got, g) = run_all(
        &rt,
        &mut dec,
        prompt.clone(),
        GenerateOptions {
            stop_strings: vec![stop.clone()],
            ..greedy(32)
        },
    );
    assert_eq!(got.concat(), before);
    assert_eq!(g.stop_reason(), Some(&StopReason::StopString(stop)));
}

#[test]
fn a_dropped_generation_leaves_the_model_usable_and_the_context_end_stops() {
    let Some((rt, mut dec, reference)) = setup() else {
        return;
    };
    let prompt = ids(&reference["cases"][0]["prompt"]);
    let (_, whole) = run_all(&rt, &mut dec, prompt.clone(), greedy(12));
    // Three pieces, then the caller stops pulling (an abort).
    let mut g = Generation::new(&dec, prompt.clone(), greedy(12)).unwrap();
    for _ in 0..3 {
        block_on(g.next(&rt, &mut dec)).unwrap().unwrap();
    }
    drop(g);
    let (_, again) = run_all(&rt, &mut dec, prompt.clone(), greedy(12));
    assert_eq!(again.tokens(), whole.tokens());
    // Aborted after two pieces: no more pieces, the reason says so, the model stays usable.
    let mut g = Generation::new(&dec, prompt.clone(), greedy(12)).unwrap();
    for _ in 0..2 {
        block_on(g.next(&rt, &mut dec)).unwrap().unwrap();
    }
    g.abort();
    assert_eq!(block_on(g.next(&rt, &mut dec)).unwrap(), None);
    assert_eq!(g.stop_reason(), Some(&StopReason::Aborted));
    assert_eq!(StopReason::Aborted.name(), "aborted");
    assert_eq!(g.tokens(), &whole.tokens()[..2]);
    let (_, again) = run_all(&rt, &mut dec, prompt.clone(), greedy(12));
    assert_eq!(again.tokens(), whole.tokens());
    // A prompt near the context's end: generation stops there.
    let ctx = dec.context();
    let long: Vec<u32> = (0..ctx - 3).map(|i| 1000 + i as u32).collect();
    let (_, g) = run_all(&rt, &mut dec, long, greedy(50));
    assert_eq!(g.stop_reason(), Some(&StopReason::ContextFull));
    assert_eq!(dec.len(), ctx);
    // Bad prompts are errors before anything runs.
    assert!(Generation::new(&dec, vec![], greedy(1)).is_err());
    assert!(Generation::new(&dec, vec![40000], greedy(1)).is_err());
    assert!(Generation::new(&dec, vec![1; ctx + 1], greedy(1)).is_err());
    let bad = GenerateOptions {
        sampler: SamplerOptions {
            temperature: -1.0,
            ..SamplerOptions::default()
        },
        ..greedy(1)
    };
    assert!(Generation::new(&dec, vec![1], bad).is_err());
    // Out-of-range options too: no tokens, more than the context, 10,000 stop strings.
    let cached = dec.len();
    for (opts, want) in [
        (
            greedy(0),
            "max_tokens must be 1 to the context's 256, got 0",
        ),
        (greedy(1_000_000_000), "got 1000000000"),
        (
            GenerateOptions {
                stop_strings: vec!["x".into(); 10_000],
                ..greedy(1)
            },
            "10000 stop strings: at most 64",
        ),
    ] {
        let err = Generation::new(&dec, vec![1], opts)
            .err()
            .map(|e| e.to_string());
        assert!(err.as_deref().is_some_and(|e| e.contains(want)), "{err:?}");
    }
    assert_eq!(dec.len(), cached, "nothing ran");
}

/// `chat`: the file's template (qwen2's ChatML, copied from its vocab file by
/// scripts/decoder-models.py) rendered as jinja2 renders it, its control tokens matched;
/// a file without a template says so.
#[test]
fn chat_prompts_come_from_the_files_template() {
    use webtensor::model::chat::ChatMessage;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(bytes) = std::fs::read(root.join("models/decoder/qwen2-f32.gguf")) else {
        assert!(std::env::var("WEBTENSOR_REQUIRE_VECTORS").map_or(true, |v| v != "1"));
        return;
    };
    let rt = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    let dec = Decoder::load(&rt, &bytes, &DecoderOptions::default()).unwrap();
    let messages = [ChatMessage::new("user", "Hello!")];
    let ids = dec.chat_prompt(&messages).unwrap();
    let tok = dec.tokenizer().unwrap();
    let want = "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n";
    assert_eq!(ids, tok.encode(want, false, true));
    assert_eq!(tok.decode(&ids, true), want);
    let im_start = tok.encode("<|im_start|>", false, true);
    assert_eq!(im_start.len(), 1, "a control token, matched whole");
    assert_eq!(ids.iter().filter(|&&t| t == im_start[0]).count(), 3);
    // An empty conversation is refused (the template alone would add its default system
    // prompt and answer nobody).
    let e = dec.chat_prompt(&[]).unwrap_err();
    assert_eq!(e.code(), webtensor::ErrorCode::InvalidArgument, "{e}");
    let Some((_, llama, _)) = setup() else { return };
    let e = llama.chat_prompt(&messages).unwrap_err().to_string();
    assert!(e.contains("no chat template"), "{e}");
}
