//! The tokenizers GGUF language models name in `tokenizer.ggml.model`, as llama.cpp runs
//! them (src/llama-vocab.cpp): SentencePiece (`llama`, llama.cpp's `llm_tokenizer_spm`),
//! byte-level BPE (`gpt2`, `llm_tokenizer_bpe` with the pre-tokenizers of [`super::pretok`])
//! and WordPiece (`bert`, [`WordPiece`]). Decoding back to text and a streaming decoder.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Deref;

use crate::error::{At, Error, ModelFile, Result};
use crate::model::gguf::{Gguf, Value, ValueType};

use super::pretok::PreTokenizer;
use super::WordPiece;

const SPACE_MARK: &str = "\u{2581}";

/// FxHash (rustc's): token texts and merge pairs are short and not attacker-chosen keys
/// worth SipHash's cost; the lookups are most of encoding's time.
#[derive(Default, Clone, Copy)]
struct Fx(u64);

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

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

fn key_err(key: &str, what: impl Into<String>) -> Error {
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
    tokens: Vec<String>,
    ids: FxMap<String, u32>,
    scores: Vec<f32>,
    types: Vec<TokenType>,
    /// llama.cpp's token attributes ([`attr`]): the types, as llama.cpp's loader overrides
    /// them (control-looking texts, per-model strip flags).
    attrs: Vec<u16>,
    specials: Specials,
    add_bos: bool,
    add_eos: bool,
    /// Control, user-defined and unknown tokens, longest text first (llama.cpp's
    /// `cache_special_tokens`).
    special_cache: Vec<u32>,
    /// [`Vocab::byte_token`] of each byte.
    byte_ids: Box<[Option<u32>; 256]>,
}

/// llama.cpp's `llama_token_attr` bits.
mod attr {
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
    /// Reads `tokenizer.ggml.{tokens,scores,token_type,*_token_id,add_bos_token,add_eos_token}`;
    /// `add_bos` is the model's default when the file does not say.
    fn from_gguf(g: &Gguf, add_bos_default: bool) -> Result<Self> {
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
        special_cache.sort_by_key(|&i| std::cmp::Reverse(tokens[i as usize].len()));
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

    fn id(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    /// The `<0xNN>` token of a byte, else the byte itself as a token, else UNK.
    fn byte_token(&self, b: u8) -> Option<u32> {
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
    fn partition<'t>(&self, text: &'t str, parse_special: bool) -> Vec<Frag<'t>> {
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

enum Frag<'t> {
    Text(&'t str),
    Token(u32),
}

/// SentencePiece (`tokenizer.ggml.model = "llama"`) as llama.cpp's `llm_tokenizer_spm`.
#[derive(Clone, Debug)]
pub struct Spm {
    vocab: Vocab,
    add_space_prefix: bool,
}

/// A bigram in SPM's queue: highest score first, then leftmost.
struct SpmBigram {
    score: f32,
    left: usize,
    right: usize,
    size: usize,
    /// The merged token.
    id: u32,
}

impl PartialEq for SpmBigram {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for SpmBigram {}
impl PartialOrd for SpmBigram {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for SpmBigram {
    fn cmp(&self, o: &Self) -> Ordering {
        self.score
            .partial_cmp(&o.score)
            .unwrap_or(Ordering::Equal)
            .then(o.left.cmp(&self.left))
    }
}

/// A symbol of the merge loop: a byte range of the text, linked to its neighbours.
#[derive(Clone, Copy)]
struct Sym {
    start: usize,
    n: usize,
    prev: Option<usize>,
    next: Option<usize>,
}

fn char_symbols(text: &str) -> Vec<Sym> {
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

impl Spm {
    fn spm_fragment(&self, text: &str, out: &mut Vec<u32>) {
        let v = &self.vocab;
        let mut syms = char_symbols(text);
        let mut queue = BinaryHeap::new();
        let try_add = |syms: &[Sym],
                       queue: &mut BinaryHeap<SpmBigram>,
                       l: Option<usize>,
                       r: Option<usize>| {
            let (Some(l), Some(r)) = (l, r) else { return };
            let (a, b) = (syms[l], syms[r]);
            let s = &text[a.start..a.start + a.n + b.n];
            if let Some(id) = v.id(s) {
                queue.push(SpmBigram {
                    score: v.scores[id as usize],
                    left: l,
                    right: r,
                    size: s.len(),
                    id,
                });
            }
        };
        // The token of each symbol, once known (merged symbols always are tokens).
        let mut ids: Vec<Option<u32>> = vec![None; syms.len()];
        let mut known = vec![false; syms.len()];
        for i in 1..syms.len() {
            try_add(&syms, &mut queue, Some(i - 1), Some(i));
        }
        while let Some(bg) = queue.pop() {
            let (l, r) = (syms[bg.left], syms[bg.right]);
            if l.n == 0 || r.n == 0 || l.n + r.n != bg.size {
                continue;
            }
            syms[bg.left].n += r.n;
            syms[bg.right].n = 0;
            syms[bg.left].next = r.next;
            ids[bg.left] = Some(bg.id);
            known[bg.left] = true;
            if let Some(nx) = r.next {
                syms[nx].prev = Some(bg.left);
            }
            try_add(&syms, &mut queue, l.prev, Some(bg.left));
            try_add(&syms, &mut queue, Some(bg.left), r.next);
        }
        let mut i = if syms.is_empty() { None } else { Some(0) };
        while let Some(k) = i {
            let s = syms[k];
            let piece = &text[s.start..s.start + s.n];
            let id = if known[k] { ids[k] } else { v.id(piece) };
            match id {
                Some(id) => out.push(id),
                None => out.extend(piece.bytes().filter_map(|b| v.byte_token(b))),
            }
            i = s.next;
        }
    }

    fn encode(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<u32> {
        let v = &self.vocab;
        let mut out = Vec::new();
        if add_special && v.add_bos {
            out.extend(v.specials.bos);
        }
        let mut prev_special = true;
        for f in v.partition(text, parse_special) {
            match f {
                Frag::Text(t) => {
                    let mut s = String::with_capacity(t.len() + 3);
                    if self.add_space_prefix && prev_special {
                        s.push(' ');
                    }
                    s.push_str(t);
                    let s = s.replace(' ', SPACE_MARK);
                    self.spm_fragment(&s, &mut out);
                    prev_special = false;
                }
                Frag::Token(id) => {
                    out.push(id);
                    prev_special = true;
                }
            }
        }
        if add_special && v.add_eos {
            out.extend(v.specials.eos);
        }
        out
    }

    fn piece(&self, id: u32, special: bool, out: &mut Vec<u8>) {
        let v = &self.vocab;
        let Some(text) = v.tokens.get(id as usize) else {
            return;
        };
        // As llama.cpp's token_to_piece: control and unknown tokens give their text only
        // when asked, user-defined ones always; unused and undefined ones nothing.
        let a = v.attrs[id as usize];
        if a & (attr::CONTROL | attr::UNKNOWN) != 0 && !special {
            return;
        }
        if a & (attr::CONTROL | attr::UNKNOWN | attr::USER_DEFINED) != 0 {
            out.extend_from_slice(text.as_bytes());
        } else if a & attr::NORMAL != 0 {
            out.extend_from_slice(text.replace(SPACE_MARK, " ").as_bytes());
        } else if a & attr::BYTE != 0 {
            match parse_byte_token(text) {
                Some(b) => out.push(b),
                None => out.extend_from_slice(text.as_bytes()),
            }
        }
    }
}

fn parse_byte_token(t: &str) -> Option<u8> {
    let hex = t.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// GPT-2's byte-to-unicode map: printable Latin-1 bytes map to themselves, the others to
/// U+0100 onwards, in byte order.
fn byte_to_unicode() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF);
        map[b as usize] = if printable {
            b as char
        } else {
            let c = char::from_u32(0x100 + n).unwrap_or('\0');
            n += 1;
            c
        };
    }
    map
}

/// Byte-level BPE (`tokenizer.ggml.model = "gpt2"`) as llama.cpp's `llm_tokenizer_bpe`.
#[derive(Clone, Debug)]
pub struct Bpe {
    vocab: Vocab,
    pre: PreTokenizer,
    /// (left id, right id) → (rank, merged id).
    ranks: FxMap<(u32, u32), (u32, u32)>,
    ignore_merges: bool,
    byte_enc: Box<[char; 256]>,
    byte_dec: FxMap<char, u8>,
}

/// A bigram in BPE's queue: lowest rank first, then leftmost.
#[derive(PartialEq, Eq)]
struct BpeBigram {
    rank: u32,
    left: usize,
    right: usize,
    lid: u32,
    rid: u32,
}
impl PartialOrd for BpeBigram {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for BpeBigram {
    fn cmp(&self, o: &Self) -> Ordering {
        o.rank.cmp(&self.rank).then(o.left.cmp(&self.left))
    }
}

impl Bpe {
    fn new(vocab: Vocab, g: &Gguf, pre: PreTokenizer) -> Result<Self> {
        const MERGES: &str = "tokenizer.ggml.merges";
        let merges = g.get_str_array(MERGES)?;
        let mut ranks = FxMap::with_capacity_and_hasher(merges.len(), Default::default());
        for (i, m) in merges.iter().enumerate() {
            // llama.cpp splits at the first space after the first byte.
            let split = m
                .bytes()
                .skip(1)
                .position(|b| b == b' ')
                .map(|p| p + 1)
                .ok_or_else(|| key_err(MERGES, format!("merge {i} ({m:?}) has no space")))?;
            let (a, b) = (&m[..split], &m[split + 1..]);
            let missing = |t: &str| {
                key_err(
                    MERGES,
                    format!("merge {i} ({m:?}) names {t:?}, not a token"),
                )
            };
            let la = vocab.id(a).ok_or_else(|| missing(a))?;
            let lb = vocab.id(b).ok_or_else(|| missing(b))?;
            let ab = format!("{a}{b}");
            let merged = vocab.id(&ab).ok_or_else(|| missing(&ab))?;
            ranks.entry((la, lb)).or_insert((i as u32, merged));
        }
        let byte_enc = Box::new(byte_to_unicode());
        let byte_dec = byte_enc
            .iter()
            .enumerate()
            .map(|(b, &c)| (c, b as u8))
            .collect();
        let ignore_merges = matches!(
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
        Ok(Self {
            vocab,
            pre,
            ranks,
            ignore_merges,
            byte_enc,
            byte_dec,
        })
    }

    fn word(&self, word: &str, out: &mut Vec<u32>) {
        let v = &self.vocab;
        if self.ignore_merges {
            if let Some(id) = v.id(word) {
                out.push(id);
                return;
            }
        }
        let mut syms = char_symbols(word);
        let mut ids: Vec<Option<u32>> = syms
            .iter()
            .map(|s| v.id(&word[s.start..s.start + s.n]))
            .collect();
        let mut queue = BinaryHeap::new();
        let try_add = |ids: &[Option<u32>],
                       queue: &mut BinaryHeap<BpeBigram>,
                       l: Option<usize>,
                       r: Option<usize>| {
            let (Some(l), Some(r)) = (l, r) else { return };
            let (Some(lid), Some(rid)) = (ids[l], ids[r]) else {
                return;
            };
            if let Some(&(rank, _)) = self.ranks.get(&(lid, rid)) {
                queue.push(BpeBigram {
                    rank,
                    left: l,
                    right: r,
                    lid,
                    rid,
                });
            }
        };
        for i in 1..syms.len() {
            try_add(&ids, &mut queue, Some(i - 1), Some(i));
        }
        while let Some(bg) = queue.pop() {
            let (l, r) = (syms[bg.left], syms[bg.right]);
            if l.n == 0
                || r.n == 0
                || ids[bg.left] != Some(bg.lid)
                || ids[bg.right] != Some(bg.rid)
                || l.next != Some(bg.right)
            {
                continue;
            }
            let Some(&(_, merged)) = self.ranks.get(&(bg.lid, bg.rid)) else {
                continue;
            };
            syms[bg.left].n += r.n;
            syms[bg.right].n = 0;
            ids[bg.left] = Some(merged);
            syms[bg.left].next = r.next;
            if let Some(nx) = r.next {
                syms[nx].prev = Some(bg.left);
            }
            try_add(&ids, &mut queue, l.prev, Some(bg.left));
            try_add(&ids, &mut queue, Some(bg.left), r.next);
        }
        let mut i = if syms.is_empty() { None } else { Some(0) };
        while let Some(k) = i {
            let s = syms[k];
            match ids[k] {
                Some(id) => out.push(id),
                None => {
                    // A code point that is no token: its bytes, where they are tokens.
                    for b in word[s.start..s.start + s.n].bytes() {
                        if b < 0x80 {
                            out.extend(v.id(&(b as char).to_string()));
                        }
                    }
                }
            }
            i = s.next;
        }
    }

    fn encode(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<u32> {
        let v = &self.vocab;
        let mut out = Vec::new();
        if add_special && v.add_bos {
            out.extend(v.specials.bos);
        }
        let mut enc = String::new();
        for f in v.partition(text, parse_special) {
            match f {
                Frag::Text(t) => {
                    for w in self.pre.split(t) {
                        enc.clear();
                        enc.extend(w.bytes().map(|b| self.byte_enc[b as usize]));
                        self.word(&enc, &mut out);
                    }
                }
                Frag::Token(id) => out.push(id),
            }
        }
        if add_special && v.add_eos {
            out.extend(v.specials.eos);
        }
        out
    }

    fn piece(&self, id: u32, special: bool, out: &mut Vec<u8>) {
        let v = &self.vocab;
        let Some(text) = v.tokens.get(id as usize) else {
            return;
        };
        // As llama.cpp's token_to_piece (a byte-type token, which llama.cpp refuses in
        // BPE, decodes as a normal one).
        let a = v.attrs[id as usize];
        if a & (attr::CONTROL | attr::UNKNOWN) != 0 && !special {
            return;
        }
        if a & (attr::CONTROL | attr::UNKNOWN | attr::USER_DEFINED) != 0 {
            out.extend_from_slice(text.as_bytes());
        } else if a & (attr::NORMAL | attr::BYTE) != 0 {
            for c in text.chars() {
                match self.byte_dec.get(&c) {
                    Some(&b) => out.push(b),
                    None => {
                        let mut buf = [0; 4];
                        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                }
            }
        }
    }
}

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
            other => Err(key_err(
                MODEL,
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

/// Decodes one id at a time, giving out only complete UTF-8: bytes of a character split
/// across tokens are held until it completes; an invalid sequence becomes U+FFFD. `T` is
/// how it holds its tokenizer: `&Tokenizer` ([`Tokenizer::stream`]), or an owner such as
/// `Rc<Tokenizer>` (the JS bindings' stream outlives any borrow).
pub struct StreamDecoder<T: Deref<Target = Tokenizer>> {
    tok: T,
    special: bool,
    pending: Vec<u8>,
    first: bool,
    /// Ids pushed so far.
    count: usize,
}

impl<T: Deref<Target = Tokenizer>> StreamDecoder<T> {
    /// A streaming decoder over `tok` (`special`: control tokens give their text).
    pub fn new(tok: T, special: bool) -> Self {
        Self {
            tok,
            special,
            pending: Vec::new(),
            first: true,
            count: 0,
        }
    }

    /// The text `id` completes (may be empty).
    pub fn push(&mut self, id: u32) -> String {
        let start = self.pending.len();
        self.tok.piece_bytes(id, self.special, &mut self.pending);
        self.count += 1;
        if self.first {
            // As `decode`: SentencePiece drops the leading space of the first token after
            // a leading BOS; WordPiece that of the first piece with any text.
            let drop_space = match &*self.tok {
                Tokenizer::SentencePiece(s) => {
                    let after_bos = self.count == 1 && Some(id) == s.vocab.specials.bos;
                    if !after_bos {
                        self.first = false;
                    }
                    s.add_space_prefix && !after_bos
                }
                Tokenizer::WordPiece(_) => {
                    self.first = self.pending.len() == start;
                    true
                }
                Tokenizer::Bpe(_) => {
                    self.first = false;
                    false
                }
            };
            if drop_space && self.pending.len() > start && self.pending[start] == b' ' {
                self.pending.remove(start);
            }
        }
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    break;
                }
                Err(e) => {
                    let good = e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.pending[..good]));
                    match e.error_len() {
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..good + bad);
                        }
                        None => {
                            // An incomplete character at the end: hold it.
                            self.pending.drain(..good);
                            break;
                        }
                    }
                }
            }
        }
        out
    }

    /// Whatever is held at the end: an incomplete character becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        let s = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::gguf::GgufWriter;

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
