//! Models built on the graph API (GGUF loading, tokenizers, model graphs).
//!
//! Models build graphs and hand them to the runtime; they never talk to a device's
//! internals directly.

pub mod bert;
pub mod chat;
pub mod decoder;
pub mod generate;
pub mod gguf;
pub mod sampler;
pub mod smoke;
pub mod tokenizer;

use crate::error::{Error, ModelFile, Result};
use crate::graph::{DType, Graph};
use crate::model::gguf::Gguf;
use crate::runtime::ByteSource;
use crate::runtime::Runtime;

/// Bytes read first to parse a GGUF header (more are read when the header is longer).
const HEADER_PREFIX: usize = 1 << 20;

/// Reads a GGUF header from the first bytes of `src` (more when it is longer).
pub(crate) fn read_header(src: &dyn ByteSource) -> Result<Gguf<'static>> {
    let len = src.len();
    let mut n = HEADER_PREFIX.min(len);
    loop {
        let mut prefix = vec![0u8; n];
        src.read_into(0, &mut prefix)?;
        match Gguf::parse_header(&prefix, len)? {
            Some(g) => return Ok(g),
            None if n == len => {
                return Err(Error::model(
                    ModelFile::Gguf,
                    "the header does not fit in the file",
                ))
            }
            None => n = n.saturating_mul(4).min(len),
        }
    }
}

/// One weight as a model stores it: its name, dtype and shape, and the file's byte ranges
/// that hold it (one tensor's, or the parts of a weight joined from several,
/// [`WeightInfo::join`]).
#[derive(Clone, Debug)]
pub(crate) struct WeightInfo {
    pub name: String,
    pub dtype: DType,
    pub ne: Vec<usize>,
    pub ranges: Vec<std::ops::Range<usize>>,
}

impl WeightInfo {
    /// `parts` stored one after another as one weight `name`, joined along their outermost
    /// dim (a matrix's output rows, whole blocks each, so the joined bytes are the parts' in
    /// order); `None` when they differ in dtype, rank or an inner dim. A model's loader
    /// decides what to join and what a mismatch means (BERT: an error; the decoder: parts
    /// kept apart).
    pub fn join(name: String, parts: &[&WeightInfo]) -> Option<WeightInfo> {
        let first = parts.first()?;
        let inner = &first.ne[..first.ne.len().saturating_sub(1)];
        if parts.iter().any(|w| {
            w.dtype != first.dtype || w.ne.len() != first.ne.len() || !w.ne.starts_with(inner)
        }) {
            return None;
        }
        let mut ne = first.ne.clone();
        if let Some(outer) = ne.last_mut() {
            *outer = parts.iter().filter_map(|w| w.ne.last()).sum();
        }
        Some(WeightInfo {
            name,
            dtype: first.dtype,
            ne,
            ranges: parts.iter().flat_map(|w| w.ranges.clone()).collect(),
        })
    }
}

/// Whether every device of `rt` runs a fused attention node ([`Graph::attention`]) of head
/// size `d` over `heads` query heads and `kv_heads` KV heads of dtype `kv` (views of a longer
/// cache, a mask): a model builds attention as one op only then, so the op never splits its
/// graph across devices.
pub(crate) fn attention_runs_everywhere(
    rt: &Runtime,
    d: usize,
    heads: usize,
    kv_heads: usize,
    kv: DType,
) -> Result<bool> {
    let n_kv = 32;
    let mut g = Graph::new();
    let q = g.input("q", DType::F32, &[d, heads, 1])?;
    let q = g.permute(q, [0, 2, 1, 3])?;
    let kc = g.input("k", kv, &[d, 2 * n_kv, kv_heads])?;
    let vc = g.input("v", kv, &[d, 2 * n_kv, kv_heads])?;
    let nb = g.tensor(kc).nb;
    let k = g.view(kc, &[d, n_kv, kv_heads], &nb[..3], 0)?;
    let v = g.view(vc, &[d, n_kv, kv_heads], &nb[..3], 0)?;
    let mask = g.input("mask", DType::F32, &[n_kv, 1])?;
    let a = g.attention(q, k, v, Some(mask), 1.0)?;
    Ok(rt.runs_everywhere(&g, a))
}
