//! SentencePiece and byte-level BPE against llama.cpp on seeded random texts, beyond its fixed
//! vectors: tests/reference/llm_tokenizer_<name>.jsonl, written by
//! scripts/llm-tokenizer-vectors.py with llama-cpp-python (texts mixing words, punctuation,
//! digit and whitespace runs, code, CJK, Cyrillic, Arabic, emoji and ZWJ sequences,
//! combining marks, control, format, private-use and unassigned code points, and special
//! tokens; every fifth with `parse_special`). For each text: the ids are exactly
//! llama.cpp's, and `decode(ids, false)` is exactly llama.cpp's detokenization of them (its
//! `llama_detokenize` loop without the optional `clean_spaces` pass; where those bytes are
//! invalid UTF-8 both sides turn each maximal invalid subpart into U+FFFD).
//!
//! The vocab files come from scripts/fetch-test-vectors.sh (models/vectors/); without them
//! the test says so and passes, unless WEBTENSOR_REQUIRE_VECTORS=1, which makes it fail.
#![cfg(not(target_arch = "wasm32"))]

use std::path::Path;

use webtensor::model::gguf::Gguf;
use webtensor::model::tokenizer::Tokenizer;

const VOCABS: [&str; 7] = [
    "llama-spm",
    "phi-3",
    "llama-bpe",
    "qwen2",
    "gpt-2",
    "deepseek-llm",
    "deepseek-coder",
];

fn points(s: &str) -> String {
    let p: Vec<String> = s.chars().map(|c| format!("{:04X}", c as u32)).collect();
    p.join(" ")
}

/// (texts, id mismatches, detokenization mismatches) of one vocabulary.
fn run(root: &Path, name: &str) -> Option<(usize, Vec<String>, Vec<String>)> {
    let gguf = root.join(format!("models/vectors/ggml-vocab-{name}.gguf"));
    let Ok(bytes) = std::fs::read(&gguf) else {
        assert!(
            std::env::var("WEBTENSOR_REQUIRE_VECTORS").as_deref() != Ok("1"),
            "WEBTENSOR_REQUIRE_VECTORS=1 but {} is missing: run scripts/fetch-test-vectors.sh",
            gguf.display()
        );
        println!("{name}: skipped: run scripts/fetch-test-vectors.sh");
        return None;
    };
    let tok = Tokenizer::from_gguf(&Gguf::parse(&bytes).expect("the vocab parses")).expect(name);
    let fixture =
        std::fs::read_to_string(root.join(format!("tests/reference/llm_tokenizer_{name}.jsonl")))
            .expect("the committed fixture");
    let mut lines = fixture.lines();
    let meta: serde_json::Value =
        serde_json::from_str(lines.next().expect("the settings line")).unwrap();
    assert_eq!(
        meta["add_bos"].as_bool(),
        Some(tok.add_bos_eos().0),
        "{name}: adds BOS as llama.cpp does"
    );
    let (mut total, mut ids_bad, mut detok_bad) = (0, Vec::new(), Vec::new());
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let text = v["text"].as_str().expect("text");
        let special = v["special"].as_bool().expect("special");
        let want: Vec<u32> = v["ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|id| id.as_u64().unwrap() as u32)
            .collect();
        let detok = v["detok"].as_str().expect("detok");
        total += 1;
        let got = tok.encode(text, true, special);
        if got != want {
            ids_bad.push(format!(
                "{name} special={special} {text:?}\n  code points {}\n  got  {got:?}\n  want {want:?}",
                points(text)
            ));
            continue;
        }
        let back = tok.decode(&got, false);
        if back != detok {
            detok_bad.push(format!(
                "{name} special={special} {text:?}\n  decodes to   {back:?}\n  llama.cpp's  {detok:?}"
            ));
        }
    }
    println!(
        "{name}: {} of {total} random texts tokenize as llama.cpp, {} of {} detokenize as it",
        total - ids_bad.len(),
        total - ids_bad.len() - detok_bad.len(),
        total - ids_bad.len()
    );
    assert!(total >= 200, "{name}: the fixture holds {total} texts");
    Some((total, ids_bad, detok_bad))
}

#[test]
fn llm_tokenizers_match_llama_cpp_on_random_text() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    for name in VOCABS {
        if let Some((total, ids_bad, detok_bad)) = run(root, name) {
            counts.push(format!(
                "{name}: {}/{total} ids, {} decode",
                ids_bad.len(),
                detok_bad.len()
            ));
            failures.extend(ids_bad.into_iter().take(6));
            failures.extend(detok_bad.into_iter().take(6));
        }
    }
    assert!(
        failures.is_empty(),
        "differences ({}); the first of each vocabulary:\n{}",
        counts.join("; "),
        failures.join("\n")
    );
}
