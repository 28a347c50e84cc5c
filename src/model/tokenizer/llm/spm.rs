//! SentencePiece (`llama`) as llama.cpp's `llm_tokenizer_spm`: merges by score, byte
//! fallback.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::vocab::{attr, char_symbols, Frag, Sym, Vocab};

const SPACE_MARK: &str = "\u{2581}";

/// SentencePiece (`tokenizer.ggml.model = "llama"`) as llama.cpp's `llm_tokenizer_spm`.
#[derive(Clone, Debug)]
pub struct Spm {
    pub(super) vocab: Vocab,
    pub(super) add_space_prefix: bool,
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

    pub(super) fn encode(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<u32> {
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

    pub(super) fn piece(&self, id: u32, special: bool, out: &mut Vec<u8>) {
        // Unused and undefined tokens give nothing.
        let Some((text, a)) = self.vocab.common_piece(id, special, out) else {
            return;
        };
        if a & attr::NORMAL != 0 {
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
