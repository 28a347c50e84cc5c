//! Byte-level BPE (`gpt2`) as llama.cpp's `llm_tokenizer_bpe`: GPT-2's byte map, merges
//! by rank after the pre-tokenizer's split.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::error::Result;
use crate::model::gguf::Gguf;

use super::super::pretok::PreTokenizer;
use super::vocab::{attr, char_symbols, key_err, Frag, FxMap, Vocab};

/// GPT-2's byte-to-unicode map: printable Latin-1 bytes map to themselves, the others to
/// U+0100 onwards, in byte order.
pub(super) fn byte_to_unicode() -> [char; 256] {
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
    pub(super) vocab: Vocab,
    pub(super) pre: PreTokenizer,
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
    pub(super) fn new(vocab: Vocab, g: &Gguf, pre: PreTokenizer) -> Result<Self> {
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

    pub(super) fn encode(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<u32> {
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

    pub(super) fn piece(&self, id: u32, special: bool, out: &mut Vec<u8>) {
        let Some((text, a)) = self.vocab.common_piece(id, special, out) else {
            return;
        };
        // A byte-type token, which llama.cpp refuses in BPE, decodes as a normal one.
        if a & (attr::NORMAL | attr::BYTE) != 0 {
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
