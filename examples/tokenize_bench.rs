//! Tokenizer speed: times `Tokenizer::encode` (as llama.cpp's `llama_tokenize(text,
//! add_special = true, parse_special = false)`) on English prose (~50 KB), code (~50 KB of
//! this repository's Rust and Python) and mixed Chinese/Japanese (~20 KB), median of 5 runs,
//! and prints tokens per second. scripts/bench-tokenizer.sh runs it beside llama.cpp.
//!
//! ```text
//! cargo run --release --example tokenize_bench -- models/vectors/ggml-vocab-llama-bpe.gguf
//! cargo run --release --example tokenize_bench -- --write-texts DIR   # prose.txt code.txt cjk.txt
//! cargo run --release --example tokenize_bench -- VOCAB.gguf FILE...  # time these files
//! ```
//!
//! Each result is one line: `<vocab> <text> <bytes> <tokens> <tokens/s>`.

// Native only: it reads files and measures wall time.
#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::path::Path;
    use std::time::Instant;

    use webtensor::model::gguf::Gguf;
    use webtensor::model::tokenizer::Tokenizer;

    const RUNS: usize = 5;

    /// A small deterministic generator (64-bit LCG, high bits).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }

    const WORDS: &str = "the of and to in a is that it was for on are as with his they at be \
        this from have or by one had not but what all were when we there can an your which their \
        said if do will each about how up out them then she many some so these would other into \
        has more her two like him see time could no make than first been its who now people my \
        made over did down only way find use may water long little very after words called just \
        where most know get through back much before go good new write our used me man too any \
        day same right look think also around another came come work three word must because does \
        part even place well such here take why things help put years different away again off \
        went old number great tell men say small every found still between name should home big \
        give air line set own under read last never us left end along while might next sound below \
        saw something thought both few those always looked show large often together asked house \
        don't world going want school important until form food keep children feet land side \
        without boy once animals life enough took sometimes four head above kind began almost live \
        page got earth need far hand high year mother light parts country father let night \
        following picture being study second eyes soon times story boys since white days ever \
        paper hard near sentence better best across during today others however sure means knew \
        it's try told young miles sun ways thing whole hear example heard several change answer \
        room sea against top turned learn point city play toward five using himself usually";

    /// ~50 KB of English prose: sentences of seeded words, commas, a few names and numbers,
    /// paragraphs.
    pub fn prose() -> String {
        let words: Vec<&str> = WORDS.split_whitespace().collect();
        let names = [
            "Alice",
            "Mr. Holmes",
            "London",
            "the Thames",
            "Dr. Watson",
            "Baker Street",
        ];
        let mut r = Lcg(25);
        let mut s = String::new();
        while s.len() < 50_000 {
            for _ in 0..3 + r.next(5) {
                let n = 6 + r.next(16);
                for i in 0..n {
                    let w = if r.next(20) == 0 {
                        names[r.next(names.len())].to_string()
                    } else if r.next(40) == 0 {
                        format!("{}", 1 + r.next(1990))
                    } else {
                        words[r.next(words.len())].to_string()
                    };
                    if i == 0 {
                        let mut c = w.chars();
                        let first = c.next().unwrap().to_uppercase().to_string();
                        s.push_str(&first);
                        s.push_str(c.as_str());
                    } else {
                        s.push(' ');
                        s.push_str(&w);
                    }
                    if i + 1 < n && r.next(9) == 0 {
                        s.push(',');
                    }
                }
                s.push_str([".", ".", ".", "?", "!", ";"][r.next(6)]);
                s.push(' ');
            }
            s.pop();
            s.push_str("\n\n");
        }
        s
    }

    /// ~50 KB of code: this repository's tokenizer and scripts, concatenated and cut at a
    /// character boundary.
    pub fn code() -> String {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut s = String::new();
        for f in [
            "src/model/tokenizer/llm.rs",
            "src/model/tokenizer/pretok.rs",
            "scripts/wordpiece-vectors.py",
            "scripts/llm-tokenizer-vectors.py",
            "src/model/gguf.rs",
        ] {
            if let Ok(t) = std::fs::read_to_string(root.join(f)) {
                s.push_str(&t);
            }
        }
        let mut end = s.len().min(50_000);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s
    }

    const CJK: [&str; 24] = [
        "我们今天去公园散步，天气非常好。",
        "这个问题需要仔细研究，才能找到答案。",
        "东京是日本的首都，人口很多。",
        "他每天早上六点起床，然后去跑步。",
        "学习一门新的语言需要时间和耐心。",
        "北京的秋天很美丽，树叶变成了金黄色。",
        "请把这本书放在桌子上。",
        "机器学习和人工智能正在改变世界。",
        "「こんにちは」と彼女は言った。",
        "今日はとても暑いですね。",
        "私は毎朝コーヒーを飲みます。",
        "日本語の文法は難しいけれど、面白いです。",
        "東京タワーから富士山が見えました。",
        "週末に友達と映画を見に行きます。",
        "この料理はとてもおいしいです！",
        "駅までどのくらいかかりますか？",
        "春になると桜の花が咲きます。",
        "コンピューターのプログラムを書いています。",
        "中华人民共和国成立于一九四九年。",
        "上海是中国最大的城市之一。",
        "图书馆里有很多有趣的书。",
        "彼は大学で物理学を勉強している。",
        "雨が降っているので、傘を持って行きましょう。",
        "孩子们在操场上玩得很开心。",
    ];

    /// ~20 KB of Chinese and Japanese sentences in seeded order, paragraphs.
    pub fn cjk() -> String {
        let mut r = Lcg(26);
        let mut s = String::new();
        while s.len() < 20_000 {
            for _ in 0..4 + r.next(4) {
                s.push_str(CJK[r.next(CJK.len())]);
            }
            s.push('\n');
        }
        s
    }

    fn time(tok: &Tokenizer, text: &str) -> (usize, f64) {
        let mut n = 0;
        let mut secs: Vec<f64> = (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                let ids = tok.encode(std::hint::black_box(text), true, false);
                let s = t.elapsed().as_secs_f64();
                n = ids.len();
                s
            })
            .collect();
        secs.sort_by(|a, b| a.total_cmp(b));
        (n, secs[RUNS / 2])
    }

    pub fn main() -> Result<(), Box<dyn std::error::Error>> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let texts = [("prose", prose()), ("code", code()), ("cjk", cjk())];
        if args.first().map(String::as_str) == Some("--write-texts") {
            let dir = Path::new(args.get(1).ok_or("--write-texts DIR")?);
            std::fs::create_dir_all(dir)?;
            for (name, t) in &texts {
                std::fs::write(dir.join(format!("{name}.txt")), t)?;
            }
            return Ok(());
        }
        let path = args
            .first()
            .ok_or("usage: tokenize_bench VOCAB.gguf [FILE...] | --write-texts DIR")?;
        let bytes = std::fs::read(path)?;
        let tok = Tokenizer::from_gguf(&Gguf::parse(&bytes)?)?;
        let vocab = Path::new(path)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or(path)
            .trim_start_matches("ggml-vocab-")
            .to_string();
        let files: Vec<(String, String)> = if args.len() > 1 {
            args[1..]
                .iter()
                .map(|f| {
                    let name = Path::new(f)
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .unwrap_or(f)
                        .to_string();
                    std::fs::read_to_string(f).map(|t| (name, t))
                })
                .collect::<Result<_, _>>()?
        } else {
            texts.map(|(n, t)| (n.to_string(), t)).into()
        };
        for (name, text) in &files {
            let (n, secs) = time(&tok, text);
            println!("{vocab} {name} {} {n} {:.0}", text.len(), n as f64 / secs);
        }
        Ok(())
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    native::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
