//! The GGUF reader on any bytes: the whole file, every header prefix the loader may read,
//! and, when it parses, its data, a write/read round trip (the writer's output is a fixed
//! point), the decoder's reading of its hyper-parameters (an Error, never a panic), and the
//! weight load of its tensors: a non-finite block scale is an Error naming the tensor, and
//! the weights of a load that succeeds dequantize to finite values.
#![no_main]

use std::rc::Rc;

use libfuzzer_sys::fuzz_target;
use webtensor::backend::{store_weights, Device, WeightSpec};
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::graph::row_to_f32;
use webtensor::model::gguf::{Gguf, GgufWriter};
use webtensor::{At, Error};

thread_local! {
    static CPU: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Fast));
}

/// Stores the tensors as weights on the CPU (as a model load does), checks the error of a
/// refused load names a tensor, and that a quantized tensor that loads is finite throughout.
fn load(g: &Gguf, data: &[u8]) {
    let specs: Vec<WeightSpec> = g
        .tensors()
        .iter()
        .filter(|t| t.nbytes <= 1 << 20)
        .map(|t| WeightSpec {
            name: t.name.clone(),
            device: 0,
            dtype: t.dtype,
            ne: t.ne.clone(),
            ranges: vec![g.tensor_range(t)],
            matrix_only: t.ne.len() == 2,
        })
        .collect();
    // Any Error is an answer (shapes a weight cannot take, allocation limits, a corrupt
    // scale); what must not happen is a load that succeeds with NaN/Inf weights.
    let stored =
        CPU.with(|cpu| store_weights(std::slice::from_ref(cpu), 1, &specs, &data, &mut |_, _| {}));
    if let Err(Error::Model { at, .. }) = &stored {
        assert!(
            matches!(at, Some(At::Tensor(_))),
            "a weight error names its tensor"
        );
    }
    if stored.is_ok() {
        for t in g
            .tensors()
            .iter()
            .filter(|t| t.dtype.is_quantized() && t.nbytes <= 1 << 20)
        {
            let bytes = g
                .tensor_data(t)
                .expect("a parsed tensor's data is in the file");
            let mut out = vec![0f32; t.nbytes / t.dtype.block_bytes() * t.dtype.block_size()];
            row_to_f32(t.dtype, bytes, &mut out);
            assert!(
                out.iter().all(|v| v.is_finite()),
                "{}: a loaded {} tensor dequantizes to a non-finite value",
                t.name,
                t.dtype
            );
        }
    }
}

fn rewrite(g: &Gguf) -> Vec<u8> {
    let mut w = GgufWriter::new();
    for (k, v) in g.metadata() {
        w.set(k, v.clone()).expect("a parsed value is writable");
    }
    for t in g.tensors() {
        let data = g
            .tensor_data(t)
            .expect("a parsed tensor's data is in the file");
        w.add_tensor(&t.name, t.dtype, &t.ne, data.to_vec())
            .expect("a parsed tensor is writable");
    }
    w.to_bytes()
}

fuzz_target!(|data: &[u8]| {
    let whole = Gguf::parse(data);
    // The loader's way: a prefix (here: a few lengths) of a file of the full length.
    for n in [0, 24, 64, data.len() / 2, data.len()] {
        let n = n.min(data.len());
        match (Gguf::parse_header(&data[..n], data.len()), &whole) {
            (Ok(None), _) => {}
            (Ok(Some(h)), Ok(g)) => assert_eq!(h.tensors(), g.tensors()),
            (Err(e), Err(w)) => assert_eq!(e.to_string(), w.to_string()),
            (h, w) => panic!("prefix {n}: {h:?} but the whole file: {w:?}"),
        }
    }
    if let Ok(g) = whole {
        if let Ok(c) = webtensor::model::decoder::config_from_gguf(&g) {
            assert!(c.n_head % c.n_head_kv == 0 && c.rope.n_dims <= c.head_dim);
        }
        for t in g.tensors() {
            assert_eq!(g.tensor_range(t).len(), t.nbytes);
        }
        load(&g, data);
        let once = rewrite(&g);
        let again = Gguf::parse(&once).expect("the writer's output parses");
        assert_eq!(again.tensors().len(), g.tensors().len());
        assert_eq!(rewrite(&again), once, "write(read(write(x))) != write(x)");
    }
});
