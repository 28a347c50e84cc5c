//! The smallest model: `a + b` on one device. The demo page runs it on every device found,
//! and the tests use it to check that each device computes end to end. It runs through a
//! [`Runtime`] over that one device, as every model does (scheduler, session, run queue).

use std::collections::HashMap;
use std::rc::Rc;

use crate::error::{Error, Result};
use crate::graph::DType;
use crate::runtime::{Device, Program, Runtime};

/// `a + b` (same length) computed on `device`.
pub async fn vector_add(device: Rc<dyn Device>, a: &[f32], b: &[f32]) -> Result<Vec<f32>> {
    if a.len() != b.len() || a.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "vector_add needs two non-empty vectors of one length, got {} and {}",
            a.len(),
            b.len()
        )));
    }
    let mut p = Program::new();
    let g = p.graph_mut();
    let ta = g.input("a", DType::F32, &[a.len()])?;
    let tb = g.input("b", DType::F32, &[b.len()])?;
    let sum = g.add(ta, tb)?;
    g.set_output(sum)?;
    let inputs = HashMap::from([
        ("a".to_string(), bytemuck::cast_slice(a).to_vec()),
        ("b".to_string(), bytemuck::cast_slice(b).to_vec()),
    ]);
    let rt = Runtime::with_devices(vec![device], false, Vec::new()).await?;
    let out = rt.run(&p, &inputs).await?;
    let (_, _, bytes) = out
        .into_iter()
        .next()
        .ok_or_else(|| Error::Graph("no output".into()))?;
    Ok(bytemuck::pod_collect_to_vec(&bytes))
}
