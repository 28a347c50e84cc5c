//! WordPiece against llama.cpp's BERT tokenizer test vectors (`ggml-vocab-bert-bge.gguf` with
//! its `.inp`/`.out` pair, made with Hugging Face `tokenizers`). Fetch them with
//! `scripts/fetch-test-vectors.sh`; without them the test says so and passes.
#![cfg(not(target_arch = "wasm32"))]

use std::path::Path;

use webtensor::model::gguf::Gguf;
use webtensor::model::tokenizer::WordPiece;

/// Inputs in the `.inp` file are separated by this line (test-tokenizer-0's convention).
const SEPARATOR: &str = "\n__ggml_vocab_test__\n";

#[test]
fn bert_bge_vectors_match() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/vectors");
    let base = dir.join("ggml-vocab-bert-bge.gguf");
    let (Ok(gguf), Ok(inp), Ok(out)) = (
        std::fs::read(&base),
        std::fs::read_to_string(base.with_extension("gguf.inp")),
        std::fs::read_to_string(base.with_extension("gguf.out")),
    ) else {
        println!("skipped: run scripts/fetch-test-vectors.sh");
        return;
    };
    let g = Gguf::parse(&gguf).expect("the vocab GGUF parses");
    let wp = WordPiece::from_gguf(&g).expect("a WordPiece vocabulary");
    assert_eq!(wp.len(), 30522);
    let mut inputs: Vec<&str> = inp.split(SEPARATOR).collect();
    // The file ends with a separator: the piece after it is not an input.
    assert_eq!(inputs.pop(), Some(""));
    let expected: Vec<Vec<u32>> = out
        .lines()
        .map(|l| l.split_whitespace().map(|t| t.parse().unwrap()).collect())
        .collect();
    assert_eq!(inputs.len(), expected.len(), "inputs and outputs pair up");
    let mut failures = Vec::new();
    for (text, want) in inputs.iter().zip(&expected) {
        let got = wp.tokenize(text);
        if &got != want {
            failures.push(format!("{text:?}\n  got  {got:?}\n  want {want:?}"));
        }
    }
    println!(
        "{} of {} vectors match",
        inputs.len() - failures.len(),
        inputs.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The vocabulary the MiniLM converter writes (llama.cpp spelling) reads back as vocab.txt.
#[test]
fn converted_minilm_vocab_round_trips() {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let (Ok(txt), Ok(gguf)) = (
        std::fs::read_to_string(models.join("minilm/vocab.txt")),
        std::fs::read(models.join("minilm-q4_0.gguf")),
    ) else {
        println!("skipped: run scripts/fetch-model.sh");
        return;
    };
    let from_txt = WordPiece::from_vocab_txt(&txt).unwrap();
    let from_gguf = WordPiece::from_gguf(&Gguf::parse(&gguf).unwrap()).unwrap();
    assert_eq!(from_txt.len(), from_gguf.len());
    for id in 0..from_txt.len() as u32 {
        assert_eq!(from_txt.token(id), from_gguf.token(id), "token {id}");
    }
    let text = "Héllo, wörld! [MASK] tokenization 東京 🦙";
    assert_eq!(from_txt.tokenize(text), from_gguf.tokenize(text));
}
