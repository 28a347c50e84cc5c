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
use crate::model::gguf::Gguf;
use crate::runtime::ByteSource;

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
