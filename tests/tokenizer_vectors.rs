//! WordPiece against llama.cpp's BERT tokenizer test vectors (`ggml-vocab-bert-bge.gguf` with
//! its `.inp`/`.out` pair, made with Hugging Face `tokenizers`). Fetch them with
//! `scripts/fetch-test-vectors.sh`; without them the tests say so and pass, unless
//! WEBTENSOR_REQUIRE_VECTORS=1 (scripts/test.sh sets it), which makes them fail.
#![cfg(not(target_arch = "wasm32"))]

use std::path::Path;

use webtensor::model::gguf::Gguf;
use webtensor::model::tokenizer::{Tokenizer, WordPiece};

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
        // Fails under WEBTENSOR_REQUIRE_VECTORS=1, else says it skipped.
        assert!(vectors_dir().is_none());
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

/// WordPiece against Hugging Face `tokenizers` with MiniLM's own tokenizer.json on seeded
/// random texts mixing scripts, emoji, control, format, private-use and unassigned code
/// points (tests/reference/wordpiece_minilm.jsonl, written by scripts/wordpiece-vectors.py).
/// Needs models/minilm/vocab.txt (scripts/fetch-model.sh): without it the test says so and
/// passes, unless WEBTENSOR_REQUIRE_VECTORS=1.
#[test]
fn wordpiece_matches_hf_tokenizers_on_random_text() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(vocab) = std::fs::read_to_string(root.join("models/minilm/vocab.txt")) else {
        assert!(
            std::env::var("WEBTENSOR_REQUIRE_VECTORS").as_deref() != Ok("1"),
            "WEBTENSOR_REQUIRE_VECTORS=1 but models/minilm/vocab.txt is missing: run scripts/fetch-model.sh"
        );
        println!("skipped: run scripts/fetch-model.sh");
        return;
    };
    let wp = WordPiece::from_vocab_txt(&vocab).expect("MiniLM's vocab.txt");
    let fixture = std::fs::read_to_string(root.join("tests/reference/wordpiece_minilm.jsonl"))
        .expect("the committed fixture");
    let mut lines = fixture.lines();
    lines.next().expect("the generator's settings line");
    let (mut total, mut failures) = (0, Vec::new());
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let text = v["text"].as_str().expect("text");
        let want: Vec<u32> = v["ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|id| id.as_u64().unwrap() as u32)
            .collect();
        total += 1;
        let got = wp.tokenize(text);
        if got != want {
            let points: Vec<String> = text.chars().map(|c| format!("{:04X}", c as u32)).collect();
            failures.push(format!(
                "{text:?}\n  code points {}\n  got  {got:?}\n  want {want:?}",
                points.join(" ")
            ));
        }
    }
    println!("{} of {total} random texts match", total - failures.len());
    assert!(total >= 1000, "the fixture holds {total} texts");
    assert!(
        failures.is_empty(),
        "{} of {total} texts differ; the first:\n{}",
        failures.len(),
        failures[..failures.len().min(8)].join("\n")
    );
}

/// The vocab files whose every vector must pass (tokenized exactly, and detokenized back to
/// the input where noted), and the other BPE files of the package: each either passes all
/// its vectors or is refused with an error naming its pre-tokenizer.
///
/// Status (llama-cpp-python 0.3.36 sdist, 46 vectors each): all pass, tokenized and
/// round-tripped: llama-spm, phi-3 (SentencePiece), llama-bpe, qwen2, gpt-2, deepseek-llm,
/// deepseek-coder, falcon, mpt, starcoder, refact, command-r (BPE), bert-bge (WordPiece,
/// ids only). Refused with an error naming it: qwen35 (pre-tokenizer "qwen35"), gemma-4
/// (model "gemma4"), nomic-bert-moe (model "t5", no vectors). No vectors, load and
/// round-trip: gpt-neox, aquila (no `tokenizer.ggml.pre`: llama.cpp's "default"), baichuan
/// (SentencePiece).
const REQUIRED: [&str; 7] = [
    "llama-spm",
    "phi-3",
    "llama-bpe",
    "qwen2",
    "gpt-2",
    "deepseek-llm",
    "deepseek-coder",
];

/// Other files with vectors: `Ok` when all pass, `Err(name)` when from_gguf must refuse
/// them with an error naming `name`.
const OTHER: [(&str, Result<(), &str>); 8] = [
    ("falcon", Ok(())),
    ("mpt", Ok(())),
    ("starcoder", Ok(())),
    ("refact", Ok(())),
    ("command-r", Ok(())),
    ("qwen35", Err("qwen35")),
    ("gemma-4", Err("gemma4")),
    ("bert-bge", Ok(())),
];

fn vectors_dir() -> Option<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/vectors");
    if dir.join("ggml-vocab-llama-spm.gguf.out").exists() {
        return Some(dir);
    }
    assert!(
        std::env::var("WEBTENSOR_REQUIRE_VECTORS").as_deref() != Ok("1"),
        "WEBTENSOR_REQUIRE_VECTORS=1 but {} lacks the vocab files: run scripts/fetch-test-vectors.sh",
        dir.display()
    );
    println!("skipped: run scripts/fetch-test-vectors.sh");
    None
}

/// (passed, total, failures) of one vocab file's vectors.
fn run_vectors(dir: &Path, name: &str) -> Result<(usize, Vec<String>), String> {
    let base = dir.join(format!("ggml-vocab-{name}.gguf"));
    let bytes = std::fs::read(&base).map_err(|e| format!("{name}: {e}"))?;
    let inp =
        std::fs::read_to_string(base.with_extension("gguf.inp")).map_err(|e| e.to_string())?;
    let out =
        std::fs::read_to_string(base.with_extension("gguf.out")).map_err(|e| e.to_string())?;
    let g = Gguf::parse(&bytes).map_err(|e| e.to_string())?;
    let tok = Tokenizer::from_gguf(&g).map_err(|e| e.to_string())?;
    let mut inputs: Vec<&str> = inp.split(SEPARATOR).collect();
    assert_eq!(inputs.pop(), Some(""), "{name}: .inp ends with a separator");
    let expected: Vec<Vec<u32>> = out
        .lines()
        .map(|l| {
            l.split_whitespace()
                .map(|t| t.parse().expect("an id"))
                .collect()
        })
        .collect();
    assert_eq!(
        inputs.len(),
        expected.len(),
        "{name}: inputs and outputs pair up"
    );
    let mut failures = Vec::new();
    for (text, want) in inputs.iter().zip(&expected) {
        let got = tok.encode(text, false, false);
        if &got != want {
            failures.push(format!("{name} {text:?}\n  got  {got:?}\n  want {want:?}"));
            continue;
        }
        if !matches!(tok, Tokenizer::WordPiece(_)) {
            let back = tok.decode(&got, false);
            if back != *text {
                failures.push(format!("{name} {text:?} decodes to {back:?}"));
            }
            let mut stream = tok.stream(false);
            let mut s: String = got.iter().map(|&id| stream.push(id)).collect();
            s.push_str(&stream.finish());
            if s != back {
                failures.push(format!("{name} {text:?} streams to {s:?}, not {back:?}"));
            }
        }
    }
    println!(
        "{name}: {} of {} vectors match",
        inputs.len() - failures.len(),
        inputs.len()
    );
    Ok((inputs.len(), failures))
}

#[test]
fn llama_cpp_vectors_match() {
    let Some(dir) = vectors_dir() else { return };
    let mut failures = Vec::new();
    for name in REQUIRED {
        match run_vectors(&dir, name) {
            Ok((n, f)) => {
                assert!(n > 0, "{name}: no vectors");
                failures.extend(f);
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    for (name, want) in OTHER {
        match (run_vectors(&dir, name), want) {
            (Ok((_, f)), Ok(())) => failures.extend(f),
            (Err(e), Err(named)) if e.contains(named) => println!("{name}: refused: {e}"),
            (got, want) => failures.push(format!("{name}: want {want:?}, got {got:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// BPE/SPM files without vectors load (gpt-neox and aquila have no `tokenizer.ggml.pre`:
/// llama.cpp's `default`), and every text round-trips through them.
#[test]
fn files_without_vectors_load_and_round_trip() {
    let Some(dir) = vectors_dir() else { return };
    for (name, pre) in [
        ("gpt-neox", Some("default")),
        ("aquila", Some("default")),
        ("baichuan", None),
    ] {
        let bytes = std::fs::read(dir.join(format!("ggml-vocab-{name}.gguf"))).expect("the file");
        let tok = Tokenizer::from_gguf(&Gguf::parse(&bytes).unwrap()).expect(name);
        assert_eq!(tok.pre_tokenizer(), pre, "{name}");
        let text = "Hello wörld 123 🦙 東京\n\t x";
        assert_eq!(
            tok.decode(&tok.encode(text, false, false), false),
            text,
            "{name}"
        );
    }
    let bytes = std::fs::read(dir.join("ggml-vocab-nomic-bert-moe.gguf")).expect("the file");
    let err = Tokenizer::from_gguf(&Gguf::parse(&bytes).unwrap()).unwrap_err();
    assert!(err.to_string().contains("t5"), "{err}");
}
