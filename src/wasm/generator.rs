//! `TextGenerator` for JS: a decoder GGUF (llama, qwen2, qwen3) loaded onto WebGPU and/or
//! the CPU, `generate(prompt, options)` giving a `Generation` whose `next()` resolves to each
//! text piece in turn (the package wraps it as an async iterator). Thin wrapper over
//! `crate::model::decoder` and `crate::model::generate`.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Object, Promise, Uint32Array};
use wasm_bindgen::prelude::*;

use super::convert::JsErr;
use crate::error::ErrorCode;
use wasm_bindgen::JsCast;

use super::convert::{set, to_js_error, Options, RUNTIME_OPTIONS};
use crate::model::chat::ChatMessage;
use crate::model::decoder::{Decoder, DecoderOptions};
use crate::model::generate::{GenerateOptions, Generation};
use crate::model::sampler::SamplerOptions;
use crate::runtime::Runtime;

#[wasm_bindgen(typescript_custom_section)]
const TS_GENERATOR: &'static str = r#"
/** Options of `TextGenerator.load`. */
export interface GeneratorOptions extends RuntimeOptions {
  /** "download" (bytes, when given a URL), "devices" and "weights" (bytes) progress. */
  onProgress?: (stage: string, loaded: number, total: number) => void;
  /** Context length: cache rows (most: the model's context_length; default: that or 4096, whichever is smaller). */
  contextSize?: number;
  /** Most prompt tokens one prefill run takes (default 64). */
  batch?: number;
  /** The KV cache's dtype (default: "f16" on the CPU, "f32" on WebGPU). */
  kvType?: "f32" | "f16";
}
/** One turn of a conversation (`TextGenerator.chat`). */
export interface ChatMessage {
  role: "system" | "user" | "assistant" | string;
  content: string;
}
/** Options of `TextGenerator.generate`. */
export interface GenerateOptions {
  /** Most tokens generated: 1 to the context size (default 128, or the context if smaller). */
  maxTokens?: number;
  /** 0: greedy. Default 0.8, with topK 40, topP 0.95, minP 0.05 (llama.cpp's). */
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  repeatPenalty?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** Recent tokens the penalties look at (default 64). */
  penaltyLastN?: number;
  /** Same seed, same tokens: 0 to 2^32 - 1 (default: a fresh one each call, which `result().seed` gives). */
  seed?: number;
  /** Texts that end the generation (not given out); at most 64. */
  stop?: string[];
  /** Token ids that end it (default: the tokenizer's EOS and EOT). */
  stopTokens?: number[];
  /** For a text prompt: add the BOS/EOS the model asks for (default true). */
  addSpecial?: boolean;
  /** For a text prompt: match control tokens written in it (default false). */
  parseSpecial?: boolean;
}
/** A finished (or stopped) generation's counts and timings. */
export interface GenerationResult {
  text: string;
  tokens: Uint32Array;
  /** The prompt's token ids: `generate([...promptIds, ...tokens])` continues the text. */
  promptIds: Uint32Array;
  /** The sampler's seed: the option's, or the one drawn for this call (give it back for the same text). */
  seed: number;
  /** "length", "stop", "context", "aborted", or null while it runs. */
  stopReason: string | null;
  promptTokens: number;
  reusedTokens: number;
  generatedTokens: number;
  ttftMs: number;
  prefillMs: number;
  decodeMs: number;
  prefillTokensPerS: number;
  decodeTokensPerS: number;
}
"#;

/// Text generation with a decoder GGUF on WebGPU and/or the CPU.
#[wasm_bindgen]
pub struct TextGenerator {
    rt: Rc<Runtime>,
    /// `None` once disposed (dropping it frees the weights' and the cache's device memory).
    model: Rc<RefCell<Option<Decoder>>>,
    context: usize,
    vocab: usize,
    arch: String,
    name: Option<String>,
    chat_template: bool,
}

const BUSY: &str = "the model is busy with another call (await it first)";

fn with_model<T>(
    model: &RefCell<Option<Decoder>>,
    f: impl FnOnce(&mut Decoder) -> Result<T, JsErr>,
) -> Result<T, JsErr> {
    let mut m = model
        .try_borrow_mut()
        .map_err(|_| JsErr::with_code(ErrorCode::Busy, BUSY))?;
    let m = m
        .as_mut()
        .ok_or_else(|| JsErr::with_code(ErrorCode::Disposed, "this TextGenerator was disposed"))?;
    f(m)
}

#[wasm_bindgen]
impl TextGenerator {
    /// Loads a model from a `Uint8Array` of GGUF bytes. Through the package,
    /// `await TextGenerator.load(url, options)` fetches a URL first (through the model cache).
    pub async fn load(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | Blob")] source: JsValue,
        #[wasm_bindgen(unchecked_param_type = "GeneratorOptions")] options: JsValue,
    ) -> Result<TextGenerator, JsErr> {
        let o = Options::new(
            &options,
            &[
                &RUNTIME_OPTIONS[..],
                &["onProgress", "contextSize", "batch", "kvType"],
            ]
            .concat(),
        )?;
        let ((choice, cost_model), progress) = (o.runtime()?, o.function("onProgress")?);
        let mut dopts = DecoderOptions {
            context: o.count("contextSize")?,
            ..DecoderOptions::default()
        };
        if let Some(b) = o.count("batch")? {
            dopts.batch = b;
        }
        let kv_types = [
            ("f32", crate::graph::DType::F32),
            ("f16", crate::graph::DType::F16),
        ];
        dopts.kv_dtype = o.choice("kvType", &kv_types)?;
        let report = |stage: &str, loaded: f64, total: f64| {
            if let Some(f) = &progress {
                let _ = f.call3(&JsValue::NULL, &stage.into(), &loaded.into(), &total.into());
            }
        };
        let src = super::model::byte_source(&source, "TextGenerator.load")?;
        report("devices", 0.0, 1.0);
        let rt = crate::create_runtime(choice, cost_model)
            .await
            .map_err(to_js_error)?;
        report("devices", 1.0, 1.0);
        let mut dec = Decoder::load_from(&rt, src.as_ref(), &dopts, &mut |d, t| {
            report("weights", d as f64, t as f64)
        })
        .map_err(to_js_error)?;
        report("prepare", 0.0, 1.0);
        dec.warm_up(&rt).await.map_err(to_js_error)?;
        report("prepare", 1.0, 1.0);
        Ok(TextGenerator {
            rt: Rc::new(rt),
            context: dec.context(),
            vocab: dec.config().n_vocab,
            arch: dec.config().arch.name().to_string(),
            name: dec.config().name.clone(),
            chat_template: dec.chat_template().is_some(),
            model: Rc::new(RefCell::new(Some(dec))),
        })
    }

    /// Context length (cache rows).
    #[wasm_bindgen(getter, js_name = contextSize)]
    pub fn context_size(&self) -> usize {
        self.context
    }

    /// Tokens in the vocabulary.
    #[wasm_bindgen(getter, js_name = vocabSize)]
    pub fn vocab_size(&self) -> usize {
        self.vocab
    }

    /// The architecture ("llama", "qwen2", "qwen3").
    #[wasm_bindgen(getter)]
    pub fn arch(&self) -> String {
        self.arch.clone()
    }

    /// The file's `general.name`, or `null`.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> Option<String> {
        self.name.clone()
    }

    /// Whether the file has a chat template (`chat()` needs one; `generate()` does not).
    #[wasm_bindgen(getter, js_name = chatTemplate)]
    pub fn chat_template(&self) -> bool {
        self.chat_template
    }

    /// Names of the devices in use, in priority order.
    #[wasm_bindgen(getter)]
    pub fn devices(&self) -> Vec<String> {
        self.rt.device_names()
    }

    /// Why devices are missing.
    #[wasm_bindgen(getter)]
    pub fn notes(&self) -> Vec<String> {
        self.rt.notes().to_vec()
    }

    /// Token ids of a text (`addSpecial` default true, `parseSpecial` default false).
    pub fn encode(
        &self,
        text: &str,
        #[wasm_bindgen(unchecked_param_type = "EncodeOptions")] options: JsValue,
    ) -> Result<Vec<u32>, JsErr> {
        let o = Options::new(&options, &["addSpecial", "parseSpecial"])?;
        let (add, parse) = (o.flag("addSpecial", true)?, o.flag("parseSpecial", false)?);
        with_model(&self.model, |m| {
            let tok = m
                .tokenizer()
                .ok_or_else(|| JsErr::invalid("the model file has no tokenizer"))?;
            Ok(tok.encode(text, add, parse))
        })
    }

    /// The text of token ids (control tokens give no text).
    pub fn decode(&self, ids: Vec<u32>) -> Result<String, JsErr> {
        with_model(&self.model, |m| {
            let tok = m
                .tokenizer()
                .ok_or_else(|| JsErr::invalid("the model file has no tokenizer"))?;
            if let Some(&bad) = ids.iter().find(|&&t| t as usize >= tok.len()) {
                return Err(JsErr::invalid(&format!(
                    "token id {bad} is not in the vocabulary (0..{})",
                    tok.len()
                )));
            }
            Ok(tok.decode(&ids, false))
        })
    }

    /// Starts a generation of `prompt` (a string, or token ids as a `Uint32Array` or an
    /// array of numbers): pull its pieces with `next()`. Bad options, a prompt past the
    /// context or ids outside the vocabulary throw here, before anything runs.
    pub fn generate(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string | Uint32Array | number[]")] prompt: JsValue,
        #[wasm_bindgen(unchecked_param_type = "GenerateOptions")] options: JsValue,
    ) -> Result<JsGeneration, JsErr> {
        let o = Options::new(
            &options,
            &[
                "maxTokens",
                "temperature",
                "topK",
                "topP",
                "minP",
                "repeatPenalty",
                "presencePenalty",
                "frequencyPenalty",
                "penaltyLastN",
                "seed",
                "stop",
                "stopTokens",
                "addSpecial",
                "parseSpecial",
            ],
        )?;
        let mut s = SamplerOptions::default();
        let f =
            |k: &str, d: f32| -> Result<f32, JsErr> { Ok(o.number(k)?.map_or(d, |x| x as f32)) };
        s.temperature = f("temperature", s.temperature)?;
        s.top_k = o.count("topK")?.unwrap_or(s.top_k);
        s.top_p = f("topP", s.top_p)?;
        s.min_p = f("minP", s.min_p)?;
        s.repeat_penalty = f("repeatPenalty", s.repeat_penalty)?;
        s.presence_penalty = f("presencePenalty", s.presence_penalty)?;
        s.frequency_penalty = f("frequencyPenalty", s.frequency_penalty)?;
        s.penalty_last_n = o.count("penaltyLastN")?.unwrap_or(s.penalty_last_n);
        // A fresh seed each call unless one is given (the same "random" text every time
        // is nobody's default); the result says which, so a text can be had again.
        s.seed = match o.count("seed")? {
            Some(seed) => seed as u64,
            None => (js_sys::Math::random() * 4_294_967_296.0) as u64,
        };
        let strings = |k: &str| -> Result<Vec<String>, JsErr> {
            match o.value(k)? {
                None => Ok(Vec::new()),
                Some(v) if Array::is_array(&v) => Array::from(&v)
                    .iter()
                    .map(|x| {
                        x.as_string()
                            .ok_or_else(|| JsErr::invalid(&format!("option {k} must be strings")))
                    })
                    .collect(),
                Some(v) => Err(Options::wrong(k, "an array", &v)),
            }
        };
        let stop_tokens = match o.value("stopTokens")? {
            None => None,
            Some(v) => Some(ids_of(&v, "option stopTokens")?),
        };
        let opts = GenerateOptions {
            max_tokens: o.count("maxTokens")?.unwrap_or(128.min(self.context)),
            sampler: s,
            stop_tokens,
            stop_strings: strings("stop")?,
            special: false,
        };
        let (add, parse) = (o.flag("addSpecial", true)?, o.flag("parseSpecial", false)?);
        let gen = with_model(&self.model, |m| {
            let ids = match prompt.as_string() {
                Some(text) => m
                    .tokenizer()
                    .ok_or_else(|| JsErr::invalid("the model file has no tokenizer"))?
                    .encode(&text, add, parse),
                None => ids_of(&prompt, "prompt")?,
            };
            let gen = Generation::new(m, ids.clone(), opts).map_err(to_js_error)?;
            Ok((gen, ids))
        })?;
        let (gen, prompt) = gen;
        Ok(JsGeneration {
            prompt,
            gen: Rc::new(RefCell::new(Some(gen))),
            model: self.model.clone(),
            rt: self.rt.clone(),
            text: Rc::new(RefCell::new(String::new())),
        })
    }

    /// Starts a generation of the assistant's answer to `messages` (`[{ role, content }]`):
    /// the file's chat template (`tokenizer.chat_template`, rendered with minijinja and the
    /// generation prompt) gives the prompt; options as `generate`'s. A conversation that
    /// extends the last one runs only its new tokens. A file without a template says so.
    pub fn chat(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatMessage[]")] messages: JsValue,
        #[wasm_bindgen(unchecked_param_type = "GenerateOptions")] options: JsValue,
    ) -> Result<JsGeneration, JsErr> {
        if !Array::is_array(&messages) {
            return Err(JsErr::invalid(
                "messages must be an array of { role, content }",
            ));
        }
        let mut list = Vec::new();
        for (i, m) in Array::from(&messages).iter().enumerate() {
            let field = |k: &str| {
                super::convert::prop(&m, k)
                    .and_then(|v| v.as_string())
                    .ok_or_else(|| JsErr::invalid(&format!("message {i} needs a string {k}")))
            };
            list.push(ChatMessage::new(&field("role")?, &field("content")?));
        }
        let ids = with_model(&self.model, |m| m.chat_prompt(&list).map_err(to_js_error))?;
        self.generate(Uint32Array::from(ids.as_slice()).into(), options)
    }

    /// Tokens in the cache (what the next prompt may share and not run again).
    #[wasm_bindgen(js_name = cachedTokens)]
    pub fn cached_tokens(&self) -> Result<usize, JsErr> {
        with_model(&self.model, |m| Ok(m.len()))
    }

    /// Forgets the cache's tokens.
    pub fn reset(&self) -> Result<(), JsErr> {
        with_model(&self.model, |m| {
            m.reset();
            Ok(())
        })
    }

    /// Which device runs what for the shape run last (a decode step once one ran).
    pub fn explain(&self) -> Result<String, JsErr> {
        with_model(&self.model, |m| m.explain(&self.rt).map_err(to_js_error))
    }

    /// Starts recording where this model's runs (prefill chunks and decode steps) spend
    /// their time, per device, op and shapes (clears its last profile; its own runtime's).
    /// While it records, each node runs alone and is waited for, so generation is slower.
    #[wasm_bindgen(js_name = profileStart)]
    pub fn profile_start(&self) -> Result<(), JsErr> {
        with_model(&self.model, |_| Ok(()))?;
        self.rt.profile_start();
        Ok(())
    }

    /// Stops recording; returns the profile as a table, most time first.
    #[wasm_bindgen(js_name = profileStop)]
    pub fn profile_stop(&self) -> String {
        self.rt.profile_stop()
    }

    /// Frees the model's device memory now; later calls throw.
    pub fn dispose(&self) -> Result<(), JsErr> {
        let mut m = self
            .model
            .try_borrow_mut()
            .map_err(|_| JsErr::with_code(ErrorCode::Busy, BUSY))?;
        m.take();
        self.rt.clear();
        Ok(())
    }
}

fn ids_of(v: &JsValue, what: &str) -> Result<Vec<u32>, JsErr> {
    if let Some(a) = v.dyn_ref::<Uint32Array>() {
        return Ok(a.to_vec());
    }
    if Array::is_array(v) {
        return Array::from(v)
            .iter()
            .map(|x| match x.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u32::MAX as f64 => Ok(f as u32),
                _ => Err(JsErr::invalid(&format!(
                    "{what}: token ids are whole numbers from 0"
                ))),
            })
            .collect();
    }
    Err(JsErr::invalid(&format!(
        "{what} must be a string, a Uint32Array or an array of token ids"
    )))
}

/// A generation in progress: `nextPiece()` resolves to its next text piece (whole UTF-8, never
/// empty), or `undefined` once it ended; `result()` gives the text so far, the tokens, why it
/// ended and its timings. Stopping early (not pulling again) leaves the model consistent.
#[wasm_bindgen(js_name = Generation)]
pub struct JsGeneration {
    /// The prompt's token ids (`[...promptIds, ...tokens]` continues the text exactly).
    prompt: Vec<u32>,
    gen: Rc<RefCell<Option<Generation>>>,
    model: Rc<RefCell<Option<Decoder>>>,
    rt: Rc<Runtime>,
    text: Rc<RefCell<String>>,
}

#[wasm_bindgen(js_class = Generation)]
impl JsGeneration {
    /// The next piece of text, or `undefined` at the end (the package's generation is also
    /// an async iterator of these: `for await (const piece of gen.generate(...))`).
    #[wasm_bindgen(js_name = nextPiece, unchecked_return_type = "Promise<string | undefined>")]
    // The borrows are the model's lock for the step: every other call takes them with
    // try_borrow and says "busy" rather than waiting or panicking.
    #[allow(clippy::await_holding_refcell_ref)]
    pub fn next_piece(&self) -> Promise {
        let (gen, model, rt, text) = (
            self.gen.clone(),
            self.model.clone(),
            self.rt.clone(),
            self.text.clone(),
        );
        wasm_bindgen_futures::future_to_promise(async move {
            let busy = || JsValue::from(JsErr::with_code(ErrorCode::Busy, BUSY));
            let mut g = gen.try_borrow_mut().map_err(|_| busy())?;
            let g = g.as_mut().ok_or_else(|| {
                JsValue::from(JsErr::with_code(
                    ErrorCode::Disposed,
                    "this Generation was disposed",
                ))
            })?;
            let mut m = model.try_borrow_mut().map_err(|_| busy())?;
            let m = m.as_mut().ok_or_else(|| {
                JsValue::from(JsErr::with_code(
                    ErrorCode::Disposed,
                    "its TextGenerator was disposed",
                ))
            })?;
            match g
                .next(&rt, m)
                .await
                .map_err(|e| JsValue::from(to_js_error(e)))?
            {
                Some(piece) => {
                    text.borrow_mut().push_str(&piece);
                    Ok(piece.into())
                }
                None => Ok(JsValue::UNDEFINED),
            }
        })
    }

    /// The text given out so far, the tokens, why it ended (`null` while it runs), and the
    /// counts and timings.
    #[wasm_bindgen(unchecked_return_type = "GenerationResult")]
    pub fn result(&self) -> Result<JsValue, JsErr> {
        let g = self
            .gen
            .try_borrow()
            .map_err(|_| JsErr::with_code(ErrorCode::Busy, BUSY))?;
        let g = g
            .as_ref()
            .ok_or_else(|| JsErr::with_code(ErrorCode::Disposed, "this Generation was disposed"))?;
        let st = g.stats();
        let o = Object::new();
        set(&o, "text", &self.text.borrow().as_str().into())?;
        set(&o, "tokens", &Uint32Array::from(g.tokens()).into())?;
        set(
            &o,
            "promptIds",
            &Uint32Array::from(self.prompt.as_slice()).into(),
        )?;
        let reason = g.stop_reason().map_or(JsValue::NULL, |r| r.name().into());
        set(&o, "stopReason", &reason)?;
        for (k, v) in [
            ("seed", g.sampler_options().seed as f64),
            ("promptTokens", st.prompt_tokens as f64),
            ("reusedTokens", st.reused_tokens as f64),
            ("generatedTokens", st.generated_tokens as f64),
            ("ttftMs", st.ttft_ms),
            ("prefillMs", st.prefill_ms),
            ("decodeMs", st.decode_ms),
            ("prefillTokensPerS", st.prefill_tokens_per_s()),
            ("decodeTokensPerS", st.decode_tokens_per_s()),
        ] {
            set(&o, k, &v.into())?;
        }
        Ok(o.into())
    }

    /// Ends it now (an aborted signal in the package calls this): `nextPiece()` gives
    /// `undefined`, `result().stopReason` is `"aborted"` unless it had already ended.
    pub fn abort(&self) -> Result<(), JsErr> {
        let mut g = self
            .gen
            .try_borrow_mut()
            .map_err(|_| JsErr::with_code(ErrorCode::Busy, BUSY))?;
        g.as_mut()
            .ok_or_else(|| JsErr::with_code(ErrorCode::Disposed, "this Generation was disposed"))?
            .abort();
        Ok(())
    }

    /// Ends it (the model stays usable); later calls throw.
    pub fn dispose(&self) {
        if let Ok(mut g) = self.gen.try_borrow_mut() {
            g.take();
        }
    }
}
