//! The streaming decoder: one id at a time, complete UTF-8 out.

use std::ops::Deref;

use super::Tokenizer;

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
