//! BPE pre-tokenizers: the word splitting llama.cpp runs before byte-level BPE
//! (`unicode_regex_split` in its unicode.cpp), per `tokenizer.ggml.pre`.
//!
//! llama.cpp applies a list of expressions in turn: each splits every piece left by the
//! previous one into its matches and the gaps between them. Three expressions it runs with
//! hand-written splitters (GPT-2's, LLaMA 3's and Qwen 2's, all with a `\s+(?!\S)`
//! lookahead); those are ported here as they are, code point by code point. The others
//! have no lookahead and run on `regex-lite` (leftmost-first like the ECMAScript
//! `std::regex` llama.cpp uses). As in llama.cpp, non-ASCII whitespace is seen as U+000B by
//! those expressions (its `std::regex` `\s` only knows ASCII whitespace), and those naming
//! Unicode categories run on the text with every other non-ASCII code point replaced by its
//! category's stand-in: so no expression needs Unicode tables, and `regex-lite` (whose `\s`
//! is ASCII's, and which has no `\p{..}`) runs them exactly as `regex` did.

use regex_lite::Regex;

// A child of this module, in this directory (tokenizer.rs declares only llm and pretok).
#[path = "unicode_flags.rs"]
mod unicode_flags;

use crate::error::{At, Error, ModelFile, Result};

/// One expression of a pre-tokenizer.
#[derive(Clone, Debug)]
enum Expr {
    /// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
    Gpt2,
    /// LLaMA 3's (`max_digits` 3) and Qwen 2's (1) expression:
    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
    Llama3 { max_digits: usize },
    /// Any expression without lookaround; `collapsed`: it names Unicode categories, and
    /// runs as llama.cpp runs it, on the text with every non-ASCII code point replaced by
    /// its category's stand-in ([`collapse`], [`collapse_expr`]).
    Re { re: Regex, collapsed: bool },
}

/// A pre-tokenizer: the expressions run in order.
#[derive(Clone, Debug)]
pub struct PreTokenizer {
    name: String,
    exprs: Vec<Expr>,
}

/// llama.cpp's `[\p{P}\$\+<=>\^~\|]+` (the `default` and, with a backquote, `falcon` lists).
const PUNCT_RUN: &str = r"[\p{P}\$\+<=>\^~\|]+";

impl PreTokenizer {
    /// The pre-tokenizer named by `tokenizer.ggml.pre` (`None`: the key is absent, which
    /// llama.cpp reads as `default`). Names it does not know are an error naming them.
    pub fn new(pre: Option<&str>) -> Result<Self> {
        let name = pre.unwrap_or("default");
        let re = |s: &str| -> Result<Expr> {
            let collapsed = CATEGORIES.iter().any(|(p, ..)| s.contains(p));
            let pattern = if collapsed {
                collapse_expr(s)
            } else {
                s.to_string()
            };
            Regex::new(&pattern)
                .map(|re| Expr::Re { re, collapsed })
                .map_err(|e| {
                    Error::model(
                        ModelFile::Vocabulary,
                        format!("pre-tokenizer {name:?}: {e}"),
                    )
                })
        };
        let exprs = match name {
            "default" => vec![
                re(PUNCT_RUN)?,
                Expr::Gpt2,
                re(r"\p{N}+")?,
                re("[0-9][0-9][0-9]")?,
            ],
            "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral"
            | "midm-2.0" | "lfm2" | "dbrx" | "smaug-bpe" => {
                vec![Expr::Llama3 { max_digits: 3 }]
            }
            "qwen2" | "deepseek-r1-qwen" | "stablelm2" | "hunyuan" => {
                vec![Expr::Llama3 { max_digits: 1 }]
            }
            "gpt-2" | "phi-2" | "jina-es" | "jina-de" | "gigachat" | "jina-v2-es"
            | "jina-v2-de" | "mpt" | "olmo" | "jais" | "trillion" => vec![Expr::Gpt2],
            "starcoder" | "refact" | "command-r" | "smollm" | "codeshell" | "exaone"
            | "minerva-7b" => vec![re(r"\p{N}")?, Expr::Gpt2],
            "falcon" => vec![
                re(r"[\p{P}\$\+<=>\^~\|`]+")?,
                Expr::Gpt2,
                re("[0-9][0-9][0-9]")?,
            ],
            "deepseek-llm" => vec![
                // Written with escapes: some of these ranges' ends have canonical
                // equivalents that an editor normalizing the source would swap in.
                re("[\r\n]")?,
                re("\\s?[A-Za-z\u{b5}\u{c0}-\u{d6}\u{d8}-\u{f6}\u{f8}-\u{1ba}\u{1bc}-\u{1bf}\u{1c4}-\u{293}\u{295}-\u{2af}\u{370}-\u{373}\u{376}\u{377}\u{37b}-\u{37d}\u{37f}\u{386}\u{388}-\u{38a}\u{38c}\u{38e}-\u{3a1}\u{3a3}-\u{3f5}\u{3f7}-\u{481}\u{48a}-\u{52f}\u{531}-\u{556}\u{10a0}-\u{10c5}\u{13a0}-\u{13f5}\u{13f8}-\u{13fd}\u{1c90}-\u{1cba}\u{1cbd}-\u{1cbf}\u{1d00}-\u{1d2b}\u{1d6b}-\u{1d77}\u{1d79}-\u{1d9a}\u{1e00}-\u{1f15}\u{1f18}-\u{1f1d}\u{1f20}-\u{1f45}\u{1f48}-\u{1f4d}\u{1f50}-\u{1f57}\u{1f59}\u{1f5b}\u{1f5d}\u{1f5f}-\u{1f7d}\u{1f80}-\u{1fb4}\u{1fb6}-\u{1fbc}\u{1fbe}\u{1fc2}-\u{1fc4}\u{1fc6}-\u{1fcc}\u{1fd0}-\u{1fd3}\u{1fd6}-\u{1fdb}\u{1fe0}-\u{1fec}\u{1ff2}-\u{1ff4}\u{1ff6}-\u{1ffc}\u{2102}\u{2107}\u{210a}-\u{2113}\u{2115}\u{2119}-\u{211d}\u{2124}\u{2126}\u{2128}\u{212a}-\u{212d}\u{212f}-\u{2134}\u{2139}\u{213c}-\u{213f}\u{2145}-\u{2149}\u{214e}\u{2183}\u{2184}\u{2c00}-\u{2c7b}\u{2c7e}-\u{2ce4}\u{2ceb}-\u{2cee}\u{2cf2}\u{2cf3}\u{a640}-\u{a66d}\u{a680}-\u{a69b}\u{a722}-\u{a76f}\u{a771}-\u{a787}\u{a78b}-\u{a78e}\u{ab70}-\u{abbf}\u{fb00}-\u{fb06}\u{fb13}-\u{fb17}\u{ff21}-\u{ff3a}\u{ff41}-\u{ff5a}\u{10400}-\u{1044f}\u{104b0}-\u{104d3}\u{104d8}-\u{104fb}\u{10c80}-\u{10cb2}\u{10cc0}-\u{10cf2}\u{118a0}-\u{118df}\u{1e900}-\u{1e943}]+")?,
                re("\\s?[!-/:-~\u{ff01}-\u{ff0f}\u{ff1a}-\u{ff5e}\u{2018}-\u{201f}\u{3000}-\u{3002}]+")?,
                re("\\s+$")?,
                re("[\u{4e00}-\u{9fa5}\u{800}-\u{4e00}\u{ac00}-\u{d7ff}]+")?,
                re("\\p{N}+")?,
            ],
            "deepseek-coder" => vec![
                re("[\r\n]")?,
                re(r"\s?\p{L}+")?,
                re(r"\s?\p{P}+")?,
                re("[一-龥ࠀ-一가-퟿]+")?,
                re(r"\p{N}")?,
            ],
            other => {
                return Err(Error::unsupported_model(
                    ModelFile::Vocabulary,
                    Some(At::Key("tokenizer.ggml.pre".into())),
                    format!("unsupported BPE pre-tokenizer {other:?}"),
                ))
            }
        };
        Ok(Self {
            name: name.to_string(),
            exprs,
        })
    }

    /// The pre-tokenizer's name (`default` when the GGUF has none).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The words of `text`, in order; together they are `text`.
    pub fn split<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let cpts: Vec<char> = text.chars().collect();
        // Byte offset of each code point (and the end).
        let mut offs: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        offs.push(text.len());
        // Pieces as code point counts, as llama.cpp keeps them.
        let mut pieces = vec![cpts.len()];
        let mut masked: Option<(String, Vec<usize>)> = None;
        let mut collapsed_text: Option<(String, Vec<usize>)> = None;
        let mut fl: Option<Vec<Flags>> = None;
        for e in &self.exprs {
            pieces = match e {
                Expr::Gpt2 => {
                    let fl = fl.get_or_insert_with(|| cpts.iter().map(|&c| flags(c)).collect());
                    split_gpt2(&cpts, fl, &pieces)
                }
                Expr::Llama3 { max_digits } => {
                    let fl = fl.get_or_insert_with(|| cpts.iter().map(|&c| flags(c)).collect());
                    split_llama3(&cpts, fl, &pieces, *max_digits)
                }
                Expr::Re { re, collapsed } => {
                    let (m, moffs) = if *collapsed {
                        collapsed_text.get_or_insert_with(|| collapse(&cpts))
                    } else {
                        masked.get_or_insert_with(|| mask_whitespace(&cpts))
                    };
                    split_regex(re, m, moffs, &pieces)
                }
            };
        }
        let mut words = Vec::with_capacity(pieces.len());
        let mut start = 0;
        for n in pieces {
            words.push(&text[offs[start]..offs[start + n]]);
            start += n;
        }
        words
    }
}

/// The categories llama.cpp's `unicode_regex_split` collapses: the expression's name, the
/// category's flag, its stand-in for non-ASCII code points, and its ASCII members (as a
/// class body).
const CATEGORIES: [(&str, u8, char, &str); 10] = [
    (r"\p{N}", NUMBER, '\u{D1}', "0-9"),
    (r"\p{L}", LETTER, '\u{D2}', "A-Za-z"),
    (r"\p{P}", PUNCT, '\u{D3}', r"!-#%-*,-/:-;?-@\[-\]_\{\}"),
    (r"\p{M}", MARK, '\u{D4}', ""),
    (r"\p{S}", SYMBOL, '\u{D5}', r"\$\+<->\^`\|~"),
    (r"\p{Lu}", LETTER, '\u{D2}', "A-Za-z"),
    (r"\p{Ll}", LETTER, '\u{D2}', "A-Za-z"),
    (r"\p{Lt}", LETTER, '\u{D2}', "A-Za-z"),
    (r"\p{Lm}", LETTER, '\u{D2}', "A-Za-z"),
    (r"\p{Lo}", LETTER, '\u{D2}', "A-Za-z"),
];

/// An expression naming categories, rewritten for the collapsed text: each `\p{..}`
/// becomes its stand-in and ASCII members (llama.cpp's `regex_expr_collapsed`).
fn collapse_expr(expr: &str) -> String {
    let mut out = String::with_capacity(expr.len() + 16);
    let mut inside = false;
    let mut prev = None;
    let mut rest = expr;
    while let Some(c) = rest.chars().next() {
        if c == '[' && prev != Some('\\') {
            inside = true;
        } else if inside && c == ']' && prev != Some('\\') {
            inside = false;
        } else if let Some((name, _, stand_in, ascii)) =
            CATEGORIES.iter().find(|(name, ..)| rest.starts_with(name))
        {
            if !inside {
                out.push('[');
            }
            out.push(*stand_in);
            out.push_str(ascii);
            if !inside {
                out.push(']');
            }
            rest = &rest[name.len()..];
            prev = Some('}');
            continue;
        }
        out.push(c);
        prev = Some(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The text as llama.cpp's category expressions see it: ASCII as it is, other whitespace
/// as U+000B, every other code point as its category's stand-in (U+00D0 for the others:
/// undefined, separators, controls), and each code point's byte offset in it.
fn collapse(cpts: &[char]) -> (String, Vec<usize>) {
    let mut s = String::with_capacity(cpts.len() * 2);
    let mut offs = Vec::with_capacity(cpts.len() + 1);
    for &c in cpts {
        offs.push(s.len());
        s.push(if c.is_ascii() {
            c
        } else if c.is_whitespace() {
            '\u{b}'
        } else {
            let cat = category(c);
            CATEGORIES[..5]
                .iter()
                .find(|(_, flag, ..)| cat == *flag)
                .map_or('\u{D0}', |(_, _, stand_in, _)| *stand_in)
        });
    }
    offs.push(s.len());
    (s, offs)
}

/// The text with non-ASCII whitespace as U+000B, and each code point's byte offset in it.
fn mask_whitespace(cpts: &[char]) -> (String, Vec<usize>) {
    let mut s = String::with_capacity(cpts.len());
    let mut offs = Vec::with_capacity(cpts.len() + 1);
    for &c in cpts {
        offs.push(s.len());
        s.push(if !c.is_ascii() && c.is_whitespace() {
            '\u{b}'
        } else {
            c
        });
    }
    offs.push(s.len());
    (s, offs)
}

fn split_regex(re: &Regex, text: &str, offs: &[usize], pieces: &[usize]) -> Vec<usize> {
    // Byte offset → code point index.
    let cp_at = |b: usize| offs.partition_point(|&o| o < b);
    let mut out = Vec::with_capacity(pieces.len());
    let mut start = 0;
    for &n in pieces {
        let (b0, b1) = (offs[start], offs[start + n]);
        let mut at = start;
        for m in re.find_iter(&text[b0..b1]) {
            let (s, e) = (cp_at(b0 + m.start()), cp_at(b0 + m.end()));
            if e == s {
                continue;
            }
            if s > at {
                out.push(s - at);
            }
            out.push(e - s);
            at = e;
        }
        if start + n > at {
            out.push(start + n - at);
        }
        start += n;
    }
    out
}

/// llama.cpp's code point flags, as far as the splitters use them.
#[derive(Clone, Copy, Default)]
struct Flags {
    ws: bool,
    letter: bool,
    number: bool,
    /// Any flag at all (llama.cpp's `as_uint() != 0`): true for every code point, as
    /// llama.cpp's table gives unassigned ones its UNDEFINED flag; false only past the
    /// piece's end.
    any: bool,
}

/// llama.cpp's category flags of a code point (its table, [`unicode_flags`]).
fn category(c: char) -> u8 {
    use unicode_flags::{FLAGS, STARTS};
    let c = c as u32;
    if c < 0x80 {
        return ASCII_FLAGS[c as usize];
    }
    super::unicode9::in_ranges(&STARTS, &FLAGS, c)
}

/// The table's first 128 entries, for the common case.
static ASCII_FLAGS: [u8; 128] = {
    use unicode_flags::{FLAGS, STARTS};
    let mut t = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        let mut r = 0;
        while r + 1 < STARTS.len() && STARTS[r + 1] <= i as u32 {
            r += 1;
        }
        t[i] = FLAGS[r];
        i += 1;
    }
    t
};

const NUMBER: u8 = 0x02;
const LETTER: u8 = 0x04;
const MARK: u8 = 0x10;
const PUNCT: u8 = 0x20;
const SYMBOL: u8 = 0x40;

fn flags(c: char) -> Flags {
    let cat = category(c);
    Flags {
        // llama.cpp's whitespace set is White_Space, as Rust's (the generator checks).
        ws: c.is_whitespace(),
        letter: cat & LETTER != 0,
        number: cat & NUMBER != 0,
        any: true,
    }
}

/// One piece's code points, with llama.cpp's out-of-range conventions.
struct Piece<'a> {
    cpts: &'a [char],
    /// The flags of each of `cpts`, computed once per text.
    fl: &'a [Flags],
    ini: usize,
    end: usize,
}

impl Piece<'_> {
    fn cpt(&self, pos: usize) -> Option<char> {
        (self.ini <= pos && pos < self.end).then(|| self.cpts[pos])
    }
    fn flags(&self, pos: usize) -> Flags {
        if self.ini <= pos && pos < self.end {
            self.fl[pos]
        } else {
            Flags::default()
        }
    }
}

/// Emits tokens as lengths; `prev` is where the last one ended.
struct Emit<'o> {
    out: &'o mut Vec<usize>,
    prev: usize,
}

impl Emit<'_> {
    fn add(&mut self, end: usize) -> usize {
        let len = end - self.prev;
        if len > 0 {
            self.out.push(len);
        }
        self.prev = end;
        len
    }
}

/// The contractions `'s 't 'm 'd` (2 code points) or `'re 've 'll` (3), if one starts at `pos`.
fn contraction(p: &Piece, pos: usize, lower: bool) -> Option<usize> {
    if p.cpt(pos) != Some('\'') || pos + 1 >= p.end {
        return None;
    }
    let low = |c: Option<char>| {
        c.map(|c| {
            if lower {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                c
            }
        })
    };
    let next = low(p.cpt(pos + 1));
    if matches!(next, Some('s' | 't' | 'm' | 'd')) {
        return Some(2);
    }
    if pos + 2 < p.end {
        let nn = low(p.cpt(pos + 2));
        if matches!(
            (next, nn),
            (Some('r'), Some('e')) | (Some('v'), Some('e')) | (Some('l'), Some('l'))
        ) {
            return Some(3);
        }
    }
    None
}

/// The scanners' outer loop: `scan` over each piece of `pieces` (lengths in code points, as
/// the special-token split left them) with an emitter of word ends; the words' lengths.
fn split_pieces(
    cpts: &[char],
    fl: &[Flags],
    pieces: &[usize],
    mut scan: impl FnMut(&Piece, &mut Emit),
) -> Vec<usize> {
    let mut out = Vec::with_capacity(pieces.len());
    let mut start = 0;
    for &n in pieces {
        let p = Piece {
            cpts,
            fl,
            ini: start,
            end: start + n,
        };
        start += n;
        let mut e = Emit {
            out: &mut out,
            prev: p.ini,
        };
        scan(&p, &mut e);
    }
    out
}

fn split_gpt2(cpts: &[char], fl: &[Flags], pieces: &[usize]) -> Vec<usize> {
    split_pieces(cpts, fl, pieces, |p, e| {
        let mut pos = p.ini;
        while pos < p.end {
            let cpt = p.cpt(pos);
            let fl = p.flags(pos);
            if let Some(len) = contraction(p, pos, false) {
                pos += e.add(pos + len);
                continue;
            }
            let sp = cpt == Some(' ');
            let mut f2 = if sp { p.flags(pos + 1) } else { fl };
            if f2.letter {
                pos += sp as usize;
                while f2.letter {
                    pos += 1;
                    f2 = p.flags(pos);
                }
                e.add(pos);
                continue;
            }
            if f2.number {
                pos += sp as usize;
                while f2.number {
                    pos += 1;
                    f2 = p.flags(pos);
                }
                e.add(pos);
                continue;
            }
            if !(f2.ws || f2.letter || f2.number) && f2.any {
                pos += sp as usize;
                while !(f2.ws || f2.letter || f2.number) && f2.any {
                    pos += 1;
                    f2 = p.flags(pos);
                }
                e.add(pos);
                continue;
            }
            let mut nws = 0;
            while p.flags(pos + nws).ws {
                nws += 1;
            }
            if nws > 1 && p.cpt(pos + nws).is_some() {
                pos += nws - 1;
                e.add(pos);
                continue;
            }
            if nws > 0 {
                pos += nws;
                e.add(pos);
                continue;
            }
            pos += 1;
            e.add(pos);
        }
    })
}

fn split_llama3(cpts: &[char], fl: &[Flags], pieces: &[usize], max_digits: usize) -> Vec<usize> {
    split_pieces(cpts, fl, pieces, |p, e| {
        let mut pos = p.ini;
        while pos < p.end {
            let cpt = p.cpt(pos);
            let fl = p.flags(pos);
            if let Some(len) = contraction(p, pos, true) {
                pos += e.add(pos + len);
                continue;
            }
            let crlf = |c: Option<char>| matches!(c, Some('\r' | '\n'));
            // [^\r\n\p{L}\p{N}]?\p{L}+
            if !(crlf(cpt) || fl.number) && (fl.letter || p.flags(pos + 1).letter) {
                pos += 1;
                while p.flags(pos).letter {
                    pos += 1;
                }
                e.add(pos);
                continue;
            }
            // \p{N}{1,max_digits}
            if fl.number {
                let mut ini = pos;
                while p.flags(pos).number {
                    pos += 1;
                    if pos - ini >= max_digits {
                        e.add(pos);
                        ini = pos;
                    }
                }
                e.add(pos);
                continue;
            }
            // <space>?[^\s\p{L}\p{N}]+[\r\n]*
            let mut f2 = if cpt == Some(' ') {
                p.flags(pos + 1)
            } else {
                fl
            };
            if !(f2.ws || f2.letter || f2.number) && fl.any {
                pos += (cpt == Some(' ')) as usize;
                while !(f2.ws || f2.letter || f2.number) && f2.any {
                    pos += 1;
                    f2 = p.flags(pos);
                }
                while crlf(p.cpt(pos)) {
                    pos += 1;
                }
                e.add(pos);
                continue;
            }
            let mut nws = 0;
            let mut last_crlf_end = 0;
            while p.flags(pos + nws).ws {
                if crlf(p.cpt(pos + nws)) {
                    last_crlf_end = pos + nws + 1;
                }
                nws += 1;
            }
            // \s*[\r\n]+
            if last_crlf_end > 0 {
                pos = last_crlf_end;
                e.add(pos);
                continue;
            }
            // \s+(?!\S)
            if nws > 1 && p.cpt(pos + nws).is_some() {
                pos += nws - 1;
                e.add(pos);
                continue;
            }
            // \s+
            if nws > 0 {
                pos += nws;
                e.add(pos);
                continue;
            }
            pos += 1;
            e.add(pos);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(pre: &str, text: &str) -> Vec<String> {
        PreTokenizer::new(Some(pre))
            .unwrap()
            .split(text)
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn gpt2_words() {
        assert_eq!(
            split("gpt-2", "Hello world's  12 !!x"),
            ["Hello", " world", "'s", " ", " 12", " !!", "x"]
        );
    }

    #[test]
    fn llama3_digits_and_newlines() {
        assert_eq!(
            split("llama-bpe", "ab 12345\n\n  x"),
            ["ab", " ", "123", "45", "\n\n", " ", " x"]
        );
        assert_eq!(split("qwen2", "123"), ["1", "2", "3"]);
    }

    #[test]
    fn categories_are_llama_cpps() {
        // U+10EC3 is a letter since Unicode 16, unassigned in llama.cpp's table: it joins
        // the punctuation run, as unassigned code points do there.
        assert_eq!(
            split("llama-bpe", "a \u{10ED7}\u{10EC3}<pad \u{1FC5}!"),
            ["a", " \u{10ED7}\u{10EC3}<", "pad", " \u{1FC5}!"]
        );
        assert_eq!(collapse_expr(r"\s?\p{L}+"), "\\s?[\u{D2}A-Za-z]+");
        assert_eq!(
            collapse_expr(r"[^\s\p{L}\p{N}]+"),
            "[^\\s\u{D2}A-Za-z\u{D1}0-9]+"
        );
        assert_eq!(
            split("deepseek-coder", "ab\u{10EC3}c"),
            ["ab", "\u{10EC3}", "c"]
        );
    }

    #[test]
    fn unknown_pre_is_an_error_naming_it() {
        let err = PreTokenizer::new(Some("no-such-pre")).unwrap_err();
        assert!(err.to_string().contains("no-such-pre"), "{err}");
        assert_eq!(PreTokenizer::new(None).unwrap().name(), "default");
    }

    #[test]
    fn pieces_cover_the_text() {
        let text = "Ünïcödé\u{3000}テキスト 1234567 \r\n\t x's'LL\u{0}\u{10FFFF}";
        for pre in [
            "default",
            "llama-bpe",
            "qwen2",
            "gpt-2",
            "deepseek-llm",
            "deepseek-coder",
            "falcon",
            "starcoder",
        ] {
            assert_eq!(split(pre, text).concat(), text, "{pre}");
        }
    }
}
