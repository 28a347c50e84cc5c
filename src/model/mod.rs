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
