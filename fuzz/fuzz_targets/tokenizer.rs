//! The WordPiece tokenizer on any bytes (as text, invalid UTF-8 replaced the way a JS string
//! reaches Rust), with a fixed vocabulary or one made from the input.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use webtensor::model::tokenizer::WordPiece;

const VOCAB: &str =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nb\nc\nab\n##b\n##c\n##bc\nhello\n##llo\nhe\n\
                     ,\n.\n!\n中\n##中\né\ne\nthe\nun\n##aff\n##able\n";

fn fixed() -> &'static WordPiece {
    static V: OnceLock<WordPiece> = OnceLock::new();
    V.get_or_init(|| WordPiece::from_vocab_txt(VOCAB).expect("the fixed vocabulary is valid"))
}

fn check(wp: &WordPiece, text: &str, max_tokens: usize) {
    let pieces = wp.tokenize(text);
    assert!(pieces.iter().all(|&id| (id as usize) < wp.len()));
    match wp.encode(text, max_tokens) {
        Ok(ids) => {
            assert!(
                ids.len() <= max_tokens.max(2),
                "{} > {max_tokens}",
                ids.len()
            );
            assert_eq!(ids.first(), Some(&wp.cls_id()));
            assert_eq!(ids.last(), Some(&wp.sep_id()));
            assert!(ids.iter().all(|&id| (id as usize) < wp.len()));
        }
        Err(e) => assert!(max_tokens < 2, "encode failed: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let max_tokens = (mode >> 1) as usize;
    if mode & 1 == 0 {
        check(fixed(), &String::from_utf8_lossy(rest), max_tokens);
    } else {
        // The first line-block is a vocab.txt (the specials appended), the rest the text.
        let cut = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        let vocab = format!(
            "{}\n[PAD]\n[UNK]\n[CLS]\n[SEP]",
            String::from_utf8_lossy(&rest[..cut])
        );
        let wp = WordPiece::from_vocab_txt(&vocab).expect("a vocabulary with the specials");
        let text = rest.get(cut + 1..).unwrap_or(&[]);
        check(&wp, &String::from_utf8_lossy(text), max_tokens);
    }
});
