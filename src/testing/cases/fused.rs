//! Fusable chains and near misses.

use crate::graph::{DType, OpKind, UnaryOp};
use crate::testing::OpCase;

use super::matmul::matmul_tolerance;
use super::{shape_name, F32_ACC};

/// Chains a device may fuse into one dispatch (WebGPU: matmul epilogues, affine norms),
/// and near misses it must not fuse (an intermediate that is also an output or read twice,
/// a bias that is not a row vector): all must match the reference.
pub(super) fn fused_cases(v: &mut Vec<OpCase>) {
    // matmul (k, m, n, batch of b) → add(bias [m]) → activation, for every weight dtype.
    type Chain = (DType, usize, usize, usize, usize, Option<UnaryOp>);
    let chains: [Chain; 12] = [
        (DType::F32, 64, 33, 7, 2, None),
        (DType::F32, 40, 37, 45, 1, Some(UnaryOp::GeluErf)),
        (DType::F16, 64, 19, 3, 3, Some(UnaryOp::Gelu)),
        (DType::F16, 96, 70, 33, 1, None),
        (DType::Q8_0, 64, 33, 1, 2, Some(UnaryOp::GeluErf)),
        (DType::Q8_0, 128, 65, 20, 1, Some(UnaryOp::Silu)),
        (DType::Q8_0, 64, 9, 70, 1, None),
        (DType::Q4_0, 64, 33, 5, 2, Some(UnaryOp::Relu)),
        (DType::Q4_0, 96, 21, 40, 1, Some(UnaryOp::GeluErf)),
        (DType::Q4_0, 32, 70, 9, 1, None),
        (DType::Q4_K, 256, 33, 5, 2, Some(UnaryOp::Silu)),
        (DType::Q6_K, 512, 19, 40, 1, None),
    ];
    for (dtype, k, m, n, batch, act) in chains {
        let tol = matmul_tolerance(dtype);
        let name = format!(
            "fused_matmul_{}_k{k}_m{m}_n{n}_batch{batch}_bias_{act:?}",
            dtype.name()
        );
        v.push(OpCase::new(name, OpKind::MatMul, tol, move |b| {
            let w = b.input_range(dtype, &[k, m], -1.0, 1.0)?;
            let x = b.input_range(DType::F32, &[k, n, batch], -1.0, 1.0)?;
            let bias = b.input_range(DType::F32, &[m], -1.0, 1.0)?;
            let y = b.g.matmul(w, x)?;
            let mut y = b.g.add(y, bias)?;
            if let Some(op) = act {
                y = b.g.unary(op, y)?;
            }
            b.output(y)
        }));
    }
    // Every unary op of the table as a fused activation (f32 weights; inputs in [0, 1) where
    // the op's domain starts at 0, so the sums stay in it).
    for &op in UnaryOp::ALL {
        let lo = if op.test_domain().0 >= 0.0 { 0.0 } else { -1.0 };
        let name = format!("fused_matmul_f32_k32_m9_n5_bias_{}", op.method());
        v.push(OpCase::new(name, OpKind::MatMul, F32_ACC, move |b| {
            let w = b.input_range(DType::F32, &[32, 9], lo, 1.0)?;
            let x = b.input_range(DType::F32, &[32, 5], lo, 1.0)?;
            let bias = b.input_range(DType::F32, &[9], lo, 1.0)?;
            let y = b.g.matmul(w, x)?;
            let y = b.g.add(y, bias)?;
            let y = b.g.unary(op, y)?;
            b.output(y)
        }));
    }
    // Near misses: the matmul's result also an output, also read by another node, and a
    // bias that is a full matrix (not a row vector).
    for miss in ["also_output", "read_twice", "full_bias"] {
        let name = format!("fused_matmul_f32_k32_m17_n6_{miss}");
        v.push(OpCase::new(name, OpKind::MatMul, F32_ACC, move |b| {
            let w = b.input_range(DType::F32, &[32, 17], -1.0, 1.0)?;
            let x = b.input_range(DType::F32, &[32, 6], -1.0, 1.0)?;
            let bias_ne: &[usize] = if miss == "full_bias" { &[17, 6] } else { &[17] };
            let bias = b.input_range(DType::F32, bias_ne, -1.0, 1.0)?;
            let y = b.g.matmul(w, x)?;
            let z = b.g.add(y, bias)?;
            let z = b.g.gelu_erf(z)?;
            match miss {
                "also_output" => b.output(y)?,
                "read_twice" => {
                    let twice = b.g.mul(y, y)?;
                    b.output(twice)?;
                }
                _ => {}
            }
            b.output(z)
        }));
    }
    // [add(residual) →] norm → mul(weight) [→ add(bias)]; the residual may broadcast.
    type NormChain = ([usize; 4], Option<[usize; 4]>, bool, bool);
    let norms: [NormChain; 7] = [
        ([37, 5, 2, 1], Some([37, 5, 2, 1]), false, true),
        ([384, 3, 1, 1], Some([384, 3, 1, 1]), false, true),
        ([300, 4, 1, 1], Some([300, 1, 1, 1]), false, true),
        ([65, 3, 2, 1], None, false, true),
        ([65, 3, 2, 1], None, false, false),
        ([33, 6, 1, 1], None, true, false),
        ([33, 6, 1, 1], Some([33, 6, 1, 1]), true, true),
    ];
    for (ne, resid, rms, bias) in norms {
        let (kind, lname) = if rms {
            (OpKind::RmsNorm, "rms_norm")
        } else {
            (OpKind::Norm, "norm")
        };
        let name = format!(
            "fused_{lname}_{}_resid{}_bias{bias}",
            shape_name(ne),
            resid.map_or("none".into(), shape_name)
        );
        v.push(OpCase::new(name, kind, F32_ACC, move |b| {
            let mut x = b.input_range(DType::F32, &ne, -3.0, 5.0)?;
            let w = b.input_range(DType::F32, &[ne[0]], -1.0, 1.0)?;
            let bv = b.input_range(DType::F32, &[ne[0]], -1.0, 1.0)?;
            if let Some(rne) = resid {
                let r = b.input_range(DType::F32, &rne, -1.0, 1.0)?;
                x = b.g.add(x, r)?;
            }
            let mut y = if rms {
                b.g.rms_norm(x, 1e-6)?
            } else {
                b.g.norm(x, 1e-5)?
            };
            y = b.g.mul(y, w)?;
            if bias {
                y = b.g.add(y, bv)?;
            }
            b.output(y)
        }));
    }
    // Near miss: the residual sum also an output (the transformer's next residual).
    v.push(OpCase::new(
        "fused_norm_37x5x1x1_sum_also_output",
        OpKind::Norm,
        F32_ACC,
        |b| {
            let x = b.input_range(DType::F32, &[37, 5], -3.0, 5.0)?;
            let r = b.input_range(DType::F32, &[37, 5], -1.0, 1.0)?;
            let w = b.input_range(DType::F32, &[37], -1.0, 1.0)?;
            let sum = b.g.add(x, r)?;
            let y = b.g.norm(sum, 1e-5)?;
            let y = b.g.mul(y, w)?;
            b.output(sum)?;
            b.output(y)
        },
    ));
}
