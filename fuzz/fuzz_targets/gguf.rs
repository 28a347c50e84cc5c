//! The GGUF reader on any bytes: the whole file, every header prefix the loader may read,
//! and, when it parses, its data, a write/read round trip (the writer's output is a fixed
//! point), and the decoder's reading of its hyper-parameters (an Error, never a panic).
#![no_main]

use libfuzzer_sys::fuzz_target;
use webtensor::model::gguf::{Gguf, GgufWriter};

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
        let once = rewrite(&g);
        let again = Gguf::parse(&once).expect("the writer's output parses");
        assert_eq!(again.tensors().len(), g.tensors().len());
        assert_eq!(rewrite(&again), once, "write(read(write(x))) != write(x)");
    }
});
