//! Converts a sentence-transformers BERT checkpoint (all-MiniLM-L6-v2: `model.safetensors`,
//! `vocab.txt`, `config.json`) into a GGUF file with llama.cpp's `bert` conventions: tensor
//! names (`token_embd`, `blk.N.attn_q`, ...), `bert.*` hyper-parameters and a WordPiece
//! vocabulary in llama.cpp's spelling (word starts marked with U+2581, no `##`), so the file
//! also loads in llama.cpp-based runtimes.
//!
//! ```text
//! cargo run --release --example convert_minilm -- --model-dir models/minilm --type q8_0 \
//!     --out models/minilm-q8_0.gguf
//! ```
//!
//! `--type` is f32, f16, q8_0 or q4_0 and applies to the 2-D matmul weights of the layers
//! (quantized only where rows are whole blocks of 32) and to the token embeddings (q8_0 for
//! a q4_0 file: 4 bits per embedding value costs too much accuracy; they are half the
//! model's bytes, so this is most of the file's size); position and token-type embeddings,
//! biases and layer norms stay f32.
//!
//! `--type q4_k_m` is llama.cpp's Q4_K_M mix (`llama_tensor_get_type`, no importance
//! matrix): Q4_K, with Q6_K for `attn_v` and `ffn_down` in the layers its `use_more_bits`
//! picks (the first and last eighth, and every third between: layers 2 and 5 of 6); the
//! token embeddings (tied: BERT has no output matrix) take the output's rule, Q8_0 for rows
//! not whole super-blocks. Rows of a type's super-block are needed, and MiniLM's are 384
//! wide, so only `ffn_down` (1536) keeps its K-quant; the rest fall back as llama.cpp's
//! `tensor_type_fallback` does: Q6_K to Q8_0, Q4_K to Q5_0. One departure: the
//! BERT loader joins a layer's Q, K and V into one QKV weight of one dtype, so where
//! llama.cpp gives `attn_v` more bits, `attn_q` and `attn_k` of that layer get them too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use webtensor::graph::{k_quant_fallback, row_from_f32, use_more_bits, DType};
use webtensor::model::gguf::{GgufWriter, Value, ValueType};

type Res<T> = std::result::Result<T, String>;

/// One f32 tensor from the checkpoint, PyTorch shape (outermost first).
struct Tensor {
    shape: Vec<usize>,
    values: Vec<f32>,
}

/// Reads the f32 tensors of a safetensors file (8-byte header length, JSON header, data).
fn read_safetensors(path: &Path) -> Res<BTreeMap<String, Tensor>> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let len = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
        .ok_or("safetensors file shorter than its header length")?;
    let header_end = usize::try_from(len)
        .ok()
        .and_then(|l| l.checked_add(8))
        .filter(|&e| e <= bytes.len())
        .ok_or("safetensors header length exceeds the file")?;
    let header: BTreeMap<String, Json> = serde_json::from_slice(&bytes[8..header_end])
        .map_err(|e| format!("safetensors header: {e}"))?;
    let data = &bytes[header_end..];
    let mut out = BTreeMap::new();
    for (name, info) in header {
        if name == "__metadata__" {
            continue;
        }
        let dtype = info["dtype"].as_str().unwrap_or("?");
        if dtype != "F32" {
            eprintln!("skipping {name}: dtype {dtype}");
            continue;
        }
        let shape: Vec<usize> = info["shape"]
            .as_array()
            .ok_or(format!("{name}: no shape"))?
            .iter()
            .map(|d| d.as_u64().map(|d| d as usize))
            .collect::<Option<_>>()
            .ok_or(format!("{name}: bad shape"))?;
        let offs = info["data_offsets"]
            .as_array()
            .and_then(|o| Some((o.first()?.as_u64()? as usize, o.get(1)?.as_u64()? as usize)))
            .ok_or(format!("{name}: bad data_offsets"))?;
        let raw = data
            .get(offs.0..offs.1)
            .ok_or(format!("{name}: data {offs:?} outside the file"))?;
        let numel: usize = shape.iter().product();
        if raw.len() != numel * 4 {
            return Err(format!("{name}: {} bytes for shape {shape:?}", raw.len()));
        }
        let values = raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        out.insert(name, Tensor { shape, values });
    }
    Ok(out)
}

/// llama.cpp's name of a checkpoint tensor, or `None` for tensors the encoder does not use.
fn gguf_name(name: &str) -> Option<String> {
    let fixed = [
        ("embeddings.word_embeddings.weight", "token_embd.weight"),
        (
            "embeddings.position_embeddings.weight",
            "position_embd.weight",
        ),
        (
            "embeddings.token_type_embeddings.weight",
            "token_types.weight",
        ),
        ("embeddings.LayerNorm.weight", "token_embd_norm.weight"),
        ("embeddings.LayerNorm.bias", "token_embd_norm.bias"),
    ];
    if let Some((_, to)) = fixed.iter().find(|(from, _)| *from == name) {
        return Some(to.to_string());
    }
    let rest = name.strip_prefix("encoder.layer.")?;
    let (layer, rest) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let (module, param) = rest.rsplit_once('.')?;
    let to = match module {
        "attention.self.query" => "attn_q",
        "attention.self.key" => "attn_k",
        "attention.self.value" => "attn_v",
        "attention.output.dense" => "attn_output",
        "attention.output.LayerNorm" => "attn_output_norm",
        "intermediate.dense" => "ffn_up",
        "output.dense" => "ffn_down",
        "output.LayerNorm" => "layer_output_norm",
        _ => return None,
    };
    Some(format!("blk.{layer}.{to}.{param}"))
}

/// vocab.txt spelling → llama.cpp's ("##ing" → "ing", "word" → "▁word", "[CLS]" kept).
fn phantom(tok: &str) -> String {
    if tok.len() > 2 && tok.starts_with('[') && tok.ends_with(']') {
        tok.to_string()
    } else if let Some(cont) = tok.strip_prefix("##") {
        cont.to_string()
    } else {
        format!("\u{2581}{tok}")
    }
}

struct Args {
    model_dir: PathBuf,
    dtype: DType,
    /// llama.cpp's Q4_K_M mix ([`q4_k_m_type`]) instead of one type.
    q4_k_m: bool,
    out: PathBuf,
}

/// The type llama.cpp's Q4_K_M recipe gives tensor `name` (rows of `ne0`) of an
/// `n_layer`-layer BERT, after its fallback for rows that are not whole super-blocks
/// (see the top comment; `None`: not quantized, kept f32).
fn q4_k_m_type(name: &str, ne0: usize, n_layer: usize) -> Option<DType> {
    let layer = |part: &str| -> Option<usize> {
        let rest = name.strip_prefix("blk.")?;
        let (i, tail) = rest.split_once('.')?;
        (tail == part).then(|| i.parse().ok()).flatten()
    };
    let want = if name == "token_embd.weight" {
        if ne0.is_multiple_of(256) {
            DType::Q6_K
        } else {
            DType::Q8_0
        }
    } else if !(name.starts_with("blk.") && name.ends_with(".weight")) {
        return None;
    } else if let Some(i) = ["attn_q.weight", "attn_k.weight", "attn_v.weight"]
        .iter()
        .find_map(|p| layer(p))
        .or(layer("ffn_down.weight"))
    {
        if use_more_bits(i, n_layer) {
            DType::Q6_K
        } else {
            DType::Q4_K
        }
    } else {
        DType::Q4_K
    };
    let fallback = k_quant_fallback(want, ne0);
    ne0.is_multiple_of(fallback.block_size())
        .then_some(fallback)
}

fn parse_args() -> Res<Args> {
    let mut model_dir = None;
    let mut dtype = DType::F32;
    let mut q4_k_m = false;
    let mut out = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--model-dir" => model_dir = Some(PathBuf::from(val()?)),
            "--out" => out = Some(PathBuf::from(val()?)),
            "--type" => {
                dtype = match val()?.as_str() {
                    "f32" => DType::F32,
                    "f16" => DType::F16,
                    "q8_0" => DType::Q8_0,
                    "q4_0" => DType::Q4_0,
                    "q4_k_m" => {
                        q4_k_m = true;
                        DType::Q4_K
                    }
                    t => {
                        return Err(format!(
                            "--type must be f32, f16, q8_0, q4_0 or q4_k_m, got {t}"
                        ))
                    }
                }
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    Ok(Args {
        model_dir: model_dir.ok_or("--model-dir is required")?,
        dtype,
        q4_k_m,
        out: out.ok_or("--out is required")?,
    })
}

fn config_usize(cfg: &Json, key: &str) -> Res<u32> {
    cfg[key]
        .as_u64()
        .and_then(|v| u32::try_from(v).ok())
        .ok_or(format!("config.json: {key} missing"))
}

fn convert(args: &Args) -> Res<()> {
    let dir = &args.model_dir;
    let read =
        |name: &str| std::fs::read_to_string(dir.join(name)).map_err(|e| format!("{name}: {e}"));
    let cfg: Json = serde_json::from_str(&read("config.json")?).map_err(|e| e.to_string())?;
    if cfg["model_type"].as_str() != Some("bert") {
        return Err("config.json: model_type is not bert".into());
    }
    let vocab: Vec<String> = read("vocab.txt")?.lines().map(str::to_string).collect();
    let id_of = |t: &str| {
        vocab
            .iter()
            .position(|v| v == t)
            .map(|i| Value::U32(i as u32))
            .ok_or(format!("vocab.txt has no {t}"))
    };
    let mut w = GgufWriter::new();
    let mut set = |k: &str, v: Value| w.set(k, v).map_err(|e| e.to_string());
    set("general.architecture", Value::String("bert".into()))?;
    set("general.name", Value::String("all-MiniLM-L6-v2".into()))?;
    // llama.cpp's llama_ftype: ALL_F32, MOSTLY_F16, MOSTLY_Q4_0, MOSTLY_Q8_0, MOSTLY_Q4_K_M.
    let ftype = match args.dtype {
        DType::F16 => 1,
        DType::Q4_0 => 2,
        DType::Q8_0 => 7,
        DType::Q4_K => 15,
        _ => 0,
    };
    set("general.file_type", Value::U32(ftype))?;
    let n = |k| config_usize(&cfg, k).map(Value::U32);
    set("bert.block_count", n("num_hidden_layers")?)?;
    set("bert.context_length", n("max_position_embeddings")?)?;
    set("bert.embedding_length", n("hidden_size")?)?;
    set("bert.feed_forward_length", n("intermediate_size")?)?;
    set("bert.attention.head_count", n("num_attention_heads")?)?;
    let eps = cfg["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32;
    set("bert.attention.layer_norm_epsilon", Value::F32(eps))?;
    set("bert.attention.causal", Value::Bool(false))?;
    // llama.cpp's LLAMA_POOLING_TYPE_MEAN.
    set("bert.pooling_type", Value::U32(1))?;
    if let Ok(st) = read("sentence_bert_config.json") {
        let st: Json = serde_json::from_str(&st).map_err(|e| e.to_string())?;
        if let Some(m) = st["max_seq_length"].as_u64() {
            set("sentence_transformers.max_seq_length", Value::U32(m as u32))?;
        }
    }
    set("tokenizer.ggml.model", Value::String("bert".into()))?;
    let tokens = vocab.iter().map(|t| Value::String(phantom(t))).collect();
    set(
        "tokenizer.ggml.tokens",
        Value::Array(ValueType::String, tokens),
    )?;
    let types = vocab
        .iter()
        .map(|t| {
            Value::I32(match t.as_str() {
                "[UNK]" => 2,
                "[PAD]" | "[CLS]" | "[SEP]" | "[MASK]" => 3,
                _ => 1,
            })
        })
        .collect();
    set(
        "tokenizer.ggml.token_type",
        Value::Array(ValueType::I32, types),
    )?;
    // Rows of token_types.weight; llama.cpp's bert loader refuses a file without it
    // ("bert model needs to define token type count").
    set("tokenizer.ggml.token_type_count", n("type_vocab_size")?)?;
    set("tokenizer.ggml.unknown_token_id", id_of("[UNK]")?)?;
    set("tokenizer.ggml.cls_token_id", id_of("[CLS]")?)?;
    set("tokenizer.ggml.seperator_token_id", id_of("[SEP]")?)?;
    set("tokenizer.ggml.padding_token_id", id_of("[PAD]")?)?;
    set("tokenizer.ggml.mask_token_id", id_of("[MASK]")?)?;

    let n_layer = config_usize(&cfg, "num_hidden_layers")? as usize;
    let tensors = read_safetensors(&dir.join("model.safetensors"))?;
    let mut count = 0;
    let mut mix: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, t) in &tensors {
        let Some(to) = gguf_name(name) else {
            eprintln!("skipping {name}");
            continue;
        };
        let ne: Vec<usize> = t.shape.iter().rev().copied().collect();
        let is_matmul = to.starts_with("blk.") && to.ends_with(".weight") && ne.len() == 2;
        let blocks = ne[0].is_multiple_of(32);
        let dtype = match args.dtype {
            // 2-D weights only, as llama.cpp; position and token-type embeddings stay f32.
            _ if args.q4_k_m && (is_matmul || to == "token_embd.weight") => {
                q4_k_m_type(&to, ne[0], n_layer).unwrap_or(DType::F32)
            }
            _ if args.q4_k_m => DType::F32,
            DType::Q8_0 | DType::Q4_0 if is_matmul && blocks => args.dtype,
            DType::Q8_0 | DType::Q4_0 if to == "token_embd.weight" && blocks => DType::Q8_0,
            DType::F16 if is_matmul || to == "token_embd.weight" => DType::F16,
            _ => DType::F32,
        };
        let row = ne[0];
        let rb = dtype.row_bytes(row).map_err(|e| e.to_string())?;
        let mut bytes = vec![0u8; t.values.len() / row * rb];
        for (src, dst) in t.values.chunks_exact(row).zip(bytes.chunks_exact_mut(rb)) {
            row_from_f32(dtype, src, dst).map_err(|e| e.to_string())?;
        }
        w.add_tensor(&to, dtype, &ne, bytes)
            .map_err(|e| e.to_string())?;
        *mix.entry(dtype.name()).or_default() += 1;
        count += 1;
    }
    let bytes = w.to_bytes();
    std::fs::write(&args.out, &bytes).map_err(|e| format!("{}: {e}", args.out.display()))?;
    println!(
        "wrote {} ({count} tensors, {:.1} MB, matmul weights {}: {mix:?})",
        args.out.display(),
        bytes.len() as f64 / 1e6,
        if args.q4_k_m {
            "q4_k_m"
        } else {
            args.dtype.name()
        }
    );
    Ok(())
}

fn main() {
    if let Err(e) = parse_args().and_then(|a| convert(&a)) {
        eprintln!("convert_minilm: {e}");
        std::process::exit(1);
    }
}
