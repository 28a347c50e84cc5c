//! Q8_0 / Q5_0 / Q5_1 / Q4_0 / Q4_1 / IQ4_NL and Q3_K … Q6_K matmul, as ggml does it: each activation row is
//! quantized to Q8_0 on the fly, then every output is a sum over 32-element blocks of
//! `d_w * d_x * (integer dot)`, the integer dots in i8x16/i16x8 lanes (the K-quants' `d_w`
//! an integer scale of the block times the super-block's `d`, less their mins). Weights are
//! read from int8 panels ([`Int8Panels`]), or as GGUF blocks by the row dots.

pub(super) mod act;
mod kind;
mod panels;
mod rowdot;
mod tiles;

pub use kind::PanelKind;
pub use panels::Int8Panels;

use self::act::*;
use self::rowdot::*;
use self::tiles::*;
use super::batch::{Batches, DstRows};
use super::elementwise::Epilogue;
use super::simd::narrow_dots_faster;
use crate::backends::cpu::pool::Par;
use crate::backends::cpu::TensorView;
use crate::graph::{DType, QK};

/// `dst = a · bᵀ` with `a` packed into `p` (a 2-D weight: every batch of `b` uses it);
/// `false` when this kernel does not apply.
pub fn matmul_int8_panels(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    p: &Int8Panels,
    ep: Option<&Epilogue>,
) -> bool {
    matmul_int8_panels_dots(par, dst, a, b, p, ep, narrow_dots_faster())
}

/// [`matmul_int8_panels`] with narrow dots or not (see [`int8_block`]; the same results).
fn matmul_int8_panels_dots(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    p: &Int8Panels,
    ep: Option<&Epilogue>,
    narrow: bool,
) -> bool {
    if !p.fits(a)
        || a.ne[2] != 1
        || a.ne[3] != 1
        || b.dtype != DType::F32
        || b.ne[0] != p.k
        || !super::packed_f32(dst)
    {
        return false;
    }
    // Every batch of `b` in one run of rows: one quantization and one GEMM.
    let rows = Batches {
        n: b.ne[1],
        ne2: dst.ne[2],
        first: 0,
    };
    let count = b.ne[1] * dst.ne[2] * dst.ne[3];
    let mut xq = QuantRows::default();
    quantize_rows(par, b, rows, count, p.k, &mut xq, p.encoding());
    int8_gemm(par, &DstRows { v: dst, rows }, p, &xq, count, ep, narrow);
    true
}

/// The int8 GEMM on weights packed for this call (each batch of `a` once); `a` Q8_0/Q4_0
/// with packed rows of whole blocks, `b` f32, `dst` packed f32 (checked by the caller).
fn matmul_int8(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    ep: Option<&Epilogue>,
) -> bool {
    let (n, k) = (b.ne[1], a.ne[0]);
    let (r2, r3) = (b.ne[2] / a.ne[2].max(1), b.ne[3] / a.ne[3].max(1));
    let mut xq = QuantRows::default();
    let mut packed: Option<((usize, usize), Int8Panels)> = None;
    for i3 in 0..dst.ne[3] {
        for i2 in 0..dst.ne[2] {
            let ab = (i2 / r2.max(1), i3 / r3.max(1));
            let p = match packed.take() {
                Some((at, p)) if at == ab => p,
                _ => match Int8Panels::new(a, ab.0, ab.1) {
                    Some(p) => p,
                    None => return false,
                },
            };
            let rows = Batches {
                n,
                ne2: dst.ne[2],
                first: i2 + dst.ne[2] * i3,
            };
            quantize_rows(par, b, rows, n, k, &mut xq, p.encoding());
            int8_gemm(
                par,
                &DstRows { v: dst, rows },
                &p,
                &xq,
                n,
                ep,
                narrow_dots_faster(),
            );
            packed = Some((ab, p));
        }
    }
    true
}

/// `dst = src0 · src1ᵀ` for Q8_0/Q4_0 `a` and f32 `b`; `false` when this kernel does not apply.
pub fn matmul(
    par: Par,
    dst: &TensorView,
    a: &TensorView,
    b: &TensorView,
    ep: Option<&Epilogue>,
) -> bool {
    let (q4, dot): (bool, RowDot) = match a.dtype {
        DType::Q8_0 => (false, dot_q8_0),
        DType::Q4_0 => (true, dot_q4_0),
        // Only Q8_0 and Q4_0 have row dots; other weights take the panels (`PanelKind::of`,
        // which every dtype's row must answer) or the f32 kernels on dequantized rows.
        _ => return false,
    };
    if b.dtype != DType::F32 || !super::packed_f32(dst) || !a.rows_contiguous() {
        return false;
    }
    let (n, k) = (b.ne[1], a.ne[0]);
    if k % QK != 0 {
        return false;
    }
    if n >= super::gemm::QUANT_GEMM_MIN_N {
        return matmul_int8(par, dst, a, b, ep);
    }
    weight_row_runs(
        par,
        dst,
        a,
        b,
        ep,
        M_BLOCK,
        |rows, count, xq| quantize_rows(par, b, rows, count, k, xq, Encoding::RowDots),
        // In range: weight rows of `a`'s batch, activation rows `0 .. count`.
        |out, ab, ms, xq, count| unsafe { dot_block(out, a, ab, ms, xq, count, q4, dot) },
    );
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cpu::Pool;
    use crate::graph::{contiguous_strides, row_from_f32, row_to_f32};
    use crate::testing::Rng;

    fn view(bytes: &mut [u8], dtype: DType, ne: [usize; 4]) -> TensorView {
        let nb = contiguous_strides(dtype, ne).expect("small");
        // The bytes outlive every use of the view in these tests.
        unsafe { TensorView::from_raw(bytes.as_mut_ptr(), dtype, ne, nb) }
    }

    /// The panels give back their GGUF bytes and rows, and their products (the
    /// matrix-vector tiles, 4 groups a quarter apart, then single ones; the GEMM's tiles of
    /// 2 groups × 1-4 rows) are the dequantized weights times the activations within the
    /// activations' 8-bit rounding, a last group padded; 1 and 2 threads give the same
    /// bytes. In wasm, in each build's kernels (the relaxed-SIMD step runs these).
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn int8_panels_match_dequantized_weights() {
        let pool = Pool::new(Some(if cfg!(target_arch = "wasm32") { 1 } else { 2 })).unwrap();
        let mut rng = Rng::new(33);
        for dtype in [
            DType::Q8_0,
            DType::Q5_0,
            DType::Q4_0,
            DType::Q3_K,
            DType::Q4_K,
            DType::Q5_K,
            DType::Q6_K,
            DType::Q5_1,
            DType::Q4_1,
            DType::IQ4_NL,
        ] {
            // The K-quants' rows are whole super-blocks of 256 values.
            let kk = dtype.block_size() / QK;
            // `extreme`: every block's largest values (4-bit 15, 5-bit 31: each block's first
            // value -1, the rest 15/16) against activations of ±1 (8-bit ±127), so the integer
            // sums reach the bounds the 16-bit partial sums (`Dot16`) rely on.
            for (m, n, k, extreme) in [
                (37, 1, 96 * kk, false),
                (5, 1, 32 * kk, false),
                (18, 3, 64 * kk, false),
                (37, 6, 160 * kk, false),
                (9, 70, 64 * kk, false),
                // A last column block of one row: the matrix-vector tile on a new record.
                (11, 65, 32 * kk, false),
                (13, 1, 64 * kk, true),
                (9, 8, 64 * kk, true),
            ] {
                let rb = dtype.row_bytes(k).unwrap();
                let wf: Vec<f32> = (0..m * k)
                    .map(|i| match (extreme, i % QK) {
                        (false, _) => rng.uniform(-1.0, 1.0),
                        (true, 0) => -1.0,
                        (true, _) => 0.9375,
                    })
                    .collect();
                let mut w = vec![0u8; m * rb];
                for (src, dst) in wf.chunks(k).zip(w.chunks_mut(rb)) {
                    row_from_f32(dtype, src, dst).unwrap();
                }
                let x: Vec<f32> = (0..n * k)
                    .map(|i| match extreme {
                        false => rng.uniform(-1.0, 1.0),
                        true if i / k % 2 == 0 => 1.0,
                        true => -1.0,
                    })
                    .collect();
                let mut xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
                let mut wb = w.clone();
                let wv = view(&mut wb, dtype, [k, m, 1, 1]);
                let xv = view(&mut xb, DType::F32, [k, n, 1, 1]);
                let p = Int8Panels::new(&wv, 0, 0).expect("panels");
                let mut back = vec![0u8; m * rb];
                p.unpack_rows(0, &mut back).unwrap();
                assert!(back == w, "{dtype:?} {m}x{k}: unpacked bytes differ");
                let (mut row, mut want) = (vec![0f32; k], vec![0f32; k]);
                for i in 0..m {
                    p.row_f32(i, &mut row);
                    row_to_f32(dtype, &w[i * rb..(i + 1) * rb], &mut want);
                    assert_eq!(row, want, "{dtype:?} row {i}");
                }
                // 1 and 2 threads, and narrow dots or not (see `int8_block`; builds without
                // relaxed SIMD run the wide kernels for both).
                let runs = [
                    (Par::SERIAL, false),
                    (pool.par().eager(), false),
                    (Par::SERIAL, true),
                ];
                let mut outs = runs.map(|_| vec![0u8; m * n * 4]);
                for (o, (par, narrow)) in outs.iter_mut().zip(runs) {
                    let ov = view(o, DType::F32, [m, n, 1, 1]);
                    assert!(matmul_int8_panels_dots(
                        par, &ov, &wv, &xv, &p, None, narrow
                    ));
                }
                assert_eq!(outs[0], outs[1], "{dtype:?} {m}x{n}x{k}: 1 vs 2 threads");
                assert_eq!(
                    outs[0], outs[2],
                    "{dtype:?} {m}x{n}x{k}: narrow dots differ"
                );
                let (mut err, mut sig) = (0f64, 0f64);
                for j in 0..n {
                    for i in 0..m {
                        row_to_f32(dtype, &w[i * rb..(i + 1) * rb], &mut want);
                        let exact: f64 = (0..k).map(|t| want[t] as f64 * x[j * k + t] as f64).sum();
                        let at = 4 * (j * m + i);
                        let got = f32::from_le_bytes(outs[0][at..at + 4].try_into().unwrap());
                        err += (got as f64 - exact).powi(2);
                        sig += exact.powi(2);
                    }
                }
                assert!(
                    err / sig < 1e-4,
                    "{dtype:?} {m}x{n}x{k}: nmse {}",
                    err / sig
                );
            }
        }
    }
}
