//! Decoder language models from GGUF files in llama.cpp's layout: `llama` (llama 2/3,
//! TinyLlama, SmolLM), `qwen2` (q/k/v biases) and `qwen3` (per-head q/k RMSNorm). RMSNorm,
//! RoPE, grouped-query attention over a KV cache, SwiGLU, tied or untied output.
//!
//! The KV cache is [`State`]s, one K and one V per layer, `[head_dim, n_ctx + 1, n_head_kv]`
//! on the device that runs the layer's attention (f16 on the CPU, f32 where the device's
//! `set_rows` writes no f16): each run writes its tokens' rows in place with `set_rows` at
//! their positions and reads the filled rows through views (K as the scores' matmul operand,
//! V transposed through strides), so nothing of the cache is copied per step and wasm memory
//! does not grow per token. Row `n_ctx` is scratch: padding tokens write there and no query
//! ever reads it.
//!
//! A run is a chunk of `T` tokens (prefill: chunks of at most [`DecoderOptions::batch`]
//! tokens; decode: one) attending over the first `n_kv` cache rows. Both are bucketed
//! (`T` to a power of two from 8, `n_kv` to a multiple of [`KV_STEP`]) and the positions,
//! cache rows, causal mask and the row to read logits from are inputs, so each bucket's
//! [`Program`] is built once and the runtime reuses its prepared session: a decode step
//! plans nothing and, on WebGPU, creates no GPU object. Only a prompt's last chunk computes
//! logits, and its last layer only for the token they are read from.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::error::{At, Error, ModelFile, Result};
use crate::graph::{DType, Graph, RopeMode, RopeParams, TensorId};
use crate::model::chat::ChatTemplate;
use crate::model::gguf::Gguf;
use crate::model::tokenizer::Tokenizer;
use crate::model::WeightInfo;

use crate::runtime::{matrix_only, ByteSource, Program, Runtime, State, StoredWeight, WeightSpec};

/// Cache rows a run attends over are a multiple of this (as llama.cpp pads its KV cache),
/// so a context of 1024 has 4 decode shapes.
pub const KV_STEP: usize = 256;
/// Added to the scores of masked keys: exp() of it is exactly 0.
const MASKED: f32 = -1e30;
/// Shortest prefill chunk (shorter chunks are padded to it; one token is a decode step).
const MIN_CHUNK: usize = 8;

fn key_err(key: &str, what: impl Into<String>) -> Error {
    Error::model_at(ModelFile::Decoder, At::Key(key.into()), what)
}

/// A key whose (well-formed) value asks for what the decoder does not run.
fn key_unsupported(key: &str, what: impl Into<String>) -> Error {
    Error::unsupported_model(ModelFile::Decoder, Some(At::Key(key.into())), what)
}

fn tensor_err(name: &str, what: impl Into<String>) -> Error {
    Error::model_at(ModelFile::Decoder, At::Tensor(name.into()), what)
}

/// The architectures the decoder builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// `llama`: RoPE on adjacent pairs (llama.cpp's converter permutes Q and K for it).
    Llama,
    /// `qwen2`: biases on Q, K and V; NeoX RoPE.
    Qwen2,
    /// `qwen3`: RMSNorm of each Q and K head before RoPE; NeoX RoPE.
    Qwen3,
}

impl Arch {
    fn parse(s: &str) -> Result<Self> {
        match s {
            "llama" => Ok(Self::Llama),
            "qwen2" => Ok(Self::Qwen2),
            "qwen3" => Ok(Self::Qwen3),
            other => Err(key_unsupported(
                "general.architecture",
                format!("architecture {other:?} is not supported (llama, qwen2 and qwen3 are)"),
            )),
        }
    }

    /// The GGUF key prefix.
    pub fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen2 => "qwen2",
            Self::Qwen3 => "qwen3",
        }
    }
}

/// A decoder's hyper-parameters, from the GGUF's `{arch}.*` keys and tensor shapes.
#[derive(Clone, Debug, PartialEq)]
pub struct DecoderConfig {
    /// The architecture.
    pub arch: Arch,
    /// Layers (`block_count`).
    pub n_layer: usize,
    /// Hidden size (`embedding_length`).
    pub n_embd: usize,
    /// Query heads (`attention.head_count`).
    pub n_head: usize,
    /// Key/value heads (`attention.head_count_kv`, default `n_head`).
    pub n_head_kv: usize,
    /// Values per head (`attention.key_length`, default `n_embd / n_head`).
    pub head_dim: usize,
    /// Feed-forward size (`feed_forward_length`).
    pub n_ff: usize,
    /// The context the model was trained for (`context_length`).
    pub n_ctx_train: usize,
    /// RMSNorm epsilon (`attention.layer_norm_rms_epsilon`).
    pub eps: f32,
    /// RoPE (`rope.dimension_count`, `rope.freq_base`, linear `rope.scaling.factor`).
    pub rope: RopeParams,
    /// Vocabulary size (rows of `token_embd`).
    pub n_vocab: usize,
    /// Whether the output projection is `token_embd` (no `output.weight`).
    pub tied: bool,
    /// The file's `general.name`, when it has one.
    pub name: Option<String>,
}

/// The context when none is asked for, unless the model's is shorter: a real model's
/// `context_length` (32k for Qwen2.5, 128k for Llama 3.2) would make a KV cache of gigabytes
/// (Llama-3.2-1B at 128k: 4 GiB in f16), which a page cannot hold; llama.cpp's tools default
/// to 4096 too.
pub const DEFAULT_CONTEXT: usize = 4096;

/// How a decoder is loaded.
#[derive(Clone, Debug)]
pub struct DecoderOptions {
    /// Context length (cache rows); most: the model's `context_length`; default: that or
    /// [`DEFAULT_CONTEXT`], whichever is smaller.
    pub context: Option<usize>,
    /// Prefill chunk: most tokens one run takes (default 64).
    pub batch: usize,
    /// K/V cache dtype: `None` picks f16 on the CPU and f32 on a GPU.
    pub kv_dtype: Option<DType>,
    /// Attention as one fused op ([`Graph::attention`]) when every device of the runtime
    /// runs it (default); `false` builds it from matmuls and a softmax (to compare).
    pub fused_attention: bool,
}

impl Default for DecoderOptions {
    fn default() -> Self {
        Self {
            context: None,
            batch: 64,
            kv_dtype: None,
            fused_attention: true,
        }
    }
}

/// A decoder on a runtime's devices: weights stored once, a KV cache, and the position it
/// has reached.
pub struct Decoder {
    config: DecoderConfig,
    tokenizer: Option<Rc<Tokenizer>>,
    chat: Option<ChatTemplate>,
    weights: Vec<(String, StoredWeight)>,
    /// (K, V) cache per layer.
    cache: Vec<(State, State)>,
    n_ctx: usize,
    batch: usize,
    /// The tokens in the cache, in order.
    history: Vec<u32>,
    /// Programs by (chunk tokens, attended rows, logits read), built once.
    programs: RefCell<HashMap<(usize, usize, bool), Program>>,
    last_shape: std::cell::Cell<Option<(usize, usize)>>,
    /// Whether attention is the fused op.
    fused: bool,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("config", &self.config)
            .field("n_ctx", &self.n_ctx)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

/// Names of layer `i`'s weights the architecture has, with their shapes.
fn layer_weights(c: &DecoderConfig, i: usize) -> Vec<(String, Vec<usize>)> {
    let (h, q, kv, ff) = (
        c.n_embd,
        c.n_head * c.head_dim,
        c.n_head_kv * c.head_dim,
        c.n_ff,
    );
    let mut w = vec![
        ("attn_norm.weight", vec![h]),
        ("attn_q.weight", vec![h, q]),
        ("attn_k.weight", vec![h, kv]),
        ("attn_v.weight", vec![h, kv]),
        ("attn_output.weight", vec![q, h]),
        ("ffn_norm.weight", vec![h]),
        ("ffn_gate.weight", vec![h, ff]),
        ("ffn_up.weight", vec![h, ff]),
        ("ffn_down.weight", vec![ff, h]),
    ];
    match c.arch {
        Arch::Llama => {}
        Arch::Qwen2 => w.extend([
            ("attn_q.bias", vec![q]),
            ("attn_k.bias", vec![kv]),
            ("attn_v.bias", vec![kv]),
        ]),
        Arch::Qwen3 => w.extend([
            ("attn_q_norm.weight", vec![c.head_dim]),
            ("attn_k_norm.weight", vec![c.head_dim]),
        ]),
    }
    w.into_iter()
        .map(|(n, s)| (format!("blk.{i}.{n}"), s))
        .collect()
}

/// Llama 3's RoPE frequency factors (`[n_rot / 2]` f32), shared by every layer.
const ROPE_FREQS: &str = "rope_freqs.weight";

/// The joined Q, K and V projection of a layer (and its bias), as llama.cpp names a fused
/// one (`attn_qkv`).
const QKV: &str = "attn_qkv";
/// The joined gate and up projections of a layer's feed-forward.
const GATE_UP: &str = "ffn_gate_up";
/// Projections that read the same input, joined along their outermost dim (output rows)
/// when the file stores them in one dtype: (joined name, parts), each name a layer's
/// `blk.{i}.` suffix without `.weight` / `.bias`.
const JOINS: [(&str, &[&str]); 2] = [
    (QKV, &["attn_q", "attn_k", "attn_v"]),
    (GATE_UP, &["ffn_gate", "ffn_up"]),
];

/// `infos` with each layer's projections of [`JOINS`] stored as one weight where all parts
/// share a dtype (the layer's Q8_0 or Q4_0 Q, K, V; a Q4_K_M file's gate and up, whose V is
/// often Q6_K beside a Q4_K Q and K, which then stay apart): one matmul reads the layer's
/// normed input once (quantized once, in the int8 kernels), and the thread team splits one
/// wider product instead of two or three small ones (a Qwen2.5-0.5B layer's K and V are 128
/// rows each). Their biases, when the file has them (qwen2's Q, K, V), join with them. The
/// matrices' rows are whole blocks, so the joined weight is the parts' bytes one after
/// another.
fn join_projections(infos: Vec<WeightInfo>, n_layer: usize) -> Vec<WeightInfo> {
    let mut by_name: HashMap<String, WeightInfo> =
        infos.iter().map(|w| (w.name.clone(), w.clone())).collect();
    // Joined weights by their first part's name.
    let mut joined = HashMap::new();
    for i in 0..n_layer {
        for (name, parts) in JOINS {
            let weights: Option<Vec<&WeightInfo>> = parts
                .iter()
                .map(|p| by_name.get(&format!("blk.{i}.{p}.weight")))
                .collect();
            // Matrices of one dtype and row length only.
            let joins = weights.is_some_and(|w| {
                w.iter().all(|w| w.ne.len() == 2) && WeightInfo::join(String::new(), &w).is_some()
            });
            if !joins {
                continue;
            }
            for suffix in ["weight", "bias"] {
                let names: Vec<String> = parts
                    .iter()
                    .map(|p| format!("blk.{i}.{p}.{suffix}"))
                    .collect();
                let Some(ps) = names
                    .iter()
                    .map(|n| by_name.get(n))
                    .collect::<Option<Vec<_>>>()
                else {
                    continue;
                };
                let Some(w) = WeightInfo::join(format!("blk.{i}.{name}.{suffix}"), &ps) else {
                    continue;
                };
                for n in &names {
                    by_name.remove(n);
                }
                joined.insert(names[0].clone(), w);
            }
        }
    }
    // The file's order, each joined weight where its first part was.
    infos
        .into_iter()
        .filter_map(|w| match by_name.remove(&w.name) {
            Some(w) => Some(w),
            None => joined.remove(&w.name),
        })
        .collect()
}

/// The decoder's hyper-parameters from `g`'s metadata (and `token_embd`'s shape).
pub fn config_from_gguf(g: &Gguf) -> Result<DecoderConfig> {
    let arch = Arch::parse(g.get_str("general.architecture")?)?;
    let a = arch.name();
    let key = |k: &str| format!("{a}.{k}");
    let get = |k: &str| g.get_usize(&key(k));
    let opt_usize = |k: &str| g.get(&key(k)).map(|_| get(k)).transpose();
    let opt_f32 = |k: &str| g.get(&key(k)).map(|_| g.get_f32(&key(k))).transpose();
    let n_embd = get("embedding_length")?;
    let n_head = get("attention.head_count")?;
    let n_head_kv = opt_usize("attention.head_count_kv")?.unwrap_or(n_head);
    if n_head == 0 || n_head_kv == 0 || n_head % n_head_kv != 0 {
        return Err(key_err(
            &key("attention.head_count_kv"),
            format!("{n_head_kv} KV heads do not divide {n_head} heads"),
        ));
    }
    let head_dim = match opt_usize("attention.key_length")? {
        Some(d) => d,
        None if n_embd % n_head == 0 => n_embd / n_head,
        None => {
            return Err(key_err(
                &key("attention.head_count"),
                format!("{n_head} heads do not divide {n_embd}"),
            ))
        }
    };
    if let Some(v) = opt_usize("attention.value_length")? {
        if v != head_dim {
            return Err(key_unsupported(
                &key("attention.value_length"),
                format!("{v}, unlike key_length {head_dim} (not supported)"),
            ));
        }
    }
    let n_rot = opt_usize("rope.dimension_count")?.unwrap_or(head_dim);
    if n_rot == 0 || n_rot % 2 != 0 || n_rot > head_dim {
        return Err(key_err(
            &key("rope.dimension_count"),
            format!("{n_rot} must be even and at most the head size {head_dim}"),
        ));
    }
    let scale = match g.get(&key("rope.scaling.type")).and_then(|v| v.as_str()) {
        None | Some("none") => 1.0,
        Some("linear") => {
            let f = opt_f32("rope.scaling.factor")?.unwrap_or(1.0);
            if !(f.is_finite() && f > 0.0) {
                return Err(key_err(&key("rope.scaling.factor"), format!("{f}")));
            }
            1.0 / f
        }
        Some(other) => {
            return Err(key_unsupported(
                &key("rope.scaling.type"),
                format!("RoPE scaling {other:?} is not supported (linear is)"),
            ))
        }
    };
    let base = opt_f32("rope.freq_base")?.unwrap_or(10000.0);
    let eps = g.get_f32(&key("attention.layer_norm_rms_epsilon"))?;
    if !(base.is_finite() && base > 0.0 && eps.is_finite() && eps >= 0.0) {
        return Err(key_err(
            &key("rope.freq_base"),
            format!("RoPE base {base} or epsilon {eps} is out of range"),
        ));
    }
    let embd = g
        .tensor("token_embd.weight")
        .ok_or_else(|| tensor_err("token_embd.weight", "missing"))?;
    let n_vocab = *embd.ne.get(1).unwrap_or(&0);
    let config = DecoderConfig {
        arch,
        n_layer: get("block_count")?,
        n_embd,
        n_head,
        n_head_kv,
        head_dim,
        n_ff: get("feed_forward_length")?,
        n_ctx_train: get("context_length")?,
        eps,
        rope: RopeParams {
            n_dims: n_rot,
            mode: match arch {
                Arch::Llama => RopeMode::Normal,
                Arch::Qwen2 | Arch::Qwen3 => RopeMode::NeoX,
            },
            freq_base: base,
            freq_scale: scale,
        },
        n_vocab,
        tied: g.tensor("output.weight").is_none(),
        name: g.get_str("general.name").ok().map(str::to_string),
    };
    if config.n_layer == 0 || n_embd == 0 || config.n_ff == 0 || n_vocab == 0 {
        return Err(Error::model(
            ModelFile::Decoder,
            format!("a size is 0: {config:?}"),
        ));
    }
    Ok(config)
}

impl Decoder {
    /// Loads a GGUF file onto `rt`'s devices.
    pub fn load(rt: &Runtime, bytes: &[u8], opts: &DecoderOptions) -> Result<Self> {
        Self::load_from(rt, &bytes, opts, &mut |_, _| {})
    }

    /// Loads from any [`ByteSource`]: the header first, then each weight copied a chunk at a
    /// time into the device buffer that keeps it, with `progress(done, total)` in bytes.
    /// Every tensor and key is checked (an unsupported architecture, a missing or misshapen
    /// tensor, a context past the model's) before anything is stored.
    pub fn load_from(
        rt: &Runtime,
        src: &dyn ByteSource,
        opts: &DecoderOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Self> {
        let g = super::read_header(src)?;
        let config = config_from_gguf(&g)?;
        let tokenizer = match g.get("tokenizer.ggml.model") {
            Some(_) => Some(Rc::new(Tokenizer::from_gguf(&g)?)),
            None => None,
        };
        if let Some(t) = &tokenizer {
            if t.len() != config.n_vocab {
                return Err(tensor_err(
                    "token_embd.weight",
                    format!("{} rows, the vocabulary {} tokens", config.n_vocab, t.len()),
                ));
            }
        }
        let chat = match &tokenizer {
            Some(t) => {
                let text = |id: Option<u32>| id.and_then(|i| t.token(i)).unwrap_or("").to_string();
                let sp = t.specials();
                ChatTemplate::from_gguf(&g, &text(sp.bos), &text(sp.eos))?
            }
            None => None,
        };
        let n_ctx = opts
            .context
            .unwrap_or(config.n_ctx_train.min(DEFAULT_CONTEXT));
        if n_ctx == 0 || n_ctx > config.n_ctx_train {
            return Err(Error::InvalidArgument(format!(
                "context {n_ctx} is outside 1 to the model's {}",
                config.n_ctx_train
            )));
        }
        if opts.batch == 0 {
            return Err(Error::InvalidArgument(
                "the prefill batch must be at least 1 token".into(),
            ));
        }
        let (h, v) = (config.n_embd, config.n_vocab);
        let mut expected = vec![
            ("token_embd.weight".to_string(), vec![h, v]),
            ("output_norm.weight".to_string(), vec![h]),
        ];
        if !config.tied {
            expected.push(("output.weight".to_string(), vec![h, v]));
        }
        for i in 0..config.n_layer {
            expected.extend(layer_weights(&config, i));
        }
        // Llama 3.x RoPE scaling: per-pair frequency factors, as llama.cpp's converter writes
        // them (and llama.cpp reads them for `llama` only).
        if config.arch == Arch::Llama && g.tensor(ROPE_FREQS).is_some() {
            expected.push((ROPE_FREQS.to_string(), vec![config.rope.n_dims / 2]));
        }
        // Every tensor of the file is one of these: a tensor the architecture does not use
        // would be ignored, and the model run half-understood (as llama.cpp, which refuses
        // a file whose tensor count is not its own).
        if let Some(t) = g
            .tensors()
            .iter()
            .find(|t| !expected.iter().any(|(n, _)| *n == t.name))
        {
            return Err(Error::unsupported_model(
                ModelFile::Decoder,
                Some(At::Tensor(t.name.clone())),
                format!("not a tensor of the {} architecture", config.arch.name()),
            ));
        }
        let mut infos: Vec<WeightInfo> = Vec::with_capacity(expected.len());
        for (name, want) in &expected {
            let t = g.tensor(name).ok_or_else(|| tensor_err(name, "missing"))?;
            if &t.ne != want {
                return Err(tensor_err(
                    name,
                    format!("shape {:?}, expected {want:?}", t.ne),
                ));
            }
            let vector = want.len() == 1;
            if vector && t.dtype != DType::F32 {
                return Err(tensor_err(
                    name,
                    format!("{}; norms, biases and RoPE factors must be f32", t.dtype),
                ));
            }
            infos.push(WeightInfo {
                name: name.clone(),
                dtype: t.dtype,
                ne: t.ne.clone(),
                ranges: vec![g.tensor_range(t)],
            });
        }
        let infos = join_projections(infos, config.n_layer);
        // Each weight lives where the runtime's own plan of a one-token step runs its ops
        // (the cache as plain inputs here: its home follows the layer's weights).
        let mut probe = Program::new();
        let ids = infos
            .iter()
            .map(|w| probe.graph_mut().weight(&w.name, w.dtype, &w.ne))
            .collect::<Result<Vec<_>>>()?;
        let kv_ne = [config.head_dim, n_ctx + 1, config.n_head_kv];
        let mut caches = Vec::new();
        for i in 0..config.n_layer {
            let g = probe.graph_mut();
            caches.push((
                g.input(&format!("cache_k.{i}"), DType::F32, &kv_ne)?,
                g.input(&format!("cache_v.{i}"), DType::F32, &kv_ne)?,
            ));
        }
        build(
            &config,
            &mut probe,
            &ids,
            &caches,
            n_ctx,
            1,
            KV_STEP.min(n_ctx),
            false,
            true,
        )?;
        let homes = rt.weight_homes(probe.graph())?;
        let by_name: HashMap<&str, TensorId> = infos
            .iter()
            .map(|w| w.name.as_str())
            .zip(ids.iter().copied())
            .collect();
        let home = |name: &str| -> Result<usize> {
            let id = by_name
                .get(name)
                .ok_or_else(|| tensor_err(name, "missing"))?;
            homes
                .get(id)
                .copied()
                .ok_or_else(|| Error::Graph(format!("weight {name} has no device to live on")))
        };
        let matrix = matrix_only(probe.graph());
        let specs = infos
            .iter()
            .zip(&ids)
            .map(|(w, &id)| {
                Ok(WeightSpec {
                    name: w.name.clone(),
                    device: home(&w.name)?,
                    dtype: w.dtype,
                    ne: w.ne.clone(),
                    ranges: w.ranges.clone(),
                    matrix_only: matrix.contains(&id),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut cache = Vec::with_capacity(config.n_layer);
        for i in 0..config.n_layer {
            // The cache lives with the layer's K projection (alone, or joined with Q and V).
            let d = home(&format!("blk.{i}.attn_k.weight"))
                .or_else(|_| home(&format!("blk.{i}.{QKV}.weight")))?;
            let dtype = match opts.kv_dtype {
                Some(dt @ (DType::F32 | DType::F16)) => dt,
                Some(other) => {
                    return Err(Error::InvalidArgument(format!(
                        "the KV cache is f32 or f16, not {}",
                        other.name()
                    )))
                }
                None if rt.device_is_cpu(d) => DType::F16,
                None => DType::F32,
            };
            cache.push((
                rt.create_state(&format!("cache_k.{i}"), dtype, &kv_ne, d)?,
                rt.create_state(&format!("cache_v.{i}"), dtype, &kv_ne, d)?,
            ));
        }
        let mut fused = opts.fused_attention;
        for dtype in [DType::F32, DType::F16] {
            if fused && cache.iter().any(|(k, _)| k.dtype() == dtype) {
                fused = super::attention_runs_everywhere(
                    rt,
                    config.head_dim,
                    config.n_head,
                    config.n_head_kv,
                    dtype,
                )?;
            }
        }
        let stored = rt.store_weights(&specs, src, progress)?;
        // Every bucket's session stays cached: (chunk sizes, decode, a full chunk without
        // logits) × (attended lengths).
        let chunks = chunk_sizes(opts.batch.min(n_ctx)).len() + 2;
        rt.reserve_cached_sessions(chunks * n_ctx.div_ceil(KV_STEP));
        Ok(Self {
            config,
            tokenizer,
            chat,
            weights: infos.into_iter().map(|w| w.name).zip(stored).collect(),
            cache,
            n_ctx,
            batch: opts.batch.min(n_ctx),
            history: Vec::new(),
            programs: RefCell::new(HashMap::new()),
            last_shape: std::cell::Cell::new(None),
            fused,
        })
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &DecoderConfig {
        &self.config
    }

    /// The tokenizer the file names (`None` when it has no `tokenizer.*` keys).
    pub fn tokenizer(&self) -> Option<&Tokenizer> {
        self.tokenizer.as_deref()
    }

    /// The file's chat template (`tokenizer.chat_template`), if it has one.
    pub fn chat_template(&self) -> Option<&ChatTemplate> {
        self.chat.as_ref()
    }

    /// The prompt ids of a conversation: the chat template rendered with the generation
    /// prompt, tokenized with control tokens matched (and BOS added when the model asks for
    /// it and the template did not write it). A file without a template says so.
    pub fn chat_prompt(&self, messages: &[crate::model::chat::ChatMessage]) -> Result<Vec<u32>> {
        // An empty conversation would run the template's default system prompt alone: the
        // model answering a question nobody asked.
        if messages.is_empty() {
            return Err(Error::InvalidArgument(
                "no messages: a chat needs at least one { role, content }".into(),
            ));
        }
        let t = self.chat.as_ref().ok_or_else(|| {
            Error::InvalidArgument(
                "the model file has no chat template (tokenizer.chat_template): give a prompt"
                    .into(),
            )
        })?;
        let tok = self
            .tokenizer()
            .ok_or_else(|| Error::InvalidArgument("the model file has no tokenizer".into()))?;
        let text = t.render(messages, true)?;
        let bos = tok.specials().bos.and_then(|b| tok.token(b));
        let has_bos = bos.is_some_and(|b| !b.is_empty() && text.starts_with(b));
        Ok(tok.encode(&text, !has_bos, true))
    }

    /// The tokenizer, shared (for a streaming decoder that outlives a borrow of the model).
    pub fn tokenizer_rc(&self) -> Option<Rc<Tokenizer>> {
        self.tokenizer.clone()
    }

    /// The tokens in the cache, in order.
    pub fn tokens(&self) -> &[u32] {
        &self.history
    }

    /// The context length (cache rows).
    pub fn context(&self) -> usize {
        self.n_ctx
    }

    /// Tokens in the cache (the next token's position).
    pub fn len(&self) -> usize {
        self.history.len()
    }

    /// Whether the cache holds no token.
    pub fn is_empty(&self) -> bool {
        self.history.is_empty()
    }

    /// The KV cache's states, (K, V) per layer.
    pub fn cache(&self) -> &[(State, State)] {
        &self.cache
    }

    /// Forgets every token (the cache's rows are overwritten as new tokens come).
    pub fn reset(&mut self) {
        self.history.clear();
    }

    /// Drops tokens past `len` (a conversation rewound to a shared prefix).
    pub fn truncate(&mut self, len: usize) {
        self.history.truncate(len);
    }

    /// Runs `ids` after the tokens in the cache (in chunks of at most the prefill batch);
    /// returns the logits after the last one. Nothing runs, and the cache is as it was, when
    /// an id is outside the vocabulary or the tokens do not fit the context. A failed run
    /// leaves the tokens before its chunk in place ([`Decoder::len`] says how many).
    pub async fn prefill(&mut self, rt: &Runtime, ids: &[u32]) -> Result<Vec<f32>> {
        if ids.is_empty() {
            return Err(Error::InvalidArgument(
                "prefill needs at least one token".into(),
            ));
        }
        if let Some(&bad) = ids.iter().find(|&&t| t as usize >= self.config.n_vocab) {
            return Err(Error::InvalidArgument(format!(
                "token {bad} is outside the {}-token vocabulary",
                self.config.n_vocab
            )));
        }
        if self.len() + ids.len() > self.n_ctx {
            return Err(Error::InvalidArgument(format!(
                "{} tokens after {} do not fit the context of {}",
                ids.len(),
                self.len(),
                self.n_ctx
            )));
        }
        // Only the last chunk's logits are read: the others' graphs end at the last layer's
        // cache writes.
        let (rest, last) = ids.split_at((ids.len() - 1) / self.batch * self.batch);
        for chunk in rest.chunks(self.batch) {
            self.run_chunk(rt, chunk, false).await?;
        }
        self.run_chunk(rt, last, true).await
    }

    /// Runs one decode step on an empty cache and forgets it, so that what a first run
    /// prepares once happens now, at load, not in the first answer's time: the CPU's weights
    /// regrouped for the integer kernels, WebGPU's pipelines, the step's plan. Does nothing
    /// when the cache holds tokens.
    pub async fn warm_up(&mut self, rt: &Runtime) -> Result<()> {
        if !self.is_empty() {
            return Ok(());
        }
        let first = self.step(rt, 0).await;
        self.reset();
        first.map(|_| ())
    }

    /// Runs one token after the cache's; returns the logits for the next.
    pub async fn step(&mut self, rt: &Runtime, id: u32) -> Result<Vec<f32>> {
        self.prefill(rt, &[id]).await
    }

    /// Greedy generation: `n` tokens after `prompt` (run after what the cache holds),
    /// stopping early at the context's end.
    pub async fn generate(&mut self, rt: &Runtime, prompt: &[u32], n: usize) -> Result<Vec<u32>> {
        let mut logits = self.prefill(rt, prompt).await?;
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let next = argmax(&logits);
            out.push(next);
            if out.len() == n || self.len() >= self.n_ctx {
                break;
            }
            logits = self.step(rt, next).await?;
        }
        Ok(out)
    }

    /// The program of a chunk of `t` tokens attending over `n_kv` rows (built once): with
    /// `logits`, its output is the last token's logits; without, it only writes the cache.
    pub fn program(&self, t: usize, n_kv: usize, logits: bool) -> Result<Program> {
        if let Some(p) = self.programs.borrow().get(&(t, n_kv, logits)) {
            return Ok(p.clone());
        }
        let mut p = Program::new();
        let ids = self
            .weights
            .iter()
            .map(|(name, w)| p.weight_stored(name, w))
            .collect::<Result<Vec<_>>>()?;
        let caches = self
            .cache
            .iter()
            .map(|(k, v)| Ok((p.state(k)?, p.state(v)?)))
            .collect::<Result<Vec<_>>>()?;
        build(
            &self.config,
            &mut p,
            &ids,
            &caches,
            self.n_ctx,
            t,
            n_kv,
            self.fused,
            logits,
        )?;
        self.programs
            .borrow_mut()
            .insert((t, n_kv, logits), p.clone());
        Ok(p)
    }

    /// The plan of the shape run last (a decode step once one ran), or a note that nothing
    /// ran yet.
    pub fn explain(&self, rt: &Runtime) -> Result<String> {
        match self.last_shape.get() {
            Some((t, n_kv)) => Ok(format!(
                "{t} token(s) over {n_kv} cache rows\n{}",
                rt.explain(&self.program(t, n_kv, true)?)?
            )),
            None => Ok("nothing run yet".into()),
        }
    }

    /// The (chunk, attended rows) shape that runs `n` tokens after the cache's.
    fn shape(&self, n: usize) -> (usize, usize) {
        let t = if n == 1 {
            1
        } else {
            n.next_power_of_two()
                .clamp(MIN_CHUNK, self.batch.max(MIN_CHUNK))
        };
        let n_kv = (self.len() + n).next_multiple_of(KV_STEP).min(self.n_ctx);
        (t, n_kv)
    }

    /// Runs one chunk; returns its last token's logits when `logits` (else nothing, an
    /// empty vector: the program only writes the cache).
    async fn run_chunk(&mut self, rt: &Runtime, ids: &[u32], logits: bool) -> Result<Vec<f32>> {
        let n = ids.len();
        let (t, n_kv) = self.shape(n);
        let program = self.program(t, n_kv, logits)?;
        if logits {
            self.last_shape.set(Some((t, n_kv)));
        }
        let start = self.len();
        let mut tokens = vec![0i32; t];
        let mut pos = vec![0i32; t];
        let mut rows = vec![self.n_ctx as i32; t];
        // The fused op skips keys masked with -inf; the unfused softmax takes a large finite
        // value (no row is masked whole either way: padding rows see row 0).
        let masked = if self.fused {
            f32::NEG_INFINITY
        } else {
            MASKED
        };
        let mut mask = vec![masked; n_kv * t];
        for i in 0..t {
            if i < n {
                let p = start + i;
                tokens[i] = ids[i] as i32;
                pos[i] = p as i32;
                rows[i] = p as i32;
                mask[i * n_kv..i * n_kv + p + 1].fill(0.0);
            } else {
                // Padding: writes the scratch row, attends to row 0, is never read.
                mask[i * n_kv] = 0.0;
            }
        }
        let last = [(n - 1) as i32];
        let inputs = HashMap::from([
            ("tokens".to_string(), bytemuck::cast_slice(&tokens).to_vec()),
            ("pos".to_string(), bytemuck::cast_slice(&pos).to_vec()),
            ("rows".to_string(), bytemuck::cast_slice(&rows).to_vec()),
            ("mask".to_string(), bytemuck::cast_slice(&mask).to_vec()),
            ("last".to_string(), bytemuck::cast_slice(&last).to_vec()),
        ]);
        let outs = rt.run(&program, &inputs).await?;
        let read = match (logits, outs.into_iter().next()) {
            (false, _) => Vec::new(),
            (true, None) => {
                return Err(Error::Graph("the decoder graph has no output".into()));
            }
            (true, Some((_, _, bytes))) if bytes.len() != self.config.n_vocab * 4 => {
                return Err(Error::Graph(format!(
                    "logits have {} bytes, expected {}",
                    bytes.len(),
                    self.config.n_vocab * 4
                )));
            }
            (true, Some((_, _, bytes))) => bytemuck::pod_collect_to_vec(&bytes),
        };
        self.history.extend_from_slice(ids);
        Ok(read)
    }
}

/// The prefill chunk sizes below `batch` (powers of two from [`MIN_CHUNK`]) and `batch`.
fn chunk_sizes(batch: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (3..)
        .map(|s| 1usize << s)
        .take_while(|&c| c < batch)
        .collect();
    v.push(batch.max(MIN_CHUNK));
    v
}

/// Index of the largest value (the first on ties; NaN never, 0 when nothing is above -inf):
/// [`crate::model::sampler::first_max`].
pub fn argmax(v: &[f32]) -> u32 {
    crate::model::sampler::first_max(v).unwrap_or(0)
}

/// Adds the graph of a chunk of `t` tokens attending over the first `n_kv` cache rows to
/// `p`, whose weights `ids` are in the loader's order and whose caches are `[head_dim,
/// n_ctx + 1, n_head_kv]` per layer (states, or inputs in a probe).
///
/// Inputs: `tokens`, `pos` (RoPE positions) and `rows` (cache rows written) I32 `[t]`;
/// `mask` f32 `[n_kv, t]` (0 where a token sees a row, a large negative value elsewhere);
/// `last` I32 `[1]`, the token whose logits are read. Output: `logits` f32 `[n_vocab, 1]`,
/// or, without `logits`, none: the graph writes the caches and ends at the last layer's K/V.
/// The last layer computes only what the logits need past its cache writes: the `last`
/// token's query, attention row, output projection and feed-forward (llama.cpp's
/// `inp_out_ids`), not the chunk's other `t - 1`.
/// Attention is the fused op when `fused`, matmuls and a softmax otherwise.
#[allow(clippy::too_many_arguments)]
fn build(
    c: &DecoderConfig,
    p: &mut Program,
    ids: &[TensorId],
    caches: &[(TensorId, TensorId)],
    n_ctx: usize,
    t: usize,
    n_kv: usize,
    fused: bool,
    logits: bool,
) -> Result<()> {
    let w: HashMap<String, TensorId> = ids
        .iter()
        .map(|&id| (p.graph().tensor(id).name.clone(), id))
        .collect();
    let get = |name: &str| {
        w.get(name)
            .copied()
            .ok_or_else(|| Error::Graph(format!("weight {name} not loaded")))
    };
    let (hd, nh, nkv) = (c.head_dim, c.n_head, c.n_head_kv);
    let g = p.graph_mut();
    let tokens = g.input("tokens", DType::I32, &[t])?;
    let pos = g.input("pos", DType::I32, &[t])?;
    let rows = g.input("rows", DType::I32, &[t])?;
    let mask = g.input("mask", DType::F32, &[n_kv, t])?;
    let last = g.input("last", DType::I32, &[1])?;
    let norm = |g: &mut Graph, x: TensorId, weight: &str| -> Result<TensorId> {
        let y = g.rms_norm(x, c.eps)?;
        g.mul(y, get(weight)?)
    };
    let scale = 1.0 / (hd as f32).sqrt();
    // Llama 3's RoPE factors, where the file has them (every layer's rope reads them).
    let freqs = w.get(ROPE_FREQS).copied();
    let mut x = g.get_rows(get("token_embd.weight")?, tokens)?;
    // The last layer carries only the `last` token's row past its cache writes (a chunk of
    // several whose logits are read).
    let select = logits && t > 1;
    for (i, &(kc, vc)) in caches.iter().enumerate() {
        let b = |s: &str| format!("blk.{i}.{s}");
        let last_layer = i + 1 == caches.len();
        let h = norm(g, x, &b("attn_norm.weight"))?;
        // Q, K and V as [hd, heads, t]: from one joined projection (views of its rows, see
        // `join_projections`), or each from its own.
        let qkv = match w.get(&b(&format!("{QKV}.weight"))) {
            Some(&wqkv) => {
                let mut y = g.matmul(wqkv, h)?; // [(nh + 2 nkv) hd, t]
                if let Some(&bias) = w.get(&b(&format!("{QKV}.bias"))) {
                    y = g.add(y, bias)?;
                }
                let [e, row, ..] = g.tensor(y).nb;
                let heads = |g: &mut Graph, n: usize, first: usize| {
                    g.view(y, &[hd, n, t], &[e, e * hd, row], e * hd * first)
                };
                Some([
                    heads(g, nh, 0)?,
                    heads(g, nkv, nh)?,
                    heads(g, nkv, nh + nkv)?,
                ])
            }
            None => None,
        };
        let proj = |g: &mut Graph, name: &str, heads: usize| -> Result<TensorId> {
            if let Some(qkv) = qkv {
                let part = ["attn_q", "attn_k", "attn_v"]
                    .iter()
                    .position(|p| *p == name)
                    .ok_or_else(|| Error::Graph(format!("no projection {name}")))?;
                let mut y = qkv[part];
                if let Some(&bias) = w.get(&b(&format!("{name}.bias"))) {
                    let bias = g.reshape(bias, &[hd, heads])?;
                    y = g.add(y, bias)?;
                }
                return Ok(y);
            }
            let mut y = g.matmul(get(&b(&format!("{name}.weight")))?, h)?;
            if c.arch == Arch::Qwen2 {
                y = g.add(y, get(&b(&format!("{name}.bias")))?)?;
            }
            g.reshape(y, &[hd, heads, t])
        };
        let mut k = proj(g, "attn_k", nkv)?;
        let v = proj(g, "attn_v", nkv)?;
        if c.arch == Arch::Qwen3 {
            k = norm(g, k, &b("attn_k_norm.weight"))?;
        }
        let k = g.rope(k, pos, freqs, c.rope)?;
        // [hd, heads, t] → [hd, t, heads]: rows by token within each head.
        let by_token = [0, 2, 1, 3];
        let k = g.permute(k, by_token)?;
        let v = g.permute(v, by_token)?;
        let kc = g.set_rows(kc, k, rows)?;
        let vc = g.set_rows(vc, v, rows)?;
        if last_layer && !logits {
            return Ok(());
        }
        let mut q = proj(g, "attn_q", nh)?;
        if c.arch == Arch::Qwen3 {
            q = norm(g, q, &b("attn_q_norm.weight"))?;
        }
        let q = g.rope(q, pos, freqs, c.rope)?;
        // Selected: the `last` token's query row, mask row and residual.
        let (q, mask, tq) = if last_layer && select {
            let q = g.reshape(q, &[hd * nh, t])?;
            let q = g.get_rows(q, last)?;
            x = g.get_rows(x, last)?;
            (g.reshape(q, &[hd, nh, 1])?, g.get_rows(mask, last)?, 1)
        } else {
            (q, mask, t)
        };
        let es = g.tensor(kc).dtype.block_bytes();
        let head_bytes = (n_ctx + 1) * hd * es;
        let keys = g.view(kc, &[hd, n_kv, nkv], &[es, hd * es, head_bytes], 0)?;
        let q = g.permute(q, by_token)?;
        let o = if fused {
            let values = g.view(vc, &[hd, n_kv, nkv], &[es, hd * es, head_bytes], 0)?;
            // [hd, nh, t]: each token's heads side by side.
            g.attention(q, keys, values, Some(mask), scale)?
        } else {
            // V transposed through strides: [n_kv, hd, heads], element j of row d at row j.
            let values_t = g.view(vc, &[n_kv, hd, nkv], &[hd * es, es, head_bytes], 0)?;
            // [n_kv, t, nh]: head h reads KV head h / (nh / nkv).
            let scores = g.matmul(keys, q)?;
            let probs = g.softmax(scores, Some(mask), scale)?;
            let o = g.matmul(values_t, probs)?; // [hd, t, nh]
            let o = g.permute(o, by_token)?;
            g.cont(o)?
        };
        let o = g.reshape(o, &[hd * nh, tq])?;
        let o = g.matmul(get(&b("attn_output.weight"))?, o)?;
        x = g.add(x, o)?;
        let h = norm(g, x, &b("ffn_norm.weight"))?;
        let (gate, up) = match w.get(&b(&format!("{GATE_UP}.weight"))) {
            Some(&wgu) => {
                // [2 n_ff, tq]: each token's gate then up values.
                let y = g.matmul(wgu, h)?;
                let [e, row, ..] = g.tensor(y).nb;
                let n = g.tensor(y).ne[1];
                let half =
                    |g: &mut Graph, i: usize| g.view(y, &[c.n_ff, n], &[e, row], e * c.n_ff * i);
                (half(g, 0)?, half(g, 1)?)
            }
            None => (
                g.matmul(get(&b("ffn_gate.weight"))?, h)?,
                g.matmul(get(&b("ffn_up.weight"))?, h)?,
            ),
        };
        let gate = g.silu(gate)?;
        let y = g.mul(gate, up)?;
        let y = g.matmul(get(&b("ffn_down.weight"))?, y)?;
        x = g.add(x, y)?;
    }
    if !select {
        x = g.get_rows(x, last)?;
    }
    let x = norm(g, x, "output_norm.weight")?;
    let out = if c.tied {
        "token_embd.weight"
    } else {
        "output.weight"
    };
    let logits = g.matmul(get(out)?, x)?;
    g.set_name(logits, "logits")?;
    g.set_output(logits)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, dtype: DType, ne: &[usize], at: usize) -> WeightInfo {
        WeightInfo {
            name: name.into(),
            dtype,
            ne: ne.to_vec(),
            ranges: std::iter::once(at..at + 10).collect(),
        }
    }

    #[test]
    fn projections_join_only_where_their_parts_share_a_dtype() {
        // Layer 0: Q, K, V (with biases) and gate, up all Q8_0; layer 1: V in Q6_K (a
        // Q4_K_M file's mix), gate and up Q4_K.
        let q = DType::Q8_0;
        let mut infos = vec![info("token_embd.weight", q, &[64, 100], 0)];
        for (i, dv, dgu) in [(0, q, q), (1, DType::Q6_K, DType::Q4_K)] {
            let b = |s: &str| format!("blk.{i}.{s}");
            let at = 1000 * (i + 1);
            infos.extend([
                info(&b("attn_norm.weight"), DType::F32, &[64], at),
                info(&b("attn_q.weight"), q, &[64, 64], at + 10),
                info(&b("attn_k.weight"), q, &[64, 16], at + 20),
                info(&b("attn_v.weight"), dv, &[64, 16], at + 30),
                info(&b("attn_output.weight"), q, &[64, 64], at + 40),
                info(&b("ffn_gate.weight"), dgu, &[64, 96], at + 50),
                info(&b("ffn_up.weight"), dgu, &[64, 96], at + 60),
                info(&b("ffn_down.weight"), q, &[96, 64], at + 70),
                info(&b("attn_q.bias"), DType::F32, &[64], at + 80),
                info(&b("attn_k.bias"), DType::F32, &[16], at + 90),
                info(&b("attn_v.bias"), DType::F32, &[16], at + 100),
            ]);
        }
        let out = join_projections(infos, 2);
        let names: Vec<&str> = out.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "token_embd.weight",
                "blk.0.attn_norm.weight",
                "blk.0.attn_qkv.weight",
                "blk.0.attn_output.weight",
                "blk.0.ffn_gate_up.weight",
                "blk.0.ffn_down.weight",
                "blk.0.attn_qkv.bias",
                "blk.1.attn_norm.weight",
                "blk.1.attn_q.weight",
                "blk.1.attn_k.weight",
                "blk.1.attn_v.weight",
                "blk.1.attn_output.weight",
                "blk.1.ffn_gate_up.weight",
                "blk.1.ffn_down.weight",
                "blk.1.attn_q.bias",
                "blk.1.attn_k.bias",
                "blk.1.attn_v.bias",
            ]
        );
        let by = |n: &str| out.iter().find(|w| w.name == n).cloned();
        let qkv = by("blk.0.attn_qkv.weight").expect("joined");
        assert_eq!((qkv.dtype, qkv.ne.clone()), (DType::Q8_0, vec![64, 96]));
        assert_eq!(qkv.ranges, vec![1010..1020, 1020..1030, 1030..1040]);
        let bias = by("blk.0.attn_qkv.bias").expect("joined");
        assert_eq!(bias.ne, vec![96]);
        assert_eq!(bias.ranges, vec![1080..1090, 1090..1100, 1100..1110]);
        let gu = by("blk.1.ffn_gate_up.weight").expect("joined");
        assert_eq!((gu.dtype, gu.ne.clone()), (DType::Q4_K, vec![64, 192]));
        assert_eq!(gu.ranges, vec![2050..2060, 2060..2070]);
    }
}
