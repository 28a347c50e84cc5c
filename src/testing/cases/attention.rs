//! Softmax and attention cases (masks, heads, KV layouts).

use crate::error::Result;
use crate::graph::{DType, OpKind, TensorId};
use crate::testing::{CaseBuilder, OpCase};

use super::{operand, shape_name, Layout, F32_ACC};

pub(super) fn softmax_cases(v: &mut Vec<OpCase>) {
    // (shape, mask shape, scale, layout)
    type SoftmaxCase = ([usize; 4], Option<[usize; 4]>, f32, Layout);
    let list: [SoftmaxCase; 7] = [
        ([33, 7, 2, 1], None, 1.0, Layout::Contig),
        // One mask row per batch, repeated over rows and heads (key padding).
        ([19, 6, 3, 2], Some([19, 1, 1, 2]), 0.25, Layout::Contig),
        ([65, 4, 1, 1], Some([65, 4, 1, 1]), 0.125, Layout::Contig),
        ([17, 5, 3, 2], Some([17, 5, 1, 2]), 0.5, Layout::Contig),
        ([1, 3, 1, 1], None, 1.0, Layout::Contig),
        ([8, 6, 1, 1], Some([8, 6, 1, 1]), 2.0, Layout::Transposed),
        ([256, 3, 1, 1], None, 3.0, Layout::Offset),
    ];
    for (ne, mask, scale, layout) in list {
        let name = format!(
            "softmax_{}_{}_{layout:?}",
            shape_name(ne),
            if mask.is_some() { "mask" } else { "nomask" }
        );
        v.push(OpCase::new(name, OpKind::SoftMax, F32_ACC, move |b| {
            let x = operand(b, DType::F32, ne, layout, -4.0, 4.0)?;
            let m = match mask {
                Some(mne) => Some(b.input_range(DType::F32, &mne, -2.0, 2.0)?),
                None => None,
            };
            let y = b.g.softmax(x, m, scale)?;
            b.output(y)
        }));
    }
    v.push(OpCase::new(
        "softmax_causal_9x9_mask_inf",
        OpKind::SoftMax,
        F32_ACC,
        |b| {
            let x = b.input_range(DType::F32, &[9, 9, 2], -4.0, 4.0)?;
            let mask: Vec<f32> = (0..81)
                .map(|i| {
                    if i % 9 > i / 9 {
                        f32::NEG_INFINITY
                    } else {
                        0.0
                    }
                })
                .collect();
            let m = b.input_values(DType::F32, &[9, 9], &mask)?;
            let y = b.g.softmax(x, Some(m), 0.3)?;
            b.output(y)
        },
    ));
    // In place, with rows shorter and longer than a workgroup.
    for ne0 in [37, 300] {
        v.push(
            OpCase::new(
                format!("softmax_{ne0}x5"),
                OpKind::SoftMax,
                F32_ACC,
                move |b| {
                    let x = b.input_range(DType::F32, &[ne0, 5], -4.0, 4.0)?;
                    let m = b.input(DType::F32, &[ne0, 5])?;
                    let y = b.g.softmax(x, Some(m), 0.7)?;
                    b.output(y)
                },
            )
            .in_place(),
        );
    }
}

/// One attention case: head size (q·k, then v), queries, heads, keys, KV heads, batch, K/V
/// dtype and mask.
#[derive(Clone, Copy)]
struct AttnCase {
    d: usize,
    d_v: usize,
    n_q: usize,
    heads: usize,
    n_kv: usize,
    kv_heads: usize,
    batch: usize,
    kv: DType,
    mask: AttnMask,
}

#[derive(Clone, Copy, Debug)]
enum AttnMask {
    None,
    /// Random values, `[n_kv, n_q]`.
    Full,
    /// Query `i` sees keys up to `n_kv - n_q + i` (-inf after), `[n_kv, n_q]`.
    Causal,
    /// Key padding per batch, `[n_kv, 1, 1, batch]`: the last third of the keys of batch 1
    /// masked with -inf.
    Padding,
    /// Causal, and query 1's row -inf everywhere (its output is zero).
    BlankRow,
}

fn attention_mask(b: &mut CaseBuilder, c: AttnCase) -> Result<Option<TensorId>> {
    let (n_kv, n_q) = (c.n_kv, c.n_q);
    let inf = f32::NEG_INFINITY;
    let causal = |blank: bool| -> Vec<f32> {
        (0..n_kv * n_q)
            .map(|x| {
                let (j, i) = (x % n_kv, x / n_kv);
                if (blank && i == 1) || j > n_kv - n_q + i {
                    inf
                } else {
                    0.0
                }
            })
            .collect()
    };
    Ok(Some(match c.mask {
        AttnMask::None => return Ok(None),
        AttnMask::Full => b.input_range(DType::F32, &[n_kv, n_q], -2.0, 2.0)?,
        AttnMask::Causal => b.input_values(DType::F32, &[n_kv, n_q], &causal(false))?,
        AttnMask::BlankRow => b.input_values(DType::F32, &[n_kv, n_q], &causal(true))?,
        AttnMask::Padding => {
            let vals: Vec<f32> = (0..n_kv * c.batch)
                .map(|x| {
                    if x / n_kv == 1 && x % n_kv >= n_kv - n_kv / 3 {
                        inf
                    } else {
                        0.0
                    }
                })
                .collect();
            b.input_values(DType::F32, &[n_kv, 1, 1, c.batch], &vals)?
        }
    }))
}

pub(super) fn attention_cases(v: &mut Vec<OpCase>) {
    use AttnMask::{BlankRow, Causal, Full, Padding};
    let case = |d, d_v, n_q, heads, n_kv, kv_heads, batch, kv, mask| AttnCase {
        d,
        d_v,
        n_q,
        heads,
        n_kv,
        kv_heads,
        batch,
        kv,
        mask,
    };
    let list = [
        case(32, 32, 7, 4, 13, 4, 1, DType::F32, AttnMask::None),
        case(5, 5, 3, 2, 6, 1, 1, DType::F32, Full),
        case(16, 24, 9, 3, 9, 3, 2, DType::F32, Padding),
        case(32, 32, 40, 4, 40, 1, 1, DType::F16, Causal),
        case(64, 64, 1, 8, 37, 2, 1, DType::F16, Full),
        case(64, 64, 1, 8, 4096, 1, 1, DType::F16, Causal),
        case(48, 48, 1, 2, 1000, 2, 1, DType::F32, AttnMask::None),
        case(8, 8, 3, 2, 1, 2, 1, DType::F32, AttnMask::None),
        case(16, 16, 5, 4, 12, 4, 1, DType::F32, BlankRow),
        // v wider than a 64-thread workgroup (WebGPU: several outputs per thread), keys past
        // one 64-key tile.
        case(80, 160, 3, 2, 70, 1, 1, DType::F16, Full),
        // WebGPU's query tiles (16 rows of the heads sharing a KV head): the largest head
        // size they take (2 outputs a thread), GQA 4, two key tiles; an odd head size (K read
        // element by element), v wider than q, a partial row tile, causal.
        case(128, 128, 20, 8, 100, 2, 1, DType::F16, Full),
        case(5, 7, 18, 2, 33, 1, 1, DType::F32, Causal),
        // Three key tiles of WebGPU's query tiles (64 keys), the last partial, f32 K/V.
        case(32, 32, 20, 2, 130, 2, 1, DType::F32, AttnMask::None),
    ];
    for c in list {
        let name = format!(
            "attention_d{}_{}q_{}h_{}kv_{}kvh_b{}_{}_{:?}",
            c.d,
            c.n_q,
            c.heads,
            c.n_kv,
            c.kv_heads,
            c.batch,
            c.kv.name(),
            c.mask
        )
        .to_lowercase();
        let name = if c.d_v != c.d {
            format!("{name}_dv{}", c.d_v)
        } else {
            name
        };
        v.push(OpCase::new(name, OpKind::Attention, F32_ACC, move |b| {
            let q = b.input_range(DType::F32, &[c.d, c.n_q, c.heads, c.batch], -1.0, 1.0)?;
            let k = b.input_range(c.kv, &[c.d, c.n_kv, c.kv_heads, c.batch], -1.0, 1.0)?;
            let v = b.input_range(c.kv, &[c.d_v, c.n_kv, c.kv_heads, c.batch], -1.0, 1.0)?;
            let m = attention_mask(b, c)?;
            let scale = 1.0 / (c.d as f32).sqrt();
            let y = b.g.attention(q, k, v, m, scale)?;
            b.output(y)
        }));
    }
    // The decoder's layout: q a permuted view of `[d, heads, n_q]`, K/V the first n_kv rows
    // of a longer cache `[d, n_ctx + 1, kv_heads]` (an f16 state), V read as stored.
    v.push(OpCase::new(
        "attention_decoder_views_q_permuted_kv_cache_prefix",
        OpKind::Attention,
        F32_ACC,
        |b| {
            let (d, heads, n_q, kvh, n_ctx, n_kv) = (32, 6, 3, 2, 20, 11);
            let q = b.input_range(DType::F32, &[d, heads, n_q], -1.0, 1.0)?;
            let q = b.g.permute(q, [0, 2, 1, 3])?;
            let kc = b.input_range(DType::F16, &[d, n_ctx + 1, kvh], -1.0, 1.0)?;
            let vc = b.input_range(DType::F16, &[d, n_ctx + 1, kvh], -1.0, 1.0)?;
            let nb = b.g.tensor(kc).nb;
            let k = b.g.view(kc, &[d, n_kv, kvh], &nb[..3], 0)?;
            let v = b.g.view(vc, &[d, n_kv, kvh], &nb[..3], 0)?;
            let c = AttnCase {
                d,
                d_v: d,
                n_q,
                heads,
                n_kv,
                kv_heads: kvh,
                batch: 1,
                kv: DType::F16,
                mask: AttnMask::Causal,
            };
            let m = attention_mask(b, c)?;
            let y = b.g.attention(q, k, v, m, 0.2)?;
            b.output(y)
        },
    ));
    // MiniLM's layout: q, k and v views of one projection `[3 d heads, n]`, each token's Q, K
    // and V side by side (WebGPU reads them through one binding).
    v.push(OpCase::new(
        "attention_qkv_views_of_one_tensor",
        OpKind::Attention,
        F32_ACC,
        |b| {
            let (d, heads, n) = (16, 3, 7);
            let h = d * heads;
            let qkv = b.input_range(DType::F32, &[3 * h, n], -1.0, 1.0)?;
            let [e, row, ..] = b.g.tensor(qkv).nb;
            let mut part = |i: usize| -> Result<TensorId> {
                let x = b.g.view(qkv, &[d, heads, n], &[e, e * d, row], e * h * i)?;
                b.g.permute(x, [0, 2, 1, 3])
            };
            let (q, k, v) = (part(0)?, part(1)?, part(2)?);
            let c = AttnCase {
                d,
                d_v: d,
                n_q: n,
                heads,
                n_kv: n,
                kv_heads: heads,
                batch: 1,
                kv: DType::F32,
                mask: AttnMask::Full,
            };
            let m = attention_mask(b, c)?;
            let y = b.g.attention(q, k, v, m, 0.25)?;
            b.output(y)
        },
    ));
    // Q and K/V transposed (element strides ≠ element size): the reference's path on CPU.
    v.push(OpCase::new(
        "attention_q_transposed",
        OpKind::Attention,
        F32_ACC,
        |b| {
            let q = operand(b, DType::F32, [8, 6, 2, 1], Layout::Transposed, -1.0, 1.0)?;
            let k = operand(b, DType::F32, [8, 5, 2, 1], Layout::Offset, -1.0, 1.0)?;
            let v = b.input(DType::F32, &[8, 5, 2, 1])?;
            let y = b.g.attention(q, k, v, None, 0.5)?;
            b.output(y)
        },
    ));
}
