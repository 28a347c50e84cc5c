//! The device API's contracts on the CPU device: bounds-checked buffers, zero-size
//! allocations, allocation limits, usage, copies, registry lookups and bad graphs.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;
use std::rc::Rc;

use pollster::block_on;
use webtensor::backend::{run_graph, Backend, BufferUsage, Device, DeviceKind};
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::graph::{DType, Graph};
use webtensor::Error;

fn cpu() -> Rc<dyn Device> {
    Rc::new(CpuDevice::new(KernelSet::Fast))
}

#[test]
fn zero_sized_buffers_are_valid() {
    let buf = cpu().buffer_type().alloc(0).unwrap();
    assert_eq!(buf.size(), 0);
    assert!(buf.write(0, &[]).is_ok());
    assert_eq!(block_on(buf.read(0, 0)).unwrap(), Vec::<u8>::new());
    assert!(buf.write(0, &[1]).is_err());
    assert!(buf.clear(0).is_ok());
}

#[test]
fn every_access_is_bounds_checked() {
    let buf = cpu().buffer_type().alloc(16).unwrap();
    buf.write(8, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    assert!(matches!(buf.write(9, &[0; 8]), Err(Error::OutOfBounds(_))));
    assert!(matches!(
        buf.write(usize::MAX, &[0; 2]),
        Err(Error::OutOfBounds(_))
    ));
    assert!(matches!(
        block_on(buf.read(12, 8)),
        Err(Error::OutOfBounds(_))
    ));
    assert!(matches!(buf.memset(15, 2, 0), Err(Error::OutOfBounds(_))));
    assert_eq!(block_on(buf.read(8, 4)).unwrap(), vec![1, 2, 3, 4]);
    buf.memset(8, 2, 9).unwrap();
    assert_eq!(block_on(buf.read(8, 3)).unwrap(), vec![9, 9, 3]);
}

#[test]
fn oversized_allocations_fail_cleanly() {
    let bt = cpu().buffer_type();
    assert!(matches!(
        bt.alloc(usize::MAX),
        Err(Error::AllocTooLarge { .. })
    ));
    assert!(matches!(
        bt.alloc(1 << 60),
        Err(Error::AllocTooLarge { .. })
    ));
}

#[test]
fn buffers_copy_and_carry_usage() {
    let bt = cpu().buffer_type();
    let (a, b) = (bt.alloc(8).unwrap(), bt.alloc(8).unwrap());
    a.write(0, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    assert!(b.copy_from(a.as_ref(), 2, 0, 4).unwrap());
    assert_eq!(block_on(b.read(0, 4)).unwrap(), vec![3, 4, 5, 6]);
    assert!(b.copy_from(a.as_ref(), 6, 0, 4).is_err());
    assert_eq!(a.usage(), BufferUsage::Any);
    a.set_usage(BufferUsage::Weights);
    assert_eq!(a.usage(), BufferUsage::Weights);
}

#[test]
fn device_describes_itself() {
    let d = cpu();
    assert_eq!(d.kind(), DeviceKind::Cpu);
    assert!(d.caps().host_buffer);
    assert!(d.buffer_type().is_host());
    assert!(d.supports_buffer_type(d.buffer_type().as_ref()));
    assert!(d.properties().iter().any(|(k, _)| k == "simd"));
}

#[test]
fn missing_and_misshaped_inputs_are_errors() {
    let mut g = Graph::new();
    let a = g.input("a", DType::F32, &[4]).unwrap();
    let b = g.input("b", DType::F32, &[4]).unwrap();
    let c = g.add(a, b).unwrap();
    g.set_output(c).unwrap();
    let backend = Backend::new(cpu()).unwrap();
    let only_a = HashMap::from([(a, vec![0u8; 16])]);
    let err = block_on(run_graph(&backend, &g, &only_a, 0)).unwrap_err();
    assert!(
        err.to_string().contains("no value given for input b"),
        "{err}"
    );
    let short = HashMap::from([(a, vec![0u8; 16]), (b, vec![0u8; 12])]);
    let err = block_on(run_graph(&backend, &g, &short, 0)).unwrap_err();
    assert!(err.to_string().contains("needs 16 bytes"), "{err}");
}

#[test]
fn get_rows_index_out_of_range_is_an_error() {
    let mut g = Graph::new();
    let table = g.weight("table", DType::F32, &[2, 3]).unwrap();
    let idx = g.input("idx", DType::I32, &[1]).unwrap();
    let rows = g.get_rows(table, idx).unwrap();
    g.set_output(rows).unwrap();
    let backend = Backend::new(cpu()).unwrap();
    let leaves = HashMap::from([(table, vec![0u8; 24]), (idx, 7i32.to_le_bytes().to_vec())]);
    let err = block_on(run_graph(&backend, &g, &leaves, 8)).unwrap_err();
    assert!(matches!(err, Error::OutOfBounds(_)), "{err}");
}

#[test]
fn unknown_tensor_ids_are_errors() {
    let g = Graph::new();
    assert!(g.get(webtensor::graph::TensorId(3)).is_err());
    let mut g2 = Graph::new();
    assert!(g2.set_output(webtensor::graph::TensorId(0)).is_err());
}
