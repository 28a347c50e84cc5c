//! The per-op profiler: where a graph's time goes, per device, op and operand shapes. A
//! [`Profile`] belongs to whoever runs graphs (each [`Runtime`](crate::runtime::Runtime) has
//! one) and is handed down to the run that computes ([`Session::run_with`]); off unless
//! started. While a run records, it runs each node alone and waits for it
//! ([`Backend::compute_profiled`]), so GPU time is counted too.
//!
//! [`Session::run_with`]: super::Session::run_with
//! [`Backend::compute_profiled`]: super::Backend::compute_profiled

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt::Write;

use crate::graph::{Graph, Tensor};

/// One profile: rows of time (ms) and count by key, recorded while on.
#[derive(Debug, Default)]
pub struct Profile {
    on: Cell<bool>,
    rows: RefCell<HashMap<String, (f64, u64)>>,
}

impl Profile {
    /// A profile that is off and empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// Clears the rows and starts recording.
    pub fn start(&self) {
        self.rows.borrow_mut().clear();
        self.on.set(true);
    }

    /// Whether it records.
    pub fn is_on(&self) -> bool {
        self.on.get()
    }

    /// Adds `ms` to the row `key()` names; nothing while off (a run that began recording and
    /// ends after [`Profile::stop`] adds nothing to the next profile).
    pub fn record(&self, key: impl FnOnce() -> String, ms: f64) {
        if !self.is_on() {
            return;
        }
        let mut rows = self.rows.borrow_mut();
        let e = rows.entry(key()).or_insert((0.0, 0));
        e.0 += ms;
        e.1 += 1;
    }

    /// How many rows (kinds of node) it holds.
    pub fn len(&self) -> usize {
        self.rows.borrow().len()
    }

    /// Whether it holds no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops recording; returns the rows, most time first, as a table, and clears them.
    pub fn stop(&self) -> String {
        self.on.set(false);
        let mut rows: Vec<(String, (f64, u64))> = self.rows.borrow_mut().drain().collect();
        crate::sort::by_key(&mut rows, |r| {
            crate::sort::desc(crate::sort::f64_key(r.1 .0))
        });
        // A fold from 0.0: an empty `sum()` of floats is -0.0 ("total -0.00 ms").
        let total = rows.iter().fold(0.0, |t, r| t + r.1 .0);
        let mut s = format!("total {total:.2} ms in {} kinds of node\n", rows.len());
        for (key, (ms, n)) in rows {
            let pct = 100.0 * ms / total.max(1e-9);
            let _ = writeln!(s, "{ms:9.2} ms {pct:5.1}% {n:6}×  {key}");
        }
        s
    }
}

/// The profile row of node `t` of `graph` on device `device`: device, op, source dtype and
/// operand shapes.
pub fn node_key(device: &str, graph: &Graph, t: &Tensor) -> String {
    let shapes: Vec<String> = t
        .src
        .iter()
        .map(|&s| format!("{:?}", graph.tensor(s).ne))
        .collect();
    let dtype = t.src.first().map_or(t.dtype, |&s| graph.tensor(s).dtype);
    format!("{device} {:?} {dtype:?} {}", t.op.kind(), shapes.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn profile_records_only_while_on() {
        let p = Profile::new();
        p.record(|| "before".into(), 1.0); // off: dropped
        assert!(p.is_empty());
        p.start();
        assert!(p.is_on());
        p.record(|| "MatMul".into(), 2.0);
        p.record(|| "MatMul".into(), 1.0);
        p.record(|| "Add".into(), 1.0);
        assert_eq!(p.len(), 2);
        let table = p.stop();
        assert!(!p.is_on() && p.is_empty());
        assert!(table.starts_with("total 4.00 ms in 2 kinds"), "{table}");
        let first = table.lines().nth(1).unwrap_or_default();
        assert!(first.contains("3.00 ms") && first.contains("2×") && first.ends_with("MatMul"));
        p.record(|| "after".into(), 1.0); // off again: dropped
        assert!(p.is_empty());
        assert!(p.stop().starts_with("total 0.00 ms in 0 kinds"));
        assert!(crate::clock::now_ms() >= 0.0);
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn profiles_are_independent() {
        let (a, b) = (Profile::new(), Profile::new());
        a.start();
        a.record(|| "MatMul".into(), 1.0);
        b.record(|| "MatMul".into(), 1.0);
        assert!(!b.is_on() && b.is_empty());
        b.start();
        b.record(|| "Add".into(), 1.0);
        assert!(a.stop().starts_with("total 1.00 ms in 1 kinds"));
        assert!(b.is_on() && b.len() == 1);
        assert!(b.stop().ends_with("Add\n"));
    }
}
