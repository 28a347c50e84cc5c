//! The vocabulary SentencePiece and BPE share: tokens, scores, types and llama.cpp's
//! attributes, specials, and the split of text at special tokens; the helpers both
//! tokenizers' merge loops use.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::error::{At, Error, ModelFile, Result};
use crate::model::gguf::{Gguf, Value, ValueType};

/// FxHash (rustc's): token texts and merge pairs are short and not attacker-chosen keys
/// worth SipHash's cost; the lookups are most of encoding's time.
#[derive(Default, Clone, Copy)]
pub(super) struct Fx(u64);

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl Fx {
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

pub(super) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

pub(super) fn key_err(key: &str, what: impl Into<String>) -> Error {
    Error::model_at(ModelFile::Vocabulary, At::Key(key.into()), what)
}

/// A token's type (`tokenizer.ggml.token_type`, llama.cpp's `llama_token_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenType {
    /// 0
    Undefined,
    /// 1: an ordinary piece.
    Normal,
    /// 2: the unknown token.
    Unknown,
    /// 3: a control token (BOS, EOS, ...): matched in text only with `parse_special`,
    /// decoded to nothing unless asked.
    Control,
    /// 4: a user-defined token: always matched whole in text.
    UserDefined,
    /// 5
    Unused,
    /// 6: a byte-fallback token `<0xNN>`.
    Byte,
}

impl TokenType {
    fn from_i64(v: i64) -> Option<Self> {
        Some(match v {
            0 => Self::Undefined,
            1 => Self::Normal,
            2 => Self::Unknown,
            3 => Self::Control,
            4 => Self::UserDefined,
            5 => Self::Unused,
            6 => Self::Byte,
            _ => return None,
        })
    }
}

/// Special token ids from metadata.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Specials {
    /// `tokenizer.ggml.bos_token_id`
    pub bos: Option<u32>,
    /// `tokenizer.ggml.eos_token_id`
    pub eos: Option<u32>,
    /// `tokenizer.ggml.eot_token_id`
    pub eot: Option<u32>,
    /// `tokenizer.ggml.padding_token_id`
    pub pad: Option<u32>,
    /// `tokenizer.ggml.unknown_token_id`
    pub unk: Option<u32>,
}

/// The vocabulary shared by SentencePiece and BPE: tokens, scores, types, specials.
#[derive(Clone, Debug)]
pub struct Vocab {
    pub(super) tokens: Vec<String>,
    ids: FxMap<String, u32>,
    pub(super) scores: Vec<f32>,
    pub(super) types: Vec<TokenType>,
    /// llama.cpp's token attributes ([`attr`]): the types, as llama.cpp's loader overrides
    /// them (control-looking texts, per-model strip flags).
    pub(super) attrs: Vec<u16>,
    pub(super) specials: Specials,
    pub(super) add_bos: bool,
    pub(super) add_eos: bool,
    /// Control, user-defined and unknown tokens, longest text first (llama.cpp's
    /// `cache_special_tokens`).
    special_cache: Vec<u32>,
    /// [`Vocab::byte_token`] of each byte.
    byte_ids: Box<[Option<u32>; 256]>,
}

/// llama.cpp's `llama_token_attr` bits.
pub(super) mod attr {
    pub const UNKNOWN: u16 = 1 << 0;
    pub const UNUSED: u16 = 1 << 1;
    pub const NORMAL: u16 = 1 << 2;
    pub const CONTROL: u16 = 1 << 3;
    pub const USER_DEFINED: u16 = 1 << 4;
    pub const BYTE: u16 = 1 << 5;
    pub const LSTRIP: u16 = 1 << 7;
    pub const RSTRIP: u16 = 1 << 8;
}

/// Texts llama.cpp's loader takes for end-of-generation tokens: each is made a control
/// token whatever its type in the file (`special_eog_ids` in src/llama-vocab.cpp).
const EOG_TEXTS: [&str; 22] = [
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<\u{ff5c}end\u{2581}of\u{2581}sentence\u{ff5c}>",
    "[e~[",
];

/// The fill-in-the-middle tokens llama.cpp's loader looks for by text when the file names
/// none (`tokenizer.ggml.<key>`), made control tokens: (keys, texts). llama.cpp takes the
/// first match in hash order; vocabularies have at most one of each.
const FIM_TEXTS: [(&[&str], &[&str]); 6] = [
    (
        &["fim_pre_token_id", "prefix_token_id"],
        &[
            "<|fim_prefix|>",
            "<fim-prefix>",
            "<fim_prefix>",
            "<\u{ff5c}fim\u{2581}begin\u{ff5c}>",
            "<PRE>",
            "\u{2581}<PRE>",
            "<|code_prefix|>",
            "<|prefix|>",
        ],
    ),
    (
        &["fim_suf_token_id", "suffix_token_id"],
        &[
            "<|fim_suffix|>",
            "<fim-suffix>",
            "<fim_suffix>",
            "<\u{ff5c}fim\u{2581}hole\u{ff5c}>",
            "<SUF>",
            "\u{2581}<SUF>",
            "<|code_suffix|>",
            "<|suffix|>",
        ],
    ),
    (
        &["fim_mid_token_id", "middle_token_id"],
        &[
            "<|fim_middle|>",
            "<fim-middle>",
            "<fim_middle>",
            "<\u{ff5c}fim\u{2581}end\u{ff5c}>",
            "<MID>",
            "\u{2581}<MID>",
            "<|code_middle|>",
            "<|middle|>",
        ],
    ),
    (
        &["fim_pad_token_id"],
        &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"],
    ),
    (
        &["fim_rep_token_id"],
        &[
            "<|fim_repo|>",
            "<|repo_name|>",
            "<fim-repo>",
            "<REPO>",
            "<reponame>",
        ],
    ),
    (&["fim_sep_token_id"], &["<|file_sep|>"]),
];

fn numbers<'v>(g: &'v Gguf, key: &str, n: usize) -> Result<Option<&'v [Value]>> {
    match g.get(key) {
        None => Ok(None),
        Some(Value::Array(t, items)) if *t != ValueType::String && *t != ValueType::Array => {
            if items.len() != n {
                return Err(key_err(
                    key,
                    format!("{} entries for {n} tokens", items.len()),
                ));
            }
            Ok(Some(items))
        }
        Some(v) => Err(key_err(
            key,
            format!("must be an array of numbers, got {:?}", v.value_type()),
        )),
    }
}

/// llama.cpp's token attributes: the file's types, then what its loader changes
/// (`llama_vocab::impl::load` in src/llama-vocab.cpp): control-looking texts (end of
/// generation, fill-in-the-middle) become control tokens, gpt-oss's channel tokens
/// user-defined, and Phi-3's special tokens strip the whitespace after them.
fn token_attrs(
    g: &Gguf,
    tokens: &[String],
    ids: &FxMap<String, u32>,
    types: &[TokenType],
    specials: &Specials,
) -> Vec<u16> {
    let mut attrs: Vec<u16> = types
        .iter()
        .map(|t| match t {
            TokenType::Undefined => 0,
            TokenType::Normal => attr::NORMAL,
            TokenType::Unknown => attr::UNKNOWN,
            TokenType::Control => attr::CONTROL,
            TokenType::UserDefined => attr::USER_DEFINED,
            TokenType::Unused => attr::UNUSED,
            TokenType::Byte => attr::BYTE,
        })
        .collect();
    let meta_id = |key: &str| -> Option<u32> {
        g.get(&format!("tokenizer.ggml.{key}"))
            .and_then(Value::as_i64)
            .filter(|&i| (0..tokens.len() as i64).contains(&i))
            .map(|i| i as u32)
    };
    let mut eog: Vec<u32> = Vec::new();
    for (i, (keys, texts)) in FIM_TEXTS.iter().enumerate() {
        let found = match keys.iter().find_map(|k| meta_id(k)) {
            Some(id) => Some(id),
            None => texts
                .iter()
                .find_map(|t| ids.get(*t).copied())
                .inspect(|&id| {
                    attrs[id as usize] |= attr::CONTROL;
                }),
        };
        // FIM pad, repo and separator end generation.
        if i >= 3 {
            eog.extend(found);
        }
    }
    for t in EOG_TEXTS {
        if let Some(&id) = ids.get(t) {
            attrs[id as usize] |= attr::CONTROL;
            eog.push(id);
        }
    }
    for t in ["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"] {
        if let Some(&id) = ids.get(t) {
            attrs[id as usize] = attr::USER_DEFINED;
        }
    }
    eog.extend(specials.eos);
    eog.extend(specials.eot);
    eog.extend(meta_id("eom_token_id"));
    let has = |t: &str| eog.iter().any(|&id| tokens[id as usize] == t);
    // o200k_harmony and solar-open: "<|end|>" is no end of generation there.
    if has("<|end|>") && has("<|call|>") && (has("<|return|>") || has("<|flush|>"))
        || has("<|end|>") && has("<|calls|>") && (has("<|return|>") || has("<|flush|>"))
    {
        if let Some(&id) = ids.get("<|end|>") {
            attrs[id as usize] = attr::USER_DEFINED;
        }
    }
    // Gemma 4 and PLaMo: "</s>" is a normal token.
    if has("</s>") && (has("<|tool_response>") || has("<|plamo:eos|>")) {
        if let Some(&id) = ids.get("</s>") {
            attrs[id as usize] = attr::NORMAL;
        }
    }
    let text = |key: &str| g.get(key).and_then(Value::as_str).unwrap_or("");
    let name = text("general.name").to_ascii_lowercase();
    let pre = text("tokenizer.ggml.pre");
    let arch = text("general.architecture");
    let mut set = |t: &str, bit: u16, on: bool| {
        if let Some(&id) = ids.get(t) {
            if on {
                attrs[id as usize] |= bit;
            } else {
                attrs[id as usize] &= !bit;
            }
        }
    };
    if ["jina-v2-de", "jina-v2-es", "jina-v2-code"]
        .iter()
        .any(|p| pre.contains(p))
        || ["nomic-bert-moe", "jina-bert-v3"]
            .iter()
            .any(|a| arch.contains(a))
    {
        set("<mask>", attr::LSTRIP, true);
    } else if name.contains("phi-3") || name.contains("phi3") {
        let special = attr::CONTROL | attr::USER_DEFINED | attr::UNKNOWN;
        for a in attrs.iter_mut().filter(|a| **a & special != 0) {
            *a |= attr::RSTRIP;
        }
        let mut set = |t: &str, on: bool| {
            if let Some(&id) = ids.get(t) {
                if on {
                    attrs[id as usize] |= attr::RSTRIP;
                } else {
                    attrs[id as usize] &= !attr::RSTRIP;
                }
            }
        };
        set("</s>", true);
        for t in ["<unk>", "<s>", "<|endoftext|>"] {
            set(t, false);
        }
    } else if name.contains("modern-bert") {
        set("[MASK]", attr::LSTRIP, true);
    }
    attrs
}

impl Vocab {
    /// What llama.cpp's `token_to_piece` does alike for every tokenizer model: nothing for an
    /// id out of range, or for a control or unknown token unless `special`; a control,
    /// unknown or user-defined token's text as it is. Otherwise the token's text and
    /// attributes, for the model to decode (normal and byte tokens: each model its own way).
    pub(super) fn common_piece(
        &self,
        id: u32,
        special: bool,
        out: &mut Vec<u8>,
    ) -> Option<(&str, u16)> {
        let text = self.tokens.get(id as usize)?;
        let a = self.attrs[id as usize];
        if a & (attr::CONTROL | attr::UNKNOWN) != 0 && !special {
            return None;
        }
        if a & (attr::CONTROL | attr::UNKNOWN | attr::USER_DEFINED) != 0 {
            out.extend_from_slice(text.as_bytes());
            return None;
        }
        Some((text, a))
    }

    /// Reads `tokenizer.ggml.{tokens,scores,token_type,*_token_id,add_bos_token,add_eos_token}`;
    /// `add_bos` is the model's default when the file does not say.
    pub(super) fn from_gguf(g: &Gguf, add_bos_default: bool) -> Result<Self> {
        const TOKENS: &str = "tokenizer.ggml.tokens";
        let raw = g.get_str_array(TOKENS)?;
        let n = raw.len();
        if n == 0 {
            return Err(key_err(TOKENS, "no tokens"));
        }
        if n > i32::MAX as usize {
            return Err(key_err(TOKENS, format!("{n} tokens")));
        }
        let mut tokens = Vec::with_capacity(n);
        let mut ids = FxMap::with_capacity_and_hasher(n, Default::default());
        for (i, t) in raw.iter().enumerate() {
            // llama.cpp renames empty tokens so that every text names one id.
            let t = if t.is_empty() {
                format!("[EMPTY_{i}]")
            } else {
                t.to_string()
            };
            if ids.insert(t.clone(), i as u32).is_some() {
                return Err(key_err(TOKENS, format!("token {t:?} appears twice")));
            }
            tokens.push(t);
        }
        let scores = match numbers(g, "tokenizer.ggml.scores", n)? {
            Some(items) => items
                .iter()
                .map(|v| v.as_f64().map(|f| f as f32).unwrap_or(0.0))
                .collect(),
            None => vec![0.0; n],
        };
        const TYPES: &str = "tokenizer.ggml.token_type";
        let types = match numbers(g, TYPES, n)? {
            Some(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_i64().and_then(TokenType::from_i64).ok_or_else(|| {
                        key_err(TYPES, format!("token {i} has type {v:?}, not 0..=6"))
                    })
                })
                .collect::<Result<Vec<_>>>()?,
            None => vec![TokenType::Normal; n],
        };
        let id = |key: &str| -> Result<Option<u32>> {
            match g.get(key) {
                None => Ok(None),
                Some(v) => match v.as_i64() {
                    // llama.cpp writes -1 (as a u32: 2^32-1) for "none".
                    Some(-1) | Some(0xFFFF_FFFF) => Ok(None),
                    Some(i) if (0..n as i64).contains(&i) => Ok(Some(i as u32)),
                    _ => Err(key_err(key, format!("{v:?} is not a token id (< {n})"))),
                },
            }
        };
        let specials = Specials {
            bos: id("tokenizer.ggml.bos_token_id")?,
            eos: id("tokenizer.ggml.eos_token_id")?,
            eot: id("tokenizer.ggml.eot_token_id")?,
            pad: id("tokenizer.ggml.padding_token_id")?,
            unk: id("tokenizer.ggml.unknown_token_id")?,
        };
        let flag = |key: &str, default: bool| -> Result<bool> {
            match g.get(key) {
                None => Ok(default),
                Some(Value::Bool(b)) => Ok(*b),
                Some(v) => Err(key_err(key, format!("must be a bool, got {v:?}"))),
            }
        };
        let add_bos = flag("tokenizer.ggml.add_bos_token", add_bos_default)?;
        let add_eos = flag("tokenizer.ggml.add_eos_token", false)?;
        if add_bos && specials.bos.is_none() {
            return Err(key_err(
                "tokenizer.ggml.bos_token_id",
                "missing, but BOS is to be added",
            ));
        }
        if add_eos && specials.eos.is_none() {
            return Err(key_err(
                "tokenizer.ggml.eos_token_id",
                "missing, but EOS is to be added",
            ));
        }
        let attrs = token_attrs(g, &tokens, &ids, &types, &specials);
        let mut special_cache: Vec<u32> = (0..n as u32)
            .filter(|&i| {
                attrs[i as usize] & (attr::CONTROL | attr::USER_DEFINED | attr::UNKNOWN) != 0
            })
            .collect();
        crate::sort::by_key(&mut special_cache, |&i| {
            crate::sort::desc(crate::sort::key(tokens[i as usize].len() as u64))
        });
        let mut v = Self {
            tokens,
            ids,
            scores,
            types,
            attrs,
            specials,
            add_bos,
            add_eos,
            special_cache,
            byte_ids: Box::new([None; 256]),
        };
        for b in 0..=255u8 {
            v.byte_ids[b as usize] = v.find_byte_token(b);
        }
        Ok(v)
    }

    pub(super) fn id(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    /// The `<0xNN>` token of a byte, else the byte itself as a token, else UNK.
    pub(super) fn byte_token(&self, b: u8) -> Option<u32> {
        self.byte_ids[b as usize]
    }

    fn find_byte_token(&self, b: u8) -> Option<u32> {
        self.id(&format!("<0x{b:02X}>"))
            .or_else(|| (b < 0x80).then(|| self.id(&(b as char).to_string()))?)
            .or(self.specials.unk)
    }

    /// Splits `text` into raw-text and special-token fragments (llama.cpp's
    /// `tokenizer_st_partition`): user-defined tokens always, control and unknown tokens
    /// only with `parse_special`; longer tokens first.
    pub(super) fn partition<'t>(&self, text: &'t str, parse_special: bool) -> Vec<Frag<'t>> {
        let mut frags = vec![Frag::Text(text)];
        if text.is_empty() {
            return Vec::new();
        }
        for &sid in &self.special_cache {
            let a = self.attrs[sid as usize];
            if !parse_special && a & (attr::CONTROL | attr::UNKNOWN) != 0 {
                continue;
            }
            let s = self.tokens[sid as usize].as_str();
            if !frags
                .iter()
                .any(|f| matches!(f, Frag::Text(t) if t.contains(s)))
            {
                continue;
            }
            let mut next = Vec::with_capacity(frags.len() + 2);
            for f in frags {
                match f {
                    Frag::Text(mut t) => {
                        while let Some(at) = t.find(s) {
                            let mut left = &t[..at];
                            if a & attr::LSTRIP != 0 {
                                left = left.trim_end_matches(c_space);
                            }
                            if !left.is_empty() {
                                next.push(Frag::Text(left));
                            }
                            next.push(Frag::Token(sid));
                            t = &t[at + s.len()..];
                            if a & attr::RSTRIP != 0 {
                                t = t.trim_start_matches(c_space);
                            }
                        }
                        if !t.is_empty() {
                            next.push(Frag::Text(t));
                        }
                    }
                    tok => next.push(tok),
                }
            }
            frags = next;
        }
        frags
    }
}

/// C's `isspace` in the "C" locale (llama.cpp strips around special tokens with it).
fn c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{b}' | '\u{c}' | '\r')
}

pub(super) enum Frag<'t> {
    Text(&'t str),
    Token(u32),
}

/// A symbol of the merge loop: a byte range of the text, linked to its neighbours.
#[derive(Clone, Copy)]
pub(super) struct Sym {
    pub(super) start: usize,
    pub(super) n: usize,
    pub(super) prev: Option<usize>,
    pub(super) next: Option<usize>,
}

pub(super) fn char_symbols(text: &str) -> Vec<Sym> {
    let count = text.chars().count();
    text.char_indices()
        .enumerate()
        .map(|(i, (at, c))| Sym {
            start: at,
            n: c.len_utf8(),
            prev: i.checked_sub(1),
            next: (i + 1 < count).then_some(i + 1),
        })
        .collect()
}
