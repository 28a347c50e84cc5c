//! Fused attention against the unfused nodes it replaces (two batched matmuls, a masked
//! softmax and the permute copies), on the CPU device at 1 and 2 threads, same run: the
//! decoder's layout (q a permuted view, K/V f16 views of a longer cache, a causal mask) for
//! heads × head size 12 × 32 (GQA 1) and 32 × 128 (GQA 4), queries 1 / 32 / 128 / 512 over
//! 128 to 4096 keys. Medians of 7 runs after a warm-up. A benchmark, not a test.
//!
//! `cargo bench --bench attention [-- FILTER]` (FILTER: a substring of the case name)

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    use std::collections::HashMap;
    use std::rc::Rc;
    use std::time::Instant;

    use pollster::block_on;
    use webtensor::backend::Registry;
    use webtensor::backends::cpu::{CpuReg, KernelSet};
    use webtensor::graph::{DType, Graph, TensorId};
    use webtensor::runtime::{DeviceChoice, Program, Runtime};

    fn runtime(threads: usize) -> Option<Runtime> {
        let mut reg = Registry::new();
        reg.register(Rc::new(
            CpuReg::with_threads(KernelSet::Fast, Some(threads)).ok()?,
        ));
        block_on(Runtime::new(&reg, DeviceChoice::Cpu, false)).ok()
    }

    /// The decoder's attention of `n_q` new tokens over `n_kv` cache rows.
    #[derive(Clone, Copy)]
    struct Case {
        d: usize,
        heads: usize,
        kv_heads: usize,
        n_q: usize,
        n_kv: usize,
    }

    fn program(c: Case, fused: bool) -> webtensor::Result<(Program, HashMap<String, Vec<u8>>)> {
        let mut p = Program::new();
        let g: &mut Graph = p.graph_mut();
        let q = g.input("q", DType::F32, &[c.d, c.heads, c.n_q])?;
        let q = g.permute(q, [0, 2, 1, 3])?;
        let cache = [c.d, c.n_kv + 64, c.kv_heads];
        let kc = g.input("k", DType::F16, &cache)?;
        let vc = g.input("v", DType::F16, &cache)?;
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
        let f16 = |n: usize, salt: usize| -> Vec<u8> {
            (0..n)
                .flat_map(|i| {
                    let x = ((i * 7919 + salt) % 2001) as f32 / 1000.0 - 1.0;
                    half::f16::from_f32(x).to_le_bytes()
                })
                .collect()
        };
        let f32s = |v: Vec<f32>| -> Vec<u8> { bytemuck::cast_slice(&v).to_vec() };
        let n_cache = cache.iter().product();
        let q_vals = (0..c.d * c.heads * c.n_q)
            .map(|i| ((i * 104_729) % 2001) as f32 / 1000.0 - 1.0)
            .collect();
        // Causal over the last n_q rows: query i sees keys 0 ..= n_kv - n_q + i.
        let mask_vals = (0..c.n_kv * c.n_q)
            .map(|x| {
                if x % c.n_kv > c.n_kv - c.n_q + x / c.n_kv {
                    f32::NEG_INFINITY
                } else {
                    0.0
                }
            })
            .collect();
        let inputs = HashMap::from([
            ("q".to_string(), f32s(q_vals)),
            ("k".to_string(), f16(n_cache, 1)),
            ("v".to_string(), f16(n_cache, 2)),
            ("mask".to_string(), f32s(mask_vals)),
        ]);
        Ok((p, inputs))
    }

    fn median_ms(
        rt: &Runtime,
        p: &Program,
        inputs: &HashMap<String, Vec<u8>>,
    ) -> webtensor::Result<f64> {
        block_on(rt.run(p, inputs))?;
        let mut t: Vec<f64> = (0..7)
            .map(|_| {
                let s = Instant::now();
                block_on(rt.run(p, inputs)).map(|_| s.elapsed().as_secs_f64() * 1e3)
            })
            .collect::<webtensor::Result<_>>()?;
        t.sort_by(f64::total_cmp);
        Ok(t[t.len() / 2])
    }

    let filter = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let mut cases = Vec::new();
    for (d, heads, kv_heads) in [(32, 12, 12), (128, 32, 8)] {
        for (n_q, n_kvs) in [
            (1, &[128, 1024, 2048, 4096][..]),
            (32, &[128, 1024][..]),
            (128, &[128, 1024][..]),
            (512, &[512][..]),
        ] {
            for &n_kv in n_kvs {
                cases.push(Case {
                    d,
                    heads,
                    kv_heads,
                    n_q,
                    n_kv,
                });
            }
        }
    }
    println!(
        "| case (heads×d / kv heads, queries × keys) | threads | unfused ms | fused ms | speed-up |"
    );
    println!("|---|---|---|---|---|");
    for threads in [1, 2] {
        let Some(rt) = runtime(threads) else {
            return println!("no CPU runtime with {threads} threads");
        };
        for &c in &cases {
            let name = format!(
                "{}x{} / {}, {} x {}",
                c.heads, c.d, c.kv_heads, c.n_q, c.n_kv
            );
            if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
                continue;
            }
            let run = |fused| {
                let (p, inputs) = program(c, fused)?;
                let ms = median_ms(&rt, &p, &inputs);
                rt.release(&p);
                ms
            };
            match (run(false), run(true)) {
                (Ok(u), Ok(f)) => {
                    println!("| {name} | {threads} | {u:.3} | {f:.3} | {:.2}x |", u / f)
                }
                (Err(e), _) | (_, Err(e)) => println!("| {name} | {threads} | failed: {e} | | |"),
            }
        }
    }
}
