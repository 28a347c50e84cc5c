//! Benchmark support shared by the native benches and the wasm benchmark page: a prepared
//! matmul run through a device's real backend and a probe of this machine's SIMD peak, behind
//! the `bench` feature (out of the default package); the per-op profiler is
//! `backend::profile`. Benchmarks print numbers; nothing here is a timed test.

use std::collections::HashMap;
use std::rc::Rc;

use crate::backend::{Backend, BufferUsage, Device, TensorMemory};
use crate::error::Result;
use crate::graph::{row_from_f32, DType, Graph, TensorId};
use crate::runtime::{Program, Runtime};

/// `W (k×m, wtype) · X (k×n, f32)` prepared on a device: data written once, `run` enqueues it.
pub struct MatmulProblem {
    backend: Rc<Backend>,
    graph: Graph,
    mem: TensorMemory,
    out: TensorId,
    flops: f64,
}

impl MatmulProblem {
    /// Builds and uploads a problem with deterministic pseudo-random data.
    pub fn new(device: Rc<dyn Device>, wtype: DType, m: usize, n: usize, k: usize) -> Result<Self> {
        let mut g = Graph::new();
        let w = g.weight("w", wtype, &[k, m])?;
        let x = g.input("x", DType::F32, &[k, n])?;
        let out = g.matmul(w, x)?;
        g.set_output(out)?;
        let bt = device.buffer_type();
        let align = bt.alignment().max(1);
        let mut mem = TensorMemory::new();
        let mut rng = crate::testing::Rng::new(0x9E37_79B9);
        for id in [w, x, out] {
            let t = g.tensor(id);
            let buf = bt.alloc(bt.alloc_size(t).div_ceil(align) * align)?;
            if id != out {
                // Every dtype from f32 values through its quantizer (K-quants included).
                let vals: Vec<f32> = (0..t.numel()).map(|_| rng.uniform(-1.0, 1.0)).collect();
                let mut bytes = vec![0u8; t.nbytes()];
                let row = t.ne[0];
                let rb = t.dtype.row_bytes(row)?;
                for (src, dst) in vals.chunks_exact(row).zip(bytes.chunks_exact_mut(rb)) {
                    row_from_f32(t.dtype, src, dst)?;
                }
                buf.write(0, &bytes)?;
            }
            if id == w {
                // As a model's weights are: the CPU prepares them once (packed panels).
                buf.set_usage(BufferUsage::Weights);
            }
            mem.place(&g, id, buf, 0)?;
        }
        let backend = Backend::new(device.clone())?;
        Ok(Self {
            backend,
            graph: g,
            mem,
            out,
            flops: 2.0 * (m * n * k) as f64,
        })
    }

    /// Enqueues one matmul (on the CPU it completes before returning).
    pub fn run(&self) -> Result<()> {
        self.backend.compute(&self.graph, &[self.out], &self.mem)
    }

    /// Waits for enqueued work.
    pub async fn synchronize(&self) -> Result<()> {
        self.backend.synchronize().await
    }

    /// Floating-point operations per run (2·m·n·k).
    pub fn flops(&self) -> f64 {
        self.flops
    }
}

impl MatmulProblem {
    /// Median seconds of `reps` timed runs (each run, then a wait for it), after one untimed
    /// run that also makes the device compile and upload what it needs.
    pub async fn median_seconds(&self, reps: usize) -> Result<f64> {
        self.run()?;
        self.synchronize().await?;
        let mut times = Vec::with_capacity(reps.max(1));
        for _ in 0..reps.max(1) {
            let t = crate::clock::now_ms();
            self.run()?;
            self.synchronize().await?;
            times.push((crate::clock::now_ms() - t) / 1e3);
        }
        Ok(median(&mut times))
    }
}

/// A buffer read from end to end, for the memory bandwidth a matrix-vector product's
/// weights stream at (the benchmark prints both).
pub struct StreamProbe(Vec<u64>);

impl StreamProbe {
    /// A probe over `bytes` bytes (rounded down to 32).
    pub fn new(bytes: usize) -> Self {
        Self(vec![1; bytes / 32 * 4])
    }

    /// Bytes one [`run`](Self::run) reads.
    pub fn bytes(&self) -> usize {
        self.0.len() * 8
    }

    /// Reads the buffer once (4 independent sums, so the adds keep up with memory); returns
    /// the sum, so the reads cannot be optimized out.
    pub fn run(&self) -> u64 {
        let mut s = [0u64; 4];
        for c in self.0.chunks_exact(4) {
            for (a, x) in s.iter_mut().zip(c) {
                *a = a.wrapping_add(*x);
            }
        }
        s.iter().fold(0, |a, &b| a.wrapping_add(b))
    }
}

/// The middle value (the upper one of an even count); NaN for none.
pub fn median(v: &mut [f64]) -> f64 {
    crate::sort::by_key(v, |&x| crate::sort::f64_key(x));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The MiniLM benchmark's four cases: (label, sentences, tokens per sentence).
pub const MINILM_CASES: [(&str, usize, usize); 4] = [
    ("8 tok", 1, 8),
    ("32 tok", 1, 32),
    ("128 tok", 1, 128),
    ("16 × 32", 16, 32),
];

/// `n` copies of a text of exactly `tokens` tokens ([CLS] and [SEP] included), as
/// `bench/minilm.html` makes them.
pub fn minilm_texts(
    e: &crate::model::bert::SentenceEmbedder,
    n: usize,
    tokens: usize,
) -> Vec<String> {
    const WORDS: [&str; 16] = [
        "the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "seven",
        "happy", "wizards", "quietly", "brew", "potions",
    ];
    let mut words: Vec<&str> = Vec::new();
    let count = |w: &[&str]| e.encode(&[&w.join(" ")]).map_or(0, |v| v[0].len());
    while count(&words) < tokens && words.len() < 4 * tokens {
        words.push(WORDS[words.len() % WORDS.len()]);
    }
    while count(&words) > tokens {
        words.pop();
    }
    vec![words.join(" "); n]
}

/// Median milliseconds of `reps` embeds of `texts` after two untimed ones.
pub async fn minilm_embed_ms(
    e: &crate::model::bert::SentenceEmbedder,
    rt: &crate::runtime::Runtime,
    texts: &[String],
    reps: usize,
) -> Result<f64> {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for _ in 0..2 {
        e.embed(rt, &refs).await?;
    }
    let mut v = Vec::with_capacity(reps.max(1));
    for _ in 0..reps.max(1) {
        let t = crate::clock::now_ms();
        e.embed(rt, &refs).await?;
        v.push(crate::clock::now_ms() - t);
    }
    Ok(median(&mut v))
}

/// The decoder's attention of `n_q` new tokens over `n_kv` cache rows (`heads` query heads,
/// `kv_heads` K/V heads, head size `d`), fused or as the nodes it replaces, for the attention
/// benchmark (`benches/attention.rs`) and the GPU check.
#[derive(Clone, Copy, Debug)]
pub struct AttentionCase {
    pub d: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub n_q: usize,
    pub n_kv: usize,
    /// Keys past the prompt's end, all masked: the decoder's cache view rounds its length
    /// up (a 128-token prompt's second chunk reads 256 keys, 128 of them filled).
    pub pad: usize,
}

impl AttentionCase {
    /// The benchmark's cases (`benches/attention.rs`, and in wasm bench/attention-cases.mjs
    /// through `attentionCases`): MiniLM's heads (12 × 32) and a 7B-class GQA shape (32 × 128
    /// on 8 KV heads), a decode step over 128 to 4096 keys and prompts of 4 to 512 rows, and
    /// two of Qwen2.5-0.5B's (14 × 64 on 2 KV heads).
    pub fn all() -> Vec<AttentionCase> {
        let mut cases = Vec::new();
        for (d, heads, kv_heads) in [(32, 12, 12), (128, 32, 8)] {
            for (n_q, n_kvs) in [
                (1, &[128, 1024, 2048, 4096][..]),
                (4, &[1024][..]),
                (32, &[128, 1024][..]),
                (128, &[128, 1024][..]),
                (512, &[512][..]),
            ] {
                for &n_kv in n_kvs {
                    cases.push(AttentionCase {
                        d,
                        heads,
                        kv_heads,
                        n_q,
                        n_kv,
                        pad: 0,
                    });
                }
            }
        }
        // Qwen2.5-0.5B's heads (14 × 64 on 2 KV heads) as its generator runs them: a
        // 128-token prompt's second chunk of 64 rows over a 256-key view, and a decode step
        // at context 1024.
        for (n_q, n_kv, pad) in [(64, 256, 128), (1, 1024, 0)] {
            cases.push(AttentionCase {
                d: 64,
                heads: 14,
                kv_heads: 2,
                n_q,
                n_kv,
                pad,
            });
        }
        cases
    }

    /// `heads×d / kv_heads, n_q x n_kv` (and ` (pad masked)` with padding).
    pub fn name(&self) -> String {
        let pad = if self.pad > 0 {
            format!(" ({} masked)", self.pad)
        } else {
            String::new()
        };
        format!(
            "{}x{} / {}, {} x {}{pad}",
            self.heads, self.d, self.kv_heads, self.n_q, self.n_kv
        )
    }

    /// The program and its inputs, in the decoder's layout: q a permuted view, K/V f16 views
    /// of a longer cache (weights: on the device before the first timed run), a causal mask
    /// over the last `n_q` keys before the `pad` masked ones. `fused`: the `attention` op;
    /// else two batched matmuls, a masked softmax and the permute copies.
    pub fn program(&self, fused: bool) -> Result<(Program, HashMap<String, Vec<u8>>)> {
        let c = *self;
        let f16 = |n: usize, salt: usize| -> Vec<u8> {
            (0..n)
                .flat_map(|i| {
                    let x = ((i * 7919 + salt) % 2001) as f32 / 1000.0 - 1.0;
                    half::f16::from_f32(x).to_le_bytes()
                })
                .collect()
        };
        let mut p = Program::new();
        let cache = [c.d, c.n_kv + 64, c.kv_heads];
        let n_cache = cache.iter().product();
        // The caches are weights: stored on the device once, as a decoder's KV cache stays
        // there between steps (an input would be copied in again every run).
        let kc = p.weight_bytes("k", DType::F16, &cache, f16(n_cache, 1))?;
        let vc = p.weight_bytes("v", DType::F16, &cache, f16(n_cache, 2))?;
        let g: &mut Graph = p.graph_mut();
        let q = g.input("q", DType::F32, &[c.d, c.heads, c.n_q])?;
        let q = g.permute(q, [0, 2, 1, 3])?;
        let mask = g.input("mask", DType::F32, &[c.n_kv, c.n_q])?;
        let nb = g.tensor(kc).nb;
        let keys = g.view(kc, &[c.d, c.n_kv, c.kv_heads], &nb[..3], 0)?;
        let scale = 1.0 / (c.d as f32).sqrt();
        let out: TensorId = if fused {
            let values = g.view(vc, &[c.d, c.n_kv, c.kv_heads], &nb[..3], 0)?;
            g.attention(q, keys, values, Some(mask), scale)?
        } else {
            let values_t = g.view(vc, &[c.n_kv, c.d, c.kv_heads], &[nb[1], nb[0], nb[2]], 0)?;
            let scores = g.matmul(keys, q)?;
            let probs = g.softmax(scores, Some(mask), scale)?;
            let o = g.matmul(values_t, probs)?;
            let o = g.permute(o, [0, 2, 1, 3])?;
            g.cont(o)?
        };
        g.set_output(out)?;
        let f32s = |v: Vec<f32>| -> Vec<u8> { bytemuck::cast_slice(&v).to_vec() };
        let q_vals = (0..c.d * c.heads * c.n_q)
            .map(|i| ((i * 104_729) % 2001) as f32 / 1000.0 - 1.0)
            .collect();
        // Causal over the last n_q rows before the padding: query i sees keys
        // 0 ..= n_kv - pad - n_q + i.
        let mask_vals = (0..c.n_kv * c.n_q)
            .map(|x| {
                if x % c.n_kv + c.pad + c.n_q > c.n_kv + x / c.n_kv {
                    f32::NEG_INFINITY
                } else {
                    0.0
                }
            })
            .collect();
        let inputs = HashMap::from([
            ("q".to_string(), f32s(q_vals)),
            ("mask".to_string(), f32s(mask_vals)),
        ]);
        Ok((p, inputs))
    }

    /// Median milliseconds of 7 runs of `p` on `rt` after one untimed run.
    pub async fn median_ms(
        rt: &Runtime,
        p: &Program,
        inputs: &HashMap<String, Vec<u8>>,
    ) -> Result<f64> {
        rt.run(p, inputs).await?;
        let mut t = Vec::with_capacity(7);
        for _ in 0..7 {
            let s = crate::clock::now_ms();
            rt.run(p, inputs).await?;
            t.push(crate::clock::now_ms() - s);
        }
        Ok(median(&mut t))
    }
}

/// Runs `iters` rounds of independent SIMD multiplies and adds (12 chains of f32x4, as many
/// as stay in registers, each short enough for its latency to be hidden) and returns (a
/// checksum keeping the work alive, the flops done). Timing it gives this machine's practical
/// f32 SIMD peak for one thread: 6 multiply and 6 add chains (a GEMM's mul+add pairs; the two
/// kinds issue on separate ports), or 12 fused multiply-add chains with `+relaxed-simd`.
#[inline(never)]
pub fn simd_peak_probe(iters: u32) -> (f32, f64) {
    const CHAINS: usize = 12;
    let mut acc = [[0.0f32; 4]; CHAINS];
    for (i, a) in acc.iter_mut().enumerate() {
        *a = [1.0 + i as f32 * 1e-3; 4];
    }
    // Opaque 1.0: the multiply chains stay at their start values (no drift into denormals,
    // which x86 computes in slow microcode), yet every multiply still executes.
    let m = std::hint::black_box([1.0f32; 4]);
    let c = std::hint::black_box([1e-4f32; 4]);
    let acc = std::hint::black_box(probe_kernel(acc, m, c, iters));
    let sum: f32 = acc.iter().flatten().sum();
    let flops_per_chain = if cfg!(target_feature = "relaxed-simd") {
        8
    } else {
        4
    };
    (sum, iters as f64 * (CHAINS * flops_per_chain) as f64)
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn probe_kernel(acc: [[f32; 4]; 12], m: [f32; 4], c: [f32; 4], iters: u32) -> [[f32; 4]; 12] {
    use core::arch::wasm32::*;
    let ld = |a: [f32; 4]| f32x4(a[0], a[1], a[2], a[3]);
    let mut v: [v128; 12] = acc.map(ld);
    let (m, c) = (ld(m), ld(c));
    for _ in 0..iters {
        for (i, x) in v.iter_mut().enumerate() {
            #[cfg(target_feature = "relaxed-simd")]
            {
                let _ = i;
                *x = f32x4_relaxed_madd(*x, m, c);
            }
            #[cfg(not(target_feature = "relaxed-simd"))]
            {
                *x = if i % 2 == 0 {
                    f32x4_mul(*x, m)
                } else {
                    f32x4_add(*x, c)
                };
            }
        }
    }
    v.map(|x| {
        [
            f32x4_extract_lane::<0>(x),
            f32x4_extract_lane::<1>(x),
            f32x4_extract_lane::<2>(x),
            f32x4_extract_lane::<3>(x),
        ]
    })
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn probe_kernel(mut acc: [[f32; 4]; 12], m: [f32; 4], c: [f32; 4], iters: u32) -> [[f32; 4]; 12] {
    for _ in 0..iters {
        for (i, x) in acc.iter_mut().enumerate() {
            for l in 0..4 {
                x[l] = if i % 2 == 0 { x[l] * m[l] } else { x[l] + c[l] };
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cpu::{CpuDevice, KernelSet};

    #[test]
    fn matmul_problem_runs_and_counts_flops() {
        let dev = Rc::new(CpuDevice::new(KernelSet::Fast));
        let p = MatmulProblem::new(dev, DType::Q8_0, 8, 3, 64).unwrap();
        p.run().unwrap();
        assert_eq!(p.flops(), 2.0 * 8.0 * 3.0 * 64.0);
    }

    #[test]
    fn peak_probe_counts_its_flops() {
        let (sum, flops) = simd_peak_probe(10);
        assert!(sum.is_finite());
        assert_eq!(flops, 10.0 * 48.0);
    }
}
