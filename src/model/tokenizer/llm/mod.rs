//! The tokenizers GGUF language models name in `tokenizer.ggml.model`, as llama.cpp runs
//! them (src/llama-vocab.cpp): SentencePiece (`llama`, llama.cpp's `llm_tokenizer_spm`),
//! byte-level BPE (`gpt2`, `llm_tokenizer_bpe` with the pre-tokenizers of [`super::pretok`])
//! and WordPiece (`bert`, [`WordPiece`]). Decoding back to text and a streaming decoder.
//!
//! The vocabulary both share is in `vocab.rs`, SentencePiece in `spm.rs`, BPE in `bpe.rs`,
//! the streaming decoder in `stream.rs`; the tokenizer of a file here.

mod bpe;
mod spm;
mod stream;
mod vocab;

pub use bpe::Bpe;
pub use spm::Spm;
pub use stream::StreamDecoder;
pub use vocab::{Specials, TokenType};

use crate::error::{At, Error, ModelFile, Result};
use crate::model::gguf::{Gguf, Value};

use super::pretok::PreTokenizer;
use super::WordPiece;
use vocab::{key_err, Vocab};

/// A tokenizer chosen from a GGUF file's `tokenizer.ggml.model`.
#[derive(Clone, Debug)]
pub enum Tokenizer {
    /// `bert`
    WordPiece(WordPiece),
    /// `llama`
    SentencePiece(Spm),
    /// `gpt2`
    Bpe(Bpe),
}

impl Tokenizer {
    /// The tokenizer of a GGUF file. An unknown `tokenizer.ggml.model`, or (for `gpt2`)
    /// an unknown `tokenizer.ggml.pre`, is an error naming it; malformed metadata is an
    /// error naming its key.
    pub fn from_gguf(g: &Gguf) -> Result<Self> {
        const MODEL: &str = "tokenizer.ggml.model";
        let model = g.get_str(MODEL)?;
        match model {
            "bert" => Ok(Self::WordPiece(WordPiece::from_gguf(g)?)),
            "llama" => {
                let vocab = Vocab::from_gguf(g, true)?;
                let add_space_prefix = match g.get("tokenizer.ggml.add_space_prefix") {
                    None => true,
                    Some(Value::Bool(b)) => *b,
                    Some(v) => {
                        return Err(key_err(
                            "tokenizer.ggml.add_space_prefix",
                            format!("must be a bool, got {v:?}"),
                        ))
                    }
                };
                Ok(Self::SentencePiece(Spm {
                    vocab,
                    add_space_prefix,
                }))
            }
            "gpt2" => {
                let pre = match g.get("tokenizer.ggml.pre") {
                    None => None,
                    Some(v) => Some(
                        v.as_str()
                            .ok_or_else(|| key_err("tokenizer.ggml.pre", "must be a string"))?,
                    ),
                };
                let pre = PreTokenizer::new(pre)?;
                // llama.cpp adds BOS by default for the LLaMA 3 family only.
                let add_bos = matches!(
                    pre.name(),
                    "llama3"
                        | "llama-v3"
                        | "llama-bpe"
                        | "falcon3"
                        | "falcon-h1"
                        | "pixtral"
                        | "midm-2.0"
                        | "lfm2"
                );
                let vocab = Vocab::from_gguf(g, add_bos)?;
                Ok(Self::Bpe(Bpe::new(vocab, g, pre)?))
            }
            other => Err(Error::unsupported_model(
                ModelFile::Vocabulary,
                Some(At::Key(MODEL.into())),
                format!("unsupported tokenizer model {other:?} (supported: llama, gpt2, bert)"),
            )),
        }
    }

    fn vocab(&self) -> Option<&Vocab> {
        match self {
            Self::WordPiece(_) => None,
            Self::SentencePiece(s) => Some(&s.vocab),
            Self::Bpe(b) => Some(&b.vocab),
        }
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        match self {
            Self::WordPiece(w) => w.len(),
            Self::SentencePiece(s) => s.vocab.tokens.len(),
            Self::Bpe(b) => b.vocab.tokens.len(),
        }
    }

    /// Whether the vocabulary is empty (never, once built).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The text of a token, as stored.
    pub fn token(&self, id: u32) -> Option<&str> {
        match self {
            Self::WordPiece(w) => w.token(id),
            _ => self.vocab()?.tokens.get(id as usize).map(String::as_str),
        }
    }

    /// The type of a token (WordPiece: none).
    pub fn token_type(&self, id: u32) -> Option<TokenType> {
        self.vocab()?.types.get(id as usize).copied()
    }

    /// Special token ids (WordPiece: `[CLS]` as BOS, `[SEP]` as EOS, `[PAD]`, `[UNK]`).
    pub fn specials(&self) -> Specials {
        match self {
            Self::WordPiece(w) => Specials {
                bos: Some(w.cls_id()),
                eos: Some(w.sep_id()),
                eot: None,
                pad: Some(w.pad_id()),
                unk: Some(w.unk_id()),
            },
            _ => self.vocab().map(|v| v.specials).unwrap_or_default(),
        }
    }

    /// Whether `encode(.., add_special = true, ..)` puts BOS first / EOS last.
    pub fn add_bos_eos(&self) -> (bool, bool) {
        match self {
            Self::WordPiece(_) => (true, true),
            _ => self
                .vocab()
                .map_or((false, false), |v| (v.add_bos, v.add_eos)),
        }
    }

    /// The name of the BPE pre-tokenizer, if this is BPE.
    pub fn pre_tokenizer(&self) -> Option<&str> {
        match self {
            Self::Bpe(b) => Some(b.pre.name()),
            _ => None,
        }
    }

    /// Token ids of `text`, as llama.cpp's `llama_tokenize(text, add_special,
    /// parse_special)`: `add_special` adds BOS/EOS as the metadata asks (WordPiece:
    /// `[CLS]`/`[SEP]`); `parse_special` matches control tokens written in the text
    /// (user-defined tokens are matched always).
    pub fn encode(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<u32> {
        match self {
            Self::WordPiece(w) => {
                let mut ids = w.tokenize(text);
                if add_special {
                    ids.insert(0, w.cls_id());
                    ids.push(w.sep_id());
                }
                ids
            }
            Self::SentencePiece(s) => s.encode(text, add_special, parse_special),
            Self::Bpe(b) => b.encode(text, add_special, parse_special),
        }
    }

    /// The bytes of one token (`special`: control tokens give their text, else nothing).
    pub fn piece_bytes(&self, id: u32, special: bool, out: &mut Vec<u8>) {
        match self {
            Self::WordPiece(w) => {
                if let Some(t) = w.token(id) {
                    // A word's first piece starts with a space (the text's first one drops
                    // it: `decode`, the stream); `##` pieces continue the word.
                    if let Some(rest) = t.strip_prefix("##") {
                        out.extend_from_slice(rest.as_bytes());
                    } else {
                        out.push(b' ');
                        out.extend_from_slice(t.as_bytes());
                    }
                }
            }
            Self::SentencePiece(s) => s.piece(id, special, out),
            Self::Bpe(b) => b.piece(id, special, out),
        }
    }

    /// The text of `ids`: invalid UTF-8 becomes U+FFFD. SentencePiece drops the space its
    /// encoder put in front of the text (as llama.cpp's detokenizer does).
    pub fn decode(&self, ids: &[u32], special: bool) -> String {
        let mut bytes = Vec::new();
        for &id in ids {
            self.piece_bytes(id, special, &mut bytes);
        }
        if matches!(self, Self::WordPiece(_)) && bytes.first() == Some(&b' ') {
            bytes.remove(0);
        }
        if let Self::SentencePiece(s) = self {
            // Drop the space the encoder put in front: the leading space of the first
            // token's piece, after the BOS `encode(.., add_special, ..)` puts first (what
            // llama.cpp's llama_detokenize gives for the ids after that BOS).
            if s.add_space_prefix {
                let k = usize::from(!ids.is_empty() && Some(ids[0]) == s.vocab.specials.bos);
                if let Some(&id) = ids.get(k) {
                    let mut pre = Vec::new();
                    for &id in &ids[..k] {
                        self.piece_bytes(id, special, &mut pre);
                    }
                    let mut first = Vec::new();
                    self.piece_bytes(id, special, &mut first);
                    if first.first() == Some(&b' ') {
                        bytes.remove(pre.len());
                    }
                }
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// A streaming decoder over this tokenizer.
    pub fn stream(&self, special: bool) -> StreamDecoder<&Self> {
        StreamDecoder::new(self, special)
    }
}

#[cfg(test)]
mod tests {
    use super::bpe::byte_to_unicode;
    use super::*;
    use crate::model::gguf::{GgufWriter, ValueType};

    fn strs(v: &[&str]) -> Value {
        Value::Array(
            ValueType::String,
            v.iter().map(|s| Value::String(s.to_string())).collect(),
        )
    }

    /// A small SPM or BPE vocabulary; `edit` changes the metadata before it is written.
    fn build(model: &str, edit: impl FnOnce(&mut Vec<(&'static str, Value)>)) -> Result<Tokenizer> {
        let mut kv: Vec<(&'static str, Value)> =
            vec![("tokenizer.ggml.model", Value::String(model.into()))];
        if model == "llama" {
            let mut toks = vec![
                "<unk>",
                "<s>",
                "</s>",
                "\u{2581}",
                "a",
                "b",
                "\u{2581}a",
                "ab",
            ];
            let bytes: Vec<String> = (0..=255u8).map(|b| format!("<0x{b:02X}>")).collect();
            let n = toks.len();
            toks.extend(bytes.iter().map(String::as_str));
            let mut types = vec![Value::I32(1); toks.len()];
            types[0] = Value::I32(2);
            types[1] = Value::I32(3);
            types[2] = Value::I32(3);
            for t in &mut types[n..] {
                *t = Value::I32(6);
            }
            let scores = (0..toks.len()).map(|i| Value::F32(-(i as f32))).collect();
            kv.push(("tokenizer.ggml.tokens", strs(&toks)));
            kv.push((
                "tokenizer.ggml.token_type",
                Value::Array(ValueType::I32, types),
            ));
            kv.push((
                "tokenizer.ggml.scores",
                Value::Array(ValueType::F32, scores),
            ));
            kv.push(("tokenizer.ggml.bos_token_id", Value::U32(1)));
            kv.push(("tokenizer.ggml.eos_token_id", Value::U32(2)));
            kv.push(("tokenizer.ggml.unknown_token_id", Value::U32(0)));
        } else {
            let enc = byte_to_unicode();
            let mut toks: Vec<String> = enc.iter().map(|c| c.to_string()).collect();
            toks.extend(["he", "ll", "hell", "hello", "\u{120}w", "<|end|>"].map(String::from));
            let mut types = vec![Value::I32(1); toks.len()];
            types[toks.len() - 1] = Value::I32(3);
            let t: Vec<&str> = toks.iter().map(String::as_str).collect();
            kv.push(("tokenizer.ggml.tokens", strs(&t)));
            kv.push((
                "tokenizer.ggml.token_type",
                Value::Array(ValueType::I32, types),
            ));
            kv.push((
                "tokenizer.ggml.merges",
                strs(&["h e", "l l", "he ll", "hell o", "\u{120} w"]),
            ));
            kv.push(("tokenizer.ggml.pre", Value::String("gpt-2".into())));
            kv.push((
                "tokenizer.ggml.eos_token_id",
                Value::U32(toks.len() as u32 - 1),
            ));
        }
        edit(&mut kv);
        let mut w = GgufWriter::new();
        for (k, v) in kv {
            w.set(k, v)?;
        }
        let bytes = w.to_bytes();
        Tokenizer::from_gguf(&Gguf::parse(&bytes)?)
    }

    fn set(kv: &mut Vec<(&'static str, Value)>, key: &'static str, v: Value) {
        kv.retain(|(k, _)| *k != key);
        kv.push((key, v));
    }

    fn err_names(r: Result<Tokenizer>, what: &str) {
        let e = r.expect_err("an error").to_string();
        assert!(e.contains(what), "{e:?} should name {what:?}");
    }

    #[test]
    fn spm_merges_by_score_with_byte_fallback() {
        let t = build("llama", |_| {}).unwrap();
        let ids = t.encode("a ab", true, false);
        // BOS, then "▁a" (score -6) twice before "ab" (-7) can merge.
        assert_eq!(ids, [1, 6, 6, 5]);
        assert_eq!(t.decode(&ids, false), "a ab");
        let ids = t.encode("é", false, false);
        assert_eq!(ids, [3, 8 + 0xC3, 8 + 0xA9]);
        assert_eq!(t.decode(&ids, false), "é");
        // Control tokens are matched only with parse_special.
        assert_eq!(t.encode("<s>", false, true), [1]);
        assert_ne!(t.encode("<s>", false, false), [1]);
    }

    #[test]
    fn special_token_attributes_follow_llama_cpps_loader() {
        // "</s>" user-defined in the file: llama.cpp's loader makes it a control token (its
        // end-of-generation texts), and for Phi-3 strips the whitespace after it.
        let user_defined_eos = |kv: &mut Vec<(&'static str, Value)>, name: &str| {
            let mut types = vec![Value::I32(1); 8 + 256];
            types[0] = Value::I32(2);
            types[1] = Value::I32(3);
            types[2] = Value::I32(4);
            for t in &mut types[8..] {
                *t = Value::I32(6);
            }
            set(
                kv,
                "tokenizer.ggml.token_type",
                Value::Array(ValueType::I32, types),
            );
            set(kv, "general.name", Value::String(name.into()));
        };
        let t = build("llama", |kv| user_defined_eos(kv, "llama")).unwrap();
        assert!(!t.encode("a</s> b", false, false).contains(&2));
        assert_eq!(t.encode("a</s> b", false, true), [6, 2, 3, 3, 5]);
        let phi3 = build("llama", |kv| user_defined_eos(kv, "Phi3")).unwrap();
        assert_eq!(phi3.encode("a</s> b", false, true), [6, 2, 3, 5]);
        // Unknown and control tokens decode to nothing unless asked.
        assert_eq!(t.decode(&[0, 4], false), "a");
        assert_eq!(t.decode(&[0, 4], true), "<unk>a");
    }

    #[test]
    fn bpe_merges_by_rank_and_special_tokens() {
        let t = build("gpt2", |_| {}).unwrap();
        let end = t.len() as u32 - 1;
        let ids = t.encode("hello w<|end|>", false, true);
        assert_eq!(ids.last(), Some(&end));
        assert_eq!(t.token(ids[0]), Some("hello"));
        assert_eq!(t.token(ids[1]), Some("\u{120}w"));
        assert_eq!(t.decode(&ids, false), "hello w");
        assert_eq!(t.decode(&ids, true), "hello w<|end|>");
        assert_eq!(t.pre_tokenizer(), Some("gpt-2"));
    }

    #[test]
    fn streaming_holds_split_characters() {
        let t = build("gpt2", |_| {}).unwrap();
        let ids = t.encode("é🦙x", false, false);
        assert_eq!(ids.len(), 7);
        let mut s = t.stream(false);
        let parts: Vec<String> = ids.iter().map(|&id| s.push(id)).collect();
        assert_eq!(parts, ["", "é", "", "", "", "🦙", "x"]);
        assert_eq!(s.finish(), "");
        // A character cut short, then an invalid byte: U+FFFD, never a panic.
        let mut s = t.stream(false);
        assert_eq!(s.push(ids[2]), "");
        assert_eq!(s.finish(), "\u{FFFD}");
        let lone = t.encode("\u{e9}", false, false)[1];
        assert_eq!(s.push(lone), "\u{FFFD}");
    }

    #[test]
    fn any_text_tokenizes_without_panic() {
        let texts = [
            "\0\0a\u{0}".to_string(),
            "x".repeat(1 << 20),
            " ".repeat(100_000),
            "Привет мир 你好 مرحبا 🦙\u{200D}🔥 \u{10FFFF}\u{FFFD}\r\n\t 123456 's 'LL".to_string(),
        ];
        for model in ["llama", "gpt2"] {
            let t = build(model, |_| {}).unwrap();
            for text in &texts {
                let ids = t.encode(text, true, true);
                let _ = t.decode(&ids, true);
                if model == "gpt2" {
                    assert_eq!(&t.decode(&ids, false), text);
                }
            }
        }
    }

    #[test]
    fn malformed_metadata_names_the_key() {
        err_names(
            build("gpt2", |kv| {
                set(kv, "tokenizer.ggml.merges", strs(&["h zz"]))
            }),
            "tokenizer.ggml.merges",
        );
        err_names(
            build("gpt2", |kv| set(kv, "tokenizer.ggml.merges", strs(&["hx"]))),
            "tokenizer.ggml.merges",
        );
        err_names(
            build("llama", |kv| {
                set(
                    kv,
                    "tokenizer.ggml.scores",
                    Value::Array(ValueType::F32, vec![Value::F32(0.0)]),
                )
            }),
            "tokenizer.ggml.scores",
        );
        err_names(
            build("llama", |kv| {
                let n = 8 + 256;
                let mut types = vec![Value::I32(1); n];
                types[5] = Value::I32(9);
                set(
                    kv,
                    "tokenizer.ggml.token_type",
                    Value::Array(ValueType::I32, types),
                )
            }),
            "tokenizer.ggml.token_type",
        );
        err_names(
            build("llama", |kv| set(kv, "tokenizer.ggml.tokens", strs(&[]))),
            "tokenizer.ggml.tokens",
        );
        err_names(
            build("llama", |kv| {
                set(kv, "tokenizer.ggml.bos_token_id", Value::U32(100_000))
            }),
            "tokenizer.ggml.bos_token_id",
        );
        err_names(build("rwkv", |_| {}), "rwkv");
        err_names(
            build("gpt2", |kv| {
                set(kv, "tokenizer.ggml.pre", Value::String("mystery".into()))
            }),
            "mystery",
        );
    }
}
