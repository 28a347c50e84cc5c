//! Requantizes a decoder GGUF (llama, qwen2, qwen3) as llama.cpp's `llama-quantize` would,
//! for files webtensor and its peers then load: every 2-D weight dequantized and quantized
//! again with the reference quantizers (`row_from_f32`: ggml's, the K-quants bit for bit),
//! metadata and 1-D tensors copied, `general.file_type` set.
//!
//! ```text
//! cargo run --release --example quantize -- IN.gguf OUT.gguf q4_k_m
//! ```
//!
//! The type is one dtype for every matrix (`q8_0`, `q4_0`, `q4_1`, `q5_0`, `q5_1`,
//! `iq4_nl`, `q4_k`, `q6_k`, ...) or `q4_k_m` / `q5_k_m` / `q3_k_m`, llama.cpp's mixes
//! (`llama_tensor_get_type` for `LLAMA_FTYPE_MOSTLY_Q4_K_M` / `Q5_K_M` / `Q3_K_M`, no
//! importance matrix): Q4_K (Q5_K); Q6_K for the output matrix (the token embeddings when
//! they are tied), and for `attn_v` and `ffn_down` in the layers `use_more_bits` picks (the
//! first and last eighth, every third between); Q3_K_M: Q3_K, Q6_K for the output, Q4_K for
//! `attn_output`, `attn_v` and `ffn_down` but Q5_K for the first two `attn_v` and the first
//! sixteenth's `ffn_down`. Then llama.cpp's fallback for rows that are not whole 256-value
//! super-blocks: Q3_K to IQ4_NL, Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0. A
//! Qwen2.5-0.5B-shaped file (rows of 896) is then mostly Q5_0 (Q5_1, IQ4_NL) and Q8_0 with
//! K-quant `ffn_down`, as the files people download are.
//! `scripts/decoder-models.py --bench` makes the benchmark's Q4_K_M file with it.

use webtensor::graph::{k_quant_fallback, row_from_f32, row_to_f32, use_more_bits, DType};
use webtensor::model::gguf::{Gguf, GgufWriter, Value};

type Res<T> = std::result::Result<T, String>;

/// The layer index of `blk.N.<part>`.
fn layer(name: &str, part: &str) -> Option<usize> {
    let (i, tail) = name.strip_prefix("blk.")?.split_once('.')?;
    (tail == part).then(|| i.parse().ok()).flatten()
}

/// llama.cpp's K_M mixes.
#[derive(Clone, Copy)]
enum Mix {
    Q3KM,
    Q4KM,
    Q5KM,
}

/// The `mix` type of matrix `name` (rows of `ne0`) of an `n_layer`-layer decoder whose
/// output is `token_embd` when `tied`, after llama.cpp's fallback for rows that are not
/// whole super-blocks.
fn k_m_type(name: &str, ne0: usize, n_layer: usize, tied: bool, mix: Mix) -> DType {
    let output = name == "output.weight" || (tied && name == "token_embd.weight");
    let want = if output {
        DType::Q6_K
    } else if let Mix::Q3KM = mix {
        // Q3_K_M: attn_v Q5_K in the first two layers, Q4_K after; ffn_down Q5_K in the
        // first sixteenth, Q4_K after (llama and qwen: not falcon); attn_output Q4_K.
        match (
            layer(name, "attn_v.weight"),
            layer(name, "ffn_down.weight"),
            layer(name, "attn_output.weight"),
        ) {
            (Some(i), _, _) if i < 2 => DType::Q5_K,
            (_, Some(i), _) if i < n_layer / 16 => DType::Q5_K,
            (Some(_), _, _) | (_, Some(_), _) | (_, _, Some(_)) => DType::Q4_K,
            _ => DType::Q3_K,
        }
    } else {
        let more = |part| layer(name, part).is_some_and(|i| use_more_bits(i, n_layer));
        if more("attn_v.weight") || more("ffn_down.weight") {
            DType::Q6_K
        } else if let Mix::Q5KM = mix {
            DType::Q5_K
        } else {
            DType::Q4_K
        }
    };
    k_quant_fallback(want, ne0)
}

/// What the matrices become.
#[derive(Clone, Copy)]
enum Plan {
    /// One dtype for every matrix (rows it cannot hold keep theirs).
    One(DType),
    /// One of llama.cpp's K_M mixes.
    Mix(Mix),
}

/// llama.cpp's `general.file_type` for a file of `ty`.
fn file_type(ty: &str) -> Option<u32> {
    Some(match ty {
        "f32" => 0,
        "f16" => 1,
        "q4_0" => 2,
        "q4_1" => 3,
        "q8_0" => 7,
        "q5_0" => 8,
        "q5_1" => 9,
        "q5_k" | "q5_k_m" => 17,
        "q6_k" => 18,
        "q4_k" | "q4_k_m" => 15,
        "q3_k" | "q3_k_m" => 12,
        "iq4_nl" => 25,
        _ => return None,
    })
}

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
    let [input, output, ty] = &args[..] else {
        let types = names.join(", ");
        return Err(format!(
            "usage: quantize IN.gguf OUT.gguf TYPE (q3_k_m, q4_k_m, q5_k_m, {types})"
        ));
    };
    // A mix, or the one dtype of every matrix.
    let plan = match ty.as_str() {
        "q3_k_m" => Plan::Mix(Mix::Q3KM),
        "q4_k_m" => Plan::Mix(Mix::Q4KM),
        "q5_k_m" => Plan::Mix(Mix::Q5KM),
        _ => Plan::One(DType::from_name(ty).ok_or_else(|| {
            format!(
                "unknown type {ty} (q3_k_m, q4_k_m, q5_k_m, {})",
                names.join(", ")
            )
        })?),
    };
    let bytes = std::fs::read(input).map_err(|e| format!("{input}: {e}"))?;
    let g = Gguf::parse(&bytes).map_err(|e| format!("{input}: {e}"))?;
    let arch = g
        .get_str("general.architecture")
        .map_err(|e| e.to_string())?;
    let n_layer = g
        .get_usize(&format!("{arch}.block_count"))
        .map_err(|e| e.to_string())?;
    let tied = g.tensor("output.weight").is_none();
    let mut w = GgufWriter::new();
    for (k, v) in g.metadata() {
        w.set(k, v.clone()).map_err(|e| e.to_string())?;
    }
    if let Some(ft) = file_type(ty) {
        w.set("general.file_type", Value::U32(ft))
            .map_err(|e| e.to_string())?;
    }
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for t in g.tensors() {
        let data = g.tensor_data(t).map_err(|e| e.to_string())?;
        let (ne0, rows) = (t.ne[0], t.ne[1..].iter().product::<usize>());
        let to = match plan {
            _ if t.ne.len() < 2 => t.dtype,
            Plan::One(d) if ne0.is_multiple_of(d.block_size()) => d,
            Plan::One(_) => t.dtype,
            Plan::Mix(mix) => k_m_type(&t.name, ne0, n_layer, tied, mix),
        };
        *counts.entry(to.name()).or_default() += 1;
        if to == t.dtype {
            w.add_tensor(&t.name, to, &t.ne, data.to_vec())
                .map_err(|e| e.to_string())?;
            continue;
        }
        let (src_row, dst_row) = (
            t.dtype.row_bytes(ne0).map_err(|e| e.to_string())?,
            to.row_bytes(ne0).map_err(|e| e.to_string())?,
        );
        let mut out = vec![0u8; dst_row * rows];
        let mut f = vec![0f32; ne0];
        for (src, dst) in data
            .chunks_exact(src_row)
            .zip(out.chunks_exact_mut(dst_row))
        {
            row_to_f32(t.dtype, src, &mut f);
            row_from_f32(to, &f, dst).map_err(|e| e.to_string())?;
        }
        w.add_tensor(&t.name, to, &t.ne, out)
            .map_err(|e| e.to_string())?;
    }
    let out = w.to_bytes();
    std::fs::write(output, &out).map_err(|e| format!("{output}: {e}"))?;
    println!(
        "{output}: {} tensors ({}), {:.1} MiB",
        g.tensors().len(),
        counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        out.len() as f64 / 1048576.0
    );
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("quantize: {e}");
        std::process::exit(1);
    }
}
