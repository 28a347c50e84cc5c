//! BERT's WordPiece tokenizer, as Hugging Face `tokenizers` runs it for uncased BERT models
//! (`BertNormalizer` → `BertPreTokenizer` → `WordPiece`).
//!
//! Normalization: drop NUL, U+FFFD and control, format and private-use characters (Cc/Cf/Co
//! except tab, CR, LF; unassigned code points stay), map whitespace to a space, put spaces
//! around CJK ideographs, strip accents (NFD, then drop nonspacing marks, Mn) and lower-case
//! each character. Pre-tokenization splits on whitespace and isolates each punctuation
//! character (ASCII punctuation or Unicode P*). Categories and NFD follow Unicode 9, the
//! tables of the reference (`tokenizers` uses `unicode_categories`, whose categories
//! `tokenizer/unicode9.rs` keeps as ranges, and `unicode-normalization-alignments`): characters assigned since then are neither dropped,
//! split off as punctuation, stripped as marks, decomposed nor reordered. WordPiece
//! then matches each word greedily, longest piece first, continuation pieces prefixed with
//! `##`; a word with an unmatched rest, or longer than 100 characters, becomes `[UNK]`.

mod llm;
pub mod pretok;
mod unicode9;

pub use llm::{Bpe, Specials, Spm, StreamDecoder, TokenType, Tokenizer};

use std::collections::HashMap;

use unicode_normalization::char::{canonical_combining_class, decompose_canonical};

use crate::error::{At, Error, ModelFile, Result};
use crate::model::gguf::Gguf;
use unicode9::{NONSPACING_MARK, OTHER, PUNCTUATION, UNASSIGNED};

/// Words longer than this many characters become `[UNK]` (BERT's `max_input_chars_per_word`).
pub const MAX_CHARS_PER_WORD: usize = 100;
/// The prefix of word pieces that continue a word.
const CONTINUATION: &str = "##";
/// Special tokens matched whole in raw text.
const SPECIALS: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
/// llama.cpp's converter marks word starts with this (and drops `##`) in GGUF vocabularies.
const PHANTOM_SPACE: char = '\u{2581}';

fn vocab_err(what: impl Into<String>) -> Error {
    Error::model(ModelFile::Vocabulary, what)
}

/// A WordPiece vocabulary with BERT's special tokens and normalization.
#[derive(Clone, Debug)]
pub struct WordPiece {
    tokens: Vec<String>,
    ids: HashMap<String, u32>,
    unk: u32,
    cls: u32,
    sep: u32,
    pad: u32,
}

impl WordPiece {
    /// A tokenizer over `tokens` (id = index, `vocab.txt` spelling: continuations start
    /// with `##`); `[UNK]`, `[CLS]`, `[SEP]` and `[PAD]` must be among them.
    pub fn new(tokens: Vec<String>) -> Result<Self> {
        if tokens.len() > u32::MAX as usize {
            return Err(vocab_err("more than 2^32 tokens"));
        }
        let mut ids = HashMap::with_capacity(tokens.len());
        for (i, t) in tokens.iter().enumerate() {
            // The first spelling wins, as in Hugging Face's vocab loading.
            ids.entry(t.clone()).or_insert(i as u32);
        }
        let special = |s: &str| {
            ids.get(s)
                .copied()
                .ok_or_else(|| vocab_err(format!("the special token {s} is missing")))
        };
        Ok(Self {
            unk: special("[UNK]")?,
            cls: special("[CLS]")?,
            sep: special("[SEP]")?,
            pad: special("[PAD]")?,
            tokens,
            ids,
        })
    }

    /// A tokenizer from a `vocab.txt` (one token per line).
    pub fn from_vocab_txt(text: &str) -> Result<Self> {
        Self::new(text.lines().map(str::to_string).collect())
    }

    /// A tokenizer from a GGUF file's `tokenizer.ggml.tokens` (`tokenizer.ggml.model` must be
    /// `"bert"`). Vocabularies written by llama.cpp's converter, which mark word starts
    /// with U+2581 instead of marking continuations with `##`, are turned back.
    pub fn from_gguf(g: &Gguf) -> Result<Self> {
        let model = g.get_str("tokenizer.ggml.model")?;
        if model != "bert" {
            return Err(Error::model_at(
                ModelFile::Vocabulary,
                At::Key("tokenizer.ggml.model".into()),
                format!("{model:?}; WordPiece needs \"bert\""),
            ));
        }
        let raw = g.get_str_array("tokenizer.ggml.tokens")?;
        let phantom = raw.iter().any(|t| t.starts_with(PHANTOM_SPACE))
            && !raw.iter().any(|t| t.starts_with(CONTINUATION));
        let tokens = raw
            .iter()
            .map(|t| {
                if !phantom {
                    t.to_string()
                } else if let Some(word) = t.strip_prefix(PHANTOM_SPACE) {
                    word.to_string()
                } else if t.len() > 2 && t.starts_with('[') && t.ends_with(']') {
                    t.to_string()
                } else {
                    format!("{CONTINUATION}{t}")
                }
            })
            .collect();
        Self::new(tokens)
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the vocabulary is empty (never, once built: the specials are in it).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The id of a token (`vocab.txt` spelling).
    pub fn id(&self, token: &str) -> Option<u32> {
        self.ids.get(token).copied()
    }

    /// The token of an id.
    pub fn token(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    /// `[CLS]`'s id.
    pub fn cls_id(&self) -> u32 {
        self.cls
    }

    /// `[SEP]`'s id.
    pub fn sep_id(&self) -> u32 {
        self.sep
    }

    /// `[PAD]`'s id.
    pub fn pad_id(&self) -> u32 {
        self.pad
    }

    /// `[UNK]`'s id.
    pub fn unk_id(&self) -> u32 {
        self.unk
    }

    /// Token ids of `text` without added `[CLS]`/`[SEP]`. Special tokens written in the
    /// text itself (`[CLS]`, `[SEP]`, `[PAD]`, `[UNK]`, `[MASK]`, exact spelling) are kept
    /// whole, as Hugging Face's added-token matching does before normalization.
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let specials: Vec<(&str, u32)> = SPECIALS
            .iter()
            .filter_map(|&s| Some((s, self.id(s)?)))
            .collect();
        // Where each special token next occurs, searched again only once passed: the scan
        // stays linear however many special tokens the text holds.
        let mut found: Vec<Option<usize>> = specials.iter().map(|(s, _)| text.find(s)).collect();
        let mut pos = 0;
        loop {
            for (f, (s, _)) in found.iter_mut().zip(&specials) {
                if f.is_some_and(|at| at < pos) {
                    *f = text[pos..].find(s).map(|at| pos + at);
                }
            }
            let next = found
                .iter()
                .zip(&specials)
                .filter_map(|(f, &(s, id))| Some((f.as_ref().copied()?, s, id)))
                .min_by_key(|&(at, s, _)| (at, std::cmp::Reverse(s.len())));
            let end = next.map_or(text.len(), |(at, _, _)| at);
            for word in pre_tokenize(&normalize(&text[pos..end])) {
                self.word_pieces(word, &mut out);
            }
            match next {
                Some((at, s, id)) => {
                    out.push(id);
                    pos = at + s.len();
                }
                None => break,
            }
        }
        out
    }

    /// `[CLS] pieces [SEP]`, at most `max_tokens` ids in all: longer texts keep their first
    /// `max_tokens - 2` pieces (the tail is cut, as BERT's truncation does).
    pub fn encode(&self, text: &str, max_tokens: usize) -> Result<Vec<u32>> {
        if max_tokens < 2 {
            return Err(Error::InvalidArgument(format!(
                "max_tokens must leave room for [CLS] and [SEP], got {max_tokens}"
            )));
        }
        let mut ids = Vec::with_capacity(max_tokens.min(512));
        ids.push(self.cls);
        let pieces = self.tokenize(text);
        ids.extend(pieces.iter().take(max_tokens - 2));
        ids.push(self.sep);
        Ok(ids)
    }

    fn word_pieces(&self, word: &str, out: &mut Vec<u32>) {
        if word.chars().count() > MAX_CHARS_PER_WORD {
            out.push(self.unk);
            return;
        }
        let start_len = out.len();
        let mut start = 0;
        let mut key = String::with_capacity(word.len() + CONTINUATION.len());
        while start < word.len() {
            let rest = &word[start..];
            let mut found = None;
            // Longest match first: try every char boundary from the end.
            let mut ends: Vec<usize> = rest.char_indices().map(|(i, _)| i).skip(1).collect();
            ends.push(rest.len());
            for &end in ends.iter().rev() {
                key.clear();
                if start > 0 {
                    key.push_str(CONTINUATION);
                }
                key.push_str(&rest[..end]);
                if let Some(&id) = self.ids.get(key.as_str()) {
                    found = Some((id, end));
                    break;
                }
            }
            match found {
                Some((id, end)) => {
                    out.push(id);
                    start += end;
                }
                None => {
                    out.truncate(start_len);
                    out.push(self.unk);
                    return;
                }
            }
        }
    }
}

/// Tab, LF and CR count as whitespace, not as control characters.
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Characters the reference's cleaning drops: Unicode 9's Cc, Cf and Co (`unicode_categories`'
/// `is_other`, which Hugging Face `tokenizers` uses), except tab, LF and CR. Unassigned code
/// points (Cn) and characters assigned after Unicode 9 are kept, as the reference keeps them.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r')
        && !c.is_ascii_graphic()
        && c != ' '
        && unicode9::class(c) == OTHER
}

/// ASCII punctuation, or Unicode 9's P* (the reference's tables).
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || (!c.is_ascii() && unicode9::class(c) == PUNCTUATION)
}

/// Whether `c` was assigned in Unicode 9, the version of the reference's tables
/// (`unicode_categories` and `unicode-normalization-alignments`).
fn assigned_in_unicode_9(c: char) -> bool {
    unicode9::class(c) != UNASSIGNED
}

/// Canonical combining class as Unicode 9 had it: 0 for characters assigned later (a
/// class, once assigned, never changes).
fn combining_class_9(c: char) -> u8 {
    match canonical_combining_class(c) {
        0 => 0,
        k if assigned_in_unicode_9(c) => k,
        _ => 0,
    }
}

/// NFD as the reference's Unicode 9 tables compute it: characters assigned since do not
/// decompose and do not reorder (decompositions of assigned characters never change).
fn nfd_unicode_9(text: &str) -> Vec<char> {
    let mut out: Vec<char> = Vec::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        let at = out.len();
        decompose_canonical(c, |d| out.push(d));
        let unchanged = out.len() == at + 1 && out[at] == c;
        if !unchanged && !assigned_in_unicode_9(c) {
            out.truncate(at);
            out.push(c);
        }
    }
    // Canonical ordering: each run of non-starters sorted (stably) by combining class.
    let mut i = 0;
    while i < out.len() {
        if out[i].is_ascii() || combining_class_9(out[i]) == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < out.len() && !out[i].is_ascii() && combining_class_9(out[i]) != 0 {
            i += 1;
        }
        crate::sort::by_key(&mut out[start..i], |&c| {
            crate::sort::key(u64::from(combining_class_9(c)))
        });
    }
    out
}

/// CJK ideographs (BERT's `_is_chinese_char` blocks), which become words of their own.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

/// BERT's normalizer for uncased models: clean, space CJK, strip accents, lower-case.
pub fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{FFFD}' || is_control(c) {
            continue;
        }
        if is_whitespace(c) {
            cleaned.push(' ');
        } else if is_cjk(c) {
            cleaned.push(' ');
            cleaned.push(c);
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    // Lower-cased one character at a time, as the reference does: no final-sigma rule
    // (`str::to_lowercase` would make a word-final Σ into ς).
    nfd_unicode_9(&cleaned)
        .into_iter()
        .filter(|&c| c.is_ascii() || unicode9::class(c) != NONSPACING_MARK)
        .flat_map(char::to_lowercase)
        .collect()
}

/// Words of normalized text: split at whitespace, each punctuation character on its own.
fn pre_tokenize(text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        if is_whitespace(c) || is_punctuation(c) {
            if let Some(s) = start.take() {
                words.push(&text[s..i]);
            }
            if !is_whitespace(c) {
                words.push(&text[i..i + c.len_utf8()]);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        words.push(&text[s..]);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> WordPiece {
        let toks = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##want", "##ed", "want", "runn", "##ing",
            ",", "!", "hello", "cafe", "你", "好", "##s", "a",
        ];
        WordPiece::new(toks.iter().map(|s| s.to_string()).collect()).unwrap()
    }

    fn toks(wp: &WordPiece, ids: &[u32]) -> Vec<String> {
        ids.iter()
            .map(|&i| wp.token(i).unwrap().to_string())
            .collect()
    }

    /// WordPiece decodes words apart and `##` pieces joined, the same whole or streamed.
    #[test]
    fn wordpiece_decodes_the_same_streamed() {
        let tok = Tokenizer::WordPiece(vocab());
        let ids = vocab().tokenize("unwanted running, hello");
        let whole = tok.decode(&ids, false);
        assert_eq!(whole, "unwanted running , hello");
        let mut stream = tok.stream(false);
        let mut streamed: String = ids.iter().map(|&id| stream.push(id)).collect();
        streamed.push_str(&stream.finish());
        assert_eq!(streamed, whole);
    }

    #[test]
    fn greedy_longest_match_with_continuations() {
        let wp = vocab();
        let ids = wp.tokenize("UNwanted, running!");
        assert_eq!(
            toks(&wp, &ids),
            ["un", "##want", "##ed", ",", "runn", "##ing", "!"]
        );
        // An unmatched rest makes the whole word [UNK].
        assert_eq!(toks(&wp, &wp.tokenize("wantx hello")), ["[UNK]", "hello"]);
    }

    #[test]
    fn accents_cjk_controls_and_whitespace() {
        let wp = vocab();
        assert_eq!(normalize("Café\u{0}\u{200B}\tX"), "cafe x");
        assert_eq!(
            toks(&wp, &wp.tokenize("CAFÉS 你好")),
            ["cafe", "##s", "你", "好"]
        );
        assert_eq!(pre_tokenize("a,b  c!"), ["a", ",", "b", "c", "!"]);
        assert!(wp.tokenize(" \n\t ").is_empty());
    }

    #[test]
    fn long_words_are_unknown_and_encode_truncates() {
        let wp = vocab();
        let long = "a".repeat(MAX_CHARS_PER_WORD + 1);
        assert_eq!(wp.tokenize(&long), [wp.unk_id()]);
        let ids = wp.encode("hello hello hello", 4).unwrap();
        assert_eq!(toks(&wp, &ids), ["[CLS]", "hello", "hello", "[SEP]"]);
        assert_eq!(wp.encode("", 2).unwrap(), [wp.cls_id(), wp.sep_id()]);
        assert!(wp.encode("x", 1).is_err());
    }

    #[test]
    fn special_tokens_in_text_stay_whole() {
        let wp = vocab();
        let ids = wp.tokenize("hello[SEP]a [cls] [UNK]");
        assert_eq!(
            toks(&wp, &ids),
            ["hello", "[SEP]", "a", "[UNK]", "[UNK]", "[UNK]", "[UNK]"]
        );
        assert_eq!(toks(&wp, &wp.tokenize("[CLS][CLS]")), ["[CLS]", "[CLS]"]);
    }

    /// Regression (found while writing the fuzz target): each special token in the text
    /// searched the whole rest for every other special, quadratic in the text's length.
    #[test]
    fn many_special_tokens_scan_linearly() {
        let wp = vocab();
        let n = 200_000;
        let ids = wp.tokenize(&"[SEP]a ".repeat(n));
        assert_eq!(ids.len(), 2 * n);
        assert!(ids
            .chunks(2)
            .all(|p| p == [wp.sep_id(), wp.id("a").unwrap()]));
    }

    #[test]
    fn missing_specials_are_an_error() {
        let err = WordPiece::new(vec!["[PAD]".into(), "a".into()]).unwrap_err();
        assert!(err.to_string().contains("[UNK]"), "{err}");
    }
}
