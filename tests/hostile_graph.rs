//! Hostile sizes through the graph builder and the CPU runs (the paths the `graph` and
//! `convert` fuzz targets drive). Sizes from the caller that overflowed `usize` arithmetic,
//! found reviewing the builder for those targets: a debug build panicked, a release (wasm)
//! build wrapped silently, and a view's wrapped span could pass its bounds check; each is
//! now an error. The last test is what the `graph` fuzz target found.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;

use webtensor::graph::{DType, Graph};
use webtensor::runtime::{DeviceChoice, Program};
use webtensor::Error;

#[test]
fn quantized_element_counts_that_overflow_are_errors() {
    // 2^64 elements in fewer than 2^64 bytes (q4_0: 18 bytes per 32 elements).
    let mut g = Graph::new();
    let r = g.input("q", DType::Q4_0, &[1 << 32, 1 << 32]);
    assert!(
        matches!(r, Err(Error::InvalidArgument(ref m)) if m.contains("too large")),
        "{r:?}"
    );
}

#[test]
fn reshape_to_an_overflowing_shape_is_an_error() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[4]).unwrap();
    assert!(g.reshape(x, &[usize::MAX, 2]).is_err());
    assert!(g.reshape(x, &[1 << 32, 1 << 32, 1 << 32, 0]).is_err());
    assert!(g.reshape(x, &[2, 2]).is_ok());
}

#[test]
fn views_with_huge_strides_or_offsets_are_out_of_bounds() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[16]).unwrap();
    for (ne, nb, off) in [
        (&[2usize, 2][..], &[4usize, usize::MAX / 2][..], 0usize),
        (&[2, 2, 2], &[4, 8, usize::MAX], 0),
        (&[3], &[usize::MAX / 2], 0),
        (&[1], &[4], usize::MAX),
        (&[1], &[4], usize::MAX - 3),
    ] {
        let r = g.view(x, ne, nb, off);
        assert!(
            matches!(r, Err(Error::OutOfBounds(_))),
            "{ne:?} {nb:?} {off}: {r:?}"
        );
    }
    let v = g.view(x, &[4], &[4], 8).unwrap();
    // A view of a view: offsets add up, checked.
    assert!(g.view(v, &[1], &[4], usize::MAX - 4).is_err());
}

#[test]
fn concat_of_empty_tensors_with_huge_dims_is_an_error() {
    let mut g = Graph::new();
    let a = g.input("a", DType::F32, &[0, usize::MAX / 2 + 1]).unwrap();
    assert!(g.concat(a, a, 1).is_err());
    assert!(g.concat(a, a, 0).is_ok());
}

#[test]
fn weights_of_overflowing_shapes_are_errors() {
    let mut p = Program::new();
    let r = p.weight_f32("w", DType::F32, &[1 << 32, 1 << 32, 1 << 32], &[]);
    assert!(r.is_err());
    let r = p.weight_f32("w", DType::F16, &[1 << 33, 1 << 33, 0, 1 << 33], &[]);
    assert!(r.is_err());
}

/// Found fuzzing (`fuzz/artifacts/graph/oom-*`): a tensor with no elements but a huge first
/// dim made the CPU kernels size a row scratch by that dim (8 GiB for [2^31, 0]; past
/// `isize::MAX`, a panic, for [2^61, 0]). Nodes with no elements now compute nothing.
#[test]
fn empty_tensors_with_huge_rows_run() {
    let rt = pollster::block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    for ne0 in [1usize << 31, 1 << 61] {
        let mut p = Program::new();
        let g = p.graph_mut();
        let x = g.input("x", DType::F32, &[ne0, 0]).unwrap();
        let y = g.cpy(x, DType::F16).unwrap();
        let z = g.sum_rows(x).unwrap();
        g.set_output(y).unwrap();
        g.set_output(z).unwrap();
        let inputs = HashMap::from([("x".to_string(), vec![])]);
        let outs = pollster::block_on(rt.run(&p, &inputs)).unwrap();
        assert!(outs.iter().all(|(_, _, bytes)| bytes.is_empty()), "{ne0}");
    }
}

/// set_rows: shapes that do not fit are builder errors; an index outside the destination's
/// rows is a run error (fast kernel and reference alike), and a good run writes exactly
/// the named rows, the last of two aimed at one row winning.
#[test]
fn set_rows_checks_shapes_and_indices() {
    let mut g = Graph::new();
    let dst = g.input("dst", DType::F32, &[4, 3]).unwrap();
    let rows = g.input("rows", DType::F32, &[4, 2]).unwrap();
    let idx = g.input("idx", DType::I32, &[2]).unwrap();
    let wide = g.input("wide", DType::F32, &[5, 2]).unwrap();
    let idx3 = g.input("idx3", DType::I32, &[3]).unwrap();
    let q = g.input("q", DType::Q8_0, &[32, 3]).unwrap();
    assert!(matches!(
        g.set_rows(dst, wide, idx),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        g.set_rows(dst, rows, idx3),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        g.set_rows(dst, rows, rows),
        Err(Error::DType { .. })
    ));
    assert!(matches!(g.set_rows(q, rows, idx), Err(Error::DType { .. })));
    assert!(matches!(
        g.clamp(dst, 1.0, 0.0),
        Err(Error::InvalidArgument(_))
    ));

    let rt = pollster::block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    let run = |indices: [i32; 2]| {
        let mut p = Program::new();
        let g = p.graph_mut();
        let dst = g.input("dst", DType::F32, &[2, 3]).unwrap();
        let rows = g.input("rows", DType::F32, &[2, 2]).unwrap();
        let idx = g.input("idx", DType::I32, &[2]).unwrap();
        let y = g.set_rows(dst, rows, idx).unwrap();
        g.set_output(y).unwrap();
        let f = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let inputs = HashMap::from([
            ("dst".to_string(), f(&[0.0; 6])),
            ("rows".to_string(), f(&[1.0, 2.0, 3.0, 4.0])),
            (
                "idx".to_string(),
                indices.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
        ]);
        pollster::block_on(rt.run(&p, &inputs)).map(|outs| {
            outs[0]
                .2
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect::<Vec<f32>>()
        })
    };
    assert_eq!(run([2, 0]).unwrap(), [3.0, 4.0, 0.0, 0.0, 1.0, 2.0]);
    assert_eq!(run([1, 1]).unwrap(), [0.0, 0.0, 3.0, 4.0, 0.0, 0.0]);
    for bad in [[3, 0], [0, -1]] {
        let r = run(bad);
        assert!(
            matches!(r, Err(Error::OutOfBounds(ref m)) if m.contains("set_rows")),
            "{bad:?}: {r:?}"
        );
    }
}
