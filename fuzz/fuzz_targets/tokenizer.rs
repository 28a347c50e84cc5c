//! The tokenizers on any bytes (as text, invalid UTF-8 replaced the way a JS string reaches
//! Rust). The first byte picks the case (`mode & 3`):
//!   0, 1  WordPiece, with a fixed vocabulary or one made from the input;
//!   2     fixed SentencePiece (`llama`, byte fallback) and byte-level BPE (`gpt2`) vocabularies
//!         written to a GGUF in code, on the rest as text: encode (every flag), decode, stream;
//!   3     a `llama` or `gpt2` vocabulary made from the input (tokens, types, scores, merges,
//!         specials, the pre-tokenizer), through `Tokenizer::from_gguf`: refused with an error
//!         or usable, never a panic.
//! Every id is in the vocabulary; decoding and streaming (any ids, out of range too) never panic.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use webtensor::model::gguf::{Gguf, GgufWriter, Value, ValueType};
use webtensor::model::tokenizer::{Tokenizer, WordPiece};

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

fn strs<S: AsRef<str>>(v: &[S]) -> Value {
    Value::Array(
        ValueType::String,
        v.iter().map(|s| Value::String(s.as_ref().into())).collect(),
    )
}

/// GPT-2's byte-to-unicode map: printable Latin-1 bytes as themselves, the rest from U+0100.
fn byte_chars() -> Vec<char> {
    let mut n = 0;
    (0..=255u8)
        .map(|b| {
            if matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF) {
                b as char
            } else {
                n += 1;
                char::from_u32(255 + n).unwrap()
            }
        })
        .collect()
}

fn tokenizer(kv: Vec<(&str, Value)>) -> webtensor::Result<Tokenizer> {
    let mut w = GgufWriter::new();
    for (k, v) in kv {
        w.set(k, v)?;
    }
    let bytes = w.to_bytes();
    Tokenizer::from_gguf(&Gguf::parse(&bytes)?)
}

/// A small SentencePiece vocabulary (all 256 byte tokens) and a byte-level BPE one.
fn fixed_llm() -> &'static [Tokenizer; 2] {
    static V: OnceLock<[Tokenizer; 2]> = OnceLock::new();
    V.get_or_init(|| {
        let mut toks: Vec<String> = [
            "<unk>",
            "<s>",
            "</s>",
            "\u{2581}",
            "a",
            "b",
            "\u{2581}a",
            "ab",
            "<|x|>",
        ]
        .map(String::from)
        .to_vec();
        let n = toks.len();
        toks.extend((0..=255u8).map(|b| format!("<0x{b:02X}>")));
        let mut types: Vec<Value> = (0..toks.len())
            .map(|i| Value::I32(if i >= n { 6 } else { 1 }))
            .collect();
        types[0] = Value::I32(2);
        types[1] = Value::I32(3);
        types[2] = Value::I32(3);
        types[8] = Value::I32(4);
        let spm = tokenizer(vec![
            ("tokenizer.ggml.model", Value::String("llama".into())),
            ("tokenizer.ggml.tokens", strs(&toks)),
            (
                "tokenizer.ggml.token_type",
                Value::Array(ValueType::I32, types),
            ),
            (
                "tokenizer.ggml.scores",
                Value::Array(
                    ValueType::F32,
                    (0..toks.len()).map(|i| Value::F32(-(i as f32))).collect(),
                ),
            ),
            ("tokenizer.ggml.bos_token_id", Value::U32(1)),
            ("tokenizer.ggml.eos_token_id", Value::U32(2)),
            ("tokenizer.ggml.unknown_token_id", Value::U32(0)),
        ])
        .expect("the fixed SentencePiece vocabulary is valid");
        let mut toks: Vec<String> = byte_chars().iter().map(|c| c.to_string()).collect();
        toks.extend(["he", "ll", "hell", "hello", "\u{120}w", "<|end|>"].map(String::from));
        let mut types = vec![Value::I32(1); toks.len()];
        types[toks.len() - 1] = Value::I32(3);
        let eos = toks.len() as u32 - 1;
        let bpe = tokenizer(vec![
            ("tokenizer.ggml.model", Value::String("gpt2".into())),
            ("tokenizer.ggml.tokens", strs(&toks)),
            (
                "tokenizer.ggml.token_type",
                Value::Array(ValueType::I32, types),
            ),
            (
                "tokenizer.ggml.merges",
                strs(&["h e", "l l", "he ll", "hell o", "\u{120} w"]),
            ),
            ("tokenizer.ggml.pre", Value::String("llama-bpe".into())),
            ("tokenizer.ggml.eos_token_id", Value::U32(eos)),
            // llama-bpe adds BOS by default: this vocabulary has none.
            ("tokenizer.ggml.add_bos_token", Value::Bool(false)),
        ])
        .expect("the fixed BPE vocabulary is valid");
        [spm, bpe]
    })
}

/// Encode with every flag, decode and stream the ids and some arbitrary ones: no panic, ids
/// in the vocabulary.
fn check_llm(tok: &Tokenizer, text: &str, junk: &[u8]) {
    for (add, parse) in [(false, false), (true, false), (false, true), (true, true)] {
        let ids = tok.encode(text, add, parse);
        assert!(ids.iter().all(|&id| (id as usize) < tok.len()), "{ids:?}");
        for special in [false, true] {
            let text = tok.decode(&ids, special);
            let mut s = tok.stream(special);
            let mut streamed: String = ids.iter().map(|&id| s.push(id)).collect();
            streamed.push_str(&s.finish());
            // Both give out valid UTF-8 (they are Strings); their agreement on the vectors is
            // tests/tokenizer_vectors.rs's.
            let _ = (text, streamed);
        }
    }
    // Any ids, out of the vocabulary too (JS checks them first; Rust must not panic).
    let ids: Vec<u32> = junk
        .chunks(2)
        .map(|c| c.iter().fold(0u32, |a, &b| a << 8 | b as u32))
        .collect();
    let _ = tok.decode(&ids, true);
    let mut s = tok.stream(true);
    for &id in &ids {
        let _ = s.push(id);
    }
    let _ = s.finish();
}

/// A vocabulary from the input: tokens are its lines; bytes pick the model, types, scores,
/// merges (pairs of tokens, some of them missing), specials and the pre-tokenizer.
fn from_input(data: &[u8]) {
    let Some((&how, rest)) = data.split_first() else {
        return;
    };
    let cut = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    let toks: Vec<String> = String::from_utf8_lossy(&rest[..cut])
        .split('\n')
        .map(String::from)
        .collect();
    let text = String::from_utf8_lossy(rest.get(cut + 1..).unwrap_or(&[])).into_owned();
    let bpe = how & 1 == 1;
    let mut kv = vec![
        (
            "tokenizer.ggml.model",
            Value::String(if bpe { "gpt2" } else { "llama" }.into()),
        ),
        ("tokenizer.ggml.tokens", strs(&toks)),
    ];
    if how & 2 != 0 {
        // Types from the token bytes, some out of range.
        let types = toks
            .iter()
            .map(|t| Value::I32(t.len() as i32 % 8))
            .collect();
        kv.push((
            "tokenizer.ggml.token_type",
            Value::Array(ValueType::I32, types),
        ));
    }
    if how & 4 != 0 {
        // Scores, sometimes one too few.
        let n = toks.len() - usize::from(how & 8 != 0);
        let scores = (0..n).map(|i| Value::F32(-(i as f32))).collect();
        kv.push((
            "tokenizer.ggml.scores",
            Value::Array(ValueType::F32, scores),
        ));
    }
    if bpe {
        let merges: Vec<String> = toks
            .windows(2)
            .map(|w| format!("{} {}", w[0], w[1]))
            .chain((how & 16 != 0).then(|| "missing tokens".to_string()))
            .collect();
        kv.push(("tokenizer.ggml.merges", strs(&merges)));
        let pre = [
            "gpt-2",
            "llama-bpe",
            "qwen2",
            "deepseek-llm",
            "deepseek-coder",
            "default",
            "nope",
        ];
        kv.push((
            "tokenizer.ggml.pre",
            Value::String(pre[(how >> 5) as usize % pre.len()].into()),
        ));
    }
    if how & 64 != 0 {
        kv.push((
            "tokenizer.ggml.bos_token_id",
            Value::U32(u32::from(how) % 300),
        ));
        kv.push(("tokenizer.ggml.eos_token_id", Value::U32(toks.len() as u32)));
    }
    if how & 128 != 0 {
        kv.push(("tokenizer.ggml.add_bos_token", Value::Bool(true)));
        kv.push(("tokenizer.ggml.add_eos_token", Value::Bool(true)));
    }
    if let Ok(tok) = tokenizer(kv) {
        check_llm(&tok, &text, text.as_bytes());
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let max_tokens = (mode >> 2) as usize;
    if mode & 3 == 2 {
        let text = String::from_utf8_lossy(rest);
        for tok in fixed_llm() {
            check_llm(tok, &text, rest);
        }
        return;
    }
    if mode & 3 == 3 {
        from_input(rest);
        return;
    }
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
