//! Decoders against llama.cpp itself: tiny random-weight llama, qwen2 and qwen3 models with
//! real vocabularies (`scripts/decoder-models.py` writes them to models/decoder/; its
//! `--reference` mode ran them through llama-cpp-python into tests/reference/decoder/*.json).
//! Each case's prompt is prefilled (in 64-token chunks: "long" and "fill" take several), the
//! last position's logits compared by cosine, then 32 greedy tokens compared one by one
//! ("fill" runs to the last row of the 256-token context), on the CPU and on WebGPU
//! (lavapipe; skipped without an adapter unless `WEBTENSOR_REQUIRE_WEBGPU=1`). Missing model
//! files skip, unless `WEBTENSOR_REQUIRE_VECTORS=1` (the README's test command sets it).
#![cfg(not(target_arch = "wasm32"))]

use std::path::{Path, PathBuf};

use pollster::block_on;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use webtensor::graph::DType;
use webtensor::model::decoder::{argmax, Decoder, DecoderOptions};
use webtensor::runtime::{DeviceChoice, Runtime};
use webtensor::testing::webgpu_required;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn vectors_required() -> bool {
    std::env::var("WEBTENSOR_REQUIRE_VECTORS").is_ok_and(|v| v == "1")
}

/// Standard base64 (with padding) to bytes.
fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let s = s.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    for chunk in s.chunks(4) {
        let n = chunk.iter().fold(0u32, |a, &c| (a << 6) | val(c)) << (6 * (4 - chunk.len()));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len() - 1]);
    }
    out
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        ab += x as f64 * y as f64;
        aa += x as f64 * x as f64;
        bb += y as f64 * y as f64;
    }
    ab / (aa.sqrt() * bb.sqrt())
}

/// One reference file: the model's bytes (checked to be the file llama.cpp ran) and cases.
struct Reference {
    name: String,
    bytes: Vec<u8>,
    cases: Vec<Json>,
}

fn references() -> Vec<Reference> {
    let dir = root().join("tests/reference/decoder");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{} reference files", files.len());
    let mut out = Vec::new();
    for f in files {
        let j: Json = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let name = j["model"].as_str().unwrap().to_string();
        let path = root().join("models/decoder").join(format!("{name}.gguf"));
        let Ok(bytes) = std::fs::read(&path) else {
            assert!(
                !vectors_required(),
                "{} missing: run python3 scripts/decoder-models.py",
                path.display()
            );
            eprintln!("skipping {name}: {} missing", path.display());
            continue;
        };
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            digest,
            j["gguf_sha256"].as_str().unwrap(),
            "{}: not the file llama.cpp ran (regenerate with scripts/decoder-models.py \
             --reference)",
            path.display()
        );
        out.push(Reference {
            name,
            bytes,
            cases: j["cases"].as_array().unwrap().clone(),
        });
    }
    out
}

/// Least cosine to llama.cpp's logits, and the top-2 margin (in logits; they spread with a
/// standard deviation of about 8 here) from which a greedy token must be llama.cpp's, per
/// weight type. f32 and f16 are exact (cosine 1.0000000, every token). Quantized weights
/// multiply activations quantized on the fly, in llama.cpp to Q8_0 blocks, here to the int8
/// kernels' own encoding (7-bit for Q8_0 weights, whose relaxed-SIMD dot needs one 7-bit
/// operand; WebGPU keeps them f32): measured on the CPU 0.99935 (Q8_0) and 0.99992 (Q4_0),
/// on WebGPU 0.99944 and 0.99977, where llama.cpp's own Q8_0 model is at 0.9986 to its f32
/// model; tokens differed only where llama.cpp's margin was below 0.92 (26 to 31 of 32 agree).
fn bounds(model: &str) -> (f64, f64) {
    if model.ends_with("q4_0") {
        (0.9995, 1.0)
    } else if model.ends_with("q8_0") {
        (0.999, 1.0)
    } else {
        (0.99999, 0.0)
    }
}

fn ids(j: &Json) -> Vec<u32> {
    j.as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect()
}

/// Runs every case of `r` on `rt` with a KV cache of `kv`; returns a description of each
/// mismatch (empty when all agree).
fn check(rt: &Runtime, r: &Reference, kv: DType, device: &str) -> Vec<String> {
    let opts = DecoderOptions {
        kv_dtype: Some(kv),
        ..DecoderOptions::default()
    };
    let mut dec = Decoder::load(rt, &r.bytes, &opts).unwrap();
    // As TextGenerator.load does: one step on an empty cache, forgotten; the references
    // below then show that it left nothing behind.
    block_on(dec.warm_up(rt)).unwrap();
    assert!(dec.is_empty(), "warm_up leaves the cache empty");
    let mut bad = Vec::new();
    for case in &r.cases {
        let cname = case["name"].as_str().unwrap();
        let at = format!("{} {cname} on {device} (kv {})", r.name, kv.name());
        dec.reset();
        let prompt = ids(&case["prompt"]);
        let want = ids(&case["greedy"]);
        let margins: Vec<f64> = case["margins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_f64().unwrap())
            .collect();
        let mut logits = block_on(dec.prefill(rt, &prompt)).unwrap();
        if let Some(b64) = case.get("logits").and_then(|l| l.as_str()) {
            let reference: Vec<f32> = bytemuck::pod_collect_to_vec(&base64(b64));
            let cos = cosine(&logits, &reference);
            let bound = bounds(&r.name).0 - if kv == DType::F16 { 9e-5 } else { 0.0 };
            println!("{at}: cosine {cos:.7}");
            if cos < bound {
                bad.push(format!("{at}: logits cosine {cos:.7} < {bound}"));
            }
        }
        // Greedy, fed llama.cpp's own tokens so one near-tie cannot hide the rest.
        // An f16 cache moves the logits by ~1e-3: near-ties may go either way.
        let tie = bounds(&r.name)
            .1
            .max(if kv == DType::F16 { 0.05 } else { 0.0 });
        let mut agree = 0;
        for (i, &w) in want.iter().enumerate() {
            let got = argmax(&logits);
            agree += usize::from(got == w);
            if got != w && margins[i] >= tie {
                bad.push(format!(
                    "{at}: greedy token {i} is {got}, llama.cpp's {w} (its top-2 margin {})",
                    margins[i]
                ));
            }
            if i + 1 < want.len() {
                logits = block_on(dec.step(rt, w)).unwrap();
            }
        }
        println!("{at}: {agree} of {} greedy tokens agree", want.len());
        assert_eq!(dec.len(), prompt.len() + want.len() - 1);
    }
    bad
}

#[test]
fn decoders_match_llama_cpp_on_the_cpu() {
    let rt = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    let mut bad = Vec::new();
    for r in references() {
        bad.extend(check(&rt, &r, DType::F32, "CPU"));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The default cache on the CPU is f16: half the memory, logits a little further from
/// llama.cpp's f32 cache, the same greedy tokens.
#[test]
fn an_f16_cache_keeps_the_tokens() {
    let rt = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    let mut bad = Vec::new();
    for r in references().iter().filter(|r| r.name.ends_with("f32")) {
        bad.extend(check(&rt, r, DType::F16, "CPU"));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The WebGPU runtimes a decoder test runs on: the fused attention (in the variant the
/// adapter's features pick: lavapipe's shader-f16 and subgroups) and, with it turned off, the
/// unfused nodes. Empty, with the reason printed, where there is no WebGPU and none is
/// required.
fn webgpu_runtimes() -> Vec<(Runtime, &'static str)> {
    use webtensor::backends::{webgpu::WebGpuOptions, DeviceOptions};
    let mut out = Vec::new();
    for (attention, what) in [(true, "WebGPU"), (false, "WebGPU, attention unfused")] {
        let opts = DeviceOptions {
            webgpu: WebGpuOptions {
                attention,
                ..WebGpuOptions::default()
            },
        };
        match block_on(webtensor::create_runtime_with(
            DeviceChoice::WebGpu,
            false,
            opts,
        )) {
            Ok(rt) => out.push((rt, what)),
            Err(e) => {
                assert!(!webgpu_required(), "WebGPU required but: {e}");
                eprintln!("skipping: {e}");
                return Vec::new();
            }
        }
    }
    out
}

/// The same f16 cache on WebGPU: its rows written a word (two halves) at a time in place
/// (`set_rows_scatter_f16.wgsl`, no shader-f16 needed), read by the attention's f16 path
/// (fused) or the f16 matmuls (unfused).
#[test]
fn an_f16_cache_keeps_the_tokens_on_webgpu() {
    let mut bad = Vec::new();
    for (rt, what) in webgpu_runtimes() {
        for r in references().iter().filter(|r| r.name.ends_with("f32")) {
            bad.extend(check(&rt, r, DType::F16, what));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn decoders_match_llama_cpp_on_webgpu() {
    let mut bad = Vec::new();
    for (rt, what) in webgpu_runtimes() {
        for r in references() {
            bad.extend(check(&rt, &r, DType::F32, what));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

fn model(name: &str) -> Option<Vec<u8>> {
    let path: &Path = &root().join("models/decoder").join(format!("{name}.gguf"));
    match std::fs::read(path) {
        Ok(b) => Some(b),
        Err(_) => {
            assert!(!vectors_required(), "{} missing", path.display());
            None
        }
    }
}

/// A decode step runs its prepared plan: no plan is made and, on WebGPU, no GPU object is
/// created per step (the MiniLM steady state); states are listed by explain, on the device
/// running the attention, and nothing of the cache is copied per step.
#[test]
fn decode_steps_plan_nothing_and_create_no_gpu_objects() {
    let Some(bytes) = model("llama-q8_0") else {
        return;
    };
    let reg = block_on(webtensor::backends::webgpu::WebGpuReg::new());
    let Some(gpu) = reg.device() else {
        assert!(!webgpu_required(), "WebGPU required");
        return;
    };
    let cpu = std::rc::Rc::new(webtensor::backends::cpu::CpuDevice::new(
        webtensor::backends::cpu::KernelSet::Fast,
    ));
    let rt = block_on(Runtime::with_devices(vec![gpu.clone(), cpu], false, vec![])).unwrap();
    let mut dec = Decoder::load(&rt, &bytes, &DecoderOptions::default()).unwrap();
    let mut logits = block_on(dec.prefill(&rt, &[1, 9038, 2501, 263, 931])).unwrap();
    // The first step plans the decode shape and fills the readback pool.
    for _ in 0..2 {
        logits = block_on(dec.step(&rt, argmax(&logits))).unwrap();
    }
    let (plans, objects, copies) = (rt.plans_made(), gpu.created_objects(), rt.copy_stats());
    for _ in 0..8 {
        logits = block_on(dec.step(&rt, argmax(&logits))).unwrap();
    }
    assert_eq!(rt.plans_made(), plans, "a decode step planned again");
    let after = gpu.created_objects();
    assert_eq!(
        (after.pipelines, after.bind_groups, after.buffers),
        (objects.pipelines, objects.bind_groups, objects.buffers),
        "a decode step created GPU objects"
    );
    // Per step only the inputs (tokens, positions, mask) and logits cross, never the cache.
    let per_step = (rt.copy_stats().per_run_bytes - copies.per_run_bytes) / 8;
    let cache_bytes: usize = dec
        .cache()
        .iter()
        .map(|(k, v)| k.nbytes() + v.nbytes())
        .sum();
    assert!(
        (per_step as usize) < cache_bytes / 4,
        "{per_step} bytes a step"
    );
    let plan = dec.explain(&rt).unwrap();
    assert!(plan.starts_with("1 token(s) over 256 cache rows"), "{plan}");
    assert_eq!(plan.matches("state: cache_").count(), 4, "{plan}");
    assert!(
        plan.contains("state: cache_k.0 f32 [16, 257, 2] on WebGPU"),
        "{plan}"
    );
}

/// What a user can get wrong is an Error naming it, before anything runs, and a refused
/// call leaves the model usable.
#[test]
fn bad_models_and_bad_calls_are_errors() {
    use webtensor::model::gguf::{Gguf, GgufWriter, Value};
    let Some(bytes) = model("llama-f32") else {
        return;
    };
    let rt = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    // A copy of the file with one change.
    let edit = |f: &dyn Fn(&str, &Value) -> Option<Value>,
                drop_tensor: Option<&str>,
                shape: Option<(&str, Vec<usize>)>| {
        let g = Gguf::parse(&bytes).unwrap();
        let mut w = GgufWriter::new();
        for (k, v) in g.metadata() {
            if let Some(v) = f(k, v) {
                w.set(k, v).unwrap();
            }
        }
        for t in g.tensors() {
            if Some(t.name.as_str()) == drop_tensor {
                continue;
            }
            let data = g.tensor_data(t).unwrap().to_vec();
            match &shape {
                Some((name, ne)) if name == &t.name => {
                    w.add_tensor(&t.name, t.dtype, ne, data).unwrap()
                }
                _ => w.add_tensor(&t.name, t.dtype, &t.ne, data).unwrap(),
            }
        }
        w.to_bytes()
    };
    let load = |b: &[u8]| {
        Decoder::load(&rt, b, &DecoderOptions::default())
            .unwrap_err()
            .to_string()
    };
    let keep = |_: &str, v: &Value| Some(v.clone());
    let e = load(&edit(
        &|k, v| {
            Some(if k == "general.architecture" {
                Value::String("gpt5".into())
            } else {
                v.clone()
            })
        },
        None,
        None,
    ));
    assert!(e.contains("architecture \"gpt5\" is not supported"), "{e}");
    let e = load(&edit(&keep, Some("blk.1.ffn_up.weight"), None));
    assert!(
        e.contains("blk.1.ffn_up.weight") && e.contains("missing"),
        "{e}"
    );
    let e = load(&edit(
        &|k, v| (k != "llama.block_count").then(|| v.clone()),
        None,
        None,
    ));
    assert!(e.contains("llama.block_count"), "{e}");
    let e = load(&edit(
        &keep,
        None,
        Some(("blk.0.attn_norm.weight", vec![32, 2])),
    ));
    assert!(
        e.contains("blk.0.attn_norm.weight") && e.contains("expected [64]"),
        "{e}"
    );
    // A tensor the architecture does not use is refused, never ignored (llama.cpp refuses
    // it too); Llama 3's RoPE factors are used, at their shape.
    let with_extra = |name: &str, ne: &[usize]| {
        let g = Gguf::parse(&bytes).unwrap();
        let mut w = GgufWriter::new();
        for (k, v) in g.metadata() {
            w.set(k, v.clone()).unwrap();
        }
        for t in g.tensors() {
            let data = g.tensor_data(t).unwrap().to_vec();
            w.add_tensor(&t.name, t.dtype, &t.ne, data).unwrap();
        }
        let n: usize = ne.iter().product();
        let data = vec![0u8; 4 * n];
        w.add_tensor(name, DType::F32, ne, data).unwrap();
        w.to_bytes()
    };
    let err = Decoder::load(
        &rt,
        &with_extra("blk.0.attn_q.bias", &[64]),
        &DecoderOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.code(), webtensor::ErrorCode::UnsupportedModel, "{err}");
    let e = err.to_string();
    assert!(
        e.contains("blk.0.attn_q.bias") && e.contains("not a tensor of the llama architecture"),
        "{e}"
    );
    let e = load(&with_extra("rope_freqs.weight", &[16]));
    assert!(
        e.contains("rope_freqs.weight") && e.contains("expected [8]"),
        "{e}"
    );
    let too_long = DecoderOptions {
        context: Some(100_000),
        ..DecoderOptions::default()
    };
    let e = Decoder::load(&rt, &bytes, &too_long)
        .unwrap_err()
        .to_string();
    assert!(e.contains("context 100000"), "{e}");
    // Calls: an id past the vocabulary, a prompt past the context; the model stays usable.
    let small = DecoderOptions {
        context: Some(16),
        ..DecoderOptions::default()
    };
    let mut dec = Decoder::load(&rt, &bytes, &small).unwrap();
    let e = block_on(dec.prefill(&rt, &[1, 32000]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("token 32000 is outside the 32000-token vocabulary"),
        "{e}"
    );
    let e = block_on(dec.prefill(&rt, &[1; 17]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("do not fit the context of 16"), "{e}");
    assert!(block_on(dec.prefill(&rt, &[])).is_err());
    assert_eq!(dec.len(), 0);
    let a = block_on(dec.generate(&rt, &[1, 9038, 2501], 13)).unwrap();
    assert_eq!((a.len(), dec.len()), (13, 15));
    // The context's end: one more token does not fit.
    assert!(block_on(dec.step(&rt, 1)).is_ok());
    assert!(block_on(dec.step(&rt, 1)).is_err());
    // reset(): the same tokens again.
    dec.reset();
    assert_eq!(
        block_on(dec.generate(&rt, &[1, 9038, 2501], 13)).unwrap(),
        a
    );
    // Prefill in one chunk or token by token: the same logits (within rounding).
    dec.reset();
    let whole = block_on(dec.prefill(&rt, &[1, 9038, 2501, 263, 931])).unwrap();
    dec.reset();
    let mut stepped = Vec::new();
    for &t in &[1, 9038, 2501, 263, 931] {
        stepped = block_on(dec.step(&rt, t)).unwrap();
    }
    assert!(
        cosine(&whole, &stepped) > 0.999_999,
        "{}",
        cosine(&whole, &stepped)
    );
}
