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
