//! The adapter self-check: known-answer kernels (an f32 matmul, a q8_0 matrix-vector product,
//! a scaled softmax) run when the device is made. Some browser/driver stacks compute silently
//! wrong results; a device that answers wrong is not used (its family says why) and runtimes
//! fall back to the CPU. The answers are computed here in plain loops, so the check needs no
//! other device.

use std::collections::HashMap;
use std::rc::Rc;

use super::WebGpuDevice;
use crate::backend::{run_graph, Backend, Device};
use crate::error::Result;
use crate::graph::{row_from_f32, row_to_f32, DType, Graph, TensorId};

const K: usize = 64;
const M: usize = 32;
const N: usize = 16;

/// Deterministic values in [-2, 2].
fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 37 + seed * 11) % 101) as f32 / 25.0 - 2.0)
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `w` is `[K, rows]`, `x` is `[K, cols]`; the product is `[rows, cols]`.
fn matmul(w: &[f32], x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0f32; rows * cols];
    for c in 0..cols {
        for r in 0..rows {
            let dot: f64 = (0..K)
                .map(|k| w[r * K + k] as f64 * x[c * K + k] as f64)
                .sum();
            out[c * rows + r] = dot as f32;
        }
    }
    out
}

/// Runs the known-answer kernels on `device`; `Err` names the first wrong one (or the error
/// that stopped it).
/// `sabotage` (a test hook): answer one value wrong, as a broken driver would.
pub(super) async fn check(
    device: Rc<WebGpuDevice>,
    sabotage: bool,
) -> std::result::Result<(), String> {
    match run(device, sabotage).await {
        Ok(None) => Ok(()),
        Ok(Some(wrong)) => Err(wrong),
        Err(e) => Err(format!("the self-check failed to run: {e}")),
    }
}

async fn run(device: Rc<WebGpuDevice>, sabotage: bool) -> Result<Option<String>> {
    let mut g = Graph::new();
    let mut leaves: HashMap<TensorId, Vec<u8>> = HashMap::new();
    let w = values(K * M, 1);
    let x = values(K * N, 2);
    let wt = g.weight("w", DType::F32, &[K, M])?;
    let xt = g.input("x", DType::F32, &[K, N])?;
    leaves.insert(wt, bytes(&w));
    leaves.insert(xt, bytes(&x));
    let mm = g.matmul(wt, xt)?;
    g.set_output(mm)?;

    // q8_0 weights times one column: the answer uses the weights as stored (dequantized).
    let rb = DType::Q8_0.row_bytes(K)?;
    let mut wq = vec![0u8; M * rb];
    for (src, dst) in w.chunks_exact(K).zip(wq.chunks_exact_mut(rb)) {
        row_from_f32(DType::Q8_0, src, dst)?;
    }
    let mut wd = vec![0f32; K * M];
    for (src, dst) in wq.chunks_exact(rb).zip(wd.chunks_exact_mut(K)) {
        row_to_f32(DType::Q8_0, src, dst);
    }
    let wqt = g.weight("wq", DType::Q8_0, &[K, M])?;
    let vt = g.input("v", DType::F32, &[K, 1])?;
    leaves.insert(wqt, wq);
    leaves.insert(vt, bytes(&x[..K]));
    let qdot = g.matmul(wqt, vt)?;
    g.set_output(qdot)?;

    let st = g.input("s", DType::F32, &[K, 4])?;
    let s = values(K * 4, 3);
    leaves.insert(st, bytes(&s));
    let sm = g.softmax(st, None, 0.5)?;
    g.set_output(sm)?;

    let backend = Backend::new(device as Rc<dyn Device>)?;
    let outs = run_graph(&backend, &g, &leaves, 0).await?;
    let mut got: Vec<Vec<f32>> = outs.iter().map(|b| floats(b)).collect();
    if sabotage {
        if let Some(v) = got.first_mut().and_then(|o| o.first_mut()) {
            *v += 1.0;
        }
    }
    let mut softmax = Vec::with_capacity(K * 4);
    for row in s.chunks_exact(K) {
        let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(0.5 * v));
        let e: Vec<f64> = row
            .iter()
            .map(|&v| ((0.5 * v - max) as f64).exp())
            .collect();
        let sum: f64 = e.iter().sum();
        softmax.extend(e.iter().map(|v| (v / sum) as f32));
    }
    // Outputs come in graph order: matmul, q8_0 product, softmax. The q8_0 kernel may
    // quantize its activations (as the CPU does), hence its looser tolerance.
    let want = [
        ("f32 matmul", matmul(&w, &x, M, N), 1e-4),
        (
            "q8_0 matrix-vector product",
            matmul(&wd, &x[..K], M, 1),
            2e-2,
        ),
        ("softmax", softmax, 1e-5),
    ];
    for ((name, want, tol), got) in want.iter().zip(&got) {
        let scale = want.iter().fold(1f32, |m, v| m.max(v.abs()));
        if got.len() != want.len() {
            return Ok(Some(format!(
                "{name}: {} values, expected {}",
                got.len(),
                want.len()
            )));
        }
        if let Some(i) = (0..want.len()).find(|&i| {
            let d = (got[i] - want[i]).abs();
            d.is_nan() || d > tol * scale
        }) {
            return Ok(Some(format!(
                "{name} answered wrong: element {i} is {}, expected {}",
                got[i], want[i]
            )));
        }
    }
    Ok(None)
}
