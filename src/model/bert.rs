//! BERT sentence embeddings (all-MiniLM-L6-v2 and its kin) from a GGUF file in llama.cpp's
//! `bert` layout: WordPiece tokens → encoder graph → mean pooling over real tokens → L2
//! normalization, the sentence-transformers recipe.
//!
//! Texts are tokenized on the host, sorted by length and run in batches of at most
//! [`MAX_BATCH`] sequences padded to a bucketed length (8, or a multiple of [`SEQ_STEP`]: at
//! most 15 padding tokens, where powers of two padded 129 tokens to 256), so only a few
//! graph shapes exist; the runtime keeps each shape's plan and memory (its session cache), so
//! building a batch's [`Program`] again is cheap and the model keeps no cache of its own.
//! Padding is masked out of attention with a large negative score and out of pooling with
//! zero weights, so a text's embedding does not depend on what it is batched with.
//!
//! Loading stores the weights once on the runtime's devices, read straight from the file a
//! chunk at a time ([`Runtime::store_weights`]), each on the device the runtime's own plan
//! (cost model included) runs its ops on; every shape's program binds those same buffers, so
//! the model's memory is one copy of its weights (plus a copy made once on a second device,
//! should another shape's plan read a weight there) and each shape's activations.

use std::cell::Cell;
use std::collections::HashMap;

use crate::error::{At, Error, ModelFile, Result};
use crate::graph::{DType, Graph, TensorId};
use crate::model::gguf::{Gguf, TensorInfo};
use crate::model::tokenizer::WordPiece;
use crate::model::WeightInfo;

use crate::runtime::{matrix_only, ByteSource, Program, Runtime, StoredWeight, WeightSpec};

/// Sequences per encoder run; longer lists are split (the last batch padded with short
/// dummy sequences, so the shape repeats).
pub const MAX_BATCH: usize = 8;
/// The shape (batch, tokens) whose plan decides where each weight is stored.
const HOME_SHAPE: (usize, usize) = (1, 32);
/// Added to attention scores of padding keys: exp() of it underflows to exactly 0.
const MASKED: f32 = -1e9;
/// Shortest padded sequence length.
const MIN_SEQ: usize = 8;
/// Longer sequences are padded to a multiple of this.
pub const SEQ_STEP: usize = 16;

fn format_err(what: impl Into<String>) -> Error {
    Error::model(ModelFile::Bert, what)
}

fn tensor_err(name: &str, what: impl Into<String>) -> Error {
    Error::model_at(ModelFile::Bert, At::Tensor(name.into()), what)
}

/// BERT's hyper-parameters, from the GGUF's `bert.*` keys.
#[derive(Clone, Debug, PartialEq)]
pub struct BertConfig {
    /// Encoder layers (`bert.block_count`).
    pub n_layer: usize,
    /// Hidden size (`bert.embedding_length`).
    pub n_embd: usize,
    /// Attention heads (`bert.attention.head_count`).
    pub n_head: usize,
    /// Feed-forward size (`bert.feed_forward_length`, else from `ffn_up`'s shape).
    pub n_ff: usize,
    /// Position embeddings (`bert.context_length`).
    pub n_ctx: usize,
    /// Layer norm epsilon (`bert.attention.layer_norm_epsilon`).
    pub eps: f32,
    /// Vocabulary size (rows of `token_embd`).
    pub n_vocab: usize,
}

/// Weights the engine stores as one that files may hold as parts, joined along their
/// outermost dim: a layer's Q, K and V projections (and their biases) as one QKV
/// projection, as llama.cpp fuses them (`wqkv`). One matmul then reads the layer's input
/// once (quantized once, in the int8 kernels), gives the threads 3 times the work per cut, and
/// costs a third of the dispatches; Q, K and V are views of its output.
const JOINED: [(&str, [&str; 3]); 2] = [
    (
        "attn_qkv.weight",
        ["attn_q.weight", "attn_k.weight", "attn_v.weight"],
    ),
    (
        "attn_qkv.bias",
        ["attn_q.bias", "attn_k.bias", "attn_v.bias"],
    ),
];

/// Sentence embeddings from a BERT GGUF: tokenizer, weights and per-shape encoder graphs.
pub struct SentenceEmbedder {
    config: BertConfig,
    tokenizer: WordPiece,
    /// Each weight's name and its value stored on a device of the runtime it was loaded on.
    weights: Vec<(String, StoredWeight)>,
    max_tokens: usize,
    /// Whether attention is the fused op.
    fused: bool,
    /// Whether every device runs the fused op.
    fused_runs: bool,
    /// The (batch, tokens) shape run last, for `explain`.
    last_shape: Cell<Option<(usize, usize)>>,
}

impl std::fmt::Debug for SentenceEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceEmbedder")
            .field("config", &self.config)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

/// Names of layer `i`'s weights, in the order the graph builder uses them (`attn_qkv`: the
/// file's own, or its `attn_q`, `attn_k` and `attn_v` joined, see [`JOINED`]).
fn layer_names(i: usize) -> [String; 12] {
    [
        "attn_qkv.weight",
        "attn_qkv.bias",
        "attn_output.weight",
        "attn_output.bias",
        "attn_output_norm.weight",
        "attn_output_norm.bias",
        "ffn_up.weight",
        "ffn_up.bias",
        "ffn_down.weight",
        "ffn_down.bias",
        "layer_output_norm.weight",
        "layer_output_norm.bias",
    ]
    .map(|s| format!("blk.{i}.{s}"))
}

/// Weight `name` as the file holds it, or, for one of [`JOINED`] the file does not hold,
/// its parts joined along their outermost dim (all of one dtype and shape).
fn joined(g: &Gguf, name: &str) -> Result<WeightInfo> {
    let info = |name: &str, t: &TensorInfo| WeightInfo {
        name: name.to_string(),
        dtype: t.dtype,
        ne: t.ne.clone(),
        ranges: vec![g.tensor_range(t)],
    };
    if let Some(t) = g.tensor(name) {
        return Ok(info(name, t));
    }
    let Some((prefix, parts)) = JOINED
        .iter()
        .find_map(|(j, parts)| Some((name.strip_suffix(j)?, parts)))
    else {
        return Err(tensor_err(name, "missing"));
    };
    let mut tensors = Vec::with_capacity(parts.len());
    for p in parts {
        let part = format!("{prefix}{p}");
        let t = g.tensor(&part).ok_or_else(|| {
            tensor_err(&part, format!("missing (neither it nor {name} is there)"))
        })?;
        tensors.push((part, t));
    }
    let first = tensors[0].1;
    for (part, t) in &tensors[1..] {
        if t.dtype != first.dtype || t.ne != first.ne {
            return Err(tensor_err(
                part,
                format!(
                    "{} {:?}, unlike {} {:?} of the other parts of {name}",
                    t.dtype, t.ne, first.dtype, first.ne
                ),
            ));
        }
    }
    let parts: Vec<WeightInfo> = tensors.iter().map(|(p, t)| info(p, t)).collect();
    WeightInfo::join(name.to_string(), &parts.iter().collect::<Vec<_>>())
        .ok_or_else(|| tensor_err(name, "parts that do not join"))
}

impl SentenceEmbedder {
    /// Loads a GGUF file (`general.architecture` = `bert`, a WordPiece vocabulary) onto
    /// `rt`'s devices; embed with the same runtime.
    pub fn load(rt: &Runtime, bytes: &[u8]) -> Result<Self> {
        Self::load_from(rt, &bytes, &mut |_, _| {})
    }

    /// Loads from any [`ByteSource`]: its header is parsed from its first bytes, then each
    /// weight is copied a chunk at a time into the device buffer that keeps it (the device
    /// running the ops that read it), with `progress(done, total)` in weight bytes.
    pub fn load_from(
        rt: &Runtime,
        src: &dyn ByteSource,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Self> {
        let g = super::read_header(src)?;
        let arch = g.get_str("general.architecture")?;
        if arch != "bert" {
            return Err(Error::unsupported_model(
                ModelFile::Bert,
                Some(At::Key("general.architecture".into())),
                format!("architecture {arch:?} is not supported (only \"bert\" is)"),
            ));
        }
        let tokenizer = WordPiece::from_gguf(&g)?;
        let tensor = |name: &str| g.tensor(name).ok_or_else(|| tensor_err(name, "missing"));
        let embd = tensor("token_embd.weight")?;
        let n_embd = g.get_usize("bert.embedding_length")?;
        let n_vocab = *embd.ne.get(1).unwrap_or(&1);
        let ff = tensor("blk.0.ffn_up.weight")?;
        let config = BertConfig {
            n_layer: g.get_usize("bert.block_count")?,
            n_embd,
            n_head: g.get_usize("bert.attention.head_count")?,
            n_ff: g
                .get_usize("bert.feed_forward_length")
                .unwrap_or(*ff.ne.get(1).unwrap_or(&0)),
            n_ctx: g.get_usize("bert.context_length")?,
            eps: g.get_f32("bert.attention.layer_norm_epsilon")?,
            n_vocab,
        };
        let (h, ff, ctx) = (config.n_embd, config.n_ff, config.n_ctx);
        if config.n_layer == 0 || config.n_head == 0 || h == 0 || h % config.n_head != 0 {
            return Err(format_err(format!(
                "{} heads do not divide hidden size {h} (or a size is 0)",
                config.n_head
            )));
        }
        if n_vocab != tokenizer.len() {
            return Err(tensor_err(
                "token_embd.weight",
                format!("{n_vocab} rows, the vocabulary {} tokens", tokenizer.len()),
            ));
        }
        let mut expected: Vec<(String, Vec<usize>)> = vec![
            ("token_embd.weight".into(), vec![h, n_vocab]),
            ("position_embd.weight".into(), vec![h, ctx]),
            ("token_types.weight".into(), vec![h, 0]),
            ("token_embd_norm.weight".into(), vec![h]),
            ("token_embd_norm.bias".into(), vec![h]),
        ];
        for i in 0..config.n_layer {
            let shapes = [
                vec![h, 3 * h],
                vec![3 * h],
                vec![h, h],
                vec![h],
                vec![h],
                vec![h],
                vec![h, ff],
                vec![ff],
                vec![ff, h],
                vec![h],
                vec![h],
                vec![h],
            ];
            expected.extend(layer_names(i).into_iter().zip(shapes));
        }
        let mut weights = Vec::with_capacity(expected.len());
        for (name, want) in expected {
            let WeightInfo {
                dtype,
                mut ne,
                mut ranges,
                ..
            } = joined(&g, &name)?;
            // token_types: any number of types (0 in `want` matches any count ≥ 1).
            let fits = ne.len() == want.len()
                && ne
                    .iter()
                    .zip(&want)
                    .all(|(&a, &b)| a == b || (b == 0 && a > 0));
            if !fits {
                return Err(tensor_err(
                    &name,
                    format!("shape {ne:?}, expected {want:?}"),
                ));
            }
            let is_matmul = name.starts_with("blk.") && want.len() == 2;
            if !is_matmul && dtype != DType::F32 && !name.ends_with("embd.weight") {
                return Err(tensor_err(
                    &name,
                    format!("{dtype}; biases and norms must be f32"),
                ));
            }
            if name == "token_types.weight" {
                // Only type 0 is used: keep its row as a vector added to every token.
                ranges[0].end = ranges[0].start + dtype.row_bytes(h)?;
                ne = vec![h];
            }
            weights.push(WeightInfo {
                name,
                dtype,
                ne,
                ranges,
            });
        }
        if weights
            .iter()
            .any(|w| w.name == "token_types.weight" && w.dtype != DType::F32)
        {
            return Err(tensor_err("token_types.weight", "must be f32"));
        }
        let max_tokens = g
            .get_usize("sentence_transformers.max_seq_length")
            .unwrap_or(ctx)
            .clamp(3, ctx.max(3));
        // Each weight lives on the device that runs the ops reading it in the runtime's plan of
        // a typical shape (the same placement, cost model included, that runs use), stored
        // there once.
        let mut probe = Program::new();
        let ids = weights
            .iter()
            .map(|w| probe.graph_mut().weight(&w.name, w.dtype, &w.ne))
            .collect::<Result<Vec<_>>>()?;
        let (batch, seq) = HOME_SHAPE;
        build_encoder(
            &config,
            &mut probe,
            &ids,
            batch,
            seq.min(config.n_ctx),
            false,
        )?;
        let homes = rt.weight_homes(probe.graph())?;
        let matrix = matrix_only(probe.graph());
        let specs = weights
            .iter()
            .zip(&ids)
            .map(|(w, id)| {
                let device = *homes.get(id).ok_or_else(|| {
                    Error::Graph(format!("weight {} has no device to live on", w.name))
                })?;
                Ok(WeightSpec {
                    name: w.name.clone(),
                    device,
                    dtype: w.dtype,
                    ne: w.ne.clone(),
                    ranges: w.ranges.clone(),
                    matrix_only: matrix.contains(id),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let (h, nh) = (config.n_embd, config.n_head);
        let fused = super::attention_runs_everywhere(rt, h / nh, nh, nh, DType::F32)?;
        let stored = rt.store_weights(&specs, src, progress)?;
        Ok(Self {
            config,
            tokenizer,
            weights: weights.into_iter().map(|w| w.name).zip(stored).collect(),
            max_tokens,
            fused,
            fused_runs: fused,
            last_shape: Cell::new(None),
        })
    }

    /// Builds attention as one fused op (the default where every device runs it) or, with
    /// `false`, as matmuls and a softmax (to compare); returns whether it is fused now.
    pub fn set_fused_attention(&mut self, on: bool) -> bool {
        self.fused = on && self.fused_runs;
        self.fused
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &BertConfig {
        &self.config
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &WordPiece {
        &self.tokenizer
    }

    /// Embedding size.
    pub fn dim(&self) -> usize {
        self.config.n_embd
    }

    /// Tokens per text, `[CLS]` and `[SEP]` included: longer texts keep their first
    /// `max_tokens - 2` word pieces. Defaults to the file's
    /// `sentence_transformers.max_seq_length` (256 for all-MiniLM-L6-v2), else the context.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Sets [`Self::max_tokens`] (3, one word piece between [CLS] and [SEP], to the context length).
    pub fn set_max_tokens(&mut self, n: usize) -> Result<()> {
        if n < 3 || n > self.config.n_ctx {
            return Err(Error::InvalidArgument(format!(
                "max_tokens must be 3 to {}, got {n}",
                self.config.n_ctx
            )));
        }
        self.max_tokens = n;
        Ok(())
    }

    /// The plan of the most recently run graph shape (splits, devices, memory), or a note
    /// that nothing has run yet.
    pub fn explain(&self, rt: &Runtime) -> Result<String> {
        match self.last_shape.get() {
            Some((batch, seq)) => {
                let p = self.program(batch, seq)?;
                Ok(format!("batch {batch} × {seq} tokens\n{}", rt.explain(&p)?))
            }
            None => Ok("nothing embedded yet".into()),
        }
    }

    /// Token ids of each text: `[CLS] pieces [SEP]`, truncated to [`Self::max_tokens`].
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        texts
            .iter()
            .map(|t| self.tokenizer.encode(t, self.max_tokens))
            .collect()
    }

    /// L2-normalized sentence embeddings of `texts`, one per text, in order. A text with no
    /// tokens (empty, or only spaces and control characters) is an error; a text longer than
    /// [`Self::max_tokens`] is truncated, as sentence-transformers does.
    pub async fn embed(&self, rt: &Runtime, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Err(Error::InvalidArgument(
                "embed needs at least one text".into(),
            ));
        }
        let ids = self.encode(texts)?;
        if let Some(i) = ids.iter().position(|s| s.len() <= 2) {
            return Err(Error::InvalidArgument(format!(
                "text {i} is empty (no tokens to embed)"
            )));
        }
        self.embed_tokens(rt, &ids).await
    }

    /// Embeddings of token sequences (each `[CLS] ... [SEP]`, 1 to context length ids).
    pub async fn embed_tokens(&self, rt: &Runtime, seqs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        if seqs.is_empty() {
            return Err(Error::InvalidArgument(
                "embed needs at least one sequence".into(),
            ));
        }
        for (i, s) in seqs.iter().enumerate() {
            if s.is_empty() || s.len() > self.config.n_ctx {
                return Err(Error::InvalidArgument(format!(
                    "sequence {i} has {} tokens; 1 to {} fit",
                    s.len(),
                    self.config.n_ctx
                )));
            }
            if let Some(&bad) = s.iter().find(|&&t| t as usize >= self.config.n_vocab) {
                return Err(Error::InvalidArgument(format!(
                    "sequence {i} holds token {bad}, beyond the {}-token vocabulary",
                    self.config.n_vocab
                )));
            }
        }
        // Similar lengths together: less padding.
        let mut order: Vec<usize> = (0..seqs.len()).collect();
        crate::sort::by_key(&mut order, |&i| crate::sort::key(seqs[i].len() as u64));
        let batch = seqs.len().min(MAX_BATCH);
        let mut out = vec![Vec::new(); seqs.len()];
        for chunk in order.chunks(batch) {
            let longest = chunk.iter().map(|&i| seqs[i].len()).max().unwrap_or(1);
            let seq = longest
                .next_multiple_of(if longest <= MIN_SEQ {
                    MIN_SEQ
                } else {
                    SEQ_STEP
                })
                .min(self.config.n_ctx.max(longest));
            let members: Vec<&[u32]> = chunk.iter().map(|&i| seqs[i].as_slice()).collect();
            let embs = self.run_batch(rt, &members, batch, seq).await?;
            for (&i, e) in chunk.iter().zip(embs) {
                out[i] = e;
            }
        }
        Ok(out)
    }

    /// Runs up to `batch` sequences padded to `seq` tokens; returns their embeddings.
    async fn run_batch(
        &self,
        rt: &Runtime,
        members: &[&[u32]],
        batch: usize,
        seq: usize,
    ) -> Result<Vec<Vec<f32>>> {
        // Cheap to build again: the runtime keeps this shape's plan and memory.
        let program = self.program(batch, seq)?;
        self.last_shape.set(Some((batch, seq)));
        let dummy = [self.tokenizer.cls_id(), self.tokenizer.sep_id()];
        let mut tokens = vec![self.tokenizer.pad_id() as i32; seq * batch];
        let mut mask = vec![MASKED; seq * batch];
        let mut pool = vec![0f32; seq * batch];
        for b in 0..batch {
            let s: &[u32] = members.get(b).copied().unwrap_or(&dummy);
            let w = 1.0 / s.len() as f32;
            for (j, &t) in s.iter().enumerate() {
                tokens[b * seq + j] = t as i32;
                mask[b * seq + j] = 0.0;
                pool[b * seq + j] = w;
            }
        }
        let inputs = HashMap::from([
            ("tokens".to_string(), bytemuck::cast_slice(&tokens).to_vec()),
            (
                "attn_mask".to_string(),
                bytemuck::cast_slice(&mask).to_vec(),
            ),
            ("pool".to_string(), bytemuck::cast_slice(&pool).to_vec()),
        ]);
        let outs = rt.run(&program, &inputs).await?;
        let (_, _, bytes) = outs
            .into_iter()
            .next()
            .ok_or_else(|| Error::Graph("the encoder graph has no output".into()))?;
        let h = self.config.n_embd;
        if bytes.len() != h * batch * 4 {
            return Err(Error::Graph(format!(
                "encoder output has {} bytes, expected {}",
                bytes.len(),
                h * batch * 4
            )));
        }
        let values: Vec<f32> = bytemuck::pod_collect_to_vec(&bytes);
        Ok(values
            .chunks_exact(h)
            .take(members.len())
            .map(<[f32]>::to_vec)
            .collect())
    }

    /// The encoder graph for `batch` sequences of `seq` tokens, bound to the stored weights
    /// (what `embed` runs; for plans and estimates).
    pub fn program(&self, batch: usize, seq: usize) -> Result<Program> {
        let mut p = Program::new();
        let ids = self
            .weights
            .iter()
            .map(|(name, w)| p.weight_stored(name, w))
            .collect::<Result<Vec<_>>>()?;
        build_encoder(&self.config, &mut p, &ids, batch, seq, self.fused)?;
        Ok(p)
    }
}

/// Adds the encoder graph for `batch` sequences of `seq` tokens to `p`, whose weight tensors
/// `ids` are in the loader's order (embeddings, then each layer's [`layer_names`]).
///
/// Inputs: `tokens` (I32 `[seq, batch]`), `attn_mask` (f32 `[seq, 1, 1, batch]`, per key,
/// repeated over queries and heads: 0 for real keys, a large negative value for padding), `pool` (f32 `[seq, 1, batch]`:
/// 1/len for tokens, 0 for padding). Output: `embeddings` (f32 `[n_embd, 1, batch]`).
/// Attention is the fused op when `fused`, matmuls and a softmax otherwise.
fn build_encoder(
    c: &BertConfig,
    p: &mut Program,
    ids: &[TensorId],
    batch: usize,
    seq: usize,
    fused: bool,
) -> Result<()> {
    let (h, nh) = (c.n_embd, c.n_head);
    let hd = h / nh;
    if seq > c.n_ctx {
        return Err(Error::InvalidArgument(format!(
            "{seq} tokens exceed the context of {}",
            c.n_ctx
        )));
    }
    let w: HashMap<String, TensorId> = ids
        .iter()
        .map(|&id| (p.graph().tensor(id).name.clone(), id))
        .collect();
    let positions: Vec<i32> = (0..seq as i32).collect();
    let pos = p.weight_bytes(
        "positions",
        DType::I32,
        &[seq],
        bytemuck::cast_slice(&positions).to_vec(),
    )?;
    let get = |name: &str| {
        w.get(name)
            .copied()
            .ok_or_else(|| Error::Graph(format!("weight {name} not loaded")))
    };
    let g = p.graph_mut();
    let tokens = g.input("tokens", DType::I32, &[seq, batch])?;
    let mask = g.input("attn_mask", DType::F32, &[seq, 1, 1, batch])?;
    let pool = g.input("pool", DType::F32, &[seq, 1, batch])?;

    let mut x = g.get_rows(get("token_embd.weight")?, tokens)?;
    let pe = g.get_rows(get("position_embd.weight")?, pos)?;
    x = g.add(x, pe)?;
    x = g.add(x, get("token_types.weight")?)?;
    x = layer_norm(
        g,
        x,
        get("token_embd_norm.weight")?,
        get("token_embd_norm.bias")?,
        c.eps,
    )?;
    let scale = 1.0 / (hd as f32).sqrt();
    for i in 0..c.n_layer {
        let n = layer_names(i);
        let lw: Vec<TensorId> = n.iter().map(|s| get(s)).collect::<Result<_>>()?;
        let linear = |g: &mut Graph, wi: usize, x: TensorId| -> Result<TensorId> {
            let y = g.matmul(lw[wi], x)?;
            g.add(y, lw[wi + 1])
        };
        // [h, seq, batch] → [3h, seq, batch]: each token's Q, K, V side by side.
        let qkv = linear(g, 0, x)?;
        // Part `i` (0 Q, 1 K, 2 V) as heads [hd, nh, seq, batch].
        let [e, row, tokens, ..] = g.tensor(qkv).nb;
        let heads = |g: &mut Graph, i: usize| {
            g.view(
                qkv,
                &[hd, nh, seq, batch],
                &[e, e * hd, row, tokens],
                e * h * i,
            )
        };
        let q = heads(g, 0)?;
        let q = g.permute(q, [0, 2, 1, 3])?;
        let k = heads(g, 1)?;
        let k = g.permute(k, [0, 2, 1, 3])?;
        let v = heads(g, 2)?;
        let ctx = if fused {
            // Q, K and V read where the projection wrote them; the result is [hd, nh, seq,
            // batch], each token's heads side by side.
            let v = g.permute(v, [0, 2, 1, 3])?;
            g.attention(q, k, v, Some(mask), scale)?
        } else {
            // Q and K as views [hd, seq, nh, batch]: the matmul reads their rows (hd values
            // side by side) where they are; V is copied, its rows run along seq.
            let v = g.permute(v, [1, 2, 0, 3])?;
            let v = g.cont(v)?; // [seq, hd, nh, batch]
            let scores = g.matmul(k, q)?; // [seq_k, seq_q, nh, batch]
                                          // softmax(scores · scale + mask) in one op (the mask broadcast over heads).
            let attn = g.softmax(scores, Some(mask), scale)?;
            let ctx = g.matmul(v, attn)?; // [hd, seq_q, nh, batch]
            let ctx = g.permute(ctx, [0, 2, 1, 3])?;
            g.cont(ctx)? // [hd, nh, seq, batch]
        };
        let ctx = g.reshape(ctx, &[h, seq, batch])?;
        let o = linear(g, 2, ctx)?;
        let o = g.add(o, x)?;
        x = layer_norm(g, o, lw[4], lw[5], c.eps)?;
        let up = linear(g, 6, x)?;
        let up = g.gelu_erf(up)?;
        let down = linear(g, 8, up)?;
        let down = g.add(down, x)?;
        x = layer_norm(g, down, lw[10], lw[11], c.eps)?;
    }
    // Mean over real tokens: [seq, h, batch] · pool weights [seq, 1, batch] → [h, 1, batch].
    let xt = g.transpose(x)?;
    let xt = g.cont(xt)?;
    let pooled = g.matmul(xt, pool)?;
    // L2 normalization: rms_norm divides by sqrt(mean of squares); 1/sqrt(h) makes it the norm.
    let normed = g.rms_norm(pooled, 1e-12 / h as f32)?;
    let emb = g.scale(normed, 1.0 / (h as f32).sqrt())?;
    g.set_name(emb, "embeddings")?;
    g.set_output(emb)?;
    Ok(())
}

/// Layer norm with affine weight and bias.
fn layer_norm(g: &mut Graph, x: TensorId, w: TensorId, b: TensorId, eps: f32) -> Result<TensorId> {
    let n = g.norm(x, eps)?;
    let n = g.mul(n, w)?;
    g.add(n, b)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::model::gguf::{GgufWriter, Value, ValueType};
    use crate::runtime::DeviceChoice;
    use crate::testing::Rng;

    /// A tiny random BERT (2 layers, hidden 32, 2 heads) as GGUF bytes, without tensor
    /// `skip`; each layer's Q, K and V in one `attn_qkv` tensor if `qkv_joined`, else apart
    /// (the same values either way).
    fn tiny_bert(arch: &str, skip: Option<&str>, qkv_joined: bool) -> Vec<u8> {
        let (h, ff, ctx, layers) = (32, 64, 16, 2);
        let vocab = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "##s", "!",
        ];
        let mut w = GgufWriter::new();
        let s = |v: &str| Value::String(v.into());
        w.set("general.architecture", s(arch)).unwrap();
        w.set("bert.block_count", Value::U32(layers)).unwrap();
        w.set("bert.embedding_length", Value::U32(h as u32))
            .unwrap();
        w.set("bert.feed_forward_length", Value::U32(ff as u32))
            .unwrap();
        w.set("bert.attention.head_count", Value::U32(2)).unwrap();
        w.set("bert.context_length", Value::U32(ctx as u32))
            .unwrap();
        w.set("bert.attention.layer_norm_epsilon", Value::F32(1e-12))
            .unwrap();
        w.set("tokenizer.ggml.model", s("bert")).unwrap();
        let toks = vocab.iter().map(|t| s(t)).collect();
        w.set(
            "tokenizer.ggml.tokens",
            Value::Array(ValueType::String, toks),
        )
        .unwrap();
        let mut rng = Rng::new(3);
        let mut add = |name: &str, ne: &[usize]| {
            if Some(name) == skip {
                return;
            }
            let n: usize = ne.iter().product();
            let norm_w = name.ends_with("norm.weight");
            let vals: Vec<u8> = (0..n)
                .map(|_| if norm_w { 1.0 } else { rng.uniform(-0.3, 0.3) })
                .flat_map(f32::to_le_bytes)
                .collect();
            w.add_tensor(name, DType::F32, ne, vals).unwrap();
        };
        add("token_embd.weight", &[h, vocab.len()]);
        add("position_embd.weight", &[h, ctx]);
        add("token_types.weight", &[h, 2]);
        add("token_embd_norm.weight", &[h]);
        add("token_embd_norm.bias", &[h]);
        for i in 0..layers as usize {
            let shapes: [&[usize]; 12] = [
                &[h, 3 * h],
                &[3 * h],
                &[h, h],
                &[h],
                &[h],
                &[h],
                &[h, ff],
                &[ff],
                &[ff, h],
                &[h],
                &[h],
                &[h],
            ];
            for (n, ne) in layer_names(i).iter().zip(shapes) {
                match JOINED.iter().find(|(j, _)| n.ends_with(j)) {
                    // Q, K, V as separate tensors (as converters write BERT), unless the
                    // test asks for them joined in the file.
                    Some((_, parts)) if !qkv_joined => {
                        let mut one = ne.to_vec();
                        if let Some(outer) = one.last_mut() {
                            *outer /= parts.len();
                        }
                        for p in parts {
                            add(&format!("blk.{i}.{p}"), &one);
                        }
                    }
                    _ => add(n, ne),
                }
            }
        }
        w.to_bytes()
    }

    #[test]
    fn padding_and_batching_do_not_change_embeddings() {
        let rt = pollster::block_on(crate::create_runtime(DeviceChoice::Cpu, false)).unwrap();
        let e = SentenceEmbedder::load(&rt, &tiny_bert("bert", None, false)).unwrap();
        let texts = ["hello", "hello worlds!", "world hello hello world", "!"];
        let all = pollster::block_on(e.embed(&rt, &texts)).unwrap();
        for (i, t) in texts.iter().enumerate() {
            let one = pollster::block_on(e.embed(&rt, &[t])).unwrap();
            let dot: f32 = one[0].iter().zip(&all[i]).map(|(a, b)| a * b).sum();
            assert!(dot > 1.0 - 1e-5, "text {i}: cosine {dot}");
            let norm: f32 = all[i].iter().map(|v| v * v).sum();
            assert!((norm - 1.0).abs() < 1e-4, "norm² {norm}");
        }
        // Different texts, different embeddings.
        let dot: f32 = all[0].iter().zip(&all[3]).map(|(a, b)| a * b).sum();
        assert!(dot < 0.999);
    }

    #[test]
    fn q_k_v_apart_or_joined_in_the_file_give_the_same_embeddings() {
        let rt = pollster::block_on(crate::create_runtime(DeviceChoice::Cpu, false)).unwrap();
        let texts = ["hello worlds!", "world hello hello world"];
        let embed = |bytes: &[u8]| {
            let e = SentenceEmbedder::load(&rt, bytes).unwrap();
            pollster::block_on(e.embed(&rt, &texts)).unwrap()
        };
        let apart = embed(&tiny_bert("bert", None, false));
        assert_eq!(apart, embed(&tiny_bert("bert", None, true)));
        // (Whether the views pick Q, K and V right: the MiniLM reference test, tests/minilm.rs.)
        // A part missing, or unlike the others: errors naming it.
        let err =
            SentenceEmbedder::load(&rt, &tiny_bert("bert", Some("blk.1.attn_k.weight"), false))
                .unwrap_err();
        assert!(
            err.to_string().contains("\"blk.1.attn_k.weight\": missing"),
            "{err}"
        );
    }

    #[test]
    fn bad_files_and_calls_are_clear_errors() {
        let rt = pollster::block_on(crate::create_runtime(DeviceChoice::Cpu, false)).unwrap();
        let err = SentenceEmbedder::load(&rt, &tiny_bert("llama", None, false)).unwrap_err();
        assert!(err.to_string().contains("architecture"), "{err}");
        let err =
            SentenceEmbedder::load(&rt, &tiny_bert("bert", Some("blk.1.ffn_down.bias"), false))
                .unwrap_err();
        assert!(
            err.to_string()
                .contains("tensor \"blk.1.ffn_down.bias\": missing"),
            "{err}"
        );
        // Truncated anywhere (header or data): an error, never a panic.
        let good = tiny_bert("bert", None, false);
        for n in [0, 3, 40, good.len() / 2, good.len() - 1] {
            assert!(
                SentenceEmbedder::load(&rt, &good[..n]).is_err(),
                "{n} bytes"
            );
        }
        let mut e = SentenceEmbedder::load(&rt, &good).unwrap();
        assert!(pollster::block_on(e.embed(&rt, &[])).is_err());
        let err = pollster::block_on(e.embed(&rt, &["hello", " \t\n"])).unwrap_err();
        assert!(err.to_string().contains("text 1 is empty"), "{err}");
        assert!(pollster::block_on(e.embed_tokens(&rt, &[vec![2, 99, 3]])).is_err());
        assert!(e.set_max_tokens(17).is_err());
        e.set_max_tokens(4).unwrap();
        let ids = e.encode(&["hello hello hello"]).unwrap();
        assert_eq!(ids[0], [2, 4, 4, 3]);
        // Over-long texts are truncated, not refused.
        let long = ["hello "; 40].concat();
        assert_eq!(
            pollster::block_on(e.embed(&rt, &[&long])).unwrap()[0].len(),
            32
        );
    }
}
