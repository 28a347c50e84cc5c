//! The per-op profiler: where a graph's time goes, per device, op and operand shapes. Off
//! unless started; when on, a session runs each node alone and waits for it
//! ([`Backend::compute_profiled`](super::Backend::compute_profiled)), so GPU time is counted
//! too.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt::Write;

use crate::graph::{Graph, Tensor};

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static ROWS: RefCell<HashMap<String, (f64, u64)>> = RefCell::new(HashMap::new());
}

/// Clears the profile and starts recording.
pub fn start() {
    ROWS.with(|r| r.borrow_mut().clear());
    ON.with(|on| on.set(true));
}

/// Whether recording is on.
pub fn enabled() -> bool {
    ON.with(Cell::get)
}

/// Adds `ms` to the row `key()` names (called only while recording).
pub fn record(key: impl FnOnce() -> String, ms: f64) {
    ROWS.with(|r| {
        let mut r = r.borrow_mut();
        let e = r.entry(key()).or_insert((0.0, 0));
        e.0 += ms;
        e.1 += 1;
    });
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

/// Stops recording; returns the rows, most time first, as a table.
pub fn stop() -> String {
    ON.with(|on| on.set(false));
    let mut rows: Vec<(String, (f64, u64))> = ROWS.with(|r| r.borrow_mut().drain().collect());
    rows.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0));
    let total: f64 = rows.iter().map(|r| r.1 .0).sum();
    let mut s = format!("total {total:.2} ms in {} kinds of node\n", rows.len());
    for (key, (ms, n)) in rows {
        let pct = 100.0 * ms / total.max(1e-9);
        let _ = writeln!(s, "{ms:9.2} ms {pct:5.1}% {n:6}×  {key}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn profile_records_only_while_on() {
        record(|| "before".into(), 1.0); // cleared by start()
        start();
        assert!(enabled());
        record(|| "MatMul".into(), 2.0);
        record(|| "MatMul".into(), 1.0);
        record(|| "Add".into(), 1.0);
        let table = stop();
        assert!(!enabled());
        assert!(table.starts_with("total 4.00 ms in 2 kinds"), "{table}");
        let first = table.lines().nth(1).unwrap_or_default();
        assert!(first.contains("3.00 ms") && first.contains("2×") && first.ends_with("MatMul"));
        assert!(crate::clock::now_ms() >= 0.0);
    }
}
