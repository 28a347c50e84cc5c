//! wasm tests that run in Node (wasm-bindgen-test's default): the CPU device end to end and
//! the op conformance suite on its SIMD128 kernels (Node has no WebGPU: not expected).
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;
use webtensor::backend::DeviceKind;

#[wasm_bindgen_test]
async fn cpu_device_is_listed_with_simd128() {
    let reg = webtensor::backends::registry().await;
    let cpu = reg.by_kind(DeviceKind::Cpu).expect("a CPU device");
    assert!(
        cpu.description().contains("simd128"),
        "{}",
        cpu.description()
    );
}

#[wasm_bindgen_test]
async fn vector_add_on_cpu() {
    let reg = webtensor::backends::registry().await;
    let cpu = reg.by_name("cpu").expect("a CPU device");
    let out = webtensor::model::smoke::vector_add(cpu, &[1.0, 2.0, 3.0], &[0.5, 0.25, -3.0])
        .await
        .unwrap();
    assert_eq!(out, vec![1.5, 2.25, 0.0]);
}

#[wasm_bindgen_test]
async fn bad_input_is_an_error_not_a_panic() {
    let reg = webtensor::backends::registry().await;
    let cpu = reg.by_name("cpu").expect("a CPU device");
    let err = webtensor::model::smoke::vector_add(cpu, &[1.0], &[1.0, 2.0])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("one length"), "{err}");
}

#[wasm_bindgen_test]
async fn no_webgpu_in_node_is_a_reason_not_a_panic() {
    let reg = webtensor::backends::registry().await;
    let gpu = reg
        .backend_regs()
        .iter()
        .find(|r| r.name() == "WebGPU")
        .cloned()
        .expect("the WebGPU family is registered");
    assert!(gpu.devices().is_empty());
    let reason = gpu.unavailable_reason().unwrap_or_default();
    assert!(
        reason.contains("Node.js") || reason.contains("navigator.gpu"),
        "{reason}"
    );
}

/// The op conformance suite on every device of the registry (here: the CPU's SIMD128
/// kernels) against the CPU scalar reference.
#[wasm_bindgen_test]
async fn op_suite_on_every_device_in_node() {
    use webtensor::testing::{run_suite_on_registry, SuiteOptions};
    let reg = webtensor::backends::registry().await;
    let report = run_suite_on_registry(&reg, &SuiteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    console_log!("{report}");
    assert!(report.device("CPU").is_some(), "{report}");
    if let Err(e) = report.check() {
        panic!("{e}");
    }
}

#[wasm_bindgen_test]
fn suite_covers_every_compute_op() {
    let missing = webtensor::testing::uncovered_ops();
    assert!(missing.is_empty(), "ops without a case: {missing:?}");
}

/// A file of the repository, read by Node (`None` when it is missing).
fn read_repo_file(rel: &str) -> Option<Vec<u8>> {
    let read = js_sys::Function::new_with_args(
        "p",
        "const fs = process.getBuiltinModule('fs'); return fs.existsSync(p) ? fs.readFileSync(p) : undefined;",
    );
    let path = format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"));
    let v = read
        .call1(&JsValue::NULL, &path.into())
        .expect("readFileSync");
    v.dyn_ref::<js_sys::Uint8Array>().map(|a| a.to_vec())
}

/// Whether scripts/test.sh asked for the vocab files (WEBTENSOR_REQUIRE_VECTORS=1).
fn vectors_required() -> bool {
    let env = js_sys::Function::new_no_args("return process.env.WEBTENSOR_REQUIRE_VECTORS");
    env.call0(&JsValue::NULL).ok().and_then(|v| v.as_string()) == Some("1".into())
}

/// llama.cpp's vectors of the smaller covered vocab files through the JS bindings
/// (`Tokenizer.fromGguf`, `encode`, `decode`, `stream`), as a page would call them: ids,
/// detokenized text and streamed text all exact.
#[wasm_bindgen_test]
fn tokenizer_bindings_match_llama_cpp_vectors() {
    use webtensor::wasm::tokenizer::Tokenizer;
    const SEPARATOR: &str = "\n__ggml_vocab_test__\n";
    let opts = |json: &str| js_sys::JSON::parse(json).unwrap();
    let mut checked = 0;
    for (name, model) in [
        ("llama-spm", "llama"),
        ("phi-3", "llama"),
        ("deepseek-coder", "gpt2"),
        ("gpt-2", "gpt2"),
    ] {
        let base = format!("models/vectors/ggml-vocab-{name}.gguf");
        let (Some(gguf), Some(inp), Some(out)) = (
            read_repo_file(&base),
            read_repo_file(&format!("{base}.inp")),
            read_repo_file(&format!("{base}.out")),
        ) else {
            assert!(
                !vectors_required(),
                "WEBTENSOR_REQUIRE_VECTORS=1 but {base} is missing: run scripts/fetch-test-vectors.sh"
            );
            console_log!("skipped {name}: run scripts/fetch-test-vectors.sh");
            continue;
        };
        let tok = Tokenizer::from_gguf(js_sys::Uint8Array::from(gguf.as_slice()).into())
            .unwrap_or_else(|e| panic!("{name}: {:?}", JsValue::from(e)));
        assert_eq!(tok.model(), model, "{name}");
        // Bad arguments are Errors naming what is wrong.
        let msg = |e: webtensor::wasm::JsErr| {
            let e = JsValue::from(e);
            let code = js_sys::Reflect::get(&e, &"code".into()).unwrap();
            assert_eq!(code.as_string().as_deref(), Some("INVALID_ARGUMENT"));
            js_sys::Reflect::get(&e, &"message".into())
                .unwrap()
                .as_string()
                .unwrap()
        };
        let huge: JsValue = js_sys::Array::of1(&JsValue::from(tok.length() as f64)).into();
        assert!(msg(tok.decode(huge, JsValue::UNDEFINED).unwrap_err())
            .contains("not in the vocabulary"));
        assert!(
            msg(tok.encode("a", opts(r#"{"addSpecial":1}"#)).unwrap_err()).contains("addSpecial")
        );
        assert!(msg(tok.encode("a", opts(r#"{"bogus":true}"#)).unwrap_err()).contains("bogus"));
        let s = tok
            .stream(JsValue::UNDEFINED)
            .map_err(JsValue::from)
            .unwrap();
        assert!(msg(s.push(JsValue::from(-1)).unwrap_err()).contains("not in the vocabulary"));
        assert!(msg(s.push(JsValue::from("1")).unwrap_err()).contains("number"));
        let (inp, out) = (
            String::from_utf8(inp).unwrap(),
            String::from_utf8(out).unwrap(),
        );
        let mut inputs: Vec<&str> = inp.split(SEPARATOR).collect();
        assert_eq!(inputs.pop(), Some(""));
        let expected: Vec<Vec<u32>> = out
            .lines()
            .map(|l| l.split_whitespace().map(|t| t.parse().unwrap()).collect())
            .collect();
        assert_eq!(inputs.len(), expected.len(), "{name}");
        let enc = opts(r#"{"addSpecial":false}"#);
        for (text, want) in inputs.iter().zip(&expected) {
            let got = tok
                .encode(text, enc.clone())
                .map_err(JsValue::from)
                .unwrap();
            assert_eq!(&got, want, "{name} {text:?}");
            let ids: JsValue = js_sys::Uint32Array::from(got.as_slice()).into();
            let back = tok
                .decode(ids, JsValue::UNDEFINED)
                .map_err(JsValue::from)
                .unwrap();
            assert_eq!(back, *text, "{name} {text:?}");
            let stream = tok
                .stream(JsValue::UNDEFINED)
                .map_err(JsValue::from)
                .unwrap();
            let mut s = String::new();
            for &id in &got {
                s.push_str(&stream.push(id.into()).map_err(JsValue::from).unwrap());
            }
            s.push_str(&stream.finish().map_err(JsValue::from).unwrap());
            assert_eq!(s, back, "{name} {text:?} streamed");
            checked += 1;
        }
    }
    console_log!("{checked} llama.cpp vectors exact through the Tokenizer bindings");
}

/// Bad input to the Tokenizer bindings is an `Error`, never a panic.
#[wasm_bindgen_test]
fn tokenizer_bindings_refuse_bad_input() {
    use webtensor::wasm::tokenizer::Tokenizer;
    let err = |r: Result<Tokenizer, webtensor::wasm::JsErr>| -> String {
        let e = JsValue::from(r.err().expect("an error"));
        let name = js_sys::Reflect::get(&e, &"name".into()).unwrap();
        assert_eq!(name.as_string().as_deref(), Some("WebtensorError"));
        let code = js_sys::Reflect::get(&e, &"code".into())
            .unwrap()
            .as_string();
        assert!(
            code.is_some_and(|c| !c.is_empty()),
            "an error without a code"
        );
        js_sys::Reflect::get(&e, &"message".into())
            .unwrap()
            .as_string()
            .unwrap()
    };
    assert!(err(Tokenizer::from_gguf(JsValue::from(3))).contains("Uint8Array"));
    assert!(err(Tokenizer::from_gguf(JsValue::from("x.gguf"))).contains("URL"));
    let junk = js_sys::Uint8Array::from(&b"GGUF\x03\0\0\0garbage"[..]);
    assert!(!err(Tokenizer::from_gguf(junk.into())).is_empty());
    // A tiny valid GGUF without tokenizer metadata: an error naming the key.
    let mut w = webtensor::model::gguf::GgufWriter::new();
    w.set(
        "general.architecture",
        webtensor::model::gguf::Value::String("x".into()),
    )
    .unwrap();
    let bytes = js_sys::Uint8Array::from(w.to_bytes().as_slice());
    assert!(err(Tokenizer::from_gguf(bytes.into())).contains("tokenizer.ggml.model"));
}

/// The decoder in wasm (the SIMD128 CPU kernels) against llama.cpp's outputs for three of the
/// tiny models (tests/decoder.rs runs them all natively; llama3-f32 has Llama 3's RoPE factors): the short prompt's logits by cosine
/// and 32 greedy tokens, fed llama.cpp's own (every one must agree for f32; Q8_0 differs
/// from llama.cpp's activation rounding only at near-ties, margins below 1).
#[wasm_bindgen_test]
async fn decoders_match_llama_cpp_in_wasm() {
    use webtensor::model::decoder::{argmax, Decoder, DecoderOptions};
    let rt = webtensor::create_runtime(webtensor::runtime::DeviceChoice::Cpu, false)
        .await
        .unwrap();
    let b64 =
        js_sys::Function::new_with_args("s", "return new Uint8Array(Buffer.from(s, 'base64'));");
    for (name, min_cos, tie) in [
        ("qwen3-f32", 0.99999, 0.0),
        ("llama-q8_0", 0.999, 1.0),
        ("llama3-f32", 0.99999, 0.0),
    ] {
        let (Some(gguf), Some(json)) = (
            read_repo_file(&format!("models/decoder/{name}.gguf")),
            read_repo_file(&format!("tests/reference/decoder/{name}.json")),
        ) else {
            assert!(
                !vectors_required(),
                "WEBTENSOR_REQUIRE_VECTORS=1 but models/decoder/{name}.gguf is missing: run \
                 scripts/decoder-models.py"
            );
            console_log!("skipped {name}: run scripts/decoder-models.py");
            continue;
        };
        let opts = DecoderOptions {
            kv_dtype: Some(webtensor::graph::DType::F32),
            ..DecoderOptions::default()
        };
        let mut dec = Decoder::load(&rt, &gguf, &opts).unwrap();
        let j = js_sys::JSON::parse(std::str::from_utf8(&json).unwrap()).unwrap();
        let case = js_sys::Reflect::get(
            &js_sys::Reflect::get(&j, &"cases".into()).unwrap(),
            &0.into(),
        )
        .unwrap();
        let field = |k: &str| js_sys::Reflect::get(&case, &k.into()).unwrap();
        let nums = |v: JsValue| -> Vec<f64> {
            js_sys::Array::from(&v)
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        };
        let prompt: Vec<u32> = nums(field("prompt")).iter().map(|&x| x as u32).collect();
        let greedy: Vec<u32> = nums(field("greedy")).iter().map(|&x| x as u32).collect();
        let margins = nums(field("margins"));
        let reference: Vec<f32> = bytemuck::pod_collect_to_vec(
            &js_sys::Uint8Array::from(b64.call1(&JsValue::NULL, &field("logits")).unwrap())
                .to_vec(),
        );
        let mut logits = dec.prefill(&rt, &prompt).await.unwrap();
        let (mut ab, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
        for (&x, &y) in logits.iter().zip(&reference) {
            ab += x as f64 * y as f64;
            aa += x as f64 * x as f64;
            bb += y as f64 * y as f64;
        }
        let cos = ab / (aa.sqrt() * bb.sqrt());
        assert!(cos >= min_cos, "{name}: cosine {cos}");
        let mut agree = 0;
        for (i, &w) in greedy.iter().enumerate() {
            let got = argmax(&logits);
            agree += usize::from(got == w);
            assert!(
                got == w || margins[i] < tie,
                "{name}: token {i} is {got}, llama.cpp's {w} (margin {})",
                margins[i]
            );
            logits = dec.step(&rt, w).await.unwrap();
        }
        console_log!("{name} in wasm: cosine {cos:.7}, {agree} of 32 greedy tokens agree");
    }
}
