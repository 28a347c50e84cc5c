//! The user-facing runtime: programs with weights, inputs and outputs by name, plan caching.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;

use pollster::block_on;
use webtensor::graph::DType;
use webtensor::runtime::{DeviceChoice, Program, Runtime};

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn runs_by_name_and_reuses_the_plan() {
    let rt = block_on(Runtime::new(DeviceChoice::Cpu, false)).unwrap();
    assert_eq!(rt.device_names(), ["CPU"]);
    let mut p = Program::new();
    let w = p
        .weight_f32("w", DType::F32, &[2, 2], &[1.0, 2.0, 3.0, 4.0])
        .unwrap();
    let x = p.graph_mut().input("x", DType::F32, &[2, 1]).unwrap();
    let y = p.graph_mut().matmul(w, x).unwrap();
    p.graph_mut().set_name(y, "y").unwrap();
    p.graph_mut().set_output(y).unwrap();
    let inputs = HashMap::from([("x".to_string(), bytes(&[1.0, 1.0]))]);
    let out = block_on(rt.run(&p, &inputs)).unwrap();
    assert_eq!(out[0].0, "y");
    assert_eq!(f32s(&out[0].2), vec![3.0, 7.0]);
    let out =
        block_on(rt.run(&p, &HashMap::from([("x".to_string(), bytes(&[2.0, 0.0]))]))).unwrap();
    assert_eq!(f32s(&out[0].2), vec![2.0, 6.0]);
    assert!(rt.explain(&p).unwrap().contains("split 0 on CPU"));
}

#[test]
fn quantized_weights_from_f32() {
    let rt = block_on(Runtime::new(DeviceChoice::Auto, false)).unwrap();
    let mut p = Program::new();
    let vals: Vec<f32> = (0..64).map(|i| i as f32 / 64.0).collect();
    let w = p.weight_f32("w", DType::Q8_0, &[32, 2], &vals).unwrap();
    let x = p.graph_mut().input("x", DType::F32, &[32]).unwrap();
    let y = p.graph_mut().matmul(w, x).unwrap();
    p.graph_mut().set_output(y).unwrap();
    let out = block_on(rt.run(&p, &HashMap::from([("x".to_string(), bytes(&[1.0; 32]))]))).unwrap();
    let got = f32s(&out[0].2);
    let want = [
        vals[..32].iter().sum::<f32>(),
        vals[32..].iter().sum::<f32>(),
    ];
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 0.01 * w.abs(), "{got:?} vs {want:?}");
    }
}

#[test]
fn bad_calls_are_clear_errors() {
    let rt = block_on(Runtime::new(DeviceChoice::Cpu, false)).unwrap();
    let mut p = Program::new();
    assert!(p
        .weight_f32("w", DType::F32, &[2, 2], &[1.0])
        .unwrap_err()
        .to_string()
        .contains("needs 4 values"));
    let x = p.graph_mut().input("x", DType::F32, &[2]).unwrap();
    let err = block_on(rt.run(&p, &HashMap::new()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no output"), "{err}");
    let y = p.graph_mut().relu(x).unwrap();
    p.graph_mut().set_output(y).unwrap();
    let err = block_on(rt.run(&p, &HashMap::from([("z".to_string(), vec![0; 8])])))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no input named \"z\""), "{err}");
    let err = block_on(rt.run(&p, &HashMap::from([("x".to_string(), vec![0; 7])])))
        .unwrap_err()
        .to_string();
    assert!(err.contains("needs 8 bytes"), "{err}");
    assert!("tpu".parse::<DeviceChoice>().is_err());
}
