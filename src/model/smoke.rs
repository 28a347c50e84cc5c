//! The smallest model: `a + b` on one device. The demo page runs it on every device found,
//! and the tests use it to check that each device computes end to end.

use std::collections::HashMap;
use std::rc::Rc;

use crate::backend::{run_graph, Backend, Device};
use crate::error::{Error, Result};
use crate::graph::{DType, Graph};

/// `a + b` (same length) computed on `device`.
pub async fn vector_add(device: Rc<dyn Device>, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
    if a.len() != b.len() || a.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "vector_add needs two non-empty vectors of one length, got {} and {}",
            a.len(),
            b.len()
        )));
    }
    let mut g = Graph::new();
    let ta = g.input("a", DType::F32, &[a.len()])?;
    let tb = g.input("b", DType::F32, &[b.len()])?;
    let sum = g.add(ta, tb)?;
    g.set_output(sum)?;
    let leaves = HashMap::from([
        (ta, bytemuck::cast_slice(a).to_vec()),
        (tb, bytemuck::cast_slice(b).to_vec()),
    ]);
    let backend = Backend::new(device.clone())?;
    let out = run_graph(&backend, &g, &leaves, 0).await?;
    let bytes = out
        .into_iter()
        .next()
        .ok_or_else(|| Error::Graph("no output".into()))?;
    Ok(bytemuck::pod_collect_to_vec(&bytes))
}
