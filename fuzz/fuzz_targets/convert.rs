//! The conversions behind the JS API (`webtensor::runtime::typed`): typed arrays of any kind
//! and length into weights and inputs, a run on the CPU, outputs back into typed arrays.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use webtensor::graph::DType;
use webtensor::runtime::typed::{add_weight, bytes_to_typed, typed_to_bytes, Typed, TypedVec};
use webtensor::runtime::{DeviceChoice, Program, Runtime};

thread_local! {
    static RT: Runtime = pollster::block_on(webtensor::create_runtime(DeviceChoice::Cpu, false))
        .expect("a CPU runtime");
}

/// Typed-array contents from the fuzz data: which kind, how long, the values.
struct Arrays {
    f32: Vec<f32>,
    i32: Vec<i32>,
    u8: Vec<u8>,
}

fn arrays(data: &[u8]) -> Arrays {
    Arrays {
        f32: data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        i32: data
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        u8: data.to_vec(),
    }
}

fn typed(a: &Arrays, kind: u8, len: usize) -> Typed<'_> {
    match kind % 3 {
        0 => Typed::F32(&a.f32[..len.min(a.f32.len())]),
        1 => Typed::I32(&a.i32[..len.min(a.i32.len())]),
        _ => Typed::U8(&a.u8[..len.min(a.u8.len())]),
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let (head, body) = data.split_at(8);
    let dtype = |b: u8| DType::ALL[b as usize % DType::ALL.len()];
    let (wt, xt) = (dtype(head[0]), dtype(head[1]));
    let rows = 1 + head[2] as usize % 4;
    let cols = [1, 3, 32, 64][head[3] as usize % 4];
    let a = arrays(body);
    let mut p = Program::new();
    // A weight from a typed array of any kind and length.
    let w = add_weight(
        &mut p,
        "w",
        wt,
        &[cols, rows],
        typed(&a, head[4], head[5] as usize * 4),
    );
    let x = p.graph_mut().input("x", xt, &[cols, rows]);
    let (Ok(w), Ok(x)) = (w, x) else {
        return;
    };
    let g = p.graph_mut();
    let out = match head[6] % 4 {
        0 => g.add(x, w),
        1 => g.matmul(w, x),
        2 => g.cpy(w, xt),
        _ => g.get_rows(w, x),
    };
    let Ok(out) = out else {
        return;
    };
    if p.graph_mut().set_output(out).is_err() {
        return;
    }
    // The input from a typed array of any kind and length (checked at the run).
    let input = typed(&a, head[7], (head[7] >> 2) as usize * 8);
    let Ok(bytes) = typed_to_bytes(input, xt, "x") else {
        return;
    };
    let mut inputs = HashMap::new();
    inputs.insert("x".to_string(), bytes);
    RT.with(|rt| {
        if let Ok(outs) = pollster::block_on(rt.run(&p, &inputs)) {
            for (_, dtype, bytes) in outs {
                let n = match bytes_to_typed(&bytes, dtype).expect("a run's output converts") {
                    TypedVec::F32(v) => v.len() * dtype.block_bytes(),
                    TypedVec::I32(v) => v.len() * 4,
                    TypedVec::U8(v) => v.len(),
                };
                assert_eq!(n, bytes.len());
            }
        }
        rt.clear();
    });
});
